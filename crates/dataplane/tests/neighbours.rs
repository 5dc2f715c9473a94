//! Neighbours and local traffic: answers to neighbour solicitations, ARP requests and echo requests, ICMPv4 errors,
//! and dynamic resolution through the offline driver (`Router` with resolution on: packet without neighbour →
//! solicitation out → advertisement in → queued packet forwarded; retries, timeouts, floods, reachability timers).
//!
//! Expected answers are hand-derived from RFC 4861 §4.4 / §7.2.4, RFC 4443 §4.2, RFC 826 and RFC 792 with checksums
//! computed independently (Python, RFC 1071), never taken from lwt6's output; the kernel differential tests
//! (tests/kernel/test_local.py) compare the same answers with Linux's.

use lwt6_config as config;
use lwt6_dataplane::neigh::{self, State};
use lwt6_dataplane::router::Router;
use lwt6_dataplane::stats::DropReason;
use lwt6_dataplane::wire::checksum;
use lwt6_dataplane::wire::ndp::{self, Kind, NdRepr};
use proptest::prelude::*;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;

const S0: [u8; 6] = [2, 0, 0, 0, 1, 1];
const R0: [u8; 6] = [2, 0, 0, 0, 1, 2];
const R1: [u8; 6] = [2, 0, 0, 0, 2, 1];
const D0: [u8; 6] = [2, 0, 0, 0, 2, 2];
const SEC: u64 = 1_000_000_000;

const LINKS: &str = "
link add r0 address 02:00:00:00:01:02
link add r1 address 02:00:00:00:02:01
addr add fd00:1::2/64 dev r0
addr add fd00:2::1/64 dev r1
addr add 10.1.0.2/24 dev r0
addr add 10.2.0.1/24 dev r1
neigh add fd00:1::1 lladdr 02:00:00:00:01:01 dev r0
neigh add 10.1.0.1 lladdr 02:00:00:00:01:01 dev r0
";

