//! The capacity tests (`ramp`, `search`, `levels`) as every rate-driven workload offers
//! them: one set of flags ([`CapacityArgs`], flattened into a workload's flags), one
//! configuration ([`CapacityConfig`], taken out of a sweep point's parameters before the
//! workload reads its own), and one driver ([`run`]) that turns the procedures of
//! [`crate::capacity`] into a stored result.
//!
//! A workload supplies only its defaults ([`CapacityDefaults`]: a typical rate and a
//! step length) and a closure that runs one open-loop step at a rate. The driver adds
//! what telemetry saw during each step (`cpu_busy_pct`, `power_w`, each watched
//! process's CPU) through [`crate::workload::Watch::mark`], so a ramp shows CPU against
//! rate and the load levels give SPECpower's per-level power and perf/W.

use std::io::Write;
use std::time::SystemTime;

use anyhow::{bail, Context};
use clap::Args;
use model::{Flag, Metric, MissingMetric};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::capacity::{
    self, LevelsConfig, Objective, RampConfig, RateStep, SearchConfig, Unsampled,
};
use crate::workload::{Ctx, Params, StepOutput};

pub use model::capacity_keys::{KEYS, LOAD_STOPS, OTHERS_AT_REST, TESTS, TICKS_MISSED};

/// `--arrival` and `--wait` are read by an open loop only: a fixed `--rate`, or a capacity
/// test's steps. Where every test runs closed they would be stored as if they applied, so
/// they are refused, naming the flag. `given` pairs each flag with its value where it was
/// given; `closed` says how this workload's closed loop paces itself.
pub fn refuse_open_loop_flags(
    tests: &[String],
    rate: bool,
    given: &[(&str, Option<&str>)],
    closed: &str,
) -> anyhow::Result<()> {
    if rate || tests.iter().any(|t| TESTS.contains(&t.as_str())) {
        return Ok(());
    }
    match given.iter().find_map(|(flag, v)| v.map(|v| (flag, v))) {
        Some((flag, v)) => bail!(
            "{flag} {v} is read by an open loop only, and without --rate (or a ramp, search \
             or levels test) the tests run closed ({closed}): give --rate N, or leave {flag} out"
        ),
        None => Ok(()),
    }
}

/// The flags of the capacity tests. Defaults that depend on the workload (rates, step
/// length) are written into the help by [`document_defaults`].
#[derive(Args, Debug, Serialize, Default)]
pub struct CapacityArgs {
    /// Ramp: first demanded rate per second
    #[arg(long = "ramp-low", id = "ramp_low", value_name = "PER_SEC")]
    pub ramp_low: Option<String>,
    /// Ramp: last demanded rate per second
    #[arg(long = "ramp-high", id = "ramp_high", value_name = "PER_SEC")]
    pub ramp_high: Option<String>,
    /// Ramp: rate increment per step
    #[arg(long = "ramp-step", id = "ramp_step", value_name = "PER_SEC")]
    pub ramp_step: Option<String>,
    /// Seconds of each ramp/search/levels step (after --warmup where the workload has one)
    #[arg(long = "step-duration", id = "step_duration", value_name = "SECS")]
    pub step_duration: Option<String>,
    /// A step is saturated when replies fall below this fraction of demand [default: 0.9]
    #[arg(
        long = "saturation-fraction",
        id = "saturation_fraction",
        value_name = "F"
    )]
    pub saturation_fraction: Option<String>,
    /// ... or when errors exceed this percentage [default: 1]
    #[arg(long = "max-error-pct", id = "max_error_pct", value_name = "PCT")]
    pub max_error_pct: Option<String>,
    /// Ramp steps to run past saturation, to show the plateau [default: 0]
    #[arg(
        long = "steps-after-saturation",
        id = "steps_after_saturation",
        value_name = "N"
    )]
    pub steps_after_saturation: Option<String>,
    /// Search: the latency objective, e.g. p99<1ms or p99.9<=500us
    #[arg(long, id = "slo", value_name = "OBJECTIVE")]
    pub slo: Option<String>,
    /// Search: first rate probed
    #[arg(long = "search-start", id = "search_start", value_name = "PER_SEC")]
    pub search_start: Option<String>,
    /// Search: lowest rate probed [default: 1]
    #[arg(long = "search-min", id = "search_min", value_name = "PER_SEC")]
    pub search_min: Option<String>,
    /// Search: highest rate probed
    #[arg(long = "search-max", id = "search_max", value_name = "PER_SEC")]
    pub search_max: Option<String>,
    /// Search: most probes [default: 12]
    #[arg(long = "search-steps", id = "search_steps", value_name = "N")]
    pub search_steps: Option<String>,
    /// Levels: the 100% rate [default: what a ramp or search before it in this run found]
    #[arg(long, id = "capacity", value_name = "PER_SEC")]
    pub capacity: Option<String>,
    /// Levels: percentages of capacity, in order [default: 100,90,...,10]
    #[arg(long, id = "levels", value_name = "LIST")]
    pub levels: Option<String>,
    /// Levels: seconds of active idle at the end (0: none, and no overall ops/s/W: SPECpower's divides by idle's power too) [default: --step-duration]
    #[arg(long = "idle-duration", id = "idle_duration", value_name = "SECS")]
    pub idle_duration: Option<String>,
    /// Open loop (--rate and the capacity tests of kv and http), between sends: `spin`
    /// (replies timed the moment they arrive; holds a whole CPU at any rate) or `sleep` on
    /// a timer (the generator's CPU follows the rate; its wake-up adds to each latency);
    /// `auto` sleeps in `levels`, where the generator's CPU would be counted in every
    /// level's power, and spins elsewhere [default: auto]
    #[arg(long, id = "wait", value_name = "auto|spin|sleep")]
    pub wait: Option<String>,
}

/// What differs between workloads: the scale of their rates and how long a step lasts.
#[derive(Debug, Clone, Copy)]
pub struct CapacityDefaults {
    /// The ramp's last rate; the ramp starts at and climbs by a twentieth of it, and the
    /// search starts there too.
    pub typical_rate_per_s: f64,
    pub step_duration_s: f64,
    /// What one operation is, for units (`ops/s`, `req/s`, `txn/s`).
    pub rate_unit: &'static str,
    /// The search's objective when `--slo` is not given: one this workload's requests
    /// can meet (`p99<1ms` for a cache; a TPC-C mix's New-Order takes milliseconds).
    pub slo: &'static str,
    /// Whether the generator keeps an open loop's schedule by spinning or sleeping
    /// (`--wait`); false where it waits on its own users' clocks (oltp), and `--wait` is
    /// refused.
    pub wait_modes: bool,
    /// How to give the generator more load to offer, in the workload's own flags
    /// (`--threads or -c`; oltp's `--vus`), for steps behind schedule.
    pub more_load: &'static str,
}

/// Write the workload's defaults into the help of the capacity flags.
pub fn document_defaults(cmd: clap::Command, d: &CapacityDefaults) -> clap::Command {
    let r = d.typical_rate_per_s;
    let with = |cmd: clap::Command, id: &'static str, default: String| {
        cmd.mut_arg(id, |a| {
            let help = a.get_help().map(|h| h.to_string()).unwrap_or_default();
            a.help(format!("{help} [default: {default}]"))
        })
    };
    let cmd = with(cmd, "ramp_low", fmt_rate(r / 20.0));
    let cmd = with(cmd, "ramp_high", fmt_rate(r));
    let cmd = with(cmd, "ramp_step", fmt_rate(r / 20.0));
    let cmd = with(cmd, "step_duration", fmt_rate(d.step_duration_s));
    let cmd = with(cmd, "search_start", fmt_rate(r / 20.0));
    let cmd = with(cmd, "slo", d.slo.to_string());
    let cmd = with(cmd, "search_max", fmt_rate(r * 50.0));
    // A workload whose generator never waits between sends (oltp's sessions) refuses
    // --wait: not listed in its --help (it read `--wait ... [default: auto]`).
    if d.wait_modes {
        cmd
    } else {
        cmd.mut_arg("wait", |a| a.hide(true))
    }
}

fn fmt_rate(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

/// The capacity tests' parameters of one sweep point (None: the workload's default).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CapacityConfig {
    pub ramp_low: Option<f64>,
    pub ramp_high: Option<f64>,
    pub ramp_step: Option<f64>,
    pub step_duration: Option<f64>,
    pub saturation_fraction: Option<f64>,
    pub max_error_pct: Option<f64>,
    pub steps_after_saturation: Option<usize>,
    pub slo: Option<String>,
    pub search_start: Option<f64>,
    pub search_min: Option<f64>,
    pub search_max: Option<f64>,
    pub search_steps: Option<usize>,
    pub capacity: Option<f64>,
    /// A list of percentages (`100,90`), numbers or `"50%"` strings.
    pub levels: Option<Value>,
    pub idle_duration: Option<f64>,
    pub wait: Option<String>,
    /// The point was given its server (`--target`, `--dsn`), whose kernel is not known:
    /// no generator is known to be apart from it (set by [`split_params`]).
    #[serde(skip)]
    pub server_given: bool,
}

/// Take the capacity keys out of `params` (the workload parses the rest) and read them.
pub fn split_params(workload: &str, params: &Params) -> anyhow::Result<(Params, CapacityConfig)> {
    let mut rest = params.clone();
    let mut own = Params::new();
    for k in KEYS {
        if let Some(v) = rest.remove(k) {
            own.insert(k.to_string(), v);
        }
    }
    let mut cfg: CapacityConfig = crate::plan::config_from_params(workload, &own)?;
    cfg.server_given = !crate::workload::given_servers(params).is_empty();
    Ok((rest, cfg))
}

fn positive(v: f64, flag: &str) -> anyhow::Result<f64> {
    if !(v > 0.0 && v.is_finite()) {
        bail!("--{flag} must be a positive number, not {v}");
    }
    Ok(v)
}

impl CapacityConfig {
    pub fn step_duration_s(&self, d: &CapacityDefaults) -> f64 {
        self.step_duration.unwrap_or(d.step_duration_s)
    }

    /// Seconds of active idle at the end of `levels` (0: none).
    pub fn idle_duration_s(&self, d: &CapacityDefaults) -> f64 {
        self.idle_duration.unwrap_or(self.step_duration_s(d))
    }

    pub fn ramp_config(&self, d: &CapacityDefaults) -> RampConfig {
        let r = d.typical_rate_per_s;
        let base = RampConfig::default();
        RampConfig {
            low_rate_per_s: self.ramp_low.unwrap_or(r / 20.0),
            high_rate_per_s: self.ramp_high.unwrap_or(r),
            step_rate_per_s: self.ramp_step.unwrap_or(r / 20.0),
            saturation_fraction: self.saturation_fraction.unwrap_or(base.saturation_fraction),
            max_error_pct: self.max_error_pct.unwrap_or(base.max_error_pct),
            steps_after_saturation: self
                .steps_after_saturation
                .unwrap_or(base.steps_after_saturation),
        }
    }

    pub fn search_config(&self, d: &CapacityDefaults) -> anyhow::Result<SearchConfig> {
        let objective: Objective = self
            .slo
            .as_deref()
            .unwrap_or(d.slo)
            .parse()
            .context("--slo")?;
        let mut c = SearchConfig::new(objective);
        let r = d.typical_rate_per_s;
        c.start_rate_per_s = self.search_start.unwrap_or(r / 20.0);
        c.min_rate_per_s = self.search_min.unwrap_or(1.0);
        c.max_rate_per_s = self.search_max.unwrap_or(r * 50.0);
        c.max_steps = self.search_steps.unwrap_or(12);
        if let Some(f) = self.saturation_fraction {
            c.saturation_fraction = f;
        }
        if let Some(e) = self.max_error_pct {
            c.max_error_pct = e;
        }
        c.validate()?;
        Ok(c)
    }

    pub fn levels_pct(&self) -> anyhow::Result<Vec<f64>> {
        let Some(v) = &self.levels else {
            return Ok((1..=10).rev().map(|i| f64::from(i) * 10.0).collect());
        };
        let items = match v {
            Value::Array(a) => a.clone(),
            other => vec![other.clone()],
        };
        items
            .iter()
            .map(|x| match x {
                Value::Number(n) => n.as_f64().context("--levels: not a number"),
                Value::String(s) => s
                    .trim()
                    .trim_end_matches('%')
                    .parse::<f64>()
                    .with_context(|| format!("--levels: `{s}` is not a percentage")),
                other => bail!("--levels: `{other}` is not a percentage"),
            })
            .collect()
    }

