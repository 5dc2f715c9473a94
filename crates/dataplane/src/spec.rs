//! What a router is made of, as typed specs: what a parsed configuration says, before the router is built from
//! it. The syntax lives elsewhere (`lwt6-config`); this is the contract between it and the dataplane.

use crate::wire::ethernet::Mac;
use crate::wire::srh::HmacAlgo;
use ipnet::IpNet;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A whole parsed configuration.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    /// `link add NAME [address MAC] [mtu N]`, in file order.
    pub links: Vec<Link>,
    /// `addr add ADDR/LEN dev NAME`.
    pub addrs: Vec<Addr>,
    /// `neigh add ADDR lladdr MAC dev NAME`.
    pub neighs: Vec<Neigh>,
    /// `route add ...`, `-6 route add ...`, `-4 route add ...`.
    pub routes: Vec<Route>,
    /// `ioam namespace add ID [data D] [wide W]` (+ `ioam namespace set ID schema SID|none`).
    pub ioam_namespaces: Vec<IoamNamespace>,
    /// `ioam schema add ID DATA`.
    pub ioam_schemas: Vec<IoamSchema>,
    /// `ioam domain add NAME namespace N[,M...] [ingress DEV,...] [egress DEV,...] [foreign drop|strip]
    /// [maxsize S] [oversize drop|strip]`.
    pub ioam_domains: Vec<IoamDomain>,
    /// `sr tunsrc set ADDR` (`::` clears it).
    pub sr_tunsrc: Option<Ipv6Addr>,
    /// `sr hmac set KEYID ALGO [secret S]`.
    pub hmac_keys: Vec<HmacKey>,
    /// `sysctl KEY=VALUE`.
    pub sysctl: Sysctls,
}

/// An interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// Name (1-15 chars, no '/', no whitespace, not "." or "..").
    pub name: String,
    /// MAC address; when absent the router derives `02:00:00:00:00:NN` from the link's 1-based index.
    pub mac: Option<Mac>,
    /// MTU (68..=65535); default 1500.
    pub mtu: u32,
    /// Line the link was declared on.
    pub line: usize,
}

/// An address assigned to an interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Addr {
    /// Address.
    pub addr: IpAddr,
    /// Prefix length.
    pub prefix_len: u8,
    /// Interface name (must be a declared link).
    pub dev: String,
    /// Line.
    pub line: usize,
}

/// A static neighbour entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neigh {
    /// Neighbour address.
    pub addr: IpAddr,
    /// Its MAC.
    pub lladdr: Mac,
    /// Interface name.
    pub dev: String,
    /// Line.
    pub line: usize,
}

/// An interface name as routes hold it: reference-counted, so that the routes of one device share one copy
/// (the parser and the kernel-route reader hand out one `DevName` per device; see [`DevNames`]).
pub type DevName = std::sync::Arc<str>;

/// Interface names shared by the routes that name them: [`DevNames::get`] returns the same [`DevName`] for the
/// same name, so that a table of routes through a few devices holds a few names, not one per route.
#[derive(Debug, Clone, Default)]
pub struct DevNames(std::collections::HashSet<DevName>);

impl DevNames {
    /// The shared name `name` (made on first use).
    pub fn get(&mut self, name: &str) -> DevName {
        if let Some(n) = self.0.get(name) {
            return DevName::clone(n);
        }
        let n: DevName = name.into();
        self.0.insert(DevName::clone(&n));
        n
    }
}

