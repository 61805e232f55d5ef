//! Derived figures, computed from stored runs only (pure): sweep points with their
//! repetitions, the power figure a result may honestly use, perf/W, %CPU and watts per
//! unit of throughput (the iperf3 study's CPU/tput and W/tput), the geometric and
//! arithmetic means of the Redis study's Table A1, and linear extrapolation.
//!
//! Power: the source is chosen by the one rule all of rackbench uses,
//! [`model::power::headline`] (measured whole server, then a declared model labelled
//! "modelled", then RAPL package + DRAM labelled "component"); with none, perf/W is
//! absent and the reason is kept.
//!
//! CPU: the system under test's, by one rule ([`sut_cpu`]): its whole host when that host
//! ran no load generator, else its watched server processes, else absent with the reason.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use model::power::HeadlinePower;
use model::{Flag, ResultRecord, RunRecord, Status, TelemetrySummary};
use serde::{Deserialize, Serialize};

use crate::selection::{Extrapolate, Extrapolation, Selection};
use crate::stats::{self, Sample};

/// Parameters whose points are levels of one load curve, or of one server scaled out,
/// not separate tests: the summary table (and so its geometric mean, and a TCO's `run`
/// performance, which is that table's) takes each test at its best point over them, and
/// says which (`each column at its best clients`, a cell's `clients=40`), the server's
/// scale-out once per column ([`SCALE_PARAMS`]). The seeds do the same: the Redis study
/// picks the best instance count per platform, the HammerDB study headlines its peak
/// over databases. Averaging the points instead would let a
/// client-limited point (5 clients) pull a server's figure down.
///
/// - `instances` (kv), `databases` (oltp): the server scaled out on one machine;
/// - `clients` (kv), `connections` (http), `vus` (oltp), `streams` (net): concurrency
///   offered to the same server;
/// - `rate` (kv, http, net): the offered rate.
///
/// Not among them, so each value is its own row: `pipeline` (kv) is a different operating
/// mode of the server (batched requests, a different latency), which the Redis study
/// reports row by row (`pipeline=1` and `pipeline=16`); `threads` is the measured work's
/// own parallelism in crypto (reported per thread count, as `openssl speed -multi`) and
/// the generator's in kv and http; sizes (`data_size`, `warehouses`, key sizes) are
/// different work.
/// Where a point ran (the runner stores them once anything runs off this machine): the
/// platform a column measured, not a test. Where each run ran on one such place, they
/// name no row, and two runs with the server on other hosts line up in one table, a
/// Difference beside them, as the seeds set platforms side by side
/// ([`placement_params`]); said once per run above the tables ([`placement_line`]).
pub const PLACEMENT_PARAMS: &[&str] =
    &["sut_host", "loadgen_hosts", "sender_host", "receiver_host"];

pub const PEAK_PARAMS: &[&str] = &[
    "instances",
    "databases",
    "clients",
    "connections",
    "vus",
    "streams",
    "rate",
];

/// The [`PEAK_PARAMS`] that scale the server out on its machine rather than load it: a
/// column takes one value of them for all its rows, the one whose rows do best together
/// ([`at_one_scale`]), as seed 000 set its Xeon at 56 instances and its Centriq at 46 for
/// every test. Taking each row's best instead mixed instance counts in one column (its
/// `get` at 4, its `set` at 1), and its geometric mean, which the TCO prices, described
/// no server anyone could deploy. The load levels stay each row's best.
pub const SCALE_PARAMS: &[&str] = &["instances", "databases"];

/// A display name for each run: its label, made unique with the id where two clash.
pub fn run_labels(runs: &[RunRecord]) -> Vec<String> {
    let base: Vec<String> = runs
        .iter()
        .map(|r| {
            r.label
                .clone()
                .filter(|l| !l.is_empty())
                .unwrap_or_else(|| r.id.clone())
        })
        .collect();
    base.iter()
        .enumerate()
        .map(|(i, l)| {
            if base.iter().filter(|o| *o == l).count() > 1 && l != &runs[i].id {
                format!("{l} ({})", runs[i].id)
            } else {
                l.clone()
            }
        })
        .collect()
}

/// The report's title: up to three run labels joined with " vs ", more as a count with
/// the first two named, so a 16-run report still has a title one can read (and a
/// browser tab can show). HTML and Markdown both use it; the caller escapes it.
pub fn report_title(labels: &[String]) -> String {
    match labels.len() {
        0 => "rackbench report".to_string(),
        1..=3 => format!("rackbench report: {}", labels.join(" vs ")),
        n => format!(
            "rackbench report: {n} runs: {}, {}, \u{2026} (+{} more)",
            labels[0],
            labels[1],
            n - 2
        ),
    }
}

/// A metric's unit for display ([`model::display_unit`], kept under this name for the
/// report's callers).
pub use model::display_unit;

/// Workloads whose rows are no suite of one kind of work, and why: a geometric mean
/// across them mixes unlike things, so their summary has none. crypto's tests are
/// different operations (RSA-2048 signs, RSA-4096 signs, AES bytes; each at several
/// thread counts); oltp's rows are one benchmark, TPC-C, on databases of different
/// sizes (its virtual users and databases are load levels: each row is at its best
/// over them, [`PEAK_PARAMS`]), which HammerDB and the seeds report one by one.
const NO_MEAN_ACROSS_ROWS: &[(&str, &str)] = &[
    (
        "crypto",
        "tests (key sizes, operations, thread counts) are different measurements, shown one by one",
    ),
    (
        "oltp",
        "rows are TPC-C on different configurations (warehouses), shown one by one",
    ),
    // A sweep of --bw-size or --cpu is one measurement at different settings: their
    // geometric mean (of 64M's and 1G's bandwidth) is no figure of the machine
    // (acceptance pass J, 3).
    (
        "mem",
        "rows are one measurement at different settings (array sizes, CPUs), shown one by one",
    ),
    // TCP's Gbit/s beside UDP's at 60 B (a tenth of it, bound by packets/s, with its
    // loss) is no mean of the path (acceptance pass K, 9).
    (
        "net",
        "tests (TCP, UDP at each payload size, stream counts) are different measurements, shown one by one",
    ),
];

/// The workload whose several rows are unlike measurements ([`NO_MEAN_ACROSS_ROWS`]),
/// with why, when the summary has such rows: no mean across them, of performance or of
/// power.
fn unlike_rows<'a>(
    rows: &[&SummaryRow],
    workloads: &'a [String],
) -> Option<(&'a str, &'static str)> {
    if rows.len() < 2 {
        return None;
    }
    workloads.iter().find_map(|w| {
        NO_MEAN_ACROSS_ROWS
            .iter()
            .find(|(name, _)| name == w)
            .map(|(_, why)| (w.as_str(), *why))
    })
}

/// How to take one of a workload's unlike rows, in the words of where the choice is
/// made (the command line's --at, a TCO plan's `params`), or nothing to say.
fn take_one(workload: &str, from_plan: bool) -> &'static str {
    match (workload, from_plan) {
        ("oltp", false) => "; take one with --at (e.g. --at warehouses=10)",
        ("oltp", true) => "; take one with `params = { warehouses = 10 }`",
        _ => "",
    }
}

/// Why the summary has no geometric mean across its rows, if it has none: rows counted
/// in different units, or several rows of a workload whose rows are unlike measurements.
/// `rows` are those the means are over, each with a figure (so a unit) in every column.
fn no_geomean_reason(
    rows: &[&SummaryRow],
    workloads: &[String],
    from_plan: bool,
) -> Option<String> {
    let mut units: Vec<&str> = rows.iter().map(|r| r.unit.as_str()).collect();
    units.sort_unstable();
    units.dedup();
    if units.len() > 1 {
        return Some(format!(
            "no geometric mean: the tests are counted in different units ({})",
            units.join("; ")
        ));
    }
    // A latency is better lower and a throughput higher: a mean of both moves with
    // neither, and a slower latency would raise it as more throughput does. Such rows
    // are counted in different units (`ns` against `GB/s`) and the rule above takes them
    // apart; this is for a latency named so (`model::higher_is_better`) in a unit it
    // shares with a throughput. No mean at all, rather than a mean of the throughputs
    // alone, or of the latencies' inverses: the row would then be a mean of some of the
    // table's tests, or of figures no row shows.
    let lower: Vec<&str> = rows
        .iter()
        .filter(|r| !r.higher_is_better)
        .map(|r| r.label.as_str())
        .collect();
    if !lower.is_empty() && lower.len() < rows.len() {
        return Some(format!(
            "no geometric mean: {} {} better lower (a latency), the other tests better higher",
            lower.join(", "),
            if lower.len() == 1 { "is" } else { "are" }
        ));
    }
    unlike_rows(rows, workloads)
        .map(|(w, why)| format!("no geometric mean: {w}'s {why}{}", take_one(w, from_plan)))
}

pub use model::CAPACITY_TESTS;

/// The capacity procedure a result is (`ramp`, `search` or `levels`), or None for an
/// ordinary test ([`ResultRecord::capacity_phase`], the one place it is decided).
pub fn capacity_phase(r: &ResultRecord) -> Option<&str> {
    r.capacity_phase()
}

/// Whether more of a headline is better ([`model::higher_is_better`], the one rule), for
/// the best sweep point ([`best_of`]), compare's verdicts and the console's best line.
pub fn higher_is_better(headline: &str, unit: &str) -> bool {
    model::higher_is_better(headline, unit)
}

/// The best of some sweep points of one test: the highest mean headline over each
/// point's valid repetitions, or the lowest where lower is better
/// ([`Point::higher_is_better`]). A point with no valid repetition is never the best;
/// of equals, the last. The one rule for the summary's best point and the console's.
pub fn best_of<'p, 'a: 'p>(
    points: impl IntoIterator<Item = &'p Point<'a>>,
) -> Option<&'p Point<'a>> {
    let scored: Vec<(&Point, f64)> = points
        .into_iter()
        .filter_map(|p| p.headline().map(|s| (p, s.mean)))
        .collect();
    let higher = scored.first()?.0.higher_is_better();
    scored
        .into_iter()
        .max_by(|a, b| {
            if higher {
                a.1.total_cmp(&b.1)
            } else {
                b.1.total_cmp(&a.1)
            }
        })
        .map(|(p, _)| p)
}

/// Display form of a parameter value (`100`, `set`, `[1,2]`).
pub fn param_str(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A setting's value as runs and points are told apart by: [`param_str`], but one form
/// for a setting that can be typed several ways. A CPU list (`server_cpus`, `cpus`...)
/// in Linux's short form, in the order given: `0-3` (a flag's text, a plan's string),
/// `0,1,2,3` and `[0,1,2,3]` are one list, which compare pooled apart and called not
/// like for like. The load generators are a set: `rbh3,rbh2` is `rbh2,rbh3`
/// (acceptance K, F4). A whole number is one whether typed `1` or `1.0`.
pub fn setting_key(k: &str, v: &serde_json::Value) -> String {
    if k.ends_with("cpus") {
        // Not a CPU list: as stored, and then no list meets it.
        return stored_cpu_list(v).map_or_else(|_| param_str(v), |c| model::cpu_list_text(&c));
    }
    if k == "loadgen_hosts" {
        let mut hosts: Vec<String> = stored_items(v)
            .iter()
            .flat_map(|i| i.split(','))
            .map(|h| h.trim().to_string())
            .collect();
        hosts.sort_unstable();
        return hosts.join(",");
    }
    // `--duration 1.0` is `--duration 1`.
    param_str(&model::whole_numbers(v))
}

/// A stored CPU list, in the order given, however it was typed: `[2, 4]`, `["2-3", 5]`,
/// `"2,4"`, `0`; empty for `[]` (unpinned).
pub fn stored_cpu_list(v: &serde_json::Value) -> Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    for item in stored_items(v) {
        cpus.extend(model::parse_cpu_list(&item)?);
    }
    Ok(cpus)
}

/// A list setting's items as text; a scalar is a list of one.
fn stored_items(v: &serde_json::Value) -> Vec<String> {
    match v {
        serde_json::Value::Array(a) => a.iter().map(param_str).collect(),
        v => vec![param_str(v)],
    }
}

/// A setting's value for people: a list's items joined (`set, get`; `none` for an empty
/// one), a fraction to three decimals at most (oltp's default mix is stored as its
/// percentages, 43.47826086956522: shown 43.478), a string bare, anything else as JSON.
/// For reading only: a typed `--at` value is matched by [`setting_key`].
pub fn setting_str(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Array(a) if a.is_empty() => "none".into(),
        serde_json::Value::Array(a) => a.iter().map(setting_str).collect::<Vec<_>>().join(", "),
        serde_json::Value::Number(n) if n.is_f64() => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            let s = format!("{x:.3}");
            let s = s.trim_end_matches('0').trim_end_matches('.');
            // A figure that would read 0 (0.0001) keeps its own digits.
            if s == "0" || s == "-0" {
                param_str(v)
            } else {
                s.to_string()
            }
        }
        other => param_str(other),
    }
}

/// Names in the order a reader counts them: runs of digits compare as numbers, the rest
/// as text (`rbh2` before `rbh10`, `60B` before `1472B`); names equal that way (`rbh02`,
/// `rbh2`) fall back to plain text order, so the order is total and repeatable.
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    fn parts(s: &str) -> Vec<(bool, &str)> {
        let mut out = Vec::new();
        let mut start = 0;
        let bytes = s.as_bytes();
        for i in 1..=bytes.len() {
            if i == bytes.len() || bytes[i].is_ascii_digit() != bytes[start].is_ascii_digit() {
                out.push((bytes[start].is_ascii_digit(), &s[start..i]));
                start = i;
            }
        }
        out
    }
    let (pa, pb) = (parts(a), parts(b));
    for (x, y) in pa.iter().zip(&pb) {
        let o = match (x, y) {
            ((true, dx), (true, dy)) => {
                let (dx, dy) = (dx.trim_start_matches('0'), dy.trim_start_matches('0'));
                dx.len().cmp(&dy.len()).then_with(|| dx.cmp(dy))
            }
            ((_, tx), (_, ty)) => tx.cmp(ty),
        };
        if o.is_ne() {
            return o;
        }
    }
    pa.len().cmp(&pb.len()).then_with(|| a.cmp(b))
}

/// One sweep point of one run: a test at one set of parameters, with its repetitions.
#[derive(Debug, Clone)]
pub struct Point<'a> {
    pub run_index: usize,
    pub run: &'a RunRecord,
    pub workload: String,
    pub test: String,
    pub params: BTreeMap<String, serde_json::Value>,
    /// All repetitions, whatever their status (the figures use only valid ones).
    pub results: Vec<&'a ResultRecord>,
}

/// The sweep points of a run, in execution order of their first repetition.
pub fn points(run_index: usize, run: &RunRecord) -> Vec<Point<'_>> {
    let mut out: Vec<Point> = Vec::new();
    for r in &run.results {
        if let Some(p) = out
            .iter_mut()
            .find(|p| p.workload == r.workload && p.test == r.test && p.params == r.params)
        {
            p.results.push(r);
        } else {
            out.push(Point {
                run_index,
                run,
                workload: r.workload.clone(),
                test: r.test.clone(),
                params: r.params.clone(),
                results: vec![r],
            });
        }
    }
    out
}

/// Parameter names that take more than one value across these points (the swept ones).
pub fn varying_params(points: &[Point]) -> Vec<String> {
    let mut values: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for p in points {
        for (k, v) in &p.params {
            let e = values.entry(k.as_str()).or_default();
            let v = setting_key(k, v);
            if !e.contains(&v) {
                e.push(v);
            }
        }
    }
    values
        .into_iter()
        .filter(|(_, v)| v.len() > 1)
        .map(|(k, _)| k.to_string())
        .collect()
}

/// How long a test measured, or warmed up before (oltp's `rampup`), not the load it
/// offered: no chart's x axis (two runs that differed in `--duration` alone drew "power
/// vs duration" and "perf/W vs duration").
const MEASURE_LENGTH: [&str; 4] = ["duration", "requests", "warmup", "rampup"];

/// The parameters a chart may draw its x axis along: those that vary among `points`
/// ([`varying_params`]), less how long each measured ([`MEASURE_LENGTH`]).
pub fn chart_axes(points: &[Point]) -> Vec<String> {
    varying_params(points)
        .into_iter()
        .filter(|k| !MEASURE_LENGTH.contains(&k.as_str()))
        .collect()
}

