//! Forwarding plans: what the fast path writes in front of a packet whose route needs nothing packet-specific
//! beyond a few fields. A plan is built per route when the snapshot is built (by the route's tunnel, through the
//! snapshot), stored beside the FIB, and applied by the worker: a template copy plus the patch its kind names.

use crate::buffer::PacketBuf;
use crate::fib::{DevId, TunnelId};
use crate::wire::{ethernet, ipv6, proto};
use std::net::Ipv6Addr;

pub mod selected;
use selected::SelectedSources;
pub use selected::TakeOver;

/// Ethernet plus IPv6 header: every plan's frame starts with them (the template's, or the template's Ethernet
/// header and the received IPv6 header), so patches work on a fixed-size array.
pub const FRONT: usize = ethernet::HEADER_LEN + ipv6::HEADER_LEN;

/// What a plan's per-packet patch reads from the received packet, parsed once by the fast path.
#[derive(Debug, Clone, Copy)]
pub struct Received<'a> {
    /// The received IPv6 packet (header first).
    pub ip: &'a [u8],
    /// Its destination address.
    pub dst: &'a [u8; 16],
    /// The outgoing Payload Length field.
    pub payload_len: [u8; 2],
    /// The outgoing hop limit (the received one less one).
    pub hop_limit: u8,
}

/// A scratch buffer for building a plan's template with a tunnel's own general-path code, so that the template
/// is byte-identical to what the general path writes: `room` bytes of headroom, and a 40-byte IPv6 header with
/// destination `dst` and next header 59 (no next header) when `with_header`, else nothing.
pub(crate) fn scratch(with_header: Option<Ipv6Addr>, room: usize) -> PacketBuf {
    let mut b = PacketBuf::new(0);
    let mut hdr = [0u8; ipv6::HEADER_LEN];
    let len = match with_header {
        Some(dst) => {
            hdr[0] = 0x60;
            hdr[6] = proto::NONE;
            hdr[24..40].copy_from_slice(&dst.octets());
            ipv6::HEADER_LEN
        }
        None => 0,
    };
    b.load(&hdr[..len], room);
    b
}

/// The IPv6 header of a plan that inserts an extension header after it (seg6 inline, rpl, ioam6 inline): the
/// received header's first 24 bytes (version to source; the template's slot keeps the new destination), the new
/// payload length, `next_header`, the decremented hop limit.
#[inline(always)]
pub(crate) fn patch_inserting_header(hdr: &mut [u8; FRONT], rx: &Received<'_>, next_header: u8) {
    const E: usize = ethernet::HEADER_LEN;
    hdr[E..E + 24].copy_from_slice(&rx.ip[..24]);
    hdr[E + 4..E + 6].copy_from_slice(&rx.payload_len);
    hdr[E + 6] = next_header;
    hdr[E + 7] = rx.hop_limit;
}

