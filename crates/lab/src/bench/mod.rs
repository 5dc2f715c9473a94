//! Forwarding-rate benchmarks of the real pipeline: the paper's Fig. 6 on any machine.
//!
//! Generated Ethernet/IPv6/UDP frames (256 distinct flows) go through [`Router::process_batch`] in memory:
//! parse, route lookup, tunnel, hop limit, MTU, neighbour and L2 rewrite, all included. Each point of a sweep
//! is one tunnel configuration (protocol, mode, size) forwarded under one buffer strategy:
//!
//! - `pre-fix`: Linux before the 2024 fix, its two `skb_cow_head` calls with the kernel's alignment, real
//!   allocation and copy ([`BufferStrategy::LinuxPreFix`]), frames received with the NIC's rx headroom;
//! - `post-fix`: the patched order with a warm route cache ([`BufferStrategy::LinuxPostFix`]);
//! - `lwt6`: lwt6's own plan-then-reserve ([`BufferStrategy::Native`]) with its computed rx headroom;
//! - `lwt6-tiny`: the same with a deliberately tiny rx headroom (one planned growth per packet).
//!
//! Rates are packets / elapsed wall time over whole batches; each point is measured `runs` times, strategies
//! interleaved run by run so that machine noise hits all of them alike, and reported as median, min and max.
//! Reallocations per packet come from the router's own counter.

pub mod fib;
pub mod ioam;
pub mod ioam_live;
pub mod lines;
pub mod plot;
pub mod soak;
pub mod trace;

use crate::analysis::skb;
use crate::analysis::skb::BufferStrategy;
use lwt6_config as config;
use lwt6_dataplane::router::Router;
use lwt6_dataplane::spec::Seg6Mode;
use std::fmt::Write as _;
use std::time::Instant;

/// Bytes i40e leaves in front of the Ethernet header of a received frame (docs/references.md §5.2: 192).
pub const I40E_RX_HEADROOM: usize = 192;
/// Length of an Ethernet header (Linux `mac_len` after `eth_type_trans`).
const MAC_LEN: usize = 14;
/// Default frame length: Ethernet 14 + IPv6 40 + UDP 8 + 16 bytes of payload.
pub const DEFAULT_FRAME_LEN: usize = 78;
/// Distinct frames cycled through the pipeline (one batch).
pub const FLOWS: usize = 256;
/// The paper's reported worst-case forwarding-rate loss from the double reallocation (arXiv 2503.14959).
pub const PAPER_LOSS: f64 = 0.288;

/// What a sweep line forwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// Plain IPv6 forwarding, no tunnel: the baseline.
    Plain,
    /// seg6 in one mode; size = number of SIDs.
    Seg6(Seg6ModeKey),
    /// IOAM pre-allocated trace in a Hop-by-Hop header of the packet; size = trace bytes.
    IoamInline,
    /// IOAM trace in an outer IPv6 header; size = trace bytes.
    IoamEncap,
    /// RPL source routing header; size = number of addresses.
    Rpl,
    /// A seg6local endpoint behaviour (`lwt6 bench floor` only): frames are SRv6 packets around the 78-byte
    /// frame's IPv6 packet, to the SID `fc00:1::e`; size = SIDs in their SRH (End, End.X).
    Local(LocalKey),
}

/// The seg6local behaviours `lwt6 bench floor` measures (the ones with fast-path plans).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LocalKey {
    /// End: the SRH advanced, the next SID looked up.
    End,
    /// End.X: the SRH advanced, out to nh6.
    EndX,
    /// End.DX6: the inner packet out to nh6.
    EndDx6,
}

impl LocalKey {
    /// Every one, in report order.
    pub const ALL: [LocalKey; 3] = [LocalKey::End, LocalKey::EndX, LocalKey::EndDx6];
}

/// [`Seg6Mode`] with an order (for sorting sweep results).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Seg6ModeKey {
    /// `inline`.
    Inline,
    /// `encap`.
    Encap,
    /// `encap.red`.
    EncapRed,
    /// `l2encap`.
    L2Encap,
    /// `l2encap.red`.
    L2EncapRed,
}

impl Seg6ModeKey {
    /// Every mode, in plot order.
    pub const ALL: [Seg6ModeKey; 5] = [
        Seg6ModeKey::Inline,
        Seg6ModeKey::Encap,
        Seg6ModeKey::EncapRed,
        Seg6ModeKey::L2Encap,
        Seg6ModeKey::L2EncapRed,
    ];

    /// The configuration mode.
    pub fn mode(self) -> Seg6Mode {
        match self {
            Seg6ModeKey::Inline => Seg6Mode::Inline,
            Seg6ModeKey::Encap => Seg6Mode::Encap,
            Seg6ModeKey::EncapRed => Seg6Mode::EncapRed,
            Seg6ModeKey::L2Encap => Seg6Mode::L2Encap,
            Seg6ModeKey::L2EncapRed => Seg6Mode::L2EncapRed,
        }
    }

    /// The iproute2 keyword.
    pub fn name(self) -> &'static str {
        self.mode().name()
    }
}

impl Family {
    /// Stable name used in CSV rows and plot file names (`seg6-encap.red`, `ioam6-inline`, ...).
    pub fn name(self) -> String {
        match self {
            Family::Plain => "ipv6".into(),
            Family::Seg6(m) => format!("seg6-{}", m.name()),
            Family::IoamInline => "ioam6-inline".into(),
            Family::IoamEncap => "ioam6-encap".into(),
            Family::Rpl => "rpl".into(),
            Family::Local(LocalKey::End) => "end".into(),
            Family::Local(LocalKey::EndX) => "end-x".into(),
            Family::Local(LocalKey::EndDx6) => "end-dx6".into(),
        }
    }

    /// Parses [`name`](Self::name) (the sweep's families and the seg6local ones).
    pub fn from_name(s: &str) -> Option<Family> {
        Family::all()
            .into_iter()
            .chain(LocalKey::ALL.map(Family::Local))
            .find(|f| f.name() == s)
    }

