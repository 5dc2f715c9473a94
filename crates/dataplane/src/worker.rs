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
use crate::node::ioam::{FillContext, IfIds, NO_IF};
use crate::node::ioam_domain::{self, ExportEvent, ExportQueue, FlowIds, IoamRecord};
use crate::node::rpl::RplAction;
use crate::node::srh::SrhAction;
use crate::node::{rpl as node_rpl, srh as node_srh};
use crate::plan::{FRONT, IoamField, PlanKind, Received, patch_inserting_header};
use crate::snapshot::Snapshot;
use crate::spec::{DevSysctls, IoamForeign, IoamMode, Seg6Mode};
use crate::stats::{DropReason, IOAM6, RPL, SEG6, Stats};
use crate::tunnel::seg6::Outer;
use crate::tunnel::{InputTunnel, Ioam6Tunnel, OutputTunnel, Seg6Tunnel, Tunnel};
use crate::wire::ethernet::{self, EthernetRepr, Mac};
use crate::wire::icmpv6::{self, IcmpError};
use crate::wire::{exthdr, ipv4, ipv6, proto, rpl, srh};
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
    /// Counters.
    pub stats: Stats,
    /// IOAM traces removed at a domain's boundary (and, optionally, seen in transit), for an exporter to take.
    pub ioam_export: ExportQueue,
    buf: PacketBuf,
    icmp: Vec<u8>,
    /// Per tunnel: the IOAM `freq K/N` position.
    freq: Vec<u64>,
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
    /// The last receive time converted for IOAM timestamps, and its seconds and microseconds.
    ts_cache: (u64, u32, u32),
}

/// What every stage of one packet's processing needs to know: the snapshot, where and when the packet arrived,
/// and where frames go.
struct Cx<'s, 'o> {
    snap: &'s Snapshot,
    in_dev: DevId,
    ts: u64,
    out: &'o mut dyn FnMut(DevId, u64, &[u8]),
}

impl Cx<'_, '_> {
    /// Sends a frame out of `dev`, stamped with the packet's receive time.
    fn send(&mut self, dev: DevId, frame: &[u8]) {
        (self.out)(dev, self.ts, frame)
    }
}

/// A route the fast path already found for a destination (in the same snapshot), handed to the general path.
type RouteHint<'f> = (Ipv6Addr, Option<&'f RouteEntry>);

