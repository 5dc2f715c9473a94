//! The fast path (precomputed per-route plans) must be invisible: for any frame, the router with the fast path
//! on sends exactly the bytes, on exactly the interfaces, and counts exactly what the general path does.

use lwt6_config as config;
use lwt6_dataplane::router::Router;
use proptest::prelude::*;

const CONF: &str = "
link add r0 address 02:00:00:00:01:02
link add r1 address 02:00:00:00:02:01 mtu 1400
addr add fd00:1::2/64 dev r0
addr add fd00:2::1/64 dev r1
addr add fd00:92::9/128 dev r0
neigh add fd00:1::1 lladdr 02:00:00:00:01:01 dev r0
neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1
-6 route add fc00::/16 via fd00:2::2 dev r1
-6 route add 2001:db8::/32 via fd00:2::2 dev r1
sr hmac set 42 sha256 secret mysecret
-6 route add fd00:92::/64 encap seg6 mode encap segs fc00::a,fc00::b,fc00::c dev r1
-6 route add fd00:93::/64 encap seg6 mode encap.red segs fc00::a,fc00::b,fc00::c dev r1
-6 route add fd00:94::/64 encap seg6 mode encap.red segs fc00::a dev r1
-6 route add fd00:95::/64 encap seg6 mode encap segs fc00::a,fc00::b hmac 42 dev r1
-6 route add fd00:96::/64 encap seg6 mode inline segs fc00::a dev r1
-6 route add fd00:97::/64 encap seg6 mode inline segs fc00::a,fc00::b hmac 42 dev r1
-6 route add fd00:98::/64 encap rpl segs fc00::a,fc00::1:b,fd00:98::3 dev r1
sysctl net.ipv6.ioam6_id=0x111111
sysctl net.ipv6.ioam6_id_wide=0x22222222222222
sysctl net.ipv6.conf.r0.ioam6_id=7
sysctl net.ipv6.conf.r0.ioam6_id_wide=0x70000007
sysctl net.ipv6.conf.r1.ioam6_id=9
sysctl net.ipv6.conf.r0.ioam6_enabled=1
ioam namespace add 123 data 0xdeadbeef wide 0xcafecafecafecafe
-6 route add fd00:a0::/64 encap ioam6 mode inline trace prealloc type 0xf1f000 ns 123 size 96 trace prealloc type 0xc00000 ns 123 size 12 via fd00:2::2 dev r1
-6 route add fd00:a1::/64 encap ioam6 mode encap tundst fc00::1 trace prealloc type 0xc00000 ns 123 size 28 trace prealloc type 0x800000 ns 9 size 8 trace prealloc type 0x800000 ns 123 size 4 dev r1
-6 route add fd00:a2::/64 encap ioam6 mode auto tundst fc00::2 trace prealloc type 0x800000 ns 9 size 8 dev r1
-6 route add fd00:a3::/64 encap ioam6 mode inline freq 1/2 trace prealloc type 0x800000 ns 123 size 8 via fd00:2::2 dev r1
-6 route add fc00:5::/32 encap rpl segs fc00:5::a,fc00:6::b dev r1
-6 route add fc00:5::a/128 via fd00:2::2 dev r1
";

fn router(fast: bool, flowlabel: i32) -> Router {
    router_with(fast, flowlabel, "")
}

/// The router of `CONF` and `extra` lines.
fn router_with(fast: bool, flowlabel: i32, extra: &str) -> Router {
    let mut r = Router::build(
        &config::parse(&format!(
            "{CONF}sysctl net.ipv6.seg6_flowlabel={flowlabel}\n{extra}"
        ))
        .unwrap(),
    )
    .unwrap();
    r.worker.fast_path = fast;
    r
}

