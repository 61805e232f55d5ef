//! A knob left at its default: its effective value (a result's `settings`) stands in for
//! the flag not typed when points are matched (`compare`, `report --at`) and disclosed;
//! a record stored before settings were kept reads as it always did.

mod common;

use common::{kv_run, Spec};
use model::RunRecord;
use rackbench_report as report;

/// A run that typed `--instances 1,2` (each result says `instances`).
fn swept() -> RunRecord {
    let mut run = kv_run(&Spec {
        label: "I",
        id: "20261120T230000-iiiiii",
        instances: &[1, 2],
        reps: 2,
        ..Spec::default()
    });
    for r in &mut run.results {
        r.settings = r.params.clone();
        r.settings.insert("clients".into(), serde_json::json!(50));
    }
    run
}

/// A run of one instance, the default, not typed; `settings`: whether its results say
/// the settings they ran with (false: stored before they were kept).
fn defaulted(settings: bool) -> RunRecord {
    let mut run = kv_run(&Spec {
        label: "D",
        id: "20261120T240000-dddddd",
        instances: &[1],
        reps: 2,
        seed: 2,
        ..Spec::default()
    });
    for r in &mut run.results {
        r.params.remove("instances");
        if settings {
            r.settings = r.params.clone();
            r.settings.insert("instances".into(), serde_json::json!(1));
            r.settings.insert("clients".into(), serde_json::json!(50));
        }
    }
    run
}

fn at(k: &str, v: &str) -> report::Selection {
    report::Selection {
        at: vec![(k.into(), v.into())],
        ..Default::default()
    }
}

/// `report I D --at instances=2` showed D, which ran one instance (a default it never
/// stored), under "at instances=2" with a Difference: a point without the key matched
/// any value. Now a point is at a value only when it ran with it, given or defaulted.
#[test]
fn at_takes_a_point_only_at_the_value_it_ran_with() {
    for settings in [false, true] {
        let runs = vec![swept(), defaulted(settings)];
        let s = report::summary_with(&runs, &at("instances", "2"));
        assert!(!s.rows.is_empty());
        for row in &s.rows {
            assert!(row.perf[0].is_some(), "{}: I ran 2 instances", row.label);
            assert_eq!(
                row.perf[1], None,
                "{}: D ran 1 (settings {settings})",
                row.label
            );
        }
        assert!(s.differences[0].geomean.is_none(), "{:?}", s.differences);
    }
    // At its default value: the run that says it ran with it is taken; one whose
    // records do not say is not.
    let s = report::summary_with(&[swept(), defaulted(true)], &at("instances", "1"));
    assert!(s.rows.iter().all(|r| r.perf[1].is_some()), "{:?}", s.rows);
    let s = report::summary_with(&[swept(), defaulted(false)], &at("instances", "1"));
    assert!(s.rows.iter().all(|r| r.perf[1].is_none()), "{:?}", s.rows);
    // A key its settings say its workload does not have is no constraint on it.
    let mut other = defaulted(true);
    for r in &mut other.results {
        r.settings.remove("instances");
    }
    let s = report::summary_with(&[swept(), other], &at("instances", "2"));
    assert!(s.rows.iter().all(|r| r.perf[1].is_some()), "{:?}", s.rows);
    // `--at instances=1` names a value D ran with: not refused as unswept.
    at("instances", "1").check(&[defaulted(true)]).unwrap();
}

