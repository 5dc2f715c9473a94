//! The parser's tests: every command, every error (line, token, reason), quoting, and the per-line API.

use super::*;
use crate::{RouteMtu, Seg6LocalAction, Sysctls, flavor};
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
    match route3(line).encap.map(|e| *e) {
        Some(Encap::Seg6(s)) => s,
        other => panic!("not seg6: {other:?}"),
    }
}

fn ioam6(line: &str) -> Ioam6Encap {
    match route3(line).encap.map(|e| *e) {
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
    assert!(
        e.reason
            .contains("missing command (expected one of: add, replace, change, del, delete)")
    );
    let e = fail("link add eth0\nroute flush ::/0 dev eth0\n");
    assert_eq!((e.line, e.token.as_str()), (2, "flush"));
    assert!(e.reason.contains("unsupported command"));
    let e = fail("link del eth0\n");
    assert_eq!(e.token, "del");
}

#[test]
fn error_display() {
    let e = fail3("route add 2001:db8::/32 dev eth0 encapp seg6", "encapp");
    assert_eq!(
        e.to_string(),
        "line 3: 'encapp': unknown keyword (expected one of: via, dev, metric, mtu, encap, table)"
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
    assert_eq!(
        r.mtu,
        Some(RouteMtu {
            value: 1400,
            locked: false
        })
    );
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
        Some(RouteMtu {
            value: 1300,
            locked: true
        })
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
    let e = fail3("route add 2001:db8::/32 dev eth0 proto static", "proto");
    assert_eq!(
        e.reason,
        "unknown keyword (expected one of: via, dev, metric, mtu, encap, table)"
    );
    fail3("route add 2001:db8::/32 dev eth0 metric ten", "ten");
    // Route MTU: 1280..=65535 for IPv6, 68..=65535 for IPv4.
    fail3("route add 2001:db8::/32 dev eth0 mtu 1279", "1279");
    fail3("route add 2001:db8::/32 dev eth0 mtu 65536", "65536");
    assert_eq!(
        route3("route add 10.0.0.0/8 dev eth0 mtu 68").mtu,
        Some(RouteMtu {
            value: 68,
            locked: false
        })
    );
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
        r.encap.as_deref(),
        Some(&Encap::Seg6(Seg6Encap {
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
    assert!(e.reason.contains("seg6, seg6local, ioam6, rpl"));
    let e = fail3(
        "route add 2001:db8::/32 dev eth0 encap seg6 mode encap segz fc00::1",
        "segz",
    );
    assert_eq!(
        e.reason,
        "unknown keyword (expected one of: via, dev, metric, mtu, encap, table; seg6: mode, segs, hmac, tunsrc)"
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
        c.routes[0].encap.as_deref().and_then(|e| match e {
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
            traces: vec![IoamTraceSpec {
                trace_type: 0x80_0000,
                namespace: 1,
                size: 12,
            }],
            dex: None,
            hbh_merge: false,
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
    assert_eq!(
        s.traces,
        [IoamTraceSpec {
            trace_type: 0xf0_0002,
            namespace: 65535,
            size: 244
        }]
    );
    let s = ioam6(
        "route add 2001:db8::/32 dev eth0 encap ioam6 mode auto tundst 2001:db8::2 trace prealloc type 2 ns 0 size 4 freq 1000000/1000000",
    );
    assert_eq!(s.mode, IoamMode::Auto);
    assert_eq!(
        (s.freq_k, s.freq_n, s.traces[0].trace_type),
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
            assert_eq!(ioam6(&line).traces[0].trace_type, ty, "bit {k}");
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
    assert_eq!(
        ioam6(
            "route add 2001:db8::/32 dev eth0 encap ioam6 trace prealloc type 8388608 ns 1 size 8"
        )
        .traces[0]
            .trace_type,
        0x80_0000
    );
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
fn ioam6_hbh_merge() {
    let t = |rest: &str| {
        format!(
            "route add 2001:db8::/32 dev eth0 encap ioam6 {rest} trace prealloc type 0x800000 ns 1 size 8"
        )
    };
    assert!(!ioam6(&t("mode inline")).hbh_merge);
    assert!(!ioam6(&t("hbh skip")).hbh_merge);
    assert!(ioam6(&t("hbh merge")).hbh_merge);
    assert!(ioam6(&t("mode inline hbh merge")).hbh_merge);
    let e = fail3(&t("hbh fuse"), "fuse");
    assert_eq!(
        e.reason,
        "unknown hbh action (expected one of: merge, skip)"
    );
    fail3(&t("hbh merge hbh skip"), "hbh");
    let e = fail3(&t("mode encap tundst 2001:db8::2 hbh merge"), "merge");
    assert!(e.reason.contains("hbh merge needs mode inline"));
    // `hbh skip` with encap says what encap does anyway.
    assert!(!ioam6(&t("mode encap tundst 2001:db8::2 hbh skip")).hbh_merge);
}

#[test]
fn ioam6_dex() {
    let t = |rest: &str| format!("route add 2001:db8::/32 dev eth0 encap ioam6 {rest}");
    // Alone (no trace), with every field, in any order.
    let s = ioam6(&t("dex ns 7 type 0xc00000"));
    assert!(s.traces.is_empty());
    assert_eq!(
        s.dex,
        Some(IoamDexSpec {
            trace_type: 0xc0_0000,
            namespace: 7,
            flow_id: None,
            seq: false
        })
    );
    let s = ioam6(&t(
        "mode encap tundst 2001:db8::2 trace prealloc type 0x800000 ns 1 size 8 dex seq flowid 0xabcdef type 0x800000 ns 9",
    ));
    assert_eq!(s.traces.len(), 1);
    assert_eq!(
        s.dex,
        Some(IoamDexSpec {
            trace_type: 0x80_0000,
            namespace: 9,
            flow_id: Some(0xab_cdef),
            seq: true
        })
    );
    // Followed by route keywords.
    assert!(ioam6(&t("dex type 0x800000 ns 1 seq")).dex.unwrap().seq);
    let e = fail3(&t("dex ns 7"), "dex");
    assert_eq!(e.reason, "missing 'type T'");
    let e = fail3(&t("dex type 0x800000"), "dex");
    assert_eq!(e.reason, "missing 'ns N'");
    let e = fail3(&t("dex type 0x800000 flow 3 ns 1"), "flow");
    assert_eq!(
        e.reason,
        "unknown keyword (expected one of: type, ns, flowid, seq)"
    );
    // Complete, then a misspelling: named among the route's and ioam6's keywords.
    let e = fail3(&t("dex type 0x800000 ns 1 flow 3"), "flow");
    assert!(
        e.reason
            .ends_with("ioam6: mode, tunsrc, tundst, freq, trace, dex, hbh)")
    );
    fail3(&t("dex type 0x800000 ns 1 seq seq"), "seq");
    fail3(&t("dex type 0x800000 ns 1 dex type 0x800000 ns 2"), "dex");
    fail3(
        &t("dex type 0x800000 ns 1 flowid 0x100000000"),
        "0x100000000",
    );
    // The trace type follows the rules of a trace's.
    let e = fail3(&t("dex type 0 ns 1"), "0");
    assert!(e.reason.contains("non-zero"));
    let e = fail3(&t("dex type 0x000400 ns 1"), "0x000400");
    assert!(e.reason.contains("bits 12-21"));
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
            .ends_with("; ioam6: mode, tunsrc, tundst, freq, trace, dex, hbh)")
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
            .ends_with("; ioam6: mode, tunsrc, tundst, freq, trace, dex, hbh)")
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
        r.encap.as_deref(),
        Some(&Encap::Rpl(RplEncap {
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
    let e =
        parse_with_stdin("sr hmac set 9 sha256\nsr hmac set 8 sha1\n", Some("piped")).unwrap_err();
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
                prop_assert!(e.line >= 1 && e.line <= super::lines::split(&text).count());
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
        match r.encap.as_deref() {
            Some(Encap::Seg6(s)) => {
                prop_assert_eq!(s.mode.name(), modes[mode]);
                prop_assert_eq!(s.segs.len(), n);
            }
            other => prop_assert!(false, "{:?}", other),
        }
    }
}

// ---- the per-line API ----

const FILE: &str = "link add r0 address 02:00:00:00:01:02
link add r1 mtu 1500
addr add fd00:2::1/64 dev r1
neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1
-6 route add fc00::/16 via fd00:2::2 dev r1
sr hmac set 42 sha256 secret mysecret
-6 route add fd00:99::/64 encap seg6 mode encap segs fc00::a,fc00::b hmac 42 dev r1
sysctl net.ipv6.conf.r0.seg6_enabled=1
";

#[test]
fn builder_line_by_line_is_parse() {
    let mut b = Builder::new();
    for (i, l) in FILE.lines().enumerate() {
        b.line(i + 1, l).unwrap();
    }
    assert_eq!(b.finish().unwrap(), parse(FILE).unwrap());
}

#[test]
fn a_failing_line_changes_nothing() {
    let mut b = Builder::new();
    for (i, l) in FILE.lines().enumerate() {
        b.line(i + 1, l).unwrap();
    }
    let before = b.config().clone();
    // Fails after its HMAC reference was taken (key 7 does not exist: finish would refuse it).
    let e = b
        .line(
            20,
            "route add fd00:98::/64 encap seg6 mode encap segs fc00::c hmac 7 dev r1 bogus",
        )
        .unwrap_err();
    assert_eq!((e.line, e.token.as_str()), (20, "bogus"));
    // Fails on its second pair, after the first one was set.
    let e = b
        .line(
            21,
            "sysctl net.ipv6.conf.all.seg6_enabled=1 net.ipv6.conf.all.nosuchkey=1",
        )
        .unwrap_err();
    assert_eq!(e.line, 21);
    // Fails on an existing route after every other check.
    let e = b
        .line(22, "-6 route add fc00::/16 via fd00:2::2 dev r1")
        .unwrap_err();
    assert!(e.reason.contains("line 5"), "{e}");
    assert_eq!(b.config(), &before);
    assert!(
        b.finish().is_ok(),
        "no dangling HMAC reference from line 20"
    );
}

#[test]
fn the_stdin_secret_survives_a_failed_line() {
    let mut b = Builder::new().with_stdin_secret("s3cret\n");
    // Takes the stdin secret, then fails on a trailing token: the secret stays available.
    assert!(b.line(1, "sr hmac set 5 sha256 extra").is_err());
    b.line(2, "sr hmac set 5 sha256").unwrap();
    let c = b.finish().unwrap();
    assert_eq!(c.hmac_keys[0].secret, b"s3cret");
}

#[test]
fn lines_against_a_running_configuration() {
    let mut b = Builder::from_config(parse(FILE).unwrap());
    b.line(
        1,
        "route add fd00:97::/64 encap rpl segs fd00:2::5,fd00:2::6 dev r1",
    )
    .unwrap();
    let e = b
        .line(1, "route add fd00:97::/64 via fd00:2::2 dev r1")
        .unwrap_err();
    assert!(e.reason.contains("already exists"), "{e}");
    let e = b
        .line(2, "route add fd00:96::/64 via fd00:2::2 dev nope")
        .unwrap_err();
    assert_eq!(e.token, "nope");
    let e = b.line(3, "link add r1").unwrap_err();
    assert_eq!(e.token, "r1");
    let c = b.finish().unwrap();
    assert_eq!(c.routes.len(), 3);
    assert_eq!(c.routes[2].prefix.to_string(), "fd00:97::/64");
}

/// One rule for the outer source, per route and namespace-wide (a multicast or loopback `sr tunsrc` was
/// accepted before).
#[test]
fn sr_tunsrc_follows_the_route_tunsrc_rule() {
    for bad in ["ff02::1", "::1"] {
        let e = fail(&format!("sr tunsrc set {bad}\n"));
        assert_eq!((e.line, e.token.as_str()), (1, bad));
        assert!(e.reason.contains("invalid tunsrc"), "{e}");
    }
    assert_eq!(ok("sr tunsrc set ::\n").sr_tunsrc, None);
    assert_eq!(
        ok("sr tunsrc set fd00::1\n").sr_tunsrc,
        Some("fd00::1".parse().unwrap())
    );
}

/// Hostile configuration text: names with control characters are refused, a byte order mark is accepted.
#[test]
fn control_characters_in_names_and_a_byte_order_mark() {
    for name in ["eth\u{1b}[2J", "a\u{0}b", "x\u{7f}"] {
        let e = fail(&format!("link add {name}\n"));
        assert_eq!(e.token, name);
        assert!(e.reason.contains("control characters"), "{e}");
        assert!(
            !e.to_string().contains('\u{1b}') && !e.to_string().contains('\u{0}'),
            "{e}"
        );
    }
    let c = ok("\u{feff}link add r0\nlink add r1\n");
    assert_eq!(c.links[0].name, "r0");
    // Only at the very start: elsewhere it is an unknown command, named.
    let e = fail("link add r0\n\u{feff}link add r1\n");
    assert_eq!(e.line, 2);
}

// ---- seg6local, tables, route del / replace / change -------------------------------------------

fn local3(line: &str) -> Seg6LocalSpec {
    match route3(line).encap.map(|e| *e) {
        Some(Encap::Seg6Local(s)) => s,
        other => panic!("not seg6local: {other:?}"),
    }
}

#[test]
fn seg6local_every_action_with_its_attributes() {
    let l = local3("-6 route add fc00::e/128 encap seg6local action End count dev eth0");
    assert_eq!(
        (l.action, l.count, l.flavors),
        (Seg6LocalAction::End, true, None)
    );
    let l = local3(
        "-6 route add fc00::10/128 encap seg6local action End.X nh6 fd00::2 oif eth1 dev eth0",
    );
    assert_eq!(
        (l.nh6, l.oif.as_deref()),
        (Some(v6("fd00::2")), Some("eth1"))
    );
    let l =
        local3("-6 route add fc00::d4/128 encap seg6local action End.DX4 nh4 10.0.0.2 dev eth0");
    assert_eq!(l.nh4, Some(Ipv4Addr::new(10, 0, 0, 2)));
    let l = local3("-6 route add fc00::7/128 encap seg6local action End.DT6 table main dev eth0");
    assert_eq!((l.table, l.vrftable), (Some(254), None));
    // iproute2's order (`srh segs LIST hmac K`) and the (`srh hmac K segs LIST`).
    let text = format!(
        "{PRE}sr hmac set 7 sha256 secret s\n-6 route add fc00::b6/128 encap seg6local action End.B6 srh segs fc00::b,fc00::c hmac 7 dev eth0\n-6 route add fc00::b7/128 encap seg6local action End.B6.Encaps srh hmac 7 segs fc00::b dev eth0\n"
    );
    let c = ok(&text);
    let srh = |i: usize| match c.routes[i].encap.as_deref() {
        Some(Encap::Seg6Local(l)) => l.srh.clone().unwrap(),
        _ => panic!(),
    };
    assert_eq!(srh(0).segs, vec![v6("fc00::b"), v6("fc00::c")]);
    assert_eq!((srh(0).hmac, srh(1).hmac), (Some(7), Some(7)));
    let l = local3(
        "-6 route add fc00:1:e0::/48 encap seg6local action End flavors psp,next-csid nflen 24 lblen 40 dev eth0",
    );
    let f = l.flavors.unwrap();
    assert_eq!(
        (f.ops, f.lblen, f.nflen),
        (flavor::PSP | flavor::NEXT_CSID, 40, 24)
    );
    // Defaults, as Linux: block 32, function 16.
    let f = local3("-6 route add fc00::/48 encap seg6local action End.X nh6 fd00::2 flavors next-csid dev eth0")
        .flavors
        .unwrap();
    assert_eq!((f.lblen, f.nflen), (32, 16));
}

#[test]
fn seg6local_bad_input_names_the_token() {
    let r = "-6 route add fc00::9/128 encap seg6local";
    fail3(&format!("{r} dev eth0"), "seg6local");
    fail3(&format!("{r} action End.Y dev eth0"), "End.Y");
    fail3(&format!("{r} action End.BPF dev eth0"), "End.BPF");
    let e = fail3(&format!("{r} action End.X dev eth0"), "End.X");
    assert!(e.reason.contains("requires: nh6"), "{e}");
    let e = fail3(&format!("{r} action End nh6 fd00::1 dev eth0"), "nh6");
    assert!(e.reason.contains("does not take"), "{e}");
    fail3(
        &format!("{r} action End.X nh6 fd00::1 nh6 fd00::2 dev eth0"),
        "nh6",
    );
    fail3(
        &format!("{r} action End.DX4 nh4 fd00::1 dev eth0"),
        "fd00::1",
    );
    fail3(&format!("{r} action End.DT6 dev eth0"), "End.DT6");
    fail3(
        &format!("{r} action End.DT6 table 254 vrftable 254 dev eth0"),
        "vrftable",
    );
    fail3(&format!("{r} action End.DX2 oif eth9 dev eth0"), "eth9");
    fail3(&format!("{r} action End.T table 0 dev eth0"), "0");
    fail3(
        &format!("{r} action End.X nh6 fd00::1 flavors psp,foo dev eth0"),
        "foo",
    );
    fail3(
        &format!("{r} action End.DX6 nh6 :: flavors psp dev eth0"),
        "flavors",
    );
    fail3(
        &format!("{r} action End flavors psp lblen 32 dev eth0"),
        "lblen",
    );
    fail3(
        &format!("{r} action End flavors next-csid lblen 12 dev eth0"),
        "12",
    );
    fail3(
        &format!("{r} action End flavors next-csid lblen 128 dev eth0"),
        "128",
    );
    fail3(
        &format!("{r} action End flavors next-csid lblen 120 nflen 16 dev eth0"),
        "16",
    );
    fail3(&format!("{r} action End.B6 srh hmac 3 dev eth0"), "srh");
    // A table nobody has is an error, named where it is used (checked once the whole file is read).
    let e = fail3(&format!("{r} action End.T table 100 dev eth0"), "100");
    assert!(e.reason.contains("does not exist"), "{e}");
    ok3(
        "-6 route add table 100 fc99::/16 dev eth0 \n-6 route add fc00::11/128 encap seg6local action End.T table 100 dev eth0",
    );
    // seg6local is an IPv6 route's.
    fail3(
        "-4 route add 10.0.0.0/8 encap seg6local action End dev eth0",
        "seg6local",
    );
}

#[test]
fn route_tables_del_replace_change() {
    let c = ok3("-6 route add table 100 2001:db8::/32 dev eth0");
    assert_eq!(c.routes[0].table, 100);
    // The same prefix in two tables is two routes.
    let c = ok(&format!(
        "{PRE}-6 route add 2001:db8::/32 dev eth0\n-6 route add 2001:db8::/32 dev eth1 table 7\n"
    ));
    assert_eq!(c.routes.len(), 2);
    // del: the lowest metric unless a metric is given; table-aware.
    let c = ok(&format!(
        "{PRE}-6 route add 2001:db8::/32 dev eth0\n-6 route add 2001:db8::/32 dev eth0 metric 5\n-6 route add 2001:db8::/32 dev eth0 table 7\n-6 route del 2001:db8::/32\n"
    ));
    assert_eq!(
        c.routes
            .iter()
            .map(|r| (r.table, r.metric))
            .collect::<Vec<_>>(),
        vec![(254, 1024), (7, 1024)]
    );
    let c = ok(&format!(
        "{PRE}-6 route add 2001:db8::/32 dev eth0 table 7\n-6 route delete 2001:db8::/32 table 7\n"
    ));
    assert!(c.routes.is_empty());
    let e = fail(&format!(
        "{PRE}-6 route add 2001:db8::/32 dev eth0\n-6 route del 2001:db8::/32 table 7\n"
    ));
    assert_eq!((e.line, e.token.as_str()), (4, "2001:db8::/32"));
    // replace adds or replaces in place; change only replaces.
    let c = ok(&format!(
        "{PRE}-6 route add 2001:db8::/32 dev eth0\n-6 route replace 2001:db8::/32 dev eth1\n-6 route replace 2001:db9::/32 dev eth1\n"
    ));
    assert_eq!(c.routes.len(), 2);
    assert_eq!(
        (c.routes[0].dev.as_deref(), c.routes[0].line),
        (Some("eth1"), 4)
    );
    let c = ok(&format!(
        "{PRE}-6 route add 2001:db8::/32 dev eth0\n-6 route change 2001:db8::/32 encap seg6local action End dev eth0\n"
    ));
    assert!(matches!(
        c.routes[0].encap.as_deref(),
        Some(Encap::Seg6Local(_))
    ));
    fail3("-6 route change 2001:db8::/32 dev eth0", "2001:db8::/32");
    // A failing line leaves the configuration as it was.
    let mut b = Builder::new();
    for (i, l) in ["link add eth0", "-6 route add 2001:db8::/32 dev eth0"]
        .iter()
        .enumerate()
    {
        b.line(i + 1, l).unwrap();
    }
    let before = b.config().clone();
    assert!(
        b.line(3, "-6 route replace 2001:db8::/32 dev eth0 metric x")
            .is_err()
    );
    assert!(b.line(4, "-6 route del 2001:db9::/32").is_err());
    assert_eq!(b.config(), &before);
}

#[test]
fn ioam_domain_add() {
    let c = ok(
        "link add a\nlink add b\nioam namespace add 1\nioam namespace add 2\n\
                ioam domain add core namespace 1,2 ingress a,b egress b foreign strip\n\
                ioam namespace add 3\nioam domain add edge-2.x ns 3\n",
    );
    assert_eq!(
        c.ioam_domains[0],
        IoamDomain {
            name: "core".into(),
            namespaces: vec![1, 2],
            ingress: vec!["a".into(), "b".into()],
            egress: vec!["b".into()],
            foreign: IoamForeign::Strip,
            max_size: None,
            oversize: IoamForeign::Drop,
            line: 5,
        }
    );
    assert_eq!(c.ioam_domains[1].namespaces, [3]);
    assert_eq!(c.ioam_domains[1].foreign, IoamForeign::Drop);
    assert!(c.ioam_domains[1].ingress.is_empty());
}

#[test]
fn ioam_domain_maxsize() {
    let pre = "link add a\nioam namespace add 1\nioam namespace add 2\n";
    let c = ok(&format!(
        "{pre}ioam domain add d namespace 1 maxsize 0x20 oversize strip\nioam domain add e ns 2 maxsize 244\n"
    ));
    assert_eq!(
        (c.ioam_domains[0].max_size, c.ioam_domains[0].oversize),
        (Some(32), IoamForeign::Strip)
    );
    assert_eq!(
        (c.ioam_domains[1].max_size, c.ioam_domains[1].oversize),
        (Some(244), IoamForeign::Drop)
    );
    let t = |line: &str, token: &str, why: &str| {
        let x = fail(&format!("{pre}{line}\n"));
        assert_eq!((x.line, x.token.as_str()), (4, token), "{line}: {x}");
        assert!(x.reason.contains(why), "{line}: {x}");
    };
    t("ioam domain add d ns 1 maxsize 30", "30", "multiple of 4");
    t("ioam domain add d ns 1 maxsize 0", "0", "");
    t("ioam domain add d ns 1 maxsize 248", "248", "");
    t(
        "ioam domain add d ns 1 maxsize 8 maxsize 8",
        "maxsize",
        "more than once",
    );
    t(
        "ioam domain add d ns 1 oversize keep",
        "keep",
        "expected one of: drop, strip",
    );
    t("ioam domain add d ns 1 maxsize", "maxsize", "missing value");
}

#[test]
fn a_route_inserting_a_trace_larger_than_its_domain_allows_is_refused() {
    let pre = "link add a\nioam namespace add 1\nioam namespace add 2\n";
    let route = |ns: u16, size: u16| {
        format!(
            "-6 route add 2001:db8::/32 dev a encap ioam6 trace prealloc type 0x800000 ns 2 size 8 \
             trace prealloc type 0x800000 ns {ns} size {size}"
        )
    };
    let dom = "ioam domain add d namespace 1 maxsize 16";
    // Domain first, then route (line 5), or route first (line 4): the route's line and its size token.
    for (text, line) in [
        (format!("{pre}{dom}\n{}\n", route(1, 20)), 5),
        (format!("{pre}{}\n{dom}\n", route(1, 20)), 4),
    ] {
        let e = fail(&text);
        assert_eq!((e.line, e.token.as_str()), (line, "20"), "{e}");
        assert!(
            e.reason.contains(
                "a 20-byte trace is larger than domain d allows for namespace 1 (maxsize 16"
            ),
            "{e}"
        );
    }
    // At the limit, another namespace, or a route replaced by a smaller trace before the domain: accepted.
    ok(&format!("{pre}{dom}\n{}\n", route(1, 16)));
    ok(&format!("{pre}{dom}\n{}\n", route(2, 244)));
    ok(&format!(
        "{pre}{}\n{}\n{dom}\n",
        route(1, 20),
        route(1, 12).replace("route add", "route replace")
    ));
    // A line given to a running configuration is checked against its domains.
    let mut b = crate::Builder::from_config(ok(&format!("{pre}{dom}\n")));
    b.line(9, &route(1, 64)).unwrap();
    let e = b.finish().unwrap_err();
    assert_eq!((e.line, e.token.as_str()), (9, "64"));
}

#[test]
fn ioam_domain_errors() {
    let pre = "link add a\nioam namespace add 1\nioam namespace add 2\n";
    let e = |line: &str| fail(&format!("{pre}{line}\n"));
    let t = |line: &str, token: &str, why: &str| {
        let x = e(line);
        assert_eq!((x.line, x.token.as_str()), (4, token), "{line}: {x}");
        assert!(x.reason.contains(why), "{line}: {x}");
    };
    t(
        "ioam domain add d namespace 9",
        "9",
        "namespace does not exist",
    );
    t(
        "ioam domain add d namespace 1 ingress a,zz",
        "zz",
        "no such device",
    );
    t(
        "ioam domain add d namespace 1 foreign keep",
        "keep",
        "expected one of: drop, strip",
    );
    t(
        "ioam domain add d namespace 1 colour red",
        "colour",
        "unknown keyword",
    );
    t("ioam domain add d ingress a", "d", "missing 'namespace");
    t("ioam domain add d namespace 1,1", "1", "listed twice");
    t(
        "ioam domain add d namespace 1 namespace 2",
        "namespace",
        "more than once",
    );
    t(
        "ioam domain add d namespace 1 egress a egress a",
        "egress",
        "more than once",
    );
    t("ioam domain add d/x namespace 1", "d/x", "domain names");
    t("ioam domain del d", "del", "");
    let x = fail(&format!(
        "{pre}ioam domain add d namespace 1\nioam domain add d namespace 2\n"
    ));
    assert_eq!((x.line, x.token.as_str()), (5, "d"));
    let x = fail(&format!(
        "{pre}ioam domain add d namespace 1\nioam domain add e namespace 2,1\n"
    ));
    assert_eq!((x.line, x.token.as_str()), (5, "1"));
    assert!(x.reason.contains("already belongs to domain d"));
}

#[test]
fn ioam6_several_traces() {
    let s = ioam6(
        "route add 2001:db8::/32 dev eth0 encap ioam6 trace prealloc type 0x800000 ns 1 size 12 \
         trace prealloc ns 2 size 8 type 0xc00000 trace prealloc type 0x800000 ns 1 size 4",
    );
    assert_eq!(
        s.traces,
        [
            IoamTraceSpec {
                trace_type: 0x80_0000,
                namespace: 1,
                size: 12
            },
            IoamTraceSpec {
                trace_type: 0xc0_0000,
                namespace: 2,
                size: 8
            },
            IoamTraceSpec {
                trace_type: 0x80_0000,
                namespace: 1,
                size: 4
            }
        ]
    );
    let many = " trace prealloc type 0x800000 ns 1 size 4".repeat(17);
    let e = fail3(
        &format!("route add 2001:db8::/32 dev eth0 encap ioam6{many}"),
        "trace",
    );
    assert!(e.reason.contains("too many traces"), "{e}");
    // Nine traces of 244 bytes need 4 + 9 * 256 = 2308 bytes.
    let big = " trace prealloc type 0x800000 ns 1 size 244".repeat(9);
    let e = fail3(
        &format!("route add 2001:db8::/32 dev eth0 encap ioam6{big}"),
        "ioam6",
    );
    assert!(e.reason.contains("2312-byte Hop-by-Hop header"), "{e}");
    // A second trace is checked as the first is.
    let e = fail3(
        "route add 2001:db8::/32 dev eth0 encap ioam6 trace prealloc type 0x800000 ns 1 size 4 trace prealloc type 0x800000 ns 1 size 6",
        "6",
    );
    assert!(e.reason.contains("multiple of 4"), "{e}");
}
