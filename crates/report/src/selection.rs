//! What a summary table shows, chosen the way the seeds choose it: which tests (the Redis
//! study's three), at which sweep point (`instances=2`) or at each column's best, which
//! column the others are measured against, and which columns are extrapolated from a
//! measured one (seed 000's "two boards per chassis", seed 001's "Opteron at 3 GHz").
//!
//! Parsed from the command line here, applied in [`crate::derive::summary_with`]; the
//! same selection gives `rackbench tco` its performance figure.

use model::RunRecord;

use crate::derive::{points, row_key, setting_key, Point};

/// Whether a setting's value is the one an `--at` (or a plan's `at`) chose, typed in
/// whichever form ([`setting_key`]): `--at server_cpus=0-1` takes a run at `0,1`.
fn is_at(k: &str, have: &serde_json::Value, chosen: &str) -> bool {
    setting_key(k, have) == chosen_key(k, chosen)
}

/// The [`setting_key`] of a value as typed after `--at k=`, read as the tables print it
/// too (`server_cpus=[0]`, `duration=1.0`).
fn chosen_key(k: &str, chosen: &str) -> String {
    let typed = serde_json::from_str(chosen)
        .unwrap_or_else(|_| serde_json::Value::String(chosen.to_string()));
    setting_key(k, &typed)
}

/// The seeds' choices for a summary. The default is every test, each column at its best.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selection {
    /// Rows in the table and its geometric mean, as the table names them (`kv get
    /// pipeline=16`, or without the workload), or a test name (`set`: all its rows).
    /// Empty: every row.
    pub tests: Vec<String>,
    /// Every row at this sweep point instead of each column's best (`instances=2`). A
    /// point is at it when the value it ran the key with (given, else its effective
    /// setting) is the one chosen; a point whose value is not known (results stored before
    /// settings were kept, the key not given) is not. A key its workload does not have
    /// (its results' settings lack it: `instances` of an oltp row) is no constraint.
    pub at: Vec<(String, String)>,
    /// The column the Difference columns divide by (a run label); None: the first.
    pub baseline: Option<String>,
    /// Columns extrapolated from a measured one, after the measured columns.
    pub extrapolate: Vec<Extrapolation>,
    /// Chosen in a TCO plan (its keys `tests` and `params`), not with `--tests` and
    /// `--at`: what [`Selection::check`] says names those keys.
    pub from_plan: bool,
}

/// One extrapolated column: a measured column scaled by a constant factor.
#[derive(Debug, Clone, PartialEq)]
pub struct Extrapolation {
    /// The measured column (run label) it is made from.
    pub from: String,
    pub how: Extrapolate,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Extrapolate {
    /// `N` boards (sockets, chassis) of what was measured on one: performance and power
    /// times `N` (seed 000: "linearly extrapolated ... two single-socket motherboards").
    Times { factor: f64, unit: String },
    /// The measured figure at another CPU clock: performance times
    /// `1 + elasticity * (to / from - 1)` (elasticity 1 is linear in the clock; seed 001
    /// measured 0.7: "every 10% in clockspeed ... a 7% performance increase"). Power at
    /// another clock is unknown and is not extrapolated.
    Clock {
        from_mhz: Option<f64>,
        to_mhz: f64,
        elasticity: f64,
    },
}

impl Extrapolate {
    /// The factor on performance, given the measured column's clock when the
    /// extrapolation does not say it.
    pub fn perf_factor(&self, run_mhz: Option<f64>) -> Result<f64, String> {
        match self {
            Extrapolate::Times { factor, .. } => Ok(*factor),
            Extrapolate::Clock {
                from_mhz,
                to_mhz,
                elasticity,
            } => {
                let from = from_mhz.or(run_mhz).ok_or_else(|| {
                    "the run does not disclose its CPU clock (cpu.freq_max_mhz): give it, \
                     as in --extrapolate 'RUN=2.4GHz:3GHz'"
                        .to_string()
                })?;
                Ok(1.0 + elasticity * (to_mhz / from - 1.0))
            }
        }
    }

