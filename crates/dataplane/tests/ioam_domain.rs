//! IOAM domains (docs/ioam.md): interface roles, removal at the egress boundary (inline), decapsulation at the
//! tunnel endpoint (encap), and the export queue. Expected bytes are derived by hand from RFC 8200 §4.2 (option
//! padding, 8-octet header length), RFC 9197 §4.4 (the trace and where a node writes its data) and the layout
//! Linux's ioam6 tunnel builds (docs/references.md §2.1); none is copied from lwt6's output.

use lwt6_config as config;
use lwt6_dataplane::hop::ioam_domain::ExportEvent;
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
sysctl net.ipv6.ioam6_id=0x123456
sysctl net.ipv6.conf.r0.ioam6_enabled=1
ioam namespace add 7
ioam namespace add 8
";

fn router(extra: &str) -> Router {
    let mut r = Router::build(&config::parse(&format!("{BASE}{extra}")).unwrap()).unwrap();
    r.worker.ioam_export.capacity = 16;
    r
}

fn a(s: &str) -> [u8; 16] {
    s.parse::<Ipv6Addr>().unwrap().octets()
}

/// An IPv6 header (flow label 0x12345) from fd00:1::1 to `dst`, then `rest`.
fn ipv6(dst: &str, nh: u8, hlim: u8, rest: &[u8]) -> Vec<u8> {
    let mut p = vec![0x60, 0x01, 0x23, 0x45];
    p.extend((rest.len() as u16).to_be_bytes());
    p.extend([nh, hlim]);
    p.extend(a("fd00:1::1"));
    p.extend(a(dst));
    p.extend(rest);
    p
}

/// UDP 40000 -> 3333, length 8 (a router does not check the checksum).
const UDP: [u8; 8] = [0x9c, 0x40, 0x0d, 0x05, 0, 8, 0, 0];

/// An IOAM pre-allocated trace option (RFC 9197 §4.4) in namespace `ns`: trace type bit 0 (hop limit and node
/// id, NodeLen 1), RemainingLen 2, 8 bytes of zeroed data; option length 2 + 8 + 8 = 18.
fn trace(ns: u16) -> Vec<u8> {
    let mut o = vec![0x31, 18, 0, 0];
    o.extend(ns.to_be_bytes());
    o.extend([0x08, 2, 0x80, 0, 0, 0]);
    o.extend([0; 8]);
    o
}

/// The Hop-by-Hop header Linux's ioam6 tunnel builds around `trace(ns)` (PadN(0) first: the option at 4n).
fn lwt_hbh(nh: u8, ns: u16) -> Vec<u8> {
    let mut h = vec![nh, 2, 1, 0];
    h.extend(trace(ns));
    h
}

fn eth(dst_mac: [u8; 6], src_mac: [u8; 6], ip: &[u8]) -> Vec<u8> {
    let mut f = dst_mac.to_vec();
    f.extend(src_mac);
    f.extend([0x86, 0xdd]);
    f.extend(ip);
    f
}

const R0: [u8; 6] = [2, 0, 0, 0, 1, 2];
const H1: [u8; 6] = [2, 0, 0, 0, 1, 1];
const R1: [u8; 6] = [2, 0, 0, 0, 2, 1];
const H2: [u8; 6] = [2, 0, 0, 0, 2, 2];

fn run(r: &mut Router, dev: usize, frames: &[Vec<u8>]) -> Vec<(usize, Vec<u8>)> {
    let mut out = Vec::new();
    r.process_batch(
        frames.iter().map(|f| (dev, 1_000_000_000u64, f.as_slice())),
        &mut |d, _, b| out.push((d, b.to_vec())),
    );
    assert!(r.worker.stats.balanced());
    out
}