fn router(extra: &str) -> Router {
    Router::build(&config::parse(&format!("{LINKS}{extra}")).unwrap()).unwrap()
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn a6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

/// Runs one batch at time `ts`; returns what went out, checking that the counters balance.
fn run(r: &mut Router, dev: usize, ts: u64, frames: &[Vec<u8>]) -> Vec<(usize, Vec<u8>)> {
    let mut out = Vec::new();
    r.process_batch(
        frames.iter().map(|f| (dev, ts, f.as_slice())),
        &mut |d, _, b| out.push((d, b.to_vec())),
    );
    let s = &r.worker.stats;
    assert!(s.balanced(), "{s:?}");
    out
}

fn drive(r: &mut Router, now: u64) -> Vec<(usize, Vec<u8>)> {
    let mut out = Vec::new();
    r.drive(now, &mut |d, _, b| out.push((d, b.to_vec())));
    assert!(r.worker.stats.balanced(), "{:?}", r.worker.stats);
    out
}

fn eth(dst: [u8; 6], src: [u8; 6], ty: u16) -> Vec<u8> {
    let mut f = dst.to_vec();
    f.extend(src);
    f.extend(ty.to_be_bytes());
    f
}

/// An IPv6 packet in an Ethernet frame (the ICMPv6 checksum, if `nh` is 58, filled in).
#[allow(clippy::too_many_arguments)]
fn v6(
    dst_mac: [u8; 6],
    src_mac: [u8; 6],
    src: &str,
    dst: &str,
    nh: u8,
    hl: u8,
    tc: u8,
    body: &[u8],
) -> Vec<u8> {
    let mut f = eth(dst_mac, src_mac, 0x86dd);
    f.extend([0x60 | (tc >> 4), (tc & 15) << 4, 0, 0]);
    f.extend((body.len() as u16).to_be_bytes());
    f.extend([nh, hl]);
    f.extend(a6(src).octets());
    f.extend(a6(dst).octets());
    let mut b = body.to_vec();
    if nh == 58 {
        let s = checksum::combine(
            checksum::pseudo_header_v6(&a6(src), &a6(dst), b.len() as u32, 58),
            checksum::sum(&b),
        );
        b[2..4].copy_from_slice(&checksum::finish(s).to_be_bytes());
    }
    f.extend(b);
    f
}

/// A UDP-like IPv6 packet from fd00:1::1 to `dst`, received on r0.
fn udp6(dst: &str, hl: u8) -> Vec<u8> {
    v6(
        R0,
        S0,
        "fd00:1::1",
        dst,
        17,
        hl,
        0,
        &[0x9c, 0x40, 0x0d, 0x05, 0, 12, 0, 0, 1, 2, 3, 4],
    )
}

/// An NS for `target` from `src` (with a source link-layer option `sll`) to `dst`.
fn ns(src: &str, dst: &str, target: &str, sll: Option<[u8; 6]>, hl: u8) -> Vec<u8> {
    let mut b = vec![135, 0, 0, 0, 0, 0, 0, 0];
    b.extend(a6(target).octets());
    if let Some(m) = sll {
        b.extend([1, 1]);
        b.extend(m);
    }
    let d = a6(dst);
    let dmac = if d.is_multicast() {
        ndp::multicast_mac(&d)
    } else {
        R0
    };
    v6(dmac, S0, src, dst, 58, hl, 0, &b)
}

/// An NA for `target` (flags, target link-layer option `tll`) from `target` to `dst`, received from `mac`.
fn na(
    target: &str,
    dst: &str,
    flags: u8,
    tll: Option<[u8; 6]>,
    mac: [u8; 6],
    to: [u8; 6],
) -> Vec<u8> {
    let mut b = vec![136, 0, 0, 0, flags, 0, 0, 0];
    b.extend(a6(target).octets());
    if let Some(m) = tll {
        b.extend([2, 1]);
        b.extend(m);
    }
    v6(to, mac, target, dst, 58, 255, 0, &b)
}

/// An IPv4 datagram in an Ethernet frame to r0 from s0, header checksum filled in.
fn v4(src: [u8; 4], dst: [u8; 4], proto: u8, ttl: u8, tos: u8, ff: u16, payload: &[u8]) -> Vec<u8> {
    let mut h = vec![0x45, tos];
    h.extend(((20 + payload.len()) as u16).to_be_bytes());
    h.extend([0x42, 0x42]);
    h.extend(ff.to_be_bytes());
    h.extend([ttl, proto, 0, 0]);
    h.extend(src);
    h.extend(dst);
    let c = checksum::finish(checksum::sum(&h));
    h[10..12].copy_from_slice(&c.to_be_bytes());
    let mut f = eth(R0, S0, 0x0800);
    f.extend(h);
    f.extend(payload);
    f
}

fn icmp4(m: &[u8]) -> Vec<u8> {
    let mut m = m.to_vec();
    let c = checksum::finish(checksum::sum(&m));
    m[2..4].copy_from_slice(&c.to_be_bytes());
    m
}

fn drops(r: &Router, reason: DropReason) -> u64 {
    r.worker.stats.drops.get(&reason).copied().unwrap_or(0)
}

#[test]
fn solicitation_for_our_address_is_answered() {
    let mut r = router("");
    let out = run(
        &mut r,
        0,
        SEC,
        &[ns(
            "fd00:1::1",
            "ff02::1:ff00:2",
            "fd00:1::2",
            Some(S0),
            255,
        )],
    );
    // Solicited, override, router (forwarding on), target link-layer option, from the target to the soliciting node.
    let want = hex(
        "02000000010102000000010286dd6000000000203afffd000001000000000000000000000002fd0000010000000000000000000000\
         0188009b96e0000000fd0000010000000000000000000000020201020000000102",
    );
    assert_eq!(out, vec![(0, want)]);
    assert_eq!((r.worker.stats.rx, r.worker.stats.tx), (1, 1));
}

#[test]
fn unicast_and_dad_solicitations_follow_linux() {
    let mut r = router("");
    // Unicast (a reachability probe): solicited, no override, no target link-layer option (Linux's choice).
    let out = run(
        &mut r,
        0,
        SEC,
        &[ns("fd00:1::1", "fd00:1::2", "fd00:1::2", None, 255)],
    );
    let nd = NdRepr::parse(&a6("fd00:1::2"), &a6("fd00:1::1"), &out[0].1[54..]).unwrap();
    assert_eq!(
        (nd.flags, nd.lladdr),
        (ndp::FLAG_ROUTER | ndp::FLAG_SOLICITED, None)
    );
    assert_eq!(out[0].1[..6], S0);
    // Duplicate address detection: from ::, answered to all nodes, not solicited, with the option.
    let out = run(
        &mut r,
        0,
        SEC,
        &[ns("::", "ff02::1:ff00:2", "fd00:1::2", None, 255)],
    );
    assert_eq!(out[0].1[..6], [0x33, 0x33, 0, 0, 0, 1]);
    assert_eq!(out[0].1[38..54], a6("ff02::1").octets());
    let nd = NdRepr::parse(&a6("fd00:1::2"), &a6("ff02::1"), &out[0].1[54..]).unwrap();
    assert_eq!(
        (nd.flags, nd.lladdr),
        (ndp::FLAG_ROUTER | ndp::FLAG_OVERRIDE, Some(R0))
    );
}

#[test]
fn invalid_neighbour_discovery_is_dropped_by_name() {
    let mut r = router("");
    let mut bad_sum = ns("fd00:1::1", "ff02::1:ff00:2", "fd00:1::2", Some(S0), 255);
    bad_sum[56] ^= 1;
    let frames = [
        // Hop limit 64: may have been forwarded (RFC 4861 §7.1.1).
        ns("fd00:1::1", "ff02::1:ff00:2", "fd00:1::2", Some(S0), 64),
        bad_sum,
        // From :: with a source link-layer option.
        ns("::", "ff02::1:ff00:2", "fd00:1::2", Some(S0), 255),
        // Multicast NS to a group that is not solicited-node.
        ns("fd00:1::1", "ff02::1", "fd00:1::2", Some(S0), 255),
        // A solicited NA to a multicast group (§7.1.2).
        na(
            "fd00:1::1",
            "ff02::1",
            0x60,
            Some(S0),
            S0,
            [0x33, 0x33, 0, 0, 0, 1],
        ),
        // Target not ours on that interface.
        ns("fd00:1::1", "ff02::1:ff00:9", "fd00:1::9", Some(S0), 255),
        ns("fd00:1::1", "ff02::1:ff00:1", "fd00:2::1", Some(S0), 255),
    ];
    let out = run(&mut r, 0, SEC, &frames);
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(drops(&r, DropReason::NdpInvalid), 5);
    assert_eq!(drops(&r, DropReason::NdpOtherTarget), 2);
}

#[test]
fn echo_request_to_our_address_is_answered() {
    let mut r = router("");
    let req = v6(
        R0,
        S0,
        "fd00:1::1",
        "fd00:1::2",
        58,
        63,
        0x28,
        &[128, 0, 0, 0, 0x12, 0x34, 0, 1, b'p', b'i', b'n', b'g'],
    );
    let out = run(&mut r, 0, SEC, std::slice::from_ref(&req));
    // From the address pinged, the request's traffic class, the interface's hop limit 64.
    let want = hex(
        "02000000010102000000010286dd62800000000c3a40fd000001000000000000000000000002fd0000010000000000000000000000\
         01810093ac1234000170696e67",
    );
    assert_eq!(out, vec![(0, want)]);
    // A bad checksum is a named drop; an echo reply to us is not answered.
    let mut bad = req;
    bad[60] ^= 0xff;
    let reply = v6(
        R0,
        S0,
        "fd00:1::1",
        "fd00:1::2",
        58,
        64,
        0,
        &[129, 0, 0, 0, 0, 1, 0, 1],
    );
    assert!(run(&mut r, 0, SEC, &[bad, reply]).is_empty());
    assert_eq!(drops(&r, DropReason::IcmpInvalid), 1);
    assert_eq!(drops(&r, DropReason::LocalDelivery), 1);
}

#[test]
fn ipv4_echo_and_arp_are_answered() {
    let mut r = router("");
    let echo = v4(
        [10, 1, 0, 1],
        [10, 1, 0, 2],
        1,
        64,
        0x10,
        0x4000,
        &icmp4(&[8, 0, 0, 0, 0x12, 0x34, 0, 1, b'p', b'i', b'n', b'g']),
    );
    let mut arp_req = eth([0xff; 6], S0, 0x0806);
    arp_req.extend([0, 1, 8, 0, 6, 4, 0, 1]);
    arp_req.extend(S0);
    arp_req.extend([10, 1, 0, 1, 0, 0, 0, 0, 0, 0, 10, 1, 0, 2]);
    let out = run(&mut r, 0, SEC, &[echo, arp_req.clone()]);
    // Echo reply: TOS kept, TTL 64, DF clear, identification 0 (lwt6's first; Linux's differs, see test_local.py).
    let echo_want = hex(
        "02000000010102000000010208004510002000000000400166c90a0100020a01000100000efa1234000170696e67",
    );
    let arp_want =
        hex("020000000101020000000102080600010800060400020200000001020a0100020200000001010a010001");
    assert_eq!(out, vec![(0, echo_want), (0, arp_want)]);
    // A request for another address, a truncated one, an IEEE 802 hardware type.
    let mut other = arp_req.clone();
    other[41] = 9;
    let short = arp_req[..40].to_vec();
    let mut hw = arp_req;
    hw[15] = 6;
    assert!(run(&mut r, 0, SEC, &[other, short, hw]).is_empty());
    assert_eq!(drops(&r, DropReason::ArpOtherTarget), 1);
    assert_eq!(drops(&r, DropReason::ArpInvalid), 2);
}

#[test]
fn ipv4_forwarding_errors() {
    let mut r = router(
        "neigh add 10.2.0.2 lladdr 02:00:00:00:02:02 dev r1\n\
         route add 10.9.0.0/16 via 10.2.0.2 dev r1 mtu 100\n",
    );
    let udp = [0x9c, 0x40, 0x0d, 0x05, 0, 12, 0, 0, b'a', b'b', b'c', b'd'];
    let ttl1 = v4([10, 1, 0, 1], [10, 2, 0, 2], 17, 1, 0x08, 0, &udp);
    let out = run(&mut r, 0, SEC, &[ttl1]);
    let want = hex(
        "020000000101020000000102080045c8003c00000000400165f50a0100020a0100010b0086e70000000045080020424200000111\
         637e0a0100010a0200029c400d05000c000061626364",
    );
    assert_eq!(out, vec![(0, want)]);
    // No route: net unreachable (3/0); too big with DF: fragmentation needed (3/4) with the MTU 100; too big
    // without DF: dropped without an error (Linux would fragment).
    let noroute = v4([10, 1, 0, 1], [10, 77, 0, 1], 17, 64, 0, 0, &udp);
    let big = vec![0u8; 120];
    let df = v4([10, 1, 0, 1], [10, 9, 0, 1], 17, 64, 0, 0x4000, &big);
    let nodf = v4([10, 1, 0, 1], [10, 9, 0, 1], 17, 64, 0, 0, &big);
    let out = run(&mut r, 0, SEC, &[noroute, df, nodf]);
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].1[34..36], [3, 0]);
    assert_eq!(out[1].1[34..40], [3, 4, out[1].1[36], out[1].1[37], 0, 0]);
    assert_eq!(out[1].1[40..42], 100u16.to_be_bytes());
    assert_eq!(checksum::finish(checksum::sum(&out[1].1[34..])), 0);
    assert_eq!(r.worker.stats.icmp_tx, 3);
    // Never about an ICMP error (RFC 1812 §4.3.2.7): a time exceeded with TTL 1 passing through.
    let err = v4(
        [10, 1, 0, 1],
        [10, 2, 0, 2],
        1,
        1,
        0,
        0,
        &icmp4(&[11, 0, 0, 0, 0, 0, 0, 0]),
    );
    assert!(run(&mut r, 0, SEC, &[err]).is_empty());
    assert_eq!(r.worker.stats.icmp_tx, 3);
}

