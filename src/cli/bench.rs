//! `lwt6 bench`: forwarding-rate sweeps (the paper's Fig. 6), the physical floor and the routing table at scale, see
//! [`crate::bench`].

use super::Failure;
use crate::bench::{self, Family, Options, Seg6ModeKey, Strategy, Sweep};
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// Arguments of `lwt6 bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// What to measure.
    #[command(subcommand)]
    pub what: BenchWhat,
}

/// `lwt6 bench` subcommands.
#[derive(Debug, Subcommand)]
pub enum BenchWhat {
    /// Forwarding rate against tunnel size under the buffer strategies; writes CSV, SVG plots and a summary.
    Sweep(SweepArgs),
    /// lwt6 native on one tunnel beside a bare loop that only copies the header template (the physical floor).
    Floor(FloorArgs),
    /// The routing table at scale: build time, memory per route and lookups per second on one core.
    Fib(FibArgs),
    /// A long run: packets of every kind through a worker while routes change at a target rate; checks that
    /// counters balance and reports resident memory as it goes.
    Soak(SoakArgs),
    /// The IOAM paper's experiments in memory (rate with IOAM off / configured / in use, against the share of
    /// packets traced, the options and namespaces per packet; time added per node role): CSV, SVG plots, table.
    Ioam(IoamArgs),
    /// What the per-packet tracer costs on one family: no trace, a trace armed that no frame matches, every frame
    /// traced (interleaved runs).
    Trace(FloorArgs),
    /// The live router against the kernel router in network namespaces: zero-loss rates for plain IPv6, seg6
    /// encap, IOAM and End.DX6, 1 and 2 workers (root; docs/live.md).
    Live(super::bench_live::LiveBenchArgs),
}

/// `lwt6 bench soak`.
#[derive(Debug, Args)]
pub struct SoakArgs {
    /// Packets to offer (rounded up to whole batches of 256).
    #[arg(long, default_value_t = 10_000_000, value_parser = crate::cli::within::<u64>(1, 1_000_000_000_000))]
    pub packets: u64,
    /// Target route changes per second (0: none).
    #[arg(long = "change-rate", default_value_t = 10_000, value_parser = crate::cli::within::<u64>(0, 100_000_000))]
    pub change_rate: u64,
    /// Changes per published batch.
    #[arg(long = "change-batch", default_value_t = 10, value_parser = crate::cli::within::<usize>(1, 1_000_000))]
    pub change_batch: usize,
    /// Offered packets per second; batches that find the input queue full are counted as overload (default:
    /// offer as fast as the worker takes them, nothing refused).
    #[arg(long = "offered-rate", value_parser = crate::cli::within::<u64>(1, 1_000_000_000_000))]
    pub offered_rate: Option<u64>,
    /// Input queue capacity in batches of 256.
    #[arg(long, default_value_t = 64, value_parser = crate::cli::within::<usize>(1, 1_000_000))]
    pub queue: usize,
    /// JSON output.
    #[arg(short = 'j', long)]
    pub json: bool,
    /// Write the soak's frames (every kind, to the soak router's r0) to FILE as a pcap and stop: the traffic of
    /// the live soak (scripts/soak-live.py, `lwt6 gen --all-frames`).
    #[arg(long = "frames-out", value_name = "FILE")]
    pub frames_out: Option<PathBuf>,
}

