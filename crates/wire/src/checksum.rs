//! The Internet checksum (RFC 1071) and the IPv6 pseudo-header (RFC 8200 §8.1).
//!
//! Partial sums are carried as `u32` values that are always folded to 16 bits, so they can be
//! combined in any order (RFC 1071 §2 (B): commutative and associative).

use std::net::Ipv6Addr;

/// Folds a wide accumulator to 16 bits with end-around carry (RFC 1071 §2 (C)).
fn fold(mut acc: u64) -> u32 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u32
}

/// One's-complement sum of `data` folded to 16 bits, NOT complemented (feed into [`finish`]).
/// Odd lengths are padded with a zero byte, per RFC 1071.
pub fn sum(data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(2);
    // A u64 accumulator cannot overflow for any slice that fits in memory (each word <= 0xffff).
    let mut acc: u64 = 0;
    for w in chunks.by_ref() {
        acc += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = chunks.remainder() {
        acc += u64::from(*last) << 8;
    }
    fold(acc)
}

/// Adds two partial sums.
pub fn combine(a: u32, b: u32) -> u32 {
    fold(u64::from(a) + u64::from(b))
}

/// Folds a 32-bit partial sum and complements it: the value to store in a checksum field.
///
/// Verifying a message that already holds its checksum: `finish(sum) == 0` means it is correct.
/// (UDP's "0 means no checksum" rule is the caller's business; this returns the plain complement.)
pub fn finish(sum: u32) -> u16 {
    !(fold(u64::from(sum)) as u16)
}

/// Partial sum of the IPv6 pseudo-header (src, dst, upper-layer length, next header).
///
/// RFC 8200 §8.1: source (16), destination (16), upper-layer packet length (32), three zero
/// octets and the Next Header (8).
pub fn pseudo_header_v6(src: &Ipv6Addr, dst: &Ipv6Addr, upper_len: u32, next_header: u8) -> u32 {
    let mut acc = u64::from(sum(&src.octets())) + u64::from(sum(&dst.octets()));
    acc += u64::from(upper_len >> 16) + u64::from(upper_len & 0xffff);
    acc += u64::from(next_header);
    fold(acc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// RFC 1071 §3 numeric example: bytes 00 01 f2 03 f4 f5 f6 f7.
    /// 0001 + f203 + f4f5 + f6f7 = 2ddf0, folded 2 + ddf0 = ddf2, complement 220d.
    #[test]
    fn rfc1071_example() {
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(sum(&data), 0xddf2);
        assert_eq!(finish(sum(&data)), 0x220d);
        // The RFC also shows byte-order independence: the swapped sum is f2dd.
        let swapped = [0x01, 0x00, 0x03, 0xf2, 0xf5, 0xf4, 0xf7, 0xf6];
        assert_eq!(sum(&swapped), 0xf2dd);
        // Splitting the data and combining the partial sums gives the same result (RFC 1071 §2 (B)).
        assert_eq!(combine(sum(&data[..4]), sum(&data[4..])), 0xddf2);
    }

    #[test]
    fn odd_length_pads_with_zero() {
        // 01 02 03 -> 0102 + 0300 = 0402.
        assert_eq!(sum(&[1, 2, 3]), 0x0402);
        assert_eq!(sum(&[]), 0);
        assert_eq!(finish(0), 0xffff);
    }

    #[test]
    fn carries_fold() {
        // ffff + ffff = 1fffe -> fffe + 1 = ffff.
        assert_eq!(sum(&[0xff, 0xff, 0xff, 0xff]), 0xffff);
        assert_eq!(combine(0xffff, 0x0001), 0x0001);
        assert_eq!(combine(0x8000, 0x8000), 0x0001);
    }

    /// The inner UDP datagram of the kernel-captured `encap` frame (docs/references.md §1.4, srh_kernel.pcap
    /// frame 2, bytes 0x6e..0xa3): its UDP checksum 0x14a0 was computed by the sender (scapy), so
    /// verifying it exercises the pseudo-header against an independent implementation.
    #[test]
    fn udp_checksum_from_capture_verifies() {
        let src: Ipv6Addr = "fd00:1::1".parse().unwrap();
        let dst: Ipv6Addr = "fd00:99::1".parse().unwrap();
        // UDP 1111 -> 2222, len 13, checksum 0x14a0, "HELLO".
        let udp = [
            0x04, 0x57, 0x08, 0xae, 0x00, 0x0d, 0x14, 0xa0, b'H', b'E', b'L', b'L', b'O',
        ];
        let s = combine(pseudo_header_v6(&src, &dst, 13, 17), sum(&udp));
        assert_eq!(finish(s), 0);
        // And recomputing with the field zeroed yields the captured value.
        let mut zeroed = udp;
        zeroed[6] = 0;
        zeroed[7] = 0;
        let s = combine(pseudo_header_v6(&src, &dst, 13, 17), sum(&zeroed));
        assert_eq!(finish(s), 0x14a0);
    }

    /// Reference: a naive sum over big-endian words with a final wide fold.
    fn naive(data: &[u8]) -> u32 {
        let mut v = data.to_vec();
        if v.len() % 2 == 1 {
            v.push(0);
        }
        let mut total: u64 = v
            .chunks(2)
            .map(|c| (u64::from(c[0]) << 8) | u64::from(c[1]))
            .sum();
        while total >> 16 != 0 {
            total = (total & 0xffff) + (total >> 16);
        }
        total as u32
    }

    proptest! {
        #[test]
        fn matches_naive(data in proptest::collection::vec(any::<u8>(), 0..2000)) {
            prop_assert_eq!(sum(&data), naive(&data));
        }

        #[test]
        fn split_anywhere_even(data in proptest::collection::vec(any::<u8>(), 0..600), cut in 0usize..300) {
            let cut = (cut * 2).min(data.len() & !1);
            prop_assert_eq!(combine(sum(&data[..cut]), sum(&data[cut..])), sum(&data));
        }

        #[test]
        fn filled_checksum_verifies(data in proptest::collection::vec(any::<u8>(), 2..200)) {
            let mut d = data.clone();
            if d.len() % 2 == 1 { d.push(0); }
            d[0] = 0;
            d[1] = 0;
            let c = finish(sum(&d));
            d[..2].copy_from_slice(&c.to_be_bytes());
            prop_assert_eq!(finish(sum(&d)), 0);
        }
    }
}
