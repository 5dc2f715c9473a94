//! Transactions on a [`Builder`]: lines applied to a running configuration as one step, undone exactly when one
//! fails, without copying the routes.
//!
//! Route lines log what they did (a route pushed, removed or replaced, with the route it took away); the first
//! line that is not a route line saves everything but the routes (links, addresses, neighbours, IOAM, HMAC keys,
//! sysctls: small next to a routing table). Undoing replays the log backwards and puts the saved part back. The
//! log also tells which routes the transaction changed ([`RouteDelta`]), so that the caller changes its
//! forwarding table by those routes alone.

use super::{Builder, Parser, Result, RouteKey, route_at, route_key};
use crate::{Config, Route};
use std::collections::HashMap;
use std::net::IpAddr;

/// What an open transaction changed, to undo it.
#[derive(Debug, Default)]
pub(super) struct Undo {
    /// Route operations, in the order they were made.
    routes: Vec<RouteOp>,
    /// Everything but the routes, as it was before the transaction's first other line.
    rest: Option<Box<Rest>>,
    /// The lengths of the reference lists (hmac, table, trace) when the transaction began.
    refs: [usize; 3],
    stdin_used_by: Option<usize>,
}

/// One change to the route list, with what undoes it.
#[derive(Debug)]
enum RouteOp {
    /// A route with this key was pushed at the end.
    Pushed(RouteKey),
    /// The route at `at` was removed, the last one moved into its place.
    Removed { at: usize, route: Route },
    /// The route at `at` (same key) was replaced; `old` was there.
    Replaced { at: usize, old: Route },
}

/// Everything a non-route line may change.
#[derive(Debug)]
struct Rest {
    /// The configuration, its routes left out.
    cfg: Config,
    links: HashMap<String, usize>,
    addrs: HashMap<(IpAddr, String), usize>,
    neighs: HashMap<(IpAddr, String), usize>,
}

/// The routes a transaction changed, by their (table, prefix, metric): each route that is no longer there as it
/// was, and each route that is there now and was not before (a replaced route is in both). A route added and
/// removed again, or replaced by an equal one, is in neither.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct RouteDelta {
    /// Whether a line other than `route ...` was applied: then anything may have changed (links' addresses,
    /// neighbours, keys, sysctls), not only the routes below.
    pub other_lines: bool,
    /// The routes taken away, as they were.
    pub removed: Vec<Route>,
    /// The routes put in, as they are.
    pub added: Vec<Route>,
}

impl<'s> Builder<'s> {
    /// Opens a transaction: lines applied through it are undone together when it is dropped without
    /// [`Transaction::commit`] (a failing line already undoes itself). Its cost is that of the lines: a route
    /// line is an index lookup and a log entry, never a copy of the routes.
    pub fn transaction(&mut self) -> Transaction<'_, 's> {
        let p = &mut self.p;
        p.undo = Some(Undo {
            refs: [p.hmac_refs.len(), p.table_refs.len(), p.trace_refs.len()],
            stdin_used_by: p.stdin_used_by,
            ..Undo::default()
        });
        Transaction { b: self }
    }
}

/// Lines applied to a [`Builder`] as one step (see [`Builder::transaction`]). Dropped without
/// [`Transaction::commit`], it undoes them all.
#[derive(Debug)]
pub struct Transaction<'b, 's> {
    b: &'b mut Builder<'s>,
}

impl Transaction<'_, '_> {
    /// Applies one line (numbered `line_no` in errors), as [`Builder::line`] does.
    pub fn line(&mut self, line_no: usize, text: &str) -> Result<()> {
        self.b.line(line_no, text)
    }

    /// The configuration with the lines applied so far.
    pub fn config(&self) -> &Config {
        self.b.config()
    }

    /// What the configuration was, its routes left out, before the transaction's first line that is not a route
    /// line (`None` when there is none): with [`Transaction::config`], what such lines changed.
    pub fn rest_before(&self) -> Option<&Config> {
        let u = self.b.p.undo.as_ref()?;
        u.rest.as_ref().map(|r| &r.cfg)
    }

    /// The checks that need every line ([`Builder::finish`]'s, for this transaction's lines), then the routes
    /// the transaction changed. The transaction stays open: commit it, or drop it to undo it.
    pub fn check(&self) -> Result<RouteDelta> {
        let p = &self.b.p;
        let u = p.undo.as_ref().expect("a transaction has its undo log");
        p.check_refs(u.refs)?;
        // The state of each key before the transaction: the one its first operation found.
        let mut before: HashMap<RouteKey, Option<&Route>> = HashMap::new();
        let mut order = Vec::new();
        for op in &u.routes {
            let (key, was) = match op {
                RouteOp::Pushed(k) => (*k, None),
                RouteOp::Removed { route, .. } => (route_key(route), Some(route)),
                RouteOp::Replaced { old, .. } => (route_key(old), Some(old)),
            };
            before.entry(key).or_insert_with(|| {
                order.push(key);
                was
            });
        }
        let mut delta = RouteDelta {
            other_lines: u.rest.is_some(),
            ..RouteDelta::default()
        };
        for key in order {
            let was = before[&key];
            let now = p.routes.get(&key).map(|i| &p.cfg.routes[i as usize]);
            if was == now {
                continue;
            }
            delta.removed.extend(was.cloned());
            delta.added.extend(now.cloned());
        }
        Ok(delta)
    }

