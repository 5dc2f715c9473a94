//! Same bytes, proven: the XDP program runs on frames in memory (`BPF_PROG_TEST_RUN`) and every frame it forwards
//! must be byte-identical to the userspace pipeline's (`lwt6_dataplane::router::Router` on the same configuration
//! and frames), on the same egress; every frame it leaves to the slow path must leave unchanged, counted under
//! the right reason.
//!
//! Needs root (loading a BPF program). Not root: every test says so loudly and returns. Built without the pinned
//! clang: the tests fail under CI (`CI` set), and say so loudly elsewhere. A program that fails to load fails.

use lwt6_dataplane::router::Router;
use lwt6_xdp::tier::{XDP_PASS, XDP_REDIRECT};
use lwt6_xdp::{Counters, Kind, Sizes, Tier, Why};
use std::collections::BTreeMap;
use std::net::Ipv6Addr;

/// The loopback device: `BPF_PROG_TEST_RUN` receives every frame on it (ifindex 1 in every namespace).
const LO: u32 = 1;
/// What `bpf_xdp_adjust_head` lets a program prepend in a test run (256 bytes of headroom less the `xdp_frame`),
/// as on veth.
const HEADROOM: u16 = 216;

/// `n` SIDs fc00::1, fc00::2, ...
fn sids(n: usize) -> String {
    (1..=n)
        .map(|i| format!("fc00::{i:x}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn conf(flowlabel: i32) -> String {
    format!(
        "
link add r0 address 02:00:00:00:01:02
link add r1 address 02:00:00:00:02:01 mtu 1400
link add r2 address 02:00:00:00:03:01
addr add fd00:1::2/64 dev r0
addr add fd00:2::1/64 dev r1
addr add fd00:3::1/64 dev r2
addr add fd00:92::9/128 dev r0
neigh add fd00:1::1 lladdr 02:00:00:00:01:01 dev r0
neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1
neigh add fd00:3::2 lladdr 02:00:00:00:03:02 dev r2
sysctl net.ipv6.seg6_flowlabel={flowlabel}
sysctl net.ipv6.ioam6_id=0x111111
sysctl net.ipv6.ioam6_id_wide=0x22222222222222
sysctl net.ipv6.conf.r0.ioam6_id=7
sysctl net.ipv6.conf.r0.ioam6_id_wide=0x70000007
sysctl net.ipv6.conf.r1.ioam6_id=9
ioam namespace add 1
ioam namespace add 123 data 0xdeadbeef wide 0xcafecafecafecafe
-6 route add fc00::/16 via fd00:2::2 dev r1
-6 route add 2001:db8::/32 via fd00:2::2 dev r1
-6 route add 2001:db8:3::/48 via fd00:3::2 dev r2
-6 route add 2001:db8:4::/48 via fd00:3::99 dev r2
-6 route add 2001:db8:5::/48 via fd00:2::2 dev r1 mtu 1300
-6 route add fd00:91::/64 encap seg6 mode encap segs {s1} dev r1
-6 route add fd00:92::/64 encap seg6 mode encap segs {s3} dev r1
-6 route add fd00:9a::/64 encap seg6 mode encap segs {s10} dev r1
-6 route add fd00:9b::/64 encap seg6 mode encap segs {s13} dev r1
-6 route add fd00:93::/64 encap seg6 mode encap.red segs {s3} dev r1
-6 route add fd00:94::/64 encap seg6 mode encap.red segs {s1} dev r1
-6 route add fd00:95::/64 encap seg6 mode encap.red segs {s10} dev r1
-6 route add fd00:96::/64 encap seg6 mode inline segs {s1} dev r1
-6 route add fd00:97::/64 encap seg6 mode inline segs {s3} dev r1
-6 route add fd00:9c::/64 encap seg6 mode inline segs {s12} dev r1
-6 route add fd00:9d::/64 encap seg6 mode inline segs {s13} dev r1
-6 route add fd00:9e::/64 encap seg6 mode encap segs fc00::a,fc00::b dev r2
-6 route add fd00:a0::/64 encap seg6 mode l2encap segs {s3} dev r1
-6 route add fd00:a1::/64 encap ioam6 mode inline trace prealloc type 0x800000 ns 1 size 4 via fd00:2::2 dev r1
-6 route add fd00:a3::/64 encap ioam6 mode inline trace prealloc type 0xc04000 ns 123 size 48 via fd00:2::2 dev r1
-6 route add fd00:a4::/64 encap ioam6 mode encap tundst fc00::1 trace prealloc type 0xc00000 ns 123 size 28 trace prealloc type 0x804000 ns 1 size 12 dev r1
-6 route add fd00:a5::/64 encap ioam6 mode inline trace prealloc type 0xf1f000 ns 123 size 96 via fd00:2::2 dev r1
-6 route add fd00:a6::/64 encap ioam6 mode inline trace prealloc type 0xc00000 ns 123 size 4 via fd00:2::2 dev r1
-6 route add fd00:a2::/64 encap seg6local action End dev r1
-6 route add fd00:98::/64 encap rpl segs fc00::a,fc00::1:b dev r1
-6 route add fd00:a7::/64 encap seg6local action End.X nh6 fd00:3::2 dev r2
-6 route add fd00:a8::/64 encap seg6local action End.DX6 nh6 fd00:2::2 dev r1
",
        s1 = sids(1),
        s3 = sids(3),
        s10 = sids(10),
        s12 = sids(12),
        s13 = sids(13),
    )
}

/// A frame to r0 from its neighbour: UDP-like payload of `payload` bytes.
fn frame(dst: &str, hlim: u8, first_word: u32, payload: usize) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 1, 2, 2, 0, 0, 0, 1, 1, 0x86, 0xdd];
    f.extend((0x6000_0000 | first_word).to_be_bytes());
    f.extend((payload as u16).to_be_bytes());
    f.extend([17, hlim]);
    f.extend("fd00:1::1".parse::<Ipv6Addr>().unwrap().octets());
    f.extend(dst.parse::<Ipv6Addr>().unwrap().octets());
    f.extend((0..payload).map(|i| (i * 7 + 3) as u8));
    f
}

/// A frame to r0 carrying an SRH (next header UDP, Segments Left `sl`, segments `segs` in wire order) to `dst`.
fn srh_frame(dst: &str, hlim: u8, sl: u8, segs: &[&str], payload: usize) -> Vec<u8> {
    let n = segs.len();
    let mut srh = vec![17, (2 * n) as u8, 4, sl, (n - 1) as u8, 0, 0, 0];
    for s in segs {
        srh.extend(s.parse::<Ipv6Addr>().unwrap().octets());
    }
    let mut f = frame(dst, hlim, 0x0012_3456, payload);
    f[14 + 6] = 43;
    let plen = srh.len() + payload;
    f[18..20].copy_from_slice(&(plen as u16).to_be_bytes());
    f.splice(54..54, srh);
    f
}

/// A frame to r0 to `dst` carrying the IPv6 packet `inner`, behind an SRH with Segments Left `sl` over `segs`
/// when `segs` is not empty (next header 41 either way).
fn encapsulated(dst: &str, hlim: u8, sl: u8, segs: &[&str], inner: &[u8]) -> Vec<u8> {
    let mut f = if segs.is_empty() {
        let mut f = frame(dst, hlim, 0, 0);
        f[14 + 6] = 41;
        f
    } else {
        let mut f = srh_frame(dst, hlim, sl, segs, 0);
        f[54] = 41;
        f
    };
    f.extend_from_slice(inner);
    let plen = (f.len() - 54) as u16;
    f[18..20].copy_from_slice(&plen.to_be_bytes());
    f
}

struct Bench {
    router: Router,
    tier: Tier,
}

/// Says why a test does not run, on the real stderr (the test harness captures `eprintln!`).
fn skipped(why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "\n*** SKIPPED: {why} ***");
}

/// The router and the loaded tier for `flowlabel`, or `None` (loudly) when the test cannot run here.
fn bench(flowlabel: i32) -> Option<Bench> {
    bench_of(&conf(flowlabel), Sizes::default())
}

/// The router and the loaded tier of configuration `text`, with maps of `sizes`.
fn bench_of(text: &str, sizes: Sizes) -> Option<Bench> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        skipped(
            "the XDP differential tests load a BPF program and need root (CI runs them as root)",
        );
        return None;
    }
    if let Err(e) = lwt6_xdp::available() {
        if std::env::var_os("CI").is_some() {
            panic!("{e} (CI installs clang-19 with scripts/install-test-deps.sh)");
        }
        skipped(&e.to_string());
        return None;
    }
    let router = router_of(text);
    let snap = router.snapshot();
    let mut tier = Tier::load(sizes).expect("the XDP program loads");
    tier.install(&lwt6_xdp::tables(&snap)).expect("maps filled");
    tier.set_port(LO, lwt6_xdp::port_entry(&snap.links[0], HEADROOM))
        .expect("port");
    for d in 0..snap.links.len() {
        tier.set_egress(d as u32, LO).expect("egress");
    }
    Some(Bench { router, tier })
}

/// The userspace router of configuration `text`.
fn router_of(text: &str) -> Router {
    let cfg = lwt6_config::parse(text).expect("configuration parses");
    Router::build(&cfg).expect("router builds")
}