/// Base frames: to each route kind, plus a local address inside a tunnel prefix, and an ICMPv6 error.
fn bases() -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    for (dst, hlim, tc_fl) in [
        ("fd00:92::1", 64u8, 0x0b81_2345u32),
        ("fd00:93::1", 2, 0),
        ("fd00:94::1", 64, 0x0000_0001),
        ("fd00:95::1", 64, 0),
        ("fd00:96::1", 64, 0),
        ("2001:db8::7", 30, 0x0fff_ffff),
        ("fd00:92::9", 64, 0),
        ("fd00:97::1", 64, 0),
        ("fd00:98::1", 9, 0x0012_3456),
        ("fd00:98::3", 64, 0),
        ("fd00:a0::1", 64, 0x0aa0_0001),
        ("fd00:a1::1", 33, 0x0000_0007),
        ("fd00:a2::1", 64, 0),
        ("fd00:a3::1", 64, 0),
    ] {
        let mut f = vec![2, 0, 0, 0, 1, 2, 2, 0, 0, 0, 1, 1, 0x86, 0xdd];
        f.extend((0x6000_0000 | tc_fl).to_be_bytes());
        f.extend(16u16.to_be_bytes());
        f.extend([17, hlim]);
        f.extend("fd00:1::1".parse::<std::net::Ipv6Addr>().unwrap().octets());
        f.extend(dst.parse::<std::net::Ipv6Addr>().unwrap().octets());
        f.extend([
            0x9c, 0x40, 0x0d, 0x05, 0, 16, 0, 0, b'f', b'a', b's', b't', b'p', b'a', b't', b'h',
        ]);
        v.push(f);
    }
    v
}

/// What one run produced: frames sent (device, bytes), the counters as text, packets taken by the fast path.
type Run = (Vec<(usize, Vec<u8>)>, String, u64);

fn both(frames: &[Vec<u8>], flowlabel: i32) -> [Run; 2] {
    both_with(frames, flowlabel, "")
}

/// [`both`] with `extra` configuration lines.
fn both_with(frames: &[Vec<u8>], flowlabel: i32, extra: &str) -> [Run; 2] {
    [true, false].map(|fast| {
        let mut r = router_with(fast, flowlabel, extra);
        let mut out = Vec::new();
        r.process_batch(
            // Receive times with seconds and microseconds, different per frame (IOAM timestamps are patched per
            // packet on the fast path).
            frames.iter().enumerate().map(|(i, f)| {
                (
                    0usize,
                    1_700_000_000_123_456_789 + i as u64 * 1_000_003_001,
                    f.as_slice(),
                )
            }),
            &mut |d, _, b| out.push((d, b.to_vec())),
        );
        let s = &r.worker.stats;
        assert!(s.balanced());
        let counters = format!(
            "rx {} tx {} icmp {} drops {:?} enc {:?} reallocs {} ioam transit {} {:?}",
            s.rx,
            s.tx,
            s.icmp_tx,
            s.drops,
            s.encapsulated,
            s.reallocs,
            s.ioam_transit_filled,
            s.ioam
        );
        (out, counters, s.fast_path)
    })
}

#[test]
fn base_frames_take_the_fast_path_and_match() {
    for fl in [-1, 0, 1] {
        let [fast, slow] = both(&bases(), fl);
        assert_eq!(
            (&fast.0, &fast.1),
            (&slow.0, &slow.1),
            "seg6_flowlabel {fl}"
        );
        // 13 sent (the frame to our own fd00:92::9 is a local delivery). By plan: the 4 seg6 encap routes unless
        // seg6_flowlabel = 1 (the hash is left to the general path), seg6 inline without HMAC, the gateway
        // route, the 2 RPL frames, the 3 ioam6 routes inserting on every packet, the ioam6 route with freq 1/2
        // (its one packet here is traced); not seg6 inline with HMAC.
        assert_eq!(fast.0.len(), 13, "{}", fast.1);
        assert_eq!(fast.2, if fl == 1 { 8 } else { 12 }, "{}", fast.1);
        assert_eq!(slow.2, 0);
    }
}

