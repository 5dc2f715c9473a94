//! The `ioam6` tunnel: inserts a pre-allocated IOAM trace in a Hop-by-Hop option, inline or in an outer
//! IPv6 header, for the first K of every N packets (docs/references.md §2.1–§2.3); lwt6's extensions
//! (docs/ioam.md): several traces, a Direct Export option, merging into an existing Hop-by-Hop header.

use crate::buffer::PacketBuf;
use crate::plan::{FRONT, Received, scratch};
use crate::spec::{Ioam6Encap, IoamDexSpec, IoamMode};
use crate::stats::DropReason;
use crate::wire::ioam::{self, TraceHeader};
use crate::wire::{ethernet, hbh, ipv6, proto};
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
    /// The trace headers to insert, in order (NodeLen recomputed from the type, as Linux does). Linux inserts
    /// exactly one; several, or none with a DEX option, are lwt6 extensions (docs/ioam.md).
    pub traces: Vec<TraceHeader>,
    /// The Direct Export option inserted after the traces (RFC 9326; an lwt6 extension).
    pub dex: Option<IoamDexSpec>,
    /// Where each trace option starts (its type byte) from the start of the Hop-by-Hop header, in order.
    pub opt_offsets: Vec<usize>,
    /// Where the DEX option's Sequence Number is, from the start of the Hop-by-Hop header (written per packet).
    pub dex_seq_at: Option<usize>,
    /// Where the DEX option starts, from the start of the Hop-by-Hop header.
    pub dex_at: Option<usize>,
    /// Length of the inserted Hop-by-Hop header.
    pub hbh_len: usize,
    /// `hbh merge`: inline mode adds the options into a Hop-by-Hop header the packet already has (the first Linux
    /// IOAM implementation's head and tail padding, docs/ioam.md), where Linux skips the insertion.
    pub hbh_merge: bool,
    /// The IOAM options as inserted (every option of the Hop-by-Hop header after its PadN(0), without the final
    /// padding): what [`Ioam6Tunnel::insert_inline`] appends to an existing header.
    pub opts: Box<[u8]>,
}

/// Offset of the IOAM option inside the Hop-by-Hop header Linux builds (after nh, len and a 2-byte PadN).
pub const OPTION_OFFSET_IN_HBH: usize = 4;

impl Ioam6Tunnel {
    /// Builds the tunnel from its configuration.
    pub fn new(cfg: &Ioam6Encap) -> Self {
        let traces: Vec<TraceHeader> = cfg
            .traces
            .iter()
            .map(|t| TraceHeader {
                namespace: t.namespace,
                node_len: ioam::node_len_for_type(t.trace_type),
                flags: 0,
                remaining_len: (t.size / 4) as u8,
                trace_type: t.trace_type,
            })
            .collect();
        // The options one after the other, as in the header (each a multiple of 4 long: each starts 4n).
        let mut opt_offsets = vec![0; traces.len()];
        let mut opts = Vec::new();
        if !traces.is_empty() {
            let mut scratch = vec![0; ioam::hbh_traces_len(traces.iter().map(|h| h.remaining_len))];
            ioam::emit_hbh_traces(&mut scratch, 0, &traces, &mut opt_offsets);
            let last = *opt_offsets.last().expect("one trace or more");
            opts.extend(&scratch[OPTION_OFFSET_IN_HBH..last + 2 + usize::from(scratch[last + 1])]);
        }
        let (mut dex_at, mut dex_seq_at) = (None, None);
        if let Some(d) = &cfg.dex {
            let at = opts.len();
            opts.resize(at + ioam::dex_len(d.flow_id.is_some(), d.seq), 0);
            let (_, seq) =
                ioam::emit_dex(&mut opts[at..], d.namespace, d.trace_type, d.flow_id, d.seq);
            dex_at = Some(OPTION_OFFSET_IN_HBH + at);
            dex_seq_at = seq.map(|s| OPTION_OFFSET_IN_HBH + at + s);
        }
        Ioam6Tunnel {
            mode: cfg.mode,
            tunsrc: cfg.tunsrc,
            tundst: cfg.tundst,
            freq_k: cfg.freq_k,
            freq_n: cfg.freq_n,
            traces,
            dex: cfg.dex,
            hbh_len: ioam::hbh_options_len(opts.len()),
            opts: opts.into(),
            opt_offsets,
            dex_at,
            dex_seq_at,
            hbh_merge: cfg.hbh_merge,
        }
    }

