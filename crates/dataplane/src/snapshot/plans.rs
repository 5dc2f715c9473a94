//! The forwarding plans of a snapshot's routes: what the fast path writes for each (template, next hop, MTU),
//! and how they follow neighbour and route changes.

use super::{PlanKey, Snapshot};
use crate::fib::{DevId, FastBuild, Fib, OptId, RouteEntry, RouteId, TunnelId};
use crate::hop::ioam::{IfIds, NO_IF};
use crate::plan::{
    IOAM_PATCH_MAX, IoamField, IoamPatch, Plan, PlanKind, Sampled, TemplatesBuilder,
};
use crate::spec::{IoamMode, Seg6LocalAction, Seg6Mode};
use crate::tunnel::{InputTunnel, Ioam6Tunnel, OutputTunnel, Tunnel};
use crate::wire::ethernet::{self, EthernetRepr, Mac};
use crate::wire::ipv6;
use ipnet::IpNet;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};

impl Snapshot {
    /// A forwarding [`Plan`] for every IPv6 route whose way out does not depend on the packet (see [`PlanKind`]):
    /// a gateway route with a known neighbour (plain forwarding); a seg6 `encap` / `encap.red`, seg6 `inline`
    /// without HMAC, or `rpl` route whose new destination resolves, with no further tunnel, to a known neighbour;
    /// an ioam6 route inserting on every packet (`freq` K/K) with a known neighbour. Everything else takes the
    /// general path.
    pub(super) fn plan_all(&mut self) {
        let mut keys = std::mem::take(&mut self.plan_keys);
        let mut plans = std::mem::take(&mut self.plans);
        let mut log = std::mem::take(&mut self.template_log);
        let ids: Vec<Option<u32>> = self
            .fib
            .routes()
            .iter()
            .map(|r| self.plan_of(r, &mut keys, &mut plans, &mut log))
            .collect();
        self.fib.assign_plans(&ids);
        // Room for templates added later: a quarter more.
        self.templates = log.materialize(log.len() / 4 + crate::buffer::PAGE);
        for p in &mut plans {
            p.template = self.templates.rebase(p.template);
        }
        self.plan_keys = keys;
        self.plans = plans;
        self.template_log = log;
        self.index_all_tunnel_deps();
        self.index_gateway_keys();
    }

    /// The plan of route `r`, shared with the routes that agree on what it depends on ([`PlanKey`]); new plans
    /// are pushed on `plans` with builder-relative template references.
    fn plan_of(
        &self,
        r: &RouteEntry,
        keys: &mut HashMap<PlanKey, Option<u32>, FastBuild>,
        plans: &mut Vec<Plan>,
        log: &mut TemplatesBuilder,
    ) -> Option<u32> {
        if !r.prefix.addr().is_ipv6() || matches!(r.origin, crate::fib::Origin::Reject(_)) {
            return None;
        }
        let key = self.plan_key(r);
        let contains_local = key.4;
        *keys.entry(key).or_insert_with(|| {
            let p = self.plan_for(&self.fib, r, contains_local, log)?;
            plans.push(p);
            Some(plans.len() as u32 - 1)
        })
    }

    /// What the plan of route `r` depends on: its tunnel, device, gateway, MTU, and whether one of our addresses
    /// is inside its prefix. A tunnel route's key is its own (no other route carries its tunnel).
    pub(super) fn plan_key(&self, r: &RouteEntry) -> PlanKey {
        let contains_local = self
            .local6
            .iter()
            .any(|a| r.prefix.contains(&IpAddr::V6(*a)));
        (r.tunnel.get(), r.dev.get(), r.via, r.mtu, contains_local)
    }

