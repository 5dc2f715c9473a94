//! What the per-packet tracer (`lwt6_dataplane::trace`) costs: one family and size forwarded by lwt6 (its fast
//! path where the family has a plan) with no trace, with a trace armed whose filter no frame matches (every frame
//! then passes the tracer's out-of-line check before taking the fast path), and with every frame traced. The three
//! are measured interleaved, run by run, so that they see the same machine. (`lwt6 bench trace`; the instruction
//! counts, which do not depend on the load, are `scripts/bench-instructions-points.sh`.)

use super::{BenchError, Family, Options, Spread, Strategy, family_frames, router, run_once};
use lwt6_dataplane::trace::{Budget, MAX_FRAMES, TraceFilter, Tracer};
use std::sync::Arc;

/// The three rates of [`run`].
#[derive(Debug, Clone, PartialEq)]
pub struct TraceReport {
    /// Family measured.
    pub family: Family,
    /// Its size.
    pub size: usize,
    /// No trace.
    pub off: Spread,
    /// A trace armed whose filter matches no frame.
    pub armed: Spread,
    /// Every frame traced (runs of at most [`MAX_FRAMES`] frames, the most one trace records).
    pub traced: Spread,
    /// Frames per traced run.
    pub traced_packets: usize,
}

/// Measures the tracer's cost on `family` / `size` (see the module documentation).
pub fn run(family: Family, size: usize, opts: &Options) -> Result<TraceReport, BenchError> {
    let frames = family_frames(family, opts.frame_len, size);
    let mut r = router(family, size, Strategy::Lwt6, opts)?;
    // A destination no frame of the benchmark has.
    let nothing = TraceFilter {
        dst: Some("2001:db8::/32".parse().expect("prefix")),
        text: "dst 2001:db8::/32".into(),
        ..TraceFilter::default()
    };
    let traced_packets = opts.packets.min(MAX_FRAMES as usize);
    run_once(&mut r, &frames, opts.packets / 4);
    let (mut off, mut armed, mut traced) = (vec![], vec![], vec![]);
    for _ in 0..opts.runs.max(1) {
        r.worker.set_tracer(None);
        off.push(run_once(&mut r, &frames, opts.packets).0);
        let budget = Arc::new(Budget::new(u64::MAX));
        r.worker
            .set_tracer(Some(Tracer::new(nothing.clone(), budget, 0)));
        armed.push(run_once(&mut r, &frames, opts.packets).0);
        let budget = Arc::new(Budget::new(traced_packets as u64));
        r.worker
            .set_tracer(Some(Tracer::new(TraceFilter::default(), budget, 0)));
        traced.push(run_once(&mut r, &frames, traced_packets).0);
        let kept = r.worker.take_traces();
        if kept.is_empty() {
            return Err(BenchError::Dropped {
                family: family.name(),
                size,
                strategy: "lwt6 traced",
                dropped: 0,
                rx: traced_packets as u64,
                reasons: "no frame was traced".into(),
            });
        }
    }
    r.worker.set_tracer(None);
    if !r.worker.stats.balanced() {
        return Err(BenchError::Dropped {
            family: family.name(),
            size,
            strategy: "lwt6",
            dropped: r.worker.stats.dropped(),
            rx: r.worker.stats.rx,
            reasons: "counters do not balance".into(),
        });
    }
    Ok(TraceReport {
        family,
        size,
        off: Spread::of_pps(&off),
        armed: Spread::of_pps(&armed),
        traced: Spread::of_pps(&traced),
        traced_packets,
    })
}

impl TraceReport {
    /// The report as a Markdown table.
    pub fn table(&self) -> String {
        let row = |name: &str, s: &Spread| {
            format!(
                "| {name} | {:.3} | {:.3}–{:.3} | {:.1} |",
                s.median,
                s.min,
                s.max,
                1000.0 / s.median
            )
        };
        [
            format!("{} {}:\n", self.family.name(), self.size),
            "| lwt6 | Mpps (median) | min–max | ns/packet |".into(),
            "|---|---|---|---|".into(),
            row("trace off", &self.off),
            row("trace armed, no frame matching", &self.armed),
            row(
                &format!("every frame traced (runs of {})", self.traced_packets),
                &self.traced,
            ),
        ]
        .join("\n")
    }
}
