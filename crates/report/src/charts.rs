//! The report's charts, built from runs: bars per test and run, throughput against each
//! swept parameter, latency percentile curves and histogram buckets from the stored
//! HdrHistograms, the stacked per-CPU breakdown, power and perf/W, and power (W and W
//! above idle) against each swept parameter. Each chart is SVG text with a file name; a
//! chart that cannot be drawn is replaced by a note saying why.

use hdrhistogram::Histogram;
use model::RunRecord;

use crate::derive::{
    self, best_points, best_points_in, peak_params, points, run_labels, Point, PowerBasis,
};
use crate::selection::Selection;
use crate::svg::{self, BarSeries, LineSeries, Scale, Stack};

/// One chart (or the note that replaces it).
#[derive(Debug, Clone)]
pub struct Chart {
    /// `kv_bars.svg`.
    pub file: String,
    pub title: String,
    /// `results`, `sweep`, `latency`, `cpu`, `power`.
    pub section: String,
    pub workload: String,
    /// The SVG, or None with `note` saying why it is absent.
    pub svg: Option<String>,
    pub note: Option<String>,
}

pub(crate) fn slug(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    while out.contains("__") {
        out = out.replace("__", "_");
    }
    out.trim_matches('_').chars().take(60).collect()
}

/// Workloads present in these runs, in first-seen order.
pub fn workloads(runs: &[RunRecord]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in runs.iter().flat_map(|r| r.results.iter()) {
        if !out.contains(&r.workload) {
            out.push(r.workload.clone());
        }
    }
    out
}

/// The runs with only one workload's results (figures of different workloads never mix);
/// runs without a result of that workload are left out (no empty columns in its section).
pub fn only_workload(runs: &[RunRecord], wl: &str) -> Vec<RunRecord> {
    runs.iter()
        .filter(|r| r.results.iter().any(|x| x.workload == wl))
        .map(|r| {
            let mut r = r.clone();
            r.results.retain(|x| x.workload == wl);
            r
        })
        .collect()
}

/// Quantiles drawn on percentile curves, kept where the sample count supports them.
const QUANTILES: &[f64] = &[
    0.5, 0.75, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 0.9995, 0.9999, 0.99999, 0.999999,
];

/// (quantile, latency ns) pairs of a histogram, up to the last the count resolves.
pub fn percentile_curve(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    let n = h.len() as f64;
    QUANTILES
        .iter()
        .filter(|q| n * (1.0 - **q) >= 1.0)
        .map(|q| (*q, h.value_at_quantile(*q) as f64))
        .collect()
}

/// Bucket edges (ns) for a latency histogram view: 1-2-5 steps from below p1 to max.
pub fn bucket_edges(hs: &[&Histogram<u64>]) -> Vec<u64> {
    let lo = hs
        .iter()
        .map(|h| h.value_at_quantile(0.01))
        .min()
        .unwrap_or(1)
        .max(1);
    let hi = hs.iter().map(|h| h.max()).max().unwrap_or(1).max(lo + 1);
    let mut edges = Vec::new();
    let mut e = (lo as f64).log10().floor() as i32;
    while edges.len() < 40 {
        for m in [1u64, 2, 5] {
            let v = m * 10u64.pow(e.max(0) as u32);
            if v >= lo && !edges.contains(&v) && edges.last().is_none_or(|l| *l < hi) {
                edges.push(v);
            }
        }
        if edges.last().is_some_and(|l| *l >= hi) {
            break;
        }
        e += 1;
    }
    // Keep the buckets readable: at most ~12 edges.
    while edges.len() > 12 {
        edges = edges.into_iter().step_by(2).collect();
    }
    edges
}

/// The latency thresholds the runs' results stored, in ns, sorted, each once: typed or
/// the workload's default (`latency_thresholds` in `params` or `settings`), and those of
/// the stored shares (`latency_pct_over{over=...}`, for a result stored before settings
/// were kept). Results that stored different thresholds give them all (each row is
/// computed from the exact histograms, so every run has a figure at every threshold).
/// None when no result stored any: the table then takes 1-2-5 steps.
pub fn stored_thresholds(runs: &[RunRecord]) -> Option<Vec<u64>> {
    let mut ns: Vec<u64> = Vec::new();
    for r in runs.iter().flat_map(|r| &r.results) {
        if let Some(v) = r.setting("latency_thresholds") {
            let items: Vec<String> = match v {
                serde_json::Value::Array(a) => a.iter().map(crate::derive::param_str).collect(),
                other => crate::derive::param_str(other)
                    .split(',')
                    .map(str::to_string)
                    .collect(),
            };
            ns.extend(
                items
                    .iter()
                    .filter_map(|t| model::hist::parse_latency_ns(t.trim()).ok()),
            );
        }
        ns.extend(
            r.metrics
                .iter()
                .filter(|m| m.name == "latency_pct_over")
                .filter_map(|m| m.labels.get("over"))
                .filter_map(|t| model::hist::parse_latency_ns(t).ok()),
        );
    }
    ns.sort_unstable();
    ns.dedup();
    Some(ns).filter(|v| !v.is_empty())
}

/// Percent of operations in each bucket [edge[i-1], edge[i]) plus the tail above the last.
pub fn bucket_shares(h: &Histogram<u64>, edges: &[u64]) -> Vec<f64> {
    let n = h.len() as f64;
    if n == 0.0 {
        return vec![0.0; edges.len() + 1];
    }
    let below = |v: u64| -> f64 {
        if v == 0 {
            0.0
        } else {
            h.count_between(0, v.saturating_sub(1)) as f64
        }
    };
    let mut out = Vec::new();
    let mut prev = 0.0;
    for e in edges {
        let c = below(*e);
        out.push(100.0 * (c - prev) / n);
        prev = c;
    }
    out.push(100.0 * (n - prev) / n);
    out
}

/// Percent of operations slower than `threshold_ns` (the Aerospike study's "% over 360 us").
pub fn pct_over(h: &Histogram<u64>, threshold_ns: u64) -> f64 {
    let n = h.len() as f64;
    if n == 0.0 {
        return 0.0;
    }
    100.0 * (n - h.count_between(0, threshold_ns) as f64) / n
}

/// What the thresholds table shows, in every format.
pub fn thresholds_caption(sel: &Selection) -> String {
    format!(
        "Share of operations slower than each threshold, runs side by side ({})",
        sel.best_point_words()
    )
}

/// One test's rows of the thresholds table.
pub struct ThresholdGroup {
    /// `kv get pipeline=1`.
    pub test: String,
    /// (`> 1 ms`, `weighted mean`, `p99`; a cell per run: `0.25%`, `-` where the run has
    /// no latency histogram at that test).
    pub rows: Vec<(String, Vec<String>)>,
}

/// A headline in the reader's words, as the tables beside the charts say it: `throughput
/// (ops/s)`, `latency (ns)` (a headline where less is better), never the metric's id
/// (`ops_per_s`). Where two of the workload's headlines share a unit, each is named too
/// (`throughput (signs/s, signs per s)`), so their charts' titles differ.
pub fn headline_words(
    headline: &str,
    unit: &str,
    groups: &[(String, String, Vec<usize>)],
) -> String {
    let what = if derive::higher_is_better(headline, unit) {
        "throughput"
    } else {
        "latency"
    };
    let shared = groups.iter().any(|g| g.1 == unit && g.0 != headline);
    match (unit.is_empty(), shared) {
        (true, _) => format!("{what} ({})", headline.replace('_', " ")),
        (false, false) => format!("{what} ({unit})"),
        (false, true) => format!("{what} ({unit}, {})", headline.replace('_', " ")),
    }
}