/// A route.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    /// Destination prefix (host bits must be zero, as `ip route` requires; `default` = ::/0 or 0.0.0.0/0).
    pub prefix: IpNet,
    /// Gateway (`via`); same family as the prefix, except IPv4 routes may use `via inet6 ADDR`.
    pub via: Option<IpAddr>,
    /// Output interface (`dev`): a shared name (see [`DevName`]), so that a million routes through one device
    /// hold one copy of its name.
    pub dev: Option<DevName>,
    /// Metric (`metric` / `preference`); default 1024 for IPv6, 0 for IPv4.
    pub metric: u32,
    /// Route MTU (`mtu N` or `mtu lock N`).
    pub mtu: Option<RouteMtu>,
    /// Tunnel state (`encap ...`), boxed: most routes have none, and inline it made every route 200 bytes (a
    /// route is now under 100, which the configuration of a large table holds once per route).
    pub encap: Option<Box<Encap>>,
    /// `blackhole`, `unreachable` or `prohibit` before the prefix: a route that drops what it matches (no
    /// device, gateway or encap); `None` for a unicast route.
    pub reject: Option<RejectKind>,
    /// Routing table (`table N`; [`MAIN_TABLE`] when omitted, as `ip route` does).
    pub table: u32,
    /// Line the route was declared on, in 32 bits (the configuration holds one route per route of the table:
    /// 80 bytes rather than 88; past `u32::MAX`, `u32::MAX`, see [`line32`](crate::fib::line32)).
    pub line: u32,
}

/// What a [`Origin::Reject`](crate::fib::Origin::Reject) route does with a packet (Linux: `ip6_pkt_discard`, `ip6_pkt_prohibit`,
/// `dst_discard`; IPv4 `ip_error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RejectKind {
    /// `blackhole`: dropped silently.
    Blackhole,
    /// `unreachable`: ICMPv6 Destination Unreachable code 0 (no route); IPv4 host unreachable (code 1).
    Unreachable,
    /// `prohibit`: ICMPv6 Destination Unreachable code 1 (administratively prohibited); IPv4 code 13
    /// (communication administratively prohibited).
    Prohibit,
    /// A multipath route (`nexthop via .. nexthop via ..`) lwt6 does not forward over: dropped silently rather
    /// than forwarded through a shorter route.
    Multipath,
}

impl RejectKind {
    /// The route type as iproute2 names it (`multipath` for the multipath stand-in).
    pub fn name(self) -> &'static str {
        match self {
            RejectKind::Blackhole => "blackhole",
            RejectKind::Unreachable => "unreachable",
            RejectKind::Prohibit => "prohibit",
            RejectKind::Multipath => "multipath",
        }
    }
}

/// The main routing table (`RT_TABLE_MAIN`): where `ip route` puts routes without `table`, and the one received
/// packets are looked up in.
pub const MAIN_TABLE: u32 = 254;

/// A lightweight tunnel attached to a route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Encap {
    /// `encap seg6 mode MODE segs A,B,.. [hmac KEYID] [tunsrc ADDR]`.
    Seg6(Seg6Encap),
    /// `encap ioam6 [mode inline|encap|auto] [tunsrc A] [tundst B] [freq K/N] [hbh merge|skip]
    /// trace prealloc type T ns N size S [...] [dex type T ns N [flowid F] [seq]]`.
    Ioam6(Ioam6Encap),
    /// `encap rpl segs A,B,..`.
    Rpl(RplEncap),
    /// `encap seg6local action ACTION [attributes]`: an SRv6 endpoint behaviour bound to the route's prefix.
    Seg6Local(Seg6LocalSpec),
}

/// The kinds of lightweight tunnel, in name order: the one list that counters, traces and `show` know tunnels by
/// (re-exported as `tunnel::TunnelKind`; here, beside [`Encap`], because the counters, which the tunnels report
/// their drops to, need it too). Adding a tunnel adds a kind here and its arms in `tunnel/mod.rs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TunnelKind {
    /// `encap ioam6`.
    Ioam6,
    /// `encap rpl`.
    Rpl,
    /// `encap seg6`.
    Seg6,
    /// `encap seg6local`.
    Seg6Local,
}

impl TunnelKind {
    /// Every kind, in name order (the order of [`TunnelKind::index`]).
    pub const ALL: [TunnelKind; 4] = [
        TunnelKind::Ioam6,
        TunnelKind::Rpl,
        TunnelKind::Seg6,
        TunnelKind::Seg6Local,
    ];
    /// How many kinds there are.
    pub const COUNT: usize = Self::ALL.len();

