//! Everything a router is configured with, as one immutable value: interfaces, neighbours, local addresses,
//! tunnels, HMAC keys, IOAM namespaces, sysctls, and the FIB with its forwarding plans.
//!
//! A [`Snapshot`] is built from a [`Config`] and published through a [`SnapshotHandle`] (an `ArcSwap`). Workers
//! load the current one once per batch and borrow it for every packet of the batch: no lock and no reference count
//! per packet. A change is a new snapshot, published whole; a batch in flight finishes on the one it started with.

use crate::fib::{DevId, FastBuild, Fib, Origin, RouteEntry, RouteId, TunnelId};
use crate::node::ioam::{IfIds, IoamNode, NO_IF, Namespace};
use crate::node::saddr;
use crate::plan::{
    IOAM_PATCH_MAX, IoamField, IoamPatch, Plan, PlanKind, Sampled, Templates, TemplatesBuilder,
};
use crate::spec::{
    Config, ConfigError, DevSysctls, Encap, IoamMode, MAIN_TABLE, Route, Seg6Encap,
    Seg6LocalAction, Seg6Mode,
};
use crate::tunnel::seg6::HmacSecret;
use crate::tunnel::{InputTunnel, Ioam6Tunnel, OutputTunnel, Tunnel};
use crate::wire::ethernet::{self, EthernetRepr, Mac};
use crate::wire::ipv6;
use arc_swap::ArcSwap;
use ipnet::IpNet;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

/// The route id of tunnels that no route of the main table carries (policies of End.B6 routes, tunnels of routes
/// in other tables): nothing replans them.
const NO_ROUTE: RouteId = RouteId::MAX;

/// Smallest rx headroom lwt6 uses, whatever the routes (room for an Ethernet header and alignment).
pub const MIN_RX_HEADROOM: usize = 64;

/// An interface of the router.
#[derive(Debug, Clone)]
pub struct Link {
    /// Name.
    pub name: String,
    /// MAC address.
    pub mac: Mac,
    /// MTU.
    pub mtu: u32,
    /// Its `net.ipv6.conf.DEV.*` values.
    pub sysctl: DevSysctls,
    /// IPv6 addresses with prefix lengths.
    pub addrs6: Vec<(Ipv6Addr, u8)>,
    /// IPv4 addresses with prefix lengths.
    pub addrs4: Vec<(Ipv4Addr, u8)>,
}

/// What a plan depends on: the route's tunnel, device, gateway and MTU, and whether one of our addresses is inside
/// its prefix. Routes that agree on these share one plan.
type PlanKey = (
    Option<TunnelId>,
    Option<DevId>,
    Option<IpAddr>,
    Option<crate::spec::RouteMtu>,
    bool,
);

/// A change to a configuration, applied to a snapshot in place ([`Snapshot::apply`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// `route add ...`.
    AddRoute(Route),
    /// `route replace ...` / `route change ...`: the route of the same table, prefix and metric is replaced (added
    /// when there is none).
    ReplaceRoute(Route),
    /// `route del PREFIX [table T] [metric N]`.
    DelRoute {
        /// The route's prefix.
        prefix: IpNet,
        /// Its metric.
        metric: u32,
        /// Its table.
        table: u32,
        /// The line the change came from (for errors).
        line: usize,
    },
    /// A neighbour learned from the wire (dynamic resolution, published by the control thread): added or
    /// updated. A static `neigh add` entry for the same address on the same device still wins.
    NeighSet {
        /// Device.
        dev: DevId,
        /// The neighbour's address.
        addr: IpAddr,
        /// Its link-layer address.
        mac: Mac,
        /// Whether its reachability is unconfirmed (RFC 4861 §7.3.2 STALE): using it asks for a probe.
        stale: bool,
    },
    /// A learned neighbour forgotten (unreachable after probes). Static entries are never removed by it.
    NeighDel {
        /// Device.
        dev: DevId,
        /// The neighbour's address.
        addr: IpAddr,
    },
}

/// A neighbour learned from the wire, as the snapshot holds it (see [`Change::NeighSet`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DynNeigh {
    /// Link-layer address.
    pub mac: Mac,
    /// Unconfirmed (STALE): using it makes the worker report it, so that the control thread probes it.
    pub stale: bool,
}

