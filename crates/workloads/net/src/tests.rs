//! The net workload against a real receiver on loopback (in-process, on a thread), through
//! local hosts in the roles the runner gives; the two-process test lives in
//! crates/cli/tests/net.rs.

use super::*;
use engine::host::Roles;
use hosts::LocalHost;
use serde_json::json;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn params(v: serde_json::Value) -> serde_json::Map<String, Value> {
    v.as_object().unwrap().clone()
}

fn metric(out: &StepOutput, name: &str) -> Option<f64> {
    out.metrics
        .iter()
        .find(|m| m.name == name && m.labels.is_empty())
        .map(|m| m.value)
}

/// The registry a local host finds net's service and driver in.
fn catalog(name: &str) -> Option<engine::Registration> {
    (name == "net").then(registration)
}

fn host(name: &str) -> Arc<LocalHost> {
    Arc::new(LocalHost::new(name, catalog, false))
}

/// A quiet context acting through `sut` and `loadgens`.
fn ctx_on(sut: &Arc<LocalHost>, loadgens: &[&Arc<LocalHost>]) -> Ctx {
    let mut ctx = Ctx::quiet();
    ctx.roles = Some(Roles {
        sut: sut.clone(),
        loadgens: loadgens
            .iter()
            .map(|h| (*h).clone() as Arc<dyn Host>)
            .collect(),
    });
    ctx
}

/// One local host as both system under test and load generator, as a run with no
/// hosts given.
fn one_host() -> (Arc<LocalHost>, Ctx) {
    let h = host("local");
    let ctx = ctx_on(&h, &[&h]);
    (h, ctx)
}

/// Both ends' facts: the receiver's and the sender's host's.
fn facts(w: &NetWorkload) -> BTreeMap<String, Fact> {
    let mut m = w.disclosure();
    m.extend(w.loadgen_disclosure().into_values().flatten());
    m
}

fn fact(w: &NetWorkload, key: &str) -> String {
    facts(w)
        .get(key)
        .map(Fact::display)
        .unwrap_or_else(|| panic!("no fact {key} in {:?}", facts(w)))
}

#[test]
fn tcp_two_streams_counts_every_byte() {
    let (addr, stop, h) = spawn_receiver(ServeOptions::default()).unwrap();
    let mut w = NetWorkload::from_params(&params(json!({
        "tests": ["tcp"], "streams": 2, "duration": 0.5, "interval": 0.1, "target": addr.to_string()
    })))
    .unwrap();
    let (_local, ctx) = one_host();
    w.prepare(&ctx).unwrap();
    let out = w.run_test("tcp", &ctx).unwrap();
    // Both ends' facts, each under its own key: the given receiver's host is not read.
    assert!(fact(&w, "net.receiver").contains(&addr.to_string()));
    assert!(fact(&w, "net.receiver.net.ipv4.tcp_rmem").contains("--target"));
    assert!(fact(&w, "net.sender").contains("local"));
    // The one the kernel ran the stream on.
    let cc = fact(&w, "net.tcp_congestion");
    assert!(
        cc.contains("system default; read back from the data stream"),
        "{cc}"
    );
    assert!(facts(&w).contains_key("net.sender.net.ipv4.tcp_wmem"));
    w.cleanup();
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap().unwrap();
    assert!(out.error.is_none(), "{:?}", out.error);
    assert!(out.flags.is_empty(), "{:?}", out.flags);
    let sent = metric(&out, "bytes_sent").unwrap();
    assert!(sent > 1e6, "sent only {sent} B");
    assert_eq!(Some(sent), metric(&out, "bytes_received"));
    assert!(metric(&out, "throughput_gbit_per_s").unwrap() > 0.01);
    assert!(metric(&out, "receiver_cpu_pct").is_some());
    assert!(metric(&out, "cpu_pct_per_gbit").is_some());
    assert!(metric(&out, "retransmits").is_some());
    assert!(metric(&out, "rtt_mean_ns").unwrap() > 0.0);
    // iperf3's min and max: of the smoothed RTTs the mean is of (the kernel's own
    // minimum, of raw samples, read 17x below the mean).
    let (min, mean, max) = (
        metric(&out, "rtt_min_ns").unwrap(),
        metric(&out, "rtt_mean_ns").unwrap(),
        metric(&out, "rtt_max_ns").unwrap(),
    );
    assert!(
        0.0 < min && min <= mean && mean <= max,
        "{min} {mean} {max}"
    );
    let starts: Vec<&str> = out
        .metrics
        .iter()
        .filter(|m| m.name == "throughput_gbit_per_s")
        .filter_map(|m| m.labels.get("interval_start_s").map(String::as_str))
        .collect();
    assert!(starts.len() >= 3, "only {starts:?} intervals");
    // Without a warm-up, intervals run from 0 (not -0) and none is the warm-up's.
    assert_eq!(starts[0], "0.0");
    assert!(out.metrics.iter().all(|m| !m.labels.contains_key("warmup")));
}

/// `sendfile_nonblocking` sends the file's bytes, not a buffer's: a pattern put in
/// the file arrives whole and in order on the other end of a loopback connection.
#[test]
fn sendfile_sends_the_files_bytes() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let bytes: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let want = bytes.clone();
    let reader = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut got = Vec::new();
        std::io::Read::read_to_end(&mut s, &mut got).unwrap();
        got
    });
    let src = sender::buffer_file(&bytes).unwrap();
    let s = std::net::TcpStream::connect(addr).unwrap();
    // A blocking socket: each call sends until the file's bytes are all out.
    let (n, err) = sender::sendfile_nonblocking(s.as_fd(), src.as_fd(), bytes.len());
    assert!(err.is_none(), "{err:?}");
    assert_eq!(n, bytes.len());
    // Past the file's end there is nothing to send: an error, not a silent short count.
    let (_, err) = sender::sendfile_nonblocking(s.as_fd(), src.as_fd(), bytes.len() + 1);
    assert_eq!(
        err.map(|e| e.kind()),
        Some(std::io::ErrorKind::UnexpectedEof)
    );
    drop(s);
    let got = reader.join().unwrap();
    assert_eq!(got.len(), 2 * bytes.len());
    assert!(got[..want.len()] == want[..] && got[want.len()..] == want[..]);
}

/// `--zerocopy`: the TCP test sends by sendfile (iperf3 -Z), every byte counted on both
/// ends, and the method says so; asked for without a tcp test, it is refused.
#[test]
fn zerocopy_tcp_counts_every_byte_and_says_how_it_sent() {
    let (addr, stop, h) = spawn_receiver(ServeOptions::default()).unwrap();
    let mut w = NetWorkload::from_params(&params(json!({
        "tests": ["tcp"], "duration": 0.3, "interval": 0.1, "target": addr.to_string(),
        "zerocopy": true
    })))
    .unwrap();
    let (_local, ctx) = one_host();
    w.prepare(&ctx).unwrap();
    // sendfile(2) counts what it moves in the process's read and write bytes; send(2) on
    // a socket, the default path, in neither.
    let written = || -> u64 {
        let io = std::fs::read_to_string("/proc/self/io").unwrap();
        io.lines()
            .find_map(|l| l.strip_prefix("wchar: "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap()
    };
    let before = written();
    let out = w.run_test("tcp", &ctx).unwrap();
    let moved = written() - before;
    assert!(fact(&w, "net.method").contains("sendfile() of 131072 B from a temporary file"));
    w.cleanup();
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap().unwrap();
    assert!(out.error.is_none(), "{:?}", out.error);
    let sent = metric(&out, "bytes_sent").unwrap();
    assert!(sent > 1e6, "sent only {sent} B");
    assert_eq!(Some(sent), metric(&out, "bytes_received"));
    assert!(
        moved as f64 >= sent,
        "{moved} B through sendfile, {sent} B sent"
    );
    let err = NetWorkload::from_params(&params(json!({"tests": ["udp"], "zerocopy": true})))
        .err()
        .map(|e| format!("{e:#}"))
        .unwrap_or_default();
    assert!(err.contains("applies to the tcp test"), "{err}");
    // Without it, the method is iperf3's default write() loop.
    let w = NetWorkload::from_params(&params(json!({"tests": ["tcp"]}))).unwrap();
    assert!(fact(&w, "net.method").contains("non-blocking write() of 131072 B"));
}

/// One TCP stream to `addr` for `duration_s`, intervals of 0.1 s.
fn tcp_spec(addr: std::net::SocketAddr, duration_s: f64, congestion: Option<&str>) -> SendSpec {
    SendSpec {
        target: addr.to_string(),
        proto: Proto::Tcp,
        payload: DEFAULT_TCP_LEN,
        duration_s,
        warmup_s: 0.0,
        streams: 1,
        interval_s: 0.1,
        rate_bps: 0.0,
        sender_cpus: vec![],
        receiver_cpus: vec![],
        congestion: congestion.map(str::to_string),
        window: None,
        udp_batch: 1,
        udp_gso: 0,
        zerocopy: false,
    }
}

#[test]
fn the_congestion_control_is_chosen_before_the_stream_connects() {
    // Chosen after connecting, a stream starts on the system's default, and BBR as the
    // default leaves its pacing on a stream switched to CUBIC afterwards. So the choice
    // comes first: a refused one opens no connection at all.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let addr = l.local_addr().unwrap();
    let err = format!(
        "{:#}",
        sender::connect_tcp(addr, Some("nosuchcc"), None).unwrap_err()
    );
    assert!(err.contains("congestion control `nosuchcc`"), "{err}");
    std::thread::sleep(Duration::from_millis(50));
    let accepted = l.accept().map(|_| ()).map_err(|e| e.kind());
    assert_eq!(accepted, Err(std::io::ErrorKind::WouldBlock));
    let s = sender::connect_tcp(addr, Some("reno"), None).unwrap();
    assert_eq!(sender::congestion_of(&s).unwrap(), "reno");
}

#[test]
fn a_receiver_without_the_congestion_control_refuses_the_test() {
    let (addr, stop, h) = spawn_receiver(ServeOptions::default()).unwrap();
    let spec = tcp_spec(addr, 0.3, Some("nosuchcc"));
    let err = sender::run(&spec, &AtomicU64::new(0), &|| false, None).unwrap_err();
    stop.store(true, Ordering::Relaxed);
    let _ = h.join().unwrap();
    let err = format!("{err:#}");
    assert!(
        err.contains("refused the test") && err.contains("congestion control `nosuchcc`"),
        "{err}"
    );
}

#[test]
fn the_window_is_set_on_both_ends_before_the_streams_connect() {
    // 40 KiB: under the kernel's default cap (net.core.wmem_max and rmem_max, 208 KiB),
    // so the kernel holds exactly twice it, and not any default size (tcp_rmem's and
    // tcp_wmem's are 128 and 16 KiB).
    const W: usize = 40 << 10;
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    // The receiver sets it on its data listener; the streams it accepts inherit it.
    sender::set_buffers(&l, W).unwrap();
    let s = sender::connect_tcp(l.local_addr().unwrap(), None, Some(W)).unwrap();
    let (accepted, _) = l.accept().unwrap();
    for sock in [&s, &accepted] {
        let r = socket2::SockRef::from(sock);
        assert_eq!(r.send_buffer_size().unwrap(), 2 * W);
        assert_eq!(r.recv_buffer_size().unwrap(), 2 * W);
    }
    // Without it, autotuning: the default buffers, not the ones asked for.
    let s = sender::connect_tcp(l.local_addr().unwrap(), None, None).unwrap();
    assert_ne!(
        socket2::SockRef::from(&s).recv_buffer_size().unwrap(),
        2 * W
    );

    // A whole test with it, TCP and UDP, against a real receiver: it sends, and says so.
    let (addr, stop, h) = spawn_receiver(ServeOptions::default()).unwrap();
    let mut w = NetWorkload::from_params(&params(json!({
        "tests": ["tcp", "udp"], "udp_payload": [1472], "rate": "100M", "window": W,
        "duration": 0.3, "interval": 0.1, "target": addr.to_string()
    })))
    .unwrap();
    let (_local, ctx) = one_host();
    w.prepare(&ctx).unwrap();
    for test in ["tcp", "udp1472"] {
        let out = w.run_test(test, &ctx).unwrap();
        assert!(out.error.is_none(), "{test}: {:?}", out.error);
        assert!(metric(&out, "bytes_received").unwrap() > 0.0, "{test}");
    }
    // The tcp test's read-back congestion control outlives the udp test after it.
    let cc = fact(&w, "net.tcp_congestion");
    assert!(cc.contains("read back from the data stream"), "{cc}");
    let said = fact(&w, "net.window");
    assert!(
        said.contains(&format!("{W} B (--window)")) && said.contains(&format!("{} B", 2 * W)),
        "{said}"
    );
    w.cleanup();
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap().unwrap();

    let err = NetWorkload::from_params(&params(json!({"window": 100})))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("`window` must be 4096 B"), "{err}");
}

/// A CPU number a `cpu_set_t` holds that is not online here: the kernel refuses a pin to
/// it as it refuses one to a CPU outside the process's cpuset.
fn cpu_not_online() -> Option<usize> {
    let online = engine::launch::cpus_online_here();
    (0..libc::CPU_SETSIZE as usize).find(|c| !online.contains(*c))
}

/// The receiver pinned its data threads "best effort" and said nothing when it could
/// not: a CPU the kernel would not give (a cpuset's exclusion, or, as here, a CPU not
/// online: the same refusal of sched_setaffinity) left the figures looking pinned. The
/// receiver's report says so now, and the result carries a warning.
#[test]
fn a_receiver_that_cannot_pin_its_threads_says_so_on_the_result() {
    let Some(past) = cpu_not_online() else {
        eprintln!("skipped: every CPU number a cpu_set_t holds is online here");
        return;
    };
    let mine = engine::launch::allowed_cpus();
    let (addr, stop, h) = spawn_receiver(ServeOptions::default()).unwrap();
    let run = |receiver_cpus: Vec<usize>| {
        let spec = SendSpec {
            receiver_cpus,
            streams: 2,
            ..tcp_spec(addr, 0.3, None)
        };
        let rep = sender::run(&spec, &AtomicU64::new(0), &|| false, None).unwrap();
        assert_eq!(rep.error, None);
        let out = step_output(&spec, &rep);
        let flags: Vec<String> = out
            .flags
            .iter()
            .filter(|f| f.code == "receiver_not_pinned")
            .map(|f| f.message.clone())
            .collect();
        (rep.receiver_pin_error, flags)
    };
    // Refused outright (the two streams on one CPU share one thread).
    let (why, flags) = run(vec![past]);
    let why = why.expect("the receiver says its threads were not pinned");
    assert!(
        why.starts_with(&format!(
            "1 of 1 data thread(s) not pinned to CPUs {past} as asked: cannot pin to CPUs {past}: "
        )),
        "{why}"
    );
    assert_eq!(flags.len(), 1, "{flags:?}");
    assert!(
        flags[0].starts_with(&format!("--receiver-cpus {past}: the receiver's 1 of 1"))
            && flags[0].ends_with("or leave --receiver-cpus out"),
        "{flags:?}"
    );
    // Narrowed: the kernel gives the CPU it can and drops the other.
    let (why, flags) = run(vec![mine[0], past]);
    let why = why.expect("narrowed is not pinned as asked");
    assert!(why.starts_with("2 of 2 data thread(s)"), "{why}");
    assert!(
        why.contains(&format!(
            "pinned to CPUs {} only: CPU {past} left out by the kernel",
            mine[0]
        )),
        "{why}"
    );
    assert_eq!(flags.len(), 1, "{flags:?}");
    // Pinned as asked: nothing said.
    assert_eq!(run(vec![mine[0]]), (None, vec![]));
    stop.store(true, Ordering::Relaxed);
    let _ = h.join().unwrap();
}

/// The sender's streams pin exactly: a CPU list the kernel narrows (one CPU of it not
/// online, as a cpuset's exclusion) fails the stream, naming what was left out; it used
/// to run on the CPUs left and report figures as of the list asked for.
#[test]
fn a_sender_the_kernel_narrows_fails_its_stream() {
    let Some(past) = cpu_not_online() else {
        eprintln!("skipped: every CPU number a cpu_set_t holds is online here");
        return;
    };
    let mine = engine::launch::allowed_cpus();
    let (addr, stop, h) = spawn_receiver(ServeOptions::default()).unwrap();
    let spec = SendSpec {
        sender_cpus: vec![mine[0], past],
        ..tcp_spec(addr, 0.3, None)
    };
    let rep = sender::run(&spec, &AtomicU64::new(0), &|| false, None).unwrap();
    let why = rep.error.expect("a narrowed sender fails its stream");
    assert!(
        why.contains(&format!("CPU {past} left out by the kernel")),
        "{why}"
    );
    stop.store(true, Ordering::Relaxed);
    let _ = h.join().unwrap();
}

#[test]
fn a_stream_on_another_congestion_control_than_asked_for_is_invalid() {
    let spec = tcp_spec("127.0.0.1:9".parse().unwrap(), 1.0, Some("cubic"));
    let flagged = |ran: Option<&str>| {
        let rep = TestReport {
            congestion: ran.map(str::to_string),
            ..TestReport::default()
        };
        step_output(&spec, &rep)
            .flags
            .iter()
            .filter(|f| f.code == "congestion_mismatch")
            .map(|f| f.message.clone())
            .collect::<Vec<_>>()
    };
    let said = flagged(Some("bbr"));
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains("cubic") && said[0].contains("bbr"),
        "{said:?}"
    );
    assert!(flagged(Some("cubic")).is_empty());
    assert!(flagged(None).is_empty());
}

