//! Negative, zero and impossible knobs, in every workload: a clear error naming the knob
//! (exit 2), before anything is launched or stored.

mod common;

/// A plan that chooses a workload it has no table for, beside a table of another, says
/// that the chosen one runs with its defaults and the other does not run (it ran every
/// RSA size without a word of the [kv] table). Here a conflict of flags then stops it.
#[test]
fn a_plans_tables_left_out_by_its_workload_are_said() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let plan = dir.path().join("p.toml");
    let run = |text: &str| {
        std::fs::write(&plan, text).unwrap();
        let out = common::bin()
            .args(["--db", db.to_str().unwrap(), "run", "--plan"])
            .arg(&plan)
            .args(["-q", "--no-telemetry", "--telemetry-interval", "1"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = run("[run]\nworkload = \"crypto\"\n[kv]\nclients = 1\n");
    assert!(
        err.contains(
            "no [crypto] table: crypto runs with its defaults, and the plan's [kv] does not run"
        ),
        "{err}"
    );
    // Chosen with its table: nothing to say.
    let err = run("[run]\nworkload = \"kv\"\n[kv]\nclients = 1\n[mem]\n");
    assert!(!err.contains("does not run"), "{err}");
}

/// A plan's hosts refused by a rule that names the flags says it read them from the
/// plan's [hosts] table, whose keys those flags are without their `--`; the same hosts
/// given as flags are refused without it.
#[test]
fn a_plans_hosts_refused_are_said_to_be_the_plans() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let plan = dir.path().join("p.toml");
    for (hosts, key, says) in [
        (
            "hosts = \"a,b\"",
            "hosts",
            "--hosts and --pairs make sender/receiver pairs for `net`",
        ),
        ("loadgen = \"a, a\"", "loadgen", "--loadgen"),
    ] {
        let table = format!(
            "the plan's [hosts] table gave {key} (its keys are the flags' names without `--`)"
        );
        std::fs::write(
            &plan,
            format!("[run]\nworkload = \"kv\"\n[hosts]\n{hosts}\n"),
        )
        .unwrap();
        let out = common::bin()
            .args(["--db", db.to_str().unwrap(), "run", "--plan"])
            .arg(&plan)
            .args(["-q", "--no-telemetry"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{hosts}: {err}");
        assert!(err.contains(&table) && err.contains(says), "{hosts}: {err}");
    }
    let out = common::bin()
        .args(["--db", db.to_str().unwrap(), "run", "kv", "--hosts", "a,b"])
        .args(["-q", "--no-telemetry"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("[hosts]"), "{err}");
    // A plan's sut beside a typed --hosts: the plan is named for its key only.
    std::fs::write(&plan, "[run]\nworkload = \"kv\"\n[hosts]\nsut = \"rbh1\"\n").unwrap();
    let out = common::bin()
        .args(["--db", db.to_str().unwrap(), "run", "--plan"])
        .arg(&plan)
        .args(["--hosts", "a,b", "-q", "--no-telemetry"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("the plan's [hosts] table gave sut (its keys"),
        "{err}"
    );
    assert!(!db.exists(), "a store was left at {}", db.display());
}

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
        (&["net", "--warmup", "-1"], "warmup"),
        // iperf3 -Z sends TCP by sendfile; UDP has nothing to take it.
        (
            &["net", "--tests", "udp", "--zerocopy"],
            "applies to the tcp test",
        ),
        (&["crypto", "--duration", "-1"], "duration"),
        (&["crypto", "--threads", "0"], "threads"),
        (&["mem", "--samples", "0"], "samples"),
        (&["kv", "--idle-power", "-1"], "idle-power"),
        (&["kv", "--repeat", "0"], "repeat"),
        // One meaning per flag: -t is the tests everywhere (wrk's -t is threads).
        (&["http", "-t", "4"], "use --threads 4"),
        (&["http", "-d", "10"], "use --duration 10"),
        (&["kv", "--latency-thresholds", "5"], "latency_thresholds"),
        // A run too big to mean: refused before it starts, saying what to do.
        (
            &["crypto", "--threads", "1..100", "--buffer-sizes", "1..100"],
            "--allow-long",
        ),
        (&["crypto", "--repeat", "4294967295"], "at most 1000"),
        // Acceptance pass D, 5: the secret masker read "-P requests" as ipmitool's password.
        (
            &["kv", "-k", "2"],
            "or 0 (reconnect after every pipeline's worth of requests, --pipeline)",
        ),
        (&["kv", "-t", "mix", "--ratio", "nan:1"], "finite"),
        (
            &["kv", "-t", "levels", "--capacity", "1000", "--levels", "0"],
            "load levels must be percentages",
        ),
        (
            &[
                "kv",
                "-t",
                "levels",
                "--capacity",
                "1000",
                "--levels",
                "50,50.0",
            ],
            "--levels names 50% twice: give each level once",
        ),
        (
            &["kv", "-t", "search", "--search-start", "0"],
            "search start",
        ),
        (&["kv", "-r", "0"], "keyspace (-r) must be at least 1 key"),
        (
            &["kv", "-r", "1000000000001"],
            "keyspace (-r) can be at most 1000000000000 keys",
        ),
        // Acceptance pass O, 4: one of the two stops was ignored, and stored.
        (
            &["kv", "--duration", "1", "-n", "1000"],
            "-n (requests) and --duration both given",
        ),
        (
            &["http", "--duration", "1", "-n", "1000"],
            "-n (requests) and --duration both given",
        ),
        // Acceptance pass E, 8 and 4: a capacity setting no test reads; a rate no
        // generator offers (it ran for tens of minutes, deaf to SIGTERM).
        (
            &["kv", "-t", "set", "--capacity", "1000"],
            "--capacity applies to the levels test",
        ),
        (
            &["kv", "-t", "mix", "--rate", "1e12"],
            "is above the 100 million/s any set of load generators can offer",
        ),
        (
            &["http", "-t", "levels", "--capacity", "99999999999"],
            "is above the 100 million/s",
        ),
        // Acceptance pass F, 3: the model filled the tests the meter had no reading in.
        (
            &[
                "crypto",
                "--power-model",
                "100:200",
                "--power-meter",
                "echo 150",
            ],
            "--power-model stands in for power where nothing measures it",
        ),
        (&["crypto", "--power-meter", " "], "--power-meter is empty"),
        (&["crypto", "--power-model", "0:0"], "MAX_W above 0"),
        // Every case runs with --no-telemetry, which turns power off: a meter, a model or
        // an idle window beside it was dropped in silence.
        (
            &["crypto", "--power-meter", "echo 150"],
            "--power-meter is read by the telemetry, and --no-telemetry turns it off",
        ),
        (
            &["crypto", "--power-model", "100:200"],
            "--power-model is read",
        ),
        (
            &["crypto", "--idle-power", "3"],
            "--idle-power (or the plan's idle_power) is read",
        ),
        // Acceptance pass E, 8: oltp's users keep their own schedule; `--wait sleep` was
        // stored as if it applied.
        (
            &["oltp", "-t", "ramp", "--wait", "sleep"],
            "leave --wait out",
        ),
        // Acceptance pass G, 10 and 13: an idle host listed as a load generator; a pair
        // named twice ran once without a word.
        (&["crypto", "--loadgen", "rbh2"], "leave --loadgen out"),
        (
            &["mem", "--loadgen", "rbh2"],
            "mem runs its work on the system under test",
        ),
        (
            &["net", "--pairs", "a>b,a>b"],
            "--pairs names a>b more than once",
        ),
        // Acceptance M, 5: flags that nothing asked reads ran, and were stored as if
        // they applied.
        (&["kv", "-t", "set,get", "--ratio", "1:1"], "add mix to -t"),
        (&["kv", "--arrival", "poisson"], "leave --arrival out"),
        (&["kv", "-t", "get", "--wait", "sleep"], "leave --wait out"),
        (&["http", "--arrival", "poisson"], "wrk2 -R is --rate"),
        (&["http", "--wait", "spin"], "leave --wait out"),
        (&["oltp", "--arrival", "poisson"], "leave --arrival out"),
        (
            &["net", "--tests", "tcp", "--udp-payload", "60"],
            "leave --udp-payload out",
        ),
        (
            &["net", "--tests", "udp1472", "--udp-payload", "60"],
            "add udp to --tests",
        ),
        (
            &["crypto", "--tests", "rsa2048", "--buffer-sizes", "64"],
            "leave --buffer-sizes out",
        ),
        (
            &["crypto", "--tests", "sha256", "--bits", "4096"],
            "leave --bits out",
        ),
        (
            &["mem", "--tests", "latency", "--bw-size", "64M"],
            "--bw-size is a setting of the bandwidth test",
        ),
        (
            &["mem", "--tests", "bandwidth", "--sizes", "4K,1M"],
            "--sizes is a setting of the latency test",
        ),
        (&["crypto", "--max-repeat", "5"], "give --until-cv too"),
        // Acceptance M, 11: a value left out of a list ran the others without a word.
        (&["kv", "-c", "1,,2"], "has an empty item"),
        // `-c 2,2` was two points of one setting, summarised as two repetitions of it.
        (&["kv", "-c", "2,1..2"], "clients lists 2 twice"),
        // ... and `--duration 1,1.0` too.
        (
            &["crypto", "--duration", "1,1.0"],
            "duration lists 1.0 twice",
        ),
        (
            &["oltp", "--load-threads", "0"],
            "--load-threads must be at least 1",
        ),
        (
            &["oltp", "--rampup", "1e20"],
            "--rampup must be between 0 and 604800",
        ),
        (
            &["--label", "x", "crypto"],
            "the workload's name comes first, right after `run`: `rackbench run crypto",
        ),
        (
            &["mem", "--sizes", "4K", "--max-size", "8M"],
            "--sizes names every size measured: leave out --max-size",
        ),
        (
            &["http", "--latency-thresholds", "1ms,1000us"],
            "gives 1ms and 1000us",
        ),
        (
            &["oltp", "--latency-thresholds", "5ms,5ms"],
            "gives 5ms and 5ms",
        ),
        (
            &["crypto", "--telemetry-interval", "0.5"],
            "--telemetry-interval sets how often",
        ),
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
    assert!(!db.exists(), "a store was left at {}", db.display());
    // One meter for the hosts of a matrix, each a receiver in turn: refused before any
    // host is reached (each stored that machine's watts as its own).
    let (code, _, err) = common::run(&[
        "--db",
        db.to_str().unwrap(),
        "run",
        "net",
        "-q",
        "--hosts",
        "rbh-absent-1,rbh-absent-2",
        "--power-meter",
        "echo 100",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(
            "--power-meter reads one machine's watts, and 2 hosts take load in this run \
             (rbh-absent-1, rbh-absent-2)"
        ),
        "{err}"
    );
    assert!(!db.exists(), "a store was left at {}", db.display());
    // Acceptance M, 11: a bad request is refused before nginx is launched for it.
    let out = common::bin()
        .args(["--db", db.to_str().unwrap(), "run", "http", "--path", "foo"])
        .args(["--no-telemetry", "--duration", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("path `foo` must start with `/`"), "{err}");
    assert!(!err.contains("launching"), "{err}");
    assert!(!db.exists(), "a store was left at {}", db.display());
}

/// Settings of a server rackbench launches, beside `--target` (a server it does not
/// launch): refused naming the setting and what to do, exit 2, nothing stored (they were
/// ignored and stored with the result: `--instances 2` read instances=2).
#[test]
fn launch_settings_beside_a_target_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let kv = ["kv", "--target", "127.0.0.1:1", "-c", "10"];
    let http = ["http", "--target", "http://127.0.0.1:1/"];
    let net = ["net", "--target", "127.0.0.1:1"];
    let cases: &[(&[&str], &[&str], &str)] = &[
        (&kv, &["--instances", "2"], "--instances"),
        (&kv, &["--server-cpus", "1"], "--server-cpus"),
        (
            &kv,
            &["--redis-server", "/usr/bin/redis-server"],
            "--redis-server",
        ),
        (&http, &["--server-workers", "2"], "--server-workers"),
        (&http, &["--server-cpus", "0"], "--server-cpus"),
        (&http, &["--file-size", "10"], "--file-size"),
        (&http, &["--nginx", "/usr/sbin/nginx"], "--nginx"),
        (&net, &["--receiver-bin", "/bin/true"], "--receiver-bin"),
    ];
    for (args, extra, flag) in cases {
        let out = common::bin()
            .args(["--db", db.to_str().unwrap(), "run"])
            .args(*args)
            .args(*extra)
            .args(["-q", "--no-telemetry"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?} {extra:?}: {err}");
        assert!(
            err.contains(&format!("{flag} sets up"))
                && err.contains(&format!("leave {flag} out"))
                && err.contains("leave out --target"),
            "{args:?} {extra:?}: {err}"
        );
    }
    assert!(!db.exists(), "a store was left at {}", db.display());
}

/// A CPU list past this machine's CPUs, in every workload that takes one: refused once the
/// hosts are reached, before any server is launched or anything stored, naming the
/// option, the host and its CPUs (exit 2). `--client-cpus 999` was found by the test
/// itself and stored as a failed result, crypto's `--cpus 999` and mem's `--cpu 999`
/// too, and a receiver left `--receiver-cpus 999` unpinned without a word.
#[test]
fn a_cpu_list_past_this_machines_cpus_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let cases: &[(&[&str], &str)] = &[
        (&["kv", "--duration", "1", "-t", "set"], "--client-cpus"),
        (&["kv", "--duration", "1", "-t", "set"], "--server-cpus"),
        (&["http", "--duration", "1"], "--client-cpus"),
        (&["http", "--duration", "1"], "--server-cpus"),
        (&["oltp", "--duration", "1"], "--client-cpus"),
        (
            &["net", "--duration", "1", "--tests", "tcp"],
            "--sender-cpus",
        ),
        (
            &["net", "--duration", "1", "--tests", "tcp"],
            "--receiver-cpus",
        ),
        (&["crypto", "--duration", "0.2", "-t", "sha256"], "--cpus"),
        (&["mem", "--tests", "latency", "--samples", "1"], "--cpu"),
    ];
    for (args, flag) in cases {
        let out = common::bin()
            .args(["--db", db.to_str().unwrap(), "run"])
            .args(*args)
            .args([flag, "999"])
            .args(["-q", "--no-telemetry"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?} {flag}: {err}");
        assert!(
            err.contains(&format!("{flag} 999: CPU 999 is not available on the"))
                && err.contains("local (this machine), which has")
                && err.contains(&format!("or leave {flag} out")),
            "{args:?} {flag}: {err}"
        );
    }
    assert!(!db.exists(), "a store was left at {}", db.display());
}

/// A sweep point whose load cannot be spread over the load generators is refused when the
/// plan is built, naming the point and the value to give, before any host is connected
/// or server launched (the hosts here do not exist) and with nothing stored: it was found
/// when its turn came, after redis was launched, and stopped the sweep there.
#[test]
fn a_sweep_point_too_small_for_the_generators_is_refused_before_any_host() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let hosts = ["--sut", "nohost-a", "--loadgen", "nohost-b,nohost-c"];
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["kv", "-c", "10,1", "-t", "set"],
            &["kv clients=1", "1 connection(s)", "-c 2"],
        ),
        (
            &["kv", "-c", "10", "-n", "1", "-t", "set"],
            &["1 request(s)", "-n 2"],
        ),
        (
            &["http", "-c", "4,1", "--duration", "1"],
            &["http connections=1", "-c 2"],
        ),
        (&["oltp", "--vus", "1"], &["--vus 2"]),
    ];
    for (args, names) in cases {
        let out = common::bin()
            .args(["--db", db.to_str().unwrap(), "run"])
            .args(*args)
            .args(hosts)
            .args(["-q", "--no-telemetry"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        for name in *names {
            assert!(err.contains(name), "{args:?} should say {name}: {err}");
        }
        assert!(
            !err.contains("nohost"),
            "{args:?}: a host was reached: {err}"
        );
    }
    assert!(!db.exists(), "a store was left at {}", db.display());
}

/// A load generator on this machine whose connections pass its open-file limit (the hard
/// one: the soft is raised to it) is refused when the plan is built, naming how to raise
/// it: before a server is launched or a store made. oltp's generator refused it only
/// after the database was built and the server up.
#[test]
fn connections_past_the_open_file_limit_are_refused_before_any_server() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    for (args, says) in [
        ("kv -c 5000 -t set", "kv: 5000 connections"),
        ("http -c 3000 --duration 1", "http: 3000 connections"),
        // Its users' connections and the monitor's.
        ("oltp --vus 3000", "oltp: 3001 connections"),
    ] {
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!(
                "ulimit -Sn 1024 && ulimit -Hn 2048 && exec \"$0\" --db \"$1\" run {args} -q"
            ))
            .arg(env!("CARGO_BIN_EXE_rackbench"))
            .arg(&db)
            .env_remove("RACKBENCH_DB")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args}: {err}");
        assert!(
            err.contains(says) && err.contains("hard limit 2048") && err.contains("ulimit -Hn"),
            "{args}: {err}"
        );
    }
    assert!(!db.exists(), "a store was left at {}", db.display());
}

/// A test named twice ran twice and was summarised as two repetitions (`n=2/2`,
/// high_variation): refused when the plan is built, naming the workload, nothing stored.
#[test]
fn a_test_named_twice_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    for args in [
        &["crypto", "-t", "rsa512,rsa512"][..],
        &["crypto", "-t", "rsa", "--bits", "512,512"],
        &["kv", "-t", "set,set"],
    ] {
        let out = common::bin()
            .args(["--db", db.to_str().unwrap(), "run"])
            .args(args)
            .args(["--duration", "0.2", "-q", "--no-telemetry"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!("{}:", args[0])) && err.contains("twice"),
            "{args:?}: {err}"
        );
    }
    assert!(!db.exists(), "a store was left at {}", db.display());
}

/// A server's program that is not there is refused when the plan is built, in a suite
/// too: `[run] workload = ["crypto", "kv"]` with a missing `--redis-server` ran crypto,
/// stored it, then failed the run at kv (exit 1). Now: exit 2, nothing run or stored.
#[test]
fn a_missing_server_program_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let plan = dir.path().join("suite.toml");
    std::fs::write(
        &plan,
        "[run]\nworkload = [\"crypto\", \"kv\"]\n[crypto]\nduration = 0.2\n\
         [kv]\nredis_server = \"/nonexistent/redis-server\"\n",
    )
    .unwrap();
    let suite = ["--plan", plan.to_str().unwrap()];
    let cases: [(&[&str], &str); 4] = [
        (
            &[
                "net",
                "--receiver-bin",
                "/nonexistent/rackbench",
                "--duration",
                "1",
            ],
            "net: --receiver-bin `/nonexistent/rackbench` is not an executable file",
        ),
        (
            &suite,
            "kv: --redis-server: `/nonexistent/redis-server` is not an executable file",
        ),
        (
            &["http", "--nginx", "/nonexistent/nginx", "--duration", "1"],
            "http: --nginx",
        ),
        (
            &["kv", "--redis-server", "no-such-redis-server"],
            "was not found on PATH",
        ),
    ];
    for (args, says) in cases {
        let out = common::bin()
            .args(["--db", db.to_str().unwrap(), "run"])
            .args(args)
            .args(["-q", "--no-telemetry"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?} should say {says}: {err}");
    }
    assert!(!db.exists(), "a store was left at {}", db.display());
}

/// A `--target` where nothing listens is bad input in every workload that takes one:
/// exit 2 before any test, saying what to start, and no store left (net stored a failed
/// run, exit 1, where kv and http refused).
#[test]
fn a_target_where_nothing_listens_is_refused_in_every_workload() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    // A port of this machine's that nothing listens on (bound, then closed).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let at = format!("127.0.0.1:{port}");
    let url = format!("http://{at}/");
    let cases: [(&[&str], &str); 3] = [
        (&["kv", "--target", &at], "is redis-server running there"),
        (&["http", "--target", &url], &at),
        (&["net", "--target", &at], "rackbench net serve --bind"),
    ];
    for (args, says) in cases {
        let out = common::bin()
            .args(["--db", db.to_str().unwrap(), "run"])
            .args(args)
            .args(["--duration", "1", "-q", "--no-telemetry"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?} should say {says}: {err}");
        assert!(
            !db.exists(),
            "{args:?}: a store was left at {}",
            db.display()
        );
    }
}

/// `--zerocopy` on a sender host without a usable temporary directory: refused before any
/// test (in prepare, after the store was opened), saying what to do; no store is left.
#[test]
fn zerocopy_without_a_temporary_directory_is_refused_before_any_test() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let out = common::bin()
        .env("TMPDIR", dir.path().join("missing"))
        .args(["--db", db.to_str().unwrap(), "run", "net", "--tests", "tcp"])
        .args(["--zerocopy", "--duration", "0.2", "-q", "--no-telemetry"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("set TMPDIR to a writable directory with room"),
        "{err}"
    );
    assert!(!db.exists(), "a store was left at {}", db.display());
}

/// A store in new directories says it made them, naming the outermost (a typo in --db
/// made a tree at / without a word, where `-o` refuses a missing directory); one in a
/// directory that was there says nothing of it.
#[test]
fn a_store_in_new_directories_says_it_made_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a/b/r.sqlite");
    let (code, out, err) = short_run(&db, &[]);
    assert_eq!(code, 0, "{err}");
    let made = format!(
        "(a new store: made the directory {})",
        dir.path().join("a").display()
    );
    assert!(out.contains(&made), "{out}");
    let (code, out, err) = short_run(&db, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("a new store"), "{out}");
}