/// What a [`Plan`] does to a packet after copying its template: which fields come from the received packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanKind {
    /// Plain forwarding. Template: the Ethernet header.
    Forward,
    /// seg6 H.Encaps / H.Encaps.Red (RFC 8986 §5.1, §5.2). Template: Ethernet header, outer IPv6 header, SRH
    /// (HMAC included: source and segments are fixed). Per packet: traffic class and flow label, payload
    /// length, hop limit.
    Seg6Encap,
    /// seg6 `inline` without HMAC (Linux's H.Insert). Template: Ethernet header, an IPv6 header slot whose
    /// destination is already the first SID, the SRH. Per packet: the rest of the received IPv6 header, next
    /// header 43, payload length, hop limit, the SRH's next header and Segment List\[0\] (the original
    /// destination).
    Seg6Inline,
    /// ioam6 `inline` inserting on every packet. Template: Ethernet header, an IPv6 header slot, the Hop-by-Hop
    /// header with the pre-allocated trace. Per packet: the received IPv6 header with next header 0 and the new
    /// payload length, the Hop-by-Hop next header, then this node's data (RFC 9197 §4.4) in the trace.
    IoamInline,
    /// ioam6 `encap` (and `auto`, which is encap for forwarded packets) inserting on every packet. Template:
    /// Ethernet header, outer IPv6 header (source, destination = tundst, next header 0), Hop-by-Hop header with
    /// next header 41. Per packet: the outer header's first 8 bytes from the inner one, then this node's data.
    IoamEncap,
    /// rpl (RFC 6554 with Linux's compression). Template: Ethernet header and an IPv6 header slot whose
    /// destination is the first segment. Per packet: the rest of the IPv6 header and the compressed SRH, whose
    /// length depends on the original destination (CmprE).
    Rpl,
    /// seg6local End without flavours or counters (RFC 8986 §4.1). No template of its own: per packet the SRH
    /// (right after the IPv6 header, without TLVs) is advanced, and the packet goes out by the plain-forwarding
    /// plan of the next SID's route (a second lookup).
    End,
    /// seg6local End.X (RFC 8986 §4.2) without flavours or counters. Template: the Ethernet header to nh6. Per
    /// packet: Segments Left and the destination from the SRH, the hop limit.
    EndX,
    /// seg6local End.DX6 to a given nh6 (RFC 8986 §4.5), without counters. Template: the Ethernet header to nh6.
    /// Per packet: the inner IPv6 packet (behind the outer header, or an SRH with Segments Left 0 and no TLVs)
    /// goes behind it, with its hop limit decremented.
    EndDx6,
    /// rpl on a route whose every destination compresses alike against the first segment (the first bit where
    /// they differ lies inside the route's prefix, so CmprE is the same for all). Template: Ethernet header, IPv6
    /// header slot, the whole compressed header as the general path writes it for the prefix's own address. Per
    /// packet: the rest of the IPv6 header, the routing header's next header and the original destination's last
    /// 16 − CmprE bytes at [`Plan::rpl_tail`].
    RplFixed,
}

impl PlanKind {
    /// Whether the template holds an IPv6 header slot that the received header fills: the received IPv6
    /// header then moves to the front and only its payload is loaded behind the template.
    pub fn inserts(self) -> bool {
        matches!(
            self,
            PlanKind::Seg6Inline | PlanKind::IoamInline | PlanKind::Rpl | PlanKind::RplFixed
        )
    }

    /// Whether the plan is a seg6local behaviour's (the packet is processed by this node, then leaves).
    #[inline(always)]
    pub fn is_local(self) -> bool {
        matches!(self, PlanKind::End | PlanKind::EndX | PlanKind::EndDx6)
    }
}

/// A precomputed forwarding plan for a route (VPP calls it an adjacency's rewrite string): everything about the
/// way out that does not depend on the packet, resolved once per FIB snapshot. It is what "plans headroom from the
/// cached output device" means, and the userspace form of Linux's per-tunnel `dst_cache` — without a reference
/// count, since it lives inside the immutable snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Egress interface.
    pub egress: DevId,
    /// Longest IPv6 packet the plan sends: the MTU it must fit as it leaves (route MTU or the device's), capped
    /// at what a Payload Length field describes (40 + 65,535 bytes).
    pub max_len: usize,
    /// Where the bytes put in front of the received packet are (see [`PlanKind`] for what they hold): a range of
    /// the snapshot's [`Templates`].
    pub template: TemplateRef,
    /// What the template holds and what is written per packet.
    pub kind: PlanKind,
    /// Bytes the tunnel adds to the IPv6 packet (0 for [`PlanKind::Forward`]; for [`PlanKind::Rpl`] only the
    /// fixed part is known here, the header length is computed per packet).
    pub growth: usize,
    /// The tunnel applied, if any.
    pub tunnel: Option<TunnelId>,
    /// Device of the route that carries the tunnel (its IOAM interface ids are the egress ids of the trace).
    pub route_dev: Option<DevId>,
    /// Whether one of the router's own addresses lies inside the route's prefix (then a local check is needed).
    pub contains_local: bool,
    /// IOAM plans: this node's data is already in the template; what is written per packet.
    pub ioam: IoamPatch,
    /// IOAM plans of routes that trace only some packets (`freq K/N`, K < N): the way out of the others.
    pub sampled: Option<Sampled>,
    /// [`PlanKind::RplFixed`]: where the original destination's tail goes, from the routing header's start, and
    /// CmprE (how many of its leading bytes are elided).
    pub rpl_tail: (u16, u8),
}

