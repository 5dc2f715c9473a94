//! The control socket of a live router: a Unix stream socket taking one request line per connection (its client,
//! `lwt6 ctl`, is [`crate::ctl`]).
//!
//! A request is a configuration line (`route add ...`, `neigh add ...`, `ioam ...`, `sysctl ...`: docs/config.md)
//! or `show WHAT [-j]`, `route get`, `clear stats` ([`crate::show::inspect`]), or a batch: a first line `batch`,
//! then configuration lines up to the end of the request, applied in order as one atomic step. The reply's first
//! line is `ok` or `error: MESSAGE`; what
//! follows is the output. Configuration lines are applied to the running configuration itself, in a transaction
//! ([`Builder::transaction`]: a route line is a lookup in the route index and an entry in the undo log); the routes
//! they changed (added, removed, replaced) and the other lines as changes (`neigh`, `addr`, `sysctl`, `ioam`,
//! `sr`: [`changes_between`]) change the published table in place through a [`SnapshotWriter`], so a request
//! costs the same whatever the size of the table. A line no change can follow (a link, an address whose
//! connected route meets another) builds the configuration into a new snapshot, which is published (a cost in
//! proportion to the table). The workers take either at their next batch. A line with an error changes nothing (nor does any line
//! of its batch: the transaction is undone) and the reply names the token (and, in a batch, the line).

use crate::engine::{Outbox, WorkerReport};
use crate::{Error, fail};
use lwt6_config::Builder;
use lwt6_dataplane::neigh::{NeighEvent, NeighTable, State};
use lwt6_dataplane::snapshot::{Change, Snapshot, SnapshotHandle, SnapshotWriter, changes_between};
use lwt6_dataplane::spec::{Config, shown_token};
use lwt6_wire::ethernet::mac_text;
use serde_json::json;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Lines of a batch applied between two looks whether the router is stopping or the request is late.
const STOP_CHECK_LINES: usize = 4096;
/// Route changes published in place between two looks whether the router is stopping.
const PUBLISH_CHUNK: usize = 16_384;
/// How the answer to a request given up at its deadline ([`Control::deadline`]) starts.
pub const TIMED_OUT: &str = "timed out";
use crate::clients::INTERRUPTED;

/// The running router as the control thread sees it.
pub struct Control {
    /// The configuration the published snapshot was built from, with its route index: requests are applied to
    /// it in a transaction ([`Builder::transaction`]), never to a copy.
    pub builder: Builder<'static>,
    /// Where snapshots are published.
    pub handle: Arc<SnapshotHandle>,
    /// Every worker's last published counters.
    pub reports: Vec<Arc<Mutex<WorkerReport>>>,
    /// The I/O back end's name.
    pub io: &'static str,
    /// Applies route additions in place once the first one comes (see [`SnapshotWriter`]).
    pub writer: Option<SnapshotWriter>,
    /// The neighbours the workers learned (static ones are in `cfg`).
    pub neigh: NeighTable,
    /// Where the table's probes go out (a worker sends them).
    pub outbox: Arc<Outbox>,
    /// Routes mirrored from the kernel (`--kernel-routes`, [`crate::kroutes`]), kept across rebuilds.
    pub kernel_routes: crate::kroutes::KernelRoutes,
    /// The packet trace the workers follow (`trace add|stop|clear`, `show trace`).
    pub trace: Arc<crate::trace::TraceBoard>,
    /// The live capture the workers follow (`capture start|stop`, `show capture`).
    pub capture: Arc<crate::capture::CaptureBoard>,
    /// The XDP tier, when it runs (its counters and egress states in `show stats`).
    pub xdp: Option<crate::xdp_tier::Handle>,
    /// Says whether the router is stopping (a SIGINT or SIGTERM is pending): a long request gives up then,
    /// changing nothing. `None`: never.
    pub stopping: Option<Box<dyn FnMut() -> bool>>,
    /// Connections refused by their peer's credentials (`control_refused` in `show stats`).
    pub refused: u64,
    /// The counters at the last `clear stats` (`show` prints the counters since).
    pub baseline: crate::show::clear::Baseline,
    /// The ports the workers serve (`show interfaces`).
    pub ports: Vec<crate::show::interfaces::PortInfo>,
    /// The IOAM exporters (`ioam export add|del`, `show ioam export`; [`crate::export`]).
    pub export: Arc<crate::export::ExportHub>,
    /// When the request being applied must be given up (undone) if it is not done: set by the connection
    /// machinery ([`crate::clients`]) around each request. `None`: no limit.
    pub deadline: Option<std::time::Instant>,
    /// The control plane's counters (clients refused, neighbours refused...), shared with the metrics server.
    pub counters: Arc<crate::clients::ControlCounters>,
    /// The events recorded for `monitor` clients ([`crate::monitor`]).
    pub monitor: crate::monitor::Events,
}

/// Merges the workers' reports: the total, and each worker's.
pub fn gather(reports: &[Arc<Mutex<WorkerReport>>]) -> (WorkerReport, Vec<WorkerReport>) {
    let each: Vec<WorkerReport> = reports
        .iter()
        .map(|r| r.lock().map(|r| r.clone()).unwrap_or_default())
        .collect();
    let mut total = WorkerReport::default();
    for r in &each {
        total.merge(r);
    }
    (total, each)
}

/// A report as JSON (`show stats -j`, the final counters of `lwt6 run -j`).
pub fn report_json(r: &WorkerReport, names: &[String]) -> serde_json::Value {
    let mut v = r.stats.to_json();
    let mut links = serde_json::Map::new();
    for (i, n) in names.iter().enumerate() {
        links.insert(
            n.clone(),
            json!({
                "rx": r.rx_by_dev.get(i).copied().unwrap_or(0),
                "tx": r.tx_by_dev.get(i).copied().unwrap_or(0),
                "overload": r.overload_by_dev.get(i).copied().unwrap_or(0),
            }),
        );
    }
    v["links"] = json!(links);
    v["overload"] = json!(r.overload_by_dev.iter().sum::<u64>());
    v["tx_refused"] = json!(r.tx_refused);
    v["tx_unsent_at_stop"] = json!(r.tx_unsent_at_stop);
    v["port_errors"] = json!(r.port_errors);
    v["last_port_error"] = json!(r.last_error);
    v
}

