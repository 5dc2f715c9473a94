//! `lwt6 run --kernel-routes`: the kernel's main routing table mirrored into the running router over rtnetlink.
//! The monitor subscribes first, then the table is dumped (so no change falls between the two); every change
//! after that is applied as it arrives, in place through the control thread's `SnapshotWriter` (the path route
//! additions from `lwt6 ctl` take).
//!
//! Two tables are kept: [`table::KernelTable`], the kernel's main table as the dumps and notifications say it,
//! and the routes installed from it in lwt6's FIB. After every change the installed routes of the keys it
//! touched are made what the kernel's table says (`sync`): added, replaced or removed, each key on its own,
//! so a route that did not change is never touched. A notification whose place is unclear, and a receive
//! buffer overrun (the kernel dropped notifications: the queue is drained, since what is left in it is older
//! than what was lost), take a fresh dump; the new table is built aside and the installed routes are brought to
//! it key by key, without a moment where an unchanged route is missing.
//!
//! Configured routes (the file's, `lwt6 ctl`'s, and the connected ones `addr add` derives) win over mirrored
//! ones of the same prefix and metric: the mirrored one is shadowed (left out of the FIB) while the configured
//! one is there and installed again when it goes; a kernel removal never removes a configured route. A kernel
//! route lwt6 cannot forward with as the kernel does is left out, logged once and counted
//! (`show stats`: `kernel_routes`). See docs/live.md.

pub mod table;

use crate::control::Control;
use crate::{Error, fail};
use lwt6_dataplane::fib::RejectKind;
use lwt6_dataplane::snapshot::{Change, Snapshot};
use lwt6_dataplane::spec::{Encap, MAIN_TABLE, Route, RouteMtu};
use lwt6_netlink::{
    Error as NetlinkError, KernelEncap, KernelRoute, RouteChange, RouteKind, RouteMonitor,
};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use table::{KernelTable, Key, Outcome};

/// The mirror of the kernel's main table.
#[derive(Debug, Clone, Default)]
pub struct KernelRoutes {
    /// The kernel's table as last known.
    kernel: KernelTable,
    /// The routes installed in the FIB from it, by key.
    installed: BTreeMap<Key, Installed>,
    /// Keys whose kernel route is shadowed by a configured route of the same prefix and metric.
    shadowed: BTreeSet<Key>,
    /// Keys with a kernel route left out, and why (each logged once, when it became so).
    skipped: BTreeMap<Key, String>,
    /// Reasons of unreadable route messages already logged.
    unreadable: BTreeSet<String>,
    /// Counters for `show stats`.
    counters: Counters,
    /// Whether the mirror runs (`--kernel-routes`).
    enabled: bool,
    /// A notification could not be placed, or notifications were lost: dump at the next look.
    dirty: bool,
}

/// What the mirror counts (`show stats`: `kernel_routes`).
#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    /// Kernel routes left out (each time a route became skipped, with its reason).
    skipped_total: u64,
    /// Route messages that could not be read.
    unreadable_total: u64,
    /// Receive buffer overruns (notifications the kernel dropped).
    overruns: u64,
    /// Dumps taken (the first one included).
    dumps: u64,
    /// Notifications applied.
    changes: u64,
    /// Multipath routes installed as their stand-in that drops (each time one came).
    multipath_dropped: u64,
}

impl KernelRoutes {
    /// The forwarding routes installed in the FIB from the kernel's table (not the ones that drop).
    pub fn routes(&self) -> impl Iterator<Item = &Route> {
        self.installed.values().filter_map(|i| match i {
            Installed::Route(r) => Some(r),
            Installed::Reject(_) => None,
        })
    }

    /// How many routes are installed from the kernel's table.
    pub fn len(&self) -> usize {
        self.installed.len()
    }

    /// Whether no route is installed from the kernel's table.
    pub fn is_empty(&self) -> bool {
        self.installed.is_empty()
    }

    /// Copies the mirror's cumulative counters (routes skipped in all, dumps, overruns) where the metrics and
    /// `show stats -j` read them.
    pub fn publish_counters(&self, to: &crate::clients::ControlCounters) {
        use std::sync::atomic::Ordering::Relaxed;
        let c = &self.counters;
        to.kernel_routes_skipped.store(c.skipped_total, Relaxed);
        to.kernel_routes_dumps.store(c.dumps, Relaxed);
        to.kernel_routes_overruns.store(c.overruns, Relaxed);
    }

