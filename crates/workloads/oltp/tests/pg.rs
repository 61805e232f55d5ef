//! Against a real PostgreSQL cluster the tests create: build, transactions, consistency
//! check (passing, and failing on a corrupted table), several databases, a server killed
//! mid-run, two load generators sharing the virtual users, a password kept out of
//! everything returned. One throwaway server with one build is shared; each test works
//! on its own copy of the build (CREATE DATABASE ... TEMPLATE), so tests run in
//! parallel. The workload acts through local hosts (`hosts::LocalHost`): one as both
//! system under test and load generator (the single-host run), or one serving
//! PostgreSQL and two generating load. Skips (with a message) when PostgreSQL is not
//! installed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use rackbench_oltp as wl_oltp;

use engine::host::{Host, Roles};
use engine::load::{run_sessions, Executed, LoadSpec, Outcome, Session, StopAfter};
use engine::workload::Registration;
use engine::{Ctx, Workload};
use hosts::LocalHost;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use serde_json::{json, Map, Value};
use wl_oltp::server::{Server, Settings};
use wl_oltp::txn::{Counters, Mix, Vu, VuParams};
use wl_oltp::{random, Config, Oltp, Target};

const WAREHOUSES: u32 = 2;

fn catalog(name: &str) -> Option<Registration> {
    (name == "oltp").then(wl_oltp::registration)
}

/// Drivers that saw the password in their job, and in nothing else they were given.
static SAW_PASSWORD: AtomicUsize = AtomicUsize::new(0);

/// The oltp driver, noting whether its job carries the test's password as it should:
/// in the parameters only, with no DSN beside it and none in the endpoints.
fn recording_driver(
    job: &engine::host::DriverJob,
    progress: &engine::workload::Progress,
) -> anyhow::Result<Value> {
    let pw = job.params.get("password").and_then(Value::as_str);
    if pw == Some("s3cret")
        && !job.params.contains_key("dsn")
        && job.endpoints.iter().all(|e| !e.contains("s3cret"))
    {
        SAW_PASSWORD.fetch_add(1, Ordering::Relaxed);
    }
    wl_oltp::driver::drive(job, progress)
}

fn recording_catalog(name: &str) -> Option<Registration> {
    let mut r = catalog(name)?;
    r.driver = Some(recording_driver);
    Some(r)
}

/// A context whose hosts are `sut` (the service) and `loadgens`.
fn ctx_on(sut: &str, loadgens: &[&str]) -> Ctx {
    ctx_with(catalog, sut, loadgens)
}

fn ctx_with(catalog: hosts::local::Catalog, sut: &str, loadgens: &[&str]) -> Ctx {
    Ctx {
        roles: Some(hosts::local_roles(catalog, sut, loadgens)),
        ..Ctx::quiet()
    }
}

/// One local host, both system under test and load generator.
fn local() -> Ctx {
    ctx_on("local", &["local"])
}

struct Shared {
    /// Stopped (and its temp dir removed) by `stop_shared` at process exit: statics are
    /// never dropped, and the server runs in its own process group.
    server: Mutex<Server>,
    socket_dir: std::path::PathBuf,
    port: u16,
    /// Serialises CREATE DATABASE ... TEMPLATE (the template must have no connections).
    copy_lock: Mutex<()>,
}

static SHARED: OnceLock<Option<Shared>> = OnceLock::new();

/// A test server's settings: no durability, unpinned.
fn settings(shared_buffers: &str, max_connections: u32) -> Settings {
    Settings {
        shared_buffers: shared_buffers.into(),
        fsync: false,
        synchronous_commit: "off".into(),
        max_connections,
        extra: vec![],
        cpus: vec![],
    }
}

extern "C" fn stop_shared() {
    if let Some(Some(s)) = SHARED.get() {
        if let Ok(mut srv) = s.server.lock() {
            srv.stop();
        }
    }
}

fn shared() -> Option<&'static Shared> {
    SHARED
        .get_or_init(|| {
            if !wl_oltp::postgres_available() {
                eprintln!("skipping: PostgreSQL (initdb, postgres) is not installed");
                return None;
            }
            let server = Server::throwaway(&settings("128MB", 200)).expect("launching PostgreSQL");
            let mut admin = wl_oltp::server::connect(&server.config("postgres")).unwrap();
            admin.batch_execute("CREATE DATABASE base").unwrap();
            // SAFETY: registers a plain extern "C" function to run at exit.
            unsafe {
                libc::atexit(stop_shared);
            }
            wl_oltp::populate::build(&server.config("base"), WAREHOUSES, 2, 1).expect("build");
            Some(Shared {
                socket_dir: server.socket_dir.clone(),
                port: server.port,
                server: Mutex::new(server),
                copy_lock: Mutex::new(()),
            })
        })
        .as_ref()
}

/// A private copy of the build, returned as a DSN.
fn copy_of_build(s: &Shared, name: &str) -> String {
    let _g = s.copy_lock.lock().unwrap_or_else(|p| p.into_inner());
    let cfg = s
        .server
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .config("postgres");
    let mut admin = wl_oltp::server::connect(&cfg).unwrap();
    admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS {name}"))
        .unwrap();
    admin
        .batch_execute(&format!("CREATE DATABASE {name} TEMPLATE base"))
        .unwrap();
    dsn(s, name)
}

fn dsn(s: &Shared, db: &str) -> String {
    format!(
        "host={} port={} user=postgres dbname={db}",
        s.socket_dir.display(),
        s.port
    )
}

fn cfg(map: Value) -> Config {
    let m: Map<String, Value> = serde_json::from_value(map).unwrap();
    Config::from_map(&m).unwrap()
}

fn executor_missing(e: &anyhow::Error) -> bool {
    let s = format!("{e:#}");
    if s.contains("being written") {
        eprintln!("skipping the run part: the session executor is not merged yet ({s})");
        true
    } else {
        false
    }
}

