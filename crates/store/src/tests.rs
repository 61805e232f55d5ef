//! Store tests on real SQLite files in a temporary directory.

use super::*;
use crate::fixtures::{rich_result, rich_run, t0};

fn tmp_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("sub/dir/results.sqlite")).unwrap();
    (dir, store)
}

fn count(store: &Store, table: &str) -> i64 {
    store
        .lock()
        .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
        .unwrap()
}

#[test]
fn store_is_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Store>();
}

#[test]
fn import_then_load_round_trips_exactly() {
    let (_d, store) = tmp_store();
    let run = rich_run("20261120T210703-aaaaaa", Some("arm"), t0(0), 3);
    store.import_run(&run).unwrap();
    let back = store.load_run(&run.id).unwrap();
    assert_eq!(back, run);
    // And through JSON, as an export/import on another host would.
    let json = export::to_json(std::slice::from_ref(&back));
    assert_eq!(export::from_json(&json).unwrap(), vec![run]);
}

#[test]
fn a_run_exported_while_running_is_imported_interrupted() {
    let (_d, store) = tmp_store();
    let mut run = rich_run("r-live", None, t0(0), 2);
    run.status = Status::Running;
    run.error = None;
    run.finished_at = None;
    store.import_run(&run).unwrap();
    let back = store.load_run(&run.id).unwrap();
    assert_eq!(back.status, Status::Interrupted);
    assert!(back.error.unwrap().contains("still running"));
    assert_eq!(back.results, run.results);
    // Nothing owns it here: no later command takes it for a live run of this machine.
    assert_eq!(count(&store, "run_owner"), 0);
}

#[test]
fn a_begun_run_has_its_owner_in_the_same_write() {
    let (_d, store) = tmp_store();
    let mut run = rich_run("r-own", None, t0(0), 0);
    run.status = Status::Running;
    store.begin_run(&run).unwrap();
    assert_eq!(count(&store, "run_owner"), 1);
    // Begun twice: refused, and the first owner row is the only one.
    assert!(store.begin_run(&run).is_err());
    assert_eq!(count(&store, "run_owner"), 1);
}

/// A point's repetitions are flagged in one transaction: a step without a result fails
/// the whole, and no step before it keeps a flag.
#[test]
fn flags_for_a_points_steps_are_added_all_or_none() {
    let (_d, store) = tmp_store();
    let run = rich_run("r-flags", None, t0(0), 2);
    store.import_run(&run).unwrap();
    let steps: Vec<u32> = run.results.iter().map(|r| r.step).collect();
    let flag = model::Flag::invalid("verify_failed", "the check failed");
    let flags_before = count(&store, "flags");
    let missing = steps.iter().max().unwrap() + 100;
    let e = store
        .add_flags(&run.id, &[steps[0], missing], std::slice::from_ref(&flag))
        .unwrap_err();
    assert!(
        e.to_string()
            .contains(&format!("no result at step {missing}")),
        "{e}"
    );
    assert_eq!(count(&store, "flags"), flags_before);
    store
        .add_flags(&run.id, &steps, std::slice::from_ref(&flag))
        .unwrap();
    let loaded = store.load_run(&run.id).unwrap();
    assert!(loaded
        .results
        .iter()
        .all(|r| r.flags.iter().any(|f| f.code == "verify_failed")));
}

#[test]
fn incremental_writes_round_trip_exactly() {
    let (_d, store) = tmp_store();
    let full = rich_run("r-inc", None, t0(0), 3);
    let mut header = full.clone();
    header.results.clear();
    header.idle_power.clear();
    header.hosts.truncate(1);
    header.finished_at = None;
    store.begin_run(&header).unwrap();
    store.update_hosts(&full.id, &full.hosts).unwrap();
    for idle in &full.idle_power {
        store.insert_idle_power(&full.id, idle).unwrap();
    }
    for r in &full.results {
        store.insert_result(&full.id, r).unwrap();
    }
    store
        .finish_run_at(
            &full.id,
            full.status,
            full.error.as_deref(),
            full.finished_at.unwrap(),
        )
        .unwrap();
    assert_eq!(store.load_run(&full.id).unwrap(), full);
}

#[test]
fn interrupted_run_keeps_its_results() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.sqlite");
    let mut header = rich_run("r-crash", Some("x86"), t0(0), 0);
    header.finished_at = None;
    header.error = None;
    header.status = Status::Ok; // begin_run stores Running whatever the record says
    let r0 = rich_result(0, "set", 1, t0(1));
    let r1 = rich_result(1, "get", 16, t0(12));
    {
        let store = Store::open(&path).unwrap();
        store.begin_run(&header).unwrap();
        store.insert_result(&header.id, &r0).unwrap();
        store.insert_result(&header.id, &r1).unwrap();
        // The process "dies" here: no finish_run, store dropped.
    }
    let store = Store::open(&path).unwrap();
    let back = store.load_run("r-crash").unwrap();
    assert_eq!(back.status, Status::Running);
    assert_eq!(back.finished_at, None);
    assert_eq!(back.results, vec![r0, r1]);
    let list = store.list_runs().unwrap();
    assert_eq!(list[0].status, Status::Running);
    assert_eq!(list[0].results, 2);
}

