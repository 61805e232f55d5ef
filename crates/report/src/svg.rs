//! Chart primitives drawn as plain SVG text: grouped bars, stacked bars and lines, with
//! "nice" axis ticks, optional log scales and a legend. No scripts, no fonts to fetch:
//! the same SVG is inlined in the HTML report and written as a standalone file. Every
//! label passes through `esc`.

use std::fmt::Write as _;

use crate::fmt::{esc, si};

/// Series colours (Okabe-Ito, readable by colour-blind readers), then greys.
pub const PALETTE: &[&str] = &[
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000",
    "#999999", "#666666",
];

pub fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

const W: f64 = 760.0;
const H: f64 = 380.0;
const ML: f64 = 78.0;
const MR: f64 = 24.0;
const MT: f64 = 58.0;

/// One bar series: a value per category (None: not measured, drawn as a gap with "n/a").
pub struct BarSeries {
    pub name: String,
    pub values: Vec<Option<f64>>,
    /// A warning mark above the bar (validity flags).
    pub warn: Vec<bool>,
}

/// One line series.
pub struct LineSeries {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Palette index (one colour per run when several runs are drawn).
    pub color: usize,
    /// Dash pattern index (0 solid): tells apart several series of one run.
    pub dash: usize,
}

const DASHES: &[&str] = &["", "7 3", "2 3", "9 3 2 3", "14 4", "4 4"];

fn dash_attr(i: usize) -> String {
    match DASHES[i % DASHES.len()] {
        "" => String::new(),
        d => format!(r#" stroke-dasharray="{d}""#),
    }
}

/// Legend of line series: a short stroke in the series' colour and dash pattern.
fn line_legend(out: &mut String, series: &[LineSeries], y: f64) {
    let names: Vec<String> = series.iter().map(|s| s.name.clone()).collect();
    let (pos, _) = legend_layout(&names);
    for (s, (x, row)) in series.iter().zip(pos) {
        let ty = y + 16.0 * row as f64;
        let _ = write!(
            out,
            r##"<line x1="{x:.1}" y1="{ly:.1}" x2="{x2:.1}" y2="{ly:.1}" stroke="{c}" stroke-width="2.5"{d}/><text x="{tx:.1}" y="{ty:.1}" fill="#333">{label}</text>"##,
            ly = ty - 4.0,
            x2 = x + 14.0,
            c = color(s.color),
            d = dash_attr(s.dash),
            tx = x + 18.0,
            label = esc(&s.name)
        );
    }
}

/// Round tick positions covering [lo, hi]. On an `integral` axis (a count: instances,
/// threads, clients) every tick is a whole number: no 1.2 instances between 1 and 2.
fn nice_ticks(lo: f64, hi: f64, target: usize, integral: bool) -> Vec<f64> {
    if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
        return vec![lo];
    }
    let raw = (hi - lo) / target.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let whole = |s: f64| !integral || (s >= 1.0 && s.fract() == 0.0);
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw && whole(*s))
        .unwrap_or(if integral {
            (10.0 * mag).max(1.0)
        } else {
            10.0 * mag
        });
    let start = (lo / step).floor() * step;
    let mut t = Vec::new();
    let mut v = start;
    // The last tick is the first at or above `hi`, so the axis always covers the data.
    for _ in 0..100 {
        if v >= lo - step * 1e-9 {
            t.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
        }
        if v >= hi - step * 1e-9 {
            break;
        }
        v += step;
    }
    t
}

/// Decade ticks for a log axis.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let mut t = Vec::new();
    let mut e = lo.log10().floor() as i32;
    while e <= hi.log10().ceil() as i32 && t.len() < 30 {
        for m in [1.0, 2.0, 5.0] {
            let v = m * 10f64.powi(e);
            if v >= lo * 0.999 && v <= hi * 1.001 {
                t.push(v);
            }
        }
        e += 1;
    }
    t
}