/// `compare I D`, I swept over instances and D at the default: D's points meet I's
/// `instances=1` and the comparability says D's effective value, not "(not disclosed)".
/// A record stored before settings were kept compares as it did.
#[test]
fn compare_matches_a_defaulted_knob_by_its_effective_value() {
    let c = report::compare::compare(&[swept()], &[defaulted(true)]);
    assert!(c.nothing_in_common.is_none(), "{:?}", c.nothing_in_common);
    let points: Vec<&str> = c
        .rows
        .iter()
        .filter(|r| r.a.is_some() && r.b.is_some())
        .map(|r| r.point.as_str())
        .collect();
    assert!(
        points.contains(&"kv get instances=1 pipeline=1"),
        "{points:?}"
    );
    assert!(
        !points.iter().any(|p| p.contains("instances=2")),
        "{points:?}"
    );
    let inst = c
        .comparability
        .differences
        .iter()
        .find(|d| d.key == "param.kv.instances")
        .expect("instances differs: I ran 1 and 2");
    assert_eq!((inst.a.as_str(), inst.b.as_str()), ("1, 2", "1"));
    // A default both sides ran with is no difference.
    assert!(
        !c.comparability
            .differences
            .iter()
            .any(|d| d.key == "param.kv.clients"),
        "{:?}",
        c.comparability.differences
    );
    // A knob one side set that the other's settings, known whole, lack was not given
    // there (a closed loop against a --rate: "(not disclosed)", acceptance pass s27).
    let mut paced = swept();
    for r in &mut paced.results {
        r.params.insert("rate".into(), serde_json::json!(1000));
    }
    let c = report::compare::compare(&[paced], &[defaulted(true)]);
    let rate = c
        .comparability
        .differences
        .iter()
        .find(|d| d.key == "param.kv.rate")
        .expect("rate differs");
    assert_eq!((rate.a.as_str(), rate.b.as_str()), ("1000", "not given"));

    // D stored before settings were kept: nothing of it is at instances=1, as before.
    let old = report::compare::compare(&[swept()], &[defaulted(false)]);
    assert!(
        !old.rows
            .iter()
            .any(|r| r.a.is_some() && r.b.is_some() && r.point.contains("instances=1")),
        "{:?}",
        old.rows.iter().map(|r| &r.point).collect::<Vec<_>>()
    );
    let inst = old
        .comparability
        .differences
        .iter()
        .find(|d| d.key == "param.kv.instances")
        .unwrap();
    assert_eq!(inst.b, "(not disclosed)");
    // A default known on one side only is not held against the comparison.
    assert!(
        !old.comparability
            .differences
            .iter()
            .any(|d| d.key == "param.kv.clients"),
        "{:?}",
        old.comparability.differences
    );
}

/// Runs of one side at a typed `-c 10` and at the default 50 are two points, each set
/// against its like on the other side, not one point whose two runs ran at 10 and at 50:
/// read from the typed values alone, `--threads 2` beside the default 1 was averaged as
/// replication, and "like for like" said (audit, s44).
#[test]
fn a_typed_knob_beside_its_default_within_a_side_keeps_the_points_apart() {
    let run = |id: &str, clients: Option<u64>| {
        let mut run = defaulted(true);
        run.id = id.into();
        for r in &mut run.results {
            if let Some(c) = clients {
                r.params.insert("clients".into(), serde_json::json!(c));
                r.settings.insert("clients".into(), serde_json::json!(c));
            }
        }
        run
    };
    let a = [
        run("20261120T250000-aaaaa1", Some(10)),
        run("20261120T250000-aaaaa2", None),
    ];
    let b = [
        run("20261120T250000-bbbbb1", Some(10)),
        run("20261120T250000-bbbbb2", None),
    ];
    let c = report::compare::compare(&a, &b);
    let both: Vec<&str> = c
        .rows
        .iter()
        .filter(|r| r.a.is_some() && r.b.is_some())
        .map(|r| r.point.as_str())
        .collect();
    for want in ["kv get clients=10 ", "kv get clients=50 "] {
        assert!(both.iter().any(|p| p.starts_with(want)), "{want}: {both:?}");
    }
    assert!(
        both.iter().all(|p| p.contains("clients=")),
        "a point without its clients pools 10 and 50: {both:?}"
    );
    // A setting one test of a run has and another has not (a capacity test's
    // `ramp_low`, none of a load test's) is no sweep: the points keep their names, and
    // meet a run stored before settings were kept.
    let mut mixed = run("20261120T250000-ccccc1", None);
    for r in mixed.results.iter_mut().filter(|r| r.test == "set") {
        r.settings
            .insert("ramp_low".into(), serde_json::json!(1000));
    }
    let c = report::compare::compare(&[mixed], &[defaulted(false)]);
    assert!(c.nothing_in_common.is_none(), "{:?}", c.nothing_in_common);
    assert!(
        c.rows.iter().all(|r| !r.point.contains("ramp_low")),
        "{:?}",
        c.rows.iter().map(|r| &r.point).collect::<Vec<_>>()
    );
}

/// A knob typed on one side (`-c 10`) and defaulted on the other: the other side's
/// effective value is shown, not "(not disclosed)".
#[test]
fn a_typed_knob_is_set_against_the_other_sides_default() {
    let mut a = defaulted(true);
    for r in &mut a.results {
        r.params.insert("clients".into(), serde_json::json!(10));
        r.settings.insert("clients".into(), serde_json::json!(10));
    }
    a.id = "20261120T250000-aaaaaa".into();
    let c = report::compare::compare(&[a], &[defaulted(true)]);
    let d = c
        .comparability
        .differences
        .iter()
        .find(|d| d.key == "param.kv.clients")
        .expect("clients differs");
    assert_eq!((d.a.as_str(), d.b.as_str()), ("10", "50"));
}

