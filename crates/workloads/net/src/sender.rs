//! The sending end: connects to a receiver's control address, announces the test, opens
//! the data streams (TCP's shared out over one thread per sender CPU, each UDP stream on a
//! thread of its own, all pinned to the sender CPUs), sends for the duration and collects
//! the receiver's interval and total reports.
//!
//! Hot paths: TCP writes 128 KiB buffers (iperf3's default `-l`) on non-blocking sockets,
//! up to ten per poll as iperf3's sender does; UDP sends one datagram per `send(2)` on a
//! connected socket, as iperf3 does (so packets/s compare like for like); either is paced
//! per stream when a rate is given (iperf3 -b); `udp_batch` > 1 sends that many per `sendmmsg(2)`, and
//! `udp_gso` > 1 that many per `send(2)` as one buffer the kernel cuts (UDP GSO); TCP
//! with `zerocopy` sends each buffer by `sendfile(2)` from a file holding it (iperf3 -Z).

use std::io::Write;
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{bail, Context};

use crate::mark::Marker;
use crate::proto::{self, CpuUsage, LineReader, Msg, Proto, SentStats, StreamStats};
use crate::server::{process_cpu, wall_ns, Workers};
use crate::tcpinfo::{TcpStats, Tracker};

/// One test as the sender runs it.
#[derive(Debug, Clone)]
pub struct SendSpec {
    /// The receiver's control address (`host:port`).
    pub target: String,
    pub proto: Proto,
    /// UDP datagram payload bytes, or TCP write size.
    pub payload: usize,
    /// Seconds measured, after the warm-up.
    pub duration_s: f64,
    /// Seconds sent first and left out of the figures (iperf3 -O), on both ends.
    pub warmup_s: f64,
    pub streams: usize,
    pub interval_s: f64,
    /// Target rate per stream, bits/s (iperf3 -b; 0 = unlimited), TCP and UDP.
    pub rate_bps: f64,
    pub sender_cpus: Vec<usize>,
    /// Sent to the receiver: CPUs for its data threads (empty: its own `--cpus`).
    pub receiver_cpus: Vec<usize>,
    /// TCP congestion control for the data streams (iperf3 `-C`); None: the system default.
    pub congestion: Option<String>,
    /// SO_SNDBUF and SO_RCVBUF for the data sockets on both ends (iperf3 `-w`); None: the
    /// kernel's autotuning.
    pub window: Option<usize>,
    /// UDP datagrams per system call: 1 sends each with `send(2)` as iperf3 does; more
    /// hands the kernel that many at once with `sendmmsg(2)`, which iperf3 cannot.
    pub udp_batch: usize,
    /// UDP datagrams per `send(2)` as one GSO buffer (`UDP_SEGMENT`), 0 or 1: off.
    pub udp_gso: usize,
    /// TCP: each buffer goes out by `sendfile(2)` from a temporary file holding it (iperf3
    /// `-Z`) instead of `write(2)`. Ignored for UDP.
    pub zerocopy: bool,
}

/// The most segments one UDP GSO send may carry (the kernel's `UDP_MAX_SEGMENTS`).
pub const UDP_GSO_MAX_SEGMENTS: usize = 64;
/// The most bytes one UDP GSO send may carry over IPv4 (65,535 less the IP and UDP headers).
pub const UDP_GSO_MAX_BYTES: usize = 65_507;

/// Datagrams of `payload` bytes that one GSO send of up to `wanted` may carry.
pub fn gso_segments(wanted: usize, payload: usize) -> usize {
    wanted
        .min(UDP_GSO_MAX_SEGMENTS)
        .min(UDP_GSO_MAX_BYTES / payload.max(1))
        .max(1)
}

/// The receiver's final report (`Msg::Result`).
struct ReceiverResult {
    duration_s: f64,
    streams: Vec<StreamStats>,
    warmup: Vec<StreamStats>,
    cpu: CpuUsage,
    cpu_span_s: Option<f64>,
    process: Option<proto::ProcessCpu>,
    pin_error: Option<String>,
}

/// One interval as both ends saw it.
#[derive(Debug, Clone, Default)]
pub struct IntervalReport {
    /// Seconds from the end of the warm-up, on the receiver's clock (< 0: in it).
    pub start_s: f64,
    pub end_s: f64,
    pub received: Vec<StreamStats>,
    /// TCP: segments the sender retransmitted, all streams, read as the interval came in.
    pub retransmits: Option<u64>,
    /// An interval of the warm-up, left out of the figures.
    pub warmup: bool,
}

/// What one test measured. Everything but the `warmup_` counts and the warm-up's
/// intervals is from the end of the warm-up (the test's start without one) to the end:
/// a worker's counts and CPU from its own mark, a process's CPU from its control
/// thread's.
#[derive(Debug, Clone, Default)]
pub struct TestReport {
    pub sent: Vec<SentStats>,
    /// Each stream's own sending time, seconds, in the order of `sent`.
    pub stream_send_s: Vec<f64>,
    /// From the first stream's mark to the last one's end, on the sender host's clock
    /// (None: no stream ran).
    pub send_span: Option<(SystemTime, SystemTime)>,
    pub sender_cpu: CpuUsage,
    /// What each stream sent during the warm-up.
    pub warmup_sent: Vec<SentStats>,
    /// Receiver totals (from its final report, or the sum of its intervals if it stopped).
    pub received: Vec<StreamStats>,
    /// What the receiver counted during the warm-up (empty without one).
    pub warmup_received: Vec<StreamStats>,
    /// The test ended (stopped, or the receiver failed) before its warm-up did: nothing
    /// after it was measured.
    pub in_warmup: bool,
    pub receive_duration_s: f64,
    /// None when the receiver never sent its final report.
    pub receiver_cpu: Option<CpuUsage>,
    /// The span `receiver_cpu` is over, on the receiver's clock (0: the receiver was still
    /// in its warm-up when the sender finished); None: `receive_duration_s`.
    pub receiver_cpu_span_s: Option<f64>,
    /// Each end's whole process over the test (iperf3's CPU figure); the receiver's None
    /// without its final report (or from a receiver that does not send it).
    pub sender_process: proto::ProcessCpu,
    pub receiver_process: Option<proto::ProcessCpu>,
    /// Why the receiver's data threads were not pinned to the CPUs asked, as it said.
    pub receiver_pin_error: Option<String>,
    pub intervals: Vec<IntervalReport>,
    /// The TCP congestion control the data streams ran with, as the kernel reports it.
    pub congestion: Option<String>,
    /// TCP: the sender's kernel counters over the test (retransmits, RTT, window), or why
    /// they could not be read; None for UDP.
    pub tcp: Option<Result<TcpStats, String>>,
    /// Why the test ended early (receiver stopped, a stream failed), with what was measured kept.
    pub error: Option<String>,
    /// The test was cut short by a stop (Ctrl-C, SIGTERM, the run's cancel): not a failure,
    /// what was measured until then is kept.
    pub interrupted: bool,
    pub send_errors: u64,
    /// Why the datagrams lost cannot be counted (the receiver sent no final report: what
    /// was sent after its last interval is not known to have arrived); None when they can.
    pub loss_unknown: Option<String>,
    /// Some: not the test's end but a checkpoint taken this many seconds after the end of
    /// its warm-up while it ran ([`run`]'s `checkpoint`): the sender's counts to then,
    /// the receiver's as its interval reports gave them (its loss the gaps it saw), and
    /// none of what either end reads only at the end (its threads' CPU, the receiver's
    /// final report, the TCP counters over the test).
    pub checkpoint_s: Option<f64>,
}

