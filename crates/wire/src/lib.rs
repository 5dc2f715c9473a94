//! Wire formats: checked views over bytes (`Packet<T: AsRef<[u8]>>`-style) plus `Repr`s that parse and emit.
//!
//! Nothing here allocates on the packet path or does I/O. Every parser returns a typed [`Error`].

#![deny(unsafe_code)]

pub mod arp;
pub mod checksum;
pub mod ethernet;
pub mod exthdr;
pub mod hbh;
pub mod icmpv4;
pub mod icmpv6;
pub mod ioam;
pub mod ipv4;
pub mod ipv6;
pub mod ndp;
pub mod rpl;
pub mod srh;

/// A wire-format error: why some bytes are not a valid header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The buffer ends before the header (or a length field) says it should.
    #[error("truncated")]
    Truncated,
    /// A field holds a value the format does not allow; the string names the field or rule.
    #[error("malformed: {0}")]
    Malformed(&'static str),
}

/// Convenience alias for wire results.
pub type Result<T> = core::result::Result<T, Error>;

/// IP protocol numbers (IANA "Assigned Internet Protocol Numbers") used by lwt6.
pub mod proto {
    /// IPv6 Hop-by-Hop Options (RFC 8200 §4.3).
    pub const HOPOPTS: u8 = 0;
    /// IPv4 encapsulation.
    pub const IPV4: u8 = 4;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
    /// IPv6 encapsulation.
    pub const IPV6: u8 = 41;
    /// IPv6 Routing header (RFC 8200 §4.4).
    pub const ROUTING: u8 = 43;
    /// IPv6 Fragment header (RFC 8200 §4.5).
    pub const FRAGMENT: u8 = 44;
    /// Encapsulating Security Payload.
    pub const ESP: u8 = 50;
    /// Authentication Header.
    pub const AH: u8 = 51;
    /// ICMPv6.
    pub const ICMPV6: u8 = 58;
    /// No next header.
    pub const NONE: u8 = 59;
    /// IPv6 Destination Options (RFC 8200 §4.6).
    pub const DSTOPTS: u8 = 60;
    /// Ethernet (RFC 8986 §10.1, used by L2 SRv6 encapsulation).
    pub const ETHERNET: u8 = 143;
}
