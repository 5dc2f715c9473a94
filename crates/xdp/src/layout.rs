//! The maps' keys and values as `bpf/plan.bpf.c` lays them out (C layout, native byte order for the integers;
//! addresses, MACs and template bytes in wire order). Sizes are asserted here and in the C file.

/// Longest template a plan may carry: Ethernet header, IPv6 header slot and 216 bytes of inserted header (the
/// most `bpf_xdp_adjust_head` can prepend on veth and in `BPF_PROG_TEST_RUN`: 256 bytes less the `xdp_frame`).
pub const TPL_MAX: usize = 272;
/// Most patches a plan lists.
pub const OPS_MAX: usize = 16;
/// Slots of the per-CPU counter array.
pub const COUNTERS: usize = 64;
/// First counter of the per-kind forwarded counts (`C_KIND + kind`).
pub const C_KIND: usize = 32;
/// Plan kinds the counters distinguish.
pub const KINDS: usize = 16;
/// Counter of the IOAM traces filled (or flagged Overflow) in transit.
pub const C_IOAM_FILLED: usize = 48;
/// Trace-type bits of an IOAM trace (bit k of RFC 9197 is `1 << (23 - k)` of the 24-bit type).
pub const IOAM_BITS: usize = 24;
/// Bytes of precomputed node data an [`IoamEntry`] holds.
pub const IOAM_DATA: usize = 352;
/// Key of the `ioam` map's entry for namespaces this node does not know (the checks only); without it, frames
/// with IOAM transit go to the worker.
pub const IOAM_ANY: u32 = u32::MAX;
/// The route value's plan when the route is not executed in the driver.
pub const NO_PLAN: u32 = u32::MAX;

/// Patch code: `len` bytes of the received IPv6 header from offset `from`.
pub const OP_RX: u8 = 1;
/// Patch code: the received header's first 32-bit word (version, traffic class, flow label) ANDed with `mask`.
pub const OP_FIRST_WORD: u8 = 2;
/// Patch code: the outgoing Payload Length (the received one plus the plan's growth), 16 bits.
pub const OP_PLEN: u8 = 3;
/// Patch code: the received hop limit less one.
pub const OP_HLIM: u8 = 4;
/// Patch code: the byte `from`.
pub const OP_BYTE: u8 = 5;
/// Patch code: the receiving port's 16-bit IOAM interface id (`ioam6_id`).
pub const OP_ING16: u8 = 6;
/// Patch code: the receiving port's 32-bit IOAM interface id (`ioam6_id_wide`).
pub const OP_ING32: u8 = 7;
/// Patch code: the received SRH's next segment, 16 bytes (plans with [`F_SRH_ADVANCE`]).
pub const OP_NEXT_SID: u8 = 8;
/// Patch code: the received SRH's Segments Left less one (plans with [`F_SRH_ADVANCE`]).
pub const OP_SL: u8 = 9;
/// Plan flag: an SRH without TLVs must follow the IPv6 header with a segment left (checked before anything is
/// written; [`Why::Srh`] otherwise), its next segment and Segments Left are what [`OP_NEXT_SID`] and [`OP_SL`]
/// write.
pub const F_SRH_ADVANCE: u32 = 1;
/// Plan flag: the plan applies to the inner IPv6 packet (behind the outer header, or behind an SRH without TLVs
/// and with no segment left), which is pulled out first (End.DX6); [`Why::Decap`] when there is none. The patches
/// then read the inner header.
pub const F_DECAP: u32 = 2;
/// Plan flag: the way out (template, egress, MTU) is the plan of the route to the SRH's next segment, which
/// must have [`F_PLAIN`] ([`Why::Next`] otherwise); the patches are this plan's (End, with [`F_SRH_ADVANCE`]).
pub const F_RELOOKUP: u32 = 4;
/// Plan flag: plain forwarding (a way out for [`F_RELOOKUP`] plans).
pub const F_PLAIN: u32 = 8;
/// Plan flag: the inner IPv6 packet (pulled out as with [`F_DECAP`]) goes out along the plain plan of its
/// destination's route in the plan's table (the `vrf` map); [`Why::Table`] when it has none (End.DT6).
pub const F_TABLE: u32 = 16;
/// Plan flag: the template goes in front of the received frame, whose Ethernet header is kept as part of the
/// payload (`skip` 0, `growth` = `tlen`): seg6 l2encap and l2encap.red.
pub const F_L2: u32 = 32;
/// Plan flag: the plan of an IPv4 route (the `routes4` map), for IPv4 packets: its template the Ethernet header,
/// the outer IPv6 header (hop limit included) and the SRH; its one patch [`OP_PLEN`] (with the received Total
/// Length as the packet's length).
pub const F_V4: u32 = 64;
/// Port flag: the interface's `seg6_require_hmac` is above 0 (SRHs are the worker's to check).
pub const P_REQUIRE_HMAC: u16 = 1;
/// Port flag: the interface's `ioam6_enabled` is on (IOAM traces received on it are filled in transit).
pub const P_IOAM_ENABLED: u16 = 2;

