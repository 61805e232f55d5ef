//! The shared load loop against an in-process fake server (a line protocol: each `x\n`
//! is answered `ok\n`, optionally after a delay), and one test spread over two
//! generators in this process and put back together. Real servers are exercised by the
//! workload crates' tests; these pin the loop's own arithmetic.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use engine::host::{
    unix_s, CommandRun, CommandsFor, DriverJob, DriverReport, Host, Roles, ServiceHandle,
    TelemetryInfo, TelemetrySettings,
};
use engine::load::{
    run_sessions, run_stream, ClientIo, Executed, Latency, Outcome, Protocol, Session,
};
use engine::wire::WireOutcome;
use engine::workload::{Params, Progress};
use engine::{capacity, spread, validity, LoadShape, LoadSpec, StopAfter};
use rackbench_engine as engine;
use rand::rngs::SmallRng;

struct Line;
impl Protocol for Line {
    fn encode(&mut self, _rng: &mut SmallRng, out: &mut Vec<u8>) -> usize {
        out.extend_from_slice(b"x\n");
        0
    }
    fn parse(&mut self, buf: &[u8]) -> Result<Option<(usize, Outcome)>, String> {
        match buf.iter().position(|&b| b == b'\n') {
            Some(i) if &buf[..i] == b"ok" => Ok(Some((i + 1, Outcome::Ok))),
            Some(i) => Err(format!("bad reply {:?}", &buf[..i])),
            None => Ok(None),
        }
    }
}

struct Fake {
    addr: SocketAddr,
    served: Arc<AtomicU64>,
    accepted: Arc<AtomicU64>,
    /// The most requests any one connection carried.
    most_per_connection: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

/// A thread-per-connection fake server; `delay` per request; dies after `die_after`.
fn fake(delay: Duration, die_after: Option<u64>) -> Fake {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let served = Arc::new(AtomicU64::new(0));
    let accepted = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let most_per_connection = Arc::new(AtomicU64::new(0));
    let (s2, a2, st2, m2) = (
        served.clone(),
        accepted.clone(),
        stop.clone(),
        most_per_connection.clone(),
    );
    std::thread::spawn(move || {
        for conn in l.incoming() {
            if st2.load(Ordering::SeqCst) {
                break;
            }
            let Ok(conn) = conn else { break };
            a2.fetch_add(1, Ordering::SeqCst);
            conn.set_nodelay(true).unwrap();
            let (s3, st3, m3) = (s2.clone(), st2.clone(), m2.clone());
            std::thread::spawn(move || {
                let mut w = conn.try_clone().unwrap();
                let r = BufReader::new(conn);
                for (on_conn, line) in (1..).zip(r.lines()) {
                    if line.is_err() || st3.load(Ordering::SeqCst) {
                        return;
                    }
                    m3.fetch_max(on_conn, Ordering::SeqCst);
                    let n = s3.fetch_add(1, Ordering::SeqCst) + 1;
                    if die_after.is_some_and(|d| n > d) {
                        st3.store(true, Ordering::SeqCst);
                        return;
                    }
                    if !delay.is_zero() {
                        std::thread::sleep(delay);
                    }
                    if w.write_all(b"ok\n").is_err() {
                        return;
                    }
                }
            });
        }
    });
    Fake {
        addr,
        served,
        accepted,
        most_per_connection,
        stop,
    }
}

fn spec(stop: StopAfter) -> LoadSpec {
    LoadSpec {
        stop,
        connections: 4,
        threads: 1,
        ..LoadSpec::default()
    }
}

#[test]
fn closed_loop_issues_exactly_n_requests() {
    let f = fake(Duration::ZERO, None);
    let s = LoadSpec {
        connections: 5,
        pipeline: 3,
        threads: 2,
        ..spec(StopAfter::Requests(10_001))
    };
    let out = run_stream(&s, &[f.addr], &["x"], |_| Line, &Progress::default()).unwrap();
    assert_eq!(out.total_count(), 10_001);
    assert_eq!(out.classes[0].ok, 10_001);
    assert_eq!(out.classes[0].service.len(), 10_001);
    // The server saw exactly what we claim (its own counter).
    assert_eq!(f.served.load(Ordering::SeqCst), 10_001);
    assert!(out.duration_s > 0.0);
    assert!(
        out.connection_errors.is_empty(),
        "{:?}",
        out.connection_errors
    );
}

#[test]
fn bytes_count_from_the_end_of_warm_up_like_the_duration_they_are_divided_by() {
    // A fast server answers tens of thousands of requests in the 300 ms of warm-up; the
    // 2,000 measured ones are 2 bytes out (`x\n`) and 3 back (`ok\n`) each.
    let f = fake(Duration::ZERO, None);
    let s = LoadSpec {
        warmup: Duration::from_millis(300),
        ..spec(StopAfter::Requests(2_000))
    };
    let out = run_stream(&s, &[f.addr], &["x"], |_| Line, &Progress::default()).unwrap();
    assert_eq!(out.total_count(), 2_000);
    let warm_served = f.served.load(Ordering::SeqCst) - 2_000;
    assert!(warm_served > 2_000, "only {warm_served} in warm-up");
    // At the boundary, up to one request per connection is in flight either way.
    let slack = 2 * s.connections as u64;
    assert!(
        out.bytes_tx.abs_diff(2 * 2_000) <= 2 * slack,
        "{} bytes sent for 2,000 requests",
        out.bytes_tx
    );
    assert!(
        out.bytes_rx.abs_diff(3 * 2_000) <= 3 * slack,
        "{} bytes received for 2,000 replies",
        out.bytes_rx
    );
}

#[test]
fn closed_loop_mean_latency_obeys_littles_law() {
    // 4 connections, 2 ms service each: throughput ~ 4 / 2 ms; mean latency ~ conns / tput.
    let f = fake(Duration::from_millis(2), None);
    let s = spec(StopAfter::Duration(Duration::from_millis(600)));
    let out = run_stream(&s, &[f.addr], &["x"], |_| Line, &Progress::default()).unwrap();
    let tput = out.throughput();
    let mean_s = out.classes[0].service.mean() / 1e9;
    let little = 4.0 / tput;
    assert!(
        (mean_s - little).abs() / little < 0.15,
        "mean {mean_s} vs Little {little}"
    );
}

#[test]
fn open_loop_never_runs_ahead_of_its_schedule() {
    // 1000 requests offered at 2000/s cannot finish before ~0.5 s, however fast the
    // server is: the schedule, not the replies, sets the pace. (A lower bound only: an
    // upper bound would be a timing assertion on a shared 2-core machine.)
    let f = fake(Duration::ZERO, None);
    let s = LoadSpec {
        shape: LoadShape::Constant { rate: 2000.0 },
        ..spec(StopAfter::Requests(1000))
    };
    let out = run_stream(&s, &[f.addr], &["x"], |_| Line, &Progress::default()).unwrap();
    assert_eq!(out.total_count(), 1000);
    assert!(out.duration_s >= 0.49, "finished in {} s", out.duration_s);
    assert!(out.classes[0].corrected.is_some());
    assert_eq!(out.offered_rate, Some(2000.0));
}

#[test]
fn open_loop_sleeping_on_its_timer_keeps_the_schedule() {
    // The same with the generator sleeping between sends (a timerfd in its poll set):
    // every request is sent and answered, none ahead of schedule, and the CPU the loop
    // used is well under the wall time it ran (a spinning loop uses all of it). The CPU
    // bound is loose on purpose: 300 sends/s cost a few ms of CPU per second.
    let f = fake(Duration::ZERO, None);
    let s = LoadSpec {
        shape: LoadShape::Constant { rate: 300.0 },
        sleep_when_idle: true,
        ..spec(StopAfter::Requests(240))
    };
    let out = run_stream(&s, &[f.addr], &["x"], |_| Line, &Progress::default()).unwrap();
    assert_eq!(out.total_count(), 240);
    assert!(out.connection_errors.is_empty());
    assert!(out.duration_s >= 0.79, "finished in {} s", out.duration_s);
    let cpu = out.loadgen_cpu_user_s + out.loadgen_cpu_sys_s;
    assert!(
        cpu < 0.6 * out.duration_s,
        "{cpu} s of CPU in {} s: the loop did not sleep",
        out.duration_s
    );
}

#[test]
fn a_spinning_open_loop_sends_on_time_at_a_low_rate() {
    // 200/s: 5 ms between sends, long enough that the loop sleeps in epoll_wait before
    // spinning. epoll rounds its timeout up to a whole millisecond: sleeping the whole
    // wait sent each request up to 1 ms late (never counted late, under the 1 ms grace),
    // and the latency from the intended time read about 0.5 ms over the service time.
    let f = fake(Duration::ZERO, None);
    let s = LoadSpec {
        shape: LoadShape::Constant { rate: 200.0 },
        connections: 1,
        sleep_when_idle: false,
        ..spec(StopAfter::Requests(200))
    };
    let out = run_stream(&s, &[f.addr], &["x"], |_| Line, &Progress::default()).unwrap();
    assert_eq!(out.total_count(), 200);
    let c = &out.classes[0];
    let corrected_p50 = c.corrected.as_ref().unwrap().value_at_quantile(0.5);
    let service_p50 = c.service.value_at_quantile(0.5);
    assert!(
        corrected_p50 < service_p50 + 300_000,
        "latency from the intended time {corrected_p50} ns, from the send {service_p50} ns: \
         the sends left late"
    );
}

#[test]
fn open_loop_latency_counts_queueing_behind_a_slow_server() {
    // 1 connection, 5 ms service, offered 400/s (capacity ~200/s): latency from the
    // intended send time grows with the backlog while the service time stays ~5 ms.
    // Coordinated omission would hide exactly this.
    let f = fake(Duration::from_millis(5), None);
    let s = LoadSpec {
        shape: LoadShape::Constant { rate: 400.0 },
        connections: 1,
        ..spec(StopAfter::Duration(Duration::from_millis(500)))
    };
    let out = run_stream(&s, &[f.addr], &["x"], |_| Line, &Progress::default()).unwrap();
    let c = &out.classes[0];
    let corrected_p50 = c.corrected.as_ref().unwrap().value_at_quantile(0.5);
    let service_p50 = c.service.value_at_quantile(0.5);
    assert!(service_p50 >= 5_000_000, "service p50 {service_p50}");
    assert!(
        corrected_p50 > 3 * service_p50,
        "corrected p50 {corrected_p50} should dwarf service p50 {service_p50}"
    );
    assert!(out.late_sends > 0);
    // Late waiting on the one connection the server held: not the generator's lateness
    // (a capacity search would take that for the client's limit).
    assert!(
        out.generator_late_sends * 10 < out.late_sends,
        "{} of {} late sends the generator's",
        out.generator_late_sends,
        out.late_sends
    );
    // 200 requests fell due in the 0.5 s (one every 2.5 ms): each was either sent, or,
    // still waiting for the one connection when sending stopped, counted as unsent.
    assert!(out.unsent_requests > 50, "{} unsent", out.unsent_requests);
    assert_eq!(out.total_count() + out.unsent_requests, 200);
}

/// Workers holding unequal numbers of connections offer the rate in proportion to them:
/// `-c 3 --threads 2` at 600/s, one worker with two connections and one with one. Offered
/// half each, the one connection carried 300/s, and against a server of 2 ms a request
/// (about 450/s a connection) queued while the other two sat at a third of theirs; a
/// third each is 200/s on every connection. Counted by the server, whatever the timing.
#[test]
fn workers_offer_the_rate_in_proportion_to_their_connections() {
    let f = fake(Duration::ZERO, None);
    let s = LoadSpec {
        shape: LoadShape::Constant { rate: 600.0 },
        connections: 3,
        threads: 2,
        ..spec(StopAfter::Duration(Duration::from_secs(1)))
    };
    let out = run_stream(&s, &[f.addr], &["x"], |_| Line, &Progress::default()).unwrap();
    let due = out.total_count() + out.unsent_requests;
    assert!((580..=620).contains(&due), "{due} due");
    let most = f.most_per_connection.load(Ordering::SeqCst);
    assert!(
        (190..=220).contains(&most),
        "{most} requests on one connection"
    );
}

/// Past what the server can do, with a warm-up: the window counts what the server
/// answered in it. 1 connection, 5 ms a request (about 200/s), offered 2,000/s: by the
/// warm-up's end 900 requests were behind; sent first, all the window's replies were
/// warm-up requests' and the test read 0 req/s (acceptance pass, s27: http at 200,000/s
/// "0 req/s" while nginx counted 128,728). The backlog is dropped at the warm-up's end.
#[test]
fn an_open_loop_past_saturation_counts_its_window_not_the_warm_ups_backlog() {
    let f = fake(Duration::from_millis(5), None);
    let s = LoadSpec {
        shape: LoadShape::Constant { rate: 2000.0 },
        connections: 1,
        warmup: Duration::from_millis(500),
        ..spec(StopAfter::Duration(Duration::from_millis(500)))
    };
    let before = f.served.load(Ordering::SeqCst);
    let out = run_stream(&s, &[f.addr], &["x"], |_| Line, &Progress::default()).unwrap();
    // About 100 in the window (a sleep of 5 ms takes a little longer).
    let n = out.total_count();
    assert!((60..=101).contains(&n), "{n} replies measured in 0.5 s");
    // The server answered what it was sent: the warm-up's and the window's, no backlog.
    let served = f.served.load(Ordering::SeqCst) - before;
    assert!(served <= 2 * 101 + 2, "{served} served");
    // The window's own requests that fell due and never left are unsent: 1,000 due.
    assert!(
        (850..=1000).contains(&(n + out.unsent_requests)),
        "{n} + {} unsent",
        out.unsent_requests
    );
}

#[test]
fn reconnect_per_request_opens_a_connection_each_time() {
    let f = fake(Duration::ZERO, None);
    let s = LoadSpec {
        requests_per_connection: Some(1),
        connections: 2,
        ..spec(StopAfter::Requests(50))
    };
    let out = run_stream(&s, &[f.addr], &["x"], |_| Line, &Progress::default()).unwrap();
    assert_eq!(out.total_count(), 50, "{:?}", out.connection_errors);
    // The check that the server answers, 2 initial and one per request after them, and
    // at most one more: a reconnect started while the last request was still to be sent,
    // which the other connection sent first (redis-benchmark -k 0 makes these too). It
    // is closed unused, and neither counted nor timed.
    let accepted = f.accepted.load(Ordering::SeqCst);
    assert!((1 + 50..=1 + 51).contains(&accepted), "{accepted}");
    assert_eq!(out.reconnects, 48);
    // Each of them timed, from the connect call to established (httperf's connection
    // time): one sample per connect, none for the two opened before the test.
    let timed = |out: &engine::load::LoadOutcome| out.connect.as_ref().map_or(0, |h| h.len());
    assert_eq!(timed(&out), out.reconnects);
    let h = out.connect.as_ref().unwrap();
    assert!(
        h.min() > 0 && h.max() < 5_000_000_000,
        "{} .. {} ns",
        h.min(),
        h.max()
    );
    // After a warm-up, reconnects count from its end, as the requests do: one per
    // measured request (but those on a connection the warm-up opened and left unused),
    // not the warm-up's hundreds too.
    let s = LoadSpec {
        warmup: Duration::from_millis(300),
        ..s
    };
    let out = run_stream(&s, &[f.addr], &["x"], |_| Line, &Progress::default()).unwrap();
    assert_eq!(out.total_count(), 50);
    assert!(
        (48..=50).contains(&out.reconnects),
        "{} reconnects for 50 measured requests",
        out.reconnects
    );
    assert_eq!(
        timed(&out),
        out.reconnects,
        "the warm-up's connects are not timed"
    );
    // Kept alive: the connects before the test are not a distribution, and none is timed.
    let kept = LoadSpec {
        requests_per_connection: None,
        ..s
    };
    let out = run_stream(&kept, &[f.addr], &["x"], |_| Line, &Progress::default()).unwrap();
    assert_eq!((out.reconnects, timed(&out)), (0, 0));
    assert!(out.connect.is_none());
}

/// redis-benchmark -k 0 -P 4: a connection carries 4 pipelined requests, then is
/// reopened once their replies are in; in open loop too, where a connection with room in
/// its pipeline took more than its 4 while the first ones' replies were still coming.
#[test]
fn pipelined_requests_per_connection_are_kept_in_closed_and_open_loop() {
    for shape in [LoadShape::Closed, LoadShape::Constant { rate: 4000.0 }] {
        let f = fake(Duration::from_millis(1), None);
        let s = LoadSpec {
            shape,
            requests_per_connection: Some(4),
            pipeline: 4,
            connections: 2,
            ..spec(StopAfter::Requests(200))
        };
        let out = run_stream(&s, &[f.addr], &["x"], |_| Line, &Progress::default()).unwrap();
        assert_eq!(out.total_count(), 200, "{shape:?}");
        assert_eq!(
            f.most_per_connection.load(Ordering::SeqCst),
            4,
            "{shape:?}: at most (and, pipelined, exactly) 4 requests on a connection"
        );
        // 200 requests, 4 a connection: 50 connections (and a few opened at the end,
        // when every request was made).
        let accepted = f.accepted.load(Ordering::SeqCst);
        assert!((50..=56).contains(&accepted), "{shape:?}: {accepted}");
    }
}

#[test]
fn unreachable_endpoint_is_a_clear_error() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    let e = run_stream(
        &spec(StopAfter::Requests(10)),
        &[addr],
        &["x"],
        |_| Line,
        &Progress::default(),
    )
    .unwrap_err();
    assert!(format!("{e:#}").contains("cannot connect"), "{e:#}");
}

