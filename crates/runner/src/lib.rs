//! A run, as a library: validated plan -> hosts connected -> for each sweep point (and,
//! for `net`, each sender/receiver pair): the workload's service started on the system
//! under test, its drivers on the load-generator hosts behind one start barrier, while
//! every host samples telemetry -> each result stored the moment it completes -> every
//! host torn down. No argument parsing lives here (the CLI builds the [`Plan`]).
//!
//! Nothing measured is lost: a host that dies mid-run fails the step it was in (its
//! result keeps what the others measured and names the host), the run stops, and every
//! other host is torn down; Ctrl-C ends the current test early on every host.

pub mod roles;
pub mod telemetry;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::Context;
use engine::host::{CommandsFor, Host, TelemetrySettings};
use engine::workload::{Ctx, Params, Progress, Registration, Workload};
use hosts::{Catalog, HostSet};
use model::{cv_pct, Fact, Flag, HostDisclosure, Metric, ResultRecord, RunRecord, Status};
use serde_json::Value;

pub use roles::{HostsPlan, PointRoles};

/// The disclosure's fact of a host's power sources, as the run's samplers read them.
const POWER_SOURCES_FACT: &str = "power.sources";

/// A named setting under study (the Aerospike study's NIC feature off and on, a tuned
/// profile, a sysctl): commands that put it in place before a repetition and take it out
/// after, on the hosts of a role. Every sweep point runs under every variant,
/// interleaved per repetition (A B A B ...), so drift over the run hits all alike.
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    pub name: String,
    /// Shell commands run in order on each host before the repetition; one failing fails
    /// the run, a stop request (Ctrl-C) ends the one under way. What a command leaves
    /// running in its process group is killed when it exits (start a service with
    /// `systemctl`, not with `&`): nothing a command starts outlives rackbench.
    #[serde(default)]
    pub setup: Vec<String>,
    /// Runs however the repetition ends (error, Ctrl-C), when setup began.
    #[serde(default)]
    pub teardown: Vec<String>,
    /// Where the commands run: `sut` (default), `loadgen` or `all`.
    #[serde(default = "Variant::default_on")]
    pub on: String,
}

impl Variant {
    fn default_on() -> String {
        "sut".into()
    }

    /// Refused before anything runs: a name a parameter can carry, a known role.
    pub fn validate(variants: &[Variant]) -> anyhow::Result<()> {
        let mut seen = std::collections::BTreeSet::new();
        for v in variants {
            if v.name.is_empty()
                || !v
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.+".contains(c))
            {
                anyhow::bail!(
                    "variant name `{}`: use letters, digits and - _ . + (e.g. gro-off)",
                    model::printable(&v.name)
                );
            }
            if !seen.insert(v.name.clone()) {
                anyhow::bail!("variant `{}` is declared twice", v.name);
            }
            if !["sut", "loadgen", "all"].contains(&v.on.as_str()) {
                anyhow::bail!(
                    "variant `{}`: on = `{}`; choose sut, loadgen or all",
                    v.name,
                    model::printable(&v.on)
                );
            }
        }
        Ok(())
    }

    /// The hosts of `roles` its commands run on (each once).
    fn hosts(&self, roles: &engine::host::Roles) -> Vec<Arc<dyn Host>> {
        let mut out: Vec<Arc<dyn Host>> = Vec::new();
        let mut add = |h: &Arc<dyn Host>| {
            if !out.iter().any(|o| o.name() == h.name()) {
                out.push(h.clone());
            }
        };
        if self.on != "loadgen" {
            add(&roles.sut);
        }
        if self.on != "sut" {
            roles.loadgens.iter().for_each(&mut add);
        }
        out
    }
}

/// What each host printed for a variant's commands: (host, its command runs).
type CommandLog = Vec<(String, Vec<engine::host::CommandRun>)>;

/// Runs a variant's teardown when dropped: after the repetition, and also when it ends
/// by an error, a lost host or Ctrl-C.
struct VariantOn {
    variant: Variant,
    hosts: Vec<Arc<dyn Host>>,
    verbose: bool,
    torn_down: bool,
}

impl VariantOn {
    /// Run the setup on every host; an error (naming the host and the command) when one
    /// fails, after the teardown ran. None when a stop request (Ctrl-C) came during the
    /// setup: the command under way was ended, no other started, and the teardown ran.
    /// The teardown runs on the hosts whose setup began, not on those it never reached:
    /// a teardown undoing what was never done could itself change a host.
    /// `log` gets what each host's commands printed, the failed one's too, to disclose.
    fn set_up(
        variant: &Variant,
        roles: &engine::host::Roles,
        verbose: bool,
        log: &mut CommandLog,
    ) -> anyhow::Result<Option<VariantOn>> {
        let mut on = VariantOn {
            variant: variant.clone(),
            hosts: Vec::new(),
            verbose,
            torn_down: false,
        };
        for h in variant.hosts(roles) {
            if engine::stop::stop_requested() {
                return Ok(None);
            }
            on.hosts.push(h.clone());
            let runs = h.run_commands(&variant.setup, CommandsFor::Setup)?;
            // A command the stop ended is not the setup failing.
            if engine::stop::stop_requested() {
                if verbose {
                    engine::errln!(
                        "rackbench: variant {}: setup on {} ended by {}",
                        variant.name,
                        model::printable(h.name()),
                        engine::stop::stop_cause()
                    );
                }
                return Ok(None);
            }
            let bad = runs.iter().find(|r| !r.ok).cloned();
            log.push((h.name().to_string(), runs));
            if let Some(bad) = bad {
                // The command once, then how it ended and what it printed (the host's
                // output is already made printable).
                anyhow::bail!(
                    "variant {}: setup on {} failed: `{}`: {}",
                    variant.name,
                    model::printable(h.name()),
                    model::printable(&bad.command),
                    bad.output
                );
            }
        }
        Ok(Some(on))
    }

    /// Run the teardown on every host, every command even after one failed (a teardown
    /// that stopped at its first failure would leave the rest of the setting in place),
    /// warning of each failure; what each printed, per host.
    fn tear_down(&mut self) -> CommandLog {
        self.torn_down = true;
        let mut log = Vec::new();
        for h in &self.hosts {
            let mut runs = Vec::new();
            for c in &self.variant.teardown {
                match h.run_commands(std::slice::from_ref(c), CommandsFor::Teardown) {
                    Ok(r) => runs.extend(r),
                    Err(e) => runs.push(engine::host::CommandRun {
                        command: c.clone(),
                        ok: false,
                        output: format!("{e:#}"),
                    }),
                }
            }
            for bad in runs.iter().filter(|r| !r.ok) {
                // Redacted as every printed error is (`mysql -pS3cret` in the command, a
                // connection URI in what it printed).
                engine::errln!(
                    "rackbench: warning: {}",
                    model::redact_secrets(&format!(
                        "variant {}: teardown on {} failed: `{}`: {}",
                        self.variant.name,
                        model::printable(h.name()),
                        model::printable(&bad.command),
                        model::printable(&bad.output)
                    ))
                );
            }
            log.push((h.name().to_string(), runs));
        }
        if self.verbose {
            engine::errln!("rackbench: variant {}: torn down", self.variant.name);
        }
        log
    }

    /// What the setup changed in each host's disclosure (a sysctl it set, a governor),
    /// against the disclosure taken before any variant ran: `variant.NAME.set.KEY` facts
    /// with the value in force under the variant, and `variant.NAME.changes` saying what
    /// changed, so that a comparison of the variants shows the setting they differ in.
    /// First time only, as [`disclose_variant`].
    fn disclose_changes(&self, hosts: &mut [HostDisclosure]) {
        let name = &self.variant.name;
        for h in &self.hosts {
            let Some(d) = hosts.iter_mut().find(|d| d.host == h.name()) else {
                continue;
            };
            let key = format!("variant.{name}.changes");
            if d.facts.contains_key(&key) {
                continue;
            }
            let now = match h.disclosure(&d.role) {
                Ok(now) => now,
                Err(e) => {
                    d.facts.insert(
                        key,
                        Fact::unknown(format!("could not read the disclosure again: {e:#}")),
                    );
                    continue;
                }
            };
            let mut changes = Vec::new();
            for (k, f) in now.facts {
                // The run's own facts: its variants', and the power sources its samplers
                // read, which run unchanged through every variant. The stored
                // `power.sources` says the run's --power-meter or --power-model
                // ([`telemetry::Telemetry::disclose_power_sources`]); a disclosure read again knows
                // neither, and every variant read as having lost the meter (acceptance M,
                // 2).
                if k.starts_with("variant.") || k == POWER_SOURCES_FACT {
                    continue;
                }
                let before = d.facts.get(&k).map(|b| b.display());
                if before.as_deref() != Some(f.display().as_str()) {
                    changes.push(format!(
                        "{k}: {} -> {}",
                        before.unwrap_or_else(|| "(not disclosed)".into()),
                        f.display()
                    ));
                    d.facts.insert(format!("variant.{name}.set.{k}"), f);
                }
            }
            d.facts.insert(
                key,
                Fact::known(if changes.is_empty() {
                    "(no disclosed fact changed)".into()
                } else {
                    changes.join("; ")
                }),
            );
        }
    }
}

impl Drop for VariantOn {
    fn drop(&mut self) {
        if !self.torn_down {
            self.tear_down();
        }
    }
}

/// Options of every run, whatever the workload, as plain data.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub repeat: u32,
    pub until_cv: Option<f64>,
    pub max_repeat: Option<u32>,
    pub label: Option<String>,
    pub telemetry_interval_s: f64,
    pub telemetry: bool,
    pub idle_power_s: f64,
    pub power_meter: Option<String>,
    /// IDLE_W, MAX_W
    pub power_model: Option<(f64, f64)>,
    pub verbose: bool,
    /// Settings under study, each sweep point run under each (empty: none).
    pub variants: Vec<Variant>,
}

/// Everything a run needs, validated.
pub struct Plan {
    /// One workload's sweep, or a suite of several (seed 001's memory, RSA, web and
    /// database on one platform), run in turn into one run.
    pub parts: Vec<Part>,
    pub catalog: Catalog,
    pub opts: RunOptions,
    /// The command line, secrets redacted.
    pub command: String,
    pub hosts: HostsPlan,
    /// The build that runs it, stored with the run: the version and the git commit
    /// (`0.1.0 (git 1a2b3c4d5e6f)`).
    pub build: String,
}

/// One workload of a plan and its sweep.
pub struct Part {
    pub registration: Registration,
    /// The parameters as given (lists and ranges unexpanded).
    pub params: Params,
    /// The sweep points.
    pub points: Vec<Params>,
}

/// What the caller shows while the run goes.
pub trait Observer {
    fn step_done(&self, _result: &ResultRecord) {}
}

/// How the run ended.
pub struct Finished {
    /// The run as stored; None when it was stopped before any test gave a result, and
    /// nothing was kept.
    pub run_id: Option<String>,
    pub failure: Option<String>,
    pub interrupted: bool,
}

fn new_run_id() -> String {
    let now = chrono::Utc::now();
    let suffix: u32 = rand::random::<u32>() & 0xff_ffff;
    format!("{}-{suffix:06x}", now.format("%Y%m%dT%H%M%S"))
}

/// Parameters and plans as stored: every string's password masked (each string is
/// parsed on its own, so a quoted password is found as libpq would read it).
fn redact_value(v: &Value) -> Value {
    model::redact_json(v)
}

/// An error as stored or shown: a workload's error may quote a connection string.
fn describe(e: &anyhow::Error) -> String {
    model::redact_secrets(&format!("{e:#}"))
}

