//! ICMPv6 error messages (RFC 4443): parsing (source and destination from the input's first 32 bytes), and
//! emission of an error quoting the rest, which must parse back as the same error with the quote intact.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lwt6_wire::icmpv6::{self, IcmpError};
use std::net::Ipv6Addr;

fuzz_target!(|data: &[u8]| {
    if data.len() < 40 {
        return;
    }
    let src = Ipv6Addr::from(<[u8; 16]>::try_from(&data[..16]).unwrap());
    let dst = Ipv6Addr::from(<[u8; 16]>::try_from(&data[16..32]).unwrap());
    let field = u32::from_be_bytes(data[32..36].try_into().unwrap());
    let _ = icmpv6::parse(src, dst, &data[32..]);
    let Some(err) = IcmpError::from_type_code_field(data[36] % 5, data[37], field) else {
        return;
    };
    let invoking = &data[40..];
    let mut out = vec![0u8; icmpv6::emitted_len(invoking.len())];
    let n = icmpv6::emit(&mut out, src, dst, 64, err, invoking);
    assert_eq!(n, out.len());
    assert!(n <= 1280);
    let parsed = icmpv6::parse(src, dst, &out[40..]).expect("an emitted error parses");
    assert_eq!(parsed.err, err);
    assert_eq!(parsed.invoking, &invoking[..n - 48]);
});
