//! The `lwt6` command line: argument definitions and the subcommands.

use crate::config::{self, Config};
use crate::decode;
use crate::io::linktype;
use crate::io::output::Output;
use crate::io::pcap::{self, OutFrame};
use crate::router::Router;
use crate::snapshot::Snapshot;
use crate::tunnel::seg6local::LocalCounters;
use clap::{Args, Parser, Subcommand};
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Prints a line to stdout, returning the failure ([`stdio::lost`]) from the enclosing function when the write
/// fails: a closed pipe (`lwt6 ... | head`) ends the command quietly, any other error with a message.
macro_rules! out {
    ($($t:tt)*) => {
        {
            use std::io::Write as _;
            writeln!(std::io::stdout().lock(), $($t)*).map_err(|e| $crate::cli::stdio::lost(e, "the output"))?
        }
    };
}

/// The exit statuses, as `lwt6 --help` lists them.
pub const EXIT_STATUS: &str = "Exit status: 0 success; 1 failure, including a write that failed (a full disk, \
/dev/full, an I/O error: the message names what was lost); 2 usage error; 3 lwt6 pcap: every IOAM trace to export \
was lost (outputs written); 4 lwt6 run: the configuration is invalid or a needed capability is missing (trying \
again cannot help: the systemd units do not restart then); 141 standard output was closed under lwt6 (a pipe's reader left: quiet, as a command \
killed by SIGPIPE).";

/// IPv6 lightweight tunnels (SRv6, IOAM, RPL) in userspace, byte for byte as Linux builds them.
#[derive(Debug, Parser)]
#[command(name = "lwt6", version, about, long_about = None, after_help = EXIT_STATUS)]
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
    Run(live::RunArgs),
    /// Send one request to a running router's control socket: a configuration line, `show
    /// routes|stats|neigh|trace|capture|sr|ioam|interfaces`, `route get ADDR`, `clear stats`, `trace add N
    /// [FILTER]|stop|clear` (packet tracing), or `capture start [dev IF] [rx] [tx] [drop] [count N] [overwrite]
    /// FILE|stop` (live capture to a pcapng file).
    Ctl(live::CtlArgs),
    /// The route an address takes in a configuration, as `ip route get` prints it, with lwt6's plan for it.
    Route(route_get::RouteArgs),
    /// Send a template frame over AF_PACKET at a given rate (live benchmarks; root).
    Gen(generator::GenArgs),
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
    /// Input capture (pcap or pcapng, Ethernet); `-` is stdin.
    pub input: PathBuf,
    /// Output pcapng: one interface block per egress device; `-` is stdout. A file is replaced only once the whole
    /// capture is processed (keeping its mode and owner; a link's target is replaced), a FIFO or character device
    /// is written through.
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
    /// `json:-` (stdout), `grpc:HOST:PORT` (an IOAM collector, `ioam_api.IOAMService/Report`; `grpcs:HOST:PORT
    /// [,ca=FILE]` over TLS) or `otlp:http[s]://HOST:PORT[/PATH][,ca=FILE]` (an OpenTelemetry collector,
    /// OTLP/HTTP protobuf; path `/v1/traces` by default). TLS trusts the CAs of FILE (PEM; default the system
    /// bundle). Traces that cannot be written are counted lost; when every trace is lost, the exit status is 3.
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
    /// Capture to decode (`-`: stdin).
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
    /// Also say, per route (IPv6 and IPv4), whether `lwt6 run`'s XDP tier would forward its frames in the
    /// driver (and as which plan) or hand them to the worker, and why (docs/xdp.md). Egress devices are assumed
    /// to take redirected frames.
    #[arg(long = "xdp")]
    pub xdp: bool,
    /// With --xdp: the bytes the receiving driver leaves in front of a frame (default 216: veth, virtio-net and
    /// generic XDP; about 120 after an XDP-redirected veth hop).
    #[arg(long = "xdp-headroom", requires = "xdp", value_parser = crate::cli::within::<u16>(0, 4096))]
    pub xdp_headroom: Option<u16>,
}

pub mod audit;
pub mod bench;
pub mod bench_live;
pub mod generator;
pub mod headroom;
pub mod install;
pub mod ioam_export;
pub mod live;
pub mod route_get;
pub mod stdio;

use lwt6_router::show::{counted_routes, route_line, routes_text};
pub use lwt6_router::show::{route_json, trace};

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
        Command::Run(a) => live::run(a),
        Command::Ctl(a) => live::ctl(a),
        Command::Route(a) => route_get::run(a),
        Command::Gen(a) => generator::run(a),
        Command::Check(a) => {
            let cfg = load_config(&a.config)?;
            let (links, routes) = (cfg.links.len(), cfg.routes.len());
            let tunnels = cfg.routes.iter().filter(|r| r.encap.is_some()).count();
            let router = Router::build_from(cfg)
                .map_err(|e| fail(format!("{}: {e}", a.config.display())))?;
            out!(
                "{}: ok ({links} links, {routes} routes, {tunnels} tunnels)",
                a.config.display()
            );
            if a.xdp {
                use lwt6_router::xdp_tier::{HEADROOM, placement};
                let h = a.xdp_headroom.unwrap_or(HEADROOM);
                let p = placement::placement(&router.snapshot(), h, |_| true);
                out!("{}", placement::text(&p, h).trim_end());
            }
            Ok(())
        }
    }
}

