//! One test's load spread over several load generators, and put back together.
//!
//! The workload says how many connections, requests and what offered rate the test has;
//! [`shares`] gives each generator its part (connections and requests differ by at most
//! one, the rate follows the connections so every connection offers the same rate, each
//! generator its own seed); [`drive`] sends every generator its job behind one start
//! barrier and merges what comes back exactly ([`crate::wire::merge`]); [`Driven`] adds
//! the per-generator figures and the measurement window to the stored result. kv, http
//! and oltp share it: only the job's parameters are the workload's own.
//!
//! A plain load test's generators also hand checkpoints while they run
//! ([`crate::workload::CheckpointSink`]); [`drive`] merges those of one moment the
//! same way (a generator done early by its final outcome: see `Pairing`) and gives
//! the workload a [`Driven`] of it, which it turns into a provisional result exactly as
//! it turns the final one.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};
use model::{Flag, Metric, MissingMetric, START_FIGURES};

use crate::host::{drive_all, split_count, DriverJob, DriverReport, Host};
use crate::load::{LoadOutcome, LoadSpec};
use crate::validity::{CLIENT_BOUND_FRACTION, NO_MEASURED_TIME};
use crate::wire::{Span, WireOutcome};
use crate::workload::{CheckpointSink, Progress, SoFar, StepOutput};

/// Seeds of generators 1, 2... are the given seed plus multiples of this odd constant,
/// unrelated to the per-worker step the load loop adds, so the streams do not overlap.
const SEED_STEP: u64 = 0xD6E8_FEB8_6659_FD93;

/// A test's load as a whole.
#[derive(Debug, Clone, PartialEq)]
pub struct Load {
    pub connections: usize,
    /// The count the test stops after, when it does (None: it runs for a duration).
    pub requests: Option<u64>,
    pub rate: Option<f64>,
    pub seed: u64,
    /// Threads of each generator's load loop (never more than its connections:
    /// [`shares`] refuses more).
    pub threads: usize,
    /// How the user says connections and requests (`-c`, `-n`), for the errors.
    pub connections_flag: &'static str,
    pub requests_flag: &'static str,
}

/// One load generator's part of a test.
#[derive(Debug, Clone, PartialEq)]
pub struct Share {
    pub connections: usize,
    pub requests: Option<u64>,
    /// Its part of the offered rate, in proportion to its connections.
    pub rate: Option<f64>,
    pub seed: u64,
    /// The index of its first connection among all: endpoints (or paths) are rotated
    /// from there, as one generator with every connection would rotate them.
    pub first_connection: usize,
}

/// The most connections one of `generators` holds once `load` is spread over them
/// ([`shares`], whose error it gives).
pub fn most_connections(load: &Load, generators: usize) -> anyhow::Result<Option<u64>> {
    let shares = shares(load, generators)?;
    Ok(shares.iter().map(|s| s.connections as u64).max())
}

/// Spread `load` over `generators`. Every generator gets at least one connection (and,
/// when the test stops after a count, one request).
pub fn shares(load: &Load, generators: usize) -> anyhow::Result<Vec<Share>> {
    let n = generators.max(1);
    if load.connections < n {
        bail!(
            "{} connection(s) cannot be spread over {n} load generators: give at least one per generator ({} {n})",
            load.connections,
            load.connections_flag
        );
    }
    // A generator's threads each drive connections of their own: more threads than its
    // connections were capped to them without a word, and the run stored the threads as
    // typed (`--threads 64 -c 2` ran 2 threads and stored 64).
    let fewest = load.connections / n;
    if load.threads > fewest {
        let (over, each) = match n {
            1 => (String::new(), ""),
            n => (format!(" over {n} load generators"), " on each"),
        };
        bail!(
            "--threads {} with {} {}{over}: at most {fewest} threads{each}, one per connection; \
             give --threads {fewest}",
            load.threads,
            load.connections_flag,
            load.connections,
        );
    }
    let requests = match load.requests {
        Some(r) => {
            let r = usize::try_from(r)
                .with_context(|| format!("{} is too large", load.requests_flag))?;
            if r < n {
                bail!(
                    "{r} request(s) cannot be spread over {n} load generators: give at least one per generator ({} {n})",
                    load.requests_flag
                );
            }
            Some(r)
        }
        None => None,
    };
    let conns = split_count(load.connections, n);
    // Requests follow the connections, as the rate does: every connection has the same
    // number to send, so the generators finish together, as redis-benchmark's clients
    // sharing one -n do. Split evenly, the generator with fewer connections ran on
    // alone, and the generators' figures no longer added up to the headline
    // (acceptance K, F2: -c 5 -n 30001 over two).
    let requests = requests.map(|r| proportional(r, &conns));
    let mut first_connection = 0;
    let mut out = Vec::with_capacity(n);
    for (i, c) in conns.into_iter().enumerate() {
        out.push(Share {
            connections: c,
            requests: requests.as_ref().map(|r| r[i] as u64),
            // A lone generator offers the rate as given, not one rounded through the
            // proportion.
            rate: load.rate.map(|rate| {
                if c == load.connections {
                    rate
                } else {
                    rate * c as f64 / load.connections as f64
                }
            }),
            seed: load.seed.wrapping_add(SEED_STEP.wrapping_mul(i as u64)),
            first_connection,
        });
        first_connection += c;
    }
    Ok(out)
}

/// `total` split in proportion to `weights` (largest remainders, ties to the first),
/// every part at least one where `total` allows.
fn proportional(total: usize, weights: &[usize]) -> Vec<usize> {
    let sum: usize = weights.iter().sum();
    if sum == 0 {
        return split_count(total, weights.len());
    }
    let exact: Vec<f64> = weights
        .iter()
        .map(|&w| total as f64 * w as f64 / sum as f64)
        .collect();
    let mut parts: Vec<usize> = exact.iter().map(|e| e.floor() as usize).collect();
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by(|&a, &b| (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor())));
    // The floors leave less than one per part.
    let left = total.saturating_sub(parts.iter().sum());
    for &i in order.iter().take(left) {
        parts[i] += 1;
    }
    // A part rounded to none takes one from the largest.
    while let Some(z) = parts.iter().position(|&p| p == 0) {
        let (big, _) = parts
            .iter()
            .enumerate()
            .max_by_key(|(_, p)| **p)
            .unwrap_or((0, &0));
        if parts[big] <= 1 {
            break;
        }
        parts[big] -= 1;
        parts[z] += 1;
    }
    parts
}

/// What one generator measured.
#[derive(Debug, Clone)]
pub struct GeneratorRun {
    pub host: String,
    /// Load-loop threads it ran.
    pub threads: usize,
    /// Its connections (or virtual users).
    pub connections: usize,
    /// Its throughput and its count, in the workload's terms ([`Figures`]).
    pub rate: f64,
    pub count: u64,
    pub duration_s: f64,
    pub cpu_s: f64,
    /// When its load loop began (after the common start), on the controller's clock,
    /// Unix seconds.
    pub started_unix_s: f64,
    /// When its driver was back (after the drain and the connections' close), on the
    /// controller's clock, Unix seconds.
    pub ended_unix_s: f64,
    /// How late it woke against the common start, on its own clock.
    pub start_skew_s: f64,
    /// How far its window may sit from where it is placed on the controller's clock:
    /// half the round trip of the probe that measured its host's clock offset (0 for
    /// this machine).
    pub clock_error_s: f64,
}

impl GeneratorRun {
    /// What the generator on `host` measured (`o`) with its `connections`, its window
    /// from `started_unix_s` to `ended_unix_s` on the controller's clock: at the test's
    /// end and at a checkpoint alike.
    pub fn of(
        host: &dyn Host,
        connections: usize,
        threads: usize,
        o: &LoadOutcome,
        (started_unix_s, ended_unix_s): (f64, f64),
        start_skew_s: f64,
    ) -> GeneratorRun {
        GeneratorRun {
            host: host.name().to_string(),
            threads: threads.clamp(1, connections.max(1)),
            connections,
            rate: o.throughput(),
            count: o.total_count(),
            duration_s: o.duration_s,
            cpu_s: o.loadgen_cpu_user_s + o.loadgen_cpu_sys_s,
            started_unix_s,
            ended_unix_s,
            start_skew_s,
            clock_error_s: host.clock_rtt_s() / 2.0,
        }
    }

