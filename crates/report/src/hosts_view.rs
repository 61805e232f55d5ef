//! Views of runs that span several hosts: the iperf3 study's per-pair table (each end's
//! throughput, power, pinned CPUs, and the %CPU and watts each Gbit/s costs it), a
//! sender x receiver matrix per test, per-host figures per sweep point, and the run's
//! hosts (address, clock offset, agent). Pure functions of stored runs. A single-host run
//! yields nothing here, so its report reads exactly as before.
//!
//! Each end's figures come from that end's own host: the sender's CPUs from the sender
//! host's telemetry summary, the receiver's from the receiver's. Repetitions of one sweep
//! point are summarised by their median (n said); different sweep points are never
//! mixed. A figure that could not be had reads `n/a`, with its reason said once under
//! its table, never as 0. Everything from a host or a user goes through `esc` in HTML and
//! `md` in Markdown.

use std::fmt::Write as _;

use model::{CpuUtil, HostDisclosure, ResultRecord, RunRecord, Status, TelemetrySummary};
use serde_json::Value;

use crate::derive::{
    idle_for, natural_cmp, param_str, points, power_of_summary, run_labels, stored_cpu_list,
    PowerBasis,
};
use crate::fmt::{esc, num};

/// Metric names of `net`'s `step_output`: unlabelled = the receiver's figure,
/// `end=sender` = the sender's.
const THROUGHPUT: &str = "throughput_gbit_per_s";
const PACKETS: &str = "packets_per_s";
const LOSS: &str = "loss_pct";
/// Parameters the runner stores with a net pair's results, and a many-host kv point's.
const SENDER_HOST: &str = "sender_host";
const RECEIVER_HOST: &str = "receiver_host";
const SENDER_CPUS: &str = "sender_cpus";
const RECEIVER_CPUS: &str = "receiver_cpus";
const SUT_HOST: &str = "sut_host";
const LOADGEN_HOSTS: &str = "loadgen_hosts";
/// Parameters that name the hosts and CPUs a point ran on: they differ between two
/// platforms measured alike, so they do not make two points different measurements.
pub(crate) const HOST_PARAMS: [&str; 6] = [
    SENDER_HOST,
    RECEIVER_HOST,
    SENDER_CPUS,
    RECEIVER_CPUS,
    SUT_HOST,
    LOADGEN_HOSTS,
];
/// Per-host facts the runner adds to each disclosure.
const FACT_ADDRESS: &str = "host.address";
const FACT_CLOCK_OFFSET: &str = "host.clock_offset_s";
const FACT_AGENT: &str = "rackbench.agent";

/// The seed's per-CPU rows, in its order.
type CpuField = fn(&CpuUtil) -> f64;
const STEAL: &str = "%steal";
const CPU_FIELDS: [(&str, CpuField); 6] = [
    ("%usr", |u| u.usr_pct),
    ("%sys", |u| u.sys_pct),
    ("%irq", |u| u.irq_pct),
    ("%soft", |u| u.soft_pct),
    // Counted in %CPU used, as busy counts it: shown where an end has some, as the
    // per-CPU tables show it (a pair's sender read %CPU used 173.88 over rows of 60% a
    // CPU, the rest steal).
    (STEAL, |u| u.steal_pct),
    ("%idle", |u| u.idle_pct),
];

/// A CPU busy this much (100 - %idle - %iowait, median of the repetitions) at an end is
/// shown whether or not the end was pinned to it; an idle CPU is left out, and named. 5%
/// is well above the tick noise of a CPU nothing runs on (under 1% on the test hosts)
/// and well below the softirq share the seed reads off its NIC's CPU (20-98%).
pub const BUSY_SHOWN_PCT: f64 = 5.0;

/// Not applicable (the diagonal of the matrix, a CPU the end is not pinned to).
const NOT_APPLICABLE: &str = "—";
/// Could not be had; the reason is in the table's notes.
const NA: &str = "n/a";

/// A table of plain text cells (escaped when rendered), with an optional top header row
/// of spanning groups, and the notes said once under it.
#[derive(Debug, Clone, PartialEq)]
pub struct HostTable {
    pub caption: String,
    /// Top header row: (text, columns spanned), covering every column.
    pub groups: Vec<(String, usize)>,
    pub head: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// How many leading columns hold text (the rest are figures, right-aligned).
    pub text_cols: usize,
    pub notes: Vec<String>,
}

impl HostTable {
    /// The row whose first cell is `label`.
    pub fn row(&self, label: &str) -> Option<&[String]> {
        self.rows
            .iter()
            .find(|r| r.first().map(String::as_str) == Some(label))
            .map(Vec::as_slice)
    }
}

/// Reasons for `n/a` cells, each said once with the hosts it concerns.
#[derive(Default)]
struct Reasons(Vec<(String, Vec<String>)>);

impl Reasons {
    fn add(&mut self, host: &str, reason: impl Into<String>) {
        let reason = reason.into();
        match self.0.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, hosts)) => {
                if !hosts.iter().any(|h| h == host) {
                    hosts.push(host.to_string());
                }
            }
            None => self.0.push((reason, vec![host.to_string()])),
        }
    }

    /// Each reason with its hosts, named as the tables name them (this machine by its
    /// hostname: "vm" in a table and "local" in its note read as two hosts, acceptance
    /// pass G, 13); `disclosed` are the run's hosts.
    fn notes(self, disclosed: &[model::HostDisclosure]) -> Vec<String> {
        self.0
            .into_iter()
            .map(|(r, hosts)| {
                let names: Vec<String> = hosts
                    .iter()
                    .map(|h| model::host_display_name(disclosed, h))
                    .collect();
                format!("{NA} on {}: {r}", names.join(", "))
            })
            .collect()
    }
}

fn median(v: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

fn valid(r: &ResultRecord) -> bool {
    r.status == Status::Ok && !r.is_invalid()
}

fn param(r: &ResultRecord, key: &str) -> Option<String> {
    r.params.get(key).map(param_str).filter(|s| !s.is_empty())
}

/// A stored CPU list (`[2, 4]`, `["2-3", 5]`, `"2,4"`); empty = unpinned.
fn cpu_list(v: Option<&Value>) -> Result<Vec<i32>, String> {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Ok(vec![]);
    };
    let cpus = stored_cpu_list(v).map_err(|_| {
        format!(
            "the stored CPU list `{}` does not read as CPU numbers",
            param_str(v)
        )
    })?;
    // Below MAX_CPUS: an i32 each.
    let mut out: Vec<i32> = cpus.into_iter().map(|c| c as i32).collect();
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// CPU numbers as ranges: `0-3,6`.
pub(crate) fn cpu_ranges(cpus: &[i32]) -> String {
    let mut v: Vec<usize> = cpus
        .iter()
        .filter_map(|&c| usize::try_from(c).ok())
        .collect();
    v.sort_unstable();
    v.dedup();
    model::cpu_list_text(&v)
}

fn cpu_name(c: i32) -> String {
    if c < 0 {
        "all CPUs".to_string()
    } else {
        format!("CPU{c}")
    }
}

/// One end of a pair: which host, and which CPUs it was pinned to (empty = unpinned).
struct EndSpec {
    host: String,
    sender: bool,
    cpus: Result<Vec<i32>, String>,
}

/// One end's figures in one repetition.
#[derive(Default)]
struct EndRep {
    tput: Option<f64>,
    pps: Option<f64>,
    loss: Option<f64>,
    /// (watts, basis, source such as `ipmi-dcmi system`).
    power: Option<(f64, PowerBasis, String)>,
    idle: Option<f64>,
    /// The CPU lines shown for this end: the pinned CPUs, else the all-CPU line (-1).
    cpus: Vec<(i32, CpuUtil)>,
    /// Sum of busy % over the pinned CPUs (unpinned: over every CPU), % of one CPU.
    used: Option<f64>,
    /// Every per-CPU line of the end's host (never the all-CPU line), in CPU order: the
    /// CPUs it was not pinned to can still have done its work (a NIC's interrupts and
    /// softirq on the CPU they are steered to, the seed's `CPU4 %soft 98%`).
    lines: Vec<CpuLine>,
}

/// A per-CPU line with its CPU's share of the window (`TelemetrySummary::cpu_share`): a
/// CPU online for part of it adds its busy % for that part only.
#[derive(Clone, Copy)]
struct CpuLine {
    util: CpuUtil,
    share: f64,
}

impl EndRep {
    fn line(&self, cpu: i32) -> Option<&CpuLine> {
        self.lines.iter().find(|l| l.util.cpu == cpu)
    }
}

fn summary_of<'a>(r: &'a ResultRecord, host: &str) -> Option<&'a TelemetrySummary> {
    r.telemetry_summary.iter().find(|t| t.host == host)
}

