//! What the fuzz targets share: the fuzzing router's configuration, how one input becomes several frames, and
//! the checks every output frame must pass. See docs/fuzzing.md.

use lwt6_wire::{ethernet, ipv4, ipv6};

/// The fuzzing router (every tunnel kind, local SRH / RPL processing, IOAM transit, HMAC keys).
pub const ROUTER_CONF: &str = include_str!("../../crates/lab/src/bench/soak.conf");

/// A running configuration for the control-line target: the same router.
pub fn router_config() -> lwt6_config::Config {
    lwt6_config::parse(ROUTER_CONF).expect("the fuzzing router's configuration parses")
}

/// Splits one fuzz input into up to 16 frames, each with its ingress device: byte 0 picks the device of the
/// first frame (`% 3`), then frames are separated by the 4-byte marker `FRAME_SEP` (as in the seeds), each
/// separator followed by one device byte. An input without a separator is one frame.
pub fn split_frames(data: &[u8]) -> Vec<(usize, &[u8])> {
    let Some((&dev0, mut rest)) = data.split_first() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut dev = usize::from(dev0 % 3);
    while out.len() < 15 {
        match rest.windows(FRAME_SEP.len()).position(|w| w == FRAME_SEP) {
            Some(i) => {
                out.push((dev, &rest[..i]));
                let after = &rest[i + FRAME_SEP.len()..];
                let Some((&d, r)) = after.split_first() else {
                    return out;
                };
                dev = usize::from(d % 3);
                rest = r;
            }
            None => break,
        }
    }
    out.push((dev, rest));
    out
}

/// The separator between frames of a pipeline input.
pub const FRAME_SEP: &[u8] = b"LWT6";

/// Asserts that an output frame is a valid Ethernet frame carrying IPv6 or IPv4 whose length fields agree with
/// the frame: `14 + 40 + payload length` (IPv6) or `14 + total length` (IPv4) bytes exactly, and the IPv4 header
/// checksum valid.
pub fn check_output_frame(frame: &[u8]) {
    let eth = ethernet::Frame::new_checked(frame).expect("output frame holds an Ethernet header");
    match eth.ethertype() {
        ethernet::ETHERTYPE_IPV6 => {
            let p =
                ipv6::Packet::new_checked(eth.payload()).expect("output IPv6 header is complete");
            let repr = ipv6::Ipv6Repr::parse(&p).expect("output IPv6 version is 6");
            assert_eq!(
                14 + 40 + usize::from(repr.payload_len),
                frame.len(),
                "output IPv6 payload length disagrees with the frame"
            );
        }
        ethernet::ETHERTYPE_IPV4 => {
            let p =
                ipv4::Packet::new_checked(eth.payload()).expect("output IPv4 header is complete");
            assert!(p.verify_checksum(), "output IPv4 header checksum");
            assert_eq!(
                14 + usize::from(p.total_len()),
                frame.len(),
                "output IPv4 total length disagrees with the frame"
            );
        }
        t => panic!("output frame with EtherType {t:#06x}"),
    }
}
