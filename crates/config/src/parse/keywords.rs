//! The keyword tables: for each command's arguments, every keyword with its spellings and its handler, in one
//! place. The parser dispatches on them, and the "expected one of" lists of its errors are made from them, so a
//! keyword added here is parsed and listed at once (the way Linux's `seg6_local.c` lists its actions).

use super::{
    Cur, Fam, ParsedEncap, Parser, Result, num, num_u32, num_u64, once, parse_ip, parse_segs,
    parse_v6,
};
use crate::{
    DevSysctls, IoamDexSpec, IoamMode, Seg6LocalFlavors, Seg6LocalSrh, Seg6Mode, Sysctls, flavor,
};
use lwt6_dataplane::tunnel::seg6local::{BEHAVIOURS, Behaviour, UNSUPPORTED, attr, by_name};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// One keyword of an argument list: its spellings (the first is the one error messages list) and its handler,
/// which reads the keyword's values from the cursor into the argument state `S`.
pub(super) struct Keyword<'t, S> {
    pub names: &'static [&'static str],
    pub handle: fn(&mut Parser<'_>, &mut Cur<'t>, &mut S, &'t str) -> Result<()>,
}

/// The keyword `kw` of `table`, if it has it.
pub(super) fn find<'a, 't, S>(table: &'a [Keyword<'t, S>], kw: &str) -> Option<&'a Keyword<'t, S>> {
    table.iter().find(|k| k.names.contains(&kw))
}

/// The first spelling of every keyword, as error messages list them.
pub(super) fn expected<S>(table: &[Keyword<'_, S>]) -> String {
    names(table.iter().map(|k| k.names[0]))
}

/// Every spelling of every keyword.
pub(super) fn spellings<'a, S>(
    table: &'a [Keyword<'_, S>],
) -> impl Iterator<Item = &'static str> + 'a {
    table.iter().flat_map(|k| k.names.iter().copied())
}

fn names<'a>(it: impl Iterator<Item = &'a str>) -> String {
    it.collect::<Vec<_>>().join(", ")
}

// ---- route ----

