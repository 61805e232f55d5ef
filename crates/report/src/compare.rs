//! A/B comparison of two runs or two groups of runs, and whether they are comparable.
//!
//! **Matching.** A sweep point is its workload, its test (by name) and the values of the
//! parameters swept *within* a side (`pipeline=1,16` on both sides). A parameter that is
//! constant on each side but differs between them is the setting under study (or a
//! mistake): it does not keep points apart, and it is listed among the differences. List
//! parameters (`tests=["set","get"]`) never take part.
//!
//! **Figures.** Per point: the headline; latency p50, p90, p99, p99.9, max and the
//! weighted mean, read once per run from its valid repetitions' exact histograms merged
//! (as the results table reads them: percentiles are never averaged); the share over
//! each latency threshold; CPU per unit of a rate headline on the system under test
//! (`cpu_us_per_op`, `_per_Gbit`, `_per_sign`: its whole host, when that host ran no load
//! generator; else `server_cpu_us_per_op`..., its watched server processes, or missing
//! with the reason); each run's power and
//! perf/W by the one power rule, as the results table takes them, named by their basis
//! (whole server measured untagged, `MODELLED`, `component only`), and `not comparable`
//! with no percentage where the sides' bases differ, each side's cell then naming its own
//! (`200 W (1 run, MODELLED)`); a side whose runs' watts came from different sources of
//! one basis has neither figure, and says so. Each with its
//! difference, (B - A) / A with A as old. A capacity test (ramp, search, levels) is
//! compared on its headline only: its other figures are per step. A figure only one
//! side has (CPU per operation on different bases, power on one side, a point only one
//! side ran: by its headline) keeps its row, with that side's value and `only on A:
//! <why B has none>`.
//!
//! **Significance, honestly.** Repetitions inside one run share a server process, its
//! memory layout and the minute it ran in, so they scatter less than runs do: treating
//! them as independent samples calls two runs of one configuration different far more
//! often than 5% of the time. The unit of replication is therefore the run: each run
//! gives one value (its repetitions' mean, or its merged latency's percentile), and with
//! at least two runs on each side the difference carries Welch's 95% confidence
//! interval over the run means and a verdict at p < 0.05 (METHODS 10); two variants of
//! one run, whose repetitions were interleaved, are judged by a paired t-test of
//! repetition i of A against repetition i of B ([`pairs_of`]). With fewer, the
//! verdict says there are not enough repetitions and gives no p-value. A side's perf/W
//! is its runs' mean throughput over their mean power (the report's figure of a variant
//! over its repetitions, and the side's throughput row over its power row; not the mean
//! of each run's ratio), its spread by the delta method ([`Sample::ratio_of_means`]). A
//! test repeats an A/A comparison many times and checks the false-positive rate stays
//! near the stated 5%.
//!
//! Comparability diffs the system-under-test disclosures on the keys that change results
//! (CPU, memory, kernel, mitigations, SMT, governor, software versions, sysctls, kernel
//! command line, NIC settings) and the workload parameters. Hardware differences are what
//! a platform comparison is for; software or setting differences make it not like for
//! like.

use std::collections::{BTreeMap, BTreeSet};

use model::{HostDisclosure, RunRecord};
use serde::{Deserialize, Serialize};

use crate::derive::{points, run_labels, setting_key, CpuBasis, PowerBasis};
use crate::stats::{no_spread, paired_t, welch, Sample};

/// One compared figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareRow {
    /// Sweep point: `kv set pipeline=1 instances=2`.
    pub point: String,
    /// `ops_per_s`, `latency_p99_ns`.
    pub metric: String,
    pub unit: String,
    pub higher_is_better: bool,
    pub a: Option<Sample>,
    pub b: Option<Sample>,
    /// (b - a) / a in percent.
    pub diff_pct: Option<f64>,
    /// 95% CI of the difference, in percent of a (Welch's, or paired over interleaved
    /// variants), as computed: a lower bound below -100% (two or three runs of a wide
    /// spread) is kept here, and the text shows it as `<-100%` (every compared figure is
    /// a count, rate, time or share: none goes below zero, so the interval says only that
    /// it reaches zero).
    pub ci95_pct: Option<(f64, f64)>,
    /// For a share (any figure in %: `pct_over_1ms`, UDP `loss_pct`): b - a in
    /// percentage points, as the seeds state such differences ("11% vs 0%"), and its 95%
    /// CI in points (as computed; below -A shown as `<-A`). The text, HTML and Markdown
    /// show these rows in points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff_points: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95_points: Option<(f64, f64)>,
    pub p_value: Option<f64>,
    /// `better (significant, p=0.003)`, `no significant difference`, `single run: no confidence`.
    pub verdict: String,
    /// A side of one run measured several times: its repetitions' mean and sd, shown
    /// beside the mean (the verdict judges on runs, where these do not count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a_reps: Option<Sample>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b_reps: Option<Sample>,
    /// Where the sides' power is of different bases (a measured side against a
    /// modelled one, not compared), each side's (`measured`, `MODELLED`), said in its
    /// cell: the row's name can carry only one, and `power_w 150 W  200 W` with the
    /// bases in the verdict alone left the reader to guess which figure was modelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a_basis: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b_basis: Option<String>,
    /// The side's figure is only a lower bound (a search whose every probe met its
    /// objective, [`model::ResultRecord::headline_lower_bound`]): its cell reads `≥`, and
    /// the row computes no difference, as a bound set against a measurement says only
    /// that one side is at least so much.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub a_bound: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub b_bound: bool,
}

/// The repetitions of a side that is one run, when there are several.
fn one_runs_reps(runs: &[Vec<f64>]) -> Option<Sample> {
    match runs {
        [one] if one.len() > 1 => Sample::of(one),
        _ => None,
    }
}

/// A relative difference to 0.1%, signed, with no sign on one that rounds to zero: a
/// difference of -0.03% read "-0.0%" beside another's "+0.0%", a direction where the
/// figure shows none.
fn signed_pct(d: f64) -> String {
    format!("{}%", unsigned_if_zero(format!("{d:+.1}")))
}

/// A signed figure as written (`+0.0`, `-0.00`) without its sign where it rounds to zero.
fn unsigned_if_zero(s: String) -> String {
    if s[1..].chars().all(|c| c == '0' || c == '.') {
        s[1..].to_string()
    } else {
        s
    }
}

/// A difference in percentage points, signed: to 0.1 point from 1 point up, two
/// significant digits below, so that a share's change is neither rounded away (0.0562% to
/// 0.0406% read "-0.0 pts") nor doubled (0.293% to 0.239% read "-0.1 pts", acceptance N,
/// 4), and no "-0.0" ever.
fn signed_points(d: f64) -> String {
    let a = d.abs();
    // -0.016 pts, +0.0065 pts, -0.054 pts, +0.50 pts; +16.1 pts.
    let digits = if a >= 1.0 || a == 0.0 || !a.is_finite() {
        1
    } else {
        (1.0 - a.log10().floor()) as usize
    };
    unsigned_if_zero(format!("{d:+.digits$}"))
}

impl CompareRow {
    /// A row with no figure on either side, only its verdict (why it is not compared).
    fn said(point: String, metric: String, verdict: String) -> CompareRow {
        CompareRow {
            point,
            metric,
            unit: String::new(),
            higher_is_better: true,
            a: None,
            b: None,
            diff_pct: None,
            ci95_pct: None,
            diff_points: None,
            ci95_points: None,
            p_value: None,
            verdict,
            a_reps: None,
            b_reps: None,
            a_basis: None,
            b_basis: None,
            a_bound: false,
            b_bound: false,
        }
    }

    /// The figure's name as the table shows it: a latency in ns, which its cells give in
    /// µs or ms, without its `_ns` (`latency_p99_ns` beside `4.31 ms` read as a misprint);
    /// `metric` keeps the stored name (`--json`).
    pub fn metric_text(&self) -> String {
        match self.metric.strip_suffix("_ns") {
            Some(name) if self.unit == "ns" => name.replace('_', " "),
            _ => self.metric.clone(),
        }
    }

    /// A side's cell: `174,798 ops/s (3 runs)`; for one run of several repetitions
    /// `174,798 ± 8,657 ops/s (1 run, 2 reps)`; `-` where it has none. The count says what
    /// it counts: a bare `(3)` beside `(1 run, 2 reps)` and a verdict's `3 vs 3 runs`
    /// said n two ways in one table.
    pub fn side_text(&self, side: &Option<Sample>, reps: &Option<Sample>) -> String {
        let Some(s) = side else {
            return "-".into();
        };
        let ns = self.unit == "ns";
        let mean = if ns {
            crate::fmt::latency_ns(s.mean)
        } else if is_share(&self.metric, &self.unit) {
            crate::fmt::share_num(s.mean)
        } else {
            crate::fmt::num(s.mean)
        };
        let unit = if ns {
            String::new()
        } else {
            format!(" {}", self.unit)
        };
        match reps {
            Some(Sample {
                n, sd: Some(sd), ..
            }) => {
                let sd = if ns {
                    crate::fmt::latency_ns(*sd)
                } else {
                    crate::fmt::num(*sd)
                };
                format!("{mean} ± {sd}{unit} (1 run, {n} reps)")
            }
            _ => format!(
                "{mean}{unit} ({} run{})",
                s.n,
                if s.n == 1 { "" } else { "s" }
            ),
        }
    }

    /// Side A's cell ([`CompareRow::side_text`]), with its power basis where the sides'
    /// differ: `150 W (1 run, measured)`.
    pub fn a_text(&self) -> String {
        at_least(
            with_side_basis(self.side_text(&self.a, &self.a_reps), &self.a_basis),
            self.a_bound,
        )
    }

    /// Side B's cell, as [`CompareRow::a_text`]: `200 W (1 run, MODELLED)`.
    pub fn b_text(&self) -> String {
        at_least(
            with_side_basis(self.side_text(&self.b, &self.b_reps), &self.b_basis),
            self.b_bound,
        )
    }

    /// The "B vs A" cell: `+12.5%`, or `+16.1 pts` for a share; `-` where there is none.
    pub fn diff_text(&self) -> String {
        match (self.diff_points, self.diff_pct) {
            (Some(d), _) => format!("{} pts", signed_points(d)),
            (None, Some(d)) => signed_pct(d),
            (None, None) => "-".into(),
        }
    }

    /// The "95% CI" cell: `[-3.1%, +8.0%]`, or in points for a share. A lower bound
    /// below what a figure can fall to (-100%, or -A points: B below zero) is shown as
    /// beyond it, `[<-100%, +192.6%]`, not as a bound computed there; so is a share of
    /// requests' upper bound past +(100 - A) points (B above 100%).
    pub fn ci_text(&self) -> String {
        match (self.ci95_points, self.ci95_pct, self.diff_points) {
            (Some((l, h)), _, _) => {
                let floor = self.a.as_ref().map_or(f64::NEG_INFINITY, |a| -a.mean);
                let low = if l < floor {
                    // A at 0: B cannot fall below it (not "<-0.0").
                    if floor == 0.0 {
                        "<0".to_string()
                    } else {
                        format!("<{}", signed_points(floor))
                    }
                } else {
                    signed_points(l)
                };
                // A share of requests (`pct_over_1ms`) cannot pass 100%: a bound beyond
                // +(100 - A) points is shown as beyond it, as the floor is. (Not every
                // figure in % is bounded so: a process's CPU % counts several CPUs.)
                let ceiling = self
                    .a
                    .as_ref()
                    .filter(|_| self.metric.starts_with("pct_over_"))
                    .map_or(f64::INFINITY, |a| 100.0 - a.mean);
                let high = if h > ceiling {
                    format!(">{}", signed_points(ceiling))
                } else {
                    signed_points(h)
                };
                format!("[{low}, {high}] pts")
            }
            // A share's difference stands in points; its relative interval is not shown.
            (None, _, Some(_)) => "-".into(),
            (None, Some((l, h)), None) if l < -100.0 => format!("[<-100%, {}]", signed_pct(h)),
            (None, Some((l, h)), None) => format!("[{}, {}]", signed_pct(l), signed_pct(h)),
            (None, None, None) => "-".into(),
        }
    }
}

/// A disclosure or setting that differs between A and B.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    pub key: String,
    pub a: String,
    pub b: String,
    /// `hardware`, `software`, `settings`, `workload`.
    pub category: String,
}

/// Whether A and B may be compared, and why not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparability {
    pub like_for_like: bool,
    /// `like for like`, `platform comparison: ...`, `NOT like for like: ...`.
    pub verdict: String,
    pub differences: Vec<Difference>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub a: Vec<String>,
    pub b: Vec<String>,
    pub rows: Vec<CompareRow>,
    pub comparability: Comparability,
    /// The compared points whose results on either side carry warnings: their figures
    /// stand, but deserve the second look the run's own report gives them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<PointWarnings>,
    /// Runs of either side that did not finish (`B: killed: run interrupted`): what
    /// they stored before the stop is compared, points without a repetition that counts
    /// are not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unfinished: Vec<String>,
    /// Set when the two sides share no test point (a kv run against a net run): nothing
    /// is compared, and this says what each side has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nothing_in_common: Option<String>,
    /// Per side, the measured hosts whose power rows hold the load generator's work
    /// (they also ran it: a single-host run's `sut+loadgen`), as the report and the TCO
    /// say under their power figures ([`crate::derive::loadgen_power_notes`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loadgen_in_power: Vec<String>,
}

impl Comparison {
    /// The notes said under the table in every form of it: [`MEANS_OF_RUNS_NOTE`], and
    /// whose power rows hold the load generator's work.
    pub fn table_notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.averages_runs() {
            out.push(MEANS_OF_RUNS_NOTE.to_string());
        }
        if !self.loadgen_in_power.is_empty() {
            out.push(format!(
                "Power and per-W rows: {}.",
                crate::derive::loadgen_power_note(&self.loadgen_in_power.join("; "))
            ));
        }
        out
    }

    /// Whether [`MEANS_OF_RUNS_NOTE`] is said: a row with several runs on a side.
    pub fn averages_runs(&self) -> bool {
        self.rows.iter().any(|r| {
            [&r.a, &r.b]
                .iter()
                .any(|s| s.as_ref().is_some_and(|s| s.n > 1))
        })
    }

    /// What is said under the comparison's header of each run that did not finish (`B:
    /// killed: run interrupted: what it stored ...`), in `rackbench compare` and in a
    /// report's Comparison section alike; its points are said in their rows ("B ran it,
    /// but its only repetition is interrupted (partial): not compared").
    pub fn unfinished_notes(&self) -> Vec<String> {
        self.unfinished
            .iter()
            .map(|u| {
                format!(
                    "{u}: what it stored before it stopped is compared; its points without \
                     a repetition that counts are not"
                )
            })
            .collect()
    }
}