#[test]
fn a_run_whose_process_is_gone_is_closed_as_interrupted_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.sqlite");
    let mut header = rich_run("r-killed", None, t0(0), 0);
    header.finished_at = None;
    header.error = None;
    let r0 = rich_result(0, "set", 1, t0(1));
    // A process that has exited: its pid names no live process with its start time.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = ProcessId::of(child.id());
    child.wait().unwrap();
    {
        let store = Store::open(&path).unwrap();
        store.begin_run(&header).unwrap();
        store.insert_result(&header.id, &r0).unwrap();
        let mut live = header.clone();
        live.id = "r-live".into();
        store.begin_run(&live).unwrap();
        // Hand the first run to the exited process (its stat line may already be gone).
        let (pid, start) = dead.map_or((child.id(), 1), |p| (p.pid, p.starttime));
        store
            .lock()
            .execute(
                "UPDATE run_owner SET pid = ?1, starttime = ?2 WHERE run_id = 'r-killed'",
                params![pid, start],
            )
            .unwrap();
        // A run of a container or machine sharing the store: its pid means nothing here.
        let mut elsewhere = header.clone();
        elsewhere.id = "r-elsewhere".into();
        store.begin_run(&elsewhere).unwrap();
        store
            .lock()
            .execute(
                "UPDATE run_owner SET pid = ?1, starttime = ?2, place = 'other/pid:[1]'
                 WHERE run_id = 'r-elsewhere'",
                params![pid, start],
            )
            .unwrap();
    }
    let store = Store::open(&path).unwrap();
    let back = store.load_run("r-killed").unwrap();
    assert_eq!(back.status, Status::Interrupted);
    assert!(back
        .error
        .as_deref()
        .unwrap()
        .contains("ended without finishing"));
    assert!(back.finished_at.is_some());
    assert_eq!(back.results, vec![r0], "what it stored is kept");
    // This test process is alive: its run stays running.
    assert_eq!(store.load_run("r-live").unwrap().status, Status::Running);
    // Another place's run is left for a command there to judge, or closed by hand.
    assert_eq!(
        store.load_run("r-elsewhere").unwrap().status,
        Status::Running
    );
    let err = store.close_by_hand("r-live").unwrap_err().to_string();
    assert!(err.contains("in progress"), "{err}");
    let mut provisional = rich_result(0, "ramp", 1, t0(2));
    provisional.status = Status::Running;
    store.put_result("r-elsewhere", None, &provisional).unwrap();
    store.close_by_hand("r-elsewhere").unwrap();
    let closed = store.load_run("r-elsewhere").unwrap();
    assert_eq!(closed.status, Status::Interrupted);
    assert!(closed.error.unwrap().contains("other/pid:[1]"));
    // Its provisional result with it (audit, 6).
    assert_eq!(closed.results[0].status, Status::Interrupted);
    assert!(closed.results[0]
        .error
        .as_deref()
        .unwrap()
        .contains("by hand"));
    assert!(store.close_by_hand("r-elsewhere").is_err(), "closed twice");
    // A run an earlier rackbench closed without its provisional result: the result is
    // closed at the next open.
    let mut kept = rich_result(1, "levels", 1, t0(3));
    kept.status = Status::Running;
    store.put_result("r-elsewhere", None, &kept).unwrap();
    drop(store);
    let store = Store::open(&path).unwrap();
    let closed = store.load_run("r-elsewhere").unwrap();
    let levels = closed.results.iter().find(|r| r.test == "levels").unwrap();
    assert_eq!(levels.status, Status::Interrupted);
    assert!(levels.error.as_deref().unwrap().contains("ended before"));
    // Finishing a run forgets its owner.
    store.finish_run("r-live", Status::Ok, None).unwrap();
    assert_eq!(count(&store, "run_owner"), 0);
}

#[test]
fn nan_metric_survives_as_nan() {
    // SQLite stores NaN as NULL; the load maps it back rather than failing.
    let (_d, store) = tmp_store();
    let mut run = rich_run("r-nan", None, t0(0), 1);
    run.results[0]
        .metrics
        .push(Metric::new("broken", f64::NAN, "1"));
    store.import_run(&run).unwrap();
    let back = store.load_run("r-nan").unwrap();
    assert!(back.results[0].metrics.last().unwrap().value.is_nan());
}

#[test]
fn older_schema_is_migrated_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.sqlite");
    let run = rich_run("r-old", Some("arm"), t0(0), 2);
    {
        let old = Store::open_at_version(&path, 1).unwrap();
        assert_eq!(old.schema_version().unwrap(), 1);
        old.import_run(&run).unwrap();
        let has_view: i64 = old
            .lock()
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE name = 'metrics_long'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(has_view, 0);
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    const { assert!(SCHEMA_VERSION >= 2) };
    assert_eq!(store.load_run("r-old").unwrap(), stored_before_v6(&run));
    // v2's view answers SQL over the data written at v1.
    let v: f64 = store
        .lock()
        .query_row(
            "SELECT value FROM metrics_long WHERE run_id = 'r-old' AND step = 1
             AND metric = 'ops_per_s' AND labels = '{}'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(v, run.results[1].metrics[0].value);
    // Opening again is a no-op.
    drop(store);
    assert_eq!(
        Store::open(&path).unwrap().schema_version().unwrap(),
        SCHEMA_VERSION
    );
}

#[test]
fn newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.sqlite");
    {
        let store = Store::open(&path).unwrap();
        store
            .lock()
            .pragma_update(None, "user_version", SCHEMA_VERSION as i64 + 1)
            .unwrap();
    }
    let err = Store::open(&path).err().expect("must refuse");
    let msg = format!("{err:#}");
    assert!(msg.contains("newer"), "{msg}");
    assert!(msg.contains("new.sqlite"), "{msg}");
    assert!(msg.contains("upgrade rackbench"), "{msg}");
}