/// `lwt6 bench ioam`.
#[derive(Debug, Args)]
pub struct IoamArgs {
    /// Experiments: all, or a comma-separated list of registration, share, options, namespaces, roles.
    #[arg(long, default_value = "all")]
    pub experiments: String,
    /// Where the CSV (ioam.csv) and the plots (ioam-*.svg; with --plot-live, ioam-live-*.svg) go.
    #[arg(long = "out-dir", default_value = "docs/plots")]
    pub out_dir: std::path::PathBuf,
    /// Measure nothing: plot the live run in CSV (written by scripts/bench-ioam-live.py) as
    /// ioam-live-{registration,share,options,namespaces,roles}.svg, the best of its rounds.
    #[arg(long = "plot-live", value_name = "CSV", conflicts_with = "experiments")]
    pub plot_live: Option<std::path::PathBuf>,
    /// Measure nothing: re-plot ioam-*.svg from an ioam.csv this command wrote before.
    #[arg(
        long = "from-csv",
        value_name = "CSV",
        conflicts_with_all = ["experiments", "plot_live"]
    )]
    pub from_csv: Option<std::path::PathBuf>,
    /// Measurement settings.
    #[command(flatten)]
    pub common: Common,
}

/// `lwt6 bench fib`.
#[derive(Debug, Args)]
pub struct FibArgs {
    /// IPv6 routes in the table (generated /48s via one gateway).
    #[arg(long, default_value_t = 1_000_000, value_parser = crate::cli::within::<usize>(1, 16777215))]
    pub routes: usize,
    /// Every n-th route is seg6 encap with 2 SIDs (0: none).
    #[arg(long = "seg6-every", default_value_t = 10)]
    pub seg6_every: usize,
    /// Destinations looked up per run.
    #[arg(long, default_value_t = 4_000_000, value_parser = crate::cli::within::<usize>(1, 1000000000))]
    pub lookups: usize,
    /// Runs (median, min and max are reported).
    #[arg(long, default_value_t = 5, value_parser = crate::cli::within::<usize>(1, 1000000))]
    pub runs: usize,
    /// Route changes to publish after the lookups (half additions, half removals), with a worker forwarding
    /// from the same table meanwhile (0: none).
    #[arg(long, default_value_t = 0, value_parser = crate::cli::within::<usize>(0, 100000000))]
    pub changes: usize,
    /// Changes per published batch.
    #[arg(long, default_value_t = 100, value_parser = crate::cli::within::<usize>(1, 1000000))]
    pub batch: usize,
    /// JSON output.
    #[arg(short = 'j', long)]
    pub json: bool,
}

/// Settings shared by both subcommands.
#[derive(Debug, Args)]
pub struct Common {
    /// Packets per run (rounded up to whole batches of 256 frames).
    #[arg(long, default_value_t = 200_000, value_parser = crate::cli::within::<usize>(1, 1000000000))]
    pub packets: usize,
    /// Runs per point (median, min and max are reported).
    #[arg(long, default_value_t = 5, value_parser = crate::cli::within::<usize>(1, 1000000))]
    pub runs: usize,
    /// Rx headroom in front of the Ethernet header for the Linux strategies (overrides --nic).
    #[arg(long = "rx-headroom", value_parser = crate::cli::within::<usize>(0, 8192))]
    pub rx_headroom: Option<usize>,
    /// NIC whose rx headroom the Linux strategies get: i40e (192 bytes), legacy-rx (64), none (0).
    #[arg(long, default_value = "i40e")]
    pub nic: String,
    /// Rx headroom for lwt6 (default: the one lwt6 computes from its routes).
    #[arg(long = "native-headroom", value_parser = crate::cli::within::<usize>(0, 8192))]
    pub native_headroom: Option<usize>,
    /// Rx headroom for the `lwt6-tiny` strategy.
    #[arg(long = "tiny-headroom", default_value_t = 0, value_parser = crate::cli::within::<usize>(0, 8192))]
    pub tiny_headroom: usize,
    /// L1 cache line size (NET_SKB_PAD = max(32, line)).
    #[arg(long = "cache-line", default_value_t = 64, value_parser = crate::cli::within::<usize>(16, 4096))]
    pub cache_line: usize,
    /// Received frame length in bytes.
    #[arg(long = "frame-len", default_value_t = bench::DEFAULT_FRAME_LEN, value_parser = crate::cli::within::<usize>(62, 65549))]
    pub frame_len: usize,
    /// Sweep only: time N single batches of 256 packets per point and strategy, interleaved over the whole sweep,
    /// instead of --runs runs of --packets packets. The plots' bars and the "best" figures then come from the least
    /// disturbed batch, measured microseconds apart from its neighbours' (for smoothness checks on a noisy host).
    #[arg(long, default_value_t = 0, value_parser = crate::cli::within::<usize>(0, 10000000))]
    pub batches: usize,
}

