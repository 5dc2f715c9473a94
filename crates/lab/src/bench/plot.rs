//! Hand-written SVG plots in the style of the paper's Fig. 6: forwarding rate (Mpps) against tunnel size, one line
//! per buffer strategy, the plain IPv6 forwarding rate as a baseline; below it, reallocations per packet.
//! Plain `<text>` only (no fonts embedded), no dependencies.

use super::{Family, Point, Strategy, line_of, predicted_prefix_reallocs};
use std::fmt::Write as _;

const W: f64 = 760.0;
const H: f64 = 520.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 40.0;
const RATE_H: f64 = 300.0;
const GAP: f64 = 46.0;
const REALLOC_H: f64 = 80.0;

fn color(s: Strategy) -> (&'static str, &'static str) {
    match s {
        Strategy::PreFix => ("#d62728", ""),
        Strategy::PostFix => ("#1f77b4", ""),
        Strategy::Lwt6 => ("#2ca02c", ""),
        Strategy::Lwt6Tiny => ("#9467bd", "6,3"),
        Strategy::Lwt6General => ("#17becf", "2,2"),
        Strategy::Lwt6Memcpy => ("#ff7f0e", "8,2,2,2"),
    }
}

/// A "nice" tick step (1, 2 or 5 times a power of ten) giving about `n` ticks over `range`.
pub fn nice_step(range: f64, n: usize) -> f64 {
    if range <= 0.0 || !range.is_finite() {
        return 1.0;
    }
    let raw = range / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let m = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// `s` as SVG text (`&`, `<` and `>` escaped).
pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The plot of one family: rates of every strategy present in `points`, the `baseline` (Mpps) as a dashed line,
/// the sizes where Linux before the fix is predicted to reallocate twice shaded, and `command` in a footer.
pub fn family_svg(
    points: &[Point],
    family: Family,
    baseline: Option<(f64, &str)>,
    cache_line: usize,
    command: &str,
) -> String {
    let strategies: Vec<Strategy> = {
        let mut v: Vec<Strategy> = points
            .iter()
            .filter(|p| p.family == family)
            .map(|p| p.strategy)
            .collect();
        v.sort();
        v.dedup();
        v
    };
    let mine: Vec<&Point> = points.iter().filter(|p| p.family == family).collect();
    let xmin = mine.iter().map(|p| p.size).min().unwrap_or(0) as f64;
    let mut xmax = mine.iter().map(|p| p.size).max().unwrap_or(1) as f64;
    if xmax <= xmin {
        xmax = xmin + 1.0;
    }
    let ymax_data = mine
        .iter()
        .map(|p| p.rate.max)
        .chain(baseline.map(|b| b.0))
        .fold(0.0, f64::max);
    let ystep = nice_step(ymax_data * 1.08, 6);
    let ymax = ((ymax_data * 1.08) / ystep).ceil() * ystep;
    let rmax = mine
        .iter()
        .map(|p| p.reallocs_per_packet)
        .fold(2.0, f64::max)
        .ceil();
    let pw = W - LEFT - RIGHT;
    let xs = |x: f64| LEFT + (x - xmin) / (xmax - xmin) * pw;
    let ys = |y: f64| TOP + RATE_H - y / ymax * RATE_H;
    let rtop = TOP + RATE_H + GAP;
    let rs = |y: f64| rtop + REALLOC_H - y / rmax * REALLOC_H;

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let unit = family.size_unit();
    let _ = writeln!(
        s,
        r#"<text x="{}" y="20" font-size="14" text-anchor="middle">{} — forwarding rate vs size (lwt6 pipeline, in memory)</text>"#,
        LEFT + pw / 2.0,
        esc(&family.name())
    );
    // Predicted double-reallocation sizes (docs/references.md §5.2), shaded in both panels.
    let step = family.size_step() as f64;
    let l2 = matches!(
        family,
        Family::Seg6(super::Seg6ModeKey::L2Encap | super::Seg6ModeKey::L2EncapRed)
    );
    let hr = mine
        .iter()
        .find(|p| p.strategy == Strategy::PreFix)
        .map(|p| p.rx_headroom);
    let mut sizes: Vec<usize> = mine.iter().map(|p| p.size).collect();
    sizes.sort();
    sizes.dedup();
    if let Some(hr) = hr {
        for &x in &sizes {
            if predicted_prefix_reallocs(family, x, hr, cache_line)
                .is_some_and(|n| n >= 2 + u32::from(l2))
            {
                let x0 = xs((x as f64 - step / 2.0).max(xmin));
                let x1 = xs((x as f64 + step / 2.0).min(xmax));
                for (y0, h) in [(TOP, RATE_H), (rtop, REALLOC_H)] {
                    let _ = writeln!(
                        s,
                        r##"<rect x="{x0:.1}" y="{y0}" width="{:.1}" height="{h}" fill="#d62728" fill-opacity="0.10"/>"##,
                        x1 - x0
                    );
                }
            }
        }
    }
    // Axes and grids.
    for (y0, h) in [(TOP, RATE_H), (rtop, REALLOC_H)] {
        let _ = writeln!(
            s,
            r##"<rect x="{LEFT}" y="{y0}" width="{pw}" height="{h}" fill="none" stroke="#333"/>"##
        );
    }
    let mut y = 0.0;
    while y <= ymax + 1e-9 {
        let py = ys(y);
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + pw,
            LEFT - 6.0,
            py + 4.0,
            fmt_tick(y, ystep)
        );
        y += ystep;
    }
    let mut r = 0.0;
    while r <= rmax + 1e-9 {
        let py = rs(r);
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{r}</text>"##,
            LEFT + pw,
            LEFT - 6.0,
            py + 4.0
        );
        r += 1.0;
    }
    let xstep = nice_step(xmax - xmin, 10).max(step);
    let mut x = (xmin / xstep).ceil() * xstep;
    while x <= xmax + 1e-9 {
        let px = xs(x);
        for (y0, h) in [(TOP, RATE_H), (rtop, REALLOC_H)] {
            let _ = writeln!(
                s,
                r##"<line x1="{px:.1}" y1="{y0}" x2="{px:.1}" y2="{:.1}" stroke="#eee"/>"##,
                y0 + h
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{px:.1}" y="{:.1}" text-anchor="middle">{x}</text><text x="{px:.1}" y="{:.1}" text-anchor="middle">{x}</text>"#,
            TOP + RATE_H + 14.0,
            rtop + REALLOC_H + 14.0
        );
        x += xstep;
    }
    let _ = writeln!(
        s,
        r#"<text x="16" y="{:.1}" transform="rotate(-90 16 {:.1})" text-anchor="middle">Mpps (median, min–max bars)</text>"#,
        TOP + RATE_H / 2.0,
        TOP + RATE_H / 2.0
    );
    let _ = writeln!(
        s,
        r#"<text x="16" y="{:.1}" transform="rotate(-90 16 {:.1})" text-anchor="middle">reallocs/pkt</text>"#,
        rtop + REALLOC_H / 2.0,
        rtop + REALLOC_H / 2.0
    );
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        LEFT + pw / 2.0,
        rtop + REALLOC_H + 30.0,
        esc(unit)
    );
    // Baseline.
    if let Some((b, label)) = baseline {
        let py = ys(b);
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#555" stroke-dasharray="2,3"/>"##,
            LEFT + pw
        );
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" fill="#555">{}</text>"##,
            LEFT + pw + 6.0,
            py + 4.0,
            esc(label)
        );
    }
    // Lines.
    for (k, &st) in strategies.iter().enumerate() {
        let line = line_of(points, family, st);
        let (c, dash) = color(st);
        let dash_attr = if dash.is_empty() {
            String::new()
        } else {
            format!(r#" stroke-dasharray="{dash}""#)
        };
        let pts: Vec<String> = line
            .iter()
            .map(|p| format!("{:.1},{:.1}", xs(p.size as f64), ys(p.rate.median)))
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{c}" stroke-width="1.6"{dash_attr}/>"#,
            pts.join(" ")
        );
        for p in &line {
            let px = xs(p.size as f64);
            let _ = writeln!(
                s,
                r#"<line x1="{px:.1}" y1="{:.1}" x2="{px:.1}" y2="{:.1}" stroke="{c}" stroke-opacity="0.6"/><circle cx="{px:.1}" cy="{:.1}" r="1.8" fill="{c}"/>"#,
                ys(p.rate.min),
                ys(p.rate.max),
                ys(p.rate.median)
            );
        }
        let rp: Vec<String> = line
            .iter()
            .map(|p| format!("{:.1},{:.1}", xs(p.size as f64), rs(p.reallocs_per_packet)))
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{c}" stroke-width="1.4"{dash_attr} transform="translate(0 {:.1})"/>"#,
            rp.join(" "),
            -(k as f64) * 1.5
        );
        // Legend.
        let ly = TOP + 10.0 + 18.0 * k as f64;
        let lx = LEFT + pw + 10.0;
        let _ = writeln!(
            s,
            r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{c}" stroke-width="2"{dash_attr}/><text x="{}" y="{}">{}</text>"#,
            lx + 22.0,
            lx + 28.0,
            ly + 4.0,
            st.name()
        );
    }
    let ly = TOP + 10.0 + 18.0 * strategies.len() as f64;
    let lx = LEFT + pw + 10.0;
    if hr.is_some() && family.overhead(1).is_some() {
        let _ = writeln!(
            s,
            r##"<rect x="{lx}" y="{}" width="22" height="10" fill="#d62728" fill-opacity="0.10"/><text x="{}" y="{}">predicted 2 reallocs</text>"##,
            ly - 5.0,
            lx + 28.0,
            ly + 4.0
        );
    }
    let _ = writeln!(
        s,
        r##"<text x="8" y="{}" font-size="10" fill="#444">$ {}</text>"##,
        H - 8.0,
        esc(command)
    );
    s.push_str("</svg>\n");
    s
}

