//! The XDP tier in a running router (`--io xdp`, docs/xdp.md): lwt6's plan executor ([`lwt6_xdp::Tier`])
//! attached to every interface instead of the plain redirect program, the AF_XDP sockets in its `xsks` map, its
//! maps following the published snapshot, its egress devices checked for redirect capability, its counters for
//! `show stats`, the metrics and the final report.

pub mod placement;

use lwt6_dataplane::snapshot::{Snapshot, SnapshotHandle};
use lwt6_io::afxdp;
use lwt6_io::netdev::NetDev;
use lwt6_io::xdpfeatures::{self, XdpFeatures};
use lwt6_xdp::{Counters, Sizes, Tier};
use serde_json::json;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The tier as the control and metrics threads share it.
pub type Handle = Arc<Mutex<XdpTier>>;
/// Where the metrics thread finds the tier once the router has started (empty without the tier).
pub type Shared = Arc<OnceLock<Handle>>;

/// Opens the AF_XDP back end with `open_ports`, with the tier when `mode` wants it and it loads: `Default` says
/// once on standard error why it is not used and opens the ports without it; `On` fails with the reason.
pub fn open<P>(
    devs: &[NetDev],
    snap: &Snapshot,
    mode: TierMode,
    open_ports: impl Fn(Option<Box<XdpTier>>) -> Result<P, String>,
) -> Result<P, String> {
    if mode == TierMode::Off {
        return open_ports(None);
    }
    let why = match XdpTier::load(devs, snap) {
        Ok(t) => match open_ports(Some(Box::new(t))) {
            Ok(p) => return Ok(p),
            Err(why) => why,
        },
        Err(why) => why,
    };
    if mode == TierMode::On {
        return Err(format!("the XDP tier: {why}"));
    }
    log::warn!(
        "XDP tier not used ({why}): AF_XDP with the plain redirect program (--xdp-tier off)"
    );
    open_ports(None)
}

/// `show xdp [-j]`: every route's place (driver or worker, and why) with the running tier's headroom and egress
/// states, then the tier's state; an error when the tier does not run.
pub fn show(t: Option<&Handle>, snap: &Snapshot, json: bool) -> (bool, String) {
    let Some(t) = t.and_then(|t| t.lock().ok()) else {
        return (
            false,
            "the XDP tier does not run (lwt6 run --io xdp, --xdp-tier; docs/xdp.md); `lwt6 check -c FILE --xdp` says where the routes would run".into(),
        );
    };
    let ok = |e: u32| t.egress.get(e as usize).is_some_and(|e| e.redirect.is_ok());
    let mut places = placement::placement(snap, HEADROOM, ok);
    if t.generation.is_some_and(|(_, tracing)| tracing) {
        // What the tier installed while a trace runs: every route but the router's own addresses to the worker.
        for p in &mut places {
            if p.place != Err(lwt6_xdp::Why::Local) {
                p.place = Err(lwt6_xdp::Why::Traced);
            }
        }
    }
    if json {
        let mut v = t.json(&Default::default());
        if let Some(o) = v.as_object_mut() {
            o.remove("total");
        }
        v["routes"] = placement::json(&places);
        (true, format!("{v}\n"))
    } else {
        let mut s = placement::text(&places, HEADROOM);
        for e in &t.egress {
            match &e.redirect {
                Ok(()) => s += &format!("egress {}: the driver redirects to it\n", e.name),
                Err(why) => s += &format!("egress {}: not from the driver: {why}\n", e.name),
            }
        }
        (true, s)
    }
}

/// [`XdpTier::sync`] under the lock.
pub fn sync(t: &Handle, handle: &SnapshotHandle, trace: &crate::trace::TraceBoard) {
    let tracing = trace.active();
    if let Ok(mut t) = t.lock() {
        t.sync(handle, tracing);
    }
}

/// [`XdpTier::due`] under the lock, in whole milliseconds (at least 1), for the control loop's `poll`.
pub fn due_ms(t: &Handle, handle: &SnapshotHandle, trace: &crate::trace::TraceBoard) -> i32 {
    let tracing = trace.active();
    t.lock()
        .map(|t| t.due(handle, tracing))
        .map_or(1, |d| (d.as_millis() as i32).saturating_add(1))
}

