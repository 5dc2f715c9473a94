//! Predicting how many times Linux reallocates a packet's head when a lightweight tunnel adds its headers
//! (the "double reallocation" of arXiv 2503.14959; docs/references.md §5), before the 2024 fix, after it (warm route
//! cache and first packet of a route), and in lwt6.
//!
//! The kernel is modelled by simulating, on a headroom counter, the sequence of head-expanding calls each code
//! path makes (not by a closed form), so every step can be explained:
//!
//! | path | calls, in order |
//! |---|---|
//! | l2encap, l2encap.red | `pskb_expand_head(mac_len)` (always), `skb_push(mac_len)` |
//! | all | `skb_cow_head(O + X)` with X = `mac_len` (pre-fix, or first packet after the fix) or `LL_RESERVED_SPACE` (warm cache after the fix); push O |
//! | seg6, rpl; ioam6 encap (pre-fix) | `skb_cow_head(LL_RESERVED_SPACE)` after the route lookup, on every packet |
//! | all (after the fix, first packet) | `skb_cow_head(LL_RESERVED_SPACE)` on the route-cache miss |
//! | all | `ip6_finish_output2`: `skb_expand_head(LL_RESERVED_SPACE)` if the headroom is still short |
//!
//! `skb_cow_head(need)` reallocates when `need > headroom`, growing the headroom by `ALIGN(need − headroom,
//! NET_SKB_PAD)`; `skb_expand_head` aligns with `SKB_DATA_ALIGN` (the cache line, equal to NET_SKB_PAD for
//! lines of 32 bytes or more). O, the bytes the tunnel adds, comes from the dataplane's own tunnel types
//! ([`Seg6Tunnel::overhead`], [`Ioam6Tunnel::max_overhead`], [`rpl::compressed_len`]), so the analyzer and the
//! dataplane agree byte for byte.

use super::nic::ETH_HLEN;
use super::skb::{align, cow_head, net_skb_pad};
use lwt6_dataplane::spec::{Ioam6Encap, IoamMode, IoamTraceSpec, Seg6Encap, Seg6Mode};
use lwt6_dataplane::tunnel::{Ioam6Tunnel, Seg6Tunnel};
use lwt6_wire::rpl;
use std::fmt;
use std::net::Ipv6Addr;
use std::str::FromStr;

/// Modes of each protocol, as `ip route ... encap PROTO mode MODE` names them.
pub const SEG6_MODES: &[&str] = &["inline", "encap", "l2encap", "encap.red", "l2encap.red"];
/// IOAM modes modelled (`auto` is inline for local packets and encap for forwarded ones).
pub const IOAM6_MODES: &[&str] = &["inline", "encap"];
/// RPL modes (Linux only implements inline).
pub const RPL_MODES: &[&str] = &["inline"];
/// Cache line sizes accepted.
pub const CACHE_LINES: &[usize] = &[32, 64, 128];
/// Largest IOAM pre-allocated trace (`IOAM6_TRACE_DATA_SIZE_MAX`).
pub const IOAM_TRACE_MAX: usize = 244;
/// Most RPL addresses (`tunnel::rpl::MAX_SEGS`).
pub const RPL_MAX_SEGS: usize = lwt6_dataplane::tunnel::rpl::MAX_SEGS;
/// Largest SRH `hdrlen`.
const MAX_SRH_HDRLEN: usize = 255;
/// The HMAC TLV in 8-octet units.
const HMAC_TLV_UNITS: usize = 5;

/// A lightweight-tunnel protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Proto {
    /// SRv6 (`encap seg6`).
    Seg6,
    /// IOAM pre-allocated trace (`encap ioam6`).
    Ioam6,
    /// RPL source routing header (`encap rpl`).
    Rpl,
}

impl Proto {
    /// All protocols, in the paper's Table 1 order.
    pub const ALL: [Proto; 3] = [Proto::Ioam6, Proto::Seg6, Proto::Rpl];

    /// The iproute2 keyword.
    pub fn name(self) -> &'static str {
        match self {
            Proto::Seg6 => "seg6",
            Proto::Ioam6 => "ioam6",
            Proto::Rpl => "rpl",
        }
    }

    /// The valid modes.
    pub fn modes(self) -> &'static [&'static str] {
        match self {
            Proto::Seg6 => SEG6_MODES,
            Proto::Ioam6 => IOAM6_MODES,
            Proto::Rpl => RPL_MODES,
        }
    }

    /// What `size` counts: "segments" (seg6, rpl) or "bytes" of IOAM trace data.
    pub fn size_unit(self) -> &'static str {
        match self {
            Proto::Seg6 | Proto::Rpl => "segments",
            Proto::Ioam6 => "bytes",
        }
    }
}

impl fmt::Display for Proto {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Proto {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "seg6" => Ok(Proto::Seg6),
            "ioam6" => Ok(Proto::Ioam6),
            "rpl" => Ok(Proto::Rpl),
            _ => Err(format!("unknown protocol '{s}' (valid: seg6, ioam6, rpl)")),
        }
    }
}

/// One case to predict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scenario {
    /// Protocol.
    pub proto: Proto,
    /// Mode: seg6 inline|encap|l2encap|encap.red|l2encap.red; ioam6 inline|encap; rpl inline.
    pub mode: String,
    /// Segments (seg6, rpl) or IOAM trace data bytes (ioam6).
    pub size: usize,
    /// seg6 only: the SRH carries an HMAC TLV (40 bytes).
    pub hmac: bool,
    /// L1 cache line in bytes (NET_SKB_PAD = max(32, line)): 32, 64 or 128.
    pub cache_line: usize,
    /// H0: bytes in front of the NETWORK header as the tunnel sees it (i40e: 206). For locally generated
    /// packets, the headroom the socket layer left (see [`local_headroom`]).
    pub rx_headroom: usize,
    /// `skb->mac_len` of a forwarded packet (14). Ignored for locally generated packets (0 there).
    pub mac_len: usize,
    /// `LL_RESERVED_SPACE` of the egress device (16 for Ethernet).
    pub ll_reserved: usize,
    /// The packet is generated on the router itself (output path) instead of forwarded.
    pub locally_generated: bool,
}

