//! Live capture taps (`lwt6 ctl capture start`): a worker's copy of the frames it receives, sends and drops, kept
//! in a bounded list of owned buffers until its thread hands them to a writer ([`Worker::take_captured`]).
//!
//! The worker itself records only the drops (with their [`DropReason`]), at the places a frame is counted as
//! dropped; received and sent frames are recorded by the receive loop that owns the ports, around the worker
//! ([`CaptureTap::rx`], [`CaptureTap::tx`]). Without a tap (the normal case) a drop pays one test of an `Option`
//! the worker owns, and nothing else on the packet path looks at it: the receive loop chooses its loop once per
//! batch. With a tap, a frame the filter admits costs a copy into a recycled buffer; once `limit` frames wait,
//! further ones are counted lost instead (the worker never waits for the writer).

use super::Worker;
use crate::fib::DevId;
use crate::stats::DropReason;

/// Where a captured frame was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Received from the interface (before any processing).
    Rx,
    /// Handed to the interface to send.
    Tx,
    /// Received from the interface and dropped (the bytes as received).
    Drop,
}

/// Which frames a capture takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CaptureFilter {
    /// Only the frames received on, sent out of or dropped from this device (None: every device).
    pub dev: Option<DevId>,
    /// Received frames.
    pub rx: bool,
    /// Sent frames.
    pub tx: bool,
    /// Dropped frames.
    pub drop: bool,
}

impl CaptureFilter {
    /// Whether a frame seen on `dev` in direction `dir` is taken.
    pub fn admits(&self, dev: DevId, dir: Direction) -> bool {
        let wanted = match dir {
            Direction::Rx => self.rx,
            Direction::Tx => self.tx,
            Direction::Drop => self.drop,
        };
        wanted && self.dev.is_none_or(|d| d == dev)
    }
}

/// One captured frame.
#[derive(Debug, Clone)]
pub struct Captured {
    /// The device it was received on, sent out of, or received on before it was dropped.
    pub dev: DevId,
    /// When (ns since the epoch): the receive time of its batch, or, for a frame that waited for its next hop and
    /// was dropped, the time of the drop.
    pub ts_ns: u64,
    /// Received, sent or dropped.
    pub direction: Direction,
    /// Why it was dropped (`Direction::Drop` only).
    pub reason: Option<DropReason>,
    /// The frame's bytes.
    pub bytes: Vec<u8>,
}

/// A worker's capture: its filter, the frames copied since the last [`take`](Self::take) (at most `limit`), and
/// the frames lost because that many were waiting.
#[derive(Debug)]
pub struct CaptureTap {
    filter: CaptureFilter,
    frames: Vec<Captured>,
    limit: usize,
    lost: u64,
    /// Buffers of frames already written, reused for the next copies.
    spare: Vec<Vec<u8>>,
}

impl CaptureTap {
    /// A tap taking what `filter` admits, keeping at most `limit` frames between two takes.
    pub fn new(filter: CaptureFilter, limit: usize) -> CaptureTap {
        CaptureTap {
            filter,
            frames: Vec::with_capacity(limit.min(1024)),
            limit,
            lost: 0,
            spare: Vec::new(),
        }
    }

    /// The filter.
    pub fn filter(&self) -> &CaptureFilter {
        &self.filter
    }

    /// Records a frame received on `dev`.
    #[inline]
    pub fn rx(&mut self, dev: DevId, ts_ns: u64, frame: &[u8]) {
        if self.filter.admits(dev, Direction::Rx) {
            self.push(dev, ts_ns, Direction::Rx, None, frame);
        }
    }

    /// Records a frame sent out of `dev`.
    #[inline]
    pub fn tx(&mut self, dev: DevId, ts_ns: u64, frame: &[u8]) {
        if self.filter.admits(dev, Direction::Tx) {
            self.push(dev, ts_ns, Direction::Tx, None, frame);
        }
    }