/// The warning codes (`client_bound`, `cpu_coarse`, `steal`) of one compared point's
/// results, per side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointWarnings {
    pub point: String,
    pub a: Vec<String>,
    pub b: Vec<String>,
    /// The point is not on A at all (its warnings are then "absent", not "none").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub a_absent: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub b_absent: bool,
}

impl PointWarnings {
    /// `A: cpu_coarse, shares_cpus; B: none` (`B: absent` where B did not run the point).
    pub fn text(&self) -> String {
        let side = |w: &[String], absent: bool| {
            if absent {
                "absent".to_string()
            } else if w.is_empty() {
                "none".to_string()
            } else {
                w.join(", ")
            }
        };
        format!(
            "A: {}; B: {}",
            side(&self.a, self.a_absent),
            side(&self.b, self.b_absent)
        )
    }
}

/// Say what each side has when they share no point: at most this many of its points.
const POINTS_NAMED: usize = 4;

/// Why nothing can be compared, when sides with points `pa` and `pb` share none. Both
/// must have points: a side with no valid result (its tests failed) is an outcome the
/// comparison shows, one-sided, not a mistake in what was asked. A side whose runs
/// stored no result at all (killed before its first test ended) has nothing to show:
/// compared, it printed an empty table called like for like.
fn nothing_in_common(
    (a, b): (&[RunRecord], &[RunRecord]),
    pa: &BTreeSet<String>,
    pb: &BTreeSet<String>,
) -> Option<String> {
    for (side, runs) in [("A", a), ("B", b)] {
        if runs.iter().all(|r| r.results.is_empty()) {
            let ids: Vec<String> = runs
                .iter()
                .map(|r| format!("{} ({})", r.id, r.status.word()))
                .collect();
            return Some(format!(
                "side {side}'s run(s) {} stored no result; compare runs that did (`rackbench \
                 runs` gives each one's results)",
                ids.join(", ")
            ));
        }
    }
    if pa.is_disjoint(pb) && !pa.is_empty() && !pb.is_empty() {
        let has = |p: &BTreeSet<String>| {
            let mut named: Vec<&str> = p.iter().take(POINTS_NAMED).map(String::as_str).collect();
            if p.len() > POINTS_NAMED {
                named.push("...");
            }
            format!("{} point(s): {}", p.len(), named.join("; "))
        };
        Some(format!(
            "the runs share no test point (workload, test and parameters): A has {}; B has \
             {}; compare runs of the same workload and tests",
            has(pa),
            has(pb)
        ))
    } else {
        None
    }
}

/// The note above a comparison's list of warned points.
pub const WARNINGS_NOTE: &str = "Warnings at compared points (the figures stand; `rackbench show RUN` gives each warning's text):";

/// Disclosure keys whose differences change results (prefix match for the `*` ones).
const KEYS: &[&str] = &[
    "cpu.model",
    "cpu.scaling_driver",
    "cpu.idle_driver",
    "cpu.sockets",
    "cpu.cores",
    "cpu.threads",
    "cpu.smt",
    "cpu.governor",
    "cpu.turbo",
    "cpu.microcode",
    "mem.total_bytes",
    "mem.dimms",
    "mem.thp",
    "numa.nodes",
    "virt",
    "os.kernel",
    "os.name",
    "mitigation.*",
    "software.*",
    "server.config.*",
    "sysctl.*",
    "kernel.cmdline_tuning",
    "os.tuned_profile",
    "cpu.cstates",
    "mem.thp_defrag",
    "irq.irqbalance",
    "nic.*",
    VARIANT_FACT,
];

/// The fact a run's variant carries in its hosts' disclosure once taken apart by
/// [`variant_run`], and the category of its difference.
pub const VARIANT_FACT: &str = "variant";
const DECLARED: &str = "declared variant";
/// The facts a variant's setup changed, comma-separated (see [`variant_run`]).
const SET_BY_VARIANT_FACT: &str = "variant.sets";
/// The category of a fact that differs because the declared variant set it.
const SET_BY_VARIANT: &str = "set by the declared variant";

/// The category of a setting one side swept over more values than the other, both
/// sides sharing some: the points are compared where both ran, and a point only one side
/// ran is its own row (acceptance M, 1: `--instances 1` against `--instances 1,2` was
/// "NOT like for like" although the one point compared, instances=1, was).
const SWEPT: &str = "swept further on one side";

/// The category of a host fact one side knows a value of and the other cannot say (a
/// sysctl a namespace does not show): no known difference, so not held against the
/// comparison, nor a sameness either; the verdict names it (acceptance K, 4).
const UNKNOWN_ONE_SIDE: &str = "known on one side only";

/// Where the points ran (`param.http.sut_host`): the platform compared, as hardware is,
/// never held against the comparison (acceptance pass G, 11).
const PLACEMENT: &str = "placement";

/// The placements that are the platform measured: the system under test's host, a net
/// pair's ends. Other load generators are another method, not another platform
/// (review I, 3).
const PLATFORM_PARAMS: &[&str] = &["sut_host", "sender_host", "receiver_host"];
/// Over what time a run's CPU and power summaries were taken (a method, not a fact of
/// the host): it differs between runs stored before and after they were cut.
const TELEMETRY_WINDOW: &str = "rackbench.telemetry_window";

/// Where a run's power figures came from (see [`power_source`]).
const POWER_SOURCE: &str = "rackbench.power_source";

/// A run's power provenance, in words: `model 100:200 W` (the run's `--power-model`),
/// `external meter`, the sources its summaries read (`rapl, hwmon`), or `none`.
fn power_source(run: &RunRecord, summaries: &[&model::TelemetrySummary]) -> String {
    let declared = |k: &str| {
        run.plan
            .get("run")
            .and_then(|r| r.get(k))
            .filter(|v| !v.is_null())
    };
    if let Some(m) = model::declared_power_model(run) {
        return format!("model {m} W");
    }
    let mut sources: Vec<&str> = summaries
        .iter()
        .flat_map(|s| &s.power)
        .map(|p| p.source.as_str())
        .collect();
    sources.sort_unstable();
    sources.dedup();
    if declared("power_meter").is_some() && sources.is_empty() {
        return "external meter".into();
    }
    if sources.is_empty() {
        "none".into()
    } else {
        sources.join(", ")
    }
}

fn category(key: &str) -> &'static str {
    if key == VARIANT_FACT {
        DECLARED
    } else if key.starts_with("cpu.governor")
        || key.starts_with("cpu.turbo")
        || key.starts_with("cpu.smt")
    {
        "settings"
    } else if key.starts_with("cpu.")
        || key.starts_with("mem.")
        || key.starts_with("numa.")
        || key == "virt"
    {
        "hardware"
    } else if key.starts_with("param.")
        && key
            .rsplit('.')
            .next()
            .is_some_and(|k| PLATFORM_PARAMS.contains(&k))
    {
        PLACEMENT
    } else if key.starts_with("param.") {
        "workload"
    } else if key.starts_with("rackbench.") {
        "method"
    } else if key.starts_with("server.config.")
        || key.starts_with("sysctl.")
        || key.starts_with("kernel.cmdline")
        || key.starts_with("os.tuned")
        || key.starts_with("irq.")
        || key == "cpu.cstates"
        || key == "mem.thp_defrag"
        || (key.starts_with("nic.") && !key.ends_with(".model") && !key.ends_with(".driver"))
    {
        "settings"
    } else {
        "software"
    }
}

fn key_matters(key: &str) -> bool {
    // Where a binary lives does not change what it measures; its version does. A link's
    // state and interrupt counters' names say nothing of the settings. Nor does the list
    // of virtual interfaces (bridges, veths, ifbs: containers and namespaces come and go
    // between runs); the NICs that carry traffic are each disclosed on their own keys.
    if key.ends_with(".binary") || key.ends_with(".operstate") || key == "nic.virtual" {
        return false;
    }
    KEYS.iter().any(|k| match k.strip_suffix('*') {
        Some(prefix) => key.starts_with(prefix),
        None => key == *k,
    })
}

/// A run's system-under-test hosts (every host of a run that names none).
fn sut_hosts(run: &RunRecord) -> Vec<&HostDisclosure> {
    let s: Vec<&HostDisclosure> = run
        .hosts
        .iter()
        .filter(|h| h.role.contains("sut"))
        .collect();
    if s.is_empty() {
        run.hosts.iter().collect()
    } else {
        s
    }
}

/// The facts that matter that some SUT host of these runs knows a value of: one that
/// every host gives as unknown (or leaves out) tells of no setting, whatever its reason
/// says (an older rackbench left a `sysctl.net.core` key out where a newer one says
/// why it is not present).
fn known_facts(runs: &[RunRecord]) -> BTreeSet<&str> {
    runs.iter()
        .flat_map(sut_hosts)
        .flat_map(|h| &h.facts)
        .filter(|(k, f)| f.value.is_some() && key_matters(k))
        .map(|(k, _)| k.as_str())
        .collect()
}

/// The facts that matter of the SUT host(s) of a group of runs: key -> set of values.
fn facts(runs: &[RunRecord]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for run in runs {
        let sut = sut_hosts(run);
        for h in &sut {
            for (k, f) in &h.facts {
                if key_matters(k) {
                    let e = out.entry(k.clone()).or_default();
                    let v = f.display();
                    if !e.contains(&v) {
                        e.push(v);
                    }
                }
            }
        }
        // How its CPU and power were summarised: runs stored before the summaries were
        // cut to each test's measured time (no `covered_s`) read lower CPU busy and power
        // wherever a test had setup or teardown around its load (UDP: 10% of a 3 s test).
        // Whether a test's edge samples were kept whole or weighed by their part inside is
        // chosen per test by its length (`whole_samples`), so one command's runs can differ
        // in it: not a difference of method between runs. The completed tests' (a failed
        // one is summarised whole).
        let summaries: Vec<&model::TelemetrySummary> = run
            .results
            .iter()
            .filter(|r| r.status == model::Status::Ok)
            .flat_map(|r| &r.telemetry_summary)
            .collect();
        if !summaries.is_empty() {
            let window = if summaries.iter().all(|s| s.covered_s.is_some()) {
                "each test's measured time"
            } else {
                "each test's whole time (stored before summaries were cut to the measured time)"
            };
            let e = out.entry(TELEMETRY_WINDOW.to_string()).or_default();
            if !e.iter().any(|v| v == window) {
                e.push(window.to_string());
            }
        }
        // Where its watts came from: a declared model (its parameters make the figure),
        // an external meter, or the sources found on the host. Runs whose power differs in
        // provenance do not compare like for like on power and perf/W.
        // The system under test's watts: a load generator's RAPL is no part of them.
        let sut_names: Vec<&str> = sut.iter().map(|h| h.host.as_str()).collect();
        let sut_summaries: Vec<&model::TelemetrySummary> = summaries
            .iter()
            .copied()
            .filter(|s| sut_names.contains(&s.host.as_str()))
            .collect();
        if !sut_summaries.is_empty() {
            let e = out.entry(POWER_SOURCE.to_string()).or_default();
            let v = power_source(run, &sut_summaries);
            if !e.contains(&v) {
                e.push(v);
            }
        }
        // Workload settings: every parameter's set of values over the run's results, as
        // given, else as it ran (its effective setting, a default).
        for r in &run.results {
            let defaults = r
                .settings
                .iter()
                .filter(|(k, _)| !r.params.contains_key(*k));
            for (k, v) in r.params.iter().chain(defaults) {
                let e = out.entry(format!("param.{}.{k}", r.workload)).or_default();
                let v = setting_key(k, v);
                if !e.contains(&v) {
                    e.push(v);
                }
            }
        }
    }
    for v in out.values_mut() {
        v.sort();
    }
    out
}

/// Whether every result of `runs` of the workload a `param.<workload>.<key>` fact names
/// says every setting it ran with (stored since settings were kept), so that a key
/// absent from them was not given.
fn knows_settings_of(runs: &[RunRecord], key: &str) -> bool {
    let Some(wl) = key.strip_prefix("param.").and_then(|k| k.split('.').next()) else {
        return false;
    };
    let mut of_wl = runs
        .iter()
        .flat_map(|r| &r.results)
        .filter(|r| r.workload == wl)
        .peekable();
    of_wl.peek().is_some() && of_wl.all(|r| !r.settings.is_empty())
}

