//! The `Workload` trait: what a workload crate implements, and what each test returns.
//!
//! The runner (in the CLI) builds a workload once per sweep point from plain config,
//! calls `prepare` (launch servers, build data), then `run_test` for each test and
//! repetition while telemetry samplers watch, then `verify`, and always `cleanup`
//! (also on error and Ctrl-C). Each test's [`StepOutput`] becomes one stored
//! `ResultRecord` the moment it completes.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use model::{Fact, Flag, HistogramRecord, Metric, MissingMetric};
use serde::{Deserialize, Serialize};

/// Live progress shared between a running test and the progress display.
#[derive(Debug, Default)]
pub struct Progress {
    /// Operations completed so far in the current test (after warm-up too).
    pub done: AtomicU64,
    /// Total operations expected, if the test stops after a count (0 = by duration).
    pub total: AtomicU64,
    /// Planned duration of the current test in milliseconds (0 = by count).
    pub duration_ms: AtomicU64,
    /// True while the current test is in its warm-up period.
    pub warmup: AtomicBool,
    /// What is running now (`kv set P=100 instances=2`).
    pub label: Mutex<String>,
    /// How many times a test began ([`Progress::reset`]): tells a new test from the one
    /// before, whose label may be the same (a net driver's `net tcp streams=1`).
    pub began: AtomicU64,
    /// Set to end the load under way early, keeping what it measured (another
    /// generator of the same test is gone). Unlike Ctrl-C it ends this test only.
    pub cancel: AtomicBool,
    /// What set `cancel`, when it was not a stop asked for: a host of the test lost,
    /// another generator's driver failed ([`Progress::end_early`]).
    pub ended_by: Mutex<Option<String>>,
    /// The common start of a test driven from several hosts (this host's clock), set by
    /// the host before its driver runs: the load loop connects first, then waits for it.
    pub start_at: Mutex<Option<std::time::SystemTime>>,
    /// When the load really began and how late that was against `start_at`.
    pub started: Mutex<Option<(std::time::SystemTime, std::time::Duration)>>,
    /// Where the load under way hands its checkpoints (see [`CheckpointSink`]); None: no
    /// one wants them, and the load loop takes none.
    pub checkpoints: Mutex<Option<CheckpointSink>>,
    /// This process's load generator's index among the test's generators (the host that
    /// runs the driver sets it): what its checkpoints are handed under.
    pub generator: AtomicUsize,
}

/// Where a load generator hands a checkpoint of a plain load test: what it measured from
/// the end of its warm-up to now, as the outcome it would return had the test ended
/// there ([`crate::load::CHECKPOINT_EVERY`]), with its index among the test's
/// generators. The controller merges the generators' checkpoints of one moment (a
/// generator done early by its final outcome: [`SoFar::Final`]) as it merges their
/// final outcomes, and the runner stores the merge as the test's provisional result, so
/// that rackbench killed mid-test (kill -9, out of memory) keeps what was measured up to
/// the last checkpoint (acceptance G6). Called off the load loop's threads.
#[derive(Clone)]
pub struct CheckpointSink(Arc<dyn Fn(usize, SoFar) + Send + Sync>);

/// What a checkpoint hands: a load loop's outcome as it is in this process, or (from
/// another host, or a driver whose report is its own: `net`'s sender) the driver's
/// report as it would return it had the test ended there, which the controller reads as
/// it reads the final one.
#[derive(Debug)]
pub enum SoFar {
    Load(Box<crate::load::LoadOutcome>),
    Report(serde_json::Value),
    /// The generator's final report, handed as it comes back while other generators
    /// run on ([`crate::host::drive_all`]): it is done, and will hand no more.
    Final(serde_json::Value),
}

impl SoFar {
    /// In the form of a load loop's final report ([`crate::wire::WireOutcome`] for a
    /// load outcome): what crosses to the controller.
    pub fn into_report(self) -> serde_json::Result<serde_json::Value> {
        match self {
            SoFar::Load(o) => serde_json::to_value(crate::wire::WireOutcome::from(&*o)),
            SoFar::Report(v) | SoFar::Final(v) => Ok(v),
        }
    }
}

impl CheckpointSink {
    pub fn new(f: impl Fn(usize, SoFar) + Send + Sync + 'static) -> Self {
        CheckpointSink(Arc::new(f))
    }

    /// Hand generator `generator`'s checkpoint `so_far`.
    pub fn hand(&self, generator: usize, so_far: crate::load::LoadOutcome) {
        (self.0)(generator, SoFar::Load(Box::new(so_far)))
    }

    /// Hand generator `generator`'s checkpoint as its driver's report (see [`SoFar`]).
    pub fn hand_report(&self, generator: usize, report: serde_json::Value) {
        (self.0)(generator, SoFar::Report(report))
    }