    /// Records a frame received on `dev` and dropped for `reason`.
    #[inline]
    pub fn dropped(&mut self, dev: DevId, ts_ns: u64, frame: &[u8], reason: DropReason) {
        if self.filter.admits(dev, Direction::Drop) {
            self.push(dev, ts_ns, Direction::Drop, Some(reason), frame);
        }
    }

    #[inline(never)]
    fn push(
        &mut self,
        dev: DevId,
        ts_ns: u64,
        direction: Direction,
        reason: Option<DropReason>,
        frame: &[u8],
    ) {
        if self.frames.len() >= self.limit {
            self.lost += 1;
            return;
        }
        let mut bytes = self.spare.pop().unwrap_or_default();
        bytes.clear();
        bytes.extend_from_slice(frame);
        self.frames.push(Captured {
            dev,
            ts_ns,
            direction,
            reason,
            bytes,
        });
    }

    /// The frames copied since the last call, in the order they were seen, and how many were lost meanwhile.
    pub fn take(&mut self) -> (Vec<Captured>, u64) {
        let cap = self.frames.capacity();
        (
            std::mem::replace(&mut self.frames, Vec::with_capacity(cap)),
            std::mem::take(&mut self.lost),
        )
    }

    /// Gives back the buffers of frames already written, for the next copies (at most `limit` are kept).
    pub fn recycle(&mut self, frames: Vec<Captured>) {
        let room = self.limit.saturating_sub(self.spare.len());
        self.spare
            .extend(frames.into_iter().take(room).map(|c| c.bytes));
    }
}

impl Worker {
    /// Starts copying what `tap` admits, or stops with `None` (what the old tap held is dropped: take it first).
    pub fn set_capture(&mut self, tap: Option<CaptureTap>) {
        self.capture = tap.map(Box::new);
    }

    /// The worker's capture tap, when one is set: the receive loop records received and sent frames in it.
    pub fn capture(&mut self) -> Option<&mut CaptureTap> {
        self.capture.as_deref_mut()
    }

    /// The frames captured since the last call and how many were lost (nothing without a tap).
    pub fn take_captured(&mut self) -> (Vec<Captured>, u64) {
        self.capture
            .as_deref_mut()
            .map(CaptureTap::take)
            .unwrap_or_default()
    }

    /// A frame received on `dev` is dropped for `reason`: copied when a capture takes drops.
    #[inline(always)]
    pub(super) fn capture_drop(
        &mut self,
        dev: DevId,
        ts_ns: u64,
        frame: &[u8],
        reason: DropReason,
    ) {
        if let Some(c) = self.capture.as_deref_mut() {
            c.dropped(dev, ts_ns, frame, reason);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> CaptureFilter {
        CaptureFilter {
            dev: None,
            rx: true,
            tx: true,
            drop: true,
        }
    }

    #[test]
    fn the_filter_takes_its_directions_and_device() {
        let f = CaptureFilter {
            dev: Some(1),
            rx: false,
            tx: true,
            drop: true,
        };
        assert!(!f.admits(1, Direction::Rx));
        assert!(f.admits(1, Direction::Tx));
        assert!(f.admits(1, Direction::Drop));
        assert!(!f.admits(0, Direction::Tx));
        assert!(all().admits(7, Direction::Rx));
    }

    #[test]
    fn a_full_tap_counts_what_it_cannot_keep_and_reuses_buffers() {
        let mut t = CaptureTap::new(all(), 2);
        t.rx(0, 1, b"a");
        t.dropped(0, 1, b"b", DropReason::NoRoute);
        t.tx(1, 2, b"c");
        let (frames, lost) = t.take();
        assert_eq!(lost, 1);
        assert_eq!(frames.len(), 2);
        assert_eq!(frames[0].direction, Direction::Rx);
        assert_eq!(frames[1].reason, Some(DropReason::NoRoute));
        assert_eq!(frames[1].bytes, b"b");
        t.recycle(frames);
        t.tx(1, 3, b"dd");
        let (frames, lost) = t.take();
        assert_eq!((lost, frames.len()), (0, 1));
        assert_eq!(frames[0].bytes, b"dd");
        assert_eq!(t.spare.len(), 1);
    }
}