/// Compare the disclosures and settings of two groups of runs.
pub fn comparability(a: &[RunRecord], b: &[RunRecord]) -> Comparability {
    let fa = facts(a);
    let fb = facts(b);
    let (known_a, known_b) = (known_facts(a), known_facts(b));
    let known: BTreeSet<&str> = known_a.union(&known_b).copied().collect();
    let mut keys: Vec<&String> = fa.keys().chain(fb.keys()).collect();
    keys.sort();
    keys.dedup();
    // The settings some result was given (`param.kv.pipeline`); the others are known
    // only from results that say every setting they ran with.
    let given: BTreeSet<String> = a
        .iter()
        .chain(b)
        .flat_map(|run| &run.results)
        .flat_map(|r| r.params.keys().map(|k| format!("param.{}.{k}", r.workload)))
        .collect();
    let mut differences = Vec::new();
    for k in keys {
        // Which tests a run ran is no setting of a point: points are compared test by
        // test, and a test one side did not run is no row (net's `tcp,udp` against
        // `tcp,udp1472` compared the same two tests, "NOT like for like": acceptance pass,
        // s27).
        if k.starts_with("param.") && k.ends_with(".tests") {
            continue;
        }
        // A default known on one side only, the other's results stored before settings
        // were kept: nothing known differs (a setting typed on either side still does).
        if k.starts_with("param.")
            && !given.contains(k.as_str())
            && (!fa.contains_key(k) || !fb.contains_key(k))
        {
            continue;
        }
        // A host fact neither side knows a value of: nothing known differs.
        let host_fact = a
            .iter()
            .chain(b)
            .flat_map(sut_hosts)
            .any(|h| h.facts.contains_key(k));
        if host_fact && !known.contains(k.as_str()) {
            continue;
        }
        // A run on this machine alone stores no placement: it ran here. A setting a side's
        // results know all their settings without was not given there (a closed loop's
        // `rate`), not undisclosed.
        let absent = |side: &[RunRecord]| {
            if category(k) == PLACEMENT {
                "this machine"
            } else if knows_settings_of(side, k) {
                "not given"
            } else {
                "(not disclosed)"
            }
        };
        let va = fa
            .get(k)
            .map(|v| v.join(", "))
            .unwrap_or_else(|| absent(a).into());
        let vb = fb
            .get(k)
            .map(|v| v.join(", "))
            .unwrap_or_else(|| absent(b).into());
        // A side without telemetry (--no-telemetry) has no summaries to differ in.
        let unsampled = (k == TELEMETRY_WINDOW || k == POWER_SOURCE)
            && (!fa.contains_key(k) || !fb.contains_key(k));
        if va != vb && !unsampled {
            // Power sources a host has (RAPL here, IPMI there) are of its hardware; a
            // declared model or meter on either side is a choice of method.
            // Each run's provenance on its own (a side's runs may differ among themselves).
            let declared = |vals: Option<&Vec<String>>| {
                vals.is_some_and(|vs| {
                    vs.iter()
                        .any(|v| v.starts_with("model ") || v.split(", ").any(|s| s == "meter"))
                })
            };
            let swept = match (fa.get(k), fb.get(k)) {
                (Some(x), Some(y)) => {
                    k.starts_with("param.")
                        && (x.len() > 1 || y.len() > 1)
                        && x.iter().any(|v| y.contains(v))
                }
                _ => false,
            };
            let category = if k == POWER_SOURCE && !declared(fa.get(k)) && !declared(fb.get(k)) {
                "hardware"
            } else if host_fact && known_a.contains(k.as_str()) != known_b.contains(k.as_str()) {
                UNKNOWN_ONE_SIDE
            } else if swept {
                SWEPT
            } else {
                category(k)
            };
            differences.push(Difference {
                key: k.clone(),
                a: va,
                b: vb,
                category: category.to_string(),
            });
        }
    }
    // What either side's variant set differs because of the variant.
    let set_by_variant: Vec<&str> = a
        .iter()
        .chain(b)
        .flat_map(|r| &r.hosts)
        .filter_map(|h| h.facts.get(SET_BY_VARIANT_FACT)?.value.as_deref())
        .flat_map(|v| v.split(','))
        .collect();
    for d in &mut differences {
        if set_by_variant.contains(&d.key.as_str()) {
            d.category = SET_BY_VARIANT.to_string();
        }
    }
    let explained = |d: &&Difference| {
        d.category == DECLARED
            || d.category == SET_BY_VARIANT
            || d.category == SWEPT
            || d.category == UNKNOWN_ONE_SIDE
    };
    // The declared variant is the setting under study: said, never held against the
    // comparison, nor what it set; anything else that differs besides it is.
    let declared = differences
        .iter()
        .find(|d| d.category == DECLARED)
        .map(|d| {
            let set: Vec<&str> = differences
                .iter()
                .filter(|d| d.category == SET_BY_VARIANT)
                .map(|d| d.key.as_str())
                .collect();
            if set.is_empty() {
                format!("the declared variant ({} vs {})", d.a, d.b)
            } else {
                format!(
                    "the declared variant ({} vs {}, which sets {})",
                    d.a,
                    d.b,
                    set.join(", ")
                )
            }
        });
    let platform = |d: &&Difference| d.category == "hardware" || d.category == PLACEMENT;
    let non_hw: Vec<&Difference> = differences
        .iter()
        .filter(|d| !platform(d) && !explained(d))
        .collect();
    let others = differences.iter().filter(|d| !explained(d)).count();
    let (like, verdict) = if let Some(v) = &declared {
        if non_hw.is_empty() && others == 0 {
            (true, format!("like for like but {v}"))
        } else if non_hw.is_empty() {
            (true, format!("{v}, and hardware differs too"))
        } else {
            (
                false,
                format!(
                    "NOT like for like: besides {v}, {} differ",
                    non_hw
                        .iter()
                        .map(|d| d.key.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        }
    } else if others == 0 {
        let swept: Vec<&str> = differences
            .iter()
            .filter(|d| d.category == SWEPT)
            .map(|d| d.key.as_str())
            .collect();
        if swept.is_empty() {
            (true, "like for like".to_string())
        } else {
            (
                true,
                format!(
                    "like for like at the points both ran ({} swept further on one side)",
                    swept.join(", ")
                ),
            )
        }
    } else if non_hw.is_empty() {
        // The hosts the points ran on, then the hardware that differs.
        let placed: Vec<String> = differences
            .iter()
            .filter(|d| d.category == PLACEMENT)
            .map(|d| {
                format!(
                    "{} {} vs {}",
                    d.key.rsplit('.').next().unwrap_or(""),
                    d.a,
                    d.b
                )
            })
            .collect();
        let hardware: Vec<&str> = differences
            .iter()
            .filter(|d| d.category == "hardware")
            .map(|d| d.key.as_str())
            .collect();
        let mut what = Vec::new();
        if !placed.is_empty() {
            what.push(format!("on other hosts ({})", placed.join(", ")));
        }
        if !hardware.is_empty() {
            what.push(format!("hardware differs ({})", hardware.join(", ")));
        }
        (
            true,
            format!(
                "platform comparison: {}, software and settings are the same",
                what.join("; ")
            ),
        )
    } else {
        (
            false,
            format!(
                "NOT like for like: {} differ",
                non_hw
                    .iter()
                    .map(|d| d.key.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    };
    // What could not be checked, said beside a verdict that holds as far as both know.
    let unknown: Vec<&str> = differences
        .iter()
        .filter(|d| d.category == UNKNOWN_ONE_SIDE)
        .map(|d| d.key.as_str())
        .collect();
    let verdict = if unknown.is_empty() {
        verdict
    } else {
        format!(
            "{verdict} (as far as both sides know: {} known on one side only)",
            unknown.join(", ")
        )
    };
    Comparability {
        like_for_like: like,
        verdict,
        differences,
    }
}

/// One figure of one sweep point on one side: per run, its values (one per repetition,
/// or the run's one, as its latency percentiles); and why it could not be had, for
/// repetitions that have none.
struct Figure {
    unit: String,
    higher_is_better: bool,
    per_run: BTreeMap<usize, Vec<f64>>,
    missing: Vec<String>,
    /// For power and perf/W, each run's power basis: whole-server measured, modelled and
    /// component watts are never set against each other.
    basis: BTreeMap<usize, PowerBasis>,
    /// For power and perf/W, each run's power source (`ipmi-dcmi system`): a side whose
    /// runs' watts came from different ones has no one figure ([`one_source_only`]).
    sources: BTreeMap<usize, String>,
    /// For power and perf/W, the runs whose measured host also ran the load generator
    /// ([`crate::derive::PowerFigure::shared_with_loadgen`]), with its name.
    with_loadgen: BTreeMap<usize, String>,
    /// For a ratio of a point's means, each run's numerator and denominator: perf/W's
    /// throughput and watts ([`crate::derive::Point::per_watt_terms`]), CPU per unit's CPU
    /// and throughput ([`cpu_of`]); the side's figure is their means' ratio
    /// ([`side_sample`]); a levels test's per-watt figures, each repetition's
    /// ([`figures_of`]).
    terms: BTreeMap<usize, Vec<(f64, f64)>>,
    /// For the headline, the runs whose figure is only a lower bound, with why
    /// ([`model::ResultRecord::headline_lower_bound`]).
    bounds: BTreeMap<usize, String>,
}

impl Figure {
    /// Each run's values.
    fn runs(&self) -> Vec<Vec<f64>> {
        self.per_run.values().cloned().collect()
    }
}

/// A side's figure over its runs: their values' mean (each run's its repetitions' mean);
/// for a ratio (perf/W, CPU per unit) the mean of its numerators over the mean of its
/// denominators ([`Sample::ratio_of_means`]), as the report's perf/W and %CPU per unit of
/// a variant are over its repetitions, never the mean of each run's ratio, so that perf/W
/// is the side's throughput row over its power row (where every repetition had power:
/// perf/W's throughput is that of the repetitions whose power was read).
/// Where some value has no terms (a levels figure stored by another rule), the runs'
/// mean.
fn side_sample(f: &Figure) -> Option<Sample> {
    let every_value_has_terms = f
        .per_run
        .iter()
        .all(|(i, vs)| f.terms.get(i).is_some_and(|t| t.len() == vs.len()));
    if f.terms.is_empty() || !every_value_has_terms {
        Sample::of(&run_means(&f.runs()))
    } else {
        let runs: Vec<(f64, f64)> = f
            .terms
            .values()
            .filter_map(|reps| crate::stats::means_of_pairs(reps.iter().copied()))
            .collect();
        Sample::ratio_of_means(&runs)
    }
}

/// A side's power and perf/W over runs whose watts came from different sources (of one
/// basis: unlike bases are said where the sides meet): no figure, and why. The report
/// takes a point's power from the repetitions of its first one's source only, so a
/// variant's repetitions of two sources would give a figure it does not print.
fn one_source_only(f: &mut Figure) {
    let mut sources: Vec<&str> = f.sources.values().map(String::as_str).collect();
    sources.sort_unstable();
    sources.dedup();
    if sources.len() > 1 && bases(f).len() == 1 {
        let why = format!(
            "its runs' power came from different sources ({}): no one figure over them",
            sources.join(", ")
        );
        f.per_run.clear();
        f.terms.clear();
        f.missing = vec![why];
    }
}

/// The parameters that keep sweep points apart: those that take more than one value
/// within side A or within side B, per workload, each point's value as given, else as
/// it ran ([`crate::derive::Point::setting`]). A list is one value (`--server-cpus 0`
/// and `0,1` are two settings, not repetitions of one), except the lists that say which
/// figures a run made, not how it ran: its tests (each point is one of them already) and
/// the latency thresholds its shares over are reported against. Read from the values as
/// given alone, a run at `--threads 2` and one at the default 1 were one point, their
/// figures averaged as repetitions (audit, s44). Values are set against those of the
/// same test: a load test's settings (`duration`) are none of a capacity test's of the
/// same run (`ramp_low`), and are no sweep between them.
fn swept_within(a: &[RunRecord], b: &[RunRecord]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for side in [a, b] {
        let points: Vec<_> = side
            .iter()
            .enumerate()
            .flat_map(|(i, run)| points(i, run))
            .collect();
        let knobs: BTreeSet<(&str, &str, &str)> = points
            .iter()
            .flat_map(|p| {
                let settings = p.results.iter().flat_map(|r| r.settings.keys());
                p.params
                    .keys()
                    .chain(settings)
                    .map(|k| (p.workload.as_str(), p.test.as_str(), k.as_str()))
            })
            .filter(|(_, _, k)| *k != "tests" && *k != "latency_thresholds")
            .collect();
        for (wl, test, k) in knobs {
            let mut values: Vec<String> = Vec::new();
            for p in points.iter().filter(|p| p.workload == wl && p.test == test) {
                let v = match p.setting(k) {
                    Some(v) => setting_key(k, v),
                    // Not given where its results know every setting they ran with (a
                    // closed loop's `rate`): a value of its own beside `rate=1000`.
                    None if p.knows_settings() => String::new(),
                    None => continue,
                };
                if !values.contains(&v) {
                    values.push(v);
                }
            }
            let key = (wl.to_string(), k.to_string());
            if values.len() > 1 && !out.contains(&key) {
                out.push(key);
            }
        }
    }
    out
}

/// `kv get pipeline=16`: the workload, the test and the swept parameters' values.
fn point_key(p: &crate::derive::Point, swept: &[(String, String)]) -> String {
    let mut key = format!("{} {}", p.workload, p.test);
    for (wl, k) in swept {
        if *wl == p.workload {
            // Its effective value where it was not given: a run at the default pipeline 1
            // meets the other side's `pipeline=1`.
            if let Some(v) = p.setting(k) {
                key.push_str(&format!(" {k}={}", setting_key(k, v)));
            }
        }
    }
    key
}

/// Figures compared beside a headline, each with whether higher is better: TPC-C's NOPM
/// and TPM, whichever leads; a UDP test's packets/s, loss and jitter.
fn companions(headline: &str) -> &'static [(&'static str, bool)] {
    match headline {
        "nopm" => &[("tpm", true)],
        "tpm" => &[("nopm", true)],
        // The iperf3 study's UDP figures beside Gbit/s (a TCP test has none of them):
        // compare showed Gbit/s and CPU alone (acceptance pass J, 11).
        "throughput_gbit_per_s" => &[
            ("packets_per_s", true),
            ("loss_pct", false),
            ("jitter_ms", false),
        ],
        _ => &[],
    }
}

/// Whether a compared figure is a share of something, in % (of requests over a latency
/// threshold, of UDP datagrams lost): its difference is stated in percentage points,
/// 28.3% to 41.8% loss is +13.5 pts (a relative +47.5% was shown, acceptance pass K, 10).
fn is_share(metric: &str, unit: &str) -> bool {
    unit == "%" || metric.starts_with("pct_over_")
}

/// A companion figure in the unit the report's tables show it in, where that is not the
/// stored one: UDP jitter in us, as the network table's "Jitter us" column (compare gave
/// 0.00117 ms beside the report's 1.17). (stored name, shown name, unit, factor)
const SHOWN_AS: &[(&str, &str, &str, f64)] = &[("jitter_ms", "jitter_us", "us", 1e3)];

/// CPU per unit of the headline on the system under test, microseconds: every CPU of a
/// host that ran no load generator ([`crate::derive::sut_cpu`])...
const CPU_PER: &str = "cpu_us_per_";
/// ... or the watched server processes' CPU, on a host that also ran the load generator...
const SERVER_CPU_PER: &str = "server_cpu_us_per_";
/// ... or the CPU of the process the work runs in (crypto, mem).
const WORK_CPU_PER: &str = "work_cpu_us_per_";
/// Every basis's prefix, with whose CPU it counts.
const CPU_PER_BASES: [(&str, &str); 3] = [
    (SERVER_CPU_PER, "the server processes' CPU"),
    (WORK_CPU_PER, "the CPU of the process the work runs in"),
    (CPU_PER, "every CPU of the SUT host"),
];

/// A rate's unit as what it counts and its seconds (`ops/s`: `ops`, 1; TPC-C's
/// `new orders/min`: `new orders`, 60); None for a unit that is no rate.
fn rate_of(unit: &str) -> Option<(&str, f64)> {
    [("/s", 1.0), ("/min", 60.0)]
        .iter()
        .find_map(|(per, secs)| Some((unit.strip_suffix(per)?, *secs)))
}

/// The name of the CPU-per-unit figure of a headline in `unit` (a rate, [`rate_of`]): per
/// what the rate counts, so a net test's is per Gbit and crypto's per sign, never "per
/// op" of a figure that counts no operations (`cpu_us_per_op`, `server_cpu_us_per_Gbit`,
/// `cpu_us_per_sign`, `cpu_us_per_MB`, `server_cpu_us_per_new_order`).
fn cpu_per(basis: &CpuBasis, unit: &str) -> String {
    let what = rate_of(unit).map_or(unit, |(what, _)| what);
    // A plural count reads singular (`ops`, `signs`, `verifies`, `replies`, `new
    // orders`); units (`Gbit`, `MB`) are no plurals.
    let lower = what.len() > 2 && what.chars().all(|c| c.is_ascii_lowercase() || c == ' ');
    let one = match (what.strip_suffix("ies"), what.strip_suffix('s')) {
        (Some(stem), _) if lower => format!("{stem}y"),
        (None, Some(stem)) if lower => stem.to_string(),
        _ => what.to_string(),
    };
    let prefix = match basis {
        CpuBasis::Host => CPU_PER,
        CpuBasis::ServerProcesses(_) => SERVER_CPU_PER,
        CpuBasis::WorkProcess => WORK_CPU_PER,
    };
    format!("{prefix}{}", one.replace(' ', "_"))
}

/// Whether `m` is a CPU-per-unit figure: its basis's prefix and whose CPU it counts, and
/// what follows the prefix (the unit it is per).
fn cpu_per_basis(m: &str) -> Option<(&'static str, &'static str, &str)> {
    CPU_PER_BASES
        .iter()
        .find_map(|(prefix, whose)| Some((*prefix, *whose, m.strip_prefix(prefix)?)))
}

/// One figure of a repetition: (metric, unit, higher is better, value or why it is
/// missing).
type FigureOf = (String, String, bool, Result<f64, String>);

/// The figures of one repetition: its headline and companions, each per-watt one with
/// the throughput and watts it divides (a levels test's: a side's figure is their means'
/// ratio, as the load test's perf/W is, not the mean of each run's ratio). Its latency
/// percentiles and shares over thresholds are not among them: they are the run's
/// ([`latency_of`]); nor what it cost, the point's ([`power_of`], [`cpu_of`]).
fn figures_of(r: &model::ResultRecord) -> Vec<(FigureOf, Option<(f64, f64)>)> {
    let mut out = Vec::new();
    let Some(head) = r.headline_value() else {
        return out;
    };
    let unit = r
        .metric(&r.headline, &[])
        .map(|m| crate::derive::display_unit(&r.headline, &m.unit))
        .unwrap_or_default();
    let head_terms = (r.headline == LEVELS_PER_W)
        .then(|| levels_sums(r))
        .flatten();
    out.push((
        (
            r.headline.clone(),
            unit.clone(),
            crate::derive::higher_is_better(&r.headline, &unit),
            Ok(head),
        ),
        head_terms,
    ));
    // The figure read beside the headline (HammerDB's users read NOPM and TPM together).
    for &(other, higher) in companions(&r.headline) {
        if let Some(m) = r.metric(other, &[]) {
            match SHOWN_AS.iter().find(|s| s.0 == other) {
                Some(&(_, name, unit, factor)) => out.push((
                    (
                        name.to_string(),
                        unit.to_string(),
                        higher,
                        Ok(m.value * factor),
                    ),
                    None,
                )),
                None => {
                    let unit = crate::derive::display_unit(other, &m.unit);
                    out.push(((other.to_string(), unit, higher, Ok(m.value)), None));
                }
            }
        }
    }
    // A capacity test is a curve of steps at different offered rates: its headline (the
    // saturation or peak rate, the rate meeting the objective, SPECpower's ops/s/W) is
    // compared, and the curve where two runs can meet on it; its latency, CPU and power
    // over every step together are not.
    if let Some(phase) = crate::derive::capacity_phase(r) {
        out.extend(curve_of(r, phase));
        return out;
    }
    out
}

/// What the system under test spent at a sweep point: CPU per unit of its headline's rate
/// (named by whose CPU it counts, so a host's and its server processes' are never set
/// against each other), with the CPU and the throughput it divides: the point's mean CPU
/// over its mean throughput, as the report's %CPU per unit is, and a side of several runs
/// their means' ratio (it was each repetition's ratio, averaged: 7.5 CPU us per op
/// beside the report's 6.67 for one run of 100k and 200k ops/s at 100%). None for a
/// capacity test (its CPU is every step's) or a headline that is no rate.
fn cpu_of(p: &crate::derive::Point) -> Option<(FigureOf, Option<(f64, f64)>)> {
    if p.capacity_phase().is_some() {
        return None;
    }
    let unit = p.headline_unit();
    let (_, secs) = rate_of(&unit)?;
    if p.headline()?.mean <= 0.0 {
        return None;
    }
    // A test of phases one after another (mem's 1 and all threads, crypto's buffer
    // sizes): its CPU is over all of them, its headline one phase's; the report gives no
    // such figure, and compare gave one (a 16-thread triad's CPU per GB read half its
    // own, the 1-thread phase's CPU in it).
    let cpu = match p.phases() {
        Some(why) => Err(why),
        None => p.cpu_terms(),
    };
    Some(match cpu {
        // The CPU and throughput of the same repetitions, as the report's.
        Ok((c, Some((pct, perf)))) if perf > 0.0 => {
            let (us, perf) = (pct / 100.0 * 1e6, perf / secs);
            (
                (
                    cpu_per(&c.basis, &unit),
                    CPU_US.into(),
                    false,
                    Ok(us / perf),
                ),
                Some((us, perf)),
            )
        }
        Ok((c, _)) => (
            (
                cpu_per(&c.basis, &unit),
                CPU_US.into(),
                false,
                Err("no repetition has both a throughput above zero and a %CPU used".into()),
            ),
            None,
        ),
        Err(why) => (
            (
                // Named by whose CPU the point counts, where it counts one (a phased
                // test's CPU is counted, just not per unit): crypto's sha256 read
                // `cpu_us_per_MB` beside its siblings' `work_cpu_us_per_sign`. A point with
                // no CPU at all has no basis to say, and takes the host's.
                cpu_per(
                    &p.cpu_terms().map_or(CpuBasis::Host, |(c, _)| c.basis),
                    &unit,
                ),
                CPU_US.into(),
                false,
                Err(why),
            ),
            None,
        ),
    })
}

/// The unit of a CPU per unit of throughput: microseconds of CPU (`126,050 CPU us` per
/// Gbit), not of time (acceptance N, 4: it read "126,050 us").
const CPU_US: &str = "CPU us";

/// A capacity test's curve, point by point where two runs can meet on it: each load
/// level's reply rate, p99, power and perf/W (`level 100%`, of each run's own capacity),
/// and each ramp step's reply rate and p99 at its demanded rate (a rate both ramps
/// demanded). A search's probes are at rates of its own, and its answer is its headline.
/// Two capacity runs compared on their headlines alone hid the curves a planner compares
/// (acceptance pass E, 9).
fn curve_of(r: &model::ResultRecord, phase: &str) -> Vec<(FigureOf, Option<(f64, f64)>)> {
    let rate_unit = r
        .metrics
        .iter()
        .find(|m| m.name == "reply_rate_per_s")
        .map(|m| crate::derive::display_unit("reply_rate_per_s", &m.unit))
        .unwrap_or_default();
    let by = match phase {
        "levels" => "level",
        "ramp" => "step",
        _ => return Vec::new(),
    };
    let mut points: BTreeMap<&str, Vec<&model::Metric>> = BTreeMap::new();
    for m in r
        .metrics
        .iter()
        .filter(|m| m.labels.get("phase").map(String::as_str) == Some(phase))
    {
        if let Some(at) = m.labels.get(by) {
            points.entry(at.as_str()).or_default().push(m);
        }
    }
    let mut out = Vec::new();
    for (at, ms) in points {
        let get = |n: &str| ms.iter().find(|m| m.name == n).map(|m| m.value);
        let demanded = get("demanded_rate_per_s").unwrap_or(0.0);
        if at == "active_idle" || demanded <= 0.0 {
            continue;
        }
        let prefix = match phase {
            "levels" => format!("level {at}:"),
            _ => format!("at {} {rate_unit} demanded:", crate::fmt::num(demanded)),
        };
        let mut add = |what: String, unit: &str, hib: bool, v: Option<f64>| {
            if let Some(v) = v {
                out.push((
                    (format!("{prefix} {what}"), unit.to_string(), hib, Ok(v)),
                    None,
                ));
            }
        };
        // A ramp step's rate as its verdict was judged and its table shows it (over the
        // seconds its requests fell due in, when they went out on time); a level's every
        // reply (its perf/W counts those that were not errors).
        let rate = match phase {
            "ramp" => crate::views::served_rate_of(get),
            _ => get("reply_rate_per_s"),
        };
        add("reply rate".into(), &rate_unit, true, rate);
        add("p99".into(), "ns", false, get("latency_p99_ns"));
        if phase == "levels" {
            add(POWER.into(), "W", false, get(POWER));
            if let (Some(v), Some(w)) = (get("reply_rate_per_w"), get(POWER)) {
                let unit = format!("{rate_unit}/W");
                let name = format!("{prefix} {rate_unit} per W");
                // The replies that were not errors, as the figure counts them.
                out.push(((name, unit, true, Ok(v)), Some((v * w, w))));
            }
        }
    }
    out
}

/// A levels test's loaded levels' replies per second that were not errors summed (each
/// level's per-watt figure times its watts), and every level's power summed with active
/// idle's: what SPECpower's overall figure ([`LEVELS_PER_W`]) divides (the engine's
/// `overall_per_w`). None where a level has no power.
fn levels_sums(r: &model::ResultRecord) -> Option<(f64, f64)> {
    let levels = r
        .metrics
        .iter()
        .filter(|m| m.labels.get("phase").map(String::as_str) == Some("levels"));
    let (mut ops, mut watts) = (0.0, 0.0);
    let mut at: BTreeMap<&str, (Option<f64>, Option<f64>)> = BTreeMap::new();
    for m in levels {
        let Some(level) = m.labels.get("level") else {
            continue;
        };
        let e = at.entry(level.as_str()).or_default();
        match m.name.as_str() {
            "reply_rate_per_w" => e.0 = Some(m.value),
            POWER => e.1 = Some(m.value),
            _ => {}
        }
    }
    for (level, (per_w, w)) in at {
        let w = w?;
        watts += w;
        if level != "active_idle" {
            ops += per_w? * w;
        }
    }
    (watts > 0.0).then_some((ops, watts))
}

/// The source of a levels test's power, named as a load test's is ([`power_of`]): its
/// levels' `power_w` source and scope, with a declared model's watts.
fn levels_source(r: &model::ResultRecord, run: &RunRecord) -> Option<String> {
    let m = r
        .metrics
        .iter()
        .find(|m| m.name == POWER && m.labels.get("phase").map(String::as_str) == Some("levels"))?;
    let label = |k: &str| m.labels.get(k).map_or("", String::as_str);
    Some(model::power_source_named(
        run,
        label("source"),
        label("scope"),
        label("source").starts_with("model"),
    ))
}

/// Whether `figure` is a levels test's, over its levels' power (its headline, or one
/// level's power or perf/W): it carries their basis ([`levels_basis`]).
fn over_levels_power(figure: &str) -> bool {
    figure == LEVELS_PER_W
        || (figure.starts_with("level ") && (figure.ends_with(POWER) || figure.ends_with(" per W")))
}

/// The power figure's name, one for every basis so that its rows line up; the basis is
/// carried beside it ([`Figure::basis`]) and said in the row.
const POWER: &str = "power_w";

/// A run's power at one sweep point, by the one rule the results table uses
/// ([`crate::derive::Point::power`]: [`model::power::headline`], over the valid
/// repetitions whose figure has the first one's source).
struct RunPower {
    basis: PowerBasis,
    /// `ipmi-dcmi system`.
    source: String,
    /// The measured host, when it also ran the load generator.
    with_loadgen: Option<String>,
    /// Its power, and its perf/W with the throughput and watts that it divides.
    figures: Vec<(FigureOf, Option<(f64, f64)>)>,
}

/// A run's power at one sweep point and its perf/W ([`RunPower`]); None without power or
/// for a capacity test.
fn power_of(p: &crate::derive::Point) -> Option<RunPower> {
    if p.capacity_phase().is_some() {
        return None;
    }
    let power = p.power().ok()?;
    let mut figures = vec![((POWER.into(), "W".into(), false, Ok(power.watts)), None)];
    let perf_per_w = p.efficiency().and_then(|e| e.perf_per_w.ok());
    if let (Some(perf_per_w), Some(terms)) = (perf_per_w, p.per_watt_terms()) {
        // Latency per watt is no efficiency.
        if p.higher_is_better() {
            let unit = p.headline_unit();
            figures.push((
                (
                    format!("{unit} per W"),
                    format!("{unit}/W"),
                    true,
                    Ok(perf_per_w),
                ),
                Some(terms),
            ));
        }
    }
    Some(RunPower {
        basis: power.basis,
        source: power.source,
        with_loadgen: power.shared_with_loadgen,
        figures,
    })
}

/// A levels test's headline: its loaded levels' replies over their and active idle's
/// power, SPECpower's overall figure.
const LEVELS_PER_W: &str = "overall_reply_rate_per_w";

/// The power basis of a levels test's per-watt headline, from its levels' `power_w`
/// (labelled with the figure's source and scope): None for another test or a levels
/// test without power, an error when its levels' power is of unlike bases (a figure
/// over unlike power is set against nothing).
fn levels_basis(r: &model::ResultRecord) -> Result<Option<PowerBasis>, String> {
    if r.capacity_phase() != Some("levels") {
        return Ok(None);
    }
    let mut bases = r.metrics.iter().filter(|m| m.name == POWER).map(|m| {
        let label = |k: &str| m.labels.get(k).map_or("", String::as_str);
        PowerBasis::of(
            label("source").starts_with("model"),
            label("scope") == "whole_system",
        )
    });
    let Some(first) = bases.next() else {
        return Ok(None);
    };
    if bases.all(|b| b == first) {
        Ok(Some(first))
    } else {
        Err(
            "its levels' power came from unlike sources (whole server, modelled, components)"
                .into(),
        )
    }
}

/// The verdict of a figure derived from modelled power on both sides: its difference is
/// shown, no interval or significance.
pub const MODELLED_VERDICT: &str =
    "modelled, not measured: no significance verdict (the watts are what the declared power models give, not readings)";

/// A side's cell with its basis inside its count's parentheses (`200 W (1 run,
/// MODELLED)`); a cell with no figure (`-`) as it is.
fn with_side_basis(cell: String, basis: &Option<String>) -> String {
    match (basis, cell.strip_suffix(')')) {
        (Some(b), Some(open)) => format!("{open}, {b})"),
        _ => cell,
    }
}

/// A side's cell led by `≥ ` where its figure is a lower bound (`≥ 2,000 ops/s (1
/// run)`); a cell with no figure (`-`) as it is.
fn at_least(cell: String, bound: bool) -> String {
    if bound && cell != "-" {
        format!("≥ {cell}")
    } else {
        cell
    }
}

/// A side's power bases as its cell says them where the sides' differ: the summary's
/// tags (`MODELLED`, `component only`), and `measured` said too, since beside a
/// tagged figure an untagged one reads as of the same kind.
fn side_bases(bases: &[PowerBasis]) -> Option<String> {
    let words: Vec<&str> = bases
        .iter()
        .map(|b| b.tag().unwrap_or("measured"))
        .collect();
    (!words.is_empty()).then(|| words.join(" and "))
}

/// How a row names a power figure of one basis: as the summary tags it, measured whole
/// server untagged.
fn with_basis(metric: &str, basis: PowerBasis) -> String {
    match basis.tag() {
        None => metric.to_string(),
        Some(tag) => format!("{metric} ({tag})"),
    }
}

/// A run's latency figures at one sweep point, each read once from `m`, its valid
/// repetitions' histograms merged exactly as the results table takes them
/// ([`crate::derive::Point::latency`]: one kind, an open loop's corrected view never
/// blended with its service view; none for a capacity test). Never the mean of each
/// repetition's percentiles: three repetitions with maxima of 2, 40 and 3 ms have a
/// maximum of 40 ms, not 15.
fn latency_of(m: &hdrhistogram::Histogram<u64>) -> Vec<FigureOf> {
    let mut out: Vec<FigureOf> = [
        ("latency_p50_ns", 0.50),
        ("latency_p90_ns", 0.90),
        ("latency_p99_ns", 0.99),
        ("latency_p99.9_ns", 0.999),
    ]
    .into_iter()
    .map(|(name, q)| {
        (
            name.into(),
            "ns".into(),
            false,
            Ok(m.value_at_quantile(q) as f64),
        )
    })
    .collect();
    out.push((
        "latency_max_ns".into(),
        "ns".into(),
        false,
        Ok(m.max() as f64),
    ));
    out.push(("latency_mean_ns".into(), "ns".into(), false, Ok(m.mean())));
    out
}

/// The share of a run's operations over each latency threshold its repetitions report
/// (`latency_pct_over{over=1ms}`, of `kind`, over all operations), read from its merged
/// histogram `m` as its percentiles are: the mean of each repetition's share weighs a
/// short repetition as much as a long one.
fn pct_over_of(
    valid: &[&model::ResultRecord],
    kind: &str,
    m: &hdrhistogram::Histogram<u64>,
) -> Vec<FigureOf> {
    let mut over: Vec<&str> = Vec::new();
    for r in valid {
        for x in r.metrics.iter().filter(|x| {
            x.name == "latency_pct_over"
                && x.labels.get("kind").is_none_or(|k| k == kind)
                && x.labels.get("txn").is_none_or(|t| t == "all")
                && !x.labels.contains_key("db")
        }) {
            if let Some(t) = x.labels.get("over").filter(|t| !over.contains(&t.as_str())) {
                over.push(t);
            }
        }
    }
    over.into_iter()
        .filter_map(|t| {
            let ns = threshold_ns(t)?;
            Some((
                format!("pct_over_{t}"),
                "%".into(),
                false,
                Ok(crate::charts::pct_over(m, ns)),
            ))
        })
        .collect()
}

/// A threshold label as the engine writes it (`500ns`, `360us`, `1ms`, `2s`) in ns.
fn threshold_ns(label: &str) -> Option<u64> {
    let (num, mult) = [
        ("ns", 1),
        ("us", 1_000),
        ("ms", 1_000_000),
        ("s", 1_000_000_000),
    ]
    .into_iter()
    .find_map(|(suffix, mult)| label.strip_suffix(suffix).map(|n| (n, mult)))?;
    num.parse::<u64>().ok()?.checked_mul(mult)
}

/// What one side gives the comparison: per sweep point and figure, each run's values;
/// per sweep point, the warning codes of its valid results.
struct Gathered {
    figures: BTreeMap<(String, String), Figure>,
    warnings: BTreeMap<String, BTreeSet<String>>,
    /// Per sweep point none of whose repetitions counts (on any run of the side): why
    /// (`its only repetition is interrupted (partial)`). Such a point has no figures,
    /// and must not read as one the side never ran.
    uncounted: BTreeMap<String, String>,
    /// Per sweep point and figure its valid results say is missing: why (a search that
    /// met its objective at no rate tried has no answer, and says why).
    missing: BTreeMap<(String, String), String>,
    /// Per sweep point, its valid results' headline metric.
    headline_of: BTreeMap<String, String>,
    /// Per sweep point of levels whose 100% was a lower bound of the capacity
    /// (`capacity_a_bound`): that warning's message. Its levels are not those shares of
    /// the server's capacity, and none of its figures is set against another's.
    levels_of_a_bound: BTreeMap<String, String>,
}

/// Per sweep point and figure: each run's values (one per repetition, or one for the
/// run where the figure is the run's, as its latency is); and per sweep point, the
/// warning codes of the valid results at it (invalid ones are not compared at all).
fn gather(runs: &[RunRecord], swept: &[(String, String)]) -> Gathered {
    let mut out: BTreeMap<(String, String), Figure> = BTreeMap::new();
    let mut warnings: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut at_point: BTreeMap<String, Vec<&model::ResultRecord>> = BTreeMap::new();
    let mut headline_of: BTreeMap<String, String> = BTreeMap::new();
    let mut missing: BTreeMap<(String, String), String> = BTreeMap::new();
    let mut levels_of_a_bound: BTreeMap<String, String> = BTreeMap::new();
    for (i, run) in runs.iter().enumerate() {
        for p in points(i, run) {
            let key = point_key(&p, swept);
            at_point
                .entry(key.clone())
                .or_default()
                .extend(p.results.iter().copied());
            let latency = p.latency();
            let valid = p.valid();
            for m in valid.iter().flat_map(|r| &r.missing) {
                missing
                    .entry((key.clone(), m.name.clone()))
                    .or_insert_with(|| m.reason.clone());
            }
            if let Some(f) = valid
                .iter()
                .flat_map(|r| &r.flags)
                .find(|f| f.code == "capacity_a_bound")
            {
                levels_of_a_bound
                    .entry(key.clone())
                    .or_insert_with(|| f.message.clone());
            }
            if let Some(r) = valid.first() {
                headline_of.insert(key.clone(), r.headline.clone());
            }
            warnings.entry(key.clone()).or_default().extend(
                valid
                    .iter()
                    .flat_map(|r| &r.flags)
                    .filter(|f| f.severity == model::Severity::Warning)
                    .map(|f| f.code.clone()),
            );
            // Each figure with its power basis, for those that have one (a levels test's
            // headline is per watt: of its levels' power). A headline only some of the
            // run's repetitions made is none of the run's.
            let some_only = model::headline_of_some_repetitions(&valid);
            let per_rep = valid.iter().flat_map(|r| {
                let basis = levels_basis(r);
                let source = levels_source(r, p.run);
                let some_only = some_only.clone();
                figures_of(r).into_iter().map(move |(f, terms)| {
                    if let (Some(why), true) = (&some_only, f.0 == r.headline) {
                        return ((f.0, f.1, f.2, Err(why.clone())), None, None);
                    }
                    // Terms only where they give the figure stored (one stored before
                    // its rule changed keeps its runs' mean).
                    let gives = |(n, d): &(f64, f64)| {
                        matches!(&f.3, Ok(v) if (n / d - v).abs() <= 1e-9 * v.abs())
                    };
                    let terms = terms.filter(gives);
                    match (&basis, over_levels_power(&f.0)) {
                        // Its levels' source, as a load test's power is named: two models
                        // (or meters) are never one figure.
                        (Ok(b), true) => (f, *b, Some((source.clone(), terms))),
                        // Over unlike power: no figure to set against another.
                        (Err(why), true) => ((f.0, f.1, f.2, Err(why.clone())), None, None),
                        (_, false) => (f, None, terms.map(|t| (None, Some(t)))),
                    }
                })
            });
            let latency = latency
                .iter()
                .flat_map(|(kind, _, m)| {
                    latency_of(m)
                        .into_iter()
                        .chain(pct_over_of(&valid, kind, m))
                })
                .map(|f| (f, None, None));
            let power = power_of(&p);
            let with_loadgen = power.as_ref().and_then(|pw| {
                let metrics: Vec<String> = pw.figures.iter().map(|(f, _)| f.0.clone()).collect();
                Some((pw.with_loadgen.clone()?, metrics))
            });
            let power = power.into_iter().flat_map(|pw| {
                let (basis, source) = (pw.basis, pw.source);
                pw.figures
                    .into_iter()
                    .map(move |(f, terms)| (f, Some(basis), Some((Some(source.clone()), terms))))
            });
            let cpu = cpu_of(&p).map(|(f, terms)| (f, None, Some((None, terms))));
            let figures = per_rep.chain(latency).chain(power).chain(cpu);
            // Each figure with its power basis, and a power source and the terms of a
            // ratio of means where it has them.
            for ((metric, unit, hib, v), basis, source_terms) in figures {
                if v.as_ref().is_ok_and(|v| !v.is_finite()) {
                    continue;
                }
                let f = out.entry((key.clone(), metric)).or_insert_with(|| Figure {
                    unit,
                    higher_is_better: hib,
                    per_run: BTreeMap::new(),
                    missing: Vec::new(),
                    basis: BTreeMap::new(),
                    sources: BTreeMap::new(),
                    with_loadgen: BTreeMap::new(),
                    terms: BTreeMap::new(),
                    bounds: BTreeMap::new(),
                });
                if let Some(b) = basis {
                    f.basis.insert(i, b);
                }
                match v {
                    Ok(v) => {
                        f.per_run.entry(i).or_default().push(v);
                        if let Some((source, terms)) = source_terms {
                            if let Some(source) = source {
                                f.sources.insert(i, source);
                            }
                            if let Some(t) = terms {
                                f.terms.entry(i).or_default().push(t);
                            }
                        }
                    }
                    Err(why) if !f.missing.contains(&why) => f.missing.push(why),
                    Err(_) => {}
                }
            }
            for r in &valid {
                if let (Some(why), Some(f)) = (
                    r.headline_lower_bound(),
                    out.get_mut(&(key.clone(), r.headline.clone())),
                ) {
                    f.bounds.entry(i).or_insert(why);
                }
            }
            if let Some((host, metrics)) = with_loadgen {
                for m in metrics {
                    if let Some(f) = out.get_mut(&(key.clone(), m)) {
                        f.with_loadgen.insert(i, host.clone());
                    }
                }
            }
        }
    }
    out.values_mut().for_each(one_source_only);
    // A side whose headline varies widely over its repetitions (its runs', where each
    // repetition is a run: `RUN@variant`) is flagged as the report flags a point
    // (acceptance P, 3: only the report said so).
    for ((key, metric), f) in &out {
        if headline_of.get(key) != Some(metric) {
            continue;
        }
        let all: Vec<f64> = f.per_run.values().flatten().copied().collect();
        if model::unsteady_cv(&all).is_some() {
            warnings
                .entry(key.clone())
                .or_default()
                .insert("high_variation".into());
        }
    }
    let uncounted = at_point
        .into_iter()
        .filter_map(|(k, rs)| Some((k, model::none_counted_because(&rs, "repetition")?)))
        .collect();
    Gathered {
        figures: out,
        warnings,
        uncounted,
        missing,
        headline_of,
        levels_of_a_bound,
    }
}

/// A p-value to 3 significant digits, and to as many more as it takes to show which side
/// of 0.05 it is on: to 3 decimals, p=0.0497 read "significant, p=0.050" and p=0.0503
/// "no significant difference (p=0.050)".
fn p_text(p: f64) -> String {
    if p < 0.001 {
        return "p<0.001".to_string();
    }
    let mut digits = if p < 0.1 {
        (2.0 - p.log10().floor()) as usize
    } else {
        3
    };
    let mut s = format!("{p:.digits$}");
    while digits < 9 && (s.parse::<f64>().unwrap_or(p) < 0.05) != (p < 0.05) {
        digits += 1;
        s = format!("{p:.digits$}");
    }
    format!("p={s}")
}

/// The difference of B against A, judged on run means (the unit of replication).
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    pub a: Option<Sample>,
    pub b: Option<Sample>,
    pub diff_pct: Option<f64>,
    pub ci95_pct: Option<(f64, f64)>,
    /// b - a in the figure's own unit, and its 95% CI (Welch's, or paired over
    /// interleaved variants).
    pub diff_abs: Option<f64>,
    pub ci95_abs: Option<(f64, f64)>,
    pub p_value: Option<f64>,
    pub verdict: String,
}

impl Judged {
    /// No difference: its figures are not set against each other, as `verdict` says.
    fn withdrawn(&mut self, verdict: String) {
        self.diff_pct = None;
        self.ci95_pct = None;
        self.diff_abs = None;
        self.ci95_abs = None;
        self.p_value = None;
        self.verdict = verdict;
    }
}

/// Each run's value: the mean of its repetitions (the unit of replication is the run).
fn run_means(runs: &[Vec<f64>]) -> Vec<f64> {
    runs.iter().filter_map(|r| crate::stats::mean(r)).collect()
}

/// Judge B against A from each side's runs (each inner list one run's repetitions).
pub fn judge(a_runs: &[Vec<f64>], b_runs: &[Vec<f64>], higher_is_better: bool) -> Judged {
    judge_samples(
        Sample::of(&run_means(a_runs)),
        Sample::of(&run_means(b_runs)),
        reps_inside(a_runs) || reps_inside(b_runs),
        higher_is_better,
        false,
        None,
    )
}

/// Where a side's runs are one run's interleaved repetitions of a variant
/// (`RUN@VARIANT`, [`variant_runs`]): each one's run and repetition, by which B's is set
/// beside A's. None for a side of any other run.
fn interleaved(runs: &[RunRecord]) -> Option<Vec<(&str, u32)>> {
    runs.iter()
        .map(|r| {
            let variant = r.hosts.iter().any(|h| h.facts.contains_key(VARIANT_FACT));
            let rep = r.results.first()?.repetition;
            (variant && r.results.iter().all(|x| x.repetition == rep))
                .then_some((r.id.as_str(), rep))
        })
        .collect()
}

/// The pairs of a figure two variants of one run gave at the same repetition (`ka`,
/// `kb`: each side's runs' [`interleaved`] keys): each run's value (its one
/// repetition's) on A and on B. None unless every run of each side has its partner
/// and there are two pairs or more; never for a ratio of means (perf/W, CPU per unit),
/// whose interval is the delta method's over each side.
fn pairs_of(
    fa: &Figure,
    fb: &Figure,
    ka: &[(&str, u32)],
    kb: &[(&str, u32)],
) -> Option<Vec<(f64, f64)>> {
    if !fa.terms.is_empty() || !fb.terms.is_empty() || fa.per_run.len() != fb.per_run.len() {
        return None;
    }
    let pairs: Vec<(f64, f64)> = fa
        .per_run
        .iter()
        .map(|(i, va)| {
            let j = kb.iter().position(|k| Some(k) == ka.get(*i))?;
            Some((
                crate::stats::mean(va)?,
                crate::stats::mean(fb.per_run.get(&j)?)?,
            ))
        })
        .collect::<Option<_>>()?;
    (pairs.len() >= 2).then_some(pairs)
}

/// Some run of these has several repetitions (which do not count as replications).
fn reps_inside<'a>(runs: impl IntoIterator<Item = &'a Vec<f64>>) -> bool {
    runs.into_iter().any(|r| r.len() > 1)
}

/// [`judge`] of each side's figure over its runs (`sa`, `sb`, each of n runs), the
/// verdict's direction read off the difference in the figure's own unit when `points`
/// (a share in %: 0% against 11% is a difference of 11 points, where a relative one has
/// no value); `reps_inside`: some run of either side has several repetitions. With
/// `pairs` ([`pairs_of`]), the test is the paired one over them, else Welch's.
fn judge_samples(
    sa: Option<Sample>,
    sb: Option<Sample>,
    reps_inside: bool,
    higher_is_better: bool,
    points: bool,
    pairs: Option<Vec<(f64, f64)>>,
) -> Judged {
    let n = |s: &Option<Sample>| s.as_ref().map_or(0, |s| s.n);
    let diff_pct = match (&sa, &sb) {
        (Some(x), Some(y)) if x.mean != 0.0 => Some(100.0 * (y.mean - x.mean) / x.mean),
        // Zero on both sides (no request over a threshold): the same, not a missing figure.
        (Some(x), Some(y)) if x.mean == 0.0 && y.mean == 0.0 => Some(0.0),
        _ => None,
    };
    let w = match (&pairs, &sa, &sb) {
        (Some(p), _, _) => paired_t(p),
        (None, Some(x), Some(y)) => welch(x, y),
        _ => None,
    };
    let runs = match &pairs {
        Some(p) => format!("{} pairs", p.len()),
        None => format!("{} vs {} runs", n(&sa), n(&sb)),
    };
    // As computed: a t-interval over two or three runs of a wide spread reaches below
    // -100% (B below zero, which no figure compared here can be); the text says so
    // ([`CompareRow::ci_text`]) rather than printing -100% as if it were the bound.
    let ci95_pct = match (&w, &sa) {
        (Some(w), Some(x)) if x.mean != 0.0 => {
            Some((100.0 * w.ci95_low / x.mean, 100.0 * w.ci95_high / x.mean))
        }
        _ => None,
    };
    let diff_abs = match (&sa, &sb) {
        (Some(x), Some(y)) => Some(y.mean - x.mean),
        _ => None,
    };
    // Likewise as computed (the text shows a bound below -A as `<-A`).
    let ci95_abs = w.as_ref().map(|w| (w.ci95_low, w.ci95_high));
    let direction = if points { diff_abs } else { diff_pct };
    let verdict = match (&w, direction) {
        (_, None) if sa.is_some() && sb.is_some() => {
            "A is zero: the difference has no percentage".to_string()
        }
        (_, None) => "no figure on one side".to_string(),
        // Every run of a side gives the same value (a percentile in one histogram bucket):
        // no spread to judge a difference by, which is no certainty either.
        (None, Some(_)) if pairs.is_some() => {
            "no spread: cannot judge (B - A is the same in every pair)".to_string()
        }
        (None, Some(_)) if matches!((&sa, &sb), (Some(x), Some(y)) if no_spread(x, y)) => {
            "no spread: cannot judge (every run of each side gives the same value)".to_string()
        }
        (None, Some(_)) => format!(
            "not enough repetitions ({} vs {} runs{})",
            n(&sa),
            n(&sb),
            if reps_inside {
                "; repetitions inside a run do not count"
            } else {
                ""
            }
        ),
        (Some(w), Some(d)) if w.p < 0.05 => {
            let better = (d > 0.0) == higher_is_better;
            format!(
                "{} (significant, {}, {runs})",
                if better { "better" } else { "worse" },
                p_text(w.p),
            )
        }
        (Some(w), Some(_)) if pairs.is_some() => {
            format!("no significant difference ({}, {runs})", p_text(w.p))
        }
        (Some(w), Some(_)) => format!("no significant difference ({})", p_text(w.p)),
    };
    Judged {
        a: sa,
        b: sb,
        diff_pct,
        ci95_pct,
        diff_abs,
        ci95_abs,
        p_value: w.map(|w| w.p),
        verdict,
    }
}

/// The results of `variant` in `run` as a run of their own, labelled `LABEL@VARIANT`,
/// with the `variant` parameter dropped so its points line up with another variant's.
/// None when the run has no such variant.
pub fn variant_run(run: &RunRecord, variant: &str) -> Option<RunRecord> {
    let mine: Vec<model::ResultRecord> = run
        .results
        .iter()
        .filter(|r| r.params.get("variant").and_then(|v| v.as_str()) == Some(variant))
        .map(|r| {
            let mut r = r.clone();
            r.params.remove("variant");
            r
        })
        .collect();
    if mine.is_empty() {
        return None;
    }
    let mut one = run.clone();
    one.label = Some(format!(
        "{}@{variant}",
        run.label.clone().unwrap_or_else(|| run.id.clone())
    ));
    one.results = mine;
    // What the variant's setup changed (a sysctl, a governor) is that host's disclosure
    // under the variant, so the variants' comparison shows the setting they differ in.
    let prefix = format!("variant.{variant}.set.");
    for h in &mut one.hosts {
        let set: Vec<(String, model::Fact)> = h
            .facts
            .iter()
            .filter_map(|(k, f)| k.strip_prefix(&prefix).map(|k| (k.to_string(), f.clone())))
            .collect();
        if !set.is_empty() {
            let keys = set
                .iter()
                .map(|(k, _)| k.as_str())
                .collect::<Vec<_>>()
                .join(",");
            h.facts
                .insert(SET_BY_VARIANT_FACT.into(), model::Fact::known(keys));
        }
        h.facts.extend(set);
        h.facts
            .insert(VARIANT_FACT.into(), model::Fact::known(variant));
    }
    Some(one)
}

/// The results of `variant` in `run`, one record per repetition: a run's variants are
/// interleaved per repetition, each with servers of its own, so each repetition is a
/// replication of its own (as a run is across runs). None when the run has no such
/// variant.
pub fn variant_runs(run: &RunRecord, variant: &str) -> Option<Vec<RunRecord>> {
    Some(per_repetition(&variant_run(run, variant)?))
}

/// A variant's results ([`variant_run`]) as one record per repetition, labelled
/// `LABEL rep N`.
fn per_repetition(all: &RunRecord) -> Vec<RunRecord> {
    let mut reps: Vec<u32> = all.results.iter().map(|r| r.repetition).collect();
    reps.sort_unstable();
    reps.dedup();
    reps.into_iter()
        .map(|rep| {
            let mut one = all.clone();
            one.label = Some(format!(
                "{} rep {}",
                all.label.as_deref().unwrap_or_default(),
                rep + 1
            ));
            one.results.retain(|r| r.repetition == rep);
            one
        })
        .collect()
}

/// The replications of a report column, for [`compare`]: a variant's column
/// ([`variant_columns`]) one per repetition, as `rackbench compare RUN@A RUN@B` takes
/// them; any other run is one.
pub fn replications(column: &RunRecord) -> Vec<RunRecord> {
    let is_variant = column
        .hosts
        .iter()
        .any(|h| h.facts.contains_key(VARIANT_FACT));
    if is_variant {
        per_repetition(column)
    } else {
        vec![column.clone()]
    }
}

/// A run as report columns: one per variant when it was measured under several (the
/// seed-003 tables put the setting's values side by side), else the run itself.
pub fn variant_columns(run: RunRecord) -> Vec<RunRecord> {
    let variants = variants_of(&run);
    if variants.len() < 2 {
        return vec![run];
    }
    variants
        .iter()
        .filter_map(|v| variant_run(&run, v))
        .collect()
}

/// The variants a run was measured under, in the order they first ran.
pub fn variants_of(run: &RunRecord) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in &run.results {
        if let Some(v) = r.params.get("variant").and_then(|v| v.as_str()) {
            if !out.iter().any(|o| o == v) {
                out.push(v.to_string());
            }
        }
    }
    out
}

/// The power bases of a figure's runs, each once.
fn bases(f: &Figure) -> Vec<PowerBasis> {
    let mut out: Vec<PowerBasis> = Vec::new();
    for b in f.basis.values() {
        if !out.contains(b) {
            out.push(*b);
        }
    }
    out
}

/// `measured, whole server`, or `... and ...` for a side whose runs differ.
fn basis_labels(bases: &[PowerBasis]) -> String {
    if bases.is_empty() {
        return "no power".to_string();
    }
    bases
        .iter()
        .map(|b| b.label())
        .collect::<Vec<_>>()
        .join(" and ")
}

/// Compare group B against group A, the baseline.
pub fn compare(a: &[RunRecord], b: &[RunRecord]) -> Comparison {
    let swept = swept_within(a, b);
    let (side_a, side_b) = (gather(a, &swept), gather(b, &swept));
    let (ga, gb) = (&side_a.figures, &side_b.figures);
    let (wa, wb) = (&side_a.warnings, &side_b.warnings);
    let mut rows = Vec::new();
    let points_of = |g: &BTreeMap<(String, String), Figure>| -> BTreeSet<String> {
        g.keys().map(|(p, _)| p.clone()).collect()
    };
    let (pa, pb) = (points_of(ga), points_of(gb));
    // Two variants of one run: the pairs of their interleaved repetitions.
    let paired_keys = interleaved(a)
        .zip(interleaved(b))
        .filter(|(ka, kb)| ka.first().map(|k| k.0) == kb.first().map(|k| k.0));
    let keys: BTreeSet<&(String, String)> = ga.keys().chain(gb.keys()).collect();
    // Per measured host that also ran the load generator, the sides it did so on.
    let mut with_loadgen: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
    for (g, side) in [(ga, "A"), (gb, "B")] {
        for host in g.values().flat_map(|f| f.with_loadgen.values()) {
            with_loadgen.entry(host.clone()).or_default().insert(side);
        }
    }
    for key in keys {
        let (fa, fb) = match (ga.get(key), gb.get(key)) {
            (Some(fa), Some(fb)) => (fa, fb),
            // A figure one side has and the other not is said, never left out.
            (Some(f), None) => {
                rows.extend(one_sided_row(key, f, "A", "B", &side_b, &pb));
                continue;
            }
            (None, Some(f)) => {
                rows.extend(one_sided_row(key, f, "B", "A", &side_a, &pa));
                continue;
            }
            (None, None) => continue,
        };
        // A share, in % (of requests over a threshold, of datagrams lost): its
        // difference in points.
        let share = is_share(&key.1, &fa.unit);
        let mut j = judge_samples(
            side_sample(fa),
            side_sample(fb),
            reps_inside(fa.per_run.values()) || reps_inside(fb.per_run.values()),
            fa.higher_is_better,
            share,
            paired_keys
                .as_ref()
                .and_then(|(ka, kb)| pairs_of(fa, fb, ka, kb)),
        );
        // A figure that could not be had on a side says why, rather than being left out.
        let why = |f: &Figure| (f.per_run.is_empty()).then(|| f.missing.join("; "));
        match (why(fa), why(fb)) {
            (Some(a), Some(b)) if a == b => j.verdict = format!("missing: {a}"),
            (Some(a), Some(b)) => j.verdict = format!("missing: A: {a}; B: {b}"),
            (Some(a), None) => j.verdict = format!("missing on A: {a}"),
            (None, Some(b)) => j.verdict = format!("missing on B: {b}"),
            (None, None) => {}
        }
        // Power of one basis is set against power of the same basis only: a whole
        // server's 310 W against its CPU packages' 140 W is no saving.
        let mut metric = key.1.clone();
        let mut side_basis = (None, None);
        let (ba, bb) = (bases(fa), bases(fb));
        let missing = why(fa).is_some() || why(fb).is_some();
        match (&ba[..], &bb[..]) {
            ([], []) => {}
            ([a], [b]) if a == b => {
                metric = with_basis(&metric, *a);
                // Watts from a declared power model are the model's output, not a
                // measurement: a t-test on them judges the model (`power_w (MODELLED)`
                // read "worse (significant, p=0.003)", acceptance pass K, 8).
                if *a == PowerBasis::Modelled && !missing {
                    j.ci95_pct = None;
                    j.ci95_abs = None;
                    j.p_value = None;
                    j.verdict = MODELLED_VERDICT.to_string();
                }
            }
            // A side without the figure says why (above), not that it has no basis.
            _ if missing => {}
            _ => {
                j.withdrawn(format!(
                    "not comparable: {} vs {}",
                    basis_labels(&ba),
                    basis_labels(&bb)
                ));
                side_basis = (side_bases(&ba), side_bases(&bb));
            }
        }
        // A lower bound against a measurement, or against another bound, is no
        // difference: a search that met its objective up to its --search-max says the
        // server meets it at least there, not that the other side's figure is a loss.
        let (a_bound, b_bound) = (!fa.bounds.is_empty(), !fb.bounds.is_empty());
        if (a_bound || b_bound) && !missing {
            let why = |f: &Figure| f.bounds.values().next().cloned().unwrap_or_default();
            j.withdrawn(match (a_bound, b_bound) {
                (true, true) => format!(
                    "not compared: a lower bound on both sides (A: {}; B: {})",
                    why(fa),
                    why(fb)
                ),
                (true, false) => format!("not compared: a lower bound on A ({})", why(fa)),
                _ => format!("not compared: a lower bound on B ({})", why(fb)),
            });
        }
        // Levels whose 100% was a lower bound are loads of another scale than the other
        // side's: none of their figures is a difference of the platforms (A's 7,995 at
        // "100%" against B's 5,000 read -37.5%).
        let bound_levels: Vec<String> = [("A", &side_a), ("B", &side_b)]
            .into_iter()
            .filter(|(_, g)| g.levels_of_a_bound.contains_key(&key.0))
            .map(|(side, _)| side.to_string())
            .collect();
        if !bound_levels.is_empty() && !missing {
            j.withdrawn(format!(
                "not compared: {}'s 100% is a lower bound of its capacity (capacity_a_bound): its levels \
                 are not those shares of it",
                bound_levels.join(" and ")
            ));
        }
        rows.push(CompareRow {
            point: key.0.clone(),
            metric,
            unit: fa.unit.clone(),
            higher_is_better: fa.higher_is_better,
            a: j.a,
            b: j.b,
            diff_pct: j.diff_pct,
            ci95_pct: j.ci95_pct,
            diff_points: share.then_some(j.diff_abs).flatten(),
            ci95_points: share.then_some(j.ci95_abs).flatten(),
            p_value: j.p_value,
            verdict: j.verdict,
            a_reps: one_runs_reps(&fa.runs()),
            b_reps: one_runs_reps(&fb.runs()),
            a_basis: side_basis.0,
            b_basis: side_basis.1,
            // Marked whether or not the other side has a figure: a bound beside a
            // missing one is still a bound.
            a_bound,
            b_bound,
        });
    }
    // The headline first in each point, then latency, then cost.
    // Thresholds in the order of their values (100us, 360us, 1ms), not of their names.
    let threshold_ns = |m: &str| {
        m.strip_prefix("pct_over_")
            .and_then(|t| model::hist::parse_latency_ns(t).ok())
            .unwrap_or(0)
    };
    rows.extend(one_sided_steps(ga, gb, &pa, &pb));
    // A point both sides ran without its figure (two searches that met their objective
    // at no rate tried) has no figure on either side, and is said, not left out.
    for (key, why_a) in &side_a.missing {
        let Some(why_b) = side_b.missing.get(key) else {
            continue;
        };
        let headline = side_a.headline_of.get(&key.0);
        if pa.contains(&key.0) || pb.contains(&key.0) || headline != Some(&key.1) {
            continue;
        }
        rows.push(CompareRow::said(
            key.0.clone(),
            key.1.clone(),
            format!("missing on both sides: A: {why_a}; B: {why_b}"),
        ));
    }
    // Points in the order a reader counts them: as text, a pipeline sweep of 1, 4, 16
    // and 64 read 1, 16, 4, 64.
    rows.sort_by(|x, y| {
        crate::derive::natural_cmp(&x.point, &y.point).then_with(|| {
            let key = |r: &CompareRow| {
                (
                    metric_rank(&r.metric),
                    curve_place(&r.metric),
                    threshold_ns(&r.metric),
                    r.metric.clone(),
                )
            };
            key(x).cmp(&key(y))
        })
    });
    let compared: BTreeSet<&String> = rows.iter().map(|r| &r.point).collect();
    let mut compared: Vec<&String> = compared.into_iter().collect();
    compared.sort_by(|x, y| crate::derive::natural_cmp(x, y));
    let warnings = compared
        .into_iter()
        .filter_map(|point| {
            let side = |w: &BTreeMap<String, BTreeSet<String>>| -> Vec<String> {
                w.get(point)
                    .map_or_else(Vec::new, |c| c.iter().cloned().collect())
            };
            let (a, b) = (side(wa), side(wb));
            (!a.is_empty() || !b.is_empty()).then(|| PointWarnings {
                point: point.clone(),
                a,
                b,
                // Not run at all: a point run without figures (a search that met its
                // objective at no rate) has its warnings (it read "B: absent").
                a_absent: !wa.contains_key(point),
                b_absent: !wb.contains_key(point),
            })
        })
        .collect();
    let unfinished = [("A", a), ("B", b)]
        .into_iter()
        .flat_map(|(side, runs)| {
            runs.iter().zip(run_labels(runs)).filter_map(move |(r, l)| {
                let how = r.status.unfinished_as()?;
                Some(format!("{side}: {l}: run {how}"))
            })
        })
        .collect();
    Comparison {
        a: run_labels(a),
        b: run_labels(b),
        unfinished,
        rows,
        comparability: comparability(a, b),
        warnings,
        nothing_in_common: nothing_in_common((a, b), &pa, &pb),
        loadgen_in_power: with_loadgen
            .into_iter()
            .map(|(host, sides)| format!("{host} ({})", Vec::from_iter(sides).join(" and ")))
            .collect(),
    }
}

/// The row of a figure `f` only `side` has, at point and metric `key`; `others` is what
/// the other side gathered (its figures, its points none of whose repetitions counts and
/// its missing figures, each with why), `others_points` its points. A point the other
/// side did not run, or ran without a repetition that counts, is said once, by its
/// headline (None for its other figures); a figure the other side's results say is
/// missing is said with their reason.
fn one_sided_row(
    key: &(String, String),
    f: &Figure,
    side: &str,
    other: &str,
    others: &Gathered,
    others_points: &BTreeSet<String>,
) -> Option<CompareRow> {
    let ran = others_points.contains(&key.0);
    if !ran && metric_rank(&key.1) != 0 {
        return None;
    }
    let why = if let Some(why) = others.missing.get(key) {
        format!(
            "{other} ran it, but its {} is missing ({why}): not compared",
            key.1
        )
    } else if !ran {
        match others.uncounted.get(&key.0) {
            // A killed run has the point, interrupted (acceptance pass K, 6: "B has no
            // such point" was said of it).
            Some(w) => format!("{other} ran it, but {w}: not compared"),
            None => format!("{other} has no such point"),
        }
    } else if curve_step(&key.1).is_some() {
        // Said once for the point, with the other steps of its side ([`one_sided_steps`]).
        return None;
    } else {
        one_sided(&key.1, other, |m| {
            others.figures.contains_key(&(key.0.clone(), m.to_string()))
        })
    };
    // Power this side's runs had from different sources ([`one_source_only`]) says so,
    // beside why the other has none.
    let why = if f.per_run.is_empty() && !f.sources.is_empty() {
        format!("{why}; missing on {side}: {}", f.missing.join("; "))
    } else {
        why
    };
    let sample = side_sample(f);
    let reps = one_runs_reps(&f.runs());
    let ((a, a_reps), (b, b_reps)) = if side == "A" {
        ((sample, reps), (None, None))
    } else {
        ((None, None), (sample, reps))
    };
    // Named by its basis, as a row of both sides is (modelled power is never shown
    // untagged).
    let metric = match &bases(f)[..] {
        [b] => with_basis(&key.1, *b),
        _ => key.1.clone(),
    };
    Some(CompareRow {
        point: key.0.clone(),
        metric,
        unit: f.unit.clone(),
        higher_is_better: f.higher_is_better,
        a,
        b,
        diff_pct: None,
        ci95_pct: None,
        diff_points: None,
        ci95_points: None,
        p_value: None,
        verdict: format!("only on {side}: {why}"),
        a_reps,
        b_reps,
        a_basis: None,
        b_basis: None,
        a_bound: side == "A" && !f.bounds.is_empty(),
        b_bound: side == "B" && !f.bounds.is_empty(),
    })
}

/// A capacity curve's figure (`at 1,500 req/s demanded: p99`, `level 90%: power_w`): the
/// step it is of and what it is. The text is [`curve_of`]'s.
fn curve_step(metric: &str) -> Option<(&str, &str)> {
    (metric.starts_with("at ") || metric.starts_with("level ")).then_some(())?;
    metric.split_once(": ")
}

/// The row of a curve's steps only one side ran ([`one_sided_steps`]), after the others.
const ONE_SIDED_STEPS: &str = "steps of one side";

/// The figures [`curve_of`] gives each step, in its order.
const CURVE_FIGURES: [&str; 4] = ["reply rate", "p99", POWER, " per W"];

/// Where a curve's figure goes among its point's rows: its step in the order the test ran
/// them (a ramp's by demanded rate upward, a levels test's from 100% down), then its
/// figure in [`curve_of`]'s order; their text sorted "at 1,000" before "at 500" and
/// "level 10%" before "level 20%" (review H, 6). (0, 0) for any other figure.
fn curve_place(metric: &str) -> (i64, usize) {
    if metric == ONE_SIDED_STEPS {
        return (i64::MAX, 0);
    }
    let Some((step, what)) = curve_step(metric) else {
        return (0, 0);
    };
    let number = |t: &str| -> f64 {
        let t: String = t
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ',')
            .filter(|c| *c != ',')
            .collect();
        t.parse().unwrap_or(0.0)
    };
    let at = match step.strip_prefix("level ") {
        Some(level) => crate::views::level_rank(level),
        None => number(step.trim_start_matches("at ")),
    };
    let figure = CURVE_FIGURES
        .iter()
        .position(|f| what.starts_with(f) || what.contains(f))
        .unwrap_or(CURVE_FIGURES.len());
    ((at * 1000.0).round() as i64, figure)
}

