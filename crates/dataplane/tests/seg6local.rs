//! seg6local behaviours on the general path, against frames assembled here by hand from the RFCs (RFC 8200 §3
//! IPv6 header, RFC 8754 §2 SRH, RFC 8986 §4 behaviours and §4.16 flavours, RFC 9800 NEXT-C-SID): each expected
//! frame is written field by field from the RFC's pseudo-code, never taken from lwt6's output. The kernel
//! differential tests (tests/kernel/test_seg6local.py) compare the behaviours Linux has with Linux itself.

use lwt6_config as config;
use lwt6_dataplane::snapshot::{Change, Snapshot};
use lwt6_dataplane::stats::DropReason;
use lwt6_dataplane::tunnel::seg6local::BEHAVIOURS;
use lwt6_dataplane::worker::Worker;
use std::net::Ipv6Addr;

const CONF: &str = "
link add r0 address 02:00:00:00:01:02
link add r1 address 02:00:00:00:02:01
addr add fd00:1::2/64 dev r0
addr add fd00:2::1/64 dev r1
neigh add fd00:1::1 lladdr 02:00:00:00:01:01 dev r0
neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1
neigh add fd00:2::3 lladdr 02:00:00:00:02:03 dev r1
-6 route add fc00::/16 via fd00:2::2 dev r1
-6 route add table 100 fc99::/16 via fd00:2::3 dev r1
-6 route add fc00:1::e/128 encap seg6local action End count dev r0
-6 route add fc00:1::f/128 encap seg6local action End flavors psp dev r0
-6 route add fc00:1::a/128 encap seg6local action End flavors usd count dev r0
-6 route add fc00:1::b/128 encap seg6local action End flavors usp dev r0
-6 route add fc00:1:e0::/48 encap seg6local action End flavors next-csid dev r0
-6 route add fc00:1::10/128 encap seg6local action End.X nh6 fd00:2::3 flavors psp dev r1
-6 route add fc00:1::11/128 encap seg6local action End.T table 100 dev r0
-6 route add fc00:1::d6/128 encap seg6local action End.DX6 nh6 fd00:2::3 dev r1
-6 route add fc00:1::bf/128 encap seg6local action End.B6.Encaps.Red srh segs fc00::b,fc00::c dev r0
-6 route add fc00:2::/32 encap seg6local action End.X nh6 fd00:2::3 flavors next-csid lblen 32 nflen 16 dev r1
-6 route add fc00:1::12/128 encap seg6local action End.T table 100 flavors psp,usd dev r0
";

const SRC: &str = "fd00:1::1";
/// The Ethernet header of a frame received on r0, and of one sent to fd00:2::2 / fd00:2::3 on r1.
const RX: [u8; 14] = [2, 0, 0, 0, 1, 2, 2, 0, 0, 0, 1, 1, 0x86, 0xdd];
const TX2: [u8; 14] = [2, 0, 0, 0, 2, 2, 2, 0, 0, 0, 2, 1, 0x86, 0xdd];
const TX3: [u8; 14] = [2, 0, 0, 0, 2, 3, 2, 0, 0, 0, 2, 1, 0x86, 0xdd];

fn a(s: &str) -> [u8; 16] {
    s.parse::<Ipv6Addr>().unwrap().octets()
}

/// RFC 8200 §3: version 6, traffic class `tc`, flow label `fl`, payload length, next header, hop limit, addresses.
fn ip6(tc: u8, fl: u32, plen: usize, nh: u8, hlim: u8, src: &str, dst: &str) -> Vec<u8> {
    let first = (6u32 << 28) | (u32::from(tc) << 20) | fl;
    let mut v = first.to_be_bytes().to_vec();
    v.extend((plen as u16).to_be_bytes());
    v.extend([nh, hlim]);
    v.extend(a(src));
    v.extend(a(dst));
    v
}

/// RFC 8754 §2: next header, Hdr Ext Len 2n, Routing Type 4, Segments Left, Last Entry n-1, flags 0, tag 0,
/// Segment List[0..n] (`segs` in that order).
fn srh(nh: u8, sl: u8, segs: &[&str]) -> Vec<u8> {
    let n = segs.len();
    let mut v = vec![nh, (2 * n) as u8, 4, sl, (n - 1) as u8, 0, 0, 0];
    for s in segs {
        v.extend(a(s));
    }
    v
}

