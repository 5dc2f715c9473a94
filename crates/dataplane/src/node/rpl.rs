//! RPL Source Routing Header processing at an intermediate node (RFC 6554 §4.2), with Linux's checks
//! (docs/references.md §3.4), but without Linux's corruption when the recompressed header is shorter.

use crate::buffer::PacketBuf;
use crate::stats::DropReason;
use crate::wire::{ipv6, proto, rpl};
use std::net::Ipv6Addr;

/// Most addresses a header may carry (Linux June 2026 bound: n + 1 <= 127).
pub const MAX_ADDRS: usize = 127;

/// What to do next with the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RplAction {
    /// Segments Left is 0 and an upper-layer header follows: for this node.
    Deliver,
    /// Segments Left is 0 and an IPv6 packet follows at this offset: decapsulate it.
    Decap {
        /// Offset of the inner IPv6 header.
        inner_offset: usize,
    },
    /// The destination was swapped with the next address and the header rewritten: route it.
    Forward,
    /// Send ICMPv6 Parameter Problem code 0 with this pointer, then drop for `reason`.
    ParamProblem {
        /// Offset from the IPv6 header.
        pointer: u32,
        /// Drop reason to count.
        reason: DropReason,
    },
}

/// Processes the RPL header at `rh_offset` of the IPv6 packet in `buf` (addressed to this node).
/// `is_local` says whether an address belongs to this node.
pub fn process(
    buf: &mut PacketBuf,
    rh_offset: usize,
    is_local: &dyn Fn(&Ipv6Addr) -> bool,
) -> Result<RplAction, DropReason> {
    let pkt = buf.data();
    let h = rpl::Header::new_checked(&pkt[rh_offset..]).map_err(|_| DropReason::RplMalformed)?;
    let old_len = (h.hdr_len() as usize + 1) * 8;
    let sl = h.segments_left() as usize;
    if sl == 0 {
        return Ok(if h.next_header() == proto::IPV6 {
            RplAction::Decap {
                inner_offset: rh_offset + old_len,
            }
        } else {
            RplAction::Deliver
        });
    }
    let count = h.address_count().map_err(|_| DropReason::RplMalformed)?;
    if count > MAX_ADDRS {
        return Err(DropReason::RplMalformed);
    }
    if sl > count {
        return Ok(RplAction::ParamProblem {
            pointer: (rh_offset + 3) as u32,
            reason: DropReason::RplSegmentsLeft,
        });
    }
    let sl = sl - 1;
    let i = count - 1 - sl;
    let da = ipv6::Packet::new_unchecked(pkt).dst_addr();
    let mut addrs = [Ipv6Addr::UNSPECIFIED; MAX_ADDRS];
    rpl::decompress(&h, &da, &mut addrs[..count]).map_err(|_| DropReason::RplMalformed)?;
    let addrs = &mut addrs[..count];
    if addrs[i].is_multicast() {
        return Err(DropReason::RplMulticast);
    }
    // Loop check as Linux does it: a local address preceded by a non-local one, after two local ones.
    let mut locals = 0;
    for j in 0..count {
        if is_local(&addrs[j]) {
            if locals >= 2 && j > 0 && !is_local(&addrs[j - 1]) {
                // Linux has already written the decremented Segments Left: the error quotes it.
                buf.data_mut()[rh_offset + 3] = sl as u8;
                return Ok(RplAction::ParamProblem {
                    pointer: 0,
                    reason: DropReason::RplLoop,
                });
            }
            locals += 1;
        }
    }
    let next_header = h.next_header();
    let new_da = addrs[i];
    addrs[i] = da;
    let new_len = rpl::compressed_len(addrs, &new_da);
    let plen = u16::from_be_bytes([pkt[4], pkt[5]]) as usize;
    if plen + new_len > old_len + u16::MAX as usize {
        return Err(DropReason::TooBig);
    }
    if new_len > old_len {
        let extra = new_len - old_len;
        buf.ensure_headroom(extra + crate::wire::ethernet::HEADER_LEN)
            .map_err(|_| DropReason::BufferPlanning)?;
        buf.insert_gap(rh_offset, extra)
            .map_err(|_| DropReason::BufferPlanning)?;
    } else if new_len < old_len {
        buf.remove_range(rh_offset, old_len - new_len)
            .map_err(|_| DropReason::BufferPlanning)?;
    }
    let pkt = buf.data_mut();
    rpl::emit_compressed(
        &mut pkt[rh_offset..rh_offset + new_len],
        next_header,
        sl as u8,
        addrs,
        &new_da,
    );
    let new_plen = (plen + new_len - old_len) as u16;
    let mut p = ipv6::Packet::new_unchecked(&mut pkt[..ipv6::HEADER_LEN]);
    p.set_payload_len(new_plen);
    p.set_dst_addr(new_da);
    Ok(RplAction::Forward)
}