#[test]
fn encap_endpoint_removes_the_outer_header_and_exports_the_filled_trace() {
    let mut r = router("ioam domain add d1 namespace 7 ingress r0 egress r0\n");
    // Outer header to our address fd00:1::2, hop limit 10; Hop-by-Hop next header 41; inner packet to fd00:2::2.
    let inner = ipv6("fd00:2::2", 17, 64, &UDP);
    let mut outer_payload = lwt_hbh(41, 7);
    outer_payload.extend(&inner);
    let f = eth(R0, H1, &ipv6("fd00:1::2", 0, 10, &outer_payload));
    let out = run(&mut r, 0, &[f]);
    assert_eq!(out.len(), 1, "{:?}", r.worker.stats.drops);
    // The inner packet, forwarded by r1 with its hop limit decremented.
    let mut want_ip = inner.clone();
    want_ip[7] = 63;
    assert_eq!(out[0], (1, eth(H2, R1, &want_ip)));
    assert_eq!(r.worker.stats.ioam.decapsulated, 1);
    let recs = r.worker.ioam_export.take();
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0].event, ExportEvent::Decap);
    // The endpoint filled its own data first (RFC 9197 §4.4.1: from the end of the free space): hop limit
    // 10 - 1, node id 0x123456 in the last 4 of the 8 free bytes; RemainingLen 2 -> 1.
    let mut want = trace(7);
    want[7] = 1;
    want[16..20].copy_from_slice(&[9, 0x12, 0x34, 0x56]);
    assert_eq!(recs[0].option, want);
    let flow = recs[0].flow.unwrap();
    assert_eq!(
        (flow.dst, flow.flow_label, flow.proto, flow.ports),
        (
            "fd00:2::2".parse().unwrap(),
            0x12345,
            17,
            Some((40000, 3333))
        )
    );
}

#[test]
fn without_a_domain_the_endpoint_behaves_as_linux() {
    let mut r = router("");
    let mut p = lwt_hbh(41, 7);
    p.extend(ipv6("fd00:2::2", 17, 64, &UDP));
    let out = run(&mut r, 0, &[eth(R0, H1, &ipv6("fd00:1::2", 0, 10, &p))]);
    assert!(out.is_empty());
    assert_eq!(
        r.worker.stats.drops.get(&DropReason::LocalDelivery),
        Some(&1)
    );
}

#[test]
fn inline_trace_leaving_the_domain_is_removed_with_its_header() {
    let mut r = router("ioam domain add d1 namespace 7 ingress r0 egress r0\n");
    let f = eth(
        R0,
        H1,
        &ipv6("fd00:2::2", 0, 64, &[lwt_hbh(17, 7), UDP.to_vec()].concat()),
    );
    let out = run(&mut r, 0, &[f]);
    // r1 is not an egress of d1: the Hop-by-Hop header goes (nothing else in it), next header back to UDP,
    // payload length 8, hop limit 63.
    assert_eq!(out, [(1, eth(H2, R1, &ipv6("fd00:2::2", 17, 63, &UDP)))]);
    assert_eq!(r.worker.stats.ioam.removed, 1);
    let recs = r.worker.ioam_export.take();
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0].event, ExportEvent::Egress);
    assert_eq!(recs[0].out_dev, Some(1));
    assert_eq!(recs[0].option[16..20], [63, 0x12, 0x34, 0x56]);
}

#[test]
fn inline_removal_keeps_other_options_aligned() {
    let mut r = router("ioam domain add d1 namespace 7 ingress r0\n");
    // PadN(0), IOAM (20 bytes, at 4), Router Alert (RFC 2711, at 24), PadN(2): 32 bytes, Hdr Ext Len 3.
    let mut hbh = lwt_hbh(17, 7);
    hbh[1] = 3;
    hbh.extend([5, 2, 0, 0, 1, 2, 0, 0]);
    let f = eth(
        R0,
        H1,
        &ipv6("fd00:2::2", 0, 64, &[hbh, UDP.to_vec()].concat()),
    );
    let out = run(&mut r, 0, &[f]);
    // RFC 8200 §4.2: the 22-byte run (PadN(0) + IOAM) before the Router Alert keeps 22 mod 8 = 6 bytes, so the
    // Router Alert moves from offset 24 to 8 (both 0 mod 8); the 4-byte tail stays: 16 bytes, Hdr Ext Len 1.
    let want_hbh = [17, 1, 1, 4, 0, 0, 0, 0, 5, 2, 0, 0, 1, 2, 0, 0];
    let want = ipv6(
        "fd00:2::2",
        0,
        63,
        &[want_hbh.to_vec(), UDP.to_vec()].concat(),
    );
    assert_eq!(out, [(1, eth(H2, R1, &want))]);
}