    /// The mirror's state for `show stats` (`None` without `--kernel-routes`).
    pub fn stats_json(&self) -> Option<Value> {
        if !self.enabled {
            return None;
        }
        let c = &self.counters;
        Some(json!({
            "kernel": self.kernel.routes().count(),
            "installed": self.installed.len(),
            "shadowed": self.shadowed.len(),
            "skipped": self.skipped.len(),
            "skipped_total": c.skipped_total,
            "unreadable_total": c.unreadable_total,
            "overruns": c.overruns,
            "dumps": c.dumps,
            "changes": c.changes,
            "dropping": self.installed.values().filter(|i| matches!(i, Installed::Reject(_))).count(),
            "multipath_dropped_total": c.multipath_dropped,
        }))
    }

    /// The mirror's state as a `show stats` text line (empty without `--kernel-routes`).
    pub fn stats_text(&self) -> String {
        if !self.enabled {
            return String::new();
        }
        let c = &self.counters;
        format!(
            "  kernel routes: {} in the kernel's main table, {} installed ({} that drop), {} shadowed by \
             configured routes, {} skipped ({} in all, {} unreadable), {} overruns, {} dumps\n",
            self.kernel.routes().count(),
            self.installed.len(),
            self.installed
                .values()
                .filter(|i| matches!(i, Installed::Reject(_)))
                .count(),
            self.shadowed.len(),
            self.skipped.len(),
            c.skipped_total,
            c.unreadable_total,
            c.overruns,
            c.dumps
        )
    }

    /// Puts the mirrored routes into a snapshot built from the configuration (SIGHUP, a control line that is
    /// not a route): a key the snapshot already has is a configured route's, which shadows the kernel's.
    pub fn reinstall(&mut self, snap: &mut Snapshot, links: &[String]) {
        let before = std::mem::take(&mut self.installed);
        self.shadowed.clear();
        let keys: Vec<Key> = self.kernel.keys().copied().collect();
        for k in keys {
            let want = self.want(&k, configured_in(snap, &k), links);
            match want {
                Want::Install(r) => match snap.apply(&r.change(k)) {
                    Ok(()) if before.get(&k) == Some(&r) => {
                        self.skipped.remove(&k);
                        self.installed.insert(k, r);
                    }
                    Ok(()) => self.installed_at(k, r),
                    Err(e) => self.skip(k, e.reason),
                },
                Want::Skip(why) => self.skip(k, why),
                Want::Shadowed => {
                    self.skipped.remove(&k);
                    self.shadowed.insert(k);
                }
                Want::Nothing => {
                    self.skipped.remove(&k);
                }
            }
        }
    }

    /// The removals that make room for configured routes about to be added over mirrored ones (a `lwt6 ctl`
    /// line): to be applied in the same batch, before the additions, so that the prefix is never without a
    /// route. [`configured_changed`] records them once the batch is published.
    pub fn yield_to(&self, added: &[Route]) -> Vec<Change> {
        added
            .iter()
            .filter(|r| r.table == MAIN_TABLE && self.installed.contains_key(&(r.prefix, r.metric)))
            .map(|r| Change::DelRoute {
                prefix: r.prefix,
                metric: r.metric,
                table: MAIN_TABLE,
                line: 0,
            })
            .collect()
    }

    /// What the FIB should hold at `k` from the kernel's table.
    fn want(&self, k: &Key, configured: bool, links: &[String]) -> Want {
        let rs = self.kernel.get(k);
        let Some(first) = rs.first() else {
            return Want::Nothing;
        };
        if configured {
            return Want::Shadowed;
        }
        if rs.len() > 1 {
            return Want::Skip(format!(
                "the kernel holds {} routes of this prefix and metric (lwt6 holds one per prefix and metric)",
                rs.len()
            ));
        }
        match route_of(first, links) {
            Ok(r) => Want::Install(r),
            Err(why) => Want::Skip(why),
        }
    }

