//! The `lwt6` command line: argument definitions and the subcommands.

use crate::config::{self, Config};
use crate::decode;
use crate::fib::{Origin, RouteEntry};
use crate::io::linktype;
use crate::io::pcap::{self, OutFrame};
use crate::node::seg6local::{LocalCounters, table_name};
use crate::router::Router;
use crate::snapshot::Snapshot;
use crate::spec::MAIN_TABLE;
use crate::tunnel::Tunnel;
use clap::{Args, Parser, Subcommand};
use serde_json::json;
use std::io::{BufRead, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

/// Prints a line to stdout; a closed pipe (`lwt6 ... | head`) ends the program quietly instead of panicking.
macro_rules! out {
    ($($t:tt)*) => {
        if writeln!(std::io::stdout().lock(), $($t)*).is_err() {
            std::process::exit(0)
        }
    };
}

/// IPv6 lightweight tunnels (SRv6, IOAM, RPL) in userspace, byte for byte as Linux builds them.
#[derive(Debug, Parser)]
#[command(name = "lwt6", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Process a capture offline: every frame of IN as if received on --in-dev of the configured router.
    Pcap(PcapArgs),
    /// Show router state (routes) as `ip` would.
    Show(ShowArgs),
    /// Decode a capture: Ethernet, IPv6, SRH, RPL, IOAM traces, IPv4, UDP, ICMPv6.
    Decode(DecodeArgs),
    /// Check a configuration file and exit (0 when valid).
    Check(CheckArgs),
    /// Predict buffer reallocations per packet (Linux before/after the 2024 fix, and lwt6) for a tunnel and size.
    Headroom(headroom::HeadroomArgs),
    /// Measure the running kernel's skb reallocations per packet for seg6 routes (root; network namespaces).
    Audit(audit::AuditArgs),
    /// Benchmarks: forwarding-rate sweeps of the real pipeline with three buffer strategies.
    Bench(bench::BenchArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) generated from this command line.
    Completions(install::CompletionsArgs),
    /// Print the manual page (roff), or write every page (each subcommand's, and lwt6.conf(5)) under a directory.
    Man(install::ManArgs),
    /// Run the live router on the interfaces the configuration names (root; docs/live.md).
    Run(crate::live::RunArgs),
    /// Send one request to a running router's control socket: a configuration line, `show routes|stats|neigh|trace`,
    /// or `trace add N [FILTER]|stop|clear` (packet tracing).
    Ctl(crate::live::CtlArgs),
    /// Send a template frame over AF_PACKET at a given rate (live benchmarks; root).
    Gen(crate::live::generator::GenArgs),
}

/// `lwt6 pcap`.
#[derive(Debug, Args)]
pub struct PcapArgs {
    /// Router configuration (iproute2 syntax; see docs/config.md).
    #[arg(short = 'c', long = "config")]
    pub config: PathBuf,
    /// Interface the input frames are received on.
    #[arg(long = "in-dev")]
    pub in_dev: String,
    /// Input capture (pcap or pcapng, Ethernet).
    pub input: PathBuf,
    /// Output pcapng: one interface block per egress device.
    #[arg(required_unless_present = "out_dir")]
    pub output: Option<PathBuf>,
    /// Also (or instead) write one pcap per egress device into DIR, named DEV.pcap.
    #[arg(long = "out-dir")]
    pub out_dir: Option<PathBuf>,
    /// Print counters at the end: packets in/out, drops by reason, buffer reallocations.
    #[arg(long)]
    pub stats: bool,
    /// Machine-readable JSON instead of text.
    #[arg(short = 'j', long = "json")]
    pub json: bool,
    /// Receive headroom in bytes (default: computed from the largest route overhead so nothing is reallocated).
    #[arg(long = "rx-headroom", value_parser = crate::cli::within::<usize>(0, 8192))]
    pub rx_headroom: Option<usize>,
    /// Print one line per output frame (decoded summary).
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// Export the IOAM traces the router removes at its domains' boundaries (docs/ioam.md): `json:FILE`,
    /// `json:-` (stdout) or `grpc:HOST:PORT` (an IOAM collector, `ioam_api.IOAMService/Report`).
    #[arg(long = "ioam-export", value_name = "TARGET")]
    pub ioam_export: Option<ioam_export::Target>,
    /// Also export every IOAM trace this router fills in transit.
    #[arg(long = "ioam-export-transit", requires = "ioam_export")]
    pub ioam_export_transit: bool,
    /// Resolve next hops without a static neighbour as the live router does, with nobody answering: the
    /// solicitations (ARP requests) are written out and, after the last frame, time runs on until every waiting
    /// packet is dropped as unresolved, with its ICMP error.
    #[arg(long)]
    pub resolve: bool,
    /// Trace the first N frames (that match --trace-filter): every stage each passed and what it decided, printed
    /// after the run (with -j: as JSON, docs/live.md *Packet tracing*). Traced frames are processed exactly as
    /// the others.
    #[arg(long, value_name = "N", value_parser = crate::cli::within::<u64>(1, crate::trace::MAX_FRAMES))]
    pub trace: Option<u64>,
    /// Which frames --trace records: `[dev IF] [src PREFIX] [dst PREFIX] [proto NAME|N]` (all must match).
    #[arg(long = "trace-filter", value_name = "FILTER", requires = "trace")]
    pub trace_filter: Option<String>,
}

