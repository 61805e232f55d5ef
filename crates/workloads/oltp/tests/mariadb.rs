//! Against a real MariaDB server the tests launch (`mariadbd` in a scratch dir, as
//! `rackbench run oltp --engine mariadb` does): a run with its build, NOPM/TPM, latency
//! and a passing consistency check; two databases; a capacity ramp; and the failures a
//! user meets first (a bad DSN, a missing server binary, a wrong password), each a clear
//! error that names neither the password nor leaves a server behind. Skips (with a
//! message) when MariaDB is not installed.

use std::sync::{Arc, Mutex};

use rackbench_oltp as wl_oltp;

use engine::host::{Host, Roles};
use engine::workload::Registration;
use engine::{Ctx, Workload};
use hosts::LocalHost;
use serde_json::{json, Map, Value};
use wl_oltp::{Config, Oltp};

fn catalog(name: &str) -> Option<Registration> {
    (name == "oltp").then(wl_oltp::registration)
}

fn local() -> Ctx {
    Ctx {
        roles: Some(hosts::local_roles(catalog, "local", &["local"])),
        ..Ctx::quiet()
    }
}

fn cfg(map: Value) -> Config {
    let m: Map<String, Value> = serde_json::from_value(map).unwrap();
    Config::from_map(&m).unwrap()
}

/// MariaDB servers are big (a buffer pool each): one test at a time launches one.
static ONE_SERVER: Mutex<()> = Mutex::new(());

fn have_mariadb() -> bool {
    let ok = wl_oltp::mariadb_available();
    if !ok {
        eprintln!("skipping: mariadbd / mariadb-install-db not installed (apt-get install mariadb-server)");
    }
    ok
}

fn metric(out: &engine::StepOutput, n: &str) -> Option<f64> {
    out.metrics
        .iter()
        .find(|m| m.name == n && m.labels.is_empty())
        .map(|m| m.value)
}

/// What a launched server leaves: no mariadbd of ours running, no scratch dir.
fn nothing_left(pid: Option<u32>) {
    if let Some(pid) = pid {
        let alive = std::path::Path::new(&format!("/proc/{pid}")).exists();
        assert!(!alive, "mariadbd {pid} still running");
    }
}

#[test]
fn a_run_on_mariadb_measures_nopm_tpm_latency_and_passes_the_check() {
    if !have_mariadb() {
        return;
    }
    let _one = ONE_SERVER.lock().unwrap_or_else(|e| e.into_inner());
    let mut w = Oltp::new(cfg(json!({
        "engine": "mariadb", "warehouses": 1, "vus": 3, "duration": 4, "rampup": 1,
        "innodb_buffer_pool_size": "64M", "innodb_flush_log_at_trx_commit": 2,
        "server_cpus": "0"
    })))
    .unwrap();
    let ctx = local();
    w.prepare(&ctx).unwrap();
    let pid = w.server_pid();
    assert!(pid.is_some(), "a launched mariadbd");
    // Pinned to --server-cpus, as PostgreSQL is.
    let status = std::fs::read_to_string(format!("/proc/{}/status", pid.unwrap())).unwrap();
    let allowed = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(str::trim);
    assert_eq!(allowed, Some("0"), "{status}");
    assert!(
        w.endpoints()[0].starts_with("mysql://root@127.0.0.1:"),
        "{:?}",
        w.endpoints()
    );
    let out = w.run_test("tpcc", &ctx).unwrap();
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(out.headline, "nopm");
    let nopm = metric(&out, "nopm").expect("nopm");
    let tpm = metric(&out, "tpm").expect("tpm");
    assert!(nopm > 0.0 && tpm > nopm, "nopm {nopm} tpm {tpm}");
    // The server's Com_commit and the client's count agree.
    let tpm_client = metric(&out, "tpm_client").unwrap();
    assert!(
        (tpm / tpm_client - 1.0).abs() < 0.25,
        "tpm {tpm} client {tpm_client}"
    );
    let nopm_client = metric(&out, "nopm_client").unwrap();
    assert!(
        (nopm / nopm_client - 1.0).abs() < 0.25,
        "nopm {nopm} client {nopm_client}"
    );
    // The spec's 1% New-Order rollback comes back from the procedure as a rollback
    // (SQLSTATE RB001), not an error.
    let labelled = |name: &str, txn: &str| {
        out.metrics
            .iter()
            .find(|m| m.name == name && m.labels.get("txn").map(String::as_str) == Some(txn))
            .map(|m| m.value)
    };
    assert!(
        labelled("rollbacks", "new_order").unwrap_or(0.0) > 0.0,
        "{:?}",
        out.metrics
    );
    assert_eq!(labelled("errors", "new_order"), Some(0.0));
    for class in wl_oltp::txn::CLASSES {
        assert!(
            out.histograms
                .iter()
                .any(|h| h.name == class && h.kind == "service"),
            "no latency for {class}"
        );
    }
    let flags = w.verify(&ctx).unwrap();
    assert!(flags.is_empty(), "{flags:?}");
    let facts = w.disclosure();
    for k in [
        "software.mariadb",
        "server.config.innodb_buffer_pool_size",
        "server.config.innodb_flush_log_at_trx_commit",
        "server.config.log_bin",
        "server.config.sync_binlog",
        "server.config.tx_isolation",
    ] {
        assert!(facts.contains_key(k), "no fact {k}: {facts:?}");
    }
    w.cleanup();
    nothing_left(pid);
}