#[test]
fn traces_of_other_namespaces_stay() {
    // Namespace 8 is in no domain: Linux's behaviour (filled, forwarded as is); 7 is removed at r1.
    let mut r = router("ioam domain add d1 namespace 7 ingress r0\n");
    let mut hbh = vec![17, 5, 1, 0];
    hbh.extend(trace(8));
    hbh.extend(trace(7));
    hbh.extend([1, 2, 0, 0]);
    assert_eq!(hbh.len(), 48);
    let f = eth(
        R0,
        H1,
        &ipv6("fd00:2::2", 0, 64, &[hbh, UDP.to_vec()].concat()),
    );
    let out = run(&mut r, 0, &[f]);
    // The second trace (20 bytes at 24) and the 4-byte tail are one run of 24: nothing of it stays; the first
    // trace carries r's data (hop limit 63, node id) and the header is 24 bytes, Hdr Ext Len 2.
    let mut want_hbh = vec![17, 2, 1, 0];
    let mut t8 = trace(8);
    t8[7] = 1;
    t8[16..20].copy_from_slice(&[63, 0x12, 0x34, 0x56]);
    want_hbh.extend(t8);
    let want = ipv6("fd00:2::2", 0, 63, &[want_hbh, UDP.to_vec()].concat());
    assert_eq!(out, [(1, eth(H2, R1, &want))]);
    assert_eq!(r.worker.stats.ioam.removed, 1);
}

#[test]
fn foreign_ioam_is_dropped_or_stripped() {
    let f = eth(
        R0,
        H1,
        &ipv6("fd00:2::2", 0, 64, &[lwt_hbh(17, 7), UDP.to_vec()].concat()),
    );
    // r0 is not an ingress of d1.
    let mut r = router("ioam domain add d1 namespace 7 ingress r1 egress r1\n");
    assert!(run(&mut r, 0, std::slice::from_ref(&f)).is_empty());
    assert_eq!(r.worker.stats.drops.get(&DropReason::IoamForeign), Some(&1));
    let mut r = router("ioam domain add d1 namespace 7 ingress r1 egress r1 foreign strip\n");
    let out = run(&mut r, 0, &[f]);
    assert_eq!(out, [(1, eth(H2, R1, &ipv6("fd00:2::2", 17, 63, &UDP)))]);
    assert_eq!(r.worker.stats.ioam.foreign_stripped, 1);
    assert_eq!(r.worker.stats.ioam.removed, 0);
    assert!(
        r.worker.ioam_export.take().is_empty(),
        "foreign traces are not exported"
    );
}

#[test]
fn a_full_export_queue_loses_records_not_packets() {
    let mut r = router("ioam domain add d1 namespace 7 ingress r0\n");
    r.worker.ioam_export.capacity = 2;
    let f = eth(
        R0,
        H1,
        &ipv6("fd00:2::2", 0, 64, &[lwt_hbh(17, 7), UDP.to_vec()].concat()),
    );
    let out = run(&mut r, 0, &vec![f; 5]);
    assert_eq!(out.len(), 5);
    assert_eq!(r.worker.stats.ioam.removed, 5);
    assert_eq!(
        (
            r.worker.stats.ioam.exported,
            r.worker.stats.ioam.export_lost
        ),
        (2, 3)
    );
    assert_eq!(r.worker.ioam_export.take().len(), 2);
}

#[test]
fn transit_export_reports_every_filled_trace() {
    let mut r = router("ioam domain add d1 namespace 7 ingress r0 egress r0,r1\n");
    r.worker.ioam_export.transit = true;
    let f = eth(
        R0,
        H1,
        &ipv6("fd00:2::2", 0, 64, &[lwt_hbh(17, 7), UDP.to_vec()].concat()),
    );
    let out = run(&mut r, 0, &[f]);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].1[14 + 6], 0, "r1 is an egress: the trace stays");
    let recs = r.worker.ioam_export.take();
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0].event, ExportEvent::Transit);
}

