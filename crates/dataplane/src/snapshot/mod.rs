//! Everything a router is configured with, as one immutable value: interfaces, neighbours, local addresses,
//! tunnels, HMAC keys, IOAM namespaces, sysctls, and the FIB with its forwarding plans.
//!
//! A [`Snapshot`] is built from a [`Config`](crate::spec::Config) and published through a [`SnapshotHandle`] (an `ArcSwap`). Workers
//! load the current one once per batch and borrow it for every packet of the batch: no lock and no reference count
//! per packet. A change is a new snapshot, published whole; a batch in flight finishes on the one it started with.

use crate::fib::{DevId, FastBuild, Fib, RouteEntry, RouteId, TunnelId};
use crate::hop::ioam::IoamNode;
use crate::hop::saddr;
use crate::plan::{Plan, Templates, TemplatesBuilder};
use crate::spec::{ConfigError, DevSysctls, MAIN_TABLE, Route};
use crate::tunnel::seg6::HmacSecret;
use crate::tunnel::{InputTunnel, Tunnel};
use crate::wire::ethernet::{self, Mac};
use ipnet::IpNet;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

mod addr;
mod apply;
mod build;
mod deps;
mod driver;
mod incremental;
mod plans;
mod settings;
mod writer;

pub use driver::{EncapWay, NoWay};
pub use incremental::changes_between;
pub use settings::Settings;
pub use writer::{JOURNAL_MAX, SnapshotHandle, SnapshotWriter};

/// The route id of tunnels that no route of the main table carries (policies of End.B6 routes, tunnels of routes
/// in other tables): nothing replans them.
const NO_ROUTE: RouteId = RouteId::MAX;

/// Smallest rx headroom lwt6 uses, whatever the routes (room for an Ethernet header and alignment).
pub const MIN_RX_HEADROOM: usize = 64;

/// An interface of the router.
#[derive(Debug, Clone)]
pub struct Link {
    /// The interface name the configuration and `show` use (`eth0`); traces print it.
    pub name: String,
    /// The source of every frame sent out of it, and the address ARP and NDP answer with for its addresses.
    pub mac: Mac,
    /// The MTU of its routes that set none; it also bounds the frames it receives (with an Ethernet header and one
    /// VLAN tag).
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
    /// A route of the main table that drops what it matches ([`Origin::Reject`](crate::fib::Origin::Reject)),
    /// mirrored from the kernel (`lwt6 run --kernel-routes`); removed with [`Change::DelRoute`].
    AddReject {
        /// The route's prefix.
        prefix: IpNet,
        /// Its metric.
        metric: u32,
        /// What it does with a packet.
        kind: crate::fib::RejectKind,
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
    /// `neigh add` / `neigh replace`: a static entry set (it wins over a learned one).
    StaticNeighSet {
        /// Device.
        dev: DevId,
        /// The neighbour's address.
        addr: IpAddr,
        /// Its link-layer address.
        mac: Mac,
    },
    /// `neigh del`: a static entry removed (a learned one for the same address applies again).
    StaticNeighDel {
        /// Device.
        dev: DevId,
        /// The neighbour's address.
        addr: IpAddr,
    },
    /// `addr add ADDR/LEN dev DEV`: one more address of the router on `dev`, with its connected route (metric
    /// 256 for IPv6, 0 for IPv4, as the kernel adds it). What follows it in the snapshot: the local-address set,
    /// the connected route (and the tunnels routed into its prefix), the plans of the routes whose prefix now
    /// contains one of our addresses, and the outer source every tunnel selects for its destination (RFC 6724,
    /// `crate::hop::saddr`). [`changes_between`] makes it only where the result equals a rebuild: not when a
    /// route of the same prefix and metric exists already, nor when a route configured without `dev` has its
    /// gateway inside the new prefix (its device would be looked up again).
    ///
    /// For followers of the table (the XDP tier): a route was added (the connected one,
    /// [`Origin::Connected`](crate::fib::Origin::Connected), no gateway, no plan) and `is_local6`/`is_local4`
    /// answer yes for `addr`.
    AddrAdd {
        /// Device.
        dev: DevId,
        /// The address.
        addr: IpAddr,
        /// Its prefix length (the connected route's).
        prefix_len: u8,
        /// The line the change came from (for errors and the connected route).
        line: usize,
    },
    /// `sysctl ...`, `ioam namespace|schema|domain ...`, `sr tunsrc set ...`, `sr hmac set ...`: the node's
    /// settings as they are after the lines (all of them: they are small next to a table), replacing the
    /// snapshot's. Only the plans that depend on a setting are made again: seg6 `encap`/`encap.red` plans (outer
    /// source, HMAC key; `seg6_flowlabel` is read per packet) and ioam6 plans (node and interface ids, namespaces
    /// baked into their templates) whose way out is known (see `deps.rs`); everything else reads the settings
    /// per packet.
    ///
    /// For followers of the table: no route changes; plans of tunnel routes may (their templates, or whether
    /// they have one), and the node's IOAM identity and sysctls ([`Snapshot::ioam`], [`Snapshot::seg6_first_word`]).
    Settings(Box<Settings>),
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
    /// tunnel's destination (seg6 first SID, ioam6 tundst), resolved once when the tunnel is installed, with the
    /// value of `addr_gen` then; used when the packet's route device is that one and no address came since.
    tun_src: Vec<(Option<DevId>, Option<Ipv6Addr>, u32)>,
    /// Addresses added in place so far (`Change::AddrAdd`): a new address may win the source selection for any
    /// destination, so it makes every cached `tun_src` stale at once (selected per packet again, as a rebuild
    /// would select it) instead of a pass over the tunnels.
    addr_gen: u32,
    /// Routes planned one by one after the build (`plan_route`), since the build: what a change cost in plans.
    routes_planned: u64,
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
    /// What depends on what, beyond the routes themselves: the tunnels whose plan depends on the node's settings,
    /// the gateways of routes configured without a device (see `deps.rs`).
    deps: deps::Deps,
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
            return self.by_name.get(&**n).copied().ok_or_else(|| {
                cfg_err(
                    r.line as usize,
                    n,
                    "no such device (declare it with 'link add')",
                )
            });
        }
        let Some(via) = r.via else {
            return Err(cfg_err(r.line as usize, "", "a route needs 'dev' or 'via'"));
        };
        let found = match via {
            IpAddr::V6(a) => self.connected.lookup_v6(a),
            IpAddr::V4(a) => self.connected.lookup_v4(a),
        };
        found.and_then(|c| c.dev.get()).ok_or_else(|| {
            cfg_err(
                r.line as usize,
                &via.to_string(),
                "gateway is not on a connected network (add 'dev')",
            )
        })
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

