//! `show ioam [-j]`: the IOAM namespaces (`ioam namespace show`), schemas (`ioam schema show`), domains, the node
//! and interface IOAM ids (sysctls), and what the IOAM data path counted (for the whole node: lwt6 does not count
//! per domain).

use lwt6_dataplane::snapshot::Snapshot;
use lwt6_dataplane::spec::{Config, IoamForeign};
use lwt6_dataplane::stats::Stats;
use serde_json::json;

fn foreign(f: IoamForeign) -> &'static str {
    match f {
        IoamForeign::Drop => "drop",
        IoamForeign::Strip => "strip",
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// `show ioam` over configuration `cfg` and its snapshot `snap`, with the workers' counters `stats` (merged).
pub fn show(cfg: &Config, snap: &Snapshot, stats: &Stats, as_json: bool) -> String {
    let sys = &cfg.sysctl;
    let drops = |name: &str| {
        stats
            .drops
            .iter()
            .find(|(r, _)| r.name() == name)
            .map_or(0, |(_, n)| n)
    };
    let (foreign_drops, oversize_drops) = (drops("ioam_foreign"), drops("ioam_oversize"));
    if as_json {
        let v = json!({
            // As `ip -j ioam namespace show` writes them.
            "namespaces": cfg.ioam_namespaces.iter().map(|n| match n.schema {
                Some(s) => json!({"namespace": n.id, "schema": s}),
                None => json!({"namespace": n.id, "data": format!("{:08x}", n.data), "wide": format!("{:#018x}", n.wide)}),
            }).collect::<Vec<_>>(),
            "schemas": cfg.ioam_schemas.iter().map(|s| {
                json!({"schema": s.id, "data": hex(&s.data), "namespace": cfg.ioam_namespaces.iter().find(|n| n.schema == Some(s.id)).map(|n| n.id)})
            }).collect::<Vec<_>>(),
            "domains": cfg.ioam_domains.iter().map(|d| json!({
                "name": d.name, "namespaces": d.namespaces, "ingress": d.ingress, "egress": d.egress,
                "foreign": foreign(d.foreign), "maxsize": d.max_size, "oversize": foreign(d.oversize),
            })).collect::<Vec<_>>(),
            "sysctl": {
                "ioam6_id": sys.ioam6_id,
                "ioam6_id_wide": sys.ioam6_id_wide,
                "dev": snap.links.iter().map(|l| (l.name.clone(), json!({
                    "ioam6_enabled": u8::from(l.sysctl.ioam6_enabled),
                    "ioam6_id": l.sysctl.ioam6_id,
                    "ioam6_id_wide": l.sysctl.ioam6_id_wide,
                }))).collect::<serde_json::Map<_, _>>(),
            },
            "counters": {
                "transit_filled": stats.ioam_transit_filled,
                "inserted": stats.encapsulated.iter().find(|(k, _)| *k == "ioam6").map_or(0, |(_, n)| n),
                "foreign_dropped": foreign_drops,
                "oversize_dropped": oversize_drops,
                "foreign_stripped": stats.ioam.foreign_stripped,
                "oversize_stripped": stats.ioam.oversize_stripped,
                "removed": stats.ioam.removed,
                "decapsulated": stats.ioam.decapsulated,
                "exported": stats.ioam.exported,
                "export_lost": stats.ioam.export_lost,
                "merged": stats.ioam.merged,
                "not_inserted": stats.ioam.not_inserted,
            },
        });
        return format!("{v}\n");
    }
    // Namespaces and schemas as `ip ioam namespace show` / `ip ioam schema show` print them.
    let mut s = String::new();
    for n in &cfg.ioam_namespaces {
        match n.schema {
            Some(id) => {
                s += &format!(
                    "namespace {} [schema {id}]
",
                    n.id
                )
            }
            None => {
                s += &format!(
                    "namespace {}, data {:#010x}, wide {:#018x}
",
                    n.id, n.data, n.wide
                )
            }
        }
    }
    for sc in &cfg.ioam_schemas {
        s += &format!("schema {}", sc.id);
        if let Some(n) = cfg.ioam_namespaces.iter().find(|n| n.schema == Some(sc.id)) {
            s += &format!(" [namespace {}]", n.id);
        }
        let bytes: Vec<String> = sc.data.iter().map(|b| format!("{b:02x}")).collect();
        s += &format!(", data: {}\n", bytes.join(" "));
    }
    for d in &cfg.ioam_domains {
        let list = |v: &[String]| {
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(",")
            }
        };
        let ns: Vec<String> = d.namespaces.iter().map(u16::to_string).collect();
        s += &format!(
            "domain {} namespace {} ingress {} egress {} foreign {} maxsize {} oversize {}\n",
            d.name,
            ns.join(","),
            list(&d.ingress),
            list(&d.egress),
            foreign(d.foreign),
            d.max_size.map_or_else(|| "none".into(), |m| m.to_string()),
            foreign(d.oversize)
        );
    }
    s += &format!(
        "sysctl net.ipv6.ioam6_id = {}\nsysctl net.ipv6.ioam6_id_wide = {}\n",
        sys.ioam6_id, sys.ioam6_id_wide
    );
    for l in &snap.links {
        s += &format!(
            "sysctl net.ipv6.conf.{n}.ioam6_enabled = {}\nsysctl net.ipv6.conf.{n}.ioam6_id = {}\nsysctl net.ipv6.conf.{n}.ioam6_id_wide = {}\n",
            u8::from(l.sysctl.ioam6_enabled),
            l.sysctl.ioam6_id,
            l.sysctl.ioam6_id_wide,
            n = l.name
        );
    }
    let io = &stats.ioam;
    s += &format!(
        "counters: transit filled {}, inserted {}, foreign dropped {}, foreign stripped {}, oversize dropped {}, oversize stripped {}, removed at egress {}, decapsulated {}, exported {}, export lost {}, merged {}, not inserted {}\n",
        stats.ioam_transit_filled,
        stats
            .encapsulated
            .iter()
            .find(|(k, _)| *k == "ioam6")
            .map_or(0, |(_, n)| n),
        foreign_drops,
        io.foreign_stripped,
        oversize_drops,
        io.oversize_stripped,
        io.removed,
        io.decapsulated,
        io.exported,
        io.export_lost,
        io.merged,
        io.not_inserted
    );
    s
}
