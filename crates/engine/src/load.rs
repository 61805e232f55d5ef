//! THE load loop, shared by every request/response workload.
//!
//! Load shape ([`LoadShape`]: closed loop, or open loop at a constant or Poisson rate) and
//! stop condition ([`StopAfter`]: N requests or a duration) are parameters of one loop, not
//! copies of it. Two ways to plug a protocol in:
//! - [`Protocol`]: a byte protocol (Redis RESP, HTTP/1.1) on non-blocking sockets, many
//!   connections per thread, run by [`run_stream`];
//! - [`Session`]: a blocking client (a PostgreSQL connection), one thread per session,
//!   run by [`run_sessions`].
//!
//! Latency: per-worker HdrHistograms (ns, 3 significant digits) per operation class,
//! merged once at the end. In open loop, latency is measured from each request's
//! *intended* send time (coordinated-omission correct, METHODS.md 2.5) into the
//! `corrected` histogram, and from the actual send time into the `service` histogram.
//! A session that waits around its operation (a TPC-C terminal's keying and think
//! times) returns the operation's own time and when it was sent ([`Latency::Own`]): the
//! loop counts and windows it by that send, and records that time, not the waits.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use serde::{Deserialize, Serialize};

use crate::workload::Progress;

/// The highest offered rate taken, requests/s over all load generators: 100 million,
/// beyond any set of generators (a kv cluster's tens of millions). Above it, a rate is a
/// typo (`--capacity 1e12`), and an open loop's schedule (a picosecond between
/// requests) has no meaning.
pub const MAX_RATE_PER_S: f64 = 1e8;

/// Refuse an offered rate above [`MAX_RATE_PER_S`], naming the flag that gave it. Other
/// checks say what a rate at or below 0 is.
pub fn check_rate(rate: f64, flag: &str) -> anyhow::Result<()> {
    if rate > MAX_RATE_PER_S {
        anyhow::bail!(
            "{flag} {rate}/s is above the 100 million/s any set of load generators \
             can offer: a typo? (e.g. {flag} 200000)"
        );
    }
    Ok(())
}

/// How often a plain load test's generators take a checkpoint of what they measured,
/// from the end of its warm-up ([`crate::workload::CheckpointSink`]): rackbench killed
/// mid-test loses at most this much of it. 5 s: a copy of each worker's histograms (a
/// few hundred KB, under a millisecond) and a provisional result stored that often
/// cost nothing a test can see, and a test long enough for a kill to matter takes
/// several.
pub const CHECKPOINT_EVERY: Duration = Duration::from_secs(5);

/// How requests are offered.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum LoadShape {
    /// Each connection sends its next request (or pipeline batch) when the previous
    /// reply arrived: throughput is whatever the system gives.
    Closed,
    /// Requests are offered on a fixed schedule at `rate` per second in total,
    /// whatever the replies do.
    Constant { rate: f64 },
    /// Like `Constant` but with exponentially distributed gaps (Poisson arrivals).
    Poisson { rate: f64 },
}

impl LoadShape {
    pub fn offered_rate(&self) -> Option<f64> {
        match *self {
            LoadShape::Closed => None,
            LoadShape::Constant { rate } | LoadShape::Poisson { rate } => Some(rate),
        }
    }
}

/// When a test ends.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum StopAfter {
    /// After this many requests in total (across all connections), warm-up excluded.
    Requests(u64),
    /// After this long, warm-up excluded.
    Duration(Duration),
}