    /// The most bytes added: the Hop-by-Hop header, plus an outer IPv6 header unless the mode is inline.
    pub fn max_overhead(&self) -> usize {
        match self.mode {
            IoamMode::Inline => self.hbh_len,
            IoamMode::Encap | IoamMode::Auto => ipv6::HEADER_LEN + self.hbh_len,
        }
    }

    /// The tunnel as `ip -6 route show` prints it (`encap ioam6 freq K/N mode M [tunsrc] [tundst] trace prealloc
    /// type T ns N size S`).
    pub fn iproute2(&self) -> String {
        let mode = match self.mode {
            IoamMode::Inline => "inline",
            IoamMode::Encap => "encap",
            IoamMode::Auto => "auto",
        };
        let mut x = format!(
            "encap ioam6 freq {}/{} mode {mode}",
            self.freq_k, self.freq_n
        );
        if let Some(s) = self.tunsrc {
            x += &format!(" tunsrc {s}");
        }
        if let Some(d) = self.tundst {
            x += &format!(" tundst {d}");
        }
        if self.hbh_merge {
            x += " hbh merge";
        }
        for t in &self.traces {
            x += &format!(
                " trace prealloc type {:#08x} ns {} size {}",
                t.trace_type,
                t.namespace,
                t.remaining_len as usize * 4
            );
        }
        if let Some(d) = &self.dex {
            x += &format!(" dex type {:#08x} ns {}", d.trace_type, d.namespace);
            if let Some(f) = d.flow_id {
                x += &format!(" flowid {f}");
            }
            if d.seq {
                x += " seq";
            }
        }
        x
    }

    /// Writes the Hop-by-Hop header with every option into `out` (exactly [`Ioam6Tunnel::hbh_len`] bytes): with one
    /// trace, the header Linux builds.
    fn emit_hbh(&self, out: &mut [u8], next_header: u8) {
        ioam::emit_hbh_options(out, next_header, &self.opts);
    }