#[test]
fn server_dying_mid_run_keeps_what_was_measured() {
    let f = fake(Duration::ZERO, Some(2000));
    let s = spec(StopAfter::Requests(1_000_000));
    let out = run_stream(&s, &[f.addr], &["x"], |_| Line, &Progress::default()).unwrap();
    assert!(
        out.total_count() > 1000 && out.total_count() <= 2000,
        "{}",
        out.total_count()
    );
    assert!(out.stopped_early.is_some());
    assert!(!out.connection_errors.is_empty());
    drop(f.stop);
}

/// A thread-per-connection server of the line protocol: before each reply it calls
/// `reply` with the time since it started, which may sleep, and answers when it says so
/// (the connection is closed when it does not).
fn scripted(reply: impl Fn(Duration) -> bool + Send + Sync + 'static) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let start = std::time::Instant::now();
    let reply = Arc::new(reply);
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(conn) = conn else { return };
            let reply = reply.clone();
            std::thread::spawn(move || {
                let mut w = conn.try_clone().unwrap();
                for line in BufReader::new(conn).lines() {
                    if line.is_err() || !reply(start.elapsed()) {
                        return;
                    }
                    if w.write_all(b"ok\n").is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// A server that stalls for the rest of a timed test, then drops its connection: the
/// test is measured over its duration, and the intervals it answered nothing in count as
/// 0. Measured to the last reply before the stall instead, 0.3 s of replies were divided
/// by 0.3 s, not by the 1 s the test ran, and the per-interval rates held only those.
#[test]
fn a_stall_at_the_end_is_measured_and_its_intervals_count_as_none() {
    // Answers for its first 0.3 s, then never: it closes the connection once the test
    // is over.
    let addr = scripted(|t| {
        let (quiet, stall_until) = (Duration::from_millis(300), Duration::from_millis(1100));
        if t > quiet {
            std::thread::sleep(stall_until.saturating_sub(t));
        }
        t <= quiet
    });
    let s = LoadSpec {
        connections: 1,
        interval: Duration::from_millis(100),
        ..spec(StopAfter::Duration(Duration::from_secs(1)))
    };
    let out = run_stream(&s, &[addr], &["x"], |_| Line, &Progress::default()).unwrap();
    assert_eq!(out.duration_s, 1.0);
    let r = &out.interval_rates;
    assert!(r.len() >= 10, "{r:?}");
    assert!(r[0] > 0.0 && r[4..10].iter().all(|x| *x == 0.0), "{r:?}");
}

/// One reply that straggles past the end of a timed closed loop: the test counts the
/// replies done by its end over its duration (wrk's count), and does not wait for it.
/// Measured to the last reply, a reply 1.5 s late read a 1 s test as 2.4 s long, its
/// rate 58% low.
#[test]
fn a_reply_straggling_past_a_timed_closed_loops_end_is_not_waited_for() {
    for io in [ClientIo::Epoll, ClientIo::Auto] {
        straggle(io);
    }
}

fn straggle(io: ClientIo) {
    let straggled = Arc::new(AtomicBool::new(false));
    let served = Arc::new(AtomicU64::new(0));
    let (st, sv) = (straggled.clone(), served.clone());
    // The first request after 0.9 s is answered 1.5 s late.
    let addr = scripted(move |t| {
        if t > Duration::from_millis(900) && !st.swap(true, Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(1500));
        }
        sv.fetch_add(1, Ordering::SeqCst);
        true
    });
    let s = LoadSpec {
        connections: 2,
        client_io: io,
        ..spec(StopAfter::Duration(Duration::from_secs(1)))
    };
    assert!(s.timed_closed_loop());
    let began = std::time::Instant::now();
    let out = run_stream(&s, &[addr], &["x"], |_| Line, &Progress::default()).unwrap();
    let took = began.elapsed();
    assert!(straggled.load(Ordering::SeqCst), "no request straggled");
    assert_eq!(out.duration_s, 1.0, "{io:?}");
    // The late reply comes 2.4 s after the server started: not waited for.
    assert!(took < Duration::from_secs(2), "{io:?}: waited {took:?}");
    // Not lost: a request in flight at the end is outside the count, as in wrk.
    assert_eq!(out.lost_count(), 0, "{:?}", out.lost_requests);
    assert!(
        out.connection_errors.is_empty(),
        "{:?}",
        out.connection_errors
    );
    // Every reply counted was written by the server before the end.
    let n = out.total_count();
    assert!(n > 100 && n <= served.load(Ordering::SeqCst), "{n} counted");
}

/// A server that stops answering 0.4 s into a 2 s timed closed loop: the requests still
/// waiting at the end, for 1.6 s, far beyond what its replies took, are a stall and are
/// lost with why, as wrk counts a timeout (not left out like a reply on its way).
#[test]
fn requests_stalled_at_a_timed_closed_loops_end_are_lost() {
    let addr = scripted(|t| {
        if t > Duration::from_millis(400) {
            std::thread::sleep(Duration::from_secs(3));
        }
        t <= Duration::from_millis(400)
    });
    let s = LoadSpec {
        connections: 2,
        ..spec(StopAfter::Duration(Duration::from_secs(2)))
    };
    let out = run_stream(&s, &[addr], &["x"], |_| Line, &Progress::default()).unwrap();
    assert_eq!(out.duration_s, 2.0);
    assert!(out.total_count() > 100, "{} counted", out.total_count());
    let lost: Vec<_> = out.lost_requests.iter().collect();
    assert_eq!(lost.len(), 1, "{lost:?}");
    assert_eq!(*lost[0].1, 2, "{lost:?}");
    assert!(lost[0].0.contains("a stall"), "{lost:?}");
}

/// The same for sessions: the test is 1 s long, however long the session took to come
/// back from an operation it started 0.9 s in (1.5 s). A blocking call cannot be left, so
/// a session counts the operations it started in the window, that one with its latency.
#[test]
fn a_sessions_operation_straggling_past_the_end_does_not_stretch_the_test() {
    struct Straggler {
        start: std::time::Instant,
        straggled: bool,
    }
    impl Session for Straggler {
        fn execute(&mut self, _rng: &mut SmallRng) -> Result<Executed, String> {
            if !self.straggled && self.start.elapsed() > Duration::from_millis(900) {
                self.straggled = true;
                std::thread::sleep(Duration::from_millis(1500));
            } else {
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(Executed::call(0, Outcome::Ok))
        }
    }
    let s = LoadSpec {
        connections: 1,
        threads: 1,
        ..spec(StopAfter::Duration(Duration::from_secs(1)))
    };
    let sessions = vec![Straggler {
        start: std::time::Instant::now(),
        straggled: false,
    }];
    let out = run_sessions(&s, &["a"], sessions, &Progress::default()).unwrap();
    assert_eq!(out.duration_s, 1.0);
    // About 90 operations of 10 ms before the straggler, and it.
    let n = out.total_count();
    assert!((40..=100).contains(&n), "{n} counted");
    let slowest = out.classes[0].service.max();
    assert!(
        slowest >= 1_400_000_000,
        "the straggler not recorded: {slowest} ns"
    );
}

struct Counter {
    fail_after: Option<u32>,
    n: u32,
}
impl Session for Counter {
    fn execute(&mut self, _rng: &mut SmallRng) -> Result<Executed, String> {
        self.n += 1;
        if self.fail_after.is_some_and(|f| self.n > f) {
            return Err("session broke".into());
        }
        std::thread::sleep(Duration::from_micros(200));
        Ok(Executed::call((self.n % 2) as usize, Outcome::Ok))
    }
}

#[test]
fn sessions_run_exact_counts_and_open_loop() {
    let sessions = (0..3)
        .map(|_| Counter {
            fail_after: None,
            n: 0,
        })
        .collect();
    let out = run_sessions(
        &spec(StopAfter::Requests(301)),
        &["a", "b"],
        sessions,
        &Progress::default(),
    )
    .unwrap();
    assert_eq!(out.total_count(), 301);

    let s = LoadSpec {
        shape: LoadShape::Poisson { rate: 500.0 },
        ..spec(StopAfter::Duration(Duration::from_millis(800)))
    };
    let sessions = (0..2)
        .map(|_| Counter {
            fail_after: None,
            n: 0,
        })
        .collect();
    let out = run_sessions(&s, &["a", "b"], sessions, &Progress::default()).unwrap();
    let r = out.throughput();
    assert!((r - 500.0).abs() / 500.0 < 0.2, "poisson achieved {r}");
}

#[test]
fn sessions_that_all_break_stop_early_with_measurements_kept() {
    let sessions = (0..2)
        .map(|_| Counter {
            fail_after: Some(10),
            n: 0,
        })
        .collect();
    let out = run_sessions(
        &spec(StopAfter::Requests(1000)),
        &["a", "b"],
        sessions,
        &Progress::default(),
    )
    .unwrap();
    assert_eq!(out.total_count(), 20);
    assert_eq!(out.stopped_early.as_deref(), Some("session broke"));
    // Each session's failure once, and the call it was making lost once.
    assert_eq!(out.connection_error_count(), 2);
    assert_eq!(out.lost_count(), 2);
}

/// A session the kernel would not pin where asked ends at the start, saying why, and the
/// others run; every session unpinned stops the test early. (The pin's failure used to
/// be ignored: the sessions ran wherever the scheduler put them.)
#[test]
fn sessions_that_cannot_be_pinned_say_so() {
    let here = engine::launch::allowed_cpus()[0];
    let counters = || {
        (0..2)
            .map(|_| Counter {
                fail_after: None,
                n: 0,
            })
            .collect::<Vec<_>>()
    };
    let s = LoadSpec {
        client_cpus: vec![here, 4095],
        ..spec(StopAfter::Requests(100))
    };
    let out = run_sessions(&s, &["a", "b"], counters(), &Progress::default()).unwrap();
    assert!(out.stopped_early.is_none(), "{:?}", out.stopped_early);
    assert_eq!(out.connection_error_count(), 1);
    assert!(out.total_count() > 0);
    let s = LoadSpec {
        client_cpus: vec![4095],
        ..spec(StopAfter::Requests(100))
    };
    let out = run_sessions(&s, &["a", "b"], counters(), &Progress::default()).unwrap();
    let why = out.stopped_early.clone().unwrap();
    assert!(
        why.contains("could not pin session") && why.contains("client CPU 4095"),
        "{why}"
    );
    assert_eq!(out.total_count(), 0);
}

/// A session that waits `wait` around each operation (a TPC-C terminal's keying and
/// think times) and reports the operation's own 300 us; every 3rd call nothing is sent.
struct Waiter {
    wait: Duration,
    calls: Arc<AtomicU64>,
}
const OWN: Duration = Duration::from_micros(300);
impl Session for Waiter {
    fn execute(&mut self, _rng: &mut SmallRng) -> Result<Executed, String> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        std::thread::sleep(self.wait);
        let (outcome, latency) = if n.is_multiple_of(3) {
            (Outcome::Miss, Latency::NotSent)
        } else {
            (
                Outcome::Ok,
                Latency::Own {
                    took: OWN,
                    sent_after: self.wait,
                },
            )
        };
        Ok(Executed {
            class: (n % 2) as usize,
            outcome,
            latency,
        })
    }
}

/// A terminal that keys for `keying` before each instant operation, and stops keying
/// when the run ends (a keying cut short sends nothing).
struct Keyer {
    keying: Duration,
    end: Option<std::time::Instant>,
}
impl Session for Keyer {
    fn run_ends_at(&mut self, end: std::time::Instant) {
        self.end = Some(end);
    }
    fn execute(&mut self, _rng: &mut SmallRng) -> Result<Executed, String> {
        let send = std::time::Instant::now() + self.keying;
        if let Some(end) = self.end.filter(|&e| e < send) {
            std::thread::sleep(end.saturating_duration_since(std::time::Instant::now()));
            return Ok(Executed {
                class: 0,
                outcome: Outcome::Miss,
                latency: Latency::NotSent,
            });
        }
        std::thread::sleep(self.keying);
        Ok(Executed {
            class: 0,
            outcome: Outcome::Ok,
            latency: Latency::Own {
                took: OWN,
                sent_after: self.keying,
            },
        })
    }
}

/// An operation a session sends after a wait (a terminal's keying) counts by its send:
/// keyed 0.4 s at a time through a 0.5 s ramp-up and a 2 s run, the operations sent in
/// the run are those of 0.8, 1.2, 1.6, 2.0 and 2.4 s: five. By the call's start, the one
/// keyed across the ramp-up's end was left out (four, a rate 20% low), and the session
/// learns when the run ends (its last keying is cut there, nothing sent).
#[test]
fn an_operation_sent_after_a_wait_counts_by_its_send() {
    let s = LoadSpec {
        warmup: Duration::from_millis(500),
        connections: 1,
        threads: 1,
        ..spec(StopAfter::Duration(Duration::from_secs(2)))
    };
    let sessions = vec![Keyer {
        keying: Duration::from_millis(400),
        end: None,
    }];
    let out = run_sessions(&s, &["a"], sessions, &Progress::default()).unwrap();
    let c = &out.classes[0];
    assert_eq!(
        c.service.len(),
        5,
        "{} sent in the run, {} misses",
        c.service.len(),
        c.misses
    );
    assert_eq!(c.ok - c.misses, 5);
    assert!(
        out.duration_s < 2.2,
        "the last keying held the run open: {} s",
        out.duration_s
    );
}

/// An open loop of sessions slower than its schedule: what fell due and was never
/// started before the end is counted as unsent, every due call once.
#[test]
fn sessions_behind_their_schedule_count_what_they_never_sent() {
    let calls = Arc::new(AtomicU64::new(0));
    let s = LoadSpec {
        shape: LoadShape::Constant { rate: 400.0 },
        ..spec(StopAfter::Duration(Duration::from_millis(500)))
    };
    let sessions = vec![Waiter {
        wait: Duration::from_millis(5),
        calls: calls.clone(),
    }];
    let out = run_sessions(&s, &["a", "b"], sessions, &Progress::default()).unwrap();
    let made = calls.load(Ordering::SeqCst);
    assert!(out.unsent_requests > 50, "{} unsent", out.unsent_requests);
    assert_eq!(made + out.unsent_requests, 200, "{made} made");
    assert!(out.late_sends > 0);
    // Each late call fell due while the session waited on the last: the server's.
    assert!(
        out.generator_late_sends * 10 < out.late_sends,
        "{} of {} late sends the generator's",
        out.generator_late_sends,
        out.late_sends
    );
}

/// As [`an_open_loop_past_saturation_counts_its_window_not_the_warm_ups_backlog`], for
/// sessions: 5 ms a call, 2,000/s offered, 0.5 s of warm-up, 0.5 s measured.
#[test]
fn sessions_past_saturation_count_their_window_not_the_warm_ups_backlog() {
    let calls = Arc::new(AtomicU64::new(0));
    let s = LoadSpec {
        shape: LoadShape::Constant { rate: 2000.0 },
        warmup: Duration::from_millis(500),
        ..spec(StopAfter::Duration(Duration::from_millis(500)))
    };
    let sessions = vec![Waiter {
        wait: Duration::from_millis(5),
        calls: calls.clone(),
    }];
    let out = run_sessions(&s, &["a", "b"], sessions, &Progress::default()).unwrap();
    let n = out.total_count();
    assert!((60..=101).contains(&n), "{n} calls measured in 0.5 s");
    assert!(calls.load(Ordering::SeqCst) <= 2 * 101 + 2);
}

/// A session's own time is what the loop records, counted as every call is (warm-up
/// left out); a call that sent nothing is counted, not timed; in open loop the
/// corrected latency is the own time plus how late the call started, not the waits.
#[test]
fn a_sessions_own_time_is_recorded_in_the_loops_window() {
    let calls = Arc::new(AtomicU64::new(0));
    let sessions = (0..2)
        .map(|_| Waiter {
            wait: Duration::from_millis(5),
            calls: calls.clone(),
        })
        .collect();
    let s = LoadSpec {
        warmup: Duration::from_millis(300),
        ..spec(StopAfter::Duration(Duration::from_millis(300)))
    };
    let out = run_sessions(&s, &["a", "b"], sessions, &Progress::default()).unwrap();
    let calls = calls.load(Ordering::SeqCst);
    // As many calls in the warm-up as measured (120 each on an idle machine).
    let measured = out.total_count();
    assert!(
        measured > 10 && calls - measured >= measured / 2,
        "{measured} measured of {calls}"
    );
    for c in &out.classes {
        assert!(c.misses > 0, "{}", c.name);
        assert_eq!(c.service.len(), c.count - c.misses, "{}", c.name);
        assert!(c.service.equivalent(c.service.min(), OWN.as_nanos() as u64));
        assert!(c.service.equivalent(c.service.max(), OWN.as_nanos() as u64));
    }

    let calls = Arc::new(AtomicU64::new(0));
    let sessions = (0..2)
        .map(|_| Waiter {
            wait: Duration::from_millis(30),
            calls: calls.clone(),
        })
        .collect();
    // 60 ms between each session's intended starts: each keeps up.
    let s = LoadSpec {
        shape: LoadShape::Constant { rate: 2.0 / 0.06 },
        ..spec(StopAfter::Duration(Duration::from_millis(600)))
    };
    let out = run_sessions(&s, &["a", "b"], sessions, &Progress::default()).unwrap();
    for c in &out.classes {
        let corrected = c.corrected.as_ref().unwrap();
        assert_eq!(corrected.len(), c.service.len(), "{}", c.name);
        assert!(corrected.min() >= c.service.min(), "{}", c.name);
        assert!(
            corrected.mean() < 10e6,
            "{}: {} ns, the waits are in it",
            c.name,
            corrected.mean()
        );
    }
}

/// A line protocol whose server may announce `bye` (HTTP's `Connection: close`).
struct LineClose {
    closing: bool,
}
impl Protocol for LineClose {
    fn encode(&mut self, _rng: &mut SmallRng, out: &mut Vec<u8>) -> usize {
        out.extend_from_slice(b"x\n");
        0
    }
    fn parse(&mut self, buf: &[u8]) -> Result<Option<(usize, Outcome)>, String> {
        match buf.iter().position(|&b| b == b'\n') {
            Some(i) => {
                self.closing |= &buf[..i] == b"ok bye";
                Ok(Some((i + 1, Outcome::Ok)))
            }
            None => Ok(None),
        }
    }
    fn reset(&mut self) {
        self.closing = false;
    }
    fn closing(&self) -> bool {
        self.closing
    }
}

/// A server that reads `per_conn` requests on each connection, answers each `ok` but the
/// last, which it answers `last` (or, with None, leaves unanswered), then closes it.
fn closing_server(per_conn: usize, last: Option<&'static [u8]>) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(conn) = conn else { break };
            std::thread::spawn(move || {
                let mut w = conn.try_clone().unwrap();
                let mut r = BufReader::new(conn);
                for i in 0..per_conn {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let reply = if i + 1 < per_conn {
                        Some(&b"ok\n"[..])
                    } else {
                        last
                    };
                    if reply.is_some_and(|x| w.write_all(x).is_err()) {
                        return;
                    }
                }
            });
        }
    });
    addr
}