    /// Hand generator `generator`'s final report: it is done (see [`SoFar::Final`]).
    pub fn hand_final(&self, generator: usize, report: serde_json::Value) {
        (self.0)(generator, SoFar::Final(report))
    }
}

impl std::fmt::Debug for CheckpointSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CheckpointSink")
    }
}

impl Progress {
    /// Connected and ready: wait for the common start, if there is one, and note when
    /// the load began. Every thread of a load calls it; the first to wake records.
    pub fn wait_for_start(&self) {
        let at = self.start_at.lock().ok().and_then(|g| *g);
        if let Some(at) = at {
            let late = crate::host::sleep_until(at);
            if let Ok(mut s) = self.started.lock() {
                s.get_or_insert((std::time::SystemTime::now(), late));
            }
        }
    }

    /// True once the load under way should end: Ctrl-C, or this test cancelled.
    pub fn stopping(&self) -> bool {
        crate::stop::stop_requested() || self.cancel.load(Ordering::Relaxed)
    }

    /// End the load under way early, keeping what it measured, and say why (the first
    /// reason given stands).
    pub fn end_early(&self, why: impl FnOnce() -> String) {
        if let Ok(mut g) = self.ended_by.lock() {
            g.get_or_insert_with(why);
        }
        self.cancel.store(true, Ordering::Relaxed);
    }

    /// A generator's `stopped_early` as the test gives it. A load ended by `cancel`
    /// says "interrupted" (a remote generator is only told to end, not why); when no
    /// stop was asked for, what ended it is said instead: a host loss read as "the test
    /// stopped early: interrupted", as if someone had pressed Ctrl-C.
    pub fn explain_stop(&self, stopped: &mut Option<String>) {
        if stopped.as_deref() != Some("interrupted") || crate::stop::stop_requested() {
            return;
        }
        if let Some(why) = self.ended_by.lock().ok().and_then(|g| g.clone()) {
            *stopped = Some(why);
        }
    }

    /// Where checkpoints go now, if anywhere (see [`CheckpointSink`]).
    pub fn checkpoint_sink(&self) -> Option<CheckpointSink> {
        self.checkpoints.lock().ok().and_then(|g| g.clone())
    }

    /// Send the load's checkpoints to `sink` from now on (None: take none).
    pub fn set_checkpoints(&self, sink: Option<CheckpointSink>) {
        if let Ok(mut g) = self.checkpoints.lock() {
            *g = sink;
        }
    }

    pub fn reset(&self, label: &str, total: u64, duration_ms: u64) {
        self.done.store(0, Ordering::Relaxed);
        self.total.store(total, Ordering::Relaxed);
        self.duration_ms.store(duration_ms, Ordering::Relaxed);
        self.warmup.store(false, Ordering::Relaxed);
        self.cancel.store(false, Ordering::Relaxed);
        if let Ok(mut g) = self.ended_by.lock() {
            *g = None;
        }
        if let Ok(mut l) = self.label.lock() {
            *l = label.to_string();
        }
        self.began.fetch_add(1, Ordering::Relaxed);
    }
}

/// Hooks the runner gives a workload while a test runs.
pub trait Watch: Send + Sync {
    /// Mark the start or the end of the warm-up period (samples taken during warm-up are
    /// kept but left out of summaries).
    fn set_warmup(&self, on: bool);
    /// Watch a process's CPU time (a launched server, `role` like `server:0`).
    fn watch_process(&self, role: &str, pid: u32);
    /// Close the current sampling interval now and return a mark for
    /// [`Watch::since_mark`] (None: nothing is sampled).
    fn mark(&self) -> Option<u64> {
        None
    }
    /// What was sampled from `mark` to now, as metrics: `cpu_busy_pct` (all CPUs),
    /// `process_cpu_pct` per watched process (labelled with its role and pid), `power_w`
    /// (labelled with its source). Used for per-step figures inside one test (capacity ramps and load levels). `window`, in
    /// seconds after the mark: only the samples wholly inside it (a step's measured
    /// window, without the start's lead, the connections' setup, the warm-up and the
    /// drain; a sample across its edges holds some of those too), or, for a window too
    /// short to hold one, each sample's part inside (see `telemetry::within_spans`).
    fn since_mark(&self, _mark: u64, _window: Option<(f64, f64)>) -> Vec<model::Metric> {
        Vec::new()
    }
    /// Why the host [`Watch::since_mark`] reads (the system under test) can no longer be
    /// sampled, once it was lost (None while it answers): a step after that has no
    /// figures of it, and one that says nothing of why reads as a host without them.
    fn lost(&self) -> Option<String> {
        None
    }
    /// Does it sample nothing at all (`--no-telemetry`)? A step then has no figures of
    /// the system under test for that reason, not for want of a source on it.
    fn off(&self) -> bool {
        false
    }
}