/// The way out of the packets a sampled ioam6 route (`freq K/N`, K < N) does not trace: plain forwarding along
/// the route itself, as Linux's `ioam6_output` hands them to the route's original output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sampled {
    /// The tunnel, whose per-worker packet count decides.
    pub tunnel: u32,
    /// Trace the first `k` of every `n` packets.
    pub k: u32,
    /// See `k`.
    pub n: u32,
    /// Egress of the untraced packets.
    pub egress: u32,
    /// Their longest IPv6 packet (the route's MTU, capped as [`Plan::max_len`]).
    pub max_len: u32,
    /// Their Ethernet header.
    pub eth: [u8; 14],
}

/// A per-packet IOAM field of the inserting node, whose place in the frame is known when the plan is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum IoamField {
    /// The hop limit byte (trace bits 0 and 8).
    #[default]
    HopLimit,
    /// The 16-bit ingress interface id (bit 1).
    IngressId,
    /// The 32-bit ingress interface id (bit 9).
    IngressWide,
    /// Timestamp seconds (bit 2).
    TsSec,
    /// Timestamp sub-seconds (bit 3).
    TsFrac,
}

/// Most per-packet IOAM fields a plan patches; a route with more fills its traces per packet instead.
pub const IOAM_PATCH_MAX: usize = 8;

/// What an IOAM plan writes per packet once its template (which already holds this node's data: node ids, egress
/// ids, namespace data, RemainingLen after the fill) is copied: the fields that depend on the packet, at their
/// offsets in the frame. When `baked` is false the node fills its traces per packet (several options with many
/// per-packet fields, or no IOAM plan at all).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IoamPatch {
    /// Whether the template holds this node's data.
    pub baked: bool,
    /// How many of `ops` are used.
    pub n: u8,
    /// Whether a timestamp is among them.
    pub has_ts: bool,
    /// Offsets from the frame's start (the first `n`).
    pub at: [u16; IOAM_PATCH_MAX],
    /// What goes there.
    pub what: [IoamField; IOAM_PATCH_MAX],
}

/// A template's place in [`Templates`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TemplateRef {
    start: u32,
    len: u32,
}

impl TemplateRef {
    /// Length in bytes.
    pub fn len(self) -> usize {
        self.len as usize
    }

    /// Whether the template is empty.
    pub fn is_empty(self) -> bool {
        self.len == 0
    }

    /// Where it starts in its block.
    pub fn start_offset(self) -> usize {
        self.start as usize
    }
}

/// Every plan's template, packed into one page-aligned block. A template starts on a cache line in the second
/// half of a page (one longer than half a page starts on a page): packet data sits in the first half of its page
/// (rx buffers are page-aligned and headrooms are well under 2 KiB), so a template and the packet it is copied
/// into are at least ~1.5 KiB apart modulo 4 KiB, and the copy's loads never wait on its own stores to the same
/// 4 KiB offset (4K aliasing). Packed, a million plans cost their bytes rounded to 64, not a page each.
#[derive(Debug, Clone, Default)]
pub struct Templates {
    /// The allocation; the block starts page-aligned at `base`; rebased [`TemplateRef`]s count from index 0.
    bytes: Vec<u8>,
    base: usize,
}

