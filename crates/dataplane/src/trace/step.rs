//! The steps a trace records: one [`Step`] per stage a frame passed, and the IOAM data it carried.

use super::{dev_name, hex};
use crate::fib::{DevId, RouteEntry};
use crate::snapshot::Snapshot;
use crate::spec::table_name;
use crate::tunnel::{InputTunnel, Ioam6Tunnel, Tunnel, TunnelKind};
use crate::wire::ethernet::mac_text;
use crate::wire::hbh;
use crate::wire::ioam::{self, DecodedNode};
use serde::Serialize;
use std::net::{IpAddr, Ipv6Addr};

/// One IOAM pre-allocated trace as this node left it: its namespace and type, and the node data this node wrote.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IoamNote {
    /// Namespace id.
    pub namespace: u16,
    /// Trace type (24 bits).
    pub trace_type: u32,
    /// RemainingLen before this node (4-byte words).
    pub remaining_before: u8,
    /// RemainingLen after it.
    pub remaining_after: u8,
    /// Whether the Overflow flag is set after this node.
    pub overflow: bool,
    /// Whether this node wrote its data (the namespace is known here and there was room).
    pub filled: bool,
    /// The node data block written, as hex (empty when nothing was written).
    pub data: String,
    /// The node data block decoded.
    pub node: Option<DecodedNode>,
}

/// The pre-allocated IOAM traces of an options header (its whole bytes), by offset: (offset, header).
pub(super) fn ioam_traces(hdr: &[u8]) -> Vec<(usize, ioam::TraceHeader)> {
    hbh::OptionIter::new(hdr)
        .map_while(|o| o.ok())
        .filter(|o| o.ty == hbh::OPT_IOAM && o.data_len >= 10)
        .filter(|o| hdr.get(o.offset + 3) == Some(&ioam::OPT_TYPE_PREALLOC_TRACE))
        .filter_map(|o| {
            let h = ioam::TraceHeader::parse(hdr.get(o.offset + 4..o.offset + 12)?).ok()?;
            Some((o.offset, h))
        })
        .collect()
}

/// What this node did to the IOAM traces of an options header: `before` and `after` are the header's bytes
/// before and after the fill (the same length: filling writes in place).
pub(crate) fn ioam_fills(before: Option<&[u8]>, after: &[u8]) -> Vec<IoamNote> {
    let old = before.map(ioam_traces).unwrap_or_default();
    ioam_traces(after)
        .into_iter()
        .map(|(off, h)| {
            let prev = old
                .iter()
                .find(|(o, _)| *o == off)
                .map(|(_, p)| p.remaining_len);
            let remaining_before = prev.unwrap_or(h.remaining_len);
            let filled = remaining_before > h.remaining_len;
            let data_at = off + 12;
            let block = after
                .get(
                    data_at + 4 * usize::from(h.remaining_len)
                        ..data_at + 4 * usize::from(remaining_before),
                )
                .unwrap_or(&[]);
            IoamNote {
                namespace: h.namespace,
                trace_type: h.trace_type,
                remaining_before,
                remaining_after: h.remaining_len,
                overflow: h.overflow(),
                filled,
                data: hex(block),
                node: (filled)
                    .then(|| ioam::decode_node_blocks(block, h.trace_type).ok())
                    .flatten()
                    .and_then(|v| v.into_iter().next()),
            }
        })
        .collect()
}