#[test]
fn tcp_runs_with_the_congestion_control_asked_for() {
    let (addr, stop, h) = spawn_receiver(ServeOptions::default()).unwrap();
    // Reno is built into every kernel and allowed without privileges.
    let spec = tcp_spec(addr, 0.3, Some("reno"));
    let rep = sender::run(&spec, &AtomicU64::new(0), &|| false, None).unwrap();
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap().unwrap();
    assert_eq!(rep.congestion.as_deref(), Some("reno"));
    assert!(rep.error.is_none(), "{:?}", rep.error);
    // The sender's kernel counters, over the test and at each interval.
    let t = rep.tcp.clone().unwrap().unwrap();
    assert!(t.rtt_mean_us > 0.0 && t.snd_cwnd_max_bytes > 0, "{t:?}");
    assert!(
        t.rtt_min_us.is_some_and(|m| f64::from(m) <= t.rtt_mean_us),
        "{t:?}"
    );
    assert!(f64::from(t.rtt_max_us) >= t.rtt_mean_us, "{t:?}");
    let per_interval: Option<u64> = rep.intervals.iter().map(|i| i.retransmits).sum();
    assert!(
        per_interval.is_some_and(|r| r <= t.retransmits),
        "{:?}",
        rep.intervals
    );
    let sent: u64 = rep.sent.iter().map(|s| s.bytes).sum();
    let got: u64 = rep.received.iter().map(|s| s.bytes).sum();
    assert!(sent > 0 && sent == got, "sent {sent} B, received {got} B");
}

/// Without a warm-up and with one: intervals follow one another, and the measured ones add
/// up to the test's totals, the warm-up's to the warm-up's (both counted from the same
/// snapshot at the mark).
#[test]
fn intervals_follow_one_another_to_the_end_of_the_test() {
    let (addr, stop, h) = spawn_receiver(ServeOptions::default()).unwrap();
    for warmup_s in [0.0, 0.2] {
        let spec = SendSpec {
            warmup_s,
            ..tcp_spec(addr, 0.35, None)
        };
        let rep = sender::run(&spec, &AtomicU64::new(0), &|| false, None).unwrap();
        assert!(rep.error.is_none(), "{:?}", rep.error);
        let iv = &rep.intervals;
        assert!(iv.len() >= 3, "{iv:?}");
        assert_eq!(iv[0].start_s, -warmup_s);
        for w in iv.windows(2) {
            assert_eq!(w[0].end_s, w[1].start_s, "a gap or an overlap: {iv:?}");
        }
        // The last, partial interval is there unless shorter than a tenth of one; its
        // bytes make the intervals add up to the total.
        let tail = rep.receive_duration_s - iv.last().unwrap().end_s;
        assert!(
            tail < 0.1 * spec.interval_s,
            "the last {tail} s are in no interval: {iv:?}"
        );
        let sum = |warm: bool| -> u64 {
            iv.iter()
                .filter(|i| i.warmup == warm)
                .flat_map(|i| &i.received)
                .map(|s| s.bytes)
                .sum()
        };
        let got: u64 = rep.received.iter().map(|s| s.bytes).sum();
        if tail <= 0.0 {
            assert_eq!(sum(false), got, "warm-up {warmup_s} s");
        }
        let warm: u64 = rep.warmup_received.iter().map(|s| s.bytes).sum();
        assert_eq!(sum(true), warm, "warm-up {warmup_s} s");
        assert_eq!(warm > 0, warmup_s > 0.0);
    }
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap().unwrap();
}

#[test]
fn unknown_congestion_control_is_refused_before_the_test() {
    let mut w = NetWorkload::from_params(&params(json!({
        "tests": ["tcp"], "congestion": "nosuchcc", "target": "127.0.0.1:9"
    })))
    .unwrap();
    let (local, ctx) = one_host();
    let err = format!("{:#}", w.prepare(&ctx).unwrap_err());
    assert!(
        err.contains("congestion control `nosuchcc`") && err.contains("This host has:"),
        "{err}"
    );
    // Refused on the sender's host before any receiver was started.
    assert!(local.service_exited(1).is_err());
    let err = NetWorkload::from_params(&params(json!({"congestion": "bbr; rm"})))
        .err()
        .unwrap();
    assert!(
        err.to_string()
            .contains("must name a TCP congestion control"),
        "{err}"
    );
}

#[test]
fn udp_paced_has_loss_jitter_and_packets() {
    let (addr, stop, h) = spawn_receiver(ServeOptions::default()).unwrap();
    let mut w = NetWorkload::from_params(&params(json!({
        "tests": ["udp"], "udp_payload": [1472, 60], "rate": "20M", "duration": 0.5,
        "interval": 0.1, "target": addr.to_string()
    })))
    .unwrap();
    assert_eq!(w.tests(), vec!["udp1472", "udp60"]);
    let (_local, ctx) = one_host();
    w.prepare(&ctx).unwrap();
    for t in w.tests() {
        let out = w.run_test(&t, &ctx).unwrap();
        assert!(out.error.is_none(), "{t}: {:?}", out.error);
        let pps = metric(&out, "packets_per_s").unwrap();
        let payload: f64 = t[3..].parse().unwrap();
        // Paced at 20 Mbit/s: packets/s near 20e6 / (8 x payload), never far above.
        let want = 20e6 / (8.0 * payload);
        assert!(
            pps < want * 1.3 && pps > want * 0.3,
            "{t}: {pps} packets/s, want ~{want}"
        );
        assert!(metric(&out, "loss_pct").unwrap() < 50.0);
        assert!(metric(&out, "jitter_ms").is_some());
    }
    // No congestion control with UDP only.
    assert!(!facts(&w).contains_key("net.tcp_congestion"));
    w.cleanup();
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap().unwrap();
}