#[test]
fn foreign_sqlite_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.sqlite");
    {
        let c = Connection::open(&path).unwrap();
        c.execute_batch("CREATE TABLE t (x);").unwrap();
    }
    let msg = format!("{:#}", Store::open(&path).err().expect("must refuse"));
    assert!(msg.contains("not a rackbench results store"), "{msg}");
}

#[test]
fn unusable_paths_name_the_path_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    // A regular file where a directory is needed: fails even when running as root.
    let file = dir.path().join("plain-file");
    std::fs::write(&file, b"x").unwrap();
    let msg = format!(
        "{:#}",
        Store::open(&file.join("sub/results.sqlite")).err().unwrap()
    );
    assert!(msg.contains("plain-file"), "{msg}");
    assert!(
        msg.contains("--db") && msg.contains("RACKBENCH_DB"),
        "{msg}"
    );
    // A file that is not SQLite at all.
    let junk = dir.path().join("junk.sqlite");
    std::fs::write(&junk, vec![b'z'; 4096]).unwrap();
    let msg = format!("{:#}", Store::open(&junk).err().unwrap());
    assert!(msg.contains("junk.sqlite") && msg.contains("--db"), "{msg}");
}

#[test]
fn resolve_rules() {
    let (_d, store) = tmp_store();
    let err = format!("{:#}", store.resolve("latest").unwrap_err());
    assert!(err.contains("no runs yet"), "{err}");
    store
        .import_run(&rich_run("20261120T210703-aaaaaa", Some("arm"), t0(0), 1))
        .unwrap();
    store
        .import_run(&rich_run("20261120T210803-aabbbb", Some("x86"), t0(60), 1))
        .unwrap();
    store
        .import_run(&rich_run("20261120T210903-cccccc", Some("arm"), t0(120), 1))
        .unwrap();
    assert_eq!(store.resolve("latest").unwrap(), "20261120T210903-cccccc");
    assert_eq!(
        store.resolve("20261120T210703-aaaaaa").unwrap(),
        "20261120T210703-aaaaaa"
    );
    assert_eq!(
        store.resolve(" 20261120T2109 ").unwrap(),
        "20261120T210903-cccccc"
    );
    assert_eq!(
        store.resolve("20261120T210803").unwrap(),
        "20261120T210803-aabbbb"
    );
    // A label gives the newest run with that label.
    assert_eq!(store.resolve("arm").unwrap(), "20261120T210903-cccccc");
    assert_eq!(store.resolve("x86").unwrap(), "20261120T210803-aabbbb");
    let err = format!("{:#}", store.resolve("20261120T210").unwrap_err());
    assert!(err.contains("matches 3 runs"), "{err}");
    assert!(err.contains("rackbench runs"), "{err}");
    let err = format!("{:#}", store.resolve("nope").unwrap_err());
    assert!(err.contains("no run matches `nope`"), "{err}");
    assert!(err.contains("rackbench runs"), "{err}");
    // `_` is not a wildcard.
    assert!(store.resolve("2026112_T").is_err());
    assert!(store.resolve("").is_err());
}

#[test]
fn list_runs_newest_first_with_summary() {
    let (_d, store) = tmp_store();
    store
        .import_run(&rich_run("r-a", Some("arm"), t0(0), 3))
        .unwrap();
    let mut other = rich_run("r-b", None, t0(60), 1);
    other.hosts.clear();
    store.import_run(&other).unwrap();
    let list = store.list_runs().unwrap();
    assert_eq!(
        list.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
        ["r-b", "r-a"]
    );
    assert_eq!(list[1].workloads, ["kv"]);
    assert_eq!(list[1].results, 3);
    // Every result of the fixture carries the invalid `errors` flag.
    assert_eq!(list[1].invalid, 3);
    assert_eq!(list[1].host, "altra-01");
    assert_eq!(list[1].label.as_deref(), Some("arm"));
    assert_eq!(list[1].status, Status::Interrupted);
    assert_eq!(list[1].created_at, t0(0));
    assert_eq!(list[0].host, "");
}

/// A run killed before its first result is listed with the workload its plan names (its
/// WORKLOADS column was blank); one with results, with those that ran.
#[test]
fn a_run_without_results_is_listed_with_its_plans_workload() {
    let (_d, store) = tmp_store();
    let mut run = rich_run("r-none", None, t0(0), 1);
    run.results.clear();
    run.plan = serde_json::json!({"workload": "mem"});
    store.import_run(&run).unwrap();
    let mut ran = rich_run("r-ran", None, t0(60), 1);
    ran.plan = serde_json::json!({"workload": "mem"});
    store.import_run(&ran).unwrap();
    let mut suite = rich_run("r-suite", None, t0(120), 1);
    suite.results.clear();
    suite.plan = serde_json::json!({"suite": [{"workload": "kv"}, {"workload": "net"}]});
    store.import_run(&suite).unwrap();
    let list = store.list_runs().unwrap();
    assert_eq!((list[2].id.as_str(), list[2].results), ("r-none", 0));
    assert_eq!(list[2].workloads, ["mem"]);
    assert_eq!(list[1].workloads, ["kv"]);
    assert_eq!(list[0].workloads, ["kv", "net"]);
}

/// Acceptance pass B, 11: a run whose only result failed its consistency check ended
/// `ok` (it ran to its end) and `rackbench runs` said `ok` alone; the list now counts the
/// results with an invalid flag (two flags on one result are one invalid result).
#[test]
fn list_runs_counts_invalid_results() {
    let (_d, store) = tmp_store();
    let mut run = rich_run("r-bad", None, t0(0), 2);
    run.status = Status::Ok;
    for r in &mut run.results {
        r.flags.clear();
    }
    run.results[1].flags = vec![
        model::Flag::invalid("consistency", "condition 1 fails"),
        model::Flag::invalid("zero_ops", "no operation completed"),
    ];
    run.results[0].flags = vec![model::Flag::warning("client_bound", "97%")];
    store.import_run(&run).unwrap();
    let list = store.list_runs().unwrap();
    assert_eq!(list[0].status, Status::Ok);
    assert_eq!((list[0].results, list[0].invalid), (2, 1));
}

