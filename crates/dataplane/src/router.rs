//! The forwarding pipeline: ethernet in → IPv6/IPv4 checks → Hop-by-Hop (IOAM transit) → local routing
//! headers (RPL, SRH) → route lookup → tunnels → hop limit → MTU → neighbour → ethernet out.
//!
//! Every packet is planned before it is written: the routes it will take, the bytes every tunnel adds, the
//! egress MTU and the next hop are all known first; then headroom is reserved once and the headers are
//! written. Every drop is a named [`DropReason`], and `rx == tx + dropped` always holds.

use crate::buffer::{Aligned, PacketBuf};
use crate::copy::{WideCopy, copy_bytes};
use crate::fib::{DevId, FastBuild, Fib, FibHandle, Origin, Plan, PlanKind, RouteEntry, TunnelId};
use crate::headroom::HeadroomPolicy;
use crate::node::ioam::{FillContext, IfIds, IoamNode, NO_IF, Namespace};
use crate::node::rpl::RplAction;
use crate::node::srh::SrhAction;
use crate::node::{rpl as node_rpl, saddr, srh as node_srh};
use crate::spec::{Config, ConfigError, DevSysctls, Encap, IoamMode, Seg6Mode};
use crate::stats::{DropReason, Stats};
use crate::tunnel::seg6::{HmacSecret, Outer};
use crate::tunnel::{Ioam6Tunnel, RplTunnel, Seg6Tunnel, Tunnel};
use crate::wire::ethernet::{self, EthernetRepr, Mac};
use crate::wire::icmpv6::{self, IcmpError};
use crate::wire::{exthdr, ipv4, ipv6, proto};
use ipnet::IpNet;
use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

/// Smallest rx headroom lwt6 uses, whatever the routes (room for an Ethernet header and alignment).
pub const MIN_RX_HEADROOM: usize = 64;
/// How many decapsulations or local routing-header passes one packet may go through.
const MAX_PASSES: usize = 8;

/// An interface of the router.
#[derive(Debug, Clone)]
pub struct Link {
    /// Name.
    pub name: String,
    /// MAC address.
    pub mac: Mac,
    /// MTU.
    pub mtu: u32,
    /// Its `net.ipv6.conf.DEV.*` values.
    pub sysctl: DevSysctls,
    /// IPv6 addresses with prefix lengths.
    pub addrs6: Vec<(Ipv6Addr, u8)>,
    /// IPv4 addresses with prefix lengths.
    pub addrs4: Vec<(Ipv4Addr, u8)>,
}

/// The router: configuration state, the published FIB and one worker's per-packet state.
#[derive(Debug)]
pub struct Router {
    /// Interfaces.
    pub links: Vec<Link>,
    neigh6: HashMap<(DevId, Ipv6Addr), Mac, FastBuild>,
    neigh4: HashMap<(DevId, Ipv4Addr), Mac, FastBuild>,
    local6: HashSet<Ipv6Addr, FastBuild>,
    local4: HashSet<Ipv4Addr, FastBuild>,
    /// Per tunnel: the device of the route carrying it and the outer source address selected on it for the
    /// tunnel's destination (seg6 first SID, ioam6 tundst), resolved once at build time as Linux caches it per
    /// tunnel; used when the packet's route device is that one.
    tun_src: Vec<(Option<DevId>, Option<Ipv6Addr>)>,
    /// Per tunnel: the route to its new destination (first SID, first RPL segment, ioam6 tundst) as found in the
    /// FIB snapshot of generation `nh_gen` (Linux's per-tunnel dst_cache). Valid only for the current generation:
    /// every batch (one snapshot) and every direct [`Router::process`] call starts a new one.
    nh_cache: Vec<(u64, Ipv6Addr, Option<RouteEntry>)>,
    nh_gen: u64,
    /// Tunnel applications by kind (seg6, ioam6, rpl), added to `stats.encapsulated` at the end of each
    /// `process` / `process_batch` call rather than per packet.
    encap_pending: [u64; 3],
    /// Packets the fast path sent since the last flush: each one received, sent and fast.
    fast_sent: u64,
    fib: FibHandle,
    /// Installed tunnels, indexed by [`TunnelId`].
    pub tunnels: Vec<Tunnel>,
    hmac: HashMap<u32, HmacSecret>,
    tunsrc: Option<Ipv6Addr>,
    ioam: IoamNode,
    seg6_flowlabel: i32,
    /// What an H.Encaps outer header keeps of the inner header's first word: all of it (`seg6_flowlabel` 0:
    /// version, traffic class, flow label) or version and traffic class only (-1: flow label 0).
    seg6_first_word: u32,
    /// How plan templates are copied: [`WideCopy`] where the CPU has it (detected when the router is built), else
    /// libc `memcpy`. Public so that benchmarks can compare the two (`lwt6 bench sweep --strategies lwt6-memcpy`).
    pub template_copy: Option<WideCopy>,
    all: DevSysctls,
    /// Headroom every received frame is loaded with (in front of its Ethernet header).
    pub rx_headroom: usize,
    /// How headroom is made for added headers when not by the router's own plan (`None`: plan the whole packet,
    /// reserve once).
    pub headroom_policy: Option<std::sync::Arc<dyn HeadroomPolicy>>,
    /// Use the precomputed plans for packets that need nothing else (on by default; the general path gives the
    /// same bytes, see `tests/fast_path.rs`).
    pub fast_path: bool,
    // --- per-worker state (no atomics) ---
    buf: PacketBuf,
    icmp: Vec<u8>,
    freq: Vec<u64>,
    /// Ingress interface ids of the packet being processed (for the inserting node's IOAM data).
    ingress_ids: IfIds,
    /// Receive timestamp of the packet being processed.
    now_ns: u64,
    /// Counters.
    pub stats: Stats,
}

/// A route the fast path already found for a destination (in the same snapshot), handed to the general path.
type RouteHint<'f> = (Ipv6Addr, Option<&'f RouteEntry>);

/// Why a packet left the normal path.
type Verdict = Result<(), DropReason>;

/// What a tunnel stage will do to a packet, decided before anything is written.
#[derive(Debug, Clone, Copy)]
struct Stage {
    tunnel: TunnelId,
    /// Bytes added.
    growth: usize,
    /// New destination (seg6 first SID, rpl first segment, ioam tundst) when it changes the routing.
    new_dst: Option<Ipv6Addr>,
    /// Device of the route that carries the tunnel (Linux picks the outer source address on it).
    route_dev: Option<DevId>,
}

fn cfg_err(line: usize, token: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError {
        line,
        token: token.to_string(),
        reason: reason.into(),
    }
}

