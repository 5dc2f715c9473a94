//! Dependency indexes of a snapshot: what a control line other than a route line reaches, found without a pass
//! over the routes.
//!
//! - **Settings → tunnels.** A tunnel's plan depends on the node's settings (`sysctl`, `ioam`, `sr` lines) only
//!   once its way out is known: a seg6 `encap`/`encap.red` tunnel whose first segment routes to a known neighbour
//!   (its template holds the outer source and the HMAC; `seg6_flowlabel` is read per packet, not planned), and
//!   every ioam6 tunnel (node and interface ids,
//!   namespaces baked into its template; ioam6 routes are few). A tunnel whose way out is unknown has no plan
//!   whatever the settings; when its way out becomes known, a route or neighbour change plans it again
//!   ([`Snapshot::plan_route`]), which puts it here. So a settings change looks at these tunnels alone.
//! - **Gateway → routes.** Per gateway (device, IPv6 address), the routes of the main table through it, and the
//!   plan keys of the plain ones (their shared plans carry its link-layer address): a neighbour that comes,
//!   changes or goes plans again these routes alone (and the tunnels routed into their prefixes), not a pass
//!   over the table. The list keeps a removed route's id until it is compacted (when it holds twice the live
//!   routes); readers skip ids that are gone or reused by another route. 4 bytes per gateway route.
//! - **Gateways of routes configured without a device.** Such a route's device is the connected network of its
//!   gateway, looked up when it is added; an `addr add` whose prefix holds one of these gateways could change it,
//!   and is then left to a rebuild. The set only grows (a deleted route does not say whether it named a device);
//!   a rebuild starts it anew.

use super::{NO_ROUTE, PlanKey, Snapshot};
use crate::fib::{DevId, FastBuild, RouteEntry, RouteId, TunnelId};
use crate::spec::Seg6Mode;
use crate::tunnel::{InputTunnel, OutputTunnel, Tunnel};
use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, Ipv6Addr};

/// The indexes (see the module's text).
#[derive(Debug, Clone, Default)]
pub(super) struct Deps {
    /// Seg6 tunnels carried by a route of the main table whose plan depends on the node's settings.
    seg6: HashSet<TunnelId, FastBuild>,
    /// Those of `seg6` that sign with an HMAC key (a new key or a new source makes their template anew).
    seg6_hmac: HashSet<TunnelId, FastBuild>,
    /// Those of `seg6` without a plan (no source selected, no such key): a tunnel source set may plan them.
    seg6_unplanned: HashSet<TunnelId, FastBuild>,
    /// Ioam6 tunnels carried by a route of the main table (their plans depend on the IOAM settings).
    ioam: HashSet<TunnelId, FastBuild>,
    /// Gateways of routes configured without `dev` (every table).
    pub(super) via_only: HashSet<IpAddr, FastBuild>,
    /// Per gateway: the routes of the main table through it.
    gateways: HashMap<(DevId, Ipv6Addr), GatewayRoutes, FastBuild>,
    /// Per gateway: the plan keys of the plain routes through it.
    gateway_keys: HashMap<(DevId, Ipv6Addr), HashSet<PlanKey, FastBuild>, FastBuild>,
}

/// The routes through one gateway: ids, some perhaps gone (see the module's text), and how many are live.
#[derive(Debug, Clone, Default)]
struct GatewayRoutes {
    ids: Vec<RouteId>,
    live: usize,
}

/// The gateway a route goes through, when it has one (an IPv6 `via` and a device).
fn gateway_of(r: &RouteEntry) -> Option<(DevId, Ipv6Addr)> {
    match (r.dev.get(), r.via) {
        (Some(d), Some(IpAddr::V6(gw))) => Some((d, gw)),
        _ => None,
    }
}

impl Snapshot {
    /// Whether the plan of tunnel `tid` depends on the node's settings now (see the module's text).
    fn depends_on_settings(&self, tid: TunnelId) -> bool {
        match &self.tunnels[tid] {
            Tunnel::Input(InputTunnel::Seg6(s)) => {
                matches!(s.mode, Seg6Mode::Encap | Seg6Mode::EncapRed)
                    && self.way_known(tid, s.first_sid)
            }
            Tunnel::Output(OutputTunnel::Ioam6(_)) => true,
            _ => false,
        }
    }