impl TestReport {
    /// The sender's time over the test, seconds: its longest stream's.
    pub fn send_duration_s(&self) -> f64 {
        self.stream_send_s.iter().copied().fold(0.0, f64::max)
    }
}

/// UDP datagrams on the connected socket: one per `send(2)` (iperf3's way) for a batch of
/// one, else several per `sendmmsg(2)`, the buffers and the kernel's message headers
/// pointing at them built once and reused for every call. Hand-written (libc
/// structures) because it is the measured hot path.
///
/// With GSO, one buffer holds the datagrams back to back and goes in one `send(2)`; the
/// socket's `UDP_SEGMENT` option tells the kernel where to cut it (Linux 4.18 and later).
struct Batch {
    bufs: Vec<proto::AlignedBuf>,
    iovs: Vec<libc::iovec>,
    msgs: Vec<libc::mmsghdr>,
    /// GSO: the datagrams in `bufs[0]` and their size.
    gso: Option<(usize, usize)>,
}

impl Batch {
    /// `segments` datagrams of `payload` bytes per `send(2)` on `s`, cut by the kernel.
    fn gso(s: &UdpSocket, segments: usize, payload: usize) -> std::io::Result<Batch> {
        let size = payload as libc::c_int;
        if let Err(e) = proto::set_int_option(s.as_raw_fd(), libc::SOL_UDP, libc::UDP_SEGMENT, size)
        {
            return Err(std::io::Error::new(
                e.kind(),
                format!("UDP GSO (UDP_SEGMENT) is not available here: {e}; leave out --udp-gso, or use --udp-batch"),
            ));
        }
        Ok(Batch {
            bufs: vec![proto::AlignedBuf::new(segments * payload, 0)],
            iovs: Vec::new(),
            msgs: Vec::new(),
            gso: Some((segments, payload)),
        })
    }

    fn new(n: usize, payload: usize) -> Batch {
        let mut bufs: Vec<proto::AlignedBuf> =
            (0..n).map(|_| proto::AlignedBuf::new(payload, 0)).collect();
        // The buffers' memory does not move when `bufs` does (each is its own heap
        // block), so the iovecs stay valid; likewise the iovecs for the headers.
        let mut iovs: Vec<libc::iovec> = bufs
            .iter_mut()
            .filter(|_| n > 1)
            .map(|b| {
                let b = b.as_mut_slice();
                libc::iovec {
                    iov_base: b.as_mut_ptr().cast(),
                    iov_len: b.len(),
                }
            })
            .collect();
        let msgs = iovs
            .iter_mut()
            .map(|iov| {
                // SAFETY: a zeroed mmsghdr is valid (no address, no control data).
                let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                m.msg_hdr.msg_iov = iov;
                m.msg_hdr.msg_iovlen = 1;
                m
            })
            .collect();
        Batch {
            bufs,
            iovs,
            msgs,
            gso: None,
        }
    }

    /// Stamp sequence numbers from `seq` and the send time, and send them all: (datagrams
    /// sent, bytes sent). After a short count the rest were not sent; their sequence
    /// numbers go to the next batch, so the receiver sees no gap.
    fn send(&mut self, s: &UdpSocket, seq: u64) -> std::io::Result<(usize, u64)> {
        let now = wall_ns();
        if let Some((segments, payload)) = self.gso {
            let buf = self.bufs[0].as_mut_slice();
            for k in 0..segments {
                proto::put_udp_header(&mut buf[k * payload..], seq + k as u64, now);
            }
            // One datagram to the kernel, all or nothing: it leaves as `segments`.
            return s.send(buf).map(|n| (n / payload, n as u64));
        }
        if let [one] = self.bufs.as_mut_slice() {
            let buf = one.as_mut_slice();
            proto::put_udp_header(buf, seq, now);
            return s.send(buf).map(|n| (1, n as u64));
        }
        for (k, b) in self.bufs.iter_mut().enumerate() {
            proto::put_udp_header(b.as_mut_slice(), seq + k as u64, now);
        }
        debug_assert_eq!(self.iovs.len(), self.msgs.len());
        // SAFETY: msgs, the iovecs and the buffers they point to live in self.
        let n = unsafe {
            libc::sendmmsg(
                s.as_raw_fd(),
                self.msgs.as_mut_ptr(),
                self.msgs.len() as _,
                0,
            )
        };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let n = n as usize;
        Ok((n, self.msgs[..n].iter().map(|m| u64::from(m.msg_len)).sum()))
    }
}

pub(crate) fn connect_control(target: &str) -> anyhow::Result<TcpStream> {
    let addrs: Vec<SocketAddr> = target
        .to_socket_addrs()
        .with_context(|| format!("net: cannot resolve receiver address `{target}` (use host:port, e.g. 127.0.0.1:5201)"))?
        .collect();
    let mut last = None;
    for a in &addrs {
        match TcpStream::connect_timeout(a, Duration::from_secs(3)) {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(e),
        }
    }
    bail!(
        "net: cannot reach the receiver at {target}: {}. Start one there with \
         `rackbench net serve --bind {target}`, or leave out --target to launch one locally",
        last.map_or("no address".to_string(), |e| e.to_string())
    )
}

/// How long a sending thread waits in poll before it looks at `stop` again (a stalled
/// receiver must not hold the sender past the deadline).
const TX_POLL: Duration = Duration::from_millis(100);

/// How often the thread that runs a test looks at Ctrl-C, the receiver and the progress
/// counter while the senders send. It shares the senders' CPUs: at 20 ms its 50 wake-ups
/// a second took 3 ms of CPU a second from a TCP sender (0.3%); at 100 ms, a fifth of
/// that, and a stop is still seen within a tenth of a second. The test's end is not
/// polled for: the last sleep ends at the deadline.
const WATCH: Duration = Duration::from_millis(100);

/// How much longer than the receiver's own wait after `done` (for the streams' ends, or
/// their queued datagrams) the sender waits for its final report.
const RESULT_MARGIN: Duration = Duration::from_secs(5);

/// Whole buffers written per poll, iperf3's `multisend` (1 under `--rate`, as iperf3 -b).
const MULTISEND: usize = 10;

/// A paced stream's timer period, iperf3's default `--pacing-timer` (1 ms).
const PACING_TICK_NS: u128 = 1_000_000;

/// iperf3's `-b` throttle: a stream sends only while its average rate since `t0` is below
/// `rate_bps` (bits/s; 0: unlimited). Returns false when the stream may send now, and
/// otherwise sleeps to the next tick of a timer that ticks every [`PACING_TICK_NS`] from
/// `t0`, as iperf3's periodic pacing timer does, and returns true. A stream ahead by one
/// datagram thus waits for the tick and then sends what the tick allows in a burst.
/// Sleeping off only the lead paces each datagram, at one wake-up per datagram: at 500
/// Mbit/s of 1472 B, 2.4x iperf3's sender CPU and 3.6x its receiver's.
fn paced(rate_bps: f64, bytes_sent: u64, t0: Instant) -> bool {
    if !ahead_of_rate(rate_bps, bytes_sent, t0) {
        return false;
    }
    sleep_to_tick(t0);
    true
}

/// Whether a stream that has sent `bytes_sent` since `t0` is ahead of `rate_bps` (bits/s;
/// 0: unlimited, never ahead).
fn ahead_of_rate(rate_bps: f64, bytes_sent: u64, t0: Instant) -> bool {
    rate_bps > 0.0 && bytes_sent as f64 * 8.0 / rate_bps > t0.elapsed().as_secs_f64()
}

