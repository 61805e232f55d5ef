//! Shared pieces of both executors: open-loop schedules (intended send times), the
//! per-worker recorder (per-class HdrHistograms and counters, merged once at the end),
//! thread CPU time, and the merge into a `LoadOutcome`.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::Rng;

use crate::load::{ClassStats, LoadOutcome, LoadShape, LoadSpec, Outcome, CHECKPOINT_EVERY};
use crate::workload::{CheckpointSink, Progress};

/// A send later than this after its intended time counts as late (open loop), and a
/// request due within it of the end of sending is not counted unsent.
pub(crate) const LATE_NS: u64 = 1_000_000;

/// Beyond this many requests due, [`Schedule::count_unsent`] counts by arithmetic.
const ARITHMETIC_UNSENT: f64 = 1e7;

/// Intended send times of an open-loop worker, as nanoseconds from the worker's start.
/// t_i = i / R (constant) or t_{i+1} = t_i + Exp(1/R) (Poisson); never derived from
/// completions (METHODS.md 2.5).
#[derive(Clone)]
pub(crate) struct Schedule {
    gap_ns: f64,
    poisson: bool,
    next_ns: f64,
}

impl Schedule {
    /// The schedule of worker `index` of `threads`, each offering an equal share of the
    /// offered rate (requests/s), in a generator at `phase` (0 <= phase < 1) among the
    /// test's generators. None for closed loop.
    ///
    /// A constant rate's workers (and generators) start at staggered times, so that
    /// together they send one request every 1/R, not `threads` at once every
    /// `threads`/R: worker k's first send is (k + phase)/threads of its gap after the
    /// start. Poisson workers start together: independent Poisson streams add up to one.
    pub(crate) fn new(
        shape: LoadShape,
        index: usize,
        threads: usize,
        phase: f64,
    ) -> Option<Schedule> {
        let share = 1.0 / threads.max(1) as f64;
        let (rate, poisson) = match shape {
            LoadShape::Closed => return None,
            LoadShape::Constant { rate } => (rate * share, false),
            LoadShape::Poisson { rate } => (rate * share, true),
        };
        let gap_ns = if rate > 0.0 {
            1e9 / rate
        } else {
            f64::INFINITY
        };
        let next_ns = if poisson || !gap_ns.is_finite() {
            0.0
        } else {
            gap_ns * (index as f64 + phase.clamp(0.0, 1.0)) * share
        };
        Some(Schedule {
            gap_ns,
            poisson,
            next_ns,
        })
    }

    /// The next intended send time (ns from start) without consuming it.
    pub(crate) fn peek(&self) -> f64 {
        self.next_ns
    }

    /// Requests that fell due and were never sent, once sending stopped at `until_ns`:
    /// the schedule is consumed up to it, and those intended at or after `from_ns` (the
    /// end of warm-up) and more than `grace_ns` before `until_ns` are counted. One due
    /// within the grace would not have been late had it gone out (a send is late past
    /// the same grace): the loop had not woken for it yet.
    pub(crate) fn count_unsent(
        &mut self,
        rng: &mut SmallRng,
        from_ns: u64,
        until_ns: u64,
        grace_ns: u64,
    ) -> u64 {
        // Far behind (a rate no generator offers: 1e12/s), by arithmetic: one step per
        // due request took minutes, and held the test past a stop (acceptance pass E,
        // 4). A Poisson schedule's count there is its mean, within 0.03% of a draw's.
        let due = (until_ns as f64 - self.next_ns) / self.gap_ns;
        if due > ARITHMETIC_UNSENT && due.is_finite() {
            let lo = (from_ns as f64).max(self.next_ns);
            let hi = until_ns.saturating_sub(grace_ns) as f64;
            let first = ((lo - self.next_ns) / self.gap_ns).ceil();
            let end = ((hi - self.next_ns) / self.gap_ns).ceil();
            self.next_ns += due.ceil() * self.gap_ns;
            return (end - first).max(0.0) as u64;
        }
        let mut n = 0;
        while self.next_ns.is_finite() && (self.next_ns as u64) < until_ns {
            let t = self.advance(rng);
            if t >= from_ns && t.saturating_add(grace_ns) < until_ns {
                n += 1;
            }
        }
        n
    }

