//! The `seg6` tunnel: SRv6 H.Insert (inline), H.Encaps (encap, l2encap) and H.Encaps.Red (encap.red,
//! l2encap.red), built byte for byte as Linux `seg6_iptunnel.c` does (docs/references.md §1.1–§1.6).

use crate::buffer::PacketBuf;
use crate::plan::{FRONT, Received, patch_inserting_header, scratch};
use crate::spec::{Seg6Encap, Seg6Mode};
use crate::stats::DropReason;
use crate::wire::ipv6::{self, Ipv6Repr};
use crate::wire::srh::{self, HmacAlgo, SrhRepr};
use crate::wire::{ethernet, proto};
use std::net::Ipv6Addr;

/// An HMAC key as the data path needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HmacSecret {
    /// Algorithm.
    pub algo: HmacAlgo,
    /// Secret bytes.
    pub secret: Vec<u8>,
}

/// An installed seg6 tunnel.
#[derive(Debug, Clone)]
pub struct Seg6Tunnel {
    /// Mode.
    pub mode: Seg6Mode,
    /// The SRH as configured (iproute2 layout, next header 0): what Linux stores in the route.
    configured: Vec<u8>,
    /// The SRH that goes on the wire: the configured one, or its reduced form for the `.red` modes
    /// (empty when the reduced form has no SRH at all).
    wire: Vec<u8>,
    /// The first SID: the outer destination address.
    pub first_sid: Ipv6Addr,
    /// Segments in configuration order.
    pub segs: Vec<Ipv6Addr>,
    /// HMAC key id, when the SRH carries an HMAC TLV.
    pub hmac_key: Option<u32>,
    /// Per-route tunnel source.
    pub tunsrc: Option<Ipv6Addr>,
    /// Offset of the HMAC TLV in `wire` and in `configured` (computed once, not per packet).
    hmac_at_wire: Option<usize>,
    hmac_at_configured: Option<usize>,
}

/// Per-packet values of the outer IPv6 header, resolved by the router.
#[derive(Debug, Clone, Copy)]
pub struct Outer {
    /// Source address.
    pub src: Ipv6Addr,
    /// Traffic class.
    pub traffic_class: u8,
    /// Flow label.
    pub flow_label: u32,
    /// Hop limit (before the forwarding decrement).
    pub hop_limit: u8,
    /// What the SRH (or the outer header) says comes next: 41, 4 or 143.
    pub inner_proto: u8,
}

impl Seg6Tunnel {
    /// Builds the tunnel from its configuration.
    pub fn new(cfg: &Seg6Encap) -> Self {
        let inline = cfg.mode == Seg6Mode::Inline;
        let repr = SrhRepr::iproute2(&cfg.segs, inline, cfg.hmac);
        let mut configured = vec![0u8; repr.buffer_len()];
        repr.emit(&mut configured);
        let reduced = matches!(cfg.mode, Seg6Mode::EncapRed | Seg6Mode::L2EncapRed);
        let wire = if reduced {
            reduce(&repr)
        } else {
            configured.clone()
        };
        Seg6Tunnel {
            mode: cfg.mode,
            hmac_at_wire: if wire.is_empty() {
                None
            } else {
                srh::hmac_tlv_offset(&wire)
            },
            hmac_at_configured: srh::hmac_tlv_offset(&configured),
            configured,
            wire,
            first_sid: cfg.segs[0],
            segs: cfg.segs.clone(),
            hmac_key: cfg.hmac,
            tunsrc: cfg.tunsrc,
        }
    }

    /// Bytes added to a packet: the SRH for inline, outer IPv6 header plus the on-wire SRH otherwise
    /// (for the L2 modes the received Ethernet header is carried too, but it is already in the packet).
    pub fn overhead(&self) -> usize {
        match self.mode {
            Seg6Mode::Inline => self.configured.len(),
            _ => ipv6::HEADER_LEN + self.wire.len(),
        }
    }

    /// Linux's `lwt->headroom` for this route (docs/references.md §1.7): `(hdrlen+1)*8`, plus 40 for encap and
    /// encap.red (the unreduced SRH: an overestimate by 16 bytes for encap.red), 0 for the L2 modes.
    pub fn linux_headroom(&self) -> usize {
        match self.mode {
            Seg6Mode::Inline => self.configured.len(),
            Seg6Mode::Encap | Seg6Mode::EncapRed => ipv6::HEADER_LEN + self.configured.len(),
            Seg6Mode::L2Encap | Seg6Mode::L2EncapRed => 0,
        }
    }