    /// Its measured window on the controller's clock, less the test's warm-up: from its
    /// load loop's start, for its measured duration (to its last reply; a timed closed
    /// loop's, to its end: [`crate::load::LoadSpec::timed_closed_loop`]). The warm-up is
    /// the same on every generator, so it shifts every window alike and leaves their
    /// overlap and union as they are; `ended_unix_s` would add the drain, the close and
    /// the report's way back.
    pub fn window(&self) -> Window {
        Window {
            start_unix_s: self.started_unix_s,
            duration_s: self.duration_s,
        }
    }
}

/// A generator's measured window: when it began on the controller's clock, and for how
/// long. Kept as a length rather than an end: an end in Unix seconds would round a
/// window's length by up to 0.2 us, and the union of one window would no longer be it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    pub start_unix_s: f64,
    pub duration_s: f64,
}

/// The earliest start, Unix seconds (None when there is no window).
fn earliest(windows: &[Window]) -> Option<f64> {
    windows.iter().map(|w| w.start_unix_s).reduce(f64::min)
}

/// The windows' (start, end) in seconds from the earliest start (None when there is
/// none). A difference of two close Unix times is exact, so each length stays its own.
fn from_first(windows: &[Window]) -> Option<impl Iterator<Item = (f64, f64)> + '_> {
    let first = earliest(windows)?;
    Some(windows.iter().map(move |w| {
        let start = w.start_unix_s - first;
        (start, start + w.duration_s)
    }))
}

/// The names and units of a workload's per-generator rate and count
/// (`ops_per_s`/`ops/s`, `requests`/`requests`).
#[derive(Debug, Clone, Copy)]
pub struct Figures {
    pub rate: (&'static str, &'static str),
    pub count: (&'static str, &'static str),
}

/// A test driven on every generator, merged.
pub struct Driven {
    pub merged: LoadOutcome,
    pub runs: Vec<GeneratorRun>,
    /// Generators whose driver failed while others measured: `name: why`.
    pub failed: Vec<String>,
    pub generators: usize,
    /// A checkpoint's merge, taken this many seconds after the warm-up's end, while the
    /// test ran on (None: the test's end). Its generators' starts are not known yet (each
    /// says it in its final report): their windows are placed at the common start.
    pub checkpoint_s: Option<f64>,
}

/// What a checkpoint's merge cannot have, and why: figures of the generators' starts,
/// each known from its final report only.
const NOT_AT_CHECKPOINT: &str = "each load generator says when it began in its report at \
    the end of the test: this result is a checkpoint taken while the test ran";

/// A driver's report back into a load outcome (the drivers send [`WireOutcome`]).
pub fn decode(report: &serde_json::Value) -> anyhow::Result<LoadOutcome> {
    let w: WireOutcome = serde_json::from_value(report.clone())
        .context("a load generator's report does not parse")?;
    LoadOutcome::try_from(w)
}

/// The reports of [`crate::host::drive_all`] (in the order of `hosts`), sorted: what
/// decoded, with its generator's index and report, and the generators that failed
/// (`name`, why).
#[allow(clippy::type_complexity)]
pub fn decode_reports<T>(
    hosts: &[Arc<dyn Host>],
    reports: Vec<anyhow::Result<DriverReport>>,
    decode: impl Fn(&serde_json::Value) -> anyhow::Result<T>,
) -> (Vec<(usize, T, DriverReport)>, Vec<(String, anyhow::Error)>) {
    let mut ok = Vec::new();
    let mut failed = Vec::new();
    for (index, (host, report)) in hosts.iter().zip(reports).enumerate() {
        match report.and_then(|r| Ok((decode(&r.report)?, r))) {
            Ok((v, r)) => ok.push((index, v, r)),
            Err(e) => failed.push((host.name().to_string(), e)),
        }
    }
    (ok, failed)
}

/// The failures as stored: `name: why` each.
pub fn failures(errors: &[(String, anyhow::Error)]) -> Vec<String> {
    errors.iter().map(|(h, e)| format!("{h}: {e:#}")).collect()
}

/// The error of a test no generator measured: a lone generator's own (a setup error,
/// as a single-host run's always was), else every generator's.
pub fn nothing_measured(
    mut errors: Vec<(String, anyhow::Error)>,
    generators: usize,
) -> anyhow::Error {
    if generators == 1 && errors.len() == 1 {
        if let Some((_, e)) = errors.pop() {
            return e;
        }
    }
    anyhow::anyhow!(
        "every load generator failed: {}",
        failures(&errors).join("; ")
    )
}

/// Send each load generator of `roles` its job (`job(index, share)`), all behind one
/// start barrier while the system under test and the servers of `services` are watched
/// (one lost or dead ends the test there: [`drive_all`]), and merge what they measured.
/// One generator failing keeps the others' figures (see [`Driven::failure`]); all
/// failing is an error (a lone generator's own). With `checkpoint` (a plain load test's,
/// not a capacity step's, whose test keeps its steps itself), the generators take
/// checkpoints while they run: each time every generator has handed one, their merge
/// goes to `checkpoint`, on a thread of its own, before this returns.
pub fn drive(
    roles: &crate::host::Roles,
    shares: &[Share],
    threads: usize,
    progress: &Arc<Progress>,
    services: &[&crate::host::Running],
    checkpoint: Option<&(dyn Fn(Driven) + Sync)>,
    job: impl Fn(usize, &Share) -> DriverJob,
) -> anyhow::Result<Driven> {
    let loadgens = &roles.loadgens;
    if loadgens.is_empty() {
        bail!("no load-generator host to drive the test from");
    }
    let n = shares.len();
    let jobs: Vec<(Arc<dyn Host>, DriverJob)> = loadgens
        .iter()
        .zip(shares)
        .enumerate()
        .map(|(i, (h, s))| (h.clone(), job(i, s)))
        .collect();
    // The one to say where it is, should a lone generator fail: a loopback one first.
    let first_endpoint = jobs.first().and_then(|(_, j)| {
        let eps = &j.endpoints;
        eps.iter()
            .find(|e| crate::host::names_loopback(e))
            .or(eps.first())
            .cloned()
    });
    let drive = || drive_all(jobs, std::slice::from_ref(&roles.sut), services, progress);
    let reports = match checkpoint {
        Some(f) => {
            let run_of = |i: usize, o: &LoadOutcome, window| {
                GeneratorRun::of(
                    loadgens[i].as_ref(),
                    shares[i].connections,
                    threads,
                    o,
                    window,
                    0.0,
                )
            };
            with_checkpoints(roles, n, progress, f, &run_of, drive)
        }
        None => drive(),
    };
    let (decoded, errors) = decode_reports(loadgens, reports, decode);
    let mut runs = Vec::with_capacity(decoded.len());
    let mut outcomes = Vec::with_capacity(decoded.len());
    for (index, o, r) in decoded {
        runs.push(GeneratorRun::of(
            loadgens[index].as_ref(),
            shares[index].connections,
            threads,
            &o,
            (r.started_unix_s, r.ended_unix_s),
            r.start_skew_s,
        ));
        outcomes.push(o);
    }
    // A test stopped by a count ends on each generator when its share is done: it
    // lasted from the first one's start to the last one's end. Stopped by a duration,
    // the windows are one by design.
    let span = if shares.iter().any(|s| s.requests.is_some()) {
        let windows: Vec<Window> = runs.iter().map(GeneratorRun::window).collect();
        Span::Union(window_union_s(&windows))
    } else {
        Span::Together
    };
    let Some(mut merged) = crate::wire::merge(outcomes, span) else {
        // A lone generator's error is its own; from another machine, it names it. Its
        // loopback is the server's where the server runs on it too, and a generator whose
        // host was lost reached nothing: neither is told its loopback is its own (a kill
        // of the agent read "where 127.0.0.1 is rbh1 itself: give an address rbh1
        // reaches the server at", audit s44).
        let errors = match (errors, loadgens.as_slice()) {
            (mut errors, [lone]) if lone.remote() && errors.len() == 1 => {
                let (h, e) = errors.remove(0);
                let beside_server = roles.sut.name() == lone.name();
                let endpoint = first_endpoint
                    .as_deref()
                    .filter(|_| !beside_server && lone.lost().is_none());
                let e = e.context(crate::host::reached_from(
                    lone.name(),
                    "load generator",
                    endpoint,
                ));
                vec![(h, e)]
            }
            (errors, _) => errors,
        };
        return Err(nothing_measured(errors, n));
    };
    progress.explain_stop(&mut merged.stopped_early);
    Ok(Driven {
        merged,
        runs,
        failed: failures(&errors),
        generators: n,
        checkpoint_s: None,
    })
}