/// The final report's part: text, JSON, and whether the router's totals balance.
pub fn report(
    t: &Handle,
    worker: &lwt6_dataplane::stats::Stats,
) -> (String, serde_json::Value, bool) {
    let Ok(t) = t.lock() else {
        return (String::new(), serde_json::Value::Null, true);
    };
    let c = t.counters().unwrap_or_default();
    (
        t.text(worker),
        t.json(worker),
        TierTotals::new(&c, worker).balanced(),
    )
}

/// What a plan may add in front of a received frame: the kernel's `XDP_PACKET_HEADROOM` (256 bytes, which veth,
/// virtio-net, generic XDP and most native drivers leave) less the `struct xdp_frame` (40 bytes) a redirect
/// stores there. A driver that leaves less makes `bpf_xdp_adjust_head` refuse: the frame goes to the worker,
/// counted `headroom`, unchanged.
pub const HEADROOM: u16 = (afxdp::XDP_PACKET_HEADROOM - 40) as u16;

/// How often the egress devices' redirect capability is looked at again (a veth's changes with its peer).
const EGRESS_CHECK: Duration = Duration::from_secs(1);

/// After an installation that took `t`, the next one waits until `GAP_FACTOR * t` has passed: following the
/// snapshot takes at most a quarter of the control thread when publications come faster than it can install
/// them (publications meanwhile are installed together, by the next one).
const GAP_FACTOR: u32 = 3;

/// Whether `--xdp-tier` was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TierMode {
    /// On with `--io xdp` (and `auto` when AF_XDP is used) when it loads; otherwise said once and off.
    #[default]
    Default,
    /// On; the router fails to start when the tier cannot load.
    On,
    /// Off: AF_XDP with the plain redirect program (the path before the tier).
    Off,
}

/// One egress device: whether the driver redirects frames to it, and why not.
#[derive(Debug, Clone)]
pub struct Egress {
    /// Interface name.
    pub name: String,
    /// Interface index.
    pub ifindex: u32,
    /// `Ok` when it is in the devmap; else why not (its plans' frames go to the worker, counted `no_egress`).
    pub redirect: Result<(), String>,
}

/// The capability of interface `ifindex` to take XDP-redirected frames, from its driver's xdp-features.
pub fn redirect_capability(feat: Option<&mut XdpFeatures>, ifindex: u32) -> Result<(), String> {
    let Some(f) = feat else {
        return Err(
            "the kernel does not say (no netdev generic netlink family: Linux before 6.3)".into(),
        );
    };
    match f.get(ifindex) {
        Ok(v) if v & xdpfeatures::ACT_NDO_XMIT != 0 => Ok(()),
        Ok(_) => Err(
            "its driver takes no redirected frames now (no ndo_xdp_xmit; a veth: its peer has neither an XDP program nor GRO)"
                .into(),
        ),
        Err(e) => Err(format!("its XDP features are unknown ({e})")),
    }
}

/// The map sizes for a router starting with `snap` on `devs` with `queues` receive queues in all: room for
/// twice the routes and distinct plans it starts with (a swap that changes every plan writes the new ones
/// before freeing the old), and at least as much as [`Sizes::default`].
pub fn sizes(snap: &Snapshot, devs: usize, queues: u32) -> Sizes {
    let d = Sizes::default();
    let (routes, plans) = (snap.fib().len(), snap.plan_stats().0);
    Sizes {
        routes: (2 * routes as u32).max(1 << 20),
        plans: (2 * plans as u32).max(4096),
        ports: (devs as u32).max(d.ports),
        egress: (devs as u32).max(d.egress),
        queues: queues.max(d.queues),
        // IOAM transit blocks: per namespace, 16 trace types for every ingress and egress pair.
        ioam_blocks: (snap.ioam().namespaces.len() * devs * devs * 16).clamp(1024, 1 << 16) as u32,
    }
}

/// What the last snapshot installation did.
#[derive(Debug, Clone, Default)]
pub struct LastInstall {
    /// Routes (LPM entries) in the snapshot's tables.
    pub routes: usize,
    /// How long building the tables and installing them took.
    pub took: Duration,
    /// What changed.
    pub installed: lwt6_xdp::Installed,
    /// The error, when the installation failed (the driver then forwards nothing: every route was removed).
    pub error: Option<String>,
    /// Whether it followed the route changes (`lwt6_xdp::delta`) rather than installing the whole tables.
    pub from_changes: bool,
    /// Route changes followed so far, and whole installations.
    pub counts: (u64, u64),
}

