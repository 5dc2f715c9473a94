//! [`Change::AddrAdd`](super::Change::AddrAdd) applied in place: one more address of the router and what depends
//! on it, as a rebuild would derive it.

use super::{NO_ROUTE, Snapshot, cfg_err, source_among};
use crate::fib::FastBuild;
use crate::fib::{DevId, OptId, Origin, RouteEntry, RouteId, line32};
use crate::hop::saddr;
use crate::plan::{TakeOver, TemplateRef};
use crate::spec::ConfigError;
use crate::tunnel::{InputTunnel, OutputTunnel, Tunnel};
use ipnet::IpNet;
use std::collections::HashMap;
use std::net::IpAddr;
use std::net::Ipv6Addr;

impl Snapshot {
    /// The connected route of address `addr/prefix_len` (the kernel's: metric 256 for IPv6, 0 for IPv4).
    pub(super) fn connected_route(
        addr: IpAddr,
        prefix_len: u8,
        dev: DevId,
        line: usize,
    ) -> Result<RouteEntry, ConfigError> {
        let net = IpNet::new(addr, prefix_len)
            .map_err(|_| cfg_err(line, &prefix_len.to_string(), "bad prefix length"))?;
        Ok(RouteEntry {
            prefix: net.trunc(),
            via: None,
            dev: OptId::new(Some(dev)),
            metric: if addr.is_ipv6() { 256 } else { 0 },
            mtu: None,
            tunnel: OptId::NONE,
            origin: Origin::Connected,
            line: line32(line),
            plan: None,
        })
    }

    /// Whether an `addr add` of `addr/prefix_len` can be applied in place with the result of a rebuild: its
    /// connected route is the only one of its prefix and metric (a rebuild puts connected routes before the
    /// configured ones, which decides between equal routes), and no route configured without `dev` has its
    /// gateway inside the prefix (a rebuild would look its device up again).
    pub(super) fn addr_in_place(&self, addr: IpAddr, prefix_len: u8) -> bool {
        let Ok(net) = IpNet::new(addr, prefix_len) else {
            return false;
        };
        let metric = if addr.is_ipv6() { 256 } else { 0 };
        !self.fib.contains(net.trunc(), metric)
            && !self.deps.via_only.iter().any(|gw| net.contains(gw))
    }

    /// Adds address `addr/prefix_len` on `dev`: the link's address list, the local set, the connected route (with
    /// the tunnels routed into it), the plans whose key says whether a local address is inside the route's
    /// prefix, and the outer sources tunnels select (RFC 6724 over the addresses: a new address may win for any
    /// destination). Cost: the routes covering the address (at most one per prefix length and metric), the
    /// tunnels routed into its prefix, and the plans holding a selected source (see
    /// [`Snapshot::reselect_sources`]); not the table, not the tunnels without a plan.
    pub(super) fn add_addr(
        &mut self,
        dev: DevId,
        addr: IpAddr,
        prefix_len: u8,
        line: usize,
    ) -> Result<(), ConfigError> {
        if dev >= self.links.len() {
            return Err(cfg_err(line, &dev.to_string(), "no such device index"));
        }
        let entry = Self::connected_route(addr, prefix_len, dev, line)?;
        let prefix = entry.prefix;
        let new_local = match addr {
            IpAddr::V6(a) => {
                self.links[dev].addrs6.push((a, prefix_len));
                !self.local6.contains(&a)
            }
            IpAddr::V4(a) => {
                self.links[dev].addrs4.push((a, prefix_len));
                self.local4.insert(a);
                false
            }
        };
        // The routes whose plan key says whether one of our addresses is in their prefix: planned anew.
        let mut covering: Vec<RouteId> = Vec::new();
        if let (true, IpAddr::V6(a)) = (new_local, addr) {
            covering = self.fib.covering_v6(a);
            for id in &covering {
                let Some(r) = self.fib.route(*id).cloned() else {
                    continue;
                };
                if r.tunnel.get().is_some() {
                    // Its key (its own) changes: forget the old one.
                    self.plan_keys.remove(&self.plan_key(&r));
                } else if r.plan.is_some() {
                    // A plain route's plan is shared by its key: the route takes a new one, the old stays with
                    // the routes that keep the old key.
                    self.fib.set_plan(*id, None);
                }
            }
            self.local6.insert(a);
        }
        self.connected.insert(entry.clone());
        let id = self.fib.insert(entry);
        self.plan_route(id);
        for c in covering {
            self.plan_route(c);
        }
        self.replan_within(prefix);
        if let IpAddr::V6(a) = addr {
            self.reselect_sources(a);
        }
        Ok(())
    }

    /// Whether tunnel `tid` selects its outer source among the addresses: it has a fixed destination, names no
    /// source of its own, and (seg6) no node tunnel source (`sr tunsrc`) applies.
    fn selects_source(&self, tid: usize) -> bool {
        match &self.tunnels[tid] {
            Tunnel::Input(InputTunnel::Seg6(s)) => s.tunsrc.is_none() && self.tunsrc.is_none(),
            Tunnel::Output(OutputTunnel::Ioam6(t)) => t.tunsrc.is_none() && t.tundst.is_some(),
            _ => false,
        }
    }

