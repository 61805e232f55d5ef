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
    /// Each host's clock against this one's, seconds (libfaketime in its sessions).
    skew_s: Vec<f64>,
    /// Each host's address on the test bridge.
    ips: Vec<String>,
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
        skew_s: vars
            .get("RB_TESTHOSTS_SKEW_S")
            .map(|v| v.split_whitespace().map(|x| x.parse().unwrap()).collect())
            .unwrap_or_default(),
        ips: vars
            .get("RB_TESTHOSTS_IPS")
            .map(|v| v.split_whitespace().map(String::from).collect())
            .unwrap_or_default(),
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

/// What rackbench left running in the namespaces (agents and servers), and on this
/// machine ssh connections of ours (their control sockets live in rackbench-ssh-*).
fn leftovers(h: &TestHosts) -> Vec<String> {
    let ssh_here = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|p| {
            let cmd = std::fs::read_to_string(format!("/proc/{p}/cmdline"))
                .ok()?
                .replace('\0', " ");
            (cmd.starts_with("ssh") && cmd.contains("rackbench-ssh-"))
                .then(|| format!("here: {p} {cmd}"))
        });
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
        .chain(ssh_here)
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
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    for (i, name) in h.names.iter().enumerate() {
        let c = &v[i];
        assert_eq!(c["reachable"], true, "{c}");
        // Its own UTS namespace: the hostname is the test host's, not this machine's.
        assert_eq!(c["hostname"], name.as_str(), "{c}");
        assert_eq!(c["address"], format!("10.77.0.{}", i + 1));
        // Its clock's offset as set up (host 2 ahead, host 3 behind), to within the
        // estimate's error (half a round trip over the bridge) and the skew's setting.
        let offset_ms = c["clock_offset_ms"].as_f64().unwrap();
        let skew_ms = 1000.0 * h.skew_s.get(i).copied().unwrap_or(0.0);
        assert!((offset_ms - skew_ms).abs() < 20.0, "{skew_ms} ms set: {c}");
        assert!(c["rackbench"]
            .as_str()
            .unwrap()
            .starts_with(env!("CARGO_PKG_VERSION")));
    }
    assert_eq!(v[h.names.len()]["host"], "local");
    assert_nothing_left(&h, 10);
}

