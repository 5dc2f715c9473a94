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

use crate::buffer::PacketBuf;
use crate::copy::{WideCopy, copy_bytes};
use crate::fib::{Best, DevId, Fib, RouteEntry, TunnelId};
use crate::headroom::HeadroomPolicy;
use crate::node::icmp_limit::IcmpLimiter;
use crate::node::ioam::{FillContext, IfIds, NO_IF};
use crate::node::ioam_domain::{self, ExportEvent, ExportQueue, FlowIds, IoamRecord};
use crate::node::neigh::{self, Enqueued, NeighEvent, PendingQueues, Queued, SolicitGate};
use crate::node::rpl::RplAction;
use crate::node::srh::SrhAction;
use crate::node::{arp as node_arp, echo as node_echo, ndp as node_ndp};
use crate::node::{options as node_options, rpl as node_rpl, srh as node_srh};
use crate::plan::{FRONT, IoamField, PlanKind, Received, patch_inserting_header};
use crate::snapshot::Snapshot;
use crate::spec::{DevSysctls, IoamForeign, IoamMode, MAIN_TABLE, Seg6Mode};
use crate::stats::{DropReason, IOAM6, RPL, SEG6, Stats};
use crate::trace::{self, FrameTrace, Step, Tracer};
use crate::tunnel::seg6::Outer;
use crate::tunnel::{InputTunnel, Ioam6Tunnel, OutputTunnel, Seg6Tunnel, Tunnel};
use crate::wire::ethernet::{self, EthernetRepr, Mac};
use crate::wire::icmpv4::{self, Icmpv4Error};
use crate::wire::icmpv6::{self, IcmpError};
use crate::wire::{arp, exthdr, ipv4, ipv6, ndp, proto, rpl, srh};
use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
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
    /// Counters.
    pub stats: Stats,
    /// IOAM traces removed at a domain's boundary (and, optionally, seen in transit), for an exporter to take.
    pub ioam_export: ExportQueue,
    /// Dynamic neighbour resolution (the live router turns it on; off, the offline default, a next hop without a
    /// neighbour entry is a `no_neighbour` drop and nothing is learned): see [`crate::node::neigh`].
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
    encap_pending: [u64; 3],
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

pub(crate) mod seg6local;

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

/// A seg6local behaviour's handler (a row of [`crate::node::seg6local::BEHAVIOURS`]): the packet in `buf` starts
/// at its IPv6 header; `pass` counts the decapsulations and local passes so far.
pub(crate) type LocalHandler = fn(
    &mut Worker,
    &mut Cx<'_, '_>,
    &mut PacketBuf,
    &crate::node::seg6local::Seg6Local,
    usize,
) -> Verdict;

/// What a tunnel stage will do to a packet, decided before anything is written. `T` is the tunnel applied:
/// an [`InputTunnel`] before forwarding, an [`Ioam6Tunnel`] after it.
#[derive(Debug, Clone, Copy)]
struct Stage<T> {
    /// The tunnel, and its index (for the per-tunnel source address cache).
    tunnel: T,
    id: TunnelId,
    /// Bytes added.
    growth: usize,
    /// New destination (seg6 first SID, rpl first segment, ioam tundst) when it changes the routing.
    new_dst: Option<Ipv6Addr>,
    /// Device of the route that carries the tunnel (Linux picks the outer source address on it).
    route_dev: Option<DevId>,
}

/// What forwarding will do to a packet, decided before anything is written.
#[derive(Debug, Clone, Copy)]
struct Forwarding<'s> {
    /// The input tunnel (seg6, rpl) applied before forwarding.
    input: Option<Stage<&'s InputTunnel>>,
    /// The output tunnel (ioam6) applied after it.
    output: Option<Stage<&'s Ioam6Tunnel>>,
    /// Whether the whole Ethernet frame is encapsulated (seg6 l2encap modes).
    l2_frame: bool,
    /// The protocol the packet entered with.
    l3: L3,
    /// Hop limit of an outer IPv6 header put around an IPv4 packet (the egress device's `hop_limit`).
    out_hlim_v4: u8,
    /// Bytes the stages add in all.
    growth: usize,
    /// Egress device.
    egress: DevId,
    /// Next hop's MAC address.
    dst_mac: Mac,
}

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