/// A short label for a sweep point: the swept keys only (`P=100 instances=2`).
fn point_label(point: &Params, swept: &BTreeMap<String, usize>) -> String {
    swept
        .keys()
        .filter_map(|k| {
            point.get(k).map(|v| {
                let v = v.to_string();
                format!("{k}={}", model::redact_secrets(v.trim_matches('"')))
            })
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Requests or duration of a point, for the progress bar.
fn expected_size(point: &Params) -> (u64, u64) {
    let dur = point.get("duration").and_then(Value::as_f64);
    match dur {
        Some(d) => (
            0,
            (d * 1000.0) as u64
                + point
                    .get("warmup")
                    .and_then(Value::as_f64)
                    .map_or(0, |w| (w * 1000.0) as u64),
        ),
        None => (
            point.get("requests").and_then(Value::as_u64).unwrap_or(0),
            0,
        ),
    }
}

/// Flags found after a point's results were stored (its check, `--until-cv` not met),
/// on its `steps` in the store and in `record` alike: the file a refused write leaves
/// is `record`, and without them its import took a point the store held invalid for a
/// valid one.
fn flag_steps(
    store: &store::Store,
    record: &mut RunRecord,
    steps: &[u32],
    flags: &[Flag],
) -> anyhow::Result<()> {
    store.add_flags(&record.id, steps, flags)?;
    for r in record
        .results
        .iter_mut()
        .filter(|r| steps.contains(&r.step))
    {
        r.flags.extend(flags.iter().cloned());
    }
    Ok(())
}

/// `--until-cv`: enough repetitions, `rep` of them run and at least `repeat`, once the
/// spread of the valid ones' `headlines` is within `target_pct`, judged on 3 of them at
/// least. Counted by attempts, one invalid repetition left two values, whose CV of 0.56%
/// stopped the run as converged.
fn spread_settled(rep: u32, repeat: u32, headlines: &[f64], target_pct: f64) -> bool {
    rep >= repeat
        && headlines.len() >= MIN_VALID_FOR_CV
        && cv_pct(headlines).is_some_and(|cv| cv <= target_pct)
}

/// The fewest valid repetitions `--until-cv` judges a spread on.
const MIN_VALID_FOR_CV: usize = 3;

/// `--until-cv` on a test with no headline to judge: `headless` repetitions counted (ended
/// ok, nothing invalid) without a headline figure and none with one (levels with no power
/// read, a search whose objective no rate met). More of them cannot bring a spread down:
/// the test ran on to `--max-repeat`, ten repetitions by default, for nothing.
fn nothing_to_judge(rep: u32, repeat: u32, headlines: &[f64], headless: usize) -> bool {
    rep >= repeat && headlines.is_empty() && headless >= MIN_VALID_FOR_CV
}

/// The warning for a test [`nothing_to_judge`] stopped, or that ended with no headline.
fn no_headline_flag(headless: usize, until_cv_pct: f64) -> Flag {
    let reps = if headless == 1 {
        "repetition"
    } else {
        "repetitions"
    };
    Flag::warning(
        "cv_target_not_met",
        format!(
            "no headline figure in {headless} valid {reps}: the --until-cv {until_cv_pct}% \
             asked for had no spread to judge (see each repetition's missing figures)"
        ),
    )
}

/// A repetition's headline as `--until-cv` judges the spread: only a result that counts
/// in the figures published (ended ok, nothing invalid), as the point's mean ± sd and the
/// report take them. An invalid repetition (errors above 1%, a generator's host lost)
/// judged with them stopped a test as steady whose published figure was one valid
/// repetition, or kept one repeating whose valid repetitions agreed.
fn counted_headline(r: &ResultRecord) -> Option<f64> {
    r.uncounted_as()
        .is_none()
        .then(|| r.headline_value())
        .flatten()
}

/// The warning for a test whose repetitions stopped at `--max-repeat` with the spread of
/// their counted headlines ([`counted_headline`]) still above `--until-cv`, or judged on
/// fewer than 3 of them (or not known: fewer than two, or a mean of 0). None when the
/// target was met.
pub fn cv_target_flag(headlines: &[f64], until_cv_pct: f64) -> Option<Flag> {
    let cv = cv_pct(headlines);
    // Met as the repetitions are stopped: on 3 valid ones at least.
    if headlines.len() >= MIN_VALID_FOR_CV && cv.is_some_and(|cv| cv <= until_cv_pct) {
        return None;
    }
    let n = headlines.len();
    let reps = if n == 1 { "repetition" } else { "repetitions" };
    let what = match cv {
        Some(cv) if cv <= until_cv_pct => format!(
            "cv {cv:.1}% after only {n} valid {reps} (--max-repeat), too few to judge \
             ({MIN_VALID_FOR_CV} at least) against"
        ),
        Some(cv) => format!("cv {cv:.1}% after {n} valid {reps} (--max-repeat), above"),
        None => format!("cv not known after {n} valid {reps} (--max-repeat), short of"),
    };
    Some(Flag::warning(
        "cv_target_not_met",
        format!(
            "{what} the --until-cv {until_cv_pct}% asked for: raise --max-repeat, or steady \
             the host (see `rackbench disclosure`)"
        ),
    ))
}

/// The warning on an idle power figure of a run with variants: it is measured once,
/// before any variant's setup, and each variant's watts above idle are taken from it. A
/// variant that changes idle power (C-states off, a governor) read its load's watts above
/// an idle it does not have (60 W idle with C-states on, 110 W off: 90 W above idle for
/// 40 W of load), and nothing said so.
/// Only the variants whose commands run on that host (`on`, against its `role` in the run,
/// `sut+loadgen`) are named: one run on the load generators changes no idle of the system
/// under test.
fn idle_before_variants(variants: &[Variant], idle: &model::IdlePower, role: &str) -> Option<Flag> {
    let runs_here = |v: &Variant| {
        v.on == "all"
            || role.split('+').any(|r| match v.on.as_str() {
                "sut" => r == "sut" || r == "receiver",
                "loadgen" => r == "loadgen" || r == "sender",
                _ => false,
            })
    };
    let names: Vec<&str> = variants
        .iter()
        .filter(|v| runs_here(v))
        .map(|v| v.name.as_str())
        .collect();
    (!names.is_empty() && !idle.power.is_empty()).then(|| {
        Flag::warning(
            "idle_before_variants",
            format!(
                "idle on {} was measured before any variant's setup ({}): a variant that \
                 changes idle power has its watts above idle taken from this one",
                idle.host,
                names.join(", ")
            ),
        )
    })
}

/// A figure that came out NaN or infinite was not measured: move it to `missing`.
fn finite_only(
    metrics: Vec<model::Metric>,
    mut missing: Vec<model::MissingMetric>,
) -> (Vec<model::Metric>, Vec<model::MissingMetric>) {
    let (ok, bad): (Vec<_>, Vec<_>) = metrics.into_iter().partition(|m| m.value.is_finite());
    for m in bad {
        missing.push(model::MissingMetric {
            name: m.name,
            reason: format!("the computation gave {} (nothing to divide by?)", m.value),
        });
    }
    (ok, missing)
}

/// A test that returned an error: failed; or, when a stop was asked for (a second
/// Ctrl-C killed the servers and the client failed), interrupted, which is what it is,
/// so that the run ends interrupted and rackbench exits as the signal says.
/// `checkpoint_s`: the seconds measured by the test's last checkpoint, whose figures the
/// result keeps (a failed result of a test that had stored one kept its figures
/// unmarked, its checkpoint's flag dropped as it says the process ended).
fn error_status(e: &anyhow::Error, checkpoint_s: Option<f64>) -> (Status, Flag) {
    let kept = match checkpoint_s {
        Some(s) => format!("its figures are its last checkpoint's, after {s:.1} s measured"),
        None => "it measured nothing".to_string(),
    };
    if engine::stop::stop_requested() {
        (
            Status::Interrupted,
            Flag::warning(
                "interrupted",
                format!(
                    "stopped by {}: this test ended with an error as it stopped, and {kept}",
                    engine::stop::stop_cause()
                ),
            ),
        )
    } else if checkpoint_s.is_some() {
        (
            Status::Failed,
            Flag::invalid("failed", format!("{} ({kept})", describe(e))),
        )
    } else {
        (Status::Failed, Flag::invalid("failed", describe(e)))
    }
}

/// The error for a test whose result the store refused (`e`): the run as measured so
/// far, this result included, goes to a file beside the store that `rackbench import`
/// reads, and the run is closed as failed where the store still takes that.
fn unstored(
    store: &store::Store,
    record: &mut RunRecord,
    step: u32,
    e: &anyhow::Error,
) -> anyhow::Error {
    let why = format!("could not store the result of step {step}: {e:#}");
    record.status = Status::Failed;
    record.error = Some(why.clone());
    record.finished_at = Some(chrono::Utc::now());
    let file = store
        .path()
        .with_file_name(format!("{}.unstored.json", record.id));
    // Whole or not at all: the store refused most likely for a full disk, where a
    // plain write leaves half a file that `import` cannot read.
    let write = || -> std::io::Result<()> {
        let dir = file.parent().unwrap_or(std::path::Path::new("."));
        let mut f = tempfile::NamedTempFile::new_in(dir)?;
        std::io::Write::write_all(
            &mut f,
            store::export::to_json(std::slice::from_ref(record)).as_bytes(),
        )?;
        f.as_file().sync_all()?;
        f.persist(&file).map_err(|e| e.error)?;
        Ok(())
    };
    let kept = match write() {
        Ok(()) => format!(
            "the run as measured, that result included, is in {}: `rackbench{} import {}` \
             puts it in the store in place of this copy once the store takes writes again",
            file.display(),
            store::db_option(store.path()),
            model::shell_word(&file.to_string_lossy())
        ),
        Err(w) => format!(
            "and it could not be written to {} either ({w}): it is lost",
            file.display()
        ),
    };
    let _ = store.finish_run(&record.id, Status::Failed, Some(&format!("{why}; {kept}")));
    anyhow::anyhow!("{why}; {kept}")
}

/// Owns a workload and calls its (idempotent) cleanup when dropped.
struct CleanupOnDrop(Box<dyn Workload>);

impl std::ops::Deref for CleanupOnDrop {
    type Target = Box<dyn Workload>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for CleanupOnDrop {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl Drop for CleanupOnDrop {
    fn drop(&mut self) {
        self.0.cleanup();
    }
}

/// One entry of a part's execution order: a sweep point, and with variants the variant
/// and repetition it stands for.
struct Item {
    point: usize,
    variant: Option<usize>,
    rep: Option<u32>,
}

/// A variant's commands and what they printed, in the disclosure of the hosts they ran
/// on (first time only: every repetition runs the same commands).
fn disclose_variant(hosts: &mut [HostDisclosure], v: &Variant, log: &CommandLog) {
    for (host, runs) in log {
        let Some(d) = hosts.iter_mut().find(|d| &d.host == host) else {
            continue;
        };
        let key = format!("variant.{}.setup", v.name);
        if d.facts.contains_key(&key) {
            continue;
        }
        d.facts.insert(key, Fact::known(command_log_text(runs)));
    }
}

/// What the workloads found on the run's hosts, by workload and sweep point. A fact the
/// points found alike is disclosed as found; one that differs between them (net's method
/// with a swept `--zerocopy`, a receiver's port per pair of a matrix, kv's and http's
/// `server.mode` in one suite) with each value and the points that found it, not as the
/// last point's alone.
#[derive(Default)]
struct FoundFacts {
    /// Per host and fact: each value, with the points that found it (`kv clients=50`).
    seen: BTreeMap<(String, String), Vec<FoundAt>>,
}

/// A value of a fact, and the labels of the sweep points that found it.
type FoundAt = (Fact, Vec<String>);

impl FoundFacts {
    /// What `w` learnt about the servers, into the disclosure of the system under test
    /// `sut`, and about each load generator, into that one's ([`FoundFacts::disclose`]).
    fn of_workload(
        &mut self,
        hosts: &mut [HostDisclosure],
        workload: &str,
        label: &str,
        w: &dyn Workload,
        sut: &str,
    ) -> bool {
        let found =
            std::iter::once((sut.to_string(), w.disclosure())).chain(w.loadgen_disclosure());
        self.disclose(hosts, workload, label, found)
    }

    /// Facts `workload` found at the point labelled `label`, each host's into its own
    /// disclosure (a host not of the run, net's in-process sender, has none). A fact read
    /// again at the same point (after each of its tests) replaces what that point found
    /// before. Whether any disclosure changed.
    fn disclose(
        &mut self,
        hosts: &mut [HostDisclosure],
        workload: &str,
        label: &str,
        found: impl IntoIterator<Item = (String, BTreeMap<String, Fact>)>,
    ) -> bool {
        let point = format!("{workload} {label}").trim().to_string();
        let point = point.as_str();
        let mut changed = false;
        for (host, facts) in found {
            let Some(d) = hosts.iter_mut().find(|d| d.host == host) else {
                continue;
            };
            for (k, v) in facts {
                let values = self.seen.entry((host.clone(), k.clone())).or_default();
                for (_, points) in values.iter_mut() {
                    points.retain(|p| p != point);
                }
                values.retain(|(_, points)| !points.is_empty());
                match values.iter_mut().find(|(f, _)| *f == v) {
                    Some((_, points)) => points.push(point.to_string()),
                    None => values.push((v, vec![point.to_string()])),
                }
                let disclosed = match values.as_slice() {
                    [(one, _)] => one.clone(),
                    many => {
                        let text = many
                            .iter()
                            .map(|(f, points)| format!("at {}: {}", points.join("; "), f.display()))
                            .collect::<Vec<_>>()
                            .join(" | ");
                        // Known where any point knew it; each unknown says why in it.
                        if many.iter().any(|(f, _)| f.value.is_some()) {
                            Fact::known(text)
                        } else {
                            Fact::unknown(text)
                        }
                    }
                };
                if d.facts.get(&k) != Some(&disclosed) {
                    d.facts.insert(k, disclosed);
                    changed = true;
                }
            }
        }
        changed
    }
}

/// The commands a log ran and what they printed, as one disclosure value: secrets a command line or
/// its output holds (`-pS3cret`, `user:pass@`, `--password X`) are hidden, as in every
/// other stored command (the disclosure is exported and reported).
fn command_log_text(runs: &[engine::host::CommandRun]) -> String {
    let text = runs
        .iter()
        .map(|r| match (r.ok, r.output.is_empty()) {
            (true, true) => format!("$ {}", r.command),
            (true, false) => format!("$ {} -> {}", r.command, r.output),
            (false, _) => format!("$ {} -> FAILED: {}", r.command, r.output),
        })
        .collect::<Vec<_>>()
        .join("; ");
    if text.is_empty() {
        "(none)".into()
    } else {
        model::redact_secrets(&text)
    }
}

/// A variant's teardown commands and what they printed, in the disclosure of the hosts
/// they ran on (first time, and again whenever one failed: a failed teardown is news).
fn disclose_teardown(hosts: &mut [HostDisclosure], v: &Variant, log: &CommandLog) {
    for (host, runs) in log {
        let Some(d) = hosts.iter_mut().find(|d| &d.host == host) else {
            continue;
        };
        let key = format!("variant.{}.teardown", v.name);
        if d.facts.contains_key(&key) && runs.iter().all(|r| r.ok) {
            continue;
        }
        d.facts.insert(key, Fact::known(command_log_text(runs)));
    }
}

/// Tears every host down however the run ends.
struct Teardown<'a>(&'a HostSet);

impl Drop for Teardown<'_> {
    fn drop(&mut self) {
        self.0.shutdown();
    }
}

/// Each host's disclosure, with what the run knows of it (role, clock offset, address).
fn disclosures(
    set: &HostSet,
    roles: &BTreeMap<String, String>,
) -> anyhow::Result<Vec<HostDisclosure>> {
    let mut out = Vec::new();
    for h in set.all() {
        // This machine, when it only drives the others, is the controller.
        let role = roles
            .get(h.name())
            .cloned()
            .unwrap_or_else(|| "controller".into());
        let mut d = h
            .disclosure(&role)
            .with_context(|| format!("collecting the disclosure of {}", h.name()))?;
        d.facts
            .insert("host.address".into(), Fact::known(h.address()));
        if h.name() != hosts::LOCAL {
            d.facts.insert(
                "host.clock_offset_s".into(),
                Fact::known(format!("{:.6}", h.clock_offset_s())),
            );
        }
        out.push(d);
    }
    // Hosts on one kernel (namespaces or containers of one machine: the same boot id)
    // share its CPUs, whose counters then hold every one's work: said on each, so that
    // a system under test's whole-host CPU is not taken for its servers' where a load
    // generator ran on the same kernel (acceptance K, F1).
    let boots = set.boot_ids();
    for d in out.iter_mut() {
        let Some((_, Some(mine))) = boots.iter().find(|(n, _)| *n == d.host) else {
            continue;
        };
        let others: Vec<&str> = boots
            .iter()
            .filter(|(n, b)| *n != d.host && b.as_ref() == Some(mine))
            .map(|(n, _)| n.as_str())
            .collect();
        if !others.is_empty() {
            d.facts.insert(
                model::KERNEL_SHARED_WITH.into(),
                Fact::known(others.join(", ")),
            );
        }
    }
    for r in set.remotes() {
        if let Some(d) = out.iter_mut().find(|d| d.host == r.name()) {
            d.facts.insert(
                "host.rtt_s".into(),
                Fact::known(format!("{:.6}", r.rtt_s())),
            );
            d.facts.insert(
                "rackbench.agent".into(),
                Fact::known(format!(
                    "{} (binary sha256 {}), pid {}",
                    r.hello().version,
                    &r.hello().binary_sha256[..16],
                    r.hello().pid
                )),
            );
        }
    }
    Ok(out)
}

/// The hosts of the servers a point was given and does not launch (`--target`, `--dsn`),
/// as written: `HOST:PORT`, a URL's host, a DSN's `host=` or URI host. libpq connects to
/// `hostaddr` where it is given (`host` then only names it), and a comma-separated list
/// is several hosts; a Unix socket's directory (`host=/run/postgresql`) is no host.
fn given_server_hosts(point: &Params) -> Vec<String> {
    engine::workload::given_servers(point)
        .into_iter()
        .flat_map(|t| server_hosts_of(t.trim()))
        .filter(|h| !h.is_empty() && !h.starts_with('/') && !h.starts_with('@'))
        .collect()
}

/// The hosts one `--target` or `--dsn` names (see [`given_server_hosts`]).
fn server_hosts_of(t: &str) -> Vec<String> {
    let list = |v: &str| -> Vec<String> {
        v.trim_matches(|c| c == '\'' || c == '"')
            .split(',')
            .map(|h| h.trim().to_string())
            .collect()
    };
    // A keyword DSN, or a URI's query, names them by keyword: hostaddr first.
    let words: Vec<&str> = match t.split_once("://") {
        Some((_, rest)) => rest
            .split_once('?')
            .map_or(Vec::new(), |(_, q)| q.split('&').collect()),
        None => t.split_whitespace().collect(),
    };
    for key in ["hostaddr=", "host="] {
        if let Some(v) = words.iter().find_map(|w| w.strip_prefix(key)) {
            return list(v);
        }
    }
    let authority = match t.split_once("://") {
        Some((_, rest)) => rest.split(['/', '?']).next().unwrap_or(""),
        None => t,
    };
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    authority
        .split(',')
        .map(|one| match one.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or("").to_string(),
            None => one.rsplit_once(':').map_or(one, |(h, _)| h).to_string(),
        })
        .collect()
}

/// The warning for a point whose given server is on none of the system under test's
/// addresses: the CPU, power and disclosure the run gives as the server's are the SUT
/// host's, not those of the host that served. None where the SUT's addresses are not
/// known, or a target is on it (loopback where the SUT is this machine), or does not
/// resolve.
fn target_elsewhere(point: &Params, sut: &dyn engine::host::Host) -> Option<Flag> {
    use std::net::ToSocketAddrs;
    let own = sut.addresses();
    let given = given_server_hosts(point);
    if own.is_empty() || given.is_empty() {
        return None;
    }
    let mut elsewhere = Vec::new();
    for host in &given {
        let ips: Vec<std::net::IpAddr> = (host.as_str(), 0)
            .to_socket_addrs()
            .map(|a| a.map(|a| a.ip()).collect())
            .unwrap_or_default();
        // Loopback is the host that connects: the SUT only where it is this machine
        // (review I, 6: `--sut rbh2 --target 127.0.0.1:6379` reached each generator's own).
        let here = |ip: &std::net::IpAddr| {
            own.contains(ip) || (ip.is_loopback() && sut.name() == hosts::LOCAL)
        };
        if ips.is_empty() || ips.iter().any(here) {
            continue;
        }
        elsewhere.push(host.clone());
    }
    if elsewhere.is_empty() {
        return None;
    }
    let name = match sut.name() {
        hosts::LOCAL => "this machine".to_string(),
        other => other.to_string(),
    };
    Some(Flag::warning(
        "target_not_on_sut",
        model::redact_secrets(&format!(
            "the server given ({}) is at an address of none of the system under test's \
             ({name}) interfaces: the CPU, power and disclosure given as the server's are \
             {name}'s, not those of the host that served; give --sut the host the server \
             runs on",
            elsewhere.join(", ")
        )),
    ))
}

/// The CPU lists of one sweep point (`w`'s) against the CPUs online on the hosts they
/// name (the kernel's list, holes and all), as each said when it was reached. A list
/// past a host's CPUs used to be found by the test itself on that host, then stored as
/// a failed result. A host whose list could not be read was judged on its count: said
/// once per host (`noted`), unless quiet.
fn check_cpu_lists(
    workload: &str,
    point_roles: &PointRoles,
    w: &dyn Workload,
    set: &HostSet,
    verbose: bool,
    noted: &mut BTreeSet<String>,
) -> anyhow::Result<()> {
    let roles = point_roles.resolve(set)?;
    for list in w.cpu_lists()? {
        for host in list.role.hosts(&roles) {
            let Some(online) = host.cpus_online() else {
                continue;
            };
            let name = match host.name() {
                hosts::LOCAL => format!("{} (this machine)", hosts::LOCAL),
                other => model::printable(other),
            };
            if let Some(why) = list.refusal(&name, &online) {
                anyhow::bail!("{workload}: {why}");
            }
            if let Some(note) = online.note() {
                if verbose && noted.insert(name.clone()) {
                    engine::errln!(
                        "rackbench: {} checked against the CPUs online on {name} as counted: {}",
                        list.flag,
                        model::printable(&note)
                    );
                }
            }
        }
    }
    Ok(())
}

/// A test's provisional result: the record its partial outputs fill (set before it
/// starts), its place in the store once one was stored, the last one stored, and how
/// many of each host's telemetry samples of the test are stored with it.
#[derive(Default)]
struct Provisional {
    template: Option<ResultRecord>,
    at: Option<i64>,
    last: Option<ResultRecord>,
    samples_stored: BTreeMap<String, usize>,
}

/// The samples of `so_far` (each host's of the test under way, host after host, each
/// host's in time order) not yet stored, by how many of each host's are (`stored`), and
/// how many of each host's are stored once these are. By host: a count over all of them
/// took, after the first checkpoint, the later hosts' samples again and the earlier
/// hosts' never (acceptance O, 1).
fn unstored_samples(
    so_far: &[model::TelemetrySample],
    stored: &BTreeMap<String, usize>,
) -> (Vec<model::TelemetrySample>, BTreeMap<String, usize>) {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut new = Vec::new();
    for s in so_far {
        let n = seen.entry(s.host.clone()).or_default();
        if *n >= stored.get(&s.host).copied().unwrap_or(0) {
            new.push(s.clone());
        }
        *n += 1;
    }
    (new, seen)
}

/// What a provisional result's telemetry is taken from: the run's telemetry, the hosts
/// of the test's sweep point, and the host of its server, if it has one (as its final
/// result's figures take them).
struct TestTelemetry {
    telemetry: Arc<telemetry::Telemetry>,
    point_hosts: Vec<String>,
    server_host: Option<String>,
    /// How its workload's tests are made longer ([`Registration::lengthen`]).
    lengthen: &'static str,
}

/// The lock of a provisional slot, whether or not a writer panicked holding it.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Where a test under way hands what it measured so far ([`Ctx::partial`]): stored at
/// once as its provisional result, `running`, each hand replacing the last, so that a
/// process killed in the middle (kill -9, out of memory) leaves it in the store, where
/// the next command closes it `interrupted`; the final result replaces it. Best effort:
/// a store that refuses it leaves the test to its final result.
fn store_partial(
    store: &Arc<store::Store>,
    run_id: &str,
    slot: &Arc<Mutex<Provisional>>,
    tel: TestTelemetry,
) -> engine::workload::Partial {
    let (store, run_id, slot) = (store.clone(), run_id.to_string(), slot.clone());
    Arc::new(move |so_far: &engine::StepOutput| {
        let mut g = lock(&slot);
        let Some(template) = &g.template else {
            return;
        };
        // Every host's samples so far and its figures over what was measured so far, as
        // the final result would have them: a kill keeps them (acceptance pass G, 5).
        let samples = tel.telemetry.so_far();
        let hosts: Vec<&str> = tel.point_hosts.iter().map(String::as_str).collect();
        let figures = tel.telemetry.figures(
            &samples,
            &so_far.measured,
            &hosts,
            false,
            tel.server_host.as_deref(),
            tel.lengthen,
        );
        let (metrics, missing) = finite_only(so_far.metrics.clone(), so_far.missing.clone());
        // What the test measured (kept for a final result the test's error makes).
        let measured = ResultRecord {
            // A load test's checkpoint has its headline; a capacity test's steps have none.
            headline: so_far.headline.clone(),
            duration_s: so_far.duration_s,
            metrics,
            missing,
            histograms: so_far.histograms.clone(),
            flags: so_far.flags.clone(),
            settings: with_own_settings(&template.settings, &so_far.settings),
            ..template.clone()
        };
        let mut rec = measured.clone();
        rec.missing.extend(figures.missing);
        rec.flags.extend(figures.flags);
        rec.telemetry_summary = figures.summary;
        // Stored once each: the samples stored with the last one stay.
        let (new, stored) = unstored_samples(&samples.samples, &g.samples_stored);
        rec.telemetry = new;
        if let Ok(placed) = store.put_result_adding_samples(&run_id, g.at, &rec) {
            g.at = Some(placed);
            g.samples_stored = stored;
            g.last = Some(measured);
        }
    })
}

/// A test a second Ctrl-C aborted: it killed the servers and every host's agent at once,
/// so the hosts it "lost" and the servers nobody can ask any more are its doing, not
/// failures; the result is interrupted, saying so (acceptance O, 5: it was stored failed,
/// `host_lost` on every host, its error an unrelated line of an agent's log).
fn aborted_by_user(result: &mut ResultRecord) {
    result.flags.retain(|f| {
        !matches!(
            f.code.as_str(),
            "server_unknown" | "host_failed" | "interrupted"
        )
    });
    result.status = Status::Interrupted;
    result.error = None;
    result.flags.push(Flag::warning(
        "interrupted",
        format!(
            "aborted by a second {}: the servers and every host's agent were killed at once; \
             what was measured before is kept, and this test ran short",
            engine::stop::stop_cause()
        ),
    ));
}

/// Keep in `result` what host `host`, lost during the test, had measured by its last
/// checkpoint (`partial`): its own figures there (those labelled with it, such as a load
/// generator's `requests{host=rbh3}`), each labelled with the checkpoint's time, where the
/// survivors' final figures leave it out (acceptance O, 2: the store held rbh3's 154,341
/// requests until the test ended, and then none). Returns what the `host_lost` flag adds
/// to say so, empty where nothing was kept.
fn keep_lost_hosts_checkpoint(
    result: &mut ResultRecord,
    host: &str,
    partial: &ResultRecord,
) -> String {
    let at_s = partial.duration_s;
    let own = |m: &&Metric| m.labels.get("host").map(String::as_str) == Some(host);
    let kept: Vec<Metric> = partial
        .metrics
        .iter()
        .filter(own)
        .filter(|m| !result.metrics.iter().any(|r| r.name == m.name && own(&r)))
        .map(|m| m.clone().label("until_checkpoint_s", format!("{at_s:.1}")))
        .collect();
    if kept.is_empty() {
        return String::new();
    }
    result.metrics.extend(kept);
    format!(
        "; what it measured up to the test's last checkpoint, {at_s:.1} s into it, is kept \
         as its own figures (labelled until_checkpoint_s), in none of the totals"
    )
}

/// A test's settings: its sweep point's, with what the test resolved for itself over
/// them (a null takes a point's setting out), redacted as the point's are.
fn with_own_settings(point: &BTreeMap<String, Value>, own: &Params) -> BTreeMap<String, Value> {
    let mut s = point.clone();
    if let Value::Object(own) = redact_value(&Value::Object(own.clone())) {
        for (k, v) in own {
            match v {
                Value::Null => s.remove(&k),
                v => s.insert(k, v),
            };
        }
    }
    s
}

/// Counts the results stored, for the observer it passes them on to.
struct Counted<'a> {
    inner: &'a dyn Observer,
    stored: std::cell::Cell<usize>,
}

impl Observer for Counted<'_> {
    fn step_done(&self, result: &ResultRecord) {
        self.stored.set(self.stored.get() + 1);
        self.inner.step_done(result);
    }
}