/// How a workload makes a generator's figures of its outcome at a checkpoint:
/// `(index, outcome, window)` (see [`with_checkpoints`]).
pub type RunOf<'a> = &'a (dyn Fn(usize, &LoadOutcome, (f64, f64)) -> GeneratorRun + Sync);

/// Run `drive` (a test's drive of its `generators`, which hands their checkpoints to
/// `progress`) with the generators' checkpoints of one moment merged into a [`Driven`]
/// for `checkpoint`, on a thread of its own, before this returns (the rule is
/// `Pairing`'s, below). A checkpoint handed as a driver's report is read as the final one is
/// ([`decode`]), and so is a generator's final report, handed as it comes back while
/// others run on: see [`with_checkpoints_reading`] for drivers whose reports are their
/// own. `run_of(index, outcome, window)`: a generator's figures, as the workload makes
/// them at the end, its window placed from the common start to its checkpoint (its real
/// start comes with its final report).
pub fn with_checkpoints<R>(
    roles: &crate::host::Roles,
    generators: usize,
    progress: &Progress,
    checkpoint: &(dyn Fn(Driven) + Sync),
    run_of: RunOf,
    drive: impl FnOnce() -> R,
) -> R {
    with_checkpoints_reading(
        roles, generators, progress, checkpoint, run_of, &decode, drive,
    )
}

/// How a workload reads the load outcome in its driver's final report (oltp's holds one
/// beside its counters).
pub type OutcomeOf<'a> = &'a (dyn Fn(&serde_json::Value) -> anyhow::Result<LoadOutcome> + Sync);

/// [`with_checkpoints`], a generator's final report read by `outcome_of`.
pub fn with_checkpoints_reading<R>(
    roles: &crate::host::Roles,
    generators: usize,
    progress: &Progress,
    checkpoint: &(dyn Fn(Driven) + Sync),
    run_of: RunOf,
    outcome_of: OutcomeOf,
    drive: impl FnOnce() -> R,
) -> R {
    // Where the generators' windows begin, as far as the controller knows before their
    // reports: the common start [`drive_all`] sets.
    let start = unix_s_of(SystemTime::now() + roles.start_lead());
    let mut pairing = Pairing::new(generators);
    let take = move |i: usize, so_far: SoFar| {
        let (o, done) = match so_far {
            SoFar::Load(o) => (*o, false),
            SoFar::Report(v) => match decode(&v) {
                Ok(o) => (o, false),
                Err(_) => return,
            },
            SoFar::Final(v) => match outcome_of(&v) {
                Ok(o) => (o, true),
                Err(_) => return,
            },
        };
        if let Some(outcomes) = pairing.take(i, o, done) {
            if let Some(d) = at_checkpoint(start, outcomes, run_of) {
                checkpoint(d);
            }
        }
    };
    take_checkpoints(progress, take, drive)
}

/// How many checkpoints of one generator wait at most for the others' of their moment:
/// 40 s of a generator ahead of the slowest one's arrivals. Past it the oldest goes (a
/// generator that far behind is merged with its nearest there is).
const PENDING_AT_MOST: usize = 8;

/// The controller's state between checkpoints: each generator's checkpoints since the
/// last merge, and each done generator's final outcome.
///
/// The rule: checkpoints of the same moment are merged. Once every generator still
/// running has a checkpoint pending (and at least one is running: with none, the final
/// outcome is near), the moment is the earliest of the running generators' latest
/// checkpoints' times, and each generator gives its pending checkpoint nearest it, among
/// those not newer than it by more than half a period (none: its earliest); a done
/// generator's final outcome counts as at any moment from its end on (its counts are
/// all it will make), so it stands for it in every merge after its end, and its pending
/// checkpoints before. What a merge took, and older, is dropped; newer ones wait for the
/// next. Each merge takes a newer checkpoint of every generator than the last, so the
/// merged counts never go back; and since every running generator hands one a period,
/// a merge comes at least once a period of the slowest: checkpoints that drift apart
/// (an oltp session copies at the top of a round of up to 30 s, so its generator's times
/// can lag a whole round) are merged with their nearest, never waited for. Keying them
/// by round (`duration / period`) would wait for ever for a round one generator skipped.
struct Pairing {
    pending: Vec<std::collections::VecDeque<LoadOutcome>>,
    last: Vec<Option<LoadOutcome>>,
}

impl Pairing {
    fn new(generators: usize) -> Self {
        Pairing {
            pending: (0..generators).map(|_| Default::default()).collect(),
            last: (0..generators).map(|_| None).collect(),
        }
    }

    /// Take generator `i`'s checkpoint `o` (its final outcome when `done`); when it
    /// completes a merge, every generator's part of it, in their order.
    fn take(&mut self, i: usize, o: LoadOutcome, done: bool) -> Option<Vec<LoadOutcome>> {
        if i >= self.pending.len() || self.last[i].is_some() {
            // A checkpoint after the final outcome is older than it.
            return None;
        }
        if done {
            self.last[i] = Some(o);
        } else {
            let q = &mut self.pending[i];
            let at = q.partition_point(|p| p.duration_s <= o.duration_s);
            q.insert(at, o);
            if q.len() > PENDING_AT_MOST {
                q.pop_front();
            }
        }
        let running: Vec<usize> = (0..self.pending.len())
            .filter(|&g| self.last[g].is_none())
            .collect();
        let mut moment = f64::INFINITY;
        for &g in &running {
            moment = moment.min(self.pending[g].back()?.duration_s);
        }
        if !moment.is_finite() {
            return None;
        }
        let half = crate::load::CHECKPOINT_EVERY.as_secs_f64() / 2.0;
        let mut parts = Vec::with_capacity(self.pending.len());
        for g in 0..self.pending.len() {
            let q = &mut self.pending[g];
            // The pending one nearest the moment, not past it by more than half a period.
            let near = q
                .iter()
                .enumerate()
                .filter(|(_, p)| p.duration_s <= moment + half)
                .map(|(k, p)| (k, (p.duration_s - moment).abs()))
                .min_by(|a, b| a.1.total_cmp(&b.1));
            // Its final outcome, at the moment or within half a period of it.
            let last = self.last[g]
                .as_ref()
                .map(|l| (l.duration_s - moment).max(0.0))
                .filter(|&l| l <= half);
            let part = match (near, last) {
                (Some((k, d)), l) if l.is_none_or(|l| d < l) => {
                    let p = q.remove(k)?;
                    q.drain(..k);
                    p
                }
                (_, Some(_)) => self.final_of(g)?,
                // Nothing within reach: its earliest (a generator ahead of the moment
                // by more than half a period), else its final outcome.
                _ => match q.pop_front() {
                    Some(p) => p,
                    None => self.final_of(g)?,
                },
            };
            parts.push(part);
        }
        Some(parts)
    }

    /// Done generator `g`'s final outcome, for a merge: its pending checkpoints before
    /// it are dropped (older than it).
    fn final_of(&mut self, g: usize) -> Option<LoadOutcome> {
        let end = self.last.get(g)?.as_ref()?;
        let q = &mut self.pending[g];
        let older = q.partition_point(|p| p.duration_s <= end.duration_s);
        q.drain(..older);
        Some(end.clone())
    }
}

/// Run `drive` (a test's drive, which hands its checkpoints to `progress`) with each
/// checkpoint going to `take`, in the order handed, on a thread of its own, before this
/// returns: never on the thread that hands it (a remote host's reader, which must read
/// on: storing a checkpoint asks the hosts for their telemetry). What is handed once
/// `drive` has returned is dropped: the final outcome is newer.
pub fn take_checkpoints<R>(
    progress: &Progress,
    take: impl FnMut(usize, SoFar) + Send,
    drive: impl FnOnce() -> R,
) -> R {
    // None: the test has ended (a sink held a moment longer somewhere must not hold
    // this up), and what is still queued is older than the final outcome.
    let (tx, rx) = std::sync::mpsc::channel::<Option<(usize, SoFar)>>();
    let ended = std::sync::atomic::AtomicBool::new(false);
    let hand = tx.clone();
    progress.set_checkpoints(Some(CheckpointSink::new(move |i, o| {
        let _ = hand.send(Some((i, o)));
    })));
    let ended = &ended;
    std::thread::scope(|s| {
        s.spawn(move || {
            let mut take = take;
            while let Ok(Some((i, so_far))) = rx.recv() {
                if ended.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                take(i, so_far);
            }
        });
        let r = drive();
        progress.set_checkpoints(None);
        ended.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = tx.send(None);
        r
    })
}

