//! Neighbor Discovery for IPv6 (RFC 4861): Neighbor Solicitation and Advertisement with their link-layer address
//! options, and the solicited-node multicast address (RFC 4291 §2.7.1).
//!
//! Both messages are ICMPv6 (next header 58) with a 24-byte fixed part followed by options:
//!
//! ```text
//! Neighbor Solicitation (RFC 4861 §4.3)       Neighbor Advertisement (RFC 4861 §4.4)
//! | Type 135 | Code 0 | Checksum        |  0   | Type 136 | Code 0 | Checksum        |  0
//! | Reserved (32)                       |  4   |R|S|O| Reserved (29)                 |  4
//! | Target Address (128)                |  8   | Target Address (128)              |  8
//! | Options ...                         | 24   | Options ...                       | 24
//! ```
//!
//! Options (RFC 4861 §4.6): `| Type (8) | Length (8, units of 8 octets) | value ... |`; the source (type 1) and
//! target (type 2) link-layer address options (§4.6.1) carry a 6-byte MAC on Ethernet, 8 bytes in all.

use super::checksum;
use super::ethernet::Mac;
use super::ipv6::{self, Ipv6Repr};
use super::{Error, Result, proto};
use std::net::Ipv6Addr;

/// ICMPv6 type of a Neighbor Solicitation (RFC 4861 §4.3).
pub const TYPE_NEIGHBOR_SOLICIT: u8 = 135;
/// ICMPv6 type of a Neighbor Advertisement (RFC 4861 §4.4).
pub const TYPE_NEIGHBOR_ADVERT: u8 = 136;
/// Length of the fixed part of an NS or NA (type .. target address).
pub const FIXED_LEN: usize = 24;
/// Source Link-Layer Address option type (RFC 4861 §4.6.1).
pub const OPT_SOURCE_LLADDR: u8 = 1;
/// Target Link-Layer Address option type (RFC 4861 §4.6.1).
pub const OPT_TARGET_LLADDR: u8 = 2;
/// Hop limit every ND message is sent with and must be received with (RFC 4861 §7.1.1, §7.1.2).
pub const HOP_LIMIT: u8 = 255;
/// NA flag bits in the first byte of the reserved word (RFC 4861 §4.4): Router, Solicited, Override.
pub const FLAG_ROUTER: u8 = 0x80;
/// See [`FLAG_ROUTER`].
pub const FLAG_SOLICITED: u8 = 0x40;
/// See [`FLAG_ROUTER`].
pub const FLAG_OVERRIDE: u8 = 0x20;

/// The solicited-node multicast address of `a` (RFC 4291 §2.7.1): `ff02::1:ff00:0/104` with the low 24 bits of
/// `a`.
pub fn solicited_node(a: &Ipv6Addr) -> Ipv6Addr {
    let o = a.octets();
    Ipv6Addr::from([
        0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff, o[13], o[14], o[15],
    ])
}

/// Whether `a` is a solicited-node multicast address (ff02::1:ffXX:XXXX).
pub fn is_solicited_node(a: &Ipv6Addr) -> bool {
    a.octets()[..13] == [0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff]
}

/// The Ethernet address an IPv6 multicast address maps to (RFC 2464 §7): 33:33 and the address's last 32 bits.
pub fn multicast_mac(a: &Ipv6Addr) -> Mac {
    let o = a.octets();
    [0x33, 0x33, o[12], o[13], o[14], o[15]]
}

/// Which of the two messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Neighbor Solicitation.
    Solicit,
    /// Neighbor Advertisement.
    Advert,
}

/// An NS or NA, parsed (RFC 4861 §4.3, §4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NdRepr {
    /// NS or NA.
    pub kind: Kind,
    /// NA flags (R, S, O as [`FLAG_ROUTER`] ...); 0 for an NS.
    pub flags: u8,
    /// Target address.
    pub target: Ipv6Addr,
    /// Link-layer address option: the source's (NS) or the target's (NA), if present.
    pub lladdr: Option<Mac>,
}

