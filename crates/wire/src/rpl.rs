//! The RPL Source Routing Header (RFC 6554 §3), routing type 3, with Linux's compression (`net/ipv6/rpl.c`).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Next Header  |  Hdr Ext Len  | Routing Type  | Segments Left |  0
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | CmprI | CmprE |  Pad  |               Reserved                |  4
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! .                        Addresses[1..n]                        .  8
//! ```
//! Addresses 1..n-1 carry 16-CmprI bytes each, the last one 16-CmprE bytes; the elided prefix
//! is taken from the IPv6 Destination Address. Pad zero bytes complete a multiple of 8.

use super::{Error, Result};
use std::net::Ipv6Addr;

/// Routing Type of the RPL SRH.
pub const ROUTING_TYPE: u8 = 3;

/// Fixed part of the header before the addresses.
pub const FIXED_LEN: usize = 8;
/// Largest address count Linux accepts on receive (June 2026 bound: `n + 1 <= 127`).
pub const MAX_ADDRESSES: usize = 127;
/// Largest elision Linux computes (`IPV6_PFXTAIL_LEN`): a full 16-byte match still gives 15.
pub const MAX_CMPR: u8 = 15;

mod field {
    pub const NEXT_HEADER: usize = 0;
    pub const HDR_LEN: usize = 1;
    pub const TYPE: usize = 2;
    pub const SEG_LEFT: usize = 3;
    pub const CMPR: usize = 4;
    pub const PAD: usize = 5;
}