    /// Protocol (`ipv6`, `seg6`, `ioam6`, `rpl`).
    pub fn proto(self) -> &'static str {
        match self {
            Family::Plain => "ipv6",
            Family::Seg6(_) => "seg6",
            Family::IoamInline | Family::IoamEncap => "ioam6",
            Family::Rpl => "rpl",
            Family::Local(_) => "seg6local",
        }
    }

    /// Mode name within the protocol (`-` for plain forwarding and RPL).
    pub fn mode(self) -> &'static str {
        match self {
            Family::Plain | Family::Rpl => "-",
            Family::Seg6(m) => m.name(),
            Family::IoamInline => "inline",
            Family::IoamEncap => "encap",
            Family::Local(LocalKey::End) => "End",
            Family::Local(LocalKey::EndX) => "End.X",
            Family::Local(LocalKey::EndDx6) => "End.DX6",
        }
    }

    /// Every tunnel family (not the baseline), in report order.
    pub fn all() -> Vec<Family> {
        let mut v = vec![Family::Plain];
        v.extend(Seg6ModeKey::ALL.iter().map(|&m| Family::Seg6(m)));
        v.extend([Family::IoamInline, Family::IoamEncap, Family::Rpl]);
        v
    }

    /// What the size axis counts.
    pub fn size_unit(self) -> &'static str {
        match self {
            Family::Plain => "-",
            Family::Seg6(_) => "SIDs",
            Family::IoamInline | Family::IoamEncap => "trace bytes",
            Family::Rpl => "addresses",
            Family::Local(_) => "SIDs",
        }
    }

    /// The default sweep: 1..40 SIDs, 4..244 trace bytes in steps of 4, 1..16 RPL addresses.
    pub fn default_sizes(self) -> Vec<usize> {
        match self {
            Family::Plain => vec![0],
            Family::Seg6(_) => (1..=40).collect(),
            Family::IoamInline | Family::IoamEncap => (4..=244).step_by(4).collect(),
            Family::Rpl => (1..=16).collect(),
            Family::Local(_) => (2..=8).collect(),
        }
    }

    /// Smallest step between sizes (IOAM traces grow by 4 bytes).
    pub fn size_step(self) -> usize {
        match self {
            Family::IoamInline | Family::IoamEncap => 4,
            _ => 1,
        }
    }

    /// Bytes this tunnel adds in front of the L3 header (the `O` of docs/references.md §5.2), computed from the
    /// protocol definitions, independently of the pipeline: seg6 encap `48 + 16n`, encap.red `32 + 16n`
    /// (`40` for one SID), inline `24 + 16n`; IOAM inline `16 + ALIGN(t, 8)`, encap `56 + ALIGN(t, 8)`. `None`
    /// for RPL, whose size depends on address compression.
    pub fn overhead(self, size: usize) -> Option<usize> {
        let n = size;
        match self {
            Family::Plain => Some(0),
            Family::Seg6(Seg6ModeKey::Inline) => Some(24 + 16 * n),
            Family::Seg6(Seg6ModeKey::Encap | Seg6ModeKey::L2Encap) => Some(48 + 16 * n),
            Family::Seg6(Seg6ModeKey::EncapRed | Seg6ModeKey::L2EncapRed) => {
                Some(if n == 1 { 40 } else { 32 + 16 * n })
            }
            // HbH (2) + pad (2) + IOAM option header (4) + trace header (8) = 16, then the trace rounded to 8.
            Family::IoamInline => Some(16 + skb::align(n, 8)),
            Family::IoamEncap => Some(40 + 16 + skb::align(n, 8)),
            Family::Rpl => None,
            // Nothing is pushed: End and End.X rewrite fields, End.DX6 removes headers.
            Family::Local(_) => Some(0),
        }
    }

    /// The route line (iproute2 syntax) for this family and size, towards `fd00:99::/64`.
    fn route(self, size: usize) -> String {
        let segs = |n: usize| {
            (1..=n)
                .map(|i| format!("fc00::{i:x}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        match self {
            Family::Plain => "-6 route add fd00:99::/64 via fd00:2::2 dev r1".into(),
            Family::Seg6(m) => format!(
                "-6 route add fd00:99::/64 encap seg6 mode {} segs {} dev r1",
                m.name(),
                segs(size)
            ),
            Family::IoamInline => format!(
                "-6 route add fd00:99::/64 encap ioam6 mode inline trace prealloc type 0x800000 ns 123 \
                 size {size} via fd00:2::2 dev r1"
            ),
            Family::IoamEncap => format!(
                "-6 route add fd00:99::/64 encap ioam6 mode encap tundst fc00::1 trace prealloc type 0x800000 \
                 ns 123 size {size} dev r1"
            ),
            Family::Rpl => format!(
                "-6 route add fd00:99::/64 encap rpl segs {} dev r1",
                segs(size)
            ),
            Family::Local(LocalKey::End) => {
                "-6 route add fc00:1::e/128 encap seg6local action End dev r0".into()
            }
            Family::Local(LocalKey::EndX) => {
                "-6 route add fc00:1::e/128 encap seg6local action End.X nh6 fd00:2::2 dev r1"
                    .into()
            }
            Family::Local(LocalKey::EndDx6) => {
                "-6 route add fc00:1::e/128 encap seg6local action End.DX6 nh6 fd00:2::2 dev r1"
                    .into()
            }
        }
    }

    /// The whole router configuration of one sweep point (two links; frames arrive on `r0`).
    pub fn config_text(self, size: usize) -> String {
        format!(
            "link add r0 address 02:00:00:00:01:02\n\
             link add r1 address 02:00:00:00:02:01\n\
             addr add fd00:1::2/64 dev r0\n\
             addr add fd00:2::1/64 dev r1\n\
             neigh add fd00:1::1 lladdr 02:00:00:00:01:01 dev r0\n\
             neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1\n\
             sysctl net.ipv6.ioam6_id=0x111111\n\
             ioam namespace add 123 data 0xdeadbeef\n\
             -6 route add fc00::/16 via fd00:2::2 dev r1\n\
             {}\n",
            self.route(size)
        )
    }
}

/// A buffer strategy as the sweep names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Strategy {
    /// Linux before the fix.
    PreFix,
    /// Linux after the fix (warm route cache).
    PostFix,
    /// lwt6 with its computed rx headroom.
    Lwt6,
    /// lwt6 with a deliberately tiny rx headroom.
    Lwt6Tiny,
    /// lwt6's buffer strategy on the general path (fast-path plans off): the same per-packet code as the Linux
    /// strategies, so the comparison isolates the buffer handling.
    Lwt6General,
    /// lwt6 with templates copied by libc `memcpy` instead of [`WideCopy`](lwt6_dataplane::copy::WideCopy) (the same on
    /// CPUs without AVX2): shows what the copy's size classes do to the curve.
    Lwt6Memcpy,
}

impl Strategy {
    /// The strategies of Fig. 6, plus lwt6 on the general path.
    pub const DEFAULT: [Strategy; 4] = [
        Strategy::PreFix,
        Strategy::PostFix,
        Strategy::Lwt6General,
        Strategy::Lwt6,
    ];

    /// Name in CSV and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::PreFix => "pre-fix",
            Strategy::PostFix => "post-fix",
            Strategy::Lwt6 => "lwt6",
            Strategy::Lwt6Tiny => "lwt6-tiny",
            Strategy::Lwt6General => "lwt6-general",
            Strategy::Lwt6Memcpy => "lwt6-memcpy",
        }
    }

    /// Every strategy, in the order of the CSV and the plots' legends.
    pub const ALL: [Strategy; 6] = [
        Strategy::PreFix,
        Strategy::PostFix,
        Strategy::Lwt6,
        Strategy::Lwt6Tiny,
        Strategy::Lwt6General,
        Strategy::Lwt6Memcpy,
    ];

    /// Parses [`name`](Self::name).
    pub fn from_name(s: &str) -> Option<Strategy> {
        Strategy::ALL.into_iter().find(|x| x.name() == s)
    }

    /// The router's buffer strategy.
    pub fn buffer(self, cache_line: usize) -> BufferStrategy {
        match self {
            Strategy::PreFix => BufferStrategy::LinuxPreFix { cache_line },
            Strategy::PostFix => BufferStrategy::LinuxPostFix { cache_line },
            Strategy::Lwt6 | Strategy::Lwt6Tiny | Strategy::Lwt6General | Strategy::Lwt6Memcpy => {
                BufferStrategy::Native
            }
        }
    }
}

