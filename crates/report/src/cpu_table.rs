//! The seed's per-CPU table (the iperf3 study's `CPU2 %usr` ... `CPU4 %soft`, `%CPU
//! used` rows): per run and host, a row per CPU and mpstat column, a column per test of
//! the run, so which CPU took which work (the copy on CPU2, the NIC's softirq on CPU4)
//! reads across the tests. Pure functions of stored runs.
//!
//! Each cell is the mean over the test's repetitions that count of the host's mean over
//! its measured time, as the "Host telemetry" tables beside it are. CPUs busy under
//! [`BUSY_SHOWN_PCT`] in every test are left out and named, so a 64-CPU host's table
//! holds the CPUs that worked; their time stays in `%CPU used, all CPUs`. A figure that
//! could not be had reads `n/a`, its reason said once under the table, never 0.

use model::{CpuUtil, RunRecord, TelemetrySummary};

use crate::derive::{self, param_str, run_labels, Point};
use crate::fmt::{esc, fixed};
pub use crate::hosts_view::BUSY_SHOWN_PCT;
use crate::hosts_view::{cpu_ranges, role_in, table_html, table_md, HostTable, HOST_PARAMS};

/// At most this many tests per table; more are split into tables of this many, so a
/// sweep of 30 points is three tables a page wide, not one of 30 columns.
pub const MAX_COLUMNS: usize = 12;
/// A table of more CPUs than this is folded (`<details>`), its summary saying how many.
const OPEN_UP_TO_CPUS: usize = 8;
/// Could not be had; the reason is in the table's notes.
const NA: &str = "n/a";

type Field = fn(&CpuUtil) -> f64;
/// mpstat's columns the seed shows, always, in its order.
const ALWAYS: [(&str, Field); 5] = [
    ("%usr", |u| u.usr_pct),
    ("%sys", |u| u.sys_pct),
    ("%irq", |u| u.irq_pct),
    ("%soft", |u| u.soft_pct),
    ("%idle", |u| u.idle_pct),
];
/// mpstat's others, shown for a CPU only where one of its tests has some (they are
/// time the five above do not hold: without them the row's five would not add to 100).
const IF_ANY: [(&str, Field); 3] = [
    ("%nice", |u| u.nice_pct),
    ("%iowait", |u| u.iowait_pct),
    ("%steal", |u| u.steal_pct),
];
/// Under this a figure prints 0.00: such a row says nothing.
pub(crate) const SHOWN_FROM: f64 = 0.005;

/// One host's per-CPU table of one run (a part of it, when the run has more than
/// [`MAX_COLUMNS`] tests).
#[derive(Debug, Clone, PartialEq)]
pub struct CpuTable {
    pub table: HostTable,
    /// CPUs shown, and CPUs the host's telemetry has lines for.
    pub shown: usize,
    pub cpus: usize,
}

/// A column: one test (sweep point) of the run and this host's summaries in it.
struct Column<'a> {
    head: String,
    sums: Vec<&'a TelemetrySummary>,
    /// Why there is no figure (no summary of the host in its repetitions).
    why: Option<String>,
    /// No repetition of the test counts: the column is what the host measured anyway.
    uncounted: bool,
}

/// A point's label in a column head: the test and the parameters that vary, a net
/// pair's hosts as `alpha → beta` rather than two `*_host=` parameters.
fn column_head(p: &Point, skip: &[&str], hosts: &[model::HostDisclosure]) -> String {
    let rest = p.param_label(skip);
    let pair = match (p.params.get("sender_host"), p.params.get("receiver_host")) {
        (Some(s), Some(d)) => format!(
            " {} → {}",
            model::host_display_name(hosts, &param_str(s)),
            model::host_display_name(hosts, &param_str(d))
        ),
        _ => String::new(),
    };
    let rest = if rest.is_empty() {
        rest
    } else {
        format!(" {rest}")
    };
    format!("{}{pair}{rest}", p.test)
}

fn mean(v: &[f64]) -> Option<f64> {
    crate::stats::mean(v)
}

