//! The MTU check at its boundary, for every tunnel kind: a packet whose size after the tunnel is exactly the egress
//! MTU leaves, one byte more is dropped `mtu_exceeded`. What "the size after the tunnel" is, is derived here by
//! hand from the layouts (RFC 8200 §3, RFC 8754 §2, RFC 6554 §3, RFC 9197 §4.4 with Linux's 8-byte alignment,
//! and the seg6 modes of docs/references.md §1.4), never from lwt6's output. Linux checks the outer IPv6 packet
//! in `ip6_forward`; for the seg6 l2 modes that packet carries the whole received Ethernet frame, its 14-byte
//! header included (measured on Linux 6.18: tests/kernel/test_mtu.py). Each packet goes through the router with
//! the fast path on and off: both must do the same.

use lwt6_config as config;
use lwt6_dataplane::router::Router;
use lwt6_dataplane::stats::DropReason;
use std::net::Ipv6Addr;

const CONF: &str = "
link add r0 address 02:00:00:00:01:02 mtu 1600
link add r1 address 02:00:00:00:02:01 mtu 1500
addr add fd00:1::2/64 dev r0
addr add fd00:2::1/64 dev r1
addr add 10.1.0.2/24 dev r0
addr add 10.2.0.1/24 dev r1
neigh add fd00:1::1 lladdr 02:00:00:00:01:01 dev r0
neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1
neigh add 10.1.0.1 lladdr 02:00:00:00:01:01 dev r0
-6 route add fc00::/16 via fd00:2::2 dev r1
-6 route add fd00:91::/64 encap seg6 mode inline segs fc00::a,fc00::b dev r1
-6 route add fd00:92::/64 encap seg6 mode encap segs fc00::a,fc00::b dev r1
-6 route add fd00:93::/64 encap seg6 mode encap.red segs fc00::a,fc00::b dev r1
-6 route add fd00:94::/64 encap seg6 mode l2encap segs fc00::a,fc00::b dev r1
-6 route add fd00:95::/64 encap seg6 mode l2encap.red segs fc00::a,fc00::b dev r1
-6 route add fd00:96::/64 encap seg6 mode encap.red segs fc00::a dev r1
-6 route add fd00:97::/64 encap seg6 mode l2encap.red segs fc00::a dev r1
-4 route add 10.92.0.0/24 encap seg6 mode encap segs fc00::a,fc00::b dev r1
-4 route add 10.94.0.0/24 encap seg6 mode l2encap segs fc00::a,fc00::b dev r1
-4 route add 10.95.0.0/24 encap seg6 mode l2encap.red segs fc00::a dev r1
ioam namespace add 123 data 0xdeadbeef
-6 route add fd00:a0::/64 encap ioam6 mode inline trace prealloc type 0x800000 ns 123 size 8 via fd00:2::2 dev r1
-6 route add fd00:a1::/64 encap ioam6 mode encap tundst fc00::1 trace prealloc type 0x800000 ns 123 size 8 dev r1
-6 route add fd00:98::/64 encap rpl segs fc00::a,fc00::b dev r1
-6 route add fc00:5::/32 encap rpl segs fc00:5::a,fc00:6::b dev r1
-6 route add fc00:5::a/128 via fd00:2::2 dev r1
-6 route add fd00:99::/64 via fd00:2::2 dev r1
";

const MTU: usize = 1500;
const E: usize = 14;

// r0's MTU is larger than r1's, so that every packet here is received (a frame over the ingress MTU is dropped
// `frame_too_long` before any route is looked up) and only the egress check decides.

