//! Resident memory per route: a table loaded whole, then batches of routes added and removed at run time through
//! the snapshot writer (as the control socket applies them). `cargo run --release -p lwt6-dataplane --example
//! route_memory -- [FILE_ROUTES]`.

use lwt6_dataplane::snapshot::{Change, Snapshot, SnapshotHandle, SnapshotWriter};
use lwt6_dataplane::spec::Route;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;

fn rss() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = s
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// A small xorshift generator: the same sequence every run.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn route(prefix: u128, len: u8) -> Route {
    Route {
        prefix: ipnet::Ipv6Net::new(Ipv6Addr::from(prefix), len)
            .unwrap()
            .into(),
        via: Some(IpAddr::V6("fd00:2::2".parse().unwrap())),
        dev: Some("v0".into()),
        metric: 1024,
        mtu: None,
        encap: None,
        table: 254,
        line: 0,
        reject: None,
    }
}

fn del(r: &Route) -> Change {
    Change::DelRoute {
        prefix: r.prefix,
        metric: r.metric,
        table: r.table,
        line: 0,
    }
}

fn main() {
    println!(
        "sizes: Route {} RouteEntry {} Change {}",
        std::mem::size_of::<Route>(),
        std::mem::size_of::<lwt6_dataplane::fib::RouteEntry>(),
        std::mem::size_of::<Change>()
    );
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(300_000);
    let base = rss();
    let cfg = lwt6_lab::bench::fib::config(n, 10);
    let snap = Snapshot::build_from(cfg).unwrap();
    let loaded = rss();
    println!(
        "file: {n} routes, {} B/route ({} MiB)",
        (loaded - base) / n as u64,
        loaded >> 20
    );
    let handle = Arc::new(SnapshotHandle::new(snap));
    let mut w = SnapshotWriter::new(Arc::clone(&handle));
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for (what, count, len) in [("/64", 100_000usize, 64u8), ("/128", 20_000, 128)] {
        let before = rss();
        let mut seen = std::collections::HashSet::new();
        let mut routes: Vec<Route> = Vec::with_capacity(count);
        while routes.len() < count {
            // Random prefixes of 2001:db8::/32.
            let bits = (0x2001_0db8u128 << 96)
                | (u128::from(rng.next() as u32) << 64)
                | u128::from(rng.next());
            let bits = bits & !((1u128 << (128 - u32::from(len))) - 1);
            if seen.insert(bits) {
                routes.push(route(bits, len));
            }
        }
        let dels: Vec<Change> = routes.iter().map(del).collect();
        let adds: Vec<Change> = routes.into_iter().map(Change::AddRoute).collect();
        w.apply(&adds).unwrap();
        drop(adds);
        w.apply(&[]).unwrap();
        let added = rss();
        w.apply(&dels).unwrap();
        w.apply(&[]).unwrap();
        drop(dels);
        let after = rss();
        println!(
            "{count} {what}: before {} MiB, after adds {} MiB ({} B/route), after deletes {} MiB",
            before >> 20,
            added >> 20,
            (added - before) / count as u64,
            after >> 20
        );
    }
}