/// `--rate` paces TCP as iperf3 -b does: two streams at 100 Mbit/s each send 200 Mbit/s
/// in all, every byte arrives, the target is stored beside the figure, and the method
/// says how the streams were paced. A rate the sender cannot reach is flagged, never
/// reported as if it had been offered.
#[test]
fn tcp_at_a_rate_sends_that_rate_and_a_rate_out_of_reach_is_flagged() {
    let (addr, stop, h) = spawn_receiver(ServeOptions::default()).unwrap();
    let mut w = NetWorkload::from_params(&params(json!({
        "tests": ["tcp"], "rate": "100M", "streams": 2, "duration": 1.0,
        "interval": 0.25, "target": addr.to_string()
    })))
    .unwrap();
    let (_local, ctx) = one_host();
    w.prepare(&ctx).unwrap();
    let out = w.run_test("tcp", &ctx).unwrap();
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(metric(&out, "bytes_sent"), metric(&out, "bytes_received"));
    assert_eq!(metric(&out, "target_gbit_per_s"), Some(0.2));
    let sent = out
        .metrics
        .iter()
        .find(|m| {
            m.name == "throughput_gbit_per_s"
                && m.labels.get("end").map(String::as_str) == Some("sender")
        })
        .unwrap()
        .value;
    // Unpaced, loopback moves tens of Gbit/s; paced, within a buffer a stream of the
    // rate (128 KiB of the 12.5 MB each sends in the second).
    assert!(
        (0.18..0.21).contains(&sent),
        "sent {sent} Gbit/s at --rate 100M x 2"
    );
    assert!(
        out.flags.iter().all(|f| f.code != "below_target_rate"),
        "{:?}",
        out.flags
    );
    let method = fact(&w, "net.method");
    assert!(
        method.contains("paced (--rate 100000000 bit/s per stream"),
        "{method}"
    );
    w.cleanup();

    // The sendfile path (--zerocopy) is paced alike.
    let mut w = NetWorkload::from_params(&params(json!({
        "tests": ["tcp"], "rate": "100M", "duration": 0.5, "zerocopy": true,
        "interval": 0.1, "target": addr.to_string()
    })))
    .unwrap();
    w.prepare(&ctx).unwrap();
    let out = w.run_test("tcp", &ctx).unwrap();
    assert!(out.error.is_none(), "{:?}", out.error);
    let sent = metric(&out, "bytes_sent").unwrap() * 8.0 / 0.5 / 1e9;
    assert!(
        (0.09..0.11).contains(&sent),
        "--zerocopy sent {sent} Gbit/s at --rate 100M"
    );
    w.cleanup();

    let mut w = NetWorkload::from_params(&params(json!({
        "tests": ["tcp"], "rate": "10T", "duration": 0.3,
        "interval": 0.1, "target": addr.to_string()
    })))
    .unwrap();
    w.prepare(&ctx).unwrap();
    let out = w.run_test("tcp", &ctx).unwrap();
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(metric(&out, "target_gbit_per_s"), Some(10_000.0));
    let flag = out.flags.iter().find(|f| f.code == "below_target_rate");
    let flag = flag.unwrap_or_else(|| panic!("no below_target_rate flag: {:?}", out.flags));
    assert!(
        flag.message.contains("of the 10000.000 asked of each"),
        "{}",
        flag.message
    );
    w.cleanup();
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap().unwrap();
}

/// A slow UDP stream after a warm-up: a handful of datagrams, each read on its own. The
/// receiver's rate is of the datagrams the sender sent after its mark over the time they
/// took to arrive, the first one's included: the rate they were paced at, not N/(N-1)
/// of it (as when the span started at the read that brought the first of them).
#[test]
fn a_slow_udp_stream_after_a_warmup_is_received_at_the_rate_it_was_sent() {
    let (addr, stop, h) = spawn_receiver(ServeOptions::default()).unwrap();
    let (_local, ctx) = one_host();
    let mut w = NetWorkload::from_params(&params(json!({
        "tests": ["udp1472"], "rate": "100k", "duration": 1.0, "warmup": 0.3,
        "target": addr.to_string()
    })))
    .unwrap();
    w.prepare(&ctx).unwrap();
    let out = w.run_test("udp1472", &ctx).unwrap();
    assert!(out.error.is_none(), "{:?}", out.error);
    let sent = metric(&out, "packets_sent").unwrap();
    assert!((6.0..=11.0).contains(&sent), "{sent} datagrams sent");
    let got = metric(&out, "packets_per_s").unwrap_or_else(|| panic!("{:?}", out.missing));
    assert_eq!(metric(&out, "packets_received"), Some(sent));
    // Paced evenly at 100 kbit/s: a datagram every 118 ms, 8.49 a second; N/(N-1) of it
    // would be 9.55 for 9.
    let asked = 100e3 / (1472.0 * 8.0);
    assert!(
        (got / asked - 1.0).abs() < 0.04,
        "received {got} datagrams/s, {asked} asked ({sent} datagrams)"
    );
    w.cleanup();
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap().unwrap();
}

/// `--warmup` (iperf3 -O): a paced stream sends through a warm-up and the test, and every
/// figure is the test's alone: the bytes of its duration at the rate (not of both), over
/// its duration on both clocks, the warm-up's intervals before 0 and labelled, the whole
/// stream's bytes still all accounted for. UDP loss is of what the sender sent after its
/// mark: the warm-up's datagrams are neither sent nor lost in the figures.
#[test]
fn a_warmup_is_sent_and_left_out_of_every_figure() {
    let (addr, stop, h) = spawn_receiver(ServeOptions::default()).unwrap();
    let (_local, ctx) = one_host();
    for test in ["tcp", "udp1472"] {
        let mut w = NetWorkload::from_params(&params(json!({
            "tests": [test], "rate": "100M", "duration": 0.6, "warmup": 0.6,
            "interval": 0.2, "target": addr.to_string()
        })))
        .unwrap();
        w.prepare(&ctx).unwrap();
        let out = w.run_test(test, &ctx).unwrap();
        assert!(out.error.is_none(), "{test}: {:?}", out.error);
        assert!(out.flags.is_empty(), "{test}: {:?}", out.flags);
        // 100 Mbit/s for the 0.6 s measured: 7.5 MB, where both would be 15 MB.
        let sent = metric(&out, "bytes_sent").unwrap();
        assert!(
            (6.5e6..8.5e6).contains(&sent),
            "{test}: {sent} B sent in the measured 0.6 s at 100 Mbit/s"
        );
        assert!(
            (0.55..0.7).contains(&out.duration_s),
            "{test}: {}",
            out.duration_s
        );
        let got = metric(&out, "throughput_gbit_per_s").unwrap();
        assert!(
            (0.085..0.115).contains(&got),
            "{test}: {got} Gbit/s received"
        );
        // The sender's measured span is the test's, not the warm-up's.
        let (from, to) = out.measured[0];
        let span = to.duration_since(from).unwrap().as_secs_f64();
        assert!(
            (0.55..0.7).contains(&span),
            "{test}: measured span {span} s"
        );
        let at = |m: &model::Metric| m.labels.get("interval_start_s").cloned();
        let warm: Vec<String> = out
            .metrics
            .iter()
            .filter(|m| m.name == "throughput_gbit_per_s" && m.labels.contains_key("warmup"))
            .filter_map(at)
            .collect();
        assert_eq!(warm, ["-0.6", "-0.4", "-0.2"], "{test}: warm-up intervals");
        let measured: Vec<String> = out
            .metrics
            .iter()
            .filter(|m| {
                m.name == "throughput_gbit_per_s"
                    && m.labels.contains_key("interval_start_s")
                    && !m.labels.contains_key("warmup")
            })
            .filter_map(at)
            .collect();
        assert_eq!(
            measured.first().map(String::as_str),
            Some("0.0"),
            "{test}: {measured:?}"
        );
        if test == "udp1472" {
            let lost = metric(&out, "lost_packets").unwrap();
            let sent = metric(&out, "packets_sent").unwrap();
            assert!(lost < 0.02 * sent, "{test}: {lost} of {sent} lost");
            // Received and lost are of the same datagrams, those sent after the sender's
            // mark, whenever the receiver marked its own end.
            let received = metric(&out, "packets_received").unwrap();
            assert_eq!(
                sent - received,
                lost,
                "{test}: {sent} sent, {received} received"
            );
            let bytes = metric(&out, "bytes_received").unwrap();
            assert_eq!(bytes, received * 1472.0, "{test}");
        }
        assert!(
            fact(&w, "net.method").contains("the first 0.6 s of each test are a warm-up"),
            "{}",
            fact(&w, "net.method")
        );
        w.cleanup();
    }
    let e = NetWorkload::from_params(&params(json!({"warmup": -1})))
        .err()
        .unwrap();
    assert!(format!("{e:#}").contains("--warmup 2"), "{e:#}");
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap().unwrap();
}

/// A test stopped during its warm-up measured nothing: its figures are missing with the
/// reason, not made of a few microseconds after a mark taken at the end (a CPU share of
/// noise, the tail's loss as the test's); the stop is flagged as any stop.
#[test]
fn a_test_stopped_in_its_warmup_has_no_figures() {
    let (addr, stop, h) = spawn_receiver(ServeOptions::default()).unwrap();
    for proto_ in [Proto::Tcp, Proto::Udp] {
        let spec = SendSpec {
            proto: proto_,
            payload: if proto_ == Proto::Tcp {
                DEFAULT_TCP_LEN
            } else {
                1472
            },
            warmup_s: 5.0,
            rate_bps: 1e8,
            ..tcp_spec(addr, 1.0, None)
        };
        let t0 = std::time::Instant::now();
        let stop_at = || t0.elapsed() > Duration::from_millis(300);
        let rep = sender::run(&spec, &AtomicU64::new(0), &stop_at, None).unwrap();
        assert!(rep.in_warmup && rep.interrupted, "{proto_:?}: {rep:?}");
        assert!(
            rep.warmup_sent[0].bytes > 0,
            "{proto_:?}: sent nothing in the warm-up"
        );
        let out = step_output(&spec, &rep);
        let why = out
            .missing
            .iter()
            .find(|m| m.name == "throughput_gbit_per_s");
        let why = why.unwrap_or_else(|| panic!("{proto_:?}: {:?}", out.missing));
        assert!(
            why.reason.contains("during its 5 s warm-up"),
            "{}",
            why.reason
        );
        assert!(out.metrics.is_empty(), "{proto_:?}: {:?}", out.metrics);
        assert!(out.flags.iter().any(|f| f.code == "stopped_early"));
    }
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap().unwrap();
}

/// `--udp-gso 64`: datagrams go as one GSO buffer per send(2), cut by the kernel at
/// most 44 to a send of 1472-byte datagrams (64 KiB); the receiver sees each with its own
/// sequence number, so count, loss and bytes are as with one send each, and pacing holds.
#[test]
fn udp_gso_sends_arrive_as_datagrams_with_their_sequence() {
    assert_eq!(sender::gso_segments(64, 1472), 44);
    assert_eq!(sender::gso_segments(64, 60), 64);
    assert_eq!(sender::gso_segments(8, 1472), 8);
    let (addr, stop, h) = spawn_receiver(ServeOptions::default()).unwrap();
    // 10 Mbit/s: about 21k datagrams/s at 60 B, which the receiver keeps up with on a
    // busy 2-CPU machine (at 50 Mbit/s it lost more than 5% beside parallel builds).
    let mut w = NetWorkload::from_params(&params(json!({
        "tests": ["udp"], "udp_payload": [1472, 60], "rate": "10M", "duration": 0.5,
        "interval": 0.1, "target": addr.to_string(), "udp_gso": 64
    })))
    .unwrap();
    let (_local, ctx) = one_host();
    w.prepare(&ctx).unwrap();
    assert!(fact(&w, "net.method").contains("UDP GSO buffer"));
    // What each test sent per send is said and stored, not the 64 asked for
    // (acceptance pass J, 9).
    assert!(
        fact(&w, "net.method").contains("so 44 of 1472 B, 64 of 60 B"),
        "{}",
        fact(&w, "net.method")
    );
    for (test, size, per_send) in [("udp1472", 1472.0, 44), ("udp60", 60.0, 64)] {
        let out = w.run_test(test, &ctx).unwrap();
        assert!(out.error.is_none(), "{test}: {:?}", out.error);
        assert_eq!(out.settings["udp_gso"], json!(per_send), "{test}");
        let pps = metric(&out, "packets_per_s").unwrap();
        let want = 10e6 / (8.0 * size);
        assert!(
            pps < want * 1.3 && pps > want * 0.3,
            "{test}: {pps} packets/s, want ~{want}"
        );
        // A datagram of a GSO send numbered as another would read 97% lost or more; a
        // receiver starved for 20 ms on a busy machine loses a few percent for real.
        assert!(
            metric(&out, "loss_pct").unwrap() < 50.0,
            "{test}: {:?}",
            out.metrics
        );
    }
    w.cleanup();
    for bad in [
        json!({"udp_gso": 1}),
        json!({"udp_gso": 65}),
        json!({"udp_gso": 8, "udp_batch": 8}),
    ] {
        assert!(
            NetWorkload::from_params(&params(bad.clone())).is_err(),
            "{bad}"
        );
    }
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap().unwrap();
}

