//! The `lwt6` command line: argument definitions and the subcommands.

use crate::config::{self, Config};
use crate::decode;
use crate::fib::{Origin, RouteEntry};
use crate::io::linktype;
use crate::io::pcap::{self, OutFrame};
use crate::router::Router;
use crate::snapshot::Snapshot;
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
    /// Run the live router on the interfaces the configuration names (root; docs/live.md).
    Run(crate::live::RunArgs),
    /// Send one request to a running router's control socket: a configuration line or `show routes|stats|neigh`.
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
    },
}

/// `lwt6 decode`.
#[derive(Debug, Args)]
pub struct DecodeArgs {
    /// Capture to decode.
    pub input: PathBuf,
    /// JSON output (an array, one object per frame).
    #[arg(short = 'j', long = "json")]
    pub json: bool,
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
            what: ShowWhat::Routes { config, json },
        }) => cmd_show_routes(&config, json),
        Command::Decode(a) => cmd_decode(&a),
        Command::Headroom(a) => headroom::run(a),
        Command::Audit(a) => audit::run(a),
        Command::Bench(a) => bench::run(a),
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
    let mut frames =
        pcap::read_file(&a.input).map_err(|e| fail(format!("{}: {e}", a.input.display())))?;
    as_ethernet(&mut frames, snap.links[in_dev].mac, &a.input)?;
    let mut sent: Vec<(usize, u64, Vec<u8>)> = Vec::new();
    router.process_batch(
        frames.iter().map(|f| (in_dev, f.ts_ns, f.data.as_slice())),
        &mut |dev, ts, bytes| sent.push((dev, ts, bytes.to_vec())),
    );
    let names: Vec<&str> = snap.links.iter().map(|l| l.name.as_str()).collect();
    if let Some(out) = &a.output {
        let of: Vec<OutFrame> = sent
            .iter()
            .map(|(d, ts, b)| OutFrame {
                iface: *d,
                ts_ns: *ts,
                data: b,
            })
            .collect();
        pcap::write_atomic(out, &pcap::pcapng_bytes(&names, &of))
            .map_err(|e| fail(format!("{}: {e}", out.display())))?;
    }
    if let Some(dir) = &a.out_dir {
        std::fs::create_dir_all(dir).map_err(|e| fail(format!("{}: {e}", dir.display())))?;
        for (i, name) in names.iter().enumerate() {
            let frames: Vec<(u64, &[u8])> = sent
                .iter()
                .filter(|s| s.0 == i)
                .map(|s| (s.1, s.2.as_slice()))
                .collect();
            if frames.is_empty() {
                continue;
            }
            let path = dir.join(format!("{name}.pcap"));
            pcap::write_atomic(&path, &pcap::pcap_bytes(&frames))
                .map_err(|e| fail(format!("{}: {e}", path.display())))?;
        }
    }
    if a.verbose && !a.json {
        for (i, (d, _, b)) in sent.iter().enumerate() {
            out!(
                "out {:>4} {:<6} {:>5}B  {}",
                i + 1,
                names[*d],
                b.len(),
                decode::summary(&decode::frame(b))
            );
        }
    }
    let st = &router.worker.stats;
    if a.stats {
        if a.json {
            let mut v = st.to_json();
            let mut per_dev = serde_json::Map::new();
            for (i, n) in names.iter().enumerate() {
                per_dev.insert(
                    n.to_string(),
                    json!(sent.iter().filter(|s| s.0 == i).count()),
                );
            }
            v["frames_out_by_dev"] = json!(per_dev);
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
            for (k, v) in &st.encapsulated {
                out!("  encapsulated {k}: {v}");
            }
            if st.ioam_transit_filled > 0 {
                out!(
                    "  ioam traces filled in transit: {}",
                    st.ioam_transit_filled
                );
            }
            for (r, n) in &st.drops {
                out!("  drop {:<28} {n}", r.name());
            }
            for (i, n) in names.iter().enumerate() {
                let c = sent.iter().filter(|s| s.0 == i).count();
                if c > 0 {
                    out!("  out {n:<8} {c}");
                }
            }
        }
    }
    if !st.balanced() {
        return Err(fail(format!(
            "internal error: counters do not balance (rx {} != tx {} + dropped {})",
            st.rx,
            st.tx,
            st.dropped()
        )));
    }
    Ok(())
}

