//! The Segment Routing Header (RFC 8754 §2) and its TLVs (§2.1), including the HMAC TLV (§2.1.2).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | Next Header   |  Hdr Ext Len  | Routing Type  | Segments Left |  0
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Last Entry   |     Flags     |              Tag              |  4
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |            Segment List[0] (128 bits IPv6 address)            |  8
//! |                             ...                               |
//! |            Segment List[n] (128 bits IPv6 address)            |
//! //         Optional Type Length Value objects (variable)       //
//! ```
//! Segment List\[0\] is the LAST segment of the path; Segment List\[Last Entry\] the first.
//! HMAC TLV (§2.1.2): | Type 5 | Length 38 | D(1)+Reserved(15) | HMAC Key ID (32) | HMAC (32 bytes) |.

use super::{Error, Result};
use hmac::{Hmac, Mac};
use std::net::Ipv6Addr;

/// Routing Type of the SRH.
pub const ROUTING_TYPE: u8 = 4;
/// Flags bit Linux uses for "HMAC TLV present" (`SR6_FLAG1_HMAC`).
pub const FLAG_HMAC: u8 = 0x08;
/// TLV type Pad1 (RFC 8754 §2.1.1.1).
pub const TLV_PAD1: u8 = 0;
/// TLV type PadN (RFC 8754 §2.1.1.2).
pub const TLV_PADN: u8 = 4;
/// TLV type HMAC (RFC 8754 §2.1.2).
pub const TLV_HMAC: u8 = 5;
/// Size of the HMAC TLV as Linux builds it (2 + 38).
pub const HMAC_TLV_LEN: usize = 40;
/// Fixed part of the SRH before the segment list.
pub const FIXED_LEN: usize = 8;

/// Size of one segment (an IPv6 address).
pub const SEGMENT_LEN: usize = 16;
/// Size of the HMAC input ring Linux uses (`SEG6_HMAC_RING_SIZE`); the HMAC text must be shorter.
pub const HMAC_TEXT_MAX: usize = 256;

mod field {
    pub const NEXT_HEADER: usize = 0;
    pub const HDR_LEN: usize = 1;
    pub const TYPE: usize = 2;
    pub const SEG_LEFT: usize = 3;
    pub const LAST_ENTRY: usize = 4;
    pub const FLAGS: usize = 5;
    pub const TAG: core::ops::Range<usize> = 6..8;
}

/// A checked view over an SRH. The buffer may be longer than the header.
#[derive(Debug, Clone)]
pub struct Header<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Header<T> {
    /// Checks: >= 8 bytes, routing type 4, `(hdr_len+1)*8 <= buffer len`,
    /// `8 + 16*(last_entry+1) <= (hdr_len+1)*8`.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let b = buffer.as_ref();
        if b.len() < FIXED_LEN {
            return Err(Error::Truncated);
        }
        if b[field::TYPE] != ROUTING_TYPE {
            return Err(Error::Malformed("srh: routing type is not 4"));
        }
        let hlen = (usize::from(b[field::HDR_LEN]) + 1) * 8;
        if hlen > b.len() {
            return Err(Error::Truncated);
        }
        if FIXED_LEN + SEGMENT_LEN * (usize::from(b[field::LAST_ENTRY]) + 1) > hlen {
            return Err(Error::Malformed("srh: segment list exceeds header length"));
        }
        Ok(Header { buffer })
    }
    /// Wraps without checks; accessors may panic unless the buffer would pass [`new_checked`](Self::new_checked).
    pub fn new_unchecked(buffer: T) -> Self {
        Header { buffer }
    }
    /// Consumes the view, returning the buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }
    /// Next header.
    pub fn next_header(&self) -> u8 {
        self.buffer.as_ref()[field::NEXT_HEADER]
    }
    /// Hdr Ext Len (8-octet units excluding the first 8).
    pub fn hdr_len(&self) -> u8 {
        self.buffer.as_ref()[field::HDR_LEN]
    }
    /// Length of the whole header in bytes, `(hdr_len+1)*8`.
    pub fn header_len(&self) -> usize {
        (usize::from(self.hdr_len()) + 1) * 8
    }
    /// Segments Left.
    pub fn segments_left(&self) -> u8 {
        self.buffer.as_ref()[field::SEG_LEFT]
    }
    /// Last Entry (Linux `first_segment`).
    pub fn last_entry(&self) -> u8 {
        self.buffer.as_ref()[field::LAST_ENTRY]
    }
    /// Flags.
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }
    /// Tag.
    pub fn tag(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::TAG];
        u16::from_be_bytes([b[0], b[1]])
    }
    /// Segment List\[i\] (i <= last_entry). Panics if `i` is past the buffer.
    pub fn segment(&self, i: usize) -> Ipv6Addr {
        let off = FIXED_LEN + SEGMENT_LEN * i;
        let mut a = [0u8; 16];
        a.copy_from_slice(&self.buffer.as_ref()[off..off + SEGMENT_LEN]);
        Ipv6Addr::from(a)
    }
    /// The TLV area: bytes after the segment list up to the header length.
    pub fn tlv_bytes(&self) -> &[u8] {
        let start = FIXED_LEN + SEGMENT_LEN * (usize::from(self.last_entry()) + 1);
        &self.buffer.as_ref()[start..self.header_len()]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Header<T> {
    /// Sets Next Header.
    pub fn set_next_header(&mut self, nh: u8) {
        self.buffer.as_mut()[field::NEXT_HEADER] = nh;
    }
    /// Sets Segments Left.
    pub fn set_segments_left(&mut self, sl: u8) {
        self.buffer.as_mut()[field::SEG_LEFT] = sl;
    }
    /// Sets Segment List\[i\]. Panics if `i` is past the buffer.
    pub fn set_segment(&mut self, i: usize, a: Ipv6Addr) {
        let off = FIXED_LEN + SEGMENT_LEN * i;
        self.buffer.as_mut()[off..off + SEGMENT_LEN].copy_from_slice(&a.octets());
    }
}

/// Linux `seg6_validate_srh(srh, len, reduced)` on exactly `srh.len()` bytes (docs/references.md §1.1):
/// type 4; `(hdrlen+1)*8 == len`; unless `reduced`, `segments_left <= last_entry`;
/// `last_entry <= hdrlen/2 - 1`; `segments_left <= last_entry + 1`; trailing bytes are an exact TLV sequence.
///
/// The TLV walk is Linux's, not RFC 8754's: every TLV, including type 0, counts as `2 + len` bytes
/// (Linux has no 1-byte Pad1), and the walk must end exactly at the header end. Verified on Linux 6.18.44
/// through `setsockopt(IPV6_RTHDR)`, which runs the same check (see the tests).
pub fn validate(srh: &[u8], reduced: bool) -> Result<()> {
    if srh.len() < FIXED_LEN {
        return Err(Error::Truncated);
    }
    if srh[field::TYPE] != ROUTING_TYPE {
        return Err(Error::Malformed("srh: routing type is not 4"));
    }
    let hdrlen = usize::from(srh[field::HDR_LEN]);
    if (hdrlen + 1) * 8 != srh.len() {
        return Err(Error::Malformed("srh: hdr ext len does not match length"));
    }
    let sl = usize::from(srh[field::SEG_LEFT]);
    let le = usize::from(srh[field::LAST_ENTRY]);
    if !reduced && sl > le {
        return Err(Error::Malformed("srh: segments left > last entry"));
    }
    // Linux: last_entry <= hdrlen/2 - 1 (signed; hdrlen < 2 admits no last entry at all).
    if le + 1 > hdrlen / 2 {
        return Err(Error::Malformed("srh: last entry exceeds header length"));
    }
    if sl > le + 1 {
        return Err(Error::Malformed("srh: segments left > last entry + 1"));
    }
    let mut off = FIXED_LEN + SEGMENT_LEN * (le + 1);
    // `le + 1 <= hdrlen/2` gives `off <= 8 + 8*hdrlen == len`.
    while off < srh.len() {
        if srh.len() - off < 2 {
            return Err(Error::Malformed("srh: truncated TLV header"));
        }
        off += 2 + usize::from(srh[off + 1]);
    }
    if off != srh.len() {
        return Err(Error::Malformed("srh: TLV overruns the header"));
    }
    Ok(())
}

/// One TLV of an SRH.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlvRepr {
    /// Pad1 (a single zero byte).
    Pad1,
    /// PadN with `n` data bytes (zeros).
    PadN(u8),
    /// HMAC: key id and 32-byte HMAC field (SHA-1 results are zero-padded).
    Hmac {
        /// HMAC Key ID.
        key_id: u32,
        /// HMAC field.
        hmac: [u8; 32],
    },
    /// Any other TLV, kept verbatim.
    Other {
        /// Type.
        ty: u8,
        /// Value bytes.
        data: Vec<u8>,
    },
}

