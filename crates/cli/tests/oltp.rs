//! The binary end to end on TPC-C: `oltp build` into a kept cluster directory, `oltp
//! check` passing, then failing after a table is corrupted, `run oltp` reusing the build,
//! and the errors a user gets for missing input. Real PostgreSQL (skipped when absent).

mod common;

use std::path::Path;

use common::run;

fn have_postgres() -> bool {
    let ok = wl_oltp::postgres_available();
    if !ok {
        eprintln!("skipped: PostgreSQL (initdb, postgres) is not installed");
    }
    ok
}

/// A one-warehouse build in `dir`'s `data`, and where a run of it stores its results:
/// (the cluster directory, the results store).
fn one_warehouse_build(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let data = dir.join("data");
    let d = data.to_str().unwrap();
    let (code, out, err) = run(&["-q", "oltp", "build", "--dir", d, "--warehouses", "1"]);
    assert_eq!(code, 0, "{out}{err}");
    (data, dir.join("r.sqlite"))
}

fn corrupt(data: &Path) {
    corrupt_with(
        data,
        "UPDATE district SET d_ytd = d_ytd + 5 WHERE d_w_id = 1 AND d_id = 4",
    );
}

/// Run `sql` in the build kept in `data`, as a user editing it by hand would.
fn corrupt_with(data: &Path, sql: &str) {
    let settings = wl_oltp::server::Settings {
        shared_buffers: "32MB".into(),
        fsync: false,
        synchronous_commit: "off".into(),
        max_connections: 20,
        extra: vec![],
        cpus: vec![],
    };
    let mut s = wl_oltp::server::Server::start(data, &settings).unwrap();
    let mut c = wl_oltp::server::connect(&s.config("tpcc")).unwrap();
    c.batch_execute(sql).unwrap();
    drop(c);
    s.stop();
}

