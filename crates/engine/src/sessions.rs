//! The blocking-session executor: one thread per session (a PostgreSQL connection, a
//! virtual user). Same schedules, stop conditions and recorder as the stream executor,
//! and the same checkpoints when someone wants them: each session compares the clock it
//! reads at the top of each round with its next checkpoint, and at one sends a copy of
//! its recorder to the checkpointer ([`crate::sched::checkpointer`]).

use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc, Barrier};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::SeedableRng;

use crate::load::{
    Executed, Latency, LoadOutcome, LoadShape, LoadSpec, Session, StopAfter, CHECKPOINT_EVERY,
};
use crate::sched::{
    checkpointer, merge, thread_cpu, Finish, Recorder, RecorderCopy, Schedule, Snapshot, LATE_NS,
};
use crate::workload::Progress;

pub(crate) fn run<S: Session + 'static>(
    spec: &LoadSpec,
    class_names: &[&str],
    sessions: Vec<S>,
    progress: &Progress,
) -> anyhow::Result<LoadOutcome> {
    anyhow::ensure!(!sessions.is_empty(), "no sessions to drive");
    let n = sessions.len();
    let barrier = Arc::new(Barrier::new(n));
    // The sessions are connected: now the common start of all generators, if any.
    progress.wait_for_start();
    let t0 = Instant::now();
    let sink = progress.checkpoint_sink();
    let results: Vec<(Recorder, Option<String>)> = std::thread::scope(|scope| {
        let ckpt_tx = sink.map(|sink| {
            let (tx, rx) = mpsc::channel();
            scope.spawn(move || checkpointer(spec, class_names, n, rx, &sink, progress));
            tx
        });
        let handles: Vec<_> = sessions
            .into_iter()
            .enumerate()
            .map(|(i, session)| {
                let barrier = barrier.clone();
                let ckpt = ckpt_tx.clone();
                // Its end, told to the checkpointer: a session done early (its share
                // of a count, a failure) is not waited for by later checkpoints.
                let finish = Finish::new(ckpt_tx.clone(), i);
                let quota = match spec.stop {
                    StopAfter::Requests(total) => {
                        Some(total / n as u64 + u64::from((i as u64) < total % n as u64))
                    }
                    StopAfter::Duration(_) => None,
                };
                scope.spawn(move || {
                    let r = worker(
                        spec,
                        i,
                        n,
                        class_names.len(),
                        session,
                        quota,
                        barrier,
                        t0,
                        progress,
                        ckpt,
                    );
                    // As `run` counts it: a session that broke is a connection error.
                    finish.last(|| {
                        let mut last = RecorderCopy::of(&r.0);
                        if let Some(why) = &r.1 {
                            last.rest.connection_error(why.clone());
                        }
                        last
                    });
                    r
                })
            })
            .collect();
        // The checkpointer ends once every session has (their senders dropped).
        drop(ckpt_tx);
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    (
                        Recorder::new(class_names.len(), false, spec.interval),
                        Some("a session thread panicked".into()),
                    )
                })
            })
            .collect()
    });
    let measured_ns = results
        .iter()
        .map(|(r, _)| r.last_ns.max(r.ran_ns))
        .max()
        .unwrap_or(0);
    let failures: Vec<&String> = results.iter().filter_map(|(_, s)| s.as_ref()).collect();
    // The run stopped early when every session stopped early (or on Ctrl-C); a single
    // broken session is reported as a connection error but the others carry on.
    let stopped_early = if failures.len() == n || progress.stopping() {
        failures.first().map(|s| s.to_string())
    } else {
        None
    };
    let mut recorders: Vec<Recorder> = Vec::with_capacity(n);
    for (mut r, s) in results {
        if let Some(s) = s {
            r.connection_error(s);
        }
        recorders.push(r);
    }
    let measured_s = spec.measured_s(measured_ns, stopped_early.is_some());
    Ok(merge(
        spec,
        class_names,
        recorders,
        measured_s,
        stopped_early,
    ))
}