    /// The factor on power: boards multiply it; another clock leaves it unknown.
    pub fn power_factor(&self) -> Option<f64> {
        match self {
            Extrapolate::Times { factor, .. } => Some(*factor),
            Extrapolate::Clock { .. } => None,
        }
    }

    /// The column's heading beside the measured column's label: `x2 boards`, `at 3 GHz`.
    pub fn heading(&self) -> String {
        match self {
            Extrapolate::Times { factor, unit } => format!("x{} {unit}", fmt_num(*factor)),
            Extrapolate::Clock { to_mhz, .. } => format!("at {}", fmt_mhz(*to_mhz)),
        }
    }
}

fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

pub(crate) fn fmt_mhz(mhz: f64) -> String {
    if mhz >= 1000.0 {
        format!("{} GHz", fmt_num(mhz / 1000.0))
    } else {
        format!("{} MHz", fmt_num(mhz))
    }
}

/// `3GHz`, `2400MHz`, `2.4ghz` as MHz.
fn parse_clock(s: &str) -> Result<f64, String> {
    let t = s.trim().to_ascii_lowercase();
    let (num, scale) = if let Some(n) = t.strip_suffix("ghz") {
        (n, 1000.0)
    } else if let Some(n) = t.strip_suffix("mhz") {
        (n, 1.0)
    } else {
        return Err(format!("`{s}` is not a clock: write it as 3GHz or 2400MHz"));
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v * scale),
        _ => Err(format!("`{s}` is not a clock: write it as 3GHz or 2400MHz")),
    }
}

/// `--extrapolate RUN=x2:boards`, `RUN=3GHz`, `RUN=2.4GHz:3GHz`, with the elasticity of
/// clock extrapolations (`--clock-elasticity`, 1 = linear).
pub fn parse_extrapolation(s: &str, elasticity: f64) -> Result<Extrapolation, String> {
    let usage = "write --extrapolate RUN=x2:boards (N boards or sockets of one measured), \
                 RUN=3GHz or RUN=2.4GHz:3GHz (another CPU clock)";
    let (from, how) = s
        .rsplit_once('=')
        .filter(|(f, h)| !f.trim().is_empty() && !h.trim().is_empty())
        .ok_or_else(|| format!("--extrapolate `{s}`: {usage}"))?;
    let how = how.trim();
    let how = if let Some(rest) = how.strip_prefix(['x', 'X']) {
        let (n, unit) = rest.split_once(':').unwrap_or((rest, "boards"));
        match n.trim().parse::<f64>() {
            Ok(f) if f.is_finite() && f > 0.0 => Extrapolate::Times {
                factor: f,
                unit: unit.trim().to_string(),
            },
            _ => return Err(format!("--extrapolate `{s}`: `x{n}` is no factor; {usage}")),
        }
    } else {
        let (from_mhz, to) = match how.split_once(':') {
            Some((a, b)) => (Some(parse_clock(a)?), b),
            None => (None, how),
        };
        Extrapolate::Clock {
            from_mhz,
            to_mhz: parse_clock(to).map_err(|e| format!("--extrapolate `{s}`: {e}; {usage}"))?,
            elasticity,
        }
    };
    Ok(Extrapolation {
        from: from.trim().to_string(),
        how,
    })
}

/// `instances=2,threads=4` as pairs.
pub fn parse_at(s: &str) -> Result<Vec<(String, String)>, String> {
    s.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            p.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .filter(|(k, v)| !k.is_empty() && !v.is_empty())
                .ok_or_else(|| {
                    format!("--at `{p}`: write a sweep point as KEY=VALUE, e.g. --at instances=2")
                })
        })
        .collect()
}

