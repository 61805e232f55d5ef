//! End to end: the real binary's `runs`, `show`, `export` and `import` against a store in a
//! temporary directory, filled through the store API (as `rackbench run` will fill it).

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use model::Status;
use store::fixtures::{rich_result, rich_run, t0};
use store::Store;

fn rackbench(db: &Path, args: &[&str]) -> Output {
    common::bin()
        .args(args)
        .arg("--db")
        .arg(db)
        .output()
        .expect("run rackbench")
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).expect("utf-8 stdout")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Three runs: `arm` (3 results), `x86` (1 result) and an unfinished one (2 results).
fn filled_store(dir: &Path) -> PathBuf {
    let db = dir.join("results.sqlite");
    let store = Store::open(&db).unwrap();
    store
        .import_run(&rich_run("20261120T210703-aaaaaa", Some("arm"), t0(0), 3))
        .unwrap();
    store
        .import_run(&rich_run("20261120T210803-bbbbbb", Some("x86"), t0(60), 1))
        .unwrap();
    let mut live = rich_run("20261120T210903-cccccc", None, t0(120), 0);
    live.finished_at = None;
    store.begin_run(&live).unwrap();
    store
        .insert_result(&live.id, &rich_result(0, "set", 1, t0(121)))
        .unwrap();
    store
        .insert_result(&live.id, &rich_result(1, "get", 16, t0(132)))
        .unwrap();
    db
}

#[test]
fn runs_lists_newest_first() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled_store(dir.path());
    let text = ok(&rackbench(&db, &["runs"]));
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("ID "), "{text}");
    assert!(
        lines[0].contains("WORKLOADS") && lines[0].contains("HOST"),
        "{text}"
    );
    assert!(
        lines[1].starts_with("20261120T210903-cccccc") && lines[1].contains("running"),
        "{text}"
    );
    assert!(
        lines[2].contains("x86") && lines[2].contains("interrupted"),
        "{text}"
    );
    assert!(
        lines[3].contains("arm") && lines[3].contains("altra-01") && lines[3].contains(" 3 "),
        "{text}"
    );

    let json: serde_json::Value =
        serde_json::from_str(&ok(&rackbench(&db, &["runs", "--json"]))).unwrap();
    let arr = json.as_array().unwrap();
    assert_eq!(arr.len(), 3);
    assert_eq!(arr[0]["id"], "20261120T210903-cccccc");
    assert_eq!(arr[0]["status"], "running");
    assert_eq!(arr[2]["results"], 3);
    assert_eq!(arr[2]["workloads"], serde_json::json!(["kv"]));

    let limited = ok(&rackbench(&db, &["runs", "--limit", "1"]));
    assert_eq!(limited.lines().count(), 2, "{limited}");
}

#[test]
fn empty_store_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("new/results.sqlite");
    drop(Store::open(&db).unwrap());
    let out = rackbench(&db, &["runs"]);
    assert_eq!(ok(&out), "");
    assert!(stderr(&out).contains("rackbench run"), "{}", stderr(&out));
    let out = rackbench(&db, &["show"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no runs yet"), "{}", stderr(&out));
}

#[test]
fn show_prints_disclosure_and_results() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled_store(dir.path());
    let text = ok(&rackbench(&db, &["show", "arm"]));
    for want in [
        "run ",
        "20261120T210703-aaaaaa",
        "label",
        "interrupted",
        "cpu.model",
        "Ampere(R) Altra(R) Q80-30",
        "cpu.threads",
        // A setting a reader checks first when two hosts differ.
        "cpu.governor",
        "performance",
        "os.kernel",
        "software.redis-server",
        "idle power local",
        "STEP",
        "PIPELINE",
        "RESULT",
        "P99 MS",
        "ERRORS",
        "! client_bound",
        "!! errors",
        "ops/s",
        "all steps: ! client_bound: load generator at 97% CPU",
        "all steps: not measured: cache_hit_ratio",
        // What the system under test spent, beside what it did.
        "system under test: CPU, power, efficiency",
        "%CPU USED",
        "PERF/W",
        // The report's rule, said as the report says it.
        "%CPU used is the system under test's CPU in percent of one CPU",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
    // Default is the latest run, which is still running.
    let latest = ok(&rackbench(&db, &["show"]));
    assert!(
        latest.contains("20261120T210903-cccccc") && latest.contains("running"),
        "{latest}"
    );

    let json = ok(&rackbench(&db, &["show", "20261120T2108", "--json"]));
    let back: model::RunRecord = serde_json::from_str(&json).unwrap();
    let store = Store::open(&db).unwrap();
    assert_eq!(back, store.load_run("20261120T210803-bbbbbb").unwrap());
}

#[test]
fn unknown_and_ambiguous_runs_say_how_to_list() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled_store(dir.path());
    for q in ["nope", "20261120T2"] {
        let out = rackbench(&db, &["show", q]);
        assert_eq!(out.status.code(), Some(2), "{q}");
        assert!(stderr(&out).contains("rackbench runs"), "{}", stderr(&out));
    }
    assert!(stderr(&rackbench(&db, &["show", "20261120T2"])).contains("matches 3 runs"));
}

