//! A/B comparison of two runs or two groups of runs, and whether they are comparable.
//!
//! Differences are (new - old) / old with A as old, per sweep point, on the headline
//! figure and on p99 latency. Repetitions of a point (within a run, or the same point in
//! several runs of a group) are pooled; with at least two on each side the difference
//! carries Welch's 95% confidence interval and a verdict at p < 0.05 (METHODS 10). With
//! fewer, the verdict says no confidence can be given.
//!
//! Comparability diffs the system-under-test disclosures on the keys that change results
//! (CPU, memory, kernel, mitigations, SMT, governor, software versions) and the workload
//! parameters. Hardware differences are what a platform comparison is for; software or
//! setting differences make it not like for like.

use std::collections::BTreeMap;

use model::{HostDisclosure, RunRecord};
use serde::{Deserialize, Serialize};

use crate::derive::{param_str, points, run_labels};
use crate::stats::{welch, Sample};

/// One compared figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareRow {
    /// Sweep point: `kv set pipeline=1 instances=2`.
    pub point: String,
    /// `ops_per_s`, `latency_p99_ns`.
    pub metric: String,
    pub unit: String,
    pub higher_is_better: bool,
    pub a: Option<Sample>,
    pub b: Option<Sample>,
    /// (b - a) / a in percent.
    pub diff_pct: Option<f64>,
    /// 95% CI of the difference, in percent of a (Welch).
    pub ci95_pct: Option<(f64, f64)>,
    pub p_value: Option<f64>,
    /// `better (significant, p=0.003)`, `no significant difference`, `single run: no confidence`.
    pub verdict: String,
}

/// A disclosure or setting that differs between A and B.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    pub key: String,
    pub a: String,
    pub b: String,
    /// `hardware`, `software`, `settings`, `workload`.
    pub category: String,
}

/// Whether A and B may be compared, and why not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparability {
    pub like_for_like: bool,
    /// `like for like`, `platform comparison: ...`, `NOT like for like: ...`.
    pub verdict: String,
    pub differences: Vec<Difference>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub a: Vec<String>,
    pub b: Vec<String>,
    pub rows: Vec<CompareRow>,
    pub comparability: Comparability,
}

/// Disclosure keys whose differences change results (prefix match for the `*` ones).
const KEYS: &[&str] = &[
    "cpu.model",
    "cpu.sockets",
    "cpu.cores",
    "cpu.threads",
    "cpu.smt",
    "cpu.governor",
    "cpu.turbo",
    "cpu.microcode",
    "mem.total_bytes",
    "mem.dimms",
    "mem.thp",
    "numa.nodes",
    "virt",
    "os.kernel",
    "os.name",
    "mitigation.*",
    "software.*",
    "server.config.*",
];

fn category(key: &str) -> &'static str {
    if key.starts_with("cpu.governor") || key.starts_with("cpu.turbo") || key.starts_with("cpu.smt")
    {
        "settings"
    } else if key.starts_with("cpu.")
        || key.starts_with("mem.")
        || key.starts_with("numa.")
        || key == "virt"
    {
        "hardware"
    } else if key.starts_with("param.") {
        "workload"
    } else if key.starts_with("server.config.") {
        "settings"
    } else {
        "software"
    }
}

fn key_matters(key: &str) -> bool {
    // Where a binary lives does not change what it measures; its version does.
    if key.ends_with(".binary") {
        return false;
    }
    KEYS.iter().any(|k| match k.strip_suffix('*') {
        Some(prefix) => key.starts_with(prefix),
        None => key == *k,
    })
}

/// The facts that matter of the SUT host(s) of a group of runs: key -> set of values.
fn facts(runs: &[RunRecord]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for run in runs {
        let sut: Vec<&HostDisclosure> = {
            let s: Vec<&HostDisclosure> = run
                .hosts
                .iter()
                .filter(|h| h.role.contains("sut"))
                .collect();
            if s.is_empty() {
                run.hosts.iter().collect()
            } else {
                s
            }
        };
        for h in sut {
            for (k, f) in &h.facts {
                if key_matters(k) {
                    let e = out.entry(k.clone()).or_default();
                    let v = f.display();
                    if !e.contains(&v) {
                        e.push(v);
                    }
                }
            }
        }
        // Workload settings: every parameter's set of values over the run's results.
        for r in &run.results {
            for (k, v) in &r.params {
                let e = out.entry(format!("param.{}.{k}", r.workload)).or_default();
                let v = param_str(v);
                if !e.contains(&v) {
                    e.push(v);
                }
            }
        }
    }
    for v in out.values_mut() {
        v.sort();
    }
    out
}

