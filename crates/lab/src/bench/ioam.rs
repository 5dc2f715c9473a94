//! The IOAM paper's experiments (its §3.2, Figs. 8–12), in memory on lwt6's real pipeline: the forwarding rate
//! with IOAM disabled, configured but unused, and in use; against the share of packets that carry a trace;
//! against the number of trace options and of namespaces per packet; and the time each node role (encapsulating,
//! transit, decapsulating) adds per packet. docs/BENCHMARKS.md (*IOAM domains*) has the figures beside the paper's.

use super::{BenchError, MAC_LEN, Options, Spread, frames, run_once};
pub use crate::bench::lines::{Series, line_svg};
use lwt6_config as config;
use lwt6_dataplane::router::Router;

/// One measured point.
#[derive(Debug, Clone, PartialEq)]
pub struct IoamPoint {
    /// Experiment: `registration`, `share`, `options`, `namespaces`, `role-encap`, `role-transit`, `role-decap`,
    /// `role-plain`.
    pub experiment: &'static str,
    /// What was varied, as a label (`in-use`, `0.01%`, `3`...).
    pub label: String,
    /// The same as a number (the x axis).
    pub x: f64,
    /// The rate.
    pub rate: Spread,
}

impl IoamPoint {
    /// Nanoseconds per packet at the median rate.
    pub fn ns_per_packet(&self) -> f64 {
        1000.0 / self.rate.median
    }
}

const BASE: &str = "link add r0 address 02:00:00:00:01:02\n\
                    link add r1 address 02:00:00:00:02:01\n\
                    addr add fd00:1::2/64 dev r0\n\
                    addr add fd00:2::1/64 dev r1\n\
                    neigh add fd00:1::1 lladdr 02:00:00:00:01:01 dev r0\n\
                    neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1\n";

/// IOAM registered on the node: namespaces 123.. (as many as `n`), node and interface ids, `ioam6_enabled` on the
/// ingress, and a domain of those namespaces whose only egress is `egress`.
fn registration(n: usize, egress: &str) -> String {
    let mut c = String::from(
        "sysctl net.ipv6.ioam6_id=0x111111\n\
         sysctl net.ipv6.conf.r0.ioam6_enabled=1\n\
         sysctl net.ipv6.conf.r0.ioam6_id=1\n\
         sysctl net.ipv6.conf.r1.ioam6_id=2\n",
    );
    let ns: Vec<String> = (0..n.max(1)).map(|i| (123 + i).to_string()).collect();
    for x in &ns {
        c += &format!("ioam namespace add {x} data 0xdeadbeef\n");
    }
    c += &format!(
        "ioam domain add lab namespace {} ingress r0 egress {egress}\n",
        ns.join(",")
    );
    c
}

/// Trace clauses: `n` options of type bit 0 with 8 bytes of room each, in namespaces `123 + i % namespaces`.
fn traces(n: usize, namespaces: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "trace prealloc type 0x800000 ns {} size 8",
                123 + i % namespaces.max(1)
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

const PLAIN: &str = "-6 route add fd00:99::/64 via fd00:2::2 dev r1\n";

fn inserting(freq: (u32, u32), n: usize, namespaces: usize) -> String {
    format!(
        "-6 route add fd00:99::/64 encap ioam6 mode inline freq {}/{} {} via fd00:2::2 dev r1\n",
        freq.0,
        freq.1,
        traces(n, namespaces)
    )
}

fn build(text: &str, what: &str) -> Result<Router, BenchError> {
    let cfg = config::parse(text).map_err(|e| BenchError::Config {
        family: "ioam6".into(),
        size: 0,
        reason: format!("{what}: {e}"),
    })?;
    Router::build(&cfg).map_err(|e| BenchError::Config {
        family: "ioam6".into(),
        size: 0,
        reason: format!("{what}: {e}"),
    })
}

/// Measures `router` on `frames` as the sweeps do (a warm-up, then `runs` runs), checking nothing is dropped.
fn measure(
    router: &mut Router,
    frames: &[Vec<u8>],
    opts: &Options,
    what: &str,
) -> Result<Spread, BenchError> {
    run_once(router, frames, opts.packets / 4);
    let mut v = Vec::new();
    for _ in 0..opts.runs.max(1) {
        v.push(run_once(router, frames, opts.packets).0);
    }
    let s = &router.worker.stats;
    if s.dropped() > 0 || s.tx == 0 {
        return Err(BenchError::Dropped {
            family: "ioam6".into(),
            size: 0,
            strategy: "lwt6",
            dropped: s.dropped(),
            rx: s.rx,
            reasons: format!("{what}: {:?}", s.drops),
        });
    }
    Ok(Spread::of_pps(&v))
}

/// The frames an inserting router sends for `base`, addressed back to r0 of the next router (which has the same
/// configuration base): input for the transit and decapsulating roles.
fn carried(inserter: &mut Router, base: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    inserter.process_batch(
        base.iter().map(|f| (0usize, 1u64, f.as_slice())),
        &mut |_, _, b| {
            let mut f = b.to_vec();
            f[..MAC_LEN - 2].copy_from_slice(&[2, 0, 0, 0, 1, 2, 2, 0, 0, 0, 1, 1]);
            out.push(f);
        },
    );
    out
}

/// Which experiments to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Experiment {
    /// Fig. 8: IOAM disabled, configured but unused, in use (every packet, one trace).
    Registration,
    /// Fig. 9: share of packets carrying a trace (`freq K/N`).
    Share,
    /// Fig. 10: 1 to 11 trace options in one namespace.
    Options,
    /// Fig. 11: 1 to 7 namespaces, one option each.
    Namespaces,
    /// Fig. 12: time added per packet by each node role, 1 to 7 namespaces.
    Roles,
}