/// One checkpoint of every generator (in their order), merged as their final outcomes
/// are: each one's window from the common start `start` (Unix seconds) to its
/// checkpoint, so the merged test lasts the longest of them.
fn at_checkpoint(start: f64, outcomes: Vec<LoadOutcome>, run_of: RunOf) -> Option<Driven> {
    let runs: Vec<GeneratorRun> = outcomes
        .iter()
        .enumerate()
        .map(|(i, o)| run_of(i, o, (start, start + o.duration_s)))
        .collect();
    let at = outcomes.iter().map(|o| o.duration_s).fold(0.0, f64::max);
    let generators = outcomes.len();
    let merged = crate::wire::merge(outcomes, Span::Union(at))?;
    Some(Driven {
        merged,
        runs,
        failed: Vec::new(),
        generators,
        checkpoint_s: Some(at),
    })
}

fn unix_s_of(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The time every generator was measuring at once, seconds (0 if some never overlapped).
pub fn window_overlap_s(windows: &[Window]) -> f64 {
    let Some(spans) = from_first(windows) else {
        return 0.0;
    };
    let (start, end) = spans.fold((0.0, f64::INFINITY), |(s, e), w| (w.0.max(s), w.1.min(e)));
    (end - start).max(0.0)
}

/// The time from the earliest window's start to the latest one's end, seconds (0 when
/// there is none): the whole test's wall time.
pub fn window_union_s(windows: &[Window]) -> f64 {
    from_first(windows).map_or(0.0, |spans| spans.map(|w| w.1).fold(0.0, f64::max))
}

/// The test's measured window on the controller's clock: from the first generator's end
/// of `warmup` (the same on each) to the end of the last one's measured duration (its
/// last reply; a timed closed loop's end). None when no generator reported, or its clock
/// made no sense.
pub fn measured_window(
    runs: &[GeneratorRun],
    warmup: Duration,
) -> Option<(SystemTime, SystemTime)> {
    let windows: Vec<Window> = runs.iter().map(GeneratorRun::window).collect();
    let first = Duration::try_from_secs_f64(earliest(&windows)?).ok()?;
    let union = Duration::try_from_secs_f64(window_union_s(&windows)).ok()?;
    let start = UNIX_EPOCH.checked_add(first)?.checked_add(warmup)?;
    Some((start, start.checked_add(union)?))
}

/// A server counter read while a test ran, and when: between `from` and `to` (the
/// controller's clock).
#[derive(Debug, Clone)]
pub struct TimedReading<T> {
    pub value: T,
    pub from: SystemTime,
    pub to: SystemTime,
}

/// Run `drive` (a test whose generators start together `lead` from now, as
/// [`drive_all`] sets it) and meanwhile read a server's own counter with `read` where
/// its warm-up ends, so that a reading after the test gives the count of the measured
/// window (the generators' figures leave the warm-up out; acceptance pass G, 12: nginx's
/// count ran 48% above the clients' with `--warmup 1`). None without a warm-up (nothing
/// read), when the test ended first or `read` gave nothing. The reading is as near the
/// window's start as the controller's clock and the server's answer allow: see
/// [`server_count_window`].
pub fn read_at_warmup_end<T: Send, R>(
    lead: Duration,
    warmup: Duration,
    read: impl FnOnce() -> Option<T> + Send,
    drive: impl FnOnce() -> R,
) -> (R, Option<TimedReading<T>>) {
    // Without a warm-up, the count from before the test is the window's start: a
    // reading at its start would only add a request of its own to some servers' counts.
    if warmup.is_zero() {
        return (drive(), None);
    }
    let until = std::time::Instant::now() + lead + warmup;
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let reader = s.spawn(|| {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let left = until.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    let from = SystemTime::now();
                    let value = read()?;
                    return Some(TimedReading {
                        value,
                        from,
                        to: SystemTime::now(),
                    });
                }
                std::thread::sleep(left.min(Duration::from_millis(5)));
            }
            None
        });
        let r = drive();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        (r, reader.join().ok().flatten())
    })
}

/// How far below and above the generators' count of the measured window a server's
/// own count of it may be and still agree (memtier's self-test).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CountAllowance {
    pub below: u64,
    pub above: u64,
}

impl CountAllowance {
    /// Does the server's count `server` agree with the generators' `generators`?
    pub fn admits(&self, server: u64, generators: u64) -> bool {
        server + self.below >= generators && server <= generators + self.above
    }
}

/// Where a server's own count of the measured window starts, and how far it may be from
/// the generators' count (`out`) and agree. Without a warm-up the window starts at the
/// reading `before` the test, exactly; with one, at the reading where the warm-up ended
/// ([`read_at_warmup_end`]), as near as [`reading_slack`] allows either way (None
/// without that reading). Above, too, by the requests in flight where a timed closed
/// loop ends (a pipeline per connection): the servers may answer what the generators no
/// longer count. A test stopped by a count waits for every reply, and an open loop's
/// last ones are counted or lost (and a loss skips the check).
pub fn server_count_window<T>(
    spec: &LoadSpec,
    warmup: Duration,
    before: Option<T>,
    at_warmup_end: Option<TimedReading<T>>,
    measured: Option<&(SystemTime, SystemTime)>,
    out: &LoadOutcome,
) -> (Option<T>, Option<CountAllowance>) {
    let in_flight = (spec.connections * spec.pipeline) as u64;
    let at_end = if spec.timed_closed_loop() {
        in_flight
    } else {
        0
    };
    if warmup.is_zero() {
        let exact = CountAllowance {
            below: 0,
            above: at_end,
        };
        return (before, Some(exact));
    }
    let slack = reading_slack(at_warmup_end.as_ref(), measured, out, in_flight);
    let allowance = slack.map(|s| CountAllowance {
        below: s,
        above: s + at_end,
    });
    (at_warmup_end.map(|r| r.value), allowance)
}

/// A server's count of the measured window, `m`: from the warm-up's end, where there is
/// one, as the controller timed that end, not to the request (`span=from_warmup_end`).
pub fn server_count_metric(m: Metric, warmup: Duration) -> Metric {
    if warmup.is_zero() {
        m
    } else {
        m.label("span", "from_warmup_end")
    }
}

/// Why a server's count of the measured window (`metric`; `what`: "nginx's count") is
/// missing: it could not be read at the window's start (before the test, or where its
/// warm-up ended), or after the test (`after`, why).
pub fn server_count_missing(
    metric: &str,
    what: &str,
    warmup: Duration,
    out: &LoadOutcome,
    after: Option<String>,
) -> MissingMetric {
    let reason = match after {
        Some(why) => format!("{what} could not be read after the test: {why}"),
        None if out.warmup_stop(warmup).is_some() => STOPPED_IN_WARMUP.into(),
        None if !warmup.is_zero() => format!(
            "{what} could not be read where the warm-up ended (the test ended first, or \
             no answer came): run with --warmup 0 to count from the start"
        ),
        None => format!("{what} could not be read before the test"),
    };
    MissingMetric {
        name: metric.into(),
        reason,
    }
}

/// How far a server's count of the measured window (`measured`), first read at
/// `reading`, may be from the generators' count of it (`out`): the operations, at their
/// rate, of the time between the window's start and the farther end of the reading,
/// plus `in_flight` (sent before the window, served in it), plus 1% of the count for what
/// the controller cannot see of the generators' start (their threads' wake-up, the
/// reading's own way to the server: 1.2% apart at 48,000 calls/s, redis on this host).
/// None without a reading or a window.
fn reading_slack<T>(
    reading: Option<&TimedReading<T>>,
    measured: Option<&(SystemTime, SystemTime)>,
    out: &LoadOutcome,
    in_flight: u64,
) -> Option<u64> {
    let (reading, (start, _)) = reading.zip(measured)?;
    let apart = |t: SystemTime| t.duration_since(*start).unwrap_or_else(|e| e.duration());
    let gap = apart(reading.from).max(apart(reading.to));
    let rate = if out.duration_s > 0.0 {
        out.total_count() as f64 / out.duration_s
    } else {
        0.0
    };
    Some((rate * gap.as_secs_f64()).ceil() as u64 + in_flight + out.total_count() / 100)
}

/// Why a figure (a server's count, the generator's busy share) is missing from a test
/// stopped in its warm-up ([`LoadOutcome::warmup_stop`]): nothing to advise (a
/// `--warmup 0` would not have helped a Ctrl-C).
pub const STOPPED_IN_WARMUP: &str =
    "the test stopped in its warm-up, before its measurement began: nothing was measured";