/// The bytes each route adds to the IPv6 packet it forwards (`growth`), by hand.
fn routes() -> Vec<(&'static str, &'static str, usize)> {
    // SRH (RFC 8754 §2): 8 bytes + 16 per segment. Outer IPv6 header: 40. With 2 SIDs:
    let srh2 = 8 + 16 * 2;
    vec![
        // Plain forwarding: nothing added.
        ("plain", "fd00:99::1", 0),
        // inline: an SRH listing both SIDs and the original destination (3 entries), no outer header.
        ("inline", "fd00:91::1", 8 + 16 * 3),
        ("encap", "fd00:92::1", 40 + srh2),
        // encap.red: the first SID travels only in the destination address.
        ("encap.red", "fd00:93::1", 40 + 8 + 16),
        // The l2 modes: the same headers, and the received Ethernet header kept in front of the inner packet.
        ("l2encap", "fd00:94::1", 40 + srh2 + E),
        ("l2encap.red", "fd00:95::1", 40 + 8 + 16 + E),
        // encap.red / l2encap.red with one SID: no SRH at all.
        ("encap.red 1 SID", "fd00:96::1", 40),
        ("l2encap.red 1 SID", "fd00:97::1", 40 + E),
        // ioam6 (RFC 9197 §4.4 in a Hop-by-Hop header, RFC 8200 §4.3): 2 bytes of header, PadN(0) 2, option type
        // and length 2, IOAM option header 2, trace header 8 = 16, then the 8 bytes of pre-allocated data.
        ("ioam6 inline", "fd00:a0::1", 16 + 8),
        ("ioam6 encap", "fd00:a1::1", 40 + 16 + 8),
        // RPL (RFC 6554 §3) to fd00:98::1 by fc00::a: 8 bytes, fc00::b elided to 1 byte (CmprI 15 against the new
        // destination fc00::a), the original destination in full (CmprE 0), 7 bytes of padding to 32.
        ("rpl", "fd00:98::1", 8 + 1 + 16 + 7),
        // RPL to fc00:5::1 by fc00:5::a: fc00:6::b shares 3 bytes with fc00:5::a (CmprI 3: 13 bytes), the
        // original destination shares 15 (CmprE 15: 1 byte), 2 bytes of padding to 24.
        ("rpl per packet", "fc00:5::1", 8 + 13 + 1 + 2),
    ]
}

/// IPv4 routes (encapsulating modes only: Linux refuses inline for IPv4): the bytes each adds.
fn routes4() -> Vec<(&'static str, [u8; 4], usize)> {
    vec![
        ("encap", [10, 92, 0, 1], 40 + 8 + 16 * 2),
        ("l2encap", [10, 94, 0, 1], 40 + 8 + 16 * 2 + E),
        ("l2encap.red 1 SID", [10, 95, 0, 1], 40 + E),
    ]
}

fn router(fast: bool) -> Router {
    let mut r = Router::build(&config::parse(CONF).unwrap()).unwrap();
    r.worker.fast_path = fast;
    r
}

/// An Ethernet frame from the sender to r0 holding a UDP packet in IPv6 of `len` bytes (IPv6 header included).
fn udp6(dst: &str, len: usize) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 1, 2, 2, 0, 0, 0, 1, 1, 0x86, 0xdd];
    f.extend([0x60, 0, 0, 0]);
    f.extend(((len - 40) as u16).to_be_bytes());
    f.extend([17, 64]);
    f.extend("fd00:1::1".parse::<Ipv6Addr>().unwrap().octets());
    f.extend(dst.parse::<Ipv6Addr>().unwrap().octets());
    f.extend([0x9c, 0x40, 0x0d, 0x05]);
    f.extend(((len - 40) as u16).to_be_bytes());
    f.extend([0, 0]);
    f.extend((0..len - 48).map(|i| i as u8));
    f
}

/// An Ethernet frame holding a UDP datagram in IPv4 of `len` bytes, with DF set.
fn udp4(dst: [u8; 4], len: usize) -> Vec<u8> {
    let mut h = vec![0x45, 0];
    h.extend((len as u16).to_be_bytes());
    h.extend([0, 1, 0x40, 0, 64, 17, 0, 0, 10, 1, 0, 1]);
    h.extend(dst);
    // RFC 791 header checksum: one's complement of the one's complement sum of the header's 16-bit words.
    let sum = h
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum::<u32>();
    let sum = (sum & 0xffff) + (sum >> 16);
    h[10..12].copy_from_slice(&(!((sum & 0xffff) + (sum >> 16)) as u16).to_be_bytes());
    let mut f = vec![2, 0, 0, 0, 1, 2, 2, 0, 0, 0, 1, 1, 0x08, 0x00];
    f.extend(h);
    f.extend([0x9c, 0x40, 0x0d, 0x05]);
    f.extend(((len - 20) as u16).to_be_bytes());
    f.extend([0, 0]);
    f.extend((0..len - 28).map(|i| i as u8));
    f
}

/// What one frame made the router do: the frames sent (device, bytes) and the drops by reason.
type Outcome = (Vec<(usize, Vec<u8>)>, Vec<(DropReason, u64)>);

/// One frame through the router, fast path on and off: what it did, which must be the same both ways.
fn run(frame: &[u8]) -> Outcome {
    run_counting(frame).0
}

/// [`run`], and whether the fast path took the frame.
fn run_counting(frame: &[u8]) -> (Outcome, bool) {
    let mut took = false;
    let [fast, slow] = [true, false].map(|fast| {
        let mut r = router(fast);
        let mut out = Vec::new();
        r.process_batch([(0usize, 0u64, frame)], &mut |d, _, b| {
            out.push((d, b.to_vec()))
        });
        assert!(r.worker.stats.balanced());
        took |= r.worker.stats.fast_path == 1;
        let drops: Vec<_> = r.worker.stats.drops.iter().collect();
        (out, drops)
    });
    assert_eq!(fast, slow, "the fast path and the general path differ");
    (fast, took)
}

