//! The receiving end (`rackbench net serve`): accepts one test at a time on its control
//! address, opens data sockets on ephemeral ports of the same IP, counts what arrives per
//! stream (bytes; for UDP also packets, loss, reordering and jitter), reports every interval
//! and the total back over the control connection, with the CPU time of its own data
//! threads. It is the same code in a separate process (the CLI) and on a thread (tests).

use std::io::Read;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};

use crate::mark::Marker;
use crate::proto::{self, CpuUsage, LineReader, Msg, Proto, StreamStats, MAX_UDP_PAYLOAD};

/// Options of `rackbench net serve`.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// CPUs for the data threads when the sender does not ask for others.
    pub cpus: Vec<usize>,
    /// Serve one test and return (scripts, tests).
    pub once: bool,
    /// Print one line per test on stderr.
    pub verbose: bool,
}

/// How long the idle receiver waits in poll for a sender before it looks at `stop` again.
const ACCEPT_POLL: Duration = Duration::from_millis(100);

/// Wait up to [`ACCEPT_POLL`] for a connection on the non-blocking `listener` and accept
/// it: None when none came, or when the one that made it ready left before the accept.
fn accept_ready(listener: &TcpListener) -> std::io::Result<Option<(TcpStream, SocketAddr)>> {
    if !proto::wait_ready(listener.as_raw_fd(), libc::POLLIN, ACCEPT_POLL)? {
        return Ok(None);
    }
    match listener.accept() {
        Ok(c) => Ok(Some(c)),
        Err(e)
            if e.kind() == std::io::ErrorKind::WouldBlock
                || e.kind() == std::io::ErrorKind::Interrupted =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Serve tests on `listener` until `stop` is set (or after one test with `once`).
///
/// The listener is waited on with poll, and accepted from only when a sender is there.
/// An `accept(2)` that finds no connection still allocates a socket and a file and frees
/// them (the inode through RCU), and that churn costs whatever else runs on the CPU:
/// an idle receiver that polled `accept` every 20 ms, pinned to the receiving CPU of
/// another TCP test on loopback (iperf3's, or a second receiver's), cut that test from
/// 19.5 to 15.8 Gbit/s (3 rounds each, BBR, 2-CPU VM); a process that only created and
/// closed a socket or a pipe at that rate did the same, one that slept at that rate
/// (or read /proc files, or waited on a socket) did not.
pub fn serve(listener: TcpListener, opts: &ServeOptions, stop: &AtomicBool) -> anyhow::Result<()> {
    listener
        .set_nonblocking(true)
        .context("setting the listener non-blocking")?;
    while !stop.load(Ordering::Relaxed) {
        match accept_ready(&listener) {
            Ok(None) => {}
            Ok(Some((conn, peer))) => {
                conn.set_nonblocking(false)?;
                match handle_test(conn, opts, stop) {
                    Ok(true) => {
                        if opts.verbose {
                            engine::errln!("rackbench net serve: test from {peer} done");
                        }
                        if opts.once {
                            return Ok(());
                        }
                    }
                    // A probe (readiness check) that connected and left.
                    Ok(false) => {}
                    Err(e) => {
                        if opts.verbose {
                            engine::errln!("rackbench net serve: test from {peer} failed: {e:#}");
                        }
                        if opts.once {
                            return Err(e);
                        }
                    }
                }
            }
            Err(e) => return Err(e).context("accepting a control connection"),
        }
    }
    Ok(())
}

/// Live counters of one stream, written by its data thread, read by the reporter.
#[derive(Default)]
struct Live {
    bytes: AtomicU64,
    packets: AtomicU64,
    lost: AtomicU64,
    ooo: AtomicU64,
    jitter_bits: AtomicU64,
    jitter_samples: AtomicU64,
    /// UDP: datagrams received that were sent after the sender's end of the warm-up, and
    /// their bytes.
    measured_packets: AtomicU64,
    measured_bytes: AtomicU64,
    /// ns since the data threads started (`base`) of the last data received.
    last_ns: AtomicU64,
    /// UDP: ns since `base` of the last read with data before the one that brought this
    /// stream's first datagram sent after the sender's end of the warm-up (that read's own
    /// time if there was none before; 0: none yet).
    first_measured_ns: AtomicU64,
    /// UDP: raised after the sender's `done` (and [`UDP_SETTLE`]): the stream's thread
    /// ends at its first receive that finds the socket empty.
    drain: AtomicBool,
    /// The stream has ended (its end of file came, or its thread has ended).
    done: AtomicBool,
}

impl Live {
    fn snapshot(&self) -> StreamStats {
        StreamStats {
            bytes: self.bytes.load(Ordering::Relaxed),
            packets: self.packets.load(Ordering::Relaxed),
            lost: self.lost.load(Ordering::Relaxed) as i64,
            out_of_order: self.ooo.load(Ordering::Relaxed),
            jitter_ms: f64::from_bits(self.jitter_bits.load(Ordering::Relaxed)) * 1e3,
            jitter_samples: self.jitter_samples.load(Ordering::Relaxed),
        }
    }
}

/// CPU time of the calling thread.
pub(crate) fn thread_cpu() -> CpuUsage {
    rusage(libc::RUSAGE_THREAD)
}

/// CPU time of this whole process (every thread), as iperf3 counts its own.
pub(crate) fn process_cpu() -> CpuUsage {
    rusage(libc::RUSAGE_SELF)
}

fn rusage(who: libc::c_int) -> CpuUsage {
    // SAFETY: getrusage fills the zeroed struct we own.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        if libc::getrusage(who, &mut ru) != 0 {
            return CpuUsage::default();
        }
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        CpuUsage {
            user_s: tv(ru.ru_utime),
            system_s: tv(ru.ru_stime),
        }
    }
}