#[allow(clippy::too_many_arguments)]
fn worker<S: Session>(
    spec: &LoadSpec,
    index: usize,
    n: usize,
    n_classes: usize,
    mut session: S,
    quota: Option<u64>,
    barrier: Arc<Barrier>,
    t0: Instant,
    progress: &Progress,
    ckpt: Option<mpsc::Sender<Snapshot>>,
) -> (Recorder, Option<String>) {
    let open = spec.shape != LoadShape::Closed;
    let mut rec = Recorder::new(n_classes, open, spec.interval);
    // A session that cannot be pinned where asked ends at the start, as a broken one
    // does (said in the result; every session failing fails the test): its figures would
    // be of CPUs nobody chose. After the barrier, which every session must reach.
    let unpinned = (!spec.client_cpus.is_empty())
        .then(|| spec.client_cpus[index % spec.client_cpus.len()])
        .and_then(|cpu| {
            crate::launch::pin_current_thread(&[cpu])
                .err()
                .map(|e| format!("could not pin session {index} to client CPU {cpu}: {e:#}"))
        });
    let mut rng = SmallRng::seed_from_u64(spec.seed.wrapping_add(index as u64 * 0x9E37_79B9));
    let mut schedule = Schedule::new(spec.shape, index, n, spec.phase);
    barrier.wait();
    if unpinned.is_some() {
        rec.cpu_end = thread_cpu();
        rec.cpu_start = rec.cpu_end;
        return (rec, unpinned);
    }
    let warm_ns = spec.warmup.as_nanos() as u64;
    let end_ns = spec.end_ns();
    if let Some(e) = end_ns {
        session.run_ends_at(t0 + Duration::from_nanos(e));
    }
    session.measurement_starts_at(t0 + Duration::from_nanos(warm_ns));
    let now_ns = || t0.elapsed().as_nanos() as u64;
    // How long it offered load, at `now`: nothing was sent after the end, however late
    // the last call came back.
    let ran = |now: u64| end_ns.map_or(now, |e| e.min(now)).saturating_sub(warm_ns);
    let mut measured = 0u64;
    let mut cpu_marked = false;
    // When this session's last call came back (from the start, it was free).
    let mut free_since_ns = 0u64;
    // When this session takes its next checkpoint (u64::MAX: none): a compare per round,
    // where the loop reads the clock anyway.
    let mut next_ckpt_ns = match ckpt {
        Some(_) => warm_ns.saturating_add(CHECKPOINT_EVERY.as_nanos() as u64),
        None => u64::MAX,
    };
    loop {
        let mut now = now_ns();
        if !cpu_marked && now >= warm_ns {
            rec.cpu_start = thread_cpu();
            cpu_marked = true;
            if let Some(s) = schedule.as_mut() {
                s.skip_until(&mut rng, warm_ns);
            }
        }
        if now >= next_ckpt_ns {
            let unsent = match (schedule.as_ref(), end_ns) {
                (Some(s), Some(end)) => s.unsent_so_far(&rng, warm_ns, end.min(now), LATE_NS),
                _ => 0,
            };
            next_ckpt_ns = checkpoint(ckpt.as_ref(), index, warm_ns, now, &rec, end_ns, unsent);
        }
        // Open loop, a timed test: what fell due and was never sent (the session was
        // busy with a slow server) is counted once sending stops; it has no latency.
        let mut count_unsent = |rec: &mut Recorder, rng: &mut SmallRng, now: u64| {
            if let (Some(s), Some(end)) = (schedule.as_mut(), end_ns) {
                rec.unsent += s.count_unsent(rng, warm_ns, end.min(now), LATE_NS);
            }
        };
        if progress.stopping() {
            count_unsent(&mut rec, &mut rng, now);
            rec.ran_ns = ran(now);
            close_cpu(&mut rec, cpu_marked);
            return (rec, Some("interrupted".into()));
        }
        if end_ns.is_some_and(|e| now >= e) || quota.is_some_and(|q| measured >= q) {
            count_unsent(&mut rec, &mut rng, now);
            rec.ran_ns = ran(now);
            break;
        }
        let intended = match schedule.as_mut() {
            Some(s) => {
                let due = s.peek() as u64;
                if due > now {
                    let wait = Duration::from_nanos(due - now).min(Duration::from_millis(100));
                    std::thread::sleep(wait);
                    continue;
                }
                let t = s.advance(&mut rng);
                if now - t > LATE_NS && t >= warm_ns {
                    rec.late_sends += 1;
                    // Due after the session's last call came back, it was free for
                    // this one: the generator (this thread not run) was late, not the
                    // server.
                    if free_since_ns <= t {
                        rec.generator_late += 1;
                    }
                }
                t
            }
            None => now,
        };
        let sent = now;
        let result = session.execute(&mut rng);
        now = now_ns();
        free_since_ns = now;
        // A closed loop counts an operation the session sent after a wait by that send
        // (a terminal's keying), within the run: keyed in the ramp-up and sent after
        // it, it counts; sent after the end (a session that did not stop waiting), not.
        let counted = match &result {
            _ if open => intended >= warm_ns,
            Ok(Executed {
                latency: Latency::Own { sent_after, .. },
                ..
            }) => {
                let op_sent = sent.saturating_add(sent_after.as_nanos() as u64);
                op_sent >= warm_ns && end_ns.is_none_or(|e| op_sent < e)
            }
            _ => sent >= warm_ns,
        };
        match result {
            Ok(done) => {
                if counted {
                    measured += 1;
                    let (class, outcome, done_ns) = (done.class, done.outcome, now - warm_ns);
                    match done.latency {
                        Latency::Call => {
                            rec.record(class, outcome, sent - warm_ns, intended - warm_ns, done_ns)
                        }
                        Latency::Own { took, .. } => {
                            // The wait before the send moves the intended send with it:
                            // only how late the call started adds to the corrected time.
                            let own = took.as_nanos().min(u128::from(u64::MAX)) as u64;
                            let corrected = own.saturating_add(sent.saturating_sub(intended));
                            rec.tally(class, outcome, Some((own, corrected)), done_ns, 1)
                        }
                        Latency::NotSent => rec.tally(class, outcome, None, done_ns, 1),
                    }
                    progress.done.fetch_add(1, Ordering::Relaxed);
                }
            }
            Err(e) => {
                // The call under way is lost with the session: one lost request (the
                // session's failure is counted once more by `run`, as a connection's).
                if counted {
                    rec.lost_requests(&e, 1);
                }
                rec.ran_ns = ran(now);
                close_cpu(&mut rec, cpu_marked);
                return (rec, Some(e));
            }
        }
    }
    close_cpu(&mut rec, cpu_marked);
    (rec, None)
}