#[test]
fn a_route_inserts_several_traces_and_fills_those_it_knows() {
    let mut r = router(
        "-6 route add fd00:9::/64 encap ioam6 mode inline trace prealloc type 0x800000 ns 7 size 8 \
         trace prealloc type 0x840000 ns 9 size 8 trace prealloc type 0x800000 ns 8 size 4 via fd00:2::2 dev r1\n",
    );
    for fast in [true, false] {
        r.worker.fast_path = fast;
        let out = run(&mut r, 0, &[eth(R0, H1, &ipv6("fd00:9::1", 17, 64, &UDP))]);
        // RFC 9486 §3 / RFC 9197 §4.4.1, hand-derived: PadN(0); ns 7 (type bit 0, NodeLen 1, 8 free bytes:
        // option length 18); ns 9 (bits 0 and 5, NodeLen 2, 8 bytes); ns 8 (bit 0, 4 bytes: option length 14).
        // 4 + 20 + 20 + 16 = 60 bytes, so PadN(2) makes 64 (Hdr Ext Len 7). The inserting node writes its data
        // (hop limit 63 after forwarding, node id) into the namespaces it knows (7, 8) at the end of their free
        // space; 9 is not configured here and stays empty.
        let mut hbh = vec![17, 7, 1, 0];
        hbh.extend([
            0x31, 18, 0, 0, 0, 7, 0x08, 1, 0x80, 0, 0, 0, 0, 0, 0, 0, 63, 0x12, 0x34, 0x56,
        ]);
        hbh.extend([
            0x31, 18, 0, 0, 0, 9, 0x10, 2, 0x84, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        ]);
        hbh.extend([
            0x31, 14, 0, 0, 0, 8, 0x08, 0, 0x80, 0, 0, 0, 63, 0x12, 0x34, 0x56,
        ]);
        hbh.extend([1, 2, 0, 0]);
        let mut want = ipv6("fd00:9::1", 0, 63, &[hbh, UDP.to_vec()].concat());
        want[6] = 0;
        assert_eq!(out, [(1, eth(H2, R1, &want))], "fast path {fast}");
    }
    assert_eq!(r.worker.stats.fast_path, 1);
}

/// A Direct Export option (RFC 9326 §3.2) in namespace `ns`: ext flags Flow ID + Sequence Number, trace type
/// bits 0 and 5; option length 2 + 8 + 8 = 18.
fn dex(ns: u16) -> Vec<u8> {
    let mut o = vec![0x31, 18, 0, 4];
    o.extend(ns.to_be_bytes());
    o.extend([0, 0xc0, 0x84, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 9]);
    o
}

#[test]
fn direct_export_sends_this_nodes_data_and_leaves_the_packet() {
    let mut r = router("");
    // PadN(0) then DEX (20 bytes) and POT (type 0, 16 data bytes: 24 bytes) and E2E (12 bytes): 2 + 2 + 20 + 24 +
    // 12 = 60, PadN(2): 64 bytes. Every option starts 4n.
    let mut hbh = vec![17, 7, 1, 0];
    hbh.extend(dex(7));
    hbh.extend([0x31, 22, 0, 2, 0, 7, 0, 0]);
    hbh.extend([0x11; 16]);
    hbh.extend([0x31, 10, 0, 3, 0, 7, 0x80, 0, 0, 0, 0, 5]);
    hbh.extend([1, 2, 0, 0]);
    assert_eq!(hbh.len(), 64);
    let pkt = ipv6("fd00:2::2", 0, 64, &[hbh, UDP.to_vec()].concat());
    let out = run(&mut r, 0, &[eth(R0, H1, &pkt)]);
    // Proof of transit and edge-to-edge are passed untouched, as is the DEX option (RFC 9326 §3.1: the node
    // exports, the packet is not changed).
    let mut want = pkt.clone();
    want[7] = 63;
    assert_eq!(out, [(1, eth(H2, R1, &want))]);
    let recs = r.worker.ioam_export.take();
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0].event, ExportEvent::DirectExport);
    assert_eq!(recs[0].option, dex(7));
    // This node's data for trace type bits 0 and 5: hop limit 63 and node id; namespace 7's data (default
    // all-ones).
    assert_eq!(recs[0].node, [63, 0x12, 0x34, 0x56, 0xff, 0xff, 0xff, 0xff]);
    let j = lwt6_export::json::record(&recs[0], &["r0".into(), "r1".into()]);
    assert_eq!(j["option_type"], "direct_export");
    assert_eq!(
        (j["flow_id"].as_u64(), j["seq"].as_u64()),
        (Some(7), Some(9))
    );
    assert_eq!(j["nodes"][0]["hop_limit"], 63);
    assert_eq!(j["nodes"][0]["ns_data"], 0xffff_ffffu32);
    // A namespace this node does not know: nothing exported.
    let mut r = router("");
    let mut hbh = vec![17, 2, 1, 0];
    hbh.extend(dex(99));
    run(
        &mut r,
        0,
        &[eth(
            R0,
            H1,
            &ipv6("fd00:2::2", 0, 64, &[hbh, UDP.to_vec()].concat()),
        )],
    );
    assert!(r.worker.ioam_export.take().is_empty());
}