    /// The iproute2 keyword (`encap NAME`).
    pub const fn name(self) -> &'static str {
        match self {
            TunnelKind::Ioam6 => "ioam6",
            TunnelKind::Rpl => "rpl",
            TunnelKind::Seg6 => "seg6",
            TunnelKind::Seg6Local => "seg6local",
        }
    }

    /// Its position in [`TunnelKind::ALL`], for arrays indexed by kind.
    pub const fn index(self) -> usize {
        self as usize
    }
}

impl Encap {
    /// The tunnel's kind.
    pub fn kind(&self) -> TunnelKind {
        match self {
            Encap::Seg6(_) => TunnelKind::Seg6,
            Encap::Ioam6(_) => TunnelKind::Ioam6,
            Encap::Rpl(_) => TunnelKind::Rpl,
            Encap::Seg6Local(_) => TunnelKind::Seg6Local,
        }
    }
}

/// The SRv6 endpoint behaviours (`SEG6_LOCAL_ACTION_*`, RFC 8986 §4), with their Linux action ids. What each takes
/// and does is in the behaviour table, `tunnel::seg6local::BEHAVIOURS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Seg6LocalAction {
    /// End (1).
    End,
    /// End.X (2).
    EndX,
    /// End.T (3).
    EndT,
    /// End.DX2 (4).
    EndDx2,
    /// End.DX6 (5).
    EndDx6,
    /// End.DX4 (6).
    EndDx4,
    /// End.DT6 (7).
    EndDt6,
    /// End.DT4 (8).
    EndDt4,
    /// End.B6 (9).
    EndB6,
    /// End.B6.Encaps (10).
    EndB6Encaps,
    /// End.DT46 (16).
    EndDt46,
    /// End.B6.Encaps.Red (RFC 8986 §4.15; no Linux id).
    EndB6EncapsRed,
}

/// The SRH of End.B6 / End.B6.Encaps (`srh [hmac KEYID] segs A,B,..`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seg6LocalSrh {
    /// Segments in configuration order (the first is the first to visit).
    pub segs: Vec<Ipv6Addr>,
    /// HMAC key id.
    pub hmac: Option<u32>,
}

/// Flavour operations (`SEG6_LOCAL_FLV_OP_*`, as bits `1 << op`).
pub mod flavor {
    /// PSP, Penultimate Segment Pop (RFC 8986 §4.16.1).
    pub const PSP: u32 = 1 << 1;
    /// USP, Ultimate Segment Pop (RFC 8986 §4.16.2).
    pub const USP: u32 = 1 << 2;
    /// USD, Ultimate Segment Decapsulation (RFC 8986 §4.16.3).
    pub const USD: u32 = 1 << 3;
    /// NEXT-C-SID (RFC 9800 §4.1).
    pub const NEXT_CSID: u32 = 1 << 4;
    /// Every flavour with its iproute2 name, in the order iproute2 prints them.
    pub const NAMES: [(u32, &str); 4] = [
        (PSP, "psp"),
        (USP, "usp"),
        (USD, "usd"),
        (NEXT_CSID, "next-csid"),
    ];
    /// Default locator-block length in bits (`SEG6_LOCAL_LCBLOCK_DBITS`).
    pub const DEFAULT_LBLEN: u8 = 32;
    /// Default locator-node function length in bits (`SEG6_LOCAL_LCNODE_FN_DBITS`).
    pub const DEFAULT_NFLEN: u8 = 16;
}

/// `flavors OP[,OP...] [lblen N] [nflen N]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seg6LocalFlavors {
    /// Bit mask of [`flavor`] operations.
    pub ops: u32,
    /// Locator-block length in bits (NEXT-C-SID).
    pub lblen: u8,
    /// Locator-node function length in bits (NEXT-C-SID).
    pub nflen: u8,
}