    /// Should an open-loop generator sleep between sends in `test` (see `--wait`)?
    pub fn sleep_when_idle(&self, test: &str) -> bool {
        match self.wait.as_deref() {
            Some("sleep") => true,
            Some("spin") => false,
            _ => test == "levels",
        }
    }

    /// Check everything the given tests will use, before anything starts.
    pub fn validate(&self, tests: &[String], d: &CapacityDefaults) -> anyhow::Result<()> {
        positive(self.step_duration_s(d), "step-duration")?;
        if let Some(w) = &self.wait {
            if !d.wait_modes {
                bail!(
                    "--wait applies to the open loops of kv and http; this workload's users \
                     keep their schedule themselves: leave --wait out"
                );
            }
            if !["auto", "spin", "sleep"].contains(&w.as_str()) {
                bail!("--wait must be auto, spin or sleep, not `{w}`");
            }
        }
        let uses = |t: &str| tests.iter().any(|x| x == t);
        // A setting no test reads would be ignored in silence (`-t load --slo ...` ran,
        // the objective unused; `-t set --capacity 1000` was stored as if it applied):
        // refused, as net refuses its udp options on tcp.
        let given = [
            (self.ramp_low.is_some(), "--ramp-low", &["ramp"][..]),
            (self.ramp_high.is_some(), "--ramp-high", &["ramp"]),
            (self.ramp_step.is_some(), "--ramp-step", &["ramp"]),
            (
                self.steps_after_saturation.is_some(),
                "--steps-after-saturation",
                &["ramp"],
            ),
            (
                self.saturation_fraction.is_some(),
                "--saturation-fraction",
                &["ramp", "search", "levels"],
            ),
            (
                self.max_error_pct.is_some(),
                "--max-error-pct",
                &["ramp", "search", "levels"],
            ),
            (self.slo.is_some(), "--slo", &["search", "levels"]),
            (self.search_start.is_some(), "--search-start", &["search"]),
            (self.search_min.is_some(), "--search-min", &["search"]),
            (self.search_max.is_some(), "--search-max", &["search"]),
            (self.search_steps.is_some(), "--search-steps", &["search"]),
            (self.capacity.is_some(), "--capacity", &["levels"]),
            (self.levels.is_some(), "--levels", &["levels"]),
            (self.idle_duration.is_some(), "--idle-duration", &["levels"]),
            (
                self.step_duration.is_some(),
                "--step-duration",
                &["ramp", "search", "levels"],
            ),
        ];
        for (is_given, flag, by) in given {
            if is_given && !by.iter().any(|t| uses(t)) {
                let (them, it) = match by {
                    [one] => (format!("the {one} test"), one.to_string()),
                    [rest @ .., last] => (
                        format!("the {} and {last} tests", rest.join(", ")),
                        format!("{} or {last}", rest.join(", ")),
                    ),
                    [] => continue,
                };
                bail!(
                    "{flag} applies to {them}, and the tests asked are {}: add {it} to \
                     --tests, or leave {flag} out",
                    tests.join(",")
                );
            }
        }
        // A rate no set of generators offers is a typo, and its schedule's arithmetic
        // runs out of precision (1e12/s: the gap between requests is a picosecond).
        for (rate, flag) in [
            (self.ramp_low, "--ramp-low"),
            (self.ramp_high, "--ramp-high"),
            (self.ramp_step, "--ramp-step"),
            (self.search_start, "--search-start"),
            (self.search_min, "--search-min"),
            (self.search_max, "--search-max"),
            (self.capacity, "--capacity"),
        ] {
            if let Some(r) = rate {
                crate::load::check_rate(r, flag)?;
            }
        }
        if uses("ramp") {
            self.ramp_config(d).rates()?;
        }
        if uses("search") {
            self.search_config(d)?;
            // Given both, a start outside the bounds was moved to them without a word
            // (`--search-start 50 --search-min 100` probed 100 first).
            let too_low = self
                .search_start
                .zip(self.search_min)
                .filter(|(s, m)| s < m);
            let too_high = self
                .search_start
                .zip(self.search_max)
                .filter(|(s, m)| s > m);
            for (outside, flag) in [(too_low, "--search-min"), (too_high, "--search-max")] {
                if let Some((start, bound)) = outside {
                    bail!(
                        "--search-start {start} is outside {flag} {bound}: start the search \
                         between --search-min and --search-max"
                    );
                }
            }
        }
        if let Some(i) = self.idle_duration {
            if !(i >= 0.0 && i.is_finite()) {
                bail!("--idle-duration must be 0 or more seconds");
            }
        }
        if uses("levels") {
            let levels = self.levels_pct()?;
            if levels.is_empty() {
                bail!("--levels is empty (e.g. --levels 100,90,80)");
            }
            // Checked here, before any server starts: a level of 0 failed the test
            // once the server ran, and a failed run was stored.
            crate::capacity::check_levels(&levels)?;
            if let Some(c) = self.capacity {
                positive(c, "capacity")?;
                // Its top level is the rate offered: 1e8 at 1000% is 1e9/s.
                let top = levels.iter().copied().fold(0.0, f64::max);
                crate::load::check_rate(c * top / 100.0, "--capacity x its top level")?;
            } else if !tests
                .iter()
                .take_while(|t| *t != "levels")
                .any(|t| t == "ramp" || t == "search")
            {
                bail!("the `levels` test needs --capacity, or a `ramp` or `search` test before it (e.g. --tests search,levels)");
            }
        }
        Ok(())
    }
}

/// The capacities the ramps or searches of one sweep point found, carried to a later
/// `levels` test: its repetitions run after the ramp's (or search's) repetitions, and
/// take the median of what they found, not the last one's alone.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Found {
    /// The test that found them (`ramp` or `search`).
    test: String,
    /// Each repetition's capacity; None for one that found none.
    each: Vec<Option<f64>>,
    /// Why a repetition's capacity is only a lower bound (a ramp that never saturated,
    /// a search whose every probe met the objective), one for each such.
    bounds: Vec<String>,
    /// The `generator_late` warnings of repetitions whose generator fell behind on CPUs
    /// not known to be apart from the server's: their capacity may be the generator's.
    late: Vec<String>,
    /// A `levels` test has taken them: the next ramp or search starts a new series.
    taken: bool,
}

impl Found {
    /// A ramp's or search's repetition found `capacity` (None: none); `bound`: why it
    /// is only a lower bound of what the server sustains, when it is; `late`: its
    /// `generator_late` warning, where it found it with its generator behind (a `levels`
    /// test taking it repeats it).
    pub fn record(
        &mut self,
        test: &str,
        capacity: Option<f64>,
        bound: Option<String>,
        late: Option<String>,
    ) {
        if self.taken || self.test != test {
            self.each.clear();
            self.bounds.clear();
            self.late.clear();
        }
        self.test = test.to_string();
        self.taken = false;
        self.each.push(capacity);
        self.bounds.extend(bound.filter(|_| capacity.is_some()));
        self.late.extend(late);
    }

    /// Why the capacity [`Found::take`] gives is a lower bound (the first such
    /// repetition's reason, and how many of them were, when several ran); None when each
    /// found the server's limit.
    pub fn bound(&self) -> Option<String> {
        let why = self.bounds.first()?;
        let found = self.each.iter().flatten().count();
        Some(match found {
            1 => why.clone(),
            _ => format!(
                "{why}; {} of the {found} repetitions found a bound",
                self.bounds.len()
            ),
        })
    }

    /// The capacity for a `levels` test: the median over the repetitions that found
    /// one, the lower of the middle two for an even count (a rate a repetition measured;
    /// the mean of 7,000 and 5,000 was a 6,000 no search had shown to meet its
    /// objective), with how it was reached (said in the result); None when none found
    /// one.
    pub fn take(&mut self) -> Option<(f64, String)> {
        self.taken = true;
        let mut got: Vec<f64> = self.each.iter().flatten().copied().collect();
        got.sort_by(f64::total_cmp);
        let n = got.len();
        if n == 0 {
            return None;
        }
        let median = got[(n - 1) / 2];
        let test = &self.test;
        let lower = if n.is_multiple_of(2) {
            "; the lower of the middle two, a rate one of them measured"
        } else {
            ""
        };
        let how = match (self.each.len(), n) {
            (1, _) => format!("what the {test} before it found"),
            (all, found) if all == found => {
                let lower = lower
                    .strip_prefix("; ")
                    .map_or(String::new(), |l| format!(" ({l})"));
                format!("the median of what the {all} {test} repetitions before it found{lower}")
            }
            (all, found) => format!(
                "the median of what {found} of the {all} {test} repetitions before it found \
                 (the others found none{lower})"
            ),
        };
        Some((median, how))
    }
}

/// Add the step a capacity test has just measured to what it measured so far, for
/// [`Ctx::save_partial`]: its figures (labelled `phase` and `step`, in the order the
/// steps ran) and latency histogram, no headline (the test has not decided it), and a
/// warning that says so, kept only if the process ends before the test does.
/// `levels`: the levels' percentages, in the order they run (active idle after them),
/// so that each kept step is labelled `level` as the finished test's are, and the
/// levels view and compare read a killed test's steps (review H, 5).
fn add_partial(
    so_far: &mut StepOutput,
    test: &str,
    step: &RateStep,
    unit: &str,
    levels: Option<&[f64]>,
) {
    // Every step has one demanded rate: their count is this step's index.
    let i = so_far
        .metrics
        .iter()
        .filter(|m| m.name == "demanded_rate_per_s")
        .count();
    so_far.duration_s += step.duration_s;
    let at = match levels {
        Some(pcts) => ("level", capacity::level_label(pcts.get(i).copied())),
        None => ("step", i.to_string()),
    };
    let mut m = step.metrics(&[("phase", test.to_string()), at]);
    relabel_units(&mut m, unit);
    so_far.metrics.extend(m);
    if let Some(h) = &step.latency {
        so_far
            .histograms
            .push(model::hist::HistogramRecord::from_histogram(
                &format!("{test}_step{i}"),
                &step.latency_kind,
                h,
            ));
    }
    so_far.flags = vec![Flag::warning(
        model::PARTIAL,
        format!(
            "the {test} test did not finish (rackbench was killed, or the machine stopped): \
             its {} step(s) up to then are kept, each as it completed, with no verdict over \
             them",
            i + 1
        ),
    )];
}