/// A new SVG document of the given size with its title drawn (for charts drawn elsewhere).
pub fn open_svg(title: &str, w: f64, h: f64) -> String {
    format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="{t}" font-family="Helvetica, Arial, sans-serif" font-size="12"><title>{t}</title><rect x="0" y="0" width="{w}" height="{h}" fill="#ffffff"/>{head}"##,
        t = esc(title),
        head = title_text(title, w)
    )
}

fn open(out: &mut String, title: &str, h: f64) {
    out.push_str(&open_svg(title, W, h));
}

/// Average glyph width of Helvetica/Arial, in ems (for sizing text without a font).
const EM_PER_CHAR: f64 = 0.56;
const TITLE_PX: f64 = 15.0;
const TITLE_MIN_PX: f64 = 10.0;

/// The chart's title, whole: at 15 px when it fits the width, else in a smaller font,
/// and below 10 px squeezed to the width (`textLength`) rather than cut at the edge,
/// because a chart whose title is cut no longer says what it shows.
fn title_text(title: &str, w: f64) -> String {
    let x = 12.0;
    let room = w - 2.0 * x;
    let chars = title.chars().count().max(1) as f64;
    // Rounded down to the 0.1 px written out, so the title drawn is no wider than `room`.
    let px = ((room / (chars * EM_PER_CHAR)) * 10.0).floor() / 10.0;
    let px = px.clamp(TITLE_MIN_PX, TITLE_PX);
    let squeeze = if chars * EM_PER_CHAR * px > room {
        format!(r#" textLength="{room:.0}" lengthAdjust="spacingAndGlyphs""#)
    } else {
        String::new()
    };
    format!(
        r##"<text class="title" x="{x}" y="20" font-size="{px:.1}" font-weight="bold" fill="#222"{squeeze}>{t}</text>"##,
        t = esc(title)
    )
}

/// Legend entries laid out left to right, wrapping onto new rows: (x, row) per name.
fn legend_layout(names: &[String]) -> (Vec<(f64, usize)>, usize) {
    let mut x = ML;
    let mut row = 0;
    let mut out = Vec::new();
    for n in names {
        let width = 22.0 + 6.4 * n.chars().count() as f64;
        if x + width > W - MR && x > ML {
            x = ML;
            row += 1;
        }
        out.push((x, row));
        x += width + 12.0;
    }
    (out, if names.is_empty() { 0 } else { row + 1 })
}

/// Extra height the legend needs beyond its first row.
fn legend_extra(names: &[String]) -> f64 {
    let (_, rows) = legend_layout(names);
    16.0 * rows.saturating_sub(1) as f64
}

fn legend(out: &mut String, names: &[String], y: f64) {
    let (pos, _) = legend_layout(names);
    for (i, (n, (x, row))) in names.iter().zip(pos).enumerate() {
        let ty = y + 16.0 * row as f64;
        let _ = write!(
            out,
            r##"<rect x="{x:.1}" y="{y0:.1}" width="12" height="12" fill="{c}"/><text x="{tx:.1}" y="{ty:.1}" fill="#333">{label}</text>"##,
            y0 = ty - 10.0,
            c = color(i),
            tx = x + 16.0,
            label = esc(n)
        );
    }
}

/// Grouped vertical bars: one group per category, one bar per series.
pub fn bar_chart(
    title: &str,
    y_label: &str,
    categories: &[String],
    series: &[BarSeries],
) -> String {
    let mb = if categories.iter().any(|c| c.chars().count() > 12) {
        96.0
    } else {
        48.0
    };
    let names: Vec<String> = series.iter().map(|s| s.name.clone()).collect();
    let extra = legend_extra(&names);
    let h = H + mb - 48.0 + extra;
    let mut out = String::new();
    open(&mut out, title, h);
    legend(&mut out, &names, 42.0);
    let max = series
        .iter()
        .flat_map(|s| s.values.iter().flatten())
        .fold(0.0f64, |a, b| a.max(*b));
    // A share's axis ends at 100% at most (100% bars drew an axis to 125).
    let share = y_label.starts_with('%') && max <= 100.0;
    let hi = match max * 1.08 {
        _ if max <= 0.0 => 1.0,
        hi if share => hi.min(100.0),
        hi => hi,
    };
    let ticks = nice_ticks(0.0, hi, 5, false);
    let top = *ticks.last().unwrap_or(&1.0);
    let (x0, x1, y0, y1) = (ML, W - MR, MT + extra, h - mb);
    let ys = |v: f64| y1 - (v / top) * (y1 - y0);
    axis_y(&mut out, &ticks, &ys, x0, x1, y_label, y0, y1);
    let nc = categories.len().max(1) as f64;
    let gw = (x1 - x0) / nc;
    let ns = series.len().max(1) as f64;
    let bw = (gw * 0.8 / ns).min(60.0);
    for (ci, cat) in categories.iter().enumerate() {
        let gx = x0 + gw * ci as f64 + (gw - bw * ns) / 2.0;
        for (si_, s) in series.iter().enumerate() {
            let x = gx + bw * si_ as f64;
            match s.values.get(ci).copied().flatten() {
                Some(v) => {
                    let y = ys(v.max(0.0));
                    let _ = write!(
                        out,
                        r#"<rect class="bar" x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{hh:.1}" fill="{c}"><title>{t}, {u}: {val}</title></rect>"#,
                        w = (bw - 2.0).max(1.0),
                        hh = (y1 - y).max(0.0),
                        c = color(si_),
                        t = esc(&format!("{} / {}", s.name, cat)),
                        u = esc(y_label),
                        val = esc(&crate::fmt::num(v))
                    );
                    if bw >= 26.0 {
                        let _ = write!(
                            out,
                            r##"<text x="{tx:.1}" y="{ty:.1}" text-anchor="middle" font-size="10" fill="#333">{v}</text>"##,
                            tx = x + bw / 2.0 - 1.0,
                            ty = y - 3.0,
                            v = esc(&si(v))
                        );
                    }
                    if s.warn.get(ci).copied().unwrap_or(false) {
                        let _ = write!(
                            out,
                            r##"<text x="{tx:.1}" y="{ty:.1}" text-anchor="middle" font-size="13" font-weight="bold" fill="#c0392b">&#9888;</text>"##,
                            tx = x + bw / 2.0 - 1.0,
                            ty = y - 15.0
                        );
                    }
                }
                None => {
                    let _ = write!(
                        out,
                        r##"<text x="{tx:.1}" y="{ty:.1}" text-anchor="middle" font-size="10" fill="#999">n/a</text>"##,
                        tx = x + bw / 2.0,
                        ty = y1 - 4.0
                    );
                }
            }
        }
        let cx = x0 + gw * (ci as f64 + 0.5);
        if mb > 48.0 {
            // Rotated labels run left from the bar: keep them inside the picture.
            let max_chars = ((cx / 6.0) as usize).clamp(8, 34);
            let cat: String = if cat.chars().count() > max_chars {
                format!("{}…", cat.chars().take(max_chars - 1).collect::<String>())
            } else {
                cat.clone()
            };
            let _ = write!(
                out,
                r##"<text x="{cx:.1}" y="{y:.1}" text-anchor="end" transform="rotate(-30 {cx:.1} {y:.1})" fill="#333">{l}</text>"##,
                y = y1 + 16.0,
                l = esc(&cat)
            );
        } else {
            let _ = write!(
                out,
                r##"<text x="{cx:.1}" y="{y:.1}" text-anchor="middle" fill="#333">{l}</text>"##,
                y = y1 + 18.0,
                l = esc(cat)
            );
        }
    }
    out.push_str("</svg>");
    out
}

#[allow(clippy::too_many_arguments)]
fn axis_y(
    out: &mut String,
    ticks: &[f64],
    ys: &dyn Fn(f64) -> f64,
    x0: f64,
    x1: f64,
    label: &str,
    y0: f64,
    y1: f64,
) {
    for t in ticks {
        let y = ys(*t);
        let _ = write!(
            out,
            r##"<line x1="{x0}" y1="{y:.1}" x2="{x1}" y2="{y:.1}" stroke="#e5e5e5"/><text x="{tx}" y="{ty:.1}" text-anchor="end" fill="#555">{v}</text>"##,
            tx = x0 - 6.0,
            ty = y + 4.0,
            v = esc(&si(*t))
        );
    }
    let _ = write!(
        out,
        r##"<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y1}" stroke="#888"/><line x1="{x0}" y1="{y1}" x2="{x1}" y2="{y1}" stroke="#888"/><text x="16" y="{my}" transform="rotate(-90 16 {my})" text-anchor="middle" fill="#333">{l}</text>"##,
        my = (y0 + y1) / 2.0,
        l = esc(label)
    );
}

/// Axis scale for line charts.
#[derive(Clone, Copy, PartialEq)]
pub enum Scale {
    Linear,
    Log,
    /// Percentile axis: x is a quantile in (0,1), drawn as -log10(1-q) ("nines").
    Nines,
}

/// An axis's label as drawn: a log axis says so, whoever chose the scale. The callers
/// pick log on their own (a sweep's y when its values span 30x, the percentile chart's
/// latency, RSA's signs/s) and their labels read as linear: "latency (us)" under ticks
/// 100, 1k, 10k.
fn axis_label(label: &str, scale: Scale) -> String {
    match scale {
        Scale::Log => format!("{label} (log scale)"),
        _ => label.to_string(),
    }
}

/// A quantile as a percentage, to the digits it has: 0.99999 is "99.999%" (100 * 0.99999
/// prints as 99.99900000000001).
fn percent(q: f64) -> String {
    let s = format!("{:.6}", 100.0 * q);
    format!("{}%", s.trim_end_matches('0').trim_end_matches('.'))
}

/// Lines with markers. `x_ticks_labels` overrides tick labels (e.g. percentiles).
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    x_scale: Scale,
    y_scale: Scale,
    series: &[LineSeries],
) -> String {
    line_chart_marked(title, x_label, y_label, x_scale, y_scale, series, &[], None)
}