/// Reads and parses a configuration file. An `sr hmac set` line without `secret` reads the secret from stdin
/// when stdin is not a terminal.
pub fn load_config(path: &Path) -> Result<Config, Failure> {
    config::load_file(path, config::StdinSecret::Read).map_err(|e| fail(e.to_string()))
}

fn build_router(path: &Path, stdin: config::StdinSecret) -> Result<Router, Failure> {
    let cfg = config::load_file(path, stdin).map_err(|e| fail(e.to_string()))?;
    Router::build_from(cfg).map_err(|e| fail(format!("{}: {e}", path.display())))
}

/// Where `lwt6 pcap` writes the frames the router sends, as they come: the pcapng, one pcap per device, `-v` lines.
/// Every output is an [`Output`](crate::io::output::Output): nothing replaces the paths until the whole capture
/// has been processed without error, and an output dropped uncommitted leaves nothing behind.
struct PcapSink<'a> {
    ng: Option<pcap::PcapngWriter<Output>>,
    per_dev: Vec<Option<pcap::PcapWriter<Output>>>,
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
            self.err = Some(stdio::output_failure(w.get_ref().error(e)));
            return;
        }
        if let Some(dir) = &a.out_dir {
            let path = dir.join(format!("{}.pcap", self.names[dev]));
            if self.per_dev[dev].is_none() {
                match Output::create(&path)
                    .map_err(|e| e.to_string())
                    .and_then(|f| {
                        pcap::PcapWriter::new(f)
                            .map_err(|e| format!("{}: writing: {e}", path.display()))
                    }) {
                    Ok(w) => self.per_dev[dev] = Some(w),
                    Err(e) => {
                        self.err = Some(fail(e));
                        return;
                    }
                }
            }
            if let Some(w) = self.per_dev[dev].as_mut()
                && let Err(e) = w.write(ts, bytes)
            {
                self.err = Some(stdio::output_failure(w.get_ref().error(e)));
                return;
            }
        }
        if a.verbose && !a.json {
            let line = writeln!(
                std::io::stdout().lock(),
                "out {:>4} {:<6} {:>5}B  {}",
                self.sent_total,
                self.names[dev],
                bytes.len(),
                decode::summary(&decode::frame(bytes))
            );
            if let Err(e) = line {
                self.err = Some(stdio::lost(
                    e,
                    &format!("the -v line of output frame {}", self.sent_total),
                ));
            }
        }
    }
}

