//! Transactions on a running configuration (`Builder::transaction`, what `lwt6 ctl` requests go through): lines
//! applied as one step give what the same lines at the end of the file give; a request that fails anywhere (a
//! line, or a whole-request check) leaves the configuration exactly as it was, route index included; the routes a
//! transaction reports changed are those that differ between the configurations before and after.

use lwt6_config::{Builder, Config, Route, RouteDelta, parse};
use proptest::prelude::*;
use std::collections::HashMap;

/// A running router: links, addresses, neighbours, routes in two tables, a seg6 route with HMAC, an ioam6 route
/// with a trace, IOAM namespace and domain, sysctls.
const BASE: &str = "link add r0 address 02:00:00:00:01:02
link add r1 address 02:00:00:00:02:01
addr add fd00:1::2/64 dev r0
addr add fd00:2::1/64 dev r1
neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1
sr hmac set 42 sha256 secret mysecret
ioam namespace add 123 data 0xdeadbeef
-6 route add fc00::/16 via fd00:2::2 dev r1
-6 route add 2001:db8:1::/48 encap seg6 mode encap segs fc00::a,fc00::b hmac 42 dev r1
-6 route add 2001:db8:2::/48 encap ioam6 mode encap tundst fc00::9 trace prealloc type 0x800000 ns 123 size 12 dev r1
-6 route add 2001:db8:3::/48 via fd00:2::2 dev r1 metric 10
-6 route add 2001:db8:3::/48 via fd00:1::1 dev r0 metric 20
-6 route add 2001:db8:4::/48 dev r1 table 100
-6 route add 2001:db8:5::/48 via fd00:2::2 dev r1
sysctl net.ipv6.conf.all.seg6_enabled=1
";

fn base() -> Config {
    parse(BASE).expect("the base configuration parses")
}

/// A route as the table holds it, its line left out (lines are numbered per file, or per request).
fn shape(r: &Route) -> String {
    let mut r = r.clone();
    r.line = 0;
    format!("{r:?}")
}

/// The routes as a sorted list of shapes.
fn route_set(c: &Config) -> Vec<String> {
    let mut v: Vec<String> = c.routes.iter().map(shape).collect();
    v.sort();
    v
}

/// Applies `lines` (numbered after the base file's lines) in a transaction and commits it.
fn commit(b: &mut Builder<'_>, lines: &[&str]) -> RouteDelta {
    let first = BASE.lines().count() + 1;
    let mut tx = b.transaction();
    for (i, l) in lines.iter().enumerate() {
        tx.line(first + i, l).unwrap_or_else(|e| panic!("{l}: {e}"));
    }
    let delta = tx
        .check()
        .expect("the request passes the whole-request checks");
    tx.commit();
    delta
}

