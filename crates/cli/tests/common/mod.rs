//! Helpers the binary's end-to-end tests share: the binary itself, whether a server
//! program is installed, and `run ... --json` against a results store in a temp dir.

#![allow(dead_code)] // each test file uses its own subset

use std::path::Path;
use std::process::Command;

/// The rackbench binary under test, with no results store inherited from the environment.
pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rackbench"));
    c.env_remove("RACKBENCH_DB");
    c
}

/// Is `binary` on PATH? Says which package to install when it is not (the test skips).
pub fn have(binary: &str, package: &str) -> bool {
    let ok = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(binary).is_file()))
        .unwrap_or(false);
    if !ok {
        eprintln!("skipped: {binary} is not installed (apt-get install {package})");
    }
    ok
}

/// `rackbench --db DB run ARGS... --json -q EXTRA...`: exit code, the run's JSON (Null
/// when none was printed), stderr.
pub fn run_json(db: &Path, args: &[&str], extra: &[&str]) -> (i32, serde_json::Value, String) {
    let out = bin()
        .args(["--db", db.to_str().unwrap(), "run"])
        .args(args)
        .args(["--json", "-q"])
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out.status.code().unwrap_or(-1), v, stderr)
}

/// Each result of a run's JSON in one line (its test, status and flags), for an
/// assertion's message: the whole run's JSON is cut short in a CI log before its flags.
pub fn results_said(run_json: &str) -> String {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(run_json) else {
        return format!("not a run's JSON: {run_json}");
    };
    let results = v["results"].as_array().cloned().unwrap_or_default();
    results
        .iter()
        .map(|r| format!("{} {}: flags {}", r["test"], r["status"], r["flags"]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `rackbench ARGS...`: exit code, stdout, stderr.
pub fn run(args: &[&str]) -> (i32, String, String) {
    let out = bin().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// Live processes whose parent is `ppid` and whose command line mentions `name`, with
/// their command lines.
pub fn children_named(ppid: u32, name: &str) -> Vec<(u32, String)> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|p| {
            let cmd = std::fs::read_to_string(format!("/proc/{p}/cmdline")).ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
            let parent: u32 = stat
                .rsplit(')')
                .next()?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            (cmd.contains(name) && parent == ppid && !stat.contains(") Z ")).then_some((p, cmd))
        })
        .collect()
}

/// The latest run in `db` as `show latest --json` gives it (Null before there is one).
pub fn show_latest(db: &Path) -> serde_json::Value {
    let out = bin()
        .args(["--db", db.to_str().unwrap(), "show", "latest", "--json"])
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_default()
}

/// Kill `child` (a `run` storing into `db`) outright (SIGKILL) once the test under way
/// has a provisional result of `at_least_s` measured seconds or more (two checkpoints
/// for 10 s), or after `within`; the run as stored after the kill, as the next command
/// closes it.
pub fn kill9_once_measured(
    mut child: std::process::Child,
    db: &Path,
    at_least_s: f64,
    within: std::time::Duration,
) -> serde_json::Value {
    let measured = |run: &serde_json::Value| run["results"][0]["duration_s"].as_f64();
    let start = std::time::Instant::now();
    while start.elapsed() < within && measured(&show_latest(db)).unwrap_or(0.0) < at_least_s {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    show_latest(db)
}

/// `rackbench run ARGS -q` into `db`, killed outright (kill -9) once its test has a
/// checkpoint of `at_least_s` measured seconds or more ([`kill9_once_measured`]).
pub fn run_killed_once_measured(
    db: &Path,
    args: &[&str],
    at_least_s: f64,
    within: std::time::Duration,
) -> serde_json::Value {
    let child = bin()
        .args(["--db", db.to_str().unwrap(), "run"])
        .args(args)
        .arg("-q")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    kill9_once_measured(child, db, at_least_s, within)
}

/// The one result of `run`, a test killed at a checkpoint: stored `interrupted`, marked
/// `partial` with the checkpoint it is of (its `duration_s`) against the `planned_s` of
/// `test`. Returns it and its window.
pub fn checkpointed_result<'a>(
    run: &'a serde_json::Value,
    test: &str,
    planned_s: f64,
) -> (&'a serde_json::Value, f64) {
    let r = interrupted_result(run);
    let window = r["duration_s"].as_f64().unwrap();
    assert!(
        (10.0..planned_s).contains(&window),
        "the window measured: {window} s"
    );
    let message = partial_message(r);
    assert!(
        message.starts_with(&format!(
            "the {test} test did not finish (rackbench was killed, or the machine stopped): \
             measured until a checkpoint at {window:.1} s of {planned_s:.1} s"
        )),
        "{message}"
    );
    (r, window)
}

/// The one result of `run`, both stored `interrupted` (the process ended mid-test).
pub fn interrupted_result(run: &serde_json::Value) -> &serde_json::Value {
    assert_eq!(run["status"], "interrupted", "{run}");
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{run}");
    let r = &results[0];
    assert_eq!(r["status"], "interrupted", "{r}");
    r
}

/// The message of a stored result's `partial` flag (a checkpoint's).
pub fn partial_message(r: &serde_json::Value) -> &str {
    r["flags"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "partial")
        .and_then(|f| f["message"].as_str())
        .unwrap_or_else(|| panic!("no partial flag: {r}"))
}

/// The unlabelled metric `name` of a stored result.
pub fn stored_metric(r: &serde_json::Value, name: &str) -> Option<f64> {
    r["metrics"]
        .as_array()?
        .iter()
        .find(|m| m["name"] == name && m["labels"].as_object().is_none_or(|l| l.is_empty()))
        .and_then(|m| m["value"].as_f64())
}

/// Whether a stored result has `name` missing with a reason that says `says`.
pub fn missing_saying(r: &serde_json::Value, name: &str, says: &str) -> bool {
    r["missing"].as_array().is_some_and(|m| {
        m.iter()
            .any(|m| m["name"] == name && m["reason"].as_str().is_some_and(|s| s.contains(says)))
    })
}

/// A finished test's result: `ok`, with no `partial` mark of a checkpoint left.
pub fn assert_finished(r: &serde_json::Value) {
    assert_eq!(r["status"], "ok", "{r}");
    assert!(
        r["flags"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["code"] != "partial"),
        "{r}"
    );
}