/// What the userspace router sends for `frame` received on r0.
fn userspace(b: &mut Bench, frame: &[u8]) -> Vec<(usize, Vec<u8>)> {
    let mut out = Vec::new();
    b.router.process_batch(
        [(0usize, 1_700_000_000_000_000_000u64, frame)],
        &mut |d, _, f| out.push((d, f.to_vec())),
    );
    out
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The change of each counter of one map from `b` to `a`.
fn sub<K: Ord + Copy>(a: &BTreeMap<K, u64>, b: &BTreeMap<K, u64>) -> BTreeMap<K, u64> {
    a.iter()
        .filter_map(|(k, v)| {
            let d = v - b.get(k).copied().unwrap_or(0);
            (d > 0).then_some((*k, d))
        })
        .collect()
}

/// The counters' change from `before` to `after`.
fn delta(before: &Counters, after: &Counters) -> Counters {
    Counters {
        forwarded: after.forwarded - before.forwarded,
        by_kind: sub(&after.by_kind, &before.by_kind),
        slow: sub(&after.slow, &before.slow),
        egress: sub(&after.egress, &before.egress),
        ioam_filled: after.ioam_filled - before.ioam_filled,
    }
}

/// `frame` must be forwarded in the driver as plan kind `kind`, byte-identical to the userspace router's only
/// output, on the same egress.
fn forwarded(b: &mut Bench, what: &str, frame: &[u8], kind: Kind) {
    forwarded_filling(b, what, frame, kind, 0);
}

/// [`forwarded`], with `filled` IOAM traces filled (or flagged Overflow) in transit.
fn forwarded_filling(b: &mut Bench, what: &str, frame: &[u8], kind: Kind, filled: u64) {
    let user = userspace(b, frame);
    assert_eq!(user.len(), 1, "{what}: userspace sends one frame: {user:?}");
    let (dev, want) = &user[0];
    let before = b.tier.counters().unwrap();
    let run = b.tier.test_run(frame).unwrap();
    let d = delta(&before, &b.tier.counters().unwrap());
    assert_eq!(
        run.action, XDP_REDIRECT,
        "{what}: redirected in the driver; counters {d:?}"
    );
    assert_eq!(hex(&run.frame), hex(want), "{what}: same bytes");
    let want_counters = Counters {
        forwarded: 1,
        by_kind: [(kind, 1)].into(),
        slow: Default::default(),
        egress: [(*dev as u32, 1)].into(),
        ioam_filled: filled,
    };
    assert_eq!(d, want_counters, "{what}: counted once, on egress {dev}");
}

/// `frame` must leave the driver unchanged, to the slow path, counted under `why`.
fn slow(b: &mut Bench, what: &str, frame: &[u8], why: Why) {
    let before = b.tier.counters().unwrap();
    let run = b.tier.test_run(frame).unwrap();
    let d = delta(&before, &b.tier.counters().unwrap());
    assert_eq!(
        run.action, XDP_PASS,
        "{what}: to the slow path; counters {d:?}"
    );
    assert_eq!(hex(&run.frame), hex(frame), "{what}: unchanged");
    let want = Counters {
        slow: [(why, 1)].into(),
        ..Counters::default()
    };
    assert_eq!(d, want, "{what}: counted under {}", why.name());
}

#[test]
fn plain_forwarding_matches_userspace() {
    let Some(mut b) = bench(0) else { return };
    for (dst, hlim, fw, n) in [
        ("2001:db8::7", 64, 0x0b81_2345, 16),
        ("2001:db8::7", 2, 0, 16),
        ("2001:db8::7", 255, 0x0fff_ffff, 0),
        ("2001:db8:3::1", 30, 0, 100),
        ("fc00:1234::1", 64, 0, 1000),
        // Exactly r1's MTU (1400).
        ("2001:db8::7", 64, 0, 1360),
        // Exactly the route's MTU (1300).
        ("2001:db8:5::1", 64, 0, 1260),
    ] {
        let what = format!("forward to {dst}, hop limit {hlim}, {n} bytes of payload");
        forwarded(&mut b, &what, &frame(dst, hlim, fw, n), Kind::Forward);
    }
    // Ethernet padding behind a short packet: the userspace router sends the IPv6 packet alone; so must the
    // driver (it trims the tail).
    let mut padded = frame("2001:db8::7", 64, 0, 0);
    padded.extend([0u8; 6]);
    forwarded(&mut b, "padded frame", &padded, Kind::Forward);
}

#[test]
fn seg6_encap_matches_userspace() {
    for fl in [0, -1] {
        let Some(mut b) = bench(fl) else { return };
        for (dst, what) in [
            ("fd00:91::1", "encap, 1 SID"),
            ("fd00:92::1", "encap, 3 SIDs"),
            ("fd00:9a::1", "encap, 10 SIDs"),
            ("fd00:93::1", "encap.red, 3 SIDs"),
            ("fd00:94::1", "encap.red, 1 SID (no SRH)"),
            ("fd00:95::1", "encap.red, 10 SIDs"),
            ("fd00:9e::1", "encap, 2 SIDs, other egress"),
        ] {
            for (hlim, fw, n) in [
                (64u8, 0x0b81_2345u32, 16usize),
                (2, 0x0fff_ffff, 0),
                (17, 0, 700),
            ] {
                let what = format!("{what}, seg6_flowlabel {fl}, hop limit {hlim}, {n} bytes");
                forwarded(&mut b, &what, &frame(dst, hlim, fw, n), Kind::Seg6Encap);
            }
        }
    }
}

#[test]
fn seg6_inline_matches_userspace() {
    let Some(mut b) = bench(0) else { return };
    for (dst, what) in [
        ("fd00:96::1", "inline, 1 SID"),
        ("fd00:97::1", "inline, 3 SIDs"),
        // 8 + 16 * 13 = 216 bytes of SRH: the headroom exactly full.
        ("fd00:9c::1", "inline, 12 SIDs (headroom exactly full)"),
    ] {
        for (hlim, fw, n) in [
            (64u8, 0x0b81_2345u32, 16usize),
            (2, 0, 0),
            (9, 0x0fff_ffff, 300),
        ] {
            let what = format!("{what}, hop limit {hlim}, {n} bytes");
            forwarded(&mut b, &what, &frame(dst, hlim, fw, n), Kind::Seg6Inline);
        }
    }
}

#[test]
fn rpl_with_a_fixed_header_matches_userspace() {
    let Some(mut b) = bench(0) else { return };
    let snap = b.router.snapshot();
    let t = lwt6_xdp::tables(&snap);
    let net = "fd00:98::/64".parse().unwrap();
    match t.placement(&net) {
        Some(Ok(Kind::RplFixed)) => {
            for (hlim, n) in [(64u8, 16usize), (2, 0)] {
                let f = frame("fd00:98::1", hlim, 0x0012_3456, n);
                forwarded(&mut b, "rpl", &f, Kind::RplFixed);
            }
        }
        other => panic!("fd00:98::/64 is an RplFixed plan: {other:?}"),
    }
}

#[test]
fn ioam_insertion_matches_userspace() {
    let Some(mut b) = bench(0) else { return };
    for (dst, kind, what) in [
        (
            "fd00:a1::1",
            Kind::IoamInline,
            "inline, hop limit and node id",
        ),
        (
            "fd00:a3::1",
            Kind::IoamInline,
            "inline, short and wide interface ids",
        ),
        ("fd00:a4::1", Kind::IoamEncap, "encap, two traces"),
        // A trace without room for this node's data: the template says so, nothing per packet.
        ("fd00:a6::1", Kind::IoamInline, "inline, trace full"),
    ] {
        for (hlim, fw, n) in [
            (64u8, 0x0b81_2345u32, 16usize),
            (2, 0, 0),
            (200, 0x0fff_ffff, 500),
        ] {
            let what = format!("ioam6 {what}, hop limit {hlim}, {n} bytes");
            forwarded(&mut b, &what, &frame(dst, hlim, fw, n), kind);
        }
    }
}

#[test]
fn end_x_matches_userspace() {
    let Some(mut b) = bench(0) else { return };
    let segs = ["fc00::3", "fc00::2", "fd00:a7::1"];
    for sl in 1..=2u8 {
        for (hlim, n) in [(64u8, 16usize), (2, 0), (100, 900)] {
            let f = srh_frame("fd00:a7::1", hlim, sl, &segs, n);
            let what = format!("End.X, Segments Left {sl}, hop limit {hlim}, {n} bytes");
            forwarded(&mut b, &what, &f, Kind::EndX);
        }
    }
    let one = ["fd00:a7::1"];
    let f = srh_frame("fd00:a7::1", 64, 1, &one, 16);
    forwarded(&mut b, "End.X, one segment", &f, Kind::EndX);
    slow(
        &mut b,
        "End.X, Segments Left 0",
        &srh_frame("fd00:a7::1", 64, 0, &segs, 16),
        Why::Srh,
    );
    slow(
        &mut b,
        "End.X, Segments Left past the list",
        &srh_frame("fd00:a7::1", 64, 4, &segs, 16),
        Why::Srh,
    );
    slow(
        &mut b,
        "End.X, no SRH",
        &frame("fd00:a7::1", 64, 0, 16),
        Why::Srh,
    );
    slow(
        &mut b,
        "End.X, hop limit 1",
        &srh_frame("fd00:a7::1", 1, 1, &segs, 16),
        Why::HopLimit,
    );
    let mut tlv = srh_frame("fd00:a7::1", 64, 1, &segs, 16);
    tlv[14 + 40 + 1] += 1;
    slow(&mut b, "End.X, an SRH with TLVs", &tlv, Why::Srh);
    let mut cut = srh_frame("fd00:a7::1", 64, 2, &segs, 0);
    cut.truncate(cut.len() - 8);
    let plen = (cut.len() - 54) as u16;
    cut[18..20].copy_from_slice(&plen.to_be_bytes());
    slow(&mut b, "End.X, SRH longer than the packet", &cut, Why::Srh);
    let mut other = srh_frame("fd00:a7::1", 64, 1, &segs, 16);
    other[14 + 40 + 2] = 3;
    slow(&mut b, "End.X, routing header type 3", &other, Why::Srh);
}

#[test]
fn end_dx6_matches_userspace() {
    let Some(mut b) = bench(0) else { return };
    let segs = ["fc00::3", "fd00:a8::1"];
    for (ihl, n) in [(64u8, 16usize), (2, 0), (33, 1000)] {
        let inner = frame("2001:db8::99", ihl, 0x0abc_def0, n)[14..].to_vec();
        for (what, f) in [
            ("no SRH", encapsulated("fd00:a8::1", 64, 0, &[], &inner)),
            (
                "SRH, Segments Left 0",
                encapsulated("fd00:a8::1", 9, 0, &segs, &inner),
            ),
        ] {
            let what = format!("End.DX6, {what}, inner hop limit {ihl}, {n} bytes");
            forwarded(&mut b, &what, &f, Kind::EndDx6);
        }
    }
    let inner = frame("2001:db8::99", 64, 0, 16)[14..].to_vec();
    slow(
        &mut b,
        "End.DX6, a segment left",
        &encapsulated("fd00:a8::1", 64, 1, &segs, &inner),
        Why::Decap,
    );
    slow(
        &mut b,
        "End.DX6, no inner packet",
        &frame("fd00:a8::1", 64, 0, 16),
        Why::Decap,
    );
    let hl1 = frame("2001:db8::99", 1, 0, 16)[14..].to_vec();
    slow(
        &mut b,
        "End.DX6, inner hop limit 1",
        &encapsulated("fd00:a8::1", 64, 0, &[], &hl1),
        Why::HopLimit,
    );
    let mut v4 = inner.clone();
    v4[0] = 0x45;
    slow(
        &mut b,
        "End.DX6, not IPv6 inside",
        &encapsulated("fd00:a8::1", 64, 0, &[], &v4),
        Why::Decap,
    );
    let mut long = encapsulated("fd00:a8::1", 64, 0, &[], &inner);
    long[54 + 5] += 1;
    slow(
        &mut b,
        "End.DX6, inner longer than the packet",
        &long,
        Why::Decap,
    );
    // The inner packet exactly r1's MTU (1400), and one byte over.
    let big = frame("2001:db8::99", 64, 0, 1360)[14..].to_vec();
    forwarded(
        &mut b,
        "End.DX6, inner at the MTU",
        &encapsulated("fd00:a8::1", 64, 0, &[], &big),
        Kind::EndDx6,
    );
    let over = frame("2001:db8::99", 64, 0, 1361)[14..].to_vec();
    slow(
        &mut b,
        "End.DX6, inner MTU + 1",
        &encapsulated("fd00:a8::1", 64, 0, &[], &over),
        Why::Mtu,
    );
}

#[test]
fn end_matches_userspace() {
    let Some(mut b) = bench(0) else { return };
    let f = |next: &str, sl: u8, n: usize| {
        srh_frame(
            "fd00:a2::1",
            64,
            sl,
            &["2001:db8:3::5", next, "fd00:a2::1"],
            n,
        )
    };
    for (hlim, n) in [(64u8, 16usize), (2, 0), (77, 700)] {
        let f = srh_frame(
            "fd00:a2::1",
            hlim,
            2,
            &["2001:db8:3::5", "fc00::2", "fd00:a2::1"],
            n,
        );
        forwarded(
            &mut b,
            &format!("End to fc00::2 (r1), hop limit {hlim}, {n} bytes"),
            &f,
            Kind::End,
        );
    }
    forwarded(
        &mut b,
        "End, last segment, out of r2",
        &f("fc00::2", 1, 16),
        Kind::End,
    );
    // 40 + 56 bytes of headers: 1304 bytes of payload make 1400, r1's MTU.
    forwarded(
        &mut b,
        "End, exactly the MTU",
        &f("fc00::2", 2, 1304),
        Kind::End,
    );
    slow(&mut b, "End, MTU + 1", &f("fc00::2", 2, 1305), Why::Mtu);
    slow(
        &mut b,
        "End, next segment a tunnel's",
        &f("fd00:92::5", 2, 16),
        Why::Next,
    );
    slow(
        &mut b,
        "End, next segment ours",
        &f("fd00:1::2", 2, 16),
        Why::Next,
    );
    slow(
        &mut b,
        "End, next segment link-local",
        &f("fe80::1", 2, 16),
        Why::Next,
    );
    slow(
        &mut b,
        "End, next segment without a route",
        &f("2001:db9::1", 2, 16),
        Why::Next,
    );
    slow(
        &mut b,
        "End, next segment another SID",
        &f("fd00:a7::1", 2, 16),
        Why::Next,
    );
    slow(
        &mut b,
        "End, Segments Left 0",
        &f("fc00::2", 0, 16),
        Why::Srh,
    );
}

#[test]
fn boundaries_and_the_slow_path() {
    let Some(mut b) = bench(0) else { return };
    // MTU: one byte over r1's 1400, over the route's 1300, and over with an encapsulation's growth (3 SIDs: 96).
    slow(
        &mut b,
        "forward, MTU + 1",
        &frame("2001:db8::7", 64, 0, 1361),
        Why::Mtu,
    );
    slow(
        &mut b,
        "route MTU + 1",
        &frame("2001:db8:5::1", 64, 0, 1261),
        Why::Mtu,
    );
    forwarded(
        &mut b,
        "encap 3 SIDs, exactly the MTU",
        &frame("fd00:92::1", 64, 0, 1400 - 96 - 40),
        Kind::Seg6Encap,
    );
    slow(
        &mut b,
        "encap 3 SIDs, MTU + 1",
        &frame("fd00:92::1", 64, 0, 1400 - 96 - 40 + 1),
        Why::Mtu,
    );
    // Hop limit.
    for h in [0u8, 1] {
        slow(
            &mut b,
            "hop limit ≤ 1",
            &frame("2001:db8::7", h, 0, 16),
            Why::HopLimit,
        );
        slow(
            &mut b,
            "hop limit ≤ 1, encap",
            &frame("fd00:92::1", h, 0, 16),
            Why::HopLimit,
        );
    }
    // Headroom: 13 SIDs inline need 232 bytes (a template longer than the driver takes).
    slow(
        &mut b,
        "inline 13 SIDs",
        &frame("fd00:9d::1", 64, 0, 16),
        Why::Template,
    );
    // The port's headroom one byte short of the 216 bytes 12 inline SIDs add.
    let snap = b.router.snapshot();
    b.tier
        .set_port(LO, lwt6_xdp::port_entry(&snap.links[0], HEADROOM - 1))
        .unwrap();
    slow(
        &mut b,
        "inline 12 SIDs, headroom 215",
        &frame("fd00:9c::1", 64, 0, 16),
        Why::Headroom,
    );
    forwarded(
        &mut b,
        "inline 3 SIDs, headroom 215",
        &frame("fd00:97::1", 64, 0, 16),
        Kind::Seg6Inline,
    );
    // 13 SIDs encap add 256 bytes: more than the port's headroom; with the port claiming 256, more than the
    // helper lets the program prepend (216 in a test run): the frame goes unchanged to the slow path either way.
    slow(
        &mut b,
        "encap 13 SIDs",
        &frame("fd00:9b::1", 64, 0, 16),
        Why::Headroom,
    );
    b.tier
        .set_port(LO, lwt6_xdp::port_entry(&snap.links[0], 256))
        .unwrap();
    slow(
        &mut b,
        "encap 13 SIDs, headroom claimed 256",
        &frame("fd00:9b::1", 64, 0, 16),
        Why::Headroom,
    );
    let f = frame("fd00:9c::1", 64, 0, 16);
    forwarded(
        &mut b,
        "inline 12 SIDs, headroom claimed 256",
        &f,
        Kind::Seg6Inline,
    );
    b.tier
        .set_port(LO, lwt6_xdp::port_entry(&snap.links[0], HEADROOM))
        .unwrap();

    // Frames the driver leaves alone.
    slow(
        &mut b,
        "no route",
        &frame("2001:db9::1", 64, 0, 16),
        Why::NoRoute,
    );
    slow(
        &mut b,
        "to a local address",
        &frame("fd00:1::2", 64, 0, 16),
        Why::Local,
    );
    slow(
        &mut b,
        "to a local address inside a tunnel prefix",
        &frame("fd00:92::9", 64, 0, 16),
        Why::Local,
    );
    slow(
        &mut b,
        "link-local destination",
        &frame("fe80::1", 64, 0, 16),
        Why::Addr,
    );
    slow(
        &mut b,
        "multicast destination",
        &frame("ff02::1", 255, 0, 16),
        Why::Addr,
    );
    slow(
        &mut b,
        "unresolved neighbour",
        &frame("2001:db8:4::1", 64, 0, 16),
        Why::NoPlan,
    );
    forwarded(
        &mut b,
        "seg6 l2encap",
        &frame("fd00:a0::1", 64, 0, 16),
        Kind::Seg6L2Encap,
    );
    slow(
        &mut b,
        "ioam6 with timestamps",
        &frame("fd00:a5::1", 64, 0, 16),
        Why::Kind,
    );
    slow(
        &mut b,
        "seg6local End without an SRH",
        &frame("fd00:a2::1", 64, 0, 16),
        Why::Srh,
    );
    let mut ndp = frame("ff02::1:ff00:2", 255, 0, 32);
    ndp[..6].copy_from_slice(&[0x33, 0x33, 0xff, 0, 0, 2]);
    slow(
        &mut b,
        "NDP solicitation (multicast MAC)",
        &ndp,
        Why::NotForUs,
    );
    let mut hbh = frame("2001:db8::7", 64, 0, 16);
    hbh[14 + 6] = 0;
    slow(&mut b, "Hop-by-Hop header", &hbh, Why::HopByHop);
    // An IPv6 packet behind the IPv4 ethertype: not version 4.
    let mut v4 = frame("2001:db8::7", 64, 0, 16);
    v4[12..14].copy_from_slice(&[0x08, 0x00]);
    slow(&mut b, "IPv4 ethertype, version 6", &v4, Why::Short);
    let mut arp = vec![0xff; 6];
    arp.extend([2, 0, 0, 0, 1, 1, 0x08, 0x06]);
    arp.extend([0u8; 28]);
    slow(&mut b, "ARP", &arp, Why::NotIpv6);
    let short = frame("2001:db8::7", 64, 0, 16);
    slow(&mut b, "truncated", &short[..short.len() - 1], Why::Short);
    slow(&mut b, "header only, cut", &short[..50], Why::Short);
    let mut other_mac = frame("2001:db8::7", 64, 0, 16);
    other_mac[5] = 9;
    slow(&mut b, "another MAC", &other_mac, Why::NotForUs);
    slow(
        &mut b,
        "over the port's MTU",
        &frame("2001:db8::7", 64, 0, 1470),
        Why::FrameLen,
    );
}

#[test]
fn the_flow_label_hash_stays_in_userspace() {
    // seg6_flowlabel 1 hashes the inner flow into the outer label: the plan is left to the general path.
    let Some(mut b) = bench(1) else { return };
    slow(
        &mut b,
        "encap with seg6_flowlabel 1",
        &frame("fd00:92::1", 64, 0, 16),
        Why::NoPlan,
    );
    forwarded(
        &mut b,
        "inline with seg6_flowlabel 1",
        &frame("fd00:97::1", 64, 0, 16),
        Kind::Seg6Inline,
    );
}

/// A random run's driver: `cases` cases, no failure file.
fn runner(cases: u32) -> proptest::test_runner::TestRunner {
    proptest::test_runner::TestRunner::new(proptest::test_runner::Config {
        cases,
        failure_persistence: None,
        ..proptest::test_runner::Config::default()
    })
}

/// Spoils a random frame: the bytes `flips` names (offsets from `from`, those past the end left out) set to their
/// values; then, as `cut` falls, the frame cut short by `cut + 1` bytes (`cut` under `short`), padded with `cut`
/// bytes (`cut` from `short` to twice `short`), or left whole.
fn mangle(f: &mut Vec<u8>, from: usize, flips: Vec<(usize, u8)>, cut: usize, short: usize) {
    for (at, v) in flips {
        if from + at < f.len() {
            f[from + at] = v;
        }
    }
    if cut < short {
        f.truncate(f.len().saturating_sub(cut + 1));
    } else if cut < 2 * short {
        f.extend(std::iter::repeat_n(0xee, cut));
    }
}

/// Any frame: forwarded in the driver, then byte-identical to the userspace router's only output on the same
/// egress; or left to the slow path unchanged. Counted exactly once either way.
fn agrees(b: &mut Bench, f: &[u8]) -> Result<bool, String> {
    let before = b.tier.counters().unwrap();
    let run = b.tier.test_run(f).unwrap();
    let d = delta(&before, &b.tier.counters().unwrap());
    let slow: u64 = d.slow.values().sum();
    match run.action {
        XDP_REDIRECT => {
            let user = userspace(b, f);
            if user.len() != 1 || hex(&user[0].1) != hex(&run.frame) {
                return Err(format!(
                    "driver sent {}\nuserspace sent {user:02x?}",
                    hex(&run.frame)
                ));
            }
            if d.forwarded != 1 || slow != 0 || d.egress != [(user[0].0 as u32, 1)].into() {
                return Err(format!("counters {d:?}"));
            }
        }
        XDP_PASS => {
            if run.frame != f {
                return Err(format!("slow path frame changed: {}", hex(&run.frame)));
            }
            if d.forwarded != 0 || slow != 1 || !d.egress.is_empty() {
                return Err(format!("counters {d:?}"));
            }
        }
        a => return Err(format!("action {a}")),
    }
    Ok(run.action == XDP_REDIRECT)
}

#[test]
fn random_frames_agree_with_userspace() {
    use proptest::prelude::*;
    use proptest::test_runner::TestCaseError;
    for (fl, cases) in [(0, 3000), (-1, 500)] {
        let Some(b) = bench(fl) else { return };
        let b = std::cell::RefCell::new(b);
        let sent = std::cell::Cell::new(0u32);
        let dsts = [
            "2001:db8::7",
            "2001:db8:3::1",
            "2001:db8:5::1",
            "fd00:91::1",
            "fd00:92::1",
            "fd00:9a::1",
            "fd00:93::1",
            "fd00:94::1",
            "fd00:95::1",
            "fd00:96::1",
            "fd00:97::1",
            "fd00:9c::1",
            "fd00:98::1",
            "fd00:a1::1",
            "fd00:a3::1",
            "fd00:a4::1",
            "fd00:a6::1",
            "fd00:a7::1",
            "fd00:a8::1",
            "fd00:a2::1",
            "fd00:92::9",
            "fd00:1::2",
            "2001:db9::1",
        ];
        let strategy = (
            0..dsts.len(),
            any::<u8>(),
            any::<u32>(),
            prop_oneof![0usize..64, 0usize..1500],
            prop::collection::vec((0usize..80, any::<u8>()), 0..3),
            0usize..40,
            0u8..5,
        );
        let mut runner = runner(cases);
        runner
            .run(&strategy, |(i, hlim, fw, n, flips, cut, sl)| {
                let mut f = if dsts[i] == "fd00:a7::1" || dsts[i] == "fd00:a2::1" {
                    srh_frame(dsts[i], hlim, sl, &["2001:db8:3::5", "fc00::2", dsts[i]], n)
                } else if dsts[i] == "fd00:a8::1" {
                    let inner = frame("2001:db8::5", hlim, fw & 0x0fff_ffff, n)[14..].to_vec();
                    let segs: &[&str] = if sl < 2 {
                        &[]
                    } else {
                        &["fc00::3", "fd00:a8::1"]
                    };
                    encapsulated(dsts[i], 64, sl.saturating_sub(2), segs, &inner)
                } else {
                    frame(dsts[i], hlim, fw & 0x0fff_ffff, n)
                };
                mangle(&mut f, 0, flips, cut, 4);
                let driver = agrees(&mut b.borrow_mut(), &f).map_err(TestCaseError::fail)?;
                sent.set(sent.get() + u32::from(driver));
                Ok(())
            })
            .unwrap_or_else(|e| panic!("seg6_flowlabel {fl}: {e}"));
        // Most frames reach a plan the driver executes (the others: flipped bytes, short hop limits, MTU).
        assert!(
            sent.get() * 3 > cases,
            "seg6_flowlabel {fl}: only {} of {cases} frames forwarded in the driver",
            sent.get()
        );
        eprintln!(
            "seg6_flowlabel {fl}: {} of {cases} random frames forwarded in the driver",
            sent.get()
        );
    }
}

/// The configuration after a round of changes: a route removed, one added, a tunnel changed, a neighbour moved
/// (every plan through it changes).
fn conf_changed() -> String {
    conf(0)
        .replace("-6 route add 2001:db8:3::/48 via fd00:3::2 dev r2\n", "")
        .replace(
            &format!("encap seg6 mode encap segs {} dev r1", sids(3)),
            "encap seg6 mode encap segs fc00::77,fc00::78 dev r1",
        )
        .replace("lladdr 02:00:00:00:02:02", "lladdr 02:00:00:00:02:99")
        + "-6 route add 2001:db8:6::/48 via fd00:3::2 dev r2\n-6 route add 2001:dbf::/48 via fd00:3::2 dev r2\n"
}

#[test]
fn a_new_snapshot_replaces_only_what_changed() {
    let Some(mut b) = bench_of(
        &conf(0),
        Sizes {
            plans: 48,
            ..Sizes::default()
        },
    ) else {
        return;
    };
    let (a, changed) = (conf(0), conf_changed());
    let frames = [
        ("2001:db8::7", Kind::Forward),
        ("fd00:92::1", Kind::Seg6Encap),
        ("fd00:97::1", Kind::Seg6Inline),
        ("fd00:9e::1", Kind::Seg6Encap),
        ("fd00:a3::1", Kind::IoamInline),
    ];
    for round in 0..20 {
        let text = if round % 2 == 0 { &changed } else { &a };
        let router = router_of(text);
        let t = lwt6_xdp::tables(&router.snapshot());
        let done = b.tier.install(&t).expect("installed");
        assert!(
            b.tier.plans_in_use() <= t.plans.len(),
            "round {round}: {} slots for {} plans",
            b.tier.plans_in_use(),
            t.plans.len()
        );
        // The plans through r1's neighbour changed, the one out of r2 did not.
        assert!(
            done.plans_written > 0 && done.slots_freed > 0,
            "round {round}: {done:?}"
        );
        assert!(done.routes_set < t.routes.len(), "round {round}: {done:?}");
        assert_eq!(
            done.routes_removed,
            1 + round % 2,
            "round {round}: {done:?}"
        );
        b.router = router;
        for (dst, kind) in frames {
            forwarded(
                &mut b,
                &format!("round {round}, {dst}"),
                &frame(dst, 64, 0x0012_3456, 40),
                kind,
            );
        }
        // Routes added and removed: out of r2 by its own /48, or out of r1 by the covering /32; no route at all.
        for dst in ["2001:db8:3::1", "2001:db8:6::1"] {
            forwarded(
                &mut b,
                &format!("round {round}, {dst}"),
                &frame(dst, 64, 0, 16),
                Kind::Forward,
            );
        }
        let f = frame("2001:dbf::1", 64, 0, 16);
        if round % 2 == 0 {
            forwarded(&mut b, &format!("round {round}: added"), &f, Kind::Forward);
        } else {
            slow(&mut b, &format!("round {round}: removed"), &f, Why::NoRoute);
        }
    }
}

/// Snapshots swapped while packets run: every frame is the old router's or the new one's, never a mix (a plan is
/// never rewritten while a route names it).
#[test]
fn no_packet_sees_half_a_plan() {
    let Some(mut b) = bench(0) else { return };
    let texts = [conf(0), conf_changed()];
    let tables = texts
        .each_ref()
        .map(|t| lwt6_xdp::tables(&router_of(t).snapshot()));
    // Frames whose plans differ between the two: r1's neighbour moved, fd00:92's SIDs changed.
    let frames: Vec<Vec<u8>> = ["2001:db8::7", "fd00:92::1", "fd00:97::1", "fd00:a4::1"]
        .map(|d| frame(d, 64, 0x0012_3456, 100))
        .into();
    let mut want: Vec<[Vec<u8>; 2]> = Vec::new();
    for f in &frames {
        let mut outs = [0, 1].map(|i| {
            b.router = router_of(&texts[i]);
            let u = userspace(&mut b, f);
            assert_eq!(u.len(), 1);
            u[0].1.clone()
        });
        assert_ne!(outs[0], outs[1], "the frame's plan changes");
        want.push(std::mem::take(&mut outs));
    }
    let runner = b.tier.runner().unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let checker = s.spawn(|| {
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for (f, w) in frames.iter().zip(&want) {
                    let r = runner.run(f).unwrap();
                    assert_eq!(r.action, XDP_REDIRECT);
                    assert!(
                        r.frame == w[0] || r.frame == w[1],
                        "a frame neither router sends: {}",
                        hex(&r.frame)
                    );
                    n += 1;
                }
            }
            n
        });
        for i in 0..200 {
            b.tier.install(&tables[i % 2]).unwrap();
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let n = checker.join().unwrap();
        assert!(n > 0);
    });
}

