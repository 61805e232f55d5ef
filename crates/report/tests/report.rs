//! The report and derived figures on fixture runs (realistic kv sweeps with real
//! histograms and telemetry), and the seeds' tables reproduced from their numbers.

mod common;

use std::collections::BTreeMap;

use common::{kv_run, two_platforms, Power, Spec};
use model::{CpuUtil, Metric, PowerSummary, ResultRecord, RunRecord, Status, TelemetrySummary};
use rackbench_report as report;

#[test]
fn html_is_self_contained_with_charts() {
    let runs = two_platforms();
    let h = report::html(&runs, None);
    assert!(h.starts_with("<!DOCTYPE html>"));
    assert!(
        h.matches("<svg").count() >= 6,
        "charts: {}",
        h.matches("<svg").count()
    );
    for forbidden in [
        "<script", "http://", "https://", "<link", "@import", "src=\"",
    ] {
        let ok = match forbidden {
            // The SVG namespace is an identifier, not a fetch.
            "http://" => h
                .replace("http://www.w3.org/2000/svg", "")
                .contains("http://"),
            _ => h.contains(forbidden),
        };
        assert!(!ok, "report contains {forbidden}");
    }
    // Flags are shown next to the figures; latency percentiles are present.
    assert!(h.contains("client_bound"));
    assert!(h.contains("p99.9"));
    assert!(h.contains("Geometric mean"));
    assert!(h.contains("platform comparison"), "comparability verdict");
}