/// Key of the `routes` LPM trie (`struct bpf_lpm_trie_key` with a 16-byte address).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LpmKey {
    /// Prefix length in bits.
    pub prefixlen: u32,
    /// The prefix, in wire order.
    pub addr: [u8; 16],
}

/// Key of the `routes4` LPM trie (`struct bpf_lpm_trie_key` with a 4-byte address).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LpmKey4 {
    /// Prefix length in bits.
    pub prefixlen: u32,
    /// The prefix, in wire order.
    pub addr: [u8; 4],
}

/// Value of the `routes` LPM trie.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RouteValue {
    /// Index of the route's plan in the `plans` array, or [`NO_PLAN`].
    pub plan: u32,
    /// With [`NO_PLAN`]: the [`Why`] counted for the route's frames, which go to the slow path.
    pub why: u32,
}

/// Value of the `ports` hash (key: the receiving interface's ifindex).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortEntry {
    /// The interface's MAC address: frames to another go to the slow path.
    pub mac: [u8; 6],
    /// Most bytes a plan may add in front of a frame received here (the driver's XDP headroom less the
    /// `xdp_frame`; the helper refuses more anyway).
    pub headroom: u16,
    /// Longest frame accepted: MTU + Ethernet header + 4 (as lwt6's own fast path).
    pub max_frame: u32,
    /// The port's `ioam6_id_wide` (IOAM plans write it as the ingress id of wide traces).
    pub ioam_wide: u32,
    /// The port's `ioam6_id`.
    pub ioam_id: u16,
    /// `P_*` flags.
    pub flags: u16,
}

/// One patch: what is written at `at` (an offset in the outgoing frame) once the template is copied.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Op {
    /// `OP_*`, 0 for none.
    pub code: u8,
    /// [`OP_RX`]: how many bytes.
    pub len: u8,
    /// Offset in the outgoing frame.
    pub at: u16,
    /// [`OP_RX`]: offset in the received IPv6 header; [`OP_BYTE`]: the byte.
    pub from: u16,
    /// Zero.
    pub pad: u16,
    /// [`OP_FIRST_WORD`]: the mask.
    pub mask: u32,
}

/// Value of the `plans` array: a forwarding plan as the driver executes it. The outgoing frame is the template
/// followed by the received IPv6 packet without its first `skip` bytes, then the patches are applied.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PlanEntry {
    /// Egress: the `egress` devmap key (lwt6's device index).
    pub egress: u32,
    /// Longest IPv6 packet the plan sends.
    pub max_len: u32,
    /// Template length.
    pub tlen: u16,
    /// Leading bytes of the received IPv6 packet the template replaces: 0, or 40 when the template holds the
    /// IPv6 header (patched from the received one) followed by an inserted header.
    pub skip: u16,
    /// Bytes the IPv6 packet grows: `tlen - 14 - skip`.
    pub growth: u16,
    /// Counter slot of the plan's kind ([`Kind`]).
    pub kind: u8,
    /// Patches used.
    pub nops: u8,
    /// `F_*` flags.
    pub flags: u32,
    /// [`F_TABLE`]: the table, in wire order (`u32::from_ne_bytes(id.to_be_bytes())`); zero otherwise.
    pub table: u32,
    /// Patches, in order.
    pub ops: [Op; OPS_MAX],
    /// Template bytes (the first `tlen`).
    pub tpl: [u8; TPL_MAX],
}

/// The `egress` devmap's value (`struct bpf_devmap_val`): the ifindex, and no program.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DevmapVal {
    /// Egress ifindex.
    pub ifindex: u32,
    /// Program to run on the egress (none: 0).
    pub prog_fd: u32,
}

