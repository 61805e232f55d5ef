//! Reports and derived figures: pure functions of stored runs (model types) and an
//! evaluated TCO, so any report can be rebuilt from the store at any time.
//!
//! - [`derive`]: sweep points, power rules, perf/W, CPU and W per unit of throughput,
//!   Table A1 geometric/arithmetic means, extrapolation.
//! - [`selection`]: the seeds' choices for that table (tests, sweep point, baseline,
//!   extrapolated columns).
//! - [`compare`]: A/B differences with Welch confidence intervals, and comparability.
//! - [`html`], [`markdown`], [`svg_charts`]: the report a person would publish.

pub mod charts;
pub mod compare;
pub mod cpu_table;
pub mod derive;
pub mod fmt;
pub mod hosts_view;
mod html;
mod markdown;
pub mod selection;
pub mod stats;
pub mod svg;
pub mod views;

pub use compare::{
    comparability, compare, compare_text, Comparability, CompareRow, Comparison, Difference,
    PointWarnings,
};
pub use derive::{summary, summary_with, Efficiency, PowerBasis, PowerFigure, Summary};
pub use html::{html, html_with};
pub use markdown::{markdown, markdown_with, markdown_with_charts, NO_CHARTS};
pub use selection::Selection;

/// The mark every HTML report carries in its head (part of [`HTML_START`]).
pub const GENERATOR_META: &str = r#"<meta name="generator" content="rackbench">"#;

/// How every HTML report starts, byte for byte, up to its title: `rackbench report -o`
/// replaces an HTML file only when it starts so (and is unedited, see the CLI's output
/// module), never one rackbench did not write.
pub const HTML_START: &str = r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="generator" content="rackbench"><meta name="viewport" content="width=device-width, initial-scale=1"><meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:"><title>"#;

/// The first line of a Markdown report (a comment, invisible).
pub const COMMENT_MARK: &str = "<!-- generator: rackbench -->";

/// How every SVG chart file starts: the XML declaration, then [`COMMENT_MARK`].
pub const SVG_START: &str =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- generator: rackbench -->\n";

/// What a report's footer says it was built from (plain text: each format escapes it):
/// the stored runs, and the runs its TCO section took figures from that are not among
/// them, each run once.
pub(crate) fn sources_text(runs: &[model::RunRecord], tco: Option<&tco::TcoResult>) -> String {
    let mut ids: Vec<&str> = Vec::new();
    for r in runs {
        if !ids.contains(&r.id.as_str()) {
            ids.push(&r.id);
        }
    }
    // The builds that measured them (a run stores its own), not one run's taken for
    // the report's.
    let mut builds: Vec<&str> = Vec::new();
    for r in runs {
        if !builds.contains(&r.rackbench_version.as_str()) {
            builds.push(&r.rackbench_version);
        }
    }
    let mut out = format!(
        "Measured by rackbench {}, from stored runs {}",
        builds.join(", "),
        ids.join(", ")
    );
    let more: Vec<&str> = tco
        .map(|t| t.runs())
        .unwrap_or_default()
        .into_iter()
        .filter(|r| !ids.contains(r))
        .collect();
    if !more.is_empty() {
        out.push_str(&format!(
            "; the TCO section also from {} {}",
            if more.len() == 1 { "run" } else { "runs" },
            more.join(", ")
        ));
    }
    out.push('.');
    out
}

/// Every chart of the report as standalone SVG files: (file name, SVG text). Charts that
/// could not be drawn (no histograms, no power) are left out; the HTML report says why.
pub fn svg_charts(runs: &[model::RunRecord]) -> Vec<(String, String)> {
    svg_charts_with(runs, &Selection::default())
}

/// [`svg_charts`] as the report laid out with `sel` draws them ([`charts::charts_with`]).
pub fn svg_charts_with(runs: &[model::RunRecord], sel: &Selection) -> Vec<(String, String)> {
    // The workload-specific views' figures too, named after their titles. They go through
    // the same de-duplication as the other charts: two mem runs labelled `Arm 1` and
    // `arm-1` both titled a figure `view_arm_1_memory_latency_vs_working_set.svg`, the
    // second written over the first and the file listed twice.
    let views = charts::workloads(runs).into_iter().flat_map(|wl| {
        let wruns = charts::only_workload(runs, &wl);
        views::views(&wruns, &wl)
            .into_iter()
            .flat_map(|v| v.figures)
            .map(|(title, svg)| charts::Chart {
                file: format!("view_{}.svg", charts::slug(&title)),
                title,
                section: "view".into(),
                workload: String::new(),
                svg: Some(svg),
                note: None,
            })
            .collect::<Vec<_>>()
    });
    let mut all: Vec<charts::Chart> = charts::charts_with(runs, sel)
        .into_iter()
        .chain(views)
        .collect();
    charts::unique_files(&mut all);
    all.into_iter()
        .filter_map(|c| c.svg.map(|s| (c.file, format!("{SVG_START}{s}\n"))))
        .collect()
}

#[cfg(test)]
mod marks {
    use super::*;

    #[test]
    fn the_starts_carry_the_marks() {
        assert!(HTML_START.contains(GENERATOR_META));
        assert!(SVG_START.ends_with(&format!("\n{COMMENT_MARK}\n")));
    }
}
