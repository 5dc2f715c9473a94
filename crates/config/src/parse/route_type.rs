//! The route type word of `route add [TYPE] PREFIX` (iproute2's `rtm_type`): `unicast` (the default),
//! `blackhole`, `unreachable` and `prohibit`, the last three routes that drop what they match. What the kernel
//! accepts with them: an IPv4 reject route takes no gateway or device ("Gateway, device and multipath can not be
//! specified for this route type"); an IPv6 one accepts both and keeps neither (`ip route show` prints `dev lo`).

use super::{Cur, ParsedEncap, Result};
use lwt6_dataplane::fib::RejectKind;

/// Types the kernel has that lwt6 does not route with.
const UNSUPPORTED: &[&str] = &["local", "broadcast", "anycast", "multicast", "throw", "nat"];

/// `tok` as a route type: `Some(None)` for `unicast`, `Some(Some(kind))` for a reject type, `None` when it is no
/// type word (the prefix itself); an error for a type lwt6 does not have.
pub(super) fn parse(c: &Cur<'_>, tok: &str) -> Result<Option<Option<RejectKind>>> {
    Ok(Some(match tok {
        "unicast" => None,
        "blackhole" => Some(RejectKind::Blackhole),
        "unreachable" => Some(RejectKind::Unreachable),
        "prohibit" => Some(RejectKind::Prohibit),
        t if UNSUPPORTED.contains(&t) => {
            return Err(c.err(
                t,
                "route type not supported (lwt6 has unicast, blackhole, unreachable and prohibit routes)",
            ));
        }
        _ => return Ok(None),
    }))
}