#[test]
fn two_databases_and_a_read_only_mix_lead_with_tpm() {
    if !have_mariadb() {
        return;
    }
    let _one = ONE_SERVER.lock().unwrap_or_else(|e| e.into_inner());
    let mut w = Oltp::new(cfg(json!({
        "engine": "mariadb", "warehouses": 1, "vus": 2, "databases": 2, "duration": 2,
        "rampup": 0.5, "mix": "0,0,50,0,50", "innodb_buffer_pool_size": "64M"
    })))
    .unwrap();
    let ctx = local();
    w.prepare(&ctx).unwrap();
    let out = w.run_test("tpcc", &ctx).unwrap();
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(
        out.headline, "tpm",
        "a mix without New-Order leads with TPM"
    );
    assert!(metric(&out, "tpm").unwrap() > 0.0);
    assert!(out.histograms.iter().any(|h| h.name == "stock_level@db2"));
    let flags = w.verify(&ctx).unwrap();
    assert!(flags.iter().all(|f| f.code != "consistency"), "{flags:?}");
    w.cleanup();
}

#[test]
fn a_capacity_ramp_runs_on_mariadb() {
    if !have_mariadb() {
        return;
    }
    let _one = ONE_SERVER.lock().unwrap_or_else(|e| e.into_inner());
    let m: Map<String, Value> = serde_json::from_value(json!({
        "engine": "mariadb", "warehouses": 1, "vus": 2, "tests": ["ramp"],
        "step_duration": 0.5, "ramp_low": 20, "ramp_high": 40, "ramp_step": 20,
        "innodb_buffer_pool_size": "64M"
    }))
    .unwrap();
    let mut w = Oltp::from_params(&m).unwrap_or_else(|e| panic!("{e:#}"));
    let ctx = local();
    w.prepare(&ctx).unwrap();
    let out = w.run_test("ramp", &ctx).unwrap();
    assert!(out.error.is_none(), "{:?}", out.error);
    let steps: Vec<f64> = out
        .metrics
        .iter()
        .filter(|m| m.name == "demanded_rate_per_s")
        .map(|m| m.value)
        .collect();
    assert_eq!(steps, vec![20.0, 40.0]);
    // The steps' latency is New-Order's, the transaction the objective is about.
    let p99: Vec<_> = out
        .metrics
        .iter()
        .filter(|m| m.name == "latency_p99_ns")
        .collect();
    assert!(!p99.is_empty(), "{:?}", out.metrics);
    assert!(
        p99.iter()
            .all(|m| m.labels.get("txn").map(String::as_str) == Some("new_order")),
        "{p99:?}"
    );
    w.cleanup();
}

