//! How long a snapshot's tables take to build (`tables`) and install (`Tier::install`) at 10k and 300k routes:
//! the first installation and an unchanged snapshot (what every publication costs), in CPU time. A measurement, not a check (ignored;
//! run as root with `cargo test --release -p lwt6-xdp --test install_cost -- --ignored --nocapture`).

use lwt6_dataplane::snapshot::Snapshot;
use lwt6_xdp::{Sizes, Tier};
use std::fmt::Write as _;
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
    }
}