#[test]
fn offline_default_keeps_no_neighbour_drops() {
    let mut r = router("-6 route add fc00::/16 via fd00:2::2 dev r1\n");
    assert!(run(&mut r, 0, SEC, &[udp6("fc00::1", 64)]).is_empty());
    assert_eq!(drops(&r, DropReason::NoNeighbour), 1);
    assert!(r.worker.take_neigh_events().is_empty());
}

fn is_ns_for(frame: &[u8], target: &str, unicast: Option<[u8; 6]>) -> bool {
    let dst = Ipv6Addr::from(<[u8; 16]>::try_from(&frame[38..54]).unwrap());
    let src = Ipv6Addr::from(<[u8; 16]>::try_from(&frame[22..38]).unwrap());
    let Ok(nd) = NdRepr::parse(&src, &dst, &frame[54..]) else {
        return false;
    };
    let want_dst = match unicast {
        Some(m) => m,
        None => ndp::multicast_mac(&ndp::solicited_node(&a6(target))),
    };
    nd.kind == Kind::Solicit
        && nd.target == a6(target)
        && nd.lladdr == Some(R1)
        && frame[..6] == want_dst
}

#[test]
fn resolution_loop_forwards_the_queued_packets_in_order() {
    let mut r = router("-6 route add fc00::/16 via fd00:2::2 dev r1\n");
    r.set_resolve(true);
    let (p1, p2) = (udp6("fc00::1", 64), udp6("fc00::2", 64));
    let out = run(&mut r, 0, SEC, &[p1.clone(), p2.clone()]);
    // One multicast solicitation from r1's address for the gateway; both packets wait.
    assert_eq!(out.len(), 1);
    assert!(is_ns_for(&out[0].1, "fd00:2::2", None), "{:02x?}", out[0].1);
    assert_eq!(out[0].1[22..38], a6("fd00:2::1").octets());
    assert_eq!((r.worker.stats.pending, r.worker.stats.solicit_tx), (2, 1));
    // The solicited advertisement arrives on r1: consumed, published, the packets forwarded in order.
    let adv = na("fd00:2::2", "fd00:2::1", 0x60, Some(D0), D0, R1);
    let out = run(&mut r, 1, SEC + 1000, &[adv]);
    assert_eq!(out.len(), 2);
    for ((dev, f), p) in out.iter().zip([&p1, &p2]) {
        assert_eq!(*dev, 1);
        assert_eq!(f[..12], [D0, R1].concat());
        assert_eq!(f[14 + 24..14 + 40], p[14 + 24..14 + 40]);
        assert_eq!(f[14 + 7], 63);
    }
    let s = &r.worker.stats;
    assert_eq!(
        (s.rx, s.tx, s.consumed, s.pending, s.dropped()),
        (3, 2, 1, 0, 0)
    );
    assert!(matches!(
        r.neigh.get(1, IpAddr::V6(a6("fd00:2::2"))).unwrap().state,
        State::Reachable { .. }
    ));
    // Later packets go straight through.
    let out = run(&mut r, 0, SEC + 2000, &[udp6("fc00::3", 64)]);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].1[..6], D0);
}

