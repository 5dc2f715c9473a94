//! Live IOAM export (`lwt6 run --ioam-export TARGET`, `lwt6 ctl ioam export add|del TARGET`, `show ioam
//! export`; docs/live.md and docs/ioam.md, *Export*).
//!
//! The [`ExportHub`] holds the running exporters, each an `lwt6_export` exporter thread behind a bounded channel.
//! A worker looks at the hub's generation once per round (one atomic load); when it changed, it takes the
//! current exporters' [`Submitter`]s. After a round with records in its export queue, it hands each exporter the
//! round's records with `try_send`: a full channel (a slow or absent collector) loses them, counted per
//! exporter, and the worker never waits. A removed exporter ends once every worker has let its submitter go (at
//! the worker's next round) and the records it holds are written.

use lwt6_dataplane::worker::Worker;
use lwt6_export::exporter::{ExportReport, Exporter, Submitter};
use lwt6_export::target::Target;
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Records a worker queues in a round before the hand-over (more are counted in `ioam.export_lost`).
pub const QUEUE: usize = 8192;
/// Hand-overs (one per worker round with records) waiting for an exporter thread.
pub const DEPTH: usize = 256;

struct Running {
    target: Target,
    exporter: Exporter,
}

/// An exporter's counters (`show ioam export`, `show stats`, metrics, the final report).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExporterStats {
    /// The target, as given (`grpc:HOST:PORT`, ...).
    pub target: String,
    /// Whether it still runs (removed ones keep their final counters).
    pub running: bool,
    /// Traces handed to it.
    pub submitted: u64,
    /// Written by it (the file or the collector holds them).
    pub written: u64,
    /// Lost: its queue was full, or the sink failed.
    pub lost: u64,
    /// The failures by kind, and the last error.
    pub report: ExportReport,
}

impl ExporterStats {
    fn of(target: &Target, e: &Exporter, running: bool) -> ExporterStats {
        let report = e.progress();
        ExporterStats {
            target: target.to_string(),
            running,
            submitted: e.submitted(),
            written: report.written,
            lost: report.lost,
            report,
        }
    }

    /// As JSON.
    pub fn json(&self) -> serde_json::Value {
        json!({
            "target": self.target,
            "running": self.running,
            "submitted": self.submitted,
            "written": self.written,
            "lost": self.lost,
            "pending": self.submitted.saturating_sub(self.written + self.lost),
            "failures": self.report.failures.iter().map(|(k, n)| json!({"kind": k, "count": n})).collect::<Vec<_>>(),
            "last_error": self.report.last_error,
        })
    }

    /// As one line of text.
    pub fn text(&self) -> String {
        let mut s = format!(
            "{}{}: traces {} written {} lost {}",
            self.target,
            if self.running { "" } else { " (removed)" },
            self.submitted,
            self.written,
            self.lost
        );
        s += &self.report.failures_text();
        if let Some(e) = &self.report.last_error {
            s += &format!(" (last error: {e})");
        }
        s
    }
}

/// How long a stopping router waits for its exporters in all: a collector that is down must not hold the exit
/// (the router exits within 2 s of SIGTERM whatever its clients and collectors do).
pub const STOP_BUDGET: std::time::Duration = std::time::Duration::from_secs(1);

/// The running exporters, shared by the control thread and the workers.
#[derive(Default)]
pub struct ExportHub {
    /// Bumped at every change of the exporters (workers look at it once per round).
    generation: AtomicU64,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    dev_names: Vec<String>,
    transit: bool,
    running: Vec<Running>,
    /// Removed exporters: their final counters, once they ended.
    ended: Arc<Mutex<Vec<ExporterStats>>>,
    /// The threads ending removed exporters ([`ExportHub::finish`] waits for them).
    ending: Vec<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for ExportHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ExportHub")
    }
}