fn fmt_tick(y: f64, step: f64) -> String {
    if step >= 1.0 {
        format!("{y:.0}")
    } else if step >= 0.1 {
        format!("{y:.1}")
    } else {
        format!("{y:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Spread;

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(10.0, 5), 2.0);
        assert_eq!(nice_step(40.0, 10), 5.0);
        assert_eq!(nice_step(0.9, 6), 0.2);
        assert_eq!(nice_step(0.0, 6), 1.0);
    }

    #[test]
    fn svg_is_well_formed_enough() {
        let p = |size, strategy, mpps, r| Point {
            family: Family::Rpl,
            size,
            strategy,
            added: 0,
            rx_headroom: 192,
            rate: Spread {
                median: mpps,
                min: mpps * 0.9,
                max: mpps * 1.1,
            },
            reallocs_per_packet: r,
            runs_mpps: vec![mpps],
        };
        let pts = vec![
            p(1, Strategy::PreFix, 3.0, 1.0),
            p(2, Strategy::PreFix, 2.0, 2.0),
            p(1, Strategy::Lwt6, 9.0, 0.0),
            p(2, Strategy::Lwt6, 9.0, 0.0),
        ];
        let svg = family_svg(
            &pts,
            Family::Rpl,
            Some((10.0, "IPv6")),
            64,
            "lwt6 bench sweep <x>",
        );
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<polyline").count(), 4);
        assert!(svg.contains("&lt;x&gt;"));
    }
}
