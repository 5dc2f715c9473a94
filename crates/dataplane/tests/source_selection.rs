//! `addr add` applied in place must leave every seg6 encap tunnel with the outer source a rebuild selects
//! (`source_for`, RFC 6724 as Linux applies it): the templates a new address takes over are found by their
//! groups (route device, source, sorted destinations), not by asking each tunnel, so this checks the groups
//! against the selection itself. Three devices; tunnels leaving by each, towards first segments of every class
//! the rules tell apart (unique local, documentation, Teredo, 6to4, 6bone, site-local, on-link, loopback) and
//! at several distances from the addresses; random addresses of those classes, link-local ones and prefix
//! lengths from /10 to /128 added one or a few at a time, with tunnels added between them. (Without the scope
//! and label prefixes in the groups' split, a site-local address is given to tunnels towards ::5 as well as ::1.)

mod common;

use common::{apply, frame, same_as_rebuild};
use lwt6_config::Builder;
use lwt6_dataplane::snapshot::Snapshot;
use proptest::prelude::*;

const HEAD: &str = "
link add r0 address 02:00:00:00:01:02
link add r1 address 02:00:00:00:02:01
link add r2 address 02:00:00:00:03:01
addr add fd00:1::2/64 dev r0
addr add fd00:2::1/64 dev r1
neigh add fd00:1::1 lladdr 02:00:00:00:01:01 dev r0
neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1
-6 route add fc00::/16 via fd00:1::1 dev r0
-6 route add 2001::/16 via fd00:2::2 dev r1
-6 route add 2002::/16 via fd00:2::2 dev r1
-6 route add 3ffe::/16 via fd00:1::1 dev r0
-6 route add fec0::/10 via fd00:2::2 dev r1
-6 route add ::/96 via fd00:1::1 dev r0
";

/// First segments: every label of the default policy table the routes reach, near to and far from the
/// addresses of [`address`].
const FIRST: [&str; 14] = [
    "fc00::1",
    "fc00:1::5",
    "fc00:1:0:1::7",
    "fc00:1:0:1::9",
    "2001:db8::1",
    "2001:db8:1::1",
    "2001:db8:ffff::1",
    "2001::1",
    "2002:c000::1",
    "3ffe::1",
    "fec0::5",
    "fd00:2::77",
    // Of link-local scope (a site-local address wins there, a global one next to it), and next to it.
    "::1",
    "::5",
];

/// An address line: of every class, with prefix lengths that cut rule 8 short or not, on any device.
fn address(kind: u8, n: u8, dev: u8) -> String {
    let a = match kind % 12 {
        0 => format!("fd00:{:x}::{n:x}/64", 0x10 + n % 4),
        1 => "fc00:1::9/48".to_string(),
        2 => format!("fc00:1:0:1::{:x}/64", n % 3 + 8),
        3 => "2001:db8:1::9/48".to_string(),
        4 => format!("2001:db8::{:x}/32", n % 4 + 9),
        5 => "2002:c000::9/16".to_string(),
        6 => "fec0::9/10".to_string(),
        7 => format!("fe80::{:x}/64", n % 4 + 1),
        8 => "3ffe::9/16".to_string(),
        9 => "2001::9/32".to_string(),
        10 => format!("2001:db8:ffff::{:x}/128", n % 2 + 1),
        _ => format!("fd00:2::{:x}/64", 0x20 + n % 4),
    };
    format!("addr add {a} dev r{}", dev % 3)
}

/// A seg6 encap tunnel `i` towards first segment `f`, its route leaving by device `dev`.
fn tunnel(i: usize, f: u8, dev: u8) -> String {
    format!(
        "-6 route add fd10:{i:x}::/64 encap seg6 mode encap segs {},fc00::b dev r{}",
        FIRST[f as usize % FIRST.len()],
        dev % 3
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(160))]
    #[test]
    fn addresses_added_in_place_select_the_sources_of_a_rebuild(
        tunnels in proptest::collection::vec((0u8..14, 0u8..3), 4..24),
        steps in proptest::collection::vec(
            (proptest::collection::vec((0u8..12, 0u8..8, 0u8..3), 1..3), proptest::option::of((0u8..14, 0u8..3))),
            1..10,
        ),
    ) {
        let mut text = HEAD.to_string();
        for (i, (f, d)) in tunnels.iter().enumerate() {
            text += &tunnel(i, *f, *d);
            text.push('\n');
        }
        let cfg = lwt6_config::parse(&text).unwrap();
        let mut snap = Snapshot::build(&cfg).unwrap();
        let mut b = Builder::from_config(cfg);
        let mut count = tunnels.len();
        let mut frames: Vec<Vec<u8>> =
            (0..count).map(|i| frame(format!("fd10:{i:x}::1").parse().unwrap())).collect();
        for (addrs, more) in steps {
            let mut lines: Vec<String> = addrs.iter().map(|(k, n, d)| address(*k, *n, *d)).collect();
            if let Some((f, d)) = more {
                lines.push(tunnel(count, f, d));
                frames.push(frame(format!("fd10:{count:x}::1").parse().unwrap()));
                count += 1;
            }
            // A line the configuration refuses (an address it has) changes nothing: the comparison holds still.
            let _ = apply(&mut b, &mut snap, &lines);
            let fresh = Snapshot::build(b.config()).unwrap();
            for fast in [true, false] {
                let r = same_as_rebuild(&snap, &fresh, &frames, fast);
                prop_assert!(r.is_ok(), "after {:?}: {}", lines, r.err().unwrap_or_default());
            }
        }
    }
}