/// The tier of a running router.
#[derive(Debug)]
pub struct XdpTier {
    tier: Tier,
    /// Per device id: the egress state.
    pub egress: Vec<Egress>,
    /// Per device id: the first `xsks` slot of its queues.
    xsk_base: Vec<u32>,
    features: Option<XdpFeatures>,
    /// The snapshot generation installed, and whether a trace was armed then.
    generation: Option<(u64, bool)>,
    egress_checked: Instant,
    /// When the last installation ended.
    installed_at: Option<Instant>,
    /// The last installation.
    pub last: LastInstall,
}

impl XdpTier {
    /// Loads the program with maps sized for `snap`, describes every interface of `devs` (in device id order) as
    /// a port and, when its driver takes redirected frames, as an egress; not attached yet (the AF_XDP engine
    /// attaches it with [`XdpTier::program_fd`] and registers its sockets in `Tier::xsk_map_fd`).
    pub fn load(devs: &[NetDev], snap: &Snapshot) -> Result<XdpTier, String> {
        lwt6_xdp::available().map_err(|e| e.to_string())?;
        let mut xsk_base = Vec::with_capacity(devs.len());
        let mut queues = 0u32;
        for d in devs {
            xsk_base.push(queues);
            queues += afxdp::rx_queues(&d.name).map_err(|e| e.to_string())?;
        }
        let mut tier = Tier::load(sizes(snap, devs.len(), queues)).map_err(|e| e.to_string())?;
        let mut features = XdpFeatures::open().ok();
        let mut egress = Vec::with_capacity(devs.len());
        for (id, d) in devs.iter().enumerate() {
            let link = snap
                .links
                .get(id)
                .ok_or_else(|| format!("{}: not in the snapshot", d.name))?;
            tier.set_port(d.ifindex, lwt6_xdp::port_entry(link, HEADROOM))
                .map_err(|e| e.to_string())?;
            tier.set_xsk_base(d.ifindex, xsk_base[id])
                .map_err(|e| e.to_string())?;
            let redirect = redirect_capability(features.as_mut(), d.ifindex);
            if redirect.is_ok() {
                tier.set_egress(id as u32, d.ifindex)
                    .map_err(|e| e.to_string())?;
            }
            egress.push(Egress {
                name: d.name.clone(),
                ifindex: d.ifindex,
                redirect,
            });
        }
        Ok(XdpTier {
            tier,
            egress,
            xsk_base,
            features,
            generation: None,
            egress_checked: Instant::now(),
            installed_at: None,
            last: LastInstall::default(),
        })
    }

