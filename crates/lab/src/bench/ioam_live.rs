//! The IOAM paper's experiments (Figs. 8–12) live on the five-node testbed: reads the CSV that
//! scripts/bench-ioam-live.py writes (every round of every point), keeps the best of the rounds (rate: the highest
//! zero-loss rate; CPU: the least time per packet, node by node) and plots each experiment in two panels, the
//! zero-loss rate above and the lwt6 nodes' CPU time per packet below (the steadier of the two on a shared host).

use super::lines::{Panel, Series, panels_svg};

/// The columns the CSV must have (in any order; others are ignored).
pub const COLUMNS: [&str; 12] = [
    "round",
    "experiment",
    "label",
    "zero_loss_pps",
    "sender_max_pps",
    "sender_limited",
    "athos",
    "porthos",
    "aramis",
    "athos_cpu_ns",
    "porthos_cpu_ns",
    "aramis_cpu_ns",
];

/// The three routers of the testbed, in path order.
pub const NODES: [&str; 3] = ["athos", "porthos", "aramis"];

/// The experiments, in the paper's order (Figs. 8 to 12).
pub const EXPERIMENTS: [&str; 5] = ["registration", "share", "options", "namespaces", "roles"];

/// The roles experiment's rows that are not a baseline: `ROLE-N` (N namespaces), with the baseline each is taken
/// against and the lwt6 node whose CPU time it reads (None: every node is the kernel).
pub const ROLES: [(&str, &str, Option<usize>); 5] = [
    ("encap", "base-athos", Some(0)),
    ("transit", "base-porthos", Some(1)),
    ("kernel-transit", "base-kernel", None),
    ("decap", "base-aramis", Some(2)),
    ("kernel-carry", "base-kernel", None),
];

/// The roles experiment's baselines: each node forwarding plain frames (`base-kernel`: all three the kernel).
pub const ROLE_BASES: [&str; 4] = ["base-athos", "base-porthos", "base-aramis", "base-kernel"];

/// One row of the CSV: one round of one point.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveRow {
    /// The round (0, 1, ...).
    pub round: u32,
    /// One of [`EXPERIMENTS`].
    pub experiment: String,
    /// The point (`in-use`, `0.01%`, `3`, `transit-4`...).
    pub label: String,
    /// The zero-loss rate (packets/s).
    pub zero_loss_pps: f64,
    /// The sender's maximum rate (packets/s).
    pub sender_max_pps: f64,
    /// The sender was the limit: the zero-loss rate is only a lower bound.
    pub sender_limited: bool,
    /// What each node of [`NODES`] was: `lwt6` or `kernel`.
    pub nodes: [String; 3],
    /// Each lwt6 node's CPU time per packet (ns) at the fixed offered rate (None: the kernel, not measured).
    pub cpu_ns: [Option<f64>; 3],
}

/// The best of a point's rounds.
#[derive(Debug, Clone, PartialEq)]
pub struct LivePoint {
    /// The experiment.
    pub experiment: String,
    /// The point.
    pub label: String,
    /// The highest zero-loss rate of the rounds (packets/s).
    pub zero_loss_pps: f64,
    /// Whether the sender limited that round.
    pub sender_limited: bool,
    /// Each node's least CPU time per packet over the rounds (ns).
    pub cpu_ns: [Option<f64>; 3],
    /// Rounds of this point in the CSV.
    pub rounds: usize,
}

pub use crate::csvfile::CsvError;

/// Whether `label` names a point of the roles experiment: a baseline or `ROLE-N`, N ≥ 1.
fn role_label(label: &str) -> Option<(&str, Option<u32>)> {
    if ROLE_BASES.contains(&label) {
        return Some((label, None));
    }
    let (role, n) = label.rsplit_once('-')?;
    let n: u32 = n.parse().ok().filter(|&n| n >= 1)?;
    ROLES.iter().any(|r| r.0 == role).then_some((role, Some(n)))
}

