//! Line plots (hand-written SVG, plain `<text>`, no dependencies) of the IOAM experiments: one panel
//! ([`line_svg`], the in-memory plots) or several panels stacked under one footer ([`panels_svg`], the live plots:
//! the zero-loss rate above, each node's CPU time per packet below).

use crate::bench::plot::{esc, nice_step};

/// A plotted series: its name, colour and points (x, y).
pub type Series<'a> = (&'a str, &'a str, Vec<(f64, f64)>);

/// One panel of a figure: a title above it, axis titles, its series and how the x axis is labelled.
#[derive(Debug, Clone, Default)]
pub struct Panel<'a> {
    /// The panel's title (the first panel's is the figure's title).
    pub title: &'a str,
    /// The x axis title.
    pub xlabel: &'a str,
    /// The y axis title.
    pub ylabel: &'a str,
    /// The lines.
    pub series: Vec<Series<'a>>,
    /// A logarithmic x axis.
    pub log_x: bool,
    /// The x ticks as (x, label); `None`: a tick at every x of the first series, labelled with the number.
    pub x_ticks: Option<Vec<(f64, String)>>,
    /// Points drawn as open circles, as (series index, x): values that are only bounds (a sender-limited rate).
    pub open: Vec<(usize, f64)>,
}

const W: f64 = 720.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 160.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 70.0;
/// The plot area's height of a lone panel, and of each of several.
const ONE_H: f64 = 310.0;
const MANY_H: f64 = 230.0;
/// From the bottom of one panel's x axis title to the next panel's plot area.
const GAP: f64 = 76.0;