/// Why a packet left the normal path.
type Verdict = Result<(), DropReason>;

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
            buf: PacketBuf::new(4096),
            icmp: vec![0; ipv6::MIN_MTU + ethernet::HEADER_LEN],
            freq: vec![0; n],
            nh_cache: vec![(0, Ipv6Addr::UNSPECIFIED, None); n],
            nh_gen: 0,
            encap_pending: [0; 3],
            fast_sent: 0,
            ts_cache: (0, 0, 0),
        }
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
        self.fast_path && self.headroom_policy.is_none() && snap.all.forwarding
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
        };
        self.process_slow(&mut cx, frame, hint);
    }

    /// The general path for one frame. (Kept out of line, so that the fast path around it stays small enough for
    /// its helpers to be inlined.)
    #[inline(never)]
    fn process_slow(&mut self, cx: &mut Cx<'_, '_>, frame: &[u8], hint: Option<RouteHint<'_>>) {
        self.stats.rx += 1;
        let mut buf = std::mem::replace(&mut self.buf, PacketBuf::new(0));
        buf.load(frame, self.rx_headroom);
        let before = buf.reallocs();
        let verdict = self.ethernet_in(cx, &mut buf, hint);
        self.stats.reallocs += buf.reallocs() - before;
        match verdict {
            Ok(()) => self.stats.tx += 1,
            Err(r) => self.stats.count_drop(r),
        }
        self.buf = buf;
    }

    /// The fast path: a received frame whose route has a [`Plan`](crate::plan::Plan) and that needs nothing else — no Hop-by-Hop
    /// header, hop limit above 1, unicast non-link-local addresses, not for us, within the MTU, room in front.
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
        if frame[12..14] != [0x86, 0xdd] || frame[..6] != snap.links[in_dev].mac || ip[0] >> 4 != 6
        {
            return Err(None);
        }
        let len = H + u16::from_be_bytes([ip[4], ip[5]]) as usize;
        let hlim = ip[7];
        if len > ip.len() || ip[6] == proto::HOPOPTS || hlim <= 1 {
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
        }
        let hl = rx.hop_limit;
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
        let dst = eth.dst();
        if dst != snap.links[in_dev].mac && dst[0] & 1 == 0 {
            return Err(DropReason::NotForUs);
        }
        let ethertype = eth.ethertype();
        buf.pull_front(ethernet::HEADER_LEN)
            .map_err(|_| DropReason::EthernetTruncated)?;
        match ethertype {
            ethernet::ETHERTYPE_IPV6 => self.ipv6_in(cx, buf, 0, hint),
            ethernet::ETHERTYPE_IPV4 => self.ipv4_in(cx, buf),
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
        // RFC 4291 §2.5.2, §2.5.3: the unspecified address is never a source, the loopback address never leaves a
        // node. Linux drops these on receipt, without an ICMPv6 error (other ::/8 addresses it forwards; so does
        // lwt6). Compared with the kernel in tests/kernel/test_forbidden.py.
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
            let chain = exthdr::chain(buf.data()).map_err(|_| DropReason::ExtHeaderMalformed)?;
            return self.local_in(cx, buf, chain, pass);
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
        cx: &Cx<'_, '_>,
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
        let hbh = &mut buf.data_mut()[h.offset..h.offset + h.len];
        let filled = snap.ioam.transit(hbh, h.offset, enabled, &ctx)?;
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
        let snap = cx.snap;
        let hbh = &buf.data()[h.offset..h.offset + h.len];
        let is_dex = |o: &[u8]| o.len() >= 12 && o[3] == crate::wire::ioam::OPT_TYPE_DEX;
        let mut found: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        for o in ioam_domain::options_where(hbh, is_dex) {
            let ns = u16::from_be_bytes([o[4], o[5]]);
            let Some(node) = snap.ioam.node_data(ns, ctx) else {
                continue;
            };
            let ty = u32::from_be_bytes([0, o[8], o[9], o[10]]);
            let words = crate::wire::ioam::block_words(ty, node.schema.map(|(_, d)| d.len()));
            let mut block = vec![0; 4 * words];
            crate::wire::ioam::write_node(&mut block, ty, &node);
            found.push((o.to_vec(), block));
        }
        if found.is_empty() {
            return;
        }
        let flow = FlowIds::of(buf.data());
        for (opt, block) in found {
            let r = IoamRecord {
                ts_ns: cx.ts,
                event: ExportEvent::DirectExport,
                in_dev: cx.in_dev,
                out_dev,
                flow,
                option: opt,
                node: block,
            };
            if self.ioam_export.push(r) {
                self.stats.ioam.exported += 1;
            } else {
                self.stats.ioam.export_lost += 1;
            }
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
    /// ingresses is dropped (`foreign drop`) or removed (`foreign strip`). Returns the Hop-by-Hop header as it
    /// now is, or None when it went entirely (the packet is then processed again from its IPv6 header).
    fn ioam_ingress(
        &mut self,
        cx: &Cx<'_, '_>,
        buf: &mut PacketBuf,
        h: exthdr::ExtHeader,
    ) -> Result<Option<exthdr::ExtHeader>, DropReason> {
        let (domains, in_dev) = (&cx.snap.ioam.domains, cx.in_dev);
        let foreign = |o: &[u8]| domains.of_option(o).is_some_and(|d| !d.ingress[in_dev]);
        let hbh = &buf.data()[h.offset..h.offset + h.len];
        let mut n = 0;
        for o in ioam_domain::options_where(hbh, foreign) {
            if domains
                .of_option(o)
                .is_some_and(|d| d.foreign == IoamForeign::Drop)
            {
                return Err(DropReason::IoamForeign);
            }
            n += 1;
        }
        if n == 0 {
            return Ok(Some(h));
        }
        ioam_domain::strip_options(buf, h.len, foreign)?;
        self.stats.ioam.foreign_stripped += n;
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
        cx: &Cx<'_, '_>,
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
        Ok(true)
    }

    /// IOAM domain egress roles: IOAM of a domain about to leave by `dev`, which is not an egress of the domain,
    /// is removed (the whole Hop-by-Hop header when nothing else is in it) and exported.
    fn ioam_egress(
        &mut self,
        cx: &Cx<'_, '_>,
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
        ioam_domain::strip_options(buf, hbh_len, leaving)?;
        self.stats.ioam.removed += opts.len() as u64;
        let flow = FlowIds::of(buf.data());
        for o in &opts {
            self.export(cx, ExportEvent::Egress, Some(dev), flow, o);
        }
        Ok(())
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
            return Err(DropReason::LocalDelivery);
        };
        let dev = snap.links[in_dev].sysctl;
        match chain.routing_type {
            Some(rpl::ROUTING_TYPE) => {
                if !(snap.all.rpl_seg_enabled && dev.rpl_seg_enabled) {
                    return Err(DropReason::RplDisabled);
                }
                let local6 = &snap.local6;
                match node_rpl::process(buf, rh.offset, &|a| local6.contains(a))? {
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
                match node_srh::process(buf, rh.offset)? {
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
            _ => Err(DropReason::UnknownRoutingType),
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
            let chain = exthdr::chain(buf.data()).map_err(|_| DropReason::ExtHeaderMalformed)?;
            return self.local_in(cx, buf, chain, pass + 1);
        }
        let Some(route) = snap.fib().lookup_v6(dst) else {
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
        buf.truncate(total);
        if dst.is_multicast() || dst.is_broadcast() {
            return Err(DropReason::Multicast);
        }
        if snap.local4.contains(&dst) {
            return Err(DropReason::LocalDelivery);
        }
        let route = snap.fib().lookup_v4(dst).ok_or(DropReason::NoRoute)?;
        self.forward(cx, buf, route, L3::V4)
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
            next0 = self
                .tunnel_route(snap.fib(), tid, new_dst)
                .ok_or(DropReason::NoRoute)?;
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
                    return Err(DropReason::HopLimitExceeded);
                }
            }
        }
        if let Some((tid, Tunnel::Output(OutputTunnel::Ioam6(t)))) =
            route.tunnel.map(|t| (t, &snap.tunnels[t]))
        {
            let carries_v6 = l3 == L3::V6 || input.is_some();
            let has_hbh = input.is_none() && buf.data()[6] == proto::HOPOPTS;
            if carries_v6 && t.should_insert(&mut self.freq[tid]) {
                match t.effective_mode() {
                    IoamMode::Inline if has_hbh => {}
                    IoamMode::Inline => {
                        output = Some(Stage {
                            tunnel: t,
                            id: tid,
                            growth: t.hbh_len,
                            new_dst: None,
                            route_dev: route.dev,
                        })
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
                        next1 = self
                            .tunnel_route(snap.fib(), tid, tundst)
                            .ok_or(DropReason::NoRoute)?;
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
        let mtu = route.mtu.map_or(link_mtu, |m| m.min(link_mtu)) as usize;
        let final_len = buf.len() - if l2_frame { ethernet::HEADER_LEN } else { 0 } + growth;
        if final_len > mtu {
            if l3 == L3::V6 {
                let reported = mtu.saturating_sub(growth).max(ipv6::MIN_MTU) as u32;
                self.icmp_error(cx, buf.data(), IcmpError::PacketTooBig { mtu: reported });
            }
            return Err(DropReason::MtuExceeded);
        }
        // Next hop: the gateway, or the final destination on a connected route.
        let final_dst = output
            .and_then(|s| s.new_dst)
            .or(input.and_then(|s| s.new_dst));
        let dst_mac = match (route.via, final_dst, l3) {
            (Some(IpAddr::V6(gw)), _, _) => snap.neigh6.get(&(egress, gw)),
            (Some(IpAddr::V4(gw)), None, L3::V4) => snap.neigh4.get(&(egress, gw)),
            (None, Some(d), _) => snap.neigh6.get(&(egress, d)),
            (None, None, L3::V6) => snap
                .neigh6
                .get(&(egress, ipv6::Packet::new_unchecked(buf.data()).dst_addr())),
            (None, None, L3::V4) => snap.neigh4.get(&(
                egress,
                ipv4::Packet::new_checked(buf.data())
                    .map_err(|_| DropReason::Ipv4Malformed)?
                    .dst_addr(),
            )),
            (Some(IpAddr::V4(_)), _, _) => None,
        }
        .copied()
        .ok_or(DropReason::NoNeighbour)?;
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
            self.apply_ioam(cx, s, buf)?;
            if let Some(p) = &policy {
                p.after_stage(buf);
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
    fn apply_ioam(
        &self,
        cx: &Cx<'_, '_>,
        stage: Stage<&Ioam6Tunnel>,
        buf: &mut PacketBuf,
    ) -> Verdict {
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
            let hlim = buf.data()[7];
            let pkt = buf.data_mut();
            let egress = stage
                .route_dev
                .map_or(NO_IF, |d| if_ids(&snap.links[d].sysctl));
            // The inserting node records the hop limit as is (Linux: is_input = false) and the ingress interface
            // of the packet; lwt6 reports its ingress as unavailable only when there is none.
            let ctx = FillContext {
                hop_limit: hlim,
                ingress: if_ids(&snap.links[cx.in_dev].sysctl),
                egress,
                ts_ns: cx.ts,
            };
            for off in &t.opt_offsets {
                let at = hbh_at + off;
                let opt_len = 2 + pkt[at + 1] as usize;
                snap.ioam.fill_option(&mut pkt[at..at + opt_len], &ctx)?;
            }
        }
        Ok(())
    }

    /// Sends an ICMPv6 error about `invoking` (an IPv6 packet) back to its source, if that is possible and allowed
    /// (RFC 4443 §2.4 (e): never about an ICMPv6 error, a multicast or unspecified source, or our own packets).
    fn icmp_error(&mut self, cx: &mut Cx<'_, '_>, invoking: &[u8], err: IcmpError) {
        let snap = cx.snap;
        let p = ipv6::Packet::new_unchecked(invoking);
        let to = p.src_addr();
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
        // Linux selects the error's source as if it left by the interface the invoking packet came in on (it
        // usually does): tests/kernel/test_forbidden.py has a case where the two differ.
        let Some(src) = snap.source_for(Some(cx.in_dev), &to) else {
            return;
        };
        let nh = match route.via {
            Some(IpAddr::V6(gw)) => gw,
            _ => to,
        };
        let Some(&mac) = snap.neigh6.get(&(dev, nh)) else {
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
