//! The line parser.
//!
//! Each line is split into tokens (whitespace separated; a token that starts with `"` or `'` runs to the
//! matching quote, so secrets and schema data may hold spaces or `#`; outside quotes `#` starts a comment,
//! as in `ip -batch`). Commands are applied in file order to a [`Config`] under construction, so a
//! command may only refer to links, namespaces and schemas declared on earlier lines. The one exception is
//! `encap seg6 ... hmac KEYID`: the key may be defined by an `sr hmac set` line anywhere in the file, which
//! is checked once the whole file has been read (so such an error is reported after all line errors).

use super::{
    Addr, Config, ConfigError, DevSysctls, Encap, HmacKey, Ioam6Encap, IoamDexSpec, IoamDomain,
    IoamForeign, IoamMode, IoamNamespace, IoamSchema, IoamTraceSpec, Link, MAIN_TABLE, Neigh,
    Route, RplEncap, Seg6Encap, Seg6LocalSpec, Seg6Mode, Sysctls,
};
use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use lwt6_dataplane::tunnel::seg6local::attr;
use lwt6_wire::ethernet::Mac;
use lwt6_wire::ioam::{LWT_FORBIDDEN_BITS, TRACE_DATA_MAX};
use lwt6_wire::rpl::MAX_ADDRESSES;
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
/// IOAM LWT frequency bound (`IOAM6_IPTUNNEL_FREQ_MAX`).
const MAX_FREQ: u64 = 1_000_000;
/// Largest SRH `hdrlen` (a u8).
const MAX_SRH_HDRLEN: usize = 255;
/// Extra 8-octet units the iproute2 HMAC TLV adds to the SRH.
const HMAC_TLV_UNITS: usize = lwt6_wire::srh::HMAC_TLV_LEN / 8;

/// Most pre-allocated traces one ioam6 route inserts (the IOAM paper measured up to 11).
const MAX_IOAM_TRACES: usize = 16;
/// Longest Hop-by-Hop header (Hdr Ext Len 255, RFC 8200 §4.3).
const MAX_HBH_LEN: usize = 2048;
const COMMANDS: &str = "link, addr, neigh, route, ioam, sr, sysctl";

pub mod lines;

/// Parses a whole configuration file (lines end with LF, CR LF or CR: [`lines`]). `sr hmac set KEYID ALGO` without `secret S` is an error here
/// (there is no stdin to read); see [`parse_with_stdin`].
pub fn parse(text: &str) -> Result<Config> {
    parse_with_stdin(text, None)
}

/// Like [`parse`], but `sr hmac set KEYID ALGO` lines without `secret` take their secret from `stdin_secret`
/// (the first line of standard input, trailing newline removed), as `echo S | ip sr hmac set ...` does.
/// Only one such line may use it.
pub fn parse_with_stdin(text: &str, stdin_secret: Option<&str>) -> Result<Config> {
    let mut b = Builder::new();
    if let Some(s) = stdin_secret {
        b = b.with_stdin_secret(s);
    }
    for (i, raw) in lines::split(text).enumerate() {
        b.line(i + 1, raw)?;
    }
    b.finish()
}

/// A configuration built one line at a time: what [`parse`] does for a file, and what a control socket does
/// for a single line against a running configuration ([`Builder::from_config`]).
///
/// Every line is applied whole or not at all: a line that fails leaves the builder as it was (its error names
/// the line and token). Checks that need the whole file (a `hmac KEYID` naming a key set on a later line) are
/// made by [`Builder::finish`], or, for the lines of a [`Transaction`] on a running configuration, by
/// [`Transaction::check`].
///
/// Routes are kept in file order until a `route del` takes one out: the last route then takes its place (the
/// order of [`Config::routes`] is not the table's; routes are found by their (table, prefix, metric) index).
#[derive(Debug)]
pub struct Builder<'s> {
    p: Parser<'s>,
}

impl Default for Builder<'_> {
    fn default() -> Self {
        Builder::new()
    }
}

impl<'s> Builder<'s> {
    /// An empty configuration.
    pub fn new() -> Self {
        Builder {
            p: Parser {
                cfg: Config::default(),
                links: HashMap::new(),
                addrs: HashMap::new(),
                neighs: HashMap::new(),
                routes: route_index::RouteIndex::default(),
                undo: None,
                stdin_secret: None,
                stdin_used_by: None,
                hmac_refs: Vec::new(),
                table_refs: Vec::new(),
                trace_refs: Vec::new(),
                names: Default::default(),
            },
        }
    }

    /// The secret for one `sr hmac set KEYID ALGO` line without `secret` (read from standard input by the
    /// caller, as `echo S | ip sr hmac set ...` does); trailing newlines are removed.
    pub fn with_stdin_secret(mut self, secret: &'s str) -> Self {
        self.p.stdin_secret = Some(secret.trim_end_matches(['\n', '\r']));
        self
    }