/// Everything configured, immutable once published.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Interfaces, indexed by [`DevId`].
    pub links: Vec<Link>,
    pub(crate) neigh6: HashMap<(DevId, Ipv6Addr), Mac, FastBuild>,
    pub(crate) neigh4: HashMap<(DevId, Ipv4Addr), Mac, FastBuild>,
    pub(crate) local6: HashSet<Ipv6Addr, FastBuild>,
    pub(crate) local4: HashSet<Ipv4Addr, FastBuild>,
    /// Neighbours learned from the wire (dynamic resolution); the static maps above win over these.
    pub(crate) dyn6: HashMap<(DevId, Ipv6Addr), DynNeigh, FastBuild>,
    pub(crate) dyn4: HashMap<(DevId, Ipv4Addr), DynNeigh, FastBuild>,
    /// Per tunnel: the device of the route carrying it and the outer source address selected on it for the
    /// tunnel's destination (seg6 first SID, ioam6 tundst), resolved once at build time as Linux caches it per
    /// tunnel; used when the packet's route device is that one.
    tun_src: Vec<(Option<DevId>, Option<Ipv6Addr>)>,
    fib: Fib,
    /// The routing tables other than main (`table N`), by id: looked up only by the behaviours that name them
    /// (End.T, End.DT4/6/46); a route in one of them is invisible to received packets. No plans.
    tables: BTreeMap<u32, Fib>,
    /// Forwarding plans, referenced by [`RouteEntry::plan`].
    plans: Vec<Plan>,
    /// The plans' templates.
    templates: Templates,
    /// Where every template is placed, kept to add more (the block above is its copy, with room).
    template_log: TemplatesBuilder,
    /// Plans by what they depend on (see [`PlanKey`]), so that routes share them.
    plan_keys: HashMap<PlanKey, Option<u32>, FastBuild>,
    /// Interface index by name.
    by_name: HashMap<String, DevId>,
    /// The connected routes alone (from `addr add`): where a gateway without `dev` is looked for.
    connected: Fib,
    /// Per tunnel: the route carrying it.
    tunnel_route: Vec<RouteId>,
    /// Per destination a tunnel routes towards (seg6 first SID, rpl first segment, ioam6 tundst): the tunnels,
    /// whose plans depend on the route to it.
    tunnel_dsts: BTreeMap<u128, Vec<TunnelId>>,
    /// Installed tunnels, indexed by [`TunnelId`] (the slots listed in `free_tunnels` included).
    pub tunnels: Vec<Tunnel>,
    /// Tunnel ids of removed routes, reused by the next tunnels so that route churn does not grow the per-tunnel
    /// vectors (here and in the workers).
    free_tunnels: Vec<TunnelId>,
    /// Per tunnel: the value of `tunnel_births` when it was installed in its slot, so that a worker can tell a
    /// reused slot and reset its per-tunnel state.
    pub(crate) tunnel_born: Vec<u64>,
    /// Tunnels installed in a reused slot so far (never decreases).
    pub(crate) tunnel_births: u64,
    /// Plan slots of removed tunnel routes (a tunnel's plan is its route's alone), reused by the next plans.
    free_plans: Vec<u32>,
    pub(crate) hmac: HashMap<u32, HmacSecret>,
    pub(crate) tunsrc: Option<Ipv6Addr>,
    pub(crate) ioam: IoamNode,
    pub(crate) seg6_flowlabel: i32,
    /// What an H.Encaps outer header keeps of the inner header's first word: all of it (`seg6_flowlabel` 0:
    /// version, traffic class, flow label) or version and traffic class only (-1: flow label 0).
    pub(crate) seg6_first_word: u32,
    /// `net.ipv6.conf.all.*`.
    pub(crate) all: DevSysctls,
    /// The rx headroom that makes every route's growth fit without reallocation: the largest tunnel overhead and
    /// two Ethernet headers, rounded up to a cache line, at least [`MIN_RX_HEADROOM`].
    pub rx_headroom: usize,
}

