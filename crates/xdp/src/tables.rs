//! A snapshot's forwarding plans as the XDP program's maps hold them: every IPv6 route of the main table with the
//! plan the driver executes for it, or the reason its frames go to the worker.
//!
//! The template and the patches of each plan kind say, as data, what `lwt6_dataplane`'s fast path writes per
//! packet (`Seg6Tunnel::patch_encap`, `patch_inline`, `patch_inserting_header`); the differential tests compare
//! the two byte for byte.

use crate::layout::{
    F_DECAP, F_PLAIN, F_RELOOKUP, F_SRH_ADVANCE, F_TABLE, IOAM_ANY, IOAM_BITS, IOAM_DATA,
    IoamEntry, Kind, LpmKey, NO_PLAN, OP_BYTE, OP_FIRST_WORD, OP_HLIM, OP_ING16, OP_ING32,
    OP_NEXT_SID, OP_PLEN, OP_RX, OP_SL, OPS_MAX, Op, P_IOAM_ENABLED, P_REQUIRE_HMAC, PlanEntry,
    PortEntry, RouteValue, TPL_MAX, Why,
};
use ipnet::{IpNet, Ipv6Net};
use lwt6_dataplane::fib::RouteEntry;
use lwt6_dataplane::hop::ioam::{FillContext, IfIds, IoamNode, NO_IF};
use lwt6_dataplane::plan::{FRONT, IoamField, Plan, PlanKind};
use lwt6_dataplane::snapshot::{Link, Snapshot};
use lwt6_dataplane::spec::{MAIN_TABLE, Seg6LocalAction};
use lwt6_dataplane::tunnel::Tunnel;
use lwt6_dataplane::wire::ioam;
use std::collections::HashMap;
use std::net::IpAddr;

mod encap;

pub use encap::way_entry;

const E: usize = 14;
const H: usize = 40;
/// IPv6 Routing header.
const ROUTING: u16 = 43;
/// IPv6 Hop-by-Hop Options header.
const HOPOPTS: u16 = 0;

/// The maps' contents for one snapshot.
#[derive(Debug, Clone, Default)]
pub struct Tables {
    /// LPM entries: every IPv6 route of the main table (its best route's plan), and the router's own addresses
    /// as /128s sent to the worker.
    pub routes: Vec<(Ipv6Net, RouteValue)>,
    /// Plans, by their index in the `plans` array.
    pub plans: Vec<PlanEntry>,
    /// IOAM transit: this node's data per namespace and egress device (key namespace | device << 16), and the
    /// [`IOAM_ANY`] entry for the namespaces it does not know. Empty when transit is left to the worker (IOAM
    /// domains configured: their roles are the worker's; see also [`Tables::leave_transit_to_the_worker`]).
    pub ioam: Vec<(u32, IoamEntry)>,
    /// The routes of the tables End.DT6 plans look up (the `vrf` map): table, prefix and value (plain forwarding
    /// plans only), with the router's own addresses as /128s in each.
    pub table_routes: Vec<(u32, Ipv6Net, RouteValue)>,
    /// The `routes4` LPM entries: every IPv4 route of the main table (seg6 encapsulations of IPv4 packets with
    /// their plans, the others with their reason), and the router's IPv4 addresses as /32s sent to the worker.
    pub routes4: Vec<(ipnet::Ipv4Net, RouteValue)>,
    /// IPv6 routes whose driver entry is derived here from the route to their first SID (seg6 l2encap and
    /// l2encap.red) rather than from a snapshot plan: the snapshot does not replan them when that route changes,
    /// so [`delta::routes`](crate::delta::routes) looks at each of them again at every change.
    pub ways6: Vec<Ipv6Net>,
    /// IPv4 routes with such an entry (seg6 encapsulations of IPv4 packets): while there are any, route changes
    /// install the whole tables ([`Tier::update`](crate::tier::Tier::update) refuses).
    pub ways4: usize,
}

impl Tables {
    /// The LPM key of a prefix.
    pub fn key(net: &Ipv6Net) -> LpmKey {
        LpmKey {
            prefixlen: u32::from(net.prefix_len()),
            addr: net.network().octets(),
        }
    }