/// Legend names for the series of one chart, one per point: the run's label first when
/// the chart shows more than one run, then the test and the parameters that differ among
/// these points (less `skip`, the chart's x axis). What every series shares is the
/// chart's context, not news: repeating it in each entry hides what tells them apart.
pub fn series_names(points: &[Point], labels: &[String], skip: &[&str]) -> Vec<String> {
    let distinct = |f: &dyn Fn(&Point) -> String| {
        let mut v: Vec<String> = points.iter().map(f).collect();
        v.sort();
        v.dedup();
        v.len() > 1
    };
    let many_runs = distinct(&|p| p.run_index.to_string());
    let many_tests = distinct(&|p| p.test.clone());
    let varying = varying_params(points);
    let mut skip: Vec<&str> = skip.to_vec();
    skip.extend(
        points
            .iter()
            .flat_map(|p| p.params.keys())
            .map(String::as_str)
            .filter(|k| !varying.iter().any(|v| v == k)),
    );
    points
        .iter()
        .map(|p| {
            let run = labels.get(p.run_index).cloned().unwrap_or_default();
            let mut what: Vec<String> = Vec::new();
            if many_tests {
                what.push(p.test.clone());
            }
            what.push(p.param_label(&skip));
            let what = what.join(" ").trim().to_string();
            match (many_runs, what.is_empty()) {
                (true, false) => format!("{run} \u{b7} {what}"),
                (false, false) => what,
                (_, true) => run,
            }
        })
        .collect()
}

/// The tests each workload of a run was to run, as its results name them: one entry per
/// workload (a suite has several), with whether the names are exact. The plan records
/// them since the runner kept them (`tests` of each part, from the workload itself:
/// crypto's `rsa` as `rsa512` .. `rsa4096`, net's `udp` as `udp1472`, `udp60`). A plan
/// stored before that gives the tests asked (its `params.tests`, else the workload's
/// first result's setting), some of which a workload stores under names of its own: not
/// exact; none, for a workload that stored nothing. An entry without a workload (an old
/// plan that did not name it) is of every result.
fn planned_tests(run: &RunRecord) -> Vec<(Option<String>, Vec<String>, bool)> {
    let parts: Vec<&serde_json::Value> = match run.plan.get("suite").and_then(|s| s.as_array()) {
        Some(suite) => suite.iter().collect(),
        None => vec![&run.plan],
    };
    let names = |v: &serde_json::Value| -> Option<Vec<String>> {
        Some(
            v.as_array()?
                .iter()
                .filter_map(|t| t.as_str().map(str::to_string))
                .collect(),
        )
    };
    parts
        .into_iter()
        .filter_map(|p| {
            let wl = p
                .get("workload")
                .and_then(|w| w.as_str())
                .map(str::to_string);
            if let Some(tests) = p.get("tests").and_then(names) {
                return Some((wl, tests, true));
            }
            let first = run
                .results
                .iter()
                .find(|r| wl.as_deref().is_none_or(|w| r.workload == w));
            let asked = p["params"]
                .get("tests")
                .and_then(names)
                .or_else(|| first?.settings.get("tests").and_then(names));
            match asked {
                Some(asked) => Some((wl, asked, false)),
                // A workload of an old suite plan that stored nothing, its tests not
                // said: every one of them never ran (no entry would leave it out).
                None if wl.is_some() && first.is_none() => Some((wl, Vec::new(), false)),
                None => None,
            }
        })
        .collect()
}

/// A run that did not finish, said under the Runs table: the tests it was to run that
/// stored nothing (`set, get` asked, killed during `set`: `get` never ran; crypto's `rsa`
/// killed after `rsa512`: `rsa1024` .. `rsa4096`), each workload's of a suite. None for
/// a finished run, or when every test stored something.
pub fn not_run_note(run: &RunRecord, label: &str) -> Option<String> {
    let state = run.status.unfinished_as()?;
    let planned = planned_tests(run);
    let suite = planned.len() > 1;
    // The tests named, and whether a workload's every test (their names not known) is.
    let mut count = 0;
    let mut every = false;
    let mut missing: Vec<String> = Vec::new();
    for (wl, tests, exact) in &planned {
        if tests.is_empty() {
            every = true;
            missing.push(format!("{} (every test)", wl.as_deref().unwrap_or("?")));
            continue;
        }
        let stored = |t: &str| {
            run.results
                .iter()
                .filter(|r| wl.as_deref().is_none_or(|w| r.workload == w))
                // A plan that kept only the tests asked: a test stored under a name of
                // its own (`udp` as `udp1472`) counts as run.
                .any(|r| r.test == t || (!exact && r.test.starts_with(t)))
        };
        let not: Vec<&str> = tests
            .iter()
            .map(String::as_str)
            .filter(|t| !stored(t))
            .collect();
        if not.is_empty() {
            continue;
        }
        count += not.len();
        missing.push(match wl {
            Some(wl) if suite => format!("{wl} {}", not.join(", ")),
            _ => not.join(", "),
        });
    }
    (count > 0 || every).then(|| {
        format!(
            "{label}: {state} before {} stored anything: {} (asked for: not started, or killed before its first checkpoint)",
            if count == 1 && !every {
                "this test"
            } else {
                "these tests"
            },
            missing.join("; ")
        )
    })
}

/// Why a summary row's figure is absent where its point ran, said once per row and
/// reason under the table: `(row, who, why)`, `who` as [`absent_reasons`] gives it.
pub fn absent_figures(labels: &[String], rows: &[SummaryRow]) -> Vec<(String, String, String)> {
    rows.iter()
        .flat_map(|r| {
            let why: Vec<Result<(), String>> = r
                .perf_missing
                .iter()
                .map(|m| m.clone().map_or(Ok(()), Err))
                .collect();
            absent_reasons(labels, why.iter().enumerate())
                .into_iter()
                .map(|(who, why)| (r.label.clone(), who, why))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Why power is absent, said once per reason rather than once per result: each
/// distinct reason with the runs it holds for, `on every run` when it holds for all of
/// `labels` (a VM without a power source says so once for the report). Cells that were
/// not run are not absences.
pub fn absent_reasons<'a, T: 'a>(
    labels: &[String],
    power: impl Iterator<Item = (usize, &'a Result<T, String>)>,
) -> Vec<(String, String)> {
    let mut by_reason: Vec<(String, Vec<usize>)> = Vec::new();
    for (run, p) in power {
        let Err(why) = p else { continue };
        if why == NOT_RUN {
            continue;
        }
        match by_reason.iter_mut().find(|(w, _)| w == why) {
            Some((_, runs)) if runs.contains(&run) => {}
            Some((_, runs)) => runs.push(run),
            None => by_reason.push((why.clone(), vec![run])),
        }
    }
    by_reason
        .into_iter()
        .map(|(why, mut runs)| {
            runs.sort_unstable();
            (runs_words(labels, &runs), why)
        })
        .collect()
}

/// `on every run` where `runs` (sorted) are all of `labels`' (more than one), else
/// `for A, C`.
fn runs_words(labels: &[String], runs: &[usize]) -> String {
    if labels.len() > 1 && runs.len() == labels.len() {
        "on every run".to_string()
    } else {
        let names: Vec<&str> = runs.iter().map(|i| labels[*i].as_str()).collect();
        format!("for {}", names.join(", "))
    }
}

/// Why %CPU used is absent in the efficiency tables ([`efficiency_rows_with`]'s rows),
/// once per reason, as [`absent_reasons`] says it, with the tests it is absent at where
/// the tables have several and it is not absent at all of them (`for net at net udp60
/// sender_host=rbh1 receiver_host=rbh2`): a net matrix's reason names the host that
/// lacked the figure, and that host received in many pairs.
pub fn cpu_used_absent(
    labels: &[String],
    rows: &[(String, usize, String, Efficiency)],
) -> Vec<(String, String)> {
    absent_reasons(labels, rows.iter().map(|r| (r.1, &r.3.cpu_used)))
        .into_iter()
        .map(|(who, why)| {
            // (run, test) of each absence for this reason, in run order.
            let mut at: Vec<(usize, &str)> = rows
                .iter()
                .filter(|r| matches!(&r.3.cpu_used, Err(w) if *w == why))
                .map(|r| (r.1, r.0.as_str()))
                .collect();
            at.sort_by_key(|(run, _)| *run);
            at.dedup();
            // Absent for this reason at every test its runs ran: said by run alone.
            let everywhere = rows
                .iter()
                .filter(|r| at.iter().any(|(run, _)| *run == r.1))
                .filter(|r| !matches!(&r.3.cpu_used, Err(w) if w == NOT_RUN))
                .all(|r| matches!(&r.3.cpu_used, Err(w) if *w == why));
            if everywhere {
                return (who, why);
            }
            let per_run: Vec<String> = at
                .chunk_by(|a, b| a.0 == b.0)
                .map(|of_run| {
                    let tests: Vec<&str> = of_run.iter().map(|a| a.1).collect();
                    format!("{} at {}", labels[of_run[0].0], tests.join(", "))
                })
                .collect();
            (format!("for {}", per_run.join("; ")), why)
        })
        .collect()
}

/// The power "reason" of a summary cell whose run has no such test.
pub const NOT_RUN: &str = "not run";

/// The marks of why power is absent in one workload's section of a report, one per
/// reason: `*` where the section has one reason, `*1`, `*2`... where it has several. A run
/// with two reasons read `absent*` in both its cells, under two notes `* Power absent
/// for M: ...`, and which reason was whose was left to a guess. Numbered over the whole
/// section, so that a cell of the efficiency or results tables and the summary's note
/// of its reason carry one mark.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AbsentMarks {
    reasons: Vec<String>,
}

impl AbsentMarks {
    /// The marks of these reasons, numbered in the order they first come; cells not run
    /// are no absence ([`NOT_RUN`]) and have none.
    pub fn new(reasons: impl IntoIterator<Item = String>) -> AbsentMarks {
        let mut out: Vec<String> = Vec::new();
        for why in reasons {
            if why != NOT_RUN && !out.contains(&why) {
                out.push(why);
            }
        }
        AbsentMarks { reasons: out }
    }

    /// The marks of a workload's section (`runs` hold that workload's results only):
    /// the reasons of its summary's power cells first, then of its points' (the
    /// efficiency and results tables', whose power is [`Point::power`]).
    pub fn of_section(runs: &[RunRecord], s: &Summary) -> AbsentMarks {
        let summary = s
            .rows
            .iter()
            .flat_map(|r| r.power.iter())
            .filter_map(|p| p.as_ref().err().cloned());
        let points = runs
            .iter()
            .enumerate()
            .flat_map(|(i, run)| points(i, run))
            .filter(|p| p.capacity_phase().is_none())
            .filter_map(|p| p.power().err());
        AbsentMarks::new(summary.chain(points).collect::<Vec<_>>())
    }

    /// The mark of a reason: `*`, or `*2` among several.
    pub fn mark(&self, why: &str) -> String {
        match self.reasons.iter().position(|r| r == why) {
            Some(i) if self.reasons.len() > 1 => format!("*{}", i + 1),
            _ => "*".to_string(),
        }
    }
}

/// Where a power figure came from, and so how far it may be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PowerBasis {
    /// Whole server, measured (IPMI DCMI, wall meter, hwmon whole-system).
    Measured,
    /// Whole server from a declared power model: never passed off as measured.
    Modelled,
    /// Only components (RAPL package + DRAM): labelled as such wherever shown.
    Component,
}

impl PowerBasis {
    /// The basis of a power figure: declared by a model, measured on the whole server,
    /// or of components only.
    pub fn of(modelled: bool, whole_system: bool) -> PowerBasis {
        if modelled {
            PowerBasis::Modelled
        } else if whole_system {
            PowerBasis::Measured
        } else {
            PowerBasis::Component
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            PowerBasis::Measured => "measured, whole server",
            PowerBasis::Modelled => "MODELLED (declared power model)",
            PowerBasis::Component => "component only (CPU package/DRAM)",
        }
    }

    /// The word a figure of this basis is tagged with in text (tables, compare): none
    /// for one measured on the whole server, as untagged figures are.
    pub fn tag(self) -> Option<&'static str> {
        match self {
            PowerBasis::Measured => None,
            PowerBasis::Modelled => Some("MODELLED"),
            PowerBasis::Component => Some("component only"),
        }
    }
}

/// Mean power of a sweep point on the system under test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PowerFigure {
    pub watts: f64,
    pub basis: PowerBasis,
    /// `ipmi-dcmi system`, `rapl package-0+dram-0`.
    pub source: String,
    /// The same source measured idle before the load, when the run has it.
    pub idle_w: Option<f64>,
    /// The measured host, when it also ran the load generator (a single-host run's
    /// `sut+loadgen`): its watts are the generator's work too ([`loadgen_power_notes`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_with_loadgen: Option<String>,
}

/// Said under an efficiency table where a power figure is of a host that also ran the load
/// generator: the seeds' servers had theirs on other machines, so the watts were the
/// server's alone (acceptance M, 5: a TCO took such watts per server unsaid).
pub fn loadgen_power_notes<'a>(rows: impl IntoIterator<Item = &'a Efficiency>) -> Vec<String> {
    let mut hosts: Vec<&str> = Vec::new();
    for h in rows
        .into_iter()
        .filter_map(|e| e.power.as_ref().ok()?.shared_with_loadgen.as_deref())
    {
        if !hosts.contains(&h) {
            hosts.push(h);
        }
    }
    hosts.iter().map(|h| loadgen_power_note(h)).collect()
}

/// That `who` (a host, or hosts with the sides of a comparison) also ran the load
/// generator, so its power holds the generator's work.
pub fn loadgen_power_note(who: &str) -> String {
    format!(
        "{who} also ran the load generator: its power, and the figures per watt, include the \
         generator's work; with the generators on other hosts the server's watts are its own"
    )
}

/// Hosts that are (or include) the system under test; empty when roles say nothing.
fn sut_hosts(run: &RunRecord) -> Vec<&str> {
    run.hosts
        .iter()
        .filter(|h| h.role.contains("sut"))
        .map(|h| h.host.as_str())
        .collect()
}

/// Workloads that launch no server: the measured work runs in the driver itself (crypto's
/// signs, mem's loads), so that process's CPU is the work's ([`CpuBasis::WorkProcess`]),
/// on a host that is both the system under test and the load generator too.
const WORK_IN_DRIVER: &[&str] = &["crypto", "mem"];

/// Watched server processes whose own CPU time is not their server's: PostgreSQL serves
/// each connection in a backend process of its own, forked by the postmaster (the one
/// process watched), so the postmaster's figure alone misses nearly all of the server's
/// work. Figures that count the descendants too ([`model::ProcCpu::with_descendants`])
/// are whole; records from before they were counted hold the postmaster's alone.
const SERVER_WORK_IN_CHILDREN: &[&str] = &["postgres"];

/// Whose CPU a "%CPU used" figure counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CpuBasis {
    /// Every CPU of a system-under-test host (the iperf3 study's "%CPU used"): one that
    /// ran no load generator, or whose work runs in the driver itself where that process
    /// was not watched (a record from before it was).
    Host,
    /// The watched server processes (their roles, `mariadbd`, `server:0`), on a host
    /// that also ran the load generator.
    ServerProcesses(Vec<String>),
    /// The process the work itself runs in (crypto's signs, mem's loads run in rackbench:
    /// [`WORK_IN_DRIVER`]), where it was watched: the host's other processes are no part
    /// of the work (a busy neighbour made crypto's CPU per sign read 3.8x its own).
    WorkProcess,
}

impl CpuBasis {
    /// `whole SUT host`, `server processes (server x3)`.
    pub fn label(&self) -> String {
        match self {
            CpuBasis::Host => "whole SUT host".to_string(),
            CpuBasis::WorkProcess => "rackbench's process, where the work runs".to_string(),
            CpuBasis::ServerProcesses(roles) => {
                // `server:0`, `server:worker1`... as `server x3`.
                let kinds = model::counted(roles.iter().map(|r| r.split(':').next().unwrap_or(r)));
                format!("server processes ({})", kinds.join(", "))
            }
        }
    }
}

/// The flags of a cell that shows codes alone, each code once (the first of it): every
/// repetition's `other_load` read `⚠ other_load ⚠ other_load`.
pub fn distinct_codes(flags: &[Flag]) -> Vec<&Flag> {
    let mut out: Vec<&Flag> = Vec::new();
    for f in flags {
        if !out.iter().any(|o| o.code == f.code) {
            out.push(f);
        }
    }
    out
}

/// Under a summary whose cells carry flags (their codes only).
pub const SUMMARY_FLAGS_NOTE: &str =
    "⚠ marks a result with a warning; each warning's message is listed under the results table below.";

/// The warnings of a results table's rows (row name, its flags), each distinct one (code
/// and message) once with the rows that carry it, in the order they first appear: the
/// cells show codes alone, the sentences are said once below the table (a multi-host
/// row carried some 1500 characters of `steal`/`other_load` prose per host, acceptance
/// pass G, 13).
pub fn warnings_below(rows: &[(String, Vec<Flag>)]) -> Vec<(&Flag, Vec<&str>)> {
    let mut out: Vec<(&Flag, Vec<&str>)> = Vec::new();
    for (name, flags) in rows {
        for f in flags {
            let at = out
                .iter()
                .position(|(g, _)| g.code == f.code && g.message == f.message);
            match at {
                Some(i) if !out[i].1.contains(&name.as_str()) => out[i].1.push(name),
                Some(_) => {}
                None => out.push((f, vec![name])),
            }
        }
    }
    out
}