#[test]
fn delete_removes_every_row() {
    let (_d, store) = tmp_store();
    store
        .import_run(&rich_run("r-del", None, t0(0), 2))
        .unwrap();
    store
        .import_run(&rich_run("r-keep", None, t0(1), 1))
        .unwrap();
    store.delete_run("r-del").unwrap();
    assert!(!store.has_run("r-del").unwrap());
    assert!(store.has_run("r-keep").unwrap());
    for (table, n) in [
        ("results", 1),
        ("metrics", 10),
        ("histograms", 2),
        ("telemetry", 3),
        ("telemetry_summary", 2),
        ("flags", 2),
        ("missing_metrics", 1),
        ("hosts", 2),
        ("idle_power", 1),
    ] {
        assert_eq!(count(&store, table), n, "{table}");
    }
    let err = format!("{:#}", store.delete_run("r-del").unwrap_err());
    assert!(err.contains("rackbench runs"), "{err}");
}

#[test]
fn writes_to_unknown_or_duplicate_runs_are_errors() {
    let (_d, store) = tmp_store();
    let run = rich_run("r-dup", None, t0(0), 1);
    store.import_run(&run).unwrap();
    let err = format!("{:#}", store.import_run(&run).unwrap_err());
    assert!(err.contains("already"), "{err}");
    let err = format!("{:#}", store.begin_run(&run).unwrap_err());
    assert!(err.contains("already"), "{err}");
    let err = format!(
        "{:#}",
        store.insert_result("r-none", &run.results[0]).unwrap_err()
    );
    assert!(err.contains("no run r-none"), "{err}");
    assert!(store.finish_run("r-none", Status::Ok, None).is_err());
    assert!(store.update_hosts("r-none", &[]).is_err());
    assert!(store.load_run("r-none").is_err());
    // A failed import leaves nothing behind (one transaction).
    assert_eq!(count(&store, "runs"), 1);
}

#[test]
fn a_second_handle_sees_committed_results() {
    // Another process (`rackbench runs` while a run writes) reads what was committed.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.sqlite");
    let writer = Store::open(&path).unwrap();
    let reader = Store::open(&path).unwrap();
    let mut header = rich_run("r-live", None, t0(0), 0);
    header.finished_at = None;
    writer.begin_run(&header).unwrap();
    writer
        .insert_result("r-live", &rich_result(0, "set", 1, t0(1)))
        .unwrap();
    assert_eq!(reader.load_run("r-live").unwrap().results.len(), 1);
    assert_eq!(reader.list_runs().unwrap()[0].results, 1);
}

#[test]
fn runs_started_together_on_one_new_store_all_succeed() {
    // Two `rackbench run`s started at the same moment on one store (a fresh file: both
    // create it, switch it to WAL and migrate it) must both store their runs.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.sqlite");
    let n = 6;
    let barrier = std::sync::Barrier::new(n);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let (path, barrier) = (&path, &barrier);
                s.spawn(move || -> anyhow::Result<()> {
                    barrier.wait();
                    let store = Store::open(path)?;
                    let id = format!("r-{i}");
                    let mut header = rich_run(&id, None, t0(i as i64), 0);
                    header.finished_at = None;
                    store.begin_run(&header)?;
                    for k in 0..5 {
                        store.insert_result(&id, &rich_result(k, "set", 1, t0(k as i64)))?;
                        let _ = store.list_runs()?;
                    }
                    store.finish_run(&id, Status::Ok, None)
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap().unwrap();
        }
    });
    let store = Store::open(&path).unwrap();
    let runs = store.list_runs().unwrap();
    assert_eq!(runs.len(), n);
    assert!(runs.iter().all(|r| r.results == 5), "{runs:?}");
}

#[test]
fn an_unused_store_is_removed_and_a_run_never_begins_in_a_removed_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.sqlite");
    let made = Store::open(&path).unwrap();
    // Another command opened the same new store meanwhile.
    let other = Store::open(&path).unwrap();
    assert!(made.remove_if_unused());
    assert!(!path.exists());
    let mut run = rich_run("r-late", None, t0(0), 0);
    run.status = Status::Running;
    let err = other.begin_run(&run).unwrap_err().to_string();
    assert!(err.contains("removed or replaced"), "{err}");

    // A store with a run in it is kept.
    let used = Store::open(&path).unwrap();
    used.begin_run(&run).unwrap();
    assert!(!used.remove_if_unused());
    assert!(path.exists());
}