/// Run a plan into `store`. Setup errors and stops before anything was measured leave
/// nothing stored; later failures and stops keep what was measured.
///
/// An error is returned only when nothing of the run is kept. One that ends the run after
/// a result was stored (a host gone while the next point is reached, the store refusing
/// a write) closes the run as failed, or interrupted under a stop, with the error, and
/// comes back as its [`Finished::failure`]: returned as an error, it left the run
/// `running` in the store, and `rackbench run` stopped by Ctrl-C said "nothing stored"
/// of it.
pub fn run(
    plan: &Plan,
    store: &Arc<store::Store>,
    progress: Arc<Progress>,
    observer: &dyn Observer,
) -> anyhow::Result<Finished> {
    let run_id = new_run_id();
    let counted = Counted {
        inner: observer,
        stored: std::cell::Cell::new(0),
    };
    let e = match run_as(plan, store, progress, &counted, &run_id) {
        Ok(finished) => return Ok(finished),
        Err(e) => e,
    };
    // What the store holds of the run: none when it was never begun; results the
    // observer was not told of when a test's final write failed (its checkpoint's
    // provisional result stays, and `unstored` has closed the run with the why).
    let holds_results = store.load_run(&run_id).is_ok_and(|r| !r.results.is_empty());
    if counted.stored.get() == 0 && !holds_results {
        // Begun and nothing measured, or never begun (no such run): none is kept.
        let _ = store.delete_run(&run_id);
        return Err(e);
    }
    let interrupted = engine::stop::stop_requested();
    let failure = describe(&e);
    let status = if interrupted {
        Status::Interrupted
    } else {
        Status::Failed
    };
    // Best effort: a store that refuses this too closes the run at the next command.
    let _ = store.finish_run(&run_id, status, Some(&failure));
    Ok(Finished {
        run_id: Some(run_id),
        failure: Some(failure),
        interrupted,
    })
}

