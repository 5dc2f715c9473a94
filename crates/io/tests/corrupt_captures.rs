//! Truncated and corrupt capture files (issue 15): every pcapng block type in both byte orders, nanosecond
//! timestamps, a cut at every byte of the first blocks, block length mismatches, oversized and zero lengths.
//! Each input is either read correctly (where the format allows it) or refused with an error that names the
//! frame or block and the byte offset — never a panic, and never an allocation sized by a length field (a
//! counting allocator checks that a 4 GB length does not allocate 4 GB).
//!
//! Every file is built by hand from the specifications (docs/references.md): classic pcap per
//! draft-ietf-opsawg-pcap §4 (file header) and §5 (record); pcapng per draft-ietf-opsawg-pcapng §3.1 (block
//! layout), §4.1 SHB, §4.2 IDB (options §3.5, `if_tsresol` code 9), §4.3 EPB, §4.4 SPB, §4.5 NRB, §4.6 ISB,
//! §4.7 custom blocks (types 0x00000BAD and 0x40000BAD).

use lwt6_io::pcap::{CapturedFrame, PcapError, read_capture};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Counts the bytes allocated at once (the largest single request), so that a test can tell whether a length
/// field was trusted.
struct Counting;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every method hands its arguments unchanged to the system allocator, which upholds `GlobalAlloc`'s
// contract, and returns its result unchanged; the only other work is an atomic update of a static, which neither
// allocates nor unwinds.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        // SAFETY: our caller upholds `alloc`'s contract (a non-zero size), which is what `System.alloc` needs.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: our caller passes a block this allocator returned with this layout, i.e. one `System` returned
        // (every method forwards to it), which is what `System.dealloc` needs.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.fetch_max(new_size, Ordering::Relaxed);
        // SAFETY: as for `dealloc` (a block `System` returned, with this layout), and our caller's valid
        // non-zero `new_size`, which is what `System.realloc` needs.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Order {
    Le,
    Be,
}

impl Order {
    fn u16(self, v: u16) -> [u8; 2] {
        match self {
            Order::Le => v.to_le_bytes(),
            Order::Be => v.to_be_bytes(),
        }
    }
    fn u32(self, v: u32) -> [u8; 4] {
        match self {
            Order::Le => v.to_le_bytes(),
            Order::Be => v.to_be_bytes(),
        }
    }
}

const BOTH: [Order; 2] = [Order::Le, Order::Be];
const FRAME_A: &[u8] = b"\x02\x00\x00\x00\x01\x02\x02\x00\x00\x00\x01\x01\x86\xddA";
const FRAME_B: &[u8] = b"\x02\x00\x00\x00\x01\x02\x02\x00\x00\x00\x01\x01\x08\x00BBBBB";

/// A pcapng block (§3.1): type, total length, body padded to 4, total length again.
fn block(o: Order, ty: u32, body: &[u8]) -> Vec<u8> {
    let padded = body.len().next_multiple_of(4);
    let total = (12 + padded) as u32;
    let mut b = Vec::new();
    b.extend(o.u32(ty));
    b.extend(o.u32(total));
    b.extend(body);
    b.resize(8 + padded, 0);
    b.extend(o.u32(total));
    b
}

/// SHB (§4.1): byte-order magic 0x1A2B3C4D, version 1.0, section length -1 (unknown).
fn shb(o: Order) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend(o.u32(0x1a2b_3c4d));
    body.extend(o.u16(1));
    body.extend(o.u16(0));
    body.extend([0xff; 8]);
    block(o, 0x0a0d_0d0a, &body)
}

/// IDB (§4.2): link type, reserved, snaplen, then options (§3.5: code, length, value padded to 4).
fn idb(o: Order, linktype: u16, snaplen: u32, tsresol: Option<u8>) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend(o.u16(linktype));
    body.extend([0, 0]);
    body.extend(o.u32(snaplen));
    if let Some(r) = tsresol {
        body.extend(o.u16(9));
        body.extend(o.u16(1));
        body.extend([r, 0, 0, 0]);
        body.extend([0; 4]); // opt_endofopt
    }
    block(o, 1, &body)
}

/// EPB (§4.3): interface id, timestamp high and low words, captured and original length, data padded to 4.
fn epb(o: Order, iface: u32, ts: u64, data: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend(o.u32(iface));
    body.extend(o.u32((ts >> 32) as u32));
    body.extend(o.u32(ts as u32));
    body.extend(o.u32(data.len() as u32));
    body.extend(o.u32(data.len() as u32));
    body.extend(data);
    block(o, 6, &body)
}