/// A metric of a result, or the reason the workload gave for its absence.
fn metric_or_why(r: &ResultRecord, name: &str, end: Option<&str>) -> Result<f64, String> {
    let found = match end {
        Some(e) => r.metric(name, &[("end", e)]),
        None => r.metric(name, &[]),
    };
    match found.map(|m| m.value).filter(|v| v.is_finite()) {
        Some(v) => Ok(v),
        None => Err(r
            .missing
            .iter()
            .find(|m| m.name == name)
            .map(|m| format!("{name}: {}", m.reason))
            .unwrap_or_else(|| format!("{name} was not reported"))),
    }
}

fn end_rep(
    run: &RunRecord,
    r: &ResultRecord,
    end: &EndSpec,
    udp: bool,
    why: &mut Reasons,
) -> EndRep {
    let host = end.host.as_str();
    let which = end.sender.then_some("sender");
    let mut e = EndRep::default();
    let take = |res: Result<f64, String>, why: &mut Reasons| match res {
        Ok(v) => Some(v),
        Err(reason) => {
            why.add(host, reason);
            None
        }
    };
    e.tput = take(metric_or_why(r, THROUGHPUT, which), why);
    if udp {
        e.pps = take(metric_or_why(r, PACKETS, which), why);
        e.loss = take(metric_or_why(r, LOSS, None), why);
    }
    let Some(ts) = summary_of(r, host) else {
        why.add(
            host,
            "no telemetry from this host was stored with the result",
        );
        return e;
    };
    match power_of_summary(ts) {
        Ok((h, basis)) => {
            let (w, source) = (h.mean_watts, h.named(run));
            e.idle = idle_for(run, host, &h);
            if e.idle.is_none() {
                why.add(
                    host,
                    format!("idle power: no idle measurement of {source} before the load"),
                );
            }
            e.power = Some((w, basis, source));
        }
        Err(reason) => why.add(host, format!("power: {reason}")),
    }
    let cpus = match &end.cpus {
        Ok(c) => c,
        Err(reason) => {
            why.add(host, reason.clone());
            return e;
        }
    };
    let line = |c: i32| ts.cpus.iter().find(|u| u.cpu == c).copied();
    e.lines = ts
        .cpus
        .iter()
        .filter(|u| u.cpu >= 0)
        .map(|&util| CpuLine {
            util,
            share: ts.cpu_share(util.cpu),
        })
        .collect();
    e.lines.sort_by_key(|l| l.util.cpu);
    if cpus.is_empty() {
        // Unpinned: the all-CPU line's split, and %CPU used over every CPU so that it is
        // in percent of one CPU, as the pinned ends' figures are.
        match line(-1) {
            Some(u) => e.cpus.push((-1, u)),
            None => why.add(host, "no all-CPU line in this host's telemetry"),
        }
        e.used = ts.cpus_sum(|_| true, CpuUtil::busy_pct);
        if e.used.is_none() {
            why.add(
                host,
                "%CPU used: no per-CPU lines in this host's telemetry (unpinned end)",
            );
        }
    } else {
        let mut all = true;
        for &c in cpus {
            match line(c) {
                Some(u) => e.cpus.push((c, u)),
                None => {
                    all = false;
                    why.add(host, format!("CPU{c} is not in this host's telemetry"));
                }
            }
        }
        if all {
            e.used = ts.cpus_sum(|c| cpus.contains(&c), CpuUtil::busy_pct);
        }
    }
    e
}

/// What the CPU rows of a pair table show, and what they leave out (each host's CPUs
/// busy under [`BUSY_SHOWN_PCT`] at every end, by host).
fn cpu_rows_note(
    disclosed: &[HostDisclosure],
    cols: &[(EndSpec, Vec<EndRep>)],
    shown: &[i32],
    all_line_na: bool,
    no_line: bool,
) -> Vec<String> {
    let mut notes = vec![format!(
        "CPU rows: each end's pinned CPUs, and every CPU busy {}% or more (100 - %idle - %iowait, median) at an end not pinned to it, such as the CPU that took a NIC's interrupts or softirq work; every column gives its own host's figure for each CPU row.",
        BUSY_SHOWN_PCT
    )];
    let mut left: Vec<(String, Vec<i32>, usize)> = Vec::new();
    for (end, reps) in cols {
        let mut have: Vec<i32> = reps
            .iter()
            .flat_map(|e| e.lines.iter().map(|l| l.util.cpu))
            .collect();
        have.sort_unstable();
        have.dedup();
        let out: Vec<i32> = have
            .iter()
            .copied()
            .filter(|c| !shown.contains(c))
            .collect();
        match left.iter_mut().find(|(h, _, _)| *h == end.host) {
            // A host is left out of its table only where every end on it left it out.
            Some((_, l, n)) => {
                l.retain(|c| out.contains(c));
                *n = (*n).max(have.len());
            }
            None => left.push((end.host.clone(), out, have.len())),
        }
    }
    let left: Vec<String> = left
        .into_iter()
        .filter(|(_, l, _)| !l.is_empty())
        .map(|(h, l, n)| {
            format!(
                "{}: CPU {} ({} of {n})",
                model::host_display_name(disclosed, &h),
                cpu_ranges(&l),
                l.len()
            )
        })
        .collect();
    if !left.is_empty() {
        notes.push(format!(
            "CPUs left out, busy under {}% at every end of this table: {}.",
            BUSY_SHOWN_PCT,
            left.join("; ")
        ));
    }
    if all_line_na || no_line {
        notes.push(format!(
            "{NOT_APPLICABLE}: the all-CPU line at an end pinned to CPUs (it is shown for an unpinned end), or a CPU its host's telemetry has no line for."
        ));
    }
    notes
}