/// A line plot (SVG) of `series` (name, colour, points (x, y)), with axis titles and a footer.
pub fn line_svg(
    title: &str,
    xlabel: &str,
    ylabel: &str,
    series: &[Series<'_>],
    log_x: bool,
    footer: &str,
) -> String {
    panels_svg(
        &[Panel {
            title,
            xlabel,
            ylabel,
            series: series.to_vec(),
            log_x,
            ..Panel::default()
        }],
        footer,
    )
}

/// `panels` stacked from top to bottom in one SVG, each with its title, axes and legend, and `footer` (the
/// command that made it) at the bottom.
pub fn panels_svg(panels: &[Panel<'_>], footer: &str) -> String {
    let ph = if panels.len() > 1 { MANY_H } else { ONE_H };
    let n = panels.len().max(1) as f64;
    let h = TOP + n * ph + (n - 1.0) * (BOTTOM + GAP - 40.0) + BOTTOM;
    let mut o = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{h}\" font-family=\"sans-serif\" \
         font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    for (i, p) in panels.iter().enumerate() {
        let t = TOP + i as f64 * (ph + BOTTOM + GAP - 40.0);
        panel(&mut o, p, t, ph);
    }
    o += &format!(
        "<text x=\"{LEFT}\" y=\"{}\" font-size=\"10\" fill=\"#555\">{}</text>\n</svg>\n",
        h - 10.0,
        esc(footer)
    );
    o
}

/// One panel whose plot area spans `t` to `t + ph`.
fn panel(o: &mut String, p: &Panel<'_>, t: f64, ph: f64) {
    let (w, l, r) = (W, LEFT, RIGHT);
    let yb = t + ph;
    let fx = |x: f64| if p.log_x { (x.max(0.001)).log10() } else { x };
    let all: Vec<(f64, f64)> = p
        .series
        .iter()
        .flat_map(|s| s.2.iter().map(|&(x, y)| (fx(x), y)))
        .chain(p.x_ticks.iter().flatten().map(|&(x, _)| (fx(x), 0.0)))
        .collect();
    let xmin = all.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let mut xmax = all.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
    if xmax.partial_cmp(&xmin) != Some(std::cmp::Ordering::Greater) {
        xmax = xmin + 1.0;
    }
    let ymax = all.iter().map(|p| p.1).fold(0.0, f64::max).max(1e-9) * 1.1;
    let low = all.iter().map(|p| p.1).fold(0.0, f64::min) * 1.1;
    let step = nice_step(ymax - low, 6);
    // Below zero: the axis starts at a whole step under the least value.
    let ymin = if low < 0.0 {
        (low / step).floor() * step
    } else {
        0.0
    };
    let px = |x: f64| l + (fx(x) - xmin) / (xmax - xmin) * (w - l - r);
    let py = |y: f64| yb - (y - ymin) / (ymax - ymin) * ph;
    *o += &format!(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"15\">{}</text>\n",
        w / 2.0,
        t - 18.0,
        esc(p.title)
    );
    let mut y = ymin;
    while y <= ymax + 1e-9 {
        let (x2, yy, tx, ty, v) = (
            w - r,
            py(y),
            l - 6.0,
            py(y) + 4.0,
            (y * 1000.0).round() / 1000.0 + 0.0,
        );
        let stroke = if ymin < 0.0 && y.abs() < step / 2.0 {
            "#888"
        } else {
            "#ddd"
        };
        *o += &format!(
            "<line x1=\"{l}\" x2=\"{x2}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"{stroke}\"/>\
             <text x=\"{tx}\" y=\"{ty:.1}\" text-anchor=\"end\">{v}</text>\n"
        );
        y += step;
    }
    let ticks: Vec<(f64, String)> = match &p.x_ticks {
        Some(t) => t.clone(),
        // At the data's x values (those of the first series).
        None => p
            .series
            .first()
            .map(|s| s.2.iter().map(|&(x, _)| (x, x.to_string())).collect())
            .unwrap_or_default(),
    };
    for (x, label) in &ticks {
        *o += &format!(
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
            px(*x),
            yb + 16.0,
            esc(label)
        );
    }
    let (x2, cx, ly, my) = (w - r, (l + w - r) / 2.0, yb + 36.0, (t + yb) / 2.0);
    let (xl, yl) = (esc(p.xlabel), esc(p.ylabel));
    *o += &format!(
        "<line x1=\"{l}\" x2=\"{x2}\" y1=\"{yb}\" y2=\"{yb}\" stroke=\"black\"/>\
         <line x1=\"{l}\" x2=\"{l}\" y1=\"{t}\" y2=\"{yb}\" stroke=\"black\"/>\n\
         <text x=\"{cx}\" y=\"{ly}\" text-anchor=\"middle\">{xl}</text>\n\
         <text x=\"16\" y=\"{my}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {my})\">{yl}</text>\n"
    );
    for (i, (name, colour, pts)) in p.series.iter().enumerate() {
        let path: Vec<String> = pts
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        *o += &format!(
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/>\n",
            path.join(" ")
        );
        for &(x, y) in pts {
            if p.open.contains(&(i, x)) {
                *o += &format!(
                    "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"white\" stroke=\"{colour}\" \
                     stroke-width=\"2\"/>\n",
                    px(x),
                    py(y)
                );
            } else {
                *o += &format!(
                    "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{colour}\"/>\n",
                    px(x),
                    py(y)
                );
            }
        }
        let ly = t + 10.0 + 18.0 * i as f64;
        *o += &format!(
            "<line x1=\"{}\" x2=\"{}\" y1=\"{ly}\" y2=\"{ly}\" stroke=\"{colour}\" stroke-width=\"2\"/>\
             <text x=\"{}\" y=\"{}\">{}</text>\n",
            w - r + 10.0,
            w - r + 30.0,
            w - r + 34.0,
            ly + 4.0,
            esc(name)
        );
    }
    if !p.open.is_empty() {
        let ly = t + 10.0 + 18.0 * p.series.len() as f64;
        *o += &format!(
            "<circle cx=\"{}\" cy=\"{ly}\" r=\"4\" fill=\"white\" stroke=\"#555\" stroke-width=\"2\"/>\
             <text x=\"{}\" y=\"{}\">sender-limited</text>\n",
            w - r + 20.0,
            w - r + 34.0,
            ly + 4.0
        );
    }
}
