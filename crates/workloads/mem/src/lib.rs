//! The `mem` workload: load latency by working-set size (random pointer chase, ns and
//! cycles, plateaus named L1/L2/L3/RAM beside the cache sizes sysfs reports) and
//! STREAM-like bandwidth with one thread and all threads, as the lmbench table of
//! seeds/001 reports them (METHODS.md 6).
//!
//! - [`chase`]: the chain, the timed chase, the core clock (dependent adds).
//! - [`plateau`]: the pure curve reader.
//! - [`bw`]: bandwidth kernels.
//!
//! The machine measured is the system under test and there is no server. [`service`]
//! resolves the sweep point on the system under test (sizes from its caches and
//! memory, `all` threads from its CPUs) and reports its caches; [`driver`] runs each
//! whole test there. The controller ([`MemWorkload`]) sends every test, as one job with
//! the resolved point, to the system under test's host (in this process when the
//! context has no hosts).

pub mod bw;
pub mod chase;
pub mod driver;
pub mod plateau;
pub mod service;

/// Tests that measure the machine take turns: two at once would each see half of it.
#[cfg(test)]
static REAL_RUN: std::sync::Mutex<()> = std::sync::Mutex::new(());

use std::collections::BTreeMap;

use anyhow::{bail, Context};
use clap::Args;
use std::sync::atomic::Ordering;

use engine::host::{StepCheckpoints, SutService};
use engine::workload::{CpuList, CpuRole, Params, Progress};
use engine::{Ctx, StepOutput, Workload};
use model::{Fact, Flag, Metric, MissingMetric};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `rackbench run mem` flags. Ids are the parameter keys.
#[derive(Args, Debug)]
pub struct Flags {
    /// Tests: latency, bandwidth.
    #[arg(short = 't', long = "tests", id = "tests", value_name = "LIST")]
    pub tests: Option<String>,
    /// Working-set sizes for latency (`4K,64K,1M,256M`); default: 4 per octave from
    /// --min-size to --max-size.
    #[arg(long = "sizes", id = "sizes", value_name = "LIST")]
    pub sizes: Option<String>,
    /// Smallest working set (default 4K).
    #[arg(long = "min-size", id = "min_size", value_name = "BYTES")]
    pub min_size: Option<String>,
    /// Largest working set, the last one measured (default: 4x the last-level cache, at
    /// least 256M, at most a quarter of the available memory, with a warning then).
    #[arg(long = "max-size", id = "max_size", value_name = "BYTES")]
    pub max_size: Option<String>,
    /// Milliseconds of CPU time per latency sample (default 10).
    #[arg(long = "sample-ms", id = "sample_ms", value_name = "MS")]
    pub sample_ms: Option<String>,
    /// Latency samples per size (default 7; the minimum is kept, as lmbench does).
    #[arg(long = "samples", id = "samples", value_name = "N")]
    pub samples: Option<String>,
    /// CPU to run the latency chase on (default: the CPU it starts on, pinned there so
    /// that its memory, touched first there, stays on that CPU's node).
    #[arg(long = "cpu", id = "cpu", value_name = "N")]
    pub cpu: Option<String>,
    /// Bytes per bandwidth array (default: 4x the last-level cache, at least 64M).
    #[arg(long = "bw-size", id = "bw_size", value_name = "BYTES")]
    pub bw_size: Option<String>,
    /// Bandwidth thread counts (`1,all`).
    #[arg(long = "bw-threads", id = "bw_threads", value_name = "LIST")]
    pub bw_threads: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default = "default_tests")]
    pub tests: Vec<String>,
    #[serde(default)]
    pub sizes: Vec<Value>,
    #[serde(default)]
    pub min_size: Option<Value>,
    #[serde(default)]
    pub max_size: Option<Value>,
    #[serde(default = "ten")]
    pub sample_ms: f64,
    #[serde(default = "seven")]
    pub samples: usize,
    #[serde(default)]
    pub cpu: Option<usize>,
    #[serde(default)]
    pub bw_size: Option<Value>,
    #[serde(default = "default_bw_threads")]
    pub bw_threads: Vec<Value>,
}

fn default_tests() -> Vec<String> {
    vec!["latency".into(), "bandwidth".into()]
}
fn ten() -> f64 {
    10.0
}
fn seven() -> usize {
    7
}
fn default_bw_threads() -> Vec<Value> {
    vec![Value::from(1), Value::from("all")]
}

/// Registry entry for `mem`.
pub fn registration() -> engine::Registration {
    engine::Registration {
        name: "mem",
        about: "Memory load latency by working-set size (L1/L2/L3/RAM, ns and cycles) and STREAM-like bandwidth",
        list_keys: &["tests", "sizes", "bw_threads"],
        text_keys: &[],
        flags: |c| Flags::augment_args(c),
        build: |m| Ok(Box::new(MemWorkload::from_params(m)?)),
        service: Some(service::start_service),
        has_server: false,
        driver: Some(driver::drive),
        programs: engine::no_programs,
        lengthen: "more --samples, or a larger --sample-ms",
    }
}

/// A size as typed: `4096`, `4K`, `256M`, `1G` (binary units).
pub fn parse_size(key: &str, v: &Value) -> anyhow::Result<u64> {
    let s = match v {
        Value::Number(n) => {
            return n
                .as_u64()
                .with_context(|| format!("mem: `{key}` = {n} is not a byte count"))
        }
        Value::String(s) => s.trim().to_string(),
        other => bail!("mem: `{key}` = {other} is not a size (e.g. 4K, 256M)"),
    };
    let (num, mult) = match s.chars().last() {
        Some('K' | 'k') => (&s[..s.len() - 1], 1u64 << 10),
        Some('M' | 'm') => (&s[..s.len() - 1], 1 << 20),
        Some('G' | 'g') => (&s[..s.len() - 1], 1 << 30),
        _ => (s.as_str(), 1),
    };
    let n: f64 = num
        .trim()
        .parse()
        .with_context(|| format!("mem: `{key}` = `{s}` is not a size (e.g. 4K, 256M)"))?;
    if !(n.is_finite() && n > 0.0) {
        bail!("mem: `{key}` = `{s}` must be positive");
    }
    Ok((n * mult as f64) as u64)
}

/// Sizes from `min` to `max`, `per_octave` points per doubling, rounded to cache lines,
/// the last one `max` (rounded down to a line).
pub fn size_ladder(min: u64, max: u64, per_octave: u32) -> Vec<u64> {
    let mut out = Vec::new();
    let mut k = 0u32;
    loop {
        let s = (min as f64 * 2f64.powf(k as f64 / per_octave as f64)) as u64;
        let s = (s / 64).max(2) * 64;
        if s > max {
            break;
        }
        if out.last() != Some(&s) {
            out.push(s);
        }
        k += 1;
        if k > 10_000 {
            break;
        }
    }
    // The ladder ends at `max` itself: the default max is 4x the last-level cache, and a
    // ladder stopping at the step below it (1 GiB for a 1.17 GiB max) measured memory at
    // only 3.4x the LLC.
    let top = (max / 64) * 64;
    if out.last().is_some_and(|&l| l < top) {
        out.push(top);
    }
    out
}

fn read_caches() -> Vec<plateau::CacheLevel> {
    let mut entries = Vec::new();
    for i in 0..8 {
        let d = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
        let rd = |f: &str| std::fs::read_to_string(format!("{d}/{f}")).ok();
        if let (Some(l), Some(t), Some(s)) = (rd("level"), rd("type"), rd("size")) {
            entries.push((l, t, s));
        }
    }
    plateau::caches_from_sysfs(&entries)
}

/// The whole machine's last-level cache (every instance of it), for the bandwidth arrays.
fn read_llc_total() -> Option<u64> {
    let mut entries = Vec::new();
    let cpus = std::fs::read_dir("/sys/devices/system/cpu").ok()?;
    for cpu in cpus.flatten() {
        let name = cpu.file_name();
        let name = name.to_string_lossy();
        if !name
            .strip_prefix("cpu")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        {
            continue;
        }
        for i in 0..8 {
            let d = cpu.path().join(format!("cache/index{i}"));
            let rd = |f: &str| std::fs::read_to_string(d.join(f)).ok();
            if let (Some(l), Some(t), Some(s), Some(sh)) =
                (rd("level"), rd("type"), rd("size"), rd("shared_cpu_list"))
            {
                entries.push((l, t, s, sh));
            }
        }
    }
    plateau::llc_total_from_sysfs(&entries)
}