/// Sleep to the next tick of the pacing timer that ticks every [`PACING_TICK_NS`] from `t0`.
fn sleep_to_tick(t0: Instant) {
    let to_tick = PACING_TICK_NS - t0.elapsed().as_nanos() % PACING_TICK_NS;
    std::thread::sleep(Duration::from_nanos(to_tick as u64));
}

/// How a TCP stream hands the kernel one buffer: as much of it as the socket takes
/// without blocking, and the error that stopped it (would-block is not one).
enum TcpSend<'a> {
    /// `write(2)` from the buffer (iperf3's `Nwrite`); a write cut short or that writes
    /// nothing does not end the round, the next stream is written (on loopback the
    /// receiver frees room meanwhile, and a write that succeeds saves a poll).
    Write(&'a [u8]),
    /// `sendfile(2)` of a file's first `len` bytes (iperf3 `-Z`'s `Nsendfile`): the kernel
    /// hands the file's pages to the socket instead of copying the buffer from user
    /// memory; a send that finds no room at all ends the round (iperf3's soft error).
    File(&'a std::fs::File, usize),
}

/// iperf3's sending loop (`iperf_send`, in 3.12's one-thread select loop): non-blocking
/// sockets, poll for room on each of the thread's streams, then up to [`MULTISEND`]
/// rounds over the streams that had room, one send of the whole buffer on each in turn
/// (each continued until its socket would block; see [`TcpSend`] for one that finds no
/// room). Unlike iperf3, a round in which no stream sent ends the sending until the next
/// poll, instead of trying each again. The order is iperf3's, and it matters: one
/// stream's ten sends before the next stream's moved half of iperf3's Gbit/s with 4
/// streams between test hosts (0.56-0.60x in bench/net_streams_vs_iperf3.sh, 0.92-1.03x
/// with the rounds in turn; on loopback, where the rounds cost about 8%, both are above
/// iperf3). With the receiver's poll-and-drain loop this keeps each end's share of the
/// loopback work where iperf3 puts it (see `server::rx_tcp`). With a rate (`--rate`,
/// iperf3 -b), as iperf3: one send per poll, on each stream only while it is below the
/// rate (the thread sleeps to the pacing timer's next tick when none is, [`paced`]).
/// Returns each stream's error (None: it sent until `stop`); a stream that fails leaves
/// the poll and the others go on, as they did when each had a thread.
fn tcp_send(
    socks: &[TcpStream],
    how: TcpSend,
    rate_bps: f64,
    stop: &AtomicBool,
    marker: &mut Marker<Vec<SentStats>>,
    progress: &[&AtomicU64],
    sent: &mut [SentStats],
) -> Vec<Option<std::io::Error>> {
    let mut failed: Vec<Option<std::io::Error>> = socks
        .iter()
        .map(|s| s.set_nonblocking(true).err())
        .collect();
    let per_poll = if rate_bps > 0.0 { 1 } else { MULTISEND };
    let t0 = Instant::now();
    let mut set = proto::PollSet::default();
    while !stop.load(Ordering::Relaxed) {
        marker.check(|| sent.to_vec());
        set.clear();
        let mut open = false;
        for (k, s) in socks.iter().enumerate() {
            if failed[k].is_some() {
                continue;
            }
            open = true;
            if !ahead_of_rate(rate_bps, sent[k].bytes, t0) {
                set.push(k, s.as_raw_fd(), libc::POLLOUT);
            }
        }
        if !open {
            break;
        }
        if set.is_empty() {
            sleep_to_tick(t0);
            continue;
        }
        match set.poll(TX_POLL) {
            Ok(0) => continue,
            Ok(_) => {}
            Err(e) => {
                for &k in set.streams() {
                    failed[k] = Some(std::io::Error::new(e.kind(), e.to_string()));
                }
                break;
            }
        }
        for _ in 0..per_poll {
            let mut active = false;
            for k in set.ready() {
                if failed[k].is_some() {
                    continue;
                }
                let (n, error) = match how {
                    TcpSend::Write(buf) => write_nonblocking(&socks[k], buf),
                    TcpSend::File(src, len) => {
                        sendfile_nonblocking(socks[k].as_fd(), src.as_fd(), len)
                    }
                };
                sent[k].bytes += n as u64;
                progress[k].store(sent[k].bytes, Ordering::Relaxed);
                if error.is_some() {
                    failed[k] = error;
                    continue;
                }
                if n == 0 {
                    // sendfile that finds no room is iperf3's soft error (`Nsendfile`),
                    // which ends the round; a write that finds none is not (`Nwrite`
                    // returns the 0 bytes it wrote) and the next stream is written.
                    if matches!(how, TcpSend::File(..)) {
                        break;
                    }
                    continue;
                }
                active = true;
            }
            if !active {
                break;
            }
        }
    }
    failed
}

/// Write as much of `buf` as the socket takes without blocking (iperf3's `Nwrite`): the
/// bytes written, and the error that stopped it (would-block is not one).
fn write_nonblocking(mut s: &TcpStream, buf: &[u8]) -> (usize, Option<std::io::Error>) {
    let mut off = 0;
    while off < buf.len() {
        match s.write(&buf[off..]) {
            Ok(0) => return (off, Some(std::io::ErrorKind::WriteZero.into())),
            Ok(n) => off += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => return (off, Some(e)),
        }
    }
    (off, None)
}

/// Send the first `len` bytes of the file `from` to the socket `to` with `sendfile(2)`, as
/// much as the socket takes without blocking: the bytes sent, and the error that stopped
/// it (would-block is not one).
pub(crate) fn sendfile_nonblocking(
    to: std::os::fd::BorrowedFd,
    from: std::os::fd::BorrowedFd,
    len: usize,
) -> (usize, Option<std::io::Error>) {
    let mut done = 0;
    while done < len {
        let mut offset = done as libc::off_t;
        // SAFETY: both descriptors are borrowed, so open for the call, and `offset` is an
        // off_t the kernel reads and advances; the file's own position is left alone.
        let r =
            unsafe { libc::sendfile(to.as_raw_fd(), from.as_raw_fd(), &mut offset, len - done) };
        if r > 0 {
            done += r as usize;
            continue;
        }
        if r == 0 {
            // The file ends before `len`: nothing more can come from it.
            return (done, Some(std::io::ErrorKind::UnexpectedEof.into()));
        }
        let e = std::io::Error::last_os_error();
        match e.kind() {
            std::io::ErrorKind::Interrupted => {}
            std::io::ErrorKind::WouldBlock => break,
            _ => return (done, Some(e)),
        }
    }
    (done, None)
}

/// A UDP stream's sending loop: `b`'s datagrams on the connected socket `s` until `stop`
/// (or, at a failed send, until the receiver is `gone`), paced at `rate_bps` as
/// [`tcp_send`] is. A send that fails for a passing reason ([`udp_error_passes`]) is
/// counted in `errors` and tried again. EINVAL and EIO end the stream at once: they fail
/// every later send alike (a GSO buffer the path cannot take). Any other error (a
/// firewall's EPERM, EHOSTUNREACH while a route flaps) is counted and tried again until
/// sends have failed for [`UDP_FAILING_MAX`] with none going through; then it ends the
/// stream and is returned. Spinning on it for the whole test left a test that sent
/// nothing looking like one that measured 0 Gbit/s.
/// How long a UDP stream's sends may all fail, for a reason neither passing nor
/// certain (EPERM, EHOSTUNREACH), before the stream ends with the error.
const UDP_FAILING_MAX: Duration = Duration::from_secs(1);

#[allow(clippy::too_many_arguments)]
fn udp_send(
    s: &UdpSocket,
    b: &mut Batch,
    rate_bps: f64,
    stop: &AtomicBool,
    gone: &AtomicBool,
    marker: &mut Marker<Vec<SentStats>>,
    progress: &(AtomicU64, AtomicU64),
    sent: &mut SentStats,
    errors: &mut u64,
) -> std::io::Result<()> {
    let t0 = Instant::now();
    let mut seq = 0u64;
    // Since when every send has failed (None while they go through).
    let mut failing_since: Option<Instant> = None;
    while !stop.load(Ordering::Relaxed) {
        marker.check(|| vec![sent.clone()]);
        if paced(rate_bps, sent.bytes, t0) {
            continue;
        }
        // Datagrams of the test proper carry its bit.
        let bit = if marker.marked() {
            proto::MEASURED_SEQ_BIT
        } else {
            0
        };
        match b.send(s, seq | bit) {
            Ok((n, bytes)) => {
                seq += n as u64;
                sent.packets += n as u64;
                sent.bytes += bytes;
                progress.0.store(sent.bytes, Ordering::Relaxed);
                progress.1.store(sent.packets, Ordering::Relaxed);
                failing_since = None;
            }
            Err(e) if udp_error_is_tried_again(&e, &mut failing_since) => {
                // Nothing was sent; count and go on until told to stop.
                *errors += 1;
                if gone.load(Ordering::Relaxed) {
                    break;
                }
                if e.kind() != std::io::ErrorKind::ConnectionRefused {
                    std::thread::yield_now();
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Whether to count a failed UDP send and try again: a passing error, or one neither
/// passing nor certain (not EINVAL or EIO) while sends have failed for less than
/// [`UDP_FAILING_MAX`] (`failing_since`: since when, set here at the first).
fn udp_error_is_tried_again(e: &std::io::Error, failing_since: &mut Option<Instant>) -> bool {
    udp_error_passes(e)
        || (!matches!(e.raw_os_error(), Some(libc::EINVAL | libc::EIO))
            && failing_since.get_or_insert_with(Instant::now).elapsed() < UDP_FAILING_MAX)
}

/// Whether a failed UDP send is passing, to be counted and tried again: the queue is full
/// (ENOBUFS; EAGAIN, which is EWOULDBLOCK on Linux), an ICMP port-unreachable came back
/// for an earlier datagram (ECONNREFUSED: the receiver is gone, which its control
/// connection tells), or a signal came (EINTR).
fn udp_error_passes(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOBUFS | libc::EAGAIN | libc::ECONNREFUSED | libc::EINTR)
    )
}

/// Why UDP stream `i` stopped sending on `e`, naming `--udp-gso` (`gso`: its datagrams
/// per send) or `--udp-batch` when in use: their sends fail where one datagram per
/// `send(2)` may not, and what to change is then theirs.
fn udp_send_failure(i: usize, e: &std::io::Error, gso: Option<usize>, batch: usize) -> String {
    let hint = match (e.raw_os_error(), gso) {
        (Some(libc::EINVAL), Some(_)) => {
            "; EINVAL: a GSO send larger than the path MTU allows? lower --udp-gso or \
             --udp-payload (each datagram must fit the MTU), or leave out --udp-gso"
                .to_string()
        }
        (Some(libc::EIO), Some(_)) => {
            "; EIO: the interface has no UDP checksum offload for GSO sends? leave out \
             --udp-gso, or use --udp-batch"
                .to_string()
        }
        (Some(libc::EPERM), _) => "; EPERM: a firewall rule refused the datagrams?".to_string(),
        (_, Some(n)) => format!(" (--udp-gso: {n} datagrams per send)"),
        _ if batch > 1 => format!(" (--udp-batch {batch}: sendmmsg)"),
        _ => String::new(),
    };
    format!("UDP stream {i}: a send failed, so the stream stopped sending: {e}{hint}")
}

/// The bytes every TCP buffer holds, written or sent from a file.
const FILL: u8 = 0x5a;

/// `--zerocopy`'s source: a temporary file holding one TCP buffer of `len` bytes.
pub(crate) fn zerocopy_source(len: usize) -> std::io::Result<std::fs::File> {
    buffer_file(proto::AlignedBuf::new(len, FILL).as_slice())
}

/// A temporary file holding `bytes`, the source `sendfile(2)` reads: unnamed, in the
/// temporary directory (TMPDIR, else /tmp), as iperf3 `-Z` keeps its buffer.
pub(crate) fn buffer_file(bytes: &[u8]) -> std::io::Result<std::fs::File> {
    let made = tempfile::tempfile().and_then(|mut f| f.write_all(bytes).map(|()| f));
    made.map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!(
                "--zerocopy sends from a temporary file of {} B, and none could be made in {}: \
                 {e}; set TMPDIR to a writable directory with room, or leave --zerocopy out",
                bytes.len(),
                std::env::temp_dir().display()
            ),
        )
    })
}

/// Use congestion control `name` on a TCP socket (`TCP_CONGESTION`, as iperf3 `-C`).
pub fn set_congestion(s: &impl AsRawFd, name: &str) -> anyhow::Result<()> {
    // SAFETY: the option value is `name`'s bytes and their length.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    let why = match e.raw_os_error() {
        Some(libc::ENOENT) => "this host does not have it".to_string(),
        Some(libc::EPERM) => "only root (CAP_NET_ADMIN) may use it here".to_string(),
        _ => e.to_string(),
    };
    let read = |key: &str| crate::sysctl(key).unwrap_or_else(|_| "?".into());
    bail!(
        "net: cannot use TCP congestion control `{name}`: {why}. This host has: {} \
         (allowed without CAP_NET_ADMIN: {}); load another with `modprobe tcp_{name}` as root",
        read("net.ipv4.tcp_available_congestion_control"),
        read("net.ipv4.tcp_allowed_congestion_control")
    )
}

