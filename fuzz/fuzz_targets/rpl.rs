//! RPL Source Routing Header (RFC 6554): the checked view, decompression against a destination (the input's
//! first 16 bytes), and the Linux compression of the decompressed addresses, which must decompress to the
//! same addresses.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lwt6_wire::rpl::{Header, compressed_len, decompress, emit_compressed};
use std::net::Ipv6Addr;

fuzz_target!(|data: &[u8]| {
    if data.len() < 16 {
        return;
    }
    let daddr = Ipv6Addr::from(<[u8; 16]>::try_from(&data[..16]).unwrap());
    let data = &data[16..];
    let Ok(h) = Header::new_checked(data) else {
        return;
    };
    assert!(h.header_len() <= data.len());
    let Ok(count) = h.address_count() else {
        return;
    };
    let mut addrs = vec![Ipv6Addr::UNSPECIFIED; count];
    assert_eq!(decompress(&h, &daddr, &mut addrs), Ok(count));
    if count > 127 {
        return;
    }
    let mut out = vec![0u8; compressed_len(&addrs, &daddr)];
    let n = emit_compressed(&mut out, h.next_header(), h.segments_left(), &addrs, &daddr);
    assert_eq!(n, out.len());
    let h2 = Header::new_checked(&out[..]).expect("compressed header is checked");
    assert_eq!(h2.address_count(), Ok(count));
    let mut back = vec![Ipv6Addr::UNSPECIFIED; count];
    decompress(&h2, &daddr, &mut back).expect("decompresses");
    assert_eq!(
        back, addrs,
        "compress then decompress gives the addresses back"
    );
});
