//! The per-packet tracer: for each of the next N frames that match a [`TraceFilter`], every stage of the pipeline
//! the frame passed and what it decided — the route matched, the tunnel or seg6local behaviour applied and the bytes
//! it added or removed, the hop limit, the MTU check, the neighbour, the IOAM data written, the ICMP errors
//! generated, every frame sent, and how the frame ended (sent, consumed, waiting for a neighbour, or the
//! [`DropReason`] it was dropped for).
//!
//! # Why it costs nothing when off
//!
//! A [`Worker`](crate::worker::Worker) holds an optional [`Tracer`]. It looks at it once per batch: with no tracer
//! (the normal case) nothing changes; with one, the batch's frames go to an out-of-line function that runs the
//! filter, claims a frame from the shared [`Budget`] and runs a matching frame through the general path with a
//! [`FrameTrace`] in its context (`Cx`); frames that do not match take the fast path as usual. The fast path
//! (`Worker::fast_forward`) has no trace code at all. On the general path each recording point is one test of the
//! context's `Option<Box<FrameTrace>>`; what is recorded is built in a closure that runs, out of line
//! (`record`), only when tracing — nothing is formatted or allocated for an untraced frame. A traced frame is
//! processed exactly as it would be without the trace (the general path gives the fast path's bytes:
//! `tests/fast_path.rs`); only the `fast_path` counter differs, since a traced frame does not take it
//! (`tests/trace.rs` checks both). docs/BENCHMARKS.md has the instruction counts.
//!
//! # Several workers
//!
//! The [`Budget`] (frames still to trace, and the sequence numbers) is shared by every worker's tracer: N frames
//! are traced in all, whichever workers receive them (one atomic operation per traced frame, none per untraced
//! one), and each [`FrameTrace`] carries its sequence number, so the traces of several workers merge in the order
//! the frames were claimed.

use crate::fib::DevId;
use crate::snapshot::Snapshot;
use crate::stats::{DropReason, Stats};
use crate::wire::ethernet::{self, mac_text};
use crate::wire::{exthdr, ipv4, ipv6, proto};
use ipnet::IpNet;
use serde::Serialize;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

mod step;
mod text;

pub use step::{IoamNote, Step};
pub(crate) use step::{ioam_fills, ioam_inserted};
pub use text::{PROTOCOLS, protocol_name};

/// The most frames one trace may ask for (each traced frame keeps a copy of itself and of every frame it sent).
pub const MAX_FRAMES: u64 = 10_000;

/// Which frames a trace records: all of the conditions given (none given: every frame).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceFilter {
    /// Received on this interface.
    pub dev: Option<DevId>,
    /// Outer source address inside this prefix (IPv6 or IPv4).
    pub src: Option<IpNet>,
    /// Outer destination address inside this prefix (IPv6 or IPv4).
    pub dst: Option<IpNet>,
    /// This protocol number appears in the packet: the IPv4 protocol, or the Next Header of the IPv6 header or of
    /// any extension header, inner packets (IPv6 or IPv4 in IPv6) included.
    pub proto: Option<u8>,
    /// The filter as it was given, for display (`dev r0 dst fd00::/64`; empty: every frame).
    pub text: String,
}

impl TraceFilter {
    /// Whether a frame received on `in_dev` matches.
    pub fn matches(&self, in_dev: DevId, frame: &[u8]) -> bool {
        if self.dev.is_some_and(|d| d != in_dev) {
            return false;
        }
        if self.src.is_none() && self.dst.is_none() && self.proto.is_none() {
            return true;
        }
        let Some((src, dst)) = outer_addresses(frame) else {
            return false;
        };
        if self.src.is_some_and(|p| !p.contains(&src))
            || self.dst.is_some_and(|p| !p.contains(&dst))
        {
            return false;
        }
        self.proto.is_none_or(|p| carries_protocol(frame, p))
    }
}

/// The outer source and destination of an Ethernet frame holding IPv6 or IPv4.
fn outer_addresses(frame: &[u8]) -> Option<(IpAddr, IpAddr)> {
    let l3 = frame.get(ethernet::HEADER_LEN..)?;
    match u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]) {
        ethernet::ETHERTYPE_IPV6 => {
            let p = ipv6::Packet::new_checked(l3).ok()?;
            Some((p.src_addr().into(), p.dst_addr().into()))
        }
        ethernet::ETHERTYPE_IPV4 => {
            let p = ipv4::Packet::new_checked(l3).ok()?;
            Some((p.src_addr().into(), p.dst_addr().into()))
        }
        _ => None,
    }
}

