//! ARP over Ethernet for IPv4 (RFC 826): parsing; a parsed message emits back to its 28 bytes, which parse again
//! as the same message.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lwt6_wire::arp::{self, ArpRepr};

fuzz_target!(|data: &[u8]| {
    let Ok(r) = ArpRepr::parse(data) else {
        return;
    };
    assert!(r.op == arp::OP_REQUEST || r.op == arp::OP_REPLY);
    let mut out = [0u8; arp::LEN];
    r.emit(&mut out);
    assert_eq!(
        &out[..],
        &data[..arp::LEN],
        "parse then emit gives the bytes back"
    );
    assert_eq!(ArpRepr::parse(&out), Ok(r));
});