/// The acceptance tester's damaged store said only "database disk image is malformed:
/// Error code 11": no file, no next step.
#[test]
fn a_damaged_store_is_named_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.sqlite");
    let store = Store::open(&path).unwrap();
    let run = rich_run("r-damaged", None, t0(0), 20);
    store.import_run(&run).unwrap();
    drop(store);
    // Damage every page but the first (the schema), as a bad disk or a torn copy would.
    let mut bytes = std::fs::read(&path).unwrap();
    for page in (4096..bytes.len()).step_by(4096) {
        bytes[page..page + 64].fill(0xff);
    }
    std::fs::write(&path, &bytes).unwrap();
    let e = Store::open(&path)
        .and_then(|s| s.load_run(&run.id))
        .unwrap_err();
    assert!(is_damaged(&e), "{e:#}");
    let e = explain_damage(e, &path);
    // Explained once, however many layers name it.
    let e = explain_damage(e.context("loading run r-damaged"), &path);
    let text = format!("{e:#}");
    assert_eq!(text.matches("is damaged").count(), 1, "{text}");
    let p = path.display().to_string();
    assert!(
        text.contains(&format!("the results store {p} is damaged")),
        "{text}"
    );
    assert!(text.contains(&format!("sqlite3 {p} .recover")), "{text}");
    assert!(text.contains("--db NEW_PATH"), "{text}");
    // Any other error is left as it is.
    let other = anyhow::anyhow!("no such run");
    assert_eq!(format!("{:#}", explain_damage(other, &path)), "no such run");
}

/// Two runs created in the same instant (imported, or a clock stepped back): `latest`, a
/// label and the listing take the one stored last, whatever their ids (`id DESC` took
/// the larger id, so the newest import could lose to an older one).
#[test]
fn runs_created_together_resolve_by_insertion() {
    let (_d, store) = tmp_store();
    store
        .import_run(&rich_run("r-b-first", Some("x"), t0(0), 1))
        .unwrap();
    store
        .import_run(&rich_run("r-a-second", Some("x"), t0(0), 1))
        .unwrap();
    assert_eq!(store.resolve("latest").unwrap(), "r-a-second");
    assert_eq!(store.resolve("x").unwrap(), "r-a-second");
    let list = store.list_runs().unwrap();
    assert_eq!(list[0].id, "r-a-second");
    // A later creation time still wins over a later insertion.
    store
        .import_run(&rich_run("r-c-older", None, t0(-60), 1))
        .unwrap();
    assert_eq!(store.resolve("latest").unwrap(), "r-a-second");
}

/// A read command neither migrates an older schema nor writes anything else: the file
/// keeps its version and bytes, and its runs read back exactly.
#[test]
fn read_only_open_reads_an_older_schema_without_migrating_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.sqlite");
    let run = rich_run("r-old", Some("arm"), t0(0), 2);
    {
        let old = Store::open_at_version(&path, 1).unwrap();
        old.import_run(&run).unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let store = Store::open_read_only(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), 1);
    assert_eq!(store.resolve("latest").unwrap(), "r-old");
    assert_eq!(store.load_run("r-old").unwrap(), stored_before_v6(&run));
    assert_eq!(store.list_runs().unwrap().len(), 1);
    // Nothing it can write: a write is refused by SQLite, not attempted quietly.
    assert!(store
        .import_run(&rich_run("r-new", None, t0(9), 1))
        .is_err());
    drop(store);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the file is unchanged"
    );
    // A command that writes migrates it.
    assert_eq!(
        Store::open(&path).unwrap().schema_version().unwrap(),
        SCHEMA_VERSION
    );
}

#[test]
fn read_only_open_refuses_what_it_cannot_read_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let msg = |p: &Path| format!("{:#}", Store::open_read_only(p).err().expect("refused"));
    let missing = dir.path().join("typo.sqlite");
    assert!(msg(&missing).contains("no results store at"));
    assert!(!missing.exists(), "reading makes no store");
    let empty = dir.path().join("empty.sqlite");
    std::fs::write(&empty, b"").unwrap();
    let m = msg(&empty);
    assert!(m.contains("holds no results store yet"), "{m}");
    assert_eq!(std::fs::read(&empty).unwrap(), b"", "not made a store");
    let foreign = dir.path().join("other.sqlite");
    Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE t (x);")
        .unwrap();
    assert!(msg(&foreign).contains("not a rackbench results store"));
    let newer = dir.path().join("new.sqlite");
    Store::open(&newer)
        .unwrap()
        .lock()
        .pragma_update(None, "user_version", SCHEMA_VERSION as i64 + 1)
        .unwrap();
    assert!(msg(&newer).contains("upgrade rackbench"));
    let junk = dir.path().join("junk.sqlite");
    std::fs::write(&junk, vec![b'z'; 4096]).unwrap();
    let m = msg(&junk);
    assert!(m.contains("junk.sqlite") && m.contains("--db"), "{m}");
}

/// Opened read-only, a run whose process is gone reads as interrupted with why, as a
/// command that writes would record it, and the file still says `running`.
#[test]
fn read_only_open_shows_an_abandoned_run_as_interrupted_without_writing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.sqlite");
    let mut header = rich_run("r-killed", None, t0(0), 0);
    header.finished_at = None;
    header.error = None;
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = ProcessId::of(child.id());
    child.wait().unwrap();
    {
        let store = Store::open(&path).unwrap();
        store.begin_run(&header).unwrap();
        let (pid, start) = dead.map_or((child.id(), 1), |p| (p.pid, p.starttime));
        store
            .lock()
            .execute(
                "UPDATE run_owner SET pid = ?1, starttime = ?2 WHERE run_id = 'r-killed'",
                params![pid, start],
            )
            .unwrap();
    }
    let ro = Store::open_read_only(&path).unwrap();
    let run = ro.load_run("r-killed").unwrap();
    assert_eq!(run.status, Status::Interrupted);
    assert!(run.error.unwrap().contains("ended without finishing"));
    assert_eq!(ro.list_runs().unwrap()[0].status, Status::Interrupted);
    let stored: String = ro
        .lock()
        .query_row("SELECT status FROM runs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(stored, "running", "nothing written");
}

