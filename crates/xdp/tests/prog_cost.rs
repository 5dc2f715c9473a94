//! How long the XDP program takes per frame, per plan kind, in memory: each frame run with `BPF_PROG_TEST_RUN`
//! (one repetition per call, timed by the kernel: the program and the clock reads around it, not the copies in
//! and out, not the redirect), the kinds interleaved, the median of many runs. A measurement, not a check
//! (ignored; run as root with
//! `cargo test --release -p lwt6-xdp --test prog_cost -- --ignored --nocapture`).
//!
//! Why not one call with `repeat`: the runs of one call share a buffer that is not reset, so a program that
//! rewrites its frame sees its own output from the second run on (an Ethernet destination that is not the
//! port's: `not_for_us`), and with `BPF_F_TEST_XDP_LIVE_FRAMES` recycled pages keep the rewritten bytes too.
//! Every run is first checked to take the path it is meant to time (the action, the kind counted).

use lwt6_dataplane::router::Router;
use lwt6_xdp::tier::XDP_REDIRECT;
use lwt6_xdp::{Kind, Sizes, Tier};
use std::net::Ipv6Addr;

/// `BPF_PROG_TEST_RUN` receives every frame on the loopback device (ifindex 1).
const LO: u32 = 1;

const CONF: &str = "
link add r0 address 02:00:00:00:01:02
link add r1 address 02:00:00:00:02:01
link add r2 address 02:00:00:00:03:01
addr add fd00:1::2/64 dev r0
addr add fd00:2::1/64 dev r1
addr add fd00:3::1/64 dev r2
neigh add fd00:1::1 lladdr 02:00:00:00:01:01 dev r0
neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1
neigh add fd00:3::2 lladdr 02:00:00:00:03:02 dev r2
ioam namespace add 123 data 0xdeadbeef wide 0xcafec0dedeadbeef
ioam schema add 7 ABCDEFGH
ioam namespace set 123 schema 7
sysctl net.ipv6.ioam6_id=0x111111
sysctl net.ipv6.ioam6_id_wide=0x22222222222222
sysctl net.ipv6.conf.r0.ioam6_enabled=1
sysctl net.ipv6.conf.r0.ioam6_id=0x0a0a
sysctl net.ipv6.conf.r0.ioam6_id_wide=0x0b0b0b0b
sysctl net.ipv6.conf.r1.ioam6_id=0x0c0c
sysctl net.ipv6.conf.r1.ioam6_id_wide=0x0d0d0d0d
-6 route add 2001:db8::/32 via fd00:2::2 dev r1
-6 route add fc00::/16 via fd00:2::2 dev r1
-6 route add fd00:91::/64 encap seg6 mode encap segs fc00::1,fc00::2,fc00::3 dev r1
-6 route add fc00:d::100/128 encap seg6local action End.DX6 nh6 fd00:3::2 dev r2
";

/// A UDP-like frame to r0 for `dst` with a payload of `payload` bytes (next header `nh`).
fn frame(dst: &str, nh: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 1, 2, 2, 0, 0, 0, 1, 1, 0x86, 0xdd];
    f.extend(0x6000_0000u32.to_be_bytes());
    f.extend((payload.len() as u16).to_be_bytes());
    f.extend([nh, 64]);
    f.extend("fd00:1::1".parse::<Ipv6Addr>().unwrap().octets());
    f.extend(dst.parse::<Ipv6Addr>().unwrap().octets());
    f.extend_from_slice(payload);
    f
}

/// 20 bytes of payload behind the IPv6 header (a 74-byte frame).
fn udp() -> Vec<u8> {
    (0..20).collect()
}

/// A frame to `dst` with a Hop-by-Hop header (PadN(0), one IOAM pre-allocated trace of namespace 123, type `ty`,
/// room for `rem` words, PadN(2) when needed) before the UDP payload.
fn transit(dst: &str, ty: u32, rem: u8) -> Vec<u8> {
    let nl = lwt6_dataplane::wire::ioam::node_len_for_type(ty);
    let mut h = vec![17, 0, 1, 0, 0x31, 10 + 4 * rem, 0, 0, 0, 123];
    h.extend(((u16::from(nl) << 11) | u16::from(rem)).to_be_bytes());
    h.extend((ty << 8).to_be_bytes());
    h.extend(std::iter::repeat_n(0u8, 4 * usize::from(rem)));
    if h.len() % 8 != 0 {
        h.extend([1, 2, 0, 0]);
    }
    h[1] = (h.len() / 8 - 1) as u8;
    h.extend(udp());
    frame(dst, 0, &h)
}

