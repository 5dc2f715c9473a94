//! Inputs from the fuzz targets (docs/fuzzing.md), kept as ordinary tests: each one is refused for its named
//! reason, with no panic, by the code the fuzzer exercised.
//!
//! The campaign found no crash in lwt6. The inputs here are the ones the `srh` and `decode` targets found against
//! the planted bug of docs/fuzzing.md (the SRH segment-list check of `srh::Header::new_checked` off by one), and a
//! hand-written one of the same kind: a header too short for the segments its Last Entry names. With the off-by-one
//! back, the first and the last test fail; the second pins what the pipeline does with such a header addressed to
//! the router (it checks SRHs with `srh::validate`, which that bug leaves alone).

use lwt6::bench::soak::ROUTER_CONF;
use lwt6::router::Router;
use lwt6::stats::DropReason;
use lwt6::wire::srh::{Header, SrhRepr, validate};
use lwt6::wire::{Error, proto};

/// What the `srh` target found against the planted bug (fuzz/artifacts/srh/crash-5b5f86f9..., 1599 executions
/// from the seeds): Hdr Ext Len 1 (a 16-byte header) with Last Entry 0, one segment of 16 bytes that does not fit.
const FUZZ_CRASH: [u8; 76] = [
    0x29, 0x01, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0xf9, 0x00, 0xfc, 0x0c, 0x00, 0x00, 0x04, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, 0x00, 0x0a,
];

/// An SRH whose Last Entry (1) names two segments while Hdr Ext Len (2) leaves room for one: 24 bytes
/// (written by hand from RFC 8754 §2).
const SHORT_BY_ONE: [u8; 24] = [
    // Next header UDP, hdr ext len 2, type 4, segments left 1, last entry 1, flags, tag.
    17, 2, 4, 1, 1, 0, 0, 0, //
    0xfd, 0, 0, 0x90, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, // segment 0: fd00:90::5
];

#[test]
fn srh_one_segment_short_is_refused_by_the_checked_view() {
    assert_eq!(
        Header::new_checked(&FUZZ_CRASH[..]).err(),
        Some(Error::Malformed("srh: segment list exceeds header length"))
    );
    assert!(validate(&FUZZ_CRASH[..16], false).is_err());
    assert_eq!(
        Header::new_checked(&SHORT_BY_ONE[..]).err(),
        Some(Error::Malformed("srh: segment list exceeds header length"))
    );
    assert!(validate(&SHORT_BY_ONE, false).is_err());
    assert!(validate(&SHORT_BY_ONE, true).is_err());
    // Every Last Entry from 1 up with the same length is refused the same way, and the exact fit is accepted.
    for le in 1..=u8::MAX {
        let mut h = SHORT_BY_ONE;
        h[4] = le;
        assert!(Header::new_checked(&h[..]).is_err(), "last entry {le}");
    }
    let mut fit = SHORT_BY_ONE;
    fit[4] = 0;
    fit[3] = 0;
    let h = Header::new_checked(&fit[..]).expect("one segment fits in 24 bytes");
    assert_eq!(SrhRepr::parse(&h).map(|r| r.segments.len()), Ok(1));
}

#[test]
fn srh_one_segment_short_addressed_to_the_router_is_a_named_drop() {
    let cfg = lwt6::config::parse(ROUTER_CONF).unwrap();
    let mut r = Router::build(&cfg).unwrap();
    // Ethernet to r0, IPv6 from fd00:1::1 to the router (fd00:1::2), the short SRH, 8 bytes of UDP.
    let mut f = vec![2, 0, 0, 0, 1, 2, 2, 0, 0, 0, 1, 1, 0x86, 0xdd];
    f.extend_from_slice(&[0x60, 0, 0, 0, 0, 32, proto::ROUTING, 64]);
    f.extend_from_slice(&[0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    f.extend_from_slice(&[0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    f.extend_from_slice(&SHORT_BY_ONE);
    f.extend_from_slice(&[0, 1, 0, 9, 0, 8, 0, 0]);
    let mut sent = 0;
    r.process_batch([(0usize, 0u64, f.as_slice())], &mut |_, _, _| sent += 1);
    let s = &r.worker.stats;
    assert!(s.balanced());
    assert_eq!(sent, s.icmp_tx, "nothing forwarded (at most an ICMP error)");
    assert_eq!(s.dropped(), 1, "{s:?}");
    assert_eq!(
        s.drops.get(&DropReason::SrhMalformed).copied(),
        Some(1),
        "{s:?}"
    );
}

/// What the `decode` target found against the planted bug (9,664 executions from the seeds): a kernel-made seg6 frame
/// mutated until its routing header reads Hdr Ext Len 0 (8 bytes), type 4, Last Entry 0 (one segment of 16 bytes).
const DECODE_CRASH: [u8; 166] = [
    0x02, 0x00, 0x00, 0x00, 0x02, 0x02, 0x02, 0x00, 0x00, 0x00, 0x02, 0x01, 0x86, 0xdd, 0x6b, 0x81,
    0x23, 0x45, 0x00, 0x6b, 0x2b, 0x3f, 0xfd, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0xb9, 0x00, 0x00, 0x00, 0x7c, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x0a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x04, 0x00, 0x00, 0x02, 0x00, 0x00, 0xfc,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x0d, 0x00, 0x00, 0x01, 0xfd, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0b, 0x02, 0x00, 0x00, 0x00, 0x01, 0x02, 0x02, 0xfa, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x01, 0x86, 0xdd, 0x6b, 0x00, 0x00, 0x00, 0x00,
    0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x0c, 0xfc, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x01, 0x04, 0x57, 0x02, 0x05,
];

#[test]
fn decoding_a_frame_with_an_srh_too_short_names_the_error() {
    let layers = lwt6::decode::frame(&DECODE_CRASH);
    let srh = layers
        .iter()
        .find(|l| l["layer"] == "srh")
        .expect("the routing header is shown");
    assert_eq!(
        srh["error"], "malformed: srh: segment list exceeds header length",
        "{layers:?}"
    );
}
