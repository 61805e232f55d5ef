//! The seed's per-CPU table (rows CPU x mpstat column, a column per test, per run and
//! host) on a kv sweep stored the way the runner stores it: figures are the mean of the
//! repetitions, idle CPUs are left out and named, a figure that could not be had is
//! `n/a` with its reason, never 0, wide runs split and many CPUs folded, and everything
//! escaped.

mod common;

use common::{kv_run, Spec};
use model::{CpuUtil, RunRecord, Status};
use rackbench_report::{self as report, cpu_table};

fn line(cpu: i32, usr: f64, sys: f64, irq: f64, soft: f64) -> CpuUtil {
    CpuUtil {
        cpu,
        usr_pct: usr,
        nice_pct: 0.0,
        sys_pct: sys,
        iowait_pct: 0.0,
        irq_pct: irq,
        soft_pct: soft,
        steal_pct: 0.0,
        idle_pct: 100.0 - usr - sys - irq - soft,
    }
}

fn run(instances: &'static [u32]) -> RunRecord {
    kv_run(&Spec {
        reps: 3,
        instances,
        ..Spec::default()
    })
}

fn cell(t: &cpu_table::CpuTable, row: &str, col: &str) -> String {
    let c = t
        .table
        .head
        .iter()
        .position(|h| h == col)
        .unwrap_or_else(|| panic!("column {col} in {:?}", t.table.head));
    t.table
        .row(row)
        .unwrap_or_else(|| panic!("row {row} in {:?}", t.table.rows))[c]
        .clone()
}

