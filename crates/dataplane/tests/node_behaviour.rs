//! Router behaviours checked against expectations hand-derived from the kernel facts in docs/references.md (and,
//! for the SRH endpoint, the kernel observation of its §4, an SRH addressed to a local address).

use lwt6_config as config;
use lwt6_dataplane::router::Router;
use lwt6_dataplane::stats::DropReason;
use std::net::Ipv6Addr;

const BASE: &str = "
link add r0 address 02:00:00:00:01:02
link add r1 address 02:00:00:00:02:01
addr add fd00:1::2/64 dev r0
addr add fd00:2::1/64 dev r1
neigh add fd00:1::1 lladdr 02:00:00:00:01:01 dev r0
neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1
";

fn router(extra: &str) -> Router {
    Router::build(&config::parse(&format!("{BASE}{extra}")).unwrap()).unwrap()
}

fn a(s: &str) -> [u8; 16] {
    s.parse::<Ipv6Addr>().unwrap().octets()
}

/// Ethernet (to r0) + IPv6 from fd00:1::1 with `ext` extension bytes (first next header `nh`) and 8 bytes of
/// "UDP" (checksum not checked by a router).
fn frame(dst: &str, nh: u8, ext: &[u8], hlim: u8) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 1, 2, 2, 0, 0, 0, 1, 1, 0x86, 0xdd];
    let plen = (ext.len() + 8) as u16;
    f.extend([0x60, 0, 0, 0]);
    f.extend(plen.to_be_bytes());
    f.extend([nh, hlim]);
    f.extend(a("fd00:1::1"));
    f.extend(a(dst));
    f.extend(ext);
    f.extend([0x9c, 0x40, 0x0d, 0x05, 0, 8, 0, 0]);
    f
}

fn run(r: &mut Router, frames: &[Vec<u8>]) -> Vec<(usize, Vec<u8>)> {
    let mut out = Vec::new();
    r.process_batch(
        frames
            .iter()
            .map(|f| (0usize, 1_000_000_000u64, f.as_slice())),
        &mut |d, _, b| out.push((d, b.to_vec())),
    );
    assert!(r.worker.stats.balanced());
    out
}

#[test]
fn ioam_frequency_inserts_the_first_k_of_every_n() {
    let mut r = router(
        "ioam namespace add 7\n\
         -6 route add fd00:98::/64 encap ioam6 freq 2/3 mode inline trace prealloc type 0x800000 ns 7 size 8 via fd00:2::2 dev r1\n",
    );
    let frames: Vec<_> = (0..6).map(|_| frame("fd00:98::1", 17, &[], 64)).collect();
    let out = run(&mut r, &frames);
    let with_hbh: Vec<bool> = out.iter().map(|(_, f)| f[14 + 6] == 0).collect();
    // count % 3 < 2: packets 0, 1 (yes), 2 (no), 3, 4 (yes), 5 (no).
    assert_eq!(with_hbh, [true, true, false, true, true, false]);
}

#[test]
fn ioam_encap_copies_the_forwarded_header_and_fills_own_node() {
    let mut r = router(
        "sysctl net.ipv6.ioam6_id=0x123456\n\
         sysctl net.ipv6.conf.r0.ioam6_id=0x0a0a\n\
         sysctl net.ipv6.conf.r1.ioam6_id=0x0b0b\n\
         ioam namespace add 7 data 0xdeadbeef\n\
         -6 route add fd00:97::/64 encap ioam6 mode encap tundst fd00:2::2 trace prealloc type 0xc40000 ns 7 size 24 dev r1\n",
    );
    let out = run(&mut r, &[frame("fd00:97::1", 17, &[], 64)]);
    assert_eq!(out.len(), 1, "{:?}", r.worker.stats.drops);
    let f = &out[0].1[14..];
    // Outer: copy of the inner header after the decrement (hlim 63), next header 0, DA tundst, SA r1's address.
    assert_eq!(f[6], 0);
    assert_eq!(f[7], 63);
    assert_eq!(&f[8..24], &a("fd00:2::1"));
    assert_eq!(&f[24..40], &a("fd00:2::2"));
    // HBH: next header 41, hdrlen (16 + 24)/8 - 1 = 4, PadN(0), option 0x31 len 10 + 24 = 34.
    assert_eq!(&f[40..48], &[41, 4, 1, 0, 0x31, 34, 0, 0]);
    // Trace header: ns 7, NodeLen 3 (bits 0, 1, 5), remlen 6 - 3 = 3 after our fill, type 0xc40000.
    assert_eq!(&f[48..56], &[0, 7, 3 << 3, 3, 0xc4, 0, 0, 0]);
    // Our node block at the end of the 24 bytes: hlim 63 + id 0x123456, ingress 0x0a0a / egress 0x0b0b, ns data.
    assert_eq!(
        &f[56 + 12..56 + 24],
        &[
            63, 0x12, 0x34, 0x56, 0x0a, 0x0a, 0x0b, 0x0b, 0xde, 0xad, 0xbe, 0xef
        ]
    );
    // The inner packet follows, hop limit 63 as forwarded.
    assert_eq!(f[80] >> 4, 6);
    assert_eq!(f[80 + 7], 63);
    assert_eq!(&f[80 + 24..80 + 40], &a("fd00:97::1"));
}