/// A warning said below a results table: `code: message (rows)`, as plain text for the
/// formats to escape; the rows named up to four.
pub fn warning_below(f: &Flag, rows: &[&str]) -> String {
    let named = match rows {
        [a, b, c, d, rest @ ..] if !rest.is_empty() => {
            format!("{a}, {b}, {c}, {d} and {} more", rest.len())
        }
        _ => rows.join(", "),
    };
    format!("{}: {} ({named})", f.code, f.message)
}

/// What a "%CPU used" column holds, said under every table that shows one.
pub const CPU_USED_MEANING: &str = "%CPU used is the system under test's CPU in percent of one CPU: the sum of every CPU's busy % on a host that ran no load generator and shares its kernel with none that did (as in the iperf3 study), else (network namespaces or containers of one machine included) the watched server processes' CPU, or for work that runs in rackbench itself (crypto, mem) its process's; each figure says which.";

/// CPU used on the system under test, in percent of one CPU (100 = one core busy).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuFigure {
    pub pct: f64,
    pub basis: CpuBasis,
}

/// The CPU the system under test spent during one result, or why it cannot be told.
///
/// On a host that is the system under test only, every CPU's busy percent summed (the
/// iperf3 study's "%CPU used"). On a host that also ran the load generator (a single-host
/// run's `sut+loadgen`), the host's CPU is the generator's too (an open-loop generator
/// spinning a core would make the server's CPU per operation ten times what it is): the
/// watched server processes' CPU is taken instead, and without it the figure is missing.
/// Work that runs in the driver itself (crypto, mem) counts that process's CPU wherever
/// it was watched: the host's other processes are no part of it.
pub fn sut_cpu(run: &RunRecord, r: &ResultRecord) -> Result<CpuFigure, String> {
    let ts = sut_summary(run, r).ok_or("no telemetry was recorded for this result")?;
    let fig = counted_cpu(run, r, ts)?;
    match ends_own_cpu(r, &ts.host, &fig.basis) {
        Some((own, whose)) if fig.pct < 0.9 * own && own - fig.pct > 0.5 => Err(format!(
            "the kernel counted {:.1}% of one CPU ({}) on {}, below the {:.1}% that {whose} \
             ran by {}: this kernel samples CPU time at its ticks, and work that sleeps \
             between them (a paced or napping end) goes uncounted; no figure rather than \
             a low one (the ends' own CPU is in the network table)",
            fig.pct,
            fig.basis.label(),
            model::host_display_name(&run.hosts, &ts.host),
            own,
            if whose.contains(" and ") {
                "their threads' run time"
            } else {
                "its threads' run time"
            },
        )),
        _ => Ok(fig),
    }
}

/// The CPU a net test's ends on `host` ran by their threads' own run time (`getrusage`,
/// not sampled at the kernel's ticks), of the ends `basis` covers (the whole host: every
/// end there; server processes: the receiver), and whose it is. None for other
/// workloads. A paced UDP pair read 6.3% of one CPU for its whole host, where its
/// sender's and receiver's threads alone ran 38.6% (acceptance N, 1): a figure under
/// its own ends' is the ticks missing work, and no figure to publish.
fn ends_own_cpu(r: &ResultRecord, host: &str, basis: &CpuBasis) -> Option<(f64, String)> {
    if r.workload != "net" {
        return None;
    }
    let end_host = |k: &str| r.params.get(k).and_then(|v| v.as_str());
    let ends: &[(&str, &str, &str)] = match basis {
        CpuBasis::Host => &[
            ("receiver_cpu_pct", "receiver_host", "the receiver"),
            ("sender_cpu_pct", "sender_host", "the sender"),
        ],
        CpuBasis::ServerProcesses(_) => &[("receiver_cpu_pct", "receiver_host", "the receiver")],
        CpuBasis::WorkProcess => return None,
    };
    let mut own = 0.0;
    let mut whose: Vec<&str> = Vec::new();
    for (metric, at, name) in ends {
        // A local run's ends are both on its one host.
        if end_host(at).is_some_and(|h| h != host) {
            continue;
        }
        if let Some(m) = r.metric(metric, &[]) {
            own += m.value;
            whose.push(name);
        }
    }
    (!whose.is_empty()).then(|| (own, whose.join(" and ")))
}

/// The CPU a result's system under test used as the kernel counted it ([`sut_cpu`]).
fn counted_cpu(
    run: &RunRecord,
    r: &ResultRecord,
    ts: &TelemetrySummary,
) -> Result<CpuFigure, String> {
    // A generator (a net sender) on this host in this result, or on another name of its
    // kernel (a namespace or container of the same machine: its CPUs count the
    // generator's work too). In this result: a matrix's host sends in other pairs.
    let drives = |h: &str| model::drives_load(&crate::hosts_view::role_in(run, r, h));
    let shared = drives(&ts.host)
        || model::kernel_mates(&run.hosts, &ts.host)
            .into_iter()
            .any(drives);
    if WORK_IN_DRIVER.contains(&r.workload.as_str()) {
        // The work's own process where it was watched; else the host's CPUs (a record
        // from before the process was watched), as on a host that ran nothing else.
        if let Some(p) = ts
            .procs
            .iter()
            .find(|p| model::is_rackbench_process(&p.role))
        {
            return Ok(CpuFigure {
                pct: p.total_pct(),
                basis: CpuBasis::WorkProcess,
            });
        }
    } else if shared {
        let server: Vec<&model::ProcCpu> = ts
            .procs
            .iter()
            .filter(|p| !model::is_rackbench_process(&p.role))
            .collect();
        if server.is_empty() {
            return Err(
                "the SUT host also ran the load generator (itself, or another host on its kernel); no per-process CPU of the server was recorded"
                    .to_string(),
            );
        }
        if let Some(p) = server
            .iter()
            .find(|p| SERVER_WORK_IN_CHILDREN.contains(&p.role.as_str()) && !p.with_descendants)
        {
            return Err(format!(
                "the SUT host also ran the load generator (itself, or another host on its kernel), and of the server only `{}` was watched, not the processes it serves connections in",
                p.role
            ));
        }
        let mut roles: Vec<String> = server.iter().map(|p| p.role.clone()).collect();
        roles.sort();
        roles.dedup();
        return Ok(CpuFigure {
            pct: server.iter().map(|p| p.total_pct()).sum(),
            basis: CpuBasis::ServerProcesses(roles),
        });
    }
    let Some(pct) = ts.cpus_sum(|_| true, model::CpuUtil::busy_pct) else {
        return Err("no per-CPU utilisation was recorded on the SUT".to_string());
    };
    Ok(CpuFigure {
        pct,
        basis: CpuBasis::Host,
    })
}

/// The exact latency distribution of some stored histograms: those of the preferred
/// kind (`corrected` when present: an open loop's coordinated-omission-correct view,
/// never mixed with its `service` view) merged, and of an `all` histogram alone when
/// there is one (it already holds every operation). Returns (kind, names merged,
/// histogram); None when nothing was recorded.
pub fn merged_latency<'a>(
    hists: impl Iterator<Item = &'a model::HistogramRecord> + Clone,
) -> Option<(String, Vec<String>, Histogram<u64>)> {
    // Requests' latency only: a connect time is no request's.
    let hists = hists.filter(|h| h.is_request_latency());
    let kind = if hists.clone().any(|h| h.kind == "corrected") {
        "corrected".to_string()
    } else {
        hists.clone().next()?.kind.clone()
    };
    let has_all = hists.clone().any(|h| h.kind == kind && h.name == "all");
    let mut merged: Option<Histogram<u64>> = None;
    let mut names = Vec::new();
    for h in hists.filter(|h| h.kind == kind && (!has_all || h.name == "all")) {
        let Ok(d) = h.histogram() else { continue };
        match merged.as_mut() {
            None => merged = Some(d),
            Some(m) => {
                if m.add(&d).is_err() {
                    continue;
                }
            }
        }
        if !names.contains(&h.name) {
            names.push(h.name.clone());
        }
    }
    merged.filter(|h| !h.is_empty()).map(|h| (kind, names, h))
}

/// The telemetry summary of the system under test in one result.
///
/// The result's own system under test first: the `sut_host` its point ran against, or a
/// net pair's `receiver_host` (a pair's receiver is its system under test, as the runner
/// names the roles). A host of a net matrix is sender in one pair and receiver in another,
/// so the run's roles cannot tell, and the first summary of the result may be the
/// sender's. Then a host whose role is the system under test; then the only host.
pub fn sut_summary<'a>(run: &RunRecord, r: &'a ResultRecord) -> Option<&'a TelemetrySummary> {
    let own = ["sut_host", "receiver_host"]
        .iter()
        .find_map(|k| r.params.get(*k).and_then(|v| v.as_str()));
    if let Some(host) = own {
        return r.telemetry_summary.iter().find(|t| t.host == host);
    }
    let sut = sut_hosts(run);
    r.telemetry_summary
        .iter()
        .find(|t| sut.contains(&t.host.as_str()))
        .or_else(|| r.telemetry_summary.first())
}

