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

use crate::fib::{DevId, RouteEntry};
use crate::node::seg6local::table_name;
use crate::snapshot::Snapshot;
use crate::stats::{DropReason, Stats};
use crate::tunnel::{InputTunnel, Ioam6Tunnel, Tunnel};
use crate::wire::ethernet::{self, mac_text};
use crate::wire::ioam::{self, DecodedNode};
use crate::wire::{exthdr, hbh, ipv4, ipv6, proto};
use ipnet::IpNet;
use serde::Serialize;
use std::fmt;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

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

/// One IOAM pre-allocated trace as this node left it: its namespace and type, and the node data this node wrote.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IoamNote {
    /// Namespace id.
    pub namespace: u16,
    /// Trace type (24 bits).
    pub trace_type: u32,
    /// RemainingLen before this node (4-byte words).
    pub remaining_before: u8,
    /// RemainingLen after it.
    pub remaining_after: u8,
    /// Whether the Overflow flag is set after this node.
    pub overflow: bool,
    /// Whether this node wrote its data (the namespace is known here and there was room).
    pub filled: bool,
    /// The node data block written, as hex (empty when nothing was written).
    pub data: String,
    /// The node data block decoded.
    pub node: Option<DecodedNode>,
}

/// The pre-allocated IOAM traces of an options header (its whole bytes), by offset: (offset, header).
fn ioam_traces(hdr: &[u8]) -> Vec<(usize, ioam::TraceHeader)> {
    hbh::OptionIter::new(hdr)
        .map_while(|o| o.ok())
        .filter(|o| o.ty == hbh::OPT_IOAM && o.data_len >= 10)
        .filter(|o| hdr.get(o.offset + 3) == Some(&ioam::OPT_TYPE_PREALLOC_TRACE))
        .filter_map(|o| {
            let h = ioam::TraceHeader::parse(hdr.get(o.offset + 4..o.offset + 12)?).ok()?;
            Some((o.offset, h))
        })
        .collect()
}

/// What this node did to the IOAM traces of an options header: `before` and `after` are the header's bytes
/// before and after the fill (the same length: filling writes in place).
pub(crate) fn ioam_fills(before: Option<&[u8]>, after: &[u8]) -> Vec<IoamNote> {
    let old = before.map(ioam_traces).unwrap_or_default();
    ioam_traces(after)
        .into_iter()
        .map(|(off, h)| {
            let prev = old
                .iter()
                .find(|(o, _)| *o == off)
                .map(|(_, p)| p.remaining_len);
            let remaining_before = prev.unwrap_or(h.remaining_len);
            let filled = remaining_before > h.remaining_len;
            let data_at = off + 12;
            let block = after
                .get(
                    data_at + 4 * usize::from(h.remaining_len)
                        ..data_at + 4 * usize::from(remaining_before),
                )
                .unwrap_or(&[]);
            IoamNote {
                namespace: h.namespace,
                trace_type: h.trace_type,
                remaining_before,
                remaining_after: h.remaining_len,
                overflow: h.overflow(),
                filled,
                data: hex(block),
                node: (filled)
                    .then(|| ioam::decode_node_blocks(block, h.trace_type).ok())
                    .flatten()
                    .and_then(|v| v.into_iter().next()),
            }
        })
        .collect()
}

/// The IOAM traces an inserting node put into the Hop-by-Hop header at `hbh_at` of `pkt`, with the node data it
/// wrote (everything between the remaining space and the end of the preallocated area is this node's: the trace
/// was empty before).
pub(crate) fn ioam_inserted(pkt: &[u8], hbh_at: usize) -> Vec<IoamNote> {
    let Some(len) = pkt.get(hbh_at + 1).map(|l| (usize::from(*l) + 1) * 8) else {
        return Vec::new();
    };
    let Some(hdr) = pkt.get(hbh_at..hbh_at + len) else {
        return Vec::new();
    };
    ioam_traces(hdr)
        .into_iter()
        .map(|(off, h)| {
            let data_at = off + 12;
            let opt_end = off + 2 + usize::from(hdr[off + 1]);
            let block = hdr
                .get(data_at + 4 * usize::from(h.remaining_len)..opt_end)
                .unwrap_or(&[]);
            let words = block.len() / 4;
            IoamNote {
                namespace: h.namespace,
                trace_type: h.trace_type,
                remaining_before: h.remaining_len + words as u8,
                remaining_after: h.remaining_len,
                overflow: h.overflow(),
                filled: !block.is_empty(),
                data: hex(block),
                node: ioam::decode_node_blocks(block, h.trace_type)
                    .ok()
                    .and_then(|v| v.into_iter().next()),
            }
        })
        .collect()
}