#[test]
fn everything_from_hosts_plans_and_labels_is_escaped() {
    let evil = "<script>alert(1)</script>";
    let mut r = kv_run(&Spec::default());
    r.label = Some(evil.into());
    r.hosts[0].host = evil.into();
    r.hosts[0]
        .facts
        .insert("cpu.model".into(), model::Fact::known(evil));
    r.results[0].flags.push(model::Flag::warning(evil, evil));
    r.results[0].test = evil.into();
    r.command = evil.into();
    let mut b = kv_run(&Spec {
        id: "20261120T231500-bbbbbb",
        label: "b",
        ..Spec::default()
    });
    b.label = Some("\"><img src=x onerror=alert(1)>".into());
    let plan = tco::Plan::from_toml(&format!(
        r#"years = 3
energy_price_per_kwh = 0.1
title = "{evil}"
[rack]
power_budget_w = 10000
rack_units = 40
[[platform]]
name = "{evil}"
power_w = 300
perf = 100
bom = [{{ name = "{evil}", unit_cost = 10 }}]
"#
    ))
    .unwrap();
    let t = tco::evaluate(&plan, &BTreeMap::new()).unwrap();
    let runs = vec![r, b];
    let h = report::html(&runs, Some(&t));
    assert!(!h.contains("<script>"), "unescaped script tag");
    assert!(!h.contains("<img"), "unescaped img tag");
    assert!(h.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    for (name, svg) in report::svg_charts(&runs) {
        assert!(!svg.contains("<script>"), "{name}");
    }
    let md = report::markdown(&runs, Some(&t));
    assert!(!md.contains("<script>"), "markdown passes raw HTML through");
}

#[test]
fn markdown_and_svg_files() {
    let runs = two_platforms();
    let md = report::markdown(&runs, None);
    assert!(md.contains("| Test |"));
    assert!(md.contains("**Geometric mean**"));
    let files = report::svg_charts(&runs);
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    for want in [
        "kv_bars.svg",
        "kv_vs_instances.svg",
        "kv_vs_pipeline.svg",
        "kv_latency.svg",
        "kv_power.svg",
        "kv_perf_per_w.svg",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    assert!(names.iter().any(|n| n.starts_with("cpu_")));
    assert!(
        names.contains(&"kv_buckets_set_pipeline_1.svg"),
        "{names:?}"
    );
    for (_, s) in &files {
        assert!(s.starts_with("<?xml") && s.trim_end().ends_with("</svg>"));
    }
}

/// A run whose results are the seed's Table A1 measurements (one sweep point per test).
fn table_a1_run(id: &str, label: &str, figures: &[(&str, u32, f64, f64)]) -> RunRecord {
    let mut run = kv_run(&Spec {
        id: Box::leak(id.to_string().into_boxed_str()),
        label: "x",
        reps: 1,
        instances: &[1],
        ..Spec::default()
    });
    run.label = Some(label.into());
    let template = run.results[0].clone();
    run.results = figures
        .iter()
        .enumerate()
        .map(|(i, (test, p, ops, w))| {
            let mut r = template.clone();
            r.step = i as u32;
            r.test = test.to_string();
            r.params = BTreeMap::from([("pipeline".to_string(), serde_json::json!(p))]);
            r.metrics = vec![model::Metric::new("ops_per_s", *ops, "ops/s")];
            r.flags.clear();
            // Processor socket power: a component figure, as the seed's.
            r.telemetry_summary[0].power = vec![PowerSummary {
                source: "rapl".into(),
                zone: "package-0".into(),
                mean_watts: *w,
                max_watts: *w,
                whole_system: false,
                modelled: false,
            }];
            r
        })
        .collect();
    run
}

/// Seed 000's Table A1 as two runs: the Centriq and the Xeon, three tests each, with
/// processor socket power.
fn seed_table_a1_runs() -> [RunRecord; 2] {
    let q = table_a1_run(
        "q",
        "Centriq 2452",
        &[
            ("set", 1, 3_478_470.0, 45.2),
            ("get", 1, 3_474_360.0, 43.9),
            ("get", 100, 31_619_580.0, 60.6),
        ],
    );
    let i = table_a1_run(
        "i",
        "Xeon Gold 5120",
        &[
            ("set", 1, 3_582_254.0, 174.7),
            ("get", 1, 3_548_964.0, 169.9),
            ("get", 100, 45_094_940.0, 190.7),
        ],
    );
    [q, i]
}

#[test]
fn reproduces_seed_table_a1_means() {
    let s = report::summary(&seed_table_a1_runs());
    assert_eq!(s.rows.len(), 3);
    assert_eq!(s.geomean[0].map(|v| v.round()), Some(7_256_709.0));
    assert_eq!(s.geomean[1].map(|v| v.round()), Some(8_307_339.0));
    assert!((s.power_mean[0].unwrap() - 49.9).abs() < 0.05);
    assert!((s.power_mean[1].unwrap() - 178.4).abs() < 0.05);
    // Socket power is a component figure and says so.
    assert_eq!(s.power_basis[0], Some(report::PowerBasis::Component));
}

/// A run whose power is the whole server's is not set against one whose power is its
/// CPU packages': the Difference column has no power ratio, and a note says why; the
/// same basis on both sides keeps it.
#[test]
fn summary_power_of_unlike_bases_is_not_compared() {
    let [q, mut i] = seed_table_a1_runs();
    for r in &mut i.results {
        let p = &mut r.telemetry_summary[0].power[0];
        p.source = "ipmi-dcmi".into();
        p.zone = "system".into();
        p.whole_system = true;
    }
    let s = report::summary(&[q.clone(), i]);
    assert!(s.power_mean[0].is_some() && s.power_mean[1].is_some());
    assert_eq!(s.differences.len(), 1);
    assert_eq!(s.differences[0].power_mean, None, "{:?}", s.differences[0]);
    assert!(s.differences[0].geomean.is_some());
    let note = s.notes.iter().find(|n| n.contains("no like for like"));
    assert!(
        note.is_some_and(|n| n.contains("measured, whole server") && n.contains("component")),
        "{:?}",
        s.notes
    );
    // Like for like: the ratio is there, and no such note.
    let s = report::summary(&seed_table_a1_runs());
    let r = s.differences[0].power_mean.unwrap();
    assert!((r - 178.4 / 49.9).abs() < 0.01, "{r}");
    assert!(!s.notes.iter().any(|n| n.contains("no like for like")));
}

/// Seed 000's tables: the Centriq measured on one board, extrapolated to two boards per
/// chassis, a Difference column against the Xeon; a chosen subset of the tests.
#[test]
fn seed_tables_difference_extrapolation_and_chosen_tests() {
    let runs = seed_table_a1_runs();
    let sel = report::Selection {
        baseline: Some("Xeon Gold 5120".into()),
        extrapolate: vec![
            report::selection::parse_extrapolation("Centriq 2452=x2:boards", 1.0).unwrap(),
        ],
        ..Default::default()
    };
    sel.check(&runs).unwrap();
    let s = report::summary_with(&runs, &sel);
    assert_eq!(
        s.runs,
        [
            "Centriq 2452",
            "Xeon Gold 5120",
            "Centriq 2452 x2 boards (extrapolated)"
        ]
    );
    assert_eq!(s.measured, 2);
    // The seed's Table 2: 14,513,419 for two boards, 1.7x the Xeon's 8,307,339.
    assert_eq!(s.geomean[2].map(|v| v.round()), Some(14_513_419.0));
    assert!((s.power_mean[2].unwrap() - 99.8).abs() < 0.1);
    let two = s
        .differences
        .iter()
        .find(|d| d.label.starts_with("Centriq 2452 x2"))
        .unwrap();
    assert!((two.geomean.unwrap() - 1.747).abs() < 0.001, "{two:?}");
    let one = &s.differences[0];
    assert_eq!(one.label, "Centriq 2452 vs Xeon Gold 5120");
    assert!((one.perf[0].unwrap() - 3_478_470.0 / 3_582_254.0).abs() < 1e-9);
    assert_eq!(
        report::derive::DiffColumn::cell(two.geomean),
        "1.75x (+75%)"
    );
    // A tiny ratio keeps its digits (it read "0.00x (-100%)", as if B were zero).
    assert_eq!(
        report::derive::DiffColumn::cell(Some(0.0037)),
        "0.0037x (-100%)"
    );
    assert_eq!(report::derive::DiffColumn::cell(None), "-");

    // Rendered: the columns, the Difference heading, the note saying how it was made.
    let h = report::html_with(&runs, None, &sel);
    for want in [
        "Centriq 2452 x2 boards (extrapolated)",
        "Difference<br>Centriq 2452 vs Xeon Gold 5120",
        "linearly, as if 2 boards each did what the one measured did",
        "1.75x (+75%)",
    ] {
        assert!(h.contains(want), "{want}");
    }
    let m = report::markdown_with(&runs, None, None, &sel);
    assert!(m.contains("Difference: Centriq 2452 x2 boards (extrapolated) vs Xeon Gold 5120"));

    // Seed 001's "at 3 GHz" column: the Xeon measured at 2.2 GHz, taken to 3 GHz with
    // the performance following the clock (elasticity 0.8: 80% of the clock's gain).
    let clock = report::Selection {
        extrapolate: vec![report::selection::parse_extrapolation(
            "Xeon Gold 5120=2.2GHz:3GHz",
            0.8,
        )
        .unwrap()],
        ..Default::default()
    };
    clock.check(&runs).unwrap();
    let s = report::summary_with(&runs, &clock);
    assert_eq!(s.runs[2], "Xeon Gold 5120 at 3 GHz (extrapolated)");
    let factor = 1.0 + 0.8 * (3000.0 / 2200.0 - 1.0);
    let want = s.geomean[1].unwrap() * factor;
    assert!(
        (s.geomean[2].unwrap() - want).abs() < 1e-6 * want,
        "{:?}",
        s.geomean
    );
    let h = report::html_with(&runs, None, &clock);
    assert!(h.contains("Xeon Gold 5120 at 3 GHz (extrapolated)"));
    // The note names the clock it started from: given here; else the disclosed
    // maximum, said to be one (a turbo clock on many CPUs).
    assert!(
        s.notes.iter().any(|n| n.contains("from 2.2 GHz as given")),
        "{:?}",
        s.notes
    );
    let from_run = report::Selection {
        extrapolate: vec![
            report::selection::parse_extrapolation("Xeon Gold 5120=3GHz", 1.0).unwrap(),
        ],
        ..Default::default()
    };
    let s = report::summary_with(&runs, &from_run);
    assert!(
        s.notes
            .iter()
            .any(|n| n.contains("the run's cpu.freq_max_mhz") || n.contains("does not disclose")),
        "{:?}",
        s.notes
    );

    // The tests of the geometric mean are chosen: two rows, their geomean.
    let two_tests = report::Selection {
        tests: vec!["set pipeline=1".into(), "get pipeline=100".into()],
        ..Default::default()
    };
    two_tests.check(&runs).unwrap();
    let s = report::summary_with(&runs, &two_tests);
    assert_eq!(s.rows.len(), 2);
    // The caption says the rows were chosen (acceptance pass C, 10: it did not), by
    // this summary's names only (another workload's, given too, are not its rows).
    assert!(
        s.selection
            .starts_with("tests set pipeline=1, get pipeline=100"),
        "{}",
        s.selection
    );
    // The tables and charts after the summary are not chosen so: said under it, where a
    // reader would pair their figures with the summary's (no selection, nothing said).
    let note = report::derive::CHOSEN_POINTS_NOTE;
    assert!(s.notes.iter().any(|n| n == note), "{:?}", s.notes);
    let in_html = note.replace('\'', "&#39;");
    assert!(report::html_with(&runs, None, &two_tests).contains(&in_html));
    let plain = report::summary(&runs);
    assert!(!plain.notes.iter().any(|n| n == note), "{:?}", plain.notes);
    let with_other = report::Selection {
        tests: vec!["set pipeline=1".into(), "rsa2048".into()],
        ..Default::default()
    };
    let s2 = report::summary_with(&runs, &with_other);
    assert!(
        s2.selection.starts_with("tests set pipeline=1") && !s2.selection.contains("rsa2048"),
        "{}",
        s2.selection
    );
    let want = (3_478_470.0f64 * 31_619_580.0).sqrt();
    assert!((s.geomean[0].unwrap() - want).abs() < 1.0);
    // Names that match nothing are refused, naming what there is.
    let bad = report::Selection {
        tests: vec!["hset".into()],
        at: vec![("instances".into(), "7".into())],
        baseline: Some("Graviton".into()),
        ..Default::default()
    };
    let e = bad.check(&runs).unwrap_err();
    assert!(
        e.contains("no test `hset`") && e.contains("set pipeline=1"),
        "{e}"
    );
    assert!(e.contains("--at") && e.contains("instances"), "{e}");
    assert!(e.contains("no column `Graviton`"), "{e}");
}

/// `--tests` and `--at` choose the points of the efficiency and latency-threshold tables
/// and of the charts of best points (bars, latency, power, per-CPU), as they choose the
/// summary's: those stayed at each run's best over all its tests, and a reader paired
/// them with the summary's figures. A sweep's curves keep every point.
#[test]
fn the_tables_and_charts_of_best_points_follow_the_selection() {
    let runs = two_platforms();
    let sel = report::Selection {
        tests: vec!["get pipeline=100".into()],
        at: vec![("instances".into(), "2".into())],
        ..Default::default()
    };
    sel.check(&runs).unwrap();
    let eff = report::derive::efficiency_rows_with(&runs, &sel);
    assert_eq!(eff.len(), 2, "{eff:?}");
    assert!(
        eff.iter()
            .all(|(row, _, point, _)| row == "kv get pipeline=100" && point.contains("instances=2")),
        "{eff:?}"
    );
    let all = report::derive::efficiency_rows(&runs);
    assert!(
        all.iter().any(|(row, ..)| row == "kv set pipeline=1"),
        "{all:?}"
    );
    let groups = report::charts::thresholds(&runs, &sel);
    assert!(
        !groups.is_empty() && groups.iter().all(|g| g.test == "kv get pipeline=100"),
        "{:?}",
        groups.iter().map(|g| &g.test).collect::<Vec<_>>()
    );
    let cpu = report::charts::cpu_breakdowns(&runs, &sel).shown;
    assert!(
        !cpu.is_empty() && cpu.iter().all(|b| b.row.starts_with("kv get")),
        "{:?}",
        cpu.iter().map(|b| &b.row).collect::<Vec<_>>()
    );
    let charts = report::charts::charts_with(&runs, &sel);
    let of = |section: &str| -> Vec<&report::charts::Chart> {
        charts.iter().filter(|c| c.section == section).collect()
    };
    let bars = of("results");
    assert!(
        bars.iter().all(|c| c.title.contains("(at instances=2")
            && !c.svg.as_deref().unwrap_or("").contains("set pipeline")),
        "{:?}",
        bars.iter().map(|c| &c.title).collect::<Vec<_>>()
    );
    for section in ["latency", "power"] {
        let drawn = of(section);
        assert!(!drawn.is_empty(), "{section}");
        for c in drawn {
            let text = format!("{} {}", c.title, c.svg.as_deref().unwrap_or(""));
            assert!(!text.contains("set pipeline"), "{section}: {}", c.title);
        }
    }
    // The sweep over instances is of every point, its files the same as unchosen, also
    // where the selection takes no point of the workload (none at instances=3).
    let sweep = of("sweep");
    assert!(
        sweep
            .iter()
            .any(|c| c.svg.as_deref().unwrap_or("").contains("set pipeline")),
        "{:?}",
        sweep.iter().map(|c| &c.title).collect::<Vec<_>>()
    );
    let sweep_files = |charts: Vec<report::charts::Chart>| -> Vec<String> {
        charts
            .into_iter()
            .filter(|c| c.section == "sweep" && c.svg.is_some())
            .map(|c| c.file)
            .collect()
    };
    let unchosen = sweep_files(report::charts::charts(&runs));
    assert!(!unchosen.is_empty());
    assert_eq!(
        sweep_files(report::charts::charts_with(&runs, &sel)),
        unchosen
    );
    let none = report::Selection {
        at: vec![("instances".into(), "3".into())],
        ..Default::default()
    };
    assert_eq!(
        sweep_files(report::charts::charts_with(&runs, &none)),
        unchosen
    );
    // A run of another workload first: each run's breakdowns are its own, in its column.
    let mut mem = runs[0].clone();
    mem.id = "20261120T231500-cccccc".into();
    mem.label = Some("mem-run".into());
    for r in &mut mem.results {
        r.workload = "mem".into();
    }
    let mixed = [mem, runs[0].clone(), runs[1].clone()];
    let cpu = report::charts::cpu_breakdowns(&mixed, &report::Selection::default()).shown;
    assert!(
        cpu.iter().any(|b| b.run == "arm-b")
            && cpu
                .iter()
                .all(|b| (b.run == "mem-run") == (b.workload == "mem")),
        "{:?}",
        cpu.iter()
            .map(|b| (&b.run, &b.workload))
            .collect::<Vec<_>>()
    );
    // A run fixed at pipeline 100 beside one that swept it: its per-CPU breakdowns are
    // chosen by the names the summary gives (alone, its rows are `kv get`, `kv set`).
    let mut fixed = runs.clone();
    fixed[1]
        .results
        .retain(|r| r.params.get("pipeline") == Some(&serde_json::json!(100)));
    let cpu = report::charts::cpu_breakdowns(&fixed, &sel).shown;
    assert!(
        cpu.iter().any(|b| b.run == "arm-b") && cpu.iter().all(|b| b.row.starts_with("kv get")),
        "{:?}",
        cpu.iter().map(|b| (&b.run, &b.row)).collect::<Vec<_>>()
    );
    // Said under the summary, in both formats.
    let s = report::summary_with(&runs, &sel);
    let note = report::derive::CHOSEN_POINTS_NOTE;
    assert!(s.notes.iter().any(|n| n == note), "{:?}", s.notes);
    let md = report::markdown_with(&runs, None, None, &sel);
    assert!(md.contains(note), "{md}");
    // And the tables' captions say which points they hold.
    let chosen = "each run's best point of those chosen (tests get pipeline=100; at instances=2)";
    assert!(md.contains(&format!("### Efficiency ({chosen})")), "{md}");
    let h = report::html_with(&runs, None, &sel);
    let chosen = chosen.replace('\'', "&#39;");
    assert!(
        h.contains(&format!("<caption>Efficiency at {chosen}:")),
        "{h}"
    );
    assert!(h.contains(&format!("runs side by side ({chosen})")), "{h}");
    // `--at` of a key these runs' workload has not (their results kept their settings,
    // and none is `instances`) narrows none of their points (each is taken), and says
    // nothing; of results that kept no settings, whose value is not known, it does.
    let at = report::Selection {
        at: vec![("instances".into(), "2".into())],
        ..Default::default()
    };
    let mut other = runs.clone();
    for r in other.iter_mut().flat_map(|r| r.results.iter_mut()) {
        r.params.remove("instances");
        r.settings.insert("threads".into(), serde_json::json!(1));
    }
    assert!(!at.for_runs(&other).chooses());
    let s = report::summary_with(&other, &at);
    assert!(
        !s.rows.is_empty() && !s.notes.iter().any(|n| n == note),
        "{:?}",
        s.notes
    );
    assert!(!s.selection.contains("instances=2"), "{}", s.selection);
    for r in other.iter_mut().flat_map(|r| r.results.iter_mut()) {
        r.settings.clear();
    }
    assert!(at.for_runs(&other).chooses());
}

/// `--tests` names rows as the summary does: without the parameters every point shares
/// (`requests=20000`, a list such as `tests=["set","get"]`, whose commas could not be
/// typed in a comma-separated list), which the table leaves out of its row names.
#[test]
fn tests_are_chosen_by_the_row_names_the_summary_prints() {
    let mut runs = two_platforms();
    for r in runs.iter_mut().flat_map(|r| r.results.iter_mut()) {
        r.params.insert("requests".into(), serde_json::json!(20000));
        r.params
            .insert("tests".into(), serde_json::json!(["set", "get"]));
    }
    let all = report::summary(&runs);
    assert!(
        all.rows.iter().all(|r| !r.label.contains("requests=")),
        "{:?}",
        all.rows.iter().map(|r| &r.label).collect::<Vec<_>>()
    );
    let two = report::Selection {
        tests: vec!["set pipeline=1".into(), "get pipeline=100".into()],
        ..Default::default()
    };
    two.check(&runs).unwrap();
    let s = report::summary_with(&runs, &two);
    assert_eq!(
        s.rows.len(),
        2,
        "{:?}",
        s.rows.iter().map(|r| &r.label).collect::<Vec<_>>()
    );
    assert!(s.geomean.iter().all(Option::is_some), "{:?}", s.geomean);
    // What a name that matches nothing is told are the names it can use.
    let e = report::Selection {
        tests: vec!["hset".into()],
        ..Default::default()
    }
    .check(&runs)
    .unwrap_err();
    assert!(
        e.contains("set pipeline=1,") || e.contains("set pipeline=1)"),
        "{e}"
    );
    assert!(!e.contains("requests="), "{e}");
    assert!(e.starts_with("--tests: "), "{e}");
    // Chosen in a TCO plan: named by the plan's keys.
    let e = report::Selection {
        tests: vec!["hset".into()],
        at: vec![("instances".into(), "7".into())],
        from_plan: true,
        ..Default::default()
    }
    .check(&runs)
    .unwrap_err();
    assert!(e.starts_with("tests: no test `hset`"), "{e}");
    assert!(e.contains("params: no point has instances=7"), "{e}");
}

/// A report of a run measured under two variants compares them as `rackbench compare
/// RUN@off RUN@on` does: each interleaved repetition is a replication, not one run a side
/// with "not enough repetitions" (and a p99 from another rule).
#[test]
fn a_reports_variant_comparison_is_the_cli_comparison() {
    let mut run = kv_run(&Spec {
        reps: 4,
        ..Spec::default()
    });
    for r in run.results.iter_mut() {
        let v = if r.repetition % 2 == 0 { "off" } else { "on" };
        r.params.insert("variant".into(), serde_json::json!(v));
    }
    let cli = report::compare::compare(
        &report::compare::variant_runs(&run, "off").unwrap(),
        &report::compare::variant_runs(&run, "on").unwrap(),
    );
    let cols = report::compare::variant_columns(run.clone());
    assert_eq!(cols.len(), 2);
    let rep = report::compare::compare(
        &report::compare::replications(&cols[0]),
        &report::compare::replications(&cols[1]),
    );
    assert_eq!(cli.rows, rep.rows);
    assert!(
        rep.rows
            .iter()
            .all(|r| r.a.as_ref().is_none_or(|s| s.n == 2)),
        "{:?}",
        rep.rows
    );
    let md = report::markdown(&cols, None);
    assert!(!md.contains("not enough repetitions"), "{md}");
    // A run of its own stays one replication.
    assert_eq!(report::compare::replications(&run).len(), 1);
}

/// Two variants of one run, interleaved per repetition, are judged in pairs: repetition
/// k of B against repetition k of A, which ran beside it. A drift of 10% a repetition
/// that hit both hides a steady 2% gain from Welch's unpaired test; the paired one sees it.
#[test]
fn interleaved_variants_are_judged_in_pairs() {
    let mut run = kv_run(&Spec {
        reps: 4,
        instances: &[1],
        ..Spec::default()
    });
    let scale = |r: &mut model::ResultRecord, by: f64| {
        let h = r.headline.clone();
        let m = r.metrics.iter_mut().find(|m| m.name == h).unwrap();
        m.value *= by;
    };
    let mut on = Vec::new();
    for r in run.results.iter_mut() {
        r.params.insert("variant".into(), serde_json::json!("off"));
        scale(r, 1.0 + 0.1 * f64::from(r.repetition));
        let mut b = r.clone();
        b.params.insert("variant".into(), serde_json::json!("on"));
        let gain = [1.02, 1.021, 1.019, 1.02][b.repetition as usize];
        scale(&mut b, gain);
        on.push(b);
    }
    run.results.extend(on);
    let row = |c: &report::Comparison| {
        c.rows
            .iter()
            .find(|r| r.metric == "ops_per_s" && r.point.starts_with("kv get"))
            .cloned()
            .unwrap_or_else(|| panic!("{:?}", c.rows))
    };
    let off = report::compare::variant_runs(&run, "off").unwrap();
    let paired = row(&report::compare(
        &off,
        &report::compare::variant_runs(&run, "on").unwrap(),
    ));
    assert!(
        paired.verdict.starts_with("better (significant") && paired.verdict.ends_with("4 pairs)"),
        "{paired:?}"
    );
    let (lo, hi) = paired.ci95_pct.unwrap();
    assert!(lo > 0.0 && hi < 4.0, "{paired:?}");
    // The same figures with B's repetitions not A's (no pairs): Welch's test, and the
    // drift hides the gain.
    for r in run
        .results
        .iter_mut()
        .filter(|r| r.params["variant"] == "on")
    {
        r.repetition += 10;
    }
    let unpaired = row(&report::compare(
        &off,
        &report::compare::variant_runs(&run, "on").unwrap(),
    ));
    assert!(
        unpaired.verdict.starts_with("no significant difference")
            && !unpaired.verdict.contains("pairs"),
        "{unpaired:?}"
    );
    assert_eq!(paired.diff_pct, unpaired.diff_pct);
}

/// Acceptance L, 4: a row whose headline was measured at one buffer size of several
/// (crypto's bulk ciphers quote their largest) says the size in its name.
#[test]
fn a_rows_headline_buffer_size_is_in_its_name() {
    let mut run = kv_run(&Spec {
        instances: &[1],
        ..Spec::default()
    });
    for r in run.results.iter_mut().filter(|r| r.test == "get") {
        r.metrics
            .push(Metric::new("headline_buffer_bytes", 8192.0, "B"));
    }
    let s = report::summary(std::slice::from_ref(&run));
    let labels: Vec<&str> = s.rows.iter().map(|r| r.label.as_str()).collect();
    assert!(
        labels
            .iter()
            .all(|l| l.contains("get") == l.ends_with(" (8,192 B buffers)")),
        "{labels:?}"
    );
    assert!(labels.iter().any(|l| l.contains("get")), "{labels:?}");
}

/// A TCO's tests are named as the report's summary names them, so two platforms' means
/// are compared test by test: a column's best `instances` or a row's best `clients` (of
/// the whole run, not of the points taken, where each is one value) is none of their
/// names, and a headline's buffer size is.
#[test]
fn a_tcos_tests_are_named_as_the_summary_names_them() {
    let mut scaled = kv_run(&Spec::default());
    for r in scaled.results.iter_mut().filter(|r| r.test == "get") {
        r.metrics
            .push(Metric::new("headline_buffer_bytes", 8192.0, "B"));
    }
    for run in [scaled, client_sweep_run()] {
        let plan = one_platform_plan(&run.id, "");
        let fr = report::selection::tco_from_run(&run, &plan.platforms[0]).unwrap();
        let mut labels: Vec<String> = report::summary(std::slice::from_ref(&run))
            .rows
            .into_iter()
            .map(|r| r.label)
            .collect();
        labels.sort();
        assert_eq!(fr.perf_rows, labels);
        assert!(
            fr.perf_rows
                .iter()
                .all(|l| !l.contains("instances=") && !l.contains("clients=")),
            "{:?}",
            fr.perf_rows
        );
    }
}

/// Acceptance M, 5: an efficiency table whose power is of a host that also ran the load
/// generator says so under it; a server host of its own has nothing to say.
#[test]
fn power_of_a_host_that_ran_the_load_generator_says_so() {
    let mut run = kv_run(&Spec::default());
    let said = "also ran the load generator: its power, and the figures per watt, include \
                the generator&#39;s work";
    let h = report::html(std::slice::from_ref(&run), None);
    assert!(h.contains(said), "{h}");
    let m = report::markdown(std::slice::from_ref(&run), None);
    assert!(
        m.contains("⚠ Power:") && m.contains("include the generator"),
        "{m}"
    );
    // A comparison says it under its power rows too, naming the host and its sides.
    let name = model::host_display_name(&run.hosts, "local");
    let both = report::compare(std::slice::from_ref(&run), std::slice::from_ref(&run));
    assert_eq!(both.loadgen_in_power, [format!("{name} (A and B)")]);
    let text = report::compare::compare_text(&both);
    assert!(
        text.contains(&format!(
            "Power and per-W rows: {name} (A and B) also ran the load generator"
        )),
        "{text}"
    );
    let own = run.clone();
    run.hosts[0].role = "sut".into();
    let h = report::html(std::slice::from_ref(&run), None);
    assert!(!h.contains("also ran the load generator: its power"), "{h}");
    let one = report::compare(std::slice::from_ref(&own), std::slice::from_ref(&run));
    assert_eq!(one.loadgen_in_power, [format!("{name} (A)")]);
    let none = report::compare(std::slice::from_ref(&run), std::slice::from_ref(&run));
    assert!(none.loadgen_in_power.is_empty());
    let text = report::compare::compare_text(&none);
    assert!(!text.contains("also ran the load generator"), "{text}");
}

/// Acceptance M, 4: a comparison whose latency rows average several runs on a side says
/// that its percentile is a mean of the runs', not the merged histograms' of a run's own
/// tables; one of single runs has nothing to say.
#[test]
fn a_comparison_says_its_percentiles_are_means_of_runs() {
    let mut run = kv_run(&Spec::default());
    for r in run.results.iter_mut() {
        let v = if r.repetition % 2 == 0 { "off" } else { "on" };
        r.params.insert("variant".into(), serde_json::json!(v));
    }
    let a = report::compare::variant_run(&run, "off").unwrap();
    let b = report::compare::variant_run(&run, "on").unwrap();
    let c = report::compare(
        &report::compare::replications(&a),
        &report::compare::replications(&b),
    );
    assert!(c.averages_runs(), "{:?}", c.rows);
    let note = report::compare::MEANS_OF_RUNS_NOTE;
    assert!(report::compare::compare_text(&c).contains(note));
    let single = report::compare(&[kv_run(&Spec::default())], &[kv_run(&Spec::default())]);
    assert!(!single.averages_runs());
    // Said without a latency row too: its ratios (per W, CPU per operation) are ratios of
    // means, which a reader averaging the runs' own got otherwise (3.81 for 3.79).
    let unlatent = |r: &model::RunRecord| {
        let mut r = r.clone();
        for res in &mut r.results {
            res.metrics.retain(|m| !m.name.starts_with("latency_"));
            res.histograms.clear();
        }
        r
    };
    let c = report::compare(
        &report::compare::replications(&unlatent(&a)),
        &report::compare::replications(&unlatent(&b)),
    );
    assert!(c.rows.iter().all(|r| !r.metric.starts_with("latency_")));
    assert!(report::compare::compare_text(&c).contains(note));
    assert!(!report::compare::compare_text(&single).contains(note));
}

/// How long a test measured is no chart's axis: runs that differed in `--duration` alone
/// drew "power vs duration" and "perf/W vs duration", as if length were load. The same
/// points swept along a load knob are drawn.
#[test]
fn no_chart_is_drawn_against_how_long_a_test_measured() {
    let swept = kv_run(&Spec::default());
    let h = report::html(std::slice::from_ref(&swept), None);
    assert!(h.contains("vs instances"));
    for knob in ["duration", "requests", "warmup", "rampup"] {
        let mut run = swept.clone();
        for r in run.results.iter_mut() {
            let v = r.params.remove("instances").unwrap();
            r.params.insert(knob.into(), v);
        }
        let h = report::html(std::slice::from_ref(&run), None);
        assert!(!h.contains(&format!("vs {knob}")), "{knob}");
        // Its points are still apart, in the tables.
        assert!(h.contains(&format!("{knob}=")), "{knob}");
    }
}

/// Acceptance M, 7: a point whose repetitions vary by more than 10% (cv) is flagged, and
/// the summary cell that takes it as a column's best carries the flag; a steady one is not.
#[test]
fn a_point_whose_repetitions_vary_widely_is_flagged() {
    let mut run = kv_run(&Spec {
        instances: &[1],
        ..Spec::default()
    });
    let flagged = |run: &model::RunRecord| -> Vec<String> {
        report::summary(std::slice::from_ref(run))
            .rows
            .iter()
            .filter(|r| r.flags[0].iter().any(|f| f.code == "high_variation"))
            .map(|r| r.label.clone())
            .collect()
    };
    assert!(flagged(&run).is_empty(), "{:?}", flagged(&run));
    // One repetition of `get pipeline=1` at twice its rate: 3 repetitions x, x, 2x have a
    // cv of 34.6%.
    let r = run
        .results
        .iter_mut()
        .find(|r| r.test == "get" && r.params["pipeline"] == 1 && r.repetition == 0)
        .unwrap();
    let h = r.headline.clone();
    r.metrics
        .iter_mut()
        .find(|m| m.name == h && m.labels.is_empty())
        .unwrap()
        .value *= 2.0;
    let rows = flagged(&run);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(rows[0].contains("get"), "{rows:?}");
    let h = report::html(std::slice::from_ref(&run), None);
    assert!(h.contains("high_variation"), "said in the report");
}

/// Acceptance M, 1: a side that swept more values of a setting than the other, sharing
/// some, is compared at the points both ran, like for like; sides that share no value of
/// it are not.
#[test]
fn a_setting_swept_further_on_one_side_is_compared_where_both_ran() {
    let one = kv_run(&Spec {
        instances: &[1],
        ..Spec::default()
    });
    let more = kv_run(&Spec {
        id: "20261120T230000-bbbbbb",
        instances: &[1, 2],
        ..Spec::default()
    });
    let c = report::comparability(std::slice::from_ref(&one), std::slice::from_ref(&more));
    assert!(c.like_for_like, "{c:?}");
    assert_eq!(
        c.verdict,
        "like for like at the points both ran (param.kv.instances swept further on one side)"
    );
    let d = c
        .differences
        .iter()
        .find(|d| d.key == "param.kv.instances")
        .expect("said");
    assert_eq!((d.a.as_str(), d.b.as_str()), ("1", "1, 2"));
    let two = kv_run(&Spec {
        id: "20261120T230000-cccccc",
        instances: &[2],
        ..Spec::default()
    });
    let c = report::comparability(std::slice::from_ref(&one), std::slice::from_ref(&two));
    assert!(!c.like_for_like, "{c:?}");
    assert_eq!(c.verdict, "NOT like for like: param.kv.instances differ");
}

/// A kv run of one instance at `scale`, each result given `key = value`.
fn kv_run_given(id: &'static str, key: &str, value: serde_json::Value, scale: f64) -> RunRecord {
    let mut run = kv_run(&Spec {
        id,
        scale,
        instances: &[1],
        ..Spec::default()
    });
    for r in run.results.iter_mut() {
        r.params.insert(key.into(), value.clone());
    }
    run
}

/// A list-valued setting keeps points apart as a scalar one does: a side's run at
/// `--server-cpus 0` and its run at `0,1` are two settings, never two repetitions of
/// one compared as their mean against the other side's run at `0`.
#[test]
fn runs_at_different_cpu_lists_are_not_pooled_as_repetitions() {
    let at = |id, cpus, scale| kv_run_given(id, "server_cpus", cpus, scale);
    let a = [
        at("20261120T230000-aaaaaa", serde_json::json!([0]), 1.0),
        at("20261120T230000-bbbbbb", serde_json::json!([0, 1]), 1.8),
    ];
    let b = [at("20261120T230000-cccccc", serde_json::json!([0]), 1.05)];
    let c = report::compare::compare(&a, &b);
    let ops: Vec<_> = c.rows.iter().filter(|r| r.metric == "ops_per_s").collect();
    assert!(!ops.is_empty(), "{:?}", c.rows);
    for row in &ops {
        assert!(row.point.contains("server_cpus="), "{row:?}");
        // The points both sides ran are the runs at `0`, 5% apart (pooled with A's run
        // at `0,1`, A read 40% higher and B 25% behind it).
        if row.a.is_some() && row.b.is_some() {
            assert!(row.point.ends_with("server_cpus=0"), "{row:?}");
            let d = row.diff_pct.unwrap();
            assert!((d - 5.0).abs() < 0.5, "{row:?}");
        }
    }
    assert!(
        ops.iter()
            .any(|r| r.b.is_none() && r.point.ends_with("server_cpus=0-1")),
        "{ops:?}"
    );
}

/// One CPU list typed three ways is one setting: a plan's `"0-3"`, a flag's `0,1,2,3`
/// (stored as a list) and `"0-1,2-3"` keep no points apart, compare calls the runs like
/// for like, and `--at server_cpus=0-3` takes the run stored as a list. Before, compare
/// pooled them as three points and its verdict said NOT like for like.
#[test]
fn a_cpu_list_typed_differently_is_one_setting() {
    let at = |id, cpus, scale| kv_run_given(id, "server_cpus", cpus, scale);
    let a = [
        at("20261120T230000-aaaaaa", serde_json::json!("0-3"), 1.0),
        at("20261120T230000-bbbbbb", serde_json::json!("0-1,2-3"), 1.0),
    ];
    let b = [at(
        "20261120T230000-cccccc",
        serde_json::json!([0, 1, 2, 3]),
        1.05,
    )];
    let c = report::comparability(&a, &b);
    assert!(c.like_for_like, "{c:?}");
    let c = report::compare::compare(&a, &b);
    let ops: Vec<_> = c.rows.iter().filter(|r| r.metric == "ops_per_s").collect();
    assert!(!ops.is_empty(), "{:?}", c.rows);
    for row in &ops {
        assert!(!row.point.contains("server_cpus"), "{row:?}");
        let d = row.diff_pct.expect("both sides ran it");
        assert!((d - 5.0).abs() < 0.5, "{row:?}");
    }
    let sel = report::selection::Selection {
        at: vec![("server_cpus".into(), "0-3".into())],
        ..Default::default()
    };
    let points = report::derive::points(0, &b[0]);
    assert!(!points.is_empty());
    assert!(points.iter().all(|p| sel.takes_point(p)));
    let other = report::selection::Selection {
        at: vec![("server_cpus".into(), "0-2".into())],
        ..Default::default()
    };
    assert!(!points.iter().any(|p| other.takes_point(p)));
    // As a table prints it, too.
    let printed = report::selection::Selection {
        at: vec![("server_cpus".into(), "[0,1,2,3]".into())],
        ..Default::default()
    };
    assert!(points.iter().all(|p| printed.takes_point(p)));
    // A report of both sides says it once, as a fixed parameter.
    let fixed = report::derive::fixed_params(&[a[0].clone(), b[0].clone()]);
    assert!(fixed.iter().any(|(k, _)| k == "server_cpus"), "{fixed:?}");
}

/// A whole number typed `1.0` is the `1` of another run: `--duration 1.0` against
/// `--duration 1` is like for like.
#[test]
fn a_whole_number_typed_with_a_point_is_one_setting() {
    let at = |id, duration| kv_run_given(id, "duration", duration, 1.0);
    let a = [at("20261120T230000-aaaaaa", serde_json::json!(1.0))];
    let b = [at("20261120T230000-bbbbbb", serde_json::json!(1))];
    let c = report::comparability(&a, &b);
    assert!(c.like_for_like, "{c:?}");
    let b = [at("20261120T230000-bbbbbb", serde_json::json!(1.5))];
    assert!(!report::comparability(&a, &b).like_for_like);
}

/// Two variants of one run: the variant is the declared difference; a setting that
/// differs besides it (a sysctl changed by hand on one side) is warned about.
#[test]
fn compare_names_the_declared_variant_and_warns_of_anything_else() {
    let mut run = kv_run(&Spec::default());
    // Each point's repetitions split between the variants, as interleaving does.
    for r in run.results.iter_mut() {
        let v = if r.repetition % 2 == 0 { "off" } else { "on" };
        r.params.insert("variant".into(), serde_json::json!(v));
    }
    let a = report::compare::variant_run(&run, "off").unwrap();
    let mut b = report::compare::variant_run(&run, "on").unwrap();
    let c = report::comparability(std::slice::from_ref(&a), std::slice::from_ref(&b));
    assert!(c.like_for_like, "{c:?}");
    assert_eq!(
        c.verdict,
        "like for like but the declared variant (off vs on)"
    );
    let mut a = a;
    a.hosts[0]
        .facts
        .insert("sysctl.net.core.busy_poll".into(), model::Fact::known("0"));
    b.hosts[0]
        .facts
        .insert("sysctl.net.core.busy_poll".into(), model::Fact::known("50"));
    let c = report::comparability(std::slice::from_ref(&a), std::slice::from_ref(&b));
    assert!(!c.like_for_like);
    assert!(
        c.verdict
            .contains("besides the declared variant (off vs on)")
            && c.verdict.contains("sysctl.net.core.busy_poll"),
        "{}",
        c.verdict
    );
}

/// A column is one server: all its rows at one instance count, the one its rows do best
/// at together, never each row at its own (its `set pipeline=1` at 1 instance beside its
/// other rows at 4 made a geometric mean, priced by the TCO, of no deployable server).
/// Load levels stay each row's best.
#[test]
fn summary_takes_each_column_at_one_instance_count() {
    let mut run = kv_run(&Spec {
        reps: 1,
        instances: &[1, 4],
        ..Spec::default()
    });
    // set pipeline=1 collapses at 4 instances; the other three rows gain 3.25x there.
    for r in run
        .results
        .iter_mut()
        .filter(|r| r.test == "set" && r.params["pipeline"] == 1 && r.params["instances"] == 4)
    {
        r.metrics
            .iter_mut()
            .find(|m| m.name == "ops_per_s")
            .unwrap()
            .value = 10_000.0;
    }
    let s = report::summary(std::slice::from_ref(&run));
    assert_eq!(s.rows.len(), 4, "{:?}", s.rows);
    for row in &s.rows {
        assert_eq!(row.chosen[0], "instances=4", "{row:?}");
    }
    let set1 = s
        .rows
        .iter()
        .find(|r| r.label == "kv set pipeline=1")
        .unwrap();
    assert_eq!(set1.perf[0], Some(10_000.0));
    assert_eq!(
        s.selection,
        "each column at one instances, its best over all its rows"
    );
}

/// `--at instances=N` takes every row at that sweep point, not each column's best.
#[test]
fn summary_at_a_chosen_sweep_point() {
    let run = kv_run(&Spec {
        reps: 1,
        instances: &[1, 2],
        ..Spec::default()
    });
    let best = report::summary(std::slice::from_ref(&run));
    assert!(
        best.selection.contains("each column at one instances"),
        "{}",
        best.selection
    );
    let sel = report::Selection {
        at: vec![("instances".into(), "1".into())],
        ..Default::default()
    };
    sel.check(std::slice::from_ref(&run)).unwrap();
    let at = report::summary_with(std::slice::from_ref(&run), &sel);
    assert_eq!(at.selection, "at instances=1");
    for (b, a) in best.rows.iter().zip(&at.rows) {
        assert_eq!(a.chosen[0], "instances=1");
        assert!(a.perf[0] <= b.perf[0], "{a:?} {b:?}");
    }
    // A point it did not run: no table, and the summary says why, not an empty section.
    let none = report::Selection {
        at: vec![("instances".into(), "3".into())],
        ..Default::default()
    };
    let s = report::summary_with(std::slice::from_ref(&run), &none);
    assert!(s.rows.is_empty());
    let none_chosen = "No summary table: none of this workload's points is among those \
                       chosen (at instances=3)";
    assert!(
        s.notes.iter().any(|n| n.starts_with(none_chosen)),
        "{:?}",
        s.notes
    );
    // Beside a capacity test, too: no `--tests` chose capacity tests.
    let mut with_ramp = run.clone();
    let mut ramp = with_ramp.results[0].clone();
    ramp.test = "ramp".into();
    ramp.metrics
        .push(Metric::new("reply_rate_per_s", 1.0, "ops/s").label("phase", "ramp"));
    with_ramp.results.push(ramp);
    let s = report::summary_with(std::slice::from_ref(&with_ramp), &none);
    assert!(
        s.notes.iter().any(|n| n.starts_with(none_chosen))
            && s.notes
                .iter()
                .any(|n| n.starts_with("No summary of them either: ramp"))
            && !s.notes.iter().any(|n| n.contains("chosen with --tests")),
        "{:?}",
        s.notes
    );
}

#[test]
fn power_rules_measured_modelled_component_absent() {
    let eff = |p: Power| {
        let run = kv_run(&Spec {
            power: p,
            reps: 1,
            instances: &[2],
            ..Spec::default()
        });
        let pts = report::derive::points(0, &run);
        pts[0].efficiency().unwrap()
    };
    let m = eff(Power::Ipmi(200.0));
    let pw = m.power.as_ref().unwrap();
    assert_eq!(pw.basis, report::PowerBasis::Measured);
    assert_eq!(
        pw.source, "ipmi-dcmi system",
        "whole-server preferred over RAPL"
    );
    assert!((pw.idle_w.unwrap() - 110.0).abs() < 1e-9);
    assert!(m.perf_per_w.is_ok() && m.dw_per_perf.is_ok());
    let md = eff(Power::Modelled(200.0));
    assert_eq!(
        md.power.as_ref().unwrap().basis,
        report::PowerBasis::Modelled
    );
    let c = eff(Power::Rapl(100.0));
    let cp = c.power.as_ref().unwrap();
    assert_eq!(cp.basis, report::PowerBasis::Component);
    assert_eq!(cp.source, "rapl package-0+dram-0");
    let none = eff(Power::None);
    assert!(none.perf_per_w.is_err());
    assert!(none.power.unwrap_err().contains("no power source"));
    // And the report says why instead of drawing nothing.
    let run = kv_run(&Spec {
        power: Power::None,
        ..Spec::default()
    });
    let h = report::html(&[run], None);
    assert!(
        h.contains("Power and perf/W are absent: "),
        "no visible reason"
    );
    let run = kv_run(&Spec {
        power: Power::Modelled(150.0),
        ..Spec::default()
    });
    assert!(report::html(&[run], None).contains("modelled"));
}

/// With --power-model nothing measured idle power, so W above idle was always absent. The
/// runner records the model's declared idle watts as a modelled idle power (over no time):
/// W above idle is then there, marked modelled as the perf/W beside it, and the idle table
/// says the figure was declared, not measured for "0 s".
#[test]
fn a_modelled_hosts_declared_idle_gives_w_above_idle_marked_modelled() {
    let spec = Spec {
        power: Power::Modelled(200.0),
        reps: 1,
        instances: &[2],
        ..Spec::default()
    };
    let without = kv_run(&spec);
    let e = report::derive::points(0, &without)[0].efficiency().unwrap();
    assert!(e.dw_per_perf.is_err() && e.idle_w.is_err());
    let mut run = kv_run(&spec);
    run.idle_power = vec![model::IdlePower {
        host: "local".into(),
        duration_s: 0.0,
        power: vec![model::PowerSummary {
            source: "model".into(),
            zone: "system".into(),
            mean_watts: 120.0,
            max_watts: 120.0,
            whole_system: true,
            modelled: true,
        }],
        cpus: Vec::new(),
        flags: Vec::new(),
    }];
    let e = report::derive::points(0, &run)[0].efficiency().unwrap();
    assert_eq!(e.basis(), Some(report::PowerBasis::Modelled));
    assert_eq!(e.idle_w, Ok(120.0));
    let w = e.power.as_ref().unwrap().watts;
    assert!(
        (e.dw_per_perf.clone().unwrap() - (w - 120.0) / e.perf).abs() < 1e-12,
        "{e:?}"
    );
    let h = report::html(&[run], None);
    assert!(h.contains("Idle power before load"), "no idle table");
    assert!(
        h.contains(r#"<td class="n">declared (--power-model)</td><td>model system <span class="modelled">modelled</span></td><td class="n">120.0 W</td>"#),
        "the declared idle is not shown as such"
    );
    assert!(
        h.contains(r#"<td class="n">120.0 W <span class="modelled">modelled</span></td>"#),
        "the efficiency table's idle is not marked modelled"
    );
}

/// The iperf3 study's arm receiver, TCP: 26.8 Gbit/s, 158 W loaded, 128 W idle, CPU2
/// (iperf3) and CPU4 (softirq) busy: %CPU used 197.01, CPU/tput 7.35, W/tput 1.119.
#[test]
fn iperf3_study_cpu_and_watts_per_throughput() {
    let mut run = kv_run(&Spec {
        reps: 1,
        instances: &[1],
        power: Power::Ipmi(158.0),
        ..Spec::default()
    });
    run.results.truncate(1);
    // The study's receiver is a host of its own (the sender ran on another): its whole
    // CPU is the receiver's.
    run.hosts[0].role = "sut".into();
    let r: &mut ResultRecord = &mut run.results[0];
    r.workload = "net".into();
    r.test = "tcp".into();
    r.headline = "gbit_per_s".into();
    r.metrics = vec![model::Metric::new("gbit_per_s", 26.8, "Gbit/s")];
    let cpu = |n: i32, usr: f64, sys: f64, irq: f64, soft: f64, idle: f64| CpuUtil {
        cpu: n,
        usr_pct: usr,
        nice_pct: 0.0,
        sys_pct: sys,
        iowait_pct: 0.0,
        irq_pct: irq,
        soft_pct: soft,
        steal_pct: 0.0,
        idle_pct: idle,
    };
    r.telemetry_summary = vec![TelemetrySummary {
        host: "local".into(),
        samples: 10,
        covered_s: Some(10.0),
        whole_samples: true,
        measured_t_s: Vec::new(),
        cpus: vec![
            cpu(2, 0.80, 98.02, 0.0, 0.0, 1.18),
            cpu(4, 0.0, 0.02, 0.0, 98.16, 1.81),
        ],
        ctxt_per_s: Some(0.0),
        intr_per_s: Some(0.0),
        nics: vec![],
        disks: vec![],
        mean_freq_mhz: None,
        procs: vec![],
        power: vec![PowerSummary {
            source: "ipmi-dcmi".into(),
            zone: "system".into(),
            mean_watts: 158.0,
            max_watts: 160.0,
            whole_system: true,
            modelled: false,
        }],
        power_missing: None,
        power_gaps: None,
        part_present: Vec::new(),
    }];
    run.idle_power[0].power[0].mean_watts = 128.0;
    r.status = Status::Ok;
    let pts = report::derive::points(0, &run);
    let e = pts[0].efficiency().unwrap();
    let cpu = e.cpu_used.as_ref().unwrap();
    assert!((cpu.pct - 197.01).abs() < 0.01);
    assert_eq!(cpu.basis, report::derive::CpuBasis::Host);
    assert!((e.cpu_pct_per_perf.unwrap() - 7.351).abs() < 0.001);
    assert!((e.dw_per_perf.unwrap() - 1.119).abs() < 0.001);
}

/// Three runs per platform: the difference is judged on run means (the unit of
/// replication), with Welch's interval and a verdict.
fn platform_runs(label: &'static str, scale: f64, seed0: u64) -> Vec<RunRecord> {
    let ids = [
        "20261120T230000-aaaaa1",
        "20261120T230100-aaaaa2",
        "20261120T230200-aaaaa3",
        "20261120T231000-bbbbb1",
        "20261120T231100-bbbbb2",
        "20261120T231200-bbbbb3",
    ];
    (0..3)
        .map(|i| {
            kv_run(&Spec {
                label,
                id: ids[(if scale > 1.0 { 3 } else { 0 }) + i as usize],
                cpu_model: if scale > 1.0 {
                    "Ampere Altra Q80-30"
                } else {
                    "AMD EPYC 7B13"
                },
                scale,
                seed: seed0 + i,
                ..Spec::default()
            })
        })
        .collect()
}

#[test]
fn ab_comparison_with_confidence() {
    let a = platform_runs("x86-a", 1.0, 1);
    let b = platform_runs("arm-b", 1.3, 11);
    let c = report::compare(&a, &b);
    let row = c
        .rows
        .iter()
        .find(|r| r.point == "kv set instances=2 pipeline=1" && r.metric == "ops_per_s")
        .expect("row");
    assert_eq!(
        row.a.as_ref().unwrap().n,
        3,
        "three runs, not nine repetitions"
    );
    let d = row.diff_pct.unwrap();
    assert!((d - 30.0).abs() < 5.0, "diff {d}");
    let (lo, hi) = row.ci95_pct.unwrap();
    assert!(lo < d && d < hi && lo > 0.0, "CI [{lo}, {hi}]");
    assert!(
        row.verdict.starts_with("better (significant"),
        "{}",
        row.verdict
    );
    // Latency is compared too, percentile by percentile; lower is better.
    for m in [
        "latency_p50_ns",
        "latency_p99_ns",
        "latency_p99.9_ns",
        "latency_max_ns",
    ] {
        assert!(
            c.rows.iter().any(|r| r.metric == m && !r.higher_is_better),
            "{m}"
        );
    }
    // Power and perf/W (IPMI in the fixtures).
    assert!(c.rows.iter().any(|r| r.metric == "power_w"));
    assert!(c
        .rows
        .iter()
        .any(|r| r.metric.ends_with(" per W") && r.higher_is_better));
    // Hardware differs, software the same: a platform comparison.
    assert!(c.comparability.like_for_like);
    assert!(c.comparability.verdict.starts_with("platform comparison"));
    assert!(c
        .comparability
        .differences
        .iter()
        .any(|d| d.key == "cpu.model"));
    // Same platform, other runs: no significant difference.
    let a2 = platform_runs("x86-a", 1.0, 21);
    let same = report::compare(&a, &a2);
    let row = same
        .rows
        .iter()
        .find(|r| r.point == "kv get instances=1 pipeline=100" && r.metric == "ops_per_s")
        .unwrap();
    assert!(row.verdict.starts_with("no significant"), "{}", row.verdict);
    assert_eq!(same.comparability.verdict, "like for like");
    // A different kernel is not like for like.
    let k = kv_run(&Spec {
        id: "20261120T232500-dddddd",
        kernel: "6.12.0",
        ..Spec::default()
    });
    let other = report::comparability(&a[..1], &[k]);
    assert!(!other.like_for_like);
    assert!(other.verdict.contains("os.kernel"));
    // One run a side, however many repetitions inside: a difference, no confidence
    // claimed, and the reason said.
    let one = report::compare(&a[..1], &b[..1]);
    let row = one.rows.iter().find(|r| r.metric == "ops_per_s").unwrap();
    assert!(row.ci95_pct.is_none() && row.p_value.is_none());
    assert!(
        row.verdict.starts_with("not enough repetitions"),
        "{}",
        row.verdict
    );
    // Its repetitions' mean and sd stand beside it (acceptance pass C, 6: "(1)" for a
    // point measured three times, where the README promised mean ± sd).
    let reps = row.a_reps.as_ref().expect("one run's repetitions");
    assert!(reps.n >= 2 && reps.sd.is_some(), "{reps:?}");
    let cell = row.side_text(&row.a, &row.a_reps);
    assert!(
        cell.contains(" ± ") && cell.ends_with(&format!(" ops/s (1 run, {} reps)", reps.n)),
        "{cell}"
    );
    assert!(report::compare_text(&one).contains(&cell));
    // Several runs a side: n counts runs, and their spread is the runs'.
    assert!(c
        .rows
        .iter()
        .all(|r| r.a_reps.is_none() && r.b_reps.is_none()));
    println!("{}", report::compare_text(&c));
    // Each row is its own test at p < 0.05: said, with how many there are.
    let tested = c.rows.iter().filter(|r| r.p_value.is_some()).count();
    assert!(tested > 20, "{tested}");
    assert!(report::compare_text(&c).contains(&format!(
        "Each of the {tested} rows with a p-value is tested on its own at p < 0.05, with no correction"
    )));
    assert!(!report::compare_text(&one).contains("no correction"));
}

/// Two runs that differ only in the setting under study (here `data_size`, constant on
/// each side) still line up point by point; the setting is listed as a difference.
#[test]
fn runs_differing_in_one_setting_line_up() {
    let a = kv_run(&Spec::default());
    let mut b = kv_run(&Spec {
        id: "20261120T233000-eeeeee",
        seed: 5,
        ..Spec::default()
    });
    for r in &mut b.results {
        r.params.insert("data_size".into(), serde_json::json!(1024));
        r.params.insert("tests".into(), serde_json::json!(["get"]));
    }
    let c = report::compare(&[a], &[b]);
    assert!(
        c.rows
            .iter()
            .any(|r| r.point == "kv get instances=1 pipeline=100"),
        "{:?}",
        c.rows.iter().map(|r| &r.point).collect::<Vec<_>>()
    );
    assert!(c
        .comparability
        .differences
        .iter()
        .any(|d| d.key.ends_with("data_size")));
    // Which tests each ran is no difference of the points compared (acceptance pass,
    // s27: net's `tcp,udp` against `tcp,udp1472` was "NOT like for like").
    assert!(
        !c.comparability
            .differences
            .iter()
            .any(|d| d.key.ends_with(".tests")),
        "{:?}",
        c.comparability.differences
    );
}

/// The A/A test: the same configuration compared with itself many times is called
/// significantly different about as often as the stated 5% level, no more. Runs scatter
/// more than the repetitions inside a run (the usual case): judging on repetitions would
/// call most of these A/A pairs different; judging on run means keeps the promise.
#[test]
fn aa_comparisons_are_called_significant_about_five_percent_of_the_time() {
    use rand::{rngs::SmallRng, Rng, SeedableRng};
    let mut rng = SmallRng::seed_from_u64(42);
    let mut normal = move |mean: f64, sd: f64| {
        // Box-Muller.
        let (u1, u2): (f64, f64) = (rng.gen_range(1e-12..1.0), rng.gen());
        mean + sd * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    };
    let trials = 2000;
    let (mut ours, mut pooled) = (0, 0);
    for _ in 0..trials {
        let mut side = || -> Vec<Vec<f64>> {
            (0..3)
                .map(|_| {
                    let run_mean = normal(100_000.0, 3_000.0);
                    (0..5).map(|_| normal(run_mean, 500.0)).collect()
                })
                .collect()
        };
        let (a, b) = (side(), side());
        if report::compare::judge(&a, &b, true)
            .p_value
            .is_some_and(|p| p < 0.05)
        {
            ours += 1;
        }
        // The old way: every repetition a sample.
        let flat = |v: &[Vec<f64>]| v.concat();
        let (fa, fb) = (flat(&a), flat(&b));
        let w = report::stats::welch(
            &report::stats::Sample::of(&fa).unwrap(),
            &report::stats::Sample::of(&fb).unwrap(),
        )
        .unwrap();
        if w.p < 0.05 {
            pooled += 1;
        }
    }
    let rate = ours as f64 / trials as f64;
    let old = pooled as f64 / trials as f64;
    assert!(rate > 0.02 && rate < 0.08, "A/A false positives {rate}");
    assert!(old > 0.3, "pooling repetitions would say {old}");
}

/// Runs whose figure falls in one histogram bucket on each side (3 significant digits:
/// p99s of 1.01 ms and 1.02 ms) have no spread: Welch has nothing to divide by, and the
/// difference was called significant at p = 0 with a zero-width interval.
#[test]
fn no_spread_on_either_side_is_not_judged() {
    let a = [vec![1_010_000.0; 3], vec![1_010_000.0; 3]];
    let b = [vec![1_020_000.0; 3], vec![1_020_000.0; 3]];
    let j = report::compare::judge(&a, &b, false);
    assert!(
        j.verdict.starts_with("no spread: cannot judge"),
        "{}",
        j.verdict
    );
    assert_eq!((j.p_value, j.ci95_pct), (None, None));
    assert!((j.diff_pct.unwrap() - 0.990).abs() < 1e-3);
    // The same value on both sides is no difference, as before.
    let same = report::compare::judge(&a, &a, false);
    assert!(
        same.verdict.starts_with("no significant difference"),
        "{}",
        same.verdict
    );
}

#[test]
fn percentile_curves_come_from_merged_histograms() {
    let run = kv_run(&Spec::default());
    let pts = report::derive::points(0, &run);
    let (kind, names, h) = pts[0].latency().unwrap();
    assert_eq!(kind, "service");
    assert_eq!(names, vec!["set".to_string()]);
    // Three repetitions of 5,000 operations, merged exactly.
    assert_eq!(h.len(), 15_000);
    let curve = report::charts::percentile_curve(&h);
    assert!(
        curve.windows(2).all(|w| w[1].1 >= w[0].1),
        "percentiles are monotonic"
    );
    let edges = report::charts::bucket_edges(&[&h]);
    let shares = report::charts::bucket_shares(&h, &edges);
    assert!((shares.iter().sum::<f64>() - 100.0).abs() < 1e-6);
}

#[test]
fn tco_takes_power_and_perf_from_stored_runs() {
    let runs = two_platforms();
    let plan = tco::Plan::from_toml(
        r#"years = 3
energy_price_per_kwh = 0.10
pue = 1.5
perf_from_runs_note = "x"
[rack]
power_budget_w = 10000
reserved_w = 500
rack_units = 40
[[platform]]
name = "x86"
run = "x86-a"
params = { instances = 4 }
bom = [{ name = "Server", unit_cost = 5000 }]
[[platform]]
name = "arm"
run = "arm-b"
params = { instances = 4 }
bom = [{ name = "Server", unit_cost = 6000 }]
"#,
    );
    // Unknown keys are refused with the key named.
    let err = plan.unwrap_err().to_string();
    assert!(err.contains("perf_from_runs_note"), "{err}");
    let plan = tco::Plan::from_toml(
        r#"years = 3
energy_price_per_kwh = 0.10
pue = 1.5
[rack]
power_budget_w = 10000
reserved_w = 500
rack_units = 40
[[platform]]
name = "x86"
run = "x86-a"
params = { instances = 4 }
bom = [{ name = "Server", unit_cost = 5000 }]
[[platform]]
name = "arm"
run = "arm-b"
params = { instances = 4 }
bom = [{ name = "Server", unit_cost = 6000 }]
"#,
    )
    .unwrap();
    let mut from = BTreeMap::new();
    for (p, r) in plan.platforms.iter().zip(&runs) {
        let mut fr = tco::from_run(r, p);
        assert!(
            fr.perf.is_none(),
            "the geometric mean is the report's summary's"
        );
        fr.perf = Some(report::selection::tco_perf(r, p).unwrap());
        from.insert(p.name.clone(), fr);
    }
    let x = &from["x86"];
    let pw = x.power_w.as_ref().expect("whole-server power from the run");
    assert!(
        (pw.value - 180.0).abs() < 1e-9,
        "ipmi at full load: {}",
        pw.value
    );
    assert!(pw.source.contains("ipmi-dcmi system"));
    let perf = x.perf.as_ref().unwrap();
    assert_eq!(perf.unit.as_deref(), Some("ops/s"));
    // The summary's selection: every test at instances=4, never sweep points averaged.
    let summary = report::summary_with(
        &runs[..1],
        &report::Selection {
            at: vec![("instances".into(), "4".into())],
            ..Default::default()
        },
    );
    assert_eq!(Some(perf.value), summary.geomean[0]);
    assert!(
        perf.source.contains("geometric mean of")
            && perf.source.contains("at instances=4")
            && !perf.source.contains("sweep points"),
        "{}",
        perf.source
    );
    // A test the run does not have is refused, naming the ones it has.
    let mut wrong = plan.platforms[0].clone();
    wrong.tests = vec!["hset".into()];
    let e = report::selection::tco_perf(&runs[0], &wrong).unwrap_err();
    assert!(e.contains("no test `hset`") && e.contains("x86"), "{e}");
    let t = tco::evaluate(&plan, &from).unwrap();
    // 9,500 W / 180 W = 52 by power, 40 by space: space binds.
    assert_eq!(t.platforms[0].servers_per_rack, 40);
    assert_eq!(t.platforms[0].binding, tco::Binding::Space);
    assert_eq!(t.perf_unit, "ops/s");
    // Component-only power is refused for a rack model, with the reason.
    let rapl = kv_run(&Spec {
        power: Power::Rapl(90.0),
        ..Spec::default()
    });
    let fr = tco::from_run(&rapl, &plan.platforms[0]);
    assert!(fr.power_w.is_none());
    assert!(
        fr.problems[0].contains("only component power"),
        "{:?}",
        fr.problems
    );
    let mut m = BTreeMap::new();
    m.insert("x86".to_string(), fr);
    m.insert("arm".to_string(), from["arm"].clone());
    let err = tco::evaluate(&plan, &m).unwrap_err().to_string();
    assert!(err.contains("power_w = <watts per board>"), "{err}");
    // Modelled power flows through, marked.
    let modelled = kv_run(&Spec {
        power: Power::Modelled(200.0),
        ..Spec::default()
    });
    let mut fr = tco::from_run(&modelled, &plan.platforms[0]);
    fr.perf = Some(report::selection::tco_perf(&modelled, &plan.platforms[0]).unwrap());
    assert!(fr.power_w.as_ref().unwrap().modelled);
    let mut m = BTreeMap::new();
    m.insert("x86".to_string(), fr);
    m.insert("arm".to_string(), from["arm"].clone());
    let t = tco::evaluate(&plan, &m).unwrap();
    assert!(t.platforms[0].power_modelled);
    assert!(t.notes.iter().any(|n| n.contains("MODELLED")));
}

/// Issue 13: the sampler, the report and the TCO calculator each chose the server's power
/// in their own way (and the report added RAPL core/uncore on top of their package).
/// Every combination of sources now gives one answer, [`model::power::headline`]'s.
#[test]
fn report_and_tco_take_the_one_headline_power_rule() {
    let ps = |source: &str, zone: &str, w: f64, whole: bool| PowerSummary {
        source: source.into(),
        zone: zone.into(),
        mean_watts: w,
        max_watts: w,
        whole_system: whole,
        modelled: source == "model",
    };
    let rapl = || {
        vec![
            ps("rapl", "package-0", 100.0, false),
            ps("rapl", "core-0", 80.0, false),
            ps("rapl", "uncore-0", 6.0, false),
            ps("rapl", "package-0-core", 70.0, false),
            ps("rapl", "dram-0", 10.0, false),
        ]
    };
    let with = |mut v: Vec<PowerSummary>, extra: &[PowerSummary]| {
        v.extend_from_slice(extra);
        v
    };
    // Sources read, and the figure expected: watts, basis, source.
    type Want = Option<(f64, report::PowerBasis, &'static str)>;
    let combos: Vec<(&str, Vec<PowerSummary>, Want)> = vec![
        (
            "meter+ipmi",
            vec![
                ps("ipmi-dcmi", "system", 410.0, true),
                ps("meter", "system", 430.0, true),
            ],
            Some((430.0, report::PowerBasis::Measured, "meter system")),
        ),
        (
            "ipmi+rapl",
            with(rapl(), &[ps("ipmi-dcmi", "system", 410.0, true)]),
            Some((410.0, report::PowerBasis::Measured, "ipmi-dcmi system")),
        ),
        (
            "hwmon",
            vec![ps("hwmon", "power_meter/power1", 250.0, true)],
            Some((
                250.0,
                report::PowerBasis::Measured,
                "hwmon power_meter/power1",
            )),
        ),
        (
            "rapl with subzones",
            rapl(),
            Some((
                110.0,
                report::PowerBasis::Component,
                "rapl package-0+dram-0",
            )),
        ),
        (
            "model+rapl",
            with(rapl(), &[ps("model", "system", 300.0, true)]),
            Some((300.0, report::PowerBasis::Modelled, "model system")),
        ),
        ("nothing", vec![], None),
    ];
    for (name, power, want) in combos {
        let mut run = kv_run(&Spec {
            power: Power::None,
            reps: 1,
            instances: &[2],
            ..Spec::default()
        });
        for r in &mut run.results {
            for ts in &mut r.telemetry_summary {
                ts.power = power.clone();
            }
        }
        let eff = report::derive::points(0, &run)[0].efficiency().unwrap();
        let tco = tco::from_run(
            &run,
            &tco::Plan::from_toml(
                r#"years = 3
energy_price_per_kwh = 0.10
pue = 1.5
[rack]
power_budget_w = 10000
reserved_w = 500
rack_units = 40
[[platform]]
name = "x86"
run = "x86-a"
bom = [{ name = "Server", unit_cost = 5000 }]
"#,
            )
            .unwrap()
            .platforms[0],
        );
        let rule = model::power::headline(&power);
        match want {
            Some((w, basis, source)) => {
                let p = eff.power.as_ref().unwrap();
                assert_eq!(
                    (p.watts, p.basis, p.source.as_str()),
                    (w, basis, source),
                    "{name}"
                );
                assert_eq!(rule.as_ref().map(|h| h.mean_watts), Some(w), "{name}");
                // A rack model takes whole-server watts only, the same figure.
                match &tco.power_w {
                    Some(t) => assert_eq!(
                        (t.value, basis != report::PowerBasis::Component),
                        (w, true),
                        "{name}"
                    ),
                    None => assert_eq!(basis, report::PowerBasis::Component, "{name}"),
                }
            }
            None => {
                assert!(eff.power.is_err(), "{name}");
                assert!(rule.is_none() && tco.power_w.is_none(), "{name}");
            }
        }
    }
}

/// An open loop stores two views of one distribution: `service` (from the actual send)
/// and `corrected` (from the intended send). compare reads the corrected one, never a
/// blend of both; the share over a threshold is of that view too, and zero on both sides
/// is "no difference", not a missing figure.
#[test]
fn compare_takes_one_latency_kind_and_the_companion_throughput() {
    let mut run = kv_run(&Spec {
        reps: 2,
        instances: &[1],
        ..Spec::default()
    });
    for r in run.results.iter_mut() {
        let mut service = model::hist::new_latency_histogram();
        let mut corrected = model::hist::new_latency_histogram();
        for _ in 0..1000 {
            service.record(20_000).unwrap();
            corrected.record(2_000_000).unwrap();
        }
        r.histograms = vec![
            model::HistogramRecord::from_histogram(&r.test, "service", &service),
            model::HistogramRecord::from_histogram(&r.test, "corrected", &corrected),
        ];
        r.metrics.retain(|m| m.name != "latency_pct_over");
        for (kind, pct) in [("service", 0.0), ("corrected", 100.0)] {
            r.metrics.push(
                model::Metric::new("latency_pct_over", pct, "%")
                    .label("over", "1ms")
                    .label("kind", kind),
            );
        }
        r.metrics
            .push(model::Metric::new("latency_pct_over", 0.0, "%").label("over", "10ms"));
    }
    let c = report::compare::compare(std::slice::from_ref(&run), std::slice::from_ref(&run));
    let row = |metric: &str| {
        c.rows
            .iter()
            .find(|r| r.metric == metric && r.point.contains("set pipeline=1"))
            .unwrap_or_else(|| panic!("no {metric} row: {:?}", c.rows))
    };
    let p50 = row("latency_p50_ns").a.as_ref().unwrap().mean;
    assert!(
        (p50 - 2_000_000.0).abs() / 2e6 < 0.01,
        "p50 {p50}: the corrected view, not the service one nor a blend"
    );
    assert_eq!(row("pct_over_1ms").a.as_ref().unwrap().mean, 100.0);
    let zero = row("pct_over_10ms");
    assert_eq!(zero.diff_pct, Some(0.0));
    assert!(!zero.verdict.contains("no figure"), "{}", zero.verdict);

    // TPC-C: NOPM and TPM side by side, whichever leads.
    for r in run.results.iter_mut() {
        r.headline = "nopm".into();
        r.metrics
            .push(model::Metric::new("nopm", 1000.0, "new orders/min"));
        r.metrics
            .push(model::Metric::new("tpm", 2300.0, "transactions/min"));
    }
    let c = report::compare::compare(std::slice::from_ref(&run), std::slice::from_ref(&run));
    assert!(c.rows.iter().any(|r| r.metric == "nopm"));
    assert!(c.rows.iter().any(|r| r.metric == "tpm"), "{:?}", c.rows);
    // Its CPU per new order, as the report's %CPU per 1k new orders/min (compare had no
    // row and said nothing: a rate per minute was taken for no rate). Its host ran no
    // load generator: the whole host's CPU.
    let mut run = run.clone();
    run.hosts[0].role = "sut".into();
    let c = report::compare::compare(std::slice::from_ref(&run), std::slice::from_ref(&run));
    let pcts: Vec<f64> = report::derive::points(0, &run)
        .iter()
        .filter_map(|p| p.cpu_terms().ok().map(|(c, _)| c.pct))
        .collect();
    let per_order: Vec<f64> = c
        .rows
        .iter()
        .filter(|r| r.metric == "cpu_us_per_new_order")
        .map(|r| r.a.as_ref().unwrap_or_else(|| panic!("{r:?}")).mean)
        .collect();
    assert!(!per_order.is_empty(), "{:?}", c.rows);
    for us in per_order {
        // pct% of a CPU is pct * 10,000 µs a second, over 1,000 / 60 new orders a second.
        assert!(
            pcts.iter()
                .any(|pct| (us - pct * 1e4 / (1000.0 / 60.0)).abs() < 1e-6 * us),
            "{us} µs a new order from {pcts:?}"
        );
    }

    // UDP: packets/s, loss and jitter beside Gbit/s, loss and jitter better lower; a
    // TCP test has none (acceptance pass J, 11).
    for r in run.results.iter_mut() {
        r.headline = "throughput_gbit_per_s".into();
        r.metrics
            .push(model::Metric::new("throughput_gbit_per_s", 1.7, "Gbit/s"));
        r.metrics
            .push(model::Metric::new("packets_per_s", 146_000.0, "packets/s"));
        r.metrics.push(model::Metric::new("loss_pct", 0.125, "%"));
        r.metrics.push(model::Metric::new("jitter_ms", 0.042, "ms"));
    }
    let c = report::compare::compare(std::slice::from_ref(&run), std::slice::from_ref(&run));
    for (metric, higher) in [
        ("packets_per_s", true),
        ("loss_pct", false),
        ("jitter_us", false),
    ] {
        let r = c
            .rows
            .iter()
            .find(|r| r.metric == metric)
            .unwrap_or_else(|| panic!("no {metric} row: {:?}", c.rows));
        assert_eq!(r.higher_is_better, higher, "{metric}");
    }
}

/// Nothing compared goes below zero: an interval reaching below -100% is printed as
/// beyond it (`<-100%`), never as a bound computed at -100%, and the JSON keeps the bound
/// as computed (acceptance pass K, 8: it printed and stored -100.0). A share over a
/// threshold differs in percentage points, as the seeds state it (`14.2% -> 30.3%` is
/// `+16.1 pts`, not `+113.5%`), its interval in points too.
#[test]
fn compare_bounds_intervals_at_zero_and_states_shares_in_points() {
    let j = report::compare::judge(&[vec![10.0], vec![200.0]], &[vec![20.0], vec![30.0]], false);
    let (low, high) = j.ci95_pct.expect("an interval from two runs a side");
    assert!(low < -100.0, "as computed: {j:?}");
    let (low_abs, _) = j.ci95_abs.unwrap();
    assert!(low_abs < -105.0, "as computed: {j:?}");
    let row = report::compare::CompareRow {
        point: "kv set".into(),
        metric: "ops_per_s".into(),
        unit: "ops/s".into(),
        higher_is_better: true,
        a: report::stats::Sample::of(&[10.0, 200.0]),
        b: report::stats::Sample::of(&[20.0, 30.0]),
        diff_pct: j.diff_pct,
        ci95_pct: j.ci95_pct,
        diff_points: None,
        ci95_points: None,
        p_value: j.p_value,
        verdict: j.verdict.clone(),
        a_reps: None,
        b_reps: None,
        a_basis: None,
        b_basis: None,
        a_bound: false,
        b_bound: false,
    };
    assert_eq!(row.ci_text(), format!("[<-100%, {high:+.1}%]"));
    let json = serde_json::to_value(&row).unwrap();
    assert!(json["ci95_pct"][0].as_f64().unwrap() < -100.0, "{json}");
    // In points, below -A (B under 0%): `<-105.0`.
    let pts = report::compare::CompareRow {
        diff_points: j.diff_abs,
        ci95_points: j.ci95_abs,
        ..row
    };
    assert!(pts.ci_text().starts_with("[<-105.0, "), "{}", pts.ci_text());
    // A share of requests above 100% is beyond its ceiling too: A at 31.2%, so at most
    // +68.8 points (acceptance pass, s27: "[<-31.2, +136.8] pts").
    let over = report::compare::CompareRow {
        metric: "pct_over_100us".into(),
        unit: "%".into(),
        a: report::stats::Sample::of(&[2.4, 60.0]),
        diff_points: Some(20.0),
        ci95_points: Some((-80.0, 136.8)),
        ..pts.clone()
    };
    assert_eq!(over.ci_text(), "[<-31.2, >+68.8] pts");
    // A CPU % counts several CPUs: no ceiling there.
    let cpu = report::compare::CompareRow {
        metric: "server_cpu_pct".into(),
        ..over
    };
    assert_eq!(cpu.ci_text(), "[<-31.2, +136.8] pts");

    let share = |runs: [f64; 2]| {
        let mut r = kv_run(&Spec {
            instances: &[1],
            ..Spec::default()
        });
        r.results.truncate(1);
        let mut two = vec![r.clone(), r];
        for (run, pct) in two.iter_mut().zip(runs) {
            // 1,000 operations, pct% of them at 2 ms and the rest at 100 us.
            let mut h = model::hist::new_latency_histogram();
            let over = (pct * 10.0).round() as u64;
            h.record_n(2_000_000, over).unwrap();
            h.record_n(100_000, 1000 - over).unwrap();
            for x in run.results.iter_mut() {
                x.histograms = vec![model::HistogramRecord::from_histogram(&x.test, "all", &h)];
                x.metrics.retain(|m| m.name != "latency_pct_over");
                x.metrics
                    .push(model::Metric::new("latency_pct_over", pct, "%").label("over", "1ms"));
            }
        }
        two
    };
    let (a, b) = (share([14.0, 14.4]), share([30.0, 30.6]));
    let c = report::compare::compare(&a, &b);
    let row = c
        .rows
        .iter()
        .find(|r| r.metric == "pct_over_1ms")
        .unwrap_or_else(|| panic!("{:?}", c.rows));
    let d = row.diff_points.expect("a share's difference in points");
    assert!((d - 16.1).abs() < 1e-9, "{row:?}");
    assert_eq!(row.diff_text(), "+16.1 pts");
    assert!(row.ci_text().ends_with("pts"), "{}", row.ci_text());
    let text = report::compare::compare_text(&c);
    assert!(text.contains("+16.1 pts"), "{text}");
    // None over the threshold on A: 11 points more on B is judged (it has no relative
    // difference, and said "A is zero" where the seeds say "11% vs 0%").
    let c = report::compare::compare(&share([0.0, 0.0]), &share([11.0, 11.4]));
    let row = c.rows.iter().find(|r| r.metric == "pct_over_1ms").unwrap();
    assert_eq!(row.diff_text(), "+11.2 pts");
    assert!(row.verdict.starts_with("worse (significant"), "{row:?}");
    let c = report::compare::compare(&a, &b);
    // Not a share: relative, as before.
    let ops = c.rows.iter().find(|r| r.metric == "ops_per_s").unwrap();
    assert!(
        ops.diff_points.is_none() && ops.diff_text().ends_with('%'),
        "{ops:?}"
    );
}

/// Acceptance pass K, 10: UDP loss, a share of the datagrams sent, read "+47.5%" for
/// 28.3% -> 41.8%; it is in points now, as shares over a latency threshold are
/// (`+13.5 pts`). Jitter is in us, as the report's network table gives it (compare said
/// 0.00117 ms beside the report's 1.17).
#[test]
fn compare_states_udp_loss_in_points_and_jitter_in_us() {
    let side = |loss: [f64; 2], jitter_ms: f64| -> Vec<RunRecord> {
        loss.iter()
            .map(|l| {
                let mut run = kv_run(&Spec {
                    reps: 1,
                    instances: &[1],
                    ..Spec::default()
                });
                run.results.truncate(1);
                for r in run.results.iter_mut() {
                    r.headline = "throughput_gbit_per_s".into();
                    r.metrics
                        .push(model::Metric::new("throughput_gbit_per_s", 1.7, "Gbit/s"));
                    r.metrics.push(model::Metric::new("loss_pct", *l, "%"));
                    r.metrics
                        .push(model::Metric::new("jitter_ms", jitter_ms, "ms"));
                }
                run
            })
            .collect()
    };
    let c = report::compare::compare(&side([28.2, 28.4], 0.00117), &side([41.7, 41.9], 0.0015));
    let loss = c.rows.iter().find(|r| r.metric == "loss_pct").unwrap();
    assert_eq!(loss.diff_text(), "+13.5 pts", "{loss:?}");
    assert!(loss.ci_text().ends_with("pts"), "{}", loss.ci_text());
    assert!(loss.verdict.starts_with("worse"), "{loss:?}");
    let jitter = c.rows.iter().find(|r| r.metric == "jitter_us").unwrap();
    assert_eq!(jitter.unit, "us");
    let a = jitter.side_text(&jitter.a, &jitter.a_reps);
    assert!(a.starts_with("1.17 us"), "{a}");
    assert!(!c.rows.iter().any(|r| r.metric == "jitter_ms"));
}

/// Acceptance pass K, 8: `power_w (MODELLED)` got "worse (significant, p=0.003)": a
/// t-test on the output of declared power models. A modelled figure is said to be
/// modelled, with its difference and no interval or significance.
#[test]
fn compare_gives_no_significance_to_modelled_power() {
    let side = |watts: [f64; 2], seed: u64| -> Vec<RunRecord> {
        watts
            .iter()
            .enumerate()
            .map(|(i, w)| {
                kv_run(&Spec {
                    reps: 1,
                    instances: &[1],
                    power: Power::Modelled(*w),
                    seed: seed + i as u64,
                    ..Spec::default()
                })
            })
            .collect()
    };
    let c = report::compare::compare(&side([200.0, 201.0], 1), &side([300.0, 302.0], 3));
    let power: Vec<_> = c
        .rows
        .iter()
        .filter(|r| r.metric.contains("(MODELLED)"))
        .collect();
    assert!(!power.is_empty(), "{:?}", c.rows);
    for r in power {
        assert!(
            r.verdict
                .starts_with("modelled, not measured: no significance verdict"),
            "{r:?}"
        );
        assert!(r.p_value.is_none() && r.ci95_pct.is_none(), "{r:?}");
        assert!(r.diff_pct.is_some(), "{r:?}");
    }
    // Measured figures of the same runs are still judged.
    let ops = c.rows.iter().find(|r| r.metric == "ops_per_s").unwrap();
    assert!(ops.p_value.is_some(), "{ops:?}");
}

/// Acceptance pass K, 6: compared with a killed run, a point it ran, interrupted, read
/// "only on A: B has no such point", and nothing said B was interrupted.
#[test]
fn compare_with_a_killed_run_says_its_point_is_interrupted() {
    let a = kv_run(&Spec {
        reps: 1,
        instances: &[1],
        ..Spec::default()
    });
    let mut b = kv_run(&Spec {
        reps: 1,
        instances: &[1],
        id: "20261120T230000-bbbbbb",
        label: "killed",
        ..Spec::default()
    });
    b.status = model::Status::Interrupted;
    let first = b.results[0].clone();
    b.results = vec![first];
    b.results[0].status = model::Status::Interrupted;
    b.results[0].flags.push(model::Flag::warning(
        "partial",
        "measured until a checkpoint at 10.0 s of 20.0 s",
    ));
    let point = b.results[0].test.clone();
    let c = report::compare::compare(std::slice::from_ref(&a), std::slice::from_ref(&b));
    let rows: Vec<_> = c
        .rows
        .iter()
        .filter(|r| r.point.starts_with(&format!("kv {point} ")) && r.point.ends_with("pipeline=1"))
        .collect();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        rows[0].verdict,
        "only on A: B ran it, but its only repetition is interrupted (partial): not compared"
    );
    // Points B never reached are still points it has not.
    assert!(c
        .rows
        .iter()
        .any(|r| r.verdict == "only on A: B has no such point"));
    let text = report::compare::compare_text(&c);
    assert!(text.contains("\n! B: killed: run interrupted: "), "{text}");
}

/// A point both sides ran without their headline (two searches that met their objective
/// at no rate) is said with both reasons: it was left out of the comparison altogether.
#[test]
fn compare_says_a_point_both_sides_ran_without_a_figure() {
    let no_headline = |id: &'static str, why: &str| {
        let mut run = kv_run(&Spec {
            reps: 1,
            instances: &[1],
            id,
            ..Spec::default()
        });
        run.results.truncate(1);
        let r = &mut run.results[0];
        let headline = r.headline.clone();
        r.metrics.clear();
        r.histograms.clear();
        r.telemetry_summary.clear();
        r.missing.push(model::MissingMetric {
            name: headline,
            reason: why.into(),
        });
        run
    };
    let a = no_headline("20261120T220000-aaaaaa", "below 625/s");
    let b = no_headline("20261120T230000-bbbbbb", "below 1000/s");
    let c = report::compare::compare(std::slice::from_ref(&a), std::slice::from_ref(&b));
    let row = c
        .rows
        .iter()
        .find(|r| r.metric == a.results[0].headline)
        .unwrap_or_else(|| panic!("{:?}", c.rows));
    assert_eq!(
        row.verdict,
        "missing on both sides: A: below 625/s; B: below 1000/s"
    );
}

/// A latency row is named without its `_ns` where its cells read µs or ms (the text, the
/// Markdown and the HTML), and keeps its stored name in the rows (`--json`).
#[test]
fn compare_names_a_latency_without_the_unit_its_cells_do_not_use() {
    let a = kv_run(&Spec {
        reps: 1,
        instances: &[1],
        ..Spec::default()
    });
    let mut b = a.clone();
    b.id = "20261120T230000-bbbbbb".into();
    let c = report::compare::compare(std::slice::from_ref(&a), std::slice::from_ref(&b));
    let row = c
        .rows
        .iter()
        .find(|r| r.metric == "latency_p99_ns")
        .expect("a p99 row");
    assert_eq!(row.metric_text(), "latency p99");
    let text = report::compare::compare_text(&c);
    assert!(
        text.contains("  latency p99 ") && !text.contains("latency_p99_ns"),
        "{text}"
    );
    let runs = [a, b];
    let m = report::markdown(&runs, None);
    assert!(
        !m.contains("latency\\_p99\\_ns") && !m.contains("latency_p99_ns"),
        "{m}"
    );
    let h = report::html(&runs, None);
    assert!(h.contains("<td>latency p99</td>"), "{h}");
}

/// A point whose result has no headline (a search that met its objective at no rate it
/// tried) was ran, not absent: compare said "B has no such point" of a search that was
/// stored ok with the reason its answer is missing.
#[test]
fn compare_says_why_a_point_the_other_ran_has_no_headline() {
    let a = kv_run(&Spec {
        reps: 1,
        instances: &[1],
        ..Spec::default()
    });
    let mut b = kv_run(&Spec {
        reps: 1,
        instances: &[1],
        id: "20261120T230000-bbbbbb",
        label: "nothing met",
        ..Spec::default()
    });
    b.results.truncate(1);
    let r = &mut b.results[0];
    let headline = r.headline.clone();
    r.metrics.retain(|m| m.name != headline);
    r.missing.push(model::MissingMetric {
        name: headline.clone(),
        reason: "the answer is below 625/s".into(),
    });
    r.flags = vec![model::Flag::warning("search_limit", "steps used up")];
    let point = r.test.clone();
    let c = report::compare::compare(std::slice::from_ref(&a), std::slice::from_ref(&b));
    let row = c
        .rows
        .iter()
        .find(|r| {
            r.point.starts_with(&format!("kv {point} "))
                && r.point.ends_with("pipeline=1")
                && r.metric == headline
        })
        .expect("the headline's row");
    assert_eq!(
        row.verdict,
        format!(
            "only on A: B ran it, but its {headline} is missing (the answer is below 625/s): \
             not compared"
        )
    );
    // Its warnings are B's, not "absent" (B ran the point).
    let w = c
        .warnings
        .iter()
        .find(|w| w.point == row.point)
        .expect("the point's warnings");
    assert!(w.text().ends_with("B: search_limit"), "{}", w.text());
}

/// A report of a run and a killed one says in its Comparison section what `rackbench
/// compare` says of them: the killed run named under the header, its interrupted point in
/// its row. The report left the killed run out of its comparisons (it had fewer points
/// than the other: "Not compared (no earlier run measured the same ...)").
#[test]
fn a_reports_comparison_says_a_run_did_not_finish_as_compare_does() {
    let a = kv_run(&Spec {
        reps: 1,
        instances: &[1],
        ..Spec::default()
    });
    let mut b = kv_run(&Spec {
        reps: 1,
        instances: &[1],
        id: "20261120T230000-bbbbbb",
        label: "killed",
        ..Spec::default()
    });
    b.status = model::Status::Interrupted;
    b.results.truncate(1);
    b.results[0].status = model::Status::Interrupted;
    b.results[0].flags.push(model::Flag::warning(
        "partial",
        "measured until a checkpoint at 10.0 s of 20.0 s",
    ));
    let c = report::compare::compare(std::slice::from_ref(&a), std::slice::from_ref(&b));
    let notes = c.unfinished_notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].starts_with("B: killed: run interrupted: "),
        "{notes:?}"
    );
    let row = "B ran it, but its only repetition is interrupted (partial): not compared";
    let runs = [a, b];
    let m = report::markdown(&runs, None);
    assert!(m.contains(&notes[0]), "{m}");
    assert!(m.contains(row), "{m}");
    assert!(!m.contains("Not compared (no earlier run"), "{m}");
    let h = report::html(&runs, None);
    assert!(h.contains(&report::fmt::esc(&notes[0])), "{h}");
    assert!(h.contains(row), "{h}");
}

/// A killed run is compared with the closest earlier run that covers its points, not
/// with the first: [A: instances 1 2 4, B: instances 1, C: instances 1 killed during its
/// first test] pairs C with B (it was paired with A, the first earlier run covering it).
#[test]
fn a_killed_run_pairs_with_the_same_points_before_a_sweep_covering_them() {
    let a = kv_run(&Spec {
        reps: 1,
        ..Spec::default()
    });
    let b = kv_run(&Spec {
        reps: 1,
        instances: &[1],
        id: "20261120T230000-bbbbbb",
        label: "one",
        ..Spec::default()
    });
    let mut c = kv_run(&Spec {
        reps: 1,
        instances: &[1],
        id: "20261120T230000-cccccc",
        label: "killed",
        ..Spec::default()
    });
    c.status = model::Status::Interrupted;
    c.results.truncate(1);
    c.results[0].status = model::Status::Interrupted;
    let (pairs, alone) = report::views::comparable_pairs(&[a, b, c]);
    assert_eq!(pairs, vec![(1, 2)], "alone: {alone:?}");
    assert_eq!(alone, vec![1]);
}

/// A run's latency in compare is read from its valid repetitions' histograms merged, as
/// the results table reads it (`Point::latency`): never the mean of each repetition's
/// percentiles. Repetitions with maxima of 2, 40 and 3 ms have a maximum of 40 ms (their
/// mean, 15 ms, was shown); the run, not the repetition, stays the unit of replication.
#[test]
fn compare_reads_a_runs_latency_from_its_merged_repetitions() {
    let with_tails = |id: &'static str| {
        let mut run = kv_run(&Spec {
            id,
            reps: 3,
            instances: &[1],
            ..Spec::default()
        });
        for r in run.results.iter_mut() {
            // p99 of 100 us, 100 us and 1 ms (mean 400 us); merged, a third of the
            // operations take 1 ms or more, so the merge's p99 is 1 ms.
            let (body_ns, max_ns) = [
                (100_000, 2_000_000),
                (100_000, 40_000_000),
                (1_000_000, 3_000_000),
            ][r.repetition as usize];
            let mut h = model::hist::new_latency_histogram();
            h.record_n(body_ns, 1000).unwrap();
            h.record(max_ns).unwrap();
            r.histograms = vec![model::HistogramRecord::from_histogram(
                &r.test, "service", &h,
            )];
        }
        run
    };
    let run = with_tails("20261120T230000-aaaaaa");
    let merged = report::derive::points(0, &run)[0].latency().unwrap().2;
    let c = report::compare(std::slice::from_ref(&run), std::slice::from_ref(&run));
    let row = |c: &report::Comparison, metric: &str| {
        c.rows
            .iter()
            .find(|r| r.metric == metric && r.point == "kv set pipeline=1")
            .unwrap_or_else(|| panic!("no {metric} row: {:?}", c.rows))
            .clone()
    };
    let max = row(&c, "latency_max_ns").a.unwrap();
    assert_eq!(max.n, 1, "one run: one value");
    assert!((max.mean - 40e6).abs() / 40e6 < 0.01, "max {}", max.mean);
    assert_eq!(max.mean, merged.max() as f64);
    let p99 = row(&c, "latency_p99_ns").a.unwrap().mean;
    assert!((p99 - 1e6).abs() / 1e6 < 0.01, "p99 {p99}");
    assert_eq!(p99, merged.value_at_quantile(0.99) as f64);
    assert_eq!(
        row(&c, "latency_mean_ns").a.unwrap().mean,
        merged.mean(),
        "the mean weighted by operations"
    );
    assert!(row(&c, "latency_p99_ns")
        .verdict
        .starts_with("not enough repetitions"));
    // Two runs a side: one value per run, judged on the runs.
    let two = [run.clone(), with_tails("20261120T230100-aaaaa2")];
    let c = report::compare(&two, &two);
    let max = row(&c, "latency_max_ns");
    assert_eq!(
        max.a.as_ref().unwrap().n,
        2,
        "two runs, not six repetitions"
    );
    assert!(max.p_value.is_some(), "{}", max.verdict);
}

