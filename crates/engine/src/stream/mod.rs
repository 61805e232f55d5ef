//! The non-blocking byte-protocol executor: many connections per thread on epoll (mio).
//!
//! Hot path, written by hand rather than on an async runtime because the load generator
//! must cost less per request than redis-benchmark and memtier (BASELINE.md): per read
//! event it makes one `recv` (a short read means the socket is drained, so no extra
//! `recv` to see EAGAIN), parses every complete reply, and tops the pipeline up with one
//! `send`. Sockets are registered once (edge-triggered), so there is no `epoll_ctl` per
//! request: about two system calls per request plus a shared `epoll_wait`, where
//! redis-benchmark makes seven and memtier five.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use rand::rngs::SmallRng;
use rand::SeedableRng;

use crate::load::{
    LoadOutcome, LoadShape, LoadSpec, Outcome, Protocol, StopAfter, CHECKPOINT_EVERY,
};
use crate::sched::{
    checkpointer, merge, thread_cpu, Finish, Recorder, RecorderCopy, Schedule, Snapshot,
};
use crate::workload::Progress;

mod uring;

const READ_CHUNK: usize = 64 * 1024;
/// How long to wait for replies still in flight once sending has stopped.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);
const INTERRUPT_DRAIN: Duration = Duration::from_millis(500);
const CLOSED: &str = "server closed the connection";
use crate::sched::LATE_NS;
/// Open loop: a wait for the next send shorter than this spins (a wake-up from the timer
/// costs about as much, and comes this much late on a busy VM); a longer one sleeps on
/// the timer until this much before the send, then spins the rest.
const SPIN_NS: u64 = 50_000;
/// The poll token of the open-loop timer (connections use their slot index).
const TIMER: Token = Token(usize::MAX);

/// A timerfd in the poll set, so that an open-loop generator sleeps until its next send
/// with nanosecond precision (epoll_wait's own timeout has millisecond resolution, which
/// left spinning as the only precise wait: a whole CPU at any offered rate, which then
/// shows in the power and CPU of every load level). Hand-written (three libc calls)
/// because it sits in the hot loop: one `timerfd_settime` per sleep, none when the timer
/// is already armed for the same send.
struct Timer {
    fd: std::os::fd::OwnedFd,
    armed_for: Option<u64>,
}

impl Timer {
    fn new(poll: &Poll) -> io::Result<Timer> {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        // SAFETY: plain syscall; the fd is owned (and closed) by OwnedFd from here on.
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        poll.registry().register(
            &mut mio::unix::SourceFd(&fd.as_raw_fd()),
            TIMER,
            Interest::READABLE,
        )?;
        Ok(Timer {
            fd,
            armed_for: None,
        })
    }

