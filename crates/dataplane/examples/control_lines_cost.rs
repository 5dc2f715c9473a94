//! What one control line costs the snapshot on a large table, in process (no socket, no other thread): the lines
//! of `scripts/bench-route-memory.py` turned into changes (`changes_between`, as the control socket does) and
//! applied to a snapshot of N routes, against building the snapshot anew. `cargo run --release -p lwt6-dataplane
//! --example control_lines_cost -- [ROUTES] [planned]`: the table of `scripts/bench-ctl.py` (/48s through one
//! gateway, one in ten a seg6 encap whose first segment no route reaches); with `planned`, a route to the first
//! segments too, so that every seg6 encap route has a plan (the case where `sr tunsrc set` changes every plan).
//! Each line is applied once to each of two snapshots (what the writer does); the figure is per snapshot, median
//! of 5.

use lwt6_config::Builder;
use lwt6_dataplane::snapshot::{Change, Snapshot, changes_between};
use std::fmt::Write;
use std::time::Instant;

const HEAD: &str = "link add r0 address 02:00:00:00:01:02
link add r1 address 02:00:00:00:02:01
addr add fd00:1::2/64 dev r0
addr add fd00:2::1/64 dev r1
neigh add fd00:1::1 lladdr 02:00:00:00:01:01 dev r0
neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1
";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args
        .get(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let planned = args.iter().any(|a| a == "planned");
    // `rounds=N` lines of each kind (default 5); `only=NAME` times the kind NAME alone (for a profile).
    let opt = |name: &str| args.iter().find_map(|a| a.strip_prefix(name));
    let rounds: u32 = opt("rounds=").and_then(|r| r.parse().ok()).unwrap_or(5);
    let only = opt("only=");
    let mut text = String::from(HEAD);
    if planned {
        text += "-6 route add fc00::/16 via fd00:2::2 dev r1\n";
    }
    for i in 0..n {
        let p = format!("fd10:{:x}:{:x}::/48", i >> 16, i & 0xffff);
        if i % 10 == 0 {
            let _ = writeln!(
                text,
                "-6 route add {p} encap seg6 mode encap segs fc00::{:x} dev r1",
                i % 65535 + 1
            );
        } else {
            let _ = writeln!(text, "-6 route add {p} via fd00:2::2 dev r1");
        }
    }
    let cfg = lwt6_config::parse(&text).expect("the configuration parses");
    let t = Instant::now();
    let mut snap = Snapshot::build(&cfg).expect("it builds");
    let build = t.elapsed();
    println!(
        "{n} routes{}: build {:.1} ms",
        if planned {
            ", seg6 encap routes planned"
        } else {
            ""
        },
        build.as_secs_f64() * 1e3
    );
    let mut b = Builder::from_config(cfg);
    let kinds: &[(&str, &str)] = &[
        (
            "neigh add",
            "neigh add fd00:2::{k} lladdr 02:00:00:00:02:03 dev r1",
        ),
        ("addr add", "addr add fd00:3:{k}::1/64 dev r1"),
        // On the other device: rule 5 keeps r1's source for every tunnel (nothing taken over).
        ("addr add (r0)", "addr add fd00:9:{k}::1/64 dev r0"),
        ("sysctl", "sysctl net.ipv6.ioam6_id={k}"),
        ("ioam namespace add", "ioam namespace add {k}"),
        ("ioam schema add", "ioam schema add {k} s{k}"),
        ("ioam namespace set", "ioam namespace set {k} schema {k}"),
        ("sr tunsrc set", "sr tunsrc set fd00:2::{k}"),
        ("sr hmac set", "sr hmac set {k} sha256 secret s{k}"),
        ("seg6_flowlabel", "sysctl net.ipv6.seg6_flowlabel={f}"),
    ];
    for (name, line) in kinds.iter().filter(|(n, _)| only.is_none_or(|o| o == *n)) {
        let mut times = Vec::new();
        let mut replanned = Vec::new();
        for k in 16..16 + rounds {
            let l = line
                .replace("{k}", &k.to_string())
                .replace("{f}", &((k % 2) as i32 * 2 - 1).to_string());
            let mut tx = b.transaction();
            tx.line(1, &l).expect("the line applies");
            let _ = tx.check().expect("it checks");
            let planned_before = snap.routes_planned();
            let t = Instant::now();
            let changes = changes_between(tx.rest_before().expect("saved"), tx.config(), &snap);
            let Some(changes) = changes else {
                println!("{name}: `{l}` asks for a rebuild");
                tx.commit();
                snap = Snapshot::build(b.config()).expect("it builds");
                continue;
            };
            for c in &changes {
                snap.apply(c).expect("the change applies");
            }
            times.push(t.elapsed().as_secs_f64() * 1e3);
            replanned.push(snap.routes_planned() - planned_before);
            assert!(
                changes.iter().all(|c| !matches!(c, Change::AddRoute(_))),
                "no route in these lines"
            );
            tx.commit();
        }
        times.sort_by(f64::total_cmp);
        if let (Some(lo), Some(hi)) = (times.first(), times.last()) {
            println!(
                "{name}: median {:.3} ms (min {lo:.3}, max {hi:.3}); routes planned again per line: {replanned:?}",
                times[times.len() / 2]
            );
        }
    }
}