/// Route changes followed from the changes (`delta::routes` and `Tier::update`, as `lwt6 run` follows them) while
/// frames run from another thread: a route replaced back and forth between two seg6 plans (other SIDs, another
/// egress) and a route next to it in the trie added and removed, 200 times. Every frame to the replaced route is
/// one router's output or the other's, a frame to an unchanged route its own; at the end the last one's.
#[test]
fn no_packet_sees_half_a_plan_when_routes_change() {
    use lwt6_dataplane::snapshot::{Change, Snapshot, SnapshotHandle, SnapshotWriter};
    use std::sync::Arc;
    let lines = [
        "-6 route add fd00:b0::/64 encap seg6 mode encap segs fc00::1,fc00::2 dev r1",
        "-6 route add fd00:b0::/64 encap seg6 mode encap segs fc00::3 dev r2",
    ];
    let texts = lines.map(|l| format!("{}{l}\n", conf(0)));
    let Some(mut b) = bench_of(&texts[0], Sizes::default()) else {
        return;
    };
    let route = |text: &str| {
        let cfg = lwt6_config::parse(text).expect("parses");
        cfg.routes.last().expect("a route").clone()
    };
    let replace = texts.each_ref().map(|t| Change::ReplaceRoute(route(t)));
    let sibling = route(&format!(
        "{}-6 route add fd00:b0:0:1::/64 via fd00:2::2 dev r1\n",
        conf(0)
    ));
    let frames: Vec<Vec<u8>> = ["fd00:b0::1", "fd00:92::1", "2001:db8::7"]
        .map(|d| frame(d, 64, 0x0012_3456, 100))
        .into();
    let mut want: Vec<[Vec<u8>; 2]> = Vec::new();
    for f in &frames {
        want.push([0, 1].map(|i| {
            b.router = router_of(&texts[i]);
            let u = userspace(&mut b, f);
            assert_eq!(u.len(), 1);
            u[0].1.clone()
        }));
    }
    assert_ne!(want[0][0], want[0][1], "the replaced route's plan changes");
    let handle = Arc::new(SnapshotHandle::new(
        Snapshot::build(&lwt6_config::parse(&texts[0]).expect("parses")).expect("builds"),
    ));
    handle.follow_changes();
    let mut since = handle.generation();
    let mut w = SnapshotWriter::new(Arc::clone(&handle));
    let runner = b.tier.runner().unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let checker = s.spawn(|| {
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for (f, w) in frames.iter().zip(&want) {
                    let r = runner.run(f).unwrap();
                    assert_eq!(r.action, XDP_REDIRECT);
                    assert!(
                        r.frame == w[0] || r.frame == w[1],
                        "a frame neither router sends: {}",
                        hex(&r.frame)
                    );
                    n += 1;
                }
            }
            n
        });
        // The checker stops however this thread ends (a failed assertion here must not leave it running).
        struct StopOnDrop<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for StopOnDrop<'_> {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
        let _stop = StopOnDrop(&stop);
        for i in 0..200 {
            let next = if i % 2 == 0 {
                Change::AddRoute(sibling.clone())
            } else {
                Change::DelRoute {
                    prefix: sibling.prefix,
                    metric: sibling.metric,
                    table: sibling.table,
                    line: 0,
                }
            };
            w.apply(&[replace[(i + 1) % 2].clone(), next]).unwrap();
            let (now, changes) = handle.changes_since(since);
            since = now;
            let routes = lwt6_xdp::delta::routes(
                &handle.load(),
                &changes.expect("the journal"),
                b.tier.way_routes(),
            )
            .unwrap();
            let done = b.tier.update(&routes).unwrap().expect("route changes");
            assert_eq!(done.routes_set + done.routes_removed, 2, "{done:?}");
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let n = checker.join().unwrap();
        assert!(n > 0);
    });
    // The last change replaced the route with the first plan again.
    for (f, w) in frames.iter().zip(&want) {
        assert_eq!(b.tier.test_run(f).unwrap().frame, w[0]);
    }
}

