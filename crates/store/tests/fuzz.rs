//! Fuzz target for `rackbench import`: an exported JSON document from elsewhere,
//! mutated as text and as structure (run ids that look like paths, negative, huge or
//! missing durations, bad base64 histograms, deep nesting), read and stored.
//! See crates/fuzzkit for the knobs (`RACKBENCH_FUZZ_CASES`, `RACKBENCH_FUZZ_SEED`).

use fuzzkit::{mutate, pick, Fuzz, Rng, SmallRng};
use rackbench_store::export::{from_json, to_json, valid_run_id};
use rackbench_store::{fixtures, Store};
use serde_json::{json, Value};

#[global_allocator]
static ALLOC: fuzzkit::TrackingAlloc = fuzzkit::TrackingAlloc;

const WORDS: &[&str] = &[
    "\"../../x\"",
    "\"/etc/passwd\"",
    "\"latest\"",
    "-1",
    "-1e308",
    "1e400",
    "null",
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
    "{\"a\":",
    "\"%%%\"",
    "\"\\u0000\"",
];

/// Values to put where a run's fields were.
fn odd_value(rng: &mut SmallRng) -> Value {
    let deep = (0..rng.gen_range(1..300)).fold(json!(1), |v, _| json!([v]));
    pick(
        rng,
        &[
            json!("../../x"),
            json!("../../../tmp/evil"),
            json!("/abs/path"),
            json!("a/b"),
            json!(""),
            json!("latest"),
            json!("x".repeat(100)),
            json!(-1.0),
            json!(-1e308),
            json!(1e308),
            json!(0),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(null),
            json!("!!not base64!!"),
            json!("AAAA"),
            json!("HISTFAAAACR4nJNpmSzMwMDAyMDEwMDECKI5mJhYWNmYWNkZAAwhAWo="),
            json!([]),
            json!({}),
            deep,
        ],
    )
    .clone()
}

/// Every (path to a field, its value) of a JSON tree, objects and arrays included.
fn paths(v: &Value, at: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    out.push(at.clone());
    let kids: Vec<(String, &Value)> = match v {
        Value::Object(m) => m.iter().map(|(k, v)| (k.clone(), v)).collect(),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .map(|(i, v)| (i.to_string(), v))
            .collect(),
        _ => return,
    };
    for (k, child) in kids {
        at.push(k);
        paths(child, at, out);
        at.pop();
    }
}

/// Replace the value at `path` (nothing when an earlier change removed it).
fn set(v: &mut Value, path: &[String], new: Value) {
    let mut cur = v;
    for k in path {
        let next = match cur {
            Value::Object(m) => m.get_mut(k),
            Value::Array(a) => k.parse::<usize>().ok().and_then(|i| a.get_mut(i)),
            _ => None,
        };
        match next {
            Some(n) => cur = n,
            None => return,
        }
    }
    *cur = new;
}

/// An export document mutated: a field replaced by an odd value (the run id, a
/// duration and a histogram most often), or the text itself mutated.
fn document(rng: &mut SmallRng, base: &Value, fields: &[Vec<String>]) -> String {
    let mut doc = base.clone();
    if rng.gen_range(0..4) == 0 {
        return String::from_utf8_lossy(&mutate(rng, to_text(&doc).as_bytes(), WORDS)).into_owned();
    }
    for _ in 0..rng.gen_range(1..3) {
        let path: Vec<String> = match rng.gen_range(0..5) {
            0 => ["runs", "0", "id"].map(String::from).to_vec(),
            1 => ["runs", "0", "results", "0", "duration_s"]
                .map(String::from)
                .to_vec(),
            2 => ["runs", "0", "results", "1", "histograms", "0", "encoded"]
                .map(String::from)
                .to_vec(),
            _ => pick(rng, fields).clone(),
        };
        set(&mut doc, &path, odd_value(rng));
    }
    to_text(&doc)
}

fn to_text(v: &Value) -> String {
    serde_json::to_string(v).unwrap()
}

#[test]
fn fuzz_import_json() {
    let runs = vec![fixtures::rich_run(
        "20261120T210703-aaaaaa",
        Some("arm"),
        fixtures::t0(0),
        2,
    )];
    let base: Value = serde_json::from_str(&to_json(&runs)).unwrap();
    let mut fields = Vec::new();
    paths(&base, &mut Vec::new(), &mut fields);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store").join("results.db");
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    let store = Store::open(&db).unwrap();
    Fuzz::new("import_json").cases(600).max_alloc(48 << 20).run(
        |rng| document(rng, &base, &fields),
        |text| {
            let Ok(runs) = from_json(text) else { return };
            for run in &runs {
                // What is accepted is a run rackbench could have written.
                assert!(valid_run_id(&run.id), "accepted id {:?}", run.id);
                for r in &run.results {
                    assert!(r.duration_s.is_finite() && r.duration_s >= 0.0);
                    assert!(r.histograms.iter().all(|h| h.histogram().is_ok()));
                }
                if store.has_run(&run.id).unwrap() {
                    continue;
                }
                // Stored whole, read back the same, and nothing written beside the store.
                if store.import_run(run).is_ok() {
                    assert_eq!(&store.load_run(&run.id).unwrap(), run);
                }
            }
            for e in std::fs::read_dir(dir.path()).unwrap() {
                assert_eq!(e.unwrap().file_name(), "store");
            }
            for e in std::fs::read_dir(db.parent().unwrap()).unwrap() {
                let name = e.unwrap().file_name().to_string_lossy().into_owned();
                assert!(
                    name.starts_with("results.db"),
                    "{name} written beside the store"
                );
            }
        },
    );
}
