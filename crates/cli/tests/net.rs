//! `net` between two real processes: this test process is the sender (the workload's Rust
//! API) and `rackbench net serve` the receiver, launched as a child on a free port, or
//! launched by the workload itself from `--receiver-bin`.

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
