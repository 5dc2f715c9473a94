//! Routes this kernel cannot hold (it has no `ioam6` or `rpl` lightweight tunnels) decoded from messages built
//! with netlink-packet-route's types, the attribute values hand-derived from the `ip route` command that would make
//! them (ip-route(8); include/uapi/linux/ioam6.h, rpl.h): the decoded route and its configuration line, which
//! lwt6's own parser must read back into the same route. No root needed.

use std::net::Ipv6Addr;

use lwt6_dataplane::spec::{
    Encap, Ioam6Encap, IoamMode, IoamTraceSpec, RplEncap, Seg6Encap, Seg6Mode,
};
use lwt6_netlink::{KernelEncap, KernelRoute};
use netlink_packet_route::AddressFamily;
use netlink_packet_route::route::{
    Ioam6Mode, Ioam6TraceHdr, RouteAddress, RouteAttribute, RouteHeader, RouteIoam6Tunnel,
    RouteLwEnCapType, RouteLwTunnelEncap, RouteMessage, RouteRplIpTunnel, RouteSeg6IpTunnel,
    RouteType, RplSrh, Seg6Header, Seg6Mode as NlSeg6Mode,
};

fn v6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

fn message(
    prefix: &str,
    len: u8,
    kind: RouteLwEnCapType,
    encap: Vec<RouteLwTunnelEncap>,
) -> RouteMessage {
    let mut m = RouteMessage::default();
    m.header = RouteHeader {
        address_family: AddressFamily::Inet6,
        destination_prefix_length: len,
        table: RouteHeader::RT_TABLE_MAIN,
        kind: RouteType::Unicast,
        ..Default::default()
    };
    m.attributes = vec![
        RouteAttribute::Destination(RouteAddress::Inet6(v6(prefix))),
        RouteAttribute::Oif(1), // the loopback interface: index 1 in every namespace
        RouteAttribute::Priority(1024),
        RouteAttribute::EncapType(kind),
        RouteAttribute::Encap(encap),
    ];
    m
}

/// The line parsed by lwt6-config gives back the decoded route.
fn reparsed(r: &KernelRoute) -> lwt6_dataplane::spec::Route {
    let cfg = lwt6_config::parse(&format!("link add lo\n{}", r.to_line()))
        .unwrap_or_else(|e| panic!("{}: {e}", r.to_line()));
    assert_eq!(cfg.routes.len(), 1, "{}", r.to_line());
    cfg.routes[0].clone()
}

#[test]
fn ioam6_route() {
    // ip -6 route add fc00:8::/64 encap ioam6 mode encap tundst fc00::1 freq 2/5
    //     trace prealloc type 0x800000 ns 7 size 12
    let mut trace = Ioam6TraceHdr::default();
    trace.namespace_id = 7;
    trace.remlen = 3; // size 12 bytes = 3 four-octet words
    trace.trace_type = 0x80_0000; // bit 0 of the 24-bit trace type: hop limit and node id
    let encap = [
        RouteIoam6Tunnel::Mode(Ioam6Mode::Encap),
        RouteIoam6Tunnel::Dst(v6("fc00::1")),
        RouteIoam6Tunnel::FreqK(2),
        RouteIoam6Tunnel::FreqN(5),
        RouteIoam6Tunnel::Trace(trace),
    ];
    let m = message(
        "fc00:8::",
        64,
        RouteLwEnCapType::Ioam6,
        encap.into_iter().map(RouteLwTunnelEncap::Ioam6).collect(),
    );
    let r = KernelRoute::from_message(&m).unwrap();
    let want = Encap::Ioam6(Ioam6Encap {
        mode: IoamMode::Encap,
        tunsrc: None,
        tundst: Some(v6("fc00::1")),
        freq_k: 2,
        freq_n: 5,
        traces: vec![IoamTraceSpec {
            trace_type: 0x80_0000,
            namespace: 7,
            size: 12,
        }],
        dex: None,
        hbh_merge: false,
    });
    assert_eq!(r.encap, Some(KernelEncap::Tunnel(want.clone())));
    assert_eq!(
        r.to_line(),
        "-6 route add fc00:8::/64 encap ioam6 mode encap tundst fc00::1 freq 2/5 trace prealloc type 0x800000 ns 7 size 12 dev lo metric 1024"
    );
    assert_eq!(reparsed(&r).encap, Some(Box::new(want)));
    assert_eq!(reparsed(&r), {
        let mut s = r.to_spec().unwrap();
        s.line = 2;
        s
    });
}

#[test]
fn rpl_and_seg6_hmac_routes() {
    // ip -6 route add fc00:9::/64 encap rpl segs fc00::2,fc00::3
    let mut srh = RplSrh::default();
    srh.segments = vec![v6("fc00::2"), v6("fc00::3")];
    srh.segments_left = 2;
    let m = message(
        "fc00:9::",
        64,
        RouteLwEnCapType::Rpl,
        vec![RouteLwTunnelEncap::Rpl(RouteRplIpTunnel::Srh(srh))],
    );
    let r = KernelRoute::from_message(&m).unwrap();
    let want = Encap::Rpl(RplEncap {
        segs: vec![v6("fc00::2"), v6("fc00::3")],
    });
    assert_eq!(r.encap, Some(KernelEncap::Tunnel(want.clone())));
    assert_eq!(
        r.to_line(),
        "-6 route add fc00:9::/64 encap rpl segs fc00::2,fc00::3 dev lo metric 1024"
    );
    assert_eq!(reparsed(&r).encap, Some(Box::new(want)));

    // ip -6 route add fc00:a::/64 encap seg6 mode encap segs fc00::4 hmac 9 (with `sr hmac set 9 ...`)
    let mut h = Seg6Header::default();
    h.mode = NlSeg6Mode::Encap;
    h.segments = vec![v6("fc00::4")];
    h.hmac = Some(9);
    let m = message(
        "fc00:a::",
        64,
        RouteLwEnCapType::Seg6,
        vec![RouteLwTunnelEncap::Seg6(RouteSeg6IpTunnel::Seg6(h))],
    );
    let r = KernelRoute::from_message(&m).unwrap();
    let want = Encap::Seg6(Seg6Encap {
        mode: Seg6Mode::Encap,
        segs: vec![v6("fc00::4")],
        hmac: Some(9),
        tunsrc: None,
    });
    assert_eq!(r.encap, Some(KernelEncap::Tunnel(want.clone())));
    let cfg = lwt6_config::parse(&format!(
        "link add lo\nsr hmac set 9 sha256 secret s3cret\n{}",
        r.to_line()
    ))
    .unwrap();
    assert_eq!(cfg.routes[0].encap, Some(Box::new(want)));

    // An encap without its required attribute is named, not guessed.
    let m = message("fc00:b::", 64, RouteLwEnCapType::Rpl, vec![]);
    assert_eq!(
        KernelRoute::from_message(&m).unwrap_err(),
        "rpl encap without a source routing header"
    );
}