fn cmd_pcap(a: PcapArgs) -> Result<(), Failure> {
    // Standard output holds one thing: the pcapng (`-`), JSON IOAM traces (`json:-`) or the text and JSON reports.
    let mut on_stdout: Vec<&str> = Vec::new();
    if a.output.as_deref() == Some(Path::new("-")) {
        on_stdout.push("the output capture (-)");
    }
    if matches!(a.ioam_export, Some(ioam_export::Target::Json(None))) {
        on_stdout.push("--ioam-export json:-");
    }
    if a.verbose || a.stats || a.trace.is_some() {
        on_stdout.push("-v, --stats and --trace");
    }
    if on_stdout.len() > 1 {
        return Err(fail(format!(
            "{} all write to standard output: give a file to all but one",
            on_stdout.join(" and ")
        )));
    }
    // A capture read from stdin leaves no stdin for an HMAC secret.
    let stdin = if a.input.as_os_str() == "-" {
        config::StdinSecret::Taken
    } else {
        config::StdinSecret::Read
    };
    let mut router = build_router(&a.config, stdin)?;
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
    let names: Vec<&str> = snap.links.iter().map(|l| l.name.as_str()).collect();
    // The outputs are checked (and the pcapng's temporary file created) before any frame is read: a directory,
    // a missing or read-only directory, a socket fail here, not after the whole capture.
    let ng = match &a.output {
        Some(out) => {
            let f = Output::create(out).map_err(|e| fail(e.to_string()))?;
            Some(
                pcap::PcapngWriter::new(f, &names)
                    .map_err(|e| fail(format!("{}: writing: {e}", out.display())))?,
            )
        }
        None => None,
    };
    if let Some(dir) = &a.out_dir {
        std::fs::create_dir_all(dir).map_err(|e| fail(format!("{}: {e}", dir.display())))?;
        for n in &names {
            crate::io::output::check(&dir.join(format!("{n}.pcap")))
                .map_err(|e| fail(format!("--out-dir: {e}")))?;
        }
    }
    // Streaming: frames are read, processed and written a batch at a time, so memory stays flat in the
    // capture's length. Output files are temporary until the whole capture has been read without error.
    let mut reader = pcap::CaptureReader::open_input(&a.input)
        .map_err(|e| fail(format!("{}: {e}", a.input.display())))?;
    let exporter = a
        .ioam_export
        .as_ref()
        .map(|t| {
            router.worker.ioam_export.capacity = ioam_export::QUEUE;
            router.worker.ioam_export.transit = a.ioam_export_transit;
            ioam_export::start(t, snap.links.iter().map(|l| l.name.clone()).collect())
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
    let mut sink = PcapSink {
        ng,
        per_dev: names.iter().map(|_| None).collect(),
        sent_by_dev: vec![0u64; names.len()],
        sent_total: 0,
        err: None,
        a: &a,
        names: &names,
    };
    // SIGINT, SIGTERM, SIGHUP from here on end the run between two batches, through the same path as an error:
    // the temporary output files are removed (a signal's default action would leave them). Not while reading a
    // capture from stdin, where a read may wait for input without end.
    let watch_signals =
        a.input.as_os_str() != "-" && crate::audit::sys::install_interrupt_handler().is_ok();
    let mut batch: Vec<pcap::CapturedFrame> = Vec::with_capacity(STREAM_BATCH);
    let mut frame_no = 0usize;
    let mut last_ts = 0;
    loop {
        batch.clear();
        if watch_signals && crate::audit::sys::interrupted() {
            return Err(Failure {
                message: "pcap: interrupted; no output written".into(),
                code: 130,
            });
        }
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
        for _ in 0..=crate::neigh::MAX_MULTICAST_SOLICIT {
            now += crate::neigh::RETRANS_TIMER_NS;
            router.drive(now, &mut |dev, ts, bytes| sink.send(dev, ts, bytes));
        }
        if let Some(e) = sink.err.take() {
            return Err(e);
        }
    }
    let mut export_failed = None;
    if let Some(r) = exporter.map(|e| e.finish()) {
        // What the exporter lost had been counted as exported by the worker.
        let io = &mut router.worker.stats.ioam;
        io.exported -= r.lost.min(io.exported);
        io.export_lost += r.lost;
        if let Some(err) = &r.last_error {
            stdio::warn(&format!(
                "ioam export: {err} ({} of {} traces lost{})",
                r.lost,
                r.lost + r.written,
                r.failures_text()
            ));
        }
        if r.lost > 0 && r.written == 0 {
            export_failed = Some(Failure {
                message: format!(
                    "ioam export: every trace was lost ({}); exit status {}",
                    r.lost,
                    ioam_export::EXIT_ALL_LOST
                ),
                code: ioam_export::EXIT_ALL_LOST,
            });
        }
    }
    // The whole capture was read: make the output files visible.
    let sent_by_dev = std::mem::take(&mut sink.sent_by_dev);
    if let Some(w) = sink.ng.take() {
        w.into_inner().commit().map_err(stdio::output_failure)?;
    }
    for w in std::mem::take(&mut sink.per_dev).into_iter().flatten() {
        w.into_inner().commit().map_err(stdio::output_failure)?;
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
    match export_failed {
        Some(f) => Err(f),
        None => Ok(()),
    }
}

fn cmd_show_routes(config: &Path, as_json: bool, stats: bool) -> Result<(), Failure> {
    let router = Snapshot::build_from(load_config(config)?)
        .map_err(|e| fail(format!("{}: {e}", config.display())))?;
    // Before any traffic every counter is zero.
    let zeros = vec![LocalCounters::default(); router.tunnels.len()];
    let text = routes_text(&router, as_json, stats.then_some(zeros.as_slice()));
    stdio::write_stdout(text.as_bytes(), "the routes")
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
    // before it have been shown. `-` reads the capture from stdin.
    let mut frames = pcap::CaptureReader::open_input(&a.input)
        .map_err(|e| fail(format!("{}: {e}", a.input.display())))?;
    let mut w = std::io::BufWriter::new(std::io::stdout().lock());
    // A failed write names the frame being written; frames still buffered before it are lost with it.
    let mut put = |s: &str, frame: usize| {
        w.write_all(s.as_bytes()).map_err(|e| {
            stdio::lost(
                e,
                &format!("the decoded frames (from frame {frame} or the buffered ones before it)"),
            )
        })
    };
    if a.json {
        // One JSON array, written frame by frame: the output is never built whole in memory.
        put("[", 1)?;
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
                put(",", n as usize)?;
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
            put(&v.to_string(), n as usize)?;
        } else {
            // The interface by name, else description, else id; `-` in a classic pcap (no interfaces).
            let iface = iface.map_or_else(
                || "-".to_string(),
                |i| i.name.or(i.description).unwrap_or_else(|| i.id.to_string()),
            );
            let line = format!(
                "{n:>4} {time} {iface} {:>5}B  {}\n",
                f.data.len(),
                decode::summary(&decode::frame(&f.data))
            );
            put(&line, n as usize)?;
        }
    }
    if a.json {
        put("]\n", n as usize)?;
    }
    w.flush()
        .map_err(|e| stdio::lost(e, &format!("the decoded frames (up to frame {n})")))
}