/// Refuses what the kernel refuses with type `type_tok` (IPv4: a gateway or device), and an encap, which lwt6
/// does not take on a route that drops (the kernel accepts one on IPv6 and ignores it).
pub(super) fn check(
    c: &Cur<'_>,
    v4: bool,
    type_tok: &str,
    via_tok: Option<&str>,
    dev_tok: Option<&str>,
    encap: Option<&ParsedEncap<'_>>,
) -> Result<()> {
    if type_tok == "unicast" {
        return Ok(());
    }
    if v4 && let Some(t) = via_tok.or(dev_tok) {
        return Err(c.err(
            t,
            format!("an IPv4 {type_tok} route takes no gateway or device (as the kernel refuses)"),
        ));
    }
    if let Some(e) = encap {
        return Err(c.err(
            e.type_tok,
            format!("a {type_tok} route takes no encap (it drops what it matches)"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! Expectations from `ip route add` in a network namespace (Linux 6.18, iproute2): what it keeps, what it
    //! refuses.
    use crate::parse::parse;
    use crate::{Config, ConfigError, MAIN_TABLE};
    use ipnet::IpNet;
    use lwt6_dataplane::fib::RejectKind;

    const PRE: &str = "link add eth0\naddr add fd00:2::1/64 dev eth0\n";

    fn ok(lines: &str) -> Config {
        parse(&format!("{PRE}{lines}\n")).unwrap_or_else(|e| panic!("{lines:?}: {e}"))
    }

    /// The error of `line` (on line 3), asserting the token it names.
    fn fail(line: &str, token: &str) -> ConfigError {
        let e = parse(&format!("{PRE}{line}\n")).expect_err(line);
        assert_eq!((e.line, e.token.as_str()), (3, token), "{line:?} -> {e}");
        e
    }

    fn net(s: &str) -> IpNet {
        s.parse().unwrap()
    }

    #[test]
    fn each_type_with_metric_table_and_default() {
        let c = ok("route add blackhole fd00:a0::/64\n\
                    route add unreachable fd00:a1::/64 metric 5\n\
                    route add prohibit fd00:a2::/64 table 100\n\
                    -4 route add unreachable 10.61.0.0/16 metric 7\n\
                    route add blackhole default table 200\n\
                    -6 route add prohibit default\n\
                    route add unicast fd00:b::/64 dev eth0");
        let got: Vec<_> = c
            .routes
            .iter()
            .map(|r| (r.prefix, r.reject, r.metric, r.table))
            .collect();
        assert_eq!(
            got,
            [
                (
                    net("fd00:a0::/64"),
                    Some(RejectKind::Blackhole),
                    1024,
                    MAIN_TABLE
                ),
                (
                    net("fd00:a1::/64"),
                    Some(RejectKind::Unreachable),
                    5,
                    MAIN_TABLE
                ),
                (net("fd00:a2::/64"), Some(RejectKind::Prohibit), 1024, 100),
                (
                    net("10.61.0.0/16"),
                    Some(RejectKind::Unreachable),
                    7,
                    MAIN_TABLE
                ),
                // `default` without a family is IPv4 (as iproute2 takes it), IPv4 metric 0.
                (net("0.0.0.0/0"), Some(RejectKind::Blackhole), 0, 200),
                (net("::/0"), Some(RejectKind::Prohibit), 1024, MAIN_TABLE),
                (net("fd00:b::/64"), None, 1024, MAIN_TABLE),
            ]
        );
    }

    #[test]
    fn ipv6_keeps_neither_dev_nor_via_but_keeps_mtu() {
        let c = ok("route add blackhole fd00:a3::/64 via fd00:2::2 dev eth0 mtu 1400");
        let r = &c.routes[0];
        assert_eq!((r.via, r.dev.as_deref()), (None, None));
        assert_eq!(r.mtu.map(|m| m.value), Some(1400));
    }

    #[test]
    fn ipv4_with_dev_or_via_refused_naming_it() {
        fail("route add blackhole 10.1.0.0/16 dev eth0", "eth0");
        fail("route add prohibit 10.1.0.0/16 via 10.0.0.1", "10.0.0.1");
        fail(
            "route add unreachable 10.1.0.0/16 via inet6 fd00:2::2",
            "fd00:2::2",
        );
    }

    #[test]
    fn bad_lines_refused_naming_the_token() {
        fail("route add throw fd00::/64", "throw");
        fail("route add local fd00::/64 dev eth0", "local");
        fail("route add blackhole", "blackhole");
        fail("route add blackhole fd00::/64 bogus", "bogus");
        fail("route add blackhole fd00::1/64", "fd00::1/64");
        fail(
            "route add unreachable fd00::/64 encap seg6 mode encap segs fc00::1",
            "seg6",
        );
        fail("-4 route add prohibit fd00::/64", "fd00::/64");
    }

    #[test]
    fn replace_and_delete() {
        // Same (table, prefix, metric): replace turns the blackhole into an unreachable route.
        let c = ok("route add blackhole fd00::/64\nroute replace unreachable fd00::/64");
        assert_eq!(c.routes.len(), 1);
        assert_eq!(c.routes[0].reject, Some(RejectKind::Unreachable));
        // and a unicast route of the same key into a reject one, and back.
        let c = ok("route add fd00::/64 dev eth0\nroute replace prohibit fd00::/64");
        assert_eq!(
            (c.routes[0].reject, c.routes[0].dev.as_deref()),
            (Some(RejectKind::Prohibit), None)
        );
        // add over an existing one of the same key: refused.
        let e = parse(&format!(
            "{PRE}route add blackhole fd00::/64\nroute add unreachable fd00::/64\n"
        ))
        .expect_err("exists");
        assert_eq!((e.line, e.token.as_str()), (4, "fd00::/64"), "{e}");
        // IPv6 delete ignores the type; IPv4 delete matches it.
        let c = ok("route add prohibit fd00::/64\nroute del blackhole fd00::/64");
        assert!(c.routes.is_empty());
        let c = ok("route add prohibit 10.1.0.0/16\nroute del 10.1.0.0/16");
        assert!(c.routes.is_empty());
        let e = parse(&format!(
            "{PRE}route add prohibit 10.1.0.0/16\nroute del blackhole 10.1.0.0/16\n"
        ))
        .expect_err("type mismatch");
        assert_eq!((e.line, e.token.as_str()), (4, "10.1.0.0/16"), "{e}");
        // An IPv6 reject route has no device: a delete naming one finds nothing.
        let e = parse(&format!(
            "{PRE}route add prohibit fd00::/64\nroute del fd00::/64 dev eth0\n"
        ))
        .expect_err("dev mismatch");
        assert_eq!(e.line, 4, "{e}");
    }
}