impl Selection {
    /// Whether a point is one of the chosen tests.
    pub fn takes_test(&self, p: &Point, peak: &[&str]) -> bool {
        if self.tests.is_empty() {
            return true;
        }
        let key = row_key(p, peak);
        let bare = key
            .strip_prefix(&p.workload)
            .map_or(key.as_str(), str::trim_start);
        // The same words in any order: a row's parameters as typed from an older label
        // (`receiver_host=b sender_host=a`) are still its own.
        fn words(s: &str) -> Vec<&str> {
            let mut w: Vec<&str> = s.split_whitespace().collect();
            w.sort_unstable();
            w
        }
        let (key_words, bare_words) = (words(&key), words(bare));
        self.tests.iter().any(|t| {
            t == &p.test || t == &key || t == bare || {
                let w = words(t);
                w == key_words || w == bare_words
            }
        })
    }

    /// This selection as it applies to `runs`, one workload's (a report's selection is
    /// shared by each workload's section): only the tests theirs, so tests chosen for
    /// another workload leave these runs' rows alone, and only the sweep point's keys
    /// they ran with (`--at instances=2` is no constraint on crypto's, [`Self::at`]);
    /// neither is then in their captions. A result that kept no settings keeps every
    /// key: its value is not known, and it is at none.
    pub fn for_runs(&self, runs: &[RunRecord]) -> Selection {
        let results = || runs.iter().flat_map(|r| &r.results);
        let theirs = |k: &str| results().any(|x| x.settings.is_empty() || x.setting(k).is_some());
        Selection {
            tests: self.tests_in(runs),
            at: self.at.iter().filter(|(k, _)| theirs(k)).cloned().collect(),
            ..self.clone()
        }
    }