/// [`run`], as run `run_id`.
fn run_as(
    plan: &Plan,
    store: &Arc<store::Store>,
    progress: Arc<Progress>,
    observer: &dyn Observer,
    run_id: &str,
) -> anyhow::Result<Finished> {
    let o = &plan.opts;
    // Build every point of every part first: bad parameters fail here, before anything
    // is stored.
    let mut parts = Vec::with_capacity(plan.parts.len());
    for part in &plan.parts {
        let reg = &part.registration;
        let mut expanded = plan.hosts.expand(&part.points, reg.name, reg.has_server)?;
        // With variants, every point becomes one item per repetition and variant, in
        // that order (A B A B ...), each a single repetition of its own.
        let mut items: Vec<Item> = Vec::new();
        for (i, _) in expanded.iter().enumerate() {
            if o.variants.is_empty() {
                items.push(Item {
                    point: i,
                    variant: None,
                    rep: None,
                });
            } else {
                for rep in 0..o.repeat.max(1) {
                    for v in 0..o.variants.len() {
                        items.push(Item {
                            point: i,
                            variant: Some(v),
                            rep: Some(rep),
                        });
                    }
                }
            }
        }
        let swept = engine::plan::swept_keys(&part.params, reg.list_keys);
        let mut workloads: Vec<Box<dyn Workload>> = Vec::with_capacity(items.len());
        for it in &items {
            let (point, roles) = &expanded[it.point];
            let w = reg.build_point(point)?;
            let what = || match point_label(point, &swept) {
                l if l.is_empty() => reg.name.to_string(),
                l => format!("{} {l}", reg.name),
            };
            engine::workload::refuse_repeated_tests(&w.tests()).with_context(what)?;
            // Every point's load against its generators now, not when its turn comes
            // (after servers were launched and earlier points measured and stored); a
            // generator on this machine against its open-file limit too (another host's
            // is checked by its generator, before its first connect).
            let most = w
                .connections_per_generator(roles.loadgens.len())
                .with_context(what)?;
            if let Some(c) = most.filter(|_| roles.loadgens.iter().any(|h| h == hosts::LOCAL)) {
                engine::limits::ensure_open_files(c).with_context(what)?;
            }
            workloads.push(w);
        }
        let expanded_items: Vec<_> = items
            .iter()
            .map(|it| (expanded[it.point].clone(), it.variant, it.rep))
            .collect();
        expanded = expanded_items.iter().map(|(e, _, _)| e.clone()).collect();
        let markers: Vec<(Option<usize>, Option<u32>)> =
            expanded_items.iter().map(|(_, v, r)| (*v, *r)).collect();
        if !plan.hosts.is_local() && reg.service.is_none() {
            anyhow::bail!(
                "`{}` runs on this host only for now (it is not split into a service and a driver yet): \
                 drop the host options (kv, http, oltp, net, crypto and mem run over several hosts)",
                reg.name
            );
        }
        parts.push((part, expanded, workloads, markers));
    }
    let every_point: Vec<_> = parts.iter().flat_map(|(_, e, _, _)| e.clone()).collect();
    let host_roles = plan.hosts.roles_by_host(&every_point);
    // The hosts that take load: systems under test, a net pair's receivers.
    let suts: Vec<String> = host_roles
        .iter()
        .filter(|(_, r)| r.contains("sut") || r.contains("receiver"))
        .map(|(h, _)| h.clone())
        .collect();
    // A meter command reads one machine: given to every host that takes load (a net
    // matrix makes each a receiver in turn), each stored that machine's watts as its
    // own, and its W per Gbit/s with them.
    if o.power_meter.is_some() && suts.len() > 1 {
        anyhow::bail!(
            "--power-meter reads one machine's watts, and {} hosts take load in this run \
             ({}): run each system under test (or receiver) with its own meter, or leave \
             --power-meter out (each host's RAPL or BMC is read on its own)",
            suts.len(),
            suts.join(", ")
        );
    }
    // Hosts up: an unreachable one is an error naming it, nothing left running.
    let set = HostSet::connect(
        &plan.hosts.names(),
        plan.hosts.ssh_config.clone(),
        plan.catalog,
        o.verbose,
    )?;
    let _teardown = Teardown(&set);
    // A point serving from this machine to another host that cannot reach it here.
    if let Some(why) = set.local_unreachable() {
        if every_point.iter().any(|(_, r)| r.served_here_to_others()) {
            anyhow::bail!("{}", model::printable(why));
        }
    }
    // What each point would refuse before launching anything, asked of the hosts it
    // names before anything starts or is stored: its server's program not there on its
    // system under test (a suite's second workload failed there after its first was
    // measured and stored), a CPU list past a host's CPUs.
    let (mut asked, mut noted) = (BTreeSet::new(), BTreeSet::new());
    for (part, expanded, workloads, _) in &parts {
        let name = part.registration.name;
        for ((point, point_roles), w) in expanded.iter().zip(workloads) {
            let key = (
                point_roles.sut.clone(),
                Value::Object(point.clone()).to_string(),
            );
            if asked.insert(key) {
                let host = set.get(&point_roles.sut)?;
                if host.remote() {
                    host.check_launch(name, point)
                        .with_context(|| format!("{name} on {}", model::printable(host.name())))?;
                } else {
                    w.check_launch_here().context(name)?;
                }
            }
            check_cpu_lists(name, point_roles, w.as_ref(), &set, o.verbose, &mut noted)?;
        }
    }
    let hosts = disclosures(&set, &host_roles)?;
    // Each part's tests as its results are named (`rsa` asked: `rsa512` .. `rsa4096`;
    // `udp`: `udp1472`, `udp60`), in the order they run, from the workload itself: what a
    // report of a run that did not finish names as never run.
    let part_json = |part: &Part, points: usize, workloads: &[Box<dyn Workload>]| {
        let mut tests: Vec<String> = Vec::new();
        for t in workloads.iter().flat_map(|w| w.tests()) {
            if !tests.contains(&t) {
                tests.push(t);
            }
        }
        serde_json::json!({
            "workload": part.registration.name,
            "params": Value::Object(part.params.clone()),
            "points": points,
            "tests": tests,
        })
    };
    let mut plan_json = serde_json::json!({
        "run": {
            "repeat": o.repeat,
            "until_cv_pct": o.until_cv,
            "max_repeat": o.max_repeat,
            "label": o.label,
            "telemetry_interval_s": o.telemetry_interval_s,
            "telemetry": o.telemetry,
            "idle_power_s": o.idle_power_s,
            "power_meter": o.power_meter,
            "power_model": o.power_model.map(|(a, b)| format!("{a}:{b}")),
        },
        "hosts": plan.hosts.to_json(),
        "variants": o.variants,
    });
    // One workload: its keys at the top, as always; a suite: one entry per part.
    match parts.as_slice() {
        [(part, expanded, workloads, _)] => {
            if let (Value::Object(top), Value::Object(one)) =
                (&mut plan_json, part_json(part, expanded.len(), workloads))
            {
                top.extend(one);
            }
        }
        many => {
            plan_json["suite"] = Value::Array(
                many.iter()
                    .map(|(part, expanded, workloads, _)| {
                        part_json(part, expanded.len(), workloads)
                    })
                    .collect(),
            );
        }
    }
    let mut record = RunRecord {
        format_version: model::RECORD_FORMAT_VERSION,
        id: run_id.to_string(),
        label: o.label.clone(),
        created_at: chrono::Utc::now(),
        finished_at: None,
        rackbench_version: plan.build.clone(),
        command: plan.command.clone(),
        plan: redact_value(&plan_json),
        hosts,
        idle_power: Vec::new(),
        results: Vec::new(),
        status: Status::Running,
        error: None,
    };
    store.begin_run(&record)?;
    let run_id = record.id.clone();
    let settings = TelemetrySettings {
        interval_s: o.telemetry_interval_s,
        power_meter: o.power_meter.clone(),
        power_model: o.power_model,
    };
    let telemetry = match telemetry::Telemetry::start(set.all(), &settings, &suts, o.telemetry) {
        Ok(t) => Arc::new(t.with_disclosures(&record.hosts)),
        Err(e) => {
            store.delete_run(&run_id)?;
            return Err(e);
        }
    };
    if telemetry.disclose_power_sources(&mut record.hosts, &settings) {
        store.update_hosts(&run_id, &record.hosts)?;
    }
    // Ctrl-C reaches the remote drivers too, and an idle measurement there (before it,
    // a stop would leave the hosts measuring idle for up to --idle-power).
    let interrupter = Interrupter::start(&set);
    // A stop while the hosts were reached (that cannot be cut short: ssh's own timeouts
    // bound it) ends the run here, with nothing measured and nothing stored; the loop
    // below checks again before each sweep point.
    if !engine::stop::stop_requested() {
        // Cut short by a stop, an idle figure says the time it covered (duration_s).
        for mut idle in telemetry.measure_idle(o.idle_power_s, o.verbose) {
            let role = host_roles.get(&idle.host).map_or("", String::as_str);
            idle.flags
                .extend(idle_before_variants(&o.variants, &idle, role));
            store.insert_idle_power(&run_id, &idle)?;
            record.idle_power.push(idle);
        }
    }

    let repeat = o.repeat.max(1);
    let mut step: u32 = 0;
    let mut failure: Option<String> = None;
    // Whether something measured is stored: then a failure or a stop before the first
    // result closes the run with it, rather than deleting the run (a measured idle
    // power may have taken minutes).
    let mut kept = record.idle_power.iter().any(|i| i.duration_s > 0.0);
    let mut found_facts = FoundFacts::default();
    'run: for (part, expanded, workloads, markers) in parts {
        let reg = &part.registration;
        let swept = engine::plan::swept_keys(&part.params, reg.list_keys);
        for (pi, (((point, point_roles), w), (variant, fixed_rep))) in
            expanded.iter().zip(workloads).zip(markers).enumerate()
        {
            let roles = point_roles.resolve(&set)?;
            if engine::stop::stop_requested() {
                break 'run;
            }
            // The variant's setup before the servers start (a server option, a sysctl);
            // its teardown when `_variant` drops, however this item ends.
            let variant = variant.map(|v| &o.variants[v]);
            let mut setup_log = CommandLog::new();
            let mut variant_on = match variant {
                None => None,
                Some(v) => match VariantOn::set_up(v, &roles, o.verbose, &mut setup_log) {
                    Ok(Some(on)) => {
                        disclose_variant(&mut record.hosts, v, &setup_log);
                        on.disclose_changes(&mut record.hosts);
                        store.update_hosts(&run_id, &record.hosts)?;
                        Some(on)
                    }
                    // Stopped during the setup (torn down already): the run ends
                    // interrupted, with what was measured before. So does an error that
                    // came with the stop (a host's answer cut off by it).
                    Ok(None) => break 'run,
                    Err(_) if engine::stop::stop_requested() => break 'run,
                    Err(e) if !kept => {
                        telemetry.stop();
                        interrupter.stop();
                        store.delete_run(&run_id)?;
                        return Err(e);
                    }
                    Err(e) => {
                        // What the failed setup printed stays with the run it ends.
                        disclose_variant(&mut record.hosts, v, &setup_log);
                        store.update_hosts(&run_id, &record.hosts)?;
                        failure = Some(describe(&e));
                        break 'run;
                    }
                },
            };
            // The provisional result of the test under way: the record its partial
            // outputs fill, set before it starts, and its place once one was stored.
            let provisional: Arc<Mutex<Provisional>> = Arc::default();
            // This point's hosts, and where its server runs, when the workload has one:
            // what a test's telemetry figures are of.
            let point_hosts: Vec<String> =
                roles.all().iter().map(|h| h.name().to_string()).collect();
            let server_host = reg.has_server.then(|| roles.sut.name().to_string());
            let ctx = Ctx {
                progress: progress.clone(),
                watch: telemetry.watch(roles.sut.clone(), set.local()),
                verbose: o.verbose,
                roles: Some(roles.clone()),
                partial: Some(store_partial(
                    store,
                    &run_id,
                    &provisional,
                    TestTelemetry {
                        telemetry: telemetry.clone(),
                        point_hosts: point_hosts.clone(),
                        server_host: server_host.clone(),
                        lengthen: reg.lengthen,
                    },
                )),
            };
            // Whatever way this iteration ends (error, Ctrl-C, `?`), the workload's servers go.
            let mut w = CleanupOnDrop(w);
            // A given server not on the system under test: its CPU, power and disclosure
            // would be published as the server's (acceptance pass G, 2).
            let elsewhere = target_elsewhere(point, roles.sut.as_ref());
            if let Some(f) = elsewhere.as_ref().filter(|_| o.verbose) {
                engine::errln!("rackbench: warning: {}", model::printable(&f.message));
            }
            let mut label = point_label(point, &swept);
            if let Some(pair) = point_roles.pair_label() {
                label = format!("{label} {pair}").trim().to_string();
            }
            if let Some(v) = variant {
                label = format!("{label} variant={}", v.name).trim().to_string();
            }
            if let Err(e) = w.prepare(&ctx) {
                w.cleanup();
                // Servers stopped or killed by Ctrl-C fail the prepare under way: that is
                // the interruption, not a failure (and not a refusal to store nothing).
                if engine::stop::stop_requested() {
                    if o.verbose {
                        engine::errln!(
                            "rackbench: preparing {} ended by {}: {}",
                            reg.name,
                            engine::stop::stop_cause(),
                            model::printable(&describe(&e))
                        );
                    }
                    break 'run;
                }
                let msg = describe(&e);
                if !kept {
                    // Nothing measured yet: leave nothing half-written.
                    telemetry.stop();
                    interrupter.stop();
                    store.delete_run(&run_id)?;
                    return Err(e.context(
                        format!("preparing {} {label}", reg.name)
                            .trim_end()
                            .to_string(),
                    ));
                }
                let label = if label.is_empty() {
                    String::new()
                } else {
                    format!(" ({label})")
                };
                failure = Some(format!("{} sweep point {}{label}: {msg}", reg.name, pi + 1));
                break 'run;
            }
            if found_facts.of_workload(&mut record.hosts, reg.name, &label, &**w, roles.sut.name())
            {
                store.update_hosts(&run_id, &record.hosts)?;
            }
            // Every knob the point runs with, defaults included, redacted as its
            // parameters are (a password never stored).
            let point_settings: BTreeMap<String, Value> =
                match redact_value(&Value::Object(w.settings())) {
                    Value::Object(m) => m.into_iter().collect(),
                    _ => BTreeMap::new(),
                };
            let mut point_steps: Vec<u32> = Vec::new();
            let max_repeat = match o.until_cv {
                Some(_) => o.max_repeat.unwrap_or(10).max(repeat),
                None => repeat,
            };
            for test in w.tests() {
                let mut headlines: Vec<f64> = Vec::new();
                let mut test_steps: Vec<u32> = Vec::new();
                // A variant's item is one repetition, numbered as it falls in the run.
                let reps = match fixed_rep {
                    Some(r) => r..r + 1,
                    None => 0..max_repeat,
                };
                // The repetitions that counted with no headline (a search that met no
                // rate): --until-cv has nothing to judge in them.
                let mut headless = 0;
                for rep in reps {
                    if engine::stop::stop_requested() {
                        break 'run;
                    }
                    if o.until_cv.is_some_and(|target| {
                        spread_settled(rep, repeat, &headlines, target)
                            || nothing_to_judge(rep, repeat, &headlines, headless)
                    }) {
                        break;
                    }
                    if rep >= repeat && o.until_cv.is_none() {
                        break;
                    }
                    let what = format!(
                        "{} {test}{}{}",
                        reg.name,
                        if label.is_empty() {
                            String::new()
                        } else {
                            format!(" {label}")
                        },
                        // Under --until-cv, of at most --max-repeat: "rep 5/3" read
                        // as a run past its end.
                        match (o.until_cv, fixed_rep) {
                            (Some(_), None) if max_repeat > 1 => {
                                format!(" (rep {}, at most {max_repeat})", rep + 1)
                            }
                            _ if repeat > 1 => format!(" (rep {}/{repeat})", rep + 1),
                            _ => String::new(),
                        }
                    );
                    let (total, mut dur_ms) = expected_size(point);
                    // Where the workload knows better (crypto times each buffer size,
                    // or signs then verifies, `duration` each), whatever host runs it:
                    // the bar stood at 100%, ETA 0s, from the first of five sizes on.
                    if let Some(s) = w.expected_duration_s(&test) {
                        dur_ms = (s * 1000.0) as u64;
                    }
                    progress.reset(&what, total, dur_ms);
                    // A test that loads through its generators' common start measures
                    // from that start plus its warm-up: the lead (>= 0.3 s to a remote
                    // generator) is setup, not load.
                    telemetry.begin_step(match w.warmup_s(&test) {
                        Some(warm) => roles.start_lead().as_secs_f64() + warm,
                        None => point.get("warmup").and_then(Value::as_f64).unwrap_or(0.0),
                    });
                    let started_at = chrono::Utc::now();
                    let mut params: BTreeMap<String, Value> = point
                        .iter()
                        .map(|(k, v)| (k.clone(), redact_value(v)))
                        .collect();
                    params.extend(point_roles.params());
                    if let Some(v) = variant {
                        params.insert("variant".into(), Value::String(v.name.clone()));
                    }
                    // Less the knobs the test does not read (`drop_unread` below).
                    let settings = point_settings.clone();
                    // What this test's result is, whatever it measures: its partial
                    // outputs and its outcome fill the rest.
                    let mut template = ResultRecord {
                        workload: reg.name.to_string(),
                        test: test.clone(),
                        step,
                        repetition: rep,
                        params,
                        settings,
                        headline: String::new(),
                        started_at,
                        duration_s: 0.0,
                        metrics: Vec::new(),
                        missing: Vec::new(),
                        histograms: Vec::new(),
                        telemetry: Vec::new(),
                        telemetry_summary: Vec::new(),
                        flags: Vec::new(),
                        status: Status::Running,
                        error: None,
                    };
                    template.drop_unread();
                    *lock(&provisional) = Provisional {
                        template: Some(template.clone()),
                        ..Provisional::default()
                    };
                    let outcome = w.run_test(&test, &ctx);
                    // The final result takes the provisional one's place.
                    let Provisional {
                        at: provisional_at,
                        last: partial,
                        ..
                    } = std::mem::take(&mut *lock(&provisional));
                    let samples = telemetry.end_step();
                    let point_hosts: Vec<&str> = point_hosts.iter().map(String::as_str).collect();
                    let server_host = server_host.as_deref();
                    // Only a host of this point fails it (a net pair is not failed by a
                    // third host that died). Its reason quotes the agent's stderr: redacted,
                    // as every stored error is.
                    let lost = roles
                        .all()
                        .iter()
                        .find_map(|h| Some((h.name().to_string(), h.lost()?, h.lost_at())))
                        .map(|(host, why, at)| (host, model::redact_secrets(&why), at));
                    let mut result = match outcome {
                        Ok(out) => {
                            let interrupted = engine::stop::stop_requested();
                            // An error while a stop was asked for (connections and
                            // servers going away with it) is the interruption, not a
                            // failure: the test is stored interrupted, measured figures kept.
                            let status = match (&out.error, interrupted) {
                                (_, true) => Status::Interrupted,
                                (Some(_), false) => Status::Failed,
                                (None, false) => Status::Ok,
                            };
                            let mut flags = out.flags;
                            if interrupted && lost.is_none() {
                                flags.push(Flag::warning(
                                    "interrupted",
                                    format!(
                                        "stopped by {}: this test ran short",
                                        engine::stop::stop_cause()
                                    ),
                                ));
                            }
                            // Over the load the workload measured, not its setup and
                            // teardown around it; flags of this point's hosts only.
                            let tel = telemetry.figures(
                                &samples,
                                &out.measured,
                                &point_hosts,
                                interrupted,
                                server_host,
                                reg.lengthen,
                            );
                            flags.extend(tel.flags);
                            let (metrics, mut missing) = finite_only(out.metrics, out.missing);
                            missing.extend(tel.missing);
                            ResultRecord {
                                settings: with_own_settings(&template.settings, &out.settings),
                                headline: out.headline,
                                duration_s: out.duration_s,
                                metrics,
                                missing,
                                histograms: out.histograms,
                                telemetry: samples.samples,
                                telemetry_summary: tel.summary,
                                flags,
                                status,
                                error: out.error,
                                ..template
                            }
                        }
                        Err(e) => {
                            // The whole test's telemetry (no measured time is known), and
                            // the hosts whose samples did not come back named.
                            let tel = telemetry.figures(
                                &samples,
                                &[],
                                &point_hosts,
                                engine::stop::stop_requested(),
                                server_host,
                                reg.lengthen,
                            );
                            let (status, flag) =
                                error_status(&e, partial.as_ref().map(|p| p.duration_s));
                            // What its steps had measured before the error, kept as a
                            // kill would have kept it.
                            let base = partial.clone().unwrap_or(template);
                            let mut flags = base.flags.clone();
                            flags.retain(|f| f.code != model::PARTIAL);
                            flags.push(flag);
                            let mut missing = base.missing.clone();
                            missing.extend(tel.missing);
                            ResultRecord {
                                missing,
                                telemetry_summary: tel.summary,
                                telemetry: samples.samples,
                                flags,
                                status,
                                error: Some(describe(&e)),
                                ..base
                            }
                        }
                    };
                    result.flags.extend(elsewhere.clone());
                    if engine::stop::aborted() {
                        aborted_by_user(&mut result);
                    } else if let Some((host, why, lost_at)) = &lost {
                        // A host died during this test: what the others measured stays,
                        // named, and what it had measured by the last checkpoint too.
                        // Lost as the run was stopped, it was most likely the stop's
                        // doing (a service manager's stop signals every process of the
                        // unit, the ssh clients too, in no set order): the test is
                        // interrupted, not failed, and its figures are still short of
                        // that host's. Lost well before the stop, it failed.
                        let stopped = engine::stop::caused(*lost_at);
                        let mut why = why.clone();
                        if stopped {
                            why.push_str(&format!(
                                ", as the run was stopped by {} (which may have ended its \
                                 ssh as well)",
                                engine::stop::stop_cause()
                            ));
                        }
                        if let Some(p) = &partial {
                            why.push_str(&keep_lost_hosts_checkpoint(&mut result, host, p));
                        }
                        result.flags.push(Flag::invalid("host_lost", why.clone()));
                        if stopped {
                            result.status = Status::Interrupted;
                        } else {
                            result.status = Status::Failed;
                            result.error.get_or_insert(why);
                        }
                    }
                    if let Err(e) = store.put_result(&run_id, provisional_at, &result) {
                        // The disk is full, or another writer held the store too long:
                        // what this test measured is not lost with it.
                        telemetry.stop();
                        interrupter.stop();
                        record.results.push(result);
                        return Err(unstored(store, &mut record, step, &e));
                    }
                    kept = true;
                    // What a test read back (net's congestion control from its data
                    // stream) replaces what was known before it.
                    if found_facts.of_workload(
                        &mut record.hosts,
                        reg.name,
                        &label,
                        &**w,
                        roles.sut.name(),
                    ) {
                        store.update_hosts(&run_id, &record.hosts)?;
                    }
                    match counted_headline(&result) {
                        Some(h) => headlines.push(h),
                        None if result.uncounted_as().is_none() => headless += 1,
                        None => {}
                    }
                    observer.step_done(&result);
                    point_steps.push(step);
                    test_steps.push(step);
                    step += 1;
                    let failed = result.status == Status::Failed;
                    let err = result.error.clone();
                    record.results.push(result);
                    if failed {
                        failure = Some(err.unwrap_or_else(|| "a test failed".into()));
                        w.cleanup();
                        break 'run;
                    }
                }
                // The repetitions ran out (--max-repeat) before the spread came down.
                let until_cv = o.until_cv.filter(|_| fixed_rep.is_none());
                let flag = until_cv.and_then(|t| match headless {
                    n if n > 0 && headlines.is_empty() => Some(no_headline_flag(n, t)),
                    _ => cv_target_flag(&headlines, t),
                });
                if let Some(flag) = flag {
                    flag_steps(store, &mut record, &test_steps, std::slice::from_ref(&flag))?;
                }
            }
            match w.verify(&ctx) {
                Ok(flags) if !flags.is_empty() => {
                    flag_steps(store, &mut record, &point_steps, &flags)?;
                }
                Ok(_) => {}
                Err(e) => {
                    let f = Flag::invalid("verify_failed", describe(&e));
                    flag_steps(store, &mut record, &point_steps, std::slice::from_ref(&f))?;
                }
            }
            w.cleanup();
            telemetry.unwatch_servers();
            // The servers are gone: take the setting out, and disclose what that printed.
            if let (Some(mut on), Some(v)) = (variant_on.take(), variant) {
                let log = on.tear_down();
                disclose_teardown(&mut record.hosts, v, &log);
                store.update_hosts(&run_id, &record.hosts)?;
            }
        }
    }
    telemetry.stop();
    interrupter.stop();
    let interrupted = engine::stop::stop_requested();
    if interrupted && failure.is_none() && !kept {
        // Stopped before anything was measured (while the hosts were reached, a server
        // launched): a run of nothing but its stop is not kept. An idle power measured,
        // even cut short by the stop, is kept with its run.
        store.delete_run(&run_id)?;
        return Ok(Finished {
            run_id: None,
            failure,
            interrupted,
        });
    }
    let status = if failure.is_some() {
        Status::Failed
    } else if interrupted {
        Status::Interrupted
    } else {
        Status::Ok
    };
    store.finish_run(&run_id, status, failure.as_deref())?;
    Ok(Finished {
        run_id: Some(run_id),
        failure,
        interrupted,
    })
}