/// Measurement settings.
#[derive(Debug, Clone)]
pub struct Options {
    /// Packets per run.
    pub packets: usize,
    /// Runs per point.
    pub runs: usize,
    /// Rx headroom (before the Ethernet header) for the Linux strategies: the NIC's.
    pub nic_headroom: usize,
    /// Rx headroom for `lwt6`: `None` = the router's computed default.
    pub native_headroom: Option<usize>,
    /// Rx headroom for `lwt6-tiny`.
    pub tiny_headroom: usize,
    /// L1 cache line size (NET_SKB_PAD = max(32, line)).
    pub cache_line: usize,
    /// Received frame length.
    pub frame_len: usize,
    /// When non-zero (sequential sweeps only): instead of `runs` runs of `packets` packets per point, this many
    /// single batches of [`FLOWS`] packets per point and strategy, each timed on its own, interleaved over the
    /// whole sweep (batch 1 of every point and strategy, then batch 2, ...). The point's best rate is then that
    /// of its least disturbed batch, and its neighbours' batches ran microseconds before and after it.
    pub batches: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            packets: 200_000,
            runs: 5,
            nic_headroom: I40E_RX_HEADROOM,
            native_headroom: None,
            tiny_headroom: 0,
            cache_line: 64,
            frame_len: DEFAULT_FRAME_LEN,
            batches: 0,
        }
    }
}

/// Why a bench could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BenchError {
    /// The generated configuration was refused (a size out of the protocol's range, for example).
    #[error("{family} size {size}: configuration refused: {reason}")]
    Config {
        /// Family name.
        family: String,
        /// Size.
        size: usize,
        /// Parser / builder message.
        reason: String,
    },
    /// Frames were dropped instead of forwarded: the measurement would not be of the forwarding path.
    #[error("{family} size {size} {strategy}: {dropped} of {rx} frames dropped ({reasons})")]
    Dropped {
        /// Family name.
        family: String,
        /// Size.
        size: usize,
        /// Strategy name.
        strategy: &'static str,
        /// Frames dropped.
        dropped: u64,
        /// Frames received.
        rx: u64,
        /// Drop reasons.
        reasons: String,
    },
}

/// The generated input: `FLOWS` distinct frames of `len` bytes (UDP, destinations `fd00:99::1..`), received on
/// `r0` of [`Family::config_text`]'s router.
pub fn frames(len: usize) -> Vec<Vec<u8>> {
    let len = len.max(MAC_LEN + 40 + 8);
    (0..FLOWS)
        .map(|i| {
            let mut f = vec![0u8; len];
            f[0..6].copy_from_slice(&[2, 0, 0, 0, 1, 2]);
            f[6..12].copy_from_slice(&[2, 0, 0, 0, 1, 1]);
            f[12..14].copy_from_slice(&[0x86, 0xdd]);
            let ip = &mut f[MAC_LEN..];
            let plen = (len - MAC_LEN - 40) as u16;
            // Version 6, traffic class 0, flow label = flow number.
            ip[0..4].copy_from_slice(&(0x6000_0000u32 | i as u32).to_be_bytes());
            ip[4..6].copy_from_slice(&plen.to_be_bytes());
            ip[6] = 17;
            ip[7] = 64;
            ip[8..24].copy_from_slice(&"fd00:1::1".parse::<std::net::Ipv6Addr>().unwrap().octets());
            let dst = std::net::Ipv6Addr::new(0xfd00, 0x99, 0, 0, 0, 0, 0, i as u16 + 1);
            ip[24..40].copy_from_slice(&dst.octets());
            let udp = &mut ip[40..];
            udp[0..2].copy_from_slice(&(1024 + i as u16).to_be_bytes());
            udp[2..4].copy_from_slice(&9u16.to_be_bytes());
            udp[4..6].copy_from_slice(&plen.to_be_bytes());
            for (k, b) in udp[8..].iter_mut().enumerate() {
                *b = k as u8;
            }
            f
        })
        .collect()
}

/// The frames a family forwards: [`frames`], or for a seg6local family SRv6 packets to `fc00:1::e` around each
/// of them (the received frame's IPv6 packet inside): End and End.X an outer IPv6 header and an SRH of `sids`
/// segments (Segments Left 1, next SID `fc00::b`, which `fc00::/16` routes), End.DX6 an outer IPv6 header alone
/// (as H.Encaps.Red with one SID sends it).
pub fn family_frames(family: Family, len: usize, sids: usize) -> Vec<Vec<u8>> {
    let plain = frames(len);
    let Family::Local(k) = family else {
        return plain;
    };
    let sid: std::net::Ipv6Addr = "fc00:1::e".parse().expect("address");
    let n = sids.max(2);
    plain
        .into_iter()
        .map(|f| {
            let inner = &f[MAC_LEN..];
            let srh_len = if k == LocalKey::EndDx6 { 0 } else { 8 + 16 * n };
            let mut v = f[..MAC_LEN].to_vec();
            v.extend_from_slice(&inner[..4]);
            v.extend_from_slice(&((srh_len + inner.len()) as u16).to_be_bytes());
            v.push(if srh_len > 0 { 43 } else { 41 });
            v.push(64);
            v.extend_from_slice(&inner[8..24]);
            v.extend_from_slice(&sid.octets());
            if srh_len > 0 {
                // RFC 8754 §2: next header 41, Hdr Ext Len 2n, type 4, SL 1, Last Entry n-1; Segment List[1] is
                // this SID, [0] the next one, the rest further SIDs.
                v.extend_from_slice(&[41, (2 * n) as u8, 4, 1, (n - 1) as u8, 0, 0, 0]);
                for i in 0..n {
                    let s: std::net::Ipv6Addr = match i {
                        0 => "fc00::b".parse().expect("address"),
                        1 => sid,
                        i => std::net::Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 1, i as u16),
                    };
                    v.extend_from_slice(&s.octets());
                }
            }
            v.extend_from_slice(inner);
            v
        })
        .collect()
}

/// A router for one sweep point, set up for `strategy`.
pub fn router(
    family: Family,
    size: usize,
    strategy: Strategy,
    opts: &Options,
) -> Result<Router, BenchError> {
    let err = |reason: String| BenchError::Config {
        family: family.name(),
        size,
        reason,
    };
    let cfg = config::parse(&family.config_text(size)).map_err(|e| err(e.to_string()))?;
    let mut r = Router::build(&cfg).map_err(|e| err(e.to_string()))?;
    strategy.buffer(opts.cache_line).install(&mut r);
    r.worker.rx_headroom = match strategy {
        Strategy::PreFix | Strategy::PostFix => opts.nic_headroom,
        Strategy::Lwt6 | Strategy::Lwt6General | Strategy::Lwt6Memcpy => {
            opts.native_headroom.unwrap_or(r.worker.rx_headroom)
        }
        Strategy::Lwt6Tiny => opts.tiny_headroom,
    };
    r.worker.fast_path = strategy != Strategy::Lwt6General;
    if strategy == Strategy::Lwt6Memcpy {
        r.worker.template_copy = None;
    }
    Ok(r)
}