/// Value of the `ioam` hash (key: namespace | egress device << 16, or [`IOAM_ANY`]): this node's data for one
/// namespace leaving by one egress, field by field, so that the driver writes the block of any trace type without
/// knowing one: for trace-type bit k, `len[k]` bytes at `data[at[k]..]`, in bit order, with the per-packet value
/// `code[k]` ([`OP_HLIM`], [`OP_ING16`], [`OP_ING32`] or 0) written at `pat[k]` in the field.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoamEntry {
    /// Trace-type bits whose field the driver cannot write (timestamps): a fill with one goes to the worker.
    pub refuse: u32,
    /// 1 for a namespace of this node; 0 for the [`IOAM_ANY`] entry (nothing is written).
    pub known: u16,
    /// The one bit whose field may be longer than 8 bytes (the opaque state snapshot with its schema).
    pub ext: u16,
    /// Bytes of each bit's field in this node's block.
    pub len: [u8; IOAM_BITS],
    /// Words each bit counts in NodeLen.
    pub nl: [u8; IOAM_BITS],
    /// Per-packet patch of each bit's field.
    pub code: [u8; IOAM_BITS],
    /// Where in the field the patch goes.
    pub pat: [u8; IOAM_BITS],
    /// Where each bit's bytes start in `data`.
    pub at: [u16; IOAM_BITS],
    /// The fields' bytes.
    pub data: [u8; IOAM_DATA],
}

/// Bytes of a precomputed node block ([`IoamBlock`]): a trace's free space is at most 61 words.
pub const IOAM_BLOCK: usize = 256;
/// Keys of missing blocks the driver remembers per CPU ([`IoamMisses`]).
pub const IOAM_MISSES: usize = 8;

/// Key of the `ioam_blk` hash: what this node's block in a trace depends on.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IoamBlockKey {
    /// Namespace | egress device << 16 (the `ioam` map's key).
    pub nse: u32,
    /// The 24-bit trace type.
    pub ty: u32,
    /// The receiving interface's ifindex (its ingress ids are in the block).
    pub ingress: u32,
}

/// Value of the `ioam_blk` hash: this node's whole block for one [`IoamBlockKey`], which the driver copies into
/// the trace, patching only the hop limit.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoamBlock {
    /// The block's length in 4-octet words (with `refuse`: the length that decides the Overflow flag).
    pub words: u8,
    /// NodeLen of the trace type.
    pub nl: u8,
    /// 1 when the block holds a field the driver cannot write (timestamps): the fill goes to the worker.
    pub refuse: u8,
    /// How many hop-limit bytes `hl` names (0 to 2).
    pub nhl: u8,
    /// Offsets of the hop-limit bytes in the block.
    pub hl: [u8; 2],
    /// Zero.
    pub pad: [u8; 2],
    /// The block (the first `4 * words` bytes), hop limits zero.
    pub data: [u8; IOAM_BLOCK],
}

/// Value of the per-CPU `ioam_miss` array: the last keys whose block the driver did not find.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoamMisses {
    /// Keys recorded so far on this CPU (the next goes into slot `n % IOAM_MISSES`).
    pub n: u32,
    /// Zero.
    pub pad: u32,
    /// The keys.
    pub k: [IoamBlockKey; IOAM_MISSES],
}

const _: () = assert!(size_of::<IoamBlockKey>() == 12);
const _: () = assert!(size_of::<IoamBlock>() == 8 + IOAM_BLOCK);
const _: () = assert!(size_of::<IoamMisses>() == 8 + 12 * IOAM_MISSES);
const _: () = assert!(size_of::<IoamEntry>() == 8 + 6 * IOAM_BITS + IOAM_DATA);
const _: () = assert!(size_of::<LpmKey>() == 20);
const _: () = assert!(size_of::<LpmKey4>() == 8);
const _: () = assert!(size_of::<RouteValue>() == 8);
const _: () = assert!(size_of::<PortEntry>() == 20);
const _: () = assert!(size_of::<Op>() == 12);
const _: () = assert!(size_of::<PlanEntry>() == 24 + 12 * OPS_MAX + TPL_MAX);

// SAFETY: plain C-layout structs of integers and byte arrays without padding (sizes asserted above), valid for
// every bit pattern: what aya's `Pod` asks of map keys and values.
unsafe impl aya::Pod for LpmKey {}
// SAFETY: as above.
unsafe impl aya::Pod for LpmKey4 {}
// SAFETY: as above.
unsafe impl aya::Pod for RouteValue {}
// SAFETY: as above.
unsafe impl aya::Pod for PortEntry {}
// SAFETY: as above.
unsafe impl aya::Pod for Op {}
// SAFETY: as above.
unsafe impl aya::Pod for PlanEntry {}
// SAFETY: as above.
unsafe impl aya::Pod for DevmapVal {}
// SAFETY: as above.
unsafe impl aya::Pod for IoamEntry {}
// SAFETY: as above.
unsafe impl aya::Pod for IoamBlockKey {}
// SAFETY: as above.
unsafe impl aya::Pod for IoamBlock {}
// SAFETY: as above.
unsafe impl aya::Pod for IoamMisses {}

