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

mod field {
    //! Byte offsets of the fixed header fields (RFC 8200 §3).
    pub const VER_TC_FLOW: core::ops::Range<usize> = 0..4;
    pub const PAYLOAD_LEN: core::ops::Range<usize> = 4..6;
    pub const NEXT_HEADER: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC: core::ops::Range<usize> = 8..24;
    pub const DST: core::ops::Range<usize> = 24..40;
}

/// A checked view over an IPv6 packet (header plus whatever follows).
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps `buffer`: checks length >= 40, version == 6 and 40 + payload_len <= buffer length.
    ///
    /// Bytes past `40 + payload_len` (e.g. Ethernet padding) are allowed and ignored by [`Packet::payload`].
    /// Jumbograms (RFC 2675) are not supported: a zero payload length just means an empty payload.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let b = buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        if b[0] >> 4 != 6 {
            return Err(Error::Malformed("ipv6 version"));
        }
        let plen = usize::from(u16::from_be_bytes([b[4], b[5]]));
        if HEADER_LEN + plen > b.len() {
            return Err(Error::Truncated);
        }
        Ok(Packet { buffer })
    }
    /// Wraps without checks (caller guarantees >= 40 bytes).
    pub fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }
    /// Consumes the view, returning the buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }
    /// The first 32 bits (version, traffic class, flow label), host order.
    fn word0(&self) -> u32 {
        let b = &self.buffer.as_ref()[field::VER_TC_FLOW];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }
    /// Version field (6).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[0] >> 4
    }
    /// Traffic class (8 bits).
    pub fn traffic_class(&self) -> u8 {
        (self.word0() >> 20) as u8
    }
    /// Flow label (20 bits).
    pub fn flow_label(&self) -> u32 {
        self.word0() & FLOW_LABEL_MASK
    }
    /// Payload length.
    pub fn payload_len(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::PAYLOAD_LEN];
        u16::from_be_bytes([b[0], b[1]])
    }
    /// Next header.
    pub fn next_header(&self) -> u8 {
        self.buffer.as_ref()[field::NEXT_HEADER]
    }
    /// Hop limit.
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_LIMIT]
    }
    /// Source address.
    pub fn src_addr(&self) -> Ipv6Addr {
        let mut a = [0u8; 16];
        a.copy_from_slice(&self.buffer.as_ref()[field::SRC]);
        Ipv6Addr::from(a)
    }
    /// Destination address.
    pub fn dst_addr(&self) -> Ipv6Addr {
        let mut a = [0u8; 16];
        a.copy_from_slice(&self.buffer.as_ref()[field::DST]);
        Ipv6Addr::from(a)
    }
    /// The bytes after the fixed header, limited to payload_len.
    ///
    /// On an unchecked view whose payload_len overruns the buffer, this is clamped to the buffer.
    pub fn payload(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        let end = (HEADER_LEN + usize::from(self.payload_len())).min(b.len());
        &b[HEADER_LEN..end]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets version 6, traffic class and flow label in the first 32 bits.
    ///
    /// Writes `6 << 28 | tc << 20 | (flow & 0xfffff)` big-endian; flow label bits above 20 are dropped.
    pub fn set_version_tc_flow(&mut self, traffic_class: u8, flow_label: u32) {
        let w = (6u32 << 28) | (u32::from(traffic_class) << 20) | (flow_label & FLOW_LABEL_MASK);
        self.buffer.as_mut()[field::VER_TC_FLOW].copy_from_slice(&w.to_be_bytes());
    }
    /// Sets the payload length.
    pub fn set_payload_len(&mut self, len: u16) {
        self.buffer.as_mut()[field::PAYLOAD_LEN].copy_from_slice(&len.to_be_bytes());
    }
    /// Sets the next header.
    pub fn set_next_header(&mut self, nh: u8) {
        self.buffer.as_mut()[field::NEXT_HEADER] = nh;
    }
    /// Sets the hop limit.
    pub fn set_hop_limit(&mut self, hl: u8) {
        self.buffer.as_mut()[field::HOP_LIMIT] = hl;
    }
    /// Sets the source address.
    pub fn set_src_addr(&mut self, a: Ipv6Addr) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&a.octets());
    }
    /// Sets the destination address.
    pub fn set_dst_addr(&mut self, a: Ipv6Addr) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&a.octets());
    }
    /// Mutable bytes after the fixed header, limited to payload_len (clamped to the buffer).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let plen = usize::from(self.payload_len());
        let b = self.buffer.as_mut();
        let end = (HEADER_LEN + plen).min(b.len());
        &mut b[HEADER_LEN..end]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
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
        if p.version() != 6 {
            return Err(Error::Malformed("ipv6 version"));
        }
        Ok(Ipv6Repr {
            traffic_class: p.traffic_class(),
            flow_label: p.flow_label(),
            payload_len: p.payload_len(),
            next_header: p.next_header(),
            hop_limit: p.hop_limit(),
            src: p.src_addr(),
            dst: p.dst_addr(),
        })
    }
    /// Writes the 40 header bytes into `out[..40]` (panics if shorter: callers size it).
    /// Flow label bits above 20 are dropped.
    pub fn emit(&self, out: &mut [u8]) {
        let mut p = Packet::new_unchecked(&mut out[..HEADER_LEN]);
        p.set_version_tc_flow(self.traffic_class, self.flow_label);
        p.set_payload_len(self.payload_len);
        p.set_next_header(self.next_header);
        p.set_hop_limit(self.hop_limit);
        p.set_src_addr(self.src);
        p.set_dst_addr(self.dst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The outer IPv6 header of the kernel-captured `encap` frame (docs/references.md §1.4, bytes 0x0e..0x36):
    /// tc 0xb8, flow 0x12345, plen 109, nh 43, hlim 63, src fd00:2::1, dst fc00::a.
    const ENCAP_OUTER: [u8; 40] = [
        0x6b, 0x81, 0x23, 0x45, 0x00, 0x6d, 0x2b, 0x3f, // ver/tc/flow, plen, nh, hlim
        0xfd, 0x00, 0x00, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, // src
        0xfc, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0a, // dst
    ];

    fn encap_packet() -> Vec<u8> {
        let mut v = ENCAP_OUTER.to_vec();
        v.resize(40 + 109, 0);
        v
    }

    #[test]
    fn parse_kernel_outer_header() {
        let buf = encap_packet();
        let p = Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(p.version(), 6);
        assert_eq!(p.traffic_class(), 0xb8);
        assert_eq!(p.flow_label(), 0x12345);
        assert_eq!(p.payload_len(), 109);
        assert_eq!(p.next_header(), 43);
        assert_eq!(p.hop_limit(), 63);
        assert_eq!(p.src_addr(), "fd00:2::1".parse::<Ipv6Addr>().unwrap());
        assert_eq!(p.dst_addr(), "fc00::a".parse::<Ipv6Addr>().unwrap());
        assert_eq!(p.payload().len(), 109);
        let r = Ipv6Repr::parse(&p).unwrap();
        let mut out = [0u8; 40];
        r.emit(&mut out);
        assert_eq!(out, ENCAP_OUTER);
    }

    /// The input packet of docs/references.md §6: `6b 81 23 45 00 0d 11 40 fd 00 ...`, i.e. tc 0xb8,
    /// flow 0x12345, plen 13, nh 17 (UDP), hlim 64, src fd00:1::1, dst fd00:99::1.
    #[test]
    fn setters_build_input_header() {
        let mut buf = [0u8; 40 + 13];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_version_tc_flow(0xb8, 0x12345);
        p.set_payload_len(13);
        p.set_next_header(17);
        p.set_hop_limit(64);
        p.set_src_addr("fd00:1::1".parse().unwrap());
        p.set_dst_addr("fd00:99::1".parse().unwrap());
        assert_eq!(
            &buf[..10],
            &[0x6b, 0x81, 0x23, 0x45, 0x00, 0x0d, 0x11, 0x40, 0xfd, 0x00]
        );
        let p = Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(p.flow_label(), 0x12345);
        assert_eq!(p.traffic_class(), 0xb8);
    }

    #[test]
    fn flow_label_is_masked() {
        let mut buf = [0u8; 40];
        Packet::new_unchecked(&mut buf[..]).set_version_tc_flow(0xff, 0xfff0_0001);
        // 6 << 28 | 0xff << 20 | 0x00001 = 0x6ff00001
        assert_eq!(&buf[..4], &[0x6f, 0xf0, 0x00, 0x01]);
    }

    #[test]
    fn checked_errors() {
        let buf = encap_packet();
        assert_eq!(
            Packet::new_checked(&buf[..39]).unwrap_err(),
            Error::Truncated
        );
        // Payload length 109 but one byte missing.
        assert_eq!(
            Packet::new_checked(&buf[..148]).unwrap_err(),
            Error::Truncated
        );
        let mut v4 = buf.clone();
        v4[0] = 0x4b;
        assert_eq!(
            Packet::new_checked(&v4[..]).unwrap_err(),
            Error::Malformed("ipv6 version")
        );
        // Trailing bytes (link padding) are fine and excluded from the payload.
        let mut padded = buf.clone();
        padded.extend_from_slice(&[0xee; 7]);
        let p = Packet::new_checked(&padded[..]).unwrap();
        assert_eq!(p.payload().len(), 109);
        // Zero payload length with trailing bytes: empty payload.
        let mut z = buf.clone();
        z[4] = 0;
        z[5] = 0;
        assert!(Packet::new_checked(&z[..]).unwrap().payload().is_empty());
    }

    #[test]
    fn unchecked_payload_is_clamped() {
        let buf = encap_packet();
        let p = Packet::new_unchecked(&buf[..60]);
        assert_eq!(p.payload().len(), 20);
    }

    fn arb_repr() -> impl Strategy<Value = Ipv6Repr> {
        (
            any::<u8>(),
            0u32..=FLOW_LABEL_MASK,
            any::<u16>(),
            any::<u8>(),
            any::<u8>(),
            any::<[u8; 16]>(),
            any::<[u8; 16]>(),
        )
            .prop_map(
                |(traffic_class, flow_label, payload_len, next_header, hop_limit, s, d)| Ipv6Repr {
                    traffic_class,
                    flow_label,
                    payload_len,
                    next_header,
                    hop_limit,
                    src: Ipv6Addr::from(s),
                    dst: Ipv6Addr::from(d),
                },
            )
    }

    proptest! {
        #[test]
        fn round_trip(r in arb_repr()) {
            let mut buf = vec![0u8; HEADER_LEN + usize::from(r.payload_len)];
            r.emit(&mut buf);
            let p = Packet::new_checked(&buf[..]).unwrap();
            prop_assert_eq!(Ipv6Repr::parse(&p).unwrap(), r);
        }

        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..120)) {
            if let Ok(p) = Packet::new_checked(&data[..]) {
                let _ = Ipv6Repr::parse(&p);
                prop_assert!(p.payload().len() <= data.len() - HEADER_LEN);
            }
            // Unchecked views of >= 40 bytes never panic either.
            if data.len() >= HEADER_LEN {
                let p = Packet::new_unchecked(&data[..]);
                let _ = (p.payload(), p.flow_label(), p.src_addr());
            }
        }
    }
}
