//! Decoding frames into a readable / JSON description: Ethernet, IPv6 (nested), extension headers with SRH,
//! RPL and IOAM trace contents, IPv4, UDP and ICMPv6. Used by `lwt6 decode` and by the tests.

use lwt6_wire::ethernet::mac_text;
use lwt6_wire::ethernet::{self, EthernetRepr};
use lwt6_wire::{exthdr, hbh, icmpv6, ioam, ipv4, ipv6, proto, rpl, srh};
use serde_json::{Value, json};
use std::net::Ipv6Addr;

/// Decodes one Ethernet frame into a list of layers (JSON objects with a "layer" key).
pub fn frame(bytes: &[u8]) -> Vec<Value> {
    let mut layers = Vec::new();
    let Ok(f) = ethernet::Frame::new_checked(bytes) else {
        layers.push(json!({"layer": "error", "error": "truncated ethernet header"}));
        return layers;
    };
    let Ok(e) = EthernetRepr::parse(&f) else {
        layers.push(json!({"layer": "error", "error": "bad ethernet header"}));
        return layers;
    };
    layers.push(json!({"layer": "ethernet", "dst": mac_text(&e.dst), "src": mac_text(&e.src), "ethertype": format!("{:#06x}", e.ethertype)}));
    let rest = &bytes[ethernet::HEADER_LEN..];
    match e.ethertype {
        ethernet::ETHERTYPE_IPV6 => ipv6_layers(rest, &mut layers, 0),
        ethernet::ETHERTYPE_IPV4 => ipv4_layers(rest, &mut layers, 0),
        _ => {}
    }
    layers
}

fn ipv4_layers(b: &[u8], layers: &mut Vec<Value>, depth: usize) {
    let Ok(p) = ipv4::Packet::new_checked(b) else {
        layers.push(json!({"layer": "error", "error": "bad IPv4 header"}));
        return;
    };
    layers.push(json!({"layer": "ipv4", "src": p.src_addr().to_string(), "dst": p.dst_addr().to_string(), "ttl": p.ttl(),
        "tos": p.tos(), "protocol": p.protocol(), "total_len": p.total_len(), "checksum_ok": p.verify_checksum()}));
    let hl = p.header_len();
    upper(p.protocol(), &b[hl..p.total_len() as usize], layers, depth);
}

fn ipv6_layers(b: &[u8], layers: &mut Vec<Value>, depth: usize) {
    if depth > 4 {
        return;
    }
    let Ok(p) = ipv6::Packet::new_checked(b) else {
        layers.push(json!({"layer": "error", "error": "bad IPv6 header"}));
        return;
    };
    let end = ipv6::HEADER_LEN + p.payload_len() as usize;
    let b = &b[..end];
    let da = p.dst_addr();
    layers.push(json!({"layer": "ipv6", "src": p.src_addr().to_string(), "dst": da.to_string(),
        "hop_limit": p.hop_limit(), "traffic_class": p.traffic_class(), "flow_label": p.flow_label(),
        "payload_len": p.payload_len(), "next_header": p.next_header()}));
    let mut walker = exthdr::Walker::new(b);
    for h in walker.by_ref() {
        let h = match h {
            Ok(h) => h,
            Err(e) => {
                layers.push(json!({"layer": "error", "error": format!("extension headers: {e}")}));
                return;
            }
        };
        let bytes = &b[h.offset..h.offset + h.len];
        match h.kind {
            proto::HOPOPTS | proto::DSTOPTS => layers.push(options(h.kind, bytes, h.offset)),
            proto::ROUTING => layers.push(routing(bytes, &da)),
            k => layers.push(
                json!({"layer": "exthdr", "type": k, "len": h.len, "next_header": h.next_header}),
            ),
        }
    }
    let (up, off) = walker.upper_layer();
    upper(up, &b[off.min(b.len())..], layers, depth);
}