#[test]
fn a_request_lost_with_its_connection_is_one_error() {
    // A server that answers 9 requests of each connection and closes it on the 10th
    // without an answer: 200 requests on one connection are 20 connections, 180 replies
    // and 20 requests lost, each with its connection. httperf counts 20 errors in 200
    // attempts, 10%; counting each failure as an error besides its lost request said
    // 40 errors, 40 / 220 = 18.2%.
    let addr = closing_server(10, None);
    let s = LoadSpec {
        connections: 1,
        ..spec(StopAfter::Requests(200))
    };
    let out = run_stream(&s, &[addr], &["x"], |_| Line, &Progress::default()).unwrap();
    assert_eq!(out.total_count(), 180);
    let step = validity::step_output(&s, &out, "ops_per_s", "ops/s");
    let sum = |name: &str| -> f64 {
        step.metrics
            .iter()
            .filter(|m| m.name == name)
            .map(|m| m.value)
            .sum()
    };
    assert_eq!(sum("errors_total"), 20.0);
    assert_eq!(sum("lost_requests"), 20.0);
    // The failures stay a metric of their own, one each.
    assert_eq!(sum("connection_errors"), 20.0);
    let flag = step.flags.iter().find(|f| f.code == "errors").unwrap();
    assert!(
        flag.message
            .contains("20 errors (10.000% of requests; by kind: no reply ("),
        "{}",
        flag.message
    );
    // autobench's errors column for a capacity step: the same 10%.
    let rs = capacity::RateStep::from_outcome(0.0, &out);
    assert!((rs.errors_pct() - 10.0).abs() < 1e-9, "{}", rs.errors_pct());
}