    /// Fire in `wait_ns` (for the send due at `due_ns`), unless already armed for it.
    fn arm(&mut self, due_ns: u64, wait_ns: u64) {
        use std::os::fd::AsRawFd;
        if self.armed_for == Some(due_ns) {
            return;
        }
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (wait_ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (wait_ns % 1_000_000_000).max(1) as libc::c_long,
            },
        };
        // SAFETY: valid fd and pointers for the call's duration.
        let r =
            unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        self.armed_for = (r == 0).then_some(due_ns);
    }

    /// The timer fired: clear its count so the next arming makes a new event.
    fn fired(&mut self) {
        use std::os::fd::AsRawFd;
        let mut buf = [0u8; 8];
        // SAFETY: reads at most 8 bytes into a local buffer.
        let _ = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
        self.armed_for = None;
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
struct Pending {
    class: u32,
    sent_ns: u64,
    intended_ns: u64,
}

impl Pending {
    /// Does this request count (its reply, or its loss)? Open loop: intended after the
    /// warm-up; closed loop: sent after it.
    #[inline]
    fn measured(&self, warm_ns: u64) -> bool {
        if self.intended_ns != self.sent_ns {
            self.intended_ns >= warm_ns
        } else {
            self.sent_ns >= warm_ns
        }
    }
}

/// Which replies a test records, and which requests it counts lost.
#[derive(Clone, Copy)]
struct Window {
    warm_ns: u64,
    /// A timed closed loop ([`LoadSpec::timed_closed_loop`]): the replies done from
    /// the warm-up's end to before this, whenever their requests left (wrk's count),
    /// as sending stops at it. None: the requests [`Pending::measured`] says, each reply
    /// waited for.
    replies_until: Option<u64>,
}

impl Window {
    #[inline]
    fn records(&self, p: &Pending, done_ns: u64) -> bool {
        match self.replies_until {
            Some(end) => done_ns >= self.warm_ns && done_ns < end,
            None => p.measured(self.warm_ns),
        }
    }

    /// How many of a connection's requests in flight at `now` are lost with it: by the
    /// reply window, every one while it is open (each would have replied in it).
    fn lost(&self, inflight: &Inflight, now: u64) -> u64 {
        match self.replies_until {
            Some(end) if now >= self.warm_ns && now < end => inflight.len() as u64,
            Some(_) => 0,
            None => inflight.measured(self.warm_ns),
        }
    }
}

/// The requests in flight on one connection, oldest first, run-length encoded: the
/// requests of one pipelined batch (same class, send and intended time) are one entry and
/// a count, so that queueing a request is a compare and an increment instead of a push,
/// and taking its reply a decrement (hot path: at -P 100 every request passes here).
#[derive(Default)]
struct Inflight {
    runs: VecDeque<(Pending, u32)>,
    len: usize,
}

impl Inflight {
    /// When the oldest request in flight was sent.
    fn oldest_sent(&self) -> Option<u64> {
        self.runs.front().map(|(p, _)| p.sent_ns)
    }

    /// How many were sent before `t`.
    fn sent_before(&self, t: u64) -> u64 {
        self.runs
            .iter()
            .take_while(|(p, _)| p.sent_ns < t)
            .map(|(_, n)| u64::from(*n))
            .sum()
    }

    #[inline]
    fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn push(&mut self, p: Pending) {
        self.len += 1;
        if let Some((last, n)) = self.runs.back_mut() {
            if *last == p && *n < u32::MAX {
                *n += 1;
                return;
            }
        }
        self.runs.push_back((p, 1));
    }

    #[inline]
    fn pop(&mut self) -> Option<Pending> {
        let (p, n) = self.runs.front_mut()?;
        let p = *p;
        *n -= 1;
        if *n == 0 {
            self.runs.pop_front();
        }
        self.len -= 1;
        Some(p)
    }

    fn clear(&mut self) {
        self.runs.clear();
        self.len = 0;
    }

    /// How many of the requests in flight count (see [`Pending::measured`]).
    fn measured(&self, warm_ns: u64) -> u64 {
        self.runs
            .iter()
            .filter(|(p, _)| p.measured(warm_ns))
            .map(|(_, n)| u64::from(*n))
            .sum()
    }
}

struct Conn<P> {
    stream: Option<TcpStream>,
    addr: SocketAddr,
    proto: P,
    rbuf: Vec<u8>,
    rstart: usize,
    wbuf: Vec<u8>,
    wpos: usize,
    inflight: Inflight,
    sent_on_conn: u64,
    /// Its last reconnect was reset as soon as it opened ([`Connect::Reset`]).
    reset_last: bool,
    /// A reconnect in progress: when its connect started (the loop's clock), and when it
    /// was seen established if the connect call returned with it done (loopback's
    /// handshake happens inside the call). Its requests leave once the loop sees it open.
    connecting: Option<(u64, Option<u64>)>,
    dead: bool,
}

impl<P> Conn<P> {
    /// Shut its socket down, not only close it: an io_uring receive or poll armed on it
    /// holds it open, and a connect the kernel still tries goes on until it is shut.
    fn shut_down(&mut self) {
        if let Some(s) = self.stream.take() {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }

    /// At least `at_least` bytes of room after the read buffer's end: when there is less,
    /// the parsed front is dropped and `grow` bytes reserved.
    #[inline]
    fn make_room(&mut self, at_least: usize, grow: usize) {
        if self.rbuf.capacity() - self.rbuf.len() < at_least {
            if self.rstart > 0 {
                self.rbuf.drain(..self.rstart);
                self.rstart = 0;
            }
            self.rbuf.reserve(grow);
        }
    }
}

/// Open a connection before the test starts (blocking: nothing is measured yet).
fn connect(addr: SocketAddr) -> io::Result<TcpStream> {
    let s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_nodelay(true)?;
    s.set_nonblocking(true)?;
    Ok(TcpStream::from_std(s))
}

/// What a reconnect came to when its socket was looked at ([`Loop::connect_done`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Connect {
    /// Not yet: a wake before the handshake is done.
    Pending,
    /// Open: counted and timed; its requests may leave.
    Open,
    /// Refused or failed: counted, and the connection is dead.
    Failed,
    /// Done with at once, the loop to do `Next` ([`Next::Reopen`] or [`Next::Retire`]):
    /// - opened, then reset before the loop looked (a server shedding load): counted as a
    ///   broken connection, which is reopened as one that broke later is ([`Loop::settle`];
    ///   twice in a row, it is [`Connect::Failed`]: a server that resets every connection
    ///   would have it reopened for ever, sending nothing);
    /// - opened when no request may leave any more (another connection took the count's
    ///   last, or the test's time is up): retired unused, neither counted nor timed.
    ///   redis-benchmark -k 0 makes such connects too; keeping a request back for each
    ///   connect in progress instead left a count one short, or waiting for ever, when
    ///   the connect failed.
    Closed(Next),
}

pub(crate) fn run<P, F>(
    spec: &LoadSpec,
    endpoints: &[SocketAddr],
    class_names: &[&str],
    new_protocol: F,
    progress: &Progress,
) -> anyhow::Result<LoadOutcome>
where
    P: Protocol + 'static,
    F: Fn(usize) -> P + Sync,
{
    anyhow::ensure!(!endpoints.is_empty(), "no endpoints to drive");
    anyhow::ensure!(spec.connections > 0, "at least one connection is needed");
    anyhow::ensure!(spec.pipeline > 0, "pipeline depth must be at least 1");
    let threads = spec.threads.clamp(1, spec.connections);
    // Check every endpoint answers before starting threads: a clear error beats a run of
    // connection errors.
    for ep in endpoints {
        std::net::TcpStream::connect_timeout(ep, Duration::from_secs(5)).with_context(|| {
            format!("cannot connect to {ep}: is the server running and the address right?")
        })?;
    }
    let barrier = Arc::new(Barrier::new(threads + 1));
    let t0_slot: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
    // Checkpoints, when someone wants them: each worker sends a copy of its recorder
    // to one thread of their own, which merges them off the workers' threads.
    let sink = progress.checkpoint_sink();
    let results = std::thread::scope(|scope| -> anyhow::Result<Vec<(Recorder, Option<String>)>> {
        let ckpt_tx = sink.map(|sink| {
            let (tx, rx) = mpsc::channel();
            scope.spawn(move || checkpointer(spec, class_names, threads, rx, &sink, progress));
            tx
        });
        let mut handles = Vec::new();
        let pool = match spec.stop {
            StopAfter::Requests(n) => Some(Quota::new(n, threads)),
            StopAfter::Duration(_) => None,
        };
        for t in 0..threads {
            let conn_ids: Vec<usize> = (0..spec.connections).filter(|i| i % threads == t).collect();
            let quota = pool.clone();
            let barrier = barrier.clone();
            let t0_slot = t0_slot.clone();
            let new_protocol = &new_protocol;
            let ckpt = ckpt_tx.clone();
            // Its end, told to the checkpointer: a worker done early (its share of a
            // count sent) is not waited for by later checkpoints.
            let finish = Finish::new(ckpt_tx.clone(), t);
            handles.push(scope.spawn(move || {
                let r = worker(
                    spec,
                    t,
                    threads,
                    endpoints,
                    class_names.len(),
                    conn_ids,
                    quota,
                    new_protocol,
                    barrier,
                    t0_slot,
                    progress,
                    ckpt,
                );
                if let Ok((rec, _)) = &r {
                    finish.last(|| RecorderCopy::of(rec));
                }
                r
            }));
        }
        // The checkpointer ends once every worker has (their senders dropped).
        drop(ckpt_tx);
        // Release the workers together once all have connected.
        barrier.wait();
        let mut out = Vec::new();
        for h in handles {
            match h.join() {
                Ok(r) => out.push(r?),
                Err(_) => anyhow::bail!("a load-generator thread panicked"),
            }
        }
        Ok(out)
    })?;
    let measured_ns = results
        .iter()
        .map(|(r, _)| r.last_ns.max(r.ran_ns))
        .max()
        .unwrap_or(0);
    let stopped: Vec<String> = results.iter().filter_map(|(_, s)| s.clone()).collect();
    let stopped_early = if stopped.is_empty() {
        None
    } else {
        Some(stopped[0].clone())
    };
    // See `LoadSpec::measured_s`: to the last reply, a timed closed loop's duration, an
    // open loop's schedule at least.
    let measured_s = spec.measured_s(measured_ns, stopped_early.is_some());
    let recorders = results.into_iter().map(|(r, _)| r).collect();
    Ok(merge(
        spec,
        class_names,
        recorders,
        measured_s,
        stopped_early,
    ))
}

#[allow(clippy::too_many_arguments)]
fn worker<P, F>(
    spec: &LoadSpec,
    index: usize,
    threads: usize,
    endpoints: &[SocketAddr],
    n_classes: usize,
    conn_ids: Vec<usize>,
    quota: Option<Arc<Quota>>,
    new_protocol: &F,
    barrier: Arc<Barrier>,
    t0_slot: Arc<Mutex<Option<Instant>>>,
    progress: &Progress,
    ckpt: Option<mpsc::Sender<Snapshot>>,
) -> anyhow::Result<(Recorder, Option<String>)>
where
    P: Protocol,
    F: Fn(usize) -> P + Sync,
{
    // Everything that can fail before the start fails here, and still meets the barrier
    // (the other threads and `run` wait on it).
    let setup = || -> anyhow::Result<(Io, Option<String>, Vec<Conn<P>>)> {
        if !spec.client_cpus.is_empty() {
            let cpu = spec.client_cpus[index % spec.client_cpus.len()];
            crate::launch::pin_current_thread(&[cpu])?;
        }
        let (mut io, fallback) = Io::new(spec, conn_ids.len())?;
        let mut conns: Vec<Conn<P>> = Vec::with_capacity(conn_ids.len());
        for (slot, &cid) in conn_ids.iter().enumerate() {
            let addr = endpoints[cid % endpoints.len()];
            let stream = connect(addr)
                .and_then(|s| io.register(s, slot))
                .map_err(|e| anyhow::anyhow!("connecting to {addr}: {e}"))?;
            conns.push(Conn {
                stream: Some(stream),
                addr,
                proto: new_protocol(cid),
                rbuf: Vec::with_capacity(READ_CHUNK),
                rstart: 0,
                wbuf: Vec::with_capacity(4096),
                wpos: 0,
                inflight: Inflight::default(),
                sent_on_conn: 0,
                reset_last: false,
                connecting: None,
                dead: false,
            });
        }
        Ok((io, fallback, conns))
    };
    let ready = setup();
    barrier.wait();
    let (io, fallback, mut conns) = ready?;
    // Every connection is open: now the common start of all generators, if any.
    progress.wait_for_start();
    // One common origin for all threads: the first thread to get here sets it.
    let t0 = {
        let mut g = t0_slot.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
        *g.get_or_insert_with(Instant::now)
    };
    let warm_ns = spec.warmup.as_nanos() as u64;
    let end_ns = spec.end_ns();
    let mut lp = Loop {
        spec,
        progress,
        pace: Pace {
            t0,
            warm_ns,
            end_ns,
            replies_until: end_ns.filter(|_| spec.timed_closed_loop()),
            quota: quota.as_ref().map(|_| 0),
            pool: quota,
            issued_measured: 0,
            stop_sending: false,
            sending_stopped_ns: None,
            drain_deadline: None,
            stopped_early: None,
            cpu_marked: warm_ns == 0,
            heard_rx: 0,
            heard_ns: 0,
            connects_pending: 0,
            no_reply_ns: spec.no_reply_timeout.as_nanos() as u64,
            next_ckpt_ns: match ckpt {
                Some(_) => warm_ns.saturating_add(CHECKPOINT_EVERY.as_nanos() as u64),
                None => u64::MAX,
            },
        },
        ckpt,
        worker: index,
        rec: Recorder::new(n_classes, spec.shape != LoadShape::Closed, spec.interval),
        rng: SmallRng::seed_from_u64(spec.seed.wrapping_add(index as u64 * 0x9E37_79B9)),
    };
    lp.rec.io_fallback = fallback;
    if lp.pace.cpu_marked {
        lp.rec.cpu_start = thread_cpu();
    } else {
        progress.warmup.store(true, Ordering::Relaxed);
    }
    match io {
        Io::Epoll(poll) => epoll_loop(&mut lp, poll, &mut conns, index, threads)?,
        Io::Uring(ring) => uring::closed_loop(&mut lp, *ring, &mut conns)?,
    }
    let Loop { mut rec, pace, .. } = lp;
    rec.ran_ns = pace
        .sending_stopped_ns
        .unwrap_or_else(|| pace.now())
        .saturating_sub(pace.warm_ns);
    rec.cpu_end = thread_cpu();
    if !pace.cpu_marked {
        rec.cpu_start = rec.cpu_end;
    }
    // Times are recorded from the end of warm-up; nothing measured means zero duration.
    if rec.first_ns.is_none() {
        rec.last_ns = 0;
    }
    Ok((rec, pace.stopped_early))
}

/// How a worker waits for its connections: epoll (every load shape, every kernel), or an
/// io_uring with one multishot receive per connection (closed loop, where the kernel has
/// it and the spec allows it; see [`uring`]).
enum Io {
    Epoll(Poll),
    Uring(Box<uring::Ring>),
}

impl Io {
    /// The loop for this spec, and why `auto` could not have io_uring (if so).
    fn new(spec: &LoadSpec, conns: usize) -> anyhow::Result<(Io, Option<String>)> {
        match uring::Ring::for_spec(spec, conns)? {
            Some(Ok(ring)) => Ok((Io::Uring(Box::new(ring)), None)),
            Some(Err(why)) => Ok((Io::Epoll(Poll::new()?), Some(why))),
            None => Ok((Io::Epoll(Poll::new()?), None)),
        }
    }

    /// Watch a newly opened connection in slot `slot`.
    fn register(&mut self, mut s: TcpStream, slot: usize) -> io::Result<TcpStream> {
        match self {
            Io::Epoll(poll) => watch(poll, &mut s, slot)?,
            // The ring's receive is armed when the loop starts (and on each reopen).
            Io::Uring(_) => {}
        }
        Ok(s)
    }
}

/// Watch connection `slot`'s socket on epoll (edge-triggered, once for its life).
fn watch(poll: &Poll, s: &mut TcpStream, slot: usize) -> io::Result<()> {
    poll.registry()
        .register(s, Token(slot), Interest::READABLE | Interest::WRITABLE)
}

/// A count-stopped test's measured requests, claimed by its workers a chunk at a time
/// as they send, as redis-benchmark's threads share one counter: each sends what it can,
/// and they end together. Equal shares left the worker of fewer connections (`-c 6
/// --threads 4`: 2, 2, 1 and 1) or a slower one running on alone, the count over a
/// longer time: 33% low (audit, 1). A chunk keeps the shared counter off the path of
/// each request (one atomic add per chunk).
struct Quota {
    claimed: AtomicU64,
    total: u64,
    chunk: u64,
}

impl Quota {
    fn new(total: u64, threads: usize) -> Arc<Quota> {
        Arc::new(Quota {
            claimed: AtomicU64::new(0),
            total,
            // Small against each worker's part, so that they end within one chunk.
            chunk: (total / (threads as u64 * 64)).clamp(1, 256),
        })
    }

    /// Claim up to a chunk of what is left; 0 once all is claimed.
    fn claim(&self) -> u64 {
        let from = self.claimed.fetch_add(self.chunk, Ordering::Relaxed);
        self.total.saturating_sub(from).min(self.chunk)
    }
}

/// The test's clock and where it stands against its stop condition, for either loop.
struct Pace {
    t0: Instant,
    warm_ns: u64,
    end_ns: Option<u64>,
    /// [`Window::replies_until`].
    replies_until: Option<u64>,
    /// A count-stopped test: the measured requests this worker has claimed from `pool`
    /// so far.
    quota: Option<u64>,
    pool: Option<Arc<Quota>>,
    issued_measured: u64,
    stop_sending: bool,
    /// When sending stopped (the deadline, a quota, Ctrl-C).
    sending_stopped_ns: Option<u64>,
    drain_deadline: Option<u64>,
    stopped_early: Option<String>,
    cpu_marked: bool,
    /// The bytes received when last looked at, and since when the loop has waited on
    /// the server: they last grew, or the oldest request waiting left (nothing awaited
    /// before it). A server that stops answering without closing is seen by them.
    heard_rx: u64,
    heard_ns: u64,
    /// Reconnects started and not yet open or failed: while there are some, each round
    /// looks for one the server left unanswered for `no_reply_ns`.
    connects_pending: usize,
    /// [`LoadSpec::no_reply_timeout`], in ns: for replies, and for a reconnect's
    /// handshake.
    no_reply_ns: u64,
    /// When this worker takes its next checkpoint (u64::MAX: none): a compare per round,
    /// where the loop reads the clock anyway, and nothing per request.
    next_ckpt_ns: u64,
}

impl Pace {
    #[inline]
    fn now(&self) -> u64 {
        self.t0.elapsed().as_nanos() as u64
    }

    #[inline]
    fn window(&self) -> Window {
        Window {
            warm_ns: self.warm_ns,
            replies_until: self.replies_until,
        }
    }

    /// Can another request be issued now (stop condition, quota)?
    #[inline]
    fn may_issue(&mut self, now: u64) -> bool {
        !self.stop_sending
            && self.end_ns.is_none_or(|e| now < e)
            && match self.quota {
                None => true,
                Some(q) => self.issued_measured < q || now < self.warm_ns || self.claim(),
            }
    }

    /// This worker's claim spent: claim more of the test's count, false when none is
    /// left.
    #[cold]
    fn claim(&mut self) -> bool {
        let got = self.pool.as_ref().map_or(0, |p| p.claim());
        if let Some(q) = self.quota.as_mut() {
            *q += got;
        }
        got > 0
    }

    /// Open loop, a timed test: requests intended before this time and never sent are
    /// unsent (sending stopped at the deadline, or earlier on Ctrl-C or when every
    /// connection failed, at `now`). None for a test stopped by a request count.
    fn unsent_until(&self, now: u64) -> Option<u64> {
        let end = self.end_ns?;
        Some(end.min(self.sending_stopped_ns.unwrap_or(now)))
    }

    /// The longest a wait may last: `cap`, shortened to the end of the test while sending.
    /// Shortened to the end of the warm-up too, for the round that marks it (CPU and
    /// bytes count from there, replies are recorded from there).
    fn wait_at_most(&self, now: u64, cap: Duration) -> Duration {
        let warm = (!self.cpu_marked).then_some(self.warm_ns);
        let end = self.end_ns.filter(|_| !self.stop_sending);
        [warm, end].into_iter().flatten().fold(cap, |cap, t| {
            cap.min(Duration::from_nanos(t.saturating_sub(now)))
        })
    }
}

/// What both loops share: the spec, the clock, the recorder and the request generator.
struct Loop<'a> {
    spec: &'a LoadSpec,
    progress: &'a Progress,
    pace: Pace,
    rec: Recorder,
    rng: SmallRng,
    /// Where its checkpoints go, when someone wants them ([`checkpointer`]).
    ckpt: Option<mpsc::Sender<Snapshot>>,
    /// This worker's index among the generator's threads.
    worker: usize,
}