#[test]
fn ipv6_exactly_the_mtu_leaves_one_byte_more_is_too_big() {
    for (name, dst, growth) in routes() {
        // Exactly 1500 bytes once the tunnel is applied: one frame of 14 + 1500 bytes on r1.
        let fits = MTU - growth;
        let ((out, drops), fast) = run_counting(&udp6(dst, fits));
        assert_eq!(drops, [], "{name}: {fits} + {growth} bytes");
        // Routes with a forwarding plan send it by the fast path: the plan's limit is the same. (The l2 modes
        // have no plan.)
        assert_eq!(
            fast,
            !name.starts_with("l2"),
            "{name}: taken by the fast path"
        );
        assert_eq!(out.len(), 1, "{name}");
        assert_eq!((out[0].0, out[0].1.len()), (1, E + MTU), "{name}");
        assert_eq!(
            usize::from(u16::from_be_bytes([out[0].1[E + 4], out[0].1[E + 5]])),
            MTU - 40,
            "{name}: outer payload length"
        );
        // One byte over; and the 14 bytes over that an l2 mode's check would miss if it forgot the Ethernet
        // header it keeps; and 15.
        for over in [1, 14, 15] {
            let input = udp6(dst, fits + over);
            let (out, drops) = run(&input);
            assert_eq!(drops, [(DropReason::MtuExceeded, 1)], "{name} +{over}");
            // lwt6 tells the sender (docs/linux-compat.md, deliberate difference 1): Packet Too Big on r0 to
            // fd00:1::1 with the largest packet that fits (1500 - growth, not below 1280), quoting its packet.
            assert_eq!(out.len(), 1, "{name} +{over}: one ICMPv6 error");
            let (dev, icmp) = (&out[0].0, &out[0].1[E..]);
            assert_eq!(*dev, 0, "{name} +{over}: back to the sender");
            assert_eq!(
                &icmp[24..40],
                &"fd00:1::1".parse::<Ipv6Addr>().unwrap().octets()
            );
            assert_eq!((icmp[6], icmp[40], icmp[41]), (58, 2, 0), "{name}");
            let mtu = u32::from_be_bytes(icmp[44..48].try_into().unwrap());
            assert_eq!(mtu as usize, fits.max(1280), "{name} +{over}: reported MTU");
            assert_eq!(
                &icmp[48..88],
                &input[E..E + 40],
                "{name}: quotes the packet"
            );
        }
    }
}

#[test]
fn ipv4_exactly_the_mtu_leaves_one_byte_more_is_dropped_silently() {
    for (name, dst, growth) in routes4() {
        let fits = MTU - growth;
        let (out, drops) = run(&udp4(dst, fits));
        assert_eq!(drops, [], "{name}");
        assert_eq!(out.len(), 1, "{name}");
        assert_eq!((out[0].0, out[0].1.len()), (1, E + MTU), "{name}");
        for over in [1, 14, 15] {
            // Linux: the outer IPv6 packet is too big for ip6_forward, whose error goes to the outer source
            // (the router itself); no ICMPv4 to the sender, DF or not. lwt6 drops it without an error too.
            let (out, drops) = run(&udp4(dst, fits + over));
            assert_eq!(drops, [(DropReason::MtuExceeded, 1)], "{name} +{over}");
            assert_eq!(out, [], "{name} +{over}");
        }
    }
}

/// The case reported with the packet tracer: a 1410-byte IPv6 packet to an l2encap route with two SIDs would be
/// a 40 + 40 + 14 + 1410 = 1504-byte IPv6 packet (a 1518-byte frame) on the MTU-1500 link.
#[test]
fn l2encap_of_1410_bytes_does_not_leave_as_a_1504_byte_packet() {
    let (out, drops) = run(&udp6("fd00:94::1", 1410));
    assert_eq!(drops, [(DropReason::MtuExceeded, 1)]);
    assert!(out.iter().all(|(d, _)| *d == 0), "nothing on r1");
    // And 1406 bytes make exactly 1500: sent, carrying the whole received frame after the outer headers.
    let input = udp6("fd00:94::1", 1406);
    let (out, drops) = run(&input);
    assert_eq!(drops, []);
    assert_eq!(out[0].1.len(), E + 1500);
    assert_eq!(&out[0].1[E + 40 + 40..], &input[..]);
}
