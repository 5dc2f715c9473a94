//! Segment Routing Header (RFC 8754): the checked view, the Repr round trip (parse then emit gives the header's
//! bytes back), Linux's validation (a validated header is always a checked one), the HMAC TLV lookup and the
//! HMAC computation over it.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lwt6_wire::srh::{Header, HmacAlgo, SrhRepr, compute_hmac, hmac_tlv_offset, validate};

fuzz_target!(|data: &[u8]| {
    for reduced in [false, true] {
        if validate(data, reduced).is_ok() {
            assert!(
                Header::new_checked(data).is_ok(),
                "a valid SRH is a checked one"
            );
        }
    }
    if let Some(off) = hmac_tlv_offset(data) {
        assert!(
            off + 40 <= data.len(),
            "the HMAC TLV lies inside the header"
        );
        let src = "fd00:1::1".parse().unwrap();
        for algo in [HmacAlgo::Sha1, HmacAlgo::Sha256] {
            let _ = compute_hmac(algo, b"key", &src, data, 42);
        }
    }
    let Ok(h) = Header::new_checked(data) else {
        return;
    };
    let len = h.header_len();
    assert!(len <= data.len());
    let _ = h.tlv_bytes();
    let Ok(repr) = SrhRepr::parse(&h) else {
        return;
    };
    assert_eq!(repr.buffer_len(), len, "parsed TLVs cover the header");
    let mut out = vec![0u8; len];
    repr.emit(&mut out);
    assert_eq!(
        &out[..],
        &data[..len],
        "parse then emit gives the header back"
    );
    let again = SrhRepr::parse(&Header::new_checked(&out[..]).expect("emitted header is checked"));
    assert_eq!(again, Ok(repr));
});
