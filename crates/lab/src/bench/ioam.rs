//! The IOAM paper's experiments (its §3.2, Figs. 8–12), in memory on lwt6's real pipeline: the forwarding rate
//! with IOAM disabled, configured but unused, and in use; against the share of packets that carry a trace;
//! against the number of trace options and of namespaces per packet; and the time each node role (encapsulating,
//! transit, decapsulating) adds per packet. docs/BENCHMARKS.md (*IOAM domains*) has the figures beside the paper's.

use super::{BenchError, MAC_LEN, Options, Spread, frames, run_once};
use crate::bench::lines::{Panel, panels_svg};
pub use crate::bench::lines::{Series, line_svg};
use crate::csvfile::CsvError;
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

/// The columns of `ioam.csv`.
const HEADER: [&str; 7] = [
    "experiment",
    "label",
    "x",
    "mpps_median",
    "mpps_min",
    "mpps_max",
    "ns_per_packet",
];

/// CSV: `experiment,label,x,mpps_median,mpps_min,mpps_max,ns_per_packet`.
pub fn to_csv(points: &[IoamPoint]) -> String {
    crate::csvfile::write(
        &HEADER,
        points.iter().map(|p| {
            [
                p.experiment.to_string(),
                p.label.clone(),
                p.x.to_string(),
                format!("{:.4}", p.rate.median),
                format!("{:.4}", p.rate.min),
                format!("{:.4}", p.rate.max),
                format!("{:.1}", p.ns_per_packet()),
            ]
        }),
    )
}

/// The experiments a CSV row may name (what [`run`] writes).
const EXPERIMENTS: [&str; 8] = [
    "registration",
    "share",
    "options",
    "namespaces",
    "role-encap",
    "role-transit",
    "role-decap",
    "role-plain",
];

/// Parses [`to_csv`] output back into points (to re-plot without measuring again). Errors name the line and the
/// column (1-based) of the first field that is wrong.
pub fn from_csv(text: &str) -> Result<Vec<IoamPoint>, CsvError> {
    let t = crate::csvfile::read(text, None)?;
    if t.header != HEADER {
        return Err(CsvError {
            line: 1,
            column: None,
            message: format!(
                "expected the header '{}', found '{}'",
                HEADER.join(","),
                t.header.join(",")
            ),
        });
    }
    let mut v = Vec::new();
    for r in &t.rows {
        let f = &r.fields;
        let experiment = EXPERIMENTS
            .iter()
            .find(|e| **e == f[0])
            .ok_or_else(|| t.error(r, 0, format!("unknown experiment '{}'", f[0])))?;
        let rate = Spread {
            median: t.number(r, 3)?,
            min: t.number(r, 4)?,
            max: t.number(r, 5)?,
        };
        if rate.median <= 0.0 {
            return Err(t.error(r, 3, "a rate must be above 0"));
        }
        v.push(IoamPoint {
            experiment,
            label: f[1].clone(),
            x: t.number(r, 2)?,
            rate,
        });
    }
    Ok(v)
}

