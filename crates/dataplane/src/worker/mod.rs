//! A worker: one thread's share of the forwarding, with everything it owns — its packet buffer, ICMP scratch
//! space, per-tunnel caches and counters — and nothing shared but the [`Snapshot`] it borrows per batch.
//!
//! The pipeline: ethernet in → IPv6/IPv4 checks → Hop-by-Hop (IOAM transit) → local routing headers (RPL, SRH) →
//! route lookup → tunnels → hop limit → MTU → neighbour → ethernet out. A packet whose route has a precomputed
//! [`Plan`](crate::plan::Plan) and needs nothing else takes the fast path (a template copy and a few fields); every other packet the
//! general path, which plans everything first (what it will write, where, and how much room it needs), then reserves headroom once and writes. Every drop
//! is a named [`DropReason`], and `rx == tx + dropped` always holds.
//!
//! Several workers may share one snapshot. IOAM `freq K/N` is counted per worker: each worker inserts into the
//! first K of every N packets *it* forwards on the route, so over all workers exactly K of every N packets carry a
//! trace once each worker has seen a multiple of N (with one worker, the kernel's behaviour exactly).
//!
//! One `impl Worker`, one file per stage: this file dispatches a frame (`ethernet_in`, `ipv6_in`, `ipv4_in`);
//! `batch` runs batches and picks the path per frame; `fast` is the fast path; `hop_by_hop` checks options and
//! does the IOAM work; `local` takes what is addressed to this node (routing headers, ARP, NDP, echo);
//! `seg6local` runs the SRv6 endpoint behaviours; `forward` plans and writes forwarding with its tunnels;
//! `neighbour` finds next hops' addresses and queues packets waiting for one; `icmp` sends errors; `recording`
//! records traced frames; `capture` copies frames for a live capture.

use crate::buffer::PacketBuf;
use crate::copy::WideCopy;
use crate::fib::{DevId, RouteEntry};
use crate::headroom::HeadroomPolicy;
use crate::hop::icmp_limit::IcmpLimiter;
use crate::hop::ioam::IfIds;
use crate::hop::ioam_domain::ExportQueue;
use crate::neigh::{NeighEvent, SolicitGate};
use crate::snapshot::Snapshot;
use crate::spec::{DevSysctls, MAIN_TABLE};
use crate::stats::{DropReason, Stats};
use crate::trace::{self, FrameTrace, Step, Tracer};
use crate::tunnel::{Tunnel, TunnelKind};
use crate::wire::ethernet::{self, Mac};
use crate::wire::icmpv4::{self, Icmpv4Error};
use crate::wire::icmpv6::IcmpError;
use crate::wire::{arp, exthdr, ipv4, ipv6, ndp, proto};
use pending::PendingQueues;
use std::collections::HashSet;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;

/// How many decapsulations or local routing-header passes one packet may go through.
const MAX_PASSES: usize = 8;

