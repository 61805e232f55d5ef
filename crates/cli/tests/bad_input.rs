//! Negative, zero and impossible knobs, in every workload: a clear error naming the knob
//! (exit 2), before anything is launched or stored.

mod common;

#[test]
fn negative_or_zero_knobs_are_clear_errors_in_every_workload() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let cases: &[(&[&str], &str)] = &[
        (&["kv", "--duration", "-1"], "duration"),
        (&["kv", "--duration", "0"], "duration"),
        (&["kv", "--warmup", "-1"], "warmup"),
        (&["kv", "--rate", "-5"], "rate"),
        (&["kv", "-c", "0"], "clients"),
        (&["kv", "--ramp-low", "-1", "-t", "ramp"], "ramp low"),
        (&["http", "--duration", "-1"], "duration"),
        (&["http", "--warmup", "-1"], "warmup"),
        (&["http", "-c", "0"], "connections"),
        (&["oltp", "--duration", "0"], "duration"),
        (&["net", "--duration", "-1"], "duration"),
        (&["crypto", "--duration", "-1"], "duration"),
        (&["crypto", "--threads", "0"], "threads"),
        (&["mem", "--samples", "0"], "samples"),
        (&["kv", "--idle-power", "-1"], "idle-power"),
        (&["kv", "--repeat", "0"], "repeat"),
        // One meaning per flag: -t is the tests everywhere (wrk's -t is threads).
        (&["http", "-t", "4"], "use --threads 4"),
        (&["http", "-d", "10"], "use --duration 10"),
        (&["kv", "--latency-thresholds", "5"], "latency_thresholds"),
    ];
    for (args, names) in cases {
        let out = common::bin()
            .args(["--db", db.to_str().unwrap(), "run"])
            .args(*args)
            .args(["-q", "--no-telemetry"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(names), "{args:?} should name {names}: {err}");
        assert!(!err.contains("unexpected argument"), "{args:?}: {err}");
        assert!(
            !err.contains("\\n"),
            "{args:?}: newlines shown escaped: {err}"
        );
    }
    assert!(
        !db.exists()
            || store::Store::open(&db)
                .unwrap()
                .list_runs()
                .unwrap()
                .is_empty()
    );
}