/// A `Watch` that ignores everything (unit tests, `--no-telemetry`).
pub struct NoWatch;
impl Watch for NoWatch {
    fn set_warmup(&self, _on: bool) {}
    fn watch_process(&self, _role: &str, _pid: u32) {}
    fn off(&self) -> bool {
        true
    }
}

/// What a workload is given while it prepares and runs.
pub struct Ctx {
    pub progress: Arc<Progress>,
    pub watch: Arc<dyn Watch>,
    /// Print progress/notes to stderr (false with `--quiet`).
    pub verbose: bool,
    /// The hosts this sweep point acts through (system under test, load generators).
    /// Workloads split into service and driver need them; the others run here.
    pub roles: Option<crate::host::Roles>,
    /// Where a test hands what it measured so far while it runs (see [`Partial`]).
    pub partial: Option<Partial>,
}

/// Where a long test hands what it measured so far (a capacity test, after each of its
/// steps), so that a crash (kill -9, out of memory) that ends the process keeps it: the
/// runner stores it as the test's provisional result, which the test's final result
/// replaces. A SPECpower levels test is eleven steps, a ramp up to a thousand; one kill
/// near the end lost them all (acceptance pass E, 5).
pub type Partial = Arc<dyn Fn(&StepOutput) + Send + Sync>;

impl Ctx {
    /// A context with no telemetry and no output (tests).
    pub fn quiet() -> Self {
        Ctx {
            progress: Arc::new(Progress::default()),
            watch: Arc::new(NoWatch),
            verbose: false,
            roles: None,
            partial: None,
        }
    }

    /// Hand what the test under way measured so far to [`Ctx::partial`], if any.
    pub fn save_partial(&self, so_far: &StepOutput) {
        if let Some(p) = &self.partial {
            p(so_far);
        }
    }

    /// The hosts of this sweep point, or an error for a workload that needs them.
    pub fn roles(&self) -> anyhow::Result<&crate::host::Roles> {
        self.roles
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("no hosts to act through (give the context roles)"))
    }

    /// A note for the user on stderr (unless quiet).
    pub fn note(&self, msg: &str) {
        if self.verbose {
            crate::errln!("rackbench: {}", model::printable(msg));
        }
    }

    /// A note with a table below it (tab-separated lines, a header first), on stderr
    /// (unless quiet): see [`table_note`].
    pub fn note_table(&self, title: &str, tsv: &str) {
        if self.verbose {
            crate::errln!("{}", table_note(title, tsv).trim_end());
        }
    }
}

/// The shortest timed test a workload accepts, seconds. Below it a test times a handful
/// of operations and the start's and the clock's costs, not a rate: `--duration 1e-9`
/// stored a crypto verify rate from one operation, and 0.05 s of TCP read 28.5 Gbit/s
/// against 10-18 for 3-5 s tests in the same minutes. 0.1 s is what the shortest tests
/// of the workloads use.
pub const MIN_DURATION_S: f64 = 0.1;

/// The one duration check of the timed workloads: `duration` (seconds) must be
/// [`MIN_DURATION_S`] to `max_s`. `who` begins the message (`crypto`).
pub fn check_duration(who: &str, duration: f64, max_s: f64) -> anyhow::Result<()> {
    if !(MIN_DURATION_S..=max_s).contains(&duration) {
        anyhow::bail!(
            "{who}: `duration` = {duration} s is out of range: use {MIN_DURATION_S} to {max_s} \
             seconds (e.g. --duration 10); a shorter test times a few operations and its own \
             start, not a rate"
        );
    }
    Ok(())
}

/// Refuse a sweep point whose tests name one test twice (`-t rsa512,rsa512`, or `rsa`
/// with `--bits 512,512`, or `-t set,set`): the test ran twice and every summary took the
/// two for repetitions of it (n=2/2, high_variation), as it took a sweep's `-c 2,2`.
pub fn refuse_repeated_tests(tests: &[String]) -> anyhow::Result<()> {
    if let Some(t) = crate::plan::first_repeat(tests) {
        anyhow::bail!(
            "the test {t} is asked for twice (by --tests, or by a list it expands, as rsa by \
             --bits): each test of a point is measured once; name it once, and give --repeat N \
             to measure every test N times"
        );
    }
    Ok(())
}

