//! IPv6 extension-header walker (RFC 8200 §4).
//!
//! Walks the chain that starts at the IPv6 header's Next Header field, header by header, using each
//! header's 8-octet length unit (Fragment: fixed 8 bytes; AH: (len+2)*4 bytes, RFC 4302).
//! Hop-by-Hop may only appear first (RFC 8200 §4.1); a later one is an error.

use super::{Error, Result};

/// One extension header found in a chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtHeader {
    /// The protocol number identifying this header (0, 43, 44, 51, 60).
    pub kind: u8,
    /// Offset of the header from the start of the IPv6 packet.
    pub offset: usize,
    /// Total length of the header in bytes.
    pub len: usize,
    /// This header's Next Header field.
    pub next_header: u8,
}

/// Whether `nh` is an IPv6 extension header this walker steps over (0, 43, 44, 51, 60).
pub fn is_extension(nh: u8) -> bool {
    todo!()
}

/// Iterator over the extension headers of an IPv6 packet.
///
/// `packet` starts at the IPv6 header. Yields `Err` once (then stops) on a truncated or misplaced header.
pub struct Walker<'a> {
    packet: &'a [u8],
    next: u8,
    offset: usize,
    done: bool,
}

impl<'a> Walker<'a> {
    /// Starts after the fixed 40-byte header, with the IPv6 Next Header field of `packet`.
    pub fn new(packet: &'a [u8]) -> Self {
        todo!()
    }
    /// After the iterator ends without error: the upper-layer protocol and its offset.
    pub fn upper_layer(&self) -> (u8, usize) {
        (self.next, self.offset)
    }
}

impl<'a> Iterator for Walker<'a> {
    type Item = Result<ExtHeader>;
    fn next(&mut self) -> Option<Self::Item> {
        todo!()
    }
}

/// What a router needs to know about a packet's extension headers, gathered in one walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Chain {
    /// The Hop-by-Hop header, if present (always at offset 40).
    pub hop_by_hop: Option<ExtHeader>,
    /// The first Routing header, if present.
    pub routing: Option<ExtHeader>,
    /// The Routing Type of that header.
    pub routing_type: Option<u8>,
    /// Whether a Fragment header is present.
    pub fragment: bool,
    /// Upper-layer protocol after all extension headers.
    pub upper_proto: u8,
    /// Offset of the upper-layer header.
    pub upper_offset: usize,
}

/// Walks the whole chain of `packet` (starting at the IPv6 header).
pub fn chain(packet: &[u8]) -> Result<Chain> {
    todo!()
}

#[allow(dead_code)]
fn _unused(_: Error) {}