// ---- IOAM transit: the shapes of tests/kernel/test_ioam.py (where the userspace router is proven against the
// kernel), and the driver's own boundaries.

/// The transit router of tests/kernel/test_ioam.py: namespace 123 with data, wide data and schema 7, namespace
/// 200 with the defaults, node ids, ingress r0 (`ioam6_enabled` = `enabled`) and egress r1 ids; plus a second
/// egress without ids, an encapsulating route and a local address.
fn transit_conf(enabled: bool) -> String {
    format!(
        "
link add r0 address 02:00:00:00:01:02
link add r1 address 02:00:00:00:02:01 mtu 1400
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
ioam namespace add 200
sysctl net.ipv6.ioam6_id=0x111111
sysctl net.ipv6.ioam6_id_wide=0x22222222222222
sysctl net.ipv6.conf.r0.ioam6_enabled={}
sysctl net.ipv6.conf.r0.ioam6_id=0x0a0a
sysctl net.ipv6.conf.r0.ioam6_id_wide=0x0b0b0b0b
sysctl net.ipv6.conf.r1.ioam6_id=0x0c0c
sysctl net.ipv6.conf.r1.ioam6_id_wide=0x0d0d0d0d
-6 route add 2001:db8::/32 via fd00:2::2 dev r1
-6 route add 2001:db8:3::/48 via fd00:3::2 dev r2
-6 route add fc00::/16 via fd00:2::2 dev r1
-6 route add fd00:92::/64 encap seg6 mode encap segs fc00::1,fc00::2 dev r1
",
        u8::from(enabled)
    )
}

/// An IOAM pre-allocated trace option (RFC 9197 §4.4, from its type byte): namespace `ns`, trace type `ty`,
/// RemainingLen `rem` words of zeroed free space followed by `fill` (nodes already written), NodeLen `nodelen`
/// (the trace type's when None), flags `flags` (0x8: Overflow).
fn trace_option(ns: u16, ty: u32, rem: u8, nodelen: Option<u8>, flags: u8, fill: &[u8]) -> Vec<u8> {
    let nl = nodelen.unwrap_or_else(|| lwt6_dataplane::wire::ioam::node_len_for_type(ty));
    let data_len = 4 * usize::from(rem) + fill.len();
    let mut o = vec![0x31, (10 + data_len) as u8, 0, 0];
    o.extend(ns.to_be_bytes());
    o.extend(((u16::from(nl) << 11) | (u16::from(flags) << 7) | u16::from(rem)).to_be_bytes());
    o.extend((ty << 8).to_be_bytes());
    o.extend(std::iter::repeat_n(0u8, 4 * usize::from(rem)));
    o.extend_from_slice(fill);
    o
}

/// A Hop-by-Hop header (next header UDP) holding `opts` behind a PadN(0), padded with a PadN(2) to 8 octets as
/// Linux's and lwt6's insertion lay it out.
fn hbh_of(opts: &[Vec<u8>]) -> Vec<u8> {
    let mut h = vec![17, 0, 1, 0];
    for o in opts {
        h.extend_from_slice(o);
    }
    if h.len() % 8 != 0 {
        h.extend([1, 2, 0, 0]);
    }
    assert_eq!(h.len() % 8, 0);
    h[1] = (h.len() / 8 - 1) as u8;
    h
}

/// A frame to r0 for `dst` with the Hop-by-Hop header `hbh` before a payload of `payload` bytes.
fn hbh_frame(dst: &str, hlim: u8, hbh: &[u8], payload: usize) -> Vec<u8> {
    let mut f = frame(dst, hlim, 0x0012_3456, payload);
    f[14 + 6] = 0;
    let plen = (hbh.len() + payload) as u16;
    f[18..20].copy_from_slice(&plen.to_be_bytes());
    f.splice(54..54, hbh.iter().copied());
    f
}

/// The transit frames of one trace shape: hop limits 64, 2, 255 and payloads 8, 100, 700 bytes (as the kernel
/// tests send).
fn transit_frames(dst: &str, hbh: &[u8]) -> Vec<(String, Vec<u8>)> {
    [(64u8, 8usize), (2, 100), (255, 700)]
        .into_iter()
        .map(|(h, n)| {
            (
                format!("hop limit {h}, {n} bytes"),
                hbh_frame(dst, h, hbh, n),
            )
        })
        .collect()
}

