//! Issue 13 item 8, "the report reads at a glance": titles, legends, the disclosure
//! table, power notes, crypto/net/mem views, Markdown chart links and automatic
//! comparisons on reports of many runs.

mod common;

use common::{kv_run, Spec};
use model::RunRecord;
use rackbench_report as report;

/// `n` kv runs of the fixture sweep, labelled `run0`.. with distinct ids and seeds.
fn many_runs(n: usize) -> Vec<RunRecord> {
    (0..n)
        .map(|i| {
            let label: &'static str = Box::leak(format!("run{i}").into_boxed_str());
            let id: &'static str = Box::leak(format!("20261120T23{i:04}-aaaaaa").into_boxed_str());
            kv_run(&Spec {
                label,
                id,
                seed: i as u64 + 1,
                reps: 1,
                ..Spec::default()
            })
        })
        .collect()
}

#[test]
fn title_of_many_runs_is_short() {
    let runs = many_runs(16);
    let h = report::html(&runs, None);
    let title = "rackbench report: 16 runs: run0, run1, \u{2026} (+14 more)";
    assert!(h.contains(&format!("<title>{title}</title>")), "html title");
    assert!(!h.contains("run0 vs run1"));
    let m = report::markdown(&runs, None);
    assert!(m.contains(&format!("# {title}\n")), "markdown title");
    let h = report::html(&runs[..2], None);
    assert!(h.contains("<title>rackbench report: run0 vs run1</title>"));
}
