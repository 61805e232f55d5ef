//! `net` between two real processes: this test process is the sender (the workload's Rust
//! API) and `rackbench net serve` the receiver, launched as a child on a free port, or
//! launched by the workload itself from `--receiver-bin`.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use engine::Workload;
use serde_json::json;

const BIN: &str = env!("CARGO_BIN_EXE_rackbench");

fn metric(out: &engine::StepOutput, name: &str) -> Option<f64> {
    out.metrics
        .iter()
        .find(|m| m.name == name && m.labels.is_empty())
        .map(|m| m.value)
}

fn start_server(port: u16) -> engine::launch::ChildGuard {
    let addr = format!("127.0.0.1:{port}");
    let mut cmd = Command::new(BIN);
    cmd.args(["net", "serve", "--bind", &addr, "-q"])
        .stdout(Stdio::null());
    let mut g = engine::launch::ChildGuard::spawn("rackbench net serve", &mut cmd).unwrap();
    engine::launch::wait_for_port(addr.parse().unwrap(), &mut g, Duration::from_secs(10)).unwrap();
    g
}

/// A paced TCP test's receiver rate is its bytes over the test, as iperf3's is: over the
/// span to its last data (a pacing interval before the end), 3 s at --rate 1M read 1.47
/// Mbit/s, 40% high, and 2 s at 1M about twice its rate.
#[test]
fn a_paced_tcp_tests_rate_is_over_the_test_not_to_its_last_data() {
    let port = engine::launch::free_port().unwrap();
    let _server = start_server(port);
    let p = json!({"tests": ["tcp"], "duration": 2.0, "interval": 0.5, "rate": "1M",
                   "target": format!("127.0.0.1:{port}")});
    let mut w = wl_net::NetWorkload::from_params(p.as_object().unwrap()).unwrap();
    let ctx = engine::Ctx::quiet();
    w.prepare(&ctx).unwrap();
    let tcp = w.run_test("tcp", &ctx).unwrap();
    assert!(tcp.error.is_none(), "{:?}", tcp.error);
    let bytes = metric(&tcp, "bytes_received").unwrap();
    let gbit = metric(&tcp, "throughput_gbit_per_s").unwrap();
    let over_test = bytes * 8.0 / 2.0 / 1e9;
    assert!(
        (gbit / over_test - 1.0).abs() < 0.1,
        "{gbit} Gbit/s for {bytes} B received in a 2 s test ({over_test} Gbit/s)"
    );
    assert!(
        (0.0007..0.0014).contains(&gbit),
        "{gbit} Gbit/s at --rate 1M"
    );
}

#[test]
fn tcp_and_udp_between_two_processes_and_loss_when_receiver_killed() {
    let port = engine::launch::free_port().unwrap();
    let mut server = start_server(port);
    let target = format!("127.0.0.1:{port}");
    let p = json!({"tests": ["tcp", "udp60"], "duration": 0.5, "interval": 0.1,
                   "rate": "10M", "target": target});
    let mut w = wl_net::NetWorkload::from_params(p.as_object().unwrap()).unwrap();
    let ctx = engine::Ctx::quiet();
    w.prepare(&ctx).unwrap();
    let tcp = w.run_test("tcp", &ctx).unwrap();
    assert!(tcp.error.is_none(), "{:?}", tcp.error);
    assert_eq!(metric(&tcp, "bytes_sent"), metric(&tcp, "bytes_received"));
    // Paced at --rate 10M (iperf3 -b): near 0.01 Gbit/s, give or take a 128 KiB write.
    let gbit = metric(&tcp, "throughput_gbit_per_s").unwrap();
    assert!((0.007..0.02).contains(&gbit), "{gbit} Gbit/s at --rate 10M");
    assert_eq!(metric(&tcp, "target_gbit_per_s"), Some(0.01));
    // Each end's whole process, as iperf3 counts its CPU: at least its working threads'.
    // Each share is of its own span: the receiver's threads and process both from its mark
    // to the sender's end; the sender's threads of the data's span, its process up to its
    // final report. Unpaced, data flows to the end and the sender's two spans differ by
    // milliseconds; paced (above), the last 128 KiB write may leave 0.1 s without data.
    let full = json!({"tests": ["tcp"], "duration": 0.5, "interval": 0.1, "target": target});
    let mut wf = wl_net::NetWorkload::from_params(full.as_object().unwrap()).unwrap();
    wf.prepare(&ctx).unwrap();
    let unpaced = wf.run_test("tcp", &ctx).unwrap();
    assert!(unpaced.error.is_none(), "{:?}", unpaced.error);
    let labelled = |name: &str, end: &str| {
        unpaced
            .metrics
            .iter()
            .find(|m| m.name == name && m.labels.get("end").map(String::as_str) == Some(end))
            .map(|m| m.value)
    };
    for end in ["sender", "receiver"] {
        let process = labelled("process_cpu_pct", end).unwrap();
        let threads = metric(&unpaced, &format!("{end}_cpu_pct")).unwrap();
        assert!(
            process >= threads * 0.97 && process < 200.0,
            "{end}: process {process}% vs its threads {threads}%"
        );
    }
    assert!(metric(&unpaced, "process_cpu_pct_per_gbit").is_some());
    let udp = w.run_test("udp60", &ctx).unwrap();
    assert!(udp.error.is_none(), "{:?}", udp.error);
    assert!(metric(&udp, "packets_per_s").unwrap() > 1000.0);

    // Kill the receiver process mid-run: the result is marked, and the loss over the
    // test is unknown (what was sent after its last report may have arrived).
    let p = json!({"tests": ["udp1472"], "duration": 2.0, "interval": 0.1,
                   "rate": "50M", "target": format!("127.0.0.1:{port}")});
    let mut w = wl_net::NetWorkload::from_params(p.as_object().unwrap()).unwrap();
    let pid = server.pid();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(600));
        // SAFETY: SIGKILL to the child we started.
        unsafe { libc_kill(pid as i32) };
    });
    let t0 = Instant::now();
    let out = w.run_test("udp1472", &ctx).unwrap();
    killer.join().unwrap();
    server.stop(Duration::from_secs(1));
    assert!(t0.elapsed() < Duration::from_secs(6));
    assert!(out.error.is_some(), "killed receiver must mark the result");
    assert!(metric(&out, "loss_pct").is_none(), "{:?}", out.metrics);
    assert!(out.missing.iter().any(|m| m.name == "loss_pct"));
    assert!(metric(&out, "packets_sent").unwrap() > metric(&out, "packets_received").unwrap());
}

