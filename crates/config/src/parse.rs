//! The line parser.
//!
//! Each line is split into tokens (whitespace separated; a token that starts with `"` or `'` runs to the
//! matching quote, so secrets and schema data may hold spaces or `#`; outside quotes `#` starts a comment,
//! as in `ip -batch`). Commands are applied in file order to a [`Config`] under construction, so a
//! command may only refer to links, namespaces and schemas declared on earlier lines. The one exception is
//! `encap seg6 ... hmac KEYID`: the key may be defined by an `sr hmac set` line anywhere in the file, which
//! is checked once the whole file has been read (so such an error is reported after all line errors).

use super::{
    Addr, Config, ConfigError, DevSysctls, Encap, HmacKey, Ioam6Encap, IoamMode, IoamNamespace,
    IoamSchema, Link, Neigh, Route, RplEncap, Seg6Encap, Seg6Mode,
};
use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use lwt6_wire::ethernet::Mac;
use lwt6_wire::srh::HmacAlgo;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};

type Result<T> = std::result::Result<T, ConfigError>;

/// Longest interface name (`IFNAMSIZ` - 1).
const MAX_IFNAME: usize = 15;
/// Link MTU range (`ETH_MIN_MTU` .. `IP_MAX_MTU` for our purposes).
const MTU_MIN: u64 = 68;
const MTU_MAX: u64 = 65535;
/// IPv6 minimum link MTU (RFC 8200 §5).
const IPV6_MIN_MTU: u64 = 1280;
/// Default link MTU.
const DEFAULT_MTU: u32 = 1500;
/// Metric the kernel gives IPv6 routes added with metric 0 or none (`IP6_RT_PRIO_USER`).
const IPV6_DEFAULT_METRIC: u32 = 1024;
/// `SEG6_HMAC_SECRET_LEN`.
const MAX_HMAC_SECRET: usize = 64;
/// `IOAM6_MAX_SCHEMA_DATA_LEN`.
const MAX_SCHEMA_DATA: usize = 1020;
/// `IOAM6_MAX_SCHEMA_ID`.
const MAX_SCHEMA_ID: u64 = 0xFF_FFFF;
/// `IOAM6_TRACE_DATA_SIZE_MAX`.
const MAX_TRACE_SIZE: u64 = 244;
/// IOAM LWT frequency bound (`IOAM6_IPTUNNEL_FREQ_MAX`).
const MAX_FREQ: u64 = 1_000_000;
/// Trace-type bits the IOAM LWT refuses (§2.2): bits 12-21 and 23, where bit 0 is the MSB of the 24-bit
/// field, so bit k is `1 << (23 - k)`: bits 12..=21 -> 0x800..=0x004 = 0xFFC, bit 23 -> 0x001.
const IOAM_TRACE_TYPE_FORBIDDEN: u32 = 0x00_0FFD;
/// Largest SRH `hdrlen` (a u8).
const MAX_SRH_HDRLEN: usize = 255;
/// Extra 8-octet units the iproute2 HMAC TLV adds to the SRH (40 bytes).
const HMAC_TLV_UNITS: usize = 5;
/// Largest uncompressed RPL header: hdrlen = 2 * N must fit in a u8.
const MAX_RPL_SEGS: usize = 127;

const COMMANDS: &str = "link, addr, neigh, route, ioam, sr, sysctl";
const ROUTE_KEYWORDS: &str = "via, dev, metric, mtu, encap";
const SEG6_MODES: &str = "inline, encap, l2encap, encap.red, l2encap.red";
const SEG6_KEYWORDS: &str = "mode, segs, hmac, tunsrc";
const IOAM6_KEYWORDS: &str = "mode, tunsrc, tundst, freq, trace";
const RPL_KEYWORDS: &str = "segs";
const SYSCTL_KEYS: &str = "net.ipv6.ioam6_id, net.ipv6.ioam6_id_wide, net.ipv6.seg6_flowlabel, \
     net.ipv6.conf.{all,DEV}.{ioam6_enabled, ioam6_id, ioam6_id_wide, seg6_enabled, seg6_require_hmac, \
     rpl_seg_enabled, hop_limit, forwarding}";

/// Parses a whole configuration file. `sr hmac set KEYID ALGO` without `secret S` is an error here
/// (there is no stdin to read); see [`parse_with_stdin`].
pub fn parse(text: &str) -> Result<Config> {
    parse_with_stdin(text, None)
}

/// Like [`parse`], but `sr hmac set KEYID ALGO` lines without `secret` take their secret from `stdin_secret`
/// (the first line of standard input, trailing newline removed), as `echo S | ip sr hmac set ...` does.
/// Only one such line may use it.
pub fn parse_with_stdin(text: &str, stdin_secret: Option<&str>) -> Result<Config> {
    let mut p = Parser {
        cfg: Config::default(),
        links: HashMap::new(),
        addrs: HashMap::new(),
        neighs: HashMap::new(),
        routes: HashMap::new(),
        stdin_secret: stdin_secret.map(|s| s.trim_end_matches(['\n', '\r'])),
        stdin_used_by: None,
        hmac_refs: Vec::new(),
    };
    for (i, raw) in text.split('\n').enumerate() {
        let line = i + 1;
        let toks = tokenize(line, raw)?;
        if toks.is_empty() {
            continue;
        }
        let mut c = Cur { line, toks, pos: 0 };
        p.command(&mut c)?;
    }
    p.finish()
}

/// Builds an error.
fn err(line: usize, token: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError {
        line,
        token: token.to_string(),
        reason: reason.into(),
    }
}

/// Splits one line into tokens, dropping a `#` comment. See the module docs for quoting.
fn tokenize(line: usize, text: &str) -> Result<Vec<&str>> {
    let mut toks = Vec::new();
    let mut rest = text;
    loop {
        rest = rest.trim_start();
        let Some(first) = rest.chars().next() else {
            break;
        };
        if first == '#' {
            break;
        }
        if first == '"' || first == '\'' {
            // The quote is one ASCII byte, so slicing after it is on a char boundary.
            let body = &rest[1..];
            let Some(end) = body.find(first) else {
                return Err(err(line, rest, "unterminated quoted string"));
            };
            toks.push(&body[..end]);
            rest = &body[end + 1..];
            if let Some(next) = rest.chars().next()
                && !next.is_whitespace()
                && next != '#'
            {
                return Err(err(
                    line,
                    rest,
                    "text right after a closing quote (separate tokens with spaces)",
                ));
            }
        } else {
            let end = rest
                .find(|ch: char| ch.is_whitespace() || ch == '#')
                .unwrap_or(rest.len());
            toks.push(&rest[..end]);
            rest = &rest[end..];
        }
    }
    Ok(toks)
}

/// A cursor over one line's tokens.
struct Cur<'t> {
    line: usize,
    toks: Vec<&'t str>,
    pos: usize,
}

impl<'t> Cur<'t> {
    fn peek(&self) -> Option<&'t str> {
        self.toks.get(self.pos).copied()
    }

    fn next(&mut self) -> Option<&'t str> {
        let t = self.peek();
        if t.is_some() {
            self.pos += 1;
        }
        t
    }

    /// The value after keyword `kw`; missing -> `'kw': missing value`.
    fn value(&mut self, kw: &str) -> Result<&'t str> {
        match self.next() {
            Some(t) => Ok(t),
            None => Err(self.err(kw, "missing value")),
        }
    }

    /// The positional value after `prev`; missing -> `'prev': missing value (expected WHAT)`.
    fn positional(&mut self, prev: &str, what: &str) -> Result<&'t str> {
        match self.next() {
            Some(t) => Ok(t),
            None => Err(self.err(prev, format!("missing value (expected {what})"))),
        }
    }

    fn err(&self, token: &str, reason: impl Into<String>) -> ConfigError {
        err(self.line, token, reason)
    }

    /// Fails on any token left on the line.
    fn end(&mut self, expected: &str) -> Result<()> {
        match self.next() {
            None => Ok(()),
            Some(t) => Err(self.err(t, format!("unexpected token ({expected})"))),
        }
    }
}

/// Fails when an option was already given on this line.
fn once<T>(c: &Cur<'_>, slot: &Option<T>, kw: &str) -> Result<()> {
    if slot.is_some() {
        Err(c.err(kw, "given more than once"))
    } else {
        Ok(())
    }
}

/// Address family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fam {
    V4,
    V6,
}

impl Fam {
    fn of(a: &IpAddr) -> Fam {
        match a {
            IpAddr::V4(_) => Fam::V4,
            IpAddr::V6(_) => Fam::V6,
        }
    }

    fn of_net(n: &IpNet) -> Fam {
        match n {
            IpNet::V4(_) => Fam::V4,
            IpNet::V6(_) => Fam::V6,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Fam::V4 => "IPv4",
            Fam::V6 => "IPv6",
        }
    }

    fn flag(self) -> &'static str {
        match self {
            Fam::V4 => "-4",
            Fam::V6 => "-6",
        }
    }

    fn max_len(self) -> u8 {
        match self {
            Fam::V4 => 32,
            Fam::V6 => 128,
        }
    }
}

/// Why a number did not parse.
enum NumErr {
    Invalid,
    TooBig,
}

/// Unsigned decimal or `0x` hex, digits only (no sign, no spaces, no `_`).
fn parse_u64(s: &str) -> std::result::Result<u64, NumErr> {
    let (digits, radix) = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => (h, 16),
        None => (s, 10),
    };
    if digits.is_empty() || !digits.chars().all(|ch| ch.is_digit(radix)) {
        return Err(NumErr::Invalid);
    }
    u64::from_str_radix(digits, radix).map_err(|_| NumErr::TooBig)
}

/// Formats a range bound: hex for large, bit-field-like limits.
fn bound(v: i128) -> String {
    if v > 0xF_FFFF {
        format!("0x{v:X}")
    } else {
        v.to_string()
    }
}

/// A number in `lo..=hi`, decimal or `0x` hex, optionally negative (`-1`) when `lo < 0`.
fn num(c: &Cur<'_>, tok: &str, lo: i128, hi: i128) -> Result<i128> {
    let (neg, body) = match tok.strip_prefix('-') {
        Some(b) if lo < 0 => (true, b),
        _ => (false, tok),
    };
    let range = || format!("out of range (expected {}..={})", bound(lo), bound(hi));
    let v = match parse_u64(body) {
        Ok(v) => i128::from(v),
        Err(NumErr::TooBig) => return Err(c.err(tok, range())),
        Err(NumErr::Invalid) => {
            return Err(c.err(
                tok,
                format!(
                    "invalid number (expected {}..={}, decimal or 0x hex)",
                    bound(lo),
                    bound(hi)
                ),
            ));
        }
    };
    let v = if neg { -v } else { v };
    if v < lo || v > hi {
        return Err(c.err(tok, range()));
    }
    Ok(v)
}

/// A `u32` in `lo..=hi`.
fn num_u32(c: &Cur<'_>, tok: &str, lo: u32, hi: u32) -> Result<u32> {
    let v = num(c, tok, lo.into(), hi.into())?;
    u32::try_from(v).map_err(|_| c.err(tok, "out of range"))
}

/// A `u64` in `lo..=hi`.
fn num_u64(c: &Cur<'_>, tok: &str, lo: u64, hi: u64) -> Result<u64> {
    let v = num(c, tok, lo.into(), hi.into())?;
    u64::try_from(v).map_err(|_| c.err(tok, "out of range"))
}

fn parse_ip(c: &Cur<'_>, tok: &str) -> Result<IpAddr> {
    tok.parse::<IpAddr>()
        .map_err(|_| c.err(tok, "invalid address (expected an IPv4 or IPv6 address)"))
}

fn parse_v6(c: &Cur<'_>, tok: &str) -> Result<Ipv6Addr> {
    match tok.parse::<IpAddr>() {
        Ok(IpAddr::V6(a)) => Ok(a),
        Ok(IpAddr::V4(_)) => Err(c.err(tok, "expected an IPv6 address, got IPv4")),
        Err(_) => Err(c.err(tok, "invalid IPv6 address")),
    }
}

/// `ADDR/LEN` or `ADDR` (host length), returning the address and the length.
fn parse_addr_len(c: &Cur<'_>, tok: &str) -> Result<(IpAddr, u8)> {
    let (a, len) = match tok.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (tok, None),
    };
    let addr = parse_ip(c, a)?;
    let max = Fam::of(&addr).max_len();
    let len = match len {
        None => max,
        Some(l) => {
            let ok = !l.is_empty() && l.len() <= 3 && l.bytes().all(|b| b.is_ascii_digit());
            match l.parse::<u8>() {
                Ok(v) if ok && v <= max => v,
                _ => {
                    return Err(c.err(tok, format!("invalid prefix length (expected 0..={max})")));
                }
            }
        }
    };
    Ok((addr, len))
}

/// A route prefix: `ADDR/LEN` or `ADDR`, host bits clear.
fn parse_prefix(c: &Cur<'_>, tok: &str) -> Result<IpNet> {
    let (addr, len) = parse_addr_len(c, tok)?;
    let net = match addr {
        IpAddr::V4(a) => Ipv4Net::new(a, len).map(IpNet::V4),
        IpAddr::V6(a) => Ipv6Net::new(a, len).map(IpNet::V6),
    }
    .map_err(|_| c.err(tok, "invalid prefix length"))?;
    if net.trunc() != net {
        return Err(c.err(
            tok,
            "Invalid prefix for given prefix length (host bits set)",
        ));
    }
    Ok(net)
}

/// `aa:bb:cc:dd:ee:ff`.
fn parse_mac(c: &Cur<'_>, tok: &str) -> Result<Mac> {
    let bad = || {
        c.err(
            tok,
            "invalid MAC address (expected six hex pairs separated by ':', e.g. 02:00:00:00:00:01)",
        )
    };
    let mut mac = [0u8; 6];
    let mut parts = tok.split(':');
    for byte in mac.iter_mut() {
        let p = parts.next().ok_or_else(bad)?;
        if p.len() != 2 || !p.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        *byte = u8::from_str_radix(p, 16).map_err(|_| bad())?;
    }
    if parts.next().is_some() {
        return Err(bad());
    }
    Ok(mac)
}

/// Interface name rules (`dev_valid_name`), plus the names that would clash with sysctl paths.
fn check_link_name(c: &Cur<'_>, tok: &str) -> Result<()> {
    if tok.is_empty() || tok.len() > MAX_IFNAME {
        return Err(c.err(tok, format!("invalid link name (1..={MAX_IFNAME} bytes)")));
    }
    if tok == "." || tok == ".." {
        return Err(c.err(tok, "invalid link name"));
    }
    if tok
        .chars()
        .any(|ch| ch.is_whitespace() || ch == '/' || ch == ':')
    {
        return Err(c.err(tok, "invalid link name (no whitespace, '/' or ':')"));
    }
    if tok == "all" || tok == "default" {
        return Err(c.err(
            tok,
            "invalid link name (reserved by net.ipv6.conf.all / net.ipv6.conf.default)",
        ));
    }
    Ok(())
}

