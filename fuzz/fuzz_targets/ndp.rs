//! Neighbor Solicitation and Advertisement (RFC 4861 §4.3, §4.4, §7.1.1, §7.1.2): source and destination from the
//! input's first 32 bytes, the ICMPv6 message after them, parsed as it is and once more with its checksum made
//! valid (so that the fuzzer reaches the checks behind it). A parsed message has a unicast target, and emits a
//! packet that parses back as the same message.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lwt6_wire::{checksum, ndp::NdRepr, proto};
use std::net::Ipv6Addr;

fuzz_target!(|data: &[u8]| {
    if data.len() < 32 {
        return;
    }
    let src = Ipv6Addr::from(<[u8; 16]>::try_from(&data[..16]).unwrap());
    let dst = Ipv6Addr::from(<[u8; 16]>::try_from(&data[16..32]).unwrap());
    let _ = NdRepr::parse(&src, &dst, &data[32..]);
    let mut icmp = data[32..].to_vec();
    if icmp.len() < 4 {
        return;
    }
    icmp[2] = 0;
    icmp[3] = 0;
    let sum = checksum::combine(
        checksum::pseudo_header_v6(&src, &dst, icmp.len() as u32, proto::ICMPV6),
        checksum::sum(&icmp),
    );
    icmp[2..4].copy_from_slice(&checksum::finish(sum).to_be_bytes());
    let Ok(r) = NdRepr::parse(&src, &dst, &icmp) else {
        return;
    };
    assert!(!r.target.is_multicast());
    let mut out = vec![0u8; 40 + r.icmp_len()];
    let n = r.emit(&mut out, src, dst);
    assert_eq!(n, out.len());
    assert_eq!(
        NdRepr::parse(&src, &dst, &out[40..]),
        Ok(r),
        "emit then parse gives the same message"
    );
});