/// The Aerospike study's table (seed 003): per test, each run's (or variant's) share of
/// operations slower than each threshold at its best point, side by side, from the exact
/// merged histograms; then the weighted mean and p99. The thresholds are those the runs
/// stored ([`stored_thresholds`]: `--latency-thresholds` as typed, the seed's 40us,
/// 100us, 360us, 1ms, or the workload's default), else (runs stored before thresholds
/// were) 1-2-5 steps over the measured range. Empty when no test has a histogram.
pub fn thresholds(runs: &[RunRecord], sel: &Selection) -> Vec<ThresholdGroup> {
    let peak = derive::peak_params(runs);
    let mut groups: Vec<(String, Vec<Option<Histogram<u64>>>)> = Vec::new();
    for (row, per_run) in derive::best_points_in(runs, &peak, &sel.for_runs(runs)) {
        let hists: Vec<Option<Histogram<u64>>> = per_run
            .iter()
            .map(|p| p.as_ref().and_then(|p| p.latency()).map(|(_, _, h)| h))
            .collect();
        if hists.iter().any(Option::is_some) {
            groups.push((row, hists));
        }
    }
    let refs: Vec<&Histogram<u64>> = groups.iter().flat_map(|g| g.1.iter().flatten()).collect();
    if refs.is_empty() {
        return vec![];
    }
    let edges = stored_thresholds(runs).unwrap_or_else(|| bucket_edges(&refs));
    let cells = |hists: &[Option<Histogram<u64>>], f: &dyn Fn(&Histogram<u64>) -> String| {
        hists
            .iter()
            .map(|x| x.as_ref().map_or("-".to_string(), f))
            .collect::<Vec<String>>()
    };
    groups
        .into_iter()
        .map(|(test, hists)| {
            let mut rows: Vec<(String, Vec<String>)> = edges
                .iter()
                .map(|e| {
                    (
                        format!("> {}", compact_ns(*e)),
                        cells(&hists, &|x| {
                            format!("{}%", crate::fmt::share(pct_over(x, *e), 2))
                        }),
                    )
                })
                .collect();
            rows.push((
                "weighted mean".into(),
                cells(&hists, &|x| crate::fmt::latency_ns(x.mean())),
            ));
            rows.push((
                "p99".into(),
                cells(&hists, &|x| {
                    crate::fmt::latency_ns(x.value_at_quantile(0.99) as f64)
                }),
            ));
            ThresholdGroup { test, rows }
        })
        .collect()
}

/// The flagged points of drawn series, in their order: (line name, x, warning codes).
fn point_marks(series: &[LineSeries], flagged: &[(String, f64, String)]) -> svg::PointMarks {
    series
        .iter()
        .map(|s| {
            flagged
                .iter()
                .filter(|(n, x, _)| *n == s.name && s.points.iter().any(|p| p.0 == *x))
                .map(|(_, x, w)| (*x, w.clone()))
                .collect()
        })
        .collect()
}

/// A point's warning codes as a marked point's tooltip says them (`other_load,
/// shares_cpus`), each once; None without a warning.
pub(crate) fn warning_codes(p: &Point) -> Option<String> {
    let codes = warning_code_list(p);
    (!codes.is_empty()).then(|| codes.join(", "))
}

/// A point's warning codes ([`warning_codes`]), each once, as a list.
pub(crate) fn warning_code_list(p: &Point) -> Vec<String> {
    let fl = p.flags();
    derive::distinct_codes(&fl)
        .iter()
        .map(|f| f.code.clone())
        .collect()
}

/// A chart's note when it leaves some of its curves out (too many to read, or a line of one
/// point): how many it draws. Without it, the last runs' percentile curves and a sweep's
/// lines past the 12th were dropped with nothing to say so.
fn drawn_note(drawn: usize, total: usize, what: &str) -> Option<String> {
    (drawn < total).then(|| format!("{drawn} of {total} {what} drawn; the rest are in the tables"))
}

/// Notes said together, in one caption.
fn joined(notes: impl IntoIterator<Item = Option<String>>) -> Option<String> {
    let v: Vec<String> = notes.into_iter().flatten().collect();
    (!v.is_empty()).then(|| v.join(". "))
}

/// A line chart's caption note when some of its points carry warnings: how many.
pub(crate) fn marks_note(series: &[LineSeries], marks: &svg::PointMarks) -> Option<String> {
    let flagged: usize = marks.iter().map(Vec::len).sum();
    let total: usize = series.iter().map(|s| s.points.len()).sum();
    (flagged > 0).then(|| svg::marked_points_note(flagged, total))
}

/// Line styles: with several runs, one colour per run and a dash pattern per series of
/// that run; with one run, one colour per series.
/// A line before styling: name, (x, y) points, run index.
type RawLine = (String, Vec<(f64, f64)>, usize);

fn styled(runs: usize, lines: Vec<RawLine>) -> Vec<LineSeries> {
    let mut per_run: Vec<usize> = vec![0; runs.max(1)];
    lines
        .into_iter()
        .enumerate()
        .map(|(i, (name, points, run))| {
            let (color, dash) = if runs > 1 {
                let k = per_run.get(run).copied().unwrap_or(0);
                if let Some(c) = per_run.get_mut(run) {
                    *c += 1;
                }
                (run, k)
            } else {
                (i, 0)
            };
            LineSeries {
                name,
                points,
                color,
                dash,
            }
        })
        .collect()
}

/// One point of a power sweep: the swept parameter's value, and the point's mean W with
/// its W above idle (or why not), or why it has no power reading.
pub type PowerPoint = (f64, PowerReading);

/// A point's mean W and its W above idle (or why not), or why it has no power reading.
pub type PowerReading = Result<(f64, Result<f64, String>), String>;

/// One line of a power sweep: a run's (or variant's) points at one combination of the
/// other parameters, in the order of the swept parameter.
#[derive(Debug, Clone)]
pub struct PowerLine {
    pub name: String,
    pub run_index: usize,
    pub points: Vec<PowerPoint>,
    /// Throughput per watt at the points that have both (the efficiency table's rule,
    /// of the same basis as the power), in the order of the swept parameter.
    pub perf_per_w: Vec<(f64, f64)>,
    /// The points that carry warnings: (x, their codes `other_load, shares_cpus`).
    pub flagged: Vec<(f64, String)>,
}

impl PowerLine {
    /// The warnings on those of `points` (x, y) that carry one, for [`svg::line_chart_marked`].
    fn marks(&self, points: &[(f64, f64)]) -> Vec<(f64, String)> {
        self.flagged
            .iter()
            .filter(|(x, _)| points.iter().any(|p| p.0 == *x))
            .cloned()
            .collect()
    }
}

