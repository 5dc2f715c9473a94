//! `lwt6 audit`: measure the running kernel's skb head reallocations for `seg6` routes and compare them with
//! the analyzer ([`crate::analysis::headroom`]).
//!
//! Method (details in `docs/audit.md`):
//! 1. build a throw-away three-namespace testbed ([`testbed`]) — sender, router, receiver over veth pairs;
//! 2. start one bpftrace ([`bpftrace`]) counting `pskb_expand_head` allocations, frames and headroom per sender
//!    thread (kprobes are not available, tracepoints are);
//! 3. for each ingress variant ([`Ingress`]: the frames as `AF_PACKET` leaves them, and/or re-homed by a
//!    native `XDP_PASS` program on the router's ingress, [`xdp`]), for the baseline (plain forwarding) and then
//!    every mode × segment count: replace the route under test, send a counted burst of identical frames from
//!    a fresh `AF_PACKET` sender thread;
//! 4. stop bpftrace, attribute its counters to the bursts by thread id, subtract the baseline's reallocations
//!    per packet, feed the measured rx headroom, `mac_len` and `LL_RESERVED_SPACE` to the analyzer and compare
//!    with its post-fix steady-state prediction ([`report::verdict`]).
//!
//! The testbed and bpftrace are removed on every exit path: normal end, error, panic, and SIGINT / SIGTERM /
//! SIGHUP (caught by [`sys::install_interrupt_handler`], polled between steps).

pub mod bpftrace;
pub mod report;
pub mod sys;
pub mod testbed;
pub mod xdp;

use crate::analysis::headroom::{self, Proto, Scenario};
use crate::analysis::skb::ll_reserved_space;
use bpftrace::{Counters, Tracer};
use report::{ConfigResult, Observation, Predicted, Verdict};
use serde::Serialize;
use std::path::Path;
use std::process::Command;
use testbed::Testbed;

/// The seg6 modes, in the order the audit runs them.
pub const MODES: &[&str] = &["inline", "encap", "encap.red", "l2encap", "l2encap.red"];

/// Failures of an audit.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// Not running as root.
    #[error(
        "lwt6 audit must run as root: it creates network namespaces and runs bpftrace (try sudo)"
    )]
    NotRoot,
    /// SIGINT / SIGTERM / SIGHUP arrived; everything was cleaned up.
    #[error("interrupted; the test namespaces and bpftrace were removed")]
    Interrupted,
    /// Anything else, with a message.
    #[error("{0}")]
    Failed(String),
}

/// How the router's ingress veth receives the sender's frames: this sets the headroom H0 every tunnel starts
/// from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Ingress {
    /// As `AF_PACKET` hands them over: H0 = 16 at the network header on veth.
    Plain,
    /// Through a native `XDP_PASS` program on the router's ingress ([`xdp`]): veth re-homes every frame with
    /// `XDP_PACKET_HEADROOM` in front of it, H0 = 270.
    Xdp,
}

impl Ingress {
    /// Lower-case name (as in `--ingress` and the JSON).
    pub fn name(self) -> &'static str {
        match self {
            Ingress::Plain => "plain",
            Ingress::Xdp => "xdp",
        }
    }
}

/// Parses `--ingress`: `plain`, `xdp`, or `both` (plain first, then XDP).
pub fn parse_ingress(s: &str) -> Result<Vec<Ingress>, String> {
    match s.trim() {
        "plain" => Ok(vec![Ingress::Plain]),
        "xdp" => Ok(vec![Ingress::Xdp]),
        "both" => Ok(vec![Ingress::Plain, Ingress::Xdp]),
        other => Err(format!(
            "unknown ingress variant '{other}' (valid: plain, xdp, both)"
        )),
    }
}