/// The power figure of one telemetry summary (the one rule, [`model::power::headline`]),
/// or why there is none.
pub(crate) fn power_of_summary(
    ts: &TelemetrySummary,
) -> Result<(HeadlinePower, PowerBasis), String> {
    match model::power::headline(&ts.power) {
        Some(h) => {
            let basis = PowerBasis::of(h.modelled, h.whole_system);
            Ok((h, basis))
        }
        None if !ts.power.is_empty() => Err(format!(
            "no whole-server source, and no RAPL package or DRAM zone among the power read ({})",
            ts.power
                .iter()
                .map(|p| format!("{} {}", p.source, p.zone))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        None => Err(ts
            .power_missing
            .clone()
            .unwrap_or_else(|| "no power source was read on this host".to_string())),
    }
}

/// The same source measured idle on `host`, when the run has every zone of it.
pub(crate) fn idle_for(run: &RunRecord, host: &str, h: &HeadlinePower) -> Option<f64> {
    let idle = run.idle_power.iter().find(|i| i.host == host)?;
    model::power::same_source_watts(h, &idle.power)
}

impl<'a> Point<'a> {
    /// The capacity procedure this point is ([`capacity_phase`]), None for an ordinary test.
    pub fn capacity_phase(&self) -> Option<&'a str> {
        self.results.iter().find_map(|r| capacity_phase(r))
    }

    /// Repetitions that count: completed and not flagged invalid.
    pub fn valid(&self) -> Vec<&'a ResultRecord> {
        self.results
            .iter()
            .copied()
            .filter(|r| r.status == Status::Ok && !r.is_invalid())
            .collect()
    }

    /// The value this point ran `key` with: as given (its parameters), else its results'
    /// effective setting (a default, [`model::ResultRecord::setting`]); None when neither
    /// says (a knob its workload does not have, or results stored before settings were
    /// kept).
    pub fn setting(&self, key: &str) -> Option<&serde_json::Value> {
        self.params
            .get(key)
            .or_else(|| self.results.iter().find_map(|r| r.settings.get(key)))
    }

    /// Whether this point's results say every setting they ran with (stored since
    /// settings were kept): a knob [`Point::setting`] does not find is then none of its
    /// workload's.
    pub fn knows_settings(&self) -> bool {
        self.results.iter().any(|r| !r.settings.is_empty())
    }

    /// `pipeline=100 instances=2` (all parameters, or all but `skip`).
    pub fn param_label(&self, skip: &[&str]) -> String {
        let mut parts: Vec<(&str, String)> = self
            .params
            .iter()
            .filter(|(k, _)| !skip.contains(&k.as_str()))
            // The runner may echo the test as a parameter; the label already says it.
            .filter(|(k, v)| !(k.as_str() == "test" && param_str(v) == self.test))
            // The run's list of tests says nothing of this point (the run's command has it).
            .filter(|(k, _)| k.as_str() != "tests")
            .map(|(k, v)| (k.as_str(), format!("{k}={}", param_str(v))))
            .collect();
        // A pair's sender before its receiver, as `--pairs a>b` reads (not by name order).
        let at = |key: &str| parts.iter().position(|(k, _)| *k == key);
        if let (Some(r), Some(s)) = (at("receiver_host"), at("sender_host")) {
            if r < s {
                let sender = parts.remove(s);
                parts.insert(r, sender);
            }
        }
        parts
            .into_iter()
            .map(|(_, text)| text)
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// `set pipeline=100 instances=2`.
    pub fn label(&self) -> String {
        self.label_without(&[])
    }

    /// [`Point::label`] less the parameters in `skip`.
    pub fn label_without(&self, skip: &[&str]) -> String {
        let p = self.param_label(skip);
        if p.is_empty() {
            self.test.clone()
        } else {
            format!("{} {p}", self.test)
        }
    }

    pub fn headline_name(&self) -> &str {
        self.results.first().map_or("", |r| r.headline.as_str())
    }

    /// Whether more of this point's headline is better ([`higher_is_better`]).
    pub fn higher_is_better(&self) -> bool {
        higher_is_better(self.headline_name(), &self.headline_unit())
    }

    /// The headline's unit as a reader wants it: the stored unit, except that a generic
    /// `ops/s` on a metric that names its operation (`signs_per_s`) says which (`signs/s`).
    pub fn headline_unit(&self) -> String {
        self.results
            .iter()
            .find_map(|r| {
                r.metric(&r.headline, &[])
                    .map(|m| display_unit(&m.name, &m.unit))
            })
            .unwrap_or_default()
    }

    /// Headline figure of each valid repetition; none when only some of them made one
    /// ([`model::headline_of_some_repetitions`]: 1,000 ops/s was a search's figure where
    /// 2 of its 3 repetitions missed the objective at the lowest rate, audit s44).
    pub fn headline_values(&self) -> Vec<f64> {
        let valid = self.valid();
        if model::headline_of_some_repetitions(&valid).is_some() {
            return Vec::new();
        }
        valid.iter().filter_map(|r| r.headline_value()).collect()
    }

    pub fn headline(&self) -> Option<Sample> {
        Sample::of(&self.headline_values())
    }

    /// Why this point's headline is only a lower bound, None when it is a measurement:
    /// one of its repetitions' is ([`model::ResultRecord::headline_lower_bound`]). A mean
    /// over bounds and measurements is a bound of the mean too, so the figure stands,
    /// marked `≥`, and is set against no other as if measured.
    pub fn headline_bound(&self) -> Option<String> {
        self.headline()?;
        let valid = self.valid();
        let why: Vec<String> = valid
            .iter()
            .filter_map(|r| r.headline_lower_bound())
            .collect();
        let first = why.first()?;
        Some(match valid.len() {
            1 => first.clone(),
            n => format!(
                "{first}; {} of its {n} repetitions found a bound",
                why.len()
            ),
        })
    }

    /// The results tables' headline cell of a point with a headline, `s` (mean ± sd
    /// unit), led by `≥ ` where it is a lower bound ([`Self::headline_bound`]).
    pub fn headline_cell(&self, s: &Sample) -> String {
        format!(
            "{}{}{} {}",
            if self.headline_bound().is_some() {
                "≥ "
            } else {
                ""
            },
            crate::fmt::num(s.mean),
            s.sd.map(|d| format!(" ± {}", crate::fmt::num(d)))
                .unwrap_or_default(),
            self.headline_unit()
        )
    }

    /// Why this point has no headline figure (None when it has one): a headline the
    /// workload reported missing says its own reason (mem's RAM latency on a host whose
    /// caches it could not exceed); else the repetitions were invalid or did not complete,
    /// with what an interrupted one measured before it stopped ([`Self::partial_figure`]).
    pub fn headline_missing(&self) -> Option<String> {
        if self.headline().is_some() {
            return None;
        }
        if let Some(why) = model::headline_of_some_repetitions(&self.valid()) {
            return Some(why);
        }
        // Said after the state of a repetition that did not complete; partial itself.
        let measured = self.partial_figure();
        let mut why: Vec<String> = Vec::new();
        for r in &self.results {
            let reason = if let Some(m) = r.missing.iter().find(|m| m.name == r.headline) {
                format!("{}: {}", r.headline, m.reason)
            } else if let Some(state) = r.status.unfinished_as() {
                match &measured {
                    Some(f) => format!("{state} after measuring {f}"),
                    None => format!("{state} before it measured"),
                }
            } else {
                r.uncounted_as()
                    .unwrap_or_else(|| format!("{} not reported", r.headline))
            };
            if !why.contains(&reason) {
                why.push(reason);
            }
        }
        (!why.is_empty()).then(|| why.join("; "))
    }

    /// What the repetitions that did not complete measured before they stopped (a test
    /// killed after a checkpoint, a server that died mid-test): their mean headline with
    /// its unit, marked partial, in no mean; None when they measured nothing.
    pub fn partial_figure(&self) -> Option<String> {
        let v: Vec<f64> = self
            .results
            .iter()
            .filter(|r| r.status != Status::Ok)
            .filter_map(|r| r.headline_value())
            .collect();
        stats::mean(&v).map(|m| {
            format!(
                "{} {} (partial, left out of every mean)",
                crate::fmt::num(m),
                self.headline_unit()
            )
        })
    }

    /// The results tables' headline cell of a point without a headline: what its
    /// unfinished repetitions measured, else why it has none. A bare `-` there read as a
    /// test that was not run, the reason given only in the summary.
    pub fn no_headline_cell(&self) -> String {
        self.partial_figure()
            .or_else(|| self.headline_missing().map(|w| format!("missing: {w}")))
            .unwrap_or_else(|| "-".into())
    }

    /// Why this point has no valid repetition to take a figure from, in the words
    /// compare and TCO use ([`model::none_counted_because`]): "no valid result: its only
    /// repetition is interrupted (partial)".
    pub fn no_valid_why(&self) -> String {
        match model::none_counted_because(&self.results, "repetition") {
            Some(why) => format!("no valid result: {why}"),
            None => "no valid result".to_string(),
        }
    }

    /// The Results table's `n`: valid of stored repetitions, and of those asked when a
    /// run that did not finish stored fewer (`2/2 of 3 asked`).
    pub fn reps_cell(&self) -> String {
        let cell = format!("{}/{}", self.valid().len(), self.results.len());
        let asked = self.run.plan["run"]["repeat"].as_u64().unwrap_or(0);
        let until_cv = !self.run.plan["run"]["until_cv_pct"].is_null();
        if self.run.status != Status::Ok && !until_cv && (self.results.len() as u64) < asked {
            format!("{cell} of {asked} asked")
        } else {
            cell
        }
    }

    /// A metric's mean over valid repetitions (unlabelled metric of that name).
    pub fn metric_mean(&self, name: &str) -> Option<f64> {
        let v: Vec<f64> = self
            .valid()
            .iter()
            .filter_map(|r| r.metric(name, &[]).map(|m| m.value))
            .collect();
        stats::mean(&v)
    }

    /// Every validity flag of every repetition, once each; plus a note for failed or
    /// interrupted repetitions, whose figures are left out.
    pub fn flags(&self) -> Vec<Flag> {
        let mut out: Vec<Flag> = Vec::new();
        for r in &self.results {
            for f in &r.flags {
                if !out
                    .iter()
                    .any(|o| o.code == f.code && o.message == f.message)
                {
                    out.push(f.clone());
                }
            }
            if r.status != Status::Ok {
                let f = Flag::warning(
                    "not_completed",
                    format!(
                        "repetition {} {:?}{}: left out of the figures",
                        r.repetition,
                        r.status,
                        r.error
                            .as_ref()
                            .map(|e| format!(" ({e})"))
                            .unwrap_or_default()
                    ),
                );
                out.push(f);
            }
        }
        out.extend(self.unsteady());
        out
    }

    /// A warning when the valid repetitions' headline varies by more than
    /// [`model::UNSTEADY_CV_PCT`] (sd over mean): the mean is then no steady figure, and a
    /// summary that picks it as a column's best says so (acceptance M, 7: two repetitions
    /// of 32,404 and 79,260 new orders/min, cv 59%, made a "3.89x" difference unflagged).
    pub fn unsteady(&self) -> Option<Flag> {
        let values = self.headline_values();
        let cv = model::unsteady_cv(&values)?;
        Some(Flag::warning(
            "high_variation",
            format!(
                "its {} repetitions vary by cv {cv:.1}% (sd over mean), above \
                 {}%: the mean is no steady figure; run more repetitions \
                 (--repeat, or --until-cv 3) on a quieter host",
                values.len(),
                model::UNSTEADY_CV_PCT
            ),
        ))
    }

    /// The exact latency distribution of the valid repetitions: histograms of the
    /// preferred kind (`corrected` when present) merged, never percentiles averaged.
    /// Returns (kind, names merged, histogram). None for a capacity test: its histograms
    /// are one per offered rate, and their merge is no rate's latency.
    pub fn latency(&self) -> Option<(String, Vec<String>, Histogram<u64>)> {
        if self.capacity_phase().is_some() {
            return None;
        }
        let valid = self.valid();
        merged_latency(valid.iter().flat_map(|r| r.histograms.iter()))
    }

    /// The connect times of the valid repetitions merged exactly (httperf's connection
    /// time, [`model::hist::CONNECT_KIND`]); None when none timed a connect.
    pub fn connect_time(&self) -> Option<Histogram<u64>> {
        let mut merged: Option<Histogram<u64>> = None;
        for h in self
            .valid()
            .iter()
            .flat_map(|r| &r.histograms)
            .filter(|h| !h.is_request_latency())
        {
            let Ok(d) = h.histogram() else { continue };
            match merged.as_mut() {
                None => merged = Some(d),
                Some(m) => {
                    let _ = m.add(&d);
                }
            }
        }
        merged.filter(|h| !h.is_empty())
    }

    /// The valid repetitions whose power is on the first one's source, each with its
    /// watts, and that source; or why none has power.
    fn powered(&self) -> Powered<'a> {
        let mut out = Powered {
            reps: Vec::new(),
            chosen: None,
            why: None,
        };
        if self.valid().is_empty() {
            // Power its stopped repetitions could not have had either says so (no
            // source), else why there is no repetition to take it from.
            out.why = Some(
                self.results
                    .iter()
                    .filter_map(|r| sut_summary(self.run, r))
                    .find_map(|ts| power_of_summary(ts).err())
                    .unwrap_or_else(|| self.no_valid_why()),
            );
        }
        for r in self.valid() {
            let Some(ts) = sut_summary(self.run, r) else {
                out.why = Some("no telemetry was recorded for this result".to_string());
                continue;
            };
            match power_of_summary(ts) {
                Ok((h, basis)) => {
                    // Only repetitions whose figure has the first one's source are averaged.
                    if !matches!(&out.chosen, Some(c) if c.0 != basis || c.1.provenance != h.provenance)
                    {
                        out.reps.push((r, h.mean_watts));
                        out.chosen = Some((basis, h, ts.host.clone()));
                    }
                }
                Err(e) => out.why = Some(e),
            }
        }
        out
    }

    /// Mean power on the system under test over valid repetitions, or why there is none.
    pub fn power(&self) -> Result<PowerFigure, String> {
        self.powered().figure(self.run)
    }

    /// [`Point::power`] with the watts above the same source's idle on the same host
    /// ([`above_idle`]), or why there are none: no idle measured from that source, or
    /// a power under load below it.
    pub fn power_above_idle(&self) -> Result<(PowerFigure, Result<f64, String>), String> {
        let powered = self.powered();
        let f = powered.figure(self.run)?;
        let above = match f.idle_w {
            Some(i) => above_idle(f.watts, i),
            None => Err(idle_missing(self.run, &powered)),
        };
        Ok((f, above))
    }

    /// The telemetry summaries of the SUT for valid repetitions.
    pub fn sut_summaries(&self) -> Vec<&'a TelemetrySummary> {
        self.valid()
            .into_iter()
            .filter_map(|r| sut_summary(self.run, r))
            .collect()
    }

    /// CPU used on the system under test ([`sut_cpu`]), mean of the valid repetitions
    /// counted on the first one's basis, or why there is none.
    pub fn cpu_used(&self) -> Result<CpuFigure, String> {
        self.cpu_terms().map(|(c, _)| c)
    }

    /// [`Point::cpu_used`], and the terms %CPU used per unit of throughput divides: the
    /// mean CPU and the mean throughput of the repetitions that have both (as perf/W's:
    /// 100k, 100k and 160k ops/s at 100%, 100% and no CPU is 1.00% per 1k ops/s, not the
    /// 0.83 of the two's CPU over the three's throughput). None where none has both.
    pub fn cpu_terms(&self) -> Result<(CpuFigure, Option<(f64, f64)>), String> {
        let mut pcts = Vec::new();
        let mut both = Vec::new();
        let mut basis: Option<CpuBasis> = None;
        let mut why = None;
        for r in self.valid() {
            match sut_cpu(self.run, r) {
                Ok(f) if basis.as_ref().is_none_or(|b| *b == f.basis) => {
                    pcts.push(f.pct);
                    if let Some(v) = r.headline_value() {
                        both.push((f.pct, v));
                    }
                    basis = Some(f.basis);
                }
                Ok(_) => {}
                Err(e) => why = Some(e),
            }
        }
        let terms = stats::means_of_pairs(both);
        match (basis, stats::mean(&pcts)) {
            (Some(basis), Some(pct)) => Ok((CpuFigure { pct, basis }, terms)),
            _ => Err(why.unwrap_or_else(|| self.no_valid_why())),
        }
    }

    /// The throughput and the watts [`Efficiency::perf_per_w`] divides
    /// ([`Powered::per_watt_terms`]): a side of several runs in a comparison is their
    /// means' ratio, as a variant's repetitions give the report's figure. None where no
    /// repetition has both.
    pub fn per_watt_terms(&self) -> Option<(f64, f64)> {
        self.powered().per_watt_terms()
    }

    /// [`model::phases_of`] of its valid repetitions.
    pub fn phases(&self) -> Option<String> {
        model::phases_of(&self.valid())
    }

    /// Efficiency figures of this point. None for a capacity test: its headline is one
    /// step's figure (or already per watt), the power and CPU the whole test's.
    pub fn efficiency(&self) -> Option<Efficiency> {
        if self.capacity_phase().is_some() {
            return None;
        }
        let perf = self.headline()?.mean;
        let powered = self.powered();
        let power = powered.figure(self.run);
        let cpu_terms = self.cpu_terms();
        let cpu = cpu_terms.clone().map(|(c, _)| c);
        // A headline better lower (a latency) has no per-watt figure.
        let terms = powered.per_watt_terms();
        let throughput = self.higher_is_better();
        let idle = match &power {
            Ok(p) => p.idle_w.ok_or_else(|| idle_missing(self.run, &powered)),
            Err(why) => Err(format!("no power figure: {why}")),
        };
        let phased = self.phases();
        let (perf_per_w, w_per_perf, dw_per_perf) = match (&power, terms) {
            _ if !throughput => {
                let no = || Err(NOT_A_THROUGHPUT.to_string());
                (no(), no(), no())
            }
            (Ok(_), _) if phased.is_some() => {
                let no = || Err(phased.clone().unwrap_or_default());
                (no(), no(), no())
            }
            (Ok(_), Some((perf_m, w_m))) if w_m > 0.0 && perf_m > 0.0 => (
                Ok(perf_m / w_m),
                Ok(w_m / perf_m),
                idle.clone()
                    .and_then(|i| above_idle(w_m, i))
                    .map(|dw| dw / perf_m),
            ),
            (Ok(_), _) => {
                let no = || {
                    Err(
                        "no repetition has both a throughput above zero and a power figure"
                            .to_string(),
                    )
                };
                (no(), no(), no())
            }
            (Err(why), _) => {
                let no = || Err(format!("no power figure: {why}"));
                (no(), no(), no())
            }
        };
        // The warnings on the idle figure taken (a busy host while it was measured): none
        // on a model's idle, which was declared, not measured (review H, 10).
        let idle_warnings = match (&idle, &powered.chosen) {
            (Ok(_), Some((basis, _, host))) if *basis != PowerBasis::Modelled => self
                .run
                .idle_power
                .iter()
                .filter(|i| &i.host == host)
                .flat_map(|i| i.flags.iter().map(|f| f.message.clone()))
                .collect(),
            _ => Vec::new(),
        };
        Some(Efficiency {
            perf,
            unit: self.headline_unit(),
            throughput,
            power,
            idle_w: idle,
            idle_warnings,
            perf_per_w,
            w_per_perf,
            dw_per_perf,
            cpu_pct_per_perf: match &cpu_terms {
                _ if !throughput => Err(NOT_A_THROUGHPUT.to_string()),
                Ok(_) if phased.is_some() => Err(phased.clone().unwrap_or_default()),
                Ok((_, Some((c, t)))) if *t > 0.0 => Ok(c / t),
                Ok((_, Some(_))) => Err("the throughput is zero".to_string()),
                Ok((_, None)) => {
                    Err("no repetition has both a throughput and a %CPU used".to_string())
                }
                Err(why) => Err(format!("no %CPU used: {why}")),
            },
            cpu_used: cpu,
        })
    }
}

/// A sweep point's repetitions with power ([`Point::powered`]).
struct Powered<'a> {
    /// The valid repetitions whose power is on the first one's source, with its watts.
    reps: Vec<(&'a ResultRecord, f64)>,
    /// That source: its basis, its figure, the host it was read on.
    chosen: Option<(PowerBasis, HeadlinePower, String)>,
    /// Why a repetition had no power.
    why: Option<String>,
}

impl Powered<'_> {
    /// The throughput and the watts perf/W is the ratio of: their means over the
    /// repetitions that have both figures, the throughput of those whose power was read,
    /// not of every one (100k, 100k and 160k ops/s over 300 W, 300 W and none is 333 per
    /// W, not the 400 of the three's mean over the two's). None where none has both.
    fn per_watt_terms(&self) -> Option<(f64, f64)> {
        stats::means_of_pairs(
            self.reps
                .iter()
                .filter_map(|(r, w)| r.headline_value().map(|v| (v, *w))),
        )
    }

    /// Their mean power, or why there is none.
    fn figure(&self, run: &RunRecord) -> Result<PowerFigure, String> {
        let ws: Vec<f64> = self.reps.iter().map(|(_, w)| *w).collect();
        match (&self.chosen, stats::mean(&ws)) {
            (Some((basis, h, host)), Some(w)) => Ok(PowerFigure {
                watts: w,
                basis: *basis,
                idle_w: idle_for(run, host, h),
                source: h.named(run),
                shared_with_loadgen: self
                    .reps
                    .iter()
                    .any(|(r, _)| model::sender_beside(&run.hosts, r, host))
                    .then(|| model::host_display_name(&run.hosts, host)),
            }),
            _ => Err(self
                .why
                .clone()
                .unwrap_or_else(|| "no valid result".to_string())),
        }
    }
}

/// How far the power under load may read below idle and still count as equal to it
/// (0 W above idle): 1 W or 0.1% of idle, whichever is larger. IPMI DCMI, the usual
/// whole-server source, reads whole watts, and a light test's mean (ticks of 120 and
/// 119 W) lands a watt under an idle of the same state (review H, 9); a wider gap is a
/// reading to doubt (at 800 W idle, 4 W below it is not published as 0 W above).
pub fn above_idle_tolerance_w(idle_w: f64) -> f64 {
    1.0_f64.max(idle_w.abs() * 0.001)
}

/// The distinct warnings on the idle figures of `rows`, in their order: each is said
/// once under a table whose Idle cells carry its mark.
pub fn idle_warnings<'a>(rows: impl IntoIterator<Item = &'a Efficiency>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for w in rows.into_iter().flat_map(|e| &e.idle_warnings) {
        if !out.contains(&w.as_str()) {
            out.push(w);
        }
    }
    out
}

/// Watts above idle: under load below idle (beyond [`above_idle_tolerance_w`]) is no
/// saving but a reading to doubt (a meter's idle taken in another state): no figure,
/// and why; within it, 0 W. The one rule for the efficiency tables and the power sweep
/// charts.
pub fn above_idle(watts: f64, idle_w: f64) -> Result<f64, String> {
    if watts < idle_w && idle_w - watts <= above_idle_tolerance_w(idle_w) {
        Ok(0.0)
    } else if watts < idle_w {
        Err(format!(
            "the power under load ({watts:.1} W) is below the idle power measured before it ({idle_w:.1} W): one of the two readings is wrong"
        ))
    } else {
        Ok(watts - idle_w)
    }
}

/// Why a latency headline has no per-watt or per-%CPU figure.
pub const NOT_A_THROUGHPUT: &str =
    "a latency is not a throughput (lower is better): per watt or per %CPU of it is no efficiency figure";

/// Why a point's power has no idle figure to subtract: none was measured on its host, or
/// none from the source its power was read from.
fn idle_missing(run: &RunRecord, powered: &Powered) -> String {
    let Some((_, h, host)) = &powered.chosen else {
        return "no power figure".to_string();
    };
    let source = h.named(run);
    match run.idle_power.iter().find(|i| &i.host == host) {
        None if run
            .plan
            .pointer("/run/idle_power_s")
            .and_then(|v| v.as_f64())
            == Some(0.0) =>
        {
            format!("no idle power was measured on {host} (--idle-power 0)")
        }
        None => format!(
            "no idle power was measured on {host} before the load (no {source} reading while idle)"
        ),
        Some(i) => {
            let mut seen: Vec<String> = Vec::new();
            for p in &i.power {
                let s = format!("{} {}", p.source, p.zone);
                if !seen.contains(&s) {
                    seen.push(s);
                }
            }
            format!(
                "idle power on {host} was read from {}, not from {source}, the source of the power under load",
                seen.join(", ")
            )
        }
    }
}