impl Router {
    /// Builds a router from a parsed configuration. Fails (with the line) on references the parser could not
    /// check: a route `via` that no interface reaches, for example.
    pub fn build(cfg: &Config) -> Result<Router, ConfigError> {
        let mut links: Vec<Link> = Vec::new();
        let mut by_name = HashMap::new();
        for (i, l) in cfg.links.iter().enumerate() {
            let mac = l.mac.unwrap_or([0x02, 0, 0, 0, 0, (i + 1) as u8]);
            let sysctl = cfg.sysctl.dev.get(&l.name).copied().unwrap_or_default();
            by_name.insert(l.name.clone(), i);
            links.push(Link {
                name: l.name.clone(),
                mac,
                mtu: l.mtu,
                sysctl,
                addrs6: vec![],
                addrs4: vec![],
            });
        }
        let dev = |name: &str, line: usize| -> Result<DevId, ConfigError> {
            by_name
                .get(name)
                .copied()
                .ok_or_else(|| cfg_err(line, name, "no such device (declare it with 'link add')"))
        };
        let mut fib = Fib::new();
        let mut local6 = HashSet::default();
        let mut local4 = HashSet::default();
        for a in &cfg.addrs {
            let d = dev(&a.dev, a.line)?;
            match a.addr {
                IpAddr::V6(v6) => {
                    links[d].addrs6.push((v6, a.prefix_len));
                    local6.insert(v6);
                }
                IpAddr::V4(v4) => {
                    links[d].addrs4.push((v4, a.prefix_len));
                    local4.insert(v4);
                }
            }
            let net = IpNet::new(a.addr, a.prefix_len)
                .map_err(|_| cfg_err(a.line, &a.prefix_len.to_string(), "bad prefix length"))?;
            fib.insert(RouteEntry {
                prefix: net.trunc(),
                via: None,
                dev: Some(d),
                metric: if a.addr.is_ipv6() { 256 } else { 0 },
                mtu: None,
                tunnel: None,
                origin: Origin::Connected,
                line: a.line,
                plan: None,
            });
        }
        let mut neigh6 = HashMap::default();
        let mut neigh4 = HashMap::default();
        for n in &cfg.neighs {
            let d = dev(&n.dev, n.line)?;
            match n.addr {
                IpAddr::V6(a) => neigh6.insert((d, a), n.lladdr),
                IpAddr::V4(a) => neigh4.insert((d, a), n.lladdr),
            };
        }
        let mut hmac = HashMap::new();
        for k in &cfg.hmac_keys {
            hmac.insert(
                k.key_id,
                HmacSecret {
                    algo: k.algo,
                    secret: k.secret.clone(),
                },
            );
        }
        let connected = fib.clone();
        let mut tunnels = Vec::new();
        let mut tunnel_dev = Vec::new();
        for r in &cfg.routes {
            let mut d = match &r.dev {
                Some(n) => Some(dev(n, r.line)?),
                None => None,
            };
            if d.is_none() {
                let via = r.via.expect("parser guarantees dev or via");
                let found = match via {
                    IpAddr::V6(a) => connected.lookup_v6(a),
                    IpAddr::V4(a) => connected.lookup_v4(a),
                };
                d = Some(found.and_then(|c| c.dev).ok_or_else(|| {
                    cfg_err(
                        r.line,
                        &via.to_string(),
                        "gateway is not on a connected network (add 'dev')",
                    )
                })?);
            }
            let tunnel = r.encap.as_ref().map(|e| {
                tunnels.push(match e {
                    Encap::Seg6(s) => Tunnel::Seg6(Seg6Tunnel::new(s)),
                    Encap::Ioam6(i) => Tunnel::Ioam6(Ioam6Tunnel::new(i)),
                    Encap::Rpl(p) => Tunnel::Rpl(RplTunnel::new(p)),
                });
                tunnel_dev.push(d);
                tunnels.len() - 1
            });
            fib.insert(RouteEntry {
                prefix: r.prefix,
                via: r.via,
                dev: d,
                metric: r.metric,
                mtu: r.mtu,
                tunnel,
                origin: Origin::Static,
                line: r.line,
                plan: None,
            });
        }
        let mut ioam = IoamNode {
            node_id: cfg.sysctl.ioam6_id,
            node_id_wide: cfg.sysctl.ioam6_id_wide,
            namespaces: HashMap::default(),
        };
        for ns in &cfg.ioam_namespaces {
            let schema = ns
                .schema
                .and_then(|sid| cfg.ioam_schemas.iter().find(|s| s.id == sid))
                .map(|s| {
                    let mut d = s.data.clone();
                    d.resize(s.data.len().div_ceil(4) * 4, 0);
                    (s.id, d)
                });
            ioam.namespaces.insert(
                ns.id,
                Namespace {
                    data: ns.data,
                    wide: ns.wide,
                    schema,
                },
            );
        }
        let max_overhead = tunnels.iter().map(Tunnel::overhead).max().unwrap_or(0);
        let rx_headroom = (max_overhead + 2 * ethernet::HEADER_LEN).div_ceil(64) * 64;
        let n_tunnels = tunnels.len();
        let mut router = Router {
            links,
            neigh6,
            neigh4,
            local6,
            local4,
            fib: FibHandle::new(fib),
            tunnels,
            hmac,
            tunsrc: cfg.sr_tunsrc.filter(|a| !a.is_unspecified()),
            ioam,
            seg6_flowlabel: cfg.sysctl.seg6_flowlabel,
            seg6_first_word: if cfg.sysctl.seg6_flowlabel < 0 {
                0xfff0_0000
            } else {
                u32::MAX
            },
            template_copy: WideCopy::detect(),
            all: cfg.sysctl.all,
            rx_headroom: rx_headroom.max(MIN_RX_HEADROOM),
            headroom_policy: None,
            fast_path: true,
            buf: PacketBuf::new(4096),
            icmp: vec![0; ipv6::MIN_MTU + ethernet::HEADER_LEN],
            freq: vec![0; n_tunnels],
            ingress_ids: NO_IF,
            now_ns: 0,
            stats: Stats::default(),
            tun_src: Vec::new(),
            nh_cache: Vec::new(),
            nh_gen: 0,
            encap_pending: [0; 3],
            fast_sent: 0,
        };
        router.tun_src = tunnel_dev
            .iter()
            .zip(&router.tunnels)
            .map(|(&d, t)| {
                let dst = match t {
                    Tunnel::Seg6(s) => Some(s.first_sid),
                    Tunnel::Ioam6(i) => i.tundst,
                    Tunnel::Rpl(_) => None,
                };
                (d, dst.and_then(|a| router.source_for(d, &a)))
            })
            .collect();
        router.nh_cache = vec![(0, Ipv6Addr::UNSPECIFIED, None); n_tunnels];
        let planned = router.with_plans(&router.fib.snapshot());
        router.fib.publish(planned);
        Ok(router)
    }