    /// Leaves every frame with a Hop-by-Hop header to the worker (as IOAM domains do): for a router whose workers
    /// export the traces they fill in transit (`--ioam-export-transit`), which the driver cannot.
    pub fn leave_transit_to_the_worker(&mut self) {
        self.ioam.clear();
    }

    /// Where a route's frames are handled: `Ok(kind)` in the driver, `Err(why)` by the worker.
    pub fn placement(&self, net: &Ipv6Net) -> Option<Result<Kind, Why>> {
        let (_, v) = self.routes.iter().find(|(n, _)| n == net)?;
        Some(match self.plans.get(v.plan as usize) {
            Some(p) => Kind::ALL
                .get(usize::from(p.kind))
                .copied()
                .ok_or(Why::BadPlan),
            None => Err(why_of(v.why)),
        })
    }
}

/// A route's map value: the plan in slot `slot`, or why its frames go to the worker.
fn route_value(slot: Result<u32, Why>) -> RouteValue {
    match slot {
        Ok(plan) => RouteValue { plan, why: 0 },
        Err(why) => RouteValue {
            plan: NO_PLAN,
            why: why as u32,
        },
    }
}

/// Appends plan `e` (if the route has one) to `plans`: the route's map value naming its slot, or why it has none.
fn push_plan(plans: &mut Vec<PlanEntry>, e: Result<PlanEntry, Why>) -> RouteValue {
    route_value(e.map(|e| {
        plans.push(e);
        plans.len() as u32 - 1
    }))
}

/// The map value of the router's own addresses: delivered locally, by the worker.
const LOCAL: RouteValue = RouteValue {
    plan: NO_PLAN,
    why: Why::Local as u32,
};

/// Puts `entry` in `entries`, in place of the one `same` finds if there is one (a local address replaces the
/// route to the same prefix).
fn replace_or_push<T>(entries: &mut Vec<T>, same: impl Fn(&T) -> bool, entry: T) {
    match entries.iter_mut().find(|e| same(e)) {
        Some(e) => *e = entry,
        None => entries.push(entry),
    }
}

fn why_of(n: u32) -> Why {
    Why::ALL
        .into_iter()
        .find(|w| *w as u32 == n)
        .unwrap_or(Why::BadPlan)
}