    /// The DEX Sequence Number of the packet that advanced the route's frequency count to `count` (RFC 9326
    /// §3.2: 0 for the first packet that carries the option, then one more for each): how many of the packets
    /// before it the frequency rule chose. Wraps at 2^32.
    pub fn dex_sequence(&self, count: u64) -> u32 {
        let (k, n) = (u64::from(self.freq_k), u64::from(self.freq_n));
        let before = count.wrapping_sub(1);
        ((before / n) * k + (before % n).min(k)) as u32
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

    /// The most non-padding options a Hop-by-Hop header may hold for Linux to accept it (its default
    /// `net.ipv6.max_hbh_opts_number`): a merge that would make more is not done.
    pub const MAX_HBH_OPTIONS: usize = 8;

    /// How many bytes inline insertion adds to the IPv6 packet `pkt`, or `None` when it inserts nothing: the
    /// packet already has a Hop-by-Hop header and the route does not merge (Linux skips the insertion), or the
    /// merged header would hold more than [`Ioam6Tunnel::MAX_HBH_OPTIONS`] options or exceed 2,048 octets, or
    /// the existing header is malformed.
    pub fn inline_growth(&self, pkt: &[u8]) -> Option<usize> {
        if pkt[6] != proto::HOPOPTS {
            return Some(self.hbh_len);
        }
        self.merge_layout(pkt).map(|(old, a)| a.len - old)
    }

    /// For a packet with a Hop-by-Hop header and a route with `hbh merge`: the existing header's length and where
    /// the options go in it ([`ioam::append_layout`] after the last option that is not padding).
    fn merge_layout(&self, pkt: &[u8]) -> Option<(usize, ioam::Appended)> {
        if !self.hbh_merge {
            return None;
        }
        let old = (usize::from(*pkt.get(ipv6::HEADER_LEN + 1)?) + 1) * 8;
        let hbh = pkt.get(ipv6::HEADER_LEN..ipv6::HEADER_LEN + old)?;
        let (keep, options) = hbh::append_point(hbh).ok()?;
        let a = ioam::append_layout(keep, self.opts.len());
        let ours = self.traces.len() + usize::from(self.dex.is_some());
        (options + ours <= Self::MAX_HBH_OPTIONS && a.len <= hbh::MAX_LEN).then_some((old, a))
    }

    /// Inline insertion. Returns the offset from the IPv6 header at which the options are found at
    /// [`Ioam6Tunnel::opt_offsets`] (the new Hop-by-Hop header's own offset, 40, unless the options were merged
    /// into an existing header), or `None` when nothing was inserted ([`Ioam6Tunnel::inline_growth`]).
    ///
    /// Into an existing header (`hbh merge`), as the first Linux IOAM implementation does (docs/ioam.md): the
    /// header is kept up to the end of its last option that is not padding; then padding to the next 4n offset
    /// (RFC 9486 §3), the options, and padding to a multiple of 8 octets (RFC 8200 §4.3) take the place of its
    /// final padding. Every option already there stays where it was.
    pub fn insert_inline(&self, buf: &mut PacketBuf) -> Result<Option<usize>, DropReason> {
        if buf.data()[6] == proto::HOPOPTS {
            return self.merge_inline(buf);
        }
        let plen = u16::from_be_bytes([buf.data()[4], buf.data()[5]]) as usize;
        if plen + self.hbh_len > u16::MAX as usize {
            return Err(DropReason::TooBig);
        }
        let old_nh = buf.data()[6];
        let gap = buf
            .insert_gap(ipv6::HEADER_LEN, self.hbh_len)
            .map_err(|_| DropReason::BufferPlanning)?;
        self.emit_hbh(gap, old_nh);
        let pkt = buf.data_mut();
        pkt[6] = proto::HOPOPTS;
        super::grow_payload_len(pkt, self.hbh_len)?;
        Ok(Some(ipv6::HEADER_LEN))
    }

    /// [`Ioam6Tunnel::insert_inline`] into an existing Hop-by-Hop header.
    fn merge_inline(&self, buf: &mut PacketBuf) -> Result<Option<usize>, DropReason> {
        let Some((old, a)) = self.merge_layout(buf.data()) else {
            return Ok(None);
        };
        let growth = a.len - old;
        super::grow_payload_len(buf.data_mut(), growth)?;
        // The bytes in front of the kept part of the header move `growth` bytes towards the front; the old final
        // padding, behind the gap, is written over.
        let keep_end = ipv6::HEADER_LEN + a.opts_at - a.head_pad;
        buf.insert_gap(keep_end, growth)
            .map_err(|_| DropReason::BufferPlanning)?;
        let hbh = &mut buf.data_mut()[ipv6::HEADER_LEN..ipv6::HEADER_LEN + a.len];
        hbh[1] = (a.len / 8 - 1) as u8;
        hbh::write_padding(&mut hbh[a.opts_at - a.head_pad..], a.head_pad);
        let opts_end = a.opts_at + self.opts.len();
        hbh[a.opts_at..opts_end].copy_from_slice(&self.opts);
        hbh::write_padding(&mut hbh[opts_end..], a.tail_pad);
        Ok(Some(ipv6::HEADER_LEN + a.opts_at - OPTION_OFFSET_IN_HBH))
    }

    /// Encapsulation: the outer header is a byte copy of the inner one with next header 0, the new payload
    /// length, DA := tundst and SA := `src`; the Hop-by-Hop header follows with next header 41.
    /// Returns the offset of the Hop-by-Hop header (its options at [`Ioam6Tunnel::opt_offsets`] from there).
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
        self.emit_hbh(
            &mut front[ipv6::HEADER_LEN..ipv6::HEADER_LEN + self.hbh_len],
            proto::IPV6,
        );
        Ok(ipv6::HEADER_LEN)
    }
}