#[test]
fn build_has_the_spec_cardinalities_and_passes_every_condition() {
    let Some(s) = shared() else { return };
    let d = copy_of_build(s, "t_cardinality");
    let mut c = wl_oltp::server::connect(&wl_oltp::server::parse_dsn(&d).unwrap()).unwrap();
    let count = |c: &mut postgres::Client, t: &str| -> i64 {
        c.query_one(&format!("SELECT count(*) FROM {t}"), &[])
            .unwrap()
            .get(0)
    };
    let w = WAREHOUSES as i64;
    assert_eq!(count(&mut c, "warehouse"), w);
    assert_eq!(count(&mut c, "district"), 10 * w);
    assert_eq!(count(&mut c, "customer"), 30_000 * w);
    assert_eq!(count(&mut c, "history"), 30_000 * w);
    assert_eq!(count(&mut c, "orders"), 30_000 * w);
    assert_eq!(count(&mut c, "new_order"), 9_000 * w);
    assert_eq!(count(&mut c, "item"), 100_000);
    assert_eq!(count(&mut c, "stock"), 100_000 * w);
    let ol = count(&mut c, "order_line") as f64 / (300_000.0 * w as f64);
    assert!((0.97..1.03).contains(&ol), "order lines per expected {ol}");
    // Value rules: 10% bad credit, last names from syllables, ORIGINAL in ~10% of items.
    let bc: i64 = c
        .query_one("SELECT count(*) FROM customer WHERE c_credit = 'BC'", &[])
        .unwrap()
        .get(0);
    let bc = bc as f64 / (30_000.0 * w as f64);
    assert!((0.08..0.12).contains(&bc), "{bc}");
    let name: String = c
        .query_one(
            "SELECT c_last FROM customer WHERE c_w_id = 1 AND c_d_id = 1 AND c_id = 372",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(name, "PRICALLYOUGHT");
    let orig: i64 = c
        .query_one(
            "SELECT count(*) FROM item WHERE i_data LIKE '%ORIGINAL%'",
            &[],
        )
        .unwrap()
        .get(0);
    assert!((8_000..12_000).contains(&orig), "{orig}");
    let res = wl_oltp::check::run(&mut c, true).unwrap();
    assert_eq!(res.len(), 12);
    assert!(res.iter().all(|r| r.passed()), "{res:?}");
}

#[test]
fn transactions_keep_the_database_consistent_and_the_counters_agree() {
    let Some(s) = shared() else { return };
    let d = copy_of_build(s, "t_direct");
    let pcfg = wl_oltp::server::parse_dsn(&d).unwrap();
    let mut c = wl_oltp::server::connect(&pcfg).unwrap();
    let meta = wl_oltp::populate::read_meta(&mut c).unwrap().unwrap();
    let before: i64 = c
        .query_one("SELECT sum(d_next_o_id)::int8 FROM district", &[])
        .unwrap()
        .get(0);
    let counters = Arc::new(Counters::default());
    let mut rng = SmallRng::seed_from_u64(5);
    let consts = random::Constants::for_run(&mut rng, meta.c_load);
    assert!(random::valid_c_delta(meta.c_load, consts.c_last));
    let mut vus: Vec<Vu> = (0..2u32)
        .map(|v| {
            Vu::connect(
                &pcfg,
                VuParams {
                    home_w: v % WAREHOUSES + 1,
                    stock_district: 1,
                    warehouses: WAREHOUSES,
                    consts,
                    mix: Mix::default(),
                    class_offset: 0,
                    counters: counters.clone(),
                    waits: None,
                    deadline: None,
                    stats_mark: None,
                },
            )
            .unwrap()
        })
        .collect();
    let mut per_class = [0u64; 5];
    let (mut ok_new_orders, mut rollbacks) = (0i64, 0u64);
    for i in 0..1500 {
        let vu = &mut vus[i % 2];
        let Executed {
            class,
            outcome: out,
            ..
        } = vu.execute(&mut rng).expect("session broken");
        per_class[class] += 1;
        match out {
            Outcome::Ok if class == wl_oltp::txn::NEW_ORDER => ok_new_orders += 1,
            Outcome::Ok => {}
            Outcome::Rollback => {
                assert_eq!(class, wl_oltp::txn::NEW_ORDER);
                rollbacks += 1
            }
            other => panic!("unexpected outcome {other:?} for class {class}"),
        }
    }
    drop(vus);
    assert!(per_class.iter().all(|&n| n > 0), "{per_class:?}");
    // The server's counter moved by exactly the committed New-Orders.
    let after: i64 = c
        .query_one("SELECT sum(d_next_o_id)::int8 FROM district", &[])
        .unwrap()
        .get(0);
    assert_eq!(after - before, ok_new_orders);
    assert_eq!(Counters::get(&counters.new_order_rollbacks), rollbacks);
    let no = Counters::get(&counters.new_orders);
    assert_eq!(no, ok_new_orders as u64 + rollbacks);
    let lines = Counters::get(&counters.order_lines) as f64 / no as f64;
    assert!((9.0..11.0).contains(&lines), "{lines}");
    let p = Counters::get(&counters.payments) as f64;
    let by_name = 100.0 * Counters::get(&counters.payments_by_name) as f64 / p;
    let remote = 100.0 * Counters::get(&counters.remote_payments) as f64 / p;
    // Loose bounds: ~650 payments, the spec's ratios within sampling error.
    assert!((50.0..70.0).contains(&by_name), "{by_name}");
    assert!((9.0..21.0).contains(&remote), "{remote}");
    let res = wl_oltp::check::run(&mut c, false).unwrap();
    assert!(res.iter().all(|r| r.passed()), "{res:?}");
}

/// A reading of the counters behind TPM is one transaction on the server, as the monitor
/// counts its own (`reading_is_a_transaction`): a prepared reading was two (the Parse's
/// Sync commits too), and the monitor's one reading a second read as +1.2 transactions/s
/// of TPM, +11.6% at 10 transactions/s (acceptance M, 1).
#[test]
fn a_counter_reading_is_one_transaction_on_the_server() {
    use wl_oltp::backend::Backend;
    let Some(s) = shared() else { return };
    let d = copy_of_build(s, "t_reading");
    let pcfg = wl_oltp::server::parse_dsn(&d).unwrap();
    let mut c = Backend::connect(&pcfg).unwrap();
    assert!(c.reading_is_a_transaction());
    c.flush_stats();
    let x0 = c.counts().unwrap().xacts;
    for _ in 0..5 {
        c.counts().unwrap();
    }
    // Counted now: the reading x0 took, the five and the flush's own statement.
    c.flush_stats();
    let x1 = c.counts().unwrap().xacts;
    // Nothing else runs in this database; an autovacuum worker visiting it could add
    // one or two, a prepared reading adds 6 (13).
    assert!((7..=9).contains(&(x1 - x0)), "{} transactions", x1 - x0);
}

#[test]
fn a_corrupted_table_fails_the_check_and_flags_the_result_invalid() {
    let Some(s) = shared() else { return };
    let d = copy_of_build(s, "t_corrupt");
    let config = cfg(json!({ "dsn": d, "warehouses": WAREHOUSES }));
    let mut c = wl_oltp::server::connect(&wl_oltp::server::parse_dsn(&d).unwrap()).unwrap();
    c.batch_execute("UPDATE warehouse SET w_ytd = w_ytd + 1 WHERE w_id = 1")
        .unwrap();
    c.batch_execute("DELETE FROM new_order WHERE no_w_id = 2 AND no_d_id = 3 AND no_o_id = 2500")
        .unwrap();
    let res = wl_oltp::check_command(&config, false).unwrap();
    let failed: Vec<u8> = res[0]
        .1
        .iter()
        .filter(|r| !r.passed())
        .map(|r| r.id)
        .collect();
    assert!(failed.contains(&1), "{failed:?}");
    assert!(failed.contains(&3), "{failed:?}");
    assert!(failed.contains(&5), "{failed:?}");
    assert!(failed.contains(&8), "{failed:?}");
    let flags = wl_oltp::check_flags(Ok(res));
    assert!(flags.iter().any(|f| f.severity == model::Severity::Invalid));
    // Through the workload, a build damaged before the run is refused before it runs
    // (TPC-C checks before and after, 3.3.3), naming the same conditions and what to do.
    let ctx = local();
    let e = match Oltp::new(config).unwrap().prepare(&ctx) {
        Ok(()) => panic!("a damaged build was reused"),
        Err(e) => format!("{e:#}"),
    };
    for want in [
        "database t_corrupt: the build this run would reuse is inconsistent before the run",
        "condition 1 (W_YTD = sum(D_YTD)) fails for 1 rows",
        "condition 3 (",
        "condition 5 (",
        "condition 8 (",
        "nothing was run",
        "Give --rebuild",
        "`rackbench oltp check` with the same --dsn",
    ] {
        assert!(e.contains(want), "no {want:?} in {e}");
    }
    // Damage done after the run started: verify() says invalid.
    let d = copy_of_build(s, "t_corrupt_later");
    let mut w = Oltp::new(cfg(json!({ "dsn": d, "warehouses": WAREHOUSES }))).unwrap();
    w.prepare(&ctx).unwrap();
    let mut c = wl_oltp::server::connect(&wl_oltp::server::parse_dsn(&d).unwrap()).unwrap();
    c.batch_execute("UPDATE warehouse SET w_ytd = w_ytd + 1 WHERE w_id = 1")
        .unwrap();
    let flags = w.verify(&ctx).unwrap();
    assert!(flags
        .iter()
        .any(|f| f.code == "consistency" && f.severity == model::Severity::Invalid));
    w.cleanup();
}

/// A database of the user's is never replaced unasked: one holding tables that are no
/// rackbench build (a `customer` table of the user's was dropped: acceptance pass J, 5),
/// and a build of another size (a forgotten `--warehouses` dropped an hours-long build:
/// J, 6). Each refusal says what to give, and leaves the data as it was.
#[test]
fn a_users_tables_and_a_build_of_another_size_are_not_replaced_unasked() {
    let Some(s) = shared() else { return };
    let cfg_pg = s
        .server
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .config("postgres");
    let mut admin = wl_oltp::server::connect(&cfg_pg).unwrap();
    admin
        .batch_execute("DROP DATABASE IF EXISTS t_users")
        .unwrap();
    admin.batch_execute("CREATE DATABASE t_users").unwrap();
    let users = wl_oltp::server::connect(
        &s.server
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .config("t_users"),
    );
    let mut users = users.unwrap();
    users
        .batch_execute(
            "CREATE TABLE customer (id int, name text); \
             INSERT INTO customer VALUES (1, 'precious'); CREATE TABLE mydata (x int)",
        )
        .unwrap();
    let ctx = local();
    let refusal = |params: Value| -> String {
        let mut w = Oltp::new(cfg(params)).unwrap();
        let e = w.prepare(&ctx).expect_err("refused");
        w.cleanup();
        format!("{e:#}")
    };
    let e = refusal(json!({"dsn": dsn(s, "t_users"), "warehouses": 1, "vus": 1}));
    assert!(
        e.contains("database t_users holds tables that are no rackbench build (customer, mydata)"),
        "{e}"
    );
    let row = users
        .query_one("SELECT name FROM customer WHERE id = 1", &[])
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "precious");
    // A build of another size: said, and kept.
    let d = copy_of_build(s, "t_size");
    let e = refusal(json!({"dsn": d, "warehouses": WAREHOUSES + 1, "vus": 1}));
    assert!(
        e.contains(&format!(
            "database t_size holds a build of {WAREHOUSES} warehouses, not {}: give \
             --warehouses {WAREHOUSES} to use it, or --rebuild",
            WAREHOUSES + 1
        )),
        "{e}"
    );
    let mut c = wl_oltp::server::connect(
        &s.server
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .config("t_size"),
    )
    .unwrap();
    let n: i64 = c
        .query_one("SELECT count(*) FROM warehouse", &[])
        .unwrap()
        .get(0);
    assert_eq!(n, i64::from(WAREHOUSES));
}