/// Builds [`Templates`], deduplicating identical templates; kept beside them so that templates can be added
/// later (a route added to a published configuration).
#[derive(Debug, Default, Clone)]
pub struct TemplatesBuilder {
    bytes: Vec<u8>,
    /// Templates placed, by a hash of their bytes (the bytes themselves are compared in `bytes`, not kept twice;
    /// a template whose hash is taken by another is placed again, not shared: rare, and only space).
    seen: std::collections::HashMap<u64, TemplateRef, crate::fib::FastBuild>,
    /// Plans using each placed template, by its start (a template is shared by identical plans).
    users: std::collections::HashMap<u32, u32, crate::fib::FastBuild>,
    /// Starts of released templates' space, by the space's length (the template's rounded up to a cache line),
    /// reused by the next template of that rounded length.
    free: std::collections::BTreeMap<usize, Vec<u32>>,
    /// The templates holding the node's tunnel source at [`SOURCE_AT`] ([`TemplatesBuilder::add_sourced`]), by
    /// start, with the device their routes leave by ([`NO_DEV`] for none). Their source now is the one of the
    /// group of `selected` that holds them: [`TemplatesBuilder::set_source`] rewrites them in place, and so does
    /// [`TemplatesBuilder::take_over`] those a new address wins, in the block alone, moving them to the new
    /// address's group (one store per template: `bytes` keep the source a template was placed with, stale once
    /// rewritten, and nothing else is written per template). [`TemplatesBuilder::materialize`] writes each
    /// group's source into a new block.
    sourced: std::collections::HashMap<u32, u32, crate::fib::FastBuild>,
    /// Sourced templates placed, by a hash of their bytes but the source (which `set_source` changes in place)
    /// and of their route device: they share only among themselves, and only through one device.
    seen_sourced: std::collections::HashMap<u64, TemplateRef, crate::fib::FastBuild>,
    /// The sourced templates by (route device, source), sorted by destination.
    selected: SelectedSources,
}

/// [`TemplatesBuilder::sourced`]'s device for a route without one.
const NO_DEV: u32 = u32::MAX;

/// A route device as [`TemplatesBuilder::sourced`] keeps it.
fn dev_code(dev: Option<DevId>) -> u32 {
    dev.and_then(|d| u32::try_from(d).ok()).unwrap_or(NO_DEV)
}

/// The route device [`dev_code`] kept.
fn dev_of(code: u32) -> Option<DevId> {
    (code != NO_DEV).then_some(code as DevId)
}

/// Where a seg6 encap template's outer source address is: behind the Ethernet header, 8 bytes into the IPv6
/// header.
pub const SOURCE_AT: usize = ethernet::HEADER_LEN + 8;

/// The hash a template is found by: its bytes, but the source for a sourced one (`set_source` changes it in
/// place), which counts its route device instead (`sourced`: [`dev_code`]).
fn template_hash(t: &[u8], sourced: Option<u32>) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    let h = BuildHasherDefault::<crate::fib::FastHasher>::default();
    match sourced {
        Some(dev) => {
            let end = (SOURCE_AT + 16).min(t.len());
            h.hash_one((&t[..SOURCE_AT.min(t.len())], &t[end..], dev))
        }
        None => h.hash_one(t),
    }
}

/// The address at `at` in `bytes`.
fn address_at(bytes: &[u8], at: usize) -> Ipv6Addr {
    let mut o = [0u8; 16];
    o.copy_from_slice(&bytes[at..at + 16]);
    Ipv6Addr::from(o)
}

/// The outer destination of the sourced template at `start` in `bytes` (it never changes in place).
fn destination(bytes: &[u8], start: u32) -> Ipv6Addr {
    address_at(bytes, start as usize + SOURCE_AT + 16)
}

/// Writes `src` as the outer source of the sourced template at `start` in the block `t` (the builder keeps it in
/// [`TemplatesBuilder::sourced`]).
fn write_source(t: &mut Templates, start: u32, src: std::net::Ipv6Addr) {
    let at = t.base + start as usize + SOURCE_AT;
    t.bytes[at..at + 16].copy_from_slice(&src.octets());
}

/// The space a template of `len` bytes takes: its length rounded up to a cache line.
fn slot_len(len: usize) -> usize {
    len.div_ceil(64) * 64
}

impl TemplatesBuilder {
    /// Places `t` (or finds an identical one already placed).
    pub fn add(&mut self, t: &[u8]) -> TemplateRef {
        self.add_in(t, None)
    }

    /// Places seg6 encap template `t`, whose outer source at [`SOURCE_AT`] is the node's (the tunnel names none
    /// of its own and signs nothing with it) and whose outer destination follows it, for a route leaving by
    /// `dev`, among the templates [`TemplatesBuilder::set_source`] and [`TemplatesBuilder::take_over`] rewrite
    /// (or finds an identical one already there for the same device).
    pub fn add_sourced(&mut self, t: &[u8], dev: Option<DevId>) -> TemplateRef {
        debug_assert!(t.len() >= SOURCE_AT + 32);
        self.add_in(t, Some(dev_code(dev)))
    }