    /// Plans route `id` after a change: a plain route shares the plan its key names (made now if no route has it
    /// yet); a tunnel route, whose tunnel's destination may route differently now, gets its plan made anew, in
    /// its old slot when it had one. A new template goes into the block's room (or into a bigger block).
    pub(super) fn plan_route(&mut self, id: RouteId) {
        self.routes_planned += 1;
        let Some(r) = self.fib.routes().get(id as usize).cloned() else {
            return;
        };
        let mut keys = std::mem::take(&mut self.plan_keys);
        let mut plans = std::mem::take(&mut self.plans);
        let mut log = std::mem::take(&mut self.template_log);
        let (placed, before) = (log.len(), plans.len());
        if r.tunnel.get().is_some() {
            // The tunnel is this route's alone, so is its key: forget it, and the plan is made anew.
            keys.remove(&self.plan_key(&r));
        }
        let mut now = self.plan_of(&r, &mut keys, &mut plans, &mut log);
        self.place_templates(&log, placed, &mut plans[..before]);
        if plans.len() > before {
            let mut p = plans.pop().expect("made just now");
            if (p.template.start_offset() as usize) < placed {
                // Space a released template left (or a template already there): the block gets its bytes.
                log.write_back(&mut self.templates, p.template);
            }
            p.template = self.templates.rebase(p.template);
            let slot = match r.plan {
                Some(o) => {
                    // The route's old plan goes, and its template with it (unless another plan shares it).
                    log.release(self.templates.unbase(plans[o as usize].template));
                    plans[o as usize] = p;
                    o
                }
                None => match self.free_plans.pop() {
                    Some(o) => {
                        plans[o as usize] = p;
                        o
                    }
                    None => {
                        plans.push(p);
                        plans.len() as u32 - 1
                    }
                },
            };
            let key = (r.tunnel.get(), r.dev.get(), r.via, r.mtu, p.contains_local);
            keys.insert(key, Some(slot));
            now = Some(slot);
        }
        self.plan_keys = keys;
        self.plans = plans;
        self.template_log = log;
        self.fib.set_plan(id, now);
        if let Some(t) = r.tunnel.get() {
            self.note_tunnel_deps(t);
        } else if r.prefix.addr().is_ipv6() {
            let key = self.plan_key(&r);
            self.note_gateway_key(&r, key);
        }
    }

    /// Copies the templates `log` placed after its first `placed` bytes into the block, or, when the block has no
    /// room left, makes a bigger one and moves the references of the plans already there (`placed_plans`).
    fn place_templates(
        &mut self,
        log: &TemplatesBuilder,
        placed: usize,
        placed_plans: &mut [Plan],
    ) {
        if log.len() <= placed {
            return;
        }
        if self.templates.room(log.len()) {
            log.sync(&mut self.templates, placed);
        } else {
            let bigger = log.materialize(log.len() / 2 + crate::buffer::PAGE);
            for p in placed_plans {
                p.template = bigger.move_from(&self.templates, p.template);
            }
            self.templates = bigger;
        }
    }

    /// The link-layer address a plan may use for neighbour `nh` on `dev`: the static entry, else a learned one
    /// the neighbour table vouches for (REACHABLE: not stale). A STALE entry is left to the general path, which
    /// reports its use so that the control thread probes it.
    pub(super) fn plan_neighbour(&self, dev: DevId, nh: Ipv6Addr) -> Option<Mac> {
        if let Some(m) = self.neigh6.get(&(dev, nh)) {
            return Some(*m);
        }
        self.dyn6
            .get(&(dev, nh))
            .filter(|n| !n.stale)
            .map(|n| n.mac)
    }

    /// Plans again what depends on learned neighbour `nh` on `dev` after it came, changed its address or state,
    /// or went: the gateway routes through it (their shared plan is made anew in its slot, or dropped and its
    /// slot freed when the neighbour is no longer vouched for), and the tunnel routes whose destination routes
    /// through it or is it. Nothing changes where a static entry for it wins. Cost: one pass over the route slots
    /// (neighbour changes are rare: learning, REACHABLE ↔ STALE, forgetting).
    pub(super) fn replan_neighbour(&mut self, dev: DevId, nh: Ipv6Addr) {
        if self.neigh6.contains_key(&(dev, nh)) {
            return;
        }
        self.replan_gateway(dev, nh);
    }