/// A --dsn server's settings are read from it and disclosed, and the knobs of a server
/// rackbench launches are not stored as its settings: a server run with fsync off was
/// published as "fsync true (default)" (acceptance pass J, 1). The shared server runs
/// with 128MB of shared buffers and fsync off; rackbench's launched defaults are 256MB
/// and on.
#[test]
fn a_dsn_servers_own_settings_are_disclosed_not_rackbenchs_defaults() {
    let Some(s) = shared() else { return };
    let d = copy_of_build(s, "t_settings");
    let mut w = Oltp::new(cfg(json!({"dsn": d, "warehouses": WAREHOUSES, "vus": 1}))).unwrap();
    let ctx = local();
    w.prepare(&ctx).unwrap();
    let facts = w.disclosure();
    w.cleanup();
    let fact = |k: &str| facts.get(k).and_then(|f| f.value.clone());
    assert_eq!(
        fact("server.config.shared_buffers").as_deref(),
        Some("128MB"),
        "{facts:?}"
    );
    assert_eq!(
        fact("server.config.fsync").as_deref(),
        Some("off"),
        "{facts:?}"
    );
    assert!(fact("server.config.wal_level").is_some(), "{facts:?}");
    let settings = w.settings();
    for k in [
        "shared_buffers",
        "fsync",
        "synchronous_commit",
        "innodb_buffer_pool_size",
    ] {
        assert!(!settings.contains_key(k), "{k} in {settings:?}");
    }
    assert!(settings.contains_key("warehouses"), "{settings:?}");
}