/// `--udp-batch 32`: datagrams go 32 per sendmmsg(2), each with its own sequence number,
/// so the receiver's count, loss and bytes are as with one send(2) each; paced, the
/// batches keep the rate.
#[test]
fn udp_batched_sends_keep_sequence_rate_and_counts() {
    let (addr, stop, h) = spawn_receiver(ServeOptions::default()).unwrap();
    let mut w = NetWorkload::from_params(&params(json!({
        "tests": ["udp"], "udp_payload": [1472], "rate": "50M", "duration": 0.5,
        "interval": 0.1, "target": addr.to_string(), "udp_batch": 32
    })))
    .unwrap();
    let (_local, ctx) = one_host();
    w.prepare(&ctx).unwrap();
    assert!(fact(&w, "net.method").contains("sendmmsg() of 32 datagrams"));
    let out = w.run_test("udp1472", &ctx).unwrap();
    assert!(out.error.is_none(), "{:?}", out.error);
    let pps = metric(&out, "packets_per_s").unwrap();
    let want = 50e6 / (8.0 * 1472.0);
    assert!(
        pps < want * 1.3 && pps > want * 0.3,
        "{pps} packets/s, want ~{want}"
    );
    // A gap in the sequence numbers shows as loss: 31 of every 32 datagrams (97%) where
    // a batch shared one number. A receiver starved for 20 ms on a busy machine loses a
    // few percent for real.
    assert!(
        metric(&out, "loss_pct").unwrap() < 50.0,
        "{:?}",
        out.metrics
    );
    w.cleanup();
    assert!(NetWorkload::from_params(&params(json!({"udp_batch": 0}))).is_err());
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap().unwrap();
}

/// A receiver stopped mid-run sends no final report: what it reported is kept, and the
/// loss over the test is missing with the reason (what was sent after its last interval
/// may have arrived), not everything unreported counted as lost.
#[test]
fn udp_loss_is_unknown_when_the_receiver_stops_mid_run() {
    let (addr, stop, h) = spawn_receiver(ServeOptions::default()).unwrap();
    let mut w = NetWorkload::from_params(&params(json!({
        "tests": ["udp1472"], "rate": "50M", "duration": 1.5, "interval": 0.1,
        "target": addr.to_string()
    })))
    .unwrap();
    let (_local, ctx) = one_host();
    w.prepare(&ctx).unwrap();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        stop.store(true, Ordering::Relaxed);
    });
    let t0 = std::time::Instant::now();
    let out = w.run_test("udp1472", &ctx).unwrap();
    w.cleanup();
    killer.join().unwrap();
    h.join().unwrap().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert!(
        out.error.is_some(),
        "a stopped receiver must mark the result"
    );
    let sent = metric(&out, "packets_sent").unwrap();
    let recv = metric(&out, "packets_received").unwrap();
    assert!(sent > recv && recv > 0.0, "sent {sent} received {recv}");
    assert!(metric(&out, "loss_pct").is_none(), "{:?}", out.metrics);
    let why = out.missing.iter().find(|m| m.name == "loss_pct");
    assert!(
        why.is_some_and(|m| m.reason.contains("no final report")),
        "{:?}",
        out.missing
    );
    assert!(out.missing.iter().any(|m| m.name == "receiver_cpu_pct"));
}

#[test]
fn unreachable_receiver_is_a_clear_error() {
    let port = engine::launch::free_port().unwrap();
    let mut w = NetWorkload::from_params(&params(json!({
        "tests": ["tcp"], "duration": 0.2, "target": format!("127.0.0.1:{port}")
    })))
    .unwrap();
    let (_local, ctx) = one_host();
    // Before any test: the receiver is looked for as the point is prepared.
    let e = w.prepare(&ctx).unwrap_err();
    w.cleanup();
    let s = format!("{e:#}");
    assert!(
        s.contains("cannot reach the receiver") && s.contains("rackbench net serve"),
        "{s}"
    );
}

/// A test asked for twice runs once, where first asked for (it would be stored twice
/// under one name and repetition); the UDP send modes without a udp test are refused, as
/// --zerocopy without tcp is.
#[test]
fn a_test_asked_for_twice_runs_once_and_udp_modes_need_a_udp_test() {
    let tests = |v: serde_json::Value| NetWorkload::from_params(&params(v)).unwrap().tests();
    assert_eq!(
        tests(json!({"tests": ["udp", "udp1472", "tcp", "TCP"]})),
        ["udp1472", "udp60", "tcp"]
    );
    assert_eq!(
        tests(json!({"tests": ["udp", "udp01472"], "udp_payload": [1472]})),
        ["udp1472"]
    );
    // A payload listed twice is refused: the settings stored both.
    let e = NetWorkload::from_params(&params(
        json!({"tests": ["udp"], "udp_payload": [1472, 1472]}),
    ))
    .err()
    .map(|e| format!("{e:#}"))
    .unwrap_or_default();
    assert!(e.starts_with("--udp-payload lists 1472 twice"), "{e}");
    for (v, flag) in [
        (json!({"tests": ["tcp"], "udp_gso": 8}), "--udp-gso"),
        (json!({"tests": ["tcp"], "udp_batch": 32}), "--udp-batch"),
    ] {
        let err = NetWorkload::from_params(&params(v))
            .err()
            .map(|e| format!("{e:#}"))
            .unwrap_or_default();
        assert!(
            err.contains("applies to the udp tests") && err.contains(flag),
            "{err}"
        );
    }
    assert_eq!(
        tests(json!({"tests": ["tcp", "udp60"], "udp_gso": 8})),
        ["tcp", "udp60"]
    );
}

/// `--interval 5 --duration 1` was run and stored interval=5: an interval given longer
/// than the test is refused; the default beside a short test is not.
#[test]
fn an_interval_longer_than_the_test_is_refused() {
    let e = NetWorkload::from_params(&params(json!({"interval": 5, "duration": 1})))
        .err()
        .map(|e| format!("{e:#}"))
        .unwrap_or_default();
    assert!(
        e.contains("`interval` = 5 s is longer than `duration` = 1 s") && e.contains("at most 1"),
        "{e}"
    );
    assert!(NetWorkload::from_params(&params(json!({"interval": 1, "duration": 1}))).is_ok());
    assert!(NetWorkload::from_params(&params(json!({"duration": 0.5}))).is_ok());
}

#[test]
fn oversized_udp_payload_is_a_clear_error() {
    let e = NetWorkload::from_params(&params(json!({"tests": ["udp"], "udp_payload": [65508]})))
        .err()
        .unwrap();
    assert!(e.to_string().contains("65507"), "{e}");
    let e = NetWorkload::from_params(&params(json!({"tests": ["udp70000"]})))
        .err()
        .unwrap();
    assert!(e.to_string().contains("larger than a UDP datagram"), "{e}");
    let e = NetWorkload::from_params(&params(json!({"stream": 2})))
        .err()
        .unwrap();
    assert!(e.to_string().contains("stream"), "{e}");
}

/// A one-second, one-stream UDP test of 1472 B datagrams (for reports made by hand).
fn udp_spec() -> SendSpec {
    SendSpec {
        target: "x:1".into(),
        proto: Proto::Udp,
        payload: 1472,
        duration_s: 1.0,
        warmup_s: 0.0,
        streams: 1,
        interval_s: 1.0,
        rate_bps: 0.0,
        sender_cpus: vec![],
        receiver_cpus: vec![],
        congestion: None,
        window: None,
        udp_batch: 1,
        udp_gso: 0,
        zerocopy: false,
    }
}

/// `--rate`: the target over all streams is stored; a stream that sent under 95% of its
/// rate over its own time is flagged, judged on its own clock (a stream that started late
/// is not short), and a test stopped early or failed is not (it has its own flag).
#[test]
fn a_stream_below_its_rate_is_flagged_on_its_own_clock() {
    let spec = SendSpec {
        rate_bps: 1e9,
        streams: 2,
        ..udp_spec()
    };
    let report = |bytes: [u64; 2], secs: [f64; 2]| TestReport {
        sent: bytes
            .iter()
            .map(|&b| proto::SentStats {
                bytes: b,
                packets: b / 1472,
            })
            .collect(),
        stream_send_s: secs.to_vec(),
        ..TestReport::default()
    };
    let flag = |rep: &TestReport| {
        let out = step_output(&spec, rep);
        assert_eq!(metric(&out, "target_gbit_per_s"), Some(2.0));
        out.flags
            .into_iter()
            .find(|f| f.code == "below_target_rate")
            .map(|f| f.message)
    };
    // Both at 1 Gbit/s, one over a shorter time (it started 50 ms late): not short.
    assert_eq!(flag(&report([125_000_000, 118_750_000], [1.0, 0.95])), None);
    // One at half its rate: flagged, naming it and its figure.
    let half = report([125_000_000, 62_500_000], [1.0, 1.0]);
    let msg = flag(&half).expect("a stream at half its rate is flagged");
    assert!(
        msg.contains("stream 1 sent 0.500 Gbit/s of the 1.000 asked of each"),
        "{msg}"
    );
    // Stopped early or failed: no such flag.
    assert_eq!(
        flag(&TestReport {
            interrupted: true,
            ..half.clone()
        }),
        None
    );
    assert_eq!(
        flag(&TestReport {
            error: Some("gone".into()),
            ..half
        }),
        None
    );
    // Without a rate: neither the target nor the flag.
    let out = step_output(&udp_spec(), &report([1, 1], [1.0, 1.0]));
    assert_eq!(metric(&out, "target_gbit_per_s"), None);
    assert!(out.flags.iter().all(|f| f.code != "below_target_rate"));
}

/// A rate below one write over the test is flagged: `--rate 1` sent one 128 KiB write in
/// 2 s, 524,288 bit/s against the 1 asked, unflagged. A stream a little over its rate (a
/// write's worth) is not.
#[test]
fn a_stream_far_above_its_rate_is_flagged() {
    let spec = SendSpec {
        rate_bps: 1.0,
        streams: 1,
        ..udp_spec()
    };
    let report = |bytes: u64| TestReport {
        sent: vec![proto::SentStats { bytes, packets: 1 }],
        stream_send_s: vec![2.0],
        ..TestReport::default()
    };
    let out = step_output(&spec, &report(131_072));
    let f = out
        .flags
        .iter()
        .find(|f| f.code == "above_target_rate")
        .expect("flagged");
    assert!(
        f.message
            .starts_with("stream 0 sent 524288 bit/s where 1 bit/s was asked"),
        "{}",
        f.message
    );
    let at_rate = SendSpec {
        rate_bps: 1e6,
        ..spec
    };
    let out = step_output(&at_rate, &report(262_144));
    assert!(out.flags.iter().all(|f| f.code != "above_target_rate"));
}