#[test]
fn export_json_then_import_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled_store(dir.path());
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let file = out_dir.join("all.json");
    let out = rackbench(&db, &["export", "--all", "-o", file.to_str().unwrap()]);
    ok(&out);
    assert!(stderr(&out).contains("exported 3 runs"), "{}", stderr(&out));
    // Nothing but the file itself: the temporary was renamed.
    let names: Vec<_> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, [std::ffi::OsString::from("all.json")]);

    let text = std::fs::read_to_string(&file).unwrap();
    let runs = store::export::from_json(&text).unwrap();
    let store = Store::open(&db).unwrap();
    let ids: Vec<&str> = runs.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "20261120T210703-aaaaaa",
            "20261120T210803-bbbbbb",
            "20261120T210903-cccccc"
        ]
    );
    for r in &runs {
        assert_eq!(r, &store.load_run(&r.id).unwrap());
    }

    let db2 = dir.path().join("other/results.sqlite");
    let out = rackbench(&db2, &["import", file.to_str().unwrap()]);
    ok(&out);
    assert!(stderr(&out).contains("imported 3 runs"), "{}", stderr(&out));
    let other = Store::open(&db2).unwrap();
    for r in &runs[..2] {
        assert_eq!(r, &other.load_run(&r.id).unwrap());
    }
    // The run exported while it was running has no process here to finish it.
    let live = other.load_run("20261120T210903-cccccc").unwrap();
    assert_eq!(live.status, Status::Interrupted);
    assert!(live.error.unwrap().contains("still running"));
    assert_eq!(live.results, runs[2].results);
    // Importing again changes nothing and says so.
    let out = rackbench(&db2, &["import", file.to_str().unwrap()]);
    ok(&out);
    assert!(
        stderr(&out).contains("imported 0 runs") && stderr(&out).contains("3 already there"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("NOT imported"), "{}", stderr(&out));
    // The same id with other figures is not taken for a copy (acceptance L, 8): kept out,
    // and said, the stored run untouched.
    let mut edited = runs.clone();
    edited[0].results[0].metrics[0].value *= 2.0;
    let file2 = out_dir.join("edited.json");
    std::fs::write(&file2, store::export::to_json(&edited)).unwrap();
    let out = rackbench(&db2, &["import", file2.to_str().unwrap()]);
    // A run not imported, as the README says: exit 2.
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("2 already there"), "{err}");
    assert!(
        err.contains("NOT imported: 1 stored already under the same id with other results")
            && err.contains("20261120T210703-aaaaaa"),
        "{err}"
    );
    assert_eq!(runs[0], other.load_run(&runs[0].id).unwrap());
}

