//! The binary end to end on the kv workload: real redis-server instances launched by
//! rackbench on free ports, a results store in a temp dir, bad input, and Ctrl-C.

mod common;

use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::Stdio;

use std::time::{Duration, Instant};

use common::{bin, children_named, have, show_latest};

fn run_json_kv(db: &Path, args: &[&str]) -> (i32, serde_json::Value, String) {
    common::run_json(db, args, &[])
}

/// redis-server processes whose command line mentions `port`.
fn redis_on(port: u16) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            let cmd = std::fs::read_to_string(format!("/proc/{p}/cmdline")).unwrap_or_default();
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            cmd.contains("redis-server")
                && cmd.contains(&port.to_string())
                && !stat.contains(") Z ")
        })
        .collect()
}

#[test]
fn kv_sweep_is_stored_with_every_point() {
    if !have("redis-server", "redis-server") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let (code, run, err) = run_json_kv(
        &db,
        &[
            "kv",
            "-c",
            "8",
            "-n",
            "3000",
            "-r",
            "100",
            "-d",
            "10",
            "-P",
            "1,16",
            "--instances",
            "1,2",
            "-t",
            "set,get",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 8, "2 instances x 2 pipelines x 2 tests");
    assert_eq!(run["status"], "ok");
    for r in results {
        let ops = r["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "ops_per_s" && m.get("labels").is_none())
            .unwrap()["value"]
            .as_f64()
            .unwrap();
        assert!(ops > 0.0);
        assert!(!r["histograms"].as_array().unwrap().is_empty());
        let req = r["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "server_calls")
            .unwrap();
        assert_eq!(
            req["value"].as_f64().unwrap(),
            3000.0,
            "server counters agree"
        );
    }
    let pipelines: Vec<_> = results
        .iter()
        .map(|r| r["params"]["pipeline"].as_i64().unwrap())
        .collect();
    assert_eq!(pipelines, vec![1, 1, 16, 16, 1, 1, 16, 16]);
    let facts = &run["hosts"][0]["facts"];
    assert!(
        facts["software.redis-server"]["value"].as_str().is_some(),
        "{facts}"
    );
    // The run is in the store and `show` finds it.
    let show = bin()
        .args(["--db", db.to_str().unwrap(), "show", "latest"])
        .output()
        .unwrap();
    assert!(
        show.status.success(),
        "{}",
        String::from_utf8_lossy(&show.stderr)
    );
}

#[test]
fn bad_input_gives_clear_errors_and_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["kv", "--bogus"], "--bogus"),
        (vec!["kv", "-c", "0"], "clients"),
        (vec!["kv", "-t", "sett"], "sett"),
        (vec!["kvv"], "unknown workload"),
        (vec!["kv", "--target", "127.0.0.1:1"], "cannot connect"),
        (
            vec!["kv", "--redis-server", "/nonexistent/redis-server"],
            "redis-server",
        ),
        (
            vec!["kv", "--server-cpus", "999"],
            "CPU 999 is not available",
        ),
    ];
    for (args, needle) in cases {
        let (code, _, err) = run_json_kv(&db, &args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains(needle),
            "{args:?}: `{err}` should mention `{needle}`"
        );
    }
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        "[run]\nworkload = \"kv\"\n[kv]\nclients = \"many\"\n",
    )
    .unwrap();
    let (code, _, err) = run_json_kv(&db, &["--plan", plan.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("clients"), "{err}");
    std::fs::write(&plan, "[run\nworkload=").unwrap();
    let (code, _, err) = run_json_kv(&db, &["--plan", plan.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("plan file"), "{err}");
    // Nothing half-written: no run in the store.
    if db.exists() {
        let out = bin()
            .args(["--db", db.to_str().unwrap(), "runs", "--json"])
            .output()
            .unwrap();
        let runs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        assert_eq!(runs.as_array().map_or(0, Vec::len), 0, "{runs}");
    }
}

#[test]
fn plan_file_expresses_the_flags() {
    if !have("redis-server", "redis-server") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        "[run]\nworkload = \"kv\"\nlabel = \"plan-test\"\nrepeat = 2\n\n[kv]\nclients = 4\nrequests = 1000\npipeline = [1, 8]\ntests = [\"set\"]\n",
    )
    .unwrap();
    let (code, run, err) = run_json_kv(&db, &["--plan", plan.to_str().unwrap(), "-c", "2"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(run["label"], "plan-test");
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 4, "2 pipelines x 1 test x 2 repetitions");
    assert!(
        results.iter().all(|r| r["params"]["clients"] == 2),
        "flags override the plan"
    );
}

/// A kv run of two 30 s tests, ended while the first runs by `signal(pid)`; then: the
/// exit status is `expect_code`, the first test is stored cut short and interrupted (the
/// flag naming `cause`), the second never started, and no launched server is left.
fn end_a_run_by_signal(signal: impl FnOnce(i32), expect_code: i32, cause: &str) {
    if !have("redis-server", "redis-server") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let child = bin()
        .args([
            "--db",
            db.to_str().unwrap(),
            "run",
            "kv",
            "-c",
            "4",
            "--duration",
            "30",
            "-t",
            "set,get",
            "-q",
        ])
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the launched server to appear, then let it run a moment.
    let start = Instant::now();
    let mut ports = Vec::new();
    while start.elapsed() < Duration::from_secs(15) && ports.is_empty() {
        std::thread::sleep(Duration::from_millis(100));
        // Only our child's servers; redis-server retitles itself `redis-server 127.0.0.1:PORT`.
        ports = children_named(child.id(), "redis-server")
            .into_iter()
            .filter_map(|(_, cmd)| {
                cmd.split(['\0', ' '])
                    .find_map(|w| w.strip_prefix("127.0.0.1:"))?
                    .parse::<u16>()
                    .ok()
            })
            .collect();
    }
    assert!(!ports.is_empty(), "rackbench did not launch redis-server");
    std::thread::sleep(Duration::from_millis(1500));
    signal(child.id() as i32);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(expect_code), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert!(!err.contains("interrupted twice"), "{err}");
    for p in ports {
        assert!(
            redis_on(p).is_empty(),
            "redis-server on port {p} outlived rackbench"
        );
    }
    let run = show_latest(&db);
    assert_eq!(run["status"], "interrupted");
    let results = run["results"].as_array().unwrap();
    assert_eq!(
        results.len(),
        1,
        "the set test was cut short and kept; get never started"
    );
    assert_eq!(results[0]["status"], "interrupted");
    let flags = results[0]["flags"].to_string();
    assert!(flags.contains(&format!("stopped by {cause}")), "{flags}");
    // `show` names the test that never started, as the report does.
    let out = bin()
        .args(["--db", db.to_str().unwrap(), "show", "latest"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("interrupted before this test stored anything: get (asked for: not started, or killed before its first checkpoint)"),
        "{text}"
    );
}

#[test]
fn ctrl_c_keeps_results_and_leaves_no_server() {
    end_a_run_by_signal(
        |pid| {
            unsafe { kill(pid, SIGINT) };
        },
        130,
        "Ctrl-C",
    );
}

/// `timeout` (and systemd) signal the process and then its whole process group: one
/// request, not a second Ctrl-C. A supervisor repeating SIGTERM later does not abort
/// either.
#[test]
fn a_supervisors_group_signal_is_one_request_and_keeps_what_was_measured() {
    end_a_run_by_signal(
        |pid| unsafe {
            kill(pid, SIGTERM);
            std::thread::sleep(Duration::from_millis(30));
            kill(-pid, SIGTERM);
            std::thread::sleep(Duration::from_millis(1200));
            kill(-pid, SIGTERM);
        },
        143,
        "SIGTERM",
    );
}

const SIGINT: i32 = 2;
const SIGTERM: i32 = 15;

extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
}

/// SPECpower-style levels through the runner: every level (and active idle) carries the
/// CPU and power telemetry saw during that level alone, and the overall perf/W comes out
/// of them. No power source exists on a CI VM, so power is the declared model (flagged).
#[test]
fn load_levels_carry_cpu_and_power_per_level() {
    if !have("redis-server", "redis-server") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let (code, run, err) = run_json_kv(
        &db,
        &[
            "kv",
            "-t",
            "levels",
            "-c",
            "4",
            // A capacity a debug-build client keeps up with on a busy machine: the test
            // is of each level's CPU and power, not of its rate.
            "--capacity",
            "1000",
            "--levels",
            "100,25",
            "--step-duration",
            "1",
            "--idle-duration",
            "1",
            "--power-model",
            "50:150",
            "--telemetry-interval",
            "0.25",
            "--warmup",
            "0.2",
        ],
    );
    assert_eq!(code, 0, "{}\n{err}", common::results_said(&run.to_string()));
    let r = &run["results"][0];
    assert_eq!(r["headline"], "overall_reply_rate_per_w");
    // `--wait auto` slept in the levels, and the result says so (acceptance pass E, 10).
    assert_eq!(r["settings"]["wait"], "sleep", "{}", r["settings"]);
    // The settings its verdicts came from, defaults included; a load's length is not its
    // (review H, 12).
    let set = &r["settings"];
    assert_eq!(set["step_duration"], 1, "{set}");
    assert_eq!(set["saturation_fraction"], 0.9, "{set}");
    assert_eq!(set["levels"], serde_json::json!([100, 25]), "{set}");
    assert!(set.get("duration").is_none(), "{set}");
    // The test's own summary covers its levels' measured windows, as its duration adds
    // them up: the warm-ups and the gaps between levels, which the raw samples hold, are
    // left out.
    let covered = r["telemetry_summary"][0]["covered_s"].as_f64().unwrap();
    let duration = r["duration_s"].as_f64().unwrap();
    // Less at most a sampling interval (0.25 s) at each end of each of the three windows
    // (a sample holding both a level and what was around it is left out); more at most
    // what a sample counted as wholly inside may reach beyond an edge (20 ms).
    let reach = telemetry::sampler::MIN_INTERVAL.as_secs_f64();
    assert!(
        covered < duration + 3.0 * 2.0 * reach + 1e-3
            && covered > duration - 3.0 * 2.0 * 0.25 - 1e-3,
        "{covered} {duration}"
    );
    let raw: f64 = r["telemetry"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["warmup"] == false)
        .map(|s| s["interval_s"].as_f64().unwrap())
        .sum();
    assert!(raw > covered + 0.1, "{raw} {covered}");
    let metrics = r["metrics"].as_array().unwrap();
    let at = |level: &str, name: &str| {
        metrics
            .iter()
            .find(|m| m["name"] == name && m["labels"]["level"] == level)
            .and_then(|m| m["value"].as_f64())
    };
    for level in ["100%", "25%", "active_idle"] {
        let busy = at(level, "cpu_busy_pct").unwrap_or_else(|| panic!("no CPU at {level}"));
        assert!((0.0..=100.0).contains(&busy), "{level}: {busy}");
        let w = at(level, "power_w").unwrap_or_else(|| panic!("no power at {level}"));
        assert!((49.999..=150.001).contains(&w), "{level}: {w}");
    }
    // Power and CPU come from the same window of each level: the declared model
    // (50 W idle, 150 W at 100% busy) applied to that level's CPU busy. (Whole-machine
    // CPU: other tests running beside this one move both, so no ordering is asserted.)
    for level in ["100%", "25%", "active_idle"] {
        let (busy, w) = (
            at(level, "cpu_busy_pct").unwrap(),
            at(level, "power_w").unwrap(),
        );
        assert!(
            (w - (50.0 + busy)).abs() < 1.0,
            "{level}: {w} W at {busy}% busy"
        );
    }
    assert!(at("100%", "reply_rate_per_s").unwrap() > 750.0);
    let overall = metrics
        .iter()
        .find(|m| m["name"] == "overall_reply_rate_per_w")
        .and_then(|m| m["value"].as_f64())
        .expect("overall perf/W");
    assert!(overall > 0.0);
    let flags: Vec<&str> = r["flags"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["code"].as_str())
        .collect();
    assert!(flags.contains(&"power_modelled"), "{flags:?}");
}

/// `kill -9` gives rackbench no chance to clean up: the kernel kills the servers it
/// launched (parent-death signal), and the next command that opens the store closes the
/// run as interrupted, with the results stored before the kill.
#[test]
fn sigkill_leaves_no_server_and_the_run_is_closed_on_next_open() {
    if !have("redis-server", "redis-server") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let mut child = bin()
        .args([
            "--db",
            db.to_str().unwrap(),
            "run",
            "kv",
            "-c",
            "4",
            "--duration",
            "1,30",
            "-t",
            "set",
            "--no-telemetry",
            "-q",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the first (1 s) point's result is stored and the second is running.
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(200));
        let v = show_latest(&db);
        if v["results"].as_array().is_some_and(|r| r.len() == 1) {
            assert_eq!(v["status"], "running", "a live run is left alone");
            break;
        }
    }
    let alive = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
    };
    // The servers the second point launched: redis-server children of our child (on a
    // loaded machine the second point may take a while to launch them).
    let mut servers: Vec<u32> = Vec::new();
    let launch = Instant::now();
    while servers.is_empty() && launch.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(100));
        servers = children_named(child.id(), "redis-server")
            .into_iter()
            .map(|(p, _)| p)
            .collect();
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(!servers.is_empty(), "rackbench did not launch redis-server");
    unsafe { kill(child.id() as i32, 9) };
    child.wait().unwrap();
    let gone = Instant::now();
    while servers.iter().any(|p| alive(*p)) && gone.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let orphans: Vec<u32> = servers.into_iter().filter(|p| alive(*p)).collect();
    let run = show_latest(&db);
    assert_eq!(run["status"], "interrupted", "{run}");
    assert!(
        run["error"]
            .as_str()
            .unwrap()
            .contains("ended without finishing"),
        "{}",
        run["error"]
    );
    assert_eq!(run["results"].as_array().unwrap().len(), 1);
    assert!(
        orphans.is_empty(),
        "redis-server outlived a killed rackbench: {orphans:?}"
    );
}