/// Acceptance pass F, F10: the report had no benchmark-settings table (only the typed
/// parameters, "Fixed parameters: duration=3"): a table per workload of every setting
/// the results ran with, defaults included and marked, typed ones marked, values that
/// differ shown per run (and each of a swept setting's values), everything escaped.
#[test]
fn report_has_a_settings_table_with_defaults_marked() {
    let mut a = swept();
    a.label = Some("<script>x</script>&\"|".into());
    for r in &mut a.results {
        r.settings
            .insert("keyspace".into(), serde_json::json!(10000));
        r.settings
            .insert("path".into(), serde_json::json!("/a<b>|&c"));
    }
    let mut d = defaulted(true);
    for r in &mut d.results {
        r.settings.insert("clients".into(), serde_json::json!(20));
        r.params.insert("clients".into(), serde_json::json!(20));
    }
    let old = defaulted(false);
    let runs = [a, d, old];
    let v = report::views::settings_view(&runs, "kv").expect("a settings table");
    let t = &v.tables[0];
    assert_eq!(t.head[0], "Setting");
    assert_eq!(t.head.len(), 4, "{:?}", t.head);
    let row = |k: &str| {
        t.rows
            .iter()
            .find(|r| r[0] == k)
            .unwrap_or_else(|| panic!("{k}"))
    };
    // A default: its value, marked; per run, not collapsed.
    assert_eq!(row("clients")[1], "50 (default)");
    assert_eq!(row("clients")[2], "20 (typed)");
    assert_eq!(row("keyspace")[1], "10000 (default)");
    assert_eq!(row("keyspace")[2], "not a setting of this run");
    assert_eq!(row("keyspace")[3], report::views::SETTING_NOT_RECORDED);
    // A list reads as one; several lists are told apart.
    let mut b = swept();
    b.results[0]
        .settings
        .insert("tests".into(), serde_json::json!(["set", "get"]));
    b.results[1]
        .settings
        .insert("tests".into(), serde_json::json!(["get", "lrange"]));
    b.results[2]
        .settings
        .insert("client_cpus".into(), serde_json::json!([]));
    let vb = report::views::settings_view(std::slice::from_ref(&b), "kv").unwrap();
    let rb = |k: &str| {
        vb.tables[0]
            .rows
            .iter()
            .find(|r| r[0] == k)
            .unwrap()
            .clone()
    };
    assert_eq!(rb("tests")[1], "set, get; get, lrange (default)");
    assert_eq!(rb("client_cpus")[1], "none (default)");
    // A value each test resolved for itself (`--wait auto`: a ramp spins, its levels
    // sleep) is told by its tests; a value that no test ran twice.
    let mut w = swept();
    w.results.truncate(2);
    for (r, (test, wait)) in w
        .results
        .iter_mut()
        .zip([("ramp", "spin"), ("levels", "sleep")])
    {
        r.test = test.into();
        r.settings.insert("wait".into(), serde_json::json!(wait));
    }
    let vw = report::views::settings_view(std::slice::from_ref(&w), "kv").unwrap();
    let wait = vw.tables[0].rows.iter().find(|r| r[0] == "wait").unwrap();
    assert_eq!(wait[1], "spin (ramp), sleep (levels) (default)");
    // A swept setting: each of its values.
    assert_eq!(row("instances")[1], "1, 2 (typed)");
    assert_eq!(row("instances")[2], "1 (default)");
    let m = report::markdown(&runs, None);
    let s = &m[m.find("### kv: benchmark settings").expect("the section")..];
    assert!(
        s.contains("| Setting | &lt;script&gt;x&lt;/script&gt;&amp;\"\\| |"),
        "{s}"
    );
    assert!(s.contains("| clients | 50 (default) | 20 (typed) |"), "{s}");
    assert!(s.contains("/a&lt;b&gt;\\|&amp;c (default)"), "{s}");
    assert!(!m.contains("<script>") && !m.contains("<b>"));
    let h = report::html(&runs, None);
    assert!(h.contains("kv: benchmark settings"));
    assert!(h.contains("<td class=\"n\">50 (default)</td>"));
    assert!(h.contains("/a&lt;b&gt;|&amp;c (default)"));
    assert!(!h.contains("<script>x") && !h.contains("<b>|"));
}