impl Loop<'_> {
    /// Open the connection again, with empty buffers and nothing in flight: the connect
    /// is started, not waited for (a blocking connect stalled every other connection of
    /// this thread for its round trip, or for seconds when the server's backlog was full
    /// and dropped the SYN). The caller watches the new socket; the loop finishes the
    /// connect when it turns writable ([`Loop::connect_done`]). False when the connect
    /// failed at once (counted; the connection is dead).
    fn reopen<P: Protocol>(&mut self, c: &mut Conn<P>) -> bool {
        c.stream = None;
        c.rbuf.clear();
        c.rstart = 0;
        c.wbuf.clear();
        c.wpos = 0;
        c.inflight.clear();
        c.sent_on_conn = 0;
        c.proto.reset();
        // From the call: on loopback the whole handshake happens inside it.
        let since = self.pace.now();
        let started = TcpStream::connect(c.addr).and_then(|s| s.set_nodelay(true).map(|()| s));
        match started {
            Ok(s) => {
                // Established already: timed to here, not to when the loop gets to it
                // (after the other connections' events: hundreds of microseconds).
                let established = s.peer_addr().is_ok().then(|| self.pace.now());
                c.stream = Some(s);
                c.connecting = Some((since, established));
                self.pace.connects_pending += 1;
                true
            }
            Err(e) => {
                self.connect_failed(c, &e.to_string());
                false
            }
        }
    }

    /// A reconnect's socket said something (writable, or an error): open, failed, or not
    /// yet (a wake before the handshake is done, which mio allows for). An open one is
    /// counted, and timed from the connect call to established, httperf's connection
    /// time, when the requests it opens for are measured (they leave now or later), so
    /// that they stand one per measured request with -k 0. Zeroed at the warm-up's mark
    /// instead, those of the round that crossed it were lost: 47 for 50 measured
    /// requests on 2 connections.
    fn connect_done<P: Protocol>(&mut self, c: &mut Conn<P>) -> Connect {
        let (Some(s), Some((since, established))) = (c.stream.as_ref(), c.connecting) else {
            return Connect::Pending;
        };
        let failed = match s.take_error() {
            Ok(Some(e)) | Err(e) => Some(e),
            Ok(None) => match s.peer_addr() {
                Ok(_) => None,
                Err(e) if e.kind() == io::ErrorKind::NotConnected => return Connect::Pending,
                Err(e) => Some(e),
            },
        };
        // A reset in the handshake reads as refused; one after it, as reset.
        let reset = failed.as_ref().is_some_and(|e| {
            matches!(
                e.kind(),
                io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe
            )
        });
        match (&failed, reset) {
            (Some(e), true) if c.reset_last => {
                let why = format!("{e}, twice in a row as soon as it opened");
                self.connect_failed(c, &why);
                return Connect::Failed;
            }
            (Some(e), false) => {
                self.connect_failed(c, &e.to_string());
                return Connect::Failed;
            }
            _ => {}
        }
        c.connecting = None;
        self.pace.connects_pending -= 1;
        c.reset_last = failed.is_some();
        if let Some(e) = failed {
            self.rec.connection_error(e.to_string());
            return Connect::Closed(self.settle(c, Err(CLOSED.to_string())).1);
        }
        let now = self.pace.now();
        if !self.pace.may_issue(now) {
            return Connect::Closed(Next::Retire);
        }
        if now >= self.pace.warm_ns {
            let at = established.unwrap_or(now);
            self.rec
                .connected(Duration::from_nanos(at.saturating_sub(since)));
            self.rec.reconnects += 1;
        }
        Connect::Open
    }

    /// A reconnect that failed: counted, and the connection dead (the server is gone, or
    /// refuses more), its socket shut down ([`Conn::shut_down`]).
    fn connect_failed<P>(&mut self, c: &mut Conn<P>, why: &str) {
        self.rec
            .connection_error(format!("reconnect to {}: {why}", c.addr));
        c.shut_down();
        if c.connecting.take().is_some() {
            self.pace.connects_pending -= 1;
        }
        c.dead = true;
    }

    /// The bookkeeping at the top of each round, at `now`: the end of warm-up, Ctrl-C,
    /// the stop condition, and the wait for replies in flight once sending stopped.
    /// Returns false when the loop is done.
    fn round<P>(&mut self, conns: &mut [Conn<P>], now: u64) -> bool {
        let pace = &mut self.pace;
        if !pace.cpu_marked && now >= pace.warm_ns {
            self.rec.cpu_start = thread_cpu();
            // Bytes, like CPU, count from the end of warm-up: they are divided by the
            // measured duration (rx_bytes_per_s, net_io_bytes_per_s). Reconnects count
            // by their requests instead ([`Loop::connect_done`]). A connection that
            // failed in the warm-up stays counted: the test ran without it.
            self.rec.bytes_tx = 0;
            self.rec.bytes_rx = 0;
            pace.cpu_marked = true;
            self.progress.warmup.store(false, Ordering::Relaxed);
        }
        if self.progress.stopping() && !pace.stop_sending {
            pace.stop_sending = true;
            pace.stopped_early
                .get_or_insert_with(|| "interrupted".to_string());
        }
        if !pace.stop_sending && !pace.may_issue(now) {
            pace.stop_sending = true;
        }
        if pace.stop_sending {
            // Sent nothing after its end, whenever the round saw it.
            let stopped = pace.end_ns.map_or(now, |e| e.min(now));
            pace.sending_stopped_ns.get_or_insert(stopped);
        }
        if pace.connects_pending > 0 {
            // A SYN the server dropped (its backlog full) is retried by the kernel for
            // two minutes: a reconnect unanswered this long fails as a reply would.
            let limit = pace.no_reply_ns;
            for c in conns.iter_mut() {
                if c.connecting
                    .is_some_and(|(t, _)| now.saturating_sub(t) >= limit)
                {
                    let why = format!("no answer for {} s", secs(limit));
                    self.connect_failed(c, &why);
                }
            }
        }
        let pace = &mut self.pace;
        if conns.iter().all(|c| c.dead) {
            pace.stopped_early
                .get_or_insert_with(|| "every connection failed".to_string());
            return false;
        }
        // A server that stopped answering and keeps its connections open: without
        // this, a test stopped by a count waited for its last requests for ever. A
        // compare a round; the connections are looked at only once it is silent.
        if self.rec.bytes_rx != pace.heard_rx {
            (pace.heard_rx, pace.heard_ns) = (self.rec.bytes_rx, now);
        } else if !pace.stop_sending && now.saturating_sub(pace.heard_ns) >= pace.no_reply_ns {
            // Silent since the last byte, or since the oldest request now waiting left
            // (an open loop between sends at a low rate awaited nothing before it).
            match conns.iter().filter_map(|c| c.inflight.oldest_sent()).min() {
                Some(sent) if now.saturating_sub(sent) >= pace.no_reply_ns => {
                    let why = format!("no reply from the server for {} s", secs(pace.no_reply_ns));
                    let waiting: usize = conns.iter().map(|c| c.inflight.len()).sum();
                    for c in conns.iter_mut() {
                        self.rec
                            .lost_requests(&why, pace.window().lost(&c.inflight, now));
                        c.inflight.clear();
                    }
                    pace.sending_stopped_ns.get_or_insert(now);
                    pace.stopped_early
                        .get_or_insert(format!("{why}, {waiting} request(s) waiting"));
                    return false;
                }
                Some(sent) => pace.heard_ns = sent,
                // Nothing awaited: idle, not silent.
                None => pace.heard_ns = now,
            }
        }
        if pace.stop_sending {
            // Only once sending stopped does the loop need the count in flight.
            if conns.iter().all(|c| c.inflight.is_empty()) {
                return false;
            }
            // A timed closed loop at its end: its count is the replies done by then, so
            // none in flight is waited for (a straggler stretched the test to it). One
            // waiting far longer than the test's replies took is a stall, not a reply on
            // its way: lost, as wrk counts a timeout, so the errors say so too.
            if let (Some(end), None) = (pace.replies_until, &pace.stopped_early) {
                let since = end.saturating_sub(stalled_after_ns(&self.rec));
                for c in conns.iter_mut() {
                    self.rec
                        .lost_requests(STALLED_AT_END, c.inflight.sent_before(since));
                    c.inflight.clear();
                }
                return false;
            }
            // Ctrl-C waits half a second for replies in flight, a normal end five.
            let wait = if self.progress.stopping() {
                INTERRUPT_DRAIN
            } else {
                DRAIN_TIMEOUT
            };
            let dl = *pace
                .drain_deadline
                .get_or_insert(now + wait.as_nanos() as u64);
            if now >= dl {
                for c in conns.iter_mut() {
                    self.rec.lost_requests(
                        "no reply before the end of the test",
                        pace.window().lost(&c.inflight, now),
                    );
                    c.inflight.clear();
                }
                return false;
            }
        }
        true
    }

    /// Send a copy of this worker's recorder to the checkpointer, and set the next
    /// checkpoint: the next multiple of [`CHECKPOINT_EVERY`] after the warm-up's end (a
    /// round that came late for one takes it late, once). None once sending stopped:
    /// the outcome itself is near. Each loop calls it after [`Loop::round`] when the
    /// clock it read for the round is past `next_ckpt_ns` (the one compare a round), with
    /// its open loop's `schedule`: what fell due and is not sent yet is counted in the
    /// copy as unsent, as the end counts it, on a copy of the schedule (it goes on).
    #[cold]
    fn checkpoint(&mut self, now: u64, schedule: Option<&Schedule>) {
        let since = now.saturating_sub(self.pace.warm_ns);
        let (Some(tx), false) = (&self.ckpt, self.pace.stop_sending) else {
            self.pace.next_ckpt_ns = u64::MAX;
            return;
        };
        let unsent = match (schedule, self.pace.unsent_until(now)) {
            (Some(s), Some(until)) => s.unsent_so_far(&self.rng, self.pace.warm_ns, until, LATE_NS),
            _ => 0,
        };
        let (snap, next) = Snapshot::take(self.worker, self.pace.warm_ns, since, &self.rec, unsent);
        self.pace.next_ckpt_ns = next;
        let _ = tx.send(snap);
    }

    /// Closed loop: fill the connection's pipeline, as far as the stop condition allows,
    /// with requests sent at `now` (the time its replies were taken: the clock is read
    /// once for both).
    fn top_up<P: Protocol>(&mut self, c: &mut Conn<P>, now: u64) {
        for _ in 0..budget(c, self.spec) {
            if !self.pace.may_issue(now) {
                break;
            }
            issue(
                c,
                &mut self.rng,
                now,
                now,
                self.pace.warm_ns,
                &mut self.pace.issued_measured,
            );
        }
    }

    /// Take the outcome of reading a connection's replies: count them, or the failure.
    /// Returns the replies, and what becomes of the connection: it is done with (the
    /// server closed it or it failed, or it is spent: keep-alive off, N requests per
    /// connection, or the server said it closes, with no reply still in flight), and is
    /// reopened only while more requests may be sent (a connect for a request that will
    /// never leave would be one more than httperf or wrk make).
    fn settle<P: Protocol>(&mut self, c: &mut Conn<P>, read: Result<u64, String>) -> (u64, Next) {
        let (n, done_with) = match read {
            Ok(n) => {
                let spent = self
                    .spec
                    .requests_per_connection
                    .is_some_and(|k| c.sent_on_conn >= k);
                (
                    n,
                    (spent || c.proto.closing()) && c.inflight.is_empty() && !c.dead,
                )
            }
            // A server may close a connection with nothing in flight (HTTP
            // `Connection: close` after N requests): reopen it, no error.
            Err(why) if why == CLOSED && c.inflight.is_empty() => (0, true),
            Err(why) => {
                let now = self.pace.now();
                fail_conn(c, &mut self.rec, &why, self.pace.window(), now);
                (0, true)
            }
        };
        let next = match done_with {
            false => Next::Keep,
            true if self.pace.may_issue(self.pace.now()) => Next::Reopen,
            true => Next::Retire,
        };
        (n, next)
    }

    /// Count replies towards the progress display, in batches (an atomic add per reply
    /// would cost more than the rest of the reply's bookkeeping).
    fn report_progress(&self, pending: &mut u64, idle: bool) {
        if *pending >= 256 || (*pending > 0 && idle) {
            self.progress.done.fetch_add(*pending, Ordering::Relaxed);
            *pending = 0;
        }
    }
}

