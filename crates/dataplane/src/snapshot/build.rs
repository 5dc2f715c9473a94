//! Building a snapshot from a [`Config`](crate::spec::Config): links, addresses, neighbours, tables and routes,
//! with each route's tunnel installed in a slot of its own.

use super::{Link, MIN_RX_HEADROOM, NO_ROUTE, Snapshot, cfg_err};
use crate::fib::{DevId, Fib, OptId, Origin, RouteEntry, RouteId, TunnelId, line32};
use crate::hop::ioam::IoamNode;
use crate::plan::{Templates, TemplatesBuilder};
use crate::spec::{
    Config, ConfigError, Encap, MAIN_TABLE, Route, Seg6Encap, Seg6LocalAction, Seg6Mode,
};
use crate::tunnel::Tunnel;
use crate::wire::ethernet::{self};
use ipnet::IpNet;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::{IpAddr, Ipv6Addr};

impl Snapshot {
    /// Builds the snapshot a configuration describes, consuming it: its routes are freed before the plans are
    /// made, so a large table is never held twice (the way `lwt6 check` and the offline router load files).
    pub fn build_from(mut cfg: Config) -> Result<Snapshot, ConfigError> {
        let routes = std::mem::take(&mut cfg.routes);
        let mut snap = Snapshot::build_base(&cfg)?;
        for r in routes {
            snap.add_route(&r)?;
        }
        snap.plan_all();
        Ok(snap)
    }

    /// Builds the snapshot a configuration describes. Fails (with the line) on references the parser could not
    /// check: a route `via` that no interface reaches, for example.
    pub fn build(cfg: &Config) -> Result<Snapshot, ConfigError> {
        let mut snap = Snapshot::build_base(cfg)?;
        for r in &cfg.routes {
            snap.add_route(r)?;
        }
        snap.plan_all();
        Ok(snap)
    }

    /// Everything but the configured routes (links, addresses and their connected routes, neighbours, keys,
    /// IOAM namespaces, sysctls).
    fn build_base(cfg: &Config) -> Result<Snapshot, ConfigError> {
        let mut links: Vec<Link> = Vec::new();
        let mut by_name = HashMap::new();
        for (i, l) in cfg.links.iter().enumerate() {
            let mac = l.mac.unwrap_or([0x02, 0, 0, 0, 0, (i + 1) as u8]);
            by_name.insert(l.name.clone(), i);
            links.push(Link {
                name: l.name.clone(),
                mac,
                mtu: l.mtu,
                sysctl: Default::default(),
                addrs6: vec![],
                addrs4: vec![],
            });
        }
        let dev = |name: &str, line: usize| -> Result<DevId, ConfigError> {
            by_name
                .get(name)
                .copied()
                .ok_or_else(|| cfg_err(line, name, "no such device (declare it with 'link add')"))
        };
        let mut fib = Fib::new();
        let mut local6 = HashSet::default();
        let mut local4 = HashSet::default();
        for a in &cfg.addrs {
            let d = dev(&a.dev, a.line)?;
            match a.addr {
                IpAddr::V6(v6) => {
                    links[d].addrs6.push((v6, a.prefix_len));
                    local6.insert(v6);
                }
                IpAddr::V4(v4) => {
                    links[d].addrs4.push((v4, a.prefix_len));
                    local4.insert(v4);
                }
            }
            let net = IpNet::new(a.addr, a.prefix_len)
                .map_err(|_| cfg_err(a.line, &a.prefix_len.to_string(), "bad prefix length"))?;
            fib.insert(RouteEntry {
                prefix: net.trunc(),
                via: None,
                dev: OptId::new(Some(d)),
                metric: if a.addr.is_ipv6() { 256 } else { 0 },
                mtu: None,
                tunnel: OptId::NONE,
                origin: Origin::Connected,
                line: line32(a.line),
                plan: None,
            });
        }
        let mut neigh6 = HashMap::default();
        let mut neigh4 = HashMap::default();
        for n in &cfg.neighs {
            let d = dev(&n.dev, n.line)?;
            match n.addr {
                IpAddr::V6(a) => neigh6.insert((d, a), n.lladdr),
                IpAddr::V4(a) => neigh4.insert((d, a), n.lladdr),
            };
        }
        let connected = fib.clone();
        let mut snap = Snapshot {
            links,
            neigh6,
            neigh4,
            local6,
            local4,
            dyn6: HashMap::default(),
            dyn4: HashMap::default(),
            fib,
            tables: BTreeMap::new(),
            plans: Vec::new(),
            templates: Templates::default(),
            template_log: TemplatesBuilder::default(),
            plan_keys: HashMap::default(),
            by_name,
            connected,
            tunnel_route: Vec::new(),
            tunnel_dsts: BTreeMap::new(),
            tunnels: Vec::new(),
            free_tunnels: Vec::new(),
            tunnel_born: Vec::new(),
            tunnel_births: 0,
            free_plans: Vec::new(),
            deps: Default::default(),
            hmac: HashMap::new(),
            tunsrc: None,
            ioam: IoamNode::default(),
            seg6_flowlabel: 0,
            seg6_first_word: u32::MAX,
            all: Default::default(),
            rx_headroom: MIN_RX_HEADROOM,
            tun_src: Vec::new(),
            addr_gen: 0,
            routes_planned: 0,
        };
        // Sysctls, IOAM, SRv6 source and keys: derived as a `Change::Settings` derives them.
        let settings = super::settings::Derived::of(cfg, &snap)?;
        snap.set_settings(settings);
        Ok(snap)
    }