impl TlvRepr {
    /// Parses one TLV at the start of `b` (RFC 8754 §2.1: Pad1 is one byte, others `2 + len`), returning it and
    /// its wire length. A PadN with non-zero data, or an HMAC TLV whose length is not 38 or whose D bit/reserved
    /// bits are set, is returned as [`TlvRepr::Other`] so that emitting it reproduces the input.
    pub fn parse(b: &[u8]) -> Result<(Self, usize)> {
        let ty = *b.first().ok_or(Error::Truncated)?;
        if ty == TLV_PAD1 {
            return Ok((TlvRepr::Pad1, 1));
        }
        let len = usize::from(*b.get(1).ok_or(Error::Truncated)?);
        let data = b.get(2..2 + len).ok_or(Error::Truncated)?;
        let tlv = match ty {
            TLV_PADN if data.iter().all(|&x| x == 0) => TlvRepr::PadN(len as u8),
            TLV_HMAC if len == HMAC_TLV_LEN - 2 && data[..2] == [0, 0] => {
                let mut hmac = [0u8; 32];
                hmac.copy_from_slice(&data[6..38]);
                TlvRepr::Hmac {
                    key_id: u32::from_be_bytes([data[2], data[3], data[4], data[5]]),
                    hmac,
                }
            }
            _ => TlvRepr::Other {
                ty,
                data: data.to_vec(),
            },
        };
        Ok((tlv, 2 + len))
    }
    /// Bytes [`emit`](Self::emit) writes.
    pub fn buffer_len(&self) -> usize {
        match self {
            TlvRepr::Pad1 => 1,
            TlvRepr::PadN(n) => 2 + usize::from(*n),
            TlvRepr::Hmac { .. } => HMAC_TLV_LEN,
            TlvRepr::Other { data, .. } => 2 + data.len(),
        }
    }
    /// Writes the TLV into `out[..buffer_len()]` (panics if `out` is shorter). For `Other`, data longer than
    /// 255 bytes cannot be represented; its length byte is truncated.
    pub fn emit(&self, out: &mut [u8]) {
        match self {
            TlvRepr::Pad1 => out[0] = TLV_PAD1,
            TlvRepr::PadN(n) => {
                out[0] = TLV_PADN;
                out[1] = *n;
                out[2..2 + usize::from(*n)].fill(0);
            }
            TlvRepr::Hmac { key_id, hmac } => {
                out[0] = TLV_HMAC;
                out[1] = (HMAC_TLV_LEN - 2) as u8;
                out[2..4].fill(0);
                out[4..8].copy_from_slice(&key_id.to_be_bytes());
                out[8..40].copy_from_slice(hmac);
            }
            TlvRepr::Other { ty, data } => {
                out[0] = *ty;
                out[1] = data.len() as u8;
                out[2..2 + data.len()].copy_from_slice(data);
            }
        }
    }
}