/// A missing mariadbd is an error that says what to install; nothing is launched.
/// `RACKBENCH_MARIADB_BINDIR` (given here as its value, no environment changed under
/// the other tests' threads) replaces the search of PATH and /usr/sbin, so the real
/// name is not found even where MariaDB is installed.
#[test]
fn a_missing_server_binary_says_what_to_install() {
    let empty = engine::scratch::tempdir("rackbench-test-bindir-").unwrap();
    let nowhere = empty.path().join("no-such-dir");
    for name in ["mariadbd", "mariadb-install-db"] {
        let e = wl_oltp::mariadb_server::find_binary_in(name, Some(nowhere.as_os_str()))
            .expect_err("no such binary");
        let text = format!("{e:#}");
        assert!(text.contains(&format!("`{name}`")), "{text}");
        assert!(text.contains("apt-get install mariadb-server"), "{text}");
        assert!(text.contains("RACKBENCH_MARIADB_BINDIR"), "{text}");
        assert!(text.contains("--dsn"), "{text}");
    }
    // And a directory that holds it is used, whatever PATH says.
    if let Ok(real) = wl_oltp::mariadb_server::find_binary_in("mariadbd", None) {
        let dir = real.parent().unwrap();
        let found = wl_oltp::mariadb_server::find_binary_in(
            "mariadbd",
            Some(
                std::ffi::OsString::from(format!("{}:{}", nowhere.display(), dir.display()))
                    .as_os_str(),
            ),
        )
        .unwrap();
        assert_eq!(found, real);
    }
}

/// A DSN that is not a URL, one nothing listens at, and a wrong password: each a
/// clear error, the password in none of them.
#[test]
fn a_bad_dsn_or_a_wrong_password_is_a_clear_error_without_the_password() {
    // Not parseable: refused when the plan is read, before anything starts.
    let m: Map<String, Value> =
        serde_json::from_value(json!({"dsn": "mysql://bench:Zq9pw@db:notaport/tpcc"})).unwrap();
    let e = Oltp::from_params(&m).err().expect("a bad dsn");
    let text = format!("{e:#}");
    assert!(
        text.contains("bad --dsn") && !text.contains("Zq9"),
        "{text}"
    );
    // --engine and the scheme disagree.
    let m: Map<String, Value> = serde_json::from_value(
        json!({"engine": "postgresql", "dsn": "mysql://bench@127.0.0.1/tpcc"}),
    )
    .unwrap();
    let text = format!("{:#}", Config::from_map(&m).expect_err("conflict"));
    assert!(text.contains("--engine"), "{text}");

    // Nothing listens there.
    let port = engine::launch::free_port().unwrap();
    let mut w = Oltp::new(cfg(json!({
        "dsn": format!("mysql://bench:Zq9pw@127.0.0.1:{port}/tpcc"), "duration": 1
    })))
    .unwrap();
    let ctx = local();
    let e = w.prepare(&ctx).expect_err("nothing listens");
    let text = format!("{e:#}");
    assert!(text.contains("nothing accepts connections"), "{text}");
    assert!(!text.contains("Zq9"), "{text}");
    w.cleanup();
    assert!(!format!("{:?}", w.config().echo()).contains("Zq9"));

    // A wrong password, on a real server.
    if !have_mariadb() {
        return;
    }
    let _one = ONE_SERVER.lock().unwrap_or_else(|e| e.into_inner());
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
        admin
            .batch("CREATE USER 'bench'@'127.0.0.1' IDENTIFIED BY 'right-pw'")
            .unwrap();
        admin.batch("CREATE DATABASE tpcc").unwrap();
        admin
            .batch("GRANT ALL ON tpcc.* TO 'bench'@'127.0.0.1'")
            .unwrap();
    }
    let mut w = Oltp::new(cfg(json!({
        "dsn": format!("mariadb://bench:Zq9wrong@127.0.0.1:{}/tpcc?prefer_socket=false", s.port),
        "duration": 1
    })))
    .unwrap();
    let e = w.prepare(&ctx).expect_err("a wrong password");
    let text = format!("{e:#}");
    assert!(
        text.contains("password for user bench was refused"),
        "{text}"
    );
    assert!(!text.contains("Zq9"), "{text}");
    w.cleanup();
    // Nothing half-written: the user's database holds no table.
    {
        use wl_oltp::backend::Backend;
        let mut c = s.backend("tpcc").connect().unwrap();
        let n = c
            .query_i64("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'tpcc'")
            .unwrap();
        assert_eq!(n, 0);
    }
    let pid = s.pid();
    let scratch = s
        .socket
        .parent()
        .and_then(|p| p.parent())
        .unwrap()
        .to_path_buf();
    assert!(scratch.is_dir());
    s.stop();
    nothing_left(Some(pid));
    assert!(!scratch.exists(), "{} left behind", scratch.display());
}

fn non_loopback_ip() -> Option<String> {
    let s = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    s.connect("10.255.255.255:9").ok()?;
    let ip = s.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then(|| ip.to_string())
}

