//! The trace filter of `lwt6 pcap --trace-filter` and `lwt6 ctl trace add N FILTER`, in the style of the other
//! commands: keyword and value pairs, each at most once, all of them to match.
//!
//! ```text
//! FILTER := [dev NAME] [src PREFIX] [dst PREFIX] [proto NAME|0..255]
//!   NAME of proto := hopopts icmp ipv4 tcp udp ipv6 routing fragment esp ah icmpv6 none dstopts ethernet
//! ```
//!
//! `src` and `dst` are the outer addresses (IPv6 or IPv4; `ADDR` alone is a host prefix); `proto` matches the
//! IPv4 protocol or any Next Header of the IPv6 chain, inner packets included.

use super::{Cur, Result, err, once, parse_prefix, parse_u64, tokenize};
use lwt6_dataplane::fib::DevId;
use lwt6_dataplane::trace::{PROTOCOLS, TraceFilter};

/// What the filter's keywords are.
const KEYWORDS: &str = "dev, src, dst, proto";

/// Parses a trace filter; `dev` resolves an interface name (None: no such interface). Errors name the token.
pub fn trace_filter(text: &str, dev: impl Fn(&str) -> Option<DevId>) -> Result<TraceFilter> {
    let toks = tokenize(0, text)?;
    let mut c = Cur {
        line: 0,
        toks,
        pos: 0,
    };
    let mut f = TraceFilter::default();
    let mut dev_seen: Option<()> = None;
    while let Some(kw) = c.next() {
        match kw {
            "dev" => {
                once(&c, &dev_seen, kw)?;
                let name = c.value(kw)?;
                f.dev = Some(dev(name).ok_or_else(|| c.err(name, "no such interface"))?);
                dev_seen = Some(());
            }
            "src" => {
                once(&c, &f.src, kw)?;
                let v = c.value(kw)?;
                f.src = Some(parse_prefix(&c, v)?);
            }
            "dst" => {
                once(&c, &f.dst, kw)?;
                let v = c.value(kw)?;
                f.dst = Some(parse_prefix(&c, v)?);
            }
            "proto" => {
                once(&c, &f.proto, kw)?;
                let v = c.value(kw)?;
                let named = PROTOCOLS.iter().find(|(n, _)| *n == v).map(|(_, p)| *p);
                let p = match named {
                    Some(p) => p,
                    None => match parse_u64(v) {
                        Ok(n) if n <= 255 => n as u8,
                        _ => {
                            let names: Vec<&str> = PROTOCOLS.iter().map(|(n, _)| *n).collect();
                            return Err(c.err(
                                v,
                                format!(
                                    "unknown protocol (expected 0..255 or one of: {})",
                                    names.join(", ")
                                ),
                            ));
                        }
                    },
                };
                f.proto = Some(p);
            }
            other => {
                return Err(err(
                    0,
                    other,
                    format!("unknown trace filter keyword (expected one of: {KEYWORDS})"),
                ));
            }
        }
    }
    f.text = c.toks.join(" ");
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(n: &str) -> Option<DevId> {
        ["r0", "r1"].iter().position(|d| *d == n)
    }

    #[test]
    fn every_keyword_once_in_any_order() {
        let f = trace_filter("proto udp dst fd00:99::/64 dev r1 src 10.1.0.0/16", dev).unwrap();
        assert_eq!(f.dev, Some(1));
        assert_eq!(f.dst, Some("fd00:99::/64".parse().unwrap()));
        assert_eq!(f.src, Some("10.1.0.0/16".parse().unwrap()));
        assert_eq!(f.proto, Some(17));
        assert_eq!(f.text, "proto udp dst fd00:99::/64 dev r1 src 10.1.0.0/16");
        let f = trace_filter("proto 43 dst fc00::1", dev).unwrap();
        assert_eq!(f.proto, Some(43));
        assert_eq!(f.dst, Some("fc00::1/128".parse().unwrap()));
        assert_eq!(trace_filter("", dev).unwrap(), TraceFilter::default());
        assert_eq!(trace_filter("proto 0x3a", dev).unwrap().proto, Some(58));
    }

    #[test]
    fn errors_name_the_token() {
        for (text, token, reason) in [
            (
                "dst fd00::/64 port 53",
                "port",
                "unknown trace filter keyword",
            ),
            ("dev r9", "r9", "no such interface"),
            ("dst fd00::1/64", "fd00::1/64", "host bits set"),
            ("dst fd00::/129", "fd00::/129", "prefix length"),
            ("dst banana", "banana", ""),
            ("proto sctpp", "sctpp", "unknown protocol"),
            ("proto 256", "256", "unknown protocol"),
            ("dst fd00::/64 dst fd01::/64", "dst", "more than once"),
            ("dev r0 dev r1", "dev", "more than once"),
            ("proto", "proto", "missing value"),
        ] {
            let e = trace_filter(text, dev).unwrap_err();
            assert_eq!(e.token, token, "{text}: {e}");
            assert!(e.reason.contains(reason), "{text}: {e}");
        }
    }
}