/// Times `f`, which handles `packets` packets; returns packets per second over wall-clock time. (On-CPU time
/// would ignore other processes, but on this kernel it is kept in 4 ms ticks, too coarse for runs of ~30 ms.)
fn timed(packets: usize, f: impl FnOnce()) -> f64 {
    let t0 = Instant::now();
    f();
    packets as f64 / t0.elapsed().as_secs_f64()
}

/// One run: forwards `packets` frames (whole batches of [`FLOWS`]) and returns the rate and a sink value that
/// depends on every frame sent (so nothing can be optimised away).
pub fn run_once(router: &mut Router, frames: &[Vec<u8>], packets: usize) -> (f64, u64) {
    let batches = packets.div_ceil(frames.len()).max(1);
    let mut sink = 0u64;
    let mut out = |_dev: usize, _ts: u64, b: &[u8]| {
        sink = sink.wrapping_add(b.len() as u64 ^ u64::from(b[MAC_LEN]));
    };
    let rate = timed(batches * frames.len(), || {
        for _ in 0..batches {
            router.process_batch(
                frames.iter().map(|f| (0usize, 0u64, f.as_slice())),
                &mut out,
            );
        }
    });
    (rate, std::hint::black_box(sink))
}

/// Median, minimum and maximum of some rates, in Mpps.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Spread {
    /// Median.
    pub median: f64,
    /// Minimum.
    pub min: f64,
    /// Maximum.
    pub max: f64,
}

impl Spread {
    /// From rates in packets per second.
    pub fn of_pps(pps: &[f64]) -> Spread {
        let mut v: Vec<f64> = pps.iter().map(|x| x / 1e6).collect();
        v.sort_by(f64::total_cmp);
        if v.is_empty() {
            return Spread::default();
        }
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Spread {
            median,
            min: v[0],
            max: v[n - 1],
        }
    }
}

/// Most per-run rates a [`Point`] keeps (and writes to the CSV).
const MAX_KEPT_RUNS: usize = 64;

/// One measured point of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// What was forwarded.
    pub family: Family,
    /// SIDs, trace bytes or addresses (0 for the baseline).
    pub size: usize,
    /// Buffer strategy.
    pub strategy: Strategy,
    /// Bytes the pipeline added per packet (measured: output length − input length).
    pub added: usize,
    /// Rx headroom in front of the Ethernet header.
    pub rx_headroom: usize,
    /// Forwarding rate, Mpps.
    pub rate: Spread,
    /// Reallocations per packet (router counter / packets).
    pub reallocs_per_packet: f64,
    /// Rate of every run, Mpps, in run order. In a sequential sweep, run `r` of every point belongs to the same
    /// pass over the sweep, in which neighbouring sizes and the strategies of one size are measured back to back
    /// (milliseconds apart): comparisons within a run are not disturbed by the host's slow and fast phases.
    pub runs_mpps: Vec<f64>,
}

/// One family/size set up under several strategies, warmed up, collecting timed runs.
#[derive(Debug)]
pub struct Prepared {
    family: Family,
    size: usize,
    strategies: Vec<Strategy>,
    routers: Vec<Router>,
    added: Vec<usize>,
    realloc: Vec<f64>,
    rates: Vec<Vec<f64>>,
}

impl Prepared {
    /// Builds the routers and forwards one warm-up batch through each (caches, rx buffer sizing), which also
    /// gives the reallocation and growth figures. Fails if any frame is dropped.
    pub fn new(
        family: Family,
        size: usize,
        strategies: &[Strategy],
        opts: &Options,
        frames: &[Vec<u8>],
    ) -> Result<Prepared, BenchError> {
        let mut routers = strategies
            .iter()
            .map(|&s| router(family, size, s, opts))
            .collect::<Result<Vec<_>, _>>()?;
        let mut added = vec![0usize; strategies.len()];
        let mut realloc = vec![0f64; strategies.len()];
        for (k, r) in routers.iter_mut().enumerate() {
            let mut out_len = 0usize;
            r.process_batch(
                frames.iter().map(|f| (0usize, 0u64, f.as_slice())),
                &mut |_, _, b| out_len = b.len(),
            );
            added[k] = out_len.saturating_sub(frames[frames.len() - 1].len());
            let st = &r.worker.stats;
            if st.tx != st.rx || !st.balanced() {
                let reasons = st
                    .drops
                    .iter()
                    .map(|(k, v)| format!("{} {v}", k.name()))
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(BenchError::Dropped {
                    family: family.name(),
                    size,
                    strategy: strategies[k].name(),
                    dropped: st.dropped(),
                    rx: st.rx,
                    reasons,
                });
            }
            realloc[k] = st.reallocs as f64 / st.rx as f64;
        }
        Ok(Prepared {
            family,
            size,
            strategies: strategies.to_vec(),
            rates: vec![Vec::new(); strategies.len()],
            routers,
            added,
            realloc,
        })
    }

    /// One timed run of every strategy, one after the other.
    pub fn run(&mut self, frames: &[Vec<u8>], packets: usize) {
        for (k, r) in self.routers.iter_mut().enumerate() {
            self.rates[k].push(run_once(r, frames, packets).0);
        }
    }

    /// The points (one per strategy).
    pub fn points(&self) -> Vec<Point> {
        self.strategies
            .iter()
            .enumerate()
            .map(|(k, &s)| Point {
                family: self.family,
                size: self.size,
                strategy: s,
                added: self.added[k],
                rx_headroom: self.routers[k].worker.rx_headroom,
                rate: Spread::of_pps(&self.rates[k]),
                // Kept for runs (a handful per point), not for single-batch timings (thousands).
                runs_mpps: if self.rates[k].len() <= MAX_KEPT_RUNS {
                    self.rates[k].iter().map(|r| r / 1e6).collect()
                } else {
                    Vec::new()
                },
                reallocs_per_packet: self.realloc[k],
            })
            .collect()
    }
}

/// Measures one family/size under several strategies, interleaving the strategies run by run.
pub fn measure_point(
    family: Family,
    size: usize,
    strategies: &[Strategy],
    opts: &Options,
    frames: &[Vec<u8>],
) -> Result<Vec<Point>, BenchError> {
    let mut p = Prepared::new(family, size, strategies, opts, frames)?;
    for _ in 0..opts.runs.max(1) {
        p.run(frames, opts.packets);
    }
    Ok(p.points())
}

/// The physical floor of H.Encaps: a loop that, for each packet, only copies the same outgoing header template
/// into the same buffers and hands the result to the same kind of sink.
#[derive(Debug, Clone)]
pub struct FloorLoop {
    frames: Vec<Vec<u8>>,
    bufs: Vec<Vec<u8>>,
    template: Vec<u8>,
    head: usize,
}

impl FloorLoop {
    /// Buffers for `frames` with room for `template` in front of their L3 header.
    pub fn new(frames: &[Vec<u8>], template: &[u8]) -> Self {
        let head = template.len().max(64).next_multiple_of(64);
        let bufs = frames
            .iter()
            .map(|f| {
                let mut b = vec![0u8; head + f.len()];
                b[head..].copy_from_slice(f);
                b
            })
            .collect();
        FloorLoop {
            frames: frames.to_vec(),
            bufs,
            template: template.to_vec(),
            head,
        }
    }

