//! Every kind of control line applied in place (`changes_between`, then `Snapshot::apply`, as the control socket
//! does) must leave the router that building the resulting configuration from scratch gives: same frames out,
//! same counters, with the fast path's plans and without. Random sequences of `addr add`, `neigh add`, `sysctl`,
//! `ioam namespace|schema`, `sr tunsrc|hmac` lines mixed with route lines (gateway routes, seg6 encap with and
//! without HMAC, ioam6 inline and encap), in batches; the frames go to every route kind, to the router's
//! addresses and next to them.

mod common;

use common::{apply, frame, run, same_as_rebuild};
use lwt6_config::Builder;
use lwt6_dataplane::snapshot::{Change, Snapshot, changes_between};
use proptest::prelude::*;

const HEAD: &str = "
link add r0 address 02:00:00:00:01:02
link add r1 address 02:00:00:00:02:01
addr add fd00:1::2/64 dev r0
addr add fd00:2::1/64 dev r1
neigh add fd00:1::1 lladdr 02:00:00:00:01:01 dev r0
sysctl net.ipv6.conf.r0.ioam6_enabled=1
ioam namespace add 123 data 0xdeadbeef
sr hmac set 42 sha256 secret first
";

/// One line of kind `kind` with parameter `n`.
fn line(kind: u8, n: u8) -> String {
    let gw = n % 3 + 2;
    let k = n % 4;
    match kind % 16 {
        0 => format!("neigh add fd00:2::{gw} lladdr 02:00:00:00:02:{n:02x} dev r1"),
        1 => format!("-6 route add fd00:{k:x}::/64 via fd00:2::{gw} dev r1"),
        2 => format!("-6 route add fc00:{gw:x}::/32 via fd00:2::{gw} dev r1"),
        3 => format!(
            "-6 route add fd01:{k:x}::/64 encap seg6 mode encap segs fc00:{gw:x}::1,fc00::b dev r1"
        ),
        4 => format!(
            "-6 route add fd02:{k:x}::/64 encap seg6 mode encap.red segs fc00:{gw:x}::1,fc00::c hmac {} dev r1",
            40 + n % 3
        ),
        5 => format!(
            "-6 route add fd03:{k:x}::/64 encap ioam6 mode inline trace prealloc type 0xf1f000 ns {} size 96 via fd00:2::{gw} dev r1",
            [123, 124, 125][n as usize % 3]
        ),
        6 => format!(
            "-6 route add fd04:{k:x}::/64 encap ioam6 mode encap tundst fc00:{gw:x}::1 trace prealloc type 0xc00000 ns 123 size 28 dev r1"
        ),
        // Addresses: on r1 in new prefixes, inside a tunnel destination's prefix (the source it selects), inside
        // a route's prefix (its plan's local check), and in a prefix that has one already (left to a rebuild).
        7 => match n % 4 {
            0 => format!("addr add fd00:{:x}::1/64 dev r1", 0x10 + n),
            1 => format!("addr add fc00:{gw:x}::9/64 dev r1"),
            2 => format!("addr add fd01:{k:x}::7/80 dev r0"),
            _ => format!("addr add fd00:2::{:x}/64 dev r1", 0x20 + n),
        },
        8 => format!("sysctl net.ipv6.ioam6_id={}", 100 + n),
        9 => format!(
            "sysctl -w net.ipv6.conf.r1.ioam6_id={n} net.ipv6.conf.r1.ioam6_id_wide={}",
            1000 + n as u32
        ),
        10 => format!("sysctl net.ipv6.seg6_flowlabel={}", n as i32 % 3 - 1),
        11 => match n % 3 {
            0 => format!("ioam namespace add {} data {}", 123 + n % 3, n),
            1 => format!("ioam schema add {} s{n}", n % 5),
            _ => format!("ioam namespace set {} schema {}", 123 + n % 3, n % 5),
        },
        12 => match n % 3 {
            0 => "sr tunsrc set fd00:2::1".to_string(),
            1 => format!("sr tunsrc set fd00:99::{n:x}"),
            _ => "sr tunsrc set ::".to_string(),
        },
        13 => format!("sr hmac set {} sha256 secret s{n}", 40 + n % 3),
        14 => format!("sysctl net.ipv6.conf.all.forwarding={}", n % 2),
        _ => format!("sysctl net.ipv6.ioam6_id_wide={}", 7 + n as u64),
    }
}

