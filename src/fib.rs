//! The routing table: IPv6 and IPv4 longest-prefix match over immutable snapshots.
//!
//! The control plane builds a [`Fib`] and publishes it through a [`FibHandle`] (an `ArcSwap`). The data path
//! takes one snapshot per batch and borrows it for every packet of the batch: no reference count is touched per
//! packet (the "noref" idea of the 2026 kernel patch set, done by construction).

use arc_swap::ArcSwap;
use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use prefix_trie::PrefixMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

/// Index of an interface in the router's link table.
pub type DevId = usize;
/// Index of a tunnel in the router's tunnel table.
pub type TunnelId = usize;

/// Where a route came from (as `ip route` shows in `proto`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Configured with `route add`.
    Static,
    /// Derived from `addr add` (connected prefix, `proto kernel`).
    Connected,
}

/// One route.
#[derive(Debug, Clone, PartialEq)]
pub struct RouteEntry {
    /// Destination prefix.
    pub prefix: IpNet,
    /// Gateway.
    pub via: Option<IpAddr>,
    /// Output interface.
    pub dev: Option<DevId>,
    /// Metric: the lowest wins among routes for the same prefix.
    pub metric: u32,
    /// Route MTU (`mtu N`); the interface MTU applies otherwise.
    pub mtu: Option<u32>,
    /// Attached tunnel.
    pub tunnel: Option<TunnelId>,
    /// Origin.
    pub origin: Origin,
    /// Configuration line (0 for derived routes).
    pub line: usize,
}

/// An immutable-once-published routing table.
#[derive(Debug, Clone, Default)]
pub struct Fib {
    v6: PrefixMap<Ipv6Net, Vec<RouteEntry>>,
    v4: PrefixMap<Ipv4Net, Vec<RouteEntry>>,
}

impl Fib {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a route; routes for the same prefix are kept sorted by metric.
    pub fn insert(&mut self, r: RouteEntry) {
        fn add<P: prefix_trie::Prefix>(
            map: &mut PrefixMap<P, Vec<RouteEntry>>,
            p: P,
            r: RouteEntry,
        ) {
            if let Some(v) = map.get_mut(&p) {
                let pos = v.partition_point(|x| x.metric <= r.metric);
                v.insert(pos, r);
            } else {
                map.insert(p, vec![r]);
            }
        }
        match r.prefix {
            IpNet::V6(p) => add(&mut self.v6, p.trunc(), r),
            IpNet::V4(p) => add(&mut self.v4, p.trunc(), r),
        }
    }

    /// Longest-prefix match for an IPv6 destination (lowest metric among equal prefixes).
    pub fn lookup_v6(&self, dst: Ipv6Addr) -> Option<&RouteEntry> {
        let key = Ipv6Net::new(dst, 128).ok()?;
        self.v6.get_lpm(&key).and_then(|(_, v)| v.first())
    }

    /// Longest-prefix match for an IPv4 destination.
    pub fn lookup_v4(&self, dst: Ipv4Addr) -> Option<&RouteEntry> {
        let key = Ipv4Net::new(dst, 32).ok()?;
        self.v4.get_lpm(&key).and_then(|(_, v)| v.first())
    }

    /// Every IPv6 route, in prefix order.
    pub fn routes_v6(&self) -> impl Iterator<Item = &RouteEntry> {
        self.v6.iter().flat_map(|(_, v)| v.iter())
    }

    /// Every IPv4 route, in prefix order.
    pub fn routes_v4(&self) -> impl Iterator<Item = &RouteEntry> {
        self.v4.iter().flat_map(|(_, v)| v.iter())
    }
}

/// The publication point between control plane and data path.
#[derive(Debug)]
pub struct FibHandle {
    current: ArcSwap<Fib>,
}

impl FibHandle {
    /// Publishes an initial table.
    pub fn new(fib: Fib) -> Self {
        FibHandle {
            current: ArcSwap::from_pointee(fib),
        }
    }

    /// Replaces the table; workers see it at their next batch.
    pub fn publish(&self, fib: Fib) {
        self.current.store(Arc::new(fib));
    }

    /// Takes a snapshot for one batch (one reference-count operation per batch, none per packet).
    pub fn snapshot(&self) -> Arc<Fib> {
        self.current.load_full()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(prefix: &str, metric: u32, dev: DevId) -> RouteEntry {
        RouteEntry {
            prefix: prefix.parse().unwrap(),
            via: None,
            dev: Some(dev),
            metric,
            mtu: None,
            tunnel: None,
            origin: Origin::Static,
            line: 0,
        }
    }

    #[test]
    fn longest_prefix_then_lowest_metric() {
        let mut f = Fib::new();
        f.insert(r("::/0", 1024, 0));
        f.insert(r("fc00::/16", 1024, 1));
        f.insert(r("fc00:1::/32", 1024, 2));
        f.insert(r("fc00:1::/32", 10, 3));
        let dev = |a: &str| f.lookup_v6(a.parse().unwrap()).map(|r| r.dev.unwrap());
        assert_eq!(dev("fc00:1::5"), Some(3));
        assert_eq!(dev("fc00:2::5"), Some(1));
        assert_eq!(dev("2001:db8::1"), Some(0));
        assert_eq!(f.lookup_v4("10.0.0.1".parse().unwrap()), None);
        f.insert(r("10.0.0.0/8", 0, 4));
        assert_eq!(
            f.lookup_v4("10.1.2.3".parse().unwrap()).unwrap().dev,
            Some(4)
        );
        assert_eq!(f.routes_v6().count(), 4);
    }

    #[test]
    fn snapshots_are_stable_across_publish() {
        let h = FibHandle::new(Fib::new());
        let old = h.snapshot();
        let mut f = Fib::new();
        f.insert(r("::/0", 1, 0));
        h.publish(f);
        assert!(old.lookup_v6(Ipv6Addr::LOCALHOST).is_none());
        assert!(h.snapshot().lookup_v6(Ipv6Addr::LOCALHOST).is_some());
    }
}
