//! Router state as the control socket answers `show ...` and `lwt6 show routes` and `lwt6 pcap --stats` print it:
//! the routing table as `ip route` lists it ([`routes_text`], one route in `ip -j` form in [`route_json`]), the
//! route a destination takes ([`route_get`]), SRv6 and IOAM state ([`sr`], [`ioam`]), the ports
//! ([`interfaces`]), traced frames ([`trace`]); the counters since `clear stats` ([`clear`]); the control
//! socket's verbs for them ([`inspect`]).

pub mod clear;
pub mod inspect;
pub mod interfaces;
pub mod ioam;
pub mod route_get;
pub mod route_json;
pub mod sr;
pub mod trace;

use lwt6_dataplane::fib::{Origin, RouteEntry};
use lwt6_dataplane::snapshot::Snapshot;
use lwt6_dataplane::spec::MAIN_TABLE;
use lwt6_dataplane::tunnel::Tunnel;
use lwt6_dataplane::tunnel::seg6local::{LocalCounters, table_name};

/// The routing table as `lwt6 show routes` prints it (`ip route show table all` lines, or a JSON array as `ip -j`
/// prints it), newline-terminated; with `ip -s` counters for seg6local `count` routes when `counters` are given.
pub fn routes_text(router: &Snapshot, as_json: bool, counters: Option<&[LocalCounters]>) -> String {
    if as_json {
        let v: Vec<_> = all_routes(router)
            .map(|(t, r)| route_json::route(router, t, r, counters))
            .collect();
        return format!("[{}]\n", v.join(","));
    }
    let mut text = String::new();
    for (t, r) in all_routes(router) {
        text += &route_line(router, t, r, counters);
        text.push('\n');
    }
    text
}

/// The seg6local routes with `count`, with their tables.
pub fn counted_routes(router: &Snapshot) -> impl Iterator<Item = (u32, &RouteEntry)> {
    all_routes(router).filter(|(_, r)| {
        r.tunnel
            .get()
            .is_some_and(|t| matches!(&router.tunnels[t], Tunnel::Local(l) if l.spec.count))
    })
}

/// Every route of every table, IPv6 first in each, tables in id order, each family in the kernel's dump order
/// ([`route_json::kernel_order`]), as `ip route show table all` lists them.
pub fn all_routes(router: &Snapshot) -> impl Iterator<Item = (u32, &RouteEntry)> {
    router.tables().into_iter().flat_map(|(t, f)| {
        let mut v6: Vec<_> = f.routes_v6().collect();
        let mut v4: Vec<_> = f.routes_v4().collect();
        v6.sort_by_key(|r| route_json::kernel_order(r));
        v4.sort_by_key(|r| route_json::kernel_order(r));
        v6.into_iter().chain(v4).map(move |r| (t, r))
    })
}

/// One route as `ip route show table all` prints it (with `ip -s` counters for seg6local `count` routes when
/// `counters` are given), then lwt6's effective MTU as a comment for tunnel routes.
pub fn route_line(
    router: &Snapshot,
    table: u32,
    r: &RouteEntry,
    counters: Option<&[LocalCounters]>,
) -> String {
    {
        let mut line = route_json::dst_text(r);
        if let Origin::Reject(k) = r.origin {
            line = format!("{} {line}", k.name());
        }
        if let Some(t) = r.tunnel.get() {
            let text = match &router.tunnels[t] {
                Tunnel::Local(l) => l.iproute2_stats(
                    counters
                        .map(|c| c.get(t).copied().unwrap_or_default())
                        .as_ref(),
                ),
                other => other.iproute2(),
            };
            line += &format!("  {text}");
        }
        if let Some(v) = r.via {
            line += &format!(" via {v}");
        }
        if let Some(d) = r.dev.get() {
            line += &format!(" dev {}", router.links[d].name);
        }
        if let Some(d) = route_json::reject_dev(r) {
            line += &format!(" dev {d}");
        }
        if table != MAIN_TABLE {
            line += &format!(" table {}", table_name(table));
        }
        if r.origin == Origin::Connected {
            line += " proto kernel";
        }
        if let Some(sc) = route_json::scope(r) {
            line += &format!(" scope {sc}");
        }
        if let Some(a) = route_json::prefsrc(router, r) {
            line += &format!(" src {a}");
        }
        if r.prefix.addr().is_ipv6() || r.metric != 0 {
            line += &format!(" metric {}", r.metric);
        }
        if let Some(m) = r.mtu {
            line += &format!(" mtu {m}");
        }
        if r.prefix.addr().is_ipv6() {
            line += " pref medium";
        }
        let (linux, ours) = router.route_mtu(r);
        if r.tunnel
            .get()
            .is_some_and(|t| !matches!(router.tunnels[t], Tunnel::Local(_)))
        {
            line += &format!("  # effective mtu {ours} (linux reports {linux})");
        }
        line
    }
}