/// The warnings on a line chart's points: per series (in `series` order), the x of each
/// flagged point with what flagged it (`other_load, shares_cpus`).
pub type PointMarks = Vec<Vec<(f64, String)>>;

/// [`line_chart`] whose flagged points are drawn hollow with a ⚠ above, the warnings'
/// codes in the point's tooltip, and `note` under the axis saying how many points carry
/// one (the exported SVG says so without the report's tables beside it). The caller says
/// it, as its caption does: it knows what a point is (the power chart draws each twice,
/// as W and as W above idle; counting markers here said "4 of 4" beside "2 of 2", review
/// H, 15).
#[allow(clippy::too_many_arguments)]
pub fn line_chart_marked(
    title: &str,
    x_label: &str,
    y_label: &str,
    x_scale: Scale,
    y_scale: Scale,
    series: &[LineSeries],
    marks: &[Vec<(f64, String)>],
    note: Option<&str>,
) -> String {
    let names: Vec<String> = series.iter().map(|s| s.name.clone()).collect();
    let extra = legend_extra(&names);
    let h = H + 10.0 + extra;
    let mut out = String::new();
    open(&mut out, title, h);
    line_legend(&mut out, series, 42.0);
    let (x0, x1, y0, y1) = (ML, W - MR, MT + extra, h - 52.0);
    let tx = |v: f64| -> f64 {
        match x_scale {
            Scale::Linear => v,
            Scale::Log => v.max(1e-12).log10(),
            Scale::Nines => -(1.0 - v.min(0.999_999_9)).log10(),
        }
    };
    let ty = |v: f64| -> f64 {
        match y_scale {
            Scale::Log => v.max(1e-12).log10(),
            _ => v,
        }
    };
    let pts: Vec<(f64, f64)> = series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .collect();
    if pts.is_empty() {
        out.push_str("</svg>");
        return out;
    }
    // Figures that are all whole numbers are counts (instances, threads): whole ticks.
    let whole_xs = pts.iter().all(|p| p.0.fract() == 0.0);
    let whole_ys = pts.iter().all(|p| p.1.fract() == 0.0);
    let (mut xmin, mut xmax) = pts
        .iter()
        .fold((f64::MAX, f64::MIN), |a, p| (a.0.min(p.0), a.1.max(p.0)));
    let (mut ymin, mut ymax) = pts
        .iter()
        .fold((f64::MAX, f64::MIN), |a, p| (a.0.min(p.1), a.1.max(p.1)));
    if y_scale == Scale::Linear {
        ymin = ymin.min(0.0);
        ymax *= 1.08;
    }
    if x_scale == Scale::Linear && xmin > 0.0 && xmin < 0.5 * xmax {
        xmin = 0.0;
    }
    if xmax <= xmin {
        xmax = xmin + 1.0;
        xmin -= 1.0;
    }
    if ymax <= ymin {
        ymax = ymin + 1.0;
    }
    let xticks: Vec<(f64, String)> = match x_scale {
        Scale::Linear => nice_ticks(xmin, xmax, 6, whole_xs)
            .into_iter()
            .map(|t| (t, si(t)))
            .collect(),
        Scale::Log => log_ticks(xmin, xmax)
            .into_iter()
            .map(|t| (t, si(t)))
            .collect(),
        Scale::Nines => [0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999, 0.999999]
            .iter()
            .filter(|q| **q <= xmax + 1e-12)
            .map(|q| (*q, percent(*q)))
            .collect(),
    };
    let xmin_t = match x_scale {
        Scale::Nines => tx(xmin.min(0.5)),
        _ => tx(xmin),
    };
    let xmax_t = tx(xmax).max(xmin_t + 1e-9);
    let yticks: Vec<f64> = match y_scale {
        Scale::Log => {
            ymin = ymin.max(1e-12);
            let lo = 10f64.powf(ymin.log10().floor());
            let hi = 10f64.powf(ymax.log10().ceil());
            ymin = lo;
            ymax = hi;
            log_ticks(lo, hi)
        }
        _ => nice_ticks(ymin, ymax, 5, whole_ys),
    };
    if y_scale != Scale::Log {
        ymax = yticks.last().copied().unwrap_or(ymax).max(ymax);
    }
    let (ymin_t, ymax_t) = (ty(ymin), ty(ymax).max(ty(ymin) + 1e-9));
    let px = |v: f64| x0 + (tx(v) - xmin_t) / (xmax_t - xmin_t) * (x1 - x0);
    let py = |v: f64| y1 - (ty(v) - ymin_t) / (ymax_t - ymin_t) * (y1 - y0);
    axis_y(
        &mut out,
        &yticks,
        &py,
        x0,
        x1,
        &axis_label(y_label, y_scale),
        y0,
        y1,
    );
    for (t, l) in &xticks {
        let x = px(*t);
        let _ = write!(
            out,
            r##"<line x1="{x:.1}" y1="{y1}" x2="{x:.1}" y2="{y2}" stroke="#888"/><text x="{x:.1}" y="{ly}" text-anchor="middle" fill="#555">{l}</text>"##,
            y2 = y1 + 4.0,
            ly = y1 + 17.0,
            l = esc(l)
        );
    }
    let _ = write!(
        out,
        r##"<text x="{mx}" y="{ly}" text-anchor="middle" fill="#333">{l}</text>"##,
        mx = (x0 + x1) / 2.0,
        ly = y1 + 38.0,
        l = esc(&axis_label(x_label, x_scale))
    );
    for (si_, s) in series.iter().enumerate() {
        let mut pts = s.points.clone();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mark_of = |x: f64| -> Option<&String> {
            marks
                .get(si_)
                .and_then(|m| m.iter().find(|(mx, _)| *mx == x).map(|(_, w)| w))
        };
        let d: Vec<String> = pts
            .iter()
            .map(|(x, y)| format!("{:.1},{:.1}", px(*x), py(*y)))
            .collect();
        let _ = write!(
            out,
            r#"<polyline class="series" fill="none" stroke="{c}" stroke-width="2"{dash} points="{p}"><title>{t}</title></polyline>"#,
            c = color(s.color),
            dash = dash_attr(s.dash),
            p = d.join(" "),
            t = esc(&s.name)
        );
        for (x, y) in &pts {
            let warn = mark_of(*x);
            // Past 40 points the line alone is drawn; a flagged point keeps its marker.
            if pts.len() > 40 && warn.is_none() {
                continue;
            }
            let xv = if x_scale == Scale::Nines {
                percent(*x)
            } else {
                si(*x)
            };
            let (cx, cy) = (px(*x), py(*y));
            match warn {
                None => {
                    let _ = write!(
                        out,
                        r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="3" fill="{c}"><title>{t}: {xl} {xv}, {yl} {yv}</title></circle>"#,
                        c = color(s.color),
                        t = esc(&s.name),
                        xl = esc(x_label),
                        xv = esc(&xv),
                        yl = esc(y_label),
                        yv = esc(&si(*y))
                    );
                }
                Some(w) => {
                    let _ = write!(
                        out,
                        r##"<circle class="flagged" cx="{cx:.1}" cy="{cy:.1}" r="4" fill="#fff" stroke="{c}" stroke-width="2"><title>{t}: {xl} {xv}, {yl} {yv} &#9888; {w}</title></circle><text x="{cx:.1}" y="{ty:.1}" text-anchor="middle" font-size="11" fill="#c0392b">&#9888;</text>"##,
                        c = color(s.color),
                        t = esc(&s.name),
                        xl = esc(x_label),
                        xv = esc(&xv),
                        yl = esc(y_label),
                        yv = esc(&si(*y)),
                        w = esc(w),
                        ty = cy - 7.0
                    );
                }
            }
        }
    }
    if let Some(note) = note {
        let _ = write!(
            out,
            r##"<text x="{x0}" y="{ly}" fill="#c0392b" font-size="11">{t}</text>"##,
            ly = y1 + 50.0,
            t = esc(note)
        );
    }
    out.push_str("</svg>");
    out
}

