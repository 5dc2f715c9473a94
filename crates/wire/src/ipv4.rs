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

use super::checksum;
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
    ///
    /// The header checksum is not checked here: see [`Packet::verify_checksum`].
    pub fn new_checked(buffer: T) -> Result<Self> {
        let b = buffer.as_ref();
        if b.len() < MIN_HEADER_LEN {
            return Err(Error::Truncated);
        }
        if b[0] >> 4 != 4 {
            return Err(Error::Malformed("ipv4 version"));
        }
        let hlen = usize::from(b[0] & 0x0f) * 4;
        if hlen < MIN_HEADER_LEN {
            return Err(Error::Malformed("ipv4 ihl"));
        }
        if hlen > b.len() {
            return Err(Error::Truncated);
        }
        let total = usize::from(u16::from_be_bytes([b[2], b[3]]));
        if total < hlen {
            return Err(Error::Malformed("ipv4 total length"));
        }
        if total > b.len() {
            return Err(Error::Truncated);
        }
        Ok(Packet { buffer })
    }
    /// Wraps without checks (caller guarantees a full header: >= 20 bytes and >= IHL * 4).
    pub fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }
    /// Consumes the view, returning the buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }
    fn word(&self, at: usize) -> u16 {
        let b = self.buffer.as_ref();
        u16::from_be_bytes([b[at], b[at + 1]])
    }
    /// Header length in bytes (IHL * 4).
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[0] & 0x0f) * 4
    }
    /// Type of service / DSCP+ECN.
    pub fn tos(&self) -> u8 {
        self.buffer.as_ref()[1]
    }
    /// Total length.
    pub fn total_len(&self) -> u16 {
        self.word(2)
    }
    /// Identification.
    pub fn ident(&self) -> u16 {
        self.word(4)
    }
    /// Flags (3 bits) and fragment offset (13 bits), as on the wire.
    pub fn flags_frag(&self) -> u16 {
        self.word(6)
    }
    /// Time to live.
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[8]
    }
    /// Protocol.
    pub fn protocol(&self) -> u8 {
        self.buffer.as_ref()[9]
    }
    /// Header checksum field.
    pub fn checksum(&self) -> u16 {
        self.word(10)
    }
    /// Whether the header checksum verifies.
    pub fn verify_checksum(&self) -> bool {
        let b = self.buffer.as_ref();
        let hlen = self.header_len().min(b.len());
        checksum::finish(checksum::sum(&b[..hlen])) == 0
    }
    /// Source address.
    pub fn src_addr(&self) -> Ipv4Addr {
        let b = self.buffer.as_ref();
        Ipv4Addr::new(b[12], b[13], b[14], b[15])
    }
    /// Destination address.
    pub fn dst_addr(&self) -> Ipv4Addr {
        let b = self.buffer.as_ref();
        Ipv4Addr::new(b[16], b[17], b[18], b[19])
    }
    /// The bytes after the header, limited to total_len (clamped to the buffer on unchecked views).
    pub fn payload(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        let end = usize::from(self.total_len()).min(b.len());
        let start = self.header_len().min(end);
        &b[start..end]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Decrements TTL by one and updates the checksum incrementally (RFC 1624).
    ///
    /// RFC 1624 §3 eqn. 3: `HC' = ~(~HC + ~m + m')`, where `m` is the 16-bit word holding TTL and
    /// protocol. A TTL of 0 is left unchanged (such a packet must be dropped, not forwarded).
    pub fn decrement_ttl(&mut self) {
        let ttl = self.ttl();
        if ttl == 0 {
            return;
        }
        let proto = self.protocol();
        let old = u16::from_be_bytes([ttl, proto]);
        let new = u16::from_be_bytes([ttl - 1, proto]);
        let hc = self.checksum();
        let s = checksum::combine(
            checksum::combine(u32::from(!hc), u32::from(!old)),
            u32::from(new),
        );
        let b = self.buffer.as_mut();
        b[8] = ttl - 1;
        b[10..12].copy_from_slice(&checksum::finish(s).to_be_bytes());
    }
    /// Recomputes and stores the header checksum.
    pub fn fill_checksum(&mut self) {
        let hlen = self.header_len();
        let b = self.buffer.as_mut();
        let hlen = hlen.min(b.len());
        b[10] = 0;
        b[11] = 0;
        let c = checksum::finish(checksum::sum(&b[..hlen]));
        b[10..12].copy_from_slice(&c.to_be_bytes());
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
    ///
    /// The header checksum is not verified here (callers that must drop bad headers use
    /// [`Packet::verify_checksum`]).
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Self> {
        Ok(Ipv4Repr {
            tos: p.tos(),
            total_len: p.total_len(),
            ident: p.ident(),
            flags_frag: p.flags_frag(),
            ttl: p.ttl(),
            protocol: p.protocol(),
            src: p.src_addr(),
            dst: p.dst_addr(),
        })
    }
    /// Emits a 20-byte header with a correct checksum into `out[..20]`.
    pub fn emit(&self, out: &mut [u8]) {
        let o = &mut out[..MIN_HEADER_LEN];
        o[0] = 0x45;
        o[1] = self.tos;
        o[2..4].copy_from_slice(&self.total_len.to_be_bytes());
        o[4..6].copy_from_slice(&self.ident.to_be_bytes());
        o[6..8].copy_from_slice(&self.flags_frag.to_be_bytes());
        o[8] = self.ttl;
        o[9] = self.protocol;
        o[12..16].copy_from_slice(&self.src.octets());
        o[16..20].copy_from_slice(&self.dst.octets());
        Packet::new_unchecked(o).fill_checksum();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A header whose checksum is hand-derived (RFC 1071 sum of the 16-bit words):
    /// 45 00 0073 0000 4000 4011 [cksum] c0a8 0001 c0a8 00c7
    /// 4500+0073+0000+4000+4011+c0a8+0001+c0a8+00c7 = 0x2479c -> 0x479e, complement 0xb861.
    /// (This is the widely reproduced example from the Wikipedia "IPv4 header checksum" article.)
    const HDR: [u8; 20] = [
        0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00,
        0x01, 0xc0, 0xa8, 0x00, 0xc7,
    ];

    fn packet() -> Vec<u8> {
        let mut v = HDR.to_vec();
        v.resize(0x73, 0);
        v
    }

    #[test]
    fn parse_and_verify() {
        let buf = packet();
        let p = Packet::new_checked(&buf[..]).unwrap();
        assert!(p.verify_checksum());
        assert_eq!(p.header_len(), 20);
        assert_eq!(p.total_len(), 0x73);
        assert_eq!(p.ttl(), 64);
        assert_eq!(p.protocol(), 17);
        assert_eq!(p.checksum(), 0xb861);
        assert_eq!(p.src_addr(), Ipv4Addr::new(192, 168, 0, 1));
        assert_eq!(p.dst_addr(), Ipv4Addr::new(192, 168, 0, 199));
        assert_eq!(p.payload().len(), 0x73 - 20);
        let r = Ipv4Repr::parse(&p).unwrap();
        assert_eq!(r.flags_frag, 0x4000);
        let mut out = [0u8; 20];
        r.emit(&mut out);
        assert_eq!(out, HDR);
    }

    #[test]
    fn fill_checksum_matches_hand_derivation() {
        let mut buf = packet();
        buf[10] = 0xde;
        buf[11] = 0xad;
        let mut p = Packet::new_checked(&mut buf[..]).unwrap();
        assert!(!p.verify_checksum());
        p.fill_checksum();
        assert_eq!(p.checksum(), 0xb861);
    }

    #[test]
    fn decrement_ttl_hand_derived() {
        // TTL/proto word 4011 -> 3f11: sum drops by 0x0100: 0x479e - 0x0100 = 0x469e, ~ = 0xb961.
        let mut buf = packet();
        let mut p = Packet::new_checked(&mut buf[..]).unwrap();
        p.decrement_ttl();
        assert_eq!(p.ttl(), 63);
        assert_eq!(p.checksum(), 0xb961);
        assert!(p.verify_checksum());
    }

    #[test]
    fn decrement_ttl_zero_is_noop() {
        let mut buf = packet();
        buf[8] = 0;
        let mut p = Packet::new_checked(&mut buf[..]).unwrap();
        p.fill_checksum();
        let c = p.checksum();
        p.decrement_ttl();
        assert_eq!((p.ttl(), p.checksum()), (0, c));
    }

    #[test]
    fn checked_errors() {
        let buf = packet();
        assert_eq!(
            Packet::new_checked(&buf[..19]).unwrap_err(),
            Error::Truncated
        );
        assert_eq!(
            Packet::new_checked(&buf[..0x72]).unwrap_err(),
            Error::Truncated
        );
        let mut b = buf.clone();
        b[0] = 0x65;
        assert_eq!(
            Packet::new_checked(&b[..]).unwrap_err(),
            Error::Malformed("ipv4 version")
        );
        let mut b = buf.clone();
        b[0] = 0x44;
        assert_eq!(
            Packet::new_checked(&b[..]).unwrap_err(),
            Error::Malformed("ipv4 ihl")
        );
        let mut b = buf.clone();
        b[0] = 0x4f; // 60-byte header in a 24-byte buffer
        assert_eq!(Packet::new_checked(&b[..24]).unwrap_err(), Error::Truncated);
        let mut b = buf.clone();
        b[2] = 0;
        b[3] = 19;
        assert_eq!(
            Packet::new_checked(&b[..]).unwrap_err(),
            Error::Malformed("ipv4 total length")
        );
    }

    #[test]
    fn options_are_covered_by_checksum() {
        // IHL 6 with a 4-byte NOP option block (01 01 01 01).
        let mut buf = [0u8; 24];
        buf[0] = 0x46;
        buf[3] = 24;
        buf[8] = 9;
        buf[20..24].copy_from_slice(&[1, 1, 1, 1]);
        let mut p = Packet::new_checked(&mut buf[..]).unwrap();
        p.fill_checksum();
        assert!(p.verify_checksum());
        p.decrement_ttl();
        assert!(p.verify_checksum());
        assert_eq!(p.header_len(), 24);
        assert!(p.payload().is_empty());
    }

    fn arb_repr() -> impl Strategy<Value = Ipv4Repr> {
        (
            any::<u8>(),
            20u16..=1500,
            any::<u16>(),
            any::<u16>(),
            any::<u8>(),
            any::<u8>(),
            any::<[u8; 4]>(),
            any::<[u8; 4]>(),
        )
            .prop_map(|(tos, total_len, ident, flags_frag, ttl, protocol, s, d)| {
                Ipv4Repr {
                    tos,
                    total_len,
                    ident,
                    flags_frag,
                    ttl,
                    protocol,
                    src: Ipv4Addr::from(s),
                    dst: Ipv4Addr::from(d),
                }
            })
    }

    proptest! {
        #[test]
        fn round_trip(r in arb_repr()) {
            let mut buf = vec![0u8; usize::from(r.total_len)];
            r.emit(&mut buf);
            let p = Packet::new_checked(&buf[..]).unwrap();
            prop_assert!(p.verify_checksum());
            prop_assert_eq!(Ipv4Repr::parse(&p).unwrap(), r);
        }

        /// RFC 1624 incremental update equals a full recomputation, bit for bit.
        #[test]
        fn decrement_ttl_matches_full_recompute(r in arb_repr(), opts in proptest::collection::vec(any::<u8>(), 0..=40)) {
            let olen = opts.len() / 4 * 4;
            let hlen = 20 + olen;
            let mut buf = vec![0u8; hlen.max(usize::from(r.total_len))];
            let r = Ipv4Repr { total_len: buf.len() as u16, ..r };
            r.emit(&mut buf);
            buf[0] = 0x40 | (hlen / 4) as u8;
            buf[20..hlen].copy_from_slice(&opts[..olen]);
            let mut p = Packet::new_checked(&mut buf[..]).unwrap();
            p.fill_checksum();
            let mut inc = p.into_inner().to_vec();
            let mut p = Packet::new_checked(&mut inc[..]).unwrap();
            p.decrement_ttl();
            let mut full = inc.clone();
            let mut q = Packet::new_checked(&mut full[..]).unwrap();
            q.fill_checksum();
            prop_assert_eq!(&inc, &full);
        }

        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..100)) {
            let mut data = data;
            if let Ok(p) = Packet::new_checked(&data[..]) {
                let _ = Ipv4Repr::parse(&p);
                let _ = (p.verify_checksum(), p.payload());
            }
            if let Ok(mut p) = Packet::new_checked(&mut data[..]) {
                p.decrement_ttl();
                p.fill_checksum();
                prop_assert!(p.verify_checksum());
            }
        }
    }
}