impl ExportHub {
    /// A hub naming devices by `dev_names` in JSON and spans; `transit`: also export every trace the workers
    /// fill in transit.
    pub fn new(dev_names: Vec<String>, transit: bool) -> ExportHub {
        ExportHub {
            generation: AtomicU64::new(0),
            inner: Mutex::new(Inner {
                dev_names,
                transit,
                ..Inner::default()
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts an exporter for `spec` (`json:FILE`, `grpc:HOST:PORT`, `otlp:http://HOST:PORT`); an error names
    /// what is wrong with it, or that it already runs.
    pub fn add(&self, spec: &str) -> Result<(), String> {
        let target: Target = spec.parse()?;
        let mut g = self.lock();
        if g.running.iter().any(|r| r.target == target) {
            return Err(format!("'{target}': already exporting there"));
        }
        let exporter = target.start(g.dev_names.clone(), DEPTH)?;
        g.running.push(Running { target, exporter });
        self.generation.fetch_add(1, Ordering::Release);
        Ok(())
    }

    /// Stops the exporter for `spec`: workers let it go at their next round; what it holds is still written
    /// (by a thread of its own: the caller does not wait), then its final counters stay in
    /// [`stats`](Self::stats).
    pub fn remove(&self, spec: &str) -> Result<(), String> {
        let target: Target = spec.parse()?;
        let mut g = self.lock();
        let Some(i) = g.running.iter().position(|r| r.target == target) else {
            return Err(format!("'{target}': no such export"));
        };
        let r = g.running.remove(i);
        self.generation.fetch_add(1, Ordering::Release);
        let ended = Arc::clone(&g.ended);
        let t = std::thread::Builder::new()
            .name("lwt6-export-end".into())
            .spawn(move || {
                let stats = ExporterStats::of(&r.target, &r.exporter, false);
                let rep = r.exporter.finish();
                let done = ExporterStats {
                    written: rep.written,
                    lost: rep.lost,
                    report: rep,
                    ..stats
                };
                if let Ok(mut e) = ended.lock() {
                    e.push(done);
                }
            });
        g.ending.retain(|t| !t.is_finished());
        if let Ok(t) = t {
            g.ending.push(t);
        }
        Ok(())
    }

    /// Every exporter's counters: the running ones, then those removed.
    pub fn stats(&self) -> Vec<ExporterStats> {
        let g = self.lock();
        let mut v: Vec<ExporterStats> = g
            .running
            .iter()
            .map(|r| ExporterStats::of(&r.target, &r.exporter, true))
            .collect();
        if let Ok(e) = g.ended.lock() {
            v.extend(e.iter().cloned());
        }
        v
    }

    /// Stops every exporter after the workers have stopped, waiting for them to write what they hold for at
    /// most [`STOP_BUDGET`] in all (what is still unwritten then counts as lost, failure `stopped`), and returns
    /// every exporter's final counters.
    pub fn finish(&self) -> Vec<ExporterStats> {
        let deadline = std::time::Instant::now() + STOP_BUDGET;
        let (running, ending) = {
            let mut g = self.lock();
            (
                std::mem::take(&mut g.running),
                std::mem::take(&mut g.ending),
            )
        };
        for t in ending {
            while !t.is_finished() && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            if t.is_finished() {
                let _ = t.join();
            }
        }
        self.generation.fetch_add(1, Ordering::Release);
        let mut v: Vec<ExporterStats> = running
            .into_iter()
            .map(|r| {
                let submitted = r.exporter.submitted();
                let rep = r.exporter.finish_by(deadline);
                ExporterStats {
                    target: r.target.to_string(),
                    running: false,
                    submitted,
                    written: rep.written,
                    lost: rep.lost,
                    report: rep,
                }
            })
            .collect();
        if let Ok(e) = self.lock().ended.lock() {
            v.extend(e.iter().cloned());
        }
        v
    }

    /// The exporters as JSON (an array).
    pub fn json(&self) -> serde_json::Value {
        json!(self.stats().iter().map(|s| s.json()).collect::<Vec<_>>())
    }

    /// The exporters as text, one a line (`  ioam export ...`), or nothing when there is none.
    pub fn text(&self) -> String {
        self.stats()
            .iter()
            .map(|s| format!("  ioam export {}\n", s.text()))
            .collect()
    }

    /// Answers the control requests of IOAM export: `ioam export add|del TARGET`, `show ioam export [-j]`.
    /// None when `toks` is not one of them.
    pub fn control(&self, toks: &[&str]) -> Option<(bool, String)> {
        match toks {
            ["ioam", "export", "add", spec] => Some(match self.add(spec) {
                Ok(()) => (true, String::new()),
                Err(e) => (false, format!("ioam export add: {e}")),
            }),
            ["ioam", "export", "del", spec] => Some(match self.remove(spec) {
                Ok(()) => (true, String::new()),
                Err(e) => (false, format!("ioam export del: {e}")),
            }),
            ["ioam", "export", ..] => Some((
                false,
                "ioam export: expected add TARGET or del TARGET (TARGET: json:FILE, grpc:HOST:PORT, grpcs:HOST:PORT[,ca=FILE], otlp:http[s]://HOST:PORT[/PATH][,ca=FILE])".into(),
            )),
            ["show", "ioam", "export"] => {
                let s = self.stats();
                if s.is_empty() {
                    Some((true, "no ioam export\n".into()))
                } else {
                    Some((true, s.iter().map(|s| format!("{}\n", s.text())).collect()))
                }
            }
            ["show", "ioam", "export", "-j" | "--json"] => Some((true, format!("{}\n", self.json()))),
            _ => None,
        }
    }
}

/// A worker's side of the hub: the submitters it hands records to, and the generation they are of.
#[derive(Debug, Default)]
pub struct WorkerExport {
    seen: u64,
    submitters: Vec<Submitter>,
}

impl WorkerExport {
    /// Once per round: takes up the hub's exporters when they changed (turning the worker's export queue on or
    /// off), then hands each the records the round queued. Never waits: a full channel loses the records,
    /// counted by that exporter.
    pub fn round(&mut self, hub: &ExportHub, worker: &mut Worker) {
        let generation = hub.generation.load(Ordering::Acquire);
        if generation != self.seen {
            let g = hub.lock();
            self.seen = hub.generation.load(Ordering::Acquire);
            self.submitters = g
                .running
                .iter()
                .filter_map(|r| r.exporter.submitter())
                .collect();
            let on = !self.submitters.is_empty();
            worker.ioam_export.capacity = if on { QUEUE } else { 0 };
            worker.ioam_export.transit = on && g.transit;
        }
        if worker.ioam_export.records.is_empty() {
            return;
        }
        let records = worker.ioam_export.take();
        if let Some((last, others)) = self.submitters.split_last() {
            for s in others {
                s.submit(records.clone());
            }
            last.submit(records);
        }
    }
}

/// Registers the exporters' counters (label `target`): `lwt6_ioam_export_traces_total` by `result` (`written`,
/// `lost`) and `lwt6_ioam_export_failures_total` by `kind`.
pub fn register(reg: &mut prometheus_client::registry::Registry, export: &[ExporterStats]) {
    use crate::metrics::{count, counters};
    if export.is_empty() {
        return;
    }
    let traces = counters(
        reg,
        "lwt6_ioam_export_traces",
        "IOAM traces handed to an exporter, by target and result (written, lost: its queue was full or the sink failed)",
    );
    let failures = counters(
        reg,
        "lwt6_ioam_export_failures",
        "Failed attempts of an IOAM exporter to write, by target and kind",
    );
    for s in export {
        for (result, n) in [("written", s.written), ("lost", s.lost)] {
            count(
                &traces,
                vec![
                    ("target", s.target.as_str().into()),
                    ("result", result.into()),
                ],
                n,
            );
        }
        for (kind, n) in &s.report.failures {
            count(
                &failures,
                vec![
                    ("target", s.target.as_str().into()),
                    ("kind", kind.as_str().into()),
                ],
                *n,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lwt6_dataplane::hop::ioam_domain::{ExportEvent, IoamRecord};
    use lwt6_dataplane::snapshot::Snapshot;
    use lwt6_dataplane::spec::Config;
    use std::time::{Duration, Instant};

    fn record(i: u64) -> IoamRecord {
        IoamRecord {
            ts_ns: i,
            event: ExportEvent::Egress,
            in_dev: 0,
            out_dev: Some(1),
            flow: None,
            option: vec![0x31, 4, 0, 2, 0, 7],
            node: Vec::new(),
        }
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("lwt6-export-{}-{name}", std::process::id()));
        let _ = std::fs::remove_file(&d);
        d
    }

    fn lines(p: &std::path::Path, want: usize) -> usize {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let n = std::fs::read_to_string(p).map_or(0, |t| t.lines().count());
            if n >= want || Instant::now() > deadline {
                return n;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn control_requests_add_show_and_remove_exporters() {
        let hub = ExportHub::new(vec!["r0".into(), "r1".into()], false);
        let f = scratch("ctl");
        let spec = format!("json:{}", f.display());
        let ask = |line: &str| {
            let toks: Vec<&str> = line.split_whitespace().collect();
            hub.control(&toks).expect("an export request")
        };
        assert_eq!(ask("show ioam export"), (true, "no ioam export\n".into()));
        assert_eq!(
            ask(&format!("ioam export add {spec}")),
            (true, String::new())
        );
        let (ok, e) = ask(&format!("ioam export add {spec}"));
        assert!(!ok && e.contains("already"), "{e}");
        let (ok, e) = ask("ioam export add ftp:x");
        assert!(!ok && e.contains("'ftp:x'"), "{e}");
        let (ok, e) = ask("ioam export del grpc:h:1");
        assert!(!ok && e.contains("no such export"), "{e}");
        let (ok, e) = ask("ioam export frob");
        assert!(!ok && e.contains("expected add"), "{e}");
        let (ok, shown) = ask("show ioam export");
        assert!(
            ok && shown.starts_with(&format!("{spec}: traces 0 written 0 lost 0")),
            "{shown}"
        );
        let (ok, j) = ask("show ioam export -j");
        let v: serde_json::Value = serde_json::from_str(&j).unwrap();
        assert!(ok);
        assert_eq!(v[0]["target"], spec.as_str());
        assert_eq!(v[0]["running"], true);
        assert_eq!(
            ask(&format!("ioam export del {spec}")),
            (true, String::new())
        );
        // The removed exporter's final counters stay (once its thread ended).
        let deadline = Instant::now() + Duration::from_secs(5);
        while hub.stats().is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(ask("show ioam export").1.contains("(removed)"));
        assert!(hub.control(&["show", "routes"]).is_none());
        assert!(hub.control(&["ioam", "namespace", "add", "1"]).is_none());
        let _ = std::fs::remove_file(f);
    }

    #[test]
    fn a_worker_hands_its_records_to_every_exporter_and_turns_its_queue_on_and_off() {
        let snap = Snapshot::build(&Config::default()).unwrap();
        let mut worker = Worker::new(&snap);
        let hub = ExportHub::new(vec!["r0".into(), "r1".into()], true);
        let mut we = WorkerExport::default();
        we.round(&hub, &mut worker);
        assert!(!worker.ioam_export.enabled(), "no exporter: no queue");
        let (a, b) = (scratch("a"), scratch("b"));
        hub.add(&format!("json:{}", a.display())).unwrap();
        hub.add(&format!("json:{}", b.display())).unwrap();
        we.round(&hub, &mut worker);
        assert_eq!(worker.ioam_export.capacity, QUEUE);
        assert!(worker.ioam_export.transit);
        for i in 0..3 {
            assert!(worker.ioam_export.push(record(i)));
        }
        we.round(&hub, &mut worker);
        assert!(worker.ioam_export.records.is_empty());
        assert_eq!((lines(&a, 3), lines(&b, 3)), (3, 3));
        hub.remove(&format!("json:{}", a.display())).unwrap();
        assert!(worker.ioam_export.push(record(3)));
        // The worker lets the removed exporter go at its next round; the other still gets the record.
        we.round(&hub, &mut worker);
        assert_eq!(lines(&b, 4), 4);
        // A stopped worker drops its side (the router joins the workers before finishing the hub).
        drop(we);
        let fin = hub.finish();
        let by = |p: &std::path::Path| {
            fin.iter()
                .find(|s| s.target == format!("json:{}", p.display()))
                .cloned()
                .unwrap()
        };
        assert_eq!((by(&a).submitted, by(&a).written, by(&a).lost), (3, 3, 0));
        assert_eq!((by(&b).submitted, by(&b).written, by(&b).lost), (4, 4, 0));
        let mut we = WorkerExport {
            seen: u64::MAX,
            ..WorkerExport::default()
        };
        we.round(&hub, &mut worker);
        assert!(
            !worker.ioam_export.enabled(),
            "every exporter gone: no queue"
        );
        assert_eq!(lines(&a, 3), 3, "nothing written after removal");
        for p in [a, b] {
            let _ = std::fs::remove_file(p);
        }
    }

    #[test]
    fn exporter_counters_as_metrics() {
        let s = ExporterStats {
            target: "grpc:h\"x:1".into(),
            running: true,
            submitted: 5,
            written: 2,
            lost: 3,
            report: ExportReport {
                written: 2,
                lost: 3,
                last_error: Some("refused".into()),
                failures: vec![("refused".into(), 4)],
            },
        };
        let t = crate::metrics::render_with(
            &[],
            &[],
            None,
            &crate::metrics::ReloadStatus::default(),
            &[s],
            None,
        );
        assert!(
            t.contains("lwt6_ioam_export_traces_total{target=\"grpc:h\\\"x:1\",result=\"lost\"} 3"),
            "{t}"
        );
        assert!(
            t.contains(
                "lwt6_ioam_export_failures_total{target=\"grpc:h\\\"x:1\",kind=\"refused\"} 4"
            ),
            "{t}"
        );
    }
}