pub(crate) fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// How many threads carry `streams` TCP streams at one end: one per CPU the end may run
/// on (`cpus`; unpinned, every CPU this process may use), and never more than the
/// streams. Each thread sends or receives its share of the streams (stream `i` on thread
/// `i % threads`) in one poll loop, as iperf3 3.12 runs all of a test's streams in one
/// thread. More threads than CPUs only take turns on them: between two network
/// namespaces, where the sender's CPU also runs the receive path's softirq, iperf3 itself
/// moved 17 Gbit/s as four one-stream processes on one CPU each end against 30 Gbit/s as
/// one `-P 4` process (and rackbench, one thread per stream then, 16).
pub(crate) fn tcp_threads(streams: usize, cpus: &[usize]) -> usize {
    let cpus = if cpus.is_empty() {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        cpus.len()
    };
    streams.min(cpus).max(1)
}

/// Streams `0..streams` dealt to `threads` threads in turn: thread `t` carries streams
/// `t`, `t + threads`, ...
pub(crate) fn deal(streams: usize, threads: usize) -> Vec<Vec<usize>> {
    let mut dealt = vec![Vec::new(); threads.max(1)];
    for i in 0..streams {
        dealt[i % threads.max(1)].push(i);
    }
    dealt
}

/// Data threads that run until `end` is raised (a receiver's `finish`, a sender's
/// `stop`), which is raised and the threads joined on every way out of the function that
/// started them: an error returned (`?`, `bail!`) on its way would otherwise leave them
/// running, a UDP thread for ever.
pub(crate) struct Workers<T> {
    end: Arc<AtomicBool>,
    handles: Vec<std::thread::JoinHandle<T>>,
}