    /// `fib` with a forwarding [`Plan`] for every IPv6 route whose way out does not depend on the packet (see
    /// [`PlanKind`]): a gateway route with a known neighbour (plain forwarding); a seg6 `encap` / `encap.red`, seg6
    /// `inline` without HMAC, or `rpl` route whose new destination resolves, with no further tunnel, to a known
    /// neighbour; an ioam6 route inserting on every packet (`freq` K/K) with a known neighbour. Everything else
    /// takes the general path.
    fn with_plans(&self, fib: &Fib) -> Fib {
        let mut plans: Vec<Plan> = Vec::new();
        let mut ids: HashMap<(IpNet, u32), u32> = HashMap::new();
        for r in fib.routes_v6() {
            if let Some(p) = self.plan_for(fib, r) {
                ids.insert((r.prefix, r.metric), plans.len() as u32);
                plans.push(p);
            }
        }
        fib.clone()
            .with_plans(plans, |r| ids.get(&(r.prefix, r.metric)).copied())
    }

    fn plan_for(&self, fib: &Fib, r: &RouteEntry) -> Option<Plan> {
        const E: usize = ethernet::HEADER_LEN;
        const H: usize = ipv6::HEADER_LEN;
        let contains_local = self
            .local6
            .iter()
            .any(|a| r.prefix.contains(&IpAddr::V6(*a)));
        // The way out along `route` towards `dst` (the gateway, or `dst` itself on a connected route; `None` when
        // that is the packet's own destination): egress, Ethernet header, MTU.
        let hop = |route: &RouteEntry, dst: Option<Ipv6Addr>| -> Option<(DevId, Vec<u8>, usize)> {
            let dev = route.dev?;
            let nh = match route.via {
                Some(IpAddr::V6(gw)) => gw,
                Some(IpAddr::V4(_)) => return None,
                None => dst?,
            };
            let mut eth = vec![0u8; E];
            EthernetRepr {
                dst: *self.neigh6.get(&(dev, nh))?,
                src: self.links[dev].mac,
                ethertype: ethernet::ETHERTYPE_IPV6,
            }
            .emit(&mut eth);
            let link = self.links[dev].mtu;
            let mtu = route.mtu.map_or(link, |m| m.min(link)) as usize;
            Some((dev, eth, mtu))
        };
        // The route to a tunnel's new destination, when no other tunnel applies there.
        let next_route = |tid: TunnelId, dst: Ipv6Addr| {
            fib.lookup_v6(dst)
                .filter(|n| n.tunnel.is_none_or(|t| t == tid))
        };
        // A scratch buffer holding a 40-byte IPv6 header with destination `dst` and next header 59, or nothing:
        // the tunnels' own code writes the template on it, so that it is byte-identical to the general path.
        let scratch = |with_header: Option<Ipv6Addr>, room: usize| {
            let mut b = PacketBuf::new(0);
            let mut hdr = [0u8; H];
            let len = match with_header {
                Some(dst) => {
                    hdr[0] = 0x60;
                    hdr[6] = proto::NONE;
                    hdr[24..40].copy_from_slice(&dst.octets());
                    H
                }
                None => 0,
            };
            b.load(&hdr[..len], room);
            b
        };
        let make =
            |kind, (egress, mut template, mtu): (DevId, Vec<u8>, usize), rest: &[u8], growth| {
                template.extend_from_slice(rest);
                Plan {
                    egress,
                    // A Payload Length field describes at most 65,535 bytes.
                    max_len: mtu.min(H + u16::MAX as usize),
                    template: Aligned::copy_half_page(&template),
                    kind,
                    growth,
                    tunnel: r.tunnel,
                    route_dev: r.dev,
                    contains_local,
                }
            };
        let Some(tid) = r.tunnel else {
            return Some(make(PlanKind::Forward, hop(r, None)?, &[], 0));
        };
        match &self.tunnels[tid] {
            Tunnel::Seg6(s) => match s.mode {
                // seg6_flowlabel 1 hashes the flow into the outer flow label: left to the general path.
                Seg6Mode::Encap | Seg6Mode::EncapRed if self.seg6_flowlabel <= 0 => {
                    let next = next_route(tid, s.first_sid)?;
                    let way = hop(next, Some(s.first_sid))?;
                    let src = s
                        .tunsrc
                        .or(self.tunsrc)
                        .or_else(|| self.source_for(r.dev, &s.first_sid))?;
                    let hmac = match s.hmac_key {
                        Some(k) => Some(self.hmac.get(&k)?),
                        None => None,
                    };
                    let growth = H + s.wire_srh().len();
                    let mut b = scratch(None, growth);
                    let outer = Outer {
                        src,
                        traffic_class: 0,
                        flow_label: 0,
                        hop_limit: 0,
                        inner_proto: proto::IPV6,
                    };
                    s.push_encap(&mut b, &outer, hmac).ok()?;
                    Some(make(PlanKind::Seg6Encap, way, b.data(), growth))
                }
                Seg6Mode::Inline => {
                    let (srh, has_hmac) = s.inline_srh();
                    if has_hmac {
                        return None;
                    }
                    let next = next_route(tid, s.first_sid)?;
                    let way = hop(next, Some(s.first_sid))?;
                    let mut b = scratch(Some(Ipv6Addr::UNSPECIFIED), srh.len());
                    s.insert_inline(&mut b, None).ok()?;
                    Some(make(PlanKind::Seg6Inline, way, b.data(), srh.len()))
                }
                _ => None,
            },
            Tunnel::Rpl(p) => {
                let next = next_route(tid, p.segs[0])?;
                let way = hop(next, Some(p.segs[0]))?;
                let mut slot = [0u8; H];
                slot[24..40].copy_from_slice(&p.segs[0].octets());
                Some(make(PlanKind::Rpl, way, &slot, 0))
            }
            Tunnel::Ioam6(t) => {
                if t.freq_k != t.freq_n {
                    return None;
                }
                match t.effective_mode() {
                    IoamMode::Inline => {
                        let way = hop(r, None)?;
                        let mut b = scratch(Some(Ipv6Addr::UNSPECIFIED), t.hbh_len);
                        t.insert_inline(&mut b).ok()??;
                        Some(make(PlanKind::IoamInline, way, b.data(), t.hbh_len))
                    }
                    _ => {
                        let tundst = t.tundst?;
                        let next = next_route(tid, tundst)?;
                        let way = hop(next, Some(tundst))?;
                        let stage = Stage {
                            tunnel: tid,
                            growth: 0,
                            new_dst: None,
                            route_dev: r.dev,
                        };
                        let src = t.tunsrc.or_else(|| self.tunnel_source(stage, &tundst))?;
                        let growth = H + t.hbh_len;
                        let mut b = scratch(Some(Ipv6Addr::UNSPECIFIED), growth);
                        t.push_encap(&mut b, src).ok()?;
                        // The outer header and the Hop-by-Hop header, without the placeholder inner header.
                        Some(make(PlanKind::IoamEncap, way, &b.data()[..growth], growth))
                    }
                }
            }
        }
    }