/// `lwt6 show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// What to show.
    #[command(subcommand)]
    pub what: ShowWhat,
}

/// Things `lwt6 show` can show.
#[derive(Debug, Subcommand)]
pub enum ShowWhat {
    /// The routing table, like `ip -6 route` and `ip -4 route`, with each route's effective MTU.
    Routes {
        /// Router configuration.
        #[arg(short = 'c', long = "config")]
        config: PathBuf,
        /// JSON output.
        #[arg(short = 'j', long = "json")]
        json: bool,
        /// Counters of seg6local routes with `count` (as `ip -s`; zero before any traffic).
        #[arg(short = 's', long = "stats")]
        stats: bool,
    },
}

/// `lwt6 decode`.
#[derive(Debug, Args)]
pub struct DecodeArgs {
    /// Capture to decode.
    pub input: PathBuf,
    /// JSON output (an array, one object per frame: `frame`, `time`, `interface`, `len`, `layers`).
    #[arg(short = 'j', long = "json")]
    pub json: bool,
    /// Stop after N frames.
    #[arg(short = 'c', long = "count", value_name = "N", value_parser = crate::cli::within::<u64>(1, u64::MAX))]
    pub count: Option<u64>,
}

/// `lwt6 check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Router configuration.
    #[arg(short = 'c', long = "config")]
    pub config: PathBuf,
}

pub mod audit;
pub mod bench;
pub mod headroom;
pub mod install;
pub mod ioam_export;
pub mod route_json;
pub mod trace;

/// A command failure: message for stderr and exit status.
#[derive(Debug)]
pub struct Failure {
    /// Message.
    pub message: String,
    /// Exit status.
    pub code: u8,
}

/// A command-line parser for a whole number in `lo..=hi` (clap names the range when a value is outside it).
pub fn within<T>(lo: u64, hi: u64) -> clap::builder::RangedU64ValueParser<T>
where
    T: TryFrom<u64> + Clone + Send + Sync + 'static,
    <T as TryFrom<u64>>::Error: std::error::Error + Send + Sync + 'static,
{
    clap::builder::RangedU64ValueParser::<T>::new().range(lo..=hi)
}