fn srh(segs: &[&str], sl: u8, nh: u8) -> Vec<u8> {
    let mut s = vec![
        nh,
        (2 * segs.len()) as u8,
        4,
        sl,
        (segs.len() - 1) as u8,
        0,
        0,
        0,
    ];
    for x in segs {
        s.extend(a(x));
    }
    s
}

#[test]
fn srh_endpoint_advances_when_seg6_enabled() {
    // docs/references.md §4: DA fd00:1::2 (local) with SRH [fd00:2::2, fd00:1::2] SL 1 → forwarded, SL 0, DA fd00:2::2.
    let f = frame(
        "fd00:1::2",
        43,
        &srh(&["fd00:2::2", "fd00:1::2"], 1, 17),
        64,
    );
    let mut off = router("");
    assert!(run(&mut off, std::slice::from_ref(&f)).is_empty());
    assert_eq!(
        off.worker.stats.drops.get(&DropReason::Seg6Disabled),
        Some(&1)
    );
    let mut on =
        router("sysctl net.ipv6.conf.all.seg6_enabled=1\nsysctl net.ipv6.conf.r0.seg6_enabled=1\n");
    let out = run(&mut on, &[f]);
    assert_eq!(out.len(), 1, "{:?}", on.worker.stats.drops);
    let p = &out[0].1[14..];
    assert_eq!(&p[24..40], &a("fd00:2::2"));
    assert_eq!(p[7], 63);
    assert_eq!(p[40 + 3], 0, "segments left 0");
}

#[test]
fn srh_endpoint_requires_hmac_when_configured() {
    let f = frame(
        "fd00:1::2",
        43,
        &srh(&["fd00:2::2", "fd00:1::2"], 1, 17),
        64,
    );
    let mut r = router(
        "sysctl net.ipv6.conf.all.seg6_enabled=1\nsysctl net.ipv6.conf.r0.seg6_enabled=1\nsysctl net.ipv6.conf.r0.seg6_require_hmac=1\n",
    );
    assert!(run(&mut r, &[f]).is_empty());
    assert_eq!(r.worker.stats.drops.get(&DropReason::HmacInvalid), Some(&1));
}

#[test]
fn srh_end_of_path_decapsulates_the_inner_packet() {
    // SL 0, next header 41: the inner IPv6 packet (to fd00:2::2) is forwarded on its own.
    let inner = {
        let f = frame("fd00:2::2", 17, &[], 50);
        f[14..].to_vec()
    };
    let mut ext = srh(&["fd00:1::2"], 0, 41);
    ext.extend(&inner[..inner.len() - 8]);
    let mut f = frame("fd00:1::2", 43, &ext, 64);
    // frame() appended 8 "UDP" bytes: they are the inner packet's own 8 trailing bytes.
    let n = f.len();
    f[n - 8..].copy_from_slice(&inner[inner.len() - 8..]);
    let mut r =
        router("sysctl net.ipv6.conf.all.seg6_enabled=1\nsysctl net.ipv6.conf.r0.seg6_enabled=1\n");
    let out = run(&mut r, &[f]);
    assert_eq!(out.len(), 1, "{:?}", r.worker.stats.drops);
    let p = &out[0].1[14..];
    assert_eq!(&p[24..40], &a("fd00:2::2"));
    assert_eq!(p[7], 49, "inner hop limit decremented by forwarding");
    assert_eq!(p.len(), inner.len());
}