#[test]
fn an_unanswered_neighbour_is_retried_then_given_up() {
    let mut r = router("-6 route add fc00::/16 via fd00:2::2 dev r1\n");
    r.set_resolve(true);
    let out = run(&mut r, 0, SEC, &[udp6("fc00::1", 64)]);
    assert_eq!(out.len(), 1);
    // Nothing before the retransmission timer; then the second and third solicitations, one second apart.
    assert!(drive(&mut r, SEC + SEC / 2).is_empty());
    for k in 2..=3 {
        let out = drive(&mut r, k * SEC);
        assert_eq!(out.len(), 1, "solicitation {k}");
        assert!(is_ns_for(&out[0].1, "fd00:2::2", None));
    }
    assert_eq!(r.worker.stats.solicit_tx, 3);
    // After the third: dropped, and an ICMPv6 address unreachable (1/3) to the source, out of r0.
    let out = drive(&mut r, 4 * SEC);
    assert_eq!(out.len(), 1);
    let (dev, f) = &out[0];
    assert_eq!((*dev, &f[..6]), (0, &S0[..]));
    assert_eq!((f[20], f[54], f[55]), (58, 1, 3));
    // The packet is quoted as it was about to leave, hop limit 63 (as Linux quotes it: tests/kernel/test_local.py).
    let mut quoted = udp6("fc00::1", 64)[14..].to_vec();
    quoted[7] = 63;
    assert_eq!(f[62..], quoted[..]);
    assert_eq!(drops(&r, DropReason::NeighUnresolved), 1);
    assert_eq!(r.worker.stats.pending, 0);
    assert!(drive(&mut r, 10 * SEC).is_empty());
}

/// Two workers of one router (sharing a `SolicitGate`) queue packets for the same unanswered next hop, the second
/// 0.4 s after the first: between them they send three solicitations, one per retransmission interval, as Linux
/// does with one queue (not three each); each gives up on its own packets at its own time. Without the gate each
/// worker solicits for itself (six).
#[test]
fn workers_sharing_a_gate_send_one_solicitation_per_retransmission() {
    for shared in [true, false] {
        let gate = std::sync::Arc::new(neigh::SolicitGate::default());
        let mut w: Vec<Router> = (0..2)
            .map(|_| {
                let mut r = router("-6 route add fc00::/16 via fd00:2::2 dev r1\n");
                r.set_resolve(true);
                if shared {
                    r.worker.solicit_gate = Some(std::sync::Arc::clone(&gate));
                }
                r
            })
            .collect();
        let mut sent = 0;
        let mut count = |out: &[(usize, Vec<u8>)]| {
            for (_, f) in out {
                if is_ns_for(f, "fd00:2::2", None) {
                    sent += 1;
                }
            }
        };
        count(&run(&mut w[0], 0, SEC, &[udp6("fc00::1", 64)]));
        count(&run(
            &mut w[1],
            0,
            SEC + 4 * SEC / 10,
            &[udp6("fc00::2", 64)],
        ));
        for t in 1..=60 {
            let now = SEC + t * SEC / 10;
            for r in w.iter_mut() {
                count(&drive(r, now));
            }
        }
        assert_eq!(sent, if shared { 3 } else { 6 }, "shared gate: {shared}");
        let tx: u64 = w.iter().map(|r| r.worker.stats.solicit_tx).sum();
        assert_eq!(tx, sent);
        for r in &w {
            assert_eq!(drops(r, DropReason::NeighUnresolved), 1);
            assert_eq!(r.worker.stats.pending, 0);
        }
    }
}