/// A TCO sizes a rack by throughput: a run whose headline is better lower (mem's
/// `ram_latency_ns`) gives no performance figure, says why, and still gives its power.
#[test]
fn tco_and_extrapolation_take_no_performance_from_a_latency_headline() {
    let mut run = kv_run(&Spec {
        reps: 1,
        instances: &[1, 2],
        ..Spec::default()
    });
    for (i, r) in run.results.iter_mut().enumerate() {
        r.headline = "ram_latency_ns".into();
        r.metrics
            .push(model::Metric::new("ram_latency_ns", 80.0 + i as f64, "ns"));
    }
    let plan = max_plan("");
    let fr = tco::from_run(&run, &plan.platforms[0]);
    assert!(fr.perf.is_none(), "{:?}", fr.perf);
    assert!(
        fr.problems.iter().any(|p| p.contains("better lower")),
        "{:?}",
        fr.problems
    );
    assert!(fr.power_w.is_some());
    // The default, the summary's geometric mean: refused too. It took the 80 ns as a
    // performance, so a slower platform read as more of it.
    let plan = one_platform_plan("x86-a", "");
    let e = report::selection::tco_from_run(&run, &plan.platforms[0]).unwrap_err();
    assert!(e.contains("better lower") && e.contains("in ns"), "{e}");

    // Nor is a latency extrapolated as a throughput: two boards' RAM latency is one's,
    // not twice it.
    run.label = Some("one board".into());
    let sel = report::Selection {
        extrapolate: vec![
            report::selection::parse_extrapolation("one board=x2:boards", 1.0).unwrap(),
        ],
        ..Default::default()
    };
    let runs = [run];
    sel.check(&runs).unwrap();
    let s = report::summary_with(&runs, &sel);
    let row = &s.rows[0];
    assert!(row.perf[0].is_some());
    assert_eq!(row.perf[1], None, "{:?}", row.perf);
    assert!(
        row.perf_missing[1]
            .as_deref()
            .unwrap_or("")
            .contains("not extrapolated"),
        "{:?}",
        row.perf_missing
    );
    assert_eq!(s.geomean[1], None);
}