fn cfg_err(line: usize, token: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError {
        line,
        token: token.to_string(),
        reason: reason.into(),
    }
}

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
            let sysctl = cfg.sysctl.dev.get(&l.name).copied().unwrap_or_default();
            by_name.insert(l.name.clone(), i);
            links.push(Link {
                name: l.name.clone(),
                mac,
                mtu: l.mtu,
                sysctl,
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
                dev: Some(d),
                metric: if a.addr.is_ipv6() { 256 } else { 0 },
                mtu: None,
                tunnel: None,
                origin: Origin::Connected,
                line: a.line,
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
        let mut hmac = HashMap::new();
        for k in &cfg.hmac_keys {
            hmac.insert(
                k.key_id,
                HmacSecret {
                    algo: k.algo,
                    secret: k.secret.clone(),
                },
            );
        }
        let connected = fib.clone();
        let mut ioam = IoamNode {
            node_id: cfg.sysctl.ioam6_id,
            node_id_wide: cfg.sysctl.ioam6_id_wide,
            namespaces: HashMap::default(),
            domains: crate::node::ioam_domain::Domains::build(cfg, links.len(), |n| {
                by_name.get(n).copied()
            })?,
        };
        for ns in &cfg.ioam_namespaces {
            let schema = ns
                .schema
                .and_then(|sid| cfg.ioam_schemas.iter().find(|s| s.id == sid))
                .map(|s| {
                    let mut d = s.data.clone();
                    d.resize(s.data.len().div_ceil(4) * 4, 0);
                    (s.id, d)
                });
            ioam.namespaces.insert(
                ns.id,
                Namespace {
                    data: ns.data,
                    wide: ns.wide,
                    schema,
                },
            );
        }
        let snap = Snapshot {
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
            hmac,
            tunsrc: cfg.sr_tunsrc.filter(|a| !a.is_unspecified()),
            ioam,
            seg6_flowlabel: cfg.sysctl.seg6_flowlabel,
            seg6_first_word: if cfg.sysctl.seg6_flowlabel < 0 {
                0xfff0_0000
            } else {
                u32::MAX
            },
            all: cfg.sysctl.all,
            rx_headroom: MIN_RX_HEADROOM,
            tun_src: Vec::new(),
        };
        Ok(snap)
    }

    /// Adds a route (no plan yet): its device, its tunnel with the tunnel's bookkeeping, the FIB entry.
    fn add_route(&mut self, r: &Route) -> Result<RouteId, ConfigError> {
        let d = self.route_dev(r)?;
        let main = r.table == MAIN_TABLE;
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
            dev: Some(d),
            metric: r.metric,
            mtu: r.mtu,
            tunnel,
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
        Ok(id)
    }

    /// Puts tunnel `t` with its outer source `src` in a free slot, or a new one, carried by no route yet; returns
    /// its id.
    fn install_tunnel(&mut self, t: Tunnel, src: (Option<DevId>, Option<Ipv6Addr>)) -> TunnelId {
        match self.free_tunnels.pop() {
            Some(tid) => {
                self.tunnel_births += 1;
                self.tunnels[tid] = t;
                self.tun_src[tid] = src;
                self.tunnel_route[tid] = NO_ROUTE;
                self.tunnel_born[tid] = self.tunnel_births;
                tid
            }
            None => {
                self.tunnels.push(t);
                self.tun_src.push(src);
                self.tunnel_route.push(NO_ROUTE);
                self.tunnel_born.push(self.tunnel_births);
                self.tunnels.len() - 1
            }
        }
    }

    /// Frees the tunnel of removed route `r` (and its End.B6 policy) for reuse: its destination entry, its plan
    /// keys and its route's plan slot (the plan is the route's alone: its key names the tunnel).
    fn release_tunnel(&mut self, r: &RouteEntry) {
        let Some(tid) = r.tunnel else {
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
        if let Tunnel::Local(l) = &self.tunnels[tid]
            && let Some(policy) = l.policy
        {
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

    /// The routing table `id`: main, or one a route was added to with `table N`.
    pub fn table(&self, id: u32) -> Option<&Fib> {
        if id == MAIN_TABLE {
            Some(&self.fib)
        } else {
            self.tables.get(&id)
        }
    }

    /// Every routing table with its id, in id order (as `ip route show table all` lists them).
    pub fn tables(&self) -> Vec<(u32, &Fib)> {
        let mut v: Vec<(u32, &Fib)> = self.tables.iter().map(|(k, f)| (*k, f)).collect();
        let at = v.partition_point(|(k, _)| *k < MAIN_TABLE);
        v.insert(at, (MAIN_TABLE, &self.fib));
        v
    }

    /// The device of a route: named, or the one of the connected network its gateway is on.
    fn route_dev(&self, r: &Route) -> Result<DevId, ConfigError> {
        if let Some(n) = &r.dev {
            return self
                .by_name
                .get(n)
                .copied()
                .ok_or_else(|| cfg_err(r.line, n, "no such device (declare it with 'link add')"));
        }
        let Some(via) = r.via else {
            return Err(cfg_err(r.line, "", "a route needs 'dev' or 'via'"));
        };
        let found = match via {
            IpAddr::V6(a) => self.connected.lookup_v6(a),
            IpAddr::V4(a) => self.connected.lookup_v4(a),
        };
        found.and_then(|c| c.dev).ok_or_else(|| {
            cfg_err(
                r.line,
                &via.to_string(),
                "gateway is not on a connected network (add 'dev')",
            )
        })
    }

    /// A forwarding [`Plan`] for every IPv6 route whose way out does not depend on the packet (see [`PlanKind`]):
    /// a gateway route with a known neighbour (plain forwarding); a seg6 `encap` / `encap.red`, seg6 `inline`
    /// without HMAC, or `rpl` route whose new destination resolves, with no further tunnel, to a known neighbour;
    /// an ioam6 route inserting on every packet (`freq` K/K) with a known neighbour. Everything else takes the
    /// general path.
    fn plan_all(&mut self) {
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
        if !r.prefix.addr().is_ipv6() {
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
    fn plan_key(&self, r: &RouteEntry) -> PlanKey {
        let contains_local = self
            .local6
            .iter()
            .any(|a| r.prefix.contains(&IpAddr::V6(*a)));
        (r.tunnel, r.dev, r.via, r.mtu, contains_local)
    }

    /// Plans route `id` after a change: a plain route shares the plan its key names (made now if no route has it
    /// yet); a tunnel route, whose tunnel's destination may route differently now, gets its plan made anew, in
    /// its old slot when it had one. A new template goes into the block's room (or into a bigger block).
    fn plan_route(&mut self, id: RouteId) {
        let Some(r) = self.fib.routes().get(id as usize).cloned() else {
            return;
        };
        let mut keys = std::mem::take(&mut self.plan_keys);
        let mut plans = std::mem::take(&mut self.plans);
        let mut log = std::mem::take(&mut self.template_log);
        let (placed, before) = (log.len(), plans.len());
        if r.tunnel.is_some() {
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
            let key = (r.tunnel, r.dev, r.via, r.mtu, p.contains_local);
            keys.insert(key, Some(slot));
            now = Some(slot);
        }
        self.plan_keys = keys;
        self.plans = plans;
        self.template_log = log;
        self.fib.set_plan(id, now);
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
    fn plan_neighbour(&self, dev: DevId, nh: Ipv6Addr) -> Option<Mac> {
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
    fn replan_neighbour(&mut self, dev: DevId, nh: Ipv6Addr) {
        if self.neigh6.contains_key(&(dev, nh)) {
            return;
        }
        let via = Some(IpAddr::V6(nh));
        let gateway: Vec<(RouteId, IpNet, Option<u32>)> = self
            .fib
            .routes()
            .iter()
            .enumerate()
            .filter(|(id, r)| {
                r.dev == Some(dev)
                    && r.via == via
                    && r.tunnel.is_none()
                    && self.fib.is_live(*id as RouteId)
            })
            .map(|(id, r)| (id as RouteId, r.prefix, r.plan))
            .collect();
        // Their shared plans' keys name the neighbour: forget them, so the first route plans anew (in its old slot).
        self.plan_keys
            .retain(|k, _| !(k.0.is_none() && k.1 == Some(dev) && k.2 == via));
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
    fn replan_within(&mut self, prefix: IpNet) {
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

    /// Applies one change to this snapshot in place, as building it anew from the changed configuration would
    /// (same routes, same plans, same bytes out); a change that cannot apply is refused before anything changes.
    /// Cost: the FIB entry, the plan, and the plans of the tunnels routed through the changed prefix, not the
    /// table. The tunnel id and plan slot of a removed route are reused by the next ones.
    pub fn apply(&mut self, change: &Change) -> Result<(), ConfigError> {
        match change {
            Change::ReplaceRoute(r) => {
                // Checked as an addition first, so that a refused replacement leaves the old route.
                self.route_dev(r)?;
                let exists = self
                    .table(r.table)
                    .is_some_and(|f| f.contains(r.prefix, r.metric));
                self.check_keys(r)?;
                if exists {
                    self.apply(&Change::DelRoute {
                        prefix: r.prefix,
                        metric: r.metric,
                        table: r.table,
                        line: r.line,
                    })?;
                }
                self.apply(&Change::AddRoute(r.clone()))
            }
            Change::AddRoute(r) => {
                self.route_dev(r)?;
                if self
                    .table(r.table)
                    .is_some_and(|f| f.contains(r.prefix, r.metric))
                {
                    return Err(cfg_err(
                        r.line,
                        &r.prefix.to_string(),
                        format!("route already exists (same prefix and metric {})", r.metric),
                    ));
                }
                self.check_keys(r)?;
                let id = self.add_route(r)?;
                if r.table == MAIN_TABLE {
                    self.plan_route(id);
                    self.replan_within(r.prefix);
                }
                Ok(())
            }
            Change::DelRoute {
                prefix,
                metric,
                table,
                line,
            } => {
                if *table != MAIN_TABLE {
                    let gone = self.tables.get_mut(table).and_then(|f| {
                        let id = f.remove(*prefix, *metric)?;
                        f.route(id).cloned()
                    });
                    return match gone {
                        Some(r) => {
                            self.release_tunnel(&r);
                            Ok(())
                        }
                        None => Err(cfg_err(
                            *line,
                            &prefix.to_string(),
                            format!(
                                "no such route (prefix {prefix} with metric {metric} in table {table})"
                            ),
                        )),
                    };
                }
                let Some(id) = self.fib.remove(*prefix, *metric) else {
                    return Err(cfg_err(
                        *line,
                        &prefix.to_string(),
                        format!("no such route (prefix {prefix} with metric {metric})"),
                    ));
                };
                if let Some(r) = self.fib.route(id).cloned() {
                    self.release_tunnel(&r);
                }
                self.replan_within(*prefix);
                Ok(())
            }
            Change::NeighSet {
                dev,
                addr,
                mac,
                stale,
            } => {
                if *dev >= self.links.len() {
                    return Err(cfg_err(0, &dev.to_string(), "no such device index"));
                }
                let n = DynNeigh {
                    mac: *mac,
                    stale: *stale,
                };
                match addr {
                    IpAddr::V6(a) => {
                        if self.dyn6.insert((*dev, *a), n) != Some(n) {
                            self.replan_neighbour(*dev, *a);
                        }
                    }
                    IpAddr::V4(a) => {
                        self.dyn4.insert((*dev, *a), n);
                    }
                };
                Ok(())
            }
            Change::NeighDel { dev, addr } => {
                match addr {
                    IpAddr::V6(a) => {
                        if self.dyn6.remove(&(*dev, *a)).is_some() {
                            self.replan_neighbour(*dev, *a);
                        }
                    }
                    IpAddr::V4(a) => {
                        self.dyn4.remove(&(*dev, *a));
                    }
                };
                Ok(())
            }
        }
    }

    /// The HMAC keys a route names must be configured.
    fn check_keys(&self, r: &Route) -> Result<(), ConfigError> {
        if let Some(Encap::Seg6(s)) = &r.encap
            && let Some(k) = s.hmac
            && !self.hmac.contains_key(&k)
        {
            return Err(cfg_err(
                r.line,
                &k.to_string(),
                format!("HMAC key {k} is not defined (add 'sr hmac set {k} sha256 secret S')"),
            ));
        }
        if let Some(Encap::Seg6Local(l)) = &r.encap
            && let Some(k) = l.srh.as_ref().and_then(|s| s.hmac)
            && !self.hmac.contains_key(&k)
        {
            return Err(cfg_err(
                r.line,
                &k.to_string(),
                format!("HMAC key {k} is not defined (add 'sr hmac set {k} sha256 secret S')"),
            ));
        }
        Ok(())
    }

    /// The link-layer address of neighbour `addr` on `dev`: the static entry if there is one (never stale), else
    /// the learned one with its staleness.
    #[inline(always)]
    pub fn neighbour(&self, dev: DevId, addr: IpAddr) -> Option<(Mac, bool)> {
        match addr {
            IpAddr::V6(a) => {
                if let Some(m) = self.neigh6.get(&(dev, a)) {
                    return Some((*m, false));
                }
                if self.dyn6.is_empty() {
                    return None;
                }
                self.dyn6.get(&(dev, a)).map(|n| (n.mac, n.stale))
            }
            IpAddr::V4(a) => {
                if let Some(m) = self.neigh4.get(&(dev, a)) {
                    return Some((*m, false));
                }
                if self.dyn4.is_empty() {
                    return None;
                }
                self.dyn4.get(&(dev, a)).map(|n| (n.mac, n.stale))
            }
        }
    }

    /// Whether `addr` is one of this router's IPv6 addresses.
    pub fn is_local6(&self, addr: &Ipv6Addr) -> bool {
        self.local6.contains(addr)
    }

    /// Whether `addr` is one of this router's IPv4 addresses.
    pub fn is_local4(&self, addr: &Ipv4Addr) -> bool {
        self.local4.contains(addr)
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
            let dev = route.dev?;
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
                .filter(|n| n.tunnel.is_none_or(|t| t == tid))
        };
        let mut make =
            |kind, (egress, mut template, mtu): (DevId, Vec<u8>, usize), rest: &[u8], growth| {
                template.extend_from_slice(rest);
                Plan {
                    egress,
                    // A Payload Length field describes at most 65,535 bytes.
                    max_len: mtu.min(H + u16::MAX as usize),
                    template: templates.add(&template),
                    kind,
                    growth,
                    tunnel: r.tunnel,
                    route_dev: r.dev,
                    contains_local,
                    ioam: IoamPatch::default(),
                    sampled: None,
                    rpl_tail: (0, 0),
                }
            };
        let Some(tid) = r.tunnel else {
            return Some(make(PlanKind::Forward, hop(r, None)?, &[], 0));
        };
        // Each tunnel builds its own template; the plan adds the way out in front of it.
        match &self.tunnels[tid] {
            Tunnel::Input(InputTunnel::Seg6(s)) => match s.mode {
                // seg6_flowlabel 1 hashes the flow into the outer flow label: left to the general path.
                Seg6Mode::Encap | Seg6Mode::EncapRed if self.seg6_flowlabel <= 0 => {
                    let next = next_route(tid, s.first_sid)?;
                    let way = hop(next, Some(s.first_sid))?;
                    let src = s
                        .tunsrc
                        .or(self.tunsrc)
                        .or_else(|| self.source_for(r.dev, &s.first_sid))?;
                    let hmac = match s.hmac_key {
                        Some(k) => Some(self.hmac.get(&k)?),
                        None => None,
                    };
                    let t = s.encap_template(src, hmac)?;
                    Some(make(PlanKind::Seg6Encap, way, &t, t.len()))
                }
                Seg6Mode::Inline => {
                    let t = s.inline_template()?;
                    let next = next_route(tid, s.first_sid)?;
                    let way = hop(next, Some(s.first_sid))?;
                    Some(make(PlanKind::Seg6Inline, way, &t, t.len() - H))
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
                        let mut plan = make(PlanKind::RplFixed, way, &tpl, rh.len());
                        plan.rpl_tail = (tail_at, ce);
                        Some(plan)
                    }
                    None => Some(make(PlanKind::Rpl, way, &p.template(), 0)),
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
                        let patch = self.ioam_patch(t, &mut tpl[H..], r.dev);
                        let mut p = make(PlanKind::IoamInline, way, &tpl, t.hbh_len);
                        p.ioam = patch;
                        Some(p)
                    }
                    _ => {
                        let tundst = t.tundst?;
                        let next = next_route(tid, tundst)?;
                        let way = hop(next, Some(tundst))?;
                        let src = t
                            .tunsrc
                            .or_else(|| self.tunnel_source(tid, r.dev, &tundst))?;
                        let mut tpl = t.encap_template(src)?;
                        let patch = self.ioam_patch(t, &mut tpl[H..], r.dev);
                        let mut p = make(PlanKind::IoamEncap, way, &tpl, tpl.len());
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
                            dev: Some(d),
                            via: Some(IpAddr::V6(nh)),
                            mtu: None,
                            ..r.clone()
                        },
                        None => {
                            let n = fib.lookup_v6(nh)?;
                            if n.tunnel.is_some() {
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
                    Seg6LocalAction::End => {
                        Some(make(PlanKind::End, (r.dev?, Vec::new(), 0), &[], 0))
                    }
                    Seg6LocalAction::EndX => Some(make(PlanKind::EndX, towards_nh6()?, &[], 0)),
                    Seg6LocalAction::EndDx6 => Some(make(PlanKind::EndDx6, towards_nh6()?, &[], 0)),
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

    /// The interface called `name`.
    pub fn dev_id(&self, name: &str) -> Option<DevId> {
        self.links.iter().position(|l| l.name == name)
    }

    /// The routing table.
    pub fn fib(&self) -> &Fib {
        &self.fib
    }

    /// A forwarding plan of this snapshot.
    #[inline(always)]
    pub fn plan(&self, id: u32) -> Option<&Plan> {
        self.plans.get(id as usize)
    }

    /// What an H.Encaps plan's outer header keeps of the inner header's first word (version, traffic class, flow
    /// label: all of it, or the flow label zeroed), per `net.ipv6.seg6_flowlabel`; for executors of the plans
    /// outside this crate (the XDP tier).
    pub fn seg6_first_word(&self) -> u32 {
        self.seg6_first_word
    }

    /// The template of a plan of this snapshot.
    #[inline(always)]
    pub fn template(&self, plan: &Plan) -> &[u8] {
        self.templates.get(plan.template)
    }

    /// How many forwarding plans the routes share, and the bytes their templates take.
    pub fn plan_stats(&self) -> (usize, usize) {
        (self.plans.len(), self.template_log.len())
    }

    /// The effective MTU of a route: route MTU or the device's, minus what its tunnel adds as Linux reports it
    /// (`lwtunnel_headroom`), and lwt6's own figure (the bytes really added: for the seg6 l2 modes, the received
    /// Ethernet header too, which the outer packet carries).
    pub fn route_mtu(&self, r: &RouteEntry) -> (u32, u32) {
        let base = r
            .mtu
            .map(|m| m.value)
            .unwrap_or_else(|| r.dev.map_or(1500, |d| self.links[d].mtu));
        match r.tunnel.map(|t| &self.tunnels[t]) {
            Some(Tunnel::Local(_)) | None => (base, base),
            Some(t) => {
                let linux = t.linux_mtu_headroom() as u32;
                let ours = match t {
                    Tunnel::Input(InputTunnel::Seg6(s)) if s.is_l2() => {
                        (s.overhead() + ethernet::HEADER_LEN) as u32
                    }
                    t => t.overhead() as u32,
                };
                (base.saturating_sub(linux), base.saturating_sub(ours))
            }
        }
    }

    /// The outer source address of a tunnel stage towards `dst` (its configured destination): resolved at build
    /// time for the tunnel's own route device, selected now otherwise.
    pub(crate) fn tunnel_source(
        &self,
        tunnel: TunnelId,
        route_dev: Option<DevId>,
        dst: &Ipv6Addr,
    ) -> Option<Ipv6Addr> {
        match self.tun_src.get(tunnel) {
            Some(&(dev, src)) if dev == route_dev => src,
            _ => self.source_for(route_dev, dst),
        }
    }

    /// The source address Linux would select for `dst` leaving on `dev` (RFC 6724 rules as the kernel applies
    /// them, see [`saddr`]).
    pub(crate) fn source_for(&self, dev: Option<DevId>, dst: &Ipv6Addr) -> Option<Ipv6Addr> {
        let cands = self
            .links
            .iter()
            .enumerate()
            .flat_map(|(i, l)| l.addrs6.iter().map(move |(a, _)| (*a, Some(i) == dev)));
        saddr::select(cands, dst)
    }
}

/// The publication point between the control plane and the workers.
#[derive(Debug)]
pub struct SnapshotHandle {
    current: ArcSwap<Snapshot>,
}

impl SnapshotHandle {
    /// Publishes an initial snapshot.
    pub fn new(snap: Snapshot) -> Self {
        SnapshotHandle {
            current: ArcSwap::from_pointee(snap),
        }
    }

    /// Replaces the snapshot; workers see it at their next batch, batches in flight finish on the old one.
    pub fn publish(&self, snap: Snapshot) {
        self.current.store(Arc::new(snap));
    }

    /// Publishes `snap` and returns the one it replaces.
    pub fn swap(&self, snap: Arc<Snapshot>) -> Arc<Snapshot> {
        self.current.swap(snap)
    }

    /// The current snapshot, for one batch (one reference-count operation per batch, none per packet).
    pub fn load(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }
}

/// Applies changes to the published snapshot without copying it: two snapshots, the published one and a spare.
/// A batch of changes goes into the spare, which is then published; the one it replaces becomes the spare and
/// receives the same batch when the next one comes, as soon as no worker holds it any more (workers hold a
/// snapshot for one batch of packets). Each change is applied twice, the table is never copied (after the one
/// copy made at the start), and a batch in flight finishes on the snapshot it started with.
#[derive(Debug)]
pub struct SnapshotWriter {
    handle: Arc<SnapshotHandle>,
    spare: Arc<Snapshot>,
    /// Changes the published snapshot has and the spare has not yet.
    pending: Vec<Change>,
}

impl SnapshotWriter {
    /// A writer for `handle` (copies its current snapshot once, as the spare).
    pub fn new(handle: Arc<SnapshotHandle>) -> Self {
        let spare = Arc::new((*handle.load()).clone());
        SnapshotWriter {
            handle,
            spare,
            pending: Vec::new(),
        }
    }

    /// Applies `changes` in order and publishes the result. A change that cannot apply stops the batch: the
    /// ones before it are published, it and the ones after are not, and its index comes back with the error.
    pub fn apply(&mut self, changes: &[Change]) -> Result<(), (usize, ConfigError)> {
        let spare = loop {
            // Workers drop the snapshot they loaded at the end of their batch.
            if let Some(s) = Arc::get_mut(&mut self.spare) {
                break s;
            }
            std::thread::yield_now();
        };
        for c in self.pending.drain(..) {
            // Applied to the published copy already, from the same state: it applies here too.
            spare
                .apply(&c)
                .expect("a change that applied to the published snapshot applies to the spare");
        }
        let mut done = 0;
        let mut failed = None;
        for (i, c) in changes.iter().enumerate() {
            match spare.apply(c) {
                Ok(()) => done += 1,
                Err(e) => {
                    failed = Some((i, e));
                    break;
                }
            }
        }
        if done > 0 {
            let old = self.handle.swap(Arc::clone(&self.spare));
            self.spare = old;
            self.pending = changes[..done].to_vec();
        }
        failed.map_or(Ok(()), Err)
    }

    /// The handle this writer publishes to.
    pub fn handle(&self) -> &Arc<SnapshotHandle> {
        &self.handle
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        // A link and a default route, written as the spec the parser would produce.
        let mut c = Config::default();
        c.links.push(crate::spec::Link {
            name: "r1".into(),
            mac: None,
            mtu: 1500,
            line: 1,
        });
        if !text.is_empty() {
            c.routes.push(crate::spec::Route {
                prefix: text.parse().unwrap(),
                via: None,
                dev: Some("r1".into()),
                metric: 1024,
                mtu: None,
                encap: None,
                table: MAIN_TABLE,
                line: 2,
            });
        }
        c
    }

    #[test]
    fn snapshots_are_stable_across_publish() {
        let h = SnapshotHandle::new(Snapshot::build(&config("")).unwrap());
        let old = h.load();
        h.publish(Snapshot::build(&config("::/0")).unwrap());
        assert!(old.fib().lookup_v6(Ipv6Addr::LOCALHOST).is_none());
        assert!(h.load().fib().lookup_v6(Ipv6Addr::LOCALHOST).is_some());
    }

    #[test]
    fn unknown_device_names_the_line() {
        let mut c = config("::/0");
        c.routes[0].dev = Some("nope".into());
        let e = Snapshot::build(&c).unwrap_err();
        assert_eq!((e.line, e.token.as_str()), (2, "nope"));
    }
}