impl Scenario {
    /// The paper's setup: forwarded, x86 64-byte lines, i40e (H0 = 206), mac_len 14, Ethernet egress (16).
    pub fn paper(proto: Proto, mode: &str, size: usize) -> Scenario {
        Scenario {
            proto,
            mode: mode.to_string(),
            size,
            hmac: false,
            cache_line: 64,
            rx_headroom: 206,
            mac_len: ETH_HLEN,
            ll_reserved: 16,
            locally_generated: false,
        }
    }
}

/// Reallocation counts for one scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prediction {
    /// O: bytes the tunnel pushes in front of / inserts into the packet (outer IPv6 + SRH, SRH, HBH, RPL SRH;
    /// for the L2 modes the carried Ethernet header is not counted, as in the kernel's `tot_len`).
    pub overhead_bytes: usize,
    /// Linux before the fix (≤ 6.13 without the backport).
    pub pre_fix: u32,
    /// Linux after the fix, route cache warm (every packet but the first).
    pub post_fix_warm: u32,
    /// Linux after the fix, first packet of a route (empty cache).
    pub post_fix_first_packet: u32,
    /// lwt6 (0 or 1).
    pub lwt6: u32,
    /// The arithmetic, one line per step (`--explain`).
    pub steps: Vec<String>,
}

/// Knobs beyond [`Scenario`] (kept separate so the `Scenario` literal stays stable).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Options {
    /// lwt6's rx headroom in front of the network header; `None` = sized from the route, as `lwt6 pcap` does
    /// by default (`ALIGN(growth + 2·14, 64)` in front of the Ethernet header: never a reallocation).
    pub lwt6_headroom: Option<usize>,
    /// RPL address layout: bytes of prefix every address (segments and the original destination) shares
    /// with the first segment, 0..=15 (0 = worst case, no compression: 8 + 16·N bytes).
    pub rpl_cmpr: usize,
}

/// Headroom a locally generated packet has in front of its IPv6 header when it reaches the tunnel: UDP, ICMPv6
/// and raw sockets build it with `__ip6_append_data`, which reserves `hh_len + sizeof(struct frag_hdr) +
/// dst_exthdrlen` with `hh_len = LL_RESERVED_SPACE(route device)` (torvalds/linux net/ipv6/ip6_output.c:
/// "reserve for fragmentation and ipsec header"); no IPsec: `ll_reserved + 8` (24 on Ethernet). TCP reserves
/// `MAX_TCP_HEADER` instead, raw IPV6_HDRINCL only `hh_len`: pass those with `--rx-headroom`.
pub fn local_headroom(ll_reserved: usize) -> usize {
    ll_reserved + 8
}

/// Valid sizes for a protocol and mode: `(min, max, step)`.
pub fn size_range(proto: Proto, mode: &str, hmac: bool) -> (usize, usize, usize) {
    match proto {
        Proto::Seg6 => {
            // hdrlen = 2·slots (+5 for the HMAC TLV) must fit in a u8; iproute2 adds one slot for inline.
            let inline = usize::from(mode == "inline");
            let extra = if hmac { HMAC_TLV_UNITS } else { 0 };
            (1, (MAX_SRH_HDRLEN - extra) / 2 - inline, 1)
        }
        Proto::Ioam6 => (4, IOAM_TRACE_MAX, 4),
        Proto::Rpl => (1, RPL_MAX_SEGS, 1),
    }
}

fn seg6_mode(mode: &str) -> Option<Seg6Mode> {
    Some(match mode {
        "inline" => Seg6Mode::Inline,
        "encap" => Seg6Mode::Encap,
        "l2encap" => Seg6Mode::L2Encap,
        "encap.red" => Seg6Mode::EncapRed,
        "l2encap.red" => Seg6Mode::L2EncapRed,
        _ => return None,
    })
}

/// Checks mode, size and the other parameters; the errors list the valid values.
pub fn validate(s: &Scenario, opts: &Options) -> Result<(), String> {
    let modes = s.proto.modes();
    if !modes.contains(&s.mode.as_str()) {
        return Err(format!(
            "mode '{}' is not valid for {} (valid: {})",
            s.mode,
            s.proto,
            modes.join(", ")
        ));
    }
    if s.hmac && s.proto != Proto::Seg6 {
        return Err(format!("--hmac applies to seg6 only, not {}", s.proto));
    }
    let (min, max, step) = size_range(s.proto, &s.mode, s.hmac);
    if s.size < min || s.size > max || !s.size.is_multiple_of(step) {
        let what = match s.proto {
            Proto::Ioam6 => format!("multiples of 4 from {min} to {max} trace bytes"),
            _ => format!(
                "{min}..={max} segments for {} {}{}",
                s.proto,
                s.mode,
                if s.hmac { " with hmac" } else { "" }
            ),
        };
        return Err(format!(
            "size {} out of range for {} {} (valid: {what})",
            s.size, s.proto, s.mode
        ));
    }
    if !CACHE_LINES.contains(&s.cache_line) {
        return Err(format!(
            "cache line {} not supported (valid: 32, 64, 128)",
            s.cache_line
        ));
    }
    if s.ll_reserved == 0 || !s.ll_reserved.is_multiple_of(16) {
        return Err(format!(
            "LL_RESERVED_SPACE {} impossible: it is ((hard_header_len + needed_headroom) & ~15) + 16, \
             a positive multiple of 16 (valid: 16, 32, 48, ...)",
            s.ll_reserved
        ));
    }
    if s.locally_generated && s.mode.starts_with("l2") {
        return Err(format!(
            "mode {} needs a received Ethernet frame: it is not valid for locally generated packets \
             (valid with --local: inline, encap, encap.red)",
            s.mode
        ));
    }
    if !s.locally_generated && s.rx_headroom < s.mac_len {
        return Err(format!(
            "rx headroom {} is smaller than mac_len {}: a forwarded packet's MAC header lies in its headroom",
            s.rx_headroom, s.mac_len
        ));
    }
    if opts.rpl_cmpr > 15 {
        return Err(format!(
            "RPL compression {} out of range (valid: 0..=15 shared prefix bytes)",
            opts.rpl_cmpr
        ));
    }
    Ok(())
}

