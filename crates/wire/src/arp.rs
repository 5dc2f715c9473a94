//! ARP for IPv4 over Ethernet (RFC 826), the only pairing lwt6 resolves.
//!
//! ```text
//! | Hardware type (16) = 1      | Protocol type (16) = 0x0800 |  0
//! | HLEN (8) = 6 | PLEN (8) = 4 | Operation (16): 1 request, 2 reply |  4
//! | Sender hardware address (48)                              |  8
//! | Sender protocol address (32)                              | 14
//! | Target hardware address (48)                              | 18
//! | Target protocol address (32)                              | 24
//! ```                                                           (28 bytes; Ethernet pads the frame to 60)

use super::ethernet::Mac;
use super::{Error, Result};
use std::net::Ipv4Addr;

/// EtherType of ARP.
pub const ETHERTYPE_ARP: u16 = 0x0806;
/// Length of an Ethernet/IPv4 ARP packet.
pub const LEN: usize = 28;
/// Operation: request.
pub const OP_REQUEST: u16 = 1;
/// Operation: reply.
pub const OP_REPLY: u16 = 2;

/// An Ethernet/IPv4 ARP packet (RFC 826).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArpRepr {
    /// Operation ([`OP_REQUEST`] or [`OP_REPLY`]).
    pub op: u16,
    /// Sender hardware address.
    pub sender_mac: Mac,
    /// Sender protocol address.
    pub sender_ip: Ipv4Addr,
    /// Target hardware address (zero in a request).
    pub target_mac: Mac,
    /// Target protocol address.
    pub target_ip: Ipv4Addr,
}

impl ArpRepr {
    /// Parses the ARP payload of an Ethernet frame (trailing padding ignored). Errors: `Truncated` below 28 bytes;
    /// `Malformed` for another hardware or protocol type, other address lengths, or an operation other than
    /// request / reply.
    pub fn parse(b: &[u8]) -> Result<ArpRepr> {
        if b.len() < LEN {
            return Err(Error::Truncated);
        }
        if b[0..2] != [0, 1] || b[2..4] != [0x08, 0x00] || b[4] != 6 || b[5] != 4 {
            return Err(Error::Malformed("arp hardware/protocol"));
        }
        let op = u16::from_be_bytes([b[6], b[7]]);
        if op != OP_REQUEST && op != OP_REPLY {
            return Err(Error::Malformed("arp operation"));
        }
        let mac = |at: usize| -> Mac { b[at..at + 6].try_into().expect("6 bytes") };
        let ip = |at: usize| Ipv4Addr::new(b[at], b[at + 1], b[at + 2], b[at + 3]);
        Ok(ArpRepr {
            op,
            sender_mac: mac(8),
            sender_ip: ip(14),
            target_mac: mac(18),
            target_ip: ip(24),
        })
    }

    /// Writes the 28 bytes into `out[..28]`.
    pub fn emit(&self, out: &mut [u8]) {
        let o = &mut out[..LEN];
        o[0..6].copy_from_slice(&[0, 1, 0x08, 0x00, 6, 4]);
        o[6..8].copy_from_slice(&self.op.to_be_bytes());
        o[8..14].copy_from_slice(&self.sender_mac);
        o[14..18].copy_from_slice(&self.sender_ip.octets());
        o[18..24].copy_from_slice(&self.target_mac);
        o[24..28].copy_from_slice(&self.target_ip.octets());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request "who has 10.1.0.2? tell 10.1.0.1 (02:00:00:00:01:01)", laid out by hand from RFC 826.
    const REQ: [u8; 28] = [
        0, 1, 8, 0, 6, 4, 0, 1, 2, 0, 0, 0, 1, 1, 10, 1, 0, 1, 0, 0, 0, 0, 0, 0, 10, 1, 0, 2,
    ];

    #[test]
    fn golden_request() {
        let r = ArpRepr::parse(&REQ).unwrap();
        assert_eq!(
            r,
            ArpRepr {
                op: OP_REQUEST,
                sender_mac: [2, 0, 0, 0, 1, 1],
                sender_ip: Ipv4Addr::new(10, 1, 0, 1),
                target_mac: [0; 6],
                target_ip: Ipv4Addr::new(10, 1, 0, 2),
            }
        );
        let mut out = [0u8; 28];
        r.emit(&mut out);
        assert_eq!(out, REQ);
    }

    #[test]
    fn bad_packets_are_named() {
        assert_eq!(ArpRepr::parse(&REQ[..27]), Err(Error::Truncated));
        let mut b = REQ;
        b[1] = 6; // IEEE 802 hardware type
        assert_eq!(
            ArpRepr::parse(&b),
            Err(Error::Malformed("arp hardware/protocol"))
        );
        let mut b = REQ;
        b[7] = 3; // RARP request
        assert_eq!(ArpRepr::parse(&b), Err(Error::Malformed("arp operation")));
    }
}
