//! The `rpl` tunnel: inserts a compressed RPL Source Routing Header (RFC 6554) with Linux's semantics
//! (docs/references.md §3.3): DA := first segment, the original DA travels as the last address, SL = N.

use crate::buffer::PacketBuf;
use crate::copy::copy_bytes;
use crate::plan::{FRONT, Received, patch_inserting_header};
use crate::spec::RplEncap;
use crate::stats::DropReason;
use crate::wire::{ipv6, proto, rpl};
use std::net::Ipv6Addr;

/// Most addresses an RPL tunnel may carry (the configuration refuses more): the header's limit.
pub const MAX_SEGS: usize = rpl::MAX_ADDRESSES;

/// An installed rpl tunnel.
#[derive(Debug, Clone)]
pub struct RplTunnel {
    /// Segments in configuration order.
    pub segs: Vec<Ipv6Addr>,
    /// CmprI (RFC 6554 §3): fixed per tunnel, since addresses 1..n-1 are the configured segments after the
    /// first and the elided prefix comes from the first segment (the new destination).
    cmpr_i: u8,
    /// Addresses 1..n-1 as they go on the wire: the configured segments after the first, each without its first
    /// CmprI bytes (fixed per tunnel, so written with one copy per packet).
    middle: Vec<u8>,
}

impl RplTunnel {
    /// Builds the tunnel from its configuration.
    pub fn new(cfg: &RplEncap) -> Self {
        let segs = cfg.segs.clone();
        // Linux's rule (docs/references.md §3.2), as `rpl::compression` computes it; the last address (the original
        // destination) does not take part in CmprI.
        let cmpr_i = match segs.split_first() {
            Some((first, rest)) => {
                let mut probe = rest.to_vec();
                probe.push(*first);
                rpl::compression(&probe, first).0
            }
            None => rpl::MAX_CMPR,
        };
        let middle = segs
            .iter()
            .skip(1)
            .flat_map(|a| a.octets()[usize::from(cmpr_i)..].to_vec())
            .collect();
        RplTunnel {
            segs,
            cmpr_i,
            middle,
        }
    }

    /// The tunnel as `ip -6 route show` prints it (`encap rpl segs N [ A B ... ]`).
    pub fn iproute2(&self) -> String {
        let segs: Vec<String> = self.segs.iter().map(|a| a.to_string()).collect();
        format!("encap rpl segs {} [ {} ]", segs.len(), segs.join(" "))
    }

    /// Upper bound of the inserted header: N uncompressed addresses (8 + 16N bytes).
    pub fn max_overhead(&self) -> usize {
        8 + 16 * self.segs.len()
    }

    /// CmprE for a packet to `orig_da`: the common prefix of `orig_da` and the first segment, capped at 15.
    fn cmpr_e(&self, orig_da: &Ipv6Addr) -> u8 {
        let x = u128::from(*orig_da) ^ u128::from(self.segs[0]);
        ((x.leading_zeros() / 8) as u8).min(rpl::MAX_CMPR)
    }

    /// (address bytes, pad) of the header for a packet whose CmprE is `cmpr_e`.
    fn seglen_pad(&self, cmpr_e: u8) -> (usize, usize) {
        let n = self.segs.len();
        let seglen = (n - 1) * (16 - usize::from(self.cmpr_i)) + (16 - usize::from(cmpr_e));
        (seglen, (8 - seglen % 8) % 8)
    }

    /// Length of the header inserted into a packet to `orig_da` (compressed against the first segment).
    pub fn header_len(&self, orig_da: Ipv6Addr) -> usize {
        let (seglen, pad) = self.seglen_pad(self.cmpr_e(&orig_da));
        rpl::FIXED_LEN + seglen + pad
    }

    /// Writes the compressed header for a packet to `orig_da` into `out[..header_len(orig_da)]`: the same bytes
    /// as [`rpl::emit_compressed`] of (segments after the first, `orig_da`) against the first segment, with
    /// Segments Left = N, without building the address list. Returns the length.
    pub fn emit(&self, out: &mut [u8], next_header: u8, orig_da: &Ipv6Addr) -> usize {
        let ce = self.cmpr_e(orig_da);
        let (seglen, pad) = self.seglen_pad(ce);
        let total = rpl::FIXED_LEN + seglen + pad;
        let out = &mut out[..total];
        // RFC 6554 §3: Next Header, Hdr Ext Len, Routing Type, Segments Left, CmprI|CmprE, Pad|Reserved.
        out[..8].copy_from_slice(&[
            next_header,
            ((seglen + pad) / 8) as u8,
            rpl::ROUTING_TYPE,
            self.segs.len() as u8,
            (self.cmpr_i << 4) | ce,
            (pad as u8) << 4,
            0,
            0,
        ]);
        let off = rpl::FIXED_LEN + self.middle.len();
        copy_bytes(&mut out[rpl::FIXED_LEN..off], &self.middle);
        let ce = usize::from(ce);
        out[off..off + 16 - ce].copy_from_slice(&orig_da.octets()[ce..]);
        out[off + 16 - ce..].fill(0);
        total
    }