#[test]
fn workload_launches_its_own_receiver_process() {
    let p = json!({"tests": ["tcp"], "duration": 0.3, "interval": 0.1, "receiver_bin": BIN});
    let mut w = wl_net::NetWorkload::from_params(p.as_object().unwrap()).unwrap();
    let ctx = engine::Ctx::quiet();
    w.prepare(&ctx).unwrap();
    assert!(w.target().is_some());
    let out = w.run_test("tcp", &ctx);
    w.cleanup();
    let out = out.unwrap();
    assert!(out.error.is_none(), "{:?}", out.error);
    assert!(metric(&out, "receiver_cpu_pct").is_some());
}

#[test]
fn serve_refuses_a_busy_port_clearly() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let o = Command::new(BIN)
        .args(["net", "serve", "--bind", &addr])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("cannot listen on") && err.contains("--bind"),
        "{err}"
    );
}

unsafe fn libc_kill(pid: i32) {
    extern "C" {
        fn kill(pid: i32, sig: i32) -> i32;
    }
    kill(pid, 9);
}

/// `rackbench run net` with `args` into `db`, killed outright (kill -9) once its test has
/// measured two checkpoints (10 s of 30): the run as stored after the kill.
fn net_killed_at_a_checkpoint(db: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let args = [&["net"], args, &["--duration", "30"]].concat();
    common::run_killed_once_measured(db, &args, 10.0, Duration::from_secs(27))
}

/// The figures a net checkpoint has, whatever the protocol: Gbit/s over its window (the
/// sender's: its bytes over the checkpoint's window), and what each end reads only at
/// the end missing with why, never 0.
fn check_net_checkpoint(r: &serde_json::Value, window: f64) {
    assert_eq!(r["headline"], "throughput_gbit_per_s", "{r}");
    assert!(
        common::stored_metric(r, "throughput_gbit_per_s").unwrap() > 0.0,
        "{r}"
    );
    let sent = common::stored_metric(r, "bytes_sent").unwrap();
    let sender_gbit = r["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "throughput_gbit_per_s" && m["labels"]["end"] == "sender")
        .and_then(|m| m["value"].as_f64())
        .unwrap_or_else(|| panic!("no sender Gbit/s: {r}"));
    let over_window = sent * 8.0 / window / 1e9;
    assert!(
        (sender_gbit - over_window).abs() <= 1e-6 * over_window,
        "{sender_gbit} Gbit/s is not {sent} B over {window} s"
    );
    for name in ["sender_cpu_pct", "receiver_cpu_pct"] {
        assert!(common::missing_saying(r, name, "checkpoint"), "{name}: {r}");
    }
    assert!(common::stored_metric(r, "sender_cpu_pct").is_none(), "{r}");
    // This host's samples up to the checkpoint, kept with it.
    assert!(r["telemetry"].as_array().unwrap().len() >= 5, "{r}");
}

/// A net TCP test killed (kill -9) keeps what it measured up to its last checkpoint, as
/// kv's and http's load tests do: stored `interrupted`, marked `partial` with the
/// checkpoint it is of, its Gbit/s over the checkpoint's window, the TCP counters over
/// the test (read at the end) missing with why (acceptance G6).
#[test]
fn sigkill_in_a_tcp_test_keeps_its_last_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    // Paced, so that the test leaves the machine's CPUs to the rest.
    let run = net_killed_at_a_checkpoint(&db, &["--tests", "tcp", "--rate", "200M"]);
    let (r, window) = common::checkpointed_result(&run, "tcp", 30.0);
    check_net_checkpoint(r, window);
    assert!(
        common::missing_saying(r, "retransmits", "checkpoint"),
        "{r}"
    );
    // Each interval the receiver reported is kept.
    let intervals = r["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| {
            m["name"] == "throughput_gbit_per_s" && m["labels"]["interval_start_s"].is_string()
        })
        .count();
    assert!(intervals >= 9, "{intervals} intervals in {window} s: {r}");
}