    /// One pass over every buffer; `rx_copy` adds the copy of the received frame into its buffer, which the
    /// in-memory harness makes the pipeline do too. Returns the sink value.
    pub fn pass(&mut self, rx_copy: bool) -> u64 {
        let head = self.head;
        let t = self.template.len();
        // The template replaces the received Ethernet header: it ends where the L3 header starts.
        let at = head + MAC_LEN - t;
        let mut sink = 0u64;
        for (b, f) in self.bufs.iter_mut().zip(&self.frames) {
            if rx_copy {
                b[head..head + f.len()].copy_from_slice(f);
            }
            b[at..at + t].copy_from_slice(&self.template);
            let out = std::hint::black_box(&b[at..]);
            sink = sink.wrapping_add(out.len() as u64 ^ u64::from(out[MAC_LEN]));
        }
        sink
    }
}

/// Times [`FloorLoop`] over `packets` packets (whole passes).
pub fn floor_once(frames: &[Vec<u8>], template: &[u8], packets: usize, rx_copy: bool) -> f64 {
    let mut l = FloorLoop::new(frames, template);
    let passes = packets.div_ceil(frames.len()).max(1);
    let mut sink = 0u64;
    let rate = timed(passes * frames.len(), || {
        for _ in 0..passes {
            sink = sink.wrapping_add(l.pass(rx_copy));
        }
    });
    std::hint::black_box(sink);
    rate
}

/// Result of [`floor`]: lwt6's rate on a family/size and the two floors, measured interleaved in one run.
#[derive(Debug, Clone, PartialEq)]
pub struct FloorReport {
    /// Family measured.
    pub family: Family,
    /// Size.
    pub size: usize,
    /// Frame length.
    pub frame_len: usize,
    /// Header template length (bytes written in front of the L3 packet, Ethernet included).
    pub template_len: usize,
    /// lwt6 native through the whole pipeline.
    pub lwt6: Spread,
    /// Template copy only.
    pub floor: Spread,
    /// Rx copy plus template copy.
    pub floor_rx: Spread,
}

/// Measures lwt6 native on `family`/`size` (default: seg6 encap, 2 SIDs) beside the physical floor.
pub fn floor(family: Family, size: usize, opts: &Options) -> Result<FloorReport, BenchError> {
    let frames = family_frames(family, opts.frame_len, size);
    let mut r = router(family, size, Strategy::Lwt6, opts)?;
    let mut first: Vec<u8> = Vec::new();
    r.process_batch([(0usize, 0u64, frames[0].as_slice())], &mut |_, _, b| {
        first = b.to_vec()
    });
    if first.is_empty() {
        return Err(BenchError::Dropped {
            family: family.name(),
            size,
            strategy: "lwt6",
            dropped: 1,
            rx: 1,
            reasons: "no output".into(),
        });
    }
    // The template: everything in front of the received L3 packet (Ethernet + outer headers); for a behaviour that
    // removes headers (End.DX6), the Ethernet header.
    let template_len = first
        .len()
        .checked_sub(frames[0].len() - MAC_LEN)
        .unwrap_or(MAC_LEN);
    let template = first[..template_len].to_vec();
    run_once(&mut r, &frames, opts.packets / 4);
    let (mut a, mut b, mut c) = (vec![], vec![], vec![]);
    for _ in 0..opts.runs.max(1) {
        a.push(run_once(&mut r, &frames, opts.packets).0);
        b.push(floor_once(&frames, &template, opts.packets, false));
        c.push(floor_once(&frames, &template, opts.packets, true));
    }
    Ok(FloorReport {
        family,
        size,
        frame_len: opts.frame_len,
        template_len,
        lwt6: Spread::of_pps(&a),
        floor: Spread::of_pps(&b),
        floor_rx: Spread::of_pps(&c),
    })
}

/// Reallocations per packet Linux performs before the fix, from the closed form of docs/references.md §5.2 (not from
/// the pipeline): with `d = O + m − H0`, two iff `d > 0` and `(−d) mod P < L − m`; one iff `d > 0` otherwise or
/// `H0 − O < L`; none otherwise. l2encap adds its unconditional `pskb_expand_head(mac_len)`, after which the
/// headroom is `H0 + m` and the L2 header is part of the pushed bytes.
pub fn predicted_prefix_reallocs(
    family: Family,
    size: usize,
    rx_headroom: usize,
    cache_line: usize,
) -> Option<u32> {
    let o = family.overhead(size)?;
    let p = skb::net_skb_pad(cache_line) as i64;
    let l = skb::ll_reserved_space(MAC_LEN, 0) as i64;
    let m = MAC_LEN as i64;
    let (h0, extra) = match family {
        Family::Plain | Family::Local(_) => return Some(0),
        // After pskb_expand_head(mac_len) the headroom in front of the inner Ethernet header is rx + m, and the
        // pushed bytes are O (the inner Ethernet header is already inside the data).
        Family::Seg6(Seg6ModeKey::L2Encap | Seg6ModeKey::L2EncapRed) => (rx_headroom as i64 + m, 1),
        _ => (rx_headroom as i64 + m, 0),
    };
    let o = o as i64;
    let d = o + m - h0;
    let n = if d > 0 {
        if (-d).rem_euclid(p) < l - m { 2 } else { 1 }
    } else if h0 - o < l {
        1
    } else {
        0
    };
    Some(n + extra)
}

/// Reallocations per packet the headroom analyzer ([`crate::analysis::headroom::predict`], a simulation of the
/// kernel's calls) predicts for Linux before the fix, for this family with `rx_headroom` bytes in front of the
/// Ethernet header. `None` for the baseline and for RPL (the analyzer assumes uncompressed addresses).
pub fn analyzer_prefix_reallocs(
    family: Family,
    size: usize,
    rx_headroom: usize,
    cache_line: usize,
) -> Option<u32> {
    use crate::analysis::headroom::{Proto, Scenario, predict};
    let (proto, mode) = match family {
        Family::Seg6(m) => (Proto::Seg6, m.name()),
        Family::IoamInline => (Proto::Ioam6, "inline"),
        Family::IoamEncap => (Proto::Ioam6, "encap"),
        Family::Plain | Family::Rpl | Family::Local(_) => return None,
    };
    let mut sc = Scenario::paper(proto, mode, size);
    sc.cache_line = cache_line;
    sc.rx_headroom = rx_headroom + MAC_LEN;
    predict(&sc).ok().map(|p| p.pre_fix)
}

/// Reallocations per packet after the fix, warm cache (§5.2): one iff `O + L > H0`.
pub fn predicted_postfix_reallocs(family: Family, size: usize, rx_headroom: usize) -> Option<u32> {
    let o = family.overhead(size)?;
    let l = skb::ll_reserved_space(MAC_LEN, 0);
    let (h0, extra) = match family {
        Family::Plain | Family::Local(_) => return Some(0),
        Family::Seg6(Seg6ModeKey::L2Encap | Seg6ModeKey::L2EncapRed) => (rx_headroom + MAC_LEN, 1),
        _ => (rx_headroom + MAC_LEN, 0),
    };
    Some(u32::from(o + l > h0) + extra)
}

