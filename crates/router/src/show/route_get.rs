//! `route get ADDR [from SRC] [iif DEV] [table T] [-j]`: the route a packet to ADDR takes, as `ip -6 route get`
//! prints it (the first line, or the `ip -j` object), then what lwt6 does with it: the route's prefix and table,
//! its tunnel, the forwarding plan (kind, bytes added, egress), the next hop and its neighbour state, the effective
//! MTU, and where the XDP tier would run it (docs/live.md, *Route get*).
//!
//! The same answer comes from the control socket (`lwt6 ctl route get ...`, with the neighbours the router
//! learned) and offline from a configuration file (`lwt6 route get -c FILE ...`, static neighbours only).

use super::route_json::{Object, dst_text, encap, scope};
use lwt6_dataplane::fib::{DevId, Origin, RejectKind, RouteEntry};
use lwt6_dataplane::plan::PlanKind;
use lwt6_dataplane::snapshot::Snapshot;
use lwt6_dataplane::spec::{MAIN_TABLE, shown_token};
use lwt6_dataplane::tunnel::Tunnel;
use lwt6_dataplane::tunnel::seg6local::table_name;
use lwt6_wire::ethernet::mac_text;
use std::net::{IpAddr, Ipv6Addr};

/// A `route get` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// The destination looked up.
    pub dst: IpAddr,
    /// `from SRC`: the packet's source (shown; lwt6's routes do not depend on it).
    pub from: Option<IpAddr>,
    /// `iif DEV`: the interface the packet arrives on (a forwarded packet: no source address is selected).
    pub iif: Option<String>,
    /// `table T`: look in this table instead of main (lwt6's received packets use main only; End.T and
    /// End.DT* look in the others).
    pub table: Option<u32>,
    /// `-j`: JSON.
    pub json: bool,
}

/// What the request takes, for error messages.
const USAGE: &str = "expected: route get ADDR [from ADDR] [iif DEV] [table main|N] [-j]";

/// Parses the words after `route get`.
pub fn parse(args: &[&str]) -> Result<Query, String> {
    let mut q = Query {
        dst: IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        from: None,
        iif: None,
        table: None,
        json: false,
    };
    let mut dst = None;
    let mut i = 0;
    let value = |i: usize, what: &str| {
        args.get(i + 1)
            .copied()
            .ok_or_else(|| format!("'{what}': a value must follow ({USAGE})"))
    };
    while i < args.len() {
        let w = args[i];
        match w {
            "-j" | "--json" => q.json = true,
            "from" => {
                let v = value(i, w)?;
                q.from = Some(address(v)?);
                i += 1;
            }
            "iif" => {
                q.iif = Some(value(i, w)?.to_string());
                i += 1;
            }
            "table" => {
                let v = value(i, w)?;
                q.table = Some(match v {
                    "main" => MAIN_TABLE,
                    n => n.parse().ok().filter(|t| *t != 0).ok_or_else(|| {
                        format!(
                            "'{}': expected a table: main or 1..4294967295",
                            shown_token(n)
                        )
                    })?,
                });
                i += 1;
            }
            "to" if dst.is_none() => {
                dst = Some(address(value(i, w)?)?);
                i += 1;
            }
            _ if dst.is_none() => dst = Some(address(w)?),
            _ => return Err(format!("'{}': {USAGE}", shown_token(w))),
        }
        i += 1;
    }
    q.dst = dst.ok_or_else(|| format!("route get: no address ({USAGE})"))?;
    if q.from.is_some_and(|f| f.is_ipv6() != q.dst.is_ipv6()) {
        return Err(format!(
            "'{}': not of the same family as {}",
            q.from.map(|f| f.to_string()).unwrap_or_default(),
            q.dst
        ));
    }
    Ok(q)
}

fn address(w: &str) -> Result<IpAddr, String> {
    w.parse()
        .map_err(|_| format!("'{}': expected an address ({USAGE})", shown_token(w)))
}

/// Where a route's frames would be handled with the XDP tier on: in the driver (the plan kind it executes) or by
/// a worker (why).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// The XDP program executes the plan itself.
    Driver(lwt6_xdp::Kind),
    /// The frames go to a worker.
    Worker(lwt6_xdp::Why),
    /// The tier does not look at this table (tables other than main): the worker.
    NotInTier,
}