/// A checked view over an RPL SRH.
#[derive(Debug, Clone)]
pub struct Header<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Header<T> {
    /// Checks: >= 8 bytes, routing type 3, `(hdr_len+1)*8 <= buffer len`.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let b = buffer.as_ref();
        if b.len() < FIXED_LEN {
            return Err(Error::Truncated);
        }
        if b[field::TYPE] != ROUTING_TYPE {
            return Err(Error::Malformed("rpl: routing type is not 3"));
        }
        if (usize::from(b[field::HDR_LEN]) + 1) * 8 > b.len() {
            return Err(Error::Truncated);
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
    /// Hdr Ext Len.
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
    /// CmprI.
    pub fn cmpr_i(&self) -> u8 {
        self.buffer.as_ref()[field::CMPR] >> 4
    }
    /// CmprE.
    pub fn cmpr_e(&self) -> u8 {
        self.buffer.as_ref()[field::CMPR] & 0x0f
    }
    /// Pad.
    pub fn pad(&self) -> u8 {
        self.buffer.as_ref()[field::PAD] >> 4
    }
    /// Number of addresses (Linux: n+1 where n = (hdrlen*8 - pad - (16-CmprE)) / (16-CmprI)).
    /// Errors when the division leaves a remainder, the subtraction underflows, or n+1 > 127 (June 2026 bound).
    pub fn address_count(&self) -> Result<usize> {
        let elided_i = 16 - usize::from(self.cmpr_i());
        let elided_e = 16 - usize::from(self.cmpr_e());
        let rest = (usize::from(self.hdr_len()) * 8)
            .checked_sub(usize::from(self.pad()) + elided_e)
            .ok_or(Error::Malformed(
                "rpl: header too short for the last address",
            ))?;
        if rest % elided_i != 0 {
            return Err(Error::Malformed(
                "rpl: address area is not a whole number of addresses",
            ));
        }
        let count = rest / elided_i + 1;
        if count > MAX_ADDRESSES {
            return Err(Error::Malformed("rpl: too many addresses"));
        }
        Ok(count)
    }
    /// The stored (elided) bytes of address `i`, given `count = address_count()`:
    /// `16 - CmprI` bytes for `i < count-1`, `16 - CmprE` for the last.
    fn stored(&self, i: usize, count: usize) -> &[u8] {
        let si = 16 - usize::from(self.cmpr_i());
        let off = FIXED_LEN + si * i;
        let len = if i + 1 == count {
            16 - usize::from(self.cmpr_e())
        } else {
            si
        };
        &self.buffer.as_ref()[off..off + len]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Header<T> {
    /// Sets Segments Left.
    pub fn set_segments_left(&mut self, sl: u8) {
        self.buffer.as_mut()[field::SEG_LEFT] = sl;
    }
    /// Sets Next Header.
    pub fn set_next_header(&mut self, nh: u8) {
        self.buffer.as_mut()[field::NEXT_HEADER] = nh;
    }
}

/// Length of the common prefix (in bytes, 0..=16) of two addresses.
fn common_prefix(a: &Ipv6Addr, b: &Ipv6Addr) -> usize {
    a.octets()
        .iter()
        .zip(b.octets().iter())
        .take_while(|(x, y)| x == y)
        .count()
}

/// (CmprI, CmprE) Linux chooses for `addrs` (n+1 addresses, n >= 0) against `daddr` (docs/references.md §3.2):
/// CmprI = common prefix of daddr with ALL of addrs[0..n] (15 when n == 0 or all 16 bytes match);
/// CmprE = common prefix of daddr and addrs\[n\], capped at 15.
/// An empty `addrs` gives (15, 15).
pub fn compression(addrs: &[Ipv6Addr], daddr: &Ipv6Addr) -> (u8, u8) {
    let Some((last, inner)) = addrs.split_last() else {
        return (MAX_CMPR, MAX_CMPR);
    };
    let cap = usize::from(MAX_CMPR);
    let cmpr_i = inner
        .iter()
        .map(|a| common_prefix(a, daddr))
        .min()
        .unwrap_or(cap)
        .min(cap);
    let cmpr_e = common_prefix(last, daddr).min(cap);
    (cmpr_i as u8, cmpr_e as u8)
}

/// (seglen, pad) of the compressed address area.
fn seglen_pad(addrs: &[Ipv6Addr], cmpr_i: u8, cmpr_e: u8) -> (usize, usize) {
    let seglen = match addrs.len() {
        0 => 0,
        k => (k - 1) * (16 - usize::from(cmpr_i)) + (16 - usize::from(cmpr_e)),
    };
    (seglen, (8 - seglen % 8) % 8)
}

/// Total header length in bytes of the compressed form of `addrs` against `daddr` (8 + seglen + pad).
pub fn compressed_len(addrs: &[Ipv6Addr], daddr: &Ipv6Addr) -> usize {
    let (ci, ce) = compression(addrs, daddr);
    let (seglen, pad) = seglen_pad(addrs, ci, ce);
    FIXED_LEN + seglen + pad
}

/// Writes the compressed header (next header, segments left, CmprI/CmprE/Pad, elided addresses, zero pad) into
/// `out[..compressed_len(addrs, daddr)]` and returns that length.
///
/// `addrs` should hold 1..=127 addresses (more could overflow Hdr Ext Len); panics if `out` is too short.
pub fn emit_compressed(
    out: &mut [u8],
    next_header: u8,
    segments_left: u8,
    addrs: &[Ipv6Addr],
    daddr: &Ipv6Addr,
) -> usize {
    let (ci, ce) = compression(addrs, daddr);
    let (seglen, pad) = seglen_pad(addrs, ci, ce);
    let total = FIXED_LEN + seglen + pad;
    let out = &mut out[..total];
    out[field::NEXT_HEADER] = next_header;
    out[field::HDR_LEN] = ((seglen + pad) / 8) as u8;
    out[field::TYPE] = ROUTING_TYPE;
    out[field::SEG_LEFT] = segments_left;
    out[field::CMPR] = (ci << 4) | ce;
    out[field::PAD] = (pad as u8) << 4;
    out[6] = 0;
    out[7] = 0;
    let mut off = FIXED_LEN;
    if let Some((last, inner)) = addrs.split_last() {
        for a in inner {
            let tail = &a.octets()[usize::from(ci)..];
            out[off..off + tail.len()].copy_from_slice(tail);
            off += tail.len();
        }
        let tail = &last.octets()[usize::from(ce)..];
        out[off..off + tail.len()].copy_from_slice(tail);
        off += tail.len();
    }
    out[off..].fill(0);
    total
}

/// Decompresses all addresses of a checked header against `daddr` into `out` (which must hold
/// `address_count()` entries); returns the count. Each address is the first CmprI (CmprE for the last)
/// bytes of `daddr` followed by the stored tail.
pub fn decompress<T: AsRef<[u8]>>(
    h: &Header<T>,
    daddr: &Ipv6Addr,
    out: &mut [Ipv6Addr],
) -> Result<usize> {
    let count = h.address_count()?;
    let out = out
        .get_mut(..count)
        .ok_or(Error::Malformed("rpl: output holds too few addresses"))?;
    // address_count() guarantees 8 + (count-1)*(16-CmprI) + (16-CmprE) + pad == (hdrlen+1)*8 <= buffer length.
    for (i, slot) in out.iter_mut().enumerate() {
        let tail = h.stored(i, count);
        let mut a = daddr.octets();
        a[16 - tail.len()..].copy_from_slice(tail);
        *slot = Ipv6Addr::from(a);
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn a(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    fn compress(nh: u8, sl: u8, addrs: &[Ipv6Addr], d: &Ipv6Addr) -> Vec<u8> {
        let mut v = vec![0xAA; compressed_len(addrs, d) + 5];
        let n = emit_compressed(&mut v, nh, sl, addrs, d);
        assert_eq!(n, compressed_len(addrs, d));
        assert!(v[n..].iter().all(|&b| b == 0xAA), "wrote past the header");
        v.truncate(n);
        v
    }

    fn decode(b: &[u8], d: &Ipv6Addr) -> Result<Vec<Ipv6Addr>> {
        let h = Header::new_checked(b)?;
        let mut out = [Ipv6Addr::UNSPECIFIED; MAX_ADDRESSES];
        let n = decompress(&h, d, &mut out)?;
        Ok(out[..n].to_vec())
    }

    /// One step of Linux receive processing (docs/references.md §3.4 steps 2, 4, 7) on a header addressed to `da`:
    /// returns the new DA and the recompressed header.
    fn receive_step(rh: &[u8], da: &Ipv6Addr) -> (Ipv6Addr, Vec<u8>) {
        let h = Header::new_checked(rh).unwrap();
        let mut addrs = decode(rh, da).unwrap();
        let n = addrs.len() - 1;
        let sl = h.segments_left() - 1;
        let i = n - usize::from(sl);
        let new_da = addrs[i];
        addrs[i] = *da;
        (new_da, compress(h.next_header(), sl, &addrs, &new_da))
    }

    // Kernel frames captured from Linux 6.18 (docs/references.md §3.4), RH bytes only; nh 0x11 = UDP.
    /// Sent to fd00:2::1: [fd00:2::5, fd00:2::2], SL 2, CmprI = CmprE = 15, Pad 6.
    const SENT_2ADDR: [u8; 16] = [
        0x11, 0x01, 0x03, 0x02, 0xff, 0x60, 0, 0, 0x05, 0x02, 0, 0, 0, 0, 0, 0,
    ];
    /// Forwarded by the kernel with DA fd00:2::5: [fd00:2::1, fd00:2::2], SL 1.
    const RECV_2ADDR: [u8; 16] = [
        0x11, 0x01, 0x03, 0x01, 0xff, 0x60, 0, 0, 0x01, 0x02, 0, 0, 0, 0, 0, 0,
    ];
    /// Sent to fd00:2::1: one address stored with CmprI = CmprE = 8 (tail `00..00 02` = fd00:2::2), SL 1.
    const SENT_CMPR8: [u8; 16] = [
        0x11, 0x01, 0x03, 0x01, 0x88, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02,
    ];
    /// Forwarded by the kernel with DA fd00:2::2: [fd00:2::1], SL 0 (also quoted in docs/references.md §3.4).
    const RECV_1ADDR: [u8; 16] = [
        0x11, 0x01, 0x03, 0x00, 0xff, 0x70, 0, 0, 0x01, 0, 0, 0, 0, 0, 0, 0,
    ];

    #[test]
    fn accessors() {
        let h = Header::new_checked(&SENT_2ADDR[..]).unwrap();
        assert_eq!(h.next_header(), 17);
        assert_eq!(h.hdr_len(), 1);
        assert_eq!(h.header_len(), 16);
        assert_eq!(h.segments_left(), 2);
        assert_eq!((h.cmpr_i(), h.cmpr_e(), h.pad()), (15, 15, 6));
        // n = (8 - 6 - 1) / 1 = 1 → 2 addresses.
        assert_eq!(h.address_count(), Ok(2));
        let h = Header::new_checked(&SENT_CMPR8[..]).unwrap();
        assert_eq!((h.cmpr_i(), h.cmpr_e(), h.pad()), (8, 8, 0));
        // n = (8 - 0 - 8) / 8 = 0 → 1 address.
        assert_eq!(h.address_count(), Ok(1));
    }

    #[test]
    fn setters() {
        let mut b = SENT_2ADDR;
        let mut h = Header::new_checked(&mut b[..]).unwrap();
        h.set_segments_left(1);
        h.set_next_header(6);
        assert_eq!((h.segments_left(), h.next_header()), (1, 6));
    }

    #[test]
    fn new_checked_errors() {
        assert_eq!(
            Header::new_checked(&SENT_2ADDR[..7]).unwrap_err(),
            Error::Truncated
        );
        assert_eq!(
            Header::new_checked(&SENT_2ADDR[..15]).unwrap_err(),
            Error::Truncated
        );
        let mut b = SENT_2ADDR;
        b[2] = 4;
        assert!(matches!(
            Header::new_checked(&b[..]),
            Err(Error::Malformed(_))
        ));
    }

    #[test]
    fn decompress_kernel_inputs() {
        assert_eq!(
            decode(&SENT_2ADDR, &a("fd00:2::1")).unwrap(),
            vec![a("fd00:2::5"), a("fd00:2::2")]
        );
        assert_eq!(
            decode(&RECV_2ADDR, &a("fd00:2::5")).unwrap(),
            vec![a("fd00:2::1"), a("fd00:2::2")]
        );
        assert_eq!(
            decode(&SENT_CMPR8, &a("fd00:2::1")).unwrap(),
            vec![a("fd00:2::2")]
        );
        assert_eq!(
            decode(&RECV_1ADDR, &a("fd00:2::2")).unwrap(),
            vec![a("fd00:2::1")]
        );
        // Uncompressed input from the same capture: CmprI = CmprE = 0, hdrlen 4.
        let mut u = vec![0x11, 0x04, 0x03, 0x02, 0x00, 0x00, 0x00, 0x00];
        u.extend_from_slice(&a("fd00:2::5").octets());
        u.extend_from_slice(&a("fd00:2::2").octets());
        assert_eq!(
            decode(&u, &a("fd00:2::1")).unwrap(),
            vec![a("fd00:2::5"), a("fd00:2::2")]
        );
    }

    #[test]
    fn compress_matches_kernel_output() {
        assert_eq!(
            compress(17, 1, &[a("fd00:2::1"), a("fd00:2::2")], &a("fd00:2::5")),
            RECV_2ADDR
        );
        assert_eq!(
            compress(17, 0, &[a("fd00:2::1")], &a("fd00:2::2")),
            RECV_1ADDR
        );
    }

    /// Full receive steps on the kernel's own input/output pairs from rpl.pcap.
    #[test]
    fn receive_step_matches_kernel() {
        assert_eq!(
            receive_step(&SENT_2ADDR, &a("fd00:2::1")),
            (a("fd00:2::5"), RECV_2ADDR.to_vec())
        );
        assert_eq!(
            receive_step(&SENT_CMPR8, &a("fd00:2::1")),
            (a("fd00:2::2"), RECV_1ADDR.to_vec())
        );
    }

    /// Behaviour spec §3.4 [verified 6.18.44]: DA 2001:db8:1::2 (local), list [2001:db8:2::5, 3001::2], SL 2 →
    /// DA 2001:db8:2::5, RH `11 04 03 01 50 50 00 00` + 11 bytes `01 00..00 02` + 3001::2 + 5 pad bytes.
    /// Hand derivation: after the swap the list is [2001:db8:1::2, 3001::2] against DA 2001:db8:2::5.
    /// CmprI: 20 01 0d b8 00 01 vs 20 01 0d b8 00 02 differ at byte 5 → 5. CmprE: 0x30 vs 0x20 at byte 0 → 0.
    /// seglen = 1*(16-5) + 16 = 27 → hdrlen ceil(27/8) = 4, Pad 5; byte 4 = 0x50, byte 5 = 0x50.
    #[test]
    fn compress_spec_vector() {
        let mut want = vec![0x11, 0x04, 0x03, 0x01, 0x50, 0x50, 0x00, 0x00];
        want.extend_from_slice(&[0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02]);
        want.extend_from_slice(&a("3001::2").octets());
        want.extend_from_slice(&[0; 5]);
        assert_eq!(want.len(), 40);
        let addrs = [a("2001:db8:1::2"), a("3001::2")];
        assert_eq!(compression(&addrs, &a("2001:db8:2::5")), (5, 0));
        assert_eq!(compress(17, 1, &addrs, &a("2001:db8:2::5")), want);
        assert_eq!(decode(&want, &a("2001:db8:2::5")).unwrap(), addrs.to_vec());

        // The same result through a receive step on the sent header (compressed against 2001:db8:1::2).
        let sent = compress(
            17,
            2,
            &[a("2001:db8:2::5"), a("3001::2")],
            &a("2001:db8:1::2"),
        );
        assert_eq!(
            receive_step(&sent, &a("2001:db8:1::2")),
            (a("2001:db8:2::5"), want)
        );
    }

    /// §3.2: CmprI is the minimum over all non-last addresses; both values are capped at 15.
    #[test]
    fn compression_rules() {
        let d = a("2001:db8::1");
        // n == 0 → CmprI 15; a full 16-byte match still gives CmprE 15.
        assert_eq!(compression(&[d], &d), (15, 15));
        assert_eq!(compression(&[d, d, d], &d), (15, 15));
        // Differences at bytes 15, 3 and 9 among the first addresses → 3.
        let addrs = [
            a("2001:db8::2"),
            a("2001:d00::1"),
            a("2001:db8:0:0:1::1"),
            a("::"),
        ];
        assert_eq!(compression(&addrs, &d), (3, 0));
        assert_eq!(compression(&[], &d), (15, 15));
    }

    /// Hand-derived lengths: seglen = n*(16-CmprI) + (16-CmprE), padded to 8.
    #[test]
    fn compressed_lengths() {
        let d = a("fd00::1");
        // 1 address, CmprE 15: seglen 1 → 8 + 1 + 7.
        assert_eq!(compressed_len(&[a("fd00::2")], &d), 16);
        // 1 address, CmprE 0: seglen 16 → 24, pad 0.
        assert_eq!(compressed_len(&[a("::")], &d), 24);
        // 3 addresses, CmprI 15, CmprE 15: seglen 3 → 16.
        assert_eq!(
            compressed_len(&[a("fd00::2"), a("fd00::3"), a("fd00::4")], &d),
            16
        );
        // 9 addresses, CmprI 15, CmprE 15: seglen 9 → 8 + 16.
        let nine: Vec<Ipv6Addr> = (2..11u16)
            .map(|i| Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, i))
            .collect();
        assert_eq!(compressed_len(&nine, &d), 24);
        let b = compress(0, 9, &nine, &d);
        assert_eq!((b[1], b[4], b[5]), (2, 0xff, 0x70));
    }

    fn raw(hdrlen: u8, cmpr: u8, pad: u8) -> Vec<u8> {
        let mut b = vec![0u8; (usize::from(hdrlen) + 1) * 8];
        b[1] = hdrlen;
        b[2] = ROUTING_TYPE;
        b[4] = cmpr;
        b[5] = pad << 4;
        b
    }

    /// §3.4 step 2: remainder, underflow and the n + 1 <= 127 bound.
    #[test]
    fn address_count_rules() {
        let count = |b: &[u8]| Header::new_checked(b).unwrap().address_count();
        // hdrlen 0: 0 - pad - (16-CmprE) underflows whatever the fields.
        assert!(count(&raw(0, 0xff, 0)).is_err());
        // hdrlen 1, CmprE 15, Pad 7 → 8-7-1 = 0 → one address.
        assert_eq!(count(&raw(1, 0xff, 7)), Ok(1));
        // hdrlen 1, Pad 8, CmprE 15 → 8-8-1 underflows.
        assert!(count(&raw(1, 0xff, 8)).is_err());
        // hdrlen 1, CmprI 13 (3 bytes), CmprE 15, Pad 0 → 7 % 3 != 0.
        assert!(count(&raw(1, 0xdf, 0)).is_err());
        // hdrlen 16, CmprI = CmprE = 15, Pad 1 → n = 128-1-1 = 126 → 127 addresses (allowed).
        assert_eq!(count(&raw(16, 0xff, 1)), Ok(127));
        // Pad 0 → n = 127 → 128 addresses (rejected by the June 2026 bound).
        assert!(count(&raw(16, 0xff, 0)).is_err());
        // hdrlen 255 → far beyond.
        assert!(count(&raw(255, 0xff, 0)).is_err());
    }

    #[test]
    fn decompress_needs_room() {
        let h = Header::new_checked(&SENT_2ADDR[..]).unwrap();
        let mut one = [Ipv6Addr::UNSPECIFIED; 1];
        assert!(matches!(
            decompress(&h, &a("fd00:2::1"), &mut one),
            Err(Error::Malformed(_))
        ));
        let mut two = [Ipv6Addr::UNSPECIFIED; 2];
        assert_eq!(decompress(&h, &a("fd00:2::1"), &mut two), Ok(2));
    }

    fn arb_addr() -> impl Strategy<Value = Ipv6Addr> {
        any::<[u8; 16]>().prop_map(Ipv6Addr::from)
    }

    /// Addresses that share a random-length prefix with `d`, so that every compression level is exercised.
    fn arb_case() -> impl Strategy<Value = (Vec<Ipv6Addr>, Ipv6Addr)> {
        (
            arb_addr(),
            prop::collection::vec((arb_addr(), 0usize..=16), 1..=20),
        )
            .prop_map(|(d, raw)| {
                let addrs = raw
                    .into_iter()
                    .map(|(x, keep)| {
                        let mut o = x.octets();
                        o[..keep].copy_from_slice(&d.octets()[..keep]);
                        Ipv6Addr::from(o)
                    })
                    .collect();
                (addrs, d)
            })
    }

    proptest! {
        #[test]
        fn round_trip((addrs, d) in arb_case(), nh in any::<u8>(), sl in any::<u8>()) {
            let b = compress(nh, sl, &addrs, &d);
            prop_assert_eq!(b.len() % 8, 0);
            let h = Header::new_checked(&b[..]).unwrap();
            prop_assert_eq!(h.header_len(), b.len());
            prop_assert_eq!((h.next_header(), h.segments_left()), (nh, sl));
            prop_assert_eq!((h.cmpr_i(), h.cmpr_e()), compression(&addrs, &d));
            prop_assert_eq!(h.address_count(), Ok(addrs.len()));
            prop_assert_eq!(decode(&b, &d).unwrap(), addrs);
        }

        #[test]
        fn round_trip_uniform(addrs in prop::collection::vec(arb_addr(), 1..=20), d in arb_addr()) {
            prop_assert_eq!(decode(&compress(0, 0, &addrs, &d), &d).unwrap(), addrs);
        }

        #[test]
        fn arbitrary_bytes_never_panic(b in prop::collection::vec(any::<u8>(), 0..600), d in arb_addr()) {
            if let Ok(h) = Header::new_checked(&b[..]) {
                let _ = (h.cmpr_i(), h.cmpr_e(), h.pad(), h.address_count());
                let mut out = [Ipv6Addr::UNSPECIFIED; MAX_ADDRESSES];
                let _ = decompress(&h, &d, &mut out);
                let _ = decompress(&h, &d, &mut out[..3]);
            }
        }

        #[test]
        fn structured_bytes_never_panic(
            hdrlen in 0u8..40,
            cmpr in any::<u8>(),
            pad in any::<u8>(),
            tail in prop::collection::vec(any::<u8>(), 0..400),
            d in arb_addr(),
        ) {
            let mut b = vec![0x11, hdrlen, ROUTING_TYPE, 1, cmpr, pad, 0, 0];
            b.extend_from_slice(&tail);
            if let Ok(h) = Header::new_checked(&b[..]) {
                let mut out = [Ipv6Addr::UNSPECIFIED; MAX_ADDRESSES];
                if let Ok(n) = decompress(&h, &d, &mut out) {
                    prop_assert!((1..=MAX_ADDRESSES).contains(&n));
                }
            }
        }
    }
}