/// Carries a Ctrl-C (the process-wide stop flag) to every remote host's drivers.
struct Interrupter {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Interrupter {
    fn start(set: &HostSet) -> Interrupter {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let remotes: Vec<Arc<dyn Host>> = set
            .remotes()
            .iter()
            .map(|r| r.clone() as Arc<dyn Host>)
            .collect();
        let thread = (!remotes.is_empty()).then(|| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    if engine::stop::stop_requested() {
                        // All at once: one host that hangs (until it is found lost, about
                        // 5 s) would otherwise hold back the others' interrupt, and
                        // their load would run on for that long.
                        std::thread::scope(|s| {
                            for r in &remotes {
                                s.spawn(|| r.interrupt());
                            }
                        });
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            })
        });
        Interrupter { stop, thread }
    }

    fn stop(&self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Drop for Interrupter {
    fn drop(&mut self) {
        self.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::testing::{kill_left, marker, running};
    use std::time::Instant;

    /// `--until-cv` judges the spread on 3 valid repetitions at least: after 3 attempts
    /// of which one was invalid, the two valid ones' CV of 0.56% is not yet enough.
    #[test]
    fn until_cv_needs_three_valid_repetitions() {
        assert!(!spread_settled(3, 1, &[100_000.0, 100_800.0], 3.0));
        assert!(spread_settled(
            4,
            1,
            &[100_000.0, 100_800.0, 100_400.0],
            3.0
        ));
        // Not before the repetitions asked for, nor while the spread is wide.
        assert!(!spread_settled(3, 5, &[1.0, 1.0, 1.0], 3.0));
        assert!(!spread_settled(3, 1, &[100.0, 110.0, 90.0], 3.0));
        // Stopped there by --max-repeat: the target is said not met.
        assert!(cv_target_flag(&[100_000.0, 100_800.0], 3.0).is_some());
        assert!(cv_target_flag(&[100_000.0, 100_800.0, 100_400.0], 3.0).is_none());
    }

    /// Idle measured once, before the variants' setups: said on the idle figure, whose
    /// warnings the report marks on every Idle and above-idle cell.
    #[test]
    fn an_idle_before_variants_is_said_so() {
        let idle = model::IdlePower {
            host: "rbh1".into(),
            duration_s: 5.0,
            power: vec![model::PowerSummary {
                source: "rapl".into(),
                zone: "package-0".into(),
                mean_watts: 60.0,
                max_watts: 61.0,
                whole_system: false,
                modelled: false,
            }],
            cpus: Vec::new(),
            flags: Vec::new(),
        };
        assert!(idle_before_variants(&[], &idle, "sut").is_none());
        let v = |name: &str| Variant {
            name: name.into(),
            setup: Vec::new(),
            teardown: Vec::new(),
            on: "sut".into(),
        };
        let f = idle_before_variants(&[v("cstates-on"), v("cstates-off")], &idle, "sut+loadgen")
            .unwrap();
        assert_eq!(f.code, "idle_before_variants");
        assert!(
            f.message.starts_with(
                "idle on rbh1 was measured before any variant's setup (cstates-on, cstates-off)"
            ),
            "{}",
            f.message
        );
        // No power read while idle: no figure to warn of.
        let none = model::IdlePower {
            power: Vec::new(),
            ..idle.clone()
        };
        assert!(idle_before_variants(&[v("a")], &none, "sut").is_none());
        // A variant run on the load generators changes no idle of the system under test.
        let on_gens = Variant {
            on: "loadgen".into(),
            ..v("governor")
        };
        assert!(idle_before_variants(std::slice::from_ref(&on_gens), &idle, "sut").is_none());
        assert!(idle_before_variants(&[on_gens], &idle, "loadgen").is_some());
    }

    /// A test with no headline in its valid repetitions (levels with no power read) ran
    /// to --max-repeat under --until-cv: it stops at 3 of them, and says why.
    #[test]
    fn until_cv_stops_a_test_with_no_headline_to_judge() {
        assert!(!nothing_to_judge(2, 1, &[], 2));
        assert!(nothing_to_judge(3, 1, &[], 3));
        // Not before the repetitions asked for, nor while one had a headline.
        assert!(!nothing_to_judge(3, 5, &[], 3));
        assert!(!nothing_to_judge(4, 1, &[1.0], 3));
        let f = no_headline_flag(3, 2.0);
        assert_eq!(f.code, "cv_target_not_met");
        assert!(
            f.message
                .starts_with("no headline figure in 3 valid repetitions: the --until-cv 2%"),
            "{}",
            f.message
        );
    }

    /// A kv get result of 3 s with `metric` as its headline.
    fn kv_get(metric: Metric, flags: Vec<Flag>, status: Status) -> ResultRecord {
        ResultRecord {
            workload: "kv".into(),
            test: "get".into(),
            step: 0,
            repetition: 0,
            params: BTreeMap::new(),
            settings: BTreeMap::new(),
            headline: metric.name.clone(),
            started_at: chrono::Utc::now(),
            duration_s: 3.0,
            metrics: vec![metric],
            missing: Vec::new(),
            histograms: Vec::new(),
            telemetry: Vec::new(),
            telemetry_summary: Vec::new(),
            flags,
            status,
            error: None,
        }
    }

    /// An aborted test is interrupted, not failed: the hosts and servers the abort killed
    /// are not named as failures, and its error is not an agent's last words.
    #[test]
    fn an_aborted_test_is_interrupted_not_failed_by_the_hosts_it_killed() {
        let mut r = kv_get(
            Metric::new("requests", 1000.0, "count"),
            vec![
                Flag::invalid("server_unknown", "cannot ask rbh1 about its servers"),
                Flag::invalid("host_failed", "load generator rbh2: the link broke"),
                Flag::warning("telemetry_missing", "host rbh3: did not come back"),
            ],
            Status::Failed,
        );
        r.error = Some("the agent on rbh1 ended: rackbench: launching 1 redis-server".into());
        aborted_by_user(&mut r);
        assert_eq!(r.status, Status::Interrupted);
        assert_eq!(r.error, None);
        let codes: Vec<&str> = r.flags.iter().map(|f| f.code.as_str()).collect();
        assert_eq!(codes, ["telemetry_missing", "interrupted"]);
        assert!(
            r.flags[1].message.contains("aborted by a second"),
            "{:?}",
            r.flags
        );
        assert_eq!(r.metrics.len(), 1, "what was measured is kept");
    }

    /// `--until-cv` judges the spread of the repetitions the published figure is made of:
    /// an invalid one (errors above 1%) read like a valid one, and two near-equal
    /// invalid repetitions could stop the test as steady beside one valid figure.
    #[test]
    fn until_cv_judges_only_the_repetitions_that_count() {
        let rep = |ops: f64, flags: Vec<Flag>, status: Status| {
            kv_get(Metric::new("ops_per_s", ops, "ops/s"), flags, status)
        };
        let errors = || vec![Flag::invalid("errors", "2.1% of requests failed")];
        let slow = || vec![Flag::warning("high_variation", "cv 4%")];
        let reps = [
            rep(50_000.0, errors(), Status::Ok),
            rep(50_100.0, errors(), Status::Ok),
            rep(80_000.0, slow(), Status::Ok),
            rep(81_000.0, Vec::new(), Status::Ok),
            rep(10.0, Vec::new(), Status::Interrupted),
        ];
        let headlines: Vec<f64> = reps.iter().filter_map(counted_headline).collect();
        assert_eq!(headlines, [80_000.0, 81_000.0]);
        // Two agree within 3%, but two are too few to judge on.
        let flag = cv_target_flag(&headlines, 3.0).unwrap();
        assert!(
            flag.message
                .contains("after only 2 valid repetitions (--max-repeat), too few to judge"),
            "{}",
            flag.message
        );
        assert!(cv_target_flag(&[80_000.0, 81_000.0, 80_500.0], 3.0).is_none());
        let flag = cv_target_flag(&[80_000.0], 3.0).unwrap();
        assert!(
            flag.message.contains("after 1 valid repetition"),
            "{}",
            flag.message
        );
    }

    /// Checkpoints of a test on three hosts store each host's samples once each, the
    /// earlier hosts' later samples too (acceptance O, 1: after the first checkpoint, a
    /// count over all hosts stored the last hosts' samples again and the first ones' never:
    /// a kill -9 left the controller's and the SUT's samples ending at 5.4 s of 10).
    #[test]
    fn each_hosts_samples_are_stored_once_at_checkpoints() {
        let at = |host: &str, t_s: f64| model::TelemetrySample {
            host: host.into(),
            t_s,
            ..Default::default()
        };
        // As `so_far` gives them: host after host, each in time order.
        let so_far = |upto: usize| -> Vec<model::TelemetrySample> {
            ["local", "rbh1", "rbh2"]
                .iter()
                .flat_map(|h| (1..=upto).map(move |t| at(h, t as f64)))
                .collect()
        };
        let mut stored = BTreeMap::new();
        let mut all: Vec<(String, u64)> = Vec::new();
        for upto in [2, 5, 5, 9] {
            let (new, now) = unstored_samples(&so_far(upto), &stored);
            all.extend(new.iter().map(|s| (s.host.clone(), s.t_s as u64)));
            stored = now;
        }
        let mut want: Vec<(String, u64)> = ["local", "rbh1", "rbh2"]
            .iter()
            .flat_map(|h| (1..=9).map(move |t| (h.to_string(), t)))
            .collect();
        all.sort();
        want.sort();
        assert_eq!(all, want, "every sample once");
        assert_eq!(stored.values().copied().collect::<Vec<_>>(), [9, 9, 9]);
    }

    /// The hosts of given servers, in each form the workloads take them.
    #[test]
    fn the_host_of_a_given_server_is_read_from_each_form() {
        let point = |k: &str, v: Value| Params::from_iter([(k.to_string(), v)]);
        for (k, v, want) in [
            (
                "targets",
                serde_json::json!(["10.77.0.1:7777", "h2:6379"]),
                vec!["10.77.0.1", "h2"],
            ),
            (
                "target",
                serde_json::json!("http://u:p@10.0.0.9:8080/x?y"),
                vec!["10.0.0.9"],
            ),
            (
                "target",
                serde_json::json!("[2001:db8::1]:5201"),
                vec!["2001:db8::1"],
            ),
            (
                "dsn",
                serde_json::json!("host=db1 port=5432 password=x"),
                vec!["db1"],
            ),
            (
                "dsn",
                serde_json::json!("postgres://bob:pw@db2:5433/tpcc"),
                vec!["db2"],
            ),
            // libpq connects to hostaddr, host then only names it (review I, 12).
            (
                "dsn",
                serde_json::json!("host=db.example hostaddr=10.0.0.7 dbname=tpcc"),
                vec!["10.0.0.7"],
            ),
            (
                "dsn",
                serde_json::json!("host=db1,db2 port=5432,5433"),
                vec!["db1", "db2"],
            ),
            (
                "dsn",
                serde_json::json!("postgresql://db3:5432,db4:5433/tpcc"),
                vec!["db3", "db4"],
            ),
            (
                "dsn",
                serde_json::json!("postgresql:///tpcc?host=10.0.0.8&user=bob"),
                vec!["10.0.0.8"],
            ),
            // A Unix socket's directory is no host to look up.
            (
                "dsn",
                serde_json::json!("host=/run/postgresql dbname=tpcc"),
                vec![],
            ),
            ("dsn", serde_json::json!("postgresql:///tpcc"), vec![]),
        ] {
            assert_eq!(given_server_hosts(&point(k, v.clone())), want, "{v}");
        }
    }

    /// A given server on none of the system under test's addresses is flagged (its CPU,
    /// power and disclosure would be published as the server's: acceptance pass G, 2);
    /// one on loopback or on the SUT is not.
    #[test]
    fn a_target_off_the_system_under_test_is_flagged() {
        let sut = hosts::LocalHost::new(hosts::LOCAL, |_| None, false);
        let own = sut.addresses();
        assert!(!own.is_empty());
        let point = |t: &str| Params::from_iter([("targets".to_string(), serde_json::json!([t]))]);
        let f =
            target_elsewhere(&point("192.0.2.7:6379"), &sut).expect("TEST-NET is no address here");
        assert_eq!(f.code, "target_not_on_sut");
        assert!(!f.message.contains("  "), "{:?}", f.message);
        assert!(
            f.message.contains("(192.0.2.7)") && f.message.contains("this machine"),
            "{}",
            f.message
        );
        assert!(target_elsewhere(&point("127.0.0.1:6379"), &sut).is_none());
        let here = own.iter().find(|ip| !ip.is_loopback()).unwrap_or(&own[0]);
        let here = match here {
            std::net::IpAddr::V6(v6) => format!("[{v6}]:6379"),
            v4 => format!("{v4}:6379"),
        };
        assert!(target_elsewhere(&point(&here), &sut).is_none(), "{here}");
    }

    /// The acceptance tester's `run crypto -t sha256 --until-cv 0.1 --max-repeat 2`
    /// ended at cv 2.8% with nothing said.
    #[test]
    fn an_until_cv_not_reached_is_flagged() {
        let f = cv_target_flag(&[100.0, 104.0], 0.1).unwrap();
        assert_eq!(f.code, "cv_target_not_met");
        assert_eq!(f.severity, model::Severity::Warning);
        assert!(
            f.message.starts_with(
                "cv 2.8% after 2 valid repetitions (--max-repeat), above the --until-cv 0.1% asked for"
            ),
            "{}",
            f.message
        );
        assert!(cv_target_flag(&[100.0, 100.05, 100.0], 0.1).is_none());
        let f = cv_target_flag(&[100.0], 3.0).unwrap();
        assert!(
            f.message
                .starts_with("cv not known after 1 valid repetition"),
            "{}",
            f.message
        );
    }

    /// The stop flag is the process's: the tests that set it, or that a stop set by
    /// another would change, run one at a time.
    static STOP_FLAG: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// Ctrl-C while a variant's setup command runs: the setup returns at once (not after
    /// the command's 120 s), nothing of it is left running, the next setup command is not
    /// started, and the teardown runs.
    #[test]
    fn a_stop_during_a_variants_setup_returns_at_once_and_tears_down() {
        let dir =
            std::env::temp_dir().join(format!("rackbench-variant-stop-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (next, down) = (dir.join("next"), dir.join("down"));
        let m = marker();
        let variant = Variant {
            name: "slow".into(),
            setup: vec![format!("sleep {m}"), format!("touch {}", next.display())],
            teardown: vec![format!("touch {}", down.display())],
            on: "sut".into(),
        };
        let _only = STOP_FLAG.lock().unwrap_or_else(|e| e.into_inner());
        let roles = hosts::local_roles(|_| None, "local", &["local"]);
        let t0 = Instant::now();
        let stopper = {
            let m = m.clone();
            std::thread::spawn(move || {
                while running(&m).is_empty() && t0.elapsed() < Duration::from_secs(10) {
                    std::thread::sleep(Duration::from_millis(10));
                }
                engine::stop::request_stop();
                Instant::now()
            })
        };
        let r = VariantOn::set_up(&variant, &roles, false, &mut CommandLog::new());
        let returned = Instant::now();
        let asked = stopper.join().unwrap();
        engine::stop::reset();
        let left = kill_left(&m);
        let (next_ran, torn_down) = (next.exists(), down.exists());
        let _ = std::fs::remove_dir_all(&dir);
        assert!(matches!(r, Ok(None)), "{:?}", r.map(|o| o.is_some()));
        let took = returned.saturating_duration_since(asked);
        assert!(
            took < Duration::from_millis(500),
            "set_up returned {took:?} after the stop"
        );
        assert!(left.is_empty(), "the setup command still runs as {left:?}");
        assert!(!next_ran, "a setup command started after the stop");
        assert!(torn_down, "the teardown did not run");
    }

    /// A result the store refused is not lost: the run as measured goes to a file beside
    /// the store that an import takes back, and the run is closed as failed, saying where.
    #[test]
    fn a_result_the_store_refused_is_kept_beside_it() {
        use store::fixtures::{rich_result, rich_run, t0};
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("r.sqlite");
        let st = store::Store::open(&db).unwrap();
        let mut record = rich_run("20261128T060000-abcdef", None, t0(0), 1);
        record.status = Status::Running;
        st.begin_run(&record).unwrap();
        record.results.push(rich_result(1, "get", 1, t0(20)));
        let e = unstored(
            &st,
            &mut record,
            1,
            &anyhow::anyhow!("database or disk is full"),
        );
        let file = dir.path().join("20261128T060000-abcdef.unstored.json");
        // The store is not the default one: the command to type names it.
        let said = format!("{e}");
        assert!(
            said.contains(&format!("rackbench --db {} import", db.display())),
            "{said}"
        );
        let back = store::export::from_json(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(
            back[0].results.len(),
            2,
            "the refused result is in the file"
        );
        assert_eq!(back[0].status, Status::Failed);
        let stored = st.load_run(&record.id).unwrap();
        assert_eq!(stored.status, Status::Failed);
        assert!(stored.error.unwrap().contains(&file.display().to_string()));
        // The file goes back in place of the shorter copy; a second time changes nothing.
        assert!(st.import_more_of(&back[0]).unwrap());
        assert_eq!(st.load_run(&record.id).unwrap().results.len(), 2);
        assert!(!st.import_more_of(&back[0]).unwrap());
    }

    /// A setup that fails on the first host tears down that host only: the teardown
    /// used to run on every host of the variant, the ones never set up too.
    #[test]
    fn a_setup_that_fails_tears_down_only_the_hosts_it_reached() {
        let dir =
            std::env::temp_dir().join(format!("rackbench-variant-reach-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let down = dir.join("down");
        let variant = Variant {
            name: "bad".into(),
            setup: vec!["false".into()],
            teardown: vec![format!("echo torn >> {}", down.display())],
            on: "all".into(),
        };
        // Two hosts (both this machine under two names): the system under test first.
        let roles = hosts::local_roles(|_| None, "sut-host", &["loadgen-host"]);
        let _only = STOP_FLAG.lock().unwrap_or_else(|e| e.into_inner());
        let r = VariantOn::set_up(&variant, &roles, false, &mut CommandLog::new());
        let torn = std::fs::read_to_string(&down).unwrap_or_default();
        let _ = std::fs::remove_dir_all(&dir);
        let e = r.err().expect("the setup failed");
        assert!(
            format!("{e:#}").contains("setup on sut-host failed"),
            "{e:#}"
        );
        assert_eq!(torn.lines().count(), 1, "torn down {torn:?}");
    }

    /// A failed setup said "`echo hello-b; false`: `echo hello-b; false` failed (exit
    /// status: 1): ": the command twice, a trailing colon, and none of what it printed.
    /// A setup's command line and its output reach the disclosure (exported, reported)
    /// with their secrets hidden, a failed one's stderr included.
    #[test]
    fn a_setup_logs_secrets_are_hidden_in_the_disclosure() {
        let runs = [
            engine::host::CommandRun {
                command: "meter --password s3cret --port 1".into(),
                ok: true,
                output: String::new(),
            },
            engine::host::CommandRun {
                command: "psql postgresql://admin:hunter2@db/x -c 'select 1'".into(),
                ok: false,
                output: "psql: error: postgresql://admin:hunter2@db/x refused".into(),
            },
        ];
        let text = command_log_text(&runs);
        assert!(
            !text.contains("s3cret") && !text.contains("hunter2"),
            "{text}"
        );
        assert!(text.contains("FAILED"), "{text}");
    }

    /// A net matrix sends to each receiver from every other host in turn: each pair's
    /// sender facts go into the sender's own disclosure, and the receiver's holds only
    /// its own (it held the last pair's sender's, as if every sender had them).
    #[test]
    fn a_matrixs_sender_facts_go_to_each_senders_own_disclosure() {
        let mut hosts = vec![host("a"), host("b"), host("c")];
        let mut found = FoundFacts::default();
        // a>b, then c>b: as the net workload gives them, the receiver's and the sender's.
        for (sender, cc) in [("a", "cubic"), ("c", "bbr")] {
            let at = [
                ("b".to_string(), facts(&[("net.receiver", "on b")])),
                (
                    sender.to_string(),
                    facts(&[("net.sender", sender), ("net.tcp_congestion", cc)]),
                ),
            ];
            assert!(found.disclose(&mut hosts, "net", &format!("{sender}>b"), at));
        }
        let keys = |i: usize| hosts[i].facts.keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(1), ["net.receiver"]);
        assert_eq!(hosts[1].facts["net.receiver"].display(), "on b");
        assert_eq!(hosts[0].facts["net.tcp_congestion"].display(), "cubic");
        assert_eq!(hosts[2].facts["net.tcp_congestion"].display(), "bbr");
        // Nothing found, or found on no host of the run (net's in-process sender): no
        // disclosure changed.
        let elsewhere = [("this process".to_string(), facts(&[("net.sender", "x")]))];
        assert!(!found.disclose(&mut hosts, "net", "c>b", elsewhere));
        assert!(!found.disclose(
            &mut hosts,
            "net",
            "c>b",
            [("a".to_string(), BTreeMap::new())]
        ));
        // The same facts again (read after each test): nothing to store.
        let again = [("c".to_string(), facts(&[("net.tcp_congestion", "bbr")]))];
        assert!(!found.disclose(&mut hosts, "net", "c>b", again));
        // Read back otherwise at the same point: it replaces that point's.
        let read_back = [("c".to_string(), facts(&[("net.tcp_congestion", "cubic")]))];
        assert!(found.disclose(&mut hosts, "net", "c>b", read_back));
        assert_eq!(hosts[2].facts["net.tcp_congestion"].display(), "cubic");
    }

    /// A fact that differs between sweep points (net's method with a swept --zerocopy)
    /// was disclosed as the last point found it, as if every point had run so: it names
    /// each value with the points that found it, and a point read again replaces its own.
    #[test]
    fn a_fact_that_differs_by_sweep_point_names_each_value_with_its_points() {
        let mut hosts = vec![host("a")];
        let mut found = FoundFacts::default();
        let method = |v: &str| [("a".to_string(), facts(&[("net.method", v)]))];
        assert!(found.disclose(&mut hosts, "net", "zerocopy=false", method("write()")));
        assert!(found.disclose(&mut hosts, "net", "zerocopy=true", method("sendfile()")));
        assert!(found.disclose(
            &mut hosts,
            "net",
            "zerocopy=false variant=b",
            method("write()")
        ));
        assert_eq!(
            hosts[0].facts["net.method"].display(),
            "at net zerocopy=false; net zerocopy=false variant=b: write() | at net zerocopy=true: sendfile()"
        );
        // The second point read again, alike now: one value, disclosed as found.
        assert!(found.disclose(&mut hosts, "net", "zerocopy=true", method("write()")));
        assert_eq!(hosts[0].facts["net.method"].display(), "write()");
        // An unknown fact keeps its reason beside the others.
        let unknown = [(
            "a".to_string(),
            BTreeMap::from([("net.method".to_string(), Fact::unknown("not read"))]),
        )];
        assert!(found.disclose(&mut hosts, "http", "", unknown));
        assert_eq!(
            hosts[0].facts["net.method"].display(),
            "at net zerocopy=false; net zerocopy=false variant=b; net zerocopy=true: write() | at http: unknown (not read)"
        );
        // Unknown at every point: unknown still, each point's reason in it.
        let why = |r: &str| {
            [(
                "a".to_string(),
                BTreeMap::from([("cpu.governor".to_string(), Fact::unknown(r))]),
            )]
        };
        assert!(found.disclose(&mut hosts, "kv", "", why("no cpufreq")));
        assert!(found.disclose(&mut hosts, "http", "", why("not readable")));
        let g = &hosts[0].facts["cpu.governor"];
        assert!(g.value.is_none(), "{g:?}");
        assert_eq!(
            g.display(),
            "unknown (at kv: unknown (no cpufreq) | at http: unknown (not readable))"
        );
    }

    fn host(name: &str) -> HostDisclosure {
        HostDisclosure {
            host: name.into(),
            role: "receiver+sender".into(),
            facts: BTreeMap::new(),
        }
    }

    fn facts(kv: &[(&str, &str)]) -> BTreeMap<String, Fact> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), Fact::known(*v)))
            .collect()
    }

    /// Now the command once, its status and its output, in the error and in the log
    /// disclosed with the run.
    #[test]
    fn a_failed_setup_shows_its_command_once_its_status_and_its_output() {
        let variant = Variant {
            name: "b".into(),
            setup: vec!["echo hello-b; echo oops-b >&2; false".into()],
            teardown: Vec::new(),
            on: "sut".into(),
        };
        let roles = hosts::local_roles(|_| None, "local", &["local"]);
        let _only = STOP_FLAG.lock().unwrap_or_else(|e| e.into_inner());
        let mut log = CommandLog::new();
        let e = VariantOn::set_up(&variant, &roles, false, &mut log)
            .err()
            .expect("the setup failed");
        assert_eq!(
            format!("{e:#}"),
            "variant b: setup on local failed: `echo hello-b; echo oops-b >&2; false`: \
             exit status: 1; printed: hello-b | oops-b"
        );
        let mut hosts = vec![HostDisclosure {
            host: "local".into(),
            role: "sut".into(),
            facts: BTreeMap::new(),
        }];
        disclose_variant(&mut hosts, &variant, &log);
        let fact = hosts[0].facts["variant.b.setup"].display();
        assert!(
            fact.contains("-> FAILED: exit status: 1; printed: hello-b | oops-b"),
            "{fact}"
        );
    }

    /// A workload of two tests, `a` and `b`: test `refuse_from` makes the store refuse
    /// results from then on, as a full disk would (`a` after storing a checkpoint), and
    /// asks a stop when the point says `stop`.
    struct Refusing {
        db: std::path::PathBuf,
        stop: bool,
        refuse_from: &'static str,
    }

    impl Workload for Refusing {
        fn name(&self) -> &'static str {
            "refusing"
        }
        fn tests(&self) -> Vec<String> {
            vec!["a".into(), "b".into()]
        }
        fn prepare(&mut self, _ctx: &Ctx) -> anyhow::Result<()> {
            Ok(())
        }
        fn run_test(&mut self, test: &str, ctx: &Ctx) -> anyhow::Result<engine::StepOutput> {
            let out = engine::StepOutput {
                headline: "ops_per_s".into(),
                duration_s: 1.0,
                metrics: vec![model::Metric::new("ops_per_s", 1.0, "ops/s")],
                ..Default::default()
            };
            if test == self.refuse_from {
                if test == "a" {
                    // A checkpoint stored, the final result refused.
                    ctx.save_partial(&out);
                }
                rusqlite::Connection::open(&self.db)?.execute_batch(
                    "CREATE TRIGGER refuse BEFORE INSERT ON results \
                     BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END;",
                )?;
                if self.stop {
                    engine::stop::request_stop_by_signal(2);
                }
            }
            Ok(out)
        }
        fn cleanup(&mut self) {}
    }

    struct Quiet;
    impl Observer for Quiet {}

    /// Run the two tests of [`Refusing`] into a new store at `db`.
    fn run_refusing(
        db: &std::path::Path,
        stop: bool,
        refuse_from: &'static str,
    ) -> (anyhow::Result<Finished>, store::Store) {
        let mut params = Params::new();
        params.insert("db".into(), Value::String(db.display().to_string()));
        if stop {
            params.insert("stop".into(), Value::Bool(true));
        }
        params.insert("refuse_from".into(), Value::String(refuse_from.into()));
        let plan = Plan {
            parts: vec![Part {
                registration: Registration {
                    name: "refusing",
                    about: "",
                    list_keys: &[],
                    text_keys: &[],
                    flags: |c| c,
                    build: |m| {
                        Ok(Box::new(Refusing {
                            db: m["db"].as_str().unwrap_or_default().into(),
                            stop: m.contains_key("stop"),
                            refuse_from: if m["refuse_from"] == "a" { "a" } else { "b" },
                        }))
                    },
                    service: None,
                    has_server: false,
                    driver: None,
                    programs: engine::no_programs,
                    lengthen: "--duration",
                },
                params: params.clone(),
                points: vec![params],
            }],
            catalog: |_| None,
            opts: RunOptions {
                repeat: 1,
                telemetry_interval_s: 1.0,
                ..RunOptions::default()
            },
            command: "rackbench run refusing".into(),
            hosts: HostsPlan::default(),
            build: "test".into(),
        };
        let st = Arc::new(store::Store::open(db).unwrap());
        let r = run(&plan, &st, Arc::default(), &Quiet);
        (r, store::Store::open(db).unwrap())
    }

    /// An error that ends a run after a result was stored (here the store refusing the
    /// next one) keeps the run: it is returned as the run's failure, closed, not as an
    /// error with the run left `running` (which `rackbench run` said, after a stop, was
    /// "interrupted before any result was stored; nothing kept").
    #[test]
    fn an_error_after_a_stored_result_keeps_the_run() {
        let _only = STOP_FLAG.lock().unwrap_or_else(|e| e.into_inner());
        for stop in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let db = dir.path().join("r.sqlite");
            let (r, st) = run_refusing(&db, stop, "b");
            engine::stop::reset();
            let finished = r.expect("the run is kept");
            let id = finished.run_id.expect("a stored run");
            assert_eq!(finished.interrupted, stop);
            let failure = finished.failure.expect("its failure");
            assert!(
                failure.contains("could not store the result of step 1"),
                "{failure}"
            );
            let stored = st.load_run(&id).unwrap();
            assert_eq!(stored.results.len(), 1, "test a's result");
            // The tests the workload was to run, as the report reads them.
            assert_eq!(stored.plan["tests"], serde_json::json!(["a", "b"]));
            let status = if stop {
                Status::Interrupted
            } else {
                Status::Failed
            };
            assert_eq!(stored.status, status);
            assert_eq!(stored.error.as_deref(), Some(failure.as_str()));
        }
    }

    /// The first test's final result refused after its checkpoint was stored: the run
    /// holds that checkpoint, and is kept with it (the observer was told of no result).
    #[test]
    fn a_refused_first_result_keeps_its_checkpoint() {
        let _only = STOP_FLAG.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("r.sqlite");
        let (r, st) = run_refusing(&db, false, "a");
        engine::stop::reset();
        let finished = r.expect("the run is kept");
        let id = finished.run_id.expect("a stored run");
        let failure = finished.failure.expect("its failure");
        assert!(
            failure.contains("could not store the result of step 0"),
            "{failure}"
        );
        let stored = st.load_run(&id).unwrap();
        assert_eq!(stored.status, Status::Failed);
        assert_eq!(stored.results.len(), 1, "test a's checkpoint");
        assert_eq!(stored.results[0].test, "a");
        assert_eq!(stored.results[0].status, Status::Interrupted);
    }

    /// A test's error under a stop request is the interruption (stored interrupted, the
    /// run too, the exit status the signal's), not a failure.
    #[test]
    fn an_error_under_a_stop_is_an_interruption() {
        let _only = STOP_FLAG.lock().unwrap_or_else(|e| e.into_inner());
        let e = anyhow::anyhow!("connection reset by peer");
        let (status, flag) = error_status(&e, None);
        assert_eq!(status, Status::Failed);
        assert_eq!(flag.code, "failed");
        // A test that had stored a checkpoint keeps its figures, and says how far in.
        let (_, flag) = error_status(&e, Some(5.04));
        assert!(
            flag.message
                .ends_with("(its figures are its last checkpoint's, after 5.0 s measured)"),
            "{}",
            flag.message
        );
        // SIGINT
        engine::stop::request_stop_by_signal(2);
        let (status, flag) = error_status(&e, None);
        let (_, kept) = error_status(&e, Some(5.04));
        // Reset before asserting: a failed assert would leave the stop set for the
        // other tests of this process.
        engine::stop::reset();
        assert_eq!(status, Status::Interrupted);
        assert_eq!(flag.code, "interrupted");
        assert!(flag.message.contains("Ctrl-C"), "{}", flag.message);
        assert!(
            flag.message.ends_with("it measured nothing"),
            "{}",
            flag.message
        );
        assert!(
            kept.message
                .ends_with("its last checkpoint's, after 5.0 s measured"),
            "{}",
            kept.message
        );
    }
}