/// The system under test at a non-loopback address and two load generators: the
/// launched mariadbd listens there too, the endpoints are TCP to it, and the users of
/// both generators add up to one result that passes the check.
#[test]
fn a_launched_mariadb_on_the_sut_address_serves_two_generators() {
    if !have_mariadb() {
        return;
    }
    let Some(ip) = non_loopback_ip() else {
        eprintln!("skipping: this host has no address but loopback");
        return;
    };
    let _one = ONE_SERVER.lock().unwrap_or_else(|e| e.into_inner());
    let sut = Arc::new(LocalHost::new("sut", catalog, false));
    sut.set_address(&ip);
    let gen = |n: &str| Arc::new(LocalHost::new(n, catalog, false)) as Arc<dyn Host>;
    let ctx = Ctx {
        roles: Some(Roles {
            sut: sut.clone() as Arc<dyn Host>,
            loadgens: vec![gen("gen-a"), gen("gen-b")],
        }),
        ..Ctx::quiet()
    };
    let mut w = Oltp::new(cfg(json!({
        "engine": "mariadb", "warehouses": 1, "vus": 2, "duration": 2, "rampup": 0.5,
        "innodb_buffer_pool_size": "64M", "load_threads": 2
    })))
    .unwrap();
    w.prepare(&ctx).unwrap();
    let e = w.endpoints()[0].clone();
    assert!(e.starts_with(&format!("mysql://root@{ip}:")), "{e}");
    // root from the network gives the run's password (the drivers have it in their
    // jobs); without it, or on 127.0.0.1, root is refused.
    use wl_oltp::backend::Backend;
    let port = e.rsplit(':').next().unwrap().split('/').next().unwrap();
    for host in [ip.as_str(), "127.0.0.1"] {
        let bare = format!("mysql://root@{host}:{port}/mysql?prefer_socket=false");
        let refused = wl_oltp::mariadb::MyDb::from_dsn(&bare, None)
            .unwrap()
            .connect()
            .err()
            .unwrap_or_else(|| panic!("root without a password over TCP to {host}"));
        let said = format!("{refused:#}");
        assert!(
            said.contains("refused") || said.contains("not allowed"),
            "{said}"
        );
    }
    w.db_backend(1)
        .unwrap()
        .connect()
        .expect("root with the run's password");
    assert!(!format!("{:?}", w.config().echo()).contains("password"));
    let out = w.run_test("tpcc", &ctx).unwrap();
    assert!(out.error.is_none(), "{:?}", out.error);
    assert!(
        metric(&out, "nopm").unwrap_or(0.0) > 0.0,
        "{:?}",
        out.metrics
    );
    assert!(w.verify(&ctx).unwrap().is_empty());
    let pid = w.server_pid();
    w.cleanup();
    nothing_left(pid);
}

/// Two launched servers on one host: a mariadbd starting removes the `#sql*` files in its
/// tmpdir as left over, so each has a tmpdir of its own, and the first server's live
/// temporary table (files there) is still whole after the second server's start (with a
/// shared tmpdir, dropping it failed: its files were gone).
#[test]
fn a_second_server_starting_leaves_the_firsts_temporary_tables_alone() {
    if !have_mariadb() {
        return;
    }
    use wl_oltp::backend::Backend;
    let _one = ONE_SERVER.lock().unwrap_or_else(|e| e.into_inner());
    let settings = wl_oltp::mariadb_server::Settings {
        buffer_pool: "32M".into(),
        flush_log_at_trx_commit: 2,
        max_connections: 50,
        extra: vec![],
        cpus: vec![],
    };
    let first = wl_oltp::mariadb_server::Mariadbd::throwaway(&settings).unwrap();
    let mut c = first.backend("mysql").connect().unwrap();
    c.batch("CREATE TEMPORARY TABLE kept (x INT) ENGINE=Aria")
        .unwrap();
    c.batch("INSERT INTO kept VALUES (7)").unwrap();
    let second = wl_oltp::mariadb_server::Mariadbd::throwaway(&settings).unwrap();
    assert_eq!(c.query_i64("SELECT x FROM kept").unwrap(), 7);
    // An open table outlives its files being removed; dropping it finds them gone.
    c.batch("DROP TEMPORARY TABLE kept").unwrap();
    drop(second);
}
