//! A suite: several workloads in one plan (seed 001's CPU shoot-out runs memory, RSA, web
//! and database on each platform), run in turn into one stored run.

mod common;

use common::bin;

const PLAN: &str = r#"
[run]
label = "suite"

[mem]
tests = ["latency"]
sizes = "4K,64K"
samples = 3
sample_ms = 2

[crypto]
tests = ["sha256"]
duration = 0.2
threads = [1, 2]
buffer_sizes = [1024]
"#;

fn rackbench_run(dir: &std::path::Path, args: &[&str]) -> (i32, serde_json::Value, String) {
    let db = dir.join("r.sqlite");
    let out = bin()
        .args(["--db", db.to_str().unwrap(), "run"])
        .args(args)
        .args(["--json", "-q", "--no-telemetry"])
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        serde_json::from_slice(&out.stdout).unwrap_or_default(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn workloads_in_order(run: &serde_json::Value) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for r in run["results"].as_array().unwrap() {
        let w = r["workload"].as_str().unwrap().to_string();
        if names.last() != Some(&w) {
            names.push(w);
        }
    }
    names
}

#[test]
fn a_plan_with_several_workloads_runs_each_sweep_in_turn_into_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("suite.toml");
    std::fs::write(&plan, PLAN).unwrap();
    let (code, run, err) = rackbench_run(dir.path(), &["--plan", plan.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(run["status"], "ok");
    assert_eq!(run["label"], "suite");
    // The file's order; each workload once, its sweep whole (crypto's two thread counts).
    assert_eq!(workloads_in_order(&run), ["mem", "crypto"]);
    let crypto_threads: Vec<i64> = run["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["workload"] == "crypto")
        .map(|r| r["params"]["threads"].as_i64().unwrap())
        .collect();
    assert!(
        crypto_threads.contains(&1) && crypto_threads.contains(&2),
        "{crypto_threads:?}"
    );
    // Steps number the whole run.
    let steps: Vec<i64> = run["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["step"].as_i64().unwrap())
        .collect();
    assert!(steps.windows(2).all(|w| w[0] < w[1]), "{steps:?}");
    let suite = run["plan"]["suite"].as_array().unwrap();
    assert_eq!(suite.len(), 2);
    assert_eq!(suite[1]["workload"], "crypto");
    assert_eq!(suite[1]["points"], 2);
    // Its table shows a list setting as its items, not as JSON (`["sha256"]`).
    let db = dir.path().join("r.sqlite");
    let show = bin()
        .args(["--db", db.to_str().unwrap(), "show", "latest"])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&show.stdout);
    let row = table.lines().find(|l| l.contains("crypto/")).unwrap_or("");
    assert!(!row.is_empty() && !row.contains('['), "{table}");

    // Names on the command line choose and order the plan's workloads.
    let (code, run, err) = rackbench_run(
        dir.path(),
        &["crypto,mem", "--plan", plan.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(workloads_in_order(&run), ["crypto", "mem"]);
    let (code, run, err) = rackbench_run(dir.path(), &["crypto", "--plan", plan.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(workloads_in_order(&run), ["crypto"]);
}

#[test]
fn a_suite_refuses_what_it_cannot_mean() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("suite.toml");
    std::fs::write(&plan, PLAN).unwrap();
    // A workload's own flag beside several workloads: which one's?
    let (code, _, err) = rackbench_run(dir.path(), &["crypto,mem", "--tests", "sha256"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("put each workload's parameters in its table"),
        "{err}"
    );
    let (code, _, err) = rackbench_run(dir.path(), &["crypto,crypto"]);
    assert_eq!(code, 2);
    assert!(err.contains("named twice"), "{err}");
    let (code, _, err) = rackbench_run(dir.path(), &["crypto,nosuch"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown workload `nosuch`"), "{err}");
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, format!("{PLAN}\n[crpyto]\ntests = [\"sha256\"]\n")).unwrap();
    let (code, _, err) = rackbench_run(dir.path(), &["--plan", bad.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown table [crpyto]"), "{err}");
    // Nothing was stored by any of them.
    let out = bin()
        .args([
            "--db",
            dir.path().join("r.sqlite").to_str().unwrap(),
            "runs",
            "--json",
        ])
        .output()
        .unwrap();
    let runs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert!(runs.as_array().is_none_or(|a| a.is_empty()), "{runs}");
}

/// Ctrl-C in the middle of a crypto test: the test is stored `interrupted` (not `failed`
/// with "interrupted" as its error), the figures measured before the stop are kept, and
/// rackbench exits 130, as kv does (issue 13: crypto, mem and net were stored failed).
#[test]
fn ctrl_c_stores_a_crypto_test_interrupted_with_what_was_measured() {
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let dbs = db.to_str().unwrap();
    let child = bin()
        .args([
            "--db",
            dbs,
            "run",
            "crypto",
            "-t",
            "sha256",
            "--duration",
            "1",
        ])
        .args(["--buffer-sizes", "16,64,256,1024,4096,16384,65536,262144"])
        .args(["-q", "--no-telemetry"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The run is stored (status running) once its hosts are up and the tests begin.
    let started = Instant::now();
    loop {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the run never started"
        );
        let runs = bin()
            .args(["--db", dbs, "runs", "--json"])
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&runs.stdout).unwrap_or_default();
        if v.as_array().is_some_and(|a| !a.is_empty()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // The first buffer size (1 s) is measured, a later one is under way.
    std::thread::sleep(Duration::from_millis(2500));
    unsafe { kill(child.id() as i32, SIGINT) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(!err.contains("run failed"), "{err}");
    let show = bin()
        .args(["--db", dbs, "show", "latest", "--json"])
        .output()
        .unwrap();
    let run: serde_json::Value = serde_json::from_slice(&show.stdout).unwrap();
    assert_eq!(run["status"], "interrupted", "{run}");
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{run}");
    let r = &results[0];
    assert_eq!(r["status"], "interrupted", "{r}");
    assert!(
        r["error"].is_null(),
        "a stop is not an error: {}",
        r["error"]
    );
    let flags = r["flags"].to_string();
    assert!(flags.contains("stopped by Ctrl-C"), "{flags}");
    let measured = r["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "throughput_mb_per_s" && m["labels"]["buffer_bytes"] == "16")
        .and_then(|m| m["value"].as_f64());
    assert!(
        measured.is_some_and(|v| v > 0.0),
        "the 16-byte figure measured before the stop is kept: {r}"
    );
}

/// Ctrl-C before any test gave a result (here while a variant's setup runs) stored an
/// empty run marked interrupted: now nothing is stored, rackbench says so, and exits as
/// for an interruption.
#[test]
fn ctrl_c_before_any_test_ran_stores_nothing() {
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let mark = dir.path().join("setting-up");
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "[crypto]\ntests = [\"sha256\"]\nduration = 0.2\n\n\
             [[variant]]\nname = \"slow\"\nsetup = [\"touch {}\", \"sleep 30\"]\n",
            mark.display()
        ),
    )
    .unwrap();
    let child = bin()
        .args(["--db", db.to_str().unwrap(), "run", "--plan"])
        .arg(&plan)
        .args(["-q", "--no-telemetry"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !mark.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the setup never began"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    unsafe { kill(child.id() as i32, SIGINT) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(
        err.contains("interrupted before any result was stored; nothing kept"),
        "{err}"
    );
    assert!(!err.contains("what was measured is stored"), "{err}");
    assert!(!db.exists(), "a store was left at {}", db.display());
}

/// The run of `rackbench run ARGS`, killed (kill -9) once a checkpoint of `at_least_s`
/// or more was stored, as the next command shows it.
fn killed_once_measured(args: &[&str], at_least_s: f64) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    common::run_killed_once_measured(&db, args, at_least_s, std::time::Duration::from_secs(40))
}

/// rackbench killed (kill -9) in an RSA test's verifies keeps its last checkpoint: the
/// signs as finished, the verifies counted so far, stored `interrupted` and marked
/// `partial` with the time it is of (rsa2048: 10 s of signs, then 10 s of verifies).
/// Checkpoints fall every 5 s from before the key is made: the one at 15 s is in the
/// verifies, 5 s before their end, however long the key took up to 4 s.
#[test]
fn sigkill_in_a_crypto_test_keeps_its_last_checkpoint() {
    let run = killed_once_measured(&["crypto", "-t", "rsa2048", "--duration", "10"], 11.0);
    let r = common::interrupted_result(&run);
    let window = r["duration_s"].as_f64().unwrap();
    assert!((11.0..20.0).contains(&window), "{window}");
    let message = common::partial_message(r);
    assert!(
        message.starts_with(&format!(
            "the rsa2048 test did not finish (rackbench was killed, or the machine stopped): \
             measured until a checkpoint at {window:.1} s of 20.0 s"
        )),
        "{message}"
    );
    let signs = common::stored_metric(r, "signs_per_s");
    let verifies = common::stored_metric(r, "verifies_per_s");
    assert!(signs.is_some_and(|v| v > 0.0), "{r}");
    assert!(verifies.is_some_and(|v| v > 0.0), "{r}");
    assert!(
        common::missing_saying(r, "verifies_per_cpu_s", "checkpoint"),
        "{r}"
    );
}

/// rackbench killed (kill -9) in a memory latency test keeps the sizes its last
/// checkpoint had measured, each as measured, stored `interrupted` and marked `partial`
/// with how many of the sizes it holds; no memory level is named from a cut curve.
#[test]
fn sigkill_in_a_mem_latency_test_keeps_the_sizes_measured() {
    // Eight sizes of about 2 s each.
    let run = killed_once_measured(
        &[
            "mem",
            "-t",
            "latency",
            "--sizes",
            "4K,8K,16K,32K,64K,128K,256K,512K",
            "--sample-ms",
            "250",
            "--samples",
            "8",
        ],
        9.0,
    );
    let r = common::interrupted_result(&run);
    let sizes = r["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["name"] == "latency_ns")
        .inspect(|m| assert!(m["value"].as_f64().unwrap() > 0.0, "{m}"))
        .count();
    assert!((1..8).contains(&sizes), "{sizes} sizes: {r}");
    let message = common::partial_message(r);
    assert!(
        message.starts_with("the latency test did not finish (rackbench was killed")
            && message.contains(&format!("({sizes} of 8 sizes measured)")),
        "{message}"
    );
    assert!(
        common::missing_saying(r, "ram_latency_ns", "checkpoint"),
        "{r}"
    );
}

const SIGINT: i32 = 2;

extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
}
