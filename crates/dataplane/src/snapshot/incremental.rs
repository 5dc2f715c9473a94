//! Control lines other than routes as [`Change`]s: what two configurations differ by, when a snapshot can follow
//! it in place rather than being built anew.
//!
//! Today: static neighbours (`neigh add/replace/del`). Any other difference outside the routes (addresses,
//! sysctls, IOAM, `sr`) returns `None`, and the caller builds the snapshot from the configuration.

use super::{Change, Snapshot};
use crate::spec::Config;
use crate::wire::ethernet::Mac;
use std::collections::BTreeMap;
use std::net::IpAddr;

/// The changes that take a snapshot of `before` to one of `after`, leaving out the routes (the caller has them
/// from its transaction), when everything else that differs is one of the kinds a [`Change`] carries; `None`
/// when something else differs (then the snapshot must be built from `after`). `snap` names the devices.
pub fn changes_between(before: &Config, after: &Config, snap: &Snapshot) -> Option<Vec<Change>> {
    let same = before.links == after.links
        && before.addrs == after.addrs
        && before.ioam_namespaces == after.ioam_namespaces
        && before.ioam_schemas == after.ioam_schemas
        && before.ioam_domains == after.ioam_domains
        && before.sr_tunsrc == after.sr_tunsrc
        && before.hmac_keys == after.hmac_keys
        && before.sysctl == after.sysctl;
    if !same {
        return None;
    }
    let index = |c: &Config| -> Option<BTreeMap<(usize, IpAddr), Mac>> {
        c.neighs
            .iter()
            .map(|n| Some(((snap.dev_id(&n.dev)?, n.addr), n.lladdr)))
            .collect()
    };
    let (old, new) = (index(before)?, index(after)?);
    let mut changes = Vec::new();
    for (&(dev, addr), _) in old.iter().filter(|(k, _)| !new.contains_key(k)) {
        changes.push(Change::StaticNeighDel { dev, addr });
    }
    for (&(dev, addr), &mac) in &new {
        if old.get(&(dev, addr)) != Some(&mac) {
            changes.push(Change::StaticNeighSet { dev, addr, mac });
        }
    }
    Some(changes)
}