/// A comma separated list of IPv6 addresses (`segs A,B,C`).
fn parse_segs(c: &Cur<'_>, tok: &str) -> Result<Vec<Ipv6Addr>> {
    if tok.is_empty() {
        return Err(c.err("segs", "missing value"));
    }
    tok.split(',')
        .map(|s| {
            if s.is_empty() {
                Err(c.err(tok, "empty segment in list (expected A[,B...])"))
            } else {
                match s.parse::<IpAddr>() {
                    Ok(IpAddr::V6(a)) => Ok(a),
                    Ok(IpAddr::V4(_)) => Err(c.err(s, "segment must be an IPv6 address")),
                    Err(_) => Err(c.err(s, "invalid IPv6 address in segment list")),
                }
            }
        })
        .collect()
}

/// Route-level keywords (with aliases) that may follow an encap.
const ROUTE_WORDS: &[&str] = &[
    "via",
    "dev",
    "oif",
    "metric",
    "preference",
    "priority",
    "mtu",
    "encap",
];

/// When an encap lacks a required part and stopped at a token that is no route keyword either, that
/// token is the more useful thing to report (likely a misspelt encap keyword).
fn stray(c: &Cur<'_>, kind: &str, keywords: &str) -> Option<ConfigError> {
    let t = c.peek()?;
    if ROUTE_WORDS.contains(&t) {
        return None;
    }
    Some(c.err(
        t,
        format!("unknown keyword (expected one of: {ROUTE_KEYWORDS}; {kind}: {keywords})"),
    ))
}

/// A route's parsed encap with the tokens later (family-dependent) checks report.
struct ParsedEncap<'t> {
    encap: Encap,
    type_tok: &'t str,
    mode_tok: Option<&'t str>,
}

/// Parse state for one file.
struct Parser<'s> {
    cfg: Config,
    /// Link name -> index in `cfg.links`.
    links: HashMap<String, usize>,
    /// (address, dev) -> line.
    addrs: HashMap<(IpAddr, String), usize>,
    /// (address, dev) -> line.
    neighs: HashMap<(IpAddr, String), usize>,
    /// (prefix, metric) -> line.
    routes: HashMap<(IpNet, u32), usize>,
    stdin_secret: Option<&'s str>,
    stdin_used_by: Option<usize>,
    /// `hmac KEYID` on routes: (line, token, key id), checked at the end.
    hmac_refs: Vec<(usize, String, u32)>,
}