/// `ns` in seconds, as a person writes them: 30, 0.8.
fn secs(ns: u64) -> f64 {
    Duration::from_nanos(ns).as_secs_f64()
}

/// What becomes of a connection after its replies are read ([`Loop::settle`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Next {
    /// It carries on.
    Keep,
    /// It is done with and more requests may be sent: a new one in its place.
    Reopen,
    /// It is done with and no more requests will be sent: closed, not replaced.
    Retire,
}

/// The epoll loop: every load shape. Open loop sends what is due on connections with room
/// (sleeping on the timer between sends); closed loop tops each connection up as its
/// replies come in.
fn epoll_loop<P: Protocol>(
    lp: &mut Loop<'_>,
    mut poll: Poll,
    conns: &mut [Conn<P>],
    index: usize,
    threads: usize,
) -> anyhow::Result<()> {
    let spec = lp.spec;
    let open = spec.shape != LoadShape::Closed;
    // Each worker offers its connections' share of the rate: `-c 6 --threads 4` gives
    // two workers 2 connections and two 1, and an equal quarter each queued on the
    // single connections (pipeline 1) while the others' sat idle.
    let share = conns.len() as f64 / spec.connections.max(1) as f64;
    let mut schedule = Schedule::of_share(spec.shape, share, index, threads, spec.phase);
    let mut events = Events::with_capacity(1024);
    // Without a timer (spinning asked for, or timerfd refused) an open loop spins on
    // waits under 2 ms and the last 1-2 ms of longer ones ([`spin_wait_sleep`]).
    let mut timer = if open && spec.sleep_when_idle {
        Timer::new(&poll).ok()
    } else {
        None
    };
    let mut progress_pending: u64 = 0;
    let mut rr_cursor = 0usize;
    // When a request last fell due with no connection having room for it: a send late
    // past that waited on the server holding the connections; one that fell due after
    // it had room all along, and was late because this loop was (a generator's own
    // lateness, which a capacity search must not blame on the server).
    let mut last_full_ns: Option<u64> = None;

    // Closed loop: fill every connection's pipeline to start.
    if !open {
        for c in conns.iter_mut() {
            lp.top_up(c, lp.pace.now());
            flush(c, &mut lp.rec);
        }
    }

    loop {
        let now = lp.pace.now();
        let warming = !lp.pace.cpu_marked;
        if !lp.round(conns, now) {
            break;
        }
        // The round that marked the warm-up's end: its backlog is dropped
        // ([`Schedule::skip_until`]).
        if warming && lp.pace.cpu_marked {
            if let Some(s) = schedule.as_mut() {
                s.skip_until(&mut lp.rng, lp.pace.warm_ns);
            }
        }
        if now >= lp.pace.next_ckpt_ns {
            lp.checkpoint(now, schedule.as_ref());
        }
        // Open loop: send everything that is due, on connections with room.
        let mut timeout = Duration::from_millis(100);
        if let Some(s) = schedule.as_mut() {
            if !lp.pace.stop_sending {
                // A catch-up after a stall sends hundreds, a write each: the clock is read
                // again every 16 sends, or the last of 300 were stamped sent up to a
                // millisecond before they left (their service latency read that much
                // more, their lateness less). Not every send: a clock read per request
                // is a percent of the loop's CPU.
                let (mut now, mut burst) = (now, 0u32);
                loop {
                    let due = s.peek() as u64;
                    if due > now || !lp.pace.may_issue(now) {
                        break;
                    }
                    let n = conns.len();
                    let mut found = None;
                    for k in 0..n {
                        let i = (rr_cursor + k) % n;
                        // Room in its pipeline, and within its requests per
                        // connection (spent, it is reopened once its replies are in).
                        if budget(&conns[i], spec) > 0 {
                            found = Some(i);
                            break;
                        }
                    }
                    let Some(i) = found else {
                        last_full_ns = Some(now);
                        break;
                    };
                    rr_cursor = i + 1;
                    let intended = s.advance(&mut lp.rng);
                    if now.saturating_sub(intended) > LATE_NS && intended >= lp.pace.warm_ns {
                        lp.rec.late_sends += 1;
                        if last_full_ns.is_none_or(|f| f < intended) {
                            lp.rec.generator_late += 1;
                        }
                    }
                    issue(
                        &mut conns[i],
                        &mut lp.rng,
                        now,
                        intended,
                        lp.pace.warm_ns,
                        &mut lp.pace.issued_measured,
                    );
                    flush(&mut conns[i], &mut lp.rec);
                    burst += 1;
                    if burst % 16 == 0 {
                        now = lp.pace.now();
                    }
                }
                let due = s.peek() as u64;
                let wait = due.saturating_sub(lp.pace.now());
                timeout = match timer.as_mut() {
                    _ if wait < SPIN_NS => Duration::ZERO,
                    Some(t) => {
                        t.arm(due, wait - SPIN_NS / 2);
                        timeout
                    }
                    // epoll_wait has millisecond resolution, and rounds a timeout up to
                    // the next whole one (the wake would come up to 1 ms after the send
                    // was due, and never count as late): sleep the whole milliseconds
                    // but the last, and spin the rest.
                    None => spin_wait_sleep(wait).min(timeout),
                };
            }
        }
        let timeout = lp.pace.wait_at_most(now, timeout);
        if let Err(e) = poll.poll(&mut events, Some(timeout)) {
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e.into());
            }
        }
        for ev in events.iter() {
            if ev.token() == TIMER {
                if let Some(t) = timer.as_mut() {
                    t.fired();
                }
                continue;
            }
            let slot = ev.token().0;
            let Some(c) = conns.get_mut(slot) else {
                continue;
            };
            if c.dead || c.stream.is_none() {
                continue;
            }
            let mut next = Next::Keep;
            if c.connecting.is_some() {
                // A reconnect: once open, its requests leave (the closed loop's now,
                // the open loop's as they fall due).
                match lp.connect_done(c) {
                    Connect::Open if !open => lp.top_up(c, lp.pace.now()),
                    Connect::Open => {}
                    Connect::Closed(then) => next = then,
                    Connect::Pending | Connect::Failed => continue,
                }
            }
            if next == Next::Keep && ev.is_writable() {
                flush(c, &mut lp.rec);
            }
            if next == Next::Keep && (ev.is_readable() || ev.is_read_closed() || ev.is_error()) {
                let done = lp.pace.now();
                let read = read_replies(c, &mut lp.rec, done, lp.pace.window());
                let replies;
                (replies, next) = lp.settle(c, read);
                progress_pending += replies;
                if !open && next == Next::Keep {
                    lp.top_up(c, done);
                    flush(c, &mut lp.rec);
                }
            }
            if next != Next::Keep {
                if let Some(mut s) = c.stream.take() {
                    let _ = poll.registry().deregister(&mut s);
                }
            }
            if next == Next::Reopen && lp.reopen(c) {
                if let Some(Err(e)) = c.stream.as_mut().map(|s| watch(&poll, s, slot)) {
                    lp.connect_failed(c, &e.to_string());
                }
            }
        }
        lp.report_progress(&mut progress_pending, events.is_empty());
    }
    // Open loop: what fell due while every connection waited on the server, and was
    // never sent before sending stopped, is counted (its latency cannot be).
    if let (Some(s), Some(until)) = (schedule.as_mut(), lp.pace.unsent_until(lp.pace.now())) {
        lp.rec.unsent += s.count_unsent(&mut lp.rng, lp.pace.warm_ns, until, LATE_NS);
    }
    lp.progress
        .done
        .fetch_add(progress_pending, Ordering::Relaxed);
    Ok(())
}

