//! Routes configured with `ip route` in a network namespace, read back over rtnetlink: the dump and the live
//! changes. Needs root (namespaces); these tests FAIL, not skip, without it. Namespaces are named
//! `l6n-<pid>-<test>` and deleted on every exit path (the guard's Drop also runs when a test panics).
//!
//! The expected values are the `ip route` commands' own arguments. This kernel has no `ioam6` or `rpl`
//! lightweight tunnels, so only `seg6`, `seg6local` and plain routes can be exercised here.

use std::net::{IpAddr, Ipv6Addr};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use lwt6_dataplane::spec::{Encap, Seg6Encap, Seg6Mode};
use lwt6_netlink::{
    KernelEncap, KernelRoute, RouteChange, RouteKind, RouteMonitor, Seg6Local, dump,
};

#[path = "../../../tests/support/netns.rs"]
mod netns;

/// Runs `ip -n NS ARGS...`.
fn ip(ns: &str, args: &str) {
    let mut a = vec!["-n", ns];
    a.extend(args.split_whitespace());
    netns::ip(&a);
}

/// A namespace with a veth pair d0/d1 (d0: fd00::1/64, 10.0.0.1/24); deleted on drop.
struct Ns(String);

impl Ns {
    fn new(test: &str) -> Ns {
        netns::require_root("crates/netlink/tests/kernel_routes.rs");
        let name = format!("l6n-{}-{test}", std::process::id());
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        netns::ip(&["netns", "add", &name]);
        let ns = Ns(name);
        netns::sysctl(&ns.0, "net.ipv6.conf.default.accept_dad=0");
        ip(&ns.0, "link add d0 type veth peer name d1");
        ip(&ns.0, "link set d0 up");
        ip(&ns.0, "link set d1 up");
        ip(&ns.0, "addr add fd00::1/64 dev d0 nodad");
        ip(&ns.0, "addr add 10.0.0.1/24 dev d0");
        ns
    }

    /// Runs `f` on a thread inside the namespace.
    fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> T {
        let ns = self.0.clone();
        thread::spawn(move || {
            netns::enter(&ns);
            f()
        })
        .join()
        .expect("namespace thread")
    }
}

impl Drop for Ns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).output();
    }
}

fn v6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

fn find<'a>(routes: &'a [KernelRoute], prefix: &str) -> &'a KernelRoute {
    let p = prefix.parse().unwrap();
    routes
        .iter()
        .find(|r| r.prefix == p)
        .unwrap_or_else(|| panic!("no route {prefix} in {routes:#?}"))
}