    /// Plans again what depends on neighbour `nh` on `dev`, whichever entry (static or learned) now gives its
    /// address: [`Snapshot::replan_neighbour`] without the check that a static entry wins.
    pub(super) fn replan_gateway(&mut self, dev: DevId, nh: Ipv6Addr) {
        // The routes through it (the gateway index, not a pass over the table), tunnel routes too: an ioam6 inline
        // plan (and a sampled one's plain way) leaves by the route's own gateway.
        let gateway: Vec<(RouteId, IpNet, Option<u32>)> = self
            .routes_via(dev, nh)
            .into_iter()
            .filter_map(|id| self.fib.route(id).map(|r| (id, r.prefix, r.plan)))
            .collect();
        // Their shared plans' keys name the neighbour: forget them, so the first route plans anew (in its old slot).
        for k in self.take_gateway_keys(dev, nh) {
            self.plan_keys.remove(&k);
        }
        let old: std::collections::BTreeSet<u32> = gateway.iter().filter_map(|g| g.2).collect();
        for (id, _, _) in &gateway {
            self.plan_route(*id);
        }
        // A slot none of them uses any more (the neighbour is not vouched for now) is freed with its template.
        for o in old {
            let used = gateway
                .iter()
                .any(|(id, _, _)| self.fib.routes()[*id as usize].plan == Some(o));
            if !used {
                let t = self.templates.unbase(self.plans[o as usize].template);
                self.template_log.release(t);
                self.free_plans.push(o);
            }
        }
        for (_, prefix, _) in &gateway {
            self.replan_within(*prefix);
        }
        self.replan_within(IpNet::V6(ipnet::Ipv6Net::from(nh)));
    }

    /// Plans again every tunnel route whose tunnel routes towards a destination inside `prefix` (after a route
    /// for `prefix` came or went).
    pub(super) fn replan_within(&mut self, prefix: IpNet) {
        let IpNet::V6(p) = prefix.trunc() else {
            return;
        };
        let lo = u128::from(p.network());
        let hi = u128::from(p.broadcast());
        let routes: Vec<RouteId> = self
            .tunnel_dsts
            .range(lo..=hi)
            .flat_map(|(_, tids)| tids.iter().map(|t| self.tunnel_route[*t]))
            .collect();
        for id in routes {
            self.plan_route(id);
        }
    }

    /// The prefixes of the main table's tunnel routes whose tunnel routes towards a destination inside `prefix`:
    /// the routes whose plans a change of `prefix`'s route makes anew (see `replan_within`), for a follower of
    /// the changes (the XDP tier).
    pub fn tunnel_routes_within(&self, prefix: IpNet) -> Vec<IpNet> {
        let IpNet::V6(p) = prefix.trunc() else {
            return Vec::new();
        };
        let (lo, hi) = (u128::from(p.network()), u128::from(p.broadcast()));
        self.tunnel_dsts
            .range(lo..=hi)
            .flat_map(|(_, tids)| tids.iter().map(|t| self.tunnel_route[*t]))
            .filter(|id| self.fib.is_live(*id))
            .filter_map(|id| self.fib.route(id).map(|r| r.prefix))
            .collect()
    }