/// `lwt6 bench sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Protocols: seg6, ioam6, rpl or all (the IPv6 forwarding baseline is always measured).
    #[arg(long, default_value = "all")]
    pub proto: String,
    /// Modes, comma separated (seg6: inline,encap,encap.red,l2encap,l2encap.red; ioam6: inline,encap). Default: all.
    #[arg(long)]
    pub modes: Option<String>,
    /// Sizes `A..B` (inclusive; IOAM sizes step by 4), or a comma list. Default: each protocol's full range.
    #[arg(long)]
    pub sizes: Option<String>,
    /// Strategies, comma separated: pre-fix, post-fix, lwt6, lwt6-tiny (tiny rx headroom), lwt6-general (no
    /// fast-path plans), lwt6-memcpy (templates copied by libc memcpy).
    #[arg(long, default_value = "pre-fix,post-fix,lwt6-general,lwt6")]
    pub strategies: String,
    /// Directory for sweep.csv, the SVG plots and summary.md.
    #[arg(long = "out-dir", default_value = "docs/plots")]
    pub out_dir: PathBuf,
    /// Worker threads (each measures whole points; more than one adds noise). No short flag: `-j` is `--json`
    /// in every lwt6 command.
    #[arg(long = "jobs", default_value_t = 1, value_parser = crate::cli::within::<usize>(1, 64))]
    pub jobs: usize,
    /// Fewer packets and runs, every 4th size (smoke test; under 30 s).
    #[arg(long)]
    pub quick: bool,
    /// Do not show progress on stderr.
    #[arg(long = "no-progress")]
    pub no_progress: bool,
    /// Skip the IPv6 forwarding baseline (for per-point measurements, e.g. instruction counts under callgrind).
    #[arg(long = "no-baseline")]
    pub no_baseline: bool,
    /// Re-plot from an existing sweep.csv instead of measuring.
    #[arg(long = "from-csv")]
    pub from_csv: Option<PathBuf>,
    /// Measurement settings.
    #[command(flatten)]
    pub common: Common,
}

/// `lwt6 bench floor` and `lwt6 bench trace`.
#[derive(Debug, Args)]
pub struct FloorArgs {
    /// Family (`seg6-encap`, `seg6-inline`, `ioam6-inline`, `rpl`, `ipv6`, ...; seg6local: `end`, `end-x`,
    /// `end-dx6`, whose size is the SIDs in the received SRH).
    #[arg(long, default_value = "seg6-encap")]
    pub family: String,
    /// Size (SIDs, trace bytes or addresses).
    #[arg(long, default_value_t = 2, value_parser = crate::cli::within::<usize>(1, 1024))]
    pub size: usize,
    /// Measurement settings.
    #[command(flatten)]
    pub common: Common,
}

fn options(c: &Common) -> Result<Options, Failure> {
    let nic = match c.nic.as_str() {
        "i40e" => bench::I40E_RX_HEADROOM,
        "legacy-rx" => 64,
        "none" => 0,
        other => {
            return Err(super::fail(format!(
                "bench: unknown --nic '{other}' (expected i40e, legacy-rx, none)"
            )));
        }
    };
    Ok(Options {
        packets: c.packets.max(1),
        runs: c.runs.max(1),
        nic_headroom: c.rx_headroom.unwrap_or(nic),
        native_headroom: c.native_headroom,
        tiny_headroom: c.tiny_headroom,
        cache_line: c.cache_line.max(1),
        frame_len: c.frame_len,
        batches: c.batches,
    })
}

