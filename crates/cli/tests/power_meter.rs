//! `--power-meter CMD` end to end, with real meter scripts: one that cannot give a
//! valid reading stops the run before anything starts (exit 2, nothing stored); one that
//! fails or hangs while a test runs leaves gaps the result says, without holding up the
//! CPU sampling; the disclosure says what measured the power (acceptance pass F, 2, 3
//! and 6).

mod common;

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use common::{bin, run_json};

/// An executable shell script `name` in `dir` with `body` after the `#!/bin/sh` line.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// A short crypto test: no server to launch, a second of load.
fn crypto(duration: &str, interval: &str, meter: &Path) -> Vec<String> {
    [
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
        "--idle-power",
        "0",
        "--power-meter",
        meter.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec()
}

fn stored_runs(db: &Path) -> usize {
    if !db.exists() {
        return 0;
    }
    let out = bin()
        .args(["--db", db.to_str().unwrap(), "export", "--all"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["runs"].as_array().map_or(0, Vec::len)
}

#[test]
fn a_meter_without_a_valid_reading_stops_the_run_before_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let cases: &[(&str, &str, &str)] = &[
        ("fail", "echo oops >&2; exit 1", "oops"),
        (
            "garbage",
            "echo 'watts: lots'",
            "printed no watts (first line: \"watts: lots\")",
        ),
        ("negative", "echo -5", "negative watts (-5)"),
        ("nan", "echo NaN", "\"NaN\", not a number of watts"),
        ("inf", "echo inf", "\"inf\", not a number of watts"),
        ("absurd", "echo 1e300", "more than the 100 kW"),
        ("several", "echo 100; echo 200", "2 numbers (100, 200)"),
        ("nothing", "true", "printed nothing"),
    ];
    for (name, body, says) in cases {
        let meter = script(dir.path(), &format!("m_{name}.sh"), body);
        let args = crypto("1", "1", &meter);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, json, err) = run_json(&db, &args, &[]);
        assert_eq!(code, 2, "{name}: {err}");
        assert!(err.contains(says), "{name} should say {says:?}: {err}");
        assert!(err.contains("--power-meter"), "{name}: {err}");
        assert!(err.contains("leave --power-meter out"), "{name}: {err}");
        assert!(json.is_null(), "{name}: {json}");
        assert_eq!(stored_runs(&db), 0, "{name}: a run was stored");
    }
}

/// Every second call of the meter fails: the test's power summary covers only the
/// samples with a reading, and the result carries a `power_gaps` warning saying how
/// many failed and why. The host's disclosure names the meter (it said "meter: none
/// configured" of runs measured with one).
#[test]
fn a_meter_failing_during_a_test_leaves_gaps_the_result_says() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let meter = script(
        dir.path(),
        "flaky.sh",
        "d=$(dirname \"$0\"); n=$(cat \"$d/n\" 2>/dev/null || echo 0); n=$((n+1)); \
         echo $n > \"$d/n\"\n\
         if [ $((n % 2)) -eq 0 ]; then echo broke >&2; exit 3; fi\n\
         echo 100",
    );
    // A secret on the meter's command line stays out of what is stored.
    let mut args = crypto("3", "0.5", &meter);
    let last = args.len() - 1;
    args[last] = format!("{} --password=hunter2", meter.display());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, run, err) = run_json(&db, &args, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(!run.to_string().contains("hunter2"), "{run}");
    let result = &run["results"][0];
    let summary = &result["telemetry_summary"][0];
    let gaps = &summary["power_gaps"];
    assert!(gaps["failed_samples"].as_u64().unwrap() >= 1, "{summary}");
    assert!(
        gaps["last_error"].as_str().unwrap().contains("broke"),
        "{gaps}"
    );
    let covered = summary["covered_s"].as_f64().unwrap();
    assert!(gaps["covered_s"].as_f64().unwrap() < covered, "{summary}");
    let flag = result["flags"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "power_gaps")
        .unwrap_or_else(|| panic!("no power_gaps flag: {}", result["flags"]));
    let msg = flag["message"].as_str().unwrap();
    assert!(
        msg.contains("samples have no power reading") && msg.contains("broke"),
        "{msg}"
    );
    assert!(!msg.contains("  "), "runs of spaces in {msg:?}");

    let sources = run["hosts"][0]["facts"]["power.sources"]["value"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", run["hosts"][0]["facts"]["power.sources"]));
    // Its program, not its command line: a PDU's credentials come in too many shapes.
    assert!(
        sources.contains("meter:system (`flaky.sh` via --power-meter, whole system)"),
        "{sources}"
    );
    assert!(!sources.contains("password"), "{sources}");
    assert!(!sources.contains("none configured"), "{sources}");
}

/// A meter that hangs from its third call on: the sampler does not wait for it, so the
/// CPU keeps its samples at the interval (a hang used to stall all sampling on the
/// host, one sample standing for the whole wait), and the gaps are said.
#[test]
fn a_hanging_meter_does_not_hold_up_the_cpu_sampling() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let meter = script(
        dir.path(),
        "hang.sh",
        "d=$(dirname \"$0\"); n=$(cat \"$d/n\" 2>/dev/null || echo 0); n=$((n+1)); \
         echo $n > \"$d/n\"\n\
         if [ $n -ge 3 ]; then exec sleep 3; fi\n\
         echo 100",
    );
    let args = crypto("3", "0.5", &meter);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, run, err) = run_json(&db, &args, &[]);
    assert_eq!(code, 0, "{err}");
    let result = &run["results"][0];
    let summary = &result["telemetry_summary"][0];
    // Six half-second ticks in the test; a stalled sampler had one or two.
    assert!(summary["samples"].as_u64().unwrap() >= 4, "{summary}");
    assert!(
        summary["power_gaps"]["failed_samples"].as_u64().unwrap() >= 1,
        "{summary}"
    );
    assert!(
        result["flags"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["code"] == "power_gaps"),
        "{}",
        result["flags"]
    );
}