    /// Records what was installed at `k`; a multipath route's stand-in (the prefix drops) is said once, when it
    /// comes.
    fn installed_at(&mut self, k: Key, what: Installed) {
        self.skipped.remove(&k);
        self.shadowed.remove(&k);
        if what == Installed::Reject(RejectKind::Multipath) && self.installed.get(&k) != Some(&what)
        {
            self.counters.multipath_dropped += 1;
            let n = self.kernel.get(&k).first().map_or(0, |r| r.multipath);
            log::warn!(
                target: "kernel-route-multipath",
                "kernel multipath route {} metric {} ({n} next hops): the prefix drops packets \
                 (multipath_route; lwt6 forwards over one next hop)",
                k.0,
                k.1
            );
        }
        self.installed.insert(k, what);
    }

    /// Records `k` as skipped; logged and counted when it was not skipped for the same reason already.
    fn skip(&mut self, k: Key, why: String) {
        self.shadowed.remove(&k);
        if self.skipped.get(&k) == Some(&why) {
            return;
        }
        self.counters.skipped_total += 1;
        let line = self
            .kernel
            .get(&k)
            .first()
            .map_or_else(|| format!("{} metric {}", k.0, k.1), |r| r.to_line());
        log::warn!(target: "kernel-route-skipped", "kernel route not mirrored: {line}: {why}");
        self.skipped.insert(k, why);
    }

    /// Logs an unreadable route message once per reason, and counts it.
    fn unreadable(&mut self, why: &str) {
        self.counters.unreadable_total += 1;
        if self.unreadable.insert(why.to_string()) {
            log::warn!(target: "kernel-route-unreadable", "kernel route message not read: {why}");
        }
    }
}

/// What is installed in the FIB for a kernel route.
#[derive(Debug, Clone, PartialEq)]
pub enum Installed {
    /// A route lwt6 forwards with.
    Route(Route),
    /// A route that drops (blackhole, unreachable, prohibit; multipath, which lwt6 does not forward over).
    Reject(RejectKind),
}

impl Installed {
    /// The change that installs it at `k`.
    fn change(&self, k: Key) -> Change {
        match self {
            Installed::Route(r) => Change::AddRoute(r.clone()),
            Installed::Reject(kind) => Change::AddReject {
                prefix: k.0,
                metric: k.1,
                kind: *kind,
            },
        }
    }
}

/// What the FIB should hold at a key.
enum Want {
    /// No kernel route there.
    Nothing,
    /// A configured route is there: the kernel's is shadowed.
    Shadowed,
    /// The kernel's route cannot be forwarded with as the kernel does: left out, for this reason.
    Skip(String),
    /// This route.
    Install(Installed),
}

/// Whether the FIB holds a route at `k` that is not a mirrored one (the caller knows which keys it installed).
fn configured_in(snap: &Snapshot, k: &Key) -> bool {
    snap.table(MAIN_TABLE).is_some_and(|f| f.contains(k.0, k.1))
}

/// A kernel route as what lwt6 installs for it, or why lwt6 cannot take it.
fn route_of(r: &KernelRoute, links: &[String]) -> Result<Installed, String> {
    if r.src_len > 0 {
        return Err("source-specific route ('from'; lwt6 has no source routing)".into());
    }
    let reject = match r.kind {
        RouteKind::Unicast if r.multipath > 0 => Some(RejectKind::Multipath),
        RouteKind::Unicast => None,
        RouteKind::Blackhole => Some(RejectKind::Blackhole),
        RouteKind::Unreachable => Some(RejectKind::Unreachable),
        RouteKind::Prohibit => Some(RejectKind::Prohibit),
        RouteKind::Local => return Err("local route in the main table".into()),
        RouteKind::Other(t) => return Err(format!("route type {t}")),
    };
    if let Some(kind) = reject {
        return Ok(Installed::Reject(kind));
    }
    route_forwarding(r, links).map(Installed::Route)
}