/// SPB (§4.4): original length, data padded to 4.
fn spb(o: Order, data: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend(o.u32(data.len() as u32));
    body.extend(data);
    block(o, 3, &body)
}

/// NRB (§4.5): one IPv4 record (type 1, length 4 + name), then nrb_record_end.
fn nrb(o: Order) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend(o.u16(1));
    body.extend(o.u16(4 + 5));
    body.extend([10, 1, 0, 1]);
    body.extend(b"host\0");
    body.resize(body.len().next_multiple_of(4), 0);
    body.extend([0; 4]);
    block(o, 4, &body)
}

/// ISB (§4.6): interface id, timestamp, then opt_endofopt.
fn isb(o: Order) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend(o.u32(0));
    body.extend(o.u32(0));
    body.extend(o.u32(7));
    body.extend([0; 4]);
    block(o, 5, &body)
}

/// Custom block (§4.7): Private Enterprise Number, then custom data.
fn custom(o: Order, copyable: bool) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend(o.u32(32473)); // the documentation PEN (RFC 5612)
    body.extend(b"opaque");
    block(o, if copyable { 0x0000_0bad } else { 0x4000_0bad }, &body)
}

/// A block type no version of the format defines.
fn unknown(o: Order) -> Vec<u8> {
    block(o, 0x1234_5678, b"????")
}

/// A file with every block type: SHB, IDB (µs), EPB (frame A), NRB, ISB, both custom blocks, an unknown
/// block, SPB (frame B), and the block boundaries.
fn every_block(o: Order) -> (Vec<u8>, Vec<usize>) {
    let parts = [
        shb(o),
        idb(o, 1, 0, None),
        epb(o, 0, 1_700_000_000_123_456, FRAME_A),
        nrb(o),
        isb(o),
        custom(o, true),
        custom(o, false),
        unknown(o),
        spb(o, FRAME_B),
    ];
    let mut bounds = vec![0];
    let mut file = Vec::new();
    for p in parts {
        file.extend(p);
        bounds.push(file.len());
    }
    (file, bounds)
}

fn frame(ts_ns: u64, data: &[u8]) -> CapturedFrame {
    CapturedFrame {
        ts_ns,
        data: data.to_vec(),
        orig_len: data.len() as u32,
        linktype: 1,
    }
}

fn offset(e: &PcapError) -> usize {
    match e {
        PcapError::Truncated { offset, .. } | PcapError::Corrupt { offset, .. } => *offset,
        other => panic!("unexpected error kind: {other}"),
    }
}

#[test]
fn every_block_type_both_byte_orders() {
    for o in BOTH {
        let (file, _) = every_block(o);
        let got = read_capture(&file).unwrap_or_else(|e| panic!("{o:?}: {e}"));
        assert_eq!(
            got,
            vec![frame(1_700_000_000_123_456_000, FRAME_A), frame(0, FRAME_B)],
            "{o:?}"
        );
    }
}

#[test]
fn cut_at_every_byte() {
    for o in BOTH {
        let (file, bounds) = every_block(o);
        for cut in 0..file.len() {
            let r = read_capture(&file[..cut]);
            // Frames of the blocks wholly before the cut.
            let whole = bounds.iter().filter(|b| **b <= cut).count() - 1;
            match r {
                Ok(frames) => {
                    assert!(bounds.contains(&cut) && cut > 0, "{o:?} cut {cut}: read");
                    let expect = usize::from(whole >= 3) + usize::from(whole >= 9);
                    assert_eq!(frames.len(), expect, "{o:?} cut {cut}");
                }
                Err(e) => {
                    let start = bounds[whole];
                    let msg = e.to_string();
                    assert!(
                        matches!(e, PcapError::Truncated { .. }) || cut == 0,
                        "{o:?} cut {cut}: {msg}"
                    );
                    assert!(
                        (start..=cut).contains(&offset(&e)),
                        "{o:?} cut {cut}: {msg} (block starts at {start})"
                    );
                    let block = format!("block {}", whole + 1);
                    assert!(msg.contains(&block) || cut < 4, "{o:?} cut {cut}: {msg}");
                    assert!(msg.contains("byte offset"), "{msg}");
                }
            }
        }
    }
}