/// A seg6local route's behaviour and attributes (iproute2 `encap seg6local`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seg6LocalSpec {
    /// The behaviour.
    pub action: Seg6LocalAction,
    /// `nh4 A`: IPv4 next hop (End.DX4).
    pub nh4: Option<Ipv4Addr>,
    /// `nh6 A`: IPv6 next hop (End.X, End.DX6).
    pub nh6: Option<Ipv6Addr>,
    /// `table T`: lookup table (End.T, End.DT6).
    pub table: Option<u32>,
    /// `vrftable T`: the VRF's table (End.DT4, End.DT6, End.DT46).
    pub vrftable: Option<u32>,
    /// `oif DEV`: output interface (End.DX2; End.X).
    pub oif: Option<String>,
    /// `srh [hmac K] segs ...` (End.B6, End.B6.Encaps, End.B6.Encaps.Red).
    pub srh: Option<Seg6LocalSrh>,
    /// `count`: per-route packets / bytes / errors counters.
    pub count: bool,
    /// `flavors ...`.
    pub flavors: Option<Seg6LocalFlavors>,
}

/// seg6 modes (`SEG6_IPTUN_MODE_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Seg6Mode {
    /// `inline` (0).
    Inline,
    /// `encap` (1).
    Encap,
    /// `l2encap` (2).
    L2Encap,
    /// `encap.red` (3).
    EncapRed,
    /// `l2encap.red` (4).
    L2EncapRed,
}

impl Seg6Mode {
    /// The iproute2 keyword.
    pub fn name(self) -> &'static str {
        match self {
            Seg6Mode::Inline => "inline",
            Seg6Mode::Encap => "encap",
            Seg6Mode::L2Encap => "l2encap",
            Seg6Mode::EncapRed => "encap.red",
            Seg6Mode::L2EncapRed => "l2encap.red",
        }
    }
}

/// seg6 tunnel parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seg6Encap {
    /// Mode.
    pub mode: Seg6Mode,
    /// Segments in CLI order (first = first hop); 1..=255 minus the inline slot.
    pub segs: Vec<Ipv6Addr>,
    /// HMAC key id (non-zero; must be configured with `sr hmac set`).
    pub hmac: Option<u32>,
    /// Per-route tunnel source (not with inline; not ::, multicast or loopback).
    pub tunsrc: Option<Ipv6Addr>,
}

/// IOAM LWT modes (`IOAM6_IPTUNNEL_MODE_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IoamMode {
    /// Insert a Hop-by-Hop header into the packet (default).
    Inline,
    /// Encapsulate in an outer IPv6 header towards `tundst`.
    Encap,
    /// Inline for locally generated packets, encap for forwarded ones.
    Auto,
}

/// ioam6 tunnel parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ioam6Encap {
    /// Mode.
    pub mode: IoamMode,
    /// Tunnel source (encap/auto only).
    pub tunsrc: Option<Ipv6Addr>,
    /// Tunnel destination (required for encap/auto).
    pub tundst: Option<Ipv6Addr>,
    /// Insert into the first `freq_k` of every `freq_n` packets (1..=1_000_000, k <= n).
    pub freq_k: u32,
    /// See `freq_k`.
    pub freq_n: u32,
    /// The pre-allocated traces (`trace prealloc type T ns N size S`), inserted in order. Linux takes exactly
    /// one; several, or none with `dex`, are lwt6 extensions (docs/ioam.md).
    pub traces: Vec<IoamTraceSpec>,
    /// A Direct Export option (`dex type T ns N [flowid F] [seq]`, RFC 9326; an lwt6 extension: the kernel inserts
    /// no DEX), inserted after the traces.
    pub dex: Option<IoamDexSpec>,
    /// `hbh merge` (an lwt6 extension: docs/ioam.md): inline mode adds the options into a Hop-by-Hop header the
    /// packet already has; `hbh skip` (the default, as Linux) leaves such packets without IOAM.
    pub hbh_merge: bool,
}

/// The Direct Export option an ioam6 route inserts (RFC 9326 §3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoamDexSpec {
    /// 24-bit trace type: the data each node of the namespace exports.
    pub trace_type: u32,
    /// Namespace id.
    pub namespace: u16,
    /// The Flow ID the option carries, if any.
    pub flow_id: Option<u32>,
    /// Whether the option carries a Sequence Number (per route: 0 for the first packet that carries the option,
    /// then 1, 2, ...).
    pub seq: bool,
}

