//! ICMPv6 error messages (RFC 4443 §3) with their checksum (RFC 4443 §2.3).
//!
//! ```text
//! | Type (8) | Code (8) | Checksum (16) |
//! | MTU / Pointer / Unused (32)         |
//! | As much of invoking packet as possible without the ICMPv6 packet exceeding the minimum IPv6 MTU |
//! ```

use super::checksum;
use super::ipv6::{self, Ipv6Repr};
use super::{Error, Result, proto};
use std::net::Ipv6Addr;

/// Length of the ICMPv6 error header (type, code, checksum, 32-bit field).
pub const HEADER_LEN: usize = 8;

/// Destination Unreachable.
pub const TYPE_DEST_UNREACHABLE: u8 = 1;
/// Packet Too Big.
pub const TYPE_PACKET_TOO_BIG: u8 = 2;
/// Time Exceeded.
pub const TYPE_TIME_EXCEEDED: u8 = 3;
/// Parameter Problem.
pub const TYPE_PARAM_PROBLEM: u8 = 4;

/// An ICMPv6 error to send about an invoking packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IcmpError {
    /// Destination Unreachable with a code (0 no route, 1 admin prohibited, 3 address unreachable, ...).
    DestUnreachable {
        /// Code.
        code: u8,
    },
    /// Packet Too Big with the MTU of the next-hop link.
    PacketTooBig {
        /// MTU.
        mtu: u32,
    },
    /// Time Exceeded (code 0: hop limit exceeded in transit).
    TimeExceeded {
        /// Code.
        code: u8,
    },
    /// Parameter Problem with a pointer to the offending octet.
    ParamProblem {
        /// Code (0 erroneous header field, 1 unrecognized next header, 2 unrecognized option).
        code: u8,
        /// Offset in the invoking packet.
        pointer: u32,
    },
}

impl IcmpError {
    /// The error's name as lwt6 shows it (`dest_unreachable`, `packet_too_big`, `time_exceeded`,
    /// `param_problem`).
    pub fn name(&self) -> &'static str {
        match self {
            IcmpError::DestUnreachable { .. } => "dest_unreachable",
            IcmpError::PacketTooBig { .. } => "packet_too_big",
            IcmpError::TimeExceeded { .. } => "time_exceeded",
            IcmpError::ParamProblem { .. } => "param_problem",
        }
    }

    /// The MTU a Packet Too Big carries.
    pub fn mtu(&self) -> Option<u32> {
        match *self {
            IcmpError::PacketTooBig { mtu } => Some(mtu),
            _ => None,
        }
    }

    /// The pointer a Parameter Problem carries.
    pub fn pointer(&self) -> Option<u32> {
        match *self {
            IcmpError::ParamProblem { pointer, .. } => Some(pointer),
            _ => None,
        }
    }

    /// (type, code, 32-bit field) as on the wire.
    pub fn type_code_field(&self) -> (u8, u8, u32) {
        match *self {
            IcmpError::DestUnreachable { code } => (TYPE_DEST_UNREACHABLE, code, 0),
            // RFC 4443 §3.2: code set to 0 by the originator.
            IcmpError::PacketTooBig { mtu } => (TYPE_PACKET_TOO_BIG, 0, mtu),
            IcmpError::TimeExceeded { code } => (TYPE_TIME_EXCEEDED, code, 0),
            IcmpError::ParamProblem { code, pointer } => (TYPE_PARAM_PROBLEM, code, pointer),
        }
    }
    /// The inverse of [`IcmpError::type_code_field`]; `None` for types that are not errors 1..=4.
    /// The Packet Too Big code is ignored, as RFC 4443 §3.2 tells receivers to.
    pub fn from_type_code_field(ty: u8, code: u8, field: u32) -> Option<Self> {
        Some(match ty {
            TYPE_DEST_UNREACHABLE => IcmpError::DestUnreachable { code },
            TYPE_PACKET_TOO_BIG => IcmpError::PacketTooBig { mtu: field },
            TYPE_TIME_EXCEEDED => IcmpError::TimeExceeded { code },
            TYPE_PARAM_PROBLEM => IcmpError::ParamProblem {
                code,
                pointer: field,
            },
            _ => return None,
        })
    }
}

/// Size of the whole IPv6 packet [`emit`] writes for an invoking packet of `invoking_len` bytes:
/// min(40 + 8 + invoking_len, 1280).
pub fn emitted_len(invoking_len: usize) -> usize {
    (ipv6::HEADER_LEN + HEADER_LEN)
        .saturating_add(invoking_len)
        .min(ipv6::MIN_MTU)
}