    /// Keeps the lines applied. The references the transaction's lines made (checked by [`Transaction::check`])
    /// are dropped, so that a long-lived builder does not collect them.
    pub fn commit(self) {
        let p = &mut self.b.p;
        if let Some(u) = p.undo.take() {
            p.hmac_refs.truncate(u.refs[0]);
            p.table_refs.truncate(u.refs[1]);
            p.trace_refs.truncate(u.refs[2]);
            // Only after removals: never while the list grows (a shrink there would make every push a copy).
            if u.routes
                .iter()
                .any(|op| matches!(op, RouteOp::Removed { .. }))
            {
                p.shrink_routes();
            }
            p.routes.compact(u.routes.len());
        }
    }
}

impl Drop for Transaction<'_, '_> {
    fn drop(&mut self) {
        self.b.p.rollback();
    }
}

impl Parser<'_> {
    /// Adds route `r` at the end of the list (its key is not in the index).
    pub(super) fn route_push(&mut self, r: Route) {
        let key = route_key(&r);
        self.routes.insert(key, route_at(self.cfg.routes.len()));
        self.cfg.routes.push(r);
        if let Some(u) = &mut self.undo {
            u.routes.push(RouteOp::Pushed(key));
        }
        self.index_changed();
    }

    /// After a change to the route index: when a file is loaded (no transaction) or a transaction is large (1,024
    /// route operations so far), its changes are merged as soon as they are an eighth of the index
    /// ([`RouteIndex::merge_if_due`](super::route_index::RouteIndex::merge_if_due)), so that the tree of changes
    /// stays small: its nodes are placed among the routes' own small blocks, and where a large tree is freed its
    /// holes stay resident around them (300,000 routes from a file: 10 MiB). A small request never merges (its
    /// cost stays that of a lookup); its changes wait for a large one.
    fn index_changed(&mut self) {
        if self
            .undo
            .as_ref()
            .is_none_or(|u| u.routes.len() >= super::route_index::MERGE_MIN)
        {
            self.routes.merge_if_due();
        }
    }

    /// Replaces the route at `at` by `r`, of the same key.
    pub(super) fn route_replace(&mut self, at: usize, r: Route) {
        let old = std::mem::replace(&mut self.cfg.routes[at], r);
        if let Some(u) = &mut self.undo {
            u.routes.push(RouteOp::Replaced { at, old });
        }
    }

    /// Removes the route at `at`; the last route takes its place (the list's order is not the table's: routes are
    /// found by key, and shown in the kernel's order).
    pub(super) fn route_remove(&mut self, at: usize) {
        let route = self.cfg.routes.swap_remove(at);
        self.routes.remove(&route_key(&route));
        if let Some(moved) = self.cfg.routes.get(at) {
            self.routes.insert(route_key(moved), route_at(at));
        }
        if let Some(u) = &mut self.undo {
            u.routes.push(RouteOp::Removed { at, route });
        } else {
            self.shrink_routes();
        }
        self.index_changed();
    }

    /// Gives back the room of removed routes once the list has more than an eighth of room left (a batch
    /// deleted), keeping a sixteenth more than the routes: the room a large list grew into was written and stays
    /// resident until given back, and growing doubles the room, so each copy is paid for by a sixteenth of the
    /// routes coming or going (amortised; a shrink to the routes alone made the add after every delete copy the
    /// whole list). Not while a transaction may still put them back.
    pub(super) fn shrink_routes(&mut self) {
        let (len, cap) = (self.cfg.routes.len(), self.cfg.routes.capacity());
        if cap > 1024 && len + len / 8 < cap {
            self.cfg.routes.shrink_to(len + len / 16);
        }
    }

    /// In a transaction, saves everything but the routes before the first line that may change it.
    pub(super) fn save_rest(&mut self) {
        let Some(u) = &mut self.undo else {
            return;
        };
        if u.rest.is_some() {
            return;
        }
        let routes = std::mem::take(&mut self.cfg.routes);
        u.rest = Some(Box::new(Rest {
            cfg: self.cfg.clone(),
            links: self.links.clone(),
            addrs: self.addrs.clone(),
            neighs: self.neighs.clone(),
        }));
        self.cfg.routes = routes;
    }

    /// Undoes the open transaction, if any: the route log backwards, then the saved rest.
    fn rollback(&mut self) {
        let Some(u) = self.undo.take() else {
            return;
        };
        for op in u.routes.into_iter().rev() {
            match op {
                RouteOp::Pushed(key) => {
                    self.cfg.routes.pop();
                    self.routes.remove(&key);
                }
                RouteOp::Replaced { at, old } => self.cfg.routes[at] = old,
                RouteOp::Removed { at, route } => {
                    self.routes.insert(route_key(&route), route_at(at));
                    self.cfg.routes.push(route);
                    let last = self.cfg.routes.len() - 1;
                    if at != last {
                        self.cfg.routes.swap(at, last);
                        self.routes
                            .insert(route_key(&self.cfg.routes[last]), route_at(last));
                    }
                }
            }
        }
        if let Some(rest) = u.rest {
            let Rest {
                mut cfg,
                links,
                addrs,
                neighs,
            } = *rest;
            cfg.routes = std::mem::take(&mut self.cfg.routes);
            self.cfg = cfg;
            self.links = links;
            self.addrs = addrs;
            self.neighs = neighs;
        }
        self.hmac_refs.truncate(u.refs[0]);
        self.table_refs.truncate(u.refs[1]);
        self.trace_refs.truncate(u.refs[2]);
        self.stdin_used_by = u.stdin_used_by;
    }
}