/// High-level SRH (control-plane: owns its segment list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SrhRepr {
    /// Next header.
    pub next_header: u8,
    /// Segments Left.
    pub segments_left: u8,
    /// Last Entry.
    pub last_entry: u8,
    /// Flags.
    pub flags: u8,
    /// Tag.
    pub tag: u16,
    /// Segment List, in wire order (index 0 = last segment).
    pub segments: Vec<Ipv6Addr>,
    /// TLVs in order.
    pub tlvs: Vec<TlvRepr>,
}

impl SrhRepr {
    /// Parses a checked header (TLVs included). The TLV area is walked per RFC 8754 (Pad1 is one byte,
    /// see [`TlvRepr::parse`]); it must end exactly at the header end.
    pub fn parse<T: AsRef<[u8]>>(h: &Header<T>) -> Result<Self> {
        let segments = (0..=usize::from(h.last_entry()))
            .map(|i| h.segment(i))
            .collect();
        let mut tlvs = Vec::new();
        let mut rest = h.tlv_bytes();
        while !rest.is_empty() {
            let (tlv, n) = TlvRepr::parse(rest)
                .map_err(|_| Error::Malformed("srh: TLV overruns the header"))?;
            tlvs.push(tlv);
            rest = &rest[n..];
        }
        Ok(SrhRepr {
            next_header: h.next_header(),
            segments_left: h.segments_left(),
            last_entry: h.last_entry(),
            flags: h.flags(),
            tag: h.tag(),
            segments,
            tlvs,
        })
    }
    /// Bytes [`emit`](Self::emit) writes: 8 + 16*segments + TLVs (caller keeps it a multiple of 8).
    pub fn buffer_len(&self) -> usize {
        FIXED_LEN
            + SEGMENT_LEN * self.segments.len()
            + self.tlvs.iter().map(TlvRepr::buffer_len).sum::<usize>()
    }
    /// Writes the header; hdr_len is derived from [`buffer_len`](Self::buffer_len).
    /// Panics if `out` is shorter than `buffer_len()`.
    pub fn emit(&self, out: &mut [u8]) {
        let len = self.buffer_len();
        out[field::NEXT_HEADER] = self.next_header;
        out[field::HDR_LEN] = (len / 8).saturating_sub(1) as u8;
        out[field::TYPE] = ROUTING_TYPE;
        out[field::SEG_LEFT] = self.segments_left;
        out[field::LAST_ENTRY] = self.last_entry;
        out[field::FLAGS] = self.flags;
        out[field::TAG].copy_from_slice(&self.tag.to_be_bytes());
        let mut off = FIXED_LEN;
        for s in &self.segments {
            out[off..off + SEGMENT_LEN].copy_from_slice(&s.octets());
            off += SEGMENT_LEN;
        }
        for t in &self.tlvs {
            t.emit(&mut out[off..]);
            off += t.buffer_len();
        }
    }
    /// The SRH iproute2 builds for `encap seg6 mode M segs A,B,C [hmac KEYID]` (docs/references.md §1.1):
    /// segments reversed; for `inline` an extra `::` slot at index 0; last_entry = segments_left = slots-1;
    /// flags 0 (0x08 with HMAC, plus a zeroed HMAC TLV carrying the key id); tag 0; next_header 0.
    ///
    /// `segs` should be non-empty (iproute2 requires a segment) and give at most 256 slots.
    pub fn iproute2(segs: &[Ipv6Addr], inline: bool, hmac_key_id: Option<u32>) -> Self {
        let mut segments = Vec::with_capacity(segs.len() + usize::from(inline));
        if inline {
            segments.push(Ipv6Addr::UNSPECIFIED);
        }
        segments.extend(segs.iter().rev());
        let last = segments.len().saturating_sub(1) as u8;
        let (flags, tlvs) = match hmac_key_id {
            Some(key_id) => (
                FLAG_HMAC,
                vec![TlvRepr::Hmac {
                    key_id,
                    hmac: [0; 32],
                }],
            ),
            None => (0, Vec::new()),
        };
        SrhRepr {
            next_header: 0,
            segments_left: last,
            last_entry: last,
            flags,
            tag: 0,
            segments,
            tlvs,
        }
    }
}

/// HMAC algorithm ids of `ip sr hmac set` (SEG6_HMAC_ALGO_*).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HmacAlgo {
    /// HMAC-SHA1 (id 1).
    Sha1,
    /// HMAC-SHA256 (id 2).
    Sha256,
}

/// Offset of the HMAC TLV inside `srh` if Linux would consider it present (`seg6_get_tlv_hmac`):
/// flag 0x08 set, `hdrlen >= 2*(last_entry+1) + 5`, TLV at `(hdrlen+1)*8 - 40` with type 5 and length 38.
/// `None` also when `srh` is shorter than its header length says.
pub fn hmac_tlv_offset(srh: &[u8]) -> Option<usize> {
    if srh.len() < FIXED_LEN || srh[field::FLAGS] & FLAG_HMAC == 0 {
        return None;
    }
    let hdrlen = usize::from(srh[field::HDR_LEN]);
    if hdrlen < 2 * (usize::from(srh[field::LAST_ENTRY]) + 1) + 5 {
        return None;
    }
    let end = (hdrlen + 1) * 8;
    if end > srh.len() {
        return None;
    }
    let off = end - HMAC_TLV_LEN;
    (srh[off] == TLV_HMAC && usize::from(srh[off + 1]) == HMAC_TLV_LEN - 2).then_some(off)
}

