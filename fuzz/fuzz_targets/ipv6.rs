//! IPv6 header: the checked view, the Repr round trip (parse, emit, same 40 bytes), the payload bounds.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lwt6_wire::ipv6::{Ipv6Repr, Packet};

fuzz_target!(|data: &[u8]| {
    let Ok(p) = Packet::new_checked(data) else {
        return;
    };
    let Ok(repr) = Ipv6Repr::parse(&p) else {
        assert_ne!(data[0] >> 4, 6);
        return;
    };
    assert_eq!(p.payload().len(), usize::from(repr.payload_len));
    let mut out = [0u8; 40];
    repr.emit(&mut out);
    assert_eq!(&out[..], &data[..40]);
    let again = Ipv6Repr::parse(&Packet::new_unchecked(&out[..]));
    assert_eq!(again, Ok(repr));
});
