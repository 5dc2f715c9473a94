//! JSON lines: one object per exported trace.
//!
//! ```json
//! {"ts_ns":1000000000,"event":"decap","in_dev":"r0","out_dev":null,
//!  "flow":{"src":"fd00:1::1","dst":"fd00:2::2","flow_label":74565,"proto":17,"sport":40000,"dport":3333},
//!  "option_type":"prealloc_trace","namespace":7,"trace_type":"0x800000","node_len":1,"flags":0,
//!  "overflow":false,"remaining_len":1,"nodes":[{"hop_limit":9,"node_id":1193046}]}
//! ```
//!
//! Node records are in path order (the first node the packet met first); a node lists only the fields its trace
//! type has. An option whose node records cannot be decoded carries `"error"` and its bytes in hex (`"raw"`).

use crate::IoamRecord;
use crate::ioam_trace::{Trace, option_type_name};
use lwt6_wire::ioam::{FLAG_OVERFLOW, OtherOption};
use serde_json::{Map, Value, json};

/// The JSON object for one record; `dev_names` maps device ids to names.
pub fn record(r: &IoamRecord, dev_names: &[String]) -> Value {
    let name = |d: usize| {
        dev_names
            .get(d)
            .map_or(Value::from(d), |n| Value::from(n.as_str()))
    };
    let mut o = Map::new();
    o.insert("ts_ns".into(), json!(r.ts_ns));
    o.insert("event".into(), json!(r.event.name()));
    o.insert("in_dev".into(), name(r.in_dev));
    o.insert("out_dev".into(), r.out_dev.map_or(Value::Null, name));
    o.insert(
        "flow".into(),
        r.flow.map_or(Value::Null, |f| {
            let mut v = json!({"src": f.src.to_string(), "dst": f.dst.to_string(),
                "flow_label": f.flow_label, "proto": f.proto});
            if let Some((s, d)) = f.ports {
                v["sport"] = json!(s);
                v["dport"] = json!(d);
            }
            v
        }),
    );
    let decoded = if r.node.is_empty() {
        Trace::decode(&r.option)
    } else {
        Trace::decode_dex(&r.option, &r.node)
    };
    match decoded {
        None => {
            o.insert("error".into(), json!("option too short"));
            o.insert("raw".into(), json!(hex(&r.option)));
        }
        Some(t) => {
            o.insert("option_type".into(), json!(option_type_name(t.option_type)));
            o.insert("namespace".into(), json!(t.namespace));
            if let Some(h) = t.header {
                o.insert("trace_type".into(), json!(format!("{:#08x}", h.trace_type)));
                o.insert("node_len".into(), json!(h.node_len));
                o.insert("flags".into(), json!(h.flags));
                o.insert("overflow".into(), json!(h.flags & FLAG_OVERFLOW != 0));
                o.insert("remaining_len".into(), json!(h.remaining_len));
                o.insert("nodes".into(), nodes(&t));
            }
            match &t.other {
                Some(OtherOption::Pot {
                    pot_type,
                    flags,
                    data,
                    ..
                }) => {
                    o.insert("pot_type".into(), json!(pot_type));
                    o.insert("pot_flags".into(), json!(flags));
                    o.insert("pot_data".into(), json!(hex(data)));
                }
                Some(OtherOption::E2e { e2e_type, data, .. }) => {
                    o.insert("e2e_type".into(), json!(format!("{e2e_type:#06x}")));
                    o.insert("e2e_data".into(), json!(hex(data)));
                }
                Some(OtherOption::Dex {
                    flags,
                    ext_flags,
                    trace_type,
                    flow_id,
                    seq,
                    ..
                }) => {
                    o.insert("dex_flags".into(), json!(flags));
                    o.insert("dex_ext_flags".into(), json!(ext_flags));
                    o.insert("trace_type".into(), json!(format!("{trace_type:#08x}")));
                    o.insert("flow_id".into(), json!(flow_id));
                    o.insert("seq".into(), json!(seq));
                    o.insert("nodes".into(), nodes(&t));
                }
                None => {}
            }
            if let Some(e) = t.error {
                o.insert("error".into(), json!(e));
                o.insert("raw".into(), json!(hex(&r.option)));
            } else if t.header.is_none() && t.other.is_none() {
                o.insert("raw".into(), json!(hex(&r.option)));
            }
        }
    }
    Value::Object(o)
}

/// The node records without their absent fields.
fn nodes(t: &Trace) -> Value {
    Value::Array(
        t.nodes
            .iter()
            .map(|n| {
                let Ok(Value::Object(m)) = serde_json::to_value(n) else {
                    return Value::Null;
                };
                let mut m: Map<String, Value> =
                    m.into_iter().filter(|(_, v)| !v.is_null()).collect();
                if let Some(Some((id, data))) = &n.opaque {
                    m.insert("opaque".into(), json!({"schema_id": id, "data": hex(data)}));
                }
                Value::Object(m)
            })
            .collect(),
    )
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// One JSON line (no trailing newline).
pub fn line(r: &IoamRecord, dev_names: &[String]) -> String {
    record(r, dev_names).to_string()
}