/// The plots of a run: `(file name, SVG)`.
pub fn plots(points: &[IoamPoint], footer: &str) -> Vec<(String, String)> {
    // Median and best run (the least disturbed of the runs, the guide on a busy machine: docs/BENCHMARKS.md).
    let series = |exp: &str, best: bool| -> Vec<(f64, f64)> {
        points
            .iter()
            .filter(|p| p.experiment == exp)
            .map(|p| (p.x, if best { p.rate.max } else { p.rate.median }))
            .collect()
    };
    let orange = "#ff7f0e";
    let ns = |exp: &str, plain: f64| -> Vec<(f64, f64)> {
        points
            .iter()
            .filter(|p| p.experiment == exp)
            .map(|p| (p.x, p.ns_per_packet() - plain))
            .collect()
    };
    let mut v = Vec::new();
    let blue = "#1f77b4";
    if !series("registration", false).is_empty() {
        v.push((
            "ioam-registration.svg".into(),
            line_svg(
                "IOAM disabled (0), configured but unused (1), in use (2)",
                "case",
                "Mpps (one core)",
                &[
                    ("median", blue, series("registration", false)),
                    ("best run", orange, series("registration", true)),
                ],
                false,
                footer,
            ),
        ));
    }
    // The shares run from 0.01 % to 100 %: evenly spaced, each labelled with its share (on a linear axis the
    // labels of 0 to 2 % would print over each other; a log axis has no place for 0 %).
    let share: Vec<&IoamPoint> = points.iter().filter(|p| p.experiment == "share").collect();
    let evenly = |best: bool| -> Vec<(f64, f64)> {
        let at = |(i, (_, y)): (usize, (f64, f64))| (i as f64, y);
        series("share", best)
            .into_iter()
            .enumerate()
            .map(at)
            .collect()
    };
    if !share.is_empty() {
        v.push((
            "ioam-share.svg".into(),
            panels_svg(
                &[Panel {
                    title: "Rate against the share of packets carrying IOAM",
                    xlabel: "packets with a trace (%)",
                    ylabel: "Mpps (one core)",
                    series: vec![
                        ("median", blue, evenly(false)),
                        ("best run", orange, evenly(true)),
                    ],
                    x_ticks: Some(
                        share
                            .iter()
                            .enumerate()
                            .map(|(i, p)| (i as f64, p.label.clone()))
                            .collect(),
                    ),
                    ..Panel::default()
                }],
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
        if !series(exp, false).is_empty() {
            v.push((
                format!("ioam-{exp}.svg"),
                line_svg(
                    title,
                    x,
                    "Mpps (one core)",
                    &[
                        ("median", blue, series(exp, false)),
                        ("best run", orange, series(exp, true)),
                    ],
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
                    ("transit", orange, ns("role-transit", p)),
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

    fn point(experiment: &'static str, label: &str, x: f64, median: f64) -> IoamPoint {
        IoamPoint {
            experiment,
            label: label.into(),
            x,
            rate: Spread {
                median,
                min: median / 2.0,
                max: median * 2.0,
            },
        }
    }

    #[test]
    fn csv_reads_back_what_it_wrote() {
        let pts = vec![
            point("share", "0.01%", 0.01, 12.5),
            point("options", "3", 3.0, 8.25),
            point("role-decap", "7", 7.0, 4.0),
        ];
        assert_eq!(from_csv(&to_csv(&pts)).unwrap(), pts);
    }

    /// The committed docs/plots/ioam.csv reads back and is written again byte for byte, but for the last digit of
    /// ns_per_packet: it is derived from the unrounded median, which the CSV keeps to 4 decimals only.
    #[test]
    fn the_committed_ioam_csv_is_rewritten_byte_for_byte() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/plots/ioam.csv");
        let text = std::fs::read_to_string(path).unwrap();
        let again = to_csv(&from_csv(&text).unwrap());
        assert_eq!(again.lines().count(), text.lines().count());
        for (a, b) in again.lines().zip(text.lines()) {
            let (a_head, a_ns) = a.rsplit_once(',').unwrap();
            let (b_head, b_ns) = b.rsplit_once(',').unwrap();
            assert_eq!(a_head, b_head);
            if let (Ok(x), Ok(y)) = (a_ns.parse::<f64>(), b_ns.parse::<f64>()) {
                assert!((x - y).abs() <= 0.11, "{a} / {b}");
            } else {
                assert_eq!(a_ns, b_ns);
            }
        }
    }

    #[test]
    fn csv_errors_name_line_and_column() {
        let head = "experiment,label,x,mpps_median,mpps_min,mpps_max,ns_per_packet\n";
        for (body, want) in [
            ("", "line 1: empty file"),
            ("a,b\n", "line 1: expected the header"),
            (
                "share,1%,1,2.0,1.0,3.0\n",
                "line 2: 6 fields, expected 7 (the header has 7)",
            ),
            (
                "share,1%,1,2.0,1.0,3.0,500\nshare,2%,x,2.0,1.0,3.0,500\n",
                "line 3, column 3 (x)",
            ),
            (
                "share,1%,1,-2.0,1.0,3.0,500\n",
                "line 2, column 4 (mpps_median)",
            ),
            (
                "share,1%,1,0,0,0,0\n",
                "line 2, column 4 (mpps_median): a rate must be above 0",
            ),
            (
                "shares,1%,1,2.0,1.0,3.0,500\n",
                "line 2, column 1 (experiment): unknown experiment 'shares'",
            ),
        ] {
            let text = if body.is_empty() || body.starts_with("a,b") {
                body.to_string()
            } else {
                format!("{head}{body}")
            };
            let e = from_csv(&text).unwrap_err().to_string();
            assert!(e.starts_with(want), "{body:?}: {e}");
        }
    }

    /// Fig. 9's shares (0.01 % .. 100 %) are evenly spaced and each labelled: ticks' x positions are distinct and
    /// at least 40 px apart (on the earlier linear axis 0, 0.01, 0.1, 1 and 2 % fell within 10 px).
    #[test]
    fn share_ticks_are_labelled_and_apart() {
        let shares = [
            "0%", "0.01%", "0.1%", "1%", "2%", "10%", "25%", "50%", "100%",
        ];
        let pts: Vec<IoamPoint> = shares
            .iter()
            .map(|l| point("share", l, l.trim_end_matches('%').parse().unwrap(), 10.0))
            .collect();
        let (_, svg) = plots(&pts, "f")
            .into_iter()
            .find(|(n, _)| n == "ioam-share.svg")
            .unwrap();
        let mut xs = Vec::new();
        for l in shares {
            let tag = format!(">{l}</text>");
            let at = svg
                .find(&tag)
                .unwrap_or_else(|| panic!("no tick labelled {l}"));
            let open = svg[..at].rfind("<text").unwrap();
            let attrs = &svg[open..at];
            let x0 = attrs.find(" x=\"").unwrap() + 4;
            let x: f64 = attrs[x0..x0 + attrs[x0..].find('"').unwrap()]
                .parse()
                .unwrap();
            xs.push(x);
        }
        assert!(xs.windows(2).all(|w| w[1] - w[0] >= 40.0), "{xs:?}");
    }
}