    /// Inserts the header after the IPv6 header (after Hop-by-Hop if present). Returns the header length.
    pub fn insert(&self, buf: &mut PacketBuf) -> Result<usize, DropReason> {
        let orig_da = ipv6::Packet::new_unchecked(buf.data()).dst_addr();
        let len = self.header_len(orig_da);
        let at = super::insertion_offset(buf.data());
        let plen = u16::from_be_bytes([buf.data()[4], buf.data()[5]]) as usize;
        if plen + len > u16::MAX as usize {
            return Err(DropReason::TooBig);
        }
        buf.insert_gap(at, len)
            .map_err(|_| DropReason::BufferPlanning)?;
        let pkt = buf.data_mut();
        let old_nh = super::replace_next_header_before(pkt, at, proto::ROUTING);
        self.emit(&mut pkt[at..at + len], old_nh, &orig_da);
        super::grow_payload_len(pkt, len)?;
        ipv6::Packet::new_unchecked(&mut pkt[..ipv6::HEADER_LEN]).set_dst_addr(self.segs[0]);
        Ok(len)
    }
}

/// The fast path's share of the rpl tunnel.
impl RplTunnel {
    /// When every destination inside `prefix` (of `prefix_len` bits) has the same CmprE against the first segment
    /// — the first bit where the prefix and the segment differ lies inside the prefix — the routing header the
    /// general path writes for the prefix's own address (the destination's tail then differs per packet), the
    /// offset of that tail in it, and CmprE.
    pub(crate) fn fixed_header(
        &self,
        prefix: Ipv6Addr,
        prefix_len: u8,
    ) -> Option<(Vec<u8>, u16, u8)> {
        let first_diff = (u128::from(prefix) ^ u128::from(*self.segs.first()?)).leading_zeros();
        if first_diff >= u32::from(prefix_len) {
            return None;
        }
        let ce = self.cmpr_e(&prefix);
        let mut rh = vec![0; self.header_len(prefix)];
        self.emit(&mut rh, 0, &prefix);
        Some((rh, (rpl::FIXED_LEN + self.middle.len()) as u16, ce))
    }

    /// The template: an IPv6 header slot whose destination is the first segment (the header itself depends on
    /// the packet's destination through CmprE and is written per packet).
    pub(crate) fn template(&self) -> [u8; ipv6::HEADER_LEN] {
        let mut slot = [0u8; ipv6::HEADER_LEN];
        slot[24..40].copy_from_slice(&self.segs[0].octets());
        slot
    }

    /// Per packet: the IPv6 header fields ([`patch_inserting_header`]) and the compressed header in `rh` (the
    /// [`RplTunnel::header_len`] bytes behind the IPv6 header).
    #[inline(always)]
    pub(crate) fn patch(&self, hdr: &mut [u8; FRONT], rh: &mut [u8], rx: &Received<'_>) {
        patch_inserting_header(hdr, rx, proto::ROUTING);
        self.emit(rh, rx.ip[6], &Ipv6Addr::from(*rx.dst));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn addr(v: u128) -> Ipv6Addr {
        Ipv6Addr::from(v)
    }

    proptest! {
        /// The direct emitter writes what the general RFC 6554 encoder (checked against the kernel in
        /// tests/kernel/test_rpl.py) writes for the same address list, for related and unrelated addresses.
        #[test]
        fn emit_matches_the_general_encoder(
            base in any::<u128>(),
            tails in prop::collection::vec((0u32..=128, any::<u128>()), 1..20),
            orig in (0u32..=128, any::<u128>()),
            nh in any::<u8>(),
        ) {
            // Each address shares the top `keep` bits with `base`.
            let mk = |(keep, r): (u32, u128)| {
                let mask = if keep == 0 { 0 } else { u128::MAX << (128 - keep) };
                addr((base & mask) | (r & !mask))
            };
            let segs: Vec<Ipv6Addr> = tails.into_iter().map(mk).collect();
            let orig = mk(orig);
            let t = RplTunnel::new(&RplEncap { segs: segs.clone() });
            let mut list = segs[1..].to_vec();
            list.push(orig);
            let want_len = rpl::compressed_len(&list, &segs[0]);
            let mut want = vec![0xaa; want_len];
            rpl::emit_compressed(&mut want, nh, segs.len() as u8, &list, &segs[0]);
            prop_assert_eq!(t.header_len(orig), want_len);
            let mut got = vec![0x55; want_len + 3];
            prop_assert_eq!(t.emit(&mut got, nh, &orig), want_len);
            prop_assert_eq!(&got[..want_len], &want[..]);
        }
    }
}