/// Net results of a run that name their pair, grouped by sweep point: (test, the
/// parameters other than the pair's hosts) -> pairs by sender then receiver, in natural
/// order (`rbh2` before `rbh10`) -> results.
#[allow(clippy::type_complexity)]
fn pair_groups(
    run: &RunRecord,
) -> Vec<(String, String, Vec<((String, String), Vec<&ResultRecord>)>)> {
    let mut out: Vec<(
        String,
        std::collections::BTreeMap<String, Value>,
        Vec<((String, String), Vec<&ResultRecord>)>,
    )> = Vec::new();
    for r in run.results.iter().filter(|r| r.workload == "net") {
        let (Some(s), Some(d)) = (param(r, SENDER_HOST), param(r, RECEIVER_HOST)) else {
            continue;
        };
        let mut rest = r.params.clone();
        rest.remove(SENDER_HOST);
        rest.remove(RECEIVER_HOST);
        let g = match out.iter_mut().position(|g| g.0 == r.test && g.1 == rest) {
            Some(i) => &mut out[i],
            None => {
                out.push((r.test.clone(), rest, Vec::new()));
                out.last_mut().expect("just pushed")
            }
        };
        match g.2.iter_mut().find(|p| p.0 == (s.clone(), d.clone())) {
            Some(p) => p.1.push(r),
            None => g.2.push(((s, d), vec![r])),
        }
    }
    for g in &mut out {
        g.2.sort_by(|((s1, d1), _), ((s2, d2), _)| {
            natural_cmp(s1, s2).then_with(|| natural_cmp(d1, d2))
        });
    }
    // Parameters that differ between groups of one test name the sweep point.
    let varying: Vec<String> = {
        let mut keys: Vec<String> = Vec::new();
        for (t, p, _) in &out {
            for (k, v) in p {
                let differs = out
                    .iter()
                    .any(|(t2, p2, _)| t2 == t && p2.get(k) != Some(v));
                if differs && !keys.contains(k) {
                    keys.push(k.clone());
                }
            }
        }
        keys
    };
    out.into_iter()
        .map(|(test, params, pairs)| {
            let label = params
                .iter()
                .filter(|(k, _)| varying.contains(k))
                .map(|(k, v)| format!("{k}={}", param_str(v)))
                .collect::<Vec<_>>()
                .join(" ");
            (test, label, pairs)
        })
        .collect()
}

/// Throughput unit of a table (the seed's small-packet UDP table reads in Mbit/s).
/// Returns (multiplier from Gbit/s, unit).
fn tput_unit(values: &[f64]) -> (f64, &'static str) {
    crate::fmt::bit_rate_unit(values)
}

fn who(runs: &[RunRecord], i: usize, labels: &[String]) -> String {
    if runs.len() > 1 {
        format!("{}: ", labels[i])
    } else {
        String::new()
    }
}

/// The repetitions whose power (`power`: watts, basis, source) was read from the first
/// one's source, and that basis: only they are summarised. A median of a whole server's
/// 310 W and RAPL's 140 W (its BMC silent in one repetition) is no power at all.
fn of_first_source<'a, T>(
    reps: &'a [T],
    power: impl Fn(&'a T) -> Option<&'a (f64, PowerBasis, String)>,
) -> Option<(Vec<&'a T>, PowerBasis)> {
    let (_, basis, source) = reps.iter().find_map(&power)?;
    let same = reps
        .iter()
        .filter(|e| power(e).is_some_and(|p| &p.2 == source))
        .collect();
    Some((same, *basis))
}

/// Watts, with the basis said when it is not measured whole-server power.
fn watts(w: f64, basis: PowerBasis) -> String {
    let tag = match basis {
        PowerBasis::Measured => "",
        PowerBasis::Modelled => " (modelled)",
        PowerBasis::Component => " (component)",
    };
    format!("{}{tag}", num(w))
}

fn f2(v: Option<f64>) -> String {
    v.map_or(NA.to_string(), |v| crate::fmt::fixed(v, 2))
}

fn f3(v: Option<f64>) -> String {
    v.map_or(NA.to_string(), |v| crate::fmt::fixed(v, 3))
}

/// The iperf3 study's table, one per test and sweep point: per pair a sender and a
/// receiver column, each with its own host's figures (median of the repetitions).
pub fn pair_tables(runs: &[RunRecord]) -> Vec<HostTable> {
    let labels = run_labels(runs);
    let mut out = Vec::new();
    for (ri, run) in runs.iter().enumerate() {
        for (test, point, pairs) in pair_groups(run) {
            out.push(pair_table(
                run,
                &who(runs, ri, &labels),
                &test,
                &point,
                &pairs,
            ));
        }
    }
    said_once(&mut out);
    out
}

