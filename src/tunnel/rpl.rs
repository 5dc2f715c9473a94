//! The `rpl` tunnel: inserts a compressed RPL Source Routing Header (RFC 6554) with Linux's semantics
//! (behaviour spec §3.3): DA := first segment, the original DA travels as the last address, SL = N.

use crate::buffer::PacketBuf;
use crate::config::RplEncap;
use crate::stats::DropReason;
use crate::wire::{ipv6, proto, rpl};
use std::net::Ipv6Addr;

/// Most addresses an RPL tunnel may carry (the configuration refuses more).
pub const MAX_SEGS: usize = 127;

/// An installed rpl tunnel.
#[derive(Debug, Clone)]
pub struct RplTunnel {
    /// Segments in configuration order.
    pub segs: Vec<Ipv6Addr>,
}

impl RplTunnel {
    /// Builds the tunnel from its configuration.
    pub fn new(cfg: &RplEncap) -> Self {
        RplTunnel {
            segs: cfg.segs.clone(),
        }
    }

    /// Upper bound of the inserted header: N uncompressed addresses (8 + 16N bytes).
    pub fn max_overhead(&self) -> usize {
        8 + 16 * self.segs.len()
    }

    /// The addresses the header carries for a packet to `orig_da` (segments after the first, then `orig_da`),
    /// in a stack array, with their count.
    fn addresses(&self, orig_da: Ipv6Addr) -> ([Ipv6Addr; MAX_SEGS], usize) {
        let n = self.segs.len();
        let mut addrs = [Ipv6Addr::UNSPECIFIED; MAX_SEGS];
        addrs[..n - 1].copy_from_slice(&self.segs[1..]);
        addrs[n - 1] = orig_da;
        (addrs, n)
    }

    /// Length of the header inserted into a packet to `orig_da` (compressed against the first segment).
    pub fn header_len(&self, orig_da: Ipv6Addr) -> usize {
        let (addrs, n) = self.addresses(orig_da);
        rpl::compressed_len(&addrs[..n], &self.segs[0])
    }

    /// Inserts the header after the IPv6 header (after Hop-by-Hop if present). Returns the header length.
    pub fn insert(&self, buf: &mut PacketBuf) -> Result<usize, DropReason> {
        let orig_da = ipv6::Packet::new_unchecked(buf.data()).dst_addr();
        let (addrs, n) = self.addresses(orig_da);
        let addrs = &addrs[..n];
        let daddr = self.segs[0];
        let len = rpl::compressed_len(addrs, &daddr);
        let at = super::insertion_offset(buf.data());
        let plen = u16::from_be_bytes([buf.data()[4], buf.data()[5]]) as usize;
        if plen + len > u16::MAX as usize {
            return Err(DropReason::TooBig);
        }
        buf.insert_gap(at, len)
            .map_err(|_| DropReason::BufferPlanning)?;
        let pkt = buf.data_mut();
        let old_nh = super::replace_next_header_before(pkt, at, proto::ROUTING);
        rpl::emit_compressed(&mut pkt[at..at + len], old_nh, n as u8, addrs, &daddr);
        super::grow_payload_len(pkt, len)?;
        ipv6::Packet::new_unchecked(&mut pkt[..ipv6::HEADER_LEN]).set_dst_addr(daddr);
        Ok(len)
    }
}
