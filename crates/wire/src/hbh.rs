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
/// The longest options header: Hdr Ext Len 255, (255 + 1) · 8 octets (RFC 8200 §4.3).
pub const MAX_LEN: usize = 2048;

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

/// Where options can be appended to the options header `hdr` (exactly its `(hdrlen+1)*8` bytes): the offset at
/// which the padding that ends it starts (the header's length when an option ends it), and how many of its
/// options are not padding. The padding at the end is what an appended option may take the place of (the
/// first Linux IOAM implementation's insertion into an existing header: docs/ioam.md).
pub fn append_point(hdr: &[u8]) -> Result<(usize, usize)> {
    if hdr.len() < 8 || hdr.len() != (usize::from(hdr[1]) + 1) * 8 {
        return Err(Error::Malformed("options header length"));
    }
    let (mut end, mut options) = (2, 0);
    for o in OptionIter::new(hdr) {
        let o = o?;
        if o.ty != OPT_PAD1 && o.ty != OPT_PADN {
            end = o.data_offset() + o.data_len;
            options += 1;
        }
    }
    Ok((end, options))
}

/// What [`remove_options`] did to a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal {
    /// No option matched: the header is unchanged.
    Unchanged,
    /// Options were removed; the header is now this many bytes long (a multiple of 8, its Hdr Ext Len updated) and
    /// starts where it did.
    Shrunk(usize),
    /// Nothing but padding would remain: the caller removes the whole header.
    Empty,
}