fn pair_table(
    run: &RunRecord,
    who: &str,
    test: &str,
    point: &str,
    pairs: &[((String, String), Vec<&ResultRecord>)],
) -> HostTable {
    let udp = test.starts_with("udp");
    let mut why = Reasons::default();
    let mut left_out = Vec::new();
    // Per column: (end, figures of each valid repetition, n).
    let mut cols: Vec<(EndSpec, Vec<EndRep>)> = Vec::new();
    let mut groups = Vec::new();
    let mut head = vec![String::new()];
    for ((s, d), rs) in pairs {
        let ok: Vec<&ResultRecord> = rs.iter().copied().filter(|r| valid(r)).collect();
        // This machine by its hostname, as every other table names it.
        let (sn, dn) = (
            model::host_display_name(&run.hosts, s),
            model::host_display_name(&run.hosts, d),
        );
        groups.push((format!("{sn} → {dn}"), 2));
        head.push(format!("{sn} (sender)"));
        head.push(format!("{dn} (receiver)"));
        for (host, sender) in [(s, true), (d, false)] {
            let key = if sender { SENDER_CPUS } else { RECEIVER_CPUS };
            // Each repetition carries its own parameters; a pair's repetitions share them.
            let end = EndSpec {
                host: host.clone(),
                sender,
                cpus: cpu_list(rs.first().and_then(|r| r.params.get(key))),
            };
            let reps = ok
                .iter()
                .map(|r| end_rep(run, r, &end, udp, &mut why))
                .collect();
            cols.push((end, reps));
        }
        if ok.len() < rs.len() {
            left_out.push(format!(
                "{sn} → {dn}: {} of {} repetitions left out (failed, interrupted or flagged invalid).",
                rs.len() - ok.len(),
                rs.len()
            ));
        }
    }
    let med = |reps: &[EndRep], f: &dyn Fn(&EndRep) -> Option<f64>| -> Option<f64> {
        median(&reps.iter().filter_map(f).collect::<Vec<_>>())
    };
    let tputs: Vec<f64> = cols
        .iter()
        .filter_map(|(_, reps)| med(reps, &|e| e.tput))
        .collect();
    let (scale, unit) = tput_unit(&tputs);
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut row = |label: String, cell: &dyn Fn(&EndSpec, &[EndRep]) -> String| {
        let mut r = vec![label];
        r.extend(cols.iter().map(|(e, reps)| cell(e, reps)));
        rows.push(r);
    };
    row(format!("Throughput ({unit})"), &|_, reps| {
        med(reps, &|e| e.tput).map_or(NA.into(), |v| num(v * scale))
    });
    if udp {
        row("Packets/s".into(), &|_, reps| {
            med(reps, &|e| e.pps).map_or(NA.into(), num)
        });
        row("Loss %".into(), &|_, reps| f3(med(reps, &|e| e.loss)));
    }
    let power_of = |reps: &[EndRep]| -> Option<(f64, Option<f64>, PowerBasis)> {
        let (same, basis) = of_first_source(reps, |e| e.power.as_ref())?;
        let w = median(
            &same
                .iter()
                .filter_map(|e| e.power.as_ref().map(|p| p.0))
                .collect::<Vec<_>>(),
        )?;
        let idle = median(&same.iter().filter_map(|e| e.idle).collect::<Vec<_>>());
        Some((w, idle, basis))
    };
    row("Power (W)".into(), &|_, reps| {
        power_of(reps).map_or(NA.into(), |(w, _, basis)| watts(w, basis))
    });
    // Of the same source as the power beside it, and said so where it is not measured
    // whole-server power (acceptance P, 7: the model's idle watts read as measured).
    row("Idle power (W)".into(), &|_, reps| {
        power_of(reps)
            .and_then(|(_, idle, basis)| Some(watts(idle?, basis)))
            .unwrap_or_else(|| NA.into())
    });
    // CPU rows: the all-CPU line where an end is unpinned, every CPU an end was pinned
    // to, and every CPU that was busy at an end without being pinned there (what took a
    // NIC's interrupts or softirq work). Each column gives its own host's figure for
    // every CPU row, pinned there or not; the all-CPU line only for an unpinned end.
    let pinned_of = |end: &EndSpec| -> Option<Vec<i32>> { end.cpus.as_ref().ok().cloned() };
    let busy_unpinned: Vec<Vec<i32>> = cols
        .iter()
        .map(|(end, reps)| {
            let pinned = pinned_of(end).unwrap_or_default();
            let mut all: Vec<i32> = reps
                .iter()
                .flat_map(|e| e.lines.iter().map(|l| l.util.cpu))
                .collect();
            all.sort_unstable();
            all.dedup();
            all.into_iter()
                .filter(|c| pinned.is_empty() || !pinned.contains(c))
                .filter(|&c| {
                    median(
                        &reps
                            .iter()
                            .filter_map(|e| e.line(c))
                            .map(|l| l.util.busy_pct())
                            .collect::<Vec<_>>(),
                    )
                    .is_some_and(|b| b >= BUSY_SHOWN_PCT)
                })
                .collect()
        })
        .collect();
    let mut shown: Vec<i32> = cols
        .iter()
        .flat_map(|(_, reps)| reps.iter().flat_map(|e| e.cpus.iter().map(|c| c.0)))
        .chain(cols.iter().flat_map(|(e, _)| {
            e.cpus
                .as_ref()
                .map(|c| if c.is_empty() { vec![-1] } else { c.clone() })
                .unwrap_or_default()
        }))
        .chain(busy_unpinned.iter().flatten().copied())
        .collect();
    shown.sort_unstable();
    shown.dedup();
    if !shown.is_empty() {
        let mut r = vec!["Pinned CPUs".to_string()];
        r.extend(cols.iter().map(|(end, _)| match &end.cpus {
            Ok(l) if l.is_empty() => "unpinned".to_string(),
            Ok(l) => cpu_ranges(l),
            Err(_) => NA.to_string(),
        }));
        rows.push(r);
    }
    let (mut all_line_na, mut no_line) = (false, false);
    for &c in &shown {
        for (name, get) in CPU_FIELDS {
            let mut r = vec![format!("{} {name}", cpu_name(c))];
            let mut stolen = false;
            for (end, reps) in &cols {
                let unpinned = matches!(&end.cpus, Ok(l) if l.is_empty());
                if c == -1 && !unpinned {
                    all_line_na = true;
                    r.push(NOT_APPLICABLE.into());
                    continue;
                }
                let v = median(
                    &reps
                        .iter()
                        .filter_map(|e| {
                            e.cpus
                                .iter()
                                .find(|x| x.0 == c)
                                .map(|x| x.1)
                                .or_else(|| e.line(c).map(|l| l.util))
                                .map(|u| get(&u))
                        })
                        .collect::<Vec<_>>(),
                );
                let pinned_here = matches!(&end.cpus, Ok(l) if l.contains(&c));
                match v {
                    Some(v) => {
                        stolen |= v >= crate::cpu_table::SHOWN_FROM;
                        r.push(crate::fmt::fixed(v, 2))
                    }
                    // A pinned CPU without a line has its reason in the notes already.
                    None if pinned_here || reps.is_empty() => r.push(NA.into()),
                    None => {
                        no_line = true;
                        r.push(NOT_APPLICABLE.into());
                    }
                }
            }
            // %steal where some end has any, as the per-CPU tables show it.
            if name != STEAL || stolen {
                rows.push(r);
            }
        }
    }
    // The end's pinned CPUs and the CPUs busy there unpinned, per repetition: what its
    // work cost on its host, as the seed's %CPU used adds its CPU2 and CPU4.
    let with_busy: Vec<Option<f64>> = cols
        .iter()
        .zip(&busy_unpinned)
        .map(|((end, reps), extra)| {
            let unpinned = matches!(&end.cpus, Ok(l) if l.is_empty());
            median(
                &reps
                    .iter()
                    .filter_map(|e| {
                        if unpinned {
                            return e.used;
                        }
                        // Weighed as `used` is (cpus_sum): a CPU online for half the
                        // window at 100% busy did half a CPU's work, not a whole one's.
                        let more: Option<Vec<f64>> = extra
                            .iter()
                            .map(|c| {
                                let l = e.line(*c)?;
                                Some(l.util.busy_pct() * l.share)
                            })
                            .collect();
                        Some(e.used? + more?.iter().sum::<f64>())
                    })
                    .collect::<Vec<_>>(),
            )
        })
        .collect();
    let any_busy_unpinned = cols
        .iter()
        .zip(&busy_unpinned)
        .any(|((end, _), b)| !b.is_empty() && !matches!(&end.cpus, Ok(l) if l.is_empty()));
    let per_tput = |reps: &[EndRep], v: Option<f64>| -> Option<f64> {
        let t = med(reps, &|e| e.tput)? * scale;
        (t > 0.0).then_some(v? / t)
    };
    // %CPU used is the seed's: the CPU rows of the end added (its pinned CPU2 and the
    // CPU4 that took its softirq work, 197.01), and CPU/tput is over it (7.35). Over the
    // pinned CPUs alone it read half the seed's, and half the efficiency table's.
    let mut used_rows = vec![vec!["%CPU used".to_string()]];
    used_rows[0].extend(with_busy.iter().map(|v| f2(*v)));
    if any_busy_unpinned {
        let mut r = vec!["%CPU used, pinned CPUs only".to_string()];
        r.extend(cols.iter().map(|(_, reps)| f2(med(reps, &|e| e.used))));
        used_rows.push(r);
    }
    let mut r = vec![format!("CPU/tput (%CPU used per {unit})")];
    r.extend(
        cols.iter()
            .zip(&with_busy)
            .map(|((_, reps), used)| f3(per_tput(reps, *used))),
    );
    used_rows.push(r);
    rows.extend(used_rows);
    let mut row = |label: String, cell: &dyn Fn(&[EndRep]) -> String| {
        let mut r = vec![label];
        r.extend(cols.iter().map(|(_, reps)| cell(reps)));
        rows.push(r);
    };
    // Under load below idle is no saving but a reading to doubt: no figure, and why
    // (as the efficiency tables have it).
    let below_idle = std::cell::Cell::new(false);
    row(format!("W/tput (W above idle per {unit})"), &|reps| {
        f3(per_tput(
            reps,
            // Within the efficiency tables' tolerance below idle, 0 W above it, as there.
            power_of(reps).and_then(|(w, idle, _)| {
                crate::derive::above_idle(w, idle?)
                    .inspect_err(|_| below_idle.set(true))
                    .ok()
            }),
        ))
    });
    row(format!("W per {unit}"), &|reps| {
        f3(per_tput(reps, power_of(reps).map(|p| p.0)))
    });
    row("Repetitions (n)".into(), &|reps| reps.len().to_string());
    let mut notes = why.notes(&run.hosts);
    notes.extend(left_out);
    let ends: Vec<String> = pairs
        .iter()
        .flat_map(|((s, d), _)| [s.clone(), d.clone()])
        .collect();
    notes.extend(shared_kernel_note(run, &ends));
    if below_idle.get() {
        notes.push(
            "W/tput: absent where the power under load read below the idle power measured before it: one of the two readings is wrong."
                .to_string(),
        );
    }
    notes.extend(cpu_rows_note(
        &run.hosts,
        &cols,
        &shown,
        all_line_na,
        no_line,
    ));
    notes.push(format!(
        "Each figure is the median of the pair's valid repetitions (n); CPU/tput and W/tput divide those medians by the end's own throughput (sent at the sender, received at the receiver). %CPU used = sum of 100 - %idle - %iowait over the end's CPU rows (%steal, a VM's time the hypervisor gave another, counted in it as a busy CPU's), its pinned CPUs and those busy {BUSY_SHOWN_PCT}% or more beside them (an unpinned end: over every CPU), in percent of one CPU."
    ));
    let point = if point.is_empty() {
        String::new()
    } else {
        format!(" {point}")
    };
    HostTable {
        caption: format!("{who}{test}{point}: each pair's sender and receiver, each end's figures from its own host"),
        groups: std::iter::once((String::new(), 1)).chain(groups).collect(),
        head,
        rows,
        text_cols: 1,
        notes,
    }
}

