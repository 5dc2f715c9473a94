//! Batch plumbing: a batch (or a single frame) on one snapshot, its per-batch setup ([`Worker::begin`]) and
//! counter flush, and the choice, frame by frame, between the fast path and the general path.

use super::{Cx, Outcome, RouteHint, Worker};
use crate::buffer::PacketBuf;
use crate::fib::DevId;
use crate::snapshot::Snapshot;
use crate::stats::DropReason;
use std::net::Ipv6Addr;

/// A batch in progress on one snapshot ([`Worker::start_batch`]).
#[derive(Debug)]
pub struct Batch<'w, 's> {
    worker: &'w mut Worker,
    snap: &'s Snapshot,
    fast: bool,
}

impl Batch<'_, '_> {
    /// Processes one received frame of the batch; every frame sent is passed to `out`.
    #[inline]
    pub fn process(
        &mut self,
        in_dev: DevId,
        ts_ns: u64,
        frame: &[u8],
        out: &mut dyn FnMut(DevId, u64, &[u8]),
    ) {
        self.worker
            .process_one(self.snap, in_dev, ts_ns, frame, out, self.fast);
    }
}

impl Batch<'_, '_> {
    /// Records a received frame in the worker's capture tap, if it has one (see [`Worker::capture`]).
    #[inline]
    pub fn capture_rx(&mut self, in_dev: DevId, ts_ns: u64, frame: &[u8]) {
        if let Some(c) = self.worker.capture() {
            c.rx(in_dev, ts_ns, frame);
        }
    }
}

impl Drop for Batch<'_, '_> {
    fn drop(&mut self) {
        self.worker.flush_counters();
    }
}

impl Worker {
    /// Processes a batch of received frames `(ingress device, timestamp ns, bytes)` on one snapshot; every frame
    /// sent is passed to `out`. (Kept out of line: the snapshot is then a function argument, which the compiler
    /// knows nothing writes to during the batch, so it keeps what it reads from it in registers across packets.)
    #[inline(never)]
    pub fn process_batch<'a>(
        &mut self,
        snap: &Snapshot,
        frames: impl IntoIterator<Item = (DevId, u64, &'a [u8])>,
        out: &mut dyn FnMut(DevId, u64, &[u8]),
    ) {
        let fast = self.begin(snap);
        for (dev, ts, frame) in frames {
            self.process_one(snap, dev, ts, frame, out, fast);
        }
        self.flush_counters();
    }

    /// Starts a batch on `snap` for a receive loop that hands frames over one at a time (from a port's callback):
    /// the same per-batch work as [`Worker::process_batch`], finished (counters added) when the [`Batch`] is
    /// dropped.
    pub fn start_batch<'w, 's>(&'w mut self, snap: &'s Snapshot) -> Batch<'w, 's> {
        let fast = self.begin(snap);
        Batch {
            worker: self,
            snap,
            fast,
        }
    }

    /// Processes one received frame on `snap`.
    pub fn process(
        &mut self,
        snap: &Snapshot,
        in_dev: DevId,
        ts_ns: u64,
        frame: &[u8],
        out: &mut dyn FnMut(DevId, u64, &[u8]),
    ) {
        let fast = self.begin(snap);
        self.process_one(snap, in_dev, ts_ns, frame, out, fast);
        self.flush_counters();
    }

    /// Starts a batch on `snap`: a new next-hop cache generation, per-tunnel state sized for its tunnels, and
    /// whether the fast path may run at all (worker- and snapshot-wide conditions, checked once per batch).
    #[inline]
    pub(super) fn begin(&mut self, snap: &Snapshot) -> bool {
        self.nh_gen += 1;
        let n = snap.tunnels.len();
        if self.freq.len() != n {
            self.freq.resize(n, 0);
            self.nh_cache.resize(n, (0, Ipv6Addr::UNSPECIFIED, None));
        }
        if self.births_seen != snap.tunnel_births {
            self.reset_reused_tunnels(snap);
        }
        let fast = self.fast_path && self.headroom_policy.is_none() && snap.all.forwarding;
        if self.tracer.is_some() {
            return self.begin_traced(fast);
        }
        fast
    }