    /// Starts from a configuration already built (a running router's), so that lines are checked against it:
    /// a `dev` must name one of its links, a route must not exist already, and so on. Indexes its routes once (a
    /// pass over them); a router keeps the builder and applies its requests in [`Builder::transaction`]s.
    pub fn from_config(mut cfg: Config) -> Self {
        let mut b = Builder::new();
        let p = &mut b.p;
        for (i, l) in cfg.links.iter().enumerate() {
            p.links.insert(l.name.clone(), i);
        }
        for a in &cfg.addrs {
            p.addrs.insert((a.addr, a.dev.clone()), a.line);
        }
        for n in &cfg.neighs {
            p.neighs.insert((n.addr, n.dev.clone()), n.line);
        }
        // Built in one go: one sorted vector of exactly the table's size (parse::route_index).
        p.routes = route_index::RouteIndex::from_entries(
            cfg.routes
                .iter()
                .enumerate()
                .map(|(i, r)| (route_key(r), route_at(i)))
                .collect(),
        );
        for r in &mut cfg.routes {
            // One shared copy of each device name (a configuration built elsewhere may hold one per route).
            if let Some(d) = &mut r.dev {
                *d = p.names.get(d);
            }
        }
        p.cfg = cfg;
        b
    }

    /// Applies one line (numbered `line_no` in errors): a command, a comment or a blank line.
    pub fn line(&mut self, line_no: usize, text: &str) -> Result<()> {
        // A UTF-8 byte order mark some editors put in front of a file is not part of the first command.
        let text = if line_no == 1 {
            text.strip_prefix('\u{feff}').unwrap_or(text)
        } else {
            text
        };
        let toks = tokenize(line_no, text)?;
        if toks.is_empty() {
            return Ok(());
        }
        let mut c = Cur {
            line: line_no,
            toks,
            pos: 0,
        };
        let mark = self.p.mark();
        self.p.command(&mut c).inspect_err(|_| self.p.rewind(mark))
    }

    /// The configuration so far.
    pub fn config(&self) -> &Config {
        &self.p.cfg
    }

    /// The checks that need every line, then the configuration.
    pub fn finish(self) -> Result<Config> {
        self.p.finish()
    }
}

/// What a line may have changed before failing, saved to undo it (see [`Parser::mark`]).
#[derive(Debug)]
struct Mark {
    lens: [usize; 8],
    hmac_refs: usize,
    table_refs: usize,
    trace_refs: usize,
    stdin_used_by: Option<usize>,
    sysctl: Sysctls,
    sr_tunsrc: Option<std::net::Ipv6Addr>,
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
    if tok.chars().any(char::is_control) {
        return Err(c.err(tok, "invalid link name (no control characters)"));
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

/// When an encap lacks a required part and stopped at a token that is no route keyword either, that
/// token is the more useful thing to report (likely a misspelt encap keyword).
fn stray(c: &Cur<'_>, kind: &str, keywords: &str) -> Option<ConfigError> {
    let t = c.peek()?;
    if keywords::spellings(&keywords::route()).any(|w| w == t) {
        return None;
    }
    Some(c.err(
        t,
        format!(
            "unknown keyword (expected one of: {}; {kind}: {keywords})",
            keywords::expected(&keywords::route())
        ),
    ))
}

/// A route's parsed encap with the tokens later (family-dependent) checks report.
struct ParsedEncap<'t> {
    encap: Encap,
    type_tok: &'t str,
    mode_tok: Option<&'t str>,
}

/// Parse state for one file.
#[derive(Debug)]
struct Parser<'s> {
    cfg: Config,
    /// Link name -> index in `cfg.links`.
    links: HashMap<String, usize>,
    /// (address, dev) -> line.
    addrs: HashMap<(IpAddr, String), usize>,
    /// (address, dev) -> line.
    neighs: HashMap<(IpAddr, String), usize>,
    /// (table, prefix, metric) -> index in `cfg.routes` (ordered: a prefix's metrics and a table's routes are
    /// ranges). The index is a `u32`: one entry per route of the table, so its size counts (issue 22 item 7).
    routes: route_index::RouteIndex,
    /// What the open transaction changed, to undo it ([`Builder::transaction`]); `None` outside one.
    undo: Option<txn::Undo>,
    stdin_secret: Option<&'s str>,
    stdin_used_by: Option<usize>,
    /// `hmac KEYID` on routes: (line, token, key id), checked at the end.
    hmac_refs: Vec<(usize, String, u32)>,
    /// `table T` / `vrftable T` of seg6local routes: (line, token, table), checked at the end (the table must have
    /// a route, or be main).
    table_refs: Vec<(usize, String, u32)>,
    /// The traces ioam6 routes insert: (line, the `size` token, namespace, size), checked at the end against the
    /// domains' `maxsize` (a domain may be declared after the route).
    /// The key is the route's, set once the line has added it (a `route del` line's trace has none).
    trace_refs: Vec<(usize, String, u16, u16, Option<RouteKey>)>,
    /// The device names routes hold, one shared copy per name (a route's `dev` costs a pointer, not a string).
    names: lwt6_dataplane::spec::DevNames,
}

/// A route's identity: (table, prefix, metric).
type RouteKey = (u32, IpNet, u32);

/// A route's index in `cfg.routes` as the route index stores it (a table has fewer than 2^32 routes: a batch is
/// at most a million lines, a file of more would not fit in memory at ~400 bytes a route).
fn route_at(i: usize) -> u32 {
    u32::try_from(i).expect("fewer than 2^32 routes")
}

/// The identity of route `r`.
fn route_key(r: &Route) -> RouteKey {
    (r.table, r.prefix, r.metric)
}

