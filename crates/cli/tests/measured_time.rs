//! A test's CPU and power summaries cover the time its workload measured, not the setup
//! before it or the teardown after it: a UDP test's receiver waits for late datagrams
//! after the sending ends, and an RSA test makes its key before it signs; the raw
//! samples hold that time, the summary does not; nor does it hold a warm-up asked for.

mod common;

use common::run_json;

/// The raw samples of `host`.
fn samples_of<'a>(result: &'a serde_json::Value, host: &str) -> Vec<&'a serde_json::Value> {
    result["telemetry"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["host"] == host)
        .collect()
}

/// Seconds the raw samples of `host` span, from the first one's start to the last's end.
fn raw_span(result: &serde_json::Value, host: &str) -> f64 {
    let samples = samples_of(result, host);
    let (first, last) = (samples.first().unwrap(), samples.last().unwrap());
    let t = |s: &serde_json::Value, k: &str| s[k].as_f64().unwrap();
    t(last, "t_s") - (t(first, "t_s") - t(first, "interval_s"))
}

/// The all-CPU busy of one sample or summary.
fn busy(cpus: &serde_json::Value) -> f64 {
    let all = cpus
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cpu"] == -1)
        .unwrap();
    100.0 - all["idle_pct"].as_f64().unwrap() - all["iowait_pct"].as_f64().unwrap()
}

/// The summary's covered time against the test's duration, for a test timed in `spans`
/// parts: at least the duration less a sampling interval at each end of each part (a
/// sample that holds both load and what was around it is left out), at most the duration
/// and what a sample counted as wholly inside may reach beyond a part's edge (the shortest
/// interval, 20 ms, here), and the raw samples longer by at least `around` (what was left
/// out). With one span, the summary is the mean of a run of whole raw samples, none cut
/// short.
fn check(result: &serde_json::Value, interval: f64, spans: u32, around: f64) {
    let edges = 2.0 * f64::from(spans);
    let slack = 1e-3 + edges * telemetry::sampler::MIN_INTERVAL.as_secs_f64();
    let summary = &result["telemetry_summary"][0];
    let host = summary["host"].as_str().unwrap();
    let covered = summary["covered_s"].as_f64().unwrap();
    let duration = result["duration_s"].as_f64().unwrap();
    let test = &result["test"];
    assert!(
        covered < duration + slack && covered > duration - edges * interval - 1e-3,
        "{test}: the summary covers {covered} s of a {duration} s test"
    );
    let raw = raw_span(result, host);
    assert!(
        raw > covered + around,
        "{test}: nothing around the load to leave out ({raw} s raw, {covered} s covered)"
    );
    assert_eq!(
        summary["measured_t_s"].as_array().map_or(0, Vec::len),
        spans as usize,
        "{test}: {summary}"
    );
    if spans > 1 {
        return;
    }
    let samples = samples_of(result, host);
    let want = busy(&summary["cpus"]);
    let found = (0..samples.len()).any(|i| {
        (i..samples.len()).any(|j| {
            let run = &samples[i..=j];
            let secs: f64 = run.iter().map(|s| s["interval_s"].as_f64().unwrap()).sum();
            let mean = run
                .iter()
                .map(|s| s["interval_s"].as_f64().unwrap() * busy(&s["cpus"]))
                .sum::<f64>()
                / secs;
            (secs - covered).abs() < 1e-6 && (mean - want).abs() < 1e-6
        })
    });
    assert!(
        found,
        "{test}: {want}% busy over {covered} s is no run of whole samples: {samples:?}"
    );
    // The summary says which samples it took: those inside its stored span, on the
    // samples' own clock, are exactly its time and its mean (acceptance pass F, 14: a
    // result said when its test started, warm-up and key making included, not when it
    // measured).
    let span = summary["measured_t_s"][0].as_array().unwrap();
    let (a, b) = (span[0].as_f64().unwrap(), span[1].as_f64().unwrap());
    assert!(
        (b - a - duration).abs() < 0.05,
        "{test}: span {a}..{b} for {duration} s"
    );
    let t = |s: &serde_json::Value, k: &str| s[k].as_f64().unwrap();
    let inside: Vec<&&serde_json::Value> = samples
        .iter()
        .filter(|s| t(s, "t_s") - t(s, "interval_s") >= a - slack && t(s, "t_s") <= b + slack)
        .collect();
    let secs: f64 = inside.iter().map(|s| t(s, "interval_s")).sum();
    let mean = inside
        .iter()
        .map(|s| t(s, "interval_s") * busy(&s["cpus"]))
        .sum::<f64>()
        / secs;
    assert!(
        (secs - covered).abs() < 1e-6 && (mean - want).abs() < 1e-6,
        "{test}: the samples inside {a}..{b} cover {secs} s at {mean}%, the summary {covered} s at {want}%"
    );
}

/// One net test of 1 s at 100 Mbit/s with telemetry every 0.25 s, and `extra` flags: its
/// stored result.
fn net_result(test: &str, extra: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let mut args = vec!["net", "--tests", test, "--duration", "1", "--rate", "100M"];
    args.extend(["--telemetry-interval", "0.25"]);
    args.extend(extra);
    let (code, run, err) = run_json(&db, &args, &[]);
    assert_eq!(code, 0, "{err}");
    run["results"][0].clone()
}

#[test]
fn a_udp_tests_summary_leaves_out_the_receivers_wait_after_it() {
    // One span: the sending, timed on the sender's own clock.
    check(&net_result("udp1472", &[]), 0.25, 1, 0.05);
}

/// `--warmup` (iperf3 -O): the summary covers the test after it, as its figures do; the
/// raw samples keep the warm-up's second too.
#[test]
fn a_net_tests_summary_leaves_out_its_warmup() {
    let result = net_result("tcp", &["--warmup", "1"]);
    let duration = result["duration_s"].as_f64().unwrap();
    assert!((0.95..1.1).contains(&duration), "{duration} s measured");
    check(&result, 0.25, 1, 0.9);
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
    check(&run["results"][0], 0.25, 2, 0.05);
}