/// The driver's form of `plan` (with template `tpl`), or why it has none.
pub fn plan_entry(snap: &Snapshot, plan: &Plan, tpl: &[u8]) -> Result<PlanEntry, Why> {
    if plan.sampled.is_some() {
        return Err(Why::Kind);
    }
    let op = |code, at: usize, from: u16, len: u8, mask: u32| Op {
        code,
        len,
        at: at as u16,
        from,
        pad: 0,
        mask,
    };
    let rx = |at: usize, from: u16, len: u8| op(OP_RX, at, from, len, 0);
    // The IPv6 header of a plan that inserts a header behind it (`patch_inserting_header`): the received
    // header's first 24 bytes, the new payload length, next header `nh`, the decremented hop limit.
    let inserting = |nh: u16| {
        [
            rx(E, 0, 24),
            op(OP_PLEN, E + 4, 0, 0, 0),
            op(OP_BYTE, E + 6, nh, 0, 0),
            op(OP_HLIM, E + 7, 0, 0, 0),
        ]
    };
    let mut flags = 0;
    let (kind, skip, ops): (Kind, usize, Vec<Op>) = match plan.kind {
        PlanKind::Forward => {
            flags |= F_PLAIN;
            (Kind::Forward, 0, vec![op(OP_HLIM, E + 7, 0, 0, 0)])
        }
        // `Seg6Tunnel::patch_encap`: version, traffic class and flow label as the sysctl keeps them, the payload
        // length, the hop limit.
        // `seg6_flowlabel` 1 hashes the flow into the outer flow label: the worker's general path (the snapshot
        // keeps the plan, so that the sysctl changes no plan).
        PlanKind::Seg6Encap if snap.seg6_flowlabel() > 0 => return Err(Why::NoPlan),
        PlanKind::Seg6Encap => (
            Kind::Seg6Encap,
            0,
            vec![
                op(OP_FIRST_WORD, E, 0, 0, snap.seg6_first_word()),
                op(OP_PLEN, E + 4, 0, 0, 0),
                op(OP_HLIM, E + 7, 0, 0, 0),
            ],
        ),
        // `Seg6Tunnel::patch_inline`: the IPv6 header, the SRH's next header and Segment List[0].
        PlanKind::Seg6Inline => {
            let mut v = inserting(ROUTING).to_vec();
            v.push(rx(FRONT, 6, 1));
            v.push(rx(FRONT + 8, 24, 16));
            (Kind::Seg6Inline, H, v)
        }
        // The routing header's next header and the original destination's last 16 - CmprE bytes.
        PlanKind::RplFixed => {
            let (at, ce) = (usize::from(plan.rpl_tail.0), plan.rpl_tail.1);
            let mut v = inserting(ROUTING).to_vec();
            v.push(rx(FRONT, 6, 1));
            v.push(rx(FRONT + at, 24 + u16::from(ce), 16 - ce));
            (Kind::RplFixed, H, v)
        }
        // `Ioam6Tunnel::patch_inline`: the whole received header (the template's slot is only room), next header
        // 0, the Hop-by-Hop header's next header; then this node's per-packet fields.
        PlanKind::IoamInline => {
            let mut v = vec![
                rx(E, 0, 40),
                op(OP_PLEN, E + 4, 0, 0, 0),
                op(OP_BYTE, E + 6, HOPOPTS, 0, 0),
                op(OP_HLIM, E + 7, 0, 0, 0),
                rx(FRONT, 6, 1),
            ];
            v.extend(ioam_fields(plan)?);
            (Kind::IoamInline, H, v)
        }
        // `Ioam6Tunnel::patch_encap`: the outer header's first word from the inner one, the payload length, the
        // hop limit in both headers; then this node's per-packet fields.
        PlanKind::IoamEncap => {
            let mut v = vec![
                op(OP_FIRST_WORD, E, 0, 0, u32::MAX),
                op(OP_PLEN, E + 4, 0, 0, 0),
                op(OP_HLIM, E + 7, 0, 0, 0),
                op(OP_HLIM, tpl.len() + 7, 0, 0, 0),
            ];
            v.extend(ioam_fields(plan)?);
            (Kind::IoamEncap, 0, v)
        }
        // The fast path's End.X: the SRH advanced (destination := the next segment, Segments Left less one) and
        // the hop limit, behind the Ethernet header to nh6.
        PlanKind::EndX => {
            flags |= F_SRH_ADVANCE;
            (
                Kind::EndX,
                0,
                vec![
                    op(OP_HLIM, E + 7, 0, 0, 0),
                    op(OP_NEXT_SID, E + 24, 0, 0, 0),
                    op(OP_SL, FRONT + 3, 0, 0, 0),
                ],
            )
        }
        // The fast path's End.DX6: the inner packet behind the Ethernet header to nh6, its hop limit decremented.
        PlanKind::EndDx6 => {
            flags |= F_DECAP;
            (Kind::EndDx6, 0, vec![op(OP_HLIM, E + 7, 0, 0, 0)])
        }
        // The fast path's End: End.X's SRH advance, out along the next segment's plain-forwarding plan (the
        // executor looks it up; this plan has no template of its own).
        PlanKind::End => {
            flags |= F_SRH_ADVANCE | F_RELOOKUP;
            (
                Kind::End,
                0,
                vec![
                    op(OP_HLIM, E + 7, 0, 0, 0),
                    op(OP_NEXT_SID, E + 24, 0, 0, 0),
                    op(OP_SL, FRONT + 3, 0, 0, 0),
                ],
            )
        }
        PlanKind::Rpl => return Err(Why::Kind),
    };
    if tpl.len() > TPL_MAX {
        return Err(Why::Template);
    }
    let growth = if flags & F_RELOOKUP != 0 {
        // The way out's template is used.
        0
    } else {
        tpl.len()
            .checked_sub(E + skip)
            .filter(|g| *g == plan.growth)
            .ok_or(Why::BadPlan)?
    };
    if ops.len() > OPS_MAX {
        return Err(Why::Kind);
    }
    let mut e = PlanEntry {
        egress: plan.egress as u32,
        max_len: plan.max_len as u32,
        tlen: tpl.len() as u16,
        skip: skip as u16,
        growth: growth as u16,
        kind: kind as u8,
        nops: ops.len() as u8,
        flags,
        table: 0,
        ops: [Op::default(); OPS_MAX],
        tpl: [0; TPL_MAX],
    };
    e.ops[..ops.len()].copy_from_slice(&ops);
    e.tpl[..tpl.len()].copy_from_slice(tpl);
    Ok(e)
}

