//! End-to-end golden tests: lwt6 output compared with frames the Linux 6.18 kernel produced for the same input
//! and configuration (captured by the oracle scripts, `tests/data/srh_kernel.pcap`; see docs/references.md §1.4).
//!
//! The capture holds, in order, the kernel's output for modes inline, encap, l2encap, encap.red, l2encap.red with
//! `segs fc00::a,fc00::b,fc00::c`, then `encap segs fc00::a,fc00::b hmac 42` (sha256, secret "mysecret").
//! The input frame is not in the capture, but the kernel's l2encap output carries it verbatim
//! (docs/references.md §1.4: the inner Ethernet frame is carried intact), so it is recovered from there.

use lwt6_config::*;
use lwt6_dataplane::router::Router;
use lwt6_dataplane::wire::srh::HmacAlgo;
use lwt6_io::pcap;
use std::net::Ipv6Addr;

const KERNEL: &[u8] = include_bytes!("../../../tests/data/srh_kernel.pcap");

fn a(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

fn topology(encap: Encap) -> Config {
    let mut c = Config::default();
    let link = |name: &str, mac: [u8; 6], line| Link {
        name: name.into(),
        mac: Some(mac),
        mtu: 1500,
        line,
    };
    c.links.push(link("r0", [2, 0, 0, 0, 1, 2], 1));
    c.links.push(link("r1", [2, 0, 0, 0, 2, 1], 2));
    c.addrs.push(Addr {
        addr: "fd00:1::2".parse().unwrap(),
        prefix_len: 64,
        dev: "r0".into(),
        line: 3,
    });
    c.addrs.push(Addr {
        addr: "fd00:2::1".parse().unwrap(),
        prefix_len: 64,
        dev: "r1".into(),
        line: 4,
    });
    c.neighs.push(Neigh {
        addr: "fd00:2::2".parse().unwrap(),
        lladdr: [2, 0, 0, 0, 2, 2],
        dev: "r1".into(),
        line: 5,
    });
    c.neighs.push(Neigh {
        addr: "fd00:1::1".parse().unwrap(),
        lladdr: [2, 0, 0, 0, 1, 1],
        dev: "r0".into(),
        line: 6,
    });
    let route = |prefix: &str, via: Option<&str>, encap, line| Route {
        reject: None,
        prefix: prefix.parse().unwrap(),
        via: via.map(|v| v.parse().unwrap()),
        dev: Some("r1".into()),
        metric: 1024,
        mtu: None,
        encap,
        table: 254,
        line,
    };
    c.routes
        .push(route("fc00::/16", Some("fd00:2::2"), None, 7));
    c.routes
        .push(route("fd00:99::/64", None, Some(Box::new(encap)), 8));
    c.hmac_keys.push(HmacKey {
        key_id: 42,
        algo: HmacAlgo::Sha256,
        secret: b"mysecret".to_vec(),
    });
    c
}

fn seg6(mode: Seg6Mode, segs: &[&str], hmac: Option<u32>) -> Encap {
    Encap::Seg6(Seg6Encap {
        mode,
        segs: segs.iter().map(|s| a(s)).collect(),
        hmac,
        tunsrc: None,
    })
}

fn run(cfg: &Config, input: &[u8]) -> (Router, Vec<(usize, Vec<u8>)>) {
    let mut r = Router::build(cfg).unwrap();
    let mut out = Vec::new();
    r.process_batch([(0usize, 0u64, input)], &mut |d, _, b| {
        out.push((d, b.to_vec()))
    });
    assert!(r.worker.stats.balanced());
    (r, out)
}

fn kernel_frames() -> Vec<Vec<u8>> {
    pcap::read_capture(KERNEL)
        .unwrap()
        .into_iter()
        .map(|f| f.data)
        .collect()
}

fn input_frame() -> Vec<u8> {
    // l2encap output: 14 (outer eth) + 40 (outer IPv6) + 56 (SRH with 3 segments) then the received frame.
    let l2 = &kernel_frames()[2];
    assert_eq!(l2[14 + 40], 143, "SRH next header is Ethernet");
    l2[14 + 40 + 56..].to_vec()
}

fn hex(b: &[u8]) -> String {
    b.chunks(16)
        .map(|c| {
            c.iter()
                .map(|x| format!("{x:02x}"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn check(idx: usize, encap: Encap) {
    let kernel = &kernel_frames()[idx];
    let (r, out) = run(&topology(encap), &input_frame());
    assert_eq!(
        out.len(),
        1,
        "one frame out; drops: {:?}",
        r.worker.stats.drops
    );
    assert_eq!(out[0].0, 1, "leaves on r1");
    assert_eq!(
        out[0].1,
        *kernel,
        "\nlwt6:\n{}\nkernel:\n{}",
        hex(&out[0].1),
        hex(kernel)
    );
    assert_eq!(
        r.worker.stats.reallocs, 0,
        "default rx headroom: no reallocation"
    );
}

const SEGS: &[&str] = &["fc00::a", "fc00::b", "fc00::c"];

#[test]
fn inline_matches_kernel() {
    check(0, seg6(Seg6Mode::Inline, SEGS, None));
}

#[test]
fn encap_matches_kernel() {
    check(1, seg6(Seg6Mode::Encap, SEGS, None));
}

#[test]
fn l2encap_matches_kernel() {
    check(2, seg6(Seg6Mode::L2Encap, SEGS, None));
}

#[test]
fn encap_red_matches_kernel() {
    check(3, seg6(Seg6Mode::EncapRed, SEGS, None));
}

#[test]
fn l2encap_red_matches_kernel() {
    check(4, seg6(Seg6Mode::L2EncapRed, SEGS, None));
}

#[test]
fn encap_hmac_sha256_matches_kernel() {
    check(5, seg6(Seg6Mode::Encap, &["fc00::a", "fc00::b"], Some(42)));
}

#[test]
fn tiny_headroom_reallocates_exactly_once() {
    let mut r = Router::build(&topology(seg6(Seg6Mode::Encap, SEGS, None))).unwrap();
    r.worker.rx_headroom = 0;
    let input = input_frame();
    let mut out = Vec::new();
    r.process_batch(
        [(0usize, 0u64, input.as_slice()), (0, 0, input.as_slice())],
        &mut |_, _, b| out.push(b.to_vec()),
    );
    assert_eq!(out.len(), 2);
    assert_eq!(out[0], kernel_frames()[1]);
    assert_eq!(r.worker.stats.reallocs, 2, "one per packet, never two");
}

#[test]
fn hop_limit_one_is_time_exceeded_to_the_sender() {
    let mut input = input_frame();
    input[14 + 7] = 1;
    let (r, out) = run(&topology(seg6(Seg6Mode::Encap, SEGS, None)), &input);
    assert_eq!(
        r.worker
            .stats
            .drops
            .get(&lwt6_dataplane::stats::DropReason::HopLimitExceeded),
        Some(&1)
    );
    assert_eq!(out.len(), 1, "an ICMPv6 error");
    let (dev, icmp) = &out[0];
    assert_eq!(*dev, 0, "back out of r0 towards the sender");
    assert_eq!(&icmp[0..6], &[2, 0, 0, 0, 1, 1]);
    assert_eq!(
        &icmp[14 + 24..14 + 40],
        &a("fd00:1::1").octets(),
        "to the original sender"
    );
    assert_eq!(icmp[14 + 40], 3, "Time Exceeded");
    // The invoking packet is quoted from its IPv6 header on.
    assert_eq!(&icmp[14 + 48..14 + 48 + 40], &input[14..14 + 40]);
}

#[test]
fn over_mtu_is_packet_too_big_to_the_sender_with_the_tunnel_mtu() {
    let mut cfg = topology(seg6(Seg6Mode::Encap, SEGS, None));
    cfg.links[1].mtu = 1280;
    let mut input = input_frame();
    // Grow the UDP payload so inner 1200 + 96 bytes of tunnel exceed 1280.
    let extra = 1200 - (input.len() - 14);
    input.extend(std::iter::repeat_n(0u8, extra));
    let plen = (1200 - 40) as u16;
    input[14 + 4..14 + 6].copy_from_slice(&plen.to_be_bytes());
    let (r, out) = run(&cfg, &input);
    assert_eq!(
        r.worker
            .stats
            .drops
            .get(&lwt6_dataplane::stats::DropReason::MtuExceeded),
        Some(&1)
    );
    assert_eq!(out.len(), 1);
    let icmp = &out[0].1[14..];
    assert_eq!(&icmp[24..40], &a("fd00:1::1").octets());
    assert_eq!(icmp[40], 2, "Packet Too Big");
    // 1280 - (40 outer + 56 SRH) = 1184 would be below the IPv6 minimum, so the report is clamped to 1280.
    assert_eq!(
        u32::from_be_bytes([icmp[44], icmp[45], icmp[46], icmp[47]]),
        1280
    );
}

/// The Linux buffer strategies reproduce the double reallocation with i40e's headroom (docs/references.md §5.2):
/// H0 = 206 at the IPv6 header, i.e. 192 in front of the Ethernet header. seg6 encap with 13 SIDs (O = 256)
/// reallocates twice before the fix and once after; 12 SIDs (O = 240) once in both; lwt6 never.
#[test]
fn linux_strategies_reproduce_the_double_reallocation() {
    use lwt6_lab::analysis::skb::BufferStrategy;
    for (n, pre, post) in [(13usize, 2u64, 1u64), (12, 1, 1), (17, 2, 1), (2, 0, 0)] {
        let segs: Vec<String> = (1..=n).map(|i| format!("fc00::{i:x}")).collect();
        let refs: Vec<&str> = segs.iter().map(String::as_str).collect();
        for (strategy, want) in [
            (BufferStrategy::LinuxPreFix { cache_line: 64 }, pre),
            (BufferStrategy::LinuxPostFix { cache_line: 64 }, post),
            (BufferStrategy::Native, 0),
        ] {
            let mut r = Router::build(&topology(seg6(Seg6Mode::Encap, &refs, None))).unwrap();
            if strategy != BufferStrategy::Native {
                r.worker.rx_headroom = 192;
            }
            strategy.install(&mut r);
            let input = input_frame();
            let mut out = Vec::new();
            r.process_batch([(0usize, 0u64, input.as_slice())], &mut |_, _, b| {
                out.push(b.to_vec())
            });
            assert_eq!(
                out.len(),
                1,
                "{n} SIDs {strategy:?}: {:?}",
                r.worker.stats.drops
            );
            assert_eq!(r.worker.stats.reallocs, want, "{n} SIDs {strategy:?}");
        }
    }
}