/// A store in new directories, refused in prepare (after it was opened): neither the
/// store nor the directories made for it are left.
#[test]
fn a_refused_run_leaves_no_directory_it_made_for_its_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a/b/r.sqlite");
    let (code, _, err) = short_run(&db, &["--cpus", "4095"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("CPU 4095 is not available"), "{err}");
    assert!(!dir.path().join("a").exists(), "a directory was left");
}

/// Bad input exits 2, the documented status, whatever became of stderr: closed (`2>&-`)
/// or a pipe whose reader is gone. Printing the error must not panic (exit 101). Likewise
/// help on a stdout whose reader is gone exits 0.
#[test]
fn bad_input_exits_2_with_stderr_closed_or_broken() {
    use std::os::fd::{FromRawFd as _, OwnedFd};
    use std::os::unix::process::CommandExt as _;
    use std::process::Stdio;

    /// A pipe whose read end is already closed: every write fails with EPIPE.
    fn broken_pipe() -> Stdio {
        let mut fds = [0; 2];
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        drop(unsafe { OwnedFd::from_raw_fd(fds[0]) });
        Stdio::from(unsafe { OwnedFd::from_raw_fd(fds[1]) })
    }

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let db = db.to_str().unwrap();
    let bad: &[&[&str]] = &[
        &["--db", db, "run", "crypto", "--nosuch"],
        &[
            "--db",
            db,
            "run",
            "crypto",
            "--threads",
            "0",
            "--no-telemetry",
        ],
        &["--db", db, "show", "no-such-run"],
    ];
    for args in bad {
        let mut closed = common::bin();
        closed.args(*args).stdout(Stdio::null());
        unsafe {
            closed.pre_exec(|| {
                libc::close(2);
                Ok(())
            });
        }
        assert_eq!(closed.status().unwrap().code(), Some(2), "2>&- {args:?}");
        let broken = common::bin()
            .args(*args)
            .stdout(Stdio::null())
            .stderr(broken_pipe())
            .status()
            .unwrap();
        assert_eq!(broken.code(), Some(2), "broken stderr {args:?}");
    }
    for args in [
        &["run", "--help"][..],
        &["run", "crypto", "--help"],
        &["--help"],
    ] {
        let st = common::bin()
            .args(args)
            .stdout(broken_pipe())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert_eq!(st.code(), Some(0), "broken stdout {args:?}");
    }
}