/// A report as text, one counter a line.
pub fn report_text(r: &WorkerReport, names: &[String]) -> String {
    let st = &r.stats;
    let mut s = format!(
        "frames in {}, forwarded {}, dropped {}, icmp errors sent {}, buffer reallocations {}, fast path {}\n",
        st.rx,
        st.tx,
        st.dropped(),
        st.icmp_tx,
        st.reallocs,
        st.fast_path
    );
    for (k, v) in &st.encapsulated {
        s += &format!("  encapsulated {k}: {v}\n");
    }
    if st.ioam_transit_filled > 0 {
        s += &format!(
            "  ioam traces filled in transit: {}\n",
            st.ioam_transit_filled
        );
    }
    for (reason, n) in &st.drops {
        s += &format!("  drop {:<28} {n}\n", reason.name());
    }
    for (i, n) in names.iter().enumerate() {
        let (rx, tx) = (
            r.rx_by_dev.get(i).copied().unwrap_or(0),
            r.tx_by_dev.get(i).copied().unwrap_or(0),
        );
        s += &format!("  link {n:<15} rx {rx} tx {tx}\n");
    }
    let overload: u64 = r.overload_by_dev.iter().sum();
    if overload > 0 {
        let per: Vec<String> = names
            .iter()
            .zip(&r.overload_by_dev)
            .filter(|(_, n)| **n > 0)
            .map(|(l, n)| format!("{l} {n}"))
            .collect();
        s += &format!(
            "  overload (dropped by the kernel before lwt6 received them: socket ring or buffer full) {overload}: {}\n",
            per.join(", ")
        );
    }
    if r.tx_refused > 0 || r.tx_unsent_at_stop > 0 {
        s += &format!(
            "  lost on transmit: refused by a full queue {}, unsent at stop {}\n",
            r.tx_refused, r.tx_unsent_at_stop
        );
    }
    if let Some(e) = &r.last_error {
        s += &format!("  port errors {} (last: {e})\n", r.port_errors);
    }
    s
}

impl Control {
    /// The control thread of a router running `cfg`, whose snapshot `handle` publishes, with the workers'
    /// `reports`, over I/O back end `io`; no neighbour learned, no kernel route mirrored, no trace armed yet.
    /// Indexes the routes once (the cost of one request afterwards does not depend on their number).
    pub fn new(
        cfg: Config,
        handle: Arc<SnapshotHandle>,
        reports: Vec<Arc<Mutex<WorkerReport>>>,
        io: &'static str,
    ) -> Self {
        Control {
            builder: Builder::from_config(cfg),
            handle,
            reports,
            io,
            writer: None,
            neigh: NeighTable::default(),
            outbox: Arc::default(),
            kernel_routes: Default::default(),
            trace: Arc::default(),
            capture: Arc::default(),
            xdp: None,
            stopping: None,
            refused: 0,
            baseline: Default::default(),
            ports: Vec::new(),
            export: Arc::default(),
            deadline: None,
            counters: Arc::default(),
            monitor: Default::default(),
        }
    }

    /// The configuration the published snapshot was built from.
    pub fn cfg(&self) -> &Config {
        self.builder.config()
    }

    fn link_names(&self) -> Vec<String> {
        self.cfg().links.iter().map(|l| l.name.clone()).collect()
    }

    /// Answers one request: `(true, output)` or `(false, error message)`.
    pub fn handle_line(&mut self, line: &str) -> (bool, String) {
        let toks: Vec<&str> = line.split_whitespace().collect();
        if let Some(args) = crate::show::inspect::route_get_words(&toks) {
            return self.route_get(args);
        }
        if let Some(r) = self.export.control(&toks) {
            return r;
        }
        match toks.first().copied() {
            None => (false, "empty request".into()),
            Some("show") => crate::trim::after_reply(self.show(&toks[1..])),
            Some("clear") => self.clear(&toks[1..]),
            Some("trace") => {
                let r = self.trace(&toks[1..]);
                self.monitor.request(&toks, r.0);
                r
            }
            Some("capture") => {
                let r = crate::capture::request(&self.capture, &self.handle.load(), &toks[1..]);
                self.monitor.request(&toks, r.0);
                r
            }
            Some("link") => (
                false,
                "'link': interfaces are attached when the router starts; restart it to change them"
                    .into(),
            ),
            Some(_) => match self.apply(&[line]) {
                Ok(()) => (true, String::new()),
                Err(e) => (false, e),
            },
        }
    }

    /// Answers a batch request: configuration lines applied in order as one atomic step (all of them, or none
    /// when one fails: the error names its line, 1 for the first line after `batch`).
    pub fn handle_batch(&mut self, lines: &[&str]) -> (bool, String) {
        if let Some((i, _)) = lines.iter().enumerate().find(|(_, l)| {
            let first = l.split_whitespace().next();
            matches!(
                first,
                Some("show" | "link" | "batch" | "trace" | "clear" | "capture")
            )
        }) {
            return (
                false,
                format!(
                    "line {}: '{}': a batch holds configuration lines only (no link, show, trace, clear or batch)",
                    i + 1,
                    shown_token(lines[i].split_whitespace().next().unwrap_or(""))
                ),
            );
        }
        // A large batch's memory is given back by the caller, once its lines are freed too (clients.rs).
        let res = self.apply(lines);
        match res {
            Ok(()) => (true, String::new()),
            Err(e) => (false, e),
        }
    }

