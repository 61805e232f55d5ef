//! Many hosts, for real: network namespaces joined by a bridge, an sshd in each with its
//! own host key and hostname (`scripts/testhosts.sh up`, which `scripts/test.sh` runs
//! as root and exports RACKBENCH_TESTHOSTS_ENV for). Each test host's telemetry is shown
//! to be its own: namespaces share the CPUs and the clock, but each has its own NICs in
//! /proc/net/dev and its own hostname, and the samples and disclosures must carry them.
//!
//! Without test hosts (not root, no `ip netns`) every test here says why and passes
//! vacuously; CI always has them.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::bin;
use serde_json::Value;

/// The tests share the namespaces and kill things in them: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

struct TestHosts {
    names: Vec<String>,
    ssh_config: String,
}

fn testhosts() -> Option<TestHosts> {
    let Some(env) = std::env::var_os("RACKBENCH_TESTHOSTS_ENV") else {
        eprintln!(
            "skipped: no test hosts ({}); run `bash scripts/testhosts.sh up` as root and set RACKBENCH_TESTHOSTS_ENV",
            std::env::var("RACKBENCH_TESTHOSTS_SKIP").unwrap_or_else(|_| "RACKBENCH_TESTHOSTS_ENV is not set".into())
        );
        return None;
    };
    let text = std::fs::read_to_string(PathBuf::from(env)).expect("the test hosts' env file");
    let vars: BTreeMap<String, String> = text
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().trim_matches('"').to_string()))
        .collect();
    Some(TestHosts {
        names: vars["RB_TESTHOSTS"]
            .split_whitespace()
            .map(String::from)
            .collect(),
        ssh_config: vars["RB_SSH_CONFIG"].clone(),
    })
}

fn lock() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Command lines of the processes running in namespace `ns`.
fn procs_in(ns: &str) -> Vec<(u32, String)> {
    let out = Command::new("ip")
        .args(["netns", "pids", ns])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|p| p.parse::<u32>().ok())
        .filter_map(|p| {
            let cmd = std::fs::read_to_string(format!("/proc/{p}/cmdline")).ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
            (!stat.contains(") Z ")).then(|| (p, cmd.replace('\0', " ")))
        })
        .collect()
}

/// What rackbench left running in the namespaces: agents and servers.
fn leftovers(h: &TestHosts) -> Vec<String> {
    h.names
        .iter()
        .flat_map(|ns| {
            procs_in(ns)
                .into_iter()
                .filter(|(_, c)| {
                    c.contains(" agent ") || c.contains("redis-server") || c.contains("net serve")
                })
                .map(move |(p, c)| format!("{ns}: {p} {c}"))
        })
        .collect()
}

/// Wait until nothing of rackbench runs in any namespace (or fail after `secs`).
fn assert_nothing_left(h: &TestHosts, secs: u64) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let left = leftovers(h);
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "left running after {secs} s: {left:#?}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn run_json(h: &TestHosts, db: &std::path::Path, args: &[&str]) -> (i32, Value, String) {
    let out = bin()
        .args(["--db", db.to_str().unwrap(), "run"])
        .args(args)
        .args(["--ssh-config", &h.ssh_config, "--json", "-q"])
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

fn runs_in(db: &std::path::Path) -> usize {
    let out = bin()
        .args(["--db", db.to_str().unwrap(), "runs", "--json"])
        .output()
        .unwrap();
    serde_json::from_slice::<Value>(&out.stdout)
        .ok()
        .and_then(|v| v.as_array().map(|a| a.len()))
        .unwrap_or(0)
}

#[test]
fn hosts_check_reports_each_host_as_itself() {
    let Some(h) = testhosts() else { return };
    let _l = lock();
    let out = bin()
        .args(["--json", "hosts", "check", "--ssh-config", &h.ssh_config])
        .args(&h.names)
        .arg("local")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    for (i, name) in h.names.iter().enumerate() {
        let c = &v[i];
        assert_eq!(c["reachable"], true, "{c}");
        // Its own UTS namespace: the hostname is the test host's, not this machine's.
        assert_eq!(c["hostname"], name.as_str(), "{c}");
        assert_eq!(c["address"], format!("10.77.0.{}", i + 1));
        assert!(c["clock_offset_ms"].as_f64().is_some(), "{c}");
        assert!(c["rackbench"]
            .as_str()
            .unwrap()
            .starts_with(env!("CARGO_PKG_VERSION")));
    }
    assert_eq!(v[h.names.len()]["host"], "local");
    assert_nothing_left(&h, 10);
}