/// perf/W, W/tput and CPU/tput of one sweep point. A figure that cannot be had says why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Efficiency {
    pub perf: f64,
    pub unit: String,
    /// The headline is a throughput (more is better); else a latency, with no per-watt
    /// or per-%CPU figure ([`NOT_A_THROUGHPUT`]).
    pub throughput: bool,
    /// The power figure used, or why perf/W is absent.
    pub power: Result<PowerFigure, String>,
    /// The same source's idle power on the same host, or why there is none.
    pub idle_w: Result<f64, String>,
    /// Warnings on that idle figure (`idle_not_idle`: other programs ran while it was
    /// measured), so that it and W above idle are shown with them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub idle_warnings: Vec<String>,
    /// Of the same basis as `power` (measured, modelled, component): marked as it is.
    pub perf_per_w: Result<f64, String>,
    /// Watts per unit of throughput (whole figure).
    pub w_per_perf: Result<f64, String>,
    /// Watts above idle per unit of throughput (the iperf3 study's W/tput).
    pub dw_per_perf: Result<f64, String>,
    /// CPU used on the SUT and whose it is ([`sut_cpu`]), or why it is absent.
    pub cpu_used: Result<CpuFigure, String>,
    /// %CPU per unit of throughput (the iperf3 study's CPU/tput).
    pub cpu_pct_per_perf: Result<f64, String>,
}

impl Efficiency {
    /// The basis of the power behind perf/W and the watts per unit: they carry its marking.
    pub fn basis(&self) -> Option<PowerBasis> {
        self.power.as_ref().ok().map(|p| p.basis)
    }
}

/// One scale for every "per unit" column of an efficiency table (W, W above idle and %CPU
/// per unit), taken from the throughput the table divides by, not from each column's
/// figures: the largest of 1, 1k, 1M, 1G units not above the smallest throughput
/// (`per 1k ops/s` for a kv table at 95,000 ops/s, `per Gbit/s` for net at 12). So the
/// columns of one table, and the tables of one unit in any report, scale alike; a column
/// of zeros no longer switches its header to `per ops/s`. Returns (multiplier, prefix).
pub fn throughput_scale(perfs: &[f64]) -> (f64, &'static str) {
    let min = perfs
        .iter()
        .map(|v| v.abs())
        .filter(|v| *v > 0.0 && v.is_finite())
        .fold(f64::INFINITY, f64::min);
    if !min.is_finite() {
        return (1.0, "");
    }
    let mut out = (1.0, "");
    for (scale, prefix) in [(1e3, "1k "), (1e6, "1M "), (1e9, "1G ")] {
        if min >= scale {
            out = (scale, prefix);
        }
    }
    out
}

/// Efficiency of each run's best point per summary row: (row, run index, point label, figures).
/// The point is named by its test and the parameters that vary among these runs' points:
/// the fixed ones are said once ([`fixed_params`]), not in every cell.
pub fn efficiency_rows(runs: &[RunRecord]) -> Vec<(String, usize, String, Efficiency)> {
    efficiency_rows_with(runs, &Selection::default())
}

/// [`efficiency_rows`] at the points the selection chooses, as the summary takes them
/// ([`Selection::for_runs`]).
pub fn efficiency_rows_with(
    runs: &[RunRecord],
    sel: &Selection,
) -> Vec<(String, usize, String, Efficiency)> {
    let peak = peak_params(runs);
    let fixed = fixed_params(runs);
    let mut fixed: Vec<&str> = fixed.iter().map(|(k, _)| k.as_str()).collect();
    // Where each run ran is said once above the tables, not in every cell.
    fixed.extend(placement_params(runs));
    let mut out = Vec::new();
    for (row, per_run) in best_points_in(runs, &peak, &sel.for_runs(runs)) {
        for (i, p) in per_run.iter().enumerate() {
            if let Some(p) = p {
                if let Some(e) = p.efficiency() {
                    out.push((row.clone(), i, p.label_without(&fixed), e));
                }
            }
        }
    }
    out
}

/// The units of efficiency rows' headlines, in the order they first come, each with
/// whether it is a throughput: a table per unit, a latency's apart from throughputs.
pub fn units_of(rows: &[(String, usize, String, Efficiency)]) -> Vec<(String, bool)> {
    let mut units: Vec<(String, bool)> = Vec::new();
    for r in rows {
        let k = (r.3.unit.clone(), r.3.throughput);
        if !units.contains(&k) {
            units.push(k);
        }
    }
    units
}

/// Why an efficiency table's figures are absent where their power and %CPU used are not
/// (those say their own reasons, marked `*` and `†`): once per reason, each column named
/// by its heading. `heads` are the table's headings of perf/W, W per unit, W above idle
/// per unit and %CPU per unit; `idle_head` that of its idle power column, if it has one.
pub fn efficiency_absences(
    rows: &[&(String, usize, String, Efficiency)],
    idle_head: Option<&str>,
    heads: &[String; 4],
    labels: &[String],
) -> Vec<String> {
    type Pick = fn(&Efficiency) -> &Result<f64, String>;
    // (heading, figure, derived from power (else from %CPU used))
    let mut picks: Vec<(&str, Pick, bool)> = vec![
        (&heads[0], |e| &e.perf_per_w, true),
        (&heads[1], |e| &e.w_per_perf, true),
        (&heads[2], |e| &e.dw_per_perf, true),
        (&heads[3], |e| &e.cpu_pct_per_perf, false),
    ];
    if let Some(h) = idle_head {
        picks.insert(0, (h, |e| &e.idle_w, true));
    }
    let cols = picks
        .into_iter()
        .map(|(h, pick, of_power)| {
            let cells = rows
                .iter()
                .filter(|r| {
                    if of_power {
                        r.3.power.is_ok()
                    } else {
                        r.3.cpu_used.is_ok()
                    }
                })
                .map(|r| (r.1, pick(&r.3)))
                .collect();
            (h.to_string(), cells)
        })
        .collect();
    absent_columns(labels, cols)
}

/// A column of figures, each of a run, or why it is absent: its heading and its cells.
pub type Column<'a, T> = (String, Vec<(usize, &'a Result<T, String>)>);

/// Why figures of some columns are absent, once per reason: `Perf/W and W per op/s
/// absent for A: no power figure: ...`. `cols` are each column's name with its cells
/// (run index, figure); columns absent for the same runs and reason are named together.
pub fn absent_columns<'a, T: 'a>(labels: &[String], cols: Vec<Column<'a, T>>) -> Vec<String> {
    let mut by: Vec<(Vec<String>, String, String)> = Vec::new();
    for (name, cells) in cols {
        for (who, why) in absent_reasons(labels, cells.into_iter()) {
            match by.iter_mut().find(|(_, w, y)| *w == who && *y == why) {
                Some((names, _, _)) => names.push(name.clone()),
                None => by.push((vec![name.clone()], who, why)),
            }
        }
    }
    by.into_iter()
        .map(|(names, who, why)| {
            let names = match names.split_last() {
                Some((last, rest)) if !rest.is_empty() => {
                    format!("{} and {last}", rest.join(", "))
                }
                _ => names.join(""),
            };
            format!("{names} absent {who}: {why}")
        })
        .collect()
}

/// Linear extrapolation (the seed's "two single-socket boards per chassis"): a figure
/// measured on one board scaled to `factor` boards.
pub fn extrapolate(value: f64, factor: f64) -> f64 {
    value * factor
}

/// Scale a clock-bound figure from one frequency to another (per-clock extrapolation).
pub fn scale_by_clock(value: f64, measured_mhz: f64, target_mhz: f64) -> Option<f64> {
    (measured_mhz > 0.0).then(|| value * target_mhz / measured_mhz)
}

/// One row of the Table A1-style summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryRow {
    /// `set pipeline=1`.
    pub label: String,
    /// Per run: the best sweep point's mean headline (over `peak_params`).
    pub perf: Vec<Option<f64>>,
    /// Per run: why `perf` is None where the point ran ([`Point::headline_missing`]);
    /// said once under the table, the cell marked.
    #[serde(default)]
    pub perf_missing: Vec<Option<String>>,
    /// Per run: power at that point, or why absent.
    pub power: Vec<Result<PowerFigure, String>>,
    /// Per run: the parameters of the chosen point (`instances=46`).
    pub chosen: Vec<String>,
    /// Per run: warnings on the chosen point.
    pub flags: Vec<Vec<Flag>>,
    /// The headline's unit in this row (`signs/s`, `MB/s`).
    pub unit: String,
    /// Whether more of the headline is better ([`higher_is_better`]): false for a
    /// latency, which is neither extrapolated as a throughput nor taken as a TCO's
    /// performance.
    #[serde(default = "more_is_better")]
    pub higher_is_better: bool,
}

impl SummaryRow {
    /// Whether the means are over it: every column has a figure of it (a test some
    /// column lacks is left out of them, and named).
    fn in_means(&self) -> bool {
        self.perf.iter().all(Option::is_some)
    }
}

fn more_is_better() -> bool {
    true
}

/// One Difference column: a column's figures over the baseline column's (1.7 = 1.7x).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiffColumn {
    /// `B vs A`.
    pub label: String,
    /// Per row.
    pub perf: Vec<Option<f64>>,
    pub geomean: Option<f64>,
    pub power_mean: Option<f64>,
}

impl DiffColumn {
    /// `1.15x (+15%)`, `-` when either side is missing; a ratio too small or large for
    /// two decimals in the TCO's form (`0.0037x (-100%)`, never `0.00x`, which read as
    /// a column of zero).
    pub fn cell(r: Option<f64>) -> String {
        r.map_or("-".to_string(), |r| tco::fmt_difference(Some(r), 1.0))
    }

    /// [`DiffColumn::cell`] of a figure better lower says which way it went:
    /// `1.20x (+20%, worse)`, `0.83x (-17%, better)`. A latency's +20% under a table of
    /// performance read as a gain (audit: mem's `ram_latency_ns`, 100 ns then 120 ns). A
    /// throughput's stays as it was, more of it better as its heading says; a change that
    /// rounds to `+0%` is neither.
    pub fn cell_for(r: Option<f64>, higher_is_better: bool) -> String {
        let cell = Self::cell(r);
        match r {
            Some(r) if !higher_is_better && tco::fmt_pct_change(r) != "+0%" => {
                let word = if r > 1.0 { "worse" } else { "better" };
                // The cell ends in its percent's parenthesis: the word goes inside it.
                match cell.strip_suffix(')') {
                    Some(open) => format!("{open}, {word})"),
                    None => cell,
                }
            }
            _ => cell,
        }
    }
}

/// The Redis study's Table A1: per test, each run's figure and power, then the geometric
/// mean of performance and the arithmetic mean of power, over the tests every run has;
/// extrapolated columns after the measured ones, and Difference columns after those.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Column headings: the runs (or variants), then the extrapolated columns.
    pub runs: Vec<String>,
    /// How many of the columns are measured (the rest are extrapolated).
    pub measured: usize,
    /// Which point each row is taken at (`each column at its best instances`).
    pub selection: String,
    /// What was extrapolated, and how; what could not be.
    pub notes: Vec<String>,
    /// Each other column against the baseline (the first, unless chosen).
    pub differences: Vec<DiffColumn>,
    /// The unit every row with a figure shares, or empty when they differ (each row then
    /// says its own).
    pub unit: String,
    pub peak_params: Vec<String>,
    pub rows: Vec<SummaryRow>,
    pub geomean: Vec<Option<f64>>,
    /// Why there is no geometric mean (all None), when the rows are unlike things.
    pub geomean_note: Option<String>,
    pub power_mean: Vec<Option<f64>>,
    /// Why there is no mean of power (all None) whatever the figures: rows that are
    /// unlike measurements (crypto's thread counts, oltp's warehouses) have a power each
    /// of its own configuration, and their mean is the power of none of them.
    pub power_mean_note: Option<String>,
    /// Basis of each run's power mean (None when no power).
    pub power_basis: Vec<Option<PowerBasis>>,
    /// Tests left out of the means because some run lacks them.
    pub left_out: Vec<String>,
}

impl Summary {
    /// `Performance (ops/s)` when every row shares a unit, else `Performance` (each row
    /// then says its own, see [`Summary::row_name`]). Rows better lower are latencies
    /// ([`higher_is_better`]), never performance: `Latency (ns)` over mem's
    /// `ram_latency_ns` (it read `Performance (ns)`, and a slower run as more of it), and
    /// `Figure` over rows of both kinds, each row then saying which it is.
    pub fn perf_heading(&self) -> String {
        let word = match self.higher_is_better() {
            Some(true) => "Performance",
            Some(false) => "Latency",
            None => "Figure",
        };
        if self.unit.is_empty() {
            word.to_string()
        } else {
            format!("{word} ({})", self.unit)
        }
    }

    /// The geometric mean row's name: `Geometric mean`, with the unit of the rows it is
    /// over where the heading has none and they share one (a test left out of the means,
    /// in another unit, leaves the heading without one): `Geometric mean (ops/s)`.
    pub fn geomean_label(&self) -> String {
        let common = self.common_rows();
        let mut over = common.iter().map(|r| r.unit.as_str());
        let first = over.next().unwrap_or_default();
        if self.unit.is_empty() && !first.is_empty() && over.all(|u| u == first) {
            format!("Geometric mean ({first})")
        } else {
            "Geometric mean".to_string()
        }
    }

    /// Whether more is better in every row (`Some(true)`, and in a table of none), in no
    /// row (`Some(false)`: latencies), or the rows differ (`None`).
    pub fn higher_is_better(&self) -> Option<bool> {
        let higher = self.rows.iter().filter(|r| r.higher_is_better).count();
        if higher == self.rows.len() {
            Some(true)
        } else if higher == 0 {
            Some(false)
        } else {
            None
        }
    }

    /// Row `ri`'s Difference cell in column `d`, saying which way is better where less
    /// of the row's figure is ([`DiffColumn::cell_for`]).
    pub fn diff_cell(&self, d: &DiffColumn, ri: usize) -> String {
        let higher = self.rows.get(ri).is_none_or(|r| r.higher_is_better);
        DiffColumn::cell_for(d.perf.get(ri).copied().flatten(), higher)
    }

    /// The geometric mean's Difference cell in column `d`: a mean of latencies is one
    /// too, better lower (the rows it is taken over are all of a kind: see
    /// `no_geomean_reason`).
    pub fn geomean_diff_cell(&self, d: &DiffColumn) -> String {
        DiffColumn::cell_for(d.geomean, self.higher_is_better() != Some(false))
    }

    /// Whether the table has a geometric mean row: not when the tests are unlike
    /// ([`Summary::geomean_note`] says why), nor when it has no test (a run of capacity
    /// tests only: their figures are per step, in their views, as a note says).
    pub fn shows_geomean(&self) -> bool {
        self.geomean_note.is_none() && !self.rows.is_empty()
    }

    /// The rows every column has a figure in: the means are over these.
    fn common_rows(&self) -> Vec<&SummaryRow> {
        self.rows.iter().filter(|r| r.in_means()).collect()
    }

    /// Each column's geometric mean, or why it has none (not said when the table has none
    /// at all: [`Summary::geomean_note`] says why once).
    pub fn geomean_or_why(&self) -> Vec<Result<f64, String>> {
        let common = self.common_rows();
        (0..self.runs.len())
            .map(|i| {
                self.geomean[i].ok_or_else(|| {
                    if common.is_empty() {
                        "no test has a figure in every column, and the means are over the tests every column has".to_string()
                    } else if common.iter().any(|r| r.perf[i].is_some_and(|v| v <= 0.0)) {
                        "a test's figure is zero: a geometric mean is of figures above zero".to_string()
                    } else {
                        "no figure to take it of".to_string()
                    }
                })
            })
            .collect()
    }

    /// Why there is no mean of power, to say under the table where a row has power
    /// (else there is no power to take a mean of, and nothing to say).
    pub fn power_mean_said(&self) -> Option<&str> {
        let any_power = self.rows.iter().any(|r| r.power.iter().any(Result::is_ok));
        self.power_mean_note.as_deref().filter(|_| any_power)
    }

    /// Each column's arithmetic mean of power, or why it has none.
    pub fn power_mean_or_why(&self) -> Vec<Result<f64, String>> {
        let common = self.common_rows();
        (0..self.runs.len())
            .map(|i| {
                self.power_mean[i].ok_or_else(|| {
                    if let Some(note) = &self.power_mean_note {
                        note.clone()
                    } else if common.is_empty() {
                        "no test has a figure in every column, and the means are over the tests every column has".to_string()
                    } else if let Some(Err(why)) =
                        common.iter().map(|r| &r.power[i]).find(|p| p.is_err())
                    {
                        // The row's own reason (an extrapolated column's: "power at another
                        // clock is not extrapolated").
                        format!("a test has no power figure: {why}")
                    } else if i >= self.measured {
                        "power is not extrapolated this way".to_string()
                    } else {
                        "the tests' power was read from different sources or bases".to_string()
                    }
                })
            })
            .collect()
    }

    /// Whether some cell carries a flag (the summary shows codes, then says where the
    /// messages are: [`SUMMARY_FLAGS_NOTE`]).
    pub fn any_flags(&self) -> bool {
        self.rows
            .iter()
            .any(|r| r.flags.iter().any(|f| !f.is_empty()))
    }

