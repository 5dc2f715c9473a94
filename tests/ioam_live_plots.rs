//! `lwt6 bench ioam --plot-live CSV`: the live IOAM run's plots from a small hand-written CSV. The expected
//! figures are worked by hand from the CSV below (best of rounds: the highest rate, the least CPU time per node),
//! then read back from the SVGs through their own y-axis grid lines.
use lwt6::bench::ioam_live::{self, LivePoint};
use std::path::Path;
use std::process::{Command, Output};

#[path = "support/tmpdir.rs"]
mod tmpdir;

/// `lwt6 bench ioam --plot-live DIR/NAME --out-dir DIR`, with `csv` written to DIR/NAME first.
fn plot_live(dir: &Path, name: &str, csv: &str) -> Output {
    let f = dir.join(name);
    std::fs::write(&f, csv).unwrap();
    Command::new(env!("CARGO_BIN_EXE_lwt6"))
        .args(["bench", "ioam", "--plot-live"])
        .arg(&f)
        .arg("--out-dir")
        .arg(dir)
        .output()
        .unwrap()
}

const HEADER: &str = "round,experiment,label,zero_loss_pps,sender_max_pps,sender_limited,athos,porthos,aramis,\
                      athos_cpu_ns,porthos_cpu_ns,aramis_cpu_ns";

/// Two rounds of Fig. 8's three points, and of Fig. 12's encapsulating role at one namespace with its baseline
/// and the kernel transit node (sender-limited) with the all-kernel baseline.
fn small_csv() -> String {
    let rows = [
        "0,registration,disabled,100000,200000,0,lwt6,kernel,lwt6,5000,,4000",
        "0,registration,configured-unused,110000,200000,0,lwt6,kernel,lwt6,5200,,4100",
        "0,registration,in-use,90000,200000,0,lwt6,kernel,lwt6,6000,,4500",
        "0,roles,base-athos,200000,400000,0,lwt6,kernel,kernel,5000,,",
        "0,roles,base-kernel,250000,250000,1,kernel,kernel,kernel,,,",
        "0,roles,encap-1,100000,400000,0,lwt6,kernel,kernel,5400,,",
        "0,roles,kernel-transit-1,125000,125000,1,kernel,kernel,kernel,,,",
        "1,registration,disabled,120000,200000,0,lwt6,kernel,lwt6,5500,,3900",
        "1,registration,configured-unused,105000,200000,0,lwt6,kernel,lwt6,5100,,4200",
        "1,registration,in-use,80000,200000,0,lwt6,kernel,lwt6,5800,,4700",
        "1,roles,base-athos,250000,400000,0,lwt6,kernel,kernel,5100,,",
        "1,roles,base-kernel,200000,200000,1,kernel,kernel,kernel,,,",
        "1,roles,encap-1,125000,400000,0,lwt6,kernel,kernel,5300,,",
        "1,roles,kernel-transit-1,100000,100000,1,kernel,kernel,kernel,,,",
    ];
    format!("{HEADER}\n{}\n", rows.join("\n"))
}

fn point<'a>(pts: &'a [LivePoint], label: &str) -> &'a LivePoint {
    pts.iter()
        .find(|p| p.label == label)
        .unwrap_or_else(|| panic!("no point {label}"))
}

#[test]
fn best_of_rounds_takes_the_highest_rate_and_the_least_cpu_per_node() {
    let rows = ioam_live::parse_csv(&small_csv()).unwrap();
    assert_eq!(rows.len(), 14);
    let pts = ioam_live::best_of_rounds(&rows);
    assert_eq!(pts.len(), 7);
    // disabled: rates 100,000 and 120,000 → round 1's; Athos 5,000 (round 0) and 5,500 → 5,000; Aramis 4,000
    // and 3,900 (round 1) → 3,900: the two nodes' least come from different rounds.
    let d = point(&pts, "disabled");
    assert_eq!(d.zero_loss_pps, 120_000.0);
    assert_eq!(d.cpu_ns, [Some(5000.0), None, Some(3900.0)]);
    assert_eq!(d.rounds, 2);
    // in-use: 90,000 (round 0) beats 80,000; Athos 5,800 (round 1), Aramis 4,500 (round 0).
    let u = point(&pts, "in-use");
    assert_eq!(u.zero_loss_pps, 90_000.0);
    assert_eq!(u.cpu_ns, [Some(5800.0), None, Some(4500.0)]);
    let c = point(&pts, "configured-unused");
    assert_eq!(c.zero_loss_pps, 110_000.0);
    assert_eq!(c.cpu_ns, [Some(5100.0), None, Some(4100.0)]);
    // The all-kernel points keep the sender-limited flag of their best round.
    assert!(point(&pts, "base-kernel").sender_limited);
    assert!(!point(&pts, "encap-1").sender_limited);
}

