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
use std::sync::atomic::Ordering;
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use rand::rngs::SmallRng;
use rand::SeedableRng;

use crate::load::{LoadOutcome, LoadShape, LoadSpec, Outcome, Protocol, StopAfter};
use crate::sched::{merge, thread_cpu, Recorder, Schedule};
use crate::workload::Progress;

const READ_CHUNK: usize = 64 * 1024;
/// How long to wait for replies still in flight once sending has stopped.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);
const INTERRUPT_DRAIN: Duration = Duration::from_millis(500);
const CLOSED: &str = "server closed the connection";
/// A send later than this after its intended time counts as late (open loop).
const LATE_NS: u64 = 1_000_000;
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
    dead: bool,
}

fn connect(addr: SocketAddr) -> io::Result<TcpStream> {
    let s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_nodelay(true)?;
    s.set_nonblocking(true)?;
    Ok(TcpStream::from_std(s))
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
    let results = std::thread::scope(|scope| -> anyhow::Result<Vec<(Recorder, Option<String>)>> {
        let mut handles = Vec::new();
        for t in 0..threads {
            let conn_ids: Vec<usize> = (0..spec.connections).filter(|i| i % threads == t).collect();
            let quota = match spec.stop {
                StopAfter::Requests(n) => {
                    Some(n / threads as u64 + u64::from((t as u64) < n % threads as u64))
                }
                StopAfter::Duration(_) => None,
            };
            let barrier = barrier.clone();
            let t0_slot = t0_slot.clone();
            let new_protocol = &new_protocol;
            handles.push(scope.spawn(move || {
                worker(
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
                )
            }));
        }
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
    let measured_ns = results.iter().map(|(r, _)| r.last_ns).max().unwrap_or(0);
    // Whole test wall time, like redis-benchmark: from the end of warm-up to the last reply.
    let measured_s = measured_ns as f64 / 1e9;
    let stopped: Vec<String> = results.iter().filter_map(|(_, s)| s.clone()).collect();
    let stopped_early = if stopped.is_empty() {
        None
    } else {
        Some(stopped[0].clone())
    };
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
    quota: Option<u64>,
    new_protocol: &F,
    barrier: Arc<Barrier>,
    t0_slot: Arc<Mutex<Option<Instant>>>,
    progress: &Progress,
) -> anyhow::Result<(Recorder, Option<String>)>
where
    P: Protocol,
    F: Fn(usize) -> P + Sync,
{
    if !spec.client_cpus.is_empty() {
        let cpu = spec.client_cpus[index % spec.client_cpus.len()];
        if let Err(e) = crate::launch::pin_current_thread(&[cpu]) {
            barrier.wait();
            return Err(e);
        }
    }
    let open = spec.shape != LoadShape::Closed;
    let mut rec = Recorder::new(n_classes, open, spec.interval);
    let mut rng = SmallRng::seed_from_u64(spec.seed.wrapping_add(index as u64 * 0x9E37_79B9));
    let mut poll = match Poll::new() {
        Ok(p) => p,
        Err(e) => {
            barrier.wait();
            return Err(e.into());
        }
    };
    let mut conns: Vec<Conn<P>> = Vec::with_capacity(conn_ids.len());
    let mut setup_err = None;
    for (slot, &cid) in conn_ids.iter().enumerate() {
        let addr = endpoints[cid % endpoints.len()];
        let mut conn = Conn {
            stream: None,
            addr,
            proto: new_protocol(cid),
            rbuf: Vec::with_capacity(READ_CHUNK),
            rstart: 0,
            wbuf: Vec::with_capacity(4096),
            wpos: 0,
            inflight: Inflight::default(),
            sent_on_conn: 0,
            dead: false,
        };
        match connect(addr).and_then(|mut s| {
            poll.registry().register(
                &mut s,
                Token(slot),
                Interest::READABLE | Interest::WRITABLE,
            )?;
            Ok(s)
        }) {
            Ok(s) => conn.stream = Some(s),
            Err(e) => {
                setup_err = Some(anyhow::anyhow!("connecting to {addr}: {e}"));
                break;
            }
        }
        conns.push(conn);
    }
    barrier.wait();
    if let Some(e) = setup_err {
        return Err(e);
    }
    // Every connection is open: now the common start of all generators, if any.
    progress.wait_for_start();
    // One common origin for all threads: the first thread to get here sets it.
    let t0 = {
        let mut g = t0_slot.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
        *g.get_or_insert_with(Instant::now)
    };
    let warm_ns = spec.warmup.as_nanos() as u64;
    let end_ns = match spec.stop {
        StopAfter::Duration(d) => Some(warm_ns + d.as_nanos() as u64),
        StopAfter::Requests(_) => None,
    };
    let share = 1.0 / threads as f64;
    let mut schedule = Schedule::new(spec.shape, share);
    let mut issued_measured: u64 = 0;
    let mut cpu_marked = false;
    if warm_ns == 0 {
        rec.cpu_start = thread_cpu();
        cpu_marked = true;
    }
    let now_ns = |t0: Instant| t0.elapsed().as_nanos() as u64;
    let mut events = Events::with_capacity(1024);
    // Without a timer (spinning asked for, or timerfd refused) an open loop spins on
    // waits under 1 ms.
    let mut timer = if open && spec.sleep_when_idle {
        Timer::new(&poll).ok()
    } else {
        None
    };
    let mut progress_pending: u64 = 0;
    let mut stop_sending = false;
    let mut drain_deadline: Option<u64> = None;
    let mut stopped_early: Option<String> = None;
    let mut rr_cursor = 0usize;

    // Can another request be issued now (stop condition, quota)?
    macro_rules! may_issue {
        ($now:expr) => {
            !stop_sending
                && end_ns.map_or(true, |e| $now < e)
                && quota.map_or(true, |q| issued_measured < q || $now < warm_ns)
        };
    }

    // Closed loop: fill every connection's pipeline to start.
    if !open {
        let now = now_ns(t0);
        for c in conns.iter_mut() {
            let want = budget(c, spec);
            for _ in 0..want {
                if !may_issue!(now) {
                    break;
                }
                issue(c, &mut rng, now, now, warm_ns, &mut issued_measured);
            }
            flush(c, &mut rec);
        }
    }

    if !cpu_marked {
        progress.warmup.store(true, Ordering::Relaxed);
    }
    loop {
        let now = now_ns(t0);
        if !cpu_marked && now >= warm_ns {
            rec.cpu_start = thread_cpu();
            // Bytes, like CPU, count from the end of warm-up: they are divided by the
            // measured duration (rx_bytes_per_s, net_io_bytes_per_s).
            rec.bytes_tx = 0;
            rec.bytes_rx = 0;
            cpu_marked = true;
            progress.warmup.store(false, Ordering::Relaxed);
        }
        if progress.stopping() && !stop_sending {
            stop_sending = true;
            stopped_early.get_or_insert_with(|| "interrupted".to_string());
        }
        if !stop_sending && !may_issue!(now) {
            stop_sending = true;
        }
        if conns.iter().all(|c| c.dead) {
            stopped_early.get_or_insert_with(|| "every connection failed".to_string());
            break;
        }
        if stop_sending {
            // Only once sending stopped does the loop need the count in flight.
            if conns.iter().all(|c| c.inflight.is_empty()) {
                break;
            }
            // Ctrl-C waits half a second for replies in flight, a normal end five.
            let wait = if progress.stopping() {
                INTERRUPT_DRAIN
            } else {
                DRAIN_TIMEOUT
            };
            let dl = *drain_deadline.get_or_insert(now + wait.as_nanos() as u64);
            if now >= dl {
                for c in conns.iter_mut() {
                    rec.lost_requests(
                        "no reply before the end of the test",
                        c.inflight.measured(warm_ns),
                    );
                    c.inflight.clear();
                }
                break;
            }
        }

        // Open loop: send everything that is due, on connections with room.
        let mut timeout = Duration::from_millis(100);
        if let Some(s) = schedule.as_mut() {
            if !stop_sending {
                loop {
                    let due = s.peek() as u64;
                    if due > now || !may_issue!(now) {
                        break;
                    }
                    let n = conns.len();
                    let mut found = None;
                    for k in 0..n {
                        let i = (rr_cursor + k) % n;
                        let c = &conns[i];
                        if !c.dead
                            && c.inflight.len() < spec.pipeline
                            && c.stream.is_some()
                            && !c.proto.closing()
                        {
                            found = Some(i);
                            break;
                        }
                    }
                    let Some(i) = found else { break };
                    rr_cursor = i + 1;
                    let intended = s.advance(&mut rng);
                    if now.saturating_sub(intended) > LATE_NS && intended >= warm_ns {
                        rec.late_sends += 1;
                    }
                    issue(
                        &mut conns[i],
                        &mut rng,
                        now,
                        intended,
                        warm_ns,
                        &mut issued_measured,
                    );
                    flush(&mut conns[i], &mut rec);
                }
                let due = s.peek() as u64;
                let wait = due.saturating_sub(now_ns(t0));
                timeout = match timer.as_mut() {
                    _ if wait < SPIN_NS => Duration::ZERO,
                    Some(t) => {
                        t.arm(due, wait - SPIN_NS / 2);
                        timeout
                    }
                    // epoll_wait has millisecond resolution: below 1 ms, poll without sleeping.
                    None if wait < 1_000_000 => Duration::ZERO,
                    None => Duration::from_nanos(wait).min(timeout),
                };
            }
        }
        if let Some(e) = end_ns {
            if !stop_sending {
                timeout = timeout.min(Duration::from_nanos(e.saturating_sub(now)));
            }
        }
        if let Err(e) = poll.poll(&mut events, Some(timeout)) {
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e.into());
            }
        }
        let mut replies_this_round = 0u64;
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
            if ev.is_writable() {
                flush(c, &mut rec);
            }
            if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                let done = now_ns(t0);
                match read_replies(c, &mut rec, done, warm_ns) {
                    Ok(n) => replies_this_round += n,
                    // A server may close a connection with nothing in flight (HTTP
                    // `Connection: close` after N requests): reopen it, no error.
                    Err(why) if why == CLOSED && c.inflight.is_empty() => {
                        c.stream = None;
                        reconnect(c, &mut poll, slot, &mut rec);
                    }
                    Err(why) => {
                        fail_conn(c, &mut rec, &why, warm_ns);
                        reconnect(c, &mut poll, slot, &mut rec);
                    }
                }
                // Keep-alive off (or N requests per connection), or the server said it
                // closes: reopen once the replies in flight are in.
                let spent = spec
                    .requests_per_connection
                    .is_some_and(|k| c.sent_on_conn >= k);
                if (spent || c.proto.closing()) && c.inflight.is_empty() && !c.dead {
                    if let Some(mut s) = c.stream.take() {
                        let _ = poll.registry().deregister(&mut s);
                    }
                    reconnect(c, &mut poll, slot, &mut rec);
                }
                if !open && !c.dead {
                    let now = now_ns(t0);
                    let want = budget(c, spec);
                    for _ in 0..want {
                        if !may_issue!(now) {
                            break;
                        }
                        issue(c, &mut rng, now, now, warm_ns, &mut issued_measured);
                    }
                    flush(c, &mut rec);
                }
            }
        }
        progress_pending += replies_this_round;
        if progress_pending >= 256 || (progress_pending > 0 && events.is_empty()) {
            progress.done.fetch_add(progress_pending, Ordering::Relaxed);
            progress_pending = 0;
        }
    }
    progress.done.fetch_add(progress_pending, Ordering::Relaxed);
    rec.cpu_end = thread_cpu();
    if !cpu_marked {
        rec.cpu_start = rec.cpu_end;
    }
    // Times are recorded from the end of warm-up; nothing measured means zero duration.
    if rec.first_ns.is_none() {
        rec.last_ns = 0;
    }
    Ok((rec, stopped_early))
}

