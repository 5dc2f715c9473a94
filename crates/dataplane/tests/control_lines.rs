//! Control lines other than routes applied in place (`changes_between`, then `Snapshot::apply`) must leave the
//! router that building the changed configuration from scratch gives: same frames out, same counters. Random
//! sequences of `neigh add` and route lines through gateways that may or may not be resolved yet.

mod common;

use common::{apply, frame, same_as_rebuild};
use lwt6_config::Builder;
use lwt6_dataplane::snapshot::{Change, Snapshot, changes_between};
use proptest::prelude::*;

const HEAD: &str = "
link add r0 address 02:00:00:00:01:02
link add r1 address 02:00:00:00:02:01
addr add fd00:1::2/64 dev r0
addr add fd00:2::1/64 dev r1
neigh add fd00:1::1 lladdr 02:00:00:00:01:01 dev r0
";

/// The lines a sequence draws from: neighbours for the gateways, routes through them, tunnels whose first
/// segment routes through them.
fn line(kind: u8, n: u8) -> String {
    let gw = n % 4 + 2;
    match kind % 4 {
        0 => format!("neigh add fd00:2::{gw} lladdr 02:00:00:00:02:{gw:02x} dev r1"),
        1 => format!("-6 route add fd00:{n:x}::/64 via fd00:2::{gw} dev r1"),
        2 => format!("-6 route add fc00:{gw:x}::/32 via fd00:2::{gw} dev r1"),
        _ => format!(
            "-6 route add fd01:{n:x}::/64 encap seg6 mode encap segs fc00:{gw:x}::1,fc00::b dev r1"
        ),
    }
}

fn frames() -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    for n in 0..16u16 {
        v.push(frame(format!("fd00:{n:x}::1").parse().unwrap()));
        v.push(frame(format!("fd01:{n:x}::1").parse().unwrap()));
    }
    for gw in 2..6 {
        v.push(frame(format!("fc00:{gw:x}::5").parse().unwrap()));
        v.push(frame(format!("fd00:2::{gw}").parse().unwrap()));
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn neighbour_lines_in_place_equal_a_rebuild(
        batches in proptest::collection::vec(
            proptest::collection::vec((0u8..4, 0u8..16, any::<bool>()), 1..4),
            1..14,
        )
    ) {
        let cfg = lwt6_config::parse(HEAD).unwrap();
        let mut snap = Snapshot::build(&cfg).unwrap();
        let mut b = Builder::from_config(cfg);
        let f = frames();
        for batch in batches {
            let lines: Vec<String> = batch
                .iter()
                .map(|(k, n, del)| {
                    let l = line(*k, *n);
                    if *del && *k != 0 {
                        // `route del PREFIX`: the route's prefix, as `ip route del` takes it.
                        let p = l.split_whitespace().nth(3).unwrap().to_string();
                        format!("-6 route del {p}")
                    } else {
                        l
                    }
                })
                .collect();
            // Neighbour and route lines are always followed in place (a refused batch changes nothing).
            prop_assert_ne!(apply(&mut b, &mut snap, &lines), Some(false), "rebuilt: {:?}", lines);
            let fresh = Snapshot::build(b.config()).unwrap();
            let r = same_as_rebuild(&snap, &fresh, &f, true);
            prop_assert!(r.is_ok(), "after {:?}: {}", lines, r.err().unwrap_or_default());
        }
    }
}

/// A line the snapshot cannot follow in place (a new link: the running ports are fixed) asks for a rebuild; a
/// neighbour is one change. (The other kinds of line: `tests/settings_lines.rs`.)
#[test]
fn other_lines_ask_for_a_rebuild() {
    let cfg = lwt6_config::parse(HEAD).unwrap();
    let snap = Snapshot::build(&cfg).unwrap();
    {
        let l = "link add r9";
        let mut b = Builder::from_config(cfg.clone());
        let mut tx = b.transaction();
        tx.line(1, l).unwrap();
        let before = tx.rest_before().unwrap();
        assert!(changes_between(before, tx.config(), &snap).is_none(), "{l}");
    }
    let mut b = Builder::from_config(cfg);
    let mut tx = b.transaction();
    tx.line(1, "neigh add fd00:2::7 lladdr 02:00:00:00:02:07 dev r1")
        .unwrap();
    let c = changes_between(tx.rest_before().unwrap(), tx.config(), &snap).unwrap();
    assert_eq!(
        c,
        vec![Change::StaticNeighSet {
            dev: 1,
            addr: "fd00:2::7".parse().unwrap(),
            mac: [2, 0, 0, 0, 2, 7],
        }]
    );
}
