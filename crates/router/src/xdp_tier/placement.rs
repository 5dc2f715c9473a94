//! Where each route's frames are handled when the XDP tier runs: in the driver (and as which plan kind) or by
//! the worker (and why), for `lwt6 check --xdp` and `lwt6 ctl show xdp`.

use ipnet::IpNet;
use lwt6_dataplane::snapshot::Snapshot;
use lwt6_xdp::layout::F_RELOOKUP;
use lwt6_xdp::{Kind, Why};
use serde_json::json;

/// One route's place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The route's prefix (main table, IPv6 then IPv4; the router's own addresses as /128s and /32s).
    pub dst: IpNet,
    /// `Ok(kind)`: executed in the driver; `Err(why)`: its frames go to the worker, counted under `why`.
    pub place: Result<Kind, Why>,
    /// Bytes the driver adds in front of the received packet (when it has a plan).
    pub growth: Option<u16>,
}

/// Every IPv6 and IPv4 route of `snap`'s main table with its place, for receiving interfaces that leave `headroom` bytes
/// (a plan that adds more goes to the worker, `headroom`) and egress devices for which `egress_ok` says whether
/// the driver can redirect to them (`no_egress` otherwise; End plans leave along their next segment's route,
/// which the driver looks up per packet).
pub fn placement(snap: &Snapshot, headroom: u16, egress_ok: impl Fn(u32) -> bool) -> Vec<Place> {
    let t = lwt6_xdp::tables(snap);
    let v6 = t.routes.iter().map(|(net, v)| (IpNet::V6(*net), v));
    let v4 = t.routes4.iter().map(|(net, v)| (IpNet::V4(*net), v));
    v6.chain(v4)
        .map(|(net, v)| {
            let (place, growth) = match t.plans.get(v.plan as usize) {
                None => (Err(why_of(v.why)), None),
                Some(p) => {
                    let kind = Kind::ALL.get(usize::from(p.kind)).copied();
                    let place = if p.growth > headroom {
                        Err(Why::Headroom)
                    } else if p.flags & F_RELOOKUP == 0 && !egress_ok(p.egress) {
                        Err(Why::NoEgress)
                    } else {
                        kind.ok_or(Why::BadPlan)
                    };
                    (place, Some(p.growth))
                }
            };
            Place {
                dst: net,
                place,
                growth,
            }
        })
        .collect()
}

fn why_of(n: u32) -> Why {
    Why::ALL
        .into_iter()
        .find(|w| *w as u32 == n)
        .unwrap_or(Why::BadPlan)
}

/// The places as text: one line per route (`PREFIX driver KIND` or `PREFIX worker REASON`), then a summary.
pub fn text(places: &[Place], headroom: u16) -> String {
    let mut s = String::new();
    let mut driver = 0;
    let mut why = std::collections::BTreeMap::new();
    for p in places {
        match p.place {
            Ok(k) => {
                driver += 1;
                s += &format!("{} driver {}", p.dst, k.name());
                if let Some(g) = p.growth.filter(|g| *g > 0) {
                    s += &format!(" (adds {g} bytes)");
                }
            }
            Err(w) => {
                *why.entry(w.name()).or_insert(0usize) += 1;
                s += &format!("{} worker {}", p.dst, w.name());
                if let (Why::Headroom, Some(g)) = (w, p.growth) {
                    s += &format!(" (adds {g} bytes, the driver leaves {headroom})");
                }
            }
        }
        s.push('\n');
    }
    let rest: Vec<String> = why.iter().map(|(w, n)| format!("{w} {n}")).collect();
    s += &format!(
        "xdp tier (headroom {headroom}): {driver} of {} routes in the driver{}{}\n",
        places.len(),
        if rest.is_empty() {
            ""
        } else {
            "; to the worker: "
        },
        rest.join(", ")
    );
    s
}