/// One worker's state. Built for a snapshot ([`Worker::new`]); it follows the snapshots it is given batch by
/// batch.
#[derive(Debug)]
pub struct Worker {
    /// Headroom every received frame is loaded with (in front of its Ethernet header); the snapshot's
    /// [`Snapshot::rx_headroom`] unless set otherwise (to model a NIC, for example).
    pub rx_headroom: usize,
    /// How headroom is made for added headers when not by the worker's own plan (`None`: plan the whole packet,
    /// reserve once).
    pub headroom_policy: Option<Arc<dyn HeadroomPolicy>>,
    /// Use the precomputed plans for packets that need nothing else (on by default; the general path gives the
    /// same bytes, see `tests/fast_path.rs`).
    pub fast_path: bool,
    /// How plan templates are copied: [`WideCopy`] where the CPU has it (detected when the worker is built), else
    /// libc `memcpy`. Public so that benchmarks can compare the two (`lwt6 bench sweep --strategies lwt6-memcpy`).
    pub template_copy: Option<WideCopy>,
    /// What this worker counted: frames received, sent, consumed, waiting and dropped (by reason), per tunnel
    /// kind and per seg6local route; added up across workers with [`Stats::merge`].
    pub stats: Stats,
    /// IOAM traces removed at a domain's boundary (and, optionally, seen in transit), for an exporter to take.
    pub ioam_export: ExportQueue,
    /// Dynamic neighbour resolution (the live router turns it on; off, the offline default, a next hop without a
    /// neighbour entry is a `no_neighbour` drop and nothing is learned): see [`crate::neigh`].
    pub resolve: bool,
    /// Rate limits for the ICMP errors this worker sends (`None`, the offline default: every error is sent; the
    /// live router sets `Some(IcmpLimiter::default())`, Linux's default limits).
    pub icmp_limiter: Option<IcmpLimiter>,
    /// Shared by the workers of one live router: one multicast solicitation per next hop and retransmission
    /// interval between them all, however many workers queue packets for it (`None`: this worker solicits for
    /// itself).
    pub solicit_gate: Option<Arc<SolicitGate>>,
    buf: PacketBuf,
    /// Replies and solicitations are written here.
    reply: Vec<u8>,
    /// What a packet that was not dropped became (set by the node handlers; sent unless they say otherwise).
    outcome: Outcome,
    /// The next hop a packet found no neighbour for (with `resolve`), to queue it for.
    miss: Option<(DevId, IpAddr)>,
    /// Packets waiting for their next hop.
    pending: PendingQueues,
    /// What was learned about neighbours since the last [`Worker::take_neigh_events`].
    events: Vec<NeighEvent>,
    /// STALE neighbours already reported since the last [`Worker::take_neigh_events`].
    stale_seen: HashSet<(DevId, IpAddr)>,
    /// The IPv4 identification of the next datagram this worker originates.
    ip_ident: u16,
    /// The Ethernet source of the frame being processed (set by `ethernet_in`).
    eth_src: Mac,
    icmp: Vec<u8>,
    /// Echo replies and ICMPv4 errors are built here (as large as needed).
    icmp_big: Vec<u8>,
    /// Per tunnel: the IOAM `freq K/N` position.
    freq: Vec<u64>,
    /// The snapshot's count of tunnels installed in reused slots when `freq` was last brought up to date: a
    /// tunnel born after it starts its count at 0, as a new tunnel does.
    births_seen: u64,
    /// Per tunnel: the route to its new destination (first SID, first RPL segment, ioam6 tundst) as found in the
    /// snapshot of generation `nh_gen` (Linux's per-tunnel dst_cache). Valid only for the current generation:
    /// every batch (one snapshot) and every single [`Worker::process`] call starts a new one.
    nh_cache: Vec<(u64, Ipv6Addr, Option<RouteEntry>)>,
    nh_gen: u64,
    /// Tunnel applications by kind (indexed as [`Stats::encapsulated`]), added to it at the end of each batch
    /// rather than per packet.
    encap_pending: [u64; TunnelKind::COUNT],
    /// Packets the fast path sent since the last flush: each one received, sent and fast.
    fast_sent: u64,
    /// Set when a seg6local behaviour's IPv6 lookup found no route and answered with an ICMPv6 Destination
    /// Unreachable (which Linux counts as a packet processed, not an error).
    unreachable_sent: bool,
    /// The last receive time converted for IOAM timestamps, and its seconds and microseconds.
    ts_cache: (u64, u32, u32),
    /// The trace this worker records for (None: not tracing, the normal case; see [`crate::trace`]).
    tracer: Option<Box<Tracer>>,
    /// Whether the batch in progress may use the fast path for the frames the trace does not take.
    trace_fast: bool,
    /// The frames traced since the last [`Worker::take_traces`].
    traces: Vec<FrameTrace>,
    /// The budget of the last trace armed: frames it traced that wait for a next hop are traced again when they
    /// leave the queue, unless another trace replaced it meanwhile.
    trace_budget: Option<Arc<crate::trace::Budget>>,
    /// The live capture's tap (None: not capturing, the normal case; see [`capture`]).
    capture: Option<Box<CaptureTap>>,
}

/// Records, when the frame is traced, what `|t| BODY` adds to its trace (`t`: the [`FrameTrace`]). The closure is
/// built, and the `NAME = EXPR` bindings before it evaluated, only then, and it runs out of line
/// ([`trace::record`]); it captures by value, so no local of the packet path has its address taken. An untraced
/// frame pays one test of `cx.trace`.
macro_rules! note {
    ($cx:expr, $($v:ident = $e:expr,)* |$t:ident| $body:expr) => {
        if let Some(tr) = $cx.trace.as_deref_mut() {
            $(let $v = $e;)*
            $crate::trace::record(tr, move |$t: &mut $crate::trace::FrameTrace| $body)
        }
    };
}

