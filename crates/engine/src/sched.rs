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
        Schedule::of_share(shape, 1.0 / threads.max(1) as f64, index, threads, phase)
    }

    /// As [`Schedule::new`], the worker offering `share` of the rate (0 to 1): its share
    /// of the test's connections, where workers hold unequal numbers of them.
    pub(crate) fn of_share(
        shape: LoadShape,
        share: f64,
        index: usize,
        threads: usize,
        phase: f64,
    ) -> Option<Schedule> {
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
            gap_ns * (index as f64 + phase.clamp(0.0, 1.0)) / threads.max(1) as f64
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

    /// Drop, unsent, every intended time before `until_ns`: at the end of the warm-up,
    /// the warm-up's backlog. An open loop past what the server can do fell behind in the
    /// warm-up; had the measured window begun by sending that backlog first, every reply
    /// in it would have been a warm-up request's, in no count (a server answering 64,000
    /// requests/s was reported at 0 req/s, the ramp's steps falling as demand rose). The
    /// window starts as a schedule of its own would, on a server and connections already
    /// warm, and a request measured is one due in it (METHODS.md 2.5's latency from its
    /// intended time).
    pub(crate) fn skip_until(&mut self, rng: &mut SmallRng, until_ns: u64) {
        self.count_unsent(rng, until_ns, until_ns, 0);
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
    pub rec: Option<RecorderCopy>,
    pub done: bool,
}

/// A worker's recorder as it crosses to the checkpointer: its counts, and of each
/// latency histogram the buckets it recorded (tens to hundreds of its some 34,000). A
/// whole copy of a session's recorder is 270 KB per transaction class, and an oltp run's
/// sessions copy at the same moment: 200 of them held 400 MB more in flight at their
/// peak (debug build, 790 MB against 390 MB for a run too short for a checkpoint).
pub(crate) struct RecorderCopy {
    /// The recorder, its histograms empty stand-ins of the smallest size.
    pub rest: Recorder,
    /// Each class's service and corrected latencies, and the connect times, as their
    /// recorded (value, count) pairs.
    hists: Vec<(Recorded, Option<Recorded>)>,
    connect: Option<Recorded>,
}

/// A latency histogram's recorded buckets: (a value of the bucket, its count).
type Recorded = Vec<(u64, u64)>;

fn recorded(h: &Histogram<u64>) -> Recorded {
    h.iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect()
}

/// Add `pairs` to `h`, whose bounds are those they were read from: each bucket gets its
/// count, and the minimum and maximum come out as the source's at its resolution.
fn add_recorded(h: &mut Histogram<u64>, pairs: &Recorded) {
    for &(v, n) in pairs {
        // Same bounds: cannot fail.
        let _ = h.record_n(v, n);
    }
}

impl RecorderCopy {
    pub(crate) fn of(rec: &Recorder) -> RecorderCopy {
        let stand_in = || Histogram::<u64>::new(1).expect("a histogram of 1 digit");
        let classes = rec
            .classes
            .iter()
            .map(|c| ClassStats {
                name: c.name.clone(),
                errors: c.errors.clone(),
                service: stand_in(),
                corrected: c.corrected.as_ref().map(|_| stand_in()),
                // The counts.
                ..*c
            })
            .collect();
        RecorderCopy {
            rest: Recorder {
                classes,
                intervals: rec.intervals.clone(),
                connection_errors: rec.connection_errors.clone(),
                lost_requests: rec.lost_requests.clone(),
                connect: None,
                io_fallback: rec.io_fallback.clone(),
                ..*rec
            },
            hists: rec
                .classes
                .iter()
                .map(|c| (recorded(&c.service), c.corrected.as_ref().map(recorded)))
                .collect(),
            connect: rec.connect.as_ref().map(recorded),
        }
    }

    /// Add this copy to the sum `sum` (made, when there is none, as a fresh recorder of
    /// its shape).
    fn add_to(self, sum: &mut Option<Recorder>) {
        let RecorderCopy {
            rest,
            hists,
            connect,
        } = self;
        let open = rest.classes.iter().any(|c| c.corrected.is_some());
        let sum = sum.get_or_insert_with(|| {
            Recorder::new(
                rest.classes.len(),
                open,
                Duration::from_nanos(rest.interval_ns),
            )
        });
        sum.absorb(rest);
        for (c, (service, corrected)) in sum.classes.iter_mut().zip(&hists) {
            add_recorded(&mut c.service, service);
            if let (Some(h), Some(pairs)) = (c.corrected.as_mut(), corrected) {
                add_recorded(h, pairs);
            }
        }
        if let Some(pairs) = &connect {
            add_recorded(
                sum.connect
                    .get_or_insert_with(model::hist::new_latency_histogram),
                pairs,
            );
        }
    }
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
        let mut rec = RecorderCopy::of(rec);
        rec.rest.cpu_end = thread_cpu();
        rec.rest.unsent += unsent;
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
    pub(crate) fn last(mut self, rec: impl FnOnce() -> RecorderCopy) {
        if self.tx.is_some() {
            self.send(Some(rec()));
        }
    }

    fn send(&mut self, rec: Option<RecorderCopy>) {
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

/// The checkpointer's state: the round under way, summed as its copies come, and the
/// done workers' last recorders, summed.
///
/// The rule: a round is merged once every worker still running has sent its copy to it
/// (at least one is running: with none, the outcome itself is near). A worker's copy
/// that comes while its copy to this round is in already (the others are late: an oltp
/// session copies at the top of a round that can last 30 s) is the first of the next
/// round, a newer one replacing it, so each merge is of the workers' copies of one
/// moment. A done worker is not waited for: its last recorder is in every later merge,
/// as it is in the end's, since its counts are all it will make (over the window to the
/// checkpoint, they are what it did); one done after its copy to this round is in goes
/// by that copy here and by its last recorder from the next. The window is the mean of
/// the round's copy times: each worker's counts are over its own time to its copy, so
/// the counts summed over the mean time are the sum of the workers' rates where they ran
/// alike, and a done worker's whole count over it is its rate over the window.
///
/// Copies are summed as they come, not kept (a session's recorder holds a latency
/// histogram of 270 KB per transaction class).
pub(crate) struct Copies {
    /// The round under way: its copies summed, and the sum of their times.
    round: Option<Recorder>,
    round_ns: u128,
    /// Whether each worker's copy to the round is in (a worker done after it included).
    copied: Vec<bool>,
    /// A worker's newest copy to the next round.
    ahead: Vec<Option<Snapshot>>,
    /// Whether each worker is done; the done workers' last recorders, summed; those done
    /// after their copy to the round under way, until it is merged.
    done: Vec<bool>,
    done_sum: Option<Recorder>,
    done_later: Vec<RecorderCopy>,
}

impl Copies {
    pub(crate) fn new(workers: usize) -> Self {
        Copies {
            round: None,
            round_ns: 0,
            copied: vec![false; workers],
            ahead: (0..workers).map(|_| None).collect(),
            done: vec![false; workers],
            done_sum: None,
            done_later: Vec::new(),
        }
    }

    /// Take `s`; for each round it completes, the recorders to merge and their window,
    /// ns after the warm-up's end: two when a worker done completes a round and every
    /// other's copy to the next had come ahead.
    pub(crate) fn take(&mut self, s: Snapshot) -> Vec<(Vec<Recorder>, u64)> {
        let w = s.worker;
        if w >= self.done.len() || self.done[w] {
            return Vec::new();
        }
        if s.done {
            self.done[w] = true;
            self.ahead[w] = None;
            if let Some(rec) = s.rec {
                if self.copied[w] {
                    self.done_later.push(rec);
                } else {
                    rec.add_to(&mut self.done_sum);
                }
            }
        } else if self.copied[w] {
            self.ahead[w] = Some(s);
        } else {
            self.copy_in(s);
        }
        let mut merges = Vec::new();
        while let Some(m) = self.complete_round() {
            merges.push(m);
        }
        merges
    }

    /// The round's merge when every running worker's copy to it is in (and one is
    /// running), and the next round begun.
    fn complete_round(&mut self) -> Option<(Vec<Recorder>, u64)> {
        let mut live = (0..self.done.len()).filter(|&w| !self.done[w]).peekable();
        if live.peek().is_none() || live.any(|w| !self.copied[w]) {
            return None;
        }
        let copies = self.copied.iter().filter(|&&c| c).count();
        let at_ns = (self.round_ns / copies.max(1) as u128) as u64;
        let mut recs: Vec<Recorder> = self.round.take().into_iter().collect();
        recs.extend(self.done_sum.clone());
        // The next round: the done workers' last recorders in the sum from now on, and
        // the copies that came ahead its first.
        for rec in std::mem::take(&mut self.done_later) {
            rec.add_to(&mut self.done_sum);
        }
        self.round_ns = 0;
        self.copied.iter_mut().for_each(|c| *c = false);
        for w in 0..self.ahead.len() {
            if let Some(s) = self.ahead[w].take() {
                self.copy_in(s);
            }
        }
        Some((recs, at_ns))
    }

    fn copy_in(&mut self, s: Snapshot) {
        self.copied[s.worker] = true;
        self.round_ns += u128::from(s.at_ns);
        if let Some(rec) = s.rec {
            rec.add_to(&mut self.round);
        }
    }
}

/// Add `rec` to the sum `sum` (the first taken whole).
fn absorb_into(sum: &mut Option<Recorder>, rec: Recorder) {
    match sum {
        Some(s) => s.absorb(rec),
        None => *sum = Some(rec),
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
        for (recs, at_ns) in copies.take(s) {
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
    /// Of `late_sends`, the generator's own ([`LoadOutcome::generator_late_sends`]).
    pub generator_late: u64,
    pub unsent: u64,
    pub reconnects: u64,
    /// How long each connection opened during the test took to connect; None until one
    /// is (a latency histogram is 270 KB to zero: a keep-alive test needs none).
    pub connect: Option<Histogram<u64>>,
    pub bytes_tx: u64,
    pub bytes_rx: u64,
    pub first_ns: Option<u64>,
    pub last_ns: u64,
    /// How long after the warm-up's end this worker went on offering load: to when it
    /// stopped sending (its stop, every connection failed, Ctrl-C; never past a timed
    /// test's end). A test measures to its last reply or to this, whichever is later, a
    /// timed closed loop its duration ([`LoadSpec::measured_s`]).
    ///
    /// [`LoadSpec::measured_s`]: crate::load::LoadSpec::measured_s
    pub ran_ns: u64,
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
            generator_late: 0,
            unsent: 0,
            reconnects: 0,
            connect: None,
            bytes_tx: 0,
            bytes_rx: 0,
            first_ns: None,
            last_ns: 0,
            ran_ns: 0,
            cpu_start: (0.0, 0.0),
            cpu_end: (0.0, 0.0),
            io_fallback: None,
        }
    }

    /// Add another worker's recorder to this one, as [`merge`] adds them: counts,
    /// histograms and intervals summed, CPU as the sum of each one's time (this one's
    /// `cpu_end` moved by the other's), the first I/O fallback kept.
    pub(crate) fn absorb(&mut self, r: Recorder) {
        let ((user, sys), (own_user, own_sys)) = (r.cpu_s(), self.cpu_s());
        self.cpu_end = (
            self.cpu_start.0 + own_user + user,
            self.cpu_start.1 + own_sys + sys,
        );
        for (dst, src) in self.classes.iter_mut().zip(&r.classes) {
            dst.add(src);
        }
        if r.intervals.len() > self.intervals.len() {
            self.intervals.resize(r.intervals.len(), 0);
        }
        for (i, v) in r.intervals.iter().enumerate() {
            self.intervals[i] += v;
        }
        for (k, v) in r.connection_errors {
            *self.connection_errors.entry(k).or_insert(0) += v;
        }
        for (k, v) in r.lost_requests {
            *self.lost_requests.entry(k).or_insert(0) += v;
        }
        self.late_sends += r.late_sends;
        self.generator_late += r.generator_late;
        self.unsent += r.unsent;
        self.reconnects += r.reconnects;
        add_connect(&mut self.connect, r.connect);
        self.bytes_tx += r.bytes_tx;
        self.bytes_rx += r.bytes_rx;
        self.first_ns = match (self.first_ns, r.first_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.last_ns = self.last_ns.max(r.last_ns);
        self.ran_ns = self.ran_ns.max(r.ran_ns);
        if self.io_fallback.is_none() {
            self.io_fallback = r.io_fallback;
        }
    }

    /// User and system CPU seconds from `cpu_start` to `cpu_end`, each at least 0.
    fn cpu_s(&self) -> (f64, f64) {
        (
            (self.cpu_end.0 - self.cpu_start.0).max(0.0),
            (self.cpu_end.1 - self.cpu_start.1).max(0.0),
        )
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
    /// equal, and one histogram update with a count is exactly `n` updates of one (the
    /// stream loop tallies them so itself, with latencies from its own clock).
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
    let fresh = || Recorder::new(class_names.len(), open, spec.interval);
    // The first worker's recorder is the sum the others are added to (one latency
    // histogram fewer to zero per class; most runs have one worker), when shaped as a
    // fresh sum would be (a panicked session's stand-in recorder is closed-loop whatever
    // the run).
    let mut sum: Option<Recorder> = None;
    for r in recorders {
        let fits = r.classes.len() == class_names.len()
            && r.classes.iter().all(|c| c.corrected.is_some() == open);
        if sum.is_none() && !fits {
            sum = Some(fresh());
        }
        absorb_into(&mut sum, r);
    }
    let sum = sum.unwrap_or_else(fresh);
    let (user, sys) = sum.cpu_s();
    let interval_s = spec.interval.as_secs_f64().max(1e-9);
    // Full intervals only: the last, partial interval would read low. Every full one
    // counts, those in which no reply came too (the recorder grows only as replies come):
    // a server that stalled for the test's last seconds, or never answered, read as its
    // best intervals alone, or "shorter than one interval" for a 2 s test.
    let full = (measured_s / interval_s).floor().clamp(0.0, 1e7) as usize;
    let mut intervals = sum.intervals;
    intervals.resize(intervals.len().max(full), 0);
    let mut classes = sum.classes;
    for (c, n) in classes.iter_mut().zip(class_names) {
        c.name = n.to_string();
    }
    LoadOutcome {
        classes,
        duration_s: measured_s,
        interval_rates: intervals[..full]
            .iter()
            .map(|&n| n as f64 / interval_s)
            .collect(),
        offered_rate: spec.shape.offered_rate(),
        late_sends: sum.late_sends,
        generator_late_sends: sum.generator_late,
        unsent_requests: sum.unsent,
        connection_errors: sum.connection_errors,
        lost_requests: sum.lost_requests,
        reconnects: sum.reconnects,
        connect: sum.connect,
        bytes_tx: sum.bytes_tx,
        bytes_rx: sum.bytes_rx,
        loadgen_cpu_user_s: user,
        loadgen_cpu_sys_s: sys,
        stopped_early,
        client_io_fallback: sum.io_fallback,
    }
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
            rec: Some(RecorderCopy::of(&replies(n))),
            done: false,
        }
    }

    fn done(worker: usize, rec: Option<Recorder>) -> Snapshot {
        Snapshot {
            worker,
            at_ns: 0,
            rec: rec.as_ref().map(RecorderCopy::of),
            done: true,
        }
    }

    /// What the merges a copy completes hold: (requests, window in seconds) of each.
    fn merges(m: Vec<(Vec<Recorder>, u64)>) -> Vec<(u64, u64)> {
        m.into_iter()
            .map(|(recs, at_ns)| {
                let n = recs.iter().map(|r| r.classes[0].count).sum();
                (n, at_ns / 1_000_000_000)
            })
            .collect()
    }

    /// The one merge a copy completes, if any.
    fn merged(m: Vec<(Vec<Recorder>, u64)>) -> Option<(u64, u64)> {
        let m = merges(m);
        assert!(m.len() <= 1, "{m:?}");
        m.first().copied()
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

    /// Each merge is of one moment: a worker's copy that comes while its copy to the
    /// round is in is the next round's first (a newer one replacing it), and a worker
    /// done after its copy to the round goes by that copy there and by its last recorder
    /// from the next, never by both.
    #[test]
    fn a_copy_ahead_of_the_others_waits_for_the_next_round() {
        let mut c = Copies::new(2);
        assert_eq!(merged(c.take(copy(0, 5, 10))), None);
        assert_eq!(merged(c.take(copy(0, 10, 24))), None);
        assert_eq!(merged(c.take(copy(0, 10, 25))), None);
        assert_eq!(merged(c.take(copy(1, 5, 20))), Some((30, 5)));
        assert_eq!(merged(c.take(copy(1, 10, 40))), Some((65, 10)));
        assert_eq!(merged(c.take(copy(0, 15, 50))), None);
        assert_eq!(merged(c.take(done(0, Some(replies(55))))), None);
        assert_eq!(merged(c.take(copy(1, 15, 60))), Some((110, 15)));
        assert_eq!(merged(c.take(copy(1, 20, 80))), Some((135, 20)));
        // A worker done completes a round while every other's next copy had come ahead:
        // both rounds are merged at once.
        let mut c = Copies::new(3);
        assert_eq!(merged(c.take(copy(0, 5, 10))), None);
        assert_eq!(merged(c.take(copy(1, 5, 20))), None);
        assert_eq!(merged(c.take(copy(0, 10, 30))), None);
        assert_eq!(merged(c.take(copy(1, 10, 40))), None);
        assert_eq!(
            merges(c.take(done(2, Some(replies(50))))),
            [(80, 5), (120, 10)]
        );
    }

    /// A recorder's copy for the checkpointer, added to an empty sum, is the recorder:
    /// counts, errors, intervals, CPU, and every histogram equal (buckets, count, minimum
    /// and maximum), in open loop too; added to a sum with more, it adds as the recorder.
    #[test]
    fn a_copy_adds_up_to_its_recorder() {
        for open in [false, true] {
            let mut r = Recorder::new(2, open, Duration::from_millis(10));
            for i in 0..300u64 {
                let done = 1_000 + i * i * 977;
                r.record((i % 2) as usize, Outcome::Ok, 500, 400, done);
            }
            r.record(1, Outcome::Error("OOM".into()), 5, 5, 31_000_000);
            r.connection_error("reset".into());
            add_connect(&mut r.connect, Some(model::hist::new_latency_histogram()));
            r.connect.as_mut().unwrap().record(123_456).unwrap();
            (r.cpu_start, r.cpu_end) = ((1.0, 2.0), (1.75, 2.5));
            let mut sum = None;
            RecorderCopy::of(&r).add_to(&mut sum);
            let sum = sum.unwrap();
            for (a, b) in r.classes.iter().zip(&sum.classes) {
                assert_eq!((a.count, a.ok, &a.errors), (b.count, b.ok, &b.errors));
                assert_eq!(a.service, b.service);
                assert_eq!(
                    (a.service.min_nz(), a.service.max()),
                    (b.service.min_nz(), b.service.max())
                );
                assert_eq!(a.corrected, b.corrected);
                assert_eq!(b.corrected.is_some(), open);
            }
            assert_eq!(r.intervals, sum.intervals);
            assert_eq!(r.connection_errors, sum.connection_errors);
            assert_eq!(r.connect, sum.connect);
            assert_eq!(r.cpu_s(), sum.cpu_s());
            let mut twice = Some(sum.clone());
            RecorderCopy::of(&r).add_to(&mut twice);
            let twice = twice.unwrap();
            assert_eq!(twice.classes[0].count, 2 * r.classes[0].count);
            assert_eq!(
                twice.classes[0].service.len(),
                2 * r.classes[0].service.len()
            );
            assert_eq!(twice.cpu_s(), (1.5, 1.0));
        }
    }

    /// A recorder absorbed into another merges as the two would: counts, CPU (each one's
    /// own time), intervals and first errors alike.
    #[test]
    fn an_absorbed_recorder_merges_as_the_two_would() {
        let spec = LoadSpec::default();
        let worker = |n: u64, cpu: (f64, f64), at: u64| {
            let mut r = Recorder::new(1, false, Duration::from_secs(1));
            r.record_n(0, Outcome::Ok, 0, 0, at, n);
            r.connection_error("reset".into());
            r.cpu_start = cpu;
            r.cpu_end = (cpu.0 + 1.5, cpu.1 + 0.25);
            r
        };
        let (a, b) = (
            worker(3, (10.0, 1.0), 500_000_000),
            worker(4, (2.0, 7.0), 2_500_000_000),
        );
        let two = merge(&spec, &["get"], vec![a.clone(), b.clone()], 3.0, None);
        let mut sum = a;
        sum.absorb(b);
        let one = merge(&spec, &["get"], vec![sum], 3.0, None);
        assert_eq!(one.total_count(), 7);
        assert_eq!(one.total_count(), two.total_count());
        assert_eq!(one.interval_rates, two.interval_rates);
        assert_eq!(one.connection_errors, two.connection_errors);
        assert_eq!(one.classes[0].service, two.classes[0].service);
        assert!(
            (one.loadgen_cpu_user_s - 3.0).abs() < 1e-9,
            "{}",
            one.loadgen_cpu_user_s
        );
        assert!(
            (one.loadgen_cpu_sys_s - 0.5).abs() < 1e-9,
            "{}",
            one.loadgen_cpu_sys_s
        );
        assert_eq!(
            (one.loadgen_cpu_user_s, one.loadgen_cpu_sys_s),
            (two.loadgen_cpu_user_s, two.loadgen_cpu_sys_s)
        );
    }

    /// A finished worker's [`Finish`] tells the checkpointer with its recorder, and one
    /// dropped without (the worker failed or panicked) with none; with no checkpointer,
    /// nothing.
    #[test]
    fn finish_says_done_either_way() {
        let (tx, rx) = std::sync::mpsc::channel();
        Finish::new(Some(tx.clone()), 1).last(|| RecorderCopy::of(&replies(3)));
        drop(Finish::new(Some(tx), 2));
        Finish::new(None, 3).last(|| RecorderCopy::of(&replies(1)));
        let got: Vec<(usize, bool, Option<u64>)> = rx
            .iter()
            .map(|s| (s.worker, s.done, s.rec.map(|r| r.rest.classes[0].count)))
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