/// How many more requests this connection may take now (pipeline room and the
/// per-connection request limit).
fn budget<P: Protocol>(c: &Conn<P>, spec: &LoadSpec) -> usize {
    if c.dead || c.stream.is_none() || c.connecting.is_some() || c.proto.closing() {
        return 0;
    }
    let room = spec.pipeline.saturating_sub(c.inflight.len());
    match spec.requests_per_connection {
        Some(k) => room.min(k.saturating_sub(c.sent_on_conn) as usize),
        None => room,
    }
}

/// How long an open loop without a timer sleeps in `epoll_wait` before a send due in
/// `wait_ns`: whole milliseconds, at least one short of the wait (epoll rounds its
/// timeout up to the next millisecond, and the wake-up comes later still), so that it
/// wakes before the send is due and spins the rest; zero below 2 ms.
fn spin_wait_sleep(wait_ns: u64) -> Duration {
    Duration::from_millis((wait_ns / 1_000_000).saturating_sub(1))
}

#[inline]
fn issue<P: Protocol>(
    c: &mut Conn<P>,
    rng: &mut SmallRng,
    now_ns: u64,
    intended_ns: u64,
    warm_ns: u64,
    issued_measured: &mut u64,
) {
    let class = c.proto.encode(rng, &mut c.wbuf) as u32;
    let p = Pending {
        class,
        sent_ns: now_ns,
        intended_ns,
    };
    c.inflight.push(p);
    c.sent_on_conn += 1;
    // A request counts towards the test's count by the rule its reply is recorded by (an
    // open loop's by its intended time): one due in the warm-up and sent after it would
    // take a place in the count and never be recorded.
    if p.measured(warm_ns) {
        *issued_measured += 1;
    }
}