/// `rackbench: TITLE` and the table of `tsv` (tab-separated lines, a header first)
/// below it, indented, in aligned columns two spaces apart as the console's other
/// tables: a column of figures (or `-`) right, words left. Each line and cell is made
/// printable on its own: passed whole through [`model::printable`], the ramp table
/// read `ramp:\ndem_req_rate\treply_rate_avg...` on one line; a cell may still quote
/// a server's reply, so its control characters stay escaped.
pub fn table_note(title: &str, tsv: &str) -> String {
    let rows: Vec<Vec<String>> = tsv
        .lines()
        .map(|l| l.split('\t').map(model::printable).collect())
        .collect();
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut width = vec![0; n];
    let mut right = vec![false; n];
    for (i, row) in rows.iter().enumerate() {
        for (j, cell) in row.iter().enumerate() {
            width[j] = width[j].max(cell.chars().count());
            if i > 0 && cell != "-" {
                right[j] |= cell.parse::<f64>().is_ok();
            }
        }
    }
    let mut out = format!("rackbench: {}\n", model::printable(title));
    for row in &rows {
        let mut line = String::new();
        for (j, cell) in row.iter().enumerate() {
            let pad = " ".repeat(width[j] - cell.chars().count());
            line.push_str("  ");
            if right[j] {
                line.push_str(&pad);
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.push_str(&pad);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// What one test of a workload produced. The runner adds the step index, parameters,
/// telemetry and the common validity checks, and stores it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StepOutput {
    /// Name of the headline metric in `metrics` (the workload declares it).
    pub headline: String,
    /// Measured duration, warm-up excluded, seconds.
    pub duration_s: f64,
    pub metrics: Vec<Metric>,
    pub missing: Vec<MissingMetric>,
    pub histograms: Vec<HistogramRecord>,
    pub flags: Vec<Flag>,
    /// Set when the test stopped early (server died, Ctrl-C): what was measured is kept
    /// and the result is marked failed or interrupted.
    pub error: Option<String>,
    /// How many load-generator threads ran, for the client-bound check (the load
    /// generator is saturated when its CPU time nears this many cores). None: not a
    /// load-generating workload (crypto, mem), no client-bound check.
    pub loadgen_threads: Option<usize>,
    /// When the load was measured: one (start, end) per timed part (crypto's sign and
    /// verify, each buffer size; a load test's one window, warm-up excluded), on the
    /// controller's clock. The runner summarises each host's telemetry over these only,
    /// so the test's setup (keys made, connections opened) and its teardown (the UDP
    /// receiver's wait for late datagrams, the generators' reports coming back) do not
    /// dilute its CPU and power. A driver fills them on its own host's clock; whoever
    /// reads its report back moves them onto the controller's ([`Self::on_controller_clock`]).
    /// A capacity test gives its steps' windows. Empty: not known (a capacity step that
    /// did not know its window), and the test's telemetry is summarised whole.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub measured: Vec<(SystemTime, SystemTime)>,
    /// Settings this test resolved for itself, beside the sweep point's
    /// ([`Workload::settings`]): an open loop's way of waiting under `--wait auto`, which
    /// depends on the test (a search's probes spin, its levels sleep), a capacity test's
    /// effective bounds and objective. Stored over the point's settings in this test's
    /// result; a null takes out a point's setting the test did not use (a ramp runs
    /// `--step-duration`, not `--duration`).
    #[serde(default, skip_serializing_if = "Params::is_empty")]
    pub settings: Params,
}

impl StepOutput {
    /// A driver's measured spans, read on the clock of a host `offset_s` ahead of the
    /// controller's (see [`crate::host::Host::clock_offset_s`]), onto the controller's.
    pub fn on_controller_clock(&mut self, offset_s: f64) {
        let Ok(by) = Duration::try_from_secs_f64(offset_s.abs()) else {
            return;
        };
        let shift = |t: SystemTime| {
            if offset_s >= 0.0 {
                t.checked_sub(by)
            } else {
                t.checked_add(by)
            }
            .unwrap_or(t)
        };
        for (from, to) in &mut self.measured {
            (*from, *to) = (shift(*from), shift(*to));
        }
    }
}

/// The span from the earliest start to the latest end of `so_far` and `part` (threads or
/// streams timed each on its own, as one timed part of [`StepOutput::measured`]).
pub fn widen(
    so_far: Option<(SystemTime, SystemTime)>,
    part: (SystemTime, SystemTime),
) -> (SystemTime, SystemTime) {
    so_far.map_or(part, |(from, to)| (from.min(part.0), to.max(part.1)))
}

/// The host of a sweep point whose CPUs a CPU list names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuRole {
    /// The system under test: its servers (`--server-cpus`), or what measures it
    /// (crypto's `--cpus`).
    Sut,
    /// Every load generator (`--client-cpus`).
    Generator,
    /// net: the sender, a pair's load generator (`--sender-cpus`).
    Sender,
    /// net: the receiver, a pair's system under test (`--receiver-cpus`).
    Receiver,
}

impl CpuRole {
    /// The hosts of `roles` this role names.
    pub fn hosts(self, roles: &crate::host::Roles) -> Vec<Arc<dyn crate::host::Host>> {
        match self {
            CpuRole::Sut | CpuRole::Receiver => vec![roles.sut.clone()],
            CpuRole::Generator | CpuRole::Sender => roles.loadgens.clone(),
        }
    }

    /// The role in a reader's words.
    pub fn word(self) -> &'static str {
        match self {
            CpuRole::Sut => "the system under test",
            CpuRole::Generator => "the load generator",
            CpuRole::Sender => "the sender",
            CpuRole::Receiver => "the receiver",
        }
    }
}

/// A CPU list a sweep point was given, with the host whose CPUs it names
/// ([`Workload::cpu_lists`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuList {
    /// The option as the user gives it (`--client-cpus`).
    pub flag: &'static str,
    pub role: CpuRole,
    pub cpus: Vec<usize>,
}