#[test]
fn a_run_measures_nopm_tpm_latency_and_passes_the_check() {
    let Some(s) = shared() else { return };
    let d = copy_of_build(s, "t_run");
    let mut w = Oltp::new(cfg(json!({
        "dsn": d, "warehouses": WAREHOUSES, "vus": 2, "duration": 3, "rampup": 0.5
    })))
    .unwrap();
    let ctx = local();
    w.prepare(&ctx).unwrap();
    let out = match w.run_test("tpcc", &ctx) {
        Ok(o) => o,
        Err(e) if executor_missing(&e) => return,
        Err(e) => panic!("{e:#}"),
    };
    assert_eq!(out.headline, "nopm");
    assert!(out.error.is_none(), "{:?}", out.error);
    let get = |n: &str| {
        out.metrics
            .iter()
            .find(|m| m.name == n && m.labels.is_empty())
            .map(|m| m.value)
    };
    let nopm = get("nopm").expect("nopm");
    let tpm = get("tpm").expect("tpm");
    assert!(nopm > 0.0 && tpm > nopm, "nopm {nopm} tpm {tpm}");
    // The server's TPM and the client's count agree within the stats-flush slack.
    let tpm_client = get("tpm_client").unwrap();
    assert!(
        (tpm / tpm_client - 1.0).abs() < 0.5,
        "tpm {tpm} client {tpm_client}"
    );
    assert!(out
        .histograms
        .iter()
        .any(|h| h.name == "new_order" && h.kind == "service"));
    let flags = w.verify(&ctx).unwrap();
    assert!(flags.is_empty(), "{flags:?}");
    w.cleanup();
}

#[test]
fn two_databases_at_once_report_per_database_and_total() {
    let Some(s) = shared() else { return };
    let d = copy_of_build(s, "t_two");
    let mut w = Oltp::new(cfg(json!({
        "dsn": d, "warehouses": WAREHOUSES, "vus": 1, "databases": 2, "duration": 2, "rampup": 0
    })))
    .unwrap();
    let ctx = local();
    w.prepare(&ctx).unwrap();
    // The second database was copied from the first (same build).
    let mut c2 = wl_oltp::server::connect(&w.db_config(2).unwrap()).unwrap();
    assert!(wl_oltp::populate::read_meta(&mut c2).unwrap().is_some());
    let out = match w.run_test("tpcc", &ctx) {
        Ok(o) => o,
        Err(e) if executor_missing(&e) => return,
        Err(e) => panic!("{e:#}"),
    };
    let nopm = |db: Option<&str>| {
        out.metrics
            .iter()
            .find(|m| m.name == "nopm" && m.labels.get("db").map(String::as_str) == db)
            .map(|m| m.value)
    };
    let (a, b, t) = (
        nopm(Some("1")).unwrap(),
        nopm(Some("2")).unwrap(),
        nopm(None).unwrap(),
    );
    assert!(a > 0.0 && b > 0.0);
    assert!((a + b - t).abs() < 1e-6 * t.max(1.0));
    assert!(w.verify(&ctx).unwrap().is_empty());
    w.cleanup();
}