/// A route that merges one trace (namespace 7, trace type bit 0, 8 bytes) into a Hop-by-Hop header the packet
/// already has (`hbh merge`, docs/ioam.md).
const MERGE_ROUTE: &str = "-6 route add fd00:9::/64 encap ioam6 mode inline hbh merge \
    trace prealloc type 0x800000 ns 7 size 8 via fd00:2::2 dev r1\n";

/// The trace `MERGE_ROUTE` inserts as the inserting node leaves it: RemainingLen 2 -> 1, its data (hop limit 63
/// after forwarding, node id 0x123456) in the last 4 of the 8 free bytes (RFC 9197 §4.4.1).
fn merged_trace_filled() -> Vec<u8> {
    let mut t = trace(7);
    t[7] = 1;
    t[16..20].copy_from_slice(&[63, 0x12, 0x34, 0x56]);
    t
}

/// Sends a packet to fd00:9::1 whose Hop-by-Hop header is `hbh` through `r`; returns what r1 sent.
fn through(r: &mut Router, hbh: &[u8]) -> Vec<(usize, Vec<u8>)> {
    let pkt = ipv6("fd00:9::1", 0, 64, &[hbh, &UDP[..]].concat());
    run(r, 0, &[eth(R0, H1, &pkt)])
}

fn forwarded(hbh: &[u8]) -> Vec<(usize, Vec<u8>)> {
    vec![(
        1,
        eth(H2, R1, &ipv6("fd00:9::1", 0, 63, &[hbh, &UDP[..]].concat())),
    )]
}

#[test]
fn merge_into_an_existing_header_pads_head_to_4n_and_tail_to_8n() {
    // Hand-derived from RFC 8200 §4.2 / §4.3 and RFC 9486 §3. The header is kept up to the end of its last
    // option that is not padding; padding to the next 4n offset, the 20-byte trace, padding to 8n follow.
    let cases: [(&str, Vec<u8>, Vec<u8>); 4] = [
        (
            // Router Alert (RFC 2711) at 2..6, PadN(0): head PadN(0) to 8, trace 8..28, PadN(2) to 32.
            "router alert",
            vec![17, 0, 5, 2, 0, 0, 1, 0],
            [
                vec![17, 3, 5, 2, 0, 0, 1, 0],
                merged_trace_filled(),
                vec![1, 2, 0, 0],
            ]
            .concat(),
        ),
        (
            // Option 0x1e (skip if unknown) with 3 data bytes at 2..7, Pad1: head Pad1 to 8.
            "head pad1",
            vec![17, 0, 0x1e, 3, 0xa, 0xb, 0xc, 0],
            [
                vec![17, 3, 0x1e, 3, 0xa, 0xb, 0xc, 0],
                merged_trace_filled(),
                vec![1, 2, 0, 0],
            ]
            .concat(),
        ),
        (
            // Option 0x1e with 1 data byte at 2..5, PadN(1): head PadN(1) (3 bytes) to 8.
            "head padn(1)",
            vec![17, 0, 0x1e, 1, 0xa, 1, 1, 0],
            [
                vec![17, 3, 0x1e, 1, 0xa, 1, 1, 0],
                merged_trace_filled(),
                vec![1, 2, 0, 0],
            ]
            .concat(),
        ),
        (
            // Option 0x1e with no data at 2..4, PadN(2): the trace takes its place at 4, 4 + 20 = 24, no tail.
            "no padding needed",
            vec![17, 0, 0x1e, 0, 1, 2, 0, 0],
            [vec![17, 2, 0x1e, 0], merged_trace_filled()].concat(),
        ),
    ];
    for (what, hbh, want) in cases {
        let mut r = router(MERGE_ROUTE);
        let out = through(&mut r, &hbh);
        assert_eq!(out, forwarded(&want), "{what}");
        assert_eq!(
            (r.worker.stats.ioam.merged, r.worker.stats.ioam.not_inserted),
            (1, 0),
            "{what}"
        );
    }
}

#[test]
fn merge_after_another_trace_keeps_it_and_fills_both() {
    // A Linux-built header with a trace of namespace 8 (24 bytes, an option ends it): r fills it in transit (r0
    // has ioam6_enabled; 8 is known), then appends the trace of 7 at 24 (4n already): 44 bytes, PadN(2) to 48.
    let mut r = router(MERGE_ROUTE);
    let out = through(&mut r, &lwt_hbh(17, 8));
    let mut t8 = trace(8);
    t8[7] = 1;
    t8[16..20].copy_from_slice(&[63, 0x12, 0x34, 0x56]);
    let want = [
        vec![17, 5, 1, 0],
        t8,
        merged_trace_filled(),
        vec![1, 2, 0, 0],
    ]
    .concat();
    assert_eq!(out, forwarded(&want));
    assert_eq!(r.worker.stats.ioam_transit_filled, 1);
}

