//! Route changes applied to a published snapshot (`Snapshot::apply`, `SnapshotWriter`) must leave exactly the
//! router that building the changed configuration from scratch gives: same frames out, same counters, for frames
//! to every prefix and around them, after every step.

use lwt6_config as config;
use lwt6_dataplane::snapshot::{Change, Snapshot, SnapshotHandle, SnapshotWriter};
use lwt6_dataplane::spec::Route;
use lwt6_dataplane::worker::Worker;
use std::net::Ipv6Addr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

const HEAD: &str = "
link add r0 address 02:00:00:00:01:02
link add r1 address 02:00:00:00:02:01 mtu 1400
addr add fd00:1::2/64 dev r0
addr add fd00:2::1/64 dev r1
neigh add fd00:1::1 lladdr 02:00:00:00:01:01 dev r0
neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1
neigh add fd00:2::3 lladdr 02:00:00:00:02:03 dev r1
sr hmac set 42 sha256 secret mysecret
ioam namespace add 123 data 0xdeadbeef
";

const ROUTES: &[&str] = &[
    "-6 route add fc00::/16 via fd00:2::2 dev r1",
    "-6 route add 2001:db8::/32 via fd00:2::2 dev r1",
    "-6 route add fd00:92::/64 encap seg6 mode encap segs fc00::a,fc00::b dev r1",
    "-6 route add fd00:95::/64 encap seg6 mode encap segs fc00::a,fc00::b hmac 42 dev r1",
    "-6 route add fd00:96::/64 encap seg6 mode inline segs fc00::a dev r1",
    "-6 route add fd00:98::/64 encap rpl segs fc00::a,fc00::1:b dev r1",
    "-6 route add fd00:a1::/64 encap ioam6 mode encap tundst fc00::1 trace prealloc type 0xc00000 ns 123 size 28 dev r1",
];

/// The route a configuration line describes.
fn route(line: &str) -> Route {
    let cfg = config::parse(&format!("{HEAD}{line}\n")).unwrap();
    cfg.routes.last().unwrap().clone()
}

fn build(lines: &[String]) -> Snapshot {
    Snapshot::build(&config::parse(&format!("{HEAD}{}\n", lines.join("\n"))).unwrap()).unwrap()
}

/// A UDP frame from fd00:1::1 to `dst`, received on r0.
fn frame(dst: Ipv6Addr, hlim: u8) -> Vec<u8> {
    let mut f = vec![
        2, 0, 0, 0, 1, 2, 2, 0, 0, 0, 1, 1, 0x86, 0xdd, 0x60, 0, 0, 0, 0, 16, 17, hlim,
    ];
    f.extend("fd00:1::1".parse::<Ipv6Addr>().unwrap().octets());
    f.extend(dst.octets());
    f.extend([
        0x9c, 0x40, 0x0d, 0x05, 0, 16, 0, 0, b'c', b'h', b'a', b'n', b'g', b'e', b's', b'!',
    ]);
    f
}

/// Frames to each route's first address and next to it, and to addresses no route covers.
fn frames(lines: &[String]) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    let all: Vec<&str> = lines
        .iter()
        .map(String::as_str)
        .chain(ROUTES.iter().copied())
        .collect();
    for l in all {
        let r = route(l);
        if let ipnet::IpNet::V6(p) = r.prefix {
            let a = u128::from(p.network());
            for d in [
                a | 1,
                a | 0xabcd,
                a.wrapping_sub(1),
                u128::from(p.broadcast()).wrapping_add(1),
            ] {
                v.push(frame(Ipv6Addr::from(d), 64));
            }
        }
    }
    v.push(frame("3fff::1".parse().unwrap(), 64));
    v.push(frame("fc00::a".parse().unwrap(), 1));
    v
}

/// What a snapshot does with `frames`: frames out (device, bytes) and the counters.
fn run(snap: &Snapshot, frames: &[Vec<u8>]) -> (Vec<(usize, Vec<u8>)>, String) {
    let mut w = Worker::new(snap);
    let mut out = Vec::new();
    w.process_batch(
        snap,
        frames.iter().map(|f| (0usize, 5u64, f.as_slice())),
        &mut |d, _, b| out.push((d, b.to_vec())),
    );
    let s = &w.stats;
    assert!(s.balanced());
    (out, format!("{:?} fast {}", s, s.fast_path))
}

