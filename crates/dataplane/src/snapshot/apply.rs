//! A [`Change`] applied to a snapshot: the next snapshot, re-planning only the routes the change reaches.

use super::{Change, DynNeigh, Snapshot, cfg_err};
use crate::fib::{OptId, Origin, RouteEntry};
use crate::spec::{ConfigError, Encap, MAIN_TABLE, Route};
use std::net::IpAddr;

impl Snapshot {
    /// Applies one change to this snapshot in place, as building it anew from the changed configuration would
    /// (same routes, same plans, same bytes out); a change that cannot apply is refused before anything changes.
    /// Cost: the FIB entry, the plan, and the plans of the tunnels routed through the changed prefix, not the
    /// table. The tunnel id and plan slot of a removed route are reused by the next ones.
    pub fn apply(&mut self, change: &Change) -> Result<(), ConfigError> {
        match change {
            Change::ReplaceRoute(r) => {
                // Checked as an addition first, so that a refused replacement leaves the old route.
                if r.reject.is_none() {
                    self.route_dev(r)?;
                }
                let exists = self
                    .table(r.table)
                    .is_some_and(|f| f.contains(r.prefix, r.metric));
                self.check_keys(r)?;
                if exists {
                    self.apply(&Change::DelRoute {
                        prefix: r.prefix,
                        metric: r.metric,
                        table: r.table,
                        line: r.line as usize,
                    })?;
                }
                self.apply(&Change::AddRoute(r.clone()))
            }
            Change::AddRoute(r) => {
                if r.reject.is_none() {
                    self.route_dev(r)?;
                }
                if self
                    .table(r.table)
                    .is_some_and(|f| f.contains(r.prefix, r.metric))
                {
                    return Err(cfg_err(
                        r.line as usize,
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
                        let gone = f.route(id).cloned();
                        // Its slot freed now, as in the main table (below).
                        f.trim_free();
                        gone
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
                    self.forget_gateway_route(&r);
                }
                // Its slot freed now, not at the next change: the last deletion of a batch often frees the
                // most (the slots after it, removed earlier, wait for it), and the request trims the heap after it.
                self.fib.trim_free();
                self.replan_within(*prefix);
                Ok(())
            }
            Change::AddReject {
                prefix,
                metric,
                kind,
            } => {
                if self.fib.contains(*prefix, *metric) {
                    return Err(cfg_err(
                        0,
                        &prefix.to_string(),
                        format!("route already exists (same prefix and metric {metric})"),
                    ));
                }
                let id = self.fib.insert(RouteEntry {
                    prefix: *prefix,
                    via: None,
                    dev: OptId::NONE,
                    metric: *metric,
                    mtu: None,
                    tunnel: OptId::NONE,
                    origin: Origin::Reject(*kind),
                    line: 0,
                    plan: None,
                });
                self.plan_route(id);
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
            Change::StaticNeighSet { dev, addr, mac } => {
                if *dev >= self.links.len() {
                    return Err(cfg_err(0, &dev.to_string(), "no such device index"));
                }
                match addr {
                    IpAddr::V6(a) => {
                        if self.neigh6.insert((*dev, *a), *mac) != Some(*mac) {
                            self.replan_gateway(*dev, *a);
                        }
                    }
                    IpAddr::V4(a) => {
                        self.neigh4.insert((*dev, *a), *mac);
                    }
                };
                Ok(())
            }
            Change::StaticNeighDel { dev, addr } => {
                match addr {
                    IpAddr::V6(a) => {
                        if self.neigh6.remove(&(*dev, *a)).is_some() {
                            self.replan_gateway(*dev, *a);
                        }
                    }
                    IpAddr::V4(a) => {
                        self.neigh4.remove(&(*dev, *a));
                    }
                };
                Ok(())
            }
            Change::AddrAdd {
                dev,
                addr,
                prefix_len,
                line,
            } => self.add_addr(*dev, *addr, *prefix_len, *line),
            Change::Settings(s) => self.apply_settings(s),
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
        if let Some(Encap::Seg6(s)) = r.encap.as_deref()
            && let Some(k) = s.hmac
            && !self.hmac.contains_key(&k)
        {
            return Err(cfg_err(
                r.line as usize,
                &k.to_string(),
                format!("HMAC key {k} is not defined (add 'sr hmac set {k} sha256 secret S')"),
            ));
        }
        if let Some(Encap::Seg6Local(l)) = r.encap.as_deref()
            && let Some(k) = l.srh.as_ref().and_then(|s| s.hmac)
            && !self.hmac.contains_key(&k)
        {
            return Err(cfg_err(
                r.line as usize,
                &k.to_string(),
                format!("HMAC key {k} is not defined (add 'sr hmac set {k} sha256 secret S')"),
            ));
        }
        Ok(())
    }
}