fn upper(protocol: u8, b: &[u8], layers: &mut Vec<Value>, depth: usize) {
    match protocol {
        proto::IPV6 => ipv6_layers(b, layers, depth + 1),
        proto::IPV4 => ipv4_layers(b, layers, depth + 1),
        proto::ETHERNET => {
            let inner = frame(b);
            layers.extend(inner.into_iter().map(|mut l| {
                l["inner"] = json!(true);
                l
            }));
        }
        proto::UDP if b.len() >= 8 => layers.push(json!({"layer": "udp", "src_port": u16::from_be_bytes([b[0], b[1]]),
            "dst_port": u16::from_be_bytes([b[2], b[3]]), "len": u16::from_be_bytes([b[4], b[5]]), "payload_len": b.len() - 8})),
        proto::ICMPV6 if b.len() >= 4 => {
            let mut v = json!({"layer": "icmpv6", "type": b[0], "code": b[1]});
            if b.len() >= 8
                && b[0] < 128
                && let Some(e) = icmpv6::IcmpError::from_type_code_field(b[0], b[1], u32::from_be_bytes([b[4], b[5], b[6], b[7]]))
            {
                v["error"] = json!(e.name());
                if let Some(m) = e.mtu() {
                    v["mtu"] = json!(m);
                }
                if let Some(p) = e.pointer() {
                    v["pointer"] = json!(p);
                }
            }
            layers.push(v)
        }
        proto::NONE => {}
        p => layers.push(json!({"layer": "payload", "protocol": p, "len": b.len()})),
    }
}

fn options(kind: u8, bytes: &[u8], offset: usize) -> Value {
    let mut opts = Vec::new();
    for o in hbh::OptionIter::new(bytes) {
        let Ok(o) = o else {
            opts.push(json!({"error": "truncated option"}));
            break;
        };
        match o.ty {
            hbh::OPT_PAD1 => opts.push(json!({"type": "pad1"})),
            hbh::OPT_PADN => opts.push(json!({"type": "padn", "len": o.data_len})),
            hbh::OPT_IOAM => opts.push(ioam_option(
                &bytes[o.offset..o.offset + 2 + o.data_len],
                offset + o.offset,
            )),
            t => opts.push(json!({"type": t, "len": o.data_len})),
        }
    }
    json!({"layer": if kind == proto::HOPOPTS { "hop_by_hop" } else { "destination_options" }, "len": bytes.len(), "options": opts})
}

/// Decodes one IOAM option (starting at its type byte) that sits at `offset` from the IPv6 header.
pub fn ioam_option(opt: &[u8], offset: usize) -> Value {
    let Ok(v) = ioam::TraceOption::new_checked(opt) else {
        return json!({"type": "ioam", "error": "truncated"});
    };
    let incremental = v.ioam_type() == ioam::OPT_TYPE_INCREMENTAL_TRACE;
    if v.opt_len() < 2 || (v.ioam_type() != ioam::OPT_TYPE_PREALLOC_TRACE && !incremental) {
        return match ioam::parse_other(opt) {
            Some(Ok(ioam::OtherOption::Pot {
                namespace,
                pot_type,
                flags,
                data,
            })) => {
                json!({"type": "ioam_pot", "offset": offset, "namespace": namespace, "pot_type": pot_type,
                    "flags": flags, "data": hexs(&data)})
            }
            Some(Ok(ioam::OtherOption::E2e {
                namespace,
                e2e_type,
                data,
            })) => {
                json!({"type": "ioam_e2e", "offset": offset, "namespace": namespace,
                    "e2e_type": format!("{e2e_type:#06x}"), "data": hexs(&data)})
            }
            Some(Ok(ioam::OtherOption::Dex {
                namespace,
                flags,
                ext_flags,
                trace_type,
                flow_id,
                seq,
            })) => {
                json!({"type": "ioam_dex", "offset": offset, "namespace": namespace, "flags": flags,
                    "ext_flags": ext_flags, "trace_type": format!("{trace_type:#08x}"), "flow_id": flow_id,
                    "seq": seq})
            }
            Some(Err(e)) => {
                json!({"type": "ioam", "ioam_type": v.ioam_type(), "error": e.to_string()})
            }
            None => json!({"type": "ioam", "ioam_type": v.ioam_type()}),
        };
    }
    let Ok(h) = v.header() else {
        return json!({"type": "ioam", "error": "truncated trace header"});
    };
    let decoded = if incremental {
        ioam::decode_incremental_nodes(&v)
    } else {
        ioam::decode_nodes(&v)
    };
    let kind = if incremental {
        "ioam_incremental_trace"
    } else {
        "ioam_prealloc_trace"
    };
    let nodes = match decoded {
        Ok(n) => json!(n),
        Err(e) => json!({"error": e.to_string()}),
    };
    json!({"type": kind, "offset": offset, "namespace": h.namespace, "node_len": h.node_len,
        "flags": h.flags, "overflow": h.flags & ioam::FLAG_OVERFLOW != 0, "remaining_len": h.remaining_len,
        "trace_type": format!("{:#08x}", h.trace_type), "nodes": nodes})
}