/// A next hop learned by NDP gets the fast-path plan, for a gateway route and for a seg6 tunnel routed through it,
/// with the same bytes as the general path; the plan follows a new MAC (solicited, overriding advertisement) and
/// is given up as soon as the table stops vouching for the entry (an unsolicited override makes it STALE; aging
/// does; the entry goes after unanswered probes): from then on the general path forwards (and reports the STALE
/// use, so the entry is probed), and after deletion packets wait for a new resolution, never sent to the old MAC.
#[test]
fn learned_neighbours_get_plans_while_the_table_vouches_for_them() {
    const D1: [u8; 6] = [2, 0, 0, 0, 2, 3];
    let conf = "-6 route add fc00::/16 via fd00:2::2 dev r1\n\
                -6 route add fd00:91::/64 encap seg6 mode encap segs fc00::1,fc00::2 dev r1\n";
    let mut rs = [router(conf), router(conf)];
    rs[1].worker.fast_path = false;
    for r in rs.iter_mut() {
        r.set_resolve(true);
    }
    // Feeds both routers (fast path on, off); the outputs must be equal; returns the first one's and how many
    // frames took its plans.
    fn step(
        rs: &mut [Router; 2],
        dev: usize,
        ts: u64,
        frames: &[Vec<u8>],
    ) -> (Vec<(usize, Vec<u8>)>, u64) {
        let before = rs[0].worker.stats.fast_path;
        let a = run(&mut rs[0], dev, ts, frames);
        let b = run(&mut rs[1], dev, ts, frames);
        assert_eq!(a, b, "fast and general paths differ at {ts}");
        assert_eq!(rs[1].worker.stats.fast_path, 0);
        (a, rs[0].worker.stats.fast_path - before)
    }
    let traffic = || vec![udp6("fc00::2", 64), udp6("fd00:91::1", 64)];
    // Unknown: queued, solicited; the solicited advertisement makes it REACHABLE and releases the packet.
    let (out, fp) = step(&mut rs, 0, SEC, &[udp6("fc00::1", 64)]);
    assert!(is_ns_for(&out[0].1, "fd00:2::2", None) && fp == 0);
    step(
        &mut rs,
        1,
        SEC + 1,
        &[na("fd00:2::2", "fd00:2::1", 0x60, Some(D0), D0, R1)],
    );
    // Learned and vouched for: both routes take their plans, to D0.
    let (out, fp) = step(&mut rs, 0, 2 * SEC, &traffic());
    assert_eq!((out.len(), fp), (2, 2));
    assert!(
        out.iter()
            .all(|(d, f)| *d == 1 && f[..12] == [D0, R1].concat())
    );
    // A solicited advertisement with the override flag and a new address: REACHABLE at D1, plans follow.
    step(
        &mut rs,
        1,
        3 * SEC,
        &[na("fd00:2::2", "fd00:2::1", 0x60, Some(D1), D1, R1)],
    );
    let (out, fp) = step(&mut rs, 0, 4 * SEC, &traffic());
    assert_eq!((out.len(), fp), (2, 2));
    assert!(out.iter().all(|(_, f)| f[..6] == D1));
    // An unsolicited override back to D0 leaves the entry STALE (RFC 4861 §7.2.5): general path, to D0.
    step(
        &mut rs,
        1,
        5 * SEC,
        &[na("fd00:2::2", "fd00:2::1", 0x20, Some(D0), D0, R1)],
    );
    let key = IpAddr::V6(a6("fd00:2::2"));
    assert!(matches!(
        rs[0].neigh.get(1, key).unwrap().state,
        State::Stale { .. }
    ));
    let (out, fp) = step(&mut rs, 0, 6 * SEC, &traffic());
    assert_eq!((out.len(), fp), (2, 0));
    assert!(out.iter().all(|(_, f)| f[..6] == D0));
    // Confirmed again (a solicited advertisement): plans again; then 30 s later aged to STALE: no plan.
    step(
        &mut rs,
        1,
        7 * SEC,
        &[na("fd00:2::2", "fd00:2::1", 0x60, Some(D0), D0, R1)],
    );
    assert_eq!(step(&mut rs, 0, 8 * SEC, &traffic()).1, 2);
    for r in rs.iter_mut() {
        drive(r, 38 * SEC);
    }
    assert!(matches!(
        rs[0].neigh.get(1, key).unwrap().state,
        State::Stale { .. }
    ));
    let (out, fp) = step(&mut rs, 0, 39 * SEC, &traffic());
    assert_eq!((out.len(), fp), (2, 0));
    // Used while STALE: probed three times, unanswered, deleted: packets wait again, solicited, none to D0.
    for t in 40..=48 {
        for r in rs.iter_mut() {
            drive(r, t * SEC);
        }
    }
    assert!(rs[0].neigh.get(1, key).is_none());
    let (out, fp) = step(&mut rs, 0, 49 * SEC, &traffic());
    assert_eq!(fp, 0);
    assert!(
        out.iter().all(|(_, f)| is_ns_for(f, "fd00:2::2", None)),
        "{out:02x?}"
    );
    assert_eq!(rs[0].worker.stats.pending, 2);
}

#[test]
fn ipv4_next_hops_are_resolved_with_arp() {
    let mut r = router("route add 10.9.0.0/16 via 10.2.0.2 dev r1\n");
    r.set_resolve(true);
    let udp = [0x9c, 0x40, 0x0d, 0x05, 0, 8, 0, 0];
    let p = v4([10, 1, 0, 1], [10, 9, 0, 1], 17, 64, 0, 0, &udp);
    let out = run(&mut r, 0, SEC, &[p]);
    // who-has 10.2.0.2 tell 10.2.0.1, broadcast from r1 (RFC 826).
    let mut want = eth([0xff; 6], R1, 0x0806);
    want.extend([0, 1, 8, 0, 6, 4, 0, 1]);
    want.extend(R1);
    want.extend([10, 2, 0, 1, 0, 0, 0, 0, 0, 0, 10, 2, 0, 2]);
    assert_eq!(out, vec![(1, want)]);
    let mut reply = eth(R1, D0, 0x0806);
    reply.extend([0, 1, 8, 0, 6, 4, 0, 2]);
    reply.extend(D0);
    reply.extend([10, 2, 0, 2]);
    reply.extend(R1);
    reply.extend([10, 2, 0, 1]);
    let out = run(&mut r, 1, SEC + 1, &[reply]);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].1[..14], eth(D0, R1, 0x0800)[..]);
    assert_eq!(out[0].1[22], 63);
    let s = &r.worker.stats;
    assert_eq!((s.rx, s.tx, s.consumed, s.pending), (2, 1, 1, 0));
}

#[test]
fn a_flood_of_unresolved_next_hops_stays_bounded() {
    let mut r = router("");
    r.set_resolve(true);
    // 5000 destinations on r1's connected prefix, none answering, plus 40 to one of them.
    let mut frames: Vec<Vec<u8>> = (0..5000u32)
        .map(|i| {
            udp6(
                &format!("fd00:2::{:x}:{:x}", 1 + i / 65536, i % 65536 + 2),
                64,
            )
        })
        .collect();
    frames.extend((0..40).map(|_| udp6("fd00:2::1:2", 64)));
    let out = run(&mut r, 0, SEC, &frames);
    let (queued, neighs) = r.worker.pending_len();
    assert!(neighs <= neigh::MAX_PENDING_NEIGHS && queued <= neigh::QUEUE_TOTAL);
    assert_eq!(neighs, neigh::MAX_PENDING_NEIGHS);
    // One solicitation per next hop being resolved; the rest dropped by name.
    assert_eq!(out.len(), neigh::MAX_PENDING_NEIGHS);
    let s = &r.worker.stats;
    assert_eq!(s.pending as usize, queued);
    assert_eq!(
        queued,
        neigh::MAX_PENDING_NEIGHS - 1 + neigh::QUEUE_PER_NEIGH
    );
    assert_eq!(
        drops(&r, DropReason::NeighQueueFull) as usize,
        5040 - queued
    );
    // Given up after the retries: everything dropped as unresolved, nothing left.
    for k in 2..=4 {
        drive(&mut r, k * SEC);
    }
    assert_eq!(r.worker.pending_len(), (0, 0));
    assert_eq!(drops(&r, DropReason::NeighUnresolved) as usize, queued);
    assert_eq!(r.worker.stats.pending, 0);
}