impl Placement {
    /// `(where, detail)`: `("driver", kind)`, `("worker", reason)`.
    pub fn words(self) -> (&'static str, &'static str) {
        match self {
            Placement::Driver(k) => ("driver", k.name()),
            Placement::Worker(w) => ("worker", w.name()),
            Placement::NotInTier => ("worker", "not_in_tier"),
        }
    }
}

/// Where the XDP tier places frames to `dst` matching route `r` of `table` (what `lwt6_xdp::tables` would put in
/// the route's LPM entry, for this route alone: the cost does not grow with the table).
pub fn placement(snap: &Snapshot, table: u32, r: &RouteEntry, dst: IpAddr) -> Placement {
    use lwt6_xdp::Why;
    if table != MAIN_TABLE {
        return Placement::NotInTier;
    }
    let local = match dst {
        IpAddr::V6(d) => snap.is_local6(&d),
        IpAddr::V4(d) => snap.is_local4(&d),
    };
    if local {
        return Placement::Worker(Why::Local);
    }
    let entry = match r.plan.and_then(|id| snap.plan(id)) {
        Some(plan) => lwt6_xdp::tables::plan_entry(snap, plan, snap.template(plan)),
        // seg6 encapsulations planned for the driver alone (l2 modes, IPv4 packets); plain IPv4 forwarding
        // and other tunnels of IPv4 routes are the worker's (`kind`).
        None => match lwt6_xdp::tables::way_entry(snap, r) {
            Err(Why::Kind) if dst.is_ipv6() => Err(Why::NoPlan),
            e => e,
        },
    };
    match entry {
        Ok(e) => lwt6_xdp::Kind::ALL
            .get(usize::from(e.kind))
            .copied()
            .map_or(Placement::Worker(lwt6_xdp::Why::BadPlan), Placement::Driver),
        Err(why) => Placement::Worker(why),
    }
}

/// A plan kind's name.
pub fn plan_kind(k: PlanKind) -> &'static str {
    match k {
        PlanKind::Forward => "forward",
        PlanKind::Seg6Encap => "seg6_encap",
        PlanKind::Seg6Inline => "seg6_inline",
        PlanKind::IoamInline => "ioam_inline",
        PlanKind::IoamEncap => "ioam_encap",
        PlanKind::Rpl => "rpl",
        PlanKind::End => "end",
        PlanKind::EndX => "end_x",
        PlanKind::EndDx6 => "end_dx6",
        PlanKind::RplFixed => "rpl_fixed",
    }
}

/// The neighbour states the router learned (`REACHABLE`, `STALE`, `DELAY`, `PROBE`), by device and address;
/// offline: none.
pub type Learned<'a> = &'a dyn Fn(DevId, IpAddr) -> Option<&'static str>;

/// The next hop of a route towards `dst`: device, address, and the route that leads there when a tunnel sends
/// the packet elsewhere (its prefix).
struct NextHop {
    dev: Option<DevId>,
    addr: Option<IpAddr>,
    via_route: Option<String>,
    /// Why there is no fixed next hop (seg6local behaviours that route each packet by its next segment).
    per_packet: Option<&'static str>,
}

fn next_hop(snap: &Snapshot, r: &RouteEntry, dst: IpAddr) -> NextHop {
    let tunnel = r.tunnel.get().and_then(|t| snap.tunnels.get(t));
    if let Some(t) = tunnel {
        if let Some(td) = t.routed_destination() {
            let next = snap.fib().lookup_v6(td);
            return NextHop {
                dev: next.and_then(|n| n.dev.get()),
                addr: Some(next.and_then(|n| n.via).unwrap_or(IpAddr::V6(td))),
                via_route: Some(next.map_or_else(|| "none".into(), |n| n.prefix.to_string())),
                per_packet: None,
            };
        }
        if matches!(t, Tunnel::Local(_)) {
            return NextHop {
                dev: None,
                addr: None,
                via_route: None,
                per_packet: Some(
                    "decided per packet by the behaviour (its next segment or inner destination)",
                ),
            };
        }
    }
    NextHop {
        dev: r.dev.get(),
        addr: Some(r.via.unwrap_or(dst)),
        via_route: None,
        per_packet: None,
    }
}