/// `hosts check` finds a host's server programs as their launchers do: oltp's where
/// `RACKBENCH_PG_BINDIR` and `RACKBENCH_MARIADB_BINDIR` say when they are set, and the
/// programs that set up a database (`initdb`, `mariadb-install-db`) beside the servers
/// (it listed the postgres under /usr/lib/postgresql where the launcher would not look,
/// and no initdb).
#[test]
fn hosts_check_finds_the_programs_as_their_launchers_do() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let (pg, maria) = (tmp.path().join("pg"), tmp.path().join("maria"));
    std::fs::create_dir(&pg).unwrap();
    std::fs::create_dir(&maria).unwrap();
    for p in ["initdb", "postgres"] {
        std::fs::write(pg.join(p), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(pg.join(p), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // Not executable: not a program a launch could run.
    std::fs::write(maria.join("mariadbd"), "").unwrap();
    let out = bin()
        .env("RACKBENCH_PG_BINDIR", &pg)
        .env("RACKBENCH_MARIADB_BINDIR", &maria)
        .args(["--json", "hosts", "check", "local"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    let servers: BTreeMap<String, Value> = v[0]["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_str().unwrap().to_string(), p[1].clone()))
        .collect();
    for p in ["initdb", "postgres"] {
        assert_eq!(servers[p], pg.join(p).display().to_string(), "{v}");
    }
    for p in ["mariadbd", "mariadb-install-db"] {
        assert_eq!(servers[p], Value::Null, "{v}");
    }
    for p in ["redis-server", "nginx"] {
        assert!(servers.contains_key(p), "{v}");
    }
}

/// `hosts check` says two names of one machine are one (a run refuses them), exit 1;
/// a name ssh could take for something else is bad input, said before any host is
/// tried, not `UNREACHABLE` (acceptance K, 7).
#[test]
fn hosts_check_says_two_names_of_one_machine_and_refuses_a_bad_name() {
    let Some(h) = testhosts() else { return };
    let _l = lock();
    let ip = h.ips[0].clone();
    let check = |names: &[&str]| {
        bin()
            .args(["--json", "hosts", "check", "--ssh-config", &h.ssh_config])
            .args(names)
            .output()
            .unwrap()
    };
    let out = check(&["rbh1", &ip, "rbh2", "rbh2"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 3, "rbh2 checked once: {v}");
    assert_eq!(v[0]["same_machine_as"], serde_json::json!([ip]), "{v}");
    assert_eq!(v[1]["same_machine_as"], serde_json::json!(["rbh1"]), "{v}");
    assert_eq!(v[2]["same_machine_as"], serde_json::json!([]), "{v}");
    let out = check(&["rbh1", "a;b"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("`a;b` is not a host name"), "{err}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
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
    // What to run acts on the files this run read: the known_hosts file ssh named (not
    // ~/.ssh/known_hosts) and the --ssh-config.
    assert!(
        err.contains("ssh-keygen -f") && err.contains("known_hosts.badkey"),
        "says what to run, on which file: {err}"
    );
    assert!(err.contains("ssh -F "), "names the --ssh-config: {err}");
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

/// Ctrl-C while the hosts are being reached leaves no ssh master behind (acceptance O, 6:
/// those of hosts whose connect was abandoned lingered for ControlPersist's 5 s).
#[test]
fn ctrl_c_while_reaching_the_hosts_leaves_no_ssh_master() {
    let Some(h) = testhosts() else { return };
    let _l = lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    for after_ms in [500, 900] {
        let child = spawn_kv(&h, &db, 5, "rbh2,rbh3");
        std::thread::sleep(Duration::from_millis(after_ms));
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let (code, _, err, _) = finish(child, Duration::from_secs(30));
        // 130: stopped; -1: killed by the signal before its handler was in place.
        assert!(
            matches!(code, 130 | -1),
            "{after_ms} ms: exit {code}: {err}"
        );
        assert_nothing_left(&h, 2);
    }
}

/// One machine under two names (a test host and its address) is refused before anything
/// runs: as two hosts, the generator beside the servers was counted as the system under
/// test's own load, and its %CPU used read 153% where it was 45% (acceptance O, 3).
#[test]
fn one_machine_under_two_names_is_refused() {
    let Some(h) = testhosts() else { return };
    let _l = lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let ip = h.ips[0].clone();
    let both = format!("rbh1,{ip}");
    for args in [
        [
            "kv",
            "-n",
            "1000",
            "--sut",
            "rbh1",
            "--loadgen",
            ip.as_str(),
        ],
        [
            "kv",
            "-n",
            "1000",
            "--sut",
            "rbh2",
            "--loadgen",
            both.as_str(),
        ],
    ] {
        let (code, _, err) = run_json(&h, &db, &args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains("are one machine") && err.contains("rbh1") && err.contains(&ip),
            "{err}"
        );
    }
    assert_eq!(runs_in(&db), 0, "nothing stored");
    assert_nothing_left(&h, 10);
}

/// A CPU list is checked against the CPUs of its own host, once the hosts are reached and
/// before any server is launched or anything stored: `--client-cpus 9` on a 2-CPU load
/// generator, or net's `--sender-cpus 7`, were found by the test itself and stored as
/// failed results; a receiver left a `--receiver-cpus` past its CPUs unpinned unsaid.
#[test]
fn a_cpu_list_past_its_hosts_cpus_is_refused_before_anything_runs() {
    let Some(h) = testhosts() else { return };
    let _l = lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let (a, b, c) = (
        h.names[0].as_str(),
        h.names[1].as_str(),
        h.names[2].as_str(),
    );
    // The namespaces share this machine's CPUs.
    // SAFETY: sysconf has no preconditions.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) } as usize;
    let past = (online + 7).to_string();
    let pair = format!("{a}>{b}");
    let kv = ["kv", "--sut", a, "--loadgen", b, "-n", "1000", "-t", "set"];
    let net = ["net", "--pairs", &pair, "--tests", "tcp", "--duration", "1"];
    let crypto = ["crypto", "--sut", c, "-t", "sha256", "--duration", "0.2"];
    let cases: &[(&[&str], &str, String)] = &[
        (&kv, "--client-cpus", format!("the load generator {b}")),
        (&kv, "--server-cpus", format!("the system under test {a}")),
        (&net, "--sender-cpus", format!("the sender {a}")),
        (&net, "--receiver-cpus", format!("the receiver {b}")),
        (&crypto, "--cpus", format!("the system under test {c}")),
    ];
    for (args, flag, host) in cases {
        let mut args = args.to_vec();
        args.extend([*flag, past.as_str()]);
        let (code, _, err) = run_json(&h, &db, &args);
        assert_eq!(code, 2, "{args:?}: {err}");
        let said = format!(
            "{flag} {past}: CPU {past} is not available on {host}, which has CPUs 0-{} online",
            online - 1
        );
        assert!(err.contains(&said), "{args:?}: {err}");
        assert!(err.contains(&format!("or leave {flag} out")), "{err}");
        assert_eq!(runs_in(&db), 0, "{args:?}: nothing stored");
        assert_nothing_left(&h, 10);
    }
    // The CPUs a host has are taken: the last of them is accepted there.
    if !common::have("redis-server", "redis-server") {
        return;
    }
    let last = (online - 1).to_string();
    let (code, run, err) = run_json(&h, &db, &[&kv[..], &["--client-cpus", &last]].concat());
    assert_ne!(code, 2, "{err}");
    assert_eq!(run["results"][0]["status"], "ok", "{run}");
    assert_nothing_left(&h, 10);
    // Namespaces of one machine share its CPUs: a generator pinned to the server's CPU
    // competes with it, though its host has another name (the same boot id).
    let both = ["--client-cpus", &last, "--server-cpus", &last];
    let (_, run, err) = run_json(&h, &db, &[&kv[..], &both].concat());
    let flags = run["results"][0]["flags"].to_string();
    assert!(flags.contains("shares_cpus"), "{err}: {flags}");
    assert_nothing_left(&h, 10);
}

/// A server's program missing on a remote system under test is refused once the hosts
/// are reached, asked of that host, before anything runs or is stored (it was found
/// when its service was prepared: in a suite, after earlier workloads were stored).
#[test]
fn a_server_program_missing_on_a_remote_sut_is_refused_before_anything_runs() {
    let Some(h) = testhosts() else { return };
    let _l = lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let (a, b) = (h.names[0].as_str(), h.names[1].as_str());
    let args = [
        "kv",
        "--sut",
        a,
        "--loadgen",
        b,
        "-n",
        "1000",
        "-t",
        "set",
        "--redis-server",
        "/nonexistent/redis-server",
    ];
    let (code, _, err) = run_json(&h, &db, &args);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!(
            "kv on {a}: --redis-server: `/nonexistent/redis-server` is not an executable file"
        )),
        "{err}"
    );
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

/// A 30 s kv run from `loadgens` against rbh1, 4 s into its load: the run, and the
/// agent on its first generator.
fn kv_under_way(h: &TestHosts, db: &std::path::Path, loadgens: &str) -> (std::process::Child, u32) {
    let mut child = spawn_kv(h, db, 30, loadgens);
    let first = loadgens.split(',').next().unwrap();
    let pid = agent_pid(first, Duration::from_secs(30), &mut child);
    std::thread::sleep(Duration::from_secs(4));
    (child, pid)
}

/// Wait until `ns` runs a rackbench agent that drives load (its redis peer is up). When
/// none comes (the run ended early, or is stuck before the load), the run is killed and
/// the failure shows what it printed and what `ns` runs.
fn agent_pid(ns: &str, within: Duration, child: &mut std::process::Child) -> u32 {
    let deadline = Instant::now() + within;
    loop {
        let seen = procs_in(ns);
        if let Some((p, _)) = seen.iter().find(|(_, c)| c.contains(" agent ")) {
            return *p;
        }
        let ended = child.try_wait().ok().flatten();
        if ended.is_some() || Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            // Read on a thread, for at most 5 s: a process that inherited the pipe
            // would otherwise hold this failure open.
            let (tx, rx) = std::sync::mpsc::channel();
            if let Some(mut e) = child.stderr.take() {
                std::thread::spawn(move || {
                    let mut err = String::new();
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                    let _ = tx.send(err);
                });
            }
            let err = rx
                .recv_timeout(Duration::from_secs(5))
                .unwrap_or_else(|_| "(not read: the pipe stayed open)".into());
            panic!(
                "no agent appeared on {ns} ({}); {ns} runs {seen:?}; rackbench's stderr:\n{err}",
                match ended {
                    Some(st) => format!("rackbench ended first: {st}"),
                    None => format!("rackbench still running after {within:?}"),
                }
            );
        }
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

/// A 20 s kv test from `loadgens` against rbh1 whose agent on `victim` is killed with
/// SIGKILL once the load is under way (the first generator's agent drives it): the run
/// exits 1 soon after, not at its end. Its stored run.
fn kill_9_mid_run(h: &TestHosts, db: &std::path::Path, loadgens: &str, victim: &str) -> Value {
    let mut child = spawn_kv(h, db, 20, loadgens);
    let first = loadgens.split(',').next().unwrap();
    agent_pid(first, Duration::from_secs(30), &mut child);
    let pid = agent_pid(victim, Duration::from_secs(30), &mut child);
    std::thread::sleep(Duration::from_secs(3));
    // SAFETY: kill(2) on the agent process in the test namespace.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let (code, _, err, took) = finish(child, Duration::from_secs(40));
    assert_eq!(code, 1, "{err}");
    // The load had run 3 s at most of its 20: a run that went on to its end took 17 s
    // more at least (a bound of 25 s could not fail).
    assert!(
        took < Duration::from_secs(15),
        "noticed at once, not at the end: {took:?}"
    );
    latest(db)
}

#[test]
fn kill_9_of_an_agent_fails_the_step_naming_its_host_and_keeps_the_rest() {
    let Some(h) = testhosts() else { return };
    let _l = lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let run = kill_9_mid_run(&h, &db, "rbh2,rbh3", "rbh3");
    assert_failed_naming(&run, "rbh3");
    assert_nothing_left(&h, 15);
}

/// A generator's agent killed after the test's first checkpoint was stored: what that
/// host had measured by then stays in the final result, its own figures labelled with
/// the checkpoint's time and its samples kept (acceptance O, 2: the final result dropped
/// rbh3's 154,341 requests and its samples, which the store had held until then).
#[test]
fn a_generator_lost_after_a_checkpoint_keeps_what_it_had_measured() {
    let Some(h) = testhosts() else { return };
    let _l = lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let mut child = spawn_kv(&h, &db, 20, "rbh2,rbh3");
    agent_pid("rbh2", Duration::from_secs(30), &mut child);
    let pid = agent_pid("rbh3", Duration::from_secs(30), &mut child);
    let measured = |run: &Value| run["results"][0]["duration_s"].as_f64();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) && measured(&latest(&db)).unwrap_or(0.0) < 4.0 {
        std::thread::sleep(Duration::from_millis(200));
    }
    // SAFETY: kill(2) on the agent process in the test namespace.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let (code, _, err, _) = finish(child, Duration::from_secs(40));
    assert_eq!(code, 1, "{err}");
    let run = latest(&db);
    assert_failed_naming(&run, "rbh3");
    let r = &run["results"][0];
    let kept = r["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "requests" && m["labels"]["host"] == "rbh3")
        .unwrap_or_else(|| panic!("rbh3's requests kept: {r}"));
    assert!(kept["value"].as_f64().unwrap() > 0.0, "{kept}");
    let at: f64 = kept["labels"]["until_checkpoint_s"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(at >= 4.0, "{kept}");
    // In none of the totals: the whole is rbh2's alone.
    let total = metric(r, "requests", &[]).unwrap();
    let rbh2 = metric(r, "requests", &[("host", "rbh2")]).unwrap();
    assert_eq!(total, rbh2, "{r}");
    let lost = r["flags"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "host_lost")
        .unwrap_or_else(|| panic!("{r}"));
    assert!(
        lost["message"]
            .as_str()
            .unwrap()
            .contains("until_checkpoint_s"),
        "{lost}"
    );
    let of_rbh3 = r["telemetry"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["host"] == "rbh3")
        .count();
    assert!(
        of_rbh3 >= 3,
        "rbh3's samples up to the checkpoint are kept: {of_rbh3}"
    );
    assert!(
        r["telemetry_summary"]
            .as_array()
            .unwrap()
            .iter()
            .all(|x| x["host"] != "rbh3"),
        "and summarized nowhere"
    );
    assert_nothing_left(&h, 15);
}

/// The system under test's agent killed mid-test: the step fails naming rbh1, and its
/// server is `server_unknown` (nobody saw it die: its host cannot be asked), not
/// `server_died`; the generator's figures are kept and nothing is left on any host.
/// (The review of 410dfc1: only `Running::exited` itself was tested.)
#[test]
fn kill_9_of_the_suts_agent_leaves_its_server_unknown_not_dead() {
    let Some(h) = testhosts() else { return };
    let _l = lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let run = kill_9_mid_run(&h, &db, "rbh2", "rbh1");
    assert_failed_naming(&run, "rbh1");
    let r = run["results"].as_array().unwrap().last().unwrap();
    let codes: Vec<&str> = r["flags"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["code"].as_str())
        .collect();
    assert!(codes.contains(&"server_unknown"), "{codes:?}: {r}");
    assert!(!codes.contains(&"server_died"), "{codes:?}: {r}");
    assert_nothing_left(&h, 15);
}

#[test]
fn an_agent_stopped_with_sigstop_is_noticed_within_seconds() {
    let Some(h) = testhosts() else { return };
    let _l = lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let (child, victim) = kv_under_way(&h, &db, "rbh2,rbh3");
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

/// The processes whose parent is `pid`, and theirs.
fn descendants(pid: u32) -> Vec<u32> {
    common::children_named(pid, "")
        .into_iter()
        .flat_map(|(c, _)| std::iter::once(c).chain(descendants(c)))
        .collect()
}

/// A stop that signals rackbench and its ssh clients at once (systemd's stop of a unit
/// does, to every process of its cgroup): the hosts it loses then are the stop's doing,
/// so the test is interrupted, not failed by a host, and nothing stays on any host.
#[test]
fn sigterm_to_rackbench_and_its_ssh_at_once_interrupts_the_run() {
    let Some(h) = testhosts() else { return };
    let _l = lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let (child, _) = kv_under_way(&h, &db, "rbh2");
    let mut all = descendants(child.id());
    all.push(child.id());
    for p in all {
        // SAFETY: kill(2) on rackbench and its own children.
        unsafe { libc::kill(p as i32, libc::SIGTERM) };
    }
    let (code, _, err, _) = finish(child, Duration::from_secs(45));
    assert_eq!(code, 128 + libc::SIGTERM, "{err}");
    let run = latest(&db);
    assert_eq!(run["status"], "interrupted", "{err}: {run}");
    let r = run["results"].as_array().unwrap().last().unwrap();
    assert_eq!(r["status"], "interrupted", "{r}");
    // The hosts lost (their ssh ended with rackbench) are said, as the stop's doing.
    let lost = r["flags"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "host_lost")
        .unwrap_or_else(|| panic!("no host_lost: {r}"));
    let msg = lost["message"].as_str().unwrap();
    assert!(msg.contains("as the run was stopped by SIGTERM"), "{msg}");
    assert_nothing_left(&h, 20);
}

#[test]
fn a_link_set_down_mid_run_is_noticed_and_nothing_stays_on_either_side() {
    let Some(h) = testhosts() else { return };
    let _l = lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let (child, _) = kv_under_way(&h, &db, "rbh2");
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
    // The best-effort kill of the lost agent, still connecting to a host that is down,
    // does not outlive rackbench (it did by its 5 s connect timeout: acceptance pass G, 9).
    std::thread::sleep(Duration::from_millis(300));
    let kills: Vec<String> = leftovers(&h)
        .into_iter()
        .filter(|l| l.starts_with("here:") && l.contains("kill -KILL"))
        .collect();
    link("up");
    assert!(kills.is_empty(), "{kills:#?}");
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
    agent_pid("rbh3", Duration::from_secs(30), &mut child);
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        !leftovers(&h).is_empty(),
        "the run is under way on the hosts"
    );
    child.kill().unwrap();
    let _ = child.wait();
    assert_nothing_left(&h, 15);
}

/// rackbench killed (kill -9) in the middle of a load test driven from two remote
/// generators keeps what they measured up to its last checkpoint: each agent sends its
/// checkpoints in frames, the controller merges the latest of both and stores the merge
/// as the test's provisional result, which the next command closes `interrupted`.
#[test]
fn rackbench_killed_keeps_the_remote_generators_last_checkpoint() {
    let Some(h) = testhosts() else { return };
    let _l = lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let mut child = spawn_kv(&h, &db, 30, "rbh2,rbh3");
    agent_pid("rbh3", Duration::from_secs(30), &mut child);
    // Two checkpoints merged and stored: the provisional result measured 10 s or more.
    let measured = |run: &Value| run["results"][0]["duration_s"].as_f64();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) && measured(&latest(&db)).unwrap_or(0.0) < 10.0
    {
        std::thread::sleep(Duration::from_millis(200));
    }
    child.kill().unwrap();
    let _ = child.wait();
    let run = latest(&db);
    assert_eq!(run["status"], "interrupted", "{run}");
    let r = &run["results"][0];
    assert_eq!(r["status"], "interrupted", "{r}");
    let window = r["duration_s"].as_f64().unwrap();
    assert!((10.0..30.0).contains(&window), "{window}");
    let count = metric(r, "requests", &[]).unwrap_or_else(|| panic!("{r}"));
    assert!(count > 0.0, "{r}");
    let rate = metric(r, "ops_per_s", &[]).unwrap();
    assert!(
        (rate - count / window).abs() <= 1e-6 * rate,
        "{rate} vs {count}/{window}"
    );
    // Both generators' checkpoints are in the merge.
    let per_host: f64 = ["rbh2", "rbh3"]
        .iter()
        .map(|host| metric(r, "requests", &[("host", host)]).unwrap_or_else(|| panic!("{r}")))
        .sum();
    assert_eq!(per_host, count, "{r}");
    let flags = r["flags"].to_string();
    assert!(flags.contains("measured until a checkpoint at"), "{flags}");
    let missing = r["missing"].to_string();
    assert!(
        missing.contains("start_skew_max_s") && missing.contains("server_calls"),
        "{missing}"
    );
    // Every host's samples up to the last checkpoint, each once (acceptance O, 1: the
    // remote generators' were stored twice over, and this machine's and the SUT's ended
    // at the first checkpoint).
    let mut last_of: BTreeMap<String, f64> = BTreeMap::new();
    let mut seen = std::collections::BTreeSet::new();
    for x in r["telemetry"].as_array().unwrap() {
        let (host, t) = (x["host"].as_str().unwrap(), x["t_s"].as_f64().unwrap());
        assert!(
            seen.insert((host.to_string(), t.to_bits())),
            "{host} at {t} s twice"
        );
        let e = last_of.entry(host.to_string()).or_insert(0.0);
        *e = e.max(t);
    }
    assert_eq!(last_of.len(), 4, "local, rbh1, rbh2, rbh3: {last_of:?}");
    let latest_t = last_of.values().copied().fold(0.0, f64::max);
    for (host, t) in &last_of {
        assert!(
            latest_t - t < 2.5,
            "{host}'s samples end at {t} s of {latest_t}"
        );
    }
    assert_nothing_left(&h, 15);
}

/// rackbench killed (kill -9) in the middle of a net test whose sender runs on another
/// host keeps what it measured up to its last checkpoint: the sender's agent sends each
/// checkpoint as the report it would return had the test ended there, in a frame, and
/// the controller stores it as the test's provisional result.
#[test]
fn rackbench_killed_keeps_the_remote_senders_last_checkpoint() {
    let Some(h) = testhosts() else { return };
    let _l = lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let pair = format!("{}>{}", h.names[1], h.names[0]);
    let child = bin()
        .args(["--db", db.to_str().unwrap(), "run", "net", "--pairs", &pair])
        .args(["--tests", "udp", "--udp-payload", "1472", "--rate", "50M"])
        .args(["--duration", "30", "--ssh-config", &h.ssh_config, "-q"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let run = common::kill9_once_measured(child, &db, 10.0, Duration::from_secs(40));
    let (r, window) = common::checkpointed_result(&run, "udp1472", 30.0);
    let sent = common::stored_metric(r, "packets_sent").unwrap_or_else(|| panic!("{r}"));
    assert!(sent > 0.0, "{r}");
    assert!(common::stored_metric(r, "loss_pct").is_some(), "{r}");
    assert!(
        common::stored_metric(r, "throughput_gbit_per_s").unwrap() > 0.0,
        "{r}"
    );
    assert!(
        common::missing_saying(r, "sender_cpu_pct", "checkpoint"),
        "{r}"
    );
    // The sender's counts over its window, its rate theirs.
    let per_s = metric(r, "packets_per_s", &[("end", "sender")]).unwrap_or_else(|| panic!("{r}"));
    assert!(
        (per_s - sent / window).abs() <= 1e-6 * per_s,
        "{per_s} {sent} {window}"
    );
    assert_nothing_left(&h, 15);
}

/// A redis-server of the test's own in namespace `ns`, on `ip`: killed when dropped.
struct NsRedis {
    ns: String,
    ip: String,
    port: u16,
    child: std::process::Child,
}

impl NsRedis {
    fn start(ns: &str, ip: &str) -> NsRedis {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("ip")
            .args([
                "netns",
                "exec",
                ns,
                "redis-server",
                "--port",
                &port.to_string(),
            ])
            .args(["--bind", ip, "--protected-mode", "no", "--save", ""])
            .args(["--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let r = NsRedis {
            ns: ns.into(),
            ip: ip.into(),
            port,
            child,
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        while r.cli(&["ping"]) != "PONG" {
            assert!(
                Instant::now() < deadline,
                "redis-server in {ns} did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        r
    }

    /// `redis-cli` in its namespace: the reply, trimmed.
    fn cli(&self, words: &[&str]) -> String {
        let out = Command::new("ip")
            .args(["netns", "exec", &self.ns, "redis-cli", "-h", &self.ip])
            .args(["-p", &self.port.to_string()])
            .args(words)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    fn target(&self) -> String {
        format!("{}:{}", self.ip, self.port)
    }
}

impl Drop for NsRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A remote generator done early keeps the checkpoints coming: of two generators on two
/// hosts, one on each of two servers, the one whose server answers is done with its
/// share of `-n` at once (its driver's final report comes back while the other runs on),
/// while the other's server holds its writes (`CLIENT PAUSE ... WRITE`). Killed once a
/// checkpoint has measured 5 s, the run keeps one that holds the done generator's whole
/// share; a checkpoint used to wait for every generator's copy, and none came after one
/// was done.
#[test]
fn rackbench_killed_after_a_remote_generator_finished_its_share_keeps_a_checkpoint() {
    let Some(h) = testhosts() else { return };
    if !common::have("redis-server", "redis-server") {
        return;
    }
    let _l = lock();
    let ip = std::fs::read_to_string(
        std::env::var("RACKBENCH_TESTHOSTS_ENV").expect("the test hosts' env file"),
    )
    .unwrap()
    .lines()
    .find_map(|l| l.strip_prefix("RB_TESTHOSTS_IPS="))
    .and_then(|v| {
        v.trim_matches('"')
            .split_whitespace()
            .next()
            .map(String::from)
    })
    .expect("RB_TESTHOSTS_IPS");
    let sut = h.names[0].as_str();
    let (quick, held) = (NsRedis::start(sut, &ip), NsRedis::start(sut, &ip));
    assert_eq!(held.cli(&["CLIENT", "PAUSE", "40000", "WRITE"]), "OK");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let share = 5_000;
    let loadgens = format!("{},{}", h.names[1], h.names[2]);
    // Generator k of two takes connection k, and connection k goes to target k.
    let child = bin()
        .args(["--db", db.to_str().unwrap(), "run", "kv", "-t", "set"])
        .args(["--target", &quick.target(), "--target", &held.target()])
        .args(["--sut", sut, "--loadgen", &loadgens, "-c", "2"])
        .args(["-n", &(2 * share).to_string(), "--no-telemetry"])
        .args(["--ssh-config", &h.ssh_config, "-q"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let run = common::kill9_once_measured(child, &db, 5.0, Duration::from_secs(40));
    assert_eq!(held.cli(&["CLIENT", "UNPAUSE"]), "OK");
    assert_eq!(run["status"], "interrupted", "{run}");
    let r = &run["results"][0];
    assert_eq!(r["status"], "interrupted", "{r}");
    let window = r["duration_s"].as_f64().unwrap();
    assert!(
        (5.0..30.0).contains(&window),
        "the window measured: {window} s"
    );
    assert!(
        r["flags"]
            .to_string()
            .contains("measured until a checkpoint at"),
        "{r}"
    );
    // The done generator's share, and nothing of the held one's.
    assert_eq!(
        metric(r, "requests", &[("host", h.names[1].as_str())]),
        Some(share as f64),
        "{r}"
    );
    let count = metric(r, "requests", &[]).unwrap_or_else(|| panic!("{r}"));
    assert_eq!(count, share as f64, "{r}");
    let rate = metric(r, "ops_per_s", &[]).unwrap();
    assert!(
        (rate - count / window).abs() <= 1e-6 * rate,
        "{rate} ops/s is not {count} requests over {window} s"
    );
    drop((quick, held));
    assert_nothing_left(&h, 15);
}

fn metric(r: &Value, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    r["metrics"].as_array()?.iter().find_map(|m| {
        let ls = m["labels"].as_object();
        let ok = m["name"] == name
            && if labels.is_empty() {
                ls.is_none_or(|l| l.is_empty())
            } else {
                labels
                    .iter()
                    .all(|(k, v)| ls.and_then(|l| l.get(*k)).and_then(Value::as_str) == Some(*v))
            };
        ok.then(|| m["value"].as_f64()).flatten()
    })
}

/// Servers in one namespace, generators in two others: throughput is the requests over
/// the test's wall time, the stored histogram holds every request, the servers' own counters agree, and
/// every host's telemetry is its own (its NICs, its hostname in the disclosure).
#[test]
fn kv_with_servers_on_one_host_and_generators_on_two_others() {
    let Some(h) = testhosts() else { return };
    let _l = lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let (code, run, err) = run_json(
        &h,
        &db,
        &[
            "kv",
            "-c",
            "8",
            "-n",
            "40000",
            "-t",
            "set,get",
            "--sut",
            "rbh1",
            "--loadgen",
            "rbh2,rbh3",
            "--telemetry-interval",
            "0.2",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    for r in results {
        assert_eq!(r["params"]["sut_host"], "rbh1");
        assert_eq!(r["params"]["loadgen_hosts"], "rbh2,rbh3");
        // Stopped by a count, each generator ends when its half is done: the
        // throughput is the requests over the whole test's wall time (redis-benchmark's),
        // no more than the sum of the generators' rates.
        let total = metric(r, "ops_per_s", &[]).unwrap();
        let a = metric(r, "ops_per_s", &[("host", "rbh2")]).unwrap();
        let b = metric(r, "ops_per_s", &[("host", "rbh3")]).unwrap();
        let wall = metric(r, "measured_duration_s", &[]).unwrap();
        assert!(
            (total - 40000.0 / wall).abs() / total < 1e-9,
            "{total} vs 40000 / {wall} s"
        );
        assert!(total <= (a + b) * (1.0 + 1e-9), "{total} vs {a} + {b}");
        assert_eq!(metric(r, "requests", &[("host", "rbh2")]), Some(20000.0));
        assert_eq!(metric(r, "requests", &[("host", "rbh3")]), Some(20000.0));
        // The merged histogram holds every request of both generators.
        let hist = r["histograms"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["kind"] == "service")
            .unwrap();
        assert_eq!(hist["summary"]["count"], 40000, "{hist}");
        // The servers counted what the generators claim.
        assert_eq!(metric(r, "server_calls", &[]), Some(40000.0));
        assert!(
            !r["flags"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["code"] == "server_counter_mismatch"),
            "{r}"
        );
        // Each generator woke at the common start, not a lead (0.3 s at least) late: a
        // shared 2-vCPU VM running three test hosts has woken one 10 ms late.
        let skew = metric(r, "start_skew_max_s", &[]).unwrap();
        assert!(
            skew < 0.1,
            "a generator began {skew} s after the common start"
        );
        // The common start's lead (at least 0.3 s ahead for a remote generator) is
        // setup, not load: marked warm-up, out of the summaries, on the system under test.
        let warm: f64 = r["telemetry"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["host"] == "rbh1" && s["warmup"] == true)
            .map(|s| s["interval_s"].as_f64().unwrap())
            .sum();
        assert!(
            (0.25..=1.5).contains(&warm),
            "{warm} s of rbh1's samples marked warm-up"
        );
        // Each host's summary: from the end of the warm-up, after the common start,
        // to the last reply, on every host.
        assert_covers_the_load(r, 0.2, 1, 0.02);
        // Each host's telemetry is its own: namespaces have their own NICs.
        let sums = r["telemetry_summary"].as_array().unwrap();
        for host in ["rbh1", "rbh2", "rbh3"] {
            let s = sums
                .iter()
                .find(|s| s["host"] == host)
                .unwrap_or_else(|| panic!("no telemetry from {host}"));
            let nics: Vec<&str> = s["nics"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|n| n["name"].as_str())
                .collect();
            assert!(
                nics.contains(&"eth0")
                    && !nics.iter().any(|n| n.starts_with("rbv") || *n == "rbbr0"),
                "{host}: {nics:?}"
            );
        }
        let local = sums
            .iter()
            .find(|s| s["host"] == "local")
            .expect("the controller's telemetry");
        assert!(local["nics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["name"] == "rbbr0"));
        // The redis-server's CPU is seen on the system under test, not elsewhere.
        let sut = sums.iter().find(|s| s["host"] == "rbh1").unwrap();
        assert!(
            sut["procs"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["role"] == "server:0"),
            "{sut}"
        );
    }
    // Every host disclosed, with its role, address and clock offset.
    let hosts = run["hosts"].as_array().unwrap();
    for (name, role) in [
        ("rbh1", "sut"),
        ("rbh2", "loadgen"),
        ("rbh3", "loadgen"),
        ("local", "controller"),
    ] {
        let d = hosts
            .iter()
            .find(|d| d["host"] == name)
            .unwrap_or_else(|| panic!("no disclosure of {name}"));
        assert_eq!(d["role"], role);
        assert!(d["facts"]["host.address"]["value"].is_string());
    }
    let rbh1 = hosts.iter().find(|d| d["host"] == "rbh1").unwrap();
    assert!(rbh1["facts"]["host.clock_offset_s"]["value"].is_string());
    // The test hosts are namespaces of this machine's kernel: said on each, and the
    // system under test's CPU is its servers', not its kernel's (which ran the
    // generators too: acceptance K, F1).
    assert_eq!(
        rbh1["facts"]["host.kernel_shared_with"]["value"], "local, rbh2, rbh3",
        "{rbh1}"
    );
    let report = bin()
        .args(["--db", db.to_str().unwrap(), "show", "latest"])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&report.stdout);
    assert!(shown.contains("server processes (server"), "{shown}");
    assert!(!shown.contains("whole SUT host"), "{shown}");
    // The controller bridges the test hosts: the bytes it forwarded between them are no
    // traffic of its own (its ports of the bridge are left out of its NIC total).
    assert!(
        hosts.iter().find(|d| d["host"] == "local").unwrap()["facts"]["nic.enslaved"]["value"]
            .as_str()
            .is_some_and(|v| v.contains(" in rbbr0")),
        "{hosts:?}"
    );
    // What the report says of the hosts, `show` says too (acceptance K, 6): each
    // generator's own figure and how far apart they started, each host's clock offset,
    // a code raised on three hosts once with its count.
    assert!(shown.contains("ops_per_s per generator (ops/s)"), "{shown}");
    assert!(shown.contains("Generators: largest start skew"), "{shown}");
    assert!(shown.contains("host.clock_offset_s"), "{shown}");
    assert!(!shown.contains("! other_load ! other_load"), "{shown}");
    // This machine by its hostname, as the report and show's own tables name it, not
    // `local` (acceptance, s27).
    assert!(
        !shown.lines().any(|l| l.starts_with("host local")),
        "{shown}"
    );
    assert!(
        !shown
            .lines()
            .any(|l| l.contains("host.kernel_shared_with") && l.contains("local")),
        "{shown}"
    );
    assert!(
        rbh1["facts"]["software.redis-server"]["value"].is_string(),
        "the servers' facts go to the sut: {rbh1}"
    );
    // Reachable from the network, the servers run nothing but the benchmark's commands.
    assert!(
        rbh1["facts"]["server.acl"]["value"]
            .as_str()
            .unwrap_or("")
            .contains("GET SET PING"),
        "{rbh1}"
    );
    assert_nothing_left(&h, 15);
}

/// Servers on a host whose clock runs ahead, generators on one whose clock runs behind
/// (the test hosts' defaults): each host's samples and timings come back onto this one's
/// clock, and the servers count what the generators sent.
#[test]
fn kv_with_its_servers_on_a_host_whose_clock_is_off() {
    let Some(h) = testhosts() else { return };
    if !common::have("redis-server", "redis-server") {
        return;
    }
    let _l = lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let (sut, loadgen) = (h.names[1].as_str(), h.names[2].as_str());
    let (code, run, err) = run_json(
        &h,
        &db,
        &[
            "kv",
            "-c",
            "4",
            "-n",
            "20000",
            "-t",
            "get",
            "--sut",
            sut,
            "--loadgen",
            loadgen,
            "--telemetry-interval",
            "0.2",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let r = &run["results"][0];
    assert_eq!(r["params"]["sut_host"], sut);
    assert_eq!(metric(r, "requests", &[]), Some(20000.0), "{r}");
    assert_eq!(metric(r, "server_calls", &[]), Some(20000.0), "{r}");
    // Samples placed by each host's offset: a host whose were not would cover none of
    // the measured time, or seconds outside it.
    assert_covers_the_load(r, 0.2, 1, 0.02);
    let on_sut = r["telemetry_summary"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["host"] == sut)
        .unwrap_or_else(|| panic!("no telemetry from {sut}: {r}"));
    assert!(
        on_sut["procs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["role"] == "server:0"),
        "{on_sut}"
    );
    let hosts = run["hosts"].as_array().unwrap();
    for (i, name) in [(1, sut), (2, loadgen)] {
        let d = hosts.iter().find(|d| d["host"] == name).unwrap();
        let offset: f64 = d["facts"]["host.clock_offset_s"]["value"]
            .as_str()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name}'s clock offset: {d}"));
        let skew = h.skew_s.get(i).copied().unwrap_or(0.0);
        assert!(
            (offset - skew).abs() < 0.02,
            "{name}: {offset} s, {skew} s set"
        );
    }
    assert_nothing_left(&h, 15);
}

/// Every host's summary of `r` covers the test's measured time, not the lead, setup and
/// teardown its raw samples also hold: at least that time less a sampling interval at
/// each end of each of its `spans` timed parts (a sample that holds both load and what
/// was around it is left out); at most that time and what a sample counted as wholly
/// inside may reach beyond a part's edge (20 ms here), and `slack` seconds (each host's
/// samples are placed by its sampler's start and clock offset, which the test hosts'
/// skewed clocks make seconds apart).
fn assert_covers_the_load(r: &Value, interval: f64, spans: u32, slack: f64) {
    let duration = r["duration_s"].as_f64().unwrap();
    let edges = 2.0 * f64::from(spans);
    let reach = edges * telemetry::sampler::MIN_INTERVAL.as_secs_f64();
    for s in r["telemetry_summary"].as_array().unwrap() {
        let covered = s["covered_s"].as_f64().unwrap();
        assert!(
            covered < duration + reach + slack && covered > duration - edges * interval - slack,
            "{}: {covered} s covered of a {duration} s test",
            s["host"]
        );
    }
}

/// The iperf3 study's matrix: every ordered pair of three hosts, each end on its own
/// host, with both ends' telemetry.
#[test]
fn net_matrix_over_three_hosts() {
    let Some(h) = testhosts() else { return };
    let _l = lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let hosts = h.names.join(",");
    let (code, run, err) = run_json(
        &h,
        &db,
        &[
            "net",
            "--tests",
            "tcp",
            "--duration",
            "1",
            "--hosts",
            &hosts,
            "--sender-cpus",
            "1",
            "--receiver-cpus",
            "0",
            "--telemetry-interval",
            "0.25",
            // Set on each remote sender's socket and each remote receiver's listener
            // (a receiver that refused it would fail its pair).
            "--congestion",
            "reno",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 6, "every ordered pair of 3 hosts");
    assert!(results.iter().all(|r| r["params"]["congestion"] == "reno"));
    let mut pairs = Vec::new();
    for r in results {
        let (s, rx) = (
            r["params"]["sender_host"].as_str().unwrap(),
            r["params"]["receiver_host"].as_str().unwrap(),
        );
        assert_ne!(s, rx);
        pairs.push(format!("{s}>{rx}"));
        assert!(
            metric(r, "throughput_gbit_per_s", &[]).unwrap() > 0.1,
            "{r}"
        );
        // The sender's kernel counters came back from its host with the rest.
        assert!(metric(r, "retransmits", &[]).is_some(), "{r}");
        assert!(metric(r, "rtt_mean_ns", &[]).unwrap() > 0.0, "{r}");
        let sums = r["telemetry_summary"].as_array().unwrap();
        for end in [s, rx] {
            assert!(sums.iter().any(|x| x["host"] == end), "telemetry of {end}");
        }
        // Bytes left the sender's NIC and arrived at the receiver's.
        let nic = |host: &str, field: &str| {
            sums.iter().find(|x| x["host"] == host).unwrap()["nics"]
                .as_array()
                .unwrap()
                .iter()
                .find(|n| n["name"] == "eth0")
                .map(|n| n[field].as_f64().unwrap())
                .unwrap_or(0.0)
        };
        assert!(nic(s, "tx_bytes_per_s") > 1e6, "{s} sent");
        assert!(nic(rx, "rx_bytes_per_s") > 1e6, "{rx} received");
        assert_covers_the_load(r, 0.25, 1, 0.02);
    }
    pairs.sort();
    pairs.dedup();
    assert_eq!(pairs.len(), 6, "{pairs:?}");
    // The test hosts share this machine's kernel, whose CPU counters hold the sender's
    // work too: each pair's system under test is its receiver's process, not the
    // receiver's whole host (the walk-through read 145% beside the receiver's 47%).
    let shown = bin()
        .args(["--db", db.to_str().unwrap(), "show", "latest"])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("server processes (receiver)"), "{shown}");
    assert!(!shown.contains("whole SUT host"), "{shown}");
    // Nor is another namespace's end other load on it: a kernel is judged once, against
    // the test's processes on every name of it.
    for r in results {
        let flags: Vec<&serde_json::Value> = r["flags"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| f["code"] == "other_load")
            .collect();
        assert!(flags.len() <= 1, "{flags:?}");
        for f in flags {
            let m = f["message"].as_str().unwrap();
            assert!(m.contains(", on the kernel it shares with "), "{f}");
        }
    }
    assert_nothing_left(&h, 15);
}

/// A plan file's `[hosts]` table gives the roles as the flags do.
#[test]
fn a_plan_file_names_the_hosts() {
    let Some(h) = testhosts() else { return };
    let _l = lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "[run]\nworkload = \"net\"\n\n[hosts]\npairs = [\"rbh2>rbh3\"]\nssh_config = \"{}\"\n\n[net]\ntests = [\"tcp\"]\nduration = 1\n",
            h.ssh_config
        ),
    )
    .unwrap();
    let out = bin()
        .args([
            "--db",
            db.to_str().unwrap(),
            "run",
            "--plan",
            plan.to_str().unwrap(),
            "--json",
            "-q",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &run["results"][0];
    assert_eq!(r["params"]["sender_host"], "rbh2");
    assert_eq!(r["params"]["receiver_host"], "rbh3");
    assert_eq!(run["plan"]["hosts"]["pairs"][0], "rbh2>rbh3");
    // An unknown key in [hosts] is an error, not ignored.
    std::fs::write(
        &plan,
        "[run]\nworkload = \"kv\"\n\n[hosts]\nsutt = \"rbh1\"\n",
    )
    .unwrap();
    let out = bin()
        .args([
            "--db",
            db.to_str().unwrap(),
            "run",
            "--plan",
            plan.to_str().unwrap(),
            "-q",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("sutt"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_nothing_left(&h, 15);
}

/// crypto measures the system under test itself: the work runs in rbh2's agent, whose
/// CPU shows it, not on this machine, and is the result's "%CPU used".
#[test]
fn crypto_runs_on_the_system_under_test() {
    let Some(h) = testhosts() else { return };
    let _l = lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    // The host whose clock runs ahead: its timings must come back onto this one's.
    let sut = h.names[1].as_str();
    let (code, run, err) = run_json(
        &h,
        &db,
        &[
            "crypto",
            "--tests",
            "rsa2048",
            "--duration",
            "2",
            "--threads",
            "1",
            "--sut",
            sut,
            "--telemetry-interval",
            "0.5",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let r = &run["results"][0];
    assert_eq!(r["params"]["sut_host"], sut);
    assert!(r["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["value"].as_f64().unwrap_or(0.0) > 0.0));
    let proc_cpu = |host: &str| {
        r["telemetry_summary"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["host"] == host)
            .map(|s| {
                s["procs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    // The agent's process is the work here, never a load generator.
                    .filter(|p| p["role"] == "work")
                    .map(|p| p["usr_pct"].as_f64().unwrap() + p["sys_pct"].as_f64().unwrap())
                    .sum::<f64>()
            })
    };
    // Its sign and verify, timed on its own clock, not the key made before them.
    assert_covers_the_load(r, 0.5, 2, 0.02);
    let there = proc_cpu(sut).expect("telemetry from the system under test");
    assert!(there > 50.0, "the agent on {sut} did the work: {there:.0}%");
    // This machine drove nothing: it is the run's controller, no load generator (taken
    // for one, its other load and steal were flagged on the result).
    let hosts: Vec<(&str, &str)> = run["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["host"].as_str().unwrap(), h["role"].as_str().unwrap()))
        .collect();
    assert_eq!(hosts, [("local", "controller"), (sut, "sut")]);
    // The report's "%CPU used" is that agent's process on the system under test, not
    // rbh2's whole host nor this machine's rackbench.
    let record: model::RunRecord = serde_json::from_value(run.clone()).unwrap();
    let used = report::derive::sut_cpu(&record, &record.results[0]).unwrap();
    assert_eq!(used.basis, report::derive::CpuBasis::WorkProcess);
    assert!(
        (used.pct - there).abs() < 0.01,
        "%CPU used {} is not the agent's {there} on {sut}",
        used.pct
    );
    assert_nothing_left(&h, 15);
}

/// Ctrl-C at the terminal (SIGINT to the whole foreground process group): the test
/// under way ends early on every host, what was measured is stored as interrupted (not
/// failed: no host was lost), and nothing is left running anywhere.
#[test]
fn ctrl_c_ends_the_test_on_every_host_and_keeps_what_was_measured() {
    use std::os::unix::process::CommandExt;
    let Some(h) = testhosts() else { return };
    let _l = lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let mut child = bin()
        .args([
            "--db",
            db.to_str().unwrap(),
            "run",
            "kv",
            "-t",
            "get",
            "-c",
            "4",
            "--duration",
            "30",
        ])
        .args([
            "--sut",
            "rbh1",
            "--loadgen",
            "rbh2,rbh3",
            "--ssh-config",
            &h.ssh_config,
            "--json",
            "-q",
        ])
        .process_group(0)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    agent_pid("rbh3", Duration::from_secs(30), &mut child);
    std::thread::sleep(Duration::from_secs(4));
    let sent = Instant::now();
    // SAFETY: kill(2) on the process group we made for the child.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGINT) };
    let (code, _, err, _) = finish(child, Duration::from_secs(30));
    assert!(
        sent.elapsed() < Duration::from_secs(15),
        "ended promptly: {:?}",
        sent.elapsed()
    );
    assert_eq!(code, 130, "128 + SIGINT: {err}");
    let run = latest(&db);
    assert_eq!(run["status"], "interrupted", "{}", run["status"]);
    let r = &run["results"][0];
    assert_eq!(r["status"], "interrupted", "{r}");
    assert!(
        metric(r, "requests", &[("host", "rbh2")]).unwrap_or(0.0) > 0.0,
        "rbh2's part kept: {r}"
    );
    assert!(
        metric(r, "requests", &[("host", "rbh3")]).unwrap_or(0.0) > 0.0,
        "rbh3's part kept: {r}"
    );
    assert!(
        metric(r, "measured_duration_s", &[]).unwrap() < 20.0,
        "cut short: {r}"
    );
    assert_nothing_left(&h, 15);
}

/// nginx on one host, HTTP clients on two others; PostgreSQL on one host, TPC-C virtual
/// users on two others, its consistency check passing afterwards.
#[test]
fn http_and_oltp_with_the_server_on_one_host_and_clients_on_two_others() {
    let Some(h) = testhosts() else { return };
    let _l = lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let (code, run, err) = run_json(
        &h,
        &db,
        &[
            "http",
            "-c",
            "8",
            "--requests",
            "20000",
            "--sut",
            "rbh1",
            "--loadgen",
            "rbh2,rbh3",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let r = &run["results"][0];
    assert_eq!(
        metric(r, "requests", &[("host", "rbh2")]),
        Some(10000.0),
        "{r}"
    );
    assert_eq!(
        metric(r, "requests", &[("host", "rbh3")]),
        Some(10000.0),
        "{r}"
    );
    // Stopped by a count: the requests over the whole test's wall time, no more than the
    // sum of the generators' rates (each over its own window).
    let total = metric(r, "requests_per_s", &[]).unwrap();
    let parts = metric(r, "requests_per_s", &[("host", "rbh2")]).unwrap()
        + metric(r, "requests_per_s", &[("host", "rbh3")]).unwrap();
    let wall = metric(r, "measured_duration_s", &[]).unwrap();
    assert!(
        (total - 20000.0 / wall).abs() / total < 1e-9,
        "{total} vs 20000 / {wall} s"
    );
    assert!(total <= parts * (1.0 + 1e-9), "{total} vs {parts}");
    assert!(r["telemetry_summary"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["host"] == "rbh1"
            && s["procs"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["role"].as_str().unwrap_or("").starts_with("server"))));

    // Each launched engine admits the generators with the run's password (MariaDB when
    // installed, as the suite's setup installs it).
    let mut engines = vec!["postgresql"];
    if std::path::Path::new("/usr/sbin/mariadbd").exists() {
        engines.push("mariadb");
    }
    for engine in engines {
        let (code, run, err) = run_json(
            &h,
            &db,
            &[
                "oltp",
                "--engine",
                engine,
                "--warehouses",
                "1",
                "--vus",
                "2",
                "--duration",
                "3",
                "--sut",
                "rbh1",
                "--loadgen",
                "rbh2,rbh3",
            ],
        );
        assert_eq!(code, 0, "{engine}: {err}");
        let r = &run["results"][0];
        assert!(metric(r, "nopm", &[]).unwrap_or(0.0) > 0.0, "{engine}: {r}");
        assert!(
            !r["flags"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["severity"] == "invalid"),
            "{engine}: consistency holds: {r}"
        );
        for host in ["rbh2", "rbh3"] {
            assert!(
                metric(r, "transactions", &[("host", host)]).unwrap_or(0.0) > 0.0,
                "{engine}: {host} ran users: {r}"
            );
        }
        // Over the network: the system under test's NIC took in tens of bytes a
        // transaction or more (generators sharing its file system took PostgreSQL's
        // socket, and its NIC read under 1 B a transaction).
        let txn_per_s = metric(r, "tpm", &[]).unwrap_or_else(|| panic!("{r}")) / 60.0;
        let rx = r["telemetry_summary"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["host"] == "rbh1")
            .and_then(|s| s["nics"].as_array()?.iter().find(|n| n["name"] == "eth0"))
            .and_then(|n| n["rx_bytes_per_s"].as_f64())
            .unwrap_or_else(|| panic!("{engine}: rbh1's eth0: {r}"));
        assert!(
            rx > 50.0 * txn_per_s,
            "{engine}: {rx} B/s in for {txn_per_s} transactions/s"
        );
        assert_nothing_left(&h, 20);
    }
}

/// A --target no host can reach names the host that tried, and says that 127.0.0.1 there
/// is that host's own loopback: first the system under test (which checks each target),
/// then, with a server on its loopback only, the load generator (each said only
/// "cannot connect to 127.0.0.1:PORT", as if from this machine).
#[test]
fn an_unreachable_target_names_the_host_that_tried() {
    let Some(h) = testhosts() else { return };
    if !common::have("redis-server", "redis-server") {
        return;
    }
    let _l = lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let (sut, gen) = (h.names[0].as_str(), h.names[1].as_str());
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let target = format!("127.0.0.1:{port}");
    let args = [
        "kv",
        "--target",
        &target,
        "--sut",
        sut,
        "--loadgen",
        gen,
        "-n",
        "100",
        "-t",
        "set",
    ];
    let (code, _, err) = run_json(&h, &db, &args);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!(
            "on the system under test {sut} (where 127.0.0.1 is {sut} itself"
        )),
        "{err}"
    );
    // A server on the system under test's loopback: it answers there, not on the
    // generator's.
    let mut redis = Command::new("ip")
        .args([
            "netns",
            "exec",
            sut,
            "redis-server",
            "--port",
            &port.to_string(),
        ])
        .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let (code, run, err) = run_json(&h, &db, &args);
    let _ = redis.kill();
    let _ = redis.wait();
    assert_eq!(code, 1, "{err}");
    let said = format!("on load generator {gen} (where 127.0.0.1 is {gen} itself");
    assert!(err.contains(&said), "{err}");
    assert!(run.to_string().contains(&said), "{run}");
    assert_nothing_left(&h, 10);
}

/// Ctrl-C while a host is still being reached (here one whose ssh hangs in its
/// ProxyCommand, as a host that drops packets does for the connect timeout) ends the run
/// at once: exit 130, said as an interruption, no store left behind, and the ssh with
/// what it started gone. Needs no test host: the connection never gets anywhere.
#[test]
fn ctrl_c_while_connecting_ends_the_run_at_once() {
    use std::os::unix::process::CommandExt;
    if Command::new("ssh").arg("-V").output().is_err() {
        eprintln!("skipped: no ssh client");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let config = dir.path().join("ssh_config");
    // A marker in the command line finds what the ProxyCommand started, if it outlives us.
    let marker = format!("{}", 600 + std::process::id() % 97);
    std::fs::write(
        &config,
        format!("Host hanging\n  ProxyCommand sleep {marker}\n"),
    )
    .unwrap();
    let child = bin()
        .args([
            "--db",
            db.to_str().unwrap(),
            "run",
            "kv",
            "-t",
            "set",
            "-n",
            "1000",
        ])
        .args(["--sut", "hanging", "--ssh-config", config.to_str().unwrap()])
        .process_group(0)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let sleeping = || {
        let out = Command::new("pgrep")
            .args(["-f", &format!("^sleep {marker}$")])
            .output()
            .unwrap();
        !out.stdout.is_empty()
    };
    let t = Instant::now();
    while !sleeping() && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(sleeping(), "ssh reached its ProxyCommand");
    let sent = Instant::now();
    // SAFETY: kill(2) on our child alone (a terminal's Ctrl-C reaches the group; the
    // ProxyCommand must go because rackbench ends it, not because it got the signal).
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let (code, _, err, _) = finish(child, Duration::from_secs(30));
    assert!(
        sent.elapsed() < Duration::from_secs(3),
        "ended at once: {:?}",
        sent.elapsed()
    );
    assert_eq!(code, 130, "128 + SIGINT: {err}");
    assert!(
        err.contains("interrupted before any result was stored"),
        "{err}"
    );
    assert!(!err.contains("error"), "{err}");
    assert!(!db.exists(), "no store left behind");
    std::thread::sleep(Duration::from_millis(200));
    assert!(!sleeping(), "the ProxyCommand went with its ssh");
}