/// The share over a latency threshold is a run's, from its merged histogram, as its
/// percentiles are: a repetition of 100 operations all over 1 ms and one of 9,900 all
/// under are 1% over, not the 50% the mean of their shares gives.
#[test]
fn compare_reads_a_runs_share_over_a_threshold_from_its_merged_repetitions() {
    let mut run = kv_run(&Spec {
        reps: 2,
        instances: &[1],
        ..Spec::default()
    });
    for r in run.results.iter_mut() {
        let (n, ns, share) =
            [(100, 2_000_000, 100.0), (9_900, 100_000, 0.0)][r.repetition as usize];
        let mut h = model::hist::new_latency_histogram();
        h.record_n(ns, n).unwrap();
        r.histograms = vec![model::HistogramRecord::from_histogram(
            &r.test, "service", &h,
        )];
        r.metrics.retain(|m| m.name != "latency_pct_over");
        r.metrics.push(
            model::Metric::new("latency_pct_over", share, "%")
                .label("over", "1ms")
                .label("kind", "service"),
        );
    }
    let c = report::compare(std::slice::from_ref(&run), std::slice::from_ref(&run));
    let over = c
        .rows
        .iter()
        .find(|r| r.metric == "pct_over_1ms" && r.point == "kv set pipeline=1")
        .unwrap_or_else(|| panic!("no pct_over_1ms row: {:?}", c.rows));
    let a = over.a.as_ref().unwrap();
    assert_eq!(a.n, 1, "one run: one value");
    assert!((a.mean - 1.0).abs() < 1e-9, "{}% over 1 ms", a.mean);
}

/// compare takes power by the one headline rule, per run as the results table does, and
/// sets it against power of the same basis only: a whole server's IPMI watts against
/// another's RAPL package + DRAM watts was "+144% perf/W, better (significant)". Where
/// the bases differ the row says so with no percentage; modelled power says it is.
#[test]
fn compare_sets_power_against_power_of_the_same_basis_only() {
    let side = |power: Power, ids: [&'static str; 2], seed: u64| -> Vec<RunRecord> {
        ids.iter()
            .enumerate()
            .map(|(i, id)| {
                kv_run(&Spec {
                    id,
                    power,
                    reps: 2,
                    instances: &[1],
                    seed: seed + i as u64,
                    ..Spec::default()
                })
            })
            .collect()
    };
    let a_ids = ["20261120T230000-aaaaa1", "20261120T230100-aaaaa2"];
    let b_ids = ["20261120T231000-bbbbb1", "20261120T231100-bbbbb2"];
    let rows = |c: &report::Comparison, metric: &str| -> Vec<report::CompareRow> {
        c.rows
            .iter()
            .filter(|r| r.metric == metric && r.point == "kv set pipeline=1")
            .cloned()
            .collect()
    };
    let ipmi = side(Power::Ipmi(310.0), a_ids, 1);
    let rapl = side(Power::Rapl(140.0), b_ids, 11);
    let c = report::compare(&ipmi, &rapl);
    for metric in ["power_w", "ops/s per W"] {
        let [row] = &rows(&c, metric)[..] else {
            panic!("one {metric} row: {:?}", c.rows)
        };
        assert_eq!(
            row.verdict,
            "not comparable: measured, whole server vs component only (CPU package/DRAM)",
            "{metric}"
        );
        assert!(
            row.diff_pct.is_none() && row.ci95_pct.is_none() && row.p_value.is_none(),
            "{row:?}"
        );
        assert!(
            row.a.is_some() && row.b.is_some(),
            "each side's figure is shown"
        );
    }
    // The figure is the results table's: the point's power (IPMI, not the RAPL package
    // the fixture also reads) and its perf/W.
    let eff = report::derive::points(0, &ipmi[0])[0].efficiency().unwrap();
    let one = report::compare(&ipmi[..1], &ipmi[..1]);
    let power = &rows(&one, "power_w")[0];
    assert_eq!(
        power.a.as_ref().unwrap().mean,
        eff.power.as_ref().unwrap().watts
    );
    let ppw = &rows(&one, "ops/s per W")[0];
    assert_eq!(ppw.a.as_ref().unwrap().mean, eff.perf_per_w.unwrap());
    // Modelled on both sides: compared, and named modelled.
    let c = report::compare(
        &side(Power::Modelled(300.0), a_ids, 1),
        &side(Power::Modelled(250.0), b_ids, 11),
    );
    for metric in ["power_w (MODELLED)", "ops/s per W (MODELLED)"] {
        let [row] = &rows(&c, metric)[..] else {
            panic!("one {metric} row: {:?}", c.rows)
        };
        // A model's watts have no spread to judge by; the difference is still given.
        assert!(
            row.diff_pct.is_some() && !row.verdict.starts_with("not comparable"),
            "{row:?}"
        );
    }
    assert!(rows(&c, "power_w").is_empty());
    // Measured against modelled: each side's cell says its own basis (the row's name
    // can say one only; it read `power_w 150 W (1 run) 200 W (1 run)`, which modelled?).
    let c = report::compare(&ipmi[..1], &side(Power::Modelled(250.0), b_ids, 11)[..1]);
    for metric in ["power_w", "ops/s per W"] {
        let [row] = &rows(&c, metric)[..] else {
            panic!("one {metric} row: {:?}", c.rows)
        };
        assert!(
            row.verdict.starts_with("not comparable: measured"),
            "{row:?}"
        );
        assert!(
            row.a_text().ends_with(" (1 run, measured)"),
            "{}",
            row.a_text()
        );
        assert!(
            row.b_text().ends_with(" (1 run, MODELLED)"),
            "{}",
            row.b_text()
        );
        let text = report::compare_text(&c);
        assert!(text.contains(&row.b_text()), "{text}");
    }
    // Of one basis, the row's name says it and the cells are as they were.
    let [row] = &rows(&c, "ops_per_s")[..] else {
        panic!("one ops_per_s row: {:?}", c.rows)
    };
    assert!(
        row.a_basis.is_none() && row.a_text().ends_with(" (1 run, 2 reps)"),
        "{row:?}"
    );
    // A side whose runs differ in basis is no figure of one basis either.
    let mixed = vec![
        ipmi[0].clone(),
        side(Power::Rapl(140.0), a_ids, 3).remove(1),
    ];
    let c = report::compare(&mixed, &ipmi);
    assert_eq!(
        rows(&c, "power_w")[0].verdict,
        "not comparable: measured, whole server and component only (CPU package/DRAM) vs measured, whole server"
    );
    assert!(rows(&c, "power_w")[0]
        .a_text()
        .ends_with(" (2 runs, measured and component only)"));
    // Power on one side only (B a VM with no source): A's figure, and why B has none.
    let c = report::compare(&ipmi, &side(Power::None, b_ids, 11));
    for metric in ["power_w", "ops/s per W"] {
        let [row] = &rows(&c, metric)[..] else {
            panic!("one {metric} row: {:?}", c.rows)
        };
        assert_eq!(row.verdict, "only on A: B has no power", "{metric}");
        assert!(row.a.is_some() && row.b.is_none() && row.diff_pct.is_none());
    }
    // ... named by its basis as a row of both sides is: modelled power is never untagged.
    let c = report::compare(
        &side(Power::None, a_ids, 1),
        &side(Power::Modelled(250.0), b_ids, 11),
    );
    for metric in ["power_w (MODELLED)", "ops/s per W (MODELLED)"] {
        let [row] = &rows(&c, metric)[..] else {
            panic!("one {metric} row: {:?}", c.rows)
        };
        assert_eq!(row.verdict, "only on B: A has no power", "{metric}");
    }
    assert!(rows(&c, "power_w").is_empty());
}

/// Sets every repetition of `set pipeline=1` in `run`: repetition i's throughput and
/// whole-server watts are `figures[i]`.
fn set_throughput_and_watts(run: &mut RunRecord, figures: &[(f64, f64)]) {
    for r in run
        .results
        .iter_mut()
        .filter(|r| r.test == "set" && r.params.get("pipeline") == Some(&serde_json::json!(1)))
    {
        let (t, w) = figures[r.repetition as usize];
        for m in r.metrics.iter_mut() {
            if m.name == "ops_per_s" && m.labels.is_empty() {
                m.value = t;
            }
        }
        for p in &mut r.telemetry_summary[0].power {
            if p.source == "ipmi-dcmi" {
                p.mean_watts = w;
            }
        }
    }
}

/// The rows of one metric at `kv set pipeline=1`.
fn set_rows(c: &report::Comparison, metric: &str) -> Vec<report::CompareRow> {
    c.rows
        .iter()
        .filter(|r| r.metric == metric && r.point == "kv set pipeline=1")
        .cloned()
        .collect()
}

/// A variant's perf/W in compare is the report's: its repetitions' mean throughput over
/// their mean power (100k, 100k and 400k ops/s over 100, 200 and 300 W is 1,000 per W),
/// not the mean of each repetition's ratio (944 per W), which set the two numbers of one
/// variant side by side; and it is the throughput row over the power row. Its spread is
/// the delta method's: z = (t - R w) / mean(w) = (0, -500, 500), sd 500.
#[test]
fn a_variants_perf_per_watt_in_compare_is_the_reports() {
    let mut run = kv_run(&Spec {
        reps: 6,
        instances: &[1],
        power: Power::Ipmi(200.0),
        ..Spec::default()
    });
    set_throughput_and_watts(
        &mut run,
        &[
            (100_000.0, 100.0),
            (120_000.0, 110.0),
            (100_000.0, 200.0),
            (110_000.0, 100.0),
            (400_000.0, 300.0),
            (130_000.0, 120.0),
        ],
    );
    for r in run.results.iter_mut() {
        let v = if r.repetition % 2 == 0 { "off" } else { "on" };
        r.params.insert("variant".into(), serde_json::json!(v));
    }
    let c = report::compare::compare(
        &report::compare::variant_runs(&run, "off").unwrap(),
        &report::compare::variant_runs(&run, "on").unwrap(),
    );
    let [ppw] = &set_rows(&c, "ops/s per W")[..] else {
        panic!("one perf/W row: {:?}", c.rows)
    };
    let a = ppw.a.as_ref().unwrap();
    assert_eq!(a.n, 3, "each repetition a replication");
    assert!((a.mean - 1_000.0).abs() < 1e-9, "{a:?}");
    let mean_of_ratios = (1_000.0 + 500.0 + 400_000.0 / 300.0) / 3.0;
    assert!(
        (a.mean - mean_of_ratios).abs() > 50.0,
        "not the ratios' mean"
    );
    assert!((a.sd.unwrap() - 500.0).abs() < 1e-9, "{a:?}");
    let b = ppw.b.as_ref().unwrap();
    assert!((b.mean - 360_000.0 / 330.0).abs() < 1e-9, "{b:?}");
    assert!(
        ppw.p_value.is_some(),
        "judged on the three replications a side"
    );
    // The throughput row over the power row.
    let mean = |metric: &str, side: fn(&report::CompareRow) -> &Option<report::stats::Sample>| {
        side(&set_rows(&c, metric)[0]).as_ref().unwrap().mean
    };
    for side in [
        (|r: &report::CompareRow| &r.a) as fn(&report::CompareRow) -> &Option<_>,
        |r: &report::CompareRow| &r.b,
    ] {
        let want = mean("ops_per_s", side) / mean("power_w", side);
        assert!((mean("ops/s per W", side) - want).abs() < 1e-9 * want);
    }
    // The report's column of each variant gives the same figure.
    let cols = report::compare::variant_columns(run.clone());
    for (col, side) in cols.iter().zip([a, b]) {
        let pts = report::derive::points(0, col);
        let p = pts
            .iter()
            .find(|p| p.test == "set" && p.params.get("pipeline") == Some(&serde_json::json!(1)))
            .unwrap();
        let e = p.efficiency().unwrap().perf_per_w.unwrap();
        assert!(
            (side.mean - e).abs() < 1e-9 * e,
            "{} vs the report's {e}",
            side.mean
        );
    }
    // As the report's Comparison section takes its columns.
    let rep = report::compare::compare(
        &report::compare::replications(&cols[0]),
        &report::compare::replications(&cols[1]),
    );
    assert_eq!(rep.rows, c.rows);
    // The cell counts what it counts, as before.
    assert_eq!(ppw.side_text(&ppw.a, &ppw.a_reps), "1,000 ops/s/W (3 runs)");
}

/// Across runs likewise: each side's perf/W is its runs' mean throughput over their mean
/// power (run means of 100k and 300k ops/s over 100 and 200 W: 1,333 per W, where the
/// runs' ratios average 1,250).
#[test]
fn a_sides_perf_per_watt_is_its_runs_mean_throughput_over_their_mean_power() {
    let side = |ids: [&'static str; 2], figures: [[(f64, f64); 2]; 2]| -> Vec<RunRecord> {
        ids.iter()
            .zip(figures)
            .map(|(id, f)| {
                let mut run = kv_run(&Spec {
                    id,
                    reps: 2,
                    instances: &[1],
                    ..Spec::default()
                });
                set_throughput_and_watts(&mut run, &f);
                run
            })
            .collect()
    };
    let a = side(
        ["20261120T230000-aaaaa1", "20261120T230100-aaaaa2"],
        [
            [(90_000.0, 100.0), (110_000.0, 100.0)],
            [(290_000.0, 190.0), (310_000.0, 210.0)],
        ],
    );
    let b = side(
        ["20261120T231000-bbbbb1", "20261120T231100-bbbbb2"],
        [
            [(100_000.0, 90.0), (100_000.0, 90.0)],
            [(200_000.0, 150.0), (220_000.0, 150.0)],
        ],
    );
    let c = report::compare(&a, &b);
    let [ppw] = &set_rows(&c, "ops/s per W")[..] else {
        panic!("one perf/W row: {:?}", c.rows)
    };
    let pa = ppw.a.as_ref().unwrap();
    assert_eq!(pa.n, 2);
    assert!((pa.mean - 200_000.0 / 150.0).abs() < 1e-9, "{pa:?}");
    assert!((pa.mean - (1_000.0 + 1_500.0) / 2.0).abs() > 50.0);
    let pb = ppw.b.as_ref().unwrap();
    assert!((pb.mean - 155_000.0 / 120.0).abs() < 1e-9, "{pb:?}");
    let row_mean = |metric: &str| set_rows(&c, metric)[0].a.as_ref().unwrap().mean;
    assert!((pa.mean - row_mean("ops_per_s") / row_mean("power_w")).abs() < 1e-9);
    // Each run's ratio is its own report's perf/W.
    let one = report::compare(&a[1..], &a[1..]);
    let e = report::derive::points(0, &a[1])
        .into_iter()
        .find(|p| p.test == "set" && p.params.get("pipeline") == Some(&serde_json::json!(1)))
        .unwrap()
        .efficiency()
        .unwrap();
    assert_eq!(
        set_rows(&one, "ops/s per W")[0].a.as_ref().unwrap().mean,
        e.perf_per_w.unwrap()
    );
}

/// The report takes a point's power from the repetitions of its first one's source only:
/// a variant whose repetitions' watts came from two sources (IPMI, then the ACPI power
/// meter) has no power or perf/W in compare that the report would print, and says so
/// rather than averaging the two.
#[test]
fn a_side_whose_runs_power_came_from_different_sources_says_so() {
    let mut run = kv_run(&Spec {
        reps: 6,
        instances: &[1],
        power: Power::Ipmi(200.0),
        ..Spec::default()
    });
    for r in run.results.iter_mut() {
        let v = if r.repetition % 2 == 0 { "off" } else { "on" };
        r.params.insert("variant".into(), serde_json::json!(v));
        if r.repetition == 2 {
            let ps = &mut r.telemetry_summary[0].power;
            ps.retain(|p| p.source != "ipmi-dcmi");
            ps.push(PowerSummary {
                source: "hwmon".into(),
                zone: "power_meter/power1".into(),
                mean_watts: 120.0,
                max_watts: 130.0,
                whole_system: true,
                modelled: false,
            });
        }
    }
    let c = report::compare::compare(
        &report::compare::variant_runs(&run, "off").unwrap(),
        &report::compare::variant_runs(&run, "on").unwrap(),
    );
    for metric in ["power_w", "ops/s per W"] {
        let rows: Vec<_> = c
            .rows
            .iter()
            .filter(|r| r.metric == metric && r.point == "kv set pipeline=1")
            .collect();
        let [row] = &rows[..] else {
            panic!("one {metric} row: {:?}", c.rows)
        };
        assert!(
            row.a.is_none() && row.b.is_some() && row.diff_pct.is_none(),
            "{row:?}"
        );
        assert_eq!(
            row.verdict,
            "missing on A: its runs' power came from different sources (hwmon \
             power_meter/power1, ipmi-dcmi system): no one figure over them",
            "{metric}"
        );
    }
}

/// A plan of one platform, `x86`, from stored run `run`, `lines` added to its platform.
fn one_platform_plan(run: &str, lines: &str) -> tco::Plan {
    tco::Plan::from_toml(&format!(
        r#"years = 3
energy_price_per_kwh = 0.10
[rack]
power_budget_w = 10000
rack_units = 40
[[platform]]
name = "x86"
run = "{run}"
{lines}bom = [{{ name = "Server", unit_cost = 5000 }}]
"#
    ))
    .unwrap()
}

/// Whole-server power measured on every test, with more valid repetitions of one test
/// than of another.
fn unevenly_repeated_run() -> RunRecord {
    let mut run = table_a1_run(
        "u",
        "uneven",
        &[
            ("set", 1, 1_000_000.0, 300.0),
            ("set", 1, 1_000_000.0, 300.0),
            ("set", 1, 1_000_000.0, 300.0),
            ("get", 1, 1_000_000.0, 200.0),
        ],
    );
    for (i, r) in run.results.iter_mut().enumerate() {
        (r.step, r.repetition) = if i < 3 { (0, i as u32) } else { (1, 0) };
        let p = &mut r.telemetry_summary[0].power[0];
        p.source = "ipmi-dcmi".into();
        p.zone = "system".into();
        p.whole_system = true;
    }
    run
}

/// The TCO's power is the report's: each point's repetitions averaged first, then the
/// points (3 repetitions of `set` at 300 W and one of `get` at 200 W are 250 W, not
/// 275 W); tests measured by unlike sources have no one mean, in either.
#[test]
fn tco_power_weighs_each_point_as_the_report_does() {
    let run = unevenly_repeated_run();
    let s = report::summary(std::slice::from_ref(&run));
    assert!(
        (s.power_mean[0].unwrap() - 250.0).abs() < 1e-9,
        "{:?}",
        s.power_mean
    );
    let plan = one_platform_plan("u", "tests = [\"set\", \"get\"]\n");
    let p = &plan.platforms[0];
    let fr = report::selection::tco_from_run(&run, p).unwrap();
    let w = fr.power_w.as_ref().expect("power");
    assert!((w.value - 250.0).abs() < 1e-9, "{} ({})", w.value, w.source);
    assert!(w.source.contains("2 point(s)"), "{}", w.source);

    let mut unlike = run.clone();
    unlike.results[3].telemetry_summary[0].power[0].source = "meter".into();
    assert!(report::summary(std::slice::from_ref(&unlike)).power_mean[0].is_none());
    let fr = report::selection::tco_from_run(&unlike, p).unwrap();
    assert!(fr.power_w.is_none());
    assert!(
        fr.problems.iter().any(|m| m.contains("unlike sources")),
        "{:?}",
        fr.problems
    );
}

/// The TCO takes power from the very points its performance comes from: each test at its
/// best instance count when no `params` are given, never the mean of every sweep point
/// (the fixture's power grows with the instance count, so the two differ).
#[test]
fn tco_power_comes_from_the_points_of_its_performance() {
    let run = kv_run(&Spec {
        reps: 1,
        instances: &[1, 4],
        ..Spec::default()
    });
    let plan = one_platform_plan("x86-a", "tests = [\"get pipeline=100\"]\n");
    let p = &plan.platforms[0];
    let fr = report::selection::tco_from_run(&run, p).unwrap();
    let perf = fr.perf.as_ref().unwrap();
    assert!(
        perf.source
            .contains("at instances=4 (the best instances over all its tests)"),
        "{}",
        perf.source
    );
    let chosen: Vec<&ResultRecord> = run
        .results
        .iter()
        .filter(|r| {
            r.test == "get"
                && r.params["instances"] == serde_json::json!(4)
                && r.params["pipeline"] == serde_json::json!(100)
        })
        .collect();
    let only = RunRecord {
        results: chosen.into_iter().cloned().collect(),
        ..run.clone()
    };
    let want = tco::from_run(
        &only,
        &tco::Platform {
            tests: vec![],
            ..p.clone()
        },
    )
    .power_w
    .unwrap()
    .value;
    let every_point = tco::from_run(&run, p).power_w.unwrap().value;
    let got = fr.power_w.as_ref().unwrap();
    assert!((got.value - want).abs() < 1e-9, "{} vs {want}", got.value);
    assert!(
        (got.value - every_point).abs() > 1.0,
        "the mean of every point ({every_point}) is not the figure"
    );
    assert!(got
        .source
        .ends_with("; the points are the performance figure's"));
}

/// A kv run whose points are a client sweep (`-c 5,40`): the fixture's instance counts
/// 1 and 4 renamed as 5 and 40 clients, so the 40-client points are the faster.
fn client_sweep_run() -> RunRecord {
    let mut run = kv_run(&Spec {
        reps: 2,
        instances: &[1, 4],
        ..Spec::default()
    });
    for r in &mut run.results {
        let inst = r.params.remove("instances").unwrap();
        let clients = if inst == serde_json::json!(1) { 5 } else { 40 };
        r.params
            .insert("clients".into(), serde_json::json!(clients));
    }
    run
}

/// Issue 3 of acceptance pass B: the points of a client sweep are levels of one load
/// curve, not separate tests. The summary took `set clients=5`, `get clients=5`, `set
/// clients=40` and `get clients=40` as four tests, and the client-limited points pulled
/// the geometric mean (and a TCO's performance, which is that mean) down. Each test is
/// now at its best clients, as at its best instances, and the TCO's note says so.
#[test]
fn a_client_sweeps_points_are_one_test_at_its_best() {
    let run = client_sweep_run();
    let s = report::summary(std::slice::from_ref(&run));
    let labels: Vec<&str> = s.rows.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "kv set pipeline=1",
            "kv get pipeline=1",
            "kv set pipeline=100",
            "kv get pipeline=100"
        ],
        "{labels:?}"
    );
    assert_eq!(s.selection, "each column at its best clients");
    for r in &s.rows {
        assert_eq!(r.chosen[0], "clients=40", "{}", r.label);
    }
    // The mean is over the best points only: no lower than the lowest of them.
    let lowest_best = s
        .rows
        .iter()
        .filter_map(|r| r.perf[0])
        .fold(f64::MAX, f64::min);
    assert!(s.geomean[0].unwrap() >= lowest_best, "{:?}", s.geomean);
    let md = report::markdown(std::slice::from_ref(&run), None);
    let summary = &md[md
        .find("Summary: each column at its best clients")
        .expect("said")..];
    let summary = &summary[..summary.find("**Geometric mean**").unwrap()];
    assert!(!summary.contains("clients=5"), "{summary}");

    // A TCO's `run = ...` performance is that mean, each test named at its best point.
    let plan = one_platform_plan("x86-a", "");
    let perf = report::selection::tco_perf(&run, &plan.platforms[0]).unwrap();
    assert_eq!(Some(perf.value), s.geomean[0]);
    assert!(
        perf.source.contains("geometric mean of 4 test(s)")
            && perf
                .source
                .contains("kv get pipeline=1 at its best clients (40)")
            && !perf.source.contains("clients=5"),
        "{}",
        perf.source
    );
    // Its power is of those points only.
    let fr = report::selection::tco_from_run(&run, &plan.platforms[0]).unwrap();
    let w = fr.power_w.as_ref().unwrap();
    assert!(w.source.contains("4 point(s)"), "{}", w.source);
}