    /// The tests left out of the means, said under the table in every form of it (the
    /// Markdown said nothing: a run's mean over its set alone read as over every row).
    pub fn left_out_note(&self) -> Option<String> {
        (!self.left_out.is_empty()).then(|| {
            format!(
                "Left out of the means because not every column has a figure of them: {}",
                self.left_out.join(", ")
            )
        })
    }

    /// Why the means shown are absent where they are, once per reason: `Geometric mean
    /// absent for B: ...` (the geometric mean only when the table has one at all, the mean
    /// of power only when some column has power).
    pub fn absent_mean_notes(&self) -> Vec<String> {
        let (geo, pmean) = (self.geomean_or_why(), self.power_mean_or_why());
        let mut cols = Vec::new();
        if self.shows_geomean() {
            cols.push((
                "Geometric mean".to_string(),
                geo.iter().enumerate().collect(),
            ));
        }
        if self.power_mean.iter().any(Option::is_some) {
            cols.push((
                "Arithmetic mean of power".to_string(),
                pmean.iter().enumerate().collect(),
            ));
        }
        absent_columns(&self.runs, cols)
    }

    /// A row's name, less the `strip` prefix (the workload), with the row's unit when
    /// the rows do not share one (`rsa2048 threads=2 (signs/s)`), and `lower is better`
    /// on a latency's row where the heading does not say so (a table of rows of both
    /// kinds: mem's `latency (ns, lower is better)` beside its bandwidth).
    pub fn row_name(&self, row: &SummaryRow, strip: &str) -> String {
        let name = row
            .label
            .strip_prefix(strip)
            .map_or(row.label.as_str(), str::trim_start);
        let mut said: Vec<&str> = Vec::new();
        if self.unit.is_empty() && !row.unit.is_empty() {
            said.push(&row.unit);
        }
        if !row.higher_is_better && self.higher_is_better().is_none() {
            said.push("lower is better");
        }
        if said.is_empty() {
            name.to_string()
        } else {
            format!("{name} ({})", said.join(", "))
        }
    }
}

/// The sweep parameters a summary takes the best over: those of [`PEAK_PARAMS`] that vary
/// within a run (a sweep). One that only differs between runs, each holding one value
/// throughout (`--streams 1` in one, `--streams 4` in the other), is a setting that sets
/// the columns apart ([`column_params`]), not a best taken (acceptance P, 5: "each column
/// at its best streams" of runs that each ran one).
pub fn peak_params(runs: &[RunRecord]) -> Vec<String> {
    let swept = |k: &str| {
        runs.iter()
            .any(|r| one_value_in(r, |x| x.params.get(k)).is_err())
    };
    PEAK_PARAMS
        .iter()
        .filter(|p| swept(p))
        .map(|p| p.to_string())
        .collect()
}

/// Parameters with one value across every point of these runs (the seed's "fixed
/// parameters", e.g. `requests=20000`): said once, left out of row labels.
pub fn fixed_params(runs: &[RunRecord]) -> Vec<(String, String)> {
    let all: Vec<Point> = runs
        .iter()
        .enumerate()
        .flat_map(|(i, r)| points(i, r))
        .collect();
    let Some(first) = all.first() else {
        return vec![];
    };
    first
        .params
        .iter()
        .filter(|(k, v)| {
            let one = setting_key(k, v);
            all.iter()
                .all(|p| p.params.get(*k).is_some_and(|w| setting_key(k, w) == one))
        })
        .filter(|(k, _)| !NOT_A_ROW_PARAM.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), param_str(v)))
        .collect()
}

/// The "Fixed parameters" line: each of [`fixed_params`] as `k=v`, those that only some
/// tests ran at (by their results' settings: `--ramp-high` is the ramp's, and a ramp
/// steps by `step_duration`, not `duration`) after the rest, with the tests they are
/// of: `clients=4; duration=1 (set); ramp_high=3000, step_duration=0.3 (ramp)`. A
/// parameter no result's settings hold (runs stored before settings were) is of every
/// test. None when nothing is fixed.
pub fn fixed_line(runs: &[RunRecord]) -> Option<String> {
    let fixed = fixed_params(runs);
    if fixed.is_empty() {
        return None;
    }
    let all: Vec<Point> = runs
        .iter()
        .enumerate()
        .flat_map(|(i, r)| points(i, r))
        .filter(|p| p.results.iter().any(|r| !r.settings.is_empty()))
        .collect();
    // The tests that ran at `k`, when only some did.
    let of_tests = |k: &str| -> Option<Vec<&str>> {
        let holds = |p: &&Point| p.results.iter().any(|r| r.settings.contains_key(k));
        let n = all.iter().filter(holds).count();
        if n == 0 || n == all.len() {
            return None;
        }
        let mut tests: Vec<&str> = Vec::new();
        for p in all.iter().filter(holds) {
            if !tests.contains(&p.test.as_str()) {
                tests.push(&p.test);
            }
        }
        Some(tests)
    };
    let mut groups: Vec<(Option<Vec<&str>>, Vec<String>)> = Vec::new();
    for (k, v) in &fixed {
        let of = of_tests(k);
        let kv = format!("{k}={v}");
        match groups.iter_mut().find(|(t, _)| *t == of) {
            Some((_, list)) => list.push(kv),
            None => groups.push((of, vec![kv])),
        }
    }
    // Those of every test first (a stable sort keeps the rest in first-seen order).
    groups.sort_by_key(|(of, _)| of.is_some());
    Some(
        groups
            .into_iter()
            .map(|(of, list)| match of {
                None => list.join(", "),
                Some(tests) => format!("{} ({})", list.join(", "), tests.join(", ")),
            })
            .collect::<Vec<_>>()
            .join("; "),
    )
}

/// The [`PLACEMENT_PARAMS`] that take one value in each run (a run with points on two
/// systems under test keeps them in its row names: its rows are two platforms).
pub fn placement_params(runs: &[RunRecord]) -> Vec<&'static str> {
    PLACEMENT_PARAMS
        .iter()
        .copied()
        .filter(|k| {
            runs.iter()
                .all(|r| one_value_in(r, |x| x.params.get(*k)).is_ok())
        })
        .filter(|k| {
            runs.iter()
                .any(|r| r.results.iter().any(|x| x.params.contains_key(*k)))
        })
        .collect()
}

/// Said before [`column_line`].
pub const COLUMN_SETTINGS: &str = "The columns are at different settings (the rows line \
    up across them, and a Difference is of the setting as much as of the platform):";

/// The settings that set whole columns apart: parameters (other than placement, peak
/// and [`NOT_A_ROW_PARAM`]) with one value in each run, or none given, that differ
/// between the runs (`server_cpus=[0]` on one side, not given on the other). They name
/// no row, so two runs of the same tests at another setting line up in one table with a
/// Difference beside them, as the seeds set a setting's A/B side by side; said once
/// above the tables ([`column_line`]). None for one run: its one-valued parameters are
/// fixed.
pub fn column_params(runs: &[RunRecord], peak: &[String]) -> Vec<String> {
    one_setting_per_run(runs, peak)
        .into_iter()
        .filter(|(_, differ)| *differ)
        .map(|(k, _)| k)
        .collect()
}

/// The parameters given in some run (other than placement, peak and
/// [`NOT_A_ROW_PARAM`]) whose effective setting (given, else the default its results
/// ran with, as compare reads it) is one in each run, and whether it differs between the
/// runs: none names a row (`pipeline` typed as 1 in one run and left at its default 1 in
/// the other is one setting); those that differ are [`column_params`]. Empty for one run.
fn one_setting_per_run(runs: &[RunRecord], peak: &[String]) -> Vec<(String, bool)> {
    if runs.len() < 2 {
        return vec![];
    }
    let mut keys: Vec<&String> = runs
        .iter()
        .flat_map(|r| r.results.iter().flat_map(|x| x.params.keys()))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter()
        .filter(|k| {
            !NOT_A_ROW_PARAM.contains(&k.as_str())
                && !PLACEMENT_PARAMS.contains(&k.as_str())
                && !peak.contains(k)
        })
        .filter_map(|k| {
            let per_run: Vec<Option<String>> = runs
                .iter()
                .map(|r| one_value_in(r, |x| x.setting(k)).map(|v| v.map(|v| setting_key(k, v))))
                .collect::<Result<_, ()>>()
                .ok()?;
            Some((k.clone(), per_run.iter().any(|x| *x != per_run[0])))
        })
        .collect()
}

/// The one value `read` finds in run `r`'s results: None when none has one, Err when
/// they differ (a setting swept inside the run).
fn one_value_in<'a>(
    r: &'a RunRecord,
    read: impl Fn(&'a ResultRecord) -> Option<&'a serde_json::Value>,
) -> Result<Option<&'a serde_json::Value>, ()> {
    let mut vals = r.results.iter().filter_map(read);
    match vals.next() {
        None => Ok(None),
        Some(first) if vals.all(|v| v == first) => Ok(Some(first)),
        Some(_) => Err(()),
    }
}

/// What each run's [`column_params`] were: `A: server_cpus=[0]; B: server_cpus as its
/// default (none)`, the default being its results' effective setting where they kept it.
pub fn column_line(runs: &[RunRecord], peak: &[String]) -> Option<String> {
    let keys = column_params(runs, peak);
    if keys.is_empty() {
        return None;
    }
    Some(per_run_line(runs, |r| {
        let at: Vec<String> = keys
            .iter()
            .map(|k| match r.results.iter().find_map(|x| x.params.get(k)) {
                Some(v) => format!("{k}={}", param_str(v)),
                None => match r.results.iter().find_map(|x| x.settings.get(k)) {
                    Some(v) => format!("{k} not given ({} by default)", setting_str(v)),
                    None => format!("{k} not given"),
                },
            })
            .collect();
        at.join(", ")
    }))
}

/// `label: what; label: what`, one entry per run.
fn per_run_line(runs: &[RunRecord], what: impl Fn(&RunRecord) -> String) -> String {
    runs.iter()
        .zip(run_labels(runs))
        .map(|(r, l)| format!("{l}: {}", what(r)))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Where each run ran, where its placement names no row and differs between the runs:
/// `web-rbh1: sut_host=rbh1, loadgen_hosts=rbh3; web-rbh2: sut_host=rbh2, ...`. None
/// when the runs ran in one place (the fixed parameters say it).
pub fn placement_line(runs: &[RunRecord]) -> Option<String> {
    let fixed = fixed_params(runs);
    let keys: Vec<&str> = placement_params(runs)
        .into_iter()
        .filter(|k| !fixed.iter().any(|(f, _)| f == k))
        .collect();
    if keys.is_empty() {
        return None;
    }
    Some(per_run_line(runs, |r| {
        let at: Vec<String> = keys
            .iter()
            .filter_map(|k| {
                let v = r.results.iter().find_map(|x| x.params.get(*k))?;
                Some(format!("{k}={}", param_str(v)))
            })
            .collect();
        if at.is_empty() {
            "this machine".to_string()
        } else {
            at.join(", ")
        }
    }))
}

/// Parameters that name no row: the test (the row's name has it) and the list of tests
/// its run ran (a `get` row is one row whether its run also ran `set` or not; where that
/// changed what `get` found, its flags and the comparability verdict say so).
const NOT_A_ROW_PARAM: &[&str] = &["test", "tests"];

/// The parameters a summary row's name leaves out: the peak parameters (each column is at
/// its best over them), the fixed ones (said once) and [`NOT_A_ROW_PARAM`]. `--tests`
/// names rows by what is left ([`crate::Selection::takes_test`]).
pub fn name_skip(runs: &[RunRecord], peak: &[String]) -> Vec<String> {
    let mut skip: Vec<String> = peak
        .iter()
        .cloned()
        .chain(fixed_params(runs).into_iter().map(|(k, _)| k))
        .collect();
    for k in NOT_A_ROW_PARAM.iter().chain(&placement_params(runs)) {
        if !skip.iter().any(|s| s == k) {
            skip.push(k.to_string());
        }
    }
    for (k, _) in one_setting_per_run(runs, peak) {
        if !skip.contains(&k) {
            skip.push(k);
        }
    }
    skip
}

/// Per summary row (`kv set pipeline=1`), each run's best sweep point over the peak
/// parameters, in first-seen order. Fixed parameters are left out of the row names.
#[allow(clippy::type_complexity)]
pub fn best_points<'a>(
    runs: &'a [RunRecord],
    peak: &[String],
) -> Vec<(String, Vec<Option<Point<'a>>>)> {
    best_points_in(runs, peak, &Selection::default())
}

/// [`best_points`] over the selection's tests, at its sweep point (the best over the
/// peak parameters it leaves free). Capacity tests are never among them: their figures
/// are per step ([`capacity_phase`]).
#[allow(clippy::type_complexity)]
pub fn best_points_in<'a>(
    runs: &'a [RunRecord],
    peak: &[String],
    sel: &Selection,
) -> Vec<(String, Vec<Option<Point<'a>>>)> {
    row_points_in(runs, peak, sel)
        .into_iter()
        .map(|(k, per_run)| {
            let best = per_run.iter().map(|pts| best_of(pts).cloned()).collect();
            (k, best)
        })
        .collect()
}

/// [`best_points_in`] with every point of each row and run, the best not yet chosen: a
/// run whose points of a row all lack a figure still has them, to say why.
#[allow(clippy::type_complexity)]
fn row_points_in<'a>(
    runs: &'a [RunRecord],
    peak: &[String],
    sel: &Selection,
) -> Vec<(String, Vec<Vec<Point<'a>>>)> {
    let swept = peak;
    let skip = name_skip(runs, peak);
    let peak: Vec<&str> = skip.iter().map(String::as_str).collect();
    let scale: Vec<&str> = SCALE_PARAMS
        .iter()
        .copied()
        .filter(|k| sel.free(swept).contains(k))
        .collect();
    let all: Vec<Vec<Point>> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let taken = points(i, r)
                .into_iter()
                .filter(|p| p.capacity_phase().is_none())
                .filter(|p| sel.takes_test(p, &peak) && sel.takes_point(p))
                .collect();
            at_one_scale(taken, &scale, &peak)
        })
        .collect();
    let mut keys: Vec<String> = Vec::new();
    for p in all.iter().flatten() {
        let k = row_key(p, &peak);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|k| {
            let per_run = all
                .iter()
                .map(|pts| {
                    pts.iter()
                        .filter(|p| row_key(p, &peak) == k)
                        .cloned()
                        .collect()
                })
                .collect();
            (k, per_run)
        })
        .collect()
}

/// One column's points at one scale-out of its server ([`SCALE_PARAMS`]): the value
/// whose rows reach the most figures, then the highest geometric mean of each row's
/// best there over the row's best anywhere (a latency row scored by its inverse); of
/// equals, the first seen. Points that name no scale are kept; so are all of them where
/// the column ran at one. `name_skip` is what row names leave out ([`row_key`]).
fn at_one_scale<'a>(pts: Vec<Point<'a>>, scale: &[&str], name_skip: &[&str]) -> Vec<Point<'a>> {
    // Each point's scale-out and row, worked out once.
    let keyed: Vec<(Vec<Option<String>>, String)> = pts
        .iter()
        .map(|p| {
            let at = scale
                .iter()
                .map(|k| p.params.get(*k).map(param_str))
                .collect();
            (at, row_key(p, name_skip))
        })
        .collect();
    let mut values: Vec<&Vec<Option<String>>> = Vec::new();
    let mut rows: Vec<&String> = Vec::new();
    for (v, r) in &keyed {
        if v.iter().any(Option::is_some) && !values.contains(&v) {
            values.push(v);
        }
        if !rows.contains(&r) {
            rows.push(r);
        }
    }
    if values.len() < 2 {
        return pts;
    }
    // score[v][r]: row r's best at value v, higher better.
    let score: Vec<Vec<Option<f64>>> = values
        .iter()
        .map(|v| {
            rows.iter()
                .map(|r| {
                    let best = best_of(
                        pts.iter()
                            .zip(&keyed)
                            .filter(|(_, (pv, pr))| pv == *v && pr == *r)
                            .map(|(p, _)| p),
                    )?;
                    let m = best.headline()?.mean;
                    let s = if best.higher_is_better() { m } else { 1.0 / m };
                    (s.is_finite() && s > 0.0).then_some(s)
                })
                .collect()
        })
        .collect();
    let row_best: Vec<f64> = (0..rows.len())
        .map(|r| score.iter().filter_map(|v| v[r]).fold(0.0, f64::max))
        .collect();
    let ranks: Vec<(usize, f64)> = score
        .iter()
        .map(|v| {
            let rel: Vec<f64> = v
                .iter()
                .zip(&row_best)
                .filter_map(|(s, b)| s.map(|s| s / b))
                .collect();
            (rel.len(), stats::geomean(&rel).unwrap_or(0.0))
        })
        .collect();
    let mut chosen = 0;
    for (i, &(n, g)) in ranks.iter().enumerate().skip(1) {
        let (bn, bg) = ranks[chosen];
        if n > bn || (n == bn && g > bg) {
            chosen = i;
        }
    }
    let chosen = values[chosen].clone();
    pts.into_iter()
        .zip(keyed)
        .filter(|(_, (v, _))| v.iter().all(Option::is_none) || *v == chosen)
        .map(|(p, _)| p)
        .collect()
}