impl CpuList {
    /// Why this list cannot be used on `host` (as the reader knows it: `rbh2`, "local
    /// (this machine)"), which has the CPUs `online`; None when it can. The CPUs are the
    /// ones [`crate::launch::check_cpus`] checks where the list is used: the kernel's
    /// list of online CPUs, holes and all (`0-1,3`).
    pub fn refusal(&self, host: &str, online: &crate::launch::OnlineCpus) -> Option<String> {
        let bad = online.missing(&self.cpus);
        if bad.is_empty() {
            return None;
        }
        let list = online.text();
        let has = match online.cpus.as_slice() {
            [] => "no CPUs online".to_string(),
            [only] => format!("only CPU {only} online"),
            _ => format!("CPUs {list} online"),
        };
        let give = match online.cpus.as_slice() {
            [] => "bring a CPU online".to_string(),
            [only] => format!("give CPU {only}"),
            _ => format!("give CPUs among {list}"),
        };
        // An offline CPU below the highest online one exists, and can be brought back.
        let holes = online.holes(&bad);
        let or_online = match holes.len() {
            0 => String::new(),
            1 => format!(" (or bring CPU {} online)", holes[0]),
            _ => format!(
                " (or bring CPUs {} online)",
                crate::launch::cpu_list_text(&holes)
            ),
        };
        Some(format!(
            "{} {}: CPU{} {} {} not available on {} {host}, which has {has}: {give} there{or_online}, or leave {} out{}",
            self.flag,
            crate::launch::cpu_list_text(&self.cpus),
            if bad.len() == 1 { "" } else { "s" },
            crate::launch::cpu_list_text(&bad),
            if bad.len() == 1 { "is" } else { "are" },
            self.role.word(),
            self.flag,
            online
                .note()
                .map(|n| format!(" (on {host}, {n})"))
                .unwrap_or_default(),
        ))
    }
}

/// A workload: one folder in `crates/workloads/` plus one line in the registry.
pub trait Workload: Send {
    /// Registry name (`kv`, `oltp`...).
    fn name(&self) -> &'static str;

    /// The tests this sweep point runs, in order (`set`, `get`; `rsa2048`; `tcp`).
    fn tests(&self) -> Vec<String>;

    /// Launch servers, build data, connect. Errors here are setup errors: they stop the
    /// run with a message that says what to do next.
    fn prepare(&mut self, ctx: &Ctx) -> anyhow::Result<()>;

    /// Run one test once. A failure mid-test should come back as a `StepOutput` with
    /// `error` set and everything measured so far, rather than as `Err`.
    fn run_test(&mut self, test: &str, ctx: &Ctx) -> anyhow::Result<StepOutput>;

    /// Check the system under test after the tests (values written, consistency).
    /// Returned flags are attached to every result of this sweep point.
    fn verify(&mut self, _ctx: &Ctx) -> anyhow::Result<Vec<Flag>> {
        Ok(Vec::new())
    }

    /// Stop and remove everything `prepare` launched. Must be idempotent; also called
    /// after errors and on Ctrl-C.
    fn cleanup(&mut self);

    /// How long running `test` once takes, in seconds, where the workload knows better
    /// than the sweep point's `duration` + `warmup` (crypto times every key's signs and
    /// verifies, every buffer size, `duration` each). None: from those, else unknown.
    /// For sizing a run before it starts (`rackbench run` refuses an absurd one) and
    /// for the progress bar's length of the test.
    fn expected_duration_s(&self, _test: &str) -> Option<f64> {
        None
    }

    /// How long `test` warms up after its load generators' common start
    /// ([`crate::host::drive_all`]) before it measures, where the workload loads through
    /// that start and resolves its warm-up (a default the sweep point does not carry:
    /// http's 1 s). The runner marks the start lead and this in the telemetry, so that CPU
    /// and power summaries cover what the figures cover. None: the sweep point's
    /// `warmup` from the test's beginning, else none.
    fn warmup_s(&self, _test: &str) -> Option<f64> {
        None
    }

    /// The most connections one of `generators` load generators holds in this sweep
    /// point's load, once it is spread over them (each needs a connection, and, stopped
    /// by a count, a request); an error names the value to change where it cannot be.
    /// Asked when the plan is built, before any host is reached: the runner checks a
    /// generator on this machine against its open-file limit then, not after the
    /// servers were launched. None: the workload holds no connections of its own.
    fn connections_per_generator(&self, _generators: usize) -> anyhow::Result<Option<u64>> {
        Ok(None)
    }