/// Computes the HMAC over `src | last_entry | flags | key_id | segments[0..=last_entry]` (docs/references.md §1.6),
/// truncated / zero-padded to 32 bytes. `srh` is the whole header. Fails (Linux -EMSGSIZE) when the text is
/// 256 bytes or more, i.e. more than 14 segments; fails with [`Error::Truncated`] when `srh` does not hold
/// the segment list.
pub fn compute_hmac(
    algo: HmacAlgo,
    secret: &[u8],
    src: &Ipv6Addr,
    srh: &[u8],
    key_id: u32,
) -> Result<[u8; 32]> {
    if srh.len() < FIXED_LEN {
        return Err(Error::Truncated);
    }
    let nseg = usize::from(srh[field::LAST_ENTRY]) + 1;
    let text_len = 16 + 1 + 1 + 4 + SEGMENT_LEN * nseg;
    if text_len >= HMAC_TEXT_MAX {
        return Err(Error::Malformed(
            "srh: HMAC text too long (more than 14 segments)",
        ));
    }
    let segs = srh
        .get(FIXED_LEN..FIXED_LEN + SEGMENT_LEN * nseg)
        .ok_or(Error::Truncated)?;
    let mut text = [0u8; HMAC_TEXT_MAX];
    text[..16].copy_from_slice(&src.octets());
    text[16] = srh[field::LAST_ENTRY];
    text[17] = srh[field::FLAGS];
    text[18..22].copy_from_slice(&key_id.to_be_bytes());
    text[22..text_len].copy_from_slice(segs);
    let text = &text[..text_len];
    let mut out = [0u8; 32];
    match algo {
        HmacAlgo::Sha1 => {
            // HMAC accepts keys of any length, so `new_from_slice` cannot fail.
            let mut m = Hmac::<sha1::Sha1>::new_from_slice(secret)
                .map_err(|_| Error::Malformed("hmac key"))?;
            m.update(text);
            out[..20].copy_from_slice(&m.finalize().into_bytes());
        }
        HmacAlgo::Sha256 => {
            let mut m = Hmac::<sha2::Sha256>::new_from_slice(secret)
                .map_err(|_| Error::Malformed("hmac key"))?;
            m.update(text);
            out.copy_from_slice(&m.finalize().into_bytes());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn a(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    fn emit(r: &SrhRepr) -> Vec<u8> {
        let mut v = vec![0xAA; r.buffer_len()];
        r.emit(&mut v);
        v
    }

    fn with_segments(fixed: [u8; 8], segs: &[&str]) -> Vec<u8> {
        let mut v = fixed.to_vec();
        for s in segs {
            v.extend_from_slice(&a(s).octets());
        }
        v
    }

    /// Kernel capture, docs/references.md §1.4 / `tests/data/srh_kernel.pcap` frame 2 (`encap`, segs fc00::a,fc00::b,fc00::c).
    fn kernel_encap_abc() -> Vec<u8> {
        with_segments(
            [0x29, 0x06, 0x04, 0x02, 0x02, 0x00, 0x00, 0x00],
            &["fc00::c", "fc00::b", "fc00::a"],
        )
    }

    #[test]
    fn accessors_on_kernel_encap() {
        let b = kernel_encap_abc();
        let h = Header::new_checked(&b[..]).unwrap();
        assert_eq!(h.next_header(), 41);
        assert_eq!(h.hdr_len(), 6);
        assert_eq!(h.header_len(), 56);
        assert_eq!(h.segments_left(), 2);
        assert_eq!(h.last_entry(), 2);
        assert_eq!(h.flags(), 0);
        assert_eq!(h.tag(), 0);
        assert_eq!(h.segment(0), a("fc00::c"));
        assert_eq!(h.segment(2), a("fc00::a"));
        assert!(h.tlv_bytes().is_empty());
        assert_eq!(validate(&b, false), Ok(()));
    }

    #[test]
    fn tag_is_big_endian() {
        let mut b = kernel_encap_abc();
        b[6] = 0x12;
        b[7] = 0x34;
        assert_eq!(Header::new_checked(&b[..]).unwrap().tag(), 0x1234);
    }

    #[test]
    fn new_checked_errors() {
        let b = kernel_encap_abc();
        assert_eq!(Header::new_checked(&b[..7]).unwrap_err(), Error::Truncated);
        assert_eq!(Header::new_checked(&b[..55]).unwrap_err(), Error::Truncated);
        let mut t = b.clone();
        t[2] = 3;
        assert!(matches!(
            Header::new_checked(&t[..]),
            Err(Error::Malformed(_))
        ));
        let mut t = b.clone();
        t[4] = 3; // 8 + 16*4 = 72 > 56
        assert!(matches!(
            Header::new_checked(&t[..]),
            Err(Error::Malformed(_))
        ));
        // A longer buffer is fine: the header is a prefix.
        let mut t = b.clone();
        t.extend_from_slice(&[0x6b; 10]);
        assert_eq!(Header::new_checked(&t[..]).unwrap().header_len(), 56);
    }

    #[test]
    fn setters() {
        let mut b = kernel_encap_abc();
        let mut h = Header::new_checked(&mut b[..]).unwrap();
        h.set_next_header(4);
        h.set_segments_left(1);
        h.set_segment(1, a("2001:db8::1"));
        assert_eq!(h.next_header(), 4);
        assert_eq!(h.segments_left(), 1);
        assert_eq!(h.segment(1), a("2001:db8::1"));
        assert_eq!(h.segment(0), a("fc00::c"));
    }

    /// Behaviour spec §1.4 ENCAP [verified 6.18.44]: CLI `segs fc00::1,fc00::2,fc00::3` →
    /// SRH `29 06 04 02 02 00 00 00`, segments [fc00::3, fc00::2, fc00::1] (nh 41 set by the encap).
    #[test]
    fn iproute2_encap_matches_kernel() {
        let r = SrhRepr::iproute2(&[a("fc00::1"), a("fc00::2"), a("fc00::3")], false, None);
        assert_eq!(r.buffer_len(), 56);
        let mut b = emit(&r);
        Header::new_checked(&mut b[..]).unwrap().set_next_header(41);
        let want = with_segments(
            [0x29, 0x06, 0x04, 0x02, 0x02, 0x00, 0x00, 0x00],
            &["fc00::3", "fc00::2", "fc00::1"],
        );
        assert_eq!(b, want);
        assert_eq!(validate(&b, false), Ok(()));

        // And the docs/references.md §1.4 capture for fc00::a,fc00::b,fc00::c.
        let r = SrhRepr::iproute2(&[a("fc00::a"), a("fc00::b"), a("fc00::c")], false, None);
        let mut b = emit(&r);
        b[0] = 41;
        assert_eq!(b, kernel_encap_abc());
    }

    /// docs/references.md §1.4 table "inline (3 segs)": hdrlen 8, SL 3, LE 3, list [fd00:99::1 (original DA), c, b, a],
    /// SRH nh 17. Bytes from `tests/data/srh_kernel.pcap` frame 1:
    /// `11 08 04 03 03 00 00 00` + fd00:99::1 + fc00::c + fc00::b + fc00::a.
    #[test]
    fn iproute2_inline_matches_kernel_after_da_fill() {
        let r = SrhRepr::iproute2(&[a("fc00::a"), a("fc00::b"), a("fc00::c")], true, None);
        assert_eq!(
            r.segments,
            vec![
                Ipv6Addr::UNSPECIFIED,
                a("fc00::c"),
                a("fc00::b"),
                a("fc00::a")
            ]
        );
        assert_eq!(
            (r.segments_left, r.last_entry, r.flags, r.tag, r.next_header),
            (3, 3, 0, 0, 0)
        );
        let mut b = emit(&r);
        assert_eq!(b[1], 8);
        assert_eq!(validate(&b, false), Ok(()));
        let mut h = Header::new_checked(&mut b[..]).unwrap();
        h.set_segment(0, a("fd00:99::1"));
        h.set_next_header(17);
        let want = with_segments(
            [0x11, 0x08, 0x04, 0x03, 0x03, 0x00, 0x00, 0x00],
            &["fd00:99::1", "fc00::c", "fc00::b", "fc00::a"],
        );
        assert_eq!(b, want);
    }

    /// docs/references.md §1.4 table: `encap, 1 seg` → hdrlen 2, SL 0, LE 0; `inline, 1 seg` → hdrlen 4, SL 1, LE 1.
    #[test]
    fn iproute2_one_segment() {
        let e = emit(&SrhRepr::iproute2(&[a("fc00::a")], false, None));
        assert_eq!(&e[1..5], &[2, 4, 0, 0]);
        let i = emit(&SrhRepr::iproute2(&[a("fc00::a")], true, None));
        assert_eq!(&i[1..5], &[4, 4, 1, 1]);
    }

    /// Kernel capture: `tests/data/srh_kernel.pcap` frame 6, made by the kernel with
    /// `echo mysecret | ip sr hmac set 42 sha256` and `encap seg6 mode encap segs fc00::a,fc00::b hmac 42`;
    /// outer source fd00:2::1. (Python check of the HMAC field, matching the capture:
    /// `hmac.new(b'mysecret', src + bytes([1, 8]) + (42).to_bytes(4, 'big') + fc00::b + fc00::a, hashlib.sha256)`.)
    const KERNEL_HMAC_SHA256: [u8; 32] = [
        0xfb, 0x76, 0x55, 0xf7, 0xd0, 0x0c, 0x08, 0x84, 0x9c, 0xdd, 0xca, 0x41, 0xad, 0x85, 0x43,
        0xba, 0xd9, 0xf8, 0x27, 0xcf, 0xad, 0x27, 0xb1, 0x36, 0xb9, 0xf9, 0x49, 0x2e, 0xe4, 0x04,
        0x37, 0x41,
    ];

    fn kernel_hmac_srh() -> Vec<u8> {
        let mut v = with_segments(
            [0x29, 0x09, 0x04, 0x01, 0x01, 0x08, 0x00, 0x00],
            &["fc00::b", "fc00::a"],
        );
        v.extend_from_slice(&[0x05, 0x26, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a]);
        v.extend_from_slice(&KERNEL_HMAC_SHA256);
        v
    }

    #[test]
    fn iproute2_hmac_layout_and_kernel_hmac() {
        let r = SrhRepr::iproute2(&[a("fc00::a"), a("fc00::b")], false, Some(42));
        assert_eq!(r.flags, FLAG_HMAC);
        assert_eq!(r.buffer_len(), 8 + 32 + 40);
        let mut b = emit(&r);
        // hdr_len = 2*slots + 5 = 9; TLV `05 26 00 00 <keyid be32> <32 zero bytes>`.
        assert_eq!(&b[..8], &[0x00, 0x09, 0x04, 0x01, 0x01, 0x08, 0x00, 0x00]);
        assert_eq!(
            &b[40..48],
            &[0x05, 0x26, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a]
        );
        assert_eq!(&b[48..], &[0u8; 32]);
        assert_eq!(validate(&b, false), Ok(()));
        assert_eq!(hmac_tlv_offset(&b), Some(40));

        b[0] = 41;
        let mac = compute_hmac(HmacAlgo::Sha256, b"mysecret", &a("fd00:2::1"), &b, 42).unwrap();
        assert_eq!(mac, KERNEL_HMAC_SHA256);
        b[48..80].copy_from_slice(&mac);
        assert_eq!(b, kernel_hmac_srh());
    }

    #[test]
    fn iproute2_inline_hmac() {
        let r = SrhRepr::iproute2(&[a("fc00::a"), a("fc00::b")], true, Some(7));
        let b = emit(&r);
        // 3 slots: hdr_len = 2*3 + 5 = 11, LE = SL = 2.
        assert_eq!(&b[..8], &[0x00, 11, 0x04, 0x02, 0x02, 0x08, 0x00, 0x00]);
        assert_eq!(b.len(), 96);
        assert_eq!(hmac_tlv_offset(&b), Some(56));
        assert_eq!(&b[56..64], &[0x05, 0x26, 0, 0, 0, 0, 0, 7]);
    }

    /// SHA-1 over the same text as the kernel SHA-256 capture, expected value from:
    /// `python3 -c "import hmac,hashlib,ipaddress as i; p=lambda s:i.ip_address(s).packed;
    ///  print(hmac.new(b'mysecret', p('fd00:2::1')+bytes([1,8])+(42).to_bytes(4,'big')+p('fc00::b')+p('fc00::a'),
    ///  hashlib.sha1).hexdigest())"` → edcfce2dd7feeb1b8fd994863a2f2bf93b77555b, then 12 zero bytes.
    #[test]
    fn hmac_sha1_golden() {
        let b = kernel_hmac_srh();
        let mac = compute_hmac(HmacAlgo::Sha1, b"mysecret", &a("fd00:2::1"), &b, 42).unwrap();
        let want20 = [
            0xed, 0xcf, 0xce, 0x2d, 0xd7, 0xfe, 0xeb, 0x1b, 0x8f, 0xd9, 0x94, 0x86, 0x3a, 0x2f,
            0x2b, 0xf9, 0x3b, 0x77, 0x55, 0x5b,
        ];
        assert_eq!(&mac[..20], &want20);
        assert_eq!(&mac[20..], &[0u8; 12]);
    }

    /// The HMAC text covers src, LE, flags, key id and segments, but not nh, SL, tag or the TLV area.
    #[test]
    fn hmac_inputs() {
        let b = kernel_hmac_srh();
        let src = a("fd00:2::1");
        let base = compute_hmac(HmacAlgo::Sha256, b"mysecret", &src, &b, 42).unwrap();
        let mut t = b.clone();
        t[0] = 4;
        t[3] = 0;
        t[6] = 9;
        t[79] ^= 1;
        assert_eq!(
            compute_hmac(HmacAlgo::Sha256, b"mysecret", &src, &t, 42).unwrap(),
            base
        );
        let mut t = b.clone();
        t[5] = 0x48;
        assert_ne!(
            compute_hmac(HmacAlgo::Sha256, b"mysecret", &src, &t, 42).unwrap(),
            base
        );
        let mut t = b.clone();
        t[39] ^= 1;
        assert_ne!(
            compute_hmac(HmacAlgo::Sha256, b"mysecret", &src, &t, 42).unwrap(),
            base
        );
        assert_ne!(
            compute_hmac(HmacAlgo::Sha256, b"mysecret", &src, &b, 43).unwrap(),
            base
        );
        assert_ne!(
            compute_hmac(HmacAlgo::Sha256, b"mysecret", &a("fd00:2::2"), &b, 42).unwrap(),
            base
        );
        assert_ne!(
            compute_hmac(HmacAlgo::Sha256, b"mysecreu", &src, &b, 42).unwrap(),
            base
        );
    }

    /// §1.6: text = 22 + 16*(LE+1) bytes must be < 256, so 14 segments (246) pass and 15 (262) fail.
    #[test]
    fn hmac_text_limit() {
        let segs: Vec<Ipv6Addr> = (1..=15u16)
            .map(|i| Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, i))
            .collect();
        let src = a("fd00::1");
        let b14 = emit(&SrhRepr::iproute2(&segs[..14], false, Some(1)));
        assert!(compute_hmac(HmacAlgo::Sha256, b"k", &src, &b14, 1).is_ok());
        let b15 = emit(&SrhRepr::iproute2(&segs, false, Some(1)));
        assert!(matches!(
            compute_hmac(HmacAlgo::Sha256, b"k", &src, &b15, 1),
            Err(Error::Malformed(_))
        ));
        assert!(matches!(
            compute_hmac(HmacAlgo::Sha1, b"k", &src, &b15, 1),
            Err(Error::Malformed(_))
        ));
        // Truncated inputs are errors, not panics.
        assert_eq!(
            compute_hmac(HmacAlgo::Sha1, b"k", &src, &b14[..7], 1),
            Err(Error::Truncated)
        );
        assert_eq!(
            compute_hmac(HmacAlgo::Sha1, b"k", &src, &b14[..100], 1),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn hmac_tlv_offset_rules() {
        let b = kernel_hmac_srh();
        assert_eq!(hmac_tlv_offset(&b), Some(40));
        let mut t = b.clone();
        t[5] = 0;
        assert_eq!(hmac_tlv_offset(&t), None, "flag clear");
        let mut t = b.clone();
        t[40] = 4;
        assert_eq!(hmac_tlv_offset(&t), None, "wrong type");
        let mut t = b.clone();
        t[41] = 37;
        assert_eq!(hmac_tlv_offset(&t), None, "wrong length");
        let mut t = b.clone();
        t[4] = 2; // needs hdrlen >= 2*3 + 5 = 11
        assert_eq!(hmac_tlv_offset(&t), None, "hdrlen too small for LE");
        assert_eq!(hmac_tlv_offset(&b[..79]), None, "truncated");
        assert_eq!(hmac_tlv_offset(&b[..5]), None, "tiny");
        assert_eq!(hmac_tlv_offset(&kernel_encap_abc()), None);
    }

    /// Every vector was run through Linux 6.18.44 with `setsockopt(IPPROTO_IPV6, IPV6_RTHDR, bytes)`, which calls
    /// `seg6_validate_srh(srh, optlen, false)` for type-4 headers; the bool is whether the kernel accepted it.
    /// The TLV cases show Linux counts every TLV, type 0 included, as `2 + len` bytes (no 1-byte Pad1).
    #[rustfmt::skip]
    const KERNEL_VALIDATE: &[(&str, &[u8], bool)] = &[
        ("one seg, no TLV", &[0, 2, 4, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16], true),
        ("Pad1 then PadN(5)", &[0, 3, 4, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 0, 4, 5, 0, 0, 0, 0, 0], true),
        ("type 0 counts 2+len", &[0, 3, 4, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 0, 4, 6, 0, 0, 0, 0, 0], true),
        ("eight zero bytes", &[0, 3, 4, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 0, 0, 0, 0, 0, 0, 0, 0], true),
        ("1-byte Pad1 not honoured", &[0, 3, 4, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 0, 0, 0, 0, 0, 4, 0, 0], false),
        ("one byte left over", &[0, 3, 4, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 4, 5, 0, 0, 0, 0, 0, 0], false),
        ("TLV overruns", &[0, 3, 4, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 4, 7, 0, 0, 0, 0, 0, 0], false),
        ("PadN(6) exact", &[0, 3, 4, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 4, 6, 0, 0, 0, 0, 0, 0], true),
        ("SL > LE", &[0, 2, 4, 1, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16], false),
        ("LE too large for hdrlen", &[0, 2, 4, 0, 1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16], false),
        ("hdrlen 3 LE 1", &[0, 3, 4, 0, 1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 0, 0, 0, 0, 0, 0, 0, 0], false),
        ("hdrlen 4 LE 1 SL 1", &[0, 4, 4, 1, 1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16], true),
        ("wrong type", &[0, 2, 3, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16], false),
        ("hdrlen != len", &[0, 3, 4, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16], false),
        ("hdrlen 0", &[0, 0, 4, 0, 0, 0, 0, 0], false),
        ("hmac tlv", &[0, 7, 4, 0, 0, 8, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 5, 38, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], true),
    ];

    #[test]
    fn validate_matches_kernel() {
        for (name, bytes, ok) in KERNEL_VALIDATE {
            assert_eq!(validate(bytes, false).is_ok(), *ok, "{name}");
        }
    }

    /// §1.1: `reduced` only drops the `SL <= LE` test; `SL <= LE + 1` still holds.
    #[test]
    fn validate_reduced() {
        // SL 1, LE 0 (H.Encaps.Red shape, e.g. docs/references.md §1.4, encap.red: SL 2, LE 1).
        let b = with_segments([0, 2, 4, 1, 0, 0, 0, 0], &["fc00::c"]);
        assert!(validate(&b, false).is_err());
        assert_eq!(validate(&b, true), Ok(()));
        let b = with_segments([0, 2, 4, 2, 0, 0, 0, 0], &["fc00::c"]);
        assert!(validate(&b, true).is_err());
        // docs/references.md §1.4 encap.red capture (tests/data/srh_kernel.pcap frame 4).
        let b = with_segments(
            [0x29, 0x04, 0x04, 0x02, 0x01, 0, 0, 0],
            &["fc00::c", "fc00::b"],
        );
        assert_eq!(validate(&b, true), Ok(()));
        assert!(validate(&b, false).is_err());
        assert_eq!(validate(&[], true), Err(Error::Truncated));
    }

    #[test]
    fn parse_kernel_hmac_srh() {
        let b = kernel_hmac_srh();
        let r = SrhRepr::parse(&Header::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!(
            r,
            SrhRepr {
                next_header: 41,
                segments_left: 1,
                last_entry: 1,
                flags: FLAG_HMAC,
                tag: 0,
                segments: vec![a("fc00::b"), a("fc00::a")],
                tlvs: vec![TlvRepr::Hmac {
                    key_id: 42,
                    hmac: KERNEL_HMAC_SHA256
                }],
            }
        );
        assert_eq!(emit(&r), b);
    }

    /// RFC 8754 §2.1.1: Pad1 is one byte, PadN 2+len; unusual PadN/HMAC TLVs are kept verbatim.
    #[test]
    fn parse_tlvs() {
        let mut b = with_segments([0, 4, 4, 0, 0, 0, 0, 0], &["fc00::1"]);
        // 16 TLV bytes: Pad1, PadN(1), PadN(2) with non-zero data, type 7 len 3, Pad1, Pad1.
        b.extend_from_slice(&[0, 4, 1, 0, 4, 2, 9, 0, 7, 3, 1, 2, 3, 0, 0]);
        b.push(0);
        let h = Header::new_checked(&b[..]).unwrap();
        let r = SrhRepr::parse(&h).unwrap();
        assert_eq!(
            r.tlvs,
            vec![
                TlvRepr::Pad1,
                TlvRepr::PadN(1),
                TlvRepr::Other {
                    ty: 4,
                    data: vec![9, 0]
                },
                TlvRepr::Other {
                    ty: 7,
                    data: vec![1, 2, 3]
                },
                TlvRepr::Pad1,
                TlvRepr::Pad1,
                TlvRepr::Pad1,
            ]
        );
        assert_eq!(emit(&r), b);
        // HMAC TLV with the D bit set or a short length → Other.
        let mut t = [0u8; 40];
        t[0] = 5;
        t[1] = 38;
        t[2] = 0x80;
        assert!(matches!(
            TlvRepr::parse(&t),
            Ok((TlvRepr::Other { ty: 5, .. }, 40))
        ));
        assert!(matches!(
            TlvRepr::parse(&[5, 2, 0, 0]),
            Ok((TlvRepr::Other { ty: 5, .. }, 4))
        ));
        assert_eq!(TlvRepr::parse(&[]), Err(Error::Truncated));
        assert_eq!(TlvRepr::parse(&[4]), Err(Error::Truncated));
        assert_eq!(TlvRepr::parse(&[4, 3, 0, 0]), Err(Error::Truncated));
    }

    #[test]
    fn parse_rejects_overrunning_tlv() {
        let mut b = with_segments([0, 3, 4, 0, 0, 0, 0, 0], &["fc00::1"]);
        b.extend_from_slice(&[4, 7, 0, 0, 0, 0, 0, 0]);
        let h = Header::new_checked(&b[..]).unwrap();
        assert!(matches!(SrhRepr::parse(&h), Err(Error::Malformed(_))));
    }

    fn arb_addr() -> impl Strategy<Value = Ipv6Addr> {
        any::<[u8; 16]>().prop_map(Ipv6Addr::from)
    }

    fn arb_tlv() -> impl Strategy<Value = TlvRepr> {
        prop_oneof![
            Just(TlvRepr::Pad1),
            any::<u8>().prop_map(TlvRepr::PadN),
            (any::<u32>(), any::<[u8; 32]>())
                .prop_map(|(key_id, hmac)| TlvRepr::Hmac { key_id, hmac }),
            // Types whose parse is unambiguous as Other: neither Pad1, PadN nor HMAC.
            (
                (1u8..=255).prop_filter("", |t| *t != TLV_PADN && *t != TLV_HMAC),
                prop::collection::vec(any::<u8>(), 0..40)
            )
                .prop_map(|(ty, data)| TlvRepr::Other { ty, data }),
        ]
    }

    /// A repr whose buffer_len is a multiple of 8 (padded with Pad1s).
    fn arb_repr() -> impl Strategy<Value = SrhRepr> {
        (
            any::<u8>(),
            any::<u8>(),
            any::<u8>(),
            any::<u16>(),
            prop::collection::vec(arb_addr(), 1..12),
            prop::collection::vec(arb_tlv(), 0..4),
        )
            .prop_map(|(nh, sl, flags, tag, segments, mut tlvs)| {
                let mut r = SrhRepr {
                    next_header: nh,
                    segments_left: sl,
                    last_entry: (segments.len() - 1) as u8,
                    flags,
                    tag,
                    segments,
                    tlvs: Vec::new(),
                };
                r.tlvs.append(&mut tlvs);
                while !r.buffer_len().is_multiple_of(8) {
                    r.tlvs.push(TlvRepr::Pad1);
                }
                r
            })
            .prop_filter("fits hdr_len", |r| r.buffer_len() <= 256 * 8)
    }

    proptest! {
        #[test]
        fn repr_round_trip(r in arb_repr()) {
            let b = emit(&r);
            prop_assert_eq!(usize::from(b[1]) * 8 + 8, b.len());
            let h = Header::new_checked(&b[..]).unwrap();
            prop_assert_eq!(SrhRepr::parse(&h).unwrap(), r);
        }

        #[test]
        fn iproute2_output_is_kernel_valid(
            segs in prop::collection::vec(arb_addr(), 1..20),
            inline in any::<bool>(),
            key in prop::option::of(1u32..),
        ) {
            let r = SrhRepr::iproute2(&segs, inline, key);
            let b = emit(&r);
            prop_assert_eq!(validate(&b, false), Ok(()));
            prop_assert_eq!(hmac_tlv_offset(&b).is_some(), key.is_some());
            let slots = segs.len() + usize::from(inline);
            prop_assert_eq!(usize::from(b[1]), 2 * slots + if key.is_some() { 5 } else { 0 });
        }

        #[test]
        fn arbitrary_bytes_never_panic(b in prop::collection::vec(any::<u8>(), 0..300), reduced in any::<bool>()) {
            let _ = validate(&b, reduced);
            let _ = hmac_tlv_offset(&b);
            let _ = compute_hmac(HmacAlgo::Sha1, b"k", &Ipv6Addr::LOCALHOST, &b, 1);
            if let Ok(h) = Header::new_checked(&b[..]) {
                for i in 0..=usize::from(h.last_entry()) {
                    let _ = h.segment(i);
                }
                let _ = h.tlv_bytes();
                let _ = SrhRepr::parse(&h);
            }
        }

        #[test]
        fn structured_bytes_never_panic(
            fixed in any::<[u8; 8]>(),
            le in 0u8..4,
            hdrlen in 0u8..12,
            tail in prop::collection::vec(any::<u8>(), 0..100),
            reduced in any::<bool>(),
        ) {
            let mut b = fixed.to_vec();
            b[1] = hdrlen;
            b[2] = ROUTING_TYPE;
            b[4] = le;
            b.extend_from_slice(&tail);
            let _ = validate(&b, reduced);
            let _ = hmac_tlv_offset(&b);
            if let Ok(h) = Header::new_checked(&b[..])
                && let Ok(r) = SrhRepr::parse(&h)
            {
                prop_assert_eq!(emit(&r), &b[..h.header_len()]);
            }
        }
    }
}