/// Two platforms' geometric means over different tests were set side by side: one over
/// `get` and `set` at pipeline 1 and 100, the other at pipeline 1 alone, read the second
/// at a fraction of the first with nothing said. Refused, naming both sets of tests; the
/// same tests (the first platform's `params` choosing pipeline 1) are evaluated.
#[test]
fn a_tco_refuses_geometric_means_over_different_tests() {
    let swept = client_sweep_run();
    let mut fixed = swept.clone();
    fixed.id = "fixed".into();
    fixed
        .results
        .retain(|r| r.params.get("pipeline") == Some(&serde_json::json!(1)));
    // Platform `x86` of the swept run (with `a_params`), and `b` of the fixed one.
    let plan = |a_params: &str| {
        let mut plan = one_platform_plan(&swept.id, a_params);
        let b = tco::Platform {
            name: "b".into(),
            run: Some("fixed".into()),
            params: BTreeMap::new(),
            tests: vec![],
            ..plan.platforms[0].clone()
        };
        plan.platforms.push(b);
        plan
    };
    let evaluate = |plan: &tco::Plan| {
        let from = |run: &RunRecord, i: usize| {
            report::selection::tco_from_run(run, &plan.platforms[i]).unwrap()
        };
        let runs = BTreeMap::from([
            ("x86".to_string(), from(&swept, 0)),
            ("b".to_string(), from(&fixed, 1)),
        ]);
        tco::evaluate(plan, &runs)
    };
    let e = evaluate(&plan("")).unwrap_err().to_string();
    assert!(
        e.contains(
            "platform `b`'s performance is the geometric mean of kv get, kv set, platform \
             `x86`'s of kv get pipeline=1, kv get pipeline=100, kv set pipeline=1, kv set \
             pipeline=100: their difference would compare unlike figures"
        ),
        "{e}"
    );
    let t = evaluate(&plan("params = { pipeline = 1 }\n")).unwrap();
    assert_eq!(t.platforms.len(), 2);
    // Chosen by name instead: the same tests.
    let t = evaluate(&plan("tests = [\"get pipeline=1\", \"set pipeline=1\"]\n")).unwrap();
    assert_eq!(t.platforms.len(), 2);
}

/// Two platforms each fixed at another setting (one run at pipeline 100, the other at
/// pipeline 1) name their tests alike (`kv get, kv set`) and pass the TCO's check, but
/// their perf/$ differ by the setting as much as by the platform: the TCO says which
/// settings each ran at, for a geometric mean and for `perf_from = "max"`, and says
/// nothing where the settings agree or a platform's run swept a load level (each is at
/// its best there).
#[test]
fn a_tco_says_which_settings_its_platforms_ran_at_where_they_differ() {
    let swept = client_sweep_run();
    let at = |id: &str, pipeline: u64| {
        let mut run = swept.clone();
        run.id = id.into();
        run.results
            .retain(|r| r.params.get("pipeline") == Some(&serde_json::json!(pipeline)));
        run
    };
    let (deep, shallow) = (at("deep", 100), at("shallow", 1));
    let note = |runs: [&RunRecord; 2], extra: &str| {
        let mut plan = one_platform_plan(&runs[0].id, extra);
        plan.platforms.push(tco::Platform {
            name: "b".into(),
            run: Some(runs[1].id.clone()),
            ..plan.platforms[0].clone()
        });
        let from: Vec<tco::FromRun> = plan
            .platforms
            .iter()
            .zip(runs)
            .map(|(p, run)| match p.perf_from {
                tco::PerfFrom::Geomean => report::selection::tco_from_run(run, p).unwrap(),
                tco::PerfFrom::Max => tco::from_run(run, p),
            })
            .collect();
        let by_name: BTreeMap<String, tco::FromRun> = plan
            .platforms
            .iter()
            .map(|p| p.name.clone())
            .zip(from.iter().cloned())
            .collect();
        // The TCO's own check lets them through: their tests are named alike.
        tco::evaluate(&plan, &by_name).unwrap();
        let measured: Vec<(&tco::Platform, &RunRecord, &tco::FromRun)> = plan
            .platforms
            .iter()
            .zip(runs)
            .zip(&from)
            .map(|((p, run), fr)| (p, run, fr))
            .collect();
        report::selection::tco_settings_note(&measured)
    };
    for extra in ["", "perf_from = \"max\"\n"] {
        let said = note([&deep, &shallow], extra).unwrap_or_default();
        assert!(
            said.contains("measured at different settings")
                && said.contains("x86: pipeline=100; b: pipeline=1"),
            "{extra}: {said}"
        );
        assert_eq!(note([&deep, &at("deep2", 100)], extra), None, "{extra}");
        // A capacity test's knob given beside the load tests (`--slo` with `-t
        // set,search`) is no setting of theirs: the platforms differ in none.
        let mut with_slo = at("deep3", 100);
        for r in &mut with_slo.results {
            r.params.insert("slo".into(), serde_json::json!("p99<1ms"));
        }
        assert_eq!(note([&deep, &with_slo], extra), None, "{extra}");
    }
    // A load level both took their best over is no setting, however their bests differ;
    // one fixed on one side (clients=5) is.
    let mut best_at_five = at("best-at-5", 1);
    for r in &mut best_at_five.results {
        if r.params.get("clients") == Some(&serde_json::json!(5)) {
            for m in r.metrics.iter_mut().filter(|m| m.name == "ops_per_s") {
                m.value *= 100.0;
            }
        }
    }
    assert_eq!(note([&shallow, &best_at_five], ""), None);
    let mut few = at("few", 1);
    few.results
        .retain(|r| r.params.get("clients") == Some(&serde_json::json!(5)));
    let said = note([&shallow, &few], "").unwrap_or_default();
    assert!(said.contains("x86: clients=40; b: clients=5"), "{said}");
}

/// A one-platform TCO plan over run `x86-a` with `perf_from = "max"`, `extra` added to
/// its platform.
fn max_plan(extra: &str) -> tco::Plan {
    one_platform_plan("x86-a", &format!("perf_from = \"max\"\n{extra}"))
}

/// With `perf_from = "max"` the performance is one sweep point's (the highest headline),
/// and the power is that point's too, not the mean over every point of the sweep.
#[test]
fn tco_max_takes_power_from_the_best_point_only() {
    let run = kv_run(&Spec {
        reps: 2,
        instances: &[1, 2, 4],
        ..Spec::default()
    });
    let plan = max_plan("test = \"get\"\n");
    let p = &plan.platforms[0];
    let fr = tco::from_run(&run, p);
    let perf = fr.perf.as_ref().unwrap();
    let power = fr.power_w.as_ref().unwrap();
    // The best point, found independently: the highest mean headline of `get`.
    let mut by_point: BTreeMap<String, Vec<&ResultRecord>> = BTreeMap::new();
    for r in run.results.iter().filter(|r| r.test == "get") {
        by_point
            .entry(format!("{:?}", r.params))
            .or_default()
            .push(r);
    }
    let mean = |rs: &[&ResultRecord], f: &dyn Fn(&ResultRecord) -> f64| {
        rs.iter().map(|r| f(r)).sum::<f64>() / rs.len() as f64
    };
    let headline = |r: &ResultRecord| r.headline_value().unwrap();
    let watts = |r: &ResultRecord| {
        model::power::headline(&r.telemetry_summary[0].power)
            .unwrap()
            .mean_watts
    };
    let best = by_point
        .values()
        .max_by(|a, b| mean(a, &headline).total_cmp(&mean(b, &headline)))
        .unwrap();
    assert!((perf.value - mean(best, &headline)).abs() < 1e-9);
    let want = mean(best, &watts);
    let every: Vec<&ResultRecord> = by_point.values().flatten().copied().collect();
    assert!(
        (mean(&every, &watts) - want).abs() > 1.0,
        "the fixture's points must draw different power for this test to tell"
    );
    assert!(
        (power.value - want).abs() < 1e-9,
        "{} W, the best point draws {want} W",
        power.value
    );
    assert!(
        power
            .source
            .contains("; the point is the performance figure's"),
        "{}",
        power.source
    );
}

/// Issue 13 item 8: the Markdown summary's header keeps the unit's case (`MB/s`, not
/// `mb/s`), and a summary point is named by the parameters that vary, the fixed ones
/// said once (`Fixed parameters: requests=20000`), not repeated in every cell.
#[test]
fn markdown_summary_keeps_units_and_names_points_by_what_varies() {
    let mut run = kv_run(&Spec::default());
    for r in &mut run.results {
        r.params.insert("requests".into(), serde_json::json!(20000));
        for m in &mut r.metrics {
            if m.name == "ops_per_s" {
                m.unit = "MB/s".into();
            }
        }
    }
    let runs = [run];
    let md = report::markdown(&runs, None);
    assert!(md.contains(": performance (MB/s) |"), "{md}");
    assert!(!md.contains("mb/s"), "{md}");
    assert!(md.contains("Fixed parameters: requests=20000."), "{md}");
    let eff = report::derive::efficiency_rows(&runs);
    assert!(!eff.is_empty());
    for (_, _, point, _) in &eff {
        assert!(!point.contains("requests="), "{point}");
        assert!(
            point.contains("instances=") || point.contains("pipeline="),
            "{point}"
        );
    }
}

/// A single-host run (`sut+loadgen`): the host's busy CPU is the load generator's too (an
/// open-loop generator spinning a core), so the server's %CPU and CPU per operation are
/// its watched server processes', labelled so; without them the figure is missing with
/// the reason, never the host's. A host that is only the system under test keeps the
/// whole-host figure, and a workload whose work runs in the driver (crypto) too.
#[test]
fn sut_cpu_on_a_host_that_also_ran_the_load_generator() {
    let one = |id: &'static str, role: &str, procs: &[(&str, f64)]| {
        let mut run = kv_run(&Spec {
            id,
            label: id,
            reps: 1,
            instances: &[1],
            ..Spec::default()
        });
        run.hosts[0].role = role.into();
        run.results.truncate(1);
        let r = &mut run.results[0];
        r.metrics = vec![model::Metric::new("ops_per_s", 100_000.0, "ops/s")];
        r.telemetry_summary[0].procs = procs
            .iter()
            .enumerate()
            .map(|(i, (role, pct))| model::ProcCpu {
                role: role.to_string(),
                pid: 100 + i as u32,
                usr_pct: pct * 0.25,
                sys_pct: pct * 0.75,
                with_descendants: false,
            })
            .collect();
        run
    };
    let host_busy: f64 = {
        let run = one("h", "sut", &[]);
        run.results[0].telemetry_summary[0]
            .cpus
            .iter()
            .filter(|c| c.cpu >= 0)
            .map(|c| c.busy_pct())
            .sum()
    };
    let cpu = |run: &RunRecord| {
        let pts = report::derive::points(0, run);
        let e = pts[0].efficiency().unwrap();
        (e.cpu_used.clone(), e.cpu_pct_per_perf.ok())
    };
    let spinning = [("loadgen", 100.0), ("server:0", 20.0), ("server:1", 10.0)];

    // Single host, server processes watched: theirs, and said so.
    let shared = one("a", "sut+loadgen", &spinning);
    let (c, per_perf) = cpu(&shared);
    let c = c.unwrap();
    assert!((c.pct - 30.0).abs() < 1e-9, "{c:?}");
    assert_eq!(c.basis.label(), "server processes (server x2)");
    assert!((per_perf.unwrap() - 30.0 / 100_000.0).abs() < 1e-12);
    let h = report::html(std::slice::from_ref(&shared), None);
    assert!(h.contains("30.0%<br><span class=\"muted\">server processes (server x2)</span>"));
    let m = report::markdown(std::slice::from_ref(&shared), None);
    assert!(
        m.contains("| 30.0% (server processes (server x2)) |"),
        "{m}"
    );

    // The system under test in a namespace of the generator's machine (one boot id, the
    // runner says so): its CPUs hold the generator's work, so the server processes'
    // (acceptance K, F1: 199% "whole SUT host" against 38% of the server's).
    let mut ns = one("n", "sut", &spinning);
    ns.hosts[0]
        .facts
        .insert(model::KERNEL_SHARED_WITH.into(), model::Fact::known("gen1"));
    ns.hosts.push(model::HostDisclosure {
        host: "gen1".into(),
        role: "loadgen".into(),
        facts: Default::default(),
    });
    let (c, _) = cpu(&ns);
    assert_eq!(c.unwrap().basis.label(), "server processes (server x2)");
    assert!(model::sut_ran_loadgen(&ns.hosts, &ns.hosts[0].host));
    // Another host on the same kernel that generated no load changes nothing.
    ns.hosts[1].role = "controller".into();
    let (c, _) = cpu(&ns);
    assert_eq!(c.unwrap().basis.label(), "whole SUT host");

    // Single host, only the generator watched: missing, with the reason, never the host's.
    let blind = one("b", "sut+loadgen", &[("loadgen", 100.0)]);
    let (c, per_perf) = cpu(&blind);
    let why =
        "the SUT host also ran the load generator (itself, or another host on its kernel); no per-process CPU of the server was recorded";
    assert_eq!(c, Err(why.to_string()));
    assert_eq!(per_perf, None);
    let m = report::markdown(std::slice::from_ref(&blind), None);
    assert!(m.contains("| absent† |"), "{m}");
    assert!(
        m.contains(&format!("† %CPU used absent for b: {why}")),
        "{m}"
    );
    let h = report::html(std::slice::from_ref(&blind), None);
    assert!(h.contains(&format!("&dagger; %CPU used absent for b: {why}")));
    assert!(
        !h.contains(&format!("{host_busy:.1}%")),
        "the host's busy CPU shown"
    );

    // PostgreSQL's postmaster alone is not the server's CPU (its backends are not watched).
    let pg = one("p", "sut+loadgen", &[("loadgen", 100.0), ("postgres", 0.5)]);
    assert!(cpu(&pg)
        .0
        .unwrap_err()
        .contains("only `postgres` was watched"));
    // Counted with its backends (runs since), it is the server's CPU.
    let mut pg = one(
        "p2",
        "sut+loadgen",
        &[("loadgen", 100.0), ("postgres", 85.0)],
    );
    pg.results[0].telemetry_summary[0].procs[1].with_descendants = true;
    let c = cpu(&pg).0.unwrap();
    assert!((c.pct - 85.0).abs() < 1e-9, "{c:?}");
    assert_eq!(c.basis.label(), "server processes (postgres)");

    // A host that is only the system under test: its whole CPU, as the iperf3 study.
    let alone = one("s", "sut", &spinning);
    let c = cpu(&alone).0.unwrap();
    assert_eq!(c.basis, report::derive::CpuBasis::Host);
    assert!((c.pct - host_busy).abs() < 1e-9);
    // Crypto's work runs in the driver: that process's CPU is the work's, not the
    // host's with its neighbours (a busy neighbour made it read 3.8x the work's).
    let mut crypto = one("c", "sut+loadgen", &[("loadgen", 52.0)]);
    crypto.results[0].workload = "crypto".into();
    let c = cpu(&crypto).0.unwrap();
    assert_eq!(c.basis, report::derive::CpuBasis::WorkProcess);
    assert!((c.pct - 52.0).abs() < 1e-9, "{c:?}");
    assert_eq!(c.basis.label(), "rackbench's process, where the work runs");
    // Watched as the work since it has its own role: the same figure.
    crypto.results[0].telemetry_summary[0].procs[0].role = model::WORK_PROCESS.into();
    let c = cpu(&crypto).0.unwrap();
    assert_eq!(c.basis, report::derive::CpuBasis::WorkProcess);
    assert!((c.pct - 52.0).abs() < 1e-9, "{c:?}");
    // Without the process watched (an older record), the host's CPU, as before.
    crypto.results[0].telemetry_summary[0].procs.clear();
    let c = cpu(&crypto).0.unwrap();
    assert_eq!(c.basis, report::derive::CpuBasis::Host);
    assert!((c.pct - host_busy).abs() < 1e-9);

    // compare: per operation, named by its basis; missing with the reason.
    let metric = |a: &RunRecord, b: &RunRecord, name: &str| {
        report::compare(std::slice::from_ref(a), std::slice::from_ref(b))
            .rows
            .into_iter()
            .find(|r| r.metric == name)
    };
    let mut shared_b = one("a2", "sut+loadgen", &spinning);
    shared_b.hosts[0].facts = shared.hosts[0].facts.clone();
    let row = metric(&shared, &shared_b, "server_cpu_us_per_op").unwrap();
    // 30% of one CPU over 100k ops/s: 3 us of server CPU per operation.
    assert!((row.a.unwrap().mean - 3.0).abs() < 1e-9);
    assert!(metric(&shared, &shared_b, "cpu_us_per_op").is_none());
    let row = metric(&blind, &blind, "cpu_us_per_op").unwrap();
    assert_eq!(row.a, None);
    assert_eq!(row.verdict, format!("missing: {why}"));
    let row = metric(&blind, &alone, "cpu_us_per_op").unwrap();
    assert_eq!(row.verdict, format!("missing on A: {why}"));
    assert!(row.b.is_some());
    // Different bases on the two sides: each row is kept with its side's figure and
    // says why the other has none, rather than both dropping out of the table.
    let row = metric(&shared, &alone, "server_cpu_us_per_op").unwrap();
    assert!((row.a.unwrap().mean - 3.0).abs() < 1e-9);
    assert_eq!((row.b, row.diff_pct), (None, None));
    assert_eq!(
        row.verdict,
        "only on A: B has cpu_us_per_op (every CPU of the SUT host) where this side \
         counts the server processes' CPU: not comparable"
    );
    let row = metric(&shared, &alone, "cpu_us_per_op").unwrap();
    assert!(row.a.is_none() && row.b.is_some());
    assert!(row
        .verdict
        .starts_with("only on B: A has server_cpu_us_per_op"));
    let text = report::compare_text(&report::compare(
        std::slice::from_ref(&shared),
        std::slice::from_ref(&alone),
    ));
    assert!(text.contains("only on A: B has cpu_us_per_op"), "{text}");

    // Two repetitions at 100k and 200k ops/s, the server's CPU 30% in each: the point's
    // mean CPU over its mean throughput, 300 / 150,000 ops/s = 2 us per operation, as the
    // report's %CPU per op reads, not the mean of each repetition's (3 and 1.5: 2.25).
    let mut two = shared.clone();
    let mut second = two.results[0].clone();
    second.repetition = 1;
    second.metrics = vec![model::Metric::new("ops_per_s", 200_000.0, "ops/s")];
    two.results.push(second);
    let (_, per_op) = cpu(&two);
    assert!((per_op.unwrap() * 1e4 - 2.0).abs() < 1e-9);
    let row = metric(&two, &two, "server_cpu_us_per_op").unwrap();
    assert!((row.a.as_ref().unwrap().mean - 2.0).abs() < 1e-9, "{row:?}");
}

/// A sweep point one side ran and the other did not is said once, by its headline, not
/// left out of the comparison.
#[test]
fn compare_says_which_points_only_one_side_ran() {
    let run = |id: &'static str, instances: &'static [u32], seed: u64| {
        kv_run(&Spec {
            id,
            reps: 2,
            instances,
            seed,
            ..Spec::default()
        })
    };
    let a = run("20261120T230000-aaaaa1", &[1, 2], 1);
    let b = run("20261120T231000-bbbbb1", &[1], 2);
    let c = report::compare(std::slice::from_ref(&a), std::slice::from_ref(&b));
    let only: Vec<&report::CompareRow> = c
        .rows
        .iter()
        .filter(|r| r.verdict.starts_with("only on"))
        .collect();
    assert!(!only.is_empty(), "{:?}", c.rows);
    for r in &only {
        assert_eq!(r.verdict, "only on A: B has no such point", "{r:?}");
        assert!(r.point.contains("instances=2"), "{r:?}");
        assert_eq!(r.metric, "ops_per_s", "the headline alone: {r:?}");
        assert!(r.a.is_some() && r.b.is_none());
    }
    // The point both ran is compared as before.
    assert!(c
        .rows
        .iter()
        .any(|r| r.point.contains("instances=1") && r.b.is_some() && r.a.is_some()));
}

/// A run stored before CPU and power summaries were cut to each test's measured time
/// (no `covered_s`) does not compare like for like with one stored after: its CPU busy
/// and power read lower wherever a test had setup or teardown around its load. A side
/// without telemetry has no summaries to differ in.
#[test]
fn compare_names_summaries_taken_over_different_windows() {
    let a = kv_run(&Spec::default());
    let c = report::comparability(std::slice::from_ref(&a), std::slice::from_ref(&a));
    assert!(c.like_for_like, "{c:?}");
    // `b` as `a` with each summary changed by `f`: not like for like, and the windows
    // named (a's, b's).
    let windows_apart = |f: fn(&mut model::TelemetrySummary)| {
        let mut b = a.clone();
        for r in b.results.iter_mut() {
            r.telemetry_summary.iter_mut().for_each(f);
        }
        let c = report::comparability(std::slice::from_ref(&a), std::slice::from_ref(&b));
        assert!(!c.like_for_like, "{c:?}");
        let d = c
            .differences
            .iter()
            .find(|d| d.key == "rackbench.telemetry_window")
            .expect("the window is named");
        (b, d.a.clone(), d.b.clone())
    };
    let (old, now, then) = windows_apart(|s| s.covered_s = None);
    assert_eq!(now, "each test's measured time");
    assert!(then.starts_with("each test's whole time"), "{then}");
    // Edge samples weighed by their part inside rather than kept whole: chosen per test by
    // its length, so two runs of one command can differ in it; still like for like.
    let mut parts = a.clone();
    for r in parts.results.iter_mut() {
        r.telemetry_summary
            .iter_mut()
            .for_each(|s| s.whole_samples = false);
    }
    let c = report::comparability(std::slice::from_ref(&a), std::slice::from_ref(&parts));
    assert!(c.like_for_like, "{c:?}");
    let mut unsampled = a.clone();
    for r in unsampled.results.iter_mut() {
        r.telemetry_summary.clear();
    }
    let c = report::comparability(std::slice::from_ref(&old), std::slice::from_ref(&unsampled));
    assert!(
        !c.differences
            .iter()
            .any(|d| d.key == "rackbench.telemetry_window"),
        "{c:?}"
    );
}

/// A host whose virtual interfaces changed between runs (a container or namespace's
/// veth came or went) still compares like for like; a physical NIC's setting does not.
#[test]
fn compare_holds_no_virtual_interface_list_against_a_comparison() {
    let a = kv_run(&Spec::default());
    let mut b = a.clone();
    b.hosts[0].facts.insert(
        "nic.virtual".into(),
        model::Fact::known("docker0, veth1a2b"),
    );
    let c = report::comparability(std::slice::from_ref(&a), std::slice::from_ref(&b));
    assert!(c.like_for_like, "{c:?}");
    assert!(
        !c.differences.iter().any(|d| d.key == "nic.virtual"),
        "{c:?}"
    );
    let mut a = a;
    a.hosts[0]
        .facts
        .insert("nic.eth0.mtu".into(), model::Fact::known("1500"));
    b.hosts[0]
        .facts
        .insert("nic.eth0.mtu".into(), model::Fact::known("9000"));
    let c = report::comparability(std::slice::from_ref(&a), std::slice::from_ref(&b));
    assert!(!c.like_for_like, "{c:?}");
    assert!(c.verdict.contains("nic.eth0.mtu"), "{}", c.verdict);
}

/// The same load generators named in another order are the same method (acceptance K,
/// F4: `--loadgen rbh2,rbh3` against `rbh3,rbh2` read NOT like for like); others are not.
#[test]
fn compare_takes_the_load_generators_as_a_set() {
    let with = |hosts: &str| {
        let mut r = kv_run(&Spec::default());
        for x in r.results.iter_mut() {
            x.params
                .insert("loadgen_hosts".into(), serde_json::json!(hosts));
        }
        r
    };
    let c = report::comparability(&[with("rbh2,rbh3")], &[with("rbh3,rbh2")]);
    assert!(c.like_for_like, "{c:?}");
    let c = report::comparability(&[with("rbh2,rbh3")], &[with("rbh2,rbh4")]);
    assert!(
        c.differences
            .iter()
            .any(|d| d.key.ends_with("loadgen_hosts")),
        "{c:?}"
    );
}

/// A test of phases run one after another at different rates (mem's 1- and 2-thread
/// kernels, crypto's buffer sizes) has CPU and power over all of them and a headline of
/// one: no figure per unit of it, and why (acceptance L, 3).
#[test]
fn a_test_of_sequential_phases_has_no_cpu_or_power_per_unit() {
    let mut run = kv_run(&Spec {
        reps: 1,
        instances: &[1],
        ..Spec::default()
    });
    run.results.truncate(1);
    run.hosts[0].role = "sut".into();
    let per_unit = |run: &RunRecord| {
        let e = report::derive::points(0, run)[0].efficiency().unwrap();
        (e.cpu_pct_per_perf.clone(), e.perf_per_w.clone())
    };
    let (cpu, pw) = per_unit(&run);
    assert!(cpu.is_ok() && pw.is_ok(), "{cpu:?} {pw:?}");
    for t in ["1", "2"] {
        run.results[0]
            .metrics
            .push(model::Metric::new("bandwidth_gb_per_s", 10.0, "GB/s").label("threads", t));
    }
    let (cpu, pw) = per_unit(&run);
    let why = cpu.unwrap_err();
    assert!(
        why.contains("phases one after another (threads 1, 2)"),
        "{why}"
    );
    assert_eq!(pw.unwrap_err(), why);
    // compare gives none either, with the same reason (it divided the whole test's CPU
    // by the one phase's headline).
    let rows = report::compare(std::slice::from_ref(&run), std::slice::from_ref(&run)).rows;
    let cpu_rows: Vec<_> = rows
        .iter()
        .filter(|r| r.metric.contains("cpu_us_per_"))
        .collect();
    assert!(!cpu_rows.is_empty(), "{rows:?}");
    for r in cpu_rows {
        assert_eq!((r.a.as_ref(), r.b.as_ref()), (None, None), "{r:?}");
        assert!(r.verdict.contains(&why), "{}", r.verdict);
    }
    // The missing figure is named by whose CPU the test counts, as its siblings are: a
    // crypto test's is its work process's (it read `cpu_us_per_...`, the host's, beside
    // the other tests' `work_cpu_us_per_sign`).
    run.results[0].workload = "crypto".into();
    run.results[0].telemetry_summary[0]
        .procs
        .push(model::ProcCpu {
            role: model::LOADGEN_PROCESS.into(),
            pid: 1,
            usr_pct: 90.0,
            sys_pct: 5.0,
            with_descendants: false,
        });
    let rows = report::compare(std::slice::from_ref(&run), std::slice::from_ref(&run)).rows;
    let cpu: Vec<&str> = rows
        .iter()
        .filter(|r| r.metric.contains("cpu_us_per_"))
        .map(|r| r.metric.as_str())
        .collect();
    assert_eq!(cpu, ["work_cpu_us_per_op"], "{rows:?}");
    // A key's signs, then its verifies: the whole test's CPU over the signs' rate read
    // 436 µs a sign where the signs took 353.
    let mut rsa = run.clone();
    rsa.results[0].metrics.retain(|m| m.labels.is_empty());
    rsa.results[0].headline = "signs_per_s".into();
    rsa.results[0].metrics.extend([
        model::Metric::new("signs_per_s", 2800.0, "ops/s"),
        model::Metric::new("verifies_per_s", 45000.0, "ops/s"),
    ]);
    let (cpu, pw) = per_unit(&rsa);
    let why = cpu.unwrap_err();
    assert!(why.contains("(signs, then verifies)"), "{why}");
    assert_eq!(pw.unwrap_err(), why);
    let rows = report::compare(std::slice::from_ref(&rsa), std::slice::from_ref(&rsa)).rows;
    let sign = rows
        .iter()
        .find(|r| r.metric == "work_cpu_us_per_sign")
        .unwrap_or_else(|| panic!("{rows:?}"));
    assert_eq!((sign.a.as_ref(), sign.b.as_ref()), (None, None), "{sign:?}");
    assert!(sign.verdict.contains(&why), "{}", sign.verdict);
    // Signs alone (the verifies not reached): one phase, a figure per sign.
    rsa.results[0]
        .metrics
        .retain(|m| m.name != "verifies_per_s");
    let (cpu, _) = per_unit(&rsa);
    assert!(cpu.is_ok(), "{cpu:?}");
}

/// Runs whose watts come from different declared power models (or a model against a
/// meter) do not compare like for like: the power and perf/W differences are the models'.
/// Sources a host has (IPMI on one, RAPL on the other) are named as hardware.
#[test]
fn compare_names_a_difference_of_power_provenance() {
    let model = |m: &str| {
        let mut r = kv_run(&Spec {
            power: Power::Modelled(200.0),
            ..Spec::default()
        });
        r.plan = serde_json::json!({ "run": { "power_model": m } });
        r
    };
    let (a, b) = (model("100:200"), model("100:300"));
    let c = report::comparability(std::slice::from_ref(&a), std::slice::from_ref(&a));
    assert!(c.like_for_like, "{c:?}");
    let c = report::comparability(std::slice::from_ref(&a), std::slice::from_ref(&b));
    assert!(!c.like_for_like, "{c:?}");
    let d = c
        .differences
        .iter()
        .find(|d| d.key == "rackbench.power_source")
        .expect("the power's provenance is named");
    assert_eq!(
        (d.a.as_str(), d.b.as_str()),
        ("model 100:200 W", "model 100:300 W")
    );
    assert_eq!(d.category, "method");
    // Two models on one side are two sources: no power or perf/W averaged over them
    // (177 W and its perf/W were printed over runs at 60:160 and 50:200 W).
    let mut a2 = model("100:300");
    a2.id = "20261120T230009-cccccc".into();
    let rows = report::compare(&[a.clone(), a2], std::slice::from_ref(&b)).rows;
    let power = rows
        .iter()
        .find(|r| r.metric.starts_with("power_w"))
        .unwrap_or_else(|| panic!("{rows:?}"));
    assert!(power.a.is_none() && power.b.is_some(), "{power:?}");
    assert!(
        power.verdict.contains("different sources")
            && power.verdict.contains("(100:200 W)")
            && power.verdict.contains("(100:300 W)"),
        "{}",
        power.verdict
    );
    // The report's power cells name the model too, as compare and the TCO do: a run's
    // `model system` alone read as the other's.
    let p = report::derive::points(0, &b)[0].power().unwrap();
    assert_eq!(p.source, "model system (100:300 W)");
    assert!(
        report::html(std::slice::from_ref(&b), None).contains("model system (100:300 W)"),
        "the HTML report does not name the model"
    );
    // Found on the hosts, not declared: hardware, named but not held against the runs.
    let ipmi = kv_run(&Spec {
        power: Power::Ipmi(300.0),
        ..Spec::default()
    });
    let rapl = kv_run(&Spec {
        power: Power::Rapl(150.0),
        ..Spec::default()
    });
    let c = report::comparability(std::slice::from_ref(&ipmi), std::slice::from_ref(&rapl));
    let d = c
        .differences
        .iter()
        .find(|d| d.key == "rackbench.power_source")
        .expect("named");
    assert_eq!(
        (d.a.as_str(), d.b.as_str(), d.category.as_str()),
        ("ipmi-dcmi, rapl", "rapl", "hardware")
    );
    assert!(c.like_for_like, "{c:?}");
}