/// Each CPU's mean line over `sums` (one host's summaries of a test's repetitions), in
/// CPU order, each column the mean over the summaries that have a line of the CPU; never
/// the all-CPU line.
pub fn mean_cpus(sums: &[&TelemetrySummary]) -> Vec<CpuUtil> {
    let mut all: Vec<i32> = sums
        .iter()
        .flat_map(|t| t.cpus.iter().map(|u| u.cpu))
        .filter(|c| *c >= 0)
        .collect();
    all.sort_unstable();
    all.dedup();
    all.into_iter()
        .filter_map(|cpu| {
            let lines: Vec<&CpuUtil> = sums
                .iter()
                .filter_map(|t| t.cpus.iter().find(|u| u.cpu == cpu))
                .collect();
            let m = |f: Field| mean(&lines.iter().map(|u| f(u)).collect::<Vec<_>>());
            Some(CpuUtil {
                cpu,
                usr_pct: m(|u| u.usr_pct)?,
                nice_pct: m(|u| u.nice_pct)?,
                sys_pct: m(|u| u.sys_pct)?,
                iowait_pct: m(|u| u.iowait_pct)?,
                irq_pct: m(|u| u.irq_pct)?,
                soft_pct: m(|u| u.soft_pct)?,
                steal_pct: m(|u| u.steal_pct)?,
                idle_pct: m(|u| u.idle_pct)?,
            })
        })
        .collect()
}

/// Per run and host, the seed's per-CPU table over the run's tests.
pub fn cpu_tables(runs: &[RunRecord]) -> Vec<CpuTable> {
    let labels = run_labels(runs);
    let mut out = Vec::new();
    for (i, (run, label)) in runs.iter().zip(&labels).enumerate() {
        let crate::views::HostTelemetryParts {
            pts,
            capacity_tests,
            hosts,
        } = crate::views::host_telemetry_parts(i, run);
        // Parameters the same in every test say nothing in a column head.
        let fixed_params = derive::fixed_params(std::slice::from_ref(run));
        let mut skip: Vec<&str> = fixed_params.iter().map(|(k, _)| k.as_str()).collect();
        skip.extend(HOST_PARAMS);
        let many_hosts = hosts.len() > 1;
        for host in hosts {
            let name = model::host_display_name(&run.hosts, host);
            let cols: Vec<(Column, &Point)> = pts
                .iter()
                .map(|p| {
                    // A test none of whose repetitions counts keeps what the host measured
                    // up to where it stopped, marked, as the Host telemetry table does.
                    let (reps, mark) = match p.valid() {
                        v if v.is_empty() => (p.results.clone(), crate::views::not_counted(p)),
                        v => (v, None),
                    };
                    let sums: Vec<&TelemetrySummary> = reps
                        .iter()
                        .flat_map(|r| r.telemetry_summary.iter().filter(|t| t.host == host))
                        .collect();
                    let mut head = column_head(p, &skip, &run.hosts);
                    if let Some(m) = mark {
                        head = format!("{head} ({m})");
                    }
                    let why = sums.is_empty().then(|| {
                        "no telemetry from this host was stored with the test's repetitions"
                            .to_string()
                    });
                    let uncounted = mark.is_some();
                    (
                        Column {
                            head,
                            sums,
                            why,
                            uncounted,
                        },
                        p,
                    )
                })
                .collect();
            if cols.iter().all(|(c, _)| c.sums.is_empty()) {
                continue;
            }
            let chunks: Vec<&[(Column, &Point)]> = cols.chunks(MAX_COLUMNS).collect();
            let parts = chunks.len();
            for (k, chunk) in chunks.into_iter().enumerate() {
                let part = if parts > 1 {
                    format!(
                        " (tests {}-{} of {})",
                        k * MAX_COLUMNS + 1,
                        k * MAX_COLUMNS + chunk.len(),
                        cols.len()
                    )
                } else {
                    String::new()
                };
                let roles: Option<Vec<String>> = many_hosts.then(|| {
                    chunk
                        .iter()
                        .map(|(_, p)| {
                            p.results
                                .first()
                                .map_or("-".to_string(), |r| role_in(run, r, host))
                        })
                        .collect()
                });
                let mut t = host_table(chunk, roles);
                t.table.caption = format!(
                    "{label}: per-CPU utilisation on {name} by test{part} (mpstat -P ALL's columns, % of each CPU), each the mean over the test's repetitions of the host's means over its measured time"
                );
                // This host's kernel's other names: its CPUs hold their work too.
                let with_mates: Vec<String> = std::iter::once(host)
                    .chain(model::kernel_mates(&run.hosts, host))
                    .map(String::from)
                    .collect();
                t.table
                    .notes
                    .extend(crate::hosts_view::shared_kernel_note(run, &with_mates));
                if !capacity_tests.is_empty() {
                    t.table.notes.push(format!(
                        "Left out, as capacity tests: {} (their CPUs are per step, in their views; one mean over every step together would mix loads from idle to saturation).",
                        capacity_tests.join(", ")
                    ));
                }
                out.push(t);
            }
        }
    }
    out
}

