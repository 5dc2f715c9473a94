//! Forwarding plans: what the fast path writes in front of a packet whose route needs nothing packet-specific
//! beyond a few fields. A plan is built per route when the snapshot is built (by the route's tunnel, through the
//! snapshot), stored beside the FIB, and applied by the worker: a template copy plus the patch its kind names.

use crate::buffer::PacketBuf;
use crate::fib::{DevId, TunnelId};
use crate::wire::{ethernet, ipv6, proto};
use std::net::Ipv6Addr;

/// Ethernet plus IPv6 header: every plan's frame starts with them (the template's, or the template's Ethernet
/// header and the received IPv6 header), so patches work on a fixed-size array.
pub const FRONT: usize = ethernet::HEADER_LEN + ipv6::HEADER_LEN;

/// What a plan's per-packet patch reads from the received packet, parsed once by the fast path.
#[derive(Debug, Clone, Copy)]
pub struct Received<'a> {
    /// The received IPv6 packet (header first).
    pub ip: &'a [u8],
    /// Its destination address.
    pub dst: &'a [u8; 16],
    /// The outgoing Payload Length field.
    pub payload_len: [u8; 2],
    /// The outgoing hop limit (the received one less one).
    pub hop_limit: u8,
}

/// A scratch buffer for building a plan's template with a tunnel's own general-path code, so that the template
/// is byte-identical to what the general path writes: `room` bytes of headroom, and a 40-byte IPv6 header with
/// destination `dst` and next header 59 (no next header) when `with_header`, else nothing.
pub(crate) fn scratch(with_header: Option<Ipv6Addr>, room: usize) -> PacketBuf {
    let mut b = PacketBuf::new(0);
    let mut hdr = [0u8; ipv6::HEADER_LEN];
    let len = match with_header {
        Some(dst) => {
            hdr[0] = 0x60;
            hdr[6] = proto::NONE;
            hdr[24..40].copy_from_slice(&dst.octets());
            ipv6::HEADER_LEN
        }
        None => 0,
    };
    b.load(&hdr[..len], room);
    b
}

/// The IPv6 header of a plan that inserts an extension header after it (seg6 inline, rpl, ioam6 inline): the
/// received header's first 24 bytes (version to source; the template's slot keeps the new destination), the new
/// payload length, `next_header`, the decremented hop limit.
#[inline(always)]
pub(crate) fn patch_inserting_header(hdr: &mut [u8; FRONT], rx: &Received<'_>, next_header: u8) {
    const E: usize = ethernet::HEADER_LEN;
    hdr[E..E + 24].copy_from_slice(&rx.ip[..24]);
    hdr[E + 4..E + 6].copy_from_slice(&rx.payload_len);
    hdr[E + 6] = next_header;
    hdr[E + 7] = rx.hop_limit;
}

/// What a [`Plan`] does to a packet after copying its template: which fields come from the received packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanKind {
    /// Plain forwarding. Template: the Ethernet header.
    Forward,
    /// seg6 H.Encaps / H.Encaps.Red (RFC 8986 §5.1, §5.2). Template: Ethernet header, outer IPv6 header, SRH
    /// (HMAC included: source and segments are fixed). Per packet: traffic class and flow label, payload
    /// length, hop limit.
    Seg6Encap,
    /// seg6 `inline` without HMAC (Linux's H.Insert). Template: Ethernet header, an IPv6 header slot whose
    /// destination is already the first SID, the SRH. Per packet: the rest of the received IPv6 header, next
    /// header 43, payload length, hop limit, the SRH's next header and Segment List\[0\] (the original
    /// destination).
    Seg6Inline,
    /// ioam6 `inline` inserting on every packet. Template: Ethernet header, an IPv6 header slot, the Hop-by-Hop
    /// header with the pre-allocated trace. Per packet: the received IPv6 header with next header 0 and the new
    /// payload length, the Hop-by-Hop next header, then this node's data (RFC 9197 §4.4) in the trace.
    IoamInline,
    /// ioam6 `encap` (and `auto`, which is encap for forwarded packets) inserting on every packet. Template:
    /// Ethernet header, outer IPv6 header (source, destination = tundst, next header 0), Hop-by-Hop header with
    /// next header 41. Per packet: the outer header's first 8 bytes from the inner one, then this node's data.
    IoamEncap,
    /// rpl (RFC 6554 with Linux's compression). Template: Ethernet header and an IPv6 header slot whose
    /// destination is the first segment. Per packet: the rest of the IPv6 header and the compressed SRH, whose
    /// length depends on the original destination (CmprE).
    Rpl,
}

impl PlanKind {
    /// Whether the template holds an IPv6 header slot that the received header fills: the received IPv6
    /// header then moves to the front and only its payload is loaded behind the template.
    pub fn inserts(self) -> bool {
        matches!(
            self,
            PlanKind::Seg6Inline | PlanKind::IoamInline | PlanKind::Rpl
        )
    }
}

/// A precomputed forwarding plan for a route (VPP calls it an adjacency's rewrite string): everything about the
/// way out that does not depend on the packet, resolved once per FIB snapshot. It is what "plans headroom from the
/// cached output device" means, and the userspace form of Linux's per-tunnel `dst_cache` — without a reference
/// count, since it lives inside the immutable snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Egress interface.
    pub egress: DevId,
    /// Longest IPv6 packet the plan sends: the MTU it must fit as it leaves (route MTU or the device's), capped
    /// at what a Payload Length field describes (40 + 65,535 bytes).
    pub max_len: usize,
    /// The bytes put in front of the received packet (see [`PlanKind`] for what they hold), half a page past a
    /// page boundary ([`Aligned::copy_half_page`](crate::buffer::Aligned::copy_half_page)), so that their place
    /// relative to pages, cache lines and the packet is the same in every run.
    pub template: crate::buffer::Aligned,
    /// What the template holds and what is written per packet.
    pub kind: PlanKind,
    /// Bytes the tunnel adds to the IPv6 packet (0 for [`PlanKind::Forward`]; for [`PlanKind::Rpl`] only the
    /// fixed part is known here, the header length is computed per packet).
    pub growth: usize,
    /// The tunnel applied, if any.
    pub tunnel: Option<TunnelId>,
    /// Device of the route that carries the tunnel (its IOAM interface ids are the egress ids of the trace).
    pub route_dev: Option<DevId>,
    /// Whether one of the router's own addresses lies inside the route's prefix (then a local check is needed).
    pub contains_local: bool,
}