/// Compare the disclosures and settings of two groups of runs.
pub fn comparability(a: &[RunRecord], b: &[RunRecord]) -> Comparability {
    let fa = facts(a);
    let fb = facts(b);
    let mut keys: Vec<&String> = fa.keys().chain(fb.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut differences = Vec::new();
    for k in keys {
        let va = fa
            .get(k)
            .map(|v| v.join(", "))
            .unwrap_or_else(|| "(not disclosed)".into());
        let vb = fb
            .get(k)
            .map(|v| v.join(", "))
            .unwrap_or_else(|| "(not disclosed)".into());
        if va != vb {
            differences.push(Difference {
                key: k.clone(),
                a: va,
                b: vb,
                category: category(k).to_string(),
            });
        }
    }
    let non_hw: Vec<&Difference> = differences
        .iter()
        .filter(|d| d.category != "hardware")
        .collect();
    let (like, verdict) =
        if differences.is_empty() {
            (true, "like for like".to_string())
        } else if non_hw.is_empty() {
            (
                true,
                format!(
                "platform comparison: hardware differs ({}), software and settings are the same",
                differences.iter().map(|d| d.key.as_str()).collect::<Vec<_>>().join(", ")
            ),
            )
        } else {
            (
                false,
                format!(
                    "NOT like for like: {} differ",
                    non_hw
                        .iter()
                        .map(|d| d.key.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        };
    Comparability {
        like_for_like: like,
        verdict,
        differences,
    }
}

/// Per sweep point and metric: pooled repetitions of a group.
fn pooled(runs: &[RunRecord]) -> BTreeMap<(String, String), (Vec<f64>, String, bool)> {
    let mut out: BTreeMap<(String, String), (Vec<f64>, String, bool)> = BTreeMap::new();
    for (i, run) in runs.iter().enumerate() {
        for p in points(i, run) {
            let key = format!("{} {}", p.workload, p.label());
            let head = p.headline_name().to_string();
            let unit = p.headline_unit();
            let e = out
                .entry((key.clone(), head))
                .or_insert((vec![], unit, true));
            e.0.extend(p.headline_values());
            // p99 of each repetition from its own exact histogram.
            for r in p.valid() {
                let mut merged: Option<hdrhistogram::Histogram<u64>> = None;
                for h in &r.histograms {
                    if let Ok(d) = h.histogram() {
                        match merged.as_mut() {
                            None => merged = Some(d),
                            Some(m) => {
                                let _ = m.add(&d);
                            }
                        }
                    }
                }
                if let Some(m) = merged.filter(|m| !m.is_empty()) {
                    let e = out
                        .entry((key.clone(), "latency_p99_ns".to_string()))
                        .or_insert((vec![], "ns".to_string(), false));
                    e.0.push(m.value_at_quantile(0.99) as f64);
                }
            }
        }
    }
    out
}

fn p_text(p: f64) -> String {
    if p < 0.001 {
        "p<0.001".to_string()
    } else {
        format!("p={p:.3}")
    }
}

/// Compare group B (new) against group A (old).
pub fn compare(a: &[RunRecord], b: &[RunRecord]) -> Comparison {
    let pa = pooled(a);
    let pb = pooled(b);
    let mut rows = Vec::new();
    for (key, (va, unit, hib)) in &pa {
        let Some((vb, _, _)) = pb.get(key) else {
            continue;
        };
        let sa = Sample::of(va);
        let sb = Sample::of(vb);
        let diff_pct = match (&sa, &sb) {
            (Some(x), Some(y)) if x.mean != 0.0 => Some(100.0 * (y.mean - x.mean) / x.mean),
            _ => None,
        };
        let w = match (&sa, &sb) {
            (Some(x), Some(y)) => welch(x, y),
            _ => None,
        };
        let ci = match (&w, &sa) {
            (Some(w), Some(x)) if x.mean != 0.0 => {
                Some((100.0 * w.ci95_low / x.mean, 100.0 * w.ci95_high / x.mean))
            }
            _ => None,
        };
        let verdict = match (&w, diff_pct) {
            (_, None) => "no figure on one side".to_string(),
            (None, Some(_)) => {
                "single run: no confidence interval (repeat with --repeat)".to_string()
            }
            (Some(w), Some(d)) if w.p < 0.05 => {
                let better = (d > 0.0) == *hib;
                format!(
                    "{} (significant, {})",
                    if better { "better" } else { "worse" },
                    p_text(w.p)
                )
            }
            (Some(w), Some(_)) => format!("no significant difference ({})", p_text(w.p)),
        };
        rows.push(CompareRow {
            point: key.0.clone(),
            metric: key.1.clone(),
            unit: unit.clone(),
            higher_is_better: *hib,
            a: sa,
            b: sb,
            diff_pct,
            ci95_pct: ci,
            p_value: w.map(|w| w.p),
            verdict,
        });
    }
    Comparison {
        a: run_labels(a),
        b: run_labels(b),
        rows,
        comparability: comparability(a, b),
    }
}

/// The comparison as aligned text for a terminal.
pub fn compare_text(c: &Comparison) -> String {
    let mut out = format!(
        "A (old): {}\nB (new): {}\n\n",
        c.a.join(", "),
        c.b.join(", ")
    );
    let mut table = vec![vec![
        "point".to_string(),
        "metric".to_string(),
        "A mean (n)".to_string(),
        "B mean (n)".to_string(),
        "B vs A".to_string(),
        "95% CI".to_string(),
        "verdict".to_string(),
    ]];
    for r in &c.rows {
        let s = |x: &Option<Sample>| {
            x.as_ref().map_or("-".to_string(), |s| {
                if r.unit == "ns" {
                    format!("{} ({})", crate::fmt::latency_ns(s.mean), s.n)
                } else {
                    format!("{} {} ({})", crate::fmt::num(s.mean), r.unit, s.n)
                }
            })
        };
        table.push(vec![
            r.point.clone(),
            r.metric.clone(),
            s(&r.a),
            s(&r.b),
            r.diff_pct.map_or("-".into(), |d| format!("{d:+.1}%")),
            r.ci95_pct
                .map_or("-".into(), |(l, h)| format!("[{l:+.1}%, {h:+.1}%]")),
            r.verdict.clone(),
        ]);
    }
    out.push_str(&crate::fmt::text_table(&table));
    out.push_str(&format!("\nComparability: {}\n", c.comparability.verdict));
    for d in &c.comparability.differences {
        out.push_str(&format!(
            "  {} ({}): A = {} | B = {}\n",
            d.key, d.category, d.a, d.b
        ));
    }
    out
}