#[test]
fn leading_and_trailing_lengths_disagree() {
    for o in BOTH {
        let (file, bounds) = every_block(o);
        for (i, w) in bounds.windows(2).enumerate() {
            let mut f = file.clone();
            let tail = w[1] - 4;
            let v = u32::from_le_bytes(f[tail..w[1]].try_into().unwrap()) ^ 0x0400_0004;
            f[tail..w[1]].copy_from_slice(&v.to_le_bytes());
            let e = read_capture(&f).expect_err("mismatch accepted");
            let msg = e.to_string();
            assert!(
                msg.contains(&format!("block {}", i + 1)) && msg.contains("trailing total length"),
                "{o:?} block {}: {msg}",
                i + 1
            );
            assert_eq!(offset(&e), tail, "{msg}");
        }
    }
}

#[test]
fn oversized_lengths_are_not_allocated() {
    for o in BOTH {
        let (file, bounds) = every_block(o);
        // Block total length 0xFFFFFFFC in every block (a multiple of 4: only the end of the file stops it).
        for (i, w) in bounds.windows(2).enumerate() {
            let mut f = file.clone();
            f[w[0] + 4..w[0] + 8].copy_from_slice(&o.u32(0xffff_fffc));
            LARGEST.store(0, Ordering::Relaxed);
            let e = read_capture(&f).expect_err("4 GB block accepted");
            assert!(
                LARGEST.load(Ordering::Relaxed) < 1 << 20,
                "{o:?} block {}: allocated {} bytes",
                i + 1,
                LARGEST.load(Ordering::Relaxed)
            );
            assert!(matches!(e, PcapError::Truncated { .. }), "{e}");
            assert!(e.to_string().contains(&format!("block {}", i + 1)), "{e}");
        }
        // EPB captured and original length 0xFFFFFFFF.
        let epb_at = bounds[2];
        let mut f = file.clone();
        f[epb_at + 20..epb_at + 28].copy_from_slice(&[0xff; 8]);
        LARGEST.store(0, Ordering::Relaxed);
        let e = read_capture(&f).expect_err("4 GB frame accepted");
        assert!(LARGEST.load(Ordering::Relaxed) < 1 << 20);
        assert!(
            e.to_string().contains("frame 1") && e.to_string().contains("overruns"),
            "{e}"
        );
        // SPB original length 0xFFFFFFFF.
        let spb_at = bounds[8];
        let mut f = file.clone();
        f[spb_at + 8..spb_at + 12].copy_from_slice(&[0xff; 4]);
        let e = read_capture(&f).expect_err("4 GB simple packet accepted");
        assert!(e.to_string().contains("frame 2"), "{e}");
    }
    // Classic pcap: captured length 0xFFFFFFFF.
    let mut f = pcap_file(Order::Le, 0xa1b2_c3d4, &[(1, 2, FRAME_A)]);
    f[24 + 8..24 + 16].copy_from_slice(&[0xff; 8]);
    LARGEST.store(0, Ordering::Relaxed);
    let e = read_capture(&f).expect_err("4 GB pcap record accepted");
    assert!(LARGEST.load(Ordering::Relaxed) < 1 << 20);
    assert!(e.to_string().contains("frame 1 header"), "{e}");
}

#[test]
fn zero_and_short_block_lengths() {
    for o in BOTH {
        let (file, bounds) = every_block(o);
        for (i, w) in bounds.windows(2).enumerate() {
            for len in [0u32, 4, 8, 12, 13] {
                let mut f = file.clone();
                f[w[0] + 4..w[0] + 8].copy_from_slice(&o.u32(len));
                let r = read_capture(&f);
                let Err(e) = r else {
                    // A 12-byte block of a type with no required body is legal; the rest of the file then does
                    // not parse, so only a file ending there could be read.
                    panic!("{o:?} block {} length {len}: read", i + 1);
                };
                let msg = e.to_string();
                assert!(msg.contains("block"), "{msg}");
                assert!(offset(&e) >= w[0], "{o:?} block {} len {len}: {msg}", i + 1);
            }
        }
    }
}

#[test]
fn nanosecond_resolution_pcapng() {
    for o in BOTH {
        // if_tsresol 9 (10^-9 s) and 0x89 (2^-9 s).
        let mut f = shb(o);
        f.extend(idb(o, 1, 0, Some(9)));
        f.extend(epb(o, 0, 1_700_000_000_999_999_999, FRAME_A));
        f.extend(idb(o, 1, 0, Some(0x89)));
        f.extend(epb(o, 1, 1024 + 511, FRAME_B));
        let got = read_capture(&f).unwrap_or_else(|e| panic!("{o:?}: {e}"));
        assert_eq!(got[0].ts_ns, 1_700_000_000_999_999_999);
        // 1535 / 512 s = 2.998046875 s.
        assert_eq!(got[1].ts_ns, 2_998_046_875);
    }
}