/// A TCP data stream to `to`, on congestion control `congestion` (the system's default
/// when None). It is chosen before the connection opens: a connection starts on the
/// default, and a default that paces (BBR asks the kernel for pacing when it starts)
/// keeps pacing after a later switch, so a stream switched to CUBIC after connecting runs
/// CUBIC paced. iperf3 (3.12) does switch after connecting, so on a host whose default
/// is BBR its `-C cubic` is paced CUBIC; here it is the CUBIC asked for.
/// With `window`, its buffers are set first too (the window scale is chosen as the
/// connection opens).
pub(crate) fn connect_tcp(
    to: SocketAddr,
    congestion: Option<&str>,
    window: Option<usize>,
) -> anyhow::Result<TcpStream> {
    let s = socket2::Socket::new(
        socket2::Domain::for_address(to),
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )?;
    if let Some(cc) = congestion {
        set_congestion(&s, cc)?;
    }
    if let Some(w) = window {
        set_buffers(&s, w)?;
    }
    s.connect_timeout(&to.into(), Duration::from_secs(3))?;
    Ok(s.into())
}

/// Both socket buffers of `s` to `bytes` (iperf3 `-w`): the kernel stops autotuning them,
/// doubles the size for its bookkeeping and caps it at net.core.wmem_max and rmem_max.
pub fn set_buffers(s: &impl AsFd, bytes: usize) -> anyhow::Result<()> {
    let s = socket2::SockRef::from(s);
    s.set_send_buffer_size(bytes)
        .and_then(|()| s.set_recv_buffer_size(bytes))
        .with_context(|| format!("net: cannot set the socket buffers to {bytes} B (--window)"))
}

