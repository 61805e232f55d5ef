//! The JSON export contract: `schema/run.schema.json` must accept what rackbench writes
//! and reject a document with a field missing, renamed or of the wrong kind. The lead adds
//! a check of a real `rackbench run` output here once `run` exists.

mod common;

use serde_json::Value;

const SCHEMA: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../schema/run.schema.json"
));

fn compiled() -> jsonschema::JSONSchema {
    let schema: Value = serde_json::from_str(SCHEMA).expect("schema is JSON");
    jsonschema::JSONSchema::options()
        .with_draft(jsonschema::Draft::Draft7)
        .compile(&schema)
        .expect("schema compiles")
}

/// Validation errors as text (empty when valid).
fn errors(doc: &Value) -> Vec<String> {
    let schema = compiled();
    let result = schema.validate(doc);
    match result {
        Ok(()) => Vec::new(),
        Err(errs) => errs
            .map(|e| format!("{} at {}", e, e.instance_path))
            .collect(),
    }
}

fn exported() -> Value {
    let runs = vec![
        store::fixtures::rich_run(
            "20261120T210703-aaaaaa",
            Some("arm"),
            store::fixtures::t0(0),
            3,
        ),
        store::fixtures::rich_run("20261120T210803-bbbbbb", None, store::fixtures::t0(60), 0),
    ];
    serde_json::from_str(&store::export::to_json(&runs)).expect("export is JSON")
}

/// A pointer into the first run's first result, `/runs/0/results/0` + `rest`.
fn result0(rest: &str) -> String {
    format!("/runs/0/results/0{rest}")
}

fn remove(doc: &mut Value, pointer: &str) {
    let (parent, key) = pointer.rsplit_once('/').expect("pointer has a parent");
    let obj = doc
        .pointer_mut(parent)
        .and_then(Value::as_object_mut)
        .unwrap_or_else(|| panic!("no object at {parent}"));
    assert!(obj.remove(key).is_some(), "no field {pointer}");
}

fn rename(doc: &mut Value, pointer: &str, to: &str) {
    let (parent, key) = pointer.rsplit_once('/').expect("pointer has a parent");
    let obj = doc
        .pointer_mut(parent)
        .and_then(Value::as_object_mut)
        .unwrap();
    let v = obj
        .remove(key)
        .unwrap_or_else(|| panic!("no field {pointer}"));
    obj.insert(to.to_string(), v);
}

#[test]
fn export_of_a_rich_run_is_valid() {
    let errs = errors(&exported());
    assert!(errs.is_empty(), "{errs:#?}");
}

/// A count /proc/stat did not make (no `ctxt` or `intr` line) is null, not 0, in a
/// summary and a sample: the schema takes it, and a number stays a number.
#[test]
fn counts_not_made_are_null() {
    let mut doc = exported();
    let mut nulled = 0;
    for pointer in [
        result0("/telemetry_summary/0/ctxt_per_s"),
        result0("/telemetry_summary/0/intr_per_s"),
    ] {
        let v = doc
            .pointer_mut(&pointer)
            .unwrap_or_else(|| panic!("no {pointer}"));
        assert!(v.is_number(), "{pointer}: {v}");
        *v = Value::Null;
        nulled += 1;
    }
    assert_eq!(nulled, 2);
    let errs = errors(&doc);
    assert!(errs.is_empty(), "{errs:#?}");
    *doc.pointer_mut(&result0("/telemetry_summary/0/ctxt_per_s"))
        .unwrap() = Value::String("0".into());
    assert!(!errors(&doc).is_empty(), "a string count was taken");
}

#[test]
fn minimal_run_is_valid() {
    // Optional fields absent (finished_at, error, labels, power_missing...).
    let mut doc = exported();
    remove(&mut doc, "/runs/0/finished_at");
    remove(&mut doc, "/runs/0/error");
    remove(&mut doc, &result0("/error"));
    remove(&mut doc, &result0("/metrics/1/labels"));
    remove(&mut doc, &result0("/telemetry_summary/1/power_missing"));
    let errs = errors(&doc);
    assert!(errs.is_empty(), "{errs:#?}");
}

#[test]
fn missing_fields_are_rejected() {
    for pointer in [
        "/format_version".to_string(),
        "/runs/0/id".to_string(),
        "/runs/0/created_at".to_string(),
        "/runs/0/status".to_string(),
        "/runs/0/hosts/0/facts".to_string(),
        result0("/headline"),
        result0("/metrics/0/unit"),
        result0("/histograms/0/summary/p99_ns"),
        result0("/telemetry/0/cpus/0/irq_pct"),
        result0("/telemetry_summary/0/power/0/whole_system"),
        result0("/flags/0/severity"),
        "/runs/0/idle_power/0/power/0/mean_watts".to_string(),
    ] {
        let mut doc = exported();
        remove(&mut doc, &pointer);
        assert!(
            !errors(&doc).is_empty(),
            "schema accepted a document without {pointer}"
        );
    }
}

#[test]
fn renamed_fields_are_rejected() {
    for (pointer, to) in [
        ("/runs/0/rackbench_version".to_string(), "version"),
        (result0("/duration_s"), "duration"),
        (result0("/metrics/0/value"), "val"),
        (result0("/histograms/0/summary/p999_ns"), "p99_9_ns"),
        (result0("/telemetry/0/nics/0/rx_bytes_per_s"), "rx_bps"),
    ] {
        let mut doc = exported();
        rename(&mut doc, &pointer, to);
        assert!(
            !errors(&doc).is_empty(),
            "schema accepted {pointer} renamed to {to}"
        );
    }
}

#[test]
fn wrong_values_are_rejected() {
    let cases: Vec<(String, Value)> = vec![
        ("/runs/0/status".into(), Value::from("done")),
        (result0("/flags/0/severity"), Value::from("error")),
        (result0("/histograms/0/kind"), Value::from("mean")),
        (result0("/metrics/0/value"), Value::Null), // a NaN serialized by serde_json
        (result0("/metrics/0/value"), Value::from("123")),
        (result0("/step"), Value::from(-1)),
        ("/runs/0/created_at".into(), Value::from("yesterday")),
        ("/format_version".into(), Value::from(2)),
    ];
    for (pointer, value) in cases {
        let mut doc = exported();
        *doc.pointer_mut(&pointer).unwrap() = value.clone();
        assert!(
            !errors(&doc).is_empty(),
            "schema accepted {pointer} = {value}"
        );
    }
}

/// The JSON a real `rackbench run kv` writes (against redis-server it launches) and the
/// export of that run both match the committed schema.
#[test]
fn real_run_output_matches_the_schema() {
    if !common::have("redis-server", "redis-server") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let out = common::bin()
        .args([
            "--db",
            db.to_str().unwrap(),
            "run",
            "kv",
            "-c",
            "4",
            "-n",
            "2000",
            "-P",
            "1,4",
            "-t",
            "set,get,mix",
            "--json",
            "-q",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    let doc = serde_json::json!({"format_version": 1, "runs": [run]});
    let errs = errors(&doc);
    assert!(
        errs.is_empty(),
        "run --json output breaks the schema: {errs:#?}"
    );
    let exp = common::bin()
        .args([
            "--db",
            db.to_str().unwrap(),
            "export",
            "latest",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(
        exp.status.success(),
        "{}",
        String::from_utf8_lossy(&exp.stderr)
    );
    let doc: Value = serde_json::from_slice(&exp.stdout).unwrap();
    let errs = errors(&doc);
    assert!(errs.is_empty(), "export breaks the schema: {errs:#?}");
}