/// Power against one swept parameter (the Redis study's Figure A3, power against
/// instances): what the HTML draws and the Markdown lists as a table.
#[derive(Debug, Clone)]
pub struct PowerSweep {
    pub workload: String,
    /// `instances`, `clients`.
    pub param: String,
    pub lines: Vec<PowerLine>,
    /// The bases of the power drawn (measured, modelled, component only).
    pub bases: Vec<PowerBasis>,
    /// The runs' (or variants') labels, for the notes.
    pub labels: Vec<String>,
    /// The throughput unit of every perf/W figure (`ops/s`); None when the points differ
    /// in it or none is a throughput (no perf/W chart then).
    pub perf_unit: Option<String>,
}

/// Lines drawn on one power sweep chart (each with its W above idle): more are listed in
/// the Markdown table and the results tables, not drawn.
const POWER_LINES_DRAWN: usize = 8;

impl PowerSweep {
    /// Points with a power reading.
    pub fn with_power(&self) -> usize {
        self.points().filter(|(_, p)| p.1.is_ok()).count()
    }

    fn points(&self) -> impl Iterator<Item = (usize, &PowerPoint)> {
        self.lines
            .iter()
            .flat_map(|l| l.points.iter().map(move |p| (l.run_index, p)))
    }

    /// `kv: power vs instances, W (measured, whole server)`.
    pub fn title(&self) -> String {
        let basis = bases_said(&self.bases);
        format!(
            "{}: power vs {}, W and W above idle ({basis})",
            self.workload, self.param
        )
    }

    /// What the chart leaves out, and why: points without a power reading (never drawn
    /// as 0), points without a W above idle, lines not drawn.
    pub fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        let total = self.points().count();
        let without: Vec<(usize, &PowerReading)> = self
            .points()
            .filter(|(_, p)| p.1.is_err())
            .map(|(i, p)| (i, &p.1))
            .collect();
        if !without.is_empty() {
            let why = reasons_said(&self.labels, without.iter().copied()).join("; ");
            out.push(format!(
                "{} of {total} point(s) have no power reading and are left out (not drawn as 0): {why}",
                without.len()
            ));
        }
        let no_idle: Vec<(usize, &Result<f64, String>)> = self
            .points()
            .filter_map(|(i, p)| match &p.1 {
                Ok((_, above)) if above.is_err() => Some((i, above)),
                _ => None,
            })
            .collect();
        if !no_idle.is_empty() {
            let why = reasons_said(&self.labels, no_idle.iter().copied()).join("; ");
            out.push(format!(
                "W above idle absent at {} of {} point(s) with power: {why}",
                no_idle.len(),
                self.with_power()
            ));
        }
        out.extend(self.marked_note());
        if self.lines.len() > POWER_LINES_DRAWN {
            out.push(format!(
                "{} of {} series drawn; every point's power is in the results tables",
                POWER_LINES_DRAWN,
                self.lines.len()
            ));
        }
        out
    }

    /// Of the points with power (those drawn): how many carry warnings; the caption's and
    /// the SVG's (which draws each point twice, as W and as W above idle).
    fn marked_note(&self) -> Option<String> {
        let flagged = self
            .lines
            .iter()
            .flat_map(|l| {
                l.flagged
                    .iter()
                    .filter(|(x, _)| l.points.iter().any(|(px, p)| px == x && p.is_ok()))
            })
            .count();
        (flagged > 0).then(|| svg::marked_points_note(flagged, self.with_power()))
    }

    /// The chart: each line's mean W (solid) and W above idle (dashed, same colour) against
    /// the parameter; None when fewer than two points have a power reading.
    pub fn svg(&self) -> Option<String> {
        if self.with_power() < 2 {
            return None;
        }
        let mut series = Vec::new();
        let mut marks: svg::PointMarks = Vec::new();
        for (i, l) in self.lines.iter().take(POWER_LINES_DRAWN).enumerate() {
            let w: Vec<(f64, f64)> = l
                .points
                .iter()
                .filter_map(|(x, p)| p.as_ref().ok().map(|(w, _)| (*x, *w)))
                .collect();
            let above: Vec<(f64, f64)> = l
                .points
                .iter()
                .filter_map(|(x, p)| match p {
                    Ok((_, Ok(a))) => Some((*x, *a)),
                    _ => None,
                })
                .collect();
            if w.is_empty() {
                continue;
            }
            marks.push(l.marks(&w));
            series.push(LineSeries {
                name: l.name.clone(),
                points: w,
                color: i,
                dash: 0,
            });
            if !above.is_empty() {
                marks.push(l.marks(&above));
                series.push(LineSeries {
                    name: format!("{} (above idle)", l.name),
                    points: above,
                    color: i,
                    dash: 1,
                });
            }
        }
        let scale = x_scale(&series);
        Some(svg::line_chart_marked(
            &self.title(),
            &self.param,
            "W",
            scale,
            Scale::Linear,
            &series,
            &marks,
            self.marked_note().as_deref(),
        ))
    }

    /// Points with a perf/W figure.
    pub fn with_perf_per_w(&self) -> usize {
        self.lines.iter().map(|l| l.perf_per_w.len()).sum()
    }

    /// `kv: perf/W vs instances, ops/s per W (measured, whole server)`; None without a
    /// common throughput unit.
    pub fn perf_per_w_title(&self) -> Option<String> {
        let unit = self.perf_unit.as_ref()?;
        let basis = bases_said(&self.bases);
        Some(format!(
            "{}: perf/W vs {}, {unit} per W ({basis})",
            self.workload, self.param
        ))
    }

    /// Throughput per watt against the parameter (the Redis study's Figure A3, right): a
    /// line per series, points without power left out as on the power chart; None with
    /// fewer than two such points or no common unit.
    pub fn perf_per_w_svg(&self) -> Option<String> {
        let title = self.perf_per_w_title()?;
        if self.with_perf_per_w() < 2 {
            return None;
        }
        // A series and its marks in one pass, so that they stay aligned by index.
        let (series, marks): (Vec<LineSeries>, svg::PointMarks) = self
            .lines
            .iter()
            .take(POWER_LINES_DRAWN)
            .enumerate()
            .filter(|(_, l)| !l.perf_per_w.is_empty())
            .map(|(i, l)| {
                let series = LineSeries {
                    name: l.name.clone(),
                    points: l.perf_per_w.clone(),
                    color: i,
                    dash: 0,
                };
                (series, l.marks(&l.perf_per_w))
            })
            .unzip();
        let scale = x_scale(&series);
        let unit = format!("{} per W", self.perf_unit.as_deref().unwrap_or(""));
        Some(svg::line_chart_marked(
            &title,
            &self.param,
            &unit,
            scale,
            Scale::Linear,
            &series,
            &marks,
            marks_note(&series, &marks).as_deref(),
        ))
    }
}