#[test]
fn without_hbh_merge_a_packet_with_a_header_gets_no_ioam_as_in_linux() {
    let route = MERGE_ROUTE.replace(" hbh merge", "");
    let hbh = [17, 0, 5, 2, 0, 0, 1, 0];
    let mut r = router(&route);
    assert_eq!(through(&mut r, &hbh), forwarded(&hbh));
    assert_eq!(
        (r.worker.stats.ioam.merged, r.worker.stats.ioam.not_inserted),
        (0, 1)
    );
    // `hbh skip` says the same.
    let mut r = router(&MERGE_ROUTE.replace("hbh merge", "hbh skip"));
    assert_eq!(through(&mut r, &hbh), forwarded(&hbh));
    // Without a Hop-by-Hop header both insert as Linux does.
    for route in [route.as_str(), MERGE_ROUTE] {
        let mut r = router(route);
        let out = run(&mut r, 0, &[eth(R0, H1, &ipv6("fd00:9::1", 17, 64, &UDP))]);
        let want = [vec![17, 2, 1, 0], merged_trace_filled()].concat();
        assert_eq!(out, forwarded(&want));
    }
}

#[test]
fn merge_refuses_to_make_more_options_than_linux_accepts() {
    // Eight options 0x1e without data (16 bytes at 2..18), PadN(4) to 24: Linux's default max_hbh_opts_number is 8,
    // so a ninth would make the next Linux node drop the packet. It leaves without IOAM, counted.
    let mut hbh = vec![17, 2];
    for _ in 0..8 {
        hbh.extend([0x1e, 0]);
    }
    hbh.extend([1, 4, 0, 0, 0, 0]);
    let mut r = router(MERGE_ROUTE);
    assert_eq!(through(&mut r, &hbh), forwarded(&hbh));
    assert_eq!(
        (r.worker.stats.ioam.merged, r.worker.stats.ioam.not_inserted),
        (0, 1)
    );
    // Seven (2..16, no padding) leave room for the trace: at 16 (already 4n), to 36, PadN(2) to 40.
    let mut hbh = vec![17, 1];
    for _ in 0..7 {
        hbh.extend([0x1e, 0]);
    }
    let mut r = router(MERGE_ROUTE);
    let want = [
        vec![17, 4],
        hbh[2..].to_vec(),
        merged_trace_filled(),
        vec![1, 2, 0, 0],
    ]
    .concat();
    assert_eq!(through(&mut r, &hbh), forwarded(&want));
}

#[test]
fn merge_refuses_to_make_a_header_longer_than_2048_octets() {
    // Seven options 0x1e of 255 data bytes (2..1801), PadN(5) to 1808 (Hdr Ext Len 225); 9000-byte links.
    let jumbo = |extra: &str| {
        let mut r = Router::build(
            &config::parse(&format!(
                "{}{extra}",
                BASE.replace(":01:02\n", ":01:02 mtu 9000\n")
                    .replace(":02:01\n", ":02:01 mtu 9000\n")
            ))
            .unwrap(),
        )
        .unwrap();
        r.worker.ioam_export.capacity = 16;
        r
    };
    let mut hbh = vec![17, 225];
    for i in 0..7u8 {
        hbh.extend([0x1e, 255]);
        hbh.extend([i; 255]);
    }
    hbh.extend([1, 5, 0, 0, 0, 0, 0]);
    assert_eq!(hbh.len(), 1808);
    // A 244-byte trace (a 256-byte option) would start at 1804 (4n) and end at 2060 > 2048 (RFC 8200 §4.3: Hdr
    // Ext Len is one octet): not inserted.
    let mut r = jumbo(&MERGE_ROUTE.replace("size 8", "size 244"));
    assert_eq!(through(&mut r, &hbh), forwarded(&hbh));
    assert_eq!(r.worker.stats.ioam.not_inserted, 1);
    // An 8-byte one (a 20-byte option) fits: at 1804 after PadN(1), to 1824, already 8n (Hdr Ext Len 227).
    let mut r = jumbo(MERGE_ROUTE);
    let want = [
        vec![17, 227],
        hbh[2..1801].to_vec(),
        vec![1, 1, 0],
        merged_trace_filled(),
    ]
    .concat();
    assert_eq!(want.len(), 1824);
    assert_eq!(through(&mut r, &hbh), forwarded(&want));
}