#[test]
fn a_server_killed_mid_run_gives_a_failed_result_that_keeps_what_was_measured() {
    if !wl_oltp::postgres_available() {
        eprintln!("skipping: PostgreSQL is not installed");
        return;
    }
    // Its own server (the shared one must survive).
    let mut w = Oltp::new(cfg(json!({
        "warehouses": 1, "vus": 2, "duration": 6, "rampup": 0, "shared_buffers": "64MB",
        "fsync": false, "load_threads": 2
    })))
    .unwrap();
    let ctx = local();
    w.prepare(&ctx).unwrap();
    let pid = w.server_pid().expect("launched server");
    let progress = ctx.progress.clone();
    let killer = std::thread::spawn(move || {
        // Wait for the run to do some work, then kill the postmaster hard.
        for _ in 0..200 {
            if progress.done.load(Ordering::Relaxed) > 50 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        std::thread::sleep(std::time::Duration::from_millis(1500));
        // SAFETY: kill(2) on the test's own server.
        unsafe {
            libc::kill(pid as i32, libc::SIGKILL);
        }
    });
    let r = w.run_test("tpcc", &ctx);
    killer.join().unwrap();
    let out = match r {
        Ok(o) => o,
        Err(e) if executor_missing(&e) => return,
        Err(e) => panic!("a dead server must give a result with an error, not Err: {e:#}"),
    };
    assert!(out.error.is_some(), "the result must say it failed");
    let done: f64 = out
        .metrics
        .iter()
        .filter(|m| m.name == "transactions")
        .map(|m| m.value)
        .sum();
    assert!(done > 0.0, "what was measured before the kill is kept");
    // NOPM up to the last good reading of the counters, or missing with a reason.
    assert!(
        out.metrics.iter().any(|m| m.name == "nopm")
            || out.missing.iter().any(|m| m.name == "nopm")
    );
    let flags = w.verify(&ctx).unwrap();
    assert!(flags.iter().any(|f| f.code == "consistency_not_checked"));
    w.cleanup();
}

fn labelled(out: &engine::StepOutput, name: &str, key: &str, value: &str) -> Option<f64> {
    out.metrics
        .iter()
        .find(|m| m.name == name && m.labels.get(key).map(String::as_str) == Some(value))
        .map(|m| m.value)
}

/// A workload on a private copy of the build (`db`, its DSN + `dsn_extra`) with
/// `params`, prepared through one system under test and two load generators.
fn on_two_generators(s: &Shared, db: &str, dsn_extra: &str, params: Value) -> (Oltp, Ctx) {
    on_two_generators_of(recording_catalog, s, db, dsn_extra, params)
}

/// [`on_two_generators`] with the drivers of `catalog`.
fn on_two_generators_of(
    catalog: hosts::local::Catalog,
    s: &Shared,
    db: &str,
    dsn_extra: &str,
    params: Value,
) -> (Oltp, Ctx) {
    let mut m: Map<String, Value> = serde_json::from_value(params).unwrap();
    m.insert(
        "dsn".into(),
        json!(format!("{}{dsn_extra}", copy_of_build(s, db))),
    );
    m.insert("warehouses".into(), json!(WAREHOUSES));
    let mut w = Oltp::from_params(&m).unwrap();
    let ctx = ctx_with(catalog, "sut", &["gen-a", "gen-b"]);
    w.prepare(&ctx).unwrap();
    (w, ctx)
}

/// A TPC-C test on two load generators (see [`on_two_generators`]), which ran whole.
fn tpcc_on_two_generators(s: &Shared, db: &str, params: Value) -> (Oltp, Ctx, engine::StepOutput) {
    let (mut w, ctx) = on_two_generators(s, db, "", params);
    let out = w.run_test("tpcc", &ctx).unwrap();
    assert!(out.error.is_none(), "{:?}", out.error);
    (w, ctx, out)
}

/// The figure `name` without labels (the whole run's).
fn whole(out: &engine::StepOutput, name: &str) -> f64 {
    out.metrics
        .iter()
        .find(|m| m.name == name && m.labels.is_empty())
        .map(|m| m.value)
        .unwrap_or_else(|| panic!("no {name}"))
}

#[test]
fn two_load_generators_share_the_users_and_add_up_exactly() {
    let Some(s) = shared() else { return };
    let (mut w, ctx, out) = tpcc_on_two_generators(
        s,
        "t_two_gens",
        json!({ "vus": 3, "duration": 2, "rampup": 0.3 }),
    );
    assert!(out.flags.iter().all(|f| f.code != "host_failed"));
    // The users split 2 + 1, and the whole runs every one of them.
    assert_eq!(labelled(&out, "vus", "host", "gen-a"), Some(2.0));
    assert_eq!(labelled(&out, "vus", "host", "gen-b"), Some(1.0));
    assert_eq!(out.loadgen_threads, Some(3));
    // Each generator's transactions add up to the whole...
    let a = labelled(&out, "transactions", "host", "gen-a").expect("gen-a's transactions");
    let b = labelled(&out, "transactions", "host", "gen-b").expect("gen-b's transactions");
    assert!(a > 0.0 && b > 0.0, "{a} {b}");
    let total: f64 = out
        .metrics
        .iter()
        .filter(|m| m.name == "transactions" && m.labels.contains_key("txn"))
        .map(|m| m.value)
        .sum();
    assert_eq!(a + b, total);
    // ... in one histogram whose count is the sum (merged bucket by bucket).
    let all = out
        .histograms
        .iter()
        .find(|h| h.name == "all" && h.kind == "service")
        .expect("the merged histogram of every transaction");
    assert_eq!(all.summary.count as f64, total);
    // NOPM from the server's counters (read by the first generator) covers both.
    assert!(whole(&out, "nopm") > 0.0);
    let rate = whole(&out, "txn_per_s");
    let ra = labelled(&out, "txn_per_s", "host", "gen-a").unwrap();
    let rb = labelled(&out, "txn_per_s", "host", "gen-b").unwrap();
    assert!(
        (rate - (ra + rb)).abs() <= 1e-9 * rate,
        "{rate} vs {ra} + {rb}"
    );
    assert!(labelled(&out, "loadgen_cpu_s", "host", "gen-a").is_some());
    assert!(out
        .metrics
        .iter()
        .any(|m| m.name == "window_overlap_s" && m.value > 0.0));
    // The consistency check runs on the system under test, and passes.
    let flags = w.verify(&ctx).unwrap();
    assert!(flags.is_empty(), "{flags:?}");
    w.cleanup();
}

/// Acceptance pass G, 1: with two load generators the server's TPM ran 3-4% above the
/// clients' count (`tpm_client`) on short runs, by a fixed ~0.1-0.15 s of throughput,
/// and not with `--rampup 0`: only the first generator's users flushed their statistics
/// where the measured run starts, so the second's last unflushed ramp-up commits were
/// counted in the window. Both generators' ramp-up is now left out.
#[test]
fn two_generators_server_tpm_is_the_clients_window() {
    let Some(s) = shared() else { return };
    let (mut w, _ctx, out) = tpcc_on_two_generators(
        s,
        "t_two_gens_tpm",
        // Four seconds: the readings' few milliseconds apart are a smaller share of it.
        json!({ "vus": 4, "duration": 4, "rampup": 1.5 }),
    );
    let get = |n: &str| whole(&out, n);
    let (tpm, client) = (get("tpm"), get("tpm_client"));
    eprintln!("tpm / tpm_client = {:.4}", tpm / client);
    // The old window read 1.121 here; a loaded machine (a late user's flush) can move a
    // short run by a few percent, which the warning then says.
    let disagree = out.flags.iter().any(|f| f.code == "server_client_disagree");
    assert!(
        (tpm / client - 1.0).abs() < 0.05,
        "tpm {tpm:.0}, tpm_client {client:.0}: {:.4}, {:?}",
        tpm / client,
        out.flags
    );
    let (nopm, nopm_client) = (get("nopm"), get("nopm_client"));
    assert!(
        (nopm / nopm_client - 1.0).abs() < 0.05,
        "nopm {nopm:.0}, nopm_client {nopm_client:.0}: {:.4}",
        nopm / nopm_client
    );
    // Said where they part by more than 1% (and two transactions a user), not otherwise.
    if (tpm / client - 1.0).abs() < 0.01 && (nopm / nopm_client - 1.0).abs() < 0.01 {
        assert!(!disagree, "{:?}", out.flags);
    }
    w.cleanup();
}

/// The oltp driver, except that the second generator's report is lost after it ran its
/// users (an agent killed as its test ends): its work is in the server's counters only.
fn losing_driver(
    job: &engine::host::DriverJob,
    progress: &engine::workload::Progress,
) -> anyhow::Result<Value> {
    let report = wl_oltp::driver::drive(job, progress)?;
    if job.index == 1 {
        anyhow::bail!("the agent ended");
    }
    Ok(report)
}

fn losing_catalog(name: &str) -> Option<Registration> {
    let mut r = catalog(name)?;
    r.driver = Some(losing_driver);
    Some(r)
}

/// Acceptance pass G, 3: a generator lost mid-test left a partial headline of the
/// server's counts, with the lost one's work in them, beside a `host_failed` flag saying
/// the figures are of the generator that reported. The headline is now that generator's
/// own count; the server's is kept under its own name, and the flag says which is which.
#[test]
fn a_lost_generator_leaves_the_headline_of_the_one_that_reported() {
    let Some(s) = shared() else { return };
    let (mut w, ctx) = on_two_generators_of(
        losing_catalog,
        s,
        "t_lost_gen",
        "",
        json!({ "vus": 4, "duration": 2, "rampup": 0.5 }),
    );
    let out = w.run_test("tpcc", &ctx).unwrap();
    assert!(out.error.is_some(), "a partial result");
    let flag = out
        .flags
        .iter()
        .find(|f| f.code == "host_failed")
        .expect("host_failed");
    assert!(
        flag.message
            .contains("1 of 2 load generators that reported")
            && flag.message.contains("kept as nopm_server and tpm_server"),
        "{}",
        flag.message
    );
    let (nopm, tpm) = (whole(&out, "nopm"), whole(&out, "tpm"));
    assert_eq!(nopm, whole(&out, "nopm_client"));
    assert_eq!(tpm, whole(&out, "tpm_client"));
    // The server counted both generators' users: about twice the one that reported.
    let server = whole(&out, "tpm_server");
    assert!(
        server > 1.5 * tpm,
        "server {server:.0} vs reporting {tpm:.0}"
    );
    assert!(whole(&out, "nopm_server") > nopm);
    assert!(out.flags.iter().all(|f| f.code != "server_client_disagree"));
    w.cleanup();
}

#[test]
fn fewer_users_than_generators_is_a_clear_error() {
    let Some(s) = shared() else { return };
    let (mut w, ctx) = on_two_generators(
        s,
        "t_few_users",
        "",
        json!({ "vus": 1, "duration": 1, "rampup": 0 }),
    );
    let e = w.run_test("tpcc", &ctx).unwrap_err();
    assert!(format!("{e:#}").contains("--vus 2"), "{e:#}");
    w.cleanup();
}

#[test]
fn a_password_reaches_the_connections_and_nothing_returned() {
    let Some(s) = shared() else { return };
    // Trust authentication ignores it; it must still go nowhere it could be stored.
    let (mut w, ctx) = on_two_generators(
        s,
        "t_password",
        " password=s3cret",
        json!({ "vus": 2, "duration": 1, "rampup": 0, "rate": 50 }),
    );
    assert_eq!(
        w.db_config(1).unwrap().get_password(),
        Some(&b"s3cret"[..]),
        "the drivers connect with it"
    );
    let out = w.run_test("tpcc", &ctx).unwrap();
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(
        SAW_PASSWORD.load(Ordering::Relaxed),
        2,
        "each driver got it"
    );
    let everything = format!(
        "{:?} {:?} {}",
        w.endpoints(),
        w.disclosure(),
        serde_json::to_string(&out).unwrap()
    );
    assert!(!everything.contains("s3cret"), "{everything}");
    assert!(
        w.endpoints()[0].contains("dbname=t_password"),
        "{:?}",
        w.endpoints()
    );
    w.cleanup();
}

#[test]
fn a_capacity_ramp_offers_its_rate_from_both_generators() {
    let Some(s) = shared() else { return };
    let (mut w, ctx) = on_two_generators(
        s,
        "t_ramp",
        "",
        json!({
            "vus": 2, "tests": ["ramp"], "step_duration": 0.5, "ramp_low": 20,
            "ramp_high": 40, "ramp_step": 20
        }),
    );
    let r = w.run_test("ramp", &ctx).unwrap();
    assert!(r.error.is_none(), "{:?}", r.error);
    let steps: Vec<f64> = r
        .metrics
        .iter()
        .filter(|m| m.name == "demanded_rate_per_s")
        .map(|m| m.value)
        .collect();
    assert_eq!(steps, vec![20.0, 40.0]);
    let best = r
        .metrics
        .iter()
        .find(|m| m.name == "max_reply_rate_per_s")
        .unwrap()
        .value;
    // Each generator offers half of a step's rate (20/s at the second): more came from both.
    assert!(best > 25.0, "{best}");
    assert!(w.verify(&ctx).unwrap().is_empty());
    w.cleanup();
}

/// This host's address on its default route (no packet is sent), if it has one.
fn non_loopback_ip() -> Option<String> {
    let s = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    s.connect("10.255.255.255:9").ok()?;
    let ip = s.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then(|| ip.to_string())
}

#[test]
fn a_server_for_other_hosts_listens_on_their_address_and_admits_them() {
    if !wl_oltp::postgres_available() {
        eprintln!("skipping: PostgreSQL is not installed");
        return;
    }
    let Some(ip) = non_loopback_ip() else {
        eprintln!("skipping: this host has no address but loopback");
        return;
    };
    let reach = wl_oltp::server::Reach::at(&ip, std::slice::from_ref(&ip), Some("Zq9run")).unwrap();
    assert!(!format!("{reach:?}").contains("Zq9"), "{reach:?}");
    let mut srv = Server::throwaway_at(&settings("32MB", 20), &reach).unwrap();
    // Over the network, as a load generator elsewhere connects: with the run's password
    // only (a superuser runs programs as the server's OS user).
    let mut tcp = postgres::Config::new();
    tcp.host(&ip)
        .port(srv.port)
        .user("postgres")
        .dbname("postgres");
    let refused = wl_oltp::server::connect(&tcp).err().expect("no password");
    assert!(format!("{refused:#}").contains("password"), "{refused:#}");
    let wrong = wl_oltp::server::connect(tcp.clone().password("Zq9wrong"))
        .err()
        .expect("a wrong password");
    assert!(format!("{wrong:#}").contains("refused"), "{wrong:#}");
    tcp.password("Zq9run");
    let mut c = wl_oltp::server::connect(&tcp).unwrap();
    let peer: Option<String> = c
        .query_one("SELECT host(inet_client_addr())", &[])
        .unwrap()
        .get(0);
    assert_eq!(peer.as_deref(), Some(ip.as_str()));
    let listen: String = c.query_one("SHOW listen_addresses", &[]).unwrap().get(0);
    assert!(listen.contains(&ip), "{listen}");
    drop(c);
    // An endpoint names the socket first: a generator on another host has no such
    // socket and goes on to the address.
    let e = format!(
        "host=/nonexistent/rackbench-sock,{ip} port={} user=postgres dbname=postgres",
        srv.port
    );
    let mut c =
        wl_oltp::server::connect(&wl_oltp::server::endpoint_config(&e, Some("Zq9run")).unwrap())
            .expect("the address after a missing socket");
    let peer: Option<String> = c
        .query_one("SELECT host(inet_client_addr())", &[])
        .unwrap()
        .get(0);
    assert_eq!(peer.as_deref(), Some(ip.as_str()));
    drop(c);
    // The kept cluster's own pg_hba.conf is untouched: the admitted lines live beside it.
    let own = std::fs::read_to_string(srv.data.join("pg_hba.conf")).unwrap();
    assert!(!own.contains("rackbench"));
    assert!(!own
        .lines()
        .any(|l| l.contains("samenet") && !l.starts_with('#')));
    let hba = std::fs::read_to_string(srv.socket_dir.join("pg_hba.conf")).unwrap();
    // Before the cluster's own lines: the first line that matches decides.
    let ours = hba.find("host all all samenet scram-sha-256");
    assert!(
        ours.is_some_and(|i| i < hba.find("trust").unwrap()),
        "{hba}"
    );
    // Admitting hosts without a password is refused before anything starts.
    let mut open = reach.clone();
    open.password = None;
    let e = Server::throwaway_at(&settings("32MB", 20), &open)
        .err()
        .expect("no password");
    assert!(format!("{e:#}").contains("password"), "{e:#}");
    srv.stop();
}

/// A server of this host alone takes its clients over its socket, in a directory only
/// its user enters: on 127.0.0.1 with trust, any local user was its superuser.
#[test]
fn a_single_host_server_listens_on_its_private_socket_only() {
    if !wl_oltp::postgres_available() {
        eprintln!("skipping: PostgreSQL is not installed");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let mut srv = Server::throwaway(&settings("32MB", 20)).unwrap();
    let mode = std::fs::metadata(&srv.socket_dir)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700, "{mode:o}");
    let mut c = wl_oltp::server::connect(&srv.config("postgres")).unwrap();
    let listen: String = c.query_one("SHOW listen_addresses", &[]).unwrap().get(0);
    assert_eq!(listen, "");
    drop(c);
    assert!(std::net::TcpStream::connect(("127.0.0.1", srv.port)).is_err());
    srv.stop();
}

#[test]
fn a_launched_server_on_the_sut_address_serves_two_generators() {
    if !wl_oltp::postgres_available() {
        eprintln!("skipping: PostgreSQL is not installed");
        return;
    }
    let Some(ip) = non_loopback_ip() else {
        eprintln!("skipping: this host has no address but loopback");
        return;
    };
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
        "warehouses": 1, "vus": 2, "duration": 1.5, "rampup": 0, "shared_buffers": "64MB",
        "fsync": false, "load_threads": 2
    })))
    .unwrap();
    w.prepare(&ctx).unwrap();
    // The address alone: a generator sharing this host's file system took the socket.
    let e = &w.endpoints()[0];
    assert!(e.contains(&format!("host={ip} ")), "{e}");
    assert!(!e.contains('/') && !e.contains(','), "{e}");
    let out = w.run_test("tpcc", &ctx).unwrap();
    assert!(out.error.is_none(), "{:?}", out.error);
    assert!(out
        .metrics
        .iter()
        .any(|m| m.name == "nopm" && m.value > 0.0));
    assert!(w.verify(&ctx).unwrap().is_empty());
    let pid = w.server_pid().expect("launched");
    w.cleanup();
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}/status")).exists()
            || std::fs::read_to_string(format!("/proc/{pid}/status"))
                .unwrap_or_default()
                .contains("zombie")
    );
}

