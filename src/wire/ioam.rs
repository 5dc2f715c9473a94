//! IOAM pre-allocated trace option (RFC 9197 §4.4) carried in a Hop-by-Hop option (RFC 9486 §3),
//! in the layout Linux builds (behaviour spec §2.1) and fills (§2.4).
//!
//! ```text
//! HBH option (offsets from the option's type byte):
//!  0: Option Type 0x31 | 1: Opt Data Len | 2: Reserved | 3: IOAM Option-Type (0 = pre-allocated trace)
//!  4: Namespace-ID (16) | 6: NodeLen (5 bits) Flags (4 bits) RemainingLen (7 bits)
//!  8: IOAM-Trace-Type (24 bits) | 11: Reserved (8)
//! 12: node data list [RemainingLen*4 free bytes first, then filled node blocks, newest first]
//! ```
//! Trace types are handled as the 24-bit value: bit k (RFC numbering, bit 0 = most significant)
//! is `1 << (23 - k)`. So `type 0x800000` means bit 0 only, as in `ip route ... trace prealloc type 0x800000`.

use super::{Error, Result};

/// IOAM Option-Type "Pre-allocated Trace".
pub const OPT_TYPE_PREALLOC_TRACE: u8 = 0;
/// Linux `IOAM6_TRACE_DATA_SIZE_MAX`.
pub const TRACE_DATA_MAX: usize = 244;
/// Length of the trace header (Namespace-ID .. Reserved).
pub const TRACE_HDR_LEN: usize = 8;
/// Offset of the trace header inside the option (after type, len, reserved, IOAM option-type).
pub const TRACE_HDR_OFFSET: usize = 4;
/// The Overflow flag within the 4 flag bits (the first one).
pub const FLAG_OVERFLOW: u8 = 0x8;
/// Trace-type bits Linux's LWT refuses (12-21 and 23), as a 24-bit mask.
pub const LWT_FORBIDDEN_BITS: u32 = 0x000ffd;
/// Bit 22: opaque state snapshot, as a 24-bit mask.
pub const BIT_OPAQUE: u32 = 0x000002;

/// The 8-byte trace header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceHeader {
    /// Namespace-ID.
    pub namespace: u16,
    /// NodeLen in 4-byte words (5 bits).
    pub node_len: u8,
    /// The 4 flag bits (0x8 = Overflow).
    pub flags: u8,
    /// RemainingLen in 4-byte words (7 bits).
    pub remaining_len: u8,
    /// 24-bit trace type.
    pub trace_type: u32,
}

impl TraceHeader {
    /// Parses 8 bytes.
    pub fn parse(b: &[u8]) -> Result<Self> {
        todo!()
    }
    /// Writes 8 bytes (reserved byte 0).
    pub fn emit(&self, out: &mut [u8]) {
        todo!()
    }
}

/// NodeLen Linux computes for a 24-bit trace type: bits 0-7 and 11-21 count one word,
/// bits 8-10 two words; bits 22 (opaque, variable) and 23 are not counted.
pub fn node_len_for_type(trace_type: u32) -> u8 {
    todo!()
}

/// Linux LWT validation of a user trace header (behaviour spec §2.2): Err(reason) when type == 0,
/// remaining_len == 0, remaining_len > 61, or any of bits 12-21 / 23 set.
pub fn validate_lwt(hdr: &TraceHeader) -> core::result::Result<(), &'static str> {
    todo!()
}

/// Length of the whole Hop-by-Hop header the Linux IOAM LWT inserts for `remaining_len` words:
/// `16 + ALIGN(4*remaining_len, 8)`.
pub fn lwt_hbh_len(remaining_len: u8) -> usize {
    todo!()
}

/// Writes the Hop-by-Hop header of behaviour spec §2.1 into `out[..lwt_hbh_len]`: next header, hdrlen,
/// PadN(0) `01 00`, option 0x31 with length 10 + 4*remlen, reserved, option-type 0, the trace header
/// (NodeLen overwritten with [`node_len_for_type`]), zeroed data, and `01 02 00 00` when remlen is odd.
pub fn emit_lwt_hbh(out: &mut [u8], next_header: u8, hdr: &TraceHeader) -> usize {
    todo!()
}

