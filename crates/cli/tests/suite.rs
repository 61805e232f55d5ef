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