/// How many more requests this connection may take now (pipeline room and the
/// per-connection request limit).
fn budget<P: Protocol>(c: &Conn<P>, spec: &LoadSpec) -> usize {
    if c.dead || c.stream.is_none() || c.proto.closing() {
        return 0;
    }
    let room = spec.pipeline.saturating_sub(c.inflight.len());
    match spec.requests_per_connection {
        Some(k) => room.min(k.saturating_sub(c.sent_on_conn) as usize),
        None => room,
    }
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
    c.inflight.push(Pending {
        class,
        sent_ns: now_ns,
        intended_ns,
    });
    c.sent_on_conn += 1;
    if now_ns >= warm_ns {
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
    warm_ns: u64,
) -> Result<u64, String> {
    let mut replies = 0u64;
    loop {
        let Some(stream) = c.stream.as_mut() else {
            return Err("not connected".into());
        };
        if c.rbuf.capacity() - c.rbuf.len() < READ_CHUNK / 4 {
            if c.rstart > 0 {
                c.rbuf.drain(..c.rstart);
                c.rstart = 0;
            }
            c.rbuf.reserve(READ_CHUNK);
        }
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
                // Parse every complete reply. Consecutive ones alike (class, outcome,
                // send and intended times: a pipeline's) are recorded once, counted.
                let mut run: Option<(usize, Outcome, u64, u64, u64)> = None;
                let flush_run =
                    |rec: &mut Recorder, run: Option<(usize, Outcome, u64, u64, u64)>| {
                        if let Some((class, outcome, sent, intended, k)) = run {
                            rec.record_n(
                                class,
                                outcome,
                                sent,
                                intended,
                                done_ns - warm_ns.min(done_ns),
                                k,
                            );
                        }
                    };
                loop {
                    if c.rstart >= c.rbuf.len() {
                        break;
                    }
                    match c.proto.parse(&c.rbuf[c.rstart..]) {
                        Ok(Some((used, outcome))) => {
                            c.rstart += used.max(1);
                            let Some(p) = c.inflight.pop() else {
                                flush_run(rec, run.take());
                                return Err("reply without a request (protocol out of sync)".into());
                            };
                            replies += 1;
                            if p.measured(warm_ns) {
                                let sent = p.sent_ns - warm_ns.min(p.sent_ns);
                                let intended = p.intended_ns - warm_ns.min(p.intended_ns);
                                let class = p.class as usize;
                                match run.as_mut() {
                                    Some((c, o, s, i, k))
                                        if *c == class
                                            && *o == outcome
                                            && *s == sent
                                            && *i == intended =>
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
                if c.rstart == c.rbuf.len() {
                    c.rbuf.clear();
                    c.rstart = 0;
                }
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

/// Count the failure, once, and the measured requests it lost, once each (httperf
/// counts a lost request as one error; the failure is not another).
fn fail_conn<P: Protocol>(c: &mut Conn<P>, rec: &mut Recorder, why: &str, warm_ns: u64) {
    rec.connection_error(why.to_string());
    rec.lost_requests(why, c.inflight.measured(warm_ns));
    c.inflight.clear();
    c.stream = None;
}

/// Open the connection again (blocking connect; fast on loopback). A refused connect
/// marks the connection dead: the server is gone.
fn reconnect<P: Protocol>(c: &mut Conn<P>, poll: &mut Poll, slot: usize, rec: &mut Recorder) {
    c.rbuf.clear();
    c.rstart = 0;
    c.wbuf.clear();
    c.wpos = 0;
    c.inflight.clear();
    c.sent_on_conn = 0;
    c.proto.reset();
    match connect(c.addr).and_then(|mut s| {
        poll.registry()
            .register(&mut s, Token(slot), Interest::READABLE | Interest::WRITABLE)?;
        Ok(s)
    }) {
        Ok(s) => {
            c.stream = Some(s);
            rec.reconnects += 1;
        }
        Err(e) => {
            rec.connection_error(format!("reconnect to {}: {e}", c.addr));
            c.dead = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Inflight, Pending};
    use std::collections::VecDeque;

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