#[test]
fn a_committed_transaction_is_the_file_with_its_lines_appended() {
    let lines = [
        "-6 route add 2001:db8:10::/48 via fd00:2::2 dev r1",
        "-6 route del fc00::/16",
        "-6 route replace 2001:db8:1::/48 encap seg6 mode inline segs fc00::c dev r1",
        "-6 route change 2001:db8:5::/48 via fd00:1::1 dev r0",
        // No metric: the lowest (10) goes, 20 stays.
        "-6 route del 2001:db8:3::/48",
        "-6 route add 2001:db8:11::/48 via fd00:2::2 dev r1",
        "-6 route del 2001:db8:11::/48",
        "-6 route add 2001:db8:12::/48 dev r1 table 100",
        "-6 route add 2001:db8:13::/48 encap ioam6 trace prealloc type 0x800000 ns 123 size 12 dev r1",
    ];
    let mut b = Builder::from_config(base());
    let delta = commit(&mut b, &lines);
    let whole = parse(&format!("{BASE}{}\n", lines.join("\n"))).expect("the whole file parses");
    assert_eq!(b.config(), &whole, "transaction and file differ");
    // The routes that remain, written by hand.
    let expected = parse(
        "link add r0\nlink add r1\nsr hmac set 42 sha256 secret mysecret\nioam namespace add 123\n\
         -6 route add 2001:db8:1::/48 encap seg6 mode inline segs fc00::c dev r1\n\
         -6 route add 2001:db8:2::/48 encap ioam6 mode encap tundst fc00::9 trace prealloc type 0x800000 ns 123 size 12 dev r1\n\
         -6 route add 2001:db8:3::/48 via fd00:1::1 dev r0 metric 20\n\
         -6 route add 2001:db8:4::/48 dev r1 table 100\n\
         -6 route add 2001:db8:5::/48 via fd00:1::1 dev r0\n\
         -6 route add 2001:db8:10::/48 via fd00:2::2 dev r1\n\
         -6 route add 2001:db8:12::/48 dev r1 table 100\n\
         -6 route add 2001:db8:13::/48 encap ioam6 trace prealloc type 0x800000 ns 123 size 12 dev r1\n",
    )
    .unwrap();
    assert_eq!(route_set(b.config()), route_set(&expected));
    // Removed: fc00::/16, the old 2001:db8:1::/48 and :5::/48, :3::/48 metric 10. Added: :10::, the new :1:: and
    // :5::, :12:: and :13:: (:11:: came and went).
    let prefixes = |v: &[Route]| {
        let mut p: Vec<String> = v
            .iter()
            .map(|r| format!("{} {}", r.prefix, r.metric))
            .collect();
        p.sort();
        p
    };
    assert!(!delta.other_lines);
    assert_eq!(
        prefixes(&delta.removed),
        [
            "2001:db8:1::/48 1024",
            "2001:db8:3::/48 10",
            "2001:db8:5::/48 1024",
            "fc00::/16 1024"
        ]
    );
    assert_eq!(
        prefixes(&delta.added),
        [
            "2001:db8:10::/48 1024",
            "2001:db8:12::/48 1024",
            "2001:db8:13::/48 1024",
            "2001:db8:1::/48 1024",
            "2001:db8:5::/48 1024"
        ]
    );
}

/// ` table T` for a route outside the main table.
fn table(r: &Route) -> String {
    if r.table == lwt6_config::MAIN_TABLE {
        String::new()
    } else {
        format!(" table {}", r.table)
    }
}

/// After a rollback the index agrees with the routes: each route's key is taken (`route add` names it), each
/// route can be deleted by its key, and then none is left.
fn index_agrees(b: &mut Builder<'_>) {
    let routes = b.config().routes.clone();
    for r in &routes {
        let fam = if r.prefix.addr().is_ipv6() {
            "-6"
        } else {
            "-4"
        };
        let key = format!(
            "{fam} route add {} metric {}{} dev r1",
            r.prefix,
            r.metric,
            table(r)
        );
        let e = b.line(900, &key).expect_err("the key is taken");
        assert!(e.reason.contains("route already exists"), "{key}: {e}");
    }
    let mut tx = b.transaction();
    for r in &routes {
        let fam = if r.prefix.addr().is_ipv6() {
            "-6"
        } else {
            "-4"
        };
        tx.line(
            901,
            &format!(
                "{fam} route del {} metric {}{}",
                r.prefix,
                r.metric,
                table(r)
            ),
        )
        .unwrap_or_else(|e| panic!("{r:?}: {e}"));
    }
    assert!(tx.config().routes.is_empty());
    // Dropped: undone too.
}

