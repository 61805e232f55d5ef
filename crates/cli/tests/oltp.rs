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

fn corrupt(data: &Path) {
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
    c.batch_execute("UPDATE district SET d_ytd = d_ytd + 5 WHERE d_w_id = 1 AND d_id = 4")
        .unwrap();
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
            "--search-start",
            "50",
            "--search-steps",
            "4",
            "--step-duration",
            "1",
            "--levels",
            "100,50",
            "--idle-duration",
            "0.5",
            "--power-model",
            "50:150",
            "--json",
            "-q",
        ]);
        assert_eq!(code, 0, "{out}{err}");
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
