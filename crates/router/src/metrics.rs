//! `--metrics ADDR`: the counters in the OpenMetrics text format (1.0.0), encoded by the `prometheus-client`
//! crate and served over HTTP at `/metrics` only. Per worker (`lwt6_worker_*`, label `worker`) and for the whole
//! router (`lwt6_*`), drops by reason, frames per interface, IOAM domain and export counters, seg6local `count`
//! routes, the build and the result of the last configuration reload (docs/live.md lists the families).
//!
//! The server never lets one client hold it: each connection is handled by its own thread (at most
//! [`MAX_CONNECTIONS`] at once), which gives the client [`REQUEST_DEADLINE`] in all to send a request head of at
//! most [`MAX_REQUEST_HEAD`] bytes.

use crate::engine::WorkerReport;
use lwt6_dataplane::snapshot::{Snapshot, SnapshotHandle};
use lwt6_dataplane::spec::table_name;
use lwt6_dataplane::stats::DropReason;
use lwt6_dataplane::tunnel::Tunnel;
use prometheus_client::encoding::{EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long a client has, from the moment it is accepted, to send its whole request head.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(2);
/// How long one write of the response may block (a client that does not read).
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(2);
/// The largest request head read; a longer one is answered 431.
pub const MAX_REQUEST_HEAD: usize = 8192;
/// Connections handled at once; a further one waits for a free handler (at most [`REQUEST_DEADLINE`] plus a
/// write, as every handler ends by then).
pub const MAX_CONNECTIONS: usize = 8;
/// The media type of the exposition.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A label value, escaped as the exposition formats require (`\` as `\\`, `"` as `\"`, line feed as `\n`).
/// `prometheus-client` writes label values as they are (prometheus/client_rust issue 151), so every label value
/// lwt6 exposes goes through this type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LabelValue(pub String);

impl EncodeLabelValue for LabelValue {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        for c in self.0.chars() {
            match c {
                '\\' => encoder.write_str("\\\\")?,
                '"' => encoder.write_str("\\\"")?,
                '\n' => encoder.write_str("\\n")?,
                c => encoder.write_char(c)?,
            }
        }
        Ok(())
    }
}

impl<T: std::fmt::Display> From<T> for LabelValue {
    fn from(v: T) -> Self {
        LabelValue(v.to_string())
    }
}

