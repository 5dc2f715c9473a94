//! IPv6 extension-header walker (RFC 8200 §4).
//!
//! Walks the chain that starts at the IPv6 header's Next Header field, header by header, using each
//! header's 8-octet length unit (Fragment: fixed 8 bytes; AH: (len+2)*4 bytes, RFC 4302).
//! Hop-by-Hop may only appear first (RFC 8200 §4.1); a later one is an error.
//!
//! ```text
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+- - - -
//! |  Next Header  |  Hdr Ext Len  |  ...     generic layout (RFC 8200 §4, RFC 4302 §2 for AH)
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+- - - -
//! ```
//!
//! The walk is bounded by the IPv6 payload length (as the kernel trims to it before parsing), so
//! link-layer padding after the packet is never read as a header. A Fragment header with a
//! non-zero offset ends the walk: what follows is fragment data, not headers.

use super::{Error, Result, proto};

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
    matches!(
        nh,
        proto::HOPOPTS | proto::ROUTING | proto::FRAGMENT | proto::AH | proto::DSTOPTS
    )
}

/// Length of the fixed IPv6 header.
const IPV6_HEADER_LEN: usize = 40;
/// Length of the Fragment header (RFC 8200 §4.5).
const FRAGMENT_LEN: usize = 8;

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
    ///
    /// The walk is limited to `40 + payload_len` bytes when that fits in `packet` (otherwise to
    /// `packet.len()`); a packet shorter than 40 bytes yields `Err(Truncated)`.
    pub fn new(packet: &'a [u8]) -> Self {
        let (packet, next) = if packet.len() >= IPV6_HEADER_LEN {
            let plen = usize::from(u16::from_be_bytes([packet[4], packet[5]]));
            let end = (IPV6_HEADER_LEN + plen).min(packet.len());
            (&packet[..end], packet[6])
        } else {
            (packet, proto::NONE)
        };
        Walker {
            packet,
            next,
            offset: IPV6_HEADER_LEN,
            done: false,
        }
    }
    /// After the iterator ends without error: the upper-layer protocol and its offset.
    pub fn upper_layer(&self) -> (u8, usize) {
        (self.next, self.offset)
    }

    fn step(&mut self) -> Result<ExtHeader> {
        if self.packet.len() < IPV6_HEADER_LEN {
            return Err(Error::Truncated);
        }
        let kind = self.next;
        if kind == proto::HOPOPTS && self.offset != IPV6_HEADER_LEN {
            return Err(Error::Malformed("hop-by-hop not first"));
        }
        let rest = self.packet.get(self.offset..).unwrap_or(&[]);
        if rest.len() < 2 {
            return Err(Error::Truncated);
        }
        let len = match kind {
            proto::FRAGMENT => FRAGMENT_LEN,
            // RFC 4302 §2.2: Payload Len is the AH length in 32-bit words, minus 2.
            proto::AH => (usize::from(rest[1]) + 2) * 4,
            // RFC 8200 §4.3/§4.4/§4.6: Hdr Ext Len in 8-octet units, not counting the first 8.
            _ => (usize::from(rest[1]) + 1) * 8,
        };
        if rest.len() < len {
            return Err(Error::Truncated);
        }
        let hdr = ExtHeader {
            kind,
            offset: self.offset,
            len,
            next_header: rest[0],
        };
        self.next = rest[0];
        self.offset += len;
        // RFC 8200 §4.5: Fragment Offset (13 bits) in bytes 2..4; non-zero means a later fragment.
        if kind == proto::FRAGMENT && u16::from_be_bytes([rest[2], rest[3]]) >> 3 != 0 {
            self.done = true;
        }
        Ok(hdr)
    }
}