/// An earlier node's block for trace type 0xc40000 (bits 0, 1, 5), as tests/kernel/test_ioam.py prefills.
const PREFILLED: [u8; 12] = [
    0x3a, 0x99, 0x99, 0x99, 0x01, 0x02, 0x03, 0x04, 0x77, 0x77, 0x77, 0x77,
];

#[test]
fn ioam_transit_matches_userspace() {
    let Some(mut b) = bench_of(&transit_conf(true), Sizes::default()) else {
        return;
    };
    let dst = "2001:db8::7";
    // (what, options, traces this node fills or flags)
    let cases: Vec<(&str, Vec<Vec<u8>>, u64)> = vec![
        (
            "basic 0xc40000",
            vec![trace_option(123, 0xc4_0000, 6, None, 0, &[])],
            1,
        ),
        (
            "odd RemainingLen, PadN(2)",
            vec![trace_option(123, 0xc4_0000, 3, None, 0, &[])],
            1,
        ),
        (
            "wide 0x00e000",
            vec![trace_option(123, 0x00_e000, 12, None, 0, &[])],
            1,
        ),
        (
            "bit 22 without a schema",
            vec![trace_option(200, 0x80_0002, 4, None, 0, &[])],
            1,
        ),
        (
            "bit 22 with the schema",
            vec![trace_option(123, 0x80_0002, 8, None, 0, &[])],
            1,
        ),
        (
            "every bit but the timestamps, with the schema",
            vec![trace_option(123, 0xcf_ffff, 40, None, 0, &[])],
            1,
        ),
        (
            "bits 12-21 and 23 alone",
            vec![trace_option(123, 0x00_0ffd, 20, None, 0, &[])],
            1,
        ),
        (
            "a node already there",
            vec![trace_option(123, 0xc4_0000, 3, None, 0, &PREFILLED)],
            1,
        ),
        (
            "overflow, no room",
            vec![trace_option(123, 0xc4_0000, 0, None, 0, &[])],
            1,
        ),
        (
            "overflow, too small",
            vec![trace_option(123, 0xc4_0000, 2, None, 0, &[])],
            1,
        ),
        (
            "overflow, the schema larger than the room",
            vec![trace_option(123, 0x80_0002, 3, None, 0, &[])],
            1,
        ),
        (
            "Overflow flag already set",
            vec![trace_option(123, 0xc4_0000, 6, None, 0x8, &[])],
            1,
        ),
        (
            "unknown namespace",
            vec![trace_option(124, 0xc4_0000, 6, None, 0, &[])],
            0,
        ),
        (
            "unknown namespace, timestamps",
            vec![trace_option(124, 0xf0_0000, 8, None, 0, &[])],
            0,
        ),
        (
            "timestamps without room (Overflow only)",
            vec![trace_option(123, 0xf0_0000, 3, None, 0, &[])],
            1,
        ),
        (
            "two traces, two namespaces",
            vec![
                trace_option(123, 0xc4_0000, 6, None, 0, &[]),
                trace_option(200, 0x86_0000, 3, None, 0, &[]),
            ],
            2,
        ),
        (
            "eight traces (the most)",
            (0..8)
                .map(|i| {
                    trace_option(
                        if i % 2 == 0 { 123 } else { 124 },
                        0x80_0000,
                        1,
                        None,
                        0,
                        &[],
                    )
                })
                .collect(),
            4,
        ),
    ];
    for (what, opts, filled) in &cases {
        let hbh = hbh_of(opts);
        for (how, f) in transit_frames(dst, &hbh) {
            let what = format!("IOAM transit, {what}, {how}");
            forwarded_filling(&mut b, &what, &f, Kind::IoamTransit, *filled);
        }
        // Out of r2, whose ids are the defaults.
        let f = hbh_frame("2001:db8:3::1", 64, &hbh, 16);
        forwarded_filling(
            &mut b,
            &format!("IOAM transit, {what}, out of r2"),
            &f,
            Kind::IoamTransit,
            *filled,
        );
    }
    // The MTU boundary (r1: 1400) and the hop limit.
    let hbh = hbh_of(&[trace_option(123, 0xc4_0000, 6, None, 0, &[])]);
    let at_mtu = 1400 - 40 - hbh.len();
    forwarded_filling(
        &mut b,
        "IOAM transit, exactly the MTU",
        &hbh_frame(dst, 64, &hbh, at_mtu),
        Kind::IoamTransit,
        1,
    );
    slow(
        &mut b,
        "IOAM transit, MTU + 1",
        &hbh_frame(dst, 64, &hbh, at_mtu + 1),
        Why::Mtu,
    );
    slow(
        &mut b,
        "IOAM transit, hop limit 1",
        &hbh_frame(dst, 1, &hbh, 16),
        Why::HopLimit,
    );

    // To the worker: what the driver cannot write, and what Linux drops.
    for (what, opts, why) in [
        (
            "timestamps 0xf00000",
            vec![trace_option(123, 0xf0_0000, 8, None, 0, &[])],
            Why::IoamField,
        ),
        (
            "every bit 0xfff002, schema",
            vec![trace_option(123, 0xff_f002, 36, None, 0, &[])],
            Why::IoamField,
        ),
        (
            "a second trace with timestamps",
            vec![
                trace_option(123, 0xc4_0000, 6, None, 0, &[]),
                trace_option(200, 0x20_0000, 3, None, 0, &[]),
            ],
            Why::IoamField,
        ),
        (
            "inconsistent NodeLen",
            vec![trace_option(123, 0xc4_0000, 6, Some(2), 0, &[])],
            Why::IoamInvalid,
        ),
        (
            "inconsistent NodeLen, unknown namespace",
            vec![trace_option(124, 0xc4_0000, 6, Some(4), 0, &[])],
            Why::IoamInvalid,
        ),
        (
            "RemainingLen past the option",
            vec![{
                let mut o = trace_option(123, 0xc4_0000, 6, None, 0, &[]);
                o[7] = 7;
                o
            }],
            Why::IoamInvalid,
        ),
        (
            "nine traces",
            (0..9)
                .map(|_| trace_option(124, 0x80_0000, 1, None, 0, &[]))
                .collect(),
            Why::HopByHop,
        ),
    ] {
        let hbh = hbh_of(&opts);
        for (how, f) in transit_frames(dst, &hbh) {
            let what = format!("IOAM transit, {what}, {how}");
            slow(&mut b, &what, &f, why);
            if why == Why::IoamInvalid {
                assert!(
                    userspace(&mut b, &f).is_empty(),
                    "{what}: the router drops it"
                );
            }
        }
    }
    // Hop-by-Hop headers laid out otherwise, and other plans: the worker's.
    let trace = trace_option(123, 0xc4_0000, 6, None, 0, &[]);
    let mut alert = vec![17, 0, 5, 2, 0, 0, 1, 0];
    alert.extend(&trace);
    alert.extend([1, 2, 0, 0]);
    alert[1] = (alert.len() / 8 - 1) as u8;
    let mut pad1 = hbh_of(std::slice::from_ref(&trace));
    pad1[2..4].copy_from_slice(&[0, 0]);
    let mut dex = trace.clone();
    dex[3] = 4;
    let mut long = hbh_of(std::slice::from_ref(&trace));
    long[5] += 8;
    for (what, hbh, dst) in [
        ("router alert first", alert, dst),
        ("Pad1 instead of PadN(0)", pad1, dst),
        ("a Direct Export option", hbh_of(&[dex]), dst),
        ("an option longer than the header", long, dst),
        (
            "to an encapsulating route",
            hbh_of(std::slice::from_ref(&trace)),
            "fd00:92::1",
        ),
    ] {
        slow(
            &mut b,
            &format!("Hop-by-Hop, {what}"),
            &hbh_frame(dst, 64, &hbh, 16),
            Why::HopByHop,
        );
    }
    slow(
        &mut b,
        "Hop-by-Hop to a local address",
        &hbh_frame("fd00:2::1", 64, &hbh_of(&[trace]), 16),
        Why::Local,
    );
}

/// The transit frames of one trace shape must match the userspace router's twice: with the driver assembling
/// this node's block field by field (no block yet for a key met the first time), then, once the tier has learnt
/// the missed keys, copying the precomputed block (no miss recorded).
fn transit_twice(b: &mut Bench, what: &str, frames: &[(String, Vec<u8>)], filled: u64) -> usize {
    for (how, f) in frames {
        forwarded_filling(
            b,
            &format!("{what}, {how}, field by field"),
            f,
            Kind::IoamTransit,
            filled,
        );
    }
    let learnt = b.tier.learn_ioam().unwrap();
    let misses = b.tier.ioam_misses().unwrap();
    for (how, f) in frames {
        forwarded_filling(
            b,
            &format!("{what}, {how}, block copied"),
            f,
            Kind::IoamTransit,
            filled,
        );
    }
    assert_eq!(
        b.tier.ioam_misses().unwrap(),
        misses,
        "{what}: the precomputed block was found"
    );
    learnt
}

#[test]
fn ioam_transit_blocks_match_userspace() {
    let Some(mut b) = bench_of(&transit_conf(true), Sizes::default()) else {
        return;
    };
    let nl = lwt6_dataplane::wire::ioam::node_len_for_type;
    // (namespace, trace type): the kernel tests' shapes, the wide fields, the schema, every bit but the
    // timestamps, a namespace without data.
    let shapes = [
        (123u16, 0xc4_0000u32),
        (123, 0x80_0000),
        (123, 0x00_e000),
        (123, 0x80_0002),
        (123, 0xcf_ffff),
        (123, 0x00_0ffd),
        (200, 0xc4_0000),
        (200, 0x86_0000),
        (200, 0xcf_ffff),
    ];
    let mut learnt = 0;
    for (ns, ty) in shapes {
        // This node's block: NodeLen words, and the schema's (8 bytes and its 4-byte header) with bit 22 in 123.
        let words = nl(ty) + if ns == 123 && ty & 2 != 0 { 3 } else { 0 };
        for (dst, egress) in [("2001:db8::7", "r1"), ("2001:db8:3::1", "r2")] {
            // Room: several nodes, exactly one (the trace full after this node), one word short, none.
            for rem in [(3 * words).min(60), words, words - 1, 0] {
                let opt = trace_option(ns, ty, rem, None, 0, &[]);
                let frames: Vec<(String, Vec<u8>)> = [(64u8, 8usize), (2, 100), (255, 0)]
                    .into_iter()
                    .map(|(h, n)| {
                        (
                            format!("hop limit {h}, {n} bytes"),
                            hbh_frame(dst, h, &hbh_of(std::slice::from_ref(&opt)), n),
                        )
                    })
                    .collect();
                let what = format!(
                    "IOAM transit block, ns {ns}, type {ty:#08x}, out of {egress}, room {rem}"
                );
                learnt += transit_twice(&mut b, &what, &frames, 1);
            }
        }
    }
    assert!(learnt >= shapes.len() * 2, "blocks learnt: {learnt}");
    // Two traces of two namespaces, both with blocks now; and a node already there.
    let two = hbh_of(&[
        trace_option(123, 0xc4_0000, 6, None, 0, &[]),
        trace_option(200, 0x86_0000, 3, None, 0, &[]),
    ]);
    transit_twice(
        &mut b,
        "two traces",
        &transit_frames("2001:db8::7", &two),
        2,
    );
    let pre = hbh_of(&[trace_option(123, 0xc4_0000, 3, None, 0, &PREFILLED)]);
    transit_twice(
        &mut b,
        "a node already there",
        &transit_frames("2001:db8::7", &pre),
        1,
    );
    // With blocks: hop limit 1 to the worker; timestamps (a refused block once learnt? never learnt: the fill
    // goes to the worker before) to the worker; an inconsistent NodeLen and RemainingLen past the option dropped
    // by the router.
    let hbh = hbh_of(&[trace_option(123, 0xc4_0000, 6, None, 0, &[])]);
    slow(
        &mut b,
        "block, hop limit 1",
        &hbh_frame("2001:db8::7", 1, &hbh, 16),
        Why::HopLimit,
    );
    for (what, opt, why) in [
        (
            "timestamps",
            trace_option(123, 0xf0_0000, 8, None, 0, &[]),
            Why::IoamField,
        ),
        (
            "inconsistent NodeLen",
            trace_option(123, 0xc4_0000, 6, Some(2), 0, &[]),
            Why::IoamInvalid,
        ),
        (
            "RemainingLen past the option",
            {
                let mut o = trace_option(123, 0xc4_0000, 6, None, 0, &[]);
                o[7] = 7;
                o
            },
            Why::IoamInvalid,
        ),
    ] {
        for round in 0..2 {
            let f = hbh_frame("2001:db8::7", 64, &hbh_of(std::slice::from_ref(&opt)), 16);
            slow(&mut b, &format!("block, {what}, round {round}"), &f, why);
            b.tier.learn_ioam().unwrap();
        }
    }
    // A refused block learnt (timestamps): still to the worker when this node would write, Overflow in the driver
    // when there is no room.
    assert!(
        b.tier.ioam_blocks() > learnt,
        "the timestamps' block is learnt too"
    );
    transit_twice(
        &mut b,
        "timestamps without room",
        &transit_frames(
            "2001:db8::7",
            &hbh_of(&[trace_option(123, 0xf0_0000, 3, None, 0, &[])]),
        ),
        1,
    );
    // A snapshot that changes the namespace's data and the egress ids: the blocks follow.
    let changed = transit_conf(true)
        .replace("data 0xdeadbeef wide", "data 0x01020304 wide")
        .replace("r1.ioam6_id=0x0c0c", "r1.ioam6_id=0x0e0e");
    let r2 = router_of(&changed);
    b.tier.install(&lwt6_xdp::tables(&r2.snapshot())).unwrap();
    b.router = r2;
    let misses = b.tier.ioam_misses().unwrap();
    for (how, f) in transit_frames(
        "2001:db8::7",
        &hbh_of(&[trace_option(123, 0xc4_0000, 6, None, 0, &[])]),
    ) {
        forwarded_filling(
            &mut b,
            &format!("after a change, {how}"),
            &f,
            Kind::IoamTransit,
            1,
        );
    }
    assert_eq!(
        b.tier.ioam_misses().unwrap(),
        misses,
        "the changed block was found"
    );
    // IOAM domains: no `ioam` entry, so no block either.
    let text = transit_conf(true) + "ioam domain add d1 namespace 123 ingress r0 egress r1\n";
    b.tier
        .install(&lwt6_xdp::tables(&router_of(&text).snapshot()))
        .unwrap();
    assert_eq!(b.tier.ioam_blocks(), 0, "blocks removed with their entries");
    slow(
        &mut b,
        "domains, with blocks before",
        &hbh_frame("2001:db8::7", 64, &hbh, 16),
        Why::HopByHop,
    );
}