/// What to audit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditOptions {
    /// seg6 modes (from [`MODES`]).
    pub modes: Vec<String>,
    /// Segment counts.
    pub segments: Vec<usize>,
    /// Frames per configuration.
    pub count: u64,
    /// Leave the namespaces in place (for inspection). The XDP program is detached anyway.
    pub keep: bool,
    /// Ingress variants to run, in order (each gets its own baseline and sweep).
    pub ingress: Vec<Ingress>,
    /// Pause between installing a route and sending its burst, in milliseconds. A seg6 route's dst cache
    /// refuses every lookup made in the jiffy it was created in (see [`DEFAULT_SETTLE_MS`]); 0 measures that
    /// cold start too.
    pub settle_ms: u64,
}

/// Default for [`AuditOptions::settle_ms`]. `dst_cache_get` treats an entry as stale unless it was refreshed
/// in a jiffy *after* the cache was created (`time_after(refresh_ts, reset_ts)`), so every packet processed
/// in the jiffy the route was installed in takes the cold-cache (pre-fix) path. 25 ms is more than two jiffies
/// for any HZ ≥ 100 (one is 4 ms at HZ = 250).
pub const DEFAULT_SETTLE_MS: u64 = 25;

/// Facts about the machine the audit ran on.
#[derive(Debug, Clone, Serialize)]
pub struct MachineFacts {
    /// `uname -r`.
    pub kernel: String,
    /// CPU model name.
    pub cpu: String,
    /// Online CPUs.
    pub cpus: usize,
    /// L1 cache line in bytes (NET_SKB_PAD = max(32, line)).
    pub cache_line: usize,
    /// Where the cache line came from.
    pub cache_line_source: String,
    /// `bpftrace --version`.
    pub bpftrace: String,
}

/// The baseline burst (plain forwarding, no tunnel).
#[derive(Debug, Clone, Serialize)]
pub struct Baseline {
    /// The ingress variant it was measured with.
    pub ingress: Ingress,
    /// Frames sent.
    pub sent: u64,
    /// Its counters.
    pub counters: Counters,
    /// `pskb_expand_head` calls per packet without a tunnel (the sender's own).
    pub reallocs_per_packet: f64,
}

/// A complete audit.
#[derive(Debug, Clone, Serialize)]
pub struct AuditReport {
    /// Machine facts.
    pub machine: MachineFacts,
    /// Frames per configuration.
    pub count: u64,
    /// Agreement tolerance in reallocations per packet.
    pub tolerance: f64,
    /// The baseline of the first ingress variant run.
    pub baseline: Baseline,
    /// Every ingress variant's baseline, in run order (each variant's results subtract their own).
    pub baselines: Vec<Baseline>,
    /// One entry per ingress variant × mode × segments.
    pub results: Vec<ConfigResult>,
}

impl AuditReport {
    /// Whether every configuration agreed.
    pub fn all_agree(&self) -> bool {
        self.results.iter().all(|r| r.verdict == Verdict::Agree)
    }

    /// Count of each verdict: (agree, disagree, inconclusive).
    pub fn tally(&self) -> (usize, usize, usize) {
        let n = |v| self.results.iter().filter(|r| r.verdict == v).count();
        (
            n(Verdict::Agree),
            n(Verdict::Disagree),
            n(Verdict::Inconclusive),
        )
    }
}

/// Parses `--modes`: a comma-separated list of seg6 modes, or `all`.
pub fn parse_modes(s: &str) -> Result<Vec<String>, String> {
    if s.trim() == "all" {
        return Ok(MODES.iter().map(|m| m.to_string()).collect());
    }
    let mut out: Vec<String> = Vec::new();
    for m in s.split(',').map(str::trim).filter(|m| !m.is_empty()) {
        if !MODES.contains(&m) {
            return Err(format!(
                "unknown seg6 mode '{m}' (valid: {}, or all)",
                MODES.join(", ")
            ));
        }
        if !out.iter().any(|x| x == m) {
            out.push(m.to_string());
        }
    }
    if out.is_empty() {
        return Err("no mode given".into());
    }
    Ok(out)
}

