//! Source address selection for packets the router originates (tunnel outer headers, ICMPv6 errors):
//! a subset of RFC 6724 §5 as Linux `ipv6_dev_get_saddr` applies it — appropriate scope (rule 2), prefer the
//! outgoing interface (rule 5), matching label (rule 6, default policy table), longest matching prefix (rule 8).

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

/// How candidate `a` (on the outgoing interface or not) ranks for `dst`: the greater wins.
fn rank(a: &Ipv6Addr, on_dev: bool, dst: &Ipv6Addr) -> (i32, bool, bool, u32) {
    let (sc, dscope) = (scope(a), scope(dst));
    // Rule 2: prefer a scope >= the destination's, the smallest such; else the largest.
    let scope_rank = if sc >= dscope {
        1000 - sc as i32
    } else {
        sc as i32
    };
    (
        scope_rank,
        on_dev,
        label(a) == label(dst),
        common_prefix(a, dst),
    )
}

/// Chooses a source for `dst` among `candidates` (address, on the outgoing interface?); of equal ones, the last.
pub fn select(
    candidates: impl Iterator<Item = (Ipv6Addr, bool)>,
    dst: &Ipv6Addr,
) -> Option<Ipv6Addr> {
    candidates
        .filter(|(a, _)| !a.is_unspecified() && !a.is_multicast())
        .max_by_key(|(a, on_dev)| rank(a, *on_dev, dst))
        .map(|(a, _)| a)
}

/// Whether a new candidate `new` takes the selection for `dst` from `chosen` (what [`select`] chose without it):
/// it ranks higher, or as high and comes after it among the candidates (`after`).
pub fn takes_over(
    new: (Ipv6Addr, bool),
    chosen: (Ipv6Addr, bool),
    after: bool,
    dst: &Ipv6Addr,
) -> bool {
    if new.0.is_unspecified() || new.0.is_multicast() {
        return false;
    }
    let (n, c) = (rank(&new.0, new.1, dst), rank(&chosen.0, chosen.1, dst));
    n > c || (n == c && after)
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
        let c = vec![(a("fd00:1::2"), false), (a("fd00:2::1"), true)];
        assert_eq!(select(c.into_iter(), &a("fc00::a")), Some(a("fd00:2::1")));
        let c = vec![(a("2001:db8:1::1"), false), (a("2001:db8:2::1"), false)];
        assert_eq!(
            select(c.into_iter(), &a("2001:db8:2::99")),
            Some(a("2001:db8:2::1"))
        );
    }

    #[test]
    fn avoids_link_local_for_global_destinations() {
        let c = vec![(a("fe80::1"), true), (a("2001:db8::1"), false)];
        assert_eq!(
            select(c.into_iter(), &a("2001:db8:9::1")),
            Some(a("2001:db8::1"))
        );
        let c = vec![(a("fe80::1"), true), (a("2001:db8::1"), true)];
        assert_eq!(select(c.into_iter(), &a("fe80::9")), Some(a("fe80::1")));
        assert_eq!(select(std::iter::empty(), &a("fe80::9")), None);
    }
}