#[test]
fn a_server_that_announces_close_loses_no_request() {
    // Answers three requests per connection, the third with `ok bye`, then closes.
    let addr = closing_server(3, Some(b"ok bye\n"));
    let s = LoadSpec {
        connections: 2,
        ..spec(StopAfter::Requests(60))
    };
    let out = run_stream(
        &s,
        &[addr],
        &["x"],
        |_| LineClose { closing: false },
        &Progress::default(),
    )
    .unwrap();
    assert_eq!(out.total_count(), 60);
    assert!(
        out.connection_errors.is_empty(),
        "{:?}",
        out.connection_errors
    );
    assert!(out.reconnects >= 18, "{}", out.reconnects);
}

/// A load generator in this process that runs a job as a host's driver does: its own
/// progress, the load loop connected first and then waiting for the common start, its
/// window on this (the controller's) clock. Jobs are `connections` and `requests` of the
/// line protocol against the job's endpoints.
struct InProcess(&'static str);

impl Host for InProcess {
    fn name(&self) -> &str {
        self.0
    }
    fn address(&self) -> String {
        "127.0.0.1".into()
    }
    fn start_lead(&self) -> Duration {
        Duration::from_millis(50)
    }
    fn disclosure(&self, _role: &str) -> anyhow::Result<model::HostDisclosure> {
        anyhow::bail!("a test host discloses nothing")
    }
    fn start_service(&self, _workload: &str, _params: &Params) -> anyhow::Result<ServiceHandle> {
        anyhow::bail!("a test host runs no service")
    }
    fn service_query(&self, _id: u64, _what: &str) -> anyhow::Result<serde_json::Value> {
        anyhow::bail!("a test host runs no service")
    }
    fn service_exited(&self, _id: u64) -> anyhow::Result<Option<String>> {
        Ok(None)
    }
    fn stop_service(&self, _id: u64) {}
    fn drive(
        &self,
        job: &DriverJob,
        start_at: SystemTime,
        shared: &Progress,
    ) -> anyhow::Result<DriverReport> {
        let n = |k: &str| job.params.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
        let s = LoadSpec {
            connections: n("connections") as usize,
            stop: StopAfter::Requests(n("requests")),
            threads: 1,
            ..LoadSpec::default()
        };
        let endpoints: Vec<SocketAddr> = job.endpoints.iter().map(|e| e.parse().unwrap()).collect();
        let own = Progress::default();
        // A timed job runs under the test's progress, which ends it early; a counted one
        // keeps its own start (two of them run at once), and hands its checkpoints,
        // if the test takes them, as its generator's.
        own.set_checkpoints(shared.checkpoint_sink());
        own.generator.store(job.index, Ordering::Relaxed);
        let (s, progress) = match job.params.get("seconds").and_then(|v| v.as_u64()) {
            Some(secs) => (
                LoadSpec {
                    stop: StopAfter::Duration(Duration::from_secs(secs)),
                    ..s
                },
                shared,
            ),
            None => (s, &own),
        };
        *progress.start_at.lock().unwrap() = Some(start_at);
        let out = run_stream(&s, &endpoints, &["x"], |_| Line, progress)?;
        let ended = SystemTime::now();
        let (started, late) = progress
            .started
            .lock()
            .unwrap()
            .expect("waited for the start");
        Ok(DriverReport {
            host: self.0.into(),
            report: serde_json::to_value(WireOutcome::from(&out))?,
            started_unix_s: unix_s(started),
            ended_unix_s: unix_s(ended),
            start_skew_s: late.as_secs_f64(),
        })
    }
    fn interrupt(&self) {}
    fn telemetry_start(&self, _settings: &TelemetrySettings) -> anyhow::Result<TelemetryInfo> {
        anyhow::bail!("a test host samples nothing")
    }
    fn telemetry_take(&self) -> anyhow::Result<Vec<model::TelemetrySample>> {
        Ok(Vec::new())
    }
    fn telemetry_mark(&self) -> Option<u64> {
        None
    }
    fn telemetry_since(&self, _mark: u64) -> Vec<model::TelemetrySample> {
        Vec::new()
    }
    fn set_warmup(&self, _on: bool) {}
    fn unwatch_servers(&self) {}
    fn measure_idle(&self, _secs: f64) -> anyhow::Result<Option<model::IdlePower>> {
        Ok(None)
    }
    fn run_commands(
        &self,
        _commands: &[String],
        _for: CommandsFor,
    ) -> anyhow::Result<Vec<CommandRun>> {
        Ok(Vec::new())
    }
    fn shutdown(&self) {}
}

/// A generator host whose link breaks a moment into the test (its agent killed): its
/// drive fails once the test is ended.
struct Lost {
    name: &'static str,
    breaks_at: std::time::Instant,
}

impl Host for Lost {
    fn name(&self) -> &str {
        self.name
    }
    fn address(&self) -> String {
        "127.0.0.1".into()
    }
    fn lost(&self) -> Option<String> {
        (std::time::Instant::now() >= self.breaks_at)
            .then(|| format!("the link to {} broke", self.name))
    }
    fn disclosure(&self, role: &str) -> anyhow::Result<model::HostDisclosure> {
        InProcess(self.name).disclosure(role)
    }
    fn start_service(&self, workload: &str, params: &Params) -> anyhow::Result<ServiceHandle> {
        InProcess(self.name).start_service(workload, params)
    }
    fn service_query(&self, id: u64, what: &str) -> anyhow::Result<serde_json::Value> {
        InProcess(self.name).service_query(id, what)
    }
    fn service_exited(&self, _id: u64) -> anyhow::Result<Option<String>> {
        match self.lost() {
            Some(why) => anyhow::bail!(why),
            None => Ok(None),
        }
    }
    fn stop_service(&self, _id: u64) {}
    fn drive(
        &self,
        _job: &DriverJob,
        _start_at: SystemTime,
        progress: &Progress,
    ) -> anyhow::Result<DriverReport> {
        let give_up = std::time::Instant::now() + Duration::from_secs(10);
        while !progress.stopping() && std::time::Instant::now() < give_up {
            std::thread::sleep(Duration::from_millis(5));
        }
        anyhow::bail!("the link to {} broke", self.name)
    }
    fn interrupt(&self) {}
    fn telemetry_start(&self, settings: &TelemetrySettings) -> anyhow::Result<TelemetryInfo> {
        InProcess(self.name).telemetry_start(settings)
    }
    fn telemetry_take(&self) -> anyhow::Result<Vec<model::TelemetrySample>> {
        Ok(Vec::new())
    }
    fn telemetry_mark(&self) -> Option<u64> {
        None
    }
    fn telemetry_since(&self, _mark: u64) -> Vec<model::TelemetrySample> {
        Vec::new()
    }
    fn set_warmup(&self, _on: bool) {}
    fn unwatch_servers(&self) {}
    fn measure_idle(&self, _secs: f64) -> anyhow::Result<Option<model::IdlePower>> {
        Ok(None)
    }
    fn run_commands(
        &self,
        _commands: &[String],
        _for: CommandsFor,
    ) -> anyhow::Result<Vec<CommandRun>> {
        Ok(Vec::new())
    }
    fn shutdown(&self) {}
}

/// A system under test whose link broke cannot say whether its servers run: that is
/// `server_unknown` (the runner names the lost host), not `server_died`, which said the
/// server died when nobody saw it die.
#[test]
fn a_server_on_a_lost_host_is_not_said_to_have_died() {
    let running = engine::host::Running {
        sut: Arc::new(Lost {
            name: "rbh1",
            breaks_at: std::time::Instant::now(),
        }),
        handle: ServiceHandle {
            id: 1,
            endpoints: Vec::new(),
            facts: Default::default(),
        },
    };
    let flag = running.exited("its servers").expect("a flag");
    assert_eq!(flag.code, "server_unknown");
    assert_eq!(
        flag.message,
        "cannot ask rbh1 about its servers (not known to have died): the link to rbh1 broke; \
         see whether the host answers (`rackbench hosts check`) and run the test again"
    );
    let alive = engine::host::Running {
        sut: Arc::new(Lost {
            name: "rbh1",
            breaks_at: std::time::Instant::now() + Duration::from_secs(600),
        }),
        handle: ServiceHandle {
            id: 1,
            endpoints: Vec::new(),
            facts: Default::default(),
        },
    };
    assert!(alive.exited("its servers").is_none());
}

/// One of two generators lost mid-test (kill -9 of its agent): the survivor, ended by
/// the controller, said "the test stopped early: interrupted" as if someone had pressed
/// Ctrl-C, and the failure read "load generator rbh2: the link to rbh2 broke failed".
#[test]
fn a_load_ended_by_a_lost_host_says_what_ended_it() {
    let f = fake(Duration::from_millis(1), None);
    let hosts: Vec<Arc<dyn Host>> = vec![
        Arc::new(Lost {
            name: "rbh2",
            breaks_at: std::time::Instant::now() + Duration::from_millis(300),
        }),
        Arc::new(InProcess("rbh3")),
    ];
    let roles = Roles {
        sut: Arc::new(InProcess("rbh1")),
        loadgens: hosts,
    };
    let progress = Arc::new(Progress::default());
    let share = |i: usize| spread::Share {
        connections: 2,
        requests: None,
        rate: None,
        seed: 1,
        first_connection: 2 * i,
    };
    let shares = [share(0), share(1)];
    let d = spread::drive(&roles, &shares, 1, &progress, &[], None, |i, _| DriverJob {
        workload: "line".into(),
        test: "x".into(),
        params: serde_json::json!({"connections": 2, "seconds": 10})
            .as_object()
            .unwrap()
            .clone(),
        endpoints: vec![f.addr.to_string()],
        index: i,
        generators: 2,
    })
    .unwrap();
    assert_eq!(
        d.merged.stopped_early.as_deref(),
        Some("ended when rbh2 was lost: the link to rbh2 broke")
    );
    assert_eq!(
        d.failure().as_deref(),
        Some("load generator rbh2: the link to rbh2 broke")
    );
    let step = validity::step_output(
        &spec(StopAfter::Requests(1)),
        &d.merged,
        "ops_per_s",
        "ops/s",
    );
    let stopped = step
        .flags
        .iter()
        .find(|f| f.code == "stopped_early")
        .unwrap();
    assert!(
        !stopped.message.contains("interrupted"),
        "{}",
        stopped.message
    );
}

/// Drive `requests` over two in-process generators behind one start barrier, generator
/// i against `endpoints[i]`, and merge.
fn drive_two(endpoints: [SocketAddr; 2], requests: u64) -> spread::Driven {
    let hosts: Vec<Arc<dyn Host>> = vec![Arc::new(InProcess("a")), Arc::new(InProcess("b"))];
    let roles = Roles {
        sut: hosts[0].clone(),
        loadgens: hosts,
    };
    let load = spread::Load {
        connections: 4,
        requests: Some(requests),
        rate: None,
        seed: 1,
        threads: 1,
        connections_flag: "-c",
        requests_flag: "-n",
    };
    let shares = spread::shares(&load, 2).unwrap();
    let progress = Arc::new(Progress::default());
    spread::drive(&roles, &shares, 1, &progress, &[], None, |i, s| DriverJob {
        workload: "line".into(),
        test: "x".into(),
        params: serde_json::json!({"connections": s.connections, "requests": s.requests})
            .as_object()
            .unwrap()
            .clone(),
        endpoints: vec![endpoints[i].to_string()],
        index: i,
        generators: 2,
    })
    .unwrap()
}

#[test]
fn a_test_stopped_by_a_count_lasts_from_the_first_start_to_the_last_end() {
    // 600 requests over two generators (-n 600 -c 4), 300 each on 2 connections, one
    // against a server answering in 1 ms (done in ~0.16 s), the other in 4 ms (~0.6 s).
    // The servers answered 600 requests in ~0.6 s: ~1,000/s, as redis-benchmark would
    // say (requests / wall time). Adding each one's rate over its own window said
    // ~2,400/s.
    let fast = fake(Duration::from_millis(1), None);
    let slow = fake(Duration::from_millis(4), None);
    let d = drive_two([fast.addr, slow.addr], 600);
    assert_eq!(d.merged.total_count(), 600);
    let (a, b) = (&d.runs[0], &d.runs[1]);
    assert!(
        b.duration_s > 2.0 * a.duration_s,
        "the slow generator took {} s, the fast {} s",
        b.duration_s,
        a.duration_s
    );
    let first_start = a.started_unix_s.min(b.started_unix_s);
    let last_end = (a.started_unix_s + a.duration_s).max(b.started_unix_s + b.duration_s);
    let wall = last_end - first_start;
    assert!(
        (d.merged.duration_s - wall).abs() < 1e-6,
        "merged duration {} s, wall time {wall} s",
        d.merged.duration_s
    );
    let sum_of_rates = a.rate + b.rate;
    assert!(
        d.merged.throughput() < 0.8 * sum_of_rates,
        "merged {}/s is the sum of the generators' rates ({sum_of_rates}/s)",
        d.merged.throughput()
    );
    // The figures that derive from the duration follow it: per-operation rate, bytes.
    let spec = LoadSpec {
        connections: d.connections(),
        threads: d.threads(),
        ..spec(StopAfter::Requests(600))
    };
    let step = validity::step_output(&spec, &d.merged, "ops_per_s", "ops/s");
    let per_op = step
        .metrics
        .iter()
        .find(|m| m.name == "ops_per_s" && m.labels.get("op").map(String::as_str) == Some("x"))
        .unwrap();
    assert!((per_op.value - 600.0 / wall).abs() < 1e-6 * per_op.value);
    assert_eq!(step.duration_s, d.merged.duration_s);
}

/// A reply of `len` bytes (`k`s and a newline) to each `x\n`.
struct Long {
    len: usize,
}
impl Protocol for Long {
    fn encode(&mut self, _rng: &mut SmallRng, out: &mut Vec<u8>) -> usize {
        out.extend_from_slice(b"x\n");
        0
    }
    fn parse(&mut self, buf: &[u8]) -> Result<Option<(usize, Outcome)>, String> {
        match buf.iter().position(|&b| b == b'\n') {
            Some(i) if i + 1 == self.len && buf[..i].iter().all(|&b| b == b'k') => {
                Ok(Some((i + 1, Outcome::Ok)))
            }
            Some(i) => Err(format!("a reply of {} bytes, not {}", i + 1, self.len)),
            None => Ok(None),
        }
    }
}

/// Answers every `x\n` with `len` bytes, written in pieces of `piece` bytes.
fn long_server(len: usize, piece: usize) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let mut reply = vec![b'k'; len];
    reply[len - 1] = b'\n';
    let reply: &'static [u8] = reply.leak();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(conn) = conn else { break };
            std::thread::spawn(move || {
                conn.set_nodelay(true).unwrap();
                let mut w = conn.try_clone().unwrap();
                let mut r = BufReader::new(conn);
                let mut line = String::new();
                while r.read_line(&mut line).unwrap_or(0) > 0 {
                    line.clear();
                    for p in reply.chunks(piece) {
                        if w.write_all(p).is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    addr
}

/// The closed loop gives the same counts on epoll and on io_uring, in every case where
/// the two differ in what they do: pipelined batches over threads, a connection per
/// request, a server that closes after announcing it, one that drops connections with a
/// request unanswered, replies longer than an io_uring buffer (16 KiB) and replies in
/// small pieces, and a server that dies.
#[test]
fn epoll_and_io_uring_count_alike() {
    for io in [ClientIo::Epoll, ClientIo::IoUring] {
        let run = |s: LoadSpec, addr: SocketAddr, long: Option<usize>| {
            let s = LoadSpec { client_io: io, ..s };
            let out = match long {
                Some(len) => {
                    run_stream(&s, &[addr], &["x"], |_| Long { len }, &Progress::default())
                }
                None => run_stream(&s, &[addr], &["x"], |_| Line, &Progress::default()),
            };
            let out = out.unwrap_or_else(|e| panic!("{io:?}: {e:#}"));
            assert!(
                out.client_io_fallback.is_none(),
                "{io:?}: {:?}",
                out.client_io_fallback
            );
            out
        };
        let f = fake(Duration::ZERO, None);
        let s = LoadSpec {
            connections: 5,
            pipeline: 3,
            threads: 2,
            ..spec(StopAfter::Requests(10_001))
        };
        let out = run(s, f.addr, None);
        assert_eq!(out.total_count(), 10_001, "{io:?}");
        assert_eq!(out.classes[0].ok, 10_001, "{io:?}");
        assert_eq!(f.served.load(Ordering::SeqCst), 10_001, "{io:?}");
        assert_eq!(out.bytes_rx, 3 * 10_001, "{io:?}");
        assert_eq!(out.bytes_tx, 2 * 10_001, "{io:?}");

        let s = LoadSpec {
            requests_per_connection: Some(1),
            connections: 2,
            ..spec(StopAfter::Requests(50))
        };
        let f = fake(Duration::ZERO, None);
        let out = run(s, f.addr, None);
        assert_eq!(out.total_count(), 50, "{io:?}");
        assert_eq!(out.reconnects, 48, "{io:?}");
        let accepted = f.accepted.load(Ordering::SeqCst);
        assert!((1 + 50..=1 + 51).contains(&accepted), "{io:?}: {accepted}");
        assert!(
            out.connection_errors.is_empty(),
            "{io:?}: {:?}",
            out.connection_errors
        );

        let s = LoadSpec {
            connections: 1,
            ..spec(StopAfter::Requests(200))
        };
        let out = run(s, closing_server(10, None), None);
        assert_eq!(out.total_count(), 180, "{io:?}");
        assert_eq!(out.lost_count(), 20, "{io:?}");
        assert_eq!(out.connection_error_count(), 20, "{io:?}");

        // 100 connections of 40,000-byte replies: more buffers at once than io_uring's
        // 256, so receives end out of buffers and are armed again.
        for (len, piece, conns) in [
            (40_000, 40_000, 3),
            (40_000, 7, 3),
            (1_000, 999, 3),
            (40_000, 40_000, 100),
        ] {
            let s = LoadSpec {
                connections: conns,
                pipeline: 2,
                ..spec(StopAfter::Requests(300))
            };
            let out = run(s, long_server(len, piece), Some(len));
            assert_eq!(out.total_count(), 300, "{io:?} {len} in {piece}");
            assert_eq!(out.classes[0].ok, 300, "{io:?} {len} in {piece}");
            assert_eq!(out.bytes_rx, 300 * len as u64, "{io:?} {len} in {piece}");
        }

        let f = fake(Duration::ZERO, Some(2000));
        let out = run(spec(StopAfter::Requests(1_000_000)), f.addr, None);
        assert!(
            out.total_count() > 1000 && out.total_count() <= 2000,
            "{io:?}: {}",
            out.total_count()
        );
        assert!(out.stopped_early.is_some(), "{io:?}");
    }
}

/// io_uring is for the closed loop: asked for with a rate, it is a clear error.
#[test]
fn io_uring_with_an_open_loop_is_a_clear_error() {
    let f = fake(Duration::ZERO, None);
    let s = LoadSpec {
        shape: LoadShape::Poisson { rate: 1000.0 },
        client_io: ClientIo::IoUring,
        ..spec(StopAfter::Requests(10))
    };
    let e = run_stream(&s, &[f.addr], &["x"], |_| Line, &Progress::default()).unwrap_err();
    assert!(format!("{e:#}").contains("closed loops only"), "{e:#}");
}

/// One CPU's idle and iowait ticks from /proc/stat.
fn idle_and_iowait(cpu: usize) -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap();
    let line = stat
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&format!("cpu{cpu}")))
        .unwrap();
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap())
        .collect();
    (v[3], v[4])
}