/// Why figures are absent, each reason once with whose it is (`no power source (x86)`),
/// as a chart's caption says it ([`derive::absent_reasons`]).
fn reasons_said<'a, T: 'a>(
    labels: &[String],
    items: impl Iterator<Item = (usize, &'a Result<T, String>)>,
) -> Vec<String> {
    derive::absent_reasons(labels, items)
        .into_iter()
        .map(|(who, why)| format!("{why} ({who})"))
        .collect()
}

/// The power bases of a chart, as its title says them.
fn bases_said(bases: &[PowerBasis]) -> String {
    bases
        .iter()
        .map(|b| b.label())
        .collect::<Vec<_>>()
        .join("; ")
}

/// A sweep chart's x scale: logarithmic where the values span 20x or more (1..64
/// instances), else linear.
fn x_scale(series: &[LineSeries]) -> Scale {
    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let xmax = xs.clone().fold(f64::MIN, f64::max);
    let xmin = xs.fold(f64::MAX, f64::min);
    if xmin > 0.0 && xmax / xmin >= 20.0 {
        Scale::Log
    } else {
        Scale::Linear
    }
}

/// Power against each swept numeric parameter of one workload's runs (`runs` hold that
/// workload's results only, as [`only_workload`] gives them): one line per run (or
/// variant) and combination of the other parameters, as the throughput sweeps have
/// them. Capacity tests are left out (their power is every step's). A sweep with no
/// power reading at all is left out (the power section says why).
pub fn power_sweeps(runs: &[RunRecord], wl: &str) -> Vec<PowerSweep> {
    let labels = run_labels(runs);
    let every: Vec<Point> = runs
        .iter()
        .enumerate()
        .flat_map(|(i, r)| points(i, r))
        .filter(|p| p.capacity_phase().is_none())
        .collect();
    let mut out = Vec::new();
    for param in derive::chart_axes(&every) {
        if !every
            .iter()
            .all(|p| p.params.get(&param).is_none_or(|v| v.is_number()))
        {
            continue;
        }
        let on: Vec<Point> = every
            .iter()
            .filter(|p| p.params.contains_key(&param))
            .cloned()
            .collect();
        let names = derive::series_names(&on, &labels, &[param.as_str()]);
        let mut lines: Vec<PowerLine> = Vec::new();
        let mut bases: Vec<PowerBasis> = Vec::new();
        // Each line's bases, to name them on a chart of several.
        let mut line_bases: Vec<(String, PowerBasis)> = Vec::new();
        // The throughput units of the perf/W figures (one, or no perf/W chart).
        let mut units: Vec<String> = Vec::new();
        for (p, name) in on.iter().zip(names) {
            let Some(x) = p.params.get(&param).and_then(|v| v.as_f64()) else {
                continue;
            };
            let figure = p.power_above_idle().map(|(f, above)| {
                if !bases.contains(&f.basis) {
                    bases.push(f.basis);
                }
                if !line_bases.contains(&(name.clone(), f.basis)) {
                    line_bases.push((name.clone(), f.basis));
                }
                (f.watts, above)
            });
            let per_w = p
                .efficiency()
                .filter(|e| e.throughput)
                .and_then(|e| Some((e.perf_per_w.ok()?, e.unit)));
            if let Some((_, unit)) = &per_w {
                if !units.contains(unit) {
                    units.push(unit.clone());
                }
            }
            let per_w: Vec<(f64, f64)> = per_w.map(|(v, _)| (x, v)).into_iter().collect();
            let flagged: Vec<(f64, String)> =
                warning_codes(p).map(|c| (x, c)).into_iter().collect();
            match lines.iter_mut().find(|l| l.name == name) {
                Some(l) => {
                    l.points.push((x, figure));
                    l.perf_per_w.extend(per_w);
                    l.flagged.extend(flagged);
                }
                None => lines.push(PowerLine {
                    name,
                    run_index: p.run_index,
                    points: vec![(x, figure)],
                    perf_per_w: per_w,
                    flagged,
                }),
            }
        }
        for l in &mut lines {
            l.points.sort_by(|a, b| a.0.total_cmp(&b.0));
            l.perf_per_w.sort_by(|a, b| a.0.total_cmp(&b.0));
            // Lines of different bases on one W axis: each says its own (a modelled
            // line read as measured beside an IPMI one), the measured ones too.
            if bases.len() > 1 {
                let mine: Vec<&str> = line_bases
                    .iter()
                    .filter(|(n, _)| *n == l.name)
                    .map(|(_, b)| b.label())
                    .collect();
                if !mine.is_empty() {
                    l.name = format!("{} ({})", l.name, mine.join("; "));
                }
            }
        }
        let sweep = PowerSweep {
            workload: wl.to_string(),
            param,
            lines,
            bases,
            labels: labels.clone(),
            perf_unit: (units.len() == 1).then(|| units.remove(0)),
        };
        if sweep.with_power() > 0 {
            out.push(sweep);
        }
    }
    out
}

/// What a chart of best points is at: ` (at instances=2; best over clients)`, the
/// selection's point and the load levels each is the best over; empty for neither.
fn chosen_note(sel: &Selection, peak: &[String]) -> String {
    let free = sel.free(peak);
    let said: Vec<String> = (!sel.at.is_empty())
        .then(|| format!("at {}", sel.at_text()))
        .into_iter()
        .chain((!free.is_empty()).then(|| format!("best over {}", free.join(", "))))
        .collect();
    if said.is_empty() {
        String::new()
    } else {
        format!(" ({})", said.join("; "))
    }
}

/// Every chart for these runs.
pub fn charts(runs: &[RunRecord]) -> Vec<Chart> {
    charts_with(runs, &Selection::default())
}

/// Every chart for these runs, those of best points (bars, latency, power and perf/W,
/// per-CPU) at the points the selection chooses, as the summary takes them; a sweep's
/// curves are of every point.
pub fn charts_with(runs: &[RunRecord], sel: &Selection) -> Vec<Chart> {
    let mut out = Vec::new();
    for wl in workloads(runs) {
        let wruns = only_workload(runs, &wl);
        out.extend(workload_charts(&wruns, &wl, sel));
    }
    out.extend(cpu_charts(runs, sel));
    unique_files(&mut out);
    out
}

/// File names are slugs of labels and tests, and two can meet (`Arm 1` and `arm-1`, or
/// two labels of CJK that slug to nothing): a later chart gets `_2`, `_3`, ... so none
/// is written over another and each link finds its own picture.
pub(crate) fn unique_files(charts: &mut [Chart]) {
    let mut seen = std::collections::HashSet::new();
    for c in charts.iter_mut() {
        if seen.insert(c.file.clone()) {
            continue;
        }
        let stem = c.file.strip_suffix(".svg").unwrap_or(&c.file).to_string();
        let file = (2..)
            .map(|n| format!("{stem}_{n}.svg"))
            .find(|f| !seen.contains(f))
            .expect("an unused name");
        seen.insert(file.clone());
        c.file = file;
    }
}

fn workload_charts(runs: &[RunRecord], wl: &str, sel: &Selection) -> Vec<Chart> {
    let mut out = Vec::new();
    let labels = run_labels(runs);
    let peak = peak_params(runs);
    let sel = sel.for_runs(runs);
    // Capacity tests are not among the best points (their figures are per step, in
    // their views): a workload that ran only those has no test to set beside another.
    let every_best = best_points(runs, &peak);
    if every_best.is_empty() {
        return out;
    }
    // The best points the selection takes: the bars, latency and power charts are of
    // these, the sweeps of every point.
    let best = best_points_in(runs, &peak, &sel);
    let strip = |k: &str| k.strip_prefix(&format!("{wl} ")).unwrap_or(k).to_string();
    let point_note = chosen_note(&sel, &peak);
    // The point the selection takes, said in the titles of the other charts of best
    // points too: a file of them (`--svg-dir`) is read without the report around it.
    // Where a chart of best points has nothing to draw: of the points chosen, where some
    // are (their other points may have it).
    let of_chosen = |these: &str, chosen: &str| {
        if sel.chooses() {
            format!("{chosen} ({})", sel.chosen_text())
        } else {
            these.to_string()
        }
    };
    let at_note = if sel.at.is_empty() {
        String::new()
    } else {
        format!(", at {}", sel.at_text())
    };
    // The kinds of headline (name and unit) of every test, so the sweeps' charts and
    // their files are the same whatever is chosen; each with the rows of `best` of it.
    let kind = |v: &[Option<Point>]| {
        v.iter()
            .flatten()
            .next()
            .map(|p| (p.headline_name().to_string(), p.headline_unit()))
    };
    let mut groups: Vec<(String, String, Vec<usize>)> = Vec::new();
    for (name, unit) in every_best.iter().filter_map(|(_, v)| kind(v)) {
        if !groups.iter().any(|g| g.0 == name && g.1 == unit) {
            groups.push((name, unit, vec![]));
        }
    }
    for (i, (name, unit)) in best
        .iter()
        .enumerate()
        .filter_map(|(i, (_, v))| Some((i, kind(v)?)))
    {
        if let Some(g) = groups.iter_mut().find(|g| g.0 == name && g.1 == unit) {
            g.2.push(i);
        }
    }
    let several = groups.len() > 1;
    // 1. Bars per test and run: one chart per headline and unit (signs/s and MB/s on one
    // axis would be a figure that cannot be read).
    for (headline, unit, rows) in groups.iter().filter(|g| !g.2.is_empty()) {
        let cats: Vec<String> = rows.iter().map(|&i| strip(&best[i].0)).collect();
        let series: Vec<BarSeries> = labels
            .iter()
            .enumerate()
            .map(|(r, l)| BarSeries {
                name: l.clone(),
                values: rows
                    .iter()
                    .map(|&i| {
                        best[i].1[r]
                            .as_ref()
                            .and_then(|p| p.headline().map(|s| s.mean))
                    })
                    .collect(),
                warn: rows
                    .iter()
                    .map(|&i| best[i].1[r].as_ref().is_some_and(|p| !p.flags().is_empty()))
                    .collect(),
            })
            .collect();
        let title = format!(
            "{wl}: {} per test{point_note}",
            headline_words(headline, unit, &groups)
        );
        let file = if several {
            format!("{}_bars_{}.svg", slug(wl), slug(headline))
        } else {
            format!("{}_bars.svg", slug(wl))
        };
        out.push(Chart {
            file,
            title: title.clone(),
            section: "results".into(),
            workload: wl.to_string(),
            svg: Some(svg::bar_chart(&title, unit, &cats, &series)),
            note: None,
        });
    }
    // 2. Throughput against each swept numeric parameter, one chart per headline and unit.
    let every: Vec<Point> = runs
        .iter()
        .enumerate()
        .flat_map(|(i, r)| points(i, r))
        .filter(|p| p.capacity_phase().is_none())
        .collect();
    for (headline, unit, _) in &groups {
        let all: Vec<Point> = every
            .iter()
            .filter(|p| p.headline_name() == headline && p.headline_unit() == *unit)
            .cloned()
            .collect();
        for param in derive::chart_axes(&all) {
            if !all
                .iter()
                .all(|p| p.params.get(&param).is_none_or(|v| v.is_number()))
            {
                continue;
            }
            // One line per run and combination of the other parameters, named by what
            // differs among them.
            let mut lines: Vec<RawLine> = Vec::new();
            // Each line's flagged points: (line, x, what flagged it).
            let mut flagged: Vec<(String, f64, String)> = Vec::new();
            let names = derive::series_names(&all, &labels, &[param.as_str()]);
            for (p, name) in all.iter().zip(names) {
                let Some(x) = p.params.get(&param).and_then(|v| v.as_f64()) else {
                    continue;
                };
                let Some(y) = p.headline().map(|s| s.mean) else {
                    continue;
                };
                if let Some(codes) = warning_codes(p) {
                    flagged.push((name.clone(), x, codes));
                }
                match lines.iter_mut().find(|l| l.0 == name) {
                    Some(l) => l.1.push((x, y)),
                    None => lines.push((name, vec![(x, y)], p.run_index)),
                }
            }
            let found = lines.len();
            lines.retain(|l| l.1.len() > 1);
            if lines.is_empty() {
                continue;
            }
            lines.truncate(12);
            let dropped = drawn_note(lines.len(), found, "curves");
            let ys: Vec<f64> = lines.iter().flat_map(|l| l.1.iter().map(|p| p.1)).collect();
            let ymax = ys.iter().cloned().fold(f64::MIN, f64::max);
            let ymin = ys.iter().cloned().fold(f64::MAX, f64::min);
            // Pipelined and unpipelined figures differ by 20x or more: a log axis keeps both readable.
            let y_scale = if ymin > 0.0 && ymax / ymin >= 30.0 {
                Scale::Log
            } else {
                Scale::Linear
            };
            let xs: Vec<f64> = lines.iter().flat_map(|l| l.1.iter().map(|p| p.0)).collect();
            let xmax = xs.iter().cloned().fold(f64::MIN, f64::max);
            let xmin = xs.iter().cloned().fold(f64::MAX, f64::min);
            let scale = if xmin > 0.0 && xmax / xmin >= 20.0 {
                Scale::Log
            } else {
                Scale::Linear
            };
            let series = styled(labels.len(), lines);
            let marks = point_marks(&series, &flagged);
            let note = joined([marks_note(&series, &marks), dropped]);
            let title = format!(
                "{wl}: {} vs {param}",
                headline_words(headline, unit, &groups)
            );
            let file = if several {
                format!("{}_{}_vs_{}.svg", slug(wl), slug(headline), slug(&param))
            } else {
                format!("{}_vs_{}.svg", slug(wl), slug(&param))
            };
            out.push(Chart {
                file,
                title: title.clone(),
                section: "sweep".into(),
                workload: wl.to_string(),
                svg: Some(svg::line_chart_marked(
                    &title,
                    &param,
                    unit,
                    scale,
                    y_scale,
                    &series,
                    &marks,
                    note.as_deref(),
                )),
                note,
            });
        }
    }
    // 2b. Power against each swept parameter (the Redis study's Figure A3); with fewer
    // than two points with power, a note instead.
    for sweep in power_sweeps(runs, wl) {
        let notes = sweep.notes();
        let (svg, note) = match sweep.svg() {
            Some(svg) => (Some(svg), (!notes.is_empty()).then(|| notes.join(". "))),
            None => (
                None,
                Some(format!(
                    "not drawn: only {} point has a power reading{}",
                    sweep.with_power(),
                    if notes.is_empty() {
                        String::new()
                    } else {
                        format!(". {}", notes.join(". "))
                    }
                )),
            ),
        };
        out.push(Chart {
            file: format!("{}_power_vs_{}.svg", slug(wl), slug(&sweep.param)),
            title: sweep.title(),
            section: "sweep".into(),
            workload: wl.to_string(),
            svg,
            note,
        });
        if let (Some(svg), Some(title)) = (sweep.perf_per_w_svg(), sweep.perf_per_w_title()) {
            out.push(Chart {
                file: format!("{}_perf_per_w_vs_{}.svg", slug(wl), slug(&sweep.param)),
                title,
                section: "sweep".into(),
                workload: wl.to_string(),
                svg: Some(svg),
                note: (!notes.is_empty()).then(|| notes.join(". ")),
            });
        }
    }
    // Nothing chosen of this workload's tests (`--at` a point it did not run): no best
    // point to draw.
    if best.is_empty() {
        return out;
    }
    // 3. Latency percentile curves and histogram buckets of the best points.
    let mut with_latency: Vec<(Point, (String, Histogram<u64>))> = best
        .iter()
        .flat_map(|(_, per_run)| per_run.iter().flatten())
        .filter_map(|p| p.latency().map(|(kind, _, h)| (p.clone(), (kind, h))))
        .collect();
    // Runs side by side within each test, so a run keeps its colour.
    with_latency.sort_by_key(|c| c.0.run_index);
    let found = with_latency.len();
    with_latency.truncate(10);
    let dropped = drawn_note(with_latency.len(), found, "curves");
    let (shown, hists): (Vec<Point>, Vec<_>) = with_latency.into_iter().unzip();
    let curves: Vec<(String, Histogram<u64>, String, usize)> =
        derive::series_names(&shown, &labels, &[])
            .into_iter()
            .zip(hists)
            .zip(&shown)
            .map(|((name, (kind, h)), p)| (name, h, kind, p.run_index))
            .collect();
    if curves.is_empty() {
        out.push(Chart {
            file: format!("{}_latency.svg", slug(wl)),
            title: format!("{wl}: latency percentiles"),
            section: "latency".into(),
            workload: wl.to_string(),
            svg: None,
            note: Some(format!(
                "no latency histograms in {} valid repetitions (interrupted, failed or \
                 invalid ones are in no figure: see All results)",
                of_chosen("these results'", "the chosen points'")
            )),
        });
    } else {
        let kinds: Vec<&str> = curves.iter().map(|c| c.2.as_str()).collect();
        let kind = if kinds.iter().all(|k| *k == kinds[0]) {
            kinds[0].to_string()
        } else {
            "mixed".into()
        };
        let series = styled(
            labels.len(),
            curves
                .iter()
                .map(|(n, h, k, run)| {
                    let name = if kind == "mixed" {
                        format!("{n} ({k})")
                    } else {
                        n.clone()
                    };
                    let pts = percentile_curve(h)
                        .into_iter()
                        .map(|(q, v)| (q, v / 1000.0))
                        .collect();
                    (name, pts, *run)
                })
                .collect(),
        );
        let title = format!("{wl}: latency by percentile ({kind}){at_note}");
        out.push(Chart {
            file: format!("{}_latency.svg", slug(wl)),
            title: title.clone(),
            section: "latency".into(),
            workload: wl.to_string(),
            svg: Some(svg::line_chart_marked(
                &title,
                "percentile",
                "latency (us)",
                Scale::Nines,
                Scale::Log,
                &series,
                &[],
                dropped.as_deref(),
            )),
            note: dropped,
        });
        // Histogram buckets, one chart per test (the Aerospike study's view: each run's
        // share of operations per latency bucket, side by side).
        // With the stored thresholds (the seed-003 figure): the share over each, every
        // test; without, 1-2-5 buckets over the measured range, for the first few tests.
        let thresholds = stored_thresholds(runs);
        let shown = if thresholds.is_some() { best.len() } else { 4 };
        let with_hist =
            |per_run: &Vec<Option<Point>>| per_run.iter().flatten().any(|p| p.latency().is_some());
        let found = best.iter().filter(|(_, v)| with_hist(v)).count();
        let drawn = best
            .iter()
            .take(shown)
            .filter(|(_, v)| with_hist(v))
            .count();
        let first = out.len();
        for (row, per_run) in best.iter().take(shown) {
            let (pts, hists): (Vec<Point>, Vec<Histogram<u64>>) = per_run
                .iter()
                .flatten()
                .filter_map(|p| p.latency().map(|(_, _, h)| (p.clone(), h)))
                .unzip();
            let hs: Vec<(String, Histogram<u64>)> = derive::series_names(&pts, &labels, &[])
                .into_iter()
                .zip(hists)
                .collect();
            if hs.is_empty() {
                continue;
            }
            let test = strip(row);
            // (categories, each series' share per category, what the shares are of)
            let (cats, shares, what): (Vec<String>, Vec<Vec<f64>>, &str) = match &thresholds {
                Some(edges) => (
                    edges
                        .iter()
                        .map(|e| format!("> {}", compact_ns(*e)))
                        .collect(),
                    hs.iter()
                        .map(|(_, h)| edges.iter().map(|e| pct_over(h, *e)).collect())
                        .collect(),
                    "over each latency threshold",
                ),
                None => {
                    let refs: Vec<&Histogram<u64>> = hs.iter().map(|h| &h.1).collect();
                    let edges = bucket_edges(&refs);
                    let mut cats: Vec<String> = Vec::new();
                    let mut prev: Option<u64> = None;
                    for e in &edges {
                        cats.push(match prev {
                            None => format!("< {}", compact_ns(*e)),
                            Some(p) => bucket_label(p, *e),
                        });
                        prev = Some(*e);
                    }
                    if let Some(p) = prev {
                        cats.push(format!(">= {}", compact_ns(p)));
                    }
                    let shares = hs.iter().map(|(_, h)| bucket_shares(h, &edges)).collect();
                    (cats, shares, "per latency bucket")
                }
            };
            let series: Vec<BarSeries> = hs
                .iter()
                .zip(shares)
                .map(|((n, _), v)| BarSeries {
                    name: n.clone(),
                    warn: vec![false; v.len()],
                    values: v.into_iter().map(Some).collect(),
                })
                .collect();
            let title = format!("{wl} {test}: % of operations {what}{at_note}");
            out.push(Chart {
                file: format!("{}_buckets_{}.svg", slug(wl), slug(&test)),
                title: title.clone(),
                section: "latency".into(),
                workload: wl.to_string(),
                svg: Some(svg::bar_chart(&title, "% of operations", &cats, &series)),
                note: None,
            });
        }
        // Without stored thresholds only the first tests get a bucket chart: the last
        // one drawn says so.
        if let Some(last) = out[first..].last_mut() {
            last.note = drawn_note(drawn, found, "tests' bucket charts");
        }
    }
    // 4. Power and perf/W of the best points: a pair of charts per headline and unit,
    // as the bars of section 1 have them. On one axis, a perf/W in signs/s per W beside
    // one in MB/s per W (`throughput per W`) could not be read; the power beside each
    // perf/W is of the same tests.
    let mut drawn = 0;
    let mut reasons_all: Vec<(usize, Result<derive::PowerFigure, String>)> = Vec::new();
    let mut power_charts = Vec::new();
    for (headline, unit, rows) in groups.iter().filter(|g| !g.2.is_empty()) {
        let cats: Vec<String> = rows.iter().map(|&i| strip(&best[i].0)).collect();
        let mut power_series = Vec::new();
        let mut perfw_series = Vec::new();
        let mut absent: Vec<(usize, Result<derive::PowerFigure, String>)> = Vec::new();
        let mut bases: Vec<PowerBasis> = Vec::new();
        // Each run's bases in this chart, to name them in its legend.
        let mut run_bases: Vec<Vec<PowerBasis>> = vec![Vec::new(); labels.len()];
        for (r, l) in labels.iter().enumerate() {
            let mut pw = Vec::new();
            let mut pf = Vec::new();
            for &i in rows {
                let e = best[i].1[r].as_ref().and_then(|p| p.efficiency());
                match e.as_ref().map(|e| &e.power) {
                    Some(Ok(p)) => {
                        if !bases.contains(&p.basis) {
                            bases.push(p.basis);
                        }
                        if !run_bases[r].contains(&p.basis) {
                            run_bases[r].push(p.basis);
                        }
                        pw.push(Some(p.watts));
                        pf.push(e.as_ref().and_then(|e| e.perf_per_w.clone().ok()));
                    }
                    Some(Err(why)) => {
                        absent.push((r, Err(why.clone())));
                        pw.push(None);
                        pf.push(None);
                    }
                    None => {
                        pw.push(None);
                        pf.push(None);
                    }
                }
            }
            let n = pw.len();
            power_series.push(BarSeries {
                name: l.clone(),
                values: pw,
                warn: vec![false; n],
            });
            perfw_series.push(BarSeries {
                name: l.clone(),
                values: pf,
                warn: vec![false; n],
            });
        }
        // Bars of different bases on one axis: each run says its own, the measured ones
        // too, as the power sweeps' lines do (a modelled bar read as measured beside an
        // IPMI one, with nothing on bar or legend to tell them apart).
        if bases.len() > 1 {
            for (r, mine) in run_bases.iter().enumerate().filter(|(_, b)| !b.is_empty()) {
                let said = bases_said(mine);
                for series in [&mut power_series[r], &mut perfw_series[r]] {
                    series.name = format!("{} ({said})", series.name);
                }
            }
        }
        let reasons = reasons_said(&labels, absent.iter().map(|(i, p)| (*i, p)));
        reasons_all.extend(absent);
        let has =
            |series: &[BarSeries]| series.iter().any(|s| s.values.iter().any(Option::is_some));
        // One pair of files per headline where there are several, else the workload's.
        let file = |kind: &str| match several {
            true => format!("{}_{kind}_{}.svg", slug(wl), slug(headline)),
            false => format!("{}_{kind}.svg", slug(wl)),
        };
        if !has(&power_series) {
            // A note in these tests' place where other tests have power; where none has,
            // one note below says so for the workload.
            power_charts.push(Chart {
                file: file("power"),
                title: format!(
                    "{wl}: power and perf/W, {}",
                    headline_words(headline, unit, &groups)
                ),
                section: "power".into(),
                workload: wl.to_string(),
                svg: None,
                note: Some(absent_note(&reasons, "for these tests")),
            });
            continue;
        }
        drawn += 1;
        let basis = bases_said(&bases);
        let words = headline_words(headline, unit, &groups);
        let t = if several {
            format!("{wl}: power under load of the {words} tests, W ({basis}){at_note}")
        } else {
            format!("{wl}: power under load, W ({basis}){at_note}")
        };
        power_charts.push(Chart {
            file: file("power"),
            title: t.clone(),
            section: "power".into(),
            workload: wl.to_string(),
            svg: Some(svg::bar_chart(&t, "W", &cats, &power_series)),
            note: (!reasons.is_empty())
                .then(|| format!("power absent for some results: {}", reasons.join("; "))),
        });
        // A latency has no perf/W (the efficiency table says why): no chart of no bars.
        if !has(&perfw_series) {
            continue;
        }
        let t = format!("{wl}: {words} per W ({basis}){at_note}");
        power_charts.push(Chart {
            file: file("perf_per_w"),
            title: t.clone(),
            section: "power".into(),
            workload: wl.to_string(),
            svg: Some(svg::bar_chart(
                &t,
                &format!("{unit} per W"),
                &cats,
                &perfw_series,
            )),
            note: None,
        });
    }
    if drawn > 0 {
        out.extend(power_charts);
    } else {
        // No test has power: one note for the workload, not one per kind of test.
        let reasons = reasons_said(&labels, reasons_all.iter().map(|(i, p)| (*i, p)));
        out.push(Chart {
            file: format!("{}_power.svg", slug(wl)),
            title: format!("{wl}: power and perf/W"),
            section: "power".into(),
            workload: wl.to_string(),
            svg: None,
            note: Some(absent_note(
                &reasons,
                &of_chosen("in these runs", "at the points chosen"),
            )),
        });
    }
    out
}

/// The note in place of power charts: the reasons power is absent, else that there were
/// no readings `where`.
fn absent_note(reasons: &[String], where_: &str) -> String {
    let why = match reasons {
        [] => format!("no power readings {where_}"),
        _ => reasons.join("; "),
    };
    format!("Power and perf/W are absent: {why}")
}

/// The unit a latency reads best in: (divisor, suffix).
fn ns_unit(ns: u64) -> (f64, &'static str) {
    if ns >= 1_000_000_000 {
        (1e9, "s")
    } else if ns >= 1_000_000 {
        (1e6, "ms")
    } else if ns >= 1_000 {
        (1e3, "us")
    } else {
        (1.0, "ns")
    }
}

/// `500 us`, `1 ms`, `2.5 ms`: bucket edges are round, so no trailing zeros.
pub fn compact_ns(ns: u64) -> String {
    let (d, u) = ns_unit(ns);
    format!("{} {u}", crate::fmt::si(ns as f64 / d))
}

/// `0.5-1 ms`: both edges in the upper edge's unit.
fn bucket_label(lo: u64, hi: u64) -> String {
    let (d, u) = ns_unit(hi);
    format!(
        "{}-{} {u}",
        crate::fmt::si(lo as f64 / d),
        crate::fmt::si(hi as f64 / d)
    )
}

/// Said where no test's valid repetitions carry per-CPU telemetry: why, where some
/// repetitions did not count (interrupted, failed or invalid).
pub fn no_cpu_telemetry(runs: &[RunRecord]) -> &'static str {
    let uncounted = runs
        .iter()
        .flat_map(|r| &r.results)
        .any(|x| x.status != model::Status::Ok || x.is_invalid());
    if uncounted {
        "No per-CPU telemetry in these runs' valid repetitions (interrupted, failed or \
         invalid ones are in no figure; the host telemetry below has what they measured)."
    } else {
        "No per-CPU telemetry in these runs."
    }
}