    fn plan_for(
        &self,
        fib: &Fib,
        r: &RouteEntry,
        contains_local: bool,
        templates: &mut TemplatesBuilder,
    ) -> Option<Plan> {
        const E: usize = ethernet::HEADER_LEN;
        const H: usize = ipv6::HEADER_LEN;
        // The way out along `route` towards `dst` (the gateway, or `dst` itself on a connected route; `None` when
        // that is the packet's own destination): egress, Ethernet header, MTU.
        let hop = |route: &RouteEntry, dst: Option<Ipv6Addr>| -> Option<(DevId, Vec<u8>, usize)> {
            let dev = route.dev.get()?;
            let nh = match route.via {
                Some(IpAddr::V6(gw)) => gw,
                Some(IpAddr::V4(_)) => return None,
                None => dst?,
            };
            let mut eth = vec![0u8; E];
            EthernetRepr {
                dst: self.plan_neighbour(dev, nh)?,
                src: self.links[dev].mac,
                ethertype: ethernet::ETHERTYPE_IPV6,
            }
            .emit(&mut eth);
            let link = self.links[dev].mtu;
            let mtu = route.mtu.map_or(link, |m| m.value.min(link)) as usize;
            Some((dev, eth, mtu))
        };
        // The route to a tunnel's new destination, when no other tunnel applies there.
        let next_route = |tid: TunnelId, dst: Ipv6Addr| {
            fib.lookup_v6(dst)
                .filter(|n| n.tunnel.get().is_none_or(|t| t == tid))
        };
        // `sourced`: the template holds the node's tunnel source ([`TemplatesBuilder::add_sourced`]).
        let mut make = |kind,
                        (egress, mut template, mtu): (DevId, Vec<u8>, usize),
                        rest: &[u8],
                        growth,
                        sourced: bool| {
            template.extend_from_slice(rest);
            Plan {
                egress,
                // A Payload Length field describes at most 65,535 bytes.
                max_len: mtu.min(H + u16::MAX as usize),
                template: if sourced {
                    templates.add_sourced(&template, r.dev.get())
                } else {
                    templates.add(&template)
                },
                kind,
                growth,
                tunnel: r.tunnel.get(),
                route_dev: r.dev.get(),
                contains_local,
                ioam: IoamPatch::default(),
                sampled: None,
                rpl_tail: (0, 0),
            }
        };
        let Some(tid) = r.tunnel.get() else {
            return Some(make(PlanKind::Forward, hop(r, None)?, &[], 0, false));
        };
        // Each tunnel builds its own template; the plan adds the way out in front of it.
        match &self.tunnels[tid] {
            Tunnel::Input(InputTunnel::Seg6(s)) => match s.mode {
                // Whatever `seg6_flowlabel`: with 1 (a hash of the flow in the outer flow label) the fast path
                // leaves the packet to the general path, so that the sysctl changes no plan.
                Seg6Mode::Encap | Seg6Mode::EncapRed => {
                    let next = next_route(tid, s.first_sid)?;
                    let way = hop(next, Some(s.first_sid))?;
                    let src = s
                        .tunsrc
                        .or(self.tunsrc)
                        .or_else(|| self.source_for(r.dev.get(), &s.first_sid))?;
                    let hmac = match s.hmac_key {
                        Some(k) => Some(self.hmac.get(&k)?),
                        None => None,
                    };
                    let t = s.encap_template(src, hmac)?;
                    // The node's source (not the tunnel's own, signed by no HMAC): rewritten in place when
                    // `sr tunsrc` changes ([`Snapshot::apply_settings`]).
                    let sourced = s.tunsrc.is_none() && hmac.is_none();
                    Some(make(PlanKind::Seg6Encap, way, &t, t.len(), sourced))
                }
                Seg6Mode::Inline => {
                    let t = s.inline_template()?;
                    let next = next_route(tid, s.first_sid)?;
                    let way = hop(next, Some(s.first_sid))?;
                    Some(make(PlanKind::Seg6Inline, way, &t, t.len() - H, false))
                }
                _ => None,
            },
            Tunnel::Input(InputTunnel::Rpl(p)) => {
                let next = next_route(tid, p.segs[0])?;
                let way = hop(next, Some(p.segs[0]))?;
                let fixed = match r.prefix {
                    IpNet::V6(n) => p.fixed_header(n.network(), n.prefix_len()),
                    IpNet::V4(_) => None,
                };
                match fixed {
                    // Every destination of the route compresses alike: the whole header goes in the template.
                    Some((rh, tail_at, ce)) => {
                        let mut tpl = p.template().to_vec();
                        tpl.extend_from_slice(&rh);
                        let mut plan = make(PlanKind::RplFixed, way, &tpl, rh.len(), false);
                        plan.rpl_tail = (tail_at, ce);
                        Some(plan)
                    }
                    None => Some(make(PlanKind::Rpl, way, &p.template(), 0, false)),
                }
            }
            Tunnel::Output(OutputTunnel::Ioam6(t)) => {
                // A route tracing only some packets: the others leave along the route itself.
                let sampled = if t.inserts_always() {
                    None
                } else {
                    let (egress, eth, mtu) = hop(r, None)?;
                    Some(Sampled {
                        tunnel: u32::try_from(tid).ok()?,
                        k: t.freq_k,
                        n: t.freq_n,
                        egress: u32::try_from(egress).ok()?,
                        eth: eth.try_into().ok()?,
                        max_len: mtu.min(H + u16::MAX as usize) as u32,
                    })
                };
                let plan = match t.effective_mode() {
                    IoamMode::Inline => {
                        let way = hop(r, None)?;
                        let mut tpl = t.inline_template()?;
                        let patch = self.ioam_patch(t, &mut tpl[H..], r.dev.get());
                        let mut p = make(PlanKind::IoamInline, way, &tpl, t.hbh_len, false);
                        p.ioam = patch;
                        Some(p)
                    }
                    _ => {
                        let tundst = t.tundst?;
                        let next = next_route(tid, tundst)?;
                        let way = hop(next, Some(tundst))?;
                        let src = t
                            .tunsrc
                            .or_else(|| self.tunnel_source(tid, r.dev.get(), &tundst))?;
                        let mut tpl = t.encap_template(src)?;
                        let patch = self.ioam_patch(t, &mut tpl[H..], r.dev.get());
                        let mut p = make(PlanKind::IoamEncap, way, &tpl, tpl.len(), false);
                        p.ioam = patch;
                        Some(p)
                    }
                };
                plan.map(|p| Plan { sampled, ..p })
            }
            // End, End.X and End.DX6 without flavours and counters have plans; other local SIDs take the general
            // path.
            Tunnel::Local(l) => {
                if l.spec.count || l.spec.flavors.is_some() {
                    return None;
                }
                let towards_nh6 = || -> Option<(DevId, Vec<u8>, usize)> {
                    let nh = l.spec.nh6.filter(|a| !a.is_unspecified())?;
                    // The neighbour is nh6 itself unless the route to it has a gateway (out of oif when given).
                    let base = match l.oif {
                        Some(d) => RouteEntry {
                            dev: OptId::new(Some(d)),
                            via: Some(IpAddr::V6(nh)),
                            mtu: None,
                            ..r.clone()
                        },
                        None => {
                            let n = fib.lookup_v6(nh)?;
                            if n.tunnel.get().is_some() {
                                return None;
                            }
                            RouteEntry {
                                via: Some(n.via.unwrap_or(IpAddr::V6(nh))),
                                ..n.clone()
                            }
                        }
                    };
                    hop(&base, None)
                };
                match l.spec.action {
                    // The way out is the next SID's route's plan, found per packet.
                    Seg6LocalAction::End => Some(make(
                        PlanKind::End,
                        (r.dev.get()?, Vec::new(), 0),
                        &[],
                        0,
                        false,
                    )),
                    Seg6LocalAction::EndX => {
                        Some(make(PlanKind::EndX, towards_nh6()?, &[], 0, false))
                    }
                    Seg6LocalAction::EndDx6 => {
                        Some(make(PlanKind::EndDx6, towards_nh6()?, &[], 0, false))
                    }
                    _ => None,
                }
            }
        }
    }