/// Writes a full IPv6 packet (hop limit `hop_limit`, next header 58) carrying ICMPv6 error `err`
/// about `invoking` (truncated so the packet is at most 1280 bytes) into `out`, returning its length.
/// `out` must be at least [`emitted_len`] bytes.
pub fn emit(
    out: &mut [u8],
    src: Ipv6Addr,
    dst: Ipv6Addr,
    hop_limit: u8,
    err: IcmpError,
    invoking: &[u8],
) -> usize {
    let total = emitted_len(invoking.len());
    let icmp_len = total - ipv6::HEADER_LEN;
    let carried = icmp_len - HEADER_LEN;
    let out = &mut out[..total];
    Ipv6Repr {
        traffic_class: 0,
        flow_label: 0,
        payload_len: icmp_len as u16,
        next_header: proto::ICMPV6,
        hop_limit,
        src,
        dst,
    }
    .emit(out);
    let icmp = &mut out[ipv6::HEADER_LEN..];
    let (ty, code, field) = err.type_code_field();
    icmp[0] = ty;
    icmp[1] = code;
    icmp[2] = 0;
    icmp[3] = 0;
    icmp[4..8].copy_from_slice(&field.to_be_bytes());
    icmp[HEADER_LEN..].copy_from_slice(&invoking[..carried]);
    // RFC 4443 §2.3: checksum over the pseudo-header (RFC 8200 §8.1) and the whole message.
    let sum = checksum::combine(
        checksum::pseudo_header_v6(&src, &dst, icmp_len as u32, proto::ICMPV6),
        checksum::sum(icmp),
    );
    icmp[2..4].copy_from_slice(&checksum::finish(sum).to_be_bytes());
    total
}

/// Echo Request (RFC 4443 §4.1).
pub const TYPE_ECHO_REQUEST: u8 = 128;
/// Echo Reply (RFC 4443 §4.2).
pub const TYPE_ECHO_REPLY: u8 = 129;

/// Writes a full IPv6 packet carrying the Echo Reply to the Echo Request message `request` (the ICMPv6 message,
/// type 128 ...): the same identifier, sequence number and data (RFC 4443 §4.2), a new checksum. Returns the
/// packet's length, `40 + request.len()`; `out` must hold it.
pub fn emit_echo_reply(
    out: &mut [u8],
    src: Ipv6Addr,
    dst: Ipv6Addr,
    hop_limit: u8,
    traffic_class: u8,
    request: &[u8],
) -> usize {
    let total = ipv6::HEADER_LEN + request.len();
    Ipv6Repr {
        traffic_class,
        flow_label: 0,
        payload_len: request.len() as u16,
        next_header: proto::ICMPV6,
        hop_limit,
        src,
        dst,
    }
    .emit(&mut out[..total]);
    let icmp = &mut out[ipv6::HEADER_LEN..total];
    icmp.copy_from_slice(request);
    icmp[0] = TYPE_ECHO_REPLY;
    icmp[1] = 0;
    icmp[2] = 0;
    icmp[3] = 0;
    let sum = checksum::combine(
        checksum::pseudo_header_v6(&src, &dst, request.len() as u32, proto::ICMPV6),
        checksum::sum(icmp),
    );
    icmp[2..4].copy_from_slice(&checksum::finish(sum).to_be_bytes());
    total
}

/// Whether `icmp` (a whole ICMPv6 message from `src` to `dst`) is at least 4 bytes long and its checksum verifies
/// (RFC 4443 §2.3).
pub fn checksum_ok(src: &Ipv6Addr, dst: &Ipv6Addr, icmp: &[u8]) -> bool {
    let Ok(len) = u32::try_from(icmp.len()) else {
        return false;
    };
    icmp.len() >= 4
        && checksum::finish(checksum::combine(
            checksum::pseudo_header_v6(src, dst, len, proto::ICMPV6),
            checksum::sum(icmp),
        )) == 0
}

/// A parsed ICMPv6 error message (for tests and decoding).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IcmpErrorRepr {
    /// The error.
    pub err: IcmpError,
    /// The invoking packet bytes carried.
    pub invoking: Vec<u8>,
}