mod batch;
mod capture;
mod fast;
mod forward;
mod hop_by_hop;
mod icmp;
mod local;
mod neighbour;
mod pending;
mod recording;
mod reject;
pub(crate) mod seg6local;

pub use batch::Batch;
pub use capture::{CaptureFilter, CaptureTap, Captured, Direction};

/// What every stage of one packet's processing needs to know: the snapshot, where and when the packet arrived,
/// and where frames go.
pub(crate) struct Cx<'s, 'o> {
    snap: &'s Snapshot,
    in_dev: DevId,
    ts: u64,
    out: &'o mut dyn FnMut(DevId, u64, &[u8]),
    /// The frame was sent to an Ethernet broadcast or multicast address: never forwarded.
    group: bool,
    /// The frame's trace, when it is traced (None, the normal case, costs one test per recording point).
    trace: Option<Box<FrameTrace>>,
}

impl Cx<'_, '_> {
    /// Sends a frame out of `dev`, stamped with the packet's receive time.
    fn send(&mut self, dev: DevId, frame: &[u8]) {
        if let Some(t) = self.trace.as_deref_mut() {
            let name = trace::dev_name(self.snap, dev);
            trace::record(t, |t| {
                t.push(Step::Sent {
                    dev: name,
                    len: frame.len(),
                    frame: frame.to_vec(),
                })
            });
        }
        (self.out)(dev, self.ts, frame)
    }

    /// Whether the frame is traced.
    #[inline(always)]
    fn traced(&self) -> bool {
        self.trace.is_some()
    }
}

/// What a frame that was not dropped became.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Forwarded, or answered (counted in `tx`).
    Sent,
    /// Taken in by the node (counted in `consumed`).
    Consumed,
}

/// Upper bound on the neighbour events kept between two [`Worker::take_neigh_events`] (more are not recorded).
const MAX_EVENTS: usize = 4096;

/// A route the fast path already found for a destination (in the same snapshot), handed to the general path.
type RouteHint<'f> = (Ipv6Addr, Option<&'f RouteEntry>);

/// Why a packet left the normal path.
pub(crate) type Verdict = Result<(), DropReason>;

impl Worker {
    /// A worker for `snap`: its rx headroom, a page-aligned receive buffer, empty counters.
    pub fn new(snap: &Snapshot) -> Worker {
        let n = snap.tunnels.len();
        Worker {
            rx_headroom: snap.rx_headroom,
            headroom_policy: None,
            fast_path: true,
            template_copy: WideCopy::detect(),
            stats: Stats::default(),
            ioam_export: ExportQueue::default(),
            resolve: false,
            icmp_limiter: None,
            solicit_gate: None,
            buf: PacketBuf::new(4096),
            reply: Vec::new(),
            outcome: Outcome::Sent,
            miss: None,
            pending: PendingQueues::default(),
            events: Vec::new(),
            stale_seen: HashSet::new(),
            ip_ident: 0,
            eth_src: [0; 6],
            icmp: vec![0; ipv6::MIN_MTU + ethernet::HEADER_LEN],
            icmp_big: Vec::new(),
            freq: vec![0; n],
            births_seen: snap.tunnel_births,
            nh_cache: vec![(0, Ipv6Addr::UNSPECIFIED, None); n],
            nh_gen: 0,
            encap_pending: [0; TunnelKind::COUNT],
            fast_sent: 0,
            unreachable_sent: false,
            ts_cache: (0, 0, 0),
            tracer: None,
            trace_fast: false,
            traces: Vec::new(),
            trace_budget: None,
            capture: None,
        }
    }

    /// Replaces the buffer received frames are loaded into (returns the old one). The worker's own is page-aligned;
    /// this exists to measure other placements (`examples/placement.rs`).
    pub fn set_rx_buffer(&mut self, buf: PacketBuf) -> PacketBuf {
        std::mem::replace(&mut self.buf, buf)
    }