/// Whether a server's count of the measured window (`server`) disagrees with the
/// generators' (`out`) beyond `allowance` ([`server_count_window`]), and if so what the
/// mismatch message adds after the count and at its end (from the warm-up's end, where
/// `what` read it: the allowance). Never judged without an allowance, nor where
/// requests were lost or a connection failed (they may have reached the server) or a
/// generator failed (its requests reached the server but not the merge).
pub fn count_mismatch(
    allowance: Option<CountAllowance>,
    server: u64,
    out: &LoadOutcome,
    failed: &[String],
    warmup: Duration,
    what: &str,
) -> Option<(&'static str, String)> {
    let lost = out.lost_count() + out.connection_error_count();
    let allow = allowance.filter(|_| lost == 0 && failed.is_empty())?;
    if allow.admits(server, out.total_count()) {
        return None;
    }
    if warmup.is_zero() {
        return Some(("", String::new()));
    }
    let allows = if allow.below == allow.above {
        format!("{} apart", allow.below)
    } else {
        format!("{} below and {} above", allow.below, allow.above)
    };
    Some((
        " after the warm-up",
        format!(
            " (the warm-up's end, where {what} read, allows {allows}); --warmup 0 counts from \
             before the test, with no such gap"
        ),
    ))
}

/// Why the result fails when some generators' drivers failed (`name: why` each):
/// `load generator rbh2: the link to rbh2 broke`. (It said "... broke failed", the
/// word after the reason.)
pub fn failure(failed: &[String]) -> Option<String> {
    match failed {
        [] => None,
        [one] => Some(format!("load generator {one}")),
        many => Some(format!("load generators failed: {}", many.join("; "))),
    }
}

/// Add the per-generator figures of `runs` (when `generators` > 1: each one's rate and
/// count labelled `host`, its CPU, the start skew and spread, the window they measured
/// together) and the failure of the `failed` ones to `step`. `closed_loop`: a
/// saturated generator is client-bound (an open loop spins by design and is judged by
/// its schedule instead).
pub fn add_figures(
    runs: &[GeneratorRun],
    failed: &[String],
    generators: usize,
    names: Figures,
    closed_loop: bool,
    step: &mut StepOutput,
) {
    if generators > 1 {
        for h in runs {
            step.metrics.extend([
                Metric::new(names.rate.0, h.rate, names.rate.1).label("host", &h.host),
                Metric::new(names.count.0, h.count as f64, names.count.1).label("host", &h.host),
                Metric::new("loadgen_cpu_s", h.cpu_s, "s").label("host", &h.host),
            ]);
            // Without a measured time (no reply came) the share is unknown, not 0.
            let busy_pct = if h.duration_s > 0.0 {
                let busy_pct = 100.0 * h.cpu_s / (h.duration_s * h.threads.max(1) as f64);
                step.metrics
                    .push(Metric::new("loadgen_busy_pct", busy_pct, "%").label("host", &h.host));
                busy_pct
            } else {
                step.missing.push(MissingMetric {
                    name: format!("loadgen_busy_pct{{host={}}}", h.host),
                    reason: NO_MEASURED_TIME.into(),
                });
                0.0
            };
            // The whole's busy figure averages the generators: one saturated among
            // idle ones would hide in it.
            if closed_loop
                && busy_pct >= CLIENT_BOUND_FRACTION * 100.0
                && !step.flags.iter().any(|f| f.code == "client_bound")
            {
                step.flags.push(Flag::warning(
                    "client_bound",
                    format!(
                        "load generator {} used {busy_pct:.0}% of its {} thread(s): the figure may be its limit, \
                         not the server's (add threads, or more generators)",
                        h.host, h.threads
                    ),
                ));
            }
        }
        // The whole's busy share is of the time each generator's threads measured: a
        // test stopped by a count ends on each generator when its share is done, and
        // over their union (what the merge divides by) the earlier ones would read idle.
        let (cpu_s, thread_s) = runs
            .iter()
            .filter(|h| h.duration_s > 0.0)
            .fold((0.0, 0.0), |(c, t), h| {
                (c + h.cpu_s, t + h.duration_s * h.threads.max(1) as f64)
            });
        if thread_s > 0.0 {
            for m in step.metrics.iter_mut() {
                if m.name == "loadgen_busy_pct" && m.labels.is_empty() {
                    m.value = 100.0 * cpu_s / thread_s;
                }
            }
        }
        if !runs.is_empty() {
            let skew = runs.iter().map(|h| h.start_skew_s).fold(0.0, f64::max);
            let windows: Vec<Window> = runs.iter().map(GeneratorRun::window).collect();
            // How far apart the generators really began, on the controller's clock
            // (each host's start corrected by its clock offset), beside how late the
            // latest woke against the common start on its own clock.
            let first = windows
                .iter()
                .map(|w| w.start_unix_s)
                .fold(f64::INFINITY, f64::min);
            let last = windows
                .iter()
                .map(|w| w.start_unix_s)
                .fold(f64::NEG_INFINITY, f64::max);
            let overlap = window_overlap_s(&windows);
            let union = window_union_s(&windows);
            step.metrics.extend([
                Metric::new("start_skew_max_s", skew, "s"),
                Metric::new("start_spread_s", (last - first).max(0.0), "s"),
                Metric::new("window_overlap_s", overlap, "s"),
            ]);
            // The measurement window is the generators' common time; when it is much
            // shorter than their union, their figures are not of one moment. Unless
            // the clocks cannot tell: see [`windows_apart`].
            if let Some(why) = windows_apart(overlap, union, runs) {
                step.flags.push(Flag::warning("windows_apart", why));
            }
        }
    }
    // A lone generator on another machine: how late it began against the common start.
    if generators == 1 {
        if let Some(h) = runs.first().filter(|h| h.host != "local") {
            step.metrics
                .push(Metric::new("start_skew_max_s", h.start_skew_s, "s").label("host", &h.host));
        }
    }
    if let Some(why) = failure(failed) {
        step.error = Some(why.clone());
        // The partial figure is the survivors' alone: said, or it reads as the server's
        // rate halved (it may have served the lost ones' requests too, counted nowhere).
        let flag = match runs.len() {
            0 => why,
            n => format!(
                "{why}; the figures are of the {n} of {generators} load generators that \
                 reported, and any requests the others made before they failed are in none \
                 of them (a server's own count, such as server_calls, holds them too): run \
                 the test again for a whole figure"
            ),
        };
        step.flags.push(Flag::invalid("host_failed", flag));
    }
}

/// Why the generators' windows are apart, or None: when their common time (`overlap`)
/// is under 90% of their union, and the gap between the two is more than their hosts'
/// clocks can tell apart (each window may sit up to its host's [`GeneratorRun::
/// clock_error_s`] off, so a start or an end of two windows up to the two largest
/// errors together: the gap, two such differences, twice that). The times are given in
/// ms below 10 s, with the decimals that show the gap: a 30 ms test read "measured
/// together for only 0.03 s of 0.03 s".
pub fn windows_apart(overlap: f64, union: f64, runs: &[GeneratorRun]) -> Option<String> {
    if union <= 0.0 || overlap >= 0.9 * union {
        return None;
    }
    let mut errors: Vec<f64> = runs.iter().map(|r| r.clock_error_s).collect();
    errors.sort_by(|a, b| b.total_cmp(a));
    let blur = 2.0 * errors.iter().take(2).sum::<f64>();
    if union - overlap <= blur {
        return None;
    }
    let (scale, unit, least) = if union < 10.0 {
        (1e3, "ms", 0)
    } else {
        (1.0, "s", 1)
    };
    let (o, u) = (overlap * scale, union * scale);
    // Two significant digits of the union at least, and enough to tell the two apart.
    let sig = (1 - u.log10().floor() as i32).clamp(least, 3) as usize;
    let places = (sig..=3)
        .find(|&d| format!("{o:.d$}") != format!("{u:.d$}"))
        .unwrap_or(3);
    let mut why = format!(
        "the generators measured together for only {o:.places$} {unit} of {u:.places$} {unit}: \
         their throughputs are not of one moment"
    );
    if blur > 0.0 {
        why.push_str(&format!(
            " (beyond the {:.3} ms their clocks' offsets are known to)",
            blur * 1e3
        ));
    }
    Some(why)
}