/// The congestion control a TCP socket uses, as the kernel reports it.
pub fn congestion_of(s: &TcpStream) -> std::io::Result<String> {
    let mut name = [0u8; 32];
    let mut len = name.len() as libc::socklen_t;
    // SAFETY: `name` is writable for `len` bytes and `len` is passed by pointer.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let b = &name[..(len as usize).min(name.len())];
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    Ok(String::from_utf8_lossy(&b[..end]).into_owned())
}

/// Run one test against the receiver at `spec.target`. `progress` gets bytes sent. With
/// `checkpoint`, a checkpoint of the test goes to it every
/// [`engine::load::CHECKPOINT_EVERY`] after the warm-up while the test runs (see
/// [`TestReport::checkpoint_s`]), from the thread that watches the test: a compare per
/// wake-up of it, nothing on the streams' sending loops but one store of their counts at
/// the warm-up's end.
pub fn run(
    spec: &SendSpec,
    progress: &AtomicU64,
    stop_all: &dyn Fn() -> bool,
    checkpoint: Option<&(dyn Fn(TestReport) + Sync)>,
) -> anyhow::Result<TestReport> {
    if spec.proto == Proto::Udp && spec.payload > proto::MAX_UDP_PAYLOAD {
        bail!(
            "net: UDP payload {} B is larger than a UDP datagram can carry ({} B); use e.g. --udp-payload 1472",
            spec.payload,
            proto::MAX_UDP_PAYLOAD
        );
    }
    if spec.proto == Proto::Udp && spec.payload < proto::UDP_HEADER_BYTES {
        bail!(
            "net: UDP payload {} B is too small: at least {} B carry the sequence number and send time",
            spec.payload,
            proto::UDP_HEADER_BYTES
        );
    }
    // This thread and those it starts (the control reader) on the sender CPUs, as the
    // whole of a reference client under `taskset`: off the receiver's CPUs.
    let _pinned = engine::launch::PinnedForNow::new(&spec.sender_cpus);
    let mut ctl = connect_control(&spec.target)?;
    ctl.set_nodelay(true)?;
    let peer = ctl.peer_addr()?;
    let mut rd = LineReader::new(ctl.try_clone()?);
    proto::send(
        &mut ctl,
        &Msg::Start {
            version: proto::PROTOCOL_VERSION,
            proto: spec.proto,
            payload: spec.payload,
            duration_s: spec.duration_s,
            streams: spec.streams,
            interval_s: spec.interval_s,
            cpus: spec.receiver_cpus.clone(),
            warmup_s: spec.warmup_s,
            congestion: match spec.proto {
                Proto::Tcp => spec.congestion.clone(),
                Proto::Udp => None,
            },
            window: spec.window,
            paced: spec.rate_bps > 0.0,
        },
    )?;
    let ports = match rd.next(Instant::now() + Duration::from_secs(10))? {
        Some(Msg::Ready { data_ports }) => data_ports,
        Some(Msg::Error { message }) => bail!(
            "net: the receiver at {} refused the test: {message}",
            spec.target
        ),
        other => bail!("net: unexpected answer from the receiver: {other:?}"),
    };
    enum Data {
        Tcp(TcpStream),
        Udp(UdpSocket),
    }
    let mut socks = Vec::new();
    for i in 0..spec.streams {
        match spec.proto {
            Proto::Tcp => {
                let port = *ports.first().context("receiver gave no data port")?;
                let s = connect_tcp(
                    SocketAddr::new(peer.ip(), port),
                    spec.congestion.as_deref(),
                    spec.window,
                )
                .with_context(|| {
                    format!("net: opening TCP data stream {i} to {}:{port}", peer.ip())
                })?;
                socks.push(Data::Tcp(s));
            }
            Proto::Udp => {
                let port = *ports.get(i).context("receiver gave too few data ports")?;
                let local: SocketAddr = if peer.is_ipv4() {
                    "0.0.0.0:0"
                } else {
                    "[::]:0"
                }
                .parse()?;
                let s = UdpSocket::bind(local)?;
                if let Some(w) = spec.window {
                    set_buffers(&s, w)?;
                }
                s.connect(SocketAddr::new(peer.ip(), port))?;
                socks.push(Data::Udp(s));
            }
        }
    }
    // iperf3 -Z makes its file as it sets a stream up, before anything is timed. One file
    // serves every stream: each send names its own offset and leaves the file's alone.
    let zerocopy_src = if spec.zerocopy && spec.proto == Proto::Tcp {
        Some(Arc::new(zerocopy_source(spec.payload)?))
    } else {
        None
    };
    let congestion = socks.iter().find_map(|d| match d {
        Data::Tcp(s) => congestion_of(s).ok(),
        Data::Udp(_) => None,
    });
    // Second handles on the TCP streams, for their kernel counters.
    let tcp_socks = socks
        .iter()
        .filter_map(|d| match d {
            Data::Tcp(s) => Some(s.try_clone()),
            Data::Udp(_) => None,
        })
        .collect::<std::io::Result<Vec<_>>>();
    proto::send(&mut ctl, &Msg::Go)?;
    let tracker = (spec.proto == Proto::Tcp).then(|| {
        tcp_socks
            .map(|s| Arc::new(Mutex::new(Tracker::new(s))))
            .map_err(|e| format!("a second handle on a TCP stream: {e}"))
    });
    // The whole process from the end of the warm-up (`go` without one), as iperf3 counts
    // its CPU (control and telemetry threads included), beside the sending threads' own.
    let mut process0 = (process_cpu(), Instant::now());
    // Where the measured test begins on the wall clock (its checkpoints' window).
    let mut marked_wall = SystemTime::now();
    // Up at the end of the warm-up (at once without one): each sending thread then notes
    // where it stands (`mark`).
    let measuring = Arc::new(AtomicBool::new(spec.warmup_s <= 0.0));

    // The control reader: intervals as they come, then the result (or the receiver's end).
    let receiver_gone = Arc::new(AtomicBool::new(false));
    let intervals = Arc::new(Mutex::new(Vec::<IntervalReport>::new()));
    let total_deadline =
        Instant::now() + Duration::from_secs_f64(spec.warmup_s + spec.duration_s + 15.0);
    // What the reader ends with comes on a channel as well, so that the wait for it can
    // be bounded and can see a stop (a join cannot).
    let (reported, report) = std::sync::mpsc::channel();
    let reader = {
        let gone = Arc::clone(&receiver_gone);
        let intervals = Arc::clone(&intervals);
        let tracker = tracker.as_ref().and_then(|t| t.as_ref().ok()).cloned();
        let mut read = move || -> Result<ReceiverResult, String> {
            loop {
                match rd.next(total_deadline) {
                    Ok(Some(Msg::Interval {
                        start_s,
                        end_s,
                        streams,
                        warmup,
                    })) => {
                        let retransmits = tracker.as_ref().and_then(|t| {
                            let mut t = t.lock().ok()?;
                            let r = t.interval();
                            if warmup {
                                // The test's counters start after the warm-up's last interval.
                                t.restart();
                            }
                            r
                        });
                        if let Ok(mut v) = intervals.lock() {
                            v.push(IntervalReport {
                                start_s,
                                end_s,
                                received: streams,
                                retransmits,
                                warmup,
                            });
                        }
                    }
                    Ok(Some(Msg::Result {
                        duration_s,
                        streams,
                        warmup,
                        cpu,
                        cpu_span_s,
                        process,
                        pin_error,
                    })) => {
                        return Ok(ReceiverResult {
                            duration_s,
                            streams,
                            warmup,
                            cpu,
                            cpu_span_s,
                            process,
                            pin_error,
                        })
                    }
                    Ok(Some(Msg::Error { message })) => {
                        gone.store(true, Ordering::Relaxed);
                        return Err(format!("the receiver reported an error: {message}"));
                    }
                    Ok(Some(other)) => {
                        gone.store(true, Ordering::Relaxed);
                        return Err(format!("unexpected control message {other:?}"));
                    }
                    Ok(None) => {
                        gone.store(true, Ordering::Relaxed);
                        return Err("the receiver sent no result in time".into());
                    }
                    Err(e) => {
                        gone.store(true, Ordering::Relaxed);
                        return Err(format!("{e:#}"));
                    }
                }
            }
        };
        std::thread::spawn(move || {
            let _ = reported.send(read());
        })
    };

    let stop = Arc::new(AtomicBool::new(false));
    let counters: Vec<Arc<(AtomicU64, AtomicU64)>> = (0..spec.streams)
        .map(|_| Arc::new((AtomicU64::new(0), AtomicU64::new(0))))
        .collect();
    // What each stream had sent at its mark (the warm-up's), left once as it marks: its
    // checkpoints count from there.
    let warm: Vec<Arc<Mutex<Option<SentStats>>>> =
        (0..spec.streams).map(|_| Arc::default()).collect();
    /// One sending thread from its mark to its end: what each of its streams sent, and
    /// what each sent before the mark.
    struct Out {
        /// Which streams the thread carried, in the order of `sent` and `warmup`.
        streams: Vec<usize>,
        sent: Vec<SentStats>,
        warmup: Vec<SentStats>,
        cpu: CpuUsage,
        send_s: f64,
        /// Its mark (the end of the warm-up, or its start), on the wall clock.
        started: SystemTime,
        errors: u64,
        error: Option<String>,
    }
    // Which streams each thread sends ([`send_threads`]; a UDP stream's loop sends
    // without waiting for room, so it has a thread of its own).
    let threads = send_threads(spec);
    let mut socks: Vec<Option<Data>> = socks.into_iter().map(Some).collect();
    // Stopped and joined on every way out, so that a stream that failed to start, or a
    // panic, does not leave the others sending.
    let mut workers = Workers::new(&stop);
    for (t, ids) in crate::server::deal(spec.streams, threads)
        .into_iter()
        .enumerate()
    {
        let data: Vec<Data> = ids.iter().filter_map(|&i| socks[i].take()).collect();
        let stop = Arc::clone(&stop);
        let measuring = Arc::clone(&measuring);
        let gone = Arc::clone(&receiver_gone);
        let ctrs: Vec<_> = ids.iter().map(|&i| Arc::clone(&counters[i])).collect();
        let slots: Vec<_> = ids.iter().map(|&i| Arc::clone(&warm[i])).collect();
        let cpus = spec.sender_cpus.clone();
        let payload = spec.payload;
        let rate = spec.rate_bps;
        let batch = spec.udp_batch.max(1);
        let gso = (spec.udp_gso > 1).then(|| gso_segments(spec.udp_gso, payload));
        let src = zerocopy_src.clone();
        let h = std::thread::Builder::new()
            .name(format!("net-tx-{t}"))
            .spawn(move || -> Out {
                // Exactly: a list the kernel narrowed (a cpuset) is refused, not run on
                // fewer CPUs than asked.
                let pin_err = engine::launch::pin_current_thread_exactly(&cpus)
                    .err()
                    .map(|e| format!("{e:#}"));
                let (started, t0) = (SystemTime::now(), Instant::now());
                // Each stream's counts at the mark, left where checkpoints read them.
                let publish = |at: &Vec<SentStats>| {
                    for (slot, counted) in slots.iter().zip(at) {
                        if let Ok(mut g) = slot.lock() {
                            *g = Some(counted.clone());
                        }
                    }
                };
                let mut marker = Marker::publishing(&measuring, &publish);
                let mut o = Out {
                    sent: vec![SentStats::default(); ids.len()],
                    warmup: Vec::new(),
                    streams: ids,
                    cpu: CpuUsage::default(),
                    send_s: 0.0,
                    started,
                    errors: 0,
                    error: pin_err,
                };
                let (mut tcp, mut udp) = (Vec::new(), None);
                for d in data {
                    match d {
                        Data::Tcp(s) => tcp.push(s),
                        Data::Udp(s) => udp = Some(s),
                    }
                }
                if o.error.is_none() {
                    if let Some(s) = udp {
                        let i = o.streams[0];
                        let mut b = match gso {
                            Some(n) => match Batch::gso(&s, n, payload) {
                                Ok(b) => b,
                                Err(e) => {
                                    o.error = Some(format!("UDP stream {i}: {e}"));
                                    o.send_s = t0.elapsed().as_secs_f64();
                                    o.warmup = o.sent.clone();
                                    return o;
                                }
                            },
                            None => Batch::new(batch, payload),
                        };
                        let sent = udp_send(
                            &s,
                            &mut b,
                            rate,
                            &stop,
                            &gone,
                            &mut marker,
                            &ctrs[0],
                            &mut o.sent[0],
                            &mut o.errors,
                        );
                        if let Err(e) = sent {
                            o.error = Some(udp_send_failure(i, &e, gso, batch));
                        }
                    } else {
                        // A buffer in memory only for write(2): sendfile's is the file.
                        let buf;
                        let how = match &src {
                            Some(f) => TcpSend::File(f, payload),
                            None => {
                                buf = proto::AlignedBuf::new(payload, FILL);
                                TcpSend::Write(buf.as_slice())
                            }
                        };
                        let progress: Vec<&AtomicU64> = ctrs.iter().map(|c| &c.0).collect();
                        let failed =
                            tcp_send(&tcp, how, rate, &stop, &mut marker, &progress, &mut o.sent);
                        for (i, e) in o.streams.iter().zip(failed) {
                            if let (Some(e), None) = (e, &o.error) {
                                if !stop.load(Ordering::Relaxed) {
                                    o.error = Some(format!("TCP stream {i}: {e}"));
                                }
                            }
                        }
                        for s in &tcp {
                            let _ = s.set_nonblocking(false);
                            let _ = s.shutdown(Shutdown::Write);
                        }
                    }
                }
                let m = marker.finish(|| o.sent.clone());
                o.send_s = m.at.elapsed().as_secs_f64();
                o.started = m.wall;
                o.cpu = m.cpu_since();
                for (sent, warm) in o.sent.iter_mut().zip(&m.counted) {
                    sent.bytes -= warm.bytes;
                    sent.packets -= warm.packets;
                }
                o.warmup = m.counted;
                o
            })?;
        workers.push(h);
    }

    let t0 = Instant::now();
    let mark_at = t0 + Duration::from_secs_f64(spec.warmup_s);
    let deadline = mark_at + Duration::from_secs_f64(spec.duration_s);
    let mut early = None;
    let mut interrupted = false;
    let every = engine::load::CHECKPOINT_EVERY;
    let mut next_checkpoint = checkpoint.map(|_| mark_at + every);
    loop {
        let now = Instant::now();
        if now >= mark_at && !measuring.load(Ordering::Relaxed) {
            measuring.store(true, Ordering::Relaxed);
            process0 = (process_cpu(), Instant::now());
            marked_wall = SystemTime::now();
        }
        if now >= deadline {
            break;
        }
        if stop_all() {
            interrupted = true;
            break;
        }
        if receiver_gone.load(Ordering::Relaxed) {
            early = Some(format!(
                "the receiver stopped {:.2} s into the test{}; totals are what it reported \
                 before that",
                t0.elapsed().as_secs_f64(),
                if spec.warmup_s > 0.0 {
                    " (its warm-up included)"
                } else {
                    ""
                }
            ));
            break;
        }
        // Every stream has ended on its own (each failed, and says why): nothing more
        // will be sent, so waiting out the duration would only make a failed test long.
        if workers.all_finished() {
            break;
        }
        progress.store(
            counters.iter().map(|c| c.0.load(Ordering::Relaxed)).sum(),
            Ordering::Relaxed,
        );
        if let (Some(at), Some(hand)) = (next_checkpoint, checkpoint) {
            if now >= at {
                let live = Live {
                    counters: &counters,
                    warm: &warm,
                    intervals: &intervals,
                    congestion: &congestion,
                };
                hand(live.so_far(spec, (process0.1, marked_wall), &process0.0, now));
                // The next after this one, once (a late wake-up takes it late).
                let mut next = at + every;
                while next <= now {
                    next += every;
                }
                next_checkpoint = Some(next);
            }
        }
        let next = if now < mark_at { mark_at } else { deadline };
        std::thread::sleep((next - now).min(WATCH));
    }
    let mut rep = TestReport {
        congestion,
        interrupted,
        in_warmup: !measuring.load(Ordering::Relaxed),
        ..Default::default()
    };
    rep.sent = vec![SentStats::default(); spec.streams];
    rep.warmup_sent = vec![SentStats::default(); spec.streams];
    rep.stream_send_s = vec![0.0; spec.streams];
    // Every stream stopped and joined before a panic in one is returned.
    for o in workers.join() {
        let o = o.map_err(|_| anyhow::anyhow!("a sender thread panicked"))?;
        let per_stream = o.streams.iter().zip(o.sent.into_iter().zip(o.warmup));
        for (&i, (sent, warmup)) in per_stream {
            rep.sent[i] = sent;
            rep.warmup_sent[i] = warmup;
            rep.stream_send_s[i] = o.send_s;
        }
        rep.sender_cpu.add(&o.cpu);
        if let Ok(took) = Duration::try_from_secs_f64(o.send_s) {
            let stream = (o.started, o.started + took);
            rep.send_span = Some(engine::workload::widen(rep.send_span, stream));
        }
        rep.send_errors += o.errors;
        if rep.error.is_none() {
            rep.error = o.error;
        }
    }
    if early.is_some() {
        rep.error = early;
    }
    rep.sender_process = proto::ProcessCpu {
        cpu: process_cpu().since(&process0.0),
        span_s: process0.1.elapsed().as_secs_f64(),
        process: proto::process_token(),
    };
    let _ = ctl.write_all(&proto::encode(&Msg::Done {
        sent: rep.sent.clone(),
        warmup: if spec.warmup_s > 0.0 {
            rep.warmup_sent.clone()
        } else {
            Vec::new()
        },
    }));
    // The final report comes once the receiver has waited for the streams' ends (or
    // drained their datagrams): wait that long and a margin, not to the test's deadline
    // from its start (a receiver whose host froze held a stopped hour-long test for most
    // of an hour). A stop asked for meanwhile ends the wait at once; one that stopped the
    // test does not (the final report of a test cut short is still worth the wait).
    let wait = match spec.proto {
        Proto::Tcp => crate::server::TCP_END_WAIT,
        Proto::Udp => crate::server::UDP_DRAIN_MAX,
    } + RESULT_MARGIN;
    let until = Instant::now() + wait;
    let mut gave_up = None;
    let mut result = None;
    while result.is_none() && gave_up.is_none() {
        let left = until.saturating_duration_since(Instant::now());
        match report.recv_timeout(left.min(WATCH)) {
            Ok(r) => result = Some(r),
            // The reader panicked: its join says so below.
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if !interrupted && stop_all() {
                    gave_up = Some("stopped while waiting for it".to_string());
                } else if Instant::now() >= until {
                    gave_up = Some(format!(
                        "none came within {} s of the sender's `done`",
                        wait.as_secs()
                    ));
                }
            }
        }
    }
    if gave_up.is_some() {
        // The reader is still in a read: ending the connection ends it.
        let _ = ctl.shutdown(Shutdown::Both);
    }
    reader
        .join()
        .map_err(|_| anyhow::anyhow!("the control reader panicked"))?;
    // A report that came as the wait was given up is taken; otherwise the reader's error
    // is only that the connection ended, and the reason is why the wait was given up.
    let result = match result.or_else(|| report.try_recv().ok()) {
        Some(Ok(r)) => Ok(r),
        Some(Err(e)) => Err(gave_up.unwrap_or(e)),
        None => Err(gave_up.unwrap_or_else(|| "the control reader ended".into())),
    };
    rep.intervals = intervals.lock().map(|v| v.clone()).unwrap_or_default();
    rep.tcp = tracker.map(|t| {
        t.and_then(|t| {
            Arc::try_unwrap(t)
                .map_err(|_| "the control reader still holds the TCP counters".to_string())?
                .into_inner()
                .map_err(|_| "a thread panicked reading the TCP counters".to_string())?
                .finish()
        })
    });
    match result {
        Ok(r) => {
            rep.receive_duration_s = r.duration_s;
            rep.received = r.streams;
            rep.warmup_received = r.warmup;
            rep.receiver_cpu = Some(r.cpu);
            rep.receiver_cpu_span_s = r.cpu_span_s;
            rep.receiver_process = r.process;
            rep.receiver_pin_error = r.pin_error;
        }
        Err(why) => {
            // No final report: what the receiver reported interval by interval is all we
            // know it received. What was sent after its last interval may have arrived
            // too, so the loss over the test is not known (not everything unreported).
            let (sum, warm) = sum_intervals(&rep.intervals, spec.streams);
            if spec.warmup_s > 0.0 {
                rep.warmup_received = warm;
            }
            rep.receive_duration_s = rep.intervals.last().map_or(0.0, |iv| iv.end_s.max(0.0));
            rep.loss_unknown = Some(match rep.intervals.last() {
                Some(iv) => format!(
                    "the receiver sent no final report: what was sent after its last \
                     interval (to {:.2} s{}) is not known to have arrived",
                    iv.end_s,
                    if spec.warmup_s > 0.0 {
                        " after the warm-up"
                    } else {
                        ""
                    }
                ),
                None => "the receiver sent no report: nothing is known to have arrived".into(),
            });
            rep.received = sum;
            if rep.error.is_none() {
                rep.error = Some(format!(
                    "no final report from the receiver: {why}; what it received is the sum \
                     of its interval reports"
                ));
            }
        }
    }
    Ok(rep)
}