    /// What [`Schedule::count_unsent`] would count were sending stopped at `until_ns`,
    /// counted on a copy of the schedule and of `rng`: this one goes on as it was. For a
    /// checkpoint's copy of the recorder (once a period, off the per-request path).
    pub(crate) fn unsent_so_far(
        &self,
        rng: &SmallRng,
        from_ns: u64,
        until_ns: u64,
        grace_ns: u64,
    ) -> u64 {
        let mut s = self.clone();
        s.count_unsent(&mut rng.clone(), from_ns, until_ns, grace_ns)
    }

    /// Consume the current intended time and draw the next.
    pub(crate) fn advance(&mut self, rng: &mut SmallRng) -> u64 {
        let t = self.next_ns;
        let gap = if self.poisson {
            // Exponential gap by inversion; 1-u is in (0,1] so ln is finite.
            -self.gap_ns * (1.0 - rng.gen::<f64>()).ln()
        } else {
            self.gap_ns
        };
        self.next_ns += gap;
        t as u64
    }
}

/// A worker's copy of its recorder at a checkpoint, `at_ns` after the warm-up's end; or,
/// `done`, its last word: the recorder it ended with (None when it has none to give: it
/// failed or panicked), all it will ever count.
pub(crate) struct Snapshot {
    pub worker: usize,
    pub at_ns: u64,
    pub rec: Option<Recorder>,
    pub done: bool,
}

impl Snapshot {
    /// Worker `worker`'s copy of `rec` now, `since_ns` after the warm-up's end (its CPU
    /// read to now, and `unsent` more requests unsent: an open loop's due and not sent
    /// yet, which the end counts once sending stops), and when it takes its next: the
    /// next multiple of [`CHECKPOINT_EVERY`] after the warm-up's end `warm_ns` (a round
    /// that came late for one takes it late, once), on the executor's clock.
    pub(crate) fn take(
        worker: usize,
        warm_ns: u64,
        since_ns: u64,
        rec: &Recorder,
        unsent: u64,
    ) -> (Self, u64) {
        let every = CHECKPOINT_EVERY.as_nanos() as u64;
        let next = warm_ns.saturating_add((since_ns / every + 1).saturating_mul(every));
        let mut rec = rec.clone();
        rec.cpu_end = thread_cpu();
        rec.unsent += unsent;
        (
            Snapshot {
                worker,
                at_ns: since_ns,
                rec: Some(rec),
                done: false,
            },
            next,
        )
    }
}

/// Tells the checkpointer a worker is done, whichever way it ends: [`Finish::last`]
/// with the recorder it ended with, or, dropped without (the worker returned an error or
/// panicked), with none. Held by the code that spawns the worker, so that the worker's
/// loop carries nothing for it.
pub(crate) struct Finish {
    tx: Option<std::sync::mpsc::Sender<Snapshot>>,
    worker: usize,
}

impl Finish {
    pub(crate) fn new(tx: Option<std::sync::mpsc::Sender<Snapshot>>, worker: usize) -> Self {
        Finish { tx, worker }
    }

    /// The worker ended with the recorder `rec` makes (its CPU read to its end
    /// already): made only when a checkpointer takes it, since it is a copy of the
    /// worker's histograms.
    pub(crate) fn last(mut self, rec: impl FnOnce() -> Recorder) {
        if self.tx.is_some() {
            self.send(Some(rec()));
        }
    }

    fn send(&mut self, rec: Option<Recorder>) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Snapshot {
                worker: self.worker,
                at_ns: 0,
                rec,
                done: true,
            });
        }
    }
}

impl Drop for Finish {
    fn drop(&mut self) {
        self.send(None);
    }
}

/// The checkpointer's state: each live worker's copy since the last merge, and each done
/// worker's last recorder.
///
/// The rule: a merge is taken once every worker still running has sent a copy since the
/// last merge (at least one is running: with none, the outcome itself is near). A done
/// worker is not waited for: its last recorder is in every later merge, as it is in the
/// end's, since its counts are all it will make (over the window to the checkpoint, they
/// are what it did). The window is the mean of the running workers' copy times: each
/// one's counts are over its own time to its copy, so the counts summed over the mean
/// time are the sum of the workers' rates where they ran alike, and a done worker's
/// whole count over it is its rate over the window. (An oltp session copies at the top
/// of a round that can last 30 s: over the latest copy's time, the others' older counts
/// read 10-15% low; and a session done after the mean of the copies' times adds the
/// counts it made past it, at most a round's.)
pub(crate) struct Copies {
    fresh: Vec<Option<Snapshot>>,
    /// Some once the worker is done: its last recorder, if it gave one.
    done: Vec<Option<Option<Recorder>>>,
}