/// Parses the CSV of scripts/bench-ioam-live.py.
pub fn parse_csv(text: &str) -> Result<Vec<LiveRow>, CsvError> {
    let t = crate::csvfile::read(text, None).map_err(|mut e| {
        if e.line == 1 && e.message.starts_with("empty file") {
            e.message = format!("empty file: expected the header {}", COLUMNS.join(","));
        }
        e
    })?;
    let mut at = [0usize; 12];
    for (k, c) in COLUMNS.iter().enumerate() {
        at[k] = t.column(c).ok_or_else(|| CsvError {
            line: 1,
            column: None,
            message: format!(
                "column '{c}' missing from the header (expected {})",
                COLUMNS.join(",")
            ),
        })?;
    }
    let mut rows = Vec::new();
    for r in &t.rows {
        let get = |k: usize| r.fields[at[k]].as_str();
        let bad = |k: usize, m: String| t.error(r, at[k], m);
        let num = |k: usize| t.number(r, at[k]);
        let round = get(0)
            .parse::<u32>()
            .map_err(|_| bad(0, format!("'{}' is not a round number", get(0))))?;
        let experiment = get(1);
        if !EXPERIMENTS.contains(&experiment) {
            return Err(bad(
                1,
                format!(
                    "unknown experiment '{experiment}' (expected one of {})",
                    EXPERIMENTS.join(", ")
                ),
            ));
        }
        let label = get(2);
        if label.is_empty() {
            return Err(bad(2, "empty label".into()));
        }
        if experiment == "roles" && role_label(label).is_none() {
            return Err(bad(
                2,
                format!(
                    "unknown roles point '{label}' (expected {} or ROLE-N, ROLE one of {})",
                    ROLE_BASES.join(", "),
                    ROLES.map(|r| r.0).join(", ")
                ),
            ));
        }
        let zero_loss_pps = num(3)?;
        let sender_max_pps = num(4)?;
        let sender_limited = match get(5) {
            "0" => false,
            "1" => true,
            v => return Err(bad(5, format!("'{v}' is neither 0 nor 1"))),
        };
        let mut nodes: [String; 3] = Default::default();
        let mut cpu_ns = [None; 3];
        for i in 0..3 {
            nodes[i] = match get(6 + i) {
                v @ ("lwt6" | "kernel") => v.to_string(),
                v => return Err(bad(6 + i, format!("'{v}' is neither lwt6 nor kernel"))),
            };
            if !get(9 + i).is_empty() {
                cpu_ns[i] = Some(num(9 + i)?);
            }
        }
        rows.push(LiveRow {
            round,
            experiment: experiment.to_string(),
            label: label.to_string(),
            zero_loss_pps,
            sender_max_pps,
            sender_limited,
            nodes,
            cpu_ns,
        });
    }
    if rows.is_empty() {
        let last = text.lines().count() as u64;
        return Err(CsvError {
            line: last + 1,
            column: None,
            message: "no data rows after the header".into(),
        });
    }
    Ok(rows)
}

/// The best of every point's rounds, points in the order they first appear: the highest zero-loss rate (with that
/// round's sender-limited flag) and, node by node, the least CPU time per packet.
pub fn best_of_rounds(rows: &[LiveRow]) -> Vec<LivePoint> {
    let mut out: Vec<LivePoint> = Vec::new();
    for r in rows {
        let i = match out
            .iter()
            .position(|p| p.experiment == r.experiment && p.label == r.label)
        {
            Some(i) => i,
            None => {
                out.push(LivePoint {
                    experiment: r.experiment.clone(),
                    label: r.label.clone(),
                    zero_loss_pps: r.zero_loss_pps,
                    sender_limited: r.sender_limited,
                    cpu_ns: [None; 3],
                    rounds: 0,
                });
                out.len() - 1
            }
        };
        let p = &mut out[i];
        p.rounds += 1;
        if r.zero_loss_pps > p.zero_loss_pps {
            p.zero_loss_pps = r.zero_loss_pps;
            p.sender_limited = r.sender_limited;
        }
        for (b, c) in p.cpu_ns.iter_mut().zip(r.cpu_ns) {
            *b = match (*b, c) {
                (Some(b), Some(c)) => Some(b.min(c)),
                (b, c) => b.or(c),
            };
        }
    }
    out
}

const COLOURS: [&str; 5] = ["#1f77b4", "#ff7f0e", "#9467bd", "#2ca02c", "#7f7f7f"];
const NODE_NAMES: [&str; 3] = ["Athos", "Porthos", "Aramis"];
const CPU_TITLE: &str = "CPU time of each lwt6 node per packet, at a fixed offered rate";