/// An --ssh-config that is not there is bad input, said once, before any host is tried:
/// `hosts check` had reported it once per host, as that host's failure.
#[test]
fn a_missing_ssh_config_is_said_once_before_any_host() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-config");
    let out = common::bin()
        .args(["hosts", "check", "--ssh-config"])
        .arg(&missing)
        .args(["h1.invalid", "h2.invalid"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.matches("no such file").count(), 1, "{err}");
    assert!(
        err.contains("leave the option out"),
        "says what to do: {err}"
    );
    assert!(!err.contains("h1.invalid"), "no host was tried: {err}");
    assert!(out.stdout.is_empty(), "nothing printed as a result");
}

/// rackbench run as nobody, when this test runs as root and has setpriv; None (the
/// test skips, saying why) otherwise.
fn as_nobody() -> Option<std::process::Command> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || !common::have("setpriv", "util-linux") {
        eprintln!("skipped: needs root, to run the command as another user");
        return None;
    }
    let mut c = std::process::Command::new("setpriv");
    c.args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_rackbench"))
        .env_remove("RACKBENCH_DB");
    Some(c)
}

/// A results store in `dir` holding one short run.
fn store_of_one_run(dir: &std::path::Path) -> std::path::PathBuf {
    let db = dir.join("r.sqlite");
    let (code, _, err) = short_run(&db, &[]);
    assert_eq!(code, 0, "{err}");
    db
}