impl Drop for Batch<'_, '_> {
    fn drop(&mut self) {
        self.worker.flush_counters();
    }
}

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
            encap_pending: [0; 3],
            fast_sent: 0,
            unreachable_sent: false,
            ts_cache: (0, 0, 0),
            tracer: None,
            trace_fast: false,
            traces: Vec::new(),
            trace_budget: None,
        }
    }

    /// Starts tracing the frames `tracer` admits (its filter, its shared budget), or stops with `None`. The frames
    /// traced so far stay until [`Worker::take_traces`]. The worker drops the tracer by itself once the budget is
    /// spent.
    pub fn set_tracer(&mut self, tracer: Option<Tracer>) {
        if let Some(t) = &tracer {
            self.trace_budget = Some(Arc::clone(&t.budget));
        }
        self.tracer = tracer.map(Box::new);
    }

    /// Whether a trace is armed on this worker.
    pub fn tracing(&self) -> bool {
        self.tracer.is_some()
    }

    /// The frames traced since the last call, in the order they were processed.
    pub fn take_traces(&mut self) -> Vec<FrameTrace> {
        std::mem::take(&mut self.traces)
    }

    /// Replaces the buffer received frames are loaded into (returns the old one). The worker's own is page-aligned;
    /// this exists to measure other placements (`examples/placement.rs`).
    pub fn set_rx_buffer(&mut self, buf: PacketBuf) -> PacketBuf {
        std::mem::replace(&mut self.buf, buf)
    }

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
    fn begin(&mut self, snap: &Snapshot) -> bool {
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

    /// A batch while a trace is armed: every frame goes to [`Self::process_traced`] (the fast path, when `fast`,
    /// still takes the frames the trace does not); a spent budget ends the trace. (Out of line: only when tracing.)
    #[cold]
    #[inline(never)]
    fn begin_traced(&mut self, fast: bool) -> bool {
        if self
            .tracer
            .as_ref()
            .is_some_and(|t| t.budget.remaining() == 0)
        {
            self.tracer = None;
            return fast;
        }
        self.trace_fast = fast;
        false
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
    fn flush_counters(&mut self) {
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

    /// The route to `dst`, the new destination of tunnel `tid`, through the per-tunnel cache.
    fn tunnel_route(&mut self, fib: &Fib, tid: TunnelId, dst: Ipv6Addr) -> Option<RouteEntry> {
        let generation = self.nh_gen;
        match self.nh_cache.get_mut(tid) {
            Some(c) if c.0 == generation && c.1 == dst => c.2.clone(),
            Some(c) => {
                let r = fib.lookup_v6(dst).cloned();
                *c = (generation, dst, r.clone());
                r
            }
            None => fib.lookup_v6(dst).cloned(),
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
    fn process_slow(&mut self, cx: &mut Cx<'_, '_>, frame: &[u8], hint: Option<RouteHint<'_>>) {
        if self.tracer.is_some() {
            return self.process_traced(cx, frame, hint);
        }
        self.stats.rx += 1;
        self.general(cx, frame, hint);
    }

    /// A frame of a batch while a trace is armed: traced through the general path when the tracer admits it (its
    /// filter matches and the budget has a frame left), otherwise processed as without the trace (the fast path
    /// first when the batch may use it).
    #[cold]
    #[inline(never)]
    fn process_traced(&mut self, cx: &mut Cx<'_, '_>, frame: &[u8], hint: Option<RouteHint<'_>>) {
        let admitted = self.tracer.as_ref().and_then(|t| {
            t.admit(cx.in_dev, frame)
                .map(|seq| FrameTrace::start(cx.snap, seq, t.worker, cx.in_dev, cx.ts, frame))
        });
        // The frame goes through `process_slow` again, without the tracer (so that the general path is inlined
        // there only, as without tracing).
        let tracer = self.tracer.take();
        match admitted {
            None => {
                let mut hint = hint;
                let fast = self.trace_fast
                    && match self.fast_forward(cx.snap, cx.in_dev, cx.ts, frame, cx.out) {
                        Ok(()) => true,
                        Err(h) => {
                            hint = h;
                            false
                        }
                    };
                if !fast {
                    self.process_slow(cx, frame, hint);
                }
            }
            Some(t) => {
                let before = self.stats.clone();
                cx.trace = Some(Box::new(t));
                // No route hint: the input stage looks the destination up itself, and records what it found.
                self.process_slow(cx, frame, None);
                if let Some(mut t) = cx.trace.take() {
                    t.finish(&before, &self.stats);
                    self.traces.push(*t);
                }
            }
        }
        self.tracer = tracer;
    }

    /// The general path's work on a frame already counted as received (a new one, or one leaving a pending
    /// queue).
    #[inline(always)]
    fn general(&mut self, cx: &mut Cx<'_, '_>, frame: &[u8], hint: Option<RouteHint<'_>>) {
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
                _ => self.stats.count_drop(r),
            },
        }
        self.buf = buf;
    }

    /// Queues a received frame until its next hop `key` is resolved (the first one for a neighbour sends the
    /// first solicitation); counted as pending, or dropped as `neigh_queue_full`.
    fn enqueue(&mut self, cx: &mut Cx<'_, '_>, key: (DevId, IpAddr), frame: &[u8]) {
        let q = Queued {
            in_dev: cx.in_dev,
            ts: cx.ts,
            frame: frame.to_vec(),
            trace: match (&cx.trace, &self.trace_budget) {
                (Some(t), Some(b)) => Some((t.seq, t.worker, Arc::clone(b))),
                _ => None,
            },
        };
        match self.pending.push(key, q, cx.ts) {
            Enqueued::Full => self.stats.count_drop(DropReason::NeighQueueFull),
            Enqueued::Queued => self.stats.pending += 1,
            Enqueued::First => {
                self.stats.pending += 1;
                self.solicit(cx, key, None);
            }
        }
    }

    /// Sends a solicitation (ARP request) for `key`'s address out of its device, unless another worker sharing
    /// the [`SolicitGate`] sent the multicast one of this retransmission interval (which then counts for this
    /// worker's retries too).
    fn solicit(&mut self, cx: &mut Cx<'_, '_>, key: (DevId, IpAddr), unicast: Option<Mac>) {
        if unicast.is_none()
            && let Some(g) = &self.solicit_gate
            && !g.claim(key, cx.ts)
        {
            return;
        }
        if neigh::solicitation(cx.snap, key.0, key.1, unicast, &mut self.reply) {
            cx.send(key.0, &self.reply);
            self.stats.solicit_tx += 1;
        }
    }

    /// What this worker learned about neighbours since the last call (solicitations' and advertisements' link-layer
    /// addresses, ARP senders, STALE entries used), for the control thread's
    /// [`NeighTable`](crate::node::neigh::NeighTable). Empty unless [`Worker::resolve`] is on.
    pub fn take_neigh_events(&mut self) -> Vec<NeighEvent> {
        self.stale_seen.clear();
        std::mem::take(&mut self.events)
    }

    /// How many packets wait for a next hop, and for how many next hops.
    pub fn pending_len(&self) -> (usize, usize) {
        (self.pending.total, self.pending.map.len())
    }

    /// The dynamic-resolution timers and re-processing, at time `now` (ns) on `snap` (call it after each batch, or
    /// at least every few hundred milliseconds): packets whose neighbour `snap` knows are processed again in
    /// arrival order; next hops whose solicitation timed out get another ([`neigh::MAX_MULTICAST_SOLICIT`] in all,
    /// [`neigh::RETRANS_TIMER_NS`] apart); after the last, their packets are dropped as `neigh_unresolved` with an
    /// ICMPv6 address unreachable (ICMPv4 host unreachable) to each packet's source.
    pub fn service(&mut self, snap: &Snapshot, now: u64, out: &mut dyn FnMut(DevId, u64, &[u8])) {
        if self.pending.map.is_empty() {
            return;
        }
        self.begin(snap);
        let keys: Vec<(DevId, IpAddr)> = self.pending.map.keys().copied().collect();
        for key in keys {
            let mut cx = Cx {
                snap,
                in_dev: key.0,
                ts: now,
                out,
                group: false,
                trace: None,
            };
            if snap.neighbour(key.0, key.1).is_some() {
                for q in self.pending.take(&key) {
                    self.stats.pending -= 1;
                    cx.in_dev = q.in_dev;
                    cx.ts = q.ts;
                    let before = self.resume_trace(&mut cx, &q, now);
                    self.general(&mut cx, &q.frame, None);
                    self.end_resumed_trace(&mut cx, before);
                }
                continue;
            }
            let Some(p) = self.pending.map.get_mut(&key) else {
                continue;
            };
            if now < p.next_at {
                continue;
            }
            if p.probes < neigh::MAX_MULTICAST_SOLICIT {
                p.probes += 1;
                p.next_at = now.saturating_add(neigh::RETRANS_TIMER_NS);
                self.solicit(&mut cx, key, None);
                continue;
            }
            for q in self.pending.take(&key) {
                self.stats.pending -= 1;
                cx.in_dev = q.in_dev;
                let before = self.resume_trace(&mut cx, &q, now);
                self.stats.count_drop(DropReason::NeighUnresolved);
                self.unreachable_about(&mut cx, &q.frame);
                self.end_resumed_trace(&mut cx, before);
            }
        }
        self.flush_counters();
    }

    /// When `q` was traced and its trace is still this worker's (not cleared or replaced since): a trace of the
    /// same frame number goes on in `cx`, marked resumed; returns the counters to end it against.
    fn resume_trace(&mut self, cx: &mut Cx<'_, '_>, q: &Queued, now: u64) -> Option<Stats> {
        let (seq, worker, budget) = q.trace.as_ref()?;
        if !self
            .trace_budget
            .as_ref()
            .is_some_and(|b| Arc::ptr_eq(b, budget))
        {
            return None;
        }
        let mut t = FrameTrace::start(cx.snap, *seq, *worker, q.in_dev, q.ts, &q.frame);
        t.resumed_after_ns = Some(now.saturating_sub(q.ts));
        cx.trace = Some(Box::new(t));
        Some(self.stats.clone())
    }

    /// Ends a trace [`Self::resume_trace`] began.
    fn end_resumed_trace(&mut self, cx: &mut Cx<'_, '_>, before: Option<Stats>) {
        if let (Some(before), Some(mut t)) = (before, cx.trace.take()) {
            t.finish(&before, &self.stats);
            self.traces.push(*t);
        }
    }

    /// The ICMP error for a queued frame whose next hop never answered: address unreachable (ICMPv6 code 3,
    /// RFC 4443 §3.1) or host unreachable (ICMPv4 code 1). Linux quotes the packet as it was about to leave: the
    /// quoted hop limit (TTL, with its checksum) is one less than received. (Tunnel headers added on the way are
    /// not in the quote: docs/linux-compat.md.)
    fn unreachable_about(&mut self, cx: &mut Cx<'_, '_>, frame: &[u8]) {
        let Ok(eth) = ethernet::Frame::new_checked(frame) else {
            return;
        };
        let mut ip = frame[ethernet::HEADER_LEN..].to_vec();
        match eth.ethertype() {
            ethernet::ETHERTYPE_IPV6 if ipv6::Packet::new_checked(&ip[..]).is_ok() => {
                let len =
                    ipv6::HEADER_LEN + ipv6::Packet::new_unchecked(&ip[..]).payload_len() as usize;
                ip[7] = ip[7].saturating_sub(1);
                self.icmp_error(cx, &ip[..len], IcmpError::DestUnreachable { code: 3 });
            }
            ethernet::ETHERTYPE_IPV4 => {
                if let Ok(mut p) = ipv4::Packet::new_checked(&mut ip[..]) {
                    let len = p.total_len() as usize;
                    p.decrement_ttl();
                    self.icmp4_error(cx, &ip[..len], Icmpv4Error::DestUnreachable { code: 1 });
                }
            }
            _ => {}
        }
    }

    /// The link-layer address of next hop `nh` on `dev`: a static or learned entry (a STALE one is reported once
    /// to the control thread when resolving). Unknown: `no_neighbour`, with the next hop noted for the pending
    /// queue when resolving.
    #[inline(always)]
    fn neighbour_mac(
        &mut self,
        snap: &Snapshot,
        dev: DevId,
        nh: IpAddr,
    ) -> Result<Mac, DropReason> {
        match snap.neighbour(dev, nh) {
            Some((mac, false)) => Ok(mac),
            other => self.neighbour_unsure(dev, nh, other),
        }
    }

    /// [`Self::neighbour_mac`] for a STALE or unknown neighbour (out of line: the rare case).
    #[inline(never)]
    fn neighbour_unsure(
        &mut self,
        dev: DevId,
        nh: IpAddr,
        found: Option<(Mac, bool)>,
    ) -> Result<Mac, DropReason> {
        match found {
            Some((mac, _)) => {
                if self.resolve
                    && self.events.len() < MAX_EVENTS
                    && self.stale_seen.insert((dev, nh))
                {
                    self.events.push(NeighEvent::UsedStale { dev, addr: nh });
                }
                Ok(mac)
            }
            None => {
                if self.resolve {
                    self.miss = Some((dev, nh));
                }
                Err(DropReason::NoNeighbour)
            }
        }
    }

    /// Whether the rate limits (if any) let an ICMP error go to `to` at `now`; counts the refusals.
    fn icmp_allowed(&mut self, to: IpAddr, now: u64) -> bool {
        let allowed = self.icmp_limiter.as_mut().is_none_or(|l| l.allow(to, now));
        if !allowed {
            self.stats.icmp_limited += 1;
        }
        allowed
    }

    /// Where neighbour events go: the worker's list when resolving and not full.
    fn event_sink(&mut self) -> Option<&mut Vec<NeighEvent>> {
        (self.resolve && self.events.len() < MAX_EVENTS).then_some(&mut self.events)
    }

    /// Whether a packet with a Hop-by-Hop header (`ip`, trimmed to its payload length) may take the plan: plain
    /// forwarding, no transit export, and IOAM options laid out as inserted (`IoamNode::transit_plannable`).
    /// Out of line: packets without a Hop-by-Hop header never call it, and the fast path stays as small as before.
    #[cold]
    #[inline(never)]
    fn transit_planned(
        &self,
        snap: &Snapshot,
        plan: &crate::plan::Plan,
        ip: &[u8],
        in_dev: DevId,
    ) -> bool {
        plan.kind == PlanKind::Forward
            && !(self.ioam_export.transit && self.ioam_export.enabled())
            && snap.ioam.transit_plannable(ip, in_dev, plan.egress)
    }

    /// The fast path: a received frame whose route has a [`Plan`](crate::plan::Plan) and that needs nothing else — no Hop-by-Hop
    /// header but IOAM traces a plain forwarding plan fills in transit, hop limit above 1, unicast non-link-local
    /// addresses, not for us, within the MTU, room in front.
    /// Returns `Err`, having changed nothing, when the packet must take the general path, which would produce
    /// the same bytes (it checks the same things, in more steps); the route found goes with it.
    #[inline(always)]
    fn fast_forward<'s>(
        &mut self,
        snap: &'s Snapshot,
        in_dev: DevId,
        ts: u64,
        frame: &[u8],
        out: &mut dyn FnMut(DevId, u64, &[u8]),
    ) -> Result<(), Option<RouteHint<'s>>> {
        const E: usize = ethernet::HEADER_LEN;
        const H: usize = ipv6::HEADER_LEN;
        if frame.len() < E + H {
            return Err(None);
        }
        let ip = &frame[E..];
        if frame[12..14] != [0x86, 0xdd]
            || frame[..6] != snap.links[in_dev].mac
            || ip[0] >> 4 != 6
            || frame.len() > max_frame_len(&snap.links[in_dev])
        {
            return Err(None);
        }
        let len = H + u16::from_be_bytes([ip[4], ip[5]]) as usize;
        let hlim = ip[7];
        if len > ip.len() || hlim <= 1 {
            return Err(None);
        }
        // Multicast (ff00::/8) or link-local (fe80::/10) source or destination: both start with 0xfe or 0xff,
        // which one test of the first bytes rules out for almost every packet.
        // Also the addresses of ::/8 (loopback, unspecified, IPv4-mapped and compatible): their first byte is 0,
        // which the same test catches as 255 after subtracting one. The general path decides about them.
        if ip[8].wrapping_sub(1) >= 0xfd || ip[24].wrapping_sub(1) >= 0xfd {
            let special = |hi: u16| hi >= 0xff00 || hi & 0xffc0 == 0xfe80 || hi < 0x0100;
            if special(u16::from_be_bytes([ip[8], ip[9]]))
                || special(u16::from_be_bytes([ip[24], ip[25]]))
            {
                return Err(None);
            }
        }
        let dst_octets: [u8; 16] = ip[24..40].try_into().expect("16 bytes");
        let dst = Ipv6Addr::from(dst_octets);
        let fib = snap.fib();
        let best = fib.best_v6(dst);
        // The route found goes to the general path when the packet cannot be planned.
        let hint = |b: Option<&Best>| Some((dst, b.and_then(|b| fib.route(b.route))));
        let Some(plan) = best.and_then(|b| snap.plan(b.plan_or_max())) else {
            return Err(hint(best));
        };
        // A Hop-by-Hop header: only plain forwarding with IOAM transit is planned (`IoamNode::transit_plannable`).
        if ip[6] == proto::HOPOPTS && !self.transit_planned(snap, plan, &ip[..len], in_dev) {
            return Err(hint(best));
        }
        if plan.kind.is_local() {
            return self.fast_local(snap, in_dev, ts, frame, out, plan, hint(best));
        }
        // A sampled ioam6 route (freq K/N, K < N): the packet's place in the count decides whether it takes the
        // plan or leaves untraced along the route (the count advances only once the packet is sure to go here).
        let (mut kind, mut max_len, mut egress, mut growth) =
            (plan.kind, plan.max_len, plan.egress, plan.growth);
        let mut template = snap.template(plan);
        if let Some(s) = &plan.sampled
            && self
                .freq
                .get(s.tunnel as usize)
                .is_some_and(|c| c % u64::from(s.n) >= u64::from(s.k))
        {
            (kind, max_len, egress, growth) =
                (PlanKind::Forward, s.max_len as usize, s.egress as usize, 0);
            template = &s.eth[..];
        }
        let rpl = match kind {
            PlanKind::Rpl => match plan.tunnel.map(|t| &snap.tunnels[t]) {
                Some(Tunnel::Input(InputTunnel::Rpl(p))) => Some(p),
                _ => return Err(hint(best)),
            },
            _ => None,
        };
        if let Some(p) = rpl {
            growth = p.header_len(dst);
        }
        let new_len = len + growth;
        if new_len > max_len
            || self.rx_headroom < growth
            || (plan.contains_local && snap.local6.contains(&dst))
        {
            return Err(hint(best));
        }
        if let Some(s) = &plan.sampled
            && let Some(c) = self.freq.get_mut(s.tunnel as usize)
        {
            *c = c.wrapping_add(1);
        }
        let t = template.len();
        // The outgoing frame starts where the rx headroom minus what the plan adds would put it (checked above not
        // to underflow), rounded down to a cache line: the template's copy then stores whole aligned lines whatever
        // the tunnel's size (measured: up to 15 % faster, and no 64-byte period in the rate against size;
        // docs/BENCHMARKS.md). lwt6 can choose, as it copies every received frame into its own buffer after the
        // lookup; a zero-copy receive could not.
        let start = (self.rx_headroom - growth) & !63;
        let (front, body) = if kind.inserts() {
            // The received IPv6 header is rewritten into the template's slot: only its payload follows.
            (E + H + growth, &ip[H..len])
        } else {
            (t, &ip[..len])
        };
        // The outgoing frame is assembled in place: the received bytes behind the template's.
        let data = self.buf.place(start, front + body.len());
        copy_bytes(&mut data[front..], body);
        // The wide copy costs the same for every further 32 bytes; memcpy steps at its size classes (crate::copy).
        // Templates of at most 64 bytes (gateway routes' Ethernet header, RPL's Ethernet + IPv6 slot; never one
        // that grows with a tunnel's size) go inline, without a call.
        match self.template_copy {
            Some(_) if t <= 64 => copy_bytes(&mut data[..t], template),
            Some(w) => w.copy(&mut data[..t], template),
            None => data[..t].copy_from_slice(template),
        }
        let rx = Received {
            ip,
            dst: &dst_octets,
            payload_len: ((new_len - H) as u16).to_be_bytes(),
            hop_limit: hlim - 1,
        };
        // Every plan's frame starts with an Ethernet and an IPv6 header (the template's, or the template's
        // Ethernet header and the received IPv6 header): one length check, then fixed offsets.
        let Some((hdr, after)) = data.split_first_chunk_mut::<FRONT>() else {
            unreachable!("a planned frame holds an Ethernet and an IPv6 header")
        };
        // The plan's kind names the tunnel whose patch completes the frame; IOAM plans return where the option
        // this node fills starts.
        let mut ioam_at = None;
        match kind {
            PlanKind::Forward => hdr[E + 7] = rx.hop_limit,
            PlanKind::Seg6Encap => {
                Seg6Tunnel::patch_encap(hdr, &rx, snap.seg6_first_word);
                self.encap_pending[SEG6] += 1;
            }
            PlanKind::Seg6Inline => {
                Seg6Tunnel::patch_inline(hdr, after, &rx);
                self.encap_pending[SEG6] += 1;
            }
            PlanKind::RplFixed => {
                // The whole routing header is in the template: its next header and the destination's tail.
                patch_inserting_header(hdr, &rx, proto::ROUTING);
                let (at, ce) = (usize::from(plan.rpl_tail.0), usize::from(plan.rpl_tail.1));
                after[0] = rx.ip[6];
                after[at..at + 16 - ce].copy_from_slice(&dst_octets[ce..]);
                self.encap_pending[RPL] += 1;
            }
            PlanKind::Rpl => {
                // `rpl` is the plan's tunnel (checked above: the packet took the general path otherwise).
                if let Some(p) = rpl {
                    p.patch(hdr, &mut after[..growth], &rx);
                }
                self.encap_pending[RPL] += 1;
            }
            PlanKind::IoamInline => ioam_at = Some(Ioam6Tunnel::patch_inline(hdr, after, &rx)),
            PlanKind::IoamEncap => ioam_at = Some(Ioam6Tunnel::patch_encap(hdr, after, &rx, t)),
            PlanKind::End | PlanKind::EndX | PlanKind::EndDx6 => {
                unreachable!("seg6local plans are handled by fast_local")
            }
        }
        let hl = rx.hop_limit;
        // A transit packet (a plain forwarding plan, checked above): its traces filled after the copy.
        if kind == PlanKind::Forward && ip[6] == proto::HOPOPTS {
            match transit_fill_planned(snap, &mut data[E..], in_dev, egress, hl, ts) {
                Some(n) => self.stats.ioam_transit_filled += n,
                None => return Err(hint(best)),
            }
        }
        if ioam_at.is_some() && plan.ioam.baked {
            // This node's data is in the template: only what depends on the packet is written.
            let ing = &snap.links[in_dev].sysctl;
            let (sec, frac) = if plan.ioam.has_ts {
                ts_parts(&mut self.ts_cache, ts)
            } else {
                (0, 0)
            };
            let n = usize::from(plan.ioam.n);
            for (&at, &what) in plan.ioam.at[..n].iter().zip(&plan.ioam.what[..n]) {
                let at = usize::from(at);
                match what {
                    IoamField::HopLimit => data[at] = hl,
                    IoamField::IngressId => {
                        data[at..at + 2].copy_from_slice(&ing.ioam6_id.to_be_bytes())
                    }
                    IoamField::IngressWide => {
                        data[at..at + 4].copy_from_slice(&ing.ioam6_id_wide.to_be_bytes())
                    }
                    IoamField::TsSec => data[at..at + 4].copy_from_slice(&sec.to_be_bytes()),
                    IoamField::TsFrac => data[at..at + 4].copy_from_slice(&frac.to_be_bytes()),
                }
            }
            self.encap_pending[IOAM6] += 1;
        } else if let Some(hbh_at) = ioam_at {
            let Some(Tunnel::Output(OutputTunnel::Ioam6(it))) =
                plan.tunnel.map(|t| &snap.tunnels[t])
            else {
                unreachable!("an IOAM plan belongs to an ioam6 tunnel")
            };
            let ctx = FillContext {
                hop_limit: hl,
                ingress: if_ids(&snap.links[in_dev].sysctl),
                egress: plan
                    .route_dev
                    .map_or(NO_IF, |d| if_ids(&snap.links[d].sysctl)),
                ts_ns: ts,
            };
            for off in &it.opt_offsets {
                // Everything about the option is read from the template, not from the packet's fresh copy of it.
                let at = hbh_at + off;
                let opt_len = 2 + template[at + 1] as usize;
                if let Err(reason) = snap.ioam.fill_option_from(
                    &template[at..at + opt_len],
                    &mut data[at..at + opt_len],
                    &ctx,
                ) {
                    // As on the general path: dropped, and not counted as an ioam6 insertion.
                    self.stats.rx += 1;
                    self.stats.count_drop(reason);
                    return Ok(());
                }
            }
            self.encap_pending[IOAM6] += 1;
        }
        out(egress, ts, data);
        // Received, sent and fast: added to the three counters once per batch (`flush_counters`).
        self.fast_sent += 1;
        Ok(())
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
                && let Some(dev) = route.and_then(|r| r.dev)
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
        if let Some(tid) = route.and_then(|r| r.tunnel)
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
        if !snap.all.forwarding {
            return Err(DropReason::ForwardingDisabled);
        }
        let Some(route) = route else {
            self.icmp_error(cx, buf.data(), IcmpError::DestUnreachable { code: 0 });
            return Err(DropReason::NoRoute);
        };
        self.forward(cx, buf, route, L3::V6)
    }

    /// IOAM transit on a received Hop-by-Hop header.
    fn hop_by_hop_in(
        &mut self,
        cx: &mut Cx<'_, '_>,
        buf: &mut PacketBuf,
        h: exthdr::ExtHeader,
        route: Option<&RouteEntry>,
        hlim: u8,
    ) -> Verdict {
        let (snap, in_dev, ts) = (cx.snap, cx.in_dev, cx.ts);
        let ingress = &snap.links[in_dev];
        let egress = route
            .and_then(|r| r.dev)
            .map_or(NO_IF, |d| if_ids(&snap.links[d].sysctl));
        let ctx = FillContext {
            hop_limit: hlim.wrapping_sub(1),
            ingress: if_ids(&ingress.sysctl),
            egress,
            ts_ns: ts,
        };
        let enabled = ingress.sysctl.ioam6_enabled;
        self.check_options(cx, buf, h)?;
        let before = cx
            .traced()
            .then(|| buf.data()[h.offset..h.offset + h.len].to_vec());
        let hbh = &mut buf.data_mut()[h.offset..h.offset + h.len];
        let filled = snap.ioam.transit(hbh, h.offset, enabled, &ctx)?;
        note!(cx, b = &*buf, |t| {
            let after = &b.data()[h.offset..h.offset + h.len];
            t.push(Step::HopByHop {
                len: h.len,
                ioam_enabled: enabled,
                ioam: trace::ioam_fills(before.as_deref(), after),
            })
        });
        self.stats.ioam_transit_filled += filled as u64;
        if enabled && self.ioam_export.enabled() {
            self.direct_export(cx, buf, h, route.and_then(|r| r.dev), &ctx);
        }
        if filled > 0 && self.ioam_export.transit && self.ioam_export.enabled() {
            let out_dev = route.and_then(|r| r.dev);
            let hbh = &buf.data()[h.offset..h.offset + h.len];
            let known = |o: &[u8]| {
                ioam_domain::option_namespace(o)
                    .is_some_and(|ns| snap.ioam.namespaces.contains_key(&ns))
            };
            let n: Vec<&[u8]> = ioam_domain::options_where(hbh, known).collect();
            let flow = FlowIds::of(buf.data());
            for o in n {
                self.export(cx, ExportEvent::Transit, out_dev, flow, o);
            }
        }
        Ok(())
    }

    /// Direct Export (RFC 9326 §3): for every DEX option of the Hop-by-Hop header `h` in a namespace this node
    /// knows, this node's data for the option's trace type goes to the exporter; the packet is not changed.
    fn direct_export(
        &mut self,
        cx: &Cx<'_, '_>,
        buf: &PacketBuf,
        h: exthdr::ExtHeader,
        out_dev: Option<DevId>,
        ctx: &FillContext,
    ) {
        let hbh = &buf.data()[h.offset..h.offset + h.len];
        let is_dex = |o: &[u8]| o.len() >= 12 && o[3] == crate::wire::ioam::OPT_TYPE_DEX;
        let mut flow = None;
        for o in ioam_domain::options_where(hbh, is_dex) {
            let f = *flow.get_or_insert_with(|| FlowIds::of(buf.data()));
            self.export_dex(cx, o, f, out_dev, ctx);
        }
    }

    /// Exports this node's data for the Direct Export option `o` (from its type byte), if its namespace is known
    /// here: the fields of the option's trace type, written as into a trace.
    fn export_dex(
        &mut self,
        cx: &Cx<'_, '_>,
        o: &[u8],
        flow: Option<FlowIds>,
        out_dev: Option<DevId>,
        ctx: &FillContext,
    ) {
        let Some(o) = o
            .get(1)
            .and_then(|&l| o.get(..2 + usize::from(l)))
            .filter(|o| o.len() >= 12)
        else {
            return;
        };
        let ns = u16::from_be_bytes([o[4], o[5]]);
        let Some(node) = cx.snap.ioam.node_data(ns, ctx) else {
            return;
        };
        let ty = u32::from_be_bytes([0, o[8], o[9], o[10]]);
        let words = crate::wire::ioam::block_words(ty, node.schema.map(|(_, d)| d.len()));
        let mut block = vec![0; 4 * words];
        crate::wire::ioam::write_node(&mut block, ty, &node);
        let r = IoamRecord {
            ts_ns: cx.ts,
            event: ExportEvent::DirectExport,
            in_dev: cx.in_dev,
            out_dev,
            flow,
            option: o.to_vec(),
            node: block,
        };
        if self.ioam_export.push(r) {
            self.stats.ioam.exported += 1;
        } else {
            self.stats.ioam.export_lost += 1;
        }
    }

    /// Queues one trace for export (counted as exported, or lost when the queue is full).
    fn export(
        &mut self,
        cx: &Cx<'_, '_>,
        event: ExportEvent,
        out_dev: Option<DevId>,
        flow: Option<FlowIds>,
        option: &[u8],
    ) {
        if !self.ioam_export.enabled() {
            return;
        }
        let r = IoamRecord {
            ts_ns: cx.ts,
            event,
            in_dev: cx.in_dev,
            out_dev,
            flow,
            option: option.to_vec(),
            node: Vec::new(),
        };
        if self.ioam_export.push(r) {
            self.stats.ioam.exported += 1;
        } else {
            self.stats.ioam.export_lost += 1;
        }
    }

    /// IOAM domain ingress roles: IOAM of a domain arriving on an interface that is not one of the domain's
    /// ingresses is dropped (`foreign drop`) or removed (`foreign strip`); so is a trace larger than its domain's
    /// `maxsize` (`oversize drop|strip`). Returns the Hop-by-Hop header as it now is, or None when it went
    /// entirely (the packet is then processed again from its IPv6 header).
    fn ioam_ingress(
        &mut self,
        cx: &mut Cx<'_, '_>,
        buf: &mut PacketBuf,
        h: exthdr::ExtHeader,
    ) -> Result<Option<exthdr::ExtHeader>, DropReason> {
        let (domains, in_dev) = (&cx.snap.ioam.domains, cx.in_dev);
        let refused = |o: &[u8]| {
            domains
                .of_option(o)
                .is_some_and(|d| !d.ingress[in_dev] || d.too_big(o))
        };
        let hbh = &buf.data()[h.offset..h.offset + h.len];
        let (mut foreign, mut oversize) = (0, 0);
        for o in ioam_domain::options_where(hbh, refused) {
            let Some(d) = domains.of_option(o) else {
                continue;
            };
            let (action, reason, n) = if !d.ingress[in_dev] {
                (d.foreign, DropReason::IoamForeign, &mut foreign)
            } else {
                (d.oversize, DropReason::IoamOversize, &mut oversize)
            };
            if action == IoamForeign::Drop {
                return Err(reason);
            }
            *n += 1;
        }
        if foreign + oversize == 0 {
            return Ok(Some(h));
        }
        let len = buf.len();
        ioam_domain::strip_options(buf, h.len, refused)?;
        self.stats.ioam.foreign_stripped += foreign;
        self.stats.ioam.oversize_stripped += oversize;
        note!(cx, b = &*buf, |t| {
            t.push(Step::IoamDomain {
                action: if oversize == 0 {
                    "foreign_stripped"
                } else if foreign == 0 {
                    "oversize_stripped"
                } else {
                    "stripped"
                },
                options: (foreign + oversize) as usize,
                removed: len - b.len(),
            })
        });
        if buf.data()[6] != proto::HOPOPTS {
            return Ok(None);
        }
        exthdr::Walker::new(buf.data())
            .next()
            .and_then(|h| h.ok())
            .map(Some)
            .ok_or(DropReason::ExtHeaderMalformed)
    }

    /// The IOAM tunnel endpoint: a packet addressed to us whose Hop-by-Hop header (of `hbh_len` bytes) carries
    /// IOAM of a domain and is followed by an IPv6 packet loses its outer header and Hop-by-Hop header; every
    /// trace of a domain is exported. Returns whether it was decapsulated.
    fn ioam_decap(
        &mut self,
        cx: &mut Cx<'_, '_>,
        buf: &mut PacketBuf,
        hbh_len: usize,
    ) -> Result<bool, DropReason> {
        let domains = &cx.snap.ioam.domains;
        let at = ipv6::HEADER_LEN;
        let in_domain = |o: &[u8]| domains.of_option(o).is_some();
        let hbh = &buf.data()[at..at + hbh_len];
        if ioam_domain::options_where(hbh, in_domain).next().is_none() {
            return Ok(false);
        }
        let traced = if cx.traced() {
            ioam_domain::options_where(hbh, in_domain).count()
        } else {
            0
        };
        if self.ioam_export.enabled() {
            let flow = FlowIds::of(&buf.data()[at + hbh_len..]);
            let opts: Vec<Vec<u8>> = ioam_domain::options_where(hbh, in_domain)
                .map(|o| o.to_vec())
                .collect();
            for o in &opts {
                self.export(cx, ExportEvent::Decap, None, flow, o);
            }
        }
        buf.pull_front(at + hbh_len)
            .map_err(|_| DropReason::ExtHeaderMalformed)?;
        self.stats.ioam.decapsulated += 1;
        note!(cx, |t| {
            t.push(Step::IoamDomain {
                action: "decapsulated",
                options: traced,
                removed: at + hbh_len,
            })
        });
        Ok(true)
    }

    /// IOAM domain egress roles: IOAM of a domain about to leave by `dev`, which is not an egress of the domain,
    /// is removed (the whole Hop-by-Hop header when nothing else is in it) and exported.
    fn ioam_egress(
        &mut self,
        cx: &mut Cx<'_, '_>,
        buf: &mut PacketBuf,
        hbh_len: usize,
        dev: DevId,
    ) -> Verdict {
        let domains = &cx.snap.ioam.domains;
        let leaving = |o: &[u8]| domains.of_option(o).is_some_and(|d| !d.egress[dev]);
        let at = ipv6::HEADER_LEN;
        let hbh = &buf.data()[at..at + hbh_len];
        let opts: Vec<Vec<u8>> = ioam_domain::options_where(hbh, leaving)
            .map(|o| o.to_vec())
            .collect();
        if opts.is_empty() {
            return Ok(());
        }
        let len = buf.len();
        ioam_domain::strip_options(buf, hbh_len, leaving)?;
        self.stats.ioam.removed += opts.len() as u64;
        note!(cx, b = &*buf, n_opts = opts.len(), |t| {
            t.push(Step::IoamDomain {
                action: "removed",
                options: n_opts,
                removed: len - b.len(),
            })
        });
        let flow = FlowIds::of(buf.data());
        for o in &opts {
            self.export(cx, ExportEvent::Egress, Some(dev), flow, o);
        }
        Ok(())
    }

    /// The option checks of an options header `h` ([`node_options::check`]), with the ICMPv6 Parameter Problem
    /// (code 2, pointing at the option) an unrecognised option's action asks for.
    fn check_options(
        &mut self,
        cx: &mut Cx<'_, '_>,
        buf: &PacketBuf,
        h: exthdr::ExtHeader,
    ) -> Verdict {
        let Err(p) = node_options::check(&buf.data()[h.offset..h.offset + h.len]) else {
            return Ok(());
        };
        if let Some(at) = p.param_problem
            && !cx.group
        {
            let pointer = (h.offset + at) as u32;
            let err = IcmpError::ParamProblem { code: 2, pointer };
            self.icmp_error(cx, buf.data(), err);
        }
        Err(p.reason)
    }

    /// The extension headers of a packet addressed to us, as Linux reads them: up to the first routing header
    /// (what follows it is for the next segment), Destination Options in front of it checked
    /// ([`Self::check_options`]), a Hop-by-Hop header anywhere but first answered with Parameter Problem code 1
    /// pointing at the Next Header field that names it (RFC 8200 §4.1).
    fn local_chain(
        &mut self,
        cx: &mut Cx<'_, '_>,
        buf: &PacketBuf,
    ) -> Result<exthdr::Chain, DropReason> {
        let mut chain = exthdr::Chain::default();
        let mut next_header_at = 6;
        let mut walk = exthdr::Walker::new(buf.data());
        for h in walk.by_ref() {
            let Ok(h) = h else {
                if next_header_at != 6 && buf.data()[next_header_at] == proto::HOPOPTS {
                    let pointer = next_header_at as u32;
                    let err = IcmpError::ParamProblem { code: 1, pointer };
                    self.icmp_error(cx, buf.data(), err);
                }
                return Err(DropReason::ExtHeaderMalformed);
            };
            next_header_at = h.offset;
            match h.kind {
                proto::HOPOPTS => chain.hop_by_hop = Some(h),
                proto::DSTOPTS => self.check_options(cx, buf, h)?,
                proto::FRAGMENT => chain.fragment = true,
                proto::ROUTING => {
                    chain.routing = Some(h);
                    chain.routing_type = Some(buf.data()[h.offset + 2]);
                    return Ok(chain);
                }
                _ => {}
            }
        }
        (chain.upper_proto, chain.upper_offset) = walk.upper_layer();
        Ok(chain)
    }

    /// A packet addressed to one of our addresses: routing headers are processed, the rest cannot be delivered.
    fn local_in(
        &mut self,
        cx: &mut Cx<'_, '_>,
        buf: &mut PacketBuf,
        chain: exthdr::Chain,
        pass: usize,
    ) -> Verdict {
        let (snap, in_dev) = (cx.snap, cx.in_dev);
        let Some(rh) = chain.routing else {
            return self.local_deliver6(cx, buf, chain, pass);
        };
        if cx.group {
            return Err(DropReason::GroupAddressedFrame);
        }
        let dev = snap.links[in_dev].sysctl;
        match chain.routing_type {
            Some(rpl::ROUTING_TYPE) => {
                if !(snap.all.rpl_seg_enabled && dev.rpl_seg_enabled) {
                    return Err(DropReason::RplDisabled);
                }
                let local6 = &snap.local6;
                let action = node_rpl::process(buf, rh.offset, &|a| local6.contains(a))?;
                note!(cx, b = &*buf, |t| {
                    let what = match action {
                        RplAction::Deliver => "deliver",
                        RplAction::Decap { .. } => "decap",
                        RplAction::ParamProblem { .. } => "param_problem",
                        RplAction::Forward => "forward",
                    };
                    t.push(routing_step("rpl", what, b.data(), rh.offset, rh.len))
                });
                match action {
                    RplAction::Deliver => Err(DropReason::LocalDelivery),
                    RplAction::Decap { inner_offset } => {
                        buf.pull_front(inner_offset)
                            .map_err(|_| DropReason::RplMalformed)?;
                        self.ipv6_in(cx, buf, pass + 1, None)
                    }
                    RplAction::ParamProblem { pointer, reason } => {
                        self.icmp_error(
                            cx,
                            buf.data(),
                            IcmpError::ParamProblem { code: 0, pointer },
                        );
                        Err(reason)
                    }
                    RplAction::Forward => self.after_local_rh(cx, buf, pass),
                }
            }
            Some(srh::ROUTING_TYPE) => {
                if !(snap.all.seg6_enabled && dev.seg6_enabled) {
                    return Err(DropReason::Seg6Disabled);
                }
                node_srh::check_hmac(buf.data(), rh.offset, dev.seg6_require_hmac, &snap.hmac)?;
                let action = node_srh::process(buf, rh.offset)?;
                note!(cx, b = &*buf, |t| {
                    let what = match action {
                        SrhAction::Deliver => "deliver",
                        SrhAction::Decap { .. } => "decap",
                        SrhAction::ParamProblem { .. } => "param_problem",
                        SrhAction::Forward => "forward",
                    };
                    t.push(routing_step("srh", what, b.data(), rh.offset, rh.len))
                });
                match action {
                    SrhAction::Deliver => Err(DropReason::LocalDelivery),
                    SrhAction::Decap {
                        inner_offset,
                        proto: p,
                    } => {
                        buf.pull_front(inner_offset)
                            .map_err(|_| DropReason::SrhMalformed)?;
                        if p == proto::IPV6 {
                            self.ipv6_in(cx, buf, pass + 1, None)
                        } else {
                            self.ipv4_in(cx, buf)
                        }
                    }
                    SrhAction::ParamProblem { pointer } => {
                        self.icmp_error(
                            cx,
                            buf.data(),
                            IcmpError::ParamProblem { code: 0, pointer },
                        );
                        Err(DropReason::SrhMalformed)
                    }
                    SrhAction::Forward => self.after_local_rh(cx, buf, pass),
                }
            }
            // RFC 8200 §4.4: an unrecognised Routing Type with Segments Left 0 is ignored (what follows is for
            // us: no host stack); otherwise Parameter Problem code 0 pointing at the Routing Type, as Linux does.
            _ if buf.data()[rh.offset + 3] == 0 => Err(DropReason::LocalDelivery),
            _ => {
                let pointer = (rh.offset + 2) as u32;
                let err = IcmpError::ParamProblem { code: 0, pointer };
                self.icmp_error(cx, buf.data(), err);
                Err(DropReason::UnknownRoutingType)
            }
        }
    }

    /// After a routing header advanced the destination: local again → hop limit check, decrement and process
    /// again; otherwise forward.
    fn after_local_rh(&mut self, cx: &mut Cx<'_, '_>, buf: &mut PacketBuf, pass: usize) -> Verdict {
        let snap = cx.snap;
        let p = ipv6::Packet::new_unchecked(buf.data());
        let dst = p.dst_addr();
        if snap.local6.contains(&dst) {
            if p.hop_limit() <= 1 {
                self.icmp_error(cx, buf.data(), IcmpError::TimeExceeded { code: 0 });
                return Err(DropReason::HopLimitExceeded);
            }
            buf.data_mut()[7] -= 1;
            let chain = self.local_chain(cx, buf)?;
            return self.local_in(cx, buf, chain, pass + 1);
        }
        // Linux routes the new destination as a received packet: multicast is delivered to the (absent)
        // listeners, a link-local one goes back out the link it came from; neither is forwarded.
        if dst.is_multicast() {
            return Err(DropReason::Multicast);
        }
        if is_link_local(&dst) {
            return Err(DropReason::ScopeViolation);
        }
        let route = snap.fib().lookup_v6(dst);
        note!(cx, |t| t.push(Step::route(
            snap,
            "next segment",
            MAIN_TABLE,
            dst.into(),
            route
        )));
        let Some(route) = route else {
            self.icmp_error(cx, buf.data(), IcmpError::DestUnreachable { code: 0 });
            return Err(DropReason::NoRoute);
        };
        if let Some(tid) = route.tunnel
            && let Tunnel::Local(_) = &snap.tunnels[tid]
        {
            return self.seg6local_in(cx, buf, tid, pass + 1);
        }
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
        self.forward(cx, buf, route, L3::V4)
    }

    /// An ARP packet: answered when it asks for one of our addresses, learned from when resolving.
    #[inline(never)]
    fn arp_in(&mut self, cx: &mut Cx<'_, '_>, buf: &mut PacketBuf) -> Verdict {
        let mut reply = std::mem::take(&mut self.reply);
        let events = self.event_sink();
        let r = node_arp::receive(cx.snap, cx.in_dev, buf.data(), &mut reply, events);
        self.answer(cx, reply, r)
    }

    /// Carries out what an NDP or ARP message led to: its reply (in `reply`, the worker's reply buffer, given
    /// back) out of the ingress interface, or the packet counted as consumed.
    fn answer(
        &mut self,
        cx: &mut Cx<'_, '_>,
        reply: Vec<u8>,
        r: Result<crate::node::Answer, DropReason>,
    ) -> Verdict {
        let r = match r {
            Ok(crate::node::Answer::Reply { len }) => {
                cx.send(cx.in_dev, &reply[..len]);
                Ok(())
            }
            Ok(crate::node::Answer::Consumed) => {
                self.outcome = Outcome::Consumed;
                Ok(())
            }
            Err(e) => Err(e),
        };
        self.reply = reply;
        r
    }

    /// A Neighbor Solicitation or Advertisement (its ICMPv6 message at `icmp_at`).
    #[inline(never)]
    fn ndp_in(&mut self, cx: &mut Cx<'_, '_>, buf: &mut PacketBuf, icmp_at: usize) -> Verdict {
        let mut reply = std::mem::take(&mut self.reply);
        let eth_src = self.eth_src;
        let events = self.event_sink();
        let r = node_ndp::receive(
            cx.snap,
            cx.in_dev,
            eth_src,
            buf.data(),
            icmp_at,
            &mut reply,
            events,
        );
        self.answer(cx, reply, r)
    }

    /// A packet for one of our IPv6 addresses without a routing header: neighbour discovery and echo requests are
    /// answered; there is no host stack for the rest.
    #[inline(never)]
    fn local_deliver6(
        &mut self,
        cx: &mut Cx<'_, '_>,
        buf: &mut PacketBuf,
        chain: exthdr::Chain,
        pass: usize,
    ) -> Verdict {
        if chain.upper_proto != proto::ICMPV6 || pass > 0 {
            return Err(DropReason::LocalDelivery);
        }
        let at = chain.upper_offset;
        match buf.data().get(at).copied() {
            Some(ndp::TYPE_NEIGHBOR_SOLICIT | ndp::TYPE_NEIGHBOR_ADVERT) => {
                self.ndp_in(cx, buf, at)
            }
            Some(icmpv6::TYPE_ECHO_REQUEST) => self.echo6_in(cx, buf, at),
            _ => Err(DropReason::LocalDelivery),
        }
    }

    /// An ICMPv6 echo request to us: the reply goes back along the route to its source.
    #[inline(never)]
    fn echo6_in(&mut self, cx: &mut Cx<'_, '_>, buf: &mut PacketBuf, at: usize) -> Verdict {
        let snap = cx.snap;
        debug_assert!(node_echo::is_request6(buf.data(), at));
        let to = ipv6::Packet::new_unchecked(buf.data()).src_addr();
        let route = snap.fib().lookup_v6(to).ok_or(DropReason::NoRoute)?;
        let dev = route.dev.ok_or(DropReason::NoRoute)?;
        let nh = match route.via {
            Some(IpAddr::V6(gw)) => gw,
            _ => to,
        };
        let mac = self.neighbour_mac(snap, dev, IpAddr::V6(nh))?;
        let mut reply = std::mem::take(&mut self.reply);
        reply.resize(ethernet::HEADER_LEN, 0);
        let mut ip = std::mem::take(&mut self.icmp_big);
        let r = node_echo::reply6(buf.data(), at, snap.links[dev].sysctl.hop_limit, &mut ip);
        if let Ok(len) = r {
            EthernetRepr {
                dst: mac,
                src: snap.links[dev].mac,
                ethertype: ethernet::ETHERTYPE_IPV6,
            }
            .emit(&mut reply);
            reply.extend_from_slice(&ip[..len]);
            cx.send(dev, &reply);
        }
        self.reply = reply;
        self.icmp_big = ip;
        r.map(|_| ())
    }

    /// An ICMP message to one of our IPv4 addresses: echo requests are answered along the route to the source.
    #[inline(never)]
    fn echo4_in(&mut self, cx: &mut Cx<'_, '_>, buf: &mut PacketBuf) -> Verdict {
        let to = ipv4::Packet::new_unchecked(buf.data()).src_addr();
        let mut ip = std::mem::take(&mut self.icmp_big);
        let ident = self.ip_ident;
        let r = node_echo::reply4(buf.data(), ident, &mut ip);
        let len = match r {
            Ok(Some(len)) => len,
            Ok(None) => {
                self.icmp_big = ip;
                return Err(DropReason::LocalDelivery);
            }
            Err(e) => {
                self.icmp_big = ip;
                return Err(e);
            }
        };
        let r = self.send_originated4(cx, to, &ip[..len]);
        self.icmp_big = ip;
        if r.is_ok() {
            self.ip_ident = self.ip_ident.wrapping_add(1);
        }
        r
    }

    /// Sends an IPv4 datagram this node originates along the route to `to`.
    fn send_originated4(&mut self, cx: &mut Cx<'_, '_>, to: Ipv4Addr, dgram: &[u8]) -> Verdict {
        let snap = cx.snap;
        let route = snap.fib().lookup_v4(to).ok_or(DropReason::NoRoute)?;
        let dev = route.dev.ok_or(DropReason::NoRoute)?;
        let nh = match route.via {
            Some(IpAddr::V4(gw)) => gw,
            _ => to,
        };
        let mac = self.neighbour_mac(snap, dev, IpAddr::V4(nh))?;
        let mut reply = std::mem::take(&mut self.reply);
        reply.resize(ethernet::HEADER_LEN, 0);
        EthernetRepr {
            dst: mac,
            src: snap.links[dev].mac,
            ethertype: ethernet::ETHERTYPE_IPV4,
        }
        .emit(&mut reply);
        reply.extend_from_slice(dgram);
        cx.send(dev, &reply);
        self.reply = reply;
        Ok(())
    }

    /// Sends an ICMPv4 error about `invoking` (an IPv4 datagram as received) to its source, unless RFC 1812
    /// §4.3.2.7 forbids it: about an ICMP error, a non-initial fragment, or a source that is not a unicast
    /// host address (unspecified, loopback, multicast, broadcast, class E). Source address: the egress interface's
    /// address on the sender's subnet, else its first (Linux selects it from the route back, its default
    /// `icmp_errors_use_inbound_ifaddr = 0`); type of service: the invoking one's with precedence internetwork
    /// control; TTL 64; DF clear. Not rate limited (as the ICMPv6 errors; docs/linux-compat.md).
    #[inline(never)]
    fn icmp4_error(&mut self, cx: &mut Cx<'_, '_>, invoking: &[u8], err: Icmpv4Error) {
        let snap = cx.snap;
        let p = ipv4::Packet::new_unchecked(invoking);
        let to = p.src_addr();
        note!(cx, |t| {
            t.push(Step::Icmp {
                error: format!("ICMPv4 {err:?}"),
                to: to.into(),
                sent: false,
            })
        });
        let o = to.octets();
        if to.is_unspecified()
            || to.is_loopback()
            || to.is_multicast()
            || to.is_broadcast()
            || o[0] >= 240
            || snap.local4.contains(&to)
            || p.flags_frag() & 0x1fff != 0
        {
            return;
        }
        if p.protocol() == icmpv4::PROTO_ICMP
            && p.payload()
                .first()
                .is_some_and(|t| icmpv4::is_error_type(*t))
        {
            return;
        }
        let Some(route) = snap.fib().lookup_v4(to) else {
            return;
        };
        let Some(dev) = route.dev else { return };
        if !self.icmp_allowed(IpAddr::V4(to), cx.ts) {
            return;
        }
        let in_subnet = |(a, len): &(Ipv4Addr, u8)| {
            let mask = u32::MAX.checked_shl(32 - u32::from(*len)).unwrap_or(0);
            u32::from(*a) & mask == u32::from(to) & mask
        };
        let addrs = &snap.links[dev].addrs4;
        let Some(&(src, _)) = addrs.iter().find(|a| in_subnet(a)).or(addrs.first()) else {
            return;
        };
        let ip = icmpv4::IpFields {
            tos: icmpv4::TOS_INTERNETWORK_CONTROL | (p.tos() & 0x1e),
            ident: self.ip_ident,
            ttl: node_echo::IPV4_TTL,
        };
        let mut buf = std::mem::take(&mut self.icmp_big);
        buf.resize(icmpv4::error_len(invoking.len()), 0);
        let len = icmpv4::emit_error(&mut buf, src, to, ip, err, invoking);
        let miss = self.miss;
        if self.send_originated4(cx, to, &buf[..len]).is_ok() {
            self.ip_ident = self.ip_ident.wrapping_add(1);
            self.stats.icmp_tx += 1;
        }
        // A next hop the error could not reach is not the packet's own.
        self.miss = miss;
        self.icmp_big = buf;
    }

    /// Forwards the packet in `buf` (which starts at its L3 header) along `route`, applying the route's tunnel
    /// and, after a destination change, the next route's output tunnel: planned first, then written.
    fn forward(
        &mut self,
        cx: &mut Cx<'_, '_>,
        buf: &mut PacketBuf,
        route: &RouteEntry,
        l3: L3,
    ) -> Verdict {
        let plan = self.plan_forwarding(cx, buf, route, l3)?;
        self.write_forwarding(cx, buf, &plan)
    }

    /// Decides everything about forwarding the packet before a byte is written: the tunnel stages and the bytes
    /// they add, the hop limit, the egress device and MTU (an ICMPv6 error when it does not fit), the next hop.
    fn plan_forwarding<'s>(
        &mut self,
        cx: &mut Cx<'s, '_>,
        buf: &PacketBuf,
        route: &RouteEntry,
        l3: L3,
    ) -> Result<Forwarding<'s>, DropReason> {
        let snap = cx.snap;
        let mut input: Option<Stage<&InputTunnel>> = None;
        let mut output: Option<Stage<&Ioam6Tunnel>> = None;
        let next0: RouteEntry;
        let next1: RouteEntry;
        let mut route = route;
        let mut l2_frame = false;
        if let Some((tid, Tunnel::Input(tunnel))) = route.tunnel.map(|t| (t, &snap.tunnels[t])) {
            let (growth, new_dst) = match tunnel {
                InputTunnel::Seg6(s) => {
                    if l3 == L3::V4 && s.mode == Seg6Mode::Inline {
                        return Err(DropReason::TunnelProtoMismatch);
                    }
                    l2_frame = s.is_l2();
                    (
                        s.overhead() + if l2_frame { ethernet::HEADER_LEN } else { 0 },
                        s.first_sid,
                    )
                }
                InputTunnel::Rpl(r) => {
                    if l3 == L3::V4 {
                        return Err(DropReason::TunnelProtoMismatch);
                    }
                    let orig = ipv6::Packet::new_unchecked(buf.data()).dst_addr();
                    (r.header_len(orig), r.segs[0])
                }
            };
            input = Some(Stage {
                tunnel,
                id: tid,
                growth,
                new_dst: Some(new_dst),
                route_dev: route.dev,
            });
            next0 = match self.tunnel_route(snap.fib(), tid, new_dst) {
                Some(r) => r,
                None => {
                    note!(cx, |t| plan_steps(t, snap, input, None));
                    return Err(DropReason::NoRoute);
                }
            };
            match next0.tunnel.map(|t| (t, &snap.tunnels[t])) {
                Some((t, Tunnel::Input(_))) if t != tid => return Err(DropReason::TunnelLoop),
                _ => {}
            }
            route = &next0;
        } else if l3 == L3::V4 && route.tunnel.is_some() {
            return Err(DropReason::TunnelProtoMismatch);
        }
        // The hop limit check happens on the packet as received: Linux copies the inner hop limit to the outer
        // header and checks it after encapsulation, sending the Time Exceeded to itself; lwt6 tells the sender.
        let out_hlim_v4 = route.dev.map_or(64, |d| snap.links[d].sysctl.hop_limit);
        match l3 {
            L3::V6 => {
                if buf.data()[7] <= 1 {
                    note!(cx, |t| plan_steps(t, snap, input, None));
                    self.icmp_error(cx, buf.data(), IcmpError::TimeExceeded { code: 0 });
                    return Err(DropReason::HopLimitExceeded);
                }
            }
            L3::V4 => {
                let ttl_or_outer = if input.is_some() {
                    out_hlim_v4
                } else {
                    buf.data()[8]
                };
                if ttl_or_outer <= 1 {
                    note!(cx, |t| plan_steps(t, snap, input, None));
                    if input.is_none() {
                        self.icmp4_error(cx, buf.data(), Icmpv4Error::TimeExceeded { code: 0 });
                    }
                    return Err(DropReason::HopLimitExceeded);
                }
            }
        }
        if let Some((tid, Tunnel::Output(OutputTunnel::Ioam6(t)))) =
            route.tunnel.map(|t| (t, &snap.tunnels[t]))
        {
            let carries_v6 = l3 == L3::V6 || input.is_some();
            if carries_v6 && t.should_insert(&mut self.freq[tid]) {
                match t.effective_mode() {
                    IoamMode::Inline => {
                        // Behind an input tunnel the packet is not written yet: the most it can take.
                        let growth = if input.is_some() {
                            Some(t.hbh_len)
                        } else {
                            t.inline_growth(buf.data())
                        };
                        match growth {
                            Some(growth) => {
                                output = Some(Stage {
                                    tunnel: t,
                                    id: tid,
                                    growth,
                                    new_dst: None,
                                    route_dev: route.dev,
                                })
                            }
                            None => self.stats.ioam.not_inserted += 1,
                        }
                    }
                    _ => {
                        let growth = ipv6::HEADER_LEN + t.hbh_len;
                        output = Some(Stage {
                            tunnel: t,
                            id: tid,
                            growth,
                            new_dst: t.tundst,
                            route_dev: route.dev,
                        });
                        let tundst = t.tundst.ok_or(DropReason::NoRoute)?;
                        next1 = match self.tunnel_route(snap.fib(), tid, tundst) {
                            Some(r) => r,
                            None => {
                                note!(cx, |n| plan_steps(n, snap, input, output));
                                return Err(DropReason::NoRoute);
                            }
                        };
                        if next1.tunnel.is_some_and(|n| n != tid) {
                            return Err(DropReason::TunnelLoop);
                        }
                        route = &next1;
                    }
                }
            }
        }
        let growth = input.map_or(0, |s| s.growth) + output.map_or(0, |s| s.growth);
        let egress = route.dev.ok_or(DropReason::NoRoute)?;
        let link_mtu = snap.links[egress].mtu;
        let mtu = route.mtu.map_or(link_mtu, |m| m.value.min(link_mtu)) as usize;
        // The IPv6 packet as it will leave: `buf` holds the received packet from its L3 header on, and `growth`
        // every byte the stages put in front of it, the Ethernet header an l2 mode keeps included (Linux checks
        // the outer packet, which carries it: tests/kernel/test_mtu.py).
        let final_len = buf.len() + growth;
        if final_len > mtu {
            note!(cx, |t| {
                plan_steps(t, snap, input, output);
                t.push(Step::Mtu {
                    len: final_len,
                    mtu,
                    fits: false,
                })
            });
            if l3 == L3::V6 {
                let reported = mtu.saturating_sub(growth).max(ipv6::MIN_MTU) as u32;
                // Linux checks an unlocked route MTU of a forwarded packet only on output, after the hop limit
                // was decremented (ip6_fragment): a plain forward over the device's MTU but not the route's
                // quotes the packet with hop limit − 1.
                let late = input.is_none()
                    && output.is_none()
                    && final_len <= link_mtu as usize
                    && route.mtu.is_some_and(|m| !m.locked);
                if late {
                    let mut quoted = buf.data().to_vec();
                    quoted[7] = quoted[7].saturating_sub(1);
                    self.icmp_error(cx, &quoted, IcmpError::PacketTooBig { mtu: reported });
                } else {
                    self.icmp_error(cx, buf.data(), IcmpError::PacketTooBig { mtu: reported });
                }
            } else if input.is_none()
                && output.is_none()
                && ipv4::Packet::new_unchecked(buf.data()).flags_frag() & 0x4000 != 0
            {
                // DF set: fragmentation needed, with the next-hop MTU (RFC 1191 §4). Without DF Linux would
                // fragment; lwt6 does not fragment and drops (docs/linux-compat.md).
                let mtu = mtu.min(u16::MAX as usize) as u16;
                self.icmp4_error(cx, buf.data(), Icmpv4Error::FragNeeded { mtu });
            }
            return Err(DropReason::MtuExceeded);
        }
        // Next hop: the gateway, or the final destination on a connected route.
        let final_dst = output
            .and_then(|s| s.new_dst)
            .or(input.and_then(|s| s.new_dst));
        let nh = match (route.via, final_dst, l3) {
            (Some(IpAddr::V6(gw)), _, _) => IpAddr::V6(gw),
            (Some(IpAddr::V4(gw)), None, L3::V4) => IpAddr::V4(gw),
            (None, Some(d), _) => IpAddr::V6(d),
            (None, None, L3::V6) => IpAddr::V6(ipv6::Packet::new_unchecked(buf.data()).dst_addr()),
            (None, None, L3::V4) => IpAddr::V4(
                ipv4::Packet::new_checked(buf.data())
                    .map_err(|_| DropReason::Ipv4Malformed)?
                    .dst_addr(),
            ),
            (Some(IpAddr::V4(_)), _, _) => return Err(DropReason::NoNeighbour),
        };
        let dst_mac = self.neighbour_mac(snap, egress, nh);
        note!(cx, b = buf, |t| {
            plan_steps(t, snap, input, output);
            let received = match l3 {
                L3::V6 => b.data()[7],
                L3::V4 if input.is_some() => out_hlim_v4,
                L3::V4 => b.data()[8],
            };
            t.push(Step::HopLimit { received });
            t.push(Step::Mtu {
                len: final_len,
                mtu,
                fits: true,
            });
            t.push(Step::neighbour(snap, egress, nh));
        });
        let dst_mac = dst_mac?;
        Ok(Forwarding {
            input,
            output,
            l2_frame,
            l3,
            out_hlim_v4,
            growth,
            egress,
            dst_mac,
        })
    }

    /// Carries out a [`Forwarding`]: one headroom reservation (or the headroom policy's steps), the tunnel stages,
    /// the hop limit decrement, the Ethernet header, and the frame out.
    fn write_forwarding(
        &mut self,
        cx: &mut Cx<'_, '_>,
        buf: &mut PacketBuf,
        f: &Forwarding<'_>,
    ) -> Verdict {
        let snap = cx.snap;
        let Forwarding {
            input,
            output,
            l2_frame,
            l3,
            out_hlim_v4,
            growth,
            egress,
            dst_mac,
        } = *f;
        if l2_frame {
            // The received Ethernet header is still in the headroom, untouched: take it back as payload.
            buf.push_front(ethernet::HEADER_LEN)
                .map_err(|_| DropReason::BufferPlanning)?;
        }
        // One reservation for the whole plan, unless a headroom policy handles each stage.
        let policy = self.headroom_policy.as_deref();
        if policy.is_none() {
            let reserve =
                growth - if l2_frame { ethernet::HEADER_LEN } else { 0 } + ethernet::HEADER_LEN;
            buf.ensure_headroom(reserve)
                .map_err(|_| DropReason::BufferPlanning)?;
        }
        if let Some(s) = input {
            if let Some(p) = &policy {
                p.before_stage(buf, s.growth, l2_frame);
            }
            self.apply_input_tunnel(snap, s, buf, l3, out_hlim_v4)?;
            if let Some(p) = &policy {
                p.after_stage(buf);
            }
        }
        // ip6_forward: decrement the (outer) hop limit; plain IPv4 forwarding: TTL.
        if l3 == L3::V6 || input.is_some() {
            buf.data_mut()[7] -= 1;
        } else {
            let mut p =
                ipv4::Packet::new_checked(buf.data_mut()).map_err(|_| DropReason::Ipv4Malformed)?;
            p.decrement_ttl();
        }
        if let Some(s) = output {
            if let Some(p) = &policy {
                p.before_stage(buf, s.growth, false);
            }
            let merging = buf.data()[6] == proto::HOPOPTS;
            let at = self.apply_ioam(cx, s, buf)?;
            match at {
                Some(_) if merging => self.stats.ioam.merged += 1,
                Some(_) => {}
                None => self.stats.ioam.not_inserted += 1,
            }
            if at.is_some() {
                note!(cx, b = &*buf, |t| {
                    t.push(Step::IoamInsert {
                        mode: match s.tunnel.effective_mode() {
                            IoamMode::Inline => "inline",
                            _ => "encap",
                        },
                        ioam: trace::ioam_inserted(b.data(), ipv6::HEADER_LEN),
                    })
                });
            }
            if let Some(p) = &policy {
                p.after_stage(buf);
            }
            // A Direct Export option just inserted: the encapsulating node exports its own data too (RFC 9326 §3).
            if let (Some(hbh_at), Some(dex_at)) = (at, s.tunnel.dex_at)
                && self.ioam_export.enabled()
            {
                let ctx = Self::inserting_node(cx, &s, buf);
                let o = &buf.data()[hbh_at + dex_at..];
                let flow = FlowIds::of(buf.data());
                self.export_dex(cx, o, flow, s.route_dev, &ctx);
            }
        }
        let ethertype = if l3 == L3::V4 && input.is_none() {
            ethernet::ETHERTYPE_IPV4
        } else {
            ethernet::ETHERTYPE_IPV6
        };
        let hdr = buf
            .push_front(ethernet::HEADER_LEN)
            .map_err(|_| DropReason::BufferPlanning)?;
        EthernetRepr {
            dst: dst_mac,
            src: snap.links[egress].mac,
            ethertype,
        }
        .emit(hdr);
        match input.map(|s| s.tunnel) {
            Some(InputTunnel::Seg6(_)) => self.encap_pending[SEG6] += 1,
            Some(InputTunnel::Rpl(_)) => self.encap_pending[RPL] += 1,
            None => {}
        }
        if output.is_some() {
            self.encap_pending[IOAM6] += 1;
        }
        cx.send(egress, buf.data());
        Ok(())
    }

    /// seg6 / rpl on the input path. `buf` starts at the L3 header (at the Ethernet header for L2 modes).
    fn apply_input_tunnel(
        &self,
        snap: &Snapshot,
        stage: Stage<&InputTunnel>,
        buf: &mut PacketBuf,
        l3: L3,
        v4_hlim: u8,
    ) -> Verdict {
        match stage.tunnel {
            InputTunnel::Rpl(r) => r.insert(buf).map(|_| ()),
            InputTunnel::Seg6(s) => {
                let hmac = s
                    .hmac_key
                    .map(|k| snap.hmac.get(&k).ok_or(DropReason::HmacKeyMissing))
                    .transpose()?;
                if s.mode == Seg6Mode::Inline {
                    return s.insert_inline(buf, hmac);
                }
                let l3_at = if s.is_l2() { ethernet::HEADER_LEN } else { 0 };
                let pkt = &buf.data()[l3_at..];
                let (tc, inner_fl, hlim) = match l3 {
                    L3::V6 => {
                        let p = ipv6::Packet::new_unchecked(pkt);
                        (p.traffic_class(), p.flow_label(), p.hop_limit())
                    }
                    L3::V4 => (0, 0, v4_hlim),
                };
                let flow_label = match snap.seg6_flowlabel {
                    x if x < 0 => 0,
                    0 => inner_fl,
                    _ => flow_key_hash(pkt, l3),
                };
                let inner_proto = if s.is_l2() {
                    proto::ETHERNET
                } else if l3 == L3::V6 {
                    proto::IPV6
                } else {
                    proto::IPV4
                };
                let src = s
                    .tunsrc
                    .or(snap.tunsrc)
                    .or_else(|| snap.tunnel_source(stage.id, stage.route_dev, &s.first_sid))
                    .ok_or(DropReason::NoSourceAddress)?;
                let outer = Outer {
                    src,
                    traffic_class: tc,
                    flow_label,
                    hop_limit: hlim,
                    inner_proto,
                };
                s.push_encap(buf, &outer, hmac)
            }
        }
    }

    /// ioam6 on the output path (after the hop limit decrement), then this node fills its own data.
    /// Returns the offset from the IPv6 header at which the options are found at [`Ioam6Tunnel::opt_offsets`], or
    /// None when nothing was inserted (inline mode may find a Hop-by-Hop header it does not merge into).
    fn apply_ioam(
        &self,
        cx: &Cx<'_, '_>,
        stage: Stage<&Ioam6Tunnel>,
        buf: &mut PacketBuf,
    ) -> Result<Option<usize>, DropReason> {
        let (snap, t) = (cx.snap, stage.tunnel);
        let opt_at = match t.effective_mode() {
            IoamMode::Inline => t.insert_inline(buf)?,
            _ => {
                let dst = t.tundst.ok_or(DropReason::NoRoute)?;
                let src = t
                    .tunsrc
                    .or_else(|| snap.tunnel_source(stage.id, stage.route_dev, &dst))
                    .ok_or(DropReason::NoSourceAddress)?;
                Some(t.push_encap(buf, src)?)
            }
        };
        if let Some(hbh_at) = opt_at {
            let ctx = Self::inserting_node(cx, &stage, buf);
            let pkt = buf.data_mut();
            for off in &t.opt_offsets {
                let at = hbh_at + off;
                let opt_len = 2 + pkt[at + 1] as usize;
                snap.ioam.fill_option(&mut pkt[at..at + opt_len], &ctx)?;
            }
            if let Some(at) = t.dex_seq_at {
                // The frequency count has counted this packet already (`plan_forwarding`).
                let seq = t.dex_sequence(self.freq[stage.id]);
                pkt[hbh_at + at..hbh_at + at + 4].copy_from_slice(&seq.to_be_bytes());
            }
        }
        Ok(opt_at)
    }

    /// What the node inserting IOAM into `buf` (after the hop limit decrement) records about itself.
    fn inserting_node(
        cx: &Cx<'_, '_>,
        stage: &Stage<&Ioam6Tunnel>,
        buf: &PacketBuf,
    ) -> FillContext {
        let snap = cx.snap;
        // The inserting node records the hop limit as is (Linux: is_input = false) and the ingress interface of
        // the packet; lwt6 reports its ingress as unavailable only when there is none.
        FillContext {
            hop_limit: buf.data()[7],
            ingress: if_ids(&snap.links[cx.in_dev].sysctl),
            egress: stage
                .route_dev
                .map_or(NO_IF, |d| if_ids(&snap.links[d].sysctl)),
            ts_ns: cx.ts,
        }
    }

    /// Sends an ICMPv6 error about `invoking` (an IPv6 packet) back to its source, if that is possible and allowed
    /// (RFC 4443 §2.4 (e): never about an ICMPv6 error, a multicast or unspecified source, or our own packets).
    fn icmp_error(&mut self, cx: &mut Cx<'_, '_>, invoking: &[u8], err: IcmpError) {
        let snap = cx.snap;
        let p = ipv6::Packet::new_unchecked(invoking);
        let to = p.src_addr();
        note!(cx, |t| {
            t.push(Step::Icmp {
                error: format!("ICMPv6 {err:?}"),
                to: to.into(),
                sent: false,
            })
        });
        if to.is_unspecified() || to.is_multicast() || snap.local6.contains(&to) {
            return;
        }
        if let Ok(c) = exthdr::chain(invoking)
            && c.upper_proto == proto::ICMPV6
            && invoking.get(c.upper_offset).is_some_and(|t| *t < 128)
        {
            return;
        }
        let Some(route) = snap.fib().lookup_v6(to) else {
            return;
        };
        let Some(dev) = route.dev else { return };
        // RFC 4443 §2.2 (a), as Linux does: an error about a packet sent to one of our unicast addresses comes
        // from that address (after a routing header, the destination it holds now: tests/hostile,
        // `*-next-local-hlim-1`). Otherwise Linux selects the source as if the error left by the interface the
        // invoking packet came in on (it usually does): tests/kernel/test_forbidden.py has a case where the two
        // differ.
        let dst = p.dst_addr();
        let src = if snap.local6.contains(&dst) {
            dst
        } else {
            let Some(src) = snap.source_for(Some(cx.in_dev), &to) else {
                return;
            };
            src
        };
        let nh = match route.via {
            Some(IpAddr::V6(gw)) => gw,
            _ => to,
        };
        if !self.icmp_allowed(IpAddr::V6(to), cx.ts) {
            return;
        }
        let miss = self.miss;
        let mac = self.neighbour_mac(snap, dev, IpAddr::V6(nh));
        // A next hop the error could not reach is not the packet's own.
        self.miss = miss;
        let Ok(mac) = mac else {
            return;
        };
        let hl = snap.links[dev].sysctl.hop_limit;
        let len = icmpv6::emit(
            &mut self.icmp[ethernet::HEADER_LEN..],
            src,
            to,
            hl,
            err,
            invoking,
        );
        EthernetRepr {
            dst: mac,
            src: snap.links[dev].mac,
            ethertype: ethernet::ETHERTYPE_IPV6,
        }
        .emit(&mut self.icmp[..ethernet::HEADER_LEN]);
        cx.send(dev, &self.icmp[..ethernet::HEADER_LEN + len]);
        self.stats.icmp_tx += 1;
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

/// A receive time as the IOAM timestamp fields hold it (seconds, microseconds: docs/references.md §2.4),
/// converted once for the packets of a batch that share it (`cache`: the last time converted and its parts).
#[inline(always)]
fn ts_parts(cache: &mut (u64, u32, u32), ts: u64) -> (u32, u32) {
    if cache.0 != ts {
        *cache = (
            ts,
            (ts / 1_000_000_000) as u32,
            ((ts % 1_000_000_000) / 1000) as u32,
        );
    }
    (cache.1, cache.2)
}

/// The tunnels of a forwarding plan, for the trace, each with the lookup of the destination it sends the packet
/// to (looked up again here, in the same snapshot: the packet path keeps its own lookups as they are).
fn plan_steps(
    t: &mut FrameTrace,
    snap: &Snapshot,
    input: Option<Stage<&InputTunnel>>,
    output: Option<Stage<&Ioam6Tunnel>>,
) {
    let lookup = |t: &mut FrameTrace, dst: Option<Ipv6Addr>| {
        if let Some(d) = dst {
            let r = snap.fib().lookup_v6(d);
            t.push(Step::route(
                snap,
                "tunnel destination",
                MAIN_TABLE,
                d.into(),
                r,
            ));
        }
    };
    if let Some(s) = input {
        t.push(Step::input_tunnel(s.tunnel, s.growth, s.new_dst));
        lookup(t, s.new_dst);
    }
    if let Some(s) = output {
        t.push(Step::output_tunnel(s.tunnel, s.growth, s.new_dst));
        lookup(t, s.new_dst);
    }
}

/// A routing header processed here, as the trace shows it: Segments Left, the destination and the header's length
/// after processing (`len`: before).
fn routing_step(
    kind: &'static str,
    action: &'static str,
    pkt: &[u8],
    rh: usize,
    len: usize,
) -> Step {
    Step::RoutingHeader {
        kind,
        action,
        segments_left: pkt.get(rh + 3).copied().unwrap_or(0),
        dst: ipv6::Packet::new_unchecked(pkt).dst_addr(),
        len_before: len,
        len_after: pkt.get(rh + 1).map_or(0, |l| (usize::from(*l) + 1) * 8),
    }
}

/// The planned transit fill of the IOAM traces in the packet `ip` (from its IPv6 header on), written after the copy:
/// the number of traces filled, or `None` to send the packet to the general path. Out of line, as
/// `Worker::transit_planned`.
#[cold]
#[inline(never)]
fn transit_fill_planned(
    snap: &Snapshot,
    ip: &mut [u8],
    in_dev: DevId,
    egress: DevId,
    hop_limit: u8,
    ts: u64,
) -> Option<u64> {
    let ing = &snap.links[in_dev].sysctl;
    let ctx = FillContext {
        hop_limit,
        ingress: if_ids(ing),
        egress: if_ids(&snap.links[egress].sysctl),
        ts_ns: ts,
    };
    snap.ioam
        .transit_fill(ip, ing.ioam6_enabled, &ctx)
        .map(u64::from)
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

/// The flow key hash for `seg6_flowlabel = 1` (see [`crate::tunnel::seg6::flow_hash`]).
fn flow_key_hash(pkt: &[u8], l3: L3) -> u32 {
    use crate::tunnel::seg6::flow_hash;
    match l3 {
        L3::V6 if pkt.len() >= ipv6::HEADER_LEN => {
            let p = ipv6::Packet::new_unchecked(pkt);
            let fl = p.flow_label();
            if fl != 0 {
                flow_hash(&[&pkt[8..40], &fl.to_be_bytes()])
            } else {
                let (up, off) = exthdr::chain(pkt)
                    .map(|c| (c.upper_proto, c.upper_offset))
                    .unwrap_or((p.next_header(), 40));
                let ports = pkt.get(off..off + 4).unwrap_or(&[]);
                flow_hash(&[&pkt[8..40], &[up], ports])
            }
        }
        L3::V4 if pkt.len() >= ipv4::MIN_HEADER_LEN => {
            let ihl = ((pkt[0] & 0xf) as usize) * 4;
            let ports = pkt.get(ihl..ihl + 4).unwrap_or(&[]);
            flow_hash(&[&pkt[12..20], &[pkt[9]], ports])
        }
        _ => flow_hash(&[&pkt[..pkt.len().min(64)]]),
    }
}
