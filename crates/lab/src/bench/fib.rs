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
    /// Route changes to apply to the published table after the lookups (0: none), half additions of new /48s,
    /// half removals of them, in batches of `batch`.
    pub changes: usize,
    /// Changes per published batch.
    pub batch: usize,
}

impl Default for FibOptions {
    fn default() -> Self {
        FibOptions {
            routes: 1_000_000,
            seg6_every: 10,
            lookups: 4_000_000,
            runs: 5,
            changes: 0,
            batch: 100,
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
    /// Route changes applied and published per second (with a worker thread forwarding from the same handle the
    /// whole time), the seconds the writer's one copy of the table took, and the worker's batches meanwhile.
    pub changes: Option<ChangeReport>,
}

/// Route changes under traffic.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeReport {
    /// Changes applied and published per second.
    pub per_sec: f64,
    /// Seconds to make the writer's spare copy (once).
    pub copy_secs: f64,
    /// Batches of 256 packets the worker thread forwarded meanwhile.
    pub worker_batches: u64,
    /// Publications.
    pub publications: usize,
}

/// Applies `opts.changes` route changes through a [`SnapshotWriter`] while a worker forwards from the same handle.
fn changes(snap: Snapshot, opts: &FibOptions) -> Result<ChangeReport, String> {
    use lwt6_dataplane::snapshot::{Change, SnapshotHandle, SnapshotWriter};
    use lwt6_dataplane::worker::Worker;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let handle = Arc::new(SnapshotHandle::new(snap));
    let t = Instant::now();
    let mut writer = SnapshotWriter::new(Arc::clone(&handle));
    let copy_secs = t.elapsed().as_secs_f64();
    let stop = Arc::new(AtomicBool::new(false));
    let worker = {
        let (handle, stop) = (Arc::clone(&handle), Arc::clone(&stop));
        std::thread::spawn(move || {
            // A 78-byte UDP frame to the first generated prefix, addressed to v0.
            let mut frame = crate::bench::frames(crate::bench::DEFAULT_FRAME_LEN).swap_remove(0);
            frame[..6].copy_from_slice(&[2, 0, 0, 0, 2, 1]);
            frame[14 + 24..14 + 40].copy_from_slice(&(u128::from(prefix(1)) | 1).to_be_bytes());
            let frames = vec![frame; 256];
            let mut w = Worker::new(&handle.load());
            let mut batches = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let snap = handle.load();
                w.process_batch(
                    &snap,
                    frames.iter().map(|f| (0usize, 0u64, f.as_slice())),
                    &mut |_, _, _| {},
                );
                batches += 1;
            }
            batches
        })
    };
    let gw: Ipv6Addr = "fd00:2::2".parse().expect("address");
    let fresh = |k: usize| Route {
        reject: None,
        prefix: ipnet::Ipv6Net::new(prefix(opts.routes + 1 + k), 48)
            .expect("prefix")
            .into(),
        via: Some(IpAddr::V6(gw)),
        dev: Some("v0".into()),
        metric: 1024,
        mtu: None,
        encap: None,
        table: 254,
        line: 0,
    };
    let batch = opts.batch.max(1);
    let mut log: Vec<Change> = Vec::with_capacity(opts.changes);
    for k in 0..opts.changes / 2 {
        log.push(Change::AddRoute(fresh(k)));
    }
    for k in 0..opts.changes / 2 {
        let r = fresh(k);
        log.push(Change::DelRoute {
            prefix: r.prefix,
            metric: r.metric,
            table: r.table,
            line: 0,
        });
    }
    let t = Instant::now();
    let mut publications = 0;
    for chunk in log.chunks(batch) {
        writer
            .apply(chunk)
            .map_err(|(i, e)| format!("change {i} of a batch: {e}"))?;
        publications += 1;
    }
    let secs = t.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let worker_batches = worker.join().map_err(|_| "the worker thread panicked")?;
    Ok(ChangeReport {
        per_sec: log.len() as f64 / secs,
        copy_secs,
        worker_batches,
        publications,
    })
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
    // One shared name for every route's device, as the parser gives.
    let shared: lwt6_dataplane::spec::DevName = dev.as_str().into();
    // The SIDs' own route.
    c.routes.push(Route {
        reject: None,
        prefix: "fc00::/16".parse().expect("prefix"),
        via: Some(IpAddr::V6(gw)),
        dev: Some(shared.clone()),
        metric: 1024,
        mtu: None,
        encap: None,
        table: 254,
        line: 4,
    });
    for n in 1..=routes {
        let seg6 = seg6_every > 0 && n % seg6_every == 0;
        let sid = Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, (n % 65535 + 1) as u16);
        c.routes.push(Route {
            reject: None,
            prefix: ipnet::Ipv6Net::new(prefix(n), 48).expect("prefix").into(),
            via: (!seg6).then_some(IpAddr::V6(gw)),
            dev: Some(shared.clone()),
            metric: 1024,
            mtu: None,
            encap: seg6.then(|| {
                Box::new(Encap::Seg6(Seg6Encap {
                    mode: Seg6Mode::Encap,
                    segs: vec![sid, "fc00::b".parse().expect("address")],
                    hmac: None,
                    tunsrc: None,
                }))
            }),
            table: 254,
            line: lwt6_dataplane::fib::line32(4 + n),
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
    let plans = snap.plan_stats();
    let changes = if opts.changes > 0 {
        Some(changes(snap, &opts)?)
    } else {
        None
    };
    Ok(FibReport {
        opts,
        build_secs,
        bytes_per_route,
        plans,
        mixed: mixed_rate,
        mixed_hit_ratio: matched as f64 / mixed.len() as f64,
        hits: hits_rate,
        changes,
    })
}

impl FibReport {
    /// The report for people.
    pub fn text(&self) -> String {
        let o = &self.opts;
        let changes = match &self.changes {
            Some(c) => format!(
                "route changes: {:.0}/s ({} changes in {} batches of {}, each published; a worker forwarded {} \
                 batches meanwhile; the writer's one copy of the table took {:.2} s)\n",
                c.per_sec, o.changes, c.publications, o.batch, c.worker_batches, c.copy_secs
            ),
            None => String::new(),
        };
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
        ) + &changes
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
            "changes": self.changes.as_ref().map(|c| serde_json::json!({
                "count": self.opts.changes,
                "batch": self.opts.batch,
                "per_sec": c.per_sec,
                "publications": c.publications,
                "copy_secs": c.copy_secs,
                "worker_batches": c.worker_batches,
            })),
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
            changes: 200,
            batch: 10,
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
        let c = r.changes.unwrap();
        assert_eq!(c.publications, 20);
        assert!(c.per_sec > 0.0);
        let snap = Snapshot::build(&config(3000, 10)).unwrap();
        let got = snap.fib().lookup_v6(prefix(20)).unwrap();
        assert!(got.tunnel.get().is_some(), "route 20 is seg6");
        assert!(
            snap.fib()
                .lookup_v6(prefix(21))
                .unwrap()
                .tunnel
                .get()
                .is_none()
        );
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