    /// What [`Workload::prepare`] would refuse on the machine this runs on before
    /// launching anything (a server's program not found). The runner asks it of each
    /// sweep point on its system under test ([`crate::host::Host::check_launch`]: there,
    /// when that is another host) once the hosts are reached, before anything starts or
    /// is stored: a suite whose second workload's `--redis-server` is missing is refused
    /// then, not after its first workload was measured and stored. Ok: nothing to check
    /// (servers given with `--target` or `--dsn`, or none launched).
    fn check_launch_here(&self) -> anyhow::Result<()> {
        Ok(())
    }

    /// The CPU lists this sweep point was given, each with the host whose CPUs it names.
    /// The runner checks each against that host's CPUs once the hosts are reached, before
    /// any server is launched or anything stored; a list for a host outside the run (a
    /// given `--target`'s) is not one of them.
    fn cpu_lists(&self) -> anyhow::Result<Vec<CpuList>> {
        Ok(Vec::new())
    }

    /// Every knob this sweep point runs with, defaults included: the workload's resolved
    /// config as plain data, keyed as its parameters are (`pipeline`, `clients`), an unset
    /// optional knob (`rate` of a closed loop) left out. Stored with each result beside
    /// the parameters as given, so that a default is known for what it was and two runs
    /// at the same effective settings compare whether or not a flag was typed. A secret
    /// (a DSN's password) must be left out or redacted here; the runner redacts what is
    /// left as it does the parameters. Empty: not known (stored as before).
    fn settings(&self) -> Params {
        Params::new()
    }

    /// What the disclosure should say about the servers and tools this workload used
    /// (`software.redis-server`, `server.config.appendonly`...), which the runner adds to
    /// the system under test's. Called after prepare and after each test (what a test
    /// read back replaces what was known).
    fn disclosure(&self) -> BTreeMap<String, Fact> {
        BTreeMap::new()
    }

    /// What the disclosure should say about the load generators' hosts, by host name
    /// (net: the sender's sysctls and congestion control), which the runner adds to each
    /// one's own disclosure, not the system under test's: a net matrix sends from every
    /// host in turn to the same receivers, and its senders' facts in a receiver's
    /// disclosure read the last sender's as every sender's. Called when
    /// [`Workload::disclosure`] is.
    fn loadgen_disclosure(&self) -> BTreeMap<String, BTreeMap<String, Fact>> {
        BTreeMap::new()
    }
}

/// Parameters of one sweep point, as plain JSON.
pub type Params = serde_json::Map<String, serde_json::Value>;

/// The servers a sweep point was given rather than launching its own (`--target`,
/// `--dsn`), as written: where they run is the user's, not a host rackbench reached.
pub fn given_servers(point: &Params) -> Vec<&str> {
    let mut texts: Vec<&str> = Vec::new();
    for k in ["target", "targets", "dsn"] {
        match point.get(k) {
            Some(serde_json::Value::String(s)) => texts.push(s),
            Some(serde_json::Value::Array(a)) => {
                texts.extend(a.iter().filter_map(serde_json::Value::as_str))
            }
            _ => {}
        }
    }
    texts.retain(|t| !t.trim().is_empty());
    texts
}

/// A workload's resolved config as [`Workload::settings`] gives it: `configs` (its own,
/// the capacity tests') serialised and merged, unset optional knobs (null) left out. A
/// config that does not serialise to an object adds nothing.
pub fn settings_of(configs: &[serde_json::Result<serde_json::Value>]) -> Params {
    configs
        .iter()
        .filter_map(|c| match c {
            Ok(serde_json::Value::Object(m)) => Some(m),
            _ => None,
        })
        .flatten()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| (k.clone(), model::whole_numbers(v)))
        .collect()
}

/// Builds a workload for one sweep point.
pub type BuildFn = fn(&Params) -> anyhow::Result<Box<dyn Workload>>;

