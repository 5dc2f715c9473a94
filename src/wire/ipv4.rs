//! The IPv4 header (RFC 791 §3.1), enough to carry IPv4 inside SRv6 and to forward it.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! |Version|  IHL  |Type of Service|          Total Length         |  0
//! |         Identification        |Flags|      Fragment Offset    |  4
//! |  Time to Live |    Protocol   |         Header Checksum       |  8
//! |                       Source Address                          | 12
//! |                    Destination Address                        | 16
//! |                    Options (IHL > 5)                          | 20
//! ```

use super::{Error, Result};
use std::net::Ipv4Addr;

/// Minimum IPv4 header length.
pub const MIN_HEADER_LEN: usize = 20;

/// A checked view over an IPv4 packet.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Checks version 4, IHL >= 5, header fits, total_length >= header and <= buffer.
    pub fn new_checked(buffer: T) -> Result<Self> {
        todo!()
    }
    /// Header length in bytes (IHL * 4).
    pub fn header_len(&self) -> usize {
        todo!()
    }
    /// Type of service / DSCP+ECN.
    pub fn tos(&self) -> u8 {
        todo!()
    }
    /// Total length.
    pub fn total_len(&self) -> u16 {
        todo!()
    }
    /// Time to live.
    pub fn ttl(&self) -> u8 {
        todo!()
    }
    /// Protocol.
    pub fn protocol(&self) -> u8 {
        todo!()
    }
    /// Header checksum field.
    pub fn checksum(&self) -> u16 {
        todo!()
    }
    /// Whether the header checksum verifies.
    pub fn verify_checksum(&self) -> bool {
        todo!()
    }
    /// Source address.
    pub fn src_addr(&self) -> Ipv4Addr {
        todo!()
    }
    /// Destination address.
    pub fn dst_addr(&self) -> Ipv4Addr {
        todo!()
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Decrements TTL by one and updates the checksum incrementally (RFC 1624).
    pub fn decrement_ttl(&mut self) {
        todo!()
    }
    /// Recomputes and stores the header checksum.
    pub fn fill_checksum(&mut self) {
        todo!()
    }
}

/// High-level IPv4 header (no options).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Repr {
    /// Type of service.
    pub tos: u8,
    /// Total length.
    pub total_len: u16,
    /// Identification.
    pub ident: u16,
    /// Flags (3 bits) and fragment offset (13 bits), as on the wire.
    pub flags_frag: u16,
    /// Time to live.
    pub ttl: u8,
    /// Protocol.
    pub protocol: u8,
    /// Source.
    pub src: Ipv4Addr,
    /// Destination.
    pub dst: Ipv4Addr,
}

impl Ipv4Repr {
    /// Parses a checked packet's header (options ignored).
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Self> {
        todo!()
    }
    /// Emits a 20-byte header with a correct checksum into `out[..20]`.
    pub fn emit(&self, out: &mut [u8]) {
        todo!()
    }
}

#[allow(dead_code)]
fn _unused(_: Error) {}