fn parse_sizes(s: &str) -> Result<Vec<usize>, Failure> {
    let bad = || {
        super::fail(format!(
            "bench: bad --sizes '{s}' (expected A..B or a comma list)"
        ))
    };
    if let Some((a, b)) = s.split_once("..") {
        let a: usize = a.trim().parse().map_err(|_| bad())?;
        let b: usize = b
            .trim()
            .trim_start_matches('=')
            .parse()
            .map_err(|_| bad())?;
        if a > b {
            return Err(bad());
        }
        return Ok((a..=b).collect());
    }
    s.split(',')
        .map(|x| x.trim().parse().map_err(|_| bad()))
        .collect()
}

/// The families a `--proto`/`--modes` selection names (the baseline first).
fn families(proto: &str, modes: Option<&str>) -> Result<Vec<Family>, Failure> {
    let protos: Vec<&str> = if proto == "all" {
        vec!["seg6", "ioam6", "rpl"]
    } else {
        proto.split(',').map(str::trim).collect()
    };
    let modes: Option<Vec<&str>> = modes.map(|m| m.split(',').map(str::trim).collect());
    let want = |m: &str| modes.as_ref().is_none_or(|v| v.contains(&m));
    let mut v = vec![Family::Plain];
    for p in protos {
        match p {
            "seg6" => v.extend(
                Seg6ModeKey::ALL
                    .iter()
                    .filter(|m| want(m.name()))
                    .map(|&m| Family::Seg6(m)),
            ),
            "ioam6" => {
                if want("inline") {
                    v.push(Family::IoamInline);
                }
                if want("encap") {
                    v.push(Family::IoamEncap);
                }
            }
            "rpl" => v.push(Family::Rpl),
            other => {
                return Err(super::fail(format!(
                    "bench: unknown --proto '{other}' (expected seg6, ioam6, rpl, all)"
                )));
            }
        }
    }
    if v.len() == 1 {
        return Err(super::fail("bench: --modes selects nothing"));
    }
    Ok(v)
}

/// The command line that reproduces a run, for plot footers and docs.
fn command_line() -> String {
    let args: Vec<String> = std::env::args().skip(1).collect();
    format!("lwt6 {}", args.join(" "))
}

/// Runs `lwt6 bench`.
fn fib(a: FibArgs) -> Result<(), Failure> {
    let report = bench::fib::run(bench::fib::FibOptions {
        routes: a.routes,
        seg6_every: a.seg6_every,
        lookups: a.lookups,
        runs: a.runs,
        changes: a.changes,
        batch: a.batch,
    })
    .map_err(|e| super::fail(format!("bench fib: {e}")))?;
    if a.json {
        out!("{}", report.json());
    } else {
        out!("{}", report.text().trim_end());
    }
    Ok(())
}

fn soak(a: SoakArgs) -> Result<(), Failure> {
    if let Some(path) = &a.frames_out {
        let frames = bench::soak::frames();
        let stamped: Vec<(u64, &[u8])> = frames
            .iter()
            .enumerate()
            .map(|(i, f)| (i as u64 * 1000, f.as_slice()))
            .collect();
        return crate::io::output::write_file(path, &crate::io::pcap::pcap_bytes(&stamped))
            .map_err(|e| super::fail(e.to_string()));
    }
    let report = bench::soak::run(bench::soak::SoakOptions {
        packets: a.packets,
        change_rate: a.change_rate,
        change_batch: a.change_batch,
        offered_rate: a.offered_rate,
        queue: a.queue,
        ..Default::default()
    })
    .map_err(|e| super::fail(format!("bench soak: {e}")))?;
    if a.json {
        out!("{}", report.json());
    } else {
        out!("{}", report.text().trim_end());
    }
    if !report.balanced() {
        return Err(super::fail("bench soak: counters do not balance"));
    }
    Ok(())
}