fn addr(k: usize, cmpr: usize) -> Ipv6Addr {
    // `cmpr` shared prefix bytes (0xfd), then a byte unique to address k, so every pair differs right there.
    let mut b = [0u8; 16];
    b[..cmpr].fill(0xfd);
    b[cmpr] = (k + 1) as u8;
    if cmpr + 1 < 16 {
        b[15] = 0x01;
    }
    Ipv6Addr::from(b)
}

/// O, the bytes the tunnel adds, from the dataplane's tunnel types.
pub fn overhead(s: &Scenario, opts: &Options) -> Result<usize, String> {
    validate(s, opts)?;
    Ok(match s.proto {
        Proto::Seg6 => {
            let mode = seg6_mode(&s.mode).ok_or("unreachable: mode validated")?;
            let segs = (1..=s.size)
                .map(|i| Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, i as u16))
                .collect();
            Seg6Tunnel::new(&Seg6Encap {
                mode,
                segs,
                hmac: s.hmac.then_some(1),
                tunsrc: None,
            })
            .overhead()
        }
        Proto::Ioam6 => {
            let encap = s.mode == "encap";
            Ioam6Tunnel::new(&Ioam6Encap {
                mode: if encap {
                    IoamMode::Encap
                } else {
                    IoamMode::Inline
                },
                tunsrc: None,
                tundst: encap.then(|| Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1)),
                freq_k: 1,
                freq_n: 1,
                traces: vec![IoamTraceSpec {
                    trace_type: 0x80_0000,
                    namespace: 1,
                    size: s.size as u16,
                }],
                dex: None,
                hbh_merge: false,
            })
            .max_overhead()
        }
        Proto::Rpl => {
            // Linux inserts cfg[1..N-1] followed by the original destination, compressed against cfg[0]
            // (docs/references.md §3.3). Addresses 0..N-1 are the segments, address N the original destination.
            let n = s.size;
            let daddr = addr(0, opts.rpl_cmpr);
            let addrs: Vec<Ipv6Addr> = (1..=n).map(|k| addr(k, opts.rpl_cmpr)).collect();
            rpl::compressed_len(&addrs, &daddr)
        }
    })
}

/// Which kernel code path is being simulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    PreFix,
    PostFixWarm,
    PostFixFirst,
}

impl Variant {
    fn label(self) -> &'static str {
        match self {
            Variant::PreFix => "pre_fix",
            Variant::PostFixWarm => "post_fix_warm",
            Variant::PostFixFirst => "post_fix_first_packet",
        }
    }
}

/// The headroom counter the calls act on.
struct Skb<'a> {
    headroom: usize,
    reallocs: u32,
    pad: usize,
    line: usize,
    steps: &'a mut Vec<String>,
    prefix: &'static str,
}

impl Skb<'_> {
    fn note(&mut self, s: String) {
        self.steps.push(format!("  {}: {s}", self.prefix));
    }

    /// `skb_cow_head(skb, need)`.
    fn cow_head(&mut self, need: usize, why: &str) {
        let h = self.headroom;
        match cow_head(h, need, self.pad) {
            Some(nhead) => {
                self.headroom += nhead;
                self.reallocs += 1;
                let r = self.reallocs;
                self.note(format!(
                    "{why}: skb_cow_head({need}): headroom {h} < {need} -> pskb_expand_head(ALIGN({}, {}) = {nhead}) \
                     -> headroom {} [realloc #{r}]",
                    need - h,
                    self.pad,
                    self.headroom
                ));
            }
            None => self.note(format!(
                "{why}: skb_cow_head({need}): headroom {h} >= {need}, nothing to do"
            )),
        }
    }

    /// `pskb_expand_head(skb, nhead, 0)`, unconditional.
    fn expand_head(&mut self, nhead: usize, why: &str) {
        let h = self.headroom;
        self.headroom += nhead;
        self.reallocs += 1;
        let r = self.reallocs;
        self.note(format!(
            "{why}: pskb_expand_head({nhead}) always reallocates: headroom {h} -> {} [realloc #{r}]",
            self.headroom
        ));
    }

    /// `skb_expand_head(skb, need)` in `ip6_finish_output2` (aligned with SKB_DATA_ALIGN = the cache line).
    fn neigh_check(&mut self, hh_len: usize) {
        let h = self.headroom;
        if h < hh_len {
            let nhead = align(hh_len - h, self.line);
            self.headroom += nhead;
            self.reallocs += 1;
            let r = self.reallocs;
            self.note(format!(
                "ip6_finish_output2: headroom {h} < LL_RESERVED_SPACE {hh_len} -> skb_expand_head: \
                 pskb_expand_head(SKB_DATA_ALIGN({}) = {nhead}) -> headroom {} [realloc #{r}]",
                hh_len - h,
                self.headroom
            ));
        } else {
            self.note(format!(
                "ip6_finish_output2: headroom {h} >= LL_RESERVED_SPACE {hh_len}, Ethernet header fits"
            ));
        }
    }

    fn push(&mut self, n: usize, what: &str) {
        let h = self.headroom;
        // The cow before it guarantees n <= headroom; saturate rather than panic on a modelling slip.
        self.headroom = h.saturating_sub(n);
        self.note(format!("{what}: headroom {h} - {n} = {}", self.headroom));
    }
}

