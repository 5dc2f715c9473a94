//! The control socket's inspection verbs on a running router: `route get`, `show sr|ioam|interfaces`, `clear
//! stats`, and the workers' counters as `show` prints them (since the last `clear stats`). [`crate::control`]
//! dispatches to them.

use super::clear::Baseline;
use crate::control::{Control, gather};
use crate::engine::WorkerReport;
use lwt6_dataplane::neigh::State;
use lwt6_dataplane::spec::shown_token;

/// The `show` subjects, as the error messages list them.
pub const SHOW_WHAT: &str = "routes, stats, neigh, trace, capture, sr, ioam, interfaces";

/// The words after `route get` when the request is `[-6|-4] route get ...`.
pub fn route_get_words<'a, 'b>(toks: &'a [&'b str]) -> Option<&'a [&'b str]> {
    let toks = match toks.first() {
        Some(&"-6" | &"-4") => &toks[1..],
        _ => toks,
    };
    match toks {
        ["route", "get", rest @ ..] => Some(rest),
        _ => None,
    }
}

impl Control {
    /// The workers' counters since the last `clear stats`: the total, and each worker's.
    pub fn counters(&self) -> (WorkerReport, Vec<WorkerReport>) {
        let (_, each) = gather(&self.reports);
        let each: Vec<WorkerReport> = each
            .iter()
            .enumerate()
            .map(|(i, r)| self.baseline.since(i, r))
            .collect();
        let mut total = WorkerReport::default();
        for r in &each {
            total.merge(r);
        }
        (total, each)
    }

    /// Connections refused since the last `clear stats`.
    pub fn refused_since_clear(&self) -> u64 {
        self.refused.saturating_sub(self.baseline.refused)
    }

    /// `route get ADDR [from SRC] [iif DEV] [table T] [-j]`.
    pub fn route_get(&self, args: &[&str]) -> (bool, String) {
        let q = match super::route_get::parse(args) {
            Ok(q) => q,
            Err(e) => return (false, e),
        };
        let learned = |dev, addr| {
            self.neigh.get(dev, addr).map(|e| match e.state {
                State::Reachable { .. } => "REACHABLE",
                State::Stale { .. } => "STALE",
                State::Delay { .. } => "DELAY",
                State::Probe { .. } => "PROBE",
            })
        };
        match super::route_get::answer(&self.handle.load(), &q, &learned) {
            Ok(s) => (true, s),
            Err(e) => (false, e),
        }
    }

    /// `clear stats`.
    pub fn clear(&mut self, args: &[&str]) -> (bool, String) {
        match args {
            ["stats"] => {
                self.baseline = Baseline::take(&self.reports, self.refused);
                (true, String::new())
            }
            [] => (false, "clear what? (expected: clear stats)".into()),
            [w, ..] => (
                false,
                format!("'{}': expected: clear stats", shown_token(w)),
            ),
        }
    }