#[test]
fn both_template_copies_give_the_same_frames() {
    let run = |wide: bool| {
        let mut r = router(true, 0);
        if !wide {
            r.worker.template_copy = None;
        }
        let mut out = Vec::new();
        r.process_batch(
            bases().iter().map(|f| (0usize, 7u64, f.as_slice())),
            &mut |d, _, b| out.push((d, b.to_vec())),
        );
        (out, r.worker.stats.fast_path)
    };
    let (wide, memcpy) = (run(true), run(false));
    assert_eq!(wide.1, 12, "fast-path packets");
    assert_eq!(wide, memcpy);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn mutated_frames_match(i in 0usize..14, flips in prop::collection::vec((0usize..94, any::<u8>()), 0..4),
                            cut in 0usize..100, grow in 0usize..1500, fl in -1i32..=1) {
        let mut f = bases()[i].clone();
        for (at, v) in flips {
            let n = f.len();
            f[at % n] = v;
        }
        if grow > 1300 {
            // a large packet: over the 1400-byte egress MTU once encapsulated
            f.extend(std::iter::repeat_n(0u8, grow));
            let plen = (f.len() - 54) as u16;
            f[18..20].copy_from_slice(&plen.to_be_bytes());
        }
        if cut < f.len() && cut > 40 {
            f.truncate(cut);
        }
        let [fast, slow] = both(&[f], fl);
        prop_assert_eq!((fast.0, fast.1), (slow.0, slow.1));
    }
}

/// A route tracing 1 of every 2 packets (freq 1/2): the fast path traces the same packets as the general path and
/// forwards the others untouched along the route, also between packets the fast path cannot take (a hop limit of
/// 1, a packet over the MTU once traced), whose count the general path keeps.
#[test]
fn sampled_route_matches() {
    let base = bases().pop().expect("the fd00:a3 frame is the last");
    let mut frames = Vec::new();
    for i in 0..12usize {
        let mut f = base.clone();
        f[21] = match i {
            5 => 1,
            _ => 64 - i as u8,
        };
        if i == 8 {
            // Over the 1400-byte MTU of r1 only with the trace added (1354 + 40 + 16 > 1400).
            f.extend(std::iter::repeat_n(0u8, 1354 - 16));
            let plen = (f.len() - 54) as u16;
            f[18..20].copy_from_slice(&plen.to_be_bytes());
        }
        frames.push(f);
    }
    let [fast, slow] = both(&frames, 0);
    assert_eq!((&fast.0, &fast.1), (&slow.0, &slow.1));
    // Traced: the packets at an even place in the count (every packet counts but the one dropped for its hop
    // limit before the route's tunnel was reached).
    let traced = fast.0.iter().filter(|(_, f)| f[14 + 6] == 0).count();
    assert!(traced >= 5, "{traced} traced: {}", fast.1);
    assert!(fast.2 >= 9, "fast path took {} of 12", fast.2);
}

/// RPL on a route whose destinations do not all compress alike against the first segment (it lies inside the
/// route's prefix: CmprE depends on the destination, so the header is written per packet) and on one whose do
/// (fd00:98::/64: the whole header is in the template): the fast path gives the general path's frames for
/// destinations with every CmprE.
#[test]
fn rpl_per_packet_and_fixed_headers_match() {
    let base = bases()[8].clone();
    assert_eq!(
        base[38..42],
        [0xfd, 0x00, 0x00, 0x98],
        "a frame to fd00:98::1"
    );
    let mut frames = Vec::new();
    for (i, dst) in [
        "fc00:5::a:1",
        "fc00:5::1",
        "fc00:5:1::1",
        "fc00:5:ff00::",
        "fd00:98::1",
        "fd00:98::ffff:1",
    ]
    .iter()
    .enumerate()
    {
        let mut f = base.clone();
        f[38..54].copy_from_slice(&dst.parse::<std::net::Ipv6Addr>().unwrap().octets());
        f[21] = 60 - i as u8;
        frames.push(f);
    }
    let [fast, slow] = both(&frames, 0);
    assert_eq!((&fast.0, &fast.1), (&slow.0, &slow.1));
    assert_eq!(fast.0.len(), 6, "{}", fast.1);
    assert_eq!(fast.2, 6, "every frame on the fast path: {}", fast.1);
}

