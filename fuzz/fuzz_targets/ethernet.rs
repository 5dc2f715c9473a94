//! Ethernet header: a checked view never panics; parse then emit gives the input's 14 header bytes back.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lwt6_wire::ethernet::{EthernetRepr, Frame};

fuzz_target!(|data: &[u8]| {
    let Ok(f) = Frame::new_checked(data) else {
        assert!(data.len() < 14, "a 14-byte buffer is a frame");
        return;
    };
    assert_eq!(f.payload(), &data[14..]);
    let repr = EthernetRepr::parse(&f).expect("a checked frame parses");
    let mut out = [0u8; 14];
    repr.emit(&mut out);
    assert_eq!(&out[..], &data[..14]);
});