#[test]
fn reachability_ages_and_stale_neighbours_are_probed() {
    let mut r = router("-6 route add fc00::/16 via fd00:2::2 dev r1\n");
    r.set_resolve(true);
    run(&mut r, 0, SEC, &[udp6("fc00::1", 64)]);
    run(
        &mut r,
        1,
        SEC,
        &[na("fd00:2::2", "fd00:2::1", 0x60, Some(D0), D0, R1)],
    );
    let key = IpAddr::V6(a6("fd00:2::2"));
    // REACHABLE for 30 s, then STALE (published: still usable).
    drive(&mut r, 30 * SEC);
    assert!(matches!(
        r.neigh.get(1, key).unwrap().state,
        State::Reachable { .. }
    ));
    drive(&mut r, 32 * SEC);
    assert!(matches!(
        r.neigh.get(1, key).unwrap().state,
        State::Stale { .. }
    ));
    // Used while STALE: forwarded, reported, DELAY; the first unicast probe 5 s later.
    let out = run(&mut r, 0, 33 * SEC, &[udp6("fc00::2", 64)]);
    assert_eq!(out.len(), 1);
    assert!(matches!(
        r.neigh.get(1, key).unwrap().state,
        State::Delay { .. }
    ));
    assert!(drive(&mut r, 37 * SEC).is_empty());
    let out = drive(&mut r, 38 * SEC);
    assert_eq!(out.len(), 1);
    assert!(is_ns_for(&out[0].1, "fd00:2::2", Some(D0)));
    assert_eq!(out[0].1[38..54], a6("fd00:2::2").octets());
    // Unanswered: two more probes, then the entry is deleted and packets wait again.
    assert_eq!(drive(&mut r, 39 * SEC).len(), 1);
    assert_eq!(drive(&mut r, 40 * SEC).len(), 1);
    assert!(drive(&mut r, 41 * SEC).is_empty());
    assert!(r.neigh.get(1, key).is_none());
    let out = run(&mut r, 0, 42 * SEC, &[udp6("fc00::3", 64)]);
    assert!(is_ns_for(&out[0].1, "fd00:2::2", None));
    assert_eq!(r.worker.stats.pending, 1);
    // A probe answered with a solicited advertisement makes it REACHABLE again.
    run(
        &mut r,
        1,
        42 * SEC + 1,
        &[na("fd00:2::2", "fd00:2::1", 0x60, Some(D0), D0, R1)],
    );
    assert!(matches!(
        r.neigh.get(1, key).unwrap().state,
        State::Reachable { .. }
    ));
    assert_eq!(r.worker.stats.pending, 0);
}

#[test]
fn static_neighbours_win_over_learned_ones() {
    let mut r = router(
        "neigh add fd00:2::2 lladdr 02:00:00:00:02:99 dev r1\n\
         -6 route add fc00::/16 via fd00:2::2 dev r1\n",
    );
    r.set_resolve(true);
    // An unsolicited override advertisement with another address, and a solicitation carrying it.
    run(
        &mut r,
        1,
        SEC,
        &[na(
            "fd00:2::2",
            "ff02::1",
            0x20,
            Some(D0),
            D0,
            [0x33, 0x33, 0, 0, 0, 1],
        )],
    );
    assert!(r.neigh.is_empty());
    let out = run(&mut r, 0, SEC, &[udp6("fc00::1", 64)]);
    assert_eq!(out[0].1[..6], [2, 0, 0, 0, 2, 0x99]);
}

#[test]
fn ping_from_a_sender_without_static_neighbours() {
    // No static neighbour for the sender: it solicits the router first (its source link-layer option teaches the
    // router its address), then pings; the reply uses the learned entry.
    let cfg = LINKS
        .lines()
        .filter(|l| !l.starts_with("neigh"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut r = Router::build(&config::parse(&cfg).unwrap()).unwrap();
    r.set_resolve(true);
    let out = run(
        &mut r,
        0,
        SEC,
        &[ns(
            "fd00:1::1",
            "ff02::1:ff00:2",
            "fd00:1::2",
            Some(S0),
            255,
        )],
    );
    assert_eq!(out.len(), 1);
    assert!(matches!(
        r.neigh.get(0, IpAddr::V6(a6("fd00:1::1"))).unwrap().state,
        State::Stale { .. }
    ));
    let req = v6(
        R0,
        S0,
        "fd00:1::1",
        "fd00:1::2",
        58,
        64,
        0,
        &[128, 0, 0, 0, 0, 9, 0, 1],
    );
    let out = run(&mut r, 0, SEC + 1, &[req]);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].1[..6].to_vec(), out[0].1[54]), (S0.to_vec(), 129));
    // The ARP counterpart for IPv4: a request teaches the sender, the echo reply follows.
    let mut arp_req = eth([0xff; 6], S0, 0x0806);
    arp_req.extend([0, 1, 8, 0, 6, 4, 0, 1]);
    arp_req.extend(S0);
    arp_req.extend([10, 1, 0, 1, 0, 0, 0, 0, 0, 0, 10, 1, 0, 2]);
    let echo = v4(
        [10, 1, 0, 1],
        [10, 1, 0, 2],
        1,
        64,
        0,
        0,
        &icmp4(&[8, 0, 0, 0, 0, 9, 0, 1]),
    );
    let out = run(&mut r, 0, SEC + 2, &[arp_req]);
    assert_eq!(out.len(), 1);
    let out = run(&mut r, 0, SEC + 3, &[echo]);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].1[..6].to_vec(), out[0].1[34]), (S0.to_vec(), 0));
    let s = &r.worker.stats;
    assert_eq!((s.rx, s.tx, s.dropped(), s.pending), (4, 4, 0, 0));
    // Both entries were used while STALE: 5 s later each is probed by unicast (NS to the sender's MAC, ARP
    // request to it), three times, then forgotten.
    let mut probes = Vec::new();
    for k in 6..=10 {
        probes.extend(drive(&mut r, k * SEC + 3));
    }
    assert_eq!(probes.len(), 6, "{probes:02x?}");
    assert!(probes.iter().all(|(d, f)| *d == 0 && f[..6] == S0));
    assert_eq!(
        probes.iter().filter(|(_, f)| f[12..14] == [8, 6]).count(),
        3
    );
    assert!(r.neigh.is_empty());
}