/// End.DX6: the SID, behind it an SRH with Segments Left 0, then a UDP/IPv6 packet.
fn dx6() -> Vec<u8> {
    let inner = frame("2001:db8::7", 17, &udp());
    let mut p = vec![41, 2, 4, 0, 0, 0, 0, 0];
    p.extend("fc00:d::100".parse::<Ipv6Addr>().unwrap().octets());
    p.extend_from_slice(&inner[14..]);
    frame("fc00:d::100", 43, &p)
}

fn median(v: &mut [u32]) -> u32 {
    v.sort_unstable();
    v[v.len() / 2]
}

#[test]
#[ignore = "a measurement: run it by name with --ignored --nocapture, as root"]
fn nanoseconds_per_frame_by_plan_kind() {
    let cfg = lwt6_config::parse(CONF).expect("configuration parses");
    let router = Router::build(&cfg).expect("router builds");
    let snap = router.snapshot();
    let t0 = std::time::Instant::now();
    let mut tier =
        Tier::load(Sizes::default()).expect("the XDP program loads (root, clang-19 build)");
    println!(
        "program loaded (the verifier included) in {} ms",
        t0.elapsed().as_millis()
    );
    tier.install(&lwt6_xdp::tables(&snap)).expect("maps filled");
    tier.set_port(LO, lwt6_xdp::port_entry(&snap.links[0], 216))
        .expect("port");
    for d in 0..snap.links.len() {
        tier.set_egress(d as u32, LO).expect("egress");
    }
    let runner = tier.runner().expect("runner");
    let cases: Vec<(&str, Vec<u8>, Option<Kind>)> = vec![
        (
            "floor: an Ethernet header alone, not IPv6 (slow path at once)",
            vec![0u8; 14],
            None,
        ),
        (
            "plain IPv6",
            frame("2001:db8::7", 17, &udp()),
            Some(Kind::Forward),
        ),
        (
            "seg6 encap, 3 SIDs",
            frame("fd00:91::1", 17, &udp()),
            Some(Kind::Seg6Encap),
        ),
        ("End.DX6", dx6(), Some(Kind::EndDx6)),
        (
            "IOAM transit 0x800000, room for 3 (the live benchmark's)",
            transit("2001:db8::7", 0x80_0000, 3),
            Some(Kind::IoamTransit),
        ),
        (
            "IOAM transit 0xc40000, room for 2",
            transit("2001:db8::7", 0xc4_0000, 6),
            Some(Kind::IoamTransit),
        ),
        (
            "IOAM transit 0x00e000 (wide), room for 2",
            transit("2001:db8::7", 0x00_e000, 12),
            Some(Kind::IoamTransit),
        ),
        (
            "IOAM transit 0xcfffff (all but timestamps, schema), room for 1",
            transit("2001:db8::7", 0xcf_ffff, 40),
            Some(Kind::IoamTransit),
        ),
    ];
    // Each case must take the path it times.
    for (what, f, kind) in &cases {
        let before = tier.counters().expect("counters");
        let run = tier.test_run(f).expect("test run");
        let after = tier.counters().expect("counters");
        if let Some(k) = kind {
            assert_eq!(
                run.action, XDP_REDIRECT,
                "{what}: forwarded in the driver ({:?})",
                after.slow
            );
            let n = |c: &lwt6_xdp::Counters| c.by_kind.get(k).copied().unwrap_or(0);
            assert_eq!(n(&after), n(&before) + 1, "{what}: counted as {}", k.name());
        }
    }
    let rounds: usize = std::env::var("LWT6_PROG_COST_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    // First without IOAM blocks (the driver assembles this node's block field by field), then with the blocks of
    // the trace types met (copied whole).
    let mut before: Vec<u32> = Vec::new();
    for pass in [
        "no IOAM blocks: field by field",
        "IOAM blocks learnt: copied whole",
    ] {
        let mut ns: Vec<Vec<u32>> = vec![Vec::with_capacity(rounds); cases.len()];
        for _ in 0..rounds {
            for (i, (_, f, _)) in cases.iter().enumerate() {
                let (_, d) = runner.timed(f).expect("test run");
                ns[i].push(d);
            }
        }
        println!(
            "ns per frame, {pass} (median of {rounds} runs, kernel-timed BPF_PROG_TEST_RUN, one run per call):"
        );
        for (i, ((what, f, _), v)) in cases.iter().zip(&mut ns).enumerate() {
            let m = median(v);
            let p10 = v[v.len() / 10];
            let p90 = v[v.len() * 9 / 10];
            let was = before
                .get(i)
                .map(|b| format!(" [before: {b}]"))
                .unwrap_or_default();
            println!(
                "  {m:5} ns (p10 {p10}, p90 {p90}){was}  {what} ({} bytes)",
                f.len()
            );
            if before.len() < cases.len() {
                before.push(m);
            }
        }
        let learnt = tier.learn_ioam().expect("blocks");
        println!("  ({learnt} IOAM blocks learnt)");
    }
}