fn mem_available() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: u64 = s
        .lines()
        .find(|l| l.starts_with("MemAvailable:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// Why a cache level's (or, at `level` 3, memory's) latency plateau is missing. A curve
/// the test was stopped in the middle of did not reach the sizes that would show it:
/// that is the reason, not a --max-size too small. Memory's plateau (3 sizes in a row
/// within 20%, all at or above the last cache level a curve names, [`plateau::last_level`]
/// of `caches`) is missing either because too few sizes were measured there (the advice:
/// more of them, up to 4x the largest cache, an L4 too, as the default sizes go, and at
/// most half of `avail`, the memory available, as a run takes) or because the latency
/// kept changing over them (the advice would be wrong: 256 MiB-4 GiB on a VM went from
/// 134 to 315 ns, TLB misses growing with the working set); that says what it did.
fn missing_level_reason(
    level: usize,
    curve: Curve,
    pts: &[(u64, f64)],
    caches: &[plateau::CacheLevel],
    avail: u64,
) -> String {
    let llc = plateau::last_level(caches).map(|c| c.size_bytes);
    // The last-level cache is one of them: at least as large.
    let largest = caches
        .iter()
        .map(|c| c.size_bytes)
        .max()
        .unwrap_or_default();
    let upto = pts
        .last()
        .map_or("before any size was measured".to_string(), |p| {
            format!("after sizes up to {} bytes", p.0)
        });
    match (curve, level, llc) {
        (Curve::Stopped, _, _) => format!(
            "the test was stopped {upto}, before its curve could show this level: run it \
             again to its end"
        ),
        (Curve::SoFar, _, _) => format!(
            "this result is a checkpoint taken {upto}, while the test ran, before its curve \
             could show this level"
        ),
        (Curve::Whole, 3, Some(llc)) => {
            let beyond: Vec<&(u64, f64)> = pts.iter().filter(|p| p.0 >= llc).collect();
            match (beyond.first(), beyond.last()) {
                (Some(a), Some(b)) if beyond.len() >= 3 => format!(
                    "no plateau beyond the last-level cache ({llc} B): the latency did not \
                     hold within 20% over 3 sizes in a row there, going from {:.1} ns at {} B \
                     to {:.1} ns at {} B; no one figure is memory's latency (see latency_ns \
                     by size)",
                    a.1, a.0, b.1, b.0
                ),
                _ => format!(
                    "{} size(s) measured at or beyond the last-level cache ({llc} B), and a \
                     memory plateau needs 3: measure more sizes above it (--max-size, e.g. \
                     {} for 4x the largest cache, at most half the available memory, or \
                     --sizes)",
                    beyond.len(),
                    (4 * largest).min(avail / 2)
                ),
            }
        }
        (Curve::Whole, 3, None) => {
            "no plateau beyond the last plateau of the curve (sysfs lists no \
                             cache sizes): measure larger sizes (--max-size or --sizes)"
                .into()
        }
        (Curve::Whole, _, _) => "no plateau found for this level in the measured curve".into(),
    }
}

/// A flag when memory's latency was read from a plateau that the curve rises past: the
/// figure is the flat stretch's, and larger working sets took longer.
fn ram_rising(ram: &plateau::Plateau, pts: &[(u64, f64)]) -> Option<Flag> {
    let (size, ns) = pts
        .iter()
        .filter(|p| p.0 > ram.to_bytes)
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    (*ns > ram.latency_ns * 1.2).then(|| {
        Flag::warning(
            "ram_latency_rising",
            format!(
                "memory's latency {:.1} ns is the plateau from {} to {} B; past it the \
                 latency rose to {ns:.1} ns at {size} B (TLB reach running out, or another \
                 process): larger working sets took longer",
                ram.latency_ns, ram.from_bytes, ram.to_bytes
            ),
        )
    })
}

/// How far a latency curve went.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Curve {
    /// Every size was measured.
    Whole,
    /// A stop ended the test before its last size.
    Stopped,
    /// A checkpoint's: the sizes measured by then, the test going on.
    SoFar,
}

/// What the latency chase measured: the points, the clock, how far the curve went, the
/// CPU it ran on, and its buffer's share in huge pages.
struct Chased {
    pts: Vec<(u64, f64)>,
    freq: Option<chase::Freq>,
    curve: Curve,
    on: Option<usize>,
    huge: HugeShare,
}

/// The chase buffer's share in huge pages (or why there is none), and the bytes of it
/// the test touched.
type HugeShare = (Result<f64, String>, u64);

/// The chase's buffer's share in huge pages (`pct`, of its `largest` working set
/// measured, or why there is none), kept as `huge_pages_pct`; under 90% of a buffer of
/// one huge page or more, a warning: the working sets over small pages have TLB misses
/// in their latency (an L2 plateau reads 30% high where its lines spread over more small
/// pages than the first-level TLB holds).
fn huge_pages(out: &mut StepOutput, pct: Result<f64, String>, largest: u64) {
    match pct {
        Ok(p) => {
            out.metrics.push(Metric::new("huge_pages_pct", p, "%"));
            // Where a huge page is larger than the buffer (512 MiB with 64K base pages),
            // none is to be had, and the base pages are large already.
            if p < 90.0 && largest >= chase::huge_page_bytes() as u64 {
                out.flags.push(Flag::warning(
                    "small_pages",
                    format!(
                        "{p:.0}% of the chase's buffer was in huge pages (transparent huge \
                         pages off or unavailable: see mem.transparent_hugepage): the \
                         latencies include TLB misses the cache plateaus would not have"
                    ),
                ));
            }
        }
        Err(reason) => out.missing.push(MissingMetric {
            name: "huge_pages_pct".into(),
            reason,
        }),
    }
}

/// Where the latency sizes come from, before a machine is known.
#[derive(Debug, Clone)]
enum SizesPlan {
    /// `--sizes`, sorted and deduplicated.
    Given(Vec<u64>),
    /// A ladder from `min`; to `max`, or to 4x the last-level cache capped by memory.
    Ladder { min: u64, max: Option<u64> },
}

/// The validated knobs of one sweep point, read without looking at any machine: the
/// controller checks them when the point is built, the system under test resolves them
/// against its own caches and memory ([`MemBench::resolve`]).
#[derive(Debug, Clone)]
pub struct Plan {
    pub cfg: Config,
    pub tests: Vec<String>,
    sizes: SizesPlan,
    bw_bytes: Option<u64>,
    /// Thread counts; None: `all` (the CPUs of the host it runs on).
    bw_threads: Vec<Option<usize>>,
}

impl Plan {
    pub fn from_params(m: &serde_json::Map<String, Value>) -> anyhow::Result<Plan> {
        let cfg: Config = engine::plan::config_from_params("mem", m)?;
        let mut tests = Vec::new();
        for t in &cfg.tests {
            match t.trim() {
                "latency" | "bandwidth" => tests.push(t.trim().to_string()),
                "" => {}
                other => bail!("mem: unknown test `{other}`: choose latency, bandwidth"),
            }
        }
        if tests.is_empty() {
            bail!("mem: no tests selected (e.g. --tests latency,bandwidth)");
        }
        check_sampling(cfg.sample_ms, cfg.samples)?;
        // Settings of a test not asked: the run would stand as measured with them.
        let given = [
            (!cfg.sizes.is_empty(), "--sizes", "latency"),
            (cfg.min_size.is_some(), "--min-size", "latency"),
            (cfg.max_size.is_some(), "--max-size", "latency"),
            (cfg.cpu.is_some(), "--cpu", "latency"),
            (cfg.bw_size.is_some(), "--bw-size", "bandwidth"),
            (
                cfg.bw_threads != default_bw_threads(),
                "--bw-threads",
                "bandwidth",
            ),
        ];
        if let Some((_, flag, test)) = given
            .iter()
            .find(|(given, _, test)| *given && !tests.iter().any(|t| t == test))
        {
            bail!(
                "mem: {flag} is a setting of the {test} test, and the tests asked are {}; add \
                 {test} to --tests, or leave {flag} out",
                tests.join(",")
            );
        }
        // --sizes names every size: a --max-size beside it went unread and was stored
        // as a setting the run never had.
        let bounds = [("--min-size", &cfg.min_size), ("--max-size", &cfg.max_size)];
        if let Some((flag, _)) = bounds
            .iter()
            .find(|(_, v)| v.is_some() && !cfg.sizes.is_empty())
        {
            bail!(
                "mem: --sizes names every size measured: leave out {flag}, or give \
                 --min-size/--max-size without --sizes"
            );
        }
        let sizes = if cfg.sizes.is_empty() {
            let min = match &cfg.min_size {
                Some(v) => parse_size("min_size", v)?,
                None => 4 << 10,
            };
            let max = match &cfg.max_size {
                Some(v) => Some(parse_size("max_size", v)?),
                None => None,
            };
            check_min_max(min, max.unwrap_or(min))?;
            SizesPlan::Ladder { min, max }
        } else {
            let mut v = cfg
                .sizes
                .iter()
                .map(|s| parse_size("sizes", s))
                .collect::<anyhow::Result<Vec<u64>>>()?;
            // `--sizes 4K,4096` measured one size, and stored the list as given.
            engine::plan::refuse_repeats("--sizes", &v)?;
            v.sort_unstable();
            check_sizes(&v)?;
            SizesPlan::Given(v)
        };
        let bw_bytes = match &cfg.bw_size {
            Some(v) => {
                let b = parse_size("bw_size", v)?;
                check_bw_elems((b / 8) as usize)?;
                Some(b)
            }
            None => None,
        };
        let mut bw_threads = Vec::new();
        for v in &cfg.bw_threads {
            match v {
                Value::String(s) if s == "all" => bw_threads.push(None),
                Value::Number(n) if n.as_u64().is_some_and(|n| (1..=4096).contains(&n)) => {
                    bw_threads.push(n.as_u64().map(|n| n as usize))
                }
                other => bail!("mem: `bw_threads` entries are thread counts or `all`, not {other}"),
            }
        }
        let counts: Vec<String> = bw_threads
            .iter()
            .map(|t| t.map_or_else(|| "all".to_string(), |n| n.to_string()))
            .collect();
        engine::plan::refuse_repeats("--bw-threads", &counts)?;
        Ok(Plan {
            cfg,
            tests,
            sizes,
            bw_bytes,
            bw_threads,
        })
    }
}

fn check_sampling(sample_ms: f64, samples: usize) -> anyhow::Result<()> {
    if !(sample_ms > 0.0 && sample_ms <= 10_000.0) || samples == 0 || samples > 1000 {
        bail!("mem: `sample_ms` must be in (0, 10000] and `samples` in 1..=1000");
    }
    Ok(())
}

fn check_min_max(min: u64, max: u64) -> anyhow::Result<()> {
    if max < min {
        bail!("mem: `max_size` is below `min_size`");
    }
    Ok(())
}

fn check_sizes(sizes: &[u64]) -> anyhow::Result<()> {
    if sizes.iter().any(|&s| s < 128) {
        bail!("mem: working sets must be at least 128 B");
    }
    Ok(())
}

fn check_bw_elems(elems: usize) -> anyhow::Result<()> {
    if elems < 1024 {
        bail!("mem: `bw_size` must be at least 8K");
    }
    Ok(())
}

/// A test cut short by a stop (Ctrl-C, SIGTERM, the run's cancel) is not a failure: no
/// error (the runner stores it as interrupted, what was measured kept), a warning saying so.
fn stopped_early(out: &mut StepOutput) {
    out.flags.push(Flag::warning(
        "stopped_early",
        "the test stopped early: interrupted",
    ));
}

/// Label the test under way, keeping a stop asked for before it began (the host's
/// interrupt may reach the job before the test starts).
fn begin(progress: &Progress, label: &str, total: u64) {
    let cancelled = progress.cancel.load(Ordering::Relaxed);
    progress.reset(label, total, 0);
    if cancelled {
        progress.cancel.store(true, Ordering::Relaxed);
    }
}

/// A sweep point resolved against the machine it measures (its caches, its available
/// memory, its CPUs): exactly what the tests run. The service resolves it once on the
/// system under test when the point starts, and every driver job carries it, so the
/// tests and repetitions of a point all measure the same sizes.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemBench {
    pub sizes: Vec<u64>,
    pub sample_ms: f64,
    pub samples: usize,
    pub cpu: Option<usize>,
    pub bw_elems: usize,
    pub bw_threads: Vec<usize>,
    pub caches: Vec<plateau::CacheLevel>,
    /// Every instance of the last-level cache together, when sysfs lists them.
    #[serde(default)]
    pub llc_total_bytes: Option<u64>,
    /// Warnings about the resolution (working sets capped by memory), on the latency
    /// result.
    pub notes: Vec<Flag>,
    /// The same for the bandwidth result (arrays capped by memory).
    #[serde(default)]
    pub bw_notes: Vec<Flag>,
}