impl Driven {
    /// Why the result fails, when a generator did.
    pub fn failure(&self) -> Option<String> {
        failure(&self.failed)
    }

    /// Connections and threads of the load as a whole (the generators that reported),
    /// for the checks `validity::step_output` makes.
    pub fn connections(&self) -> usize {
        self.runs.iter().map(|h| h.connections).sum()
    }

    pub fn threads(&self) -> usize {
        self.runs.iter().map(|h| h.threads).sum()
    }

    /// See [`measured_window`].
    pub fn measured_window(&self, warmup: Duration) -> Option<(SystemTime, SystemTime)> {
        measured_window(&self.runs, warmup)
    }

    /// See [`add_figures`]. A checkpoint's leaves out the figures of the generators'
    /// starts (missing, with why: each comes with its generator's final report).
    pub fn add_figures(&self, step: &mut StepOutput, names: Figures, closed_loop: bool) {
        add_figures(
            &self.runs,
            &self.failed,
            self.generators,
            names,
            closed_loop,
            step,
        );
        if self.checkpoint_s.is_some() {
            let mut left_out: Vec<String> = Vec::new();
            step.metrics.retain(|m| {
                let start = START_FIGURES.contains(&m.name.as_str());
                if start && !left_out.contains(&m.name) {
                    left_out.push(m.name.clone());
                }
                !start
            });
            step.flags.retain(|f| f.code != "windows_apart");
            step.missing
                .extend(left_out.into_iter().map(|name| MissingMetric {
                    name,
                    reason: NOT_AT_CHECKPOINT.into(),
                }));
        }
    }

    /// A checkpoint's `partial` warning (None for the test's end): see
    /// [`checkpoint_flag`].
    pub fn checkpoint_flag(&self, test: &str, planned_s: Option<f64>) -> Option<Flag> {
        Some(checkpoint_flag(test, self.checkpoint_s?, planned_s))
    }
}

impl Driven {
    /// A checkpoint's marks on the `step` it made of `test` (nothing at the test's end):
    /// its `partial` warning ([`Driven::checkpoint_flag`], against the duration `stop`
    /// plans), and the figures read only at the end (`reads`: each name with what is
    /// read, see [`read_at_end`]), missing with why.
    pub fn mark_checkpoint(
        &self,
        step: &mut StepOutput,
        test: &str,
        stop: &crate::load::StopAfter,
        reads: &[(&str, &str)],
    ) {
        let planned_s = match stop {
            crate::load::StopAfter::Duration(p) => Some(p.as_secs_f64()),
            crate::load::StopAfter::Requests(_) => None,
        };
        if let Some(flag) = self.checkpoint_flag(test, planned_s) {
            step.flags.push(flag);
            step.missing
                .extend(reads.iter().map(|&(name, what)| read_at_end(name, what)));
        }
    }
}

/// The `partial` warning of a result taken at a checkpoint `at_s` seconds into `test`
/// (after its warm-up), of its `planned_s` (None: stopped by a count). Kept only if the
/// process ends before the test does: the test's final result replaces the
/// checkpoint's. Every workload's checkpoints say it alike.
pub fn checkpoint_flag(test: &str, at_s: f64, planned_s: Option<f64>) -> Flag {
    let of = match planned_s {
        Some(p) => format!(" of {p:.1} s"),
        None => " (the test stops after a count of requests)".to_string(),
    };
    checkpoint_flag_of(test, at_s, &of)
}

/// [`checkpoint_flag`] of a test whose extent `of` says, as it reads after the time (a
/// sweep's: ` (3 of 40 sizes measured)`).
pub fn checkpoint_flag_of(test: &str, at_s: f64, of: &str) -> Flag {
    Flag::warning(
        model::PARTIAL,
        format!(
            "the {test} test did not finish (rackbench was killed, or the machine \
             stopped): measured until a checkpoint at {at_s:.1} s{of}, taken every {} s \
             while it ran; the process ended before the test did",
            crate::load::CHECKPOINT_EVERY.as_secs()
        ),
    )
}