impl Parser<'_> {
    /// What to restore if the line being applied fails. Commands add to the configuration's lists and maps only
    /// as their last step, after every check; what may change earlier (a seg6 route's HMAC reference, the stdin
    /// secret's use, the first pairs of a `sysctl` line) is saved here.
    fn mark(&self) -> Mark {
        let c = &self.cfg;
        Mark {
            lens: [
                c.links.len(),
                c.addrs.len(),
                c.neighs.len(),
                c.routes.len(),
                c.ioam_namespaces.len(),
                c.ioam_schemas.len(),
                c.hmac_keys.len(),
                c.ioam_domains.len(),
            ],
            hmac_refs: self.hmac_refs.len(),
            table_refs: self.table_refs.len(),
            trace_refs: self.trace_refs.len(),
            stdin_used_by: self.stdin_used_by,
            sysctl: c.sysctl.clone(),
            sr_tunsrc: c.sr_tunsrc,
        }
    }

    /// Undoes a failed line (see [`Parser::mark`]).
    fn rewind(&mut self, m: Mark) {
        let c = &mut self.cfg;
        let [
            links,
            addrs,
            neighs,
            routes,
            namespaces,
            schemas,
            keys,
            domains,
        ] = m.lens;
        c.ioam_domains.truncate(domains);
        c.links.truncate(links);
        c.addrs.truncate(addrs);
        c.neighs.truncate(neighs);
        c.routes.truncate(routes);
        c.ioam_namespaces.truncate(namespaces);
        c.ioam_schemas.truncate(schemas);
        c.hmac_keys.truncate(keys);
        c.sysctl = m.sysctl;
        c.sr_tunsrc = m.sr_tunsrc;
        self.hmac_refs.truncate(m.hmac_refs);
        self.table_refs.truncate(m.table_refs);
        self.trace_refs.truncate(m.trace_refs);
        self.stdin_used_by = m.stdin_used_by;
    }

    fn finish(self) -> Result<Config> {
        self.check_refs([0, 0, 0])?;
        Ok(self.cfg)
    }

    /// The checks that need every line, for the references recorded from `from` on (hmac, table, trace): a
    /// key named must be set, a table named must have a route, a trace must fit its domain's `maxsize`.
    fn check_refs(&self, from: [usize; 3]) -> Result<()> {
        for (line, tok, id) in &self.hmac_refs[from[0]..] {
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
        for (line, tok, t) in &self.table_refs[from[1]..] {
            if *t != MAIN_TABLE && !self.has_table(*t) {
                return Err(err(
                    *line,
                    tok,
                    format!("table {t} does not exist (no route has 'table {t}')"),
                ));
            }
        }
        for (line, tok, ns, size, key) in &self.trace_refs[from[2]..] {
            // Only routes still there (a later `route replace` or `route del` may have taken it).
            let there = key
                .and_then(|k| self.routes.get(&k))
                .is_some_and(|i| self.cfg.routes[i as usize].line as usize == *line);
            if !there {
                continue;
            }
            let Some(d) = self
                .cfg
                .ioam_domains
                .iter()
                .find(|d| d.namespaces.contains(ns))
            else {
                continue;
            };
            if let Some(max) = d.max_size.filter(|m| size > m) {
                return Err(err(
                    *line,
                    tok,
                    format!(
                        "a {size}-byte trace is larger than domain {} allows for namespace {ns} (maxsize {max}, line {})",
                        d.name, d.line
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Whether table `t` has a route (a range of the route index).
    fn has_table(&self, t: u32) -> bool {
        let first = (t, IpNet::V4(Ipv4Net::default()), 0);
        self.routes
            .range(first..)
            .next()
            .is_some_and(|(k, _)| k.0 == t)
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
        if word != "route" {
            // In a transaction, whatever is not a route is saved before its first change (routes have their log).
            self.save_rest();
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

    /// `route add|replace|change|del [to] PREFIX|default [table T] [via [inet|inet6] ADDR] [dev NAME] [metric N]
    /// [mtu [lock] N] [encap ...]`.
    fn route(&mut self, c: &mut Cur<'_>, flag: Option<Fam>) -> Result<()> {
        let verb = Self::verb(c, "route", &["add", "replace", "change", "del", "delete"])?;
        // iproute2 takes keywords before the prefix too (`route add table 100 PREFIX ...`).
        let table = keywords::route();
        let mut args = keywords::RouteArgs::default();
        while let Some(kw) = c.peek() {
            let Some(k) = keywords::find(&table, kw) else {
                break;
            };
            c.next();
            (k.handle)(self, c, &mut args, kw)?;
        }
        let mut ptok = c.positional(verb, "a prefix or 'default'")?;
        let (reject, type_tok) = match route_type::parse(c, ptok)? {
            Some(kind) => (kind, Some(ptok)),
            None => (None, None),
        };
        if let Some(t) = type_tok {
            ptok = c.positional(t, "a prefix or 'default'")?;
        }
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

        while let Some(kw) = c.next() {
            let Some(k) = keywords::find(&table, kw) else {
                let extra = match args.encap.as_ref().map(|e| &e.encap) {
                    Some(Encap::Seg6(_)) => {
                        format!("; seg6: {}", keywords::expected(&keywords::seg6()))
                    }
                    Some(Encap::Ioam6(_)) => {
                        format!("; ioam6: {}", keywords::expected(&keywords::ioam6()))
                    }
                    Some(Encap::Rpl(_)) => {
                        format!("; rpl: {}", keywords::expected(&keywords::rpl()))
                    }
                    Some(Encap::Seg6Local(_)) => {
                        format!(
                            "; seg6local: {}",
                            keywords::expected(&keywords::seg6local())
                        )
                    }
                    None => String::new(),
                };
                return Err(c.err(
                    kw,
                    format!(
                        "unknown keyword (expected one of: {}{extra})",
                        keywords::expected(&table)
                    ),
                ));
            };
            (k.handle)(self, c, &mut args, kw)?;
        }
        let keywords::RouteArgs {
            via,
            dev,
            metric,
            mtu,
            encap,
            table: table_arg,
        } = args;
        let table = table_arg.map_or(MAIN_TABLE, |t| t.0);

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
        if let Some(t) = type_tok {
            route_type::check(c, fam == Fam::V4, t, via.map(|v| v.2), dev, encap.as_ref())?;
        }
        if verb == "del" || verb == "delete" {
            // The kernel matches the type on an IPv4 delete only.
            let want = (fam == Fam::V4 && type_tok.is_some()).then_some(reject);
            return self.route_del(
                c,
                ptok,
                (prefix, want),
                table,
                metric,
                via.map(|v| v.0),
                dev,
            );
        }
        // The kernel keeps neither device nor gateway of an IPv6 reject route (it shows `dev lo`).
        let (via, dev) = if reject.is_some() {
            (None, None)
        } else {
            (via, dev)
        };
        if via.is_none() && dev.is_none() && reject.is_none() {
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
            Some((m, t, locked)) => {
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
                Some(crate::RouteMtu { value: m, locked })
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
                        Encap::Ioam6(_) | Encap::Rpl(_) | Encap::Seg6Local(_) => {
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

        let route = Route {
            reject,
            prefix,
            via: via.map(|v| v.0),
            dev: dev.map(|d| self.names.get(d)),
            metric,
            mtu,
            encap: encap.map(Box::new),
            table,
            line: lwt6_dataplane::fib::line32(c.line),
        };
        let key = (table, prefix, metric);
        let existing = self.routes.get(&key).map(|i| i as usize);
        // The traces this line's ioam6 encap inserts belong to this route (if the line succeeds).
        for t in self.trace_refs.iter_mut().rev() {
            if t.0 != c.line || t.4.is_some() {
                break;
            }
            t.4 = Some(key);
        }
        match (verb, existing) {
            ("add", Some(i)) => {
                let prev = self.cfg.routes[i].line;
                let in_table = if table == MAIN_TABLE {
                    String::new()
                } else {
                    format!(" in table {table}")
                };
                Err(c.err(
                    ptok,
                    format!(
                        "route already exists (line {prev} has the same prefix and metric {metric}{in_table}; use 'route replace' to change it)"
                    ),
                ))
            }
            ("change", None) => Err(c.err(
                ptok,
                format!(
                    "no such route to change (prefix {prefix} with metric {metric} in table {table}; 'route replace' adds it)"
                ),
            )),
            ("replace" | "change", Some(i)) => {
                self.route_replace(i, route);
                Ok(())
            }
            _ => {
                self.route_push(route);
                Ok(())
            }
        }
    }

    /// `route del PREFIX [table T] [metric N] [via A] [dev D]`: removes the matching route of the lowest metric
    /// (any metric when none is given, as the kernel matches), or fails naming the prefix.
    #[allow(clippy::too_many_arguments)]
    fn route_del(
        &mut self,
        c: &Cur<'_>,
        ptok: &str,
        (prefix, want): (IpNet, Option<Option<lwt6_dataplane::fib::RejectKind>>),
        table: u32,
        metric: Option<u32>,
        via: Option<IpAddr>,
        dev: Option<&str>,
    ) -> Result<()> {
        // An IPv6 metric 0 means "any", as the kernel treats it.
        let metric = metric.filter(|m| *m != 0 || !prefix.addr().is_ipv6());
        // The prefix's routes in the table, lowest metric first: the first that matches.
        let (lo, hi) = metric.map_or((0, u32::MAX), |m| (m, m));
        let found = self
            .routes
            .range((table, prefix, lo)..=(table, prefix, hi))
            .map(|(_, i)| i as usize)
            .find(|i| {
                let r = &self.cfg.routes[*i];
                via.is_none_or(|v| r.via == Some(v))
                    && dev.is_none_or(|d| r.dev.as_deref() == Some(d))
                    && want.is_none_or(|k| r.reject == k)
            });
        let Some(i) = found else {
            let in_table = if table == MAIN_TABLE {
                String::new()
            } else {
                format!(" in table {table}")
            };
            return Err(c.err(ptok, format!("no such route to delete{in_table}")));
        };
        self.route_remove(i);
        Ok(())
    }

    /// `encap seg6|ioam6|rpl ...`: consumes its own keywords and stops at the first other token.
    fn encap<'t>(&mut self, c: &mut Cur<'t>) -> Result<ParsedEncap<'t>> {
        let t = c.value("encap")?;
        match t {
            "seg6" => self.seg6(c, t),
            "ioam6" => self.ioam6(c, t),
            "rpl" => self.rpl(c, t),
            "seg6local" => self.seg6local(c, t),
            _ => Err(c.err(
                t,
                "unsupported encap type (expected one of: seg6, seg6local, ioam6, rpl)",
            )),
        }
    }

    /// `seg6 mode MODE segs A[,B...] [hmac KEYID] [tunsrc ADDR]` (§1.1).
    fn seg6<'t>(&mut self, c: &mut Cur<'t>, type_tok: &'t str) -> Result<ParsedEncap<'t>> {
        let table = keywords::seg6();
        let mut args = keywords::Seg6Args::default();
        while let Some(kw) = c.peek() {
            let Some(k) = keywords::find(&table, kw) else {
                break;
            };
            c.next();
            (k.handle)(self, c, &mut args, kw)?;
        }
        let keywords::Seg6Args {
            mode,
            segs,
            hmac,
            tunsrc,
        } = args;
        if (mode.is_none() || segs.is_none())
            && let Some(e) = stray(c, "seg6", &keywords::expected(&table))
        {
            return Err(e);
        }
        let Some((mode, mode_tok)) = mode else {
            return Err(c.err(
                type_tok,
                format!(
                    "missing 'mode' (expected one of: {})",
                    keywords::seg6_modes()
                ),
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
    fn ioam6<'t>(&mut self, c: &mut Cur<'t>, type_tok: &'t str) -> Result<ParsedEncap<'t>> {
        let table = keywords::ioam6();
        let mut args = keywords::Ioam6Args::default();
        while let Some(kw) = c.peek() {
            let Some(k) = keywords::find(&table, kw) else {
                break;
            };
            c.next();
            (k.handle)(self, c, &mut args, kw)?;
        }
        let keywords::Ioam6Args {
            mode,
            tunsrc,
            tundst,
            freq,
            traces,
            dex,
            hbh,
        } = args;
        let mode_v = mode.map_or(IoamMode::Inline, |m| m.0);
        if traces.is_empty()
            && dex.is_none()
            && let Some(e) = stray(c, "ioam6", &keywords::expected(&table))
        {
            return Err(e);
        }
        if traces.is_empty() && dex.is_none() {
            return Err(c.err(
                type_tok,
                "missing 'trace prealloc type T ns N size S' (or 'dex type T ns N')",
            ));
        }
        match mode_v {
            IoamMode::Inline => {
                if let Some((_, t)) = tunsrc {
                    return Err(c.err(t, "tunsrc needs mode encap or auto"));
                }
                if let Some((_, t)) = tundst {
                    return Err(c.err(t, "tundst needs mode encap or auto"));
                }
            }
            _ if hbh.is_some_and(|h| h.0) => {
                return Err(c.err(
                    hbh.map_or(type_tok, |h| h.1),
                    "hbh merge needs mode inline (encap adds its own Hop-by-Hop header)",
                ));
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
        if traces.len() > MAX_IOAM_TRACES {
            return Err(c.err(
                traces[MAX_IOAM_TRACES].1,
                format!("too many traces (at most {MAX_IOAM_TRACES} per route)"),
            ));
        }
        let opts: usize = traces
            .iter()
            .map(|((_, _, size, _), _)| 12 + usize::from(*size))
            .sum::<usize>()
            + dex.map_or(0, |(d, _)| {
                lwt6_wire::ioam::dex_len(d.flow_id.is_some(), d.seq)
            });
        let total = lwt6_wire::ioam::hbh_options_len(opts);
        if total > MAX_HBH_LEN {
            return Err(c.err(
                type_tok,
                format!(
                    "the options need a {total}-byte Hop-by-Hop header (at most {MAX_HBH_LEN})"
                ),
            ));
        }
        let (freq_k, freq_n) = freq.unwrap_or((1, 1));
        for ((_, ns, size, tok), _) in &traces {
            self.trace_refs
                .push((c.line, tok.to_string(), *ns, *size, None));
        }
        Ok(ParsedEncap {
            encap: Encap::Ioam6(Ioam6Encap {
                mode: mode_v,
                tunsrc: tunsrc.map(|t| t.0),
                tundst: tundst.map(|t| t.0),
                freq_k,
                freq_n,
                traces: traces
                    .iter()
                    .map(|((trace_type, namespace, size, _), _)| IoamTraceSpec {
                        trace_type: *trace_type,
                        namespace: *namespace,
                        size: *size,
                    })
                    .collect(),
                dex: dex.map(|d| d.0),
                hbh_merge: hbh.is_some_and(|h| h.0),
            }),
            type_tok,
            mode_tok: mode.map(|m| m.1),
        })
    }

    /// `type T ns N [flowid F] [seq]` after `dex`, in any order, each at most once (RFC 9326 §3.2). The trace
    /// type follows the rules of `trace prealloc` (the data each node exports is what it would write into a
    /// trace).
    fn ioam6_dex(c: &mut Cur<'_>, dex: &str) -> Result<IoamDexSpec> {
        let mut ty: Option<u32> = None;
        let mut ns: Option<u16> = None;
        let mut flow_id: Option<u32> = None;
        let mut seq: Option<()> = None;
        while let Some(kw) = c.peek() {
            match kw {
                "type" => {
                    c.next();
                    once(c, &ty, kw)?;
                    ty = Some(Self::ioam6_trace_type(c, kw)?);
                }
                "ns" => {
                    c.next();
                    once(c, &ns, kw)?;
                    let t = c.value(kw)?;
                    ns = Some(num_u32(c, t, 0, 0xFFFF)? as u16);
                }
                "flowid" => {
                    c.next();
                    once(c, &flow_id, kw)?;
                    let t = c.value(kw)?;
                    flow_id = Some(num_u32(c, t, 0, u32::MAX)?);
                }
                "seq" => {
                    c.next();
                    once(c, &seq, kw)?;
                    seq = Some(());
                }
                _ => break,
            }
        }
        if (ty.is_none() || ns.is_none())
            && let Some(t) = c.peek()
            && !keywords::spellings(&keywords::route()).any(|w| w == t)
            && !keywords::spellings(&keywords::ioam6()).any(|w| w == t)
        {
            return Err(c.err(
                t,
                "unknown keyword (expected one of: type, ns, flowid, seq)",
            ));
        }
        match (ty, ns) {
            (Some(trace_type), Some(namespace)) => Ok(IoamDexSpec {
                trace_type,
                namespace,
                flow_id,
                seq: seq.is_some(),
            }),
            (None, _) => Err(c.err(dex, "missing 'type T'")),
            (_, None) => Err(c.err(dex, "missing 'ns N'")),
        }
    }

    /// The value of a `type` keyword of `trace prealloc` or `dex`: 24 bits, non-zero, none of the bits Linux
    /// refuses (12-21, 23).
    fn ioam6_trace_type(c: &mut Cur<'_>, kw: &str) -> Result<u32> {
        let t = c.value(kw)?;
        let v = num_u32(c, t, 0, 0xFF_FFFF)?;
        if v == 0 {
            return Err(c.err(t, "trace type must be non-zero"));
        }
        if v & LWT_FORBIDDEN_BITS != 0 {
            return Err(c.err(
                t,
                "unsupported trace type bits (bits 12-21 and 23, mask 0x000ffd, must be clear)",
            ));
        }
        Ok(v)
    }

    /// `type T ns N size S` after `trace prealloc`, in any order, each exactly once.
    /// Returns the type, the namespace, the size and the size's token.
    fn ioam6_trace<'t>(c: &mut Cur<'t>, prealloc: &str) -> Result<keywords::TraceArg<'t>> {
        let mut ty: Option<u32> = None;
        let mut ns: Option<u16> = None;
        let mut size: Option<(u16, &'t str)> = None;
        while let Some(kw) = c.peek() {
            match kw {
                "type" => {
                    c.next();
                    once(c, &ty, kw)?;
                    ty = Some(Self::ioam6_trace_type(c, kw)?);
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
                    let v = num_u32(c, t, 4, TRACE_DATA_MAX as u32)?;
                    if v % 4 != 0 {
                        return Err(c.err(t, "trace size must be a multiple of 4"));
                    }
                    size = Some((v as u16, t));
                }
                _ => break,
            }
        }
        if (ty.is_none() || ns.is_none() || size.is_none())
            && let Some(t) = c.peek()
            && !keywords::spellings(&keywords::route()).any(|w| w == t)
            && !keywords::spellings(&keywords::ioam6()).any(|w| w == t)
        {
            return Err(c.err(t, "unknown keyword (expected one of: type, ns, size)"));
        }
        match (ty, ns, size) {
            (Some(t), Some(n), Some((s, tok))) => Ok((t, n, s, tok)),
            (None, _, _) => Err(c.err(prealloc, "missing 'type T'")),
            (_, None, _) => Err(c.err(prealloc, "missing 'ns N'")),
            (_, _, None) => Err(c.err(prealloc, "missing 'size S'")),
        }
    }

    /// `seg6local action ACTION [nh4 A] [nh6 A] [table T] [vrftable T] [oif DEV] [srh [hmac K] segs A,B]
    /// [count] [flavors OPS [lblen N] [nflen N]]`, checked against the behaviour's row
    /// (`tunnel::seg6local::BEHAVIOURS`): every attribute it requires, none it does not take.
    fn seg6local<'t>(&mut self, c: &mut Cur<'t>, type_tok: &'t str) -> Result<ParsedEncap<'t>> {
        let table = keywords::seg6local();
        let mut a = keywords::Seg6LocalArgs::default();
        while let Some(kw) = c.peek() {
            let Some(k) = keywords::find(&table, kw) else {
                break;
            };
            c.next();
            (k.handle)(self, c, &mut a, kw)?;
        }
        if a.action.is_none()
            && let Some(e) = stray(c, "seg6local", &keywords::expected(&table))
        {
            return Err(e);
        }
        let Some((b, atok)) = a.action else {
            return Err(c.err(
                type_tok,
                format!(
                    "missing 'action ACTION' (expected one of: {})",
                    keywords::seg6local_actions()
                ),
            ));
        };
        let takes = b.required | b.one_of | b.optional;
        for (bit, tok) in &a.given {
            if takes & bit == 0 {
                let hint = if *bit == attr::TABLE {
                    "; a route's own 'table N' goes before 'encap'"
                } else {
                    ""
                };
                return Err(c.err(
                    tok,
                    format!(
                        "action {} does not take this attribute ({} takes: {}{hint})",
                        b.name,
                        b.name,
                        attr::names(takes)
                    ),
                ));
            }
        }
        let given: u16 = a.given.iter().fold(0, |acc, (bit, _)| acc | bit);
        let missing = b.required & !given;
        if missing != 0 {
            return Err(c.err(
                atok,
                format!("action {} requires: {}", b.name, attr::names(missing)),
            ));
        }
        if b.one_of != 0 {
            let n = (b.one_of & given).count_ones();
            if n != 1 {
                let tok = if n == 0 {
                    atok
                } else {
                    a.given
                        .iter()
                        .rev()
                        .find(|(bit, _)| b.one_of & bit != 0)
                        .map_or(atok, |x| x.1)
                };
                return Err(c.err(
                    tok,
                    format!(
                        "action {} takes exactly one of: {}",
                        b.name,
                        attr::names(b.one_of)
                    ),
                ));
            }
        }
        if let Some((f, tok)) = a.flavors {
            let bad = f.ops & !b.flavours;
            if bad != 0 {
                let names = |bits: u32| {
                    lwt6_dataplane::spec::flavor::NAMES
                        .iter()
                        .filter(|(x, _)| bits & x != 0)
                        .map(|(_, n)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                return Err(c.err(
                    tok,
                    format!(
                        "action {} does not support flavor {} (supported: {})",
                        b.name,
                        names(bad),
                        names(b.flavours)
                    ),
                ));
            }
        }
        for (t, tok) in [a.table, a.vrftable].into_iter().flatten() {
            self.table_refs.push((c.line, tok.to_string(), t));
        }
        if let Some(k) = a.srh.as_ref().and_then(|s| s.0.hmac) {
            self.hmac_refs.push((c.line, "hmac".to_string(), k));
        }
        if let Some((srh, tok)) = &a.srh {
            // The SRH's hdrlen (2 per segment, +1 slot for End.B6, +5 with HMAC) must fit a u8.
            let extra = if srh.hmac.is_some() {
                HMAC_TLV_UNITS
            } else {
                0
            };
            let slot = usize::from(b.action == crate::Seg6LocalAction::EndB6);
            let max = (MAX_SRH_HDRLEN - extra) / 2 - slot;
            if srh.segs.len() > max {
                return Err(c.err(
                    tok,
                    format!("too many segments: {} (at most {max})", srh.segs.len()),
                ));
            }
        }
        Ok(ParsedEncap {
            encap: Encap::Seg6Local(Seg6LocalSpec {
                action: b.action,
                nh4: a.nh4.map(|x| x.0),
                nh6: a.nh6.map(|x| x.0),
                table: a.table.map(|x| x.0),
                vrftable: a.vrftable.map(|x| x.0),
                oif: a.oif.map(str::to_string),
                srh: a.srh.map(|x| x.0),
                count: a.count.is_some(),
                flavors: a.flavors.map(|x| x.0),
            }),
            type_tok,
            mode_tok: Some(atok),
        })
    }

    /// `rpl segs A[,B...]` (§3.3).
    fn rpl<'t>(&mut self, c: &mut Cur<'t>, type_tok: &'t str) -> Result<ParsedEncap<'t>> {
        let table = keywords::rpl();
        let mut args = keywords::RplArgs::default();
        while let Some(kw) = c.peek() {
            let Some(k) = keywords::find(&table, kw) else {
                break;
            };
            c.next();
            (k.handle)(self, c, &mut args, kw)?;
        }
        let segs = args.segs;
        if segs.is_none()
            && let Some(e) = stray(c, "rpl", &keywords::expected(&table))
        {
            return Err(e);
        }
        let Some((segs, t)) = segs else {
            return Err(c.err(type_tok, "missing 'segs A[,B...]'"));
        };
        if segs.len() > MAX_ADDRESSES {
            return Err(c.err(
                "segs",
                format!(
                    "too many segments: {} (at most {MAX_ADDRESSES})",
                    segs.len()
                ),
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
        let obj = Self::verb(c, "ioam", &["namespace", "schema", "domain"])?;
        if obj == "schema" {
            return self.ioam_schema(c);
        }
        if obj == "domain" {
            return self.ioam_domain(c);
        }
        let verb = Self::verb(c, obj, &["add", "set"])?;
        let itok = c.positional(verb, "a namespace id")?;
        let id = num_u32(c, itok, 0, 0xFFFF)? as u16;
        if verb == "add" {
            if self.cfg.ioam_namespaces.iter().any(|n| n.id == id) {
                return Err(c.err(itok, "namespace already exists"));
            }
            let table = keywords::ioam_namespace();
            let mut args = keywords::NamespaceArgs::default();
            while let Some(kw) = c.next() {
                let Some(k) = keywords::find(&table, kw) else {
                    return Err(c.err(
                        kw,
                        format!(
                            "unknown keyword (expected one of: {})",
                            keywords::expected(&table)
                        ),
                    ));
                };
                (k.handle)(self, c, &mut args, kw)?;
            }
            self.cfg.ioam_namespaces.push(IoamNamespace {
                id,
                data: args.data.unwrap_or(u32::MAX),
                wide: args.wide.unwrap_or(u64::MAX),
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

    /// `ioam domain add NAME namespace N[,M...] [ingress DEV[,DEV...]] [egress DEV[,DEV...]] [foreign drop|strip]
    /// [maxsize S] [oversize drop|strip]`.
    fn ioam_domain(&mut self, c: &mut Cur<'_>) -> Result<()> {
        let verb = Self::verb(c, "domain", &["add"])?;
        let ntok = c.positional(verb, "a domain name")?;
        if ntok.is_empty()
            || ntok.len() > 32
            || !ntok
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || "-_.".contains(ch))
        {
            return Err(c.err(
                ntok,
                "domain names are 1-32 letters, digits, '-', '_' or '.'",
            ));
        }
        if self.cfg.ioam_domains.iter().any(|d| d.name == ntok) {
            return Err(c.err(ntok, "domain already exists"));
        }
        let mut namespaces: Option<Vec<u16>> = None;
        let mut ingress: Option<Vec<String>> = None;
        let mut egress: Option<Vec<String>> = None;
        let mut foreign: Option<IoamForeign> = None;
        let mut max_size: Option<u16> = None;
        let mut oversize: Option<IoamForeign> = None;
        while let Some(kw) = c.next() {
            match kw {
                "namespace" | "ns" => {
                    once(c, &namespaces, kw)?;
                    let t = c.value(kw)?;
                    let mut v = Vec::new();
                    for part in t.split(',') {
                        let id = num_u32(c, part, 0, 0xFFFF)? as u16;
                        if !self.cfg.ioam_namespaces.iter().any(|n| n.id == id) {
                            return Err(c.err(part, "namespace does not exist (add it with 'ioam namespace add ID' on an earlier line)"));
                        }
                        if let Some(d) = self
                            .cfg
                            .ioam_domains
                            .iter()
                            .find(|d| d.namespaces.contains(&id))
                        {
                            return Err(c.err(
                                part,
                                format!("namespace already belongs to domain {}", d.name),
                            ));
                        }
                        if v.contains(&id) {
                            return Err(c.err(part, "namespace listed twice"));
                        }
                        v.push(id);
                    }
                    namespaces = Some(v);
                }
                "ingress" | "egress" => {
                    let slot = if kw == "ingress" {
                        &mut ingress
                    } else {
                        &mut egress
                    };
                    if slot.is_some() {
                        return Err(c.err(kw, "given more than once"));
                    }
                    let t = c.value(kw)?;
                    let mut v: Vec<String> = Vec::new();
                    for part in t.split(',') {
                        if !self.links.contains_key(part) {
                            return Err(c.err(
                                part,
                                "no such device (declare it with 'link add' on an earlier line)",
                            ));
                        }
                        if !v.iter().any(|d| d == part) {
                            v.push(part.to_string());
                        }
                    }
                    *slot = Some(v);
                }
                "foreign" | "oversize" => {
                    let slot = if kw == "foreign" {
                        &mut foreign
                    } else {
                        &mut oversize
                    };
                    once(c, slot, kw)?;
                    let t = c.value(kw)?;
                    *slot = Some(match t {
                        "drop" => IoamForeign::Drop,
                        "strip" => IoamForeign::Strip,
                        _ => return Err(c.err(t, "unknown action (expected one of: drop, strip)")),
                    });
                }
                "maxsize" => {
                    once(c, &max_size, kw)?;
                    let t = c.value(kw)?;
                    let v = num_u32(c, t, 4, TRACE_DATA_MAX as u32)?;
                    if v % 4 != 0 {
                        return Err(c.err(t, "trace size must be a multiple of 4"));
                    }
                    max_size = Some(v as u16);
                }
                _ => {
                    return Err(c.err(
                        kw,
                        "unknown keyword (expected one of: namespace, ingress, egress, foreign, maxsize, oversize)",
                    ));
                }
            }
        }
        let Some(namespaces) = namespaces else {
            return Err(c.err(ntok, "missing 'namespace N[,M...]'"));
        };
        self.cfg.ioam_domains.push(IoamDomain {
            name: ntok.to_string(),
            namespaces,
            ingress: ingress.unwrap_or_default(),
            egress: egress.unwrap_or_default(),
            foreign: foreign.unwrap_or_default(),
            max_size,
            oversize: oversize.unwrap_or_default(),
            line: c.line,
        });
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
                data,
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
            // `::` clears it; anything else follows the rule of a route's tunsrc.
            if !a.is_unspecified() {
                keywords::check_tunsrc(c, t, &a)?;
            }
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
                format!(
                    "unknown sysctl key (expected one of: {})",
                    keywords::sysctl_keys()
                ),
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
            let Some(k) = keywords::SYSCTL_GLOBAL.iter().find(|k| k.name == dotted) else {
                return Err(unknown());
            };
            return (k.set)(c, val, &mut self.cfg.sysctl);
        };
        let Some((dev, leaf)) = rest.rsplit_once(sep) else {
            return Err(unknown());
        };
        if dev.is_empty() {
            return Err(unknown());
        }
        // Errors name the device as written in the line (before the '/' -> '.' swap).
        let written = dev;
        let dev = match alt {
            Some((from, to)) => dev.replace(from, &to.to_string()),
            None => dev.to_string(),
        };
        let parse_into = |d: &mut DevSysctls| -> Result<()> {
            let k = keywords::SYSCTL_DEV
                .iter()
                .find(|k| k.name == leaf)
                .ok_or_else(unknown)?;
            (k.set)(c, val, d)
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
                        written,
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
mod tests;
mod trace;
pub use trace::trace_filter;

mod keywords;
mod route_index;
mod route_type;
mod txn;
pub use txn::{RouteDelta, Transaction};
