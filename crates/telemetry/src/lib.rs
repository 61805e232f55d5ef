//! telemetry: what every host's CPUs, NICs, disks, processes and power sources do while
//! a workload runs, and what the host is (its disclosure).
//!
//! Layout, following the pipeline: [`parse`] holds pure parsers of /proc, /sys and tool
//! output; [`rates`] turns two snapshots into mpstat/iostat-exact rates; [`power`] finds
//! and reads power sources with their provenance; [`sampler`] runs the sampling thread
//! and summarises a step; [`disclosure`] collects and diffs host facts. Output types
//! are `model`'s, so the store and reports never depend on this crate.

pub mod boot_cache;
pub mod disclosure;
pub mod nic_ioctl;
pub mod parse;
pub mod power;
pub mod rates;
pub mod sampler;
pub mod tuning;

pub use power::{
    detect_power, headline_power, HeadlinePower, PowerConfig, PowerDetection, PowerModel,
    PowerSources,
};
pub use sampler::{
    choose_whole, cut_spans, measure_idle, merge_spans, origin, summarize, summarize_with_notes,
    within, within_spans, Cut, HostSpans, Sampler, SamplerConfig, MIN_INTERVAL,
};