/// A client waiting on its ring for replies leaves its CPU idle, not "in iowait", where
/// the kernel lets the wait say so (IORING_ENTER_NO_IOWAIT, Linux 6.15): without it, the
/// idle time of a load generator's CPU reads as %iowait (80% of it in a kv test), which
/// anyone reading mpstat or the report takes for a disk.
#[test]
fn an_io_uring_client_waiting_leaves_its_cpu_idle_not_in_iowait() {
    let Ok(probe) = io_uring::IoUring::new(2) else {
        eprintln!("skipped: no io_uring here");
        return;
    };
    if !probe.params().is_feature_no_iowait() {
        eprintln!("skipped: this kernel counts every io_uring wait as iowait (before 6.15)");
        return;
    }
    let cpu = *engine::launch::allowed_cpus().last().unwrap();
    // Replies 2 ms after each request: the client waits nearly all the time.
    let f = fake(Duration::from_millis(2), None);
    let s = LoadSpec {
        client_io: ClientIo::IoUring,
        connections: 2,
        client_cpus: vec![cpu],
        ..spec(StopAfter::Duration(Duration::from_secs(1)))
    };
    // Other tests of this binary may keep the CPU busy, and another process's disk waits
    // may land on it: a run that meets either is run again, up to five. The client's own
    // waits, counted as iowait, would be nearly all of its idle time in every run.
    let mut last = String::new();
    let mut judged = 0;
    for _ in 0..5 {
        let before = idle_and_iowait(cpu);
        let out = run_stream(&s, &[f.addr], &["x"], |_| Line, &Progress::default()).unwrap();
        let after = idle_and_iowait(cpu);
        assert!(
            out.client_io_fallback.is_none(),
            "{:?}",
            out.client_io_fallback
        );
        assert!(out.total_count() > 100, "{}", out.total_count());
        let (idle, iowait) = (after.0 - before.0, after.1 - before.1);
        if idle + iowait >= 20 {
            if iowait * 3 <= idle + iowait {
                return;
            }
            judged += 1;
        }
        last = format!("{iowait} ticks of iowait against {idle} idle");
    }
    if judged == 0 {
        // Never idle long enough to tell: the machine's other work had the CPU.
        eprintln!("skipped: CPU {cpu} was kept busy by other work in each of 5 runs ({last})");
        return;
    }
    panic!("CPU {cpu}, while the client waited, in each of 5 runs; the last: {last}");
}