/// The table of one host over some columns.
fn host_table(cols: &[(Column, &Point)], roles: Option<Vec<String>>) -> CpuTable {
    let cols: Vec<&Column> = cols.iter().map(|(c, _)| c).collect();
    // Each column's CPUs, each the mean of its lines over the column's summaries.
    let means: Vec<Vec<CpuUtil>> = cols.iter().map(|c| mean_cpus(&c.sums)).collect();
    // Every CPU with a line in any column (never the all-CPU line, -1).
    let mut all: Vec<i32> = means.iter().flatten().map(|u| u.cpu).collect();
    all.sort_unstable();
    all.dedup();
    // A CPU's mean of `f` in a column: None where no summary there has its line.
    let cell = |m: &[CpuUtil], cpu: i32, f: Field| -> Option<f64> {
        m.iter().find(|u| u.cpu == cpu).map(f)
    };
    let busy: Field = CpuUtil::busy_pct;
    let shown: Vec<i32> = all
        .iter()
        .copied()
        .filter(|&cpu| {
            means
                .iter()
                .any(|m| cell(m, cpu, busy).is_some_and(|b| b >= BUSY_SHOWN_PCT))
        })
        .collect();
    let left: Vec<i32> = all.iter().copied().filter(|c| !shown.contains(c)).collect();
    let mut head = vec![String::new()];
    head.extend(cols.iter().map(|c| c.head.clone()));
    let mut rows: Vec<Vec<String>> = Vec::new();
    if let Some(roles) = roles {
        let mut r = vec!["Role".to_string()];
        r.extend(roles);
        rows.push(r);
    }
    // Why cells are n/a, each reason once with the columns it concerns.
    let mut why: Vec<(String, Vec<String>)> = Vec::new();
    let mut add_why = |reason: String, col: &str| match why.iter_mut().find(|w| w.0 == reason) {
        Some(w) => {
            if !w.1.iter().any(|c| c == col) {
                w.1.push(col.to_string());
            }
        }
        None => why.push((reason, vec![col.to_string()])),
    };
    for c in &cols {
        if let Some(w) = &c.why {
            add_why(w.clone(), &c.head);
        }
    }
    for &cpu in &shown {
        let extra = IF_ANY.iter().filter(|(_, f)| {
            means
                .iter()
                .any(|m| cell(m, cpu, *f).is_some_and(|v| v >= SHOWN_FROM))
        });
        for (name, f) in ALWAYS.iter().chain(extra) {
            let mut r = vec![format!("CPU{cpu} {name}")];
            for (c, m) in cols.iter().zip(&means) {
                r.push(match cell(m, cpu, *f) {
                    Some(v) => fixed(v, 2),
                    None => {
                        if c.why.is_none() {
                            add_why(
                                format!("CPU{cpu} has no line in this host's telemetry of the test (offline, or not sampled)"),
                                &c.head,
                            );
                        }
                        NA.to_string()
                    }
                });
            }
            rows.push(r);
        }
    }
    // %CPU used: per repetition the sum of its CPUs' busy %, in % of one CPU (the seed's
    // row), then the mean over the repetitions.
    let used = |c: &Column, of: &dyn Fn(i32) -> bool| -> Option<f64> {
        mean(
            &c.sums
                .iter()
                .filter_map(|t| t.cpus_sum(of, CpuUtil::busy_pct))
                .collect::<Vec<_>>(),
        )
    };
    if !left.is_empty() && !shown.is_empty() {
        let mut r = vec![match shown.len() {
            1 => "%CPU used, the CPU shown".to_string(),
            n => format!("%CPU used, the {n} CPUs shown"),
        }];
        r.extend(
            cols.iter()
                .map(|c| used(c, &|cpu| shown.contains(&cpu)).map_or(NA.into(), |v| fixed(v, 2))),
        );
        rows.push(r);
    }
    let mut r = vec![format!("%CPU used, all {} CPUs", all.len())];
    r.extend(cols.iter().map(|c| match used(c, &|_| true) {
        Some(v) => fixed(v, 2),
        None => {
            if c.why.is_none() {
                add_why(
                    "no per-CPU line in this host's telemetry of the test".into(),
                    &c.head,
                );
            }
            NA.into()
        }
    }));
    rows.push(r);
    let mut notes: Vec<String> = why
        .into_iter()
        .map(|(reason, cols)| format!("{NA} in {}: {reason}.", cols.join(", ")))
        .collect();
    if !left.is_empty() {
        notes.push(format!(
            "Left out, busy under {BUSY_SHOWN_PCT}% (100 - %idle - %iowait) in every test: CPU {} ({} of {}); their time is in %CPU used, all CPUs.",
            cpu_ranges(&left),
            left.len(),
            all.len()
        ));
    }
    if cols.iter().any(|c| c.uncounted) {
        notes.push(
            "A test marked failed, interrupted or invalid has no repetition that counts: its column is what the host measured up to where it stopped, in no headline figure."
                .into(),
        );
    }
    notes.push(
        "%CPU used: the sum over the CPUs of 100 - %idle - %iowait, in % of one CPU (the seed's row): on a VM it counts %steal, time the hypervisor gave to another guest, as used (a test with more than 5% on a CPU is flagged `steal`); %nice, %iowait and %steal are shown for a CPU only where a test has some."
            .into(),
    );
    CpuTable {
        table: HostTable {
            caption: String::new(),
            groups: vec![],
            head,
            rows,
            text_cols: 1,
            notes,
        },
        shown: shown.len(),
        cpus: all.len(),
    }
}