/// The runs of one export go in together or not at all; another export is separate.
#[test]
fn import_all_is_all_or_nothing() {
    let (_d, store) = tmp_store();
    let a = rich_run("r-a", None, t0(0), 1);
    let b = rich_run("r-b", None, t0(1), 1);
    store.import_run(&a).unwrap();
    let mut bad = rich_run("r-bad", None, t0(2), 1);
    bad.format_version = model::RECORD_FORMAT_VERSION + 1;
    assert!(store.import_all(&[b.clone(), bad]).is_err());
    assert!(
        !store.has_run("r-b").unwrap(),
        "nothing of a refused export"
    );
    let done = store.import_all(&[a.clone(), b.clone()]).unwrap();
    assert_eq!(done.imported, ["r-b"]);
    assert_eq!(done.skipped, ["r-a"]);
    assert_eq!(store.load_run("r-b").unwrap(), b);
}

#[test]
fn an_immutable_uri_escapes_what_a_uri_reads() {
    assert_eq!(
        immutable_uri(Path::new("/data/a b?#%é.sqlite")),
        "file:/data/a%20b%3F%23%25%C3%A9.sqlite?immutable=1"
    );
}

/// A result's settings (every knob it ran with, defaults included) round-trip; a result
/// stored before they were kept (a v4 store, read as it is or migrated) loads with none.
#[test]
fn settings_round_trip_and_an_older_store_loads_without_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut run = rich_run("r-set", Some("arm"), t0(0), 2);
    run.results[0].settings = [
        ("pipeline".to_string(), serde_json::json!(1)),
        ("clients".to_string(), serde_json::json!(50)),
    ]
    .into();
    let path = dir.path().join("new.sqlite");
    let store = Store::open(&path).unwrap();
    store.import_run(&run).unwrap();
    assert_eq!(store.load_run("r-set").unwrap(), run);
    drop(store);
    assert_eq!(
        Store::open_read_only(&path)
            .unwrap()
            .load_run("r-set")
            .unwrap(),
        run
    );

    // Stored before settings were kept (schema v4): none, read only or migrated.
    let old_path = dir.path().join("v4.sqlite");
    {
        let old = Store::open_at_version(&old_path, schema::SETTINGS_SINCE - 1).unwrap();
        old.import_run(&run).unwrap();
    }
    let mut without = run.clone();
    without.results[0].settings.clear();
    let without = stored_before_v6(&without);
    assert_eq!(
        Store::open_read_only(&old_path)
            .unwrap()
            .load_run("r-set")
            .unwrap(),
        without
    );
    let migrated = Store::open(&old_path).unwrap();
    assert_eq!(migrated.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(migrated.load_run("r-set").unwrap(), without);
}

/// `run` as a store older than v6 keeps it: its idle power without the host's CPU and
/// the warnings beside it.
fn stored_before_v6(run: &RunRecord) -> RunRecord {
    let mut r = run.clone();
    for i in &mut r.idle_power {
        i.cpus.clear();
        i.flags.clear();
    }
    r
}