#[test]
fn a_flood_of_solicitations_cannot_grow_the_table() {
    let cfg = LINKS
        .lines()
        .filter(|l| !l.starts_with("neigh"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut r = Router::build(&config::parse(&cfg).unwrap()).unwrap();
    r.set_resolve(true);
    // 3000 solicitations from made-up sources and MACs: all answered, the table capped.
    let frames: Vec<Vec<u8>> = (0..3000u32)
        .map(|i| {
            let mac = [2, 0, 0x10, (i >> 16) as u8, (i >> 8) as u8, i as u8];
            let mut f = ns(
                &format!("fd00:1::a:{:x}", i),
                "ff02::1:ff00:2",
                "fd00:1::2",
                Some(mac),
                255,
            );
            f[6..12].copy_from_slice(&mac);
            f
        })
        .collect();
    let out = run(&mut r, 0, SEC, &frames);
    assert_eq!(out.len(), 3000);
    assert_eq!(r.neigh.len(), neigh::MAX_LEARNED);
    assert_eq!(r.neigh.refused as usize, 3000 - neigh::MAX_LEARNED);
    assert_eq!(
        r.snapshot()
            .neighbour(0, IpAddr::V6(a6("fd00:1::a:0")))
            .map(|n| n.0),
        Some([2, 0, 0x10, 0, 0, 0])
    );
    // Never used, they are forgotten after a minute (and published as gone).
    drive(&mut r, 62 * SEC);
    assert!(r.neigh.is_empty());
    assert!(
        r.snapshot()
            .neighbour(0, IpAddr::V6(a6("fd00:1::a:0")))
            .is_none()
    );
}

#[test]
fn icmp_errors_are_rate_limited_when_asked() {
    let mut r = router("neigh add 10.2.0.2 lladdr 02:00:00:00:02:02 dev r1\n");
    let udp = [0x9c, 0x40, 0x0d, 0x05, 0, 8, 0, 0];
    let ttl1: Vec<Vec<u8>> = (0..10)
        .map(|_| v4([10, 1, 0, 1], [10, 2, 0, 2], 17, 1, 0, 0, &udp))
        .collect();
    // Off by default: every expired datagram gets its time exceeded.
    assert_eq!(run(&mut r, 0, SEC, &ttl1).len(), 10);
    // On (Linux's defaults): a burst of 6 to one destination, then one a second.
    r.worker.icmp_limiter = Some(Default::default());
    assert_eq!(run(&mut r, 0, 2 * SEC, &ttl1).len(), 6);
    assert_eq!(run(&mut r, 0, 3 * SEC, &ttl1).len(), 1);
    let s = &r.worker.stats;
    assert_eq!((s.icmp_tx, s.icmp_limited), (17, 13));
    assert_eq!(drops(&r, DropReason::HopLimitExceeded), 30);
}

/// Seed frames for the hostile-input property: every kind of frame the neighbour code parses, and packets that
/// wait for resolution.
fn seeds() -> Vec<Vec<u8>> {
    let mut arp_req = eth([0xff; 6], S0, 0x0806);
    arp_req.extend([0, 1, 8, 0, 6, 4, 0, 1]);
    arp_req.extend(S0);
    arp_req.extend([10, 1, 0, 1, 0, 0, 0, 0, 0, 0, 10, 1, 0, 2]);
    let mut arp_rep = arp_req.clone();
    arp_rep[21] = 2;
    vec![
        ns("fd00:1::1", "ff02::1:ff00:2", "fd00:1::2", Some(S0), 255),
        ns("::", "ff02::1:ff00:2", "fd00:1::2", None, 255),
        ns("fd00:1::1", "fd00:1::2", "fd00:1::2", None, 255),
        na("fd00:2::2", "fd00:2::1", 0x60, Some(D0), D0, R0),
        na(
            "fd00:2::2",
            "ff02::1",
            0x20,
            Some(D0),
            D0,
            [0x33, 0x33, 0, 0, 0, 1],
        ),
        arp_req,
        arp_rep,
        v6(
            R0,
            S0,
            "fd00:1::1",
            "fd00:1::2",
            58,
            64,
            0,
            &[128, 0, 0, 0, 0, 1, 0, 1, 9, 9],
        ),
        v4(
            [10, 1, 0, 1],
            [10, 1, 0, 2],
            1,
            64,
            0,
            0,
            &icmp4(&[8, 0, 0, 0, 0, 1, 0, 1]),
        ),
        v4([10, 1, 0, 1], [10, 9, 0, 1], 17, 1, 0, 0, &[0; 8]),
        udp6("fc00::1", 64),
        udp6("fd00:2::77", 64),
    ]
}

fn mutated() -> impl Strategy<Value = Vec<u8>> {
    let base = seeds();
    (
        0..base.len(),
        prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..6),
        any::<prop::sample::Index>(),
        any::<bool>(),
    )
        .prop_map(move |(i, flips, cut, do_cut)| {
            let mut f = base[i].clone();
            for (at, v) in flips {
                let n = f.len();
                f[at.index(n)] = v;
            }
            if do_cut {
                let n = f.len();
                f.truncate(cut.index(n + 1));
            }
            f
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    /// Damaged neighbour discovery, ARP and echo frames, and packets waiting for neighbours, with resolution and
    /// rate limits on: never a panic, every frame accounted for at every step, the queues bounded and empty once
    /// the solicitations have timed out.
    #[test]
    fn hostile_frames_with_resolution_balance(frames in prop::collection::vec(mutated(), 1..12)) {
        let mut r = router("-6 route add fc00::/16 via fd00:2::2 dev r1\nroute add 10.9.0.0/16 via 10.2.0.2 dev r1\n");
        r.set_resolve(true);
        r.worker.icmp_limiter = Some(Default::default());
        for (i, f) in frames.iter().enumerate() {
            let dev = i % 2;
            r.process_batch([(dev, SEC + i as u64, f.as_slice())], &mut |_, _, _| {});
            prop_assert!(r.worker.stats.balanced(), "{:?}", r.worker.stats);
        }
        prop_assert_eq!(r.worker.stats.rx, frames.len() as u64);
        for k in 2..=80 {
            r.drive(k * SEC, &mut |_, _, _| {});
            prop_assert!(r.worker.stats.balanced());
        }
        prop_assert_eq!(r.worker.pending_len(), (0, 0));
        prop_assert_eq!(r.worker.stats.pending, 0);
        prop_assert!(r.neigh.len() <= neigh::MAX_LEARNED);
    }
}

/// A traced frame that waits for its next hop ends its first trace `pending`; when it leaves the queue, its trace
/// goes on under the same number, marked resumed with the time it waited: forwarded once the advertisement arrives,
/// or dropped as `neigh_unresolved` after the last solicitation. A trace replaced meanwhile gets nothing of the old
/// one's frames.
#[test]
fn a_traced_frame_that_waits_for_its_next_hop_is_traced_to_the_end() {
    use lwt6_dataplane::trace::{Budget, Outcome, Step, TraceFilter, Tracer};
    let arm = |r: &mut Router, n: u64| {
        let budget = Arc::new(Budget::new(n));
        r.worker
            .set_tracer(Some(Tracer::new(TraceFilter::default(), budget, 0)));
    };
    // Resolved: 1 ms after the frame, the advertisement.
    let mut r = router("-6 route add fc00::/16 via fd00:2::2 dev r1\n");
    r.set_resolve(true);
    arm(&mut r, 1);
    run(&mut r, 0, SEC, &[udp6("fc00::1", 64)]);
    let first = r.worker.take_traces();
    assert_eq!(first.len(), 1);
    assert_eq!((first[0].seq, first[0].outcome), (1, Outcome::Pending));
    assert_eq!(first[0].resumed_after_ns, None);
    let adv = na("fd00:2::2", "fd00:2::1", 0x60, Some(D0), D0, R1);
    let out = run(&mut r, 1, SEC + 1_000_000, &[adv]);
    assert_eq!(out.len(), 1);
    let rest = r.worker.take_traces();
    assert_eq!(rest.len(), 1, "{rest:#?}");
    let t = &rest[0];
    assert_eq!(
        (t.seq, t.outcome, t.in_dev.as_str()),
        (1, Outcome::Sent, "r0")
    );
    assert_eq!(t.resumed_after_ns, Some(1_000_000));
    assert!(
        t.steps
            .iter()
            .any(|s| matches!(s, Step::Neighbour { mac: Some(m), .. } if m == "02:00:00:00:02:02")),
        "{t:#?}"
    );
    assert!(matches!(t.steps.last(), Some(Step::Sent { dev, .. }) if dev == "r1"));

    // Never resolved: the third solicitation goes unanswered, the frame is dropped with an address unreachable.
    let mut r = router("-6 route add fc00::/16 via fd00:2::2 dev r1\n");
    r.set_resolve(true);
    arm(&mut r, 1);
    run(&mut r, 0, SEC, &[udp6("fc00::1", 64)]);
    assert_eq!(r.worker.take_traces()[0].outcome, Outcome::Pending);
    for k in 2..=4 {
        drive(&mut r, k * SEC);
    }
    let rest = r.worker.take_traces();
    assert_eq!(rest.len(), 1, "{rest:#?}");
    let t = &rest[0];
    assert_eq!(t.outcome, Outcome::Dropped);
    assert_eq!(t.drop_reason, Some(DropReason::NeighUnresolved));
    assert_eq!(t.resumed_after_ns, Some(3 * SEC));
    assert!(
        t.steps
            .iter()
            .any(|s| matches!(s, Step::Icmp { sent: true, .. })),
        "{t:#?}"
    );

    // Replaced while the frame waits: the new trace does not get the old one's frame.
    let mut r = router("-6 route add fc00::/16 via fd00:2::2 dev r1\n");
    r.set_resolve(true);
    arm(&mut r, 1);
    run(&mut r, 0, SEC, &[udp6("fc00::1", 64)]);
    r.worker.take_traces();
    arm(&mut r, 0);
    let adv = na("fd00:2::2", "fd00:2::1", 0x60, Some(D0), D0, R1);
    assert_eq!(run(&mut r, 1, SEC + 1_000_000, &[adv]).len(), 1);
    assert!(r.worker.take_traces().is_empty());
}

#[test]
fn a_full_table_still_learns_the_answer_to_our_own_solicitation() {
    let cfg = LINKS
        .lines()
        .filter(|l| !l.starts_with("neigh"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut r = Router::build(
        &config::parse(&format!(
            "{cfg}\n-6 route add fc00::/16 via fd00:2::2 dev r1\n"
        ))
        .unwrap(),
    )
    .unwrap();
    r.set_resolve(true);
    let gate = Arc::new(neigh::SolicitGate::default());
    r.worker.solicit_gate = Some(Arc::clone(&gate));
    r.neigh.solicited = Some(gate);
    // 1,024 solicitations from made-up sources of one host (r0's side) fill the table.
    let frames: Vec<Vec<u8>> = (0..neigh::MAX_LEARNED as u32)
        .map(|i| {
            let mac = [2, 0, 0x10, 0, (i >> 8) as u8, i as u8];
            ns(
                &format!("fd00:1::a:{:x}", i),
                "ff02::1:ff00:2",
                "fd00:1::2",
                Some(mac),
                255,
            )
        })
        .collect();
    run(&mut r, 0, SEC, &frames);
    assert_eq!(r.neigh.len(), neigh::MAX_LEARNED);
    // An unconfirmed newcomer and an advertisement nobody asked for are refused.
    run(
        &mut r,
        1,
        SEC + 1,
        &[
            ns("fd00:2::7", "ff02::1:ff00:1", "fd00:2::1", Some(D0), 255),
            na("fd00:2::8", "fd00:2::1", 0x60, Some(D0), D0, R1),
        ],
    );
    assert_eq!((r.neigh.refused, r.neigh.evicted), (2, 0));
    // A packet for the gateway: solicited, answered, learned (the oldest unused entry makes room), forwarded.
    let out = run(&mut r, 0, 2 * SEC, &[udp6("fc00::1", 64)]);
    assert!(is_ns_for(&out[0].1, "fd00:2::2", None));
    let out = run(
        &mut r,
        1,
        2 * SEC + 1000,
        &[na("fd00:2::2", "fd00:2::1", 0x60, Some(D0), D0, R1)],
    );
    assert_eq!(out.len(), 1, "the queued packet was not forwarded");
    assert_eq!(out[0].1[..6], D0);
    assert_eq!((r.neigh.refused, r.neigh.evicted), (2, 1));
    assert_eq!(r.neigh.len(), neigh::MAX_LEARNED);
    assert!(matches!(
        r.neigh.get(1, IpAddr::V6(a6("fd00:2::2"))).unwrap().state,
        State::Reachable { .. }
    ));
    // The evicted entry is gone from the published snapshot too.
    let gone = (0..neigh::MAX_LEARNED as u32)
        .filter(|i| {
            r.snapshot()
                .neighbour(0, IpAddr::V6(a6(&format!("fd00:1::a:{i:x}"))))
                .is_none()
        })
        .count();
    assert_eq!(gone, 1);
}
