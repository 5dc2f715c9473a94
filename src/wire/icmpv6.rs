//! ICMPv6 error messages (RFC 4443 §3) with their checksum (RFC 4443 §2.3).
//!
//! ```text
//! | Type (8) | Code (8) | Checksum (16) |
//! | MTU / Pointer / Unused (32)         |
//! | As much of invoking packet as possible without the ICMPv6 packet exceeding the minimum IPv6 MTU |
//! ```

use super::Result;
use std::net::Ipv6Addr;

/// Destination Unreachable.
pub const TYPE_DEST_UNREACHABLE: u8 = 1;
/// Packet Too Big.
pub const TYPE_PACKET_TOO_BIG: u8 = 2;
/// Time Exceeded.
pub const TYPE_TIME_EXCEEDED: u8 = 3;
/// Parameter Problem.
pub const TYPE_PARAM_PROBLEM: u8 = 4;

/// An ICMPv6 error to send about an invoking packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IcmpError {
    /// Destination Unreachable with a code (0 no route, 1 admin prohibited, 3 address unreachable, ...).
    DestUnreachable {
        /// Code.
        code: u8,
    },
    /// Packet Too Big with the MTU of the next-hop link.
    PacketTooBig {
        /// MTU.
        mtu: u32,
    },
    /// Time Exceeded (code 0: hop limit exceeded in transit).
    TimeExceeded {
        /// Code.
        code: u8,
    },
    /// Parameter Problem with a pointer to the offending octet.
    ParamProblem {
        /// Code (0 erroneous header field, 1 unrecognized next header, 2 unrecognized option).
        code: u8,
        /// Offset in the invoking packet.
        pointer: u32,
    },
}

impl IcmpError {
    /// (type, code, 32-bit field) as on the wire.
    pub fn type_code_field(&self) -> (u8, u8, u32) {
        todo!()
    }
}

/// Size of the whole IPv6 packet [`emit`] writes for an invoking packet of `invoking_len` bytes:
/// min(40 + 8 + invoking_len, 1280).
pub fn emitted_len(invoking_len: usize) -> usize {
    todo!()
}

/// Writes a full IPv6 packet (hop limit `hop_limit`, next header 58) carrying ICMPv6 error `err`
/// about `invoking` (truncated so the packet is at most 1280 bytes) into `out`, returning its length.
/// `out` must be at least [`emitted_len`] bytes.
pub fn emit(
    out: &mut [u8],
    src: Ipv6Addr,
    dst: Ipv6Addr,
    hop_limit: u8,
    err: IcmpError,
    invoking: &[u8],
) -> usize {
    todo!()
}

/// A parsed ICMPv6 error message (for tests and decoding).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IcmpErrorRepr {
    /// The error.
    pub err: IcmpError,
    /// The invoking packet bytes carried.
    pub invoking: Vec<u8>,
}

/// Parses an ICMPv6 message body (starting at the ICMPv6 type byte), verifying the checksum against src/dst.
pub fn parse(src: Ipv6Addr, dst: Ipv6Addr, icmp: &[u8]) -> Result<IcmpErrorRepr> {
    todo!()
}