impl MemBench {
    /// Resolve a sweep point's parameters on this machine.
    pub fn from_params(m: &serde_json::Map<String, Value>) -> anyhow::Result<Self> {
        Self::resolve(&Plan::from_params(m)?)
    }

    /// Resolve `plan` against this machine's caches, memory and CPUs.
    pub fn resolve(plan: &Plan) -> anyhow::Result<Self> {
        let caches = read_caches();
        let llc = caches.last().map_or(32 << 20, |c| c.size_bytes);
        let avail = mem_available().unwrap_or(4 << 30);
        let mut notes = Vec::new();
        let sizes = match &plan.sizes {
            SizesPlan::Given(v) => v.clone(),
            SizesPlan::Ladder { min, max } => {
                let max = match max {
                    Some(m) => *m,
                    None => {
                        let want = (4 * llc).max(256 << 20);
                        let cap = avail / 4;
                        if want > cap {
                            notes.push(Flag::warning(
                                "max_size_capped",
                                format!("working sets capped at {cap} B (a quarter of available memory), below 4x the LLC ({want} B): memory's latency is read from smaller working sets"),
                            ));
                        }
                        want.min(cap)
                    }
                };
                check_min_max(*min, max)?;
                size_ladder((*min).max(128), max, 4)
            }
        };
        if let Some(&big) = sizes.last() {
            if big > avail / 2 {
                bail!("mem: working set {big} B is more than half the available memory ({avail} B); lower --max-size");
            }
        }
        check_sizes(&sizes)?;
        // Every thread streams the arrays: they are sized against every LLC instance.
        let llc_total_bytes = read_llc_total();
        let mut bw_notes = Vec::new();
        let bw_bytes = plan.bw_bytes.unwrap_or_else(|| {
            let want = (4 * llc_total_bytes.unwrap_or(llc).max(llc)).max(64 << 20);
            let cap = avail / 8;
            if want > cap {
                // Below STREAM's rule of 4x the caches, a cache that keeps part of a
                // stream lifts the figures; under 2x, `bandwidth_in_cache` says more.
                bw_notes.push(Flag::warning(
                    "bw_size_capped",
                    format!(
                        "arrays capped at {cap} B each (an eighth of available memory), \
                         below 4x the last-level caches ({want} B, STREAM's rule): the caches \
                         may hold part of each stream"
                    ),
                ));
            }
            want.min(cap)
        });
        let bw_elems = (bw_bytes / 8) as usize;
        check_bw_elems(bw_elems)?;
        // The three arrays are allocated at once: `--bw-size 20G` on a 24 GiB host had the
        // kernel kill rackbench and empty the host's page cache (acceptance pass J, 7).
        if bw_bytes.saturating_mul(3) > avail / 2 {
            bail!(
                "mem: --bw-size {bw_bytes} B makes three arrays of {} B, more than half the \
                 available memory ({avail} B): give at most {} B",
                bw_bytes.saturating_mul(3),
                avail / 6
            );
        }
        let all = engine::launch::online_cpus();
        let mut bw_threads: Vec<usize> = plan.bw_threads.iter().map(|t| t.unwrap_or(all)).collect();
        // Sorted before the duplicates go: `all,1,4` on 4 CPUs ran 4 threads twice, two
        // figures of one label in one result.
        bw_threads.sort_unstable();
        bw_threads.dedup();
        Ok(MemBench {
            sizes,
            sample_ms: plan.cfg.sample_ms,
            samples: plan.cfg.samples,
            cpu: plan.cfg.cpu,
            bw_elems,
            bw_threads,
            caches,
            llc_total_bytes,
            notes,
            bw_notes,
        })
    }

    /// Read one back from a driver job's parameters, refusing what the tests cannot run.
    pub fn from_job(p: &serde_json::Map<String, Value>) -> anyhow::Result<Self> {
        let b: MemBench = serde_json::from_value(Value::Object(p.clone()))
            .context("mem: the driver job is not a resolved sweep point (is the same rackbench version on every host?)")?;
        check_sampling(b.sample_ms, b.samples)?;
        check_sizes(&b.sizes)?;
        check_bw_elems(b.bw_elems)?;
        if b.bw_threads.iter().any(|&t| t == 0 || t > 1 << 16) {
            bail!("mem: bandwidth thread counts must be 1 to 65536");
        }
        Ok(b)
    }