/// What the per-CPU section shows, said above it in every format.
pub const CPU_SECTION_NOTE: &str = "Per-CPU mean over the measured (non-warm-up) samples at every test's best point of each run (the mean over its repetitions that count), and over each capacity test's whole span (all its steps), on the system under test (mpstat's arithmetic). %iowait is idle time with I/O outstanding, not busy; on Linux before 6.15 it also holds a load generator's waits on io_uring.";

/// One run's per-CPU utilisation on the system under test during one test (mpstat
/// -P ALL's columns): what the HTML draws as a stacked chart and the Markdown lists as a
/// table, so both show the same figures.
#[derive(Debug, Clone)]
pub struct CpuBreakdown {
    /// The run's (or variant's) label.
    pub run: String,
    /// `kv get`, `kv levels instances=2`.
    pub row: String,
    pub workload: String,
    pub host: String,
    /// The capacity procedure (`levels`) when the test is one: its figures are the mean
    /// over all its steps (each load level, and active idle), not of one load.
    pub capacity: Option<String>,
    /// One line per CPU (never the all-CPU line), in CPU order.
    pub cpus: Vec<model::CpuUtil>,
}

impl CpuBreakdown {
    /// `memA: per-CPU utilisation on local during mem latency`.
    pub fn title(&self) -> String {
        let span = if self.capacity.is_some() {
            " (mean over all its steps)"
        } else {
            ""
        };
        format!(
            "{}: per-CPU utilisation on {} during {}{span}",
            self.run, self.host, self.row
        )
    }
}