/// One stage a traced frame passed and what it decided. Serialized with a `"step"` key naming the variant
/// (snake_case) beside its fields: the JSON schema of docs/live.md, *Packet tracing*.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum Step {
    /// The Ethernet header: addresses, EtherType, and whom it is for (`us`, `group`: broadcast or multicast,
    /// `other`: dropped as `not_for_us`).
    Ethernet {
        /// Source MAC.
        src: String,
        /// Destination MAC.
        dst: String,
        /// EtherType.
        ethertype: u16,
        /// `us`, `group` or `other`.
        to: &'static str,
    },
    /// An IPv6 header as the input stage read it: pass 0 as received, then again after a decapsulation or a
    /// routing header addressed to this node.
    Ipv6 {
        /// Decapsulations and local routing-header passes before this one.
        pass: usize,
        /// Source.
        src: Ipv6Addr,
        /// Destination.
        dst: Ipv6Addr,
        /// Hop limit.
        hop_limit: u8,
        /// Next Header.
        next_header: u8,
        /// Payload length.
        payload_len: u16,
        /// Whether the destination is one of this node's addresses.
        local: bool,
    },
    /// An IPv4 header as the input stage read it.
    Ipv4 {
        /// Source.
        src: std::net::Ipv4Addr,
        /// Destination.
        dst: std::net::Ipv4Addr,
        /// TTL.
        ttl: u8,
        /// Protocol.
        protocol: u8,
        /// Total length.
        total_len: u16,
        /// Whether the destination is one of this node's addresses.
        local: bool,
    },
    /// A routing table lookup and the route it found (none: the fields after `found` are absent).
    Route {
        /// What was looked up: `destination`, `tunnel destination`, `next segment`, `nh6`, `nh4`, `policy`.
        purpose: &'static str,
        /// The table (`main`, or its number).
        table: String,
        /// The address looked up.
        dst: IpAddr,
        /// Whether a route was found.
        found: bool,
        /// The route's prefix.
        #[serde(skip_serializing_if = "Option::is_none")]
        prefix: Option<String>,
        /// Its metric.
        #[serde(skip_serializing_if = "Option::is_none")]
        metric: Option<u32>,
        /// Its gateway.
        #[serde(skip_serializing_if = "Option::is_none")]
        via: Option<IpAddr>,
        /// Its device.
        #[serde(skip_serializing_if = "Option::is_none")]
        dev: Option<String>,
        /// Its tunnel, as `ip route` prints it (`encap seg6 mode encap segs 2 [ ... ]`).
        #[serde(skip_serializing_if = "Option::is_none")]
        encap: Option<String>,
    },
    /// A Hop-by-Hop header: its options checked, and the IOAM pre-allocated traces in it, as this node left them
    /// (transit: filled when `ioam6_enabled` is on for the ingress interface and the namespace is known here).
    HopByHop {
        /// Header length.
        len: usize,
        /// The ingress interface's `ioam6_enabled`.
        ioam_enabled: bool,
        /// The traces.
        ioam: Vec<IoamNote>,
    },
    /// IOAM domain roles at work (docs/ioam.md): `foreign_stripped`, `oversize_stripped` (a trace over its
    /// domain's `maxsize`), `stripped` (both kinds), `removed` (leaving the domain), `decapsulated` (the IOAM
    /// tunnel endpoint).
    IoamDomain {
        /// What was done.
        action: &'static str,
        /// IOAM options concerned.
        options: usize,
        /// Bytes removed from the packet.
        removed: usize,
    },
    /// A routing header addressed to this node, processed (`srh`, `rpl`): what it decided (`forward` to the new
    /// destination, `decap`, `deliver`, `param_problem`), with Segments Left and the destination after it.
    RoutingHeader {
        /// `srh` or `rpl`.
        kind: &'static str,
        /// `forward`, `decap`, `deliver` or `param_problem`.
        action: &'static str,
        /// Segments Left after processing.
        segments_left: u8,
        /// The packet's destination after processing.
        dst: Ipv6Addr,
        /// The header's length as received.
        len_before: usize,
        /// Its length after processing (an RPL header is compressed again for the new destination).
        len_after: usize,
    },
    /// The seg6local behaviour of the route that matched.
    Seg6Local {
        /// Its name (`End`, `End.X`, `End.DT6`, ...).
        behaviour: &'static str,
        /// The route's whole action, as `ip route` prints it.
        action: String,
    },
    /// The SRH's Segments Left decremented and the next segment made the destination (End, End.X, End.T,
    /// End.B6.Encaps).
    SrhAdvance {
        /// Segments Left before.
        segments_left: u8,
        /// The new destination.
        dst: Ipv6Addr,
    },
    /// NEXT-C-SID: the destination's argument shifted into place.
    NextCsid {
        /// The new destination.
        dst: Ipv6Addr,
    },
    /// The SRH removed (PSP, USP).
    SrhPop {
        /// Bytes removed.
        removed: usize,
    },
    /// Decapsulation: the outer headers removed, the inner packet (`ipv6`, `ipv4`, `ethernet`) kept.
    Decap {
        /// The inner packet's kind.
        inner: &'static str,
        /// Bytes removed.
        removed: usize,
    },
    /// A tunnel planned on the way out: seg6 or rpl before forwarding, ioam6 after it; the bytes it adds and the
    /// destination it routes to.
    Tunnel {
        /// `seg6`, `rpl` or `ioam6`.
        kind: &'static str,
        /// The tunnel as `ip route` prints it.
        encap: String,
        /// Bytes it adds (an l2encap counts the Ethernet header it keeps).
        added: usize,
        /// The destination it sends the packet to, when it changes it.
        #[serde(skip_serializing_if = "Option::is_none")]
        new_dst: Option<Ipv6Addr>,
    },
    /// The hop limit check passed (the packet is forwarded with one less).
    HopLimit {
        /// The (inner) hop limit or TTL as received.
        received: u8,
    },
    /// The MTU check on the way out.
    Mtu {
        /// The packet's length once every tunnel is applied (without the Ethernet header).
        len: usize,
        /// The route's and egress device's MTU.
        mtu: usize,
        /// Whether it fits.
        fits: bool,
    },
    /// The next hop's link-layer address (`reachable`, `stale`: a learned entry to be confirmed, `none`: no
    /// entry — dropped as `no_neighbour`, or queued while it is resolved).
    Neighbour {
        /// Egress device.
        dev: String,
        /// Next hop.
        addr: IpAddr,
        /// `reachable`, `stale` or `none`.
        state: &'static str,
        /// Its MAC.
        #[serde(skip_serializing_if = "Option::is_none")]
        mac: Option<String>,
    },
    /// An ioam6 tunnel's traces inserted, with this node's data in them.
    IoamInsert {
        /// `inline` or `encap`.
        mode: &'static str,
        /// The traces.
        ioam: Vec<IoamNote>,
    },
    /// An ICMP error generated about the packet (sent unless RFC 4443 §2.4 (e), the rate limits or the way back
    /// forbid it: then `sent` is false).
    Icmp {
        /// The error (`TimeExceeded { code: 0 }`, `PacketTooBig { mtu: 1452 }`, ...).
        error: String,
        /// Its destination: the packet's source.
        to: IpAddr,
        /// Whether it was sent (the next step is its frame).
        sent: bool,
    },
    /// A frame sent: the packet itself, an ICMP error, a reply or a solicitation.
    Sent {
        /// Egress device.
        dev: String,
        /// Frame length.
        len: usize,
        /// The frame (for the front end to decode its headers).
        #[serde(skip)]
        frame: Vec<u8>,
    },
}

