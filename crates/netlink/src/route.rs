//! One kernel route, decoded from an `RTM_NEWROUTE` / `RTM_DELROUTE` message (include/uapi/linux/rtnetlink.h:
//! `struct rtmsg` and the `RTA_*` attributes; lwtunnel encaps from include/uapi/linux/lwtunnel.h and the seg6,
//! seg6local, ioam6 and rpl UAPI headers).

use std::ffi::CStr;
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;
use lwt6_dataplane::spec::{
    Encap, Ioam6Encap, IoamMode, IoamTraceSpec, RplEncap, Seg6Encap, Seg6Mode,
};
use netlink_packet_route::AddressFamily;
use netlink_packet_route::route::{
    Ioam6Mode, RouteAddress, RouteAttribute, RouteIoam6Tunnel, RouteLwTunnelEncap, RouteMessage,
    RouteMetric, RouteRplIpTunnel, RouteSeg6IpTunnel, RouteSeg6LocalTunnel, RouteType, RouteVia,
    Seg6Mode as NlSeg6Mode,
};

/// The route type (`rtm_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteKind {
    /// A gateway or direct route: what a router forwards with.
    Unicast,
    /// Accepted locally (the `local` table's addresses).
    Local,
    /// Silently dropped.
    Blackhole,
    /// Dropped with "destination unreachable".
    Unreachable,
    /// Dropped with "administratively prohibited".
    Prohibit,
    /// Any other type (broadcast, anycast, multicast, throw, nat...), by number.
    Other(u8),
}

/// A `seg6local` endpoint route's attributes (include/uapi/linux/seg6_local.h).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Seg6Local {
    /// The behaviour as iproute2 names it (`End`, `End.X`, `End.DT6`, ...).
    pub action: String,
    /// `table` (End.T, End.DT6 ...).
    pub table: Option<u32>,
    /// `vrftable` (End.DT4, End.DT6, End.DT46 in VRF mode).
    pub vrftable: Option<u32>,
    /// `nh4` (End.DX4).
    pub nh4: Option<Ipv4Addr>,
    /// `nh6` (End.X, End.DX6).
    pub nh6: Option<Ipv6Addr>,
    /// `iif` (interface name).
    pub iif: Option<String>,
    /// `oif` (End.DX2; interface name).
    pub oif: Option<String>,
    /// `srh segs` (End.B6, End.B6.Encaps), in iproute2's order.
    pub srh_segs: Vec<Ipv6Addr>,
}

/// A route's lightweight tunnel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelEncap {
    /// `seg6`, `ioam6` or `rpl`: what lwt6's dataplane builds.
    Tunnel(Encap),
    /// `seg6local`.
    Seg6Local(Seg6Local),
    /// A tunnel lwt6 does not build (`mpls`, `ip`, `ip6`, `bpf`, ...), named as iproute2 names it.
    Other(String),
}

/// One kernel route.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelRoute {
    /// Routing table (254 = main, 255 = local).
    pub table: u32,
    /// Route type.
    pub kind: RouteKind,
    /// Who installed it (`rtm_protocol`: 2 kernel, 3 boot, 4 static, ...).
    pub protocol: u8,
    /// Destination prefix.
    pub prefix: IpNet,
    /// Gateway.
    pub via: Option<IpAddr>,
    /// Output interface name (`if<N>` when the index has no name any more).
    pub dev: Option<String>,
    /// Metric (`RTA_PRIORITY`; IPv4 routes without one have 0).
    pub metric: u32,
    /// Route MTU (`RTAX_MTU`).
    pub mtu: Option<u32>,
    /// The MTU is locked (`mtu lock N`: bit `RTAX_MTU` of `RTAX_LOCK`).
    pub mtu_locked: bool,
    /// Lightweight tunnel.
    pub encap: Option<KernelEncap>,
    /// Next hops of a multipath route (0 for a single-path route; lwt6 does not forward over multipath routes).
    pub multipath: usize,
    /// Source-specific routing prefix length (`from`), non-zero only for source routes lwt6 does not serve.
    pub src_len: u8,
}