fn simulate(s: &Scenario, o: usize, v: Variant, steps: &mut Vec<String>) -> u32 {
    let local = s.locally_generated;
    let m = if local { 0 } else { s.mac_len };
    let l = s.ll_reserved;
    let l2 = s.mode.starts_with("l2");
    let ioam = s.proto == Proto::Ioam6;
    let mut k = Skb {
        headroom: s.rx_headroom,
        reallocs: 0,
        pad: net_skb_pad(s.cache_line),
        line: s.cache_line,
        steps,
        prefix: v.label(),
    };
    k.note(format!(
        "start: headroom H0 = {} in front of the IPv6 header ({})",
        s.rx_headroom,
        if local {
            "locally generated, mac_len 0"
        } else {
            "forwarded"
        }
    ));
    if ioam && !local {
        // ioam6 runs on the output path, after ip6_forward's skb_cow(skb, hard_header_len).
        k.cow_head(ETH_HLEN, "ip6_forward skb_cow(hard_header_len)");
    }
    if l2 {
        k.expand_head(m, "l2encap");
        k.push(
            m,
            "skb_push(mac_len): the received Ethernet header becomes payload",
        );
    }
    let (x, xname) = match v {
        Variant::PreFix => (m, "mac_len"),
        Variant::PostFixFirst => (m, "dst_dev_overhead = mac_len (no cached dst)"),
        Variant::PostFixWarm => (l, "dst_dev_overhead = LL_RESERVED_SPACE(cached dst dev)"),
    };
    k.cow_head(o + x, &format!("tunnel: O + {xname} = {o} + {x}"));
    k.push(o, "push/insert the tunnel headers");
    let second = match v {
        // seg6/rpl always cow after the route lookup; pre-fix ioam6 only when the DA changed (encap) — inline
        // goes straight to the original output, where ip6_finish_output2 does the same check below.
        Variant::PreFix => !ioam || s.mode == "encap",
        Variant::PostFixWarm => false,
        Variant::PostFixFirst => true,
    };
    if second {
        let why = match v {
            Variant::PostFixFirst => "route-cache miss",
            _ => "after the route lookup",
        };
        k.cow_head(l, &format!("{why}: LL_RESERVED_SPACE(dst dev)"));
    } else if v == Variant::PostFixWarm {
        k.note("cache hit: no second skb_cow_head".to_string());
    }
    k.neigh_check(l);
    let r = k.reallocs;
    k.note(format!("total {r}"));
    r
}

/// lwt6: the packet's growth must fit the rx headroom, else one reallocation (never more: the router plans the
/// whole growth before writing, `PacketBuf::ensure_headroom`). Growth = O, plus the 14 bytes of the received
/// Ethernet header that become payload in the L2 modes; the reservation adds the outgoing Ethernet header.
fn lwt6(s: &Scenario, o: usize, headroom: Option<usize>, steps: &mut Vec<String>) -> u32 {
    let l2 = if s.mode.starts_with("l2") {
        ETH_HLEN
    } else {
        0
    };
    let need = o + l2 + ETH_HLEN;
    let h0 = match headroom {
        Some(h) => h,
        None => {
            // Router::build: ALIGN(max growth + 2·ETH_HLEN, 64) in front of the Ethernet header (>= 64).
            let sized =
                align(o + l2 + 2 * ETH_HLEN, 64).max(lwt6_dataplane::router::MIN_RX_HEADROOM);
            steps.push(format!(
                "  lwt6: rx headroom sized from the route: ALIGN({} + 28, 64) = {sized} before the Ethernet header \
                 -> H0 = {}",
                o + l2,
                sized + ETH_HLEN
            ));
            sized + ETH_HLEN
        }
    };
    let r = u32::from(h0 < need);
    steps.push(format!(
        "  lwt6: needs O{} + 14 (outgoing Ethernet) = {need} in front of the IPv6 header, has {h0} -> {}",
        if l2 > 0 { " + 14 (carried Ethernet)" } else { "" },
        if r == 0 {
            "no reallocation".to_string()
        } else {
            "one reallocation, sized for the whole growth".to_string()
        }
    ));
    r
}

/// Predicts the reallocations of one scenario, lwt6 running with the same headroom H0 (`s.rx_headroom`) and
/// RPL addresses uncompressed.
pub fn predict(s: &Scenario) -> Result<Prediction, String> {
    predict_with(
        s,
        &Options {
            lwt6_headroom: Some(s.rx_headroom),
            rpl_cmpr: 0,
        },
    )
}

/// [`predict`] with the extra knobs.
pub fn predict_with(s: &Scenario, opts: &Options) -> Result<Prediction, String> {
    let o = overhead(s, opts)?;
    let mut steps = vec![format!(
        "{} {} size {}{}: O = {o} bytes; NET_SKB_PAD = {}, LL_RESERVED_SPACE = {}, mac_len = {}",
        s.proto,
        s.mode,
        s.size,
        if s.hmac { " hmac" } else { "" },
        net_skb_pad(s.cache_line),
        s.ll_reserved,
        if s.locally_generated { 0 } else { s.mac_len }
    )];
    let pre_fix = simulate(s, o, Variant::PreFix, &mut steps);
    let post_fix_warm = simulate(s, o, Variant::PostFixWarm, &mut steps);
    let post_fix_first_packet = simulate(s, o, Variant::PostFixFirst, &mut steps);
    let lwt6 = lwt6(s, o, opts.lwt6_headroom, &mut steps);
    Ok(Prediction {
        overhead_bytes: o,
        pre_fix,
        post_fix_warm,
        post_fix_first_packet,
        lwt6,
        steps,
    })
}

/// The sizes of `proto`/`mode` (over the whole valid range) whose packets Linux reallocates twice *for the
/// tunnel* before the fix, i.e. `pre_fix` minus the unconditional l2encap reallocation is 2 — the paper's Table 1.
pub fn double_realloc_sizes(base: &Scenario, opts: &Options) -> Result<Vec<usize>, String> {
    let (min, max, step) = size_range(base.proto, &base.mode, base.hmac);
    let l2 = u32::from(base.mode.starts_with("l2"));
    let mut out = Vec::new();
    for size in (min..=max).step_by(step) {
        let s = Scenario {
            size,
            ..base.clone()
        };
        if predict_with(&s, opts)?.pre_fix - l2 >= 2 {
            out.push(size);
        }
    }
    Ok(out)
}

/// One Table 1 cell in the paper's wording: "None", "PTO of 236 or 240 bytes", "For 13, 17, 21, 25, 29, 33,
/// .. segments" (at most six values, then "..").
pub fn table1_cell(proto: Proto, sizes: &[usize]) -> String {
    if sizes.is_empty() {
        return "None".to_string();
    }
    let list = if sizes.len() > 6 {
        let head: Vec<String> = sizes[..6].iter().map(|n| n.to_string()).collect();
        format!("{}, ..", head.join(", "))
    } else {
        let all: Vec<String> = sizes.iter().map(|n| n.to_string()).collect();
        match all.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => all.join(""),
        }
    };
    match proto {
        Proto::Ioam6 => format!("PTO of {list} bytes"),
        Proto::Seg6 | Proto::Rpl => format!("For {list} segments"),
    }
}