impl Step {
    /// A routing table lookup in `table` for `dst`.
    pub(crate) fn route(
        snap: &Snapshot,
        purpose: &'static str,
        table: u32,
        dst: IpAddr,
        r: Option<&RouteEntry>,
    ) -> Step {
        Step::Route {
            purpose,
            table: table_name(table),
            dst,
            found: r.is_some(),
            prefix: r.map(|r| r.prefix.to_string()),
            metric: r.map(|r| r.metric),
            via: r.and_then(|r| r.via),
            dev: r.and_then(|r| r.dev).map(|d| dev_name(snap, d)),
            encap: r
                .and_then(|r| r.tunnel)
                .and_then(|t| snap.tunnels.get(t))
                .map(Tunnel::iproute2),
        }
    }

    /// An input tunnel planned.
    pub(crate) fn input_tunnel(t: &InputTunnel, added: usize, new_dst: Option<Ipv6Addr>) -> Step {
        let (kind, encap) = match t {
            InputTunnel::Seg6(s) => ("seg6", s.iproute2()),
            InputTunnel::Rpl(r) => ("rpl", r.iproute2()),
        };
        Step::Tunnel {
            kind,
            encap,
            added,
            new_dst,
        }
    }

    /// An ioam6 tunnel planned.
    pub(crate) fn output_tunnel(t: &Ioam6Tunnel, added: usize, new_dst: Option<Ipv6Addr>) -> Step {
        Step::Tunnel {
            kind: "ioam6",
            encap: t.iproute2(),
            added,
            new_dst,
        }
    }