/// A failure with exit status 1.
pub fn fail(message: impl Into<String>) -> Failure {
    Failure {
        message: message.into(),
        code: 1,
    }
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<(), Failure> {
    match cli.command {
        Command::Pcap(a) => cmd_pcap(a),
        Command::Show(ShowArgs {
            what:
                ShowWhat::Routes {
                    config,
                    json,
                    stats,
                },
        }) => cmd_show_routes(&config, json, stats),
        Command::Decode(a) => cmd_decode(&a),
        Command::Headroom(a) => headroom::run(a),
        Command::Audit(a) => audit::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Completions(a) => install::completions(&a),
        Command::Man(a) => install::man(&a),
        Command::Run(a) => crate::live::run(a),
        Command::Ctl(a) => crate::live::ctl(a),
        Command::Gen(a) => crate::live::generator::run(a),
        Command::Check(a) => {
            let cfg = load_config(&a.config)?;
            let (links, routes) = (cfg.links.len(), cfg.routes.len());
            let tunnels = cfg.routes.iter().filter(|r| r.encap.is_some()).count();
            Router::build_from(cfg).map_err(|e| fail(format!("{}: {e}", a.config.display())))?;
            out!(
                "{}: ok ({links} links, {routes} routes, {tunnels} tunnels)",
                a.config.display()
            );
            Ok(())
        }
    }
}

/// Reads and parses a configuration file. An `sr hmac set` line without `secret` reads the secret from stdin
/// when stdin is not a terminal.
pub fn load_config(path: &Path) -> Result<Config, Failure> {
    let at = |e: std::io::Error| fail(format!("{}: {e}", path.display()));
    // The file is read line by line, twice (is a stdin secret needed? then the lines themselves), never whole:
    // a table of a million routes is not held as text beside the configuration it becomes.
    let for_each_line =
        |f: &mut dyn FnMut(usize, &str) -> Result<(), Failure>| -> Result<(), Failure> {
            let file = std::fs::File::open(path).map_err(at)?;
            for (i, raw) in std::io::BufReader::new(file).split(b'\n').enumerate() {
                let raw = raw.map_err(at)?;
                let line = std::str::from_utf8(&raw).map_err(|e| {
                    fail(format!(
                        "{}: line {}: not UTF-8 (invalid byte at column {})",
                        path.display(),
                        i + 1,
                        e.valid_up_to() + 1
                    ))
                })?;
                f(i + 1, line)?;
            }
            Ok(())
        };
    let mut needs_stdin = false;
    for_each_line(&mut |_, l| {
        let l = l.split('#').next().unwrap_or("");
        needs_stdin |= l.contains("hmac set") && !l.split_whitespace().any(|t| t == "secret");
        Ok(())
    })?;
    let mut secret = None;
    if needs_stdin && !std::io::stdin().is_terminal() {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| fail(format!("reading the HMAC secret from stdin: {e}")))?;
        secret = Some(s.lines().next().unwrap_or("").to_string());
    }
    let mut b = config::Builder::new();
    if let Some(s) = &secret {
        b = b.with_stdin_secret(s);
    }
    let located = |e: config::ConfigError| fail(format!("{}: {e}", path.display()));
    for_each_line(&mut |n, l| b.line(n, l).map_err(located))?;
    b.finish().map_err(located)
}

fn build_router(path: &Path) -> Result<Router, Failure> {
    let cfg = load_config(path)?;
    Router::build_from(cfg).map_err(|e| fail(format!("{}: {e}", path.display())))
}

/// Where `lwt6 pcap` writes the frames the router sends, as they come: the pcapng, one pcap per device, `-v` lines.
struct PcapSink<'a> {
    ng: Option<pcap::PcapngWriter<pcap::AtomicFile>>,
    per_dev: Vec<Option<pcap::PcapWriter<pcap::AtomicFile>>>,
    sent_by_dev: Vec<u64>,
    sent_total: usize,
    /// The first write error; later frames are counted but not written.
    err: Option<Failure>,
    a: &'a PcapArgs,
    names: &'a [&'a str],
}

impl PcapSink<'_> {
    fn send(&mut self, dev: usize, ts: u64, bytes: &[u8]) {
        self.sent_by_dev[dev] += 1;
        self.sent_total += 1;
        if self.err.is_some() {
            return;
        }
        let a = self.a;
        if let Some(w) = self.ng.as_mut()
            && let Err(e) = w.write(&OutFrame {
                iface: dev,
                ts_ns: ts,
                data: bytes,
            })
        {
            let out = a.output.as_deref().unwrap_or(Path::new(""));
            self.err = Some(fail(format!("{}: writing: {e}", out.display())));
            return;
        }
        if let Some(dir) = &a.out_dir {
            let path = dir.join(format!("{}.pcap", self.names[dev]));
            if self.per_dev[dev].is_none() {
                match pcap::AtomicFile::create(&path).and_then(|f| {
                    pcap::PcapWriter::new(f).map_err(|e| pcap::PcapError::Io(e.to_string()))
                }) {
                    Ok(w) => self.per_dev[dev] = Some(w),
                    Err(e) => {
                        self.err = Some(fail(format!("{}: {e}", path.display())));
                        return;
                    }
                }
            }
            if let Some(w) = self.per_dev[dev].as_mut()
                && let Err(e) = w.write(ts, bytes)
            {
                self.err = Some(fail(format!("{}: writing: {e}", path.display())));
                return;
            }
        }
        if a.verbose && !a.json {
            out!(
                "out {:>4} {:<6} {:>5}B  {}",
                self.sent_total,
                self.names[dev],
                bytes.len(),
                decode::summary(&decode::frame(bytes))
            );
        }
    }
}