#[test]
fn metrics_from_a_synthetic_report() {
    let spec = udp_spec();
    let started = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let rep = TestReport {
        sent: vec![proto::SentStats {
            bytes: 1000 * 1472,
            packets: 1000,
        }],
        stream_send_s: vec![1.0],
        send_span: Some((started, started + Duration::from_secs(1))),
        sender_cpu: proto::CpuUsage {
            user_s: 0.1,
            system_s: 0.4,
        },
        received: vec![proto::StreamStats {
            bytes: 900 * 1472,
            packets: 900,
            lost: 100,
            out_of_order: 0,
            jitter_ms: 0.02,
            jitter_samples: 899,
        }],
        receive_duration_s: 1.0,
        receiver_cpu: Some(proto::CpuUsage {
            user_s: 0.05,
            system_s: 0.25,
        }),
        receiver_cpu_span_s: None,
        intervals: vec![],
        warmup_sent: vec![],
        warmup_received: vec![],
        in_warmup: false,
        error: None,
        interrupted: false,
        send_errors: 0,
        loss_unknown: None,
        congestion: None,
        tcp: None,
        checkpoint_s: None,
        sender_process: proto::ProcessCpu {
            cpu: proto::CpuUsage {
                user_s: 0.2,
                system_s: 0.4,
            },
            span_s: 1.2,
            process: 1,
        },
        receiver_process: Some(proto::ProcessCpu {
            cpu: proto::CpuUsage {
                user_s: 0.1,
                system_s: 0.3,
            },
            span_s: 1.0,
            process: 2,
        }),
        receiver_pin_error: None,
    };
    let out = step_output(&spec, &rep);
    // The load is the sending, on the sender's clock.
    assert_eq!(
        out.measured,
        vec![(started, started + Duration::from_secs(1))]
    );
    let by_end = |out: &engine::StepOutput, end: &str| {
        out.metrics
            .iter()
            .find(|m| {
                m.name == "process_cpu_pct" && m.labels.get("end").map(String::as_str) == Some(end)
            })
            .map(|m| m.value)
    };
    // Two processes: each over its own span; together per Gbit/s.
    assert!((by_end(&out, "sender").unwrap() - 50.0).abs() < 1e-9);
    assert!((by_end(&out, "receiver").unwrap() - 40.0).abs() < 1e-9);
    let gbit = 900.0 * 1472.0 * 8.0 / 1e9;
    assert!((metric(&out, "process_cpu_pct_per_gbit").unwrap() - 90.0 / gbit).abs() < 1e-6);
    // One process for both ends: one figure, not counted twice.
    let mut one = rep.clone();
    one.receiver_process.as_mut().unwrap().process = 1;
    let o = step_output(&spec, &one);
    assert!((by_end(&o, "both").unwrap() - 50.0).abs() < 1e-9);
    assert!(by_end(&o, "sender").is_none() && metric(&o, "process_cpu_pct_per_gbit").is_none());
    assert!((metric(&out, "loss_pct").unwrap() - 10.0).abs() < 1e-9);
    assert!((metric(&out, "packets_per_s").unwrap() - 900.0).abs() < 1e-9);
    assert!((metric(&out, "sender_cpu_pct").unwrap() - 50.0).abs() < 1e-9);
    assert!((metric(&out, "receiver_cpu_pct").unwrap() - 30.0).abs() < 1e-9);
    let gbit = 900.0 * 1472.0 * 8.0 / 1e9;
    assert!((metric(&out, "throughput_gbit_per_s").unwrap() - gbit).abs() < 1e-12);
    assert!((metric(&out, "cpu_pct_per_gbit").unwrap() - 80.0 / gbit).abs() < 1e-6);
    assert_eq!(out.headline, "throughput_gbit_per_s");
    // At a checkpoint: more sent by then than had reached the receiver's last interval;
    // the loss is the gaps it saw (100 of 1000), not sent less received, and what
    // either end reads only at its end is missing with why, never 0.
    let mut ckpt = rep.clone();
    ckpt.sent[0] = proto::SentStats {
        bytes: 1500 * 1472,
        packets: 1500,
    };
    ckpt.receiver_cpu = None;
    ckpt.receiver_process = None;
    ckpt.checkpoint_s = Some(1.0);
    let o = step_output(&spec, &ckpt);
    assert!((metric(&o, "loss_pct").unwrap() - 10.0).abs() < 1e-9);
    assert_eq!(metric(&o, "lost_packets"), Some(100.0));
    for name in ["sender_cpu_pct", "receiver_cpu_pct", "cpu_pct_per_gbit"] {
        assert!(metric(&o, name).is_none(), "{name}");
        assert!(
            o.missing
                .iter()
                .any(|m| m.name == name && m.reason.contains("checkpoint")),
            "{name}: {:?}",
            o.missing
        );
    }
    let partial = o.flags.iter().find(|f| f.code == "partial").unwrap();
    assert!(
        partial
            .message
            .contains("udp1472 test did not finish (rackbench was killed, or the machine stopped): measured until a checkpoint at 1.0 s of"),
        "{}",
        partial.message
    );
    assert!(out.flags.iter().all(|f| f.code != "partial"));
    // The receiver's CPU over the span it was counted over when it says which (from its
    // mark to the sender's end), not over the counts' span.
    let mut spanned = rep.clone();
    spanned.receiver_cpu_span_s = Some(1.5);
    let o = step_output(&spec, &spanned);
    assert!((metric(&o, "receiver_cpu_pct").unwrap() - 20.0).abs() < 1e-9);
    assert!((metric(&o, "throughput_gbit_per_s").unwrap() - gbit).abs() < 1e-12);
    // A receiver still in its warm-up when the sender finished: its CPU is missing, and
    // a TCP test's counts too (a UDP test's datagrams carry the sender's mark).
    let missing = |o: &engine::StepOutput, name: &str| {
        o.missing
            .iter()
            .find(|m| m.name == name)
            .map(|m| m.reason.clone())
            .unwrap_or_default()
    };
    let mut warm = rep.clone();
    warm.receiver_cpu_span_s = Some(0.0);
    warm.receiver_process.as_mut().unwrap().span_s = 0.0;
    let o = step_output(&spec, &warm);
    assert!(missing(&o, "receiver_cpu_pct").contains("still in its warm-up"));
    assert!(missing(&o, "process_cpu_pct").contains("still in its warm-up"));
    assert!(metric(&o, "receiver_cpu_pct").is_none() && metric(&o, "bytes_received").is_some());
    warm.receive_duration_s = 0.0;
    let o = step_output(&tcp_spec("127.0.0.1:9".parse().unwrap(), 1.0, None), &warm);
    assert!(missing(&o, "bytes_received").contains("still in its warm-up"));
    assert!(missing(&o, "throughput_gbit_per_s").contains("still in its warm-up"));
    assert!(
        metric(&o, "bytes_received").is_none() && metric(&o, "throughput_gbit_per_s").is_none()
    );
    assert!(metric(&out, "retransmits").is_none());
    assert!(out.missing.iter().all(|m| m.name != "retransmits"));

    // TCP: the sender's kernel counters over the test and per interval, or for each the
    // reason they could not be read.
    let mut tcp = rep.clone();
    tcp.tcp = Some(Ok(tcpinfo::TcpStats {
        retransmits: 7,
        rtt_mean_us: 12.5,
        rtt_min_us: None,
        rtt_max_us: 40,
        snd_cwnd_max_bytes: 1 << 20,
    }));
    tcp.intervals = vec![sender::IntervalReport {
        start_s: 0.0,
        end_s: 1.0,
        received: rep.received.clone(),
        retransmits: Some(3),
        warmup: false,
    }];
    let o = step_output(&spec, &tcp);
    assert_eq!(metric(&o, "retransmits"), Some(7.0));
    assert_eq!(metric(&o, "rtt_mean_ns"), Some(12_500.0));
    assert_eq!(metric(&o, "rtt_max_ns"), Some(40_000.0));
    assert_eq!(metric(&o, "snd_cwnd_max_bytes"), Some(1048576.0));
    assert!(o
        .missing
        .iter()
        .any(|m| m.name == "rtt_min_ns" && m.reason.contains("no RTT was read")));
    assert!(o.metrics.iter().any(|m| m.name == "retransmits"
        && m.value == 3.0
        && m.labels.get("interval_start_s").map(String::as_str) == Some("0.0")));
    tcp.tcp = Some(Err("reading TCP_INFO: refused".into()));
    let o = step_output(&spec, &tcp);
    assert!(metric(&o, "retransmits").is_none());
    let said = o.missing.iter().filter(|m| m.reason.contains("refused"));
    assert_eq!(said.count(), 5);
}

/// What was not measured is missing, not 0 or averaged in: a stream without datagrams has
/// no jitter, a sender that sent nothing no rate, and without the receiver's final report
/// the loss over the test is unknown (what was sent after its last interval may have
/// arrived). Intervals shorter than 0.1 s keep distinct labels.
#[test]
fn what_was_not_measured_is_missing_not_zero() {
    let spec = SendSpec {
        duration_s: 0.2,
        streams: 2,
        interval_s: 0.05,
        ..udp_spec()
    };
    let stream = |packets: u64, jitter_ms: f64| proto::StreamStats {
        bytes: packets * 1472,
        packets,
        lost: 0,
        out_of_order: 0,
        jitter_ms,
        jitter_samples: packets.saturating_sub(1),
    };
    // Four 0.05 s intervals; the second stream gets nothing (a starved stream).
    let intervals: Vec<sender::IntervalReport> = (0..4)
        .map(|i| sender::IntervalReport {
            start_s: 0.05 * i as f64 + 0.0001 * i as f64,
            end_s: 0.05 * (i + 1) as f64 + 0.0001 * i as f64,
            received: vec![stream(100, 0.8), stream(0, 0.0)],
            retransmits: None,
            warmup: false,
        })
        .collect();
    let rep = TestReport {
        sent: vec![
            proto::SentStats {
                bytes: 500 * 1472,
                packets: 500,
            },
            proto::SentStats {
                bytes: 500 * 1472,
                packets: 500,
            },
        ],
        stream_send_s: vec![0.25, 0.25],
        received: vec![stream(400, 0.8), stream(0, 0.0)],
        receive_duration_s: 0.2,
        intervals,
        ..TestReport::default()
    };
    let out = step_output(&spec, &rep);
    assert_eq!(metric(&out, "jitter_ms"), Some(0.8));
    let jitters: Vec<f64> = out
        .metrics
        .iter()
        .filter(|m| m.name == "jitter_ms" && m.labels.contains_key("interval_start_s"))
        .map(|m| m.value)
        .collect();
    assert_eq!(jitters, vec![0.8; 4]);
    let mut labels: Vec<&str> = out
        .metrics
        .iter()
        .filter(|m| m.name == "packets_per_s")
        .filter_map(|m| m.labels.get("interval_start_s").map(String::as_str))
        .collect();
    assert_eq!(labels, ["0.00", "0.05", "0.10", "0.15"]);
    labels.dedup();
    assert_eq!(labels.len(), 4);
    // With the final report, loss is what the receiver counted: 600 of 1000.
    let mut counted = rep.clone();
    counted.received[1].lost = 500;
    counted.received[0].lost = 100;
    assert_eq!(
        metric(&step_output(&spec, &counted), "loss_pct"),
        Some(60.0)
    );

    // Without it: no loss figure at all, and the reason says why.
    let mut cut = counted.clone();
    cut.loss_unknown = Some("the receiver sent no final report".into());
    let o = step_output(&spec, &cut);
    assert!(metric(&o, "loss_pct").is_none() && metric(&o, "lost_packets").is_none());
    for name in ["loss_pct", "lost_packets"] {
        assert!(
            o.missing
                .iter()
                .any(|m| m.name == name && m.reason.contains("final report")),
            "{name}: {:?}",
            o.missing
        );
    }

    // No stream with two datagrams: jitter is missing, not 0.
    let mut none = rep.clone();
    none.received = vec![stream(1, 0.0), stream(0, 0.0)];
    none.intervals.clear();
    let o = step_output(&spec, &none);
    assert!(metric(&o, "jitter_ms").is_none());
    assert!(o.missing.iter().any(|m| m.name == "jitter_ms"));
    // Nor is it 0 for a stream whose datagrams all came from one GSO send (one send
    // time, no difference of transit times), however many they were: it is left out
    // of the mean, overall and per interval.
    let mut one_send = rep.clone();
    let gso = proto::StreamStats {
        jitter_samples: 0,
        ..stream(40, 0.0)
    };
    one_send.received[1] = gso.clone();
    for iv in &mut one_send.intervals {
        iv.received[1] = gso.clone();
    }
    let o = step_output(&spec, &one_send);
    assert_eq!(metric(&o, "jitter_ms"), Some(0.8));
    assert!(o
        .metrics
        .iter()
        .filter(|m| m.name == "jitter_ms")
        .all(|m| m.value == 0.8));
    one_send.received[0].jitter_samples = 0;
    let o = step_output(&spec, &one_send);
    assert!(metric(&o, "jitter_ms").is_none());
    assert!(o.missing.iter().any(|m| m.name == "jitter_ms"));

    // Nothing sent: no sender rate (a 0 would read as a measured stall). The sender
    // times its threads whatever they sent, so the duration is not 0.
    let mut silent = none.clone();
    silent.sent = vec![proto::SentStats::default(); 2];
    let o = step_output(&spec, &silent);
    let sender_rate = o.metrics.iter().any(|m| {
        m.name == "throughput_gbit_per_s"
            && m.labels.get("end").map(String::as_str) == Some("sender")
    });
    assert!(!sender_rate);
    assert!(o
        .missing
        .iter()
        .any(|m| m.name == "throughput_gbit_per_s{end=sender}"));
}