impl Experiment {
    /// All of them, in the paper's order.
    pub const ALL: [Experiment; 5] = [
        Experiment::Registration,
        Experiment::Share,
        Experiment::Options,
        Experiment::Namespaces,
        Experiment::Roles,
    ];
}

/// A share of Fig. 9: its label, the percentage, and the route's `freq K/N` (None: a plain route).
pub type Share = (&'static str, f64, Option<(u32, u32)>);

/// The shares of Fig. 9, as `freq K/N` (0 % is a plain route).
pub const SHARES: [Share; 9] = [
    ("0%", 0.0, None),
    ("0.01%", 0.01, Some((1, 10_000))),
    ("0.1%", 0.1, Some((1, 1000))),
    ("1%", 1.0, Some((1, 100))),
    ("2%", 2.0, Some((1, 50))),
    ("10%", 10.0, Some((1, 10))),
    ("25%", 25.0, Some((1, 4))),
    ("50%", 50.0, Some((1, 2))),
    ("100%", 100.0, Some((1, 1))),
];

/// Runs the experiments; `progress` is told each point as it is measured.
pub fn run(
    which: &[Experiment],
    opts: &Options,
    progress: &mut dyn FnMut(&IoamPoint),
) -> Result<Vec<IoamPoint>, BenchError> {
    let base = frames(opts.frame_len);
    let mut out = Vec::new();
    let mut push = |p: IoamPoint, out: &mut Vec<IoamPoint>| {
        progress(&p);
        out.push(p);
    };
    for e in which {
        match e {
            Experiment::Registration => {
                let cases = [
                    ("disabled", format!("{BASE}{PLAIN}")),
                    (
                        "configured-unused",
                        format!("{BASE}{}{PLAIN}", registration(1, "r0,r1")),
                    ),
                    (
                        "in-use",
                        format!(
                            "{BASE}{}{}",
                            registration(1, "r0,r1"),
                            inserting((1, 1), 1, 1)
                        ),
                    ),
                ];
                for (i, (label, text)) in cases.iter().enumerate() {
                    let mut r = build(text, label)?;
                    let rate = measure(&mut r, &base, opts, label)?;
                    push(
                        IoamPoint {
                            experiment: "registration",
                            label: (*label).into(),
                            x: i as f64,
                            rate,
                        },
                        &mut out,
                    );
                }
            }
            Experiment::Share => {
                for (label, x, freq) in SHARES {
                    let route = freq.map_or(PLAIN.to_string(), |f| inserting(f, 1, 1));
                    let mut r =
                        build(&format!("{BASE}{}{route}", registration(1, "r0,r1")), label)?;
                    let rate = measure(&mut r, &base, opts, label)?;
                    push(
                        IoamPoint {
                            experiment: "share",
                            label: label.into(),
                            x,
                            rate,
                        },
                        &mut out,
                    );
                }
            }
            Experiment::Options | Experiment::Namespaces => {
                let (name, max) = if *e == Experiment::Options {
                    ("options", 11)
                } else {
                    ("namespaces", 7)
                };
                for n in 1..=max {
                    let ns = if *e == Experiment::Options { 1 } else { n };
                    let text = format!(
                        "{BASE}{}{}",
                        registration(ns, "r0,r1"),
                        inserting((1, 1), n, ns)
                    );
                    let mut r = build(&text, name)?;
                    let rate = measure(&mut r, &base, opts, name)?;
                    push(
                        IoamPoint {
                            experiment: name,
                            label: n.to_string(),
                            x: n as f64,
                            rate,
                        },
                        &mut out,
                    );
                }
            }
            Experiment::Roles => {
                let mut plain = build(
                    &format!("{BASE}{}{PLAIN}", registration(7, "r0,r1")),
                    "plain",
                )?;
                let rate = measure(&mut plain, &base, opts, "plain")?;
                push(
                    IoamPoint {
                        experiment: "role-plain",
                        label: "0".into(),
                        x: 0.0,
                        rate,
                    },
                    &mut out,
                );
                for n in 1..=7 {
                    // Encapsulating node: inserts n namespaces' traces.
                    let ins_text = format!(
                        "{BASE}{}{}",
                        registration(n, "r0,r1"),
                        inserting((1, 1), n, n)
                    );
                    let mut ins = build(&ins_text, "encap")?;
                    let carried = carried(&mut ins, &base);
                    let rate = measure(&mut ins, &base, opts, "encap")?;
                    push(
                        IoamPoint {
                            experiment: "role-encap",
                            label: n.to_string(),
                            x: n as f64,
                            rate,
                        },
                        &mut out,
                    );
                    // Transit node: fills every trace (r1 is an egress: nothing removed).
                    let mut tr = build(
                        &format!("{BASE}{}{PLAIN}", registration(n, "r0,r1")),
                        "transit",
                    )?;
                    let rate = measure(&mut tr, &carried, opts, "transit")?;
                    push(
                        IoamPoint {
                            experiment: "role-transit",
                            label: n.to_string(),
                            x: n as f64,
                            rate,
                        },
                        &mut out,
                    );
                    // Decapsulating node: fills, then removes the whole Hop-by-Hop header (r1 is no egress).
                    let mut de =
                        build(&format!("{BASE}{}{PLAIN}", registration(n, "r0")), "decap")?;
                    let rate = measure(&mut de, &carried, opts, "decap")?;
                    push(
                        IoamPoint {
                            experiment: "role-decap",
                            label: n.to_string(),
                            x: n as f64,
                            rate,
                        },
                        &mut out,
                    );
                }
            }
        }
    }
    Ok(out)
}

/// CSV: `experiment,label,x,mpps_median,mpps_min,mpps_max,ns_per_packet`.
pub fn to_csv(points: &[IoamPoint]) -> String {
    let mut s = String::from("experiment,label,x,mpps_median,mpps_min,mpps_max,ns_per_packet\n");
    for p in points {
        s += &format!(
            "{},{},{},{:.4},{:.4},{:.4},{:.1}\n",
            p.experiment,
            p.label,
            p.x,
            p.rate.median,
            p.rate.min,
            p.rate.max,
            p.ns_per_packet()
        );
    }
    s
}

/// The plots of a run: `(file name, SVG)`.
pub fn plots(points: &[IoamPoint], footer: &str) -> Vec<(String, String)> {
    let series = |exp: &str| -> Vec<(f64, f64)> {
        points
            .iter()
            .filter(|p| p.experiment == exp)
            .map(|p| (p.x, p.rate.median))
            .collect()
    };
    let ns = |exp: &str, plain: f64| -> Vec<(f64, f64)> {
        points
            .iter()
            .filter(|p| p.experiment == exp)
            .map(|p| (p.x, p.ns_per_packet() - plain))
            .collect()
    };
    let mut v = Vec::new();
    let blue = "#1f77b4";
    if !series("registration").is_empty() {
        v.push((
            "ioam-registration.svg".into(),
            line_svg(
                "IOAM disabled (0), configured but unused (1), in use (2)",
                "case",
                "Mpps (one core)",
                &[("lwt6", blue, series("registration"))],
                false,
                footer,
            ),
        ));
    }
    if !series("share").is_empty() {
        v.push((
            "ioam-share.svg".into(),
            line_svg(
                "Rate against the share of packets carrying IOAM",
                "packets with a trace (%)",
                "Mpps (one core)",
                &[("lwt6", blue, series("share"))],
                false,
                footer,
            ),
        ));
    }
    for (exp, title, x) in [
        (
            "options",
            "Rate against trace options per packet",
            "trace options",
        ),
        (
            "namespaces",
            "Rate against namespaces per packet",
            "namespaces",
        ),
    ] {
        if !series(exp).is_empty() {
            v.push((
                format!("ioam-{exp}.svg"),
                line_svg(
                    title,
                    x,
                    "Mpps (one core)",
                    &[("lwt6", blue, series(exp))],
                    false,
                    footer,
                ),
            ));
        }
    }
    if let Some(plain) = points.iter().find(|p| p.experiment == "role-plain") {
        let p = plain.ns_per_packet();
        v.push((
            "ioam-roles.svg".into(),
            line_svg(
                "Time added per packet by each node role",
                "namespaces",
                "ns per packet over plain forwarding",
                &[
                    ("encapsulating", blue, ns("role-encap", p)),
                    ("transit", "#ff7f0e", ns("role-transit", p)),
                    ("decapsulating", "#2ca02c", ns("role-decap", p)),
                ],
                false,
                footer,
            ),
        ));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_experiment_runs_and_forwards_everything() {
        let opts = Options {
            packets: 512,
            runs: 1,
            ..Options::default()
        };
        let mut n = 0;
        let pts = run(&Experiment::ALL, &opts, &mut |_| n += 1).unwrap();
        assert_eq!(pts.len(), n);
        assert_eq!(pts.len(), 3 + 9 + 11 + 7 + 1 + 3 * 7);
        let csv = to_csv(&pts);
        assert_eq!(csv.lines().count(), pts.len() + 1);
        let plots = plots(&pts, "test");
        assert_eq!(plots.len(), 5);
        assert!(
            plots
                .iter()
                .all(|(_, s)| s.starts_with("<svg") && s.ends_with("</svg>\n"))
        );
    }
}