/// Checks that `svg` is well-formed XML as far as these plots go: every tag closed in order, attribute values
/// quoted, no stray `<`, `>` or `&` in text.
fn assert_well_formed(name: &str, svg: &str) {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = svg;
    while let Some(i) = rest.find(['<', '>', '&']) {
        match rest.as_bytes()[i] {
            b'>' => panic!("{name}: stray '>' in text"),
            b'&' => {
                let ent = &rest[i..];
                assert!(
                    ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"]
                        .iter()
                        .any(|e| ent.starts_with(e)),
                    "{name}: bare '&'"
                );
                rest = &rest[i + 1..];
                continue;
            }
            _ => {}
        }
        let end = rest[i..].find('>').expect("unclosed tag") + i;
        let tag = &rest[i + 1..end];
        assert!(!tag.contains('<'), "{name}: '<' inside a tag: {tag}");
        assert_eq!(
            tag.matches('"').count() % 2,
            0,
            "{name}: unbalanced quotes: {tag}"
        );
        if let Some(close) = tag.strip_prefix('/') {
            assert_eq!(
                stack.pop().as_deref(),
                Some(close),
                "{name}: </{close}> out of order"
            );
        } else if !tag.ends_with('/') {
            let el = tag.split_whitespace().next().expect("empty tag");
            stack.push(el.to_string());
        }
        rest = &rest[end + 1..];
    }
    assert!(stack.is_empty(), "{name}: unclosed {stack:?}");
    assert!(rest.trim().is_empty());
}

fn raw_attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    tag[at..].split('"').next()
}

fn attr(tag: &str, name: &str) -> Option<f64> {
    raw_attr(tag, name)?.parse().ok()
}

fn text_of(line: &str) -> &str {
    line.rsplit("\">")
        .next()
        .unwrap()
        .trim_end_matches("</text>")
}

/// One panel of a plot (from its title to the next): the values of its filled and open circles, read through
/// the panel's own grid lines (each `<line>` followed by its `<text>` value), and its x tick labels.
struct Panel {
    points: Vec<(f64, f64, bool)>,
    ticks: Vec<String>,
}

fn panels(svg: &str) -> Vec<Panel> {
    svg.split("font-size=\"15\">")
        .skip(1)
        .map(|part| {
            let mut grid = Vec::new();
            let mut points = Vec::new();
            let mut ticks = Vec::new();
            for line in part.lines() {
                if line.starts_with("<line x1=\"70\"") && line.contains("text-anchor=\"end\"") {
                    grid.push((
                        attr(line, "y1").unwrap(),
                        text_of(line).parse::<f64>().unwrap(),
                    ));
                } else if line.starts_with("<circle") && attr(line, "cx").is_some_and(|x| x < 560.5)
                {
                    let (x, y) = (attr(line, "cx").unwrap(), attr(line, "cy").unwrap());
                    points.push((x, y, line.contains("fill=\"white\"")));
                } else if line.starts_with("<text")
                    && line.contains("text-anchor=\"middle\"")
                    && raw_attr(line, "x").is_some_and(|x| x.contains('.'))
                {
                    // The x ticks (their x has a decimal; the axis title's has none).
                    ticks.push(text_of(line).to_string());
                }
            }
            assert!(grid.len() >= 2, "a panel has at least two grid lines");
            let ((y0, v0), (y1, v1)) = (grid[0], grid[1]);
            let value = |y: f64| v0 + (y - y0) * (v1 - v0) / (y1 - y0);
            Panel {
                points: points
                    .into_iter()
                    .map(|(x, y, open)| (x, value(y), open))
                    .collect(),
                ticks,
            }
        })
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    // The SVG's coordinates have one decimal: a tenth of a pixel is under 1 % of these axes.
    (a - b).abs() <= 0.01 * b.abs().max(1.0)
}