/// What [`cpu_breakdowns`] found: the breakdowns, and the runs (label, workload, why)
/// that had tests but no telemetry at all.
pub struct CpuBreakdowns {
    pub shown: Vec<CpuBreakdown>,
    pub no_telemetry: Vec<(String, String, String)>,
}

/// Why a run has no telemetry: a test whose steps were kept when rackbench was killed
/// lost its samples with the process (its steps carry the CPU each saw: acceptance pass
/// G, 5); otherwise none was recorded (`--no-telemetry`).
fn no_telemetry_note(run: &RunRecord) -> String {
    // A run with telemetry off (`--no-telemetry`) had none to lose (review I, 9).
    let sampled = run.plan["run"]["telemetry"].as_bool() != Some(false);
    if sampled && run.results.iter().any(|r| r.is_provisional()) {
        "its telemetry was lost with rackbench, killed before its test ended (the steps \
         kept carry the CPU each step saw)"
            .into()
    } else {
        "no telemetry was recorded for this run".into()
    }
}

/// Per-CPU breakdown on the SUT at every test's best point of each run (not only the
/// run's fastest test: a net run's TCP and UDP tests load the CPUs differently, and that
/// difference is what the breakdown is for), and over each capacity test's whole span (a
/// ramp, search or levels test has no best point, but its CPUs were watched all along).
pub fn cpu_breakdowns(runs: &[RunRecord], sel: &Selection) -> CpuBreakdowns {
    let labels = run_labels(runs);
    let mut out = CpuBreakdowns {
        shown: vec![],
        no_telemetry: vec![],
    };
    // Each workload's best points over all its runs, named and chosen as its summary's
    // are: one run alone names a row by what varies in it (`kv get` where the summary's
    // is `kv get pipeline=16`), which `--tests` then did not find.
    let wls = workloads(runs);
    let wruns: Vec<Vec<RunRecord>> = wls.iter().map(|wl| only_workload(runs, wl)).collect();
    // Per workload, the indices in `runs` of its runs: its columns, as `wruns` holds them.
    let columns: Vec<Vec<usize>> = wls
        .iter()
        .map(|wl| {
            (0..runs.len())
                .filter(|&i| runs[i].results.iter().any(|x| x.workload == *wl))
                .collect()
        })
        .collect();
    let peaks: Vec<Vec<String>> = wruns.iter().map(|w| peak_params(w)).collect();
    let bests: Vec<_> = wruns
        .iter()
        .zip(&peaks)
        .map(|(w, peak)| best_points_in(w, peak, &sel.for_runs(w)))
        .collect();
    for (ri, (run, label)) in runs.iter().zip(&labels).enumerate() {
        let (mut any, mut tried) = (false, false);
        for (wi, wl) in wls.iter().enumerate() {
            let Some(col) = columns[wi].iter().position(|&i| i == ri) else {
                continue;
            };
            let wrun = std::slice::from_ref(&wruns[wi][col]);
            let peak = &peaks[wi];
            let mut chosen: Vec<(String, Point)> = bests[wi]
                .iter()
                .filter_map(|(row, per_run)| Some((row.clone(), per_run[col].clone()?)))
                .collect();
            let fixed = derive::fixed_params(wrun);
            let fixed: Vec<&str> = fixed.iter().map(|(k, _)| k.as_str()).collect();
            chosen.extend(
                points(0, &wrun[0])
                    .into_iter()
                    .filter(|p| p.capacity_phase().is_some())
                    .map(|p| (format!("{wl} {}", p.label_without(&fixed)), p)),
            );
            for (row, p) in chosen {
                tried = true;
                let sums = p.sut_summaries();
                let Some(ts) = sums.first().copied() else {
                    continue;
                };
                any = true;
                // The mean over the point's valid repetitions (of the one host), as the
                // per-CPU table beside it: the first repetition alone read 95% %usr where
                // the three averaged 72% (acceptance L, 1).
                let on_host: Vec<&model::TelemetrySummary> =
                    sums.iter().copied().filter(|s| s.host == ts.host).collect();
                let cpus = crate::cpu_table::mean_cpus(&on_host);
                if cpus.is_empty() {
                    continue;
                }
                // The peak parameters' values the best point is at (`instances=2`):
                // the row names the test, not where over its sweep it was taken.
                let at: Vec<&str> = p
                    .params
                    .keys()
                    .map(String::as_str)
                    .filter(|k| !peak.iter().any(|q| q == k))
                    .collect();
                let at = p.param_label(&at);
                let row = if at.is_empty() || p.capacity_phase().is_some() {
                    row
                } else {
                    format!("{row} at {at}")
                };
                out.shown.push(CpuBreakdown {
                    run: label.clone(),
                    row,
                    workload: p.workload.clone(),
                    // Named as the Hosts table names it (this machine by its hostname).
                    host: model::host_display_name(&p.run.hosts, &ts.host),
                    capacity: p.capacity_phase().map(str::to_string),
                    cpus,
                });
            }
        }
        if !any && tried {
            out.no_telemetry.push((
                label.clone(),
                run.results[0].workload.clone(),
                no_telemetry_note(run),
            ));
        }
    }
    out
}