    fn show(&self, args: &[&str]) -> (bool, String) {
        let (what, json) = match args {
            [w] => (*w, false),
            [w, "-j"] | [w, "--json"] => (*w, true),
            [w, x, ..] => {
                return (
                    false,
                    format!("'{}': expected -j or nothing after {w}", shown_token(x)),
                );
            }
            [] => {
                return (
                    false,
                    format!(
                        "show what? (expected one of: {})",
                        crate::show::inspect::SHOW_WHAT
                    ),
                );
            }
        };
        if let Some(answer) = self.show_more(what, json) {
            return answer;
        }
        match what {
            "capture" if json => (true, format!("{}\n", self.capture.json())),
            "capture" => (true, self.capture.text()),
            "trace" => {
                let (sum, frames) = self.trace.snapshot();
                if json {
                    (
                        true,
                        format!("{}\n", crate::show::trace::json(&sum, &frames)),
                    )
                } else {
                    (true, crate::show::trace::text(&sum, &frames))
                }
            }
            "xdp" => crate::xdp_tier::show(self.xdp.as_ref(), &self.handle.load(), json),
            "routes" => {
                // With the workers' `count` counters of seg6local routes, as `ip -s route` shows them.
                let (total, _) = self.counters();
                let snap = self.handle.load();
                (
                    true,
                    crate::show::routes_text(&snap, json, Some(&total.stats.seg6local)),
                )
            }
            "stats" => {
                let names = self.link_names();
                let (total, each) = self.counters();
                if json {
                    let workers: Vec<_> = each.iter().map(|r| report_json(r, &names)).collect();
                    let mut v = report_json(&total, &names);
                    v["io"] = json!(self.io);
                    v["workers"] = json!(workers);
                    for (k, n) in self.counters.pairs() {
                        v[k] = json!(n);
                    }
                    v["control_refused"] = json!(self.refused_since_clear());
                    v["cleared_at"] = json!(self.baseline.at.map(crate::show::clear::unix_seconds));
                    if let Some(k) = self.kernel_routes.stats_json() {
                        v["kernel_routes"] = k;
                    }
                    if let Some(t) = self.xdp.as_ref().and_then(|t| t.lock().ok()) {
                        v["xdp"] = t.json(&total.stats);
                    }
                    v["ioam_export"] = self.export.json();
                    v["neigh_learned"] = json!(self.neigh.len());
                    (true, format!("{v}\n"))
                } else {
                    let mut s = format!("io {}, {} workers\n", self.io, each.len());
                    s += &crate::show::clear::since_text(&self.baseline);
                    s += &report_text(&total, &names);
                    s += &self.kernel_routes.stats_text();
                    if let Some(t) = self.xdp.as_ref().and_then(|t| t.lock().ok()) {
                        s += &t.text(&total.stats);
                    }
                    s += &self.export.text();
                    if self.refused_since_clear() > 0 {
                        s += &format!(
                            "  control connections refused (peer credentials) {}\n",
                            self.refused_since_clear()
                        );
                    }
                    s += &crate::clients::counters_text(&self.counters);
                    for (i, r) in each.iter().enumerate() {
                        s += &format!(
                            "worker {i}: frames in {}, forwarded {}, dropped {}\n",
                            r.stats.rx,
                            r.stats.tx,
                            r.stats.dropped()
                        );
                    }
                    (true, s)
                }
            }
            "neigh" => {
                let mut rows: Vec<(String, String, String, &str)> = self
                    .cfg()
                    .neighs
                    .iter()
                    .map(|n| {
                        (
                            n.addr.to_string(),
                            n.dev.clone(),
                            mac_text(&n.lladdr),
                            "PERMANENT",
                        )
                    })
                    .collect();
                let names = self.link_names();
                let mut learned: Vec<_> = self.neigh.iter().collect();
                learned.sort_by_key(|((d, a), _)| (*d, *a));
                for ((dev, addr), e) in learned {
                    let state = match e.state {
                        State::Reachable { .. } => "REACHABLE",
                        State::Stale { .. } => "STALE",
                        State::Delay { .. } => "DELAY",
                        State::Probe { .. } => "PROBE",
                    };
                    let dev = names.get(dev).cloned().unwrap_or_default();
                    rows.push((addr.to_string(), dev, mac_text(&e.mac), state));
                }
                if json {
                    let v: Vec<_> = rows
                        .iter()
                        .map(
                            |(a, d, m, st)| json!({"dst": a, "dev": d, "lladdr": m, "state": [st]}),
                        )
                        .collect();
                    (true, format!("{}\n", serde_json::Value::Array(v)))
                } else {
                    let s: String = rows
                        .iter()
                        .map(|(a, d, m, st)| format!("{a} dev {d} lladdr {m} {st}\n"))
                        .collect();
                    (true, s)
                }
            }
            w => (
                false,
                format!(
                    "'{}': expected one of: {}",
                    shown_token(w),
                    crate::show::inspect::SHOW_WHAT
                ),
            ),
        }
    }

    /// `trace add N [FILTER]`, `trace stop`, `trace clear`.
    fn trace(&mut self, args: &[&str]) -> (bool, String) {
        const WHAT: &str = "expected one of: add N [FILTER], stop, clear";
        match args {
            ["add", n, filter @ ..] => {
                let n = match n.parse::<u64>() {
                    Ok(n) if (1..=lwt6_dataplane::trace::MAX_FRAMES).contains(&n) => n,
                    _ => {
                        return (
                            false,
                            format!(
                                "'{}': the number of frames to trace (1..={})",
                                shown_token(n),
                                lwt6_dataplane::trace::MAX_FRAMES
                            ),
                        );
                    }
                };
                let snap = self.handle.load();
                match lwt6_config::trace_filter(&filter.join(" "), |d| snap.dev_id(d)) {
                    Ok(f) => {
                        self.trace.arm(f, n);
                        (true, String::new())
                    }
                    Err(e) => (false, format!("'{}': {}", shown_token(&e.token), e.reason)),
                }
            }
            ["add"] => (
                false,
                "'add': missing value (the number of frames to trace)".into(),
            ),
            ["stop"] => {
                self.trace.stop();
                (true, String::new())
            }
            ["clear"] => {
                self.trace.clear();
                (true, String::new())
            }
            [w @ ("stop" | "clear"), x, ..] => (
                false,
                format!("'{}': nothing expected after trace {w}", shown_token(x)),
            ),
            [w, ..] => (false, format!("'{}': {WHAT}", shown_token(w))),
            [] => (false, format!("trace what? ({WHAT})")),
        }
    }