fn frames() -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    for k in 0..4u16 {
        for top in ["fd00", "fd01", "fd02", "fd03", "fd04"] {
            v.push(frame(format!("{top}:{k:x}::1").parse().unwrap()));
        }
        // The addresses `addr add` may give, and next to them.
        v.push(frame(format!("fd01:{k:x}::7").parse().unwrap()));
    }
    for gw in 2..5 {
        v.push(frame(format!("fc00:{gw:x}::5").parse().unwrap()));
        v.push(frame(format!("fc00:{gw:x}::9").parse().unwrap()));
        v.push(frame(format!("fd00:2::{gw}").parse().unwrap()));
    }
    v.push(frame("fd00:10::1".parse().unwrap()));
    v.push(frame("fd00:2::21".parse().unwrap()));
    v
}

/// Applies `batches` of random lines (see [`line`]) to a snapshot of `head` in place, comparing it after each
/// batch with a snapshot built from the resulting configuration.
fn in_place_equals_rebuild(
    head: &str,
    batches: Vec<Vec<(u8, u8, bool)>>,
) -> Result<(), TestCaseError> {
    let cfg = lwt6_config::parse(head).unwrap();
    let mut snap = Snapshot::build(&cfg).unwrap();
    let mut b = Builder::from_config(cfg);
    let f = frames();
    for batch in batches {
        let lines: Vec<String> = batch
            .iter()
            .map(|(k, n, del)| {
                let l = line(*k, *n);
                if *del && (1..=6).contains(k) {
                    // `route del PREFIX`: the route's prefix, as `ip route del` takes it.
                    let p = l.split_whitespace().nth(3).unwrap().to_string();
                    format!("-6 route del {p}")
                } else {
                    l
                }
            })
            .collect();
        apply(&mut b, &mut snap, &lines);
        let fresh = Snapshot::build(b.config()).unwrap();
        for fast in [true, false] {
            let r = same_as_rebuild(&snap, &fresh, &f, fast);
            prop_assert!(
                r.is_ok(),
                "after {:?}: {}",
                lines,
                r.err().unwrap_or_default()
            );
        }
    }
    Ok(())
}

/// [`HEAD`] with every first segment of [`line`]'s seg6 routes reachable through a known neighbour: every seg6
/// encap route has a plan from the start (the case where a tunnel source changes what every plan writes).
fn planned_head() -> String {
    let mut h = HEAD.to_string();
    for gw in 2..5 {
        h += &format!("neigh add fd00:2::{gw} lladdr 02:00:00:00:02:{gw:02x} dev r1\n");
        h += &format!("-6 route add fc00:{gw:x}::/32 via fd00:2::{gw} dev r1\n");
    }
    h
}

