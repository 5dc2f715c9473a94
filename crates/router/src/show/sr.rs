//! `show sr [-j]`: the router's SRv6 state: the tunnel source (`sr tunsrc set`), the HMAC keys (`sr hmac set`; their
//! ids and algorithms as `ip sr hmac show` prints them, never their secrets), the seg6 sysctls (global and per
//! interface), and the seg6local SIDs with their counters (routes with `count`).

use super::all_routes;
use lwt6_dataplane::snapshot::Snapshot;
use lwt6_dataplane::spec::Config;
use lwt6_dataplane::tunnel::Tunnel;
use lwt6_dataplane::tunnel::seg6local::{LocalCounters, table_name};
use lwt6_wire::srh::HmacAlgo;
use serde_json::{Value, json};

fn algo(a: HmacAlgo) -> &'static str {
    match a {
        HmacAlgo::Sha1 => "sha1",
        HmacAlgo::Sha256 => "sha256",
    }
}

/// One seg6local SID: its route, action, table and counters.
struct Sid {
    sid: String,
    table: String,
    action: String,
    behaviour: &'static str,
    counters: Option<LocalCounters>,
}

fn sids(snap: &Snapshot, counters: &[LocalCounters]) -> Vec<Sid> {
    all_routes(snap)
        .filter_map(|(t, r)| {
            let id = r.tunnel.get()?;
            match &snap.tunnels[id] {
                Tunnel::Local(l) => Some(Sid {
                    sid: r.prefix.to_string(),
                    table: table_name(t),
                    action: l.iproute2_stats(None),
                    behaviour: l.behaviour.name,
                    counters: l
                        .spec
                        .count
                        .then(|| counters.get(id).copied().unwrap_or_default()),
                }),
                _ => None,
            }
        })
        .collect()
}

/// `show sr` over configuration `cfg` and its snapshot `snap`, with the workers' seg6local `counters`.
pub fn show(cfg: &Config, snap: &Snapshot, counters: &[LocalCounters], as_json: bool) -> String {
    let sids = sids(snap, counters);
    let sys = &cfg.sysctl;
    if as_json {
        let devs: serde_json::Map<String, Value> = snap
            .links
            .iter()
            .map(|l| {
                (
                    l.name.clone(),
                    json!({
                        "seg6_enabled": u8::from(l.sysctl.seg6_enabled),
                        "seg6_require_hmac": l.sysctl.seg6_require_hmac,
                    }),
                )
            })
            .collect();
        let v = json!({
            "tunsrc": cfg.sr_tunsrc.map(|a| a.to_string()),
            "hmac": cfg.hmac_keys.iter().map(|k| json!({"hmac": k.key_id, "algo": algo(k.algo)})).collect::<Vec<_>>(),
            "sysctl": {
                "seg6_flowlabel": sys.seg6_flowlabel,
                "all": {
                    "seg6_enabled": u8::from(sys.all.seg6_enabled),
                    "seg6_require_hmac": sys.all.seg6_require_hmac,
                },
                "dev": devs,
            },
            "sids": sids.iter().map(|s| {
                let mut v = json!({"sid": s.sid, "table": s.table, "behaviour": s.behaviour, "action": s.action});
                if let Some(c) = s.counters {
                    v["stats64"] = json!({"packets": c.packets, "bytes": c.bytes, "errors": c.errors});
                }
                v
            }).collect::<Vec<_>>(),
        });
        return format!("{v}\n");
    }
    // As `ip sr tunsrc show` and `ip sr hmac show` print them, then the rest.
    let mut s = format!(
        "tunsrc addr {}\n",
        cfg.sr_tunsrc.unwrap_or(std::net::Ipv6Addr::UNSPECIFIED)
    );
    for k in &cfg.hmac_keys {
        s += &format!("hmac {} algo {}\n", k.key_id, algo(k.algo));
    }
    s += &format!(
        "sysctl net.ipv6.seg6_flowlabel = {}\nsysctl net.ipv6.conf.all.seg6_enabled = {}\nsysctl net.ipv6.conf.all.seg6_require_hmac = {}\n",
        sys.seg6_flowlabel,
        u8::from(sys.all.seg6_enabled),
        sys.all.seg6_require_hmac
    );
    for l in &snap.links {
        s += &format!(
            "sysctl net.ipv6.conf.{n}.seg6_enabled = {}\nsysctl net.ipv6.conf.{n}.seg6_require_hmac = {}\n",
            u8::from(l.sysctl.seg6_enabled),
            l.sysctl.seg6_require_hmac,
            n = l.name
        );
    }
    for x in &sids {
        s += &format!("sid {} table {}: {}", x.sid, x.table, x.action);
        if let Some(c) = x.counters {
            s += &format!(
                ", packets {} bytes {} errors {}",
                c.packets, c.bytes, c.errors
            );
        }
        s.push('\n');
    }
    s
}