    /// Applies configuration lines, in order, to the running configuration and publishes the result; nothing
    /// changes when one fails. Errors name the token and, for several lines, the line (1-based).
    fn apply(&mut self, lines: &[&str]) -> Result<(), String> {
        let several = lines.len() > 1;
        let located = |e: lwt6_dataplane::spec::ConfigError| {
            let at = if several && e.line > 0 {
                format!("line {}: ", e.line)
            } else {
                String::new()
            };
            if e.token.is_empty() {
                format!("{at}{}", e.reason)
            } else {
                format!("{at}'{}': {}", shown_token(&e.token), e.reason)
            }
        };
        let mut tx = self.builder.transaction();
        for (i, line) in lines.iter().enumerate() {
            if i % STOP_CHECK_LINES == STOP_CHECK_LINES - 1
                && let Some((why, stopping)) = give_up(&mut self.stopping, self.deadline, i + 1)
            {
                if stopping {
                    // The router stops: undoing the lines (as dropping the transaction does) only delays it.
                    std::mem::forget(tx);
                }
                // Dropping the transaction undoes the lines before.
                return Err(why);
            }
            // An error drops the transaction, which undoes the lines before.
            tx.line(i + 1, line).map_err(located)?;
        }
        let delta = tx.check().map_err(located)?;
        let mut events = self.monitor.fork();
        events.applied("ctl", lines, &delta.removed, &delta.added);
        if let Some((why, stopping)) = give_up(&mut self.stopping, self.deadline, lines.len()) {
            if stopping {
                std::mem::forget(tx);
            }
            return Err(why);
        }
        // Other lines the snapshot can follow in place (neighbours, addresses, sysctls, IOAM, `sr`: see
        // `changes_between`) become changes; the rest rebuild it.
        let mut changes = Vec::new();
        if delta.other_lines {
            let before = tx.rest_before();
            match before.and_then(|b| changes_between(b, tx.config(), &self.handle.load())) {
                Some(c) => changes = c,
                None => {
                    let snap = Snapshot::build(tx.config()).map_err(located)?;
                    tx.commit();
                    self.publish(snap);
                    self.monitor.join(events);
                    return Ok(());
                }
            }
        }
        // Lines that only add, remove or replace routes change the published table in place by the routes they
        // changed (through the writer's two snapshots: no rebuild, no copy of the table).
        // Configured routes win over mirrored kernel routes of the same prefix and metric (crate::kroutes).
        let keys = crate::kroutes::delta_keys(&delta.removed, &delta.added);
        changes.extend(self.kernel_routes.yield_to(&delta.added));
        changes.extend(
            delta
                .removed
                .iter()
                .map(|r| Change::DelRoute {
                    prefix: r.prefix,
                    metric: r.metric,
                    table: r.table,
                    line: r.line as usize,
                })
                .chain(delta.added.into_iter().map(Change::AddRoute)),
        );
        if changes.is_empty() {
            tx.commit();
            self.monitor.join(events);
            return Ok(());
        }
        let writer = self
            .writer
            .get_or_insert_with(|| SnapshotWriter::new(Arc::clone(&self.handle)));
        // Published in chunks, looking between them whether the router is stopping: a stop signal is obeyed
        // within 2 s however large the batch (the part published then lives only until the workers stop).
        let mut result = Ok(());
        for (k, chunk) in changes.chunks(PUBLISH_CHUNK).enumerate() {
            if k > 0 && self.stopping.as_mut().is_some_and(|f| f()) {
                // The router stops: undoing the lines (as dropping the transaction would) only delays it.
                std::mem::forget(tx);
                return Err(
                    "interrupted: the router is stopping; stopped while publishing this request: the workers forwarded with part of it until they stopped"
                        .into(),
                );
            }
            let applied = writer.apply(chunk);
            if k == 0 {
                // The catch-up of the request before (this request's own chunks are trimmed after it).
                crate::trim::after_catch_up(writer);
            }
            if let Err((i, e)) = applied {
                result = Err((k * PUBLISH_CHUNK + i, e));
                break;
            }
        }
        match result {
            Ok(()) => {
                tx.commit();
                crate::trim::after_request(writer, changes.len());
                self.monitor.join(events);
                crate::kroutes::configured_changed(self, keys);
                Ok(())
            }
            Err((i, e)) => {
                drop(tx);
                if i > 0 {
                    // The changes before the one refused are published: put the running configuration back.
                    let snap = Snapshot::build(self.cfg()).map_err(located)?;
                    self.publish(snap);
                }
                Err(located(e))
            }
        }
    }

    /// Publishes a snapshot built from scratch (the writer's spare no longer follows the published one), with
    /// the learned neighbours put back into it.
    fn publish(&mut self, mut snap: Snapshot) {
        self.writer = None;
        for ((dev, addr), e) in self.neigh.iter() {
            // Neighbour changes name devices of the running links, which a rebuild keeps: they always apply.
            let _ = snap.apply(&Change::NeighSet {
                dev,
                addr,
                mac: e.mac,
                stale: !matches!(e.state, State::Reachable { .. }),
            });
        }
        // A kernel route the new configuration also has stays the configuration's (shadowed).
        let links = self.link_names();
        self.kernel_routes.reinstall(&mut snap, &links);
        self.handle.publish(snap);
    }

    /// Publishes neighbour changes in place (through the writer, as route additions are).
    fn publish_changes(&mut self, changes: &[Change]) {
        if changes.is_empty() {
            return;
        }
        // Neighbour changes name devices of the running links: they always apply.
        let _ = self.apply_in_place(changes);
    }

    /// Brings the writer's spare snapshot up to date with the last request's changes, when no worker holds it
    /// ([`SnapshotWriter::try_catch_up`]): called once a request is answered, so that the next one does not wait for
    /// it (a line costs one application of its changes before its answer, not two).
    pub fn catch_up_spare(&mut self) {
        if let Some(w) = &mut self.writer
            && w.try_catch_up()
        {
            crate::trim::after_catch_up(w);
        }
    }

    /// Applies changes to the published snapshot in place, through the writer (as route additions are); on an
    /// error the changes before it are published, it and the rest are not.
    pub fn apply_in_place(
        &mut self,
        changes: &[Change],
    ) -> Result<(), (usize, lwt6_dataplane::spec::ConfigError)> {
        let writer = self
            .writer
            .get_or_insert_with(|| SnapshotWriter::new(Arc::clone(&self.handle)));
        let r = writer.apply(changes);
        crate::trim::after_catch_up(writer);
        if self.monitor.active() {
            let done = r.as_ref().map_or_else(|(i, _)| *i, |_| changes.len());
            let links = self.link_names();
            self.monitor.changes(&changes[..done], &links);
        }
        r
    }