#[test]
fn an_unknown_or_changed_host_key_is_refused_and_nothing_is_stored() {
    let Some(h) = testhosts() else { return };
    let _l = lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let (code, _, err) = run_json(&h, &db, &["kv", "-n", "1000", "--sut", "rbh1-badkey"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("host key") && err.contains("rbh1-badkey"),
        "{err}"
    );
    assert!(
        err.contains("ssh-keygen -R") || err.contains("ssh-keyscan"),
        "says what to run: {err}"
    );
    // An unresolvable host is named too.
    let (code, _, err) = run_json(
        &h,
        &db,
        &[
            "kv",
            "-n",
            "1000",
            "--sut",
            "rbh1",
            "--loadgen",
            "no-such-host.invalid",
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no-such-host.invalid"), "{err}");
    assert_eq!(runs_in(&db), 0, "nothing stored");
    assert_nothing_left(&h, 10);
}

/// A kv run in the background: servers on rbh1, generators on rbh2 (and rbh3).
fn spawn_kv(h: &TestHosts, db: &std::path::Path, secs: u32, loadgens: &str) -> std::process::Child {
    bin()
        .args([
            "--db",
            db.to_str().unwrap(),
            "run",
            "kv",
            "-t",
            "get",
            "-c",
            "4",
            "--rate",
            "2000",
        ])
        .args([
            "--duration",
            &secs.to_string(),
            "--sut",
            "rbh1",
            "--loadgen",
            loadgens,
        ])
        .args(["--ssh-config", &h.ssh_config, "--json", "-q"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Wait until `ns` runs a rackbench agent that drives load (its redis peer is up).
fn agent_pid(ns: &str, within: Duration) -> u32 {
    let deadline = Instant::now() + within;
    loop {
        if let Some((p, _)) = procs_in(ns)
            .into_iter()
            .find(|(_, c)| c.contains(" agent "))
        {
            return p;
        }
        assert!(Instant::now() < deadline, "no agent appeared on {ns}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn finish(child: std::process::Child, within: Duration) -> (i32, Value, String, Duration) {
    let t = Instant::now();
    let pid = child.id();
    let waiter = std::thread::spawn(move || child.wait_with_output().unwrap());
    while !waiter.is_finished() {
        if t.elapsed() > within {
            // SAFETY: kill(2) on our own child.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            panic!("rackbench did not end within {within:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = waiter.join().unwrap();
    (
        out.status.code().unwrap_or(-1),
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
        String::from_utf8_lossy(&out.stderr).to_string(),
        t.elapsed(),
    )
}

/// The stored run (by `show latest --json`).
fn latest(db: &std::path::Path) -> Value {
    let out = bin()
        .args(["--db", db.to_str().unwrap(), "show", "latest", "--json"])
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

fn assert_failed_naming(run: &Value, host: &str) {
    let results = run["results"].as_array().expect("results stored");
    assert!(!results.is_empty(), "what was measured is stored: {run}");
    let r = &results[results.len() - 1];
    assert_eq!(r["status"], "failed", "{r}");
    let err = r["error"].as_str().unwrap_or_default();
    assert!(err.contains(host), "the error names {host}: {err}");
    assert!(
        r["metrics"].as_array().is_some_and(|m| !m.is_empty())
            || r["histograms"].as_array().is_some_and(|h| !h.is_empty()),
        "what the other generator measured is kept: {r}"
    );
}

#[test]
fn kill_9_of_an_agent_fails_the_step_naming_its_host_and_keeps_the_rest() {
    let Some(h) = testhosts() else { return };
    let _l = lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let child = spawn_kv(&h, &db, 20, "rbh2,rbh3");
    let victim = agent_pid("rbh3", Duration::from_secs(30));
    std::thread::sleep(Duration::from_secs(4));
    // SAFETY: kill(2) on the agent process in the test namespace.
    unsafe { libc::kill(victim as i32, libc::SIGKILL) };
    let (code, _, err, took) = finish(child, Duration::from_secs(40));
    assert_eq!(code, 1, "{err}");
    assert!(
        took < Duration::from_secs(25),
        "noticed at once, not at the end: {took:?}"
    );
    assert_failed_naming(&latest(&db), "rbh3");
    assert_nothing_left(&h, 15);
}

#[test]
fn an_agent_stopped_with_sigstop_is_noticed_within_seconds() {
    let Some(h) = testhosts() else { return };
    let _l = lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let child = spawn_kv(&h, &db, 30, "rbh2,rbh3");
    let victim = agent_pid("rbh2", Duration::from_secs(30));
    std::thread::sleep(Duration::from_secs(4));
    let stopped = Instant::now();
    // SAFETY: kill(2) on the agent process in the test namespace.
    unsafe { libc::kill(victim as i32, libc::SIGSTOP) };
    let (code, _, err, _) = finish(child, Duration::from_secs(45));
    let noticed = stopped.elapsed();
    assert_eq!(code, 1, "{err}");
    assert!(noticed < Duration::from_secs(15), "noticed in {noticed:?}");
    assert_failed_naming(&latest(&db), "rbh2");
    // The stopped agent was killed over a fresh connection; its servers went with it.
    assert_nothing_left(&h, 15);
}

#[test]
fn a_link_set_down_mid_run_is_noticed_and_nothing_stays_on_either_side() {
    let Some(h) = testhosts() else { return };
    let _l = lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let child = spawn_kv(&h, &db, 30, "rbh2");
    agent_pid("rbh2", Duration::from_secs(30));
    std::thread::sleep(Duration::from_secs(4));
    let link = |state: &str| {
        let ok = Command::new("ip")
            .args(["netns", "exec", "rbh2", "ip", "link", "set", "eth0", state])
            .status()
            .unwrap()
            .success();
        assert!(ok, "ip link set eth0 {state} in rbh2");
    };
    let cut = Instant::now();
    link("down");
    let (code, _, err, _) = finish(child, Duration::from_secs(45));
    let noticed = cut.elapsed();
    link("up");
    assert_eq!(code, 1, "{err}");
    assert!(noticed < Duration::from_secs(20), "noticed in {noticed:?}");
    let run = latest(&db);
    let r = run["results"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(r["status"], "failed", "{r}");
    assert!(
        r["error"].as_str().unwrap_or_default().contains("rbh2"),
        "{r}"
    );
    // Cut off from its controller, the agent on rbh2 stops on its own; rbh1's servers
    // were stopped by the teardown.
    assert_nothing_left(&h, 20);
}

#[test]
fn rackbench_killed_leaves_nothing_running_on_any_host() {
    let Some(h) = testhosts() else { return };
    let _l = lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let mut child = spawn_kv(&h, &db, 30, "rbh2,rbh3");
    agent_pid("rbh3", Duration::from_secs(30));
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        !leftovers(&h).is_empty(),
        "the run is under way on the hosts"
    );
    child.kill().unwrap();
    let _ = child.wait();
    assert_nothing_left(&h, 15);
}