    /// Writes `src` as the outer source of every sourced template (as [`TemplatesBuilder::add_sourced`] placed
    /// them) into the block `t` and keeps it here: one store per distinct template, no plan made again. Their
    /// sharing stays right: their hashes leave the source out.
    pub fn set_source(&mut self, t: &mut Templates, src: std::net::Ipv6Addr) {
        for &start in self.sourced.keys() {
            write_source(t, start, src);
        }
        self.selected.set_all(src);
    }

    /// If template `r` (as [`TemplatesBuilder::add_sourced`] returned it) is sourced: its outer source and how
    /// many plans use it.
    pub fn sourced_use(&self, r: TemplateRef) -> Option<(std::net::Ipv6Addr, u32)> {
        let src = self.source_now(r.start)?;
        Some((src, *self.users.get(&r.start)?))
    }

    /// Writes `src` as the outer source of sourced template `r` alone into the block `t`, and keeps it here.
    pub fn set_source_of(&mut self, t: &mut Templates, r: TemplateRef, src: std::net::Ipv6Addr) {
        if let (Some(&dev), Some(old)) = (self.sourced.get(&r.start), self.source_now(r.start)) {
            let dst = destination(&self.bytes, r.start);
            self.selected.remove(dev_of(dev), old, dst, r.start);
            write_source(t, r.start, src);
            self.selected.insert(dev_of(dev), src, dst, r.start);
        }
    }

    /// After address `a` came: the sourced templates whose selection it takes over (`select(dev, dst)`: the
    /// source selected now for a route leaving by `dev` towards `dst`, `a` counted) get `a` as their source, in
    /// the block `t` and kept here, without a look at the others (see [`selected`]'s text). Every sourced template must
    /// hold the source `select` gave it before `a` came (no node tunnel source): else the answer is
    /// [`TakeOver::Stale`] (some of them may have been rewritten, rightly). `classes`: whether the selection's
    /// scope, label and candidate set are constant over a prefix of destinations
    /// ([`crate::hop::saddr::classes_constant_on`]; passed in: plans do not import the hop layer).
    pub fn take_over(
        &mut self,
        t: &mut Templates,
        a: Ipv6Addr,
        select: impl Fn(Option<DevId>, &Ipv6Addr) -> Option<Ipv6Addr>,
        classes: fn(u128, u32) -> bool,
    ) -> TakeOver {
        self.selected
            .take_over(a, select, classes, |start| write_source(t, start, a))
    }

    /// The source sourced template `start` holds now: its group's.
    fn source_now(&self, start: u32) -> Option<Ipv6Addr> {
        let dev = *self.sourced.get(&start)?;
        self.selected
            .source_of(dev_of(dev), destination(&self.bytes, start), start)
    }

    /// How many sourced templates there are (for tests).
    pub fn sourced_len(&self) -> usize {
        self.sourced.len()
    }