    /// The peak parameters (`peak`, swept in the runs) it leaves free, each taken at its
    /// best: those `--at` does not fix.
    pub fn free<'a>(&self, peak: &'a [String]) -> Vec<&'a str> {
        peak.iter()
            .map(String::as_str)
            .filter(|p| !self.at.iter().any(|(k, _)| k == p))
            .collect()
    }

    /// The sweep point chosen, as typed: `instances=2, clients=40`; empty for none.
    pub fn at_text(&self) -> String {
        let at: Vec<String> = self.at.iter().map(|(k, v)| format!("{k}={v}")).collect();
        at.join(", ")
    }

    /// What it chooses, in words: `tests get, set; at instances=2`; empty for nothing.
    pub fn chosen_text(&self) -> String {
        let mut parts = Vec::new();
        if !self.tests.is_empty() {
            parts.push(format!("tests {}", self.tests.join(", ")));
        }
        if !self.at.is_empty() {
            parts.push(format!("at {}", self.at_text()));
        }
        parts.join("; ")
    }

    /// The points a table of best points holds, in words for its caption: `each run's
    /// best point`, `each run's best point of those chosen (at instances=2)`.
    pub fn best_point_words(&self) -> String {
        if self.chooses() {
            format!(
                "each run's best point of those chosen ({})",
                self.chosen_text()
            )
        } else {
            "each run's best point".to_string()
        }
    }

    /// Whether it chooses some points: tests, or a sweep point (of `runs`' where it is
    /// [`Self::for_runs`] of them).
    pub fn chooses(&self) -> bool {
        !self.tests.is_empty() || !self.at.is_empty()
    }

    /// The names of [`Selection::tests`] that match a test of these runs: none when the
    /// chosen tests are all another workload's (a report of several workloads: tests
    /// chosen for one leave the others' rows alone).
    pub fn tests_in(&self, runs: &[RunRecord]) -> Vec<String> {
        let skip = crate::derive::name_skip(runs, &crate::derive::peak_params(runs));
        let peak: Vec<&str> = skip.iter().map(String::as_str).collect();
        let all: Vec<Point> = runs
            .iter()
            .enumerate()
            .flat_map(|(i, r)| points(i, r))
            .collect();
        self.tests
            .iter()
            .filter(|t| {
                let one = Selection {
                    tests: vec![t.to_string()],
                    ..Selection::default()
                };
                all.iter().any(|p| one.takes_test(p, &peak))
            })
            .cloned()
            .collect()
    }

    /// Whether a point is at the chosen sweep point ([`Selection::at`]): each key's value,
    /// given or effective, is the chosen one. A point that ran a default it never stored
    /// is not taken to be at any value: `--at instances=2` showed a run of one instance
    /// as at two, since its record did not say.
    pub fn takes_point(&self, p: &Point) -> bool {
        self.at.iter().all(|(k, v)| match p.setting(k) {
            Some(have) => is_at(k, have, v),
            // Its settings are known and have no such knob: not its workload's.
            None => p.knows_settings(),
        })
    }

    /// A summary cell's point (`clients=40 instances=2`, its [`SummaryRow::chosen`]) in
    /// words: `at its best clients (40)` for a load level the summary took the best of,
    /// `at instances=2` for one this selection fixed.
    ///
    /// [`SummaryRow::chosen`]: crate::derive::SummaryRow::chosen
    /// A row's chosen point in words: a scale parameter (instances) is the column's
    /// one best over all its rows, as [`Self::describe`] says, not the row's own best.
    pub fn point_words(&self, chosen: &str) -> String {
        chosen
            .split_whitespace()
            .map(|kv| match kv.split_once('=') {
                Some((k, v)) if !self.at.iter().any(|(a, _)| a == k) => {
                    if crate::derive::SCALE_PARAMS.contains(&k) {
                        format!("at {k}={v} (the best {k} over all its tests)")
                    } else {
                        format!("at its best {k} ({v})")
                    }
                }
                _ => format!("at {kv}"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// `each column at one instances, its best over all its rows; each row at its best
    /// clients`, `at instances=2`.
    pub fn describe(&self, peak: &[String]) -> String {
        let best = self.free(peak);
        // The rows chosen, said as the at-point is (the README promises the caption says
        // what the summary took; `--tests` left it unsaid).
        let mut parts = vec![self.chosen_text()];
        parts.retain(|p| !p.is_empty());
        let (scale, load): (Vec<&str>, Vec<&str>) = best
            .into_iter()
            .partition(|s| crate::derive::SCALE_PARAMS.contains(s));
        if !scale.is_empty() {
            parts.push(format!(
                "each column at one {}, its best over all its rows",
                scale.join(", ")
            ));
        }
        if !load.is_empty() {
            let whose = if scale.is_empty() { "column" } else { "row" };
            parts.push(format!("each {whose} at its best {}", load.join(", ")));
        }
        parts.join("; ")
    }

    /// Every name of this selection that matches nothing in these runs, as one message
    /// that lists what there is; Ok when all match.
    pub fn check(&self, runs: &[RunRecord]) -> Result<(), String> {
        let all: Vec<Point> = runs
            .iter()
            .enumerate()
            .flat_map(|(i, r)| points(i, r))
            .collect();
        let skip = crate::derive::name_skip(runs, &crate::derive::peak_params(runs));
        let peak: Vec<&str> = skip.iter().map(String::as_str).collect();
        let mut problems = Vec::new();
        let (tests_key, at_key) = if self.from_plan {
            ("tests", "params")
        } else {
            ("--tests", "--at")
        };
        for t in &self.tests {
            let one = Selection {
                tests: vec![t.clone()],
                ..Selection::default()
            };
            if !all.iter().any(|p| one.takes_test(p, &peak)) {
                let mut have: Vec<String> = all.iter().map(|p| row_key(p, &peak)).collect();
                have.dedup();
                have.sort();
                have.dedup();
                problems.push(format!(
                    "{tests_key}: no test `{t}` in these runs (there are: {})",
                    have.join(", ")
                ));
            }
        }
        for (k, v) in &self.at {
            let values: Vec<String> = all
                .iter()
                .filter_map(|p| p.setting(k).map(|v| setting_key(k, v)))
                .collect();
            if values.is_empty() {
                problems.push(format!("{at_key}: no run was swept over `{k}`"));
            } else if !values.contains(&chosen_key(k, v)) {
                let mut have = values;
                have.sort();
                have.dedup();
                problems.push(format!(
                    "{at_key}: no point has {k}={v} (measured: {})",
                    have.join(", ")
                ));
            }
        }
        let labels = crate::derive::run_labels(runs);
        let known = |l: &str| labels.iter().any(|x| x == l);
        for name in self
            .baseline
            .iter()
            .chain(self.extrapolate.iter().map(|e| &e.from))
        {
            if !known(name) {
                problems.push(format!(
                    "no column `{name}` in this report (columns: {})",
                    labels.join(", ")
                ));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("\n"))
        }
    }
}

/// A TCO platform's figures from a run as the report's summary has them: performance is
/// the geometric mean over its `tests` (or `test`, or all) at its `params` (or each at its
/// best), and power the mean over the very same sweep points (never over every point of
/// the sweep), each saying which points it took.
pub fn tco_from_run(run: &RunRecord, p: &tco::Platform) -> Result<tco::FromRun, String> {
    let perf = tco_perf(run, p)?;
    let sel = tco_selection(p);
    let runs = std::slice::from_ref(run);
    let peak = crate::derive::peak_params(runs);
    let mut taken: Vec<&model::ResultRecord> = Vec::new();
    for (_, per_run) in crate::derive::best_points_in(runs, &peak, &sel) {
        if let Some(Some(point)) = per_run.first() {
            taken.extend(point.valid());
        }
    }
    let mut only = run.clone();
    only.results = taken.into_iter().cloned().collect();
    // The power rule and its refusals are tco's own; given these results only, with
    // `params` and `test` already applied.
    let whole = tco::Platform {
        test: None,
        params: Default::default(),
        ..p.clone()
    };
    let mut fr = tco::from_run(&only, &whole);
    if let Some(w) = fr.power_w.as_mut() {
        w.source = format!("{}; the points are the performance figure's", w.source);
    }
    fr.perf = Some(perf);
    fr.perf_points = only.results.clone();
    // The tests the mean is over, named as the points taken name them: a setting they
    // share (chosen by `params` or `tests`, or fixed in the run) is none of their names.
    fr.perf_rows = crate::derive::best_row_names(std::slice::from_ref(&only), &peak);
    fr.perf_rows.sort();
    Ok(fr)
}

/// Which settings the platforms' performance figures were measured at, where they differ
/// (`x86: pipeline=100; arm: pipeline not given (1 by default)`): their tests are named
/// alike and pass the TCO's check, but a difference between the platforms is then of the
/// setting as much as of the platform. Said as the report's column line says it
/// ([`crate::derive::column_line`]), over the points each figure was taken from. A load
/// level is no such setting where every platform took its best over it (its run swept it
/// in the tests taken, and its `params` did not fix it); one fixed on either side is.
/// None where they agree, or fewer than two figures came from runs.
pub fn tco_settings_note(
    platforms: &[(&tco::Platform, &RunRecord, &tco::FromRun)],
) -> Option<String> {
    let measured: Vec<_> = platforms
        .iter()
        .filter(|(_, _, fr)| !fr.perf_points.is_empty())
        .collect();
    // The load levels each platform's figure is the best over.
    let best_over = |p: &tco::Platform, run: &RunRecord, fr: &tco::FromRun| -> Vec<String> {
        let tests = |r: &model::ResultRecord| {
            fr.perf_points
                .iter()
                .any(|t| t.workload == r.workload && t.test == r.test)
        };
        let scope = RunRecord {
            results: run.results.iter().filter(|r| tests(r)).cloned().collect(),
            ..run.clone()
        };
        crate::derive::peak_params(std::slice::from_ref(&scope))
            .into_iter()
            .filter(|k| !p.params.contains_key(k))
            .collect()
    };
    let mut peak: Option<Vec<String>> = None;
    for (p, run, fr) in &measured {
        let mine = best_over(p, run, fr);
        peak = Some(match peak {
            None => mine,
            Some(all) => all.into_iter().filter(|k| mine.contains(k)).collect(),
        });
    }
    // The column line reads a run's label and results only; of their parameters, those
    // their tests read (a `set` beside a search kept `--slo` and `--levels`, and the
    // platforms read as measured at different settings for them).
    let read_only = |r: &model::ResultRecord| {
        let mut r = r.clone();
        for k in model::capacity_keys::unread(&r.test) {
            r.params.remove(*k);
        }
        r
    };
    let taken: Vec<RunRecord> = measured
        .iter()
        .map(|(p, run, fr)| RunRecord {
            label: Some(p.name.clone()),
            results: fr.perf_points.iter().map(read_only).collect(),
            ..(*run).clone()
        })
        .collect();
    let line = crate::derive::column_line(&taken, &peak.unwrap_or_default())?;
    Some(format!(
        "the platforms' performance was measured at different settings (a difference \
         between them is of the setting as much as of the platform): {line}"
    ))
}

fn tco_selection(p: &tco::Platform) -> Selection {
    Selection {
        tests: p.tests.iter().chain(&p.test).cloned().collect(),
        at: p
            .params
            .iter()
            .map(|(k, v)| (k.clone(), setting_key(k, v)))
            .collect(),
        from_plan: true,
        ..Default::default()
    }
}

/// A TCO platform's performance as the report's summary has it: the geometric mean over
/// its `tests` (or `test`, or all) at its `params` (or each at its best), saying which
/// points it took.
pub fn tco_perf(run: &RunRecord, p: &tco::Platform) -> Result<tco::Sourced, String> {
    let runs = std::slice::from_ref(run);
    let sel = tco_selection(p);
    sel.check(runs)
        .map_err(|e| format!("platform `{}`, run {}: {e}", p.name, run.id))?;
    let s = crate::derive::summary_with(runs, &sel);
    // A rack is sized by throughput: a latency is no performance to divide by dollars
    // or watts (tco's own rule for a platform's single test, here for the summary's).
    if let Some(r) = s
        .rows
        .iter()
        .find(|r| r.perf[0].is_some() && !r.higher_is_better)
    {
        return Err(format!(
            "platform `{}`, run {}: `{}` is in {}, better lower: a TCO needs a throughput \
             (choose others with `tests = [...]`, or give `perf = ...`)",
            p.name, run.id, r.label, r.unit
        ));
    }
    let taken: Vec<String> = s
        .rows
        .iter()
        .filter(|r| r.perf[0].is_some())
        .map(|r| match r.chosen[0].as_str() {
            "" => r.label.clone(),
            chosen => format!("{} {}", r.label, sel.point_words(chosen)),
        })
        .collect();
    let value = match (&s.geomean_note, s.geomean[0]) {
        (None, Some(v)) => v,
        (Some(why), _) => {
            return Err(format!(
                "platform `{}`, run {}: {why}; choose one kind with `tests = [...]`, or give `perf_from = \"max\"`",
                p.name, run.id
            ))
        }
        (None, None) => return Err(no_perf_because(run, p)),
    };
    Ok(tco::Sourced {
        value,
        source: format!(
            "run {}: geometric mean of {} test(s): {}",
            run.id,
            taken.len(),
            taken.join(", ")
        ),
        modelled: false,
        model: None,
        unit: (!s.unit.is_empty()).then(|| s.unit.clone()),
        run: Some(run.id.clone()),
    })
}

/// Why a run gives a TCO platform no performance: its valid results are capacity tests
/// (whose figures are per step: see [`model::ResultRecord::capacity_phase`]), or there is
/// none.
fn no_perf_because(run: &RunRecord, p: &tco::Platform) -> String {
    let valid: Vec<&model::ResultRecord> = run
        .results
        .iter()
        .filter(|r| r.status == model::Status::Ok && !r.is_invalid())
        .collect();
    let mut capacity: Vec<String> = valid
        .iter()
        .filter_map(|r| r.capacity_phase().map(|t| format!("{} {t}", r.workload)))
        .collect();
    capacity.sort();
    capacity.dedup();
    if valid.is_empty() || capacity.is_empty() {
        // A killed run's result is stored, interrupted: say so, not that there is none.
        let all: Vec<&model::ResultRecord> = run.results.iter().collect();
        let why = model::none_counted_because(&all, "result")
            .map(|w| format!(": {w}"))
            .unwrap_or_default();
        return format!(
            "platform `{}`, run {}: no valid result to take performance from{why}; run the \
             test again and name that run in `run`, or give the platform's `perf` in the TCO \
             plan",
            p.name, run.id
        );
    }
    format!(
        "platform `{}`, run {}: its results are capacity tests ({}), whose figures are per \
         step (the headline one step's, the power every step's), no server's performance; \
         take it from a run of an ordinary test (`rackbench run http -t load`, \
         `rackbench run kv -t get`...), or give the platform's `perf` in the TCO plan",
        p.name,
        run.id,
        capacity.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extrapolations_parse_and_scale() {
        let e = parse_extrapolation("centriq=x2:boards", 1.0).unwrap();
        assert_eq!(e.from, "centriq");
        assert_eq!(e.how.heading(), "x2 boards");
        assert_eq!(e.how.perf_factor(None), Ok(2.0));
        assert_eq!(e.how.power_factor(), Some(2.0));
        let e = parse_extrapolation("opteron=2.4GHz:3GHz", 0.7).unwrap();
        assert_eq!(e.how.heading(), "at 3 GHz");
        // Seed 001: 7% more per 10% more clock; 2.4 -> 3 GHz is +25% clock, +17.5%.
        let f = e.how.perf_factor(None).unwrap();
        assert!((f - 1.175).abs() < 1e-9, "{f}");
        assert_eq!(e.how.power_factor(), None);
        let e = parse_extrapolation("a=3000MHz", 1.0).unwrap();
        assert!(e.how.perf_factor(None).is_err());
        assert!((e.how.perf_factor(Some(2400.0)).unwrap() - 1.25).abs() < 1e-9);
        for bad in [
            "x2", "=x2", "a=", "a=x0", "a=xq", "a=3", "a=3Ghzz", "a=-1GHz",
        ] {
            let e = parse_extrapolation(bad, 1.0).unwrap_err();
            assert!(
                e.contains("--extrapolate") || e.contains("clock"),
                "{bad}: {e}"
            );
        }
        assert_eq!(
            parse_at("instances=2, threads=4").unwrap(),
            vec![
                ("instances".into(), "2".into()),
                ("threads".into(), "4".into())
            ]
        );
        assert!(parse_at("instances").unwrap_err().contains("KEY=VALUE"));
    }

    /// A row is chosen by its name with its parameters in any order: labels put a pair's
    /// sender first now, and a selection typed from an older one still takes its row.
    #[test]
    fn a_row_is_chosen_by_its_parameters_in_any_order() {
        let run: RunRecord = serde_json::from_value(serde_json::json!({
            "format_version": 1, "id": "r1", "created_at": "2026-01-01T00:00:00Z",
            "rackbench_version": "0.1.0", "command": "rackbench run", "plan": {},
            "hosts": [], "status": "ok", "results": [],
        }))
        .unwrap();
        let p = Point {
            run_index: 0,
            run: &run,
            workload: "net".into(),
            test: "tcp".into(),
            params: [("receiver_host", "b"), ("sender_host", "a")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), serde_json::json!(v)))
                .collect(),
            results: Vec::new(),
        };
        let takes = |t: &str| {
            Selection {
                tests: vec![t.to_string()],
                ..Selection::default()
            }
            .takes_test(&p, &[])
        };
        assert_eq!(row_key(&p, &[]), "net tcp sender_host=a receiver_host=b");
        assert!(takes("net tcp sender_host=a receiver_host=b"));
        assert!(takes("tcp receiver_host=b sender_host=a"));
        assert!(takes("tcp"));
        assert!(!takes("tcp sender_host=b receiver_host=a"));
    }
}