#[test]
fn export_defaults_and_selection() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled_store(dir.path());
    // Default: the latest run, JSON on stdout.
    let runs = store::export::from_json(&ok(&rackbench(&db, &["export"]))).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].id, "20261120T210903-cccccc");
    // Several selectors, duplicates dropped, in the order given.
    let runs = store::export::from_json(&ok(&rackbench(
        &db,
        &["export", "x86", "arm", "20261120T2108"],
    )))
    .unwrap();
    let ids: Vec<&str> = runs.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["20261120T210803-bbbbbb", "20261120T210703-aaaaaa"]);
    // --all with run names is a usage error.
    assert_eq!(
        rackbench(&db, &["export", "--all", "arm"]).status.code(),
        Some(2)
    );
}

/// `-o -` is stdout (no file named `-`), and a report's name is refused, not filled
/// with JSON (a report.md overwritten); other names are JSON as before.
#[test]
fn export_to_dash_is_stdout_and_a_report_name_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled_store(dir.path());
    let run_in = |args: &[&str]| {
        common::bin()
            .current_dir(dir.path())
            .args(args)
            .arg("--db")
            .arg(&db)
            .output()
            .unwrap()
    };
    let runs = store::export::from_json(&ok(&run_in(&["export", "-o", "-"]))).unwrap();
    assert_eq!(runs.len(), 1);
    assert!(!dir.path().join("-").exists(), "a file named - was written");
    let out = run_in(&["export", "-o", "report.md"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("rackbench report"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.path().join("report.md").exists());
    // Told the format, any name is taken.
    ok(&run_in(&["export", "-o", "report.md", "--format", "csv"]));
    let csv = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(csv.starts_with("run_id,"), "{csv}");
    // A dated name is JSON, as it always was.
    ok(&run_in(&["export", "-o", "runs-2024.06.01"]));
    let json = std::fs::read_to_string(dir.path().join("runs-2024.06.01")).unwrap();
    assert!(store::export::from_json(&json).is_ok());
}

#[test]
fn export_csv_long_form() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled_store(dir.path());
    let text = ok(&rackbench(&db, &["export", "arm", "--format", "csv"]));
    let mut rd = store::export::csv::Reader::from_reader(text.as_bytes());
    assert_eq!(
        rd.headers().unwrap().iter().collect::<Vec<_>>(),
        store::export::CSV_COLUMNS
    );
    let rows: Vec<store::export::csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
    let heads: Vec<&store::export::csv::StringRecord> = rows
        .iter()
        .filter(|r| &r[8] == "ops_per_s" && r[11].is_empty())
        .collect();
    assert_eq!(heads.len(), 3);
    assert!(heads
        .iter()
        .all(|r| &r[0] == "20261120T210703-aaaaaa" && &r[1] == "arm" && &r[10] == "ops/s"));
    // The headline's rows say so, and only they (acceptance L, 9: its metric's other
    // rows, a share or a class of it, were not told apart from it).
    let marked: Vec<_> = rows.iter().filter(|r| &r[14] == "true").collect();
    assert_eq!(marked, heads);
    assert!(rows.iter().all(|r| &r[14] == "true" || &r[14] == "false"));

    // The format follows the file's extension.
    let file = dir.path().join("x.CSV");
    ok(&rackbench(
        &db,
        &["export", "arm", "-o", file.to_str().unwrap()],
    ));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
}