/// What a checkpoint cannot have of a figure read at the end of the test (a server's
/// own counters, `what`): `name` missing, with why.
pub fn read_at_end(name: &str, what: &str) -> MissingMetric {
    MissingMetric {
        name: name.into(),
        reason: format!(
            "{what} at the end of the test: this result is a checkpoint taken while it ran"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(connections: usize, requests: Option<u64>, rate: Option<f64>) -> Load {
        Load {
            connections,
            requests,
            rate,
            seed: 1,
            threads: 1,
            connections_flag: "-c",
            requests_flag: "-n",
        }
    }

    /// `--threads 64 -c 2` ran 2 threads and stored 64: more threads than a generator's
    /// connections is refused, saying how many it can have.
    #[test]
    fn more_threads_than_a_generators_connections_are_refused() {
        let threads = |threads, connections, generators| {
            let l = Load {
                threads,
                ..load(connections, None, None)
            };
            shares(&l, generators).map_err(|e| e.to_string())
        };
        assert_eq!(
            threads(64, 2, 1).unwrap_err(),
            "--threads 64 with -c 2: at most 2 threads, one per connection; give --threads 2"
        );
        // 5 connections over 2 generators: one of them holds 2.
        assert_eq!(
            threads(3, 5, 2).unwrap_err(),
            "--threads 3 with -c 5 over 2 load generators: at most 2 threads on each, one per \
             connection; give --threads 2"
        );
        assert!(threads(2, 5, 2).is_ok());
        assert!(threads(2, 2, 1).is_ok());
    }

    #[test]
    fn shares_add_up_to_the_whole() {
        let s = shares(&load(7, Some(1001), Some(7000.0)), 3).unwrap();
        assert_eq!(s.iter().map(|x| x.connections).sum::<usize>(), 7);
        assert_eq!(s.iter().map(|x| x.requests.unwrap()).sum::<u64>(), 1001);
        let rate: f64 = s.iter().map(|x| x.rate.unwrap()).sum();
        assert!((rate - 7000.0).abs() < 1e-9);
        // Every connection offers the same rate wherever it runs.
        for x in &s {
            assert!((x.rate.unwrap() / x.connections as f64 - 1000.0).abs() < 1e-9);
        }
        assert_eq!(
            s.iter().map(|x| x.first_connection).collect::<Vec<_>>(),
            [0, 3, 5]
        );
        assert_ne!(s[0].seed, s[1].seed);
        // Requests follow the connections (3, 2, 2 of 7): each connection sends 143.
        assert_eq!(
            s.iter().map(|x| x.requests.unwrap()).collect::<Vec<_>>(),
            [429, 286, 286]
        );
        // -c 5 -n 30001 over two generators: 3/5 and 2/5, not half each.
        let two = shares(&load(5, Some(30_001), None), 2).unwrap();
        assert_eq!(
            two.iter().map(|x| x.requests.unwrap()).collect::<Vec<_>>(),
            [18_001, 12_000]
        );
        // Few requests over unequal connections: each generator still has one.
        let few = shares(&load(10, Some(2), None), 2).unwrap();
        assert_eq!(
            few.iter().map(|x| x.requests.unwrap()).collect::<Vec<_>>(),
            [1, 1]
        );
        let skewed = proportional(2, &[9, 1]);
        assert_eq!(skewed, [1, 1]);
        // One generator: the load as given.
        let one = shares(&load(5, None, Some(123.4)), 1).unwrap();
        assert_eq!(one[0].rate, Some(123.4));
        assert_eq!(one[0].seed, 1);
    }

    #[test]
    fn too_few_connections_or_requests_for_the_generators_is_refused() {
        let e = shares(&load(1, None, None), 2).unwrap_err();
        assert!(format!("{e}").contains("-c 2"), "{e}");
        let e = shares(&load(4, Some(1), None), 2).unwrap_err();
        assert!(format!("{e}").contains("-n 2"), "{e}");
    }

    /// Windows from (start, end) pairs.
    fn windows(pairs: &[(f64, f64)]) -> Vec<Window> {
        pairs
            .iter()
            .map(|&(start_unix_s, end)| Window {
                start_unix_s,
                duration_s: end - start_unix_s,
            })
            .collect()
    }

    #[test]
    fn overlap_is_the_intersection_of_the_windows() {
        assert_eq!(
            window_overlap_s(&windows(&[(0.0, 10.0), (1.0, 9.0), (2.0, 12.0)])),
            7.0
        );
        assert_eq!(window_overlap_s(&windows(&[(0.0, 1.0), (2.0, 3.0)])), 0.0);
        assert_eq!(window_overlap_s(&[]), 0.0);
    }

    #[test]
    fn the_measured_window_is_the_first_end_of_warm_up_to_the_last_reply() {
        // Two generators began 10 ms apart and measured 2 s and 1.5 s after a 1 s
        // warm-up: the test measured from the first one's warm-up end for 2 s.
        let t = 1_752_000_000.0;
        let runs = [run("a", (t + 0.01, t + 1.51)), run("b", (t, t + 2.0))];
        let (from, to) = measured_window(&runs, Duration::from_secs(1)).unwrap();
        let unix = |s: SystemTime| s.duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
        assert!((unix(from) - (t + 1.0)).abs() < 1e-6, "{}", unix(from) - t);
        assert!((unix(to) - (t + 3.0)).abs() < 1e-6, "{}", unix(to) - t);
        assert_eq!(measured_window(&[], Duration::ZERO), None);
    }

    #[test]
    fn union_is_the_first_start_to_the_last_end() {
        assert_eq!(
            window_union_s(&windows(&[(1.0, 10.0), (0.0, 9.0), (2.0, 12.0)])),
            12.0
        );
        assert_eq!(window_union_s(&windows(&[(0.0, 1.0), (2.0, 3.0)])), 3.0);
        assert_eq!(window_union_s(&[]), 0.0);
        // In Unix seconds, the union holds each window's length exactly.
        let (a, b) = (
            Window {
                start_unix_s: 1_752_000_000.123_456,
                duration_s: 0.062_031_7,
            },
            Window {
                start_unix_s: 1_752_000_000.123_457,
                duration_s: 0.051_2,
            },
        );
        assert_eq!(window_union_s(&[a]), a.duration_s);
        assert!(window_union_s(&[a, b]) >= a.duration_s);
        assert!(window_union_s(&[b, a]) >= b.duration_s);
    }

    fn run(host: &str, window: (f64, f64)) -> GeneratorRun {
        GeneratorRun {
            host: host.into(),
            threads: 2,
            connections: 2,
            rate: 100.0,
            count: 300,
            duration_s: window.1 - window.0,
            cpu_s: 0.3,
            started_unix_s: window.0,
            ended_unix_s: window.1 + 0.1,
            start_skew_s: 0.001,
            clock_error_s: 0.0,
        }
    }

    /// `kv -c 3 -n 1001` over two generators: a 30 ms test read "measured together for
    /// only 0.03 s of 0.03 s", a 4 ms one "0.00 s of 0.00 s".
    #[test]
    fn windows_apart_shows_the_gap_and_only_a_gap_the_clocks_can_see() {
        let why = |a: (f64, f64), b: (f64, f64), clock_error_s: f64| {
            let runs = [a, b].map(|w| GeneratorRun {
                clock_error_s,
                ..run("a", w)
            });
            let windows: Vec<Window> = runs.iter().map(GeneratorRun::window).collect();
            windows_apart(window_overlap_s(&windows), window_union_s(&windows), &runs)
        };
        let t = why((0.0, 0.026), (0.003, 0.030), 0.0).unwrap();
        assert!(t.contains("together for only 23 ms of 30 ms"), "{t}");
        let t = why((0.0, 0.0031), (0.0012, 0.0043), 0.0).unwrap();
        assert!(t.contains("together for only 1.9 ms of 4.3 ms"), "{t}");
        let t = why((0.0, 0.00031), (0.00012, 0.00043), 0.0).unwrap();
        assert!(t.contains("together for only 0.19 ms of 0.43 ms"), "{t}");
        let t = why((0.0, 8.0), (3.0, 12.0), 0.0).unwrap();
        assert!(t.contains("together for only 5.0 s of 12.0 s"), "{t}");
        // Within 90%: no flag.
        assert!(why((0.0, 0.030), (0.001, 0.030), 0.0).is_none());
        // An 11 ms gap between hosts whose offsets are known to 3 ms each: the windows
        // may be one (2 x (3 + 3) = 12 ms); known to 0.5 ms, they are apart.
        assert!(why((0.0, 0.026), (0.004, 0.033), 0.003).is_none());
        let t = why((0.0, 0.026), (0.004, 0.033), 0.0005).unwrap();
        assert!(t.contains("beyond the 2.000 ms"), "{t}");
    }

    const NAMES: Figures = Figures {
        rate: ("txn_per_s", "transactions/s"),
        count: ("transactions", "transactions"),
    };

    #[test]
    fn one_generator_adds_nothing_but_a_failure() {
        // A lone generator on this machine: the single-host result of before.
        let mut step = StepOutput::default();
        add_figures(&[run("local", (0.0, 3.0))], &[], 1, NAMES, true, &mut step);
        assert!(step.metrics.is_empty() && step.flags.is_empty());
        // A lone generator elsewhere: its start skew, labelled with its host.
        let mut step = StepOutput::default();
        add_figures(&[run("a", (0.0, 3.0))], &[], 1, NAMES, true, &mut step);
        assert_eq!(step.metrics.len(), 1);
        assert_eq!(step.metrics[0].name, "start_skew_max_s");
        assert_eq!(
            step.metrics[0].labels.get("host").map(String::as_str),
            Some("a")
        );
        assert!(step.flags.is_empty());
        let mut step = StepOutput::default();
        let runs = [run("a", (0.0, 3.0)), run("b", (5.0, 8.0))];
        add_figures(&runs, &["c: gone".into()], 3, NAMES, true, &mut step);
        assert!(step
            .metrics
            .iter()
            .any(|m| m.name == "transactions"
                && m.labels.get("host").map(String::as_str) == Some("b")));
        assert!(step.flags.iter().any(|f| f.code == "windows_apart"));
        let failed = step.flags.iter().find(|f| f.code == "host_failed").unwrap();
        assert_eq!(
            failed.message,
            "load generator c: gone; the figures are of the 2 of 3 load generators that \
             reported, and any requests the others made before they failed are in none of \
             them (a server's own count, such as server_calls, holds them too): run the \
             test again for a whole figure"
        );
        assert_eq!(step.error.as_deref(), Some("load generator c: gone"));
    }

    /// A checkpoint's merge knows each generator's count and rate, not when it began:
    /// the figures of the starts are missing with why (never 0), and no `windows_apart`
    /// is judged from windows it placed itself.
    #[test]
    fn a_checkpoint_leaves_out_the_starts_it_cannot_know() {
        let runs = [run("a", (0.0, 5.0)), run("b", (3.0, 8.0))];
        let driven = |checkpoint_s| Driven {
            merged: crate::sched::merge(
                &crate::load::LoadSpec::default(),
                &["x"],
                Vec::new(),
                5.0,
                None,
            ),
            runs: runs.to_vec(),
            failed: Vec::new(),
            generators: 2,
            checkpoint_s,
        };
        let mut at_end = StepOutput::default();
        driven(None).add_figures(&mut at_end, NAMES, true);
        assert!(at_end.metrics.iter().any(|m| m.name == "start_skew_max_s"));
        assert!(at_end.flags.iter().any(|f| f.code == "windows_apart"));
        let mut step = StepOutput::default();
        let d = driven(Some(5.0));
        d.add_figures(&mut step, NAMES, true);
        for name in START_FIGURES {
            assert!(!step.metrics.iter().any(|m| m.name == name), "{name}");
            let why = step.missing.iter().find(|m| m.name == name).unwrap();
            assert!(why.reason.contains("checkpoint"), "{}", why.reason);
        }
        assert!(step.flags.iter().all(|f| f.code != "windows_apart"));
        // Each generator's own count stays.
        assert_eq!(
            step.metrics
                .iter()
                .filter(|m| m.name == "transactions" && m.labels.contains_key("host"))
                .count(),
            2
        );
        let flag = d.checkpoint_flag("tpcc", None).unwrap();
        assert!(
            flag.message.contains(
                "measured until a checkpoint at 5.0 s (the test stops after a count of \
                 requests)"
            ),
            "{}",
            flag.message
        );
        assert!(driven(None).checkpoint_flag("tpcc", Some(60.0)).is_none());
    }

    /// An outcome of 100 requests a second over `secs`.
    fn at(secs: f64) -> LoadOutcome {
        let mut o = crate::sched::merge(
            &crate::load::LoadSpec::default(),
            &["x"],
            Vec::new(),
            secs,
            None,
        );
        o.classes[0].count = (secs * 100.0) as u64;
        o
    }

    /// Without a warm-up, a server's count agrees exactly, but for the pipelines in
    /// flight where a timed closed loop ends; from the warm-up's end, by the reading's
    /// slack either way, and none without that reading.
    #[test]
    fn a_server_count_agrees_within_what_the_window_allows() {
        let timed = crate::load::LoadSpec {
            connections: 4,
            pipeline: 10,
            stop: crate::StopAfter::Duration(Duration::from_secs(1)),
            ..Default::default()
        };
        let counted = crate::load::LoadSpec {
            stop: crate::StopAfter::Requests(100),
            ..timed.clone()
        };
        let out = at(1.0);
        let zero = Duration::ZERO;
        let (start, allow) = server_count_window(&timed, zero, Some(7), None, None, &out);
        assert_eq!(start, Some(7));
        let allow = allow.unwrap();
        assert_eq!((allow.below, allow.above), (0, 40));
        assert!(allow.admits(140, 100) && !allow.admits(141, 100) && !allow.admits(99, 100));
        let (_, allow) = server_count_window(&counted, zero, Some(7), None, None, &out);
        assert_eq!(allow, Some(CountAllowance { below: 0, above: 0 }));

        // From the warm-up's end: read 0.1 s after the window began, at 100 a second.
        let began = UNIX_EPOCH + Duration::from_secs(1000);
        let reading = TimedReading {
            value: 3,
            from: began,
            to: began + Duration::from_millis(100),
        };
        let warm = Duration::from_secs(1);
        let measured = (began, began + Duration::from_secs(1));
        let (start, allow) =
            server_count_window(&timed, warm, Some(7), Some(reading), Some(&measured), &out);
        assert_eq!(start, Some(3));
        // 10 of the gap, 40 in flight, 1 for 1% of 100; 40 more above.
        assert_eq!(
            allow,
            Some(CountAllowance {
                below: 51,
                above: 91
            })
        );
        let (start, allow) =
            server_count_window::<u64>(&timed, warm, Some(7), None, Some(&measured), &out);
        assert_eq!((start, allow), (None, None));
    }

    /// A server's count beyond the allowance is a mismatch, unless requests were lost or
    /// a generator failed; from the warm-up's end the message says what was allowed.
    #[test]
    fn a_server_count_beyond_its_allowance_is_a_mismatch() {
        let out = at(1.0);
        let exact = Some(CountAllowance { below: 0, above: 0 });
        let zero = Duration::ZERO;
        let m = |allow, server, out: &LoadOutcome, failed: &[String], warmup| {
            count_mismatch(allow, server, out, failed, warmup, "it was")
        };
        assert_eq!(m(exact, 100, &out, &[], zero), None);
        assert_eq!(m(exact, 101, &out, &[], zero), Some(("", String::new())));
        assert_eq!(m(exact, 99, &out, &[], zero), Some(("", String::new())));
        assert_eq!(m(None, 5, &out, &[], zero), None);
        assert_eq!(m(exact, 101, &out, &["rbh2: gone".into()], zero), None);
        let mut lossy = at(1.0);
        lossy.lost_requests.insert("timeout".into(), 1);
        assert_eq!(m(exact, 101, &lossy, &[], zero), None);
        let wide = Some(CountAllowance { below: 5, above: 9 });
        assert_eq!(m(wide, 109, &out, &[], Duration::from_secs(1)), None);
        let (after, note) = m(wide, 110, &out, &[], Duration::from_secs(1)).unwrap();
        assert_eq!(after, " after the warm-up");
        assert!(
            note.contains("where it was read, allows 5 below and 9 above"),
            "{note}"
        );
    }

    /// Why a server's count is missing says where it could not be read.
    #[test]
    fn a_missing_server_count_says_where_it_was_not_read() {
        let out = at(1.0);
        let m = |warmup: u64, after: Option<&str>| {
            let w = Duration::from_secs(warmup);
            server_count_missing("n", "the count", w, &out, after.map(String::from)).reason
        };
        assert_eq!(m(0, None), "the count could not be read before the test");
        assert!(
            m(1, None).contains("where the warm-up ended"),
            "{}",
            m(1, None)
        );
        assert_eq!(
            m(1, Some("gone")),
            "the count could not be read after the test: gone"
        );
    }

    /// Each merge's parts, as (generator's part's time) in the generators' order, of
    /// checkpoints handed in `order`: (generator, seconds, final).
    fn pairings(generators: usize, order: &[(usize, f64, bool)]) -> Vec<Vec<f64>> {
        let mut p = Pairing::new(generators);
        order
            .iter()
            .filter_map(|&(i, secs, done)| p.take(i, at(secs), done))
            .map(|parts| parts.iter().map(|o| o.duration_s).collect())
            .collect()
    }

    /// Checkpoints of one moment are merged, whichever comes first; a generator a round
    /// behind the others is merged with their nearest, never waited for.
    #[test]
    fn checkpoints_are_paired_by_their_moment() {
        let got = pairings(
            2,
            &[
                (0, 5.0, false),
                (0, 10.0, false),
                (1, 5.0, false),
                (1, 10.0, false),
            ],
        );
        assert_eq!(got, [vec![5.0, 5.0], vec![10.0, 10.0]]);
        // Drifting apart (an oltp session's copy at the top of a long round): nearest.
        let got = pairings(
            2,
            &[
                (0, 5.0, false),
                (1, 7.4, false),
                (0, 10.0, false),
                (1, 13.0, false),
            ],
        );
        assert_eq!(got, [vec![5.0, 7.4], vec![10.0, 13.0]]);
        // A generator far ahead is merged by its earliest pending, not held back for.
        let got = pairings(2, &[(0, 20.0, false), (1, 5.0, false)]);
        assert_eq!(got, [vec![20.0, 5.0]]);
        // Behind by more rounds than are kept: the oldest go, the merges keep coming.
        let mut order: Vec<(usize, f64, bool)> =
            (1..=10).map(|k| (0, 5.0 * k as f64, false)).collect();
        order.push((1, 5.0, false));
        order.push((1, 10.0, false));
        let got = pairings(2, &order);
        assert_eq!(got, [vec![15.0, 5.0], vec![20.0, 10.0]]);
    }

    /// A generator done with its share is not waited for: its final outcome stands for
    /// it in every merge from its end on; before its end, its checkpoints do. With every
    /// generator done, no merge: the final result is near.
    #[test]
    fn a_done_generator_is_merged_by_its_final_outcome() {
        let got = pairings(
            2,
            &[
                (0, 5.0, false),
                (0, 7.0, true),
                (1, 5.0, false),
                (1, 10.0, false),
                (1, 15.0, false),
                (1, 16.0, true),
            ],
        );
        assert_eq!(got, [vec![5.0, 5.0], vec![7.0, 10.0], vec![7.0, 15.0]]);
        // Done before its first checkpoint.
        let got = pairings(2, &[(0, 1.0, true), (1, 5.0, false)]);
        assert_eq!(got, [vec![1.0, 5.0]]);
        // A checkpoint after the final one is older: ignored.
        let got = pairings(2, &[(0, 7.0, true), (0, 5.0, false), (1, 10.0, false)]);
        assert_eq!(got, [vec![7.0, 10.0]]);
        assert!(pairings(2, &[(0, 7.0, true), (1, 8.0, true)]).is_empty());
    }

    /// Two generators of a test stopped by a count, both busy the whole time they
    /// measured (10 s and 5 s, one thread each): the whole is 100% busy, not the 75% of
    /// their CPU over the union of their windows times their threads.
    #[test]
    fn the_wholes_busy_share_is_over_each_generators_own_time() {
        let busy = |host: &str, secs: f64| GeneratorRun {
            threads: 1,
            cpu_s: secs,
            ..run(host, (0.0, secs))
        };
        let mut step = StepOutput::default();
        // What validity::step_output put there from the merge: 15 s over 10 s x 2.
        step.metrics
            .push(Metric::new("loadgen_busy_pct", 75.0, "%"));
        add_figures(
            &[busy("a", 10.0), busy("b", 5.0)],
            &[],
            2,
            NAMES,
            true,
            &mut step,
        );
        let whole: Vec<f64> = step
            .metrics
            .iter()
            .filter(|m| m.name == "loadgen_busy_pct" && m.labels.is_empty())
            .map(|m| m.value)
            .collect();
        assert_eq!(whole, [100.0]);
        let per_host = step
            .metrics
            .iter()
            .filter(|m| m.name == "loadgen_busy_pct" && !m.labels.is_empty())
            .count();
        assert_eq!(per_host, 2);
    }
}