/// A capacity test's steps are stored as each completes: rackbench killed (kill -9, out
/// of memory) in the middle of a ramp leaves the steps it had measured, in a result the
/// next command closes `interrupted`, saying the test did not finish. They were all lost:
/// a capacity test was stored only whole (acceptance pass E, 5).
#[test]
fn sigkill_in_a_ramp_keeps_the_steps_it_measured() {
    if !have("redis-server", "redis-server") {
        return;
    }
    let args = [
        "--ramp-low",
        "1000",
        "--ramp-high",
        "40000",
        "--ramp-step",
        "1000",
    ];
    let (r, n) = kill_mid_capacity_test("ramp", &args, "step", true);
    assert_eq!(r["settings"]["wait"], "spin", "{}", r["settings"]);
    assert!(n >= 2, "the steps measured before the kill: {n}");
    // Every host's samples so far, each once and in order, and their summary, are kept
    // with the steps: they were lost with the process (acceptance pass G, 5).
    let samples = r["telemetry"].as_array().unwrap();
    assert!(samples.len() >= 2, "{}", r["telemetry"]);
    let t: Vec<f64> = samples.iter().map(|s| s["t_s"].as_f64().unwrap()).collect();
    assert!(t.windows(2).all(|w| w[0] < w[1]), "{t:?}");
    let summary = r["telemetry_summary"].as_array().unwrap();
    assert_eq!(summary.len(), 1, "{}", r["telemetry_summary"]);
    assert!(summary[0]["samples"].as_u64().unwrap() >= 1, "{summary:?}");
}

