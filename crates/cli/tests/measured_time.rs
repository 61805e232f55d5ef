//! A test's CPU and power summaries cover the time its workload measured, not the setup
//! before it or the teardown after it: a UDP test's receiver waits for late datagrams
//! after the sending ends, and an RSA test makes its key before it signs; the raw
//! samples hold that time, the summary does not.

mod common;

use common::run_json;

/// Seconds the raw samples of `host` span, from the first one's start to the last's end.
fn raw_span(result: &serde_json::Value, host: &str) -> f64 {
    let samples: Vec<&serde_json::Value> = result["telemetry"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["host"] == host)
        .collect();
    let (first, last) = (samples.first().unwrap(), samples.last().unwrap());
    let t = |s: &serde_json::Value, k: &str| s[k].as_f64().unwrap();
    t(last, "t_s") - (t(first, "t_s") - t(first, "interval_s"))
}

/// The summary's covered time against the test's duration: equal (to `slack` seconds),
/// and the raw samples longer by at least `around` (what was left out). A test that ends
/// within 20 ms of a sampling tick ends its last sample at that tick (an interval of
/// /proc/stat's 10 ms ticks is not measured shorter), so up to that much of its end may
/// be uncovered.
fn check(result: &serde_json::Value, slack: f64, around: f64) {
    let summary = &result["telemetry_summary"][0];
    let host = summary["host"].as_str().unwrap();
    let covered = summary["covered_s"].as_f64().unwrap();
    let duration = result["duration_s"].as_f64().unwrap();
    let test = &result["test"];
    let last_tick = telemetry::sampler::MIN_INTERVAL.as_secs_f64();
    assert!(
        covered < duration + slack && covered > duration - slack - last_tick,
        "{test}: the summary covers {covered} s of a {duration} s test"
    );
    let raw = raw_span(result, host);
    assert!(
        raw > covered + around,
        "{test}: nothing around the load to leave out ({raw} s raw, {covered} s covered)"
    );
}

#[test]
fn a_udp_tests_summary_leaves_out_the_receivers_wait_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let (code, run, err) = run_json(
        &db,
        &[
            "net",
            "--tests",
            "udp1472",
            "--duration",
            "1",
            "--rate",
            "100M",
            "--telemetry-interval",
            "0.25",
        ],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    // One span: the sending, timed on the sender's own clock.
    check(&run["results"][0], 0.002, 0.05);
}

#[test]
fn an_rsa_tests_summary_covers_its_sign_and_verify_not_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let (code, run, err) = run_json(
        &db,
        &[
            "crypto",
            "--tests",
            "rsa4096",
            "--threads",
            "1",
            "--duration",
            "0.5",
            "--telemetry-interval",
            "0.25",
        ],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    // Two spans (sign, verify), each from its thread's start to its end; making a
    // 4096-bit key takes well over 50 ms.
    check(&run["results"][0], 0.005, 0.05);
}
