//! The IPv6 header (RFC 8200 §3).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |Version| Traffic Class |           Flow Label                  |   0
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |         Payload Length        |  Next Header  |   Hop Limit   |   4
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                       Source Address (16)                     |   8
//! |                    Destination Address (16)                   |  24
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```

use super::{Error, Result};
use std::net::Ipv6Addr;

/// Length of the fixed IPv6 header.
pub const HEADER_LEN: usize = 40;
/// Mask of the 20-bit flow label.
pub const FLOW_LABEL_MASK: u32 = 0x000f_ffff;
/// Minimum link MTU every IPv6 link must carry (RFC 8200 §5).
pub const MIN_MTU: usize = 1280;

/// A checked view over an IPv6 packet (header plus whatever follows).
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps `buffer`: checks length >= 40, version == 6 and 40 + payload_len <= buffer length.
    pub fn new_checked(buffer: T) -> Result<Self> {
        todo!()
    }
    /// Wraps without checks (caller guarantees >= 40 bytes).
    pub fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }
    /// Consumes the view, returning the buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }
    /// Version field (6).
    pub fn version(&self) -> u8 {
        todo!()
    }
    /// Traffic class (8 bits).
    pub fn traffic_class(&self) -> u8 {
        todo!()
    }
    /// Flow label (20 bits).
    pub fn flow_label(&self) -> u32 {
        todo!()
    }
    /// Payload length.
    pub fn payload_len(&self) -> u16 {
        todo!()
    }
    /// Next header.
    pub fn next_header(&self) -> u8 {
        todo!()
    }
    /// Hop limit.
    pub fn hop_limit(&self) -> u8 {
        todo!()
    }
    /// Source address.
    pub fn src_addr(&self) -> Ipv6Addr {
        todo!()
    }
    /// Destination address.
    pub fn dst_addr(&self) -> Ipv6Addr {
        todo!()
    }
    /// The bytes after the fixed header, limited to payload_len.
    pub fn payload(&self) -> &[u8] {
        todo!()
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets version 6, traffic class and flow label in the first 32 bits.
    pub fn set_version_tc_flow(&mut self, traffic_class: u8, flow_label: u32) {
        todo!()
    }
    /// Sets the payload length.
    pub fn set_payload_len(&mut self, len: u16) {
        todo!()
    }
    /// Sets the next header.
    pub fn set_next_header(&mut self, nh: u8) {
        todo!()
    }
    /// Sets the hop limit.
    pub fn set_hop_limit(&mut self, hl: u8) {
        todo!()
    }
    /// Sets the source address.
    pub fn set_src_addr(&mut self, a: Ipv6Addr) {
        todo!()
    }
    /// Sets the destination address.
    pub fn set_dst_addr(&mut self, a: Ipv6Addr) {
        todo!()
    }
}

/// High-level IPv6 header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6Repr {
    /// Traffic class.
    pub traffic_class: u8,
    /// Flow label (20 bits).
    pub flow_label: u32,
    /// Payload length.
    pub payload_len: u16,
    /// Next header.
    pub next_header: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// Source address.
    pub src: Ipv6Addr,
    /// Destination address.
    pub dst: Ipv6Addr,
}

impl Ipv6Repr {
    /// Parses a checked packet's header.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Self> {
        todo!()
    }
    /// Writes the 40 header bytes into `out[..40]` (panics if shorter: callers size it).
    pub fn emit(&self, out: &mut [u8]) {
        todo!()
    }
}

#[allow(dead_code)]
fn _unused(_: Error) {}