/// Parses an ICMPv6 message body (starting at the ICMPv6 type byte), verifying the checksum against src/dst.
///
/// `icmp` must be exactly the ICMPv6 message (the IPv6 payload), since its length enters the checksum.
/// Errors: `Truncated` below 8 bytes, `Malformed("icmpv6 checksum")`, `Malformed("not an icmpv6 error")`.
pub fn parse(src: Ipv6Addr, dst: Ipv6Addr, icmp: &[u8]) -> Result<IcmpErrorRepr> {
    if icmp.len() < HEADER_LEN {
        return Err(Error::Truncated);
    }
    let len = u32::try_from(icmp.len()).map_err(|_| Error::Malformed("icmpv6 length"))?;
    let sum = checksum::combine(
        checksum::pseudo_header_v6(&src, &dst, len, proto::ICMPV6),
        checksum::sum(icmp),
    );
    if checksum::finish(sum) != 0 {
        return Err(Error::Malformed("icmpv6 checksum"));
    }
    let field = u32::from_be_bytes([icmp[4], icmp[5], icmp[6], icmp[7]]);
    let err = IcmpError::from_type_code_field(icmp[0], icmp[1], field)
        .ok_or(Error::Malformed("not an icmpv6 error"))?;
    Ok(IcmpErrorRepr {
        err,
        invoking: icmp[HEADER_LEN..].to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The 53-byte IPv6/UDP input packet of docs/references.md §6, as carried inside the kernel-captured
    /// `encap` frame (srh_kernel.pcap frame 2, bytes 0x6e..0xa3).
    const INPUT: [u8; 53] = [
        0x6b, 0x81, 0x23, 0x45, 0x00, 0x0d, 0x11, 0x40, 0xfd, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0x01, 0xfd, 0x00, 0x00, 0x99, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x04,
        0x57, 0x08, 0xae, 0x00, 0x0d, 0x14, 0xa0, b'H', b'E', b'L', b'L', b'O',
    ];

    fn a(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    /// Echo Reply from fd00:1::2 to fd00:1::1 to the request id 7 seq 1 data "hi" (RFC 4443 §4.1/§4.2). Checksums
    /// computed independently (Python, RFC 1071 over the pseudo-header, length 10, next header 58):
    /// request `80 00 [c] 0007 0001 6869` -> 0x1d43, reply `81 00 [c] ...` -> 0x1c43.
    #[test]
    fn golden_echo_reply() {
        let (s, d) = (a("fd00:1::1"), a("fd00:1::2"));
        let req = [0x80, 0, 0x1d, 0x43, 0, 7, 0, 1, b'h', b'i'];
        assert!(checksum_ok(&s, &d, &req));
        assert!(!checksum_ok(&d, &d, &req));
        let mut out = [0u8; 64];
        let n = emit_echo_reply(&mut out, d, s, 64, 0x20, &req);
        assert_eq!(n, 50);
        assert_eq!(&out[..8], &[0x62, 0, 0, 0, 0, 10, 58, 64]);
        assert_eq!(&out[8..24], &d.octets());
        assert_eq!(&out[24..40], &s.octets());
        assert_eq!(&out[40..50], &[0x81, 0, 0x1c, 0x43, 0, 7, 0, 1, b'h', b'i']);
    }

    /// Packet Too Big (MTU 1400) from fd00:1::2 to fd00:1::1 about INPUT.
    /// Expected checksum 0x5e14 was computed independently with this Python snippet (not with lwt6):
    /// ```text
    /// icmp = struct.pack('!BBHI', 2, 0, 0, 1400) + INPUT            # 61 bytes
    /// ph = src + dst + struct.pack('!I', 61) + b'\0\0\0' + bytes([58])
    /// b = ph + icmp + b'\0'; s = sum(struct.unpack('!%dH' % (len(b)//2), b))
    /// while s >> 16: s = (s & 0xffff) + (s >> 16)
    /// hex(~s & 0xffff)  -> '0x5e14'
    /// ```
    #[test]
    fn golden_packet_too_big() {
        let mut out = [0u8; 200];
        let n = emit(
            &mut out,
            a("fd00:1::2"),
            a("fd00:1::1"),
            64,
            IcmpError::PacketTooBig { mtu: 1400 },
            &INPUT,
        );
        assert_eq!(n, 40 + 8 + 53);
        let mut expect = vec![
            0x60, 0, 0, 0, 0x00, 0x3d, 58, 64, // plen 61, nh 58, hlim 64
            0xfd, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, // src
            0xfd, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, // dst
            0x02, 0x00, 0x5e, 0x14, 0x00, 0x00, 0x05, 0x78, // type 2, code 0, cksum, MTU 1400
        ];
        expect.extend_from_slice(&INPUT);
        assert_eq!(&out[..n], &expect[..]);
        let r = parse(a("fd00:1::2"), a("fd00:1::1"), &out[40..n]).unwrap();
        assert_eq!(
            r,
            IcmpErrorRepr {
                err: IcmpError::PacketTooBig { mtu: 1400 },
                invoking: INPUT.to_vec()
            }
        );
    }

    /// Time Exceeded about a 1300-byte invoking packet (bytes `(i * 7) & 0xff`): the result is exactly
    /// 1280 bytes with 1232 invoking bytes. Checksum 0xe2f5 computed independently with the same
    /// Python snippet as above (type 3, code 0, field 0, invoking[:1232], length 1240).
    #[test]
    fn golden_time_exceeded_truncated() {
        let inv: Vec<u8> = (0..1300usize).map(|i| (i * 7) as u8).collect();
        let mut out = vec![0u8; 1400];
        let n = emit(
            &mut out,
            a("fd00:1::2"),
            a("fd00:1::1"),
            255,
            IcmpError::TimeExceeded { code: 0 },
            &inv,
        );
        assert_eq!(n, 1280);
        assert_eq!(emitted_len(1300), 1280);
        assert_eq!(&out[4..8], &[0x04, 0xd8, 58, 255]); // plen 1240
        assert_eq!(&out[40..48], &[3, 0, 0xe2, 0xf5, 0, 0, 0, 0]);
        assert_eq!(&out[48..1280], &inv[..1232]);
        let r = parse(a("fd00:1::2"), a("fd00:1::1"), &out[40..n]).unwrap();
        assert_eq!(r.invoking.len(), 1232);
    }

    #[test]
    fn emitted_len_bounds() {
        assert_eq!(emitted_len(0), 48);
        assert_eq!(emitted_len(1232), 1280);
        assert_eq!(emitted_len(1233), 1280);
        assert_eq!(emitted_len(usize::MAX), 1280);
    }

    #[test]
    fn type_code_fields() {
        assert_eq!(
            IcmpError::DestUnreachable { code: 3 }.type_code_field(),
            (1, 3, 0)
        );
        assert_eq!(
            IcmpError::PacketTooBig { mtu: 1280 }.type_code_field(),
            (2, 0, 1280)
        );
        assert_eq!(
            IcmpError::TimeExceeded { code: 0 }.type_code_field(),
            (3, 0, 0)
        );
        assert_eq!(
            IcmpError::ParamProblem {
                code: 0,
                pointer: 42
            }
            .type_code_field(),
            (4, 0, 42)
        );
    }

    #[test]
    fn parse_errors() {
        let (s, d) = (a("fd00:1::2"), a("fd00:1::1"));
        assert_eq!(parse(s, d, &[1, 0, 0, 0, 0, 0, 0]), Err(Error::Truncated));
        let mut out = [0u8; 200];
        let n = emit(
            &mut out,
            s,
            d,
            64,
            IcmpError::DestUnreachable { code: 0 },
            &INPUT,
        );
        let mut bad = out[40..n].to_vec();
        bad[60] ^= 1;
        assert_eq!(parse(s, d, &bad), Err(Error::Malformed("icmpv6 checksum")));
        // A different destination breaks the pseudo-header sum.
        assert_eq!(
            parse(s, a("fd00:1::3"), &out[40..n]),
            Err(Error::Malformed("icmpv6 checksum"))
        );
        // A valid Echo Request (type 128) is not an error message. Checksum hand-derived: the
        // pseudo-header of fd00:1::2 -> fd00:1::1 sums fd00+0001+0002 + fd00+0001+0001 + 0008 + 003a
        // = 0x1fa47 -> 0xfa48; plus 8000 -> 0x17a48 -> 0x7a49; complement 0x85b6.
        let echo = [128, 0, 0x85, 0xb6, 0, 0, 0, 0];
        assert_eq!(
            parse(s, d, &echo),
            Err(Error::Malformed("not an icmpv6 error"))
        );
    }

    fn arb_err() -> impl Strategy<Value = IcmpError> {
        prop_oneof![
            any::<u8>().prop_map(|code| IcmpError::DestUnreachable { code }),
            any::<u32>().prop_map(|mtu| IcmpError::PacketTooBig { mtu }),
            any::<u8>().prop_map(|code| IcmpError::TimeExceeded { code }),
            (any::<u8>(), any::<u32>())
                .prop_map(|(code, pointer)| IcmpError::ParamProblem { code, pointer }),
        ]
    }

    proptest! {
        #[test]
        fn round_trip(err in arb_err(), inv in proptest::collection::vec(any::<u8>(), 0..1400),
                      s in any::<[u8; 16]>(), d in any::<[u8; 16]>(), hl in any::<u8>()) {
            let (s, d) = (Ipv6Addr::from(s), Ipv6Addr::from(d));
            let mut out = vec![0u8; emitted_len(inv.len())];
            let n = emit(&mut out, s, d, hl, err, &inv);
            prop_assert_eq!(n, out.len());
            prop_assert!(n <= 1280);
            let p = ipv6::Packet::new_checked(&out[..]).unwrap();
            let ip = Ipv6Repr::parse(&p).unwrap();
            prop_assert_eq!((ip.next_header, ip.hop_limit, ip.src, ip.dst), (58, hl, s, d));
            prop_assert_eq!(usize::from(ip.payload_len), n - 40);
            let r = parse(s, d, p.payload()).unwrap();
            prop_assert_eq!(r.err, err);
            prop_assert_eq!(&r.invoking[..], &inv[..inv.len().min(1232)]);
        }

        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..200),
                                       s in any::<[u8; 16]>(), d in any::<[u8; 16]>()) {
            let _ = parse(Ipv6Addr::from(s), Ipv6Addr::from(d), &data);
        }
    }
}
