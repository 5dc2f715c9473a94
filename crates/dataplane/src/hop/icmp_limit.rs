//! Rate limits for the ICMP errors a router sends, as Linux applies them by default: per destination a token
//! bucket holding [`PEER_BURST`] messages, refilled one per [`PEER_INTERVAL_NS`] (`net.ipv4.icmp_ratelimit` and
//! `net.ipv6.icmp.ratelimit`, 1 s, burst factor 6), and over all destinations one of [`GLOBAL_BURST`] refilled at
//! [`GLOBAL_PER_SEC`] a second (`icmp_msgs_per_sec`, `icmp_msgs_burst`). Echo replies are not limited (Linux's
//! default `icmp_ratemask` leaves them out).
//!
//! Time is the packets' receive time, so an offline run is as deterministic with the limiter as without. Off by
//! default (`Worker::icmp_limiter` is `None`: offline runs answer every frame, as the kernel differential tests
//! expect of a few frames); the live router turns it on.

use std::collections::HashMap;
use std::net::IpAddr;

/// Messages a destination may receive in a burst.
pub const PEER_BURST: u64 = 6;
/// One more message per destination per this interval (ns).
pub const PEER_INTERVAL_NS: u64 = 1_000_000_000;
/// Messages in a burst over all destinations.
pub const GLOBAL_BURST: u64 = 50;
/// Messages per second over all destinations.
pub const GLOBAL_PER_SEC: u64 = 1000;
/// Destinations remembered at most; past it the table starts again (every destination with a full bucket), so
/// that a flood of sources cannot grow it.
pub const MAX_PEERS: usize = 4096;

/// A token bucket whose credit is time: a message costs `cost` ns of credit, credit accrues with time up to `cap`.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    credit: u64,
    last: u64,
}

impl Bucket {
    fn full(cap: u64, now: u64) -> Bucket {
        Bucket {
            credit: cap,
            last: now,
        }
    }

    fn take(&mut self, now: u64, cost: u64, cap: u64) -> bool {
        let credit = self
            .credit
            .saturating_add(now.saturating_sub(self.last))
            .min(cap);
        self.last = self.last.max(now);
        if credit >= cost {
            self.credit = credit - cost;
            true
        } else {
            self.credit = credit;
            false
        }
    }
}

/// The per-destination and global limits of one worker.
#[derive(Debug, Clone, Default)]
pub struct IcmpLimiter {
    peers: HashMap<IpAddr, Bucket>,
    global: Option<Bucket>,
}

impl IcmpLimiter {
    /// Whether an error to `dst` may be sent at `now` (ns); if so, it is counted against both limits.
    pub fn allow(&mut self, dst: IpAddr, now: u64) -> bool {
        const GLOBAL_COST: u64 = 1_000_000_000 / GLOBAL_PER_SEC;
        let peer_cap = PEER_BURST * PEER_INTERVAL_NS;
        let global_cap = GLOBAL_BURST * GLOBAL_COST;
        if self.peers.len() >= MAX_PEERS && !self.peers.contains_key(&dst) {
            self.peers.clear();
        }
        let peer = self
            .peers
            .entry(dst)
            .or_insert_with(|| Bucket::full(peer_cap, now));
        // The destination's bucket first, as Linux checks it first; a refusal there costs no global credit.
        let mut trial = *peer;
        if !trial.take(now, PEER_INTERVAL_NS, peer_cap) {
            *peer = trial;
            return false;
        }
        let global = self
            .global
            .get_or_insert_with(|| Bucket::full(global_cap, now));
        if !global.take(now, GLOBAL_COST, global_cap) {
            return false;
        }
        *peer = trial;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn a_destination_gets_a_burst_of_six_then_one_a_second() {
        let mut l = IcmpLimiter::default();
        let a: IpAddr = "fd00:1::1".parse().unwrap();
        let b: IpAddr = "10.1.0.1".parse().unwrap();
        let sent = (0..10).filter(|_| l.allow(a, 5 * S)).count();
        assert_eq!(sent, 6);
        // Another destination has its own bucket.
        assert!(l.allow(b, 5 * S));
        // Half a second later: nothing; a second later: one.
        assert!(!l.allow(a, 5 * S + S / 2));
        assert!(l.allow(a, 6 * S));
        assert!(!l.allow(a, 6 * S));
        // After a long pause the burst is back, not more.
        assert_eq!((0..10).filter(|_| l.allow(a, 100 * S)).count(), 6);
    }

    #[test]
    fn all_destinations_share_fifty_then_a_thousand_a_second() {
        let mut l = IcmpLimiter::default();
        let dst = |i: u32| IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + i));
        assert_eq!((0..100).filter(|i| l.allow(dst(*i), S)).count(), 50);
        // 10 ms later: ten more messages' worth.
        assert_eq!(
            (100..200).filter(|i| l.allow(dst(*i), S + S / 100)).count(),
            10
        );
    }

    #[test]
    fn the_table_of_destinations_is_bounded() {
        let mut l = IcmpLimiter::default();
        for i in 0..(3 * MAX_PEERS as u32) {
            l.allow(IpAddr::from(std::net::Ipv4Addr::from(i)), u64::from(i) * S);
        }
        assert!(l.peers.len() <= MAX_PEERS);
    }
}