/// `lwt6 bench`: runs the benchmark its subcommand names.
pub fn run(args: BenchArgs) -> Result<(), Failure> {
    match args.what {
        BenchWhat::Sweep(a) => sweep(a),
        BenchWhat::Floor(a) => floor(a),
        BenchWhat::Fib(a) => fib(a),
        BenchWhat::Soak(a) => soak(a),
        BenchWhat::Ioam(a) => ioam(a),
        BenchWhat::Trace(a) => trace(a),
        BenchWhat::Live(a) => super::bench_live::run(a),
    }
}

fn trace(a: FloorArgs) -> Result<(), Failure> {
    let opts = options(&a.common)?;
    let fam = Family::from_name(&a.family)
        .ok_or_else(|| super::fail(format!("bench: unknown --family '{}'", a.family)))?;
    let r =
        bench::trace::run(fam, a.size, &opts).map_err(|e| super::fail(format!("bench: {e}")))?;
    out!("{}", r.table());
    Ok(())
}

/// Reads the CSV file `csv` and parses it with `parse` (errors name the file).
fn read_csv<T, E: std::fmt::Display>(
    csv: &std::path::Path,
    parse: impl FnOnce(&str) -> Result<T, E>,
) -> Result<T, Failure> {
    let at = |e: &dyn std::fmt::Display| super::fail(format!("bench ioam: {}: {e}", csv.display()));
    let text = std::fs::read_to_string(csv).map_err(|e| at(&e))?;
    parse(&text).map_err(|e| at(&e))
}

/// Writes `files` (name, text: the plots, a CSV) into `out_dir`, created when missing; with `say`, names each file
/// on stdout.
fn write_files(
    out_dir: &std::path::Path,
    files: Vec<(String, String)>,
    say: bool,
) -> Result<(), Failure> {
    std::fs::create_dir_all(out_dir)
        .map_err(|e| super::fail(format!("{}: {e}", out_dir.display())))?;
    // Every path is checked before the first file is written.
    for (name, _) in &files {
        crate::io::output::check(&out_dir.join(name)).map_err(|e| super::fail(e.to_string()))?;
    }
    for (name, text) in files {
        let p = out_dir.join(name);
        crate::io::output::write_file(&p, text.as_bytes())
            .map_err(|e| super::fail(e.to_string()))?;
        if say {
            out!("{}", p.display());
        }
    }
    Ok(())
}

fn ioam(a: IoamArgs) -> Result<(), Failure> {
    use bench::{ioam, ioam::Experiment, ioam_live};
    // Re-plots, nothing measured: a live run's CSV (scripts/bench-ioam-live.py), or an earlier ioam.csv.
    if let Some(csv) = &a.plot_live {
        let best = ioam_live::best_of_rounds(&read_csv(csv, ioam_live::parse_csv)?);
        let command = format!("lwt6 bench ioam --plot-live {}", csv.display());
        return write_files(&a.out_dir, ioam_live::plots(&best, &command), true);
    }
    if let Some(csv) = &a.from_csv {
        let points = read_csv(csv, ioam::from_csv)?;
        let footer = format!("lwt6 bench ioam --from-csv {}", csv.display());
        return write_files(&a.out_dir, ioam::plots(&points, &footer), true);
    }
    let opts = options(&a.common)?;
    let which: Vec<Experiment> = if a.experiments == "all" {
        Experiment::ALL.to_vec()
    } else {
        a.experiments
            .split(',')
            .map(|w| match w {
                "registration" => Ok(Experiment::Registration),
                "share" => Ok(Experiment::Share),
                "options" => Ok(Experiment::Options),
                "namespaces" => Ok(Experiment::Namespaces),
                "roles" => Ok(Experiment::Roles),
                _ => Err(super::fail(format!(
                    "bench ioam: unknown experiment '{w}' (expected all or some of: registration, share, \
                     options, namespaces, roles)"
                ))),
            })
            .collect::<Result<_, _>>()?
    };
    let points = ioam::run(&which, &opts, &mut |p| {
        super::stdio::warn(&format!(
            "bench ioam: {:<13} {:>10}  {:>7.3} Mpps  {:>6.1} ns/packet",
            p.experiment,
            p.label,
            p.rate.median,
            p.ns_per_packet()
        ));
    })
    .map_err(|e| super::fail(format!("bench ioam: {e}")))?;
    let footer = format!(
        "lwt6 bench ioam --packets {} --runs {} --frame-len {}",
        opts.packets, opts.runs, opts.frame_len
    );
    let csv = ioam::to_csv(&points);
    let mut files = ioam::plots(&points, &footer);
    files.insert(0, ("ioam.csv".into(), csv.clone()));
    write_files(&a.out_dir, files, false)?;
    super::stdio::write_stdout(csv.as_bytes(), "the CSV")?;
    Ok(())
}