/// The programs a workload's services launch, each with where this host has it, found
/// as the launcher finds it (its environment override, PATH, the distribution's own
/// directories), or None: what `hosts check` says a host can launch.
pub type ProgramsFn = fn() -> Vec<(&'static str, Option<std::path::PathBuf>)>;

/// The [`ProgramsFn`] of a workload that launches no program of its own.
pub fn no_programs() -> Vec<(&'static str, Option<std::path::PathBuf>)> {
    Vec::new()
}

/// How a workload registers itself: one of these per workload crate, listed once in the
/// CLI's registry.
pub struct Registration {
    pub name: &'static str,
    /// One line for `rackbench run --help`.
    pub about: &'static str,
    /// Parameter keys whose values are lists by nature (`tests`, `server_cpus`): a list
    /// there is not a sweep.
    pub list_keys: &'static [&'static str],
    /// Parameter keys whose values are free text (a DSN, a URL, a path, a user name): a
    /// flag's or a plan's text is the value as written, never split at its commas into a
    /// sweep nor read as a number or a boolean (see [`crate::plan::parse_setting`]).
    pub text_keys: &'static [&'static str],
    /// Add the workload's flags to `rackbench run NAME` (clap derive: `Flags::augment_args`).
    /// Flag ids are the parameter keys; sweepable knobs take strings (`1,100`, `1..8:x2`).
    pub flags: fn(clap::Command) -> clap::Command,
    /// Build the workload for one sweep point (scalar values, list keys as lists).
    /// Unknown keys and bad values are errors that name the key.
    pub build: BuildFn,
    /// What this workload starts on the system under test, for a host to run by name
    /// (the local one in-process, a remote one in its agent). None: the workload runs
    /// whole on the local host (not split yet).
    pub service: Option<crate::host::ServiceFn>,
    /// Whether its tests load a server process (one its service launches, or one given
    /// with `--target`), as kv, http, net and oltp do; false where the driver's own
    /// threads are the work measured (crypto, mem), and a host's CPU beyond the driver's
    /// is then another's load, never the test's server.
    pub has_server: bool,
    /// What a load generator runs against the service's endpoints.
    pub driver: Option<crate::host::DriverFn>,
    /// The programs its services launch and where this host has them.
    pub programs: ProgramsFn,
    /// How a user makes its tests longer, for advice on a test too short to measure
    /// (`--duration, or a larger -n`; mem's `more --samples or a larger --sample-ms`).
    pub lengthen: &'static str,
}

