//! `lwt6 bench fib`: the routing table at Internet scale. Builds a snapshot of N generated IPv6 routes (a share of
//! them seg6 encap), then measures longest-prefix-match lookups per second on one core with random destinations:
//! half inside a configured prefix (random host bits), half anywhere (misses, with no default route), and the
//! hits alone.

use lwt6_dataplane::snapshot::Snapshot;
use lwt6_dataplane::spec::{Addr, Config, Encap, Link, Neigh, Route, Seg6Encap, Seg6Mode};
use std::hint::black_box;
use std::net::{IpAddr, Ipv6Addr};
use std::time::Instant;

/// What to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FibOptions {
    /// Routes in the table.
    pub routes: usize,
    /// Every n-th route is seg6 encap (0: none).
    pub seg6_every: usize,
    /// Lookups per run.
    pub lookups: usize,
    /// Runs (the median is reported).
    pub runs: usize,
}

impl Default for FibOptions {
    fn default() -> Self {
        FibOptions {
            routes: 1_000_000,
            seg6_every: 10,
            lookups: 4_000_000,
            runs: 5,
        }
    }
}

/// What was measured.
#[derive(Debug, Clone, PartialEq)]
pub struct FibReport {
    /// The options.
    pub opts: FibOptions,
    /// Seconds to build the snapshot (FIB, plans, templates) from the typed configuration.
    pub build_secs: f64,
    /// Resident memory the snapshot added, in bytes per route (from `/proc/self/statm`; 0 where unreadable).
    pub bytes_per_route: f64,
    /// Forwarding plans the routes share, and the bytes of their templates.
    pub plans: (usize, usize),
    /// Million lookups per second, random destinations (half misses): median, min, max of the runs.
    pub mixed: (f64, f64, f64),
    /// Share of the mixed destinations that matched a route.
    pub mixed_hit_ratio: f64,
    /// Million lookups per second, destinations inside configured prefixes only: median, min, max.
    pub hits: (f64, f64, f64),
}

/// The n-th generated /48 (n from 1): spread over 2000::/4 the way `scripts/bench-fib-load.sh` writes them.
pub fn prefix(n: usize) -> Ipv6Addr {
    let a = 0x2000 | ((n >> 24) & 0xfff) as u16;
    Ipv6Addr::new(
        a,
        ((n >> 12) & 0xfff) as u16,
        (n & 0xfff) as u16,
        0,
        0,
        0,
        0,
        0,
    )
}

/// The configuration: one interface with a neighbour, a route to the SIDs (fc00::/16), `routes` /48s via the
/// neighbour, every `seg6_every`-th of them seg6 encap.
pub fn config(routes: usize, seg6_every: usize) -> Config {
    let dev = "v0".to_string();
    let mut c = Config::default();
    c.links.push(Link {
        name: dev.clone(),
        mac: Some([2, 0, 0, 0, 2, 1]),
        mtu: 1500,
        line: 1,
    });
    let local: Ipv6Addr = "fd00:2::1".parse().expect("address");
    let gw: Ipv6Addr = "fd00:2::2".parse().expect("address");
    c.addrs.push(Addr {
        addr: IpAddr::V6(local),
        prefix_len: 64,
        dev: dev.clone(),
        line: 2,
    });
    c.neighs.push(Neigh {
        addr: IpAddr::V6(gw),
        lladdr: [2, 0, 0, 0, 2, 2],
        dev: dev.clone(),
        line: 3,
    });
    // The SIDs' own route.
    c.routes.push(Route {
        prefix: "fc00::/16".parse().expect("prefix"),
        via: Some(IpAddr::V6(gw)),
        dev: Some(dev.clone()),
        metric: 1024,
        mtu: None,
        encap: None,
        line: 4,
    });
    for n in 1..=routes {
        let seg6 = seg6_every > 0 && n % seg6_every == 0;
        let sid = Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, (n % 65535 + 1) as u16);
        c.routes.push(Route {
            prefix: ipnet::Ipv6Net::new(prefix(n), 48).expect("prefix").into(),
            via: (!seg6).then_some(IpAddr::V6(gw)),
            dev: Some(dev.clone()),
            metric: 1024,
            mtu: None,
            encap: seg6.then(|| {
                Encap::Seg6(Seg6Encap {
                    mode: Seg6Mode::Encap,
                    segs: vec![sid, "fc00::b".parse().expect("address")],
                    hmac: None,
                    tunsrc: None,
                })
            }),
            line: 4 + n,
        });
    }
    c
}

/// A small fast generator (xorshift*), so that destinations are the same in every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn rss_bytes() -> Option<usize> {
    let s = std::fs::read_to_string("/proc/self/statm").ok()?;
    Some(s.split_whitespace().nth(1)?.parse::<usize>().ok()? * 4096)
}

