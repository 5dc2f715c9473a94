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
        if self.ty == OPT_PAD1 {
            self.offset + 1
        } else {
            self.offset + 2
        }
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
        OptionIter {
            header,
            offset: 2,
            failed: false,
        }
    }
}

impl<'a> Iterator for OptionIter<'a> {
    type Item = Result<OptionRef>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let offset = self.offset;
        let ty = *self.header.get(offset)?;
        if ty == OPT_PAD1 {
            // RFC 8200 §4.2: Pad1 is a single zero octet with no length or data fields.
            self.offset += 1;
            return Some(Ok(OptionRef {
                ty,
                offset,
                data_len: 0,
            }));
        }
        let Some(&len) = self.header.get(offset + 1) else {
            self.failed = true;
            return Some(Err(Error::Truncated));
        };
        let data_len = usize::from(len);
        let end = offset + 2 + data_len;
        if end > self.header.len() {
            self.failed = true;
            return Some(Err(Error::Truncated));
        }
        self.offset = end;
        Some(Ok(OptionRef {
            ty,
            offset,
            data_len,
        }))
    }
}

/// Writes a PadN option of total size `total` (>= 2) into `out[..total]`, or Pad1 when `total == 1`.
///
/// RFC 8200 §4.2: PadN is `01, n-2, n-2 zero octets`. `total == 0` writes nothing. A PadN option
/// holds at most 257 bytes, so larger totals are written as several PadN options (never ending in
/// a lone Pad1 unless `total == 1`). Panics if `out` is shorter than `total` (callers size it).
pub fn write_padding(out: &mut [u8], total: usize) {
    /// Largest PadN: type, length 255, 255 data bytes.
    const MAX_PADN: usize = 2 + 255;
    let out = &mut out[..total];
    let mut at = 0;
    while at < total {
        let rest = total - at;
        if rest == 1 {
            out[at] = OPT_PAD1;
            break;
        }
        let mut n = rest.min(MAX_PADN);
        if rest - n == 1 {
            // Leave two bytes (a PadN) rather than one.
            n -= 1;
        }
        out[at] = OPT_PADN;
        out[at + 1] = (n - 2) as u8;
        out[at + 2..at + n].fill(0);
        at += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn collect(h: &[u8]) -> Vec<Result<(u8, usize, usize)>> {
        OptionIter::new(h)
            .map(|r| r.map(|o| (o.ty, o.offset, o.data_len)))
            .collect()
    }

    /// The HBH header of ioam_kernel.pcap frame 1 (docs/references.md §2.4): nh 17, hdrlen 4 (40 bytes),
    /// PadN with 0 data bytes, then IOAM (0x31) with 34 data bytes (2 + 2 + 36 = 40).
    #[test]
    fn kernel_ioam_header() {
        let mut h = vec![
            0x11, 0x04, 0x01, 0x00, 0x31, 0x22, 0x00, 0x00, 0x00, 0x7b, 0x18, 0x06, 0xc4, 0x00,
        ];
        h.resize(40, 0);
        assert_eq!(
            collect(&h),
            vec![Ok((OPT_PADN, 2, 0)), Ok((OPT_IOAM, 4, 34))]
        );
        let ioam = OptionIter::new(&h).nth(1).unwrap().unwrap();
        assert_eq!(ioam.data_offset(), 6);
        // First data bytes: reserved 00, option type 00 (pre-allocated trace), namespace 0x007b.
        assert_eq!(
            &h[ioam.data_offset()..ioam.data_offset() + 4],
            &[0x00, 0x00, 0x00, 0x7b]
        );
    }

    /// ioam_kernel.pcap frame 3: hdrlen 16 (136 bytes), PadN(0), IOAM len 130 (2 + 2 + 132 = 136).
    #[test]
    fn kernel_ioam_header_large() {
        let mut h = vec![
            0x11, 0x10, 0x01, 0x00, 0x31, 0x82, 0x00, 0x00, 0x00, 0x7b, 0x78, 0x1e, 0xff, 0xf0,
        ];
        h.resize(136, 0);
        assert_eq!(
            collect(&h),
            vec![Ok((OPT_PADN, 2, 0)), Ok((OPT_IOAM, 4, 130))]
        );
    }

    /// Hand-built per RFC 8200 §4.2: a run of Pad1 octets followed by a PadN.
    #[test]
    fn pad1_and_padn() {
        // nh, hdrlen 0, Pad1, Pad1, PadN(2 data), i.e. 8 bytes.
        let h = [59, 0, 0, 0, 1, 2, 0, 0];
        assert_eq!(
            collect(&h),
            vec![Ok((0, 2, 0)), Ok((0, 3, 0)), Ok((1, 4, 2))]
        );
        assert_eq!(
            OptionRef {
                ty: 0,
                offset: 3,
                data_len: 0
            }
            .data_offset(),
            4
        );
    }

    #[test]
    fn overrun_is_truncated_once() {
        // PadN claims 5 data bytes but only 4 remain.
        let h = [59, 0, 1, 5, 0, 0, 0, 0];
        assert_eq!(collect(&h), vec![Err(Error::Truncated)]);
        // Type byte in the last position, no length.
        let h = [59, 0, 1, 3, 0, 0, 0, 0x31];
        assert_eq!(collect(&h), vec![Ok((1, 2, 3)), Err(Error::Truncated)]);
        // Too short to hold any option: empty.
        assert!(collect(&[59]).is_empty());
    }

    #[test]
    fn padding_bytes() {
        // Hand-derived from RFC 8200 §4.2.
        let mut b = [0xee; 8];
        write_padding(&mut b, 0);
        assert_eq!(b, [0xee; 8]);
        write_padding(&mut b, 1);
        assert_eq!(b[..2], [0x00, 0xee]);
        write_padding(&mut b, 2);
        assert_eq!(b[..3], [0x01, 0x00, 0xee]);
        let mut b = [0xee; 8];
        write_padding(&mut b, 6);
        assert_eq!(b, [0x01, 0x04, 0, 0, 0, 0, 0xee, 0xee]);
        // 258 = PadN(256) + PadN(2), not PadN(257) + Pad1.
        let mut big = [0xee; 300];
        write_padding(&mut big, 258);
        assert_eq!(big[..2], [0x01, 254]);
        assert_eq!(big[256..259], [0x01, 0x00, 0xee]);
    }

    proptest! {
        #[test]
        fn padding_parses_back(total in 0usize..600) {
            let mut h = vec![0xeeu8; 2 + total];
            write_padding(&mut h[2..], total);
            let opts: Vec<_> = OptionIter::new(&h).collect::<Result<_>>().unwrap();
            let covered: usize = opts.iter().map(|o| if o.ty == OPT_PAD1 { 1 } else { 2 + o.data_len }).sum();
            prop_assert_eq!(covered, total);
            prop_assert!(opts.iter().all(|o| o.ty == OPT_PAD1 || o.ty == OPT_PADN));
            prop_assert!(h[2..].iter().enumerate().all(|(i, &b)| b <= 1 || opts.iter().any(|o| o.offset + 1 == i + 2)));
        }

        #[test]
        fn emitted_options_round_trip(opts in proptest::collection::vec((1u8..=255, proptest::collection::vec(any::<u8>(), 0..20)), 0..6), pad1s in 0usize..3) {
            let mut h = vec![59u8, 0];
            let mut expect = vec![];
            for _ in 0..pad1s {
                expect.push(OptionRef { ty: OPT_PAD1, offset: h.len(), data_len: 0 });
                h.push(0);
            }
            for (ty, data) in &opts {
                expect.push(OptionRef { ty: *ty, offset: h.len(), data_len: data.len() });
                h.push(*ty);
                h.push(data.len() as u8);
                h.extend_from_slice(data);
            }
            let got: Vec<_> = OptionIter::new(&h).collect::<Result<_>>().unwrap();
            prop_assert_eq!(got, expect);
        }

        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let mut errs = 0;
            for r in OptionIter::new(&data) {
                match r {
                    Ok(o) => prop_assert!(o.data_offset() + o.data_len <= data.len()),
                    Err(_) => errs += 1,
                }
            }
            prop_assert!(errs <= 1);
        }
    }
}