/// How many threads send `spec`'s streams: TCP's share one per sender CPU
/// ([`crate::server::tcp_threads`]); each UDP stream has its own.
pub(crate) fn send_threads(spec: &SendSpec) -> usize {
    match spec.proto {
        Proto::Tcp => crate::server::tcp_threads(spec.streams, &spec.sender_cpus),
        Proto::Udp => spec.streams,
    }
}

/// Each stream's receive counts over the receiver's interval reports, the test's and the
/// warm-up's apart: what it is known to have received without its final report. A
/// stream's loss is the sum of its intervals' (the gaps the receiver saw, less those that
/// arrived late), its jitter the last interval's running estimate.
fn sum_intervals(
    intervals: &[IntervalReport],
    streams: usize,
) -> (Vec<StreamStats>, Vec<StreamStats>) {
    let mut sum = vec![StreamStats::default(); streams];
    let mut warm = vec![StreamStats::default(); streams];
    for iv in intervals {
        let into = if iv.warmup { &mut warm } else { &mut sum };
        for (s, r) in into.iter_mut().zip(&iv.received) {
            s.bytes += r.bytes;
            s.packets += r.packets;
            s.lost += r.lost;
            s.out_of_order += r.out_of_order;
            s.jitter_ms = r.jitter_ms;
            s.jitter_samples += r.jitter_samples;
        }
    }
    (sum, warm)
}