#[test]
fn rpl_param_problem_points_at_segments_left() {
    // One address but SL 3 > n + 1: Parameter Problem code 0, pointer = 40 + 3 = 43 (spec §3.4 step 3).
    let mut rh = vec![17, 2, 3, 3, 0, 0, 0, 0];
    rh.extend(a("fd00:2::2"));
    let mut r = router(
        "sysctl net.ipv6.conf.all.rpl_seg_enabled=1\nsysctl net.ipv6.conf.r0.rpl_seg_enabled=1\n",
    );
    let out = run(&mut r, &[frame("fd00:1::2", 43, &rh, 64)]);
    assert_eq!(
        r.worker.stats.drops.get(&DropReason::RplSegmentsLeft),
        Some(&1)
    );
    assert_eq!(out.len(), 1);
    let icmp = &out[0].1[14 + 40..];
    assert_eq!((icmp[0], icmp[1]), (4, 0));
    assert_eq!(u32::from_be_bytes([icmp[4], icmp[5], icmp[6], icmp[7]]), 43);
}

#[test]
fn seg6_flowlabel_one_is_a_stable_per_flow_hash() {
    let mut r = router(
        "sysctl net.ipv6.seg6_flowlabel=1\n-6 route add fc00::/16 via fd00:2::2 dev r1\n\
         -6 route add fd00:92::/64 encap seg6 mode encap segs fc00::a dev r1\n",
    );
    let label = |f: &[u8]| u32::from_be_bytes([f[14], f[15], f[16], f[17]]) & 0xfffff;
    let mut f1 = frame("fd00:92::1", 17, &[], 64);
    let f2 = frame("fd00:92::2", 17, &[], 64);
    let out = run(&mut r, &[f1.clone(), f1.clone(), f2]);
    assert_eq!(out.len(), 3);
    let (a1, a2, b) = (label(&out[0].1), label(&out[1].1), label(&out[2].1));
    assert_eq!(a1, a2, "same flow, same label");
    assert_ne!(a1, b, "different destination, different label");
    // The documented key: src, dst, next header, the first 4 bytes of the upper layer (ports).
    let p = &f1[14..];
    let expect = lwt6_dataplane::tunnel::seg6::flow_hash(&[&p[8..40], &[17], &p[40..44]]);
    assert_eq!(a1, expect);
    // A non-zero inner flow label replaces the ports in the key.
    f1[14 + 3] = 0x45;
    let out = run(&mut r, &[f1.clone()]);
    let p = &f1[14..];
    assert_eq!(
        label(&out[0].1),
        lwt6_dataplane::tunnel::seg6::flow_hash(&[&p[8..40], &0x45u32.to_be_bytes()])
    );
}

// ------------------------------------------------------------------------------------------------
// RPL (RFC 6554): loop detection and a header that shrinks when recompressed

const RPL_ON: &str = "sysctl net.ipv6.conf.all.rpl_seg_enabled=1\nsysctl net.ipv6.conf.r0.rpl_seg_enabled=1\n\
                      neigh add fd00:2::5 lladdr 02:00:00:00:02:02 dev r1\n";

/// A type-3 routing header with every address compressed to its last byte (CmprI = CmprE = 15, RFC 6554 §3): the
/// addresses below all share their first 15 bytes with the destination fd00:2::1.
fn rpl_last_bytes(last: &[u8], sl: u8) -> Vec<u8> {
    let pad = (8 - last.len() % 8) % 8;
    let mut rh = vec![
        17,
        ((last.len() + pad) / 8) as u8,
        3,
        sl,
        0xff,
        (pad as u8) << 4,
        0,
        0,
    ];
    rh.extend(last);
    rh.extend(std::iter::repeat_n(0, pad));
    rh
}