    fn ethernet_in(
        &mut self,
        cx: &mut Cx<'_, '_>,
        buf: &mut PacketBuf,
        hint: Option<RouteHint<'_>>,
    ) -> Verdict {
        let (snap, in_dev) = (cx.snap, cx.in_dev);
        let eth =
            ethernet::Frame::new_checked(buf.data()).map_err(|_| DropReason::EthernetTruncated)?;
        self.eth_src = eth.src();
        let dst = eth.dst();
        if dst != snap.links[in_dev].mac && dst[0] & 1 == 0 {
            return Err(DropReason::NotForUs);
        }
        if buf.data().len() > max_frame_len(&snap.links[in_dev]) {
            return Err(DropReason::FrameTooLong);
        }
        cx.group = dst[0] & 1 != 0;
        let ethertype = eth.ethertype();
        buf.pull_front(ethernet::HEADER_LEN)
            .map_err(|_| DropReason::EthernetTruncated)?;
        match ethertype {
            ethernet::ETHERTYPE_IPV6 => self.ipv6_in(cx, buf, 0, hint),
            ethernet::ETHERTYPE_IPV4 => self.ipv4_in(cx, buf),
            arp::ETHERTYPE_ARP => self.arp_in(cx, buf),
            _ => Err(DropReason::UnsupportedEthertype),
        }
    }

    fn ipv6_in(
        &mut self,
        cx: &mut Cx<'_, '_>,
        buf: &mut PacketBuf,
        pass: usize,
        hint: Option<RouteHint<'_>>,
    ) -> Verdict {
        let snap = cx.snap;
        if pass >= MAX_PASSES {
            return Err(DropReason::TunnelLoop);
        }
        let p = ipv6::Packet::new_checked(buf.data()).map_err(|_| DropReason::Ipv6Malformed)?;
        let total = ipv6::HEADER_LEN + p.payload_len() as usize;
        let (src, dst, hlim) = (p.src_addr(), p.dst_addr(), p.hop_limit());
        buf.truncate(total);
        note!(cx, b = &*buf, |t| {
            let b = b.data();
            t.push(Step::Ipv6 {
                pass,
                src,
                dst,
                hop_limit: hlim,
                next_header: b[6],
                payload_len: (total - ipv6::HEADER_LEN) as u16,
                local: snap.local6.contains(&dst),
            })
        });
        // RFC 4291 §2.5.2, §2.5.3: the unspecified address is never a source, the loopback address never leaves a
        // node. Linux drops these on receipt, without an ICMPv6 error (other ::/8 addresses it forwards; so does
        // lwt6). Compared with the kernel in tests/kernel/test_forbidden.py.
        if dst.is_multicast() && !src.is_multicast() && !src.is_loopback() {
            // Neighbour discovery to a multicast group (solicited-node, all-nodes; from the unspecified address
            // during duplicate address detection); other multicast is not ours.
            let nh = buf.data()[6];
            let ty = buf.data().get(ipv6::HEADER_LEN).copied();
            if pass == 0
                && nh == proto::ICMPV6
                && matches!(
                    ty,
                    Some(ndp::TYPE_NEIGHBOR_SOLICIT | ndp::TYPE_NEIGHBOR_ADVERT)
                )
            {
                return self.ndp_in(cx, buf, ipv6::HEADER_LEN);
            }
        }
        if src.is_loopback() || dst.is_loopback() || src.is_unspecified() {
            return Err(DropReason::ForbiddenAddress);
        }
        if src.is_multicast() {
            return Err(DropReason::Ipv6Malformed);
        }
        if dst.is_multicast() {
            return Err(DropReason::Multicast);
        }
        let local = snap.local6.contains(&dst);
        let route = match hint {
            _ if local => None,
            // The fast path already looked this destination up in the same snapshot.
            Some((d, r)) if d == dst => r,
            _ => snap.fib().lookup_v6(dst),
        };
        note!(cx, |t| {
            if !local {
                t.push(Step::route(
                    snap,
                    "destination",
                    MAIN_TABLE,
                    dst.into(),
                    route,
                ))
            }
        });
        // Like Linux, a transit router looks at the Hop-by-Hop header only; the rest of the chain is walked
        // (and must be well formed) only for packets addressed to us.
        let domains = !snap.ioam.domains.is_empty();
        if buf.data()[6] == proto::HOPOPTS {
            let mut h = exthdr::Walker::new(buf.data())
                .next()
                .and_then(|h| h.ok())
                .ok_or(DropReason::ExtHeaderMalformed)?;
            if domains {
                h = match self.ioam_ingress(cx, buf, h)? {
                    Some(h) => h,
                    None => return self.ipv6_in(cx, buf, pass, hint),
                };
            }
            self.hop_by_hop_in(cx, buf, h, route, hlim)?;
            if domains && local && buf.data()[ipv6::HEADER_LEN] == proto::IPV6 {
                // The IOAM tunnel endpoint (encap mode): the outer header goes, the inner packet comes in again.
                if self.ioam_decap(cx, buf, h.len)? {
                    return self.ipv6_in(cx, buf, pass + 1, None);
                }
            }
            if domains
                && !local
                && let Some(dev) = route.and_then(|r| r.dev.get())
            {
                self.ioam_egress(cx, buf, h.len, dev)?;
            }
        }
        if local {
            let chain = self.local_chain(cx, buf)?;
            return self.local_in(cx, buf, chain, pass);
        }
        // A local SID: the route's behaviour takes the packet (Linux: the seg6local tunnel's input, before
        // ip6_forward and its checks).
        if let Some(tid) = route.and_then(|r| r.tunnel.get())
            && let Tunnel::Local(_) = &snap.tunnels[tid]
        {
            return self.seg6local_in(cx, buf, tid, pass);
        }
        if cx.group {
            return Err(DropReason::GroupAddressedFrame);
        }
        if is_link_local(&src) || is_link_local(&dst) {
            return Err(DropReason::ScopeViolation);
        }
        // A reject route answers before the forwarding switch is looked at (the kernel's route input sends its
        // error whatever `forwarding` says).
        if let Some(r) = route
            && let crate::fib::Origin::Reject(kind) = r.origin
        {
            return self.reject(cx, buf, kind, L3::V6);
        }
        if !snap.all.forwarding {
            return Err(DropReason::ForwardingDisabled);
        }
        let Some(route) = route else {
            self.icmp_error(cx, buf.data(), IcmpError::DestUnreachable { code: 0 });
            return Err(DropReason::NoRoute);
        };
        self.forward(cx, buf, route, L3::V6)
    }