/// The tables as HTML: each in a `<details>` block, open unless it shows more than
/// [`OPEN_UP_TO_CPUS`] CPUs, its summary saying what it holds. Empty without telemetry.
pub fn cpu_tables_html(runs: &[RunRecord]) -> String {
    let tables = cpu_tables(runs);
    if tables.is_empty() {
        return String::new();
    }
    let mut h = String::from(r#"<h3 id="cpu-by-test">Per CPU, by test</h3>"#);
    for t in &tables {
        let open = if t.shown <= OPEN_UP_TO_CPUS {
            " open"
        } else {
            ""
        };
        h.push_str(&format!(
            "<details{open}><summary>{}</summary>{}</details>",
            esc(&summary_line(t)),
            table_html(&t.table)
        ));
    }
    h
}

/// What a folded table holds, said on its fold.
fn summary_line(t: &CpuTable) -> String {
    let caption = t
        .table
        .caption
        .split(" (mpstat")
        .next()
        .unwrap_or(&t.table.caption);
    format!(
        "{caption}: {} of {} CPUs shown (busy {BUSY_SHOWN_PCT}% or more in a test)",
        t.shown, t.cpus
    )
}

/// The tables as Markdown.
pub fn cpu_tables_markdown(runs: &[RunRecord]) -> String {
    let tables = cpu_tables(runs);
    if tables.is_empty() {
        return String::new();
    }
    let mut m = String::from("\n### Per CPU, by test\n");
    for t in &tables {
        m.push_str(&table_md(&t.table));
    }
    m
}
