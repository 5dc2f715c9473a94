//! RPL Source Routing Header processing at an intermediate node (RFC 6554 §4.2), with Linux's checks
//! (docs/references.md §3.4), but without Linux's corruption when the recompressed header is shorter, and with
//! the loop check RFC 6554 §4.2 asks for, which is stricter than Linux's (see [`has_loop`]).

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
    // Loop check, as strict as RFC 6554 §4.2 (docs/hostile.md): everything Linux's third-occurrence check rejects
    // is rejected too.
    if has_loop(addrs, is_local) {
        // Linux has decremented Segments Left in the packet by then: the error quotes it so (tests/hostile,
        // `rpl-loop-linux`, compared byte for byte).
        buf.data_mut()[rh_offset + 3] = sl as u8;
        return Ok(RplAction::ParamProblem {
            pointer: 0,
            reason: DropReason::RplLoop,
        });
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

/// RFC 6554 §4.2 loop detection: the header holds two addresses of this node separated by at least one address
/// that is not. (The RFC: "If such addresses appear more than once and are separated by at least one address not
/// assigned to that router, the router MUST drop the packet".)
///
/// Linux checks less: it only reports a local address preceded by a non-local one after two earlier local
/// addresses, so `[local, x, local]` passes there and needs a third occurrence (docs/references.md §3.4). Every
/// list Linux rejects is rejected here too (its third occurrence is separated from the first two); lwt6 also
/// rejects the lists with exactly two separated occurrences. Adjacent local addresses are not a loop for either.
/// Documented in docs/hostile.md and docs/linux-compat.md.
pub fn has_loop(addrs: &[Ipv6Addr], is_local: &dyn Fn(&Ipv6Addr) -> bool) -> bool {
    let mut seen_local = false;
    let mut gap = false;
    for a in addrs {
        if is_local(a) {
            if seen_local && gap {
                return true;
            }
            seen_local = true;
            gap = false;
        } else if seen_local {
            gap = true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ethernet;

    const L: Ipv6Addr = Ipv6Addr::new(0xfd00, 1, 0, 0, 0, 0, 0, 2);
    const L2: Ipv6Addr = Ipv6Addr::new(0xfd00, 2, 0, 0, 0, 0, 0, 1);
    const X: Ipv6Addr = Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 5);
    const Y: Ipv6Addr = Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 6);

    fn local(a: &Ipv6Addr) -> bool {
        *a == L || *a == L2
    }

    #[test]
    fn loop_rule_is_rfc_6554() {
        // Two local addresses separated by a non-local one: a loop (Linux lets this one pass).
        assert!(has_loop(&[L2, X, L2], &local));
        assert!(has_loop(&[X, L, Y, L2], &local));
        // Linux's example: the third occurrence; caught at the second already.
        assert!(has_loop(&[L, X, L, Y, L, Y], &local));
        // Adjacent, single, or none: no loop.
        assert!(!has_loop(&[L, L2, X], &local));
        assert!(!has_loop(&[X, L, L2, Y], &local));
        assert!(!has_loop(&[X, L2, Y], &local));
        assert!(!has_loop(&[X, Y], &local));
        assert!(!has_loop(&[], &local));
    }

    /// A packet for L whose RPL header (hand-built per RFC 6554 §3: CmprI 0, CmprE 0, Pad 0) lists `addrs`.
    fn packet(addrs: &[Ipv6Addr], sl: u8) -> PacketBuf {
        let rh_len = 8 + 16 * addrs.len();
        let mut p = vec![0u8; 40 + rh_len];
        p[0] = 0x60;
        p[4..6].copy_from_slice(&(rh_len as u16).to_be_bytes());
        p[6] = proto::ROUTING;
        p[7] = 64;
        p[8..24].copy_from_slice(&X.octets());
        p[24..40].copy_from_slice(&L.octets());
        // Next Header 59, Hdr Ext Len 2n, type 3, SL, CmprI/CmprE 0, Pad/reserved 0.
        p[40..46].copy_from_slice(&[59, (2 * addrs.len()) as u8, 3, sl, 0, 0]);
        for (i, a) in addrs.iter().enumerate() {
            p[48 + 16 * i..64 + 16 * i].copy_from_slice(&a.octets());
        }
        let mut b = PacketBuf::new(ethernet::HEADER_LEN + 64);
        b.load(&p, 64);
        b
    }

    #[test]
    fn two_separated_local_addresses_get_parameter_problem_pointer_0() {
        let mut b = packet(&[L2, X, L2], 2);
        assert_eq!(
            process(&mut b, 40, &local),
            Ok(RplAction::ParamProblem {
                pointer: 0,
                reason: DropReason::RplLoop
            })
        );
        // Segments Left decremented in the packet the error quotes, as Linux has it by then.
        assert_eq!(b.data()[43], 1);
        // Adjacent local addresses are forwarded: DA := the next address (i = n - SL = 2 - 0 with SL 1).
        let mut b = packet(&[L2, L, Y], 1);
        assert_eq!(process(&mut b, 40, &local), Ok(RplAction::Forward));
        assert_eq!(&b.data()[24..40], &Y.octets());
    }
}