#[test]
fn plots_from_a_small_csv() {
    let dir = tmpdir::TmpDir::new("ioam-live", "plots");
    let out = plot_live(&dir, "small.csv", &small_csv());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Only the experiments in the CSV are plotted.
    assert!(!dir.join("ioam-live-share.svg").exists());
    let read = |n: &str| {
        let s = std::fs::read_to_string(dir.join(n)).unwrap();
        assert_well_formed(n, &s);
        assert!(s.contains("lwt6 bench ioam --plot-live"), "{n}: footer");
        assert!(s.contains("best of 2 rounds"), "{n}: footer");
        s
    };
    let reg = panels(&read("ioam-live-registration.svg"));
    assert_eq!(reg.len(), 2);
    // One point per label, in the CSV's order, at the best rate (kpps) and the least CPU.
    assert_eq!(reg[0].ticks, ["disabled", "configured-unused", "in-use"]);
    let rates: Vec<f64> = reg[0].points.iter().map(|p| p.1).collect();
    assert_eq!(rates.len(), 3);
    for (got, want) in rates.iter().zip([120.0, 110.0, 90.0]) {
        assert!(close(*got, want), "rate {got} kpps, expected {want}");
    }
    // The CPU panel: Athos's three points, then Aramis's (Porthos is the kernel: no series).
    let cpu: Vec<f64> = reg[1].points.iter().map(|p| p.1).collect();
    assert_eq!(cpu.len(), 6);
    for (got, want) in cpu
        .iter()
        .zip([5000.0, 5100.0, 5800.0, 3900.0, 4100.0, 4500.0])
    {
        assert!(close(*got, want), "CPU {got} ns, expected {want}");
    }
    // Fig. 12: encap-1 adds 1e9/125,000 − 1e9/250,000 = 8,000 − 4,000 = 4,000 ns by rate, 5,300 − 5,000 = 300 ns
    // of CPU; the kernel transit node 1e9/125,000 − 1e9/250,000 = 4,000 ns too, sender-limited (open circle).
    let roles = panels(&read("ioam-live-roles.svg"));
    assert_eq!(roles.len(), 2);
    assert_eq!(roles[0].ticks, ["1"]);
    let by_rate: Vec<(f64, bool)> = roles[0].points.iter().map(|p| (p.1, p.2)).collect();
    assert_eq!(by_rate.len(), 2, "{by_rate:?}");
    assert!(close(by_rate[0].0, 4000.0) && !by_rate[0].1, "{by_rate:?}");
    assert!(close(by_rate[1].0, 4000.0) && by_rate[1].1, "{by_rate:?}");
    assert_eq!(roles[1].points.len(), 1);
    assert!(close(roles[1].points[0].1, 300.0), "{:?}", roles[1].points);
}

fn plot_error(csv: &str) -> String {
    let dir = tmpdir::TmpDir::new("ioam-live", &format!("bad-{}", csv.len()));
    let out = plot_live(&dir, "bad.csv", csv);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "{csv:?} was accepted");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        !dir.join("ioam-live-registration.svg").exists(),
        "no plot from a bad CSV"
    );
    err
}

#[test]
fn malformed_csv_errors_name_the_line_and_column() {
    let good = small_csv();
    let lines: Vec<&str> = good.lines().collect();
    assert!(plot_error("").contains("line 1: empty file"));
    assert!(plot_error(&format!("{HEADER}\n")).contains("line 2: no data rows"));
    // A missing column, named.
    let no_zero = HEADER.replace("zero_loss_pps,", "");
    assert!(plot_error(&format!("{no_zero}\n")).contains("line 1: column 'zero_loss_pps' missing"));
    // A non-numeric rate on line 3.
    let bad = good.replacen("110000", "fast", 1);
    let e = plot_error(&bad);
    assert!(
        e.contains("line 3, column 4 (zero_loss_pps): 'fast' is not a number"),
        "{e}"
    );
    // A CPU time that is not a number, on line 5.
    let bad = good.replacen(",5000,,\n", ",5x,,\n", 1);
    let e = plot_error(&bad);
    assert!(e.contains("line 5, column 10 (athos_cpu_ns): '5x'"), "{e}");
    // A short row, a bad flag, an unknown roles point, an unknown experiment.
    let e = plot_error(&format!("{}\n{}\n0,share,1%,1\n", lines[0], lines[1]));
    assert!(e.contains("line 3: 4 fields, expected 12"), "{e}");
    let e = plot_error(&good.replacen(",200000,0,", ",200000,yes,", 1));
    assert!(
        e.contains("line 2, column 6 (sender_limited): 'yes'"),
        "{e}"
    );
    let e = plot_error(&good.replacen("encap-1", "encap-x", 1));
    assert!(
        e.contains("line 7, column 3 (label): unknown roles point 'encap-x'"),
        "{e}"
    );
    let e = plot_error(&good.replacen("registration", "fig8", 1));
    assert!(
        e.contains("line 2, column 2 (experiment): unknown experiment 'fig8'"),
        "{e}"
    );
}
