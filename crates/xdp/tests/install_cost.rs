//! How long a snapshot's tables take to build (`tables`) and install (`Tier::install`) at 10k and 300k routes:
//! the first installation and an unchanged snapshot, in CPU time; then what one route change costs the driver's
//! maps, installed whole (`tables` + `install`, the path before `lwt6_xdp::delta`) and from the change
//! (`delta::routes` + `Tier::update`), with the check that a whole installation afterwards finds nothing left to
//! change. A measurement (ignored; run as root with
//! `cargo test --release -p lwt6-xdp --test install_cost -- --ignored --nocapture`).

use lwt6_dataplane::snapshot::{Change, Snapshot, SnapshotHandle, SnapshotWriter};
use lwt6_xdp::{Sizes, Tier};
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

/// The calling thread's CPU time (the machine may be shared: wall time would count the others' work).
fn cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one `timespec` into `ts`, a live, exclusively borrowed value.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// A router with `n` /64 routes through two gateways (one plan each) and, every 100th, a seg6 encap route.
fn config(n: usize) -> String {
    let mut t = String::from(
        "link add r0 address 02:00:00:00:01:02\nlink add r1 address 02:00:00:00:02:01\n\
         addr add fd00:1::2/64 dev r0\naddr add fd00:2::1/64 dev r1\n\
         neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1\nneigh add fd00:2::3 lladdr 02:00:00:00:02:03 dev r1\n\
         -6 route add fc00::/16 via fd00:2::2 dev r1\n",
    );
    for i in 0..n {
        let (a, b) = (0x2000 + i / 65536, i % 65536);
        if i % 100 == 0 {
            let _ = writeln!(
                t,
                "-6 route add {a:x}:{b:x}::/64 encap seg6 mode encap segs fc00::{:x} dev r1",
                i / 100 % 50 + 1
            );
        } else {
            let _ = writeln!(
                t,
                "-6 route add {a:x}:{b:x}::/64 via fd00:2::{} dev r1",
                2 + i % 2
            );
        }
    }
    t
}

#[test]
#[ignore = "a measurement: run it by name with --ignored --nocapture, as root"]
fn tables_and_install_at_10k_and_300k_routes() {
    for n in [10_000usize, 300_000] {
        let cfg = lwt6_config::parse(&config(n)).expect("configuration parses");
        let snap = Snapshot::build(&cfg).expect("snapshot");
        let sizes = Sizes {
            routes: (2 * n as u32).max(1 << 16),
            ..Sizes::default()
        };
        let mut tier = Tier::load(sizes).expect("the XDP program loads (root, clang-19 build)");
        let t0 = cpu();
        let t = lwt6_xdp::tables(&snap);
        let built = cpu() - t0;
        let i0 = cpu();
        let first = tier.install(&t).expect("installed");
        let installed = cpu() - i0;
        let s0 = cpu();
        let t = lwt6_xdp::tables(&snap);
        let again = tier.install(&t).expect("installed");
        let same = cpu() - s0;
        println!(
            "{n} routes ({} LPM entries, {} plans), CPU time: tables() {:.1} ms, first install {:.1} ms ({first:?}); \
             unchanged snapshot, tables() + install {:.1} ms ({again:?})",
            t.routes.len(),
            t.plans.len(),
            built.as_secs_f64() * 1e3,
            installed.as_secs_f64() * 1e3,
            same.as_secs_f64() * 1e3,
        );
        churn(n, snap, &mut tier);
    }
}

/// The route change number `i` of a cycle of three on a prefix of its own: added through a gateway, replaced by a
/// seg6 encap route, removed.
fn change(i: usize) -> Change {
    let net = format!("3000:{:x}::/64", i / 3);
    match i % 3 {
        0 => Change::AddRoute(route(&format!("-6 route add {net} via fd00:2::2 dev r1"))),
        1 => Change::ReplaceRoute(route(&format!(
            "-6 route replace {net} encap seg6 mode encap segs fc00::{:x} dev r1",
            i % 50 + 1
        ))),
        _ => Change::DelRoute {
            prefix: net.parse().expect("a prefix"),
            metric: 1024,
            table: 254,
            line: 0,
        },
    }
}