/// A test's provisional result (stored while it ran) is replaced in place by its final
/// one; one the final write never replaced is closed with the run, never left `running`
/// in a finished run (review s16, 4).
#[test]
fn a_provisional_result_is_replaced_in_place_or_closed_with_the_run() {
    let (_d, store) = tmp_store();
    let mut header = rich_run("r-prov", Some("x86"), t0(0), 0);
    header.finished_at = None;
    store.begin_run(&header).unwrap();
    let first = rich_result(0, "set", 1, t0(1));
    store.insert_result(&header.id, &first).unwrap();
    let mut partial = rich_result(1, "ramp", 1, t0(2));
    partial.status = Status::Running;
    let at = store.put_result(&header.id, None, &partial).unwrap();
    assert_eq!(at, 1);
    // Each partial in the same place, and the final one too.
    assert_eq!(
        store.put_result(&header.id, Some(at), &partial).unwrap(),
        at
    );
    let mut done = partial.clone();
    done.status = Status::Ok;
    store.put_result(&header.id, Some(at), &done).unwrap();
    let back = store.load_run(&header.id).unwrap();
    assert_eq!(back.results, vec![first.clone(), done]);
    // A provisional whose final write failed: closed with the run.
    let mut left = rich_result(2, "levels", 1, t0(3));
    left.status = Status::Running;
    left.flags
        .push(model::Flag::warning("partial", "at a checkpoint"));
    store.put_result(&header.id, None, &left).unwrap();
    store
        .finish_run(&header.id, Status::Failed, Some("disk full"))
        .unwrap();
    let back = store.load_run(&header.id).unwrap();
    assert_eq!(back.results[2].status, Status::Interrupted);
    assert_eq!(back.results[2].error.as_deref(), Some("disk full"));
    assert_eq!(back.results[0], first);
    // The run as measured (the file the runner leaves beside the store when it
    // refused that final result) holds as many results, the last one final: an import
    // puts it in place of the provisional copy (audit, 1).
    let mut measured = back.clone();
    measured.results[2] = rich_result(2, "levels", 1, t0(3));
    // Its final result interrupted too (Ctrl-C, then the store refused it): still the
    // final one, where the store has the checkpoint's.
    measured.results[2].status = Status::Interrupted;
    let done = store.import_all(std::slice::from_ref(&measured)).unwrap();
    assert_eq!(done.imported, [header.id.clone()]);
    assert_eq!(
        store.load_run(&header.id).unwrap().results,
        measured.results
    );
    // The other way round, a copy whose result is only provisional, holds less; and
    // one that differs from a final result (an edited export) is not more of it.
    let mut older = measured.clone();
    older.results[2].status = Status::Running;
    older.results[2]
        .flags
        .push(model::Flag::warning("partial", "at a checkpoint"));
    let done = store.import_all(&[older]).unwrap();
    assert_eq!(done.differing, [header.id.clone()]);
    let mut older = measured.clone();
    older.results[2].status = Status::Ok;
    let done = store.import_all(&[older]).unwrap();
    assert_eq!(done.differing, [header.id.clone()]);
    assert_eq!(
        store.load_run(&header.id).unwrap().results,
        measured.results
    );
    // A copy with one more result and a stored figure changed is no more of this run:
    // it replaced the measured figure, said as imported.
    let mut edited = measured.clone();
    edited.results[0].metrics[0].value += 1000.0;
    edited.results.push(rich_result(3, "levels", 2, t0(4)));
    let done = store.import_all(std::slice::from_ref(&edited)).unwrap();
    assert_eq!(done.differing, [header.id.clone()]);
    assert!(!store.import_more_of(&edited).unwrap());
    assert_eq!(
        store.load_run(&header.id).unwrap().results,
        measured.results
    );
    // A point's check flagged it after it was stored: a file without that flag (taken
    // off, or from before) would make an invalid point valid, and one without a stored
    // host would lose it; one with both, and more flags and hosts, is more of this run.
    let checked = model::Flag::invalid("verify_failed", "checked after");
    store
        .add_flags(
            &header.id,
            &[measured.results[0].step],
            std::slice::from_ref(&checked),
        )
        .unwrap();
    let mut more = measured.clone();
    more.results.push(rich_result(3, "levels", 2, t0(4)));
    assert!(
        !store.import_more_of(&more).unwrap(),
        "the stored flag lost"
    );
    more.results[0].flags.push(checked);
    let mut fewer = more.clone();
    fewer.hosts.pop().expect("the run has hosts");
    assert!(!store.import_more_of(&fewer).unwrap(), "a stored host lost");
    more.results[0]
        .flags
        .push(model::Flag::warning("later", "found after"));
    // Its label, command or a host's disclosure edited: another run, which replaced the
    // stored ones.
    let mut relabelled = more.clone();
    relabelled.label = Some("EDITED".into());
    assert!(!store.import_more_of(&relabelled).unwrap(), "label edited");
    let mut recommanded = more.clone();
    recommanded.command.push_str(" --edited");
    assert!(
        !store.import_more_of(&recommanded).unwrap(),
        "command edited"
    );
    let mut other_cpu = more.clone();
    other_cpu.hosts[0].facts.insert(
        "cpu.model".into(),
        model::Fact::known("AMD EPYC 9999 (edited)"),
    );
    assert!(!store.import_more_of(&other_cpu).unwrap(), "a fact edited");
    // A fact the run says more of as it goes on (`server.cpus` per sweep point, here
    // the server's version) is no other run.
    more.hosts[0].facts.insert(
        "software.redis-server".into(),
        model::Fact::known("at kv instances=1: 7.0.15 | at kv instances=2: 7.0.15"),
    );
    assert!(store.import_more_of(&more).unwrap());
    assert_eq!(store.load_run(&header.id).unwrap().results, more.results);
}

/// A run exported while it ran, imported, and exported again later still running
/// with more: the later one replaces the first, interrupted as the first was (not left
/// `running`, where nothing would close it), and importing an export a second time is
/// the same run, not one that differs (audit, 3 and 5).
#[test]
fn a_later_export_of_a_running_run_replaces_the_first_and_stays_closed() {
    let (_d, store) = tmp_store();
    let mut first = rich_run("r-live", None, t0(0), 1);
    first.status = Status::Running;
    first.error = None;
    first.finished_at = None;
    first.results[0].status = Status::Running;
    first.results[0]
        .flags
        .push(model::Flag::warning("partial", "at a checkpoint"));
    store.import_all(std::slice::from_ref(&first)).unwrap();
    let again = store.import_all(std::slice::from_ref(&first)).unwrap();
    assert_eq!(again.skipped, [first.id.clone()]);
    assert!(again.differing.is_empty(), "{again:?}");
    let mut later = first.clone();
    later.results[0] = rich_result(0, "set", 1, t0(1));
    later.results.push(rich_result(1, "get", 1, t0(9)));
    later.results[1].status = Status::Running;
    let done = store.import_all(std::slice::from_ref(&later)).unwrap();
    assert_eq!(done.imported, [later.id.clone()]);
    let back = store.load_run(&later.id).unwrap();
    assert_eq!(back.status, Status::Interrupted);
    assert!(back.error.unwrap().contains("still running"));
    assert_eq!(back.results[0], later.results[0], "the final result");
    assert_eq!(back.results[1].status, Status::Interrupted);
}