    pub fn sizes(&self) -> &[u64] {
        &self.sizes
    }

    /// Run one test here.
    pub fn run(&self, test: &str, progress: &Progress) -> anyhow::Result<StepOutput> {
        match test {
            "latency" => self.run_latency(progress),
            "bandwidth" => self.run_bandwidth(progress),
            other => bail!("mem: unknown test `{other}`"),
        }
    }

    /// What the disclosure says about this machine's memory and our method.
    pub fn facts(&self) -> BTreeMap<String, Fact> {
        let mut m = BTreeMap::new();
        for c in &self.caches {
            m.insert(
                format!("cpu.cache.l{}_bytes", c.level),
                Fact::known(c.size_bytes.to_string()),
            );
        }
        m.insert(
            "cpu.cache.llc_total_bytes".into(),
            match self.llc_total_bytes {
                Some(b) => Fact::known(b.to_string()),
                None => Fact::unknown("sysfs lists no cache with its shared_cpu_list"),
            },
        );
        let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .map(|s| Fact::known(s.trim()))
            .unwrap_or_else(|e| Fact::unknown(e.to_string()));
        m.insert("mem.transparent_hugepage".into(), thp);
        m.insert(
            "mem.method".into(),
            Fact::known("random cyclic chase over 64 B lines (Sattolo), MADV_HUGEPAGE, min of samples; STREAM-like kernels, each pass timed from the first thread's start to the last thread's end; a figure above threads x the 1-thread figure (or the DIMMs' peak) is flagged invalid"),
        );
        m
    }

    /// The latency curve: every size of the ladder in turn, pinned to one CPU. Where
    /// checkpoints are wanted ([`StepCheckpoints`]), one is handed between sizes when due:
    /// the curve of the sizes measured by then.
    fn run_latency(&self, progress: &Progress) -> anyhow::Result<StepOutput> {
        let sizes = &self.sizes;
        let sample_s = self.sample_ms / 1e3;
        let samples = self.samples;
        let cpu = self.cpu;
        begin(progress, "mem latency", sizes.len() as u64);
        let (wall0, t0) = (std::time::SystemTime::now(), std::time::Instant::now());
        // A thread of its own, so pinning does not change the runner's affinity.
        let chased = std::thread::scope(|s| {
            s.spawn(|| -> anyhow::Result<Chased> {
                // Pinned, asked or not: a thread that moved between sockets would time
                // its memory (touched first where it began) locally at some sizes and
                // from the other node at others, one curve of two latencies.
                // SAFETY: sched_getcpu takes nothing and returns a CPU or -1.
                let here = usize::try_from(unsafe { libc::sched_getcpu() }).ok();
                let on = match (cpu, here) {
                    (Some(c), _) => {
                        engine::launch::pin_current_thread(&[c])?;
                        Some(c)
                    }
                    // Not asked for: where it cannot be pinned it runs as it is.
                    (None, Some(c)) => engine::launch::pin_current_thread(&[c]).ok().map(|_| c),
                    (None, None) => None,
                };
                let freq = chase::measure_frequency();
                let max = sizes.last().copied().unwrap_or(0) as usize;
                let mut region = chase::Region::new(max.max(4096))?;
                // The share of the largest working set measured (what of the buffer
                // was touched: a test stopped early touched less than the ladder's
                // top, and its 2 MiB in huge pages read 0.8% of 256 MiB) the kernel
                // backs with huge pages.
                let huge_pct = |r: &chase::Region, pts: &[(u64, f64)]| {
                    let touched = pts.last().map_or(0, |p| p.0);
                    if touched == 0 {
                        return (
                            Err("the test stopped before it measured a working set".to_string()),
                            0,
                        );
                    }
                    let pct = r
                        .huge_bytes()
                        .map(|b| (100.0 * b as f64 / touched as f64).min(100.0))
                        .ok_or_else(|| {
                            "/proc/self/smaps did not list the chase's buffer".to_string()
                        });
                    (pct, touched)
                };
                let checkpoints = StepCheckpoints::of(progress);
                let mut pts = Vec::new();
                let mut curve = Curve::Whole;
                for (i, &s) in sizes.iter().enumerate() {
                    if progress.stopping() {
                        curve = Curve::Stopped;
                        break;
                    }
                    let ns = chase::latency_ns(
                        &mut region,
                        s as usize,
                        sample_s,
                        samples,
                        0x5eed + i as u64,
                    )?;
                    pts.push((s, ns));
                    progress.done.store(i as u64 + 1, Ordering::Relaxed);
                    // None after the last size: the test's result follows at once.
                    let more = i + 1 < sizes.len();
                    if let Some(c) = checkpoints.as_ref().filter(|c| more && c.due()) {
                        let so_far = Chased {
                            pts: pts.clone(),
                            freq: freq.clone(),
                            curve: Curve::SoFar,
                            on,
                            huge: huge_pct(&region, &pts),
                        };
                        let mut out = self.latency_step(so_far, wall0, t0.elapsed());
                        out.flags.push(engine::spread::checkpoint_flag_of(
                            "latency",
                            out.duration_s,
                            &format!(" ({} of {} sizes measured)", pts.len(), sizes.len()),
                        ));
                        c.hand(out);
                    }
                }
                let huge = huge_pct(&region, &pts);
                Ok(Chased {
                    pts,
                    freq,
                    curve,
                    on,
                    huge,
                })
            })
            .join()
        })
        .map_err(|_| anyhow::anyhow!("mem: the latency thread panicked"))??;
        Ok(self.latency_step(chased, wall0, t0.elapsed()))
    }