/// The paper's label of a mode row ("Inline mode", "Encap. L2 Red mode", ...).
pub fn table1_mode_label(mode: &str) -> &'static str {
    match mode {
        "inline" => "Inline mode",
        "encap" => "Encap. mode",
        "l2encap" => "Encap. L2 mode",
        "encap.red" => "Encap. Red mode",
        "l2encap.red" => "Encap. L2 Red mode",
        _ => "?",
    }
}

/// The paper's protocol heading.
pub fn table1_proto_label(proto: Proto) -> &'static str {
    match proto {
        Proto::Ioam6 => "IOAM",
        Proto::Seg6 => "SRv6",
        Proto::Rpl => "RPL",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn p(proto: Proto, mode: &str, size: usize) -> Prediction {
        predict(&Scenario::paper(proto, mode, size)).unwrap()
    }

    fn with(proto: Proto, mode: &str, line: usize, h0: usize) -> Scenario {
        Scenario {
            cache_line: line,
            rx_headroom: h0,
            ..Scenario::paper(proto, mode, 1)
        }
    }

    fn doubles(s: &Scenario) -> Vec<usize> {
        double_realloc_sizes(s, &Options::default()).unwrap()
    }

    /// 13, 17, 21, ... up to `max`, i.e. n ≡ r (mod k), n >= from.
    fn every(from: usize, k: usize, max: usize) -> Vec<usize> {
        (from..=max).step_by(k).collect()
    }

    #[test]
    fn overheads_match_the_spec_formulas() {
        // §5.2: seg6 encap O = 48 + 16n, encap.red 32 + 16n (n >= 2), inline 24 + 16n, IOAM inline 16 + ALIGN(t, 8),
        // IOAM encap 56 + ALIGN(t, 8), RPL uncompressed 8 + 16N.
        for n in 1..=20 {
            assert_eq!(p(Proto::Seg6, "encap", n).overhead_bytes, 48 + 16 * n);
            assert_eq!(p(Proto::Seg6, "l2encap", n).overhead_bytes, 48 + 16 * n);
            assert_eq!(p(Proto::Seg6, "inline", n).overhead_bytes, 24 + 16 * n);
            assert_eq!(p(Proto::Rpl, "inline", n).overhead_bytes, 8 + 16 * n);
            if n >= 2 {
                assert_eq!(p(Proto::Seg6, "encap.red", n).overhead_bytes, 32 + 16 * n);
            }
        }
        // encap.red with one SID: no SRH, only the outer header.
        assert_eq!(p(Proto::Seg6, "encap.red", 1).overhead_bytes, 40);
        for t in (4..=244).step_by(4) {
            assert_eq!(
                p(Proto::Ioam6, "inline", t).overhead_bytes,
                16 + align(t, 8)
            );
            assert_eq!(p(Proto::Ioam6, "encap", t).overhead_bytes, 56 + align(t, 8));
        }
        // HMAC TLV: +40 (hdrlen 2n + 5).
        let s = Scenario {
            hmac: true,
            ..Scenario::paper(Proto::Seg6, "encap", 3)
        };
        assert_eq!(predict(&s).unwrap().overhead_bytes, 48 + 48 + 40);
    }

    #[test]
    fn worked_example_13_sids() {
        // §5.2 worked example: O = 256, need 270 > 206 -> +64 -> 270; push 256 -> 14; 16 > 14 -> second realloc.
        let r = p(Proto::Seg6, "encap", 13);
        assert_eq!(r.overhead_bytes, 256);
        assert_eq!(
            (r.pre_fix, r.post_fix_warm, r.post_fix_first_packet),
            (2, 1, 2)
        );
        // lwt6 with the same 206 bytes: needs 256 + 14 = 270 -> one reallocation.
        assert_eq!(r.lwt6, 1);
        // l2encap adds its unconditional expand: 3 / 2 / 3.
        let r = p(Proto::Seg6, "l2encap", 13);
        assert_eq!(
            (r.pre_fix, r.post_fix_warm, r.post_fix_first_packet),
            (3, 2, 3)
        );
        // 12 SIDs: O = 240, need 254 -> +64 -> 270, push -> 30 >= 16: one.
        let r = p(Proto::Seg6, "encap", 12);
        assert_eq!((r.pre_fix, r.post_fix_warm), (1, 1));
        // 2 SIDs: O = 80, 94 <= 206, after push 126 >= 16: none; lwt6 none.
        let r = p(Proto::Seg6, "encap", 2);
        assert_eq!((r.pre_fix, r.post_fix_warm, r.lwt6), (0, 0, 0));
        assert!(
            r.steps
                .iter()
                .any(|l| l.contains("realloc") || l.contains("nothing to do"))
        );
    }

    #[test]
    fn paper_table1_x86_i40e() {
        // Table 1 of the paper (64-byte lines, i40e, H0 = 206).
        let s = |proto, mode| Scenario::paper(proto, mode, 1);
        assert_eq!(doubles(&s(Proto::Ioam6, "inline")), vec![236, 240]);
        assert_eq!(doubles(&s(Proto::Ioam6, "encap")), vec![196, 200]);
        assert_eq!(doubles(&s(Proto::Seg6, "inline")), Vec::<usize>::new());
        assert_eq!(doubles(&s(Proto::Seg6, "encap")), every(13, 4, 127));
        assert_eq!(doubles(&s(Proto::Seg6, "l2encap")), every(13, 4, 127));
        assert_eq!(doubles(&s(Proto::Seg6, "encap.red")), every(14, 4, 127));
        assert_eq!(doubles(&s(Proto::Seg6, "l2encap.red")), every(14, 4, 127));
        assert_eq!(doubles(&s(Proto::Rpl, "inline")), Vec::<usize>::new());
        assert_eq!(
            table1_cell(Proto::Seg6, &every(13, 4, 127)),
            "For 13, 17, 21, 25, 29, 33, .. segments"
        );
        assert_eq!(
            table1_cell(Proto::Ioam6, &[236, 240]),
            "PTO of 236 or 240 bytes"
        );
        assert_eq!(table1_cell(Proto::Rpl, &[]), "None");
    }

    #[test]
    fn hand_derived_32_byte_lines() {
        // P = 32, H0 = 206 (i40e: ALIGN(320, 32) = 320, pad 192). Double iff d = O + 14 − 206 > 0 and
        // d ≡ 0 (mod 32) (then the first cow lands exactly on O + 14, leaving 14 < 16).
        // encap O = 48 + 16n: d = 16n − 144 ≡ 0 mod 32 ⟺ n odd, and d > 0 ⟺ n > 9 → every odd n ≥ 11.
        let s = with(Proto::Seg6, "encap", 32, 206);
        assert_eq!(doubles(&s), every(11, 2, 127));
        // encap.red O = 32 + 16n: d = 16n − 160 → n even, n > 10 → every even n ≥ 12.
        let s = with(Proto::Seg6, "encap.red", 32, 206);
        assert_eq!(doubles(&s), every(12, 2, 127));
        // IOAM inline O = 16 + ALIGN(t, 8): d = ALIGN(t,8) − 176 ∈ {32, 64} → ALIGN(t,8) ∈ {208, 240}
        // → t ∈ {204, 208, 236, 240}. Encap O = 56 + ALIGN(t, 8): ALIGN(t,8) ∈ {168, 200, 232}.
        assert_eq!(
            doubles(&with(Proto::Ioam6, "inline", 32, 206)),
            vec![204, 208, 236, 240]
        );
        assert_eq!(
            doubles(&with(Proto::Ioam6, "encap", 32, 206)),
            vec![164, 168, 196, 200, 228, 232]
        );
        assert!(doubles(&with(Proto::Seg6, "inline", 32, 206)).is_empty());
        // Single case by hand: n = 13, O = 256, need 270 − 206 = 64 → ALIGN(64, 32) = 64 → 270 → 14 → again.
        let r = predict(&Scenario {
            size: 13,
            ..with(Proto::Seg6, "encap", 32, 206)
        })
        .unwrap();
        assert_eq!((r.pre_fix, r.post_fix_warm), (2, 1));
    }

    #[test]
    fn hand_derived_128_byte_lines() {
        // P = 128 with the cover letter's H0 = 206: d = 16n − 144 ≡ 0 mod 128 ⟺ n ≡ 9 mod 8, n > 9 → 17, 25, 33 …
        assert_eq!(
            doubles(&with(Proto::Seg6, "encap", 128, 206)),
            every(17, 8, 127)
        );
        assert_eq!(
            doubles(&with(Proto::Seg6, "encap.red", 128, 206)),
            every(18, 8, 127)
        );
        // IOAM: d ≤ 240 + 16 + 14 − 206 = 64 < 128, never a multiple of 128 → none.
        assert!(doubles(&with(Proto::Ioam6, "inline", 128, 206)).is_empty());
        assert!(doubles(&with(Proto::Ioam6, "encap", 128, 206)).is_empty());
        // i40e with 128-byte lines really has H0 = 142: d = 16n − 80 ≡ 0 mod 128 ⟺ n ≡ 5 mod 8, n > 5 → 13, 21, …
        assert_eq!(
            doubles(&with(Proto::Seg6, "encap", 128, 142)),
            every(13, 8, 127)
        );
        assert_eq!(
            doubles(&with(Proto::Seg6, "encap.red", 128, 142)),
            every(14, 8, 127)
        );
        // IOAM inline: d = ALIGN(t,8) + 30 − 142 = ALIGN(t,8) − 112 = 128 → ALIGN(t,8) = 240 → 236, 240.
        assert_eq!(
            doubles(&with(Proto::Ioam6, "inline", 128, 142)),
            vec![236, 240]
        );
        assert_eq!(
            doubles(&with(Proto::Ioam6, "encap", 128, 142)),
            vec![196, 200]
        );
        assert!(doubles(&with(Proto::Seg6, "inline", 128, 142)).is_empty());
    }

    #[test]
    fn off_by_one_landing_also_doubles() {
        // (−d) mod P < L − m = 2: the first cow may also land 1 byte short of 16 after the push. With O a multiple
        // of 8 that needs an odd H0: H0 = 207, O = 256 → d = 63 → +64 → 271 → push → 15 < 16 → second.
        let s = Scenario {
            size: 13,
            ..with(Proto::Seg6, "encap", 64, 207)
        };
        let r = predict(&s).unwrap();
        assert_eq!(r.pre_fix, 2);
        // H0 = 208: d = 62 → +64 → 272 → 16: fine.
        let r = predict(&Scenario {
            rx_headroom: 208,
            ..s
        })
        .unwrap();
        assert_eq!(r.pre_fix, 1);
    }

    #[test]
    fn no_realloc_when_headroom_covers_o_plus_l() {
        // §5.2: none iff H0 − O ≥ L. H0 = 206, encap n = 8: O = 176, 206 − 176 = 30 ≥ 16 → 0 everywhere.
        let r = p(Proto::Seg6, "encap", 8);
        assert_eq!(
            (r.pre_fix, r.post_fix_warm, r.post_fix_first_packet),
            (0, 0, 0)
        );
        // n = 9: O = 192, 206 − 192 = 14 < 16 but need O + 14 = 206 fits: the pre-fix path reallocates only on the
        // second (LL_RESERVED_SPACE) call; the fixed path asks for O + 16 = 208 once.
        let r = p(Proto::Seg6, "encap", 9);
        assert_eq!(
            (r.pre_fix, r.post_fix_warm, r.post_fix_first_packet),
            (1, 1, 1)
        );
    }

    #[test]
    fn legacy_rx_doubles_more_often() {
        // i40e legacy-rx, H0 = 64 + 14 = 78: d = O − 64 ≡ 0 mod 64 with d > 0 → O ∈ {128, 192, 256, ...}:
        // encap 48 + 16n → n = 5, 9, 13, ... ; IOAM inline ALIGN(t,8) ∈ {112, 176, 240}.
        assert_eq!(
            doubles(&with(Proto::Seg6, "encap", 64, 78)),
            every(5, 4, 127)
        );
        assert_eq!(
            doubles(&with(Proto::Ioam6, "inline", 64, 78)),
            vec![108, 112, 172, 176, 236, 240]
        );
    }

    #[test]
    fn locally_generated_packets() {
        // UDP from the router: H0 = 16 + 8 = 24, mac_len 0. Pre-fix encap: need O; d = O − 24 = 24 + 16n;
        // double iff ALIGN(d, 64) − d < 16 ⟺ d mod 64 ∈ {0} ∪ 49..=63; d ≡ 8 (mod 16) leaves only
        // 24 + 16n ≡ 56 (mod 64) ⟺ n ≡ 2 (mod 4).
        let base = Scenario {
            locally_generated: true,
            rx_headroom: local_headroom(16),
            ..Scenario::paper(Proto::Seg6, "encap", 1)
        };
        assert_eq!(local_headroom(16), 24);
        assert_eq!(doubles(&base), every(2, 4, 127));
        // n = 2: O = 80, need 80 > 24 → ALIGN(56, 64) = 64 → 88 → push → 8 < 16 → second. Warm cache: need 96 →
        // ALIGN(72, 64) = 128 → 152 → 72: one.
        let r = predict(&Scenario {
            size: 2,
            ..base.clone()
        })
        .unwrap();
        assert_eq!(
            (r.pre_fix, r.post_fix_warm, r.post_fix_first_packet),
            (2, 1, 2)
        );
        // l2encap is input-only.
        let e = predict(&Scenario {
            mode: "l2encap".into(),
            ..base
        })
        .unwrap_err();
        assert!(e.contains("not valid for locally generated"), "{e}");
    }

    #[test]
    fn rpl_never_uncompressed_but_compression_can_trigger_it() {
        // Uncompressed O = 8 + 16N ≡ 8 (mod 16): d = 16N − 184 is never within 1 of a multiple of 64.
        assert!(doubles(&Scenario::paper(Proto::Rpl, "inline", 1)).is_empty());
        // With 8 shared prefix bytes every address takes 8 bytes: O = 8 + 8N, d = 8N − 184 ≡ 0 mod 64 → N = 31, 39, ...
        let o = Options {
            lwt6_headroom: None,
            rpl_cmpr: 8,
        };
        let s = Scenario {
            size: 31,
            ..Scenario::paper(Proto::Rpl, "inline", 1)
        };
        let r = predict_with(&s, &o).unwrap();
        assert_eq!(r.overhead_bytes, 8 + 8 * 31);
        assert_eq!(r.pre_fix, 2);
        assert_eq!(r.lwt6, 0, "lwt6 sized from the route never reallocates");
    }

    #[test]
    fn ioam_inline_prefix_second_realloc_comes_from_neigh_output() {
        let r = p(Proto::Ioam6, "inline", 236);
        assert_eq!(r.overhead_bytes, 256);
        assert_eq!(
            (r.pre_fix, r.post_fix_warm, r.post_fix_first_packet),
            (2, 1, 2)
        );
        assert!(
            r.steps
                .iter()
                .any(|l| l.starts_with("  pre_fix: ip6_finish_output2") && l.contains("realloc #2"))
        );
    }

    #[test]
    fn bad_input_lists_valid_values() {
        let e = predict(&Scenario::paper(Proto::Rpl, "encap", 3)).unwrap_err();
        assert!(e.contains("valid: inline"), "{e}");
        let e = predict(&Scenario::paper(Proto::Seg6, "encap", 128)).unwrap_err();
        assert!(e.contains("1..=127"), "{e}");
        let e = predict(&Scenario::paper(Proto::Seg6, "inline", 127)).unwrap_err();
        assert!(e.contains("1..=126"), "{e}");
        let e = predict(&Scenario::paper(Proto::Ioam6, "inline", 246)).unwrap_err();
        assert!(e.contains("multiples of 4 from 4 to 244"), "{e}");
        let e = predict(&Scenario::paper(Proto::Ioam6, "inline", 0)).unwrap_err();
        assert!(e.contains("out of range"), "{e}");
        let e = predict(&Scenario {
            cache_line: 48,
            ..Scenario::paper(Proto::Seg6, "encap", 3)
        })
        .unwrap_err();
        assert!(e.contains("32, 64, 128"), "{e}");
        let e = predict(&Scenario {
            ll_reserved: 14,
            ..Scenario::paper(Proto::Seg6, "encap", 3)
        })
        .unwrap_err();
        assert!(e.contains("multiple of 16"), "{e}");
        let e = predict(&Scenario {
            hmac: true,
            ..Scenario::paper(Proto::Ioam6, "inline", 8)
        })
        .unwrap_err();
        assert!(e.contains("seg6 only"), "{e}");
        assert!(
            "srv6"
                .parse::<Proto>()
                .unwrap_err()
                .contains("seg6, ioam6, rpl")
        );
        assert_eq!("IOAM6".parse::<Proto>().unwrap(), Proto::Ioam6);
    }

    proptest! {
        /// Whatever the parameters, predict never panics, and a valid prediction obeys the bounds of the model:
        /// the fixed warm path never does worse than before the fix, the first packet equals the old path,
        /// each path reallocates at most twice for the tunnel (+1 for l2encap), lwt6 at most once.
        #[test]
        fn predict_is_total_and_bounded(
            proto in 0usize..3, mode in 0usize..5, size in 0usize..300, hmac: bool,
            line in prop::sample::select(vec![16usize, 32, 64, 128, 256]),
            h0 in 0usize..600, mac in 0usize..30, ll in 0usize..80, local: bool,
        ) {
            let proto = Proto::ALL[proto];
            let s = Scenario {
                proto, mode: SEG6_MODES[mode].to_string(), size, hmac, cache_line: line,
                rx_headroom: h0, mac_len: mac, ll_reserved: ll, locally_generated: local,
            };
            if let Ok(r) = predict(&s) {
                let l2 = u32::from(s.mode.starts_with("l2"));
                prop_assert!(r.post_fix_warm <= r.pre_fix.max(1 + l2));
                prop_assert!(r.pre_fix <= 2 + l2 + u32::from(proto == Proto::Ioam6 && !local));
                prop_assert_eq!(r.post_fix_first_packet, r.pre_fix);
                prop_assert!(r.lwt6 <= 1);
            }
        }
    }

    /// Cross-check against the dataplane: the Router's `BufferStrategy::LinuxPreFix` / `LinuxPostFix` run the same
    /// kernel calls on real buffers (and `Native` is lwt6), so their reallocation counters must equal the
    /// predictions for every seg6 mode and size.
    mod router_cross_check {
        use super::*;
        use crate::analysis::skb::BufferStrategy;
        use lwt6_dataplane::router::Router;
        use lwt6_dataplane::spec::{Addr, Config, Encap, Link, Neigh, Route};

        fn config(mode: Seg6Mode, n: usize) -> Config {
            let mut c = Config::default();
            for (i, (name, mac)) in [("r0", [2, 0, 0, 0, 1, 2]), ("r1", [2, 0, 0, 0, 2, 1])]
                .into_iter()
                .enumerate()
            {
                c.links.push(Link {
                    name: name.into(),
                    mac: Some(mac),
                    mtu: 9000,
                    line: i + 1,
                });
            }
            for (i, (a, dev)) in [("fd00:1::2", "r0"), ("fd00:2::1", "r1")]
                .into_iter()
                .enumerate()
            {
                c.addrs.push(Addr {
                    addr: a.parse().unwrap(),
                    prefix_len: 64,
                    dev: dev.into(),
                    line: 3 + i,
                });
            }
            c.neighs.push(Neigh {
                addr: "fd00:2::2".parse().unwrap(),
                lladdr: [2, 0, 0, 0, 2, 2],
                dev: "r1".into(),
                line: 5,
            });
            let route = |prefix: &str, via: Option<&str>, encap: Option<Encap>, line| Route {
                reject: None,
                prefix: prefix.parse().unwrap(),
                via: via.map(|v| v.parse().unwrap()),
                dev: Some("r1".into()),
                metric: 1024,
                mtu: None,
                encap: encap.map(Box::new),
                table: 254,
                line,
            };
            c.routes
                .push(route("fc00::/16", Some("fd00:2::2"), None, 6));
            let segs = (1..=n)
                .map(|i| Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, i as u16))
                .collect();
            c.routes.push(route(
                "fd00:99::/64",
                None,
                Some(Encap::Seg6(Seg6Encap {
                    mode,
                    segs,
                    hmac: None,
                    tunsrc: None,
                })),
                7,
            ));
            c
        }

        /// Ethernet (to r0) + IPv6 fd00:1::1 -> fd00:99::1, hop limit 64, UDP 1111 -> 3333 with 18 bytes of 'X'
        /// (the oracle's probe frame, docs/references.md §5.3; checksum left 0, never inspected on forwarding).
        fn frame() -> Vec<u8> {
            let mut f = vec![2, 0, 0, 0, 1, 2, 2, 0, 0, 0, 1, 1, 0x86, 0xdd];
            f.extend_from_slice(&[0x60, 0, 0, 0, 0, 26, 17, 64]);
            f.extend_from_slice(&"fd00:1::1".parse::<Ipv6Addr>().unwrap().octets());
            f.extend_from_slice(&"fd00:99::1".parse::<Ipv6Addr>().unwrap().octets());
            f.extend_from_slice(&[0x04, 0x57, 0x0d, 0x05, 0, 26, 0, 0]);
            f.extend_from_slice(&[b'X'; 18]);
            f
        }

        fn run(mode: Seg6Mode, n: usize, strategy: BufferStrategy, h0: usize) -> u64 {
            let mut r = Router::build(&config(mode, n)).unwrap();
            r.worker.rx_headroom = h0 - ETH_HLEN;
            strategy.install(&mut r);
            let input = frame();
            let mut sent = 0;
            r.process_batch([(0usize, 0u64, input.as_slice())], &mut |_, _, _| sent += 1);
            assert_eq!(
                sent, 1,
                "{mode:?} n={n} {strategy:?}: {:?}",
                r.worker.stats.drops
            );
            r.worker.stats.reallocs
        }

        #[test]
        fn predict_agrees_with_the_router_buffer_strategies() {
            let modes = [
                ("inline", Seg6Mode::Inline),
                ("encap", Seg6Mode::Encap),
                ("l2encap", Seg6Mode::L2Encap),
                ("encap.red", Seg6Mode::EncapRed),
                ("l2encap.red", Seg6Mode::L2EncapRed),
            ];
            let mut doubles_seen = 0;
            for (line, h0) in [
                (64, 206),
                (32, 206),
                (128, 142),
                (64, 78),
                (64, 16),
                (128, 207),
            ] {
                for (name, mode) in modes {
                    for n in (1..=40).chain([61, 97]) {
                        let s = Scenario {
                            size: n,
                            cache_line: line,
                            rx_headroom: h0,
                            ..Scenario::paper(Proto::Seg6, name, n)
                        };
                        let want = predict(&s).unwrap();
                        let pre = run(
                            mode,
                            n,
                            BufferStrategy::LinuxPreFix { cache_line: line },
                            h0,
                        );
                        let post = run(
                            mode,
                            n,
                            BufferStrategy::LinuxPostFix { cache_line: line },
                            h0,
                        );
                        let native = run(mode, n, BufferStrategy::Native, h0);
                        let ctx = format!("{name} n={n} line={line} H0={h0}");
                        assert_eq!(pre, u64::from(want.pre_fix), "pre {ctx}");
                        assert_eq!(post, u64::from(want.post_fix_warm), "post {ctx}");
                        assert_eq!(native, u64::from(want.lwt6), "lwt6 {ctx}");
                        doubles_seen +=
                            usize::from(want.pre_fix >= 2 + u32::from(name.starts_with("l2")));
                    }
                }
            }
            assert!(
                doubles_seen > 20,
                "the sweep must contain double reallocations"
            );
        }
    }
}