/// A compared point whose results carry warnings says so beside the comparison (text,
/// JSON, HTML, Markdown), per side; points without warnings are not listed, and an
/// invalid result is not compared at all (its warnings with it).
#[test]
fn compare_lists_the_warnings_of_the_points_it_compares() {
    let mut a = kv_run(&Spec {
        id: "20261120T230000-aaaaaa",
        instances: &[1],
        ..Spec::default()
    });
    let mut b = kv_run(&Spec {
        id: "20261120T230001-bbbbbb",
        instances: &[1],
        ..Spec::default()
    });
    // The fixture's own flags (client_bound) out of the way.
    for r in a.results.iter_mut().chain(b.results.iter_mut()) {
        r.flags.clear();
    }
    let first = b.results[0].clone();
    b.results[0].flags.push(model::Flag::warning(
        "cpu_coarse",
        "host local: its CPU figures cover 0.06 s of measured time",
    ));
    b.results[0]
        .flags
        .push(model::Flag::warning("<b>odd</b>", "escaped"));
    let c = report::compare::compare(std::slice::from_ref(&a), std::slice::from_ref(&b));
    assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
    let w = &c.warnings[0];
    assert!(
        w.point.contains(&first.test),
        "{} at {}",
        w.point,
        first.test
    );
    assert!(w.a.is_empty());
    assert_eq!(w.b, ["<b>odd</b>", "cpu_coarse"]);
    let text = report::compare_text(&c);
    assert!(
        text.contains(&format!("{}: A: none; B: <b>odd</b>, cpu_coarse", w.point)),
        "{text}"
    );
    let json = serde_json::to_value(&c).unwrap();
    assert_eq!(json["warnings"][0]["b"][1], "cpu_coarse", "{json}");
    let both = [a.clone(), b.clone()];
    let html = report::html(&both, None);
    assert!(html.contains("A: none; B: &lt;b&gt;odd&lt;/b&gt;, cpu_coarse"));
    assert!(!html.contains("<b>odd</b>"));
    let md = report::markdown(&both, None);
    assert!(
        md.contains("kv set pipeline=1: A: none; B: &lt;b&gt;odd&lt;/b&gt;, cpu\\_coarse"),
        "{md}"
    );

    // Invalid: not compared, so no warning of it is listed either.
    b.results[0]
        .flags
        .push(model::Flag::invalid("errors", "every request failed"));
    let c = report::compare::compare(std::slice::from_ref(&a), std::slice::from_ref(&b));
    assert!(
        c.warnings.iter().all(|w| w.b.is_empty()),
        "{:?}",
        c.warnings
    );
    // Without any warning, nothing is said.
    let c = report::compare::compare(std::slice::from_ref(&a), std::slice::from_ref(&a));
    assert!(c.warnings.is_empty());
    assert!(!report::compare_text(&c).contains("Warnings at compared points"));
}

/// The acceptance tester's `compare` of a kv run and a net run listed points on one side
/// only, exited 0 and said nothing; a point B did not run read "B: none" in the warnings.
#[test]
fn compare_says_when_the_runs_share_no_point_and_absent_for_one_sided_points() {
    let a = kv_run(&Spec {
        id: "20261120T230000-aaaaaa",
        instances: &[1],
        ..Spec::default()
    });
    let mut b = kv_run(&Spec {
        id: "20261120T230001-bbbbbb",
        instances: &[1],
        ..Spec::default()
    });
    let same = report::compare::compare(std::slice::from_ref(&a), std::slice::from_ref(&b));
    assert_eq!(same.nothing_in_common, None);
    // A's points with a warning, B without them: "absent", not "none".
    let mut a_more = a.clone();
    let mut extra = a_more.results[0].clone();
    extra.test = "hset".into();
    extra.flags = vec![model::Flag::warning("cpu_coarse", "coarse")];
    a_more.results.push(extra);
    let c = report::compare::compare(std::slice::from_ref(&a_more), std::slice::from_ref(&b));
    assert_eq!(c.nothing_in_common, None);
    let w = c
        .warnings
        .iter()
        .find(|w| w.point.contains("hset"))
        .unwrap();
    assert_eq!(w.text(), "A: cpu_coarse; B: absent");
    // Nothing in common: said, with what each side has.
    for r in &mut b.results {
        r.workload = "net".into();
    }
    let c = report::compare::compare(std::slice::from_ref(&a), std::slice::from_ref(&b));
    let why = c.nothing_in_common.clone().unwrap();
    assert!(why.starts_with("the runs share no test point"), "{why}");
    assert!(
        why.contains("A has") && why.contains("kv ") && why.contains("net "),
        "{why}"
    );
    assert!(report::compare_text(&c).contains("Nothing compared: the runs share no test point"));
    let json = serde_json::to_value(&c).unwrap();
    assert!(json["nothing_in_common"].is_string(), "{json}");
    // A side whose run stored no result (killed before its first test ended): said, not
    // an empty table called like for like.
    let mut killed = b.clone();
    killed.results.clear();
    killed.status = Status::Interrupted;
    let c = report::compare::compare(std::slice::from_ref(&a), std::slice::from_ref(&killed));
    let why = c.nothing_in_common.unwrap();
    assert!(
        why.starts_with(&format!(
            "side B's run(s) {} (interrupted) stored no result",
            killed.id
        )),
        "{why}"
    );
}

/// Perf/W is over the repetitions that have both figures: a repetition whose power was
/// not read adds its throughput to neither side (100k, 100k and 160k over 300 W, 300 W
/// and none is 333 per W, not the 400 of the three's mean over the two's).
#[test]
fn perf_per_watt_is_over_the_repetitions_with_power() {
    let mut run = kv_run(&Spec {
        reps: 3,
        instances: &[2],
        power: Power::Ipmi(200.0),
        ..Spec::default()
    });
    let first = run.results.iter().position(|r| r.test == "get").unwrap();
    let params = run.results[first].params.clone();
    let get: Vec<usize> = (0..run.results.len())
        .filter(|&i| run.results[i].test == "get" && run.results[i].params == params)
        .collect();
    assert_eq!(get.len(), 3);
    let third = &mut run.results[get[2]];
    for ts in &mut third.telemetry_summary {
        ts.power.clear();
        ts.power_missing = Some("no reading inside the test".into());
    }
    let headline = third.headline.clone();
    for m in third.metrics.iter_mut() {
        if m.name == headline && m.labels.is_empty() {
            m.value *= 1.6;
        }
    }
    let perf = |r: &ResultRecord| r.headline_value().unwrap();
    let watts = |r: &ResultRecord| {
        model::power::headline(&r.telemetry_summary[0].power)
            .unwrap()
            .mean_watts
    };
    let (a, b) = (&run.results[get[0]], &run.results[get[1]]);
    let want = (perf(a) + perf(b)) / (watts(a) + watts(b));
    let pts = report::derive::points(0, &run);
    let p = pts
        .iter()
        .find(|p| p.test == "get" && p.params == params)
        .unwrap();
    let e = p.efficiency().unwrap();
    assert!(
        (e.perf_per_w.clone().unwrap() - want).abs() < 1e-9 * want,
        "{:?} per W, the two powered repetitions give {want}",
        e.perf_per_w
    );
    // The throughput shown is still every valid repetition's mean.
    let all = (perf(a) + perf(b) + perf(&run.results[get[2]])) / 3.0;
    assert!((e.perf - all).abs() < 1e-9 * all);
}

/// %CPU per unit is over the repetitions that have both figures, as perf/W is: one whose
/// CPU was not read adds its throughput to neither (it divided the others' CPU by the
/// three's mean throughput, 17% low here); compare's CPU per unit alike.
#[test]
fn cpu_per_unit_is_over_the_repetitions_with_cpu() {
    let mut run = kv_run(&Spec {
        reps: 3,
        instances: &[2],
        ..Spec::default()
    });
    // A server host of its own: its CPU is the host's.
    run.hosts[0].role = "sut".into();
    let first = run.results.iter().position(|r| r.test == "get").unwrap();
    let params = run.results[first].params.clone();
    let get: Vec<usize> = (0..run.results.len())
        .filter(|&i| run.results[i].test == "get" && run.results[i].params == params)
        .collect();
    let third = &mut run.results[get[2]];
    for ts in &mut third.telemetry_summary {
        ts.cpus.clear();
    }
    let headline = third.headline.clone();
    for m in third.metrics.iter_mut() {
        if m.name == headline && m.labels.is_empty() {
            m.value *= 1.6;
        }
    }
    assert!(report::derive::sut_cpu(&run, &run.results[get[2]]).is_err());
    let cpu = |i: usize| report::derive::sut_cpu(&run, &run.results[i]).unwrap().pct;
    let perf = |i: usize| run.results[i].headline_value().unwrap();
    let want = (cpu(get[0]) + cpu(get[1])) / (perf(get[0]) + perf(get[1]));
    let pts = report::derive::points(0, &run);
    let p = pts
        .iter()
        .find(|p| p.test == "get" && p.params == params)
        .unwrap();
    let got = p.efficiency().unwrap().cpu_pct_per_perf.unwrap();
    assert!((got - want).abs() < 1e-9 * want, "{got}, want {want}");
    let c = report::compare(std::slice::from_ref(&run), std::slice::from_ref(&run));
    let row = c
        .rows
        .iter()
        .find(|r| r.metric.starts_with("cpu_us_per") && r.point.starts_with("kv get"))
        .unwrap_or_else(|| panic!("{:?}", c.rows));
    let us = row.a.as_ref().unwrap().mean;
    assert!((us - want / 100.0 * 1e6).abs() < 1e-6 * us, "{us}");
}

/// A headline better lower (a latency) has no per-watt figure, and rows of different
/// units are tables of their own, each column headed with its unit: a latency's table is
/// headed "Latency (ns)", with no per-watt columns, never "Throughput (ns)".
#[test]
fn efficiency_is_per_unit_and_of_throughputs_only() {
    // Acceptance pass F, F20: one scale for a table's per-unit columns, from the
    // throughput (it was each column's own: "W per 1k ops/s" beside "%CPU per ops/s", and
    // "per ops/s" for a column of zeros).
    assert_eq!(
        report::derive::throughput_scale(&[95_000.0, 1.9e6]),
        (1e3, "1k ")
    );
    assert_eq!(report::derive::throughput_scale(&[12.9]), (1.0, ""));
    assert_eq!(report::derive::throughput_scale(&[0.0]), (1.0, ""));
    assert_eq!(report::derive::throughput_scale(&[3e6]), (1e6, "1M "));
    let mut run = kv_run(&Spec {
        reps: 1,
        instances: &[2],
        power: Power::Ipmi(200.0),
        ..Spec::default()
    });
    for r in run.results.iter_mut().filter(|r| r.test == "set") {
        r.headline = "latency_p50_ns".into();
        r.metrics.push(Metric::new("latency_p50_ns", 95.0, "ns"));
    }
    let runs = [run];
    let eff = report::derive::efficiency_rows(&runs);
    let latency = eff.iter().find(|r| r.3.unit.contains("ns")).unwrap();
    assert!(!latency.3.throughput);
    let why = report::derive::NOT_A_THROUGHPUT;
    assert_eq!(latency.3.perf_per_w, Err(why.to_string()));
    assert_eq!(latency.3.w_per_perf, Err(why.to_string()));
    assert_eq!(latency.3.cpu_pct_per_perf, Err(why.to_string()));
    let ops = eff.iter().find(|r| !r.3.unit.contains("ns")).unwrap();
    assert!(ops.3.throughput && ops.3.perf_per_w.is_ok());
    let md = report::markdown(&runs, None);
    let heads: Vec<&str> = md
        .lines()
        .filter(|l| l.starts_with("| Test | Run | "))
        .collect();
    assert_eq!(
        heads,
        [
            "| Test | Run | Latency (ns) | Power | %CPU used |",
            "| Test | Run | Throughput (ops/s) | Power | Idle | Perf/W (ops/s per W) | W per 1k \
             ops/s | W above idle per 1k ops/s | %CPU used | %CPU per 1k ops/s |"
        ],
        "{md}"
    );
    assert!(!md.contains("Throughput (ns)"), "{md}");
    assert!(md.contains(&format!("No perf/W, W or %CPU per unit here: {why}.")));
    let h = report::html(&runs, None);
    assert!(!h.contains("Throughput (ns)"));
    assert_eq!(h.matches("<caption>Efficiency at each run").count(), 1);
    assert_eq!(
        h.matches("<caption>Latency at each run&#39;s best point, with the power and CPU it ran at</caption><tr><th>Test</th><th>Run</th><th>Latency (ns)</th><th>Power</th><th>%CPU used</th></tr>").count(),
        1,
        "{h}"
    );
}

/// A levels test's headline is per watt (SPECpower's overall figure): set against
/// another's only when their levels' power is of one basis, as power and perf/W are.
#[test]
fn compare_sets_levels_per_watt_against_the_same_power_basis_only() {
    let side = |scope: &str, source: &str, ids: [&'static str; 2], per_w: f64| -> Vec<RunRecord> {
        ids.iter()
            .enumerate()
            .map(|(i, id)| {
                let mut run = kv_run(&Spec {
                    id,
                    reps: 1,
                    instances: &[1],
                    seed: 40 + i as u64,
                    ..Spec::default()
                });
                let mut levels = run.results[0].clone();
                levels.test = "levels".into();
                levels.params.clear();
                levels.headline = "overall_reply_rate_per_w".into();
                levels.histograms.clear();
                levels.telemetry_summary.clear();
                levels.metrics = vec![Metric::new(
                    "overall_reply_rate_per_w",
                    per_w * (1.0 + 0.01 * i as f64),
                    "ops/s/W",
                )];
                for level in ["100%", "50%", "active_idle"] {
                    levels.metrics.push(
                        Metric::new("power_w", 200.0, "W")
                            .label("phase", "levels")
                            .label("level", level)
                            .label("source", source)
                            .label("scope", scope),
                    );
                }
                run.results.push(levels);
                run
            })
            .collect()
    };
    let a = side(
        "whole_system",
        "ipmi-dcmi:system",
        ["20261120T230000-aaaaa1", "20261120T230100-aaaaa2"],
        250.0,
    );
    let b = side(
        "cpu_and_dram",
        "rapl:package-0+dram-0",
        ["20261120T231000-bbbbb1", "20261120T231100-bbbbb2"],
        650.0,
    );
    let levels_row = |b: &[RunRecord]| -> report::CompareRow {
        let c = report::compare(&a, b);
        c.rows
            .iter()
            .find(|r| r.metric.starts_with("overall_reply_rate_per_w"))
            .cloned()
            .unwrap_or_else(|| panic!("a levels row: {:?}", c.rows))
    };
    let row = levels_row(&b);
    assert!(row.verdict.starts_with("not comparable"), "{row:?}");
    assert!(row.diff_pct.is_none(), "{row:?}");
    // Of one basis on both sides: compared.
    let b2 = side(
        "whole_system",
        "ipmi-dcmi:system",
        ["20261120T231000-bbbbb1", "20261120T231100-bbbbb2"],
        300.0,
    );
    let row = levels_row(&b2);
    assert!(row.diff_pct.is_some(), "{row:?}");
    // A side whose levels' power is of unlike bases has no figure to set against.
    let mut mixed = b2.clone();
    for run in &mut mixed {
        let levels = run.results.iter_mut().find(|r| r.test == "levels").unwrap();
        let m = levels
            .metrics
            .iter_mut()
            .find(|m| m.name == "power_w")
            .unwrap();
        m.labels.insert("scope".into(), "cpu_and_dram".into());
        m.labels
            .insert("source".into(), "rapl:package-0+dram-0".into());
    }
    let row = levels_row(&mixed);
    assert!(row.diff_pct.is_none(), "{row:?}");
    assert!(row.verdict.contains("unlike sources"), "{row:?}");
}

/// A TCO taken from a run leaves its capacity tests out: a ramp's headline is its peak,
/// its power the mean of every step, and neither is a server's. With `perf_from = "max"`
/// the performance is an ordinary test's, in that test's unit; headlines of different
/// units are no maximum at all.
#[test]
fn tco_from_a_run_leaves_capacity_tests_out() {
    let mut run = kv_run(&Spec {
        reps: 1,
        instances: &[1],
        ..Spec::default()
    });
    let best = run
        .results
        .iter()
        .filter_map(|r| r.headline_value())
        .fold(0.0, f64::max);
    let mut ramp = run.results[0].clone();
    ramp.test = "ramp".into();
    ramp.params.clear();
    ramp.headline = "max_reply_rate_per_s".into();
    ramp.metrics = vec![
        Metric::new("max_reply_rate_per_s", 10.0 * best, "ops/s"),
        Metric::new("reply_rate_per_s", 10.0 * best, "ops/s")
            .label("phase", "ramp")
            .label("step", 0),
    ];
    run.results.push(ramp);
    let plan = max_plan("");
    let fr = tco::from_run(&run, &plan.platforms[0]);
    let perf = fr.perf.as_ref().unwrap();
    assert_eq!(perf.value, best, "{perf:?}");
    assert!(!perf.source.contains("ramp"), "{perf:?}");
    // Headlines in different units: no maximum across them.
    let mut mixed = run.clone();
    let last = mixed.results.len() - 2;
    let r = &mut mixed.results[last];
    let headline = r.headline.clone();
    for m in r.metrics.iter_mut().filter(|m| m.name == headline) {
        m.unit = "MB/s".into();
    }
    let fr = tco::from_run(&mixed, &plan.platforms[0]);
    assert!(fr.perf.is_none(), "{:?}", fr.perf);
    assert!(
        fr.problems.iter().any(|p| p.contains("different units")),
        "{:?}",
        fr.problems
    );
}

/// The acceptance tester's `tco` over a ramp run said "no valid result to take
/// performance from": the results are valid, capacity tests cannot give the figure.
#[test]
fn tco_over_a_capacity_run_says_capacity_tests_give_no_performance() {
    let mut run = kv_run(&Spec {
        reps: 1,
        instances: &[1],
        ..Spec::default()
    });
    let mut ramp = run.results[0].clone();
    ramp.test = "ramp".into();
    ramp.params.clear();
    ramp.headline = "max_reply_rate_per_s".into();
    ramp.metrics = vec![
        Metric::new("max_reply_rate_per_s", 1000.0, "ops/s"),
        Metric::new("reply_rate_per_s", 1000.0, "ops/s")
            .label("phase", "ramp")
            .label("step", 0),
    ];
    run.results = vec![ramp];
    let plan = one_platform_plan("x86-a", "");
    let e = report::selection::tco_perf(&run, &plan.platforms[0]).unwrap_err();
    assert!(!e.contains("no valid result"), "{e}");
    assert!(e.contains("capacity tests (kv ramp)"), "{e}");
    assert!(e.contains("-t load") && e.contains("`perf`"), "{e}");
    // Taking the best result instead: the same reason.
    let fr = tco::from_run(&run, &max_plan("").platforms[0]);
    assert!(
        fr.problems.iter().any(|p| p.contains("capacity tests")),
        "{:?}",
        fr.problems
    );
    // A run with nothing valid still says so.
    run.results[0].status = model::Status::Failed;
    let e = report::selection::tco_perf(&run, &plan.platforms[0]).unwrap_err();
    assert!(e.contains("no valid result"), "{e}");
}

/// Performance given in the plan and power from a run of several sweep points: no power
/// (their mean is of no one configuration) until `params` names the point.
#[test]
fn tco_with_perf_given_takes_power_of_one_point_only() {
    let run = kv_run(&Spec {
        reps: 1,
        instances: &[1, 2, 4],
        ..Spec::default()
    });
    // With `perf_from = "max"` too: the given figure's point is not the run's best.
    for extra in ["", "perf_from = \"max\"\n"] {
        let plan = one_platform_plan("x86-a", &format!("perf = 1000000\ntest = \"get\"\n{extra}"));
        let fr = tco::from_run(&run, &plan.platforms[0]);
        assert!(fr.power_w.is_none(), "{extra}{:?}", fr.power_w);
        assert!(
            fr.problems.iter().any(|p| p.contains("sweep points")),
            "{extra}{:?}",
            fr.problems
        );
    }
    let params = &run.results.iter().find(|r| r.test == "get").unwrap().params;
    let at: Vec<String> = params.iter().map(|(k, v)| format!("{k} = {v}")).collect();
    let plan = one_platform_plan(
        "x86-a",
        &format!(
            "perf = 1000000\ntest = \"get\"\nparams = {{ {} }}\n",
            at.join(", ")
        ),
    );
    let fr = tco::from_run(&run, &plan.platforms[0]);
    assert!(fr.power_w.is_some(), "{:?}", fr.problems);
    // One configuration of two tests (`-t set,get`): one `perf` is of one of them, and
    // the mean of their power of neither (it was taken, "mean of 2 point(s)").
    let at = at.join(", ");
    let plan = one_platform_plan("x86-a", &format!("perf = 1000000\nparams = {{ {at} }}\n"));
    let fr = tco::from_run(&run, &plan.platforms[0]);
    assert!(fr.power_w.is_none(), "{:?}", fr.power_w);
    assert!(
        fr.problems.iter().any(|p| p.contains("2 sweep points")
            && p.contains("get ")
            && p.contains("set ")
            && p.contains("give `test` for")),
        "{:?}",
        fr.problems
    );
}

/// Acceptance pass K, 11: a run with no power at all, swept over instances, first asked
/// for `params` (which cannot help) and only then said "no power source found". The
/// power comes first now. And a killed run's "no valid result to take performance from"
/// says its only result is interrupted (partial).
#[test]
fn tco_from_a_run_gives_the_reason_no_params_can_fix_first() {
    let run = kv_run(&Spec {
        reps: 1,
        instances: &[1, 2, 4],
        power: Power::None,
        ..Spec::default()
    });
    let plan = one_platform_plan("x86-a", "perf = 1000000\n");
    let fr = tco::from_run(&run, &plan.platforms[0]);
    assert!(fr.power_w.is_none());
    assert_eq!(fr.problems.len(), 1, "{:?}", fr.problems);
    assert!(
        fr.problems[0].contains("no power source found"),
        "{:?}",
        fr.problems
    );
    assert!(
        !fr.problems[0].contains("sweep points"),
        "{:?}",
        fr.problems
    );
    // With power, the sweep still needs `params`.
    let run = kv_run(&Spec {
        reps: 1,
        instances: &[1, 2, 4],
        ..Spec::default()
    });
    let fr = tco::from_run(&run, &plan.platforms[0]);
    assert!(
        fr.problems.iter().any(|p| p.contains("sweep points")),
        "{:?}",
        fr.problems
    );

    // A killed run: its only result is stored, interrupted, measured to a checkpoint.
    let mut run = kv_run(&Spec {
        reps: 1,
        instances: &[1],
        ..Spec::default()
    });
    run.results.truncate(1);
    run.results[0].status = model::Status::Interrupted;
    run.results[0].flags.push(model::Flag::warning(
        "partial",
        "measured until a checkpoint at 10.0 s of 20.0 s",
    ));
    let plan = one_platform_plan("x86-a", "");
    let e = report::selection::tco_perf(&run, &plan.platforms[0]).unwrap_err();
    assert!(
        e.contains(
            "no valid result to take performance from: its only result is interrupted (partial)"
        ),
        "{e}"
    );
    let fr = tco::from_run(&run, &max_plan("").platforms[0]);
    assert!(
        fr.problems
            .iter()
            .any(|p| p.contains("its only result is interrupted (partial)")),
        "{:?}",
        fr.problems
    );
}

/// The cells of the first Markdown table whose header starts with `head`: (header, rows).
fn md_table(md: &str, head: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let split = |l: &str| -> Vec<String> {
        l.trim()
            .trim_matches('|')
            .split(" | ")
            .map(|c| c.trim().to_string())
            .collect()
    };
    let mut lines = md.lines().skip_while(|l| !l.starts_with(head));
    let header = split(lines.next().unwrap_or_else(|| panic!("{head} in {md}")));
    let rows = lines
        .skip(1)
        .take_while(|l| l.starts_with('|'))
        .map(split)
        .collect();
    (header, rows)
}