/// What the thread watching a test can read of it while the streams send.
struct Live<'a> {
    /// Each stream's bytes and datagrams sent since its start.
    counters: &'a [Arc<(AtomicU64, AtomicU64)>],
    /// Each stream's counts at its mark (None: not marked yet).
    warm: &'a [Arc<Mutex<Option<SentStats>>>],
    intervals: &'a Mutex<Vec<IntervalReport>>,
    congestion: &'a Option<String>,
}

/// Why a checkpoint has no TCP counters over the test.
const TCP_COUNTERS_AT_END: &str = "the sender's kernel counters over the test (TCP_INFO: \
    retransmits, RTT, window) are read at the end of the test: this result is a checkpoint \
    taken while it ran; each interval's retransmits are kept";

impl Live<'_> {
    /// The test so far, at `now`: from the end of the warm-up (`marked`: when this thread
    /// marked it, on its clock and the wall clock; the process's CPU then, `cpu0`) to now
    /// on the sender, and to the receiver's last interval report on the receiver.
    fn so_far(
        &self,
        spec: &SendSpec,
        marked: (Instant, SystemTime),
        cpu0: &CpuUsage,
        now: Instant,
    ) -> TestReport {
        let at = now.saturating_duration_since(marked.0);
        let (sent, warmup_sent): (Vec<SentStats>, Vec<SentStats>) = self
            .counters
            .iter()
            .zip(self.warm)
            .map(|(c, w)| {
                let total = SentStats {
                    bytes: c.0.load(Ordering::Relaxed),
                    packets: c.1.load(Ordering::Relaxed),
                };
                // A stream not marked yet has sent nothing of the test proper.
                let warm = w
                    .lock()
                    .ok()
                    .and_then(|g| g.clone())
                    .unwrap_or(total.clone());
                let sent = SentStats {
                    bytes: total.bytes.saturating_sub(warm.bytes),
                    packets: total.packets.saturating_sub(warm.packets),
                };
                (sent, warm)
            })
            .unzip();
        let intervals = self.intervals.lock().map(|v| v.clone()).unwrap_or_default();
        let (received, warmup_received) = sum_intervals(&intervals, spec.streams);
        let receive_duration_s = intervals
            .iter()
            .rfind(|iv| !iv.warmup)
            .map_or(0.0, |iv| iv.end_s.max(0.0));
        let warm_up = spec.warmup_s > 0.0;
        TestReport {
            stream_send_s: vec![at.as_secs_f64(); sent.len()],
            sent,
            send_span: Some((marked.1, marked.1 + at)),
            warmup_sent: if warm_up { warmup_sent } else { Vec::new() },
            received,
            warmup_received: if warm_up { warmup_received } else { Vec::new() },
            receive_duration_s,
            sender_process: proto::ProcessCpu {
                cpu: process_cpu().since(cpu0),
                span_s: at.as_secs_f64(),
                process: proto::process_token(),
            },
            intervals,
            congestion: self.congestion.clone(),
            tcp: (spec.proto == Proto::Tcp).then(|| Err(TCP_COUNTERS_AT_END.to_string())),
            checkpoint_s: Some(at.as_secs_f64()),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A send the kernel refuses every time ends the stream at once with the error, named
    /// for `--udp-gso`, instead of being counted and retried for the whole test (at 100%
    /// CPU, the test stored as measured at 0 Gbit/s); a full queue or a port-unreachable
    /// passes.
    #[test]
    fn a_send_error_ends_a_stream_only_when_certain_or_lasting() {
        let err = std::io::Error::from_raw_os_error;
        let mut since = None;
        assert!(udp_error_is_tried_again(&err(libc::ENOBUFS), &mut since));
        assert!(since.is_none(), "a passing error starts no clock");
        assert!(!udp_error_is_tried_again(&err(libc::EINVAL), &mut since));
        // A firewall's EPERM or a route flap: tried again, until sends have failed 1 s.
        assert!(udp_error_is_tried_again(&err(libc::EPERM), &mut since));
        assert!(udp_error_is_tried_again(
            &err(libc::EHOSTUNREACH),
            &mut since
        ));
        let mut long_ago = Some(Instant::now() - UDP_FAILING_MAX);
        assert!(!udp_error_is_tried_again(&err(libc::EPERM), &mut long_ago));
    }

    #[test]
    fn a_send_refused_for_good_ends_the_stream_and_says_why() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        // A GSO send from a socket that leaves out UDP checksums (SO_NO_CHECK) fails with
        // EINVAL every time, as one too large for the path MTU does (loopback's 64 KiB
        // MTU takes any).
        proto::set_int_option(tx.as_raw_fd(), libc::SOL_SOCKET, libc::SO_NO_CHECK, 1).unwrap();
        let mut b = Batch::gso(&tx, 8, 1472).unwrap();
        let (stop, gone, measuring) = (
            AtomicBool::new(false),
            AtomicBool::new(false),
            AtomicBool::new(true),
        );
        let ended = AtomicBool::new(false);
        let ctr = (AtomicU64::new(0), AtomicU64::new(0));
        let (mut sent, mut errors) = (SentStats::default(), 0);
        let t0 = Instant::now();
        let got = std::thread::scope(|sc| {
            // A stream that retries for ever is stopped after 3 s, so the test fails
            // rather than hangs.
            sc.spawn(|| {
                while !ended.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(3) {
                    std::thread::sleep(Duration::from_millis(10));
                }
                stop.store(true, Ordering::Relaxed);
            });
            let mut marker = Marker::new(&measuring);
            let got = udp_send(
                &tx,
                &mut b,
                0.0,
                &stop,
                &gone,
                &mut marker,
                &ctr,
                &mut sent,
                &mut errors,
            );
            ended.store(true, Ordering::Relaxed);
            got
        });
        assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
        let e = got.expect_err("a send refused for good ends the stream");
        assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
        assert_eq!((sent.packets, errors), (0, 0));
        let why = udp_send_failure(0, &e, Some(8), 1);
        assert!(why.contains("EINVAL") && why.contains("--udp-gso"), "{why}");
        let why = udp_send_failure(1, &std::io::Error::from_raw_os_error(libc::EPERM), None, 32);
        assert!(
            why.starts_with("UDP stream 1") && why.contains("firewall"),
            "{why}"
        );
        let e = std::io::Error::from_raw_os_error(libc::EMSGSIZE);
        assert!(udp_send_failure(0, &e, None, 32).contains("--udp-batch 32"));
        for passing in [libc::ENOBUFS, libc::EAGAIN, libc::ECONNREFUSED, libc::EINTR] {
            assert!(udp_error_passes(&std::io::Error::from_raw_os_error(
                passing
            )));
        }
        for fatal in [libc::EINVAL, libc::EIO, libc::EPERM, libc::EMSGSIZE] {
            assert!(!udp_error_passes(&std::io::Error::from_raw_os_error(fatal)));
        }
    }
}