/// The stacked per-CPU charts of [`cpu_breakdowns`].
fn cpu_charts(runs: &[RunRecord], sel: &Selection) -> Vec<Chart> {
    let b = cpu_breakdowns(runs, sel);
    let mut out: Vec<Chart> = b.shown.iter().map(cpu_chart).collect();
    out.extend(
        b.no_telemetry
            .into_iter()
            .map(|(label, workload, why)| Chart {
                file: format!("cpu_{}.svg", slug(&label)),
                title: format!("{label}: per-CPU utilisation"),
                section: "cpu".into(),
                workload,
                svg: None,
                note: Some(why),
            }),
    );
    out
}

/// The per-CPU stacked chart of one breakdown.
fn cpu_chart(b: &CpuBreakdown) -> Chart {
    let stacks: Vec<Stack> = b
        .cpus
        .iter()
        .map(|c| Stack {
            label: format!("{}", c.cpu),
            segments: vec![
                ("%usr".into(), c.usr_pct),
                ("%nice".into(), c.nice_pct),
                ("%sys".into(), c.sys_pct),
                ("%irq".into(), c.irq_pct),
                ("%soft".into(), c.soft_pct),
                ("%iowait".into(), c.iowait_pct),
                ("%steal".into(), c.steal_pct),
            ],
        })
        .collect();
    let title = b.title();
    Chart {
        file: format!("cpu_{}_{}.svg", slug(&b.run), slug(&b.row)),
        title: title.clone(),
        section: "cpu".into(),
        workload: b.workload.clone(),
        svg: Some(svg::stacked_chart(
            &title,
            "% of CPU",
            100.0,
            &stacks,
            &[
                "#0072B2", "#56B4E9", "#D55E00", "#CC79A7", "#E69F00", "#999999", "#000000",
            ],
        )),
        note: None,
    }
}