fn cmd_pcap(a: PcapArgs) -> Result<(), Failure> {
    let mut router = build_router(&a.config)?;
    let snap = router.snapshot();
    let in_dev = snap.dev_id(&a.in_dev).ok_or_else(|| {
        let names: Vec<&str> = snap.links.iter().map(|l| l.name.as_str()).collect();
        fail(format!(
            "--in-dev {}: no such interface in {} (have: {})",
            a.in_dev,
            a.config.display(),
            names.join(", ")
        ))
    })?;
    if let Some(h) = a.rx_headroom {
        router.worker.rx_headroom = h;
    }
    // Streaming: frames are read, processed and written a batch at a time, so memory stays flat in the
    // capture's length. Output files are temporary until the whole capture has been read without error.
    let mut reader = pcap::CaptureReader::open(&a.input)
        .map_err(|e| fail(format!("{}: {e}", a.input.display())))?;
    let exporter = a
        .ioam_export
        .as_ref()
        .map(|t| {
            router.worker.ioam_export.capacity = ioam_export::QUEUE;
            router.worker.ioam_export.transit = a.ioam_export_transit;
            t.start(snap.links.iter().map(|l| l.name.clone()).collect())
        })
        .transpose()?;
    router.set_resolve(a.resolve);
    let trace_summary = match a.trace {
        Some(n) => {
            let text = a.trace_filter.as_deref().unwrap_or("");
            let filter = config::trace_filter(text, |d| snap.dev_id(d)).map_err(|e| {
                fail(format!(
                    "--trace-filter: '{}': {}",
                    crate::spec::shown_token(&e.token),
                    e.reason
                ))
            })?;
            let budget = std::sync::Arc::new(crate::trace::Budget::new(n));
            let summary = trace::Summary {
                status: "done",
                requested: n,
                filter: filter.text.clone(),
            };
            router
                .worker
                .set_tracer(Some(crate::trace::Tracer::new(filter, budget, 0)));
            Some(summary)
        }
        None => None,
    };
    let names: Vec<&str> = snap.links.iter().map(|l| l.name.as_str()).collect();
    let ng = match &a.output {
        Some(out) => {
            let f = pcap::AtomicFile::create(out)
                .map_err(|e| fail(format!("{}: {e}", out.display())))?;
            Some(
                pcap::PcapngWriter::new(f, &names)
                    .map_err(|e| fail(format!("{}: {e}", out.display())))?,
            )
        }
        None => None,
    };
    if let Some(dir) = &a.out_dir {
        std::fs::create_dir_all(dir).map_err(|e| fail(format!("{}: {e}", dir.display())))?;
    }
    let mut sink = PcapSink {
        ng,
        per_dev: names.iter().map(|_| None).collect(),
        sent_by_dev: vec![0u64; names.len()],
        sent_total: 0,
        err: None,
        a: &a,
        names: &names,
    };
    let mut batch: Vec<pcap::CapturedFrame> = Vec::with_capacity(STREAM_BATCH);
    let mut frame_no = 0usize;
    let mut last_ts = 0;
    loop {
        batch.clear();
        for f in reader.by_ref().take(STREAM_BATCH) {
            let f = f.map_err(|e| fail(format!("{}: {e}", a.input.display())))?;
            frame_no += 1;
            batch.push(as_ethernet(f, snap.links[in_dev].mac, &a.input, frame_no)?);
        }
        let Some(last) = batch.last() else {
            break;
        };
        last_ts = last.ts_ns;
        router.process_batch(
            batch.iter().map(|f| (in_dev, f.ts_ns, f.data.as_slice())),
            &mut |dev, ts, bytes| sink.send(dev, ts, bytes),
        );
        if let Some(e) = sink.err.take() {
            return Err(e);
        }
        // The worker's bounded export queue is handed over between batches (offline, the hand-over may wait for
        // the exporter: nothing is lost for want of time).
        if let Some(e) = &exporter {
            e.submit_wait(router.worker.ioam_export.take());
        }
    }
    if a.resolve {
        // One retransmission interval at a time until the last solicitation has timed out.
        let mut now = last_ts;
        for _ in 0..=crate::node::neigh::MAX_MULTICAST_SOLICIT {
            now += crate::node::neigh::RETRANS_TIMER_NS;
            router.drive(now, &mut |dev, ts, bytes| sink.send(dev, ts, bytes));
        }
        if let Some(e) = sink.err.take() {
            return Err(e);
        }
    }
    if let Some(r) = exporter.map(|e| e.finish()) {
        // What the exporter lost had been counted as exported by the worker.
        let io = &mut router.worker.stats.ioam;
        io.exported -= r.lost.min(io.exported);
        io.export_lost += r.lost;
        if let Some(err) = &r.last_error {
            eprintln!("lwt6: ioam export: {err} ({} traces lost)", r.lost);
        }
    }
    // The whole capture was read: make the output files visible.
    let sent_by_dev = std::mem::take(&mut sink.sent_by_dev);
    if let (Some(w), Some(out)) = (sink.ng.take(), &a.output) {
        w.into_inner()
            .commit()
            .map_err(|e| fail(format!("{}: {e}", out.display())))?;
    }
    for w in std::mem::take(&mut sink.per_dev).into_iter().flatten() {
        w.into_inner().commit().map_err(|e| fail(e.to_string()))?;
    }
    let traced = router.worker.take_traces();
    let trace_doc = trace_summary.map(|mut s| {
        if (traced.len() as u64) < s.requested {
            s.status = "incomplete";
        }
        (s, traced)
    });
    if let Some((s, frames)) = &trace_doc {
        if !a.json {
            out!("{}", trace::text(s, frames));
        } else if !a.stats {
            out!("{}", trace::json(s, frames));
        }
    }
    let st = &router.worker.stats;
    if a.stats {
        if a.json {
            let mut v = st.to_json();
            if let Some((s, frames)) = &trace_doc {
                v["trace"] = trace::json(s, frames);
            }
            let mut per_dev = serde_json::Map::new();
            for (i, n) in names.iter().enumerate() {
                per_dev.insert(n.to_string(), json!(sent_by_dev[i]));
            }
            v["frames_out_by_dev"] = json!(per_dev);
            let counted: Vec<_> = counted_routes(&snap)
                .map(|(t, r)| {
                    let text = route_json::route(&snap, t, r, Some(&st.seg6local));
                    serde_json::from_str::<serde_json::Value>(&text).unwrap_or_default()
                })
                .collect();
            v["seg6local_routes"] = json!(counted);
            v["rx_headroom"] = json!(router.worker.rx_headroom);
            out!("{v}");
        } else {
            out!(
                "frames in {}, forwarded {}, dropped {}, icmp errors sent {}, buffer reallocations {} (rx headroom {} B)",
                st.rx,
                st.tx,
                st.dropped(),
                st.icmp_tx,
                st.reallocs,
                router.worker.rx_headroom
            );
            if st.consumed + st.pending + st.solicit_tx > 0 {
                out!(
                    "  consumed {}, pending {}, solicitations sent {}",
                    st.consumed,
                    st.pending,
                    st.solicit_tx
                );
            }
            for (k, v) in &st.encapsulated {
                out!("  encapsulated {k}: {v}");
            }
            if st.ioam_transit_filled > 0 {
                out!(
                    "  ioam traces filled in transit: {}",
                    st.ioam_transit_filled
                );
            }
            let io = &st.ioam;
            if *io != Default::default() {
                out!(
                    "  ioam domains: foreign stripped {}, oversize stripped {}, removed {}, decapsulated {}, exported {}, export lost {}, merged {}, not inserted {}",
                    io.foreign_stripped,
                    io.oversize_stripped,
                    io.removed,
                    io.decapsulated,
                    io.exported,
                    io.export_lost,
                    io.merged,
                    io.not_inserted
                );
            }
            for (r, n) in &st.drops {
                out!("  drop {:<28} {n}", r.name());
            }
            for (i, n) in names.iter().enumerate() {
                let c = sent_by_dev[i];
                if c > 0 {
                    out!("  out {n:<8} {c}");
                }
            }
            for (t, r) in counted_routes(&snap) {
                out!("  route {}", route_line(&snap, t, r, Some(&st.seg6local)));
            }
        }
    }
    if !st.balanced() {
        return Err(fail(format!(
            "internal error: counters do not balance (rx {} != tx {} + dropped {} + consumed {} + pending {})",
            st.rx,
            st.tx,
            st.dropped(),
            st.consumed,
            st.pending
        )));
    }
    Ok(())
}