    /// The program's descriptor, to attach it.
    pub fn program_fd(&self) -> Result<std::os::fd::BorrowedFd<'_>, String> {
        use std::os::fd::AsFd;
        self.tier
            .program_fd()
            .map(|p| p.as_fd())
            .map_err(|e| e.to_string())
    }

    /// The XSKMAP the sockets go in, and device `dev`'s first slot.
    pub fn xsk_map(&self, dev: usize) -> Result<(std::os::fd::BorrowedFd<'_>, u32), String> {
        let fd = self.tier.xsk_map_fd().map_err(|e| e.to_string())?;
        Ok((fd, self.xsk_base.get(dev).copied().unwrap_or(0)))
    }

    /// Makes the maps follow the published snapshot (when a new one was published since the last call) and the
    /// egress devices' capability (every second). Called by the control thread after every request and tick.
    /// While a trace is armed (`tracing`), every route is left to the workers (counted `traced`), so that
    /// every frame can be traced.
    pub fn sync(&mut self, handle: &SnapshotHandle, tracing: bool) {
        let counts = self.last.counts;
        self.follow(handle, tracing);
        let done = self.last.installed;
        // A large installation (a batch of routes added or deleted) frees and makes tables after the request's
        // own trim (crate::trim::after_request): that memory goes back too.
        if self.last.counts != counts
            && done.routes_set + done.routes_removed >= crate::trim::LARGE_REQUEST
        {
            crate::trim::release_free_memory();
        }
    }

    /// [`XdpTier::sync`] but for the trim.
    fn follow(&mut self, handle: &SnapshotHandle, tracing: bool) {
        // IOAM transit blocks for the trace types the driver met (docs/xdp.md, IOAM transit).
        if let Err(e) = self.tier.learn_ioam() {
            crate::log::line("xdp_ioam", &format!("XDP tier: IOAM transit blocks: {e}"));
        }
        if self.egress_checked.elapsed() >= EGRESS_CHECK {
            self.egress_checked = Instant::now();
            self.check_egress();
        }
        let generation = (handle.generation(), tracing);
        if self.generation == Some(generation) || self.wait().is_some_and(|w| !w.is_zero()) {
            return;
        }
        let start = Instant::now();
        handle.follow_changes();
        // Taken before the snapshot is loaded: it has every change taken.
        let (now, changes) = handle.changes_since(self.generation.map_or(u64::MAX, |g| g.0));
        let same_trace = self.generation.is_some_and(|g| g.1 == tracing);
        self.generation = Some((now, tracing));
        if !tracing
            && same_trace
            && let Some(changes) = changes
            && self.sync_changes(handle, &changes, start)
        {
            return;
        }
        let mut t = {
            // Not held longer than needed: the snapshot writer waits for its spare to be free.
            let snap = handle.load();
            lwt6_xdp::tables(&snap)
        };
        if tracing {
            t.plans.clear();
            for v in t
                .routes
                .iter_mut()
                .map(|r| &mut r.1)
                .chain(t.routes4.iter_mut().map(|r| &mut r.1))
            {
                if v.why != lwt6_xdp::Why::Local as u32 {
                    v.plan = lwt6_xdp::layout::NO_PLAN;
                    v.why = lwt6_xdp::Why::Traced as u32;
                }
            }
        }
        let r = self.tier.install(&t);
        self.installed_at = Some(Instant::now());
        self.last = LastInstall {
            routes: t.routes.len() + t.routes4.len(),
            took: start.elapsed(),
            installed: r.as_ref().copied().unwrap_or_default(),
            error: r.as_ref().err().map(|e| e.to_string()),
            from_changes: false,
            counts: (self.last.counts.0, self.last.counts.1 + 1),
        };
        if let Err(e) = r {
            self.failed(e);
        }
    }

    /// Follows `changes` (route changes published in place, with `lwt6_xdp::delta`): a few map updates per
    /// route. False, with nothing changed, when they need the whole tables (a neighbour, an IPv4 route,
    /// End.DT6's tables).
    fn sync_changes(
        &mut self,
        handle: &SnapshotHandle,
        changes: &[lwt6_dataplane::snapshot::Change],
        start: Instant,
    ) -> bool {
        let Some(routes) = lwt6_xdp::delta::routes(&handle.load(), changes, self.tier.way_routes())
        else {
            return false;
        };
        let r = match self.tier.update(&routes) {
            Ok(None) => return false,
            Ok(Some(done)) => Ok(done),
            Err(e) => Err(e),
        };
        self.installed_at = Some(Instant::now());
        self.last = LastInstall {
            routes: self.tier.routes_installed(),
            took: start.elapsed(),
            installed: r.as_ref().copied().unwrap_or_default(),
            error: r.as_ref().err().map(|e| e.to_string()),
            from_changes: true,
            counts: (self.last.counts.0 + 1, self.last.counts.1),
        };
        if let Err(e) = r {
            self.failed(e);
        }
        true
    }

    /// After an installation failed: no route in the driver until the next publication or tick installs the
    /// whole tables.
    fn failed(&mut self, e: lwt6_xdp::Error) {
        // Safe state: no route in the driver, every frame to the worker (which has the new snapshot).
        let cleared = self.tier.install(&lwt6_xdp::Tables::default());
        crate::log::line(
            "xdp_install",
            &format!(
                "XDP tier: the new snapshot could not be installed ({e}); the driver forwards nothing until the next one{}",
                cleared
                    .err()
                    .map(|e| format!(" (clearing failed too: {e})"))
                    .unwrap_or_default()
            ),
        );
        // Try again at the next publication or tick.
        self.generation = None;
    }

    /// How long the next installation must still wait (see [`GAP_FACTOR`]); `None` when it need not.
    fn wait(&self) -> Option<Duration> {
        let end = self.installed_at?;
        Some((self.last.took * GAP_FACTOR).saturating_sub(end.elapsed()))
    }

    /// How long until the tier must run again: a publication not installed yet (its gap not over), or the next
    /// egress check. The control loop waits no longer than that.
    pub fn due(&self, handle: &SnapshotHandle, tracing: bool) -> Duration {
        let egress = EGRESS_CHECK.saturating_sub(self.egress_checked.elapsed());
        if self.generation == Some((handle.generation(), tracing)) {
            return egress;
        }
        self.wait().unwrap_or_default().min(egress)
    }

    /// Looks again whether each egress takes redirected frames; adds it to or removes it from the devmap.
    fn check_egress(&mut self) {
        for (id, e) in self.egress.iter_mut().enumerate() {
            let now = redirect_capability(self.features.as_mut(), e.ifindex);
            if now.is_ok() == e.redirect.is_ok() {
                e.redirect = now;
                continue;
            }
            let r = if now.is_ok() {
                self.tier.set_egress(id as u32, e.ifindex)
            } else {
                self.tier.clear_egress(id as u32)
            };
            match r {
                Ok(()) => {
                    crate::log::line(
                        "xdp_egress",
                        &format!(
                            "XDP tier: {}: {}",
                            e.name,
                            match &now {
                                Ok(()) =>
                                    "now takes redirected frames: forwarded in the driver".into(),
                                Err(why) => format!("{why}: its frames go to the worker"),
                            }
                        ),
                    );
                    e.redirect = now;
                }
                Err(err) => crate::log::line(
                    "xdp_egress",
                    &format!("XDP tier: {}: devmap update failed: {err}", e.name),
                ),
            }
        }
    }

    /// The program's counters, summed over the CPUs.
    pub fn counters(&self) -> Result<Counters, String> {
        self.tier.counters().map_err(|e| e.to_string())
    }

    /// The tier's counters and state as JSON, with `worker` the workers' total counters: per tier and in all,
    /// received = sent + dropped (see [`TierTotals`]).
    pub fn json(&self, worker: &lwt6_dataplane::stats::Stats) -> serde_json::Value {
        let c = self.counters().unwrap_or_default();
        let t = TierTotals::new(&c, worker);
        let egress: serde_json::Map<String, serde_json::Value> = self
            .egress
            .iter()
            .enumerate()
            .map(|(id, e)| {
                (
                    e.name.clone(),
                    json!({
                        "redirect": e.redirect.is_ok(),
                        "why_not": e.redirect.as_ref().err(),
                        "tx": c.egress.get(&(id as u32)).copied().unwrap_or(0),
                    }),
                )
            })
            .collect();
        json!({
            "received": t.xdp_rx,
            "sent": c.forwarded,
            "dropped": 0,
            "to_worker": t.to_worker,
            "by_kind": c.by_kind.iter().map(|(k, n)| (k.name().to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
            "to_worker_by_reason": c.slow.iter().map(|(w, n)| (w.name().to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
            "egress": egress,
            "headroom": HEADROOM,
            "last_install": {
                "routes": self.last.routes,
                "ms": self.last.took.as_secs_f64() * 1e3,
                "plans_written": self.last.installed.plans_written,
                "routes_set": self.last.installed.routes_set,
                "routes_removed": self.last.installed.routes_removed,
                "from_changes": self.last.from_changes,
                "installs_from_changes": self.last.counts.0,
                "installs_whole": self.last.counts.1,
                "error": self.last.error,
            },
            "total": {"rx": t.rx, "tx": t.tx, "dropped": t.dropped, "consumed": t.consumed, "pending": t.pending, "balanced": t.balanced()},
        })
    }

    /// The tier's counters and state as text lines (`show stats`, the final report).
    pub fn text(&self, worker: &lwt6_dataplane::stats::Stats) -> String {
        let c = self.counters().unwrap_or_default();
        let t = TierTotals::new(&c, worker);
        let mut s = format!(
            "xdp tier: frames in {}, forwarded in the driver {}, to the worker {}; router total: in {}, out {}, dropped {}, for the router {}, waiting for a neighbour {}\n",
            t.xdp_rx, c.forwarded, t.to_worker, t.rx, t.tx, t.dropped, t.consumed, t.pending
        );
        for (k, n) in &c.by_kind {
            s += &format!("  xdp forwarded {:<20} {n}\n", k.name());
        }
        for (w, n) in &c.slow {
            s += &format!("  xdp to worker {:<20} {n}\n", w.name());
        }
        for (id, e) in self.egress.iter().enumerate() {
            let tx = c.egress.get(&(id as u32)).copied().unwrap_or(0);
            match &e.redirect {
                Ok(()) => s += &format!("  xdp egress {:<15} redirect yes, tx {tx}\n", e.name),
                Err(why) => s += &format!("  xdp egress {:<15} redirect no: {why}\n", e.name),
            }
        }
        if let Some(err) = &self.last.error {
            s += &format!("  xdp last install failed: {err}\n");
        }
        s
    }
}

/// The tiers' counters put together. The XDP tier receives every frame first: it forwards some (received and
/// sent by the tier) and hands the others to the worker (counted by the tier per reason, and received by the
/// worker). So for the router as a whole: received = forwarded in the driver + received by the worker, sent =
/// forwarded in the driver + sent by the worker, dropped = the worker's drops, and the worker's own `consumed`
/// (frames for the router itself: NDP, ARP, echo requests) and `pending` (waiting for a neighbour) as the
/// worker counts them; each tier balances by itself (tier: received = sent + handed on; worker: received =
/// sent, dropped, consumed and pending added up). Frames handed on that never reach the worker (its socket ring
/// full) are the worker's `overload`, counted by the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TierTotals {
    /// Frames the XDP program ran on.
    pub xdp_rx: u64,
    /// Frames it handed to the worker (or to the kernel, for a queue without a socket).
    pub to_worker: u64,
    /// The router's frames received.
    pub rx: u64,
    /// The router's frames sent.
    pub tx: u64,
    /// The router's frames dropped.
    pub dropped: u64,
    /// Frames for the router itself (the worker's `consumed`).
    pub consumed: u64,
    /// Frames waiting for a neighbour (the worker's `pending`).
    pub pending: u64,
}

impl TierTotals {
    /// The totals of tier counters `c` and the workers' `worker`.
    pub fn new(c: &Counters, worker: &lwt6_dataplane::stats::Stats) -> TierTotals {
        let to_worker: u64 = c.slow.values().sum();
        TierTotals {
            xdp_rx: c.forwarded + to_worker,
            to_worker,
            rx: c.forwarded + worker.rx,
            tx: c.forwarded + worker.tx,
            dropped: worker.dropped(),
            consumed: worker.consumed,
            pending: worker.pending,
        }
    }

    /// Whether the router's totals balance (received = sent + dropped + consumed + pending).
    pub fn balanced(&self) -> bool {
        self.rx == self.tx + self.dropped + self.consumed + self.pending
    }
}

/// `text` (an OpenMetrics exposition ending with `# EOF`) with the tier's families added: `lwt6_xdp_rx_frames`,
/// `lwt6_xdp_forwarded_frames` by `kind`, `lwt6_xdp_to_worker_frames` by `reason`, `lwt6_xdp_egress_tx_frames`
/// and the gauge `lwt6_xdp_egress_redirect` by `link`, and the router's totals over both tiers
/// (`lwt6_router_rx_frames`, `lwt6_router_tx_frames`, `lwt6_router_dropped_frames`).
pub fn metrics(t: &Handle, each: &[crate::engine::WorkerReport], text: String) -> String {
    use crate::metrics::LabelValue;
    use prometheus_client::metrics::counter::Counter;
    use prometheus_client::metrics::family::Family;
    use prometheus_client::metrics::gauge::Gauge;
    use prometheus_client::registry::Registry;
    type L = Vec<(&'static str, LabelValue)>;
    let Ok(t) = t.lock() else { return text };
    let Ok(c) = t.counters() else { return text };
    let mut worker = lwt6_dataplane::stats::Stats::default();
    for r in each {
        worker.merge(&r.stats);
    }
    let tot = TierTotals::new(&c, &worker);
    let mut reg = Registry::default();
    let one = |reg: &mut Registry, name: &str, help: &str, v: u64| {
        let x = Counter::<u64>::default();
        x.inc_by(v);
        reg.register(name, help, x);
    };
    let family = |reg: &mut Registry, name: &str, help: &str| {
        let f = Family::<L, Counter>::default();
        reg.register(name, help, f.clone());
        f
    };
    one(
        &mut reg,
        "lwt6_xdp_rx_frames",
        "Frames the XDP tier ran on",
        tot.xdp_rx,
    );
    let f = family(
        &mut reg,
        "lwt6_xdp_forwarded_frames",
        "Frames forwarded in the driver, by plan kind",
    );
    for k in lwt6_xdp::Kind::ALL {
        let n = c.by_kind.get(&k).copied().unwrap_or(0);
        f.get_or_create(&vec![("kind", k.name().into())]).inc_by(n);
    }
    let f = family(
        &mut reg,
        "lwt6_xdp_to_worker_frames",
        "Frames the XDP tier handed to the worker, by reason",
    );
    for w in lwt6_xdp::Why::ALL {
        let n = c.slow.get(&w).copied().unwrap_or(0);
        f.get_or_create(&vec![("reason", w.name().into())])
            .inc_by(n);
    }
    let f = family(
        &mut reg,
        "lwt6_xdp_egress_tx_frames",
        "Frames the driver redirected, per egress interface",
    );
    let g = Family::<L, Gauge>::default();
    reg.register(
        "lwt6_xdp_egress_redirect",
        "Whether the driver redirects frames to the interface (1) or leaves them to the worker (0)",
        g.clone(),
    );
    for (id, e) in t.egress.iter().enumerate() {
        let n = c.egress.get(&(id as u32)).copied().unwrap_or(0);
        f.get_or_create(&vec![("link", LabelValue::from(&e.name))])
            .inc_by(n);
        g.get_or_create(&vec![("link", LabelValue::from(&e.name))])
            .set(i64::from(e.redirect.is_ok()));
    }
    one(
        &mut reg,
        "lwt6_router_rx_frames",
        "Frames received by the router, both tiers (driver-forwarded and the workers')",
        tot.rx,
    );
    one(
        &mut reg,
        "lwt6_router_tx_frames",
        "Frames sent by the router, both tiers",
        tot.tx,
    );
    one(
        &mut reg,
        "lwt6_router_dropped_frames",
        "Frames dropped by the router, both tiers",
        tot.dropped,
    );
    let mut extra = String::new();
    let _ = prometheus_client::encoding::text::encode(&mut extra, &reg);
    let extra = extra.strip_suffix("# EOF\n").unwrap_or(&extra);
    match text.strip_suffix("# EOF\n") {
        Some(head) => format!("{head}{extra}# EOF\n"),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lwt6_xdp::{Kind, Why};

    #[test]
    fn driver_frames_count_once_and_handed_on_frames_once() {
        // 10 forwarded in the driver, 3 handed on (2 no route, 1 hop limit); the worker received those 3 and
        // sent 2 (one dropped).
        let mut c = Counters {
            forwarded: 10,
            ..Counters::default()
        };
        c.by_kind.insert(Kind::Forward, 10);
        c.slow.insert(Why::NoRoute, 2);
        c.slow.insert(Why::HopLimit, 1);
        let mut w = lwt6_dataplane::stats::Stats {
            rx: 3,
            tx: 2,
            ..Default::default()
        };
        w.drops.add(lwt6_dataplane::stats::DropReason::NoRoute, 1);
        let t = TierTotals::new(&c, &w);
        assert_eq!((t.xdp_rx, t.to_worker), (13, 3));
        assert_eq!((t.rx, t.tx, t.dropped), (13, 12, 1));
        assert!(t.balanced());
        // Frames for the router itself and frames waiting for a neighbour are the worker's to count.
        w.rx += 2;
        w.consumed = 1;
        w.pending = 1;
        assert!(TierTotals::new(&c, &w).balanced());
        // A worker that lost a frame shows in the total.
        w.tx = 1;
        assert!(!TierTotals::new(&c, &w).balanced());
    }

    #[test]
    fn headroom_is_the_kernels_less_the_xdp_frame() {
        assert_eq!(HEADROOM, 216);
    }
}