/// Whether protocol `p` appears in the frame's IPv6 header chain or as its IPv4 protocol, inner packets included.
fn carries_protocol(frame: &[u8], p: u8) -> bool {
    let Some(l3) = frame.get(ethernet::HEADER_LEN..) else {
        return false;
    };
    match u16::from_be_bytes([frame[12], frame[13]]) {
        ethernet::ETHERTYPE_IPV6 => ipv6_carries(l3, p, 0),
        ethernet::ETHERTYPE_IPV4 => ipv4_carries(l3, p, 0),
        _ => false,
    }
}

/// How many packets deep the protocol filter looks (IPv6 in IPv6 in ...).
const MAX_DEPTH: usize = 4;

fn ipv6_carries(pkt: &[u8], p: u8, depth: usize) -> bool {
    if pkt.len() < ipv6::HEADER_LEN || pkt[0] >> 4 != 6 {
        return false;
    }
    if pkt[6] == p {
        return true;
    }
    let mut walk = exthdr::Walker::new(pkt);
    for h in walk.by_ref() {
        match h {
            Ok(h) if h.next_header == p => return true,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
    let (up, off) = walk.upper_layer();
    let inner = pkt.get(off..).unwrap_or(&[]);
    match up {
        proto::IPV6 if depth < MAX_DEPTH => ipv6_carries(inner, p, depth + 1),
        proto::IPV4 if depth < MAX_DEPTH => ipv4_carries(inner, p, depth + 1),
        _ => false,
    }
}

fn ipv4_carries(pkt: &[u8], p: u8, depth: usize) -> bool {
    let Ok(v) = ipv4::Packet::new_checked(pkt) else {
        return false;
    };
    if v.protocol() == p {
        return true;
    }
    let inner = pkt.get(v.header_len()..).unwrap_or(&[]);
    match v.protocol() {
        proto::IPV6 if depth < MAX_DEPTH => ipv6_carries(inner, p, depth + 1),
        _ => false,
    }
}

/// What a trace may still record, shared by every worker's [`Tracer`]: the frames left to trace, and the sequence
/// number of the next one.
#[derive(Debug, Default)]
pub struct Budget {
    remaining: AtomicU64,
    seq: AtomicU64,
}

impl Budget {
    /// A budget of `frames` frames (at most [`MAX_FRAMES`]), numbered from 1 (as every frame number a user
    /// reads: `lwt6 decode`, the capture errors, tshark's `frame.number`).
    pub fn new(frames: u64) -> Budget {
        Budget {
            remaining: AtomicU64::new(frames.min(MAX_FRAMES)),
            seq: AtomicU64::new(1),
        }
    }

    /// Frames left to trace.
    pub fn remaining(&self) -> u64 {
        self.remaining.load(Ordering::Relaxed)
    }

    /// Takes one frame from the budget: its sequence number, or None when it is spent.
    fn claim(&self) -> Option<u64> {
        self.remaining
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |r| r.checked_sub(1))
            .ok()?;
        Some(self.seq.fetch_add(1, Ordering::Relaxed))
    }

    /// Spends what is left (a stopped trace).
    pub fn stop(&self) {
        self.remaining.store(0, Ordering::Release);
    }
}

/// A worker's part of a trace: the filter, the shared budget and the worker's number (given to
/// [`Worker::set_tracer`](crate::worker::Worker::set_tracer)).
#[derive(Debug, Clone)]
pub struct Tracer {
    /// Which frames are traced.
    pub filter: TraceFilter,
    /// Shared by every worker of the trace.
    pub budget: Arc<Budget>,
    /// This worker's number (recorded in each [`FrameTrace`]).
    pub worker: u16,
}

impl Tracer {
    /// A tracer for one worker.
    pub fn new(filter: TraceFilter, budget: Arc<Budget>, worker: u16) -> Tracer {
        Tracer {
            filter,
            budget,
            worker,
        }
    }

    /// Whether the frame matches and the budget still has one for it: its sequence number.
    pub(crate) fn admit(&self, in_dev: DevId, frame: &[u8]) -> Option<u64> {
        if !self.filter.matches(in_dev, frame) {
            return None;
        }
        self.budget.claim()
    }
}

/// How a traced frame ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Forwarded or answered (counted in `tx`).
    Sent,
    /// Taken in by the node (a neighbour advertisement, an ARP reply).
    Consumed,
    /// Waiting in a pending queue for its next hop to be resolved (what happens to it then is a second trace of
    /// the same sequence number, [`FrameTrace::resumed_after_ns`] set).
    Pending,
    /// Dropped.
    Dropped,
}