/// The IOAM traces an inserting node put into the Hop-by-Hop header at `hbh_at` of `pkt`, with the node data it
/// wrote (everything between the remaining space and the end of the preallocated area is this node's: the trace
/// was empty before).
pub(crate) fn ioam_inserted(pkt: &[u8], hbh_at: usize) -> Vec<IoamNote> {
    let Some(len) = pkt.get(hbh_at + 1).map(|l| (usize::from(*l) + 1) * 8) else {
        return Vec::new();
    };
    let Some(hdr) = pkt.get(hbh_at..hbh_at + len) else {
        return Vec::new();
    };
    ioam_traces(hdr)
        .into_iter()
        .map(|(off, h)| {
            let data_at = off + 12;
            let opt_end = off + 2 + usize::from(hdr[off + 1]);
            let block = hdr
                .get(data_at + 4 * usize::from(h.remaining_len)..opt_end)
                .unwrap_or(&[]);
            let words = block.len() / 4;
            IoamNote {
                namespace: h.namespace,
                trace_type: h.trace_type,
                remaining_before: h.remaining_len + words as u8,
                remaining_after: h.remaining_len,
                overflow: h.overflow(),
                filled: !block.is_empty(),
                data: hex(block),
                node: ioam::decode_node_blocks(block, h.trace_type)
                    .ok()
                    .and_then(|v| v.into_iter().next()),
            }
        })
        .collect()
}