    /// The neighbour lookup for `addr` on `dev`.
    pub(crate) fn neighbour(snap: &Snapshot, dev: DevId, addr: IpAddr) -> Step {
        let found = snap.neighbour(dev, addr);
        Step::Neighbour {
            dev: dev_name(snap, dev),
            addr,
            state: match found {
                Some((_, false)) => "reachable",
                Some((_, true)) => "stale",
                None => "none",
            },
            mac: found.map(|(m, _)| mac_text(&m)),
        }
    }
}

impl fmt::Display for IoamNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ns {} type {:#08x} remaining {} -> {}",
            self.namespace, self.trace_type, self.remaining_before, self.remaining_after
        )?;
        if self.overflow {
            write!(f, " OVERFLOW")?;
        }
        if self.filled {
            write!(f, ", wrote {}", self.data)?;
        } else {
            write!(f, ", nothing written")?;
        }
        Ok(())
    }
}

/// The protocol numbers steps name, as text (`udp`, `routing`, ...; the number otherwise).
pub fn protocol_name(p: u8) -> String {
    PROTOCOLS
        .iter()
        .find(|(_, n)| *n == p)
        .map_or_else(|| p.to_string(), |(s, _)| (*s).to_string())
}

/// The protocol names a trace filter's `proto` takes, with their numbers.
pub const PROTOCOLS: &[(&str, u8)] = &[
    ("hopopts", proto::HOPOPTS),
    ("icmp", 1),
    ("ipv4", proto::IPV4),
    ("tcp", proto::TCP),
    ("udp", proto::UDP),
    ("ipv6", proto::IPV6),
    ("routing", proto::ROUTING),
    ("fragment", proto::FRAGMENT),
    ("esp", proto::ESP),
    ("ah", proto::AH),
    ("icmpv6", proto::ICMPV6),
    ("none", proto::NONE),
    ("dstopts", proto::DSTOPTS),
    ("ethernet", proto::ETHERNET),
];

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Ethernet {
                src,
                dst,
                ethertype,
                to,
            } => write!(
                f,
                "ethernet   {src} > {dst} type {ethertype:#06x} (to {to})"
            ),
            Step::Ipv6 {
                pass,
                src,
                dst,
                hop_limit,
                next_header,
                payload_len,
                local,
            } => {
                write!(
                    f,
                    "ipv6       {src} > {dst} hlim {hop_limit} next {} payload {payload_len}",
                    protocol_name(*next_header)
                )?;
                if *pass > 0 {
                    write!(f, " (pass {pass})")?;
                }
                if *local {
                    write!(f, " (to this node)")?;
                }
                Ok(())
            }
            Step::Ipv4 {
                src,
                dst,
                ttl,
                protocol,
                total_len,
                local,
            } => {
                write!(
                    f,
                    "ipv4       {src} > {dst} ttl {ttl} proto {} len {total_len}",
                    protocol_name(*protocol)
                )?;
                if *local {
                    write!(f, " (to this node)")?;
                }
                Ok(())
            }
            Step::Route {
                purpose,
                table,
                dst,
                found,
                prefix,
                metric,
                via,
                dev,
                encap,
            } => {
                write!(f, "route      {purpose} {dst} in table {table}: ")?;
                if !found {
                    return write!(f, "no route");
                }
                write!(f, "{}", prefix.as_deref().unwrap_or("?"))?;
                if let Some(e) = encap {
                    write!(f, " {e}")?;
                }
                if let Some(v) = via {
                    write!(f, " via {v}")?;
                }
                if let Some(d) = dev {
                    write!(f, " dev {d}")?;
                }
                if let Some(m) = metric {
                    write!(f, " metric {m}")?;
                }
                Ok(())
            }
            Step::HopByHop {
                len,
                ioam_enabled,
                ioam,
            } => {
                write!(
                    f,
                    "hop-by-hop {len} bytes, ioam6_enabled {}",
                    u8::from(*ioam_enabled)
                )?;
                for n in ioam {
                    write!(f, "\n             ioam trace {n}")?;
                }
                Ok(())
            }
            Step::IoamDomain {
                action,
                options,
                removed,
            } => write!(
                f,
                "ioam domain {action}: {options} option(s), {removed} bytes removed"
            ),
            Step::RoutingHeader {
                kind,
                action,
                segments_left,
                dst,
                len_before,
                len_after,
            } => {
                write!(
                    f,
                    "{kind:<10} processed here: {action}, segments left {segments_left}, destination {dst}"
                )?;
                if len_after != len_before {
                    write!(f, ", header {len_before} -> {len_after} bytes")?;
                }
                Ok(())
            }
            Step::Seg6Local { behaviour, action } => {
                write!(f, "seg6local  {behaviour} ({action})")
            }
            Step::SrhAdvance { segments_left, dst } => write!(
                f,
                "srh        segments left {segments_left} -> {}, destination {dst}",
                segments_left.saturating_sub(1)
            ),
            Step::NextCsid { dst } => write!(f, "next-c-sid destination {dst}"),
            Step::SrhPop { removed } => write!(f, "srh        removed (-{removed} bytes)"),
            Step::Decap { inner, removed } => {
                write!(f, "decap      -{removed} bytes, inner {inner} packet")
            }
            Step::Tunnel {
                kind,
                encap,
                added,
                new_dst,
            } => {
                write!(f, "tunnel     {kind} +{added} bytes ({encap})")?;
                if let Some(d) = new_dst {
                    write!(f, ", new destination {d}")?;
                }
                Ok(())
            }
            Step::HopLimit { received } => write!(
                f,
                "hop limit  {received} > 1: forwarded with {}",
                received.saturating_sub(1)
            ),
            Step::Mtu { len, mtu, fits } => write!(
                f,
                "mtu        {len} {} {mtu}{}",
                if *fits { "<=" } else { ">" },
                if *fits { "" } else { ": too big" }
            ),
            Step::Neighbour {
                dev,
                addr,
                state,
                mac,
            } => {
                write!(f, "neighbour  {addr} dev {dev}: ")?;
                match mac {
                    Some(m) => write!(f, "{m} ({state})"),
                    None => write!(f, "none"),
                }
            }
            Step::IoamInsert { mode, ioam } => {
                write!(f, "ioam6      {mode} insertion")?;
                for n in ioam {
                    write!(f, "\n             ioam trace {n}")?;
                }
                Ok(())
            }
            Step::Icmp { error, to, sent } => write!(
                f,
                "icmp       {error} to {to}{}",
                if *sent { "" } else { " (not sent)" }
            ),
            Step::Sent { dev, len, .. } => write!(f, "sent       dev {dev}, {len} bytes"),
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Outcome::Sent => "sent",
            Outcome::Consumed => "consumed",
            Outcome::Pending => "pending",
            Outcome::Dropped => "dropped",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