/// Write as much of the pending output as the socket takes (one `send` normally).
fn flush<P>(c: &mut Conn<P>, rec: &mut Recorder) {
    let Some(stream) = c.stream.as_mut() else {
        return;
    };
    while c.wpos < c.wbuf.len() {
        match stream.write(&c.wbuf[c.wpos..]) {
            Ok(0) => break,
            Ok(n) => {
                c.wpos += n;
                rec.bytes_tx += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return, // the read side will see the failure and handle it
        }
    }
    c.wbuf.clear();
    c.wpos = 0;
}

/// Read what is there (one `recv` unless the buffer filled), parse every complete reply
/// and record it. Returns the number of replies, or why the connection is unusable.
fn read_replies<P: Protocol>(
    c: &mut Conn<P>,
    rec: &mut Recorder,
    done_ns: u64,
    w: Window,
) -> Result<u64, String> {
    let mut replies = 0u64;
    loop {
        c.make_room(READ_CHUNK / 4, READ_CHUNK);
        let Some(stream) = c.stream.as_mut() else {
            return Err("not connected".into());
        };
        let len = c.rbuf.len();
        let cap = c.rbuf.capacity();
        // SAFETY: we read into the spare capacity and only expose bytes the kernel wrote.
        let n = unsafe {
            c.rbuf.set_len(cap);
            let r = stream.read(&mut c.rbuf[len..cap]);
            c.rbuf.set_len(len);
            r
        };
        match n {
            Ok(0) => return Err(CLOSED.into()),
            Ok(n) => {
                // SAFETY: the kernel initialised n bytes after len.
                unsafe { c.rbuf.set_len(len + n) };
                rec.bytes_rx += n as u64;
                replies += parse_replies(c, rec, done_ns, w)?;
                // A short read means the socket is drained (edge-triggered: new data
                // makes a new event), so no extra recv just to see EAGAIN.
                if len + n < cap {
                    return Ok(replies);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(replies),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// Parse every complete reply in the connection's buffer and record it: the number of
/// replies, or why the stream cannot be parsed further.
fn parse_replies<P: Protocol>(
    c: &mut Conn<P>,
    rec: &mut Recorder,
    done_ns: u64,
    w: Window,
) -> Result<u64, String> {
    let (replies, used) = parse_from(
        &mut c.proto,
        &mut c.inflight,
        &c.rbuf[c.rstart..],
        rec,
        done_ns,
        w,
    )?;
    c.rstart += used;
    if c.rstart == c.rbuf.len() {
        c.rbuf.clear();
        c.rstart = 0;
    }
    Ok(replies)
}

/// Parse every complete reply at the front of `buf` and record it (those `w` records),
/// taking its request off `inflight`: the number of replies and the bytes they used, or
/// why the stream cannot be parsed further. Consecutive replies alike (class, outcome,
/// send and intended times: a pipeline's) are recorded once, counted.
fn parse_from<P: Protocol>(
    proto: &mut P,
    inflight: &mut Inflight,
    buf: &[u8],
    rec: &mut Recorder,
    done_ns: u64,
    w: Window,
) -> Result<(u64, usize), String> {
    let mut replies = 0u64;
    let mut at = 0usize;
    let mut run: Option<(usize, Outcome, u64, u64, u64)> = None;
    // Latencies from the loop's own clock: a request a reply window records may have
    // left in the warm-up, before the recorder's origin.
    let flush_run = |rec: &mut Recorder, run: Option<(usize, Outcome, u64, u64, u64)>| {
        if let Some((class, outcome, sent, intended, k)) = run {
            let latency = (
                done_ns.saturating_sub(sent),
                done_ns.saturating_sub(intended),
            );
            rec.tally(
                class,
                outcome,
                Some(latency),
                done_ns.saturating_sub(w.warm_ns),
                k,
            );
        }
    };
    while at < buf.len() {
        match proto.parse(&buf[at..]) {
            Ok(Some((used, outcome))) => {
                at += used.max(1);
                let Some(p) = inflight.pop() else {
                    flush_run(rec, run.take());
                    return Err("reply without a request (protocol out of sync)".into());
                };
                replies += 1;
                if w.records(&p, done_ns) {
                    let (sent, intended) = (p.sent_ns, p.intended_ns);
                    let class = p.class as usize;
                    match run.as_mut() {
                        Some((c, o, s, i, k))
                            if *c == class && *o == outcome && *s == sent && *i == intended =>
                        {
                            *k += 1
                        }
                        _ => {
                            flush_run(rec, run.take());
                            run = Some((class, outcome, sent, intended, 1));
                        }
                    }
                }
            }
            Ok(None) => break,
            Err(e) => {
                flush_run(rec, run.take());
                return Err(format!("unparsable reply: {e}"));
            }
        }
    }
    flush_run(rec, run.take());
    Ok((replies, at.min(buf.len())))
}

/// Why a request still waiting at a timed closed loop's end was lost
/// ([`stalled_after_ns`]).
const STALLED_AT_END: &str =
    "no reply by the end of the test after 10 times the p99 latency (1 s at least): a stall";

/// How long a request still waiting at a timed closed loop's end must have waited to be
/// lost: ten times the slowest operation class's p99 of this worker's replies, and a
/// second at least (a slow reply on its way is not counted, only a stall).
fn stalled_after_ns(rec: &Recorder) -> u64 {
    rec.classes
        .iter()
        .filter(|c| !c.service.is_empty())
        .map(|c| c.service.value_at_quantile(0.99))
        .max()
        .unwrap_or(0)
        .saturating_mul(10)
        .max(1_000_000_000)
}

/// Count the failure, once, and the measured requests it lost, once each (httperf
/// counts a lost request as one error; the failure is not another).
fn fail_conn<P: Protocol>(c: &mut Conn<P>, rec: &mut Recorder, why: &str, w: Window, now: u64) {
    rec.connection_error(why.to_string());
    rec.lost_requests(why, w.lost(&c.inflight, now));
    c.inflight.clear();
    c.shut_down();
}

#[cfg(test)]
mod tests {
    use super::{Inflight, Pending};
    use std::collections::VecDeque;
    use std::time::Duration;

    /// Without a timer, an open loop sleeps whole milliseconds short of the send (epoll
    /// rounds up) and spins the rest; below 2 ms it only spins.
    #[test]
    fn a_spinning_wait_sleeps_short_of_the_send() {
        use super::spin_wait_sleep;
        assert_eq!(spin_wait_sleep(999_999), Duration::ZERO);
        assert_eq!(spin_wait_sleep(1_999_999), Duration::ZERO);
        assert_eq!(spin_wait_sleep(2_000_000), Duration::from_millis(1));
        assert_eq!(spin_wait_sleep(4_700_000), Duration::from_millis(3));
    }

    /// A request counts towards the test's count by the rule its reply is recorded by:
    /// an open loop's by its intended time (one due in the warm-up and sent after it
    /// would take a place and never be recorded), a closed loop's by its send.
    #[test]
    fn the_count_takes_what_is_recorded() {
        use super::{issue, Conn, Protocol};
        use crate::load::Outcome;
        use rand::SeedableRng;
        struct One;
        impl Protocol for One {
            fn encode(&mut self, _: &mut rand::rngs::SmallRng, out: &mut Vec<u8>) -> usize {
                out.push(b'x');
                0
            }
            fn parse(&mut self, _: &[u8]) -> Result<Option<(usize, Outcome)>, String> {
                Ok(None)
            }
        }
        let mut c = Conn {
            stream: None,
            addr: "127.0.0.1:9".parse().unwrap(),
            proto: One,
            rbuf: Vec::new(),
            rstart: 0,
            wbuf: Vec::new(),
            wpos: 0,
            inflight: Inflight::default(),
            sent_on_conn: 0,
            reset_last: false,
            connecting: None,
            dead: false,
        };
        let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
        let warm = 1_000;
        let mut counted = 0;
        // Open loop: due at 900, sent at 1,100 (after the warm-up): not counted.
        issue(&mut c, &mut rng, 1_100, 900, warm, &mut counted);
        assert_eq!(counted, 0);
        // Due at 1,000, sent at 1,200: counted.
        issue(&mut c, &mut rng, 1_200, 1_000, warm, &mut counted);
        assert_eq!(counted, 1);
        // Closed loop (sent when "intended"): by its send.
        issue(&mut c, &mut rng, 999, 999, warm, &mut counted);
        issue(&mut c, &mut rng, 1_000, 1_000, warm, &mut counted);
        assert_eq!(counted, 2);
        assert_eq!(c.inflight.measured(warm), 2);
    }

    /// The run-length queue gives back exactly the requests a plain queue would, in order,
    /// whether they come in pipelined runs (alike) or one by one (open loop: all differ).
    #[test]
    fn inflight_runs_come_back_request_by_request() {
        let mut q = Inflight::default();
        let mut plain = VecDeque::new();
        for step in 0..500u64 {
            let alike = (step % 7) as usize;
            for k in 0..alike {
                let p = Pending {
                    class: (step % 3) as u32,
                    sent_ns: step / 2,
                    intended_ns: if step % 5 == 0 {
                        step * 10 + k as u64
                    } else {
                        step / 2
                    },
                };
                q.push(p);
                plain.push_back(p);
            }
            for _ in 0..(step % 5) {
                let got = q.pop();
                assert!(got == plain.pop_front());
            }
            assert_eq!(q.len(), plain.len());
            assert_eq!(q.is_empty(), plain.is_empty());
        }
        while let Some(p) = plain.pop_front() {
            assert!(q.pop() == Some(p));
        }
        assert!(q.pop().is_none() && q.is_empty());
        q.push(Pending {
            class: 0,
            sent_ns: 1,
            intended_ns: 1,
        });
        q.clear();
        assert_eq!(q.len(), 0);
        assert!(q.pop().is_none());
    }
}
