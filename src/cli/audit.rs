//! `lwt6 audit`: measure the running kernel's seg6 reallocations and compare them with the analyzer.

use super::Failure;
use crate::audit::{self, AuditError, AuditOptions};
use clap::Args;
use std::io::Write;

/// Arguments of `lwt6 audit`.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// seg6 modes to measure, comma-separated (inline, encap, encap.red, l2encap, l2encap.red) or `all`.
    #[arg(long, default_value = "all")]
    pub modes: String,
    /// Segment counts: `A..B`, `N`, or a comma-separated mix such as `1,4..6,13`.
    #[arg(long, default_value = "1..20")]
    pub segments: String,
    /// Frames sent per configuration.
    #[arg(long, default_value_t = 1000, value_parser = crate::cli::within::<u64>(1, 10000000))]
    pub count: u64,
    /// Machine-readable JSON instead of the table.
    #[arg(short = 'j', long = "json")]
    pub json: bool,
    /// How the router's ingress receives the frames: `plain` (as AF_PACKET leaves them, 16 bytes of headroom),
    /// `xdp` (re-homed by a native XDP_PASS program on the router's ingress veth, 270 bytes), or `both`.
    #[arg(long, default_value = "both")]
    pub ingress: String,
    /// Milliseconds between installing each route and sending its burst, so that the route's dst cache is
    /// past the jiffy it was created in (0 also measures the cold-cache packets of that first jiffy).
    #[arg(long, default_value_t = audit::DEFAULT_SETTLE_MS, value_parser = crate::cli::within::<u64>(0, 600000))]
    pub settle_ms: u64,
    /// Keep the test namespaces afterwards (for inspection; remove with `ip netns del`).
    #[arg(long)]
    pub keep: bool,
}

/// Runs `lwt6 audit`.
pub fn run(args: AuditArgs) -> Result<(), Failure> {
    let modes =
        audit::parse_modes(&args.modes).map_err(|e| super::fail(format!("--modes: {e}")))?;
    let segments = audit::parse_segments(&args.segments)
        .map_err(|e| super::fail(format!("--segments: {e}")))?;
    let ingress =
        audit::parse_ingress(&args.ingress).map_err(|e| super::fail(format!("--ingress: {e}")))?;
    let opts = AuditOptions {
        ingress,
        modes,
        segments,
        count: args.count,
        keep: args.keep,
        settle_ms: args.settle_ms,
    };
    let mut log = |m: &str| super::stdio::warn(&format!("audit: {m}"));
    let report = match audit::run(&opts, &mut log) {
        Ok(r) => r,
        Err(AuditError::Interrupted) => {
            return Err(Failure {
                message: AuditError::Interrupted.to_string(),
                code: 130,
            });
        }
        Err(e) => return Err(super::fail(e.to_string())),
    };
    let mut out = std::io::stdout().lock();
    let written = if args.json {
        serde_json::to_string_pretty(&report)
            .map_err(|e| super::fail(format!("JSON: {e}")))
            .map(|s| writeln!(out, "{s}"))?
    } else {
        let m = &report.machine;
        let (agree, disagree, inconclusive) = report.tally();
        writeln!(
            out,
            "kernel {} | {} ({} CPUs) | cache line {} | {} frames per configuration",
            m.kernel, m.cpu, m.cpus, m.cache_line, report.count,
        )
        .and_then(|()| {
            for b in &report.baselines {
                writeln!(
                    out,
                    "{} ingress baseline (plain forwarding): {:.3} reallocations per packet, rx headroom {} at the \
                     network header",
                    b.ingress.name(),
                    b.reallocs_per_packet,
                    b.counters
                        .rx_headroom_min
                        .map_or_else(|| "-".to_string(), |h| h.to_string()),
                )?;
            }
            writeln!(out)
        })
        .and_then(|()| write!(out, "{}", audit::report::table(&report.results)))
        .and_then(|()| {
            writeln!(
                out,
                "\n{agree} agree, {disagree} disagree, {inconclusive} inconclusive \
                 (measured = pskb_expand_head per packet minus baseline; compared with the post-fix warm prediction, \
                 tolerance {})",
                report.tolerance
            )
        })
    };
    written.map_err(|e| super::stdio::lost(e, "the audit report"))?;
    if report.all_agree() {
        Ok(())
    } else {
        let (_, disagree, inconclusive) = report.tally();
        Err(super::fail(format!(
            "audit: {disagree} configuration(s) disagree, {inconclusive} inconclusive"
        )))
    }
}