/// Per test and sweep point, the received throughput of every measured pair: rows are
/// senders, columns receivers (median of the repetitions; diagonal `—`).
pub fn matrices(runs: &[RunRecord]) -> Vec<HostTable> {
    let labels = run_labels(runs);
    let mut out = Vec::new();
    for (ri, run) in runs.iter().enumerate() {
        for (test, point, pairs) in pair_groups(run) {
            // Rows and columns in natural order (`rbh2` before `rbh10`), not the order
            // the pairs ran in.
            let mut senders: Vec<&str> = pairs.iter().map(|((s, _), _)| s.as_str()).collect();
            let mut receivers: Vec<&str> = pairs.iter().map(|((_, d), _)| d.as_str()).collect();
            for v in [&mut senders, &mut receivers] {
                v.sort_by(|a, b| natural_cmp(a, b));
                v.dedup();
            }
            let value = |s: &str, d: &str| -> Option<Option<f64>> {
                let (_, rs) = pairs.iter().find(|((a, b), _)| a == s && b == d)?;
                Some(median(
                    &rs.iter()
                        .filter(|r| valid(r))
                        .filter_map(|r| metric_or_why(r, THROUGHPUT, None).ok())
                        .collect::<Vec<_>>(),
                ))
            };
            let all: Vec<f64> = pairs
                .iter()
                .filter_map(|((s, d), _)| value(s, d).flatten())
                .collect();
            let (scale, unit) = tput_unit(&all);
            let mut rows = Vec::new();
            let mut absent = false;
            let shown = |h: &str| model::host_display_name(&run.hosts, h);
            for s in &senders {
                let mut r = vec![shown(s)];
                for d in &receivers {
                    r.push(if s == d {
                        NOT_APPLICABLE.to_string()
                    } else {
                        match value(s, d) {
                            Some(Some(v)) => num(v * scale),
                            Some(None) => {
                                absent = true;
                                NA.to_string()
                            }
                            None => "-".to_string(),
                        }
                    });
                }
                rows.push(r);
            }
            let mut notes = vec![format!(
                "Received throughput in {unit}, median of each pair's valid repetitions; '-': pair not measured."
            )];
            if absent {
                notes.push(format!(
                    "{NA}: no valid repetition reported a received throughput (see the pair table)."
                ));
            }
            let point = if point.is_empty() {
                String::new()
            } else {
                format!(" {point}")
            };
            let mut head = vec!["sender \\ receiver".to_string()];
            head.extend(receivers.iter().map(|d| shown(d)));
            out.push(HostTable {
                caption: format!(
                    "{}{test}{point}: sender x receiver ({unit})",
                    who(runs, ri, &labels)
                ),
                groups: vec![],
                head,
                rows,
                text_cols: 1,
                notes,
            });
        }
    }
    out
}

fn many_hosts(run: &RunRecord) -> bool {
    run.results.iter().any(|r| r.telemetry_summary.len() > 1)
}

/// Whether the run spans several hosts (and so has a Hosts section).
fn spans_hosts(run: &RunRecord) -> bool {
    run.hosts.len() > 1 || many_hosts(run)
}

/// The role the runner discloses for this machine when it only drives the others.
const CONTROLLER_ROLE: &str = "controller";

/// What each host did in one result, from the parameters the runner stored with it.
pub(crate) fn role_in(run: &RunRecord, r: &ResultRecord, host: &str) -> String {
    let mut roles = Vec::new();
    if param(r, SENDER_HOST).as_deref() == Some(host) {
        roles.push("sender");
    }
    if param(r, RECEIVER_HOST).as_deref() == Some(host) {
        roles.push("receiver");
    }
    if param(r, SUT_HOST).as_deref() == Some(host) {
        roles.push("sut");
    }
    if param(r, LOADGEN_HOSTS).is_some_and(|l| l.split(',').any(|h| h.trim() == host)) {
        roles.push("loadgen");
    }
    let names_roles = [SENDER_HOST, RECEIVER_HOST, SUT_HOST, LOADGEN_HOSTS]
        .iter()
        .any(|k| r.params.contains_key(*k));
    let disclosed = run.hosts.iter().find(|h| h.host == host).map(|h| &h.role);
    if roles.is_empty() && disclosed.is_some_and(|r| r == CONTROLLER_ROLE) {
        // This machine, driving the others: the Hosts table's word for it. `idle` would
        // read as a test host idle, however busy the controller was.
        CONTROLLER_ROLE.to_string()
    } else if roles.is_empty() && names_roles {
        // Sampled while the point ran, but not one of its ends (another pair's host).
        "idle".to_string()
    } else if roles.is_empty() {
        disclosed.map_or("-".to_string(), |r| r.clone())
    } else {
        roles.join("+")
    }
}

/// Mean busy % over all CPUs: the all-CPU line, else the per-CPU lines' mean weighed by
/// each CPU's share of the window (busy CPU-seconds over online CPU-seconds), so a CPU
/// online for a moment counts for that moment, not as much as one there throughout.
fn busy_pct(ts: &TelemetrySummary) -> Option<f64> {
    if let Some(all) = ts.cpus.iter().find(|c| c.cpu == -1) {
        return Some(all.busy_pct());
    }
    let busy = ts.cpus_sum(|_| true, CpuUtil::busy_pct)?;
    let online = ts.cpus_online()?;
    (online > 0.0).then(|| busy / online)
}

/// Sum of every NIC but loopback and those another counts (`enslaved`: a bridge's or
/// bond's members, an Open vSwitch bridge's ports, a VLAN over a NIC,
/// [`model::NIC_ENSLAVED`]), Gbit/s: (rx, tx).
fn nic_gbit(ts: &TelemetrySummary, enslaved: &[&str]) -> Option<(f64, f64)> {
    let nics: Vec<_> = ts
        .nics
        .iter()
        .filter(|n| n.name != "lo" && !enslaved.contains(&n.name.as_str()))
        .collect();
    (!nics.is_empty()).then(|| {
        (
            nics.iter().map(|n| n.rx_bytes_per_s).sum::<f64>() * 8.0 / 1e9,
            nics.iter().map(|n| n.tx_bytes_per_s).sum::<f64>() * 8.0 / 1e9,
        )
    })
}