/// A kernel unicast route as the route lwt6 forwards with.
fn route_forwarding(r: &KernelRoute, links: &[String]) -> Result<Route, String> {
    if r.src_len > 0 {
        return Err("source-specific route ('from'; lwt6 has no source routing)".into());
    }
    let encap = match &r.encap {
        None => None,
        Some(KernelEncap::Tunnel(t)) => Some(Box::new(t.clone())),
        Some(KernelEncap::Seg6Local(_)) => return seg6local_route(r, links),
        Some(KernelEncap::Other(name)) => {
            return Err(format!("encap {name} (a tunnel lwt6 does not build)"));
        }
    };
    Ok(Route {
        reject: None,
        prefix: r.prefix,
        via: r.via,
        dev: r.dev.as_deref().map(Into::into),
        metric: r.metric,
        table: MAIN_TABLE,
        mtu: r.mtu.map(|value| RouteMtu {
            value,
            locked: r.mtu_locked,
        }),
        encap,
        line: 0,
    })
}

/// A kernel `seg6local` route read back through lwt6's configuration parser from its `ip route` line, with the
/// running links declared before it (its `dev`, `iif` and `oif` name them).
fn seg6local_route(r: &KernelRoute, links: &[String]) -> Result<Route, String> {
    let mut text: String = links.iter().map(|l| format!("link add {l}\n")).collect();
    text.push_str(&r.to_line());
    text.push('\n');
    let mut cfg = lwt6_config::parse(&text).map_err(|e| format!("'{}': {}", e.token, e.reason))?;
    let mut route = cfg
        .routes
        .pop()
        .ok_or_else(|| "the seg6local route did not read back".to_string())?;
    if !matches!(route.encap.as_deref(), Some(Encap::Seg6Local(_))) {
        return Err("the seg6local route did not read back".into());
    }
    route.line = 0;
    Ok(route)
}

/// Brings the installed routes of `keys` to what the kernel's table says, in one batch through the writer
/// (a change refused is recorded as skipped and the batch goes on after it).
fn sync(control: &mut Control, keys: impl IntoIterator<Item = Key>) {
    let links: Vec<String> = control.cfg().links.iter().map(|l| l.name.clone()).collect();
    let snap = control.handle.load();
    let kr = &mut control.kernel_routes;
    // (change, key, the route installed by it when it applies)
    let mut plan: Vec<(Change, Key, Option<Installed>)> = Vec::new();
    for k in keys {
        let installed = kr.installed.get(&k);
        let configured = installed.is_none() && configured_in(&snap, &k);
        let want = kr.want(&k, configured, &links);
        let del = || Change::DelRoute {
            prefix: k.0,
            metric: k.1,
            table: MAIN_TABLE,
            line: 0,
        };
        match want {
            Want::Install(r) => {
                kr.shadowed.remove(&k);
                if installed == Some(&r) {
                    kr.skipped.remove(&k);
                    continue;
                }
                if installed.is_some() {
                    plan.push((del(), k, None));
                }
                plan.push((r.change(k), k, Some(r)));
            }
            Want::Nothing | Want::Shadowed | Want::Skip(_) => {
                if installed.is_some() {
                    plan.push((del(), k, None));
                }
                match want {
                    Want::Skip(why) => kr.skip(k, why),
                    Want::Shadowed => {
                        kr.skipped.remove(&k);
                        kr.shadowed.insert(k);
                    }
                    _ => {
                        kr.skipped.remove(&k);
                        kr.shadowed.remove(&k);
                    }
                }
            }
        }
    }
    drop(snap);
    let changes: Vec<Change> = plan.iter().map(|(c, _, _)| c.clone()).collect();
    let mut start = 0;
    while start < changes.len() {
        let (done, failed) = match control.apply_in_place(&changes[start..]) {
            Ok(()) => (changes.len() - start, None),
            Err((i, e)) => (i, Some(e)),
        };
        let kr = &mut control.kernel_routes;
        for (_, k, r) in &plan[start..start + done] {
            match r {
                Some(r) => kr.installed_at(*k, r.clone()),
                None => {
                    kr.installed.remove(k);
                }
            }
        }
        start += done;
        if let Some(e) = failed {
            let (_, k, r) = &plan[start];
            kr.installed.remove(k);
            if r.is_some() {
                kr.skip(*k, e.reason);
            }
            start += 1;
        }
    }
}

