//! IPv4 header: the checked view, checksum verification, the Repr round trip.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lwt6_wire::ipv4::{Ipv4Repr, Packet};

fuzz_target!(|data: &[u8]| {
    let Ok(p) = Packet::new_checked(data) else {
        return;
    };
    assert!(p.header_len() <= usize::from(p.total_len()));
    assert_eq!(
        p.payload().len(),
        usize::from(p.total_len()) - p.header_len()
    );
    let _ = p.verify_checksum();
    let Ok(repr) = Ipv4Repr::parse(&p) else {
        return;
    };
    let mut out = [0u8; 20];
    repr.emit(&mut out);
    let q = Packet::new_unchecked(&out[..]);
    assert!(
        q.verify_checksum(),
        "an emitted header has a valid checksum"
    );
    assert_eq!(
        Ipv4Repr::parse(&q),
        Ok(repr),
        "emit then parse gives the same header"
    );
    let mut copy = data.to_vec();
    let mut m = Packet::new_unchecked(&mut copy[..]);
    m.decrement_ttl();
    m.fill_checksum();
    assert!(Packet::new_unchecked(&copy[..]).verify_checksum());
});
