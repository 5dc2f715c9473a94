//! The `ioam6` tunnel: inserts a pre-allocated IOAM trace in a Hop-by-Hop option, inline or in an outer
//! IPv6 header, for the first K of every N packets (behaviour spec §2.1–§2.3).

use crate::buffer::PacketBuf;
use crate::spec::{Ioam6Encap, IoamMode};
use crate::stats::DropReason;
use crate::wire::ioam::{self, TraceHeader};
use crate::wire::{ipv6, proto};
use std::net::Ipv6Addr;

/// An installed ioam6 tunnel.
#[derive(Debug, Clone)]
pub struct Ioam6Tunnel {
    /// Mode.
    pub mode: IoamMode,
    /// Tunnel source (encap).
    pub tunsrc: Option<Ipv6Addr>,
    /// Tunnel destination (encap).
    pub tundst: Option<Ipv6Addr>,
    /// Insert into the first `freq_k` packets of every `freq_n`.
    pub freq_k: u32,
    /// See `freq_k`.
    pub freq_n: u32,
    /// The trace header to insert (NodeLen recomputed from the type, as Linux does).
    pub trace: TraceHeader,
    /// Length of the inserted Hop-by-Hop header.
    pub hbh_len: usize,
}

/// Offset of the IOAM option inside the Hop-by-Hop header Linux builds (after nh, len and a 2-byte PadN).
pub const OPTION_OFFSET_IN_HBH: usize = 4;

impl Ioam6Tunnel {
    /// Builds the tunnel from its configuration.
    pub fn new(cfg: &Ioam6Encap) -> Self {
        let remaining_len = (cfg.size / 4) as u8;
        let trace = TraceHeader {
            namespace: cfg.namespace,
            node_len: ioam::node_len_for_type(cfg.trace_type),
            flags: 0,
            remaining_len,
            trace_type: cfg.trace_type,
        };
        Ioam6Tunnel {
            mode: cfg.mode,
            tunsrc: cfg.tunsrc,
            tundst: cfg.tundst,
            freq_k: cfg.freq_k,
            freq_n: cfg.freq_n,
            trace,
            hbh_len: ioam::lwt_hbh_len(remaining_len),
        }
    }

    /// The most bytes added: the Hop-by-Hop header, plus an outer IPv6 header unless the mode is inline.
    pub fn max_overhead(&self) -> usize {
        match self.mode {
            IoamMode::Inline => self.hbh_len,
            IoamMode::Encap | IoamMode::Auto => ipv6::HEADER_LEN + self.hbh_len,
        }
    }

    /// Linux's frequency rule: with `counter` the number of packets seen before this one, insert when
    /// `counter % n < k`. Advances the counter.
    pub fn should_insert(&self, counter: &mut u64) -> bool {
        let c = *counter;
        *counter = counter.wrapping_add(1);
        (c % u64::from(self.freq_n)) < u64::from(self.freq_k)
    }

    /// The mode to use for a packet: `Auto` is inline for locally generated packets and encap for forwarded
    /// ones; lwt6 only forwards, so `Auto` means encap.
    pub fn effective_mode(&self) -> IoamMode {
        match self.mode {
            IoamMode::Auto => IoamMode::Encap,
            m => m,
        }
    }

    /// Inline insertion. Returns the offset of the IOAM option from the IPv6 header, or `None` when the packet
    /// already has a Hop-by-Hop header (Linux then skips insertion).
    pub fn insert_inline(&self, buf: &mut PacketBuf) -> Result<Option<usize>, DropReason> {
        if buf.data()[6] == proto::HOPOPTS {
            return Ok(None);
        }
        let plen = u16::from_be_bytes([buf.data()[4], buf.data()[5]]) as usize;
        if plen + self.hbh_len > u16::MAX as usize {
            return Err(DropReason::TooBig);
        }
        let old_nh = buf.data()[6];
        let gap = buf
            .insert_gap(ipv6::HEADER_LEN, self.hbh_len)
            .map_err(|_| DropReason::BufferPlanning)?;
        ioam::emit_lwt_hbh(gap, old_nh, &self.trace);
        let pkt = buf.data_mut();
        pkt[6] = proto::HOPOPTS;
        super::grow_payload_len(pkt, self.hbh_len)?;
        Ok(Some(ipv6::HEADER_LEN + OPTION_OFFSET_IN_HBH))
    }

    /// Encapsulation: the outer header is a byte copy of the inner one with next header 0, the new payload
    /// length, DA := tundst and SA := `src`; the Hop-by-Hop header follows with next header 41.
    /// Returns the offset of the IOAM option.
    pub fn push_encap(&self, buf: &mut PacketBuf, src: Ipv6Addr) -> Result<usize, DropReason> {
        let dst = self.tundst.ok_or(DropReason::NoRoute)?;
        let payload_len = buf.len() + self.hbh_len;
        if payload_len > u16::MAX as usize {
            return Err(DropReason::TooBig);
        }
        let mut inner = [0u8; ipv6::HEADER_LEN];
        inner.copy_from_slice(&buf.data()[..ipv6::HEADER_LEN]);
        let front = buf
            .push_front(ipv6::HEADER_LEN + self.hbh_len)
            .map_err(|_| DropReason::BufferPlanning)?;
        front[..ipv6::HEADER_LEN].copy_from_slice(&inner);
        let mut outer = ipv6::Packet::new_unchecked(&mut front[..ipv6::HEADER_LEN]);
        outer.set_next_header(proto::HOPOPTS);
        outer.set_payload_len(payload_len as u16);
        outer.set_dst_addr(dst);
        outer.set_src_addr(src);
        ioam::emit_lwt_hbh(&mut front[ipv6::HEADER_LEN..], proto::IPV6, &self.trace);
        Ok(ipv6::HEADER_LEN + OPTION_OFFSET_IN_HBH)
    }
}