    /// Starts the `freq K/N` count of every tunnel installed in a reused slot since the last batch anew. (Out of
    /// line: only after route changes.)
    #[inline(never)]
    fn reset_reused_tunnels(&mut self, snap: &Snapshot) {
        for (f, born) in self.freq.iter_mut().zip(&snap.tunnel_born) {
            if *born > self.births_seen {
                *f = 0;
            }
        }
        self.births_seen = snap.tunnel_births;
    }

    /// Adds the pending fast-path and per-kind tunnel counts to the counters. (Once per batch; kept out of line so
    /// that it does not take registers from the per-packet loop.)
    #[inline(never)]
    pub(super) fn flush_counters(&mut self) {
        let fast = std::mem::take(&mut self.fast_sent);
        self.stats.rx += fast;
        self.stats.tx += fast;
        self.stats.fast_path += fast;
        for (total, pending) in self
            .stats
            .encapsulated
            .0
            .iter_mut()
            .zip(&mut self.encap_pending)
        {
            *total += std::mem::take(pending);
        }
    }

    /// One frame (the caller manages the next-hop cache generation and the counters): the fast path when `fast`
    /// (checked once per batch by [`Self::begin`]) and the route has a plan, else the general path with the route
    /// the fast path found.
    #[inline(always)]
    fn process_one(
        &mut self,
        snap: &Snapshot,
        in_dev: DevId,
        ts: u64,
        frame: &[u8],
        out: &mut dyn FnMut(DevId, u64, &[u8]),
        fast: bool,
    ) {
        let hint = if fast {
            match self.fast_forward(snap, in_dev, ts, frame, out) {
                Ok(()) => return,
                Err(hint) => hint,
            }
        } else {
            None
        };
        let mut cx = Cx {
            snap,
            in_dev,
            ts,
            out,
            group: false,
            trace: None,
        };
        self.process_slow(&mut cx, frame, hint);
    }

    /// The general path for one frame. (Kept out of line, so that the fast path around it stays small enough for
    /// its helpers to be inlined.)
    #[inline(never)]
    pub(super) fn process_slow(
        &mut self,
        cx: &mut Cx<'_, '_>,
        frame: &[u8],
        hint: Option<RouteHint<'_>>,
    ) {
        if self.tracer.is_some() {
            return self.process_traced(cx, frame, hint);
        }
        self.stats.rx += 1;
        self.general(cx, frame, hint);
    }

    /// The general path's work on a frame already counted as received (a new one, or one leaving a pending
    /// queue).
    #[inline(always)]
    pub(super) fn general(
        &mut self,
        cx: &mut Cx<'_, '_>,
        frame: &[u8],
        hint: Option<RouteHint<'_>>,
    ) {
        let mut buf = std::mem::replace(&mut self.buf, PacketBuf::new(0));
        buf.load(frame, self.rx_headroom);
        let before = buf.reallocs();
        self.outcome = Outcome::Sent;
        self.miss = None;
        let verdict = self.ethernet_in(cx, &mut buf, hint);
        self.stats.reallocs += buf.reallocs() - before;
        match verdict {
            Ok(()) if self.outcome == Outcome::Consumed => self.stats.consumed += 1,
            Ok(()) => self.stats.tx += 1,
            Err(r) => match self.miss.take() {
                // No neighbour yet for the next hop: the packet waits for it.
                Some(key) if r == DropReason::NoNeighbour && self.resolve => {
                    self.enqueue(cx, key, frame)
                }
                _ => {
                    self.stats.count_drop(r);
                    self.capture_drop(cx.in_dev, cx.ts, frame, r);
                }
            },
        }
        self.buf = buf;
    }
}