/// The buffer size a row's headline was measured at, where its workload says
/// (`headline_buffer_bytes`: crypto's bulk ciphers and digests quote their largest
/// buffer): ` (8,192 B buffers)`, each run's where they differ; else nothing. A row read
/// `aes256gcm 2,776` with the size only in the caption's list of sizes (acceptance L, 4).
/// The names the summary gives `runs`' rows at their best points over `peak` (the
/// parameters to take the best over, of the runs these were chosen from): a setting
/// every point shares is none of them; a headline's buffer size is.
pub fn best_row_names(runs: &[RunRecord], peak: &[String]) -> Vec<String> {
    best_points(runs, peak)
        .into_iter()
        .map(|(k, per_run)| {
            let points: Vec<Option<&Point>> = per_run.iter().map(Option::as_ref).collect();
            row_label(&k, &points)
        })
        .collect()
}

/// A summary row's name: its key (`kv set pipeline=1`) and the buffer size its headline
/// is at, where it has one.
fn row_label(key: &str, per_run: &[Option<&Point>]) -> String {
    format!("{key}{}", headline_buffers(per_run))
}

fn headline_buffers(per_run: &[Option<&Point>]) -> String {
    let mut sizes: Vec<String> = Vec::new();
    for p in per_run.iter().flatten() {
        let size = p
            .valid()
            .iter()
            .find_map(|r| r.metric("headline_buffer_bytes", &[]).map(|m| m.value));
        if let Some(s) = size.map(crate::fmt::whole_or_num) {
            if !sizes.contains(&s) {
                sizes.push(s);
            }
        }
    }
    if sizes.is_empty() {
        String::new()
    } else {
        format!(" ({} B buffers)", sizes.join(" / "))
    }
}

/// Build the Table A1 summary of these runs (one column per run, each at its best).
pub fn summary(runs: &[RunRecord]) -> Summary {
    summary_with(runs, &Selection::default())
}

/// The summary as the selection lays it out: its tests and sweep point, its
/// extrapolated columns, and a Difference column for every column against the baseline.
pub fn summary_with(runs: &[RunRecord], sel: &Selection) -> Summary {
    let labels = run_labels(runs);
    let peak = peak_params(runs);
    // This summary's tests only: one summary per workload shares the selection, and the
    // kv table's caption named crypto's `rsa2048`.
    let sel = &sel.for_runs(runs);
    let mut rows = Vec::new();
    // The workloads of the rows taken (a suite's other workloads have no say in them).
    let mut row_workloads: Vec<String> = Vec::new();
    for (k, all_points) in row_points_in(runs, &peak, sel) {
        let per_run: Vec<Option<&Point>> = all_points.iter().map(best_of).collect();
        for p in per_run.iter().flatten() {
            if !row_workloads.contains(&p.workload) {
                row_workloads.push(p.workload.clone());
            }
        }
        let first = per_run.iter().flatten().next();
        let mut row = SummaryRow {
            label: row_label(&k, &per_run),
            perf: vec![],
            perf_missing: vec![],
            power: vec![],
            chosen: vec![],
            flags: vec![],
            unit: first.map(|p| p.headline_unit()).unwrap_or_default(),
            higher_is_better: first.is_none_or(|p| p.higher_is_better()),
        };
        for (best, ran) in per_run.into_iter().zip(&all_points) {
            match best {
                Some(p) => {
                    row.perf.push(p.headline().map(|s| s.mean));
                    row.perf_missing.push(p.headline_missing());
                    row.power.push(p.power());
                    row.chosen.push(
                        peak.iter()
                            .filter_map(|pp| {
                                p.params.get(pp).map(|v| format!("{pp}={}", param_str(v)))
                            })
                            .collect::<Vec<_>>()
                            .join(" "),
                    );
                    row.flags.push(p.flags());
                }
                None => {
                    // Points that ran without a figure say why; none ran is no absence.
                    row.perf.push(None);
                    // A point that measured before it stopped says so, before others.
                    let why = ran
                        .iter()
                        .find(|p| p.partial_figure().is_some())
                        .or(ran.first());
                    row.perf_missing.push(why.and_then(Point::headline_missing));
                    row.power.push(Err(NOT_RUN.to_string()));
                    row.chosen.push(String::new());
                    row.flags.push(vec![]);
                }
            }
        }
        rows.push(row);
    }
    let common: Vec<&SummaryRow> = rows.iter().filter(|r| r.in_means()).collect();
    let left_out = rows
        .iter()
        .filter(|r| !r.in_means())
        .map(|r| r.label.clone())
        .collect();
    let n = runs.len();
    // Whether the means can be had is a question of the rows they are over: a test no
    // column has a figure of (so no unit) is left out, not a unit that forbids a mean.
    let geomean_note = no_geomean_reason(&common, &row_workloads, sel.from_plan);
    let geomean = (0..n)
        .map(|i| {
            let v: Vec<f64> = common.iter().filter_map(|r| r.perf[i]).collect();
            geomean_note.is_none().then(|| stats::geomean(&v)).flatten()
        })
        .collect();
    let power_mean_note = unlike_rows(&common, &row_workloads).map(|(w, why)| {
        format!(
            "no mean of power: {w}'s {why}, each at a power of its own{}",
            take_one(w, sel.from_plan)
        )
    });
    let mut power_mean = Vec::new();
    let mut power_basis = Vec::new();
    for i in 0..n {
        let ps: Vec<&PowerFigure> = common
            .iter()
            .filter_map(|r| r.power[i].as_ref().ok())
            .collect();
        // A mean over tests only when every test has power of the same basis.
        let same = ps
            .windows(2)
            .all(|w| w[0].basis == w[1].basis && w[0].source == w[1].source);
        if power_mean_note.is_none() && !ps.is_empty() && ps.len() == common.len() && same {
            power_mean.push(stats::mean(&ps.iter().map(|p| p.watts).collect::<Vec<_>>()));
            power_basis.push(Some(ps[0].basis));
        } else {
            power_mean.push(None);
            power_basis.push(None);
        }
    }
    // The unit the rows with a figure share (a test without one has none to differ).
    let with_figure: Vec<&SummaryRow> = rows
        .iter()
        .filter(|r| r.perf.iter().any(Option::is_some))
        .collect();
    let unit = match &with_figure[..] {
        [first, rest @ ..] if rest.iter().all(|r| r.unit == first.unit) => first.unit.clone(),
        _ => String::new(),
    };
    let mut s = Summary {
        runs: labels,
        measured: n,
        unit,
        selection: sel.describe(&peak),
        peak_params: peak,
        rows,
        geomean,
        geomean_note,
        power_mean,
        power_mean_note,
        power_basis,
        left_out,
        notes: vec![],
        differences: vec![],
    };
    // A column of a run that did not finish holds what it stored before it stopped
    // (acceptance pass K, 2: "n 2/2" of a run killed in its third repetition).
    for (run, label) in runs.iter().zip(&s.runs) {
        let state = match run.status {
            Status::Ok => continue,
            Status::Running => "is still running (or its process ended unseen)",
            Status::Failed => "failed",
            Status::Interrupted => "was interrupted",
        };
        s.notes.push(format!(
            "{label} {state}: its column holds what it stored before; see its Results rows \
             for the repetitions asked and stored."
        ));
    }
    for e in &sel.extrapolate {
        s.add_extrapolated(runs, e);
    }
    let mut capacity: Vec<String> = Vec::new();
    let mut others = false;
    for (i, run) in runs.iter().enumerate() {
        for p in points(i, run) {
            if p.capacity_phase().is_none() {
                others = true;
            } else if !capacity.contains(&p.test) {
                capacity.push(p.test.clone());
            }
        }
    }
    // No row of a workload that ran ordinary tests: the selection took none of them.
    // With no `--at`, the tests it chose are capacity tests (said below); with one, it
    // may be a point none ran (or results that kept no settings, at none): said, not an
    // empty section.
    let only_capacity_chosen = !capacity.is_empty() && sel.at.is_empty();
    if s.rows.is_empty() && others && !only_capacity_chosen {
        s.notes.push(format!(
            "No summary table: none of this workload's points is among those chosen ({}); \
             its sweeps and results tables below hold every point.",
            sel.chosen_text()
        ));
    }
    if !capacity.is_empty() {
        // With no row there is no table (the formats leave an empty one out): the note
        // then says why, not what the table lacks; a workload whose other tests --tests
        // left out did not run "only capacity tests" (review H, 17).
        s.notes.push(format!(
            "{}: {} (capacity tests, a curve of steps at different offered rates: their figures are per step, in their views).",
            match (s.rows.is_empty(), others) {
                (true, false) => "No summary table: this workload ran only capacity tests",
                (true, true) if only_capacity_chosen => {
                    "No summary table: the tests chosen with --tests are capacity tests"
                }
                // The note above says why there is no table.
                (true, true) => "No summary of them either",
                (false, _) => "Not in this table",
            },
            capacity.join(", ")
        ));
    }
    // A best of several points is biased up by their noise, and more so over more points:
    // said where the summary takes one (it was not, and a platform measured at more
    // points gained in its Difference and its TCO's perf/$ unsaid).
    let takes_best = !sel.free(&s.peak_params).is_empty();
    if takes_best && !s.rows.is_empty() {
        s.notes.push(BEST_OF_NOTE.to_string());
    }
    if sel.chooses() && !s.rows.is_empty() {
        s.notes.push(CHOSEN_POINTS_NOTE.to_string());
    }
    let base = sel
        .baseline
        .as_ref()
        .and_then(|b| s.runs.iter().position(|l| l == b))
        .unwrap_or(0);
    if s.runs.len() > 1 {
        s.differences = (0..s.runs.len())
            .filter(|&i| i != base)
            .map(|i| s.difference(i, base))
            .collect();
        let unlike: Vec<String> = (0..s.runs.len())
            .filter(|&i| i != base)
            .filter_map(|i| s.power_not_compared(i, base))
            .collect();
        s.notes.extend(unlike);
    }
    s
}

/// Said under a summary whose tests or point `--tests` or `--at` chose: which tables and
/// charts after it are chosen so, and which hold every point.
pub const CHOSEN_POINTS_NOTE: &str = "--at and --tests choose the points of this summary, of the efficiency and latency-threshold tables and of the charts of best points (bars, latency, power, per-CPU) alike; a sweep's curves, the results tables, the Per CPU, by test table and the workload's views hold every point.";

/// Said under a summary that takes each row or column at its best point.
pub const BEST_OF_NOTE: &str = "A best point is the highest of several points' means, and their noise lifts it: by about one standard error of a point's mean where 4 points are near the top, 1.4 where 8 are. A column measured at more points gains more; `--at` takes every column at one point, with none of it.";

/// The clock a run's CPU is rated at (the disclosed `cpu.freq_max_mhz` of its system
/// under test), for clock extrapolation.
fn rated_mhz(run: &RunRecord) -> Option<f64> {
    let sut = sut_hosts(run);
    run.hosts
        .iter()
        .filter(|h| sut.is_empty() || sut.contains(&h.host.as_str()))
        .find_map(|h| {
            h.facts
                .get("cpu.freq_max_mhz")?
                .value
                .as_deref()?
                .parse()
                .ok()
        })
}

/// The measured column extrapolation `e` starts from (`labels` name `runs`' columns) and
/// its performance factor; where it cannot be made, the note said in its column's place.
fn extrapolation_from(
    labels: &[String],
    runs: &[RunRecord],
    e: &Extrapolation,
) -> Result<(usize, f64), String> {
    let from = labels
        .iter()
        .position(|l| *l == e.from)
        .ok_or_else(|| format!("No column `{}` to extrapolate from.", e.from))?;
    let f = e
        .how
        .perf_factor(rated_mhz(&runs[from]))
        .map_err(|why| format!("{} {} not extrapolated: {why}.", e.from, e.how.heading()))?;
    Ok((from, f))
}

/// Why each of the selection's extrapolations that cannot be made from these runs is
/// left out (a run that discloses no clock): the summary's notes, for the console too.
pub fn extrapolation_problems(runs: &[RunRecord], sel: &Selection) -> Vec<String> {
    let labels = run_labels(runs);
    sel.extrapolate
        .iter()
        .filter_map(|e| extrapolation_from(&labels, runs, e).err())
        .collect()
}

impl Summary {
    /// Append the column `e` extrapolates from a measured one (a no-op, with a note,
    /// when it cannot be made).
    fn add_extrapolated(&mut self, runs: &[RunRecord], e: &Extrapolation) {
        let (from, f) = match extrapolation_from(&self.runs[..self.measured], runs, e) {
            Ok(x) => x,
            Err(note) => {
                self.notes.push(note);
                return;
            }
        };
        let pf = e.how.power_factor();
        let label = format!("{} {} (extrapolated)", e.from, e.how.heading());
        for row in &mut self.rows {
            // More boards or a faster clock is more throughput; a latency does not
            // scale with either (two boards' RAM latency is one's).
            if row.higher_is_better {
                row.perf.push(row.perf[from].map(|v| v * f));
                row.perf_missing.push(row.perf_missing[from].clone());
            } else {
                row.perf.push(None);
                let why = match row.perf[from] {
                    Some(_) => Some(format!("a latency ({}) is not extrapolated", row.unit)),
                    // None measured to start from: the measured column's reason.
                    None => row.perf_missing[from].clone(),
                };
                row.perf_missing.push(why);
            }
            row.power.push(match (&row.power[from], pf) {
                (Ok(p), Some(k)) => Ok(PowerFigure {
                    watts: p.watts * k,
                    idle_w: p.idle_w.map(|w| w * k),
                    ..p.clone()
                }),
                (Ok(_), None) => Err("power at another clock is not extrapolated".into()),
                (Err(w), _) => Err(w.clone()),
            });
            row.chosen.push(row.chosen[from].clone());
            row.flags.push(row.flags[from].clone());
        }
        let throughputs = self.rows.iter().all(|r| r.higher_is_better);
        self.geomean
            .push(self.geomean[from].filter(|_| throughputs).map(|v| v * f));
        self.power_mean
            .push(pf.and_then(|k| self.power_mean[from].map(|w| w * k)));
        self.power_basis.push(pf.and(self.power_basis[from]));
        self.notes.push(match &e.how {
            Extrapolate::Times { factor, unit } => format!(
                "{label}: performance and power of {from_l} times {factor}, linearly, as if {factor} {unit} each did what the one measured did.",
                from_l = e.from
            ),
            Extrapolate::Clock {
                elasticity,
                from_mhz,
                ..
            } => format!(
                "{label}: performance of {from_l} times {f:.3} ({}clock elasticity {elasticity}), from {}; power is not extrapolated.",
                if (*elasticity - 1.0).abs() < 1e-12 { "linear in the clock, " } else { "" },
                match from_mhz {
                    Some(m) => format!("{} as given", crate::selection::fmt_mhz(*m)),
                    // The highest clock the kernel reports is a turbo clock on many CPUs
                    // (intel_pstate's), not the one a loaded server ran at: said, with
                    // how to give that one.
                    None => format!(
                        "{}, the run's cpu.freq_max_mhz (the highest clock its kernel reports, \
                         a turbo clock on many CPUs; give the clock it ran at as RUN=FROM:TO)",
                        rated_mhz(&runs[from]).map_or("?".into(), crate::selection::fmt_mhz)
                    ),
                },
                from_l = e.from
            ),
        });
        self.runs.push(label);
    }

    /// Column `i` against column `base`: per row, the geometric mean and the power mean.
    fn difference(&self, i: usize, base: usize) -> DiffColumn {
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 && a.is_finite() => Some(a / b),
            _ => None,
        };
        DiffColumn {
            label: format!("{} vs {}", self.runs[i], self.runs[base]),
            perf: self
                .rows
                .iter()
                .map(|r| ratio(r.perf[i], r.perf[base]))
                .collect(),
            geomean: ratio(self.geomean[i], self.geomean[base]),
            // Power of one basis against power of the same basis only (as `compare`): a
            // whole server's 310 W against CPU packages' 140 W is no saving.
            power_mean: (self.power_basis[i] == self.power_basis[base])
                .then(|| ratio(self.power_mean[i], self.power_mean[base]))
                .flatten(),
        }
    }

    /// Why column `i`'s power is not set against the baseline's, when both have power of
    /// different bases.
    fn power_not_compared(&self, i: usize, base: usize) -> Option<String> {
        match (self.power_basis[i], self.power_basis[base]) {
            (Some(a), Some(b)) if a != b => Some(format!(
                "Power of {} is not set against {}'s: {} against {} is no like for like.",
                self.runs[i],
                self.runs[base],
                a.label(),
                b.label()
            )),
            _ => None,
        }
    }
}