/// The steps of a capacity curve only one side ran, at a point both ran: one row per side
/// saying which, not a row per figure of each (two ramps on different grids flooded the
/// table with "only on A" rows, review H, 6). The curve is compared where the runs meet.
fn one_sided_steps(
    ga: &BTreeMap<(String, String), Figure>,
    gb: &BTreeMap<(String, String), Figure>,
    pa: &BTreeSet<String>,
    pb: &BTreeSet<String>,
) -> Vec<CompareRow> {
    let mut out = Vec::new();
    for (side, other, mine, theirs, their_points) in
        [("A", "B", ga, gb, pb), ("B", "A", gb, ga, pa)]
    {
        let mut steps: BTreeMap<&str, BTreeSet<(i64, &str)>> = BTreeMap::new();
        for (point, metric) in mine.keys() {
            let Some((step, _)) = curve_step(metric) else {
                continue;
            };
            let met = theirs
                .keys()
                .any(|(p, m)| p == point && curve_step(m).is_some_and(|(s, _)| s == step));
            if their_points.contains(point) && !met {
                steps
                    .entry(point.as_str())
                    .or_default()
                    .insert((curve_place(metric).0, step));
            }
        }
        for (point, steps) in steps {
            let ramp = steps.iter().any(|(_, s)| s.starts_with("at "));
            let names: Vec<&str> = steps
                .iter()
                .map(|(_, s)| {
                    s.trim_start_matches("at ")
                        .trim_start_matches("level ")
                        .trim_end_matches(" demanded")
                })
                .collect();
            let listed = if names.len() > 6 {
                format!(
                    "{} ... {} ({} in all)",
                    names[..3].join(", "),
                    names[names.len() - 2..].join(", "),
                    names.len()
                )
            } else {
                names.join(", ")
            };
            let kind = if ramp { "step demanding" } else { "level" };
            out.push(CompareRow::said(
                point.to_string(),
                ONE_SIDED_STEPS.into(),
                format!("only on {side}, not compared: {other} ran no {kind} {listed}"),
            ));
        }
    }
    out
}