/// Per sweep point of a many-host run: each host's role, CPU, NIC traffic and power, and
/// for a workload with several generators each generator's own headline figure.
pub fn host_tables(runs: &[RunRecord]) -> Vec<HostTable> {
    let labels = run_labels(runs);
    let mut out = Vec::new();
    for (ri, run) in runs.iter().enumerate() {
        for p in points(ri, run) {
            if !p.results.iter().any(|r| r.telemetry_summary.len() > 1) {
                continue;
            }
            // A capacity test's power and CPU mix every step: its views show them per step.
            if p.capacity_phase().is_some() {
                continue;
            }
            // No valid repetition (the test failed, was interrupted, or is invalid): each
            // host's figures from the results that have any (one has, by the test above),
            // the table saying what they are, so that a failure reads host by host (which
            // one was saturated, which went quiet); `show` and the report had no host's
            // figure of it.
            let valid = p.valid();
            let partial = valid.is_empty();
            let ok: Vec<&ResultRecord> = if partial {
                p.results
                    .iter()
                    .copied()
                    .filter(|r| !r.telemetry_summary.is_empty())
                    .collect()
            } else {
                valid
            };
            // Repetitions that ran to their end but are invalid did complete: said so.
            let unfinished = ok.iter().any(|r| r.status != model::Status::Ok);
            let (reps, caption_mark) = match (partial, unfinished) {
                (false, _) => (
                    format!("{} valid repetition(s) of {}", ok.len(), p.results.len()),
                    "",
                ),
                (true, true) => (
                    format!(
                        "{} repetition(s) of {} that did not complete (failed or interrupted; \
                         each up to where it stopped) or are invalid",
                        ok.len(),
                        p.results.len()
                    ),
                    " (partial: the test did not complete)",
                ),
                (true, false) => (
                    format!(
                        "{} repetition(s) of {}, each invalid (its flags say why)",
                        ok.len(),
                        p.results.len()
                    ),
                    " (of invalid repetitions)",
                ),
            };
            let headline = p.headline_name().to_string();
            let gen_metric = |r: &ResultRecord, host: &str| {
                r.metric(&headline, &[("host", host)])
                    .map(|m| (m.value, m.unit.clone()))
            };
            // The run's hosts in disclosure order, then any other that reported.
            let mut hosts: Vec<String> = Vec::new();
            for r in &ok {
                let labelled = r
                    .metrics
                    .iter()
                    .filter(|m| m.name == headline)
                    .filter_map(|m| m.labels.get("host").cloned());
                for h in r
                    .telemetry_summary
                    .iter()
                    .map(|t| t.host.clone())
                    .chain(labelled)
                {
                    if !hosts.contains(&h) {
                        hosts.push(h);
                    }
                }
            }
            hosts.sort_by_key(|h| {
                run.hosts
                    .iter()
                    .position(|d| &d.host == h)
                    .unwrap_or(usize::MAX)
            });
            let gen_unit = ok
                .iter()
                .flat_map(|r| hosts.iter().filter_map(|h| gen_metric(r, h)))
                .map(|(_, u)| u)
                .next();
            let mut why = Reasons::default();
            let mut rows = Vec::new();
            for h in &hosts {
                let sums: Vec<&TelemetrySummary> =
                    ok.iter().filter_map(|r| summary_of(r, h)).collect();
                if sums.is_empty() {
                    // A host whose telemetry stopped coming back (lost mid-test) keeps its
                    // samples up to then, left out of the summaries these figures are of:
                    // "none stored" read false beside them.
                    let stopped = format!("telemetry.{h}");
                    let kept = ok.iter().any(|r| {
                        r.missing.iter().any(|m| m.name == stopped)
                            && r.telemetry.iter().any(|s| &s.host == h)
                    });
                    why.add(
                        h,
                        if kept {
                            "its samples up to where its telemetry stopped coming back are kept with the result, left out of the summaries these figures are of (see telemetry_missing)"
                        } else {
                            "no telemetry from this host was stored with the result"
                        },
                    );
                }
                let m = |f: &dyn Fn(&TelemetrySummary) -> Option<f64>| {
                    median(&sums.iter().filter_map(|t| f(t)).collect::<Vec<_>>())
                };
                let power: Vec<(f64, PowerBasis, String)> = sums
                    .iter()
                    .filter_map(|t| match power_of_summary(t) {
                        Ok((h, basis)) => Some((h.mean_watts, basis, h.named(run))),
                        Err(e) => {
                            why.add(h, format!("power: {e}"));
                            None
                        }
                    })
                    .collect();
                let roles: Vec<String> = {
                    let mut v: Vec<String> = Vec::new();
                    for r in &p.results {
                        let role = role_in(run, r, h);
                        if !v.contains(&role) {
                            v.push(role);
                        }
                    }
                    v
                };
                let enslaved = model::enslaved_nics(&run.hosts, h);
                let mut row = vec![
                    model::host_display_name(&run.hosts, h),
                    roles.join(", "),
                    f2(m(&busy_pct)),
                    // Each in its own unit: a controller's few kbit/s beside the
                    // generators' Gbit/s read `0.00000824` in a Gbit/s column.
                    m(&|t| nic_gbit(t, &enslaved).map(|n| n.0))
                        .map_or(NA.into(), crate::fmt::bit_rate),
                    m(&|t| nic_gbit(t, &enslaved).map(|n| n.1))
                        .map_or(NA.into(), crate::fmt::bit_rate),
                    // Of the first repetition's source only, as the pair table's.
                    of_first_source(&power, Some)
                        .and_then(|(same, basis)| {
                            median(&same.iter().map(|p| p.0).collect::<Vec<_>>())
                                .map(|w| watts(w, basis))
                        })
                        .unwrap_or_else(|| NA.into()),
                ];
                if gen_unit.is_some() {
                    // The mean over the repetitions, as the headline above is: each
                    // generator's own median would add up to none of its figures.
                    let v: Vec<f64> = ok
                        .iter()
                        .filter_map(|r| gen_metric(r, h).map(|x| x.0))
                        .collect();
                    // A lost generator's figure kept from the test's last checkpoint is
                    // in no total: said in its cell (it read as adding up to the headline),
                    // with how many of the repetitions' figures are such.
                    let until: Vec<String> = ok
                        .iter()
                        .filter_map(|r| {
                            r.metric(&headline, &[("host", h)])?
                                .labels
                                .get("until_checkpoint_s")
                                .cloned()
                        })
                        .collect();
                    let mean = || num(v.iter().sum::<f64>() / v.len() as f64);
                    row.push(match (v.is_empty(), until.first()) {
                        (true, _) => "-".into(),
                        (false, Some(s)) if until.len() == v.len() => {
                            format!("{} (until {s} s, in no total)", mean())
                        }
                        (false, Some(_)) => format!(
                            "{} ({} of {} until a checkpoint, in no total)",
                            mean(),
                            until.len(),
                            v.len()
                        ),
                        (false, None) => mean(),
                    });
                }
                rows.push(row);
            }
            let mut head: Vec<String> = [
                "Host",
                "Role",
                "CPU busy (% of the host)",
                "NIC rx",
                "NIC tx",
                "Power (W)",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            if let Some(u) = &gen_unit {
                head.push(format!("{headline} per generator ({u})"));
            }
            let mut notes = why.notes(&run.hosts);
            notes.extend(shared_kernel_note(run, &hosts));
            // Over the repetitions, the worst of each: the largest skew, the shortest
            // overlap (a median of two read as a mean: acceptance K, F3).
            let of_reps = |name: &str| -> Vec<f64> {
                ok.iter()
                    .filter_map(|r| r.metric(name, &[]).map(|m| m.value))
                    .collect()
            };
            let skew = of_reps("start_skew_max_s").into_iter().reduce(f64::max);
            let overlap = of_reps("window_overlap_s").into_iter().reduce(f64::min);
            if skew.is_some() || overlap.is_some() {
                let reps = if ok.len() > 1 {
                    format!(" (the worst of {} repetitions)", ok.len())
                } else {
                    String::new()
                };
                notes.push(format!(
                    "Generators: largest start skew {} ms; measurement windows overlap {} s{reps}.",
                    // To 0.1 ms: the hosts' clocks are placed by round trips over their
                    // connections, which tell no finer.
                    skew.map_or(NA.into(), |s| match s * 1e3 {
                        ms if ms < 0.05 => "under 0.1".into(),
                        ms => format!("{ms:.1}"),
                    }),
                    overlap.map_or(NA.into(), |o| crate::fmt::fixed(o, 3))
                ));
            }
            notes.push(format!(
                "CPU, NIC and power: median of {reps}; NIC traffic sums every NIC but lo, a bridge's or bond's members (counted on it, or only forwarded), an Open vSwitch bridge's ports (counted on its internal port, or only forwarded) and a VLAN over a NIC (counted on that NIC); CPU busy = 100 - %idle - %iowait (%steal included), the mean over the host's CPUs: 100 is every CPU busy, where the per-CPU tables' %CPU used is in % of one CPU."
            ));
            if gen_unit.is_some() && partial {
                // Only a test that stopped can have lost a generator on the way.
                let lost = if unfinished {
                    "; a generator lost during the test shows what it had measured by the test's last checkpoint, where one was taken (its host_lost flag says when)"
                } else {
                    ""
                };
                notes.push(format!("{headline} per generator: mean of {reps}{lost}."));
            } else if gen_unit.is_some() {
                // Whether they do add up: the headline is the whole count over the union
                // of the generators' windows, which is their sum only while the windows
                // coincide (acceptance K, F2).
                let sum: f64 = hosts
                    .iter()
                    .filter_map(|h| {
                        let v: Vec<f64> = ok
                            .iter()
                            .filter_map(|r| gen_metric(r, h).map(|x| x.0))
                            .collect();
                        crate::stats::mean(&v)
                    })
                    .sum();
                let whole = p.headline().map(|s| s.mean);
                let adds_up = whole.is_some_and(|w| (sum - w).abs() <= 0.01 * w.abs());
                notes.push(match whole {
                    Some(w) if !adds_up => format!(
                        "{headline} per generator: mean of {} valid repetition(s), as the headline is; they add up to {}, not the headline's {}: the headline is the whole count over the span from the first generator's start to the last one's end, and the generators' windows differ (see the overlap above).",
                        ok.len(),
                        num(sum),
                        num(w)
                    ),
                    _ => format!(
                        "{headline} per generator: mean of {} valid repetition(s), as the headline is, so the generators add up to the headline's mean.",
                        ok.len()
                    ),
                });
            }
            out.push(HostTable {
                caption: format!(
                    "{}{} {}: per host{}",
                    who(runs, ri, &labels),
                    p.workload,
                    p.label(),
                    caption_mark
                ),
                groups: vec![],
                head,
                rows,
                text_cols: 2,
                notes,
            });
        }
    }
    said_once(&mut out);
    out
}

/// The note under a table of `shown` hosts' CPU figures where some of them share one
/// kernel ([`model::KERNEL_SHARED_WITH`]: namespaces or containers of one machine): each
/// one's CPU rows are the kernel's, all of their work together (a sender and its
/// receiver read 139.75% each, the same 139.75%), not the host's own.
pub(crate) fn shared_kernel_note(run: &RunRecord, shown: &[String]) -> Option<String> {
    let mut groups: Vec<Vec<&str>> = Vec::new();
    for h in shown {
        if groups.iter().any(|g| g.contains(&h.as_str())) {
            continue;
        }
        let mut group = vec![h.as_str()];
        group.extend(
            model::kernel_mates(&run.hosts, h)
                .into_iter()
                .filter(|m| shown.iter().any(|s| s == m)),
        );
        if group.len() > 1 {
            groups.push(group);
        }
    }
    if groups.is_empty() {
        return None;
    }
    let said: Vec<String> = groups
        .iter()
        .map(|g| {
            g.iter()
                .map(|h| model::host_display_name(&run.hosts, h))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .collect();
    Some(format!(
        "One kernel: {} (namespaces or containers of one machine, host.kernel_shared_with): \
         the CPU figures of each are that kernel's, the work of all of them together, not \
         its own; their power is the machine's.",
        said.join("; ")
    ))
}

/// A long reason a table's note repeats from an earlier table's (a host's ~400
/// characters on why it has no power source, under every sweep point's table) keeps
/// its hosts and its subject and points up to the first: `n/a on rbh1, rbh2: power: as
/// under "kv get: per host" above.` Only the reasons of figures that could not be had
/// ([`Reasons`]): a legend or a count is the table's own, and is said in full.
fn said_once(tables: &mut [HostTable]) {
    const LONG: usize = 160;
    let mut said: Vec<(String, String)> = Vec::new();
    for t in tables {
        for n in &mut t.notes {
            if n.len() < LONG || !n.starts_with(&format!("{NA} on ")) {
                continue;
            }
            match said.iter().find(|(s, _)| s == n) {
                Some((_, first)) => {
                    // `n/a on HOSTS: SUBJECT: why`: the hosts, and a subject of a word.
                    let mut parts = n.splitn(3, ": ");
                    let hosts = parts.next().unwrap_or_default();
                    let subject = parts
                        .next()
                        .filter(|s| !s.contains(' ') && parts.next().is_some())
                        .map_or(String::new(), |s| format!("{s}: "));
                    *n = format!("{hosts}: {subject}as under \"{first}\" above.");
                }
                None => said.push((n.clone(), t.caption.clone())),
            }
        }
    }
}

/// The hosts of each run that spans several: role, address, clock offset, agent.
pub fn hosts_tables(runs: &[RunRecord]) -> Vec<HostTable> {
    let labels = run_labels(runs);
    let mut out = Vec::new();
    for (ri, run) in runs.iter().enumerate().filter(|(_, r)| spans_hosts(r)) {
        let fact = |h: &model::HostDisclosure, k: &str| h.facts.get(k).map(|f| f.display());
        let rows = run
            .hosts
            .iter()
            .map(|h| {
                vec![
                    // This machine by its hostname, as the CSV export names it.
                    model::host_display_name(&run.hosts, &h.host),
                    h.role.clone(),
                    fact(h, FACT_ADDRESS).unwrap_or_else(|| "-".into()),
                    match h.facts.get(FACT_CLOCK_OFFSET) {
                        Some(f) => match f.value.as_deref().map(str::parse::<f64>) {
                            Some(Ok(s)) => crate::fmt::fixed(s * 1e3, 3),
                            _ => f.display(),
                        },
                        None => "-".into(),
                    },
                    fact(h, FACT_AGENT).unwrap_or_else(|| "-".into()),
                ]
            })
            .collect();
        out.push(HostTable {
            caption: format!("{}hosts of the run", who(runs, ri, &labels)),
            groups: vec![],
            head: ["Host", "Role", "Address", "Clock offset (ms)", "rackbench agent"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            rows,
            // The clock offset too: "-" and "unknown (why)" read better left-aligned.
            text_cols: 5,
            notes: vec!["Clock offset: the host's clock minus the controller's, measured over the agent connection; '-': this machine, or not measured.".into()],
        });
    }
    out
}

// ---------------------------------------------------------------- rendering

pub(crate) fn table_html(t: &HostTable) -> String {
    let mut h = format!("<table><caption>{}</caption>", esc(&t.caption));
    if !t.groups.is_empty() {
        h.push_str("<tr>");
        for (g, span) in &t.groups {
            let _ = write!(h, r#"<th colspan="{span}">{}</th>"#, esc(g));
        }
        h.push_str("</tr>");
    }
    h.push_str("<tr>");
    for c in &t.head {
        let _ = write!(h, "<th>{}</th>", esc(c));
    }
    h.push_str("</tr>");
    for r in &t.rows {
        h.push_str("<tr>");
        for (i, c) in r.iter().enumerate() {
            let cls = if i < t.text_cols { "" } else { r#" class="n""# };
            let _ = write!(h, "<td{cls}>{}</td>", esc(c));
        }
        h.push_str("</tr>");
    }
    h.push_str("</table>");
    for n in &t.notes {
        let _ = write!(h, r#"<p class="muted">{}</p>"#, esc(n));
    }
    h
}

pub use crate::fmt::md;

pub(crate) fn table_md(t: &HostTable) -> String {
    let mut m = format!("\n{}\n\n", md(&t.caption));
    // Markdown has no column spans: the group is folded into each column's header.
    let mut groups = Vec::new();
    for (g, span) in &t.groups {
        groups.extend(std::iter::repeat_n(g.as_str(), *span));
    }
    let head: Vec<String> = t
        .head
        .iter()
        .enumerate()
        .map(|(i, c)| match groups.get(i) {
            Some(g) if !g.is_empty() => md(&format!("{g}: {c}")),
            _ => md(c),
        })
        .collect();
    let _ = writeln!(m, "| {} |", head.join(" | "));
    let _ = writeln!(m, "|{}|", vec!["---"; t.head.len()].join("|"));
    for r in &t.rows {
        let _ = writeln!(
            m,
            "| {} |",
            r.iter().map(|c| md(c)).collect::<Vec<_>>().join(" | ")
        );
    }
    for n in &t.notes {
        let _ = write!(m, "\n{}\n", md(n));
    }
    m
}

/// The net section's "Pairs" (HTML): per test the pair table and the matrix. Empty when
/// no net result names a sender and a receiver host.
pub fn pairs_html(runs: &[RunRecord], wl: &str) -> String {
    if wl != "net" {
        return String::new();
    }
    let (tables, matrices) = (pair_tables(runs), matrices(runs));
    if tables.is_empty() {
        return String::new();
    }
    let mut h = String::from(r#"<h3 id="pairs">Pairs</h3>"#);
    for (t, m) in tables.iter().zip(&matrices) {
        h.push_str(&table_html(t));
        h.push_str(&table_html(m));
    }
    h
}

/// The net section's "Pairs" (Markdown).
pub fn pairs_markdown(runs: &[RunRecord], wl: &str) -> String {
    if wl != "net" {
        return String::new();
    }
    let (tables, matrices) = (pair_tables(runs), matrices(runs));
    if tables.is_empty() {
        return String::new();
    }
    let mut m = String::from("\n### Pairs\n");
    for (t, x) in tables.iter().zip(&matrices) {
        m.push_str(&table_md(t));
        m.push_str(&table_md(x));
    }
    m
}

/// The hosts' disclosure split for reading: the facts that differ between the columns
/// (what a reader compares) in the table, and the facts the same on every column said
/// once, so sixteen runs do not make a table of sixteen identical values per row.
pub struct Disclosure<'a> {
    /// (run index, host) per column.
    pub cols: Vec<(usize, &'a HostDisclosure)>,
    /// Fact name and its value in each column.
    pub differ: Vec<(String, Vec<String>)>,
    /// Fact name and its one value; empty with a single column (nothing to compare).
    pub same: Vec<(String, String)>,
}

impl Disclosure<'_> {
    /// What its columns are, for "same on every ...": one run's several hosts are no
    /// "every run" (a one-run, three-host report said so).
    pub fn columns_are(&self) -> &'static str {
        let mut runs: Vec<usize> = self.cols.iter().map(|(i, _)| *i).collect();
        runs.dedup();
        match runs.len() {
            1 => "host",
            n if n == self.cols.len() => "run",
            _ => "run and host",
        }
    }
}

/// A disclosure cell of a fact another column has and this host's disclosure has not
/// (a run stored before the fact was collected, a tool absent there): said, not `-`.
/// A fact that could not be read is stored with its reason, and shows that instead.
pub const NOT_RECORDED: &str = "not recorded for this host";

/// Every host disclosure of these runs, one column per (run, host).
pub fn disclosure(runs: &[RunRecord]) -> Disclosure<'_> {
    let cols: Vec<(usize, &HostDisclosure)> = runs
        .iter()
        .enumerate()
        .flat_map(|(i, r)| r.hosts.iter().map(move |hd| (i, hd)))
        .collect();
    let mut keys: Vec<&String> = cols.iter().flat_map(|(_, hd)| hd.facts.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut differ = Vec::new();
    let mut same = Vec::new();
    for k in keys {
        let vals: Vec<String> = cols
            .iter()
            .map(|(i, hd)| {
                hd.facts.get(k).map_or(NOT_RECORDED.to_string(), |f| {
                    human_fact(&runs[*i].hosts, k, f)
                })
            })
            .collect();
        if cols.len() > 1 && vals.windows(2).all(|w| w[0] == w[1]) {
            same.push((k.clone(), vals[0].clone()));
        } else {
            differ.push((k.clone(), vals));
        }
    }
    Disclosure { cols, differ, same }
}

/// A fact for people: byte counts (`*_bytes`, and the caches' sizes, which sysfs gives in
/// bytes) scaled by binary prefix as the mem view writes them (`48 KiB`, `300 MiB`), with
/// the exact count beside only when the scaled figure is rounded (`23.6 GiB
/// (25324732416 B)`); hosts named as the tables name them ([`model::fact_text`]).
fn human_fact(hosts: &[HostDisclosure], key: &str, f: &model::Fact) -> String {
    let is_bytes = key.ends_with("_bytes") || key.starts_with("cpu.cache.");
    match (&f.value, is_bytes) {
        (Some(v), true) => match v.parse::<u64>() {
            Ok(b) => crate::views::bytes_exact(b)
                .unwrap_or_else(|| format!("{} ({v} B)", crate::views::bytes(b as f64))),
            Err(_) => v.clone(),
        },
        _ => model::fact_text(hosts, key, f),
    }
}

/// Whether the report has a "Hosts" section (some run spans several hosts).
pub fn has_hosts(runs: &[RunRecord]) -> bool {
    runs.iter().any(spans_hosts)
}

/// The "Hosts" section (HTML): the hosts of each run, then per sweep point each host's
/// figures. Empty for single-host runs.
pub fn hosts_html(runs: &[RunRecord]) -> String {
    if !has_hosts(runs) {
        return String::new();
    }
    let mut h = String::from(r#"<h2 id="hosts">Hosts</h2>"#);
    for t in hosts_tables(runs).iter().chain(&host_tables(runs)) {
        h.push_str(&table_html(t));
    }
    h
}

/// The "Hosts" section (Markdown).
pub fn hosts_markdown(runs: &[RunRecord]) -> String {
    if !has_hosts(runs) {
        return String::new();
    }
    let mut m = String::from("\n## Hosts\n");
    for t in hosts_tables(runs).iter().chain(&host_tables(runs)) {
        m.push_str(&table_md(t));
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_in_every_stored_form() {
        use serde_json::json;
        assert_eq!(cpu_list(None), Ok(vec![]));
        assert_eq!(cpu_list(Some(&json!([]))), Ok(vec![]));
        assert_eq!(cpu_list(Some(&json!([4, 2]))), Ok(vec![2, 4]));
        assert_eq!(cpu_list(Some(&json!(["2-3", 5]))), Ok(vec![2, 3, 5]));
        assert_eq!(cpu_list(Some(&json!("2,4"))), Ok(vec![2, 4]));
        assert!(cpu_list(Some(&json!(["x"]))).is_err());
        assert!(cpu_list(Some(&json!(["0-99999999"]))).is_err());
    }

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn busy_pct_without_an_all_cpu_line_weighs_a_cpu_by_its_time_online() {
        let cpu = |n: i32, idle: f64| {
            serde_json::to_value(CpuUtil {
                idle_pct: idle,
                ..CpuUtil::idle(n)
            })
            .unwrap()
        };
        // CPU 0 idle throughout 10 s; CPU 1 online 2 s of them, 100% busy then: 2 busy
        // CPU-seconds over 12 online ones, not the plain mean's 50%.
        let ts: TelemetrySummary = serde_json::from_value(serde_json::json!({
            "host": "h", "samples": 10, "covered_s": 10.0,
            "cpus": [cpu(0, 100.0), cpu(1, 0.0)],
            "nics": [], "disks": [], "mean_freq_mhz": null, "procs": [], "power": [],
            "part_present": [{"cpu": 1, "present_s": 2.0}],
        }))
        .unwrap();
        let got = busy_pct(&ts).unwrap();
        assert!((got - 100.0 * 2.0 / 12.0).abs() < 1e-9, "{got}");
    }

    #[test]
    fn markdown_text_is_inert() {
        assert_eq!(md("<script>x"), "&lt;script&gt;x");
        assert_eq!(
            md("[a](javascript:x) *b* |"),
            "\\[a\\](javascript:x) \\*b\\* \\|"
        );
    }
}
