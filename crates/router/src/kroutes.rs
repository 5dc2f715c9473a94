//! `lwt6 run --kernel-routes`: the kernel's main routing table mirrored into the running router over rtnetlink.
//! The monitor subscribes first, then the table is dumped (so no change falls between the two); every change
//! after that is applied as it arrives, in place through the control thread's `SnapshotWriter` (the path route
//! additions from `lwt6 ctl` take). A receive buffer overrun (the kernel dropped notifications) re-dumps: the
//! mirrored routes are replaced by the dump. The mirrored routes are kept apart from the configuration file's,
//! and put back into every snapshot rebuilt from it (SIGHUP, a control line). See docs/live.md.

use crate::control::Control;
use crate::{Error, fail};
use ipnet::IpNet;
use lwt6_dataplane::snapshot::Change;
use lwt6_dataplane::spec::Route;
use lwt6_netlink::{Error as NetlinkError, RouteChange, RouteMonitor};
use std::collections::BTreeMap;

/// The routes mirrored from the kernel, by (prefix, metric, table).
#[derive(Debug, Clone, Default)]
pub struct KernelRoutes {
    routes: BTreeMap<(IpNet, u32, u32), Route>,
}

impl KernelRoutes {
    /// The mirrored routes.
    pub fn routes(&self) -> impl Iterator<Item = &Route> {
        self.routes.values()
    }

    /// How many routes are mirrored.
    pub fn len(&self) -> usize {
        self.routes.len()
    }

    /// Whether no route is mirrored.
    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }
}

fn key(r: &Route) -> (IpNet, u32, u32) {
    (r.prefix, r.metric, r.table)
}

/// Applies one kernel route change; a change lwt6 cannot take (a prefix and metric the configuration already
/// has, say) is printed and left out.
fn apply(control: &mut Control, ch: &RouteChange) {
    if let RouteChange::Unreadable(why) = ch {
        log::warn!(target: "kernel-route-not-read", "kernel route not read: {why}");
        return;
    }
    let replace = matches!(ch, RouteChange::Replace(_));
    for c in ch.to_changes() {
        match control.apply_in_place(std::slice::from_ref(&c)) {
            Ok(()) => match &c {
                Change::AddRoute(r) => {
                    control.kernel_routes.routes.insert(key(r), r.clone());
                }
                Change::DelRoute {
                    prefix,
                    metric,
                    table,
                    ..
                } => {
                    control
                        .kernel_routes
                        .routes
                        .remove(&(*prefix, *metric, *table));
                }
                _ => {}
            },
            // A replacement's removal of a route lwt6 did not hold: nothing to remove.
            Err(_) if replace && matches!(c, Change::DelRoute { .. }) => {}
            Err((_, e)) => {
                log::warn!(target: "kernel-route-not-applied",
                    "kernel route not applied: {}: {e}", change_line(ch));
            }
        }
    }
}

/// A kernel route change as the line that says it: `-6 route add|replace|del ...`.
fn change_line(ch: &RouteChange) -> String {
    let (verb, r) = match ch {
        RouteChange::Add(r) => ("add", r),
        RouteChange::Replace(r) => ("replace", r),
        RouteChange::Del(r) => ("del", r),
        RouteChange::Unreadable(why) => return format!("(unreadable: {why})"),
    };
    // `to_line` says `-6 route add ...`: the verb is the change's.
    r.to_line()
        .replacen("route add ", &format!("route {verb} "), 1)
}

/// Replaces the mirrored routes by a fresh dump of the kernel's table.
fn resync(control: &mut Control) -> Result<(), NetlinkError> {
    let dump = lwt6_netlink::dump()?;
    let old = std::mem::take(&mut control.kernel_routes.routes);
    for (prefix, metric, table) in old.into_keys() {
        let _ = control.apply_in_place(&[Change::DelRoute {
            prefix,
            metric,
            table,
            line: 0,
        }]);
    }
    for ch in &dump {
        apply(control, ch);
    }
    Ok(())
}

/// Subscribes to the kernel's route changes and applies its table: the monitor to follow.
pub fn start(control: &mut Control) -> Result<RouteMonitor, Error> {
    let m = RouteMonitor::new().map_err(|e| fail(format!("--kernel-routes: {e}")))?;
    resync(control).map_err(|e| fail(format!("--kernel-routes: {e}")))?;
    log::info!(
        "--kernel-routes: {} kernel route{} applied",
        control.kernel_routes.len(),
        if control.kernel_routes.len() == 1 {
            ""
        } else {
            "s"
        }
    );
    Ok(m)
}

/// Applies the changes waiting on the monitor (without blocking); after an overrun, dumps again.
pub fn follow(m: &mut RouteMonitor, control: &mut Control) {
    match m.poll() {
        Ok(changes) => {
            for ch in &changes {
                apply(control, ch);
            }
        }
        Err(NetlinkError::Overrun) => {
            log::warn!("--kernel-routes: notifications lost (overrun): dumping the table again");
            if let Err(e) = resync(control) {
                log::error!("--kernel-routes: {e}");
            }
        }
        Err(e) => log::error!("--kernel-routes: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lwt6_netlink::{KernelRoute, RouteKind};

    #[test]
    fn a_change_line_says_its_verb() {
        let r = KernelRoute {
            table: 254,
            kind: RouteKind::Unicast,
            protocol: 4,
            prefix: "fd00:9c::/64".parse().unwrap(),
            via: None,
            dev: Some("r1".into()),
            metric: 1024,
            mtu: None,
            mtu_locked: false,
            encap: None,
            multipath: 2,
            src_len: 0,
        };
        assert_eq!(
            change_line(&RouteChange::Del(r.clone())),
            "-6 route del fd00:9c::/64 dev r1 metric 1024"
        );
        assert!(change_line(&RouteChange::Replace(r.clone())).starts_with("-6 route replace "));
        assert!(change_line(&RouteChange::Add(r)).starts_with("-6 route add "));
    }
}