impl Copies {
    pub(crate) fn new(workers: usize) -> Self {
        Copies {
            fresh: (0..workers).map(|_| None).collect(),
            done: (0..workers).map(|_| None).collect(),
        }
    }

    /// Take `s`; when it completes a round, the recorders to merge and their window, ns
    /// after the warm-up's end.
    pub(crate) fn take(&mut self, s: Snapshot) -> Option<(Vec<Recorder>, u64)> {
        let w = s.worker;
        if w >= self.fresh.len() || self.done[w].is_some() {
            return None;
        }
        if s.done {
            self.fresh[w] = None;
            self.done[w] = Some(s.rec);
        } else {
            self.fresh[w] = Some(s);
        }
        let live: Vec<usize> = (0..self.fresh.len())
            .filter(|&w| self.done[w].is_none())
            .collect();
        if live.is_empty() || live.iter().any(|&w| self.fresh[w].is_none()) {
            return None;
        }
        let snaps: Vec<Snapshot> = live.iter().filter_map(|&w| self.fresh[w].take()).collect();
        let at_ns = (snaps.iter().map(|s| u128::from(s.at_ns)).sum::<u128>()
            / snaps.len().max(1) as u128) as u64;
        let mut recs: Vec<Recorder> = snaps.into_iter().filter_map(|s| s.rec).collect();
        recs.extend(self.done.iter().flatten().flatten().cloned());
        Some((recs, at_ns))
    }
}

/// Merge the workers' copies by the rule of [`Copies`], as their recorders are merged at
/// the end, and hand the outcome to `sink`: what this generator measured up to the
/// checkpoint, over its window from the end of warm-up to it. Runs on a thread of its
/// own, so that the merge (and whatever the sink does with it: a frame to the
/// controller) costs the workers nothing but the copy. Both executors' (stream and
/// sessions); each worker's [`Finish`] says when it is done.
pub(crate) fn checkpointer(
    spec: &LoadSpec,
    class_names: &[&str],
    threads: usize,
    rx: std::sync::mpsc::Receiver<Snapshot>,
    sink: &CheckpointSink,
    progress: &Progress,
) {
    let mut copies = Copies::new(threads);
    while let Ok(s) = rx.recv() {
        if let Some((recs, at_ns)) = copies.take(s) {
            let so_far = merge(spec, class_names, recs, at_ns as f64 / 1e9, None);
            sink.hand(
                progress
                    .generator
                    .load(std::sync::atomic::Ordering::Relaxed),
                so_far,
            );
        }
    }
}

/// One worker's measurements; merged with the others once at the end (and copied at
/// each checkpoint).
#[derive(Clone)]
pub(crate) struct Recorder {
    pub classes: Vec<ClassStats>,
    pub intervals: Vec<u64>,
    pub interval_ns: u64,
    pub connection_errors: BTreeMap<String, u64>,
    pub lost_requests: BTreeMap<String, u64>,
    pub late_sends: u64,
    pub unsent: u64,
    pub reconnects: u64,
    /// How long each connection opened during the test took to connect; None until one
    /// is (a latency histogram is 270 KB to zero: a keep-alive test needs none).
    pub connect: Option<Histogram<u64>>,
    pub bytes_tx: u64,
    pub bytes_rx: u64,
    pub first_ns: Option<u64>,
    pub last_ns: u64,
    pub cpu_start: (f64, f64),
    pub cpu_end: (f64, f64),
    /// Why this worker ran on epoll when io_uring was wanted (`auto`).
    pub io_fallback: Option<String>,
}