/// Every checkpoint a load hands to `progress`'s sink: (generator, outcome).
fn collect_checkpoints(
    progress: &Progress,
) -> Arc<std::sync::Mutex<Vec<(usize, engine::LoadOutcome)>>> {
    let got: Arc<std::sync::Mutex<Vec<(usize, engine::LoadOutcome)>>> = Arc::default();
    let sink = got.clone();
    progress.set_checkpoints(Some(engine::workload::CheckpointSink::new(move |i, o| {
        if let engine::workload::SoFar::Load(o) = o {
            sink.lock().unwrap().push((i, *o))
        }
    })));
    got
}

/// The one checkpoint `got` holds of a test of one period and a second, which ended
/// with `out`: handed by `generator`, taken where a round came after the period (a little
/// late at most), its throughput its count over its window, less than the end's.
fn the_one_checkpoint(
    got: &std::sync::Mutex<Vec<(usize, engine::LoadOutcome)>>,
    generator: usize,
    out: &engine::LoadOutcome,
) -> engine::LoadOutcome {
    let every = engine::load::CHECKPOINT_EVERY.as_secs_f64();
    let mut got = got.lock().unwrap();
    assert_eq!(
        got.len(),
        1,
        "one checkpoint in a test of one period and a second"
    );
    let (by, c) = got.remove(0);
    assert_eq!(by, generator);
    assert!(
        c.duration_s >= every && c.duration_s < every + 0.5,
        "{}",
        c.duration_s
    );
    let n = c.total_count();
    assert!(
        n > 0 && n < out.total_count(),
        "{n} of {}",
        out.total_count()
    );
    assert!((c.throughput() - n as f64 / c.duration_s).abs() < 1e-9);
    assert!(c.stopped_early.is_none());
    c
}

/// A load test's checkpoint is what it measured from the end of its warm-up to the
/// checkpoint, every worker's merged as the end merges them: its window is the
/// checkpoint's (not the planned duration), its throughput its count over that window,
/// and the final outcome holds at least as much. An open loop on two threads.
#[test]
fn a_checkpoint_is_the_load_so_far_over_its_own_window() {
    let f = fake(Duration::ZERO, None);
    let every = engine::load::CHECKPOINT_EVERY.as_secs_f64();
    let s = LoadSpec {
        shape: LoadShape::Constant { rate: 2_000.0 },
        stop: StopAfter::Duration(engine::load::CHECKPOINT_EVERY + Duration::from_secs(1)),
        warmup: Duration::from_millis(300),
        connections: 4,
        threads: 2,
        client_io: ClientIo::Epoll,
        ..LoadSpec::default()
    };
    let progress = Progress::default();
    progress.generator.store(3, Ordering::Relaxed);
    let got = collect_checkpoints(&progress);
    let out = run_stream(&s, &[f.addr], &["x"], |_| Line, &progress).unwrap();
    let c = &the_one_checkpoint(&got, 3, &out);
    let n = c.total_count();
    assert_eq!(c.offered_rate, Some(2_000.0));
    // Whole intervals of its window only.
    assert!(
        c.interval_rates.len() <= every as usize + 1,
        "{:?}",
        c.interval_rates
    );
    assert_eq!(
        c.classes[0].service.len(),
        n,
        "every reply counted has its latency"
    );
    assert!(c.classes[0].corrected.is_some());
}