/// A pre-allocated trace (type bit 0) in namespace `ns` with `words` 4-byte words of data: option length
/// 2 + 8 + 4 * words.
fn trace_words(ns: u16, words: u8) -> Vec<u8> {
    let mut o = vec![0x31, 10 + 4 * words, 0, 0];
    o.extend(ns.to_be_bytes());
    o.extend([0x08, words, 0x80, 0, 0, 0]);
    o.extend(vec![0; 4 * usize::from(words)]);
    o
}

#[test]
fn a_trace_larger_than_the_domain_allows_is_dropped_or_stripped() {
    // 12 bytes of data allowed. A Linux-built header with a 16-byte trace: PadN(0), option (28 bytes) = 32.
    let big = [vec![17, 3, 1, 0], trace_words(7, 4)].concat();
    let f = eth(
        R0,
        H1,
        &ipv6("fd00:2::2", 0, 64, &[big, UDP.to_vec()].concat()),
    );
    let dom = "ioam domain add d1 namespace 7 ingress r0 egress r0,r1 maxsize 12";
    let mut r = router(&format!("{dom}\n"));
    assert!(run(&mut r, 0, std::slice::from_ref(&f)).is_empty());
    assert_eq!(
        r.worker.stats.drops.get(&DropReason::IoamOversize),
        Some(&1)
    );
    // Stripped: the header had nothing else, so it goes (as for a foreign trace), and nothing is exported.
    let mut r = router(&format!("{dom} oversize strip\n"));
    let out = run(&mut r, 0, std::slice::from_ref(&f));
    assert_eq!(out, [(1, eth(H2, R1, &ipv6("fd00:2::2", 17, 63, &UDP)))]);
    assert_eq!(
        (
            r.worker.stats.ioam.oversize_stripped,
            r.worker.stats.ioam.foreign_stripped
        ),
        (1, 0)
    );
    assert!(r.worker.ioam_export.take().is_empty());
    // At the limit (12 bytes), it is filled and forwarded; a 16-byte trace of a namespace in no domain too.
    // PadN(0), 24 + 28 option bytes: 56 (Hdr Ext Len 6).
    let mut ok = [vec![17, 2, 1, 0], trace_words(7, 3), trace_words(8, 4)].concat();
    ok[1] = 6;
    assert_eq!(ok.len(), 56);
    let mut r = router(&format!("{dom}\n"));
    let out = run(
        &mut r,
        0,
        &[eth(
            R0,
            H1,
            &ipv6("fd00:2::2", 0, 64, &[ok, UDP.to_vec()].concat()),
        )],
    );
    assert_eq!(out.len(), 1);
    assert_eq!(r.worker.stats.ioam_transit_filled, 2);
    // An incremental trace (IOAM Option-Type 1) counts the same: 16 bytes of node data > 12.
    let mut inc = [vec![17, 3, 1, 0], trace_words(7, 4)].concat();
    inc[7] = 1;
    let mut r = router(&format!("{dom}\n"));
    let g = eth(
        R0,
        H1,
        &ipv6("fd00:2::2", 0, 64, &[inc, UDP.to_vec()].concat()),
    );
    assert!(run(&mut r, 0, &[g]).is_empty());
    assert_eq!(
        r.worker.stats.drops.get(&DropReason::IoamOversize),
        Some(&1)
    );
    // Foreign comes first: on r1 (not an ingress) the same trace is foreign, not oversize.
    let mut r = router(&format!("{dom}\n"));
    let mut f1 = f.clone();
    f1[..6].copy_from_slice(&R1);
    assert!(run(&mut r, 1, &[f1]).is_empty());
    assert_eq!(r.worker.stats.drops.get(&DropReason::IoamForeign), Some(&1));
}

#[test]
fn a_route_larger_than_its_domain_allows_is_refused_by_the_router() {
    let e = config::parse(&format!(
        "{BASE}ioam domain add d1 namespace 7 maxsize 8\n\
         -6 route add fd00:9::/64 encap ioam6 trace prealloc type 0x800000 ns 7 size 12 via fd00:2::2 dev r1\n"
    ))
    .unwrap_err();
    assert_eq!((e.line, e.token.as_str()), (13, "12"), "{e}");
}

