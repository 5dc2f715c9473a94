//! The Internet checksum (RFC 1071) and the IPv6 pseudo-header (RFC 8200 §8.1).

use std::net::Ipv6Addr;

/// One's-complement sum of `data` folded to 16 bits, NOT complemented (feed into [`finish`]).
/// Odd lengths are padded with a zero byte, per RFC 1071.
pub fn sum(data: &[u8]) -> u32 {
    todo!("wire::checksum::sum")
}

/// Adds two partial sums.
pub fn combine(a: u32, b: u32) -> u32 {
    todo!()
}

/// Folds a 32-bit partial sum and complements it: the value to store in a checksum field.
pub fn finish(sum: u32) -> u16 {
    todo!()
}

/// Partial sum of the IPv6 pseudo-header (src, dst, upper-layer length, next header).
pub fn pseudo_header_v6(src: &Ipv6Addr, dst: &Ipv6Addr, upper_len: u32, next_header: u8) -> u32 {
    todo!()
}