fn floor(a: FloorArgs) -> Result<(), Failure> {
    let opts = options(&a.common)?;
    let fam = Family::from_name(&a.family)
        .ok_or_else(|| super::fail(format!("bench: unknown --family '{}'", a.family)))?;
    let r = bench::floor(fam, a.size, &opts).map_err(|e| super::fail(format!("bench: {e}")))?;
    out!("{}", floor_table(&r));
    Ok(())
}

/// The floor report as a Markdown table.
pub fn floor_table(r: &bench::FloorReport) -> String {
    let row = |name: &str, s: &bench::Spread| {
        format!(
            "| {name} | {:.2} | {:.2}–{:.2} | {:.1} |",
            s.median,
            s.min,
            s.max,
            1000.0 / s.median
        )
    };
    [
        format!(
            "{} {} ({} B frames, {} B header template):\n",
            r.family.name(),
            r.size,
            r.frame_len,
            r.template_len
        ),
        "| loop | Mpps (median) | min–max | ns/packet |".into(),
        "|---|---|---|---|".into(),
        row("lwt6 pipeline (native)", &r.lwt6),
        row("floor: template copy only", &r.floor),
        row("floor: rx copy + template copy", &r.floor_rx),
        format!(
            "\nlwt6 / floor = {:.2} (template only), {:.2} (rx copy + template); overhead {:.1} ns/packet over the \
             rx+template floor",
            r.lwt6.median / r.floor.median,
            r.lwt6.median / r.floor_rx.median,
            1000.0 / r.lwt6.median - 1000.0 / r.floor_rx.median
        ),
    ]
    .join("\n")
}