impl<T> Workers<T> {
    pub(crate) fn new(end: &Arc<AtomicBool>) -> Self {
        Workers {
            end: Arc::clone(end),
            handles: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, h: std::thread::JoinHandle<T>) {
        self.handles.push(h);
    }

    /// Every thread has returned (each on its own: none was told to end).
    pub(crate) fn all_finished(&self) -> bool {
        self.handles.iter().all(|h| h.is_finished())
    }

    /// Raise `end` and join every thread: what each returned (Err if it panicked), in
    /// the order they were started.
    pub(crate) fn join(mut self) -> Vec<std::thread::Result<T>> {
        self.end.store(true, Ordering::Relaxed);
        std::mem::take(&mut self.handles)
            .into_iter()
            .map(|h| h.join())
            .collect()
    }
}

impl<T> Drop for Workers<T> {
    fn drop(&mut self) {
        self.end.store(true, Ordering::Relaxed);
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

/// A test refused: the sender is told why (best effort), and the same reason is the error.
fn refuse(out: &mut TcpStream, why: String) -> anyhow::Error {
    let _ = proto::send(
        out,
        &Msg::Error {
            message: why.clone(),
        },
    );
    anyhow::anyhow!(why)
}

/// Run one test on an accepted control connection. Ok(false): the peer left before
/// asking for anything (a readiness probe).
fn handle_test(conn: TcpStream, opts: &ServeOptions, stop: &AtomicBool) -> anyhow::Result<bool> {
    let mut out = conn.try_clone()?;
    let mut rd = LineReader::new(conn);
    let start = match rd.next(Instant::now() + Duration::from_secs(10)) {
        Ok(Some(m)) => m,
        Ok(None) => return Ok(false),
        Err(_) => return Ok(false),
    };
    let Msg::Start {
        version,
        proto: proto_,
        payload,
        duration_s,
        streams,
        interval_s,
        cpus,
        congestion,
        window,
        paced,
        warmup_s,
    } = start
    else {
        bail!("expected `start`, got {start:?}");
    };
    if version != proto::PROTOCOL_VERSION {
        let m = format!(
            "protocol version {version} not supported (this receiver speaks {})",
            proto::PROTOCOL_VERSION
        );
        return Err(refuse(&mut out, m));
    }
    let bad = if streams == 0 || streams > 256 {
        Some(format!("streams = {streams}: use 1 to 256"))
    } else if proto_ == Proto::Udp
        && !(proto::UDP_HEADER_BYTES..=MAX_UDP_PAYLOAD).contains(&payload)
    {
        Some(format!(
            "UDP payload {payload} B: use {} to {MAX_UDP_PAYLOAD}",
            proto::UDP_HEADER_BYTES
        ))
    } else if !(duration_s > 0.0
        && warmup_s >= 0.0
        && duration_s + warmup_s <= 86_400.0
        && interval_s.is_finite()
        && interval_s >= 0.05)
    {
        Some("duration, warm-up or interval out of range".to_string())
    } else {
        None
    };
    if let Some(m) = bad {
        return Err(refuse(&mut out, m));
    }
    let cpus = if cpus.is_empty() {
        opts.cpus.clone()
    } else {
        cpus
    };
    let ip: IpAddr = out.local_addr()?.ip();

    // Data sockets on ephemeral ports of the control IP.
    let mut tcp_listener = None;
    let mut udp_socks = Vec::new();
    let ports = match proto_ {
        Proto::Tcp => {
            let l = TcpListener::bind(SocketAddr::new(ip, 0))
                .context("binding the TCP data listener")?;
            // On the listener, so the accepted streams start on it (iperf3's server
            // sets -C on each stream it accepts, after the connection opened).
            if let Some(cc) = &congestion {
                crate::sender::set_congestion(&l, cc)
                    .map_err(|e| refuse(&mut out, format!("{e:#}")))?;
            }
            // On the listener too, so the accepted streams have them from the first
            // segment (the window scale is chosen as the connection opens), as iperf3 -w.
            if let Some(w) = window {
                crate::sender::set_buffers(&l, w)
                    .map_err(|e| refuse(&mut out, format!("{e:#}")))?;
            }
            let p = l.local_addr()?.port();
            tcp_listener = Some(l);
            vec![p]
        }
        Proto::Udp => {
            let mut v = Vec::new();
            for _ in 0..streams {
                let s =
                    UdpSocket::bind(SocketAddr::new(ip, 0)).context("binding a UDP data socket")?;
                if let Some(w) = window {
                    crate::sender::set_buffers(&s, w)
                        .map_err(|e| refuse(&mut out, format!("{e:#}")))?;
                }
                // Without --window, the system's default receive buffer, as iperf3 leaves
                // it: loss then compares like for like (net.core.rmem_default is in the
                // disclosure).
                s.set_read_timeout(Some(Duration::from_millis(20)))?;
                v.push(s.local_addr()?.port());
                udp_socks.push(s);
            }
            v
        }
    };
    proto::send(&mut out, &Msg::Ready { data_ports: ports })?;

    let mut tcp_conns = Vec::new();
    if let Some(l) = &tcp_listener {
        // Waited for with poll, as the control listener in `serve` (an empty accept
        // churns a socket just before the measured window).
        l.set_nonblocking(true)?;
        let deadline = Instant::now() + Duration::from_secs(10);
        while tcp_conns.len() < streams {
            if Instant::now() > deadline || stop.load(Ordering::Relaxed) {
                bail!(
                    "the sender opened {} of {streams} data connections",
                    tcp_conns.len()
                );
            }
            if let Some((c, _)) = accept_ready(l).context("accepting a data connection")? {
                c.set_nonblocking(false)?;
                tcp_conns.push(c);
            }
        }
    }
    // The data threads start before `go`, so that the streams are read from the first
    // segment, as iperf3's server has them in its select set before the client sends.
    // Started after `go`, they let the first data fill the windows while the sender
    // stalled; the ACKs that opened them, from this end's CPU, then sent the sender's
    // data from there, and BBR's pacing timer, pinned to the CPU that arms it, stayed on
    // this end for the whole test: 4 TCP streams between two network namespaces moved
    // 16-17 Gbit/s with this end's CPU at 100% and the sender's idle, 21-23 started
    // first. The threads count time from `base`; the test's clock starts at `go`.
    let base = Instant::now();
    // Up at the end of the warm-up (at once without one): each worker then notes its CPU,
    // and this thread the time, its own CPU, the process's and the streams' counts (where
    // the measured intervals and the totals start).
    let measuring = Arc::new(AtomicBool::new(warmup_s <= 0.0));
    let finish = Arc::new(AtomicBool::new(false));
    let lives: Vec<Arc<Live>> = (0..streams).map(|_| Arc::new(Live::default())).collect();
    let mut workers = Workers::new(&finish);
    // Why data threads could not be pinned to `cpus`, one line each.
    let pin_errors: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
    // Which streams each thread receives: TCP's are shared out, one thread per CPU
    // (`tcp_threads`); a UDP stream has a thread of its own (it naps on its own queue).
    let threads = match proto_ {
        Proto::Tcp => tcp_threads(streams, &cpus),
        Proto::Udp => streams,
    };
    let mut tcp_conns: Vec<Option<TcpStream>> = tcp_conns.into_iter().map(Some).collect();
    let mut udp_socks: Vec<Option<UdpSocket>> = udp_socks.into_iter().map(Some).collect();
    for (t, ids) in deal(streams, threads).into_iter().enumerate() {
        let lives: Vec<Arc<Live>> = ids.iter().map(|&i| Arc::clone(&lives[i])).collect();
        let finish = Arc::clone(&finish);
        let measuring = Arc::clone(&measuring);
        let cpus = cpus.clone();
        let pin_errors = Arc::clone(&pin_errors);
        let sock = match proto_ {
            Proto::Tcp => Sock::Tcp(ids.iter().filter_map(|&i| tcp_conns[i].take()).collect()),
            Proto::Udp => match udp_socks[ids[0]].take() {
                Some(s) => Sock::Udp(s),
                None => bail!("no UDP data socket for stream {}", ids[0]),
            },
        };
        let h = std::thread::Builder::new()
            .name(format!("net-rx-{t}"))
            .spawn(move || -> CpuUsage {
                // A pinning the kernel refuses, or narrows (a CPU outside the cpuset),
                // does not stop the test: the thread runs where it is, and the report
                // says so ([`Msg::Result`]'s `pin_error`), flagged on the result.
                if let Err(e) = engine::launch::pin_current_thread_exactly(&cpus) {
                    if let Ok(mut v) = pin_errors.lock() {
                        v.push(format!("{e:#}"));
                    }
                }
                let mut marker = Marker::new(&measuring);
                match sock {
                    Sock::Tcp(s) => rx_tcp(s, &lives, &finish, &mut marker, base),
                    Sock::Udp(s) => {
                        rx_udp(s, payload, paced, &lives[0], &finish, &mut marker, base)
                    }
                }
                for live in &lives {
                    live.done.store(true, Ordering::Relaxed);
                }
                marker.finish(|| ()).cpu_since()
            })?;
        workers.push(h);
    }

    match rd.next(Instant::now() + Duration::from_secs(10))? {
        Some(Msg::Go) => {}
        other => bail!("expected `go`, got {other:?}"),
    }
    let t0 = Instant::now();
    // The data threads' times (ns since `base`) as seconds since `go`; 0: none.
    let go_ns = t0.duration_since(base).as_nanos() as u64;
    let since_go = |ns: u64| (ns > 0).then(|| ns.saturating_sub(go_ns) as f64 / 1e9);
    let mark_at = t0 + Duration::from_secs_f64(warmup_s);
    let mut mark = measuring.load(Ordering::Relaxed).then(|| {
        let counts = vec![StreamStats::default(); streams];
        (0.0, thread_cpu(), process_cpu(), counts)
    });
    // Report intervals until the sender says `done` (or leaves, or we are stopped).
    let mut prev: Vec<StreamStats> = vec![StreamStats::default(); streams];
    // Intervals follow one another: each starts where the last ended (a late tick makes
    // one a little longer, not two overlap). Times are from the end of the warm-up: the
    // warm-up's intervals, every `interval_s` from `go`, end before 0, the last at 0 (the
    // mark), and the measured ones run every `interval_s` from there.
    let every = Duration::from_secs_f64(interval_s);
    let mut prev_end_s = match mark {
        None => -warmup_s,
        Some(_) => 0.0,
    };
    let mut next_tick = match mark {
        None => (t0 + every).min(mark_at),
        Some(_) => t0 + every,
    };
    let mut sent = None;
    // When the sender said `done`: where the CPU figures' span ends, not after the wait
    // for late data below, which would spread the test's CPU over a longer, idle span.
    // (The CPU itself is read after that wait: the little it spends, a few polls and
    // the reading of what was still queued, is counted.)
    let mut done_s = 0.0;
    let mut sender_gone = false;
    let hard_deadline = mark_at + Duration::from_secs_f64(duration_s + 30.0);
    loop {
        if stop.load(Ordering::Relaxed) {
            // Stopped mid-run: drop everything without a result, as a killed process would
            // (the data threads are ended and joined as `workers` goes).
            return Ok(true);
        }
        let wait = next_tick.min(Instant::now() + Duration::from_millis(50));
        match rd.next(wait) {
            Ok(Some(Msg::Done { sent: s, warmup: w })) => {
                sent = Some((s, w));
                done_s = t0.elapsed().as_secs_f64();
                break;
            }
            Ok(Some(other)) => bail!("unexpected control message {other:?}"),
            Ok(None) => {}
            Err(_) => {
                sender_gone = true;
                break;
            }
        }
        if Instant::now() >= next_tick {
            let warm = mark.is_none();
            let ends_warmup = warm && next_tick >= mark_at;
            let end_s = if ends_warmup {
                0.0
            } else {
                t0.elapsed().as_secs_f64() - mark.as_ref().map_or(warmup_s, |m| m.0)
            };
            let now: Vec<StreamStats> = lives.iter().map(|l| l.snapshot()).collect();
            let _ = proto::send(&mut out, &interval(prev_end_s, end_s, &now, &prev, warm));
            prev_end_s = end_s;
            if ends_warmup {
                measuring.store(true, Ordering::Relaxed);
                let at = t0.elapsed().as_secs_f64();
                mark = Some((at, thread_cpu(), process_cpu(), now.clone()));
            }
            prev = now;
            next_tick += every;
            if mark.is_none() {
                next_tick = next_tick.min(mark_at);
            }
        }
        if Instant::now() > hard_deadline {
            bail!("the sender never said `done`");
        }
    }
    // TCP: the sender closed its data connections before `done`; wait for EOF on each.
    // UDP: datagrams still on their way get `UDP_SETTLE`, then each stream reads what
    // queued until it finds its socket empty: a fixed wait counted a queue longer than it
    // (a large --window) as lost.
    let waited = Instant::now();
    let grace = match proto_ {
        Proto::Tcp => TCP_END_WAIT,
        Proto::Udp => UDP_DRAIN_MAX,
    };
    while waited.elapsed() < grace {
        if proto_ == Proto::Udp && waited.elapsed() >= UDP_SETTLE {
            for l in &lives {
                l.drain.store(true, Ordering::Relaxed);
            }
        }
        if lives.iter().all(|l| l.done.load(Ordering::Relaxed)) {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut cpu = CpuUsage::default();
    for c in workers.join() {
        cpu.add(&c.unwrap_or_default());
    }
    let mut ends: Vec<StreamStats> = lives.iter().map(|l| l.snapshot()).collect();
    // Stopped during the warm-up: nothing measured, everything was warm-up.
    let ended_warm = mark.is_none();
    let (mark_s, cpu0, process0, at_marks) = mark.unwrap_or_else(|| {
        let end = t0.elapsed().as_secs_f64();
        (end, thread_cpu(), process_cpu(), ends.clone())
    });
    cpu.add(&thread_cpu().since(&cpu0));
    // Each stream's counts from the mark, and what its warm-up counted: from the snapshot
    // the measured intervals start from, so that TCP's add up to the totals (each worker's
    // own mark, up to one pass of its loop later, is where its CPU is counted from). UDP's
    // totals are of the sender's datagrams (below), over their own span: its intervals, on
    // this end's clock from its mark, add up to them within what crossed between the two
    // ends' marks, in datagrams and in time.
    let (mut totals, mut warmup): (Vec<StreamStats>, Vec<StreamStats>) = ends
        .iter()
        .zip(&at_marks)
        .map(|(end, warm)| (counted_since(end, warm), warm.clone()))
        .unzip();
    if let (Proto::Udp, Some((sent, warm))) = (proto_, &sent) {
        let streams = totals.iter_mut().zip(&mut warmup).zip(&mut ends);
        for (i, ((t, wu), e)) in streams.enumerate() {
            let l = &lives[i];
            // Whenever this end marked (even after the sender's `done`, on ends whose
            // marks fell further apart than the test): the datagrams carry the sender's.
            let arrived = (
                l.measured_packets.load(Ordering::Relaxed),
                l.measured_bytes.load(Ordering::Relaxed),
            );
            let sent = (
                sent.get(i).map_or(0, |s| s.packets),
                warm.get(i).map_or(0, |w| w.packets),
            );
            split_udp(e, t, wu, arrived, sent);
        }
    }
    let last_ns = lives
        .iter()
        .map(|l| l.last_ns.load(Ordering::Relaxed))
        .max()
        .unwrap_or(0);
    // Without any data, the test ended when the sender said so (not after the wait for
    // late data).
    let last_s = since_go(last_ns).unwrap_or(done_s);
    // Where the test ended here: the sender's `done`, or its last data if later (data
    // still on its way). Not the last data alone: a paced sender's last write left up to
    // a pacing interval before its end, and a 1 Mbit/s test of 3 s, its bytes over the
    // 2.15 s from the mark to the last of them, read 1.47 Mbit/s.
    let end_s = last_s.max(done_s);
    // Where the last interval ends, on the intervals' time (from the mark).
    let last_end_s = if ended_warm {
        end_s - warmup_s
    } else {
        (end_s - mark_s).max(0.0)
    };
    let first_measured_s = lives
        .iter()
        .map(|l| l.first_measured_ns.load(Ordering::Relaxed))
        .filter(|&ns| ns > 0)
        .min()
        .and_then(since_go);
    let by_senders_mark = proto_ == Proto::Udp && warmup_s > 0.0;
    let duration = counts_span_s(mark_s, end_s, first_measured_s.filter(|_| by_senders_mark));
    // The CPU's span: from this end's mark to the sender's `done` (or the last data, if
    // later); none if this end never marked.
    let cpu_span_s = if ended_warm {
        0.0
    } else {
        (end_s - mark_s).max(0.0)
    };
    if sender_gone {
        bail!("the sender closed the control connection before `done`");
    }
    // The last, partial interval (a test of 10 s at 1 s intervals has ten, as iperf3
    // reports them), unless it is too short to give a rate worth printing: its bytes are in
    // the totals either way.
    if last_end_s - prev_end_s >= FINAL_INTERVAL_MIN * interval_s {
        let _ = proto::send(
            &mut out,
            &interval(prev_end_s, last_end_s, &ends, &prev, ended_warm),
        );
    }
    let process = proto::ProcessCpu {
        cpu: process_cpu().since(&process0),
        span_s: cpu_span_s,
        process: proto::process_token(),
    };
    proto::send(
        &mut out,
        &Msg::Result {
            duration_s: duration,
            streams: totals,
            warmup: if warmup_s > 0.0 { warmup } else { Vec::new() },
            cpu,
            cpu_span_s: Some(cpu_span_s),
            process: Some(process),
            pin_error: pin_error(&pin_errors, &cpus, threads),
        },
    )?;
    Ok(true)
}

/// What the data threads' failed pinnings (`errors`, one per thread that failed) say
/// about the test: None when every thread was pinned to `cpus` as asked.
fn pin_error(
    errors: &std::sync::Mutex<Vec<String>>,
    cpus: &[usize],
    threads: usize,
) -> Option<String> {
    let errors = errors.lock().map(|v| v.clone()).unwrap_or_default();
    let first = errors.first()?;
    Some(format!(
        "{} of {threads} data thread(s) not pinned to CPUs {} as asked: {first}",
        errors.len(),
        engine::launch::cpu_list_text(cpus)
    ))
}

/// The span the end-of-test counts were taken over, seconds: from this end's mark to the
/// test's end here (`end_s`: the sender's `done`, or the last data if later). A UDP test
/// after a warm-up counts the datagrams sent after the sender's mark ([`split_udp`]),
/// whenever this end marked its own: its span starts where the first of them can have
/// arrived, the read with data before the one that brought it
/// (`first_measured_s`), so that the rate is of those datagrams over their own time, not
/// over a span a mark's skew made longer or shorter.
fn counts_span_s(mark_s: f64, end_s: f64, first_measured_s: Option<f64>) -> f64 {
    match first_measured_s.map(|first| end_s - first) {
        Some(span) if span > 0.0 => span,
        // One read brought them all, with none before it: from the mark.
        _ => (end_s - mark_s).max(0.0),
    }
}

/// The shortest last interval reported, as a share of the interval length.
const FINAL_INTERVAL_MIN: f64 = 0.1;

/// One interval's report: what each stream counted between `prev` and `now`.
fn interval(
    start_s: f64,
    end_s: f64,
    now: &[StreamStats],
    prev: &[StreamStats],
    warmup: bool,
) -> Msg {
    Msg::Interval {
        start_s,
        end_s,
        streams: now
            .iter()
            .zip(prev)
            .map(|(n, p)| counted_since(n, p))
            .collect(),
        warmup,
    }
}

/// One UDP stream's counts at the end of a test, split by the sender's end of the warm-up.
/// The test's datagrams are those the sender sent after it (they carry its mark): of
/// them, what arrived is what was received, whenever this end marked its own, so that
/// sent less received is the loss; the warm-up's are the rest of what arrived, so each
/// datagram is counted once.
///
/// `end`: everything that arrived; its loss becomes that of all the sender sent (the last
/// interval's, counted from `go` as the others). `test` and `warm`: the counts from this
/// end's mark and before it, replaced here. `arrived`: packets and bytes of the marked
/// datagrams that arrived, whenever this end marked (if at all: ends whose marks fell
/// further apart than the test). `sent`: what the sender sent after its mark and before
/// it.
fn split_udp(
    end: &mut StreamStats,
    test: &mut StreamStats,
    warm: &mut StreamStats,
    arrived: (u64, u64),
    sent: (u64, u64),
) {
    let (after, before) = sent;
    let (packets, bytes) = arrived;
    end.lost = (after + before).saturating_sub(end.packets) as i64;
    test.packets = packets;
    test.bytes = bytes;
    test.lost = after.saturating_sub(packets) as i64;
    warm.packets = end.packets.saturating_sub(packets);
    warm.bytes = end.bytes.saturating_sub(bytes);
}

/// What a stream counted from `before` to `now`; its jitter is the running estimate at
/// `now`, and its samples those taken in between. Its loss is the change in the loss
/// count, below 0 when datagrams counted lost before `before` arrived late in between
/// (not clipped to 0, which left them lost in the earlier interval and the intervals'
/// loss above the test's).
fn counted_since(now: &StreamStats, before: &StreamStats) -> StreamStats {
    StreamStats {
        bytes: now.bytes.saturating_sub(before.bytes),
        packets: now.packets.saturating_sub(before.packets),
        lost: now.lost - before.lost,
        out_of_order: now.out_of_order.saturating_sub(before.out_of_order),
        jitter_ms: now.jitter_ms,
        jitter_samples: now.jitter_samples.saturating_sub(before.jitter_samples),
    }
}

/// What one receiving thread reads: its share of a test's TCP streams, or one UDP stream.
enum Sock {
    Tcp(Vec<TcpStream>),
    Udp(UdpSocket),
}

/// 128 KiB reads, like iperf3's default TCP buffer.
const TCP_READ: usize = 128 * 1024;

/// After the sender's `done`: how long the receiver waits for the end of each TCP stream
/// (the sender closed them before it).
pub(crate) const TCP_END_WAIT: Duration = Duration::from_secs(5);
/// UDP after `done`: how long datagrams still on their way are waited for before the
/// streams drain (the sender's last ones can reach the receiver after its `done`, on
/// another queue of either end's NIC).
const UDP_SETTLE: Duration = Duration::from_millis(200);
/// UDP after `done`: the longest the streams read what queued before they are ended, the
/// rest of it counted lost.
pub(crate) const UDP_DRAIN_MAX: Duration = Duration::from_secs(2);

/// How long a receiving thread waits in poll before it looks at `finish` again.
const RX_POLL: Duration = Duration::from_millis(100);

/// iperf3's receiving loop (`iperf_tcp_recv` -> `Nread`): a non-blocking socket, poll for
/// data, then read until the 128 KiB buffer is full or the socket is drained. On loopback
/// the sender's CPU runs the receive path too, and pays for each wake-up of a sleeping
/// receiver (an inter-processor interrupt, dear in a VM): how often the receiver sleeps
/// moves the sender's throughput, and a receiver merely faster than iperf3's slows the
/// sender. So this one sleeps and wakes where iperf3's does, and the two compare like for
/// like. The receivers tried instead (blocking reads, other read sizes, naps, spins,
/// SO_RCVLOWAT, epoll, io_uring, fixed buffers), with their figures against iperf3 and
/// why none was kept, are in `bench/tcp-receiver.md`.
/// A thread of several streams polls them all and reads each that has data the same way,
/// as iperf3 3.12's one thread does (`iperf_recv` on each stream its select found ready).
fn rx_tcp(
    socks: Vec<TcpStream>,
    lives: &[Arc<Live>],
    finish: &AtomicBool,
    marker: &mut Marker<()>,
    t0: Instant,
) {
    // Each stream while it is open, with what it has received.
    let mut open: Vec<Option<(TcpStream, u64)>> = socks
        .into_iter()
        .map(|s| s.set_nonblocking(true).ok().map(|()| (s, 0)))
        .collect();
    let mut buf = proto::AlignedBuf::new(TCP_READ, 0);
    let buf = buf.as_mut_slice();
    let mut set = proto::PollSet::default();
    while !finish.load(Ordering::Relaxed) {
        marker.check(|| ());
        set.clear();
        for (k, o) in open.iter().enumerate() {
            if let Some((s, _)) = o {
                set.push(k, s.as_raw_fd(), libc::POLLIN);
            }
        }
        if set.is_empty() {
            break;
        }
        match set.poll(RX_POLL) {
            Ok(0) => continue,
            Ok(_) => {}
            Err(_) => break,
        }
        for k in set.ready() {
            let Some((s, total)) = open[k].as_mut() else {
                continue;
            };
            let (got, ended) = read_ready(s, buf);
            if got > 0 {
                *total += got as u64;
                lives[k].bytes.store(*total, Ordering::Relaxed);
                lives[k]
                    .last_ns
                    .store(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
            }
            if ended {
                open[k] = None;
                lives[k].done.store(true, Ordering::Relaxed);
            }
        }
    }
}

/// Read from the non-blocking `s` until `buf` is full or the socket is drained (iperf3's
/// `Nread`): the bytes read, and whether the stream has ended (its end of file, or an
/// error).
fn read_ready(mut s: &TcpStream, buf: &mut [u8]) -> (usize, bool) {
    let mut got = 0;
    while got < buf.len() {
        match s.read(&mut buf[got..]) {
            Ok(0) => return (got, true),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(_) => return (got, true),
        }
    }
    (got, false)
}

/// Datagrams taken per `recvmmsg(2)` call.
const RX_BATCH: usize = 64;
/// How long the UDP receiver sleeps when its queue is empty, and how many empty looks in a
/// row before it waits on the socket instead (a stalled sender, or none). An unlimited
/// sender leaves the queue empty twice in a row only when it stalls: with two, 1.13x and
/// 1.16x iperf3's packets/s at 1472 and 60 B (8 pairs), as with 8.
pub(crate) const RX_NAP: Duration = Duration::from_micros(50);
pub(crate) const RX_NAPS_BEFORE_WAIT: u32 = 2;

/// Receive one UDP stream. While datagrams keep coming, the receiver takes what has queued
/// (up to `RX_BATCH` per `recvmmsg`) and naps `RX_NAP` when the queue is empty, instead of
/// waiting on the socket: a receiver waiting on the socket must be woken by the sender for
/// nearly every datagram, and on a VM that wake-up (an IPI) is paid by the sender, the
/// side being measured (iperf3's select+read receiver is slower and so sleeps less often;
/// a faster receiver blocking in `recv` cut the sender's packets/s by a seventh). Arrival
/// times are the kernel's (`SO_TIMESTAMPNS`, taken as the datagram enters the stack), so
/// jitter does not depend on when the receiver looked. After `RX_NAPS_BEFORE_WAIT` empty
/// looks it waits on the socket.
/// A `paced` stream (`--rate`) is received as iperf3 receives: waiting on the socket
/// whenever the queue is empty. Its sender is not at its limit, so the wake-ups cost
/// nothing measured, and it sends each 1 ms tick's worth at once, then nothing: napping
/// through the gaps cost the receiver 25% of its CPU at 500 Mbit/s of 1472 B (iperf3's
/// 10%; 13-14% napping once, 10.5-10.8% waiting), and a nap that overshoots on a VM lets
/// a tick's burst fill the receive buffer (loss at 2 Gbit/s 0.30-0.45% napping once,
/// 0.27-0.38% waiting; iperf3 0.12-0.24%, its sender's bursts slower).
/// Once told to drain (`live.drain`, after the sender's `done`), it returns at the first
/// receive that finds the socket empty: what queued has all been counted.
/// Hand-written (libc structures) because it is the measured hot path.
fn rx_udp(
    s: UdpSocket,
    payload: usize,
    paced: bool,
    live: &Live,
    finish: &AtomicBool,
    marker: &mut Marker<()>,
    t0: Instant,
) {
    let fd = s.as_raw_fd();
    let stamped = proto::set_int_option(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1).is_ok();
    // A nap of 50 µs should not become 100 (the default timer slack); best effort.
    // SAFETY: prctl on this thread only.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 5_000 as libc::c_ulong) };
    let mut b = RxBatch::new(payload.max(proto::UDP_HEADER_BYTES) + 1);
    let mut rx = proto::UdpRx::default();
    let mut empty = 0u32;
    while !finish.load(Ordering::Relaxed) {
        marker.check(|| ());
        // Looked at before the receive, so that an empty one below came after the order.
        let drain = live.drain.load(Ordering::Relaxed);
        let n = b.recv(fd);
        if n == 0 {
            if drain {
                break;
            }
            empty += 1;
            if !paced && empty < RX_NAPS_BEFORE_WAIT {
                std::thread::sleep(RX_NAP);
            } else if proto::wait_ready(fd, libc::POLLIN, RX_POLL).is_err() {
                break;
            }
            continue;
        }
        empty = 0;
        let read_ns = wall_ns();
        for k in 0..n {
            let (data, stamp) = b.get(k);
            if let Some((seq, sent_ns)) = proto::parse_udp_header(data) {
                let arrival = if stamped {
                    stamp.unwrap_or(read_ns)
                } else {
                    read_ns
                };
                rx.on_packet(seq, sent_ns, arrival, data.len());
            }
        }
        live.bytes.store(rx.bytes, Ordering::Relaxed);
        live.packets.store(rx.packets, Ordering::Relaxed);
        live.lost.store(rx.lost, Ordering::Relaxed);
        live.ooo.store(rx.out_of_order, Ordering::Relaxed);
        live.measured_packets
            .store(rx.measured_packets, Ordering::Relaxed);
        live.measured_bytes
            .store(rx.measured_bytes, Ordering::Relaxed);
        live.jitter_bits
            .store(rx.jitter_s.to_bits(), Ordering::Relaxed);
        live.jitter_samples
            .store(rx.jitter_samples, Ordering::Relaxed);
        let now_ns = t0.elapsed().as_nanos() as u64;
        if rx.measured_packets > 0 && live.first_measured_ns.load(Ordering::Relaxed) == 0 {
            // The first of them arrived after the last read that brought data (or, with
            // none before, by this one): the span starts there, so that it holds the
            // arrival of every datagram counted, the first read's too.
            let before = live.last_ns.load(Ordering::Relaxed);
            let from = if before > 0 { before } else { now_ns };
            live.first_measured_ns.store(from, Ordering::Relaxed);
        }
        live.last_ns.store(now_ns, Ordering::Relaxed);
        if n < RX_BATCH {
            std::thread::sleep(RX_NAP);
        }
    }
}

/// The buffers, iovecs, control buffers and message headers of one `recvmmsg` call, built
/// once; the headers point into the other vectors, whose heap blocks never move.
struct RxBatch {
    bufs: Vec<Vec<u8>>,
    /// Only read through the headers' msg_control.
    _ctrls: Vec<[u64; 8]>,
    iovs: Vec<libc::iovec>,
    msgs: Vec<libc::mmsghdr>,
}

impl RxBatch {
    fn new(len: usize) -> RxBatch {
        let mut bufs: Vec<Vec<u8>> = (0..RX_BATCH).map(|_| vec![0u8; len]).collect();
        let mut ctrls = vec![[0u64; 8]; RX_BATCH];
        let mut iovs: Vec<libc::iovec> = bufs
            .iter_mut()
            .map(|b| libc::iovec {
                iov_base: b.as_mut_ptr().cast(),
                iov_len: b.len(),
            })
            .collect();
        let msgs = iovs
            .iter_mut()
            .zip(ctrls.iter_mut())
            .map(|(iov, c)| {
                // SAFETY: a zeroed mmsghdr is valid (no address, no control data).
                let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                m.msg_hdr.msg_iov = iov;
                m.msg_hdr.msg_iovlen = 1;
                m.msg_hdr.msg_control = c.as_mut_ptr().cast();
                m
            })
            .collect();
        RxBatch {
            bufs,
            _ctrls: ctrls,
            iovs,
            msgs,
        }
    }

    /// Take what is queued without waiting: the count received (0 when none or on error).
    fn recv(&mut self, fd: std::os::fd::RawFd) -> usize {
        debug_assert_eq!(self.iovs.len(), self.msgs.len());
        for m in &mut self.msgs {
            m.msg_hdr.msg_controllen = std::mem::size_of::<[u64; 8]>() as _;
            m.msg_hdr.msg_flags = 0;
        }
        // SAFETY: every header points at buffers owned by self, with their true lengths.
        let n = unsafe {
            libc::recvmmsg(
                fd,
                self.msgs.as_mut_ptr(),
                RX_BATCH as _,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        n.max(0) as usize
    }

    /// Datagram `k` of the last call and its kernel arrival time (ns since the epoch).
    fn get(&self, k: usize) -> (&[u8], Option<u64>) {
        let m = &self.msgs[k];
        let data = &self.bufs[k][..(m.msg_len as usize).min(self.bufs[k].len())];
        let mut stamp = None;
        // SAFETY: the kernel filled msg_control up to msg_controllen; the CMSG macros walk
        // within it, and a timespec is read unaligned.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&m.msg_hdr);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                    let ts: libc::timespec =
                        std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::timespec>());
                    stamp = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
                }
                c = libc::CMSG_NXTHDR(&m.msg_hdr, c);
            }
        }
        (data, stamp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two ends mark the end of the warm-up on their own clocks: whichever marks first,
    /// the test's received and lost are of the datagrams sent after the sender's mark, and
    /// the warm-up holds the rest of what arrived.
    /// A span's jitter samples are those taken in it: a stream whose every difference of
    /// transit times came in the warm-up has none in the test (its running jitter, the
    /// warm-up's, is not the test's).
    #[test]
    fn a_spans_jitter_samples_are_those_taken_in_it() {
        let at = |samples: u64, packets: u64| StreamStats {
            packets,
            jitter_ms: 0.3,
            jitter_samples: samples,
            ..StreamStats::default()
        };
        let warm = at(40, 41);
        assert_eq!(counted_since(&at(40, 41), &warm).jitter_samples, 0);
        assert_eq!(counted_since(&at(55, 60), &warm).jitter_samples, 15);
    }

    #[test]
    fn udp_counts_split_at_the_senders_mark_whichever_end_marked_first() {
        let stats = |packets: u64, lost: i64| StreamStats {
            bytes: packets * 100,
            packets,
            lost,
            ..StreamStats::default()
        };
        // 400 sent in the warm-up, 610 after it; 1000 arrived, 600 of them marked. This
        // end's own mark fell 10 datagrams after the sender's (590 / 410 by it), or 10
        // before (610 / 390).
        for (from_mark, before_mark) in [(590, 410), (610, 390)] {
            let mut end = stats(1000, 0);
            let (mut test, mut warm) = (stats(from_mark, 0), stats(before_mark, 0));
            split_udp(&mut end, &mut test, &mut warm, (600, 60_000), (610, 400));
            assert_eq!((test.packets, test.bytes, test.lost), (600, 60_000, 10));
            assert_eq!(
                610 - test.packets as i64,
                test.lost,
                "sent less received is the loss"
            );
            assert_eq!((warm.packets, warm.bytes), (400, 40_000));
            assert_eq!(
                test.packets + warm.packets,
                end.packets,
                "each counted once"
            );
            assert_eq!(end.lost, 10, "of all that was sent");
        }
        // Ended in the sender's warm-up: nothing is the test's.
        let mut end = stats(300, 0);
        let (mut test, mut warm) = (stats(0, 0), stats(300, 0));
        split_udp(&mut end, &mut test, &mut warm, (0, 0), (0, 320));
        assert_eq!((test.packets, warm.packets, end.lost), (0, 300, 20));
        assert_eq!(test.lost, 0);
        // This end still in its warm-up when the sender ended its test of 50 datagrams,
        // 45 of them arrived: they are the test's, its 5 lost too (not 0 of 0).
        let mut end = stats(345, 0);
        let (mut test, mut warm) = (stats(0, 0), stats(345, 0));
        split_udp(&mut end, &mut test, &mut warm, (45, 4_500), (50, 300));
        assert_eq!((test.packets, test.lost, warm.packets), (45, 5, 300));
        assert_eq!(end.lost, 5);
    }

    /// The sender's test datagrams are counted over their own span: a receiver that marked
    /// 0.1 s after them (or before) neither shortens nor stretches it; without such a
    /// count (TCP, no warm-up) the span is from this end's mark.
    #[test]
    fn the_counts_span_starts_at_the_first_datagram_after_the_senders_mark() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        // Marked at 2.1 s, the sender's first test datagram read at 2.0 s, the last at 12.0.
        assert!(close(counts_span_s(2.1, 12.0, Some(2.0)), 10.0));
        // Marked at 1.9 s, the sender's first read at 2.0 s.
        assert!(close(counts_span_s(1.9, 12.0, Some(2.0)), 10.0));
        assert!(close(counts_span_s(2.1, 12.0, None), 9.9));
        assert_eq!(counts_span_s(2.1, 1.0, None), 0.0);
        // All of them in one read with none before it: not a span of 0, the mark's.
        assert!(close(counts_span_s(2.1, 12.0, Some(12.0)), 9.9));
    }

    /// After the sender's `done`, a UDP stream reads all that queued, however long that
    /// takes, and ends by itself at the first receive that finds its socket empty (a
    /// fixed wait counted what it had not read by then as lost).
    #[test]
    fn a_draining_udp_stream_reads_what_queued_and_ends_when_empty() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        for seq in 0..100u64 {
            let mut d = [0u8; 100];
            proto::put_udp_header(&mut d, seq | proto::MEASURED_SEQ_BIT, wall_ns());
            tx.send(&d).unwrap();
        }
        let live = Live::default();
        live.drain.store(true, Ordering::Relaxed);
        let (finish, measuring) = (AtomicBool::new(false), AtomicBool::new(true));
        let t0 = Instant::now();
        std::thread::scope(|sc| {
            // A stream that does not end by itself is ended after 3 s, so that the test
            // fails rather than hangs.
            sc.spawn(|| {
                while !live.done.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(3) {
                    std::thread::sleep(Duration::from_millis(10));
                }
                finish.store(true, Ordering::Relaxed);
            });
            let mut marker = Marker::new(&measuring);
            rx_udp(rx, 100, false, &live, &finish, &mut marker, t0);
            live.done.store(true, Ordering::Relaxed);
        });
        assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
        let got = live.snapshot();
        assert_eq!((got.packets, got.lost), (100, 0));
    }

    /// The receiver's batch takes every queued datagram whole, and their arrival times are
    /// the kernel's, from when they arrived, not from when the receiver looked.
    #[test]
    fn a_batch_takes_what_queued_with_the_kernels_arrival_times() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        proto::set_int_option(rx.as_raw_fd(), libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1).unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        // The kernel turns arrival stamping on for the first socket that asks a moment
        // later (deferred work); until then a datagram is stamped when it is read. Wait
        // for a probe that is stamped on arrival (CI caught the window once).
        let mut b = RxBatch::new(200);
        let on = (0..200).any(|_| {
            tx.send(&[0u8; 16]).unwrap();
            std::thread::sleep(Duration::from_millis(5));
            let read_at = wall_ns();
            b.recv(rx.as_raw_fd()) == 1 && b.get(0).1.is_some_and(|t| t + 2_000_000 < read_at)
        });
        assert!(on, "the kernel never stamped a datagram on arrival");
        let before = wall_ns();
        for seq in 0..3u64 {
            let mut d = vec![7u8; 100 + seq as usize];
            proto::put_udp_header(&mut d, seq, wall_ns());
            tx.send(&d).unwrap();
        }
        std::thread::sleep(Duration::from_millis(30));
        let looked = wall_ns();
        assert_eq!(b.recv(rx.as_raw_fd()), 3);
        for k in 0..3 {
            let (data, stamp) = b.get(k);
            assert_eq!(data.len(), 100 + k);
            assert_eq!(proto::parse_udp_header(data).unwrap().0, k as u64);
            let stamp = stamp.expect("a kernel timestamp");
            assert!(
                stamp >= before - 1_000_000 && stamp + 20_000_000 < looked,
                "stamp {stamp}, sent from {before}, read at {looked}"
            );
        }
        // Nothing more queued: no wait, none taken.
        assert_eq!(b.recv(rx.as_raw_fd()), 0);
    }
}