/// Removes, in place, the options of the options header `hdr` (exactly its `(hdrlen+1)*8` bytes) for which
/// `remove` returns true (given each non-padding option's bytes, from its type byte; it may be asked more than
/// once about an option and must answer the same).
///
/// Every removed option and every padding option around it become one padding run, which is then shortened by
/// a multiple of 8 octets (to at most 7 octets, written as Pad1 or PadN, RFC 8200 §4.2). So every option kept
/// stays at its offset modulo 8 — whatever alignment it needs (RFC 8200 §4.2, `xn+y` with x ≤ 8) holds — the
/// header stays a multiple of 8 octets, and no padding run is longer than the 7 octets receivers accept.
/// (The first Linux IOAM implementation removes the option bytes only and keeps the padding around them, which
/// may leave longer runs than needed: docs/ioam.md.) When only padding would remain the header is not touched
/// and [`Removal::Empty`] is returned.
pub fn remove_options(hdr: &mut [u8], mut remove: impl FnMut(&[u8]) -> bool) -> Result<Removal> {
    if hdr.len() < 8 || hdr.len() != (usize::from(hdr[1]) + 1) * 8 {
        return Err(Error::Malformed("options header length"));
    }
    // First pass: is anything removed, and does anything other than padding stay?
    let (mut removes, mut keeps) = (false, false);
    for o in OptionIter::new(hdr) {
        let o = o?;
        if o.ty == OPT_PAD1 || o.ty == OPT_PADN {
            continue;
        }
        if remove(&hdr[o.offset..o.data_offset() + o.data_len]) {
            removes = true;
        } else {
            keeps = true;
        }
    }
    if !removes {
        return Ok(Removal::Unchanged);
    }
    if !keeps {
        return Ok(Removal::Empty);
    }
    // Second pass: copy what stays towards the front. The write position never passes the read position.
    let mut w = 2;
    let mut run = 0;
    let mut r = 2;
    while r < hdr.len() {
        let (ty, len) = if hdr[r] == OPT_PAD1 {
            (OPT_PAD1, 1)
        } else {
            (hdr[r], 2 + usize::from(hdr[r + 1]))
        };
        let pad = ty == OPT_PAD1 || ty == OPT_PADN;
        if pad || remove(&hdr[r..r + len]) {
            run += len;
        } else {
            write_padding(&mut hdr[w..], run % 8);
            w += run % 8;
            run = 0;
            hdr.copy_within(r..r + len, w);
            w += len;
        }
        r += len;
    }
    write_padding(&mut hdr[w..], run % 8);
    w += run % 8;
    debug_assert!(w.is_multiple_of(8) && w >= 8);
    hdr[1] = (w / 8 - 1) as u8;
    Ok(Removal::Shrunk(w))
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

    fn is_ioam(o: &[u8]) -> bool {
        o[0] == OPT_IOAM
    }

    /// The header Linux's ioam6 inline mode builds (docs/references.md §2.1): next header UDP, PadN(0), an IOAM
    /// pre-allocated trace of 8 data bytes (option length 10 + 8 = 18), no tail padding (16 + 8 = 24 bytes).
    fn lwt_hbh() -> Vec<u8> {
        let mut h = vec![17, 2, 1, 0, 0x31, 18, 0, 0];
        h.extend([0, 123, 0x08, 2, 0x80, 0, 0, 0]); // ns 123, NodeLen 1, RemainingLen 2, type bit 0
        h.extend([0; 8]);
        h
    }

    #[test]
    fn removing_the_only_option_leaves_nothing() {
        let mut h = lwt_hbh();
        let before = h.clone();
        assert_eq!(remove_options(&mut h, is_ioam), Ok(Removal::Empty));
        assert_eq!(
            h, before,
            "an emptied header is left for the caller to cut out"
        );
        assert_eq!(remove_options(&mut h, |_| false), Ok(Removal::Unchanged));
    }

    #[test]
    fn removal_keeps_other_options_at_their_offset_modulo_8() {
        // Hand-derived (RFC 8200 §4.2): next header ICMPv6, PadN(0) at 2, IOAM (20 bytes) at 4, Router Alert
        // (RFC 2711, type 5, 2 data bytes, alignment 2n) at 24, PadN(2) at 28: 32 bytes, Hdr Ext Len 3.
        let mut h = vec![58, 3, 1, 0];
        h.extend(&lwt_hbh()[4..]);
        h.extend([5, 2, 0, 0, 1, 2, 0, 0]);
        assert_eq!(h.len(), 32);
        // PadN(0) + IOAM = a 22-byte run before the Router Alert: 22 mod 8 = 6 bytes of PadN stay, so the Router
        // Alert moves from 24 to 8 (both 0 mod 8); the 4-byte tail run stays: 16 bytes, Hdr Ext Len 1.
        assert_eq!(remove_options(&mut h, is_ioam), Ok(Removal::Shrunk(16)));
        assert_eq!(h[..16], [58, 1, 1, 4, 0, 0, 0, 0, 5, 2, 0, 0, 1, 2, 0, 0]);
    }

    #[test]
    fn removal_shortens_long_padding_runs_and_writes_pad1() {
        // Option X (type 0x1e, 1 data byte) at 2, IOAM (12 bytes, no trace data) at 5, PadN(1) at 17, option Y
        // (0x1e, 3 data bytes) at 20: 25 bytes + Pad1*... : padded to 32 with PadN(5) at 25.
        let mut h = vec![59, 3, 0x1e, 1, 0xaa];
        h.extend([0x31, 10, 0, 0, 0, 7, 0x08, 0, 0x80, 0, 0, 0]);
        h.extend([1, 1, 0]);
        h.extend([0x1e, 3, 1, 2, 3]);
        h.extend([1, 5, 0, 0, 0, 0, 0]);
        assert_eq!(h.len(), 32);
        // The run between X and Y is 12 + 3 = 15 bytes: 7 stay (PadN of 5 data bytes), Y moves from 20 to 12
        // (both 4 mod 8); the tail run of 7 stays: 24 bytes, Hdr Ext Len 2.
        assert_eq!(remove_options(&mut h, is_ioam), Ok(Removal::Shrunk(24)));
        assert_eq!(
            h[..24],
            [
                59, 2, 0x1e, 1, 0xaa, 1, 5, 0, 0, 0, 0, 0, 0x1e, 3, 1, 2, 3, 1, 5, 0, 0, 0, 0, 0
            ]
        );
        // A run of exactly one byte is a Pad1.
        let mut h = vec![59, 1, 0x1e, 0, 0x31, 2, 0, 0, 0x1e, 1, 9, 0, 0, 0, 0, 0];
        // X at 2 (2 bytes), IOAM at 4 (4 bytes), Y at 8 (3 bytes), Pad1*5 at 11: removing IOAM leaves a run of
        // 4 (< 8, kept whole) and the tail of 5.
        assert_eq!(remove_options(&mut h, is_ioam), Ok(Removal::Shrunk(16)));
        assert_eq!(h, [59, 1, 0x1e, 0, 1, 2, 0, 0, 0x1e, 1, 9, 1, 3, 0, 0, 0]);
    }

    #[test]
    fn append_point_is_where_the_final_padding_starts() {
        // Hand-derived (RFC 8200 §4.2): Router Alert at 2..6, PadN(0) at 6: the padding starts at 6, one option.
        assert_eq!(append_point(&[17, 0, 5, 2, 0, 0, 1, 0]), Ok((6, 1)));
        // Option 0x1e with 3 data bytes at 2..7, Pad1 at 7.
        assert_eq!(append_point(&[17, 0, 0x1e, 3, 1, 2, 3, 0]), Ok((7, 1)));
        // Only padding: the options would start right after Next Header and Hdr Ext Len.
        assert_eq!(append_point(&[17, 0, 1, 4, 0, 0, 0, 0]), Ok((2, 0)));
        // An option ends the header: nothing to take the place of.
        let mut h = lwt_hbh();
        assert_eq!(append_point(&h), Ok((24, 1)));
        // Padding between options does not count; the last option's end does.
        h = vec![59, 1, 0x1e, 0, 1, 0, 0x1e, 1, 9, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(append_point(&h), Ok((9, 2)));
        h[1] = 0;
        assert!(append_point(&h).is_err());
        let mut h = lwt_hbh();
        h[5] = 200;
        assert!(append_point(&h).is_err());
    }

    #[test]
    fn removal_refuses_bad_headers() {
        let mut h = lwt_hbh();
        h[1] = 5;
        assert!(remove_options(&mut h, is_ioam).is_err());
        let mut h = lwt_hbh();
        h[5] = 200; // the IOAM option overruns the header
        assert!(remove_options(&mut h, is_ioam).is_err());
    }

    proptest! {
        #[test]
        fn removal_output_is_well_formed(ops in proptest::collection::vec((0u8..4, 0usize..12), 1..8)) {
            // Random options (IOAM or another type, random lengths) with padding between, padded to 8n.
            let mut h = vec![59, 0];
            for (kind, len) in &ops {
                match kind {
                    0 => h.push(OPT_PAD1),
                    1 => { h.push(OPT_IOAM); h.push(*len as u8); h.extend(vec![0; *len]); }
                    _ => { h.push(0x1e); h.push(*len as u8); h.extend(vec![0xee; *len]); }
                }
            }
            let pad = (8 - h.len() % 8) % 8;
            let at = h.len();
            h.resize(at + pad, 0);
            write_padding(&mut h[at..], pad);
            h[1] = (h.len() / 8 - 1) as u8;
            let kept_before: Vec<(usize, Vec<u8>)> = OptionIter::new(&h)
                .map(|o| o.unwrap())
                .filter(|o| o.ty == 0x1e)
                .map(|o| (o.offset % 8, h[o.offset..o.data_offset() + o.data_len].to_vec()))
                .collect();
            match remove_options(&mut h, is_ioam).unwrap() {
                Removal::Unchanged | Removal::Empty => {}
                Removal::Shrunk(n) => {
                    let h = &h[..n];
                    prop_assert_eq!(n % 8, 0);
                    prop_assert_eq!(usize::from(h[1]), n / 8 - 1);
                    let mut run = 0;
                    let mut kept = Vec::new();
                    for o in OptionIter::new(h) {
                        let o = o.unwrap();
                        prop_assert_ne!(o.ty, OPT_IOAM);
                        if o.ty == OPT_PAD1 || o.ty == OPT_PADN {
                            run += o.data_offset() + o.data_len - o.offset;
                            prop_assert!(run <= 7, "padding run of {run}");
                            if o.ty == OPT_PADN {
                                prop_assert!(h[o.data_offset()..o.data_offset() + o.data_len].iter().all(|b| *b == 0));
                            }
                        } else {
                            run = 0;
                            kept.push((o.offset % 8, h[o.offset..o.data_offset() + o.data_len].to_vec()));
                        }
                    }
                    prop_assert_eq!(kept, kept_before);
                }
            }
        }
    }
}