/// Why a frame left the driver (the counter it was counted under): `bpf/plan.bpf.c`'s `W_*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u32)]
pub enum Why {
    /// Not an IPv6 frame (ARP, IPv4, ...): to the worker or the kernel, as without the tier.
    NotIpv6 = 1,
    /// Shorter than an Ethernet and an IPv6 header, or than its Payload Length says; not IPv6 version 6.
    Short = 2,
    /// Received on an interface the tier was not told about.
    NoPort = 3,
    /// Ethernet destination other than the port's address (multicast: NDP, ...).
    NotForUs = 4,
    /// Longer than the port's MTU allows.
    FrameLen = 5,
    /// Hop limit 0 or 1 (ICMP Time Exceeded, from the worker).
    HopLimit = 6,
    /// Link-local, multicast or `::/8` source or destination (NDP, ...).
    Addr = 7,
    /// A Hop-by-Hop header follows the IPv6 header (IOAM transit, router alert, ...).
    HopByHop = 8,
    /// No route.
    NoRoute = 9,
    /// The route has no plan (no neighbour yet, a per-packet flow hash, an HMAC over the packet, ...).
    NoPlan = 10,
    /// The route's plan is of a kind the driver does not execute.
    Kind = 11,
    /// The plan's template is longer than [`TPL_MAX`].
    Template = 12,
    /// Addressed to one of the router's own addresses.
    Local = 13,
    /// The packet would exceed the plan's MTU (ICMP Packet Too Big, from the worker).
    Mtu = 14,
    /// The frame's headroom cannot take what the plan adds.
    Headroom = 15,
    /// The plan's egress is not in the devmap.
    NoEgress = 16,
    /// A plan the executor refused (inconsistent lengths): a bug.
    BadPlan = 17,
    /// An SRH-advancing plan (End.X) on a packet without a plain SRH with a segment left, or received on an
    /// interface that requires HMAC.
    Srh = 18,
    /// A decapsulating plan (End.DX6) on a packet without an IPv6 packet to pull out (or an SRH with a segment
    /// left, or TLVs), or received on an interface that requires HMAC.
    Decap = 19,
    /// End: the next segment is special, or its route is not plain forwarding in the driver.
    Next = 20,
    /// IOAM transit: a trace Linux drops (shorter than its RemainingLen says, NodeLen not the trace type's): the
    /// worker drops it with its reason.
    IoamInvalid = 21,
    /// IOAM transit: this node's data for the trace holds a field the driver cannot write (timestamps, bits 2
    /// and 3; an opaque state longer than the map holds).
    IoamField = 22,
    /// End.DT6: the inner destination is special (link-local, multicast, `::/8`, also the source) or has no
    /// plain-forwarding route in the table.
    Table = 23,
    /// A packet trace is armed (`lwt6 ctl trace add`): every route is left to the worker, which traces (set by
    /// the engine as a route's reason; the program only counts it).
    Traced = 24,
    /// An IPv4 header with options (IHL above 5): the worker decides what Linux would do with them.
    Ipv4Options = 25,
    /// An IPv4 header whose checksum is wrong (the worker drops it).
    Ipv4Checksum = 26,
}

impl Why {
    /// Every reason, in counter order.
    pub const ALL: [Why; 26] = [
        Why::NotIpv6,
        Why::Short,
        Why::NoPort,
        Why::NotForUs,
        Why::FrameLen,
        Why::HopLimit,
        Why::Addr,
        Why::HopByHop,
        Why::NoRoute,
        Why::NoPlan,
        Why::Kind,
        Why::Template,
        Why::Local,
        Why::Mtu,
        Why::Headroom,
        Why::NoEgress,
        Why::BadPlan,
        Why::Srh,
        Why::Decap,
        Why::Next,
        Why::IoamInvalid,
        Why::IoamField,
        Why::Table,
        Why::Traced,
        Why::Ipv4Options,
        Why::Ipv4Checksum,
    ];

