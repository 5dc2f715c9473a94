//! The kernel's main routing table as lwt6 last knew it: what the dumps and the notifications of
//! [`lwt6_netlink`] say, by (prefix, metric), before anything is decided about forwarding with it.
//!
//! A notification is applied only when what it changes is clear: a route added where there was none (or the
//! same route again), the one route of a prefix and metric replaced, a route removed that is held. Anything
//! else (a second route of the same prefix and metric, a removal of a route held differently, a message that
//! could not be read) asks for a fresh dump ([`Outcome::NeedsDump`]), which replaces the table whole. Applying
//! changes in order to a state that already has some of them converges on the same table, so notifications
//! that arrive after a dump, reflected in it or not, may be applied to it.

use ipnet::IpNet;
use lwt6_dataplane::spec::MAIN_TABLE;
use lwt6_netlink::{KernelRoute, RouteChange};
use std::collections::BTreeMap;

/// A kernel route's place: (prefix, metric). Only the main table is mirrored.
pub type Key = (IpNet, u32);

/// What applying one notification did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The table changed at this key (or was confirmed there).
    Applied(Key),
    /// A route lwt6 does not mirror (another table, a link-local prefix): nothing to do.
    Ignored,
    /// The change cannot be placed with certainty: dump the table again.
    NeedsDump,
}

/// The kernel's main table, by key: the routes the kernel holds there, in the order it listed them (almost
/// always one; several when routes of the same prefix and metric differ by device, gateway or source prefix).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KernelTable {
    routes: BTreeMap<Key, Vec<KernelRoute>>,
}

/// Whether lwt6 mirrors a kernel route at all: the main table, a destination that is not link-local
/// (`fe80::/10` is never forwarded, RFC 4291 §2.5.6; the kernel keeps one `fe80::/64` per interface).
pub fn mirrored(r: &KernelRoute) -> bool {
    let link_local = match r.prefix {
        IpNet::V6(p) => p.prefix_len() >= 10 && p.addr().segments()[0] & 0xffc0 == 0xfe80,
        IpNet::V4(_) => false,
    };
    r.table == MAIN_TABLE && !link_local
}

/// The key of a route.
pub fn key(r: &KernelRoute) -> Key {
    (r.prefix, r.metric)
}

/// Whether two routes of one key are the same kernel route (a removal names it by these; its other attributes,
/// the MTU say, may have been changed since by a replacement).
fn same(a: &KernelRoute, b: &KernelRoute) -> bool {
    a.kind == b.kind
        && a.via == b.via
        && a.dev == b.dev
        && a.src_len == b.src_len
        && a.multipath == b.multipath
}

impl KernelTable {
    /// The table a dump shows (the routes lwt6 mirrors, in the dump's order), and the reasons of the messages
    /// that could not be read.
    pub fn from_dump(dump: &[RouteChange]) -> (KernelTable, Vec<String>) {
        let mut t = KernelTable::default();
        let mut unreadable = Vec::new();
        for ch in dump {
            match ch {
                RouteChange::Add(r) | RouteChange::Replace(r) if mirrored(r) => {
                    t.routes.entry(key(r)).or_default().push(r.clone());
                }
                RouteChange::Unreadable(why) => unreadable.push(why.clone()),
                _ => {}
            }
        }
        (t, unreadable)
    }

    /// Applies one notification (see the module's description).
    pub fn apply(&mut self, ch: &RouteChange) -> Outcome {
        let r = match ch {
            RouteChange::Add(r) | RouteChange::Replace(r) | RouteChange::Del(r) => r,
            RouteChange::Unreadable(_) => return Outcome::NeedsDump,
        };
        if !mirrored(r) {
            return Outcome::Ignored;
        }
        let k = key(r);
        match ch {
            RouteChange::Add(r) => match self.routes.get_mut(&k) {
                None => {
                    self.routes.insert(k, vec![r.clone()]);
                }
                Some(v) => match v.iter_mut().find(|x| same(x, r)) {
                    Some(x) => *x = r.clone(),
                    None => return Outcome::NeedsDump,
                },
            },
            RouteChange::Replace(r) => match self.routes.get_mut(&k) {
                None => {
                    self.routes.insert(k, vec![r.clone()]);
                }
                Some(v) if v.len() == 1 => v[0] = r.clone(),
                Some(_) => return Outcome::NeedsDump,
            },
            RouteChange::Del(r) => {
                let Some(v) = self.routes.get_mut(&k) else {
                    // Not held: already gone (a notification the last dump showed the effect of).
                    return Outcome::Applied(k);
                };
                let Some(i) = v.iter().position(|x| same(x, r)) else {
                    return Outcome::NeedsDump;
                };
                v.remove(i);
                if v.is_empty() {
                    self.routes.remove(&k);
                }
            }
            RouteChange::Unreadable(_) => unreachable!("handled above"),
        }
        Outcome::Applied(k)
    }

    /// The routes the kernel holds at `k` (none: an empty slice).
    pub fn get(&self, k: &Key) -> &[KernelRoute] {
        self.routes.get(k).map_or(&[], |v| v.as_slice())
    }

    /// Every key the kernel holds a route at.
    pub fn keys(&self) -> impl Iterator<Item = &Key> {
        self.routes.keys()
    }

    /// How many keys the kernel holds routes at.
    pub fn len(&self) -> usize {
        self.routes.len()
    }

    /// Whether the kernel holds no route lwt6 mirrors.
    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    /// Every route, in key order.
    pub fn routes(&self) -> impl Iterator<Item = &KernelRoute> {
        self.routes.values().flatten()
    }
}