/// Fig. 8–11: the rate of the three nodes together and each lwt6 node's CPU time, one x position per point.
fn experiment_svg(points: &[&LivePoint], title: &str, xlabel: &str, footer: &str) -> String {
    let ticks: Vec<(f64, String)> = points
        .iter()
        .enumerate()
        .map(|(i, p)| (i as f64, p.label.clone()))
        .collect();
    let rate: Vec<(f64, f64)> = points
        .iter()
        .enumerate()
        .map(|(i, p)| (i as f64, p.zero_loss_pps / 1e3))
        .collect();
    let open = points
        .iter()
        .enumerate()
        .filter(|(_, p)| p.sender_limited)
        .map(|(i, _)| (0, i as f64))
        .collect();
    let cpu: Vec<Series<'_>> = (0..3)
        .map(|n| {
            let pts = points
                .iter()
                .enumerate()
                .filter_map(|(i, p)| p.cpu_ns[n].map(|c| (i as f64, c)))
                .collect();
            (NODE_NAMES[n], COLOURS[n], pts)
        })
        .filter(|s: &Series<'_>| !s.2.is_empty())
        .collect();
    panels_svg(
        &[
            Panel {
                title,
                xlabel,
                ylabel: "zero-loss kpps (3 nodes on 1 CPU)",
                series: vec![("zero-loss rate", COLOURS[0], rate)],
                x_ticks: Some(ticks.clone()),
                open,
                ..Panel::default()
            },
            Panel {
                title: CPU_TITLE,
                xlabel,
                ylabel: "CPU ns per packet",
                series: cpu,
                x_ticks: Some(ticks),
                ..Panel::default()
            },
        ],
        footer,
    )
}

/// Fig. 12: what each role adds per packet, from the rates (1/rate(role) − 1/rate(its baseline)) and from the
/// node's own CPU time (role − the same node forwarding plain frames), against the namespaces.
fn roles_svg(points: &[&LivePoint], footer: &str) -> String {
    let get = |label: &str| points.iter().find(|p| p.label == label);
    let mut ns: Vec<u32> = points
        .iter()
        .filter_map(|p| role_label(&p.label).and_then(|r| r.1))
        .collect();
    ns.sort_unstable();
    ns.dedup();
    let names = [
        "encap (lwt6)",
        "transit (lwt6)",
        "transit (kernel)",
        "decap (lwt6)",
        "kernel carrying",
    ];
    let mut rate = Vec::new();
    let mut open = Vec::new();
    let mut cpu = Vec::new();
    for (k, &(role, base, node)) in ROLES.iter().enumerate() {
        let mut r = Vec::new();
        let mut c = Vec::new();
        for &n in &ns {
            let (Some(p), Some(b)) = (get(&format!("{role}-{n}")), get(base)) else {
                continue;
            };
            let x = f64::from(n);
            if p.zero_loss_pps > 0.0 && b.zero_loss_pps > 0.0 {
                r.push((x, 1e9 / p.zero_loss_pps - 1e9 / b.zero_loss_pps));
                if p.sender_limited || b.sender_limited {
                    open.push((rate.len(), x));
                }
            }
            if let Some(i) = node
                && let (Some(v), Some(w)) = (p.cpu_ns[i], b.cpu_ns[i])
            {
                c.push((x, v - w));
            }
        }
        if !r.is_empty() {
            rate.push((names[k], COLOURS[k], r));
        }
        if !c.is_empty() {
            cpu.push((names[k], COLOURS[k], c));
        }
    }
    let ticks: Vec<(f64, String)> = ns.iter().map(|&n| (f64::from(n), n.to_string())).collect();
    panels_svg(
        &[
            Panel {
                title: "Fig. 12 live: time each role adds per packet, from the zero-loss rates",
                xlabel: "namespaces (one trace each)",
                ylabel: "ns/packet over plain (1/rate)",
                series: rate,
                x_ticks: Some(ticks.clone()),
                open,
                ..Panel::default()
            },
            Panel {
                title: "... and from the lwt6 node's own CPU time",
                xlabel: "namespaces (one trace each)",
                ylabel: "CPU ns/packet over plain",
                series: cpu,
                x_ticks: Some(ticks),
                ..Panel::default()
            },
        ],
        footer,
    )
}

/// The plots of a live run, `(file name, SVG)`: `ioam-live-{registration,share,options,namespaces,roles}.svg` for
/// each experiment in `points`. `command` (what made the plots) goes into each footer with the rounds.
pub fn plots(points: &[LivePoint], command: &str) -> Vec<(String, String)> {
    let rounds = points.iter().map(|p| p.rounds).max().unwrap_or(0);
    let footer = format!(
        "{command} (scripts/bench-ioam-live.py; best of {rounds} round{})",
        if rounds == 1 { "" } else { "s" }
    );
    let mut v = Vec::new();
    for exp in EXPERIMENTS {
        let pts: Vec<&LivePoint> = points.iter().filter(|p| p.experiment == exp).collect();
        if pts.is_empty() {
            continue;
        }
        let svg = match exp {
            "registration" => experiment_svg(
                &pts,
                "Fig. 8 live: IOAM disabled, configured but unused, in use",
                "case",
                &footer,
            ),
            "share" => experiment_svg(
                &pts,
                "Fig. 9 live: rate against the share of packets carrying a trace",
                "packets with a trace",
                &footer,
            ),
            "options" => experiment_svg(
                &pts,
                "Fig. 10 live: rate against trace options per packet",
                "trace options (one namespace)",
                &footer,
            ),
            "namespaces" => experiment_svg(
                &pts,
                "Fig. 11 live: rate against namespaces per packet",
                "namespaces (one trace each)",
                &footer,
            ),
            _ => roles_svg(&pts, &footer),
        };
        v.push((format!("ioam-live-{exp}.svg"), svg));
    }
    v
}