    /// The reason's name, as counters print it.
    pub fn name(self) -> &'static str {
        match self {
            Why::NotIpv6 => "not_ipv6",
            Why::Short => "short",
            Why::NoPort => "no_port",
            Why::NotForUs => "not_for_us",
            Why::FrameLen => "frame_len",
            Why::HopLimit => "hop_limit",
            Why::Addr => "special_address",
            Why::HopByHop => "hop_by_hop",
            Why::NoRoute => "no_route",
            Why::NoPlan => "no_plan",
            Why::Kind => "kind",
            Why::Template => "template",
            Why::Local => "local",
            Why::Mtu => "mtu",
            Why::Headroom => "headroom",
            Why::NoEgress => "no_egress",
            Why::BadPlan => "bad_plan",
            Why::Srh => "srh",
            Why::Decap => "decap",
            Why::Next => "next_segment",
            Why::IoamInvalid => "ioam_invalid",
            Why::IoamField => "ioam_field",
            Why::Table => "table_lookup",
            Why::Traced => "traced",
            Why::Ipv4Options => "ipv4_options",
            Why::Ipv4Checksum => "ipv4_checksum",
        }
    }
}

/// The plan kinds the driver executes (their forwarded-frame counters: [`C_KIND`] + kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Kind {
    /// Plain forwarding.
    Forward = 0,
    /// seg6 H.Encaps / H.Encaps.Red.
    Seg6Encap = 1,
    /// seg6 inline (H.Insert).
    Seg6Inline = 2,
    /// rpl whose compressed header is the same for every destination of the route.
    RplFixed = 3,
    /// ioam6 inline insertion, this node's data in the template.
    IoamInline = 4,
    /// ioam6 encap insertion, this node's data in the template.
    IoamEncap = 5,
    /// seg6local End.X (no flavours, no counters).
    EndX = 6,
    /// seg6local End.DX6 (no counters).
    EndDx6 = 7,
    /// seg6local End (no flavours, no counters), out along the next segment's plain-forwarding plan.
    End = 8,
    /// Plain forwarding of a packet with a Hop-by-Hop header of IOAM traces, filled in transit (counted for
    /// [`Kind::Forward`] plans).
    IoamTransit = 9,
    /// seg6local End.DT6 (no counters, no flavours), out along the inner destination's plain plan in its table.
    EndDt6 = 10,
    /// seg6 l2encap / l2encap.red of an IPv6 packet's frame.
    Seg6L2Encap = 11,
    /// seg6 encap / encap.red of an IPv4 packet.
    Seg6EncapV4 = 12,
    /// seg6 l2encap / l2encap.red of an IPv4 packet's frame.
    Seg6L2EncapV4 = 13,
}

impl Kind {
    /// Every kind, in counter order.
    pub const ALL: [Kind; 14] = [
        Kind::Forward,
        Kind::Seg6Encap,
        Kind::Seg6Inline,
        Kind::RplFixed,
        Kind::IoamInline,
        Kind::IoamEncap,
        Kind::EndX,
        Kind::EndDx6,
        Kind::End,
        Kind::IoamTransit,
        Kind::EndDt6,
        Kind::Seg6L2Encap,
        Kind::Seg6EncapV4,
        Kind::Seg6L2EncapV4,
    ];

    /// The kind's name, as counters print it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Forward => "forward",
            Kind::Seg6Encap => "seg6_encap",
            Kind::Seg6Inline => "seg6_inline",
            Kind::RplFixed => "rpl_fixed",
            Kind::IoamInline => "ioam_inline",
            Kind::IoamEncap => "ioam_encap",
            Kind::EndX => "end_x",
            Kind::EndDx6 => "end_dx6",
            Kind::End => "end",
            Kind::IoamTransit => "ioam_transit",
            Kind::EndDt6 => "end_dt6",
            Kind::Seg6L2Encap => "seg6_l2encap",
            Kind::Seg6EncapV4 => "seg6_encap_v4",
            Kind::Seg6L2EncapV4 => "seg6_l2encap_v4",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lists_hold_every_reason_and_kind_in_counter_order() {
        for (i, w) in Why::ALL.into_iter().enumerate() {
            assert_eq!(w as usize, i + 1, "{}", w.name());
        }
        assert!(Why::ALL.len() < C_KIND);
        for (i, k) in Kind::ALL.into_iter().enumerate() {
            assert_eq!(k as usize, i, "{}", k.name());
        }
        assert!(Kind::ALL.len() <= KINDS);
        const { assert!(C_KIND + KINDS <= C_IOAM_FILLED && C_IOAM_FILLED < COUNTERS) };
    }
}