/// A 0.1 s crypto run into `db`, with `more` flags: (exit code, stdout, stderr).
fn short_run(db: &std::path::Path, more: &[&str]) -> (i32, String, String) {
    let mut args = vec![
        "--db",
        db.to_str().unwrap(),
        "run",
        "crypto",
        "-t",
        "sha256",
        "--duration",
        "0.1",
        "-q",
        "--no-telemetry",
    ];
    args.extend_from_slice(more);
    common::run(&args)
}

/// A report that cannot be written leaves none of its charts: they were renamed into
/// --svg-dir one by one before the report failed. Run as root (CI): the command runs as
/// nobody, who may write the charts' directory but not the report's.
#[test]
fn a_report_that_cannot_be_written_leaves_no_charts() {
    let Some(mut nobody) = as_nobody() else {
        return;
    };
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let db = store_of_one_run(dir.path());
    let closed = dir.path().join("closed");
    let open = dir.path().join("open");
    std::fs::create_dir(&closed).unwrap();
    std::fs::create_dir(&open).unwrap();
    for (d, mode) in [
        (dir.path(), 0o755),
        (closed.as_path(), 0o755),
        (open.as_path(), 0o777),
    ] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = nobody
        .args(["--db", db.to_str().unwrap(), "report", "latest", "-o"])
        .arg(closed.join("r.html"))
        .arg("--svg-dir")
        .arg(open.join("svg"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot write"), "{err}");
    let left: Vec<_> = std::fs::read_dir(open.join("svg"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "charts left: {left:?}");
}

/// A store this user cannot write (another's, with its -wal and -shm beside it) is said
/// as such, naming it and what to do, before anything runs: SQLite opened it read-only
/// without a word and the first write failed as "attempt to write a readonly database".
/// Run as root (CI): the command runs as nobody.
#[test]
fn a_store_this_user_cannot_write_is_named() {
    let Some(mut nobody) = as_nobody() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = store_of_one_run(dir.path());
    let export = dir.path().join("in.json");
    let (code, _, err) = common::run(&[
        "--db",
        db.to_str().unwrap(),
        "export",
        "latest",
        "--format",
        "json",
        "-o",
        export.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&export, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = nobody
        .args(["--db", db.to_str().unwrap(), "import"])
        .arg(&export)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "the results store {} cannot be written here",
            db.display()
        )) && err.contains("--db PATH"),
        "{err}"
    );
}

/// A label that could never name its run is refused before anything runs (` epyc ` was
/// stored and `show "epyc "` found nothing: lookups trim), and `runs -n 0` on a store
/// holding runs is refused rather than said to be empty.
#[test]
fn a_label_no_lookup_finds_and_runs_n_0_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    for (label, says) in [
        (" epyc ", "starts or ends with a space"),
        ("", "--label is empty"),
        ("latest", "`latest` is always the newest run"),
    ] {
        let (code, _, err) = short_run(&db, &["--label", label]);
        assert_eq!(code, 2, "{label:?}: {err}");
        assert!(err.contains(says), "{label:?}: {err}");
        assert!(!db.exists(), "{label:?}: a store was left");
    }
    // A plan's label is named as the plan's, not as a flag the user never typed.
    let plan = dir.path().join("p.toml");
    std::fs::write(&plan, "[run]\nlabel = \"latest\"\n").unwrap();
    let (code, _, err) = short_run(&db, &["--plan", plan.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("the plan's [run] label `latest` would not name"),
        "{err}"
    );
    let db = store_of_one_run(dir.path());
    let (code, _, err) = common::run(&["--db", db.to_str().unwrap(), "runs", "-n", "0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("give -n 1 or more"), "{err}");
    assert!(!err.contains("no runs in"), "{err}");
}