/// A UDP test whose streams sent no datagram (each failed at its first send) measured no
/// rate: throughput and packets/s are missing with why, not 0, and the test is invalid
/// and failed, however long the receiver's span ran.
#[test]
fn a_test_that_sent_nothing_has_no_rate_and_is_invalid() {
    let why = "UDP stream 0: a send failed, so the stream stopped sending: EINVAL";
    let rep = TestReport {
        sent: vec![proto::SentStats::default()],
        stream_send_s: vec![0.001],
        received: vec![proto::StreamStats::default()],
        receive_duration_s: 1.0,
        receiver_cpu: Some(proto::CpuUsage::default()),
        error: Some(why.into()),
        ..TestReport::default()
    };
    let out = step_output(&udp_spec(), &rep);
    assert!(
        out.metrics
            .iter()
            .all(|m| m.name != "throughput_gbit_per_s" && m.name != "packets_per_s"),
        "{:?}",
        out.metrics
    );
    for name in [
        "throughput_gbit_per_s",
        "throughput_gbit_per_s{end=sender}",
        "packets_per_s",
        "packets_per_s{end=sender}",
    ] {
        assert!(
            out.missing
                .iter()
                .any(|m| m.name == name && m.reason.contains("sent no datagram (UDP stream 0")),
            "{name}: {:?}",
            out.missing
        );
    }
    assert!(out
        .flags
        .iter()
        .any(|f| f.code == "zero_throughput" && f.severity == model::Severity::Invalid));
    assert_eq!(out.error.as_deref(), Some(why));
    // The counts are counts: none sent, none received.
    assert_eq!(metric(&out, "packets_sent"), Some(0.0));
}

/// A sender played by hand on `addr`'s receiver: `start` of a test of `streams` streams
/// of `payload` bytes (1000 s, so that only the test ends it), with `window` and
/// `interval_s`, and its `ready`: the control connection, its reader and the data ports.
fn start_by_hand(
    addr: std::net::SocketAddr,
    (proto_, payload, streams): (Proto, usize, usize),
    window: Option<usize>,
    interval_s: f64,
) -> (std::net::TcpStream, proto::LineReader, Vec<u16>) {
    let mut ctl = std::net::TcpStream::connect(addr).unwrap();
    let mut rd = proto::LineReader::new(ctl.try_clone().unwrap());
    let start = proto::Msg::Start {
        version: proto::PROTOCOL_VERSION,
        proto: proto_,
        payload,
        duration_s: 1000.0,
        streams,
        interval_s,
        cpus: vec![],
        congestion: None,
        window,
        paced: false,
        warmup_s: 0.0,
    };
    proto::send(&mut ctl, &start).unwrap();
    let soon = std::time::Instant::now() + Duration::from_secs(5);
    let Some(proto::Msg::Ready { data_ports }) = rd.next(soon).unwrap() else {
        panic!("no `ready`");
    };
    (ctl, rd, data_ports)
}

/// A UDP test's sender played by hand on `addr`'s receiver: `start`, `ready`, `go`, then
/// one stream of 100-byte datagrams at `interval_s`: the control connection, its reader
/// and the data socket, connected.
fn udp_by_hand(
    addr: std::net::SocketAddr,
    interval_s: f64,
) -> (std::net::TcpStream, proto::LineReader, std::net::UdpSocket) {
    let (mut ctl, rd, data_ports) = start_by_hand(addr, (Proto::Udp, 100, 1), None, interval_s);
    let data = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    data.connect(("127.0.0.1", data_ports[0])).unwrap();
    proto::send(&mut ctl, &proto::Msg::Go).unwrap();
    (ctl, rd, data)
}

/// Datagram `seq` of the test proper (it carries the sender's mark), 100 bytes.
fn send_datagram(data: &std::net::UdpSocket, seq: u64) {
    let mut d = [0u8; 100];
    proto::put_udp_header(&mut d, seq | proto::MEASURED_SEQ_BIT, server::wall_ns());
    data.send(&d).unwrap();
}

/// A datagram that arrives an interval after the gap it left is taken off the loss of
/// the interval it arrives in (below 0 there, as iperf3 counts an interval's loss), not
/// left lost in the first and clipped in the second: the intervals' loss adds up to the
/// test's.
#[test]
fn a_late_datagram_is_taken_off_the_loss_of_the_interval_it_arrives_in() {
    let once = ServeOptions {
        once: true,
        ..ServeOptions::default()
    };
    let (addr, _stop, h) = spawn_receiver(once).unwrap();
    let (mut ctl, mut rd, data) = udp_by_hand(addr, 0.1);
    let mut losses = Vec::new();
    // The reports up to the first that `pred` takes (in 5 s), each interval's loss kept.
    let mut read_until = |rd: &mut proto::LineReader, pred: &dyn Fn(&proto::Msg) -> bool| {
        let until = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            let Some(m) = rd.next(until).unwrap() else {
                panic!("not reported in 5 s; the intervals lost {losses:?}");
            };
            if let proto::Msg::Interval { streams, .. } = &m {
                losses.push(streams[0].lost);
            }
            if pred(&m) {
                return m;
            }
        }
    };
    let lost_is = |n: i64| move |m: &proto::Msg| matches!(m, proto::Msg::Interval { streams, .. } if streams[0].lost == n);
    // 1 goes missing: its interval counts it lost.
    send_datagram(&data, 0);
    send_datagram(&data, 2);
    read_until(&mut rd, &lost_is(1));
    // It arrives in a later interval, with the rest.
    send_datagram(&data, 1);
    send_datagram(&data, 3);
    read_until(&mut rd, &lost_is(-1));
    let done = proto::Msg::Done {
        sent: vec![proto::SentStats {
            bytes: 400,
            packets: 4,
        }],
        warmup: vec![],
    };
    proto::send(&mut ctl, &done).unwrap();
    let result = read_until(&mut rd, &|m| matches!(m, proto::Msg::Result { .. }));
    h.join().unwrap().unwrap();
    let proto::Msg::Result { streams, .. } = result else {
        unreachable!()
    };
    assert_eq!((streams[0].packets, streams[0].lost), (4, 0));
    assert_eq!(losses.iter().sum::<i64>(), 0, "{losses:?}");
}

/// A receiver that gives up on a test (here: a message out of turn) ends the test's data
/// threads before it returns: the UDP one, which reads until told to end, has let its
/// socket go, so its port is free again.
#[test]
fn a_receiver_that_gives_up_ends_its_data_threads() {
    let once = ServeOptions {
        once: true,
        ..ServeOptions::default()
    };
    let (addr, _stop, h) = spawn_receiver(once).unwrap();
    let (mut ctl, _rd, data) = udp_by_hand(addr, 0.1);
    send_datagram(&data, 0);
    proto::send(&mut ctl, &proto::Msg::Go).unwrap();
    let err = h.join().unwrap().unwrap_err();
    assert!(
        format!("{err:#}").contains("unexpected control message"),
        "{err:#}"
    );
    let port = data.peer_addr().unwrap().port();
    let again = std::net::UdpSocket::bind(("127.0.0.1", port));
    assert!(again.is_ok(), "port {port} still held: {again:?}");
}

/// A receiver that stops answering once its test has started (its host froze): it takes
/// `start` and `go` and never reports, holding the connection until `held` is dropped.
fn frozen_receiver(
    held: std::sync::mpsc::Receiver<()>,
) -> (std::net::SocketAddr, Arc<std::sync::atomic::AtomicBool>) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    // Set when the sender's done came: the sender is then waiting for the report.
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = done.clone();
    std::thread::spawn(move || {
        let (c, _) = l.accept().unwrap();
        let mut out = c.try_clone().unwrap();
        let mut rd = proto::LineReader::new(c);
        let soon = || std::time::Instant::now() + Duration::from_secs(60);
        let _start = rd.next(soon());
        let data = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let data_ports = vec![data.local_addr().unwrap().port()];
        proto::send(&mut out, &proto::Msg::Ready { data_ports }).unwrap();
        let _go = rd.next(soon());
        let _done = rd.next(soon());
        seen.store(true, Ordering::Relaxed);
        let _ = held.recv();
    });
    (addr, done)
}

/// A test stopped while the sender waits for a frozen receiver's final report ends at
/// once, and one stopped mid-run (Ctrl-C 0.3 s into 30 s) waits only the receiver's
/// own wait and a margin, not the test's deadline: either keeps the intervals' sums and
/// says why there was no final report.
#[test]
fn the_wait_for_a_frozen_receivers_report_is_bounded_and_sees_a_stop() {
    let (hold, held) = std::sync::mpsc::channel();
    let (addr, done) = frozen_receiver(held);
    let spec = SendSpec {
        target: addr.to_string(),
        duration_s: 0.3,
        rate_bps: 1e6,
        ..udp_spec()
    };
    // Stopped once the receiver has the sender's done: in the wait for the report,
    // however long the setup took on a busy machine.
    let stopped_at = std::sync::OnceLock::new();
    let stop = || {
        let now = done.load(Ordering::Relaxed);
        if now {
            stopped_at.get_or_init(std::time::Instant::now);
        }
        now
    };
    let rep = sender::run(&spec, &AtomicU64::new(0), &stop, None).unwrap();
    let after = stopped_at.get().expect("the stop was seen").elapsed();
    assert!(after < Duration::from_secs(2), "{after:?} after the stop");
    assert!(!rep.interrupted && rep.receiver_cpu.is_none());
    let why = rep.error.unwrap_or_default();
    assert!(why.contains("stopped while waiting"), "{why}");
    assert!(rep.loss_unknown.is_some());
    drop(hold);

    let (hold, held) = std::sync::mpsc::channel();
    let spec = SendSpec {
        target: frozen_receiver(held).0.to_string(),
        duration_s: 30.0,
        ..spec
    };
    let t0 = std::time::Instant::now();
    let stop = || t0.elapsed() > Duration::from_millis(300);
    let rep = sender::run(&spec, &AtomicU64::new(0), &stop, None).unwrap();
    let took = t0.elapsed();
    // The receiver's 2 s for its queued datagrams and the 5 s margin.
    assert!(
        took > Duration::from_secs(7) && took < Duration::from_secs(10),
        "{took:?}"
    );
    assert!(rep.interrupted);
    let why = rep.error.unwrap_or_default();
    assert!(why.contains("none came within 7 s"), "{why}");
    assert!(why.contains("sum of its interval reports"), "{why}");
    drop(hold);
}

/// Intervals are labelled by the start the receiver scheduled, not the one measured: a
/// tick 60 ms late (the third interval from 0.26 s, the fourth from 0.30 s) gave two
/// intervals the label 0.3. Warm-up starts halfway between two labels keep apart too.
#[test]
fn interval_labels_are_the_scheduled_starts() {
    let spec = SendSpec {
        interval_s: 0.1,
        ..udp_spec()
    };
    let iv = |start_s: f64, end_s: f64, warmup: bool| sender::IntervalReport {
        start_s,
        end_s,
        received: vec![proto::StreamStats {
            bytes: 1472,
            packets: 1,
            ..proto::StreamStats::default()
        }],
        retransmits: None,
        warmup,
    };
    let labels = |spec: &SendSpec, intervals: Vec<sender::IntervalReport>| -> Vec<String> {
        let rep = TestReport {
            sent: vec![proto::SentStats {
                bytes: 1472,
                packets: 1,
            }],
            stream_send_s: vec![1.0],
            intervals,
            ..TestReport::default()
        };
        step_output(spec, &rep)
            .metrics
            .iter()
            .filter(|m| m.name == "packets_per_s")
            .filter_map(|m| m.labels.get("interval_start_s").cloned())
            .collect()
    };
    let late = [0.0, 0.1, 0.26, 0.30, 0.4, 0.5]
        .windows(2)
        .map(|w| iv(w[0], w[1], false))
        .collect();
    assert_eq!(labels(&spec, late), ["0.0", "0.1", "0.2", "0.3", "0.4"]);
    // A warm-up of 0.35 s at 0.1 s intervals: starts at -0.35, -0.25, -0.15 and -0.05.
    let warm = SendSpec {
        warmup_s: 0.35,
        ..spec
    };
    let mut intervals: Vec<_> = [-0.35, -0.25, -0.15, -0.05, 0.0]
        .windows(2)
        .map(|w| iv(w[0], w[1], true))
        .collect();
    intervals.push(iv(0.0, 0.1, false));
    assert_eq!(
        labels(&warm, intervals),
        ["-0.4", "-0.3", "-0.2", "-0.1", "0.0"]
    );
}

