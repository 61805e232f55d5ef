//! The capacity procedures against real sockets: an in-process HTTP server with a known
//! service time (2 workers x 10 ms = 200 requests/s), driven by the http workload through
//! the engine's load loop. Needs no external binary. The service time is long next to
//! scheduler noise on a busy machine (a sleep overshoots by up to a millisecond or two),
//! so the known capacity holds to within ~20%. The workload acts through local hosts:
//! one as system under test and load generator at once, or two generators.

mod common;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use common::SlowServer;
use engine::capacity::{self, RampConfig, SearchConfig, Verdict};
use engine::host::{Host, Roles};
use engine::workload::{Ctx, Registration, Workload};
use hosts::LocalHost;
use rackbench_http::Http;
use serde_json::json;

const WORKERS: usize = 2;
const SERVICE: Duration = Duration::from_millis(10);
/// Nominal capacity: WORKERS / SERVICE. The real one is a little lower (sleep overshoots).
const CAPACITY: f64 = 200.0;

fn workload(url: &str, extra: serde_json::Value, ctx: &Ctx) -> Http {
    // Every capacity test asked, so that their settings apply (a setting no test asked
    // reads is refused); each test below runs the one it checks.
    let mut p = json!({
        "target": url,
        "connections": 20,
        "warmup": 0.1,
        "step_duration": 0.5,
        "tests": ["load", "ramp", "search", "levels"],
    });
    for (k, v) in extra.as_object().unwrap() {
        p[k] = v.clone();
    }
    let mut h = Http::from_params(p.as_object().unwrap()).unwrap();
    h.prepare(ctx).unwrap();
    h
}

#[test]
fn objective_search_converges_on_a_server_with_known_service_time() {
    let server = SlowServer::start(WORKERS, SERVICE);
    let ctx = common::local();
    let mut h = workload(&server.url(), json!({}), &ctx);
    let mut cfg = SearchConfig::new("p99<60ms".parse().unwrap());
    cfg.start_rate_per_s = 50.0;
    cfg.max_steps = 10;
    cfg.resolution = 0.05;
    let r = capacity::search(&cfg, |rate| h.measure_rate(rate, &ctx)).unwrap();
    let best = r
        .max_rate_meeting_slo_per_s()
        .unwrap_or_else(|| panic!("no answer: {:?} {:?}", r.stopped, r.note));
    let curve: Vec<(f64, Option<u64>, bool)> = r
        .curve()
        .iter()
        .map(|p| {
            (
                p.step.demanded_rate_per_s,
                p.latency_at_objective_ns,
                p.meets,
            )
        })
        .collect();
    eprintln!("search curve (rate, p99 ns, meets): {curve:?}");
    // Below capacity the latency is the 10 ms service time; above it the queue grows
    // without bound, so the answer sits just under the capacity.
    assert!(
        (0.6 * CAPACITY..=1.1 * CAPACITY).contains(&best),
        "best {best}, curve {curve:?}"
    );
    let hi = r.lowest_failing_rate_per_s.unwrap();
    assert!(hi > best && hi <= 2.2 * CAPACITY, "{best} {hi} {curve:?}");
    assert!(r.points.len() <= 10);
    // The probes that met it really had p99 under 60 ms (corrected, open loop) and at
    // least the service time.
    for p in r.points.iter().filter(|p| p.meets) {
        let v = p.latency_at_objective_ns.unwrap();
        assert!((10_000_000..60_000_000).contains(&v), "{v}");
        assert_eq!(p.step.latency_kind, "corrected");
    }
    // The server answered at least every reply the generator counted.
    let replies: u64 = r.points.iter().map(|p| p.step.replies).sum();
    assert!(server.served.load(Ordering::Relaxed) >= replies);
    let m = r.to_metrics();
    assert!(m
        .iter()
        .any(|m| m.name == "max_rate_meeting_slo_per_s" && m.value == best));
}

#[test]
fn ramp_finds_the_saturation_point_and_a_dying_server_ends_it_clearly() {
    let server = SlowServer::start(WORKERS, SERVICE);
    let ctx = common::local();
    let mut h = workload(&server.url(), json!({}), &ctx);
    let cfg = RampConfig {
        low_rate_per_s: 100.0,
        high_rate_per_s: 400.0,
        step_rate_per_s: 50.0,
        ..RampConfig::default()
    };
    let r = capacity::ramp(&cfg, |rate| h.measure_rate(rate, &ctx)).unwrap();
    eprintln!("{}", r.table());
    let s = r
        .saturation
        .clone()
        .unwrap_or_else(|| panic!("{}", r.table()));
    // 90% of 200/s is 180/s, which the server just makes: saturation at 200 or 250,
    // give or take a step for a busy machine.
    assert!(
        s.demanded_rate_per_s >= 150.0 && s.demanded_rate_per_s <= 300.0,
        "{}",
        r.table()
    );
    assert!(s.reply_rate_per_s < 0.9 * s.demanded_rate_per_s);
    assert!(r.points[..s.index]
        .iter()
        .all(|p| p.verdict == Verdict::Sustained));
    assert!(r.stopped.is_none());

    // A fresh server (the first one is still working off the saturated step's queue)
    // that stops after the first step: the ramp ends with what it measured and says why.
    drop(h);
    drop(server);
    let mut server = SlowServer::start(WORKERS, SERVICE);
    let mut h = workload(&server.url(), json!({}), &ctx);
    let mut n = 0;
    let r = capacity::ramp(&cfg, |rate| {
        n += 1;
        if n == 2 {
            server.stop();
        }
        h.measure_rate(rate, &ctx)
    })
    .unwrap();
    eprintln!("{}\nstopped: {:?}", r.table(), r.stopped);
    assert_eq!(r.points.len(), 1);
    assert_eq!(r.points[0].verdict, Verdict::Sustained);
    let why = r.stopped.clone().expect("a stopped server ends the ramp");
    assert!(
        why.contains("150/s") && (why.contains("connect") || why.contains("connection")),
        "{why}"
    );
    assert!(
        r.saturation.is_none(),
        "a dead server is not a saturation point"
    );
    assert!(r.missing()[0]
        .reason
        .contains("ramp ended before saturation"));
}