/// The main-table keys of the configured routes a `lwt6 ctl` line removes and adds (for [`configured_changed`]).
pub fn delta_keys(removed: &[Route], added: &[Route]) -> (Vec<Key>, Vec<Key>) {
    let keys = |v: &[Route]| -> Vec<Key> {
        v.iter()
            .filter(|r| r.table == MAIN_TABLE)
            .map(|r| (r.prefix, r.metric))
            .collect()
    };
    (keys(removed), keys(added))
}

/// After a `lwt6 ctl` line changed configured routes (and the batch from [`KernelRoutes::yield_to`] was
/// published): the mirrored routes removed to make room for added ones are recorded as shadowed, and those a
/// removed configured route shadowed are installed again. `keys`: [`delta_keys`].
pub fn configured_changed(control: &mut Control, keys: (Vec<Key>, Vec<Key>)) {
    if !control.kernel_routes.enabled {
        return;
    }
    let (removed, added) = keys;
    for k in &added {
        control.kernel_routes.installed.remove(k);
    }
    let keys: BTreeSet<Key> = removed.into_iter().chain(added).collect();
    sync(control, keys);
}

/// Replaces the kernel's table by a fresh dump and brings the installed routes to it.
fn resync(control: &mut Control) -> Result<(), NetlinkError> {
    let dump = lwt6_netlink::dump()?;
    let kr = &mut control.kernel_routes;
    kr.counters.dumps += 1;
    kr.dirty = false;
    let (table, unreadable) = KernelTable::from_dump(&dump);
    for why in &unreadable {
        kr.unreadable(why);
    }
    let mut keys: BTreeSet<Key> = table.keys().copied().collect();
    keys.extend(kr.kernel.keys().copied());
    keys.extend(kr.installed.keys().copied());
    keys.extend(kr.skipped.keys().copied());
    keys.extend(kr.shadowed.iter().copied());
    kr.kernel = table;
    sync(control, keys);
    Ok(())
}

/// Subscribes to the kernel's route changes and applies its table: the monitor to follow.
pub fn start(control: &mut Control) -> Result<RouteMonitor, Error> {
    let m = RouteMonitor::new().map_err(|e| fail(format!("--kernel-routes: {e}")))?;
    control.kernel_routes.enabled = true;
    resync(control).map_err(|e| fail(format!("--kernel-routes: {e}")))?;
    let kr = &control.kernel_routes;
    log::info!(
        "--kernel-routes: {} kernel route{} applied ({} shadowed by configured routes, {} skipped)",
        kr.len(),
        if kr.len() == 1 { "" } else { "s" },
        kr.shadowed.len(),
        kr.skipped.len()
    );
    Ok(m)
}

/// Applies the changes waiting on the monitor (without blocking); a change that cannot be placed, or an
/// overrun, dumps the table again (after draining what the overrun left in the queue).
pub fn follow(m: &mut RouteMonitor, control: &mut Control) {
    let mut touched: BTreeSet<Key> = BTreeSet::new();
    match m.poll() {
        Ok(changes) => {
            let kr = &mut control.kernel_routes;
            for ch in &changes {
                if let RouteChange::Unreadable(why) = ch {
                    kr.unreadable(why);
                }
                match kr.kernel.apply(ch) {
                    Outcome::Applied(k) => {
                        kr.counters.changes += 1;
                        touched.insert(k);
                    }
                    Outcome::Ignored => {}
                    Outcome::NeedsDump => kr.dirty = true,
                }
            }
        }
        Err(NetlinkError::Overrun) => {
            control.kernel_routes.counters.overruns += 1;
            log::warn!(target: "kernel-route-overrun",
                "--kernel-routes: notifications lost (receive buffer overrun): dumping the table again");
            if let Err(e) = m.drain() {
                log::error!("--kernel-routes: {e}");
            }
            control.kernel_routes.dirty = true;
        }
        Err(e) => log::error!("--kernel-routes: {e}"),
    }
    if control.kernel_routes.dirty {
        if let Err(e) = resync(control) {
            // Still dirty: tried again at the next look.
            log::error!(target: "kernel-route-dump", "--kernel-routes: {e}");
            control.kernel_routes.dirty = true;
        }
    } else if !touched.is_empty() {
        sync(control, touched);
    }
}

#[cfg(test)]
mod tests;