/// Everything the loop needs to know, as plain data (echoed into results).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadSpec {
    pub shape: LoadShape,
    pub stop: StopAfter,
    /// Run this long before measuring (requests during warm-up are not recorded).
    pub warmup: Duration,
    /// Connections (redis-benchmark's clients, wrk's connections, virtual users).
    pub connections: usize,
    /// Load-generator threads; connections are spread over them.
    pub threads: usize,
    /// Requests in flight per connection (redis-benchmark's -P). 1 for request/response.
    pub pipeline: usize,
    /// Close and reopen the connection after this many requests, once their replies are
    /// in (None: keep-alive forever; Some(1): a new connection per request; redis-benchmark
    /// -k 0 -P N is Some(N): N pipelined requests, then a new connection).
    pub requests_per_connection: Option<u64>,
    /// Pin load-generator thread i to client_cpus[i % len] (empty: no pinning).
    pub client_cpus: Vec<usize>,
    pub seed: u64,
    /// Length of the per-interval throughput series, seconds.
    pub interval: Duration,
    /// Open loop: sleep on a timer between sends instead of spinning. Spinning measures
    /// replies the moment they arrive (a sleeping generator adds its own wake-up to each
    /// latency: 60-80 us on a VM) but holds a whole CPU at any rate; sleeping lets the
    /// generator's CPU follow the offered rate, which load levels on the measured host need.
    #[serde(default)]
    pub sleep_when_idle: bool,
    /// How a closed-loop generator waits on its connections (an open loop uses epoll).
    #[serde(default)]
    pub client_io: ClientIo,
    /// This generator's place among the test's generators, as a fraction (index /
    /// generators; 0 for the only one): its constant-rate schedules start that much of
    /// a worker's share later, so that generators do not send in step.
    #[serde(default)]
    pub phase: f64,
    /// How long a generator waits with requests in flight and no byte of reply before it
    /// ends the test, counting them lost: a server stopped (SIGSTOP, `CLIENT PAUSE`) or a
    /// path that drops packets keeps its connections open, and a test stopped by a count
    /// waited for its last requests for ever.
    #[serde(default = "no_reply_timeout")]
    pub no_reply_timeout: Duration,
}

/// [`LoadSpec::no_reply_timeout`]'s default: far beyond any reply of the workloads here.
pub const NO_REPLY_TIMEOUT: Duration = Duration::from_secs(30);

fn no_reply_timeout() -> Duration {
    NO_REPLY_TIMEOUT
}

impl LoadSpec {
    /// Is this a closed loop stopped by time? It is measured over its duration, so an
    /// operation straggling past its end cannot stretch it (to the last reply, one
    /// 1.5 s late read a 1 s test as 2.4 s). The stream loop counts the replies done
    /// from the warm-up's end to the end, whenever their requests left, and waits for
    /// none after it (wrk's count); a session counts the operations it started in that
    /// window (a blocking call cannot be left), each with its latency. A closed loop
    /// stopped by a count measures every request to its reply (redis-benchmark's), and
    /// an open loop the requests of its schedule.
    pub fn timed_closed_loop(&self) -> bool {
        self.shape == LoadShape::Closed && matches!(self.stop, StopAfter::Duration(_))
    }

    /// When a test stopped by time ends, in ns from its start (its warm-up and its
    /// duration). None for one stopped by a count.
    pub fn end_ns(&self) -> Option<u64> {
        match self.stop {
            StopAfter::Duration(d) => Some((self.warmup + d).as_nanos() as u64),
            StopAfter::Requests(_) => None,
        }
    }

    /// The seconds a test measured, from the end of warm-up, given its last reply, or the
    /// time its generators stopped sending if that is later, at `last_ns` after it. A
    /// closed loop stopped by a count, or a test stopped early: to then
    /// (redis-benchmark's whole-test wall time; a server that stalled before a test
    /// stopped early is measured to the stop, not to the last reply before its stall). A
    /// timed closed loop that ran its time: its duration
    /// ([`LoadSpec::timed_closed_loop`]). An open loop that ran its schedule: the
    /// span of that schedule at least (its duration, or its N requests over its rate R).
    /// To the last reply alone, N requests sent 1/R apart measured (N-1)/R plus a
    /// latency, and reported more than was offered: `--rate 5` for 2 s read 5.56/s,
    /// `--rate 2` for 1 s 4.0/s, a search probe of one request at 1/s its reply's
    /// inverse latency.
    pub fn measured_s(&self, last_ns: u64, stopped_early: bool) -> f64 {
        let to_last = last_ns as f64 / 1e9;
        let rate = match (self.shape, self.stop) {
            _ if stopped_early => return to_last,
            (LoadShape::Closed, StopAfter::Duration(d)) => return d.as_secs_f64(),
            (LoadShape::Closed, StopAfter::Requests(_)) => return to_last,
            (LoadShape::Constant { rate } | LoadShape::Poisson { rate }, _) => rate,
        };
        let span = match self.stop {
            StopAfter::Duration(d) => d.as_secs_f64(),
            StopAfter::Requests(n) if rate > 0.0 => n as f64 / rate,
            StopAfter::Requests(_) => 0.0,
        };
        to_last.max(span)
    }
}

/// The closed-loop generator's system-call path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientIo {
    /// io_uring where this kernel and process have it (Linux 6.1+), epoll otherwise (the
    /// result then says why).
    #[default]
    Auto,
    /// epoll: one `recv` and one `send` per reply, an `epoll_wait` per round.
    Epoll,
    /// io_uring, or fail: a multishot receive per connection, one `io_uring_enter` per
    /// round (about 5% less CPU per request on loopback).
    IoUring,
}

