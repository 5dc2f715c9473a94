//! `clear stats`: the counters `show` prints start again from zero. The workers' counters are not touched (a
//! worker owns its counters and never waits for the control thread): the control thread keeps every worker's
//! report as it was at the clear, a baseline, and `show` prints the difference. Each report is a consistent
//! snapshot (received = sent + dropped + consumed + pending), so each difference is too — with one care: `pending`
//! is a level, not a count, so the frames pending at the clear are counted as received after it (they leave the
//! queue as sent or dropped after it).
//!
//! Not cleared: the OpenMetrics counters (`--metrics`: a Prometheus counter never goes down), the final counters
//! `lwt6 run` prints at exit (since the start), and the kernel's own counters (`ip -s link`, `ethtool -S`).

use crate::engine::WorkerReport;
use lwt6_dataplane::stats::{DropCounts, DropReason, Stats};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// The counters at the last `clear stats`.
#[derive(Debug, Clone, Default)]
pub struct Baseline {
    /// Each worker's report at the clear (none: never cleared).
    pub workers: Vec<WorkerReport>,
    /// The control thread's refused connections at the clear.
    pub refused: u64,
    /// When.
    pub at: Option<SystemTime>,
}

fn minus(a: u64, b: u64) -> u64 {
    a.saturating_sub(b)
}

fn minus_vec(a: &[u64], b: &[u64]) -> Vec<u64> {
    a.iter()
        .enumerate()
        .map(|(i, x)| minus(*x, b.get(i).copied().unwrap_or(0)))
        .collect()
}

/// `now` since `base`: every count minus its value at the clear; `pending` (a level) as it is now.
pub fn stats_since(now: &Stats, base: &Stats) -> Stats {
    let mut drops = DropCounts::default();
    for r in DropReason::ALL {
        let n = now.drops.get(r).copied().unwrap_or(0);
        let b = base.drops.get(r).copied().unwrap_or(0);
        drops.add(*r, minus(n, b));
    }
    let mut encapsulated = now.encapsulated;
    for (a, b) in encapsulated.0.iter_mut().zip(base.encapsulated.0) {
        *a = minus(*a, b);
    }
    let mut seg6local = now.seg6local.clone();
    for (a, b) in seg6local.iter_mut().zip(&base.seg6local) {
        a.packets = minus(a.packets, b.packets);
        a.bytes = minus(a.bytes, b.bytes);
        a.errors = minus(a.errors, b.errors);
    }
    let (i, j) = (&now.ioam, &base.ioam);
    let mut ioam = *i;
    ioam.foreign_stripped = minus(i.foreign_stripped, j.foreign_stripped);
    ioam.oversize_stripped = minus(i.oversize_stripped, j.oversize_stripped);
    ioam.removed = minus(i.removed, j.removed);
    ioam.decapsulated = minus(i.decapsulated, j.decapsulated);
    ioam.exported = minus(i.exported, j.exported);
    ioam.export_lost = minus(i.export_lost, j.export_lost);
    ioam.merged = minus(i.merged, j.merged);
    ioam.not_inserted = minus(i.not_inserted, j.not_inserted);
    Stats {
        // The frames pending at the clear leave the queue after it: counted as received after it.
        rx: minus(now.rx, base.rx) + base.pending,
        tx: minus(now.tx, base.tx),
        icmp_tx: minus(now.icmp_tx, base.icmp_tx),
        consumed: minus(now.consumed, base.consumed),
        pending: now.pending,
        solicit_tx: minus(now.solicit_tx, base.solicit_tx),
        icmp_limited: minus(now.icmp_limited, base.icmp_limited),
        drops,
        reallocs: minus(now.reallocs, base.reallocs),
        encapsulated,
        ioam_transit_filled: minus(now.ioam_transit_filled, base.ioam_transit_filled),
        fast_path: minus(now.fast_path, base.fast_path),
        seg6local,
        ioam,
    }
}

/// A worker's report since `base`.
pub fn report_since(now: &WorkerReport, base: &WorkerReport) -> WorkerReport {
    WorkerReport {
        stats: stats_since(&now.stats, &base.stats),
        rx_by_dev: minus_vec(&now.rx_by_dev, &base.rx_by_dev),
        tx_by_dev: minus_vec(&now.tx_by_dev, &base.tx_by_dev),
        overload_by_dev: minus_vec(&now.overload_by_dev, &base.overload_by_dev),
        tx_refused: minus(now.tx_refused, base.tx_refused),
        tx_unsent_at_stop: minus(now.tx_unsent_at_stop, base.tx_unsent_at_stop),
        port_errors: minus(now.port_errors, base.port_errors),
        last_error: (now.port_errors > base.port_errors)
            .then(|| now.last_error.clone())
            .flatten(),
    }
}

impl Baseline {
    /// The workers' `reports` and the control thread's `refused` as they are now.
    pub fn take(reports: &[Arc<Mutex<WorkerReport>>], refused: u64) -> Baseline {
        Baseline {
            workers: reports
                .iter()
                .map(|r| r.lock().map(|r| r.clone()).unwrap_or_default())
                .collect(),
            refused,
            at: Some(SystemTime::now()),
        }
    }

    /// Worker `i`'s report `now`, since the clear.
    pub fn since(&self, i: usize, now: &WorkerReport) -> WorkerReport {
        match self.workers.get(i) {
            Some(b) => report_since(now, b),
            None => now.clone(),
        }
    }
}

/// A time as seconds since the epoch (fractions kept), for `cleared_at`.
pub fn unix_seconds(t: SystemTime) -> f64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// `show stats`' line about the last clear: `counters since clear stats, T s ago`; nothing when never cleared.
pub fn since_text(b: &Baseline) -> String {
    match b.at.map(|t| t.elapsed().unwrap_or_default()) {
        Some(d) => format!("counters since clear stats, {:.1} s ago\n", d.as_secs_f64()),
        None => String::new(),
    }
}
