//! The seg6 encapsulations the fast path does not plan but the driver executes: l2encap and l2encap.red of IPv6
//! packets (the received Ethernet frame is the inner payload), and encap, encap.red, l2encap, l2encap.red of IPv4
//! packets (routed by the main table's IPv4 routes: the `routes4` map). The template is the tunnel's own
//! (`Snapshot::seg6_encap_way`, written by the worker's code); the patches are the worker's per-packet fields.

use super::{E, LOCAL, Tables, push_plan, replace_or_push};
use crate::layout::{
    F_L2, F_V4, Kind, OP_FIRST_WORD, OP_HLIM, OP_PLEN, OPS_MAX, Op, PlanEntry, TPL_MAX, Why,
};
use ipnet::{IpNet, Ipv4Net};
use lwt6_dataplane::fib::RouteEntry;
use lwt6_dataplane::snapshot::{NoWay, Snapshot};

/// The driver's plan of seg6 route `r` whose encapsulation the fast path does not plan (an l2 mode of an IPv6
/// route; any mode but inline of an IPv4 route), or why it has none (`kind` for other routes).
pub fn way_entry(snap: &Snapshot, r: &RouteEntry) -> Result<PlanEntry, Why> {
    let w = snap.seg6_encap_way(r).map_err(|e| match e {
        NoWay::Kind => Why::Kind,
        NoWay::NoPlan => Why::NoPlan,
        NoWay::HopLimit => Why::HopLimit,
    })?;
    let tlen = w.template.len();
    if tlen > TPL_MAX {
        return Err(Why::Template);
    }
    let v4 = r.prefix.addr().is_ipv4();
    let op = |code, at: usize, mask: u32| Op {
        code,
        at: at as u16,
        mask,
        ..Op::default()
    };
    // `Worker::apply_input_tunnel`: an IPv6 packet's outer header takes its first word (as `seg6_flowlabel`
    // says) and its hop limit, decremented by forwarding; an IPv4 packet's has traffic class and flow label 0
    // and the egress device's hop limit less one, both already in the template. The payload length either way.
    let ops: &[Op] = if v4 {
        &[op(OP_PLEN, E + 4, 0)]
    } else {
        &[
            op(OP_FIRST_WORD, E, snap.seg6_first_word()),
            op(OP_PLEN, E + 4, 0),
            op(OP_HLIM, E + 7, 0),
        ]
    };
    let (kind, flags) = match (w.l2, v4) {
        (true, false) => (Kind::Seg6L2Encap, F_L2),
        (false, true) => (Kind::Seg6EncapV4, F_V4),
        (true, true) => (Kind::Seg6L2EncapV4, F_L2 | F_V4),
        (false, false) => return Err(Why::Kind),
    };
    let mut e = PlanEntry {
        egress: w.egress as u32,
        max_len: w.max_len as u32,
        tlen: tlen as u16,
        skip: 0,
        // The outer packet carries the received Ethernet header too (l2 modes): the worker's MTU check counts it.
        growth: if w.l2 { tlen } else { tlen - E } as u16,
        kind: kind as u8,
        nops: ops.len() as u8,
        flags,
        table: 0,
        ops: [Op::default(); OPS_MAX],
        tpl: [0; TPL_MAX],
    };
    e.ops[..ops.len()].copy_from_slice(ops);
    e.tpl[..tlen].copy_from_slice(&w.template);
    Ok(e)
}

/// Fills `t.routes4` (and the plans they name): every IPv4 route of the main table (lowest metric per prefix),
/// seg6 encapsulations with their plan, the others with the reason their frames go to the worker (plain IPv4
/// forwarding, other tunnels: `kind`); the router's IPv4 addresses as /32s (`local`).
pub(super) fn fill_ipv4(snap: &Snapshot, t: &mut Tables) {
    let mut last: Option<Ipv4Net> = None;
    for r in snap.fib().routes_v4() {
        let IpNet::V4(net) = r.prefix else { continue };
        if last == Some(net) {
            continue;
        }
        last = Some(net);
        let way = way_entry(snap, r);
        if way != Err(Why::Kind) {
            t.ways4 += 1;
        }
        let value = push_plan(&mut t.plans, way);
        t.routes4.push((net, value));
    }
    for l in &snap.links {
        for (a, _) in &l.addrs4 {
            let net = Ipv4Net::new(*a, 32).expect("a /32");
            replace_or_push(&mut t.routes4, |(n, _)| *n == net, (net, LOCAL));
        }
    }
}