/// Why a point's figure is on one side only; `has` says whether the `other` side has a
/// figure of that name at the point.
fn one_sided(metric: &str, other: &str, has: impl Fn(&str) -> bool) -> String {
    match cpu_per_basis(metric) {
        Some((prefix, whose, per)) => {
            let instead = CPU_PER_BASES
                .iter()
                .filter(|(p, _)| *p != prefix)
                .map(|(p, w)| (format!("{p}{per}"), *w))
                .find(|(m, _)| has(m));
            match instead {
                Some((instead, theirs)) => format!(
                    "{other} has {instead} ({theirs}) where this side counts {whose}: not comparable"
                ),
                None => format!(
                    "{other} has no CPU per {} for the SUT",
                    per.replace('_', " ")
                ),
            }
        }
        None => match metric {
            m if m.starts_with(POWER) || m.contains(" per W") => format!("{other} has no power"),
            _ => format!("{other} has no such figure"),
        },
    }
}

/// Where a figure goes within its point: the headline, latency by percentile, the
/// threshold buckets, then what it cost.
fn metric_rank(m: &str) -> u8 {
    const LATENCY: [&str; 6] = [
        "latency_p50_ns",
        "latency_p90_ns",
        "latency_p99_ns",
        "latency_p99.9_ns",
        "latency_max_ns",
        "latency_mean_ns",
    ];
    if m.starts_with("at ") || m.starts_with("level ") || m == ONE_SIDED_STEPS {
        // A capacity test's curve, after its headline.
        5
    } else if let Some(i) = LATENCY.iter().position(|l| *l == m) {
        10 + i as u8
    } else if m.starts_with("pct_over_") {
        20
    } else if cpu_per_basis(m).is_some() {
        30
    } else if m.starts_with(POWER) {
        40
    } else if m.contains(" per W") {
        41
    } else {
        0
    }
}