/// One stage a traced frame passed and what it decided. Serialized with a `"step"` key naming the variant
/// (snake_case) beside its fields: the JSON schema of docs/live.md, *Packet tracing*.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum Step {
    /// The Ethernet header: addresses, EtherType, and whom it is for (`us`, `group`: broadcast or multicast,
    /// `other`: dropped as `not_for_us`).
    Ethernet {
        /// Source MAC.
        src: String,
        /// Destination MAC.
        dst: String,
        /// EtherType.
        ethertype: u16,
        /// `us`, `group` or `other`.
        to: &'static str,
    },
    /// An IPv6 header as the input stage read it: pass 0 as received, then again after a decapsulation or a
    /// routing header addressed to this node.
    Ipv6 {
        /// Decapsulations and local routing-header passes before this one.
        pass: usize,
        /// Source.
        src: Ipv6Addr,
        /// Destination.
        dst: Ipv6Addr,
        /// Hop limit.
        hop_limit: u8,
        /// Next Header.
        next_header: u8,
        /// Payload length.
        payload_len: u16,
        /// Whether the destination is one of this node's addresses.
        local: bool,
    },
    /// An IPv4 header as the input stage read it.
    Ipv4 {
        /// Source.
        src: std::net::Ipv4Addr,
        /// Destination.
        dst: std::net::Ipv4Addr,
        /// TTL.
        ttl: u8,
        /// Protocol.
        protocol: u8,
        /// Total length.
        total_len: u16,
        /// Whether the destination is one of this node's addresses.
        local: bool,
    },
    /// A routing table lookup and the route it found (none: the fields after `found` are absent).
    Route {
        /// What was looked up: `destination`, `tunnel destination`, `next segment`, `nh6`, `nh4`, `policy`.
        purpose: &'static str,
        /// The table (`main`, or its number).
        table: String,
        /// The address looked up.
        dst: IpAddr,
        /// Whether a route was found.
        found: bool,
        /// The route's prefix.
        #[serde(skip_serializing_if = "Option::is_none")]
        prefix: Option<String>,
        /// Its metric.
        #[serde(skip_serializing_if = "Option::is_none")]
        metric: Option<u32>,
        /// Its gateway.
        #[serde(skip_serializing_if = "Option::is_none")]
        via: Option<IpAddr>,
        /// Its device.
        #[serde(skip_serializing_if = "Option::is_none")]
        dev: Option<String>,
        /// Its tunnel, as `ip route` prints it (`encap seg6 mode encap segs 2 [ ... ]`).
        #[serde(skip_serializing_if = "Option::is_none")]
        encap: Option<String>,
    },
    /// A Hop-by-Hop header: its options checked, and the IOAM pre-allocated traces in it, as this node left them
    /// (transit: filled when `ioam6_enabled` is on for the ingress interface and the namespace is known here).
    HopByHop {
        /// Header length.
        len: usize,
        /// The ingress interface's `ioam6_enabled`.
        ioam_enabled: bool,
        /// The traces.
        ioam: Vec<IoamNote>,
    },
    /// IOAM domain roles at work (docs/ioam.md): `foreign_stripped`, `oversize_stripped` (a trace over its
    /// domain's `maxsize`), `stripped` (both kinds), `removed` (leaving the domain), `decapsulated` (the IOAM
    /// tunnel endpoint).
    IoamDomain {
        /// What was done.
        action: &'static str,
        /// IOAM options concerned.
        options: usize,
        /// Bytes removed from the packet.
        removed: usize,
    },
    /// A routing header addressed to this node, processed (`srh`, `rpl`): what it decided (`forward` to the new
    /// destination, `decap`, `deliver`, `param_problem`), with Segments Left and the destination after it.
    RoutingHeader {
        /// `srh` or `rpl`.
        kind: &'static str,
        /// `forward`, `decap`, `deliver` or `param_problem`.
        action: &'static str,
        /// Segments Left after processing.
        segments_left: u8,
        /// The packet's destination after processing.
        dst: Ipv6Addr,
        /// The header's length as received.
        len_before: usize,
        /// Its length after processing (an RPL header is compressed again for the new destination).
        len_after: usize,
    },
    /// The seg6local behaviour of the route that matched.
    Seg6Local {
        /// Its name (`End`, `End.X`, `End.DT6`, ...).
        behaviour: &'static str,
        /// The route's whole action, as `ip route` prints it.
        action: String,
    },
    /// The SRH's Segments Left decremented and the next segment made the destination (End, End.X, End.T,
    /// End.B6.Encaps).
    SrhAdvance {
        /// Segments Left before.
        segments_left: u8,
        /// The new destination.
        dst: Ipv6Addr,
    },
    /// NEXT-C-SID: the destination's argument shifted into place.
    NextCsid {
        /// The new destination.
        dst: Ipv6Addr,
    },
    /// The SRH removed (PSP, USP).
    SrhPop {
        /// Bytes removed.
        removed: usize,
    },
    /// Decapsulation: the outer headers removed, the inner packet (`ipv6`, `ipv4`, `ethernet`) kept.
    Decap {
        /// The inner packet's kind.
        inner: &'static str,
        /// Bytes removed.
        removed: usize,
    },
    /// A tunnel planned on the way out: seg6 or rpl before forwarding, ioam6 after it; the bytes it adds and the
    /// destination it routes to.
    Tunnel {
        /// `seg6`, `rpl` or `ioam6`.
        kind: &'static str,
        /// The tunnel as `ip route` prints it.
        encap: String,
        /// Bytes it adds (an l2encap counts the Ethernet header it keeps).
        added: usize,
        /// The destination it sends the packet to, when it changes it.
        #[serde(skip_serializing_if = "Option::is_none")]
        new_dst: Option<Ipv6Addr>,
    },
    /// The hop limit check passed (the packet is forwarded with one less).
    HopLimit {
        /// The (inner) hop limit or TTL as received.
        received: u8,
    },
    /// The MTU check on the way out.
    Mtu {
        /// The packet's length once every tunnel is applied (without the Ethernet header).
        len: usize,
        /// The route's and egress device's MTU.
        mtu: usize,
        /// Whether it fits.
        fits: bool,
    },
    /// The next hop's link-layer address (`reachable`, `stale`: a learned entry to be confirmed, `none`: no
    /// entry — dropped as `no_neighbour`, or queued while it is resolved).
    Neighbour {
        /// Egress device.
        dev: String,
        /// Next hop.
        addr: IpAddr,
        /// `reachable`, `stale` or `none`.
        state: &'static str,
        /// Its MAC.
        #[serde(skip_serializing_if = "Option::is_none")]
        mac: Option<String>,
    },
    /// An ioam6 tunnel's traces inserted, with this node's data in them.
    IoamInsert {
        /// `inline` or `encap`.
        mode: &'static str,
        /// The traces.
        ioam: Vec<IoamNote>,
    },
    /// An ICMP error generated about the packet (sent unless RFC 4443 §2.4 (e), the rate limits or the way back
    /// forbid it: then `sent` is false).
    Icmp {
        /// `icmpv6` or `icmpv4`.
        family: &'static str,
        /// The error: `dest_unreachable`, `packet_too_big`, `time_exceeded`, `param_problem` (ICMPv6),
        /// `dest_unreachable`, `frag_needed`, `time_exceeded` (ICMPv4).
        error: &'static str,
        /// Its ICMP Type.
        #[serde(rename = "type")]
        icmp_type: u8,
        /// Its Code.
        code: u8,
        /// The MTU of a Packet Too Big or a Fragmentation Needed.
        #[serde(skip_serializing_if = "Option::is_none")]
        mtu: Option<u32>,
        /// The pointer of a Parameter Problem.
        #[serde(skip_serializing_if = "Option::is_none")]
        pointer: Option<u32>,
        /// Its destination: the packet's source.
        to: IpAddr,
        /// Whether it was sent (the next step is its frame).
        sent: bool,
    },
    /// A frame sent: the packet itself, an ICMP error, a reply or a solicitation.
    Sent {
        /// Egress device.
        dev: String,
        /// Frame length.
        len: usize,
        /// The frame (for the front end to decode its headers).
        #[serde(skip)]
        frame: Vec<u8>,
    },
}