/// The blocking-session executor (oltp's virtual users) takes the same checkpoints: every
/// session's recorder copied where its round reads the clock, merged off the sessions,
/// over the window from the warm-up's end to the checkpoint.
#[test]
fn sessions_take_checkpoints_over_their_own_window() {
    let s = LoadSpec {
        warmup: Duration::from_millis(300),
        ..spec(StopAfter::Duration(
            engine::load::CHECKPOINT_EVERY + Duration::from_secs(1),
        ))
    };
    let sessions = (0..3)
        .map(|_| Counter {
            fail_after: None,
            n: 0,
        })
        .collect();
    let progress = Progress::default();
    progress.generator.store(1, Ordering::Relaxed);
    let got = collect_checkpoints(&progress);
    let out = run_sessions(&s, &["a", "b"], sessions, &progress).unwrap();
    let c = the_one_checkpoint(&got, 1, &out);
    assert!(c.loadgen_cpu_user_s + c.loadgen_cpu_sys_s > 0.0);
}

/// A test driven through the hosts hands its checkpoints, merged over its generators,
/// to the workload's callback before the drive returns: marked as a checkpoint, with
/// the window it measured, and converted to figures as the final outcome is.
#[test]
fn a_driven_test_hands_its_merged_checkpoints_to_the_workload() {
    let f = fake(Duration::from_millis(1), None);
    let roles = Roles {
        sut: Arc::new(InProcess("rbh1")),
        loadgens: vec![Arc::new(InProcess("rbh2"))],
    };
    let progress = Arc::new(Progress::default());
    let shares = [spread::Share {
        connections: 2,
        requests: None,
        rate: None,
        seed: 1,
        first_connection: 0,
    }];
    let secs = engine::load::CHECKPOINT_EVERY.as_secs() + 1;
    let got: std::sync::Mutex<Vec<spread::Driven>> = Default::default();
    let save = |d: spread::Driven| got.lock().unwrap().push(d);
    let d = spread::drive(&roles, &shares, 1, &progress, &[], Some(&save), |i, _| {
        DriverJob {
            workload: "line".into(),
            test: "x".into(),
            params: serde_json::json!({"connections": 2, "seconds": secs})
                .as_object()
                .unwrap()
                .clone(),
            endpoints: vec![f.addr.to_string()],
            index: i,
            generators: 1,
        }
    })
    .unwrap();
    assert!(d.checkpoint_s.is_none());
    assert!(
        progress.checkpoint_sink().is_none(),
        "the sink goes with the test"
    );
    let got = got.into_inner().unwrap();
    assert_eq!(got.len(), 1);
    let c = &got[0];
    let at = c.checkpoint_s.unwrap();
    assert_eq!(at, c.merged.duration_s);
    assert!(at >= engine::load::CHECKPOINT_EVERY.as_secs_f64(), "{at}");
    assert!(c.merged.total_count() > 0 && c.merged.total_count() < d.merged.total_count());
    let planned = Some(secs as f64);
    let flag = c.checkpoint_flag("x", planned).unwrap();
    assert_eq!(flag.code, "partial");
    assert!(
        flag.message.starts_with(&format!(
            "the x test did not finish (rackbench was killed, or the machine stopped): \
             measured until a checkpoint at {at:.1} s of {secs}.0 s"
        )),
        "{}",
        flag.message
    );
    assert!(d.checkpoint_flag("x", planned).is_none());
    // The stored figures of a checkpoint are the final's conversion of it.
    let step = validity::step_output(
        &spec(StopAfter::Duration(Duration::from_secs(secs))),
        &c.merged,
        "ops_per_s",
        "ops/s",
    );
    assert_eq!(step.duration_s, at);
    let rate = step.metrics.iter().find(|m| m.name == "ops_per_s").unwrap();
    assert!((rate.value - c.merged.total_count() as f64 / at).abs() < 1e-6);
}

/// A worker done early (the count all claimed) keeps the checkpoints coming: one of two
/// workers drives a fast server and is done at once, the other a slow one for more than
/// a period, its first claim of the count (10 of 1400) taking 7 s. The checkpoint after
/// the period holds the done worker's whole count (all it will ever make: over the
/// window to the checkpoint, what it did) beside the other's count so far, and its
/// window is the live worker's copy time.
#[test]
fn a_worker_done_early_does_not_stop_the_checkpoints() {
    let fast = fake(Duration::ZERO, None);
    let slow = fake(Duration::from_millis(700), None);
    let every = engine::load::CHECKPOINT_EVERY.as_secs_f64();
    let share = 700;
    let s = LoadSpec {
        connections: 2,
        threads: 2,
        client_io: ClientIo::Epoll,
        ..spec(StopAfter::Requests(2 * share))
    };
    let progress = Progress::default();
    let got = collect_checkpoints(&progress);
    // Connection k goes to endpoint k: worker 0 to the fast server, worker 1 the slow.
    let out = run_stream(&s, &[fast.addr, slow.addr], &["x"], |_| Line, &progress).unwrap();
    assert_eq!(out.total_count(), 2 * share);
    let got = got.lock().unwrap();
    assert!(
        !got.is_empty(),
        "no checkpoint after a worker finished its share ({:.1} s test)",
        out.duration_s
    );
    let (_, c) = &got[0];
    assert!(
        c.duration_s >= every && c.duration_s < every + 0.5,
        "{}",
        c.duration_s
    );
    let n = c.total_count();
    // The fast worker's 1390, and 7 of the slow one's (0.7 s each over 5 s).
    assert!(n >= 2 * share - 10 + 6 && n < 2 * share, "{n}");
    assert!((c.throughput() - n as f64 / c.duration_s).abs() < 1e-9);
}

/// A session that failed early (a broken connection) keeps the checkpoints coming: its
/// counts are in every later merge, without waiting for a copy it will never send.
#[test]
fn a_session_that_failed_does_not_stop_the_checkpoints() {
    let s = LoadSpec {
        warmup: Duration::from_millis(300),
        ..spec(StopAfter::Duration(
            engine::load::CHECKPOINT_EVERY + Duration::from_secs(1),
        ))
    };
    let sessions = [Some(20), None, None]
        .into_iter()
        .map(|fail_after| Counter { fail_after, n: 0 })
        .collect();
    let progress = Progress::default();
    let got = collect_checkpoints(&progress);
    let out = run_sessions(&s, &["a", "b"], sessions, &progress).unwrap();
    assert!(out.connection_errors.contains_key("session broke"));
    let c = the_one_checkpoint(&got, 0, &out);
    assert!(c.loadgen_cpu_user_s + c.loadgen_cpu_sys_s > 0.0);
}

/// An outcome of `count` requests over `secs`, as a generator hands at a checkpoint.
fn outcome_of(count: u64, secs: f64) -> engine::LoadOutcome {
    let mut c = engine::load::ClassStats::new("x", false);
    c.count = count;
    c.ok = count;
    engine::LoadOutcome {
        classes: vec![c],
        duration_s: secs,
        interval_rates: Vec::new(),
        offered_rate: None,
        late_sends: 0,
        generator_late_sends: 0,
        unsent_requests: 0,
        connection_errors: Default::default(),
        lost_requests: Default::default(),
        reconnects: 0,
        connect: None,
        bytes_tx: 0,
        bytes_rx: 0,
        loadgen_cpu_user_s: 0.0,
        loadgen_cpu_sys_s: 0.0,
        stopped_early: None,
        client_io_fallback: None,
    }
}

/// The controller's merges of checkpoints handed by generators in `order` ((generator,
/// seconds) each, its count 100 a second): each merge's (count, window).
fn controller_merges(generators: usize, order: &[(usize, f64)]) -> Vec<(u64, f64)> {
    let roles = Roles {
        sut: Arc::new(InProcess("rbh1")),
        loadgens: (0..generators)
            .map(|_| Arc::new(InProcess("rbh2")) as Arc<dyn Host>)
            .collect(),
    };
    let progress = Progress::default();
    let got: std::sync::Mutex<Vec<(u64, f64)>> = Default::default();
    let save = |d: spread::Driven| {
        got.lock()
            .unwrap()
            .push((d.merged.total_count(), d.checkpoint_s.unwrap()))
    };
    let run_of = |i: usize, o: &engine::LoadOutcome, window| {
        spread::GeneratorRun::of(roles.loadgens[i].as_ref(), 1, 1, o, window, 0.0)
    };
    spread::with_checkpoints(&roles, generators, &progress, &save, &run_of, || {
        let sink = progress.checkpoint_sink().unwrap();
        for &(i, secs) in order {
            sink.hand(i, outcome_of((secs * 100.0) as u64, secs));
        }
        // Merged on a thread of their own: wait for what the handed ones make.
        std::thread::sleep(Duration::from_millis(300));
    });
    got.into_inner().unwrap()
}

/// Checkpoints of the same moment are merged, whatever order they come in: generator
/// 0's 10 s checkpoint before generator 1's 5 s one is merged with generator 1's 10 s,
/// not its 5 s (which would read generator 1's count over 5 s as over 10 s).
#[test]
fn the_controller_merges_checkpoints_of_the_same_moment() {
    let merges = controller_merges(2, &[(0, 5.0), (0, 10.0), (1, 5.0), (1, 10.0)]);
    assert_eq!(merges, [(1_000, 5.0), (2_000, 10.0)]);
    // In step: each round as it completes.
    let merges = controller_merges(2, &[(0, 5.0), (1, 5.0), (1, 10.0), (0, 10.0)]);
    assert_eq!(merges, [(1_000, 5.0), (2_000, 10.0)]);
    // Three generators, one a round behind the others the whole time (its copies
    // drift: an oltp session copies at the top of a round of up to 30 s): every merge
    // still comes, each of the nearest moments there are.
    let merges = controller_merges(
        3,
        &[
            (0, 5.0),
            (1, 5.0),
            (0, 10.0),
            (1, 10.0),
            (2, 5.0),
            (0, 15.0),
            (1, 15.0),
            (2, 10.0),
            (0, 20.0),
            (1, 20.0),
            (2, 15.0),
        ],
    );
    assert_eq!(merges, [(1_500, 5.0), (3_000, 10.0), (4_500, 15.0)]);
}

