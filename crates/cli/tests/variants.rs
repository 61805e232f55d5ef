//! Variants: a plan's settings under study, each sweep point run under each, interleaved
//! per repetition, with setup and teardown commands that always pair up (also after a
//! failure and after Ctrl-C), disclosed, and the variant a parameter of every result.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{bin, have};

/// One test of this file at a time: one of them changes a sysctl, which every run's
/// variants would see change under them (as they should: it is the system's state).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A kv plan whose variants log their setup and teardown to `log`.
fn plan(dir: &Path, log: &Path, kv: &str, b_setup: &str) -> std::path::PathBuf {
    let p = dir.join("variants.toml");
    let log = log.display();
    std::fs::write(
        &p,
        format!(
            "[kv]\n{kv}\n\n\
             [[variant]]\nname = \"a\"\nsetup = [\"echo setup-a >> {log}\", \"sysctl -n net.core.somaxconn\"]\n\
             teardown = [\"echo teardown-a >> {log}\"]\n\n\
             [[variant]]\nname = \"b\"\nsetup = [\"echo setup-b >> {log}\", \"{b_setup}\"]\n\
             teardown = [\"echo teardown-b >> {log}\"]\n"
        ),
    )
    .unwrap();
    p
}

fn read_log(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn variants_interleave_per_repetition_and_are_disclosed() {
    let _serial = serial();
    if !have("redis-server", "redis-server") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let plan = plan(
        dir.path(),
        &log,
        "tests = [\"get\"]\nrequests = 3000\nclients = 2",
        "true",
    );
    let db = dir.path().join("r.sqlite");
    let (code, run, err) = common::run_json(
        &db,
        &["--plan", plan.to_str().unwrap(), "--repeat", "2"],
        &["--no-telemetry"],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        read_log(&log),
        [
            "setup-a",
            "teardown-a",
            "setup-b",
            "teardown-b",
            "setup-a",
            "teardown-a",
            "setup-b",
            "teardown-b"
        ]
    );
    let order: Vec<(i64, String)> = run["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["repetition"].as_i64().unwrap(),
                r["params"]["variant"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            (0, "a".into()),
            (0, "b".into()),
            (1, "a".into()),
            (1, "b".into())
        ]
    );
    let facts = &run["hosts"][0]["facts"];
    let setup = facts["variant.a.setup"]["value"].as_str().unwrap();
    assert!(setup.contains("sysctl -n net.core.somaxconn ->"), "{setup}");
    assert_eq!(run["plan"]["variants"][1]["name"], "b");
}

#[test]
fn teardown_runs_after_a_failed_setup_and_after_ctrl_c() {
    let _serial = serial();
    if !have("redis-server", "redis-server") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // b's setup fails: a was measured and torn down, b's teardown still runs (its setup
    // may have half-applied), and the run says which command failed where.
    let log = dir.path().join("log");
    let plan1 = plan(
        dir.path(),
        &log,
        "tests = [\"get\"]\nrequests = 2000\nclients = 2",
        "false",
    );
    let db = dir.path().join("r.sqlite");
    let (code, run, err) = common::run_json(&db, &["--plan", plan1.to_str().unwrap()], &[]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        read_log(&log),
        ["setup-a", "teardown-a", "setup-b", "teardown-b"]
    );
    assert!(
        run["error"]
            .as_str()
            .unwrap_or_default()
            .contains("variant b: setup on local failed: `false`"),
        "{run}"
    );
    // Asked for b, `compare` says it was declared but has no result, and does not
    // suggest comparing a with itself (acceptance pass C, 9).
    let id = run["id"].as_str().unwrap();
    let out = bin()
        .args(["--db", db.to_str().unwrap(), "compare"])
        .args([format!("{id}@a"), format!("{id}@b")])
        .output()
        .unwrap();
    let cerr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{cerr}");
    assert!(
        cerr.contains(&format!(
            "variant `b` of run {id} has no result: it was declared, but its setup failed or \
             the run stopped before it (`rackbench show {id}` says which)"
        )) && cerr.contains(&format!(
            "it has: a (e.g. rackbench compare {id}@a OTHER_RUN)"
        )),
        "{cerr}"
    );
    // Ctrl-C during a's test: its teardown runs before rackbench exits.
    let log2 = dir.path().join("log2");
    let plan2 = plan(
        dir.path(),
        &log2,
        "tests = [\"get\"]\nduration = 30\nclients = 2",
        "true",
    );
    let child = bin()
        .args([
            "--db",
            db.to_str().unwrap(),
            "run",
            "--plan",
            plan2.to_str().unwrap(),
            "-q",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while read_log(&log2).is_empty() && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(1500));
    unsafe { kill(child.id() as i32, 2) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    assert_eq!(read_log(&log2), ["setup-a", "teardown-a"]);
}

#[test]
fn a_variant_that_sets_a_sysctl_is_restored_disclosed_and_explains_the_comparison() {
    let _serial = serial();
    if !have("redis-server", "redis-server") {
        return;
    }
    let key = "/proc/sys/net/core/somaxconn";
    let Ok(orig) = std::fs::read_to_string(key) else {
        return;
    };
    let orig: u64 = orig.trim().parse().unwrap();
    if std::fs::write(key, format!("{orig}\n")).is_err() {
        eprintln!("skipped: cannot write {key} (not root)");
        return;
    }
    let new = if orig > 200 { orig - 1 } else { orig + 1 };
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("sysctl.toml");
    // The teardown's first command fails: the next one must still run.
    std::fs::write(
        &p,
        format!(
            "[kv]\ntests = [\"get\"]\nrequests = 2000\nclients = 2\n\n\
             [[variant]]\nname = \"base\"\n\n\
             [[variant]]\nname = \"tuned\"\nsetup = [\"sysctl -w net.core.somaxconn={new}\"]\n\
             teardown = [\"false\", \"sysctl -w net.core.somaxconn={orig}\"]\n"
        ),
    )
    .unwrap();
    let db = dir.path().join("r.sqlite");
    let (code, run, err) = common::run_json(&db, &["--plan", p.to_str().unwrap()], &[]);
    let now: u64 = std::fs::read_to_string(key)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    if now != orig {
        let _ = std::fs::write(key, format!("{orig}\n"));
    }
    assert_eq!(code, 0, "{err}");
    assert_eq!(now, orig, "the teardown did not restore somaxconn");
    assert!(err.contains("teardown on local failed: `false`"), "{err}");
    let facts = &run["hosts"][0]["facts"];
    assert_eq!(
        facts["sysctl.net.core.somaxconn"]["value"].as_str(),
        Some(orig.to_string().as_str()),
        "the disclosure before the variants"
    );
    assert_eq!(
        facts["variant.tuned.set.sysctl.net.core.somaxconn"]["value"].as_str(),
        Some(new.to_string().as_str()),
        "what the variant set, read back after its setup"
    );
    assert!(facts
        .get("variant.base.set.sysctl.net.core.somaxconn")
        .is_none());
    let teardown = facts["variant.tuned.teardown"]["value"].as_str().unwrap();
    assert!(
        teardown.contains("$ false -> FAILED")
            && teardown.contains(&format!("$ sysctl -w net.core.somaxconn={orig}")),
        "{teardown}"
    );
    // The variants' comparison: the sysctl differs, explained by the declared variant.
    let id = run["id"].as_str().unwrap();
    let out = bin()
        .args(["--db", db.to_str().unwrap(), "compare", "--json"])
        .args([format!("{id}@base"), format!("{id}@tuned")])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = c.to_string();
    assert!(
        text.contains("which sets sysctl.net.core.somaxconn"),
        "{text}"
    );
    assert!(text.contains("set by the declared variant"), "{text}");
    assert!(!text.contains("NOT like for like"), "{text}");
}

#[test]
fn teardown_runs_after_a_failure_during_the_measurement() {
    let _serial = serial();
    if !have("redis-server", "redis-server") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let plan = plan(
        dir.path(),
        &log,
        "tests = [\"get\"]\nduration = 30\nclients = 2",
        "true",
    );
    let db = dir.path().join("r.sqlite");
    let child = bin()
        .args(["--db", db.to_str().unwrap(), "run", "--plan"])
        .arg(&plan)
        .args(["-q", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The server dies during a's test: the test fails, a's teardown still runs.
    let start = Instant::now();
    let mut killed = false;
    while start.elapsed() < Duration::from_secs(20) && !killed {
        std::thread::sleep(Duration::from_millis(200));
        if read_log(&log).is_empty() {
            continue;
        }
        for (pid, _) in common::children_named(child.id(), "redis-server") {
            std::thread::sleep(Duration::from_millis(1000));
            unsafe { kill(pid as i32, 9) };
            killed = true;
        }
    }
    let out = child.wait_with_output().unwrap();
    assert!(killed, "no redis-server was seen to kill");
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(read_log(&log), ["setup-a", "teardown-a"]);
}

#[test]
fn bad_variants_are_refused_before_anything_runs() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    for (variants, says) in [
        ("[[variant]]\nname = \"a b\"\n", "use letters, digits"),
        (
            "[[variant]]\nname = \"a\"\n[[variant]]\nname = \"a\"\n",
            "declared twice",
        ),
        (
            "[[variant]]\nname = \"a\"\non = \"db\"\n",
            "choose sut, loadgen or all",
        ),
        (
            "[[variant]]\nname = \"a\"\nsetpu = [\"x\"]\n",
            "unknown field",
        ),
    ] {
        let p = dir.path().join("bad.toml");
        std::fs::write(&p, format!("[kv]\nrequests = 10\n\n{variants}")).unwrap();
        let (code, _, err) = common::run_json(&db, &["--plan", p.to_str().unwrap()], &[]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(says), "{variants}: {err}");
    }
    let p = dir.path().join("cv.toml");
    std::fs::write(&p, "[kv]\nrequests = 10\n[[variant]]\nname = \"a\"\n").unwrap();
    let (code, _, err) = common::run_json(
        &db,
        &["--plan", p.to_str().unwrap(), "--until-cv", "3"],
        &[],
    );
    assert_eq!(code, 2);
    assert!(
        err.contains("--until-cv cannot be used with variants"),
        "{err}"
    );
}

extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
}

/// `compare RUN@a RUN@b`: the two variants of one run side by side, each repetition a
/// replication of its own (interleaved, servers of its own), so with 3 repetitions the
/// difference carries a confidence interval.
#[test]
fn compare_takes_two_variants_of_one_run() {
    let _serial = serial();
    if !have("redis-server", "redis-server") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let plan = plan(
        dir.path(),
        &log,
        "tests = [\"get\"]\nrequests = 3000\nclients = 2",
        "true",
    );
    let db = dir.path().join("r.sqlite");
    let (code, _, err) = common::run_json(
        &db,
        &["--plan", plan.to_str().unwrap(), "--repeat", "3"],
        &["--no-telemetry"],
    );
    assert_eq!(code, 0, "{err}");
    let out = bin()
        .args([
            "--db",
            db.to_str().unwrap(),
            "compare",
            "latest@a",
            "latest@b",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["point"] == "kv get" && r["metric"] == "ops_per_s")
        .unwrap_or_else(|| panic!("{c}"));
    assert_eq!(row["a"]["n"], 3);
    assert!(row["p_value"].is_number(), "{row}");
    // The variant is the difference under study, said as such; nothing else differs.
    let verdict = c["comparability"]["verdict"].as_str().unwrap_or_default();
    assert_eq!(
        verdict, "like for like but the declared variant (a vs b)",
        "{c}"
    );
    let out = bin()
        .args([
            "--db",
            db.to_str().unwrap(),
            "compare",
            "latest@x",
            "latest@b",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("it has: a, b"));

    // A TCO platform is one setting: a run of two variants is refused, naming one to
    // take (acceptance pass C, 4: it blended them, the geometric mean over both).
    let tco_plan = dir.path().join("tco.toml");
    std::fs::write(
        &tco_plan,
        "years = 3\nenergy_price_per_kwh = 0.10\n[rack]\npower_budget_w = 2000\n\
         rack_units = 40\n[[platform]]\nname = \"p\"\nrun = \"latest\"\n\
         bom = [{ name = \"Server\", unit_cost = 5000 }]\n",
    )
    .unwrap();
    let out = bin()
        .args(["--db", db.to_str().unwrap(), "tco"])
        .arg(&tco_plan)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "was measured under variants (a, b), each its own setting: name one, e.g. run = \""
        ) && err.contains("@a\""),
        "{err}"
    );

    // The report puts the variants in columns (seed 003), with a Difference column
    // against the chosen baseline and the chosen tests.
    let html = dir.path().join("variants.html");
    let report = |extra: &[&str]| {
        let mut args = vec![
            "--db",
            db.to_str().unwrap(),
            "report",
            "latest",
            "-o",
            html.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        bin().args(&args).output().unwrap()
    };
    let out = report(&["--tests", "get"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&html).unwrap();
    let summary = &page[page.find("Summary of measured data").unwrap()..];
    let summary = &summary[..summary.find("</table>").unwrap()];
    assert!(
        summary.contains("@a</th>") && summary.contains("@b</th>"),
        "{summary}"
    );
    assert!(summary.contains("Difference"), "{summary}");
    // Names that match nothing: a clear error, and the report is not rewritten.
    std::fs::remove_file(&html).unwrap();
    for (args, says) in [
        (&["--tests", "hset"][..], "no test `hset`"),
        (
            &["--extrapolate", "nosuch=x2:boards"][..],
            "no column `nosuch`",
        ),
        (&["--extrapolate", "whatever=fast"][..], "--extrapolate"),
        (&["--at", "instances"][..], "KEY=VALUE"),
    ] {
        let out = report(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!html.exists(), "{args:?} wrote a report");
    }
}

/// Acceptance M, 2: a variant run measured by `--power-meter` keeps its power sources
/// through every variant. The disclosure read again after each setup knows nothing of the
/// run's meter, and every variant was disclosed as having changed `power.sources` to
/// "unknown", which the report then showed per variant beside the meter's idle watts.
#[test]
fn a_variant_run_keeps_the_power_sources_of_its_meter() {
    let _serial = serial();
    if !have("redis-server", "redis-server") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let plan = plan(
        dir.path(),
        &log,
        "tests = [\"get\"]\nrequests = 3000\nclients = 2",
        "true",
    );
    let db = dir.path().join("r.sqlite");
    let (code, run, err) = common::run_json(
        &db,
        &["--plan", plan.to_str().unwrap()],
        &["--power-meter", "echo 150"],
    );
    assert_eq!(code, 0, "{err}");
    let facts = &run["hosts"][0]["facts"];
    let sources = facts["power.sources"]["value"].as_str().unwrap_or_default();
    assert!(sources.starts_with("meter:system"), "{facts}");
    for v in ["a", "b"] {
        let changes = facts[format!("variant.{v}.changes")]["value"]
            .as_str()
            .unwrap_or_default();
        assert!(!changes.contains("power.sources"), "{v}: {changes}");
        assert!(
            facts[format!("variant.{v}.set.power.sources")].is_null(),
            "{facts}"
        );
    }
}