#[test]
fn a_plan_cannot_set_the_jobs_own_keys() {
    let e = Oltp::from_params(json!({ "password": "x" }).as_object().unwrap())
        .err()
        .unwrap();
    assert!(format!("{e:#}").contains("password"), "{e:#}");
}

#[test]
fn missing_build_dir_says_what_to_type() {
    let config = cfg(json!({ "cluster_dir": "/nonexistent/rackbench-oltp-x" }));
    let e = wl_oltp::check_command(&config, false).unwrap_err();
    assert!(format!("{e:#}").contains("rackbench oltp build"), "{e:#}");
    let e =
        Config::from_map(&serde_json::from_value(json!({ "mix": [50, 50] })).unwrap()).unwrap_err();
    assert!(format!("{e:#}").contains("--mix"));
    let e = Config::from_map(&serde_json::from_value(json!({ "bogus": 1 })).unwrap()).unwrap_err();
    assert!(format!("{e:#}").contains("bogus"));
    let _ = Target::open;
}

#[test]
fn config_from_runner_strings() {
    let c = cfg(json!({
        "warehouses": "2", "vus": 5, "mix": "50,40,4,3,3", "fsync": "off",
        "synchronous_commit": false, "server_cpus": [0, 1], "dsn": "host=/tmp password=s3cret"
    }));
    assert_eq!(c.warehouses, 2);
    assert_eq!(c.vus, 5);
    assert_eq!(c.mix, vec![50.0, 40.0, 4.0, 3.0, 3.0]);
    assert!(!c.fsync);
    assert_eq!(c.synchronous_commit, "off");
    assert_eq!(c.server_cpus, "0,1");
    assert!(!c.echo().to_string().contains("s3cret"));
    // Named mixes, and a word that is none.
    let c = cfg(json!({ "mix": "read-mostly" }));
    assert_eq!(c.mix, vec![4.0, 4.0, 44.0, 4.0, 44.0]);
    // TPC-C's card deck, 10,10,1,1,1 of 23.
    assert_eq!(
        cfg(json!({ "mix": "TPCC" })).mix,
        wl_oltp::txn::TPCC_DECK.to_vec()
    );
    assert_eq!(
        Mix::new(&cfg(json!({ "mix": "tpcc" })).mix)
            .unwrap()
            .cards(),
        [10, 10, 1, 1, 1]
    );
    let e = Config::from_map(&serde_json::from_value(json!({ "mix": "readonly" })).unwrap())
        .unwrap_err();
    assert!(format!("{e:#}").contains("read-mostly"), "{e:#}");
    // Latency thresholds as kv and http take them.
    let c = cfg(json!({ "latency_thresholds": "5ms,1ms" }));
    assert_eq!(c.thresholds_ns(), vec![1_000_000, 5_000_000]);
    let e =
        Config::from_map(&serde_json::from_value(json!({ "latency_thresholds": "5" })).unwrap())
            .unwrap_err();
    assert!(format!("{e:#}").contains("no unit"), "{e:#}");
}