impl NdRepr {
    /// Parses an NS or NA message (`icmp` is the whole ICMPv6 message: the IPv6 payload), checking what the
    /// message itself can show (RFC 4861 §7.1.1 / §7.1.2): the ICMPv6 checksum against `src` / `dst`, code 0,
    /// length at least 24, every option of non-zero length and inside the message, target not multicast.
    /// Link-layer options of another size than Ethernet's are ignored. The IP hop limit and the
    /// address rules are the receiver's checks.
    pub fn parse(src: &Ipv6Addr, dst: &Ipv6Addr, icmp: &[u8]) -> Result<NdRepr> {
        if icmp.len() < FIXED_LEN {
            return Err(Error::Truncated);
        }
        let kind = match icmp[0] {
            TYPE_NEIGHBOR_SOLICIT => Kind::Solicit,
            TYPE_NEIGHBOR_ADVERT => Kind::Advert,
            _ => {
                return Err(Error::Malformed(
                    "not a neighbor solicitation/advertisement",
                ));
            }
        };
        if icmp[1] != 0 {
            return Err(Error::Malformed("nd code"));
        }
        let len = u32::try_from(icmp.len()).map_err(|_| Error::Malformed("nd length"))?;
        let sum = checksum::combine(
            checksum::pseudo_header_v6(src, dst, len, proto::ICMPV6),
            checksum::sum(icmp),
        );
        if checksum::finish(sum) != 0 {
            return Err(Error::Malformed("icmpv6 checksum"));
        }
        let target = Ipv6Addr::from(<[u8; 16]>::try_from(&icmp[8..24]).expect("16 bytes"));
        if target.is_multicast() {
            return Err(Error::Malformed("nd target multicast"));
        }
        let want = match kind {
            Kind::Solicit => OPT_SOURCE_LLADDR,
            Kind::Advert => OPT_TARGET_LLADDR,
        };
        let mut lladdr = None;
        let mut opts = &icmp[FIXED_LEN..];
        while !opts.is_empty() {
            if opts.len() < 2 {
                return Err(Error::Truncated);
            }
            let olen = usize::from(opts[1]) * 8;
            if olen == 0 {
                return Err(Error::Malformed("nd option length 0"));
            }
            if olen > opts.len() {
                return Err(Error::Truncated);
            }
            if opts[0] == want && olen == 8 {
                lladdr = Some(<Mac>::try_from(&opts[2..8]).expect("6 bytes"));
            }
            opts = &opts[olen..];
        }
        let flags = match kind {
            Kind::Solicit => 0,
            Kind::Advert => icmp[4] & (FLAG_ROUTER | FLAG_SOLICITED | FLAG_OVERRIDE),
        };
        Ok(NdRepr {
            kind,
            flags,
            target,
            lladdr,
        })
    }

    /// Length of the ICMPv6 message [`NdRepr::emit`] writes: 24, plus 8 with a link-layer option.
    pub fn icmp_len(&self) -> usize {
        FIXED_LEN + if self.lladdr.is_some() { 8 } else { 0 }
    }