    /// Bakes this node's data into the Hop-by-Hop header `hbh` of an ioam6 plan's template (which sits behind an
    /// Ethernet and an IPv6 header in the frame) and says what is left to write per packet; leaves `hbh` as it is
    /// (the traces filled per packet) when that is more than [`IOAM_PATCH_MAX`] fields.
    fn ioam_patch(&self, t: &Ioam6Tunnel, hbh: &mut [u8], route_dev: Option<DevId>) -> IoamPatch {
        let egress = route_dev.map_or(NO_IF, |d| IfIds::of(&self.links[d].sysctl));
        let mut copy = hbh.to_vec();
        let Some(found) = self.ioam.bake(&mut copy, &t.opt_offsets, egress) else {
            return IoamPatch::default();
        };
        if found.len() > IOAM_PATCH_MAX {
            return IoamPatch::default();
        }
        hbh.copy_from_slice(&copy);
        let mut p = IoamPatch {
            baked: true,
            n: found.len() as u8,
            ..IoamPatch::default()
        };
        for (i, (at, what)) in found.into_iter().enumerate() {
            p.at[i] = (ethernet::HEADER_LEN + ipv6::HEADER_LEN + at) as u16;
            p.what[i] = what;
            p.has_ts |= matches!(what, IoamField::TsSec | IoamField::TsFrac);
        }
        p
    }
}