    /// Places `t` (`sourced`: the route device of a sourced template, [`dev_code`]).
    fn add_in(&mut self, t: &[u8], sourced: Option<u32>) -> TemplateRef {
        let hash = template_hash(t, sourced);
        let seen = if sourced.is_some() {
            &self.seen_sourced
        } else {
            &self.seen
        };
        if let Some(r) = seen.get(&hash) {
            let start = r.start as usize;
            let placed = &self.bytes[start..start + r.len as usize];
            let same = match (sourced, self.sourced.get(&r.start)) {
                // The bytes but the source (stale here once rewritten), which is compared with its group's.
                (Some(dev), Some(&d)) => {
                    let (a, b) = (SOURCE_AT, SOURCE_AT + 16);
                    placed.len() == t.len()
                        && placed[..a] == t[..a]
                        && placed[b..] == t[b..]
                        && d == dev
                        && self.source_now(r.start) == Some(address_at(t, a))
                }
                (None, None) => placed == t,
                _ => false,
            };
            if same {
                *self.users.entry(r.start).or_insert(0) += 1;
                return *r;
            }
        }
        // A free slot of the same size class whose bytes exist: one released at the end of the block may be
        // shorter than `t` (a size class spans a cache line of lengths).
        let have = self.bytes.len();
        let fits = |s: &u32| *s as usize + t.len() <= have;
        if let Some(start) = self
            .free
            .get_mut(&slot_len(t.len()))
            .and_then(|v| v.iter().rposition(fits).map(|i| v.swap_remove(i)))
        {
            let at = start as usize;
            self.bytes[at..at + t.len()].copy_from_slice(t);
            let r = TemplateRef {
                start,
                len: t.len() as u32,
            };
            self.note_placed(hash, r, sourced);
            return r;
        }
        const PAGE: usize = crate::buffer::PAGE;
        const LINE: usize = 64;
        let mut at = self.bytes.len().div_ceil(LINE) * LINE;
        if t.len() > PAGE / 2 {
            at = at.div_ceil(PAGE) * PAGE;
        } else {
            // In the second half of a page, not crossing into the next page.
            if at % PAGE < PAGE / 2 {
                at = at - at % PAGE + PAGE / 2;
            }
            if at % PAGE + t.len() > PAGE {
                at = at.div_ceil(PAGE) * PAGE + PAGE / 2;
            }
        }
        self.bytes.resize(at, 0);
        self.bytes.extend_from_slice(t);
        let r = TemplateRef {
            start: at as u32,
            len: t.len() as u32,
        };
        self.note_placed(hash, r, sourced);
        r
    }

    /// Files template `r`, just placed with `hash`, with one user.
    fn note_placed(&mut self, hash: u64, r: TemplateRef, sourced: Option<u32>) {
        if let Some(dev) = sourced {
            // The newest takes the hash: while the sources change one tunnel at a time (a new address), the
            // templates with the new source are the ones the next tunnels share.
            self.seen_sourced.insert(hash, r);
            // Just placed: the bytes hold its source.
            let src = address_at(&self.bytes, r.start as usize + SOURCE_AT);
            self.sourced.insert(r.start, dev);
            let dst = destination(&self.bytes, r.start);
            self.selected.insert(dev_of(dev), src, dst, r.start);
        } else {
            self.seen.entry(hash).or_insert(r);
        }
        self.users.insert(r.start, 1);
    }

    /// A plan no longer uses template `r` (as [`TemplatesBuilder::add`] returned it): when no plan does, its
    /// space goes to the next template of its rounded length.
    pub fn release(&mut self, r: TemplateRef) {
        let Some(n) = self.users.get_mut(&r.start) else {
            return;
        };
        *n -= 1;
        if *n > 0 {
            return;
        }
        self.users.remove(&r.start);
        let start = r.start as usize;
        let bytes = &self.bytes[start..start + r.len as usize];
        let src = self.source_now(r.start);
        let sourced = self.sourced.remove(&r.start).inspect(|&dev| {
            if let Some(src) = src {
                let dst = destination(&self.bytes, r.start);
                self.selected.remove(dev_of(dev), src, dst, r.start);
            }
        });
        let hash = template_hash(bytes, sourced);
        let seen = if sourced.is_some() {
            &mut self.seen_sourced
        } else {
            &mut self.seen
        };
        if seen.get(&hash) == Some(&r) {
            seen.remove(&hash);
        }
        self.free
            .entry(slot_len(r.len()))
            .or_default()
            .push(r.start);
    }

    /// Copies template `r` (placed before the block's copy was last brought up to date: reused space) into `t`.
    pub fn write_back(&self, t: &mut Templates, r: TemplateRef) {
        let (start, end) = (r.start as usize, (r.start + r.len) as usize);
        t.bytes[t.base + start..t.base + end].copy_from_slice(&self.bytes[start..end]);
        // A template shared with plans already there may have had its source rewritten since it was placed.
        if let Some(src) = self.source_now(r.start) {
            write_source(t, r.start, src);
        }
    }