fn batches() -> impl Strategy<Value = Vec<Vec<(u8, u8, bool)>>> {
    proptest::collection::vec(
        proptest::collection::vec((0u8..16, 0u8..24, any::<bool>()), 1..4),
        1..16,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn control_lines_in_place_equal_a_rebuild(batches in batches()) {
        in_place_equals_rebuild(HEAD, batches)?;
    }

    #[test]
    fn control_lines_in_place_equal_a_rebuild_with_every_seg6_route_planned(batches in batches()) {
        in_place_equals_rebuild(&planned_head(), batches)?;
    }
}

/// The lines each give the changes a rebuild would follow: one `Change` of their kind, no rebuild.
#[test]
fn each_kind_of_line_is_a_change() {
    let cfg = lwt6_config::parse(HEAD).unwrap();
    let snap = Snapshot::build(&cfg).unwrap();
    for l in [
        "addr add fd00:3::1/64 dev r1",
        "sysctl net.ipv6.ioam6_id=7",
        "ioam namespace add 5",
        "ioam schema add 5 x",
        "sr tunsrc set fd00:2::1",
        "sr hmac set 9 sha256 secret s",
        "neigh add fd00:2::7 lladdr 02:00:00:00:02:07 dev r1",
    ] {
        let mut b = Builder::from_config(cfg.clone());
        let mut tx = b.transaction();
        tx.line(1, l).unwrap();
        let c = changes_between(tx.rest_before().unwrap(), tx.config(), &snap)
            .unwrap_or_else(|| panic!("{l}: asks for a rebuild"));
        assert_eq!(c.len(), 1, "{l}: {c:?}");
        let word = l.split_whitespace().next().unwrap();
        let kind = match &c[0] {
            Change::AddrAdd { .. } => "addr",
            Change::StaticNeighSet { .. } => "neigh",
            Change::Settings(_) => "settings",
            other => panic!("{l}: {other:?}"),
        };
        let want = match word {
            "addr" | "neigh" => word,
            _ => "settings",
        };
        assert_eq!(kind, want, "{l}");
    }
}

/// An address whose connected route meets a route of the same prefix and metric, or whose prefix holds the
/// gateway of a route configured without a device, is left to a rebuild (a rebuild orders those routes
/// differently, or looks the device up again).
#[test]
fn addresses_a_change_cannot_follow_ask_for_a_rebuild() {
    let cfg = lwt6_config::parse(&format!(
        "{HEAD}-6 route add fd00:5::/64 via fd00:2::2\n-6 route add fd00:6::/64 dev r1 metric 256\n"
    ))
    .unwrap();
    let snap = Snapshot::build(&cfg).unwrap();
    for (l, in_place) in [
        ("addr add fd00:2::9/64 dev r1", false),
        ("addr add fd00:6::1/64 dev r1", false),
        ("addr add fd00:2::/120 dev r0", false),
        ("addr add fd00:7::1/64 dev r0", true),
    ] {
        let mut b = Builder::from_config(cfg.clone());
        let mut tx = b.transaction();
        tx.line(1, l).unwrap();
        let c = changes_between(tx.rest_before().unwrap(), tx.config(), &snap);
        assert_eq!(c.is_some(), in_place, "{l}");
    }
}

/// Each dependency in turn, on a router whose tunnels have plans: every line is applied in place, changes what
/// the frames become (so that the step tests something), and leaves what a rebuild gives.
#[test]
fn each_dependency_follows_its_line() {
    let setup = [
        "neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1",
        "-6 route add fc00:2::/32 via fd00:2::2 dev r1",
        "-6 route add fd00:0::/64 via fd00:2::2 dev r1",
        "sr hmac set 40 sha256 secret one",
        "-6 route add fd01:0::/64 encap seg6 mode encap segs fc00:2::1,fc00::b dev r1",
        "-6 route add fd02:0::/64 encap seg6 mode encap.red segs fc00:2::1,fc00::c hmac 40 dev r1",
        "-6 route add fd03:0::/64 encap ioam6 mode inline trace prealloc type 0xf1f002 ns 123 size 160 via fd00:2::2 dev r1",
        "-6 route add fd04:0::/64 encap ioam6 mode encap tundst fc00:2::1 trace prealloc type 0xc00000 ns 123 size 28 dev r1",
    ];
    let cfg = lwt6_config::parse(HEAD).unwrap();
    let mut snap = Snapshot::build(&cfg).unwrap();
    let mut b = Builder::from_config(cfg);
    let setup: Vec<String> = setup.iter().map(|l| l.to_string()).collect();
    assert_eq!(apply(&mut b, &mut snap, &setup), Some(true));
    let f = frames();
    for l in [
        // The source seg6 encap and ioam6 encap select for fc00:2::1: the longest match wins (RFC 6724 rule 8;
        // 63 bits against fd00:2::1's 7), its connected route leaves fc00:2::1 to the /32.
        "addr add fc00:2:0:1::9/64 dev r1",
        // Inside fd00:0::/64: that route's plan must now see a local address in its prefix.
        "addr add fd00:0::7/64 dev r0",
        "sr tunsrc set fd00:2::1",
        "sr hmac set 40 sha256 secret two",
        "sysctl net.ipv6.ioam6_id=77",
        "sysctl net.ipv6.conf.r1.ioam6_id=5",
        "sysctl net.ipv6.ioam6_id_wide=99",
        "ioam namespace set 123 schema 3",
        "sysctl net.ipv6.seg6_flowlabel=1",
        "sr tunsrc set ::",
    ] {
        let mut line = vec![l.to_string()];
        if l.starts_with("ioam namespace set") {
            line.insert(0, "ioam schema add 3 abc".into());
        }
        let before = run(&snap, &f, true);
        assert_eq!(apply(&mut b, &mut snap, &line), Some(true), "{l}");
        let fresh = Snapshot::build(b.config()).unwrap();
        for fast in [true, false] {
            if let Err(e) = same_as_rebuild(&snap, &fresh, &f, fast) {
                panic!("{l}: {e}");
            }
        }
        assert!(run(&snap, &f, true).0 != before.0, "{l}: changed no frame");
    }
}

/// A tunnel source or `seg6_flowlabel` line on a router whose seg6 encap routes all have plans plans no route
/// again (the sources are rewritten in place, the flow label is read per packet), but for the one tunnel whose
/// HMAC signs the source; a key no route names plans none; an address only its connected route (and the signed
/// tunnel while the sources are selected). Each line leaves what a rebuild gives.
#[test]
fn settings_lines_plan_no_seg6_route_again() {
    const TUNNELS: usize = 64;
    let mut text = planned_head();
    text += "sr hmac set 40 sha256 secret one\n";
    for i in 0..TUNNELS {
        text += &format!(
            "-6 route add fd01:{i:x}::/64 encap seg6 mode encap segs fc00:{:x}::1,fc00::b dev r1\n",
            i % 3 + 2
        );
    }
    // One signed tunnel, one with its own source.
    text += "-6 route add fd02:0::/64 encap seg6 mode encap.red segs fc00:2::1,fc00::c hmac 40 dev r1\n";
    text +=
        "-6 route add fd02:1::/64 encap seg6 mode encap segs fc00:3::1 tunsrc fd00:2::77 dev r1\n";
    let cfg = lwt6_config::parse(&text).unwrap();
    let mut snap = Snapshot::build(&cfg).unwrap();
    let mut b = Builder::from_config(cfg);
    let mut f: Vec<Vec<u8>> = (0..TUNNELS)
        .map(|i| frame(format!("fd01:{i:x}::1").parse().unwrap()))
        .collect();
    f.push(frame("fd02:0::1".parse().unwrap()));
    f.push(frame("fd02:1::1".parse().unwrap()));
    // Every encap route is planned: the fast path sends every frame (nothing left to the general path).
    let planned = |s: &Snapshot| {
        f.iter()
            .filter(|fr| {
                let dst: [u8; 16] = fr[38..54].try_into().unwrap();
                let best = s.fib().best_v6(dst.into());
                best.is_some_and(|b| s.plan(b.plan_or_max()).is_some())
            })
            .count()
    };
    assert_eq!(planned(&snap), TUNNELS + 2);
    for (l, signed_again) in [
        // Addresses before any `sr tunsrc`: the signed tunnel selects its source again, and so does the address's
        // connected route; the others' sources are rewritten in place where the address takes the selection
        // over: every one (a tie on r1 the newest address wins), none (on r0: rule 5 keeps r1's), those whose
        // first segment is fc00:3::1 (rule 8, 47 bits against 7; the route fc00:3::/32, which now holds one of
        // our addresses, is planned again too).
        ("addr add fd00:5::1/64 dev r1", 2),
        ("addr add fd00:6::1/64 dev r0", 2),
        ("addr add fc00:3:0:1::9/64 dev r1", 3),
        ("sr tunsrc set fd00:2::1", 1),
        ("sr tunsrc set fd00:99::5", 1),
        // With a node tunnel source no seg6 tunnel selects one: only the address's connected route is planned.
        ("addr add fd00:3::1/64 dev r1", 1),
        ("sysctl net.ipv6.seg6_flowlabel=1", 0),
        ("sysctl net.ipv6.seg6_flowlabel=-1", 0),
        ("sysctl net.ipv6.seg6_flowlabel=0", 0),
        ("sr hmac set 9 sha256 secret unused", 0),
    ] {
        let before = snap.routes_planned();
        assert_eq!(
            apply(&mut b, &mut snap, &[l.to_string()]),
            Some(true),
            "{l}"
        );
        assert_eq!(
            snap.routes_planned() - before,
            signed_again,
            "{l}: planned routes again"
        );
        assert_eq!(planned(&snap), TUNNELS + 2, "{l}");
        let fresh = Snapshot::build(b.config()).unwrap();
        for fast in [true, false] {
            if let Err(e) = same_as_rebuild(&snap, &fresh, &f, fast) {
                panic!("{l}: {e}");
            }
        }
    }
}

/// The builder keeps a sourced template's bytes as placed and its source now beside them (a rewrite stores into
/// the block the workers read only): a block made anew, bigger, must hold the sources rewritten since, and a
/// new tunnel must share a template only when its source is the one now. Rewrites by `addr add` (taken over) and
/// by `sr tunsrc set`, each followed by enough new tunnels to outgrow the block; each step equals a rebuild.
#[test]
fn rewritten_sources_survive_a_bigger_block() {
    let mut text = planned_head();
    for i in 0..64 {
        text += &format!(
            "-6 route add fd01:{i:x}::/64 encap seg6 mode encap segs fc00:{:x}::1,fc00::b dev r1\n",
            i % 3 + 2
        );
    }
    let cfg = lwt6_config::parse(&text).unwrap();
    let mut snap = Snapshot::build(&cfg).unwrap();
    let mut b = Builder::from_config(cfg);
    let mut f: Vec<Vec<u8>> = (0..64)
        .map(|i| frame(format!("fd01:{i:x}::1").parse().unwrap()))
        .collect();
    let blocks = |s: &Snapshot| s.plan_stats().1;
    for (round, rewrite) in ["addr add fd00:5::1/64 dev r1", "sr tunsrc set fd00:99::5"]
        .into_iter()
        .enumerate()
    {
        assert_eq!(
            apply(&mut b, &mut snap, &[rewrite.to_string()]),
            Some(true),
            "{rewrite}"
        );
        let before = blocks(&snap);
        // Enough to outgrow the room a block is made with (half of it after the first growth).
        let n = 300 << round;
        let lines: Vec<String> = (0..n)
            .map(|i| {
                format!(
                    "-6 route add fd05:{round:x}:{i:x}::/64 encap seg6 mode encap segs fc00:{:x}::1,fc00::{:x} dev r1",
                    i % 3 + 2,
                    0x100 + i
                )
            })
            .collect();
        // The first tunnels' segments again: a template to share with the old ones, whose source is the new one.
        let mut lines = lines;
        lines.push(format!(
            "-6 route add fd06:{round:x}::/64 encap seg6 mode encap segs fc00:2::1,fc00::b dev r1"
        ));
        assert_eq!(apply(&mut b, &mut snap, &lines), Some(true));
        assert!(
            blocks(&snap) > before,
            "{rewrite}: the block grew ({before} -> {})",
            blocks(&snap)
        );
        f.extend((0..n).map(|i| frame(format!("fd05:{round:x}:{i:x}::1").parse().unwrap())));
        f.push(frame(format!("fd06:{round:x}::1").parse().unwrap()));
        let fresh = Snapshot::build(b.config()).unwrap();
        for fast in [true, false] {
            if let Err(e) = same_as_rebuild(&snap, &fresh, &f, fast) {
                panic!("{rewrite}: {e}");
            }
        }
    }
}