#[test]
fn receiver_starts_on_the_sut_and_the_sender_runs_on_the_load_generator() {
    let (addr, stop, h) = spawn_receiver(ServeOptions::default()).unwrap();
    let (rx, tx) = (host("rx"), host("tx"));
    let ctx = ctx_on(&rx, &[&tx]);
    let mut w = NetWorkload::from_params(&params(json!({
        "tests": ["tcp"], "duration": 0.3, "interval": 0.1, "target": addr.to_string()
    })))
    .unwrap();
    w.prepare(&ctx).unwrap();
    // The service is held by rx (the first service a host starts is #1), not by tx.
    assert_eq!(rx.service_exited(1).unwrap(), None);
    assert!(tx.service_exited(1).is_err());
    assert_eq!(w.target(), Some(addr.to_string()));
    let out = w.run_test("tcp", &ctx).unwrap();
    // The sender's host is the one its driver report names.
    assert_eq!(fact(&w, "net.sender"), "rackbench's net sender on tx");
    w.cleanup();
    assert!(
        rx.service_exited(1).is_err(),
        "cleanup stops the service on rx"
    );
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap().unwrap();
    assert!(out.error.is_none(), "{:?}", out.error);
    assert!(out.flags.is_empty(), "{:?}", out.flags);
    assert_eq!(metric(&out, "bytes_sent"), metric(&out, "bytes_received"));
    assert!(metric(&out, "sender_cpu_pct").is_some());
    assert!(metric(&out, "receiver_cpu_pct").is_some());
}

/// A matrix sends to each receiver from every other host in turn, and the runner adds
/// `disclosure()` to the receiver's: the senders' facts there (their sysctls, congestion
/// control, window) read the last sender's as every sender's. Each sender's are its own
/// host's, under its name.
#[test]
fn each_senders_facts_are_its_own_hosts_not_the_receivers() {
    let (addr, stop, h) = spawn_receiver(ServeOptions::default()).unwrap();
    let rx = host("rx");
    for sender in ["tx1", "tx2"] {
        let tx = host(sender);
        let ctx = ctx_on(&rx, &[&tx]);
        let mut w = NetWorkload::from_params(&params(json!({
            "tests": ["tcp"], "window": 65536, "target": addr.to_string()
        })))
        .unwrap();
        w.prepare(&ctx).unwrap();
        let receivers = w.disclosure();
        let of_sender: Vec<&String> = receivers
            .keys()
            .filter(|k| {
                k.starts_with("net.sender") || *k == "net.tcp_congestion" || *k == "net.window"
            })
            .collect();
        assert!(of_sender.is_empty(), "{sender}: {of_sender:?}");
        assert!(receivers.contains_key("net.receiver"));
        assert!(receivers.contains_key("net.method"));
        let by_host = w.loadgen_disclosure();
        assert_eq!(by_host.keys().collect::<Vec<_>>(), [sender]);
        let facts = &by_host[sender];
        assert_eq!(
            facts["net.sender"].display(),
            format!("rackbench's net sender on {sender}")
        );
        for key in [
            "net.tcp_congestion",
            "net.window",
            "net.sender.net.ipv4.tcp_wmem",
        ] {
            assert!(facts.contains_key(key), "{sender}: no {key} in {facts:?}");
        }
        w.cleanup();
    }
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap().unwrap();
}

#[test]
fn two_load_generators_for_one_pair_are_refused() {
    let (rx, tx1, tx2) = (host("rx"), host("tx1"), host("tx2"));
    let ctx = ctx_on(&rx, &[&tx1, &tx2]);
    let mut w = NetWorkload::from_params(&params(json!({
        "tests": ["tcp"], "target": "127.0.0.1:9"
    })))
    .unwrap();
    let err = format!("{:#}", w.prepare(&ctx).unwrap_err());
    assert!(
        err.contains("net runs one sender per pair; give pairs with --pairs or --hosts"),
        "{err}"
    );
    assert!(rx.service_exited(1).is_err(), "nothing started on the sut");
}

#[test]
fn without_roles_everything_runs_in_this_process() {
    let (addr, stop, h) = spawn_receiver(ServeOptions::default()).unwrap();
    let mut w = NetWorkload::from_params(&params(json!({
        "tests": ["udp1472"], "rate": "10M", "duration": 0.3, "interval": 0.1,
        "target": addr.to_string()
    })))
    .unwrap();
    let ctx = Ctx::quiet();
    w.prepare(&ctx).unwrap();
    let out = w.run_test("udp1472", &ctx).unwrap();
    w.cleanup();
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap().unwrap();
    assert!(out.error.is_none(), "{:?}", out.error);
    assert!(metric(&out, "packets_per_s").unwrap() > 0.0);
    assert!(fact(&w, "net.sender").contains("this process"));
}

#[test]
fn driver_report_is_the_step_and_the_senders_facts() {
    let (addr, stop, h) = spawn_receiver(ServeOptions::default()).unwrap();
    let job = DriverJob {
        workload: "net".into(),
        test: "tcp".into(),
        params: params(json!({"tests": ["tcp"], "duration": 0.2, "interval": 0.1})),
        endpoints: vec![addr.to_string()],
        index: 0,
        generators: 1,
    };
    let v = drive(&job, &engine::workload::Progress::default()).unwrap();
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap().unwrap();
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["facts", "step"]);
    assert_eq!(v["step"]["headline"], "throughput_gbit_per_s");
    assert!(v["step"]["metrics"].as_array().unwrap().len() > 5);
    assert!(v["facts"]["net.tcp_congestion"]["value"].is_string());
    assert!(v["facts"].get("net.sender.net.ipv4.tcp_wmem").is_some());
    // The controller reads it back whole.
    let rep: SenderReport = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(serde_json::to_value(&rep).unwrap(), v);

    // The check job sends nothing and needs no receiver.
    let check = DriverJob {
        test: driver::CHECK.into(),
        endpoints: vec![],
        ..job
    };
    let v = drive(&check, &engine::workload::Progress::default()).unwrap();
    assert!(v["step"].is_null());
    assert!(v["facts"].get("net.tcp_congestion").is_some());
}

#[test]
fn service_passes_a_given_receiver_on_and_names_a_bad_binary() {
    let mut svc = start_service(
        &params(json!({"target": "10.0.0.9:5201"})),
        &ServiceCtx::loopback(),
    )
    .unwrap();
    assert_eq!(svc.endpoints(), vec!["10.0.0.9:5201"]);
    assert_eq!(svc.exited(), None);
    let facts = svc.facts();
    assert!(facts["net.receiver"].display().contains("10.0.0.9:5201"));
    assert!(facts["net.receiver.net.core.rmem_max"].value.is_none());
    svc.stop();

    let err = start_service(
        &params(json!({"receiver_bin": "/nonexistent/rackbench"})),
        &ServiceCtx::loopback(),
    )
    .err()
    .unwrap();
    let err = format!("{err:#}");
    assert!(
        err.contains("/nonexistent/rackbench") && err.contains("--target"),
        "{err}"
    );
}

#[test]
fn non_finite_figures_become_missing_rather_than_breaking_the_report() {
    let mut out = StepOutput {
        metrics: vec![
            Metric::new("throughput_gbit_per_s", 1.0, "Gbit/s"),
            Metric::new("jitter_ms", f64::NAN, "ms"),
        ],
        ..Default::default()
    };
    driver::keep_finite(&mut out);
    assert_eq!(out.metrics.len(), 1);
    assert_eq!(out.missing[0].name, "jitter_ms");
    let v = serde_json::to_value(&out).unwrap();
    let back: StepOutput = serde_json::from_value(v).unwrap();
    assert_eq!(back.metrics, out.metrics);
}

/// The receiver launched as its own process through the system under test's host. It
/// needs a rackbench binary (here `current_exe()` is this test binary, which has no
/// `net serve`), so it runs when RACKBENCH_BIN names one, as the cli tests' does.
#[test]
fn receiver_process_launched_through_the_sut_host() {
    let Ok(bin) = std::env::var("RACKBENCH_BIN") else {
        eprintln!("skipped: set RACKBENCH_BIN to a rackbench binary to launch the receiver");
        return;
    };
    let (rx, tx) = (host("rx"), host("tx"));
    let ctx = ctx_on(&rx, &[&tx]);
    let mut w = NetWorkload::from_params(&params(json!({
        "tests": ["tcp"], "duration": 0.3, "interval": 0.1, "receiver_bin": bin
    })))
    .unwrap();
    w.prepare(&ctx).unwrap();
    let target = w.target().unwrap();
    assert!(target.starts_with("127.0.0.1:"), "{target}");
    assert!(fact(&w, "net.receiver").contains(&target));
    assert!(!fact(&w, "net.receiver.net.ipv4.tcp_rmem").contains("unknown"));
    let out = w.run_test("tcp", &ctx).unwrap();
    assert_eq!(rx.service_exited(1).unwrap(), None);
    w.cleanup();
    assert!(out.error.is_none(), "{:?}", out.error);
    assert!(out.flags.is_empty(), "{:?}", out.flags);
    assert!(metric(&out, "receiver_cpu_pct").is_some());
    assert_eq!(metric(&out, "bytes_sent"), metric(&out, "bytes_received"));
}

/// The voluntary context switches of thread `tid` of this process so far.
fn wakeups_of(tid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap()
}

/// An idle receiver waits on its listener instead of trying `accept` on a timer (an empty
/// accept allocates and frees a socket, which slowed a TCP test on the same CPU by a
/// fifth): it wakes only at its poll timeout, about ten times a second, where the old
/// 20 ms accept loop woke fifty. It still serves a sender that comes afterwards.
#[test]
fn an_idle_receiver_sleeps_on_its_listener() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let s2 = Arc::clone(&stop);
    let h = std::thread::spawn(move || {
        // SAFETY: gettid has no preconditions.
        tid_tx.send(unsafe { libc::gettid() }).unwrap();
        serve(l, &ServeOptions::default(), &s2)
    });
    let tid = tid_rx.recv().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let before = wakeups_of(tid);
    std::thread::sleep(Duration::from_secs(1));
    let woke = wakeups_of(tid) - before;
    assert!(woke <= 20, "an idle receiver woke {woke} times in 1 s");
    let rep = sender::run(
        &tcp_spec(addr, 0.2, None),
        &AtomicU64::new(0),
        &|| false,
        None,
    )
    .unwrap();
    assert!(rep.received.iter().map(|s| s.bytes).sum::<u64>() > 0);
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap().unwrap();
}

/// A paced stream's threads, run between ticks, read 4.5% user and 0% system: the split
/// is missing with why, the exact total stays; a split the ticks saw is kept.
#[test]
fn a_user_system_split_no_tick_saw_is_missing_and_the_total_stays() {
    let mut out = StepOutput::default();
    let unsampled = proto::CpuUsage {
        user_s: 0.135,
        system_s: 0.0,
    };
    let pct = push_end_cpu(&mut out, "sender", &unsampled, 3.0, 1.0);
    assert!((pct - 4.5).abs() < 1e-9);
    let names: Vec<&str> = out.metrics.iter().map(|m| m.name.as_str()).collect();
    assert!(names.contains(&"sender_cpu_pct"), "{names:?}");
    assert!(
        !names
            .iter()
            .any(|n| n.contains("user") || n.contains("sys")),
        "{names:?}"
    );
    let missing: Vec<&str> = out.missing.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(missing, ["sender_cpu_user_pct", "sender_cpu_sys_pct"]);
    assert!(out.missing[0].reason.contains("tick sampling"));

    let mut out = StepOutput::default();
    let sampled = proto::CpuUsage {
        user_s: 0.03,
        system_s: 0.105,
    };
    push_end_cpu(&mut out, "sender", &sampled, 3.0, 1.0);
    assert!(out.missing.is_empty(), "{:?}", out.missing);
    assert_eq!(out.metrics.len(), 4, "{:?}", out.metrics);
    // An idle end (nothing moved) keeps its split, however small.
    let mut out = StepOutput::default();
    push_end_cpu(&mut out, "receiver", &unsampled, 3.0, 0.0);
    assert!(out.missing.is_empty());
}

