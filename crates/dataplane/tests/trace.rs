//! The per-packet tracer (`lwt6_dataplane::trace`): frames of every family traced through the pipeline, with the stages and
//! decisions asserted — the route matched, the tunnel or behaviour and the bytes it added or removed, the hop
//! limit, the MTU check, the neighbour, the IOAM data written, the ICMP errors, the drop reasons. Frames are built
//! here by hand (RFC 8200 §3 IPv6, RFC 8754 §2 SRH, RFC 6554 §3 RPL, RFC 9197 §4.4 IOAM); every expected length
//! and field is derived from those layouts, not from lwt6's output. And the promise that makes the tracer safe to
//! use: a traced frame is processed exactly as an untraced one (same frames out, same counters but `fast_path`).

use lwt6_config as config;
use lwt6_dataplane::router::Router;
use lwt6_dataplane::stats::{DropReason, Stats};
use lwt6_dataplane::trace::{Budget, FrameTrace, Outcome, Step, TraceFilter, Tracer};
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;

const CONF: &str = "
link add r0 address 02:00:00:00:01:02
link add r1 address 02:00:00:00:02:01 mtu 1500
addr add fd00:1::2/64 dev r0
addr add fd00:2::1/64 dev r1
addr add 10.1.0.2/24 dev r0
addr add 10.2.0.1/24 dev r1
neigh add fd00:1::1 lladdr 02:00:00:00:01:01 dev r0
neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1
neigh add fd00:2::3 lladdr 02:00:00:00:02:03 dev r1
neigh add fd00:2::5 lladdr 02:00:00:00:02:05 dev r1
neigh add 10.1.0.1 lladdr 02:00:00:00:01:01 dev r0
neigh add 10.2.0.2 lladdr 02:00:00:00:02:02 dev r1
sysctl net.ipv6.conf.all.forwarding=1
-6 route add fc00::/16 via fd00:2::2 dev r1
-6 route add fd00:91::/64 encap seg6 mode inline segs fc00::a,fc00::b dev r1
-6 route add fd00:92::/64 encap seg6 mode encap segs fc00::a,fc00::b dev r1
-6 route add fd00:93::/64 encap seg6 mode encap.red segs fc00::a,fc00::b dev r1
-6 route add fd00:94::/64 encap seg6 mode l2encap segs fc00::a,fc00::b dev r1
-6 route add fd00:95::/64 encap seg6 mode l2encap.red segs fc00::a,fc00::b dev r1
-6 route add fd00:9a::/64 via fd00:2::2 dev r1 mtu lock 1400
-6 route add fd00:9b::/64 via fd00:2::9 dev r1
-4 route add 10.99.0.0/24 via 10.2.0.2 dev r1
ioam namespace add 123 data 0xdeadbeef
sysctl net.ipv6.ioam6_id=0x111111
sysctl net.ipv6.conf.r0.ioam6_enabled=1
sysctl net.ipv6.conf.r0.ioam6_id=0x0a0a
sysctl net.ipv6.conf.r1.ioam6_id=0x0c0c
-6 route add fd00:98::/64 encap ioam6 mode inline trace prealloc type 0x800000 ns 123 size 12 via fd00:2::2 dev r1
-6 route add fd00:97::/64 encap rpl segs fd00:2::5,fd00:2::6 dev r1
sysctl net.ipv6.conf.all.rpl_seg_enabled=1
sysctl net.ipv6.conf.r0.rpl_seg_enabled=1
-6 route add table 100 fd00:77::/64 via fd00:2::3 dev r1
-6 route add fc00:1::e/128 encap seg6local action End dev r0
-6 route add fc00:1::10/128 encap seg6local action End.X nh6 fd00:2::3 dev r1
-6 route add fc00:1::d6/128 encap seg6local action End.DX6 nh6 fd00:2::3 dev r1
-6 route add fc00:1::d7/128 encap seg6local action End.DT6 table 100 dev r0
-6 route add fc00:1::b6/128 encap seg6local action End.B6.Encaps srh segs fc00::b,fc00::c dev r1
";

const R0: [u8; 6] = [2, 0, 0, 0, 1, 2];
const H1: [u8; 6] = [2, 0, 0, 0, 1, 1];