fn route_json(router: &Snapshot, r: &RouteEntry) -> serde_json::Value {
    let (linux_mtu, mtu) = router.route_mtu(r);
    json!({
        "dst": if r.prefix.prefix_len() == 0 { "default".to_string() } else { r.prefix.to_string() },
        "gateway": r.via.map(|v| v.to_string()),
        "dev": r.dev.map(|d| router.links[d].name.clone()),
        "protocol": match r.origin { Origin::Connected => "kernel", Origin::Static => "static" },
        "metric": r.metric,
        "mtu": r.mtu,
        "encap": r.tunnel.map(|t| router.tunnels[t].iproute2()),
        "effective_mtu": mtu,
        "linux_effective_mtu": linux_mtu,
        "line": if r.line == 0 { None } else { Some(r.line) },
    })
}

fn cmd_show_routes(config: &Path, as_json: bool) -> Result<(), Failure> {
    let router = Snapshot::build_from(load_config(config)?)
        .map_err(|e| fail(format!("{}: {e}", config.display())))?;
    let text = routes_text(&router, as_json);
    if std::io::stdout().lock().write_all(text.as_bytes()).is_err() {
        std::process::exit(0)
    }
    Ok(())
}

/// The routing table as `lwt6 show routes` prints it (`ip route` lines, or a JSON array), newline-terminated.
pub fn routes_text(router: &Snapshot, as_json: bool) -> String {
    let fib = router.fib();
    let routes: Vec<&RouteEntry> = fib.routes_v6().chain(fib.routes_v4()).collect();
    if as_json {
        let v: Vec<_> = routes.iter().map(|r| route_json(router, r)).collect();
        return format!("{}\n", serde_json::Value::Array(v));
    }
    let mut text = String::new();
    for r in routes {
        let dst = if r.prefix.prefix_len() == 0 {
            "default".to_string()
        } else {
            r.prefix.to_string()
        };
        let mut line = dst;
        if let Some(t) = r.tunnel {
            line += &format!("  {}", router.tunnels[t].iproute2());
        }
        if let Some(v) = r.via {
            line += &format!(" via {v}");
        }
        if let Some(d) = r.dev {
            line += &format!(" dev {}", router.links[d].name);
        }
        if r.origin == Origin::Connected {
            line += " proto kernel";
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
        if r.tunnel.is_some() {
            line += &format!("  # effective mtu {ours} (linux reports {linux})");
        }
        text += &line;
        text.push('\n');
    }
    text
}

/// Turns frames of other link types (raw IP, Linux cooked captures) into the Ethernet frames the interface with
/// MAC `dst` would have received; fails naming the first frame that cannot be.
fn as_ethernet(
    frames: &mut [pcap::CapturedFrame],
    dst: [u8; 6],
    path: &Path,
) -> Result<(), Failure> {
    for (i, f) in frames.iter_mut().enumerate() {
        if f.linktype != linktype::ETHERNET {
            f.data = linktype::to_ethernet(f.linktype, &f.data, dst)
                .map_err(|e| fail(format!("{}: frame {}: {e}", path.display(), i + 1)))?;
            f.linktype = linktype::ETHERNET;
        }
    }
    Ok(())
}

fn cmd_decode(a: &DecodeArgs) -> Result<(), Failure> {
    let mut frames =
        pcap::read_file(&a.input).map_err(|e| fail(format!("{}: {e}", a.input.display())))?;
    // Raw IP and cooked frames are shown with an Ethernet header of zero addresses.
    as_ethernet(&mut frames, [0; 6], &a.input)?;
    if a.json {
        // One JSON array, written frame by frame: the output is never built whole in memory.
        let mut w = std::io::BufWriter::new(std::io::stdout().lock());
        let mut put = |s: &str| {
            if w.write_all(s.as_bytes()).is_err() {
                std::process::exit(0)
            }
        };
        put("[");
        for (i, f) in frames.iter().enumerate() {
            if i > 0 {
                put(",");
            }
            let v = json!({"frame": i + 1, "len": f.data.len(), "layers": decode::frame(&f.data)});
            put(&v.to_string());
        }
        put("]\n");
        if w.flush().is_err() {
            std::process::exit(0)
        }
    } else {
        for (i, f) in frames.iter().enumerate() {
            out!(
                "{:>4} {:>5}B  {}",
                i + 1,
                f.data.len(),
                decode::summary(&decode::frame(&f.data))
            );
        }
    }
    Ok(())
}