/// Said once under a comparison that has rows without a verdict.
pub const REPETITIONS_NOTE: &str = "Significance is judged on runs, the unit of replication: repetitions inside one run share a server and a minute and scatter less than runs do. Give each side two runs or more: rackbench compare --a RUN,RUN --b RUN,RUN.";

/// Said under a comparison with p-values: each row is its own test, and nothing corrects
/// for how many there are (a sweep's points times some ten figures).
pub fn multiple_rows_note(tested: usize) -> String {
    format!(
        "Each of the {tested} rows with a p-value is tested on its own at p < 0.05, with no correction for the number of rows: where nothing changed, about 1 in 20 of them would still read \"significant\"."
    )
}

/// Said under a comparison with a row of several runs on a side: a ratio's side is a
/// ratio of means (a reader averaging the runs' own CPU per operation got 3.81 where the
/// row said 3.79), and a run's own tables give the percentile of its repetitions' merged
/// histograms, another figure (acceptance M, 4: a variant's p99 read 613 us here and
/// 641 us in its Results table).
pub const MEANS_OF_RUNS_NOTE: &str = "A side's figure is the mean over its runs (a variant's repetitions are its runs): a ratio (per W, CPU per operation) is the mean of its numerators over the mean of its denominators, not the mean of the runs' own ratios, and its interval is the delta method's; a latency percentile is the mean of the runs' percentiles, not the percentile of their merged histograms that a run's own tables give, and the two can differ.";