#[test]
fn rpl_loop_local_after_two_locals_preceded_by_a_foreign_address() {
    // Addresses (last bytes, prefix fd00:2::): 5, 1, 1, 6, 1 — the router owns fd00:2::1. The third own address
    // follows two own ones and a foreign one (fd00:2::6): a loop (docs/references.md §3.4 step 6), answered with
    // Parameter Problem code 0 pointer 0 and counted rpl_loop.
    let mut r = router(RPL_ON);
    let out = run(
        &mut r,
        &[frame(
            "fd00:2::1",
            43,
            &rpl_last_bytes(&[5, 1, 1, 6, 1], 5),
            64,
        )],
    );
    assert_eq!(r.worker.stats.drops.get(&DropReason::RplLoop), Some(&1));
    assert_eq!(out.len(), 1, "one ICMPv6 error back to the sender");
    assert_eq!(out[0].0, 0, "sent on r0");
    let p = &out[0].1[14..];
    // RFC 4443 §2.2 (a): sent to our fd00:2::1, answered from it.
    assert_eq!(&p[8..24], &a("fd00:2::1"));
    assert_eq!(&p[24..40], &a("fd00:1::1"));
    let icmp = &p[40..];
    assert_eq!((icmp[0], icmp[1]), (4, 0));
    assert_eq!(u32::from_be_bytes([icmp[4], icmp[5], icmp[6], icmp[7]]), 0);
    // The quote carries Segments Left already decremented (5 -> 4), as Linux quotes it (tests/kernel/test_rpl.py).
    assert_eq!(icmp[8 + 40 + 3], 4);
}

#[test]
fn rpl_loop_when_own_addresses_are_separated_at_all() {
    // 5, 1, 6, 1, 1: Linux's third-occurrence check lets this through (its third own address follows an own one),
    // but two own addresses separated by a foreign one are a loop by RFC 6554 §4.2, which lwt6 follows
    // (docs/linux-compat.md, difference 24): Parameter Problem pointer 0, counted rpl_loop.
    let mut r = router(RPL_ON);
    let out = run(
        &mut r,
        &[frame(
            "fd00:2::1",
            43,
            &rpl_last_bytes(&[5, 1, 6, 1, 1], 5),
            64,
        )],
    );
    assert_eq!(r.worker.stats.drops.get(&DropReason::RplLoop), Some(&1));
    assert_eq!(out.len(), 1, "one ICMPv6 error back to the sender");
    let icmp = &out[0].1[14 + 40..];
    assert_eq!((icmp[0], icmp[1]), (4, 0));
    assert_eq!(u32::from_be_bytes([icmp[4], icmp[5], icmp[6], icmp[7]]), 0);
}

#[test]
fn rpl_no_loop_when_own_addresses_are_adjacent() {
    // 5, 1, 1, 6, 5: the own addresses stand next to each other (no foreign address between them): no loop by
    // either rule; forwarded to fd00:2::5.
    let mut r = router(RPL_ON);
    let out = run(
        &mut r,
        &[frame(
            "fd00:2::1",
            43,
            &rpl_last_bytes(&[5, 1, 1, 6, 5], 5),
            64,
        )],
    );
    assert_eq!(out.len(), 1, "{:?}", r.worker.stats.drops);
    assert_eq!(out[0].0, 1);
    let p = &out[0].1[14..];
    assert_eq!(&p[24..40], &a("fd00:2::5"));
    // The old destination (fd00:2::1) took the place of the address consumed; SL 4; same size (RFC 6554 §4.2).
    assert_eq!(&p[40..48], &[17, 1, 3, 4, 0xff, 3 << 4, 0, 0]);
    assert_eq!(&p[48..53], &[1, 1, 1, 6, 5]);
}