#[test]
fn ioam_transit_disabled_on_the_ingress_forwards_unchanged() {
    let Some(mut b) = bench_of(&transit_conf(false), Sizes::default()) else {
        return;
    };
    for (what, opt) in [
        ("0xc40000", trace_option(123, 0xc4_0000, 6, None, 0, &[])),
        ("timestamps", trace_option(123, 0xf0_0000, 8, None, 0, &[])),
        (
            "inconsistent NodeLen",
            trace_option(123, 0xc4_0000, 6, Some(2), 0, &[]),
        ),
    ] {
        for (how, f) in transit_frames("2001:db8::7", &hbh_of(&[opt])) {
            let what = format!("ioam6_enabled 0, {what}, {how}");
            forwarded_filling(&mut b, &what, &f, Kind::IoamTransit, 0);
        }
    }
}

#[test]
fn ioam_domains_leave_transit_to_the_worker() {
    let text = transit_conf(true) + "ioam domain add d1 namespace 123 ingress r0 egress r1\n";
    let Some(mut b) = bench_of(&text, Sizes::default()) else {
        return;
    };
    let f = hbh_frame(
        "2001:db8::7",
        64,
        &hbh_of(&[trace_option(123, 0xc4_0000, 6, None, 0, &[])]),
        16,
    );
    slow(&mut b, "IOAM transit with domains", &f, Why::HopByHop);
    let snap = b.router.snapshot();
    let mut t = lwt6_xdp::tables(&snap);
    assert!(t.ioam.is_empty());
    let b2 = router_of(&transit_conf(true));
    t = lwt6_xdp::tables(&b2.snapshot());
    assert!(!t.ioam.is_empty());
    t.leave_transit_to_the_worker();
    b.tier.install(&t).unwrap();
    slow(&mut b, "IOAM transit left to the worker", &f, Why::HopByHop);
}