fn cmd_show_routes(config: &Path, as_json: bool, stats: bool) -> Result<(), Failure> {
    let router = Snapshot::build_from(load_config(config)?)
        .map_err(|e| fail(format!("{}: {e}", config.display())))?;
    // Before any traffic every counter is zero.
    let zeros = vec![LocalCounters::default(); router.tunnels.len()];
    let text = routes_text(&router, as_json, stats.then_some(zeros.as_slice()));
    if std::io::stdout().lock().write_all(text.as_bytes()).is_err() {
        std::process::exit(0)
    }
    Ok(())
}

/// The routing table as `lwt6 show routes` prints it (`ip route show table all` lines, or a JSON array as `ip -j`
/// prints it), newline-terminated; with `ip -s` counters for seg6local `count` routes when `counters` are given.
pub fn routes_text(router: &Snapshot, as_json: bool, counters: Option<&[LocalCounters]>) -> String {
    if as_json {
        let v: Vec<_> = all_routes(router)
            .map(|(t, r)| route_json::route(router, t, r, counters))
            .collect();
        return format!("[{}]\n", v.join(","));
    }
    let mut text = String::new();
    for (t, r) in all_routes(router) {
        text += &route_line(router, t, r, counters);
        text.push('\n');
    }
    text
}

/// The seg6local routes with `count`, with their tables.
fn counted_routes(router: &Snapshot) -> impl Iterator<Item = (u32, &RouteEntry)> {
    all_routes(router).filter(|(_, r)| {
        r.tunnel
            .is_some_and(|t| matches!(&router.tunnels[t], Tunnel::Local(l) if l.spec.count))
    })
}