/// A simple progress indicator on stderr: a bar redrawn in place on a terminal, a line every 10% otherwise.
#[derive(Debug)]
pub struct Progress {
    total: usize,
    done: usize,
    tty: bool,
    last_decile: usize,
    start: Instant,
    enabled: bool,
}

impl Progress {
    /// A progress indicator for `total` steps (silent when `enabled` is false).
    pub fn new(total: usize, enabled: bool) -> Self {
        use std::io::IsTerminal;
        Progress {
            total: total.max(1),
            done: 0,
            tty: std::io::stderr().is_terminal(),
            last_decile: 0,
            start: Instant::now(),
            enabled,
        }
    }

    /// One step done; `label` says what.
    pub fn step(&mut self, label: &str) {
        self.done += 1;
        if !self.enabled {
            return;
        }
        let frac = self.done as f64 / self.total as f64;
        let el = self.start.elapsed().as_secs_f64();
        let eta = if self.done > 0 { el / frac - el } else { 0.0 };
        if self.tty {
            let w = 30;
            let fill = (frac * w as f64) as usize;
            eprint!(
                "\r[{}{}] {:>4}/{} {:>5.1}s eta {:>5.1}s {:<28}",
                "#".repeat(fill),
                ".".repeat(w - fill),
                self.done,
                self.total,
                el,
                eta,
                label
            );
            if self.done == self.total {
                eprintln!();
            }
        } else {
            let decile = (frac * 10.0) as usize;
            if decile > self.last_decile || self.done == self.total {
                self.last_decile = decile;
                eprintln!(
                    "bench: {:>3.0}% ({}/{}) {:.1}s {}",
                    frac * 100.0,
                    self.done,
                    self.total,
                    el,
                    label
                );
            }
        }
    }
}

/// A sweep request.
#[derive(Debug, Clone)]
pub struct Sweep {
    /// Families and their sizes.
    pub lines: Vec<(Family, Vec<usize>)>,
    /// Strategies.
    pub strategies: Vec<Strategy>,
    /// Measurement settings.
    pub opts: Options,
    /// Worker threads (points are shared out; each thread measures whole points).
    pub jobs: usize,
    /// Show progress on stderr.
    pub progress: bool,
}

/// Runs a sweep. With one job, runs go round robin over all points (see the body); with more, each thread
/// measures whole points. Points come back sorted by family, size and strategy.
pub fn sweep(req: &Sweep) -> Result<Vec<Point>, BenchError> {
    let frames = frames(req.opts.frame_len);
    let work: Vec<(Family, usize)> = req
        .lines
        .iter()
        .flat_map(|(f, sizes)| sizes.iter().map(move |&s| (*f, s)))
        .collect();
    if req.jobs <= 1 {
        // Round robin: run 1 of every point, then run 2 of every point, ... so that a slow phase of the machine
        // (other processes) spreads over all points instead of bending a stretch of one curve.
        let mut prepared = work
            .iter()
            .map(|&(f, s)| Prepared::new(f, s, &req.strategies, &req.opts, &frames))
            .collect::<Result<Vec<_>, _>>()?;
        // A single-batch timing is a run of one batch; its progress is reported per round, not per point.
        let batches = req.opts.batches > 0;
        let (runs, packets) = if batches {
            (req.opts.batches, frames.len())
        } else {
            (req.opts.runs.max(1), req.opts.packets)
        };
        let steps = if batches { runs } else { prepared.len() * runs };
        let mut progress = Progress::new(steps, req.progress);
        for r in 0..runs {
            for p in &mut prepared {
                p.run(&frames, packets);
                if !batches {
                    progress.step(&format!(
                        "run {}/{runs} {} {}",
                        r + 1,
                        p.family.name(),
                        p.size
                    ));
                }
            }
            if batches {
                progress.step(&format!("batch {}/{runs}", r + 1));
            }
        }
        let mut v: Vec<Point> = prepared.iter().flat_map(Prepared::points).collect();
        v.sort_by_key(|p| (p.family, p.size, p.strategy));
        return Ok(v);
    }
    let progress = std::sync::Mutex::new(Progress::new(work.len(), req.progress));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    let first_err = std::sync::Mutex::new(None);
    let worker = || {
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(&(family, size)) = work.get(i) else {
                break;
            };
            match measure_point(family, size, &req.strategies, &req.opts, &frames) {
                Ok(p) => results.lock().expect("no poison").extend(p),
                Err(e) => {
                    first_err.lock().expect("no poison").get_or_insert(e);
                    next.store(work.len(), std::sync::atomic::Ordering::Relaxed);
                    break;
                }
            }
            progress
                .lock()
                .expect("no poison")
                .step(&format!("{} {}", family.name(), size));
        }
    };
    std::thread::scope(|s| {
        for _ in 0..req.jobs {
            s.spawn(worker);
        }
    });
    if let Some(e) = first_err.into_inner().expect("no poison") {
        return Err(e);
    }
    let mut v = results.into_inner().expect("no poison");
    v.sort_by_key(|p| (p.family, p.size, p.strategy));
    Ok(v)
}

/// The columns of `sweep.csv`.
const SWEEP_HEADER: [&str; 15] = [
    "proto",
    "mode",
    "size",
    "size_unit",
    "strategy",
    "added_bytes",
    "rx_headroom",
    "mpps_median",
    "mpps_min",
    "mpps_max",
    "reallocs_per_packet",
    "predicted_reallocs",
    "runs",
    "packets_per_run",
    "mpps_runs",
];

/// CSV of sweep points (header line first).
pub fn to_csv(points: &[Point], opts: &Options) -> String {
    let (runs, packets) = if opts.batches > 0 {
        (opts.batches, FLOWS)
    } else {
        (opts.runs, opts.packets.div_ceil(FLOWS) * FLOWS)
    };
    crate::csvfile::write(
        &SWEEP_HEADER,
        points.iter().map(|p| {
            let predicted = match p.strategy {
                Strategy::PreFix => {
                    predicted_prefix_reallocs(p.family, p.size, p.rx_headroom, opts.cache_line)
                }
                Strategy::PostFix => predicted_postfix_reallocs(p.family, p.size, p.rx_headroom),
                _ => None,
            }
            .map_or(String::new(), |n| n.to_string());
            [
                p.family.proto().to_string(),
                p.family.mode().to_string(),
                p.size.to_string(),
                p.family.size_unit().to_string(),
                p.strategy.name().to_string(),
                p.added.to_string(),
                p.rx_headroom.to_string(),
                format!("{:.4}", p.rate.median),
                format!("{:.4}", p.rate.min),
                format!("{:.4}", p.rate.max),
                format!("{:.3}", p.reallocs_per_packet),
                predicted,
                runs.to_string(),
                packets.to_string(),
                p.runs_mpps
                    .iter()
                    .map(|r| format!("{r:.4}"))
                    .collect::<Vec<_>>()
                    .join(";"),
            ]
        }),
    )
}