/// Run one capacity test. `measure(rate)` runs one open-loop step at `rate` per second
/// (the driver handles rate 0, active idle, itself); `found` carries the capacities the
/// ramps or searches found to a later `levels` test of the same sweep point; `hlog`, when
/// given, is where the steps' latency histograms go as an HdrHistogram interval log.
#[allow(clippy::too_many_arguments)]
pub fn run(
    workload: &str,
    test: &str,
    cfg: &CapacityConfig,
    d: &CapacityDefaults,
    ctx: &Ctx,
    found: &mut Found,
    hlog: Option<&str>,
    loadgen_threads: usize,
    mut measure: impl FnMut(f64) -> anyhow::Result<RateStep>,
) -> anyhow::Result<StepOutput> {
    let idle_s = cfg.idle_duration_s(d);
    // What the steps so far measured, grown a step at a time, for a crash to keep.
    let mut so_far = StepOutput {
        settings: resolved_settings(test, cfg, d),
        ..StepOutput::default()
    };
    let levels = (test == "levels").then(|| cfg.levels_pct().ok()).flatten();
    let mut step_fn = |rate: f64| -> anyhow::Result<RateStep> {
        let mark = ctx.watch.mark();
        // After the mark: it closes an interval once the sampler is free, which a tick
        // waiting for a meter or a BMC (up to a quarter of an interval) or a remote host's
        // round trip delays; timed from before it, the window landed that much late.
        let marked = SystemTime::now();
        let mut step = if rate <= 0.0 {
            active_idle(idle_s)
        } else {
            measure(rate)?
        };
        if let Some(m) = mark {
            // Only the step's measured window: the start's lead (300 ms or more for a
            // generator elsewhere), the connections' setup, the warm-up and the drain
            // are near-idle time that would dilute its power and CPU.
            let after = |t: SystemTime| t.duration_since(marked).map_or(0.0, |d| d.as_secs_f64());
            let window = step.window.map(|(from, to)| (after(from), after(to)));
            step.extra.extend(ctx.watch.since_mark(m, window));
        }
        // A lost host gives no mark and no samples, nor does a run without telemetry:
        // without why, the step reads as one of a host with nothing to sample.
        step.unsampled = match ctx.watch.lost() {
            Some(how) => Some(Unsampled::Lost(how)),
            None if ctx.watch.off() => Some(Unsampled::Off),
            None => None,
        };
        if ctx.partial.is_some() {
            add_partial(&mut so_far, test, &step, d.rate_unit, levels.as_deref());
            ctx.save_partial(&so_far);
        }
        Ok(step)
    };
    let unit = d.rate_unit;
    let mut flags = Vec::new();
    // What every procedure hands back: its metrics and the steps it measured.
    // `kept`: the steps whose load the server kept up with (a ramp's sustained steps, a
    // search's probes that met the objective, every level): only there does a step
    // behind its schedule say the generator could not offer the load. Past saturation
    // every connection waits on the server, and requests fall late or unsent by design.
    let (headline, mut metrics, mut missing, histograms, stopped, steps, kept): (
        &str,
        Vec<Metric>,
        _,
        _,
        Option<String>,
        Vec<RateStep>,
        Vec<RateStep>,
    ) = match test {
        "ramp" => {
            let r = capacity::ramp(&cfg.ramp_config(d), &mut step_fn)?;
            ctx.note_table(&format!("{workload} ramp:"), &r.table());
            let bound = r.saturation.is_none().then(|| match &r.stopped {
                Some(why) => format!("the ramp stopped before it saturated ({why})"),
                None => format!(
                    "the ramp never saturated up to {:.0} {unit} (raise --ramp-high)",
                    r.points.last().map_or(0.0, |p| p.step.demanded_rate_per_s)
                ),
            });
            found.record("ramp", r.last_sustained_rate_per_s(), bound, None);
            if let Some(s) = &r.saturation {
                let step = &r.points[s.index].step;
                // Judged only where the replies fell short of the demand: a server that
                // refused quickly (errors over the limit) is idle by its own choice.
                if step.served_rate_per_s()
                    < r.config.saturation_fraction * step.demanded_rate_per_s
                {
                    flags.extend(server_not_busy(step, unit));
                }
            }
            let steps = r.points.iter().map(|p| p.step.clone()).collect();
            let kept: Vec<RateStep> = r
                .points
                .iter()
                .filter(|p| p.verdict == capacity::Verdict::Sustained)
                .map(|p| p.step.clone())
                .collect();
            // Its first step already saturated (every reply an error, a server slower
            // than the lowest rate): no rate was sustained, and its peak is no capacity.
            // It was stored `ok`, "996 req/s" of 404s (acceptance pass E, 3). A first step
            // that failed (stopped, its server gone) says so in its own flags.
            if kept.is_empty() {
                if let Some((first, capacity::Verdict::Saturated(why))) =
                    r.points.first().map(|p| (p, &p.verdict))
                {
                    flags.push(Flag::invalid(
                        "no_sustained_step",
                        format!(
                            "no step of the ramp was sustained, from its first at {:.0} {unit} \
                             ({why}): its reply rates are no capacity; lower --ramp-low, or \
                             find why the server fails",
                            first.step.demanded_rate_per_s
                        ),
                    ));
                }
            }
            // A step sustained above the saturation: the ramp's saturation point and last
            // sustained rate are not the server's limit (3000/s saturated, 7000/s then
            // sustained, and the run said nothing).
            if let Some((saturated, sustained)) = r.sustained_after_saturation() {
                flags.push(Flag::warning(
                    "sustained_after_saturation",
                    format!(
                        "the step at {saturated:.0} {unit} saturated, yet the one at \
                         {sustained:.0} {unit} after it was sustained: that saturation was \
                         passing (a busy host, a server warming up, steps too short to \
                         settle), not the server's limit, and the saturation point and last \
                         sustained rate read from it are not its capacity; run the ramp \
                         again on a quiet host, with a longer --step-duration or a warm-up"
                    ),
                ));
            }
            let (m, miss, h) = (r.to_metrics(), r.missing(), r.histograms());
            ("max_reply_rate_per_s", m, miss, h, r.stopped, steps, kept)
        }
        "search" => {
            let mut sc = cfg.search_config(d)?;
            sc.generator_apart =
                !cfg.server_given && ctx.roles.as_ref().is_some_and(generators_apart);
            let r = capacity::search(&sc, &mut step_fn)?;
            if let Some(best) = r.max_rate_meeting_slo_per_s() {
                ctx.note(&format!(
                    "{workload} search: {best:.0} {unit} meets {}",
                    sc.objective
                ));
            }
            let bound =
                r.lowest_failing_rate_per_s
                    .is_none()
                    .then(|| match (&r.stopped, &r.note) {
                        (Some(why), _) => {
                            format!("the search stopped before a probe missed ({why})")
                        }
                        // A probe missed, but with the generator behind: the note says so.
                        (None, Some(note)) if r.generator_bound_rate_per_s.is_some() => {
                            note.clone()
                        }
                        (None, Some(note)) => {
                            format!("no probe of the search missed its objective: {note}")
                        }
                        (None, None) => {
                            "every probe of the search met its objective (raise --search-max)"
                                .to_string()
                        }
                    });
            let late = r.generator_late_warning();
            found.record(
                "search",
                r.max_rate_meeting_slo_per_s(),
                bound,
                late.clone(),
            );
            if let Some(n) = &r.note {
                flags.push(Flag::warning("search_limit", n.clone()));
            }
            if let Some(w) = late {
                flags.push(Flag::warning("generator_late", w));
            }
            let steps = r.points.iter().map(|p| p.step.clone()).collect();
            let kept = r
                .points
                .iter()
                .filter(|p| p.meets)
                .map(|p| p.step.clone())
                .collect();
            let (m, miss, h) = (r.to_metrics(), r.missing(), r.histograms());
            (
                "max_rate_meeting_slo_per_s",
                m,
                miss,
                h,
                r.stopped,
                steps,
                kept,
            )
        }
        "levels" => {
            let (capacity, how) = match cfg.capacity {
                Some(c) => (c, "given with --capacity".to_string()),
                None => found.take().with_context(|| {
                    "the `levels` test has no capacity: the ramp or search before it found none; give --capacity"
                })?,
            };
            // The objective a search found the capacity against (or one given with
            // --slo): each level is judged against it as the search's probes were.
            let from_search = cfg.capacity.is_none() && found.test == "search";
            let objective = if from_search || cfg.slo.is_some() {
                Some(cfg.search_config(d)?)
            } else {
                None
            };
            ctx.note(&format!(
                "{workload} levels: 100% is {capacity:.0} {unit}, {how}"
            ));
            // A capacity that is only a lower bound makes every level a smaller share of
            // what the server can do than it says, and the overall perf/W SPECpower's at
            // other loads: 100% of a ramp that never saturated at 20k was a third of a
            // server sustaining 60k, unflagged (audit, 3).
            if let Some(why) = found.bound().filter(|_| cfg.capacity.is_none()) {
                flags.push(Flag::warning(
                    "capacity_a_bound",
                    format!(
                        "100% is {capacity:.0} {unit}, {how}, but that is a lower bound: \
                         {why}; the levels are not those shares of the server's capacity, \
                         nor their overall perf/W SPECpower's: find its limit first, or give \
                         --capacity"
                    ),
                ));
            }
            // A search that bisected misses with its generator behind may have found the
            // generator's limit, not the server's: its levels are shares of that.
            if let Some(w) = found.late.first().filter(|_| cfg.capacity.is_none()) {
                flags.push(Flag::warning(
                    "generator_late",
                    format!(
                        "100% is {capacity:.0} {unit}, {how}, but that search's generator \
                         fell behind in {} of its {} repetition(s), and the capacity may be \
                         the generator's: {w}",
                        found.late.len(),
                        found.each.len()
                    ),
                ));
            }
            let mut lc = LevelsConfig::new(capacity);
            lc.levels_pct = cfg.levels_pct()?;
            lc.active_idle = idle_s > 0.0;
            let r = capacity::load_levels(&lc, &mut step_fn)?;
            let mut m = r.to_metrics();
            m.push(Metric::new("capacity_per_s", capacity, unit));
            // A level that did not deliver its load is not that level, and the overall
            // ops/W over it is not SPECpower's: 15,764 ops/s at a "100%" of 600,000 was
            // published with rc 0 (acceptance pass E, 2). The ramp's rule judges it.
            let fraction = cfg.ramp_config(d).saturation_fraction;
            let short: Vec<String> = r
                .points
                .iter()
                .filter_map(|p| {
                    // A level above 100% is an overload asked for: short of it is its
                    // finding, not a wrong load.
                    let pct = p.level_pct.filter(|pct| *pct <= 100.0)?;
                    let target = p.step.demanded_rate_per_s;
                    let got = p.step.good_reply_rate_per_s();
                    (p.step.error.is_none() && got < fraction * target).then(|| {
                        format!(
                            "{pct}% ({target:.0} {unit}) replied {got:.0}, {:.1}% of it",
                            100.0 * got / target
                        )
                    })
                })
                .collect();
            if !short.is_empty() {
                flags.push(Flag::invalid(
                    "level_below_target",
                    format!(
                        "levels below {:.0}% of their load: {}; they are not those loads, and \
                         the overall perf/W is not of them: lower --capacity to what the \
                         server sustains (a ramp or search before the levels finds it)",
                        fraction * 100.0,
                        short.join("; ")
                    ),
                ));
            }
            // A level whose requests failed beyond the limit is not that load either: its
            // per-watt figures count only the replies that were not errors, but a server
            // failing 8% of a level's requests stood at 92% of the level's target, under
            // the rule above, and nothing said it failed them (no --slo, no verdict). As
            // above, an overload asked for (above 100%) failing is its finding; and a level
            // that made no request failed none (the rule above says it delivered nothing).
            let max_error_pct = cfg.ramp_config(d).max_error_pct;
            let erring: Vec<String> = r
                .points
                .iter()
                .filter(|p| p.level_pct.is_some_and(|pct| pct <= 100.0))
                .filter(|p| p.step.error.is_none() && p.step.replies + p.step.lost_requests > 0)
                .filter(|p| p.step.errors_pct() > max_error_pct)
                .map(|p| format!("{} {:.2}%", p.label(), p.step.errors_pct()))
                .collect();
            if !erring.is_empty() {
                flags.push(Flag::invalid(
                    "level_errors",
                    format!(
                        "levels whose requests failed above the {max_error_pct}% limit: {}; \
                         their replies per watt count only the replies that were not errors, \
                         but a level failing its requests is not that load: find what failed \
                         (the server's log, a wrong --path), or raise --max-error-pct",
                        erring.join(", ")
                    ),
                ));
            }
            if let Some(sc) = &objective {
                let verdicts = r.against(sc);
                let slo = sc.objective.to_string();
                for v in &verdicts {
                    let at = |m: Metric| {
                        m.label("phase", "levels")
                            .label("level", &v.level)
                            .label("slo", &slo)
                    };
                    if let Some(ns) = v.latency_at_objective_ns {
                        m.push(at(Metric::new("latency_at_objective_ns", ns as f64, "ns")));
                    }
                    m.push(at(Metric::new(
                        "meets_objective",
                        if v.meets { 1.0 } else { 0.0 },
                        "bool",
                    )));
                }
                let missed: Vec<String> = verdicts
                    .iter()
                    .filter(|v| !v.meets)
                    .map(|v| {
                        format!(
                            "{} ({:.0} {unit}): {}",
                            v.level,
                            v.demanded_rate_per_s.round(),
                            v.reason
                        )
                    })
                    .collect();
                // The 100% level is the search's answer again: at the objective's edge. A
                // lower level that missed is not (the note read as if 100% had missed).
                let top_missed = verdicts.iter().any(|v| !v.meets && v.level == "100%");
                if !missed.is_empty() {
                    let edge = if from_search && top_missed {
                        format!(
                            "; 100% is the highest rate the search found meeting {slo}, at the \
                             objective's edge, and measured again it can miss: read these \
                             levels as loads, not as meeting {slo} (longer --step-duration \
                             makes the search's answer steadier)"
                        )
                    } else {
                        String::new()
                    };
                    flags.push(Flag::warning(
                        "level_misses_objective",
                        format!("levels that missed {slo}: {}{edge}", missed.join("; ")),
                    ));
                }
            }
            let steps: Vec<RateStep> = r.points.iter().map(|p| p.step.clone()).collect();
            let kept = steps.clone();
            let (miss, h) = (r.missing(), r.histograms());
            (
                "overall_reply_rate_per_w",
                m,
                miss,
                h,
                r.stopped,
                steps,
                kept,
            )
        }
        other => bail!("`{other}` is not a capacity test (ramp, search, levels)"),
    };
    let dur = steps.iter().map(|s| s.duration_s).sum::<f64>();
    // The test's telemetry is its steps' windows, as its duration is (the gaps between
    // them left out); whole when some step does not know its window.
    let measured = steps
        .iter()
        .map(|s| s.window)
        .collect::<Option<Vec<_>>>()
        .unwrap_or_default();
    // Power that was modelled from CPU rather than measured says so beside the figures.
    if metrics.iter().any(|m| {
        m.name == "power_w"
            && m.labels
                .get("source")
                .is_some_and(|s| s.starts_with("model"))
    }) {
        flags.push(Flag::warning(
            "power_modelled",
            "power at each step is the declared --power-model applied to CPU busy, not a measurement",
        ));
    }
    if let Some(path) = hlog {
        let comment = format!("rackbench {workload} {test}");
        let text = capacity::write_steps_log(Vec::new(), &comment, steps.iter())?;
        if let Err(e) = std::fs::File::create(path).and_then(|mut f| f.write_all(&text)) {
            flags.push(Flag::warning(
                "hlog_not_written",
                format!("could not write the interval log {path}: {e}"),
            ));
        }
    }
    // The rule of a --rate test, step by step: a step's figures are of a load that
    // was not offered as demanded (only where the server kept up: see `kept`).
    let behind: Vec<String> = kept
        .iter()
        .filter(|s| s.behind_schedule())
        .map(|s| {
            format!(
                "{:.0} {unit} ({:.1}% late or unsent)",
                s.demanded_rate_per_s.round(),
                s.behind_fraction() * 100.0
            )
        })
        .collect();
    if !behind.is_empty() {
        flags.push(Flag::warning(
            "behind_schedule",
            format!(
                "steps behind schedule, more than 1% of their requests sent more than 1 ms \
                 after their intended time or not at all: {}; the generator (or the \
                 connections, all busy with a slow server) could not keep those rates, so \
                 their figures are not of the demanded load: add {}, or {}",
                behind.join(", "),
                d.more_load,
                crate::capacity::MORE_GENERATOR_CPU
            ),
        ));
    }
    // A host's CPU busy below the step's own processes' CPU cannot be right: the kernel
    // missed their time (the whole test's telemetry says it too, but not of a step; a
    // level's modelled watts read 53.5 at 75% beside 59.3 at 50%).
    let uncounted: Vec<String> = steps
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            let m = s.extra.iter().find(|m| m.name == TICKS_MISSED)?;
            // A level by its name, as its table names it (its steps run in its order).
            let level = levels.as_ref().and_then(|l| l.get(i));
            let step = match (s.demanded_rate_per_s.round(), level) {
                (r, _) if r <= 0.0 => "active idle".to_string(),
                (r, Some(pct)) => format!("{} ({r:.0} {unit})", capacity::level_label(Some(*pct))),
                (r, None) => format!("{r:.0} {unit}"),
            };
            Some(format!("{step} ({:.0}% of one CPU uncounted)", m.value))
        })
        .collect();
    if !uncounted.is_empty() {
        let modelled = flags.iter().any(|f| f.code == "power_modelled");
        flags.push(Flag::warning(
            // Its own code: the whole test's `cpu_ticks_missed` (per host, judged with the
            // kernel's other names) can be raised beside it, and two of one code read as
            // two hosts. Interrupt time counts as the tasks' here ([`TICKS_MISSED`]).
            "step_cpu_ticks_missed",
            format!(
                "steps whose host's CPUs were counted busy for less than this test's own \
                 processes ran: {}; the kernel samples CPU time at its ticks, and a paced \
                 load that sleeps between them goes uncounted: their host CPU busy reads low \
                 (the processes' own CPU is exact){}",
                uncounted.join(", "),
                if modelled {
                    ", and so does the power modelled from it (their perf/W reads high)"
                } else {
                    ""
                }
            ),
        ));
    }
    // Other programs busy while the test's own processes rested (active idle): the step's
    // power is theirs too, and SPECpower's overall perf/W divides by it.
    let busy_at_rest: Vec<String> = steps
        .iter()
        .filter_map(|s| {
            let m = s.extra.iter().find(|m| m.name == OTHERS_AT_REST)?;
            let step = match s.demanded_rate_per_s.round() {
                r if r <= 0.0 => "active idle".to_string(),
                r => format!("{r:.0} {unit}"),
            };
            Some(format!("{step} ({:.0}% of one CPU)", m.value))
        })
        .collect();
    if !busy_at_rest.is_empty() {
        flags.push(Flag::warning(
            "step_other_load",
            format!(
                "other programs took the host's CPUs while this test's own processes rested: \
                 {}; that step's power and CPU are theirs too (and a levels test's overall \
                 perf/W divides by its active idle's power): run again on a quiet host",
                busy_at_rest.join(", ")
            ),
        ));
    }
    if let Some(why) = steps.iter().find_map(|s| s.bytes_not_counted.clone()) {
        missing.push(MissingMetric {
            name: "net_io_bytes_per_s".into(),
            reason: why,
        });
    }
    if let Some(why) = &stopped {
        flags.push(Flag::warning(
            "stopped_early",
            format!("ended early: {why}"),
        ));
    }
    metrics.retain(|m| m.value.is_finite());
    relabel_units(&mut metrics, unit);
    Ok(StepOutput {
        headline: headline.to_string(),
        duration_s: dur,
        metrics,
        missing,
        histograms,
        flags,
        error: stopped.filter(|w| !w.starts_with("interrupted")),
        loadgen_threads: Some(loadgen_threads),
        measured,
        settings: resolved_settings(test, cfg, d),
    })
}