/// The per-packet IOAM fields of an IOAM plan whose template holds this node's data, as patches; `Err` when
/// the driver cannot write them: a plan filling its traces per packet, or timestamps (the driver has no
/// realtime clock a test could compare; see docs/xdp.md).
fn ioam_fields(plan: &Plan) -> Result<Vec<Op>, Why> {
    if !plan.ioam.baked || plan.ioam.has_ts {
        return Err(Why::Kind);
    }
    let n = usize::from(plan.ioam.n);
    Ok(plan.ioam.at[..n]
        .iter()
        .zip(&plan.ioam.what[..n])
        .map(|(&at, what)| {
            let code = match what {
                IoamField::HopLimit => OP_HLIM,
                IoamField::IngressId => OP_ING16,
                IoamField::IngressWide => OP_ING32,
                IoamField::TsSec | IoamField::TsFrac => unreachable!("has_ts is checked above"),
            };
            Op {
                code,
                at,
                ..Op::default()
            }
        })
        .collect())
}

/// The IOAM transit entries of `snap` (see [`Tables::ioam`]).
fn ioam_entries(snap: &Snapshot) -> Vec<(u32, IoamEntry)> {
    let node = snap.ioam();
    if !node.domains.is_empty() {
        return Vec::new();
    }
    let mut v = vec![(IOAM_ANY, ioam_entry(node, None, NO_IF))];
    let mut spaces: Vec<u16> = node.namespaces.keys().copied().collect();
    spaces.sort_unstable();
    for ns in spaces {
        for (d, l) in snap.links.iter().enumerate().take(0xffff) {
            let key = u32::from(ns) | (d as u32) << 16;
            v.push((key, ioam_entry(node, Some(ns), IfIds::of(&l.sysctl))));
        }
    }
    v
}

/// This node's data for namespace `ns` leaving by an egress with ids `egress`, field by field
/// (`lwt6_wire::ioam::write_node` of each trace-type bit alone): the hop limit and the ingress ids are left for the
/// driver to patch per packet, the timestamps refused. `ns` None: the entry of the namespaces this node does not
/// know (NodeLen only).
fn ioam_entry(node: &IoamNode, ns: Option<u16>, egress: IfIds) -> IoamEntry {
    let ctx = FillContext {
        hop_limit: 0,
        ingress: IfIds { id: 0, wide: 0 },
        egress,
        ts_ns: 0,
    };
    let data = ns.and_then(|ns| node.node_data(ns, &ctx));
    let mut e = IoamEntry {
        refuse: 0,
        known: u16::from(data.is_some()),
        ext: 0,
        len: [0; IOAM_BITS],
        nl: [0; IOAM_BITS],
        code: [0; IOAM_BITS],
        pat: [0; IOAM_BITS],
        at: [0; IOAM_BITS],
        data: [0; IOAM_DATA],
    };
    let mut at = 0;
    for k in 0..IOAM_BITS {
        let bit = 1u32 << (IOAM_BITS - 1 - k);
        e.nl[k] = ioam::node_len_for_type(bit);
        let Some(d) = &data else { continue };
        let n = 4 * ioam::block_words(bit, d.schema.map(|(_, s)| s.len()));
        let f = ioam::node_field_offsets(bit);
        e.at[k] = at as u16;
        if f.ts_sec.is_some() || f.ts_frac.is_some() || at + n > IOAM_DATA {
            // The driver has no clock the worker's receive time matches; an opaque state longer than the entry
            // holds is longer than any trace's free space (61 words), so its length (capped at 63 words) still
            // decides the Overflow flag.
            e.refuse |= bit;
            e.len[k] = n.min(252) as u8;
            continue;
        }
        ioam::write_node(&mut e.data[at..at + n], bit, d);
        e.len[k] = n as u8;
        let patch = [
            (f.hop_limit[0].or(f.hop_limit[1]), OP_HLIM),
            (f.ingress_id, OP_ING16),
            (f.ingress_wide, OP_ING32),
        ];
        if let Some((p, code)) = patch.into_iter().find_map(|(p, c)| Some((p?, c))) {
            e.code[k] = code;
            e.pat[k] = p as u8;
        }
        at += n;
    }
    // The longest field (the only one that may exceed 8 bytes).
    e.ext = (0..IOAM_BITS).max_by_key(|&k| e.len[k]).unwrap_or(0) as u16;
    e
}