/// Every route of every table, IPv6 first in each, tables in id order, each family in the kernel's dump order
/// ([`route_json::kernel_order`]), as `ip route show table all` lists them.
fn all_routes(router: &Snapshot) -> impl Iterator<Item = (u32, &RouteEntry)> {
    router.tables().into_iter().flat_map(|(t, f)| {
        let mut v6: Vec<_> = f.routes_v6().collect();
        let mut v4: Vec<_> = f.routes_v4().collect();
        v6.sort_by_key(|r| route_json::kernel_order(r));
        v4.sort_by_key(|r| route_json::kernel_order(r));
        v6.into_iter().chain(v4).map(move |r| (t, r))
    })
}

/// One route as `ip route show table all` prints it (with `ip -s` counters for seg6local `count` routes when
/// `counters` are given), then lwt6's effective MTU as a comment for tunnel routes.
fn route_line(
    router: &Snapshot,
    table: u32,
    r: &RouteEntry,
    counters: Option<&[LocalCounters]>,
) -> String {
    {
        let mut line = route_json::dst_text(r);
        if let Some(t) = r.tunnel {
            let text = match &router.tunnels[t] {
                Tunnel::Local(l) => l.iproute2_stats(
                    counters
                        .map(|c| c.get(t).copied().unwrap_or_default())
                        .as_ref(),
                ),
                other => other.iproute2(),
            };
            line += &format!("  {text}");
        }
        if let Some(v) = r.via {
            line += &format!(" via {v}");
        }
        if let Some(d) = r.dev {
            line += &format!(" dev {}", router.links[d].name);
        }
        if table != MAIN_TABLE {
            line += &format!(" table {}", table_name(table));
        }
        if r.origin == Origin::Connected {
            line += " proto kernel";
        }
        if let Some(sc) = route_json::scope(r) {
            line += &format!(" scope {sc}");
        }
        if let Some(a) = route_json::prefsrc(router, r) {
            line += &format!(" src {a}");
        }
        if r.prefix.addr().is_ipv6() || r.metric != 0 {
            line += &format!(" metric {}", r.metric);
        }
        if let Some(m) = r.mtu {
            line += &format!(" mtu {m}");
        }
        if r.prefix.addr().is_ipv6() {
            line += " pref medium";
        }
        let (linux, ours) = router.route_mtu(r);
        if r.tunnel
            .is_some_and(|t| !matches!(router.tunnels[t], Tunnel::Local(_)))
        {
            line += &format!("  # effective mtu {ours} (linux reports {linux})");
        }
        line
    }
}