/// A one-stream UDP report of `sent` datagrams of which `received` arrived, over 1 s.
fn udp_report(sent: u64, received: u64) -> TestReport {
    TestReport {
        sent: vec![proto::SentStats {
            bytes: sent * 1472,
            packets: sent,
        }],
        stream_send_s: vec![1.0],
        received: vec![proto::StreamStats {
            bytes: received * 1472,
            packets: received,
            lost: (sent - received) as i64,
            out_of_order: 0,
            jitter_ms: 0.01,
            jitter_samples: received.saturating_sub(1),
        }],
        receive_duration_s: 1.0,
        ..TestReport::default()
    }
}

/// UDP that lost 14-32% at `--rate 1G` carried no warning, and its Gbit/s read as the
/// rate the path takes at that offer. Above 1% loss the test is flagged `udp_loss`,
/// naming the loss and saying whose the Gbit/s is; at or under it, not.
#[test]
fn udp_loss_above_the_threshold_is_flagged_with_the_loss_and_whose_rate_it_is() {
    let spec = SendSpec {
        rate_bps: 1e9,
        ..udp_spec()
    };
    let out = step_output(&spec, &udp_report(100_000, 78_000));
    assert_eq!(metric(&out, "loss_pct"), Some(22.0));
    let flag = out
        .flags
        .iter()
        .find(|f| f.code == "udp_loss")
        .unwrap_or_else(|| panic!("no udp_loss flag: {:?}", out.flags));
    assert_eq!(flag.severity, model::Severity::Warning);
    for part in [
        "22.0% of the datagrams sent were lost (22000 of 100000",
        "above the 1%",
        "is above what the receiver or the path takes",
        "the Gbit/s figure is the receiver's, not the rate offered",
    ] {
        assert!(flag.message.contains(part), "{part}: {}", flag.message);
    }
    // 1% and under: no flag, loss or not.
    for received in [99_000, 100_000] {
        let out = step_output(&spec, &udp_report(100_000, received));
        assert!(
            out.flags.iter().all(|f| f.code != "udp_loss"),
            "{received}: {:?}",
            out.flags
        );
    }
    // Loss that could not be counted is not taken for loss.
    let mut unknown = udp_report(100_000, 50_000);
    unknown.loss_unknown = Some("the receiver sent no final report".into());
    let out = step_output(&spec, &unknown);
    assert!(out.flags.iter().all(|f| f.code != "udp_loss"));
}

/// A datagram counted lost in one interval and arriving in the next made that interval's
/// loss negative (-1 of 100 read `-1.0%`). Shown, an interval's loss is never below 0: the
/// late datagram is one of its out-of-order arrivals. The test's loss stays exact.
#[test]
fn an_intervals_loss_is_never_negative_and_late_datagrams_are_out_of_order() {
    let spec = SendSpec {
        streams: 2,
        ..udp_spec()
    };
    let stream = |packets: u64, lost: i64, out_of_order: u64| proto::StreamStats {
        bytes: packets * 1472,
        packets,
        lost,
        out_of_order,
        jitter_ms: 0.01,
        jitter_samples: packets.saturating_sub(1),
    };
    let interval = |k: usize, received: Vec<proto::StreamStats>| sender::IntervalReport {
        start_s: k as f64,
        end_s: k as f64 + 1.0,
        received,
        retransmits: None,
        warmup: false,
    };
    let mut rep = udp_report(0, 0);
    rep.sent = vec![
        proto::SentStats {
            bytes: 200 * 1472,
            packets: 200,
        };
        2
    ];
    rep.stream_send_s = vec![2.0, 2.0];
    rep.receive_duration_s = 2.0;
    // Stream 0 lost one datagram in the first interval that arrived in the second;
    // stream 1 lost 3 in the second, for good.
    rep.intervals = vec![
        interval(0, vec![stream(99, 1, 0), stream(100, 0, 0)]),
        interval(1, vec![stream(101, -1, 1), stream(97, 3, 0)]),
    ];
    rep.received = vec![stream(200, 0, 1), stream(197, 3, 0)];
    let out = step_output(&spec, &rep);
    let at = |name: &str, start: &str| {
        out.metrics
            .iter()
            .find(|m| {
                m.name == name
                    && m.labels.get("interval_start_s").map(String::as_str) == Some(start)
            })
            .map(|m| m.value)
    };
    assert_eq!(at("loss_pct", "0.0"), Some(100.0 * 1.0 / 200.0));
    // Not (3 - 1) of 200: stream 0's late one is no gain, stream 1's 3 are its loss.
    assert_eq!(at("loss_pct", "1.0"), Some(100.0 * 3.0 / 201.0));
    assert_eq!(at("out_of_order_packets", "0.0"), Some(0.0));
    assert_eq!(at("out_of_order_packets", "1.0"), Some(1.0));
    assert!(out
        .metrics
        .iter()
        .filter(|m| m.name == "loss_pct")
        .all(|m| m.value >= 0.0));
    // The whole test's: 3 of 400, exact.
    assert_eq!(metric(&out, "lost_packets"), Some(3.0));
    assert_eq!(metric(&out, "loss_pct"), Some(100.0 * 3.0 / 400.0));
    assert_eq!(metric(&out, "out_of_order_packets"), Some(1.0));
}

/// `--streams N`: each stream's rate at each end, as iperf3 prints them above its [SUM]
/// (only the total was kept): the sender's over each stream's own time, the receiver's
/// over its span; one stream stores none (its rate is the test's); a test that sent
/// nothing has no stream rates, its missing total saying why.
#[test]
fn each_streams_rate_is_kept_at_both_ends() {
    let spec = SendSpec {
        streams: 3,
        ..udp_spec()
    };
    let rep = TestReport {
        sent: [1.25e9, 0.625e9, 1.0e9]
            .iter()
            .map(|&b| proto::SentStats {
                bytes: b as u64,
                packets: b as u64 / 1472,
            })
            .collect(),
        stream_send_s: vec![1.0, 1.0, 0.8],
        received: [1.2e9, 0.6e9, 0.9e9]
            .iter()
            .map(|&b| proto::StreamStats {
                bytes: b as u64,
                packets: b as u64 / 1472,
                ..Default::default()
            })
            .collect(),
        receive_duration_s: 1.0,
        ..TestReport::default()
    };
    let out = step_output(&spec, &rep);
    let stream = |i: usize, end: Option<&str>| {
        out.metrics
            .iter()
            .find(|m| {
                m.name == model::STREAM_THROUGHPUT
                    && m.labels.get("stream").map(String::as_str) == Some(&i.to_string()[..])
                    && m.labels.get("end").map(String::as_str) == end
            })
            .map(|m| (m.value, m.unit.clone()))
    };
    assert_eq!(stream(0, Some("sender")), Some((10.0, "Gbit/s".into())));
    assert_eq!(stream(1, Some("sender")), Some((5.0, "Gbit/s".into())));
    assert_eq!(stream(2, Some("sender")), Some((10.0, "Gbit/s".into())));
    assert_eq!(stream(0, None), Some((9.6, "Gbit/s".into())));
    assert_eq!(stream(1, None), Some((4.8, "Gbit/s".into())));
    assert_eq!(stream(2, None), Some((7.2, "Gbit/s".into())));
    // The test's own rate is still the one unlabelled (or end=sender) figure.
    assert_eq!(metric(&out, "throughput_gbit_per_s"), Some(21.6));
    assert_eq!(
        model::stream_spread(&out.metrics, None),
        Some((4.8, 9.6, 3))
    );
    assert_eq!(
        model::stream_spread(&out.metrics, Some("sender")),
        Some((5.0, 10.0, 3))
    );
    // One stream: its rate is the test's, none kept apart.
    let one = step_output(&udp_spec(), &udp_report(1000, 990));
    assert!(one
        .metrics
        .iter()
        .all(|m| m.name != model::STREAM_THROUGHPUT));
    // Nothing sent: no stream rates (the total's reason says why).
    let none = step_output(
        &spec,
        &TestReport {
            sent: vec![proto::SentStats::default(); 3],
            stream_send_s: vec![1.0; 3],
            ..TestReport::default()
        },
    );
    assert!(none
        .metrics
        .iter()
        .all(|m| m.name != model::STREAM_THROUGHPUT));
}

/// Two real TCP streams on loopback: each end's per-stream rates add up to that end's
/// bytes over its time, and each stream moved something.
#[test]
fn two_real_streams_each_have_their_rate() {
    let (addr, stop, h) = spawn_receiver(ServeOptions::default()).unwrap();
    let spec = SendSpec {
        streams: 2,
        ..tcp_spec(addr, 0.3, None)
    };
    let rep = sender::run(&spec, &AtomicU64::new(0), &|| false, None).unwrap();
    stop.store(true, Ordering::Relaxed);
    let _ = h.join().unwrap();
    assert_eq!(rep.error, None);
    let out = step_output(&spec, &rep);
    let rates = |end: Option<&str>| -> Vec<f64> {
        out.metrics
            .iter()
            .filter(|m| {
                m.name == model::STREAM_THROUGHPUT && m.labels.get("end").map(String::as_str) == end
            })
            .map(|m| m.value)
            .collect()
    };
    let (sent, recv) = (rates(Some("sender")), rates(None));
    assert_eq!((sent.len(), recv.len()), (2, 2), "{:?}", out.metrics);
    assert!(
        sent.iter().chain(&recv).all(|&g| g > 0.0),
        "{sent:?} {recv:?}"
    );
    // The receiver's streams share its span: they add up to its total.
    let total = metric(&out, "throughput_gbit_per_s").unwrap();
    assert!(((recv[0] + recv[1]) - total).abs() < 1e-9 * total.max(1.0));
    // The sender's are each over its own time: bytes = rate x time, stream by stream.
    for (i, g) in sent.iter().enumerate() {
        let bytes = g * 1e9 / 8.0 * rep.stream_send_s[i];
        assert!((bytes - rep.sent[i].bytes as f64).abs() < 1.0, "stream {i}");
    }
}

/// The receiver reads the TCP streams from the moment they are open, before `go`, as
/// iperf3's server does: started after `go`, its threads let the first data fill the
/// windows while the sender stalled, and the ACKs that opened them moved the sending (and
/// BBR's pacing timer) to the receiver's CPU for the whole test. Here 4 MiB go over
/// 64 KiB windows before `go`: only a receiver already reading takes them within 5 s,
/// and its totals count them.
#[test]
fn the_receiver_reads_the_streams_before_go() {
    let once = ServeOptions {
        once: true,
        ..ServeOptions::default()
    };
    let (addr, _stop, h) = spawn_receiver(once).unwrap();
    let window = 64 * 1024;
    let (mut ctl, mut rd, data_ports) =
        start_by_hand(addr, (Proto::Tcp, 128 * 1024, 2), Some(window), 1.0);
    let soon = || std::time::Instant::now() + Duration::from_secs(5);
    let to = std::net::SocketAddr::new(addr.ip(), data_ports[0]);
    let streams: Vec<_> = (0..2)
        .map(|_| sender::connect_tcp(to, None, Some(window)).unwrap())
        .collect();
    let chunk = vec![7u8; 4 << 20];
    for mut s in &streams {
        s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
        std::io::Write::write_all(&mut s, &chunk)
            .expect("4 MiB over a 64 KiB window before `go`: nobody read them");
    }
    proto::send(&mut ctl, &proto::Msg::Go).unwrap();
    for s in &streams {
        s.shutdown(std::net::Shutdown::Write).unwrap();
    }
    let sent = proto::SentStats {
        bytes: chunk.len() as u64,
        packets: 0,
    };
    let done = proto::Msg::Done {
        sent: vec![sent.clone(), sent],
        warmup: vec![],
    };
    proto::send(&mut ctl, &done).unwrap();
    let result = loop {
        match rd.next(soon()).unwrap() {
            Some(proto::Msg::Interval { .. }) => {}
            Some(m @ proto::Msg::Result { .. }) => break m,
            other => panic!("expected the result, got {other:?}"),
        }
    };
    let proto::Msg::Result { streams: got, .. } = result else {
        unreachable!()
    };
    let bytes: Vec<u64> = got.iter().map(|s| s.bytes).collect();
    assert_eq!(bytes, vec![chunk.len() as u64; 2]);
    drop(ctl);
    let _ = h.join().unwrap();
}