impl Recorder {
    pub(crate) fn new(n_classes: usize, open_loop: bool, interval: Duration) -> Recorder {
        Recorder {
            classes: (0..n_classes)
                .map(|_| ClassStats::new("", open_loop))
                .collect(),
            intervals: Vec::new(),
            interval_ns: interval.as_nanos().max(1) as u64,
            connection_errors: BTreeMap::new(),
            lost_requests: BTreeMap::new(),
            late_sends: 0,
            unsent: 0,
            reconnects: 0,
            connect: None,
            bytes_tx: 0,
            bytes_rx: 0,
            first_ns: None,
            last_ns: 0,
            cpu_start: (0.0, 0.0),
            cpu_end: (0.0, 0.0),
            io_fallback: None,
        }
    }

    /// Record one reply. Times are ns since the common measurement origin (end of
    /// warm-up); `intended_ns` is only used in open loop.
    #[inline]
    pub(crate) fn record(
        &mut self,
        class: usize,
        outcome: Outcome,
        sent_ns: u64,
        intended_ns: u64,
        done_ns: u64,
    ) {
        self.record_n(class, outcome, sent_ns, intended_ns, done_ns, 1);
    }

    /// Record `n` replies with the same class, outcome and times: a pipeline's requests
    /// leave in one write and their replies arrive in one read, so their latencies are
    /// equal, and one histogram update with a count is exactly `n` updates of one.
    #[inline]
    pub(crate) fn record_n(
        &mut self,
        class: usize,
        outcome: Outcome,
        sent_ns: u64,
        intended_ns: u64,
        done_ns: u64,
        n: u64,
    ) {
        let latency = (
            done_ns.saturating_sub(sent_ns),
            done_ns.saturating_sub(intended_ns),
        );
        self.tally(class, outcome, Some(latency), done_ns, n);
    }

    /// Record `n` replies done at `done_ns` whose latency the caller measured:
    /// `latency` is (service, corrected) in ns, None when there is none (nothing was sent).
    #[inline]
    pub(crate) fn tally(
        &mut self,
        class: usize,
        outcome: Outcome,
        latency: Option<(u64, u64)>,
        done_ns: u64,
        n: u64,
    ) {
        let Some(c) = self.classes.get_mut(class) else {
            return;
        };
        c.count += n;
        match outcome {
            Outcome::Ok => c.ok += n,
            Outcome::Hit => {
                c.ok += n;
                c.hits += n
            }
            Outcome::Miss => {
                c.ok += n;
                c.misses += n
            }
            Outcome::Mismatch => c.mismatches += n,
            Outcome::Rollback => c.rollbacks += n,
            Outcome::Error(kind) => *c.errors.entry(kind).or_insert(0) += n,
        }
        if let Some((service_ns, corrected_ns)) = latency {
            c.service.saturating_record_n(service_ns.max(1), n);
            if let Some(h) = c.corrected.as_mut() {
                h.saturating_record_n(corrected_ns.max(1), n);
            }
        }
        let idx = (done_ns / self.interval_ns) as usize;
        if idx >= self.intervals.len() {
            self.intervals.resize(idx + 1, 0);
        }
        self.intervals[idx] += n;
        if self.first_ns.is_none() {
            self.first_ns = Some(done_ns);
        }
        self.last_ns = self.last_ns.max(done_ns);
    }

    /// One connection opened during the test, `took` from the connect call to the
    /// connection established: once per connect, never per request.
    pub(crate) fn connected(&mut self, took: Duration) {
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX).max(1);
        self.connect
            .get_or_insert_with(model::hist::new_latency_histogram)
            .saturating_record(ns);
    }

    /// One connection failure (the failure itself, not the requests it lost).
    pub(crate) fn connection_error(&mut self, what: String) {
        *self.connection_errors.entry(what).or_insert(0) += 1;
    }

    /// `n` measured requests whose reply will never come, because of `why`.
    pub(crate) fn lost_requests(&mut self, why: &str, n: u64) {
        if n > 0 {
            *self.lost_requests.entry(why.to_string()).or_insert(0) += n;
        }
    }
}

/// CPU time (user, system) of the calling thread, seconds.
pub(crate) fn thread_cpu() -> (f64, f64) {
    // SAFETY: getrusage fills a plain struct.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_THREAD, &mut ru) != 0 {
            return (0.0, 0.0);
        }
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        (tv(ru.ru_utime), tv(ru.ru_stime))
    }
}