    /// The packed block, page-aligned, with room for `spare` more bytes. The [`TemplateRef`]s handed out so far
    /// must be passed through [`Templates::rebase`] before use.
    pub fn materialize(&self, spare: usize) -> Templates {
        let cap = (self.bytes.len() + spare).div_ceil(crate::buffer::PAGE) * crate::buffer::PAGE;
        let mut mem = crate::buffer::Aligned::zeroed_at(cap, crate::buffer::PAGE, 0);
        mem.as_mut_slice()[..self.bytes.len()].copy_from_slice(&self.bytes);
        let (bytes, base) = mem.into_parts();
        let mut t = Templates { bytes, base };
        // The sources rewritten since the templates were placed.
        self.selected
            .for_each(|start, src| write_source(&mut t, start, src));
        t
    }

    /// Bytes placed so far (padding included).
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether nothing is placed.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Copies what was placed after the first `from` bytes into `t` (which must have the room: see
    /// [`Templates::room`]).
    pub fn sync(&self, t: &mut Templates, from: usize) {
        let to = self.bytes.len();
        t.bytes[t.base + from..t.base + to].copy_from_slice(&self.bytes[from..]);
    }
}

impl Templates {
    /// The bytes of a template.
    #[inline(always)]
    pub fn get(&self, r: TemplateRef) -> &[u8] {
        let start = r.start as usize;
        &self.bytes[start..start + r.len as usize]
    }

    /// A reference from the builder, made to count from the start of the allocation (where the page-aligned
    /// block begins is only known once it is allocated): one addition at build time, none per packet.
    pub fn rebase(&self, r: TemplateRef) -> TemplateRef {
        TemplateRef {
            start: r.start + self.base as u32,
            len: r.len,
        }
    }

    /// The builder's reference for a rebased one (the inverse of [`Templates::rebase`]).
    pub fn unbase(&self, r: TemplateRef) -> TemplateRef {
        TemplateRef {
            start: r.start - self.base as u32,
            len: r.len,
        }
    }

    /// Whether a builder that has placed `len` bytes fits without a new block.
    pub fn room(&self, len: usize) -> bool {
        self.base + len <= self.bytes.len()
    }

    /// Moves a rebased reference from `old`'s block to this one (after the block was made anew, bigger).
    pub fn move_from(&self, old: &Templates, r: TemplateRef) -> TemplateRef {
        TemplateRef {
            start: r.start - old.base as u32 + self.base as u32,
            len: r.len,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A template released at the end of the block leaves a slot whose size class holds longer templates than
    /// the bytes behind it: a longer one of that class goes after it, not over the end.
    #[test]
    fn a_slot_at_the_end_takes_no_longer_template() {
        let mut b = TemplatesBuilder::default();
        let short = b.add(&[1u8; 10]);
        b.release(short);
        let long = b.add(&[2u8; 40]);
        assert!(long.start_offset() + long.len() <= b.len());
        let t = b.materialize(0);
        assert_eq!(t.get(t.rebase(long)), &[2u8; 40][..]);
    }

    #[test]
    fn templates_sit_in_the_second_half_of_a_page_on_a_cache_line_and_are_shared() {
        let mut b = TemplatesBuilder::default();
        let mut refs = Vec::new();
        for n in [14usize, 54, 118, 390, 2000, 14, 3000, 1000] {
            let t: Vec<u8> = (0..n).map(|i| (i * 7 + n) as u8).collect();
            refs.push((t.clone(), b.add(&t)));
        }
        let again = b.add(&refs[0].0);
        assert_eq!(again, refs[0].1, "an identical template is placed once");
        let tpl = b.materialize(0);
        let refs: Vec<_> = refs.into_iter().map(|(t, r)| (t, tpl.rebase(r))).collect();
        let base = tpl.bytes[tpl.base..].as_ptr() as usize;
        assert_eq!(base % crate::buffer::PAGE, 0);
        for (t, r) in &refs {
            assert_eq!(tpl.get(*r), &t[..]);
            let at = (tpl.get(*r).as_ptr() as usize) % crate::buffer::PAGE;
            assert_eq!(at % 64, 0, "cache line");
            if t.len() <= crate::buffer::PAGE / 2 {
                assert!(at >= crate::buffer::PAGE / 2, "second half: {at}");
                assert!(at + t.len() <= crate::buffer::PAGE, "within the page");
            } else {
                assert_eq!(at, 0, "a long template starts on a page");
            }
        }
    }
}
