//! SRH processing at a segment endpoint that has no seg6local route (Linux `ipv6_srh_rcv`, docs/references.md §4
//! last paragraph): HMAC check, decapsulation at the end of the path, otherwise End (SL−−, DA := next SID).

use crate::buffer::PacketBuf;
use crate::stats::DropReason;
use crate::tunnel::seg6::HmacSecret;
use crate::wire::{ipv6, proto, srh};
use std::collections::HashMap;
use std::net::Ipv6Addr;

/// What to do next with the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SrhAction {
    /// Segments Left is 0, an upper-layer header follows: for this node.
    Deliver,
    /// Segments Left is 0 and an IPv6 (41) or IPv4 (4) packet follows at this offset.
    Decap {
        /// Offset of the inner header.
        inner_offset: usize,
        /// 41 or 4.
        proto: u8,
    },
    /// DA set to the next segment: route it.
    Forward,
    /// Send ICMPv6 Parameter Problem code 0 with this pointer (the Segments Left field) and drop.
    ParamProblem {
        /// Offset from the IPv6 header.
        pointer: u32,
    },
}

/// Checks the HMAC TLV per `seg6_require_hmac` (-1 ignore, 0 verify if present, 1 required).
pub fn check_hmac(
    packet: &[u8],
    rh_offset: usize,
    require: i8,
    keys: &HashMap<u32, HmacSecret>,
) -> Result<(), DropReason> {
    if require < 0 {
        return Ok(());
    }
    // The header as its Hdr Ext Len gives it (the chain walk checked that it is inside the packet). A header
    // whose fields are inconsistent has no HMAC TLV (Linux `seg6_get_tlv_hmac`); its SL checks come later.
    let len = (usize::from(*packet.get(rh_offset + 1).ok_or(DropReason::SrhMalformed)?) + 1) * 8;
    let bytes = packet
        .get(rh_offset..rh_offset + len)
        .ok_or(DropReason::SrhMalformed)?;
    let Some(off) = srh::hmac_tlv_offset(bytes) else {
        return if require > 0 {
            Err(DropReason::HmacInvalid)
        } else {
            Ok(())
        };
    };
    let key_id = u32::from_be_bytes([
        bytes[off + 4],
        bytes[off + 5],
        bytes[off + 6],
        bytes[off + 7],
    ]);
    let key = keys.get(&key_id).ok_or(DropReason::HmacInvalid)?;
    let src = ipv6::Packet::new_unchecked(packet).src_addr();
    let mut zeroed = [0u8; 2048];
    zeroed[..bytes.len()].copy_from_slice(bytes);
    zeroed[off + 8..off + 40].fill(0);
    let mac = srh::compute_hmac(key.algo, &key.secret, &src, &zeroed[..bytes.len()], key_id)
        .map_err(|_| DropReason::HmacInvalid)?;
    // Constant-time comparison over the 32 bytes.
    let diff = mac
        .iter()
        .zip(&bytes[off + 8..off + 40])
        .fold(0u8, |d, (a, b)| d | (a ^ b));
    if diff != 0 {
        return Err(DropReason::HmacInvalid);
    }
    Ok(())
}

/// Processes the SRH at `rh_offset` of the packet in `buf` (addressed to this node).
pub fn process(buf: &mut PacketBuf, rh_offset: usize) -> Result<SrhAction, DropReason> {
    let pkt = buf.data_mut();
    // The fixed part (RFC 8754 §2) read byte by byte: the checks below are Linux's and RFC 8754 §4.3.1.1's, and
    // they must answer a header whose lengths disagree with a Parameter Problem, not a silent drop.
    let fixed = pkt
        .get(rh_offset..rh_offset + 8)
        .ok_or(DropReason::SrhMalformed)?;
    let (nh, hdr_len, sl, last) = (
        fixed[0],
        usize::from(fixed[1]),
        usize::from(fixed[3]),
        usize::from(fixed[4]),
    );
    if sl == 0 {
        return Ok(match nh {
            proto::IPV6 | proto::IPV4 => SrhAction::Decap {
                inner_offset: rh_offset + (hdr_len + 1) * 8,
                proto: nh,
            },
            _ => SrhAction::Deliver,
        });
    }
    // Linux: SL must index a segment inside Hdr Ext Len. RFC 8754 §4.3.1.1 adds: Last Entry within Hdr Ext Len
    // (max_LE = Hdr Ext Len / 2 - 1) and SL <= Last Entry + 1 (Linux does not check Last Entry:
    // docs/linux-compat.md).
    if sl >= hdr_len / 2 || last + 1 > hdr_len / 2 || sl > last + 1 {
        return Ok(SrhAction::ParamProblem {
            pointer: (rh_offset + 3) as u32,
        });
    }
    let next: Ipv6Addr = {
        let mut h = srh::Header::new_checked(&mut pkt[rh_offset..])
            .map_err(|_| DropReason::SrhMalformed)?;
        h.set_segments_left((sl - 1) as u8);
        h.segment(sl - 1)
    };
    ipv6::Packet::new_unchecked(&mut pkt[..ipv6::HEADER_LEN]).set_dst_addr(next);
    Ok(SrhAction::Forward)
}
