//! Workload-specific views: the tables and charts a published report of each kind shows,
//! built from stored metrics and their labels (never from the generic headline alone).
//! crypto: an RSA table by key size and thread count and signs/s vs threads; mem: the
//! latency-vs-working-set curve with its plateaus and cache sizes, and bandwidth bars;
//! net: throughput bars and a CPU-cost table; capacity tests (ramp, search, levels) of any
//! workload: the ramp curve with its saturation point, the latency-objective search and
//! the load levels. Each view is a list of SVG figures and tables; HTML and Markdown render
//! the same tables, so the figures agree in both. A view whose data is absent is left out.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use model::{ResultRecord, RunRecord, Status};

use crate::derive::{self, run_labels, setting_str, Point};
use crate::fmt::{esc, fixed, num, si};
use crate::svg::{self, BarSeries, LineSeries, Scale};

/// A table: caption, header cells and body rows (plain text; escaped when rendered).
pub struct Table {
    pub caption: String,
    pub head: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// One view: a heading, its figures (title, SVG) and its tables.
pub struct View {
    pub title: String,
    pub figures: Vec<(String, String)>,
    pub tables: Vec<Table>,
    pub notes: Vec<String>,
}

/// The value of the first metric `name` whose labels are exactly `labels`.
fn metric(r: &ResultRecord, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    r.metrics
        .iter()
        .find(|m| {
            m.name == name
                && m.labels.len() == labels.len()
                && labels
                    .iter()
                    .all(|(k, v)| m.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|m| m.value)
        .filter(|v| v.is_finite())
}

/// A ratio stored per repetition (`ratio`: %CPU per Gbit/s, CPU us per transaction) over
/// several, as the ratio of their means: each weighted by its denominator (`weight`,
/// the throughput or the transactions it divides by), over the repetitions that have
/// both. The mean of each one's ratio is another figure: 50% at 10 and 20 Gbit/s read
/// 3.75 %CPU per Gbit/s beside the 50% at 15 Gbit/s of the columns, which is 3.33.
fn ratio_over(
    rs: &[&ResultRecord],
    ratio: impl Fn(&ResultRecord) -> Option<f64>,
    weight: impl Fn(&ResultRecord) -> Option<f64>,
) -> Option<f64> {
    let (num, den) = crate::stats::means_of_pairs(
        rs.iter()
            .filter_map(|r| Some((ratio(r)?, weight(r)?)))
            .map(|(x, w)| (x * w, w)),
    )?;
    (den > 0.0).then(|| num / den)
}

/// The value of the first metric `name` carrying (at least) these labels.
fn metric_with(r: &ResultRecord, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    r.metrics
        .iter()
        .find(|m| {
            m.name == name
                && labels
                    .iter()
                    .all(|(k, v)| m.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|m| m.value)
        .filter(|v| v.is_finite())
}

fn ok_results<'a>(run: &'a RunRecord, wl: &'a str) -> impl Iterator<Item = &'a ResultRecord> {
    run.results
        .iter()
        .filter(move |r| r.workload == wl && r.status != Status::Failed)
}

/// The sweep points of workload `wl` in `run` whose test passes `test`, in run order:
/// each is a test at one set of parameters with its valid repetitions ([`Point::valid`]:
/// completed and not flagged invalid), the only results a view may average; a point
/// with none is left out. Labelled by the test (unless `skip_test`) and the parameters
/// that vary among them, less `skip` (`tcp streams=2`).
fn sweep_points<'a>(
    run: &'a RunRecord,
    wl: &str,
    test: impl Fn(&str) -> bool,
    skip_test: bool,
    skip: &[&str],
) -> Vec<(String, Vec<&'a ResultRecord>)> {
    labelled_points(run, wl, test, skip_test, skip)
        .into_iter()
        .map(|(label, p)| (label, p.valid()))
        .collect()
}

/// The sweep points of [`sweep_points`] themselves, for a view that marks their
/// warnings ([`crate::charts::warning_codes`]: the point's own, `high_variation`, as
/// well as its results').
fn labelled_points<'a>(
    run: &'a RunRecord,
    wl: &str,
    test: impl Fn(&str) -> bool,
    skip_test: bool,
    skip: &[&str],
) -> Vec<(String, Point<'a>)> {
    let pts: Vec<Point> = derive::points(0, run)
        .into_iter()
        .filter(|p| p.workload == wl && test(&p.test))
        .collect();
    let varying = derive::varying_params(&pts);
    let fixed: Vec<&str> = pts
        .first()
        .map(|p| p.params.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let mut skip: Vec<&str> = skip.to_vec();
    skip.extend(fixed.iter().filter(|k| !varying.iter().any(|v| v == *k)));
    let labels: Vec<String> = pts
        .iter()
        .map(|p| {
            let params = p.param_label(&skip);
            match (skip_test, params.is_empty()) {
                (true, _) => params,
                (false, true) => p.test.clone(),
                (false, false) => format!("{} {params}", p.test),
            }
        })
        .collect();
    labels
        .into_iter()
        .zip(pts)
        .filter(|(_, p)| !p.valid().is_empty())
        .collect()
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn param_u64(r: &ResultRecord, key: &str) -> Option<u64> {
    let v = r.params.get(key)?;
    v.as_u64()
        .or_else(|| v.as_f64().map(|f| f as u64))
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
}

/// The binary prefixes [`bytes`] scales by.
const BYTE_UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];

/// Bytes as `4 KiB`, `32 MiB`, `1,007 GiB`: from 1000 up to 1024 of a unit (a "1 TiB"
/// server's memory less the firmware's) the figure is written whole, never with an SI
/// prefix on top of the binary one ("1.01k GiB", review H, 13).
pub fn bytes(b: f64) -> String {
    let (v, i) = byte_unit(b);
    let m = if v.round() >= 1000.0 {
        num(v.round())
    } else {
        si(v)
    };
    format!("{m} {}", BYTE_UNITS[i])
}

/// `b` in the unit [`bytes`] writes it in, and that unit's index in [`BYTE_UNITS`].
fn byte_unit(b: f64) -> (f64, usize) {
    let mut v = b;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < BYTE_UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    (v, i)
}

/// A byte count as [`bytes`] writes it when that is exact (`48 KiB`, `1,000 GiB`), None
/// when it is rounded (`23.6 GiB`), for a fact that shows the exact count beside it then.
pub fn bytes_exact(b: u64) -> Option<String> {
    let (_, i) = byte_unit(b as f64);
    let unit = 1u64 << (10 * i);
    let text = bytes(b as f64);
    let whole = text.split(' ').next().unwrap_or("").replace(',', "");
    (b.is_multiple_of(unit) && whole == (b / unit).to_string()).then_some(text)
}

/// Every view of one workload's runs.
pub fn views(runs: &[RunRecord], wl: &str) -> Vec<View> {
    let labels = run_labels(runs);
    // Runs without a result of this workload have no view here.
    let mine: Vec<(&RunRecord, &String)> = runs
        .iter()
        .zip(&labels)
        .filter(|(r, _)| r.results.iter().any(|x| x.workload == wl))
        .collect();
    let mut out = Vec::new();
    for (run, label) in mine.iter().copied() {
        let who = if mine.len() > 1 {
            format!("{label}: ")
        } else {
            String::new()
        };
        match wl {
            "crypto" => out.extend(crypto(run, wl, &who)),
            "mem" => {
                out.extend(mem_latency(run, wl, &who));
                out.extend(mem_bandwidth(run, wl, &who));
            }
            "net" => out.extend(net(run, wl, &who)),
            "oltp" => out.extend(oltp(run, wl, &who)),
            _ => {}
        }
        out.extend(connect_time(run, wl, &who));
        out.extend(capacity_views(run, wl, &who));
        if wl == "oltp" {
            out.extend(consistency(run, wl, &who));
        }
    }
    if wl == "oltp" {
        out.extend(oltp_runs_by_vus(&mine, wl));
    }
    out
}

/// What a settings cell says of a run stored before settings were kept, of a knob it did
/// not type.
pub const SETTING_NOT_RECORDED: &str = "not recorded (stored before settings were kept)";

/// The benchmark settings of a workload's runs (seed 000's Table 1, "Redis-Benchmark
/// Parameter Settings"): a row per setting any result ran with (its `settings`, defaults
/// included; `params` for records stored before settings were kept), a column per run.
/// A cell lists the run's values in the order its points ran them (a swept knob each of
/// its values, never one for all) and says whether they were typed (on the command line
/// or in a plan) or the workload's default. None when no result has a setting.
pub fn settings_view(runs: &[RunRecord], wl: &str) -> Option<View> {
    let labels = run_labels(runs);
    let mine: Vec<(Vec<&ResultRecord>, &String)> = runs
        .iter()
        .zip(&labels)
        .map(|(r, l)| (r.results.iter().filter(|x| x.workload == wl).collect(), l))
        .filter(|(rs, _): &(Vec<&ResultRecord>, _)| !rs.is_empty())
        .collect();
    let mut keys: Vec<&String> = mine
        .iter()
        .flat_map(|(rs, _)| {
            rs.iter()
                .flat_map(|r| r.settings.keys().chain(r.params.keys()))
        })
        .collect();
    keys.sort_unstable();
    keys.dedup();
    if keys.is_empty() {
        return None;
    }
    let rows = keys
        .iter()
        .map(|k| {
            let mut row = vec![k.to_string()];
            for (rs, _) in &mine {
                // Each value with the tests that ran it.
                let mut by_value: Vec<(String, Vec<&str>)> = Vec::new();
                for r in rs {
                    let Some(v) = r.setting(k) else { continue };
                    let v = setting_str(v);
                    match by_value.iter_mut().find(|(x, _)| *x == v) {
                        Some((_, tests)) if tests.contains(&r.test.as_str()) => {}
                        Some((_, tests)) => tests.push(&r.test),
                        None => by_value.push((v, vec![&r.test])),
                    }
                }
                // A value a test resolves for itself (`--wait auto`: a ramp spins, its
                // levels sleep) is told by its tests, where no test ran two of them.
                let per_test = by_value.len() > 1 && {
                    let mut tests: Vec<&str> = by_value
                        .iter()
                        .flat_map(|(_, t)| t.iter().copied())
                        .collect();
                    let n = tests.len();
                    tests.sort_unstable();
                    tests.dedup();
                    tests.len() == n
                };
                let vals: Vec<String> = by_value
                    .into_iter()
                    .map(|(v, tests)| match per_test {
                        true => format!("{v} ({})", tests.join(", ")),
                        false => v,
                    })
                    .collect();
                // A list's items are joined by ", ": several lists then by "; ".
                let sep = if vals.iter().any(|v| v.contains(", ")) {
                    "; "
                } else {
                    ", "
                };
                let typed = rs.iter().any(|r| r.params.contains_key(k.as_str()));
                let known = rs.iter().any(|r| !r.settings.is_empty());
                row.push(match (vals.is_empty(), typed, known) {
                    (true, _, true) => "not a setting of this run".into(),
                    (true, _, false) => SETTING_NOT_RECORDED.into(),
                    (false, true, _) => format!("{} (typed)", vals.join(sep)),
                    (false, false, _) => format!("{} (default)", vals.join(sep)),
                });
            }
            row
        })
        .collect();
    Some(View {
        title: format!("{wl}: benchmark settings"),
        figures: vec![],
        tables: vec![Table {
            caption: "Every setting the runs' results ran with, each run in its column: the \
                      effective value (a swept setting lists each of its values, in the \
                      order its points ran), \"typed\" where it was given on the command \
                      line or in a plan file, \"default\" where the workload's default \
                      applied; secrets are left out or masked when stored"
                .into(),
            head: ["Setting".to_string()]
                .into_iter()
                .chain(mine.iter().map(|(_, l)| l.to_string()))
                .collect(),
            rows,
        }],
        notes: vec![],
    })
}

/// The views `rackbench show` prints on the console beside its own tables, the same the
/// report has: each capacity test's steps (ramp, search, levels) and the TPC-C
/// consistency check's outcome. The other views hold what `show`'s results table already
/// has, or charts.
pub fn console_views(run: &RunRecord) -> Vec<View> {
    let mut workloads: Vec<&str> = Vec::new();
    for r in &run.results {
        if !workloads.contains(&r.workload.as_str()) {
            workloads.push(&r.workload);
        }
    }
    let mut out = Vec::new();
    for wl in workloads {
        out.extend(capacity_views(run, wl, ""));
        if wl == "oltp" {
            out.extend(consistency(run, wl, ""));
        }
    }
    out
}

/// Every capacity test of the run has its view (one per sweep point and repetition),
/// each named by what sets it apart from the others.
fn capacity_views(run: &RunRecord, wl: &str, who: &str) -> Vec<View> {
    let mut out = Vec::new();
    for phase in ["ramp", "search", "levels"] {
        let tests: Vec<&ResultRecord> = ok_results(run, wl)
            .filter(|r| derive::capacity_phase(r) == Some(phase))
            .collect();
        for r in &tests {
            let who = format!("{who}{}", apart(&tests, r));
            // The system under test's CPUs, to draw its server's CPU in its host's terms:
            // each counted for the share of the whole test it was online (one taken
            // offline half way is half a CPU), the test's average for every step.
            let cpus = derive::sut_summary(run, r)
                .and_then(|t| t.cpus_online())
                .filter(|&n| n > 0.0);
            out.extend(match phase {
                "ramp" => ramp(r, wl, &who, cpus),
                "search" => search(r, wl, &who),
                _ => levels(r, wl, &who, cpus),
            });
        }
    }
    out
}

/// Flag codes of the TPC-C consistency check (the oltp workload's `check_flags`): a
/// condition that failed makes the result invalid; a check that could not run leaves
/// the figures unverified.
const CONSISTENCY_FAILED: &str = "consistency";
const CONSISTENCY_NOT_CHECKED: &str = "consistency_not_checked";
/// Every flag that is an outcome of the check: the two above, and the runner's when the
/// workload's check itself failed.
const CHECK_OUTCOMES: [&str; 3] = [CONSISTENCY_FAILED, CONSISTENCY_NOT_CHECKED, "verify_failed"];

/// Whether the run asked for the consistency check (`--check`, on unless set false), as
/// its plan records the oltp parameters (at the top for one workload, per part for a
/// suite).
fn check_asked(run: &RunRecord) -> bool {
    let off = |v: &serde_json::Value| match v {
        serde_json::Value::Bool(b) => !b,
        serde_json::Value::String(s) => {
            matches!(
                s.to_ascii_lowercase().as_str(),
                "false" | "no" | "off" | "0"
            )
        }
        _ => false,
    };
    let parts: Vec<&serde_json::Value> = match run.plan.get("suite").and_then(|s| s.as_array()) {
        Some(suite) => suite
            .iter()
            .filter(|p| p.get("workload").and_then(|w| w.as_str()) == Some("oltp"))
            .collect(),
        None => vec![&run.plan],
    };
    !parts
        .iter()
        .filter_map(|p| p.get("params").and_then(|x| x.get("check")))
        .any(off)
}

/// The TPC-C consistency check (clause 3.3.2), which runs after each sweep point: the
/// conditions that failed and where (those results are invalid), a check that could not
/// run, or that none failed; said in so many words, as a flag alone says nothing of a
/// check that passed. None without a result of `wl` to check.
fn consistency(run: &RunRecord, wl: &str, who: &str) -> Option<View> {
    let results: Vec<&ResultRecord> = run.results.iter().filter(|r| r.workload == wl).collect();
    if results.is_empty() {
        return None;
    }
    // Each message once, with the steps it was found at (flags go on every result of
    // the step).
    let mut found: Vec<(&str, String, Vec<u32>)> = Vec::new();
    for r in &results {
        for f in r
            .flags
            .iter()
            .filter(|f| CHECK_OUTCOMES.contains(&f.code.as_str()))
        {
            match found
                .iter_mut()
                .find(|(c, m, _)| *c == f.code && *m == f.message)
            {
                Some((_, _, steps)) => {
                    if !steps.contains(&r.step) {
                        steps.push(r.step);
                    }
                }
                None => found.push((f.code.as_str(), f.message.clone(), vec![r.step])),
            }
        }
    }
    let at = |steps: &[u32]| {
        let list: Vec<String> = steps.iter().map(u32::to_string).collect();
        format!(
            "step{} {}",
            if steps.len() == 1 { "" } else { "s" },
            list.join(",")
        )
    };
    let mut notes = Vec::new();
    for (code, message, steps) in &found {
        notes.push(if *code == CONSISTENCY_FAILED {
            format!(
                "FAILED at {}: {message}; those results are invalid.",
                at(steps)
            )
        } else {
            format!(
                "Not checked at {}: {message}; those figures stand unverified.",
                at(steps)
            )
        });
    }
    if !check_asked(run) && found.is_empty() {
        notes.push("Not run: the run was made with --check false.".to_string());
    } else {
        // The check runs after a sweep point whose tests all completed: a result with no
        // outcome of it either passed it or was never checked. A run that ended early
        // (stopped, or a test failed) ended in its last sweep point before that point's
        // check: its completed results there were never checked.
        let point = |r: &ResultRecord| {
            let mut p = r.params.clone();
            p.remove("test");
            p
        };
        let cut_short = run.status != Status::Ok;
        let last_point = results.last().map(|r| point(r));
        let unchecked_end = |r: &ResultRecord| cut_short && last_point.as_ref() == Some(&point(r));
        let unflagged = |ok: bool| -> Vec<u32> {
            let mut steps: Vec<u32> = results
                .iter()
                .filter(|r| (r.status == Status::Ok && !unchecked_end(r)) == ok)
                .filter(|r| {
                    !r.flags
                        .iter()
                        .any(|f| CHECK_OUTCOMES.contains(&f.code.as_str()))
                })
                .map(|r| r.step)
                .collect();
            steps.dedup();
            steps
        };
        let (passed, unchecked) = (unflagged(true), unflagged(false));
        if !passed.is_empty() {
            notes.push(if found.is_empty() && unchecked.is_empty() {
                "Passed: no condition failed after any sweep point.".to_string()
            } else {
                format!("Passed at {}: no condition failed.", at(&passed))
            });
        }
        if !unchecked.is_empty() {
            notes.push(format!(
                "Not checked at {}: the test did not complete, or the run ended before its sweep point's check.",
                at(&unchecked)
            ));
        }
    }
    Some(View {
        title: format!("{who}TPC-C consistency check (clause 3.3.2)"),
        figures: vec![],
        tables: vec![],
        notes,
    })
}

/// What sets capacity test `r` apart from the others of `tests` (`pipeline=16,
/// repetition 2: `): the parameters whose values differ among them, and its repetition
/// when others share its parameters; empty for the only one.
fn apart(tests: &[&ResultRecord], r: &ResultRecord) -> String {
    let mut parts: Vec<String> = r
        .params
        .iter()
        .filter(|(k, v)| tests.iter().any(|o| o.params.get(*k) != Some(*v)))
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => format!("{k}={s}"),
            v => format!("{k}={v}"),
        })
        .collect();
    if tests
        .iter()
        .any(|o| o.params == r.params && o.repetition != r.repetition)
    {
        parts.push(format!("repetition {}", r.repetition + 1));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("{}: ", parts.join(", "))
    }
}

// ---------------------------------------------------------------- crypto

/// An RSA table cell: the other swept parameters (`engine=b`), key bits, threads.
type RsaCell = (String, u64, u64);

fn crypto(run: &RunRecord, wl: &str, who: &str) -> Option<View> {
    // (other swept parameters, bits, threads) -> samples of (signs, verifies) over the
    // repetitions of one sweep point: points that differ in anything but the thread
    // count (shown as columns) are separate rows, never averaged together.
    let mut cells: BTreeMap<RsaCell, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    // The warnings of each cell's sweep point, marked on the chart as on every chart
    // against a swept parameter.
    let mut warned: BTreeMap<RsaCell, Vec<String>> = BTreeMap::new();
    let points = labelled_points(run, wl, |_| true, true, &["threads"]);
    for (point, codes, r) in points.iter().flat_map(|(label, p)| {
        let codes = crate::charts::warning_code_list(p);
        p.valid()
            .into_iter()
            .map(move |r| (label, codes.clone(), r))
    }) {
        let mut mine: BTreeMap<RsaCell, (Option<f64>, Option<f64>)> = BTreeMap::new();
        let test_bits = r
            .test
            .strip_prefix("rsa")
            .and_then(|b| b.parse::<u64>().ok());
        let threads_param = param_u64(r, "threads");
        for m in &r.metrics {
            let is_sign = m.name == "signs_per_s";
            if !is_sign && m.name != "verifies_per_s" {
                continue;
            }
            let (bits, threads) = if let Some(b) = m.labels.get("bits") {
                let Ok(b) = b.parse::<u64>() else { continue };
                let t = m
                    .labels
                    .get("threads")
                    .and_then(|t| t.parse().ok())
                    .or(threads_param);
                (b, t)
            } else if m.labels.is_empty() {
                let Some(b) = test_bits else { continue };
                (b, threads_param)
            } else {
                continue;
            };
            // ECDSA reports bits=256 too; only RSA tests belong in the RSA table.
            if test_bits.is_none() && !r.test.starts_with("rsa") {
                continue;
            }
            let Some(t) = threads else { continue };
            let e = mine.entry((point.clone(), bits, t)).or_default();
            if is_sign {
                e.0 = Some(m.value);
            } else {
                e.1 = Some(m.value);
            }
        }
        for (k, (s, v)) in mine {
            // Two points meeting in one cell (differing only in what the table does not
            // show) mark it with both's codes, each once: it kept the last one's alone.
            if !codes.is_empty() {
                let cell = warned.entry(k.clone()).or_default();
                for c in &codes {
                    if !cell.contains(c) {
                        cell.push(c.clone());
                    }
                }
            }
            let e = cells.entry(k).or_default();
            e.0.extend(s);
            e.1.extend(v);
        }
    }
    if cells.is_empty() {
        return None;
    }
    let mut bits: Vec<(String, u64)> = cells.keys().map(|k| (k.0.clone(), k.1)).collect();
    bits.dedup();
    let mut threads: Vec<u64> = cells.keys().map(|k| k.2).collect();
    threads.sort_unstable();
    threads.dedup();
    let mut head = vec!["RSA key (bits)".to_string()];
    for t in &threads {
        head.push(format!("{t} thr: signs/s"));
        head.push(format!("{t} thr: verifies/s"));
    }
    head.push("peak signs/s at".into());
    let mut rows = Vec::new();
    let mut series = Vec::new();
    let mut marks: svg::PointMarks = Vec::new();
    for (i, (point, b)) in bits.iter().enumerate() {
        let name = if point.is_empty() {
            b.to_string()
        } else {
            format!("{b} {point}")
        };
        let mut row = vec![name.clone()];
        let mut pts = Vec::new();
        let mut flagged = Vec::new();
        for t in &threads {
            let key = (point.clone(), *b, *t);
            let c = cells.get(&key);
            let s = c.and_then(|c| mean(&c.0));
            let v = c.and_then(|c| mean(&c.1));
            row.push(s.map_or("-".into(), num));
            row.push(v.map_or("-".into(), num));
            if let Some(s) = s {
                pts.push((*t as f64, s));
                if let Some(codes) = warned.get(&key) {
                    flagged.push((*t as f64, codes.join(", ")));
                }
            }
        }
        marks.push(flagged);
        let peak = pts.iter().max_by(|a, b| a.1.total_cmp(&b.1));
        row.push(peak.map_or("-".into(), |p| {
            format!("{} thread{}", p.0, if p.0 == 1.0 { "" } else { "s" })
        }));
        rows.push(row);
        series.push(LineSeries {
            name: format!("RSA-{name}"),
            points: pts,
            color: i,
            dash: 0,
        });
    }
    let title = format!("{who}RSA signs/s vs threads, per key size");
    let note = crate::charts::marks_note(&series, &marks);
    let fig = svg::line_chart_marked(
        &title,
        "threads",
        "signs/s",
        Scale::Linear,
        if bits.len() > 1 {
            Scale::Log
        } else {
            Scale::Linear
        },
        &series,
        &marks,
        note.as_deref(),
    );
    Some(View {
        title: format!("{who}RSA sign and verify throughput"),
        figures: vec![(title, fig)],
        tables: vec![Table {
            caption: "RSA operations per second by key size and thread count (mean over the repetitions of each sweep point)".into(),
            head,
            rows,
        }],
        notes: vec![],
    })
}

// ---------------------------------------------------------------- oltp

/// TPC-C transaction types in the order HammerDB lists them.
const TXNS: [&str; 5] = [
    "new_order",
    "payment",
    "order_status",
    "delivery",
    "stock_level",
];

/// What a HammerDB user reads first: NOPM and TPM side by side per sweep point (and per
/// database with `--databases`), each transaction type's count, average and p50/p95/p99
/// latency, and, when the virtual users were swept, transactions per second against the
/// users (seed 001's "queries per second vs concurrent users").
fn oltp(run: &RunRecord, wl: &str, who: &str) -> Option<View> {
    let points = sweep_points(run, wl, |t| t == "tpcc", true, &[]);
    if points.is_empty() {
        return None;
    }
    let avg = |rs: &[&ResultRecord], name: &str, labels: &[(&str, &str)]| {
        mean(
            &rs.iter()
                .filter_map(|r| metric(r, name, labels))
                .collect::<Vec<_>>(),
        )
    };
    let cell = |v: Option<f64>| v.map_or("-".to_string(), num);
    let mut rows = Vec::new();
    let mut per_db = Vec::new();
    let mut client_counted = false;
    let mut per_repetition = false;
    let mut latency = Vec::new();
    for (point, rs) in &points {
        let name = if point.is_empty() {
            "tpcc".to_string()
        } else {
            point.clone()
        };
        rows.push(vec![
            name.clone(),
            cell(avg(rs, "nopm", &[])),
            cell(avg(rs, "tpm", &[])),
            cell(avg(rs, "txn_per_s", &[])),
            cell(ratio_over(
                rs,
                |r| metric(r, "loadgen_cpu_per_txn_us", &[]),
                |r| Some(metric(r, "tpm_client", &[])? * r.duration_s),
            )),
            rs.len().to_string(),
        ]);
        for db in 1..=64u32 {
            let d = db.to_string();
            let (nopm, tpm, client) = (
                avg(rs, "nopm", &[("db", &d)]),
                avg(rs, "tpm", &[("db", &d)]),
                avg(rs, "tpm_client", &[("db", &d)]),
            );
            if nopm.is_none() && tpm.is_none() && client.is_none() {
                break;
            }
            // The server's per-database count when it keeps one (PostgreSQL), else the
            // client's (MariaDB counts commits server-wide), marked as such.
            let tpm = match (tpm, client) {
                (Some(t), _) => num(t),
                (None, Some(c)) => {
                    client_counted = true;
                    format!("{} (client-counted)", num(c))
                }
                (None, None) => "-".into(),
            };
            per_db.push(vec![name.clone(), d, cell(nopm), tpm]);
        }
        for t in TXNS {
            let n = avg(rs, "transactions", &[("txn", t)]);
            if n.is_none() {
                continue;
            }
            let (figures, merged) = txn_latency(rs, t);
            per_repetition |= !merged && rs.len() > 1;
            // A count, or a mean of counts over repetitions (rounded: counts are whole).
            let n = n.map_or("-".to_string(), crate::fmt::count_in_table);
            let mut row = vec![name.clone(), t.to_string(), n];
            row.extend(figures);
            latency.push(row);
        }
    }
    let mut tables = vec![Table {
        caption: "TPC-C (HammerDB style): new orders and all transactions per minute, mean over the valid repetitions of each sweep point".into(),
        head: ["Point", "NOPM", "TPM", "txn/s", "client CPU us/txn", "n"]
            .map(String::from)
            .to_vec(),
        rows,
    }];
    if !per_db.is_empty() {
        tables.push(Table {
            caption: "Per database (--databases)".into(),
            head: ["Point", "Database", "NOPM", "TPM"]
                .map(String::from)
                .to_vec(),
            rows: per_db,
        });
    }
    if !latency.is_empty() {
        tables.push(Table {
            caption: "Latency per transaction type: count per repetition; latency of the valid repetitions' histograms merged".into(),
            head: ["Point", "Transaction", "Count", "Mean", "p50", "p95", "p99"]
                .map(String::from)
                .to_vec(),
            rows: latency,
        });
    }
    // Throughput against the virtual users, when they were swept.
    let mut notes = Vec::new();
    if client_counted {
        notes.push(
            "Per-database TPM marked client-counted: this engine's server counts commits for \
             the whole server (MariaDB's Com_commit + Com_rollback), so each database's TPM is \
             the client's count of committed and rolled-back transactions per minute of the \
             measured window; the TPM above is the server's, for all databases together."
                .to_string(),
        );
    }
    if per_repetition {
        notes.push(
            "Latency shown per repetition (a / b): those repetitions stored no histogram of \
             the transaction type to merge, and percentiles of repetitions are never averaged."
                .to_string(),
        );
    }
    let left_out: Vec<String> = derive::points(0, run)
        .iter()
        .filter(|p| p.workload == wl && p.test == "tpcc")
        .flat_map(|p| {
            let valid = p.valid();
            p.results
                .iter()
                .filter(move |r| !valid.iter().any(|v| std::ptr::eq(*v, **r)))
                .map(|r| {
                    let why = if r.is_invalid() {
                        "flagged invalid".to_string()
                    } else {
                        format!("{:?}", r.status).to_lowercase()
                    };
                    format!("step {} ({why})", r.step)
                })
        })
        .collect();
    if !left_out.is_empty() {
        notes.push(format!(
            "Left out of these tables (not a valid repetition): {}.",
            left_out.join(", ")
        ));
    }
    let (series, marks): (Vec<LineSeries>, svg::PointMarks) = tps_by_vus(run, wl)
        .into_iter()
        .filter(|l| l.points.len() > 1)
        .enumerate()
        .map(|(i, l)| l.drawn("txn/s", i))
        .unzip();
    let mut figures = Vec::new();
    if !series.is_empty() {
        figures.push(txn_per_s_by_users(
            format!("{who}transactions per second vs virtual users"),
            &series,
            &marks,
        ));
    }
    Some(View {
        title: format!("{who}TPC-C: NOPM, TPM and latency per transaction"),
        figures,
        tables,
        notes,
    })
}

/// Mean, p50, p95 and p99 latency of transaction type `txn` over the valid repetitions
/// `rs` of one sweep point, and whether they are one merged distribution. The histograms
/// of `txn` (of the kind the stored figures are of, service unless only corrected was
/// stored) are merged exactly when every repetition has one; else each repetition's own
/// figures are shown side by side (`1.2 ms / 1.4 ms`), as percentiles of repetitions do
/// not average into a percentile.
fn txn_latency(rs: &[&ResultRecord], txn: &str) -> ([String; 4], bool) {
    let stored_kind = rs.iter().find_map(|r| {
        r.metrics
            .iter()
            .filter(|m| m.name.starts_with("latency_"))
            .filter(|m| m.labels.get("txn").map(String::as_str) == Some(txn))
            .find_map(|m| m.labels.get("kind"))
    });
    let hists = |kind: &str| -> Option<Vec<hdrhistogram::Histogram<u64>>> {
        rs.iter()
            .map(|r| {
                r.histograms
                    .iter()
                    .find(|h| h.name == txn && h.kind == kind)
                    .and_then(|h| h.histogram().ok())
            })
            .collect()
    };
    let kind = stored_kind.cloned().or_else(|| {
        let named = || {
            rs.iter()
                .flat_map(|r| &r.histograms)
                .filter(|h| h.name == txn)
        };
        if named().any(|h| h.kind == "corrected") {
            Some("corrected".to_string())
        } else {
            named().next().map(|h| h.kind.clone())
        }
    });
    let merged = kind.and_then(|k| hists(&k)).and_then(|hs| {
        let mut it = hs.into_iter();
        let mut all = it.next()?;
        for h in it {
            all.add(&h).ok()?;
        }
        (!all.is_empty()).then_some(all)
    });
    if let Some(h) = merged {
        let q = |x: f64| crate::fmt::latency_ns(h.value_at_quantile(x) as f64);
        return (
            [crate::fmt::latency_ns(h.mean()), q(0.5), q(0.95), q(0.99)],
            true,
        );
    }
    // A repetition's own figure, of the kind the others are of.
    let of_txn = |r: &ResultRecord, name: &str| {
        r.metrics
            .iter()
            .filter(|x| x.name == name && x.labels.get("txn").map(String::as_str) == Some(txn))
            .find(|x| stored_kind.is_none_or(|k| x.labels.get("kind") == Some(k)))
            .map(|x| x.value)
            .filter(|v| v.is_finite())
    };
    let each = |f: &dyn Fn(&ResultRecord) -> Option<f64>| {
        let v: Vec<Option<f64>> = rs.iter().map(|r| f(r)).collect();
        if v.iter().all(Option::is_none) {
            return "-".to_string();
        }
        v.iter()
            .map(|x| x.map_or("-".into(), crate::fmt::latency_ns))
            .collect::<Vec<_>>()
            .join(" / ")
    };
    (
        [
            each(&|r| of_txn(r, "latency_mean_ns")),
            each(&|r| of_txn(r, "latency_p50_ns")),
            each(&|r| txn_p95_ns(r, txn)),
            each(&|r| of_txn(r, "latency_p99_ns")),
        ],
        false,
    )
}

/// One result's 95th percentile latency of transaction type `txn`: its stored
/// `latency_p95_ns` metric, else (a run stored before that metric existed) the 0.95
/// quantile of its stored histogram of the same kind as its other latency figures.
/// Never the p90 in its place.
fn txn_p95_ns(r: &ResultRecord, txn: &str) -> Option<f64> {
    let of_txn = |name: &str| {
        r.metrics
            .iter()
            .find(|x| x.name == name && x.labels.get("txn").map(String::as_str) == Some(txn))
    };
    if let Some(m) = of_txn("latency_p95_ns").filter(|m| m.value.is_finite()) {
        return Some(m.value);
    }
    let kind = of_txn("latency_p50_ns").and_then(|m| m.labels.get("kind"));
    r.histograms
        .iter()
        .filter(|h| h.name == txn)
        .find(|h| kind.is_none_or(|k| *k == h.kind))
        .and_then(|h| h.histogram().ok())
        .filter(|h| !h.is_empty())
        .map(|h| h.value_at_quantile(0.95) as f64)
}

/// A (title, SVG) figure of transactions per second against virtual users.
fn txn_per_s_by_users(
    title: String,
    series: &[LineSeries],
    marks: &svg::PointMarks,
) -> (String, String) {
    let note = crate::charts::marks_note(series, marks);
    let svg = svg::line_chart_marked(
        &title,
        "virtual users",
        "txn/s",
        Scale::Linear,
        Scale::Linear,
        series,
        marks,
        note.as_deref(),
    );
    (title, svg)
}

/// One line of [`tps_by_vus`]: the other parameters that name it, its (users, txn/s)
/// points, and the points that carry warnings (users, their codes), marked as every
/// chart against a swept parameter marks them.
struct VusLine {
    others: String,
    points: Vec<(f64, f64)>,
    marks: Vec<(f64, String)>,
}

impl VusLine {
    /// The line drawn as `name` (with the parameters that tell it from the others) in
    /// colour `color`, and its marks.
    fn drawn(self, name: &str, color: usize) -> (LineSeries, Vec<(f64, String)>) {
        let series = LineSeries {
            name: if self.others.is_empty() {
                name.to_string()
            } else {
                format!("{name}, {}", self.others)
            },
            points: self.points,
            color,
            dash: 0,
        };
        (series, self.marks)
    }
}

/// Transactions per second (mean over repetitions) at each virtual-user count, one line
/// per setting of the run's other parameters (`warehouses=100`: a sweep of warehouses
/// and users is a line per warehouse count, not one line jumping between them), each
/// sorted by users.
fn tps_by_vus(run: &RunRecord, wl: &str) -> Vec<VusLine> {
    let points: Vec<_> = derive::points(0, run)
        .into_iter()
        .filter(|p| p.workload == wl && p.test == "tpcc")
        .collect();
    // The other parameters that differ between the points name the lines.
    let varying: Vec<&String> = points
        .iter()
        .flat_map(|p| p.params.keys())
        .filter(|k| k.as_str() != "vus")
        .filter(|k| {
            let first = points[0].params.get(k.as_str());
            points.iter().any(|p| p.params.get(k.as_str()) != first)
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut lines: BTreeMap<String, VusLine> = BTreeMap::new();
    for p in &points {
        let Some(vus) = p.params.get("vus").and_then(|v| v.as_f64()) else {
            continue;
        };
        let rs = p.valid();
        let Some(tps) = mean(
            &rs.iter()
                .filter_map(|r| metric(r, "txn_per_s", &[]))
                .collect::<Vec<_>>(),
        ) else {
            continue;
        };
        let others = varying
            .iter()
            .filter_map(|k| p.params.get(k.as_str()).map(|v| format!("{k}={v}")))
            .collect::<Vec<_>>()
            .join(" ");
        let line = lines.entry(others.clone()).or_insert_with(|| VusLine {
            others,
            points: Vec::new(),
            marks: Vec::new(),
        });
        line.points.push((vus, tps));
        line.marks
            .extend(crate::charts::warning_codes(p).map(|codes| (vus, codes)));
    }
    for l in lines.values_mut() {
        l.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    lines.into_values().collect()
}

/// Seed 001's chart: every run that swept the virtual users as one line, named by its
/// label and database engine, so PostgreSQL and MariaDB (or two platforms) share axes.
fn oltp_runs_by_vus(runs: &[(&RunRecord, &String)], wl: &str) -> Option<View> {
    let (series, marks): (Vec<LineSeries>, svg::PointMarks) = runs
        .iter()
        .flat_map(|(run, label)| {
            tps_by_vus(run, wl)
                .into_iter()
                .map(move |line| (line, run, label))
        })
        .filter(|(line, _, _)| line.points.len() > 1)
        .enumerate()
        .map(|(i, (line, run, label))| {
            let engine = run
                .hosts
                .iter()
                .find_map(|h| h.facts.get("oltp.engine").and_then(|f| f.value.clone()));
            let name = match engine {
                Some(e) if !label.to_lowercase().contains(&e.to_lowercase()) => {
                    format!("{label} ({e})")
                }
                _ => label.to_string(),
            };
            line.drawn(&name, i)
        })
        .unzip();
    if series.len() < 2 {
        return None;
    }
    // The chart's figures as a table too: a Markdown report without charts had this
    // section's heading and caption, and nothing under them.
    let mut vus: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    vus.sort_by(f64::total_cmp);
    vus.dedup();
    let rows = vus
        .iter()
        .map(|u| {
            std::iter::once(crate::fmt::num(*u))
                .chain(series.iter().zip(&marks).map(|(s, m)| {
                    // A point the chart marks ⚠ (its warnings) is marked here too.
                    let warned = m.iter().any(|(x, _)| x == u);
                    s.points.iter().find(|p| p.0 == *u).map_or("-".into(), |p| {
                        let v = crate::fmt::fixed(p.1, 1);
                        if warned {
                            format!("{v} ⚠")
                        } else {
                            v
                        }
                    })
                }))
                .collect()
        })
        .collect();
    Some(View {
        title: "TPC-C: throughput against concurrent users, run beside run".into(),
        figures: vec![txn_per_s_by_users(
            "transactions per second vs concurrent users, all runs".into(),
            &series,
            &marks,
        )],
        tables: vec![Table {
            caption: "Transactions per second at each virtual-user count".into(),
            head: std::iter::once("Virtual users".to_string())
                .chain(series.iter().map(|s| s.name.clone()))
                .collect(),
            rows,
        }],
        notes: std::iter::once(
            "Each line is one run's mean over repetitions at each virtual-user count; a \
             transaction is one stored-procedure call (or its statements), as HammerDB counts."
                .to_string(),
        )
        .chain(marks.iter().any(|m| !m.is_empty()).then(|| {
            "⚠: a point whose results carry warnings (each run's Results table says which)."
                .to_string()
        }))
        .collect(),
    })
}

// ---------------------------------------------------------------- mem

const LEVELS: [&str; 4] = ["l1", "l2", "l3", "ram"];

struct Plateau {
    level: &'static str,
    latency_ns: Option<f64>,
    cycles: Option<f64>,
    from: Option<f64>,
    to: Option<f64>,
    cache: Option<f64>,
}

/// One view per latency result of the run: a sweep point's curve and each repetition's
/// are their own, each named by what sets it apart (only the first was shown, unsaid:
/// acceptance pass J, 2).
fn mem_latency(run: &RunRecord, wl: &str, who: &str) -> Vec<View> {
    let results: Vec<&ResultRecord> = ok_results(run, wl)
        .filter(|r| {
            r.test == "latency"
                && r.metrics
                    .iter()
                    .any(|m| m.name == "latency_ns" && m.labels.contains_key("size_bytes"))
        })
        .collect();
    let reps = results.iter().any(|r| r.repetition > 0);
    let differ = |k: &str| {
        results
            .iter()
            .any(|r| r.params.get(k) != results[0].params.get(k))
    };
    results
        .iter()
        .filter_map(|r| {
            let mut apart: Vec<String> = r
                .params
                .iter()
                .filter(|(k, _)| differ(k))
                .map(|(k, v)| format!("{k}={}", v.as_str().map_or(v.to_string(), String::from)))
                .collect();
            if reps {
                apart.push(format!("rep {}", r.repetition + 1));
            }
            let who = match apart.is_empty() {
                true => who.to_string(),
                false => format!("{who}{}: ", apart.join(" ")),
            };
            mem_latency_of(r, &who)
        })
        .collect()
}

fn mem_latency_of(r: &ResultRecord, who: &str) -> Option<View> {
    let mut curve: Vec<(f64, f64)> = r
        .metrics
        .iter()
        .filter(|m| m.name == "latency_ns" && m.value.is_finite())
        .filter_map(|m| {
            let s: f64 = m.labels.get("size_bytes")?.parse().ok()?;
            (s > 0.0).then_some((s, m.value))
        })
        .collect();
    curve.sort_by(|a, b| a.0.total_cmp(&b.0));
    let plats: Vec<Plateau> = LEVELS
        .iter()
        .map(|l| Plateau {
            level: l,
            latency_ns: metric(r, &format!("{l}_latency_ns"), &[]),
            cycles: metric_with(r, &format!("{l}_latency_cycles"), &[]),
            from: metric(r, &format!("{l}_plateau_from_bytes"), &[]),
            to: metric(r, &format!("{l}_plateau_to_bytes"), &[]),
            cache: metric(r, &format!("{l}_cache_bytes"), &[]),
        })
        .collect();
    let title = format!("{who}memory latency vs working set");
    let fig = latency_curve_svg(&title, &curve, &plats);
    let rows: Vec<Vec<String>> = plats
        .iter()
        .filter(|p| p.latency_ns.is_some() || p.cache.is_some())
        .map(|p| {
            vec![
                p.level.to_uppercase(),
                p.latency_ns.map_or("-".into(), |v| fixed(v, 2)),
                p.cycles.map_or("-".into(), |v| fixed(v, 1)),
                match (p.from, p.to) {
                    (Some(a), Some(b)) => format!("{} - {}", bytes(a), bytes(b)),
                    _ => "-".into(),
                },
                p.cache.map_or("-".into(), bytes),
            ]
        })
        .collect();
    let clock = measured_clock(r);
    let mut notes: Vec<String> = r
        .missing
        .iter()
        .filter(|m| m.name.ends_with("_latency_ns") || m.name == CLOCK)
        .map(|m| format!("{}: {}", m.name, m.reason))
        .collect();
    if let Some(c) = &clock {
        notes.insert(
            0,
            format!("Cycles are counted at the measured CPU clock, {c}."),
        );
    }
    let cycles_head = clock.map_or("Cycles".to_string(), |c| format!("Cycles (at {c})"));
    // The curve itself, point by point (at most ~75 rows at 4 per octave): the Markdown
    // report has no chart, and a run with no plateau showed only "-" in every cell, none
    // of the latencies it measured.
    let by_size = Table {
        caption: "Latency by working-set size (the measured curve)".into(),
        head: vec![
            "Working set".into(),
            "Latency (ns)".into(),
            cycles_head.clone(),
        ],
        rows: curve
            .iter()
            .map(|&(s, ns)| {
                let cycles = r
                    .metrics
                    .iter()
                    .find(|m| {
                        m.name == "latency_cycles"
                            && m.labels
                                .get("size_bytes")
                                .and_then(|v| v.parse::<f64>().ok())
                                == Some(s)
                    })
                    .filter(|m| m.value.is_finite())
                    .map_or("-".into(), |m| fixed(m.value, 1));
                vec![bytes(s), fixed(ns, 2), cycles]
            })
            .collect(),
    };
    Some(View {
        title: format!("{who}memory latency by level"),
        figures: vec![(title, fig)],
        tables: vec![
            Table {
                caption:
                    "Latency plateaus found in the curve, beside the cache sizes the OS reports"
                        .into(),
                head: vec![
                    "Level".into(),
                    "Latency (ns)".into(),
                    cycles_head,
                    "Plateau range".into(),
                    "Cache size".into(),
                ],
                rows,
            },
            by_size,
        ],
        notes,
    })
}

/// The mem workload's measured core clock (`core_freq_mhz`, labelled with where the
/// frequency came from).
const CLOCK: &str = "core_freq_mhz";

/// The clock the latency in cycles was counted at, as `2,450 MHz, cpuinfo`: a cycle
/// count means nothing to a reader who cannot see the clock it assumes.
fn measured_clock(r: &ResultRecord) -> Option<String> {
    let m = r
        .metrics
        .iter()
        .find(|m| m.name == CLOCK && m.value.is_finite())?;
    Some(match m.labels.get("freq_source") {
        Some(src) => format!("{} MHz, {src}", num(m.value)),
        None => format!("{} MHz", num(m.value)),
    })
}

/// The latency curve on a log2 size axis, plateaus as labelled horizontal segments and
/// cache sizes as vertical dashed lines.
fn latency_curve_svg(title: &str, curve: &[(f64, f64)], plats: &[Plateau]) -> String {
    let (w, h) = (760.0, 400.0);
    let (x0, x1, y0, y1) = (78.0, w - 24.0, 50.0, h - 50.0);
    let mut out = svg::open_svg(title, w, h);
    let xs: Vec<f64> = curve
        .iter()
        .map(|p| p.0)
        .chain(plats.iter().filter_map(|p| p.cache))
        .collect();
    let lo = xs
        .iter()
        .cloned()
        .fold(f64::MAX, f64::min)
        .max(1.0)
        .log2()
        .floor();
    let hi = xs
        .iter()
        .cloned()
        .fold(f64::MIN, f64::max)
        .max(2.0)
        .log2()
        .ceil();
    let hi = if hi <= lo { lo + 1.0 } else { hi };
    let ymax = curve.iter().map(|p| p.1).fold(0.0f64, f64::max).max(1e-3);
    let ymin = curve.iter().map(|p| p.1).fold(f64::MAX, f64::min);
    // L1 near 1 ns and RAM near 100 ns: a log axis keeps both plateaus readable.
    let log_y = ymin > 0.0 && ymax / ymin >= 20.0;
    let (ylo, yhi) = if log_y {
        (
            10f64.powf(ymin.log10().floor()),
            10f64.powf(ymax.log10().ceil()),
        )
    } else {
        (0.0, ymax * 1.1)
    };
    let sx = |b: f64| x0 + (b.max(1.0).log2() - lo) / (hi - lo) * (x1 - x0);
    let sy = |v: f64| {
        let t = if log_y {
            (v.max(ylo).log10() - ylo.log10()) / (yhi.log10() - ylo.log10())
        } else {
            (v - ylo) / (yhi - ylo)
        };
        y1 - t * (y1 - y0)
    };
    // Y ticks.
    let yt: Vec<f64> = if log_y {
        let mut t = Vec::new();
        let mut v = ylo;
        while v <= yhi * 1.001 && t.len() < 12 {
            t.push(v);
            v *= 10.0;
        }
        t
    } else {
        (0..=5).map(|i| yhi * i as f64 / 5.0).collect()
    };
    for t in yt {
        let y = sy(t);
        let _ = write!(
            out,
            r##"<line x1="{x0}" y1="{y:.1}" x2="{x1}" y2="{y:.1}" stroke="#e5e5e5"/><text x="{tx}" y="{ty:.1}" text-anchor="end" fill="#555">{v}</text>"##,
            tx = x0 - 6.0,
            ty = y + 4.0,
            v = esc(&si(t))
        );
    }
    // X ticks every power of two (every other one when crowded).
    let step = if hi - lo > 16.0 { 2 } else { 1 };
    let mut e = lo as i64;
    while e as f64 <= hi {
        let b = 2f64.powi(e as i32);
        let x = sx(b);
        let _ = write!(
            out,
            r##"<line x1="{x:.1}" y1="{y1}" x2="{x:.1}" y2="{y2}" stroke="#888"/><text x="{x:.1}" y="{ty}" text-anchor="middle" font-size="10" fill="#555">{l}</text>"##,
            y2 = y1 + 4.0,
            ty = y1 + 16.0,
            l = esc(&bytes(b))
        );
        e += step;
    }
    let _ = write!(
        out,
        r##"<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y1}" stroke="#888"/><line x1="{x0}" y1="{y1}" x2="{x1}" y2="{y1}" stroke="#888"/><text x="16" y="{my}" transform="rotate(-90 16 {my})" text-anchor="middle" fill="#333">latency (ns{ls})</text><text x="{mx}" y="{ly}" text-anchor="middle" fill="#333">working set (log2 scale)</text>"##,
        my = (y0 + y1) / 2.0,
        mx = (x0 + x1) / 2.0,
        ly = y1 + 34.0,
        ls = if log_y { ", log scale" } else { "" }
    );
    // Cache sizes.
    for p in plats {
        if let Some(c) = p.cache {
            let x = sx(c);
            let _ = write!(
                out,
                r##"<line class="cache" x1="{x:.1}" y1="{y0}" x2="{x:.1}" y2="{y1}" stroke="#999" stroke-dasharray="5 4"/><text x="{tx:.1}" y="{ty}" font-size="10" fill="#666">{l}</text>"##,
                tx = x + 3.0,
                ty = y0 + 10.0,
                l = esc(&format!("{} {}", p.level.to_uppercase(), bytes(c)))
            );
        }
    }
    // The curve.
    let path: Vec<String> = curve
        .iter()
        .map(|(b, v)| format!("{:.1},{:.1}", sx(*b), sy(*v)))
        .collect();
    let _ = write!(
        out,
        r##"<polyline fill="none" stroke="{c}" stroke-width="2" points="{p}"/>"##,
        c = svg::color(0),
        p = path.join(" ")
    );
    for (b, v) in curve {
        let _ = write!(
            out,
            r##"<circle cx="{x:.1}" cy="{y:.1}" r="2.5" fill="{c}"><title>{t}</title></circle>"##,
            x = sx(*b),
            y = sy(*v),
            c = svg::color(0),
            t = esc(&format!("{}: {:.2} ns", bytes(*b), v))
        );
    }
    // Plateaus.
    for (i, p) in plats.iter().enumerate() {
        if let (Some(l), Some(a), Some(b)) = (p.latency_ns, p.from, p.to) {
            let y = sy(l);
            let _ = write!(
                out,
                r##"<line class="plateau" x1="{xa:.1}" y1="{y:.1}" x2="{xb:.1}" y2="{y:.1}" stroke="{c}" stroke-width="5" stroke-opacity="0.6"/><text x="{xa:.1}" y="{ty:.1}" font-size="11" font-weight="bold" fill="{c}">{t}</text>"##,
                xa = sx(a),
                xb = sx(b),
                c = svg::color(i + 1),
                ty = y - 7.0,
                t = esc(&format!("{} {:.1} ns", p.level.to_uppercase(), l))
            );
        }
    }
    out.push_str("</svg>");
    out
}

fn mem_bandwidth(run: &RunRecord, wl: &str, who: &str) -> Option<View> {
    // (sweep point, threads) -> kind -> samples over that point's repetitions only: two
    // array sizes are two columns, never one mean.
    let mut cols: Vec<(String, u64)> = Vec::new();
    let mut cells: BTreeMap<String, BTreeMap<(String, u64), Vec<f64>>> = BTreeMap::new();
    for (point, rs) in sweep_points(run, wl, |t| t == "bandwidth", true, &[]) {
        for r in rs {
            for m in r.metrics.iter().filter(|m| m.name == "bandwidth_gb_per_s") {
                let (Some(k), Some(t)) = (
                    m.labels.get("kind"),
                    m.labels.get("threads").and_then(|t| t.parse::<u64>().ok()),
                ) else {
                    continue;
                };
                let col = (point.clone(), t);
                if !cols.contains(&col) {
                    cols.push(col.clone());
                }
                cells
                    .entry(k.clone())
                    .or_default()
                    .entry(col)
                    .or_default()
                    .push(m.value);
            }
        }
    }
    if cells.is_empty() {
        return None;
    }
    cols.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    let col_name = |(p, t): &(String, u64)| {
        if p.is_empty() {
            format!("{t} thread(s)")
        } else {
            format!("{p} · {t} thread(s)")
        }
    };
    let kinds: Vec<String> = cells.keys().cloned().collect();
    let series: Vec<BarSeries> = cols
        .iter()
        .map(|c| BarSeries {
            name: col_name(c),
            values: kinds
                .iter()
                .map(|k| cells[k].get(c).and_then(|v| mean(v)))
                .collect(),
            warn: vec![false; kinds.len()],
        })
        .collect();
    let title = format!("{who}memory bandwidth by kernel and threads");
    let fig = svg::bar_chart(&title, "GB/s", &kinds, &series);
    let mut head = vec!["Kernel".to_string()];
    head.extend(cols.iter().map(|(p, t)| {
        if p.is_empty() {
            format!("{t} thr (GB/s)")
        } else {
            format!("{p} {t} thr (GB/s)")
        }
    }));
    let rows = kinds
        .iter()
        .map(|k| {
            let mut row = vec![k.clone()];
            row.extend(cols.iter().map(|c| {
                cells[k]
                    .get(c)
                    .and_then(|v| mean(v))
                    .map_or("-".into(), |v| fixed(v, 2))
            }));
            row
        })
        .collect();
    Some(View {
        title: format!("{who}memory bandwidth"),
        figures: vec![(title, fig)],
        tables: vec![Table {
            caption: "Memory bandwidth, GB/s".into(),
            head,
            rows,
        }],
        notes: vec![],
    })
}

// ---------------------------------------------------------------- net

fn net(run: &RunRecord, wl: &str, who: &str) -> Option<View> {
    // Sweep point (`tcp streams=2`) -> its repetitions: only those are averaged.
    let tests: Vec<(String, Vec<&ResultRecord>)> = sweep_points(run, wl, |_| true, false, &[])
        .into_iter()
        .filter_map(|(k, rs)| {
            let rs: Vec<&ResultRecord> = rs
                .into_iter()
                .filter(|r| metric(r, "throughput_gbit_per_s", &[]).is_some())
                .collect();
            (!rs.is_empty()).then_some((k, rs))
        })
        .collect();
    if tests.is_empty() {
        return None;
    }
    let avg = |rs: &[&ResultRecord], name: &str, labels: &[(&str, &str)]| {
        let v: Vec<f64> = rs.iter().filter_map(|r| metric(r, name, labels)).collect();
        mean(&v)
    };
    // An end's %CPU per Gbit/s over its own rate: the sender's sent, the receiver's
    // received (as each repetition's is).
    let per_gbit = |rs: &[&ResultRecord], end: &str| {
        let rate: &[(&str, &str)] = if end == "sender" {
            &[("end", "sender")]
        } else {
            &[]
        };
        ratio_over(
            rs,
            |r| metric(r, "cpu_pct_per_gbit", &[("end", end)]),
            |r| metric(r, "throughput_gbit_per_s", rate),
        )
    };
    let cats: Vec<String> = tests.iter().map(|t| t.0.clone()).collect();
    let series = vec![
        BarSeries {
            name: "receiver".into(),
            values: tests
                .iter()
                .map(|t| avg(&t.1, "throughput_gbit_per_s", &[]))
                .collect(),
            warn: tests
                .iter()
                .map(|t| t.1.iter().any(|r| !r.flags.is_empty()))
                .collect(),
        },
        BarSeries {
            name: "sender".into(),
            values: tests
                .iter()
                .map(|t| avg(&t.1, "throughput_gbit_per_s", &[("end", "sender")]))
                .collect(),
            warn: vec![false; tests.len()],
        },
    ];
    // The axis in the unit of the largest bar, so the figures on it keep their digits.
    let top = series
        .iter()
        .flat_map(|s| s.values.iter().flatten())
        .fold(0.0, |a: f64, b| a.max(*b));
    let (scale, unit) = crate::fmt::bit_rate_unit(&[top]);
    let series: Vec<BarSeries> = series
        .into_iter()
        .map(|s| BarSeries {
            values: s.values.iter().map(|v| v.map(|v| v * scale)).collect(),
            ..s
        })
        .collect();
    let title = format!("{who}network throughput per test");
    let fig = svg::bar_chart(&title, unit, &cats, &series);
    let f = |v: Option<f64>, d: usize| v.map_or("-".to_string(), |v| crate::fmt::fixed(v, d));
    // A paced test's target (--rate, iperf3 -b) beside what it moved, when any test had one.
    let paced = tests
        .iter()
        .any(|(_, rs)| avg(rs, "target_gbit_per_s", &[]).is_some());
    // One unit per column (K13: 37.8 Gbit/s above 53.05 Mbit/s in one column).
    let column_unit = |name: &str| {
        let all: Vec<f64> = tests
            .iter()
            .filter_map(|(_, rs)| avg(rs, name, &[]))
            .collect();
        crate::fmt::bit_rate_unit(&all)
    };
    let (target_unit, tput_unit) = (
        column_unit("target_gbit_per_s"),
        column_unit("throughput_gbit_per_s"),
    );
    // `--streams N`: each repetition's slowest and fastest stream (received), meaned over
    // the repetitions, in the Throughput column's unit; a point of several streams stored
    // before they were kept says so.
    let spread = |rs: &[&ResultRecord]| -> Option<(f64, f64)> {
        let s: Vec<(f64, f64, usize)> = rs
            .iter()
            .filter_map(|r| model::stream_spread(&r.metrics, None))
            .collect();
        let lo = mean(&s.iter().map(|x| x.0).collect::<Vec<_>>())?;
        let hi = mean(&s.iter().map(|x| x.1).collect::<Vec<_>>())?;
        Some((lo, hi))
    };
    let several = |rs: &[&ResultRecord]| {
        rs.iter().any(|r| {
            r.setting("streams")
                .and_then(serde_json::Value::as_u64)
                .is_some_and(|n| n > 1)
        })
    };
    let streams_shown = tests
        .iter()
        .any(|(_, rs)| spread(rs).is_some() || several(rs));
    let mut unstored = false;
    let rows = tests
        .iter()
        .map(|(k, rs)| {
            let target = avg(rs, "target_gbit_per_s", &[])
                .map_or("-".into(), |v| crate::fmt::bit_rate_in(v, target_unit));
            [k.clone()]
                .into_iter()
                .chain(paced.then_some(target))
                .chain([avg(rs, "throughput_gbit_per_s", &[])
                    .map_or("-".into(), |v| crate::fmt::bit_rate_in(v, tput_unit))])
                .chain(streams_shown.then(|| match spread(rs) {
                    Some((lo, hi)) => format!(
                        "{} – {}",
                        crate::fmt::bit_rate_in(lo, tput_unit),
                        crate::fmt::bit_rate_in(hi, tput_unit)
                    ),
                    None if several(rs) => {
                        unstored = true;
                        "not stored".into()
                    }
                    None => "-".into(),
                }))
                .chain([
                    f(avg(rs, "sender_cpu_pct", &[]), 1),
                    f(avg(rs, "receiver_cpu_pct", &[]), 1),
                    f(per_gbit(rs, "sender"), 2),
                    f(per_gbit(rs, "receiver"), 2),
                    avg(rs, "packets_per_s", &[]).map_or("-".into(), num),
                    f(avg(rs, "loss_pct", &[]), 3),
                    // In us, as the RTT beside it, to 3 significant digits: a loopback's
                    // 71.6 ns read "0.0000716" ms; now 0.0716 us, and 42 us reads 42.0.
                    avg(rs, "jitter_ms", &[]).map_or("-".into(), |ms| num(ms * 1e3)),
                    f(avg(rs, "retransmits", &[]), 0),
                    f(avg(rs, "rtt_mean_ns", &[]).map(|ns| ns / 1e3), 1),
                ])
                .collect()
        })
        .collect();
    let mut notes = Vec::new();
    if streams_shown {
        notes.push("Streams: each repetition's slowest and fastest stream as the receiver counted them over its span (iperf3's lines above its [SUM]), meaned over the repetitions; '-': one stream.".to_string());
    }
    if unstored {
        notes.push("not stored: a test of several streams stored by a rackbench before each stream's rate was kept; its total stands.".to_string());
    }
    Some(View {
        title: format!("{who}network throughput and CPU cost"),
        figures: vec![(title, fig)],
        tables: vec![Table {
            caption: "Throughput (received) with the CPU it cost at each end, per sweep point (mean over its repetitions); with --rate, the rate asked of all streams beside it (iperf3 -b); TCP retransmits and RTT as the sender's kernel counted them (TCP_INFO, iperf3's Retr and RTT). Sender and Receiver CPU % are each end's worker threads (getrusage, as iperf3 counts its own), each per Gbit/s of its own end (a UDP sender's per what it sent, lost datagrams included, so it differs from CPU % over the Throughput column where datagrams were lost); the efficiency table's %CPU used is the receiving host's, as %CPU used is counted for every workload: every CPU's busy % where that host ran no sender and shares its kernel with none that did (the iperf3 study's whole host, its kernel's network work and anything else on it included), else the receiver's whole process from the telemetry, which can read above the Receiver column (the process's other threads) or a little below it (the telemetry's sampled window against the workers' own timing)".into(),
            head: ["Test and parameters"]
                .into_iter()
                .chain(paced.then_some("Target rate"))
                .chain(["Throughput"])
            .chain(streams_shown.then_some("Streams, slowest – fastest (received)"))
            .chain([
                "Sender CPU %",
                "Receiver CPU %",
                "Sender %CPU per Gbit/s sent",
                "Receiver %CPU per Gbit/s received",
                "Packets/s",
                "Loss %",
                "Jitter us",
                "TCP retransmits",
                "TCP mean RTT us",
            ])
            .map(str::to_string)
            .collect(),
            rows,
        }],
        notes,
    })
}

// ---------------------------------------------------------------- connect time

/// httperf's "Connection time [ms]: min avg max median stddev" of every sweep point whose
/// tests opened connections during the test (`--requests-per-connection N`, or a server
/// closing kept-alive ones): its repetitions' connect times merged exactly, with their
/// count. None when no point timed a connect (kept alive: each result says why, among
/// its missing figures).
fn connect_time(run: &RunRecord, wl: &str, who: &str) -> Option<View> {
    // Capacity tests' steps are in their own views, connects or not.
    let points = sweep_points(
        run,
        wl,
        |t| !derive::CAPACITY_TESTS.contains(&t),
        false,
        &[],
    );
    let mut untimed = 0;
    let mut rows = Vec::new();
    for (label, rs) in &points {
        let mut merged: Option<hdrhistogram::Histogram<u64>> = None;
        for h in rs
            .iter()
            .flat_map(|r| &r.histograms)
            .filter(|h| !h.is_request_latency())
            .filter_map(|h| h.histogram().ok())
        {
            match merged.as_mut() {
                None => merged = Some(h),
                Some(m) => {
                    let _ = m.add(&h);
                }
            }
        }
        let Some(h) = merged.filter(|h| !h.is_empty()) else {
            untimed += 1;
            continue;
        };
        let ns = crate::fmt::latency_ns;
        rows.push(vec![
            label.clone(),
            h.len().to_string(),
            ns(h.min() as f64),
            ns(h.mean()),
            ns(h.value_at_quantile(0.5) as f64),
            ns(h.value_at_quantile(0.99) as f64),
            ns(h.max() as f64),
            ns(h.stdev()),
        ]);
    }
    if rows.is_empty() {
        return None;
    }
    let notes = if untimed > 0 {
        vec![format!(
            "{untimed} other point(s) opened no connection during the test (kept alive): \
             their connect time is not measured."
        )]
    } else {
        vec![]
    };
    Some(View {
        title: format!("{who}{wl} connect time"),
        figures: vec![],
        tables: vec![Table {
            caption: "Connect time per connection opened during the test, from the connect call to the connection established (httperf's connection time), its repetitions merged exactly".into(),
            head: [
                "Test and parameters",
                "Connects (all repetitions)",
                "Min",
                "Mean",
                "Median",
                "p99",
                "Max",
                "Stddev",
            ]
            .map(str::to_string)
            .to_vec(),
            rows,
        }],
        notes,
    })
}

// ---------------------------------------------------------------- capacity

/// The name of a capacity test's view (`capacity ramp`), in its title and in the
/// generic tables that point to it for what they cannot show.
pub fn capacity_view(phase: &str) -> &'static str {
    match phase {
        "ramp" => "capacity ramp",
        "search" => "latency-objective search",
        _ => "load levels",
    }
}

/// What the generic tables show in place of a capacity test's latency or efficiency:
/// those figures exist per step only ([`derive::capacity_phase`]).
pub fn per_step(wl: &str, phase: &str) -> String {
    format!("n/a: per step, see the {wl} {} view", capacity_view(phase))
}

/// Why a step's latency at the objective can differ from its p99 column: said when some
/// of `phase`'s requests were never sent (two p99 figures stood side by side unexplained,
/// acceptance pass E, 6).
fn unsent_note(r: &ResultRecord, phase: &str) -> Option<String> {
    let unsent: f64 = r
        .metrics
        .iter()
        .filter(|m| m.name == "unsent_requests")
        .filter(|m| m.labels.get("phase").map(String::as_str) == Some(phase))
        .map(|m| m.value)
        .sum();
    (unsent > 0.0).then(|| {
        format!(
            "The latency at the objective is of every request that fell due: the {} never \
             sent (the generator behind when a step ended) count at the least they would \
             have waited; the latency percentiles beside it are of the requests sent.",
            crate::fmt::count(unsent)
        )
    })
}

/// The label `what` that a capacity step's metrics carry (a ramp step's `verdict`, a
/// search probe's `meets`), `-` where none does.
fn step_label(r: &ResultRecord, phase: &str, step: &str, what: &str) -> String {
    r.metrics
        .iter()
        .find(|x| {
            x.name == "demanded_rate_per_s"
                && x.labels.get("phase").map(String::as_str) == Some(phase)
                && x.labels.get("step").map(String::as_str) == Some(step)
        })
        .and_then(|x| x.labels.get(what).cloned())
        .unwrap_or_else(|| "-".into())
}

/// Per-step values of one phase: step index -> (metric name -> value).
fn steps(r: &ResultRecord, phase: &str, key: &str) -> BTreeMap<String, BTreeMap<String, f64>> {
    let mut out: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
    for m in &r.metrics {
        if m.labels.get("phase").map(String::as_str) != Some(phase) || !m.value.is_finite() {
            continue;
        }
        if let Some(s) = m.labels.get(key) {
            let step = out.entry(s.clone()).or_default();
            // The watched server processes' CPU at the step, summed ([`SERVER_CPU`]): the
            // host's busy % holds the load generator's too (an open loop spins a core).
            if m.name == "process_cpu_pct"
                && m.labels
                    .get("role")
                    .is_some_and(|role| !model::is_rackbench_process(role))
            {
                *step.entry(SERVER_CPU.into()).or_insert(0.0) += m.value;
            }
            step.entry(m.name.clone()).or_insert(m.value);
        }
    }
    out
}

/// A step's watched server processes' CPU, in percent of one CPU (see [`steps`]).
const SERVER_CPU: &str = "server_cpu_pct";

/// A steps table's latency heading: of one transaction type where the steps time that
/// one alone, named as TPC-C names it (oltp's steps time `new_order`: `New-Order p99 ms`;
/// it read `p99 ms`, as if of every transaction), else plain.
fn step_latency_head(r: &ResultRecord, phase: &str, pct: &str) -> String {
    let name = format!("latency_{pct}_ns");
    let txns: Vec<Option<&String>> = r
        .metrics
        .iter()
        .filter(|m| m.name == name && m.labels.get("phase").map(String::as_str) == Some(phase))
        .map(|m| m.labels.get("txn"))
        .collect();
    // Named only where every step times that one (a step with no New-Order reply is
    // stored unlabelled, of every transaction).
    let txn = txns
        .first()
        .copied()
        .flatten()
        .filter(|t| txns.iter().all(|x| *x == Some(*t)));
    match txn {
        Some(t) => {
            let words: Vec<String> = t
                .split('_')
                .map(|w| {
                    let mut c = w.chars();
                    c.next()
                        .map(|f| f.to_uppercase().chain(c).collect())
                        .unwrap_or_default()
                })
                .collect();
            format!("{} {pct} ms", words.join("-"))
        }
        None => format!("{pct} ms"),
    }
}

/// Said under a steps table with the server's CPU beside the host's.
const STEP_CPU_MEANING: &str = "Host CPU busy % is the mean over all the host's CPUs, the load generator's work among it where it ran there (an open loop spins a core); Server %CPU is the watched server processes' CPU summed, in percent of one CPU (above 100 when they use several).";

/// Said under a steps chart that draws the server's CPU beside the host's.
const STEP_CPU_CHART_MEANING: &str = "The CPU chart draws both in the host's terms: the server processes' line is Server %CPU over the host's CPUs, so the gap between the two lines is the CPU that was not the server's (the load generator's, where it ran there, and anything else).";

/// The note on a steps table's two CPU columns, where the server's was measured, and on
/// the chart that draws them (`drawn`).
fn step_cpu_note(st: &[(String, BTreeMap<String, f64>)], drawn: bool) -> Option<String> {
    st.iter().any(|(_, m)| m.contains_key(SERVER_CPU)).then(|| {
        if drawn {
            format!("{STEP_CPU_MEANING} {STEP_CPU_CHART_MEANING}")
        } else {
            STEP_CPU_MEANING.to_string()
        }
    })
}

/// Each step's watched server processes' CPU in percent of all the host's `cpus` (the
/// unit of its busy %), where both are known: a step without it is None.
fn server_share(m: &BTreeMap<String, f64>, cpus: Option<f64>) -> Option<f64> {
    Some(m.get(SERVER_CPU)? / cpus?)
}

/// Where a load level goes among its test's levels, in the order the test ran them: 100%
/// first, down to active idle, last (`label` is a `level` label, `90%` or `active_idle`).
/// The levels view and compare's curve rows both sort by it.
pub(crate) fn level_rank(label: &str) -> f64 {
    -label.trim_end_matches('%').parse::<f64>().unwrap_or(-1.0)
}

fn ordered(s: BTreeMap<String, BTreeMap<String, f64>>) -> Vec<(String, BTreeMap<String, f64>)> {
    let mut v: Vec<_> = s.into_iter().collect();
    v.sort_by_key(|(k, _)| k.parse::<u64>().unwrap_or(u64::MAX));
    v
}

fn ms(ns: f64) -> f64 {
    ns / 1e6
}

/// The unit a capacity result counts its rate in (`req/s`, `ops/s`, `txn/s`).
fn rate_unit(r: &ResultRecord) -> String {
    r.metrics
        .iter()
        .find(|m| m.name == "reply_rate_per_s" || m.name == "demanded_rate_per_s")
        .map_or("req/s".to_string(), |m| m.unit.clone())
}

/// A ramp or search step's reply rate as its verdict was judged: over the seconds its
/// requests fell due in, when they all went out on time (`served_rate_per_s`); a step
/// stored before that was kept gives its reply rate to its last reply.
fn served_rate(m: &BTreeMap<String, f64>) -> Option<f64> {
    served_rate_of(|n| m.get(n).copied())
}

/// [`served_rate`] of a step whose metrics `get` reads by name (compare's too).
pub(crate) fn served_rate_of(get: impl Fn(&str) -> Option<f64>) -> Option<f64> {
    get("served_rate_per_s").or_else(|| get("reply_rate_per_s"))
}

/// What a ramp step's, a search probe's or a load level's Late % is, said under its table.
/// `cell` marked ⚠ where the level's host CPU was counted below its own processes'
/// ([`model::capacity_keys::TICKS_MISSED`]) and the figure follows it (`follows`: busy,
/// and power modelled from it), or other programs ran while its own rested
/// ([`model::capacity_keys::OTHERS_AT_REST`]: its busy and power are theirs too).
fn step_mark(cell: String, m: &BTreeMap<String, f64>, follows: bool) -> String {
    use model::capacity_keys::{OTHERS_AT_REST, TICKS_MISSED};
    if (follows && m.contains_key(TICKS_MISSED)) || m.contains_key(OTHERS_AT_REST) {
        format!("{cell} ⚠")
    } else {
        cell
    }
}

fn late_note(step: &str) -> String {
    format!(
        "Late %: the {step}'s requests sent more than 1 ms after their scheduled time or \
         never sent, of those that fell due (a {step} stored before it was kept has none); a \
         {step} far behind its schedule measured the load the generator could offer, not the \
         demanded rate."
    )
}

/// What a ramp step's Verdict is, said under its table.
const VERDICT_NOTE: &str = "Verdict: sustained (replies kept up with the demand, at the \
    ramp's fraction of it or more, errors within their limit), saturated (they did not: the \
    capacity is below that rate) or failed (the step could not run to its end).";

/// What the steps' reply rates are over, said under their table.
const SERVED_NOTE: &str = "Reply: replies per second over the seconds the step's requests \
    fell due in when every one went out on time (the replies that trail its end are its \
    latency, not a queue), else over the step to its last reply; the rate each verdict \
    was judged on.";

fn ramp(r: &ResultRecord, wl: &str, who: &str, cpus: Option<f64>) -> Option<View> {
    let u = rate_unit(r);
    let st = ordered(steps(r, "ramp", "step"));
    let pts: Vec<(f64, f64)> = st
        .iter()
        .filter_map(|(_, m)| Some((*m.get("demanded_rate_per_s")?, served_rate(m)?)))
        .collect();
    if pts.is_empty() {
        return None;
    }
    let sat = metric(r, "saturation_rate_per_s", &[]);
    let ymax = pts.iter().map(|p| p.1.max(p.0)).fold(0.0, f64::max);
    let xmax = pts.iter().map(|p| p.0).fold(0.0, f64::max);
    let mut series = vec![
        LineSeries {
            name: "reply rate".into(),
            points: pts.clone(),
            color: 0,
            dash: 0,
        },
        LineSeries {
            name: "reply = demanded".into(),
            points: vec![(0.0, 0.0), (xmax, xmax)],
            color: 8,
            dash: 2,
        },
    ];
    if let Some(s) = sat {
        series.push(LineSeries {
            name: format!("saturation at {}/s", si(s)),
            points: vec![(s, 0.0), (s, ymax)],
            color: 3,
            dash: 1,
        });
    }
    let t1 = format!("{who}{wl} ramp: reply rate vs demanded rate");
    let mut figures = vec![(
        t1.clone(),
        svg::line_chart(
            &t1,
            &format!("demanded rate ({u})"),
            &format!("reply rate ({u})"),
            Scale::Linear,
            Scale::Linear,
            &series,
        ),
    )];
    let lat: Vec<(f64, f64)> = st
        .iter()
        .filter_map(|(_, m)| {
            Some((
                *m.get("demanded_rate_per_s")?,
                ms(*m.get("latency_p99_ns")?),
            ))
        })
        .collect();
    if !lat.is_empty() {
        let mut series = vec![LineSeries {
            name: "p99".into(),
            points: lat.clone(),
            color: 0,
            dash: 0,
        }];
        let p50: Vec<(f64, f64)> = st
            .iter()
            .filter_map(|(_, m)| {
                Some((
                    *m.get("demanded_rate_per_s")?,
                    ms(*m.get("latency_p50_ns")?),
                ))
            })
            .collect();
        if !p50.is_empty() {
            series.push(LineSeries {
                name: "p50".into(),
                points: p50,
                color: 2,
                dash: 1,
            });
        }
        let lmax = lat.iter().map(|p| p.1).fold(0.0, f64::max);
        if let Some(s) = sat {
            series.push(LineSeries {
                name: "saturation".into(),
                points: vec![(s, 0.0), (s, lmax)],
                color: 3,
                dash: 1,
            });
        }
        let t2 = format!("{who}{wl} ramp: latency vs demanded rate");
        figures.push((
            t2.clone(),
            svg::line_chart(
                &t2,
                &format!("demanded rate ({u})"),
                "latency (ms)",
                Scale::Linear,
                Scale::Linear,
                &series,
            ),
        ));
    }
    // What the host's CPUs did at each step (telemetry of that step alone).
    let busy: Vec<(f64, f64)> = st
        .iter()
        .filter_map(|(_, m)| Some((*m.get("demanded_rate_per_s")?, *m.get("cpu_busy_pct")?)))
        .collect();
    // The server processes' part of it, where they were watched.
    let server: Vec<(f64, f64)> = st
        .iter()
        .filter_map(|(_, m)| Some((*m.get("demanded_rate_per_s")?, server_share(m, cpus)?)))
        .collect();
    let server_drawn = !busy.is_empty() && !server.is_empty();
    if !busy.is_empty() {
        let t3 = format!("{who}{wl} ramp: CPU busy vs demanded rate");
        let mut series = vec![LineSeries {
            name: "host busy".into(),
            points: busy,
            color: 1,
            dash: 0,
        }];
        if server_drawn {
            series.push(LineSeries {
                name: "server processes".into(),
                points: server,
                color: 2,
                dash: 1,
            });
        }
        figures.push((
            t3.clone(),
            svg::line_chart(
                &t3,
                &format!("demanded rate ({u})"),
                "CPU busy (% of the host)",
                Scale::Linear,
                Scale::Linear,
                &series,
            ),
        ));
    }
    // A key-value ramp's GET hit ratio per step, where its steps looked keys up: a step
    // whose GETs missed measured the cheap path.
    let hits = st.iter().any(|(_, m)| m.contains_key("hit_ratio_pct"));
    // Power per step where a step has it; else no column of dashes, and why below.
    let powered = st.iter().any(|(_, m)| m.contains_key("power_w"));
    let rows = st
        .iter()
        .map(|(i, m)| {
            let mut row = vec![
                i.clone(),
                m.get("demanded_rate_per_s")
                    .map_or("-".into(), |v| crate::fmt::whole_or_num(*v)),
                served_rate(m).map_or("-".into(), num),
                m.get("latency_p50_ns")
                    .map_or("-".into(), |v| fixed(ms(*v), 3)),
                m.get("latency_p99_ns")
                    .map_or("-".into(), |v| fixed(ms(*v), 3)),
                m.get("errors_pct").map_or("-".into(), |v| fixed(*v, 2)),
                m.get("late_pct").map_or("-".into(), |v| fixed(*v, 1)),
            ];
            if hits {
                row.push(m.get("hit_ratio_pct").map_or("-".into(), |v| fixed(*v, 1)));
            }
            row.extend([
                m.get("cpu_busy_pct").map_or("-".into(), |v| fixed(*v, 1)),
                m.get(SERVER_CPU).map_or("-".into(), |v| fixed(*v, 1)),
            ]);
            if powered {
                row.push(
                    m.get("power_w")
                        .map_or("-".into(), |v| crate::fmt::watts(*v)),
                );
            }
            row.push(step_label(r, "ramp", i, "verdict"));
            row
        })
        .collect();
    // A ramp stopped before its top did not show that none of its rates saturates: it
    // says where it stopped (acceptance pass G, 13).
    let stopped = match r.status {
        Status::Ok | Status::Failed => None,
        Status::Interrupted => Some("was interrupted"),
        Status::Running => Some("stopped (its run never finished)"),
    };
    let mut notes = vec![match (sat, stopped, st.last()) {
        (Some(s), _, _) => {
            // Its capacity beside it: the headline is the highest reply rate of any step,
            // which may be a saturated step's, far behind its schedule (acceptance M, 3:
            // "ramp 146,614 ops/s" at a step 100% late, its capacity 140,000 printed
            // nowhere).
            let capacity = metric(r, "last_sustained_rate_per_s", &[]).map_or(String::new(), |c| {
                format!(
                    " The last step it sustained demanded {} {u}: its capacity, which \
                         load levels take as 100%.",
                    num(c)
                )
            });
            let peak = metric(r, "max_reply_rate_per_s", &[])
                .filter(|_| r.headline == "max_reply_rate_per_s")
                .map_or(String::new(), |p| {
                    format!(
                        " Its headline, {} {u}, is the highest rate of replies that were not \
                         errors of any step, those past saturation included.",
                        num(p)
                    )
                });
            format!(
                "Saturation at a demanded rate of {} {u}.{capacity}{peak}",
                num(s)
            )
        }
        (None, Some(how), Some((step, m))) => format!(
            "The ramp {how} at step {step}{}: no saturation up to there.",
            m.get("demanded_rate_per_s")
                .map_or(String::new(), |d| format!(" ({} {u} demanded)", num(*d)))
        ),
        _ => "No saturation point within the ramp.".into(),
    }];
    notes.extend(
        r.missing
            .iter()
            .filter(|m| m.name == "saturation_rate_per_s")
            .map(|m| m.reason.clone()),
    );
    notes.extend(step_cpu_note(&st, server_drawn));
    notes.push(SERVED_NOTE.into());
    notes.push(format!("{} {VERDICT_NOTE}", late_note("step")));
    if !powered {
        notes.push(format!(
            "No power per step: {}.",
            r.telemetry_summary
                .iter()
                .find_map(|t| t.power_missing.clone())
                .unwrap_or_else(|| "none was measured".into())
        ));
    }
    Some(View {
        title: format!("{who}{wl} {}", capacity_view("ramp")),
        figures,
        tables: vec![Table {
            caption: "Ramp steps".into(),
            head: [
                "Step",
                format!("Demanded {u}").as_str(),
                format!("Reply {u}").as_str(),
                step_latency_head(r, "ramp", "p50").as_str(),
                step_latency_head(r, "ramp", "p99").as_str(),
                "Errors %",
                "Late %",
            ]
            .into_iter()
            .map(String::from)
            .chain(hits.then(|| "GET hits %".to_string()))
            .chain(["Host CPU busy %", "Server %CPU"].map(String::from))
            .chain(powered.then(|| "Power W".to_string()))
            .chain(["Verdict".to_string()])
            .collect(),
            rows,
        }],
        notes,
    })
}

fn search(r: &ResultRecord, wl: &str, who: &str) -> Option<View> {
    let u = rate_unit(r);
    let st = ordered(steps(r, "search", "step"));
    let probes: Vec<(f64, f64)> = st
        .iter()
        .filter_map(|(_, m)| {
            Some((
                *m.get("demanded_rate_per_s")?,
                ms(*m.get("latency_at_objective_ns")?),
            ))
        })
        .collect();
    if st.is_empty() {
        return None;
    }
    let bound = metric(r, "objective_bound_ns", &[]).map(ms);
    let pct = metric(r, "objective_percentile", &[]);
    let answer = metric(r, "max_rate_meeting_slo_per_s", &[]);
    // Every probe met the objective: the answer is where the search stopped looking,
    // not where the server stops meeting it.
    let bound_why = r.headline_lower_bound();
    let at_least = if bound_why.is_some() { "at least " } else { "" };
    // The objective as the search wrote it (`p99.99<=1.5ms`); from its numbers for a
    // result stored without it. The percentile whole: `si` took p99.99 to "p100".
    let written = r
        .metrics
        .iter()
        .find(|m| m.name == "latency_at_objective_ns")
        .and_then(|m| m.labels.get("slo").cloned());
    let obj = match (written, pct, bound) {
        (Some(slo), _, _) => slo,
        // A bound of seconds in seconds: "p99 < 2k ms" read as a typo.
        (None, Some(p), Some(b)) if b >= 1000.0 => format!("p{p} < {} s", si(b / 1000.0)),
        (None, Some(p), Some(b)) => format!("p{p} < {} ms", si(b)),
        _ => "the objective".into(),
    };
    let mut sorted = probes.clone();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let xmax = sorted.iter().map(|p| p.0).fold(0.0, f64::max);
    let ymax = sorted
        .iter()
        .map(|p| p.1)
        .fold(bound.unwrap_or(0.0), f64::max);
    let mut series = vec![LineSeries {
        name: format!("latency at {obj}"),
        points: sorted,
        color: 0,
        dash: 0,
    }];
    if let Some(b) = bound {
        series.push(LineSeries {
            name: if b >= 1000.0 {
                format!("bound {} s", si(b / 1000.0))
            } else {
                format!("bound {} ms", si(b))
            },
            points: vec![(0.0, b), (xmax, b)],
            color: 3,
            dash: 1,
        });
    }
    if let Some(a) = answer {
        series.push(LineSeries {
            name: format!("answer {at_least}{}/s", si(a)),
            points: vec![(a, 0.0), (a, ymax)],
            color: 2,
            dash: 2,
        });
    }
    let mut figures = Vec::new();
    if !probes.is_empty() {
        let t = format!("{who}{wl} search: latency at the objective per probed rate");
        figures.push((
            t.clone(),
            svg::line_chart(
                &t,
                &format!("demanded rate ({u})"),
                "latency (ms)",
                Scale::Linear,
                Scale::Linear,
                &series,
            ),
        ));
    }
    let rows = st
        .iter()
        .map(|(i, m)| {
            let meets = step_label(r, "search", i, "meets");
            vec![
                i.clone(),
                m.get("demanded_rate_per_s")
                    .map_or("-".into(), |v| crate::fmt::whole_or_num(*v)),
                served_rate(m).map_or("-".into(), num),
                m.get("late_pct").map_or("-".into(), |v| fixed(*v, 1)),
                m.get("latency_at_objective_ns")
                    .map_or("-".into(), |v| fixed(ms(*v), 3)),
                meets,
            ]
        })
        .collect();
    let mut notes = vec![match answer {
        Some(a) => match &bound_why {
            Some(why) => format!(
                "Highest rate meeting {obj}: at least {} {u}, a lower bound ({why}).",
                num(a)
            ),
            None => format!("Highest rate meeting {obj}: {} {u}.", num(a)),
        },
        None => format!("No probed rate met {obj}."),
    }];
    notes.extend(
        r.missing
            .iter()
            .filter(|m| m.name == "max_rate_meeting_slo_per_s")
            .map(|m| m.reason.clone()),
    );
    notes.extend(unsent_note(r, "search"));
    notes.push(late_note("probe"));
    notes.push(SERVED_NOTE.into());
    Some(View {
        title: format!("{who}{wl} {}", capacity_view("search")),
        figures,
        tables: vec![Table {
            caption: format!("Probes in measurement order (objective {obj})"),
            head: [
                "Probe",
                format!("Demanded {u}").as_str(),
                format!("Reply {u}").as_str(),
                "Late %",
                "Latency at objective ms",
                "Meets",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            rows,
        }],
        notes,
    })
}

/// The note under a levels table where a level's per-W figure is not its Reply ÷ Power:
/// per W counts the replies that were not errors (SPECpower's completed operations),
/// Reply every reply. The share is read off the table's own figures, so it is what a
/// reader dividing them finds; levels without the three figures are not said.
fn levels_errors_note(st: &[(String, BTreeMap<String, f64>)], unit: &str) -> Option<String> {
    let erring: Vec<String> = st
        .iter()
        .filter_map(|(level, m)| {
            let (reply, power, per_w) = (
                m.get("reply_rate_per_s")?,
                m.get("power_w")?,
                m.get("reply_rate_per_w")?,
            );
            if *reply <= 0.0 || *power <= 0.0 {
                return None;
            }
            let failed = 100.0 * (1.0 - per_w * power / reply);
            (failed >= 0.005).then(|| format!("{level}: {failed:.2}% of replies were errors"))
        })
        .collect();
    (!erring.is_empty()).then(|| {
        format!(
            "{unit} per W counts the replies that were not errors, Reply {unit} every reply, so \
             Reply ÷ Power reads above per W by the share that failed ({}).",
            erring.join("; ")
        )
    })
}

fn levels(r: &ResultRecord, wl: &str, who: &str, cpus: Option<f64>) -> Option<View> {
    let u = rate_unit(r);
    let st: Vec<(String, BTreeMap<String, f64>)> = steps(r, "levels", "level")
        .into_iter()
        .filter(|(_, m)| m.contains_key("target_rate_per_s"))
        .collect();
    if st.is_empty() {
        return None;
    }
    // 100% first, down to active idle.
    let mut st = st;
    st.sort_by(|a, b| level_rank(&a.0).total_cmp(&level_rank(&b.0)));
    let cats: Vec<String> = st.iter().map(|s| s.0.clone()).collect();
    let get = |n: &str| -> Vec<Option<f64>> { st.iter().map(|(_, m)| m.get(n).copied()).collect() };
    let bars = |name: &str, v: Vec<Option<f64>>| BarSeries {
        name: name.into(),
        warn: vec![false; v.len()],
        values: v,
    };
    let t1 = format!("{who}{wl} load levels: target and reply rate");
    let mut figures = vec![(
        t1.clone(),
        svg::bar_chart(
            &t1,
            &u,
            &cats,
            &[
                bars("target", get("target_rate_per_s")),
                bars("reply", get("reply_rate_per_s")),
            ],
        ),
    )];
    let power = get("power_w");
    let perw = get("reply_rate_per_w");
    // A chart of the model's watts says so in its title, which its SVG file carries
    // alone (acceptance pass E, 7: it read as measured).
    let modelled = if r.flags.iter().any(|f| f.code == "power_modelled") {
        " (MODELLED)"
    } else {
        ""
    };
    if power.iter().any(Option::is_some) {
        let t = format!("{who}{wl} load levels: power (W){modelled}");
        figures.push((
            t.clone(),
            svg::bar_chart(&t, "W", &cats, &[bars("power", power.clone())]),
        ));
    }
    let busy = get("cpu_busy_pct");
    // The server processes' part of it, where they were watched.
    let server: Vec<Option<f64>> = st.iter().map(|(_, m)| server_share(m, cpus)).collect();
    let server_drawn = busy.iter().any(Option::is_some) && server.iter().any(Option::is_some);
    if busy.iter().any(Option::is_some) {
        let t = format!("{who}{wl} load levels: CPU busy (% of the host)");
        let mut series = vec![bars("host busy", busy)];
        if server_drawn {
            series.push(bars("server processes", server));
        }
        figures.push((t.clone(), svg::bar_chart(&t, "%", &cats, &series)));
    }
    if perw.iter().any(Option::is_some) {
        let t = format!("{who}{wl} load levels: {u} per W{modelled}");
        figures.push((
            t.clone(),
            svg::bar_chart(
                &t,
                &format!("{u} per W"),
                &cats,
                &[bars("perf/W", perw.clone())],
            ),
        ));
    }
    // The objective the levels were judged against (the search's, or --slo), if any.
    let objective = r
        .metrics
        .iter()
        .find(|m| {
            m.name == "meets_objective"
                && m.labels.get("phase").map(String::as_str) == Some("levels")
        })
        .and_then(|m| m.labels.get("slo").cloned());
    let rows = st
        .iter()
        .map(|(l, m)| {
            let mut row = vec![
                l.clone(),
                m.get("target_rate_per_s")
                    .map_or("-".into(), |v| crate::fmt::whole_or_num(*v)),
                m.get("reply_rate_per_s").map_or("-".into(), |v| num(*v)),
                m.get("latency_p99_ns")
                    .map_or("-".into(), |v| fixed(ms(*v), 3)),
                // As the ramp's: a level its generator could not keep is not of its load
                // (behind_schedule named 25.7% late at 100% with no column to show it).
                m.get("late_pct").map_or("-".into(), |v| fixed(*v, 1)),
                // Counted below the level's own processes (step_cpu_ticks_missed): marked,
                // with the power and perf/W that follow it where they are modelled.
                m.get("cpu_busy_pct")
                    .map_or("-".into(), |v| step_mark(fixed(*v, 1), m, true)),
                m.get(SERVER_CPU).map_or("-".into(), |v| fixed(*v, 1)),
                m.get("power_w").map_or("absent".into(), |v| {
                    step_mark(crate::fmt::watts(*v), m, !modelled.is_empty())
                }),
                m.get("reply_rate_per_w")
                    .map_or("-".into(), |v| step_mark(num(*v), m, !modelled.is_empty())),
            ];
            if objective.is_some() {
                // The percentile judged, of every request due (unsent ones at the top),
                // as the search's probes give it; `p99 ms` beside is of those recorded.
                row.push(
                    m.get("latency_at_objective_ns")
                        .map_or("-".into(), |v| fixed(ms(*v), 3)),
                );
                row.push(match m.get("meets_objective") {
                    Some(v) if *v > 0.5 => "yes".into(),
                    Some(_) => "NO".into(),
                    None => "-".into(),
                });
            }
            row
        })
        .collect();
    let mut notes = Vec::new();
    notes.extend(
        r.flags
            .iter()
            .filter(|f| {
                matches!(
                    f.code.as_str(),
                    "level_misses_objective" | "step_cpu_ticks_missed" | "step_other_load"
                )
            })
            .map(|f| match f.code.as_str() {
                "level_misses_objective" => f.message.clone(),
                _ => format!("⚠ {}", f.message),
            }),
    );
    if let Some(v) = metric(r, "overall_reply_rate_per_w", &[]) {
        notes.push(format!("Overall: {} {u} per W{modelled}.", num(v)));
    }
    notes.extend(step_cpu_note(&st, server_drawn));
    notes.extend(levels_errors_note(&st, &u));
    notes.push(late_note("level"));
    if objective.is_some() {
        notes.extend(unsent_note(r, "levels"));
    }
    notes.extend(
        r.flags
            .iter()
            .filter(|f| f.code == "power_modelled")
            .map(|f| format!("MODELLED: {}", f.message)),
    );
    notes.extend(
        r.missing
            .iter()
            .filter(|m| m.name == "overall_reply_rate_per_w")
            .map(|m| m.reason.clone()),
    );
    Some(View {
        title: format!("{who}{wl} {}", capacity_view("levels")),
        figures,
        tables: vec![Table {
            caption: "Load levels".into(),
            head: [
                "Level",
                format!("Target {u}").as_str(),
                format!("Reply {u}").as_str(),
                step_latency_head(r, "levels", "p99").as_str(),
                "Late %",
                "Host CPU busy %",
                "Server %CPU",
                "Power W",
                format!("{u} per W").as_str(),
            ]
            .iter()
            .map(|s| s.to_string())
            .chain(
                objective
                    .iter()
                    .flat_map(|o| ["Latency at objective ms".to_string(), format!("Meets {o}")]),
            )
            .collect(),
            rows,
        }],
        notes,
    })
}

// ---------------------------------------------------------------- rendering

/// The views as HTML (figures, tables, notes), every string escaped.
pub fn views_html(runs: &[RunRecord], wl: &str) -> String {
    settings_view(runs, wl)
        .into_iter()
        .chain(views(runs, wl))
        .map(|v| view_html(&v))
        .collect()
}

/// One view as HTML, every string escaped.
pub fn view_html(v: &View) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        r#"<h3 class="view">{}</h3><div class="grid">"#,
        esc(&v.title)
    );
    for (t, s) in &v.figures {
        let _ = write!(h, "<figure>{s}<figcaption>{}</figcaption></figure>", esc(t));
    }
    h.push_str("</div>");
    for t in &v.tables {
        let _ = write!(h, "<table><caption>{}</caption><tr>", esc(&t.caption));
        for c in &t.head {
            let _ = write!(h, "<th>{}</th>", esc(c));
        }
        h.push_str("</tr>");
        for r in &t.rows {
            h.push_str("<tr>");
            for (i, c) in r.iter().enumerate() {
                let cls = if i == 0 { "" } else { r#" class="n""# };
                let _ = write!(h, "<td{cls}>{}</td>", esc(c));
            }
            h.push_str("</tr>");
        }
        h.push_str("</table>");
    }
    for n in &v.notes {
        let _ = write!(h, r#"<p class="muted">{}</p>"#, esc(n));
    }
    h
}

use crate::fmt::md as md_cell;

/// The views' tables (and notes) as Markdown.
pub fn views_markdown(runs: &[RunRecord], wl: &str) -> String {
    settings_view(runs, wl)
        .into_iter()
        .chain(views(runs, wl))
        .map(|v| view_markdown(&v))
        .collect()
}

/// One view's tables (and notes) as Markdown, every cell escaped.
pub fn view_markdown(v: &View) -> String {
    let mut m = String::new();
    let _ = write!(m, "\n### {}\n", md_cell(&v.title));
    for t in &v.tables {
        let _ = write!(m, "\n{}\n\n", md_cell(&t.caption));
        let _ = writeln!(
            m,
            "| {} |",
            t.head
                .iter()
                .map(|c| md_cell(c))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        let _ = writeln!(m, "|{}|", vec!["---"; t.head.len()].join("|"));
        for r in &t.rows {
            let _ = writeln!(
                m,
                "| {} |",
                r.iter().map(|c| md_cell(c)).collect::<Vec<_>>().join(" | ")
            );
        }
    }
    for n in &v.notes {
        let _ = write!(m, "\n{}\n", md_cell(n));
    }
    m
}

/// The telemetry beyond per-CPU % (MISSION 3: context switches, interrupts, each NIC's
/// bytes and packets, disk I/O): a view per run and host, a row per test (sweep point),
/// each figure the mean over its valid repetitions of the host's summary over the
/// measured time; then kv/http's latency jitter, a view per run ([`jitter_view`]). NICs and disks that moved nothing in any of
/// the run's tests are left out (a note says which). Capacity tests are left out too (the
/// caption says so): their summary is over every step of the curve together, a mean over
/// rates from idle to saturation that the rest of the report refuses (review H, 7); their
/// figures are per step, in their views. Empty when no result has telemetry.
/// What the per-host telemetry tables of run `i` are made of: its points other than
/// capacity tests', the capacity tests left out (named once each), and the hosts with a
/// telemetry summary in any result, in the order they first appear.
pub(crate) struct HostTelemetryParts<'a> {
    pub pts: Vec<Point<'a>>,
    pub capacity_tests: Vec<String>,
    pub hosts: Vec<&'a str>,
}

pub(crate) fn host_telemetry_parts(i: usize, run: &RunRecord) -> HostTelemetryParts<'_> {
    let (capacity, pts): (Vec<Point>, Vec<Point>) = derive::points(i, run)
        .into_iter()
        .partition(|p| p.capacity_phase().is_some());
    let mut capacity_tests: Vec<String> = Vec::new();
    for p in &capacity {
        if !capacity_tests.contains(&p.test) {
            capacity_tests.push(p.test.clone());
        }
    }
    let mut hosts: Vec<&str> = Vec::new();
    for r in &run.results {
        for t in &r.telemetry_summary {
            if !hosts.contains(&t.host.as_str()) {
                hosts.push(&t.host);
            }
        }
    }
    HostTelemetryParts {
        pts,
        capacity_tests,
        hosts,
    }
}

pub fn telemetry_views(runs: &[RunRecord]) -> Vec<View> {
    let labels = run_labels(runs);
    let mut out = Vec::new();
    for (i, (run, label)) in runs.iter().zip(&labels).enumerate() {
        let HostTelemetryParts {
            pts,
            capacity_tests: left_out,
            hosts,
        } = host_telemetry_parts(i, run);
        for host in hosts {
            // Named as the Hosts table names it (this machine by its hostname).
            let name = model::host_display_name(&run.hosts, host);
            // Per point: its valid repetitions' summaries of this host.
            // A point none of whose repetitions counts (a host lost, the server gone) keeps
            // what its hosts measured up to then (acceptance pass G, 8): shown, marked.
            let per: Vec<(&Point, Vec<&model::TelemetrySummary>)> = pts
                .iter()
                .map(|p| {
                    let reps = match p.valid() {
                        v if v.is_empty() => p.results.clone(),
                        v => v,
                    };
                    let sums = reps
                        .into_iter()
                        .flat_map(|r| r.telemetry_summary.iter().filter(|t| t.host == host))
                        .collect();
                    (p, sums)
                })
                .filter(|(_, s): &(_, Vec<_>)| !s.is_empty())
                .collect();
            let mean = |xs: Vec<f64>| crate::stats::mean(&xs);
            let mut nics: Vec<String> = Vec::new();
            let mut disks: Vec<String> = Vec::new();
            let mut idle: Vec<String> = Vec::new();
            for (_, sums) in &per {
                for t in sums {
                    for n in &t.nics {
                        let busy = n.rx_bytes_per_s + n.tx_bytes_per_s > 0.0;
                        if busy && !nics.contains(&n.name) {
                            nics.push(n.name.clone());
                        } else if !busy && !idle.contains(&n.name) {
                            idle.push(n.name.clone());
                        }
                    }
                    for d in &t.disks {
                        let busy = d.reads_per_s + d.writes_per_s > 0.0;
                        if busy && !disks.contains(&d.name) {
                            disks.push(d.name.clone());
                        } else if !busy && !idle.contains(&d.name) {
                            idle.push(d.name.clone());
                        }
                    }
                }
            }
            idle.retain(|n| !nics.contains(n) && !disks.contains(n));
            let mut head = vec![
                "Test".to_string(),
                "Context switches/s".into(),
                "Interrupts/s".into(),
            ];
            // Each NIC rate in its own unit ([`crate::fmt::bit_rate`]): one unit for a
            // column, chosen by its slowest rate, put a stream's 9.3 Gbit/s in kbit/s
            // (`9336601.819 / 9154.879`, another row's UDP ACKs under 1 Mbit/s), and an
            // idle management NIC
            // `0.000000403` Gbit/s in the loaded one's (acceptance P, 6).
            for n in &nics {
                head.push(format!("{n} rx / tx"));
                head.push(format!("{n} rx / tx packets/s"));
            }
            for d in &disks {
                head.push(format!("{d} read / write MB/s"));
                head.push(format!("{d} read / write IOPS"));
            }
            let pair = |a: Option<f64>, b: Option<f64>, f: &dyn Fn(f64) -> String| match (a, b) {
                (Some(a), Some(b)) => format!("{} / {}", f(a), f(b)),
                _ => "-".to_string(),
            };
            // Rates to fixed places, the two of a cell to the same places (`0.00 / 0.00410`
            // read as two precisions).
            let fixed_pair =
                |a: Option<f64>, b: Option<f64>, scale: f64, decimals: usize| match (a, b) {
                    (Some(a), Some(b)) => {
                        crate::fmt::fixed_alike(&[a * scale, b * scale], decimals).join(" / ")
                    }
                    _ => "-".to_string(),
                };
            let rows = per
                .iter()
                .map(|(p, sums)| {
                    let mut row = vec![
                        match not_counted(p) {
                            Some(why) => format!("{} ({why})", p.label()),
                            None => p.label(),
                        },
                        // Of the hosts that counted them; none: `-`, not 0.
                        mean(sums.iter().filter_map(|t| t.ctxt_per_s).collect())
                            .map_or("-".into(), num),
                        mean(sums.iter().filter_map(|t| t.intr_per_s).collect())
                            .map_or("-".into(), num),
                    ];
                    for n in &nics {
                        let of = |f: &dyn Fn(&model::NicRate) -> f64| {
                            mean(
                                sums.iter()
                                    .flat_map(|t| t.nics.iter().filter(|x| x.name == *n))
                                    .map(f)
                                    .collect(),
                            )
                        };
                        let gbit = |b: f64| crate::fmt::bit_rate(b * 8.0 / 1e9);
                        row.push(pair(
                            of(&|x| x.rx_bytes_per_s),
                            of(&|x| x.tx_bytes_per_s),
                            &gbit,
                        ));
                        row.push(pair(
                            of(&|x| x.rx_packets_per_s),
                            of(&|x| x.tx_packets_per_s),
                            &num,
                        ));
                    }
                    for d in &disks {
                        let of = |f: &dyn Fn(&model::DiskRate) -> f64| {
                            mean(
                                sums.iter()
                                    .flat_map(|t| t.disks.iter().filter(|x| x.name == *d))
                                    .map(f)
                                    .collect(),
                            )
                        };
                        row.push(fixed_pair(
                            of(&|x| x.read_bytes_per_s),
                            of(&|x| x.write_bytes_per_s),
                            1e-6,
                            2,
                        ));
                        row.push(pair(of(&|x| x.reads_per_s), of(&|x| x.writes_per_s), &num));
                    }
                    row
                })
                .collect::<Vec<_>>();
            if rows.is_empty() {
                continue;
            }
            let mut notes = Vec::new();
            if per.iter().any(|(p, _)| not_counted(p).is_some()) {
                notes.push(
                    "A test marked failed, interrupted or invalid has no repetition that \
                     counts: its row is what the host measured up to where it stopped, to \
                     see what happened, and is in no headline figure."
                        .into(),
                );
            }
            if !idle.is_empty() {
                notes.push(format!(
                    "Left out, idle in every test on {name}: {}.",
                    idle.join(", ")
                ));
            }
            out.push(View {
                title: format!("{label}: telemetry on {name}"),
                figures: vec![],
                tables: vec![Table {
                    caption: format!(
                        "{label}: telemetry on {name} per test, each the mean over its \
                         repetitions of the host's figures over the measured time: context \
                         switches and interrupts per second (the whole host), each NIC's \
                         received / sent bits per second (each in its own unit) and \
                         packets/s, each disk's read / written MB/s \
                         and I/O per second{}",
                        if left_out.is_empty() {
                            String::new()
                        } else {
                            format!(
                                "; left out, as capacity tests: {} (their figures are per step, \
                                 in their views; one over every step together would mean rates \
                                 from idle to saturation)",
                                left_out.join(", ")
                            )
                        }
                    ),
                    head,
                    rows,
                }],
                notes,
            });
        }
        if let Some(v) = jitter_view(label, &pts) {
            out.push(v);
        }
    }
    out
}

/// kv/http's latency jitter per test of one run: the workload's own (the spread of its
/// latencies), once for the test, not in each host's table as if every host had measured
/// it (acceptance pass G, 13). The jitter of the latency kind the tables show (`corrected`
/// when present); None when no test has one.
fn jitter_view(label: &str, pts: &[Point]) -> Option<View> {
    let rows: Vec<(String, Option<f64>)> = pts
        .iter()
        .map(|p| {
            let kind = p.latency().map(|l| l.0);
            let v: Vec<f64> = p
                .valid()
                .iter()
                .filter_map(|r| match &kind {
                    Some(k) => r.metric("latency_jitter_ns", &[("kind", k.as_str())]),
                    None => r.metric("latency_jitter_ns", &[]),
                })
                .map(|m| m.value)
                .collect();
            (p.label(), crate::stats::mean(&v))
        })
        .collect();
    rows.iter().any(|r| r.1.is_some()).then(|| View {
        title: format!("{label}: latency jitter"),
        figures: vec![],
        tables: vec![Table {
            caption: format!(
                "{label}: latency jitter per test, the workload's own (the spread of its \
                 latencies, the mean over its valid repetitions), one figure per test"
            ),
            head: vec!["Test".into(), "Latency jitter".into()],
            rows: rows
                .into_iter()
                .map(|(t, j)| vec![t, j.map_or("-".into(), crate::fmt::latency_ns)])
                .collect(),
        }],
        notes: vec![],
    })
}

/// Why none of a point's repetitions counts (`failed`, `interrupted`, `invalid`); None
/// when one does.
pub(crate) fn not_counted(p: &Point) -> Option<&'static str> {
    if !p.valid().is_empty() {
        return None;
    }
    let has = |s: model::Status| p.results.iter().any(|r| r.status == s);
    Some(if has(model::Status::Failed) {
        "failed"
    } else if has(model::Status::Interrupted) {
        "interrupted"
    } else {
        "invalid"
    })
}

/// What a run measured: its (workload, test, parameters) points, sorted. Two runs are
/// comparable only when these are equal: the same tests at different parameters (60-byte
/// against 1472-byte UDP, 1 against 8 threads) measure different things. Parameters that
/// only name the hosts are left out, as they differ between any two platforms.
fn signature(run: &RunRecord) -> Vec<(String, String, String)> {
    let mut s: Vec<(String, String, String)> = run
        .results
        .iter()
        .map(|r| {
            let params: Vec<String> = r
                .params
                .iter()
                .filter(|(k, _)| !crate::hosts_view::HOST_PARAMS.contains(&k.as_str()))
                .map(|(k, v)| format!("{k}={}", derive::param_str(v)))
                .collect();
            (r.workload.clone(), r.test.clone(), params.join(" "))
        })
        .collect();
    s.sort();
    s.dedup();
    s
}

/// Which runs to compare: each run after the first against the first earlier run that
/// measured the same workloads and tests at the same parameters (A index, B index), or,
/// failing that, where one of the two did not finish, the closest in size that measured
/// every point it reached: `rackbench compare`
/// compares a killed run's points with the other's and says which it did not reach, and
/// the report left such a run out. Runs of different workloads (mem vs net), or of one
/// test at different parameters, have nothing to compare; they are listed in the second
/// vector.
pub fn comparable_pairs(runs: &[RunRecord]) -> (Vec<(usize, usize)>, Vec<usize>) {
    let sigs: Vec<_> = runs.iter().map(signature).collect();
    let within = |i: usize, j: usize| {
        runs[i].status != model::Status::Ok
            && sigs[i].iter().all(|p| sigs[j].binary_search(p).is_ok())
    };
    let mut pairs = Vec::new();
    let mut alone = Vec::new();
    for i in 1..runs.len() {
        let measured = |j: &usize| !sigs[i].is_empty() && !sigs[*j].is_empty();
        // A run of the very same points first; only then the closest in size of those
        // the unfinished run's points lie within (a killed `set` at c=1 pairs with an
        // earlier `set, get` at c=1 before a bigger sweep that covers it too).
        let same = (0..i).find(|j| measured(j) && sigs[*j] == sigs[i]);
        let covering = || {
            (0..i)
                .filter(|j| measured(j) && (within(i, *j) || within(*j, i)))
                .min_by_key(|j| sigs[*j].len().abs_diff(sigs[i].len()))
        };
        match same.or_else(covering) {
            Some(j) => pairs.push((j, i)),
            None => alone.push(i),
        }
    }
    (pairs, alone)
}