/// The state of neighbour `addr` on `dev`: `PERMANENT` (configured), what the router learned, or `none`.
fn neighbour(
    snap: &Snapshot,
    learned: Learned<'_>,
    dev: DevId,
    addr: IpAddr,
) -> (String, Option<String>) {
    match snap.neighbour(dev, addr) {
        Some((mac, stale)) => {
            let state = learned(dev, addr).unwrap_or(if stale { "STALE" } else { "PERMANENT" });
            (state.to_string(), Some(mac_text(&mac)))
        }
        None => (learned(dev, addr).unwrap_or("none").to_string(), None),
    }
}

/// Answers a `route get` over snapshot `snap`: the text or JSON, or an error (no route, no such device).
pub fn answer(snap: &Snapshot, q: &Query, learned: Learned<'_>) -> Result<String, String> {
    if let Some(d) = &q.iif
        && snap.dev_id(d).is_none()
    {
        return Err(format!("'{}': no such device", shown_token(d)));
    }
    let table = q.table.unwrap_or(MAIN_TABLE);
    let local = table == MAIN_TABLE
        && match q.dst {
            IpAddr::V6(a) => snap.is_local6(&a),
            IpAddr::V4(a) => snap.is_local4(&a),
        };
    if local {
        return Ok(local_answer(q));
    }
    let fib = snap
        .table(table)
        .ok_or_else(|| format!("table {}: no such table", table_name(table)))?;
    let r = match q.dst {
        IpAddr::V6(a) => fib.lookup_v6(a),
        IpAddr::V4(a) => fib.lookup_v4(a),
    }
    .ok_or_else(|| {
        format!(
            "no route to {} in table {} (Network is unreachable)",
            q.dst,
            table_name(table)
        )
    })?;
    if let Origin::Reject(k) = r.origin {
        return Err(reject_error(k, q.dst, table));
    }
    let src = match (&q.iif, q.dst) {
        (None, IpAddr::V6(d)) => snap.source_for(r.dev.get(), &d).map(IpAddr::V6),
        (None, IpAddr::V4(d)) => r.dev.get().and_then(|dev| {
            let addrs = &snap.links[dev].addrs4;
            addrs
                .iter()
                .find(|(a, len)| {
                    let mask = u32::MAX.checked_shl(32 - u32::from(*len)).unwrap_or(0);
                    u32::from(*a) & mask == u32::from(d) & mask
                })
                .or(addrs.first())
                .map(|(a, _)| IpAddr::V4(*a))
        }),
        _ => None,
    };
    // IPv4 (`ip -4 route get`): no `src` when the source is given.
    let src = src.filter(|_| q.dst.is_ipv6() || q.from.is_none());
    let v6 = q.dst.is_ipv6();
    let nh = next_hop(snap, r, q.dst);
    let plan = r.plan.and_then(|id| snap.plan(id));
    let place = placement(snap, table, r, q.dst);
    let (linux_mtu, mtu) = snap.route_mtu(r);
    let tunnel = r.tunnel.get().and_then(|t| snap.tunnels.get(t));
    let neigh = match (nh.dev, nh.addr) {
        (Some(d), Some(a)) => Some(neighbour(snap, learned, d, a)),
        _ => None,
    };
    let dev_name = |d: DevId| snap.links[d].name.clone();
    if q.json {
        let mut o = Object::default();
        o.put("dst", q.dst.to_string());
        if v6 || q.from.is_some() {
            o.put(
                "from",
                q.from.map_or_else(|| "::".into(), |f| f.to_string()),
            );
        }
        if let Some(t) = tunnel {
            encap(&mut o, t, None);
        }
        if let Some(v) = r.via {
            o.put("gateway", v.to_string());
        }
        if let Some(d) = r.dev.get() {
            o.put("dev", dev_name(d));
        }
        if table != MAIN_TABLE {
            o.put("table", table_name(table));
        }
        if v6 && r.origin == Origin::Connected {
            o.put("protocol", "kernel");
        }
        if let Some(s) = scope(r).filter(|_| v6) {
            o.put("scope", s);
        }
        if let Some(s) = src {
            o.put("prefsrc", s.to_string());
        }
        if v6 {
            o.put("metric", r.metric);
        }
        o.put("flags", [(); 0]);
        if !v6 {
            o.put("cache", [(); 0]);
        }
        if let Some(m) = r.mtu {
            let mut x = Object::default();
            x.put("mtu", m.value);
            o.put_raw("metrics", format!("[{}]", x.to_json()));
        }
        if let Some(d) = &q.iif {
            o.put("iif", d);
        }
        if q.dst.is_ipv6() {
            o.put("pref", "medium");
        }
        let mut ours = Object::default();
        ours.put("route", r.prefix.to_string())
            .put("table", table_name(table));
        if r.line != 0 {
            ours.put("line", r.line);
        }
        if let Some(t) = tunnel {
            let mut x = Object::default();
            x.put("kind", t.kind().name())
                .put("encap", t.iproute2())
                .put("added", t.overhead())
                .put("linux_headroom", t.linux_mtu_headroom());
            if let Some(d) = t.routed_destination() {
                x.put("routes_to", d.to_string());
            }
            ours.put_object("tunnel", x);
        }
        match plan {
            Some(p) => {
                let mut x = Object::default();
                x.put("kind", plan_kind(p.kind))
                    .put("added", p.growth)
                    .put("egress", dev_name(p.egress))
                    .put("max_len", p.max_len);
                ours.put_object("plan", x);
            }
            None => {
                ours.put("plan", serde_json::Value::Null);
            }
        }
        let mut x = Object::default();
        if let Some(d) = nh.dev {
            x.put("dev", dev_name(d));
        }
        if let Some(a) = nh.addr {
            x.put("addr", a.to_string());
        }
        if let Some(v) = &nh.via_route {
            x.put("route", v);
        }
        if let Some(why) = nh.per_packet {
            x.put("per_packet", why);
        }
        if let Some((state, mac)) = &neigh {
            x.put("state", state);
            if let Some(m) = mac {
                x.put("lladdr", m);
            }
        }
        ours.put_object("next_hop", x);
        ours.put("effective_mtu", mtu)
            .put("linux_effective_mtu", linux_mtu);
        let (tier, detail) = place.words();
        let mut x = Object::default();
        x.put("tier", tier);
        match place {
            Placement::Driver(_) => x.put("kind", detail),
            _ => x.put("why", detail),
        };
        ours.put_object("xdp", x);
        o.put_object("lwt6", ours);
        return Ok(format!("[{}]\n", o.to_json()));
    }
    // The line `ip route get` prints.
    let mut line = q.dst.to_string();
    if v6 || q.from.is_some() {
        line += &format!(
            " from {}",
            q.from.map_or_else(|| "::".into(), |f| f.to_string())
        );
    }
    if let Some(t) = tunnel {
        line += &format!("  {}", t.iproute2());
    }
    if let Some(v) = r.via {
        line += &format!(" via {v}");
    }
    if let Some(d) = r.dev.get() {
        line += &format!(" dev {}", dev_name(d));
    }
    if table != MAIN_TABLE {
        line += &format!(" table {}", table_name(table));
    }
    if v6 && r.origin == Origin::Connected {
        line += " proto kernel";
    }
    if let Some(s) = src {
        line += &format!(" src {s}");
    }
    if v6 {
        line += &format!(" metric {}", r.metric);
    } else {
        // `ip -4 route get` prints the route cache entry's attributes on a line of their own (and the
        // requester's `uid`, which lwt6 leaves out).
        line += "\n    cache";
    }
    if let Some(m) = r.mtu {
        line += &format!(" mtu {m}");
    }
    if let Some(d) = &q.iif {
        line += &format!(" iif {d}");
    }
    if v6 {
        line += " pref medium";
    }
    let mut s = format!("{line}\n");
    s += &format!("    route {} table {}", dst_text(r), table_name(table));
    if r.line != 0 {
        s += &format!(" (configuration line {})", r.line);
    }
    s.push('\n');
    if let Some(t) = tunnel {
        s += &format!(
            "    tunnel {} adds {} bytes (linux counts {})",
            t.kind().name(),
            t.overhead(),
            t.linux_mtu_headroom()
        );
        if let Some(d) = t.routed_destination() {
            s += &format!(", routes to {d}");
        }
        s.push('\n');
    }
    match plan {
        Some(p) => {
            s += &format!(
                "    plan {}, adds {} bytes, egress {}, packets up to {} bytes\n",
                plan_kind(p.kind),
                p.growth,
                dev_name(p.egress),
                p.max_len
            )
        }
        None => s += "    plan none: every packet takes the general path\n",
    }
    match (nh.per_packet, nh.dev, nh.addr) {
        (Some(why), _, _) => s += &format!("    next hop {why}\n"),
        (None, dev, addr) => {
            s += "    next hop";
            if let Some(a) = addr {
                s += &format!(" {a}");
            }
            if let Some(d) = dev {
                s += &format!(" dev {}", dev_name(d));
            }
            if let Some(v) = &nh.via_route {
                s += &format!(" (route {v})");
            }
            if let Some((state, mac)) = &neigh {
                s += &format!(", neighbour {state}");
                if let Some(m) = mac {
                    s += &format!(" lladdr {m}");
                }
            }
            s.push('\n');
        }
    }
    s += &format!("    effective mtu {mtu} (linux reports {linux_mtu})\n");
    let (tier, detail) = place.words();
    s += &match place {
        Placement::Driver(_) => format!("    xdp tier: {tier}, plan {detail}\n"),
        _ => format!("    xdp tier: {tier} ({detail})\n"),
    };
    Ok(s)
}

