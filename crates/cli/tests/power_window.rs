//! A power source that gives the watts of the moment (here a `--power-meter` command) is
//! read at the sampler's ticks while the load runs, never at the close a test's end makes
//! once the load has stopped: a run longer than the interval has its meter figure from
//! the ticks alone, and one shorter has none, with the reason.

mod common;

use common::run_json;

const METER: &[&str] = &["--power-meter", "echo 200", "--idle-power", "0"];

fn args<'a>(duration: &'a str, interval: &'a str) -> Vec<&'a str> {
    let mut a = vec![
        "crypto",
        "--tests",
        "sha256",
        "--buffer-sizes",
        "1024",
        "--threads",
        "1",
        "--duration",
        duration,
        "--telemetry-interval",
        interval,
    ];
    a.extend_from_slice(METER);
    a
}

#[test]
fn a_meter_is_read_at_ticks_inside_the_load_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let (code, run, err) = run_json(&db, &args("1.2", "0.25"), &[]);
    assert_eq!(code, 0, "{err}");
    let result = &run["results"][0];
    let samples = result["telemetry"].as_array().unwrap();
    let meter = |s: &serde_json::Value| {
        s["power"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["source"] == "meter")
    };
    let (last, ticks) = samples.split_last().unwrap();
    assert!(ticks.len() >= 2, "{samples:?}");
    assert!(ticks.iter().all(meter), "{samples:?}");
    assert!(!meter(last), "the test's end read the meter: {last}");
    let summary = &result["telemetry_summary"][0];
    let m = summary["power"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["source"] == "meter")
        .unwrap();
    assert!((m["mean_watts"].as_f64().unwrap() - 200.0).abs() < 1e-6);
}

#[test]
fn a_test_shorter_than_the_interval_says_why_it_has_no_meter_figure() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let (code, run, err) = run_json(&db, &args("0.3", "1"), &[]);
    assert_eq!(code, 0, "{err}");
    let summary = &run["results"][0]["telemetry_summary"][0];
    assert_eq!(summary["power"].as_array().unwrap().len(), 0, "{summary}");
    let why = summary["power_missing"].as_str().unwrap();
    assert!(
        why.contains("no power reading inside the test") && why.contains("meter:system"),
        "{why}"
    );
}