    /// The latency test's result of what the chase measured, `took` from `wall0`: at its
    /// end, or at a checkpoint while it ran.
    fn latency_step(
        &self,
        chased: Chased,
        wall0: std::time::SystemTime,
        took: std::time::Duration,
    ) -> StepOutput {
        let Chased {
            pts,
            freq,
            curve,
            on,
            huge: (huge, touched),
        } = chased;
        let mut out = StepOutput {
            headline: "ram_latency_ns".into(),
            ..Default::default()
        };
        out.flags.extend(self.notes.iter().cloned());
        huge_pages(&mut out, huge, touched);
        if let Some(c) = on {
            out.metrics
                .push(Metric::new("latency_cpu", c as f64, "cpu"));
        }
        out.duration_s = took.as_secs_f64();
        out.measured = vec![(wall0, wall0 + took)];
        if curve == Curve::Stopped {
            stopped_early(&mut out);
        }
        let freq_label = freq.as_ref().map_or("none", |f| f.source);
        match &freq {
            Some(f) => out.metrics.push(
                Metric::new("core_freq_mhz", f.hz / 1e6, "MHz").label("freq_source", f.source),
            ),
            None => out.missing.push(MissingMetric {
                name: "core_freq_mhz".into(),
                reason: "no dependent-add timing, cpufreq or /proc/cpuinfo frequency".into(),
            }),
        }
        for &(s, ns) in &pts {
            out.metrics
                .push(Metric::new("latency_ns", ns, "ns").label("size_bytes", s));
            if let Some(f) = &freq {
                out.metrics.push(
                    Metric::new("latency_cycles", ns * f.hz / 1e9, "cycles")
                        .label("size_bytes", s)
                        .label("freq_source", freq_label),
                );
            }
        }
        let mut levels = plateau::levels_of(&pts, &self.caches);
        // A curve cut short (a checkpoint's, a stopped test's) ends where it was cut, not
        // in memory: its last plateau is memory's only where it starts at or beyond the
        // last-level cache. With no caches known it was L2's ~4 ns stored as RAM's.
        let from_llc_on = |c: &plateau::CacheLevel| {
            levels.levels[3]
                .as_ref()
                .is_some_and(|r| r.from_bytes >= c.size_bytes)
        };
        if curve != Curve::Whole && !plateau::last_level(&self.caches).is_some_and(from_llc_on) {
            levels.levels[3] = None;
        }
        if let Some(f) = levels.levels[3].as_ref().and_then(|r| ram_rising(r, &pts)) {
            out.flags.push(f);
        }
        for p in &levels.unnamed {
            // What it is instead: memory's, from the last cache's size on, where memory's
            // plateau was read from its sizes there ([`plateau::levels_of`]).
            let what = levels.levels[3]
                .as_ref()
                .filter(|r| r.from_bytes > p.from_bytes && r.from_bytes <= p.to_bytes)
                .map_or(
                    "it is no cache level's hit latency nor memory's, and is named neither"
                        .to_string(),
                    |r| {
                        format!(
                            "it is no cache level's hit latency; memory's latency is read \
                             from its sizes from {} B on, at and beyond the last-level cache",
                            r.from_bytes
                        )
                    },
                );
            out.flags.push(Flag::warning(
                "plateau_unnamed",
                format!(
                    "the latency is flat at {:.1} ns from {} to {} B, across a cache's size \
                     ({}): {what}",
                    p.latency_ns,
                    p.from_bytes,
                    p.to_bytes,
                    self.caches
                        .iter()
                        .map(|c| format!("L{} {} B", c.level, c.size_bytes))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        for (i, name) in plateau::LEVEL_NAMES.iter().enumerate() {
            if let Some(c) = self.caches.get(i).filter(|_| i < 3) {
                out.metrics.push(Metric::new(
                    format!("{name}_cache_bytes"),
                    c.size_bytes as f64,
                    "B",
                ));
            }
            match &levels.levels[i] {
                Some(p) => {
                    out.metrics.push(Metric::new(
                        format!("{name}_latency_ns"),
                        p.latency_ns,
                        "ns",
                    ));
                    if let Some(f) = &freq {
                        out.metrics.push(
                            Metric::new(
                                format!("{name}_latency_cycles"),
                                p.latency_ns * f.hz / 1e9,
                                "cycles",
                            )
                            .label("freq_source", freq_label),
                        );
                    }
                    out.metrics.push(Metric::new(
                        format!("{name}_plateau_from_bytes"),
                        p.from_bytes as f64,
                        "B",
                    ));
                    out.metrics.push(Metric::new(
                        format!("{name}_plateau_to_bytes"),
                        p.to_bytes as f64,
                        "B",
                    ));
                }
                None => out.missing.push(MissingMetric {
                    name: format!("{name}_latency_ns"),
                    reason: missing_level_reason(
                        i,
                        curve,
                        &pts,
                        &self.caches,
                        mem_available().unwrap_or(4 << 30),
                    ),
                }),
            }
        }
        out
    }

    /// Whether the bandwidth arrays stream from DRAM: each is at least twice the whole
    /// last-level cache, every instance of it (or the caches are unknown, and the figures
    /// are checked anyway).
    fn arrays_exceed_caches(&self) -> bool {
        self.llc_bytes() == 0 || (self.bw_elems * 8) as u64 >= 2 * self.llc_bytes()
    }

    /// The last-level cache every thread streams through, all its instances (0: not known).
    fn llc_bytes(&self) -> u64 {
        self.caches
            .last()
            .map_or(0, |c| c.size_bytes.max(self.llc_total_bytes.unwrap_or(0)))
    }

    /// The DIMMs' peak bandwidth, when dmidecode lists every DIMM with its rate.
    fn dram_peak(&self) -> Option<f64> {
        let dimms =
            telemetry::disclosure::read_dimms(telemetry::disclosure::DMIDECODE_MEMORY).ok()?;
        telemetry::parse::dram_peak_gb_per_s(&dimms)
    }

    /// The bandwidth test: each thread count in turn. Where checkpoints are wanted
    /// ([`StepCheckpoints`]), one is handed between thread counts when due: the counts
    /// measured by then.
    fn run_bandwidth(&self, progress: &Progress) -> anyhow::Result<StepOutput> {
        let (wall0, t0) = (std::time::SystemTime::now(), std::time::Instant::now());
        // The CPUs this process may run on, as `taskset` or a cpuset gave them: 0..N
        // pinned outside the mask (another socket) or failed in a cpuset (audit, 3).
        let cpus = engine::launch::allowed_cpus();
        // The 1-thread figures are the reference every other count is checked against.
        // It is measured once more before the requested counts (after them too, when 1 is
        // requested: most threads run first) and the best of its runs is the reference,
        // so a burst of load from another process during one 1-thread run does not turn
        // an honest many-thread figure into an "impossible" one.
        let mut order = self.bw_threads.clone();
        // Most threads first: they place the pages (first touch) where all threads run.
        order.sort_unstable_by(|a, b| b.cmp(a));
        let checks = order.iter().any(|&t| t > 1);
        let runs_in_all = order.len() + usize::from(checks);
        begin(progress, "mem bandwidth", runs_in_all as u64);
        // Read once, before the runs: every checkpoint's checks compare with it too.
        let dram_peak = if self.arrays_exceed_caches() {
            self.dram_peak()
        } else {
            None
        };
        let checkpoints = StepCheckpoints::of(progress);
        let mut reference: Vec<bw::Figure> = Vec::new();
        let mut figures: Vec<bw::Figure> = Vec::new();
        let mut stopped = false;
        let runs = checks.then_some((1, true)).into_iter();
        for (i, (t, is_reference)) in runs.chain(order.iter().map(|&t| (t, false))).enumerate() {
            if progress.stopping() {
                stopped = true;
                break;
            }
            for (k, gbs) in bw::bandwidth(self.bw_elems, t, 5, &cpus)? {
                if is_reference {
                    reference.push((k, t, gbs));
                } else {
                    figures.push((k, t, gbs));
                }
            }
            progress.done.store(i as u64 + 1, Ordering::Relaxed);
            // After the reference alone there is no figure to keep yet, and after the
            // last run the test's result follows at once.
            let more = i + 1 < runs_in_all;
            if let Some(c) = checkpoints
                .as_ref()
                .filter(|c| more && !figures.is_empty() && c.due())
            {
                let measured = i + 1 - usize::from(checks);
                let mut out = self.bandwidth_step(
                    &figures,
                    &reference,
                    &cpus,
                    dram_peak,
                    wall0,
                    t0.elapsed(),
                );
                out.flags.push(engine::spread::checkpoint_flag_of(
                    "bandwidth",
                    out.duration_s,
                    &format!(" ({measured} of {} thread counts measured)", order.len()),
                ));
                c.hand(out);
            }
        }
        let mut out =
            self.bandwidth_step(&figures, &reference, &cpus, dram_peak, wall0, t0.elapsed());
        if stopped {
            stopped_early(&mut out);
        }
        Ok(out)
    }

    /// The bandwidth test's result of the thread counts run (`figures`, checked against
    /// the 1-thread `reference`, the CPUs `cpus` and the DIMMs' peak), `took` from
    /// `wall0`: at its end, or at a checkpoint while it ran.
    fn bandwidth_step(
        &self,
        figures: &[bw::Figure],
        reference: &[bw::Figure],
        cpus: &[usize],
        dram_peak: Option<f64>,
        wall0: std::time::SystemTime,
        took: std::time::Duration,
    ) -> StepOutput {
        let mut out = StepOutput {
            headline: "triad_gb_per_s".into(),
            ..Default::default()
        };
        out.flags.extend(self.bw_notes.iter().cloned());
        let from_dram = self.arrays_exceed_caches();
        if !from_dram {
            // A --bw-size the caches hold measures them, not memory: 95.6 GB/s stood as
            // memory bandwidth where memory gave 7.8-11.9 (acceptance pass J, 3).
            out.flags.push(Flag::invalid(
                "bandwidth_in_cache",
                format!(
                    "the arrays ({} B each) are less than twice the last-level cache ({} B): \
                     this is the caches' bandwidth, not memory's; leave out --bw-size (4x the \
                     caches) or give at least {} B",
                    self.bw_elems * 8,
                    self.llc_bytes(),
                    2 * self.llc_bytes()
                ),
            ));
        }
        let bad = bw::impossible(figures, reference, from_dram, dram_peak, cpus.len());
        // Pinned one each round-robin: past the CPUs, threads share one, and the figure
        // is of those CPUs, not of more cores (`--bw-threads 16` on 4 read as 16).
        if let Some(&most) = self.bw_threads.iter().max().filter(|&&t| t > cpus.len()) {
            out.flags.push(Flag::warning(
                "threads_oversubscribed",
                format!(
                    "{most} threads on the {} CPU(s) this process may use ({}): threads \
                     share a CPU past {}, and their bandwidth is of those CPUs, not of more \
                     cores",
                    cpus.len(),
                    engine::cpu_use::list(cpus),
                    cpus.len()
                ),
            ));
        }
        for ((k, t, g), b) in &bad {
            out.flags.push(Flag::invalid(
                "bandwidth_impossible",
                format!(
                    "{t} threads {} {g:.1} GB/s is above what this machine can reach: {:.1} GB/s ({}, +{:.0}%)",
                    k.name(),
                    b.gb_per_s,
                    b.basis,
                    (bw::BOUND_TOLERANCE - 1.0) * 100.0
                ),
            ));
        }
        for &(k, t, gbs) in figures {
            out.metrics.push(
                Metric::new("bandwidth_gb_per_s", gbs, "GB/s")
                    .label("kind", k.name())
                    .label("threads", t),
            );
        }
        // The reference the counts were checked against, kept and said where it is not
        // the 1-thread figure shown.
        for &(k, t, gbs) in reference {
            out.metrics.push(
                Metric::new("reference_bandwidth_gb_per_s", gbs, "GB/s")
                    .label("kind", k.name())
                    .label("threads", t),
            );
        }
        // Judged where the counts were checked against it: arrays streamed from memory (in
        // the caches nothing is checked, and their figures are flagged as the caches').
        let apart = if from_dram {
            bw::one_thread_apart(figures, reference)
        } else {
            Vec::new()
        };
        if !apart.is_empty() {
            let said: Vec<String> = apart
                .iter()
                .map(|(k, shown, best)| {
                    format!(
                        "{} {shown:.1} GB/s shown, {best:.1} in the run before",
                        k.name()
                    )
                })
                .collect();
            out.flags.push(Flag::warning(
                "bandwidth_unsteady",
                format!(
                    "the 1-thread figures varied between runs ({}): the other thread counts \
                     were checked against the higher of the two (the one shown, or \
                     reference_bandwidth_gb_per_s), and their scaling over the one shown is \
                     not to be read from them; rerun on a quieter host",
                    said.join("; ")
                ),
            ));
        }
        match bw::headline_triad(figures, &bad) {
            Some((_, t, g)) => {
                out.metrics.push(Metric::new("triad_gb_per_s", g, "GB/s"));
                out.metrics
                    .push(Metric::new("triad_threads", t as f64, "threads"));
            }
            None if !figures.is_empty() => out.missing.push(MissingMetric {
                name: "triad_gb_per_s".into(),
                reason: "every triad figure was above what this machine can reach (see the bandwidth_impossible flag)".into(),
            }),
            None => {}
        }
        out.metrics.push(Metric::new(
            "bw_array_bytes",
            (self.bw_elems * 8) as f64,
            "B",
        ));
        out.duration_s = took.as_secs_f64();
        out.measured = vec![(wall0, wall0 + took)];
        out
    }
}

/// The controller: the service resolves the sweep point on the system under test, and
/// each test is sent there whole.
pub struct MemWorkload {
    plan: Plan,
    /// The sweep point's parameters as given, for the service.
    params: Params,
    sut: Option<SutService>,
    /// The sweep point as the system under test resolved it: every driver job's
    /// parameters.
    bench: Option<Params>,
}

impl MemWorkload {
    pub fn from_params(m: &serde_json::Map<String, Value>) -> anyhow::Result<Self> {
        Ok(MemWorkload {
            plan: Plan::from_params(m)?,
            params: m.clone(),
            sut: None,
            bench: None,
        })
    }

    /// The sweep point as the system under test resolved it (after `prepare`).
    pub fn bench(&self) -> Option<MemBench> {
        self.bench.as_ref().and_then(|p| MemBench::from_job(p).ok())
    }
}

impl Workload for MemWorkload {
    fn settings(&self) -> serde_json::Map<String, Value> {
        engine::workload::settings_of(&[serde_json::to_value(&self.plan.cfg)])
    }

    fn name(&self) -> &'static str {
        "mem"
    }
    fn tests(&self) -> Vec<String> {
        self.plan.tests.clone()
    }
    fn cpu_lists(&self) -> anyhow::Result<Vec<CpuList>> {
        // The latency chase runs on the system under test, pinned to `--cpu`: checked
        // against its online CPUs before anything runs or is stored, as every other CPU
        // list is (a CPU past them was a stored failed run: EINVAL from the pinning).
        Ok(vec![CpuList {
            flag: "--cpu",
            role: CpuRole::Sut,
            cpus: self.plan.cfg.cpu.into_iter().collect(),
        }])
    }
    fn prepare(&mut self, ctx: &Ctx) -> anyhow::Result<()> {
        self.cleanup();
        let mut sut = SutService::start(ctx, "mem", &self.params, service::start_service)?;
        let bench = match sut.query(service::PLAN)? {
            Value::Object(m) => m,
            other => bail!(
                "mem: the system under test resolved the sweep point as {other}, not an object"
            ),
        };
        self.sut = Some(sut);
        self.bench = Some(bench);
        Ok(())
    }
    fn run_test(&mut self, test: &str, ctx: &Ctx) -> anyhow::Result<StepOutput> {
        if !matches!(test, "latency" | "bandwidth") {
            bail!("mem: unknown test `{test}`");
        }
        // Not prepared (the Rust API): resolved now, as the runner's prepare would.
        if self.bench.is_none() {
            self.prepare(ctx)?;
        }
        let bench = self
            .bench
            .as_ref()
            .context("mem: the sweep point was not resolved")?;
        engine::host::run_on_sut(ctx, "mem", test, bench, driver::drive)
    }
    fn cleanup(&mut self) {
        if let Some(mut s) = self.sut.take() {
            s.stop();
        }
        self.bench = None;
    }
    fn disclosure(&self) -> BTreeMap<String, Fact> {
        match &self.sut {
            Some(s) => s.facts().clone(),
            // Not prepared: what the tests would measure is this machine.
            None => MemBench::resolve(&self.plan)
                .map(|b| b.facts())
                .unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use engine::host::Roles;
    use serde_json::json;

    /// A context whose one local host is both system under test and load generator (the
    /// single-host run).
    fn on_local() -> Ctx {
        let host = hosts::LocalHost::new("local", |n| (n == "mem").then(registration), false);
        Ctx {
            roles: Some(Roles::single(Arc::new(host))),
            ..Ctx::quiet()
        }
    }

    /// A latency curve over 4-64 KiB, short samples.
    fn small_latency() -> MemWorkload {
        MemWorkload::from_params(&params(json!({
            "tests": ["latency"], "min_size": "4K", "max_size": "64K", "sample_ms": 2, "samples": 3
        })))
        .unwrap()
    }

    /// A checkpoint's curve (4 KiB to 1 MiB so far) with no cache sizes known ends in
    /// L2, not memory: its last plateau is not stored as memory's latency, which is
    /// missing as the checkpoint's; the whole curve still names it.
    #[test]
    fn a_partial_curve_without_caches_names_no_ram_plateau() {
        let mut b = MemBench::resolve(&Plan::from_params(&params(json!({}))).unwrap()).unwrap();
        b.caches = Vec::new();
        let pts: Vec<(u64, f64)> = (0..=32)
            .map(|k| {
                let size = (4096.0 * 2f64.powf(f64::from(k) / 4.0)) as u64;
                (size, if size <= 32 << 10 { 1.2 } else { 4.0 })
            })
            .collect();
        let step = |curve| {
            let chased = Chased {
                pts: pts.clone(),
                freq: None,
                curve,
                on: None,
                huge: (Err("not measured".into()), 0),
            };
            b.latency_step(
                chased,
                std::time::SystemTime::now(),
                std::time::Duration::from_secs(1),
            )
        };
        let out = step(Curve::SoFar);
        assert!(!out.metrics.iter().any(|m| m.name == "ram_latency_ns"));
        let why = out
            .missing
            .iter()
            .find(|m| m.name == "ram_latency_ns")
            .expect("ram_latency_ns missing");
        assert!(why.reason.contains("checkpoint"), "{}", why.reason);
        assert!(out.metrics.iter().any(|m| m.name == "l1_latency_ns"));
        let whole = step(Curve::Whole);
        assert!(whole.metrics.iter().any(|m| m.name == "ram_latency_ns"));
    }

    /// Arrays that fill cpu0's L3 many times over but not the whole machine's (one L3 per
    /// core complex) do not stream from DRAM with every CPU reading; the default arrays
    /// are sized against the whole.
    #[test]
    fn bandwidth_arrays_are_held_to_every_llc_instance() {
        let mut b = MemBench::resolve(&Plan::from_params(&params(json!({}))).unwrap()).unwrap();
        let l3 = 32u64 << 20;
        b.caches = vec![plateau::CacheLevel {
            level: 3,
            size_bytes: l3,
        }];
        b.bw_elems = (4 * l3 / 8) as usize;
        b.llc_total_bytes = Some(12 * l3);
        assert!(!b.arrays_exceed_caches(), "128 MiB arrays in 384 MiB of L3");
        b.llc_total_bytes = Some(l3);
        assert!(b.arrays_exceed_caches());
        // This machine: the default arrays are at least 4x every LLC instance together.
        let here = MemBench::resolve(&Plan::from_params(&params(json!({}))).unwrap()).unwrap();
        if let Some(total) = here.llc_total_bytes {
            let avail = mem_available().unwrap();
            assert!(
                (here.bw_elems * 8) as u64 >= (4 * total).min(avail / 8),
                "{} B arrays, {total} B of LLC",
                here.bw_elems * 8
            );
            assert!(here.arrays_exceed_caches() || 4 * total > avail / 8);
        }
    }

    /// Prepare `w` on the local host and run `test` there.
    fn run_on_local(w: &mut MemWorkload, test: &str) -> StepOutput {
        let ctx = on_local();
        w.prepare(&ctx).unwrap();
        let out = w.run_test(test, &ctx).unwrap();
        w.cleanup();
        out
    }

    fn params(v: Value) -> serde_json::Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    /// A thread count named twice, apart in the list (`all,1,4` on 4 CPUs), runs once:
    /// it ran twice, two figures of one label in one result. The same count written twice
    /// (`1,1`) is refused, as every list's repeated value is.
    #[test]
    fn bandwidth_thread_counts_run_once_each() {
        let all = engine::launch::online_cpus();
        let p = params(json!({"bw_threads": ["all", 1, all]}));
        let b = MemBench::resolve(&Plan::from_params(&p).unwrap()).unwrap();
        let mut want = vec![1, all];
        want.dedup();
        assert_eq!(b.bw_threads, want);
        let twice = params(json!({"tests": ["bandwidth"], "bw_threads": ["all", 1, 1]}));
        let e = Plan::from_params(&twice).err().unwrap().to_string();
        assert!(e.starts_with("--bw-threads lists 1 twice"), "{e}");
        let twice = params(json!({"tests": ["latency"], "sizes": ["4K", 4096]}));
        let e = Plan::from_params(&twice).err().unwrap().to_string();
        assert!(e.starts_with("--sizes lists 4096 twice"), "{e}");
    }

    #[test]
    fn sizes_parse_and_ladder() {
        assert_eq!(parse_size("k", &json!("4K")).unwrap(), 4096);
        assert_eq!(parse_size("k", &json!(100)).unwrap(), 100);
        assert!(parse_size("k", &json!("lots"))
            .unwrap_err()
            .to_string()
            .contains("`k`"));
        let l = size_ladder(4096, 65536, 4);
        assert_eq!(l.first(), Some(&4096));
        assert_eq!(l.last(), Some(&65536));
        assert_eq!(l.len(), 17);
    }

    /// Acceptance A, finding 2: the default max (4x a 300 MiB LLC, 1.17 GiB) is measured,
    /// not the ladder's step below it (1 GiB, 3.4x the LLC).
    #[test]
    fn the_ladder_ends_at_its_max() {
        let max = 4 * (300u64 << 20);
        let l = size_ladder(4096, max, 4);
        assert_eq!(l.last(), Some(&max));
        assert_eq!(l[l.len() - 2], 1 << 30);
        assert!(l.windows(2).all(|w| w[0] < w[1]));
        // A max between cache lines ends at the line below it.
        assert_eq!(size_ladder(4096, 5000, 4).last(), Some(&4992));
    }

    /// Acceptance A, finding 2: 256 MiB-4 GiB given with --sizes (13.6x a 300 MiB LLC)
    /// rose from 146 to 315 ns with no plateau; the reason said "raise --max-size".
    #[test]
    fn a_missing_memory_plateau_says_what_the_curve_did() {
        let llc = [plateau::CacheLevel {
            level: 3,
            size_bytes: 300 << 20,
        }];
        let big = [
            (256u64 << 20, 133.9),
            (512 << 20, 145.7),
            (1 << 30, 195.5),
            (2 << 30, 222.6),
            (4 << 30, 314.7),
        ];
        let plenty = 64 << 30;
        let r = missing_level_reason(3, Curve::Whole, &big, &llc, plenty);
        assert!(!r.contains("--max-size"), "{r}");
        assert!(
            r.contains("145.7 ns at 536870912 B") && r.contains("314.7 ns"),
            "{r}"
        );
        // Too few sizes past the LLC: then the advice is to measure more.
        let r = missing_level_reason(3, Curve::Whole, &big[..3], &llc, plenty);
        assert!(
            r.starts_with("2 size(s)") && r.contains("--max-size, e.g. 1258291200 for 4x"),
            "{r}"
        );
        // With an L4 (taken as memory's side), the advice reaches past it, as the
        // default sizes do: 4x the L3 was below them.
        let cache = |level, size_bytes| plateau::CacheLevel { level, size_bytes };
        let l4 = [
            cache(1, 48 << 10),
            cache(2, 2 << 20),
            cache(3, 300 << 20),
            cache(4, 1 << 30),
        ];
        let r = missing_level_reason(3, Curve::Whole, &big[..3], &l4, plenty);
        assert!(
            r.starts_with("2 size(s)") && r.contains("--max-size, e.g. 4294967296 for 4x"),
            "{r}"
        );
        // Never more than a run takes: half the memory available.
        let r = missing_level_reason(3, Curve::Whole, &big[..3], &l4, 6 << 30);
        assert!(r.contains("--max-size, e.g. 3221225472 for 4x"), "{r}");
        // A plateau the curve rises past is flagged.
        let ram = plateau::Plateau {
            from_bytes: 512 << 20,
            to_bytes: 1 << 30,
            latency_ns: 200.0,
            points: 4,
        };
        let f = ram_rising(&ram, &big).expect("rising");
        assert!(f.message.contains("314.7 ns"), "{}", f.message);
        assert!(ram_rising(&ram, &big[..3]).is_none());
    }

    /// Acceptance A, finding 8: `--cpu 5` on a 2-CPU machine was not declared, so not
    /// checked before the run: a stored failed run (EINVAL) instead of exit 2.
    #[test]
    fn the_chase_cpu_is_a_checked_cpu_list() {
        let w = MemWorkload::from_params(&params(json!({"tests": ["latency"], "cpu": 5}))).unwrap();
        let lists = w.cpu_lists().unwrap();
        assert_eq!(lists.len(), 1);
        assert_eq!((lists[0].flag, &lists[0].cpus), ("--cpu", &vec![5]));
        assert_eq!(lists[0].role, CpuRole::Sut);
        let online = engine::launch::OnlineCpus::listed(vec![0, 1]);
        let why = lists[0]
            .refusal("local (this machine)", &online)
            .expect("refused");
        assert!(why.contains("--cpu 5") && why.contains("CPU 5"), "{why}");
    }

    #[test]
    fn unknown_key_and_test_are_named() {
        let e = MemWorkload::from_params(&params(json!({"size": ["4K"]})))
            .err()
            .unwrap();
        assert!(e.to_string().contains("size"), "{e}");
        let e = MemWorkload::from_params(&params(json!({"tests": ["lat"]})))
            .err()
            .unwrap();
        assert!(e.to_string().contains("lat"), "{e}");
    }

    #[test]
    fn real_small_latency_run_finds_l1() {
        let _alone = REAL_RUN.lock();
        let mut w = small_latency();
        let ctx = on_local();
        w.prepare(&ctx).unwrap();
        let sizes = w.bench().expect("resolved").sizes().to_vec();
        assert!(w.disclosure().contains_key("mem.transparent_hugepage"));
        let out = w.run_test("latency", &ctx).unwrap();
        w.cleanup();
        let pts: Vec<_> = out
            .metrics
            .iter()
            .filter(|m| m.name == "latency_ns")
            .collect();
        assert_eq!(pts.len(), sizes.len());
        assert!(pts.iter().all(|m| m.value > 0.0 && m.value < 100.0));
        // 4-32 KiB fits every L1d we know: the first plateau is L1.
        let l1 = out
            .metrics
            .iter()
            .find(|m| m.name == "l1_latency_ns")
            .expect("l1 plateau");
        assert!(l1.value < 10.0, "{l1:?}");
        assert!(out.metrics.iter().any(|m| m.name == "latency_cycles"));
        // Pinned by default, to a CPU this machine has, and said which.
        let on = out
            .metrics
            .iter()
            .find(|m| m.name == "latency_cpu")
            .expect("the CPU the chase ran on");
        assert!(engine::launch::allowed_cpus().contains(&(on.value as usize)));
        // 64 KiB is not beyond any LLC: RAM is missing, with the reason, never 0.
        assert!(out.missing.iter().any(|m| m.name == "ram_latency_ns"));
    }

    #[test]
    fn real_small_bandwidth_run() {
        let _alone = REAL_RUN.lock();
        let mut w = MemWorkload::from_params(&params(json!({
            "tests": ["bandwidth"], "bw_size": "1M", "bw_threads": [1, "all"]
        })))
        .unwrap();
        let out = run_on_local(&mut w, "bandwidth");
        let n = out
            .metrics
            .iter()
            .filter(|m| m.name == "bandwidth_gb_per_s")
            .count();
        let expect = if engine::launch::online_cpus() == 1 {
            4
        } else {
            8
        };
        assert_eq!(n, expect);
        assert!(out
            .metrics
            .iter()
            .any(|m| m.name == "triad_gb_per_s" && m.value > 0.0));
        // 1 MiB arrays are the caches' bandwidth on any machine with more than 512 KiB
        // of them: said, so it is not read as memory's (acceptance pass J, 3).
        let codes: Vec<&str> = out.flags.iter().map(|f| f.code.as_str()).collect();
        assert_eq!(codes, ["bandwidth_in_cache"], "{:?}", out.flags);
    }

    /// More threads than the CPUs they may use are said: their figure is of those CPUs.
    #[test]
    fn threads_past_the_cpus_are_flagged() {
        let _alone = REAL_RUN.lock();
        let past = engine::launch::allowed_cpus().len() + 1;
        let mut w = MemWorkload::from_params(&params(json!({
            "tests": ["bandwidth"], "bw_size": "1M", "bw_threads": [past]
        })))
        .unwrap();
        let out = run_on_local(&mut w, "bandwidth");
        let f = out
            .flags
            .iter()
            .find(|f| f.code == "threads_oversubscribed")
            .unwrap_or_else(|| panic!("{:?}", out.flags));
        assert!(
            f.message.starts_with(&format!("{past} threads on the ")),
            "{}",
            f.message
        );
    }

    #[test]
    fn the_one_thread_reference_is_measured_but_not_reported_unless_asked() {
        let _alone = REAL_RUN.lock();
        let mut w = MemWorkload::from_params(&params(json!({
            "tests": ["bandwidth"], "bw_size": "1M", "bw_threads": [2]
        })))
        .unwrap();
        let out = run_on_local(&mut w, "bandwidth");
        let threads: Vec<&str> = out
            .metrics
            .iter()
            .filter(|m| m.name == "bandwidth_gb_per_s")
            .map(|m| m.labels["threads"].as_str())
            .collect();
        assert_eq!(threads, ["2"; 4]);
        let t = out.metrics.iter().find(|m| m.name == "triad_threads");
        assert_eq!(t.map(|m| m.value), Some(2.0), "{:?}", out.flags);
    }

    #[test]
    fn a_stop_asked_before_the_test_ends_it_at_once() {
        let _alone = REAL_RUN.lock();
        let mut w = small_latency();
        let ctx = on_local();
        w.prepare(&ctx).unwrap();
        ctx.progress.cancel.store(true, Ordering::Relaxed);
        let out = w.run_test("latency", &ctx).unwrap();
        w.cleanup();
        assert_eq!(out.error, None, "a stop is not a failure");
        assert!(
            out.flags.iter().any(|f| f.code == "stopped_early"),
            "{:?}",
            out.flags
        );
        assert!(!out.metrics.iter().any(|m| m.name == "latency_ns"));
        // Stopped, not too small: no advice to raise --max-size.
        let dram = out
            .missing
            .iter()
            .find(|m| m.name == "ram_latency_ns")
            .unwrap();
        assert!(!dram.reason.contains("--max-size"), "{}", dram.reason);
        assert!(
            dram.reason
                .starts_with("the test was stopped before any size"),
            "{}",
            dram.reason
        );
        // Nothing touched: no share of huge pages (it read 0%), and no warning of small
        // pages.
        assert!(!out.metrics.iter().any(|m| m.name == "huge_pages_pct"));
        assert!(!out.flags.iter().any(|f| f.code == "small_pages"));
        let huge = out
            .missing
            .iter()
            .find(|m| m.name == "huge_pages_pct")
            .unwrap();
        assert!(
            huge.reason.contains("stopped before it measured"),
            "{}",
            huge.reason
        );
    }

    #[test]
    fn without_hosts_the_test_runs_in_this_process() {
        let _alone = REAL_RUN.lock();
        let mut w = MemWorkload::from_params(&params(json!({
            "tests": ["latency"], "sizes": ["4K", "8K"], "sample_ms": 1, "samples": 1
        })))
        .unwrap();
        let out = w.run_test("latency", &Ctx::quiet()).unwrap();
        assert_eq!(
            out.metrics
                .iter()
                .filter(|m| m.name == "latency_ns")
                .count(),
            2
        );
    }

    /// Arrays the memory cannot hold are refused before any is allocated: 3 x 20G on a
    /// 24 GiB host had rackbench killed (acceptance pass J, 7).
    #[test]
    fn arrays_beyond_the_available_memory_are_refused() {
        let e = MemBench::from_params(&params(json!({"sizes": ["4K"], "bw_size": "1000G"})))
            .unwrap_err();
        assert!(
            format!("{e:#}").contains("more than half the available memory"),
            "{e:#}"
        );
    }

    #[test]
    fn a_driver_job_that_is_not_a_resolved_point_is_refused() {
        let e = MemBench::from_job(&params(json!({"tests": ["latency"]}))).unwrap_err();
        assert!(format!("{e:#}").contains("resolved"), "{e:#}");
        let mut b =
            MemBench::from_params(&params(json!({"sizes": ["4K"], "bw_size": "1M"}))).unwrap();
        b.bw_threads = vec![0];
        let job = serde_json::to_value(&b).unwrap();
        assert!(MemBench::from_job(job.as_object().unwrap()).is_err());
    }

    /// A latency test under way hands checkpoints (rackbench killed mid-test keeps what
    /// it measured): five sizes of about 1.75 s each, and the checkpoint due at 5 s (handed
    /// after the size under way then) has the sizes finished by then, each the figure the
    /// test's end has, flagged `partial` and saying how many of the sizes it holds; the
    /// end's result is no checkpoint. Four sizes left 0.25 s between the third's end and
    /// the last chance to hand one, and a fresh-clone CI once saw none.
    #[test]
    fn a_latency_test_under_way_hands_the_sizes_measured_so_far() {
        let _alone = REAL_RUN.lock();
        let mut w = MemWorkload::from_params(&params(json!({
            "tests": ["latency"], "sizes": ["4K", "8K", "16K", "32K", "64K"],
            "sample_ms": 250, "samples": 7
        })))
        .unwrap();
        let (ctx, kept) = engine::testing::keeping(on_local());
        w.prepare(&ctx).unwrap();
        let end = w.run_test("latency", &ctx).unwrap();
        w.cleanup();
        let kept = kept.lock().unwrap();
        let c = kept.first().expect("a checkpoint while the test ran");
        let curve = |o: &StepOutput| -> Vec<(String, f64)> {
            o.metrics
                .iter()
                .filter(|m| m.name == "latency_ns")
                .map(|m| (m.labels["size_bytes"].clone(), m.value))
                .collect()
        };
        let (so_far, all) = (curve(c), curve(&end));
        assert!((1..5).contains(&so_far.len()), "{so_far:?}");
        assert_eq!(so_far[..], all[..so_far.len()]);
        let flag = c.flags.iter().find(|f| f.code == model::PARTIAL).unwrap();
        assert!(
            flag.message
                .starts_with("the latency test did not finish (rackbench was killed")
                && flag
                    .message
                    .contains(&format!("({} of 5 sizes measured)", so_far.len())),
            "{}",
            flag.message
        );
        assert!(c.flags.iter().all(|f| f.code != "stopped_early"));
        assert!(c.duration_s >= 5.0 && c.duration_s < end.duration_s);
        // A level the sizes so far cannot show is missing because of the checkpoint.
        let ram = c
            .missing
            .iter()
            .find(|m| m.name == "ram_latency_ns")
            .unwrap();
        assert!(ram.reason.contains("checkpoint"), "{}", ram.reason);
        assert!(end.flags.iter().all(|f| f.code != model::PARTIAL));
        assert_eq!(all.len(), 5);
    }
}