impl Registration {
    /// Build this workload's sweep point, an error named by the workload: `workload kv:
    /// clients (-c) must be at least 1`. A message the workload began with its own name
    /// (`kv: \`duration\` = 0 s ...`) keeps it once (it read `workload kv: kv: ...`). A
    /// suite run with `allow_long` met the bare error, no word of which workload it was.
    pub fn build_point(&self, point: &Params) -> anyhow::Result<Box<dyn Workload>> {
        (self.build)(point).map_err(|e| {
            if e.to_string().starts_with(&format!("{}: ", self.name)) {
                e
            } else {
                e.context(format!("workload {}", self.name))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A point's build error names the workload once: bare, a suite's run with
    /// `allow_long` said "clients (-c) must be at least 1" of no workload; a message
    /// beginning with the workload's name read `workload kv: kv: ...`.
    #[test]
    fn a_build_error_names_its_workload_once() {
        let reg = |build: BuildFn| Registration {
            name: "kv",
            about: "",
            list_keys: &[],
            text_keys: &[],
            flags: |c| c,
            build,
            service: None,
            has_server: false,
            driver: None,
            programs: no_programs,
            lengthen: "",
        };
        let error = |build| {
            format!(
                "{:#}",
                reg(build).build_point(&Params::new()).err().unwrap()
            )
        };
        assert_eq!(
            error(|_| anyhow::bail!("clients (-c) must be at least 1")),
            "workload kv: clients (-c) must be at least 1"
        );
        assert_eq!(
            error(|_| anyhow::bail!("kv: `duration` = 0 s is out of range")),
            "kv: `duration` = 0 s is out of range"
        );
    }

    /// The ramp summary went through `printable` whole: one line with `\n` and `\t`
    /// shown as escapes. Each cell is made printable on its own, the table aligned.
    #[test]
    fn a_table_note_is_a_table_with_its_cells_made_printable() {
        let tsv = "dem_req_rate\treply_rate_avg\tverdict\n\
                   20000\t19978.3\tok\n\
                   40000\t-\tfailed: \u{1b}[31mred\n";
        let t = table_note("kv ramp:", tsv);
        assert_eq!(
            t,
            "rackbench: kv ramp:\n\
             \x20 dem_req_rate  reply_rate_avg  verdict\n\
             \x20        20000         19978.3  ok\n\
             \x20        40000               -  failed: \\u{1b}[31mred\n"
        );
        assert!(!t.contains("\\n") && !t.contains("\\t"), "{t}");
    }

    /// `--client-cpus 9` on a 2-CPU load generator was found out by the test itself,
    /// stored failed: the list is refused up front, naming the option, the host, its
    /// CPUs and what to do.
    #[test]
    fn a_cpu_list_past_its_hosts_cpus_is_refused_naming_all_of_it() {
        let list = |flag, role, cpus: &[usize]| CpuList {
            flag,
            role,
            cpus: cpus.to_vec(),
        };
        let upto = |n: usize| crate::launch::OnlineCpus::listed((0..n).collect());
        let why = list("--client-cpus", CpuRole::Generator, &[9])
            .refusal("rbh2", &upto(2))
            .expect("refused");
        assert_eq!(
            why,
            "--client-cpus 9: CPU 9 is not available on the load generator rbh2, which has \
             CPUs 0-1 online: give CPUs among 0-1 there, or leave --client-cpus out"
        );
        let why = list("--sender-cpus", CpuRole::Sender, &[0, 1, 2, 3, 7])
            .refusal("rbh1", &upto(2))
            .expect("refused");
        assert!(
            why.starts_with(
                "--sender-cpus 0-3,7: CPUs 2-3,7 are not available on the sender rbh1,"
            ),
            "{why}"
        );
        let why = list("--cpus", CpuRole::Sut, &[1])
            .refusal("local (this machine)", &upto(1))
            .expect("refused");
        assert!(
            why.contains("which has only CPU 0 online: give CPU 0 there"),
            "{why}"
        );
        assert_eq!(
            list("--server-cpus", CpuRole::Sut, &[0, 1]).refusal("x", &upto(2)),
            None
        );
        assert_eq!(
            list("--server-cpus", CpuRole::Sut, &[]).refusal("x", &upto(1)),
            None
        );
    }

    /// A host with CPU 2 offline (online `0-1,3`) was taken to have CPUs 0-2 from its
    /// count of 3: CPU 2 passed, and failed where it was used, while CPU 3, online, was
    /// refused. The kernel's list is what a list is judged against.
    #[test]
    fn a_cpu_list_is_judged_against_the_online_list_holes_and_all() {
        use crate::launch::OnlineCpus;
        let online = OnlineCpus::listed(vec![0, 1, 3]);
        let list = |cpus: &[usize]| CpuList {
            flag: "--server-cpus",
            role: CpuRole::Sut,
            cpus: cpus.to_vec(),
        };
        assert_eq!(list(&[3]).refusal("rbh1", &online), None);
        assert_eq!(list(&[0, 1, 3]).refusal("rbh1", &online), None);
        let why = list(&[2]).refusal("rbh1", &online).expect("refused");
        assert_eq!(
            why,
            "--server-cpus 2: CPU 2 is not available on the system under test rbh1, which \
             has CPUs 0-1,3 online: give CPUs among 0-1,3 there (or bring CPU 2 online), or \
             leave --server-cpus out"
        );
        // Past the highest online CPU: nothing to bring online that is known to exist.
        let why = list(&[2, 4]).refusal("rbh1", &online).expect("refused");
        assert!(
            why.starts_with("--server-cpus 2,4: CPUs 2,4 are not available on")
                && why.contains("(or bring CPU 2 online), or leave"),
            "{why}"
        );
        // Counted, because the list could not be read: judged on the count, and said so.
        let counted = OnlineCpus::counted(2, "reading /sys/devices/system/cpu/online: denied");
        let why = list(&[5]).refusal("rbh2", &counted).expect("refused");
        assert!(
            why.contains("which has CPUs 0-1 online: give CPUs among 0-1 there, or leave")
                && why.ends_with(
                    "(on rbh2, /sys/devices/system/cpu/online was not read (reading \
                     /sys/devices/system/cpu/online: denied): its CPUs were counted instead \
                     (2), taken to be 0-1, though one among them may be offline)"
                ),
            "{why}"
        );
        let why = list(&[1])
            .refusal("x", &OnlineCpus::listed(vec![4]))
            .expect("refused");
        assert!(
            why.contains(
                "which has only CPU 4 online: give CPU 4 there (or bring CPU 1 online), or"
            ),
            "{why}"
        );
    }

    /// A workload's settings are its config as plain data: unset knobs left out, whole
    /// floats as the integers a typed flag gives (a default `10.0` and a typed `10` are
    /// one value), objects merged.
    #[test]
    fn settings_are_the_config_less_unset_knobs_with_whole_numbers_as_typed() {
        let s = settings_of(&[
            Ok(
                serde_json::json!({"clients": 50, "warmup": 0.0, "rate": null,
                "ratio": "1:10", "mix": [45.0, 4.5]}),
            ),
            Ok(serde_json::json!({"ramp_low": null, "step_duration": 2.5})),
            Ok(serde_json::json!("not an object")),
        ]);
        assert_eq!(
            serde_json::Value::Object(s),
            serde_json::json!({"clients": 50, "warmup": 0, "ratio": "1:10",
                "mix": [45, 4.5], "step_duration": 2.5})
        );
    }

    /// A host's clock 2 s ahead of the controller's reads its spans 2 s late: they come
    /// back 2 s earlier; one behind, later.
    #[test]
    fn a_drivers_spans_come_onto_the_controllers_clock() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let two = Duration::from_secs(2);
        let spans = |offset_s: f64| {
            let mut out = StepOutput {
                measured: vec![(t, t + two)],
                ..Default::default()
            };
            out.on_controller_clock(offset_s);
            out.measured
        };
        assert_eq!(spans(2.0), vec![(t - two, t)]);
        assert_eq!(spans(-2.0), vec![(t + two, t + two + two)]);
        assert_eq!(spans(0.0), vec![(t, t + two)]);
        // An offset that is no time at all leaves them.
        assert_eq!(spans(f64::NAN), vec![(t, t + two)]);
    }
}