/// The places as JSON: `[{"dst", "driver": true, "kind", "growth"} | {"dst", "driver": false, "reason"}]`.
pub fn json(places: &[Place]) -> serde_json::Value {
    json!(
        places
            .iter()
            .map(|p| match p.place {
                Ok(k) => json!({"dst": p.dst.to_string(), "driver": true, "kind": k.name(), "growth": p.growth}),
                Err(w) => json!({"dst": p.dst.to_string(), "driver": false, "reason": w.name(), "growth": p.growth}),
            })
            .collect::<Vec<_>>()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(text: &str) -> Snapshot {
        Snapshot::build(&lwt6_config::parse(text).expect("parses")).expect("builds")
    }

    const BASE: &str = "link add r0 address 02:00:00:00:01:02\nlink add r1 address 02:00:00:00:02:01\n\
        addr add fd00:1::2/64 dev r0\naddr add fd00:2::1/64 dev r1\n\
        neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1\n";

    fn place_of(p: &[Place], dst: &str) -> Result<Kind, Why> {
        let net: IpNet = dst.parse().unwrap();
        p.iter().find(|p| p.dst == net).expect("listed").place
    }

    #[test]
    fn driver_routes_and_the_reasons_of_the_others() {
        // 10 SIDs: 40 + 8 + 160 = 208 bytes added (fits 216); 11 SIDs: 224 (does not, RFC 8754 §2: 8 + 16 n).
        let segs = |n: usize| {
            (1..=n)
                .map(|i| format!("fc00::{i:x}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        let s = snap(&format!(
            "{BASE}-6 route add fc00::/16 via fd00:2::2 dev r1\n\
             -6 route add fd00:91::/64 encap seg6 mode encap segs {} dev r1\n\
             -6 route add fd00:92::/64 encap seg6 mode encap segs {} dev r1\n\
             -6 route add fd00:93::/64 encap seg6 mode l2encap segs fc00::1 dev r1\n\
             -6 route add fd00:94::/64 via fd00:2::9 dev r1\n\
             -4 route add 10.9.0.0/16 encap seg6 mode encap segs fc00::1 dev r1\n\
             -4 route add 10.8.0.0/16 encap seg6 mode l2encap.red segs fc00::1,fc00::2 dev r1\n\
             -4 route add 10.7.0.0/16 encap seg6 mode encap segs 2001:db8::1 dev r1\n\
             -4 route add 10.6.0.0/16 dev r1\n",
            segs(10),
            segs(11)
        ));
        let p = placement(&s, 216, |_| true);
        assert_eq!(place_of(&p, "fc00::/16"), Ok(Kind::Forward));
        assert_eq!(place_of(&p, "fd00:91::/64"), Ok(Kind::Seg6Encap));
        assert_eq!(place_of(&p, "fd00:92::/64"), Err(Why::Headroom));
        // l2encap with one SID: the outer IPv6 header and an SRH of one segment (40 + 8 + 16 bytes) in front of
        // the received frame, which keeps its Ethernet header (14).
        assert_eq!(place_of(&p, "fd00:93::/64"), Ok(Kind::Seg6L2Encap));
        assert_eq!(place_of(&p, "10.9.0.0/16"), Ok(Kind::Seg6EncapV4));
        assert_eq!(place_of(&p, "10.8.0.0/16"), Ok(Kind::Seg6L2EncapV4));
        // No route to the first SID.
        assert_eq!(place_of(&p, "10.7.0.0/16"), Err(Why::NoPlan));
        // Plain IPv4 forwarding is the worker's.
        assert_eq!(place_of(&p, "10.6.0.0/16"), Err(Why::Kind));
        let t = text(&p, 216);
        assert!(
            t.contains("fd00:93::/64 driver seg6_l2encap (adds 78 bytes)\n"),
            "{t}"
        );
        assert!(
            t.contains("10.9.0.0/16 driver seg6_encap_v4 (adds 64 bytes)\n"),
            "{t}"
        );
        // l2encap.red with two SIDs: the SRH holds one (14 + 40 + 8 + 16 bytes).
        assert!(
            t.contains("10.8.0.0/16 driver seg6_l2encap_v4 (adds 78 bytes)\n"),
            "{t}"
        );
        // No neighbour for fd00:2::9 yet: no plan until it is resolved.
        assert_eq!(place_of(&p, "fd00:94::/64"), Err(Why::NoPlan));
        assert_eq!(place_of(&p, "fd00:2::1/128"), Err(Why::Local));
        // A driver that leaves 120 bytes (after an XDP-redirected veth hop): 10 SIDs (208 bytes) no longer fit;
        // plain forwarding (nothing added) still does.
        let p = placement(&s, 120, |_| true);
        assert_eq!(place_of(&p, "fd00:91::/64"), Err(Why::Headroom));
        assert_eq!(place_of(&p, "fc00::/16"), Ok(Kind::Forward));
        // r1 (device 1) takes no redirected frames.
        let p = placement(&s, 216, |e| e != 1);
        assert_eq!(place_of(&p, "fc00::/16"), Err(Why::NoEgress));
        let t = text(&p, 216);
        assert!(t.contains("fc00::/16 worker no_egress\n"), "{t}");
        // The connected routes fd00:1::/64 and fd00:2::/64 have no plan either (a host behind them needs its own
        // neighbour entry).
        assert!(
            t.ends_with(
                "0 of 13 routes in the driver; to the worker: headroom 1, kind 1, local 2, no_egress 5, no_plan 4\n"
            ),
            "{t}"
        );
    }
}
