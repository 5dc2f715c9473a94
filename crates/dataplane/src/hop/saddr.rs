//! Source address selection for packets the router originates (tunnel outer headers, ICMPv6 errors):
//! a subset of RFC 6724 §5 as Linux `ipv6_dev_get_saddr` applies it — appropriate scope (rule 2), prefer the
//! outgoing interface (rule 5), matching label (rule 6, default policy table), longest matching prefix (rule 8,
//! the bits in common counted up to the address's prefix length, as the kernel does).
//!
//! Ties are broken as the kernel breaks them: it walks the devices in their order and each device's addresses
//! newest first, and a candidate replaces the best so far only when it scores strictly higher; so on a full tie
//! the first candidate met wins (the newest address of the first device, when the caller lists them in that
//! order, as the snapshot's `source_for` does). Checked against the kernel by
//! tests/kernel/test_saddr.py.

use std::net::Ipv6Addr;

/// Scope of an address for rule 2: 2 link-local, 5 site-local (deprecated fec0::/10), 14 global.
fn scope(a: &Ipv6Addr) -> u8 {
    let s = a.segments();
    if a.is_loopback() || (s[0] & 0xffc0) == 0xfe80 {
        2
    } else if (s[0] & 0xffc0) == 0xfec0 {
        5
    } else {
        14
    }
}

/// RFC 6724 §2.1 default policy table labels.
fn label(a: &Ipv6Addr) -> u8 {
    let s = a.segments();
    if a.is_loopback() {
        0
    } else if s[0] == 0x2002 {
        2
    } else if s[0] == 0x2001 && s[1] == 0 {
        5
    } else if (s[0] & 0xfe00) == 0xfc00 {
        13
    } else if s[..5] == [0; 5] && s[5] == 0xffff {
        4
    } else if s[..6] == [0; 6] {
        3
    } else if (s[0] & 0xffc0) == 0xfec0 {
        11
    } else if s[0] == 0x3ffe {
        12
    } else {
        1
    }
}

fn common_prefix(a: &Ipv6Addr, b: &Ipv6Addr) -> u32 {
    (u128::from(*a) ^ u128::from(*b)).leading_zeros()
}

/// Whether the candidates are the outgoing interface's addresses alone: for a multicast destination or one of
/// link-local scope (the loopback address included), as the kernel restricts them when it knows that
/// interface (RFC 6724 §4).
pub fn outgoing_interface_only(dst: &Ipv6Addr) -> bool {
    dst.is_multicast() || scope(dst) <= 2
}

/// The prefixes [`scope`], [`label`] and [`outgoing_interface_only`] are defined by (address, length): inside a
/// prefix that holds none of them but perhaps within one, every destination has the same scope, label and
/// candidate set, so that two candidates rank alike for all of them as far as these rules go (rule 8 aside).
const CLASS_PREFIXES: [(u128, u32); 10] = [
    (1, 128),            // ::1, loopback (scope 2, label 0)
    (0xfe80 << 112, 10), // link-local (scope 2)
    (0xfec0 << 112, 10), // site-local (scope 5, label 11)
    (0xff00 << 112, 8),  // multicast (outgoing interface only)
    (0xfc00 << 112, 7),  // unique local (label 13)
    (0x2002 << 112, 16), // 6to4 (label 2)
    (0x2001 << 112, 32), // Teredo (label 5)
    (0x3ffe << 112, 16), // 6bone (label 12)
    (0xffff << 32, 96),  // IPv4-mapped (label 4)
    (0, 96),             // IPv4-compatible (label 3)
];

/// Whether every address of `p/len` has the same scope, label and candidate set (no prefix these depend on lies
/// strictly inside `p/len`): what a destination there selects then depends on it only through rule 8.
pub fn classes_constant_on(p: u128, len: u32) -> bool {
    CLASS_PREFIXES
        .iter()
        .all(|&(q, m)| m <= len || !crate::fib::within(q, p, len))
}

/// A candidate: its address, its prefix length, whether it is on the outgoing interface.
pub type Candidate = (Ipv6Addr, u8, bool);

/// How candidate `c` ranks for `dst`: the greater wins.
fn rank((a, plen, on_dev): &Candidate, dst: &Ipv6Addr) -> (i32, bool, bool, u32) {
    let (sc, dscope) = (scope(a), scope(dst));
    // Rule 2: prefer a scope >= the destination's, the smallest such; else the largest.
    let scope_rank = if sc >= dscope {
        1000 - sc as i32
    } else {
        sc as i32
    };
    (
        scope_rank,
        *on_dev,
        label(a) == label(dst),
        common_prefix(a, dst).min(u32::from(*plen)),
    )
}

/// Whether `c` can be a source at all.
fn eligible((a, _, _): &Candidate) -> bool {
    !a.is_unspecified() && !a.is_multicast()
}

