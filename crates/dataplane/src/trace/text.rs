//! How a trace reads: the text of its steps and outcomes (`lwt6 trace` prints them).

use super::{IoamNote, Outcome, Step};
use crate::wire::proto;
use std::fmt;

impl fmt::Display for IoamNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ns {} type {:#08x} remaining {} -> {}",
            self.namespace, self.trace_type, self.remaining_before, self.remaining_after
        )?;
        if self.overflow {
            write!(f, " OVERFLOW")?;
        }
        if self.filled {
            write!(f, ", wrote {}", self.data)?;
        } else {
            write!(f, ", nothing written")?;
        }
        Ok(())
    }
}

/// The protocol numbers steps name, as text (`udp`, `routing`, ...; the number otherwise).
pub fn protocol_name(p: u8) -> String {
    PROTOCOLS
        .iter()
        .find(|(_, n)| *n == p)
        .map_or_else(|| p.to_string(), |(s, _)| (*s).to_string())
}

/// The protocol names a trace filter's `proto` takes, with their numbers.
pub const PROTOCOLS: &[(&str, u8)] = &[
    ("hopopts", proto::HOPOPTS),
    ("icmp", 1),
    ("ipv4", proto::IPV4),
    ("tcp", proto::TCP),
    ("udp", proto::UDP),
    ("ipv6", proto::IPV6),
    ("routing", proto::ROUTING),
    ("fragment", proto::FRAGMENT),
    ("esp", proto::ESP),
    ("ah", proto::AH),
    ("icmpv6", proto::ICMPV6),
    ("none", proto::NONE),
    ("dstopts", proto::DSTOPTS),
    ("ethernet", proto::ETHERNET),
];

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Ethernet {
                src,
                dst,
                ethertype,
                to,
            } => write!(
                f,
                "ethernet   {src} > {dst} type {ethertype:#06x} (to {to})"
            ),
            Step::Ipv6 {
                pass,
                src,
                dst,
                hop_limit,
                next_header,
                payload_len,
                local,
            } => {
                write!(
                    f,
                    "ipv6       {src} > {dst} hlim {hop_limit} next {} payload {payload_len}",
                    protocol_name(*next_header)
                )?;
                if *pass > 0 {
                    write!(f, " (pass {pass})")?;
                }
                if *local {
                    write!(f, " (to this node)")?;
                }
                Ok(())
            }
            Step::Ipv4 {
                src,
                dst,
                ttl,
                protocol,
                total_len,
                local,
            } => {
                write!(
                    f,
                    "ipv4       {src} > {dst} ttl {ttl} proto {} len {total_len}",
                    protocol_name(*protocol)
                )?;
                if *local {
                    write!(f, " (to this node)")?;
                }
                Ok(())
            }
            Step::Route {
                purpose,
                table,
                dst,
                found,
                prefix,
                metric,
                via,
                dev,
                encap,
            } => {
                write!(f, "route      {purpose} {dst} in table {table}: ")?;
                if !found {
                    return write!(f, "no route");
                }
                write!(f, "{}", prefix.as_deref().unwrap_or("?"))?;
                if let Some(e) = encap {
                    write!(f, " {e}")?;
                }
                if let Some(v) = via {
                    write!(f, " via {v}")?;
                }
                if let Some(d) = dev {
                    write!(f, " dev {d}")?;
                }
                if let Some(m) = metric {
                    write!(f, " metric {m}")?;
                }
                Ok(())
            }
            Step::HopByHop {
                len,
                ioam_enabled,
                ioam,
            } => {
                write!(
                    f,
                    "hop-by-hop {len} bytes, ioam6_enabled {}",
                    u8::from(*ioam_enabled)
                )?;
                for n in ioam {
                    write!(f, "\n             ioam trace {n}")?;
                }
                Ok(())
            }
            Step::IoamDomain {
                action,
                options,
                removed,
            } => write!(
                f,
                "ioam domain {action}: {options} option(s), {removed} bytes removed"
            ),
            Step::RoutingHeader {
                kind,
                action,
                segments_left,
                dst,
                len_before,
                len_after,
            } => {
                write!(
                    f,
                    "{kind:<10} processed here: {action}, segments left {segments_left}, destination {dst}"
                )?;
                if len_after != len_before {
                    write!(f, ", header {len_before} -> {len_after} bytes")?;
                }
                Ok(())
            }
            Step::Seg6Local { behaviour, action } => {
                write!(f, "seg6local  {behaviour} ({action})")
            }
            Step::SrhAdvance { segments_left, dst } => write!(
                f,
                "srh        segments left {segments_left} -> {}, destination {dst}",
                segments_left.saturating_sub(1)
            ),
            Step::NextCsid { dst } => write!(f, "next-c-sid destination {dst}"),
            Step::SrhPop { removed } => write!(f, "srh        removed (-{removed} bytes)"),
            Step::Decap { inner, removed } => {
                write!(f, "decap      -{removed} bytes, inner {inner} packet")
            }
            Step::Tunnel {
                kind,
                encap,
                added,
                new_dst,
            } => {
                write!(f, "tunnel     {kind} +{added} bytes ({encap})")?;
                if let Some(d) = new_dst {
                    write!(f, ", new destination {d}")?;
                }
                Ok(())
            }
            Step::HopLimit { received } => write!(
                f,
                "hop limit  {received} > 1: forwarded with {}",
                received.saturating_sub(1)
            ),
            Step::Mtu { len, mtu, fits } => write!(
                f,
                "mtu        {len} {} {mtu}{}",
                if *fits { "<=" } else { ">" },
                if *fits { "" } else { ": too big" }
            ),
            Step::Neighbour {
                dev,
                addr,
                state,
                mac,
            } => {
                write!(f, "neighbour  {addr} dev {dev}: ")?;
                match mac {
                    Some(m) => write!(f, "{m} ({state})"),
                    None => write!(f, "none"),
                }
            }
            Step::IoamInsert { mode, ioam } => {
                write!(f, "ioam6      {mode} insertion")?;
                for n in ioam {
                    write!(f, "\n             ioam trace {n}")?;
                }
                Ok(())
            }
            Step::Icmp {
                family,
                error,
                icmp_type,
                code,
                mtu,
                pointer,
                to,
                sent,
            } => {
                write!(
                    f,
                    "icmp       {family} {} (type {icmp_type} code {code}",
                    error.replace('_', " ")
                )?;
                if let Some(m) = mtu {
                    write!(f, " mtu {m}")?;
                }
                if let Some(p) = pointer {
                    write!(f, " pointer {p}")?;
                }
                write!(f, ") to {to}{}", if *sent { "" } else { " (not sent)" })
            }
            Step::Sent { dev, len, .. } => write!(f, "sent       dev {dev}, {len} bytes"),
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Outcome::Sent => "sent",
            Outcome::Consumed => "consumed",
            Outcome::Pending => "pending",
            Outcome::Dropped => "dropped",
        })
    }
}