/// Runs the measurement.
pub fn run(opts: FibOptions) -> Result<FibReport, String> {
    if opts.routes == 0 || opts.lookups == 0 || opts.runs == 0 {
        return Err("--routes, --lookups and --runs must be at least 1".into());
    }
    if opts.routes > 0xfff_ffff {
        return Err(format!(
            "--routes {}: at most {} (the generated /48s)",
            opts.routes, 0xfff_ffff
        ));
    }
    let cfg = config(opts.routes, opts.seg6_every);
    let before = rss_bytes();
    let t = Instant::now();
    let snap = Snapshot::build(&cfg).map_err(|e| e.to_string())?;
    let build_secs = t.elapsed().as_secs_f64();
    let after = rss_bytes();
    drop(cfg);
    let bytes_per_route = match (before, after) {
        (Some(b), Some(a)) => a.saturating_sub(b) as f64 / opts.routes as f64,
        _ => 0.0,
    };
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let inside = |rng: &mut Rng| {
        let n = (rng.next() % opts.routes as u64) as usize + 1;
        let host = rng.next() as u128 & ((1u128 << 80) - 1);
        Ipv6Addr::from(u128::from(prefix(n)) | host)
    };
    let mixed: Vec<Ipv6Addr> = (0..opts.lookups)
        .map(|i| {
            if i % 2 == 0 {
                inside(&mut rng)
            } else {
                Ipv6Addr::from((u128::from(rng.next()) << 64) | u128::from(rng.next()))
            }
        })
        .collect();
    let hits: Vec<Ipv6Addr> = (0..opts.lookups).map(|_| inside(&mut rng)).collect();
    let fib = snap.fib();
    let matched = mixed
        .iter()
        .filter(|d| fib.lookup_v6(**d).is_some())
        .count();
    let measure = |dsts: &[Ipv6Addr]| {
        let mut rates = Vec::with_capacity(opts.runs);
        for _ in 0..opts.runs {
            let t = Instant::now();
            let mut found = 0usize;
            for d in dsts {
                found += usize::from(fib.lookup_v6(black_box(*d)).is_some());
            }
            black_box(found);
            rates.push(dsts.len() as f64 / t.elapsed().as_secs_f64() / 1e6);
        }
        rates.sort_by(f64::total_cmp);
        (rates[rates.len() / 2], rates[0], rates[rates.len() - 1])
    };
    let mixed_rate = measure(&mixed);
    let hits_rate = measure(&hits);
    Ok(FibReport {
        opts,
        build_secs,
        bytes_per_route,
        plans: snap.plan_stats(),
        mixed: mixed_rate,
        mixed_hit_ratio: matched as f64 / mixed.len() as f64,
        hits: hits_rate,
    })
}

impl FibReport {
    /// The report for people.
    pub fn text(&self) -> String {
        let o = &self.opts;
        format!(
            "{} routes ({} seg6 encap), snapshot built in {:.2} s, {:.0} bytes/route resident, {} plans ({} template bytes)\n\
             lookups/s, one core, {} destinations x {} runs:\n  \
             random (hit ratio {:.2}): {:.1} M/s (min {:.1}, max {:.1})\n  \
             hits only:              {:.1} M/s (min {:.1}, max {:.1})\n",
            o.routes,
            o.routes.checked_div(o.seg6_every).unwrap_or(0),
            self.build_secs,
            self.bytes_per_route,
            self.plans.0,
            self.plans.1,
            o.lookups,
            o.runs,
            self.mixed_hit_ratio,
            self.mixed.0,
            self.mixed.1,
            self.mixed.2,
            self.hits.0,
            self.hits.1,
            self.hits.2,
        )
    }

    /// The report for scripts.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "routes": self.opts.routes,
            "seg6_every": self.opts.seg6_every,
            "lookups": self.opts.lookups,
            "runs": self.opts.runs,
            "build_secs": self.build_secs,
            "bytes_per_route": self.bytes_per_route,
            "plans": self.plans.0,
            "template_bytes": self.plans.1,
            "mixed_mlookups_per_s": {"median": self.mixed.0, "min": self.mixed.1, "max": self.mixed.2},
            "mixed_hit_ratio": self.mixed_hit_ratio,
            "hits_mlookups_per_s": {"median": self.hits.0, "min": self.hits.1, "max": self.hits.2},
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_table_answers_its_own_prefixes_and_misses_elsewhere() {
        let r = run(FibOptions {
            routes: 3000,
            seg6_every: 10,
            lookups: 2000,
            runs: 1,
        })
        .unwrap();
        // Half the mixed destinations are inside a prefix; random others almost never are.
        assert!(
            (0.45..0.56).contains(&r.mixed_hit_ratio),
            "{}",
            r.mixed_hit_ratio
        );
        // One plan for the 2700 plain routes and fc00::/16, one per seg6 route.
        assert_eq!(r.plans.0, 1 + 300);
        let snap = Snapshot::build(&config(3000, 10)).unwrap();
        let got = snap.fib().lookup_v6(prefix(20)).unwrap();
        assert!(got.tunnel.is_some(), "route 20 is seg6");
        assert!(snap.fib().lookup_v6(prefix(21)).unwrap().tunnel.is_none());
        assert!(snap.fib().lookup_v6("3fff::1".parse().unwrap()).is_none());
    }

    #[test]
    fn bad_options_are_refused() {
        let o = FibOptions {
            runs: 0,
            ..FibOptions::default()
        };
        assert!(run(o).is_err());
    }
}