fn sweep(a: SweepArgs) -> Result<(), Failure> {
    let mut opts = options(&a.common)?;
    let mut fams = families(&a.proto, a.modes.as_deref())?;
    if a.no_baseline {
        fams.retain(|f| *f != Family::Plain);
    }
    let strategies = a
        .strategies
        .split(',')
        .map(|s| {
            Strategy::from_name(s.trim()).ok_or_else(|| {
                let valid: Vec<&str> = Strategy::ALL.iter().map(|x| x.name()).collect();
                super::fail(format!(
                    "bench: unknown strategy '{}' (valid: {})",
                    s.trim(),
                    valid.join(", ")
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let sizes = a.sizes.as_deref().map(parse_sizes).transpose()?;
    if a.quick {
        opts.packets = opts.packets.min(64 * bench::FLOWS);
        opts.runs = opts.runs.min(3);
    }
    let lines: Vec<(Family, Vec<usize>)> = fams
        .iter()
        .map(|&f| {
            let mut s = match (&sizes, f) {
                (_, Family::Plain) => vec![0],
                (Some(s), f) => s
                    .iter()
                    .copied()
                    .filter(|x| x % f.size_step() == 0 && *x > 0)
                    .collect(),
                (None, f) => f.default_sizes(),
            };
            if a.quick && f != Family::Plain && sizes.is_none() {
                s = s.into_iter().step_by(3).collect();
            }
            (f, s)
        })
        .filter(|(_, s)| !s.is_empty())
        .collect();
    if opts.batches > 0 && a.jobs > 1 {
        return Err(super::fail(
            "bench: --batches interleaves every point in one thread; use it with --jobs 1",
        ));
    }
    let req = Sweep {
        lines,
        strategies,
        opts: opts.clone(),
        jobs: a.jobs.max(1),
        progress: !a.no_progress,
    };
    // The output directory and its files are checked before the sweep runs.
    std::fs::create_dir_all(&a.out_dir)
        .map_err(|e| super::fail(format!("{}: {e}", a.out_dir.display())))?;
    for name in ["sweep.csv", "summary.md"] {
        crate::io::output::check(&a.out_dir.join(name)).map_err(|e| super::fail(e.to_string()))?;
    }
    let t0 = std::time::Instant::now();
    let points = match &a.from_csv {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .map_err(|e| super::fail(format!("{}: {e}", p.display())))?;
            bench::from_csv(&text).map_err(|e| super::fail(format!("{}: {e}", p.display())))?
        }
        None => bench::sweep(&req).map_err(|e| super::fail(format!("bench: {e}")))?,
    };
    let elapsed = t0.elapsed().as_secs_f64();
    let write = |name: &str, text: &str| {
        crate::io::output::write_file(&a.out_dir.join(name), text.as_bytes())
            .map_err(|e| super::fail(e.to_string()))
    };
    let cmd = command_line();
    if a.from_csv.is_none() {
        write("sweep.csv", &bench::to_csv(&points, &opts))?;
    }
    let baseline = bench::line_of(&points, Family::Plain, Strategy::Lwt6)
        .first()
        .or(bench::line_of(&points, Family::Plain, Strategy::PostFix).first())
        .map(|p| p.rate.median);
    let mut plots = vec![];
    for &(f, _) in &req.lines {
        if f == Family::Plain {
            continue;
        }
        let svg = bench::plot::family_svg(
            &points,
            f,
            baseline.map(|b| (b, "IPv6 fwd")),
            opts.cache_line,
            &cmd,
        );
        let name = format!("{}.svg", f.name().replace('.', "-"));
        write(&name, &svg)?;
        plots.push(name);
    }
    let how = if opts.batches > 0 {
        format!(
            "{} interleaved single-batch timings of {} packets each (median; best = least disturbed batch)",
            opts.batches,
            bench::FLOWS
        )
    } else {
        format!(
            "{} runs of {} packets each",
            opts.runs,
            opts.packets.div_ceil(bench::FLOWS) * bench::FLOWS
        )
    };
    let mut md = format!(
        "Command: `{cmd}`\n\n{} points, {how}, {:.0} s.\n\n",
        points.len(),
        elapsed
    );
    if let Some(b) = baseline {
        md.push_str(&format!(
            "IPv6 forwarding baseline (no tunnel): {b:.2} Mpps.\n\n"
        ));
    }
    md.push_str(&bench::summary(&points, &opts));
    write("summary.md", &md)?;
    out!("{md}");
    out!(
        "wrote {}/sweep.csv, summary.md, {}",
        a.out_dir.display(),
        plots.join(", ")
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_families_parse() {
        assert_eq!(parse_sizes("1..4").unwrap(), vec![1, 2, 3, 4]);
        assert_eq!(parse_sizes("12,13").unwrap(), vec![12, 13]);
        assert!(parse_sizes("4..1").is_err());
        assert!(parse_sizes("x").is_err());
        let f = families("seg6", Some("encap,encap.red")).unwrap();
        assert_eq!(
            f,
            vec![
                Family::Plain,
                Family::Seg6(Seg6ModeKey::Encap),
                Family::Seg6(Seg6ModeKey::EncapRed)
            ]
        );
        assert_eq!(families("all", None).unwrap().len(), 9);
        assert!(families("gre", None).is_err());
        assert!(families("ioam6", Some("encap.red")).is_err());
    }
}
