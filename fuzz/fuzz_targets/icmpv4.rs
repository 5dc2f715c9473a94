//! ICMPv4 (RFC 792, RFC 1812 §4.3.2.3): `check` on any message; the echo reply to the input taken as an echo
//! request (type 8, its checksum made valid) keeps identifier, sequence and data; an error about the input (type
//! and code from its first bytes) quotes as much of it as fits in 576 bytes. Every datagram emitted has a valid
//! IPv4 header and ICMP checksum.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lwt6_wire::icmpv4::{self, Icmpv4Error, IpFields};
use lwt6_wire::{checksum, ipv4};
use std::net::Ipv4Addr;

const IP: IpFields = IpFields {
    tos: 0,
    ident: 7,
    ttl: 64,
};

/// Checks an emitted datagram's IPv4 header; returns its ICMP message.
fn datagram(out: &[u8]) -> &[u8] {
    let p = ipv4::Packet::new_checked(out).expect("an emitted datagram has a valid IPv4 header");
    assert!(p.verify_checksum());
    assert_eq!(usize::from(p.total_len()), out.len());
    &out[20..]
}

fuzz_target!(|data: &[u8]| {
    let _ = icmpv4::check(data);
    let (src, dst) = (Ipv4Addr::new(10, 1, 0, 2), Ipv4Addr::new(10, 1, 0, 1));
    if (8..=65_000).contains(&data.len()) {
        let mut req = data.to_vec();
        req[0] = icmpv4::TYPE_ECHO_REQUEST;
        req[1] = 0;
        req[2] = 0;
        req[3] = 0;
        let c = checksum::finish(checksum::sum(&req));
        req[2..4].copy_from_slice(&c.to_be_bytes());
        assert_eq!(icmpv4::check(&req), Ok((icmpv4::TYPE_ECHO_REQUEST, 0)));
        let mut out = vec![0u8; 20 + req.len()];
        let n = icmpv4::emit_echo_reply(&mut out, src, dst, IP, &req);
        assert_eq!(n, out.len());
        let reply = datagram(&out);
        assert_eq!(icmpv4::check(reply), Ok((icmpv4::TYPE_ECHO_REPLY, 0)));
        assert_eq!(&reply[4..], &req[4..], "identifier, sequence and data kept");
    }
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let code = rest.first().copied().unwrap_or(0);
    let err = match sel % 3 {
        0 => Icmpv4Error::DestUnreachable { code },
        1 => Icmpv4Error::FragNeeded {
            mtu: u16::from(code) << 8 | u16::from(rest.get(1).copied().unwrap_or(0)),
        },
        _ => Icmpv4Error::TimeExceeded { code },
    };
    let mut out = vec![0u8; icmpv4::error_len(data.len())];
    let n = icmpv4::emit_error(&mut out, src, dst, IP, err, data);
    assert_eq!(n, out.len());
    assert!(n <= icmpv4::MAX_ERROR_LEN);
    let msg = datagram(&out);
    let (ty, c, _) = err.type_code_field();
    assert_eq!(icmpv4::check(msg), Ok((ty, c)));
    assert_eq!(
        &msg[8..],
        &data[..n - 28],
        "the quote is the invoking datagram's first bytes"
    );
});