impl Default for LoadSpec {
    fn default() -> Self {
        LoadSpec {
            shape: LoadShape::Closed,
            stop: StopAfter::Requests(100_000),
            warmup: Duration::ZERO,
            connections: 50,
            threads: 1,
            pipeline: 1,
            requests_per_connection: None,
            client_cpus: Vec::new(),
            seed: 1,
            interval: Duration::from_secs(1),
            sleep_when_idle: false,
            client_io: ClientIo::Auto,
            phase: 0.0,
            no_reply_timeout: NO_REPLY_TIMEOUT,
        }
    }
}

/// What one reply meant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Success (a write acknowledged, a transaction committed).
    Ok,
    /// A read that found its key.
    Hit,
    /// A read that found nothing.
    Miss,
    /// A reply that says the operation failed (kept as data, by kind).
    Error(String),
    /// A read whose value did not match what was written (kv value verification).
    Mismatch,
    /// An expected, counted non-success (a TPC-C New-Order's 1% rollback).
    Rollback,
}

/// A byte protocol, one instance per connection (it may keep per-connection state such
/// as the FIFO of requests in flight).
pub trait Protocol: Send {
    /// Append one request to `out`; return its operation class index (into the class
    /// names given to [`run_stream`]).
    fn encode(&mut self, rng: &mut SmallRng, out: &mut Vec<u8>) -> usize;

    /// Parse one complete reply from the front of `buf`: `Ok(None)` when the reply is not
    /// complete yet (a normal result, not an error), `Ok(Some((consumed, outcome)))`
    /// otherwise. `Err` means the stream cannot be parsed any further (the connection is
    /// dropped and counted as a connection error).
    fn parse(&mut self, buf: &[u8]) -> Result<Option<(usize, Outcome)>, String>;

    /// Called when the connection was (re)opened: forget requests in flight.
    fn reset(&mut self) {}

    /// True once the server said it will close this connection (HTTP
    /// `Connection: close`): the loop sends nothing more on it and reopens it when the
    /// replies in flight are in, instead of losing requests to the close.
    fn closing(&self) -> bool {
        false
    }
}

/// A blocking client session (one thread each): executes one operation synchronously.
pub trait Session: Send {
    /// Execute one operation; say what it was, how it ended and how to time it. `Err`
    /// means the session is broken (server gone): the worker stops and the error is
    /// reported.
    fn execute(&mut self, rng: &mut SmallRng) -> Result<Executed, String>;

    /// When a timed run ends, told once before the first [`Session::execute`] (on the
    /// loop's clock, after the generators' common start): a session that waits around
    /// its operations stops waiting there, neither holding the run open nor sending
    /// past its end.
    fn run_ends_at(&mut self, _end: std::time::Instant) {}

    /// When the measured run starts (the end of the warm-up, on the loop's clock), told
    /// once before the first [`Session::execute`], with [`Session::run_ends_at`]: a
    /// session whose server counts its work late (PostgreSQL's statistics, flushed at
    /// most once a second) can have it counted up to there.
    fn measurement_starts_at(&mut self, _start: std::time::Instant) {}
}

/// What one [`Session::execute`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct Executed {
    /// The operation's class index (into the class names given to [`run_sessions`]).
    pub class: usize,
    pub outcome: Outcome,
    pub latency: Latency,
}

impl Executed {
    /// An operation that is the whole call (timed by the loop).
    pub fn call(class: usize, outcome: Outcome) -> Executed {
        Executed {
            class,
            outcome,
            latency: Latency::Call,
        }
    }
}

/// How the loop times one execution. The execution is counted (or not) by when the call
/// started, as every other, or, with [`Latency::Own`] in a closed loop, by when its
/// operation was sent: warm-up and the end of the run apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Latency {
    /// The whole call is the operation.
    Call,
    /// The operation's own time (`took`), from its send to its reply, sent `sent_after`
    /// the call began: the session waited before or after it (a TPC-C terminal's keying
    /// and think times are the user's, not the system's). It counts by its send: by the
    /// call's start, the transactions keyed in the ramp-up and sent after it would be
    /// left out, and a rate over the run would read low by the keying time (18 s of a
    /// 60 s run for New-Order). Open loop: its corrected latency is `took` plus how late
    /// the call started (the wait before the send moves the intended send with it).
    Own {
        took: Duration,
        sent_after: Duration,
    },
    /// Nothing was sent (the run ended while the session waited): counted by its
    /// outcome, not timed.
    NotSent,
}