fn hexs(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn routing(bytes: &[u8], da: &Ipv6Addr) -> Value {
    match bytes.get(2) {
        Some(&srh::ROUTING_TYPE) => {
            match srh::Header::new_checked(bytes).and_then(|h| srh::SrhRepr::parse(&h)) {
                Ok(r) => {
                    json!({"layer": "srh", "next_header": r.next_header, "segments_left": r.segments_left,
                "last_entry": r.last_entry, "flags": r.flags, "tag": r.tag,
                "segments": r.segments.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                "tlvs": r.tlvs.iter().map(|t| match t {
                    srh::TlvRepr::Hmac { key_id, hmac } => json!({"type": "hmac", "key_id": key_id,
                        "hmac": hmac.iter().map(|b| format!("{b:02x}")).collect::<String>()}),
                    srh::TlvRepr::Pad1 => json!({"type": "pad1"}),
                    srh::TlvRepr::PadN(n) => json!({"type": "padn", "len": n}),
                    srh::TlvRepr::Other { ty, data } => json!({"type": ty, "len": data.len()}),
                }).collect::<Vec<_>>()})
                }
                Err(e) => json!({"layer": "srh", "error": e.to_string()}),
            }
        }
        Some(&rpl::ROUTING_TYPE) => {
            let Ok(h) = rpl::Header::new_checked(bytes) else {
                return json!({"layer": "rpl", "error": "truncated"});
            };
            let mut addrs = [Ipv6Addr::UNSPECIFIED; 128];
            let full = h
                .address_count()
                .ok()
                .filter(|&n| n <= 128)
                .and_then(|n| rpl::decompress(&h, da, &mut addrs[..n]).ok());
            json!({"layer": "rpl", "next_header": h.next_header(), "segments_left": h.segments_left(),
                "cmpr_i": h.cmpr_i(), "cmpr_e": h.cmpr_e(), "pad": h.pad(),
                "addresses": full.map(|n| addrs[..n].iter().map(|a| a.to_string()).collect::<Vec<_>>())})
        }
        t => json!({"layer": "routing", "routing_type": t, "len": bytes.len()}),
    }
}

/// A one-line human summary of decoded layers.
pub fn summary(layers: &[Value]) -> String {
    let mut parts = Vec::new();
    for l in layers {
        let s = match l["layer"].as_str().unwrap_or("") {
            "ethernet" => continue,
            "ipv6" => format!(
                "IPv6 {} > {} hlim {}",
                l["src"].as_str().unwrap_or(""),
                l["dst"].as_str().unwrap_or(""),
                l["hop_limit"]
            ),
            "ipv4" => format!(
                "IPv4 {} > {} ttl {}",
                l["src"].as_str().unwrap_or(""),
                l["dst"].as_str().unwrap_or(""),
                l["ttl"]
            ),
            "srh" => format!(
                "SRH sl {} le {} [{}]{}",
                l["segments_left"],
                l["last_entry"],
                words(&l["segments"]),
                if l["tlvs"].as_array().is_some_and(|t| !t.is_empty()) {
                    " +HMAC"
                } else {
                    ""
                }
            ),
            "rpl" => format!(
                "RPL sl {} cmpr {}/{} [{}]",
                l["segments_left"],
                l["cmpr_i"],
                l["cmpr_e"],
                words(&l["addresses"])
            ),
            "hop_by_hop" => {
                let traces: Vec<String> = l["options"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|o| o["type"] == "ioam_prealloc_trace")
                    .map(|o| {
                        format!(
                            "IOAM ns {} type {} remlen {}{} nodes [{}]",
                            o["namespace"],
                            o["trace_type"].as_str().unwrap_or(""),
                            o["remaining_len"],
                            if o["overflow"] == true {
                                " OVERFLOW"
                            } else {
                                ""
                            },
                            o["nodes"]
                                .as_array()
                                .map(|n| n.iter().map(node_summary).collect::<Vec<_>>().join(", "))
                                .unwrap_or_default()
                        )
                    })
                    .collect();
                if traces.is_empty() {
                    "HBH".to_string()
                } else {
                    format!("HBH {}", traces.join(", "))
                }
            }
            "udp" => format!(
                "UDP {} > {} len {}",
                l["src_port"], l["dst_port"], l["payload_len"]
            ),
            "icmpv6" => {
                let mut s = format!("ICMPv6 type {} code {}", l["type"], l["code"]);
                if let Some(e) = l.get("error").and_then(Value::as_str) {
                    s += &format!(" {}", e.replace('_', " "));
                }
                if let Some(m) = l.get("mtu") {
                    s += &format!(" mtu {m}");
                }
                if let Some(p) = l.get("pointer") {
                    s += &format!(" pointer {p}");
                }
                s
            }
            "error" => format!("ERROR {}", l["error"].as_str().unwrap_or("")),
            other => other.to_string(),
        };
        parts.push(if l.get("inner").is_some() {
            format!("[L2] {s}")
        } else {
            s
        });
    }
    parts.join(" | ")
}

/// A compact view of one decoded IOAM node: the fields it carries.
fn node_summary(n: &Value) -> String {
    let mut f = Vec::new();
    let hex = |v: &Value, w: usize| v.as_u64().map(|x| format!("{x:#0w$x}", w = w + 2));
    if let (Some(h), Some(id)) = (n["hop_limit"].as_u64(), hex(&n["node_id"], 6)) {
        f.push(format!("hlim {h} id {id}"));
    }
    if let (Some(i), Some(e)) = (n["ingress_id"].as_u64(), n["egress_id"].as_u64()) {
        f.push(format!("if {i:#x}>{e:#x}"));
    }
    if let (Some(s), Some(us)) = (n["ts_sec"].as_u64(), n["ts_frac"].as_u64()) {
        f.push(format!("ts {s}.{us:06}"));
    }
    if let Some(d) = hex(&n["ns_data"], 8) {
        f.push(format!("ns-data {d}"));
    }
    if let (Some(h), Some(id)) = (n["hop_limit_wide"].as_u64(), hex(&n["node_id_wide"], 14)) {
        f.push(format!("hlim {h} wide-id {id}"));
    }
    if let Some(d) = hex(&n["ns_data_wide"], 16) {
        f.push(format!("ns-wide {d}"));
    }
    if f.is_empty() {
        "-".to_string()
    } else {
        f.join(" ")
    }
}

/// A JSON array of strings joined with spaces ("" for anything else).
fn words(v: &Value) -> String {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}
