//! Rack-level total cost of ownership: pure, no I/O.
//!
//! A [`Plan`] (parsed from TOML) describes one rack (power budget, power reserved for
//! switches, rack units), energy price, PUE, infrastructure cost per watt and a period,
//! and per platform a bill of materials, power under the workload and performance, each
//! given or taken from a stored run ([`from_run`]). [`evaluate`] packs each platform into
//! the rack (the smaller of the power and space limits, and which binds) and gives capex,
//! energy opex, infrastructure, total, performance per rack, perf/$ and perf/W, with the
//! ratio of every platform to the baseline: the Redis study's Table 2.

mod compute;
mod from_run;
mod plan;
mod render;

pub use compute::{
    evaluate, geometric_mean, Binding, CostLine, FromRun, PlatformResult, Row, Sourced, TcoResult,
};
pub use from_run::{from_run, select};
pub use plan::{Bom, BomItem, InfraBasis, NamedFigure, PerfFrom, Plan, Platform, Rack};
pub use render::{
    cells, fmt_difference, fmt_money, fmt_number, fmt_pct_change, fmt_ratio, footnotes, markdown,
    md, md_cell, text,
};