/// Parses [`to_csv`] output back into points (for re-plotting without re-measuring). Files from before the
/// `mpps_runs` column (11 to 14 fields) are read too. Errors name the line and the column.
pub fn from_csv(text: &str) -> Result<Vec<Point>, crate::csvfile::CsvError> {
    let t = crate::csvfile::read(text, Some(11))?;
    if t.header.len() < 11 || t.header[..11] != SWEEP_HEADER[..11] {
        return Err(crate::csvfile::CsvError {
            line: 1,
            column: None,
            message: format!(
                "expected the header '{}', found '{}'",
                SWEEP_HEADER.join(","),
                t.header.join(",")
            ),
        });
    }
    let mut v = Vec::new();
    for r in &t.rows {
        let f = &r.fields;
        let family = match f[0].as_str() {
            "ipv6" => Family::Plain,
            "rpl" => Family::Rpl,
            proto => Family::from_name(&format!("{proto}-{}", f[1]))
                .ok_or_else(|| t.error(r, 1, format!("unknown {proto} mode '{}'", f[1])))?,
        };
        let strategy = Strategy::from_name(&f[4])
            .ok_or_else(|| t.error(r, 4, format!("unknown strategy '{}'", f[4])))?;
        let runs_mpps = match f.get(14) {
            Some(runs) if !runs.is_empty() => runs
                .split(';')
                .map(|x| {
                    x.trim()
                        .parse::<f64>()
                        .map_err(|_| t.error(r, 14, format!("'{x}' is not a number")))
                })
                .collect::<Result<_, _>>()?,
            _ => Vec::new(),
        };
        v.push(Point {
            family,
            size: t.parse(r, 2, "a size")?,
            strategy,
            added: t.parse(r, 5, "a byte count")?,
            rx_headroom: t.parse(r, 6, "a byte count")?,
            rate: Spread {
                median: t.number(r, 7)?,
                min: t.number(r, 8)?,
                max: t.number(r, 9)?,
            },
            reallocs_per_packet: t.number(r, 10)?,
            runs_mpps,
        });
    }
    Ok(v)
}

/// The median rates of one family under one strategy, by size.
pub fn line_of(points: &[Point], family: Family, strategy: Strategy) -> Vec<&Point> {
    let mut v: Vec<&Point> = points
        .iter()
        .filter(|p| p.family == family && p.strategy == strategy)
        .collect();
    v.sort_by_key(|p| p.size);
    v
}