/// A net UDP test killed (kill -9) keeps its last checkpoint too: packets/s, and the loss
/// and jitter the receiver's interval reports give over its window (the gaps it saw in
/// what reached it by then).
#[test]
fn sigkill_in_a_udp_test_keeps_its_last_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let run = net_killed_at_a_checkpoint(
        &db,
        &["--tests", "udp", "--udp-payload", "1472", "--rate", "100M"],
    );
    let (r, window) = common::checkpointed_result(&run, "udp1472", 30.0);
    check_net_checkpoint(r, window);
    let sent = common::stored_metric(r, "packets_sent").unwrap();
    assert!(sent > 0.0, "{r}");
    let per_s = r["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "packets_per_s" && m["labels"]["end"] == "sender")
        .and_then(|m| m["value"].as_f64())
        .unwrap();
    assert!(
        (per_s - sent / window).abs() <= 1e-6 * per_s,
        "{per_s} {sent} {window}"
    );
    assert!(
        common::stored_metric(r, "packets_per_s").unwrap() > 0.0,
        "{r}"
    );
    let (lost, loss) = (
        common::stored_metric(r, "lost_packets").unwrap(),
        common::stored_metric(r, "loss_pct").unwrap(),
    );
    let received = common::stored_metric(r, "packets_received").unwrap();
    assert!(received > 0.0, "{r}");
    let expected = 100.0 * lost / (received + lost);
    assert!(
        (loss - expected).abs() < 1e-9,
        "{loss}% of {received} + {lost}"
    );
    assert!(common::stored_metric(r, "jitter_ms").is_some(), "{r}");
}

/// A net test that finishes replaces its checkpoint with its final result: no `partial`
/// mark, both ends' CPU read, its window the whole test.
#[test]
fn a_finished_net_test_replaces_its_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let (code, run, err) = common::run_json(
        &db,
        &[
            "net",
            "--tests",
            "udp",
            "--udp-payload",
            "1472",
            "--rate",
            "50M",
        ],
        &["--duration", "6", "--no-telemetry"],
    );
    assert_eq!(code, 0, "{err}");
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{run}");
    let r = &results[0];
    common::assert_finished(r);
    for name in ["sender_cpu_pct", "receiver_cpu_pct", "loss_pct"] {
        assert!(common::stored_metric(r, name).is_some(), "{name}: {r}");
    }
    assert!(r["duration_s"].as_f64().unwrap() >= 5.9, "{r}");
}

/// `--streams 2` against a `rackbench net serve` process: each stream's rate is kept at
/// both ends (iperf3's lines above its [SUM]), the receiver's adding up to the total.
#[test]
fn each_of_two_streams_has_its_rate_at_both_ends() {
    let port = engine::launch::free_port().unwrap();
    let mut server = start_server(port);
    let p = json!({"tests": ["tcp"], "duration": 0.5, "interval": 0.1, "streams": 2,
                   "target": format!("127.0.0.1:{port}")});
    let mut w = wl_net::NetWorkload::from_params(p.as_object().unwrap()).unwrap();
    let ctx = engine::Ctx::quiet();
    w.prepare(&ctx).unwrap();
    let out = w.run_test("tcp", &ctx).unwrap();
    server.stop(Duration::from_secs(1));
    assert!(out.error.is_none(), "{:?}", out.error);
    let (lo, hi, n) = model::stream_spread(&out.metrics, None).expect("received streams");
    assert_eq!(n, 2);
    assert!(lo > 0.0 && lo <= hi, "{lo} {hi}");
    let (_, _, n) = model::stream_spread(&out.metrics, Some("sender")).expect("sent streams");
    assert_eq!(n, 2);
    let total = metric(&out, "throughput_gbit_per_s").unwrap();
    let sum: f64 = out
        .metrics
        .iter()
        .filter(|m| m.name == model::STREAM_THROUGHPUT && !m.labels.contains_key("end"))
        .map(|m| m.value)
        .sum();
    assert!(
        (sum - total).abs() <= 1e-9 * total.max(1.0),
        "{sum} vs {total}"
    );
}
