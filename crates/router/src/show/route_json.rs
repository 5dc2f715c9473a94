//! One route as `ip -j route show` prints it: iproute2's keys in iproute2's order (docs/config.md, "show routes").
//!
//! serde_json's `Map` sorts its keys (the workspace does not enable `preserve_order`), so the objects are built
//! here as ordered key/value lists and written out as JSON text.

use lwt6_dataplane::fib::{Origin, RejectKind, RouteEntry};
use lwt6_dataplane::snapshot::Snapshot;
use lwt6_dataplane::spec::{IoamMode, MAIN_TABLE, Seg6LocalAction, Seg6Mode, flavor};
use lwt6_dataplane::tunnel::seg6::Seg6Tunnel;
use lwt6_dataplane::tunnel::seg6local::{LocalCounters, Seg6Local, table_name};
use lwt6_dataplane::tunnel::{InputTunnel, OutputTunnel, Tunnel};
use serde::Serialize;
use std::net::IpAddr;

/// A JSON object whose keys keep the order they were added in.
#[derive(Debug, Default)]
pub struct Object(Vec<(&'static str, String)>);

impl Object {
    /// Adds `key` with `value` serialised as JSON.
    pub fn put(&mut self, key: &'static str, value: impl Serialize) -> &mut Self {
        let text = serde_json::to_string(&value).unwrap_or_else(|_| "null".into());
        self.0.push((key, text));
        self
    }

    /// Adds `key` with an ordered object as its value.
    pub fn put_object(&mut self, key: &'static str, value: Object) -> &mut Self {
        self.0.push((key, value.to_json()));
        self
    }

    /// Adds `key` with `json` (JSON text, written as it is) as its value.
    pub fn put_raw(&mut self, key: &'static str, json: String) -> &mut Self {
        self.0.push((key, json));
        self
    }

    /// The object as JSON text (`{"k":v,...}`, no spaces, as `ip -j` writes it).
    pub fn to_json(&self) -> String {
        let fields: Vec<String> = self
            .0
            .iter()
            .map(|(k, v)| format!("{}:{v}", serde_json::Value::from(*k)))
            .collect();
        format!("{{{}}}", fields.join(","))
    }
}

/// The destination as iproute2 prints it: `default`, a bare address for a host route, `PREFIX/LEN` otherwise.
pub fn dst_text(r: &RouteEntry) -> String {
    let p = &r.prefix;
    if p.prefix_len() == 0 {
        "default".into()
    } else if p.prefix_len() == p.max_prefix_len() {
        p.addr().to_string()
    } else {
        p.to_string()
    }
}

/// Where the kernel lists a route in a route dump (`ip route show`), as a sort key within one table and family.
///
/// IPv6 (the `fib6` tree is walked children first, the `0` branch before the `1` branch): a prefix comes after
/// every prefix inside it, and disjoint prefixes in address order — i.e. by the prefix's last address, then the
/// longer prefix first. IPv4 (the `fib_trie` is walked in key order, longer prefixes first within a key): by the
/// network address, then the longer prefix first. Routes for the same prefix: lower metric first.
pub fn kernel_order(r: &RouteEntry) -> (u128, u8, u32) {
    let p = &r.prefix;
    let addr = match p.addr() {
        IpAddr::V6(_) => match p.broadcast() {
            IpAddr::V6(b) => u128::from(b),
            IpAddr::V4(b) => u128::from(u32::from(b)),
        },
        IpAddr::V4(a) => u128::from(u32::from(a)),
    };
    (addr, u8::MAX - p.prefix_len(), r.metric)
}

/// The preferred source iproute2 shows for an IPv4 connected route (`src A`): our address on that subnet.
pub fn prefsrc(router: &Snapshot, r: &RouteEntry) -> Option<IpAddr> {
    if r.origin != Origin::Connected || !r.prefix.addr().is_ipv4() {
        return None;
    }
    let link = &router.links[r.dev.get()?];
    link.addrs4
        .iter()
        .find(|(a, _)| r.prefix.contains(&IpAddr::V4(*a)))
        .map(|(a, _)| IpAddr::V4(*a))
}

/// The scope iproute2 shows: IPv4 routes without a gateway are link-scoped (`scope link`); the others are
/// universe, which it does not print.
/// A reject route is universe too.
pub fn scope(r: &RouteEntry) -> Option<&'static str> {
    let reject = matches!(r.origin, Origin::Reject(_));
    (r.prefix.addr().is_ipv4() && r.via.is_none() && !reject).then_some("link")
}

/// The device iproute2 shows for an IPv6 blackhole, unreachable or prohibit route, which the kernel points at
/// the loopback (not for lwt6's multipath stand-in: a kernel multipath route has its devices per next hop).
pub fn reject_dev(r: &RouteEntry) -> Option<&'static str> {
    let reject = matches!(r.origin, Origin::Reject(k) if k != RejectKind::Multipath);
    (r.dev.get().is_none() && r.prefix.addr().is_ipv6() && reject).then_some("lo")
}