/// Perf/W and the watts per unit derived from a modelled power figure are marked
/// modelled as the power is, in Markdown and HTML; a missing W above idle says why.
#[test]
fn per_watt_figures_of_modelled_power_are_marked_and_missing_idle_says_why() {
    let run = kv_run(&Spec {
        reps: 1,
        instances: &[2],
        power: Power::Modelled(200.0),
        ..Spec::default()
    });
    let runs = [run];
    let md = report::markdown(&runs, None);
    let (head, rows) = md_table(&md, "| Test | Run | Throughput (ops/s) |");
    let col = |name: &str| head.iter().position(|h| h.starts_with(name)).unwrap();
    assert!(!rows.is_empty());
    for r in &rows {
        assert!(r[col("Power")].contains("MODELLED"), "{r:?}");
        for c in ["Perf/W", "W per "] {
            assert!(r[col(c)].ends_with(" (MODELLED)"), "{c}: {r:?}");
        }
        // The fixture measured no idle power for the model: marked, and said why below.
        assert_eq!(r[col("W above idle")], "absent‡", "{r:?}");
        assert_eq!(r[col("Idle")], "absent‡", "{r:?}");
    }
    let why = "W above idle per 1k ops/s absent for x86-a: no idle power was measured on \
               local before the load (no model system reading while idle)";
    assert!(md.contains(&format!("‡ Idle and {why}")), "{md}");
    let h = report::html(&runs, None);
    let eff = &h[h.find("<caption>Efficiency at each run").unwrap()..];
    let eff = &eff[..eff.find("</table>").unwrap()];
    let row = &eff[eff.find("<tr><td>").unwrap()..];
    let cells: Vec<&str> = row.split("<td").skip(1).collect();
    // Test, Run, Throughput, Power, Idle, Perf/W, W per, W above idle...
    for i in [3, 5, 6] {
        assert!(
            cells[i].contains(r#"<span class="modelled">modelled</span>"#),
            "{i}: {}",
            cells[i]
        );
    }
    assert!(cells[4].contains("absent&Dagger;") && cells[7].contains("absent&Dagger;"));
    // The HTML's Idle column is absent for the same reason: named with it.
    let why = format!("&Dagger; Idle and {}", report::fmt::esc(why));
    assert!(h.contains(&why), "{h}");
}

/// Power under load below the idle power measured before it (a meter's idle read in
/// another state) gives no negative "W above idle": the figure is absent, and says why.
#[test]
fn power_under_load_below_idle_gives_no_watts_above_idle() {
    let mut run = kv_run(&Spec {
        reps: 1,
        instances: &[2],
        power: Power::Ipmi(300.0),
        ..Spec::default()
    });
    for p in &mut run.idle_power[0].power {
        p.mean_watts = 1000.0;
    }
    let runs = [run];
    let eff = report::derive::efficiency_rows(&runs);
    assert!(!eff.is_empty());
    for (_, _, _, e) in &eff {
        let why = e.dw_per_perf.as_ref().expect_err("no figure");
        assert!(
            why.contains("below the idle power measured before it"),
            "{why}"
        );
        assert!(e.perf_per_w.is_ok(), "{e:?}");
    }
    let md = report::markdown(&runs, None);
    assert!(
        md.contains("below the idle power measured before it"),
        "{md}"
    );
}

/// Power under load equal to idle within float noise or the meter's resolution (IPMI's
/// whole watts: a light test's mean a watt below its idle) is 0 W above idle, not two
/// readings called wrong; a real gap beyond 1 W or 0.1% still is.
#[test]
fn power_under_load_equal_to_idle_within_noise_is_zero_above_idle() {
    let run = kv_run(&Spec {
        reps: 1,
        instances: &[2],
        power: Power::Ipmi(300.0),
        ..Spec::default()
    });
    let load = report::derive::points(0, &run)[0].power().unwrap().watts;
    for (idle, want) in [
        (load + 1e-9, Some(0.0)),
        (load + 0.25, Some(0.0)),
        (load + 0.9, Some(0.0)),
        (load, Some(0.0)),
        (load + 1.6, None),
    ] {
        let mut run = run.clone();
        for p in &mut run.idle_power[0].power {
            p.mean_watts = idle;
        }
        let runs = [run];
        for (_, _, _, e) in &report::derive::efficiency_rows(&runs) {
            match want {
                Some(_) => {
                    let dw = e.dw_per_perf.as_ref().expect("a figure");
                    assert_eq!(*dw, 0.0, "idle {idle} W, load {load} W");
                }
                None => {
                    let why = e.dw_per_perf.as_ref().expect_err("no figure");
                    assert!(why.contains("below the idle power"), "{why}");
                }
            }
        }
        let md = report::markdown(&runs, None);
        assert_eq!(
            md.contains("below the idle power measured before it"),
            want.is_none(),
            "idle {idle} W: {md}"
        );
    }
    assert_eq!(
        report::derive::above_idle(169.99999999999997, 170.0),
        Ok(0.0)
    );
}

/// An idle figure measured on a busy host (`idle_not_idle`) is marked where it is used,
/// in both formats, with its warning said once, escaped (acceptance pass F, 10).
#[test]
fn an_idle_figure_taken_on_a_busy_host_carries_its_warning() {
    let mut run = kv_run(&Spec {
        reps: 1,
        instances: &[2],
        power: Power::Ipmi(300.0),
        ..Spec::default()
    });
    let why = "host local: while its idle power was measured, its tasks ran 99% <b>";
    run.idle_power[0]
        .flags
        .push(model::Flag::warning("idle_not_idle", why));
    let runs = [run];
    let md = report::markdown(&runs, None);
    assert!(md.contains(" ⚠ |"), "{md}");
    assert_eq!(md.matches("⚠ Idle: host local").count(), 1, "{md}");
    let h = report::html(&runs, None);
    assert!(h.contains(&report::fmt::esc(why)), "{h}");
    assert!(!h.contains(why), "unescaped: {h}");
    // A declared model's idle was never measured: the busy host's warning is not its
    // (review H, 10).
    let mut modelled = kv_run(&Spec {
        reps: 1,
        instances: &[2],
        power: Power::Modelled(300.0),
        ..Spec::default()
    });
    modelled.idle_power = vec![model::IdlePower {
        host: modelled.hosts[0].host.clone(),
        duration_s: 0.0,
        power: vec![PowerSummary {
            source: "model".into(),
            zone: "system".into(),
            mean_watts: 100.0,
            max_watts: 100.0,
            whole_system: true,
            modelled: true,
        }],
        cpus: Vec::new(),
        flags: vec![model::Flag::warning("idle_not_idle", why)],
    }];
    let eff = report::derive::efficiency_rows(std::slice::from_ref(&modelled));
    assert!(!eff.is_empty());
    assert!(
        eff.iter()
            .all(|(_, _, _, e)| e.idle_w.is_ok() && e.idle_warnings.is_empty()),
        "{eff:?}"
    );
}

/// Every point's power is in the results tables (the seed's power against instances,
/// Figure A3), not only the best point's in the summary.
#[test]
fn all_results_have_each_points_power() {
    let run = kv_run(&Spec {
        reps: 1,
        instances: &[1, 2, 4],
        power: Power::Ipmi(300.0),
        ..Spec::default()
    });
    let runs = [run];
    let want: Vec<String> = report::derive::points(0, &runs[0])
        .iter()
        .map(|p| format!("{} W (", report::fmt::watts(p.power().unwrap().watts)))
        .collect();
    assert!(want.len() >= 3);
    let md = report::markdown(&runs, None);
    let results = &md[md.find("### Results").unwrap()..];
    assert!(results.contains("| Power |"), "{results}");
    for w in &want {
        assert!(results.contains(w.as_str()), "{w} in {results}");
    }
    let h = report::html(&runs, None);
    let all = &h[h.find("<caption>All results").unwrap()..];
    assert!(all.contains("<th>Power</th>"), "{all}");
}

/// A geometric mean that cannot be taken is marked, with why, never a bare `-`.
#[test]
fn a_missing_geometric_mean_says_why() {
    let mut a = kv_run(&Spec {
        reps: 1,
        instances: &[2],
        ..Spec::default()
    });
    let mut b = kv_run(&Spec {
        label: "arm-b",
        id: "20261121T230000-bbbbbb",
        reps: 1,
        instances: &[2],
        seed: 2,
        ..Spec::default()
    });
    // No test on both: no test every column has to take the mean over.
    a.results.retain(|r| r.test == "set");
    b.results.retain(|r| r.test == "get");
    let runs = [a, b];
    let s = report::summary(&runs);
    assert!(s.geomean_note.is_none() && s.geomean.iter().all(Option::is_none));
    let why = "no test has a figure in every column, and the means are over the tests every \
               column has";
    assert_eq!(s.geomean_or_why()[0], Err(why.to_string()));
    let md = report::markdown(&runs, None);
    let mean = md
        .lines()
        .find(|l| l.starts_with("| **Geometric mean** |"))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(
        mean.starts_with("| **Geometric mean** | absent† | n/a | absent† | n/a |"),
        "{mean}"
    );
    assert!(
        md.contains(&format!("† Geometric mean absent on every run: {why}")),
        "{md}"
    );
    let h = report::html(&runs, None);
    let row = &h[h.find("<td>Geometric mean</td>").unwrap()..];
    assert!(row[..row.find("</tr>").unwrap()].contains("absent&dagger;"));
    assert!(h.contains(&format!(
        "&dagger; Geometric mean absent on every run: {}",
        report::fmt::esc(why)
    )));
}

/// The summary shows a flagged result's codes, each message only in its tooltip, and says
/// where the messages are; the results tables keep every message. (Each row of the
/// quickstart's summary used to carry two long messages, burying its figures.)
#[test]
fn the_summary_shows_flag_codes_and_the_results_their_messages() {
    let mut r = kv_run(&Spec {
        reps: 2,
        ..Spec::default()
    });
    let msg = "other processes took most of a CPU while the test measured";
    // The second repetition's says something else of the same code.
    let msg2 = "other processes took 40% of a CPU while the test measured";
    for res in &mut r.results {
        res.flags.clear();
        let m = if res.repetition == 0 { msg } else { msg2 };
        res.flags.push(model::Flag::warning("other_load", m));
    }
    let runs = [r];
    let h = report::html(&runs, None);
    let summary = &h[h.find("<caption>Summary").unwrap()..];
    let summary = &summary[..summary.find("</table>").unwrap()];
    assert!(summary.contains("&#9888; other_load</span>"), "{summary}");
    // Each code once in a cell, whatever the repetitions that carry it; its tooltip has
    // each repetition's message, not the first alone.
    assert!(!summary.contains("other_load</span><span"), "{summary}");
    assert!(
        summary.contains(&format!("title=\"{msg}\n{msg2}\"")),
        "{summary}"
    );
    assert!(
        !summary.contains(&format!("other_load: {msg}")),
        "{summary}"
    );
    assert!(h.contains("⚠ marks a result with a warning; each warning&#39;s message"));
    let all = &h[h.find("<caption>All results").unwrap()..];
    assert!(all.contains(&format!("other_load: {msg}")));

    let md = report::markdown(&runs, None);
    let summary = &md[md.find("| Test |").unwrap()..];
    let summary = &summary[..summary.find("\n\n").unwrap()];
    assert!(summary.contains("⚠ other\\_load"), "{summary}");
    assert!(!summary.contains("⚠ other\\_load ⚠"), "{summary}");
    assert!(!summary.contains(msg), "{summary}");
    assert!(md.contains("⚠ marks a result with a warning"));
    let results = &md[md.find("### Results").unwrap()..];
    assert!(
        results.contains(&format!("other\\_load: {msg}")),
        "{results}"
    );
    // The command and the fact names are plain text: a code span around escaped text
    // showed its backslashes (\`cpu.cores\`).
    assert!(!md.contains("| \\`"), "{md}");
    // Without flags, no note.
    let mut quiet = kv_run(&Spec::default());
    for res in &mut quiet.results {
        res.flags.clear();
    }
    let quiet = [quiet];
    assert!(!report::html(&quiet, None).contains("marks a result with a warning"));
    assert!(!report::markdown(&quiet, None).contains("marks a result with a warning"));
}

/// A run of `-t set,get` and one of `-t get` share the `get` row: the list of tests a run
/// ran names no row (the rows were `kv get tests=["set","get"]` and `kv get tests=["get"]`,
/// side by side with nothing to compare), and is no fixed parameter either.
#[test]
fn runs_of_different_test_lists_share_their_common_tests_rows() {
    let mut a = kv_run(&Spec::default());
    let mut b = kv_run(&Spec {
        id: "20261120T231500-bbbbbb",
        label: "b",
        ..Spec::default()
    });
    for r in &mut a.results {
        r.params
            .insert("tests".into(), serde_json::json!(["set", "get"]));
    }
    b.results.retain(|r| r.test == "get");
    for r in &mut b.results {
        r.params.insert("tests".into(), serde_json::json!(["get"]));
    }
    let runs = [a, b];
    let s = report::derive::summary(&runs);
    let names: Vec<String> = s.rows.iter().map(|r| s.row_name(r, "")).collect();
    assert_eq!(names.len(), 4, "{names:?}");
    assert!(names.iter().all(|n| !n.contains("tests=")), "{names:?}");
    for (row, name) in s.rows.iter().zip(&names) {
        assert!(row.perf[0].is_some(), "{name}");
        assert_eq!(row.perf[1].is_some(), name.contains("get"), "{name}");
    }
    let md = report::markdown(&runs, None);
    assert!(!md.contains("tests=\\["), "{md}");
    // The set rows only A has are out of the means, and both forms say so.
    assert!(!s.left_out.is_empty());
    let said = s.left_out_note().unwrap();
    assert!(md.contains(&said), "{md}");
    assert!(report::html(&runs, None).contains(&said));
}

/// A test left out of the means (one column has no figure of it), in another unit than
/// the rows the means are over, leaves the heading without a unit: the geometric mean's
/// row then says its own, of the rows it is over.
#[test]
fn a_geometric_mean_says_its_unit_where_the_heading_cannot() {
    let mut a = kv_run(&Spec::default());
    let b = kv_run(&Spec {
        id: "20261120T231500-bbbbbb",
        label: "b",
        ..Spec::default()
    });
    for r in a.results.iter_mut().filter(|r| r.test == "get") {
        r.test = "scan".into();
        for m in &mut r.metrics {
            if m.name == "ops_per_s" {
                m.unit = "MB/s".into();
            }
        }
    }
    let runs = [a, b];
    let s = report::derive::summary(&runs);
    assert!(!s.left_out.is_empty() && s.geomean[0].is_some(), "{s:?}");
    assert_eq!(s.perf_heading(), "Performance");
    assert_eq!(s.geomean_label(), "Geometric mean (ops/s)");
    assert!(report::html(&runs, None).contains("<td>Geometric mean (ops/s)</td>"));
    assert!(report::markdown(&runs, None).contains("| **Geometric mean (ops/s)** |"));
    // With one unit throughout, the heading says it, and the row no more.
    let plain = report::derive::summary(&runs[1..]);
    assert_eq!(plain.geomean_label(), "Geometric mean");
}

/// A summary that takes each column at its best point says that the best of several is
/// lifted by their noise; one taken at a fixed point has nothing to say.
#[test]
fn a_best_of_several_points_is_said_to_be_biased_up() {
    let runs = two_platforms();
    let best = report::derive::summary(&runs);
    assert!(!best.peak_params.is_empty(), "{:?}", best.peak_params);
    assert!(best.notes.iter().any(|n| n == report::derive::BEST_OF_NOTE));
    let sel = report::Selection {
        at: best
            .peak_params
            .iter()
            .map(|p| {
                let v = runs[0].results[0].params[p].to_string();
                (p.clone(), v)
            })
            .collect(),
        ..Default::default()
    };
    let fixed = report::derive::summary_with(&runs, &sel);
    assert!(!fixed.rows.is_empty());
    assert!(
        fixed
            .notes
            .iter()
            .all(|n| n != report::derive::BEST_OF_NOTE),
        "{:?}",
        fixed.notes
    );
}

/// The footer names every run the report's figures come from: the runs reported and the
/// runs its TCO section took power or performance from (escaped), each once; a platform
/// whose figures the plan gives names no run.
#[test]
fn footer_lists_the_runs_the_tco_took_figures_from() {
    let mut runs = two_platforms();
    runs[1].id = "20261120T231500-<b>&b".into();
    let plan = tco::Plan::from_toml(
        r#"years = 3
energy_price_per_kwh = 0.10
perf_unit = "ops/s"
[rack]
power_budget_w = 10000
rack_units = 40
[[platform]]
name = "x86"
run = "x86-a"
params = { instances = 4 }
bom = [{ name = "Server", unit_cost = 5000 }]
[[platform]]
name = "arm"
run = "arm-b"
params = { instances = 4 }
bom = [{ name = "Server", unit_cost = 6000 }]
[[platform]]
name = "x86 again"
run = "x86-a"
params = { instances = 4 }
bom = [{ name = "Server", unit_cost = 5500 }]
[[platform]]
name = "given"
power_w = 200
perf = 100000
bom = [{ name = "Server", unit_cost = 4000 }]
"#,
    )
    .unwrap();
    let mut from = BTreeMap::new();
    for (p, r) in plan.platforms.iter().zip([&runs[0], &runs[1], &runs[0]]) {
        let mut fr = tco::from_run(r, p);
        fr.perf = Some(report::selection::tco_perf(r, p).unwrap());
        from.insert(p.name.clone(), fr);
    }
    let t = tco::evaluate(&plan, &from).unwrap();
    assert_eq!(t.runs(), vec![runs[0].id.as_str(), runs[1].id.as_str()]);
    assert!(t.platforms[3].runs.is_empty(), "{:?}", t.platforms[3].runs);
    // A report of the first run only: the second is named as the TCO's, once.
    let h = report::html(&runs[..1], Some(&t));
    let footer = &h[h.find("<footer>").unwrap()..];
    assert!(
        footer.contains(&format!(
            "from stored runs {}; the TCO section also from run 20261120T231500-&lt;b&gt;&amp;b.",
            runs[0].id
        )),
        "{footer}"
    );
    assert_eq!(footer.matches(runs[0].id.as_str()).count(), 1, "{footer}");
    // The build that measured the runs, said as theirs (review s16, 13).
    assert!(
        footer.contains(&format!(
            "Measured by rackbench {}, from stored runs",
            runs[0].rackbench_version
        )),
        "{footer}"
    );
    let md = report::markdown(&runs[..1], Some(&t));
    let tail = &md[md.rfind("\n---\n").unwrap()..];
    assert!(
        // `&` too is a character reference, so that it reads as typed (`&amp;` in a
        // label read `&`).
        tail.contains("the TCO section also from run 20261120T231500-&lt;b&gt;&amp;b."),
        "{tail}"
    );
    assert_eq!(tail.matches(runs[0].id.as_str()).count(), 1, "{tail}");
    // Both runs reported: nothing more to name.
    let h = report::html(&runs, Some(&t));
    let footer = &h[h.find("<footer>").unwrap()..];
    assert!(!footer.contains("TCO"), "{footer}");
    assert_eq!(footer.matches(runs[0].id.as_str()).count(), 1, "{footer}");
    assert_eq!(
        footer.matches("231500-&lt;b&gt;&amp;b").count(),
        1,
        "{footer}"
    );
    // No TCO: the runs alone, in the Markdown too.
    let md = report::markdown(&runs, None);
    assert!(
        md.trim_end().ends_with(&format!(
            "from stored runs {}, 20261120T231500-&lt;b&gt;&amp;b.",
            runs[0].id
        )),
        "{md}"
    );
}

/// A summary's Difference cell: ratio and percentage; no change is `+0%`, never `-0%`,
/// and a change under half a percent keeps its sign (0.998x is -0.2%), as in the TCO
/// table.
#[test]
fn difference_cell_says_no_change_without_a_minus() {
    use report::derive::DiffColumn;
    assert_eq!(DiffColumn::cell(Some(1.15)), "1.15x (+15%)");
    assert_eq!(DiffColumn::cell(Some(0.83)), "0.83x (-17%)");
    assert_eq!(DiffColumn::cell(Some(0.998)), "1.00x (-0.2%)");
    assert_eq!(DiffColumn::cell(Some(1.0)), "1.00x (+0%)");
    assert_eq!(DiffColumn::cell(None), "-");
}

/// The sweep's power, from the fixture: IPMI at `w * (0.75 + 0.25 * load)`, load
/// `instances / 4` (at most 1), idle `0.55 * w`.
fn fixture_watts(w: f64, instances: f64) -> (f64, f64) {
    let load = (instances / 4.0).min(1.0);
    let under = w * (0.75 + 0.25 * load);
    (under, under - 0.55 * w)
}

/// The seeds' power against instances (seed 000's Figure A3): a chart of each line's
/// mean W and W above idle against the swept parameter, the figures the results tables
/// hold; and its Markdown table.
#[test]
fn power_against_the_swept_parameter() {
    let run = kv_run(&Spec {
        reps: 1,
        instances: &[1, 2, 4],
        power: Power::Ipmi(300.0),
        ..Spec::default()
    });
    let runs = [run];
    let sweeps = report::charts::power_sweeps(&runs, "kv");
    let s = sweeps
        .iter()
        .find(|s| s.param == "instances")
        .expect("a power sweep over instances");
    // One line per test and pipeline (what else varies), each at every instance count.
    let names: Vec<&str> = s.lines.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "set pipeline=1",
            "get pipeline=1",
            "set pipeline=100",
            "get pipeline=100"
        ]
    );
    for l in &s.lines {
        let xs: Vec<f64> = l.points.iter().map(|p| p.0).collect();
        assert_eq!(xs, [1.0, 2.0, 4.0], "{}", l.name);
        for (x, p) in &l.points {
            let (w, above) = p.as_ref().expect("power at every point");
            let (want_w, want_above) = fixture_watts(300.0, *x);
            assert!((w - want_w).abs() < 1e-9, "{w} vs {want_w}");
            let above = above.as_ref().expect("idle measured");
            assert!((above - want_above).abs() < 1e-9, "{above} vs {want_above}");
        }
    }
    // Nothing absent; the fixture's client_bound points (pipeline=1 at 4 instances) are
    // counted (acceptance pass F, F11).
    assert_eq!(
        s.notes(),
        ["⚠ 2 of 12 points carry warnings (hollow markers; the tables say which)"]
    );
    assert_eq!(s.with_power(), 12);
    let svg = s.svg().expect("drawn");
    assert!(svg.contains("set pipeline=1 (above idle)"), "{svg}");
    // Each line's W and W above idle: 8 polylines, 24 points.
    assert_eq!(svg.matches("<polyline").count(), 8);
    assert_eq!(svg.matches("<circle").count(), 24);
    // In the HTML, among the sweeps, and as a file of its own.
    let h = report::html(&runs, None);
    let sweeps_at = h.find("<h3>Sweeps</h3>").expect("a Sweeps section");
    let at = h
        .find("kv: power vs instances, W and W above idle")
        .unwrap();
    assert!(at > sweeps_at, "the power sweep is among the sweeps");
    assert!(h.contains("<code>kv_power_vs_instances.svg</code>"));
    assert!(report::svg_charts(&runs)
        .iter()
        .any(|(f, _)| f == "kv_power_vs_instances.svg"));
    // The Markdown's table: a row per line, a column per instance count.
    let md = report::markdown(&runs, None);
    let table = &md[md.find("### Power against instances").expect("its table")..];
    let table = &table[..table.find("### Results").unwrap()];
    assert!(
        table.contains("| Series | instances=1 | instances=2 | instances=4 |"),
        "{table}"
    );
    let (w4, a4) = fixture_watts(300.0, 4.0);
    assert!(
        table.contains(&format!(
            "{} W ({} W above idle) |\n",
            report::fmt::watts(w4),
            report::fmt::watts(a4)
        )),
        "{table}"
    );
    // K13: both to 0.1 W; by significant digits, 243.75 W with 78.75 above idle read
    // `244 W (78.8 W above idle)`.
    assert_eq!(fixture_watts(300.0, 1.0), (243.75, 78.75));
    assert!(table.contains("| 243.8 W (78.8 W above idle) |"), "{table}");
}

/// A point without a power reading is left out of the power sweep, never drawn as 0,
/// and the caption says how many and why; a point whose power is below the idle
/// measured before it has its W but no W above idle, and says why.
#[test]
fn power_sweep_leaves_out_points_without_a_reading() {
    let mut run = kv_run(&Spec {
        reps: 1,
        instances: &[1, 2, 4],
        power: Power::Ipmi(300.0),
        ..Spec::default()
    });
    let why = "no power source found: the BMC did not answer";
    for r in &mut run.results {
        if r.params["instances"] == 2 {
            r.telemetry_summary[0].power.clear();
            r.telemetry_summary[0].power_missing = Some(why.into());
        }
    }
    let runs = [run];
    let sweeps = report::charts::power_sweeps(&runs, "kv");
    let s = sweeps.iter().find(|s| s.param == "instances").unwrap();
    assert_eq!(s.with_power(), 8);
    let notes = s.notes().join(" ");
    assert!(
        notes.contains("4 of 12 point(s) have no power reading and are left out (not drawn as 0)")
            && notes.contains(why),
        "{notes}"
    );
    let svg = s.svg().unwrap();
    assert_eq!(
        svg.matches("<circle").count(),
        16,
        "two points a line, twice"
    );
    assert!(!svg.contains(", 0</title>"), "a point drawn at 0 W");
    let h = report::html(&runs, None);
    let fig = &h[h.find("kv: power vs instances").unwrap()..];
    let fig = &fig[..fig.find("</figure>").unwrap()];
    assert!(
        fig.contains("left out (not drawn as 0)") && fig.contains(why),
        "{fig}"
    );
    let md = report::markdown(&runs, None);
    let table = &md[md.find("### Power against instances").unwrap()..];
    assert!(table.contains("| absent |"), "{table}");
    assert!(table.contains("left out (not drawn as 0)"), "{table}");
    // With the charts linked, the caption goes under its link, as the HTML's.
    let md = report::markdown_with_charts(&runs, None, Some("c"));
    let link = md
        .find("](c/kv_power_vs_instances.svg)\n  4 of 12 point(s) have no power reading")
        .map(|i| &md[i..]);
    assert!(
        link.is_some_and(|l| l.lines().nth(1).unwrap().contains(why)),
        "{md}"
    );
    // Idle above the power under load: W drawn, W above idle absent with the reason.
    let mut run = runs[0].clone();
    run.idle_power[0].power[0].mean_watts = 1000.0;
    let sweeps = report::charts::power_sweeps(std::slice::from_ref(&run), "kv");
    let s = sweeps.iter().find(|s| s.param == "instances").unwrap();
    let notes = s.notes().join(" ");
    assert!(
        notes.contains("W above idle absent at 8 of 8 point(s) with power")
            && notes.contains("below the idle power measured before it"),
        "{notes}"
    );
    let svg = s.svg().unwrap();
    assert!(!svg.contains("(above idle)"), "{svg}");
    assert_eq!(svg.matches("<polyline").count(), 4);
    // One point with power: no chart, a note saying so.
    let mut run = runs[0].clone();
    let mut kept = false;
    for r in &mut run.results {
        let keep = !kept && r.params["instances"] == 4;
        kept |= keep;
        if !keep {
            r.telemetry_summary[0].power.clear();
            r.telemetry_summary[0].power_missing = Some(why.into());
        }
    }
    let one = std::slice::from_ref(&run);
    let s = report::charts::power_sweeps(one, "kv");
    let s = s.iter().find(|s| s.param == "instances").unwrap();
    assert!(s.svg().is_none());
    let h = report::html(one, None);
    assert!(
        h.contains("not drawn: only 1 point has a power reading"),
        "{h}"
    );
    assert!(!report::markdown(one, None).contains("### Power against instances"));
    // No power at all: no power sweep (the power section says why).
    let none = kv_run(&Spec {
        reps: 1,
        power: Power::None,
        ..Spec::default()
    });
    assert!(report::charts::power_sweeps(&[none], "kv").is_empty());
}

/// One series per run and per variant of a run, named by it.
#[test]
fn power_sweep_has_a_line_per_run_and_variant() {
    let runs = two_platforms();
    let sweeps = report::charts::power_sweeps(&runs, "kv");
    let s = sweeps.iter().find(|s| s.param == "instances").unwrap();
    assert_eq!(s.lines.len(), 8);
    assert!(s.lines.iter().any(|l| l.name == "arm-b · set pipeline=1"));
    assert!(s.lines.iter().any(|l| l.name == "x86-a · get pipeline=100"));
    for l in &s.lines {
        assert_eq!(l.points.len(), 3, "{}", l.name);
        assert!(l
            .name
            .starts_with(&runs[l.run_index].label.clone().unwrap()));
    }
    assert_eq!(
        s.notes(),
        ["⚠ 4 of 24 points carry warnings (hollow markers; the tables say which)"]
    );
    // More lines than a chart shows: the caption says how many are drawn.
    let mut three = runs.clone();
    three.push(kv_run(&Spec {
        label: "third",
        id: "20261121T000000-cccccc",
        seed: 3,
        ..Spec::default()
    }));
    let sweeps = report::charts::power_sweeps(&three, "kv");
    let s = sweeps.iter().find(|s| s.param == "instances").unwrap();
    assert_eq!(s.lines.len(), 12);
    assert!(
        s.notes()
            .contains(&"8 of 12 series drawn; every point's power is in the results tables".into()),
        "{:?}",
        s.notes()
    );
    assert_eq!(s.svg().unwrap().matches("<polyline").count(), 16);
    // Variants of one run: a line each.
    let mut run = kv_run(&Spec {
        reps: 1,
        power: Power::Ipmi(300.0),
        ..Spec::default()
    });
    run.results
        .retain(|r| r.test == "set" && r.params["pipeline"] == 1);
    let mut b = run.results.clone();
    for r in &mut run.results {
        r.params.insert("variant".into(), serde_json::json!("off"));
    }
    for r in &mut b {
        r.params.insert("variant".into(), serde_json::json!("on"));
    }
    run.results.extend(b);
    let sweeps = report::charts::power_sweeps(std::slice::from_ref(&run), "kv");
    assert_eq!(sweeps.len(), 1, "variant is no axis");
    let names: Vec<&str> = sweeps[0].lines.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["variant=off", "variant=on"]);
}

/// A setting neither side knows a value of is no difference: a run stored before
/// rackbench said why a `sysctl.net.core` key is not present (it left the key out) beside
/// one that says so, on the same unchanged host, compare like for like. A known value
/// against an unknown one is no known difference either, and not held against the
/// comparison, but the verdict says it could not be checked (acceptance K, 4); known
/// values that differ do differ.
#[test]
fn a_setting_no_side_knows_is_no_difference() {
    let a = kv_run(&Spec::default());
    let mut b = kv_run(&Spec {
        id: "20261120T231500-bbbbbb",
        ..Spec::default()
    });
    let key = "sysctl.net.core.bpf_jit_enable";
    assert!(!a.hosts[0].facts.contains_key(key));
    b.hosts[0].facts.insert(
        key.into(),
        model::Fact::unknown("not present in this network namespace"),
    );
    let c = report::comparability(std::slice::from_ref(&a), std::slice::from_ref(&b));
    assert!(c.like_for_like, "{}", c.verdict);
    let mut a2 = a.clone();
    a2.hosts[0].facts.insert(
        key.into(),
        model::Fact::unknown("not present in this kernel"),
    );
    let c = report::comparability(std::slice::from_ref(&a2), std::slice::from_ref(&b));
    assert!(c.like_for_like, "{}", c.verdict);
    a2.hosts[0]
        .facts
        .insert(key.into(), model::Fact::known("1"));
    let c = report::comparability(std::slice::from_ref(&a2), std::slice::from_ref(&b));
    assert!(c.like_for_like, "{}", c.verdict);
    assert_eq!(
        c.verdict,
        format!("like for like (as far as both sides know: {key} known on one side only)")
    );
    let mut b2 = b.clone();
    b2.hosts[0]
        .facts
        .insert(key.into(), model::Fact::known("0"));
    let c = report::comparability(std::slice::from_ref(&a2), std::slice::from_ref(&b2));
    assert!(!c.like_for_like && c.verdict.contains(key), "{}", c.verdict);
    assert!(!c.verdict.contains("one side only"), "{}", c.verdict);
}

/// Lines of different power bases on one chart each say their basis (a modelled line
/// read as measured beside an IPMI one); lines of one basis keep their plain names.
#[test]
fn power_sweep_lines_of_different_bases_say_theirs() {
    let a = kv_run(&Spec::default());
    let b = kv_run(&Spec {
        label: "modelled-b",
        id: "20261120T231500-bbbbbb",
        power: Power::Modelled(250.0),
        ..Spec::default()
    });
    let both = [a.clone(), b];
    let sweeps = report::charts::power_sweeps(&both, "kv");
    let s = sweeps.iter().find(|s| s.param == "instances").unwrap();
    for l in &s.lines {
        let want = if l.name.starts_with("modelled-b") {
            "(MODELLED (declared power model))"
        } else {
            "(measured, whole server)"
        };
        assert!(l.name.ends_with(want), "{}", l.name);
    }
    let md = report::markdown(&both, None);
    assert!(md.contains("modelled-b · set pipeline=1 (MODELLED"), "{md}");
    // One basis: plain names.
    let one = report::charts::power_sweeps(std::slice::from_ref(&a), "kv");
    assert!(one[0].lines.iter().all(|l| !l.name.contains('(')));
}

/// Throughput per watt against the swept parameter (seed 000's Figure A3, right): each
/// point's perf/W is the efficiency table's (its throughput over its power), drawn and
/// listed where two points have it; a latency headline has none.
#[test]
fn perf_per_w_against_the_swept_parameter() {
    let run = kv_run(&Spec {
        reps: 1,
        instances: &[1, 2, 4],
        power: Power::Ipmi(300.0),
        ..Spec::default()
    });
    let runs = [run];
    let sweeps = report::charts::power_sweeps(&runs, "kv");
    let s = sweeps.iter().find(|s| s.param == "instances").unwrap();
    assert_eq!(s.perf_unit.as_deref(), Some("ops/s"));
    assert_eq!(s.with_perf_per_w(), 12);
    let points = report::derive::points(0, &runs[0]);
    for l in &s.lines {
        assert_eq!(l.perf_per_w.len(), 3, "{}", l.name);
        for (x, v) in &l.perf_per_w {
            let p = points
                .iter()
                .find(|p| {
                    l.name.starts_with(&p.test)
                        && p.params["instances"].as_f64() == Some(*x)
                        && l.name
                            .ends_with(&format!("pipeline={}", p.params["pipeline"]))
                })
                .unwrap();
            let e = p.efficiency().unwrap();
            assert!((v - e.perf_per_w.unwrap()).abs() < 1e-9, "{}", l.name);
            assert!((v - e.perf / e.power.unwrap().watts).abs() < 1e-6);
        }
    }
    let title = s.perf_per_w_title().unwrap();
    assert_eq!(
        title,
        "kv: perf/W vs instances, ops/s per W (measured, whole server)"
    );
    let svg = s.perf_per_w_svg().expect("drawn");
    assert_eq!(svg.matches("<polyline").count(), 4);
    let charts = report::charts::charts(&runs);
    assert!(charts
        .iter()
        .any(|c| c.file == "kv_perf_per_w_vs_instances.svg" && c.svg.is_some()));
    let md = report::markdown(&runs, None);
    assert!(md.contains("### Perf/W against instances"), "{md}");
    // Without power: no perf/W, no chart, no table.
    let none = [kv_run(&Spec {
        reps: 1,
        power: Power::None,
        ..Spec::default()
    })];
    assert!(report::charts::power_sweeps(&none, "kv").is_empty());
    assert!(!report::markdown(&none, None).contains("Perf/W against"));
}