fn a(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

/// RFC 8200 §3: version 6, traffic class 0, flow label 0, payload length, next header, hop limit, addresses.
fn ip6(nh: u8, hlim: u8, src: &str, dst: &str, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![0x60, 0, 0, 0];
    v.extend((payload.len() as u16).to_be_bytes());
    v.extend([nh, hlim]);
    v.extend(a(src).octets());
    v.extend(a(dst).octets());
    v.extend(payload);
    v
}

/// UDP 1000 -> 2000 with `n` bytes of payload (a router does not check its checksum).
fn udp(n: usize) -> Vec<u8> {
    let mut v = vec![0x03, 0xe8, 0x07, 0xd0];
    v.extend(((8 + n) as u16).to_be_bytes());
    v.extend([0, 0]);
    v.extend(vec![0x55; n]);
    v
}

/// RFC 8754 §2: next header, Hdr Ext Len 2n, Routing Type 4, Segments Left, Last Entry n-1, flags, tag, then
/// Segment List[0..n] in the order given.
fn srh(nh: u8, sl: u8, segs: &[&str]) -> Vec<u8> {
    let n = segs.len();
    let mut v = vec![nh, (2 * n) as u8, 4, sl, (n - 1) as u8, 0, 0, 0];
    for s in segs {
        v.extend(a(s).octets());
    }
    v
}

/// An Ethernet frame to r0 from the sender.
fn eth(ethertype: u16, l3: &[u8]) -> Vec<u8> {
    let mut f = R0.to_vec();
    f.extend(H1);
    f.extend(ethertype.to_be_bytes());
    f.extend(l3);
    f
}

fn v6(l3: &[u8]) -> Vec<u8> {
    eth(0x86dd, l3)
}

/// A UDP datagram from fd00:1::1 to `dst` behind one extension header `ext` (next header `nh`).
fn with_ext(nh: u8, hlim: u8, dst: &str, ext: &[u8]) -> Vec<u8> {
    v6(&ip6(nh, hlim, "fd00:1::1", dst, &[ext, &udp(8)].concat()))
}

/// A UDP datagram addressed to the SID `sid` with Segments Left 1 (next segment fc00::99).
fn to_sid(sid: &str) -> Vec<u8> {
    with_ext(43, 64, sid, &srh(17, 1, &["fc00::99", sid]))
}

/// A UDP packet from the sender to `dst` with hop limit `hlim`, in a frame to r0.
fn udp6(dst: &str, hlim: u8, n: usize) -> Vec<u8> {
    v6(&ip6(17, hlim, "fd00:1::1", dst, &udp(n)))
}

fn router(extra: &str) -> Router {
    Router::build(&config::parse(&format!("{CONF}{extra}")).unwrap()).unwrap()
}

/// The router's frames out and counters for `frames` (received on r0), traced (every frame) or not.
fn run(
    r: &mut Router,
    frames: &[Vec<u8>],
    trace: bool,
) -> (Vec<(usize, Vec<u8>)>, Vec<FrameTrace>) {
    if trace {
        let budget = Arc::new(Budget::new(frames.len() as u64));
        r.worker
            .set_tracer(Some(Tracer::new(TraceFilter::default(), budget, 0)));
    }
    let mut out = Vec::new();
    r.process_batch(
        frames
            .iter()
            .map(|f| (0usize, 1_000_000_000u64, f.as_slice())),
        &mut |d, _, b| out.push((d, b.to_vec())),
    );
    assert!(r.worker.stats.balanced(), "{:?}", r.worker.stats);
    (out, r.worker.take_traces())
}

/// Traces one frame received on r0 by a router with `extra` configuration lines.
fn trace_one(extra: &str, frame: Vec<u8>) -> FrameTrace {
    let mut r = router(extra);
    let (_, mut t) = run(&mut r, &[frame], true);
    assert_eq!(t.len(), 1);
    t.remove(0)
}

/// The kinds of the steps, in order (the `step` field of their JSON).
fn kinds(t: &FrameTrace) -> Vec<String> {
    t.steps
        .iter()
        .map(|s| {
            serde_json::to_value(s).unwrap()["step"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

/// A route step: (purpose, table, destination, prefix, encap).
type RouteStep = (&'static str, String, IpAddr, Option<String>, Option<String>);

/// The route steps.
fn routes(t: &FrameTrace) -> Vec<RouteStep> {
    t.steps
        .iter()
        .filter_map(|s| match s {
            Step::Route {
                purpose,
                table,
                dst,
                prefix,
                encap,
                ..
            } => Some((*purpose, table.clone(), *dst, prefix.clone(), encap.clone())),
            _ => None,
        })
        .collect()
}

/// The tunnel steps: (kind, bytes added, new destination).
fn tunnels(t: &FrameTrace) -> Vec<(&'static str, usize, Option<Ipv6Addr>)> {
    t.steps
        .iter()
        .filter_map(|s| match s {
            Step::Tunnel {
                kind,
                added,
                new_dst,
                ..
            } => Some((*kind, *added, *new_dst)),
            _ => None,
        })
        .collect()
}

/// The frames sent: (device, length, frame).
fn sent(t: &FrameTrace) -> Vec<(&str, usize, &[u8])> {
    t.steps
        .iter()
        .filter_map(|s| match s {
            Step::Sent { dev, len, frame } => Some((dev.as_str(), *len, frame.as_slice())),
            _ => None,
        })
        .collect()
}

fn step<'t>(t: &'t FrameTrace, kind: &str) -> &'t Step {
    let i = kinds(t)
        .iter()
        .position(|k| k == kind)
        .unwrap_or_else(|| panic!("no {kind} step in {:?}", kinds(t)));
    &t.steps[i]
}

fn assert_sent(t: &FrameTrace) {
    assert_eq!((t.outcome, t.drop_reason), (Outcome::Sent, None), "{t:#?}");
}

fn assert_dropped(t: &FrameTrace, reason: DropReason) {
    assert_eq!(
        (t.outcome, t.drop_reason),
        (Outcome::Dropped, Some(reason)),
        "{:?}",
        kinds(t)
    );
}

/// Forwarded through the plain route to fd00:2::2: the steps after the tunnel, and the neighbour.
fn assert_forwarded_to_gateway(t: &FrameTrace, hlim: u8, l3_len: usize) {
    assert_eq!(step(t, "hop_limit"), &Step::HopLimit { received: hlim });
    assert_eq!(
        step(t, "mtu"),
        &Step::Mtu {
            len: l3_len,
            mtu: 1500,
            fits: true
        }
    );
    assert_eq!(
        step(t, "neighbour"),
        &Step::Neighbour {
            dev: "r1".into(),
            addr: a("fd00:2::2").into(),
            state: "reachable",
            mac: Some("02:00:00:00:02:02".into()),
        }
    );
}

#[test]
fn seg6_every_mode_names_its_route_and_the_bytes_it_adds() {
    // Bytes added (RFC 8754 §2, Linux's modes, docs/references.md): inline inserts an SRH whose list holds the
    // segments and the original destination: 8 + 16 * 3; encap an outer IPv6 header and an SRH of the two
    // segments: 40 + 8 + 32; encap.red leaves the first segment out of the SRH: 40 + 8 + 16; the l2 modes also
    // keep the received Ethernet header (14) inside.
    for (pfx, mode, added) in [
        ("91", "inline", 56),
        ("92", "encap", 80),
        ("93", "encap.red", 64),
        ("94", "l2encap", 94),
        ("95", "l2encap.red", 78),
    ] {
        let f = udp6(&format!("fd00:{pfx}::1"), 64, 20);
        let t = trace_one("", f.clone());
        assert_sent(&t);
        assert_eq!(
            kinds(&t),
            [
                "ethernet",
                "ipv6",
                "route",
                "tunnel",
                "route",
                "hop_limit",
                "mtu",
                "neighbour",
                "sent"
            ],
            "{mode}"
        );
        let r = routes(&t);
        assert_eq!(
            (r[0].0, r[0].1.as_str(), r[0].2, r[0].3.as_deref()),
            (
                "destination",
                "main",
                a(&format!("fd00:{pfx}::1")).into(),
                Some(format!("fd00:{pfx}::/64").as_str())
            ),
            "{mode}"
        );
        assert!(
            r[0].4
                .as_deref()
                .is_some_and(|e| e.starts_with(&format!("encap seg6 mode {mode} "))),
            "{mode}: {r:?}"
        );
        assert_eq!(tunnels(&t), [("seg6", added, Some(a("fc00::a")))], "{mode}");
        // The new destination, the first segment, goes by fc00::/16 via fd00:2::2.
        assert_eq!(
            (r[1].0, r[1].2, r[1].3.as_deref()),
            ("tunnel destination", a("fc00::a").into(), Some("fc00::/16"))
        );
        // UDP with 20 bytes of payload: 40 + 28 bytes of IPv6 received; the MTU check is on the packet as it
        // leaves (for the l2 modes, with the Ethernet header they keep).
        assert_forwarded_to_gateway(&t, 64, 68 + added);
        let s = sent(&t);
        assert_eq!((s[0].0, s[0].1), ("r1", f.len() + added), "{mode}");
        assert_eq!(t.len, f.len());
    }
    // l2encap of a 1410-byte packet (48 + 1362): 1410 + 94 = 1504 bytes on the MTU-1500 link. Too big.
    let t = trace_one("", udp6("fd00:94::1", 64, 1362));
    assert_dropped(&t, DropReason::MtuExceeded);
    assert_eq!(
        step(&t, "mtu"),
        &Step::Mtu {
            len: 1504,
            mtu: 1500,
            fits: false
        }
    );
}

#[test]
fn seg6local_behaviours_say_what_they_did_to_the_srh() {
    // End: SRH with Segments Left 1, the next segment fc00::99 (Segment List[0]).
    let end = to_sid("fc00:1::e");
    let t = trace_one("", end.clone());
    assert_sent(&t);
    assert_eq!(
        kinds(&t),
        [
            "ethernet",
            "ipv6",
            "route",
            "seg6_local",
            "srh_advance",
            "route",
            "hop_limit",
            "mtu",
            "neighbour",
            "sent"
        ]
    );
    let r = routes(&t);
    assert_eq!(r[0].3.as_deref(), Some("fc00:1::e/128"));
    assert_eq!(r[0].4.as_deref(), Some("encap seg6local action End"));
    assert!(matches!(
        step(&t, "seg6_local"),
        Step::Seg6Local {
            behaviour: "End",
            ..
        }
    ));
    assert_eq!(
        step(&t, "srh_advance"),
        &Step::SrhAdvance {
            segments_left: 1,
            dst: a("fc00::99")
        }
    );
    assert_eq!(
        (r[1].0, r[1].1.as_str(), r[1].2),
        ("destination", "main", a("fc00::99").into())
    );
    assert_eq!(sent(&t)[0].1, end.len(), "End changes no length");

    // End.X: the same advance, then to nh6 fd00:2::3 by the route that covers it.
    let endx = to_sid("fc00:1::10");
    let t = trace_one("", endx);
    assert_sent(&t);
    assert!(matches!(
        step(&t, "seg6_local"),
        Step::Seg6Local {
            behaviour: "End.X",
            ..
        }
    ));
    let r = routes(&t);
    assert_eq!(
        (r[1].0, r[1].2, r[1].3.as_deref()),
        ("nh6", a("fd00:2::3").into(), Some("fd00:2::/64"))
    );
    assert!(
        matches!(step(&t, "neighbour"), Step::Neighbour { addr, state: "reachable", .. } if *addr == IpAddr::from(a("fd00:2::3")))
    );

    // End.DX6: outer header and SRH (Segments Left 0, one segment: 8 + 16) removed, the inner packet to nh6.
    let inner = ip6(17, 30, "fd00:1::1", "fd00:77::5", &udp(8));
    let dx6 = v6(&ip6(
        43,
        64,
        "fd00:1::1",
        "fc00:1::d6",
        &[srh(41, 0, &["fc00:1::d6"]), inner.clone()].concat(),
    ));
    let t = trace_one("", dx6);
    assert_sent(&t);
    assert_eq!(
        step(&t, "decap"),
        &Step::Decap {
            inner: "ipv6",
            removed: 40 + 24
        }
    );
    assert_eq!(step(&t, "hop_limit"), &Step::HopLimit { received: 30 });
    assert_eq!(sent(&t)[0].1, 14 + inner.len());

    // End.DT6 table 100: decapsulated (no SRH: 40 bytes), looked up in table 100.
    let dt6 = v6(&ip6(41, 64, "fd00:1::1", "fc00:1::d7", &inner));
    let t = trace_one("", dt6);
    assert_sent(&t);
    assert!(matches!(
        step(&t, "seg6_local"),
        Step::Seg6Local {
            behaviour: "End.DT6",
            ..
        }
    ));
    assert_eq!(
        step(&t, "decap"),
        &Step::Decap {
            inner: "ipv6",
            removed: 40
        }
    );
    let r = routes(&t);
    assert_eq!(
        (r[1].1.as_str(), r[1].2, r[1].3.as_deref()),
        ("100", a("fd00:77::5").into(), Some("fd00:77::/64"))
    );

    // End.B6.Encaps: the received SRH advanced, then encapsulated by the policy (fc00::b, fc00::c): 40 + 8 + 32.
    let b6 = to_sid("fc00:1::b6");
    let t = trace_one("", b6.clone());
    assert_sent(&t);
    assert!(matches!(
        step(&t, "seg6_local"),
        Step::Seg6Local {
            behaviour: "End.B6.Encaps",
            ..
        }
    ));
    assert_eq!(
        step(&t, "srh_advance"),
        &Step::SrhAdvance {
            segments_left: 1,
            dst: a("fc00::99")
        }
    );
    assert_eq!(tunnels(&t), [("seg6", 80, Some(a("fc00::b")))]);
    assert_eq!(sent(&t)[0].1, b6.len() + 80);

    // End with PSP (RFC 8986 §4.16.1): at the penultimate segment the SRH (8 + 2 * 16) goes after the advance.
    let psp = to_sid("fc00:1::f");
    let t = trace_one(
        "-6 route add fc00:1::f/128 encap seg6local action End flavors psp dev r0\n",
        psp.clone(),
    );
    assert_sent(&t);
    let k = kinds(&t);
    let at = |s: &str| k.iter().position(|x| x == s).unwrap();
    assert!(at("srh_advance") < at("srh_pop"), "{k:?}");
    assert_eq!(step(&t, "srh_pop"), &Step::SrhPop { removed: 40 });
    assert_eq!(sent(&t)[0].1, psp.len() - 40);
}

/// A pre-allocated IOAM trace in namespace 123 (RFC 9197 §4.4): option 0x31, length 2 + 8 + 4 * words, reserved,
/// IOAM type 0; namespace, NodeLen 1 | RemainingLen `words`, trace type 0x800000 (bit 0: hop limit and node id),
/// reserved; `words` empty words; in a Hop-by-Hop header with PadN(0) first (the option at 4n) and after it.
fn ioam_hbh(nh: u8, words: u8) -> Vec<u8> {
    let mut h = vec![
        nh,
        0,
        1,
        0,
        0x31,
        10 + 4 * words,
        0,
        0,
        0,
        123,
        1 << 3,
        words,
        0x80,
        0,
        0,
        0,
    ];
    h.extend(vec![0; 4 * usize::from(words)]);
    while h.len() % 8 != 0 {
        h.push(0);
    }
    // 16 + 4 * words bytes, then Pad1s to a multiple of 8 (RFC 8200 §4.2); Hdr Ext Len in 8-octet units.
    h[1] = (h.len() / 8 - 1) as u8;
    h
}

#[test]
fn ioam_insertion_transit_and_domain_removal_show_the_node_data() {
    // Insertion (ioam6 inline, 12 bytes of data): Linux's header is the options header (2), PadN(0) (2), the
    // IOAM option header (4), the trace header (8) and the data (12): 28, rounded up to 32.
    let f = udp6("fd00:98::1", 64, 8);
    let t = trace_one("", f.clone());
    assert_sent(&t);
    assert_eq!(tunnels(&t), [("ioam6", 32, None)]);
    let Step::IoamInsert { mode, ioam } = step(&t, "ioam_insert") else {
        unreachable!()
    };
    assert_eq!(*mode, "inline");
    assert_eq!(ioam.len(), 1);
    let n = &ioam[0];
    // Three words; this node's one (hop limit after forwarding, 63, and node id 0x111111) at the end.
    assert_eq!(
        (
            n.namespace,
            n.trace_type,
            n.remaining_before,
            n.remaining_after
        ),
        (123, 0x800000, 3, 2)
    );
    assert!(n.filled);
    assert_eq!(n.data, "3f111111");
    assert_eq!(sent(&t)[0].1, f.len() + 32);

    // Transit: a trace of 2 words received on r0 (ioam6_enabled) to fc00::5 with hop limit 10: this node writes
    // 9 and its id into the last free word.
    let f = with_ext(0, 10, "fc00::5", &ioam_hbh(17, 2));
    let t = trace_one("", f);
    assert_sent(&t);
    let Step::HopByHop {
        len,
        ioam_enabled,
        ioam,
    } = step(&t, "hop_by_hop")
    else {
        unreachable!()
    };
    assert_eq!((*len, *ioam_enabled), (24, true));
    assert_eq!((ioam[0].remaining_before, ioam[0].remaining_after), (2, 1));
    assert_eq!(ioam[0].data, "09111111");
    let node = ioam[0].node.as_ref().unwrap();
    assert_eq!((node.hop_limit, node.node_id), (Some(9), Some(0x111111)));

    // An unknown namespace is left alone: nothing written.
    let mut other = ioam_hbh(17, 2);
    other[9] = 124;
    let t = trace_one("", with_ext(0, 10, "fc00::5", &other));
    let Step::HopByHop { ioam, .. } = step(&t, "hop_by_hop") else {
        unreachable!()
    };
    assert!(!ioam[0].filled && ioam[0].data.is_empty());

    // A domain whose only egress is r0: the trace is filled, then removed with its whole Hop-by-Hop header (24
    // bytes) as the packet leaves by r1.
    let f = with_ext(0, 10, "fc00::5", &ioam_hbh(17, 2));
    let t = trace_one(
        "ioam domain add d1 namespace 123 ingress r0 egress r0\n",
        f.clone(),
    );
    assert_sent(&t);
    let k = kinds(&t);
    let at = |s: &str| k.iter().position(|x| x == s).unwrap();
    assert!(
        at("hop_by_hop") < at("ioam_domain") && at("ioam_domain") < at("mtu"),
        "{k:?}"
    );
    assert_eq!(
        step(&t, "ioam_domain"),
        &Step::IoamDomain {
            action: "removed",
            options: 1,
            removed: 24
        }
    );
    assert_eq!(sent(&t)[0].1, f.len() - 24);
}

/// RFC 6554 §3: an RPL Source Routing Header without compression (CmprI = CmprE = 0, Pad 0): next header, Hdr Ext
/// Len 2n, type 3, Segments Left, CmprI | CmprE, Pad | reserved, reserved, then the addresses.
fn rpl_hdr(nh: u8, sl: u8, addrs: &[&str]) -> Vec<u8> {
    let mut v = vec![nh, (2 * addrs.len()) as u8, 3, sl, 0, 0, 0, 0];
    for x in addrs {
        v.extend(a(x).octets());
    }
    v
}

#[test]
fn rpl_insertion_and_intermediate_processing() {
    // Insertion (segs fd00:2::5, fd00:2::6; destination fd00:97::1): DA := fd00:2::5, the header carries
    // fd00:2::6 and the original destination. CmprI = 15 (fd00:2::6 shares 15 bytes with the new DA), CmprE = 3
    // (fd00:97::1 shares fd 00 00); 8 + 1 + 13 = 22 bytes, padded to 24.
    let f = udp6("fd00:97::1", 64, 8);
    let t = trace_one("", f.clone());
    assert_sent(&t);
    assert_eq!(tunnels(&t), [("rpl", 24, Some(a("fd00:2::5")))]);
    let r = routes(&t);
    assert_eq!(
        (r[1].0, r[1].2, r[1].3.as_deref()),
        (
            "tunnel destination",
            a("fd00:2::5").into(),
            Some("fd00:2::/64")
        )
    );
    assert!(
        matches!(step(&t, "neighbour"), Step::Neighbour { addr, .. } if *addr == IpAddr::from(a("fd00:2::5")))
    );
    assert_eq!(sent(&t)[0].1, f.len() + 24);

    // Intermediate node: addressed to fd00:2::1 (ours) with Segments Left 2 and the addresses fd00:2::5,
    // fd00:2::2: the next address becomes the destination, Segments Left 1; then routed to it.
    let f = with_ext(
        43,
        64,
        "fd00:2::1",
        &rpl_hdr(17, 2, &["fd00:2::5", "fd00:2::2"]),
    );
    let t = trace_one("", f.clone());
    assert_sent(&t);
    assert!(matches!(
        step(&t, "ipv6"),
        Step::Ipv6 {
            local: true,
            pass: 0,
            ..
        }
    ));
    assert_eq!(
        step(&t, "routing_header"),
        &Step::RoutingHeader {
            kind: "rpl",
            action: "forward",
            segments_left: 1,
            dst: a("fd00:2::5"),
            len_before: 40,
            len_after: 16
        }
    );
    let r = routes(&t);
    assert_eq!(
        (r[0].0, r[0].2, r[0].3.as_deref()),
        ("next segment", a("fd00:2::5").into(), Some("fd00:2::/64"))
    );
    // The header is compressed again for the new destination (as Linux does): the addresses are now the old
    // destination fd00:2::1 and fd00:2::2, both sharing 15 bytes with fd00:2::5: CmprI = CmprE = 15, 8 + 1 + 1
    // bytes padded to 16, where 8 + 2 * 16 = 40 came in.
    assert_eq!(sent(&t)[0].1, f.len() - 24);
}

/// The ICMP step and the frame sent for it: the error's Type and Code as the frame carries them.
fn icmp_sent(t: &FrameTrace) -> (String, u8, u8) {
    let k = kinds(t);
    let i = k.iter().position(|x| x == "icmp").expect("an icmp step");
    let Step::Icmp {
        error,
        sent,
        to,
        icmp_type,
        code,
        ..
    } = &t.steps[i]
    else {
        unreachable!()
    };
    assert!(
        *sent && *to == IpAddr::from(a("fd00:1::1")),
        "{:?}",
        t.steps[i]
    );
    let Step::Sent { dev, frame, .. } = &t.steps[i + 1] else {
        panic!("the error's frame follows: {k:?}")
    };
    assert_eq!(dev, "r0");
    // Ethernet 14 + IPv6 40: the ICMPv6 Type and Code.
    assert_eq!(frame[20], 58);
    // The step names the Type and Code the frame carries.
    assert_eq!((*icmp_type, *code), (frame[54], frame[55]));
    (error.to_string(), frame[54], frame[55])
}

#[test]
fn icmp_errors_and_drops_are_named() {
    // Hop limit 1: Time Exceeded (RFC 4443 §3.3: type 3, code 0).
    let t = trace_one("", udp6("fc00::99", 1, 8));
    assert_dropped(&t, DropReason::HopLimitExceeded);
    let (e, ty, code) = icmp_sent(&t);
    assert_eq!(e, "time_exceeded");
    assert_eq!((ty, code), (3, 0));
    assert!(
        !kinds(&t).contains(&"hop_limit".to_string()),
        "the check failed: no hop_limit step"
    );

    // No route: Destination Unreachable, no route to destination (type 1, code 0).
    let t = trace_one("", udp6("2001:db8::1", 64, 8));
    assert_dropped(&t, DropReason::NoRoute);
    assert!(matches!(
        step(&t, "route"),
        Step::Route { found: false, .. }
    ));
    let (e, ty, code) = icmp_sent(&t);
    assert_eq!(e, "dest_unreachable");
    assert_eq!((ty, code), (1, 0));

    // Too big for the route's MTU 1400: 40 + 8 + 1400 bytes. Packet Too Big (type 2) with the MTU.
    let t = trace_one("", udp6("fd00:9a::5", 64, 1400));
    assert_dropped(&t, DropReason::MtuExceeded);
    assert_eq!(
        step(&t, "mtu"),
        &Step::Mtu {
            len: 1448,
            mtu: 1400,
            fits: false
        }
    );
    let (e, ty, _) = icmp_sent(&t);
    assert_eq!(e, "packet_too_big");
    assert_eq!(ty, 2);
    let Step::Icmp { mtu, .. } = step(&t, "icmp") else {
        unreachable!()
    };
    assert_eq!(*mtu, Some(1400));

    // A next hop without a neighbour entry (offline: no resolution).
    let t = trace_one("", udp6("fd00:9b::5", 64, 8));
    assert_dropped(&t, DropReason::NoNeighbour);
    assert_eq!(
        step(&t, "neighbour"),
        &Step::Neighbour {
            dev: "r1".into(),
            addr: a("fd00:2::9").into(),
            state: "none",
            mac: None
        }
    );
    assert!(sent(&t).is_empty());

    // Not for us (another MAC): the Ethernet step says so, and nothing else happens.
    let mut f = udp6("fc00::99", 64, 8);
    f[5] = 0x99;
    let t = trace_one("", f);
    assert_dropped(&t, DropReason::NotForUs);
    assert_eq!(kinds(&t), ["ethernet"]);
    assert!(matches!(
        step(&t, "ethernet"),
        Step::Ethernet { to: "other", .. }
    ));

    // A Hop-by-Hop option whose action bits say discard (type 0xc2 here: 11...): dropped by name.
    let hbh = [17, 0, 0xc2, 4, 0, 0, 0, 0];
    let t = trace_one(
        "",
        v6(&ip6(
            0,
            64,
            "fd00:1::1",
            "fc00::99",
            &[&hbh[..], &udp(8)].concat(),
        )),
    );
    assert!(
        matches!(t.drop_reason, Some(DropReason::UnknownOption)),
        "{:?}",
        t.drop_reason
    );

    // IPv4: no route, ICMPv4 Destination Unreachable (RFC 792: type 3, code 0) from the router.
    let mut ip4 = vec![
        0x45, 0, 0, 28, 0, 1, 0x40, 0, 64, 17, 0, 0, 10, 1, 0, 1, 10, 77, 0, 1,
    ];
    let sum = checksum(&ip4);
    ip4[10..12].copy_from_slice(&sum.to_be_bytes());
    ip4.extend([0x03, 0xe8, 0x07, 0xd0, 0, 8, 0, 0]);
    let t = trace_one("", eth(0x0800, &ip4));
    assert_dropped(&t, DropReason::NoRoute);
    assert!(matches!(
        step(&t, "ipv4"),
        Step::Ipv4 {
            ttl: 64,
            protocol: 17,
            local: false,
            ..
        }
    ));
    let Step::Icmp {
        family,
        error,
        sent: done,
        ..
    } = step(&t, "icmp")
    else {
        unreachable!()
    };
    assert!(
        *done && *family == "icmpv4" && *error == "dest_unreachable",
        "{family} {error}"
    );
    let s = sent(&t);
    // Ethernet 14 + IPv4 20: ICMP type 3, code 0.
    assert_eq!((s[0].0, s[0].2[34], s[0].2[35]), ("r0", 3, 0));
}

/// The Internet checksum (RFC 1071) of an IPv4 header.
fn checksum(b: &[u8]) -> u16 {
    let mut s: u32 = b
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// Frames of every kind, for the runs compared below.
fn mixed() -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    for pfx in ["91", "92", "93", "94", "95", "98", "97", "9a", "9b"] {
        v.push(udp6(&format!("fd00:{pfx}::1"), 64, 20));
        v.push(udp6(&format!("fd00:{pfx}::2"), 1, 20));
    }
    v.push(udp6("fd00:9a::5", 64, 1400));
    v.push(udp6("fc00::99", 64, 8));
    v.push(udp6("2001:db8::1", 64, 8));
    v.push(with_ext(0, 10, "fc00::5", &ioam_hbh(17, 2)));
    v.push(to_sid("fc00:1::e"));
    v.push(with_ext(
        43,
        64,
        "fd00:2::1",
        &rpl_hdr(17, 2, &["fd00:2::5", "fd00:2::2"]),
    ));
    v.push(vec![0; 10]);
    v
}

fn without_fast_path(s: &Stats) -> Stats {
    Stats {
        fast_path: 0,
        ..s.clone()
    }
}

#[test]
fn a_traced_frame_is_processed_exactly_as_an_untraced_one() {
    let frames = mixed();
    let (plain_out, none) = run(&mut router(""), &frames, false);
    assert!(none.is_empty());
    let mut r = router("");
    let (traced_out, traces) = run(&mut r, &frames, true);
    assert_eq!(
        traced_out, plain_out,
        "the same frames out, in the same order"
    );
    let mut plain = router("");
    run(&mut plain, &frames, false);
    assert!(
        plain.worker.stats.fast_path > 0,
        "some of these frames take the fast path"
    );
    assert_eq!(
        r.worker.stats.fast_path, 0,
        "traced frames take the general path"
    );
    assert_eq!(
        without_fast_path(&r.worker.stats),
        without_fast_path(&plain.worker.stats)
    );
    // Every frame traced once, in order, and every frame sent appears in exactly one trace.
    assert_eq!(traces.len(), frames.len());
    assert!(
        traces
            .iter()
            .enumerate()
            .all(|(i, t)| t.seq == i as u64 + 1 && t.frame == frames[i])
    );
    let traced_sent: Vec<(usize, Vec<u8>)> = traces
        .iter()
        .flat_map(|t| {
            t.steps.iter().filter_map(|s| match s {
                Step::Sent { dev, frame, .. } => {
                    Some((if dev == "r0" { 0 } else { 1 }, frame.clone()))
                }
                _ => None,
            })
        })
        .collect();
    assert_eq!(traced_sent, plain_out);
    let dropped = traces
        .iter()
        .filter(|t| t.outcome == Outcome::Dropped)
        .count() as u64;
    assert_eq!(dropped, plain.worker.stats.dropped());
}

#[test]
fn frames_the_filter_leaves_keep_the_fast_path_and_the_trace_ends_by_itself() {
    let frames: Vec<Vec<u8>> = (0..6)
        .map(|i| udp6(&format!("fd00:92::{}", i + 1), 64, 8))
        .collect();
    let mut r = router("");
    let filter =
        config::trace_filter("dst fd00:92::3/128 proto udp", |d| r.snapshot().dev_id(d)).unwrap();
    r.worker
        .set_tracer(Some(Tracer::new(filter, Arc::new(Budget::new(5)), 0)));
    let (out, traces) = run(&mut r, &frames, false);
    assert_eq!(out.len(), 6);
    assert_eq!(traces.len(), 1, "one frame matched");
    assert_eq!(traces[0].frame, frames[2]);
    assert_eq!(
        r.worker.stats.fast_path, 5,
        "the five others took the fast path"
    );
    // A spent budget ends the trace: the next batch is not traced at all.
    let mut r = router("");
    r.worker.set_tracer(Some(Tracer::new(
        TraceFilter::default(),
        Arc::new(Budget::new(2)),
        0,
    )));
    let (_, traces) = run(&mut r, &frames, false);
    assert_eq!(traces.len(), 2);
    assert_eq!(r.worker.stats.fast_path, 4);
    assert!(r.worker.tracing(), "still armed until the next batch looks");
    run(&mut r, &frames, false);
    assert!(!r.worker.tracing());
    assert_eq!(r.worker.stats.fast_path, 10);
}

#[test]
fn workers_share_the_budget_and_their_traces_merge_by_sequence() {
    let snap = Arc::new(router("").snapshot());
    let budget = Arc::new(Budget::new(5));
    let mut w = [
        lwt6_dataplane::worker::Worker::new(&snap),
        lwt6_dataplane::worker::Worker::new(&snap),
    ];
    for (i, w) in w.iter_mut().enumerate() {
        w.set_tracer(Some(Tracer::new(
            TraceFilter::default(),
            Arc::clone(&budget),
            i as u16,
        )));
    }
    let frames: Vec<Vec<u8>> = (0..8)
        .map(|i| udp6(&format!("fd00:92::{}", i + 1), 64, 8))
        .collect();
    // Frames alternate between the workers, one per batch.
    for (i, f) in frames.iter().enumerate() {
        w[i % 2].process_batch(&snap, [(0usize, i as u64, f.as_slice())], &mut |_, _, _| {});
    }
    let mut all: Vec<FrameTrace> = w.iter_mut().flat_map(|w| w.take_traces()).collect();
    all.sort_by_key(|t| t.seq);
    assert_eq!(
        all.iter().map(|t| t.seq).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5]
    );
    assert_eq!(
        all.iter().map(|t| t.worker).collect::<Vec<_>>(),
        [0, 1, 0, 1, 0]
    );
    assert_eq!(
        all.iter().map(|t| t.ts_ns).collect::<Vec<_>>(),
        [0, 1, 2, 3, 4]
    );
    assert_eq!(budget.remaining(), 0);
}

#[test]
fn the_json_form_names_every_step() {
    let t = trace_one("", udp6("fd00:92::1", 64, 8));
    let v = serde_json::to_value(&t).unwrap();
    assert_eq!(v["outcome"], "sent");
    assert_eq!(v["in_dev"], "r0");
    assert_eq!(v["steps"][2]["step"], "route");
    assert_eq!(v["steps"][2]["prefix"], "fd00:92::/64");
    assert_eq!(v["steps"][2]["metric"], 1024);
    assert_eq!(v["steps"][3]["step"], "tunnel");
    assert_eq!(v["steps"][3]["added"], 80);
    assert_eq!(v["steps"][3]["new_dst"], "fc00::a");
    let t = trace_one("", udp6("2001:db8::1", 64, 8));
    let v = serde_json::to_value(&t).unwrap();
    assert_eq!(
        (v["outcome"].as_str(), v["drop_reason"].as_str()),
        (Some("dropped"), Some("no_route"))
    );
}
