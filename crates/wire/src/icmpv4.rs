//! ICMPv4 (RFC 792): echo reply, and the errors a router sends — destination unreachable (type 3, with the
//! next-hop MTU of "fragmentation needed", code 4, from RFC 1191 §4) and time exceeded (type 11).
//!
//! ```text
//! | Type (8) | Code (8) | Checksum (16) |              0
//! | Identifier (16) | Sequence (16)     |  echo      4
//! | unused (16)     | Next-Hop MTU (16) |  type 3    4   (unused, 32 bits, for type 11)
//! | data: echo payload, or the invoking IP header + leading data of its payload |  8
//! ```
//! The checksum covers the whole ICMP message (RFC 792, no pseudo-header).

use super::checksum;
use super::ipv4::{self, Ipv4Repr};
use super::{Error, Result};
use std::net::Ipv4Addr;

/// IP protocol number of ICMP.
pub const PROTO_ICMP: u8 = 1;
/// Length of the ICMP header (type, code, checksum, 32-bit field).
pub const HEADER_LEN: usize = 8;
/// Echo Reply.
pub const TYPE_ECHO_REPLY: u8 = 0;
/// Destination Unreachable.
pub const TYPE_DEST_UNREACHABLE: u8 = 3;
/// Echo Request.
pub const TYPE_ECHO_REQUEST: u8 = 8;
/// Time Exceeded.
pub const TYPE_TIME_EXCEEDED: u8 = 11;
/// The largest error datagram (RFC 1812 §4.3.2.3: no more than 576 bytes in all).
pub const MAX_ERROR_LEN: usize = 576;
/// Type of service of errors: precedence "internetwork control" (RFC 1812 §4.3.2.5).
pub const TOS_INTERNETWORK_CONTROL: u8 = 0xc0;

/// An ICMPv4 error to send about an invoking datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Icmpv4Error {
    /// Destination unreachable (0 net, 1 host, 3 port, ...); not code 4, see [`Icmpv4Error::FragNeeded`].
    DestUnreachable {
        /// Code.
        code: u8,
    },
    /// Destination unreachable, code 4: fragmentation needed and DF set, with the next-hop MTU (RFC 1191 §4).
    FragNeeded {
        /// Next-hop MTU.
        mtu: u16,
    },
    /// Time exceeded (0: TTL exceeded in transit).
    TimeExceeded {
        /// Code.
        code: u8,
    },
}

impl Icmpv4Error {
    /// The error's name as lwt6 shows it (`dest_unreachable`, `frag_needed`, `time_exceeded`).
    pub fn name(&self) -> &'static str {
        match self {
            Icmpv4Error::DestUnreachable { .. } => "dest_unreachable",
            Icmpv4Error::FragNeeded { .. } => "frag_needed",
            Icmpv4Error::TimeExceeded { .. } => "time_exceeded",
        }
    }

    /// The next-hop MTU a Fragmentation Needed carries.
    pub fn mtu(&self) -> Option<u32> {
        match *self {
            Icmpv4Error::FragNeeded { mtu } => Some(u32::from(mtu)),
            _ => None,
        }
    }

    /// (type, code, 32-bit field) as on the wire.
    pub fn type_code_field(&self) -> (u8, u8, u32) {
        match *self {
            Icmpv4Error::DestUnreachable { code } => (TYPE_DEST_UNREACHABLE, code, 0),
            Icmpv4Error::FragNeeded { mtu } => (TYPE_DEST_UNREACHABLE, 4, u32::from(mtu)),
            Icmpv4Error::TimeExceeded { code } => (TYPE_TIME_EXCEEDED, code, 0),
        }
    }
}

/// Whether an ICMP type is an error (RFC 1812 §4.3.2.7: no error is sent about one): destination unreachable,
/// source quench, redirect, time exceeded, parameter problem.
pub fn is_error_type(ty: u8) -> bool {
    matches!(ty, 3 | 4 | 5 | 11 | 12)
}

/// What the IP header of an emitted message holds besides its addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpFields {
    /// Type of service.
    pub tos: u8,
    /// Identification.
    pub ident: u16,
    /// Time to live.
    pub ttl: u8,
}

fn emit_ip(out: &mut [u8], src: Ipv4Addr, dst: Ipv4Addr, f: IpFields, total: usize) {
    Ipv4Repr {
        tos: f.tos,
        total_len: total as u16,
        ident: f.ident,
        flags_frag: 0,
        ttl: f.ttl,
        protocol: PROTO_ICMP,
        src,
        dst,
    }
    .emit(out);
}

fn fill_checksum(icmp: &mut [u8]) {
    icmp[2] = 0;
    icmp[3] = 0;
    let c = checksum::finish(checksum::sum(icmp));
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
}

/// Size of the datagram [`emit_error`] writes about an invoking datagram of `invoking_len` bytes:
/// min(20 + 8 + invoking_len, 576).
pub fn error_len(invoking_len: usize) -> usize {
    (ipv4::MIN_HEADER_LEN + HEADER_LEN)
        .saturating_add(invoking_len)
        .min(MAX_ERROR_LEN)
}

