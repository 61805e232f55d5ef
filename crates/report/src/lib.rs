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
};
pub use derive::{summary, summary_with, Efficiency, PowerBasis, PowerFigure, Summary};
pub use html::{html, html_with};
pub use markdown::{markdown, markdown_with, markdown_with_charts, NO_CHARTS};
pub use selection::Selection;

/// Every chart of the report as standalone SVG files: (file name, SVG text). Charts that
/// could not be drawn (no histograms, no power) are left out; the HTML report says why.
/// The mark every HTML report carries in its head: `rackbench report -o` replaces only a
/// file that has it (or [`COMMENT_MARK`]), never one rackbench did not write.
pub const GENERATOR_META: &str = r#"<meta name="generator" content="rackbench">"#;

/// The mark at the top of a Markdown report and of an SVG chart (a comment, invisible).
pub const COMMENT_MARK: &str = "<!-- generator: rackbench -->";

pub fn svg_charts(runs: &[model::RunRecord]) -> Vec<(String, String)> {
    // The workload-specific views' figures too, named after their titles.
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
    charts::charts(runs)
        .into_iter()
        .chain(views)
        .filter_map(|c| {
            c.svg.map(|s| {
                (
                    c.file,
                    format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{COMMENT_MARK}\n{s}\n"),
                )
            })
        })
        .collect()
}
