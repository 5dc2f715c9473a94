//! Reading pcap / pcapng captures and writing pcapng (one interface block per device) and pcap.
//!
//! Formats: classic pcap (both byte orders, microsecond magic 0xa1b2c3d4 and nanosecond magic 0xa1b23c4d),
//! pcapng (draft-ietf-opsawg-pcapng: SHB, IDB, EPB, SPB, any byte order; other blocks skipped).
//! A truncated or corrupt capture is an error naming the frame/block and byte offset; never a partial result.

use std::path::Path;

/// Link type Ethernet (LINKTYPE_ETHERNET).
pub const LINKTYPE_ETHERNET: u16 = 1;

/// One captured frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedFrame {
    /// Timestamp in nanoseconds since the Unix epoch.
    pub ts_ns: u64,
    /// Captured bytes.
    pub data: Vec<u8>,
    /// Original length on the wire (>= data.len()).
    pub orig_len: u32,
    /// Link type of the interface it was captured on.
    pub linktype: u16,
}

/// A capture file error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PcapError {
    /// Not a pcap or pcapng file.
    #[error("not a pcap or pcapng file (magic {0:#010x})")]
    BadMagic(u32),
    /// The file ends in the middle of a header or record.
    #[error("truncated capture: {what} at byte offset {offset}")]
    Truncated {
        /// What was being read ("frame 3 header", "block 5 body", ...).
        what: String,
        /// Byte offset where it starts.
        offset: usize,
    },
    /// A structurally invalid field.
    #[error("corrupt capture: {what} at byte offset {offset}")]
    Corrupt {
        /// What is wrong.
        what: String,
        /// Byte offset.
        offset: usize,
    },
    /// I/O error (message).
    #[error("{0}")]
    Io(String),
}

/// Parses a whole capture held in memory.
pub fn read_capture(bytes: &[u8]) -> Result<Vec<CapturedFrame>, PcapError> {
    todo!()
}

/// Reads and parses a capture file.
pub fn read_file(path: &Path) -> Result<Vec<CapturedFrame>, PcapError> {
    todo!()
}

/// One frame to write: which interface (index into the device list), timestamp, bytes.
#[derive(Debug, Clone, Copy)]
pub struct OutFrame<'a> {
    /// Index into the `devices` slice given to the writer.
    pub iface: usize,
    /// Timestamp in nanoseconds.
    pub ts_ns: u64,
    /// Bytes.
    pub data: &'a [u8],
}

/// Serialises a pcapng file: an SHB, one IDB per device (LINKTYPE_ETHERNET, snaplen 0, `if_name` option =
/// device name, `if_tsresol` = 9 (nanoseconds)), then one EPB per frame.
pub fn pcapng_bytes(devices: &[&str], frames: &[OutFrame]) -> Vec<u8> {
    todo!()
}

/// Serialises a classic nanosecond pcap (magic 0xa1b23c4d, LINKTYPE_ETHERNET, snaplen 262144).
pub fn pcap_bytes(frames: &[(u64, &[u8])]) -> Vec<u8> {
    todo!()
}

/// Writes `bytes` to `path` atomically (temporary file in the same directory, then rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), PcapError> {
    todo!()
}