#[test]
fn a_route_inserts_a_direct_export_option_and_the_encapsulating_node_exports() {
    let mut r = router(
        "-6 route add fd00:9::/64 encap ioam6 mode inline dex type 0xc00000 ns 7 flowid 0xabcdef seq \
         via fd00:2::2 dev r1\n",
    );
    let f = eth(R0, H1, &ipv6("fd00:9::1", 17, 64, &UDP));
    let out = run(&mut r, 0, &vec![f; 3]);
    assert_eq!(out.len(), 3);
    for (i, (dev, frame)) in out.iter().enumerate() {
        // RFC 9486 §3 / RFC 9326 §3.2, by hand: PadN(0); option 0x31, length 18, Reserved, IOAM Option-Type 4
        // (DEX); Namespace-ID 7; Flags 0; Extension-Flags 0xc0 (Flow ID and Sequence Number follow); trace type
        // 0xc00000 (bits 0 and 1) and a Reserved octet; Flow ID 0x00abcdef; Sequence Number 0, 1, 2 for the
        // packets that carry the option. 4 + 20 = 24 octets: Hdr Ext Len 2, no tail padding.
        let hbh = [
            vec![17, 2, 1, 0],
            vec![0x31, 18, 0, 4, 0, 7, 0, 0xc0, 0xc0, 0, 0, 0],
            vec![0, 0xab, 0xcd, 0xef, 0, 0, 0, i as u8],
        ]
        .concat();
        let mut want = ipv6("fd00:9::1", 0, 63, &[hbh, UDP.to_vec()].concat());
        want[6] = 0;
        assert_eq!((*dev, frame.clone()), (1, eth(H2, R1, &want)), "packet {i}");
    }
    assert_eq!(
        r.worker.stats.fast_path, 0,
        "DEX routes export from the general path"
    );
    // The encapsulating node exports its own data (trace type bits 0 and 1): hop limit 63, node id 0x123456,
    // ingress and egress ids (r0 and r1 have none configured: 0xffff).
    let recs = r.worker.ioam_export.take();
    assert_eq!(recs.len(), 3);
    for (i, rec) in recs.iter().enumerate() {
        assert_eq!(rec.event, ExportEvent::DirectExport);
        assert_eq!(rec.node, [63, 0x12, 0x34, 0x56, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(rec.option[16..20], [0, 0, 0, i as u8]);
        assert_eq!(rec.out_dev, Some(1));
        let j = lwt6_export::json::record(rec, &["r0".into(), "r1".into()]);
        assert_eq!(
            (j["flow_id"].as_u64(), j["seq"].as_u64()),
            (Some(0xab_cdef), Some(i as u64))
        );
    }
}

#[test]
fn direct_export_after_traces_with_sampling_numbers_only_the_packets_that_carry_it() {
    // freq 2/3: of packets 0..6, 0, 1, 3, 4 carry IOAM (Linux's count % 3 < 2); their Sequence Numbers are 0..3.
    let mut r = router(
        "-6 route add fd00:9::/64 encap ioam6 mode inline freq 2/3 trace prealloc type 0x800000 ns 7 size 8 \
         dex type 0x800000 ns 9 seq via fd00:2::2 dev r1\n",
    );
    let f = eth(R0, H1, &ipv6("fd00:9::1", 17, 64, &UDP));
    let out = run(&mut r, 0, &vec![f; 6]);
    let carried: Vec<&Vec<u8>> = out
        .iter()
        .map(|(_, b)| b)
        .filter(|b| b[14 + 6] == 0)
        .collect();
    assert_eq!(carried.len(), 4);
    for (i, b) in carried.iter().enumerate() {
        // PadN(0); the trace (20 octets, filled: namespace 7 is known); DEX without Flow ID (16 octets: Opt Data
        // Len 14, Extension-Flags 0x40); 4 + 20 + 16 = 40 octets, Hdr Ext Len 4, no tail padding.
        let hbh = [
            vec![17, 4, 1, 0],
            merged_trace_filled(),
            vec![
                0x31, 14, 0, 4, 0, 9, 0, 0x40, 0x80, 0, 0, 0, 0, 0, 0, i as u8,
            ],
        ]
        .concat();
        let mut want = ipv6("fd00:9::1", 0, 63, &[hbh, UDP.to_vec()].concat());
        want[6] = 0;
        assert_eq!(&b[14..], &want[..], "packet {i}");
    }
    // Namespace 9 is not configured here: nothing exported.
    assert!(r.worker.ioam_export.take().is_empty());
}