    /// Writes a whole IPv6 packet (hop limit 255, traffic class and flow label 0) carrying this message from `src`
    /// to `dst` into `out`, with its checksum; returns the packet's length. `out` must hold 40 +
    /// [`NdRepr::icmp_len`] bytes.
    pub fn emit(&self, out: &mut [u8], src: Ipv6Addr, dst: Ipv6Addr) -> usize {
        let icmp_len = self.icmp_len();
        let total = ipv6::HEADER_LEN + icmp_len;
        Ipv6Repr {
            traffic_class: 0,
            flow_label: 0,
            payload_len: icmp_len as u16,
            next_header: proto::ICMPV6,
            hop_limit: HOP_LIMIT,
            src,
            dst,
        }
        .emit(&mut out[..total]);
        let icmp = &mut out[ipv6::HEADER_LEN..total];
        let (ty, opt) = match self.kind {
            Kind::Solicit => (TYPE_NEIGHBOR_SOLICIT, OPT_SOURCE_LLADDR),
            Kind::Advert => (TYPE_NEIGHBOR_ADVERT, OPT_TARGET_LLADDR),
        };
        icmp[..8].copy_from_slice(&[ty, 0, 0, 0, self.flags, 0, 0, 0]);
        icmp[8..24].copy_from_slice(&self.target.octets());
        if let Some(mac) = self.lladdr {
            icmp[24] = opt;
            icmp[25] = 1;
            icmp[26..32].copy_from_slice(&mac);
        }
        let sum = checksum::combine(
            checksum::pseudo_header_v6(&src, &dst, icmp_len as u32, proto::ICMPV6),
            checksum::sum(icmp),
        );
        icmp[2..4].copy_from_slice(&checksum::finish(sum).to_be_bytes());
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    /// RFC 4291 §2.7.1: "For example, the Solicited-Node multicast address corresponding to the IPv6 address
    /// 4037::01:800:200E:8C6C is FF02::1:FF0E:8C6C."
    #[test]
    fn solicited_node_rfc4291_example() {
        let s = solicited_node(&a("4037::01:800:200E:8C6C"));
        assert_eq!(s, a("FF02::1:FF0E:8C6C"));
        assert!(is_solicited_node(&s));
        assert!(!is_solicited_node(&a("ff02::1")));
        // RFC 2464 §7: 33:33 followed by the last four octets.
        assert_eq!(multicast_mac(&s), [0x33, 0x33, 0xff, 0x0e, 0x8c, 0x6c]);
    }

    /// An NS from fd00:1::1 (MAC 02:00:00:00:01:01) for fd00:1::2 to its solicited-node group, laid out by hand
    /// from RFC 4861 §4.3 / §4.6.1. Checksum computed independently (Python, RFC 1071 over the RFC 8200 §8.1
    /// pseudo-header: src, dst, length 32, next header 58, then the message with a zero checksum):
    /// ```text
    /// m = bytes([135,0,0,0, 0,0,0,0]) + ip('fd00:1::2') + bytes([1,1, 2,0,0,0,1,1])
    /// ph = ip('fd00:1::1') + ip('ff02::1:ff00:2') + (32).to_bytes(4,'big') + bytes([0,0,0,58])
    /// -> 0x7c95
    /// ```
    const NS: [u8; 72] = [
        0x60, 0, 0, 0, 0, 32, 58, 255, //
        0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, //
        0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0, 0, 2, //
        135, 0, 0x7c, 0x95, 0, 0, 0, 0, //
        0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, //
        1, 1, 2, 0, 0, 0, 1, 1,
    ];

    #[test]
    fn ns_golden_parse_and_emit() {
        let (src, dst) = (a("fd00:1::1"), a("ff02::1:ff00:2"));
        let r = NdRepr::parse(&src, &dst, &NS[40..]).unwrap();
        assert_eq!(
            r,
            NdRepr {
                kind: Kind::Solicit,
                flags: 0,
                target: a("fd00:1::2"),
                lladdr: Some([2, 0, 0, 0, 1, 1]),
            }
        );
        let mut out = [0u8; 80];
        let n = r.emit(&mut out, src, dst);
        assert_eq!(&out[..n], &NS[..]);
    }

    /// A solicited, override NA (flags 0x60) for fd00:1::2 with its MAC 02:00:00:00:01:02 from fd00:1::2 to
    /// fd00:1::1 (RFC 4861 §4.4). Checksum by the same independent computation: 0x1b97.
    const NA: [u8; 72] = [
        0x60, 0, 0, 0, 0, 32, 58, 255, //
        0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, //
        0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, //
        136, 0, 0x1b, 0x97, 0x60, 0, 0, 0, //
        0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, //
        2, 1, 2, 0, 0, 0, 1, 2,
    ];

    #[test]
    fn na_golden_parse_and_emit() {
        let (src, dst) = (a("fd00:1::2"), a("fd00:1::1"));
        let r = NdRepr::parse(&src, &dst, &NA[40..]).unwrap();
        assert_eq!(r.kind, Kind::Advert);
        assert_eq!(r.flags, FLAG_SOLICITED | FLAG_OVERRIDE);
        assert_eq!(r.lladdr, Some([2, 0, 0, 0, 1, 2]));
        let mut out = [0u8; 80];
        let n = r.emit(&mut out, src, dst);
        assert_eq!(&out[..n], &NA[..]);
    }

    #[test]
    fn invalid_messages_are_named() {
        let (src, dst) = (a("fd00:1::1"), a("ff02::1:ff00:2"));
        let body = &NS[40..];
        // Checksum against another destination.
        assert_eq!(
            NdRepr::parse(&src, &a("fd00:1::2"), body),
            Err(Error::Malformed("icmpv6 checksum"))
        );
        assert_eq!(
            NdRepr::parse(&src, &dst, &body[..20]),
            Err(Error::Truncated)
        );
        // Code 1, a zero-length option, a multicast target: fix the checksum up by re-emitting the damage.
        let mut m = body.to_vec();
        m[1] = 1;
        assert_eq!(
            NdRepr::parse(&src, &dst, &m),
            Err(Error::Malformed("nd code"))
        );
        let with_sum = |m: &mut Vec<u8>| {
            m[2] = 0;
            m[3] = 0;
            let s = checksum::combine(
                checksum::pseudo_header_v6(&src, &dst, m.len() as u32, proto::ICMPV6),
                checksum::sum(m),
            );
            m[2..4].copy_from_slice(&checksum::finish(s).to_be_bytes());
        };
        let mut m = body.to_vec();
        m[25] = 0;
        with_sum(&mut m);
        assert_eq!(
            NdRepr::parse(&src, &dst, &m),
            Err(Error::Malformed("nd option length 0"))
        );
        let mut m = body.to_vec();
        m[25] = 2;
        with_sum(&mut m);
        assert_eq!(NdRepr::parse(&src, &dst, &m), Err(Error::Truncated));
        let mut m = body.to_vec();
        m[8] = 0xff;
        with_sum(&mut m);
        assert_eq!(
            NdRepr::parse(&src, &dst, &m),
            Err(Error::Malformed("nd target multicast"))
        );
    }
}