/// What this test ran with that the point's settings do not say, defaults included: an
/// open loop's way of waiting, which `--wait auto` picks per test (a search's probes
/// spin, its levels sleep, and the sleep's wake-up is in each level's latency), and the
/// bounds, objective and rule its verdicts came from (review H, 12). The point's load
/// length and count ([`LOAD_STOPS`]) are not a capacity test's: null takes them out.
fn resolved_settings(test: &str, cfg: &CapacityConfig, d: &CapacityDefaults) -> Params {
    let r = cfg.ramp_config(d);
    let mut s = serde_json::json!({
        "step_duration": cfg.step_duration_s(d),
        "saturation_fraction": r.saturation_fraction,
        "max_error_pct": r.max_error_pct,
    });
    let m = s.as_object_mut().expect("an object");
    for k in LOAD_STOPS {
        m.insert(k.into(), Value::Null);
    }
    if d.wait_modes {
        let wait = crate::load::wait_mode(cfg.sleep_when_idle(test));
        m.insert("wait".into(), Value::String(wait.into()));
    }
    match test {
        "ramp" => {
            m.insert("ramp_low".into(), r.low_rate_per_s.into());
            m.insert("ramp_high".into(), r.high_rate_per_s.into());
            m.insert("ramp_step".into(), r.step_rate_per_s.into());
            m.insert(
                "steps_after_saturation".into(),
                r.steps_after_saturation.into(),
            );
        }
        "search" => {
            if let Ok(c) = cfg.search_config(d) {
                m.insert("slo".into(), cfg.slo.as_deref().unwrap_or(d.slo).into());
                m.insert("search_start".into(), c.start_rate_per_s.into());
                m.insert("search_min".into(), c.min_rate_per_s.into());
                m.insert("search_max".into(), c.max_rate_per_s.into());
                m.insert("search_steps".into(), c.max_steps.into());
            }
        }
        "levels" => {
            if let Ok(l) = cfg.levels_pct() {
                m.insert("levels".into(), l.into());
            }
            m.insert("idle_duration".into(), cfg.idle_duration_s(d).into());
        }
        _ => {}
    }
    match model::whole_numbers(&s) {
        Value::Object(m) => m,
        _ => Params::new(),
    }
}

/// Whether every load generator is known to run on another kernel than the server's (the
/// hosts' boot ids known and different), so that a saturated server cannot have made it
/// late by taking its CPUs. A generator on the server's host (even pinned apart, which
/// this does not see), in a network namespace or container of its machine, or of a
/// kernel not known is not: a search's miss with it behind is bisected as the server's.
fn generators_apart(roles: &crate::host::Roles) -> bool {
    !roles.loadgens.is_empty()
        && roles
            .loadgens
            .iter()
            .all(|g| roles.on_server_kernel(g.as_ref()) == Some(false))
}

/// The server processes' CPU below which a saturation is said not to be the server's CPU:
/// a single-threaded server (redis, an nginx worker) that is the limit runs near 100% of
/// its CPU, and several sharing fewer CPUs sum to about as much.
const SERVER_BUSY_PCT: f64 = 70.0;

/// A ramp's saturation at a step where the server was not busy: its busiest watched
/// process and all of them together (the load generator's own left out) under
/// [`SERVER_BUSY_PCT`] of a CPU, so the server's CPU was not what fell behind and the
/// saturation may be the load generator's (MISSION: a saturated generator gives no
/// server figure). None where no server process was watched, or the server was busy.
fn server_not_busy(step: &RateStep, unit: &str) -> Option<Flag> {
    let server: Vec<(&String, f64)> = step
        .extra
        .iter()
        .filter(|m| m.name == "process_cpu_pct")
        .filter_map(|m| Some((m.labels.get("role")?, m.value)))
        .filter(|(role, _)| !model::is_rackbench_process(role))
        .collect();
    let (role, busiest) = server.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    let sum: f64 = server.iter().map(|(_, pct)| pct).sum();
    (sum < SERVER_BUSY_PCT).then(|| {
        Flag::warning(
            "saturation_not_server_cpu",
            format!(
                "at the saturation step ({:.0} {unit}) the server's processes used {sum:.0}% \
                 of a CPU in all (the busiest, {role}, {busiest:.0}%): they were not held \
                 back by their own CPU time; the load generator (see its CPU and \
                 behind_schedule; {}), the network, the server's own waits (locks, disk), \
                 or other processes taking the host's CPUs (see other_load) may be",
                step.demanded_rate_per_s,
                crate::capacity::MORE_GENERATOR_CPU
            ),
        )
    })
}

/// The procedures count requests; say what this workload's operations are (`ops/s`,
/// `txn/s`): `req/s` becomes `rate_unit`, `req` its count, `req/s/W` its rate per watt.
fn relabel_units(metrics: &mut [Metric], rate_unit: &str) {
    let count = rate_unit.trim_end_matches("/s");
    for m in metrics {
        m.unit = match m.unit.as_str() {
            "req/s" => rate_unit.to_string(),
            "req" => count.to_string(),
            "req/s/W" => format!("{rate_unit}/W"),
            _ => continue,
        };
    }
}