    /// `show sr|ioam|interfaces [-j]`; `None` for another subject.
    pub fn show_more(&self, what: &str, json: bool) -> Option<(bool, String)> {
        let snap = self.handle.load();
        Some(match what {
            "sr" => {
                let (total, _) = self.counters();
                (
                    true,
                    super::sr::show(self.cfg(), &snap, &total.stats.seg6local, json),
                )
            }
            "ioam" => {
                let (total, _) = self.counters();
                (
                    true,
                    super::ioam::show(self.cfg(), &snap, &total.stats, json),
                )
            }
            "interfaces" => (
                true,
                super::interfaces::show(&snap, &self.ports, self.io, json),
            ),
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lwt6_dataplane::snapshot::{Snapshot, SnapshotHandle};
    use serde_json::Value;
    use std::sync::{Arc, Mutex};

    /// The routes of the namespace the expected lines were printed in (`ip -6 route get`, Linux 6.18).
    const CONFIG: &str = "link add r0 address 02:00:00:00:01:02\nlink add r1 address 02:00:00:00:02:01\n\
        addr add fd00:1::1/64 dev r0\naddr add fd00:2::1/64 dev r1\n\
        neigh add fd00:2::3 lladdr 02:00:00:00:02:03 dev r1\n\
        -6 route add fd00:55::/64 via fd00:2::2 dev r1\n\
        -6 route add fd00:56::/64 encap seg6 mode encap segs fc00::1 dev r1\n\
        -6 route add fd00:57::/64 via fd00:2::2 dev r1 metric 5 mtu 1400\n\
        -6 route add fc00::/64 via fd00:2::3 dev r1\n\
        -6 route add fc00:1::100/128 encap seg6local action End count dev r1\n\
        sr tunsrc set fd00:2::1\nsr hmac set 7 sha256 secret s3cr3t-value\n\
        ioam namespace add 123 data 0xdeadbeef wide 0xcafec0caf00dc0de\nioam namespace add 124\n\
        ioam schema add 7 abcd\nioam namespace set 124 schema 7\n";

    fn control(text: &str) -> Control {
        let cfg = lwt6_config::parse(text).unwrap();
        let snap = Snapshot::build(&cfg).unwrap();
        Control::new(
            cfg,
            Arc::new(SnapshotHandle::new(snap)),
            vec![
                Arc::new(Mutex::new(WorkerReport::default())),
                Arc::new(Mutex::new(WorkerReport::default())),
            ],
            "test",
        )
    }

    fn first_line(c: &mut Control, line: &str) -> String {
        let (ok, out) = c.handle_line(line);
        assert!(ok, "{line}: {out}");
        out.lines().next().unwrap_or_default().to_string()
    }

    #[test]
    fn route_get_prints_what_ip_route_get_prints() {
        let mut c = control(CONFIG);
        // Each expected line is what `ip -6 route get` printed in a namespace holding these routes.
        for (q, kernel) in [
            (
                "route get fd00:55::1",
                "fd00:55::1 from :: via fd00:2::2 dev r1 src fd00:2::1 metric 1024 pref medium",
            ),
            (
                "-6 route get fd00:56::1",
                "fd00:56::1 from ::  encap seg6 mode encap segs 1 [ fc00::1 ] dev r1 src fd00:2::1 metric 1024 pref medium",
            ),
            (
                "route get fd00:57::1",
                "fd00:57::1 from :: via fd00:2::2 dev r1 src fd00:2::1 metric 5 mtu 1400 pref medium",
            ),
            (
                "route get fd00:2::9",
                "fd00:2::9 from :: dev r1 proto kernel src fd00:2::1 metric 256 pref medium",
            ),
            (
                "route get fd00:2::1",
                "local fd00:2::1 from :: dev lo table local proto kernel src fd00:2::1 metric 0 pref medium",
            ),
            (
                "route get fd00:55::1 from fd00:1::5 iif r0",
                "fd00:55::1 from fd00:1::5 via fd00:2::2 dev r1 metric 1024 iif r0 pref medium",
            ),
            (
                "route get fd00:55::1 from fd00:1::5",
                "fd00:55::1 from fd00:1::5 via fd00:2::2 dev r1 src fd00:2::1 metric 1024 pref medium",
            ),
        ] {
            assert_eq!(first_line(&mut c, q), kernel, "{q}");
        }
        // The kernel: "RTNETLINK answers: Network is unreachable".
        let (ok, e) = c.handle_line("route get fd00:99::1");
        assert!(!ok && e.contains("Network is unreachable"), "{e}");
        for (q, token) in [
            ("route get banana", "banana"),
            ("route get fd00:55::1 iif nosuch0", "nosuch0"),
            ("route get fd00:55::1 from 10.0.0.1", "10.0.0.1"),
            ("route get fd00:55::1 table x", "x"),
            ("route get fd00:55::1 fd00:56::1", "fd00:56::1"),
        ] {
            let (ok, e) = c.handle_line(q);
            assert!(!ok && e.contains(&format!("'{token}'")), "{q}: {e}");
        }
        let (ok, e) = c.handle_line("route get");
        assert!(!ok && e.contains("no address"), "{e}");
        // Nothing was added by a `route get`.
        assert_eq!(c.cfg().routes.len(), 5);
    }

    #[test]
    fn ipv4_route_get_prints_what_ip_4_route_get_prints() {
        let mut c = control(&format!(
            "{CONFIG}addr add 10.1.0.2/24 dev r0\naddr add 10.2.0.1/24 dev r1\n\
             -4 route add 10.99.0.0/24 via 10.2.0.2 dev r1\n\
             -4 route add 10.98.0.0/24 via 10.2.0.2 dev r1 metric 7 mtu 1400\n"
        ));
        // `ip -4 route get` in a namespace with these routes (Linux 6.18), without its `uid 0` and trailing spaces.
        for (q, kernel) in [
            (
                "route get 10.99.0.1",
                "10.99.0.1 via 10.2.0.2 dev r1 src 10.2.0.1\n    cache",
            ),
            (
                "route get 10.98.0.1",
                "10.98.0.1 via 10.2.0.2 dev r1 src 10.2.0.1\n    cache mtu 1400",
            ),
            (
                "route get 10.2.0.9",
                "10.2.0.9 dev r1 src 10.2.0.1\n    cache",
            ),
            (
                "route get 10.2.0.1",
                "local 10.2.0.1 dev lo src 10.2.0.1\n    cache <local>",
            ),
            (
                "route get 10.99.0.1 from 10.1.0.1 iif r0",
                "10.99.0.1 from 10.1.0.1 via 10.2.0.2 dev r1\n    cache iif r0",
            ),
            (
                "route get 10.99.0.1 from 10.2.0.1",
                "10.99.0.1 from 10.2.0.1 via 10.2.0.2 dev r1\n    cache",
            ),
        ] {
            let (ok, out) = c.handle_line(q);
            assert!(ok, "{q}: {out}");
            let two: Vec<&str> = out.lines().take(2).collect();
            assert_eq!(two.join("\n"), kernel, "{q}");
        }
    }

    #[test]
    fn route_get_json_is_ip_j_route_get_with_lwt6_fields() {
        let mut c = control(CONFIG);
        let (ok, out) = c.handle_line("route get fd00:56::1 -j");
        assert!(ok, "{out}");
        let v: Value = serde_json::from_str(&out).unwrap();
        let o = &v[0];
        // `ip -j -6 route get fd00:56::1` (Linux 6.18), key for key.
        let kernel: Value = serde_json::from_str(
            r#"{"dst":"fd00:56::1","from":"::","encap":"seg6","mode":"encap","segs":["fc00::1"],"dev":"r1","prefsrc":"fd00:2::1","metric":1024,"flags":[],"pref":"medium"}"#,
        )
        .unwrap();
        for (k, want) in kernel.as_object().unwrap() {
            assert_eq!(&o[k], want, "{k}: {out}");
        }
        let l = &o["lwt6"];
        assert_eq!(l["route"], "fd00:56::/64");
        assert_eq!(l["tunnel"]["kind"], "seg6");
        // RFC 8754: an outer IPv6 header (40) and an SRH of 8 + 16 bytes for one segment.
        assert_eq!(l["tunnel"]["added"], 64);
        assert_eq!(l["tunnel"]["routes_to"], "fc00::1");
        // To fc00::1 by fc00::/64 via fd00:2::3, whose neighbour is static.
        assert_eq!(l["next_hop"]["addr"], "fd00:2::3");
        assert_eq!(l["next_hop"]["dev"], "r1");
        assert_eq!(l["next_hop"]["state"], "PERMANENT");
        assert_eq!(l["next_hop"]["lladdr"], "02:00:00:00:02:03");
        assert_eq!(l["plan"]["kind"], "seg6_encap");
        assert_eq!(l["plan"]["egress"], "r1");
        assert_eq!(l["effective_mtu"], 1500 - 64);
        assert_eq!(l["xdp"]["tier"], "driver");
        // Next hop fd00:2::2 has no neighbour entry: no plan, the worker.
        let (_, out) = c.handle_line("route get fd00:55::1 -j");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v[0]["lwt6"]["next_hop"]["state"], "none");
        assert_eq!(v[0]["lwt6"]["plan"], Value::Null);
        assert_eq!(v[0]["lwt6"]["xdp"]["tier"], "worker");
        assert_eq!(v[0]["lwt6"]["xdp"]["why"], "no_plan");
    }

    #[test]
    fn show_sr_names_keys_without_their_secrets() {
        let mut c = control(CONFIG);
        let (ok, out) = c.handle_line("show sr");
        assert!(ok);
        // `ip sr tunsrc show`, `ip sr hmac show` (without the secret).
        assert!(
            out.starts_with("tunsrc addr fd00:2::1\nhmac 7 algo sha256\n"),
            "{out}"
        );
        assert!(
            out.contains("sid fc00:1::100/128 table main: encap seg6local action End"),
            "{out}"
        );
        assert!(out.contains("packets 0 bytes 0 errors 0"), "{out}");
        assert!(!out.contains("s3cr3t"), "{out}");
        let (_, j) = c.handle_line("show sr -j");
        assert!(!j.contains("s3cr3t"), "{j}");
        let v: Value = serde_json::from_str(&j).unwrap();
        assert_eq!(v["hmac"][0]["hmac"], 7);
        assert_eq!(v["hmac"][0]["algo"], "sha256");
        assert_eq!(v["sids"][0]["behaviour"], "End");
        assert_eq!(v["sids"][0]["stats64"]["packets"], 0);
    }

    #[test]
    fn show_ioam_lists_namespaces_as_ip_ioam_does() {
        let mut c = control(CONFIG);
        let (ok, out) = c.handle_line("show ioam");
        assert!(ok);
        // As `ip ioam namespace show` and `ip ioam schema show` printed them (Linux 6.18, iproute2 6.x).
        for line in [
            "namespace 123, data 0xdeadbeef, wide 0xcafec0caf00dc0de",
            "namespace 124 [schema 7]",
            "schema 7 [namespace 124], data: 61 62 63 64",
        ] {
            assert!(out.lines().any(|l| l == line), "{line}: {out}");
        }
        let (_, j) = c.handle_line("show ioam -j");
        let v: Value = serde_json::from_str(&j).unwrap();
        assert_eq!(v["namespaces"][0]["data"], "deadbeef");
        assert_eq!(v["namespaces"][1]["schema"], 7);
        assert_eq!(v["counters"]["removed"], 0);
    }

    #[test]
    fn clear_stats_zeroes_and_keeps_the_balance() {
        let mut c = control(CONFIG);
        let set = |c: &Control, i: usize, rx: u64, tx: u64, dropped: u64, pending: u64| {
            let mut r = c.reports[i].lock().unwrap();
            r.stats.rx = rx;
            r.stats.tx = tx;
            r.stats.pending = pending;
            r.stats.drops = Default::default();
            r.stats
                .drops
                .add(lwt6_dataplane::stats::DropReason::NoRoute, dropped);
            r.rx_by_dev = vec![rx, 0];
        };
        set(&c, 0, 100, 60, 30, 10);
        set(&c, 1, 50, 50, 0, 0);
        c.refused = 3;
        let stats = |c: &mut Control| -> Value {
            let (ok, out) = c.handle_line("show stats -j");
            assert!(ok);
            serde_json::from_str(&out).unwrap()
        };
        assert_eq!(stats(&mut c)["rx"], 150);
        assert!(c.handle_line("clear stats").0);
        let v = stats(&mut c);
        // The 10 frames pending at the clear are still to leave: counted as received after it.
        assert_eq!(
            (v["rx"].as_u64(), v["tx"].as_u64(), v["dropped"].as_u64()),
            (Some(10), Some(0), Some(0))
        );
        assert_eq!(v["balanced"], true);
        assert_eq!(v["control_refused"], 0);
        assert_eq!(v["links"]["r0"]["rx"], 0);
        // The pending frames leave (6 sent, 4 dropped) and 20 more come and go.
        set(&c, 0, 120, 60 + 6 + 15, 30 + 4 + 5, 0);
        let v = stats(&mut c);
        assert_eq!(
            (v["rx"].as_u64(), v["tx"].as_u64(), v["dropped"].as_u64()),
            (Some(30), Some(21), Some(9))
        );
        assert_eq!(v["balanced"], true, "{v}");
        assert_eq!(v["drops"]["no_route"], 9);
        assert_eq!(v["workers"][0]["balanced"], true);
        let (_, text) = c.handle_line("show stats");
        assert!(text.contains("counters since clear stats, "), "{text}");
        let (ok, e) = c.handle_line("clear counters");
        assert!(!ok && e.contains("'counters'"), "{e}");
        let (ok, e) = c.handle_batch(&["clear stats"]);
        assert!(!ok && e.contains("'clear'"), "{e}");
    }

    #[test]
    fn show_interfaces_without_ports() {
        let mut c = control(CONFIG);
        c.ports = vec![
            crate::show::interfaces::PortInfo::packet(0, 0, Some("hash")),
            crate::show::interfaces::PortInfo::packet(1, 1, Some("hash")),
        ];
        let (ok, out) = c.handle_line("show interfaces");
        assert!(ok);
        assert!(out.starts_with("r0: mtu 1500 address 02:00:00:00:01:02 io test\n    socket: worker 0, af_packet, fanout hash"), "{out}");
        let (_, j) = c.handle_line("show interfaces -j");
        let v: Value = serde_json::from_str(&j).unwrap();
        assert_eq!(v[1]["ifname"], "r1");
        assert_eq!(v[1]["ports"][0]["worker"], 1);
        assert_eq!(v[1]["ports"][0]["io"], "af_packet");
    }
}