    /// The interface called `name`.
    pub fn dev_id(&self, name: &str) -> Option<DevId> {
        self.links.iter().position(|l| l.name == name)
    }

    /// Shares with `other` the route slots of each routing table that both hold equal (the snapshot writer's
    /// two snapshots, once they have applied the same changes: see [`crate::fib::RouteSlots`]).
    pub(crate) fn share_routes_from(&mut self, other: &Snapshot) {
        self.fib.share_routes_from(&other.fib);
        for (id, f) in &mut self.tables {
            if let Some(o) = other.tables.get(id) {
                f.share_routes_from(o);
            }
        }
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

    /// `net.ipv6.seg6_flowlabel`: above 0, seg6 encap plans are not executed (the outer flow label is a hash of
    /// the flow, computed by the general path); for executors of the plans outside this crate (the XDP tier).
    pub fn seg6_flowlabel(&self) -> i32 {
        self.seg6_flowlabel
    }

    /// This node's IOAM identity and namespaces (for executors of the plans outside this crate: the XDP tier's
    /// transit fill).
    pub fn ioam(&self) -> &IoamNode {
        &self.ioam
    }

    /// How many routes were planned one by one since the snapshot was built (each change plans again only the
    /// routes it reaches): for tests that a change did not plan again every tunnel.
    pub fn routes_planned(&self) -> u64 {
        self.routes_planned
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
            .unwrap_or_else(|| r.dev.get().map_or(1500, |d| self.links[d].mtu));
        match r.tunnel.get().map(|t| &self.tunnels[t]) {
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
            Some(&(dev, src, generation)) if dev == route_dev && generation == self.addr_gen => src,
            _ => self.source_for(route_dev, dst),
        }
    }

    /// The source address Linux would select for `dst` leaving on `dev` (RFC 6724 rules as the kernel applies
    /// them, see [`saddr`]). The candidates in the kernel's order: the links in their order (the order of their
    /// devices in the namespace, as the configuration declares them), each link's addresses newest first (as
    /// the kernel keeps a device's addresses of one scope), so that a tie goes where the kernel's goes; only
    /// `dev`'s for a link-local or multicast destination.
    pub fn source_for(&self, dev: Option<DevId>, dst: &Ipv6Addr) -> Option<Ipv6Addr> {
        source_among(&self.links, dev, dst)
    }
}

/// [`Snapshot::source_for`] over `links` (the snapshot's).
pub(super) fn source_among(links: &[Link], dev: Option<DevId>, dst: &Ipv6Addr) -> Option<Ipv6Addr> {
    let oif_only = dev.is_some() && saddr::outgoing_interface_only(dst);
    let cands = links
        .iter()
        .enumerate()
        .filter(move |(i, _)| !oif_only || Some(*i) == dev)
        .flat_map(|(i, l)| {
            l.addrs6
                .iter()
                .rev()
                .map(move |(a, plen)| (*a, *plen, Some(i) == dev))
        });
    saddr::select(cands, dst)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Config;

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
                reject: None,
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

    /// A snapshot of links `links` (in that order) and /64 addresses `addrs` (address, link), added in that order.
    fn links_and_addrs(links: &[&str], addrs: &[(&str, &str)]) -> Snapshot {
        let mut c = Config::default();
        for (i, n) in links.iter().enumerate() {
            c.links.push(crate::spec::Link {
                name: (*n).into(),
                mac: None,
                mtu: 1500,
                line: i + 1,
            });
        }
        for (i, (addr, dev)) in addrs.iter().enumerate() {
            c.addrs.push(crate::spec::Addr {
                addr: addr.parse().unwrap(),
                prefix_len: 64,
                dev: (*dev).into(),
                line: 10 + i,
            });
        }
        Snapshot::build(&c).unwrap()
    }

    /// A gateway's route list gives back the room of removed routes when it is compacted: 4,096 routes through
    /// one gateway, all but 16 deleted, leave a list of at most twice the live routes (and 16), not the room of
    /// 4,096.
    #[test]
    fn gateway_lists_shrink_after_deletions() {
        let mut s = links_and_addrs(&["r1"], &[("fd00:2::1", "r1")]);
        let gw: Ipv6Addr = "fd00:2::2".parse().unwrap();
        let route = |i: u32| crate::spec::Route {
            reject: None,
            prefix: format!("2001:db8:{i:x}::/64").parse().unwrap(),
            via: Some(gw.into()),
            dev: Some("r1".into()),
            metric: 1024,
            mtu: None,
            encap: None,
            table: MAIN_TABLE,
            line: 0,
        };
        for i in 0..4096 {
            s.apply(&Change::AddRoute(route(i))).unwrap();
        }
        assert_eq!(s.gateway_list_room(0, gw).map(|r| r.0), Some(4096));
        for i in 16..4096 {
            let r = route(i);
            s.apply(&Change::DelRoute {
                prefix: r.prefix,
                metric: r.metric,
                table: r.table,
                line: 0,
            })
            .unwrap();
        }
        let (len, room) = s.gateway_list_room(0, gw).unwrap();
        assert!(
            len <= 2 * 16 + 16 && room <= 2 * 16 + 16,
            "{len} ids in room for {room}"
        );
    }

    /// Tied sources as the kernel breaks the tie (observed with `ip -6 route get` on Linux 6.18.44, and on the
    /// wire by tests/kernel/test_saddr.py): addresses fd00:2::9, fd00:2::1, fd00:2::5 added to one device in that
    /// order, fd00:1::2 to a device before it; a route to fc00::a on the second device takes its newest address
    /// (fd00:2::5); through a third device with no address, the first device's address (fd00:1::2), although
    /// it was added last.
    #[test]
    fn tied_sources_go_where_the_kernels_go() {
        let s = links_and_addrs(
            &["r0", "r1", "r2"],
            &[
                ("fd00:2::9", "r1"),
                ("fd00:2::1", "r1"),
                ("fd00:2::5", "r1"),
                ("fd00:1::2", "r0"),
            ],
        );
        let dst: Ipv6Addr = "fc00::a".parse().unwrap();
        assert_eq!(s.source_for(Some(1), &dst), "fd00:2::5".parse().ok());
        assert_eq!(s.source_for(Some(2), &dst), "fd00:1::2".parse().ok());
    }

    /// For a link-local or multicast destination the kernel takes the outgoing device's addresses alone (Linux
    /// 6.18.44, `ip -6 route get fe80::9 oif sa1` with fe80::1 and fd00:1::2 on sa0, fd00:2::1 on sa1:
    /// `src fd00:2::1`; `oif sa0`: `src fe80::1`; `ff02::9 oif sa1`: `src fd00:2::1`), where RFC 6724's scope
    /// rule alone would take fe80::1 of the other device.
    #[test]
    fn link_local_and_multicast_destinations_take_the_outgoing_devices_addresses() {
        let s = links_and_addrs(
            &["sa0", "sa1"],
            &[
                ("fe80::1", "sa0"),
                ("fd00:1::2", "sa0"),
                ("fd00:2::1", "sa1"),
            ],
        );
        let ll: Ipv6Addr = "fe80::9".parse().unwrap();
        let mc: Ipv6Addr = "ff02::9".parse().unwrap();
        assert_eq!(s.source_for(Some(1), &ll), "fd00:2::1".parse().ok());
        assert_eq!(s.source_for(Some(0), &ll), "fe80::1".parse().ok());
        assert_eq!(s.source_for(Some(1), &mc), "fd00:2::1".parse().ok());
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