/// One route of table `table` as an `ip -j -s route show table all` object (`-s`: with `counters`), with lwt6's
/// own fields under `"lwt6"`.
pub fn route(
    router: &Snapshot,
    table: u32,
    r: &RouteEntry,
    counters: Option<&[LocalCounters]>,
) -> String {
    let mut o = Object::default();
    let v6 = r.prefix.addr().is_ipv6();
    if let Origin::Reject(k) = r.origin {
        o.put("type", k.name());
    }
    o.put("dst", dst_text(r));
    if let Some(t) = r.tunnel.get() {
        let c = counters.map(|c| c.get(t).copied().unwrap_or_default());
        encap(&mut o, &router.tunnels[t], c.as_ref());
    }
    if let Some(v) = r.via {
        o.put("gateway", v.to_string());
    }
    if let Some(d) = r.dev.get() {
        o.put("dev", &router.links[d].name);
    }
    if let Some(d) = reject_dev(r) {
        o.put("dev", d);
    }
    if table != MAIN_TABLE {
        o.put("table", table_name(table));
    }
    if r.origin == Origin::Connected {
        o.put("protocol", "kernel");
    }
    if let Some(s) = scope(r) {
        o.put("scope", s);
    }
    if let Some(a) = prefsrc(router, r) {
        o.put("prefsrc", a.to_string());
    }
    if v6 || r.metric != 0 {
        o.put("metric", r.metric);
    }
    o.put("flags", [(); 0]);
    if let Some(m) = r.mtu {
        let mut mtu = Object::default();
        mtu.put("mtu", m.value);
        o.0.push(("metrics", format!("[{}]", mtu.to_json())));
    }
    if v6 {
        o.put("pref", "medium");
    }
    let (linux_mtu, mtu) = router.route_mtu(r);
    let mut ours = Object::default();
    ours.put("effective_mtu", mtu)
        .put("linux_effective_mtu", linux_mtu);
    if r.line != 0 {
        ours.put("line", r.line);
    }
    o.put_object("lwt6", ours);
    o.to_json()
}