/// A destination that is one of the router's addresses, as the kernel answers it (its `local` table).
/// The refusal of a `route get` that finds a route that drops: the kernel answers with the route's error,
/// "Invalid argument" (blackhole), "No route to host" (unreachable), "Permission denied" (prohibit), as
/// `ip route get` prints it.
fn reject_error(k: RejectKind, dst: IpAddr, table: u32) -> String {
    let why = match k {
        RejectKind::Blackhole => "Invalid argument",
        RejectKind::Unreachable => "No route to host",
        RejectKind::Prohibit => "Permission denied",
        RejectKind::Multipath => "a kernel multipath route lwt6 does not forward over",
    };
    format!(
        "{} route to {dst} in table {} ({why})",
        k.name(),
        table_name(table)
    )
}

fn local_answer(q: &Query) -> String {
    let from = q.from.map_or_else(|| "::".into(), |f| f.to_string());
    if q.json && !q.dst.is_ipv6() {
        // As `ip -4 -j route get` writes it (without the requester's `uid`).
        let mut o = Object::default();
        o.put("type", "local").put("dst", q.dst.to_string());
        if let Some(f) = q.from {
            o.put("from", f.to_string());
        }
        o.put("dev", "lo");
        if q.iif.is_none() && q.from.is_none() {
            o.put("prefsrc", q.dst.to_string());
        }
        o.put("flags", [(); 0]).put("cache", ["local"]);
        if let Some(d) = &q.iif {
            o.put("iif", d);
        }
        let mut ours = Object::default();
        ours.put("local", true);
        o.put_object("lwt6", ours);
        return format!("[{}]\n", o.to_json());
    }
    if q.json {
        let mut o = Object::default();
        o.put("type", "local").put("dst", q.dst.to_string());
        if q.dst.is_ipv6() {
            o.put("from", &from);
        }
        o.put("dev", "lo")
            .put("table", "local")
            .put("protocol", "kernel");
        if q.iif.is_none() {
            o.put("prefsrc", q.dst.to_string());
        }
        o.put("metric", 0).put("flags", [(); 0]);
        if let Some(d) = &q.iif {
            o.put("iif", d);
        }
        if q.dst.is_ipv6() {
            o.put("pref", "medium");
        }
        let mut ours = Object::default();
        ours.put("local", true);
        o.put_object("lwt6", ours);
        return format!("[{}]\n", o.to_json());
    }
    let mut line = format!("local {}", q.dst);
    if !q.dst.is_ipv6() {
        // As `ip -4 route get` prints it (without the requester's `uid`).
        if let Some(f) = q.from {
            line += &format!(" from {f}");
        }
        line += " dev lo";
        if q.iif.is_none() && q.from.is_none() {
            line += &format!(" src {}", q.dst);
        }
        line += "\n    cache <local>";
        if let Some(d) = &q.iif {
            line += &format!(" iif {d}");
        }
        return format!(
            "{line}\n    one of the router's addresses: delivered to the router itself\n"
        );
    }
    line += &format!(" from {from}");
    line += " dev lo table local proto kernel";
    if q.iif.is_none() {
        line += &format!(" src {}", q.dst);
    }
    line += " metric 0";
    if let Some(d) = &q.iif {
        line += &format!(" iif {d}");
    }
    if q.dst.is_ipv6() {
        line += " pref medium";
    }
    format!("{line}\n    one of the router's addresses: delivered to the router itself\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipnet::IpNet;

    /// [`placement`] of one route is what the XDP tier's own tables put in that route's entry.
    #[test]
    fn placement_is_the_xdp_tables_entry() {
        let text = "link add r0 address 02:00:00:00:01:02\nlink add r1 address 02:00:00:00:02:01\n\
            addr add fd00:1::1/64 dev r0\naddr add fd00:2::1/64 dev r1\n\
            neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1\n\
            -6 route add fd00:55::/64 via fd00:2::2 dev r1\n\
            -6 route add fd00:56::/64 encap seg6 mode encap segs fc00::1 dev r1\n\
            -6 route add fd00:57::/64 encap seg6 mode inline segs fc00::1,fc00::2 dev r1\n\
            -6 route add fd00:58::/64 via fd00:2::9 dev r1\n\
            -6 route add fd00:59::/64 encap ioam6 trace prealloc type 0x800000 ns 1 size 12 via fd00:2::2 dev r1\n\
            ioam namespace add 1\n\
            -6 route add fc00::/16 via fd00:2::2 dev r1\n\
            -6 route add fc00:1::100/128 encap seg6local action End dev r1\n\
            -6 route add fc00:1::101/128 encap seg6local action End count dev r1\n\
            -6 route add fd00:5a::/64 encap seg6 mode l2encap segs fc00::1 dev r1\n\
            addr add 10.0.2.1/24 dev r1\n\
            -4 route add 10.9.0.0/16 encap seg6 mode encap.red segs fc00::1,fc00::2 dev r1\n\
            -4 route add 10.8.0.0/16 encap seg6 mode l2encap segs fc00::1 dev r1\n\
            -4 route add 10.7.0.0/16 via 10.0.2.2 dev r1\n";
        let snap = Snapshot::build(&lwt6_config::parse(text).unwrap()).unwrap();
        let tables = lwt6_xdp::tables(&snap);
        let mut seen = std::collections::HashSet::new();
        for r in snap.fib().routes_v6() {
            let IpNet::V6(net) = r.prefix else { continue };
            let want = match tables
                .placement(&net)
                .expect("every main IPv6 route has an entry")
            {
                Ok(k) => Placement::Driver(k),
                Err(w) => Placement::Worker(w),
            };
            let got = placement(&snap, MAIN_TABLE, r, IpAddr::V6(net.network()));
            assert_eq!(got, want, "{net}");
            seen.insert(got.words().0);
        }
        assert_eq!(seen.len(), 2, "both tiers are exercised");
        let mut kinds = Vec::new();
        for r in snap.fib().routes_v4() {
            let IpNet::V4(net) = r.prefix else { continue };
            let (_, v) = tables
                .routes4
                .iter()
                .find(|(n, _)| *n == net)
                .expect("every main IPv4 route has an entry");
            let want = match tables.plans.get(v.plan as usize) {
                Some(p) => Placement::Driver(lwt6_xdp::Kind::ALL[usize::from(p.kind)]),
                None => Placement::Worker(
                    *lwt6_xdp::Why::ALL
                        .iter()
                        .find(|w| **w as u32 == v.why)
                        .unwrap(),
                ),
            };
            let got = placement(&snap, MAIN_TABLE, r, IpAddr::V4(net.network()));
            assert_eq!(got, want, "{net}");
            kinds.push(got);
        }
        assert!(kinds.contains(&Placement::Driver(lwt6_xdp::Kind::Seg6EncapV4)));
        assert!(kinds.contains(&Placement::Driver(lwt6_xdp::Kind::Seg6L2EncapV4)));
        assert!(kinds.contains(&Placement::Worker(lwt6_xdp::Why::Kind)));
        // The other tables are not the tier's.
        let r = snap.fib().routes_v6().next().unwrap();
        assert_eq!(
            placement(&snap, 100, r, r.prefix.addr()),
            Placement::NotInTier
        );
    }
}