/// Platform A against platform B with the server on one test host and then on another
/// (acceptance pass G, 4 and 11): `sut_host` split every row by host, so the table had
/// no row with both columns, no Difference and no geometric mean; and compare called
/// the one intended difference "NOT like for like". Where each run ran on one host it is
/// the column's, said once; the hosts are the platforms compared.
#[test]
fn runs_on_other_hosts_line_up_as_platforms() {
    let place = |mut r: RunRecord, sut: &str| {
        for x in &mut r.results {
            x.params.insert("sut_host".into(), sut.into());
            x.params.insert("loadgen_hosts".into(), "rbh3".into());
        }
        r
    };
    let a = place(kv_run(&Spec::default()), "rbh1");
    let b = place(
        kv_run(&Spec {
            label: "x86-b",
            id: "20261120T231500-bbbbbb",
            scale: 1.2,
            seed: 2,
            ..Spec::default()
        }),
        "rbh2",
    );
    let runs = [a, b];
    let s = report::derive::summary(&runs);
    assert!(!s.rows.is_empty());
    for row in &s.rows {
        assert!(!row.label.contains("sut_host"), "{}", row.label);
        assert!(
            row.perf.iter().all(Option::is_some),
            "{}: {:?}",
            row.label,
            row.perf
        );
    }
    let md = report::markdown(&runs, None);
    assert!(
        md.contains("Where each run ran: x86-a: sut\\_host=rbh1; x86-b: sut\\_host=rbh2."),
        "{md}"
    );
    assert!(!md.contains("Geometric mean absent"), "{md}");
    let c = report::compare::compare(&runs[..1], &runs[1..]);
    assert!(c.comparability.like_for_like, "{:?}", c.comparability);
    assert!(
        c.comparability
            .verdict
            .starts_with("platform comparison: on other hosts (sut_host rbh1 vs rbh2)"),
        "{}",
        c.comparability.verdict
    );
    // Other load generators against one server are another method, not a platform.
    let mut lg = runs[1].clone();
    for x in &mut lg.results {
        x.params.insert("sut_host".into(), "rbh1".into());
        x.params.insert("loadgen_hosts".into(), "rbh2".into());
    }
    let c = report::compare::compare(&runs[..1], std::slice::from_ref(&lg));
    assert!(!c.comparability.like_for_like, "{:?}", c.comparability);
    // A run whose points ran on two systems under test keeps them apart: its rows are
    // two platforms.
    let mut two = runs[0].clone();
    let n = two.results.len();
    for x in &mut two.results[n / 2..] {
        x.params.insert("sut_host".into(), "rbh2".into());
    }
    assert!(report::derive::placement_params(std::slice::from_ref(&two))
        .iter()
        .all(|k| *k != "sut_host"));
}

/// A run whose steps were kept when rackbench was killed lost its telemetry with the
/// process: the report says so, not that none was recorded (acceptance pass G, 5).
#[test]
fn a_killed_runs_missing_telemetry_is_said_lost_with_it() {
    let mut run = kv_run(&Spec::default());
    for r in &mut run.results {
        r.telemetry.clear();
        r.telemetry_summary.clear();
    }
    let md = report::markdown(std::slice::from_ref(&run), None);
    assert!(
        md.contains("no telemetry was recorded for this run"),
        "{md}"
    );
    run.results[0].flags.push(model::Flag::warning(
        "partial",
        "the ramp test did not finish",
    ));
    let md = report::markdown(std::slice::from_ref(&run), None);
    assert!(
        md.contains("its telemetry was lost with rackbench, killed before its test ended"),
        "{md}"
    );
    // With telemetry off there was none to lose.
    run.plan = serde_json::json!({"run": {"telemetry": false}});
    let md = report::markdown(std::slice::from_ref(&run), None);
    assert!(
        md.contains("no telemetry was recorded for this run"),
        "{md}"
    );
}

/// Acceptance pass G, 13: each row of a multi-host result carried ~1500 characters of
/// warning prose; a Results cell shows each flag's code, and each sentence is said once
/// below the table with the rows it concerns, escaped in both formats.
#[test]
fn results_cells_show_codes_and_the_sentences_once_below() {
    let mut r = kv_run(&Spec {
        reps: 2,
        ..Spec::default()
    });
    let msg = "host <b>rbh1</b>: the hypervisor took 18.5% of its CPUs' time | *x*";
    for res in &mut r.results {
        res.flags.clear();
        res.flags.push(model::Flag::warning("steal<i>", msg));
    }
    let runs = [r];
    let h = report::html(&runs, None);
    let all = &h[h.find("<caption>All results").unwrap()..];
    let table = &all[..all.find("</table>").unwrap()];
    assert!(table.contains("&#9888; steal&lt;i&gt;</span>"), "{table}");
    // The message only in the chip's tooltip, not as the cell's text.
    assert!(!table.contains("steal&lt;i&gt;: host"), "{table}");
    let below = &all[all.find("</table>").unwrap()..];
    let below = &below[..below.find("</ul>").unwrap()];
    assert_eq!(below.matches("18.5% of its CPUs").count(), 1, "{below}");
    assert!(
        below.contains("steal&lt;i&gt;: host &lt;b&gt;rbh1&lt;/b&gt;"),
        "{below}"
    );
    assert!(!h.contains("<b>rbh1") && !h.contains("steal<i>"));
    let md = report::markdown(&runs, None);
    let results = &md[md.find("### Results").unwrap()..];
    let table_end = results.find("\n\n").unwrap_or(results.len());
    let results_end = results[1..].find("\n#").map_or(results.len(), |i| i + 1);
    assert!(!results[..table_end].contains("18.5%"), "{results}");
    assert_eq!(
        results[..results_end].matches("18.5% of its CPUs").count(),
        1,
        "{results}"
    );
    assert!(!md.contains("<b>rbh1") && !md.contains("| *x*"), "{md}");
}

/// A run killed during its first test (acceptance pass K, 1 and 2): the summary says the
/// point was interrupted and what it measured before, marked partial and in no mean; the
/// Results table gives that figure and counts the repetitions against those asked; the
/// tests that never started are named; power's absence says why there is no result.
#[test]
fn a_killed_run_says_what_it_measured_and_what_never_ran() {
    let mut r = kv_run(&Spec {
        reps: 3,
        instances: &[1],
        ..Spec::default()
    });
    r.status = Status::Interrupted;
    r.plan = serde_json::json!({
        "workload": "kv",
        "params": { "tests": ["set", "get"], "pipeline": 1 },
        "run": { "repeat": 3, "until_cv_pct": null },
    });
    // Killed in set pipeline=1's first repetition, after a checkpoint.
    r.results
        .retain(|x| x.test == "set" && x.params["pipeline"] == 1);
    r.results.truncate(1);
    r.results[0].status = Status::Interrupted;
    let v = r.results[0].headline_value().unwrap();
    let m = report::markdown(std::slice::from_ref(&r), None);
    let partial = format!(
        "{} ops/s (partial, left out of every mean)",
        report::fmt::num(v)
    );
    assert!(
        m.contains(&format!("interrupted after measuring {partial}")),
        "{m}"
    );
    assert!(
        m.contains(&format!("| 0/1 of 3 asked | {partial} |")),
        "{m}"
    );
    assert!(
        m.contains("interrupted before this test stored anything: get (asked for: not started, or killed before its first checkpoint)"),
        "{m}"
    );
    assert!(
        m.contains("no valid result: its only repetition is interrupted"),
        "{m}"
    );
    assert!(m.contains("x86-a was interrupted: its column holds what it stored before"));
    let h = report::html(std::slice::from_ref(&r), None);
    assert!(
        h.contains("0/1 of 3 asked") && h.contains("absent&sect;"),
        "{h}"
    );
    // A finished run asked for what it stored: no count of those asked, no note.
    r.status = Status::Ok;
    r.results[0].status = Status::Ok;
    let m = report::markdown(&[r], None);
    assert!(!m.contains(" asked") && !m.contains("(partial"), "{m}");
}

/// Two runs of the same tests at another setting that each run holds throughout (here
/// pinned against unpinned) line up row by row with a Difference, the setting said once
/// above the table, as the seeds set a setting's A/B side by side (acceptance pass K, 4).
#[test]
fn runs_at_another_setting_share_their_rows() {
    let a = kv_run(&Spec::default());
    let mut b = kv_run(&Spec {
        id: "20261120T233000-eeeeee",
        label: "pinned",
        seed: 5,
        ..Spec::default()
    });
    for r in &mut b.results {
        r.params
            .insert("server_cpus".into(), serde_json::json!([0]));
    }
    let s = report::derive::summary(&[a.clone(), b.clone()]);
    assert_eq!(
        s.rows.len(),
        4,
        "{:?}",
        s.rows.iter().map(|r| &r.label).collect::<Vec<_>>()
    );
    assert!(s.rows.iter().all(|r| r.perf.iter().all(Option::is_some)));
    let m = report::markdown(&[a.clone(), b.clone()], None);
    assert!(
        m.contains("pinned: server\\_cpus=\\[0\\]") && m.contains("x86-a: server\\_cpus not given"),
        "{m}"
    );
    // A setting typed in one run at the default the other ran with is one setting: the
    // rows line up and no column is said to differ (review: compare reads settings so).
    let mut typed = b.clone();
    let mut defaulted = a.clone();
    for r in &mut typed.results {
        r.params.remove("server_cpus");
        r.params.insert("data_size".into(), serde_json::json!(10));
    }
    for r in &mut defaulted.results {
        r.settings.insert("data_size".into(), serde_json::json!(10));
    }
    let s = report::derive::summary(&[defaulted.clone(), typed.clone()]);
    assert_eq!(s.rows.len(), 4);
    assert!(!report::markdown(&[defaulted, typed], None).contains("different settings"));
    // A setting swept inside a run still names its rows.
    b.results[0]
        .params
        .insert("server_cpus".into(), serde_json::json!([1]));
    let s = report::derive::summary(&[a, b]);
    assert!(s.rows.iter().any(|r| r.label.contains("server_cpus")));
}

/// A side whose headline varies by more than 10% (cv) over its repetitions is flagged
/// `high_variation` in compare's warnings, as the report flags the point; so is a side of
/// single-repetition runs that vary as widely (acceptance P, 3: only the report said so).
#[test]
fn compare_flags_a_side_whose_headline_varies_widely() {
    let steady = kv_run(&Spec {
        instances: &[1],
        ..Spec::default()
    });
    let mut wide = kv_run(&Spec {
        id: "20261120T230001-bbbbbb",
        instances: &[1],
        ..Spec::default()
    });
    let mut n = 0.0;
    for r in &mut wide.results {
        let h = r.headline.clone();
        for m in r
            .metrics
            .iter_mut()
            .filter(|m| m.name == h && m.labels.is_empty())
        {
            // 100k, 150k, 200k ...: cv far above 10%.
            m.value = 100_000.0 * (1.0 + 0.5 * n);
            n += 1.0;
        }
    }
    let codes = |c: &report::compare::Comparison| -> (bool, bool) {
        let has = |v: &Vec<String>| v.iter().any(|w| w == "high_variation");
        (
            c.warnings.iter().any(|w| has(&w.a)),
            c.warnings.iter().any(|w| has(&w.b)),
        )
    };
    let c = report::compare::compare(std::slice::from_ref(&steady), std::slice::from_ref(&wide));
    assert_eq!(codes(&c), (false, true), "{:?}", c.warnings);
    // Each repetition a run of its own: the side's runs vary as widely.
    let singles: Vec<model::RunRecord> = wide
        .results
        .iter()
        .filter(|r| r.test == wide.results[0].test)
        .map(|r| {
            let mut one = wide.clone();
            one.results = vec![r.clone()];
            one
        })
        .collect();
    let c = report::compare::compare(std::slice::from_ref(&steady), &singles);
    assert!(codes(&c).1, "{:?}", c.warnings);
}

/// A load-level parameter (`streams`, `connections`) that each run holds at one value is a
/// setting of the columns, said above the table, not a best taken over it (acceptance P,
/// 5: "each column at its best streams" of runs that ran one streams each); swept inside
/// a run, the summary still takes each column at its best.
#[test]
fn a_load_level_each_run_holds_is_a_column_setting_not_a_best() {
    let a = kv_run(&Spec::default());
    let mut b = kv_run(&Spec {
        id: "20261120T233000-eeeeee",
        label: "four",
        seed: 5,
        ..Spec::default()
    });
    let mut a1 = a.clone();
    for r in &mut a1.results {
        r.params.insert("connections".into(), serde_json::json!(1));
    }
    for r in &mut b.results {
        r.params.insert("connections".into(), serde_json::json!(4));
    }
    let runs = [a1.clone(), b.clone()];
    let peak = report::derive::peak_params(&runs);
    assert!(!peak.contains(&"connections".to_string()), "{peak:?}");
    assert_eq!(
        report::derive::column_params(&runs, &peak),
        ["connections".to_string()]
    );
    let m = report::markdown(&runs, None);
    assert!(
        m.contains("different settings") && !m.contains("best connections"),
        "{m}"
    );
    // Swept in one of them: a best over it.
    b.results[0]
        .params
        .insert("connections".into(), serde_json::json!(8));
    assert!(report::derive::peak_params(&[a1, b]).contains(&"connections".to_string()));
}

/// `compare`'s text shows what a user named escaped: a newline in a run's label made a
/// line of its own, which could pass for the tool's.
#[test]
fn compare_text_shows_a_label_escaped() {
    let spec = Spec {
        reps: 2,
        instances: &[1],
        ..Spec::default()
    };
    let mut a = kv_run(&spec);
    a.label = Some("lab\nel".into());
    let b = kv_run(&spec);
    let c = report::compare(std::slice::from_ref(&a), std::slice::from_ref(&b));
    let text = report::compare::compare_text(&c);
    let first = text.lines().next().unwrap();
    assert!(
        first.starts_with("A (baseline): ") && first.contains("lab\\nel"),
        "{text}"
    );
    assert!(!text.lines().any(|l| l.starts_with("el")), "{text}");
}

/// Comparison rows were sorted by their point as text: a pipeline sweep of 1, 4, 16 and
/// 64 read 1, 16, 4, 64. Here pipeline 100 and 20: 20 comes first, as a reader counts.
#[test]
fn comparison_rows_are_in_the_order_of_their_numbers() {
    let mut run = common::kv_run(&common::Spec {
        instances: &[1],
        reps: 1,
        ..Default::default()
    });
    // The fixture's pipeline 100, and a pipeline 20 beside it.
    common::add_pipeline_copy(&mut run, 20);
    let c = report::compare::compare(std::slice::from_ref(&run), std::slice::from_ref(&run));
    let mut points: Vec<&str> = Vec::new();
    for r in c.rows.iter().filter(|r| r.point.starts_with("kv get")) {
        if points.last() != Some(&r.point.as_str()) {
            points.push(&r.point);
        }
    }
    assert_eq!(
        points,
        [
            "kv get pipeline=1",
            "kv get pipeline=20",
            "kv get pipeline=100"
        ]
    );
}

/// `--label "# Best"` made a paragraph of the Markdown report that starts with the label
/// an H1.
#[test]
fn a_label_like_a_heading_stays_text_in_markdown() {
    let mut runs = common::two_platforms();
    runs[0].label = Some("# Best".into());
    let m = report::markdown(&runs, None);
    for l in m.lines() {
        assert!(!l.starts_with("# Best"), "{l}");
    }
    assert!(m.contains("\\# Best"), "{m}");
}

/// Power cells went to 3 significant figures: 104.6 W and 105.4 W both read "105 W".
/// Every power cell is to 0.1 W, as the sweeps' are.
#[test]
fn power_cells_are_to_a_tenth_of_a_watt() {
    // At 4 instances the fixture's load is 1: every point draws the given watts, and
    // idle is 0.55 of it (57.53 W).
    let runs = [kv_run(&Spec {
        reps: 1,
        instances: &[4],
        power: Power::Ipmi(104.6),
        ..Spec::default()
    })];
    let md = report::markdown(&runs, None);
    let results = &md[md.find("### Results").unwrap()..];
    assert!(results.contains("| 104.6 W ("), "{results}");
    assert!(md.contains("| 57.5 W"), "the idle cell: {md}");
    let mean = md.lines().find(|l| l.contains("Arithmetic mean"));
    assert!(mean.is_some_and(|l| l.contains("| 104.6 W")), "{mean:?}");
    let h = report::html(&runs, None);
    assert!(h.contains(">104.6 W"), "{h}");
    assert!(h.contains(">57.5 W"), "{h}");
    assert!(!h.contains(">105 W"), "{h}");
}

/// The Markdown's Systems head named this machine `local` where the HTML's and the Hosts
/// table named it by its hostname.
#[test]
fn markdown_systems_head_names_this_machine_by_its_hostname() {
    let mut runs = common::two_platforms();
    for r in &mut runs {
        for h in r.hosts.iter_mut().filter(|h| h.host == "local") {
            h.facts
                .insert("os.hostname".into(), model::Fact::known("bench-01"));
        }
    }
    let m = report::markdown(&runs, None);
    let systems = &m[m.find("## Systems").unwrap()..];
    let head = systems.lines().find(|l| l.starts_with("| Fact")).unwrap();
    assert!(head.contains("bench-01 ("), "{head}");
    assert!(!head.contains("local"), "{head}");
}

/// A point whose headline is missing read `-` in the results tables, as a test that was
/// not run does; the summary gave the reason. The tables give it too, escaped.
#[test]
fn results_tables_say_why_a_headline_is_missing() {
    let mut run = kv_run(&Spec {
        reps: 1,
        instances: &[1],
        ..Spec::default()
    });
    for r in run
        .results
        .iter_mut()
        .filter(|r| r.test == "get" && r.params.get("pipeline") == Some(&serde_json::json!(1)))
    {
        r.metrics.retain(|m| m.name != "ops_per_s");
        r.missing.push(model::MissingMetric {
            name: "ops_per_s".into(),
            reason: "server <b>refused</b> every request".into(),
        });
    }
    let runs = [run];
    let why = "missing: ops_per_s: server &lt;b&gt;refused&lt;/b&gt; every request";
    let md = report::markdown(&runs, None);
    let results = &md[md.find("### Results").unwrap()..];
    assert!(results.contains(&why.replace('_', "\\_")), "{results}");
    let h = report::html(&runs, None);
    let all = &h[h.find("<caption>All results").unwrap()..];
    assert!(all.contains(why), "{all}");
}

/// A point only some of whose repetitions made a figure has none: 2 of 3 repetitions of
/// a search missed the objective at its lowest rate, and the report said the third's
/// 1,000 ops/s ("n 3/3"), compare its mean (audit, s44). Said instead, with why.
#[test]
fn a_figure_some_repetitions_did_not_make_is_no_figure_of_the_point() {
    let spec = Spec {
        instances: &[1],
        ..Spec::default()
    };
    let mut run = kv_run(&spec);
    let test = run.results[0].test.clone();
    for r in run.results.iter_mut().filter(|r| r.test == test).skip(1) {
        r.metrics.retain(|m| m.name != r.headline);
        r.missing.push(model::MissingMetric {
            name: r.headline.clone(),
            reason: "not met even at the lowest rate allowed (500/s)".into(),
        });
    }
    let points = report::derive::points(0, &run);
    let p = points.iter().find(|p| p.test == test).unwrap();
    assert!(p.headline().is_none(), "{:?}", p.headline());
    let why = p.headline_missing().unwrap();
    assert!(
        why.starts_with("2 of its 3 repetitions made no figure (ops_per_s: not met even at"),
        "{why}"
    );
    // The other points, whole, keep theirs.
    assert!(points
        .iter()
        .filter(|p| p.test != test)
        .all(|p| p.headline().is_some()));
    let c = report::compare::compare(std::slice::from_ref(&run), &two_platforms()[..1]);
    let row = c
        .rows
        .iter()
        .find(|r| r.point.starts_with(&format!("kv {test}")) && r.metric == "ops_per_s")
        .unwrap();
    assert!(row.a.is_none(), "{row:?}");
}

/// Two mem runs of `ram_latency_ns` (100 ns, then 120 ns), the first with an
/// `instances` sweep trimmed to one point: a run each, one row.
fn latency_runs(a_ns: f64, b_ns: f64) -> Vec<RunRecord> {
    [
        ("20261120T230000-aaaaaa", "a", a_ns),
        ("20261120T231500-bbbbbb", "b", b_ns),
    ]
    .into_iter()
    .map(|(id, label, ns)| {
        let mut run = kv_run(&Spec {
            id,
            label,
            reps: 1,
            instances: &[1],
            ..Spec::default()
        });
        run.results.truncate(1);
        let r = &mut run.results[0];
        r.workload = "mem".into();
        r.test = "latency".into();
        r.params.clear();
        r.headline = "ram_latency_ns".into();
        r.metrics = vec![Metric::new("ram_latency_ns", ns, "ns")];
        run
    })
    .collect()
}

/// A latency row is no performance: 100 ns then 120 ns is 20% worse, and the summary's
/// heading and Difference cells say so (audit: `performance (ns)` over `1.20x (+20%)`,
/// a regression that read as a gain), in Markdown and HTML, in the geometric mean too.
#[test]
fn a_latency_row_says_lower_is_better_in_the_summary() {
    let runs = latency_runs(100.0, 120.0);
    let s = report::summary(&runs);
    assert_eq!(s.perf_heading(), "Latency (ns)");
    let md = report::markdown(&runs, None);
    assert!(!md.contains("performance (ns)"), "{md}");
    assert!(md.contains("| a: latency (ns) | a: power |"), "{md}");
    assert!(md.contains("| 1.20x (+20%, worse) |"), "{md}");
    assert!(
        md.lines()
            .any(|l| l.starts_with("| **Geometric mean** |")
                && l.ends_with("| 1.20x (+20%, worse) |")),
        "{md}"
    );
    let h = report::html(&runs, None);
    assert!(h.contains("<th>Latency (ns)</th>"), "{h}");
    assert!(h.contains("1.20x (+20%, worse)"), "{h}");
    assert!(!h.contains("Performance (ns)"), "{h}");
    // The other way about: less latency is better.
    let md = report::markdown(&latency_runs(120.0, 100.0), None);
    assert!(md.contains("| 0.83x (-17%, better) |"), "{md}");
    // A throughput's cell is as it was: more of it is better, as the heading says.
    use report::derive::DiffColumn;
    assert_eq!(DiffColumn::cell_for(Some(1.2), true), "1.20x (+20%)");
    assert_eq!(
        DiffColumn::cell_for(Some(1.2), false),
        "1.20x (+20%, worse)"
    );
    assert_eq!(
        DiffColumn::cell_for(Some(0.998), false),
        "1.00x (-0.2%, better)"
    );
    // No change is neither.
    assert_eq!(DiffColumn::cell_for(Some(1.0), false), "1.00x (+0%)");
    assert_eq!(DiffColumn::cell_for(None, false), "-");
}

/// Two crypto runs of rsa2048 (signs/s) and sha256 (MB/s), `M1` measured by IPMI and
/// `M2` on a declared power model.
fn crypto_two_units() -> Vec<RunRecord> {
    [
        ("20261120T230000-aaaaaa", "M1", Power::Ipmi(180.0)),
        ("20261120T231500-bbbbbb", "M2", Power::Modelled(200.0)),
    ]
    .into_iter()
    .map(|(id, label, power)| {
        let mut run = kv_run(&Spec {
            id,
            label,
            power,
            reps: 1,
            instances: &[1],
            ..Spec::default()
        });
        run.label = Some(label.into());
        run.results.truncate(2);
        for (r, (test, headline, value, unit)) in run.results.iter_mut().zip([
            ("rsa2048", "signs_per_s", 2061.0, "ops/s"),
            ("sha256", "throughput_mb_per_s", 1024.0, "MB/s"),
        ]) {
            r.workload = "crypto".into();
            r.test = test.into();
            r.params.clear();
            r.headline = headline.into();
            r.metrics = vec![Metric::new(headline, value, unit)];
        }
        run
    })
    .collect()
}

/// Section 4's charts split as section 1's bars do, one per headline and unit: a perf/W
/// in signs/s per W beside one in MB/s per W on one axis (`throughput per W`) could not
/// be read (audit). A measured run's bars and a modelled run's say which is which in
/// their legend; each file is linked from the Markdown and drawn in the HTML.
#[test]
fn power_and_perf_per_w_charts_are_one_per_unit_with_each_runs_basis() {
    let runs = crypto_two_units();
    let charts = report::charts::charts(&runs);
    let power: Vec<&report::charts::Chart> =
        charts.iter().filter(|c| c.section == "power").collect();
    let files: Vec<&str> = power.iter().map(|c| c.file.as_str()).collect();
    assert_eq!(
        files,
        [
            "crypto_power_signs_per_s.svg",
            "crypto_perf_per_w_signs_per_s.svg",
            "crypto_power_throughput_mb_per_s.svg",
            "crypto_perf_per_w_throughput_mb_per_s.svg",
        ]
    );
    let svg = |file: &str| {
        power
            .iter()
            .find(|c| c.file == file)
            .and_then(|c| c.svg.clone())
            .expect(file)
    };
    let signs = svg("crypto_perf_per_w_signs_per_s.svg");
    assert!(signs.contains("signs/s per W"), "{signs}");
    assert!(
        !signs.contains("MB/s") && !signs.contains("throughput per W"),
        "{signs}"
    );
    assert!(!signs.contains("sha256"), "{signs}");
    let mb = svg("crypto_perf_per_w_throughput_mb_per_s.svg");
    assert!(mb.contains("MB/s per W") && !mb.contains("signs/s"), "{mb}");
    // Each run's power basis in its legend name, the measured one's too.
    for file in files {
        let s = svg(file);
        assert!(s.contains("M1 (measured, whole server)"), "{file}: {s}");
        assert!(
            s.contains("M2 (MODELLED (declared power model))"),
            "{file}: {s}"
        );
    }
    assert!(
        power[0].title.contains("throughput (signs/s)"),
        "{}",
        power[0].title
    );
    assert!(
        power[1].title.contains("throughput (signs/s) per W"),
        "{}",
        power[1].title
    );
    let md = report::markdown_with_charts(&runs, None, Some("charts"));
    let h = report::html(&runs, None);
    for c in &power {
        assert!(
            md.contains(&format!("(charts/{})", c.file)),
            "{}: {md}",
            c.file
        );
        assert!(
            h.contains(&format!("<code>{}</code>", c.file)),
            "{}",
            c.file
        );
    }
    let written: Vec<String> = report::svg_charts(&runs)
        .into_iter()
        .map(|(f, _)| f)
        .collect();
    for c in &power {
        assert!(
            written.contains(&c.file),
            "{} not written: {written:?}",
            c.file
        );
    }

    // One run, one basis: its legend is its label alone, its files as before.
    let one = &runs[..1];
    let charts = report::charts::charts(one);
    let p = charts
        .iter()
        .find(|c| c.file == "crypto_power_signs_per_s.svg")
        .and_then(|c| c.svg.clone())
        .unwrap();
    assert!(!p.contains("M1 (measured"), "{p}");
    let mut kv = crypto_two_units();
    for r in &mut kv {
        r.results.truncate(1);
    }
    let files: Vec<String> = report::charts::charts(&kv)
        .into_iter()
        .filter(|c| c.section == "power")
        .map(|c| c.file)
        .collect();
    assert_eq!(files, ["crypto_power.svg", "crypto_perf_per_w.svg"]);
}

/// A run with two reasons for no power (no source on one test, a BMC that did not answer
/// on another): each reason has its own mark, on its cells and its note, in the summary,
/// the efficiency and the results tables, in Markdown and HTML (audit: both read
/// `absent*` under two notes `* Power absent for b: ...`, whose was whose unsaid). One
/// reason keeps its plain `*`.
#[test]
fn each_reason_for_absent_power_has_its_own_mark() {
    let a = kv_run(&Spec {
        reps: 1,
        instances: &[1],
        ..Spec::default()
    });
    let mut b = kv_run(&Spec {
        id: "20261120T231500-bbbbbb",
        label: "b",
        power: Power::None,
        reps: 1,
        instances: &[1],
        ..Spec::default()
    });
    b.label = Some("b".into());
    let bmc = "ipmi: the BMC did not answer";
    for r in b.results.iter_mut().filter(|r| r.test == "get") {
        for ts in &mut r.telemetry_summary {
            ts.power_missing = Some(bmc.into());
        }
    }
    let no_source = "no power source found";
    let runs = [a.clone(), b.clone()];
    let md = report::markdown(&runs, None);
    let section = &md[md.find("## Workload: kv").unwrap()..];
    let line = |starts: &str| {
        section
            .lines()
            .find(|l| l.starts_with(starts))
            .unwrap_or_else(|| panic!("{starts}: {md}"))
            .to_string()
    };
    // The summary's rows: set's power absent for one reason, get's for the other.
    let set = line("| kv set pipeline=1 |");
    let get = line("| kv get pipeline=1 |");
    assert!(set.contains("| absent\\*1 |"), "{set}");
    assert!(get.contains("| absent\\*2 |"), "{get}");
    assert!(
        md.contains(&format!("\\*1 Power absent for b: {no_source}")),
        "{md}"
    );
    assert!(
        md.contains(&format!("\\*2 Power absent for b: {bmc}")),
        "{md}"
    );
    assert!(
        !md.contains("absent\\* ") && !md.contains("absent\\*|"),
        "{md}"
    );
    // The results and efficiency tables' cells carry the same marks.
    let results = &md[md.find("### Results").unwrap()..];
    assert!(results.contains("| absent\\*2 |") && results.contains("| absent\\*1 |"));
    let eff = &md[md.find("### Efficiency").unwrap()..md.find("### Results").unwrap()];
    assert!(
        eff.contains("| absent\\*2 |") && eff.contains("| absent\\*1 |"),
        "{eff}"
    );
    let h = report::html(&runs, None);
    assert!(h.contains(r#"<span class="muted">absent*2</span>"#), "{h}");
    assert!(
        h.contains(&format!("*1 Power absent for b: {no_source}")),
        "{h}"
    );
    assert!(h.contains(&format!("*2 Power absent for b: {bmc}")), "{h}");

    // One reason: `*` as before.
    let md = report::markdown(
        &[
            a,
            kv_run(&Spec {
                id: "20261120T231500-bbbbbb",
                power: Power::None,
                reps: 1,
                instances: &[1],
                ..Spec::default()
            }),
        ],
        None,
    );
    assert!(
        md.contains("| absent\\* |") && !md.contains("absent\\*1"),
        "{md}"
    );
    assert!(md.contains("\\* Power absent for "), "{md}");
}
