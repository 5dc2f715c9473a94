//! Hop-by-Hop Options header and its options (RFC 8200 §4.2, §4.3): Pad1, PadN, IOAM (RFC 9486).
//!
//! ```text
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+- - - -
//! |  Next Header  |  Hdr Ext Len  |  Options ...
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+- - - -
//! option: | Type (8) | Opt Data Len (8) | Option Data ... |   (Pad1 is a single 0 byte)
//! ```

use super::{Error, Result};

/// Option type Pad1.
pub const OPT_PAD1: u8 = 0;
/// Option type PadN.
pub const OPT_PADN: u8 = 1;
/// Option type IOAM (RFC 9486 §3; IANA 0x31, "00" action bits: skip if unknown).
pub const OPT_IOAM: u8 = 0x31;

/// One option inside a Hop-by-Hop (or Destination Options) header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionRef {
    /// Option type.
    pub ty: u8,
    /// Offset of the option's type byte from the start of the options header.
    pub offset: usize,
    /// Option data length (0 for Pad1).
    pub data_len: usize,
}

impl OptionRef {
    /// Offset of the option data from the start of the options header.
    pub fn data_offset(&self) -> usize {
        if self.ty == OPT_PAD1 { self.offset + 1 } else { self.offset + 2 }
    }
}

/// Iterator over the options of an options header given as its full bytes (`(hdrlen+1)*8`).
/// Yields `Err(Truncated)` once if an option overruns the header.
pub struct OptionIter<'a> {
    header: &'a [u8],
    offset: usize,
    failed: bool,
}

impl<'a> OptionIter<'a> {
    /// Iterates the options of `header` (which starts at Next Header and is exactly the header's length).
    pub fn new(header: &'a [u8]) -> Self {
        OptionIter { header, offset: 2, failed: false }
    }
}

impl<'a> Iterator for OptionIter<'a> {
    type Item = Result<OptionRef>;
    fn next(&mut self) -> Option<Self::Item> {
        todo!()
    }
}

/// Writes a PadN option of total size `total` (>= 2) into `out[..total]`, or Pad1 when `total == 1`.
pub fn write_padding(out: &mut [u8], total: usize) {
    todo!()
}

#[allow(dead_code)]
fn _unused(_: Error) {}