#[test]
fn rpl_header_shrinks_when_the_new_destination_shares_more() {
    // Received: DA fd00:2::1 (ours), addresses [fd00:2::5, fd00:2::2], SL 2, CmprI = CmprE = 8: each address is
    // carried as its last 8 bytes, RH 8 + 8 + 8 = 24 bytes (hdr ext len 2, no pad).
    // RFC 6554 §4.2: SL 1, i = 0: DA := fd00:2::5, address[0] := fd00:2::1. Against the new DA both addresses share
    // 15 bytes: CmprI = CmprE = 15, 1 + 1 bytes, 6 pad bytes, RH 16 bytes (hdr ext len 1, Pad 6). The packet is
    // 8 bytes shorter (payload length 32 -> 24), the rest is unchanged; hop limit 64 -> 63.
    // (Linux 6.18 corrupts the IPv6 header here: docs/references.md §3.4; these bytes follow the RFC.)
    let mut rh = vec![17, 2, 3, 2, 0x88, 0, 0, 0];
    rh.extend(&a("fd00:2::5")[8..]);
    rh.extend(&a("fd00:2::2")[8..]);
    let f = frame("fd00:2::1", 43, &rh, 64);
    let mut r = router(RPL_ON);
    let out = run(&mut r, std::slice::from_ref(&f));
    assert_eq!(out.len(), 1, "{:?}", r.worker.stats.drops);
    let mut want = vec![2, 0, 0, 0, 2, 2, 2, 0, 0, 0, 2, 1, 0x86, 0xdd];
    want.extend([0x60, 0, 0, 0, 0, 24, 43, 63]);
    want.extend(a("fd00:1::1"));
    want.extend(a("fd00:2::5"));
    want.extend([17, 1, 3, 1, 0xff, 0x60, 0, 0, 0x01, 0x02, 0, 0, 0, 0, 0, 0]);
    want.extend(&f[f.len() - 8..]);
    assert_eq!(out[0].1, want);
}

#[test]
fn rpl_header_shrinks_from_uncompressed() {
    // CmprI = CmprE = 0 (two full addresses, 40-byte RH) -> 16 bytes as above: 24 bytes shorter.
    let mut rh = vec![17, 4, 3, 2, 0x00, 0, 0, 0];
    rh.extend(a("fd00:2::5"));
    rh.extend(a("fd00:2::2"));
    let f = frame("fd00:2::1", 43, &rh, 64);
    let mut r = router(RPL_ON);
    let out = run(&mut r, std::slice::from_ref(&f));
    assert_eq!(out.len(), 1, "{:?}", r.worker.stats.drops);
    let p = &out[0].1[14..];
    assert_eq!(p.len(), f.len() - 14 - 24);
    assert_eq!(&p[4..6], &[0, 24]);
    assert_eq!(&p[24..40], &a("fd00:2::5"));
    assert_eq!(
        &p[40..56],
        &[17, 1, 3, 1, 0xff, 0x60, 0, 0, 0x01, 0x02, 0, 0, 0, 0, 0, 0]
    );
}

// ------------------------------------------------------------------------------------------------
// SRH HMAC on receive (RFC 8754 §2.1.2.1), per seg6_require_hmac of the ingress interface

/// HMAC-SHA256 over source | last entry | flags | key id | segments (RFC 8754 §2.1.2.1), computed here.
fn rfc8754_hmac(secret: &[u8], src: &str, srh: &[u8], key_id: u32) -> [u8; 32] {
    use hmac::{Hmac, Mac};
    let le = srh[4] as usize;
    let mut m = Hmac::<sha2::Sha256>::new_from_slice(secret).unwrap();
    m.update(&a(src));
    m.update(&[srh[4], srh[5]]);
    m.update(&key_id.to_be_bytes());
    m.update(&srh[8..8 + 16 * (le + 1)]);
    m.finalize().into_bytes().into()
}

/// SRH [fd00:2::2, fd00:1::2] SL 1 with an HMAC TLV (type 5, length 38, key id, digest) computed with `secret`.
fn srh_hmac_tlv(key_id: u32, secret: &[u8], tamper: bool) -> Vec<u8> {
    let mut s = srh(&["fd00:2::2", "fd00:1::2"], 1, 17);
    s[1] += 5;
    s[5] = 0x08;
    s.extend([5, 38, 0, 0]);
    s.extend(key_id.to_be_bytes());
    s.extend([0; 32]);
    let mut d = rfc8754_hmac(secret, "fd00:1::1", &s, key_id);
    if tamper {
        d[3] ^= 1;
    }
    let n = s.len();
    s[n - 32..].copy_from_slice(&d);
    s
}

