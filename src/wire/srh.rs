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
//! Segment List[0] is the LAST segment of the path; Segment List[Last Entry] the first.
//! HMAC TLV (§2.1.2): | Type 5 | Length 38 | D(1)+Reserved(15) | HMAC Key ID (32) | HMAC (32 bytes) |.

use super::{Error, Result};
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

/// A checked view over an SRH. The buffer may be longer than the header.
#[derive(Debug, Clone)]
pub struct Header<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Header<T> {
    /// Checks: >= 8 bytes, routing type 4, `(hdr_len+1)*8 <= buffer len`,
    /// `8 + 16*(last_entry+1) <= (hdr_len+1)*8`.
    pub fn new_checked(buffer: T) -> Result<Self> {
        todo!()
    }
    /// Next header.
    pub fn next_header(&self) -> u8 {
        todo!()
    }
    /// Hdr Ext Len (8-octet units excluding the first 8).
    pub fn hdr_len(&self) -> u8 {
        todo!()
    }
    /// Length of the whole header in bytes, `(hdr_len+1)*8`.
    pub fn header_len(&self) -> usize {
        todo!()
    }
    /// Segments Left.
    pub fn segments_left(&self) -> u8 {
        todo!()
    }
    /// Last Entry (Linux `first_segment`).
    pub fn last_entry(&self) -> u8 {
        todo!()
    }
    /// Flags.
    pub fn flags(&self) -> u8 {
        todo!()
    }
    /// Tag.
    pub fn tag(&self) -> u16 {
        todo!()
    }
    /// Segment List[i] (i <= last_entry).
    pub fn segment(&self, i: usize) -> Ipv6Addr {
        todo!()
    }
    /// The TLV area: bytes after the segment list up to the header length.
    pub fn tlv_bytes(&self) -> &[u8] {
        todo!()
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Header<T> {
    /// Sets Next Header.
    pub fn set_next_header(&mut self, nh: u8) {
        todo!()
    }
    /// Sets Segments Left.
    pub fn set_segments_left(&mut self, sl: u8) {
        todo!()
    }
    /// Sets Segment List[i].
    pub fn set_segment(&mut self, i: usize, a: Ipv6Addr) {
        todo!()
    }
}

/// Linux `seg6_validate_srh(srh, len, reduced)` on exactly `srh.len()` bytes (§1.1 of the behaviour spec):
/// type 4; `(hdrlen+1)*8 == len`; unless `reduced`, `segments_left <= last_entry`;
/// `last_entry <= hdrlen/2 - 1`; `segments_left <= last_entry + 1`; trailing bytes are an exact TLV sequence.
pub fn validate(srh: &[u8], reduced: bool) -> Result<()> {
    todo!()
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
    /// Parses a checked header (TLVs included).
    pub fn parse<T: AsRef<[u8]>>(h: &Header<T>) -> Result<Self> {
        todo!()
    }
    /// Bytes [`emit`](Self::emit) writes: 8 + 16*segments + TLVs (caller keeps it a multiple of 8).
    pub fn buffer_len(&self) -> usize {
        todo!()
    }
    /// Writes the header; hdr_len is derived from [`buffer_len`](Self::buffer_len).
    pub fn emit(&self, out: &mut [u8]) {
        todo!()
    }
    /// The SRH iproute2 builds for `encap seg6 mode M segs A,B,C [hmac KEYID]` (behaviour spec §1.1):
    /// segments reversed; for `inline` an extra `::` slot at index 0; last_entry = segments_left = slots-1;
    /// flags 0 (0x08 with HMAC, plus a zeroed HMAC TLV carrying the key id); tag 0; next_header 0.
    pub fn iproute2(segs: &[Ipv6Addr], inline: bool, hmac_key_id: Option<u32>) -> Self {
        todo!()
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
pub fn hmac_tlv_offset(srh: &[u8]) -> Option<usize> {
    todo!()
}

/// Computes the HMAC over `src | last_entry | flags | key_id | segments[0..=last_entry]` (behaviour spec §1.6),
/// truncated / zero-padded to 32 bytes. `srh` is the whole header. Fails (Linux -EMSGSIZE) when the text is
/// 256 bytes or more, i.e. more than 14 segments.
pub fn compute_hmac(algo: HmacAlgo, secret: &[u8], src: &Ipv6Addr, srh: &[u8], key_id: u32) -> Result<[u8; 32]> {
    todo!()
}

#[allow(dead_code)]
fn _unused(_: Error) {}
