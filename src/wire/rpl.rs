//! The RPL Source Routing Header (RFC 6554 §3), routing type 3, with Linux's compression (`net/ipv6/rpl.c`).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Next Header  |  Hdr Ext Len  | Routing Type  | Segments Left |  0
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | CmprI | CmprE |  Pad  |               Reserved                |  4
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! .                        Addresses[1..n]                        .  8
//! ```
//! Addresses 1..n-1 carry 16-CmprI bytes each, the last one 16-CmprE bytes; the elided prefix
//! is taken from the IPv6 Destination Address. Pad zero bytes complete a multiple of 8.

use super::{Error, Result};
use std::net::Ipv6Addr;

/// Routing Type of the RPL SRH.
pub const ROUTING_TYPE: u8 = 3;

/// A checked view over an RPL SRH.
#[derive(Debug, Clone)]
pub struct Header<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Header<T> {
    /// Checks: >= 8 bytes, routing type 3, `(hdr_len+1)*8 <= buffer len`.
    pub fn new_checked(buffer: T) -> Result<Self> {
        todo!()
    }
    /// Next header.
    pub fn next_header(&self) -> u8 {
        todo!()
    }
    /// Hdr Ext Len.
    pub fn hdr_len(&self) -> u8 {
        todo!()
    }
    /// Segments Left.
    pub fn segments_left(&self) -> u8 {
        todo!()
    }
    /// CmprI.
    pub fn cmpr_i(&self) -> u8 {
        todo!()
    }
    /// CmprE.
    pub fn cmpr_e(&self) -> u8 {
        todo!()
    }
    /// Pad.
    pub fn pad(&self) -> u8 {
        todo!()
    }
    /// Number of addresses (Linux: n+1 where n = (hdrlen*8 - pad - (16-CmprE)) / (16-CmprI)).
    /// Errors when the division leaves a remainder, the subtraction underflows, or n+1 > 127 (June 2026 bound).
    pub fn address_count(&self) -> Result<usize> {
        todo!()
    }
}

/// (CmprI, CmprE) Linux chooses for `addrs` (n+1 addresses, n >= 0) against `daddr` (behaviour spec §3.2):
/// CmprI = common prefix of daddr with ALL of addrs[0..n] (15 when n == 0 or all 16 bytes match);
/// CmprE = common prefix of daddr and addrs[n], capped at 15.
pub fn compression(addrs: &[Ipv6Addr], daddr: &Ipv6Addr) -> (u8, u8) {
    todo!()
}

/// Total header length in bytes of the compressed form of `addrs` against `daddr` (8 + seglen + pad).
pub fn compressed_len(addrs: &[Ipv6Addr], daddr: &Ipv6Addr) -> usize {
    todo!()
}

/// Writes the compressed header (next header, segments left, CmprI/CmprE/Pad, elided addresses, zero pad) into
/// `out[..compressed_len(addrs, daddr)]` and returns that length.
pub fn emit_compressed(
    out: &mut [u8],
    next_header: u8,
    segments_left: u8,
    addrs: &[Ipv6Addr],
    daddr: &Ipv6Addr,
) -> usize {
    todo!()
}

/// Decompresses all addresses of a checked header against `daddr` into `out` (which must hold
/// `address_count()` entries); returns the count.
pub fn decompress<T: AsRef<[u8]>>(h: &Header<T>, daddr: &Ipv6Addr, out: &mut [Ipv6Addr]) -> Result<usize> {
    todo!()
}

#[allow(dead_code)]
fn _unused(_: Error) {}