#[test]
fn unusable_paths_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled_store(dir.path());
    let plain = dir.path().join("plain");
    std::fs::write(&plain, "x").unwrap();
    let out = rackbench(&plain.join("results.sqlite"), &["runs"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("plain") && err.contains("--db") && err.contains("RACKBENCH_DB"),
        "{err}"
    );

    let out = rackbench(
        &db,
        &[
            "export",
            "-o",
            dir.path().join("no/such/dir/x.json").to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("cannot write"), "{err}");
    // The user's path, not the temporary file beside it.
    assert!(!err.contains(".tmp-"), "{err}");

    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{\"hello\": 1}").unwrap();
    let out = rackbench(&db, &["import", junk.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("rackbench export"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn report_all_takes_every_stored_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled_store(dir.path());
    let out = dir.path().join("all.html");
    ok(&rackbench(
        &db,
        &["report", "--all", "-o", out.to_str().unwrap()],
    ));
    let html = std::fs::read_to_string(&out).unwrap();
    for id in [
        "20261120T210703-aaaaaa",
        "20261120T210803-bbbbbb",
        "20261120T210903-cccccc",
    ] {
        assert!(html.contains(id), "{id} missing from the report");
    }
    // Written again over its own report; never over a file it did not write.
    ok(&rackbench(
        &db,
        &["report", "--all", "-o", out.to_str().unwrap()],
    ));
    let theirs = dir.path().join("notes.html");
    std::fs::write(&theirs, "<p>my notes</p>").unwrap();
    let o = rackbench(&db, &["report", "--all", "-o", theirs.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("not written by rackbench"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read_to_string(&theirs).unwrap(), "<p>my notes</p>");
    // Notes that quote a report (its head and mark early in the file), and the report
    // once edited by hand, are not rackbench's to replace.
    let report = std::fs::read_to_string(&out).unwrap();
    let quoting = dir.path().join("mynotes.html");
    let mine = format!("<p>notes</p>\n{report}");
    std::fs::write(&quoting, &mine).unwrap();
    let edited = report.replacen("<main>", "<main><p>my remark</p>", 1);
    std::fs::write(&out, &edited).unwrap();
    for (p, want) in [(&quoting, &mine), (&out, &edited)] {
        let o = rackbench(&db, &["report", "--all", "-o", p.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{}", p.display());
        assert_eq!(&std::fs::read_to_string(p).unwrap(), want);
    }
    // The store: refused as no report's name, and told as the store when the format is
    // given.
    let o = rackbench(&db, &["report", "--all", "-o", db.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not .sqlite"), "{}", stderr(&o));
    let o = rackbench(
        &db,
        &[
            "report",
            "--all",
            "--format",
            "html",
            "-o",
            db.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("is the results store"),
        "{}",
        stderr(&o)
    );
    assert!(Store::open(&db).unwrap().list_runs().unwrap().len() == 3);
}

/// An `--extrapolate` column that cannot be made (a run that discloses no rated clock)
/// is left out with a note in the document, and said where it was typed, once.
#[test]
fn an_extrapolation_that_cannot_be_made_is_said_on_the_console() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled_store(dir.path());
    let out = dir.path().join("x.html");
    let extrapolate = |how: &str| {
        let o = rackbench(
            &db,
            &[
                "report",
                "arm",
                "x86",
                "--extrapolate",
                how,
                "-o",
                out.to_str().unwrap(),
            ],
        );
        ok(&o);
        stderr(&o)
    };
    let err = extrapolate("arm=3GHz");
    let said = "rackbench: note: arm at 3 GHz not extrapolated";
    assert_eq!(err.matches(said).count(), 1, "{err}");
    assert!(err.contains("cpu.freq_max_mhz"), "{err}");
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(
        html.contains("not extrapolated"),
        "the document lost its note"
    );
    // A column that can be made is no note.
    let err = extrapolate("arm=x2:boards");
    assert!(!err.contains("not extrapolated"), "{err}");
}

/// `--clock-elasticity` without a clock extrapolation would change nothing: refused, with
/// what to add; with one, it is taken.
#[test]
fn a_clock_elasticity_without_a_clock_extrapolation_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled_store(dir.path());
    let out = dir.path().join("x.html");
    let report = |extra: &[&str]| {
        let mut args = vec!["report", "arm", "x86", "-o", out.to_str().unwrap()];
        args.extend_from_slice(extra);
        rackbench(&db, &args)
    };
    let o = report(&[
        "--clock-elasticity",
        "0.7",
        "--extrapolate",
        "arm=x2:boards",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("and none is asked for: add --extrapolate RUN=3GHz"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists(), "a refused report wrote its file");
    ok(&report(&[
        "--clock-elasticity",
        "0.7",
        "--extrapolate",
        "arm=3GHz",
    ]));
}

/// A label with an escape sequence and a newline (a hostile or careless `--label`, an
/// imported run) reaches no terminal raw and breaks no table: runs, show, compare.
#[test]
fn control_characters_in_labels_never_reach_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.sqlite");
    let store = Store::open(&db).unwrap();
    let evil = "evil\u{1b}[31mred\nline2";
    // Escapes in every stored text `show` prints: flags, errors, missing figures too.
    let mut hostile = rich_run("20261120T210703-aaaaaa", Some(evil), t0(0), 1);
    for r in &mut hostile.results {
        r.flags.push(model::Flag::invalid(evil, evil));
        r.error = Some(evil.into());
        r.missing.push(model::MissingMetric {
            name: evil.into(),
            reason: evil.into(),
        });
    }
    store.import_run(&hostile).unwrap();
    store
        .import_run(&rich_run(
            "20261120T210803-bbbbbb",
            Some("plain"),
            t0(60),
            1,
        ))
        .unwrap();
    drop(store);
    for args in [
        &["runs"][..],
        &["show", "20261120T210703"],
        &["compare", "20261120T210703", "plain"],
    ] {
        let out = ok(&rackbench(&db, args));
        assert!(
            !out.contains('\u{1b}'),
            "{args:?} printed a raw escape:\n{out}"
        );
        assert!(out.contains("evil\\u{1b}[31mred"), "{args:?}:\n{out}");
    }
    let runs = ok(&rackbench(&db, &["runs"]));
    assert_eq!(runs.lines().count(), 3, "one line per run:\n{runs}");
}

/// The Markdown report links only chart files this command wrote, as the report finds
/// them (relative to it); without --svg-dir it links none.
#[test]
fn markdown_links_only_the_charts_it_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.sqlite");
    // A real run with figures to chart (the fixture runs' results are all flagged out).
    ok(&rackbench(
        &db,
        &[
            "run",
            "crypto",
            "-t",
            "sha256",
            "--threads",
            "1,2",
            "--duration",
            "0.1",
            "--buffer-sizes",
            "64",
            "-q",
            "--no-telemetry",
        ],
    ));
    // `report --all --format md -o MD [--svg-dir DIR]`
    let report_md = |md: &Path, svg_dir: Option<&Path>| {
        let mut args = vec![
            "report",
            "--all",
            "--format",
            "md",
            "-o",
            md.to_str().unwrap(),
        ];
        if let Some(d) = svg_dir {
            args.extend(["--svg-dir", d.to_str().unwrap()]);
        }
        rackbench(&db, &args)
    };
    let md = dir.path().join("r.md");
    let charts = dir.path().join("charts");
    ok(&report_md(&md, Some(&charts)));
    let text = std::fs::read_to_string(&md).unwrap();
    let links: Vec<&str> = text
        .split("](")
        .skip(1)
        .filter_map(|s| s.split(')').next())
        .filter(|l| l.ends_with(".svg"))
        .collect();
    assert!(!links.is_empty(), "{text}");
    for l in links {
        assert!(l.starts_with("charts/"), "relative to the report: {l}");
        assert!(dir.path().join(l).is_file(), "{l} was not written");
    }
    let bare = dir.path().join("bare.md");
    ok(&report_md(&bare, None));
    assert!(!std::fs::read_to_string(&bare).unwrap().contains(".svg)"));

    // A chart that may not be replaced (someone's own file of that name), or an
    // --svg-dir that is a file: refused before anything is written, the report included.
    let theirs = dir.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    let name = std::fs::read_dir(&charts)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .find(|n| n.to_string_lossy().ends_with(".svg"))
        .unwrap();
    std::fs::write(theirs.join(&name), "my own drawing").unwrap();
    let not_a_dir = dir.path().join("not-a-dir");
    std::fs::write(&not_a_dir, "notes").unwrap();
    for (svg_dir, says) in [
        (
            &theirs,
            "not written by rackbench; rackbench does not overwrite it: give --svg-dir another \
             directory",
        ),
        (&not_a_dir, "not a directory"),
    ] {
        let md = dir.path().join("refused.md");
        let o = report_md(&md, Some(svg_dir));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains(says), "{err}");
        assert!(
            !md.exists(),
            "the report was written beside a refused chart"
        );
    }
    assert_eq!(std::fs::read_dir(&theirs).unwrap().count(), 1);
    assert_eq!(
        std::fs::read(theirs.join(&name)).unwrap(),
        b"my own drawing"
    );
    assert_eq!(std::fs::read(&not_a_dir).unwrap(), b"notes");
}

/// Reading a store that is not there (a mistyped --db) says so and makes none: no empty
/// store left behind that would then "hold no runs".
#[test]
fn reading_commands_never_make_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("typo.sqlite");
    for args in [
        &["runs"][..],
        &["show", "latest"],
        &["export", "latest"],
        &["report", "latest"],
        &["compare", "a", "b"],
    ] {
        let out = rackbench(&db, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("no results store at"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A run that no name matches is said once, with how to list the runs once: `compare`
/// and `report` wrapped the store's words in their own, saying both twice.
#[test]
fn a_run_no_name_matches_is_said_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled_store(dir.path());
    for args in [
        &["compare", "latest", "nosuchrun"][..],
        &["report", "nosuchrun"],
        &["show", "nosuchrun"],
    ] {
        let out = rackbench(&db, args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("no run matches `nosuchrun`"),
            "{args:?}: {err}"
        );
        assert_eq!(err.matches("rackbench runs").count(), 1, "{args:?}: {err}");
    }
}

/// `import a b c`: each file whole or not at all, an outcome per file, and a non-zero
/// exit when any failed; the files that read are imported whatever became of the others.
#[test]
fn import_takes_several_files_each_whole() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled_store(dir.path());
    let a = dir.path().join("a.json");
    let b = dir.path().join("b.json");
    ok(&rackbench(
        &db,
        &["export", "arm", "-o", a.to_str().unwrap()],
    ));
    ok(&rackbench(
        &db,
        &["export", "x86", "-o", b.to_str().unwrap()],
    ));
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{\"hello\": 1}").unwrap();
    let db2 = dir.path().join("other.sqlite");
    let files = [&a, &junk, &b].map(|p| p.to_str().unwrap().to_string());
    let mut args = vec!["import"];
    args.extend(files.iter().map(String::as_str));
    let out = rackbench(&db2, &args);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("{}: imported 1 run", files[0])),
        "{err}"
    );
    assert!(
        err.contains(&format!("{}: nothing imported: ", files[1]))
            && err.contains("rackbench export"),
        "{err}"
    );
    assert!(
        err.contains(&format!("{}: imported 1 run", files[2])),
        "{err}"
    );
    assert!(err.contains("1 of 3 files not imported"), "{err}");
    let other = Store::open(&db2).unwrap();
    assert_eq!(other.list_runs().unwrap().len(), 2);
    // Again, as JSON: an outcome per file, and the whole's.
    let mut json_args = args.clone();
    json_args.push("--json");
    let out = rackbench(&db2, &json_args);
    assert_eq!(out.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["imported"], serde_json::json!([]));
    assert_eq!(v["skipped"].as_array().unwrap().len(), 2);
    assert!(v["files"][1]["error"]
        .as_str()
        .unwrap()
        .contains("not a rackbench JSON export"));
}

/// `compare RUN RUN`: the comparison is made, and a note says both sides are one run.
#[test]
fn compare_of_a_run_with_itself_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled_store(dir.path());
    let out = rackbench(&db, &["compare", "arm", "20261120T210703-aaaaaa"]);
    ok(&out);
    let err = stderr(&out);
    assert!(
        err.contains("note: both sides are one run (20261120T210703-aaaaaa)"),
        "{err}"
    );
    let out = rackbench(&db, &["compare", "arm", "x86"]);
    assert!(!stderr(&out).contains("both sides"), "{}", stderr(&out));
}

/// One run is one replication: a run named twice on one side of `compare` (acceptance
/// pass C, 3) made n=4 of one run and a "significant" verdict; it is refused, naming it.
/// Runs with nothing in common (C, 8) exit 2 with nothing on stdout: the whole table, or
/// with `--json` a Comparison object, was printed before the failure.
#[test]
fn compare_refuses_a_run_twice_on_a_side_and_prints_nothing_when_nothing_compares() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled_store(dir.path());
    let out = rackbench(
        &db,
        &["compare", "--a", "arm,20261120T210703-aaaaaa", "--b", "x86"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "`20261120T210703-aaaaaa` names run 20261120T210703-aaaaaa again on the same side: \
             one run is one replication, so name each run once (`rackbench runs` lists them)"
        ),
        "{}",
        stderr(&out)
    );
    assert!(out.stdout.is_empty());
    // Two runs whose results are valid (the fixture's fail), of different workloads.
    let valid = |id: &str, label: &str, workload: &str, test: &str| {
        let mut run = rich_run(id, Some(label), t0(180), 1);
        for r in &mut run.results {
            r.workload = workload.into();
            r.test = test.into();
            r.status = Status::Ok;
            r.flags.clear();
            r.error = None;
        }
        Store::open(&db).unwrap().import_run(&run).unwrap();
    };
    valid("20261120T211003-dddddd", "kv-run", "kv", "get");
    valid("20261120T211103-eeeeee", "crypto-run", "crypto", "rsa2048");
    for json in [false, true] {
        let mut args = vec!["compare", "kv-run", "crypto-run"];
        if json {
            args.push("--json");
        }
        let out = rackbench(&db, &args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{}{}",
            stderr(&out),
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(
            stderr(&out).contains("nothing to compare: the runs share no test point"),
            "{}",
            stderr(&out)
        );
        assert!(
            out.stdout.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

/// A store on a read-only file system (a read-only bind mount in a mount namespace of
/// its own): `runs`, `show`, `export` and `report` read it, and nothing in it changes.
/// Before, opening it switched the journal mode and migrated, and failed.
#[test]
fn read_commands_read_a_store_on_a_read_only_file_system() {
    let unshare_ok = std::process::Command::new("unshare")
        .args(["-m", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !unshare_ok {
        eprintln!("skipped: `unshare -m` is not permitted here (needs root and util-linux)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    let db = filled_store(&ro);
    let before = std::fs::read(&db).unwrap();
    let bin = env!("CARGO_BIN_EXE_rackbench");
    let d = ro.to_str().unwrap();
    let dbs = db.to_str().unwrap();
    let script = format!(
        "mount --bind {d} {d} && mount -o remount,ro,bind {d} && \
         ! touch {d}/probe 2>/dev/null && \
         {bin} --db {dbs} runs && {bin} --db {dbs} show arm && \
         {bin} --db {dbs} export x86 >/dev/null"
    );
    let out = std::process::Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", &script])
        .env_remove("RACKBENCH_DB")
        .output()
        .unwrap();
    let text = ok(&out);
    assert!(text.contains("20261120T210803-bbbbbb"), "{text}");
    assert!(text.contains("label"), "show's header: {text}");
    assert_eq!(
        std::fs::read(&db).unwrap(),
        before,
        "the store is unchanged"
    );
}

/// A run stores the build that made it, as `--version` says it: the version and the git
/// commit (acceptance pass F, 15: every build said "0.1.0", though the agents of two
/// builds refuse each other).
#[test]
fn a_run_stores_the_build_that_made_it() {
    let out = common::bin().arg("--version").output().unwrap();
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let build = version.strip_prefix("rackbench ").unwrap();
    assert!(
        build.starts_with(env!("CARGO_PKG_VERSION"))
            && (build.contains(" (git ") || build.contains("(not built from a git checkout)")),
        "{version}"
    );
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let run = rsa_signs(&db, "1");
    assert_eq!(run["rackbench_version"], build, "{run}");
}

/// A short run of RSA-2048 signs at `threads` into `db`, stored: its record.
fn rsa_signs(db: &Path, threads: &str) -> serde_json::Value {
    let (code, run, err) = common::run_json(
        db,
        &[
            "crypto",
            "--tests",
            "rsa2048",
            "--threads",
            threads,
            "--duration",
            "0.1",
        ],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    run
}

/// Runs that differ only in knobs a test does not read meet at its point: an rsa2048
/// test of a run that also hashed (its buffer sizes given) and one of a run of rsa2048
/// alone are two runs of one point (they were two points, `buffer_sizes` apart, and a
/// side's mean dropped one run without a word).
#[test]
fn compare_meets_tests_at_knobs_they_do_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let alone = rsa_signs(&db, "1");
    let (code, with_sha, err) = common::run_json(
        &db,
        &[
            "crypto",
            "--tests",
            "rsa2048,sha256",
            "--buffer-sizes",
            "16",
            "--threads",
            "1",
            "--duration",
            "0.1",
        ],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    let rsa = with_sha["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["test"] == "rsa2048")
        .unwrap();
    assert!(
        rsa["params"].get("buffer_sizes").is_none()
            && rsa["settings"].get("buffer_sizes").is_none(),
        "{rsa}"
    );
    let sha = with_sha["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["test"] == "sha256")
        .unwrap();
    assert!(sha["params"].get("buffer_sizes").is_some(), "{sha}");
    let id = |r: &serde_json::Value| r["id"].as_str().unwrap().to_string();
    let a = format!("{},{}", id(&alone), id(&with_sha));
    let out = ok(&rackbench(
        &db,
        &["compare", "--a", &a, "--b", &id(&alone), "--json"],
    ));
    let c: serde_json::Value = serde_json::from_str(&out).unwrap();
    let signs: Vec<&serde_json::Value> = c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["metric"] == "signs_per_s")
        .collect();
    assert_eq!(signs.len(), 1, "{out}");
    assert_eq!(signs[0]["point"], "crypto rsa2048", "{out}");
    assert_eq!(signs[0]["a"]["n"], 2, "{out}");
}

/// A TCO of two platforms whose runs were each fixed at another setting (RSA signs with
/// 1 thread on one, 2 on the other) names their tests alike and compares them: it says
/// which setting each ran at, as a report's columns would.
#[test]
fn a_tco_says_its_platforms_settings_where_they_differ() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let mut ids = Vec::new();
    for threads in ["1", "2"] {
        let run = rsa_signs(&db, threads);
        ids.push(run["id"].as_str().unwrap().to_string());
    }
    let platform = |name: &str, id: &str| {
        format!(
            "[[platform]]\nname = \"{name}\"\nrun = \"{id}\"\npower_w = 200\n\
             bom = [{{ name = \"Server\", unit_cost = 5000 }}]\n"
        )
    };
    let plan = dir.path().join("tco.toml");
    std::fs::write(
        &plan,
        format!(
            "years = 3\nenergy_price_per_kwh = 0.10\n[rack]\npower_budget_w = 10000\n\
             rack_units = 40\n{}{}",
            platform("one", &ids[0]),
            platform("two", &ids[1])
        ),
    )
    .unwrap();
    let o = rackbench(&db, &["tco", plan.to_str().unwrap()]);
    let out = ok(&o);
    assert!(
        out.contains("measured at different settings")
            && out.contains("one: threads=1; two: threads=2"),
        "{out}"
    );
}

/// `tco --from FILE` with a plan whose platforms all give their power and performance
/// reads nothing from the file: said, not silently ignored, and the TCO is still made.
#[test]
fn tco_from_a_file_a_plan_needs_nothing_from_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let plan = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tco/examples/seed_redis_tco.toml");
    let file = dir.path().join("runs.json");
    let o = rackbench(
        &dir.path().join("none.sqlite"),
        &[
            "tco",
            plan.to_str().unwrap(),
            "--from",
            file.to_str().unwrap(),
        ],
    );
    let out = ok(&o);
    assert!(out.contains("Qualcomm Centriq 2452"), "{out}");
    let err = stderr(&o);
    assert!(err.contains("--from") && err.contains("not read"), "{err}");
}