/// A generator done with its share of a count keeps the controller's checkpoints
/// coming: its final outcome stands for it in every later merge. Generator 0 drives a
/// fast server and is done at once, generator 1 a slow one for more than a period.
#[test]
fn a_generator_done_early_does_not_stop_the_checkpoints() {
    let fast = fake(Duration::ZERO, None);
    let slow = fake(Duration::from_millis(10), None);
    let every = engine::load::CHECKPOINT_EVERY.as_secs_f64();
    let roles = Roles {
        sut: Arc::new(InProcess("rbh1")),
        loadgens: vec![Arc::new(InProcess("rbh2")), Arc::new(InProcess("rbh3"))],
    };
    let progress = Arc::new(Progress::default());
    let share = 700;
    let shares: Vec<spread::Share> = (0..2)
        .map(|i| spread::Share {
            connections: 1,
            requests: Some(share),
            rate: None,
            seed: 1,
            first_connection: i,
        })
        .collect();
    let got: std::sync::Mutex<Vec<spread::Driven>> = Default::default();
    let save = |d: spread::Driven| got.lock().unwrap().push(d);
    let d = spread::drive(&roles, &shares, 1, &progress, &[], Some(&save), |i, _| {
        DriverJob {
            workload: "line".into(),
            test: "x".into(),
            params: serde_json::json!({"connections": 1, "requests": share})
                .as_object()
                .unwrap()
                .clone(),
            endpoints: vec![[fast.addr, slow.addr][i].to_string()],
            index: i,
            generators: 2,
        }
    })
    .unwrap();
    assert_eq!(d.merged.total_count(), 2 * share);
    let got = got.into_inner().unwrap();
    assert!(
        !got.is_empty(),
        "no checkpoint after a generator finished its share ({:.1} s test)",
        d.merged.duration_s
    );
    let c = &got[0];
    let at = c.checkpoint_s.unwrap();
    assert!(at >= every && at < every + 0.5, "{at}");
    assert_eq!(at, c.merged.duration_s);
    let n = c.merged.total_count();
    // The fast generator's 700, and about 500 of the slow one's (10 ms each over 5 s).
    assert!(n > share + 300 && n < 2 * share, "{n}");
    assert_eq!(c.runs.len(), 2);
}

/// An open loop that fell behind counts what was due and not sent in its checkpoints
/// too, not only at the end: a server that takes 20 ms a request, offered 1,000/s on
/// one connection, sends about 50 a second; the checkpoint after a period says the rest
/// of what fell due by then unsent.
#[test]
fn a_checkpoint_counts_the_unsent_of_an_open_loop_behind() {
    let f = fake(Duration::from_millis(20), None);
    let every = engine::load::CHECKPOINT_EVERY.as_secs_f64();
    let s = LoadSpec {
        shape: LoadShape::Constant { rate: 1_000.0 },
        stop: StopAfter::Duration(engine::load::CHECKPOINT_EVERY + Duration::from_secs(1)),
        connections: 1,
        threads: 1,
        client_io: ClientIo::Epoll,
        ..LoadSpec::default()
    };
    let progress = Progress::default();
    let got = collect_checkpoints(&progress);
    let out = run_stream(&s, &[f.addr], &["x"], |_| Line, &progress).unwrap();
    assert!(out.unsent_requests > 5_000, "{}", out.unsent_requests);
    let c = the_one_checkpoint(&got, 0, &out);
    // Due by the checkpoint: about 1,000 a second; sent: one in flight at a time.
    let due = (c.duration_s * 1_000.0) as u64;
    let accounted = c.unsent_requests + c.total_count();
    assert!(
        accounted + 10 >= due && accounted <= due + 10,
        "{} unsent and {} done of {due} due by {:.2} s",
        c.unsent_requests,
        c.total_count(),
        c.duration_s
    );
    assert!(c.unsent_requests <= out.unsent_requests);
    assert!(c.duration_s >= every);
}

/// A server that takes the requests and never answers, its connections kept open (a
/// stopped process, `CLIENT PAUSE`, a path dropping packets): a test stopped by a count
/// ends after the no-reply timeout, its requests in flight lost and said why; it waited
/// for them for ever before (audit, 1).
#[test]
fn a_server_that_never_answers_ends_a_counted_test() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let held = Arc::new(std::sync::Mutex::new(Vec::new()));
    let h2 = held.clone();
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            h2.lock().unwrap().push(c);
        }
    });
    for io in [ClientIo::Epoll, ClientIo::IoUring] {
        let s = LoadSpec {
            client_io: io,
            no_reply_timeout: Duration::from_millis(500),
            ..spec(StopAfter::Requests(1_000))
        };
        let t = std::time::Instant::now();
        let out = run_stream(&s, &[addr], &["x"], |_| Line, &Progress::default()).unwrap();
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "{io:?}: {:?}",
            t.elapsed()
        );
        let why = out.stopped_early.clone().unwrap_or_default();
        assert!(why.contains("no reply from the server"), "{io:?}: {why}");
        assert_eq!(out.total_count(), 0, "{io:?}");
        let lost: u64 = out.lost_requests.values().sum();
        assert_eq!(
            lost, 4,
            "{io:?}: one per connection, {:?}",
            out.lost_requests
        );
    }
}

/// The no-reply timeout counts from the oldest request waiting, not from the last byte:
/// an open loop whose sends are further apart than it (2/s against 0.3 s here) sent one
/// after a quiet gap and ended the test before its reply could come (review, 4).
#[test]
fn an_open_loop_slower_than_the_no_reply_timeout_is_not_silent() {
    let f = fake(Duration::from_millis(100), None);
    let s = LoadSpec {
        shape: LoadShape::Constant { rate: 2.0 },
        connections: 1,
        no_reply_timeout: Duration::from_millis(300),
        ..spec(StopAfter::Requests(5))
    };
    let out = run_stream(&s, &[f.addr], &["x"], |_| Line, &Progress::default()).unwrap();
    assert_eq!(out.stopped_early, None);
    assert_eq!(out.total_count(), 5);
}

/// A count-stopped test's requests follow the connections across its threads: with 6
/// connections on 4 threads (2, 2, 1, 1), equal shares had each lone connection carry
/// 150 of 600 requests while the paired ones carried 75, and the test lasted as long
/// as the lone ones took: 33% low (audit, 1). Claimed as they go, every connection
/// carries about the same, and the count is exact.
#[test]
fn a_counted_test_shares_its_count_by_what_each_thread_sends() {
    let f = fake(Duration::from_millis(2), None);
    let s = LoadSpec {
        connections: 6,
        threads: 4,
        ..spec(StopAfter::Requests(600))
    };
    let out = run_stream(&s, &[f.addr], &["x"], |_| Line, &Progress::default()).unwrap();
    assert_eq!(out.total_count(), 600);
    assert_eq!(f.served.load(Ordering::SeqCst), 600);
    let most = f.most_per_connection.load(Ordering::SeqCst);
    assert!(most < 130, "one connection carried {most} of 600 requests");
}

/// A server that answers the check that it is up and a test's two connections, closes
/// the first of them after 20 replies, and from then accepts no more: its accept queue
/// is full (a backlog of 0 and one connection waiting), so the kernel drops a SYN and
/// retries it for minutes.
fn server_that_stops_accepting() -> SocketAddr {
    use std::os::fd::AsRawFd;
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let filled = Arc::new(AtomicBool::new(false));
    std::thread::spawn(move || {
        for i in 0..3 {
            let (conn, _) = l.accept().unwrap();
            let filled = filled.clone();
            std::thread::spawn(move || {
                let mut w = conn.try_clone().unwrap();
                let r = BufReader::new(conn);
                for (n, line) in (1..).zip(r.lines()) {
                    if line.is_err() || w.write_all(b"ok\n").is_err() {
                        return;
                    }
                    if i == 1 && n == 20 {
                        while !filled.load(Ordering::SeqCst) {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                        return;
                    }
                }
            });
        }
        // SAFETY: a listening socket this thread owns.
        assert_eq!(unsafe { libc::listen(l.as_raw_fd(), 0) }, 0);
        let held = std::net::TcpStream::connect(addr).unwrap();
        filled.store(true, Ordering::SeqCst);
        std::thread::sleep(Duration::from_secs(10));
        drop((l, held));
    });
    addr
}

/// Two connections on one thread (one waits on the other's reconnect, or does not),
/// `no_reply_ms` the limit.
fn two_connections_on_one_thread(io: ClientIo, no_reply_ms: u64, stop: StopAfter) -> LoadSpec {
    LoadSpec {
        connections: 2,
        threads: 1,
        client_io: io,
        no_reply_timeout: Duration::from_millis(no_reply_ms),
        ..spec(stop)
    }
}

/// A reconnect the server leaves unanswered waits beside the test, not in front of it:
/// the other connection of the same thread is served all along, and the reconnect fails
/// after the no-reply limit. A blocking connect stopped the thread for its 5 s limit,
/// longer than the test.
#[test]
fn a_reconnect_the_server_leaves_unanswered_does_not_stall_the_others() {
    for io in [ClientIo::Epoll, ClientIo::IoUring] {
        let addr = server_that_stops_accepting();
        let s = two_connections_on_one_thread(
            io,
            800,
            StopAfter::Duration(Duration::from_millis(1500)),
        );
        let t0 = std::time::Instant::now();
        let out = run_stream(&s, &[addr], &["x"], |_| Line, &Progress::default()).unwrap();
        let took = t0.elapsed();
        assert!(out.client_io_fallback.is_none(), "{io:?}");
        // The other connection carried the test: thousands of replies, not the 20 or so
        // before the reconnect.
        assert!(out.total_count() > 1_000, "{io:?}: {}", out.total_count());
        assert!(
            out.connection_errors
                .keys()
                .any(|k| k.starts_with("reconnect to") && k.contains("no answer for 0.8 s")),
            "{io:?}: {:?}",
            out.connection_errors
        );
        assert_eq!(out.reconnects, 0, "{io:?}");
        assert!(
            out.stopped_early.is_none(),
            "{io:?}: {:?}",
            out.stopped_early
        );
        assert!(took < Duration::from_secs(4), "{io:?}: {took:?}");
    }
}

/// A count-stopped test whose reconnect waits on a server that accepts no more ends with
/// its count, the other connection sending the rest: it neither waits for the reconnect
/// nor stops short.
#[test]
fn a_count_ends_while_a_reconnect_waits_on_the_server() {
    for io in [ClientIo::Epoll, ClientIo::IoUring] {
        let addr = server_that_stops_accepting();
        let s = two_connections_on_one_thread(io, 5_000, StopAfter::Requests(2_000));
        let t0 = std::time::Instant::now();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(run_stream(
                &s,
                &[addr],
                &["x"],
                |_| Line,
                &Progress::default(),
            ));
        });
        let out = rx
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("{io:?}: the test never ended"))
            .unwrap();
        assert!(
            t0.elapsed() < Duration::from_secs(4),
            "{io:?}: {:?}",
            t0.elapsed()
        );
        // Every request of the count went out: answered, or lost with the connection
        // the server closed.
        assert_eq!(
            out.total_count() + out.lost_count(),
            2_000,
            "{io:?}: {} + {} lost",
            out.total_count(),
            out.lost_count()
        );
        assert!(out.lost_count() <= 1, "{io:?}");
        assert!(
            out.stopped_early.is_none(),
            "{io:?}: {:?}",
            out.stopped_early
        );
    }
}