/// The maps' contents for `snap`: its main table's IPv6 routes, their plans, and its own addresses.
pub fn tables(snap: &Snapshot) -> Tables {
    let mut t = Tables {
        ioam: ioam_entries(snap),
        ..Tables::default()
    };
    // Snapshot plan id -> slot (plans are shared by routes).
    let mut slots: HashMap<u32, Result<u32, Why>> = HashMap::new();
    let mut last: Option<Ipv6Net> = None;
    let mut dt6 = std::collections::BTreeSet::new();
    for r in snap.fib().routes_v6() {
        let IpNet::V6(net) = r.prefix else { continue };
        // Lowest metric first within a prefix: the first is the one lookups find.
        if last == Some(net) {
            continue;
        }
        last = Some(net);
        let slot = match r.plan {
            None => match unplanned(snap, r) {
                Unplanned::Dt6(e, table) => {
                    t.plans.push(e);
                    dt6.insert(table);
                    Ok(t.plans.len() as u32 - 1)
                }
                Unplanned::Way(w) => {
                    t.ways6.push(net);
                    w.map(|e| {
                        t.plans.push(e);
                        t.plans.len() as u32 - 1
                    })
                }
                Unplanned::No(why) => Err(why),
            },
            Some(id) => *slots.entry(id).or_insert_with(|| {
                let plan = snap.plan(id).ok_or(Why::NoPlan)?;
                let e = plan_entry(snap, plan, snap.template(plan))?;
                t.plans.push(e);
                Ok(t.plans.len() as u32 - 1)
            }),
        };
        t.routes.push((net, route_value(slot)));
    }
    // The router's own addresses: delivered locally, by the worker (lwt6's fast path checks them too).
    for l in &snap.links {
        for (a, _) in &l.addrs6 {
            let net = Ipv6Net::new(*a, 128).expect("a /128");
            replace_or_push(&mut t.routes, |(n, _)| *n == net, (net, LOCAL));
        }
    }
    encap::fill_ipv4(snap, &mut t);
    // The tables End.DT6 looks up: their plain routes with plans of their own (the snapshot plans the main table
    // only), the others to the worker, and the router's addresses.
    for table in dt6 {
        let Some(fib) = snap.table(table) else {
            continue;
        };
        let mut last: Option<Ipv6Net> = None;
        for r in fib.routes_v6() {
            let IpNet::V6(net) = r.prefix else { continue };
            if last == Some(net) {
                continue;
            }
            last = Some(net);
            let value = push_plan(&mut t.plans, forward_entry(snap, r));
            t.table_routes.push((table, net, value));
        }
        for l in &snap.links {
            for (a, _) in &l.addrs6 {
                let net = Ipv6Net::new(*a, 128).expect("a /128");
                replace_or_push(
                    &mut t.table_routes,
                    |(tb, n, _)| *tb == table && *n == net,
                    (table, net, LOCAL),
                );
            }
        }
    }
    t
}

/// How the driver serves a route the fast path has no plan for.
pub(crate) enum Unplanned {
    /// End.DT6: its entry, looking up the table given.
    Dt6(PlanEntry, u32),
    /// seg6 l2encap or l2encap.red, planned for the driver alone ([`encap::way_entry`]): its entry, or why it
    /// has none. It follows the route to its first SID, which only a full installation recomputes.
    Way(Result<PlanEntry, Why>),
    /// Neither (or an End.DT6 the driver cannot run): why its frames go to the worker.
    No(Why),
}