/// What a line chart with flagged points says of them (in the SVG and its caption).
pub fn marked_points_note(flagged: usize, total: usize) -> String {
    format!(
        "\u{26a0} {flagged} of {total} point{} carr{} warnings (hollow markers; the tables say which)",
        if total == 1 { "" } else { "s" },
        if flagged == 1 { "ies" } else { "y" }
    )
}

/// One stacked bar: its label and the (component, value) segments, bottom first.
pub struct Stack {
    pub label: String,
    pub segments: Vec<(String, f64)>,
}

/// Stacked vertical bars on a 0..max axis (per-CPU %usr/%sys/%irq/%soft...).
pub fn stacked_chart(
    title: &str,
    y_label: &str,
    max: f64,
    stacks: &[Stack],
    colors: &[&str],
) -> String {
    let h = H + 10.0;
    let mut out = String::new();
    open(&mut out, title, h);
    let names: Vec<String> = stacks
        .first()
        .map(|s| s.segments.iter().map(|(n, _)| n.clone()).collect())
        .unwrap_or_default();
    // Legend with the stack's own colours.
    let mut x = ML;
    for (i, n) in names.iter().enumerate() {
        let _ = write!(
            out,
            r##"<rect x="{x}" y="32" width="12" height="12" fill="{c}"/><text x="{tx}" y="42" fill="#333">{l}</text>"##,
            c = colors[i % colors.len()],
            tx = x + 16.0,
            l = esc(n)
        );
        x += 30.0 + 7.0 * n.chars().count() as f64;
    }
    let (x0, x1, y0, y1) = (ML, W - MR, MT, h - 48.0);
    let ticks = nice_ticks(0.0, max, 5, false);
    let top = ticks.last().copied().unwrap_or(max).max(max);
    let ys = |v: f64| y1 - (v / top) * (y1 - y0);
    axis_y(&mut out, &ticks, &ys, x0, x1, y_label, y0, y1);
    let n = stacks.len().max(1) as f64;
    let gw = (x1 - x0) / n;
    let bw = (gw * 0.7).min(48.0);
    let step = (stacks.len() / 24).max(1);
    for (i, s) in stacks.iter().enumerate() {
        let bx = x0 + gw * i as f64 + (gw - bw) / 2.0;
        let mut acc = 0.0;
        for (j, (name, v)) in s.segments.iter().enumerate() {
            if *v <= 0.0 {
                continue;
            }
            let ya = ys(acc + v);
            let yb = ys(acc);
            let _ = write!(
                out,
                r#"<rect class="seg" x="{bx:.1}" y="{ya:.1}" width="{bw:.1}" height="{hh:.1}" fill="{c}"><title>{t}, {u}: {v:.1}</title></rect>"#,
                hh = (yb - ya).max(0.0),
                c = colors[j % colors.len()],
                t = esc(&format!("{} {name}", s.label)),
                u = esc(y_label)
            );
            acc += v;
        }
        if i % step == 0 {
            let _ = write!(
                out,
                r##"<text x="{cx:.1}" y="{y:.1}" text-anchor="middle" fill="#333">{l}</text>"##,
                cx = bx + bw / 2.0,
                y = y1 + 16.0,
                l = esc(&s.label)
            );
        }
    }
    let _ = write!(
        out,
        r##"<text x="{mx}" y="{ly}" text-anchor="middle" fill="#333">CPU</text>"##,
        mx = (x0 + x1) / 2.0,
        ly = y1 + 34.0
    );
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        assert_eq!(
            nice_ticks(0.0, 10.0, 5, false),
            vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
        );
        assert_eq!(nice_ticks(1.0, 2.0, 6, false)[1], 1.2);
        // A count's axis: whole ticks only, 2.5 skipped for 5.
        assert_eq!(nice_ticks(1.0, 2.0, 6, true), vec![1.0, 2.0]);
        assert_eq!(nice_ticks(0.0, 14.0, 6, true), vec![0.0, 5.0, 10.0, 15.0]);
        assert_eq!(
            log_ticks(1.0, 100.0),
            vec![1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]
        );
    }

    /// The width a title takes as drawn: its font size times its length, or the squeezed
    /// `textLength`.
    fn drawn_width(svg: &str) -> (f64, f64) {
        let t = &svg[svg.find(r#"<text class="title""#).unwrap()..];
        let attr = |name: &str| {
            t.find(&format!(r#" {name}=""#)).map(|i| {
                let v = &t[i + name.len() + 3..];
                v[..v.find('"').unwrap()].parse::<f64>().unwrap()
            })
        };
        let px = attr("font-size").unwrap();
        (px, attr("textLength").unwrap_or(f64::MAX))
    }

    #[test]
    fn long_titles_fit_the_chart() {
        let short = bar_chart("kv: ops/s per test", "ops/s", &[], &[]);
        assert_eq!(drawn_width(&short).0, 15.0);
        let long =
            "kv: latency by percentile (service) for a report of sixteen runs with long labels, at their best points";
        let svg = bar_chart(long, "ops/s", &[], &[]);
        let (px, _) = drawn_width(&svg);
        assert!(px < 15.0, "smaller font for a long title: {px}");
        let chars = long.chars().count() as f64;
        assert!(chars * EM_PER_CHAR * px <= W - 24.0 + 0.5);
        let very_long = long.repeat(3);
        let (px, len) = drawn_width(&bar_chart(&very_long, "", &[], &[]));
        assert_eq!(px, TITLE_MIN_PX);
        assert!(len <= W - 24.0, "squeezed to the width");
        assert!(svg.contains(long), "never cut");
    }

    #[test]
    fn percentile_ticks_read_as_written() {
        let svg = line_chart(
            "kv: latency by percentile",
            "percentile",
            "latency (us)",
            Scale::Nines,
            Scale::Log,
            &[LineSeries {
                name: "get".into(),
                points: vec![(0.5, 100.0), (0.999999, 3000.0)],
                color: 0,
                dash: 0,
            }],
        );
        for l in ["50%", "99.9%", "99.999%", "99.9999%"] {
            assert!(svg.contains(&format!(">{l}<")), "{l} in {svg}");
        }
        // Each point says its percentile too, and each figure what it is (acceptance L,
        // 4: "50%, 372" beside an axis in us).
        assert!(
            svg.contains("get: percentile 99.9999%, latency (us) 3k"),
            "{svg}"
        );
        assert!(!svg.contains("0000000"), "{svg}");
        assert_eq!(percent(0.995), "99.5%");
        assert_eq!(percent(0.75), "75%");
    }

    /// The percentile chart's y ("latency (us)") and a sweep's x drawn on log scales were
    /// labelled as if linear; a linear axis keeps its label as given.
    #[test]
    fn log_axes_say_so() {
        let series = [LineSeries {
            name: "get".into(),
            points: vec![(1.0, 100.0), (64.0, 3000.0)],
            color: 0,
            dash: 0,
        }];
        let svg = line_chart("t", "pipeline", "ops/s", Scale::Log, Scale::Log, &series);
        assert!(svg.contains(">pipeline (log scale)<"), "{svg}");
        assert!(svg.contains(">ops/s (log scale)<"), "{svg}");
        let svg = line_chart(
            "t",
            "pipeline",
            "ops/s",
            Scale::Linear,
            Scale::Linear,
            &series,
        );
        assert!(
            svg.contains(">pipeline<") && svg.contains(">ops/s<"),
            "{svg}"
        );
        assert!(!svg.contains("log scale"), "{svg}");
    }

    /// An instances sweep of 1 and 2 is drawn on ticks 1 and 2, not 1.2, 1.4...
    #[test]
    fn count_axes_have_whole_ticks() {
        let svg = line_chart(
            "kv: ops/s vs instances",
            "instances",
            "ops/s",
            Scale::Linear,
            Scale::Linear,
            &[LineSeries {
                name: "get".into(),
                points: vec![(1.0, 100_000.5), (2.0, 190_000.25)],
                color: 0,
                dash: 0,
            }],
        );
        let xs: Vec<&str> = svg
            .split(r##"text-anchor="middle" fill="#555">"##)
            .skip(1)
            .map(|t| &t[..t.find('<').unwrap()])
            .collect();
        assert_eq!(xs, ["1", "2"], "{svg}");
    }

    /// A share's axis ends at 100 (bars of 100% drew it to 125); another's past its top.
    #[test]
    fn a_shares_axis_ends_at_100() {
        let bars = |y: &str| {
            bar_chart(
                "t",
                y,
                &["a".to_string()],
                &[BarSeries {
                    name: "s".into(),
                    values: vec![Some(100.0)],
                    warn: vec![false],
                }],
            )
        };
        let share = bars("% of operations");
        assert!(
            share.contains(">100<") && !share.contains(">125<"),
            "{share}"
        );
        assert!(bars("ops/s").contains(">125<"));
    }

    #[test]
    fn labels_are_escaped() {
        let s = bar_chart(
            "<b>t</b>",
            "y",
            &["<script>".to_string()],
            &[BarSeries {
                name: "a&b".into(),
                values: vec![Some(1.0)],
                warn: vec![true],
            }],
        );
        assert!(!s.contains("<script>") && !s.contains("<b>"));
        assert!(s.contains("&lt;script&gt;") && s.contains("a&amp;b"));
    }
}