/// Per-class counts and latency.
#[derive(Debug, Clone)]
pub struct ClassStats {
    pub name: String,
    /// Replies received during measurement (all outcomes).
    pub count: u64,
    pub ok: u64,
    pub hits: u64,
    pub misses: u64,
    pub mismatches: u64,
    pub rollbacks: u64,
    /// Error replies by message kind.
    pub errors: BTreeMap<String, u64>,
    /// Latency from the actual send time (closed loop: the only one).
    pub service: Histogram<u64>,
    /// Latency from the intended send time (open loop only).
    pub corrected: Option<Histogram<u64>>,
}

impl ClassStats {
    /// Nothing recorded yet; a corrected-latency histogram only in open loop.
    pub fn new(name: &str, open_loop: bool) -> ClassStats {
        ClassStats {
            name: name.to_string(),
            count: 0,
            ok: 0,
            hits: 0,
            misses: 0,
            mismatches: 0,
            rollbacks: 0,
            errors: BTreeMap::new(),
            service: model::hist::new_latency_histogram(),
            corrected: open_loop.then(model::hist::new_latency_histogram),
        }
    }

    /// Add another worker's counts and histograms of the same class.
    pub fn add(&mut self, o: &ClassStats) {
        self.count += o.count;
        self.ok += o.ok;
        self.hits += o.hits;
        self.misses += o.misses;
        self.mismatches += o.mismatches;
        self.rollbacks += o.rollbacks;
        for (k, v) in &o.errors {
            *self.errors.entry(k.clone()).or_insert(0) += v;
        }
        // Same bounds everywhere, so add cannot fail; saturate rather than panic.
        let _ = self.service.add(&o.service);
        if let (Some(d), Some(s)) = (self.corrected.as_mut(), o.corrected.as_ref()) {
            let _ = d.add(s);
        }
    }

    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }
}

/// What a load run measured (warm-up excluded).
#[derive(Debug, Clone)]
pub struct LoadOutcome {
    pub classes: Vec<ClassStats>,
    /// Measured wall time, seconds: from the end of warm-up to the last reply, or, for
    /// a timed closed loop, its duration ([`LoadSpec::timed_closed_loop`]).
    pub duration_s: f64,
    /// Completed requests per second in each `interval` of the measurement.
    pub interval_rates: Vec<f64>,
    /// Offered rate for open loop (requests/s), None for closed loop.
    pub offered_rate: Option<f64>,
    /// Requests that were sent later than their intended time by more than 1 ms
    /// (open loop: the generator or the connections could not keep up).
    pub late_sends: u64,
    /// Of `late_sends`, those that had a connection with room (a session free) from
    /// their intended time on: the generator itself was late, its loop busy or not
    /// scheduled, where the rest waited on connections a slow server held.
    pub generator_late_sends: u64,
    /// Open loop: requests due before the end of sending that were never sent (every
    /// connection was waiting on the server). They have no latency, so the percentiles
    /// leave out what would have been the slowest requests.
    pub unsent_requests: u64,
    /// Connection-level failures (refused, reset, unparsable stream), by message: one per
    /// failure, whatever it lost.
    pub connection_errors: BTreeMap<String, u64>,
    /// Measured requests whose reply never came (the connection failed under them, or
    /// the test ended first), by why: each is one error and one attempt, as httperf
    /// counts them.
    pub lost_requests: BTreeMap<String, u64>,
    /// Reconnects made (keep-alive off, or after errors).
    pub reconnects: u64,
    /// How long each of those connects took, from the connect call to the connection
    /// established (httperf's connection time); None when no connection was opened
    /// during measurement (kept alive: the connects before the test are not timed).
    pub connect: Option<Histogram<u64>>,
    /// Bytes written and read during measurement.
    pub bytes_tx: u64,
    pub bytes_rx: u64,
    /// CPU time (user, system) of the load-generator threads during measurement, seconds.
    pub loadgen_cpu_user_s: f64,
    pub loadgen_cpu_sys_s: f64,
    /// Set when the run stopped early (every connection failed, Ctrl-C).
    pub stopped_early: Option<String>,
    /// Why the generator ran on epoll when `auto` wanted io_uring (None: it had what it
    /// wanted).
    pub client_io_fallback: Option<String>,
}