/// Merge the workers' recorders into one outcome (histograms added exactly).
pub(crate) fn merge(
    spec: &LoadSpec,
    class_names: &[&str],
    recorders: Vec<Recorder>,
    measured_s: f64,
    stopped_early: Option<String>,
) -> LoadOutcome {
    let open = spec.shape != LoadShape::Closed;
    // The first worker's classes, named, are the sum the others are added to (one
    // latency histogram fewer to zero per class; most runs have one worker).
    let mut classes: Vec<ClassStats> = Vec::new();
    let mut intervals: Vec<u64> = Vec::new();
    let mut out = LoadOutcome {
        classes: Vec::new(),
        duration_s: measured_s,
        interval_rates: Vec::new(),
        offered_rate: spec.shape.offered_rate(),
        late_sends: 0,
        unsent_requests: 0,
        connection_errors: BTreeMap::new(),
        lost_requests: BTreeMap::new(),
        reconnects: 0,
        connect: None,
        bytes_tx: 0,
        bytes_rx: 0,
        loadgen_cpu_user_s: 0.0,
        loadgen_cpu_sys_s: 0.0,
        stopped_early,
        client_io_fallback: None,
    };
    let interval_s = spec.interval.as_secs_f64().max(1e-9);
    for mut r in recorders {
        // Taken only when shaped as a fresh sum would be (a panicked session's stand-in
        // recorder is closed-loop whatever the run).
        let fits = r.classes.len() == class_names.len()
            && r.classes.iter().all(|c| c.corrected.is_some() == open);
        if classes.is_empty() && fits {
            classes = std::mem::take(&mut r.classes);
            for (c, n) in classes.iter_mut().zip(class_names) {
                c.name = n.to_string();
            }
        } else {
            if classes.is_empty() {
                classes = fresh_classes(class_names, open);
            }
            for (dst, src) in classes.iter_mut().zip(&r.classes) {
                dst.add(src);
            }
        }
        if r.intervals.len() > intervals.len() {
            intervals.resize(r.intervals.len(), 0);
        }
        for (i, v) in r.intervals.iter().enumerate() {
            intervals[i] += v;
        }
        for (k, v) in r.connection_errors {
            *out.connection_errors.entry(k).or_insert(0) += v;
        }
        for (k, v) in r.lost_requests {
            *out.lost_requests.entry(k).or_insert(0) += v;
        }
        out.late_sends += r.late_sends;
        out.unsent_requests += r.unsent;
        out.reconnects += r.reconnects;
        add_connect(&mut out.connect, r.connect);
        out.bytes_tx += r.bytes_tx;
        out.bytes_rx += r.bytes_rx;
        out.loadgen_cpu_user_s += (r.cpu_end.0 - r.cpu_start.0).max(0.0);
        out.loadgen_cpu_sys_s += (r.cpu_end.1 - r.cpu_start.1).max(0.0);
        if out.client_io_fallback.is_none() {
            out.client_io_fallback = r.io_fallback;
        }
    }
    // Full intervals only: the last, partial interval would read low.
    let full = ((measured_s / interval_s).floor() as usize).min(intervals.len());
    out.interval_rates = intervals[..full]
        .iter()
        .map(|&n| n as f64 / interval_s)
        .collect();
    out.classes = if classes.is_empty() {
        fresh_classes(class_names, open)
    } else {
        classes
    };
    out
}

/// Add one worker's (or generator's) connect times to the sum: the first taken whole.
pub(crate) fn add_connect(sum: &mut Option<Histogram<u64>>, more: Option<Histogram<u64>>) {
    match (sum.as_mut(), more) {
        (Some(s), Some(m)) => {
            // Same bounds everywhere, so add cannot fail; saturate rather than panic.
            let _ = s.add(&m);
        }
        (None, m) => *sum = m,
        (_, None) => {}
    }
}