/// The label set of every family: (name, value) pairs.
pub(crate) type Labels = Vec<(&'static str, LabelValue)>;

/// The results of `SIGHUP` reloads, shared by the control thread (which reloads) and the metrics server.
#[derive(Debug)]
pub struct ReloadStatus {
    ok: AtomicBool,
    at_ms: AtomicU64,
    succeeded: AtomicU64,
    failed: AtomicU64,
}

impl Default for ReloadStatus {
    /// The configuration loaded at start: a success, now.
    fn default() -> Self {
        ReloadStatus {
            ok: AtomicBool::new(true),
            at_ms: AtomicU64::new(now_ms()),
            succeeded: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        }
    }
}

impl ReloadStatus {
    /// Records the result of a reload.
    pub fn record(&self, ok: bool) {
        self.ok.store(ok, Ordering::Relaxed);
        self.at_ms.store(now_ms(), Ordering::Relaxed);
        let n = if ok { &self.succeeded } else { &self.failed };
        n.fetch_add(1, Ordering::Relaxed);
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// What the metrics are read from.
#[derive(Debug, Clone)]
pub struct Sources {
    /// Each worker's report, as it publishes it.
    pub reports: Vec<Arc<Mutex<WorkerReport>>>,
    /// The interfaces' names, by device id.
    pub links: Vec<String>,
    /// The running configuration (for the seg6local `count` routes' labels), if any.
    pub snapshot: Option<Arc<SnapshotHandle>>,
    /// The results of the reloads.
    pub reload: Arc<ReloadStatus>,
    /// The XDP tier, once the router runs with it (its families: [`crate::xdp_tier::metrics`]).
    pub xdp: crate::xdp_tier::Shared,
    /// The IOAM exporters (`--ioam-export`), if any.
    pub export: Option<Arc<crate::export::ExportHub>>,
    /// The control thread's counters (clients and neighbours refused), if any.
    pub control: Option<Arc<crate::clients::ControlCounters>>,
}

impl Sources {
    /// The exposition text, now.
    pub fn render(&self) -> String {
        let each: Vec<WorkerReport> = self
            .reports
            .iter()
            .map(|r| r.lock().map(|r| r.clone()).unwrap_or_default())
            .collect();
        let snap = self.snapshot.as_ref().map(|h| h.load());
        let export = self.export.as_ref().map(|h| h.stats()).unwrap_or_default();
        let text = render_with(
            &each,
            &self.links,
            snap.as_deref(),
            &self.reload,
            &export,
            self.control.as_deref(),
        );
        match self.xdp.get() {
            Some(t) => crate::xdp_tier::metrics(t, &each, text),
            None => text,
        }
    }
}

/// A counter family registered in `reg` under `name` (exposed as `name_total`).
pub(crate) fn counters(reg: &mut Registry, name: &str, help: &str) -> Family<Labels, Counter> {
    let f = Family::<Labels, Counter>::default();
    reg.register(name, help, f.clone());
    f
}

/// A counter without labels registered in `reg` under `name` (exposed as `name_total`), at `v`.
fn counter(reg: &mut Registry, name: &str, help: &str, v: u64) {
    let c = Counter::<u64>::default();
    c.inc_by(v);
    reg.register(name, help, c);
}

pub(crate) fn count(f: &Family<Labels, Counter>, labels: Labels, v: u64) {
    f.get_or_create(&labels).inc_by(v);
}

/// The exposition text (OpenMetrics, ending with `# EOF`) of the workers' reports, the interfaces `links`, the
/// seg6local `count` routes of `snap` and the reload results.
pub fn render(
    each: &[WorkerReport],
    links: &[String],
    snap: Option<&Snapshot>,
    reload: &ReloadStatus,
) -> String {
    render_with(each, links, snap, reload, &[], None)
}

/// [`render`], with the IOAM exporters' counters ([`crate::export::register`]) and the control thread's counters
/// when given: `lwt6_control_refused_total` by reason (`credentials`, `too_many`, `timed_out`, `too_large`,
/// `reply_untaken`), `lwt6_neigh_refused_total`, `lwt6_neigh_evicted_total`, `lwt6_neigh_events_dropped_total` and
/// `lwt6_monitor_events_dropped_total`.
pub fn render_with(
    each: &[WorkerReport],
    links: &[String],
    snap: Option<&Snapshot>,
    reload: &ReloadStatus,
    export: &[crate::export::ExporterStats],
    control: Option<&crate::clients::ControlCounters>,
) -> String {
    let mut total = WorkerReport::default();
    for r in each {
        total.merge(r);
    }
    let mut reg = Registry::default();
    reg.register(
        "lwt6_build",
        "The lwt6 that runs: version, the Rust compiler that built it and its build profile",
        Info::new(vec![
            ("version", LabelValue::from(env!("CARGO_PKG_VERSION"))),
            ("rustc", LabelValue::from(env!("LWT6_RUSTC_VERSION"))),
            ("profile", LabelValue::from(env!("LWT6_PROFILE"))),
        ]),
    );
    type Get = fn(&WorkerReport) -> u64;
    let families: [(&str, &str, Get); 7] = [
        ("rx_frames", "Frames received", |r| r.stats.rx),
        (
            "tx_frames",
            "Frames forwarded (not counting ICMP errors)",
            |r| r.stats.tx,
        ),
        ("dropped_frames", "Frames dropped, all reasons", |r| {
            r.stats.dropped()
        }),
        ("icmp_errors_sent", "ICMP errors generated", |r| {
            r.stats.icmp_tx
        }),
        (
            "fast_path_frames",
            "Frames forwarded by a precomputed plan",
            |r| r.stats.fast_path,
        ),
        (
            "tx_refused_frames",
            "Frames a full transmit queue refused",
            |r| r.tx_refused,
        ),
        (
            "overload_frames",
            "Frames the kernel dropped before lwt6 received them (socket ring or buffer full)",
            |r| r.overload_by_dev.iter().sum(),
        ),
    ];
    for (name, help, get) in families {
        counter(&mut reg, &format!("lwt6_{name}"), help, get(&total));
        let f = counters(
            &mut reg,
            &format!("lwt6_worker_{name}"),
            &format!("{help}, per worker"),
        );
        for (i, r) in each.iter().enumerate() {
            count(&f, vec![("worker", i.into())], get(r));
        }
    }
    let f = counters(&mut reg, "lwt6_drops", "Frames dropped, by reason");
    for &reason in DropReason::ALL {
        let n = total.stats.drops.get(&reason).copied().unwrap_or(0);
        count(&f, vec![("reason", reason.name().into())], n);
    }
    let f = counters(
        &mut reg,
        "lwt6_worker_drops",
        "Frames dropped, by reason, per worker",
    );
    for (i, r) in each.iter().enumerate() {
        for (reason, n) in &r.stats.drops {
            count(
                &f,
                vec![("worker", i.into()), ("reason", reason.name().into())],
                n,
            );
        }
    }
    type Dev = fn(&WorkerReport) -> &Vec<u64>;
    let per_dev: [(&str, &str, Dev); 3] = [
        ("rx", "Frames received, per interface", |r| &r.rx_by_dev),
        ("tx", "Frames sent, per interface", |r| &r.tx_by_dev),
        (
            "overload",
            "Frames dropped by the kernel before lwt6 received them (overload), per interface",
            |r| &r.overload_by_dev,
        ),
    ];
    for (dir, help, get) in per_dev {
        let f = counters(&mut reg, &format!("lwt6_link_{dir}_frames"), help);
        for (i, l) in links.iter().enumerate() {
            let n = get(&total).get(i).copied().unwrap_or(0);
            count(&f, vec![("link", l.into())], n);
        }
    }
    let f = counters(
        &mut reg,
        "lwt6_encapsulated_packets",
        "Packets that had a tunnel applied, by kind",
    );
    for (kind, n) in total.stats.encapsulated.iter() {
        count(&f, vec![("kind", kind.into())], n);
    }
    let io = &total.stats.ioam;
    let f = counters(
        &mut reg,
        "lwt6_ioam_packets",
        "What the IOAM domains did, by event (docs/ioam.md)",
    );
    for (event, n) in [
        ("transit_filled", total.stats.ioam_transit_filled),
        ("foreign_stripped", io.foreign_stripped),
        ("oversize_stripped", io.oversize_stripped),
        ("removed", io.removed),
        ("decapsulated", io.decapsulated),
        ("merged", io.merged),
        ("not_inserted", io.not_inserted),
    ] {
        count(&f, vec![("event", event.into())], n);
    }
    counter(
        &mut reg,
        "lwt6_ioam_exported_traces",
        "IOAM traces queued for export",
        io.exported,
    );
    counter(
        &mut reg,
        "lwt6_ioam_export_lost_traces",
        "IOAM traces not exported (a queue was full or the collector failed)",
        io.export_lost,
    );
    if let Some(snap) = snap {
        let names = [
            "lwt6_seg6local_packets",
            "lwt6_seg6local_bytes",
            "lwt6_seg6local_errors",
        ];
        let helps = [
            "Packets a seg6local count route's behaviour processed correctly",
            "Bytes of the packets a seg6local count route's behaviour processed correctly",
            "Packets a seg6local count route's behaviour dropped",
        ];
        let fs: Vec<_> = names
            .iter()
            .zip(helps)
            .map(|(n, h)| counters(&mut reg, n, h))
            .collect();
        for (table, r) in crate::show::counted_routes(snap) {
            let Some(t) = r.tunnel.get() else { continue };
            let Tunnel::Local(l) = &snap.tunnels[t] else {
                continue;
            };
            let c = total.stats.seg6local.get(t).copied().unwrap_or_default();
            let labels: Labels = vec![
                ("table", table_name(table).into()),
                ("prefix", r.prefix.into()),
                ("action", l.behaviour.name.into()),
            ];
            for (f, v) in fs.iter().zip([c.packets, c.bytes, c.errors]) {
                count(f, labels.clone(), v);
            }
        }
    }
    let ok = Gauge::<i64, AtomicI64>::default();
    ok.set(i64::from(reload.ok.load(Ordering::Relaxed)));
    reg.register(
        "lwt6_config_reload_success",
        "Whether the last configuration load (at start or on SIGHUP) succeeded",
        ok,
    );
    let at = Gauge::<f64, AtomicU64>::default();
    at.set(reload.at_ms.load(Ordering::Relaxed) as f64 / 1000.0);
    reg.register(
        "lwt6_config_last_reload_timestamp_seconds",
        "When the configuration was last loaded or a reload failed, in seconds since the Unix epoch",
        at,
    );
    let f = counters(
        &mut reg,
        "lwt6_config_reloads",
        "Configuration reloads (SIGHUP), by result",
    );
    count(
        &f,
        vec![("result", "success".into())],
        reload.succeeded.load(Ordering::Relaxed),
    );
    count(
        &f,
        vec![("result", "failure".into())],
        reload.failed.load(Ordering::Relaxed),
    );
    crate::export::register(&mut reg, export);
    if let Some(c) = control {
        let g = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        let f = counters(
            &mut reg,
            "lwt6_control_refused",
            "Control socket connections refused or requests given up, by reason",
        );
        for (reason, a) in [
            ("credentials", &c.refused_credentials),
            ("too_many", &c.refused_too_many),
            ("timed_out", &c.timed_out),
            ("too_large", &c.too_large),
            ("reply_untaken", &c.reply_untaken),
        ] {
            count(&f, vec![("reason", reason.into())], g(a));
        }
        counter(
            &mut reg,
            "lwt6_neigh_refused",
            "New learned neighbours refused because the table was full of entries it keeps",
            g(&c.neigh_refused),
        );
        counter(
            &mut reg,
            "lwt6_neigh_evicted",
            "Unconfirmed, unused learned neighbours forgotten to make room for an answer to the router's solicitation",
            g(&c.neigh_evicted),
        );
        counter(
            &mut reg,
            "lwt6_neigh_events_dropped",
            "Neighbour events dropped between the workers and the control thread (too many neighbours at once)",
            g(&c.neigh_events_dropped),
        );
        counter(
            &mut reg,
            "lwt6_monitor_events_dropped",
            "Events not given to a `ctl monitor` client because it did not read them in time",
            g(&c.monitor_dropped),
        );
        counter(
            &mut reg,
            "lwt6_kernel_routes_skipped",
            "Kernel routes the --kernel-routes mirror left out (each time one became skipped)",
            g(&c.kernel_routes_skipped),
        );
        counter(
            &mut reg,
            "lwt6_kernel_routes_dumps",
            "Full dumps of the kernel's main table by the --kernel-routes mirror",
            g(&c.kernel_routes_dumps),
        );
        counter(
            &mut reg,
            "lwt6_kernel_routes_overruns",
            "Netlink overruns of the --kernel-routes mirror (each followed by a dump)",
            g(&c.kernel_routes_overruns),
        );
        let lost = Gauge::<i64>::default();
        lost.set(i64::try_from(g(&c.capture_lost)).unwrap_or(i64::MAX));
        reg.register(
            "lwt6_capture_lost_frames",
            "Frames the last live capture lost (the workers' bounds; show capture's lost)",
            lost,
        );
    }
    let mut s = String::new();
    // Writing to a String fails only if an encoder reports an error, which ours never do.
    let _ = prometheus_client::encoding::text::encode(&mut s, &reg);
    s
}

/// Serves the metrics on `listener` until the process ends: `GET /metrics` (or `HEAD`) answers 200 with the
/// exposition, any other path 404, any other method 405. One thread per connection, at most
/// [`MAX_CONNECTIONS`] at once.
pub fn serve(listener: TcpListener, sources: Sources) {
    let sources = Arc::new(sources);
    let busy = Arc::new((Mutex::new(0usize), Condvar::new()));
    for conn in listener.incoming() {
        let Ok(c) = conn else { continue };
        {
            let (n, freed) = &*busy;
            let mut n = n.lock().unwrap_or_else(|e| e.into_inner());
            while *n >= MAX_CONNECTIONS {
                n = freed.wait(n).unwrap_or_else(|e| e.into_inner());
            }
            *n += 1;
        }
        let (s, b) = (sources.clone(), busy.clone());
        let spawned = std::thread::Builder::new()
            .name("lwt6-metrics-conn".into())
            .spawn(move || {
                handle(c, &s);
                let (n, freed) = &*b;
                *n.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
                freed.notify_one();
            });
        if spawned.is_err() {
            let (n, _) = &*busy;
            *n.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
        }
    }
}

/// Reads the request head (up to the blank line) within [`REQUEST_DEADLINE`]; `None` when the client did not send
/// one in time, closed, or sent more than [`MAX_REQUEST_HEAD`] bytes (`Some(Err(()))`).
fn read_head(c: &mut TcpStream) -> Option<Result<Vec<u8>, ()>> {
    let deadline = Instant::now() + REQUEST_DEADLINE;
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        let left = deadline.checked_duration_since(Instant::now())?;
        if left.is_zero() || c.set_read_timeout(Some(left)).is_err() {
            return None;
        }
        let n = c.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        head.extend_from_slice(&buf[..n]);
        let end = head
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map(|i| i + 4);
        let end = end.or_else(|| head.windows(2).position(|w| w == b"\n\n").map(|i| i + 2));
        match end {
            Some(e) if e <= MAX_REQUEST_HEAD => return Some(Ok(head)),
            _ if head.len() > MAX_REQUEST_HEAD => return Some(Err(())),
            _ => {}
        }
    }
}

/// Answers one connection.
fn handle(mut c: TcpStream, sources: &Sources) {
    let _ = c.set_write_timeout(Some(WRITE_TIMEOUT));
    let Some(head) = read_head(&mut c) else {
        return;
    };
    let mut send_body = true;
    let (status, body, allow) = match head {
        Err(()) => ("431 Request Header Fields Too Large", String::new(), false),
        Ok(head) => {
            let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
            let line = String::from_utf8_lossy(line);
            let mut words = line.split_whitespace();
            let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
            let path = target.split('?').next().unwrap_or("");
            match (method, path) {
                (_, p) if p != "/metrics" => {
                    ("404 Not Found", "not found: only /metrics\n".into(), false)
                }
                ("GET", _) => ("200 OK", sources.render(), false),
                ("HEAD", _) => {
                    send_body = false;
                    ("200 OK", sources.render(), false)
                }
                _ => ("405 Method Not Allowed", "only GET and HEAD\n".into(), true),
            }
        }
    };
    let mut out = String::new();
    let ctype = if status.starts_with("200") {
        CONTENT_TYPE
    } else {
        "text/plain; charset=utf-8"
    };
    let _ = write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if allow {
        out.push_str("Allow: GET, HEAD\r\n");
    }
    out.push_str("\r\n");
    let _ = c.write_all(out.as_bytes());
    if send_body {
        let _ = c.write_all(body.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(each: &[WorkerReport], links: &[&str]) -> String {
        let links: Vec<String> = links.iter().map(|l| l.to_string()).collect();
        render(each, &links, None, &ReloadStatus::default())
    }

    #[test]
    fn totals_are_the_sum_of_the_workers() {
        let mut a = WorkerReport::default();
        a.stats.rx = 3;
        a.stats.tx = 2;
        a.stats.count_drop(DropReason::NoRoute);
        a.overload_by_dev = vec![7];
        let mut b = a.clone();
        b.stats.rx = 5;
        b.stats.tx = 4;
        b.overload_by_dev = vec![10];
        let text = text(&[a, b], &["r0"]);
        assert!(text.contains("\nlwt6_overload_frames_total 17\n"), "{text}");
        assert!(text.contains("lwt6_worker_overload_frames_total{worker=\"0\"} 7\n"));
        assert!(text.contains("lwt6_link_overload_frames_total{link=\"r0\"} 17\n"));
        assert!(text.contains("\nlwt6_rx_frames_total 8\n"), "{text}");
        assert!(text.contains("lwt6_worker_rx_frames_total{worker=\"1\"} 5\n"));
        assert!(text.contains("lwt6_drops_total{reason=\"no_route\"} 2\n"));
        assert!(text.contains("lwt6_worker_drops_total{worker=\"0\",reason=\"no_route\"} 1\n"));
        assert!(text.contains("lwt6_link_rx_frames_total{link=\"r0\"} 0\n"));
    }

    /// OpenMetrics 1.0 ("Escaping"; the Prometheus text format says the same): in a label value a backslash is
    /// written `\\`, a double quote `\"` and a line feed `\n`; a counter family `x` has the TYPE line `x counter`
    /// and its sample is `x_total`; the exposition ends with `# EOF`.
    #[test]
    fn label_values_are_escaped_and_families_typed() {
        let r = WorkerReport {
            rx_by_dev: vec![4],
            ..Default::default()
        };
        let t = text(&[r], &["a\"b\\c\nd"]);
        assert!(
            t.contains("# TYPE lwt6_link_rx_frames counter\nlwt6_link_rx_frames_total{link=\"a\\\"b\\\\c\\nd\"} 4\n"),
            "{t}"
        );
        assert!(t.ends_with("\n# EOF\n"), "{t}");
        // Every sample line is one name, an optional label set, one value: no raw quote or line feed broke it.
        for line in t.lines().filter(|l| !l.starts_with('#')) {
            let (_, value) = line.rsplit_once(' ').expect(line);
            assert!(value.parse::<f64>().is_ok(), "{line}");
        }
    }

    #[test]
    fn build_info_and_reloads() {
        let reload = ReloadStatus::default();
        reload.record(true);
        reload.record(false);
        let t = render(&[], &[], None, &reload);
        let version = env!("CARGO_PKG_VERSION");
        assert!(t.contains("# TYPE lwt6_build info\n"), "{t}");
        assert!(
            t.contains(&format!(
                "lwt6_build_info{{version=\"{version}\",rustc=\"rustc "
            )),
            "{t}"
        );
        assert!(
            t.contains("# TYPE lwt6_config_reload_success gauge\nlwt6_config_reload_success 0\n"),
            "{t}"
        );
        assert!(
            t.contains("lwt6_config_reloads_total{result=\"success\"} 1\n"),
            "{t}"
        );
        assert!(
            t.contains("lwt6_config_reloads_total{result=\"failure\"} 1\n"),
            "{t}"
        );
    }

    #[test]
    fn monitor_capture_and_kernel_mirror_counters() {
        let c = crate::clients::ControlCounters::default();
        c.monitor_dropped.store(5, Ordering::Relaxed);
        c.capture_lost.store(7, Ordering::Relaxed);
        c.kernel_routes_skipped.store(2, Ordering::Relaxed);
        c.kernel_routes_dumps.store(3, Ordering::Relaxed);
        c.kernel_routes_overruns.store(1, Ordering::Relaxed);
        let t = render_with(&[], &[], None, &ReloadStatus::default(), &[], Some(&c));
        for want in [
            "\nlwt6_monitor_events_dropped_total 5\n",
            "# TYPE lwt6_capture_lost_frames gauge\nlwt6_capture_lost_frames 7\n",
            "\nlwt6_kernel_routes_skipped_total 2\n",
            "\nlwt6_kernel_routes_dumps_total 3\n",
            "\nlwt6_kernel_routes_overruns_total 1\n",
        ] {
            assert!(t.contains(want), "{want} not in {t}");
        }
    }

    #[test]
    fn seg6local_count_routes_are_labelled_by_route() {
        let cfg = lwt6_config::parse(
            "link add r0 address 02:00:00:00:01:02\n\
             -6 route add fc00:1::e/128 encap seg6local action End count dev r0\n\
             -6 route add fc00:1::f/128 encap seg6local action End dev r0\n",
        )
        .unwrap();
        let snap = Snapshot::build(&cfg).unwrap();
        let (_, route) = crate::show::counted_routes(&snap).next().unwrap();
        let mut r = WorkerReport::default();
        r.stats.seg6local = vec![Default::default(); snap.tunnels.len()];
        let c = &mut r.stats.seg6local[route.tunnel.get().unwrap()];
        (c.packets, c.bytes, c.errors) = (3, 300, 1);
        let t = render(&[r], &["r0".into()], Some(&snap), &ReloadStatus::default());
        let labels = "{table=\"main\",prefix=\"fc00:1::e/128\",action=\"End\"}";
        assert!(
            t.contains(&format!("lwt6_seg6local_packets_total{labels} 3\n")),
            "{t}"
        );
        assert!(
            t.contains(&format!("lwt6_seg6local_bytes_total{labels} 300\n")),
            "{t}"
        );
        assert!(
            t.contains(&format!("lwt6_seg6local_errors_total{labels} 1\n")),
            "{t}"
        );
        assert!(!t.contains("fc00:1::f"), "{t}");
    }

    fn server() -> std::net::SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let s = Sources {
            reports: vec![Arc::new(Mutex::new(WorkerReport::default()))],
            links: vec!["r0".into()],
            snapshot: None,
            reload: Arc::new(ReloadStatus::default()),
            xdp: Default::default(),
            export: None,
            control: None,
        };
        std::thread::spawn(move || serve(l, s));
        addr
    }

    fn ask(addr: std::net::SocketAddr, req: &str) -> String {
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        c.write_all(req.as_bytes()).unwrap();
        let mut out = String::new();
        c.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn only_get_or_head_of_metrics_answers() {
        let addr = server();
        let ok = ask(addr, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(
            ok.contains(&format!("Content-Type: {CONTENT_TYPE}\r\n")),
            "{ok}"
        );
        assert!(ok.ends_with("# EOF\n"), "{ok}");
        let head = ask(addr, "HEAD /metrics HTTP/1.1\r\n\r\n");
        assert!(
            head.starts_with("HTTP/1.1 200 OK\r\n") && head.ends_with("\r\n\r\n"),
            "{head}"
        );
        for path in ["/", "/metricsx", "/favicon.ico", "/metrics/"] {
            let r = ask(addr, &format!("GET {path} HTTP/1.1\r\n\r\n"));
            assert!(r.starts_with("HTTP/1.1 404 "), "{path}: {r}");
        }
        let r = ask(addr, "POST /metrics HTTP/1.1\r\n\r\n");
        assert!(
            r.starts_with("HTTP/1.1 405 ") && r.contains("Allow: GET, HEAD\r\n"),
            "{r}"
        );
        let big = format!(
            "GET /metrics HTTP/1.1\r\nX: {}\r\n\r\n",
            "y".repeat(MAX_REQUEST_HEAD)
        );
        let r = ask(addr, &big);
        assert!(r.starts_with("HTTP/1.1 431 "), "{r}");
    }

    /// A client that connects and sends nothing, and one that sends a byte at a time, do not delay another
    /// client's scrape; the silent one is closed after [`REQUEST_DEADLINE`].
    #[test]
    fn a_slow_client_does_not_hold_the_endpoint() {
        let addr = server();
        let mut silent = TcpStream::connect(addr).unwrap();
        let mut dribble = TcpStream::connect(addr).unwrap();
        dribble.write_all(b"G").unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let t = Instant::now();
        let ok = ask(addr, "GET /metrics HTTP/1.0\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200 OK"), "{ok}");
        assert!(
            t.elapsed() < Duration::from_millis(500),
            "{:?}",
            t.elapsed()
        );
        dribble.write_all(b"E").unwrap();
        // The silent client is closed by the deadline (EOF, not a read timeout of ours).
        silent.set_read_timeout(Some(REQUEST_DEADLINE * 3)).unwrap();
        let t = Instant::now();
        let mut buf = [0u8; 16];
        assert_eq!(silent.read(&mut buf).unwrap(), 0);
        assert!(
            t.elapsed() <= REQUEST_DEADLINE + Duration::from_millis(500),
            "{:?}",
            t.elapsed()
        );
    }
}