/// What a `route add` line says, token by token (each with the token errors report).
#[derive(Default)]
pub(super) struct RouteArgs<'t> {
    /// Gateway, explicit family word, address token.
    pub via: Option<(IpAddr, Option<Fam>, &'t str)>,
    pub dev: Option<&'t str>,
    pub metric: Option<u32>,
    pub mtu: Option<(u32, &'t str, bool)>,
    pub encap: Option<ParsedEncap<'t>>,
    pub table: Option<(u32, &'t str)>,
}

/// `route add PREFIX ...` arguments.
pub(super) fn route<'t>() -> [Keyword<'t, RouteArgs<'t>>; 6] {
    [
        Keyword {
            names: &["via"],
            handle: |_, c, a, kw| {
                once(c, &a.via, kw)?;
                let mut t = c.value(kw)?;
                let mut explicit = None;
                if t == "inet" || t == "inet6" {
                    explicit = Some(if t == "inet" { Fam::V4 } else { Fam::V6 });
                    t = c.value(t)?;
                }
                let addr = parse_ip(c, t)?;
                if let Some(e) = explicit
                    && e != Fam::of(&addr)
                {
                    return Err(c.err(t, format!("expected an {} address", e.name())));
                }
                a.via = Some((addr, explicit, t));
                Ok(())
            },
        },
        Keyword {
            names: &["dev", "oif"],
            handle: |p, c, a, kw| {
                once(c, &a.dev, kw)?;
                let t = c.value(kw)?;
                p.link_ref(c, t)?;
                a.dev = Some(t);
                Ok(())
            },
        },
        Keyword {
            names: &["metric", "preference", "priority"],
            handle: |_, c, a, kw| {
                once(c, &a.metric, kw)?;
                let t = c.value(kw)?;
                a.metric = Some(num_u32(c, t, 0, u32::MAX)?);
                Ok(())
            },
        },
        Keyword {
            names: &["mtu"],
            handle: |_, c, a, kw| {
                once(c, &a.mtu, kw)?;
                let mut t = c.value(kw)?;
                let locked = t == "lock";
                if locked {
                    t = c.value(t)?;
                }
                a.mtu = Some((num_u32(c, t, 0, u32::MAX)?, t, locked));
                Ok(())
            },
        },
        Keyword {
            names: &["encap"],
            handle: |p, c, a, kw| {
                once(c, &a.encap, kw)?;
                a.encap = Some(p.encap(c)?);
                Ok(())
            },
        },
        Keyword {
            names: &["table"],
            handle: |_, c, a, kw| {
                once(c, &a.table, kw)?;
                let t = c.value(kw)?;
                a.table = Some((parse_table(c, t)?, t));
                Ok(())
            },
        },
    ]
}

/// A routing table: `main`, `local`, `default` or a number (1..=2^32-1), as iproute2 names them.
pub(super) fn parse_table(c: &Cur<'_>, t: &str) -> Result<u32> {
    match t {
        "main" => Ok(254),
        "local" => Ok(255),
        "default" => Ok(253),
        _ => num_u32(c, t, 1, u32::MAX)
            .map_err(|e| c.err(t, format!("{} (or main, local, default)", e.reason))),
    }
}

// ---- encap seg6local ----

/// What `encap seg6local ...` says, each attribute with the token that gave it.
#[derive(Default)]
pub(super) struct Seg6LocalArgs<'t> {
    pub action: Option<(&'static Behaviour, &'t str)>,
    pub nh4: Option<(Ipv4Addr, &'t str)>,
    pub nh6: Option<(Ipv6Addr, &'t str)>,
    pub table: Option<(u32, &'t str)>,
    pub vrftable: Option<(u32, &'t str)>,
    pub oif: Option<&'t str>,
    pub srh: Option<(Seg6LocalSrh, &'t str)>,
    pub count: Option<&'t str>,
    pub flavors: Option<(Seg6LocalFlavors, &'t str)>,
    /// Attribute bits given, with their keyword tokens, in line order.
    pub given: Vec<(u16, &'t str)>,
}

/// The action names, as error messages list them (the behaviour table's order).
pub(super) fn seg6local_actions() -> String {
    names(BEHAVIOURS.iter().map(|b| b.name))
}

/// Reads the value of a seg6local attribute keyword `kw` (given at most once): parses it with `parse`, keeps it
/// with its token in `slot`, and records the attribute bit `bit` with the keyword in `given`.
fn attr_value<'t, T>(
    c: &mut Cur<'t>,
    slot: &mut Option<(T, &'t str)>,
    given: &mut Vec<(u16, &'t str)>,
    kw: &'t str,
    bit: u16,
    parse: impl FnOnce(&Cur<'t>, &'t str) -> Result<T>,
) -> Result<()> {
    once(c, slot, kw)?;
    let t = c.value(kw)?;
    *slot = Some((parse(c, t)?, t));
    given.push((bit, kw));
    Ok(())
}

/// `encap seg6local` arguments (iproute2's, `bpf` aside).
pub(super) fn seg6local<'t>() -> [Keyword<'t, Seg6LocalArgs<'t>>; 9] {
    [
        Keyword {
            names: &["action"],
            handle: |_, c, a, kw| {
                once(c, &a.action, kw)?;
                let t = c.value(kw)?;
                if let Some((_, why)) = UNSUPPORTED.iter().find(|(n, _)| *n == t) {
                    return Err(c.err(t, format!("action {why}")));
                }
                let Some(b) = by_name(t) else {
                    return Err(c.err(
                        t,
                        format!("unknown action (expected one of: {})", seg6local_actions()),
                    ));
                };
                a.action = Some((b, t));
                Ok(())
            },
        },
        Keyword {
            names: &["nh4"],
            handle: |_, c, a, kw| {
                attr_value(
                    c,
                    &mut a.nh4,
                    &mut a.given,
                    kw,
                    attr::NH4,
                    |c, t| match parse_ip(c, t)? {
                        IpAddr::V4(v) => Ok(v),
                        IpAddr::V6(_) => Err(c.err(t, "expected an IPv4 address, got IPv6")),
                    },
                )
            },
        },
        Keyword {
            names: &["nh6"],
            handle: |_, c, a, kw| attr_value(c, &mut a.nh6, &mut a.given, kw, attr::NH6, parse_v6),
        },
        Keyword {
            names: &["table"],
            handle: |_, c, a, kw| {
                attr_value(c, &mut a.table, &mut a.given, kw, attr::TABLE, parse_table)
            },
        },
        Keyword {
            names: &["vrftable"],
            handle: |_, c, a, kw| {
                attr_value(
                    c,
                    &mut a.vrftable,
                    &mut a.given,
                    kw,
                    attr::VRFTABLE,
                    parse_table,
                )
            },
        },
        Keyword {
            names: &["oif"],
            handle: |p, c, a, kw| {
                once(c, &a.oif, kw)?;
                let t = c.value(kw)?;
                p.link_ref(c, t)?;
                a.oif = Some(t);
                a.given.push((attr::OIF, kw));
                Ok(())
            },
        },
        Keyword {
            names: &["srh"],
            handle: |_, c, a, kw| {
                once(c, &a.srh, kw)?;
                // `srh segs LIST [hmac K]` (iproute2's order) or `srh hmac K segs LIST`.
                let mut segs = None;
                let mut hmac = None;
                while let Some(w) = c.peek() {
                    match w {
                        "segs" => {
                            c.next();
                            once(c, &segs, w)?;
                            let t = c.value(w)?;
                            segs = Some(parse_segs(c, t)?);
                        }
                        "hmac" => {
                            c.next();
                            once(c, &hmac, w)?;
                            let t = c.value(w)?;
                            let id = num_u32(c, t, 0, u32::MAX)?;
                            if id == 0 {
                                return Err(c.err(t, "HMAC key id must be non-zero"));
                            }
                            hmac = Some(id);
                        }
                        _ => break,
                    }
                }
                let Some(segs) = segs else {
                    return Err(c.err(
                        kw,
                        "missing 'segs A[,B...]' (srh [hmac KEYID] segs A[,B...])",
                    ));
                };
                a.srh = Some((Seg6LocalSrh { segs, hmac }, kw));
                a.given.push((attr::SRH, kw));
                Ok(())
            },
        },
        Keyword {
            names: &["count"],
            handle: |_, c, a, kw| {
                once(c, &a.count, kw)?;
                a.count = Some(kw);
                a.given.push((attr::COUNT, kw));
                Ok(())
            },
        },
        Keyword {
            names: &["flavors"],
            handle: |_, c, a, kw| {
                once(c, &a.flavors, kw)?;
                let t = c.value(kw)?;
                let mut ops = 0;
                for name in t.split(',') {
                    let Some((bit, _)) = flavor::NAMES.iter().find(|(_, n)| *n == name) else {
                        return Err(c.err(
                            name,
                            "unknown flavor (expected a comma separated list of: psp, usp, usd, next-csid)",
                        ));
                    };
                    if ops & bit != 0 {
                        return Err(c.err(name, "flavor given more than once"));
                    }
                    ops |= bit;
                }
                let (mut lblen, mut nflen) = (None, None);
                while let Some(w) = c.peek() {
                    let slot = match w {
                        "lblen" => &mut lblen,
                        "nflen" => &mut nflen,
                        _ => break,
                    };
                    c.next();
                    if slot.is_some() {
                        return Err(c.err(w, "given more than once"));
                    }
                    if ops & flavor::NEXT_CSID == 0 {
                        return Err(c.err(w, "only with the next-csid flavor"));
                    }
                    let v = c.value(w)?;
                    let n = num_u32(c, v, 1, 128)?;
                    if n % 8 != 0 {
                        return Err(c.err(v, "must be a multiple of 8 (bits)"));
                    }
                    *slot = Some((n as u8, v));
                }
                let lb = lblen.map_or(flavor::DEFAULT_LBLEN, |x| x.0);
                let nf = nflen.map_or(flavor::DEFAULT_NFLEN, |x| x.0);
                if lb > 120 {
                    return Err(c.err(
                        lblen.map_or(t, |x| x.1),
                        "locator block too long (at most 120 bits)",
                    ));
                }
                if u32::from(lb) + u32::from(nf) > 128 {
                    return Err(c.err(
                        nflen.or(lblen).map_or(t, |x| x.1),
                        "locator block and node function longer than 128 bits together",
                    ));
                }
                a.flavors = Some((
                    Seg6LocalFlavors {
                        ops,
                        lblen: lb,
                        nflen: nf,
                    },
                    kw,
                ));
                a.given.push((attr::FLAVORS, kw));
                Ok(())
            },
        },
    ]
}

// ---- encap seg6 ----

/// What `encap seg6 ...` says.
#[derive(Default)]
pub(super) struct Seg6Args<'t> {
    pub mode: Option<(Seg6Mode, &'t str)>,
    pub segs: Option<Vec<Ipv6Addr>>,
    pub hmac: Option<(u32, &'t str)>,
    pub tunsrc: Option<(Ipv6Addr, &'t str)>,
}

/// The seg6 modes by their iproute2 names.
pub(super) const SEG6_MODES: [Seg6Mode; 5] = [
    Seg6Mode::Inline,
    Seg6Mode::Encap,
    Seg6Mode::L2Encap,
    Seg6Mode::EncapRed,
    Seg6Mode::L2EncapRed,
];

/// The seg6 mode names, as error messages list them.
pub(super) fn seg6_modes() -> String {
    names(SEG6_MODES.iter().map(|m| m.name()))
}

/// `encap seg6` arguments.
pub(super) fn seg6<'t>() -> [Keyword<'t, Seg6Args<'t>>; 4] {
    [
        Keyword {
            names: &["mode"],
            handle: |_, c, a, kw| {
                once(c, &a.mode, kw)?;
                let t = c.value(kw)?;
                let Some(m) = SEG6_MODES.iter().find(|m| m.name() == t) else {
                    return Err(c.err(
                        t,
                        format!("unknown seg6 mode (expected one of: {})", seg6_modes()),
                    ));
                };
                a.mode = Some((*m, t));
                Ok(())
            },
        },
        Keyword {
            names: &["segs"],
            handle: |_, c, a, kw| {
                once(c, &a.segs, kw)?;
                let t = c.value(kw)?;
                a.segs = Some(parse_segs(c, t)?);
                Ok(())
            },
        },
        Keyword {
            names: &["hmac"],
            handle: |_, c, a, kw| {
                once(c, &a.hmac, kw)?;
                let t = c.value(kw)?;
                let id = num_u32(c, t, 0, u32::MAX)?;
                if id == 0 {
                    return Err(c.err(t, "HMAC key id must be non-zero"));
                }
                a.hmac = Some((id, t));
                Ok(())
            },
        },
        Keyword {
            names: &["tunsrc"],
            handle: |_, c, a, kw| {
                once(c, &a.tunsrc, kw)?;
                let t = c.value(kw)?;
                let addr = parse_v6(c, t)?;
                check_tunsrc(c, t, &addr)?;
                a.tunsrc = Some((addr, t));
                Ok(())
            },
        },
    ]
}

/// The one rule for a seg6 outer source, per route (`tunsrc`) and namespace-wide (`sr tunsrc set`): not
/// unspecified, multicast or loopback.
pub(super) fn check_tunsrc(c: &Cur<'_>, tok: &str, a: &Ipv6Addr) -> Result<()> {
    if a.is_unspecified() || a.is_multicast() || a.is_loopback() {
        return Err(c.err(
            tok,
            "invalid tunsrc address (unspecified, multicast or loopback)",
        ));
    }
    Ok(())
}

// ---- encap ioam6 ----

/// What `encap ioam6 ...` says.
#[derive(Default)]
pub(super) struct Ioam6Args<'t> {
    pub mode: Option<(IoamMode, &'t str)>,
    pub tunsrc: Option<(Ipv6Addr, &'t str)>,
    pub tundst: Option<(Ipv6Addr, &'t str)>,
    pub freq: Option<(u32, u32)>,
    /// The `trace prealloc ...` clauses, each with its `trace` token (several: an lwt6 extension).
    pub traces: Vec<(TraceArg<'t>, &'t str)>,
    /// `dex type T ns N [flowid F] [seq]` (an lwt6 extension), with its `dex` token.
    pub dex: Option<(IoamDexSpec, &'t str)>,
    /// `hbh merge|skip`: whether inline mode merges into an existing Hop-by-Hop header (lwt6 extension).
    pub hbh: Option<(bool, &'t str)>,
}

/// A `trace prealloc type T ns N size S` clause: type, namespace, size, and the size's token (errors about the
/// size name it).
pub(super) type TraceArg<'t> = (u32, u16, u16, &'t str);

/// The ioam6 modes by name.
pub(super) const IOAM6_MODES: [(&str, IoamMode); 3] = [
    ("inline", IoamMode::Inline),
    ("encap", IoamMode::Encap),
    ("auto", IoamMode::Auto),
];

/// `encap ioam6` arguments.
pub(super) fn ioam6<'t>() -> [Keyword<'t, Ioam6Args<'t>>; 7] {
    fn address<'t>(c: &mut Cur<'t>, kw: &str) -> Result<(Ipv6Addr, &'t str)> {
        let t = c.value(kw)?;
        let a = parse_v6(c, t)?;
        if a.is_unspecified() {
            return Err(c.err(t, format!("invalid {kw} address (:: is not allowed)")));
        }
        Ok((a, t))
    }
    [
        Keyword {
            names: &["mode"],
            handle: |_, c, a, kw| {
                once(c, &a.mode, kw)?;
                let t = c.value(kw)?;
                let Some((_, m)) = IOAM6_MODES.iter().find(|(n, _)| *n == t) else {
                    let all = names(IOAM6_MODES.iter().map(|(n, _)| *n));
                    return Err(c.err(t, format!("unknown ioam6 mode (expected one of: {all})")));
                };
                a.mode = Some((*m, t));
                Ok(())
            },
        },
        Keyword {
            names: &["tunsrc"],
            handle: |_, c, a, kw| {
                once(c, &a.tunsrc, kw)?;
                a.tunsrc = Some(address(c, kw)?);
                Ok(())
            },
        },
        Keyword {
            names: &["tundst"],
            handle: |_, c, a, kw| {
                once(c, &a.tundst, kw)?;
                a.tundst = Some(address(c, kw)?);
                Ok(())
            },
        },
        Keyword {
            names: &["freq"],
            handle: |_, c, a, kw| {
                once(c, &a.freq, kw)?;
                let t = c.value(kw)?;
                let Some((k, n)) = t.split_once('/') else {
                    return Err(c.err(t, "invalid frequency (expected K/N, e.g. 1/10)"));
                };
                let k = num_u32(c, k, 1, super::MAX_FREQ as u32)?;
                let n = num_u32(c, n, 1, super::MAX_FREQ as u32)?;
                if k > n {
                    return Err(c.err(t, "invalid frequency (K must not exceed N)"));
                }
                a.freq = Some((k, n));
                Ok(())
            },
        },
        Keyword {
            names: &["trace"],
            handle: |_, c, a, kw| {
                let t = c.value(kw)?;
                if t != "prealloc" {
                    return Err(c.err(t, "unsupported trace kind (expected one of: prealloc)"));
                }
                // Several traces in one route: an lwt6 extension (docs/ioam.md).
                let tr = Parser::ioam6_trace(c, t)?;
                a.traces.push((tr, kw));
                Ok(())
            },
        },
        Keyword {
            names: &["dex"],
            handle: |_, c, a, kw| {
                // A Direct Export option (RFC 9326): an lwt6 extension (docs/ioam.md).
                once(c, &a.dex, kw)?;
                a.dex = Some((Parser::ioam6_dex(c, kw)?, kw));
                Ok(())
            },
        },
        Keyword {
            names: &["hbh"],
            handle: |_, c, a, kw| {
                // What inline mode does with a packet that already has a Hop-by-Hop header: an lwt6 extension
                // (docs/ioam.md); Linux skips the insertion.
                once(c, &a.hbh, kw)?;
                let t = c.value(kw)?;
                let merge = match t {
                    "merge" => true,
                    "skip" => false,
                    _ => return Err(c.err(t, "unknown hbh action (expected one of: merge, skip)")),
                };
                a.hbh = Some((merge, t));
                Ok(())
            },
        },
    ]
}

// ---- encap rpl ----

/// What `encap rpl ...` says.
#[derive(Default)]
pub(super) struct RplArgs<'t> {
    pub segs: Option<(Vec<Ipv6Addr>, &'t str)>,
}

/// `encap rpl` arguments.
pub(super) fn rpl<'t>() -> [Keyword<'t, RplArgs<'t>>; 1] {
    [Keyword {
        names: &["segs"],
        handle: |_, c, a, kw| {
            once(c, &a.segs, kw)?;
            let t = c.value(kw)?;
            a.segs = Some((parse_segs(c, t)?, t));
            Ok(())
        },
    }]
}

// ---- ioam namespace ----

/// What `ioam namespace add ID ...` says.
#[derive(Default)]
pub(super) struct NamespaceArgs {
    pub data: Option<u32>,
    pub wide: Option<u64>,
}

/// `ioam namespace add ID` arguments.
pub(super) fn ioam_namespace<'t>() -> [Keyword<'t, NamespaceArgs>; 2] {
    [
        Keyword {
            names: &["data"],
            handle: |_, c, a, kw| {
                once(c, &a.data, kw)?;
                let t = c.value(kw)?;
                a.data = Some(num_u32(c, t, 0, u32::MAX)?);
                Ok(())
            },
        },
        Keyword {
            names: &["wide"],
            handle: |_, c, a, kw| {
                once(c, &a.wide, kw)?;
                let t = c.value(kw)?;
                a.wide = Some(num_u64(c, t, 0, u64::MAX)?);
                Ok(())
            },
        },
    ]
}

// ---- sysctl ----

/// A sysctl key: its name (the last part, or the whole name for namespace-wide keys) and how it sets the value.
pub(super) struct Sysctl<T> {
    pub name: &'static str,
    pub set: fn(&Cur<'_>, &str, &mut T) -> Result<()>,
}

/// `net.ipv6.*` keys.
pub(super) const SYSCTL_GLOBAL: [Sysctl<Sysctls>; 3] = [
    Sysctl {
        name: "net.ipv6.ioam6_id",
        set: |c, v, s| {
            s.ioam6_id = num_u32(c, v, 0, 0xFF_FFFF)?;
            Ok(())
        },
    },
    Sysctl {
        name: "net.ipv6.ioam6_id_wide",
        set: |c, v, s| {
            s.ioam6_id_wide = num_u64(c, v, 0, 0x00FF_FFFF_FFFF_FFFF)?;
            Ok(())
        },
    },
    Sysctl {
        name: "net.ipv6.seg6_flowlabel",
        set: |c, v, s| {
            s.seg6_flowlabel = num(c, v, -1, 1)? as i32;
            Ok(())
        },
    },
];

/// `net.ipv6.conf.{all,DEV}.*` keys.
pub(super) const SYSCTL_DEV: [Sysctl<DevSysctls>; 8] = [
    Sysctl {
        name: "ioam6_enabled",
        set: |c, v, d| {
            d.ioam6_enabled = num(c, v, 0, 1)? == 1;
            Ok(())
        },
    },
    Sysctl {
        name: "ioam6_id",
        set: |c, v, d| {
            d.ioam6_id = num(c, v, 0, 0xFFFF)? as u16;
            Ok(())
        },
    },
    Sysctl {
        name: "ioam6_id_wide",
        set: |c, v, d| {
            d.ioam6_id_wide = num_u32(c, v, 0, u32::MAX)?;
            Ok(())
        },
    },
    Sysctl {
        name: "seg6_enabled",
        set: |c, v, d| {
            d.seg6_enabled = num(c, v, 0, 1)? == 1;
            Ok(())
        },
    },
    Sysctl {
        name: "seg6_require_hmac",
        set: |c, v, d| {
            d.seg6_require_hmac = num(c, v, -1, 1)? as i8;
            Ok(())
        },
    },
    Sysctl {
        name: "rpl_seg_enabled",
        set: |c, v, d| {
            d.rpl_seg_enabled = num(c, v, 0, 1)? == 1;
            Ok(())
        },
    },
    Sysctl {
        name: "hop_limit",
        set: |c, v, d| {
            d.hop_limit = num(c, v, 1, 255)? as u8;
            Ok(())
        },
    },
    Sysctl {
        name: "forwarding",
        set: |c, v, d| {
            d.forwarding = num(c, v, 0, 1)? == 1;
            Ok(())
        },
    },
];

/// Every sysctl key, as error messages list them.
pub(super) fn sysctl_keys() -> String {
    format!(
        "{}, net.ipv6.conf.{{all,DEV}}.{{{}}}",
        names(SYSCTL_GLOBAL.iter().map(|k| k.name)),
        names(SYSCTL_DEV.iter().map(|k| k.name))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lists errors show come from the tables: every keyword, once, in table order.
    #[test]
    fn lists_come_from_the_tables() {
        assert_eq!(expected(&route()), "via, dev, metric, mtu, encap, table");
        assert_eq!(
            expected(&seg6local()),
            "action, nh4, nh6, table, vrftable, oif, srh, count, flavors"
        );
        assert_eq!(expected(&seg6()), "mode, segs, hmac, tunsrc");
        assert_eq!(
            expected(&ioam6()),
            "mode, tunsrc, tundst, freq, trace, dex, hbh"
        );
        assert_eq!(expected(&rpl()), "segs");
        assert_eq!(expected(&ioam_namespace()), "data, wide");
        assert_eq!(
            seg6_modes(),
            "inline, encap, l2encap, encap.red, l2encap.red"
        );
        assert!(
            sysctl_keys()
                .starts_with("net.ipv6.ioam6_id, net.ipv6.ioam6_id_wide, net.ipv6.seg6_flowlabel")
        );
        assert!(sysctl_keys().ends_with("hop_limit, forwarding}"));
        let all: Vec<&str> = spellings(&route()).collect();
        assert_eq!(all.len(), 9);
        assert!(find(&route(), "oif").is_some() && find(&route(), "bogus").is_none());
    }
}