/// A classic pcap file (§4 file header, §5 records) with the given magic.
fn pcap_file(o: Order, magic: u32, recs: &[(u32, u32, &[u8])]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend(o.u32(magic));
    f.extend(o.u16(2));
    f.extend(o.u16(4));
    f.extend([0; 8]);
    f.extend(o.u32(262_144));
    f.extend(o.u32(1));
    for (sec, frac, data) in recs {
        f.extend(o.u32(*sec));
        f.extend(o.u32(*frac));
        f.extend(o.u32(data.len() as u32));
        f.extend(o.u32(data.len() as u32));
        f.extend(*data);
    }
    f
}

#[test]
fn nanosecond_pcap_both_orders() {
    for o in BOTH {
        let f = pcap_file(
            o,
            0xa1b2_3c4d,
            &[(1_700_000_000, 999_999_999, FRAME_A), (5, 1, FRAME_B)],
        );
        let got = read_capture(&f).unwrap_or_else(|e| panic!("{o:?}: {e}"));
        assert_eq!(got[0].ts_ns, 1_700_000_000_999_999_999);
        assert_eq!(got[1].ts_ns, 5_000_000_001);
        // One nanosecond too many.
        let f = pcap_file(o, 0xa1b2_3c4d, &[(1, 1_000_000_000, FRAME_A)]);
        let e = read_capture(&f).expect_err("fraction of 1 s accepted");
        assert!(e.to_string().contains("frame 1 header"), "{e}");
        assert_eq!(offset(&e), 24 + 4);
        // The same fraction in a microsecond file is too large too.
        let f = pcap_file(o, 0xa1b2_c3d4, &[(1, 1_000_000, FRAME_A)]);
        assert!(read_capture(&f).is_err());
    }
}

#[test]
fn pcap_cut_at_every_byte() {
    for o in BOTH {
        for magic in [0xa1b2_c3d4, 0xa1b2_3c4d] {
            let f = pcap_file(o, magic, &[(1, 2, FRAME_A), (3, 4, FRAME_B)]);
            let first_end = 24 + 16 + FRAME_A.len();
            for cut in 0..f.len() {
                match read_capture(&f[..cut]) {
                    Ok(frames) => {
                        assert!(cut == 24 || cut == first_end, "{o:?} cut {cut}: read");
                        assert_eq!(frames.len(), usize::from(cut == first_end));
                    }
                    Err(e) => {
                        let msg = e.to_string();
                        assert!(matches!(e, PcapError::Truncated { .. }), "{msg}");
                        let what = if cut < 24 {
                            ""
                        } else if cut < first_end {
                            "frame 1"
                        } else {
                            "frame 2"
                        };
                        assert!(msg.contains(what), "{o:?} cut {cut}: {msg}");
                        assert!(offset(&e) <= cut, "{o:?} cut {cut}: {msg}");
                    }
                }
            }
        }
    }
}

#[test]
fn unknown_magic_and_versions() {
    let e = read_capture(b"GIF89a\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0").expect_err("GIF read");
    assert!(matches!(e, PcapError::BadMagic(_)), "{e}");
    for o in BOTH {
        let mut f = pcap_file(o, 0xa1b2_c3d4, &[(1, 2, FRAME_A)]);
        f[4..6].copy_from_slice(&o.u16(3));
        let e = read_capture(&f).expect_err("pcap 3.4 read");
        assert!(e.to_string().contains("version 3.4"), "{e}");
        let mut f = shb(o);
        f[12..14].copy_from_slice(&o.u16(2));
        let e = read_capture(&f).expect_err("pcapng 2.0 read");
        assert!(e.to_string().contains("version 2.0"), "{e}");
        // A byte-order magic that is neither order.
        let mut f = shb(o);
        f[8..12].copy_from_slice(&[1, 2, 3, 4]);
        let e = read_capture(&f).expect_err("bad byte-order magic read");
        assert!(e.to_string().contains("byte-order magic"), "{e}");
        // An EPB before any IDB, and one naming interface 5.
        let mut f = shb(o);
        f.extend(epb(o, 0, 0, FRAME_A));
        assert!(
            read_capture(&f)
                .unwrap_err()
                .to_string()
                .contains("interface id 0")
        );
        let mut f = shb(o);
        f.extend(idb(o, 1, 0, None));
        f.extend(epb(o, 5, 0, FRAME_A));
        assert!(
            read_capture(&f)
                .unwrap_err()
                .to_string()
                .contains("interface id 5")
        );
    }
}