/// Writes an IPv4 datagram (no options, DF clear) carrying error `err` about `invoking` (as much of it as fits in
/// 576 bytes) into `out`; returns its length. `out` must hold [`error_len`] bytes.
pub fn emit_error(
    out: &mut [u8],
    src: Ipv4Addr,
    dst: Ipv4Addr,
    ip: IpFields,
    err: Icmpv4Error,
    invoking: &[u8],
) -> usize {
    let total = error_len(invoking.len());
    emit_ip(out, src, dst, ip, total);
    let icmp = &mut out[ipv4::MIN_HEADER_LEN..total];
    let (ty, code, field) = err.type_code_field();
    icmp[0] = ty;
    icmp[1] = code;
    icmp[4..8].copy_from_slice(&field.to_be_bytes());
    let carried = icmp.len() - HEADER_LEN;
    icmp[HEADER_LEN..].copy_from_slice(&invoking[..carried]);
    fill_checksum(icmp);
    total
}

/// Writes an IPv4 datagram (no options, DF clear) carrying the echo reply to the echo request message `request`
/// (the ICMP message: type 8 ...): the same identifier, sequence and data (RFC 792, "Echo or Echo Reply
/// Message"). Returns its length, `20 + request.len()`; `out` must hold it.
pub fn emit_echo_reply(
    out: &mut [u8],
    src: Ipv4Addr,
    dst: Ipv4Addr,
    ip: IpFields,
    request: &[u8],
) -> usize {
    let total = ipv4::MIN_HEADER_LEN + request.len();
    emit_ip(out, src, dst, ip, total);
    let icmp = &mut out[ipv4::MIN_HEADER_LEN..total];
    icmp.copy_from_slice(request);
    icmp[0] = TYPE_ECHO_REPLY;
    icmp[1] = 0;
    fill_checksum(icmp);
    total
}

/// Checks an ICMP message (the IPv4 payload): at least 8 bytes and a checksum that verifies. Returns its type and
/// code.
pub fn check(icmp: &[u8]) -> Result<(u8, u8)> {
    if icmp.len() < HEADER_LEN {
        return Err(Error::Truncated);
    }
    if checksum::finish(checksum::sum(icmp)) != 0 {
        return Err(Error::Malformed("icmp checksum"));
    }
    Ok((icmp[0], icmp[1]))
}

#[cfg(test)]
mod tests {
    use super::*;

    const IP: IpFields = IpFields {
        tos: 0,
        ident: 0x1234,
        ttl: 64,
    };

    /// Echo request id 0x0001 seq 0x0002 data "abcd" answered from 10.1.0.2 to 10.1.0.1. Checksums computed
    /// independently (Python, RFC 1071): ICMP `00 00 [c] 00 01 00 02 61 62 63 64` -> 0x3b36 (request: 0x3336); IP header
    /// `45 00 0020 1234 0000 40 01 [c] 0a010002 0a010001` -> 0x54a5.
    #[test]
    fn golden_echo_reply() {
        let req = [8, 0, 0x33, 0x36, 0, 1, 0, 2, b'a', b'b', b'c', b'd'];
        assert_eq!(check(&req), Ok((8, 0)));
        let mut out = [0u8; 64];
        let n = emit_echo_reply(
            &mut out,
            Ipv4Addr::new(10, 1, 0, 2),
            Ipv4Addr::new(10, 1, 0, 1),
            IP,
            &req,
        );
        let want = [
            0x45, 0, 0, 0x20, 0x12, 0x34, 0, 0, 64, 1, 0x54, 0xa5, 10, 1, 0, 2, 10, 1, 0,
            1, //
            0, 0, 0x3b, 0x36, 0, 1, 0, 2, b'a', b'b', b'c', b'd',
        ];
        assert_eq!(&out[..n], &want[..]);
    }

    /// Fragmentation needed, next-hop MTU 1400 (0x0578), about a 28-byte datagram; ICMP checksum computed
    /// independently: `03 04 [c] 0000 0578` + the bytes 0..28 -> 0x40bf.
    #[test]
    fn frag_needed_layout_and_truncation() {
        let invoking: Vec<u8> = (0..28u8).collect();
        let mut out = [0u8; 600];
        let n = emit_error(
            &mut out,
            Ipv4Addr::new(10, 1, 0, 2),
            Ipv4Addr::new(10, 1, 0, 1),
            IP,
            Icmpv4Error::FragNeeded { mtu: 1400 },
            &invoking,
        );
        assert_eq!(n, 56);
        assert_eq!(&out[20..28], &[3, 4, 0x40, 0xbf, 0, 0, 0x05, 0x78]);
        assert_eq!(&out[28..n], &invoking[..]);
        assert_eq!(check(&out[20..n]), Ok((3, 4)));
        // A long invoking datagram is cut so that the error is 576 bytes.
        let big = vec![0u8; 1500];
        let n = emit_error(
            &mut out,
            Ipv4Addr::new(10, 1, 0, 2),
            Ipv4Addr::new(10, 1, 0, 1),
            IP,
            Icmpv4Error::TimeExceeded { code: 0 },
            &big,
        );
        assert_eq!(n, 576);
        assert_eq!(u16::from_be_bytes([out[2], out[3]]), 576);
        assert_eq!(&out[20..22], &[11, 0]);
    }

    #[test]
    fn bad_checksum_is_named() {
        assert_eq!(
            check(&[8, 0, 0, 0, 0, 1, 0, 2]),
            Err(Error::Malformed("icmp checksum"))
        );
        assert_eq!(check(&[8, 0, 0]), Err(Error::Truncated));
        assert!(is_error_type(3) && is_error_type(11) && !is_error_type(0) && !is_error_type(8));
    }
}