    fn ipv4_in(&mut self, cx: &mut Cx<'_, '_>, buf: &mut PacketBuf) -> Verdict {
        let snap = cx.snap;
        let p = ipv4::Packet::new_checked(buf.data()).map_err(|_| DropReason::Ipv4Malformed)?;
        if !p.verify_checksum() {
            return Err(DropReason::Ipv4Malformed);
        }
        let (dst, total) = (p.dst_addr(), p.total_len() as usize);
        let is_icmp = p.protocol() == icmpv4::PROTO_ICMP;
        note!(cx, |t| {
            t.push(Step::Ipv4 {
                src: p.src_addr(),
                dst,
                ttl: p.ttl(),
                protocol: p.protocol(),
                total_len: total as u16,
                local: snap.local4.contains(&dst),
            })
        });
        buf.truncate(total);
        if dst.is_multicast() || dst.is_broadcast() {
            return Err(DropReason::Multicast);
        }
        if snap.local4.contains(&dst) {
            if is_icmp {
                return self.echo4_in(cx, buf);
            }
            return Err(DropReason::LocalDelivery);
        }
        if cx.group {
            return Err(DropReason::GroupAddressedFrame);
        }
        let route = snap.fib().lookup_v4(dst);
        note!(cx, |t| t.push(Step::route(
            snap,
            "destination",
            MAIN_TABLE,
            dst.into(),
            route
        )));
        let Some(route) = route else {
            self.icmp4_error(cx, buf.data(), Icmpv4Error::DestUnreachable { code: 0 });
            return Err(DropReason::NoRoute);
        };
        if let crate::fib::Origin::Reject(kind) = route.origin {
            return self.reject(cx, buf, kind, L3::V4);
        }
        self.forward(cx, buf, route, L3::V4)
    }
}

/// Which L3 protocol a packet entered with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum L3 {
    V4,
    V6,
}

/// The longest frame `link` receives: its MTU, the Ethernet header and one VLAN tag (Linux's
/// `is_skb_forwardable` rule for a veth, and what a NIC's receive buffers are sized for).
#[inline(always)]
fn max_frame_len(link: &crate::snapshot::Link) -> usize {
    link.mtu as usize + ethernet::HEADER_LEN + 4
}

fn is_link_local(a: &Ipv6Addr) -> bool {
    (a.segments()[0] & 0xffc0) == 0xfe80
}

fn if_ids(s: &DevSysctls) -> IfIds {
    IfIds {
        id: s.ioam6_id,
        wide: s.ioam6_id_wide,
    }
}