/// Parses `--segments`: `A..B` (inclusive), `A`, or a comma-separated mix (`1,4..6,13`); 1 ≤ n ≤ 120.
pub fn parse_segments(s: &str) -> Result<Vec<usize>, String> {
    // 120 keeps every mode (inline adds a slot, hdrlen ≤ 255) within the SRH limits.
    const MAX: usize = 120;
    let num = |t: &str| -> Result<usize, String> {
        let n: usize = t
            .trim()
            .parse()
            .map_err(|_| format!("'{t}' is not a segment count"))?;
        if (1..=MAX).contains(&n) {
            Ok(n)
        } else {
            Err(format!("segment count {n} out of range 1..{MAX}"))
        }
    };
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once("..") {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b.trim_start_matches('='))?);
                if a > b {
                    return Err(format!("empty range {part}"));
                }
                out.extend(a..=b);
            }
            None => out.push(num(part)?),
        }
    }
    out.sort_unstable();
    out.dedup();
    if out.is_empty() {
        return Err("no segment count given".into());
    }
    Ok(out)
}

/// Reads the machine facts (cache line from sysfs, else `CONFIG_X86_L1_CACHE_SHIFT` in /proc/config.gz, else
/// 64 with a note).
pub fn machine_facts() -> MachineFacts {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .ok()
    };
    let kernel = read("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into());
    let cpuinfo = read("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map_or_else(|| "unknown".into(), |(_, v)| v.trim().to_string());
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (cache_line, cache_line_source) = cache_line();
    let bpftrace = Command::new("bpftrace")
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    MachineFacts {
        kernel,
        cpu,
        cpus,
        cache_line,
        cache_line_source,
        bpftrace,
    }
}

fn cache_line() -> (usize, String) {
    let sysfs = "/sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size";
    if let Some(n) = std::fs::read_to_string(sysfs)
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
    {
        return (n, sysfs.into());
    }
    if let Ok(o) = Command::new("zcat").arg("/proc/config.gz").output() {
        let text = String::from_utf8_lossy(&o.stdout);
        if let Some(shift) = text
            .lines()
            .find_map(|l| l.strip_prefix("CONFIG_X86_L1_CACHE_SHIFT="))
            .and_then(|v| v.trim().parse::<u32>().ok())
            .filter(|s| *s < 12)
        {
            return (
                1 << shift,
                "CONFIG_X86_L1_CACHE_SHIFT in /proc/config.gz".into(),
            );
        }
    }
    (
        64,
        "assumed (not readable from sysfs or /proc/config.gz)".into(),
    )
}

/// The programs an audit runs, each with the Debian/Ubuntu package that provides it.
pub const TOOLS: &[(&str, &str)] = &[("bpftrace", "bpftrace"), ("ip", "iproute2")];

/// Checks that every program of [`TOOLS`] runs. When some do not, the error names them, their packages and the
/// command that installs them (the audit never installs anything itself).
pub fn check_tools() -> Result<(), String> {
    let runs = |prog: &str| {
        let arg = if prog == "ip" { "-V" } else { "--version" };
        Command::new(prog)
            .arg(arg)
            .stdin(std::process::Stdio::null())
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let missing: Vec<&(&str, &str)> = TOOLS.iter().filter(|(prog, _)| !runs(prog)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let progs: Vec<&str> = missing.iter().map(|(p, _)| *p).collect();
    let pkgs: Vec<&str> = missing.iter().map(|(_, p)| *p).collect();
    Err(format!(
        "missing {} (package{} {}): install with `apt-get install {}` (Debian/Ubuntu), then run the audit again",
        progs.join(", "),
        if pkgs.len() == 1 { "" } else { "s" },
        pkgs.join(", "),
        pkgs.join(" ")
    ))
}

/// Mounts tracefs on /sys/kernel/tracing when it is not mounted (bpftrace reads tracepoint formats there).
/// It is left mounted.
fn ensure_tracefs(log: &mut dyn FnMut(&str)) -> Result<(), String> {
    if Path::new("/sys/kernel/tracing/events").exists() {
        return Ok(());
    }
    log("mounting tracefs on /sys/kernel/tracing (left mounted)");
    let out = Command::new("mount")
        .args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"])
        .output();
    // Another process (a second audit, a test run in parallel) may have mounted it between the check and our
    // mount, which then fails with "busy": what matters is that it is mounted now.
    if Path::new("/sys/kernel/tracing/events").exists() {
        return Ok(());
    }
    let why = match out {
        Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_string(),
        Err(e) => e.to_string(),
    };
    Err(format!(
        "tracefs is not mounted on /sys/kernel/tracing and mounting it failed ({why}); \
         try: mount -t tracefs nodev /sys/kernel/tracing"
    ))
}

fn check_interrupt() -> Result<(), AuditError> {
    if sys::interrupted() {
        Err(AuditError::Interrupted)
    } else {
        Ok(())
    }
}

/// One burst to run.
struct Burst {
    ingress: Ingress,
    mode: Option<String>,
    segments: usize,
    route: Vec<String>,
    tid: u32,
    sent: u64,
}

/// Sends plain-forwarding bursts of 10 frames (their counts are ignored) until `ready` says so, at most 20 s.
fn warm_up(
    tb: &Testbed,
    frame: &[u8],
    tids: &mut Vec<u32>,
    ready: &dyn Fn(usize) -> bool,
) -> Result<(), AuditError> {
    tb.set_route(&testbed::plain_route())
        .map_err(AuditError::Failed)?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut sent = 0;
    while !ready(sent) {
        check_interrupt()?;
        if std::time::Instant::now() > deadline {
            return Err(AuditError::Failed(
                "bpftrace attached but its tracepoints never fired for the test traffic".into(),
            ));
        }
        let (tid, _) = tb.burst(frame, 10).map_err(AuditError::Failed)?;
        tids.push(tid);
        sent += 1;
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    Ok(())
}

/// Runs the audit. `log` receives progress messages (the CLI prints them on stderr).
pub fn run(opts: &AuditOptions, log: &mut dyn FnMut(&str)) -> Result<AuditReport, AuditError> {
    if sys::euid() != 0 {
        return Err(AuditError::NotRoot);
    }
    if opts.count == 0 {
        return Err(AuditError::Failed("--count must be at least 1".into()));
    }
    if opts.ingress.is_empty() {
        return Err(AuditError::Failed("no ingress variant given".into()));
    }
    sys::install_interrupt_handler()
        .map_err(|e| AuditError::Failed(format!("cannot install signal handlers: {e}")))?;
    testbed::remove_stale();
    check_tools().map_err(AuditError::Failed)?;
    ensure_tracefs(log).map_err(AuditError::Failed)?;
    check_interrupt()?;
    let machine = machine_facts();

    log("building the namespace testbed");
    let tb = Testbed::up(opts.keep).map_err(AuditError::Failed)?;
    if opts.keep {
        log(&format!(
            "--keep: namespaces {}, {}, {} will be left in place",
            tb.sender, tb.router, tb.receiver
        ));
    }
    check_interrupt()?;
    let kmalloc_node = Path::new("/sys/kernel/tracing/events/kmem/kmalloc_node").exists();
    log("starting bpftrace");
    let tracer =
        Tracer::start(&bpftrace::script(kmalloc_node), &sys::interrupted).map_err(|e| {
            if sys::interrupted() {
                AuditError::Interrupted
            } else {
                AuditError::Failed(e)
            }
        })?;

    let frame = testbed::burst_frame();
    // Warm-up bursts (plain forwarding, their counts are ignored) until every probe has fired once.
    let mut warmup_tids = Vec::new();
    warm_up(&tb, &frame, &mut warmup_tids, &|_| tracer.all_live())?;

    let mut bursts = Vec::new();
    for &ingress in &opts.ingress {
        let first = bursts.len();
        bursts.push(Burst {
            ingress,
            mode: None,
            segments: 0,
            route: testbed::plain_route(),
            tid: 0,
            sent: 0,
        });
        for mode in &opts.modes {
            for &n in &opts.segments {
                bursts.push(Burst {
                    ingress,
                    mode: Some(mode.clone()),
                    segments: n,
                    route: testbed::seg6_route(mode, n),
                    tid: 0,
                    sent: 0,
                });
            }
        }
        check_interrupt()?;
        let xdp = match ingress {
            Ingress::Plain => None,
            Ingress::Xdp => {
                log(&format!(
                    "attaching a native XDP_PASS program to {} in {}",
                    testbed::IF_R0,
                    tb.router
                ));
                let x = tb.attach_xdp_pass().map_err(AuditError::Failed)?;
                // A few frames through the new NAPI/page-pool path before counting (counts ignored).
                warm_up(&tb, &frame, &mut warmup_tids, &|n| n >= 3)?;
                Some(x)
            }
        };
        log(&format!(
            "{} ingress: sending {} bursts of {} frames (baseline + {} modes x {} segment counts)",
            ingress.name(),
            bursts.len() - first,
            opts.count,
            opts.modes.len(),
            opts.segments.len()
        ));
        for b in &mut bursts[first..] {
            check_interrupt()?;
            tb.set_route(&b.route).map_err(AuditError::Failed)?;
            std::thread::sleep(std::time::Duration::from_millis(opts.settle_ms));
            let (tid, sent) = tb.burst(&frame, opts.count).map_err(AuditError::Failed)?;
            b.tid = tid;
            b.sent = sent;
        }
        // Detach before the next variant (dropping the link closes it).
        drop(xdp);
    }
    // Everything ran synchronously in the sender threads; a short pause lets stray softirq work finish.
    std::thread::sleep(std::time::Duration::from_millis(100));
    check_interrupt()?;
    let output = tracer.stop().map_err(AuditError::Failed)?;
    drop(tb);
    let counters = bpftrace::parse_output(&output).map_err(AuditError::Failed)?;

    let mut tids: Vec<u32> = bursts.iter().map(|b| b.tid).collect();
    tids.sort_unstable();
    tids.dedup();
    if tids.len() != bursts.len() || bursts.iter().any(|b| warmup_tids.contains(&b.tid)) {
        return Err(AuditError::Failed(
            "two bursts ran on threads with the same id; cannot attribute the counts".into(),
        ));
    }

    let get = |tid: u32| counters.get(&tid).cloned().unwrap_or_default();
    let per_packet = |c: &Counters| {
        if c.router_in == 0 {
            0.0
        } else {
            c.reallocations() as f64 / c.router_in as f64
        }
    };
    let mut baselines: Vec<Baseline> = Vec::new();
    let mut results = Vec::new();
    for b in &bursts {
        let c = get(b.tid);
        let Some(mode) = b.mode.clone() else {
            if c.router_in == 0 {
                return Err(AuditError::Failed(format!(
                    "the {} baseline burst never reached the router in the sender's context: the tracepoints \
                     see nothing",
                    b.ingress.name()
                )));
            }
            baselines.push(Baseline {
                ingress: b.ingress,
                sent: b.sent,
                reallocs_per_packet: per_packet(&c),
                counters: c,
            });
            continue;
        };
        let base = baselines
            .iter()
            .find(|x| x.ingress == b.ingress)
            .map_or(0.0, |x| x.reallocs_per_packet);
        let l2 = mode.starts_with("l2");
        let overhead_measured = match (c.tx_len, c.rx_len) {
            // tx_len includes the outgoing Ethernet header, rx_len starts at the IPv6 header; the L2 modes also
            // carry the received Ethernet header, which the analyzer does not count as overhead.
            (Some(tx), Some(rx)) => tx.checked_sub(14 + rx + if l2 { 14 } else { 0 }),
            _ => None,
        };
        let ll_reserved = match (c.hard_header_len, c.needed_headroom) {
            (Some(h), Some(n)) => ll_reserved_space(h as usize, n as usize),
            _ => ll_reserved_space(14, 0),
        };
        let rx_headroom = c.rx_headroom_min;
        let reallocs = per_packet(&c);
        let net = reallocs - base;
        let predicted = rx_headroom.and_then(|h0| {
            let s = Scenario {
                proto: Proto::Seg6,
                mode: mode.clone(),
                size: b.segments,
                hmac: false,
                cache_line: machine.cache_line,
                rx_headroom: h0 as usize,
                mac_len: c.mac_len.map_or(14, |m| m as usize),
                ll_reserved,
                locally_generated: false,
            };
            headroom::predict(&s).ok().map(|p| Predicted {
                overhead_bytes: p.overhead_bytes,
                pre_fix: p.pre_fix,
                post_fix_warm: p.post_fix_warm,
                post_fix_first_packet: p.post_fix_first_packet,
            })
        });
        let obs = Observation {
            sent: b.sent,
            router_in: c.router_in,
            receiver_in: c.receiver_in,
            net_per_packet: net,
            overhead: overhead_measured,
        };
        let (verdict, mut note) = report::verdict(&obs, predicted.as_ref());
        if c.rx_headroom_min != c.rx_headroom_max {
            let extra = format!(
                "rx headroom varied {}..{}",
                c.rx_headroom_min.unwrap_or(0),
                c.rx_headroom_max.unwrap_or(0)
            );
            note = Some(note.map_or(extra.clone(), |n| format!("{n}; {extra}")));
        }
        results.push(ConfigResult {
            ingress: b.ingress,
            mode,
            segments: b.segments,
            route: b.route.join(" "),
            sent: b.sent,
            counters: c,
            overhead_measured,
            rx_headroom,
            ll_reserved,
            reallocs_per_packet: reallocs,
            net_per_packet: net,
            predicted,
            verdict,
            note,
        });
    }
    let Some(baseline) = baselines.first().cloned() else {
        return Err(AuditError::Failed("no baseline burst ran".into()));
    };
    Ok(AuditReport {
        machine,
        count: opts.count,
        tolerance: report::TOLERANCE,
        baseline,
        baselines,
        results,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_lists() {
        assert_eq!(
            parse_segments("1..20").unwrap(),
            (1..=20).collect::<Vec<_>>()
        );
        assert_eq!(parse_segments("13").unwrap(), vec![13]);
        assert_eq!(
            parse_segments("1,4..6, 13,4").unwrap(),
            vec![1, 4, 5, 6, 13]
        );
        assert_eq!(parse_segments("2..=3").unwrap(), vec![2, 3]);
        assert!(parse_segments("0").is_err());
        assert!(parse_segments("5..2").is_err());
        assert!(parse_segments("x").is_err());
        assert!(parse_segments("").is_err());
        assert!(parse_segments("1..999").is_err());
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_lists_never_panic(s in ".{0,60}") {
            let _ = parse_segments(&s);
            let _ = parse_modes(&s);
        }

        #[test]
        fn ranges_are_inclusive(a in 1usize..=120, b in 1usize..=120) {
            let (lo, hi) = (a.min(b), a.max(b));
            let v = parse_segments(&format!("{lo}..{hi}")).unwrap();
            proptest::prop_assert_eq!(v, (lo..=hi).collect::<Vec<_>>());
        }
    }

    #[test]
    fn ingress_variants() {
        assert_eq!(parse_ingress("plain").unwrap(), vec![Ingress::Plain]);
        assert_eq!(parse_ingress(" xdp ").unwrap(), vec![Ingress::Xdp]);
        assert_eq!(
            parse_ingress("both").unwrap(),
            vec![Ingress::Plain, Ingress::Xdp]
        );
        assert!(parse_ingress("").is_err());
        assert!(parse_ingress("XDP,plain").is_err());
        assert_eq!(Ingress::Xdp.name(), "xdp");
    }

    #[test]
    fn mode_lists() {
        assert_eq!(
            parse_modes("encap,encap.red").unwrap(),
            vec!["encap", "encap.red"]
        );
        assert_eq!(parse_modes("all").unwrap().len(), 5);
        assert!(parse_modes("encap,bogus").is_err());
        assert!(parse_modes("").is_err());
        assert_eq!(parse_modes("inline,inline").unwrap(), vec!["inline"]);
    }
}