    /// What the workers learned, at time `now` (ns), into the neighbour table; the resulting changes published.
    pub fn learn(&mut self, events: &[NeighEvent], now: u64) {
        let snap = self.handle.load();
        let mut changes = Vec::new();
        for e in events {
            self.neigh.learn(&snap, e, now, &mut changes);
        }
        drop(snap);
        self.publish_changes(&changes);
        let c = &self.counters;
        c.neigh_refused
            .store(self.neigh.refused, std::sync::atomic::Ordering::Relaxed);
        c.neigh_evicted
            .store(self.neigh.evicted, std::sync::atomic::Ordering::Relaxed);
    }

    /// The neighbour table's timers at `now` (ns): entries aged and probed, the changes published, the probes
    /// handed to a worker.
    pub fn tick(&mut self, now: u64) {
        let snap = self.handle.load();
        let t = self.neigh.tick(&snap, now);
        drop(snap);
        self.publish_changes(&t.changes);
        self.outbox.push(t.frames);
    }

    /// Replaces the whole configuration (a reloaded file) when it builds; the links must be the running ones.
    pub fn replace(&mut self, cfg: Config) -> Result<(), String> {
        let now: Vec<_> = self
            .cfg()
            .links
            .iter()
            .map(|l| (&l.name, l.mac, l.mtu))
            .collect();
        let new: Vec<_> = cfg.links.iter().map(|l| (&l.name, l.mac, l.mtu)).collect();
        if now != new {
            return Err(
                "the links differ from the running ones (restart the router to change interfaces)"
                    .into(),
            );
        }
        let snap = Snapshot::build(&cfg).map_err(|e| e.to_string())?;
        self.publish(snap);
        let old = std::mem::replace(&mut self.builder, Builder::from_config(cfg));
        let mut events = self.monitor.fork();
        events.reloaded(Ok((&old.config().routes, &self.cfg().routes)));
        self.monitor.join(events);
        Ok(())
    }

    /// Whether the router is stopping (SIGINT or SIGTERM came): long requests check it and give up.
    pub(crate) fn interrupted(&mut self) -> bool {
        self.stopping.as_mut().is_some_and(|f| f())
    }
}

/// Why a request being applied is given up, after `done` lines, and whether it is because the router is stopping
/// (else the request's deadline passed). `None`: go on.
fn give_up(
    stopping: &mut Option<Box<dyn FnMut() -> bool>>,
    deadline: Option<std::time::Instant>,
    done: usize,
) -> Option<(String, bool)> {
    if stopping.as_mut().is_some_and(|f| f()) {
        return Some((INTERRUPTED.into(), true));
    }
    deadline
        .filter(|d| std::time::Instant::now() >= *d)
        .map(|_| {
            (
                format!(
                    "{TIMED_OUT}: {done} lines applied and the request was still not done {} s after its connection was accepted; nothing of it was applied",
                    crate::clients::REQUEST_DEADLINE.as_secs()
                ),
                false,
            )
        })
}

/// The control socket a router bound: its listener, and the file it made (removed by [`ControlSocket::remove`]
/// only while it is still that file).
#[derive(Debug)]
pub struct ControlSocket {
    /// The listening socket (non-blocking).
    pub listener: UnixListener,
    path: PathBuf,
    /// The device and inode of the socket file after bind.
    id: (u64, u64),
    /// The group whose members may connect (besides root and the router's own user).
    pub group: u32,
}

/// What kind of file a path names, for error messages.
fn file_kind(m: &std::fs::Metadata) -> &'static str {
    let t = m.file_type();
    if t.is_symlink() {
        "a symbolic link"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_file() {
        "a regular file"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_char_device() {
        "a character device"
    } else {
        "a file of unknown type"
    }
}

/// The mode of the control socket: read and write (connect) for its owner and group only.
pub const SOCKET_MODE: u32 = 0o660;
/// The mode of the control socket's directory when the router creates it.
pub const DIR_MODE: u32 = 0o750;

/// Opens the control socket at `path`, mode [`SOCKET_MODE`] whatever the umask, its group `group`. Its directory
/// is created when missing (mode [`DIR_MODE`], group `group`); an existing one is left as it is. An existing
/// `path` is replaced only when it is a socket nobody listens on (left by a router that died); a socket another
/// router answers on, or anything else (a regular file, a directory, a FIFO, a symbolic link...), is refused and
/// left intact.
pub fn listen(path: &Path, group: u32) -> Result<ControlSocket, Error> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && std::fs::symlink_metadata(dir).is_err()
    {
        std::fs::create_dir_all(dir)
            .map_err(|e| fail(format!("control socket directory {}: {e}", dir.display())))?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(DIR_MODE))
            .and_then(|()| std::os::unix::fs::chown(dir, None, Some(group)))
            .map_err(|e| fail(format!("control socket directory {}: {e}", dir.display())))?;
    }
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => match UnixStream::connect(path) {
            Ok(_) => {
                return Err(fail(format!(
                    "control socket {} is in use: another router answers on it (stop it, or choose another with --control)",
                    path.display()
                )));
            }
            Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => {
                // A socket nobody listens on: left by a router that died.
                std::fs::remove_file(path).map_err(|e| {
                    fail(format!(
                        "removing the stale control socket {}: {e}",
                        path.display()
                    ))
                })?;
            }
            Err(e) => {
                return Err(fail(format!(
                    "control socket {}: a socket is there and connecting to it fails ({e}): not replaced",
                    path.display()
                )));
            }
        },
        Ok(m) => {
            return Err(fail(format!(
                "control socket {}: the path is {}, not a socket: not replaced (remove it, or choose another with --control)",
                path.display(),
                file_kind(&m)
            )));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(fail(format!("control socket {}: {e}", path.display()))),
    }
    let l = UnixListener::bind(path)
        .map_err(|e| fail(format!("control socket {}: {e}", path.display())))?;
    let made = (|| {
        // Every connection's credentials are checked, so the moment before the mode is set gives nobody access.
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(SOCKET_MODE))?;
        std::os::unix::fs::chown(path, None, Some(group))?;
        l.set_nonblocking(true)?;
        std::fs::symlink_metadata(path)
    })();
    match made {
        Ok(m) => Ok(ControlSocket {
            listener: l,
            path: path.to_path_buf(),
            id: (m.dev(), m.ino()),
            group,
        }),
        Err(e) => {
            let _ = std::fs::remove_file(path);
            Err(fail(format!("control socket {}: {e}", path.display())))
        }
    }
}