    /// The SRH bytes that go on the wire (possibly empty for `.red` with one SID).
    pub fn wire_srh(&self) -> &[u8] {
        &self.wire
    }

    /// The SRH as configured, which `inline` mode inserts (next header and Segment List\[0\] are set per packet),
    /// and whether it carries an HMAC TLV (then it also depends on the packet's source and destination).
    pub fn inline_srh(&self) -> (&[u8], bool) {
        (&self.configured, self.hmac_at_configured.is_some())
    }

    /// The tunnel as `ip -6 route show` prints it (`encap seg6 mode M segs N [ A B ... ]`, then `hmac`, `tunsrc`).
    pub fn iproute2(&self) -> String {
        let mut segs: Vec<String> = self.segs.iter().map(|a| a.to_string()).collect();
        // The SRH as stored: inline mode keeps a slot for the original destination (Segment List[0]).
        if self.mode == Seg6Mode::Inline {
            segs.push("::".into());
        }
        let mut x = format!(
            "encap seg6 mode {} segs {} [ {} ]",
            self.mode.name(),
            segs.len(),
            segs.join(" ")
        );
        if let Some(k) = self.hmac_key {
            // iproute2 prints the key id in upper-case hex (`%llX`).
            x += &format!(" hmac {k:X}");
        }
        if let Some(src) = self.tunsrc {
            x += &format!(" tunsrc {src}");
        }
        x
    }

    /// Whether the mode carries the whole received Ethernet frame.
    pub fn is_l2(&self) -> bool {
        matches!(self.mode, Seg6Mode::L2Encap | Seg6Mode::L2EncapRed)
    }

    /// H.Encaps / H.Encaps.Red: pushes the outer IPv6 header and the SRH in front of the data (which is the
    /// inner packet, or the inner Ethernet frame for the L2 modes). The headroom must already be there.
    pub fn push_encap(
        &self,
        buf: &mut PacketBuf,
        outer: &Outer,
        hmac: Option<&HmacSecret>,
    ) -> Result<(), DropReason> {
        let srh_len = self.wire.len();
        let payload_len = buf.len() + srh_len;
        if payload_len > u16::MAX as usize {
            return Err(DropReason::TooBig);
        }
        let hmac_at = self.hmac_at_wire;
        let front = buf
            .push_front(ipv6::HEADER_LEN + srh_len)
            .map_err(|_| DropReason::BufferPlanning)?;
        Ipv6Repr {
            traffic_class: outer.traffic_class,
            flow_label: outer.flow_label,
            payload_len: payload_len as u16,
            next_header: if srh_len > 0 {
                proto::ROUTING
            } else {
                outer.inner_proto
            },
            hop_limit: outer.hop_limit,
            src: outer.src,
            dst: self.first_sid,
        }
        .emit(&mut front[..ipv6::HEADER_LEN]);
        if srh_len > 0 {
            let srh_bytes = &mut front[ipv6::HEADER_LEN..];
            srh_bytes.copy_from_slice(&self.wire);
            srh_bytes[0] = outer.inner_proto;
            if let Some(off) = hmac_at {
                sign(srh_bytes, off, &outer.src, self.hmac_key, hmac)?;
            }
        }
        Ok(())
    }

    /// H.Insert as Linux's inline mode: the configured SRH is inserted after the IPv6 header (after the
    /// Hop-by-Hop header if there is one), Segment List\[0\] := original DA, DA := first SID. Source, traffic class,
    /// flow label and hop limit are untouched. The headroom must already be there.
    pub fn insert_inline(
        &self,
        buf: &mut PacketBuf,
        hmac: Option<&HmacSecret>,
    ) -> Result<(), DropReason> {
        let n = self.configured.len();
        let at = super::insertion_offset(buf.data());
        let plen = u16::from_be_bytes([buf.data()[4], buf.data()[5]]) as usize;
        if plen + n > u16::MAX as usize {
            return Err(DropReason::TooBig);
        }
        let hmac_at = self.hmac_at_configured;
        buf.insert_gap(at, n)
            .map_err(|_| DropReason::BufferPlanning)?
            .copy_from_slice(&self.configured);
        let pkt = buf.data_mut();
        let old_nh = super::replace_next_header_before(pkt, at, proto::ROUTING);
        super::grow_payload_len(pkt, n)?;
        let (hdr, rest) = pkt.split_at_mut(at);
        let srh_bytes = &mut rest[..n];
        srh_bytes[0] = old_nh;
        // Segment List[0] := the original destination; DA := Segment List[Last Entry].
        srh_bytes[8..24].copy_from_slice(&hdr[24..40]);
        let last_entry = srh_bytes[4] as usize;
        let first = 8 + 16 * last_entry;
        hdr[24..40].copy_from_slice(&srh_bytes[first..first + 16]);
        if let Some(off) = hmac_at {
            let src = Ipv6Addr::from(<[u8; 16]>::try_from(&hdr[8..24]).expect("16 bytes"));
            sign(srh_bytes, off, &src, self.hmac_key, hmac)?;
        }
        Ok(())
    }
}