impl Parser<'_> {
    fn finish(self) -> Result<Config> {
        for (line, tok, id) in &self.hmac_refs {
            if !self.cfg.hmac_keys.iter().any(|k| k.key_id == *id) {
                return Err(err(
                    *line,
                    tok,
                    format!(
                        "HMAC key {id} is not defined (add 'sr hmac set {id} sha256 secret S')"
                    ),
                ));
            }
        }
        Ok(self.cfg)
    }

    fn command(&mut self, c: &mut Cur<'_>) -> Result<()> {
        let Some(mut word) = c.next() else {
            return Ok(());
        };
        let ip = word == "ip";
        if ip {
            word = c.positional("ip", "a command: link, addr, neigh, route, ioam, sr")?;
        }
        let mut fam: Option<Fam> = None;
        while word.starts_with('-') {
            let f = match word {
                "-4" => Fam::V4,
                "-6" => Fam::V6,
                _ => return Err(c.err(word, "unknown option (expected one of: -4, -6)")),
            };
            if fam.is_some_and(|old| old != f) {
                return Err(c.err(word, "conflicting address family options"));
            }
            fam = Some(f);
            word = c.positional(word, &format!("a command: {COMMANDS}"))?;
        }
        match word {
            "link" => self.link(c),
            "addr" | "address" => self.addr(c, fam),
            "neigh" | "neighbor" | "neighbour" => self.neigh(c, fam),
            "route" => self.route(c, fam),
            "ioam" => self.ioam(c),
            "sr" => self.sr(c),
            "sysctl" if ip || fam.is_some() => Err(c.err(
                word,
                "not an ip command (write 'sysctl -w KEY=VALUE' on its own)",
            )),
            "sysctl" => self.sysctl(c),
            _ => Err(c.err(
                word,
                format!("unknown command (expected one of: {COMMANDS})"),
            )),
        }
    }

    /// The verb after an object word; only those in `valid` are supported.
    fn verb<'t>(c: &mut Cur<'t>, obj: &str, valid: &[&str]) -> Result<&'t str> {
        let list = valid.join(", ");
        let Some(v) = c.next() else {
            return Err(c.err(obj, format!("missing command (expected one of: {list})")));
        };
        if valid.contains(&v) {
            Ok(v)
        } else {
            Err(c.err(v, format!("unsupported command (expected one of: {list})")))
        }
    }

    /// A `dev NAME` reference: the link must be declared on an earlier line.
    fn link_ref(&self, c: &Cur<'_>, name: &str) -> Result<usize> {
        self.links.get(name).copied().ok_or_else(|| {
            c.err(
                name,
                "unknown link (declare it with 'link add NAME' on an earlier line)",
            )
        })
    }

    /// `link add [name] NAME [address MAC] [mtu N]`.
    fn link(&mut self, c: &mut Cur<'_>) -> Result<()> {
        Self::verb(c, "link", &["add"])?;
        let mut name = c.positional("add", "a link name")?;
        if name == "name" {
            name = c.value("name")?;
        }
        check_link_name(c, name)?;
        if let Some(&i) = self.links.get(name) {
            let prev = self.cfg.links.get(i).map_or(0, |l| l.line);
            return Err(c.err(
                name,
                format!("link already exists (declared on line {prev})"),
            ));
        }
        let mut mac = None;
        let mut mtu = None;
        while let Some(kw) = c.next() {
            match kw {
                "address" => {
                    once(c, &mac, kw)?;
                    let t = c.value(kw)?;
                    let m = parse_mac(c, t)?;
                    if m[0] & 1 != 0 || m == [0; 6] {
                        return Err(c.err(t, "invalid link address (multicast or all-zero)"));
                    }
                    mac = Some(m);
                }
                "mtu" => {
                    once(c, &mtu, kw)?;
                    let t = c.value(kw)?;
                    mtu = Some(num_u32(c, t, MTU_MIN as u32, MTU_MAX as u32)?);
                }
                _ => {
                    return Err(c.err(kw, "unknown keyword (expected one of: address, mtu)"));
                }
            }
        }
        self.links.insert(name.to_string(), self.cfg.links.len());
        self.cfg.links.push(Link {
            name: name.to_string(),
            mac,
            mtu: mtu.unwrap_or(DEFAULT_MTU),
            line: c.line,
        });
        Ok(())
    }

    /// `addr add ADDR[/LEN] dev NAME`.
    fn addr(&mut self, c: &mut Cur<'_>, fam: Option<Fam>) -> Result<()> {
        let verb = Self::verb(c, "addr", &["add"])?;
        let atok = c.positional(verb, "ADDR/LEN")?;
        let (addr, prefix_len) = parse_addr_len(c, atok)?;
        let af = Fam::of(&addr);
        if let Some(f) = fam
            && f != af
        {
            return Err(c.err(
                atok,
                format!("{} address given with {}", af.name(), f.flag()),
            ));
        }
        let bad = match addr {
            IpAddr::V6(a) => a.is_unspecified() || a.is_multicast() || a.is_loopback(),
            IpAddr::V4(a) => a.is_unspecified() || a.is_multicast() || a.is_broadcast(),
        };
        if bad {
            return Err(c.err(
                atok,
                "invalid interface address (unspecified, multicast, loopback or broadcast)",
            ));
        }
        let mut dev: Option<&str> = None;
        while let Some(kw) = c.next() {
            match kw {
                "dev" => {
                    once(c, &dev, kw)?;
                    let t = c.value(kw)?;
                    self.link_ref(c, t)?;
                    dev = Some(t);
                }
                _ => return Err(c.err(kw, "unknown keyword (expected one of: dev)")),
            }
        }
        let Some(dev) = dev else {
            return Err(c.err(atok, "missing 'dev NAME'"));
        };
        let li = self.link_ref(c, dev)?;
        if af == Fam::V6
            && let Some(link) = self.cfg.links.get(li)
            && u64::from(link.mtu) < IPV6_MIN_MTU
        {
            return Err(c.err(
                atok,
                format!(
                    "link {dev} has mtu {}, below the IPv6 minimum of {IPV6_MIN_MTU}",
                    link.mtu
                ),
            ));
        }
        let key = (addr, dev.to_string());
        if let Some(prev) = self.addrs.get(&key) {
            return Err(c.err(
                atok,
                format!("address already assigned to {dev} (line {prev})"),
            ));
        }
        self.addrs.insert(key, c.line);
        self.cfg.addrs.push(Addr {
            addr,
            prefix_len,
            dev: dev.to_string(),
            line: c.line,
        });
        Ok(())
    }

    /// `neigh add ADDR lladdr MAC dev NAME [nud permanent]`.
    fn neigh(&mut self, c: &mut Cur<'_>, fam: Option<Fam>) -> Result<()> {
        let verb = Self::verb(c, "neigh", &["add"])?;
        let atok = c.positional(verb, "a neighbour address")?;
        let addr = parse_ip(c, atok)?;
        let af = Fam::of(&addr);
        if let Some(f) = fam
            && f != af
        {
            return Err(c.err(
                atok,
                format!("{} address given with {}", af.name(), f.flag()),
            ));
        }
        let bad = match addr {
            IpAddr::V6(a) => a.is_unspecified() || a.is_multicast(),
            IpAddr::V4(a) => a.is_unspecified() || a.is_multicast() || a.is_broadcast(),
        };
        if bad {
            return Err(c.err(
                atok,
                "invalid neighbour address (unspecified, multicast or broadcast)",
            ));
        }
        let mut lladdr = None;
        let mut dev: Option<&str> = None;
        let mut nud: Option<&str> = None;
        while let Some(kw) = c.next() {
            match kw {
                "lladdr" => {
                    once(c, &lladdr, kw)?;
                    let t = c.value(kw)?;
                    lladdr = Some(parse_mac(c, t)?);
                }
                "dev" => {
                    once(c, &dev, kw)?;
                    let t = c.value(kw)?;
                    self.link_ref(c, t)?;
                    dev = Some(t);
                }
                "nud" => {
                    once(c, &nud, kw)?;
                    let t = c.value(kw)?;
                    if t != "permanent" {
                        return Err(c.err(
                            t,
                            "unsupported neighbour state (expected one of: permanent)",
                        ));
                    }
                    nud = Some(t);
                }
                _ => {
                    return Err(c.err(kw, "unknown keyword (expected one of: lladdr, dev, nud)"));
                }
            }
        }
        let Some(lladdr) = lladdr else {
            return Err(c.err(atok, "missing 'lladdr MAC'"));
        };
        let Some(dev) = dev else {
            return Err(c.err(atok, "missing 'dev NAME'"));
        };
        let key = (addr, dev.to_string());
        if let Some(prev) = self.neighs.get(&key) {
            return Err(c.err(
                atok,
                format!("neighbour already exists on {dev} (line {prev})"),
            ));
        }
        self.neighs.insert(key, c.line);
        self.cfg.neighs.push(Neigh {
            addr,
            lladdr,
            dev: dev.to_string(),
            line: c.line,
        });
        Ok(())
    }

    /// `route add [to] PREFIX|default [via [inet|inet6] ADDR] [dev NAME] [metric N] [mtu [lock] N] [encap ...]`.
    fn route(&mut self, c: &mut Cur<'_>, flag: Option<Fam>) -> Result<()> {
        let verb = Self::verb(c, "route", &["add"])?;
        let mut ptok = c.positional(verb, "a prefix or 'default'")?;
        if ptok == "to" {
            ptok = c.value("to")?;
        }
        let prefix = if ptok == "default" {
            None
        } else {
            let p = parse_prefix(c, ptok)?;
            if let Some(f) = flag
                && f != Fam::of_net(&p)
            {
                return Err(c.err(
                    ptok,
                    format!("{} prefix on a {} route", Fam::of_net(&p).name(), f.flag()),
                ));
            }
            Some(p)
        };

        // (gateway, explicit family word, address token)
        let mut via: Option<(IpAddr, Option<Fam>, &str)> = None;
        let mut dev: Option<&str> = None;
        let mut metric: Option<u32> = None;
        let mut mtu: Option<(u32, &str)> = None;
        let mut encap: Option<ParsedEncap<'_>> = None;
        while let Some(kw) = c.next() {
            match kw {
                "via" => {
                    once(c, &via, kw)?;
                    let mut t = c.value(kw)?;
                    let mut explicit = None;
                    if t == "inet" || t == "inet6" {
                        explicit = Some(if t == "inet" { Fam::V4 } else { Fam::V6 });
                        t = c.value(t)?;
                    }
                    let a = parse_ip(c, t)?;
                    if let Some(e) = explicit
                        && e != Fam::of(&a)
                    {
                        return Err(c.err(t, format!("expected an {} address", e.name())));
                    }
                    via = Some((a, explicit, t));
                }
                "dev" | "oif" => {
                    once(c, &dev, kw)?;
                    let t = c.value(kw)?;
                    self.link_ref(c, t)?;
                    dev = Some(t);
                }
                "metric" | "preference" | "priority" => {
                    once(c, &metric, kw)?;
                    let t = c.value(kw)?;
                    metric = Some(num_u32(c, t, 0, u32::MAX)?);
                }
                "mtu" => {
                    once(c, &mtu, kw)?;
                    let mut t = c.value(kw)?;
                    if t == "lock" {
                        t = c.value(t)?;
                    }
                    mtu = Some((num_u32(c, t, 0, u32::MAX)?, t));
                }
                "encap" => {
                    once(c, &encap, kw)?;
                    encap = Some(self.encap(c)?);
                }
                _ => {
                    let extra = match encap.as_ref().map(|e| &e.encap) {
                        Some(Encap::Seg6(_)) => format!("; seg6: {SEG6_KEYWORDS}"),
                        Some(Encap::Ioam6(_)) => format!("; ioam6: {IOAM6_KEYWORDS}"),
                        Some(Encap::Rpl(_)) => format!("; rpl: {RPL_KEYWORDS}"),
                        None => String::new(),
                    };
                    return Err(c.err(
                        kw,
                        format!("unknown keyword (expected one of: {ROUTE_KEYWORDS}{extra})"),
                    ));
                }
            }
        }

        // Family: -4/-6, else the prefix, else the gateway, else IPv4 (as iproute2 does for `default`).
        let fam = flag
            .or(prefix.as_ref().map(Fam::of_net))
            .or(via.as_ref().map(|v| Fam::of(&v.0)))
            .unwrap_or(Fam::V4);
        let prefix = prefix.unwrap_or(match fam {
            Fam::V4 => IpNet::V4(Ipv4Net::default()),
            Fam::V6 => IpNet::V6(Ipv6Net::default()),
        });

        if let Some((gw, explicit, t)) = via {
            let gf = Fam::of(&gw);
            let v6_via_for_v4 = fam == Fam::V4 && explicit == Some(Fam::V6);
            if gf != fam && !v6_via_for_v4 {
                let hint = if fam == Fam::V4 && explicit.is_none() {
                    " (IPv4 routes take an IPv6 gateway as 'via inet6 ADDR')"
                } else {
                    ""
                };
                return Err(c.err(
                    t,
                    format!("{} gateway on an {} route{hint}", gf.name(), fam.name()),
                ));
            }
            match gw {
                IpAddr::V6(a) => {
                    if a.is_unspecified() || a.is_multicast() || a.is_loopback() {
                        return Err(c.err(t, "invalid gateway address"));
                    }
                    if a.is_unicast_link_local() && dev.is_none() {
                        return Err(c.err(t, "link-local gateway needs 'dev NAME'"));
                    }
                }
                IpAddr::V4(a) => {
                    if a.is_unspecified() || a.is_multicast() || a.is_broadcast() {
                        return Err(c.err(t, "invalid gateway address"));
                    }
                }
            }
        }
        if via.is_none() && dev.is_none() {
            return Err(c.err(ptok, "route needs 'dev' or 'via'"));
        }

        // The kernel turns IPv6 metric 0 into IP6_RT_PRIO_USER (1024).
        let metric = match (fam, metric) {
            (Fam::V6, None | Some(0)) => IPV6_DEFAULT_METRIC,
            (Fam::V4, None) => 0,
            (_, Some(m)) => m,
        };

        let mtu = match mtu {
            None => None,
            Some((m, t)) => {
                let lo = if fam == Fam::V6 {
                    IPV6_MIN_MTU
                } else {
                    MTU_MIN
                };
                if u64::from(m) < lo || u64::from(m) > MTU_MAX {
                    return Err(c.err(
                        t,
                        format!(
                            "out of range (expected {lo}..={MTU_MAX} for an {} route)",
                            fam.name()
                        ),
                    ));
                }
                Some(m)
            }
        };

        let encap = match encap {
            None => None,
            Some(pe) => {
                if fam == Fam::V4 {
                    match &pe.encap {
                        Encap::Seg6(s) if s.mode == Seg6Mode::Inline => {
                            return Err(c.err(
                                pe.mode_tok.unwrap_or(pe.type_tok),
                                "seg6 inline mode is only valid on IPv6 routes (use -6 or an IPv6 prefix)",
                            ));
                        }
                        Encap::Ioam6(_) | Encap::Rpl(_) => {
                            return Err(c.err(
                                pe.type_tok,
                                format!(
                                    "{} encap is only valid on IPv6 routes (use -6 or an IPv6 prefix)",
                                    pe.type_tok
                                ),
                            ));
                        }
                        Encap::Seg6(_) => {}
                    }
                }
                Some(pe.encap)
            }
        };

        if let Some(prev) = self.routes.get(&(prefix, metric)) {
            return Err(c.err(
                ptok,
                format!(
                    "route already exists (line {prev} has the same prefix and metric {metric})"
                ),
            ));
        }
        self.routes.insert((prefix, metric), c.line);
        self.cfg.routes.push(Route {
            prefix,
            via: via.map(|v| v.0),
            dev: dev.map(str::to_string),
            metric,
            mtu,
            encap,
            line: c.line,
        });
        Ok(())
    }

    /// `encap seg6|ioam6|rpl ...`: consumes its own keywords and stops at the first other token.
    fn encap<'t>(&mut self, c: &mut Cur<'t>) -> Result<ParsedEncap<'t>> {
        let t = c.value("encap")?;
        match t {
            "seg6" => self.seg6(c, t),
            "ioam6" => Self::ioam6(c, t),
            "rpl" => Self::rpl(c, t),
            _ => Err(c.err(
                t,
                "unsupported encap type (expected one of: seg6, ioam6, rpl)",
            )),
        }
    }

    /// `seg6 mode MODE segs A[,B...] [hmac KEYID] [tunsrc ADDR]` (§1.1).
    fn seg6<'t>(&mut self, c: &mut Cur<'t>, type_tok: &'t str) -> Result<ParsedEncap<'t>> {
        let mut mode: Option<(Seg6Mode, &'t str)> = None;
        let mut segs: Option<Vec<Ipv6Addr>> = None;
        let mut hmac: Option<(u32, &'t str)> = None;
        let mut tunsrc: Option<(Ipv6Addr, &'t str)> = None;
        while let Some(kw) = c.peek() {
            match kw {
                "mode" => {
                    c.next();
                    once(c, &mode, kw)?;
                    let t = c.value(kw)?;
                    let m = match t {
                        "inline" => Seg6Mode::Inline,
                        "encap" => Seg6Mode::Encap,
                        "l2encap" => Seg6Mode::L2Encap,
                        "encap.red" => Seg6Mode::EncapRed,
                        "l2encap.red" => Seg6Mode::L2EncapRed,
                        _ => {
                            return Err(c.err(
                                t,
                                format!("unknown seg6 mode (expected one of: {SEG6_MODES})"),
                            ));
                        }
                    };
                    mode = Some((m, t));
                }
                "segs" => {
                    c.next();
                    once(c, &segs, kw)?;
                    let t = c.value(kw)?;
                    segs = Some(parse_segs(c, t)?);
                }
                "hmac" => {
                    c.next();
                    once(c, &hmac, kw)?;
                    let t = c.value(kw)?;
                    let id = num_u32(c, t, 0, u32::MAX)?;
                    if id == 0 {
                        return Err(c.err(t, "HMAC key id must be non-zero"));
                    }
                    hmac = Some((id, t));
                }
                "tunsrc" => {
                    c.next();
                    once(c, &tunsrc, kw)?;
                    let t = c.value(kw)?;
                    let a = parse_v6(c, t)?;
                    if a.is_unspecified() || a.is_multicast() || a.is_loopback() {
                        return Err(c.err(
                            t,
                            "invalid tunsrc address (unspecified, multicast or loopback)",
                        ));
                    }
                    tunsrc = Some((a, t));
                }
                _ => break,
            }
        }
        if (mode.is_none() || segs.is_none())
            && let Some(e) = stray(c, "seg6", SEG6_KEYWORDS)
        {
            return Err(e);
        }
        let Some((mode, mode_tok)) = mode else {
            return Err(c.err(
                type_tok,
                format!("missing 'mode' (expected one of: {SEG6_MODES})"),
            ));
        };
        let Some(segs) = segs else {
            return Err(c.err(type_tok, "missing 'segs A[,B...]'"));
        };
        // hdrlen = 2 * slots (+5 for the HMAC TLV) must fit in a u8; inline adds one slot for the
        // final destination.
        let inline = usize::from(mode == Seg6Mode::Inline);
        let extra = if hmac.is_some() { HMAC_TLV_UNITS } else { 0 };
        let max = (MAX_SRH_HDRLEN - extra) / 2 - inline;
        if segs.len() > max {
            return Err(c.err(
                "segs",
                format!(
                    "too many segments: {} (at most {max} for mode {}{})",
                    segs.len(),
                    mode.name(),
                    if hmac.is_some() { " with hmac" } else { "" }
                ),
            ));
        }
        if let Some((_, t)) = tunsrc
            && mode == Seg6Mode::Inline
        {
            return Err(c.err(t, "incompatible mode for tunsrc (not allowed with inline)"));
        }
        if let Some((id, t)) = hmac {
            self.hmac_refs.push((c.line, t.to_string(), id));
        }
        Ok(ParsedEncap {
            encap: Encap::Seg6(Seg6Encap {
                mode,
                segs,
                hmac: hmac.map(|h| h.0),
                tunsrc: tunsrc.map(|t| t.0),
            }),
            type_tok,
            mode_tok: Some(mode_tok),
        })
    }

    /// `ioam6 [mode M] [tunsrc A] [tundst B] [freq K/N] trace prealloc type T ns N size S` (§2.2).
    fn ioam6<'t>(c: &mut Cur<'t>, type_tok: &'t str) -> Result<ParsedEncap<'t>> {
        let mut mode: Option<(IoamMode, &'t str)> = None;
        let mut tunsrc: Option<(Ipv6Addr, &'t str)> = None;
        let mut tundst: Option<(Ipv6Addr, &'t str)> = None;
        let mut freq: Option<(u32, u32)> = None;
        let mut trace: Option<(u32, u16, u16)> = None;
        while let Some(kw) = c.peek() {
            match kw {
                "mode" => {
                    c.next();
                    once(c, &mode, kw)?;
                    let t = c.value(kw)?;
                    let m = match t {
                        "inline" => IoamMode::Inline,
                        "encap" => IoamMode::Encap,
                        "auto" => IoamMode::Auto,
                        _ => {
                            return Err(c.err(
                                t,
                                "unknown ioam6 mode (expected one of: inline, encap, auto)",
                            ));
                        }
                    };
                    mode = Some((m, t));
                }
                "tunsrc" | "tundst" => {
                    c.next();
                    let slot = if kw == "tunsrc" {
                        &mut tunsrc
                    } else {
                        &mut tundst
                    };
                    once(c, slot, kw)?;
                    let t = c.value(kw)?;
                    let a = parse_v6(c, t)?;
                    if a.is_unspecified() {
                        return Err(c.err(t, format!("invalid {kw} address (:: is not allowed)")));
                    }
                    *slot = Some((a, t));
                }
                "freq" => {
                    c.next();
                    once(c, &freq, kw)?;
                    let t = c.value(kw)?;
                    let Some((k, n)) = t.split_once('/') else {
                        return Err(c.err(t, "invalid frequency (expected K/N, e.g. 1/10)"));
                    };
                    let k = num_u32(c, k, 1, MAX_FREQ as u32)?;
                    let n = num_u32(c, n, 1, MAX_FREQ as u32)?;
                    if k > n {
                        return Err(c.err(t, "invalid frequency (K must not exceed N)"));
                    }
                    freq = Some((k, n));
                }
                "trace" => {
                    c.next();
                    once(c, &trace, kw)?;
                    let t = c.value(kw)?;
                    if t != "prealloc" {
                        return Err(c.err(t, "unsupported trace kind (expected one of: prealloc)"));
                    }
                    trace = Some(Self::ioam6_trace(c, t)?);
                }
                _ => break,
            }
        }
        let mode_v = mode.map_or(IoamMode::Inline, |m| m.0);
        if trace.is_none()
            && let Some(e) = stray(c, "ioam6", IOAM6_KEYWORDS)
        {
            return Err(e);
        }
        let Some((trace_type, namespace, size)) = trace else {
            return Err(c.err(type_tok, "missing 'trace prealloc type T ns N size S'"));
        };
        match mode_v {
            IoamMode::Inline => {
                if let Some((_, t)) = tunsrc {
                    return Err(c.err(t, "tunsrc needs mode encap or auto"));
                }
                if let Some((_, t)) = tundst {
                    return Err(c.err(t, "tundst needs mode encap or auto"));
                }
            }
            IoamMode::Encap | IoamMode::Auto => {
                if tundst.is_none() {
                    return Err(c.err(
                        mode.map_or(type_tok, |m| m.1),
                        "missing 'tundst ADDR' (required for mode encap and auto)",
                    ));
                }
            }
        }
        let (freq_k, freq_n) = freq.unwrap_or((1, 1));
        Ok(ParsedEncap {
            encap: Encap::Ioam6(Ioam6Encap {
                mode: mode_v,
                tunsrc: tunsrc.map(|t| t.0),
                tundst: tundst.map(|t| t.0),
                freq_k,
                freq_n,
                trace_type,
                namespace,
                size,
            }),
            type_tok,
            mode_tok: mode.map(|m| m.1),
        })
    }

    /// `type T ns N size S` after `trace prealloc`, in any order, each exactly once.
    fn ioam6_trace(c: &mut Cur<'_>, prealloc: &str) -> Result<(u32, u16, u16)> {
        let mut ty: Option<u32> = None;
        let mut ns: Option<u16> = None;
        let mut size: Option<u16> = None;
        while let Some(kw) = c.peek() {
            match kw {
                "type" => {
                    c.next();
                    once(c, &ty, kw)?;
                    let t = c.value(kw)?;
                    let v = num_u32(c, t, 0, 0xFF_FFFF)?;
                    if v == 0 {
                        return Err(c.err(t, "trace type must be non-zero"));
                    }
                    if v & IOAM_TRACE_TYPE_FORBIDDEN != 0 {
                        return Err(c.err(
                            t,
                            "unsupported trace type bits (bits 12-21 and 23, mask 0x000ffd, must be clear)",
                        ));
                    }
                    ty = Some(v);
                }
                "ns" => {
                    c.next();
                    once(c, &ns, kw)?;
                    let t = c.value(kw)?;
                    ns = Some(num_u32(c, t, 0, 0xFFFF)? as u16);
                }
                "size" => {
                    c.next();
                    once(c, &size, kw)?;
                    let t = c.value(kw)?;
                    let v = num_u32(c, t, 4, MAX_TRACE_SIZE as u32)?;
                    if v % 4 != 0 {
                        return Err(c.err(t, "trace size must be a multiple of 4"));
                    }
                    size = Some(v as u16);
                }
                _ => break,
            }
        }
        if (ty.is_none() || ns.is_none() || size.is_none())
            && let Some(t) = c.peek()
            && !ROUTE_WORDS.contains(&t)
            && !["mode", "tunsrc", "tundst", "freq", "trace"].contains(&t)
        {
            return Err(c.err(t, "unknown keyword (expected one of: type, ns, size)"));
        }
        match (ty, ns, size) {
            (Some(t), Some(n), Some(s)) => Ok((t, n, s)),
            (None, _, _) => Err(c.err(prealloc, "missing 'type T'")),
            (_, None, _) => Err(c.err(prealloc, "missing 'ns N'")),
            (_, _, None) => Err(c.err(prealloc, "missing 'size S'")),
        }
    }

    /// `rpl segs A[,B...]` (§3.3).
    fn rpl<'t>(c: &mut Cur<'t>, type_tok: &'t str) -> Result<ParsedEncap<'t>> {
        let mut segs: Option<(Vec<Ipv6Addr>, &'t str)> = None;
        while let Some(kw) = c.peek() {
            match kw {
                "segs" => {
                    c.next();
                    once(c, &segs, kw)?;
                    let t = c.value(kw)?;
                    segs = Some((parse_segs(c, t)?, t));
                }
                _ => break,
            }
        }
        if segs.is_none()
            && let Some(e) = stray(c, "rpl", RPL_KEYWORDS)
        {
            return Err(e);
        }
        let Some((segs, t)) = segs else {
            return Err(c.err(type_tok, "missing 'segs A[,B...]'"));
        };
        if segs.len() > MAX_RPL_SEGS {
            return Err(c.err(
                "segs",
                format!("too many segments: {} (at most {MAX_RPL_SEGS})", segs.len()),
            ));
        }
        if segs.last().is_some_and(Ipv6Addr::is_multicast) {
            let last = t.rsplit(',').next().unwrap_or(t);
            return Err(c.err(last, "the last RPL segment must not be multicast"));
        }
        Ok(ParsedEncap {
            encap: Encap::Rpl(RplEncap { segs }),
            type_tok,
            mode_tok: None,
        })
    }

    /// `ioam namespace add|set ...`, `ioam schema add ...`.
    fn ioam(&mut self, c: &mut Cur<'_>) -> Result<()> {
        let obj = Self::verb(c, "ioam", &["namespace", "schema"])?;
        if obj == "schema" {
            return self.ioam_schema(c);
        }
        let verb = Self::verb(c, obj, &["add", "set"])?;
        let itok = c.positional(verb, "a namespace id")?;
        let id = num_u32(c, itok, 0, 0xFFFF)? as u16;
        if verb == "add" {
            if self.cfg.ioam_namespaces.iter().any(|n| n.id == id) {
                return Err(c.err(itok, "namespace already exists"));
            }
            let mut data = None;
            let mut wide = None;
            while let Some(kw) = c.next() {
                match kw {
                    "data" => {
                        once(c, &data, kw)?;
                        let t = c.value(kw)?;
                        data = Some(num_u32(c, t, 0, u32::MAX)?);
                    }
                    "wide" => {
                        once(c, &wide, kw)?;
                        let t = c.value(kw)?;
                        wide = Some(num_u64(c, t, 0, u64::MAX)?);
                    }
                    _ => {
                        return Err(c.err(kw, "unknown keyword (expected one of: data, wide)"));
                    }
                }
            }
            self.cfg.ioam_namespaces.push(IoamNamespace {
                id,
                data: data.unwrap_or(u32::MAX),
                wide: wide.unwrap_or(u64::MAX),
                schema: None,
            });
            return Ok(());
        }
        // set ID schema SID|none
        let Some(ns_idx) = self.cfg.ioam_namespaces.iter().position(|n| n.id == id) else {
            return Err(c.err(
                itok,
                "namespace does not exist (add it with 'ioam namespace add ID' on an earlier line)",
            ));
        };
        let kw = c.positional(itok, "'schema SID|none'")?;
        if kw != "schema" {
            return Err(c.err(kw, "unknown keyword (expected one of: schema)"));
        }
        let stok = c.value(kw)?;
        let schema = if stok == "none" {
            None
        } else {
            let sid = num_u32(c, stok, 0, MAX_SCHEMA_ID as u32)?;
            if !self.cfg.ioam_schemas.iter().any(|s| s.id == sid) {
                return Err(c.err(
                    stok,
                    "schema does not exist (add it with 'ioam schema add ID DATA' on an earlier line)",
                ));
            }
            Some(sid)
        };
        c.end("nothing may follow 'schema SID|none'")?;
        if let Some(sid) = schema {
            // A schema belongs to at most one namespace: re-linking takes it from the old one.
            for ns in self.cfg.ioam_namespaces.iter_mut() {
                if ns.schema == Some(sid) {
                    ns.schema = None;
                }
            }
        }
        if let Some(ns) = self.cfg.ioam_namespaces.get_mut(ns_idx) {
            ns.schema = schema;
        }
        Ok(())
    }

    /// `ioam schema add ID DATA`.
    fn ioam_schema(&mut self, c: &mut Cur<'_>) -> Result<()> {
        let verb = Self::verb(c, "schema", &["add"])?;
        let itok = c.positional(verb, "a schema id")?;
        let id = num_u32(c, itok, 0, MAX_SCHEMA_ID as u32)?;
        if self.cfg.ioam_schemas.iter().any(|s| s.id == id) {
            return Err(c.err(itok, "schema already exists"));
        }
        let data = c.positional(itok, "schema DATA")?;
        if data.len() > MAX_SCHEMA_DATA {
            return Err(c.err(
                "DATA",
                format!(
                    "schema data too long: {} bytes (at most {MAX_SCHEMA_DATA})",
                    data.len()
                ),
            ));
        }
        c.end("quote DATA that contains spaces")?;
        self.cfg.ioam_schemas.push(IoamSchema {
            id,
            data: data.as_bytes().to_vec(),
        });
        Ok(())
    }

    /// `sr tunsrc set ADDR`, `sr hmac set KEYID ALGO [secret S]`.
    fn sr(&mut self, c: &mut Cur<'_>) -> Result<()> {
        let obj = Self::verb(c, "sr", &["tunsrc", "hmac"])?;
        let verb = Self::verb(c, obj, &["set"])?;
        if obj == "tunsrc" {
            let t = c.positional(verb, "an IPv6 address")?;
            let a = parse_v6(c, t)?;
            c.end("expected only 'sr tunsrc set ADDR'")?;
            self.cfg.sr_tunsrc = if a.is_unspecified() { None } else { Some(a) };
            return Ok(());
        }
        let itok = c.positional(verb, "a key id")?;
        let key_id = num_u32(c, itok, 0, u32::MAX)?;
        if key_id == 0 {
            return Err(c.err(itok, "HMAC key id must be non-zero"));
        }
        let atok = c.positional(itok, "an algorithm: sha1, sha256")?;
        let algo = match atok {
            "sha1" => HmacAlgo::Sha1,
            "sha256" => HmacAlgo::Sha256,
            _ => {
                return Err(c.err(
                    atok,
                    "unknown HMAC algorithm (expected one of: sha1, sha256)",
                ));
            }
        };
        let secret: &str = match c.next() {
            Some("secret") => {
                let s = c.value("secret")?;
                c.end("expected nothing after 'secret S' (quote secrets with spaces)")?;
                s
            }
            Some(t) => return Err(c.err(t, "unknown keyword (expected one of: secret)")),
            None => {
                if let Some(prev) = self.stdin_used_by {
                    return Err(c.err(
                        itok,
                        format!(
                            "secret required: the stdin secret was already used on line {prev}; add 'secret S'"
                        ),
                    ));
                }
                let Some(s) = self.stdin_secret else {
                    return Err(c.err(itok, "secret required: add 'secret S' or pipe it on stdin"));
                };
                self.stdin_used_by = Some(c.line);
                s
            }
        };
        // Secrets are never echoed in errors: the token is the keyword.
        if secret.is_empty() {
            return Err(c.err(
                "secret",
                "secret must not be empty (an empty secret would delete the key in iproute2)",
            ));
        }
        if secret.len() > MAX_HMAC_SECRET {
            return Err(c.err(
                "secret",
                format!(
                    "secret too long: {} bytes (at most {MAX_HMAC_SECRET})",
                    secret.len()
                ),
            ));
        }
        let key = HmacKey {
            key_id,
            algo,
            secret: secret.as_bytes().to_vec(),
        };
        // Setting an existing key id replaces it, as the kernel does.
        match self.cfg.hmac_keys.iter_mut().find(|k| k.key_id == key_id) {
            Some(k) => *k = key,
            None => self.cfg.hmac_keys.push(key),
        }
        Ok(())
    }

    /// `sysctl [-w] KEY=VALUE [KEY=VALUE...]` (spaces around `=` allowed).
    fn sysctl(&mut self, c: &mut Cur<'_>) -> Result<()> {
        let mut any = false;
        while let Some(t) = c.next() {
            if t.starts_with('-') && !any {
                if t == "-w" {
                    continue;
                }
                return Err(c.err(t, "unsupported option (expected one of: -w)"));
            }
            let (key, val) = match t.split_once('=') {
                Some(("", _)) => return Err(c.err(t, "missing KEY before '='")),
                Some((k, "")) => (k, c.value(k)?),
                Some((k, v)) => (k, v),
                None => {
                    let Some(eq) = c.next() else {
                        return Err(c.err(t, "missing '=VALUE' (write KEY=VALUE)"));
                    };
                    match eq.strip_prefix('=') {
                        Some("") => (t, c.value(t)?),
                        Some(v) => (t, v),
                        None => return Err(c.err(eq, "expected '=' (write KEY=VALUE)")),
                    }
                }
            };
            self.set_sysctl(c, key, val)?;
            any = true;
        }
        if !any {
            return Err(c.err("sysctl", "missing KEY=VALUE"));
        }
        Ok(())
    }

    fn set_sysctl(&mut self, c: &Cur<'_>, key: &str, val: &str) -> Result<()> {
        let unknown = || {
            c.err(
                key,
                format!("unknown sysctl key (expected one of: {SYSCTL_KEYS})"),
            )
        };
        // `net/ipv6/conf/eth0.100/x` or `net.ipv6.conf.eth0/100.x` (sysctl(8) swaps '.' and '/' in names).
        let (sep, alt) = if key.starts_with("net/") {
            ('/', None)
        } else {
            ('.', Some(('/', '.')))
        };
        let conf_prefix = format!("net{sep}ipv6{sep}conf{sep}");
        let Some(rest) = key.strip_prefix(&conf_prefix) else {
            let dotted = key.replace('/', ".");
            let s = &mut self.cfg.sysctl;
            match dotted.as_str() {
                "net.ipv6.ioam6_id" => s.ioam6_id = num_u32(c, val, 0, 0xFF_FFFF)?,
                "net.ipv6.ioam6_id_wide" => {
                    s.ioam6_id_wide = num_u64(c, val, 0, 0x00FF_FFFF_FFFF_FFFF)?
                }
                "net.ipv6.seg6_flowlabel" => s.seg6_flowlabel = num(c, val, -1, 1)? as i32,
                _ => return Err(unknown()),
            }
            return Ok(());
        };
        let Some((dev, leaf)) = rest.rsplit_once(sep) else {
            return Err(unknown());
        };
        if dev.is_empty() {
            return Err(unknown());
        }
        let dev = match alt {
            Some((from, to)) => dev.replace(from, &to.to_string()),
            None => dev.to_string(),
        };
        let parse_into = |d: &mut DevSysctls| -> Result<()> {
            match leaf {
                "ioam6_enabled" => d.ioam6_enabled = num(c, val, 0, 1)? == 1,
                "ioam6_id" => d.ioam6_id = num(c, val, 0, 0xFFFF)? as u16,
                "ioam6_id_wide" => d.ioam6_id_wide = num_u32(c, val, 0, u32::MAX)?,
                "seg6_enabled" => d.seg6_enabled = num(c, val, 0, 1)? == 1,
                "seg6_require_hmac" => d.seg6_require_hmac = num(c, val, -1, 1)? as i8,
                "rpl_seg_enabled" => d.rpl_seg_enabled = num(c, val, 0, 1)? == 1,
                "hop_limit" => d.hop_limit = num(c, val, 1, 255)? as u8,
                "forwarding" => d.forwarding = num(c, val, 0, 1)? == 1,
                _ => return Err(unknown()),
            }
            Ok(())
        };
        match dev.as_str() {
            "all" => parse_into(&mut self.cfg.sysctl.all),
            "default" => Err(c.err(
                key,
                "net.ipv6.conf.default.* is not supported (set net.ipv6.conf.all.* or net.ipv6.conf.DEV.*)",
            )),
            name => {
                if !self.links.contains_key(name) {
                    return Err(c.err(
                        name,
                        "unknown link in sysctl key (declare it with 'link add NAME' on an earlier line)",
                    ));
                }
                // Validate on a copy so an error leaves nothing behind.
                let mut d = self.cfg.sysctl.dev.get(name).copied().unwrap_or_default();
                parse_into(&mut d)?;
                self.cfg.sysctl.dev.insert(name.to_string(), d);
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Sysctls;
    use proptest::prelude::*;
    use std::net::Ipv4Addr;

    /// Two links declared on lines 1 and 2; the command under test is on line 3.
    const PRE: &str = "link add eth0\nlink add eth1\n";

    fn ok(text: &str) -> Config {
        match parse(text) {
            Ok(c) => c,
            Err(e) => panic!("unexpected error for {text:?}: {e}"),
        }
    }

    fn fail(text: &str) -> ConfigError {
        match parse(text) {
            Ok(c) => panic!("expected an error for {text:?}, got {c:?}"),
            Err(e) => e,
        }
    }

    /// `PRE` + `line`: the single route / command on line 3.
    fn ok3(line: &str) -> Config {
        ok(&format!("{PRE}{line}\n"))
    }

    /// Error for `PRE` + `line`, asserting it is on line 3 and names `token`.
    fn fail3(line: &str, token: &str) -> ConfigError {
        let e = fail(&format!("{PRE}{line}\n"));
        assert_eq!((e.line, e.token.as_str()), (3, token), "{line:?} -> {e}");
        e
    }

    fn v6(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    fn route3(line: &str) -> Route {
        let c = ok3(line);
        assert_eq!(c.routes.len(), 1);
        c.routes[0].clone()
    }

    fn seg6(line: &str) -> Seg6Encap {
        match route3(line).encap {
            Some(Encap::Seg6(s)) => s,
            other => panic!("not seg6: {other:?}"),
        }
    }

    fn ioam6(line: &str) -> Ioam6Encap {
        match route3(line).encap {
            Some(Encap::Ioam6(s)) => s,
            other => panic!("not ioam6: {other:?}"),
        }
    }

    /// `n` distinct IPv6 segments `2001:db8::1,2001:db8::2,...`.
    fn segs(n: usize) -> String {
        (1..=n)
            .map(|i| format!("2001:db8::{i:x}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    // ---- lexical -------------------------------------------------------------------------------

    #[test]
    fn empty_comments_blank_lines_crlf() {
        assert_eq!(ok(""), Config::default());
        assert_eq!(
            ok("\n\n   \n\t\n# just a comment\n   # indented\n"),
            Config::default()
        );
        let c = ok("# header\r\nlink add eth0 # trailing comment\r\n\r\nlink add eth1#glued\r\n");
        assert_eq!(c.links.len(), 2);
        assert_eq!(c.links[0].name, "eth0");
        assert_eq!(c.links[1].name, "eth1");
        assert_eq!(c.links[1].line, 4);
    }

    #[test]
    fn optional_ip_word_and_family_flags() {
        let c = ok("ip link add eth0\nip -6 route add 2001:db8::/32 dev eth0\n\
                    -4 route add 10.0.0.0/8 dev eth0\nip -4 addr add 10.0.0.1/8 dev eth0\n");
        assert_eq!(c.routes.len(), 2);
        assert_eq!(c.addrs.len(), 1);
        let e = fail("ip\n");
        assert_eq!((e.line, e.token.as_str()), (1, "ip"));
        assert!(e.reason.starts_with("missing value"), "{e}");
        let e = fail("ip -5 route add ::/0 dev x\n");
        assert_eq!(e.token, "-5");
        assert!(e.reason.contains("-4, -6"));
        let e = fail("-4 -6 route add ::/0 dev x\n");
        assert_eq!(e.token, "-6");
        let e = fail("ip -6\n");
        assert_eq!(e.token, "-6");
    }

    #[test]
    fn quoted_tokens() {
        let c = ok("ioam schema add 7 \"a b # c\"\nsr hmac set 1 sha1 secret 'x y'\n");
        assert_eq!(c.ioam_schemas[0].data, b"a b # c");
        assert_eq!(c.hmac_keys[0].secret, b"x y");
        let e = fail("link add eth0\nioam schema add 7 \"abc\n");
        assert_eq!((e.line, e.token.as_str()), (2, "\"abc"));
        assert!(e.reason.contains("unterminated"));
        let e = fail("ioam schema add 7 \"abc\"def\n");
        assert_eq!(e.token, "def");
    }

    #[test]
    fn unknown_and_missing_commands() {
        let e = fail("link add eth0\nfrobnicate all\n");
        assert_eq!((e.line, e.token.as_str()), (2, "frobnicate"));
        assert_eq!(
            e.reason,
            "unknown command (expected one of: link, addr, neigh, route, ioam, sr, sysctl)"
        );
        let e = fail("route\n");
        assert_eq!(e.token, "route");
        assert!(e.reason.contains("missing command (expected one of: add)"));
        let e = fail("link add eth0\nroute replace ::/0 dev eth0\n");
        assert_eq!((e.line, e.token.as_str()), (2, "replace"));
        assert!(e.reason.contains("unsupported command"));
        let e = fail("link del eth0\n");
        assert_eq!(e.token, "del");
    }

    #[test]
    fn error_display() {
        let e = fail3("route add 2001:db8::/32 dev eth0 encapp seg6", "encapp");
        assert_eq!(
            e.to_string(),
            "line 3: 'encapp': unknown keyword (expected one of: via, dev, metric, mtu, encap)"
        );
    }

    // ---- link ----------------------------------------------------------------------------------

    #[test]
    fn link_add() {
        let c = ok(
            "link add eth0\nlink add name lan1 address 02:aa:bb:cc:dd:0F mtu 9000\n\
                    link add wan mtu 0x5dc address 02:00:00:00:00:05\n",
        );
        assert_eq!(
            c.links[0],
            Link {
                name: "eth0".into(),
                mac: None,
                mtu: 1500,
                line: 1
            }
        );
        assert_eq!(
            c.links[1],
            Link {
                name: "lan1".into(),
                mac: Some([0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0x0f]),
                mtu: 9000,
                line: 2
            }
        );
        assert_eq!(c.links[2].mtu, 1500);
        assert_eq!(c.links[2].mac, Some([2, 0, 0, 0, 0, 5]));
        // 15 bytes is the longest valid name.
        ok("link add abcdefghijklmno\n");
    }

    #[test]
    fn link_errors() {
        let e = fail3("link add eth0", "eth0");
        assert!(e.reason.contains("already exists (declared on line 1)"));
        fail3("link add abcdefghijklmnop", "abcdefghijklmnop");
        fail3("link add a/b", "a/b");
        fail3("link add a:b", "a:b");
        fail3("link add .", ".");
        fail3("link add ..", "..");
        fail3("link add all", "all");
        fail3("link add default", "default");
        fail3("link add \"a b\"", "a b");
        fail3("link add \"\"", "");
        let e = fail3("link add", "add");
        assert!(e.reason.starts_with("missing value"));
        let e = fail3("link add x mtu", "mtu");
        assert_eq!(e.reason, "missing value");
        let e = fail3("link add x address", "address");
        assert_eq!(e.reason, "missing value");
        let e = fail3("link add x mtu 67", "67");
        assert!(e.reason.contains("68..=65535"), "{e}");
        fail3("link add x mtu 65536", "65536");
        fail3(
            "link add x mtu 99999999999999999999999",
            "99999999999999999999999",
        );
        fail3("link add x mtu 1e3", "1e3");
        fail3("link add x mtu +1500", "+1500");
        fail3("link add x mtu -1500", "-1500");
        fail3("link add x mtu 1500 mtu 1500", "mtu");
        for bad in [
            "02:00:00:00:00",
            "02:00:00:00:00:00:00",
            "2:0:0:0:0:1",
            "02-00-00-00-00-01",
            "0g:00:00:00:00:01",
            "02:00:00:00:00:",
        ] {
            let e = fail3(&format!("link add x address {bad}"), bad);
            assert!(e.reason.contains("invalid MAC"), "{e}");
        }
        // Multicast (I/G bit) and all-zero MACs are not valid interface addresses.
        fail3("link add x address 01:00:5e:00:00:01", "01:00:5e:00:00:01");
        fail3("link add x address 00:00:00:00:00:00", "00:00:00:00:00:00");
        let e = fail3("link add x type veth", "type");
        assert_eq!(e.reason, "unknown keyword (expected one of: address, mtu)");
    }

    // ---- addr ----------------------------------------------------------------------------------

    #[test]
    fn addr_add() {
        let c = ok(&format!(
            "{PRE}addr add 2001:db8::1/64 dev eth0\naddress add 10.0.0.1/24 dev eth1\n\
             ip -6 addr add fe80::1 dev eth0\naddr add 10.0.0.1/24 dev eth0\n"
        ));
        assert_eq!(
            c.addrs[0],
            Addr {
                addr: "2001:db8::1".parse().unwrap(),
                prefix_len: 64,
                dev: "eth0".into(),
                line: 3
            }
        );
        assert_eq!(c.addrs[1].addr, IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)));
        assert_eq!(c.addrs[1].prefix_len, 24);
        // No /LEN: host length, as `ip addr add` does.
        assert_eq!(c.addrs[2].prefix_len, 128);
        // The same address on another link is fine.
        assert_eq!(c.addrs[3].dev, "eth0");
    }

    #[test]
    fn addr_errors() {
        let e = fail3("addr add 2001:db8::1/64 dev eth9", "eth9");
        assert!(e.reason.contains("unknown link"));
        // Links must be declared on an earlier line.
        let e = fail("addr add 10.0.0.1/8 dev eth0\nlink add eth0\n");
        assert_eq!((e.line, e.token.as_str()), (1, "eth0"));
        fail3("addr add 2001:db8::1/129 dev eth0", "2001:db8::1/129");
        fail3("addr add 10.0.0.1/33 dev eth0", "10.0.0.1/33");
        fail3("addr add 10.0.0.1/ dev eth0", "10.0.0.1/");
        fail3("addr add 10.0.0.1/+8 dev eth0", "10.0.0.1/+8");
        fail3("addr add 10.0.0.1/0008 dev eth0", "10.0.0.1/0008");
        fail3("addr add 10.0.0.256/8 dev eth0", "10.0.0.256");
        fail3("addr add :: dev eth0", "::");
        fail3("addr add ff02::1 dev eth0", "ff02::1");
        fail3("addr add ::1 dev eth0", "::1");
        fail3("addr add 224.0.0.1 dev eth0", "224.0.0.1");
        let e = fail3("addr add 10.0.0.1/8", "10.0.0.1/8");
        assert_eq!(e.reason, "missing 'dev NAME'");
        let e = fail3("addr add 10.0.0.1/8 dev", "dev");
        assert_eq!(e.reason, "missing value");
        let e = fail3("addr add 10.0.0.1/8 dev eth0 label x", "label");
        assert_eq!(e.reason, "unknown keyword (expected one of: dev)");
        let e = fail3("-6 addr add 10.0.0.1/8 dev eth0", "10.0.0.1/8");
        assert!(e.reason.contains("IPv4 address given with -6"));
        let e = fail(&format!(
            "{PRE}addr add 2001:db8::1/64 dev eth0\naddr add 2001:db8::1/48 dev eth0\n"
        ));
        assert_eq!((e.line, e.token.as_str()), (4, "2001:db8::1/48"));
        assert!(e.reason.contains("already assigned to eth0 (line 3)"));
        fail3("addr add", "add");
    }

    #[test]
    fn addr_ipv6_needs_mtu_1280() {
        let e = fail("link add slow mtu 1279\naddr add 2001:db8::1/64 dev slow\n");
        assert_eq!((e.line, e.token.as_str()), (2, "2001:db8::1/64"));
        assert!(e.reason.contains("below the IPv6 minimum of 1280"));
        let c = ok("link add slow mtu 1279\naddr add 10.0.0.1/8 dev slow\n\
                    link add ok mtu 1280\naddr add 2001:db8::1/64 dev ok\n");
        assert_eq!(c.addrs.len(), 2);
    }

    // ---- neigh ---------------------------------------------------------------------------------

    #[test]
    fn neigh_add() {
        let c = ok(&format!(
            "{PRE}neigh add 2001:db8::2 lladdr 02:00:00:00:02:02 dev eth1\n\
             neighbour add 10.0.0.2 dev eth0 lladdr aa:BB:cc:dd:ee:ff nud permanent\n"
        ));
        assert_eq!(
            c.neighs[0],
            Neigh {
                addr: "2001:db8::2".parse().unwrap(),
                lladdr: [2, 0, 0, 0, 2, 2],
                dev: "eth1".into(),
                line: 3
            }
        );
        assert_eq!(c.neighs[1].lladdr, [0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff]);
    }

    #[test]
    fn neigh_errors() {
        let e = fail3("neigh add 2001:db8::2 dev eth0", "2001:db8::2");
        assert_eq!(e.reason, "missing 'lladdr MAC'");
        let e = fail3(
            "neigh add 2001:db8::2 lladdr 02:00:00:00:00:01",
            "2001:db8::2",
        );
        assert_eq!(e.reason, "missing 'dev NAME'");
        fail3(
            "neigh add 2001:db8::2 lladdr 02:00:00:00:00 dev eth0",
            "02:00:00:00:00",
        );
        fail3(
            "neigh add 2001:db8::2 lladdr 02:00:00:00:00:01 dev eth7",
            "eth7",
        );
        let e = fail3(
            "neigh add 2001:db8::2 lladdr 02:00:00:00:00:01 dev eth0 nud stale",
            "stale",
        );
        assert!(e.reason.contains("permanent"));
        let e = fail3(
            "neigh add 2001:db8::2 lladdr 02:00:00:00:00:01 dev eth0 router",
            "router",
        );
        assert_eq!(
            e.reason,
            "unknown keyword (expected one of: lladdr, dev, nud)"
        );
        fail3(
            "neigh add ff02::1 lladdr 02:00:00:00:00:01 dev eth0",
            "ff02::1",
        );
        fail3("neigh add 2001:db8::2 lladdr", "lladdr");
        fail3(
            "-4 neigh add 2001:db8::2 lladdr 02:00:00:00:00:01 dev eth0",
            "2001:db8::2",
        );
        let e = fail(&format!(
            "{PRE}neigh add 10.0.0.2 lladdr 02:00:00:00:00:01 dev eth0\n\
             neigh add 10.0.0.2 lladdr 02:00:00:00:00:02 dev eth0\n"
        ));
        assert_eq!((e.line, e.token.as_str()), (4, "10.0.0.2"));
        assert!(e.reason.contains("already exists"));
    }

    // ---- route ---------------------------------------------------------------------------------

    #[test]
    fn route_basic() {
        let r = route3("route add 2001:db8:1::/48 via fe80::1 dev eth0 metric 10 mtu 1400");
        assert_eq!(r.prefix, "2001:db8:1::/48".parse::<IpNet>().unwrap());
        assert_eq!(r.via, Some("fe80::1".parse().unwrap()));
        assert_eq!(r.dev.as_deref(), Some("eth0"));
        assert_eq!(r.metric, 10);
        assert_eq!(r.mtu, Some(1400));
        assert_eq!(r.encap, None);
        assert_eq!(r.line, 3);
        let r = route3("route add to 10.0.0.0/8 via 192.0.2.1");
        assert_eq!(r.prefix, "10.0.0.0/8".parse::<IpNet>().unwrap());
        assert_eq!(r.metric, 0);
        assert_eq!(r.dev, None);
        // Bare address = host route.
        assert_eq!(
            route3("route add 2001:db8::5 dev eth0").prefix,
            "2001:db8::5/128".parse::<IpNet>().unwrap()
        );
        assert_eq!(
            route3("route add 10.1.2.3 dev eth0").prefix,
            "10.1.2.3/32".parse::<IpNet>().unwrap()
        );
        // Aliases and `mtu lock`.
        assert_eq!(
            route3("route add 2001:db8::/32 dev eth0 preference 7").metric,
            7
        );
        assert_eq!(
            route3("route add 2001:db8::/32 dev eth0 priority 0x10").metric,
            16
        );
        assert_eq!(
            route3("route add 2001:db8::/32 dev eth0 mtu lock 1300").mtu,
            Some(1300)
        );
        assert_eq!(
            route3("route add 2001:db8::/32 oif eth0").dev.as_deref(),
            Some("eth0")
        );
    }

    #[test]
    fn route_ipv6_metric_defaults() {
        // IPv6: no metric or metric 0 -> 1024 (IP6_RT_PRIO_USER), as the kernel stores it.
        assert_eq!(route3("route add 2001:db8::/32 dev eth0").metric, 1024);
        assert_eq!(
            route3("route add 2001:db8::/32 dev eth0 metric 0").metric,
            1024
        );
        assert_eq!(route3("route add 10.0.0.0/8 dev eth0 metric 0").metric, 0);
        assert_eq!(
            route3("route add 10.0.0.0/8 dev eth0 metric 4294967295").metric,
            u32::MAX
        );
        fail3(
            "route add 10.0.0.0/8 dev eth0 metric 4294967296",
            "4294967296",
        );
    }

    #[test]
    fn route_default_family() {
        let v6_default: IpNet = "::/0".parse().unwrap();
        let v4_default: IpNet = "0.0.0.0/0".parse().unwrap();
        assert_eq!(route3("-6 route add default dev eth0").prefix, v6_default);
        assert_eq!(
            route3("route add default via 2001:db8::1").prefix,
            v6_default
        );
        assert_eq!(route3("route add default via 192.0.2.1").prefix, v4_default);
        assert_eq!(route3("-4 route add default dev eth0").prefix, v4_default);
        // iproute2 falls back to IPv4 when nothing names the family.
        assert_eq!(route3("route add default dev eth0").prefix, v4_default);
        let e = fail3("-6 route add default via 192.0.2.1", "192.0.2.1");
        assert!(e.reason.contains("IPv4 gateway on an IPv6 route"));
    }

    #[test]
    fn route_family_rules() {
        let e = fail3("-6 route add 10.0.0.0/8 dev eth0", "10.0.0.0/8");
        assert!(e.reason.contains("IPv4 prefix on a -6 route"));
        fail3("-4 route add 2001:db8::/32 dev eth0", "2001:db8::/32");
        // IPv4 route with an IPv6 gateway needs `via inet6`.
        let r = route3("route add 10.0.0.0/8 via inet6 fe80::1 dev eth0");
        assert_eq!(r.via, Some("fe80::1".parse().unwrap()));
        let e = fail3("route add 10.0.0.0/8 via fe80::1 dev eth0", "fe80::1");
        assert!(e.reason.contains("via inet6 ADDR"), "{e}");
        fail3("route add 2001:db8::/32 via inet 192.0.2.1", "192.0.2.1");
        fail3("route add 2001:db8::/32 via 192.0.2.1", "192.0.2.1");
        let e = fail3("route add 2001:db8::/32 via inet6 192.0.2.1", "192.0.2.1");
        assert!(e.reason.contains("expected an IPv6 address"));
        assert_eq!(
            route3("route add 2001:db8::/32 via inet6 2001:db8:ff::1").via,
            Some("2001:db8:ff::1".parse().unwrap())
        );
    }

    #[test]
    fn route_gateway_and_nexthop_rules() {
        let e = fail3("route add 2001:db8::/32 via fe80::1", "fe80::1");
        assert!(e.reason.contains("link-local gateway needs 'dev NAME'"));
        for bad in ["::", "ff02::1", "::1"] {
            let e = fail3(&format!("route add 2001:db8::/32 via {bad} dev eth0"), bad);
            assert_eq!(e.reason, "invalid gateway address");
        }
        for bad in ["0.0.0.0", "224.0.0.1", "255.255.255.255"] {
            fail3(&format!("route add 10.0.0.0/8 via {bad} dev eth0"), bad);
        }
        let e = fail3("route add 2001:db8::/32 metric 5", "2001:db8::/32");
        assert_eq!(e.reason, "route needs 'dev' or 'via'");
        fail3("route add 2001:db8::/32 dev eth5", "eth5");
        fail3("route add 2001:db8::/32 via nothing", "nothing");
    }

    #[test]
    fn route_prefix_errors() {
        let e = fail3("route add 2001:db8::1/64 dev eth0", "2001:db8::1/64");
        assert!(
            e.reason
                .starts_with("Invalid prefix for given prefix length")
        );
        fail3("route add 10.0.0.1/8 dev eth0", "10.0.0.1/8");
        fail3("route add 2001:db8::/129 dev eth0", "2001:db8::/129");
        fail3("route add 2001:zz::/32 dev eth0", "2001:zz::");
        let e = fail3("route add", "add");
        assert!(e.reason.starts_with("missing value"));
        let e = fail3("route add to", "to");
        assert_eq!(e.reason, "missing value");
        // /0 with zero host bits is a valid prefix.
        route3("route add ::/0 dev eth0");
    }

    #[test]
    fn route_keyword_errors() {
        for kw in ["via", "dev", "metric", "mtu", "encap", "preference"] {
            let e = fail3(&format!("route add 2001:db8::/32 dev eth1 {kw}"), kw);
            if kw != "dev" {
                assert_eq!(e.reason, "missing value", "{kw}");
            }
        }
        let e = fail3("route add 2001:db8::/32 dev eth0 mtu lock", "lock");
        assert_eq!(e.reason, "missing value");
        let e = fail3("route add 2001:db8::/32 dev eth0 dev eth1", "dev");
        assert_eq!(e.reason, "given more than once");
        let e = fail3("route add 2001:db8::/32 dev eth0 table 5", "table");
        assert_eq!(
            e.reason,
            "unknown keyword (expected one of: via, dev, metric, mtu, encap)"
        );
        fail3("route add 2001:db8::/32 dev eth0 metric ten", "ten");
        // Route MTU: 1280..=65535 for IPv6, 68..=65535 for IPv4.
        fail3("route add 2001:db8::/32 dev eth0 mtu 1279", "1279");
        fail3("route add 2001:db8::/32 dev eth0 mtu 65536", "65536");
        assert_eq!(route3("route add 10.0.0.0/8 dev eth0 mtu 68").mtu, Some(68));
        fail3("route add 10.0.0.0/8 dev eth0 mtu 67", "67");
    }

    #[test]
    fn route_duplicates() {
        let e = fail(&format!(
            "{PRE}route add 2001:db8::/32 dev eth0\nroute add 2001:db8::/32 via fe80::1 dev eth1\n"
        ));
        assert_eq!((e.line, e.token.as_str()), (4, "2001:db8::/32"));
        assert!(e.reason.starts_with("route already exists"));
        // Explicit 1024 collides with the IPv6 default metric.
        let e = fail(&format!(
            "{PRE}route add 2001:db8::/32 dev eth0\nroute add 2001:db8::/32 dev eth0 metric 1024\n"
        ));
        assert_eq!(e.line, 4);
        let e = fail(&format!(
            "{PRE}-6 route add default dev eth0\nroute add ::/0 dev eth1\n"
        ));
        assert_eq!(e.line, 4);
        // Different metric or family: fine.
        let c = ok(&format!(
            "{PRE}route add 2001:db8::/32 dev eth0\nroute add 2001:db8::/32 dev eth1 metric 5\n\
             route add default dev eth0\n-6 route add default dev eth0\n"
        ));
        assert_eq!(c.routes.len(), 4);
    }

    // ---- encap seg6 ----------------------------------------------------------------------------

    #[test]
    fn seg6_modes_and_fields() {
        for (word, mode) in [
            ("inline", Seg6Mode::Inline),
            ("encap", Seg6Mode::Encap),
            ("l2encap", Seg6Mode::L2Encap),
            ("encap.red", Seg6Mode::EncapRed),
            ("l2encap.red", Seg6Mode::L2EncapRed),
        ] {
            let s = seg6(&format!(
                "route add 2001:db8::/32 encap seg6 mode {word} segs 2001:db8::a,2001:db8::b dev eth0"
            ));
            assert_eq!(s.mode, mode);
            assert_eq!(mode.name(), word);
            // CLI order is kept.
            assert_eq!(s.segs, vec![v6("2001:db8::a"), v6("2001:db8::b")]);
            assert_eq!((s.hmac, s.tunsrc), (None, None));
        }
        let c = ok(&format!(
            "{PRE}route add 2001:db8::/32 dev eth0 encap seg6 segs fc00::1 tunsrc 2001:db8::99 mode encap hmac 7 metric 3\n\
             sr hmac set 7 sha256 secret k\n"
        ));
        let r = &c.routes[0];
        assert_eq!(r.metric, 3);
        assert_eq!(
            r.encap,
            Some(Encap::Seg6(Seg6Encap {
                mode: Seg6Mode::Encap,
                segs: vec![v6("fc00::1")],
                hmac: Some(7),
                tunsrc: Some(v6("2001:db8::99")),
            }))
        );
    }

    #[test]
    fn seg6_on_ipv4_routes() {
        for m in ["encap", "encap.red", "l2encap", "l2encap.red"] {
            route3(&format!(
                "route add 10.0.0.0/8 encap seg6 mode {m} segs fc00::1 dev eth0"
            ));
        }
        let e = fail3(
            "route add 10.0.0.0/8 encap seg6 mode inline segs fc00::1 dev eth0",
            "inline",
        );
        assert!(e.reason.contains("only valid on IPv6 routes"));
        // `default` without a family is IPv4 (iproute2), so inline is rejected there too.
        fail3(
            "route add default dev eth0 encap seg6 mode inline segs fc00::1",
            "inline",
        );
        route3("-6 route add default dev eth0 encap seg6 mode inline segs fc00::1");
    }

    #[test]
    fn seg6_required_and_bad_values() {
        let e = fail3(
            "route add 2001:db8::/32 dev eth0 encap seg6 segs fc00::1",
            "seg6",
        );
        assert!(e.reason.contains("missing 'mode'"));
        assert!(
            e.reason
                .contains("inline, encap, l2encap, encap.red, l2encap.red")
        );
        let e = fail3(
            "route add 2001:db8::/32 dev eth0 encap seg6 mode encap",
            "seg6",
        );
        assert!(e.reason.contains("missing 'segs"));
        let e = fail3(
            "route add 2001:db8::/32 dev eth0 encap seg6 mode bogus segs fc00::1",
            "bogus",
        );
        assert!(e.reason.contains("unknown seg6 mode"));
        fail3(
            "route add 2001:db8::/32 dev eth0 encap seg6 mode encap segs 10.0.0.1",
            "10.0.0.1",
        );
        fail3(
            "route add 2001:db8::/32 dev eth0 encap seg6 mode encap segs fc00::1,,fc00::2",
            "fc00::1,,fc00::2",
        );
        fail3(
            "route add 2001:db8::/32 dev eth0 encap seg6 mode encap segs fc00::1,",
            "fc00::1,",
        );
        fail3(
            "route add 2001:db8::/32 dev eth0 encap seg6 mode encap segs fc00::1,xyz",
            "xyz",
        );
        let e = fail3(
            "route add 2001:db8::/32 dev eth0 encap seg6 mode encap segs",
            "segs",
        );
        assert_eq!(e.reason, "missing value");
        let e = fail3(
            "route add 2001:db8::/32 dev eth0 encap seg6 mode encap segs fc00::1 hmac",
            "hmac",
        );
        assert_eq!(e.reason, "missing value");
        fail3(
            "route add 2001:db8::/32 dev eth0 encap seg6 mode encap mode inline segs fc00::1",
            "mode",
        );
        let e = fail3("route add 2001:db8::/32 dev eth0 encap mpls 100", "mpls");
        assert!(e.reason.contains("seg6, ioam6, rpl"));
        let e = fail3(
            "route add 2001:db8::/32 dev eth0 encap seg6 mode encap segz fc00::1",
            "segz",
        );
        assert_eq!(
            e.reason,
            "unknown keyword (expected one of: via, dev, metric, mtu, encap; seg6: mode, segs, hmac, tunsrc)"
        );
        let e = fail3(
            "route add 2001:db8::/32 dev eth0 encap seg6 mode encap segs fc00::1 encap seg6 mode encap segs fc00::2",
            "encap",
        );
        assert_eq!(e.reason, "given more than once");
    }

    #[test]
    fn seg6_segment_count_limits() {
        // hdrlen = 2*slots (+5 with the 40-byte HMAC TLV) must be <= 255; inline adds one slot.
        // encap: 2*127 = 254 ok, 2*128 = 256 too big.
        let line = |mode: &str, n: usize, hmac: &str| {
            format!(
                "route add 2001:db8::/32 dev eth0 encap seg6 mode {mode} segs {}{hmac}",
                segs(n)
            )
        };
        let pre = "sr hmac set 1 sha1 secret s\n";
        let good = |mode: &str, n: usize, hmac: &str| {
            ok(&format!("{PRE}{}\n{pre}", line(mode, n, hmac)));
        };
        let bad = |mode: &str, n: usize, hmac: &str| {
            let e = fail(&format!("{PRE}{}\n{pre}", line(mode, n, hmac)));
            assert_eq!((e.line, e.token.as_str()), (3, "segs"), "{e}");
            assert!(
                e.reason.starts_with(&format!("too many segments: {n}")),
                "{e}"
            );
        };
        good("encap", 127, "");
        bad("encap", 128, "");
        // inline: 2*(126+1) = 254 ok, 2*(127+1) = 256 too big.
        good("inline", 126, "");
        bad("inline", 127, "");
        // hmac: 2*125+5 = 255 ok, 2*126+5 = 257 too big.
        good("encap", 125, " hmac 1");
        bad("encap", 126, " hmac 1");
        // inline + hmac: 2*(124+1)+5 = 255 ok, 2*(125+1)+5 = 257.
        good("inline", 124, " hmac 1");
        bad("inline", 125, " hmac 1");
        good("l2encap.red", 1, "");
    }

    #[test]
    fn seg6_hmac_rules() {
        // Defined later in the file: fine.
        let c = ok(&format!(
            "{PRE}route add 2001:db8::/32 dev eth0 encap seg6 mode encap segs fc00::1 hmac 0x2a\n\
             sr hmac set 42 sha1 secret abc\n"
        ));
        assert_eq!(
            c.routes[0].encap.as_ref().and_then(|e| match e {
                Encap::Seg6(s) => s.hmac,
                _ => None,
            }),
            Some(42)
        );
        // Never defined: reported on the route line, naming the key id token.
        let e = fail(&format!(
            "{PRE}route add 2001:db8::/32 dev eth0 encap seg6 mode encap segs fc00::1 hmac 0x2a\n\
             sr hmac set 43 sha1 secret abc\n"
        ));
        assert_eq!((e.line, e.token.as_str()), (3, "0x2a"));
        assert!(e.reason.contains("HMAC key 42 is not defined"));
        let e = fail3(
            "route add 2001:db8::/32 dev eth0 encap seg6 mode encap segs fc00::1 hmac 0",
            "0",
        );
        assert!(e.reason.contains("non-zero"));
        fail3(
            "route add 2001:db8::/32 dev eth0 encap seg6 mode encap segs fc00::1 hmac 4294967296",
            "4294967296",
        );
    }

    #[test]
    fn seg6_tunsrc_rules() {
        let e = fail3(
            "route add 2001:db8::/32 dev eth0 encap seg6 mode inline segs fc00::1 tunsrc 2001:db8::1",
            "2001:db8::1",
        );
        assert!(e.reason.starts_with("incompatible mode for tunsrc"));
        // Order does not matter: tunsrc before mode.
        fail3(
            "route add 2001:db8::/32 dev eth0 encap seg6 tunsrc 2001:db8::1 segs fc00::1 mode inline",
            "2001:db8::1",
        );
        for bad in ["::", "ff02::1", "::1"] {
            let e = fail3(
                &format!(
                    "route add 2001:db8::/32 dev eth0 encap seg6 mode encap segs fc00::1 tunsrc {bad}"
                ),
                bad,
            );
            assert!(e.reason.starts_with("invalid tunsrc address"), "{e}");
        }
        fail3(
            "route add 2001:db8::/32 dev eth0 encap seg6 mode encap segs fc00::1 tunsrc 10.0.0.1",
            "10.0.0.1",
        );
    }

    // ---- encap ioam6 ---------------------------------------------------------------------------

    #[test]
    fn ioam6_full_and_defaults() {
        let s = ioam6(
            "route add 2001:db8::/32 dev eth0 encap ioam6 trace prealloc type 0x800000 ns 1 size 12",
        );
        assert_eq!(
            s,
            Ioam6Encap {
                mode: IoamMode::Inline,
                tunsrc: None,
                tundst: None,
                freq_k: 1,
                freq_n: 1,
                trace_type: 0x80_0000,
                namespace: 1,
                size: 12,
            }
        );
        let s = ioam6(
            "route add 2001:db8::/32 encap ioam6 mode encap tunsrc 2001:db8::1 tundst 2001:db8::2 \
             freq 2/10 trace prealloc size 244 ns 65535 type 0xf00002 dev eth0",
        );
        assert_eq!(s.mode, IoamMode::Encap);
        assert_eq!(s.tunsrc, Some(v6("2001:db8::1")));
        assert_eq!(s.tundst, Some(v6("2001:db8::2")));
        assert_eq!((s.freq_k, s.freq_n), (2, 10));
        assert_eq!((s.trace_type, s.namespace, s.size), (0xf0_0002, 65535, 244));
        let s = ioam6(
            "route add 2001:db8::/32 dev eth0 encap ioam6 mode auto tundst 2001:db8::2 trace prealloc type 2 ns 0 size 4 freq 1000000/1000000",
        );
        assert_eq!(s.mode, IoamMode::Auto);
        assert_eq!(
            (s.freq_k, s.freq_n, s.trace_type),
            (1_000_000, 1_000_000, 1 << 1)
        );
        assert_eq!(ioam6("route add 2001:db8::/32 dev eth0 encap ioam6 mode inline trace prealloc type 0x800000 ns 1 size 4").mode, IoamMode::Inline);
    }

    #[test]
    fn ioam6_trace_type_bits() {
        // §2.2: bit k (bit 0 = MSB of the 24-bit field, i.e. value 1 << (23 - k)) is refused for
        // k in 12..=21 and k == 23; bits 0-11 and 22 (opaque state) are accepted.
        for k in 0..24u32 {
            let ty = 1u32 << (23 - k);
            let line = format!(
                "route add 2001:db8::/32 dev eth0 encap ioam6 trace prealloc type {ty:#x} ns 1 size 8"
            );
            let refused = (12..=21).contains(&k) || k == 23;
            if refused {
                let e = fail3(&line, &format!("{ty:#x}"));
                assert!(
                    e.reason.contains("unsupported trace type bits"),
                    "bit {k}: {e}"
                );
            } else {
                assert_eq!(ioam6(&line).trace_type, ty, "bit {k}");
            }
        }
        let e = fail3(
            "route add 2001:db8::/32 dev eth0 encap ioam6 trace prealloc type 0 ns 1 size 8",
            "0",
        );
        assert!(e.reason.contains("non-zero"));
        fail3(
            "route add 2001:db8::/32 dev eth0 encap ioam6 trace prealloc type 0x1000000 ns 1 size 8",
            "0x1000000",
        );
        fail3(
            "route add 2001:db8::/32 dev eth0 encap ioam6 trace prealloc type 0xzz ns 1 size 8",
            "0xzz",
        );
        // Decimal works too: 8388608 = 0x800000.
        assert_eq!(ioam6("route add 2001:db8::/32 dev eth0 encap ioam6 trace prealloc type 8388608 ns 1 size 8").trace_type, 0x80_0000);
    }

    #[test]
    fn ioam6_size_ns_freq() {
        let t = |rest: &str| format!("route add 2001:db8::/32 dev eth0 encap ioam6 {rest}");
        for bad in ["0", "3", "6", "248", "-4"] {
            fail3(
                &t(&format!("trace prealloc type 0x800000 ns 1 size {bad}")),
                bad,
            );
        }
        let e = fail3(&t("trace prealloc type 0x800000 ns 1 size 10"), "10");
        assert!(e.reason.contains("multiple of 4"));
        fail3(&t("trace prealloc type 0x800000 ns 65536 size 8"), "65536");
        // (value, offending half)
        for (bad, tok) in [
            ("0/1", "0"),
            ("1/0", "0"),
            ("1/1000001", "1000001"),
            ("1000001/1000001", "1000001"),
        ] {
            fail3(
                &t(&format!(
                    "freq {bad} trace prealloc type 0x800000 ns 1 size 8"
                )),
                tok,
            );
        }
        let e = fail3(
            &t("freq 3/2 trace prealloc type 0x800000 ns 1 size 8"),
            "3/2",
        );
        assert!(e.reason.contains("K must not exceed N"));
        let e = fail3(&t("freq 3 trace prealloc type 0x800000 ns 1 size 8"), "3");
        assert!(e.reason.contains("K/N"));
    }

    #[test]
    fn ioam6_mode_and_tunnel_rules() {
        let t = |rest: &str| {
            format!(
                "route add 2001:db8::/32 dev eth0 encap ioam6 {rest} trace prealloc type 0x800000 ns 1 size 8"
            )
        };
        for m in ["encap", "auto"] {
            let e = fail3(&t(&format!("mode {m}")), m);
            assert!(e.reason.contains("missing 'tundst ADDR'"));
        }
        let e = fail3(&t("tunsrc 2001:db8::1"), "2001:db8::1");
        assert!(e.reason.contains("tunsrc needs mode encap or auto"));
        let e = fail3(&t("mode inline tundst 2001:db8::1"), "2001:db8::1");
        assert!(e.reason.contains("tundst needs mode encap or auto"));
        fail3(&t("mode encap tundst ::"), "::");
        fail3(&t("mode encap tundst 2001:db8::2 tunsrc ::"), "::");
        fail3(&t("mode encap tundst 10.0.0.1"), "10.0.0.1");
        fail3(&t("mode bridge"), "bridge");
        // IPv6 routes only.
        let e = fail3(
            "route add 10.0.0.0/8 dev eth0 encap ioam6 trace prealloc type 0x800000 ns 1 size 8",
            "ioam6",
        );
        assert!(e.reason.contains("only valid on IPv6 routes"));
    }

    #[test]
    fn ioam6_missing_pieces() {
        let t = |rest: &str| format!("route add 2001:db8::/32 dev eth0 encap ioam6 {rest}");
        let e = fail3(&t("mode inline"), "ioam6");
        assert!(e.reason.contains("missing 'trace prealloc"));
        let e = fail3(&t("trace"), "trace");
        assert_eq!(e.reason, "missing value");
        let e = fail3(&t("trace full"), "full");
        assert!(e.reason.contains("prealloc"));
        let e = fail3(&t("trace prealloc ns 1 size 8"), "prealloc");
        assert_eq!(e.reason, "missing 'type T'");
        let e = fail3(&t("trace prealloc type 0x800000 size 8"), "prealloc");
        assert_eq!(e.reason, "missing 'ns N'");
        let e = fail3(&t("trace prealloc type 0x800000 ns 1"), "prealloc");
        assert_eq!(e.reason, "missing 'size S'");
        let e = fail3(&t("trace prealloc type 0x800000 ns 1 size"), "size");
        assert_eq!(e.reason, "missing value");
        fail3(
            &t("trace prealloc type 0x800000 type 0x800000 ns 1 size 8"),
            "type",
        );
        let e = fail3(&t("trace prealloc type 0x800000 nss 1 size 8"), "nss");
        assert_eq!(
            e.reason,
            "unknown keyword (expected one of: type, ns, size)"
        );
        // A misspelt ioam6 keyword before `trace` is named, not the missing trace.
        let e = fail3(
            &t("mdoe encap trace prealloc type 0x800000 ns 1 size 8"),
            "mdoe",
        );
        assert!(
            e.reason
                .ends_with("; ioam6: mode, tunsrc, tundst, freq, trace)")
        );
        // Followed by a route keyword: the missing part is reported.
        let e = fail3(&t("mode inline metric 5"), "ioam6");
        assert!(e.reason.contains("missing 'trace"));
        let e = fail3(
            &t("trace prealloc type 0x800000 ns 1 size 8 bogus"),
            "bogus",
        );
        assert!(
            e.reason
                .ends_with("; ioam6: mode, tunsrc, tundst, freq, trace)")
        );
    }

    // ---- encap rpl -----------------------------------------------------------------------------

    #[test]
    fn rpl_encap() {
        let r = route3(
            "route add 2001:db8::/32 encap rpl segs 2001:db8::1,2001:db8::1,2001:db8::2 dev eth0",
        );
        // Duplicates are allowed.
        assert_eq!(
            r.encap,
            Some(Encap::Rpl(RplEncap {
                segs: vec![v6("2001:db8::1"), v6("2001:db8::1"), v6("2001:db8::2")]
            }))
        );
        // Multicast is only refused as the last address.
        route3("route add 2001:db8::/32 dev eth0 encap rpl segs ff02::1,2001:db8::2");
        let e = fail3(
            "route add 2001:db8::/32 dev eth0 encap rpl segs 2001:db8::2,ff02::1",
            "ff02::1",
        );
        assert!(e.reason.contains("must not be multicast"));
        // hdrlen = 2N <= 255 -> N <= 127.
        route3(&format!(
            "route add 2001:db8::/32 dev eth0 encap rpl segs {}",
            segs(127)
        ));
        let e = fail3(
            &format!(
                "route add 2001:db8::/32 dev eth0 encap rpl segs {}",
                segs(128)
            ),
            "segs",
        );
        assert!(e.reason.contains("too many segments: 128"));
        let e = fail3(
            "route add 10.0.0.0/8 dev eth0 encap rpl segs 2001:db8::2",
            "rpl",
        );
        assert!(e.reason.contains("only valid on IPv6 routes"));
        let e = fail3(
            "route add 2001:db8::/32 dev eth0 encap rpl seg 2001:db8::2",
            "seg",
        );
        assert!(e.reason.ends_with("; rpl: segs)"));
        let e = fail3("route add 2001:db8::/32 dev eth0 encap rpl", "rpl");
        assert!(e.reason.contains("missing 'segs"));
        fail3(
            "route add 2001:db8::/32 dev eth0 encap rpl segs 10.1.1.1",
            "10.1.1.1",
        );
    }

    // ---- ioam namespaces / schemas --------------------------------------------------------------

    #[test]
    fn ioam_namespaces_and_schemas() {
        let c = ok(
            "ioam namespace add 1\nioam namespace add 2 data 0x12345678 wide 0xffeeddccbbaa9988\n\
                    ioam schema add 0xffffff \"opaque blob\"\nioam namespace set 1 schema 16777215\n",
        );
        assert_eq!(
            c.ioam_namespaces[0],
            IoamNamespace {
                id: 1,
                data: u32::MAX,
                wide: u64::MAX,
                schema: Some(0xFF_FFFF)
            }
        );
        assert_eq!(
            c.ioam_namespaces[1],
            IoamNamespace {
                id: 2,
                data: 0x1234_5678,
                wide: 0xffee_ddcc_bbaa_9988,
                schema: None
            }
        );
        assert_eq!(
            c.ioam_schemas,
            vec![IoamSchema {
                id: 0xFF_FFFF,
                data: b"opaque blob".to_vec()
            }]
        );
        // Re-linking moves the schema; `none` unlinks.
        let c = ok(
            "ioam namespace add 1\nioam namespace add 2\nioam schema add 5 x\n\
                    ioam namespace set 1 schema 5\nioam namespace set 2 schema 5\n",
        );
        assert_eq!(c.ioam_namespaces[0].schema, None);
        assert_eq!(c.ioam_namespaces[1].schema, Some(5));
        let c = ok(
            "ioam namespace add 1\nioam schema add 5 x\nioam namespace set 1 schema 5\n\
                    ioam namespace set 1 schema none\n",
        );
        assert_eq!(c.ioam_namespaces[0].schema, None);
        // Exactly 1020 bytes of data.
        let c = ok(&format!("ioam schema add 1 {}\n", "a".repeat(1020)));
        assert_eq!(c.ioam_schemas[0].data.len(), 1020);
    }

    #[test]
    fn ioam_errors() {
        let e = fail("ioam namespace add 1\nioam namespace add 1\n");
        assert_eq!((e.line, e.token.as_str()), (2, "1"));
        assert!(e.reason.contains("already exists"));
        fail("ioam namespace add 65536\n");
        let e = fail("ioam namespace set 3 schema none\n");
        assert_eq!(e.token, "3");
        assert!(e.reason.contains("namespace does not exist"));
        let e = fail("ioam namespace add 3\nioam namespace set 3 schema 9\n");
        assert_eq!((e.line, e.token.as_str()), (2, "9"));
        assert!(e.reason.contains("schema does not exist"));
        // Schema must be declared earlier.
        fail("ioam namespace add 3\nioam namespace set 3 schema 9\nioam schema add 9 x\n");
        let e = fail("ioam namespace add 3\nioam namespace set 3 schem 9\n");
        assert_eq!(e.token, "schem");
        let e = fail("ioam namespace add 3\nioam namespace set 3 schema\n");
        assert_eq!(
            (e.token.as_str(), e.reason.as_str()),
            ("schema", "missing value")
        );
        let e = fail("ioam namespace add 3 data\n");
        assert_eq!(
            (e.token.as_str(), e.reason.as_str()),
            ("data", "missing value")
        );
        fail("ioam namespace add 3 data 0x100000000\n");
        let e = fail("ioam namespace add 3 foo 1\n");
        assert_eq!(e.reason, "unknown keyword (expected one of: data, wide)");
        let e = fail("ioam schema add 0x1000000 x\n");
        assert_eq!(e.token, "0x1000000");
        let e = fail("ioam schema add 1 x\nioam schema add 1 y\n");
        assert_eq!((e.line, e.reason.as_str()), (2, "schema already exists"));
        let e = fail(&format!("ioam schema add 1 {}\n", "a".repeat(1021)));
        assert!(e.reason.contains("too long: 1021"));
        let e = fail("ioam schema add 1\n");
        assert!(e.reason.starts_with("missing value"));
        fail("ioam schema add 1 two words\n");
        fail("ioam namespace del 1\n");
        let e = fail("ioam\n");
        assert_eq!(e.token, "ioam");
        fail("ioam trace add 1\n");
    }

    // ---- sr ------------------------------------------------------------------------------------

    #[test]
    fn sr_tunsrc() {
        assert_eq!(
            ok("sr tunsrc set 2001:db8::1\n").sr_tunsrc,
            Some(v6("2001:db8::1"))
        );
        assert_eq!(
            ok("sr tunsrc set 2001:db8::1\nip sr tunsrc set ::\n").sr_tunsrc,
            None
        );
        fail("sr tunsrc set 10.0.0.1\n");
        let e = fail("sr tunsrc set\n");
        assert_eq!(e.token, "set");
        fail("sr tunsrc set ::1 extra\n");
        fail("sr tunsrc show\n");
    }

    #[test]
    fn sr_hmac() {
        let c = ok("sr hmac set 1 sha1 secret abc\nsr hmac set 0x10 sha256 secret 'with space'\n");
        assert_eq!(
            c.hmac_keys[0],
            HmacKey {
                key_id: 1,
                algo: HmacAlgo::Sha1,
                secret: b"abc".to_vec()
            }
        );
        assert_eq!(c.hmac_keys[1].key_id, 16);
        assert_eq!(c.hmac_keys[1].algo, HmacAlgo::Sha256);
        // Setting a key id again replaces it.
        let c = ok("sr hmac set 1 sha1 secret abc\nsr hmac set 1 sha256 secret xyz\n");
        assert_eq!(
            c.hmac_keys,
            vec![HmacKey {
                key_id: 1,
                algo: HmacAlgo::Sha256,
                secret: b"xyz".to_vec()
            }]
        );
        // 64 bytes is the longest secret.
        ok(&format!("sr hmac set 1 sha1 secret {}\n", "s".repeat(64)));
        let e = fail(&format!("sr hmac set 1 sha1 secret {}\n", "s".repeat(65)));
        assert_eq!(e.token, "secret");
        assert!(e.reason.contains("too long: 65"));
        let e = fail("sr hmac set 1 sha1 secret ''\n");
        assert_eq!(e.token, "secret");
        let e = fail("sr hmac set 0 sha1 secret a\n");
        assert_eq!(e.token, "0");
        let e = fail("sr hmac set 1 md5 secret a\n");
        assert_eq!(e.token, "md5");
        assert!(e.reason.contains("sha1, sha256"));
        let e = fail("sr hmac set 1 sha1 secret\n");
        assert_eq!(
            (e.token.as_str(), e.reason.as_str()),
            ("secret", "missing value")
        );
        fail("sr hmac set 1 sha1 password a\n");
        fail("sr hmac set 1 sha1 secret a b\n");
        fail("sr hmac set 1\n");
        fail("sr hmac set\n");
    }

    #[test]
    fn sr_hmac_stdin_secret() {
        let e = fail("link add eth0\nsr hmac set 9 sha256\n");
        assert_eq!((e.line, e.token.as_str()), (2, "9"));
        assert_eq!(
            e.reason,
            "secret required: add 'secret S' or pipe it on stdin"
        );
        let c = parse_with_stdin(
            "sr hmac set 9 sha256\nsr hmac set 8 sha1 secret x\n",
            Some("piped\n"),
        )
        .unwrap();
        assert_eq!(c.hmac_keys[0].secret, b"piped");
        assert_eq!(c.hmac_keys[1].secret, b"x");
        let e = parse_with_stdin("sr hmac set 9 sha256\nsr hmac set 8 sha1\n", Some("piped"))
            .unwrap_err();
        assert_eq!((e.line, e.token.as_str()), (2, "8"));
        assert!(e.reason.contains("already used on line 1"));
        let e = parse_with_stdin("sr hmac set 9 sha256\n", Some("")).unwrap_err();
        assert_eq!(e.token, "secret");
        let e = parse_with_stdin("sr hmac set 9 sha256\n", Some(&"z".repeat(65))).unwrap_err();
        assert!(e.reason.contains("too long"));
        // The secret must never appear in an error.
        assert!(!e.to_string().contains("zzzz"));
    }

    // ---- sysctl --------------------------------------------------------------------------------

    #[test]
    fn sysctl_globals() {
        let c = ok(
            "sysctl -w net.ipv6.ioam6_id=0x123456\nsysctl net.ipv6.ioam6_id_wide = 0x00ffffffffffff00\n\
                    sysctl net.ipv6.seg6_flowlabel=-1\n",
        );
        assert_eq!(c.sysctl.ioam6_id, 0x12_3456);
        assert_eq!(c.sysctl.ioam6_id_wide, 0x00ff_ffff_ffff_ff00);
        assert_eq!(c.sysctl.seg6_flowlabel, -1);
        assert_eq!(
            ok("sysctl net.ipv6.seg6_flowlabel=1").sysctl.seg6_flowlabel,
            1
        );
        assert_eq!(ok("").sysctl, Sysctls::default());
        fail("sysctl net.ipv6.ioam6_id=0x1000000\n");
        fail("sysctl net.ipv6.ioam6_id_wide=0x0100000000000000\n");
        fail("sysctl net.ipv6.seg6_flowlabel=2\n");
        fail("sysctl net.ipv6.seg6_flowlabel=-2\n");
        // Negative numbers only where -1 is meaningful.
        let e = fail("sysctl net.ipv6.ioam6_id=-1\n");
        assert_eq!(e.token, "-1");
    }

    #[test]
    fn sysctl_spacing_forms() {
        for line in [
            "sysctl net.ipv6.ioam6_id=5",
            "sysctl -w net.ipv6.ioam6_id=5",
            "sysctl net.ipv6.ioam6_id = 5",
            "sysctl net.ipv6.ioam6_id= 5",
            "sysctl net.ipv6.ioam6_id =5",
            "sysctl net/ipv6/ioam6_id=5",
        ] {
            assert_eq!(ok(line).sysctl.ioam6_id, 5, "{line}");
        }
        let c = ok("sysctl -w net.ipv6.ioam6_id=5 net.ipv6.seg6_flowlabel=1\n");
        assert_eq!((c.sysctl.ioam6_id, c.sysctl.seg6_flowlabel), (5, 1));
        let e = fail("sysctl\n");
        assert_eq!(e.token, "sysctl");
        let e = fail("sysctl net.ipv6.ioam6_id=\n");
        assert_eq!(
            (e.token.as_str(), e.reason.as_str()),
            ("net.ipv6.ioam6_id", "missing value")
        );
        let e = fail("sysctl net.ipv6.ioam6_id\n");
        assert!(e.reason.contains("KEY=VALUE"));
        let e = fail("sysctl net.ipv6.ioam6_id 5\n");
        assert_eq!(e.token, "5");
        fail("sysctl =5\n");
        fail("sysctl -p file\n");
        let e = fail("ip sysctl net.ipv6.ioam6_id=5\n");
        assert_eq!(e.token, "sysctl");
    }

    #[test]
    fn sysctl_per_device() {
        let c = ok("link add eth0\nlink add eth0.100\n\
                    sysctl net.ipv6.conf.all.seg6_enabled=1\n\
                    sysctl net.ipv6.conf.all.forwarding=0\n\
                    sysctl net.ipv6.conf.eth0.ioam6_enabled=1\n\
                    sysctl net.ipv6.conf.eth0.ioam6_id=0xffff\n\
                    sysctl net.ipv6.conf.eth0.ioam6_id_wide=4294967295\n\
                    sysctl net.ipv6.conf.eth0.seg6_enabled=1\n\
                    sysctl net.ipv6.conf.eth0.seg6_require_hmac=-1\n\
                    sysctl net.ipv6.conf.eth0.rpl_seg_enabled=1\n\
                    sysctl net.ipv6.conf.eth0.hop_limit=255\n\
                    sysctl net.ipv6.conf.eth0.forwarding=0\n\
                    sysctl net/ipv6/conf/eth0.100/hop_limit=1\n\
                    sysctl net.ipv6.conf.eth0/100.ioam6_id=7\n\
                    sysctl net.ipv6.conf.eth0.100.seg6_enabled=1\n");
        assert!(c.sysctl.all.seg6_enabled);
        assert!(!c.sysctl.all.forwarding);
        assert_eq!(
            c.sysctl.dev["eth0"],
            DevSysctls {
                ioam6_enabled: true,
                ioam6_id: 0xFFFF,
                ioam6_id_wide: u32::MAX,
                seg6_enabled: true,
                seg6_require_hmac: -1,
                rpl_seg_enabled: true,
                hop_limit: 255,
                forwarding: false,
            }
        );
        let vlan = c.sysctl.dev["eth0.100"];
        assert_eq!(
            (vlan.hop_limit, vlan.ioam6_id, vlan.seg6_enabled),
            (1, 7, true)
        );
        assert_eq!(vlan.forwarding, DevSysctls::default().forwarding);
        assert_eq!(c.sysctl.dev.len(), 2);
    }

    #[test]
    fn sysctl_per_device_errors() {
        let e = fail("sysctl net.ipv6.conf.eth0.seg6_enabled=1\nlink add eth0\n");
        assert_eq!((e.line, e.token.as_str()), (1, "eth0"));
        assert!(e.reason.contains("unknown link"));
        let e = fail("sysctl net.ipv6.conf.default.seg6_enabled=1\n");
        assert_eq!(e.token, "net.ipv6.conf.default.seg6_enabled");
        assert!(e.reason.contains("not supported"));
        let e = fail("sysctl net.ipv6.conf.all.accept_ra=1\n");
        assert_eq!(e.token, "net.ipv6.conf.all.accept_ra");
        assert!(
            e.reason
                .starts_with("unknown sysctl key (expected one of: net.ipv6.ioam6_id,")
        );
        fail("sysctl net.ipv4.ip_forward=1\n");
        fail("sysctl net.ipv6.conf.seg6_enabled=1\n");
        fail("sysctl net.ipv6.conf..seg6_enabled=1\n");
        for (key, bad) in [
            ("ioam6_enabled", "2"),
            ("ioam6_id", "65536"),
            ("ioam6_id_wide", "0x100000000"),
            ("seg6_enabled", "-1"),
            ("seg6_require_hmac", "2"),
            ("seg6_require_hmac", "-2"),
            ("rpl_seg_enabled", "2"),
            ("hop_limit", "0"),
            ("hop_limit", "256"),
            ("forwarding", "2"),
            ("forwarding", "yes"),
        ] {
            let e = fail(&format!(
                "link add eth0\nsysctl net.ipv6.conf.eth0.{key}={bad}\n"
            ));
            assert_eq!((e.line, e.token.as_str()), (2, bad), "{key}");
        }
        // An invalid value leaves no partial per-device entry (whole parse fails anyway).
        let e = fail("link add eth0\nsysctl net.ipv6.conf.all.hop_limit=0\n");
        assert!(e.reason.contains("1..=255"));
    }

    // ---- whole-file example -------------------------------------------------------------------

    #[test]
    fn whole_file() {
        let text = "\
# Router rtr of the kernel testbed (docs/references.md §6)
ip link add r0 address 02:00:00:00:01:02
ip link add r1 address 02:00:00:00:02:01 mtu 1500
ip -6 addr add fd00:1::2/64 dev r0
ip -6 addr add fd00:2::1/64 dev r1
ip addr add 10.1.0.2/24 dev r0
ip -6 neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1 nud permanent
ip sr hmac set 1042 sha256 secret s3cret
ip sr tunsrc set fd00:2::1
ip -6 route add fc00::/16 encap seg6 mode encap segs fd00:2::2,fc00::100 hmac 1042 dev r1
ip -6 route add fd00:99::/64 via fd00:2::2 dev r1 metric 20
ip route add 10.2.0.0/16 encap seg6 mode encap.red segs fd00:2::2 dev r1
ip ioam namespace add 123 data 0xdeadbeef
ip ioam schema add 777 hello
ip ioam namespace set 123 schema 777
ip -6 route add fd00:77::/64 dev r1 encap ioam6 trace prealloc type 0xc00000 ns 123 size 16
sysctl -w net.ipv6.conf.all.seg6_enabled=1
sysctl -w net.ipv6.conf.r0.seg6_enabled=1
";
        let c = ok(text);
        assert_eq!(c.links.len(), 2);
        assert_eq!(c.addrs.len(), 3);
        assert_eq!(c.neighs.len(), 1);
        assert_eq!(c.routes.len(), 4);
        assert_eq!(c.routes[0].line, 10);
        assert_eq!(c.hmac_keys.len(), 1);
        assert_eq!(c.sr_tunsrc, Some(v6("fd00:2::1")));
        assert_eq!(c.ioam_namespaces[0].schema, Some(777));
        assert!(c.sysctl.dev["r0"].seg6_enabled);
    }

    // ---- never panic --------------------------------------------------------------------------

    const VOCAB: &[&str] = &[
        "ip",
        "-4",
        "-6",
        "link",
        "addr",
        "address",
        "neigh",
        "route",
        "ioam",
        "sr",
        "sysctl",
        "add",
        "set",
        "to",
        "default",
        "via",
        "inet",
        "inet6",
        "dev",
        "oif",
        "metric",
        "preference",
        "mtu",
        "lock",
        "encap",
        "seg6",
        "ioam6",
        "rpl",
        "mode",
        "inline",
        "encap.red",
        "l2encap",
        "segs",
        "hmac",
        "tunsrc",
        "tundst",
        "freq",
        "trace",
        "prealloc",
        "type",
        "ns",
        "size",
        "namespace",
        "schema",
        "none",
        "data",
        "wide",
        "tunsrc",
        "sha1",
        "sha256",
        "secret",
        "lladdr",
        "nud",
        "permanent",
        "name",
        "eth0",
        "eth1",
        "-w",
        "=",
        "0",
        "1",
        "-1",
        "0x800000",
        "8",
        "1/2",
        "2001:db8::/32",
        "2001:db8::1",
        "fe80::1",
        "ff02::1",
        "::",
        "10.0.0.0/8",
        "10.0.0.1",
        "02:00:00:00:00:01",
        "fc00::1,fc00::2",
        "net.ipv6.conf.eth0.hop_limit=3",
        "net.ipv6.ioam6_id",
        "\"",
        "'",
        "#",
        "\"a b\"",
        "é",
        "\u{3000}",
        "",
    ];

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(s in ".{0,300}") {
            let _ = parse(&s);
            let _ = parse_with_stdin(&s, Some("k"));
        }

        #[test]
        fn arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..300)) {
            let s = String::from_utf8_lossy(&b);
            let _ = parse(&s);
        }

        #[test]
        fn token_soup_never_panics(
            lines in proptest::collection::vec(
                proptest::collection::vec(proptest::sample::select(VOCAB), 0..14), 0..8)
        ) {
            let text = format!(
                "link add eth0\nlink add eth1\n{}",
                lines.iter().map(|l| l.join(" ")).collect::<Vec<_>>().join("\n")
            );
            match parse_with_stdin(&text, Some("k")) {
                Ok(_) => {}
                Err(e) => {
                    // Errors point at a real line.
                    prop_assert!(e.line >= 1 && e.line <= text.split('\n').count());
                }
            }
        }

        #[test]
        fn valid_seg6_routes_round_trip(
            n in 1usize..=127,
            mode in 0usize..5,
            metric in any::<u32>(),
            plen in 0u8..=128,
            addr in any::<u128>(),
        ) {
            let modes = ["inline", "encap", "l2encap", "encap.red", "l2encap.red"];
            let n = if mode == 0 { n.min(126) } else { n };
            let prefix = Ipv6Net::new(Ipv6Addr::from(addr), plen).unwrap().trunc();
            let line = format!(
                "-6 route add {prefix} dev eth0 metric {metric} encap seg6 mode {} segs {}",
                modes[mode], segs(n)
            );
            let r = route3(&line);
            prop_assert_eq!(r.prefix, IpNet::V6(prefix));
            prop_assert_eq!(r.metric, if metric == 0 { 1024 } else { metric });
            match r.encap {
                Some(Encap::Seg6(s)) => {
                    prop_assert_eq!(s.mode.name(), modes[mode]);
                    prop_assert_eq!(s.segs.len(), n);
                }
                other => prop_assert!(false, "{:?}", other),
            }
        }
    }
}