fn route(line: &str) -> lwt6_dataplane::spec::Route {
    let cfg = lwt6_config::parse(&format!(
        "link add r1 address 02:00:00:00:02:01\naddr add fd00:2::1/64 dev r1\n{line}\n"
    ))
    .expect("parses");
    cfg.routes.last().expect("a route").clone()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Route changes one by one: installed whole (as before) and from the change.
fn churn(n: usize, snap: Snapshot, tier: &mut Tier) {
    let handle = Arc::new(SnapshotHandle::new(snap));
    handle.follow_changes();
    let mut w = SnapshotWriter::new(Arc::clone(&handle));
    let mut since = handle.generation();
    // Installed whole after each change: a few (each walks the table).
    let whole_n = if n > 100_000 { 6 } else { 30 };
    let mut whole = Vec::new();
    let mut i = 0;
    for _ in 0..whole_n {
        w.apply(&[change(i)]).expect("applies");
        i += 1;
        let t0 = cpu();
        let t = lwt6_xdp::tables(&handle.load());
        tier.install(&t).expect("installed");
        whole.push(cpu() - t0);
    }
    since = handle.changes_since(since).0;
    // From the changes: 3,000 changes, one publication each.
    let mut each = Vec::new();
    let mut written = (0, 0, 0);
    for _ in 0..3_000 {
        w.apply(&[change(i)]).expect("applies");
        i += 1;
        let t0 = cpu();
        let (now, changes) = handle.changes_since(since);
        since = now;
        let changes = changes.expect("the journal holds the change");
        let routes = lwt6_xdp::delta::routes(&handle.load(), &changes, tier.way_routes())
            .expect("route changes");
        let done = tier
            .update(&routes)
            .expect("updated")
            .expect("no End.DT6 here");
        each.push(cpu() - t0);
        written.0 += done.routes_set;
        written.1 += done.routes_removed;
        written.2 += done.plans_written;
    }
    // Batches of 1,000 changes in one publication: routes added, then removed.
    let mut batch_t = Vec::new();
    for del in [false, true] {
        let batch: Vec<Change> = (0..1000)
            .map(|k| {
                let net = format!("4000:{k:x}::/64");
                if del {
                    Change::DelRoute {
                        prefix: net.parse().expect("a prefix"),
                        metric: 1024,
                        table: 254,
                        line: 0,
                    }
                } else {
                    Change::AddRoute(route(&format!("-6 route add {net} via fd00:2::3 dev r1")))
                }
            })
            .collect();
        w.apply(&batch).expect("applies");
        let t0 = cpu();
        let (now, changes) = handle.changes_since(since);
        since = now;
        let routes = lwt6_xdp::delta::routes(
            &handle.load(),
            &changes.expect("journal"),
            tier.way_routes(),
        )
        .expect("routes");
        let done = tier.update(&routes).expect("updated").expect("no End.DT6");
        batch_t.push(cpu() - t0);
        assert_eq!(
            (done.routes_set, done.routes_removed),
            if del { (0, 1000) } else { (1000, 0) }
        );
    }
    // What the changes left is what a whole installation makes.
    let again = tier
        .install(&lwt6_xdp::tables(&handle.load()))
        .expect("installed");
    assert_eq!(
        (again.routes_set, again.routes_removed, again.plans_written),
        (0, 0, 0),
        "a whole installation after the changes found something to change"
    );
    println!(
        "{n} routes, one route change per publication, CPU time: installed whole (tables() + install) median {:.2} ms \
         of {whole_n}; from the change (changes_since + delta::routes + Tier::update) median {:.1} us of 3,000 \
         ({} LPM entries set, {} removed, {} plans written); a batch of 1,000 routes added {:.2} ms, removed {:.2} ms",
        median(whole).as_secs_f64() * 1e3,
        median(each).as_secs_f64() * 1e6,
        written.0,
        written.1,
        written.2,
        batch_t[0].as_secs_f64() * 1e3,
        batch_t[1].as_secs_f64() * 1e3,
    );
}

/// The BPF maps of this process: (map type, key size, value size, max entries, memlock bytes) from
/// `/proc/self/fdinfo` (the kernel's own estimate of each map's memory).
fn maps() -> Vec<(u32, u32, u32, u32, u64)> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc/self/fdinfo")
        .expect("fdinfo")
        .flatten()
    {
        let Ok(text) = std::fs::read_to_string(e.path()) else {
            continue;
        };
        let field = |k: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(k)?.trim().parse::<u64>().ok())
        };
        if let (Some(t), Some(k), Some(val), Some(m), Some(mem)) = (
            field("map_type:"),
            field("key_size:"),
            field("value_size:"),
            field("max_entries:"),
            field("memlock:"),
        ) {
            v.push((t as u32, k as u32, val as u32, m as u32, mem));
        }
    }
    v.sort();
    v
}

/// `/proc/meminfo`'s unreclaimable slab, vmalloc and per-CPU memory, in bytes (system-wide: other work on the
/// machine moves it too).
fn kernel_memory() -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").expect("meminfo");
    ["SUnreclaim:", "VmallocUsed:", "Percpu:"]
        .iter()
        .map(|k| {
            text.lines()
                .find_map(|l| l.strip_prefix(k))
                .and_then(|r| r.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                .unwrap_or(0)
                * 1024
        })
        .sum()
}

#[test]
#[ignore = "a measurement: run it by name with --ignored --nocapture, as root"]
fn map_memory_per_route() {
    for n in [10_000usize, 300_000] {
        let cfg = lwt6_config::parse(&config(n)).expect("configuration parses");
        let snap = Snapshot::build(&cfg).expect("snapshot");
        let t = lwt6_xdp::tables(&snap);
        // As `lwt6 run` sizes them (crates/router/src/xdp_tier.rs `sizes`).
        let sizes = Sizes {
            routes: (2 * n as u32).max(1 << 20),
            plans: 4096,
            ..Sizes::default()
        };
        let mut runs = Vec::new();
        for _ in 0..3 {
            let k0 = kernel_memory();
            let mut tier = Tier::load(sizes).expect("the XDP program loads (root, clang-19 build)");
            let k1 = kernel_memory();
            let m1 = maps();
            tier.install(&t).expect("installed");
            let k2 = kernel_memory();
            let m2 = maps();
            drop(tier);
            runs.push((k1 as i64 - k0 as i64, k2 as i64 - k1 as i64, m1, m2));
            std::thread::sleep(Duration::from_millis(500));
        }
        runs.sort_by_key(|r| r.1);
        let (loaded, installed, m1, m2) = &runs[1];
        println!(
            "{n} routes ({} LPM entries, {} plans): kernel memory (SUnreclaim + VmallocUsed + Percpu, median of 3) \
             loading {:.1} MB, installing {:.1} MB = {:.0} B per route",
            t.routes.len(),
            t.plans.len(),
            *loaded as f64 / 1e6,
            *installed as f64 / 1e6,
            *installed as f64 / n as f64
        );
        for ((ty, k, v, max, before), (_, _, _, _, after)) in m1.iter().zip(m2) {
            println!(
                "  map type {ty:2} key {k:3} value {v:4} max {max:8}: memlock loaded {before:10} B, installed {after:10} B"
            );
        }
    }
}