/// The fast path's share of the seg6 tunnel: the templates its plans copy and the fields patched per packet.
impl Seg6Tunnel {
    /// The H.Encaps / H.Encaps.Red template (outer IPv6 header with `src`, flow label and hop limit 0, then the
    /// SRH, HMAC included since source and segments are fixed), written by [`Seg6Tunnel::push_encap`] itself.
    /// `None` when it cannot be built (an HMAC key that is missing, an HMAC that cannot be computed).
    pub(crate) fn encap_template(
        &self,
        src: Ipv6Addr,
        hmac: Option<&HmacSecret>,
    ) -> Option<Vec<u8>> {
        let growth = ipv6::HEADER_LEN + self.wire.len();
        let mut b = scratch(None, growth);
        let outer = Outer {
            src,
            traffic_class: 0,
            flow_label: 0,
            hop_limit: 0,
            inner_proto: proto::IPV6,
        };
        self.push_encap(&mut b, &outer, hmac).ok()?;
        Some(b.data().to_vec())
    }

    /// The inline (H.Insert) template: an IPv6 header slot whose destination is already the first SID, then the
    /// configured SRH, written by [`Seg6Tunnel::insert_inline`] itself. `None` with an HMAC TLV, which depends on
    /// each packet's source and destination.
    pub(crate) fn inline_template(&self) -> Option<Vec<u8>> {
        if self.hmac_at_configured.is_some() {
            return None;
        }
        let mut b = scratch(Some(Ipv6Addr::UNSPECIFIED), self.configured.len());
        self.insert_inline(&mut b, None).ok()?;
        Some(b.data().to_vec())
    }

    /// Per packet on an encap template: version, the inner traffic class and flow label kept as
    /// `first_word_mask` says (`seg6_flowlabel` 0 keeps both, -1 zeroes the flow label), the payload length and
    /// the inner hop limit, decremented by forwarding.
    #[inline(always)]
    pub(crate) fn patch_encap(hdr: &mut [u8; FRONT], rx: &Received<'_>, first_word_mask: u32) {
        const E: usize = ethernet::HEADER_LEN;
        let first = u32::from_be_bytes([rx.ip[0], rx.ip[1], rx.ip[2], rx.ip[3]]) & first_word_mask;
        hdr[E..E + 4].copy_from_slice(&first.to_be_bytes());
        hdr[E + 4..E + 6].copy_from_slice(&rx.payload_len);
        hdr[E + 7] = rx.hop_limit;
    }

    /// Per packet on an inline template: the IPv6 header fields ([`patch_inserting_header`]) and in the SRH
    /// (`srh`, the bytes behind the IPv6 header) the next header and Segment List\[0\], the original destination.
    #[inline(always)]
    pub(crate) fn patch_inline(hdr: &mut [u8; FRONT], srh: &mut [u8], rx: &Received<'_>) {
        patch_inserting_header(hdr, rx, proto::ROUTING);
        srh[0] = rx.ip[6];
        srh[8..24].copy_from_slice(rx.dst);
    }
}

/// Writes the HMAC into the TLV at `off` of `srh_bytes` (HMAC field zeroed first, as Linux does).
fn sign(
    srh_bytes: &mut [u8],
    off: usize,
    src: &Ipv6Addr,
    key_id: Option<u32>,
    key: Option<&HmacSecret>,
) -> Result<(), DropReason> {
    let key = key.ok_or(DropReason::HmacKeyMissing)?;
    let key_id = key_id.ok_or(DropReason::HmacKeyMissing)?;
    srh_bytes[off + 8..off + 40].fill(0);
    let mac = srh::compute_hmac(key.algo, &key.secret, src, srh_bytes, key_id)
        .map_err(|_| DropReason::HmacTooLong)?;
    srh_bytes[off + 8..off + 40].copy_from_slice(&mac);
    Ok(())
}