/// A levels test killed keeps its levels labelled as a finished one's (`level=100%`), so
/// the levels view and compare read them: they were `step=0`, `step=1` (review H, 5).
#[test]
fn sigkill_in_load_levels_keeps_its_levels_as_levels() {
    if !have("redis-server", "redis-server") {
        return;
    }
    let args = [
        "--capacity",
        "2000",
        "--levels",
        "100,90,80,70,60,50,40,30,20,10",
    ];
    let (r, _) = kill_mid_capacity_test("levels", &args, "level", false);
    assert_eq!(r["settings"]["wait"], "sleep", "{}", r["settings"]);
    let labels: Vec<&str> = r["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["name"] == "demanded_rate_per_s")
        .filter_map(|m| m["labels"]["level"].as_str())
        .collect();
    assert_eq!(labels[..2], ["100%", "90%"], "{r}");
}

/// Run kv's capacity `test` with `args` (and telemetry, or not), kill -9 it once two
/// steps are stored, and give back its result (closed `interrupted` by the next command,
/// saying it did not finish, each step's histogram kept) and how many steps it kept,
/// each labelled `by`.
fn kill_mid_capacity_test(
    test: &str,
    args: &[&str],
    by: &str,
    telemetry: bool,
) -> (serde_json::Value, usize) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let mut child = bin()
        .args([
            "--db",
            db.to_str().unwrap(),
            "run",
            "kv",
            "-c",
            "4",
            "-t",
            test,
        ])
        .args(args)
        .args(["--step-duration", "0.5", "-q"])
        .args((!telemetry).then_some("--no-telemetry"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let steps = |run: &serde_json::Value| -> usize {
        run["results"][0]["metrics"].as_array().map_or(0, |m| {
            m.iter()
                .filter(|m| {
                    m["name"] == "demanded_rate_per_s"
                        && m["labels"]["phase"] == test
                        && m["labels"].get(by).is_some()
                })
                .count()
        })
    };
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) && steps(&show_latest(&db)) < 2 {
        std::thread::sleep(Duration::from_millis(100));
    }
    unsafe { kill(child.id() as i32, 9) };
    child.wait().unwrap();
    let run = show_latest(&db);
    assert_eq!(run["status"], "interrupted", "{run}");
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{run}");
    let r = results[0].clone();
    assert_eq!(r["status"], "interrupted", "{r}");
    assert!(
        r["error"]
            .as_str()
            .unwrap_or("")
            .contains("ended without finishing"),
        "{r}"
    );
    let n = steps(&run);
    assert!(n >= 2, "the steps measured before the kill: {n}");
    let partial = r["flags"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "partial")
        .unwrap_or_else(|| panic!("{r}"));
    assert!(
        partial["message"].as_str().unwrap().starts_with(&format!(
            "the {test} test did not finish (rackbench was killed"
        )),
        "{partial}"
    );
    // Each step's latency histogram is kept with it.
    assert!(r["histograms"].as_array().unwrap().len() >= n, "{r}");
    (r, n)
}

/// Two redis-server instances pinned to one CPU take turns on it: flagged, not hidden.
#[test]
fn instances_sharing_a_cpu_are_flagged() {
    if !have("redis-server", "redis-server") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let (code, run, err) = run_json_kv(
        &db,
        &[
            "kv",
            "--instances",
            "2",
            "--server-cpus",
            "0",
            "-n",
            "2000",
            "-t",
            "set",
            "-c",
            "2",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let flags = run["results"][0]["flags"].to_string();
    assert!(flags.contains("cpus_oversubscribed"), "{flags}");
    assert!(
        flags.contains("2 redis-server instances on 1 CPU"),
        "{flags}"
    );
}

/// The Aerospike study's buckets: the share of requests over each threshold, for kv too.
#[test]
fn latency_thresholds_give_the_share_over_each() {
    if !have("redis-server", "redis-server") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let (code, run, err) = run_json_kv(
        &db,
        &[
            "kv",
            "-n",
            "5000",
            "-t",
            "get",
            "-c",
            "2",
            "--latency-thresholds",
            "1us,10s",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let over = |t: &str| {
        run["results"][0]["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "latency_pct_over" && m["labels"]["over"] == t)
            .and_then(|m| m["value"].as_f64())
    };
    // Every request takes more than 1 us and less than 10 s.
    assert_eq!(over("1us"), Some(100.0), "{}", run["results"][0]);
    assert_eq!(over("10s"), Some(0.0));
}

/// The acceptance pass's finding: a knob left at its default was stored nowhere. `A`
/// typed `-P 1,16 -c 10`, `D` typed neither (pipeline 1 and 50 clients by default):
/// `compare A D` found "no test point in common" and said D's pipeline and clients were
/// "(not disclosed)". Every result now says every setting it ran with: D's points meet
/// A's `pipeline=1`, and the comparability shows D's 50 clients.
#[test]
fn a_defaulted_knob_is_stored_and_compares_by_its_value() {
    if !have("redis-server", "redis-server") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let common = ["kv", "--duration", "0.5", "-t", "set,get", "-r", "100"];
    let (code, a, err) = run_json_kv(
        &db,
        &[&common[..], &["-P", "1,16", "-c", "10", "--label", "A"]].concat(),
    );
    assert_eq!(code, 0, "{err}");
    let (code, d, err) = run_json_kv(&db, &[&common[..], &["--label", "D"]].concat());
    assert_eq!(code, 0, "{err}");
    // Stored: the effective settings, defaults included, beside the params as typed.
    for r in d["results"].as_array().unwrap() {
        assert!(r["params"].get("pipeline").is_none(), "{r}");
        assert_eq!(r["settings"]["pipeline"], 1, "{}", r["settings"]);
        assert_eq!(r["settings"]["clients"], 50, "{}", r["settings"]);
        assert_eq!(r["settings"]["keyspace"], 100, "{}", r["settings"]);
        assert_eq!(r["settings"]["instances"], 1, "{}", r["settings"]);
    }
    let a16 = &a["results"].as_array().unwrap()[2];
    assert_eq!(a16["settings"]["pipeline"], 16, "{a16}");
    assert_eq!(a16["settings"]["clients"], 10, "{a16}");
    // And read back from the store, as `show --json` gives it.
    let (code, shown, err) = common::run(&[
        "--db",
        db.to_str().unwrap(),
        "show",
        d["id"].as_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let shown: serde_json::Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(shown["results"][0]["settings"], d["results"][0]["settings"]);

    let (code, out, err) = common::run(&["--db", db.to_str().unwrap(), "compare", "A", "D"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!out.contains("Nothing compared"), "{out}");
    assert!(out.contains("kv get pipeline=1"), "{out}");
    assert!(out.contains("kv set pipeline=1"), "{out}");
    assert!(!out.contains("not disclosed"), "{out}");
    assert!(
        out.contains("param.kv.clients (workload): A = 10 | B = 50"),
        "{out}"
    );
    let (code, out, err) =
        common::run(&["--db", db.to_str().unwrap(), "compare", "--json", "A", "D"]);
    assert_eq!(code, 0, "{err}");
    let c: serde_json::Value = serde_json::from_str(&out).unwrap();
    let both: Vec<&str> = c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r["a"].is_null() && !r["b"].is_null())
        .filter_map(|r| r["point"].as_str())
        .collect();
    assert!(both.contains(&"kv get pipeline=1"), "{both:?}");
    assert!(!both.iter().any(|p| p.contains("pipeline=16")), "{both:?}");
}

/// A redis-server on a free loopback port whose default user needs `password` and whose
/// ACL user `bench` needs `bench_password`, both set in its config file (not on its
/// command line), stopped on drop.
struct PasswordRedis {
    child: std::process::Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl PasswordRedis {
    fn start(password: &str, bench_password: &str) -> PasswordRedis {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let conf = dir.path().join("redis.conf");
        std::fs::write(
            &conf,
            format!(
                "port {port}\nbind 127.0.0.1\nsave \"\"\nappendonly no\nrequirepass {password}\n\
                 user bench on >{bench_password} ~* &* +@all\n"
            ),
        )
        .unwrap();
        let child = std::process::Command::new("redis-server")
            .arg(&conf)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        PasswordRedis {
            child,
            port,
            _dir: dir,
        }
    }
}

impl Drop for PasswordRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A --target that needs a password is benchmarked with `--auth-file` (and `--user` for
/// an ACL user): AUTH goes in front of every connection's first request, reconnects
/// (-k 0) included, so the server counts every request and no error. The password is
/// read from the file on each host and is nowhere in what rackbench prints or stores.
#[test]
fn a_target_with_a_password_is_benchmarked_through_a_file_that_holds_it() {
    use std::os::unix::fs::PermissionsExt;
    if !have("redis-server", "redis-server") {
        return;
    }
    let (secret, bench_secret) = ("Pw-0f-the-default-user", "Pw-0f-bench");
    let redis = PasswordRedis::start(secret, bench_secret);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let file = |name: &str, text: &str, mode: u32| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p.to_str().unwrap().to_string()
    };
    let (good, bench, wrong, open) = (
        file("pw", &format!("{secret}\n"), 0o600),
        file("bench", bench_secret, 0o400),
        file("wrong", "not-it\n", 0o600),
        file("open", &format!("{secret}\n"), 0o644),
    );
    let target = format!("127.0.0.1:{}", redis.port);
    let base = [
        "kv", "--target", &target, "-t", "set,get", "-n", "2000", "-c", "4", "-P", "4", "-r", "100",
    ];

    let (code, run, err) = run_json_kv(
        &db,
        &[&base[..], &["-k", "0", "--auth-file", &good]].concat(),
    );
    assert_eq!(code, 0, "{err}");
    for r in run["results"].as_array().unwrap() {
        let m = |name: &str| {
            r["metrics"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["name"] == name && m["labels"].as_object().is_none_or(|l| l.is_empty()))
                .unwrap_or_else(|| panic!("no {name} in {r}"))["value"]
                .as_f64()
                .unwrap()
        };
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(m("requests"), 2000.0, "{r}");
        assert_eq!(m("server_calls"), 2000.0, "{r}");
        assert!(
            m("reconnects") >= 400.0,
            "-k 0 -P 4: a connection per 4: {r}"
        );
    }
    let text = run.to_string();
    assert!(
        text.contains("--auth-file"),
        "the disclosure says how it authenticated"
    );
    // An ACL user, by name, with its own file.
    let (code, _, err) = run_json_kv(
        &db,
        &[&base[..], &["--auth-file", &bench, "--user", "bench"]].concat(),
    );
    assert_eq!(code, 0, "{err}");

    // Refused before anything runs: a wrong password, a file others can read, a file
    // beside servers rackbench launches (they need none), --user alone.
    let cases: [(Vec<&str>, &str); 4] = [
        (
            [&base[..], &["--auth-file", &wrong]].concat(),
            // The server's message as it wrote it: no line end, nothing masked in it.
            "refused the password of --auth-file (check it, and --user for an ACL user): \
             AUTH replied: WRONGPASS invalid username-password pair",
        ),
        ([&base[..], &["--auth-file", &open]].concat(), "chmod 600"),
        (
            vec!["kv", "-n", "10", "--auth-file", &good],
            "the redis-servers rackbench launches need none",
        ),
        (
            [&base[..], &["--user", "bench"]].concat(),
            "--user needs --auth-file",
        ),
    ];
    for (args, needle) in cases {
        let (code, _, err) = run_json_kv(&db, &args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains(needle),
            "{args:?}: `{err}` should say `{needle}`"
        );
        assert!(!err.contains(secret) && !err.contains("not-it"), "{err}");
        assert!(!err.contains('\r') && !err.contains("***"), "{err:?}");
    }
    // Two runs stored, and neither password anywhere in the store.
    let (code, out, err) = common::run(&["--db", db.to_str().unwrap(), "runs", "--json"]);
    assert_eq!(code, 0, "{err}");
    let runs: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(runs.as_array().unwrap().len(), 2, "{runs}");
    // The database, and its write-ahead log where one is left.
    let mut stored = std::fs::read(&db).unwrap();
    stored.extend(std::fs::read(db.with_extension("sqlite-wal")).unwrap_or_default());
    for s in [secret, bench_secret] {
        assert!(
            !stored.windows(s.len()).any(|w| w == s.as_bytes()),
            "the password is in the store"
        );
    }
}

/// A plain load test killed (kill -9, out of memory) keeps what it measured up to its
/// last checkpoint, taken every `CHECKPOINT_EVERY` (5 s) after the warm-up: a result
/// the next command closes `interrupted`, marked `partial` with the checkpoint it is
/// of, its throughput the count over the checkpoint's window (not the planned
/// duration), the servers' counters missing with why. Nothing of the test under way
/// was kept (acceptance G6).
#[test]
fn sigkill_in_a_load_test_keeps_its_last_checkpoint() {
    if !have("redis-server", "redis-server") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let planned = 30.0;
    let child = bin()
        .args([
            "--db",
            db.to_str().unwrap(),
            "run",
            "kv",
            "-t",
            "set",
            "-c",
            "4",
        ])
        .args(["--duration", "30", "-q"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Two checkpoints stored: the provisional result measured 10 s or more.
    let run = common::kill9_once_measured(child, &db, 10.0, Duration::from_secs(25));
    let (r, window) = common::checkpointed_result(&run, "set", planned);
    assert_eq!(r["headline"], "ops_per_s", "{r}");
    let metric = |name: &str| {
        r["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name && m["labels"].as_object().is_none_or(|l| l.is_empty()))
            .and_then(|m| m["value"].as_f64())
            .unwrap_or_else(|| panic!("no {name}: {r}"))
    };
    let count = metric("requests");
    assert!(count > 0.0, "{r}");
    let rate = metric("ops_per_s");
    assert!(
        (rate - count / window).abs() <= 1e-6 * rate,
        "{rate} ops/s is not {count} requests over {window} s"
    );
    let missing = r["missing"].as_array().unwrap();
    assert!(
        missing
            .iter()
            .any(|m| m["name"] == "server_calls"
                && m["reason"].as_str().unwrap().contains("checkpoint")),
        "{r}"
    );
    // Each operation's latency histogram is kept with it, and this host's samples and
    // their summary over the window (its CPU, beside the rate).
    assert!(!r["histograms"].as_array().unwrap().is_empty(), "{r}");
    assert!(r["telemetry"].as_array().unwrap().len() >= 5, "{r}");
    let summary = r["telemetry_summary"].as_array().unwrap();
    assert_eq!(summary.len(), 1, "{r}");
    assert!(summary[0]["samples"].as_u64().unwrap() >= 5, "{summary:?}");
}

/// A load test that finishes replaces its checkpoints with its final result: no
/// `partial` mark, the servers' counters read, its window the whole test.
#[test]
fn a_finished_load_test_replaces_its_checkpoints() {
    if !have("redis-server", "redis-server") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let (code, run, err) = run_json_kv(
        &db,
        &[
            "kv",
            "-t",
            "set",
            "-c",
            "2",
            "--duration",
            "6",
            "--no-telemetry",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{run}");
    let r = &results[0];
    common::assert_finished(r);
    assert!(
        r["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["name"] == "server_calls"),
        "{r}"
    );
    assert!(r["duration_s"].as_f64().unwrap() >= 5.9, "{r}");
}

/// A redis-server on a free loopback port, stopped on drop.
struct OpenRedis {
    child: std::process::Child,
    port: u16,
}

impl OpenRedis {
    fn start() -> OpenRedis {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = std::process::Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        OpenRedis { child, port }
    }

    /// Send one command (its words) and read the first line of the reply.
    fn call(&self, words: &[&str]) -> String {
        use std::io::{BufRead, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        let mut req = format!("*{}\r\n", words.len());
        for w in words {
            req.push_str(&format!("${}\r\n{w}\r\n", w.len()));
        }
        s.write_all(req.as_bytes()).unwrap();
        let mut line = String::new();
        std::io::BufReader::new(s).read_line(&mut line).unwrap();
        line.trim_end().to_string()
    }
}

impl Drop for OpenRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A worker done early keeps the checkpoints coming: of two workers, one on each of two
/// servers, the one whose server answers sends all of `-n` but the other's first claim
/// of it at once (the workers claim the count as they send), while the other's server
/// holds its writes (`CLIENT PAUSE ... WRITE`). Killed once a checkpoint has measured
/// 5 s, the run keeps one, which holds the done worker's whole count over its window;
/// before, no checkpoint came once a worker was done.
#[test]
fn sigkill_after_a_worker_finished_its_share_keeps_a_checkpoint() {
    if !have("redis-server", "redis-server") {
        return;
    }
    let (quick, held) = (OpenRedis::start(), OpenRedis::start());
    assert_eq!(held.call(&["CLIENT", "PAUSE", "40000", "WRITE"]), "+OK");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let share = 5_000;
    let (a, b) = (
        format!("127.0.0.1:{}", quick.port),
        format!("127.0.0.1:{}", held.port),
    );
    // Connection k goes to target k, and worker k of two takes connection k.
    let child = bin()
        .args(["--db", db.to_str().unwrap(), "run", "kv", "-t", "set"])
        .args(["--target", &a, "--target", &b, "-c", "2", "--threads", "2"])
        .args(["-n", &(2 * share).to_string(), "-q", "--no-telemetry"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let run = common::kill9_once_measured(child, &db, 5.0, Duration::from_secs(30));
    assert_eq!(held.call(&["CLIENT", "UNPAUSE"]), "+OK");
    assert_eq!(run["status"], "interrupted", "{run}");
    let r = &run["results"][0];
    assert_eq!(r["status"], "interrupted", "{r}");
    let window = r["duration_s"].as_f64().unwrap();
    assert!(
        (5.0..20.0).contains(&window),
        "the window measured: {window} s"
    );
    let partial = r["flags"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "partial")
        .unwrap_or_else(|| panic!("no partial flag: {r}"));
    assert!(
        partial["message"]
            .as_str()
            .unwrap()
            .contains("(the test stops after a count of requests)"),
        "{partial}"
    );
    // The done worker's count, and nothing of the held one's: its claim of 10,000 / 128
    // requests (78) unsent.
    let count = common::stored_metric(r, "requests").unwrap();
    assert_eq!(count, (2 * share - 2 * share / 128) as f64, "{r}");
    let rate = common::stored_metric(r, "ops_per_s").unwrap();
    assert!(
        (rate - count / window).abs() <= 1e-6 * rate,
        "{rate} ops/s is not {count} requests over {window} s"
    );
}

/// A run at the default server placement and one that typed it are like for like: the
/// default's setting is the CPUs its servers were pinned to, not "none" (acceptance P, 1:
/// `--server-cpus 0` against the default, both pinned to CPU 0, was "NOT like for like:
/// param.kv.server_cpus differ").
#[test]
fn the_default_server_placement_is_the_one_it_ran_at() {
    if !have("redis-server", "redis-server") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let first = engine::launch::allowed_cpus()[0].to_string();
    for (label, extra) in [
        ("typed", vec!["--server-cpus", first.as_str()]),
        ("dflt", vec![]),
    ] {
        let mut args = vec!["kv", "-t", "set", "-n", "2000", "-c", "2", "--label", label];
        args.extend(extra);
        let (code, _, err) = run_json_kv(&db, &args);
        assert_eq!(code, 0, "{err}");
    }
    let run = show_latest(&db);
    let setting = &run["results"][0]["settings"]["server_cpus"];
    assert_eq!(
        setting,
        &serde_json::json!([first.parse::<u64>().unwrap()]),
        "{run}"
    );
    let (code, out, err) = common::run(&["--db", db.to_str().unwrap(), "compare", "typed", "dflt"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Comparability: like for like"), "{out}");
}