fn del(line: &str) -> Change {
    let r = route(line);
    Change::DelRoute {
        prefix: r.prefix,
        metric: r.metric,
        table: r.table,
        line: 0,
    }
}

/// The steps: what to add and what to remove, and the configuration lines after each.
fn steps() -> Vec<(Vec<Change>, Vec<String>)> {
    let mut lines: Vec<String> = ROUTES.iter().map(|s| s.to_string()).collect();
    let mut steps = Vec::new();
    let mut step = |changes: Vec<Change>, lines: &[String]| steps.push((changes, lines.to_vec()));
    // The SIDs' route goes: every tunnel plan loses its way out.
    lines.retain(|l| l != ROUTES[0]);
    step(vec![del(ROUTES[0])], &lines);
    // A narrower one brings fc00::a and fc00::1 back, through another gateway.
    let l = "-6 route add fc00::/17 via fd00:2::3 dev r1".to_string();
    lines.push(l.clone());
    step(vec![Change::AddRoute(route(&l))], &lines);
    // New routes: a tunnel, a plain route with a metric, one nested inside another.
    let added = [
        "-6 route add fd00:99::/64 encap seg6 mode encap.red segs fc00::c,fc00::d dev r1",
        "-6 route add 2001:db8:1::/48 via fd00:2::3 dev r1 metric 10",
        "-6 route add 2001:db8:1::/48 via fd00:2::2 dev r1 metric 20",
        "-6 route add fd00:92:0:0:8000::/65 via fd00:2::2 dev r1",
    ];
    for l in added {
        lines.push(l.to_string());
    }
    step(
        added.iter().map(|l| Change::AddRoute(route(l))).collect(),
        &lines,
    );
    // Enough /48s to move the lookup from the linear scan to the trie, then some of them away again.
    let many: Vec<String> = (0..40)
        .map(|i| {
            format!(
                "-6 route add 2001:db8:{:x}::/48 via fd00:2::2 dev r1",
                0x100 + i
            )
        })
        .collect();
    lines.extend(many.iter().cloned());
    step(
        many.iter().map(|l| Change::AddRoute(route(l))).collect(),
        &lines,
    );
    let gone: Vec<String> = many.iter().step_by(3).cloned().collect();
    lines.retain(|l| !gone.contains(l));
    step(gone.iter().map(|l| del(l)).collect(), &lines);
    // The lower-metric twin goes: the metric-20 route takes over; the covering /32 goes.
    lines.retain(|l| l != added[1] && l != ROUTES[1]);
    step(vec![del(added[1]), del(ROUTES[1])], &lines);
    // Routes that drop (configured `blackhole` / `unreachable` / `prohibit`): one inside a tunnel's SID route,
    // one over a plain route, one replacing a plain route of the same key; then away again.
    let rejects = [
        "-6 route add unreachable fc00::/18",
        "-6 route add prohibit 2001:db8:101::/48 metric 5",
        "-6 route add blackhole fd00:92:0:0:8000::/65",
    ];
    lines.retain(|l| l != added[3]);
    lines.extend(rejects.iter().map(|l| l.to_string()));
    let mut changes: Vec<Change> = rejects[..2]
        .iter()
        .map(|l| Change::AddRoute(route(l)))
        .collect();
    changes.push(Change::ReplaceRoute(route(rejects[2])));
    step(changes, &lines);
    lines.retain(|l| !rejects.contains(&l.as_str()));
    step(rejects.iter().map(|l| del(l)).collect(), &lines);
    steps
}