    /// Whether tunnel `tid`'s packets towards `dst` leave to a neighbour a plan may use: the way out its plan
    /// needs before any setting is read (`plan_for`'s `next_route` and `hop`).
    fn way_known(&self, tid: TunnelId, dst: Ipv6Addr) -> bool {
        let Some(next) = self
            .fib
            .lookup_v6(dst)
            .filter(|n| n.tunnel.get().is_none_or(|t| t == tid))
        else {
            return false;
        };
        let Some(dev) = next.dev.get() else {
            return false;
        };
        let nh = match next.via {
            Some(IpAddr::V6(gw)) => gw,
            Some(IpAddr::V4(_)) => return false,
            None => dst,
        };
        self.plan_neighbour(dev, nh).is_some()
    }

    /// Files tunnel `tid` (just planned) under the settings its plan depends on, or takes it out.
    pub(super) fn note_tunnel_deps(&mut self, tid: TunnelId) {
        self.forget_tunnel_deps(tid);
        if self.depends_on_settings(tid) {
            match &self.tunnels[tid] {
                Tunnel::Output(_) => {
                    self.deps.ioam.insert(tid);
                }
                Tunnel::Input(InputTunnel::Seg6(s)) => {
                    self.deps.seg6.insert(tid);
                    if s.hmac_key.is_some() {
                        self.deps.seg6_hmac.insert(tid);
                    }
                    let planned = self
                        .fib
                        .route(self.tunnel_route[tid])
                        .is_some_and(|r| r.plan.is_some());
                    if !planned {
                        self.deps.seg6_unplanned.insert(tid);
                    }
                }
                _ => {}
            }
        }
    }

    /// Takes tunnel `tid` (released) out of the indexes.
    pub(super) fn forget_tunnel_deps(&mut self, tid: TunnelId) {
        self.deps.seg6.remove(&tid);
        self.deps.seg6_hmac.remove(&tid);
        self.deps.seg6_unplanned.remove(&tid);
        self.deps.ioam.remove(&tid);
    }

    /// After a build: files every tunnel of the main table.
    pub(super) fn index_all_tunnel_deps(&mut self) {
        self.deps.seg6.clear();
        self.deps.seg6_hmac.clear();
        self.deps.seg6_unplanned.clear();
        self.deps.ioam.clear();
        for tid in 0..self.tunnels.len() {
            if self.tunnel_route[tid] != NO_ROUTE {
                self.note_tunnel_deps(tid);
            }
        }
    }

    /// Follows the settings' change in the plans that depend on them: the tunnel source (`tunsrc`: the new one,
    /// when it changed), the HMAC keys set, changed or gone (`keys`), the IOAM ids and namespaces (`ioam`). Each
    /// index is looked at only when its settings changed.
    ///
    /// A new tunnel source rewrites the sourced templates in place (the outer source of every seg6 encap plan
    /// whose tunnel names none of its own and signs nothing: one store per distinct template, no plan made
    /// again); only the tunnels it signs for (HMAC) and those without a plan (no source could be selected) are
    /// planned again. Going back to selected sources (`sr tunsrc set ::`) plans every seg6 tunnel of the index
    /// again (each selects its own).
    pub(super) fn replan_settings_deps(
        &mut self,
        tunsrc: Option<Option<Ipv6Addr>>,
        keys: &[u32],
        ioam: bool,
    ) {
        let mut tids: Vec<TunnelId> = Vec::new();
        let own_source =
            |t: &Tunnel| matches!(t, Tunnel::Input(InputTunnel::Seg6(s)) if s.tunsrc.is_some());
        match tunsrc {
            None => {}
            Some(Some(src)) => {
                self.template_log.set_source(&mut self.templates, src);
                tids.extend(
                    self.deps
                        .seg6_hmac
                        .iter()
                        .chain(&self.deps.seg6_unplanned)
                        .filter(|t| !own_source(&self.tunnels[**t])),
                );
            }
            Some(None) => tids.extend(
                self.deps
                    .seg6
                    .iter()
                    .filter(|t| !own_source(&self.tunnels[**t])),
            ),
        }
        if !keys.is_empty() {
            tids.extend(self.deps.seg6_hmac.iter().filter(|t| {
                matches!(&self.tunnels[**t],
                    Tunnel::Input(InputTunnel::Seg6(s)) if s.hmac_key.is_some_and(|k| keys.contains(&k)))
            }));
        }
        if ioam {
            tids.extend(&self.deps.ioam);
        }
        let mut routes: Vec<RouteId> = tids.into_iter().map(|t| self.tunnel_route[t]).collect();
        routes.retain(|r| *r != NO_ROUTE);
        // In route order: the same order whatever the sets', so that plan slots are reused alike.
        routes.sort_unstable();
        routes.dedup();
        for id in routes {
            self.plan_route(id);
        }
    }