#[test]
fn srh_hmac_on_receive_under_each_policy() {
    let variants: [(&str, Vec<u8>); 5] = [
        ("absent", srh(&["fd00:2::2", "fd00:1::2"], 1, 17)),
        ("valid", srh_hmac_tlv(7, b"mysecret", false)),
        ("tampered", srh_hmac_tlv(7, b"mysecret", true)),
        ("wrong secret", srh_hmac_tlv(8, b"mysecret", false)),
        ("unknown key", srh_hmac_tlv(9, b"mysecret", false)),
    ];
    for policy in [-1, 0, 1] {
        let mut r = router(&format!(
            "sysctl net.ipv6.conf.all.seg6_enabled=1\nsysctl net.ipv6.conf.r0.seg6_enabled=1\n\
             sysctl net.ipv6.conf.r0.seg6_require_hmac={policy}\n\
             sr hmac set 7 sha256 secret mysecret\nsr hmac set 8 sha256 secret othersecret\n"
        ));
        for (name, ext) in &variants {
            let before = r
                .worker
                .stats
                .drops
                .get(&DropReason::HmacInvalid)
                .copied()
                .unwrap_or(0);
            let out = run(&mut r, &[frame("fd00:1::2", 43, ext, 64)]);
            let accept = policy < 0 || *name == "valid" || (policy == 0 && *name == "absent");
            let after = r
                .worker
                .stats
                .drops
                .get(&DropReason::HmacInvalid)
                .copied()
                .unwrap_or(0);
            if accept {
                assert_eq!(
                    out.len(),
                    1,
                    "policy {policy}, {name}: {:?}",
                    r.worker.stats.drops
                );
                assert_eq!(&out[0].1[14 + 24..14 + 40], &a("fd00:2::2"));
            } else {
                assert!(out.is_empty(), "policy {policy}, {name}: forwarded");
                assert_eq!(
                    after,
                    before + 1,
                    "policy {policy}, {name}: counted seg6_hmac_invalid"
                );
            }
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Per-route tunsrc over `sr tunsrc`

#[test]
fn per_route_tunsrc_wins_over_sr_tunsrc_and_is_covered_by_the_hmac() {
    // Linux (docs/references.md §1.2): the outer source is the route's tunsrc when it has one, else `sr tunsrc`,
    // else an address of the egress interface. The HMAC text starts with that source (RFC 8754 §2.1.2.1).
    let mut r = router(
        "-6 route add fc00::/16 via fd00:2::2 dev r1\n\
         sr tunsrc set fc00:ffff::1\n\
         sr hmac set 7 sha256 secret mysecret\n\
         -6 route add fd00:91::/64 encap seg6 mode encap segs fc00::a,fc00::b hmac 7 tunsrc fc00:eeee::2 dev r1\n\
         -6 route add fd00:92::/64 encap seg6 mode encap segs fc00::a,fc00::b hmac 7 dev r1\n",
    );
    let out = run(
        &mut r,
        &[
            frame("fd00:91::1", 17, &[], 64),
            frame("fd00:92::1", 17, &[], 64),
        ],
    );
    assert_eq!(out.len(), 2, "{:?}", r.worker.stats.drops);
    for ((_, f), src) in out.iter().zip(["fc00:eeee::2", "fc00:ffff::1"]) {
        let p = &f[14..];
        assert_eq!(&p[8..24], &a(src), "outer source");
        assert_eq!(&p[24..40], &a("fc00::a"));
        // SRH [fc00::b, fc00::a] + HMAC TLV: hdr ext len 4 + 5, flags 0x08
        let s = &p[40..40 + 80];
        assert_eq!(&s[..8], &[41, 9, 4, 1, 1, 0x08, 0, 0]);
        assert_eq!(&s[40..48], &[5, 38, 0, 0, 0, 0, 0, 7]);
        assert_eq!(
            s[48..80],
            rfc8754_hmac(b"mysecret", src, s, 7),
            "HMAC over {src}"
        );
    }
}