/// The summary row a point belongs to: workload, test and the non-peak parameters.
pub fn row_key(p: &Point, peak: &[&str]) -> String {
    let params = p.param_label(peak);
    let wl = if p.workload.is_empty() {
        String::new()
    } else {
        format!("{} ", p.workload)
    };
    if params.is_empty() {
        format!("{wl}{}", p.test)
    } else {
        format!("{wl}{} {params}", p.test)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows as the means' rules take them.
    fn refs(rows: &[SummaryRow]) -> Vec<&SummaryRow> {
        rows.iter().collect()
    }

    fn labels(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("run{i}")).collect()
    }

    /// A stopped run whose plan is `plan`, holding a result of each `(workload, test)`.
    fn killed(plan: serde_json::Value, stored: &[(&str, &str)]) -> RunRecord {
        serde_json::from_value(serde_json::json!({
            "format_version": 1, "id": "r1", "created_at": "2026-01-01T00:00:00Z",
            "rackbench_version": "0.1.0", "command": "rackbench run", "plan": plan,
            "hosts": [], "status": "interrupted",
            "results": stored.iter().enumerate().map(|(i, (wl, t))| serde_json::json!({
                "workload": wl, "test": t, "step": i, "repetition": 0, "params": {},
                "headline": "ops_per_s", "started_at": "2026-01-01T00:00:00Z",
                "duration_s": 1.0, "metrics": [], "status": "ok"
            })).collect::<Vec<_>>(),
        }))
        .expect("a run record")
    }

    /// A setting for people: oltp's default mix, stored as its percentages, reads
    /// 43.478, not 43.47826086956522 (acceptance pass, s27); lists joined; a value that
    /// would round to 0 keeps its digits; `--at`'s matching is [`param_str`]'s, unchanged.
    #[test]
    fn a_settings_fractions_read_to_three_places() {
        let mix = serde_json::json!([43.47826086956522, 43.47826086956522, 4.3478260869565215]);
        assert_eq!(setting_str(&mix), "43.478, 43.478, 4.348");
        assert_eq!(setting_str(&serde_json::json!(0.3)), "0.3");
        assert_eq!(setting_str(&serde_json::json!(0.0001)), "0.0001");
        assert_eq!(setting_str(&serde_json::json!([])), "none");
        assert_eq!(setting_str(&serde_json::json!(["set", "get"])), "set, get");
        assert_eq!(param_str(&serde_json::json!(0.3)), "0.3");
    }

    /// A run of `set` and `ramp`, both given `clients=4 duration=1 ramp_high=3000`: the
    /// line says `duration` of `set` alone and `ramp_high` of `ramp` alone, as their
    /// settings do (it said all three of both); a run stored without settings keeps
    /// one list.
    #[test]
    fn a_fixed_parameter_only_some_tests_ran_at_names_them() {
        let params = serde_json::json!({"clients": 4, "duration": 1, "ramp_high": 3000});
        let result = |test: &str, settings: serde_json::Value| {
            serde_json::json!({
                "workload": "kv", "test": test, "step": 0, "repetition": 0,
                "params": params, "settings": settings, "headline": "ops_per_s",
                "started_at": "2026-01-01T00:00:00Z", "duration_s": 1.0,
                "metrics": [], "status": "ok"
            })
        };
        let run = |results: Vec<serde_json::Value>| -> RunRecord {
            serde_json::from_value(serde_json::json!({
                "format_version": 1, "id": "r1", "created_at": "2026-01-01T00:00:00Z",
                "rackbench_version": "0.1.0", "command": "rackbench run", "plan": {}, "hosts": [],
                "status": "ok", "results": results,
            }))
            .expect("a run record")
        };
        let with = run(vec![
            result("set", serde_json::json!({"clients": 4, "duration": 1})),
            result(
                "ramp",
                serde_json::json!({"clients": 4, "ramp_high": 3000, "step_duration": 2}),
            ),
        ]);
        assert_eq!(
            fixed_line(&[with]).as_deref(),
            Some("clients=4; duration=1 (set); ramp_high=3000 (ramp)")
        );
        let without = run(vec![
            result("set", serde_json::json!({})),
            result("ramp", serde_json::json!({})),
        ]);
        assert_eq!(
            fixed_line(&[without]).as_deref(),
            Some("clients=4, duration=1, ramp_high=3000")
        );
    }

    /// crypto's `rsa` is stored as one test per key size: killed after `rsa512`, the other
    /// sizes never ran (the name prefix counted `rsa` as run, as `rsa512` starts with it).
    #[test]
    fn an_expanded_test_killed_part_way_names_the_tests_that_never_ran() {
        let run = killed(
            serde_json::json!({
                "workload": "crypto",
                "params": {"tests": ["rsa", "sha256"], "bits": [512, 2048]},
                "tests": ["rsa512", "rsa2048", "sha256"],
            }),
            &[("crypto", "rsa512")],
        );
        assert_eq!(
            not_run_note(&run, "a").as_deref(),
            Some("a: interrupted before these tests stored anything: rsa2048, sha256 (asked for: not started, or killed before its first checkpoint)")
        );
    }

    /// Every workload of a suite is checked against its own tests (only the first one's
    /// were: `plan.params` has none in a suite, and the first result is the first
    /// workload's).
    #[test]
    fn a_killed_suite_names_each_workloads_tests_that_never_ran() {
        let run = killed(
            serde_json::json!({"suite": [
                {"workload": "mem", "params": {}, "tests": ["bandwidth", "latency"]},
                {"workload": "crypto", "params": {"tests": ["rsa"]},
                 "tests": ["rsa512", "rsa1024"]},
            ]}),
            &[
                ("mem", "bandwidth"),
                ("mem", "latency"),
                ("crypto", "rsa512"),
            ],
        );
        assert_eq!(
            not_run_note(&run, "a").as_deref(),
            Some("a: interrupted before this test stored anything: crypto rsa1024 (asked for: not started, or killed before its first checkpoint)")
        );
        let run = killed(run.plan.clone(), &[("mem", "bandwidth")]);
        assert_eq!(
            not_run_note(&run, "a").as_deref(),
            Some(
                "a: interrupted before these tests stored anything: mem latency; crypto rsa512, rsa1024 \
                 (asked for: not started, or killed before its first checkpoint)"
            )
        );
        // A plan stored before the tests were kept: the tests asked, each workload's.
        let old = killed(
            serde_json::json!({"suite": [
                {"workload": "kv", "params": {"tests": ["set", "get"]}},
                {"workload": "net", "params": {"tests": ["udp", "tcp"]}},
            ]}),
            &[("kv", "set"), ("kv", "get"), ("net", "udp1472")],
        );
        assert_eq!(
            not_run_note(&old, "a").as_deref(),
            Some("a: interrupted before this test stored anything: net tcp (asked for: not started, or killed before its first checkpoint)")
        );
        // One whose second workload asked for its default tests and stored nothing: it
        // is named (it was left out, no tests known).
        let old = killed(
            serde_json::json!({"suite": [
                {"workload": "kv", "params": {"tests": ["set", "get"]}},
                {"workload": "mem", "params": {}},
            ]}),
            &[("kv", "set")],
        );
        assert_eq!(
            not_run_note(&old, "a").as_deref(),
            Some(
                "a: interrupted before these tests stored anything: kv get; mem (every test) \
                 (asked for: not started, or killed before its first checkpoint)"
            )
        );
    }

    /// A geometric mean over oltp's rows (TPC-C on databases of different sizes) or over
    /// crypto's unlike tests is refused with its reason; one row, or kv's suite of tests,
    /// has its mean.
    #[test]
    fn no_geomean_across_a_curves_points_or_unlike_tests() {
        let row = |label: &str| SummaryRow {
            label: label.into(),
            perf: vec![Some(1.0)],
            perf_missing: vec![None],
            power: vec![],
            chosen: vec![],
            flags: vec![],
            unit: "new orders/min".into(),
            higher_is_better: true,
        };
        let oltp = vec!["oltp".to_string()];
        let rows = [row("tpcc warehouses=1"), row("tpcc warehouses=10")];
        let two = refs(&rows);
        assert_eq!(
            no_geomean_reason(&two, &oltp, false).expect("two database sizes"),
            "no geometric mean: oltp's rows are TPC-C on different configurations \
             (warehouses), shown one by one; take one with --at (e.g. --at warehouses=10)"
        );
        let in_plan = no_geomean_reason(&two, &oltp, true).unwrap();
        assert!(
            in_plan.ends_with("take one with `params = { warehouses = 10 }`"),
            "{in_plan}"
        );
        assert_eq!(no_geomean_reason(&two[..1], &oltp, false), None);
        let crypto = vec!["crypto".to_string()];
        assert_eq!(
            no_geomean_reason(&two, &crypto, false).unwrap(),
            "no geometric mean: crypto's tests (key sizes, operations, thread counts) are \
             different measurements, shown one by one"
        );
        assert_eq!(no_geomean_reason(&two, &["kv".to_string()], false), None);
    }

    /// A latency and a throughput in one unit (a latency named so, in `us`, beside a
    /// figure in `us` better higher) have no geometric mean: a slower latency would have
    /// raised it as more throughput does. Latencies alone have theirs, better lower, and
    /// the table names the kind of figure it holds.
    #[test]
    fn no_geomean_across_latencies_and_throughputs() {
        let row = |label: &str, higher_is_better: bool| SummaryRow {
            label: label.into(),
            perf: vec![Some(1.0), Some(1.2)],
            perf_missing: vec![None, None],
            power: vec![],
            chosen: vec![],
            flags: vec![],
            unit: "us".into(),
            higher_is_better,
        };
        let kv = vec!["kv".to_string()];
        let both = [row("kv lat", false), row("kv budget", true)];
        assert_eq!(
            no_geomean_reason(&refs(&both), &kv, false).as_deref(),
            Some("no geometric mean: kv lat is better lower (a latency), the other tests better higher")
        );
        let lat = [row("kv lat", false), row("kv lat2", false)];
        assert_eq!(no_geomean_reason(&refs(&lat), &kv, false), None);

        let summary = |rows: &[SummaryRow]| Summary {
            runs: labels(2),
            measured: 2,
            selection: String::new(),
            notes: vec![],
            differences: vec![],
            unit: "us".into(),
            peak_params: vec![],
            rows: rows.to_vec(),
            geomean: vec![None, None],
            geomean_note: None,
            power_mean: vec![None, None],
            power_mean_note: None,
            power_basis: vec![None, None],
            left_out: vec![],
        };
        let s = summary(&lat);
        assert_eq!(s.perf_heading(), "Latency (us)");
        assert_eq!(s.row_name(&s.rows[0], "kv"), "lat");
        let s = summary(&both);
        assert_eq!(s.perf_heading(), "Figure (us)");
        assert_eq!(s.row_name(&s.rows[0], "kv"), "lat (lower is better)");
        assert_eq!(s.row_name(&s.rows[1], "kv"), "budget");
        let d = s.difference(1, 0);
        assert_eq!(s.diff_cell(&d, 0), "1.20x (+20%, worse)");
        assert_eq!(s.diff_cell(&d, 1), "1.20x (+20%)");
    }

    /// Acceptance pass B, 7: kv ramp's `max_reply_rate_per_s` (in ops/s) read
    /// `max_reply_rate/s`: the name of a rate is no unit. A thing counted still is.
    #[test]
    fn a_rates_name_is_no_unit() {
        assert_eq!(display_unit("signs_per_s", "ops/s"), "signs/s");
        assert_eq!(display_unit("verifies_per_s", "ops/s"), "verifies/s");
        for rate in [
            "max_reply_rate_per_s",
            "max_rate_meeting_slo_per_s",
            "capacity_per_s",
            "offered_rate_per_s",
            "ops_per_s",
        ] {
            assert_eq!(display_unit(rate, "ops/s"), "ops/s", "{rate}");
        }
        assert_eq!(display_unit("throughput_mb_per_s", "MB/s"), "MB/s");
    }

    /// A net matrix's %CPU used absent at two of its pairs, each for a reason naming the
    /// receiving host: each reason says the pairs it holds at, not the run alone.
    #[test]
    fn cpu_used_absent_names_the_tests() {
        let row = |test: &str, run: usize, cpu: Result<CpuFigure, String>| {
            let e = Efficiency {
                perf: 1.0,
                unit: "Gbit/s".into(),
                throughput: true,
                power: Err("none".into()),
                idle_w: Err("none".into()),
                idle_warnings: Vec::new(),
                perf_per_w: Err("none".into()),
                w_per_perf: Err("none".into()),
                dw_per_perf: Err("none".into()),
                cpu_used: cpu,
                cpu_pct_per_perf: Err("none".into()),
            };
            (test.to_string(), run, String::new(), e)
        };
        let low = |h: &str| Err(format!("the kernel counted too little on {h}"));
        let ok = || {
            Ok(CpuFigure {
                pct: 50.0,
                basis: CpuBasis::Host,
            })
        };
        let l = labels(2);
        let rows = [
            row(
                "net udp60 sender_host=rbh1 receiver_host=rbh2",
                0,
                low("rbh2"),
            ),
            row(
                "net udp60 sender_host=rbh1 receiver_host=rbh2",
                1,
                low("rbh2"),
            ),
            row("net tcp sender_host=rbh3 receiver_host=rbh2", 0, ok()),
            row(
                "net udp1472 sender_host=rbh3 receiver_host=rbh1",
                1,
                low("rbh1"),
            ),
            row(
                "net udp1472 sender_host=rbh1 receiver_host=rbh2",
                1,
                low("rbh2"),
            ),
        ];
        assert_eq!(
            cpu_used_absent(&l, &rows),
            vec![
                (
                    "for run0 at net udp60 sender_host=rbh1 receiver_host=rbh2; run1 at net udp60 sender_host=rbh1 receiver_host=rbh2, net udp1472 sender_host=rbh1 receiver_host=rbh2"
                        .to_string(),
                    "the kernel counted too little on rbh2".to_string()
                ),
                (
                    "for run1 at net udp1472 sender_host=rbh3 receiver_host=rbh1".to_string(),
                    "the kernel counted too little on rbh1".to_string()
                ),
            ]
        );
        // A reason at every test of every run, or a table of one test: by run alone, as
        // every other absence is said.
        let nowhere: Vec<_> = rows
            .iter()
            .map(|r| row(&r.0, r.1, Err("no telemetry".into())))
            .collect();
        assert_eq!(
            cpu_used_absent(&l, &nowhere),
            vec![("on every run".to_string(), "no telemetry".to_string())]
        );
        assert_eq!(
            cpu_used_absent(&l, &rows[..2]),
            vec![(
                "on every run".to_string(),
                "the kernel counted too little on rbh2".to_string()
            )]
        );
        // At every test of run0 alone: for run0. At one test of each run, each having
        // the other's figure: by test, not "on every run".
        let why = || Err("no telemetry".to_string());
        let (t1, t2) = ("net tcp a", "net udp60 a");
        let run0 = [row(t1, 0, why()), row(t2, 0, why()), row(t1, 1, ok())];
        assert_eq!(
            cpu_used_absent(&l, &run0),
            vec![("for run0".to_string(), "no telemetry".to_string())]
        );
        let crossed = [
            row(t1, 0, why()),
            row(t2, 0, ok()),
            row(t1, 1, ok()),
            row(t2, 1, why()),
        ];
        assert_eq!(
            cpu_used_absent(&l, &crossed),
            vec![(
                "for run0 at net tcp a; run1 at net udp60 a".to_string(),
                "no telemetry".to_string()
            )]
        );
    }

    #[test]
    fn power_absent_reason_said_once() {
        let why: Result<PowerFigure, String> = Err("no power source: a VM".into());
        let other: Result<PowerFigure, String> = Err("ipmitool failed".into());
        let l = labels(3);
        // One reason on every result of every run: once for the report.
        let cells = (0..3).flat_map(|run| std::iter::repeat_n((run, &why), 20));
        assert_eq!(
            absent_reasons(&l, cells),
            vec![(
                "on every run".to_string(),
                "no power source: a VM".to_string()
            )]
        );
        // Two reasons: once per reason, with its runs.
        let cells = [(0, &why), (0, &why), (2, &why), (1, &other)];
        assert_eq!(
            absent_reasons(&l, cells.into_iter()),
            vec![
                (
                    "for run0, run2".to_string(),
                    "no power source: a VM".to_string()
                ),
                ("for run1".to_string(), "ipmitool failed".to_string())
            ]
        );
    }

    #[test]
    fn title_names_up_to_three_runs_and_counts_more() {
        assert_eq!(report_title(&[]), "rackbench report");
        assert_eq!(
            report_title(&labels(3)),
            "rackbench report: run0 vs run1 vs run2"
        );
        let t = report_title(&labels(16));
        assert_eq!(
            t,
            "rackbench report: 16 runs: run0, run1, \u{2026} (+14 more)"
        );
        assert!(!t.contains("run15") && !t.contains(" vs "));
    }
}