impl Step {
    /// An ICMPv6 error about to be generated towards `to` (not sent yet).
    pub(crate) fn icmp6(err: &crate::wire::icmpv6::IcmpError, to: IpAddr) -> Step {
        let (icmp_type, code, _) = err.type_code_field();
        Step::Icmp {
            family: "icmpv6",
            error: err.name(),
            icmp_type,
            code,
            mtu: err.mtu(),
            pointer: err.pointer(),
            to,
            sent: false,
        }
    }

    /// An ICMPv4 error about to be generated towards `to` (not sent yet).
    pub(crate) fn icmp4(err: &crate::wire::icmpv4::Icmpv4Error, to: IpAddr) -> Step {
        let (icmp_type, code, _) = err.type_code_field();
        Step::Icmp {
            family: "icmpv4",
            error: err.name(),
            icmp_type,
            code,
            mtu: err.mtu(),
            pointer: None,
            to,
            sent: false,
        }
    }

    /// A routing table lookup in `table` for `dst`.
    pub(crate) fn route(
        snap: &Snapshot,
        purpose: &'static str,
        table: u32,
        dst: IpAddr,
        r: Option<&RouteEntry>,
    ) -> Step {
        Step::Route {
            purpose,
            table: table_name(table),
            dst,
            found: r.is_some(),
            prefix: r.map(|r| r.prefix.to_string()),
            metric: r.map(|r| r.metric),
            via: r.and_then(|r| r.via),
            dev: r.and_then(|r| r.dev.get()).map(|d| dev_name(snap, d)),
            encap: r
                .and_then(|r| r.tunnel.get())
                .and_then(|t| snap.tunnels.get(t))
                .map(Tunnel::iproute2),
        }
    }

    /// An input tunnel planned.
    pub(crate) fn input_tunnel(t: &InputTunnel, added: usize, new_dst: Option<Ipv6Addr>) -> Step {
        Step::Tunnel {
            kind: t.kind().name(),
            encap: t.iproute2(),
            added,
            new_dst,
        }
    }

    /// An ioam6 tunnel planned.
    pub(crate) fn output_tunnel(t: &Ioam6Tunnel, added: usize, new_dst: Option<Ipv6Addr>) -> Step {
        Step::Tunnel {
            kind: TunnelKind::Ioam6.name(),
            encap: t.iproute2(),
            added,
            new_dst,
        }
    }

    /// The neighbour lookup for `addr` on `dev`.
    pub(crate) fn neighbour(snap: &Snapshot, dev: DevId, addr: IpAddr) -> Step {
        let found = snap.neighbour(dev, addr);
        Step::Neighbour {
            dev: dev_name(snap, dev),
            addr,
            state: match found {
                Some((_, false)) => "reachable",
                Some((_, true)) => "stale",
                None => "none",
            },
            mac: found.map(|(m, _)| mac_text(&m)),
        }
    }
}