#[test]
fn applied_changes_equal_a_rebuild_after_every_step() {
    let mut snap = build(&ROUTES.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    for (i, (changes, lines)) in steps().into_iter().enumerate() {
        for c in &changes {
            snap.apply(c).unwrap_or_else(|e| panic!("step {i}: {e}"));
        }
        let fresh = build(&lines);
        let f = frames(&lines);
        assert_eq!(run(&snap, &f), run(&fresh, &f), "step {i}");
        assert_eq!(snap.fib().len(), fresh.fib().len(), "step {i}");
    }
}

#[test]
fn a_change_that_cannot_apply_changes_nothing() {
    let lines: Vec<String> = ROUTES.iter().map(|s| s.to_string()).collect();
    let mut snap = build(&lines);
    let f = frames(&lines);
    let before = run(&snap, &f);
    let e = snap.apply(&Change::AddRoute(route(ROUTES[1]))).unwrap_err();
    assert!(e.reason.contains("already exists"), "{e}");
    let e = snap
        .apply(&del("-6 route add 2001:db8::/33 via fd00:2::2 dev r1"))
        .unwrap_err();
    assert!(e.reason.contains("no such route"), "{e}");
    let mut bad = route(ROUTES[1]);
    bad.prefix = "2001:db9::/32".parse().unwrap();
    bad.dev = Some("nope".into());
    let e = snap.apply(&Change::AddRoute(bad)).unwrap_err();
    assert_eq!(e.token, "nope");
    let mut nokey = route(ROUTES[3]);
    nokey.prefix = "fd00:9a::/64".parse().unwrap();
    if let Some(lwt6_dataplane::spec::Encap::Seg6(s)) = nokey.encap.as_deref_mut() {
        s.hmac = Some(7);
    }
    let e = snap.apply(&Change::AddRoute(nokey)).unwrap_err();
    assert!(e.reason.contains("HMAC key 7"), "{e}");
    assert_eq!(run(&snap, &f), before);
}

/// The writer publishes every batch; both of its snapshots stay right (each batch is applied to both), while a
/// worker thread forwards from the handle the whole time.
#[test]
fn the_writer_publishes_batches_under_traffic() {
    let base: Vec<String> = ROUTES.iter().map(|s| s.to_string()).collect();
    let handle = Arc::new(SnapshotHandle::new(build(&base)));
    let mut writer = SnapshotWriter::new(Arc::clone(&handle));
    let stop = Arc::new(AtomicBool::new(false));
    let traffic = {
        let (handle, stop) = (Arc::clone(&handle), Arc::clone(&stop));
        let f = frames(&base);
        std::thread::spawn(move || {
            let mut w = Worker::new(&handle.load());
            let mut batches = 0u64;
            while !stop.load(Ordering::Relaxed) || batches < 10 {
                let snap = handle.load();
                w.process_batch(
                    &snap,
                    f.iter().map(|f| (0usize, 1u64, f.as_slice())),
                    &mut |_, _, _| {},
                );
                batches += 1;
            }
            assert!(w.stats.balanced());
            w.stats.rx
        })
    };
    for (i, (changes, lines)) in steps().into_iter().enumerate() {
        writer
            .apply(&changes)
            .unwrap_or_else(|(k, e)| panic!("step {i} change {k}: {e}"));
        let f = frames(&lines);
        assert_eq!(run(&handle.load(), &f), run(&build(&lines), &f), "step {i}");
    }
    // One more batch brings the spare up to date too; it must then equal the published one.
    let last = steps().pop().unwrap().1;
    writer.apply(&[]).unwrap();
    let probe = "-6 route add fd00:7::/64 via fd00:2::2 dev r1";
    writer.apply(&[Change::AddRoute(route(probe))]).unwrap();
    let mut lines = last;
    lines.push(probe.to_string());
    writer.apply(&[del(probe)]).unwrap();
    lines.pop();
    let f = frames(&lines);
    assert_eq!(run(&handle.load(), &f), run(&build(&lines), &f));
    stop.store(true, Ordering::Relaxed);
    assert!(traffic.join().unwrap() > 0);
}

/// The spare caught up between requests (`SnapshotWriter::try_catch_up`, as the control thread does once it has
/// answered): not while a reader holds it, then with the whole batch before; the next batch then applies only its
/// own changes; and every published snapshot, and the spare once published, equals a rebuild.
#[test]
fn the_spare_catches_up_between_batches() {
    let base: Vec<String> = ROUTES.iter().map(|s| s.to_string()).collect();
    let handle = Arc::new(SnapshotHandle::new(build(&base)));
    let mut writer = SnapshotWriter::new(Arc::clone(&handle));
    assert!(!writer.try_catch_up(), "nothing to catch up with");
    for (i, (changes, lines)) in steps().into_iter().enumerate() {
        // A reader holding the published snapshot: once the batch is published it holds the spare.
        let reader = handle.load();
        writer.apply(&changes).unwrap();
        assert_eq!(writer.caught_up(), 0, "step {i}: caught up before");
        if !changes.is_empty() {
            assert!(!writer.try_catch_up(), "step {i}: a reader holds the spare");
            drop(reader);
            assert!(writer.try_catch_up(), "step {i}");
            assert_eq!(writer.caught_up(), changes.len(), "step {i}");
            assert!(!writer.try_catch_up(), "step {i}: once");
        }
        let f = frames(&lines);
        assert_eq!(run(&handle.load(), &f), run(&build(&lines), &f), "step {i}");
    }
    // The spare, published by one more batch, equals the rebuild too.
    let last = steps().pop().unwrap().1;
    let probe = "-6 route add fd00:7::/64 via fd00:2::2 dev r1";
    writer.apply(&[Change::AddRoute(route(probe))]).unwrap();
    let mut lines = last;
    lines.push(probe.to_string());
    let f = frames(&lines);
    assert_eq!(run(&handle.load(), &f), run(&build(&lines), &f));
}

/// Enough new tunnels to outgrow the room the template block was built with: the block is made anew, bigger,
/// and every plan's template moves with it.
#[test]
fn the_template_block_grows() {
    let mut lines: Vec<String> = ROUTES.iter().map(|s| s.to_string()).collect();
    let mut snap = build(&lines);
    let before = snap.plan_stats().1;
    for i in 0..300 {
        let l = format!(
            "-6 route add fd01:{i:x}::/64 encap seg6 mode encap segs fc00::{:x},fc00::b dev r1",
            i + 0x100
        );
        snap.apply(&Change::AddRoute(route(&l))).unwrap();
        lines.push(l);
    }
    assert!(
        snap.plan_stats().1 > 4 * before + 4096,
        "{} -> {}",
        before,
        snap.plan_stats().1
    );
    let f = frames(&lines);
    assert_eq!(run(&snap, &f), run(&build(&lines), &f));
}

/// Route churn (issue 15's soak): tunnel routes removed and added one by one reuse the removed routes' tunnel
/// ids, plan slots and template space, so the tunnel table, the plans and the templates stay the size of the most routes present at once, and
/// the router still equals a rebuild.
#[test]
fn churn_reuses_tunnel_ids_and_plan_slots() {
    let kinds = [
        "encap seg6 mode encap segs fc00::a,fc00::N",
        "encap seg6 mode inline segs fc00::a",
        "encap rpl segs fc00::a,fc00::1:N",
        "encap ioam6 mode encap tundst fc00::1 trace prealloc type 0xc00000 ns 123 size 28",
        "via fd00:2::3",
    ];
    let line = |i: usize| {
        format!(
            "-6 route add fd02:{i:x}::/64 {} dev r1",
            kinds[i % kinds.len()].replace('N', &format!("{:x}", 0x100 + i))
        )
    };
    let mut lines: Vec<String> = ROUTES.iter().map(|s| s.to_string()).collect();
    let mut snap = build(&lines);
    const WINDOW: usize = 12;
    for i in 0..WINDOW {
        snap.apply(&Change::AddRoute(route(&line(i)))).unwrap();
    }
    let (tunnels, plans) = (snap.tunnels.len(), snap.plan_stats().0);
    let churn = |snap: &mut Snapshot, from: usize, to: usize| {
        for i in from..to {
            snap.apply(&del(&line(i - WINDOW))).unwrap();
            snap.apply(&Change::AddRoute(route(&line(i)))).unwrap();
        }
    };
    // Every seg6 encap and rpl route has a template of its own (its last segment); the kind removed is not the
    // kind added: the free space of every template length fills first.
    churn(&mut snap, WINDOW, WINDOW + 100);
    let bytes = snap.plan_stats().1;
    churn(&mut snap, WINDOW + 100, WINDOW + 400);
    assert_eq!(snap.tunnels.len(), tunnels, "tunnel ids were not reused");
    assert_eq!(snap.plan_stats().0, plans, "plan slots were not reused");
    assert_eq!(snap.plan_stats().1, bytes, "template space was not reused");
    lines.extend((400..400 + WINDOW).map(line));
    let f = frames(&lines);
    assert_eq!(run(&snap, &f), run(&build(&lines), &f));
}

/// A sampled ioam6 route (freq 1/2) installed in the reused tunnel id of a removed one starts its count anew,
/// as a new tunnel does: a worker that counted packets on the old tunnel treats the new one's first packet as
/// a fresh worker does.
#[test]
fn a_reused_tunnel_id_starts_its_freq_count_anew() {
    let sampled = |p: &str| {
        format!(
            "-6 route add {p}::/64 encap ioam6 mode inline freq 1/2 trace prealloc type 0x800000 ns 123 size 8 via fd00:2::2 dev r1"
        )
    };
    let mut lines: Vec<String> = ROUTES.iter().map(|s| s.to_string()).collect();
    let mut snap = build(&lines);
    snap.apply(&Change::AddRoute(route(&sampled("fd03:1"))))
        .unwrap();
    let tunnels = snap.tunnels.len();
    let mut w = Worker::new(&snap);
    let one = |w: &mut Worker, snap: &Snapshot, dst: &str| {
        let f = frame(dst.parse().unwrap(), 64);
        let mut out = Vec::new();
        w.process_batch(snap, [(0usize, 5u64, f.as_slice())], &mut |d, _, b| {
            out.push((d, b.to_vec()))
        });
        out
    };
    one(&mut w, &snap, "fd03:1::1");
    snap.apply(&del(&sampled("fd03:1"))).unwrap();
    snap.apply(&Change::AddRoute(route(&sampled("fd03:2"))))
        .unwrap();
    assert_eq!(snap.tunnels.len(), tunnels);
    lines.push(sampled("fd03:2"));
    let fresh = build(&lines);
    assert_eq!(
        one(&mut w, &snap, "fd03:2::1"),
        one(&mut Worker::new(&fresh), &fresh, "fd03:2::1")
    );
}

/// A reject route (a kernel `blackhole` mirrored by `lwt6 run --kernel-routes`) inside a configured prefix:
/// destinations inside it find it, not the shorter configured route; it has no device, gateway or plan; it is
/// refused on a prefix and metric already held, and removed by `DelRoute`, after which the shorter route is
/// found again.
#[test]
fn a_reject_route_hides_the_shorter_route_until_removed() {
    use lwt6_dataplane::fib::{Origin, RejectKind};
    let mut snap = build(&[ROUTES[0].to_string()]);
    let inside: Ipv6Addr = "fc00:9::1".parse().unwrap();
    let outside: Ipv6Addr = "fc00:8::1".parse().unwrap();
    let add = Change::AddReject {
        prefix: "fc00:9::/32".parse().unwrap(),
        metric: 1024,
        kind: RejectKind::Blackhole,
    };
    snap.apply(&add).unwrap();
    let r = snap.fib().lookup_v6(inside).unwrap();
    assert_eq!(r.origin, Origin::Reject(RejectKind::Blackhole));
    assert_eq!((r.dev.get(), r.via, r.tunnel.get()), (None, None, None));
    assert_eq!(snap.fib().best_v6(inside).unwrap().plan_or_max(), u32::MAX);
    assert_eq!(
        snap.fib().lookup_v6(outside).unwrap().origin,
        Origin::Static
    );
    assert!(
        snap.apply(&add).is_err(),
        "a second route of the same prefix and metric"
    );
    snap.apply(&Change::DelRoute {
        prefix: "fc00:9::/32".parse().unwrap(),
        metric: 1024,
        table: 254,
        line: 0,
    })
    .unwrap();
    assert_eq!(snap.fib().lookup_v6(inside).unwrap().origin, Origin::Static);
}

/// `catch_up` applies the published batch to the spare at once: the next batch has nothing to catch up, and
/// the spare it publishes holds both batches (the deletion of the route the first batch added applies to it).
#[test]
fn the_writer_catches_up_at_once() {
    let base: Vec<String> = ROUTES.iter().map(|s| s.to_string()).collect();
    let handle = Arc::new(SnapshotHandle::new(build(&base)));
    let mut writer = SnapshotWriter::new(Arc::clone(&handle));
    let probe = "-6 route add fd00:7::/64 via fd00:2::2 dev r1";
    writer.apply(&[Change::AddRoute(route(probe))]).unwrap();
    writer.catch_up();
    writer.apply(&[del(probe)]).unwrap();
    assert_eq!(writer.caught_up(), 0, "nothing was left to catch up");
    let f = frames(&[base.clone(), vec![probe.to_string()]].concat());
    assert_eq!(run(&handle.load(), &f), run(&build(&base), &f));
}