#[test]
fn run_test_outputs_for_each_capacity_test() {
    let server = SlowServer::start(WORKERS, SERVICE);
    let ctx = common::local();
    let dir = tempfile::tempdir().unwrap();
    let hlog = dir.path().join("ramp.hlog");
    let mut h = workload(
        &server.url(),
        json!({
            "tests": ["ramp", "levels"],
            "ramp_low": 50, "ramp_high": 100, "ramp_step": 50,
            "levels": [100, 50], "idle_duration": 0.2,
            "hlog": hlog.display().to_string(),
        }),
        &ctx,
    );
    let ramp = h.run_test("ramp", &ctx).unwrap();
    assert_eq!(ramp.headline, "max_reply_rate_per_s");
    let peak = ramp
        .metrics
        .iter()
        .find(|m| m.name == "max_reply_rate_per_s")
        .unwrap()
        .value;
    assert!(peak > 80.0, "{peak}");
    // Both steps were sustained: the saturation point is missing with a reason.
    assert!(ramp.missing[0].reason.contains("raise --ramp-high"));
    assert_eq!(ramp.histograms.len(), 2);
    // The interval log reads back with HdrHistogram's reader: one interval per step.
    let text = std::fs::read(&hlog).unwrap();
    let intervals: Vec<_> =
        hdrhistogram::serialization::interval_log::IntervalLogIterator::new(&text)
            .filter_map(|e| match e.unwrap() {
                hdrhistogram::serialization::interval_log::LogEntry::Interval(i) => Some(i),
                _ => None,
            })
            .collect();
    assert_eq!(intervals.len(), 2);
    assert_eq!(intervals[1].tag().unwrap().as_str(), "rate=100");
    assert!(intervals[1].duration() >= Duration::from_millis(300));

    // Levels take the ramp's last sustained rate (100/s) as capacity.
    let levels = h.run_test("levels", &ctx).unwrap();
    let get = |name: &str, level: &str| {
        levels
            .metrics
            .iter()
            .find(|m| m.name == name && m.labels.get("level").map(String::as_str) == Some(level))
            .map(|m| m.value)
    };
    assert_eq!(get("target_rate_per_s", "100%"), Some(100.0));
    assert_eq!(get("target_rate_per_s", "50%"), Some(50.0));
    assert_eq!(get("target_rate_per_s", "active_idle"), Some(0.0));
    let half = get("reply_rate_per_s", "50%").unwrap();
    assert!((half - 50.0).abs() < 15.0, "{half}");
    // No power source in a test: the overall figure is missing, with the reason.
    assert_eq!(levels.headline, "overall_reply_rate_per_w");
    assert!(levels.missing[0].reason.contains("no power reading"));
    h.cleanup();
}

fn fails_to_drive(
    _: &engine::host::DriverJob,
    _: &engine::workload::Progress,
) -> anyhow::Result<serde_json::Value> {
    std::thread::sleep(Duration::from_millis(300));
    anyhow::bail!("the generator caught fire")
}

fn broken_catalog(name: &str) -> Option<Registration> {
    let mut r = common::catalog(name)?;
    r.driver = Some(fails_to_drive);
    Some(r)
}

#[test]
fn a_failed_generator_fails_the_result_and_keeps_what_the_other_measured() {
    let server = SlowServer::start(WORKERS, SERVICE);
    let good = Arc::new(LocalHost::new("gen-a", common::catalog, false)) as Arc<dyn Host>;
    let broken = Arc::new(LocalHost::new("gen-b", broken_catalog, false)) as Arc<dyn Host>;
    let ctx = Ctx {
        roles: Some(Roles {
            sut: good.clone(),
            loadgens: vec![good, broken],
        }),
        ..Ctx::quiet()
    };
    let mut h = workload(
        &server.url(),
        json!({"connections": 4, "duration": 5, "warmup": 0}),
        &ctx,
    );
    let out = h.run_test("load", &ctx).unwrap();
    let err = out
        .error
        .clone()
        .expect("a failed generator fails the result");
    assert!(
        err.contains("gen-b") && err.contains("caught fire"),
        "{err}"
    );
    assert!(out.flags.iter().any(|f| f.code == "host_failed"));
    let metric = |name: &str| {
        out.metrics
            .iter()
            .find(|m| m.name == name && m.labels.is_empty())
            .unwrap_or_else(|| panic!("no metric {name}"))
            .value
    };
    // gen-a's load is kept, and was ended when gen-b failed rather than run out.
    assert!(metric("requests") > 0.0, "gen-a's measurement is kept");
    assert!(
        metric("measured_duration_s") < 3.0,
        "gen-a stopped early: {}",
        metric("measured_duration_s")
    );
    h.cleanup();
}