/// SPECpower's active idle: the system ready, no load offered, for `secs`.
fn active_idle(secs: f64) -> RateStep {
    let started = std::time::SystemTime::now();
    let t0 = std::time::Instant::now();
    let end = t0 + std::time::Duration::from_secs_f64(secs);
    while std::time::Instant::now() < end && !crate::stop::stop_requested() {
        std::thread::sleep(
            (end - std::time::Instant::now()).min(std::time::Duration::from_millis(50)),
        );
    }
    let mut s = RateStep::new(0.0);
    let took = t0.elapsed();
    s.duration_s = took.as_secs_f64();
    s.started_at = Some(started);
    s.window = Some((started, started + took));
    s
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::workload::{NoWatch, Watch};

    const D: CapacityDefaults = CapacityDefaults {
        typical_rate_per_s: 2000.0,
        step_duration_s: 0.01,
        rate_unit: "ops/s",
        slo: "p99<1ms",
        wait_modes: true,
        more_load: "--threads or -c",
    };

    fn params(v: Value) -> Params {
        v.as_object().unwrap().clone()
    }

    /// A watch whose "power" is 100 W + the demanded rate / 10 of the step it closes,
    /// the way a real sampler would see a server that draws more under more load.
    struct FakeWatch {
        marks: AtomicU64,
        last_rate: Arc<AtomicU64>,
        modelled: bool,
    }

    impl Watch for FakeWatch {
        fn set_warmup(&self, _on: bool) {}
        fn watch_process(&self, _role: &str, _pid: u32) {}
        fn mark(&self) -> Option<u64> {
            Some(self.marks.fetch_add(1, Ordering::Relaxed))
        }
        fn since_mark(&self, _mark: u64, _window: Option<(f64, f64)>) -> Vec<Metric> {
            let rate = f64::from_bits(self.last_rate.load(Ordering::Relaxed));
            let source = if self.modelled {
                "model:system"
            } else {
                "meter:system"
            };
            vec![
                Metric::new("cpu_busy_pct", rate / 40.0, "%"),
                Metric::new("power_w", 100.0 + rate / 10.0, "W").label("source", source),
            ]
        }
    }

    /// A context whose watch measures nothing the test looks at.
    fn unwatched_ctx() -> Ctx {
        ctx(Arc::new(FakeWatch {
            marks: AtomicU64::new(0),
            last_rate: Arc::new(AtomicU64::new(0)),
            modelled: false,
        }))
    }

    fn ctx(watch: Arc<dyn Watch>) -> Ctx {
        Ctx {
            watch,
            ..Ctx::quiet()
        }
    }

    /// A kv capacity test of `cfg`, with the defaults, quiet, one generator thread.
    fn kv_quiet(
        test: &str,
        cfg: &CapacityConfig,
        found: &mut Found,
        measure: impl FnMut(f64) -> anyhow::Result<RateStep>,
    ) -> StepOutput {
        run("kv", test, cfg, &D, &Ctx::quiet(), found, None, 1, measure).unwrap()
    }

    /// A server that answers everything up to 1000/s, with 1 ms p99 below 800/s.
    fn step(rate: f64) -> anyhow::Result<RateStep> {
        let mut s = RateStep::new(rate);
        s.reply_rate_per_s = rate.min(1000.0);
        s.replies = s.reply_rate_per_s as u64;
        s.duration_s = 1.0;
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
        let lat = if rate < 800.0 { 500_000 } else { 5_000_000 };
        h.record_n(lat, 100).unwrap();
        s.latency = Some(h);
        s.latency_kind = "corrected".into();
        Ok(s)
    }
    use hdrhistogram::Histogram;

    #[test]
    fn capacity_keys_are_taken_out_and_the_rest_left_to_the_workload() {
        let (rest, cfg) = split_params(
            "kv",
            &params(
                json!({"clients": 5, "slo": "p99<2ms", "ramp_high": 5000, "levels": [100, "50%"]}),
            ),
        )
        .unwrap();
        assert_eq!(rest.len(), 1);
        assert!(rest.contains_key("clients"));
        assert_eq!(cfg.slo.as_deref(), Some("p99<2ms"));
        assert_eq!(cfg.levels_pct().unwrap(), vec![100.0, 50.0]);
        let r = cfg.ramp_config(&D);
        assert_eq!(
            (r.low_rate_per_s, r.high_rate_per_s, r.step_rate_per_s),
            (100.0, 5000.0, 100.0)
        );
        let err = split_params("kv", &params(json!({"ramp_low": "lots"}))).unwrap_err();
        assert!(format!("{err:#}").contains("ramp_low"), "{err:#}");
    }

    #[test]
    fn bad_capacity_input_is_refused_before_anything_runs() {
        let t = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let cfg = |v: Value| split_params("kv", &params(v)).unwrap().1;
        let e = cfg(json!({})).validate(&t(&["levels"]), &D).unwrap_err();
        assert!(e.to_string().contains("--capacity"), "{e}");
        cfg(json!({}))
            .validate(&t(&["search", "levels"]), &D)
            .unwrap();
        let e = cfg(json!({"slo": "fast"}))
            .validate(&t(&["search"]), &D)
            .unwrap_err();
        assert!(format!("{e:#}").contains("--slo"), "{e:#}");
        let e = cfg(json!({"levels": ["x"]}))
            .validate(&t(&["levels"]), &D)
            .unwrap_err();
        assert!(e.to_string().contains("percentage"), "{e}");
        // Acceptance pass D, 5: a level of 0 or below was refused only once the server
        // ran (a stored failed run), and a search from 0/s probed at about one request.
        for levels in [json!([0]), json!([200, -10])] {
            let e = cfg(json!({"capacity": 1000, "levels": levels}))
                .validate(&t(&["levels"]), &D)
                .unwrap_err();
            assert!(
                e.to_string()
                    .starts_with("load levels must be percentages of the capacity above 0"),
                "{e}"
            );
        }
        let e = cfg(json!({"search_start": 0}))
            .validate(&t(&["search"]), &D)
            .unwrap_err();
        assert!(
            format!("{e:#}").contains("search start rate must be above 0"),
            "{e:#}"
        );
        let e = cfg(json!({"step_duration": 0}))
            .validate(&t(&["ramp"]), &D)
            .unwrap_err();
        assert!(e.to_string().contains("step-duration"), "{e}");
        let e = cfg(json!({"wait": "nap"}))
            .validate(&t(&["ramp"]), &D)
            .unwrap_err();
        assert!(e.to_string().contains("--wait"), "{e}");
        // A generator that keeps its own users' schedule (oltp) has no way of waiting to
        // choose: `--wait sleep` was stored as if it applied (acceptance pass E, 8).
        let own_clock = CapacityDefaults {
            wait_modes: false,
            more_load: "--threads or -c",
            ..D
        };
        let e = cfg(json!({"wait": "sleep"}))
            .validate(&t(&["ramp"]), &own_clock)
            .unwrap_err();
        assert!(e.to_string().contains("leave --wait out"), "{e}");
        // auto: sleep between sends only in load levels; spin or sleep when told.
        assert!(cfg(json!({})).sleep_when_idle("levels"));
        assert!(!cfg(json!({})).sleep_when_idle("search"));
        assert!(cfg(json!({"wait": "sleep"})).sleep_when_idle("set"));
        assert!(!cfg(json!({"wait": "spin"})).sleep_when_idle("levels"));
        // Acceptance pass E, 8: a setting no test asked reads was stored as if it
        // applied (`-t set --capacity 1000`); it is refused, saying which tests read it.
        for (given, tests, says) in [
            (json!({"capacity": 1000}), &["set"][..], "--capacity applies to the levels test, and the tests asked are set: add levels to --tests"),
            (json!({"ramp_low": 5}), &["search"], "--ramp-low applies to the ramp test"),
            (json!({"search_steps": 3}), &["ramp", "levels"], "--search-steps applies to the search test, and the tests asked are ramp,levels"),
            (json!({"step_duration": 2}), &["load"], "--step-duration applies to the ramp, search and levels tests, and the tests asked are load: add ramp, search or levels to --tests"),
            (json!({"saturation_fraction": 0.9}), &["set"], "--saturation-fraction applies to the ramp, search and levels tests"),
            // Acceptance pass E, 11: moved to the bound without a word.
            (json!({"search_start": 50, "search_min": 100}), &["search"], "--search-start 50 is outside --search-min 100"),
            (json!({"search_start": 500, "search_max": 100}), &["search"], "--search-start 500 is outside --search-max 100"),
        ] {
            let e = cfg(given.clone()).validate(&t(tests), &D).unwrap_err();
            assert!(e.to_string().starts_with(says), "{given}: {e}");
        }
        for (given, tests) in [
            (json!({"saturation_fraction": 0.9}), &["search"][..]),
            (json!({"step_duration": 2, "capacity": 10}), &["levels"]),
            (json!({"ramp_low": 5}), &["ramp", "levels"]),
            // Levels are judged by both (below their load; against an objective).
            (
                json!({"saturation_fraction": 0.8, "capacity": 10}),
                &["levels"],
            ),
            (json!({"max_error_pct": 5, "capacity": 10}), &["levels"]),
        ] {
            cfg(given.clone())
                .validate(&t(tests), &D)
                .unwrap_or_else(|e| panic!("{given}: {e}"));
        }
        // The objective without --slo is the workload's (oltp's p90<500ms).
        let tpcc = CapacityDefaults {
            slo: "p90<500ms",
            wait_modes: false,
            more_load: "--threads or -c",
            ..D
        };
        let sc = cfg(json!({})).search_config(&tpcc).unwrap();
        assert_eq!(sc.objective.to_string(), "p90<500ms");
        // Acceptance pass E, 4: 1e12/s ran for tens of minutes, deaf to SIGTERM.
        let e = cfg(json!({"capacity": 1e12}))
            .validate(&t(&["levels"]), &D)
            .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--capacity 1000000000000/s is above the 100 million/s"),
            "{e}"
        );
        cfg(json!({"capacity": 1e8}))
            .validate(&t(&["levels"]), &D)
            .unwrap();
        let e = cfg(json!({"capacity": 1e8, "levels": [1000, 100]}))
            .validate(&t(&["levels"]), &D)
            .unwrap_err();
        assert!(e.to_string().contains("--capacity x its top level"), "{e}");
    }

    #[test]
    fn each_step_carries_what_telemetry_saw_and_levels_give_perf_per_watt() {
        let last_rate = Arc::new(AtomicU64::new(0));
        let watch = Arc::new(FakeWatch {
            marks: AtomicU64::new(0),
            last_rate: last_rate.clone(),
            modelled: false,
        });
        let c = ctx(watch.clone());
        let (_, cfg) = split_params(
            "kv",
            &params(json!({"slo": "p99<1ms", "search_start": 100, "levels": [100, 50]})),
        )
        .unwrap();
        let mut found = Found::default();
        let mut measure = |rate: f64| {
            last_rate.store(rate.to_bits(), Ordering::Relaxed);
            step(rate)
        };
        // One capacity test of this sweep point, the capacity found carried in `found`.
        let mut test = |name: &str, cfg: &CapacityConfig, found: &mut Found| {
            run("kv", name, cfg, &D, &c, found, None, 1, &mut measure)
        };
        let s = test("search", &cfg, &mut found).unwrap();
        let best = found.clone().take().expect("the search found a capacity").0;
        assert!((700.0..800.0).contains(&best), "{best}");
        assert!(s.metrics.iter().any(|m| m.name == "power_w"));

        let l = test("levels", &cfg, &mut found).unwrap();
        let at = |level: &str, name: &str| {
            l.metrics
                .iter()
                .find(|m| {
                    m.name == name && m.labels.get("level").map(String::as_str) == Some(level)
                })
                .map(|m| m.value)
        };
        // The fake's power follows the last rate measured: idle measures nothing, so it
        // reports the 50% level's power again; what matters is that each point has one.
        assert_eq!(at("100%", "power_w"), Some(100.0 + best / 10.0));
        assert_eq!(at("50%", "power_w"), Some(100.0 + best / 20.0));
        assert!(at("active_idle", "power_w").is_some());
        assert!(at("50%", "cpu_busy_pct").is_some());
        let per_w = at("100%", "reply_rate_per_w").unwrap();
        assert!(
            (per_w - best / (100.0 + best / 10.0)).abs() < 1e-6,
            "{per_w}"
        );
        let overall = l
            .metrics
            .iter()
            .find(|m| m.name == "overall_reply_rate_per_w")
            .expect("overall perf/W with power at every level");
        assert!(overall.value > 0.0);
        assert!(!l.flags.iter().any(|f| f.code == "power_modelled"));
        // Units are the workload's (D says ops/s), not the procedures' requests.
        let unit_of = |name: &str| {
            l.metrics
                .iter()
                .find(|m| m.name == name)
                .map(|m| m.unit.clone())
        };
        assert_eq!(unit_of("reply_rate_per_s").as_deref(), Some("ops/s"));
        assert_eq!(unit_of("replies").as_deref(), Some("ops"));
        assert_eq!(
            unit_of("overall_reply_rate_per_w").as_deref(),
            Some("ops/s/W")
        );
        assert_eq!(
            watch.marks.load(Ordering::Relaxed) as usize,
            s_points(&s) + 3
        );

        // A later search that meets its objective nowhere leaves no capacity: the next
        // levels asks for one, rather than taking the earlier search's unsaid.
        let (_, none) = split_params(
            "kv",
            &params(json!({"slo": "p99<1us", "search_start": 100, "levels": [100, 50]})),
        )
        .unwrap();
        test("search", &none, &mut found).unwrap();
        assert_eq!(found.clone().take(), None);
        let e = test("levels", &none, &mut found).unwrap_err().to_string();
        assert!(e.contains("found none"), "{e}");
    }

    /// A ramp whose every reply is an error (a path that 404s) sustains nothing: it was
    /// stored `ok` with a peak of "996 req/s" and no word (acceptance pass E, 3). The
    /// result is invalid, saying why.
    #[test]
    fn a_ramp_of_errors_sustains_nothing_and_says_so() {
        let errors = |rate: f64| {
            let mut s = RateStep::new(rate);
            s.duration_s = 1.0;
            s.replies = (rate * 0.996) as u64;
            s.errors = s.replies;
            s.reply_rate_per_s = s.replies as f64;
            let mut h = model::hist::new_latency_histogram();
            h.record_n(1_000_000, s.replies).unwrap();
            s.latency = Some(h);
            Ok(s)
        };
        let out = run_alone(
            "http",
            "ramp",
            json!({"ramp_low": 1000, "ramp_high": 3000, "ramp_step": 1000}),
            errors,
        );
        let flag = invalid_flag(&out, "no_sustained_step");
        assert!(
            flag.message
                .starts_with("no step of the ramp was sustained, from its first at 1000 ops/s (")
                && flag.message.contains("errors"),
            "{}",
            flag.message
        );
        let peak = out
            .metrics
            .iter()
            .find(|m| m.name == "max_reply_rate_per_s");
        // Its peak counts the replies that were not errors: none. (Counted with its
        // errors, it read 996/s; a ramp sustained at 1,000/s whose next step answered
        // half of 2,000/s with 503s read a peak of 2,000/s, ok and unflagged.)
        assert_eq!(peak.map(|m| m.value), Some(0.0));
    }

    /// A ramp whose first step saturated and whose next was sustained says its saturation
    /// was passing, and why it has no last sustained rate (3000/s replied 2,519, 7000/s
    /// was sustained, 11000/s saturated: stored ok, headline 6,975/s, not a word).
    #[test]
    fn a_ramp_sustained_after_its_saturation_says_so() {
        let dip = |rate: f64| {
            let mut s = RateStep::new(rate);
            s.duration_s = 1.0;
            s.reply_rate_per_s = match rate as u64 {
                3000 => 2519.0,
                r => (r as f64).min(7000.0),
            };
            s.replies = s.reply_rate_per_s as u64;
            let mut h = model::hist::new_latency_histogram();
            h.record_n(1_000_000, s.replies).unwrap();
            s.latency = Some(h);
            Ok(s)
        };
        let out = run_alone(
            "http",
            "ramp",
            json!({"ramp_low": 3000, "ramp_high": 15000, "ramp_step": 4000,
                   "steps_after_saturation": 1}),
            dip,
        );
        let f = out
            .flags
            .iter()
            .find(|f| f.code == "sustained_after_saturation")
            .expect("the passing saturation is said");
        assert!(
            f.message.starts_with(
                "the step at 3000 ops/s saturated, yet the one at 7000 ops/s after it was \
                 sustained:"
            ),
            "{}",
            f.message
        );
        let why = out
            .missing
            .iter()
            .find(|m| m.name == "last_sustained_rate_per_s")
            .expect("no last sustained rate, and why");
        assert!(
            why.reason
                .contains("first step (3000/s), yet a later one (7000/s) was sustained")
                && !why.reason.contains("lower --ramp-low"),
            "{}",
            why.reason
        );
        // A ramp that saturates for good says neither.
        let out = run_alone(
            "http",
            "ramp",
            json!({"ramp_low": 1000, "ramp_high": 15000, "ramp_step": 4000}),
            dip,
        );
        assert!(out
            .flags
            .iter()
            .all(|f| f.code != "sustained_after_saturation"));
        assert!(out
            .missing
            .iter()
            .all(|m| m.name != "last_sustained_rate_per_s"));
    }

    /// A level that does not deliver its load is invalid, naming it: a "100%" of
    /// 600,000 ops/s that replied 15,764 was published with its overall ops/W
    /// (acceptance pass E, 2).
    #[test]
    fn a_level_below_its_load_is_invalid() {
        // The server does 16,000/s at most.
        let capped = |rate: f64| {
            let mut s = RateStep::new(rate);
            s.duration_s = 1.0;
            s.replies = rate.min(16_000.0) as u64;
            s.reply_rate_per_s = s.replies as f64;
            Ok(s)
        };
        let out = run_alone(
            "kv",
            "levels",
            json!({"capacity": 600000, "levels": [200, 100, 50, 2], "idle_duration": 0}),
            capped,
        );
        let flag = invalid_flag(&out, "level_below_target");
        assert!(
            flag.message.starts_with(
                "levels below 90% of their load: 100% (600000 ops/s) replied 16000, 2.7% of \
                 it; 50% (300000 ops/s) replied 16000, 5.3% of it;"
            ),
            "{}",
            flag.message
        );
        assert!(
            !flag.message.contains("2% ("),
            "12,000/s was delivered: {}",
            flag.message
        );
        // An overload asked for (200%) falling short is its finding, not a wrong load.
        assert!(!flag.message.contains("200%"), "{}", flag.message);
    }

    /// One capacity test of `workload` with `p`'s settings, its steps measured by `step`,
    /// on an unwatched context with nothing found before it.
    fn run_alone(
        workload: &str,
        test: &str,
        p: Value,
        step: impl FnMut(f64) -> anyhow::Result<RateStep>,
    ) -> StepOutput {
        run_watched(&unwatched_ctx(), workload, test, p, step)
    }

    /// [`run_alone`] on the context `c` (its watch).
    fn run_watched(
        c: &Ctx,
        workload: &str,
        test: &str,
        p: Value,
        step: impl FnMut(f64) -> anyhow::Result<RateStep>,
    ) -> StepOutput {
        let (_, cfg) = split_params(workload, &params(p)).unwrap();
        run(
            workload,
            test,
            &cfg,
            &D,
            c,
            &mut Found::default(),
            None,
            1,
            step,
        )
        .unwrap()
    }

    /// The result's flag `code`, which must be there and mark it invalid.
    fn invalid_flag<'a>(out: &'a StepOutput, code: &str) -> &'a Flag {
        let flag = out.flags.iter().find(|f| f.code == code);
        let flag = flag.unwrap_or_else(|| panic!("no {code} flag: {:?}", out.flags));
        assert_eq!(flag.severity, model::Severity::Invalid, "{flag:?}");
        flag
    }

    /// A level failing more of its requests than the limit is invalid too, naming it,
    /// though it delivered 92% of its load (the rule above passes it).
    #[test]
    fn a_level_failing_its_requests_is_invalid() {
        // At 10,000/s and above, 8% of the replies are 503s; at 5,000/s none; at 200/s
        // nothing was sent (no request, no failure).
        let shedding = |rate: f64| {
            let mut s = RateStep::new(rate);
            s.duration_s = 1.0;
            s.replies = if rate < 1_000.0 { 0 } else { rate as u64 };
            s.reply_rate_per_s = s.replies as f64;
            s.errors = if rate > 6_000.0 {
                rate as u64 * 8 / 100
            } else {
                0
            };
            Ok(s)
        };
        let out = run_alone(
            "http",
            "levels",
            json!({"capacity": 10000, "levels": [120, 100, 50, 2], "idle_duration": 0}),
            shedding,
        );
        let flag = invalid_flag(&out, "level_errors");
        assert!(
            flag.message
                .starts_with("levels whose requests failed above the 1% limit: 100% 8.00%;"),
            "{}",
            flag.message
        );
        // The overload asked for, the level at 5,000/s, and the one that sent nothing: not
        // said (the one that sent nothing is below its load, said so by that rule alone).
        assert!(
            !flag.message.contains("50%") && !flag.message.contains("120%"),
            "{}",
            flag.message
        );
        assert!(!flag.message.contains(" 2% "), "{}", flag.message);
        let below = invalid_flag(&out, "level_below_target");
        assert!(
            below
                .message
                .starts_with("levels below 90% of their load: 2% (200 ops/s)"),
            "{}",
            below.message
        );
    }

    #[test]
    fn levels_take_the_median_of_the_repetitions_before_them() {
        let mut f = Found::default();
        for c in [Some(900.0), Some(1000.0), Some(1300.0)] {
            f.record("ramp", c, None, None);
        }
        let (c, how) = f.take().unwrap();
        assert_eq!(c, 1000.0, "the median, not the last repetition's 1300");
        assert!(how.contains("median of what the 3 ramp"), "{how}");
        // Every levels repetition takes the same; a new ramp starts a new series.
        assert_eq!(f.take().unwrap().0, 1000.0);
        f.record("ramp", Some(500.0), None, None);
        f.record("ramp", None, None, None);
        let (c, how) = f.take().unwrap();
        assert_eq!(c, 500.0);
        assert!(
            how.contains("1 of the 2") && how.contains("found none"),
            "{how}"
        );
        assert_eq!(f.bound(), None);
        // A repetition whose capacity is a lower bound says so (audit, 3); one that
        // found none has no bound to say; a new series forgets it.
        f.record("search", Some(800.0), Some("every probe met".into()), None);
        f.record("search", None, Some("never".into()), None);
        assert_eq!(f.bound().as_deref(), Some("every probe met"));
        f.record("ramp", Some(500.0), None, None);
        assert_eq!(f.bound(), None, "a new series");
        // A search after a ramp is its own series; one that found nothing leaves none.
        f.record("ramp", Some(1.0), None, None);
        f.record("search", None, None, None);
        assert_eq!(f.take(), None);
        // An even count: the lower of the middle two, a rate a repetition measured (the
        // mean, 6,000, no search had shown to meet the objective).
        let mut f = Found::default();
        f.record("search", Some(7000.0), None, None);
        f.record("search", Some(5000.0), None, None);
        let (c, how) = f.take().unwrap();
        assert_eq!(c, 5000.0);
        assert!(how.contains("the lower of the middle two"), "{how}");
    }

    fn s_points(s: &StepOutput) -> usize {
        s.metrics
            .iter()
            .filter(|m| m.name == "demanded_rate_per_s")
            .count()
    }

    /// A server that draws 200 W, and 400 W while under load: what a sampler sees of
    /// any stretch of time since the mark, exactly (no sampling interval).
    #[derive(Default)]
    struct PowerTimeline {
        marked: std::sync::Mutex<Option<SystemTime>>,
        loaded: std::sync::Mutex<Vec<(SystemTime, SystemTime)>>,
    }

    impl Watch for PowerTimeline {
        fn set_warmup(&self, _on: bool) {}
        fn watch_process(&self, _role: &str, _pid: u32) {}
        fn mark(&self) -> Option<u64> {
            // The sampler busy with a tick: the mark closes its interval only after.
            std::thread::sleep(std::time::Duration::from_millis(100));
            *self.marked.lock().unwrap() = Some(SystemTime::now());
            Some(0)
        }
        fn since_mark(&self, _mark: u64, window: Option<(f64, f64)>) -> Vec<Metric> {
            let marked = self.marked.lock().unwrap().unwrap();
            let after = |t: SystemTime| t.duration_since(marked).unwrap().as_secs_f64();
            let (from, to) = window.unwrap_or((0.0, after(SystemTime::now())));
            let loaded: f64 = self
                .loaded
                .lock()
                .unwrap()
                .iter()
                .map(|&(a, b)| (after(b).min(to) - after(a).max(from)).max(0.0))
                .sum();
            let watts = (200.0 * (to - from - loaded) + 400.0 * loaded) / (to - from);
            vec![Metric::new("power_w", watts, "W").label("source", "meter:system")]
        }
    }

    /// A load level's power is that of its measured window: the start's lead and the
    /// connections' setup before it (300 ms here, as for a generator on another host)
    /// and the drain after it are near-idle, and over the whole call a 200 ms level at
    /// 400 W read ~273 W. The mark closes its interval 100 ms after it was asked for
    /// (the sampler busy): timed from the asking, the window landed late and read 300 W.
    #[test]
    fn a_steps_power_is_that_of_its_measured_window() {
        let watch = Arc::new(PowerTimeline::default());
        let c = ctx(watch.clone());
        let (_, cfg) = split_params(
            "kv",
            &params(json!({"capacity": 500, "levels": [100], "idle_duration": 0})),
        )
        .unwrap();
        let mut found = Found::default();
        let measure = |rate: f64| {
            std::thread::sleep(std::time::Duration::from_millis(300));
            let from = SystemTime::now();
            std::thread::sleep(std::time::Duration::from_millis(200));
            let to = SystemTime::now();
            watch.loaded.lock().unwrap().push((from, to));
            std::thread::sleep(std::time::Duration::from_millis(50));
            let mut s = step(rate)?;
            s.window = Some((from, to));
            Ok(s)
        };
        let l = run("kv", "levels", &cfg, &D, &c, &mut found, None, 1, measure).unwrap();
        let power = l
            .metrics
            .iter()
            .find(|m| {
                m.name == "power_w" && m.labels.get("level").map(String::as_str) == Some("100%")
            })
            .expect("the level's power")
            .value;
        assert!((power - 400.0).abs() < 1.0, "{power} W");
    }

    /// A ramp that saturates while no server process is busy says the server's CPU was
    /// not the limit (nginx at 40% beside a starved generator read as the server's
    /// saturation); one whose server was busy at saturation says nothing.
    #[test]
    fn a_saturation_with_an_idle_server_is_said_not_to_be_the_servers_cpu() {
        let (_, cfg) = split_params(
            "kv",
            &params(json!({"ramp_low": 400, "ramp_high": 1200, "ramp_step": 400})),
        )
        .unwrap();
        let busy_at = |server_pct: f64| {
            move |rate: f64| -> anyhow::Result<RateStep> {
                let mut s = step(rate)?;
                s.reply_rate_per_s = rate.min(500.0);
                s.extra.extend([
                    Metric::new("process_cpu_pct", server_pct, "%").label("role", "server:worker0"),
                    Metric::new("process_cpu_pct", 99.0, "%").label("role", "loadgen"),
                ]);
                Ok(s)
            }
        };
        let mut found = Found::default();
        let out = kv_quiet("ramp", &cfg, &mut found, busy_at(40.0));
        let f = out
            .flags
            .iter()
            .find(|f| f.code == "saturation_not_server_cpu")
            .unwrap_or_else(|| panic!("no flag: {:?}", out.flags));
        assert!(
            f.message.starts_with(
                "at the saturation step (800 ops/s) the server's processes used 40% of a CPU \
                 in all (the busiest, server:worker0, 40%)"
            ),
            "{}",
            f.message
        );
        // Advice every workload can take (oltp has no --threads), and other processes on
        // the host named among the causes (the host read 99% busy beside it).
        assert!(
            f.message.contains(crate::capacity::MORE_GENERATOR_CPU)
                && f.message.contains("other_load"),
            "{}",
            f.message
        );
        let out = kv_quiet("ramp", &cfg, &mut found, busy_at(97.0));
        let said = |out: &StepOutput| {
            out.flags
                .iter()
                .any(|f| f.code == "saturation_not_server_cpu")
        };
        assert!(!said(&out));
        // Several workers sharing fewer CPUs: each under 70%, together busy.
        let shared = |rate: f64| -> anyhow::Result<RateStep> {
            let mut s = busy_at(40.0)(rate)?;
            s.extra
                .push(Metric::new("process_cpu_pct", 45.0, "%").label("role", "server:worker1"));
            Ok(s)
        };
        let out = kv_quiet("ramp", &cfg, &mut found, shared);
        assert!(!said(&out));
        // Saturated on errors (a server refusing fast is idle by its own choice), or with
        // no server process watched: nothing said.
        let refusing = |rate: f64| -> anyhow::Result<RateStep> {
            let mut s = busy_at(10.0)(rate)?;
            s.reply_rate_per_s = rate;
            if rate >= 800.0 {
                s.errors = s.replies;
            }
            Ok(s)
        };
        let out = kv_quiet("ramp", &cfg, &mut found, refusing);
        assert!(
            out.metrics
                .iter()
                .any(|m| m.name == "saturation_rate_per_s"),
            "saturated on errors: {:?}",
            out.metrics
        );
        assert!(!said(&out));
        let unwatched = |rate: f64| -> anyhow::Result<RateStep> {
            let mut s = step(rate)?;
            s.reply_rate_per_s = rate.min(500.0);
            Ok(s)
        };
        let out = kv_quiet("ramp", &cfg, &mut found, unwatched);
        assert!(!said(&out));
    }

    /// A step whose bytes were not counted (oltp's database client) has no network I/O,
    /// not 0 B/s: the metric is missing with the reason, and the ramp table says `-`.
    #[test]
    fn bytes_not_counted_are_missing_not_zero() {
        let uncounted = |rate: f64| -> anyhow::Result<RateStep> {
            let mut s = step(rate)?;
            s.bytes_not_counted = Some("not counted: no bytes here".into());
            Ok(s)
        };
        let (_, cfg) = split_params(
            "kv",
            &params(json!({"ramp_low": 200, "ramp_high": 400, "ramp_step": 200})),
        )
        .unwrap();
        let mut found = Found::default();
        let out = kv_quiet("ramp", &cfg, &mut found, uncounted);
        assert!(
            !out.metrics.iter().any(|m| m.name == "net_io_bytes_per_s"),
            "{:?}",
            out.metrics
        );
        let m = out
            .missing
            .iter()
            .find(|m| m.name == "net_io_bytes_per_s")
            .expect("net I/O said missing");
        assert_eq!(m.reason, "not counted: no bytes here");
        // Counted bytes are a figure, as before.
        let out = kv_quiet("ramp", &cfg, &mut found, step);
        assert!(out.metrics.iter().any(|m| m.name == "net_io_bytes_per_s"));
        assert!(!out.missing.iter().any(|m| m.name == "net_io_bytes_per_s"));
        let mut r = RateStep::new(100.0);
        r.duration_s = 1.0;
        r.bytes_not_counted = Some("x".into());
        let table = capacity::RampResult {
            config: capacity::RampConfig::default(),
            points: vec![capacity::RampPoint {
                step: r,
                verdict: capacity::Verdict::Sustained,
            }],
            saturation: None,
            stopped: None,
        }
        .table();
        let row = table.lines().nth(1).unwrap();
        assert_eq!(row.split('\t').nth(10), Some("-"), "{table}");
    }

    /// Every procedure flags the steps its generator fell behind on, naming them (a
    /// plain --rate test did; ramp, search and levels said nothing).
    #[test]
    fn steps_behind_schedule_are_flagged_in_every_procedure() {
        let late = |rate: f64| -> anyhow::Result<RateStep> {
            let mut s = step(rate)?;
            if rate >= 400.0 {
                s.late_sends = s.replies / 4;
            }
            Ok(s)
        };
        for (test, p) in [
            (
                "ramp",
                json!({"ramp_low": 200, "ramp_high": 600, "ramp_step": 200}),
            ),
            ("search", json!({"slo": "p99<2ms", "ramp_low": 200})),
            ("levels", json!({"capacity": 500, "levels": [100, 50]})),
        ] {
            let (_, cfg) = split_params("kv", &params(p)).unwrap();
            let mut found = Found::default();
            let out = kv_quiet(test, &cfg, &mut found, late);
            let f = out
                .flags
                .iter()
                .find(|f| f.code == "behind_schedule")
                .unwrap_or_else(|| panic!("{test}: no behind_schedule flag: {:?}", out.flags));
            assert!(f.message.contains("25.0% late"), "{test}: {}", f.message);
            assert!(!f.message.contains("200 "), "{test}: {}", f.message);
        }
    }

    /// Levels are judged against a latency objective when a search found their capacity
    /// (its objective) or --slo gives one; after a ramp, or at a --capacity alone, they
    /// are not. A level that misses is flagged; the search's edge is said only after one.
    #[test]
    fn levels_are_judged_against_the_searchs_objective_or_slo() {
        let judged = |out: &StepOutput| -> Vec<(String, f64)> {
            out.metrics
                .iter()
                .filter(|m| m.name == "meets_objective")
                .map(|m| (m.labels["level"].clone(), m.value))
                .collect()
        };
        let flag = |out: &StepOutput| {
            out.flags
                .iter()
                .find(|f| f.code == "level_misses_objective")
                .map(|f| f.message.clone())
        };
        let go = |test: &str,
                  p: Value,
                  found: &mut Found,
                  server: &dyn Fn(f64) -> anyhow::Result<RateStep>| {
            let (_, cfg) = split_params("kv", &params(p)).unwrap();
            run("kv", test, &cfg, &D, &Ctx::quiet(), found, None, 1, server).unwrap()
        };
        // The same server, a little slower when the levels run: 5 ms from 700/s on.
        let slower = |rate: f64| -> anyhow::Result<RateStep> {
            step(if rate >= 700.0 { rate.max(800.0) } else { rate })
        };
        let mut found = Found::default();
        let s = go("search", json!({"slo": "p99<2ms"}), &mut found, &step);
        let best = s
            .metrics
            .iter()
            .find(|m| m.name == "max_rate_meeting_slo_per_s" && m.labels.is_empty())
            .unwrap()
            .value;
        assert!((700.0..800.0).contains(&best), "{best}");
        let l = go(
            "levels",
            json!({"slo": "p99<2ms", "levels": [100, 50]}),
            &mut found,
            &slower,
        );
        assert_eq!(
            judged(&l),
            [("100%".to_string(), 0.0), ("50%".to_string(), 1.0)]
        );
        let why = flag(&l).expect("the 100% level missed");
        assert!(
            why.starts_with("levels that missed p99<2ms: 100% (")
                && why.contains("misses p99<2ms")
                && why.contains("at the objective's edge"),
            "{why}"
        );
        // After a ramp: nothing to judge against.
        let mut found = Found::default();
        go(
            "ramp",
            json!({"ramp_low": 200, "ramp_high": 1200, "ramp_step": 200}),
            &mut found,
            &step,
        );
        let l = go("levels", json!({"levels": [100, 50]}), &mut found, &slower);
        assert!(judged(&l).is_empty() && flag(&l).is_none(), "{:?}", l.flags);
        // --capacity with --slo: judged, with no search's edge to speak of.
        let l = go(
            "levels",
            json!({"capacity": 900, "slo": "p99<2ms", "levels": [100, 50]}),
            &mut Found::default(),
            &step,
        );
        assert_eq!(
            judged(&l),
            [("100%".to_string(), 0.0), ("50%".to_string(), 1.0)]
        );
        let why = flag(&l).unwrap();
        assert!(!why.contains("edge"), "{why}");
        // --capacity alone: not judged.
        let l = go(
            "levels",
            json!({"capacity": 900, "levels": [100]}),
            &mut Found::default(),
            &step,
        );
        assert!(judged(&l).is_empty());
    }

    /// Past saturation every connection waits on the server, and requests fall late or
    /// unsent by design: a saturated ramp step (and a search probe that missed its
    /// objective) is not the generator falling behind, and is not named.
    #[test]
    fn saturated_steps_are_not_called_behind_schedule() {
        // Replies stop at 1000/s (the `step` server); above that every request is late.
        let late = |rate: f64| -> anyhow::Result<RateStep> {
            let mut s = step(rate)?;
            if rate > 1000.0 {
                s.unsent_requests = (rate - 1000.0) as u64;
                s.late_sends = s.replies / 2;
            }
            Ok(s)
        };
        let (_, cfg) = split_params(
            "kv",
            &params(json!({"ramp_low": 500, "ramp_high": 2000, "ramp_step": 500})),
        )
        .unwrap();
        let out = kv_quiet("ramp", &cfg, &mut Found::default(), late);
        assert!(
            !out.flags.iter().any(|f| f.code == "behind_schedule"),
            "{:?}",
            out.flags
        );
    }

    /// A server given with --target or --dsn runs on a kernel not known: no generator is
    /// apart from it (the hosts' kernels: host::tests::one_kernel_is_one_host_or_one_boot_id).
    #[test]
    fn a_given_server_has_no_generator_apart() {
        for given in [
            json!({"target": "192.0.2.1:6379"}),
            json!({"dsn": "host=db1"}),
        ] {
            assert!(split_params("kv", &params(given)).unwrap().1.server_given);
        }
        assert!(
            !split_params("kv", &params(json!({})))
                .unwrap()
                .1
                .server_given
        );
    }

    /// A search whose generator fell behind, where nothing says its CPUs are apart from
    /// the server's (no hosts: one process), takes its misses as the server's and
    /// bisects on, warning of the lateness: the server may have preempted it, and a stop
    /// there read "at least" a rate up to 2x low. (A generator on a machine of its own
    /// stops the search as a lower bound: capacity::tests::a_miss_with_the_generator_behind_is_not_the_servers.)
    /// The `levels` test taking that capacity says so too.
    #[test]
    fn a_search_with_its_generator_behind_on_shared_cpus_bisects_and_warns() {
        // The `step` server meets p99<2ms up to 800/s; past 600/s the generator sends
        // late on free connections.
        let client = |rate: f64| -> anyhow::Result<RateStep> {
            let mut s = step(rate.min(600.0))?;
            s.demanded_rate_per_s = rate;
            if rate > 600.0 {
                s.late_sends = s.replies;
                s.generator_late_sends = s.replies;
            }
            Ok(s)
        };
        let (_, cfg) = split_params(
            "kv",
            &params(json!({"slo": "p99<2ms", "levels": [100, 50], "idle_duration": 0})),
        )
        .unwrap();
        let mut found = Found::default();
        let out = kv_quiet("search", &cfg, &mut found, client);
        let best = out
            .metrics
            .iter()
            .find(|m| m.name == "max_rate_meeting_slo_per_s" && m.labels.is_empty())
            .map(|m| m.value)
            .unwrap();
        // Up to 666/s its 600/s of replies are 90% of the demand.
        assert!(best > 560.0 && best < 667.0, "{best}");
        assert!(out
            .metrics
            .iter()
            .any(|m| m.name == "lowest_failing_rate_per_s"));
        let late = out
            .flags
            .iter()
            .find(|f| f.code == "generator_late")
            .unwrap();
        assert!(
            late.message
                .starts_with("the generator fell behind at 800/s (100.0% of its requests)"),
            "{}",
            late.message
        );
        assert!(out
            .metrics
            .iter()
            .any(|m| m.name == "generator_late_sends" && m.value > 0.0));

        let levels = kv_quiet("levels", &cfg, &mut found, client);
        let w = levels
            .flags
            .iter()
            .find(|f| f.code == "generator_late")
            .expect("the levels say their 100% came from a search with its generator behind");
        assert!(
            w.message.starts_with(&format!("100% is {best:.0} "))
                && w.message.contains(
                    ", what the search before it found, but that search's generator fell \
                     behind in 1 of its 1 repetition(s), and the capacity may be the \
                     generator's: the generator fell behind at 800/s"
                ),
            "{}",
            w.message
        );
        // Given with --capacity, the levels are not the search's.
        let (_, given) = split_params(
            "kv",
            &params(json!({"capacity": 500, "levels": [100], "idle_duration": 0})),
        )
        .unwrap();
        let levels = kv_quiet("levels", &given, &mut found, client);
        assert!(levels.flags.iter().all(|f| f.code != "generator_late"));
    }

    #[test]
    fn modelled_power_is_flagged_and_no_watch_means_no_power() {
        let last_rate = Arc::new(AtomicU64::new(0));
        let c = ctx(Arc::new(FakeWatch {
            marks: AtomicU64::new(0),
            last_rate,
            modelled: true,
        }));
        let (_, cfg) =
            split_params("kv", &params(json!({"capacity": 500, "levels": [100]}))).unwrap();
        let mut found = Found::default();
        let l = run("kv", "levels", &cfg, &D, &c, &mut found, None, 1, step).unwrap();
        assert!(l.flags.iter().any(|f| f.code == "power_modelled"));

        let quiet = Ctx::quiet();
        let l = run("kv", "levels", &cfg, &D, &quiet, &mut found, None, 1, step).unwrap();
        assert!(!l
            .metrics
            .iter()
            .any(|m| m.name == "overall_reply_rate_per_w"));
        assert!(
            l.missing
                .iter()
                .any(|m| m.name == "overall_reply_rate_per_w"),
            "{:?}",
            l.missing
        );
    }

    /// A level's rate in a sentence is rounded as its table rounds it: 75% of 7,750 is
    /// 5,812.5/s, "5,813" in the table and "5812" in behind_schedule (`{:.0}` rounds a
    /// half to even).
    #[test]
    fn a_levels_rate_in_a_sentence_is_rounded_as_in_its_table() {
        let late = |rate: f64| {
            let mut s = step(rate)?;
            s.late_sends = s.replies / 2;
            Ok(s)
        };
        let out = run_alone(
            "kv",
            "levels",
            json!({"capacity": 7750, "levels": [75], "idle_duration": 0}),
            late,
        );
        let f = out
            .flags
            .iter()
            .find(|f| f.code == "behind_schedule")
            .expect("behind");
        assert!(f.message.contains(": 5813 ops/s ("), "{}", f.message);
    }

    /// `--wait` is in the help of a workload whose generator waits between sends only:
    /// oltp's listed it with a default, and refused it.
    #[test]
    fn wait_is_listed_only_where_it_applies() {
        use clap::Args as _;
        let hidden = |d: &CapacityDefaults| {
            let cmd = document_defaults(CapacityArgs::augment_args(clap::Command::new("t")), d);
            let hide = cmd
                .get_arguments()
                .find(|a| a.get_id() == "wait")
                .expect("--wait")
                .is_hide_set();
            hide
        };
        assert!(!hidden(&D));
        assert!(hidden(&CapacityDefaults {
            wait_modes: false,
            ..D
        }));
    }

    /// A step whose host counted its CPUs busy for less than its own processes ran says
    /// so, and that the power modelled from that busy figure reads low (a level read 3.5%
    /// host busy beside its processes' 30% of one CPU, its modelled watts below those of
    /// a lower level, with no word of it).
    #[test]
    fn a_step_whose_ticks_missed_its_processes_is_said() {
        struct Missed(AtomicU64);
        impl Watch for Missed {
            fn set_warmup(&self, _on: bool) {}
            fn watch_process(&self, _role: &str, _pid: u32) {}
            fn mark(&self) -> Option<u64> {
                Some(self.0.fetch_add(1, Ordering::Relaxed))
            }
            fn since_mark(&self, mark: u64, _window: Option<(f64, f64)>) -> Vec<Metric> {
                let mut m = vec![
                    Metric::new("cpu_busy_pct", 3.5, "%"),
                    Metric::new("power_w", 53.5, "W").label("source", "model:system"),
                ];
                if mark == 1 {
                    m.push(Metric::new(TICKS_MISSED, 23.0, "%"));
                }
                m
            }
        }
        let (_, cfg) = split_params(
            "kv",
            &params(json!({"capacity": 500, "levels": [100, 50], "idle_duration": 0})),
        )
        .unwrap();
        let c = ctx(Arc::new(Missed(AtomicU64::new(0))));
        let l = run(
            "kv",
            "levels",
            &cfg,
            &D,
            &c,
            &mut Found::default(),
            None,
            1,
            step,
        )
        .unwrap();
        let f = l
            .flags
            .iter()
            .find(|f| f.code == "step_cpu_ticks_missed")
            .expect("the step whose ticks missed its processes is said");
        assert!(
            f.message
                .contains(" ran: 50% (250 ops/s) (23% of one CPU uncounted); ")
                && f.message.contains("so does the power modelled from it"),
            "{}",
            f.message
        );
        // Not said where no step missed.
        let quiet = ctx(Arc::new(FakeWatch {
            marks: AtomicU64::new(0),
            last_rate: Arc::new(AtomicU64::new(0)),
            modelled: true,
        }));
        let l = run(
            "kv",
            "levels",
            &cfg,
            &D,
            &quiet,
            &mut Found::default(),
            None,
            1,
            step,
        )
        .unwrap();
        assert!(l.flags.iter().all(|f| f.code != "step_cpu_ticks_missed"));
    }

    /// Other programs busy at the levels' active idle (their processes at rest) are said:
    /// its power, which the overall perf/W divides by, is theirs too (145% of one CPU
    /// at active idle, unsaid).
    #[test]
    fn other_programs_at_active_idle_are_said() {
        struct BusyIdle(AtomicU64);
        impl Watch for BusyIdle {
            fn set_warmup(&self, _on: bool) {}
            fn watch_process(&self, _role: &str, _pid: u32) {}
            fn mark(&self) -> Option<u64> {
                Some(self.0.fetch_add(1, Ordering::Relaxed))
            }
            fn since_mark(&self, mark: u64, _window: Option<(f64, f64)>) -> Vec<Metric> {
                let mut m =
                    vec![Metric::new("power_w", 120.0, "W").label("source", "meter:system")];
                // The third step: active idle after levels 100 and 50.
                if mark == 2 {
                    m.push(Metric::new(OTHERS_AT_REST, 145.0, "%"));
                }
                m
            }
        }
        let (_, cfg) = split_params(
            "kv",
            &params(json!({"capacity": 500, "levels": [100, 50], "idle_duration": 0.01})),
        )
        .unwrap();
        let c = ctx(Arc::new(BusyIdle(AtomicU64::new(0))));
        let l = run(
            "kv",
            "levels",
            &cfg,
            &D,
            &c,
            &mut Found::default(),
            None,
            1,
            step,
        )
        .unwrap();
        let f = l
            .flags
            .iter()
            .find(|f| f.code == "step_other_load")
            .expect("the busy active idle is said");
        assert!(
            f.message.contains("rested: active idle (145% of one CPU);"),
            "{}",
            f.message
        );
    }

    /// A watch whose power comes from step `after` on no more: the host was lost then
    /// (`lost`: no mark, and the watch says why), or its power source read nothing.
    struct PowerUntil {
        marks: AtomicU64,
        after: u64,
        lost: bool,
    }

    impl Watch for PowerUntil {
        fn set_warmup(&self, _on: bool) {}
        fn watch_process(&self, _role: &str, _pid: u32) {}
        fn mark(&self) -> Option<u64> {
            let n = self.marks.fetch_add(1, Ordering::Relaxed);
            (!self.lost || n < self.after).then_some(n)
        }
        fn since_mark(&self, mark: u64, _window: Option<(f64, f64)>) -> Vec<Metric> {
            if mark >= self.after {
                return Vec::new();
            }
            vec![Metric::new("power_w", 200.0, "W").label("source", "meter:system")]
        }
        fn lost(&self) -> Option<String> {
            // Asked after each step: a step from `after` on found the host gone.
            (self.lost && self.marks.load(Ordering::Relaxed) > self.after)
                .then(|| "rbh1 stopped answering: nothing for 10 s".to_string())
        }
    }

    /// A system under test lost during the levels takes its telemetry with it: the
    /// overall perf/W is missing, and why says it was lost from that level on, not that
    /// the host has no power source (its first levels had power).
    #[test]
    fn levels_whose_system_under_test_was_lost_say_so_for_the_missing_perf_per_watt() {
        let why = |after: u64, lost: bool| {
            let watch = PowerUntil {
                marks: AtomicU64::new(0),
                after,
                lost,
            };
            let c = ctx(Arc::new(watch));
            let p = json!({"capacity": 500, "levels": [100, 50]});
            let l = run_watched(&c, "kv", "levels", p, step);
            assert!(!l
                .metrics
                .iter()
                .any(|m| m.name == "overall_reply_rate_per_w"));
            l.missing
                .iter()
                .find(|m| m.name == "overall_reply_rate_per_w")
                .map(|m| m.reason.clone())
                .expect("the overall perf/W said missing")
        };
        // Lost during the 50% level: it and active idle have no power.
        let r = why(1, true);
        assert!(
            r.starts_with(
                "no power reading at 50%, active_idle: the system under test was lost \
                 (rbh1 stopped answering: nothing for 10 s)"
            ),
            "{r}"
        );
        assert!(r.contains("rackbench hosts check"), "{r}");
        assert!(!r.contains("no RAPL"), "{r}");
        // Lost during active idle only.
        let r = why(2, true);
        assert!(r.starts_with("no power reading at active_idle: the system under test was lost"));
        // Not lost, its source silent at the later levels: it has one all the same.
        let r = why(1, false);
        assert!(
            r.starts_with("no power reading at 50%, active_idle, where other levels had one"),
            "{r}"
        );
        assert!(!r.contains("no RAPL") && !r.contains("lost"), "{r}");
        // No power at any level: the host has none to read.
        let r = why(0, false);
        assert!(r.contains("no RAPL, IPMI, hwmon or meter command"), "{r}");
        // Telemetry off (--no-telemetry): that is why, not a host without a source.
        let c = ctx(Arc::new(NoWatch));
        let p = json!({"capacity": 500, "levels": [100, 50]});
        let l = run_watched(&c, "kv", "levels", p, step);
        let r = &l
            .missing
            .iter()
            .find(|m| m.name == "overall_reply_rate_per_w")
            .expect("the overall perf/W said missing")
            .reason;
        assert!(
            r.starts_with("no power reading at any level: telemetry was off (--no-telemetry)"),
            "{r}"
        );
        assert!(!r.contains("no RAPL"), "{r}");
    }

    /// Acceptance A, finding 9: `http -t load --slo 'p99<1ms'` ran with the objective
    /// unused.
    #[test]
    fn an_slo_without_a_test_that_reads_it_is_refused() {
        let d = CapacityDefaults {
            typical_rate_per_s: 1000.0,
            step_duration_s: 1.0,
            rate_unit: "req/s",
            slo: "p99<1ms",
            wait_modes: true,
            more_load: "--threads or -c",
        };
        let (_, cfg) = split_params("http", &params(json!({"slo": "p99<1ms"}))).unwrap();
        let tests = |t: &[&str]| t.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let e = cfg.validate(&tests(&["load"]), &d).unwrap_err().to_string();
        assert!(
            e.contains("--slo applies to the search and levels tests") && e.contains("load"),
            "{e}"
        );
        cfg.validate(&tests(&["search"]), &d).unwrap();
        cfg.validate(&tests(&["load", "search", "levels"]), &d)
            .unwrap();
    }
}