impl<'a> Iterator for Walker<'a> {
    type Item = Result<ExtHeader>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done || (self.packet.len() >= IPV6_HEADER_LEN && !is_extension(self.next)) {
            self.done = true;
            return None;
        }
        let r = self.step();
        if r.is_err() {
            self.done = true;
        }
        Some(r)
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
    let mut c = Chain::default();
    let mut w = Walker::new(packet);
    for h in w.by_ref() {
        let h = h?;
        match h.kind {
            proto::HOPOPTS => c.hop_by_hop = Some(h),
            proto::ROUTING if c.routing.is_none() => {
                c.routing = Some(h);
                // Routing Type is byte 2 (RFC 8200 §4.4); every header is >= 8 bytes long.
                c.routing_type = Some(packet[h.offset + 2]);
            }
            proto::FRAGMENT => c.fragment = true,
            _ => {}
        }
    }
    (c.upper_proto, c.upper_offset) = w.upper_layer();
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The IPv6 packet of the kernel-captured `encap` frame (docs/references.md §1.4, srh_kernel.pcap frame 2,
    /// Ethernet header stripped): outer nh 43, SRH (nh 41, hdrlen 6, type 4) = 56 bytes, then the
    /// 53-byte inner IPv6/UDP packet.
    fn encap_packet() -> Vec<u8> {
        let mut v = vec![
            0x6b, 0x81, 0x23, 0x45, 0x00, 0x6d, 0x2b, 0x3f, 0xfd, 0x00, 0x00, 0x02, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0x01, 0xfc, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            0x0a, // IPv6
            0x29, 0x06, 0x04, 0x02, 0x02, 0x00, 0x00, 0x00, // SRH fixed part
        ];
        for last in [0x0c, 0x0b, 0x0a] {
            let mut seg = [0u8; 16];
            seg[0] = 0xfc;
            seg[15] = last;
            v.extend_from_slice(&seg);
        }
        v.extend_from_slice(&[
            0x6b, 0x81, 0x23, 0x45, 0x00, 0x0d, 0x11, 0x40, 0xfd, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0x01, 0xfd, 0x00, 0x00, 0x99, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01,
            0x04, 0x57, 0x08, 0xae, 0x00, 0x0d, 0x14, 0xa0, b'H', b'E', b'L', b'L', b'O',
        ]);
        assert_eq!(v.len(), 149);
        v
    }

    /// ioam_kernel.pcap frame 1 (docs/references.md §1.4), Ethernet stripped: nh 0, HBH (nh 17, hdrlen 4 = 40
    /// bytes: PadN(0) + IOAM option 0x31 len 34), then UDP 1111 -> 2222 "IOAMPKT".
    fn ioam_packet() -> Vec<u8> {
        let mut v = vec![
            0x60, 0x00, 0x00, 0x00, 0x00, 0x37, 0x00, 0x40, 0xfd, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0x01, 0xfd, 0x00, 0x00, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            0x02, // IPv6
            0x11, 0x04, 0x01, 0x00, 0x31, 0x22, 0x00, 0x00, 0x00, 0x7b, 0x18, 0x06, 0xc4, 0x00,
        ];
        v.resize(40 + 40, 0);
        v.extend_from_slice(&[0x04, 0x57, 0x08, 0xae, 0x00, 0x0f, 0x00, 0x00]);
        v.extend_from_slice(b"IOAMPKT");
        assert_eq!(v.len(), 40 + 0x37);
        v
    }

    /// rpl.pcap frame 1, Ethernet stripped: nh 43, RPL SRH (nh 17, hdrlen 1, type 3, SL 2), UDP.
    fn rpl_packet() -> Vec<u8> {
        let mut v = vec![
            0x60, 0x00, 0x00, 0x00, 0x00, 0x1e, 0x2b, 0x40, 0xfd, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0x01, 0xfd, 0x00, 0x00, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            0x01, // IPv6
            0x11, 0x01, 0x03, 0x02, 0xff, 0x60, 0x00, 0x00, 0x05, 0x02, 0, 0, 0, 0, 0,
            0, // RPL SRH
            0x04, 0x57, 0x08, 0xae, 0x00, 0x0e, 0x00, 0x00,
        ];
        v.extend_from_slice(b"RPLPKT");
        v
    }

    /// Builds an IPv6 header with next header `nh` followed by `ext`, payload length set.
    fn build(nh: u8, ext: &[u8]) -> Vec<u8> {
        let mut v = vec![0u8; 40];
        v[0] = 0x60;
        v[4..6].copy_from_slice(&(ext.len() as u16).to_be_bytes());
        v[6] = nh;
        v.extend_from_slice(ext);
        v
    }

    #[test]
    fn kernel_srh_encap() {
        let p = encap_packet();
        let hdrs: Vec<_> = Walker::new(&p).collect::<Result<_>>().unwrap();
        assert_eq!(
            hdrs,
            vec![ExtHeader {
                kind: 43,
                offset: 40,
                len: 56,
                next_header: 41
            }]
        );
        let c = chain(&p).unwrap();
        assert_eq!(c.routing, Some(hdrs[0]));
        assert_eq!(c.routing_type, Some(4));
        assert_eq!((c.upper_proto, c.upper_offset), (41, 96));
        assert!(c.hop_by_hop.is_none() && !c.fragment);
    }

    #[test]
    fn kernel_ioam_hbh() {
        let p = ioam_packet();
        let c = chain(&p).unwrap();
        assert_eq!(
            c.hop_by_hop,
            Some(ExtHeader {
                kind: 0,
                offset: 40,
                len: 40,
                next_header: 17
            })
        );
        assert_eq!((c.upper_proto, c.upper_offset), (17, 80));
        assert!(c.routing.is_none());
    }

    #[test]
    fn kernel_rpl() {
        let p = rpl_packet();
        let c = chain(&p).unwrap();
        assert_eq!(
            c.routing,
            Some(ExtHeader {
                kind: 43,
                offset: 40,
                len: 16,
                next_header: 17
            })
        );
        assert_eq!(c.routing_type, Some(3));
        assert_eq!((c.upper_proto, c.upper_offset), (17, 56));
    }

    #[test]
    fn no_extensions() {
        for nh in [17u8, 41, 4, 143, 58, 59, 50, 6] {
            let p = build(nh, &[0; 8]);
            let c = chain(&p).unwrap();
            assert_eq!((c.upper_proto, c.upper_offset), (nh, 40));
            assert_eq!(Walker::new(&p).count(), 0);
        }
    }

    #[test]
    fn full_chain_lengths() {
        // HBH(8) -> DST(16) -> RH type 4 (8) -> RH type 3 (8) -> FRAG(8) -> AH(Payload Len 4: (4+2)*4 = 24)
        // -> ICMPv6. Offsets: 40, 48, 64, 72, 80, 88; upper layer at 112.
        let mut ext = vec![];
        ext.extend_from_slice(&[60, 0, 1, 4, 0, 0, 0, 0]); // HBH, hdrlen 0, PadN(4)
        ext.extend_from_slice(&[43, 1, 1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]); // DST, hdrlen 1
        ext.extend_from_slice(&[43, 0, 4, 0, 0, 0, 0, 0]); // RH type 4
        ext.extend_from_slice(&[44, 0, 3, 0, 0, 0, 0, 0]); // RH type 3 (second: not recorded)
        ext.extend_from_slice(&[51, 0, 0, 0, 0, 0, 0, 7]); // FRAG, offset 0, ident 7
        let mut ah = vec![58, 4];
        ah.resize(24, 0);
        ext.extend_from_slice(&ah); // AH, (4 + 2) * 4 = 24
        ext.extend_from_slice(&[128, 0, 0, 0]); // ICMPv6 echo
        let p = build(0, &ext);
        let hdrs: Vec<_> = Walker::new(&p).collect::<Result<_>>().unwrap();
        let got: Vec<_> = hdrs
            .iter()
            .map(|h| (h.kind, h.offset, h.len, h.next_header))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, 40, 8, 60),
                (60, 48, 16, 43),
                (43, 64, 8, 43),
                (43, 72, 8, 44),
                (44, 80, 8, 51),
                (51, 88, 24, 58)
            ]
        );
        let c = chain(&p).unwrap();
        assert_eq!(c.routing.unwrap().offset, 64);
        assert_eq!(c.routing_type, Some(4));
        assert!(c.fragment);
        assert_eq!((c.upper_proto, c.upper_offset), (58, 112));
    }

    #[test]
    fn hop_by_hop_not_first() {
        let p = build(60, &[0, 0, 1, 4, 0, 0, 0, 0, 17, 0, 1, 4, 0, 0, 0, 0]);
        let mut w = Walker::new(&p);
        assert!(w.next().unwrap().is_ok());
        assert_eq!(
            w.next(),
            Some(Err(Error::Malformed("hop-by-hop not first")))
        );
        assert_eq!(w.next(), None);
        assert_eq!(chain(&p), Err(Error::Malformed("hop-by-hop not first")));
    }

    #[test]
    fn truncation() {
        assert_eq!(chain(&[0x60; 39]), Err(Error::Truncated));
        // Header needs 16 bytes, payload holds 8.
        assert_eq!(
            chain(&build(43, &[17, 1, 4, 0, 0, 0, 0, 0])),
            Err(Error::Truncated)
        );
        // Only one byte of an extension header.
        assert_eq!(chain(&build(60, &[17])), Err(Error::Truncated));
        // Nothing at all after the header.
        assert_eq!(chain(&build(0, &[])), Err(Error::Truncated));
        // Fragment header needs 8 bytes.
        assert_eq!(chain(&build(44, &[17, 0, 0, 0])), Err(Error::Truncated));
        // Bytes past payload_len (link padding) do not count.
        let mut p = build(60, &[17, 0, 1, 4, 0, 0, 0, 0]);
        p[5] = 4;
        assert_eq!(chain(&p), Err(Error::Truncated));
        // And a walk that fits stops at payload_len even with trailing padding.
        let mut p = build(17, &[0; 8]);
        p.extend_from_slice(&[60, 0, 0, 0]);
        assert_eq!(chain(&p).unwrap().upper_offset, 40);
    }

    #[test]
    fn later_fragment_stops_walk() {
        // Fragment offset 1 (0x0008), next header 60, followed by fragment data that is not a header.
        let p = build(44, &[60, 0, 0x00, 0x08, 0, 0, 0, 1, 0xff, 0xff]);
        let c = chain(&p).unwrap();
        assert!(c.fragment);
        assert_eq!((c.upper_proto, c.upper_offset), (60, 48));
    }

    #[test]
    fn is_extension_set() {
        let set: Vec<u8> = (0..=255u8).filter(|&n| is_extension(n)).collect();
        assert_eq!(set, vec![0, 43, 44, 51, 60]);
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let mut n = 0;
            for r in Walker::new(&data) {
                n += 1;
                if let Ok(h) = r {
                    prop_assert!(h.offset + h.len <= data.len());
                }
            }
            prop_assert!(n <= data.len() / 8 + 1);
            let _ = chain(&data);
        }

        #[test]
        fn generated_chains_walk(kinds in proptest::collection::vec((prop_oneof![Just(43u8), Just(44), Just(51), Just(60)], 0u8..4), 0..6),
                                 hbh in any::<bool>(), upper in prop_oneof![Just(17u8), Just(41), Just(58), Just(59)]) {
            let mut list: Vec<(u8, u8)> = kinds;
            if hbh { list.insert(0, (0, 1)); }
            let mut ext = vec![];
            let mut expect = vec![];
            for (i, &(kind, l)) in list.iter().enumerate() {
                let nh = list.get(i + 1).map_or(upper, |x| x.0);
                let len = match kind { 44 => 8, 51 => (usize::from(l) * 2 + 2) * 4, _ => (usize::from(l) + 1) * 8 };
                let mut h = vec![0u8; len];
                h[0] = nh;
                h[1] = match kind { 44 => 0, 51 => l * 2, _ => l };
                expect.push(ExtHeader { kind, offset: 40 + ext.len(), len, next_header: nh });
                ext.extend_from_slice(&h);
            }
            let first = list.first().map_or(upper, |x| x.0);
            let p = build(first, &ext);
            let got: Vec<_> = Walker::new(&p).collect::<Result<_>>().unwrap();
            prop_assert_eq!(got, expect);
            let c = chain(&p).unwrap();
            prop_assert_eq!((c.upper_proto, c.upper_offset), (upper, 40 + ext.len()));
            prop_assert_eq!(c.fragment, list.iter().any(|x| x.0 == 44));
        }
    }
}