#[test]
fn a_failing_transaction_changes_nothing() {
    let mut b = Builder::from_config(base());
    let before = b.config().clone();
    for (lines, token) in [
        // Route lines, then a bad one.
        (
            vec![
                "-6 route add 2001:db8:10::/48 via fd00:2::2 dev r1",
                "-6 route del fc00::/16",
                "-6 route replace 2001:db8:1::/48 encap seg6 mode inline segs fc00::c dev r1",
                "-6 route del 2001:db8:3::/48",
                "-6 route add 2001:db8:11::/48 via fd00:2::2 dev nosuch0",
            ],
            "nosuch0",
        ),
        // Other lines and routes, then a bad one.
        (
            vec![
                "neigh add fd00:2::3 lladdr 02:00:00:00:02:03 dev r1",
                "-6 route del 2001:db8:5::/48",
                "sysctl net.ipv6.conf.all.seg6_enabled=0",
                "sr tunsrc set fd00:2::1",
                "ioam namespace add 124",
                "addr add fd00:3::1/64 dev r0",
                "-6 route add 2001:db8:10::/48 via fd00:3::2 dev r0",
                "-6 route del 2001:db8:99::/48",
            ],
            "2001:db8:99::/48",
        ),
        // Lines that pass, and a request check that does not (a key set nowhere).
        (
            vec![
                "-6 route del 2001:db8:4::/48 table 100",
                "-6 route add 2001:db8:20::/48 encap seg6 mode encap segs fc00::1 hmac 77 dev r1",
            ],
            "77",
        ),
    ] {
        let mut tx = b.transaction();
        let mut failed = None;
        for (i, l) in lines.iter().enumerate() {
            if let Err(e) = tx.line(i + 1, l) {
                failed = Some(e);
                break;
            }
        }
        let e = match failed {
            Some(e) => e,
            None => tx.check().expect_err("the request check fails"),
        };
        assert_eq!(e.token, token, "{lines:?}: {e}");
        drop(tx);
        assert_eq!(b.config(), &before, "{lines:?} changed something");
        index_agrees(&mut b);
        assert_eq!(
            b.config(),
            &before,
            "the dropped deletions changed something"
        );
    }
}

/// One random request line over a few prefixes, metrics and tables (some fail: an existing route added, a
/// missing one deleted or changed, an unknown device).
fn request_line() -> impl Strategy<Value = String> {
    (0u8..5, 0u8..6, 0u8..3, 0u8..2, 0u8..10).prop_map(|(verb, p, m, t, dev)| {
        let verb = ["add", "del", "replace", "change", "add"][verb as usize];
        let metric = [10, 20, 1024][m as usize];
        let table = if t == 0 {
            String::new()
        } else {
            " table 100".into()
        };
        let dev = match dev {
            0 => "nosuch0",
            1..=4 => "r0",
            _ => "r1",
        };
        match (verb, p) {
            ("del", 5) => format!("-6 route del 2001:db8:{p}::/48{table}"),
            ("del", _) => format!("-6 route del 2001:db8:{p}::/48 metric {metric}{table}"),
            // Lines that are not routes (some fail when repeated: an existing neighbour, address or namespace).
            (_, 4) => [
                "neigh add fd00:2::7 lladdr 02:00:00:00:02:07 dev r1",
                "addr add fd00:7::1/64 dev r0",
                "ioam namespace add 9",
                "sysctl net.ipv6.conf.r0.hop_limit=9",
                "sr tunsrc set fd00:2::1",
            ][usize::from(m * 2 + t) % 5]
                .to_string(),
            _ => format!("-6 route {verb} 2001:db8:{p}::/48 dev {dev} metric {metric}{table}"),
        }
    })
}