/// Chooses a source for `dst` among `candidates` (address, its prefix length, on the outgoing interface?), given
/// in the kernel's order of candidates: the first of the best wins.
pub fn select(candidates: impl Iterator<Item = Candidate>, dst: &Ipv6Addr) -> Option<Ipv6Addr> {
    let mut best: Option<((i32, bool, bool, u32), Ipv6Addr)> = None;
    for c in candidates.filter(eligible) {
        let r = rank(&c, dst);
        if best.as_ref().is_none_or(|(b, _)| r > *b) {
            best = Some((r, c.0));
        }
    }
    best.map(|(_, a)| a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    #[test]
    fn prefers_outgoing_interface_then_longest_match() {
        // The kernel picks the egress-interface address fd00:2::1 for DA fc00::a (docs/references.md §1.2).
        let c = vec![(a("fd00:1::2"), 64, false), (a("fd00:2::1"), 64, true)];
        assert_eq!(select(c.into_iter(), &a("fc00::a")), Some(a("fd00:2::1")));
        let c = vec![
            (a("2001:db8:1::1"), 64, false),
            (a("2001:db8:2::1"), 64, false),
        ];
        assert_eq!(
            select(c.into_iter(), &a("2001:db8:2::99")),
            Some(a("2001:db8:2::1"))
        );
    }

    #[test]
    fn avoids_link_local_for_global_destinations() {
        let c = vec![(a("fe80::1"), 64, true), (a("2001:db8::1"), 64, false)];
        assert_eq!(
            select(c.into_iter(), &a("2001:db8:9::1")),
            Some(a("2001:db8::1"))
        );
        let c = vec![(a("fe80::1"), 64, true), (a("2001:db8::1"), 64, true)];
        assert_eq!(select(c.into_iter(), &a("fe80::9")), Some(a("fe80::1")));
        assert_eq!(select(std::iter::empty(), &a("fe80::9")), None);
    }

    /// Rule 8 counts the common bits up to the address's prefix length (the kernel's `IPV6_SADDR_RULE_PREFIX`):
    /// for 2001:db8:0:1::5, 2001:db8::1/32 counts 32 (not its 63 bits in common) and 2001:db8:ff::1/48 counts 40.
    /// The kernel (Linux 6.18, `ip -6 route get 2001:db8:0:1::5` with both on one device) answers
    /// `src 2001:db8:ff::1`; tests/kernel/test_saddr.py `prefix-length` checks it on the wire.
    #[test]
    fn the_longest_match_counts_up_to_the_prefix_length() {
        let dst = a("2001:db8:0:1::5");
        for c in [
            vec![
                (a("2001:db8::1"), 32, true),
                (a("2001:db8:ff::1"), 48, true),
            ],
            vec![
                (a("2001:db8:ff::1"), 48, true),
                (a("2001:db8::1"), 32, true),
            ],
        ] {
            assert_eq!(select(c.into_iter(), &dst), Some(a("2001:db8:ff::1")));
        }
        // With a /64 the 63 bits count and 2001:db8::1 wins.
        let c = vec![
            (a("2001:db8:ff::1"), 48, true),
            (a("2001:db8::1"), 64, true),
        ];
        assert_eq!(select(c.into_iter(), &dst), Some(a("2001:db8::1")));
    }

    /// A full tie (same scope, outgoing interface or not alike, label 13 like fc00::a, 7 bits in common) goes to
    /// the first candidate, as the kernel's loop replaces its best only on a strictly higher score.
    #[test]
    fn a_full_tie_goes_to_the_first_candidate() {
        let dst = a("fc00::a");
        let c = vec![
            (a("fd00:2::5"), 64, true),
            (a("fd00:2::1"), 64, true),
            (a("fd00:2::9"), 64, true),
        ];
        assert_eq!(select(c.into_iter(), &dst), Some(a("fd00:2::5")));
        let c = vec![(a("fd00:1::2"), 64, false), (a("fd00:2::5"), 64, false)];
        assert_eq!(select(c.into_iter(), &dst), Some(a("fd00:1::2")));
    }

    /// Where [`classes_constant_on`] says a prefix's addresses share scope, label and candidate set, they do: at
    /// its first and last address, its middle, and the address whose path leads there; for every prefix on the
    /// paths to each class prefix's first and last address (and the addresses just outside), and to pseudo-random
    /// addresses. (A prefix missing from the list, e.g. 2001::/32, makes 2000::/15 look constant: 2001:: has
    /// label 5, 2000:: label 1.)
    #[test]
    fn classes_are_constant_where_said() {
        let class = |x: u128| {
            let a = Ipv6Addr::from(x);
            (scope(&a), label(&a), outgoing_interface_only(&a))
        };
        let mut points: Vec<u128> = CLASS_PREFIXES
            .iter()
            .flat_map(|&(q, m)| {
                let last = q | u128::MAX.checked_shr(m).unwrap_or(0);
                [q, last, q.wrapping_sub(1), last.wrapping_add(1)]
            })
            .collect();
        let mut x: u128 = 0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c834;
        for _ in 0..300 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Half of them under 2000::/3, where the labels are.
            points.push(if x & 1 == 0 { x >> 3 | 1 << 125 } else { x });
        }
        let mut checked = 0;
        for p in points {
            for len in 0..=128u32 {
                let host = u128::MAX.checked_shr(len).unwrap_or(0);
                let (net, last) = (p & !host, p | host);
                if !classes_constant_on(net, len) {
                    continue;
                }
                checked += 1;
                let c = class(net);
                for y in [last, net + (last - net) / 2, p] {
                    assert_eq!(
                        class(y),
                        c,
                        "{}/{len} at {}",
                        Ipv6Addr::from(net),
                        Ipv6Addr::from(y)
                    );
                }
            }
        }
        assert!(checked > 10_000);
        // And not constant where a class prefix lies strictly inside.
        assert!(!classes_constant_on(0x2000 << 112, 15));
        assert!(!classes_constant_on(0, 0));
        assert!(classes_constant_on(0xfc00 << 112, 8));
    }
}