#[test]
fn dump_reads_seg6_seg6local_and_plain_routes() {
    let ns = Ns::new("dump");
    #[rustfmt::skip]
    let cmds = [
        "-6 route add fc00:1::/64 encap seg6 mode encap segs fc00::1,fc00::2 dev d0 metric 5",
        "-6 route add fc00:2::/64 encap seg6 mode inline segs fc00::3 dev d0",
        "-6 route add fc00:3::/64 encap seg6 mode encap.red segs fc00::4,fc00::5 dev d0",
        "-6 route add fc00:6::/64 encap seg6 mode l2encap segs fc00::6 dev d0",
        "-6 route add fc00:4::/64 via fd00::2 dev d0 table 100 mtu 1400",
        "-6 route add fc00:5::1/128 encap seg6local action End.DT6 table 254 dev d0",
        "-6 route add fc00:5::2/128 encap seg6local action End.X nh6 fd00::2 dev d0",
        "-6 route add fc00:5::3/128 encap seg6local action End.B6 srh segs fc00::a,fc00::b dev d0",
        "-4 route add 10.9.0.0/16 via 10.0.0.2 dev d0",
        "-4 route add 10.8.0.0/16 encap seg6 mode encap segs fc00::1 dev d0",
        "-6 route add blackhole fc00:dead::/32",
    ];
    for c in cmds {
        ip(&ns.0, c);
    }
    let changes = ns.run(dump).expect("dump");
    let unreadable: Vec<_> = changes
        .iter()
        .filter(|c| matches!(c, RouteChange::Unreadable(_)))
        .collect();
    assert!(unreadable.is_empty(), "{unreadable:?}");
    let routes: Vec<KernelRoute> = changes
        .into_iter()
        .map(|c| match c {
            RouteChange::Add(r) => r,
            other => panic!("a dump yields additions, got {other:?}"),
        })
        .collect();

    let seg6 = |mode, segs: &[&str]| {
        Some(KernelEncap::Tunnel(Encap::Seg6(Seg6Encap {
            mode,
            segs: segs.iter().map(|s| v6(s)).collect(),
            hmac: None,
            tunsrc: None,
        })))
    };
    let r = find(&routes, "fc00:1::/64");
    assert_eq!(r.encap, seg6(Seg6Mode::Encap, &["fc00::1", "fc00::2"]));
    assert_eq!(
        (r.dev.as_deref(), r.metric, r.table, r.kind),
        (Some("d0"), 5, 254, RouteKind::Unicast)
    );
    assert!(r.is_forwarding());
    // The configuration line is the command that made the route.
    assert_eq!(
        r.to_line(),
        "-6 route add fc00:1::/64 encap seg6 mode encap segs fc00::1,fc00::2 dev d0 metric 5"
    );
    let spec = r.to_spec().expect("a forwarding route");
    assert_eq!(
        (spec.prefix, spec.metric, spec.via),
        ("fc00:1::/64".parse().unwrap(), 5, None)
    );

    // Inline: the kernel's trailing all-zero slot is not a segment.
    assert_eq!(
        find(&routes, "fc00:2::/64").encap,
        seg6(Seg6Mode::Inline, &["fc00::3"])
    );
    assert_eq!(
        find(&routes, "fc00:2::/64").metric,
        1024,
        "IPv6 default metric"
    );
    assert_eq!(
        find(&routes, "fc00:3::/64").encap,
        seg6(Seg6Mode::EncapRed, &["fc00::4", "fc00::5"])
    );
    assert_eq!(
        find(&routes, "fc00:6::/64").encap,
        seg6(Seg6Mode::L2Encap, &["fc00::6"])
    );

    let r = find(&routes, "fc00:4::/64");
    assert_eq!(
        (r.table, r.mtu, r.via),
        (100, Some(1400), Some(IpAddr::V6(v6("fd00::2"))))
    );
    assert!(
        !r.is_forwarding() && r.to_spec().is_none(),
        "table 100 needs policy routing"
    );
    assert_eq!(
        r.to_line(),
        "-6 route add fc00:4::/64 via fd00::2 dev d0 metric 1024 mtu 1400 table 100"
    );

    let local = |r: &KernelRoute| match &r.encap {
        Some(KernelEncap::Seg6Local(l)) => l.clone(),
        other => panic!("seg6local expected, got {other:?}"),
    };
    let l = local(find(&routes, "fc00:5::1/128"));
    assert_eq!(
        l,
        Seg6Local {
            action: "End.DT6".into(),
            table: Some(254),
            ..Default::default()
        }
    );
    let l = local(find(&routes, "fc00:5::2/128"));
    assert_eq!(
        l,
        Seg6Local {
            action: "End.X".into(),
            nh6: Some(v6("fd00::2")),
            ..Default::default()
        }
    );
    let r = find(&routes, "fc00:5::3/128");
    assert_eq!(local(r).srh_segs, vec![v6("fc00::a"), v6("fc00::b")]);
    assert_eq!(
        r.to_line(),
        "-6 route add fc00:5::3/128 encap seg6local action End.B6 srh segs fc00::a,fc00::b dev d0 metric 1024"
    );
    assert!(
        !r.is_forwarding(),
        "seg6local routes are endpoint behaviours"
    );

    let r = find(&routes, "10.9.0.0/16");
    assert_eq!(
        (r.via, r.metric, r.dev.as_deref()),
        (Some("10.0.0.2".parse().unwrap()), 0, Some("d0"))
    );
    assert_eq!(r.to_line(), "-4 route add 10.9.0.0/16 via 10.0.0.2 dev d0");
    assert_eq!(
        find(&routes, "10.8.0.0/16").encap,
        seg6(Seg6Mode::Encap, &["fc00::1"])
    );
    assert_eq!(find(&routes, "fc00:dead::/32").kind, RouteKind::Blackhole);
    // The connected route and the local table are there too.
    assert_eq!(find(&routes, "fd00::/64").protocol, 2, "proto kernel");
    assert!(
        routes
            .iter()
            .any(|r| r.table == 255 && r.kind == RouteKind::Local),
        "the local table"
    );
}

/// Whether a change is one the tests made: not the kernel's own link-local and local-table routes, which it adds
/// by itself when an interface's link-local address becomes valid.
fn ours(c: &RouteChange) -> bool {
    match c {
        RouteChange::Add(r) | RouteChange::Replace(r) | RouteChange::Del(r) => {
            r.table != 255 && !r.prefix.to_string().starts_with("fe80:")
        }
        RouteChange::Unreadable(_) => true,
    }
}

/// Our changes received within five seconds, until `want` arrived.
fn collect(m: &mut RouteMonitor, want: usize) -> Vec<RouteChange> {
    let mut out = Vec::new();
    let t = Instant::now();
    while out.len() < want && t.elapsed() < Duration::from_secs(5) {
        out.extend(m.poll().expect("poll").into_iter().filter(ours));
        thread::sleep(Duration::from_millis(10));
    }
    out
}