/// The routes that differ between two configurations, by (table, prefix, metric): what a comparison of whole
/// configurations finds.
fn diff(old: &Config, new: &Config) -> (Vec<String>, Vec<String>) {
    let key = |r: &Route| (r.table, r.prefix, r.metric);
    let o: HashMap<_, &Route> = old.routes.iter().map(|r| (key(r), r)).collect();
    let n: HashMap<_, &Route> = new.routes.iter().map(|r| (key(r), r)).collect();
    let mut removed: Vec<String> = o
        .iter()
        .filter(|(k, r)| n.get(*k) != Some(*r))
        .map(|(_, r)| format!("{r:?}"))
        .collect();
    let mut added: Vec<String> = n
        .iter()
        .filter(|(k, r)| o.get(*k) != Some(*r))
        .map(|(_, r)| format!("{r:?}"))
        .collect();
    removed.sort();
    added.sort();
    (removed, added)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// Random requests against one long-lived builder give, request after request, what a fresh builder over a
    /// copy of the configuration gives (the way requests were applied before transactions): the same
    /// configuration when the request passes, the one before when it fails; and the routes reported changed are
    /// those a comparison of the two configurations finds.
    #[test]
    fn transactions_agree_with_a_copy(requests in prop::collection::vec(
        prop::collection::vec(request_line(), 1..6), 1..12)) {
        let mut b = Builder::from_config(base());
        let mut model = base();
        for req in &requests {
            let mut fresh = Builder::from_config(model.clone());
            let reference = req
                .iter()
                .enumerate()
                .try_for_each(|(i, l)| fresh.line(i + 1, l))
                .and_then(|()| fresh.finish());
            let mut tx = b.transaction();
            let got = req
                .iter()
                .enumerate()
                .try_for_each(|(i, l)| tx.line(i + 1, l))
                .and_then(|()| tx.check());
            match (reference, got) {
                (Ok(cfg), Ok(delta)) => {
                    prop_assert_eq!(tx.config(), &cfg);
                    let named = |v: &[Route]| {
                        let mut s: Vec<String> = v.iter().map(|r| format!("{r:?}")).collect();
                        s.sort();
                        s
                    };
                    let (removed, added) = diff(&model, &cfg);
                    prop_assert_eq!(named(&delta.removed), removed);
                    prop_assert_eq!(named(&delta.added), added);
                    prop_assert_eq!(delta.other_lines, req.iter().any(|l| !l.starts_with("-6 route")));
                    tx.commit();
                    model = cfg;
                }
                (Err(want), Err(e)) => {
                    prop_assert_eq!(e, want);
                    drop(tx);
                    prop_assert_eq!(b.config(), &model);
                }
                (r, g) => prop_assert!(false, "{:?}: reference {:?}, transaction {:?}", req, r.err(), g.err()),
            }
        }
        // The index still agrees with the routes.
        index_agrees(&mut b);
    }
}

/// Large transactions (past the size from which the route index is rebuilt after a commit): the index still
/// finds every route the configuration holds and none it does not, as a file of the same routes does.
#[test]
fn large_transactions_keep_the_route_index() {
    let mut b = Builder::from_config(base());
    let route = |i: usize| {
        format!(
            "-6 route add 2001:db8:{:x}:{:x}::/64 via fd00:2::2 dev r1",
            0x100 + i / 97,
            i % 97
        )
    };
    let adds: Vec<String> = (0..3000).map(route).collect();
    commit(&mut b, &adds.iter().map(String::as_str).collect::<Vec<_>>());
    // Every other one deleted, in a second large transaction.
    let dels: Vec<String> = (0..3000)
        .step_by(2)
        .map(|i| route(i).replace("route add", "route del"))
        .collect();
    commit(&mut b, &dels.iter().map(String::as_str).collect::<Vec<_>>());
    let kept: Vec<String> = (1..3000).step_by(2).map(route).collect();
    let file = parse(&format!("{BASE}{}\n", kept.join("\n"))).expect("the same routes as a file");
    assert_eq!(route_set(b.config()), route_set(&file));
    let first = BASE.lines().count() + 1;
    for l in BASE.lines().filter(|l| l.starts_with("-6 route add")) {
        assert!(b.transaction().line(first, l).is_err(), "{l} added twice");
    }
    for i in 0..3000 {
        let mut tx = b.transaction();
        let del = route(i).replace("route add", "route del");
        // A deleted route is not found; a kept one is, and cannot be added twice.
        assert_eq!(tx.line(first, &del).is_ok(), i % 2 == 1, "{del}");
        if i % 2 == 1 {
            assert!(tx.line(first, &route(i)).is_ok(), "{}", route(i));
            assert!(tx.line(first, &route(i)).is_err(), "{} twice", route(i));
        }
    }
}
