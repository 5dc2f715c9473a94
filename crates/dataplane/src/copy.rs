//! Byte copies on the fast path: received frames and header fields ([`copy_bytes`]) and tunnel templates
//! ([`WideCopy`]).
//!
//! A planned packet costs one template copy, so the forwarding rate against tunnel size follows the copy's cost
//! against length. libc's `memcpy` picks a strategy by size class (on x86-64 with AVX2: up to 64, 128 and 256
//! bytes, then a loop), and at each class boundary the number of stores jumps (from 4 to 8 at 128 bytes): a step
//! in the curve of 4 to 8 %. [`WideCopy`] costs one 32-byte load, store, test and branch more for every 32
//! bytes, from end to end (docs/BENCHMARKS.md, *The template copy*).

/// Copies `src` into `dst` (equal lengths; panics otherwise). Copies of 16 to 128 bytes (the received frames
/// of the sweeps, header fields) go inline as a fixed sequence of 16- or 32-byte moves, the last ones overlapping
/// their predecessors, without a call; anything else is a `copy_from_slice` (libc `memcpy`, which uses the widest
/// vector moves the CPU has, which beats an inline loop of 32-byte blocks built for the baseline x86-64 target on
/// long copies: docs/BENCHMARKS.md). Tunnel templates go through [`WideCopy`].
#[inline(always)]
pub fn copy_bytes(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    assert_eq!(dst.len(), n, "copy_bytes: length mismatch");
    match n {
        16..=31 => {
            block::<16>(dst, src, 0);
            block::<16>(dst, src, n - 16);
        }
        32..=64 => {
            block::<32>(dst, src, 0);
            block::<32>(dst, src, n - 32);
        }
        65..=128 => {
            block::<32>(dst, src, 0);
            block::<32>(dst, src, 32);
            block::<32>(dst, src, n - 64);
            block::<32>(dst, src, n - 32);
        }
        _ => dst.copy_from_slice(src),
    }
}

/// `dst[at..at + N] = src[at..at + N]`: one fixed-size move (in [`blocks32`], built with AVX2, one 32-byte load and
/// store).
#[inline(always)]
fn block<const N: usize>(dst: &mut [u8], src: &[u8], at: usize) {
    let d: &mut [u8; N] = (&mut dst[at..at + N]).try_into().expect("N bytes");
    let s: &[u8; N] = src[at..at + N].try_into().expect("N bytes");
    *d = *s;
}

/// Blocks [`blocks32`] copies in straight-line code; longer copies loop over the blocks in front of them.
#[cfg(target_arch = "x86_64")]
const CHAIN: usize = 23;

/// Proof that this CPU has 32-byte vector moves (x86-64 with AVX2), and the template copy that uses them: its
/// cost grows by the same amount for every 32 bytes (`ceil(len / 32)` stores), without `memcpy`'s size classes.
/// Obtained from [`WideCopy::detect`] only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WideCopy(());

impl WideCopy {
    /// The wide copy if this CPU can run it, checked at run time (never on other architectures).
    pub fn detect() -> Option<WideCopy> {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            return Some(WideCopy(()));
        }
        None
    }

    /// Copies `src` into `dst` (equal lengths; panics otherwise): 32-byte blocks, the last one ending at the end
    /// and overlapping its predecessor. Below 32 bytes, `copy_from_slice`.
    #[inline(always)]
    pub fn copy(self, dst: &mut [u8], src: &[u8]) {
        // Checked here, inlined into the caller, where the lengths are usually equal by construction and the test
        // disappears; `blocks32` then needs no test of its own.
        assert_eq!(dst.len(), src.len(), "WideCopy::copy: length mismatch");
        #[cfg(target_arch = "x86_64")]
        {
            #[allow(unsafe_code)]
            // SAFETY: calling a `#[target_feature(enable = "avx2")]` function is sound only on a CPU that has AVX2
            // (elsewhere it would execute instructions the CPU does not have). `self` proves it: `WideCopy`'s only
            // field is private, it is not `Default`, and the one place that builds it, `detect`, does so after
            // `is_x86_feature_detected!("avx2")` said yes at run time on this machine. `blocks32` has no other
            // precondition: it works on the two slices through safe, bounds-checked indexing.
            unsafe {
                blocks32(dst, src)
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        dst.copy_from_slice(src)
    }
}

/// The body of [`WideCopy::copy`], compiled with AVX2: a `[u8; 32]` move is one 32-byte load and store.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn blocks32(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    if n < 32 {
        dst.copy_from_slice(src);
        return;
    }
    // `WideCopy::copy` checked that the lengths are equal; this tells the compiler.
    let dst = &mut dst[..n];
    // The last block ends at the end; `k` whole blocks come before it.
    block::<32>(dst, src, n - 32);
    let k = (n - 1) / 32;
    let (mut d, mut s) = (&mut dst[..k * 32], &src[..k * 32]);
    while d.len() > CHAIN * 32 {
        block::<32>(d, s, 0);
        (d, s) = (&mut d[32..], &s[32..]);
    }
    let s = &s[..d.len()];
    // One length test and one move per block, in straight-line code: a loop, which the compiler unrolls by four,
    // would cost a remainder loop's overhead at some lengths and not at others (docs/BENCHMARKS.md).
    macro_rules! chain {
        ($($i:literal)*) => { $( if d.len() >= ($i + 1) * 32 { block::<32>(d, s, $i * 32); } )* };
    }
    chain!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distinct bytes, so a block copied to the wrong place shows.
    fn pattern(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + 3) as u8).collect()
    }

    #[test]
    fn copy_bytes_copies_every_length() {
        for n in 0..=600 {
            let src = pattern(n);
            let mut dst = vec![0xeeu8; n];
            copy_bytes(&mut dst, &src);
            assert_eq!(dst, src, "length {n}");
        }
    }

    #[test]
    fn wide_copy_copies_every_length_and_nothing_around_it() {
        let Some(w) = WideCopy::detect() else {
            eprintln!("no AVX2 on this CPU: the wide copy is not used here");
            return;
        };
        // Through the straight-line chain (up to 768 bytes) and the loop in front of it, at every offset mod 32.
        for n in 0..=1600 {
            for at in [0, 1, 31] {
                let src = pattern(n);
                let mut dst = vec![0xeeu8; n + at + 40];
                w.copy(&mut dst[at..at + n], &src);
                assert_eq!(&dst[at..at + n], &src[..], "length {n} at {at}");
                assert!(
                    dst[..at].iter().all(|&b| b == 0xee),
                    "bytes in front, length {n}"
                );
                assert!(
                    dst[at + n..].iter().all(|&b| b == 0xee),
                    "bytes behind, length {n}"
                );
            }
        }
    }

    #[test]
    #[should_panic]
    fn wide_copy_rejects_unequal_lengths() {
        let mut dst = [0u8; 100];
        match WideCopy::detect() {
            Some(w) => w.copy(&mut dst, &[1u8; 99]),
            None => panic!("no AVX2: the same contract as copy_from_slice"),
        }
    }
}