fn fresh_classes(class_names: &[&str], open: bool) -> Vec<ClassStats> {
    class_names
        .iter()
        .map(|n| ClassStats::new(n, open))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// What fell due and was never sent: from the end of warm-up, and not within the
    /// grace before sending stopped (the loop had not woken for it yet; sent then, it
    /// would not have been late). The schedule is consumed up to the stop either way.
    #[test]
    fn unsent_requests_are_those_due_before_the_grace() {
        let mut rng = SmallRng::seed_from_u64(1);
        let shape = LoadShape::Constant { rate: 1000.0 };
        // Due at 0, 1, ..., 10 ms; stopped at 10.5 ms with a 1 ms grace: 0..=9 ms.
        let mut s = Schedule::new(shape, 0, 1, 0.0).unwrap();
        assert_eq!(s.count_unsent(&mut rng, 0, 10_500_000, 1_000_000), 10);
        assert_eq!(s.peek(), 11_000_000.0);
        // Warm-up to 3 ms: 3..=9 ms. No grace: 3..=10 ms.
        let mut s = Schedule::new(shape, 0, 1, 0.0).unwrap();
        assert_eq!(
            s.count_unsent(&mut rng, 3_000_000, 10_500_000, 1_000_000),
            7
        );
        let mut s = Schedule::new(shape, 0, 1, 0.0).unwrap();
        assert_eq!(s.count_unsent(&mut rng, 3_000_000, 10_500_000, 0), 8);
        // Sending stopped before anything fell due.
        let mut s = Schedule::new(shape, 0, 1, 0.0).unwrap();
        s.advance(&mut rng);
        assert_eq!(s.count_unsent(&mut rng, 0, 500_000, 1_000_000), 0);
    }

    /// A checkpoint's count of what is due and unsent is the end's count had sending
    /// stopped there, and leaves the schedule as it was (the loop goes on with it).
    #[test]
    fn unsent_so_far_is_counted_on_a_copy() {
        let rng = SmallRng::seed_from_u64(1);
        let s = Schedule::new(LoadShape::Constant { rate: 1000.0 }, 0, 1, 0.0).unwrap();
        assert_eq!(s.unsent_so_far(&rng, 0, 10_500_000, 1_000_000), 10);
        assert_eq!(s.unsent_so_far(&rng, 0, 10_500_000, 1_000_000), 10);
        assert_eq!(s.peek(), 0.0);
        let p = Schedule::new(LoadShape::Poisson { rate: 1000.0 }, 0, 1, 0.0).unwrap();
        let once = p.unsent_so_far(&rng, 0, 1_000_000_000, 1_000_000);
        assert_eq!(once, p.unsent_so_far(&rng, 0, 1_000_000_000, 1_000_000));
        assert!((900..1100).contains(&once), "{once}");
    }

    /// Far behind, the count is arithmetic, as the loop would give it: 1e12/s for 2 s
    /// stepped through two trillion due requests (acceptance pass E, 4); here at once.
    #[test]
    fn far_behind_the_unsent_are_counted_without_a_step_per_request() {
        let mut rng = SmallRng::seed_from_u64(1);
        // 1e9/s: 1 ns apart. 2 s, warm-up to 0.5 s, 1 ms grace.
        let shape = LoadShape::Constant { rate: 1e9 };
        let mut s = Schedule::new(shape, 0, 1, 0.0).unwrap();
        let n = s.count_unsent(&mut rng, 500_000_000, 2_000_000_000, 1_000_000);
        assert_eq!(n, 1_499_000_000);
        assert!(s.peek() >= 2e9 && s.peek() < 2e9 + 2.0, "{}", s.peek());
        let mut s = Schedule::new(LoadShape::Constant { rate: 1e12 }, 0, 1, 0.0).unwrap();
        let t = std::time::Instant::now();
        let n = s.count_unsent(&mut rng, 0, 2_000_000_000, 1_000_000);
        assert!(t.elapsed() < std::time::Duration::from_secs(1));
        assert!((n as f64 - 1.999e12).abs() < 1e3, "{n}");
        // Just under the threshold, the loop and the arithmetic agree.
        let rate = 4e9;
        let (from, until, grace) = (1_000_000, 2_400_000, 1_000);
        let mut looped = Schedule::new(LoadShape::Constant { rate }, 0, 1, 0.3).unwrap();
        let by_loop = looped.count_unsent(&mut rng, from, until, grace);
        let mut s = Schedule::new(LoadShape::Constant { rate }, 0, 1, 0.3).unwrap();
        let due = (until as f64 - s.next_ns) / s.gap_ns;
        assert!(due < ARITHMETIC_UNSENT);
        let lo = (from as f64).max(s.next_ns);
        let first = ((lo - s.next_ns) / s.gap_ns).ceil();
        let end = (((until - grace) as f64 - s.next_ns) / s.gap_ns).ceil();
        assert_eq!(by_loop, (end - first) as u64);
        s.next_ns += due.ceil() * s.gap_ns;
        assert!((s.peek() - looped.peek()).abs() < 1.0);
    }

    /// A constant rate spread over workers and generators is one request every 1/R
    /// from them all, not a burst of one per worker every workers/R; Poisson workers
    /// start together (their sum is Poisson however they start).
    #[test]
    fn constant_rate_workers_are_staggered() {
        let mut rng = SmallRng::seed_from_u64(1);
        let rate = 100_000.0;
        let shape = LoadShape::Constant { rate };
        let (threads, generators) = (16, 3);
        let mut times = Vec::new();
        for g in 0..generators {
            for k in 0..threads {
                // Each generator offers a third of the rate over its 16 workers.
                let shape = LoadShape::Constant {
                    rate: rate / generators as f64,
                };
                let mut s = Schedule::new(shape, k, threads, g as f64 / generators as f64).unwrap();
                times.extend((0..50).map(|_| s.advance(&mut rng)));
            }
        }
        times.sort_unstable();
        let gaps: Vec<u64> = times.windows(2).map(|w| w[1] - w[0]).collect();
        let want = 1e9 / rate;
        assert!(
            gaps.iter().all(|&g| (g as f64 - want).abs() <= 1.0),
            "gaps {:?}",
            &gaps[..20]
        );
        // One worker: its first send at the start.
        assert_eq!(Schedule::new(shape, 0, 1, 0.0).unwrap().peek(), 0.0);
        let poisson = LoadShape::Poisson { rate };
        assert!(
            (0..threads).all(|k| Schedule::new(poisson, k, threads, 0.5).unwrap().peek() == 0.0)
        );
    }

    /// Merging takes the first worker's classes as the sum: with one worker or several,
    /// open or closed loop, the merge names the classes and holds exactly every
    /// worker's counts and latencies; a closed-loop stand-in (a panicked session's) first
    /// in an open-loop run leaves the others' corrected latencies in.
    #[test]
    fn a_merge_is_the_exact_sum_of_its_workers() {
        for open in [false, true] {
            let spec = LoadSpec {
                shape: if open {
                    LoadShape::Constant { rate: 1_000.0 }
                } else {
                    LoadShape::Closed
                },
                ..LoadSpec::default()
            };
            let worker = |base: u64| {
                let mut r = Recorder::new(2, open, Duration::from_millis(10));
                for i in 0..50 {
                    r.record(i % 2, Outcome::Ok, 1_000, 900, base + i as u64 * 7_000);
                }
                r
            };
            let mut expect = model::hist::new_latency_histogram();
            for base in [20_000, 90_000] {
                for r in worker(base).classes {
                    expect.add(&r.service).unwrap();
                }
            }
            let one = merge(&spec, &["get", "set"], vec![worker(20_000)], 1.0, None);
            assert_eq!(
                one.classes
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>(),
                ["get", "set"]
            );
            assert_eq!(one.total_count(), 50);
            let two = merge(
                &spec,
                &["get", "set"],
                vec![worker(20_000), worker(90_000)],
                1.0,
                None,
            );
            assert_eq!(two.total_count(), 100);
            let mut got = model::hist::new_latency_histogram();
            for c in &two.classes {
                got.add(&c.service).unwrap();
                assert_eq!(c.corrected.is_some(), open);
            }
            assert_eq!(got, expect);
            if open {
                let stand_in = Recorder::new(2, false, Duration::from_millis(10));
                let m = merge(
                    &spec,
                    &["get", "set"],
                    vec![stand_in, worker(20_000)],
                    1.0,
                    None,
                );
                let corrected: u64 = m
                    .classes
                    .iter()
                    .map(|c| c.corrected.as_ref().unwrap().len())
                    .sum();
                assert_eq!(corrected, 50);
            }
        }
    }

    /// A recorder of `n` replies.
    fn replies(n: u64) -> Recorder {
        let mut r = Recorder::new(1, false, Duration::from_secs(1));
        r.record_n(0, Outcome::Ok, 0, 0, 1_000, n);
        r
    }

    fn copy(worker: usize, at_s: u64, n: u64) -> Snapshot {
        Snapshot {
            worker,
            at_ns: at_s * 1_000_000_000,
            rec: Some(replies(n)),
            done: false,
        }
    }

    fn done(worker: usize, rec: Option<Recorder>) -> Snapshot {
        Snapshot {
            worker,
            at_ns: 0,
            rec,
            done: true,
        }
    }

    /// What a merge of `copies` holds: (requests, window in seconds).
    fn merged(m: Option<(Vec<Recorder>, u64)>) -> Option<(u64, u64)> {
        m.map(|(recs, at_ns)| {
            let n = recs.iter().map(|r| r.classes[0].count).sum();
            (n, at_ns / 1_000_000_000)
        })
    }

    /// A merge once every running worker has copied since the last; a worker done (its
    /// share sent, failed, panicked) is not waited for, and its last recorder is in
    /// every later merge, over the running workers' window; with none running, none.
    #[test]
    fn a_done_worker_is_merged_by_its_last_recorder_without_a_wait() {
        let mut c = Copies::new(3);
        assert_eq!(merged(c.take(copy(0, 5, 10))), None);
        assert_eq!(merged(c.take(copy(1, 5, 20))), None);
        assert_eq!(merged(c.take(copy(2, 7, 30))), Some((60, 5)));
        // Worker 2 is done with 40 before its next copy: the round completes without it.
        assert_eq!(merged(c.take(copy(0, 10, 100))), None);
        assert_eq!(merged(c.take(done(2, Some(replies(40))))), None);
        assert_eq!(merged(c.take(copy(1, 10, 200))), Some((340, 10)));
        // And in the next, though it sends nothing more; a panicked one has no recorder.
        assert_eq!(merged(c.take(done(1, None))), None);
        assert_eq!(merged(c.take(copy(0, 15, 150))), Some((190, 15)));
        // Once every worker is done, the outcome itself comes: no merge.
        assert_eq!(merged(c.take(done(0, Some(replies(160))))), None);
        // A worker done before its first copy, and one out of range, change nothing.
        let mut c = Copies::new(2);
        assert_eq!(merged(c.take(done(1, Some(replies(7))))), None);
        assert_eq!(merged(c.take(copy(5, 5, 1))), None);
        assert_eq!(merged(c.take(copy(0, 5, 10))), Some((17, 5)));
    }

    /// A finished worker's [`Finish`] tells the checkpointer with its recorder, and one
    /// dropped without (the worker failed or panicked) with none; with no checkpointer,
    /// nothing.
    #[test]
    fn finish_says_done_either_way() {
        let (tx, rx) = std::sync::mpsc::channel();
        Finish::new(Some(tx.clone()), 1).last(|| replies(3));
        drop(Finish::new(Some(tx), 2));
        Finish::new(None, 3).last(|| replies(1));
        let got: Vec<(usize, bool, Option<u64>)> = rx
            .iter()
            .map(|s| (s.worker, s.done, s.rec.map(|r| r.classes[0].count)))
            .collect();
        assert_eq!(got, [(1, true, Some(3)), (2, true, None)]);
    }

    /// Recording a pipeline's alike replies once with their count is exactly recording
    /// each: the same counts, outcomes, histogram, intervals and times.
    #[test]
    fn record_n_is_n_records() {
        let mut one = Recorder::new(2, true, Duration::from_millis(10));
        let mut many = Recorder::new(2, true, Duration::from_millis(10));
        for _ in 0..7 {
            one.record(1, Outcome::Hit, 1_000, 900, 25_000_000);
        }
        one.record(0, Outcome::Error("OOM".into()), 5, 5, 31_000_000);
        many.record_n(1, Outcome::Hit, 1_000, 900, 25_000_000, 7);
        many.record_n(0, Outcome::Error("OOM".into()), 5, 5, 31_000_000, 1);
        for (a, b) in one.classes.iter().zip(&many.classes) {
            assert_eq!(
                (a.count, a.ok, a.hits, &a.errors),
                (b.count, b.ok, b.hits, &b.errors)
            );
            assert_eq!(a.service, b.service);
            assert_eq!(a.corrected, b.corrected);
        }
        assert_eq!(one.intervals, many.intervals);
        assert_eq!((one.first_ns, one.last_ns), (many.first_ns, many.last_ns));
    }
}