/// The driver's entry for route `r`, which has no snapshot plan.
pub(crate) fn unplanned(snap: &Snapshot, r: &RouteEntry) -> Unplanned {
    match dt6_table(snap, r) {
        Some(Ok(table)) => Unplanned::Dt6(dt6_entry(table), table),
        Some(Err(why)) => Unplanned::No(why),
        None => match encap::way_entry(snap, r) {
            Err(Why::Kind) => Unplanned::No(Why::NoPlan),
            w => Unplanned::Way(w),
        },
    }
}

/// The table of an End.DT6 route the driver executes (`table T`, else `vrftable T`, else main, as the worker
/// does); `Err` for one with counters or flavours; None for other routes.
pub(crate) fn dt6_table(snap: &Snapshot, r: &RouteEntry) -> Option<Result<u32, Why>> {
    let Some(Tunnel::Local(l)) = r.tunnel.get().map(|t| &snap.tunnels[t]) else {
        return None;
    };
    if !matches!(l.spec.action, Seg6LocalAction::EndDt6) {
        return None;
    }
    if l.spec.count || l.spec.flavors.is_some() {
        return Some(Err(Why::Kind));
    }
    Some(Ok(l.spec.table.or(l.spec.vrftable).unwrap_or(MAIN_TABLE)))
}

/// The driver's End.DT6 plan for `table`: no template of its own (the way out is the plan of the inner
/// destination's route in the table).
pub(crate) fn dt6_entry(table: u32) -> PlanEntry {
    PlanEntry {
        egress: 0,
        max_len: 0,
        tlen: 0,
        skip: 0,
        growth: 0,
        kind: Kind::EndDt6 as u8,
        nops: 0,
        flags: F_DECAP | F_TABLE,
        table: u32::from_ne_bytes(table.to_be_bytes()),
        ops: [Op::default(); OPS_MAX],
        tpl: [0; TPL_MAX],
    }
}

/// The plain-forwarding plan of a route of a table other than the snapshot's planned one, as the snapshot plans a
/// gateway route (`Snapshot::plan_for`): the Ethernet header to the gateway's address (a static or not stale
/// neighbour), the hop limit, the route's MTU or the device's.
fn forward_entry(snap: &Snapshot, r: &RouteEntry) -> Result<PlanEntry, Why> {
    if r.tunnel.get().is_some() {
        return Err(Why::Kind);
    }
    let (Some(dev), Some(IpAddr::V6(gw))) = (r.dev.get(), r.via) else {
        return Err(Why::NoPlan);
    };
    let link = snap.links.get(dev).ok_or(Why::NoPlan)?;
    let mac = match snap.neighbour(dev, IpAddr::V6(gw)) {
        Some((m, false)) => m,
        _ => return Err(Why::NoPlan),
    };
    let mtu = r.mtu.map_or(link.mtu, |m| m.value.min(link.mtu)) as usize;
    let mut e = PlanEntry {
        egress: dev as u32,
        max_len: mtu.min(H + usize::from(u16::MAX)) as u32,
        tlen: E as u16,
        skip: 0,
        growth: 0,
        kind: Kind::Forward as u8,
        nops: 1,
        flags: F_PLAIN,
        table: 0,
        ops: [Op::default(); OPS_MAX],
        tpl: [0; TPL_MAX],
    };
    e.ops[0] = Op {
        code: OP_HLIM,
        at: (E + 7) as u16,
        ..Op::default()
    };
    e.tpl[..6].copy_from_slice(&mac);
    e.tpl[6..12].copy_from_slice(&link.mac);
    e.tpl[12..14].copy_from_slice(&[0x86, 0xdd]);
    Ok(e)
}

/// The port entry of a link: its MAC, its longest frame (MTU + 18, as lwt6's fast path), its IOAM ids, and
/// `headroom`.
pub fn port_entry(link: &Link, headroom: u16) -> PortEntry {
    PortEntry {
        mac: link.mac,
        headroom,
        max_frame: link.mtu + 18,
        ioam_wide: link.sysctl.ioam6_id_wide,
        ioam_id: link.sysctl.ioam6_id,
        flags: if link.sysctl.seg6_require_hmac > 0 {
            P_REQUIRE_HMAC
        } else {
            0
        } | if link.sysctl.ioam6_enabled {
            P_IOAM_ENABLED
        } else {
            0
        },
    }
}