#[test]
fn random_transit_frames_agree_with_userspace() {
    use proptest::prelude::*;
    use proptest::test_runner::TestCaseError;
    let Some(b) = bench_of(&transit_conf(true), Sizes::default()) else {
        return;
    };
    let b = std::cell::RefCell::new(b);
    let (sent, filled) = (std::cell::Cell::new(0u32), std::cell::Cell::new(0u64));
    let seen = std::cell::Cell::new(0u32);
    let cases = 2000;
    // Up to three traces: namespace (known, known with a schema, unknown), trace type (the kernel tests' and any
    // 24 bits), RemainingLen, NodeLen right or not, the Overflow flag; then a hop limit, a payload, an egress and
    // up to two bytes of the Hop-by-Hop header overwritten.
    let trace = (
        prop_oneof![Just(123u16), Just(200), Just(124)],
        prop_oneof![
            Just(0xc4_0000u32),
            Just(0x00_e000),
            Just(0x80_0002),
            Just(0xf0_0000),
            Just(0xcf_ffff),
            0u32..0x100_0000
        ],
        0u8..40,
        prop_oneof![4 => Just(None), 1 => (0u8..32).prop_map(Some)],
        prop_oneof![4 => Just(0u8), 1 => Just(8u8)],
    );
    let strategy = (
        prop::collection::vec(trace, 1..4),
        any::<u8>(),
        0usize..300,
        any::<bool>(),
        prop::collection::vec((0usize..64, any::<u8>()), 0..3),
    );
    let mut runner = runner(cases);
    runner
        .run(&strategy, |(traces, hlim, n, r2, flips)| {
            let opts: Vec<Vec<u8>> = traces
                .iter()
                .map(|&(ns, ty, rem, nl, flags)| trace_option(ns, ty, rem, nl, flags, &[]))
                .collect();
            let dst = if r2 { "2001:db8:3::1" } else { "2001:db8::7" };
            let mut f = hbh_frame(dst, hlim, &hbh_of(&opts), n);
            mangle(&mut f, 54, flips, usize::MAX, 0);
            let before = b.borrow().tier.counters().unwrap().ioam_filled;
            // Half of the way with precomputed blocks for the trace types met so far.
            if seen.get().is_multiple_of(50) && seen.get() > cases / 2 {
                b.borrow_mut()
                    .tier
                    .learn_ioam()
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
            }
            seen.set(seen.get() + 1);
            let driver = agrees(&mut b.borrow_mut(), &f).map_err(TestCaseError::fail)?;
            sent.set(sent.get() + u32::from(driver));
            filled.set(filled.get() + b.borrow().tier.counters().unwrap().ioam_filled - before);
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        sent.get() * 3 > cases,
        "only {} of {cases} transit frames forwarded in the driver",
        sent.get()
    );
    assert!(filled.get() > 0, "no trace filled");
    assert!(b.borrow().tier.ioam_blocks() > 0, "no block learnt");
    eprintln!(
        "{} of {cases} random transit frames forwarded in the driver, {} traces filled",
        sent.get(),
        filled.get()
    );
}

// ---- End.DT6: End.DX6's decapsulation, then the inner destination looked up in table T.

/// Routes in the main table and in table 100, and End.DT6 SIDs on both.
fn dt6_conf() -> String {
    "
link add r0 address 02:00:00:00:01:02
link add r1 address 02:00:00:00:02:01 mtu 1400
link add r2 address 02:00:00:00:03:01
addr add fd00:1::2/64 dev r0
addr add fd00:2::1/64 dev r1
addr add fd00:3::1/64 dev r2
neigh add fd00:1::1 lladdr 02:00:00:00:01:01 dev r0
neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1
neigh add fd00:3::2 lladdr 02:00:00:00:03:02 dev r2
-6 route add 2001:db8::/32 via fd00:2::2 dev r1
-6 route add 2001:db8:3::/48 via fd00:3::2 dev r2
-6 route add 2001:db8:100::/48 via fd00:3::2 dev r2 table 100
-6 route add 2001:db8:101::/48 via fd00:2::2 dev r1 mtu 1280 table 100
-6 route add 2001:db8:104::/48 via fd00:3::99 dev r2 table 100
-6 route add 2001:db8:105::/48 encap seg6 mode encap segs fc00::1 dev r1 table 100
-6 route add fd00:b0::/64 encap seg6local action End.DT6 table 254 dev r1
-6 route add fd00:b1::/64 encap seg6local action End.DT6 table 100 dev r1
-6 route add fd00:b3::/64 encap seg6local action End.DT6 table 100 count dev r1
"
    .to_string()
}

#[test]
fn end_dt6_matches_userspace() {
    let Some(mut b) = bench_of(&dt6_conf(), Sizes::default()) else {
        return;
    };
    let segs = |sid: &'static str| ["fc00::3", sid];
    for (sid, inner_dst, what) in [
        ("fd00:b0::1", "2001:db8::99", "table 254, out of r1"),
        ("fd00:b0::1", "2001:db8:3::1", "table 254, out of r2"),
        ("fd00:b1::1", "2001:db8:100::1", "table 100, out of r2"),
        ("fd00:b1::1", "2001:db8:101::1", "table 100, out of r1"),
    ] {
        for (ihl, n) in [(64u8, 16usize), (2, 0), (33, 1000)] {
            let inner = frame(inner_dst, ihl, 0x0abc_def0, n)[14..].to_vec();
            for (how, f) in [
                ("no SRH", encapsulated(sid, 64, 0, &[], &inner)),
                (
                    "SRH, Segments Left 0",
                    encapsulated(sid, 9, 0, &segs(sid), &inner),
                ),
            ] {
                let what = format!("End.DT6, {what}, {how}, inner hop limit {ihl}, {n} bytes");
                forwarded(&mut b, &what, &f, Kind::EndDt6);
            }
        }
    }
    // The route MTU in table 100 (1280): exactly, and one byte over.
    let at = frame("2001:db8:101::1", 64, 0, 1240)[14..].to_vec();
    forwarded(
        &mut b,
        "End.DT6, inner exactly the table route's MTU",
        &encapsulated("fd00:b1::1", 64, 0, &[], &at),
        Kind::EndDt6,
    );
    let over = frame("2001:db8:101::1", 64, 0, 1241)[14..].to_vec();
    slow(
        &mut b,
        "End.DT6, inner MTU + 1",
        &encapsulated("fd00:b1::1", 64, 0, &[], &over),
        Why::Mtu,
    );
    // Ethernet padding behind the outer packet: trimmed as the router does.
    let inner = frame("2001:db8:100::1", 64, 0, 16)[14..].to_vec();
    let mut padded = encapsulated("fd00:b1::1", 64, 0, &[], &inner);
    padded.extend([0u8; 5]);
    forwarded(&mut b, "End.DT6, padded frame", &padded, Kind::EndDt6);
    // To the worker.
    for (what, sid, inner_dst, ihl, why) in [
        (
            "no route in table 100",
            "fd00:b1::1",
            "2001:db8::99",
            64,
            Why::Table,
        ),
        (
            "an unresolved neighbour in table 100",
            "fd00:b1::1",
            "2001:db8:104::1",
            64,
            Why::NoPlan,
        ),
        (
            "an encapsulating route in table 100",
            "fd00:b1::1",
            "2001:db8:105::1",
            64,
            Why::Kind,
        ),
        (
            "inner destination ours",
            "fd00:b1::1",
            "fd00:2::1",
            64,
            Why::Local,
        ),
        (
            "inner destination ours, table 254",
            "fd00:b0::1",
            "fd00:3::1",
            64,
            Why::Local,
        ),
        (
            "inner destination another SID",
            "fd00:b0::1",
            "fd00:b1::5",
            64,
            Why::Kind,
        ),
        (
            "inner destination link-local",
            "fd00:b0::1",
            "fe80::1",
            64,
            Why::Table,
        ),
        (
            "inner destination multicast",
            "fd00:b0::1",
            "ff0e::1",
            64,
            Why::Table,
        ),
        (
            "inner hop limit 1",
            "fd00:b1::1",
            "2001:db8:100::1",
            1,
            Why::HopLimit,
        ),
        ("counters", "fd00:b3::1", "2001:db8:100::1", 64, Why::Kind),
    ] {
        let inner = frame(inner_dst, ihl, 0, 16)[14..].to_vec();
        slow(
            &mut b,
            &format!("End.DT6, {what}"),
            &encapsulated(sid, 64, 0, &[], &inner),
            why,
        );
    }
    let inner = frame("2001:db8:100::1", 64, 0, 16)[14..].to_vec();
    slow(
        &mut b,
        "End.DT6, a segment left",
        &encapsulated("fd00:b1::1", 64, 1, &segs("fd00:b1::1"), &inner),
        Why::Decap,
    );
    slow(
        &mut b,
        "End.DT6, no inner packet",
        &frame("fd00:b1::1", 64, 0, 16),
        Why::Decap,
    );
    let mut v4 = inner.clone();
    v4[0] = 0x45;
    slow(
        &mut b,
        "End.DT6, IPv4 inside",
        &encapsulated("fd00:b1::1", 64, 0, &[], &v4),
        Why::Decap,
    );
    slow(
        &mut b,
        "End.DT6, outer hop limit 1",
        &encapsulated("fd00:b1::1", 1, 0, &[], &inner),
        Why::HopLimit,
    );
    let snap = b.router.snapshot();
    let t = lwt6_xdp::tables(&snap);
    assert_eq!(
        t.placement(&"fd00:b3::/64".parse().unwrap()),
        Some(Err(Why::Kind))
    );
}

#[test]
fn random_end_dt6_frames_agree_with_userspace() {
    use proptest::prelude::*;
    use proptest::test_runner::TestCaseError;
    let Some(b) = bench_of(&dt6_conf(), Sizes::default()) else {
        return;
    };
    let b = std::cell::RefCell::new(b);
    let sent = std::cell::Cell::new(0u32);
    let cases = 1500;
    let sids = ["fd00:b0::1", "fd00:b1::1", "fd00:b3::1"];
    let inner = [
        "2001:db8::99",
        "2001:db8:3::1",
        "2001:db8:100::1",
        "2001:db8:101::1",
        "2001:db8:104::1",
        "2001:db8:105::1",
        "fd00:2::1",
        "fe80::1",
    ];
    let strategy = (
        0..sids.len(),
        0..inner.len(),
        any::<u8>(),
        0u8..3,
        prop_oneof![0usize..64, 0usize..1400],
        prop::collection::vec((0usize..140, any::<u8>()), 0..3),
        0usize..20,
    );
    let mut runner = runner(cases);
    runner
        .run(&strategy, |(s, i, ihl, sl, n, flips, cut)| {
            let pkt = frame(inner[i], ihl, 0x0012_3456, n)[14..].to_vec();
            let mut f = if sl == 0 {
                encapsulated(sids[s], 64, 0, &[], &pkt)
            } else {
                encapsulated(sids[s], 64, sl - 1, &["fc00::3", sids[s]], &pkt)
            };
            mangle(&mut f, 0, flips, cut, 3);
            let driver = agrees(&mut b.borrow_mut(), &f).map_err(TestCaseError::fail)?;
            sent.set(sent.get() + u32::from(driver));
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
    // Two SIDs of three, four inner destinations of eight and two SRH shapes of three can be forwarded.
    assert!(
        sent.get() * 10 > cases,
        "only {} of {cases} End.DT6 frames forwarded in the driver",
        sent.get()
    );
    eprintln!(
        "{} of {cases} random End.DT6 frames forwarded in the driver",
        sent.get()
    );
}

/// seg6 l2encap and l2encap.red of IPv6 packets, and seg6 encapsulations of IPv4 packets (tests/kernel/
/// test_seg6.py proves the userspace router's bytes for these against the kernel's): r0 receives, r1 (MTU 1400)
/// and r2 (hop_limit `hl2`) send.
fn encap_conf(flowlabel: i32, hl2: u8) -> String {
    format!(
        "
link add r0 address 02:00:00:00:01:02
link add r1 address 02:00:00:00:02:01 mtu 1400
link add r2 address 02:00:00:00:03:01
addr add fd00:1::2/64 dev r0
addr add fd00:2::1/64 dev r1
addr add fd00:3::1/64 dev r2
addr add 10.1.0.2/24 dev r0
addr add 10.2.0.1/24 dev r1
addr add 10.99.0.9/32 dev r0
neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1
neigh add fd00:3::2 lladdr 02:00:00:00:03:02 dev r2
neigh add 10.2.0.2 lladdr 02:00:00:00:02:02 dev r1
sysctl net.ipv6.seg6_flowlabel={flowlabel}
sysctl net.ipv6.conf.r2.hop_limit={hl2}
sr hmac set 42 sha256 secret mysecret
-6 route add fc00::/16 via fd00:2::2 dev r1
-6 route add fc01::/16 via fd00:3::2 dev r2
-6 route add fd00:a0::/64 encap seg6 mode l2encap segs {s3} dev r1
-6 route add fd00:aa::/64 encap seg6 mode l2encap segs {s1} dev r1
-6 route add fd00:a9::/64 encap seg6 mode l2encap.red segs {s3} dev r1
-6 route add fd00:ab::/64 encap seg6 mode l2encap.red segs {s1} dev r1
-6 route add fd00:ac::/64 encap seg6 mode l2encap segs {s9} dev r1
-6 route add fd00:ad::/64 encap seg6 mode l2encap segs {s10} dev r1
-6 route add fd00:ae::/64 encap seg6 mode l2encap segs {s2} hmac 42 dev r1
-6 route add fd00:af::/64 encap seg6 mode l2encap.red segs {s1} hmac 42 dev r1
-6 route add fd00:b0::/64 encap seg6 mode l2encap segs fc01::a,fc01::b dev r2
-6 route add fd00:b1::/64 encap seg6 mode l2encap segs fc02::1 dev r1
-4 route add 10.99.0.0/24 encap seg6 mode encap segs {s3} dev r1
-4 route add 10.98.0.0/24 encap seg6 mode encap.red segs {s3} dev r1
-4 route add 10.97.0.0/24 encap seg6 mode encap.red segs {s1} dev r1
-4 route add 10.96.0.0/24 encap seg6 mode l2encap segs {s3} dev r1
-4 route add 10.95.0.0/24 encap seg6 mode l2encap.red segs {s1} dev r1
-4 route add 10.94.0.0/24 encap seg6 mode encap segs {s10} dev r1
-4 route add 10.93.0.0/24 encap seg6 mode encap segs fc01::a,fc01::b dev r2
-4 route add 10.92.0.0/24 encap seg6 mode encap segs {s2} hmac 42 dev r1
-4 route add 10.91.0.0/24 encap seg6 mode l2encap.red segs {s1} hmac 42 dev r1
-4 route add 10.90.0.0/24 encap seg6 mode encap segs {s11} dev r1
-4 route add 10.89.0.0/24 encap seg6 mode encap segs fc02::1 dev r1
-4 route add 10.88.0.0/24 via 10.2.0.2 dev r1
-4 route add 10.99.0.128/25 via 10.2.0.2 dev r1
",
        s1 = sids(1),
        s2 = sids(2),
        s3 = sids(3),
        s9 = sids(9),
        s10 = sids(10),
        s11 = sids(11),
    )
}

/// RFC 1071's checksum of an IPv4 header (written by hand: the value the header must carry).
fn ipv4_checksum(h: &[u8]) -> u16 {
    let mut sum: u32 = h
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An IPv4 frame to r0 from 10.1.0.1 (UDP-like, `payload` bytes) to `dst`, with `tos`, `ttl` and the flags and
/// fragment offset word `frag`, and `options` (a multiple of 4 bytes) in the header.
fn frame4(dst: &str, tos: u8, ttl: u8, frag: u16, options: &[u8], payload: usize) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 1, 2, 2, 0, 0, 0, 1, 1, 0x08, 0x00];
    let hl = 20 + options.len();
    let total = (hl + payload) as u16;
    let mut h = vec![0x40 | (hl / 4) as u8, tos];
    h.extend(total.to_be_bytes());
    h.extend([0x42, 0x43]);
    h.extend(frag.to_be_bytes());
    h.extend([ttl, 17, 0, 0]);
    h.extend([10, 1, 0, 1]);
    h.extend(dst.parse::<std::net::Ipv4Addr>().unwrap().octets());
    h.extend_from_slice(options);
    let c = ipv4_checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend(h);
    f.extend((0..payload).map(|i| (i * 5 + 1) as u8));
    f
}

#[test]
fn seg6_l2encap_matches_userspace() {
    for fl in [0, -1] {
        let Some(mut b) = bench_of(&encap_conf(fl, 64), Sizes::default()) else {
            return;
        };
        for (dst, what) in [
            ("fd00:a0::1", "l2encap, 3 SIDs"),
            ("fd00:aa::1", "l2encap, 1 SID"),
            ("fd00:a9::1", "l2encap.red, 3 SIDs"),
            ("fd00:ab::1", "l2encap.red, 1 SID (no SRH: next header 143)"),
            ("fd00:ac::1", "l2encap, 9 SIDs (206 bytes)"),
            ("fd00:ae::1", "l2encap, 2 SIDs, HMAC"),
            ("fd00:af::1", "l2encap.red, 1 SID, HMAC (the SRH kept)"),
            ("fd00:b0::1", "l2encap, 2 SIDs, other egress"),
        ] {
            for (hlim, fw, n) in [
                (64u8, 0x0b81_2345u32, 16usize),
                (2, 0x0fff_ffff, 0),
                (17, 0, 700),
            ] {
                let what = format!("{what}, seg6_flowlabel {fl}, hop limit {hlim}, {n} bytes");
                forwarded(&mut b, &what, &frame(dst, hlim, fw, n), Kind::Seg6L2Encap);
            }
        }
        // Ethernet padding: the inner frame is the Ethernet header and the IPv6 packet, without the padding.
        let mut padded = frame("fd00:a0::1", 64, 0, 0);
        padded.extend([0u8; 6]);
        forwarded(&mut b, "l2encap, padded frame", &padded, Kind::Seg6L2Encap);
    }
}

#[test]
fn seg6_encap_of_ipv4_matches_userspace() {
    for fl in [0, -1] {
        let Some(mut b) = bench_of(&encap_conf(fl, 64), Sizes::default()) else {
            return;
        };
        for (dst, kind, what) in [
            ("10.99.0.1", Kind::Seg6EncapV4, "encap, 3 SIDs"),
            ("10.98.0.1", Kind::Seg6EncapV4, "encap.red, 3 SIDs"),
            ("10.97.0.1", Kind::Seg6EncapV4, "encap.red, 1 SID (no SRH)"),
            ("10.94.0.1", Kind::Seg6EncapV4, "encap, 10 SIDs (208 bytes)"),
            (
                "10.93.0.1",
                Kind::Seg6EncapV4,
                "encap, 2 SIDs, other egress",
            ),
            ("10.92.0.1", Kind::Seg6EncapV4, "encap, 2 SIDs, HMAC"),
            ("10.96.0.1", Kind::Seg6L2EncapV4, "l2encap, 3 SIDs"),
            ("10.95.0.1", Kind::Seg6L2EncapV4, "l2encap.red, 1 SID"),
            ("10.91.0.1", Kind::Seg6L2EncapV4, "l2encap.red, 1 SID, HMAC"),
        ] {
            // The inner TTL is not looked at (Linux encapsulates before IPv4 forwarding would): 1 and 0 go
            // too. Fragments and DF are carried as they are.
            for (tos, ttl, frag, n) in [
                (0xb8u8, 64u8, 0u16, 16usize),
                (0, 2, 0x4000, 0),
                (0xff, 1, 0x2000, 700),
                (3, 0, 0x00b9, 333),
                (0, 255, 0x20b9, 8),
            ] {
                let what = format!(
                    "IPv4 {what}, seg6_flowlabel {fl}, TTL {ttl}, frag {frag:#06x}, {n} bytes"
                );
                forwarded(&mut b, &what, &frame4(dst, tos, ttl, frag, &[], n), kind);
            }
        }
        let mut padded = frame4("10.99.0.1", 0, 64, 0, &[], 0);
        padded.extend([0u8; 26]);
        forwarded(
            &mut b,
            "IPv4 encap, padded frame",
            &padded,
            Kind::Seg6EncapV4,
        );
        let mut padded = frame4("10.96.0.1", 0, 64, 0, &[], 0);
        padded.extend([0u8; 26]);
        forwarded(
            &mut b,
            "IPv4 l2encap, padded frame",
            &padded,
            Kind::Seg6L2EncapV4,
        );
    }
}

#[test]
fn l2_and_ipv4_encap_boundaries_and_the_slow_path() {
    let Some(mut b) = bench_of(&encap_conf(0, 2), Sizes::default()) else {
        return;
    };
    // r2's hop_limit 2: the outer hop limit of IPv4 packets leaving by it is 1.
    forwarded(
        &mut b,
        "IPv4 encap out of r2, hop_limit 2",
        &frame4("10.93.0.1", 0, 64, 0, &[], 16),
        Kind::Seg6EncapV4,
    );
    // MTU (r1: 1400). l2encap with 3 SIDs adds 14 + 40 + 56 bytes (the received Ethernet header counts): an IPv6
    // packet of 1290 bytes exactly fits.
    forwarded(
        &mut b,
        "l2encap 3 SIDs, exactly the MTU",
        &frame("fd00:a0::1", 64, 0, 1290 - 40),
        Kind::Seg6L2Encap,
    );
    slow(
        &mut b,
        "l2encap 3 SIDs, MTU + 1",
        &frame("fd00:a0::1", 64, 0, 1290 - 40 + 1),
        Why::Mtu,
    );
    // IPv4 encap with 3 SIDs adds 96 bytes: 1304 bytes of IPv4 packet exactly fit; l2encap 110.
    forwarded(
        &mut b,
        "IPv4 encap 3 SIDs, exactly the MTU",
        &frame4("10.99.0.1", 0, 64, 0x4000, &[], 1304 - 20),
        Kind::Seg6EncapV4,
    );
    slow(
        &mut b,
        "IPv4 encap 3 SIDs, MTU + 1",
        &frame4("10.99.0.1", 0, 64, 0x4000, &[], 1304 - 20 + 1),
        Why::Mtu,
    );
    forwarded(
        &mut b,
        "IPv4 l2encap 3 SIDs, exactly the MTU",
        &frame4("10.96.0.1", 0, 64, 0, &[], 1290 - 20),
        Kind::Seg6L2EncapV4,
    );
    slow(
        &mut b,
        "IPv4 l2encap 3 SIDs, MTU + 1",
        &frame4("10.96.0.1", 0, 64, 0, &[], 1290 - 20 + 1),
        Why::Mtu,
    );
    // Hop limit of an IPv6 packet: ≤ 1 to the worker (Time Exceeded).
    for h in [0u8, 1] {
        slow(
            &mut b,
            "l2encap, hop limit ≤ 1",
            &frame("fd00:a0::1", h, 0, 16),
            Why::HopLimit,
        );
    }
    // Headroom: l2encap with 9 SIDs adds 206 bytes, IPv4 encap with 10 SIDs 208: forwarded with the port's
    // headroom exactly that, to the worker one byte short.
    let snap = b.router.snapshot();
    for (f, growth, kind) in [
        (frame("fd00:ac::1", 64, 0, 16), 206, Kind::Seg6L2Encap),
        (
            frame4("10.94.0.1", 0, 64, 0, &[], 16),
            208,
            Kind::Seg6EncapV4,
        ),
    ] {
        b.tier
            .set_port(LO, lwt6_xdp::port_entry(&snap.links[0], growth))
            .unwrap();
        forwarded(&mut b, &format!("headroom exactly {growth}"), &f, kind);
        b.tier
            .set_port(LO, lwt6_xdp::port_entry(&snap.links[0], growth - 1))
            .unwrap();
        slow(
            &mut b,
            &format!("headroom {} (one byte short)", growth - 1),
            &f,
            Why::Headroom,
        );
    }
    // l2encap with 10 SIDs adds 222 bytes, IPv4 encap with 11 SIDs 224: more than the 216 the helper lets a
    // test run prepend, also with the port claiming 256.
    for (f, what) in [
        (frame("fd00:ad::1", 64, 0, 16), "l2encap 10 SIDs"),
        (frame4("10.90.0.1", 0, 64, 0, &[], 16), "IPv4 encap 11 SIDs"),
    ] {
        b.tier
            .set_port(LO, lwt6_xdp::port_entry(&snap.links[0], HEADROOM))
            .unwrap();
        slow(&mut b, what, &f, Why::Headroom);
        b.tier
            .set_port(LO, lwt6_xdp::port_entry(&snap.links[0], 256))
            .unwrap();
        slow(
            &mut b,
            &format!("{what}, headroom claimed 256"),
            &f,
            Why::Headroom,
        );
    }
    b.tier
        .set_port(LO, lwt6_xdp::port_entry(&snap.links[0], HEADROOM))
        .unwrap();

    // IPv4 frames the driver leaves alone.
    let nop = [1u8, 1, 1, 1];
    slow(
        &mut b,
        "IPv4 with options",
        &frame4("10.99.0.1", 0, 64, 0, &nop, 16),
        Why::Ipv4Options,
    );
    let mut bad = frame4("10.99.0.1", 0, 64, 0, &[], 16);
    bad[14 + 10] ^= 1;
    slow(&mut b, "IPv4, wrong checksum", &bad, Why::Ipv4Checksum);
    slow(
        &mut b,
        "IPv4 to a local address",
        &frame4("10.1.0.2", 0, 64, 0, &[], 16),
        Why::Local,
    );
    slow(
        &mut b,
        "IPv4 to a local address inside a tunnel prefix",
        &frame4("10.99.0.9", 0, 64, 0, &[], 16),
        Why::Local,
    );
    slow(
        &mut b,
        "IPv4, no route",
        &frame4("192.0.2.1", 0, 64, 0, &[], 16),
        Why::NoRoute,
    );
    slow(
        &mut b,
        "IPv4 plain forwarding",
        &frame4("10.88.0.1", 0, 64, 0, &[], 16),
        Why::Kind,
    );
    slow(
        &mut b,
        "IPv4, a plain route inside a tunnel prefix",
        &frame4("10.99.0.200", 0, 64, 0, &[], 16),
        Why::Kind,
    );
    slow(
        &mut b,
        "IPv4 encap, no route to the first SID",
        &frame4("10.89.0.1", 0, 64, 0, &[], 16),
        Why::NoPlan,
    );
    slow(
        &mut b,
        "l2encap, no route to the first SID",
        &frame("fd00:b1::1", 64, 0, 16),
        Why::NoPlan,
    );
    for dst in ["224.0.0.5", "255.255.255.255", "127.0.0.1", "0.1.2.3"] {
        slow(
            &mut b,
            &format!("IPv4 to {dst}"),
            &frame4(dst, 0, 64, 0, &[], 16),
            Why::Addr,
        );
    }
    let mut src = frame4("10.99.0.1", 0, 64, 0, &[], 16);
    src[14 + 12] = 127;
    src[14 + 10..14 + 12].fill(0);
    let c = ipv4_checksum(&src[14..34]);
    src[14 + 10..14 + 12].copy_from_slice(&c.to_be_bytes());
    slow(&mut b, "IPv4 from 127.0.0.1", &src, Why::Addr);
    let f = frame4("10.99.0.1", 0, 64, 0, &[], 16);
    slow(&mut b, "IPv4, cut", &f[..f.len() - 1], Why::Short);
    slow(&mut b, "IPv4, header cut", &f[..14 + 19], Why::Short);
    let mut ihl4 = f.clone();
    ihl4[14] = 0x44;
    slow(&mut b, "IPv4, IHL 4", &ihl4, Why::Short);
    let mut other_mac = f.clone();
    other_mac[5] = 9;
    slow(&mut b, "IPv4, another MAC", &other_mac, Why::NotForUs);
    slow(
        &mut b,
        "IPv4, over the port's MTU",
        &frame4("10.99.0.1", 0, 64, 0, &[], 1500 - 20 + 5),
        Why::FrameLen,
    );
}

#[test]
fn an_outer_hop_limit_of_one_leaves_ipv4_to_the_worker() {
    // r2's hop_limit 1: the worker drops every IPv4 packet it would encapsulate out of r2 (the outer hop limit
    // would be 0); so the driver leaves them to it.
    let Some(mut b) = bench_of(&encap_conf(0, 1), Sizes::default()) else {
        return;
    };
    let f = frame4("10.93.0.1", 0, 64, 0, &[], 16);
    assert!(userspace(&mut b, &f).is_empty(), "the worker drops it");
    slow(
        &mut b,
        "IPv4 encap out of r2, hop_limit 1",
        &f,
        Why::HopLimit,
    );
    forwarded(
        &mut b,
        "IPv6 l2encap out of r2, hop_limit 1 (the inner hop limit is the outer one)",
        &frame("fd00:b0::1", 64, 0, 16),
        Kind::Seg6L2Encap,
    );
}

#[test]
fn the_flow_label_hash_leaves_l2_and_ipv4_encap_to_the_worker() {
    let Some(mut b) = bench_of(&encap_conf(1, 64), Sizes::default()) else {
        return;
    };
    slow(
        &mut b,
        "l2encap, seg6_flowlabel 1",
        &frame("fd00:a0::1", 64, 0, 16),
        Why::NoPlan,
    );
    slow(
        &mut b,
        "IPv4 encap, seg6_flowlabel 1",
        &frame4("10.99.0.1", 0, 64, 0, &[], 16),
        Why::NoPlan,
    );
}

#[test]
fn random_l2_and_ipv4_frames_agree_with_userspace() {
    use proptest::prelude::*;
    use proptest::test_runner::TestCaseError;
    let Some(b) = bench_of(&encap_conf(0, 64), Sizes::default()) else {
        return;
    };
    let b = std::cell::RefCell::new(b);
    let sent = std::cell::Cell::new(0u32);
    let cases = 2000;
    let dsts = [
        "fd00:a0::1",
        "fd00:a9::1",
        "fd00:ab::1",
        "fd00:ac::1",
        "fd00:ad::1",
        "fd00:ae::1",
        "fd00:af::1",
        "fd00:b0::1",
        "fd00:b1::1",
        "10.99.0.1",
        "10.98.0.1",
        "10.97.0.1",
        "10.96.0.1",
        "10.95.0.1",
        "10.94.0.1",
        "10.93.0.1",
        "10.92.0.1",
        "10.91.0.1",
        "10.90.0.1",
        "10.89.0.1",
        "10.88.0.1",
        "10.99.0.200",
        "10.99.0.9",
        "10.1.0.2",
        "192.0.2.1",
    ];
    let strategy = (
        0..dsts.len(),
        any::<u8>(),
        any::<u32>(),
        prop_oneof![0usize..64, 0usize..1500],
        prop::collection::vec((0usize..60, any::<u8>()), 0..3),
        0usize..40,
        any::<u16>(),
        prop_oneof![8 => Just(0usize), 1 => Just(4), 1 => Just(8)],
    );
    let mut runner = runner(cases);
    runner
        .run(&strategy, |(i, hlim, fw, n, flips, cut, frag, opts)| {
            let mut f = if dsts[i].contains(':') {
                frame(dsts[i], hlim, fw & 0x0fff_ffff, n)
            } else {
                let options = vec![1u8; opts];
                frame4(dsts[i], fw as u8, hlim, frag, &options, n)
            };
            mangle(&mut f, 0, flips, cut, 4);
            let driver = agrees(&mut b.borrow_mut(), &f).map_err(TestCaseError::fail)?;
            sent.set(sent.get() + u32::from(driver));
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
    // Ten of the 25 destinations go to the worker whatever the frame, and many frames are over r1's MTU.
    assert!(
        sent.get() * 4 > cases,
        "only {} of {cases} frames forwarded in the driver",
        sent.get()
    );
    eprintln!(
        "{} of {cases} random l2encap and IPv4 frames forwarded in the driver",
        sent.get()
    );
}