/// The fast path's share of the ioam6 tunnel: templates for routes that insert on every packet, and the fields
/// patched per packet before the node fills its own data into the option.
impl Ioam6Tunnel {
    /// Whether every packet gets a trace (`freq` K/K): only then can a plan insert unconditionally.
    pub(crate) fn inserts_always(&self) -> bool {
        self.freq_k == self.freq_n
    }

    /// The inline template: an IPv6 header slot and the Hop-by-Hop header with the pre-allocated trace, written
    /// by [`Ioam6Tunnel::insert_inline`] itself.
    pub(crate) fn inline_template(&self) -> Option<Vec<u8>> {
        // A DEX route exports from the general path: no plan.
        if self.dex.is_some() {
            return None;
        }
        let mut b = scratch(Some(Ipv6Addr::UNSPECIFIED), self.hbh_len);
        self.insert_inline(&mut b).ok()??;
        Some(b.data().to_vec())
    }

    /// The encap template: the outer IPv6 header (source `src`, destination `tundst`, next header 0) and the
    /// Hop-by-Hop header with next header 41, written by [`Ioam6Tunnel::push_encap`] itself.
    pub(crate) fn encap_template(&self, src: Ipv6Addr) -> Option<Vec<u8>> {
        if self.dex.is_some() {
            return None;
        }
        let growth = ipv6::HEADER_LEN + self.hbh_len;
        let mut b = scratch(Some(Ipv6Addr::UNSPECIFIED), growth);
        self.push_encap(&mut b, src).ok()?;
        // Without the placeholder inner header.
        Some(b.data()[..growth].to_vec())
    }

    /// Per packet on an inline template: the received IPv6 header with next header 0, the new payload length and
    /// the decremented hop limit; the Hop-by-Hop header's next header (first byte of `hbh`). Returns where the
    /// Hop-by-Hop header starts in the frame.
    #[inline(always)]
    pub(crate) fn patch_inline(hdr: &mut [u8; FRONT], hbh: &mut [u8], rx: &Received<'_>) -> usize {
        const E: usize = ethernet::HEADER_LEN;
        hdr[E..].copy_from_slice(&rx.ip[..ipv6::HEADER_LEN]);
        hdr[E + 4..E + 6].copy_from_slice(&rx.payload_len);
        hdr[E + 6] = proto::HOPOPTS;
        hdr[E + 7] = rx.hop_limit;
        hbh[0] = rx.ip[6];
        FRONT
    }

    /// Per packet on an encap template of `template_len` bytes: the outer header copies the inner one's first
    /// word and its decremented hop limit, with the new payload length; the inner header (behind the template,
    /// in `after`, the bytes behind the outer IPv6 header) gets the decremented hop limit too. Returns where the
    /// Hop-by-Hop header starts in the frame.
    #[inline(always)]
    pub(crate) fn patch_encap(
        hdr: &mut [u8; FRONT],
        after: &mut [u8],
        rx: &Received<'_>,
        template_len: usize,
    ) -> usize {
        const E: usize = ethernet::HEADER_LEN;
        hdr[E..E + 4].copy_from_slice(&rx.ip[..4]);
        hdr[E + 4..E + 6].copy_from_slice(&rx.payload_len);
        hdr[E + 7] = rx.hop_limit;
        after[template_len - FRONT + 7] = rx.hop_limit;
        FRONT
    }
}