    /// The tunnels of the settings index whose plan holds no sourced template: seg6 tunnels signing with an HMAC
    /// key or without a plan, and ioam6 tunnels (perhaps twice).
    pub(super) fn unsourced_deps(&self) -> impl Iterator<Item = TunnelId> + '_ {
        self.deps
            .seg6_hmac
            .iter()
            .chain(&self.deps.seg6_unplanned)
            .chain(&self.deps.ioam)
            .copied()
    }

    /// The tunnels of the settings index (their plan depends on the settings or on the source they select).
    pub(super) fn settings_deps(&self) -> impl Iterator<Item = TunnelId> + '_ {
        self.deps.seg6.iter().chain(&self.deps.ioam).copied()
    }

    /// Files route `id` of the main table (just inserted) under its gateway.
    pub(super) fn note_gateway_route(&mut self, id: RouteId) {
        let Some(g) = self.fib.route(id).and_then(gateway_of) else {
            return;
        };
        let e = self.deps.gateways.entry(g).or_default();
        e.ids.push(id);
        e.live += 1;
    }

    /// Takes removed route `r` of the main table out of its gateway's list (lazily: see the module's text).
    pub(super) fn forget_gateway_route(&mut self, r: &RouteEntry) {
        let Some(g) = gateway_of(r) else {
            return;
        };
        let Some(e) = self.deps.gateways.get_mut(&g) else {
            return;
        };
        e.live = e.live.saturating_sub(1);
        if e.live == 0 {
            self.deps.gateways.remove(&g);
        } else if e.ids.len() > 2 * e.live + 16 {
            let mut ids = std::mem::take(&mut e.ids);
            ids.retain(|id| {
                self.fib.is_live(*id) && self.fib.route(*id).and_then(gateway_of) == Some(g)
            });
            ids.sort_unstable();
            ids.dedup();
            // The room of the removed ones goes back too (the list held more than twice these: amortised).
            ids.shrink_to_fit();
            if let Some(e) = self.deps.gateways.get_mut(&g) {
                e.live = ids.len();
                e.ids = ids;
            }
        }
    }

    /// The live routes of the main table through gateway `nh` on `dev`, in id order.
    pub(super) fn routes_via(&self, dev: DevId, nh: Ipv6Addr) -> Vec<RouteId> {
        let Some(e) = self.deps.gateways.get(&(dev, nh)) else {
            return Vec::new();
        };
        let mut ids: Vec<RouteId> = e
            .ids
            .iter()
            .copied()
            .filter(|id| {
                self.fib.is_live(*id) && self.fib.route(*id).and_then(gateway_of) == Some((dev, nh))
            })
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// Files the plan key of plain route `r` (just planned) under its gateway.
    pub(super) fn note_gateway_key(&mut self, r: &RouteEntry, key: PlanKey) {
        if r.tunnel.get().is_none()
            && let Some(g) = gateway_of(r)
        {
            self.deps.gateway_keys.entry(g).or_default().insert(key);
        }
    }

    /// After a build: files every plain route's plan key under its gateway.
    pub(super) fn index_gateway_keys(&mut self) {
        self.deps.gateway_keys.clear();
        for k in self.plan_keys.keys() {
            if let (None, Some(d), Some(IpAddr::V6(gw))) = (k.0, k.1, k.2) {
                self.deps
                    .gateway_keys
                    .entry((d, gw))
                    .or_default()
                    .insert(*k);
            }
        }
    }

    /// The plan keys of plain routes through gateway `nh` on `dev`, taken out of the index (and to be taken out
    /// of the plan keys: their plans carry the neighbour's old address).
    pub(super) fn take_gateway_keys(&mut self, dev: DevId, nh: Ipv6Addr) -> Vec<PlanKey> {
        self.deps
            .gateway_keys
            .remove(&(dev, nh))
            .map(|s| s.into_iter().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
impl Snapshot {
    /// The length and capacity of gateway `nh` on `dev`'s route list (tests).
    pub(super) fn gateway_list_room(&self, dev: DevId, nh: Ipv6Addr) -> Option<(usize, usize)> {
        self.deps
            .gateways
            .get(&(dev, nh))
            .map(|e| (e.ids.len(), e.ids.capacity()))
    }
}
