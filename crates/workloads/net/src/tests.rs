//! The net workload against a real receiver on loopback (in-process, on a thread); the
//! two-process test lives in crates/cli/tests/net.rs.

use super::*;
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};

fn params(v: serde_json::Value) -> serde_json::Map<String, Value> {
    v.as_object().unwrap().clone()
}

fn metric(out: &StepOutput, name: &str) -> Option<f64> {
    out.metrics
        .iter()
        .find(|m| m.name == name && m.labels.is_empty())
        .map(|m| m.value)
}

#[test]
fn tcp_two_streams_counts_every_byte() {
    let (addr, stop, h) = spawn_receiver(ServeOptions::default()).unwrap();
    let mut w = NetWorkload::from_params(&params(json!({
        "tests": ["tcp"], "streams": 2, "duration": 0.5, "interval": 0.1, "target": addr.to_string()
    })))
    .unwrap();
    let ctx = Ctx::quiet();
    w.prepare(&ctx).unwrap();
    let out = w.run_test("tcp", &ctx).unwrap();
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
    let intervals = out
        .metrics
        .iter()
        .filter(|m| m.labels.contains_key("interval_start_s"))
        .count();
    assert!(intervals >= 3, "only {intervals} interval figures");
}

#[test]
fn tcp_runs_with_the_congestion_control_asked_for() {
    let (addr, stop, h) = spawn_receiver(ServeOptions::default()).unwrap();
    let spec = SendSpec {
        target: addr.to_string(),
        proto: Proto::Tcp,
        payload: DEFAULT_TCP_LEN,
        duration_s: 0.3,
        streams: 1,
        interval_s: 0.1,
        rate_bps: 0.0,
        sender_cpus: vec![],
        receiver_cpus: vec![],
        // Reno is built into every kernel and allowed without privileges.
        congestion: Some("reno".into()),
    };
    let rep = sender::run(&spec, &AtomicU64::new(0), &|| false).unwrap();
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap().unwrap();
    assert_eq!(rep.congestion.as_deref(), Some("reno"));
    assert!(rep.error.is_none(), "{:?}", rep.error);
    let sent: u64 = rep.sent.iter().map(|s| s.bytes).sum();
    let got: u64 = rep.received.iter().map(|s| s.bytes).sum();
    assert!(sent > 0 && sent == got, "sent {sent} B, received {got} B");
}

#[test]
fn unknown_congestion_control_is_refused_before_the_test() {
    let mut w = NetWorkload::from_params(&params(json!({
        "tests": ["tcp"], "congestion": "nosuchcc", "target": "127.0.0.1:9"
    })))
    .unwrap();
    let err = format!("{:#}", w.prepare(&Ctx::quiet()).unwrap_err());
    assert!(
        err.contains("congestion control `nosuchcc`") && err.contains("This host has:"),
        "{err}"
    );
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
    let ctx = Ctx::quiet();
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
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap().unwrap();
}

#[test]
fn udp_loss_counted_when_receiver_stops_mid_run() {
    let (addr, stop, h) = spawn_receiver(ServeOptions::default()).unwrap();
    let mut w = NetWorkload::from_params(&params(json!({
        "tests": ["udp1472"], "rate": "50M", "duration": 1.5, "interval": 0.1,
        "target": addr.to_string()
    })))
    .unwrap();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        stop.store(true, Ordering::Relaxed);
    });
    let t0 = std::time::Instant::now();
    let out = w.run_test("udp1472", &Ctx::quiet()).unwrap();
    killer.join().unwrap();
    h.join().unwrap().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert!(
        out.error.is_some(),
        "a stopped receiver must mark the result"
    );
    let loss = metric(&out, "loss_pct").unwrap();
    let sent = metric(&out, "packets_sent").unwrap();
    let recv = metric(&out, "packets_received").unwrap();
    assert!(sent > recv, "sent {sent} received {recv}");
    assert!(loss > 0.0 && loss <= 100.0, "loss {loss}");
    assert!(out.missing.iter().any(|m| m.name == "receiver_cpu_pct"));
}

#[test]
fn unreachable_receiver_is_a_clear_error() {
    let port = engine::launch::free_port().unwrap();
    let mut w = NetWorkload::from_params(&params(json!({
        "tests": ["tcp"], "duration": 0.2, "target": format!("127.0.0.1:{port}")
    })))
    .unwrap();
    let e = w.run_test("tcp", &Ctx::quiet()).unwrap_err();
    let s = format!("{e:#}");
    assert!(
        s.contains("cannot reach the receiver") && s.contains("rackbench net serve"),
        "{s}"
    );
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

#[test]
fn metrics_from_a_synthetic_report() {
    let spec = SendSpec {
        target: "x:1".into(),
        proto: Proto::Udp,
        payload: 1472,
        duration_s: 1.0,
        streams: 1,
        interval_s: 1.0,
        rate_bps: 0.0,
        sender_cpus: vec![],
        receiver_cpus: vec![],
        congestion: None,
    };
    let rep = TestReport {
        sent: vec![proto::SentStats {
            bytes: 1000 * 1472,
            packets: 1000,
        }],
        send_duration_s: 1.0,
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
        }],
        receive_duration_s: 1.0,
        receiver_cpu: Some(proto::CpuUsage {
            user_s: 0.05,
            system_s: 0.25,
        }),
        intervals: vec![],
        error: None,
        send_errors: 0,
        congestion: None,
    };
    let out = step_output(&spec, &rep);
    assert!((metric(&out, "loss_pct").unwrap() - 10.0).abs() < 1e-9);
    assert!((metric(&out, "packets_per_s").unwrap() - 900.0).abs() < 1e-9);
    assert!((metric(&out, "sender_cpu_pct").unwrap() - 50.0).abs() < 1e-9);
    assert!((metric(&out, "receiver_cpu_pct").unwrap() - 30.0).abs() < 1e-9);
    let gbit = 900.0 * 1472.0 * 8.0 / 1e9;
    assert!((metric(&out, "throughput_gbit_per_s").unwrap() - gbit).abs() < 1e-12);
    assert!((metric(&out, "cpu_pct_per_gbit").unwrap() - 80.0 / gbit).abs() < 1e-6);
    assert_eq!(out.headline, "throughput_gbit_per_s");
}