    /// Adds a route (no plan yet): its device, its tunnel with the tunnel's bookkeeping, the FIB entry.
    pub(super) fn add_route(&mut self, r: &Route) -> Result<RouteId, ConfigError> {
        let main = r.table == MAIN_TABLE;
        if let Some(kind) = r.reject {
            // `route add blackhole|unreachable|prohibit PREFIX`: no device, gateway or tunnel.
            let entry = RouteEntry {
                prefix: r.prefix,
                via: None,
                dev: OptId::NONE,
                metric: r.metric,
                mtu: r.mtu,
                tunnel: OptId::NONE,
                origin: Origin::Reject(kind),
                line: r.line,
                plan: None,
            };
            if !main {
                self.tables.entry(r.table).or_default().insert(entry);
                return Ok(NO_ROUTE);
            }
            return Ok(self.fib.insert(entry));
        }
        let d = self.route_dev(r)?;
        if r.dev.is_none()
            && let Some(via) = r.via
        {
            self.deps.via_only.insert(via);
        }
        let tunnel = r.encap.as_ref().map(|e| {
            let mut t = Tunnel::new(e);
            if let Tunnel::Local(l) = &mut t {
                l.oif = l
                    .spec
                    .oif
                    .as_deref()
                    .and_then(|n| self.by_name.get(n).copied());
                l.dev = Some(d);
                l.policy = self.add_policy(&l.spec, d);
            }
            let src = t
                .fixed_destination()
                .and_then(|a| self.source_for(Some(d), &a));
            let dst = t.routed_destination();
            let need = (t.overhead() + 2 * ethernet::HEADER_LEN).div_ceil(64) * 64;
            self.rx_headroom = self.rx_headroom.max(need);
            let tid = self.install_tunnel(t, (Some(d), src));
            if main && let Some(dst) = dst {
                self.tunnel_dsts
                    .entry(u128::from(dst))
                    .or_default()
                    .push(tid);
            }
            tid
        });
        let entry = RouteEntry {
            prefix: r.prefix,
            via: r.via,
            dev: OptId::new(Some(d)),
            metric: r.metric,
            mtu: r.mtu,
            tunnel: OptId::new(tunnel),
            origin: Origin::Static,
            line: r.line,
            plan: None,
        };
        if !main {
            // Routes of other tables have no plan and no tunnel bookkeeping: nothing is replanned through them.
            self.tables.entry(r.table).or_default().insert(entry);
            return Ok(NO_ROUTE);
        }
        let id = self.fib.insert(entry);
        if let Some(t) = tunnel {
            self.tunnel_route[t] = id;
        }
        self.note_gateway_route(id);
        Ok(id)
    }

