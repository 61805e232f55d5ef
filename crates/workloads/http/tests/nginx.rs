//! Against a real nginx launched through the workload's `prepare()` (skipped, with the
//! reason, where nginx is not installed: `apt-get install nginx-light`).

use std::process::Command;
use std::time::Duration;

use engine::workload::{Ctx, StepOutput, Workload};
use model::Metric;
use rackbench_http::Http;
use serde_json::json;

fn have_nginx() -> bool {
    match engine::launch::find_binary("nginx", "nginx-light") {
        Ok(_) => true,
        Err(e) => {
            eprintln!("skipping: {e}");
            false
        }
    }
}

fn launched(extra: serde_json::Value) -> Http {
    let mut p = json!({ "connections": 8, "warmup": 0, "duration": 0.5 });
    for (k, v) in extra.as_object().unwrap() {
        p[k] = v.clone();
    }
    let mut h = Http::from_params(p.as_object().unwrap()).unwrap();
    h.prepare(&Ctx::quiet()).unwrap();
    h
}

fn metric<'a>(s: &'a StepOutput, name: &str, labels: &[(&str, &str)]) -> Option<&'a Metric> {
    s.metrics.iter().find(|m| {
        m.name == name
            && labels
                .iter()
                .all(|(k, v)| m.labels.get(*k).map(String::as_str) == Some(*v))
            && (!labels.is_empty() || m.labels.is_empty())
    })
}

#[test]
fn closed_loop_against_launched_nginx_agrees_with_its_counters() {
    if !have_nginx() {
        return;
    }
    let mut h = launched(json!({ "file_size": 4096 }));
    let addr = h.endpoint().unwrap();
    assert!(addr.ip().is_loopback());
    let s = h.run_test("load", &Ctx::quiet()).unwrap();
    let n = metric(&s, "requests", &[]).unwrap().value;
    let rps = metric(&s, "requests_per_s", &[]).unwrap().value;
    assert!(n > 100.0 && rps > 200.0, "{n} requests, {rps}/s");
    assert_eq!(s.headline, "requests_per_s");
    assert_eq!(metric(&s, "errors_total", &[]).unwrap().value, 0.0);
    assert_eq!(
        metric(&s, "responses", &[("status", "2xx_3xx")])
            .unwrap()
            .value,
        n
    );
    // Every reply carried the 4 KiB file (plus ~240 bytes of headers).
    let rx = metric(&s, "bytes_rx", &[]).unwrap().value;
    assert!(rx >= n * 4096.0 && rx < n * 4600.0, "{rx} bytes for {n}");
    // nginx's own counter (stub_status) agrees with the generator.
    if let Some(served) = metric(&s, "server_requests", &[]) {
        assert!(
            served.value >= n && served.value <= n + 8.0,
            "nginx {} vs {n}",
            served.value
        );
        assert!(!s.flags.iter().any(|f| f.code == "server_counter_mismatch"));
    }
    // Latency views: thresholds, jitter, and Little's law holds (8 connections).
    assert!(metric(
        &s,
        "latency_pct_over",
        &[("over", "1ms"), ("kind", "service")]
    )
    .is_some());
    assert!(metric(&s, "latency_jitter_ns", &[("kind", "service")]).is_some());
    let mean = metric(&s, "latency_mean_ns", &[]).unwrap().value;
    let little = 8.0 / rps * 1e9;
    assert!((mean - little).abs() / little < 0.25, "{mean} vs {little}");
    assert!(h
        .disclosure()
        .get("software.nginx")
        .and_then(|f| f.value.clone())
        .is_some_and(|v| v.starts_with("nginx/")));
    h.cleanup();
    // Cleanup stops nginx: nothing listens any more.
    assert!(std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err());
}

#[test]
fn status_counts_paths_and_a_new_connection_per_request() {
    if !have_nginx() {
        return;
    }
    let mut h = launched(json!({
        "paths": ["/index.html", "/missing"],
        "requests": 400,
        "requests_per_connection": 1,
    }));
    let s = h.run_test("load", &Ctx::quiet()).unwrap();
    let ok = metric(&s, "responses", &[("status", "2xx_3xx")])
        .unwrap()
        .value;
    let missing = metric(&s, "responses", &[("status", "404")]).unwrap().value;
    assert_eq!(ok + missing, 400.0);
    // Each connection does one request and starts at path (conn % 2): half and half.
    assert!((ok - 200.0).abs() <= 8.0, "{ok} ok, {missing} 404");
    let reconnects = metric(&s, "reconnects", &[]).unwrap().value;
    assert!(reconnects >= 390.0, "{reconnects}");
    assert!(s.flags.iter().any(|f| f.code == "errors"));
}

#[test]
fn short_ramp_finds_saturation_and_nginx_dying_mid_ramp_keeps_the_steps() {
    if !have_nginx() {
        return;
    }
    // A ramp steep enough to pass what one nginx worker and our client do on a shared
    // 2-CPU machine (~100k/s at best).
    let mut h = launched(json!({
        "tests": ["ramp"],
        "connections": 50,
        "step_duration": 0.3,
        "warmup": 0.05,
        "ramp_low": 2000, "ramp_high": 602000, "ramp_step": 150000,
    }));
    let s = h.run_test("ramp", &Ctx::quiet()).unwrap();
    let sat = metric(&s, "saturation_rate_per_s", &[]).unwrap_or_else(|| panic!("{:?}", s.missing));
    assert!(
        sat.value > 2000.0,
        "the first step already saturated: {:?}",
        s.metrics
    );
    let peak = metric(&s, "max_reply_rate_per_s", &[]).unwrap().value;
    eprintln!(
        "nginx ramp: saturation at {} req/s demanded, peak reply rate {peak}",
        sat.value
    );
    assert!(peak > 1500.0 && peak < sat.value, "{peak} {}", sat.value);
    assert!(s.error.is_none());

    // Now kill nginx (its whole process group) while a ramp is running.
    let pid = h.server().unwrap().guard.pid();
    let mut h2 = launched(json!({
        "tests": ["ramp"],
        "connections": 10,
        "step_duration": 0.3,
        "warmup": 0.05,
        "ramp_low": 500, "ramp_high": 10000, "ramp_step": 500,
    }));
    h.cleanup();
    let pid2 = h2.server().unwrap().guard.pid();
    assert_ne!(pid, pid2);
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(900));
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{pid2}")])
            .status();
    });
    let s = h2.run_test("ramp", &Ctx::quiet()).unwrap();
    killer.join().unwrap();
    eprintln!("nginx killed mid-ramp: {:?}; {:?}", s.error, s.missing);
    let why = s.error.clone().expect("a dead server fails the test");
    assert!(
        why.contains("failed") && (why.contains("nginx") || why.contains("connect")),
        "{why}"
    );
    // What was measured before is kept: at least the first step, sustained.
    let first = metric(
        &s,
        "reply_rate_per_s",
        &[("phase", "ramp"), ("step", "0"), ("verdict", "sustained")],
    );
    assert!(first.is_some(), "{:?}", s.metrics);
    assert!(
        s.missing
            .iter()
            .any(|m| m.name == "saturation_rate_per_s"
                && m.reason.contains("ended before saturation"))
    );
}