/// Where the fast path puts a packet: the outgoing frame starts on a 64-byte cache line and lies within one
/// 4 KiB page, for every tunnel size of the sweep (the rx buffer is page-aligned; the start is rounded down to a
/// line). Without either, the rate depends on the size modulo 64 and on where the allocator put the buffer.
#[test]
fn fast_path_output_starts_on_a_cache_line_and_stays_in_one_page() {
    use lwt6_lab::bench::{self, Family, Options, Strategy};
    let opts = Options::default();
    let frames = bench::frames(opts.frame_len);
    for family in Family::all() {
        for size in family.default_sizes() {
            let mut r = bench::router(family, size, Strategy::Lwt6, &opts).unwrap();
            let mut seen = None;
            r.process_batch([(0, 0, frames[0].as_slice())], &mut |_, _, b| {
                seen = Some((b.as_ptr() as usize, b.len()))
            });
            let (at, len) = seen.unwrap_or_else(|| panic!("{} {size}: not sent", family.name()));
            if r.worker.stats.fast_path == 0 {
                continue; // l2encap: general path
            }
            assert_eq!(at % 64, 0, "{} {size}: starts at {at:#x}", family.name());
            assert_eq!(
                at / 4096,
                (at + len - 1) / 4096,
                "{} {size}: straddles a page",
                family.name()
            );
        }
    }
}

/// An IPv6 packet from fd00:1::1 to `dst` (hop limit 40) with the Hop-by-Hop header `hbh` (next header UDP) and a
/// 16-byte UDP datagram, in a frame to r0.
fn with_hbh(dst: &str, hbh: &[u8]) -> Vec<u8> {
    let mut f = vec![
        2, 0, 0, 0, 1, 2, 2, 0, 0, 0, 1, 1, 0x86, 0xdd, 0x60, 0, 0, 0,
    ];
    f.extend(((hbh.len() + 16) as u16).to_be_bytes());
    f.extend([0, 40]);
    f.extend("fd00:1::1".parse::<std::net::Ipv6Addr>().unwrap().octets());
    f.extend(dst.parse::<std::net::Ipv6Addr>().unwrap().octets());
    f.extend(hbh);
    f.extend([
        0x9c, 0x40, 0x0d, 0x05, 0, 16, 0, 0, b't', b'r', b'a', b'n', b's', b'i', b't', b'!',
    ]);
    f
}

/// A pre-allocated trace option (RFC 9197 §4.4): namespace, trace type, NodeLen, RemainingLen, then 4 * `room`
/// bytes of data (the last `filled` of them not zero, as an earlier node's).
fn trace_opt(ns: u16, ty: u32, node_len: u8, remlen: u8, room: u8) -> Vec<u8> {
    let mut o = vec![0x31, 10 + 4 * room, 0, 0];
    o.extend(ns.to_be_bytes());
    o.extend([node_len << 3, remlen]);
    o.extend(&ty.to_be_bytes()[1..]);
    o.push(0);
    o.extend((0..4 * room).map(|i| if i >= 4 * remlen { 0x5a } else { 0 }));
    o
}