/// One pre-allocated trace of an ioam6 route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoamTraceSpec {
    /// 24-bit trace type.
    pub trace_type: u32,
    /// Namespace id.
    pub namespace: u16,
    /// Pre-allocated data size in bytes.
    pub size: u16,
}

/// rpl tunnel parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RplEncap {
    /// Segments in CLI order.
    pub segs: Vec<Ipv6Addr>,
}

/// An IOAM namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoamNamespace {
    /// Namespace id.
    pub id: u16,
    /// 32-bit namespace data (default 0xFFFFFFFF).
    pub data: u32,
    /// 64-bit wide data (default all ones).
    pub wide: u64,
    /// Linked schema id.
    pub schema: Option<u32>,
}

/// An IOAM domain (RFC 9197 §5.4, RFC 9486 §5): namespaces whose IOAM data may enter the node only through the
/// domain's ingress interfaces and leave it only through its egress interfaces (the interface roles of the first
/// Linux IOAM implementation: docs/ioam.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoamDomain {
    /// Name (for messages and `show`).
    pub name: String,
    /// The namespaces of the domain (each in at most one domain; each configured with `ioam namespace add`).
    pub namespaces: Vec<u16>,
    /// Interfaces IOAM data of the domain may arrive on.
    pub ingress: Vec<String>,
    /// Interfaces IOAM data of the domain may leave by; leaving by any other, it is removed (and exported).
    pub egress: Vec<String>,
    /// What happens to IOAM data of the domain arriving on an interface that is not an ingress.
    pub foreign: IoamForeign,
    /// `maxsize S`: the largest trace data (octets after a trace option's 8-octet header, pre-allocated or
    /// incremental) an option of the domain may carry; `None`: as large as an option can be.
    pub max_size: Option<u16>,
    /// What happens to a trace of the domain larger than `max_size` arriving at this node (`oversize`).
    pub oversize: IoamForeign,
    /// Line the domain was declared on.
    pub line: usize,
}

/// What happens to IOAM data a domain does not accept: arriving on an interface that is not an ingress of the
/// domain (`foreign`), or a trace larger than the domain allows (`oversize`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IoamForeign {
    /// The packet is dropped (`ioam_foreign`, `ioam_oversize`), the default.
    #[default]
    Drop,
    /// The IOAM option is removed and the packet processed without it.
    Strip,
}

/// An IOAM schema (opaque state snapshot).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoamSchema {
    /// Schema id (24 bits).
    pub id: u32,
    /// Data bytes as given (<= 1020); the router pads them to a multiple of 4.
    pub data: Vec<u8>,
}

/// An SRv6 HMAC key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HmacKey {
    /// Key id (non-zero).
    pub key_id: u32,
    /// Algorithm (`sha1` or `sha256`).
    pub algo: HmacAlgo,
    /// Secret (<= 64 bytes).
    pub secret: Vec<u8>,
}

/// Global and per-interface sysctls lwt6 honours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sysctls {
    /// `net.ipv6.ioam6_id` (24 bits, default 0xFFFFFF).
    pub ioam6_id: u32,
    /// `net.ipv6.ioam6_id_wide` (56 bits, default 0x00FFFFFFFFFFFFFF).
    pub ioam6_id_wide: u64,
    /// `net.ipv6.seg6_flowlabel` (-1, 0 default, 1).
    pub seg6_flowlabel: i32,
    /// `net.ipv6.conf.all.*`.
    pub all: DevSysctls,
    /// `net.ipv6.conf.DEV.*` by device name (only devices that have a key set).
    pub dev: BTreeMap<String, DevSysctls>,
}

impl Default for Sysctls {
    fn default() -> Self {
        Sysctls {
            ioam6_id: 0xFF_FFFF,
            ioam6_id_wide: 0x00FF_FFFF_FFFF_FFFF,
            seg6_flowlabel: 0,
            all: DevSysctls::default(),
            dev: BTreeMap::new(),
        }
    }
}

