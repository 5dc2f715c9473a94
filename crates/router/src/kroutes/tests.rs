//! The kernel table's bookkeeping and the conversion of kernel routes, without a kernel (the mirror against
//! the kernel itself: tests/kernel/test_kernel_mirror.py).

use super::table::{KernelTable, Outcome};
use super::*;
use lwt6_netlink::{KernelRoute, RouteKind};

fn route(prefix: &str, via: Option<&str>, kind: RouteKind) -> KernelRoute {
    KernelRoute {
        table: 254,
        kind,
        protocol: 4,
        prefix: prefix.parse().unwrap(),
        via: via.map(|v| v.parse().unwrap()),
        dev: Some("r1".into()),
        metric: 1024,
        mtu: None,
        mtu_locked: false,
        encap: None,
        multipath: 0,
        src_len: 0,
    }
}

#[test]
fn a_replacement_to_a_blackhole_then_a_removal_leaves_nothing() {
    let mut t = KernelTable::default();
    let a = route("fd00:9c::/64", Some("fd00:2::2"), RouteKind::Unicast);
    let mut b = route("fd00:9c::/64", None, RouteKind::Blackhole);
    b.dev = None;
    assert!(matches!(t.apply(&RouteChange::Add(a)), Outcome::Applied(_)));
    assert!(matches!(
        t.apply(&RouteChange::Replace(b.clone())),
        Outcome::Applied(_)
    ));
    assert_eq!(t.get(&(b.prefix, 1024))[0].kind, RouteKind::Blackhole);
    assert!(matches!(t.apply(&RouteChange::Del(b)), Outcome::Applied(_)));
    assert_eq!(t.len(), 0);
}

#[test]
fn unclear_changes_ask_for_a_dump() {
    let mut t = KernelTable::default();
    let a = route("fd00:9c::/64", Some("fd00:2::2"), RouteKind::Unicast);
    let b = route("fd00:9c::/64", Some("fd00:2::3"), RouteKind::Unicast);
    t.apply(&RouteChange::Add(a.clone()));
    // A second route of the same prefix and metric, and the removal of one not held.
    assert_eq!(t.apply(&RouteChange::Add(b.clone())), Outcome::NeedsDump);
    assert_eq!(t.apply(&RouteChange::Del(b)), Outcome::NeedsDump);
    assert_eq!(
        t.apply(&RouteChange::Unreadable("x".into())),
        Outcome::NeedsDump
    );
    // The same addition again (a notification the dump already showed): absorbed.
    assert!(matches!(t.apply(&RouteChange::Add(a)), Outcome::Applied(_)));
    assert_eq!(t.len(), 1);
}

#[test]
fn other_tables_and_link_local_prefixes_are_not_mirrored() {
    let mut t = KernelTable::default();
    let mut a = route("fd00:9c::/64", None, RouteKind::Unicast);
    a.table = 100;
    assert_eq!(t.apply(&RouteChange::Add(a)), Outcome::Ignored);
    let b = route("fe80::/64", None, RouteKind::Unicast);
    assert_eq!(t.apply(&RouteChange::Add(b)), Outcome::Ignored);
    assert_eq!(t.len(), 0);
}

#[test]
fn drop_types_and_multipath_become_reject_routes() {
    let links = vec!["r0".to_string(), "r1".to_string()];
    for (kind, reject) in [
        (RouteKind::Blackhole, RejectKind::Blackhole),
        (RouteKind::Unreachable, RejectKind::Unreachable),
        (RouteKind::Prohibit, RejectKind::Prohibit),
    ] {
        let got = route_of(&route("fd00:9c::/64", None, kind), &links).unwrap();
        assert_eq!(got, Installed::Reject(reject));
    }
    let mut m = route("fd00:9c::/64", None, RouteKind::Unicast);
    m.multipath = 2;
    assert_eq!(
        route_of(&m, &links).unwrap(),
        Installed::Reject(RejectKind::Multipath)
    );
    let mut s = route("fd00:9c::/64", None, RouteKind::Blackhole);
    s.src_len = 64;
    assert!(
        route_of(&s, &links)
            .unwrap_err()
            .contains("source-specific")
    );
    let Installed::Route(ok) = route_of(
        &route("fd00:9c::/64", Some("fd00:2::2"), RouteKind::Unicast),
        &links,
    )
    .unwrap() else {
        panic!("not a forwarding route")
    };
    assert_eq!(ok.via, Some("fd00:2::2".parse().unwrap()));
    assert_eq!(
        (ok.metric, ok.table, ok.dev.as_deref()),
        (1024, 254, Some("r1"))
    );
}

#[test]
fn a_seg6local_route_reads_back_through_the_parser() {
    let links = vec!["r0".to_string(), "r1".to_string()];
    let mut r = route("fc00:e::/64", None, RouteKind::Unicast);
    r.encap = Some(KernelEncap::Seg6Local(lwt6_netlink::Seg6Local {
        action: "End.X".into(),
        nh6: Some("fd00:2::2".parse().unwrap()),
        ..Default::default()
    }));
    let Installed::Route(got) = route_of(&r, &links).unwrap() else {
        panic!("not a forwarding route")
    };
    let Some(Encap::Seg6Local(l)) = got.encap.as_deref() else {
        panic!("{got:?}")
    };
    assert_eq!(l.nh6, Some("fd00:2::2".parse().unwrap()));
    assert_eq!(got.dev.as_deref(), Some("r1"));
}