/// A session's CPU at its end, counted from the warm-up's end (`cpu_marked`: it came),
/// none when it ended before: a session broken or stopped in the ramp-up counted its
/// whole ramp-up's CPU as measured (audit, 6).
fn close_cpu(rec: &mut Recorder, cpu_marked: bool) {
    rec.cpu_end = thread_cpu();
    if !cpu_marked {
        rec.cpu_start = rec.cpu_end;
    }
}

/// Send a copy of session `index`'s recorder `rec` to the checkpointer at `now` (with
/// `unsent` more requests due and not sent yet: see [`Snapshot::take`]), and return when
/// the next is due (u64::MAX: none, once the test's end `end_ns` is near: the outcome
/// itself comes then).
#[cold]
fn checkpoint(
    tx: Option<&mpsc::Sender<Snapshot>>,
    index: usize,
    warm_ns: u64,
    now: u64,
    rec: &Recorder,
    end_ns: Option<u64>,
    unsent: u64,
) -> u64 {
    let Some(tx) = tx.filter(|_| end_ns.is_none_or(|e| now < e)) else {
        return u64::MAX;
    };
    let (snap, next) = Snapshot::take(index, warm_ns, now.saturating_sub(warm_ns), rec, unsent);
    let _ = tx.send(snap);
    next
}