    /// Whether the fast path may run at all (router-wide conditions).
    #[inline]
    fn fast_ok(&self) -> bool {
        self.fast_path && self.headroom_policy.is_none() && self.all.forwarding
    }

    /// The fast path: a received frame whose route has a [`Plan`] and that needs nothing else — no Hop-by-Hop
    /// header, hop limit above 1, unicast non-link-local addresses, not for us, within the MTU, room in front.
    /// Returns `Err`, having changed nothing, when the packet must take the general path, which would produce
    /// the same bytes (it checks the same things, in more steps); the route found goes with it.
    #[inline(always)]
    fn fast_forward<'f>(
        &mut self,
        fib: &'f Fib,
        in_dev: DevId,
        ts: u64,
        frame: &[u8],
        out: &mut dyn FnMut(DevId, u64, &[u8]),
    ) -> Result<(), Option<RouteHint<'f>>> {
        const E: usize = ethernet::HEADER_LEN;
        const H: usize = ipv6::HEADER_LEN;
        if frame.len() < E + H {
            return Err(None);
        }
        let ip = &frame[E..];
        if frame[12..14] != [0x86, 0xdd] || frame[..6] != self.links[in_dev].mac || ip[0] >> 4 != 6
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
        if ip[8] >= 0xfe || ip[24] >= 0xfe {
            let special = |hi: u16| hi >= 0xff00 || hi & 0xffc0 == 0xfe80;
            if special(u16::from_be_bytes([ip[8], ip[9]]))
                || special(u16::from_be_bytes([ip[24], ip[25]]))
            {
                return Err(None);
            }
        }
        let dst_octets: [u8; 16] = ip[24..40].try_into().expect("16 bytes");
        let dst = Ipv6Addr::from(dst_octets);
        let route = fib.lookup_v6(dst);
        let Some(plan) = route.and_then(|r| r.plan).and_then(|id| fib.plan(id)) else {
            return Err(Some((dst, route)));
        };
        let rpl = match plan.kind {
            PlanKind::Rpl => match plan.tunnel.map(|t| &self.tunnels[t]) {
                Some(Tunnel::Rpl(p)) => Some(p),
                _ => return Err(Some((dst, route))),
            },
            _ => None,
        };
        let growth = match rpl {
            Some(p) => p.header_len(dst),
            None => plan.growth,
        };
        let new_len = len + growth;
        if new_len > plan.max_len
            || self.rx_headroom < growth
            || (plan.contains_local && self.local6.contains(&dst))
        {
            return Err(Some((dst, route)));
        }
        let template = plan.template.as_slice();
        let t = template.len();
        // The outgoing frame starts where the rx headroom minus what the plan adds would put it (checked above not
        // to underflow), rounded down to a cache line: the template's copy then stores whole aligned lines whatever
        // the tunnel's size (measured: up to 15 % faster, and no 64-byte period in the rate against size;
        // docs/BENCHMARKS.md). lwt6 can choose, as it copies every received frame into its own buffer after the
        // lookup; a zero-copy receive could not.
        let start = (self.rx_headroom - growth) & !63;
        let (front, body) = if plan.kind.inserts() {
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
        let plen = ((new_len - H) as u16).to_be_bytes();
        let hl = hlim - 1;
        // Every plan's frame starts with an Ethernet and an IPv6 header (the template's, or the template's
        // Ethernet header and the received IPv6 header): one length check, then fixed offsets.
        let Some((hdr, after)) = data.split_first_chunk_mut::<{ E + H }>() else {
            unreachable!("a planned frame holds an Ethernet and an IPv6 header")
        };
        // Where the IOAM option this node fills starts (Hop-by-Hop header after the IPv6 header, option at 4).
        let mut ioam_at = None;
        match plan.kind {
            PlanKind::Forward => hdr[E + 7] = hl,
            PlanKind::Seg6Encap => {
                // Outer header: version, inner traffic class, inner flow label (seg6_flowlabel 0) or 0 (-1);
                // payload length; the inner hop limit, decremented by forwarding.
                let first = u32::from_be_bytes([ip[0], ip[1], ip[2], ip[3]]) & self.seg6_first_word;
                hdr[E..E + 4].copy_from_slice(&first.to_be_bytes());
                hdr[E + 4..E + 6].copy_from_slice(&plen);
                hdr[E + 7] = hl;
                self.encap_pending[0] += 1;
            }
            PlanKind::Seg6Inline | PlanKind::Rpl => {
                // Version to source from the received header; the template's slot already holds the new
                // destination (first SID, first RPL segment).
                hdr[E..E + 24].copy_from_slice(&ip[..24]);
                hdr[E + 4..E + 6].copy_from_slice(&plen);
                hdr[E + 6] = proto::ROUTING;
                hdr[E + 7] = hl;
                let rh = &mut after[..growth];
                if let Some(p) = rpl {
                    p.emit(rh, ip[6], &dst);
                    self.encap_pending[2] += 1;
                } else {
                    // SRH next header; Segment List[0] := the original destination.
                    rh[0] = ip[6];
                    rh[8..24].copy_from_slice(&dst_octets);
                    self.encap_pending[0] += 1;
                }
            }
            PlanKind::IoamInline => {
                hdr[E..E + H].copy_from_slice(&ip[..H]);
                hdr[E + 4..E + 6].copy_from_slice(&plen);
                hdr[E + 6] = proto::HOPOPTS;
                hdr[E + 7] = hl;
                after[0] = ip[6];
                ioam_at = Some(E + H + crate::tunnel::ioam6::OPTION_OFFSET_IN_HBH);
            }
            PlanKind::IoamEncap => {
                // The outer header copies the inner one's first word and its (decremented) hop limit.
                hdr[E..E + 4].copy_from_slice(&ip[..4]);
                hdr[E + 4..E + 6].copy_from_slice(&plen);
                hdr[E + 7] = hl;
                // The inner header starts where the template ends.
                after[t - (E + H) + 7] = hl;
                ioam_at = Some(E + H + crate::tunnel::ioam6::OPTION_OFFSET_IN_HBH);
            }
        }
        if let Some(at) = ioam_at {
            // Everything about the option is read from the template, not from the packet's fresh copy of it.
            let opt_len = 2 + template[at + 1] as usize;
            let ctx = FillContext {
                hop_limit: hl,
                ingress: if_ids(&self.links[in_dev].sysctl),
                egress: plan
                    .route_dev
                    .map_or(NO_IF, |d| if_ids(&self.links[d].sysctl)),
                ts_ns: ts,
            };
            if let Err(reason) = self.ioam.fill_option_from(
                &template[at..at + opt_len],
                &mut data[at..at + opt_len],
                &ctx,
            ) {
                // As on the general path: dropped, and not counted as an ioam6 insertion.
                self.stats.rx += 1;
                self.stats.drop(reason);
                return Ok(());
            }
            self.encap_pending[1] += 1;
        }
        out(plan.egress, ts, data);
        // Received, sent and fast: added to the three counters once per batch (`flush_counters`).
        self.fast_sent += 1;
        Ok(())
    }

    /// Replaces the buffer received frames are loaded into (returns the old one). The router's own is page-aligned;
    /// this exists to measure other placements (`examples/placement.rs`).
    pub fn set_rx_buffer(&mut self, buf: PacketBuf) -> PacketBuf {
        std::mem::replace(&mut self.buf, buf)
    }

    /// The interface called `name`.
    pub fn dev_id(&self, name: &str) -> Option<DevId> {
        self.links.iter().position(|l| l.name == name)
    }

    /// A snapshot of the routing table.
    pub fn fib(&self) -> Arc<Fib> {
        self.fib.snapshot()
    }

    /// The effective MTU of a route: route MTU or the device's, minus what its tunnel adds as Linux reports it
    /// (`lwtunnel_headroom`), and lwt6's own figure (the bytes really added).
    pub fn route_mtu(&self, r: &RouteEntry) -> (u32, u32) {
        let base = r
            .mtu
            .unwrap_or_else(|| r.dev.map_or(1500, |d| self.links[d].mtu));
        match r.tunnel.map(|t| &self.tunnels[t]) {
            Some(t) => {
                let linux = t.linux_mtu_headroom() as u32;
                let ours = match t {
                    Tunnel::Seg6(s) if s.is_l2() => 0,
                    t => t.overhead() as u32,
                };
                (base.saturating_sub(linux), base.saturating_sub(ours))
            }
            None => (base, base),
        }
    }

    /// Processes a batch of received frames `(ingress device, timestamp ns, bytes)`; every frame sent is passed
    /// to `out`. The FIB snapshot is taken once for the whole batch. (Never inlined: it is the unit profilers
    /// and `scripts/bench-instructions.sh` count.)
    #[inline(never)]
    pub fn process_batch<'a>(
        &mut self,
        frames: impl IntoIterator<Item = (DevId, u64, &'a [u8])>,
        out: &mut dyn FnMut(DevId, u64, &[u8]),
    ) {
        let fib = self.fib.snapshot();
        self.nh_gen += 1;
        let fast = self.fast_ok();
        for (dev, ts, frame) in frames {
            self.process_one(&fib, dev, ts, frame, out, fast);
        }
        self.flush_counters();
    }

    /// Processes one received frame.
    pub fn process(
        &mut self,
        fib: &Fib,
        in_dev: DevId,
        ts_ns: u64,
        frame: &[u8],
        out: &mut dyn FnMut(DevId, u64, &[u8]),
    ) {
        self.nh_gen += 1;
        let fast = self.fast_ok();
        self.process_one(fib, in_dev, ts_ns, frame, out, fast);
        self.flush_counters();
    }

    /// Adds the pending per-kind tunnel counts to `stats.encapsulated`.
    fn flush_counters(&mut self) {
        let fast = std::mem::take(&mut self.fast_sent);
        self.stats.rx += fast;
        self.stats.tx += fast;
        self.stats.fast_path += fast;
        for (k, kind) in ["seg6", "ioam6", "rpl"].into_iter().enumerate() {
            let n = std::mem::take(&mut self.encap_pending[k]);
            if n > 0 {
                *self.stats.encapsulated.entry(kind).or_insert(0) += n;
            }
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

    /// One frame (the caller manages the next-hop cache generation and the counters): the fast path when `fast` (the router-wide [`Self::fast_ok`], checked once per batch) and
    /// the route has a plan, else the general path with the route the fast path found.
    #[inline(always)]
    fn process_one(
        &mut self,
        fib: &Fib,
        in_dev: DevId,
        ts_ns: u64,
        frame: &[u8],
        out: &mut dyn FnMut(DevId, u64, &[u8]),
        fast: bool,
    ) {
        let hint = if fast {
            match self.fast_forward(fib, in_dev, ts_ns, frame, out) {
                Ok(()) => return,
                Err(hint) => hint,
            }
        } else {
            None
        };
        self.process_slow(fib, in_dev, ts_ns, frame, out, hint);
    }

    /// The general path for one frame. (Kept out of line, so that the fast path around it stays small enough for
    /// its helpers to be inlined.)
    #[inline(never)]
    fn process_slow(
        &mut self,
        fib: &Fib,
        in_dev: DevId,
        ts_ns: u64,
        frame: &[u8],
        out: &mut dyn FnMut(DevId, u64, &[u8]),
        hint: Option<RouteHint<'_>>,
    ) {
        self.stats.rx += 1;
        let mut buf = std::mem::replace(&mut self.buf, PacketBuf::new(0));
        buf.load(frame, self.rx_headroom);
        self.ingress_ids = if_ids(&self.links[in_dev].sysctl);
        self.now_ns = ts_ns;
        let before = buf.reallocs();
        let verdict = self.ethernet_in(fib, in_dev, ts_ns, &mut buf, hint, &mut |dev, bytes| {
            out(dev, ts_ns, bytes)
        });
        self.stats.reallocs += buf.reallocs() - before;
        match verdict {
            Ok(()) => self.stats.tx += 1,
            Err(r) => self.stats.drop(r),
        }
        self.buf = buf;
    }

    fn ethernet_in(
        &mut self,
        fib: &Fib,
        in_dev: DevId,
        ts: u64,
        buf: &mut PacketBuf,
        hint: Option<RouteHint<'_>>,
        out: &mut dyn FnMut(DevId, &[u8]),
    ) -> Verdict {
        let eth =
            ethernet::Frame::new_checked(buf.data()).map_err(|_| DropReason::EthernetTruncated)?;
        let dst = eth.dst();
        if dst != self.links[in_dev].mac && dst[0] & 1 == 0 {
            return Err(DropReason::NotForUs);
        }
        let ethertype = eth.ethertype();
        buf.pull_front(ethernet::HEADER_LEN)
            .map_err(|_| DropReason::EthernetTruncated)?;
        match ethertype {
            ethernet::ETHERTYPE_IPV6 => self.ipv6_in(fib, in_dev, ts, buf, out, 0, hint),
            ethernet::ETHERTYPE_IPV4 => self.ipv4_in(fib, in_dev, buf, out),
            _ => Err(DropReason::UnsupportedEthertype),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn ipv6_in(
        &mut self,
        fib: &Fib,
        in_dev: DevId,
        ts: u64,
        buf: &mut PacketBuf,
        out: &mut dyn FnMut(DevId, &[u8]),
        pass: usize,
        hint: Option<RouteHint<'_>>,
    ) -> Verdict {
        if pass >= MAX_PASSES {
            return Err(DropReason::TunnelLoop);
        }
        let p = ipv6::Packet::new_checked(buf.data()).map_err(|_| DropReason::Ipv6Malformed)?;
        let total = ipv6::HEADER_LEN + p.payload_len() as usize;
        let (src, dst, hlim) = (p.src_addr(), p.dst_addr(), p.hop_limit());
        buf.truncate(total);
        if src.is_multicast() {
            return Err(DropReason::Ipv6Malformed);
        }
        if dst.is_multicast() {
            return Err(DropReason::Multicast);
        }
        let local = self.local6.contains(&dst);
        let route = match hint {
            _ if local => None,
            // The fast path already looked this destination up in the same snapshot.
            Some((d, r)) if d == dst => r,
            _ => fib.lookup_v6(dst),
        };
        // Like Linux, a transit router looks at the Hop-by-Hop header only; the rest of the chain is walked
        // (and must be well formed) only for packets addressed to us.
        if buf.data()[6] == proto::HOPOPTS {
            let h = exthdr::Walker::new(buf.data())
                .next()
                .and_then(|h| h.ok())
                .ok_or(DropReason::ExtHeaderMalformed)?;
            self.hop_by_hop_in(buf, h, in_dev, route, hlim, ts)?;
        }
        if local {
            let chain = exthdr::chain(buf.data()).map_err(|_| DropReason::ExtHeaderMalformed)?;
            return self.local_in(fib, in_dev, ts, buf, out, chain, pass);
        }
        if is_link_local(&src) || is_link_local(&dst) {
            return Err(DropReason::ScopeViolation);
        }
        if !self.all.forwarding {
            return Err(DropReason::ForwardingDisabled);
        }
        let Some(route) = route else {
            self.icmp_error(fib, buf.data(), IcmpError::DestUnreachable { code: 0 }, out);
            return Err(DropReason::NoRoute);
        };
        self.forward(fib, buf, route, L3::V6, out)
    }

    /// IOAM transit on a received Hop-by-Hop header.
    fn hop_by_hop_in(
        &mut self,
        buf: &mut PacketBuf,
        h: exthdr::ExtHeader,
        in_dev: DevId,
        route: Option<&RouteEntry>,
        hlim: u8,
        ts: u64,
    ) -> Verdict {
        let ingress = &self.links[in_dev];
        let egress = route
            .and_then(|r| r.dev)
            .map_or(NO_IF, |d| if_ids(&self.links[d].sysctl));
        let ctx = FillContext {
            hop_limit: hlim.wrapping_sub(1),
            ingress: if_ids(&ingress.sysctl),
            egress,
            ts_ns: ts,
        };
        let enabled = ingress.sysctl.ioam6_enabled;
        let hbh = &mut buf.data_mut()[h.offset..h.offset + h.len];
        let filled = self.ioam.transit(hbh, h.offset, enabled, &ctx)?;
        self.stats.ioam_transit_filled += filled as u64;
        Ok(())
    }

    /// A packet addressed to one of our addresses: routing headers are processed, the rest cannot be delivered.
    #[allow(clippy::too_many_arguments)]
    fn local_in(
        &mut self,
        fib: &Fib,
        in_dev: DevId,
        ts: u64,
        buf: &mut PacketBuf,
        out: &mut dyn FnMut(DevId, &[u8]),
        chain: exthdr::Chain,
        pass: usize,
    ) -> Verdict {
        let Some(rh) = chain.routing else {
            return Err(DropReason::LocalDelivery);
        };
        let dev = self.links[in_dev].sysctl;
        match chain.routing_type {
            Some(crate::wire::rpl::ROUTING_TYPE) => {
                if !(self.all.rpl_seg_enabled && dev.rpl_seg_enabled) {
                    return Err(DropReason::RplDisabled);
                }
                let local6 = &self.local6;
                match node_rpl::process(buf, rh.offset, &|a| local6.contains(a))? {
                    RplAction::Deliver => Err(DropReason::LocalDelivery),
                    RplAction::Decap { inner_offset } => {
                        buf.pull_front(inner_offset)
                            .map_err(|_| DropReason::RplMalformed)?;
                        self.ipv6_in(fib, in_dev, ts, buf, out, pass + 1, None)
                    }
                    RplAction::ParamProblem { pointer, reason } => {
                        self.icmp_error(
                            fib,
                            buf.data(),
                            IcmpError::ParamProblem { code: 0, pointer },
                            out,
                        );
                        Err(reason)
                    }
                    RplAction::Forward => self.after_local_rh(fib, in_dev, ts, buf, out, pass),
                }
            }
            Some(crate::wire::srh::ROUTING_TYPE) => {
                if !(self.all.seg6_enabled && dev.seg6_enabled) {
                    return Err(DropReason::Seg6Disabled);
                }
                node_srh::check_hmac(buf.data(), rh.offset, dev.seg6_require_hmac, &self.hmac)?;
                match node_srh::process(buf, rh.offset)? {
                    SrhAction::Deliver => Err(DropReason::LocalDelivery),
                    SrhAction::Decap {
                        inner_offset,
                        proto: p,
                    } => {
                        buf.pull_front(inner_offset)
                            .map_err(|_| DropReason::SrhMalformed)?;
                        if p == proto::IPV6 {
                            self.ipv6_in(fib, in_dev, ts, buf, out, pass + 1, None)
                        } else {
                            self.ipv4_in(fib, in_dev, buf, out)
                        }
                    }
                    SrhAction::ParamProblem { pointer } => {
                        self.icmp_error(
                            fib,
                            buf.data(),
                            IcmpError::ParamProblem { code: 0, pointer },
                            out,
                        );
                        Err(DropReason::SrhMalformed)
                    }
                    SrhAction::Forward => self.after_local_rh(fib, in_dev, ts, buf, out, pass),
                }
            }
            _ => Err(DropReason::UnknownRoutingType),
        }
    }

    /// After a routing header advanced the destination: local again → hop limit check, decrement and process
    /// again; otherwise forward.
    fn after_local_rh(
        &mut self,
        fib: &Fib,
        in_dev: DevId,
        ts: u64,
        buf: &mut PacketBuf,
        out: &mut dyn FnMut(DevId, &[u8]),
        pass: usize,
    ) -> Verdict {
        let p = ipv6::Packet::new_unchecked(buf.data());
        let dst = p.dst_addr();
        if self.local6.contains(&dst) {
            if p.hop_limit() <= 1 {
                self.icmp_error(fib, buf.data(), IcmpError::TimeExceeded { code: 0 }, out);
                return Err(DropReason::HopLimitExceeded);
            }
            buf.data_mut()[7] -= 1;
            let chain = exthdr::chain(buf.data()).map_err(|_| DropReason::ExtHeaderMalformed)?;
            return self.local_in(fib, in_dev, ts, buf, out, chain, pass + 1);
        }
        let Some(route) = fib.lookup_v6(dst) else {
            self.icmp_error(fib, buf.data(), IcmpError::DestUnreachable { code: 0 }, out);
            return Err(DropReason::NoRoute);
        };
        self.forward(fib, buf, route, L3::V6, out)
    }

    fn ipv4_in(
        &mut self,
        fib: &Fib,
        _in_dev: DevId,
        buf: &mut PacketBuf,
        out: &mut dyn FnMut(DevId, &[u8]),
    ) -> Verdict {
        let p = ipv4::Packet::new_checked(buf.data()).map_err(|_| DropReason::Ipv4Malformed)?;
        if !p.verify_checksum() {
            return Err(DropReason::Ipv4Malformed);
        }
        let (dst, total) = (p.dst_addr(), p.total_len() as usize);
        buf.truncate(total);
        if dst.is_multicast() || dst.is_broadcast() {
            return Err(DropReason::Multicast);
        }
        if self.local4.contains(&dst) {
            return Err(DropReason::LocalDelivery);
        }
        let route = fib.lookup_v4(dst).ok_or(DropReason::NoRoute)?;
        self.forward(fib, buf, route, L3::V4, out)
    }

    /// Plans and carries out the forwarding of the packet in `buf` (which starts at its L3 header) along
    /// `route`, applying the route's tunnel and, after a destination change, the next route's output tunnel.
    fn forward(
        &mut self,
        fib: &Fib,
        buf: &mut PacketBuf,
        route: &RouteEntry,
        l3: L3,
        out: &mut dyn FnMut(DevId, &[u8]),
    ) -> Verdict {
        // ---- plan ----
        let mut stages: [Option<Stage>; 2] = [None, None];
        let next0: RouteEntry;
        let next1: RouteEntry;
        let mut route = route;
        let mut l2_frame = false;
        if let Some(tid) = route.tunnel.filter(|&t| self.tunnels[t].on_input()) {
            let (growth, new_dst) = match &self.tunnels[tid] {
                Tunnel::Seg6(s) => {
                    if l3 == L3::V4 && s.mode == Seg6Mode::Inline {
                        return Err(DropReason::TunnelProtoMismatch);
                    }
                    l2_frame = s.is_l2();
                    (
                        s.overhead() + if l2_frame { ethernet::HEADER_LEN } else { 0 },
                        s.first_sid,
                    )
                }
                Tunnel::Rpl(r) => {
                    if l3 == L3::V4 {
                        return Err(DropReason::TunnelProtoMismatch);
                    }
                    let orig = ipv6::Packet::new_unchecked(buf.data()).dst_addr();
                    (r.header_len(orig), r.segs[0])
                }
                Tunnel::Ioam6(_) => unreachable!("ioam6 is an output tunnel"),
            };
            stages[0] = Some(Stage {
                tunnel: tid,
                growth,
                new_dst: Some(new_dst),
                route_dev: route.dev,
            });
            next0 = self
                .tunnel_route(fib, tid, new_dst)
                .ok_or(DropReason::NoRoute)?;
            match next0.tunnel {
                Some(t) if t == tid => {}
                Some(t) if self.tunnels[t].on_input() => return Err(DropReason::TunnelLoop),
                _ => {}
            }
            route = &next0;
        } else if l3 == L3::V4 && route.tunnel.is_some() {
            return Err(DropReason::TunnelProtoMismatch);
        }
        // The hop limit check happens on the packet as received: Linux copies the inner hop limit to the outer
        // header and checks it after encapsulation, sending the Time Exceeded to itself; lwt6 tells the sender.
        let out_hlim_v4 = route.dev.map_or(64, |d| self.links[d].sysctl.hop_limit);
        match l3 {
            L3::V6 => {
                if buf.data()[7] <= 1 {
                    self.icmp_error(fib, buf.data(), IcmpError::TimeExceeded { code: 0 }, out);
                    return Err(DropReason::HopLimitExceeded);
                }
            }
            L3::V4 => {
                let ttl_or_outer = if stages[0].is_some() {
                    out_hlim_v4
                } else {
                    buf.data()[8]
                };
                if ttl_or_outer <= 1 {
                    return Err(DropReason::HopLimitExceeded);
                }
            }
        }
        if let Some(tid) = route.tunnel.filter(|&t| !self.tunnels[t].on_input()) {
            let Tunnel::Ioam6(t) = &self.tunnels[tid] else {
                unreachable!()
            };
            let carries_v6 = l3 == L3::V6 || stages[0].is_some();
            let has_hbh = stages[0].is_none() && buf.data()[6] == proto::HOPOPTS;
            if carries_v6 && t.should_insert(&mut self.freq[tid]) {
                match t.effective_mode() {
                    IoamMode::Inline if has_hbh => {}
                    IoamMode::Inline => {
                        stages[1] = Some(Stage {
                            tunnel: tid,
                            growth: t.hbh_len,
                            new_dst: None,
                            route_dev: route.dev,
                        })
                    }
                    _ => {
                        let growth = ipv6::HEADER_LEN + t.hbh_len;
                        stages[1] = Some(Stage {
                            tunnel: tid,
                            growth,
                            new_dst: t.tundst,
                            route_dev: route.dev,
                        });
                        let tundst = t.tundst.ok_or(DropReason::NoRoute)?;
                        next1 = self
                            .tunnel_route(fib, tid, tundst)
                            .ok_or(DropReason::NoRoute)?;
                        if next1.tunnel.is_some_and(|n| n != tid) {
                            return Err(DropReason::TunnelLoop);
                        }
                        route = &next1;
                    }
                }
            }
        }
        let growth: usize = stages.iter().flatten().map(|s| s.growth).sum();
        let egress = route.dev.ok_or(DropReason::NoRoute)?;
        let link_mtu = self.links[egress].mtu;
        let mtu = route.mtu.map_or(link_mtu, |m| m.min(link_mtu)) as usize;
        let final_len = buf.len() - if l2_frame { ethernet::HEADER_LEN } else { 0 } + growth;
        if final_len > mtu {
            if l3 == L3::V6 {
                let reported = mtu.saturating_sub(growth).max(ipv6::MIN_MTU) as u32;
                self.icmp_error(
                    fib,
                    buf.data(),
                    IcmpError::PacketTooBig { mtu: reported },
                    out,
                );
            }
            return Err(DropReason::MtuExceeded);
        }
        // Next hop: the gateway, or the final destination on a connected route.
        let final_dst = stages
            .iter()
            .flatten()
            .filter_map(|s| s.new_dst)
            .next_back();
        let dst_mac = match (route.via, final_dst, l3) {
            (Some(IpAddr::V6(gw)), _, _) => self.neigh6.get(&(egress, gw)),
            (Some(IpAddr::V4(gw)), None, L3::V4) => self.neigh4.get(&(egress, gw)),
            (None, Some(d), _) => self.neigh6.get(&(egress, d)),
            (None, None, L3::V6) => self
                .neigh6
                .get(&(egress, ipv6::Packet::new_unchecked(buf.data()).dst_addr())),
            (None, None, L3::V4) => self.neigh4.get(&(
                egress,
                ipv4::Packet::new_checked(buf.data())
                    .map_err(|_| DropReason::Ipv4Malformed)?
                    .dst_addr(),
            )),
            (Some(IpAddr::V4(_)), _, _) => None,
        }
        .copied()
        .ok_or(DropReason::NoNeighbour)?;

        // ---- write: one headroom reservation, then the headers ----
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
        if let Some(s) = stages[0] {
            if let Some(p) = &policy {
                p.before_stage(buf, s.growth, l2_frame);
            }
            self.apply_input_tunnel(s, buf, l3, out_hlim_v4)?;
            if let Some(p) = &policy {
                p.after_stage(buf);
            }
        }
        // ip6_forward: decrement the (outer) hop limit; plain IPv4 forwarding: TTL.
        if l3 == L3::V6 || stages[0].is_some() {
            buf.data_mut()[7] -= 1;
        } else {
            let mut p =
                ipv4::Packet::new_checked(buf.data_mut()).map_err(|_| DropReason::Ipv4Malformed)?;
            p.decrement_ttl();
        }
        if let Some(s) = stages[1] {
            if let Some(p) = &policy {
                p.before_stage(buf, s.growth, false);
            }
            self.apply_ioam(s, buf)?;
            if let Some(p) = &policy {
                p.after_stage(buf);
            }
        }
        let ethertype = if l3 == L3::V4 && stages[0].is_none() {
            ethernet::ETHERTYPE_IPV4
        } else {
            ethernet::ETHERTYPE_IPV6
        };
        let hdr = buf
            .push_front(ethernet::HEADER_LEN)
            .map_err(|_| DropReason::BufferPlanning)?;
        EthernetRepr {
            dst: dst_mac,
            src: self.links[egress].mac,
            ethertype,
        }
        .emit(hdr);
        for s in stages.iter().flatten() {
            let k = match self.tunnels[s.tunnel] {
                Tunnel::Seg6(_) => 0,
                Tunnel::Ioam6(_) => 1,
                Tunnel::Rpl(_) => 2,
            };
            self.encap_pending[k] += 1;
        }
        out(egress, buf.data());
        Ok(())
    }

    /// seg6 / rpl on the input path. `buf` starts at the L3 header (at the Ethernet header for L2 modes).
    fn apply_input_tunnel(
        &self,
        stage: Stage,
        buf: &mut PacketBuf,
        l3: L3,
        v4_hlim: u8,
    ) -> Verdict {
        match &self.tunnels[stage.tunnel] {
            Tunnel::Rpl(r) => r.insert(buf).map(|_| ()),
            Tunnel::Seg6(s) => {
                let hmac = s
                    .hmac_key
                    .map(|k| self.hmac.get(&k).ok_or(DropReason::HmacKeyMissing))
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
                let flow_label = match self.seg6_flowlabel {
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
                    .or(self.tunsrc)
                    .or_else(|| self.tunnel_source(stage, &s.first_sid))
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
            Tunnel::Ioam6(_) => unreachable!("ioam6 is an output tunnel"),
        }
    }

    /// ioam6 on the output path (after the hop limit decrement), then this node fills its own data.
    fn apply_ioam(&self, stage: Stage, buf: &mut PacketBuf) -> Verdict {
        let Tunnel::Ioam6(t) = &self.tunnels[stage.tunnel] else {
            unreachable!()
        };
        let opt_at = match t.effective_mode() {
            IoamMode::Inline => t.insert_inline(buf)?,
            _ => {
                let dst = t.tundst.ok_or(DropReason::NoRoute)?;
                let src = t
                    .tunsrc
                    .or_else(|| self.tunnel_source(stage, &dst))
                    .ok_or(DropReason::NoSourceAddress)?;
                Some(t.push_encap(buf, src)?)
            }
        };
        if let Some(at) = opt_at {
            let hlim = buf.data()[7];
            let pkt = buf.data_mut();
            let opt_len = 2 + pkt[at + 1] as usize;
            let egress = stage
                .route_dev
                .map_or(NO_IF, |d| if_ids(&self.links[d].sysctl));
            // The inserting node records the hop limit as is (Linux: is_input = false) and the ingress interface
            // of the packet; lwt6 reports its ingress as unavailable only when there is none.
            let ctx = FillContext {
                hop_limit: hlim,
                ingress: self.ingress_ids,
                egress,
                ts_ns: self.now_ns,
            };
            self.ioam.fill_option(&mut pkt[at..at + opt_len], &ctx)?;
        }
        Ok(())
    }

    /// The outer source address of a tunnel stage towards `dst` (its configured destination): resolved at build
    /// time for the tunnel's own route device, selected now otherwise.
    fn tunnel_source(&self, stage: Stage, dst: &Ipv6Addr) -> Option<Ipv6Addr> {
        match self.tun_src.get(stage.tunnel) {
            Some(&(dev, src)) if dev == stage.route_dev => src,
            _ => self.source_for(stage.route_dev, dst),
        }
    }

    fn source_for(&self, dev: Option<DevId>, dst: &Ipv6Addr) -> Option<Ipv6Addr> {
        let cands = self
            .links
            .iter()
            .enumerate()
            .flat_map(|(i, l)| l.addrs6.iter().map(move |(a, _)| (*a, Some(i) == dev)));
        saddr::select(cands, dst)
    }

    /// Sends an ICMPv6 error about `invoking` (an IPv6 packet) back to its source, if that is possible and allowed
    /// (RFC 4443 §2.4 (e): never about an ICMPv6 error, a multicast or unspecified source, or our own packets).
    fn icmp_error(
        &mut self,
        fib: &Fib,
        invoking: &[u8],
        err: IcmpError,
        out: &mut dyn FnMut(DevId, &[u8]),
    ) {
        let p = ipv6::Packet::new_unchecked(invoking);
        let to = p.src_addr();
        if to.is_unspecified() || to.is_multicast() || self.local6.contains(&to) {
            return;
        }
        if let Ok(c) = exthdr::chain(invoking)
            && c.upper_proto == proto::ICMPV6
            && invoking.get(c.upper_offset).is_some_and(|t| *t < 128)
        {
            return;
        }
        let Some(route) = fib.lookup_v6(to) else {
            return;
        };
        let Some(dev) = route.dev else { return };
        let Some(src) = self.source_for(Some(dev), &to) else {
            return;
        };
        let nh = match route.via {
            Some(IpAddr::V6(gw)) => gw,
            _ => to,
        };
        let Some(&mac) = self.neigh6.get(&(dev, nh)) else {
            return;
        };
        let hl = self.links[dev].sysctl.hop_limit;
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
            src: self.links[dev].mac,
            ethertype: ethernet::ETHERTYPE_IPV6,
        }
        .emit(&mut self.icmp[..ethernet::HEADER_LEN]);
        out(dev, &self.icmp[..ethernet::HEADER_LEN + len]);
        self.stats.icmp_tx += 1;
    }
}

/// Which L3 protocol a packet entered with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum L3 {
    V4,
    V6,
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