/// Per-interface `net.ipv6.conf.DEV.*` keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DevSysctls {
    /// `ioam6_enabled` (0/1, default 0).
    pub ioam6_enabled: bool,
    /// `ioam6_id` (16 bits, default 0xFFFF).
    pub ioam6_id: u16,
    /// `ioam6_id_wide` (32 bits, default 0xFFFFFFFF).
    pub ioam6_id_wide: u32,
    /// `seg6_enabled` (0/1, default 0).
    pub seg6_enabled: bool,
    /// `seg6_require_hmac` (-1, 0 default, 1).
    pub seg6_require_hmac: i8,
    /// `rpl_seg_enabled` (0/1, default 0).
    pub rpl_seg_enabled: bool,
    /// `hop_limit` (1..=255, default 64).
    pub hop_limit: u8,
    /// `forwarding` (0/1, default 1: lwt6 is a router).
    pub forwarding: bool,
}

impl Default for DevSysctls {
    fn default() -> Self {
        DevSysctls {
            ioam6_enabled: false,
            ioam6_id: 0xFFFF,
            ioam6_id_wide: 0xFFFF_FFFF,
            seg6_enabled: false,
            seg6_require_hmac: 0,
            rpl_seg_enabled: false,
            hop_limit: 64,
            forwarding: true,
        }
    }
}

/// A configuration error: where, which token, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// 1-based line number (0 when the error is about the file as a whole).
    pub line: usize,
    /// The offending token (may be empty when a token is missing).
    pub token: String,
    /// What is wrong, and what would be valid.
    pub reason: String,
}

/// Most characters of a token an error message shows.
const TOKEN_SHOWN: usize = 64;

/// A token as error messages show it: control characters and quotes escaped (a hostile file cannot drive the
/// terminal), at most 64 characters, then how long it really is.
pub fn shown_token(token: &str) -> String {
    let mut out = String::new();
    for ch in token.chars().take(TOKEN_SHOWN) {
        if ch.is_control() || ch == '\'' || ch == '\u{feff}' {
            out.extend(ch.escape_default());
        } else {
            out.push(ch);
        }
    }
    let n = token.chars().count();
    if n > TOKEN_SHOWN {
        out.push_str(&format!("... ({} bytes)", token.len()));
    }
    out
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.token.is_empty() {
            write!(f, "line {}: {}", self.line, self.reason)
        } else {
            write!(
                f,
                "line {}: '{}': {}",
                self.line,
                shown_token(&self.token),
                self.reason
            )
        }
    }
}

impl std::error::Error for ConfigError {}

/// A table id as iproute2 names it.
pub fn table_name(t: u32) -> String {
    match t {
        254 => "main".into(),
        255 => "local".into(),
        253 => "default".into(),
        t => t.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_in_messages_are_escaped_and_cut() {
        let e = |token: &str| {
            ConfigError {
                line: 3,
                token: token.into(),
                reason: "bad".into(),
            }
            .to_string()
        };
        assert_eq!(e("eth\u{1b}[31m"), "line 3: 'eth\\u{1b}[31m': bad");
        assert_eq!(e("a\0b"), "line 3: 'a\\u{0}b': bad");
        let long = "x".repeat(1_000_000);
        let m = e(&long);
        assert!(m.len() < 120, "{}", m.len());
        assert!(m.contains("... (1000000 bytes)"), "{m}");
    }
}

/// A route's MTU metric (`mtu [lock] N`). Linux applies an unlocked one to forwarded packets only on output,
/// after the hop limit was decremented: its Packet Too Big then quotes the packet with hop limit − 1; a locked
/// one (or the device's MTU) is checked before forwarding and the quote has the hop limit as received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RouteMtu {
    /// The MTU.
    pub value: u32,
    /// `lock`: path MTU discovery may not lower it, and forwarding checks it before the hop limit is decremented.
    pub locked: bool,
}

impl std::fmt::Display for RouteMtu {
    /// As `ip route` prints it after `mtu`: `lock 1400` or `1400`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.locked {
            write!(f, "lock {}", self.value)
        } else {
            write!(f, "{}", self.value)
        }
    }
}