    /// After address `a` came (on its link already): the outer sources tunnels cached are stale (one counter,
    /// not a pass over the tunnels: the general path selects them per packet again until the next rebuild), and
    /// the plans that hold a selected source follow: a new address may win the selection for any destination
    /// (RFC 6724 rule 8, or a tie it wins as the newest address of its link).
    ///
    /// The seg6 encap plans whose template holds the selected source
    /// ([`crate::plan::TemplatesBuilder::add_sourced`]) are found by the templates' groups
    /// ([`crate::plan::TemplatesBuilder::take_over`]): those `a` takes over get it written in place, the others
    /// are not looked at. Cost: a few hundred ordered-set lookups per group of templates (route device and
    /// source), the selection asked once per prefix of destinations where it is alike, and one store per
    /// template taken over; not a pass over the tunnels. The other tunnels that select a source (seg6 tunnels
    /// signing with an HMAC key or without a plan, ioam6 tunnels with a destination: few) are planned again.
    fn reselect_sources(&mut self, a: Ipv6Addr) {
        self.addr_gen = self.addr_gen.wrapping_add(1);
        if self.tunsrc.is_none() {
            let links = &self.links;
            let r = self.template_log.take_over(
                &mut self.templates,
                a,
                |dev, dst| source_among(links, dev, dst),
                saddr::classes_constant_on,
            );
            if r == TakeOver::Stale {
                self.reselect_sources_by_tunnel(a);
                return;
            }
        }
        let mut replan: Vec<RouteId> = self
            .unsourced_deps()
            .filter(|t| self.selects_source(*t))
            .map(|t| self.tunnel_route[t])
            .filter(|id| *id != NO_ROUTE)
            .collect();
        replan.sort_unstable();
        replan.dedup();
        for id in replan {
            self.plan_route(id);
        }
    }

    /// [`Snapshot::reselect_sources`] tunnel by tunnel, when the templates' groups do not agree with the selection
    /// (not expected: a safety net): each tunnel of the settings index that selects its source is looked at. A
    /// sourced template whose plans `a` all take over gets `a` written in place; any other such plan is made
    /// again.
    fn reselect_sources_by_tunnel(&mut self, a: Ipv6Addr) {
        let mut replan: Vec<RouteId> = Vec::new();
        // Per sourced template that `a` takes over for some of its plans: the template, how many plans use it,
        // how many of them `a` takes over; and the routes of those plans.
        let mut takes: HashMap<u32, (TemplateRef, u32, u32), FastBuild> = HashMap::default();
        let mut taken: Vec<(u32, RouteId)> = Vec::new();
        for t in self.settings_deps().filter(|t| self.selects_source(*t)) {
            let id = self.tunnel_route[t];
            if id == NO_ROUTE {
                continue;
            }
            match self.source_takeover(t, id, a) {
                Some(None) => {}
                Some(Some((r, users))) => {
                    let start = r.start_offset() as u32;
                    takes.entry(start).or_insert((r, users, 0)).2 += 1;
                    taken.push((start, id));
                }
                None => replan.push(id),
            }
        }
        for (r, users, n) in takes.values() {
            if n == users {
                self.template_log.set_source_of(&mut self.templates, *r, a);
            }
        }
        replan.extend(
            taken
                .into_iter()
                .filter(|(start, _)| takes.get(start).is_some_and(|(_, users, n)| n != users))
                .map(|(_, id)| id),
        );
        replan.sort_unstable();
        for id in replan {
            self.plan_route(id);
        }
    }

    /// For tunnel `tid` of route `id` whose plan holds a sourced template: `Some(None)` when new address `a`
    /// (already on its link) leaves its selected source as it is, `Some(Some((template, users)))` when `a` takes
    /// the selection over; `None` when that is not known this way (no such plan, or a selection that is neither):
    /// plan it again.
    fn source_takeover(
        &self,
        tid: usize,
        id: RouteId,
        a: Ipv6Addr,
    ) -> Option<Option<(TemplateRef, u32)>> {
        let Tunnel::Input(InputTunnel::Seg6(s)) = &self.tunnels[tid] else {
            return None;
        };
        let r = self.fib.route(id)?;
        let plan = self.plans.get(r.plan? as usize)?;
        let tref = self.templates.unbase(plan.template);
        let (src, users) = self.template_log.sourced_use(tref)?;
        // `a` is a candidate now (`source_for` ranks it in the kernel's order): the selection is either still
        // the template's source or `a`; anything else (a source the template no longer agrees with) is planned
        // again.
        match self.source_for(r.dev.get(), &s.first_sid)? {
            now if now == src => Some(None),
            now if now == a => Some(Some((tref, users))),
            _ => None,
        }
    }
}
