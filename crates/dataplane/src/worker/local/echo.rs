//! Echo requests to the router's own addresses (RFC 4443 §4.1–4.2, RFC 792) and what the replies carry, as Linux
//! answers them: from the address the request was sent to, to its source, the request's identifier, sequence
//! number and data; IPv6: the request's traffic class, the egress interface's hop limit, flow label 0 (Linux
//! may set a hashed one: docs/linux-compat.md); IPv4: the request's type of service, TTL 64, DF clear, no
//! options. The worker routes the reply like any packet it originates.

use crate::stats::DropReason;
use crate::wire::icmpv4::{self, IpFields};
use crate::wire::icmpv6;
use crate::wire::{ipv4, ipv6};

/// The TTL of IPv4 packets the router originates (Linux `net.ipv4.ip_default_ttl`).
pub const IPV4_TTL: u8 = 64;

/// Whether the ICMPv6 message at `icmp_at` in the IPv6 packet `ip` is an echo request.
pub fn is_request6(ip: &[u8], icmp_at: usize) -> bool {
    ip.get(icmp_at) == Some(&icmpv6::TYPE_ECHO_REQUEST)
}

/// Writes the echo reply to the IPv6 echo request `ip` (its ICMPv6 message at `icmp_at`) into `out` (an IPv6
/// packet, grown as needed; returns its length). Drops a request shorter than its 8-byte header or with a bad
/// checksum (`icmp_invalid`).
pub fn reply6(
    ip: &[u8],
    icmp_at: usize,
    hop_limit: u8,
    out: &mut Vec<u8>,
) -> Result<usize, DropReason> {
    let p = ipv6::Packet::new_unchecked(ip);
    let (src, dst) = (p.src_addr(), p.dst_addr());
    let req = &ip[icmp_at..];
    if req.len() < icmpv6::HEADER_LEN || !icmpv6::checksum_ok(&src, &dst, req) {
        return Err(DropReason::IcmpInvalid);
    }
    out.resize(ipv6::HEADER_LEN + req.len(), 0);
    Ok(icmpv6::emit_echo_reply(
        out,
        dst,
        src,
        hop_limit,
        p.traffic_class(),
        req,
    ))
}

/// Writes the echo reply to the IPv4 datagram `ip` if it is an echo request to us (`Ok(None)` when it is another
/// ICMP message) into `out` (grown as needed; returns its length). Drops a truncated message or one with a bad
/// checksum (`icmp_invalid`).
pub fn reply4(ip: &[u8], ident: u16, out: &mut Vec<u8>) -> Result<Option<usize>, DropReason> {
    let p = ipv4::Packet::new_unchecked(ip);
    let req = p.payload();
    let (ty, _) = icmpv4::check(req).map_err(|_| DropReason::IcmpInvalid)?;
    if ty != icmpv4::TYPE_ECHO_REQUEST {
        return Ok(None);
    }
    out.resize(ipv4::MIN_HEADER_LEN + req.len(), 0);
    let f = IpFields {
        tos: p.tos(),
        ident,
        ttl: IPV4_TTL,
    };
    Ok(Some(icmpv4::emit_echo_reply(
        out,
        p.dst_addr(),
        p.src_addr(),
        f,
        req,
    )))
}