/// One traced frame: what was received, every step, how it ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FrameTrace {
    /// Order of the trace's frames over every worker (1, 2, ...).
    pub seq: u64,
    /// The worker that processed it.
    pub worker: u16,
    /// Receive time (ns since the epoch, as the I/O gave it).
    pub ts_ns: u64,
    /// The interface it was received on.
    pub in_dev: String,
    /// Its length.
    pub len: usize,
    /// The frame as received (for the front end to decode its headers).
    #[serde(skip)]
    pub frame: Vec<u8>,
    /// What the pipeline did, in order.
    pub steps: Vec<Step>,
    /// How it ended.
    pub outcome: Outcome,
    /// The drop reason, when dropped.
    pub drop_reason: Option<DropReason>,
    /// Packet buffer reallocations it caused (0 unless a headroom policy or a too small rx headroom).
    pub reallocs: u64,
    /// Set when this is the rest of a frame's trace that ended `pending`: the frame left its pending queue (its
    /// next hop resolved, or given up) this long after it was received, and was processed again from the start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resumed_after_ns: Option<u64>,
}

/// A MAC address as text.
impl FrameTrace {
    /// Starts the trace of `frame`, received on `in_dev` at `ts`: its Ethernet header as `ethernet_in` reads it.
    pub(crate) fn start(
        snap: &Snapshot,
        seq: u64,
        worker: u16,
        in_dev: DevId,
        ts: u64,
        frame: &[u8],
    ) -> FrameTrace {
        let mut t = FrameTrace {
            seq,
            worker,
            ts_ns: ts,
            in_dev: dev_name(snap, in_dev),
            len: frame.len(),
            frame: frame.to_vec(),
            steps: Vec::new(),
            outcome: Outcome::Sent,
            drop_reason: None,
            reallocs: 0,
            resumed_after_ns: None,
        };
        if let Ok(f) = ethernet::Frame::new_checked(frame) {
            let dst = f.dst();
            let to = if dst[0] & 1 != 0 {
                "group"
            } else if snap.links.get(in_dev).is_some_and(|l| l.mac == dst) {
                "us"
            } else {
                "other"
            };
            t.steps.push(Step::Ethernet {
                src: mac_text(&f.src()),
                dst: mac_text(&dst),
                ethertype: f.ethertype(),
                to,
            });
        }
        t
    }

    /// Ends the trace: the outcome, read from how the counters moved (`before` → `after`), and whether each ICMP
    /// error was sent (the step after it is the error's frame when it was).
    pub(crate) fn finish(&mut self, before: &Stats, after: &Stats) {
        self.reallocs = after.reallocs - before.reallocs;
        (self.outcome, self.drop_reason) = if after.tx > before.tx {
            (Outcome::Sent, None)
        } else if after.consumed > before.consumed {
            (Outcome::Consumed, None)
        } else if after.pending > before.pending {
            (Outcome::Pending, None)
        } else {
            let reason = DropReason::ALL.iter().copied().find(|r| {
                after.drops.get(r).copied().unwrap_or(0) > before.drops.get(r).copied().unwrap_or(0)
            });
            (Outcome::Dropped, reason)
        };
        for i in 0..self.steps.len() {
            let next_sent = matches!(self.steps.get(i + 1), Some(Step::Sent { .. }));
            if let Step::Icmp { sent, .. } = &mut self.steps[i] {
                *sent = next_sent;
            }
        }
    }

    /// Adds a step.
    pub fn push(&mut self, s: Step) {
        self.steps.push(s);
    }
}

/// Runs a recording closure on the trace of the frame being processed. Out of line and cold: the packet path
/// only tests whether there is a trace.
#[cold]
#[inline(never)]
pub(crate) fn record(t: &mut FrameTrace, f: impl FnOnce(&mut FrameTrace)) {
    f(t)
}

/// A device's name (or its number, for a device the snapshot does not have).
pub(crate) fn dev_name(snap: &Snapshot, dev: DevId) -> String {
    snap.links
        .get(dev)
        .map_or_else(|| format!("#{dev}"), |l| l.name.clone())
}