/// A provisional result's samples stay where it is stored again, the new ones after
/// them (a long test's checkpoints write each sample once: acceptance pass G, 5), and
/// its other figures are the new ones'; the final result replaces them all.
#[test]
fn a_provisional_result_keeps_its_samples_and_adds_the_new_ones() {
    let (_d, store) = tmp_store();
    let mut header = rich_run("r-samples", Some("x86"), t0(0), 0);
    header.finished_at = None;
    store.begin_run(&header).unwrap();
    let first = rich_result(0, "set", 1, t0(1));
    store.insert_result(&header.id, &first).unwrap();
    let full = rich_result(1, "ramp", 1, t0(2));
    assert!(
        full.telemetry.len() >= 2,
        "the fixture has samples to split"
    );
    let mut partial = full.clone();
    partial.status = Status::Running;
    partial.telemetry.truncate(1);
    let at = store.put_result(&header.id, None, &partial).unwrap();
    // The next checkpoint: the samples since, and figures of its own.
    let mut next = full.clone();
    next.status = Status::Running;
    next.telemetry.drain(..1);
    next.metrics.truncate(1);
    assert_eq!(
        store
            .put_result_adding_samples(&header.id, Some(at), &next)
            .unwrap(),
        at
    );
    let back = store.load_run(&header.id).unwrap();
    assert_eq!(back.results.len(), 2);
    assert_eq!(back.results[0], first);
    assert_eq!(back.results[1].telemetry, full.telemetry);
    assert_eq!(back.results[1].metrics, next.metrics);
    assert_eq!(back.results[1].status, Status::Running);
    // The final one in the same place, with every sample once.
    let mut done = full.clone();
    done.status = Status::Ok;
    store.put_result(&header.id, Some(at), &done).unwrap();
    let back = store.load_run(&header.id).unwrap();
    assert_eq!(back.results, vec![first, done]);
}

/// A run is listed by the host its figures are of: the system under test, or a net pair
/// as written on the command line, never the controller that only drove the hosts
/// (acceptance N, 8: `runs` named this machine for `rbh2>rbh1`).
#[test]
fn a_run_is_listed_by_its_system_under_test_or_its_pair() {
    let host = |host: &str, role: &str| HostDisclosure {
        host: host.into(),
        role: role.into(),
        facts: BTreeMap::new(),
    };
    let pair = [
        host("local", "controller"),
        host("rbh1", "receiver"),
        host("rbh2", "sender"),
    ];
    assert_eq!(listing_host(&pair), "rbh2>rbh1");
    assert_eq!(summary_host(&pair), "rbh1");
    let served = [
        host("local", "controller"),
        host("rbh2", "loadgen"),
        host("rbh1", "sut"),
    ];
    assert_eq!(
        (listing_host(&served), summary_host(&served)),
        ("rbh1".into(), "rbh1".into())
    );
    // Both ends on one host (a loopback pair): that host. Several pairs (a `--hosts`
    // matrix): its hosts, not the first receiver alone (acceptance K, 9).
    let looped = [host("local", "receiver+sender")];
    assert_eq!(listing_host(&looped), "local");
    let two = [
        host("local", "controller"),
        host("rbh1", "receiver"),
        host("rbh2", "sender+receiver"),
        host("rbh3", "sender"),
    ];
    assert_eq!(listing_host(&two), "rbh1,rbh2,rbh3");
    // Only a controller known (an older run): still named.
    assert_eq!(listing_host(&[host("local", "controller")]), "local");
}

/// A label that several runs carry resolves to the newest, and says so; an id, `latest`
/// or a label of one run says nothing (acceptance P, 4).
#[test]
fn a_label_of_several_runs_says_which_it_took() {
    let (_d, store) = tmp_store();
    let old = rich_run("20261120T210703-aaaaaa", Some("xeon"), t0(0), 1);
    let new = rich_run("20261120T220703-bbbbbb", Some("xeon"), t0(3600), 1);
    let lone = rich_run("20261120T230703-cccccc", Some("epyc"), t0(7200), 1);
    for r in [&old, &new, &lone] {
        store.import_run(r).unwrap();
    }
    let id = store.resolve("xeon").unwrap();
    assert_eq!(id, new.id);
    let note = store.label_note("xeon", &id).unwrap().unwrap();
    assert!(
        note.contains("labels 2 runs") && note.contains(&new.id),
        "{note}"
    );
    assert_eq!(store.label_note("epyc", &lone.id).unwrap(), None);
    assert_eq!(store.label_note(&new.id, &new.id).unwrap(), None);
    assert_eq!(store.label_note("latest", &lone.id).unwrap(), None);
}

/// A crypto result stored before `model::unread_by` kept the knobs its test does not read
/// (an RSA test's `buffer_sizes` and `bits`): read from the store or from an export, it
/// meets a new run's at its test's point, not beside it.
#[test]
fn knobs_a_test_does_not_read_are_dropped_from_old_records_when_read() {
    let (_d, store) = tmp_store();
    let mut run = rich_run("20261120T210703-cccccc", None, t0(0), 1);
    for (i, test) in ["rsa2048", "sha256"].into_iter().enumerate() {
        let mut r = rich_result(i as u32, test, 1, t0(1));
        r.workload = "crypto".into();
        for m in [&mut r.params, &mut r.settings] {
            m.insert("bits".into(), serde_json::json!([2048]));
            m.insert("buffer_sizes".into(), serde_json::json!([16]));
        }
        run.results.push(r);
    }
    store.import_run(&run).unwrap();
    let json = export::to_json(std::slice::from_ref(&run));
    for back in [
        store.load_run(&run.id).unwrap(),
        export::from_json(&json).unwrap().remove(0),
    ] {
        let of = |test: &str| back.results.iter().find(|r| r.test == test).unwrap();
        for m in [&of("rsa2048").params, &of("rsa2048").settings] {
            assert!(
                !m.contains_key("bits") && !m.contains_key("buffer_sizes"),
                "{m:?}"
            );
        }
        for m in [&of("sha256").params, &of("sha256").settings] {
            assert!(
                !m.contains_key("bits") && m.contains_key("buffer_sizes"),
                "{m:?}"
            );
        }
    }
    // The same record imported again, knobs and all, is the stored one, not a copy that
    // differs from it.
    let again = store.import_all(std::slice::from_ref(&run)).unwrap();
    assert_eq!(again.skipped, [run.id.clone()]);
    assert!(again.differing.is_empty(), "{again:?}");
}