/// A checked view over one IOAM option starting at its type byte (0x31), exactly `2 + opt_len` bytes.
#[derive(Debug, Clone)]
pub struct TraceOption<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> TraceOption<T> {
    /// Wraps the option: needs >= 2 bytes and `2 + opt_len <= len`. Does not check the IOAM type.
    pub fn new_checked(buffer: T) -> Result<Self> {
        todo!()
    }
    /// Opt Data Len.
    pub fn opt_len(&self) -> u8 {
        todo!()
    }
    /// IOAM Option-Type (byte 3).
    pub fn ioam_type(&self) -> u8 {
        todo!()
    }
    /// The trace header (needs opt_len >= 10).
    pub fn header(&self) -> Result<TraceHeader> {
        todo!()
    }
    /// The node data area: `opt_len - 10` bytes after the trace header.
    pub fn data(&self) -> &[u8] {
        todo!()
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TraceOption<T> {
    /// Sets RemainingLen (keeps NodeLen and flags).
    pub fn set_remaining_len(&mut self, remlen: u8) {
        todo!()
    }
    /// Sets the Overflow flag.
    pub fn set_overflow(&mut self) {
        todo!()
    }
    /// Mutable node data area.
    pub fn data_mut(&mut self) -> &mut [u8] {
        todo!()
    }
}

/// The values a node writes into its block (behaviour spec §2.4 table). The caller resolves every
/// "unavailable" rule (no ingress device, loopback egress, ...) before filling this in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeData<'a> {
    /// Hop limit to record (already decremented on input).
    pub hop_limit: u8,
    /// 24-bit node id (`net.ipv6.ioam6_id`).
    pub node_id: u32,
    /// Ingress interface id (16 bits).
    pub ingress_id: u16,
    /// Egress interface id (16 bits).
    pub egress_id: u16,
    /// Timestamp seconds.
    pub ts_sec: u32,
    /// Timestamp sub-seconds (Linux: microseconds).
    pub ts_frac: u32,
    /// Namespace data (32 bits).
    pub ns_data: u32,
    /// Queue depth.
    pub queue_depth: u32,
    /// 56-bit wide node id.
    pub node_id_wide: u64,
    /// Ingress interface id, wide.
    pub ingress_wide: u32,
    /// Egress interface id, wide.
    pub egress_wide: u32,
    /// Namespace wide data.
    pub ns_data_wide: u64,
    /// Opaque state snapshot: schema id (24 bits) and its data (already padded to a multiple of 4); None = no schema.
    pub schema: Option<(u32, &'a [u8])>,
}

/// Size in 4-byte words of the block this node writes: NodeLen plus, if bit 22 is set, 1 + schema words.
pub fn block_words(trace_type: u32, schema_len: Option<usize>) -> usize {
    todo!()
}

/// Writes the node block for `trace_type` into `out` (exactly `4 * block_words` bytes), fields in bit order.
/// Transit delay, checksum complement, buffer occupancy: 0xFFFFFFFF; bits 12-21: 0xFFFFFFFF each;
/// bit 22 without schema: `00 FF FF FF`; with schema: be32 `(len/4) << 24 | id` then the data.
pub fn write_node(out: &mut [u8], trace_type: u32, node: &NodeData) {
    todo!()
}

/// Outcome of [`fill`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FillOutcome {
    /// The node block was written and RemainingLen decreased.
    Filled,
    /// Not enough room: the Overflow flag was set now, nothing written.
    Overflow,
    /// The Overflow flag was already set: nothing done.
    AlreadyOverflow,
}

/// Linux `ioam6_fill_trace_data`: writes `node` at `data[4*(remlen - words) ..]` and decrements RemainingLen,
/// or sets Overflow when `remlen == 0 || remlen < words`.
pub fn fill<T: AsRef<[u8]> + AsMut<[u8]>>(opt: &mut TraceOption<T>, node: &NodeData) -> Result<FillOutcome> {
    todo!()
}

/// One decoded node block (fields present per the trace type; absent ones are None).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct DecodedNode {
    /// Bit 0: hop limit.
    pub hop_limit: Option<u8>,
    /// Bit 0: node id.
    pub node_id: Option<u32>,
    /// Bit 1.
    pub ingress_id: Option<u16>,
    /// Bit 1.
    pub egress_id: Option<u16>,
    /// Bit 2.
    pub ts_sec: Option<u32>,
    /// Bit 3.
    pub ts_frac: Option<u32>,
    /// Bit 4.
    pub transit_delay: Option<u32>,
    /// Bit 5.
    pub ns_data: Option<u32>,
    /// Bit 6.
    pub queue_depth: Option<u32>,
    /// Bit 7.
    pub checksum_complement: Option<u32>,
    /// Bit 8: hop limit (wide).
    pub hop_limit_wide: Option<u8>,
    /// Bit 8: node id (56 bits).
    pub node_id_wide: Option<u64>,
    /// Bit 9.
    pub ingress_wide: Option<u32>,
    /// Bit 9.
    pub egress_wide: Option<u32>,
    /// Bit 10.
    pub ns_data_wide: Option<u64>,
    /// Bit 11.
    pub buffer_occupancy: Option<u32>,
    /// Bit 22: (schema id, data) — `None` inside when no schema (`00ffffff`).
    pub opaque: Option<Option<(u32, Vec<u8>)>>,
}

/// Decodes the filled node blocks of a trace (from `4*remlen` to the end of the data), newest first.
pub fn decode_nodes<T: AsRef<[u8]>>(opt: &TraceOption<T>) -> Result<Vec<DecodedNode>> {
    todo!()
}

#[allow(dead_code)]
fn _unused(_: Error) {}
