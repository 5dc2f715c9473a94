//! Control lines other than routes as [`Change`]s: what two configurations differ by, when a snapshot can follow
//! it in place rather than being built anew.
//!
//! Static neighbours (`neigh add`) become [`Change::StaticNeighSet`] / [`Change::StaticNeighDel`], addresses
//! added (`addr add`) [`Change::AddrAdd`], the node's settings (`sysctl`, `ioam namespace|schema|domain`,
//! `sr tunsrc|hmac`) one [`Change::Settings`]. Anything else outside the routes (links, addresses removed or
//! reordered, an address whose connected route would not equal a rebuild's: see [`Change::AddrAdd`]) returns
//! `None`, and the caller builds the snapshot from the configuration.

use super::{Change, Settings, Snapshot};
use crate::spec::Config;
use crate::wire::ethernet::Mac;
use std::collections::BTreeMap;
use std::net::IpAddr;

/// The changes that take a snapshot of `before` to one of `after`, leaving out the routes (the caller has them
/// from its transaction), when everything else that differs is one of the kinds a [`Change`] carries; `None`
/// when something else differs (then the snapshot must be built from `after`). `snap` (the snapshot of `before`)
/// names the devices and holds the routes an address's connected route is checked against. The order: addresses,
/// neighbours, settings (the settings' plans are made last, with the addresses and neighbours of `after`).
pub fn changes_between(before: &Config, after: &Config, snap: &Snapshot) -> Option<Vec<Change>> {
    if before.links != after.links || !after.addrs.starts_with(&before.addrs) {
        return None;
    }
    let mut changes = Vec::new();
    for a in &after.addrs[before.addrs.len()..] {
        if !snap.addr_in_place(a.addr, a.prefix_len) {
            return None;
        }
        changes.push(Change::AddrAdd {
            dev: snap.dev_id(&a.dev)?,
            addr: a.addr,
            prefix_len: a.prefix_len,
            line: a.line,
        });
    }
    // Two new addresses of one prefix: the second's connected route would meet the first's (a rebuild's order).
    let mut nets: Vec<_> = after.addrs[before.addrs.len()..]
        .iter()
        .filter_map(|a| ipnet::IpNet::new(a.addr, a.prefix_len).ok())
        .map(|n| n.trunc())
        .collect();
    let n = nets.len();
    nets.sort_unstable();
    nets.dedup();
    if nets.len() != n {
        return None;
    }
    let index = |c: &Config| -> Option<BTreeMap<(usize, IpAddr), Mac>> {
        c.neighs
            .iter()
            .map(|n| Some(((snap.dev_id(&n.dev)?, n.addr), n.lladdr)))
            .collect()
    };
    if before.neighs != after.neighs {
        let (old, new) = (index(before)?, index(after)?);
        for (&(dev, addr), _) in old.iter().filter(|(k, _)| !new.contains_key(k)) {
            changes.push(Change::StaticNeighDel { dev, addr });
        }
        for (&(dev, addr), &mac) in &new {
            if old.get(&(dev, addr)) != Some(&mac) {
                changes.push(Change::StaticNeighSet { dev, addr, mac });
            }
        }
    }
    if !Settings::same(before, after) {
        changes.push(Change::Settings(Box::new(Settings::of(after))));
    }
    Some(changes)
}