/// Bytes as hexadecimal text.
fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv6Addr;

    fn frame(ethertype: u16, l3: &[u8]) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 1, 2, 2, 0, 0, 0, 1, 1];
        f.extend(ethertype.to_be_bytes());
        f.extend(l3);
        f
    }

    /// RFC 8200 §3: an IPv6 header, then `payload`.
    fn ip6(nh: u8, src: &str, dst: &str, payload: &[u8]) -> Vec<u8> {
        let mut v = vec![0x60, 0, 0, 0];
        v.extend((payload.len() as u16).to_be_bytes());
        v.extend([nh, 64]);
        v.extend(src.parse::<Ipv6Addr>().unwrap().octets());
        v.extend(dst.parse::<Ipv6Addr>().unwrap().octets());
        v.extend(payload);
        v
    }

    #[test]
    fn the_filter_looks_through_extension_headers_and_inner_packets() {
        let udp = [0u8; 8];
        let inner = ip6(proto::UDP, "fd00:1::1", "fd00:9::1", &udp);
        // RFC 8754 §2: an SRH with one segment, next header IPv6, around the inner packet.
        let mut srh = vec![proto::IPV6, 2, 4, 0, 0, 0, 0, 0];
        srh.extend("fc00::1".parse::<Ipv6Addr>().unwrap().octets());
        srh.extend(&inner);
        let outer = frame(
            ethernet::ETHERTYPE_IPV6,
            &ip6(proto::ROUTING, "fd00:2::1", "fc00::1", &srh),
        );
        let f = |p: Option<u8>, dst: Option<&str>, dev: Option<DevId>| TraceFilter {
            dev,
            src: None,
            dst: dst.map(|d| d.parse().unwrap()),
            proto: p,
            text: String::new(),
        };
        assert!(f(None, None, None).matches(0, &outer));
        assert!(f(Some(proto::ROUTING), None, None).matches(0, &outer));
        assert!(f(Some(proto::IPV6), None, None).matches(0, &outer));
        assert!(
            f(Some(proto::UDP), None, None).matches(0, &outer),
            "the inner UDP"
        );
        assert!(!f(Some(proto::TCP), None, None).matches(0, &outer));
        assert!(f(None, Some("fc00::/16"), None).matches(0, &outer));
        assert!(
            !f(None, Some("fd00:9::/64"), None).matches(0, &outer),
            "the outer destination only"
        );
        assert!(!f(None, Some("10.0.0.0/8"), None).matches(0, &outer));
        assert!(!f(None, None, Some(1)).matches(0, &outer));
        // Hostile input: never a panic, never a match on what is not there.
        for n in 0..outer.len() {
            let cut = &outer[..n];
            let _ = f(Some(proto::UDP), Some("fc00::/16"), None).matches(0, cut);
            assert!(!f(Some(proto::TCP), None, None).matches(0, cut));
        }
    }

    #[test]
    fn the_budget_is_shared_and_numbers_its_frames() {
        let b = Arc::new(Budget::new(3));
        let t0 = Tracer::new(TraceFilter::default(), Arc::clone(&b), 0);
        let t1 = Tracer::new(TraceFilter::default(), Arc::clone(&b), 1);
        let f = frame(
            ethernet::ETHERTYPE_IPV6,
            &ip6(proto::UDP, "fd00::1", "fd00::2", &[0; 8]),
        );
        assert_eq!(t0.admit(0, &f), Some(1));
        assert_eq!(t1.admit(0, &f), Some(2));
        assert_eq!(t0.admit(0, &f), Some(3));
        assert_eq!(t1.admit(0, &f), None);
        assert_eq!(b.remaining(), 0);
        assert_eq!(Budget::new(u64::MAX).remaining(), MAX_FRAMES);
    }

    #[test]
    fn an_ioam_fill_is_read_from_the_header_before_and_after() {
        // RFC 8200 §4.3 / RFC 9197 §4.4: a Hop-by-Hop header (next header 17, Hdr Ext Len 3: 32 bytes) with one
        // pre-allocated trace: option 0x31, length 26, reserved, IOAM type 0; namespace 123, NodeLen 1, no flags,
        // RemainingLen 4 words; trace type 0x800000 (bit 0: hop limit and node id); 16 bytes of data; PadN.
        let mut before = vec![17, 3, 0x31, 26, 0, 0, 0, 123, 1 << 3, 4, 0x80, 0, 0, 0];
        before.extend([0u8; 16]);
        before.extend([1, 0]);
        assert_eq!(before.len(), 32);
        let mut after = before.clone();
        after[9] = 3; // one word used
        after[26..30].copy_from_slice(&[63, 0x11, 0x11, 0x11]);
        let n = ioam_fills(Some(&before[..]), &after);
        assert_eq!(n.len(), 1, "{n:?}");
        assert_eq!((n[0].namespace, n[0].trace_type), (123, 0x800000));
        assert_eq!((n[0].remaining_before, n[0].remaining_after), (4, 3));
        assert!(n[0].filled && !n[0].overflow);
        assert_eq!(n[0].data, "3f111111");
        let node = n[0].node.as_ref().unwrap();
        assert_eq!((node.hop_limit, node.node_id), (Some(63), Some(0x111111)));
        // Unchanged: nothing written.
        let n = ioam_fills(Some(&before[..]), &before);
        assert!(!n[0].filled && n[0].data.is_empty() && n[0].node.is_none());
    }
}