/// The group id `group` names: a numeric gid, or a group's name.
pub fn group_id(group: &str) -> Result<u32, Error> {
    if let Ok(gid) = group.parse::<u32>() {
        return Ok(gid);
    }
    match lwt6_io::sys::group_id(group) {
        Ok(Some(gid)) => Ok(gid),
        Ok(None) => Err(fail(format!("--control-group {group}: no such group"))),
        Err(e) => Err(fail(format!("--control-group {group}: {e}"))),
    }
}

impl ControlSocket {
    /// Removes the socket file, when it is still the one bound (same device and inode): a file put in its place
    /// since is left alone.
    pub fn remove(&self) {
        if let Ok(m) = std::fs::symlink_metadata(&self.path)
            && m.file_type().is_socket()
            && (m.dev(), m.ino()) == self.id
        {
            let _ = std::fs::remove_file(&self.path);
        }
    }

    /// Whether the peer of `conn` may use the socket: root, the router's own user, or a member of the group
    /// (its effective group, or one of its supplementary groups as /proc tells them). The reason when not.
    pub fn admits(&self, conn: &UnixStream) -> Result<(), String> {
        let c = lwt6_io::sys::peer_cred(conn).map_err(|e| format!("peer credentials: {e}"))?;
        if c.uid == 0 || c.uid == lwt6_io::sys::uid() || c.gid == self.group {
            return Ok(());
        }
        if c.pid != 0
            && let Ok(status) = std::fs::read_to_string(format!("/proc/{}/status", c.pid))
            && status
                .lines()
                .find_map(|l| l.strip_prefix("Groups:"))
                .is_some_and(|g| {
                    g.split_whitespace()
                        .any(|x| x.parse::<u32>() == Ok(self.group))
                })
        {
            return Ok(());
        }
        Err(format!(
            "permission denied: uid {} is neither root, the router's user nor in group {}",
            c.uid, self.group
        ))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::time::Duration;

    /// A control thread of two links, one address and one static neighbour (for the control socket's tests too).
    pub(crate) fn control() -> Control {
        let cfg = lwt6_config::parse(
            "link add r0 address 02:00:00:00:01:02\nlink add r1 address 02:00:00:00:02:01\n\
             addr add fd00:2::1/64 dev r1\nneigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1\n",
        )
        .unwrap();
        let snap = Snapshot::build(&cfg).unwrap();
        Control::new(
            cfg,
            Arc::new(SnapshotHandle::new(snap)),
            vec![Arc::new(Mutex::new(WorkerReport::default()))],
            "test",
        )
    }

    fn routes(c: &Control) -> String {
        crate::show::routes_text(&c.handle.load(), false, None)
    }

    #[test]
    fn route_and_neighbour_lines_change_the_table_in_place_and_other_lines_rebuild_it() {
        let mut c = control();
        let (ok, _) = c.handle_line("-6 route add fd00:55::/64 via fd00:2::2 dev r1");
        assert!(ok);
        assert!(
            c.writer.is_some(),
            "a route addition goes through the writer"
        );
        assert!(routes(&c).contains("fd00:55::/64 via fd00:2::2 dev r1"));
        let (ok, _) =
            c.handle_line("-6 route add fd00:56::/64 encap seg6 mode encap segs fc00::1 dev r1");
        assert!(ok);
        let shown = routes(&c);
        assert!(
            shown.contains("fd00:55::/64") && shown.contains("fd00:56::/64"),
            "{shown}"
        );
        assert_eq!(c.cfg().routes.len(), 2);
        let (ok, _) = c.handle_line("neigh add fd00:2::3 lladdr 02:00:00:00:02:03 dev r1");
        assert!(ok);
        assert!(
            c.writer.is_some(),
            "a static neighbour changes the snapshot in place"
        );
        let (ok, neigh) = c.handle_line("show neigh");
        assert!(
            ok && neigh.contains("fd00:2::3 dev r1 lladdr 02:00:00:00:02:03 PERMANENT"),
            "{neigh}"
        );
        let (ok, _) = c.handle_line("sysctl net.ipv6.ioam6_id=7");
        assert!(ok);
        assert!(
            c.writer.is_some(),
            "a sysctl line changes the snapshot in place"
        );
        // An address in the prefix of one already there: a rebuild (its connected route meets the other's).
        let (ok, msg) = c.handle_line("addr add fd00:2::9/64 dev r1");
        assert!(ok, "{msg}");
        assert!(c.writer.is_none(), "this address rebuilds the snapshot");
        assert!(
            routes(&c).contains("fd00:56::/64"),
            "the rebuilt snapshot keeps the added routes"
        );
        let (ok, neigh) = c.handle_line("show neigh");
        assert!(ok && neigh.contains("fd00:2::3 dev r1"), "{neigh}");
    }

    #[test]
    fn route_removals_and_batches_change_the_table_in_place() {
        let mut c = control();
        let rebuilt =
            |c: &Control| crate::show::routes_text(&Snapshot::build(c.cfg()).unwrap(), false, None);
        let (ok, msg) = c.handle_batch(&[
            "-6 route add fd00:55::/64 via fd00:2::2 dev r1",
            "-6 route add fd00:56::/64 encap seg6 mode encap segs fc00::1 dev r1",
            "-6 route add fd00:57::/64 via fd00:2::2 dev r1",
            "-6 route add fd00:58::/64 via fd00:2::2 dev r1",
        ]);
        assert!(ok, "{msg}");
        assert!(c.writer.is_some(), "route additions go through the writer");
        // Removals, a replacement, an addition and a route both added and removed in one batch.
        let (ok, msg) = c.handle_batch(&[
            "-6 route del fd00:55::/64",
            "-6 route replace fd00:56::/64 encap seg6 mode inline segs fc00::2 dev r1",
            "route del fd00:57::/64",
            "-6 route add fd00:59::/64 via fd00:2::2 dev r1",
            "-6 route add fd00:5a::/64 via fd00:2::2 dev r1",
            "-6 route del fd00:5a::/64",
        ]);
        assert!(ok, "{msg}");
        assert!(c.writer.is_some(), "route changes only: in place");
        let shown = routes(&c);
        assert_eq!(shown, rebuilt(&c), "in place and rebuilt differ");
        for (p, there) in [
            ("fd00:55::", false),
            ("encap seg6 mode inline segs 2 [ fc00::2 :: ]", true),
            ("fd00:57::", false),
            ("fd00:58::", true),
            ("fd00:59::", true),
            ("fd00:5a::", false),
        ] {
            assert_eq!(shown.contains(p), there, "{p}: {shown}");
        }
        let (ok, msg) = c.handle_line("-6 route del fd00:58::/64");
        assert!(ok, "{msg}");
        assert!(c.writer.is_some() && !routes(&c).contains("fd00:58::"));
        // Routes and an address: in place too.
        let (ok, msg) = c.handle_batch(&[
            "-6 route add fd00:5b::/64 via fd00:2::2 dev r1",
            "addr add fd00:3::1/64 dev r1",
        ]);
        assert!(ok, "{msg}");
        assert!(c.writer.is_some(), "a batch with a new address: in place");
        assert!(routes(&c).contains("fd00:5b::/64") && routes(&c).contains("fd00:3::/64"));
        assert_eq!(routes(&c), rebuilt(&c));
        // Routes and an address whose connected route meets another's: rebuilt.
        let (ok, msg) = c.handle_batch(&[
            "-6 route add fd00:5c::/64 via fd00:2::2 dev r1",
            "addr add fd00:3::2/64 dev r1",
        ]);
        assert!(ok, "{msg}");
        assert!(c.writer.is_none(), "this batch rebuilds");
        assert!(routes(&c).contains("fd00:5c::/64"));
        assert_eq!(routes(&c), rebuilt(&c));
    }

    /// A batch request over the socket: `batch`, its lines, the end of the request; the reply's first line.
    /// A fresh directory for socket tests.
    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("lwt6-ctl-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn listen_refuses_what_is_not_a_stale_socket_and_leaves_it() {
        let d = scratch("refuse");
        let gid = lwt6_io::sys::gid();
        let file = d.join("file");
        std::fs::write(&file, "precious\n").unwrap();
        let e = listen(&file, gid).unwrap_err().to_string();
        assert!(
            e.contains("a regular file") && e.contains("not replaced"),
            "{e}"
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "precious\n");
        let dir = d.join("dir");
        std::fs::create_dir(&dir).unwrap();
        assert!(
            listen(&dir, gid)
                .unwrap_err()
                .to_string()
                .contains("a directory")
        );
        assert!(dir.is_dir());
        // A symbolic link, even to a stale socket, is not replaced.
        let stale = d.join("stale");
        drop(UnixListener::bind(&stale).unwrap());
        let link = d.join("link");
        std::os::unix::fs::symlink(&stale, &link).unwrap();
        assert!(
            listen(&link, gid)
                .unwrap_err()
                .to_string()
                .contains("a symbolic link")
        );
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        // A stale socket is replaced; a live one refused.
        let sock = listen(&stale, gid).unwrap();
        let e = listen(&stale, gid).unwrap_err().to_string();
        assert!(e.contains("another router answers"), "{e}");
        sock.remove();
        assert!(std::fs::symlink_metadata(&stale).is_err());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn the_socket_is_0660_whatever_the_umask_and_removed_only_while_ours() {
        let d = scratch("mode");
        let gid = lwt6_io::sys::gid();
        for mask in [0o000, 0o022, 0o077] {
            let old = lwt6_io::sys::set_umask(mask);
            let path = d.join(format!("sub{mask:o}/s.sock"));
            let r = listen(&path, gid);
            lwt6_io::sys::set_umask(old);
            let sock = r.unwrap();
            let m = std::fs::symlink_metadata(&path).unwrap();
            assert_eq!(m.mode() & 0o7777, SOCKET_MODE, "umask {mask:o}");
            assert_eq!(m.gid(), gid);
            let dm = std::fs::metadata(path.parent().unwrap()).unwrap();
            assert_eq!(dm.mode() & 0o7777, DIR_MODE, "umask {mask:o}");
            // The router's own user is admitted.
            let c = UnixStream::connect(&path).unwrap();
            let (s, _) = sock.listener.accept().unwrap();
            assert_eq!(sock.admits(&s), Ok(()));
            drop(c);
            // Another file put in its place is left alone at exit.
            std::fs::remove_file(&path).unwrap();
            std::fs::write(&path, "x").unwrap();
            sock.remove();
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "x");
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_stopping_router_gives_up_a_batch_and_applies_none_of_it() {
        let mut c = control();
        let calls = Arc::new(Mutex::new(0usize));
        let seen = Arc::clone(&calls);
        c.stopping = Some(Box::new(move || {
            let mut n = seen.lock().unwrap();
            *n += 1;
            *n > 2
        }));
        let lines: Vec<String> = (0..20_000)
            .map(|i| {
                format!(
                    "-6 route add fd00:{:x}::/48 via fd00:2::2 dev r1",
                    0x1000 + i
                )
            })
            .collect();
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let before = routes(&c);
        let (ok, e) = c.handle_batch(&lines);
        assert!(!ok);
        assert!(e.starts_with("interrupted"), "{e}");
        // Nothing published; the running configuration is left as it is (not undone: the router ends, and undoing
        // a large batch would only delay it).
        assert_eq!(routes(&c), before, "an interrupted batch was published");
        // A silent client does not hold a stopping router either.
        let (client, server) = UnixStream::pair().unwrap();
        let t = std::time::Instant::now();
        crate::clients::serve_one(&mut c, server);
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
        let mut reply = String::new();
        (&client).read_to_string(&mut reply).unwrap();
        assert!(reply.starts_with("error: interrupted"), "{reply}");
    }

    #[test]
    fn a_stop_during_the_publication_stops_it_between_chunks() {
        let mut c = control();
        let calls = Arc::new(Mutex::new(0usize));
        let seen = Arc::clone(&calls);
        // Looked at every 4,096 lines, once after the lines, then between chunks: stop at the first chunk boundary.
        let n = 3 * PUBLISH_CHUNK;
        let boundary = n / STOP_CHECK_LINES + 2;
        c.stopping = Some(Box::new(move || {
            let mut k = seen.lock().unwrap();
            *k += 1;
            *k >= boundary
        }));
        let lines: Vec<String> = (0..n)
            .map(|i| format!("-6 route add fd10:{:x}::/32 via fd00:2::2 dev r1", i))
            .collect();
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let (ok, e) = c.handle_batch(&lines);
        assert!(!ok);
        assert!(e.contains("stopped while publishing"), "{e}");
        assert_eq!(*calls.lock().unwrap(), boundary);
        // One chunk reached the table, no more.
        let shown = routes(&c);
        assert_eq!(shown.matches("fd10:").count(), PUBLISH_CHUNK);
    }

    #[test]
    fn a_batch_request_over_the_socket() {
        let mut c = control();
        let ask = |c: &mut Control, request: &str| {
            let (mut client, server) = UnixStream::pair().unwrap();
            client.write_all(request.as_bytes()).unwrap();
            client.shutdown(std::net::Shutdown::Write).unwrap();
            crate::clients::serve_one(c, server);
            let mut reply = String::new();
            client.read_to_string(&mut reply).unwrap();
            reply
        };
        let lines: String = (0..300)
            .map(|i| {
                format!(
                    "-6 route add fd00:{:x}::/48 via fd00:2::2 dev r1\n",
                    0x100 + i
                )
            })
            .collect();
        assert_eq!(ask(&mut c, &format!("batch\n{lines}")), "ok\n");
        assert_eq!(c.cfg().routes.len(), 300);
        assert_eq!(
            ask(
                &mut c,
                "batch\n-6 route del fd00:100::/48\n-6 route del fd00:999::/48\n"
            ),
            "error: line 2: 'fd00:999::/48': no such route to delete\n"
        );
        assert_eq!(c.cfg().routes.len(), 300, "a failed batch removed a route");
        assert_eq!(ask(&mut c, "show stats\n").lines().next(), Some("ok"));
    }

    #[test]
    fn a_bad_line_fails_its_whole_batch() {
        let mut c = control();
        c.handle_line("-6 route add fd00:55::/64 via fd00:2::2 dev r1");
        let before = (routes(&c), c.cfg().clone());
        for (lines, expected) in [
            (
                vec![
                    "-6 route add fd00:56::/64 via fd00:2::2 dev r1",
                    "-6 route del fd00:55::/64",
                    "-6 route add fd00:57::/64 via fd00:2::2 dev nosuch0",
                ],
                "line 3: 'nosuch0'",
            ),
            (
                vec!["-6 route del fd00:55::/64", "-6 route del fd00:55::/64"],
                "line 2: ",
            ),
            (
                vec![
                    "-6 route add fd00:56::/64 via fd00:2::2 dev r1",
                    "show stats",
                ],
                "line 2: 'show'",
            ),
            (vec!["link add r2"], "line 1: 'link'"),
        ] {
            let (ok, msg) = c.handle_batch(&lines);
            assert!(!ok, "{lines:?}");
            assert!(msg.starts_with(expected), "{lines:?}: {msg}");
            assert_eq!(
                (routes(&c), c.cfg().clone()),
                before,
                "{lines:?} changed something"
            );
        }
    }

    #[test]
    fn a_bad_line_changes_nothing() {
        let mut c = control();
        c.handle_line("-6 route add fd00:55::/64 via fd00:2::2 dev r1");
        let before = (routes(&c), c.cfg().clone());
        for (line, token) in [
            (
                "-6 route add fd00:55::/64 via fd00:2::2 dev r1",
                "fd00:55::/64",
            ),
            (
                "-6 route add fd00:57::/64 via fd00:2::2 dev nosuch0",
                "nosuch0",
            ),
            (
                "-6 route add fd00:57::/64 encap seg6 mode encapz segs fc00::1 dev r1",
                "encapz",
            ),
            ("link add r2", "link"),
            ("show nothing", "nothing"),
        ] {
            let (ok, msg) = c.handle_line(line);
            assert!(!ok, "{line}");
            assert!(msg.contains(&format!("'{token}'")), "{line}: {msg}");
            assert_eq!(
                (routes(&c), c.cfg().clone()),
                before,
                "{line} changed something"
            );
        }
    }

    #[test]
    fn trace_requests() {
        let mut c = control();
        let (ok, shown) = c.handle_line("show trace");
        assert!(
            ok && shown.starts_with("trace off: 0 of 0 frames"),
            "{shown}"
        );
        for (line, token) in [
            ("trace add 0", "0"),
            ("trace add many", "many"),
            ("trace add 10001", "10001"),
            ("trace add 3 dst banana", "banana"),
            ("trace add 3 dev nosuch0", "nosuch0"),
            ("trace add 3 port 53", "port"),
            ("trace add", "add"),
            ("trace start", "start"),
            ("trace stop now", "now"),
        ] {
            let (ok, msg) = c.handle_line(line);
            assert!(!ok && msg.contains(&format!("'{token}'")), "{line}: {msg}");
        }
        assert_eq!(
            c.trace.snapshot().0.status,
            "off",
            "a bad line arms nothing"
        );
        assert!(
            c.handle_line("trace add 2 dev r1 dst fd00:99::/64 proto udp")
                .0
        );
        let (ok, shown) = c.handle_line("show trace -j");
        let v: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert!(ok);
        assert_eq!(v["status"], "armed");
        assert_eq!(
            (v["requested"].as_u64(), v["recorded"].as_u64()),
            (Some(2), Some(0))
        );
        assert_eq!(v["filter"], "dev r1 dst fd00:99::/64 proto udp");
        assert!(c.handle_line("trace stop").0);
        assert!(
            c.handle_line("show trace")
                .1
                .starts_with("trace stopped: 0 of 2")
        );
        assert!(c.handle_line("trace clear").0);
        assert!(c.handle_line("show trace").1.starts_with("trace off"));
    }
}