/// Largest shortfall of a point below the straight line through its two neighbours (fraction; positive =
/// below), with the size where it happens. `None` with fewer than three points.
/// `best` uses each point's best run (max) instead of its median: the figure least disturbed by other processes.
pub fn worst_shortfall(line: &[&Point], best: bool) -> Option<(usize, f64)> {
    let y = |p: &Point| if best { p.rate.max } else { p.rate.median };
    line.windows(3)
        .map(|w| {
            let (x0, x1, x2) = (w[0].size as f64, w[1].size as f64, w[2].size as f64);
            let (y0, y1, y2) = (y(w[0]), y(w[1]), y(w[2]));
            let expect = y0 + (y2 - y0) * (x1 - x0) / (x2 - x0);
            (w[1].size, 1.0 - y1 / expect)
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// Median of some values (`None` when empty).
fn median(v: &mut [f64]) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// Like [`worst_shortfall`], paired by run: for every point, the shortfall below the line through its neighbours
/// is computed within each run (three measurements taken milliseconds apart), and the median over the runs is
/// taken. The host's slow and fast phases, which last seconds to minutes, then cancel out. `None` without
/// per-run rates.
pub fn worst_shortfall_paired(line: &[&Point]) -> Option<(usize, f64)> {
    line.windows(3)
        .filter_map(|w| {
            let (x0, x1, x2) = (w[0].size as f64, w[1].size as f64, w[2].size as f64);
            let runs = w.iter().map(|p| p.runs_mpps.len()).min()?;
            let mut v: Vec<f64> = (0..runs)
                .map(|r| {
                    let (y0, y1, y2) = (w[0].runs_mpps[r], w[1].runs_mpps[r], w[2].runs_mpps[r]);
                    1.0 - y1 / (y0 + (y2 - y0) * (x1 - x0) / (x2 - x0))
                })
                .collect();
            Some((w[1].size, median(&mut v)?))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// The median over runs of `a`'s rate divided by `b`'s in the same run (strategies of one point run back to
/// back); `None` without per-run rates.
pub fn paired_ratio(a: &Point, b: &Point) -> Option<f64> {
    let mut v: Vec<f64> = a
        .runs_mpps
        .iter()
        .zip(&b.runs_mpps)
        .map(|(x, y)| x / y)
        .collect();
    median(&mut v)
}

/// Markdown summary of a sweep: dips of pre-fix against the predicted positions, smoothness of lwt6, lwt6 against
/// post-fix, reallocations per packet.
pub fn summary(points: &[Point], opts: &Options) -> String {
    let mut s = String::new();
    let families: Vec<Family> = {
        let mut f: Vec<Family> = points.iter().map(|p| p.family).collect();
        f.sort();
        f.dedup();
        f
    };
    let has = |st: Strategy| points.iter().any(|p| p.strategy == st);
    let _ = writeln!(
        s,
        "| family | points | pre-fix 2-realloc sizes (measured) | predicted (§5.2) | match | analyzer agrees | mean dip vs post-fix | \
         mean dip vs pre-fix neighbours | lwt6 worst shortfall vs neighbours | lwt6 worst shortfall, paired by run | \
         lwt6 < post-fix at | lwt6 < post-fix at, paired by run | lwt6-general < post-fix at | \
         reallocs/pkt pre / post / lwt6 / lwt6-tiny |"
    );
    let _ = writeln!(
        s,
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for &fam in &families {
        let pre = line_of(points, fam, Strategy::PreFix);
        let post = line_of(points, fam, Strategy::PostFix);
        let nat = line_of(points, fam, Strategy::Lwt6);
        let general = line_of(points, fam, Strategy::Lwt6General);
        let tiny = line_of(points, fam, Strategy::Lwt6Tiny);
        let base = match fam {
            Family::Seg6(Seg6ModeKey::L2Encap | Seg6ModeKey::L2EncapRed) => 1.0,
            _ => 0.0,
        };
        let measured: Vec<usize> = pre
            .iter()
            .filter(|p| p.reallocs_per_packet >= base + 1.5)
            .map(|p| p.size)
            .collect();
        let predicted: Vec<usize> = pre
            .iter()
            .filter(|p| {
                predicted_prefix_reallocs(fam, p.size, p.rx_headroom, opts.cache_line)
                    .is_some_and(|n| f64::from(n) >= base + 1.5)
            })
            .map(|p| p.size)
            .collect();
        let predictable = fam.overhead(1).is_some();
        let analyzer_ok = pre.iter().all(|p| {
            analyzer_prefix_reallocs(fam, p.size, p.rx_headroom, opts.cache_line)
                .is_none_or(|n| (f64::from(n) - p.reallocs_per_packet).abs() < 1e-9)
        });
        let all_match = pre.iter().all(|p| {
            predicted_prefix_reallocs(fam, p.size, p.rx_headroom, opts.cache_line)
                .is_none_or(|n| (f64::from(n) - p.reallocs_per_packet).abs() < 1e-9)
        });
        let mut vs_post = vec![];
        let mut vs_nb = vec![];
        for &d in &measured {
            let Some(i) = pre.iter().position(|p| p.size == d) else {
                continue;
            };
            if let Some(q) = post.iter().find(|p| p.size == d) {
                vs_post.push(1.0 - pre[i].rate.median / q.rate.median);
            }
            if i > 0 && i + 1 < pre.len() {
                let nb = (pre[i - 1].rate.median + pre[i + 1].rate.median) / 2.0;
                vs_nb.push(1.0 - pre[i].rate.median / nb);
            }
        }
        let mean = |v: &[f64]| {
            if v.is_empty() {
                "-".to_string()
            } else {
                format!("{:.1}%", 100.0 * v.iter().sum::<f64>() / v.len() as f64)
            }
        };
        let short = match (worst_shortfall(&nat, false), worst_shortfall(&nat, true)) {
            (Some((x, f)), Some((xb, fb))) => {
                format!(
                    "{:.2}% at {x} (best runs: {:.2}% at {xb})",
                    100.0 * f,
                    100.0 * fb
                )
            }
            _ => "-".into(),
        };
        let below_post = |line: &[&Point]| -> Vec<String> {
            line.iter()
                .filter_map(|n| {
                    let q = post.iter().find(|p| p.size == n.size)?;
                    (n.rate.median < q.rate.median).then(|| n.size.to_string())
                })
                .collect()
        };
        let below = below_post(&nat);
        let paired_short = worst_shortfall_paired(&nat)
            .map_or("-".into(), |(x, f)| format!("{:.2}% at {x}", 100.0 * f));
        let below_paired: Vec<String> = nat
            .iter()
            .filter_map(|n| {
                let q = post.iter().find(|p| p.size == n.size)?;
                (paired_ratio(n, q)? < 1.0).then(|| n.size.to_string())
            })
            .collect();
        let below_general = below_post(&general);
        let rpp = |l: &[&Point]| {
            if l.is_empty() {
                return "-".to_string();
            }
            let lo = l
                .iter()
                .map(|p| p.reallocs_per_packet)
                .fold(f64::MAX, f64::min);
            let hi = l
                .iter()
                .map(|p| p.reallocs_per_packet)
                .fold(f64::MIN, f64::max);
            if (hi - lo).abs() < 1e-9 {
                format!("{lo}")
            } else {
                format!("{lo}–{hi}")
            }
        };
        let list = |v: &[usize]| {
            if v.is_empty() {
                "none".to_string()
            } else {
                v.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} / {} / {} / {} |",
            fam.name(),
            pre.len().max(nat.len()),
            if has(Strategy::PreFix) {
                list(&measured)
            } else {
                "-".into()
            },
            if predictable {
                list(&predicted)
            } else {
                "n/a".into()
            },
            if !has(Strategy::PreFix) {
                "-"
            } else if !predictable {
                "n/a"
            } else if all_match {
                "yes"
            } else {
                "NO"
            },
            if !has(Strategy::PreFix) || !predictable {
                "-"
            } else if analyzer_ok {
                "yes"
            } else {
                "NO"
            },
            mean(&vs_post),
            mean(&vs_nb),
            short,
            paired_short,
            if post.is_empty() {
                "-".into()
            } else if below.is_empty() {
                "nowhere".into()
            } else {
                below.join(", ")
            },
            if post.is_empty() {
                "-".into()
            } else if below_paired.is_empty() {
                "nowhere".into()
            } else {
                below_paired.join(", ")
            },
            if post.is_empty() || general.is_empty() {
                "-".into()
            } else if below_general.is_empty() {
                "nowhere".into()
            } else {
                below_general.join(", ")
            },
            rpp(&pre),
            rpp(&post),
            rpp(&nat),
            rpp(&tiny),
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(size: usize, runs: &[f64]) -> Point {
        Point {
            family: Family::Rpl,
            size,
            strategy: Strategy::Lwt6,
            added: 0,
            rx_headroom: 0,
            rate: Spread::of_pps(&runs.iter().map(|r| r * 1e6).collect::<Vec<_>>()),
            reallocs_per_packet: 0.0,
            runs_mpps: runs.to_vec(),
        }
    }

    #[test]
    fn pairing_by_run_cancels_a_slow_phase() {
        // Run 1 caught the middle point in a slow phase (half rate) and its neighbours in a fast one: the medians
        // per point put the middle point 50 % below its neighbours, the per-run comparison 0 % (runs 0 and 2 are
        // on the line, run 1 is 50 % below: median 0).
        let line = [
            pt(1, &[10.0, 20.0, 20.0]),
            pt(2, &[10.0, 10.0, 20.0]),
            pt(3, &[10.0, 20.0, 20.0]),
        ];
        let refs: Vec<&Point> = line.iter().collect();
        let (at, f) = worst_shortfall(&refs, false).unwrap();
        assert_eq!(at, 2);
        assert!((f - 0.5).abs() < 1e-12, "{f}");
        let (at, f) = worst_shortfall_paired(&refs).unwrap();
        assert_eq!(at, 2);
        assert!(f.abs() < 1e-12, "{f}");
        // Unequal spacing: the line through (1, 10) and (4, 40) passes 20 at x = 2; 18 is 10 % below.
        let uneven = [pt(1, &[10.0]), pt(2, &[18.0]), pt(4, &[40.0])];
        let refs: Vec<&Point> = uneven.iter().collect();
        let (_, f) = worst_shortfall_paired(&refs).unwrap();
        assert!((f - 0.1).abs() < 1e-12, "{f}");
    }

    #[test]
    fn paired_ratio_is_the_median_of_per_run_ratios() {
        let a = pt(1, &[9.0, 30.0, 11.0]);
        let b = pt(1, &[10.0, 20.0, 10.0]);
        // Ratios 0.9, 1.5, 1.1: median 1.1 (the medians of the points would give 11 / 10 as well, but by chance).
        assert!((paired_ratio(&a, &b).unwrap() - 1.1).abs() < 1e-12);
        assert_eq!(paired_ratio(&pt(1, &[]), &b), None);
    }

    #[test]
    fn csv_round_trip_keeps_the_runs() {
        let p = pt(3, &[1.5, 2.25]);
        let back = from_csv(&to_csv(std::slice::from_ref(&p), &Options::default())).unwrap();
        assert_eq!(back[0].runs_mpps, p.runs_mpps);
        assert_eq!(back[0].size, 3);
    }

    /// The committed docs/plots/sweep.csv (5 runs of 200,192 packets, cache line 64) reads back and is written
    /// again byte for byte; a bad field is named by line and column.
    #[test]
    fn the_committed_sweep_csv_is_rewritten_byte_for_byte() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/plots/sweep.csv");
        let text = std::fs::read_to_string(path).unwrap();
        let points = from_csv(&text).unwrap();
        assert_eq!(points.len(), text.lines().count() - 1);
        assert_eq!(to_csv(&points, &Options::default()), text);
        let bad = text.replacen(",pre-fix,0,192,", ",pre-fix,0,1x2,", 1);
        let e = from_csv(&bad).unwrap_err().to_string();
        assert_eq!(
            e,
            "line 2, column 7 (rx_headroom): '1x2' is not a byte count"
        );
    }
}