/// The comparison as aligned text for a terminal.
pub fn compare_text(c: &Comparison) -> String {
    // What a user or a host named (a run's label, a point, a disclosed fact) shown
    // escaped: a newline in a label made lines of its own.
    let p = |s: &str| model::printable(s);
    let names = |v: &[String]| v.iter().map(|n| p(n)).collect::<Vec<_>>().join(", ");
    // A is the baseline by its place in the command, whichever ran first.
    let mut out = format!("A (baseline): {}\nB: {}\n", names(&c.a), names(&c.b));
    for u in c.unfinished_notes() {
        out.push_str(&format!("! {}\n", p(&u)));
    }
    out.push('\n');
    let mut table = vec![vec![
        "point".to_string(),
        "metric".to_string(),
        "A mean (n)".to_string(),
        "B mean (n)".to_string(),
        "B vs A".to_string(),
        "95% CI".to_string(),
        "verdict".to_string(),
    ]];
    for r in &c.rows {
        table.push(vec![
            p(&r.point),
            p(&r.metric_text()),
            r.a_text(),
            r.b_text(),
            r.diff_text(),
            r.ci_text(),
            r.verdict.clone(),
        ]);
    }
    out.push_str(&crate::fmt::text_table(&table));
    if let Some(why) = &c.nothing_in_common {
        out.push_str(&format!("\nNothing compared: {why}.\n"));
    }
    if !c.warnings.is_empty() {
        out.push_str(&format!("\n{WARNINGS_NOTE}\n"));
        for w in &c.warnings {
            out.push_str(&format!("  {}: {}\n", p(&w.point), p(&w.text())));
        }
    }
    if c.rows
        .iter()
        .any(|r| r.verdict.starts_with("not enough repetitions"))
    {
        out.push_str(&format!("\n{REPETITIONS_NOTE}\n"));
    }
    let tested = c.rows.iter().filter(|r| r.p_value.is_some()).count();
    if tested > 0 {
        out.push_str(&format!("\n{}\n", multiple_rows_note(tested)));
    }
    for n in c.table_notes() {
        out.push_str(&format!("\n{n}\n"));
    }
    out.push_str(&format!("\nComparability: {}\n", c.comparability.verdict));
    for d in &c.comparability.differences {
        out.push_str(&format!(
            "  {} ({}): A = {} | B = {}\n",
            p(&d.key),
            d.category,
            p(&d.a),
            p(&d.b)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kv search run whose answer is `best` req/s: a lower bound (every probe met the
    /// objective, `search_limit`) when `failing` is None, else measured below it.
    fn search_run(id: &str, best: f64, failing: Option<f64>) -> RunRecord {
        let mut metrics = vec![
            serde_json::json!({"name": "demanded_rate_per_s", "value": best, "unit": "req/s",
                "labels": {"phase": "search", "step": "0", "meets": "true"}}),
            serde_json::json!({"name": "max_rate_meeting_slo_per_s", "value": best,
                "unit": "req/s", "labels": {}}),
        ];
        let mut flags = vec![];
        match failing {
            Some(h) => metrics.push(serde_json::json!({"name": "lowest_failing_rate_per_s",
                "value": h, "unit": "req/s", "labels": {}})),
            None => flags.push(serde_json::json!({"code": "search_limit",
                "severity": "warning",
                "message": format!("the objective was met at the highest rate allowed \
                    ({best:.0}/s): raise the maximum rate")})),
        }
        serde_json::from_value(serde_json::json!({
            "format_version": 1, "id": id, "created_at": "2026-01-01T00:00:00Z",
            "rackbench_version": "0.1.0", "command": "rackbench run kv -t search",
            "plan": {}, "hosts": [], "status": "ok",
            "results": [{
                "workload": "kv", "test": "search", "step": 0, "repetition": 0,
                "params": {}, "headline": "max_rate_meeting_slo_per_s",
                "started_at": "2026-01-01T00:00:00Z", "duration_s": 1.0,
                "metrics": metrics, "flags": flags, "status": "ok"
            }]
        }))
        .unwrap()
    }

    /// A search that met p99<50ms at every probe up to --search-max 2,000 was set
    /// against another run's measured 3,000 as a 50% gain. A bound's cell reads `≥`,
    /// and the row has no difference, interval or p-value, its verdict saying why.
    #[test]
    fn a_searchs_lower_bound_is_not_compared_as_a_measurement() {
        let head = |c: &Comparison| {
            c.rows
                .iter()
                .find(|r| r.metric == "max_rate_meeting_slo_per_s")
                .cloned()
                .unwrap()
        };
        let bound = [search_run("20260101T000000-aaaaaa", 2000.0, None)];
        let measured = [search_run("20260101T000000-bbbbbb", 3000.0, Some(3200.0))];
        let row = head(&compare(&bound, &measured));
        assert!(row.a_bound && !row.b_bound, "{row:?}");
        assert!(row.a_text().starts_with("≥ 2,000"), "{}", row.a_text());
        assert!(!row.b_text().starts_with('≥'), "{}", row.b_text());
        assert_eq!(
            (row.diff_pct, row.ci95_pct, row.p_value),
            (None, None, None)
        );
        assert_eq!(row.diff_text(), "-");
        assert!(
            row.verdict
                .starts_with("not compared: a lower bound on A (the objective was met"),
            "{}",
            row.verdict
        );
        let row = head(&compare(&measured, &bound));
        assert!(
            row.b_bound && row.verdict.contains("a lower bound on B"),
            "{row:?}"
        );
        // Two measured answers are compared as before.
        let other = [search_run("20260101T000000-cccccc", 2000.0, Some(2200.0))];
        let row = head(&compare(&other, &measured));
        assert!(!row.a_bound && !row.b_bound, "{row:?}");
        assert!(
            row.diff_pct.is_some_and(|d| (d - 50.0).abs() < 1e-9),
            "{row:?}"
        );
    }

    /// A side of one run of several repetitions: mean ± sd, both in the figure's unit
    /// (a latency's in its own scale); several runs: the count of runs.
    #[test]
    fn a_side_cell_gives_one_runs_repetitions() {
        let row = CompareRow {
            point: "kv get".into(),
            metric: "latency_p99_ns".into(),
            unit: "ns".into(),
            higher_is_better: false,
            a: Sample::of(&[1_500_000.0]),
            b: Sample::of(&[1_000_000.0, 1_200_000.0]),
            diff_pct: None,
            ci95_pct: None,
            diff_points: None,
            ci95_points: None,
            p_value: None,
            verdict: String::new(),
            a_reps: Sample::of(&[1_400_000.0, 1_600_000.0]),
            b_reps: None,
            a_basis: None,
            b_basis: None,
            a_bound: false,
            b_bound: false,
        };
        let sd = (2.0f64 * 100_000.0 * 100_000.0).sqrt();
        assert_eq!(
            row.side_text(&row.a, &row.a_reps),
            format!(
                "{} ± {} (1 run, 2 reps)",
                crate::fmt::latency_ns(1_500_000.0),
                crate::fmt::latency_ns(sd)
            )
        );
        assert_eq!(
            row.side_text(&row.b, &row.b_reps),
            format!("{} (2 runs)", crate::fmt::latency_ns(1_100_000.0))
        );
        assert_eq!(row.side_text(&None, &None), "-");
        let one = CompareRow {
            b: Sample::of(&[1_000_000.0]),
            ..row.clone()
        };
        assert_eq!(
            one.side_text(&one.b, &None),
            format!("{} (1 run)", crate::fmt::latency_ns(1_000_000.0))
        );
    }

    /// Acceptance P, 6: a share of 99.999982% read `100.0 %` beside the other side's
    /// `100 %`, with `-0.000018 pts` between them. A side reads 100 only when it is.
    #[test]
    fn a_share_just_under_100_does_not_read_100() {
        let row = CompareRow {
            point: "kv get".into(),
            metric: "pct_over_100us".into(),
            unit: "%".into(),
            higher_is_better: false,
            a: Sample::of(&[100.0]),
            b: Sample::of(&[99.999982]),
            diff_pct: None,
            ci95_pct: None,
            diff_points: Some(99.999982 - 100.0),
            ci95_points: None,
            p_value: None,
            verdict: String::new(),
            a_reps: None,
            b_reps: None,
            a_basis: None,
            b_basis: None,
            a_bound: false,
            b_bound: false,
        };
        assert_eq!(row.side_text(&row.a, &None), "100 % (1 run)");
        assert_eq!(row.side_text(&row.b, &None), "99.999982 % (1 run)");
        assert_eq!(row.diff_text(), "-0.000018 pts");
        // Below 100 by what its digits show, a share reads as any figure does.
        let b = Sample::of(&[42.125]);
        assert_eq!(
            row.side_text(&b, &None),
            format!("{} % (1 run)", crate::fmt::num(42.125))
        );
    }

    /// Acceptance pass C, 10: a share that fell from 0.0562% to 0.0406% read "-0.0 pts".
    #[test]
    fn small_point_differences_keep_two_digits_and_zero_has_no_sign() {
        assert_eq!(signed_points(0.0406 - 0.0562), "-0.016");
        assert_eq!(signed_points(0.0182 - 0.0117), "+0.0065");
        assert_eq!(signed_points(16.1), "+16.1");
        assert_eq!(signed_points(1.04), "+1.0");
        assert_eq!(signed_points(-0.1), "-0.10");
        assert_eq!(signed_points(0.0999), "+0.100");
        assert_eq!(signed_points(0.05), "+0.050");
        assert_eq!(signed_points(0.049), "+0.049");
        // Acceptance N, 4: 0.29296% to 0.23925% read "-0.1 pts".
        assert_eq!(signed_points(0.23925 - 0.29296), "-0.054");
        assert_eq!(signed_points(0.5), "+0.50");
        assert_eq!(signed_points(0.0), "0.0");
        assert_eq!(signed_points(-0.0), "0.0");
    }

    /// p=0.0497 read "significant, p=0.050" and p=0.0503 "no significant difference
    /// (p=0.050)": the figure shows which side of 0.05 it is on.
    #[test]
    fn a_p_value_shows_its_side_of_the_threshold() {
        assert_eq!(p_text(0.0497), "p=0.0497");
        assert_eq!(p_text(0.0503), "p=0.0503");
        assert_eq!(p_text(0.049996), "p=0.049996");
        assert_eq!(p_text(0.05), "p=0.0500");
        assert_eq!(p_text(0.00123), "p=0.00123");
        assert_eq!(p_text(0.0004), "p<0.001");
        assert_eq!(p_text(0.312), "p=0.312");
    }

    /// A relative difference of -0.03% read "-0.0%", of +0.02% "+0.0%".
    #[test]
    fn a_difference_that_rounds_to_zero_has_no_sign() {
        let row = |d: f64| CompareRow {
            point: "kv get".into(),
            metric: "ops_per_s".into(),
            unit: "ops/s".into(),
            higher_is_better: true,
            a: None,
            b: None,
            diff_pct: Some(d),
            ci95_pct: Some((d - 0.04, d + 0.01)),
            diff_points: None,
            ci95_points: None,
            p_value: None,
            verdict: String::new(),
            a_reps: None,
            b_reps: None,
            a_basis: None,
            b_basis: None,
            a_bound: false,
            b_bound: false,
        };
        assert_eq!(row(-0.03).diff_text(), "0.0%");
        assert_eq!(row(0.02).diff_text(), "0.0%");
        assert_eq!(row(0.0).diff_text(), "0.0%");
        assert_eq!(row(-0.06).diff_text(), "-0.1%");
        assert_eq!(row(12.5).diff_text(), "+12.5%");
        assert_eq!(row(0.02).ci_text(), "[0.0%, 0.0%]");
        assert_eq!(row(-3.1).ci_text(), "[-3.1%, -3.1%]");
    }

    /// CPU per unit is per what the headline's rate counts: a net test's per Gbit, an RSA
    /// test's per sign (it said `per_op` with unit `us` of every rate, so 18,592 us per
    /// Gbit read as per operation).
    #[test]
    fn cpu_per_unit_is_named_by_what_the_rate_counts() {
        let server = CpuBasis::ServerProcesses(Vec::new());
        assert_eq!(cpu_per(&CpuBasis::Host, "ops/s"), "cpu_us_per_op");
        assert_eq!(cpu_per(&server, "ops/s"), "server_cpu_us_per_op");
        assert_eq!(cpu_per(&server, "Gbit/s"), "server_cpu_us_per_Gbit");
        assert_eq!(cpu_per(&CpuBasis::Host, "signs/s"), "cpu_us_per_sign");
        assert_eq!(cpu_per(&CpuBasis::Host, "MB/s"), "cpu_us_per_MB");
        assert_eq!(cpu_per(&CpuBasis::Host, "req/s"), "cpu_us_per_req");
        assert_eq!(cpu_per(&CpuBasis::Host, "verifies/s"), "cpu_us_per_verify");
        assert_eq!(cpu_per(&CpuBasis::Host, "replies/s"), "cpu_us_per_reply");
        assert_eq!(cpu_per(&CpuBasis::Host, "GB/s"), "cpu_us_per_GB");
        assert_eq!(cpu_per(&CpuBasis::Host, "txn/s"), "cpu_us_per_txn");
        assert_eq!(
            cpu_per(&server, "new orders/min"),
            "server_cpu_us_per_new_order"
        );
        assert_eq!(
            cpu_per(&server, "transactions/min"),
            "server_cpu_us_per_transaction"
        );
        assert_eq!(
            cpu_per(&CpuBasis::WorkProcess, "signs/s"),
            "work_cpu_us_per_sign"
        );
        assert_eq!(
            cpu_per_basis("server_cpu_us_per_Gbit"),
            Some((SERVER_CPU_PER, "the server processes' CPU", "Gbit"))
        );
        assert_eq!(
            cpu_per_basis("cpu_us_per_sign"),
            Some((CPU_PER, "every CPU of the SUT host", "sign"))
        );
        assert_eq!(cpu_per_basis("power_w"), None);
        assert_eq!(
            one_sided("cpu_us_per_Gbit", "B", |m| m == "server_cpu_us_per_Gbit"),
            "B has server_cpu_us_per_Gbit (the server processes' CPU) where this side counts \
             every CPU of the SUT host: not comparable"
        );
    }
}