fn ifname(index: u32) -> String {
    let mut buf = [0 as libc::c_char; libc::IF_NAMESIZE];
    // SAFETY: if_indextoname(3) writes at most IF_NAMESIZE bytes (a name and its NUL) at its second argument:
    // `buf` is a live, exclusively borrowed array of exactly IF_NAMESIZE bytes, and no pointer to it is kept.
    let p = unsafe { libc::if_indextoname(index, buf.as_mut_ptr()) };
    if p.is_null() {
        return format!("if{index}");
    }
    // SAFETY: on success (non-null `p`) if_indextoname wrote a NUL-terminated name into `buf`, so the string
    // `CStr::from_ptr` scans ends inside the array; `buf` outlives the borrowed CStr, which is copied into a
    // String before the function returns.
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

fn addr(a: &RouteAddress) -> Option<IpAddr> {
    match a {
        RouteAddress::Inet(v4) => Some(IpAddr::V4(*v4)),
        RouteAddress::Inet6(v6) => Some(IpAddr::V6(*v6)),
        _ => None,
    }
}

fn seg6_mode(m: &NlSeg6Mode) -> Result<Seg6Mode, String> {
    // netlink-packet-route names only inline and encap; the others arrive as numbers (SEG6_IPTUN_MODE_*).
    Ok(match m {
        NlSeg6Mode::Inline => Seg6Mode::Inline,
        NlSeg6Mode::Encap => Seg6Mode::Encap,
        NlSeg6Mode::Other(2) => Seg6Mode::L2Encap,
        NlSeg6Mode::Other(3) => Seg6Mode::EncapRed,
        NlSeg6Mode::Other(4) => Seg6Mode::L2EncapRed,
        other => return Err(format!("seg6 mode {other:?}")),
    })
}

fn seg6(attrs: &[RouteLwTunnelEncap]) -> Result<Encap, String> {
    let mut out: Option<Seg6Encap> = None;
    let mut tunsrc = None;
    for a in attrs {
        match a {
            RouteLwTunnelEncap::Seg6(RouteSeg6IpTunnel::Seg6(h)) => {
                let mode = seg6_mode(&h.mode)?;
                let mut segs = h.segments.clone();
                // Inline mode keeps a slot for the packet's destination at the end of the list (the SRH's first
                // entry), all zeros in the route: not a segment of the route.
                if mode == Seg6Mode::Inline && segs.last() == Some(&Ipv6Addr::UNSPECIFIED) {
                    segs.pop();
                }
                out = Some(Seg6Encap {
                    mode,
                    segs,
                    hmac: h.hmac,
                    tunsrc: None,
                });
            }
            RouteLwTunnelEncap::Seg6(RouteSeg6IpTunnel::Src(a)) => tunsrc = Some(*a),
            _ => {}
        }
    }
    let mut e = out.ok_or("seg6 encap without a segment list")?;
    e.tunsrc = tunsrc;
    Ok(Encap::Seg6(e))
}

fn ioam6(attrs: &[RouteLwTunnelEncap]) -> Result<Encap, String> {
    let mut e = Ioam6Encap {
        mode: IoamMode::Inline,
        tunsrc: None,
        tundst: None,
        freq_k: 1,
        freq_n: 1,
        traces: Vec::new(),
        dex: None,
        hbh_merge: false,
    };
    for a in attrs {
        let RouteLwTunnelEncap::Ioam6(a) = a else {
            continue;
        };
        match a {
            RouteIoam6Tunnel::Mode(m) => {
                e.mode = match m {
                    Ioam6Mode::Inline => IoamMode::Inline,
                    Ioam6Mode::Encap => IoamMode::Encap,
                    Ioam6Mode::Auto => IoamMode::Auto,
                    other => return Err(format!("ioam6 mode {other:?}")),
                }
            }
            RouteIoam6Tunnel::Src(a) => e.tunsrc = Some(*a),
            RouteIoam6Tunnel::Dst(a) => e.tundst = Some(*a),
            RouteIoam6Tunnel::FreqK(k) => e.freq_k = *k,
            RouteIoam6Tunnel::FreqN(n) => e.freq_n = *n,
            RouteIoam6Tunnel::Trace(t) => {
                e.traces = vec![IoamTraceSpec {
                    trace_type: t.trace_type,
                    namespace: t.namespace_id,
                    size: u16::from(t.remlen) * 4,
                }]
            }
            _ => {}
        }
    }
    if e.traces.is_empty() {
        return Err("ioam6 encap without a trace".into());
    }
    Ok(Encap::Ioam6(e))
}

fn rpl(attrs: &[RouteLwTunnelEncap]) -> Result<Encap, String> {
    for a in attrs {
        if let RouteLwTunnelEncap::Rpl(RouteRplIpTunnel::Srh(srh)) = a {
            // The route holds the header uncompressed, addresses in the order the packet visits them: the order
            // of iproute2's `segs`.
            return Ok(Encap::Rpl(RplEncap {
                segs: srh.segments.clone(),
            }));
        }
    }
    Err("rpl encap without a source routing header".into())
}

fn seg6local(attrs: &[RouteLwTunnelEncap]) -> Result<Seg6Local, String> {
    let mut s = Seg6Local::default();
    for a in attrs {
        let RouteLwTunnelEncap::Seg6Local(a) = a else {
            continue;
        };
        match a {
            RouteSeg6LocalTunnel::Action(act) => s.action = act.to_string(),
            RouteSeg6LocalTunnel::Table(t) => s.table = Some(*t),
            RouteSeg6LocalTunnel::VrfTable(t) => s.vrftable = Some(*t),
            RouteSeg6LocalTunnel::Nh4(a) => s.nh4 = Some(*a),
            RouteSeg6LocalTunnel::Nh6(a) => s.nh6 = Some(*a),
            RouteSeg6LocalTunnel::Iif(i) => s.iif = Some(ifname(*i)),
            RouteSeg6LocalTunnel::Oif(i) => s.oif = Some(ifname(*i)),
            // The SRH's segment list is stored last segment first; iproute2 shows (and takes) it first segment first.
            // Like an inline seg6 route, it ends with an all-zero slot for the packet's destination.
            RouteSeg6LocalTunnel::Srh(srh) => {
                s.srh_segs = srh.segments.iter().rev().copied().collect();
                if s.srh_segs.last() == Some(&Ipv6Addr::UNSPECIFIED) {
                    s.srh_segs.pop();
                }
            }
            _ => {}
        }
    }
    if s.action.is_empty() {
        return Err("seg6local encap without an action".into());
    }
    Ok(s)
}

impl KernelRoute {
    /// Decodes a route message; the error names what lwt6 could not read.
    pub fn from_message(msg: &RouteMessage) -> Result<KernelRoute, String> {
        let h = &msg.header;
        let v6 = match h.address_family {
            AddressFamily::Inet6 => true,
            AddressFamily::Inet => false,
            other => return Err(format!("address family {other:?}")),
        };
        let mut dst: Option<IpAddr> = None;
        let mut r = KernelRoute {
            table: u32::from(h.table),
            kind: match h.kind {
                RouteType::Unicast => RouteKind::Unicast,
                RouteType::Local => RouteKind::Local,
                RouteType::BlackHole => RouteKind::Blackhole,
                RouteType::Unreachable => RouteKind::Unreachable,
                RouteType::Prohibit => RouteKind::Prohibit,
                other => RouteKind::Other(u8::from(other)),
            },
            protocol: u8::from(h.protocol),
            prefix: IpNet::default(),
            via: None,
            dev: None,
            metric: 0,
            mtu: None,
            mtu_locked: false,
            encap: None,
            multipath: 0,
            src_len: h.source_prefix_length,
        };
        let mut encap_type = None;
        let mut encap: &[RouteLwTunnelEncap] = &[];
        for a in &msg.attributes {
            match a {
                RouteAttribute::Destination(d) => dst = addr(d),
                RouteAttribute::Gateway(g) => r.via = addr(g),
                RouteAttribute::Via(RouteVia::Inet(a)) => r.via = Some(IpAddr::V4(*a)),
                RouteAttribute::Via(RouteVia::Inet6(a)) => r.via = Some(IpAddr::V6(*a)),
                RouteAttribute::Oif(i) => r.dev = Some(ifname(*i)),
                RouteAttribute::Priority(p) => r.metric = *p,
                RouteAttribute::Table(t) => r.table = *t,
                RouteAttribute::Metrics(ms) => {
                    for m in ms {
                        match m {
                            RouteMetric::Mtu(m) => r.mtu = Some(*m),
                            // RTAX_LOCK is a mask of locked metrics, bit n for metric n; RTAX_MTU is 2.
                            RouteMetric::Lock(l) => r.mtu_locked = l & (1 << 2) != 0,
                            _ => {}
                        }
                    }
                }
                RouteAttribute::MultiPath(hops) => r.multipath = hops.len(),
                RouteAttribute::EncapType(t) => encap_type = Some(*t),
                RouteAttribute::Encap(e) => encap = e,
                _ => {}
            }
        }
        let unspecified = if v6 {
            IpAddr::V6(Ipv6Addr::UNSPECIFIED)
        } else {
            IpAddr::V4(Ipv4Addr::UNSPECIFIED)
        };
        r.prefix = IpNet::new(dst.unwrap_or(unspecified), h.destination_prefix_length)
            .map_err(|_| format!("prefix length {}", h.destination_prefix_length))?;
        use netlink_packet_route::route::RouteLwEnCapType as T;
        r.encap = match encap_type {
            None | Some(T::None) => None,
            Some(T::Seg6) => Some(KernelEncap::Tunnel(seg6(encap)?)),
            Some(T::Ioam6) => Some(KernelEncap::Tunnel(ioam6(encap)?)),
            Some(T::Rpl) => Some(KernelEncap::Tunnel(rpl(encap)?)),
            Some(T::Seg6Local) => Some(KernelEncap::Seg6Local(seg6local(encap)?)),
            Some(other) => Some(KernelEncap::Other(format!("{other:?}").to_lowercase())),
        };
        Ok(r)
    }

    /// Whether lwt6's dataplane forwards with this route as the kernel would: a single-path unicast route of
    /// the main table without a source prefix, whose tunnel (if any) lwt6 builds, towards a destination that may
    /// be forwarded at all. (`seg6local` routes are left to the endpoint behaviours; other tables need policy
    /// routing, which lwt6 does not have; link-local destinations, `fe80::/10`, are never forwarded (RFC 4291
    /// §2.5.6), and the kernel holds one `fe80::/64` route per interface, all with metric 256, where lwt6's FIB
    /// keeps one route per prefix and metric.)
    pub fn is_forwarding(&self) -> bool {
        let link_local = match self.prefix {
            IpNet::V6(p) => p.prefix_len() >= 10 && p.addr().segments()[0] & 0xffc0 == 0xfe80,
            IpNet::V4(_) => false,
        };
        !link_local
            && self.kind == RouteKind::Unicast
            && self.table == 254
            && self.multipath == 0
            && self.src_len == 0
            && matches!(self.encap, None | Some(KernelEncap::Tunnel(_)))
    }

    /// The route as the dataplane's configuration type (the `line` is 0: it came from the kernel); `None` when
    /// the route is not one lwt6 forwards with ([`KernelRoute::is_forwarding`]).
    pub fn to_spec(&self) -> Option<lwt6_dataplane::spec::Route> {
        if !self.is_forwarding() {
            return None;
        }
        Some(lwt6_dataplane::spec::Route {
            reject: None,
            prefix: self.prefix,
            via: self.via,
            dev: self.dev.as_deref().map(Into::into),
            metric: self.metric,
            table: self.table,
            mtu: self.mtu.map(|value| lwt6_dataplane::spec::RouteMtu {
                value,
                locked: self.mtu_locked,
            }),
            encap: match &self.encap {
                Some(KernelEncap::Tunnel(e)) => Some(Box::new(e.clone())),
                _ => None,
            },
            line: 0,
        })
    }

    /// The route in `ip route` syntax, as a configuration line (`-6 route add PREFIX ...`), with `table` when it
    /// is not the main table.
    pub fn to_line(&self) -> String {
        let mut s = String::new();
        let fam = if self.prefix.addr().is_ipv6() {
            "-6"
        } else {
            "-4"
        };
        let kind = match self.kind {
            RouteKind::Unicast => "",
            RouteKind::Local => "local ",
            RouteKind::Blackhole => "blackhole ",
            RouteKind::Unreachable => "unreachable ",
            RouteKind::Prohibit => "prohibit ",
            RouteKind::Other(_) => "",
        };
        let _ = write!(s, "{fam} route add {kind}{}", self.prefix);
        if let Some(e) = &self.encap {
            s.push_str(" encap ");
            match e {
                KernelEncap::Tunnel(t) => push_tunnel(&mut s, t),
                KernelEncap::Seg6Local(l) => push_seg6local(&mut s, l),
                KernelEncap::Other(name) => s.push_str(name),
            }
        }
        if let Some(v) = self.via {
            let inet6 = if v.is_ipv6() && self.prefix.addr().is_ipv4() {
                "inet6 "
            } else {
                ""
            };
            let _ = write!(s, " via {inet6}{v}");
        }
        if let Some(d) = &self.dev {
            let _ = write!(s, " dev {d}");
        }
        if self.metric != 0 {
            let _ = write!(s, " metric {}", self.metric);
        }
        if let Some(m) = self.mtu {
            let _ = write!(s, " mtu {}{m}", if self.mtu_locked { "lock " } else { "" });
        }
        if self.table != 254 {
            let _ = write!(s, " table {}", self.table);
        }
        s
    }
}

fn join(segs: &[Ipv6Addr]) -> String {
    segs.iter()
        .map(|a| a.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

fn push_tunnel(s: &mut String, t: &Encap) {
    match t {
        Encap::Seg6(e) => {
            let _ = write!(s, "seg6 mode {} segs {}", e.mode.name(), join(&e.segs));
            if let Some(k) = e.hmac {
                let _ = write!(s, " hmac {k}");
            }
            if let Some(a) = e.tunsrc {
                let _ = write!(s, " tunsrc {a}");
            }
        }
        Encap::Ioam6(e) => {
            let mode = match e.mode {
                IoamMode::Inline => "inline",
                IoamMode::Encap => "encap",
                IoamMode::Auto => "auto",
            };
            let _ = write!(s, "ioam6 mode {mode}");
            if let Some(a) = e.tunsrc {
                let _ = write!(s, " tunsrc {a}");
            }
            if let Some(a) = e.tundst {
                let _ = write!(s, " tundst {a}");
            }
            let _ = write!(s, " freq {}/{}", e.freq_k, e.freq_n);
            for t in &e.traces {
                let _ = write!(
                    s,
                    " trace prealloc type {:#08x} ns {} size {}",
                    t.trace_type, t.namespace, t.size
                );
            }
        }
        Encap::Rpl(e) => {
            let _ = write!(s, "rpl segs {}", join(&e.segs));
        }
        // The kernel's seg6local routes are decoded as `KernelEncap::Seg6Local` (`push_seg6local`), never as a
        // tunnel spec; were one given, its action is named.
        Encap::Seg6Local(l) => {
            let name = lwt6_dataplane::tunnel::seg6local::behaviour(l.action).name;
            let _ = write!(s, "seg6local action {name}");
        }
    }
}

fn push_seg6local(s: &mut String, l: &Seg6Local) {
    let _ = write!(s, "seg6local action {}", l.action);
    if let Some(t) = l.table {
        let _ = write!(s, " table {t}");
    }
    if let Some(t) = l.vrftable {
        let _ = write!(s, " vrftable {t}");
    }
    if let Some(a) = l.nh4 {
        let _ = write!(s, " nh4 {a}");
    }
    if let Some(a) = l.nh6 {
        let _ = write!(s, " nh6 {a}");
    }
    if let Some(i) = &l.iif {
        let _ = write!(s, " iif {i}");
    }
    if let Some(o) = &l.oif {
        let _ = write!(s, " oif {o}");
    }
    if !l.srh_segs.is_empty() {
        let _ = write!(s, " srh segs {}", join(&l.srh_segs));
    }
}