/// Hop-by-Hop headers as lwt6 and Linux insert them (PadN(0), traces, PadN(2) or nothing), and some that are not.
fn transit_bases() -> Vec<Vec<u8>> {
    let hbh = |opts: &[Vec<u8>]| {
        let mut h = vec![17, 0, 1, 0];
        for o in opts {
            h.extend(o);
        }
        if h.len() % 8 == 4 {
            h.extend([1, 2, 0, 0]);
        }
        h[1] = (h.len() / 8 - 1) as u8;
        h
    };
    let gw = "2001:db8::7";
    vec![
        // One trace with room (bits 0, 1, 5: NodeLen 3), one node there already: planned.
        with_hbh(gw, &hbh(&[trace_opt(123, 0xc4_0000, 3, 3, 6)])),
        // Two traces, the second of a namespace not configured here, and PadN(2): planned.
        with_hbh(
            gw,
            &hbh(&[
                trace_opt(123, 0x80_0000, 1, 2, 2),
                trace_opt(124, 0x80_0000, 1, 2, 2),
            ]),
        ),
        // No room: the Overflow flag (planned).
        with_hbh(gw, &hbh(&[trace_opt(123, 0xc4_0000, 3, 2, 2)])),
        // NodeLen not the trace type's: dropped by the general path.
        with_hbh(gw, &hbh(&[trace_opt(123, 0xc4_0000, 2, 3, 3)])),
        // A Router Alert first: not the planned layout.
        with_hbh(gw, &{
            let mut h = vec![17, 0, 5, 2, 0, 0, 1, 0];
            h.extend(trace_opt(123, 0x80_0000, 1, 2, 2));
            h[1] = 3;
            h.extend([1, 2, 0, 0]);
            h
        }),
        // A local address, and a route that inserts IOAM (Linux skips the insertion): the general path.
        with_hbh("fd00:92::9", &hbh(&[trace_opt(123, 0x80_0000, 1, 2, 2)])),
        with_hbh("fd00:a0::1", &hbh(&[trace_opt(123, 0x80_0000, 1, 2, 2)])),
        // Nine traces: more options than Linux accepts, dropped by the general path.
        with_hbh(gw, &hbh(&vec![trace_opt(123, 0x80_0000, 1, 1, 1); 9])),
    ]
}

/// IOAM transit on the fast path (`IoamNode::transit_planned`) gives the general path's bytes and counters, with
/// and without domains (whose roles send some packets to the general path).
#[test]
fn transit_frames_match() {
    let [fast, slow] = both(&transit_bases(), 0);
    assert_eq!((&fast.0, &fast.1), (&slow.0, &slow.1));
    // Sent: the three planned, the one behind a Router Alert, the one whose route would insert.
    assert_eq!(fast.0.len(), 5, "{}", fast.1);
    assert_eq!(fast.2, 3, "the first three frames are planned: {}", fast.1);
    // The first frame: this node's data (hop limit 39, node id, ingress 7, egress 9, ns data) before the earlier
    // node's, RemainingLen 3 -> 0.
    let f = &fast.0[0].1;
    assert_eq!(f[14 + 40 + 11], 0, "RemainingLen");
    assert_eq!(
        f[14 + 40 + 16..14 + 40 + 28],
        [39, 0x11, 0x11, 0x11, 0, 7, 0, 9, 0xde, 0xad, 0xbe, 0xef]
    );
    for (extra, planned) in [
        // r1 is an egress: the traces of 123 may leave, the fast path fills them.
        ("ioam domain add d namespace 123 ingress r0 egress r1\n", 3),
        // r1 is not: they are removed (and exported) by the general path.
        ("ioam domain add d namespace 123 ingress r0\n", 0),
        // r0 is not an ingress: foreign, dropped by the general path.
        ("ioam domain add d namespace 123 egress r1\n", 0),
        // A trace larger than its domain allows (the second frame's 8 bytes of namespace 124): the general path.
        (
            "ioam namespace add 124\nioam domain add d namespace 124 ingress r0 egress r1 maxsize 4 oversize strip\n",
            2,
        ),
    ] {
        let [fast, slow] = both_with(&transit_bases(), 0, extra);
        assert_eq!((&fast.0, &fast.1), (&slow.0, &slow.1), "{extra}");
        assert_eq!(fast.2, planned, "{extra}: {}", fast.1);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    #[test]
    fn mutated_transit_frames_match(i in 0usize..8, flips in prop::collection::vec((54usize..140, any::<u8>()), 1..4)) {
        let mut f = transit_bases()[i].clone();
        for (at, v) in flips {
            let n = f.len();
            f[at % n] = v;
        }
        let [fast, slow] = both(&[f], 0);
        prop_assert_eq!((fast.0, fast.1), (slow.0, slow.1));
    }
}