/// Frames read and processed together by `lwt6 pcap` (one snapshot load per batch; memory for this many frames).
const STREAM_BATCH: usize = 256;

/// Turns a frame of another link type (raw IP, Linux cooked captures) into the Ethernet frame the interface with
/// MAC `dst` would have received; fails naming the frame (`frame_no`, 1-based) if it cannot be.
fn as_ethernet(
    mut f: pcap::CapturedFrame,
    dst: [u8; 6],
    path: &Path,
    frame_no: usize,
) -> Result<pcap::CapturedFrame, Failure> {
    if f.linktype != linktype::ETHERNET {
        f.data = linktype::to_ethernet(f.linktype, &f.data, dst)
            .map_err(|e| fail(format!("{}: frame {frame_no}: {e}", path.display())))?;
        f.linktype = linktype::ETHERNET;
    }
    Ok(f)
}

fn cmd_decode(a: &DecodeArgs) -> Result<(), Failure> {
    // Streaming: one frame in memory at a time. A damaged capture fails where the damage is, after the frames
    // before it have been shown.
    let mut frames = pcap::CaptureReader::open(&a.input)
        .map_err(|e| fail(format!("{}: {e}", a.input.display())))?;
    let mut w = std::io::BufWriter::new(std::io::stdout().lock());
    let mut put = |s: &str| {
        if w.write_all(s.as_bytes()).is_err() {
            std::process::exit(0)
        }
    };
    if a.json {
        // One JSON array, written frame by frame: the output is never built whole in memory.
        put("[");
    }
    let mut n: u64 = 0;
    while a.count.is_none_or(|c| n < c) {
        let Some(f) = frames.next() else { break };
        n += 1;
        let f = f.map_err(|e| fail(format!("{}: {e}", a.input.display())))?;
        let iface = frames.interface();
        // Raw IP and cooked frames are shown with an Ethernet header of zero addresses.
        let f = as_ethernet(f, [0; 6], &a.input, n as usize)?;
        // Seconds since the epoch with nanoseconds, as tshark's frame.time_epoch.
        let time = format!("{}.{:09}", f.ts_ns / 1_000_000_000, f.ts_ns % 1_000_000_000);
        if a.json {
            if n > 1 {
                put(",");
            }
            let interface = iface.map(|i| {
                let mut v = json!({"id": i.id});
                if let Some(name) = i.name {
                    v["name"] = json!(name);
                }
                if let Some(d) = i.description {
                    v["description"] = json!(d);
                }
                v
            });
            let v = json!({"frame": n, "time": time, "interface": interface, "len": f.data.len(),
                "layers": decode::frame(&f.data)});
            put(&v.to_string());
        } else {
            // The interface by name, else description, else id; `-` in a classic pcap (no interfaces).
            let iface = iface.map_or_else(
                || "-".to_string(),
                |i| i.name.or(i.description).unwrap_or_else(|| i.id.to_string()),
            );
            put(&format!(
                "{n:>4} {time} {iface} {:>5}B  {}\n",
                f.data.len(),
                decode::summary(&decode::frame(&f.data))
            ));
        }
    }
    if a.json {
        put("]\n");
    }
    if w.flush().is_err() {
        std::process::exit(0)
    }
    Ok(())
}