#[test]
fn monitor_sees_routes_added_and_removed() {
    let ns = Ns::new("mon");
    let name = ns.0.clone();
    let changes = ns.run(move || {
        let mut m = RouteMonitor::new().expect("subscribe");
        let before: Vec<_> = m.poll().expect("poll").into_iter().filter(ours).collect();
        assert!(before.is_empty(), "nothing changed yet: {before:?}");
        ip(
            &name,
            "-6 route add fc00:9::/64 encap seg6 mode encap segs fc00::7,fc00::8 dev d0",
        );
        ip(&name, "-4 route add 10.77.0.0/16 via 10.0.0.9 dev d0");
        ip(
            &name,
            "-6 route replace fc00:9::/64 encap seg6 mode inline segs fc00::6 dev d0",
        );
        ip(&name, "-6 route del fc00:9::/64");
        let mut got = collect(&mut m, 4);
        // The blocking iterator yields the same kind of changes.
        ip(&name, "-6 route add fc00:10::/64 dev d0");
        got.extend(m.by_ref().map(|c| c.expect("readable")).find(ours));
        got
    });
    let described: Vec<String> = changes
        .iter()
        .map(|c| match c {
            RouteChange::Add(r) => format!("add {}", r.to_line()),
            RouteChange::Replace(r) => format!("replace {}", r.to_line()),
            RouteChange::Del(r) => format!("del {}", r.to_line()),
            RouteChange::Unreadable(why) => format!("unreadable {why}"),
        })
        .collect();
    assert_eq!(
        described,
        [
            "add -6 route add fc00:9::/64 encap seg6 mode encap segs fc00::7,fc00::8 dev d0 metric 1024",
            "add -4 route add 10.77.0.0/16 via 10.0.0.9 dev d0",
            "replace -6 route add fc00:9::/64 encap seg6 mode inline segs fc00::6 dev d0 metric 1024",
            "del -6 route add fc00:9::/64 encap seg6 mode inline segs fc00::6 dev d0 metric 1024",
            "add -6 route add fc00:10::/64 dev d0 metric 1024",
        ]
    );
}

#[test]
fn kernel_table_becomes_a_snapshot_and_follows_changes() {
    use lwt6_dataplane::snapshot::Snapshot;
    let ns = Ns::new("snap");
    ip(
        &ns.0,
        "-6 route add fc00:1::/64 encap seg6 mode encap segs fc00::1,fc00::2 dev d0",
    );
    ip(
        &ns.0,
        "-6 route add fc00:5::1/128 encap seg6local action End.DT6 table 254 dev d0",
    );
    ip(
        &ns.0,
        "-6 route add fc00:4::/64 via fd00::2 dev d0 table 100",
    );
    ip(&ns.0, "-4 route add 10.9.0.0/16 via 10.0.0.2 dev d0");
    let name = ns.0.clone();
    let (snap, applied) = ns.run(move || {
        // The links come from the configuration; the routes from the kernel (its connected routes included).
        let cfg = lwt6_config::parse("link add d0\nlink add d1").expect("config");
        let mut snap = Snapshot::build(&cfg).expect("snapshot");
        let mut monitor = RouteMonitor::new().expect("subscribe");
        let mut applied = 0;
        for c in dump()
            .expect("dump")
            .iter()
            .flat_map(RouteChange::to_changes)
        {
            snap.apply(&c).unwrap_or_else(|e| panic!("{c:?}: {e}"));
            applied += 1;
        }
        ip(&name, "-6 route del fc00:1::/64");
        ip(
            &name,
            "-6 route add fc00:2::/64 encap seg6 mode encap segs fc00::3 dev d0",
        );
        ip(&name, "-4 route replace 10.9.0.0/16 via 10.0.0.3 dev d0");
        for c in collect(&mut monitor, 3)
            .iter()
            .flat_map(RouteChange::to_changes)
        {
            snap.apply(&c).unwrap_or_else(|e| panic!("{c:?}: {e}"));
        }
        (snap, applied)
    });
    let fib = snap.fib();
    let has = |p: &str, metric| fib.contains(p.parse().unwrap(), metric);
    assert!(
        has("fd00::/64", 256) && has("10.0.0.0/24", 0),
        "connected routes"
    );
    assert!(has("fc00:2::/64", 1024), "the live addition");
    assert!(!has("fc00:1::/64", 1024), "the live removal");
    assert!(
        !has("fc00:4::/64", 1024) && !has("fc00:5::1/128", 1024),
        "other tables and seg6local are not forwarded"
    );
    let r = fib.lookup_v6(v6("fc00:2::9")).expect("a route");
    assert!(r.tunnel.get().is_some(), "the seg6 route has its tunnel");
    let r = fib.lookup_v4("10.9.1.1".parse().unwrap()).expect("a route");
    assert_eq!(r.via, Some("10.0.0.3".parse().unwrap()), "the replacement");
    // fd00::/64, 10.0.0.0/24, 10.9.0.0/16, fc00:1::/64 (not the link-local fe80::/64 of d0 and d1).
    assert_eq!(applied, 4);
}