/// Keying and think times (scaled down 50 times: 60-360 ms keying, 100-240 ms mean
/// think) against the real server, through the engine's load loop with a warm-up: each
/// type's latency histogram holds exactly the transactions counted for it, none from the
/// warm-up, and times the transaction in the database, not the terminal's waits.
#[test]
fn with_keying_and_think_times_latency_is_the_measured_transactions_database_time() {
    let Some(s) = shared() else { return };
    let d = copy_of_build(s, "t_keying");
    let pcfg = wl_oltp::server::parse_dsn(&d).unwrap();
    let mut c = wl_oltp::server::connect(&pcfg).unwrap();
    let meta = wl_oltp::populate::read_meta(&mut c).unwrap().unwrap();
    let mut rng = SmallRng::seed_from_u64(9);
    let consts = random::Constants::for_run(&mut rng, meta.c_load);
    let counters = Arc::new(Counters::default());
    let (warmup, duration) = (Duration::from_secs(1), Duration::from_secs(2));
    let deadline = Instant::now() + warmup + duration + Duration::from_millis(200);
    let vus: Vec<Vu> = (0..4u32)
        .map(|v| {
            let mut vu = Vu::connect(
                &pcfg,
                VuParams {
                    home_w: v % WAREHOUSES + 1,
                    stock_district: v / WAREHOUSES + 1,
                    warehouses: WAREHOUSES,
                    consts,
                    mix: Mix::default(),
                    class_offset: 0,
                    counters: counters.clone(),
                    waits: Some(0.02),
                    deadline: None,
                    stats_mark: None,
                },
            )
            .unwrap();
            vu.set_deadline(deadline);
            vu
        })
        .collect();
    let spec = LoadSpec {
        stop: StopAfter::Duration(duration),
        warmup,
        connections: vus.len(),
        threads: vus.len(),
        ..LoadSpec::default()
    };
    let out = run_sessions(
        &spec,
        &wl_oltp::txn::CLASSES,
        vus,
        &engine::workload::Progress::default(),
    )
    .unwrap();
    assert!(out.stopped_early.is_none(), "{:?}", out.stopped_early);
    let mut all = model::hist::new_latency_histogram();
    for c in &out.classes {
        assert_eq!(c.service.len(), c.count - c.misses, "{}", c.name);
        all.add(&c.service).unwrap();
    }
    let no = &out.classes[wl_oltp::txn::NEW_ORDER];
    assert!(no.count - no.misses > 0, "no New-Order measured");
    // The spec's ratios count the New-Orders the figures count: the warm-up's are in
    // neither.
    assert_eq!(Counters::get(&counters.new_orders), no.count - no.misses);
    // The mean keying plus think time is about 420 ms here; the database's time is
    // a few ms.
    assert!(
        all.mean() < 100e6,
        "{} ns: the keying and think times are in it",
        all.mean()
    );
}