/// The reduced SRH of H.Encaps.Red as Linux builds it (docs/references.md §1.4, ENCAP_RED): with Last Entry F > 0
/// drop Segment List[F] (it travels only in the DA), Last Entry := F-1, Segments Left unchanged, TLVs kept;
/// with F == 0 and no HMAC there is no SRH at all; with F == 0 and HMAC the full SRH is kept.
fn reduce(full: &SrhRepr) -> Vec<u8> {
    let f = full.last_entry as usize;
    let has_hmac = full.flags & srh::FLAG_HMAC != 0;
    if f == 0 {
        if !has_hmac {
            return Vec::new();
        }
        let mut v = vec![0u8; full.buffer_len()];
        full.emit(&mut v);
        return v;
    }
    let mut red = full.clone();
    red.segments.truncate(f);
    red.last_entry = (f - 1) as u8;
    let mut v = vec![0u8; red.buffer_len()];
    red.emit(&mut v);
    v
}

/// lwt6's flow label for `net.ipv6.seg6_flowlabel = 1`. Linux hashes with a per-boot random seed, which no one
/// can reproduce; lwt6 uses a stable, documented hash instead: 32-bit FNV-1a over the inner flow key, folded to
/// 20 bits (`(h >> 20) ^ h) & 0xfffff`). The key is, for IPv6: source, destination, and the flow label if
/// non-zero, else next header and the first 4 bytes of the upper layer (ports); for IPv4: source, destination,
/// protocol and the first 4 bytes after the header; for anything else: the first 64 bytes.
pub fn flow_hash(key_parts: &[&[u8]]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for part in key_parts {
        for &b in *part {
            h ^= b as u32;
            h = h.wrapping_mul(0x0100_0193);
        }
    }
    ((h >> 20) ^ h) & ipv6::FLOW_LABEL_MASK
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(mode: Seg6Mode, n: usize, hmac: Option<u32>) -> Seg6Tunnel {
        let segs = (1..=n)
            .map(|i| Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, i as u16))
            .collect();
        Seg6Tunnel::new(&Seg6Encap {
            mode,
            segs,
            hmac,
            tunsrc: None,
        })
    }

    #[test]
    fn overheads_match_linux_arithmetic() {
        // docs/references.md §5.2: encap O = 48 + 16n, encap.red O = 32 + 16n (n >= 2), inline O = 24 + 16n.
        for n in [2usize, 3, 7, 13, 17] {
            assert_eq!(t(Seg6Mode::Encap, n, None).overhead(), 48 + 16 * n);
            assert_eq!(t(Seg6Mode::EncapRed, n, None).overhead(), 32 + 16 * n);
            assert_eq!(t(Seg6Mode::Inline, n, None).overhead(), 24 + 16 * n);
        }
        // encap.red with one SID: no SRH, just the outer header.
        assert_eq!(t(Seg6Mode::EncapRed, 1, None).overhead(), 40);
        // ... unless it carries an HMAC: full SRH (8 + 16 + 40).
        assert_eq!(t(Seg6Mode::EncapRed, 1, Some(7)).overhead(), 40 + 64);
        // Linux MTU headroom (docs/references.md §1.7): encap 2 SIDs 80, encap.red 2 SIDs also 80, inline 2 SIDs 56, l2 0.
        assert_eq!(t(Seg6Mode::Encap, 2, None).linux_headroom(), 80);
        assert_eq!(t(Seg6Mode::EncapRed, 2, None).linux_headroom(), 80);
        assert_eq!(t(Seg6Mode::Inline, 2, None).linux_headroom(), 56);
        assert_eq!(t(Seg6Mode::L2Encap, 2, None).linux_headroom(), 0);
    }

    #[test]
    fn encap_red_three_sids_matches_kernel() {
        // Kernel bytes (docs/references.md §1.4): 3 SIDs -> `29 04 04 02 01 ...`, list [fc00::3, fc00::2].
        let tun = t(Seg6Mode::EncapRed, 3, None);
        let w = tun.wire_srh();
        assert_eq!(&w[1..5], &[0x04, 0x04, 0x02, 0x01]);
        assert_eq!(w.len(), 8 + 32);
        assert_eq!(w[8 + 15], 3);
        assert_eq!(w[24 + 15], 2);
    }

    #[test]
    fn flow_hash_is_20_bits_and_stable() {
        let a = flow_hash(&[b"abc", b"def"]);
        assert_eq!(a, flow_hash(&[b"abcdef"]));
        assert!(a <= 0xfffff);
        // FNV-1a 32 of "a" is 0xe40c292c (published test vector); folded: (0xe40 ^ 0xe40c292c) & 0xfffff.
        assert_eq!(flow_hash(&[b"a"]), (0xe40 ^ 0xe40c_292c) & 0xfffff);
    }
}