/// 13 bytes of UDP (ports 1000 -> 2000, length 13, checksum 0, "HELLO").
fn udp() -> Vec<u8> {
    let mut v = vec![0x03, 0xe8, 0x07, 0xd0, 0, 13, 0, 0];
    v.extend(b"HELLO");
    v
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

struct Run {
    out: Vec<(usize, Vec<u8>)>,
    w: Worker,
    snap: Snapshot,
}

fn run_on(snap: Snapshot, frames: &[Vec<u8>]) -> Run {
    let mut w = Worker::new(&snap);
    w.fast_path = true;
    let mut out = Vec::new();
    w.process_batch(
        &snap,
        frames.iter().map(|f| (0usize, 1u64, f.as_slice())),
        &mut |d, _, b| out.push((d, b.to_vec())),
    );
    assert!(w.stats.balanced());
    Run { out, w, snap }
}

fn run(frames: &[Vec<u8>]) -> Run {
    run_on(
        Snapshot::build(&config::parse(CONF).unwrap()).unwrap(),
        frames,
    )
}

/// The one frame out on r1.
fn one(frame: Vec<u8>) -> Vec<u8> {
    let r = run(&[frame]);
    assert_eq!(r.out.len(), 1, "{:?}", r.w.stats);
    assert_eq!(r.out[0].0, 1);
    r.out[0].1.clone()
}

fn dropped(frame: Vec<u8>) -> DropReason {
    let r = run(&[frame]);
    assert!(r.out.is_empty());
    r.w.stats.drops.iter().next().unwrap().0
}

#[test]
fn end_advances_the_srh() {
    // RFC 8986 §4.1 S15-S16: SL 2 -> 1, DA := Segment List[1]; forwarding decrements the hop limit.
    let segs = ["fc00::c", "fc00::b", "fc00:1::e"];
    let inp = cat(&[
        &RX,
        &ip6(0, 0, 56 + 13, 43, 64, SRC, "fc00:1::e"),
        &srh(17, 2, &segs),
        &udp(),
    ]);
    let exp = cat(&[
        &TX2,
        &ip6(0, 0, 56 + 13, 43, 63, SRC, "fc00::b"),
        &srh(17, 1, &segs),
        &udp(),
    ]);
    assert_eq!(one(inp), exp);
}

#[test]
fn end_at_the_last_segment_is_a_counted_error() {
    let inp = cat(&[
        &RX,
        &ip6(0, 0, 24 + 13, 43, 64, SRC, "fc00:1::e"),
        &srh(17, 0, &["fc00:1::e"]),
        &udp(),
    ]);
    let ok = cat(&[
        &RX,
        &ip6(0, 0, 40 + 13, 43, 64, SRC, "fc00:1::e"),
        &srh(17, 1, &["fc00::b", "fc00:1::e"]),
        &udp(),
    ]);
    let r = run(&[inp.clone(), ok.clone()]);
    assert_eq!(
        r.w.stats.drops.get(&DropReason::Seg6LocalSegmentsLeft),
        Some(&1)
    );
    // The route's counters: the good packet (its bytes as received, IPv6 header on), one error.
    let tid = r
        .snap
        .tunnels
        .iter()
        .position(|t| t.iproute2() == "encap seg6local action End")
        .expect("the End route without flavours");
    let c = r.w.stats.seg6local[tid];
    assert_eq!((c.packets, c.bytes, c.errors), (1, ok.len() as u64 - 14, 1));
    assert_eq!(dropped(inp), DropReason::Seg6LocalSegmentsLeft);
}

#[test]
fn psp_pops_the_srh_at_the_penultimate_segment() {
    // RFC 8986 §4.16.1: after S16 with SL now 0, the SRH is removed (next header 17 moves to the IPv6 header,
    // payload length shrinks by the SRH's 40 bytes).
    let inp = cat(&[
        &RX,
        &ip6(0, 0, 40 + 13, 43, 64, SRC, "fc00:1::f"),
        &srh(17, 1, &["fc00::b", "fc00:1::f"]),
        &udp(),
    ]);
    let exp = cat(&[&TX2, &ip6(0, 0, 13, 17, 63, SRC, "fc00::b"), &udp()]);
    assert_eq!(one(inp), exp);
    // SL 2: a plain End, the SRH stays.
    let segs = ["fc00::c", "fc00::b", "fc00:1::f"];
    let inp = cat(&[
        &RX,
        &ip6(0, 0, 56 + 13, 43, 64, SRC, "fc00:1::f"),
        &srh(17, 2, &segs),
        &udp(),
    ]);
    let exp = cat(&[
        &TX2,
        &ip6(0, 0, 56 + 13, 43, 63, SRC, "fc00::b"),
        &srh(17, 1, &segs),
        &udp(),
    ]);
    assert_eq!(one(inp), exp);
}

#[test]
fn psp_on_end_x_forwards_to_nh6() {
    // PSP on End.X (RFC 8986 §4.16.1 allows it; Linux does not): SRH popped, frame to fd00:2::3's MAC.
    let inp = cat(&[
        &RX,
        &ip6(0, 0, 40 + 13, 43, 64, SRC, "fc00:1::10"),
        &srh(17, 1, &["fc77::1", "fc00:1::10"]),
        &udp(),
    ]);
    let exp = cat(&[&TX3, &ip6(0, 0, 13, 17, 63, SRC, "fc77::1"), &udp()]);
    assert_eq!(one(inp), exp);
}

#[test]
fn usd_decapsulates_at_the_last_segment() {
    // RFC 8986 §4.16.3: SL 0 and an inner IPv6 packet: the outer header and its extension headers go, the inner
    // packet is looked up and forwarded (its hop limit decremented).
    let inner = cat(&[
        &ip6(3, 0x12345, 13, 17, 50, "fd00:9::1", "fc00::99"),
        &udp(),
    ]);
    let inp = cat(&[
        &RX,
        &ip6(0, 0, 24 + inner.len(), 43, 64, SRC, "fc00:1::a"),
        &srh(41, 0, &["fc00:1::a"]),
        &inner,
    ]);
    let exp = cat(&[
        &TX2,
        &ip6(3, 0x12345, 13, 17, 49, "fd00:9::1", "fc00::99"),
        &udp(),
    ]);
    assert_eq!(one(inp), exp);
    // Without an SRH at all, the same.
    let inp = cat(&[
        &RX,
        &ip6(0, 0, inner.len(), 41, 64, SRC, "fc00:1::a"),
        &inner,
    ]);
    assert_eq!(one(inp), exp);
}

#[test]
fn usp_pops_the_srh_at_the_last_segment_for_this_node() {
    // RFC 8986 §4.16.2: SL 0: the SRH is removed and the next header processed by this node (no host stack).
    let inp = cat(&[
        &RX,
        &ip6(0, 0, 24 + 13, 43, 64, SRC, "fc00:1::b"),
        &srh(17, 0, &["fc00:1::b"]),
        &udp(),
    ]);
    assert_eq!(dropped(inp), DropReason::LocalDelivery);
}

#[test]
fn next_csid_shifts_the_destination() {
    // RFC 9800 §4.1.1 with Linux's defaults (block 32, function 16): fc00:1:e0:b00:: -> fc00:1:b00::.
    let inp = cat(&[&RX, &ip6(0, 0, 13, 17, 64, SRC, "fc00:1:e0:b00::"), &udp()]);
    let exp = cat(&[&TX2, &ip6(0, 0, 13, 17, 63, SRC, "fc00:1:b00::"), &udp()]);
    assert_eq!(one(inp), exp);
}

#[test]
fn next_csid_on_end_x_goes_to_nh6() {
    // RFC 9800 §4.1.1 on End.X: the shifted destination fc00:2:b00:: (no route of its own needed) to nh6.
    let inp = cat(&[&RX, &ip6(0, 0, 13, 17, 64, SRC, "fc00:2:a00:b00::"), &udp()]);
    let exp = cat(&[&TX3, &ip6(0, 0, 13, 17, 63, SRC, "fc00:2:b00::"), &udp()]);
    assert_eq!(one(inp), exp);
}

#[test]
fn psp_and_usd_on_end_t() {
    // PSP at the penultimate segment, then the lookup in table 100 (fc99::/16 via fd00:2::3).
    let inp = cat(&[
        &RX,
        &ip6(0, 0, 40 + 13, 43, 64, SRC, "fc00:1::12"),
        &srh(17, 1, &["fc99::b", "fc00:1::12"]),
        &udp(),
    ]);
    let exp = cat(&[&TX3, &ip6(0, 0, 13, 17, 63, SRC, "fc99::b"), &udp()]);
    assert_eq!(one(inp), exp);
    // USD at the last segment: the inner packet is looked up in table 100 too.
    let inner = cat(&[&ip6(0, 7, 13, 17, 9, "fd00:9::1", "fc99::77"), &udp()]);
    let inp = cat(&[
        &RX,
        &ip6(0, 0, 24 + inner.len(), 43, 64, SRC, "fc00:1::12"),
        &srh(41, 0, &["fc00:1::12"]),
        &inner,
    ]);
    let exp = cat(&[&TX3, &ip6(0, 7, 13, 17, 8, "fd00:9::1", "fc99::77"), &udp()]);
    assert_eq!(one(inp), exp);
}

#[test]
fn end_t_looks_up_in_its_table_only() {
    // fc99::/16 is in table 100: End.T finds it, a packet to it from outside does not (no route).
    let inp = cat(&[
        &RX,
        &ip6(0, 0, 40 + 13, 43, 64, SRC, "fc00:1::11"),
        &srh(17, 1, &["fc99::b", "fc00:1::11"]),
        &udp(),
    ]);
    let exp = cat(&[
        &TX3,
        &ip6(0, 0, 40 + 13, 43, 63, SRC, "fc99::b"),
        &srh(17, 0, &["fc99::b", "fc00:1::11"]),
        &udp(),
    ]);
    assert_eq!(one(inp), exp);
    let direct = cat(&[&RX, &ip6(0, 0, 13, 17, 64, SRC, "fc99::b"), &udp()]);
    let r = run(&[direct]);
    assert_eq!(r.w.stats.drops.get(&DropReason::NoRoute), Some(&1));
}

#[test]
fn end_dx6_forwards_the_inner_packet_to_nh6() {
    // RFC 8986 §4.5: SRH with SL 0, inner IPv6 to nh6; the inner hop limit is decremented (as Linux does).
    let inner = cat(&[
        &ip6(3, 0x12345, 13, 17, 50, "fd00:9::1", "fd00:9::2"),
        &udp(),
    ]);
    let inp = cat(&[
        &RX,
        &ip6(0, 0, 24 + inner.len(), 43, 64, SRC, "fc00:1::d6"),
        &srh(41, 0, &["fc00:1::d6"]),
        &inner,
    ]);
    let exp = cat(&[
        &TX3,
        &ip6(3, 0x12345, 13, 17, 49, "fd00:9::1", "fd00:9::2"),
        &udp(),
    ]);
    assert_eq!(one(inp), exp);
    // SL 1: not the end of the path.
    let inp = cat(&[
        &RX,
        &ip6(0, 0, 40 + inner.len(), 43, 64, SRC, "fc00:1::d6"),
        &srh(41, 1, &["fc00::9", "fc00:1::d6"]),
        &inner,
    ]);
    assert_eq!(dropped(inp), DropReason::Seg6LocalSegmentsLeft);
    // An inner IPv4 packet is not End.DX6's.
    let inp = cat(&[
        &RX,
        &ip6(0, 0, 24 + 13, 43, 64, SRC, "fc00:1::d6"),
        &srh(17, 0, &["fc00:1::d6"]),
        &udp(),
    ]);
    assert_eq!(dropped(inp), DropReason::Seg6LocalNextHeader);
}

#[test]
fn end_b6_encaps_red_pushes_the_reduced_srh() {
    // RFC 8986 §4.15: End (S15-S16 on the received SRH), then H.Encaps.Red with the policy <fc00::b, fc00::c>:
    // outer DA = the first SID, which the SRH omits: Segment List [fc00::c], SL 1, Last Entry 0 (RFC 8986 §5.2).
    // Outer source: the address of the route's device r0; traffic class, flow label and hop limit from the inner
    // header (then forwarding decrements the outer hop limit).
    let inner_in = cat(&[
        &ip6(5, 0xabcde, 40 + 13, 43, 64, SRC, "fc00:1::bf"),
        &srh(17, 1, &["fd00:2::2", "fc00:1::bf"]),
        &udp(),
    ]);
    let inner_out = cat(&[
        &ip6(5, 0xabcde, 40 + 13, 43, 64, SRC, "fd00:2::2"),
        &srh(17, 0, &["fd00:2::2", "fc00:1::bf"]),
        &udp(),
    ]);
    let exp = cat(&[
        &TX2,
        &ip6(
            5,
            0xabcde,
            24 + inner_out.len(),
            43,
            63,
            "fd00:1::2",
            "fc00::b",
        ),
        &srh(41, 1, &["fc00::c"]),
        &inner_out,
    ]);
    assert_eq!(one(cat(&[&RX, &inner_in])), exp);
}

#[test]
fn malformed_srh_at_a_sid_is_a_named_drop() {
    // Segments Left beyond Last Entry + 1 (RFC 8754 §4.3.1.1 would send a Parameter Problem; Linux's
    // seg6local finds no valid SRH and drops).
    let mut s = srh(17, 1, &["fc00::b", "fc00:1::e"]);
    s[3] = 5;
    let inp = cat(&[
        &RX,
        &ip6(0, 0, 40 + 13, 43, 64, SRC, "fc00:1::e"),
        &s,
        &udp(),
    ]);
    assert_eq!(dropped(inp), DropReason::SrhMalformed);
    // No SRH at all.
    let inp = cat(&[&RX, &ip6(0, 0, 13, 17, 64, SRC, "fc00:1::e"), &udp()]);
    assert_eq!(dropped(inp), DropReason::Seg6LocalNoSrh);
}

#[test]
fn route_changes_reach_seg6local_routes() {
    // A seg6local route replaced in place and deleted, as a new build of the changed configuration gives.
    let mut snap = Snapshot::build(&config::parse(CONF).unwrap()).unwrap();
    let line = "-6 route replace fc00:1::e/128 encap seg6local action End.DX6 nh6 fd00:2::3 dev r1";
    let cfg = config::parse(&format!("{CONF}{line}\n")).unwrap();
    let new = cfg
        .routes
        .iter()
        .find(|r| r.prefix.to_string() == "fc00:1::e/128")
        .unwrap()
        .clone();
    snap.apply(&Change::ReplaceRoute(new)).unwrap();
    let inner = cat(&[&ip6(0, 0, 13, 17, 50, "fd00:9::1", "fd00:9::2"), &udp()]);
    let inp = cat(&[
        &RX,
        &ip6(0, 0, inner.len(), 41, 64, SRC, "fc00:1::e"),
        &inner,
    ]);
    let from_scratch = run_on(Snapshot::build(&cfg).unwrap(), std::slice::from_ref(&inp)).out;
    let applied = run_on(snap.clone(), std::slice::from_ref(&inp)).out;
    assert_eq!(applied, from_scratch);
    assert_eq!(applied.len(), 1);
    snap.apply(&Change::DelRoute {
        prefix: "fc00:1::e/128".parse().unwrap(),
        metric: 1024,
        table: 254,
        line: 0,
    })
    .unwrap();
    let r = run_on(snap, &[inp]);
    // fc00::/16 now: the packet is forwarded as it is.
    assert_eq!(r.out.len(), 1);
    assert_eq!(r.out[0].1[14 + 24..14 + 40], a("fc00:1::e"));
}

#[test]
fn the_doc_lists_every_behaviour() {
    let doc = include_str!("../../../docs/seg6local.md");
    for b in BEHAVIOURS {
        assert!(
            doc.contains(&format!("| `{}` |", b.name)),
            "docs/seg6local.md does not list {}",
            b.name
        );
    }
}

// ---- the fast path of End, End.X and End.DX6 ----

const FAST_CONF: &str = "
link add r0 address 02:00:00:00:01:02
link add r1 address 02:00:00:00:02:01 mtu 1400
addr add fd00:1::2/64 dev r0
addr add fd00:2::1/64 dev r1
neigh add fd00:1::1 lladdr 02:00:00:00:01:01 dev r0
neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1
neigh add fd00:2::3 lladdr 02:00:00:00:02:03 dev r1
-6 route add fc00::/16 via fd00:2::2 dev r1
-6 route add fc00:7::/32 encap seg6 mode encap segs fc00::a dev r1
-6 route add fc00:1::e/128 encap seg6local action End dev r0
-6 route add fc00:1::10/128 encap seg6local action End.X nh6 fd00:2::3 dev r1
-6 route add fc00:1::d6/128 encap seg6local action End.DX6 nh6 fd00:2::3 dev r1
-6 route add fc00:1::c/128 encap seg6local action End count dev r0
";

fn fast_bases() -> Vec<Vec<u8>> {
    let inner = cat(&[
        &ip6(3, 0x12345, 13, 17, 50, "fd00:9::1", "fd00:9::2"),
        &udp(),
    ]);
    let srv6 = |dst: &str, sl: u8, segs: &[&str]| {
        let s = srh(17, sl, segs);
        cat(&[&RX, &ip6(1, 2, s.len() + 13, 43, 64, SRC, dst), &s, &udp()])
    };
    vec![
        srv6("fc00:1::e", 2, &["fc00::c", "fc00::b", "fc00:1::e"]),
        srv6("fc00:1::e", 1, &["fc00:1::10", "fc00:1::e"]),
        srv6("fc00:1::e", 1, &["fc00:7::1", "fc00:1::e"]),
        srv6("fc00:1::e", 1, &["fd00:1::2", "fc00:1::e"]),
        srv6("fc00:1::10", 1, &["fc99::b", "fc00:1::10"]),
        srv6("fc00:1::c", 1, &["fc00::b", "fc00:1::c"]),
        cat(&[
            &RX,
            &ip6(0, 0, 24 + inner.len(), 43, 64, SRC, "fc00:1::d6"),
            &srh(41, 0, &["fc00:1::d6"]),
            &inner,
        ]),
        cat(&[
            &RX,
            &ip6(0, 0, inner.len(), 41, 64, SRC, "fc00:1::d6"),
            &inner,
        ]),
    ]
}

/// What one run produced: frames sent (device, bytes), the counters as text, packets taken by the fast path.
type PathRun = (Vec<(usize, Vec<u8>)>, String, u64);

fn both_paths(frames: &[Vec<u8>]) -> [PathRun; 2] {
    [true, false].map(|fast| {
        let mut r =
            lwt6_dataplane::router::Router::build(&config::parse(FAST_CONF).unwrap()).unwrap();
        r.worker.fast_path = fast;
        let mut out = Vec::new();
        r.process_batch(
            frames.iter().map(|f| (0usize, 7u64, f.as_slice())),
            &mut |d, _, b| out.push((d, b.to_vec())),
        );
        let s = &r.worker.stats;
        assert!(s.balanced());
        (
            out,
            format!(
                "rx {} tx {} icmp {} drops {:?} reallocs {} local {:?}",
                s.rx, s.tx, s.icmp_tx, s.drops, s.reallocs, s.seg6local
            ),
            s.fast_path,
        )
    })
}

#[test]
fn seg6local_plans_give_the_general_paths_frames() {
    let [fast, slow] = both_paths(&fast_bases());
    assert_eq!((&fast.0, &fast.1), (&slow.0, &slow.1));
    // Planned: End to fc00::b, End.X, both End.DX6 frames. Not: End to another SID, to a seg6 route, to our own
    // address (dropped), End with count.
    assert_eq!(fast.2, 4, "{}", fast.1);
    assert_eq!(slow.2, 0);
    assert_eq!(fast.0.len(), 6);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 3000, ..Default::default() })]

    #[test]
    fn mutated_srv6_frames_match(i in 0usize..8, flips in proptest::collection::vec((0usize..160, proptest::prelude::any::<u8>()), 0..4),
                                 cut in 0usize..200, grow in 0usize..1500) {
        let mut f = fast_bases()[i].clone();
        for (at, v) in flips {
            let n = f.len();
            f[at % n] = v;
        }
        if grow > 1300 {
            f.extend(std::iter::repeat_n(0u8, grow));
            let plen = (f.len() - 54) as u16;
            f[18..20].copy_from_slice(&plen.to_be_bytes());
        }
        if cut < f.len() && cut > 40 {
            f.truncate(cut);
        }
        let [fast, slow] = both_paths(&[f]);
        proptest::prop_assert_eq!((fast.0, fast.1), (slow.0, slow.1));
    }
}

#[test]
fn bench_families_take_the_fast_path_without_reallocation() {
    use lwt6_lab::bench::{self, Family, LocalKey, Options, Strategy};
    let opts = Options::default();
    for k in LocalKey::ALL {
        let family = Family::Local(k);
        assert_eq!(Family::from_name(&family.name()), Some(family));
        let frames = bench::family_frames(family, opts.frame_len, 2);
        let mut r = bench::router(family, 2, Strategy::Lwt6, &opts).unwrap();
        let mut sent = 0;
        r.process_batch(
            frames.iter().map(|f| (0usize, 0u64, f.as_slice())),
            &mut |_, _, _| sent += 1,
        );
        let s = &r.worker.stats;
        assert_eq!(
            (sent, s.fast_path, s.reallocs),
            (frames.len(), frames.len() as u64, 0),
            "{}",
            family.name()
        );
    }
}