/// An idle power measured before the first test fails is kept: the run is stored,
/// failed with the reason, not deleted as a run of nothing.
#[test]
fn a_measured_idle_power_is_kept_when_the_first_test_fails() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let meter = script(dir.path(), "m.sh", "echo 120");
    let args = [
        "kv",
        "-t",
        "get",
        "-n",
        "1000",
        "--redis-server",
        "/bin/false",
        "--idle-power",
        "1",
        "--power-meter",
        meter.to_str().unwrap(),
    ];
    let (code, _, err) = run_json(&db, &args, &[]);
    assert_ne!(code, 0, "{err}");
    assert_eq!(stored_runs(&db), 1, "{err}");
    let out = bin()
        .args(["--db", db.to_str().unwrap(), "export", "--all"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = &v["runs"][0];
    assert_eq!(run["status"], "failed", "{run}");
    assert!(run["error"].as_str().unwrap().contains("kv"), "{run}");
    let idle = &run["idle_power"][0];
    assert!(idle["duration_s"].as_f64().unwrap() > 0.5, "{idle}");
    assert_eq!(idle["power"][0]["mean_watts"], 120.0, "{idle}");
}

/// Idle power measured while another program spins on a CPU: the idle figure keeps the
/// host's CPU beside its watts and carries an `idle_not_idle` warning, which the
/// report's Idle figure shows (acceptance pass F, 10: it was taken on a busy host
/// without a word).
#[test]
fn idle_power_on_a_busy_host_is_flagged_with_its_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let meter = script(dir.path(), "m.sh", "echo 120");
    let mut spinner = std::process::Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .spawn()
        .unwrap();
    let mut args = crypto("1", "0.5", &meter);
    let at = args.iter().position(|a| a == "--idle-power").unwrap();
    args[at + 1] = "2".into();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, run, err) = run_json(&db, &args, &[]);
    spinner.kill().unwrap();
    spinner.wait().unwrap();
    assert_eq!(code, 0, "{err}");
    let idle = &run["idle_power"][0];
    let all = idle["cpus"]
        .as_array()
        .unwrap_or_else(|| panic!("no CPU beside the idle watts: {idle}"))
        .iter()
        .find(|c| c["cpu"] == -1)
        .unwrap();
    assert!(all["usr_pct"].as_f64().unwrap() > 10.0, "{all}");
    let flag = idle["flags"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "idle_not_idle")
        .unwrap_or_else(|| panic!("no idle_not_idle: {idle}"));
    let msg = flag["message"].as_str().unwrap();
    assert!(msg.contains("while its idle power was measured"), "{msg}");

    let md = dir.path().join("r.md");
    let id = run["id"].as_str().unwrap();
    let out = bin()
        .args(["--db", db.to_str().unwrap(), "report", id, "-o"])
        .arg(&md)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = std::fs::read_to_string(&md).unwrap();
    // This machine by its hostname, as every table names it (it said `host local`).
    let hostname = run["hosts"][0]["facts"]["os.hostname"]["value"]
        .as_str()
        .unwrap_or_else(|| panic!("no hostname disclosed: {}", run["hosts"]));
    assert!(
        md.contains(&format!("⚠ Idle: host {hostname}: while its idle power")),
        "{md}"
    );
}