#[test]
fn a_row_per_cpu_and_mpstat_column_a_column_per_test() {
    let run = run(&[1, 2, 4]);
    let tables = cpu_table::cpu_tables(std::slice::from_ref(&run));
    assert_eq!(tables.len(), 1, "one host, 12 tests: one table");
    let t = &tables[0];
    assert!(
        t.table
            .caption
            .starts_with("x86-a: per-CPU utilisation on local by test"),
        "{}",
        t.table.caption
    );
    // A column per test (sweep point) of the run, in the order they ran.
    assert_eq!(t.table.head.len(), 1 + 12);
    assert_eq!(t.table.head[1], "set instances=1 pipeline=1");
    assert_eq!(t.table.head[2], "get instances=1 pipeline=1");
    // The seed's rows, in its order, for each CPU; CPU1 also has %iowait, and both
    // %steal (the fixture's), %nice being 0 everywhere is not a row.
    let labels: Vec<&str> = t.table.rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(
        labels,
        [
            "CPU0 %usr",
            "CPU0 %sys",
            "CPU0 %irq",
            "CPU0 %soft",
            "CPU0 %idle",
            "CPU0 %steal",
            "CPU1 %usr",
            "CPU1 %sys",
            "CPU1 %irq",
            "CPU1 %soft",
            "CPU1 %idle",
            "CPU1 %iowait",
            "CPU1 %steal",
            "%CPU used, all 2 CPUs",
        ]
    );
    // CPU0's load follows the instances (busy 60 + 35 * instances/4).
    let busy0 = |inst: f64| 60.0 + 35.0 * (inst / 4.0);
    assert_eq!(
        cell(t, "CPU0 %sys", "set instances=4 pipeline=100"),
        format!("{:.2}", busy0(4.0) * 0.55)
    );
    assert_eq!(
        cell(t, "CPU0 %sys", "get instances=1 pipeline=1"),
        format!("{:.2}", busy0(1.0) * 0.55)
    );
    assert_eq!(cell(t, "CPU1 %soft", "get instances=2 pipeline=1"), "9.00");
    // %CPU used: the CPUs' busy (100 - idle - iowait) added, in % of one CPU.
    let used = (busy0(2.0) * 0.97 + 0.7) + (100.0 - 9.5 - 0.2);
    assert_eq!(
        cell(t, "%CPU used, all 2 CPUs", "set instances=2 pipeline=100"),
        format!("{used:.2}")
    );
    assert_eq!((t.shown, t.cpus), (2, 2));
    // In the HTML's CPU section, open (few CPUs), and in the Markdown.
    let h = report::html(std::slice::from_ref(&run), None);
    assert!(h.contains(r#"<h3 id="cpu-by-test">Per CPU, by test</h3>"#));
    assert!(h.contains("<details open><summary>x86-a: per-CPU utilisation on local by test: 2 of 2 CPUs shown (busy 5% or more in a test)</summary>"), "{h}");
    assert!(h.contains("<td>CPU1 %soft</td>"));
    let m = report::markdown(std::slice::from_ref(&run), None);
    assert!(m.contains("### Per CPU, by test") && m.contains("| CPU1 %soft |"));
}

/// The mean of the repetitions, not the first one's figure nor a median.
#[test]
fn each_figure_is_the_mean_of_the_repetitions() {
    let mut run = run(&[1]);
    for (i, r) in run
        .results
        .iter_mut()
        .filter(|r| r.test == "set" && r.params["pipeline"] == 1)
        .enumerate()
    {
        r.telemetry_summary[0].cpus[2] = line(1, 10.0, 20.0 + 30.0 * i as f64, 0.0, 0.0);
    }
    let t = &cpu_table::cpu_tables(std::slice::from_ref(&run))[0];
    // 20, 50, 80: mean 50 (the median would read the same; the first, 20).
    assert_eq!(cell(t, "CPU1 %sys", "set pipeline=1"), "50.00");
}

/// Idle CPUs are left out and named, the CPUs shown keep their own %CPU used row, and
/// the all-CPU total keeps the idle ones' time; a busy CPU is shown in every column.
#[test]
fn idle_cpus_are_left_out_and_named() {
    let mut run = run(&[1]);
    for r in &mut run.results {
        let ts = &mut r.telemetry_summary[0];
        ts.cpus = vec![
            line(-1, 1.0, 10.0, 0.0, 2.0),
            line(0, 0.1, 0.3, 0.0, 0.0),
            line(1, 0.2, 0.1, 0.0, 0.1),
            line(2, 1.0, 60.0, 0.0, 0.0),
            line(3, 0.0, 0.2, 0.0, 0.0),
            line(4, 0.0, 0.02, 0.0, 0.0),
        ];
        // CPU4 took the NIC's softirq in one test only: shown, and 0 elsewhere is a 0.
        if r.test == "get" && r.params["pipeline"] == 100 {
            ts.cpus[5] = line(4, 0.0, 0.02, 1.5, 98.16);
        }
    }
    let t = &cpu_table::cpu_tables(std::slice::from_ref(&run))[0];
    assert_eq!((t.shown, t.cpus), (2, 5));
    assert!(t.table.row("CPU0 %usr").is_none());
    assert_eq!(cell(t, "CPU4 %soft", "get pipeline=100"), "98.16");
    assert_eq!(cell(t, "CPU4 %soft", "set pipeline=1"), "0.00");
    assert_eq!(
        cell(t, "%CPU used, the 2 CPUs shown", "set pipeline=1"),
        "61.02"
    );
    assert_eq!(cell(t, "%CPU used, all 5 CPUs", "set pipeline=1"), "62.02");
    let note = t
        .table
        .notes
        .iter()
        .find(|n| n.starts_with("Left out"))
        .unwrap_or_else(|| panic!("{:?}", t.table.notes));
    assert!(note.contains("CPU 0-1,3 (3 of 5)"), "{note}");
}

/// What could not be had is `n/a` with its reason, never 0: a test whose repetitions
/// stored no summary of the host, and a CPU with no line in one test.
#[test]
fn missing_figures_read_na_with_why() {
    let mut run = run(&[1]);
    for r in &mut run.results {
        if r.test == "get" && r.params["pipeline"] == 1 {
            r.telemetry_summary.clear();
        }
        if r.test == "set" && r.params["pipeline"] == 100 {
            r.telemetry_summary[0].cpus.retain(|c| c.cpu != 1);
        }
    }
    let t = &cpu_table::cpu_tables(std::slice::from_ref(&run))[0];
    assert_eq!(cell(t, "CPU0 %sys", "get pipeline=1"), "n/a");
    assert_eq!(cell(t, "%CPU used, all 2 CPUs", "get pipeline=1"), "n/a");
    assert_eq!(cell(t, "CPU1 %sys", "set pipeline=100"), "n/a");
    assert_ne!(cell(t, "CPU0 %sys", "set pipeline=100"), "n/a");
    let notes = t.table.notes.join("\n");
    assert!(
        notes.contains("n/a in get pipeline=1: no telemetry from this host was stored with the test's repetitions."),
        "{notes}"
    );
    assert!(
        notes.contains(
            "n/a in set pipeline=100: CPU1 has no line in this host's telemetry of the test"
        ),
        "{notes}"
    );
}

/// A test none of whose repetitions counts keeps its column, marked, as the Host
/// telemetry table keeps its row.
#[test]
fn a_failed_test_is_marked() {
    let mut run = run(&[1]);
    for r in &mut run.results {
        if r.test == "get" && r.params["pipeline"] == 1 {
            r.status = Status::Failed;
        }
    }
    let t = &cpu_table::cpu_tables(std::slice::from_ref(&run))[0];
    assert!(t.table.head.iter().any(|h| h == "get pipeline=1 (failed)"));
    assert!(t
        .table
        .notes
        .iter()
        .any(|n| n.starts_with("A test marked failed")));
}

/// More tests than a page holds are split; more CPUs than a glance holds are folded.
#[test]
fn wide_runs_split_and_many_cpus_fold() {
    let mut run = run(&[1, 2, 4, 8]);
    for r in &mut run.results {
        r.telemetry_summary[0].cpus = (0..16).map(|c| line(c, 20.0, 30.0, 0.0, 5.0)).collect();
    }
    let tables = cpu_table::cpu_tables(std::slice::from_ref(&run));
    assert_eq!(tables.len(), 2);
    assert!(tables[0].table.caption.contains("(tests 1-12 of 16)"));
    assert!(tables[1].table.caption.contains("(tests 13-16 of 16)"));
    assert_eq!(tables[1].table.head.len(), 1 + 4);
    let h = report::html(std::slice::from_ref(&run), None);
    assert!(
        h.contains("<details><summary>x86-a: per-CPU utilisation on local by test (tests 1-12 of 16): 16 of 16 CPUs shown"),
        "folded: 16 CPUs"
    );
}

#[test]
fn host_and_test_names_are_escaped() {
    let mut run = run(&[1]);
    for r in &mut run.results {
        r.telemetry_summary[0].host = "<script>x".into();
        r.test = format!("{}<b>", r.test);
    }
    let h = report::html(std::slice::from_ref(&run), None);
    assert!(h.contains("per-CPU utilisation on &lt;script&gt;x by test"));
    assert!(h.contains("<th>set&lt;b&gt; pipeline=1</th>"), "{h}");
    assert!(!h.contains("<script") && !h.contains("set<b>"));
    let m = cpu_table::cpu_tables_markdown(std::slice::from_ref(&run));
    assert!(!m.contains("<script") && !m.contains("<b>"), "{m}");
}