/// `--wait`'s name for an open loop's way of waiting: `sleep` on a timer, or `spin`.
pub fn wait_mode(sleep_when_idle: bool) -> &'static str {
    if sleep_when_idle {
        "sleep"
    } else {
        "spin"
    }
}

impl LoadOutcome {
    pub fn total_count(&self) -> u64 {
        self.classes.iter().map(|c| c.count).sum()
    }
    /// Measured requests that got no reply.
    pub fn lost_count(&self) -> u64 {
        self.lost_requests.values().sum()
    }
    /// Connection failures.
    pub fn connection_error_count(&self) -> u64 {
        self.connection_errors.values().sum()
    }
    /// Why the test stopped in its warm-up (`warmup`, the one it was given), before its
    /// measurement began: nothing was measured. None when it measured, or had no warm-up
    /// (every session failing at once with `--warmup 0` completed nothing: that is 0).
    pub fn warmup_stop(&self, warmup: Duration) -> Option<&str> {
        let unmeasured = self.duration_s <= 0.0 && self.total_count() == 0 && !warmup.is_zero();
        self.stopped_early.as_deref().filter(|_| unmeasured)
    }
    pub fn throughput(&self) -> f64 {
        if self.duration_s > 0.0 {
            self.total_count() as f64 / self.duration_s
        } else {
            0.0
        }
    }
}

/// Drive `endpoints` with a byte protocol. Connection `i` goes to
/// `endpoints[i % endpoints.len()]` and gets its protocol from `new_protocol(i)`.
pub fn run_stream<P, F>(
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
    crate::limits::ensure_open_files(spec.connections as u64)?;
    crate::stream::run(spec, endpoints, class_names, new_protocol, progress)
}

/// Drive blocking sessions, one thread each (spec.connections is ignored: one connection
/// per session; spec.threads is ignored too). Same shapes, stop conditions and recording.
pub fn run_sessions<S: Session + 'static>(
    spec: &LoadSpec,
    class_names: &[&str],
    sessions: Vec<S>,
    progress: &Progress,
) -> anyhow::Result<LoadOutcome> {
    crate::limits::ensure_open_files(sessions.len() as u64)?;
    crate::sessions::run(spec, class_names, sessions, progress)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Acceptance pass D, 4: an open loop's achieved rate was N over the time to its last
    /// reply, (N-1)/R plus a latency: `--rate 5` for 2 s (10 requests, last reply at
    /// 1.8 s) read 5.56/s. Its schedule's span is the least it measured; a closed loop
    /// stopped by a count or a test stopped early keep the time to the last reply, and a
    /// timed closed loop measures its duration.
    #[test]
    fn an_open_loop_measures_its_schedule_at_least() {
        let open = LoadSpec {
            shape: LoadShape::Constant { rate: 5.0 },
            stop: StopAfter::Duration(Duration::from_secs(2)),
            ..LoadSpec::default()
        };
        assert_eq!(open.measured_s(1_800_000_000, false), 2.0);
        assert_eq!(10.0 / open.measured_s(1_800_000_000, false), 5.0);
        // Behind its schedule, its replies go on past it: to the last one.
        assert_eq!(open.measured_s(2_500_000_000, false), 2.5);
        assert_eq!(open.measured_s(1_800_000_000, true), 1.8);
        let closed = LoadSpec {
            stop: StopAfter::Duration(Duration::from_secs(2)),
            ..LoadSpec::default()
        };
        assert!(closed.timed_closed_loop());
        assert_eq!(closed.measured_s(1_800_000_000, false), 2.0);
        assert_eq!(closed.measured_s(2_400_000_000, false), 2.0);
        assert_eq!(closed.measured_s(1_800_000_000, true), 1.8);
        let by_count = LoadSpec {
            stop: StopAfter::Requests(10),
            ..LoadSpec::default()
        };
        assert!(!by_count.timed_closed_loop());
        assert_eq!(by_count.measured_s(1_800_000_000, false), 1.8);
        // Stopped by a count (kv's --rate without --duration): N over R, 10 at 5/s.
        let counted = LoadSpec {
            shape: LoadShape::Poisson { rate: 5.0 },
            stop: StopAfter::Requests(10),
            ..LoadSpec::default()
        };
        assert_eq!(counted.measured_s(1_800_000_000, false), 2.0);
        assert_eq!(counted.measured_s(1_800_000_000, true), 1.8);
    }
}