/// The encap's keys, as iproute2's `print_encap` writes them after `dst`.
pub fn encap(o: &mut Object, t: &Tunnel, counters: Option<&LocalCounters>) {
    match t {
        Tunnel::Input(InputTunnel::Seg6(s)) => seg6(o, s),
        Tunnel::Local(l) => seg6local(o, l, counters),
        // Not verified against the kernel (this kernel has no rpl/ioam6 encap to show): the text form's fields.
        Tunnel::Input(InputTunnel::Rpl(r)) => {
            o.put("encap", "rpl").put("segs", addrs(&r.segs));
        }
        Tunnel::Output(OutputTunnel::Ioam6(t)) => {
            let mode = match t.mode {
                IoamMode::Inline => "inline",
                IoamMode::Encap => "encap",
                IoamMode::Auto => "auto",
            };
            o.put("encap", "ioam6")
                .put("freq", format!("{}/{}", t.freq_k, t.freq_n))
                .put("mode", mode);
            if let Some(s) = t.tunsrc {
                o.put("tunsrc", s.to_string());
            }
            if let Some(d) = t.tundst {
                o.put("tundst", d.to_string());
            }
            if t.hbh_merge {
                o.put("hbh", "merge");
            }
            let traces: Vec<String> = t
                .traces
                .iter()
                .map(|tr| {
                    let mut x = Object::default();
                    x.put("type", format!("{:#08x}", tr.trace_type))
                        .put("ns", tr.namespace)
                        .put("size", tr.remaining_len as usize * 4);
                    x.to_json()
                })
                .collect();
            o.0.push(("trace", format!("[{}]", traces.join(","))));
            if let Some(d) = &t.dex {
                let mut x = Object::default();
                x.put("type", format!("{:#08x}", d.trace_type))
                    .put("ns", d.namespace);
                if let Some(f) = d.flow_id {
                    x.put("flowid", f);
                }
                x.put("seq", d.seq);
                o.0.push(("dex", x.to_json()));
            }
        }
    }
}

fn addrs(a: &[std::net::Ipv6Addr]) -> Vec<String> {
    a.iter().map(|a| a.to_string()).collect()
}

/// `"hmac"` as iproute2 writes a key id in JSON (`0x` and lower-case hex; the text form is upper-case hex).
fn hmac_json(k: u32) -> String {
    format!("{k:#x}")
}

fn seg6(o: &mut Object, s: &Seg6Tunnel) {
    let mut segs = addrs(&s.segs);
    // The SRH as stored: inline mode keeps a slot for the original destination (Segment List[0]).
    if s.mode == Seg6Mode::Inline {
        segs.push("::".into());
    }
    o.put("encap", "seg6")
        .put("mode", s.mode.name())
        .put("segs", segs);
    if let Some(k) = s.hmac_key {
        o.put("hmac", hmac_json(k));
    }
    if let Some(src) = s.tunsrc {
        o.put("tunsrc", src.to_string());
    }
}

fn seg6local(o: &mut Object, l: &Seg6Local, counters: Option<&LocalCounters>) {
    let s = &l.spec;
    o.put("encap", "seg6local").put("action", l.behaviour.name);
    if let Some(srh) = &s.srh {
        let mut segs = addrs(&srh.segs);
        if l.behaviour.action == Seg6LocalAction::EndB6 {
            segs.push("::".into());
        }
        let mut x = Object::default();
        x.put("segs", segs);
        if let Some(k) = srh.hmac {
            x.put("hmac", hmac_json(k));
        }
        o.put_object("srh", x);
    }
    if let Some(t) = s.table {
        o.put("table", table_name(t));
    }
    if let Some(t) = s.vrftable {
        o.put("vrftable", table_name(t));
    }
    if let Some(a) = s.nh4 {
        o.put("nh4", a.to_string());
    }
    if let Some(a) = s.nh6 {
        o.put("nh6", a.to_string());
    }
    if let Some(d) = &s.oif {
        o.put("oif", d);
    }
    if s.count
        && let Some(c) = counters
    {
        let mut x = Object::default();
        x.put("packets", c.packets)
            .put("bytes", c.bytes)
            .put("errors", c.errors);
        o.put_object("stats64", x);
    }
    if let Some(f) = s.flavors {
        let names: Vec<&str> = flavor::NAMES
            .iter()
            .filter(|(b, _)| f.ops & b != 0)
            .map(|(_, n)| *n)
            .collect();
        o.put("flavors", names);
        if f.ops & flavor::NEXT_CSID != 0 {
            o.put("lblen", f.lblen).put("nflen", f.nflen);
        }
    }
}