#[test]
fn build_check_run_and_a_corrupted_table() {
    if !have_postgres() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let d = data.to_str().unwrap();
    let (code, out, err) = run(&["-q", "oltp", "build", "--dir", d, "--warehouses", "1"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("consistency ok"), "{out}");
    // A second build reuses the first.
    let (code, out, _) = run(&["-q", "oltp", "build", "--dir", d, "--warehouses", "1"]);
    assert_eq!(code, 0);
    assert!(out.contains("reused"), "{out}");

    let (code, out, err) = run(&["--json", "oltp", "check", "--dir", d]);
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(
        v["databases"][0]["conditions"].as_array().unwrap().len(),
        11
    );

    // The runner reuses the build (when the results store is available).
    let store = tmp.path().join("r.sqlite");
    let (code, out, err) = run(&[
        "--db",
        store.to_str().unwrap(),
        "run",
        "oltp",
        "--cluster-dir",
        d,
        "--warehouses",
        "1",
        "--vus",
        "2",
        "--duration",
        "2",
        "--rampup",
        "0",
        "--no-telemetry",
        "--json",
        "-q",
    ]);
    if err.contains("being written") {
        eprintln!("skipped the run part: {err}");
    } else {
        assert_eq!(code, 0, "{out}{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let r = &v["results"][0];
        assert_eq!(r["headline"], "nopm");
        let nopm = r["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "nopm" && m.get("labels").is_none())
            .and_then(|m| m["value"].as_f64())
            .unwrap();
        assert!(nopm > 0.0);

        // The server's TPM with a ramp-up (acceptance pass B, 1): the first counter
        // reading counted up to a second of the ramp-up as measured, +15% to +47% over
        // the client's count on a short run. Both ends now count every user's work.
        let (code, out, err) = run(&[
            "--db",
            store.to_str().unwrap(),
            "run",
            "oltp",
            "--cluster-dir",
            d,
            "--warehouses",
            "1",
            "--vus",
            "2",
            // Five seconds: the few milliseconds between the two ends' readings are
            // a smaller share of the window on a busy machine.
            "--duration",
            "5",
            "--rampup",
            "3",
            "--no-telemetry",
            "--json",
            "-q",
        ]);
        assert_eq!(code, 0, "{out}{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let value = |name: &str| {
            v["results"][0]["metrics"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["name"] == name && m.get("labels").is_none())
                .and_then(|m| m["value"].as_f64())
                .unwrap_or_else(|| panic!("no {name}"))
        };
        let (tpm, client) = (value("tpm"), value("tpm_client"));
        // Left: a send counted by the client and its commit by the server a few
        // milliseconds apart, the monitor's own readings: well under 5%.
        assert!(
            (tpm / client - 1.0).abs() < 0.05,
            "tpm {tpm:.0}, tpm_client {client:.0}: {:.3}",
            tpm / client
        );

        // The capacity tests on the same build: the highest open-loop rate meeting a
        // p99 objective, then load levels of it with CPU and (modelled) power per level.
        let (code, out, err) = run(&[
            "--db",
            store.to_str().unwrap(),
            "run",
            "oltp",
            "--cluster-dir",
            d,
            "--warehouses",
            "1",
            "--vus",
            "2",
            "-t",
            "search,levels",
            "--slo",
            "p99<250ms",
            // A capacity far below what 2 users do (probes at 20 and 40 /s, two seconds
            // each): a level at 100% of a probe's edge, one second long, fell below 90%
            // of its target on a busy CI machine (`level_below_target`, exit 1).
            "--search-start",
            "20",
            "--search-steps",
            "2",
            "--step-duration",
            "2",
            "--levels",
            "100,50",
            "--idle-duration",
            "0.5",
            "--power-model",
            "50:150",
            "--json",
            "-q",
        ]);
        assert_eq!(code, 0, "{}\n{err}", common::results_said(&out));
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let search = &v["results"][0];
        assert_eq!(search["test"], "search");
        let metric = |r: &serde_json::Value, name: &str| {
            r["metrics"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["name"] == name && m.get("labels").is_none())
                .and_then(|m| m["value"].as_f64())
        };
        let best = metric(search, "max_rate_meeting_slo_per_s").expect("a rate meeting p99<250ms");
        assert!(best >= 10.0, "{best}");
        let levels = &v["results"][1];
        assert_eq!(levels["test"], "levels");
        let per_level_power = levels["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["name"] == "power_w" && m["labels"]["phase"] == "levels")
            .count();
        assert_eq!(per_level_power, 3, "100%, 50% and active idle");
        assert!(metric(levels, "overall_reply_rate_per_w").is_some());
    }

    corrupt(&data);
    let (code, out, _) = run(&["oltp", "check", "--dir", d]);
    assert_eq!(code, 1, "a failed check exits 1: {out}");
    assert!(out.contains("FAIL"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.contains("FAIL") && l.contains("D_YTD")),
        "{out}"
    );
    // Condition 11 is said skipped, not left out (acceptance pass J, 10).
    assert!(
        out.contains("  11  skip  holds only right after a build (--initial checks it)"),
        "{out}"
    );
    // More databases than were built (acceptance pass B, 11): the next command is a
    // build of them in this cluster, not a CREATE DATABASE or another --dsn.
    let (code, out, err) = run(&["oltp", "check", "--dir", d, "--databases", "3"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains(&format!(
            "database tpcc_2 does not exist in the cluster in {d}: build it with \
             `rackbench oltp build --dir {d} --warehouses 1 --databases 3`, or check the 1 \
             there with --databases 1"
        )),
        "{err}"
    );
    assert!(!err.contains("--dsn"), "{err}");
}

/// A reused build is checked before the run, as after it (TPC-C 3.3.3): the acceptance
/// audit altered `w_ytd` and `d_next_o_id` in a kept cluster by hand, and `run oltp
/// --cluster-dir` reused the build, ran, and flagged the result `consistency` three
/// times, blaming the run for damage that predates it. It is refused now before anything
/// runs (exit 2, nothing stored), naming the broken conditions and what to type next;
/// the rebuild it names runs.
#[test]
fn a_reused_build_damaged_before_the_run_is_refused_before_it_runs() {
    if !have_postgres() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (data, store) = one_warehouse_build(tmp.path());
    let d = data.to_str().unwrap();
    corrupt_with(
        &data,
        "UPDATE warehouse SET w_ytd = w_ytd + 1 WHERE w_id = 1; \
         UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = 1 AND d_id = 4",
    );
    let run_oltp = |extra: &[&str]| {
        let mut args = vec![
            "--db",
            store.to_str().unwrap(),
            "run",
            "oltp",
            "--cluster-dir",
            d,
            "--warehouses",
            "1",
            "--vus",
            "2",
            "--duration",
            "1",
            "--rampup",
            "0",
            "--no-telemetry",
            "-q",
        ];
        args.extend_from_slice(extra);
        run(&args)
    };
    let (code, out, err) = run_oltp(&[]);
    if err.contains("being written") {
        eprintln!("skipped: {err}");
        return;
    }
    assert_eq!(code, 2, "refused as a setup error: {out}{err}");
    for want in [
        "database tpcc: the build this run would reuse is inconsistent before the run \
         (TPC-C clause 3.3.2): condition 1 (W_YTD = sum(D_YTD)) fails for 1 rows; \
         condition 2 (D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)) fails for 1 rows; \
         condition 8 (W_YTD = sum(H_AMOUNT)) fails for 1 rows; nothing was run",
        &format!(
            "Give --rebuild to drop it and build 1 warehouses again (or `rackbench oltp \
             build --dir {d} --warehouses 1 --rebuild`), or see which rows with `rackbench \
             oltp check --dir {d}`"
        ),
    ] {
        assert!(err.contains(want), "no {want:?} in {err}");
    }
    assert!(!err.contains("condition 3 "), "{err}");
    assert!(
        stored_runs(&store).is_empty(),
        "a run was stored: {:?}",
        stored_runs(&store)
    );
    // What it says to do works: the build made again, the run runs and passes the check.
    let (code, out, err) = run_oltp(&["--rebuild"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(stored_runs(&store).len(), 1);
}

/// PostgreSQL killed mid-run (issue 13 item 16): the stored result names the dead server
/// as the cause, as a dead redis-server or nginx is named (`server_died`, "postgres exited
/// (killed by signal 9)"), not the "connection lost" its clients saw; what was measured
/// before is kept, and the run fails (exit 1).
#[test]
fn a_postgres_killed_mid_run_is_named_as_the_cause() {
    use std::time::{Duration, Instant};
    if !have_postgres() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (data, store) = one_warehouse_build(tmp.path());
    let d = data.to_str().unwrap();
    let child = common::bin()
        .args([
            "--db",
            store.to_str().unwrap(),
            "run",
            "oltp",
            "--cluster-dir",
            d,
        ])
        .args([
            "--warehouses",
            "1",
            "--vus",
            "2",
            "--duration",
            "30",
            "--rampup",
            "0",
        ])
        .args(["--no-telemetry", "-q"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The postmaster rackbench launched on the build, then some transactions.
    let started = Instant::now();
    let postmaster = loop {
        let found = common::children_named(child.id(), "postgres");
        if let Some((pid, _)) = found.first() {
            break *pid;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "rackbench did not launch postgres"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_secs(4));
    // SAFETY: kill(2) on the postmaster this test's rackbench launched.
    unsafe { libc::kill(postmaster as i32, libc::SIGKILL) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("being written") {
        eprintln!("skipped: {err}");
        return;
    }
    assert_eq!(out.status.code(), Some(1), "{err}");
    let cause = "postgres exited (killed by signal 9)";
    assert!(err.contains(&format!("run failed: {cause}")), "{err}");
    let (_, shown, _) = run(&["--db", store.to_str().unwrap(), "show", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&shown).unwrap();
    let r = &v["results"][0];
    assert_eq!(r["status"], "failed", "{r}");
    assert!(
        r["error"].as_str().is_some_and(|e| e.contains(cause)),
        "{}",
        r["error"]
    );
    let died = r["flags"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "server_died")
        .unwrap_or_else(|| panic!("no server_died flag: {}", r["flags"]));
    assert!(died["message"].as_str().unwrap().contains(cause), "{died}");
    let done: f64 = r["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["name"] == "transactions")
        .filter_map(|m| m["value"].as_f64())
        .sum();
    assert!(done > 0.0, "what was measured before the kill is kept: {r}");
}

/// Ctrl-C during a build of many warehouses (minutes on a real host) ends it within a
/// chunk's load, not at its end: the run is interrupted, nothing is left running, and
/// what the build left is not reused as a build. No test ran: nothing is stored.
#[test]
fn ctrl_c_during_a_build_ends_the_build() {
    use std::io::BufRead as _;
    if !have_postgres() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let store = tmp.path().join("r.sqlite");
    let mut child = common::bin()
        .args(["--db", store.to_str().unwrap(), "run", "oltp"])
        .args(["--cluster-dir", data.to_str().unwrap()])
        .args(["--warehouses", "20", "--vus", "2", "--duration", "5"])
        .args(["--no-telemetry"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut err = String::new();
    for l in lines.by_ref() {
        let l = l.unwrap();
        err.push_str(&l);
        err.push('\n');
        if l.contains("building database") {
            // SAFETY: kill(2) on the rackbench this test started.
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
            break;
        }
    }
    for l in lines {
        err.push_str(&l.unwrap());
        err.push('\n');
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("the build was interrupted"), "{err}");
    assert!(
        !err.contains("loaded in"),
        "the build ran to its end: {err}"
    );
    assert!(
        err.contains("interrupted before any result was stored; nothing kept"),
        "{err}"
    );
    assert!(!store.exists(), "a store was left: {}", store.display());
    let left = left_running_under(tmp.path().to_str().unwrap());
    assert!(left.is_empty(), "left running: {left:?}");
}

/// The command lines of the processes that name `dir` and are still there 2 s on. A
/// process seen once may be on its way out (CI once caught one bearing rackbench's own
/// command line, its reaper's fork, right after rackbench was reaped, on a loaded
/// machine): what is still there 2 s later was left running.
fn left_running_under(dir: &str) -> Vec<String> {
    let running = || -> Vec<String> {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/cmdline")).ok())
            .filter(|c| c.contains(dir))
            .collect()
    };
    let mut left = running();
    for _ in 0..20 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        left = running();
    }
    left
}

/// `oltp build` and `oltp check` had no signal handling (acceptance pass B, 4): Ctrl-C
/// killed the build outright with no word, its cluster's postgres left to die on its own
/// (the next `oltp check` tripped on its postmaster.pid), and a build started with SIGINT
/// ignored (a script's background job) ran on to its end. Now, as `run`: a message, the
/// cluster stopped cleanly before exit, 130, nothing left running; and the build left
/// is no build.
#[test]
fn ctrl_c_stops_oltp_build_and_its_cluster_cleanly() {
    use std::io::BufRead as _;
    use std::os::unix::process::CommandExt as _;
    if !have_postgres() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    for ignored in [false, true] {
        let data = tmp.path().join(format!("data-{ignored}"));
        let d = data.to_str().unwrap();
        let mut cmd = common::bin();
        cmd.args(["oltp", "build", "--dir", d, "--warehouses", "20"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        if ignored {
            // SAFETY: signal(2) in the child before exec, as a shell does for `cmd &`.
            unsafe {
                cmd.pre_exec(|| {
                    libc::signal(libc::SIGINT, libc::SIG_IGN);
                    Ok(())
                });
            }
        }
        let mut child = cmd.spawn().unwrap();
        let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let mut err = String::new();
        for l in lines.by_ref() {
            let l = l.unwrap();
            err.push_str(&l);
            err.push('\n');
            if l.contains("building database") {
                // SAFETY: kill(2) on the rackbench this test started.
                unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
                break;
            }
        }
        let sent = std::time::Instant::now();
        for l in lines {
            err.push_str(&l.unwrap());
            err.push('\n');
        }
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(130), "SIGINT ignored: {ignored}: {err}");
        assert!(
            sent.elapsed() < std::time::Duration::from_secs(30),
            "the build ran on: {err}"
        );
        assert!(err.contains("Ctrl-C (SIGINT) received: stopping"), "{err}");
        assert!(
            err.contains(&format!(
                "interrupted: the build was abandoned, and the cluster in {d} was stopped cleanly"
            )),
            "{err}"
        );
        assert!(
            !err.contains("loaded in"),
            "the build ran to its end: {err}"
        );
        // Stopped before exit: no postmaster.pid, no process of the cluster.
        assert!(!data.join("postmaster.pid").exists(), "{err}");
        let left = left_running_under(d);
        assert!(left.is_empty(), "left running: {left:?}");
        // The next command finds a stopped cluster holding no build.
        let (code, out, err) = run(&["oltp", "check", "--dir", d]);
        assert_eq!(code, 2, "{out}{err}");
        assert!(err.contains("holds no TPC-C build"), "{err}");
    }
}

/// A build that cannot fit (acceptance pass B, 5: `--warehouses 100000` started loading
/// about 10 TB at once): refused before anything is made, saying its size, the free
/// space and what to do; exit 2, no cluster directory, no store.
#[test]
fn a_build_larger_than_the_free_space_is_refused_before_anything_is_made() {
    if !have_postgres() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let store = tmp.path().join("r.sqlite");
    // About 1 PB: more than any test machine has free. Old code started loading it: a
    // child still running after a while is that.
    let finish = |mut cmd: std::process::Command| {
        let mut child = cmd
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let started = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > std::time::Duration::from_secs(60) {
                let _ = child.kill();
                panic!("still running after 60 s: the build started");
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let out = child.wait_with_output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let mut cmd = common::bin();
    cmd.args(["oltp", "build", "--dir", data.to_str().unwrap()])
        .args(["--warehouses", "10000000"]);
    let (code, err) = finish(cmd);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("a TPC-C build of 10000000 warehouses needs about 1050.0 TB"),
        "{err}"
    );
    assert!(
        err.contains(&format!("the file system of {} has", tmp.path().display())),
        "{err}"
    );
    assert!(err.contains("choose fewer with --warehouses"), "{err}");
    assert!(!data.exists(), "a cluster directory was made");
    // A throwaway cluster, in `run`: refused the same way, nothing stored.
    let mut cmd = common::bin();
    cmd.args(["--db", store.to_str().unwrap(), "run", "oltp"])
        .args([
            "--warehouses",
            "10000000",
            "--duration",
            "5",
            "--no-telemetry",
        ]);
    let (code, err) = finish(cmd);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("needs about 1050.0 TB"), "{err}");
    assert!(!store.exists(), "a store was left: {}", store.display());
}

#[test]
fn missing_input_says_what_to_type() {
    let (code, _, err) = run(&["oltp", "build", "--warehouses", "1"]);
    assert_eq!(code, 2);
    assert!(err.contains("--dir"), "{err}");
    let (code, _, err) = run(&["oltp", "check", "--dir", "/nonexistent/rackbench-x"]);
    assert_eq!(code, 2);
    assert!(err.contains("rackbench oltp build"), "{err}");
    let (code, _, err) = run(&[
        "oltp",
        "check",
        "--dsn",
        "host=/tmp password=s3cret port=notaport",
    ]);
    assert_eq!(code, 2);
    assert!(
        !err.contains("s3cret"),
        "the password is never printed: {err}"
    );
}

/// The password of the password-protected server below: a space, a quote, a backslash,
/// `@` and `:`, each of which a connection string must quote, escape or encode. Its
/// first word is long enough that the base64 of a stored histogram cannot hold it by
/// chance (a three-letter "Zq9" turned up in one, failing the suite once).
const PASSWORD: &str = "Zq9Kx7Wm x'y\\z@w:v";

/// Pieces of [`PASSWORD`] that must be found nowhere rackbench prints or stores.
const FRAGMENTS: [&str; 5] = ["Zq9Kx7Wm", "x'y", "y\\z", "y\\\\z", "z@w:v"];

/// A throwaway PostgreSQL where `bench` (owner of database `tpcc`) must give
/// [`PASSWORD`] over TCP (scram-sha-256); the superuser keeps trust over the socket.
fn password_server() -> wl_oltp::server::Server {
    let settings = wl_oltp::server::Settings {
        shared_buffers: "32MB".into(),
        fsync: false,
        synchronous_commit: "off".into(),
        max_connections: 40,
        // A user's server, reached over TCP (a launched one takes this host's clients
        // on its private socket alone).
        extra: vec![("listen_addresses".into(), "127.0.0.1".into())],
        cpus: vec![],
    };
    let s = wl_oltp::server::Server::throwaway(&settings).unwrap();
    let mut admin = wl_oltp::server::connect(&s.config("postgres")).unwrap();
    // One statement each: CREATE DATABASE refuses the implicit transaction of several.
    let role = format!(
        "CREATE ROLE bench LOGIN CREATEDB PASSWORD '{}'",
        PASSWORD.replace('\'', "''")
    );
    for sql in [
        "SET password_encryption = 'scram-sha-256'",
        &role,
        "CREATE DATABASE tpcc OWNER bench",
    ] {
        admin.batch_execute(sql).unwrap();
    }
    std::fs::write(
        s.data.join("pg_hba.conf"),
        "local all postgres trust\nhost all all 127.0.0.1/32 scram-sha-256\n",
    )
    .unwrap();
    admin.batch_execute("SELECT pg_reload_conf()").unwrap();
    // The reload is asynchronous: wait until a password is asked for.
    let tcp = wl_oltp::server::parse_dsn(&format!(
        "host=127.0.0.1 port={} user=bench dbname=tpcc",
        s.port
    ))
    .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while wl_oltp::server::connect(&tcp).is_ok() {
        assert!(
            std::time::Instant::now() < deadline,
            "pg_hba.conf not reloaded"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    s
}

/// `rackbench ARGS...` with no password in the environment but `env`: PGPASSWORD unset
/// and PGPASSFILE pointing at `no_pgpass` unless `env` says otherwise.
fn rackbench(args: &[&str], env: &[(&str, &str)], no_pgpass: &Path) -> (i32, String, String) {
    let mut c = common::bin();
    // A store of the test's own: the runs below never touch the user's.
    c.env("RACKBENCH_DB", no_pgpass.with_file_name("results.sqlite"));
    c.env_remove("PGPASSWORD").env("PGPASSFILE", no_pgpass);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

fn assert_no_password(what: &str, text: &str) {
    for f in FRAGMENTS {
        if let Some(at) = text.find(f) {
            // Where it is, not the whole text (which is long enough to be cut off).
            let from = text[..at]
                .char_indices()
                .rev()
                .nth(400)
                .map_or(0, |(i, _)| i);
            let to = text[at..]
                .char_indices()
                .nth(400)
                .map_or(text.len(), |(i, _)| at + i);
            panic!(
                "{what} holds {f:?} at byte {at}:\n...{}...",
                &text[from..to]
            );
        }
    }
}

/// Every byte as percent-encoded in a URI, except letters and digits.
fn percent_encoded(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// A server that wants a password is used with PGPASSWORD or a password file and none
/// on the command line; a password given in unusual legal spellings works and is found
/// nowhere afterwards: not in what was printed, the store's bytes, an export (JSON,
/// CSV) or a report.
#[test]
fn a_password_protected_server_and_a_password_found_nowhere() {
    if !have_postgres() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let no_pgpass = tmp.path().join("no-pgpass");
    let mut server = password_server();
    let port = server.port.to_string();
    let plain = format!("host=127.0.0.1 port={port} user=bench dbname=tpcc");

    // No password anywhere: refused.
    let (code, out, err) = rackbench(&["oltp", "check", "--dsn", &plain], &[], &no_pgpass);
    assert_ne!(code, 0, "{out}{err}");
    assert!(
        err.contains("asks user bench for a password and none was given"),
        "{err}"
    );
    // Errors say the true cause: a wrong password, a missing database, a refused
    // connection (not "the database must exist" for all three).
    let wrong = [("PGPASSWORD", "not-the-password")];
    let (code, _, err) = rackbench(&["oltp", "check", "--dsn", &plain], &wrong, &no_pgpass);
    assert_ne!(code, 0);
    assert!(
        err.contains("the password for user bench was refused"),
        "{err}"
    );
    let right = [("PGPASSWORD", PASSWORD)];
    let nosuch = format!("host=127.0.0.1 port={port} user=bench dbname=nosuch");
    let (code, _, err) = rackbench(
        &["run", "oltp", "--dsn", &nosuch, "--duration", "1"],
        &right,
        &no_pgpass,
    );
    assert_ne!(code, 0);
    assert!(
        err.contains("nosuch") && err.contains("does not exist: CREATE DATABASE"),
        "{err}"
    );
    let closed = "host=127.0.0.1 port=1 user=bench dbname=tpcc";
    let (code, _, err) = rackbench(&["oltp", "check", "--dsn", closed], &right, &no_pgpass);
    assert_ne!(code, 0);
    assert!(err.contains("nothing accepts connections there"), "{err}");
    assert!(!err.contains("must exist"), "{err}");
    // Where, as the user wrote it (it read `hosts [Tcp("127.0.0.1")], port [1]`).
    assert!(
        err.contains("(database tpcc, host 127.0.0.1, port 1)"),
        "{err}"
    );

    // PGPASSWORD alone: the build is made.
    let (code, out, err) = rackbench(
        &["-q", "oltp", "build", "--dsn", &plain, "--warehouses", "1"],
        &[("PGPASSWORD", PASSWORD)],
        &no_pgpass,
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_no_password("oltp build's output", &format!("{out}{err}"));

    // A password file (PGPASSFILE, mode 0600, `:` and `\` escaped) alone.
    let pgpass = tmp.path().join("pgpass");
    let escaped = PASSWORD.replace('\\', "\\\\").replace(':', "\\:");
    std::fs::write(
        &pgpass,
        format!("# rackbench test\nother:*:*:*:wrong\n127.0.0.1:{port}:tpcc:bench:{escaped}\n"),
    )
    .unwrap();
    let mode = |m: u32| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(m)).unwrap();
    };
    mode(0o600);
    let pgpass_env = [("PGPASSFILE", pgpass.to_str().unwrap())];
    let (code, out, err) = rackbench(&["oltp", "check", "--dsn", &plain], &pgpass_env, &no_pgpass);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("consistency ok") || out.contains("ok"),
        "{out}"
    );
    // As libpq: a file the group may read is ignored, with a warning.
    mode(0o640);
    let (code, _, err) = rackbench(&["oltp", "check", "--dsn", &plain], &pgpass_env, &no_pgpass);
    assert_ne!(code, 0, "{err}");
    assert!(err.contains("group or world access"), "{err}");
    mode(0o600);

    // Runs: the password in two unusual legal spellings, then from the password file
    // alone (the load generators get it too).
    let store = tmp.path().join("r.sqlite");
    let keyword_value = format!(
        "host = 127.0.0.1 port = {port} user = bench password = '{}' dbname = tpcc",
        PASSWORD.replace('\\', "\\\\").replace('\'', "\\'")
    );
    let uri = format!(
        "postgresql://bench@127.0.0.1:{port}/tpcc?application_name=rb&pass%77ord={}",
        percent_encoded(PASSWORD)
    );
    let runs: [(&str, &[(&str, &str)]); 3] =
        [(&keyword_value, &[]), (&uri, &[]), (&plain, &pgpass_env)];
    let mut printed = String::new();
    for (dsn, env) in runs {
        let (code, out, err) = rackbench(
            &[
                "--db",
                store.to_str().unwrap(),
                "run",
                "oltp",
                "--dsn",
                dsn,
                "--warehouses",
                "1",
                "--vus",
                "1",
                "--duration",
                "1",
                "--rampup",
                "0",
                "--no-telemetry",
                "--json",
                "-q",
            ],
            env,
            &no_pgpass,
        );
        assert_eq!(code, 0, "{dsn}: {out}{err}");
        printed.push_str(&out);
        printed.push_str(&err);
    }
    assert_no_password("what the runs printed", &printed);
    // Stored readable, with the password masked.
    assert!(printed.contains("password = ***"), "{printed}");
    assert!(printed.contains("pass%77ord=***"), "{printed}");

    let db = store.to_str().unwrap();
    let (code, json, err) = rackbench(&["--db", db, "export", "--all"], &[], &no_pgpass);
    assert_eq!(code, 0, "{err}");
    assert!(json.contains("application_name=rb"), "{json}");
    assert_no_password("the JSON export", &json);
    let (code, csv, err) = rackbench(
        &["--db", db, "export", "--all", "--format", "csv"],
        &[],
        &no_pgpass,
    );
    assert_eq!(code, 0, "{err}");
    assert_no_password("the CSV export", &csv);
    let report = tmp.path().join("report.html");
    let ids: Vec<String> = store::export::from_json(&json)
        .unwrap()
        .iter()
        .map(|r| r.id.clone())
        .collect();
    let mut args = vec!["--db", db, "report", "-o", report.to_str().unwrap()];
    args.extend(ids.iter().map(String::as_str));
    let (code, out, err) = rackbench(&args, &[], &no_pgpass);
    assert_eq!(code, 0, "{out}{err}");
    assert_no_password("the report", &std::fs::read_to_string(&report).unwrap());

    // The store's bytes (with its journal files), not just what it gives back.
    for entry in std::fs::read_dir(tmp.path()).unwrap() {
        let path = entry.unwrap().path();
        if path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("r.sqlite")
        {
            let bytes = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            assert_no_password(&path.display().to_string(), &bytes);
        }
    }
    server.stop();
}

fn have_mariadb() -> bool {
    let ok = wl_oltp::mariadb_available();
    if !ok {
        eprintln!("skipped: MariaDB (mariadbd, mariadb-install-db) is not installed");
    }
    ok
}

/// `--engine mariadb` end to end: a launched mariadbd, a run that stores NOPM and TPM
/// side by side with latency per transaction type and passes the check; then a server
/// with a password, used with it in MYSQL_PWD and in a `mariadb://` URL: a wrong one is a
/// clear error that stores no run, and the right one is found nowhere afterwards (not
/// printed, not in the store's bytes, not in an export). No mariadbd is left running.
#[test]
fn mariadb_runs_and_its_password_is_kept_out_of_everything() {
    if !have_mariadb() {
        return;
    }
    let tmp = engine::scratch::tempdir("rackbench-cli-mariadb-").unwrap();
    let store = tmp.path().join("r.sqlite");
    let db = store.to_str().unwrap();
    let no_pgpass = tmp.path().join("no-pgpass");
    let (code, out, err) = rackbench(
        &[
            "--db",
            db,
            "run",
            "oltp",
            "--engine",
            "mariadb",
            "--warehouses",
            "1",
            "--vus",
            "2",
            "--duration",
            "3",
            "--rampup",
            "1",
            "--innodb-buffer-pool-size",
            "64M",
        ],
        &[],
        &no_pgpass,
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("MariaDB"), "{err}");
    let header = out.lines().find(|l| l.starts_with("STEP")).unwrap_or("");
    assert!(header.contains("NOPM") && header.contains("TPM"), "{out}");
    assert!(
        out.contains("latency per type:") && out.contains("AVG MS"),
        "{out}"
    );
    assert!(!out.contains("consistency"), "the check passes: {out}");

    // A server where `bench` needs a password.
    let mut s = wl_oltp::mariadb_server::Mariadbd::throwaway(&wl_oltp::mariadb_server::Settings {
        buffer_pool: "32M".into(),
        flush_log_at_trx_commit: 2,
        max_connections: 50,
        extra: vec![],
        cpus: vec![],
    })
    .unwrap();
    {
        use wl_oltp::backend::Backend;
        let mut admin = s.backend("mysql").connect().unwrap();
        let quoted = PASSWORD.replace('\\', "\\\\").replace('\'', "\\'");
        admin
            .batch(&format!(
                "CREATE USER 'bench'@'127.0.0.1' IDENTIFIED BY '{quoted}'"
            ))
            .unwrap();
        admin.batch("CREATE DATABASE tpcc").unwrap();
        admin
            .batch("GRANT ALL ON tpcc.* TO 'bench'@'127.0.0.1'")
            .unwrap();
    }
    let url = format!(
        "mysql://bench@127.0.0.1:{}/tpcc?prefer_socket=false",
        s.port
    );
    let args = |dsn: &str| -> Vec<String> {
        [
            "--db",
            db,
            "run",
            "oltp",
            "--dsn",
            dsn,
            "--warehouses",
            "1",
            "--vus",
            "2",
            "--duration",
            "2",
            "--rampup",
            "0.5",
        ]
        .iter()
        .map(|a| a.to_string())
        .collect()
    };
    let before =
        store::export::from_json(&rackbench(&["--db", db, "export", "--all"], &[], &no_pgpass).1)
            .unwrap();
    let runs_before = before.len();
    let results_before: usize = before.iter().map(|r| r.results.len()).sum();
    // The first run stored one ok result.
    assert_eq!(runs_before, 1);
    assert_eq!(results_before, 1);
    assert!(before[0].results[0].metric("nopm", &[]).is_some());
    let wrong = args(&url);
    let wrong: Vec<&str> = wrong.iter().map(String::as_str).collect();
    let (code, out, err) = rackbench(&wrong, &[("MYSQL_PWD", "not-the-password")], &no_pgpass);
    assert_ne!(code, 0, "{out}{err}");
    assert!(
        err.contains("the password for user bench was refused"),
        "{err}"
    );
    // Nothing at all is stored: no run, whatever its status, and no result.
    let (_, json, _) = rackbench(&["--db", db, "export", "--all"], &[], &no_pgpass);
    let stored = store::export::from_json(&json).unwrap();
    assert_eq!(stored.len(), runs_before, "a refused login stores no run");
    assert_eq!(
        stored.iter().map(|r| r.results.len()).sum::<usize>(),
        results_before,
        "a refused login stores no result"
    );

    let mut printed = String::new();
    let env_run = args(&url);
    let env_run: Vec<&str> = env_run.iter().map(String::as_str).collect();
    let (code, out, err) = rackbench(&env_run, &[("MYSQL_PWD", PASSWORD)], &no_pgpass);
    assert_eq!(code, 0, "{out}{err}");
    printed.push_str(&out);
    printed.push_str(&err);
    let in_url = format!(
        "mariadb://bench:{}@127.0.0.1:{}/tpcc?prefer_socket=false",
        percent_encoded(PASSWORD),
        s.port
    );
    let url_run = args(&in_url);
    let url_run: Vec<&str> = url_run.iter().map(String::as_str).collect();
    let (code, out, err) = rackbench(&url_run, &[], &no_pgpass);
    assert_eq!(code, 0, "{out}{err}");
    printed.push_str(&out);
    printed.push_str(&err);
    assert_no_password("what the runs printed", &printed);
    assert!(!printed.contains(&percent_encoded(PASSWORD)), "{printed}");

    let (code, json, err) = rackbench(&["--db", db, "export", "--all"], &[], &no_pgpass);
    assert_eq!(code, 0, "{err}");
    assert_no_password("the JSON export", &json);
    assert!(!json.contains(&percent_encoded(PASSWORD)), "{json}");
    assert!(json.contains("mariadb://bench:***@"), "{json}");
    for entry in std::fs::read_dir(tmp.path()).unwrap() {
        let path = entry.unwrap().path();
        if path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("r.sqlite")
        {
            let bytes = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            assert_no_password(&path.display().to_string(), &bytes);
            assert!(!bytes.contains(&percent_encoded(PASSWORD)));
        }
    }
    let pid = s.pid();
    s.stop();
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "mariadbd left running"
    );
}

/// Seed 001's chart: the read-mostly mix swept over virtual users on PostgreSQL and on
/// MariaDB, both lines in one chart of one report, each named by its engine.
#[test]
fn both_engines_swept_over_users_share_one_chart() {
    if !have_postgres() || !have_mariadb() {
        return;
    }
    let tmp = engine::scratch::tempdir("rackbench-cli-engines-").unwrap();
    let store = tmp.path().join("r.sqlite");
    let db = store.to_str().unwrap();
    let no_pgpass = tmp.path().join("no-pgpass");
    let mut ids = Vec::new();
    for engine in ["postgresql", "mariadb"] {
        let (code, out, err) = rackbench(
            &[
                "--db",
                db,
                "run",
                "oltp",
                "--engine",
                engine,
                "--mix",
                "read-mostly",
                "--warehouses",
                "1",
                "--vus",
                "1,2",
                "--duration",
                "1",
                "--rampup",
                "0",
                "--no-telemetry",
                "--json",
                "-q",
            ],
            &[],
            &no_pgpass,
        );
        assert_eq!(code, 0, "{engine}: {out}{err}");
        let run: serde_json::Value = serde_json::from_str(&out).unwrap();
        // The mix is stored by its name, and the run follows it: most transactions
        // are Order-Status and Stock-Level (their shares are stored too).
        let results = run["results"].as_array().unwrap();
        assert_eq!(results.len(), 2, "{engine}: one result per user count");
        for r in results {
            assert_eq!(
                r["params"]["mix"],
                serde_json::json!(["read-mostly"]),
                "{r}"
            );
            let share = |txn: &str| {
                r["metrics"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|m| m["name"] == "mix_pct" && m["labels"]["txn"] == txn)
                    .and_then(|m| m["value"].as_f64())
                    .unwrap_or(0.0)
            };
            let reads = share("order_status") + share("stock_level");
            assert!(reads > 70.0, "{engine}: read-only share {reads}%: {r}");
        }
        ids.push(run["id"].as_str().unwrap().to_string());
    }
    let report = tmp.path().join("engines.html");
    let (code, out, err) = rackbench(
        &[
            "--db",
            db,
            "report",
            &ids[0],
            &ids[1],
            "-o",
            report.to_str().unwrap(),
        ],
        &[],
        &no_pgpass,
    );
    assert_eq!(code, 0, "{out}{err}");
    let html = std::fs::read_to_string(&report).unwrap();
    let chart = html
        .find("transactions per second vs concurrent users, all runs")
        .expect("the chart of both engines");
    let rest = &html[chart..];
    assert!(
        rest.contains("PostgreSQL") && rest.contains("MariaDB"),
        "{rest}"
    );
}

/// The value of the metric `name` with exactly these labels in a stored result.
fn labelled(r: &model::ResultRecord, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    r.metrics
        .iter()
        .find(|m| {
            m.name == name
                && m.labels.len() == labels.len()
                && labels
                    .iter()
                    .all(|(k, v)| m.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|m| m.value)
}

/// The rows of the Markdown table whose header row holds `head`, as trimmed cells.
fn md_table(md: &str, head: &str) -> Vec<Vec<String>> {
    let lines: Vec<&str> = md.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with('|') && l.contains(head))
        .unwrap_or_else(|| panic!("no table headed {head:?} in:\n{md}"));
    lines[at..]
        .iter()
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            l.trim()
                .trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().replace("\\_", "_"))
                .collect()
        })
        .collect()
}

/// `--databases 2` on MariaDB, whose server counts commits for the whole server: the
/// table after the run shows each database's NOPM and a TPM the client counted (said
/// so), the stored per-database figures add up to the client's total, and the
/// report's per-database TPM is filled and marked client-counted. The report's p95 per
/// transaction type is the 0.95 quantile of the stored histogram, for this run and for
/// the same run stored without the p95 metric (as runs were before it existed).
#[test]
fn mariadb_two_databases_have_per_database_figures_and_the_report_a_true_p95() {
    if !have_mariadb() {
        return;
    }
    let tmp = engine::scratch::tempdir("rackbench-cli-mariadb2-").unwrap();
    let store = tmp.path().join("r.sqlite");
    let db = store.to_str().unwrap();
    let no_pgpass = tmp.path().join("no-pgpass");
    let (code, out, err) = rackbench(
        &[
            "--db",
            db,
            "run",
            "oltp",
            "--engine",
            "mariadb",
            "--databases",
            "2",
            "--warehouses",
            "1",
            "--vus",
            "2",
            "--duration",
            "3",
            "--rampup",
            "1",
            "--innodb-buffer-pool-size",
            "64M",
            "--no-telemetry",
        ],
        &[],
        &no_pgpass,
    );
    assert_eq!(code, 0, "{out}{err}");

    let (code, json, err) = rackbench(&["--db", db, "export", "--all"], &[], &no_pgpass);
    assert_eq!(code, 0, "{err}");
    let runs = store::export::from_json(&json).unwrap();
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(run.results.len(), 1);
    let r = &run.results[0];
    // The headline stays the server's, for both databases together.
    let tpm = labelled(r, "tpm", &[]).expect("the server-wide TPM");
    assert!(labelled(r, "tpm", &[("db", "1")]).is_none());
    let client: Vec<f64> = ["1", "2"]
        .iter()
        .map(|d| labelled(r, "tpm_client", &[("db", d)]).expect("a client-counted TPM per db"))
        .collect();
    assert!(client.iter().all(|&c| c > 0.0), "{client:?}");
    let unit = r
        .metrics
        .iter()
        .find(|m| m.name == "tpm_client" && !m.labels.is_empty())
        .map(|m| m.unit.clone())
        .unwrap();
    assert!(unit.contains("client-counted"), "{unit}");
    // Committed + rolled back per database add up to the client's total (no errors).
    let errors: f64 = r
        .metrics
        .iter()
        .filter(|m| m.name == "errors")
        .map(|m| m.value)
        .sum();
    assert_eq!(errors, 0.0);
    let total = labelled(r, "tpm_client", &[]).unwrap();
    assert!(
        (client[0] + client[1] - total).abs() < 1e-6 * total,
        "{client:?} vs {total}"
    );
    // And the server saw about as many (its Com_commit also counts the rest of the run).
    assert!(
        ((client[0] + client[1]) / tpm - 1.0).abs() < 0.5,
        "{client:?} vs the server's {tpm}"
    );

    // The table after the run: one row per database, NOPM and the client's TPM.
    let from = out.find("per database:").unwrap_or_else(|| panic!("{out}"));
    let rows: Vec<Vec<&str>> = out[from..]
        .lines()
        .skip(2)
        .take_while(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 2, "{out}");
    for (i, row) in rows.iter().enumerate() {
        let d = (i + 1).to_string();
        assert_eq!(row[1], d, "{out}");
        let nopm: f64 = row[2].parse().unwrap_or_else(|_| panic!("{out}"));
        let stored = labelled(r, "nopm", &[("db", &d)]).unwrap();
        assert!(nopm > 0.0 && (nopm - stored).abs() <= 1.0, "{out}");
        let shown: f64 = row[3].parse().unwrap_or_else(|_| panic!("{out}"));
        assert!((shown - client[i]).abs() <= 1.0, "{out}");
        assert_eq!(row.get(4), Some(&"(client)"), "{out}");
    }
    assert!(out.contains("(client): counted by the client"), "{out}");

    // The report.
    let md_path = tmp.path().join("report.md");
    let (code, o, e) = rackbench(
        &[
            "--db",
            db,
            "report",
            &run.id,
            "--format",
            "md",
            "-o",
            md_path.to_str().unwrap(),
        ],
        &[],
        &no_pgpass,
    );
    assert_eq!(code, 0, "{o}{e}");
    let md = std::fs::read_to_string(&md_path).unwrap();
    let per_db = md_table(&md, "| Database |");
    assert_eq!(per_db.len(), 4, "head, rule, two databases: {md}");
    for row in &per_db[2..] {
        assert!(row[3].ends_with("(client-counted)"), "{md}");
    }
    assert!(
        md.contains("the client's count of committed and rolled-back"),
        "{md}"
    );

    let p95_column = |md: &str| -> Vec<(String, String)> {
        let t = md_table(md, "| Transaction |");
        let col = t[0].iter().position(|c| c == "p95").expect("a p95 column");
        assert!(!t[0].iter().any(|c| c.contains("p90")), "{:?}", t[0]);
        t[2..]
            .iter()
            .map(|r| (r[1].clone(), r[col].clone()))
            .collect()
    };
    let want = |r: &model::ResultRecord, txn: &str| {
        let h = r
            .histograms
            .iter()
            .find(|h| h.name == txn && h.kind == "service")
            .unwrap()
            .histogram()
            .unwrap();
        report::fmt::latency_ns(h.value_at_quantile(0.95) as f64)
    };
    let shown = p95_column(&md);
    assert_eq!(shown.len(), 5, "{md}");
    for (txn, p95) in &shown {
        assert_eq!(*p95, want(r, txn), "{txn}: {md}");
        // The stored metric is that quantile too.
        let metric = labelled(r, "latency_p95_ns", &[("txn", txn), ("kind", "service")]);
        assert_eq!(
            metric.map(report::fmt::latency_ns).as_deref(),
            Some(p95.as_str())
        );
    }
    // A run stored before the p95 metric existed: read from its histogram, never p90.
    let mut old = run.clone();
    for r in &mut old.results {
        r.metrics.retain(|m| m.name != "latency_p95_ns");
    }
    let old_md = report::markdown(std::slice::from_ref(&old), None);
    assert_eq!(p95_column(&old_md), shown);
}

/// The runs a store holds, from `rackbench runs --json` (none when the store was never
/// created).
fn stored_runs(db: &Path) -> Vec<serde_json::Value> {
    if !db.exists() {
        return Vec::new();
    }
    let (code, out, err) = run(&["--db", db.to_str().unwrap(), "--json", "runs"]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str::<Vec<serde_json::Value>>(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// A server program that cannot be found (`RACKBENCH_MARIADB_BINDIR`,
/// `RACKBENCH_PG_BINDIR` pointing at a directory that does not exist, which replaces the
/// search of PATH and the distribution's directories): `run oltp` on either engine is a
/// setup error (exit 2) naming the program and the package to install, and stores nothing.
#[test]
fn a_server_program_not_found_is_a_setup_error_that_stores_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let nowhere = tmp.path().join("no-such-bin");
    let nowhere = nowhere.to_str().unwrap();
    let cases: [(&[&str], &str, &[&str]); 3] = [
        (
            &["--engine", "mariadb"],
            "RACKBENCH_MARIADB_BINDIR",
            &["mariadb-install-db", "apt-get install mariadb-server"],
        ),
        // A launched server's own settings are fine, and do not hide the real error.
        (
            &["--engine", "mariadb", "--innodb-buffer-pool-size", "64M"],
            "RACKBENCH_MARIADB_BINDIR",
            &["mariadb-install-db", "apt-get install mariadb-server"],
        ),
        // PostgreSQL, the default engine.
        (
            &["--shared-buffers", "64MB"],
            "RACKBENCH_PG_BINDIR",
            &["initdb", "apt-get install postgresql"],
        ),
    ];
    for (i, (args, var, wants)) in cases.iter().enumerate() {
        let db = tmp.path().join(format!("r{i}.sqlite"));
        let out = common::bin()
            .env(var, nowhere)
            .args(["--db", db.to_str().unwrap(), "run", "oltp"])
            .args(*args)
            .args(["--warehouses", "1", "--duration", "1", "--rampup", "0"])
            .args(["--no-telemetry", "-q"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        for want in *wants {
            assert!(err.contains(want), "{args:?}: no {want:?} in {err}");
        }
        assert!(
            err.contains(var) && err.contains(nowhere),
            "{args:?}: {err}"
        );
        assert!(
            stored_runs(&db).is_empty(),
            "{args:?}: a run was stored: {:?}",
            stored_runs(&db)
        );
    }
}

/// A launched server's setting given where it would be silently ignored, one engine's
/// on the other or any with `--dsn` (a server rackbench does not launch): refused with
/// an error naming the flag and where it applies (exit 2), before anything is launched
/// or stored.
#[test]
fn a_setting_for_the_other_engine_or_an_unlaunched_server_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("r.sqlite");
    let my = "mysql://root@127.0.0.1:1/tpcc";
    let pg = "host=127.0.0.1 port=1 dbname=tpcc";
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["--engine", "mariadb", "--fsync", "off"],
            &["--fsync", "PostgreSQL", "MariaDB"],
        ),
        (
            &["--engine", "mariadb", "--shared-buffers", "64MB"],
            &[
                "--shared-buffers",
                "PostgreSQL",
                "--innodb-buffer-pool-size",
            ],
        ),
        (
            &["--engine", "mariadb", "--synchronous-commit", "off"],
            &["--synchronous-commit", "PostgreSQL"],
        ),
        (&["--dsn", my, "--fsync", "on"], &["--fsync", "PostgreSQL"]),
        (
            &["--innodb-buffer-pool-size", "64M"],
            &[
                "--innodb-buffer-pool-size",
                "--engine mariadb",
                "--shared-buffers",
            ],
        ),
        (
            &[
                "--engine",
                "postgresql",
                "--innodb-flush-log-at-trx-commit",
                "2",
            ],
            &["--innodb-flush-log-at-trx-commit", "--engine mariadb"],
        ),
        (
            &["--dsn", pg, "--innodb-buffer-pool-size", "64M"],
            &["--innodb-buffer-pool-size", "--engine mariadb"],
        ),
        (
            &["--dsn", my, "--innodb-buffer-pool-size", "64M"],
            &["--innodb-buffer-pool-size", "--dsn", "does not launch"],
        ),
        (
            &["--dsn", my, "--innodb-flush-log-at-trx-commit", "2"],
            &[
                "--innodb-flush-log-at-trx-commit",
                "--dsn",
                "does not launch",
            ],
        ),
        (
            &["--dsn", pg, "--shared-buffers", "64MB"],
            &["--shared-buffers", "--dsn", "does not launch"],
        ),
    ];
    for (args, names) in cases {
        let out = common::bin()
            .args(["--db", db.to_str().unwrap(), "run", "oltp"])
            .args(*args)
            .args(["--duration", "1", "--no-telemetry", "-q"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        for n in *names {
            assert!(err.contains(n), "{args:?} should name {n}: {err}");
        }
        // Refused for the setting, not for the server nobody listens at.
        assert!(!err.contains("accepts connections"), "{args:?}: {err}");
    }
    assert!(stored_runs(&db).is_empty());
}

/// The consistency check fails on MariaDB too: a build and a run on a kept server pass
/// it; after a district's next order number is moved, `oltp check` fails (exit 1) and
/// names the broken condition (2: D_NEXT_O_ID - 1 = max(O_ID)).
#[test]
fn a_corrupted_mariadb_table_fails_the_check() {
    if !have_mariadb() {
        return;
    }
    let tmp = engine::scratch::tempdir("rackbench-cli-mariadb-check-").unwrap();
    let store = tmp.path().join("r.sqlite");
    let mut s = wl_oltp::mariadb_server::Mariadbd::throwaway(&wl_oltp::mariadb_server::Settings {
        buffer_pool: "64M".into(),
        flush_log_at_trx_commit: 2,
        max_connections: 50,
        extra: vec![],
        cpus: vec![],
    })
    .unwrap();
    {
        use wl_oltp::backend::Backend;
        let mut admin = s.backend("mysql").connect().unwrap();
        admin.batch("CREATE DATABASE tpcc").unwrap();
        // A user of its own over TCP: the launched server's root logs in on its socket.
        admin
            .batch("CREATE USER 'bench'@'127.0.0.1' IDENTIFIED BY 'benchpw'")
            .unwrap();
        admin
            .batch("GRANT ALL PRIVILEGES ON *.* TO 'bench'@'127.0.0.1'")
            .unwrap();
    }
    let dsn = format!(
        "mysql://bench:benchpw@127.0.0.1:{}/tpcc?prefer_socket=false",
        s.port
    );
    let (code, out, err) = run(&["-q", "oltp", "build", "--dsn", &dsn, "--warehouses", "1"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("consistency ok"), "{out}");
    let (code, out, err) = run(&[
        "--db",
        store.to_str().unwrap(),
        "run",
        "oltp",
        "--dsn",
        &dsn,
        "--warehouses",
        "1",
        "--vus",
        "2",
        "--duration",
        "2",
        "--rampup",
        "0",
        "--no-telemetry",
        "-q",
    ]);
    assert_eq!(code, 0, "the run passes the check: {out}{err}");
    let (code, out, err) = run(&["--json", "oltp", "check", "--dsn", &dsn]);
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["ok"], true, "{v}");

    {
        use wl_oltp::backend::Backend;
        let mut c = s.backend("tpcc").connect().unwrap();
        c.batch("UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = 1 AND d_id = 4")
            .unwrap();
    }
    let (code, out, err) = run(&["oltp", "check", "--dsn", &dsn]);
    assert_eq!(code, 1, "a failed check exits 1: {out}{err}");
    let failed: Vec<&str> = out.lines().filter(|l| l.contains("FAIL")).collect();
    assert_eq!(failed.len(), 1, "only the broken condition fails: {out}");
    assert!(
        failed[0].contains("D_NEXT_O_ID - 1 = max(O_ID)") && failed[0].contains("(1 rows)"),
        "{out}"
    );
    s.stop();
}

/// A TPC-C run killed (kill -9) keeps what it measured up to its last checkpoint, as
/// kv's and http's load tests do: stored `interrupted`, marked `partial` with the
/// checkpoint it is of, the clients' NOPM and TPM and the latency over the checkpoint's
/// window, and what comes only at the end (the server's counters behind NOPM and TPM,
/// the spec's ratios each generator counts) missing with why, never 0. A run that
/// finishes replaces its checkpoint (acceptance G6).
#[test]
fn sigkill_in_a_tpcc_run_keeps_its_last_checkpoint() {
    use std::time::Duration;
    if !have_postgres() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (data, store) = one_warehouse_build(tmp.path());
    let d = data.to_str().unwrap();
    let args = |secs: &'static str| {
        [
            "--db",
            store.to_str().unwrap(),
            "run",
            "oltp",
            "--cluster-dir",
            d,
            "--warehouses",
            "1",
            "--vus",
            "2",
            "--duration",
            secs,
            "--rampup",
            "1",
            "-q",
        ]
        .map(String::from)
    };
    let child = common::bin()
        .args(args("30"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let run_ = common::kill9_once_measured(child, &store, 10.0, Duration::from_secs(60));
    let (r, window) = common::checkpointed_result(&run_, "tpcc", 30.0);
    assert_eq!(r["headline"], "nopm", "{r}");
    // The headline is the clients' own count over the window (the server's counters are
    // read at the end): a killed run keeps a figure, said as the clients'.
    for (name, client) in [("nopm", "nopm_client"), ("tpm", "tpm_client")] {
        let v = common::stored_metric(r, name).expect(name);
        assert!(
            v > 0.0 && Some(v) == common::stored_metric(r, client),
            "{r}"
        );
    }
    for name in [
        "nopm_server",
        "tpm_server",
        "new_order_rollback_pct",
        "payment_by_last_name_pct",
    ] {
        assert!(
            common::stored_metric(r, name).is_none()
                && common::missing_saying(r, name, "checkpoint"),
            "{name}: {r}"
        );
    }
    let sent: f64 = r["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["name"] == "transactions" && m["labels"]["txn"].is_string())
        .filter_map(|m| m["value"].as_f64())
        .sum();
    assert!(sent > 0.0, "{r}");
    let tpm = common::stored_metric(r, "tpm_client").unwrap();
    let over_window = sent / (window / 60.0);
    assert!(
        (tpm - over_window).abs() <= 1e-6 * tpm,
        "{tpm} is not {sent} transactions over {window} s"
    );
    assert!(
        common::stored_metric(r, "nopm_client").unwrap() > 0.0,
        "{r}"
    );
    assert!(!r["histograms"].as_array().unwrap().is_empty(), "{r}");
    // This host's samples up to the checkpoint, kept with it.
    assert!(r["telemetry"].as_array().unwrap().len() >= 5, "{r}");

    // The postmaster the killed run launched is killed after it by its reaper: gone,
    // before the build is started again.
    let pid_file = data.join("postmaster.pid");
    let started = std::time::Instant::now();
    while std::fs::read_to_string(&pid_file).is_ok_and(|t| {
        let pid = t.lines().next().unwrap_or("").trim().to_string();
        !pid.is_empty() && std::path::Path::new(&format!("/proc/{pid}")).exists()
    }) && started.elapsed() < Duration::from_secs(30)
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    // Run to its end, the test's final result replaces its checkpoint.
    let (code, out, err) = run(
        &[&args("6")[..], &["--no-telemetry".into(), "--json".into()]]
            .concat()
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    if err.contains("being written") {
        eprintln!("skipped the finished run: {err}");
        return;
    }
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let r = &v["results"][0];
    common::assert_finished(r);
    assert!(common::stored_metric(r, "nopm").unwrap() > 0.0, "{r}");
}