    /// Puts tunnel `t` with its outer source `src` in a free slot, or a new one, carried by no route yet; returns
    /// its id.
    fn install_tunnel(&mut self, t: Tunnel, src: (Option<DevId>, Option<Ipv6Addr>)) -> TunnelId {
        match self.free_tunnels.pop() {
            Some(tid) => {
                self.tunnel_births += 1;
                self.tunnels[tid] = t;
                self.tun_src[tid] = (src.0, src.1, self.addr_gen);
                self.tunnel_route[tid] = NO_ROUTE;
                self.tunnel_born[tid] = self.tunnel_births;
                tid
            }
            None => {
                self.tunnels.push(t);
                self.tun_src.push((src.0, src.1, self.addr_gen));
                self.tunnel_route.push(NO_ROUTE);
                self.tunnel_born.push(self.tunnel_births);
                self.tunnels.len() - 1
            }
        }
    }

    /// Frees the tunnel of removed route `r` (and its End.B6 policy) for reuse: its destination entry, its plan
    /// keys and its route's plan slot (the plan is the route's alone: its key names the tunnel).
    pub(super) fn release_tunnel(&mut self, r: &RouteEntry) {
        let Some(tid) = r.tunnel.get() else {
            return;
        };
        if let Some(dst) = self.tunnels[tid].routed_destination() {
            let key = u128::from(dst);
            if let Some(tids) = self.tunnel_dsts.get_mut(&key) {
                tids.retain(|t| *t != tid);
                if tids.is_empty() {
                    self.tunnel_dsts.remove(&key);
                }
            }
        }
        // Its plan key names the tunnel: the route's alone (a lookup, not a pass over the keys).
        self.plan_keys.remove(&self.plan_key(r));
        if let Some(p) = r.plan {
            let t = self.templates.unbase(self.plans[p as usize].template);
            self.template_log.release(t);
            self.free_plans.push(p);
        }
        self.forget_tunnel_deps(tid);
        if let Tunnel::Local(l) = &self.tunnels[tid]
            && let Some(policy) = l.policy
        {
            self.forget_tunnel_deps(policy);
            self.tunnel_route[policy] = NO_ROUTE;
            self.free_tunnels.push(policy);
        }
        self.tunnel_route[tid] = NO_ROUTE;
        self.free_tunnels.push(tid);
    }

    /// Installs the SRH of an End.B6 / End.B6.Encaps(.Red) route as a seg6 tunnel of its own (inline for End.B6,
    /// encap or encap.red otherwise), whose outer source is selected on the route's device `d`, as Linux does.
    fn add_policy(&mut self, l: &crate::spec::Seg6LocalSpec, d: DevId) -> Option<TunnelId> {
        let srh = l.srh.as_ref()?;
        let mode = match l.action {
            Seg6LocalAction::EndB6 => Seg6Mode::Inline,
            Seg6LocalAction::EndB6Encaps => Seg6Mode::Encap,
            Seg6LocalAction::EndB6EncapsRed => Seg6Mode::EncapRed,
            _ => return None,
        };
        let t = Tunnel::new(&Encap::Seg6(Seg6Encap {
            mode,
            segs: srh.segs.clone(),
            hmac: srh.hmac,
            tunsrc: None,
        }));
        let src = t
            .fixed_destination()
            .and_then(|a| self.source_for(Some(d), &a));
        let need = (t.overhead() + 2 * ethernet::HEADER_LEN).div_ceil(64) * 64;
        self.rx_headroom = self.rx_headroom.max(need);
        Some(self.install_tunnel(t, (Some(d), src)))
    }
}
