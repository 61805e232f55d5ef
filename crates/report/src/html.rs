//! The self-contained HTML report: inline CSS, inline SVG, no scripts, nothing fetched,
//! so it opens offline and can be mailed or archived as one file. Every string that comes
//! from a host, a plan or a label goes through `esc`.

use std::fmt::Write as _;

use model::{Flag, RunRecord, Severity};

use crate::charts::{only_workload, pct_over, workloads, Chart};
use crate::compare::{compare, Comparison};
use crate::derive::{
    self, points, run_labels, throughput_scale, AbsentMarks, DiffColumn, PowerBasis, PowerFigure,
};
use crate::fmt::{esc, fixed, latency_ns, num, watts};
use crate::selection::Selection;

const CSS: &str = r#"
:root{--ink:#1d2330;--muted:#5b6576;--line:#d9dee7;--soft:#f4f6f9;--accent:#0072B2;--warn:#a15c00;--bad:#b3261e}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:var(--ink);background:#fff}
main{max-width:1180px;margin:0 auto;padding:28px 32px 60px}
header.top{border-bottom:3px solid var(--accent);padding-bottom:14px;margin-bottom:22px}
h1{font-size:26px;margin:0 0 4px}
h2{font-size:20px;margin:34px 0 10px;padding-top:8px;border-top:1px solid var(--line)}
h3{font-size:16px;margin:22px 0 8px}
p.sub,.muted{color:var(--muted)}
nav.toc{background:var(--soft);border:1px solid var(--line);border-radius:6px;padding:10px 16px;margin:14px 0}
nav.toc a{margin-right:14px;color:var(--accent);text-decoration:none}
table{border-collapse:collapse;margin:8px 0 14px;font-size:13px;width:auto;max-width:100%}
th,td{border:1px solid var(--line);padding:5px 9px;vertical-align:top}
th{background:var(--soft);text-align:left;font-weight:600}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.total td{font-weight:700;background:#fbfcfe}
tr.mean td{font-weight:700;border-top:2px solid var(--ink)}
caption{caption-side:top;text-align:left;font-weight:600;padding:4px 0;color:var(--ink)}
.flag{display:block;margin:4px 0 0;padding:1px 6px;border-radius:3px;font-size:11px;font-weight:600;text-align:left;white-space:normal;min-width:220px;max-width:320px}
.flag.warning{background:#fff4e0;color:var(--warn);border:1px solid #f0c27a}
.flag.invalid{background:#fde8e6;color:var(--bad);border:1px solid #eea59d}
.note{background:#fff8e6;border-left:4px solid #e6a700;padding:8px 12px;margin:10px 0;color:#5a4300}
.ok{background:#e9f6ee;border-left:4px solid #2e8b57;padding:8px 12px;margin:10px 0}
.bad{background:#fde8e6;border-left:4px solid var(--bad);padding:8px 12px;margin:10px 0}
figure{margin:12px 0 22px;padding:8px;border:1px solid var(--line);border-radius:6px;display:inline-block;background:#fff;max-width:100%}
figure svg{max-width:100%;height:auto;display:block}
figcaption{font-size:12px;color:var(--muted);padding:4px 4px 0}
.grid{display:flex;flex-wrap:wrap;gap:12px}
code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;background:var(--soft);padding:1px 4px;border-radius:3px;word-break:break-all}
.modelled{color:var(--bad);font-weight:600}
.component{color:var(--warn);font-weight:600}
.scroll{overflow-x:auto;max-width:100%;margin:8px 0 14px}
.scroll table{max-width:none;margin:0}
th.fact,td.fact{white-space:nowrap;min-width:16em}
td.fact code{word-break:normal}
details{margin:8px 0 14px}
footer{margin-top:40px;color:var(--muted);font-size:12px;border-top:1px solid var(--line);padding-top:10px}
@media print{main{max-width:none;padding:0}figure{break-inside:avoid}h2{break-before:auto}}
"#;

/// Flags as chips of their codes, each code once ([`derive::distinct_codes`]), each
/// message in its tooltip: a message repeated in every row buried the figures; the
/// results tables say each once below them ([`derive::warnings_below`]).
fn flag_chips(flags: &[Flag]) -> String {
    derive::distinct_codes(flags)
        .into_iter()
        .map(|f| {
            let cls = match f.severity {
                Severity::Warning => "warning",
                Severity::Invalid => "invalid",
            };
            // The one chip of a code stands for every flag of it: its tooltip gives each
            // distinct message, one a line (two repetitions' `other_load` can name
            // different processes).
            let mut said: Vec<&str> = Vec::new();
            for g in flags.iter().filter(|g| g.code == f.code) {
                if !said.contains(&g.message.as_str()) {
                    said.push(&g.message);
                }
            }
            format!(
                r#"<span class="flag {cls}" title="{}">&#9888; {}</span>"#,
                esc(&said.join("\n")),
                esc(&f.code)
            )
        })
        .collect::<Vec<_>>()
        .join("")
}

/// A power figure with its basis, or "absent" (the reason is listed once under the table
/// by `absent_notes`, not repeated in every cell; the mark says which note is the cell's).
fn power_cell(p: &Result<PowerFigure, String>, marks: &AbsentMarks) -> String {
    match p {
        Ok(p) => {
            format!(
                r#"{} W{}<br><span class="muted">{}</span>"#,
                esc(&watts(p.watts)),
                basis_tag(Some(p.basis)),
                esc(&p.source)
            )
        }
        Err(why) => format!(r#"<span class="muted">absent{}</span>"#, marks.mark(why)),
    }
}

/// "* Power absent on every run: reason" (or "for RUN, RUN"), once per reason, with the
/// reason's mark (`*2`).
fn absent_notes<'a>(
    labels: &[String],
    items: impl Iterator<Item = (usize, &'a Result<PowerFigure, String>)>,
    marks: &AbsentMarks,
) -> String {
    derive::absent_reasons(labels, items)
        .iter()
        .map(|(who, why)| {
            format!(
                r#"<div class="note">{} Power absent {}: {}</div>"#,
                marks.mark(why),
                esc(who),
                esc(why)
            )
        })
        .collect()
}

fn figure(c: &Chart) -> String {
    match &c.svg {
        Some(svg) => format!(
            r#"<figure>{svg}<figcaption>{t} &middot; <code>{f}</code>{n}</figcaption></figure>"#,
            t = esc(&c.title),
            f = esc(&c.file),
            n = c
                .note
                .as_ref()
                .map(|n| format!(r#"<br><span class="note">{}</span>"#, esc(n)))
                .unwrap_or_default()
        ),
        None => format!(
            r#"<div class="note"><b>{}</b>: {}</div>"#,
            esc(&c.title),
            esc(c.note.as_deref().unwrap_or("not available"))
        ),
    }
}

/// The whole report as one HTML document.
pub fn html(runs: &[RunRecord], tco: Option<&tco::TcoResult>) -> String {
    html_with(runs, tco, &Selection::default())
}

/// [`html`] with the summaries laid out as `sel` chooses (tests, sweep point, baseline,
/// extrapolated columns).
pub fn html_with(runs: &[RunRecord], tco: Option<&tco::TcoResult>, sel: &Selection) -> String {
    let mut h = String::new();
    let labels = run_labels(runs);
    let title = derive::report_title(&labels);
    let _ = write!(
        h,
        r#"{start}{t}</title><style>{CSS}</style></head><body><main>"#,
        t = esc(&title),
        start = crate::HTML_START
    );
    let _ = write!(h, r#"<header class="top"><h1>{}</h1>"#, esc(&title));
    let generated = runs
        .iter()
        .filter_map(|r| r.finished_at.or(Some(r.created_at)))
        .max();
    let _ = write!(
        h,
        r#"<p class="sub">{} run(s){}. Every figure below is computed from the stored runs; latency percentiles come from merged HdrHistograms, never averaged.</p></header>"#,
        runs.len(),
        generated
            .map(|g| format!(
                ", latest finished {}",
                esc(&g.format("%Y-%m-%d %H:%M UTC").to_string())
            ))
            .unwrap_or_default()
    );
    let wls = workloads(runs);
    let all_charts = crate::charts::charts_with(runs, sel);
    let tel = crate::views::telemetry_views(runs);
    // Table of contents.
    h.push_str(r##"<nav class="toc"><b>Contents:</b> <a href="#runs">Runs</a>"##);
    if runs.len() > 1 {
        h.push_str(r##"<a href="#compare">Comparison</a>"##);
    }
    for wl in &wls {
        let _ = write!(h, r##"<a href="#wl-{0}">{0}</a>"##, esc(wl));
    }
    if crate::hosts_view::has_hosts(runs) {
        h.push_str(r##"<a href="#hosts">Hosts</a>"##);
    }
    h.push_str(r##"<a href="#cpu">CPU</a>"##);
    if !tel.is_empty() {
        h.push_str(r##"<a href="#telemetry">Host telemetry</a>"##);
    }
    h.push_str(r##"<a href="#disclosure">Systems</a>"##);
    if tco.is_some() {
        h.push_str(r##"<a href="#tco">TCO</a>"##);
    }
    h.push_str("</nav>");
    if runs.is_empty() {
        h.push_str(r#"<div class="note">No runs were given: run <code>rackbench run kv ...</code> first, then <code>rackbench report</code>.</div>"#);
    }
    runs_table(&mut h, runs, &labels);
    if runs.len() > 1 {
        h.push_str(r#"<h2 id="compare">Comparison</h2>"#);
        // Only runs of the same workload and tests are compared (mem vs net says nothing).
        let (pairs, alone) = crate::views::comparable_pairs(runs);
        let mut unjudged = false;
        for (a, b) in pairs {
            let c = compare(
                &crate::compare::replications(&runs[a]),
                &crate::compare::replications(&runs[b]),
            );
            unjudged |= c
                .rows
                .iter()
                .any(|r| r.verdict.starts_with("not enough repetitions"));
            comparison_html(&mut h, &c, (&labels[a], &labels[b]));
        }
        if unjudged {
            let _ = write!(
                h,
                r#"<p class="muted">{}</p>"#,
                esc(crate::compare::REPETITIONS_NOTE)
            );
        }
        if !alone.is_empty() {
            let _ = write!(
                h,
                r#"<div class="note">Not compared (no earlier run measured the same workload and tests at the same parameters): {}</div>"#,
                esc(&alone
                    .iter()
                    .map(|i| labels[*i].as_str())
                    .collect::<Vec<_>>()
                    .join(", "))
            );
        }
    }
    for wl in &wls {
        let wruns = only_workload(runs, wl);
        workload_section(&mut h, &wruns, wl, &all_charts, sel);
    }
    h.push_str(&crate::hosts_view::hosts_html(runs));
    h.push_str(r#"<h2 id="cpu">CPU utilisation</h2>"#);
    let _ = write!(
        h,
        r#"<p class="muted">{}</p><div class="grid">"#,
        esc(crate::charts::CPU_SECTION_NOTE)
    );
    let cpu: Vec<&Chart> = all_charts.iter().filter(|c| c.section == "cpu").collect();
    if cpu.is_empty() {
        let _ = write!(
            h,
            r#"<div class="note">{}</div>"#,
            esc(crate::charts::no_cpu_telemetry(runs))
        );
    }
    for c in cpu {
        h.push_str(&figure(c));
    }
    h.push_str("</div>");
    h.push_str(&crate::cpu_table::cpu_tables_html(runs));
    if !tel.is_empty() {
        h.push_str(r#"<h2 id="telemetry">Host telemetry</h2>"#);
        for v in &tel {
            h.push_str(&crate::views::view_html(v));
        }
    }
    disclosure_table(&mut h, runs, &labels);
    if let Some(t) = tco {
        tco_html(&mut h, t);
    }
    let _ = write!(
        h,
        r#"<footer>{} Self-contained: no scripts, no network.</footer></main></body></html>"#,
        esc(&crate::sources_text(runs, tco))
    );
    h
}

fn runs_table(h: &mut String, runs: &[RunRecord], labels: &[String]) {
    h.push_str(r#"<h2 id="runs">Runs</h2><table><tr><th>Run</th><th>Label</th><th>Started</th><th>Status</th><th>Results</th><th>Command</th></tr>"#);
    for (r, l) in runs.iter().zip(labels) {
        let _ = write!(
            h,
            r#"<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}{}</td><td class="n">{}</td><td><code>{}</code></td></tr>"#,
            esc(&r.id),
            esc(l),
            esc(&r.created_at.format("%Y-%m-%d %H:%M:%S UTC").to_string()),
            // As `runs` gives it: `ok, 1 of 1 invalid`, not `Ok` over no figure that stands.
            esc(&r.status_text()),
            r.error
                .as_ref()
                .map(|e| format!(": {}", esc(e)))
                .unwrap_or_default(),
            r.results.len(),
            esc(&r.command)
        );
    }
    h.push_str("</table>");
    for (r, l) in runs.iter().zip(labels) {
        if let Some(n) = derive::not_run_note(r, l) {
            let _ = write!(h, r#"<div class="note">{}</div>"#, esc(&n));
        }
    }
}

/// `names`: the report's names of the two columns, A's then B's (two runs under one
/// label are told apart there by their ids).
fn comparison_html(h: &mut String, c: &Comparison, names: (&str, &str)) {
    let _ = write!(
        h,
        r#"<h3>{} (B) vs {} (A)</h3>"#,
        esc(names.1),
        esc(names.0)
    );
    for u in c.unfinished_notes() {
        let _ = write!(
            h,
            r#"<div class="note"><b>Did not finish:</b> {}</div>"#,
            esc(&u)
        );
    }
    let cls = if c.comparability.differences.is_empty() {
        "ok"
    } else if c.comparability.like_for_like {
        "note"
    } else {
        "bad"
    };
    let _ = write!(
        h,
        r#"<div class="{cls}"><b>Comparability:</b> {}</div>"#,
        esc(&c.comparability.verdict)
    );
    if !c.comparability.differences.is_empty() {
        h.push_str("<table><tr><th>Setting</th><th>Kind</th><th>A</th><th>B</th></tr>");
        for d in &c.comparability.differences {
            let _ = write!(
                h,
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&d.key),
                esc(&d.category),
                esc(&d.a),
                esc(&d.b)
            );
        }
        h.push_str("</table>");
    }
    if c.rows.is_empty() {
        h.push_str(r#"<div class="note">No sweep point was measured in both A and B.</div>"#);
        return;
    }
    h.push_str(r#"<table><caption>Difference = (B - A) / A; 95% CI from Welch's t-test over the runs where both sides have two or more, or a paired one over a run's interleaved variants</caption><tr><th>Point</th><th>Metric</th><th>A mean (n)</th><th>B mean (n)</th><th>Difference</th><th>95% CI</th><th>Verdict</th></tr>"#);
    for r in &c.rows {
        let _ = write!(
            h,
            r#"<tr><td>{}</td><td>{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td>{}</td></tr>"#,
            esc(&r.point),
            esc(&r.metric_text()),
            esc(&r.a_text()),
            esc(&r.b_text()),
            esc(&r.diff_text()),
            esc(&r.ci_text()),
            esc(&r.verdict)
        );
    }
    h.push_str("</table>");
    for n in c.table_notes() {
        let _ = write!(h, r#"<p class="note">{}</p>"#, esc(&n));
    }
    if !c.warnings.is_empty() {
        let _ = write!(
            h,
            r#"<div class="note">{}<ul>"#,
            esc(crate::compare::WARNINGS_NOTE)
        );
        for w in &c.warnings {
            let _ = write!(h, "<li>{}: {}</li>", esc(&w.point), esc(&w.text()));
        }
        h.push_str("</ul></div>");
    }
}

fn workload_section(h: &mut String, runs: &[RunRecord], wl: &str, all: &[Chart], sel: &Selection) {
    let _ = write!(h, r#"<h2 id="wl-{0}">Workload: {0}</h2>"#, esc(wl));
    let s = derive::summary_with(runs, sel);
    let marks = AbsentMarks::of_section(runs, &s);
    // The summary's columns (runs, then extrapolated ones); the tables after it are of
    // the measured runs only.
    let labels = &s.runs;
    let run_labels = run_labels(runs);
    // Table A1: per test, performance and power per column; geomean and arithmetic
    // mean; a Difference column for each column against the baseline.
    let peak = if s.selection.is_empty() {
        String::new()
    } else {
        format!(" ({})", s.selection)
    };
    if let Some(fixed) = derive::fixed_line(runs) {
        let _ = write!(
            h,
            r#"<p class="muted">Fixed parameters: {}</p>"#,
            esc(&fixed)
        );
    }
    if let Some(at) = derive::placement_line(runs) {
        let _ = write!(
            h,
            r#"<p class="muted">Where each run ran: {}</p>"#,
            esc(&at)
        );
    }
    if let Some(set) = derive::column_line(runs, &derive::peak_params(runs)) {
        let _ = write!(
            h,
            r#"<p class="muted">{} {}</p>"#,
            esc(derive::COLUMN_SETTINGS),
            esc(&set)
        );
    }
    // Where the table starts: a workload of capacity tests only has no row, and its table
    // (a header over nothing) is taken out again; the notes below say why.
    let table_start = h.len();
    let _ = write!(
        h,
        r#"<table><caption>Summary of measured data{}</caption><tr><th rowspan="2">Test</th>"#,
        esc(&peak)
    );
    for (i, l) in labels.iter().enumerate() {
        let class = if i >= s.measured {
            r#" class="extrapolated""#
        } else {
            ""
        };
        let _ = write!(h, r#"<th colspan="2"{class}>{}</th>"#, esc(l));
    }
    for d in &s.differences {
        let _ = write!(
            h,
            r#"<th rowspan="2" class="diff">Difference<br>{}</th>"#,
            esc(&d.label)
        );
    }
    h.push_str("</tr><tr>");
    for _ in labels {
        let _ = write!(h, "<th>{}</th><th>Power</th>", esc(&s.perf_heading()));
    }
    h.push_str("</tr>");
    let diff_cells = |pick: &dyn Fn(&derive::DiffColumn) -> String| -> String {
        s.differences
            .iter()
            .map(|d| format!(r#"<td class="n">{}</td>"#, esc(&pick(d))))
            .collect()
    };
    for (ri, row) in s.rows.iter().enumerate() {
        let _ = write!(h, "<tr><td>{}</td>", esc(&s.row_name(row, wl)));
        for i in 0..labels.len() {
            let chosen = if row.chosen[i].is_empty() {
                String::new()
            } else {
                format!(r#"<br><span class="muted">{}</span>"#, esc(&row.chosen[i]))
            };
            let _ = write!(
                h,
                r#"<td class="n">{}{chosen}{}</td><td>{}</td>"#,
                match (row.perf[i], &row.perf_missing[i]) {
                    (Some(v), _) => esc(&num(v)),
                    // Why is said once under the table.
                    (None, Some(_)) => r#"<span class="muted">absent&sect;</span>"#.into(),
                    (None, None) => "-".to_string(),
                },
                flag_chips(&row.flags[i]),
                if row.perf[i].is_some() {
                    power_cell(&row.power[i], &marks)
                } else {
                    "-".to_string()
                }
            );
        }
        h.push_str(&diff_cells(&|d| s.diff_cell(d, ri)));
        h.push_str("</tr>");
    }
    let (geo, pmean) = (s.geomean_or_why(), s.power_mean_or_why());
    // A missing mean is marked; why is said once under the table.
    let absent = r#"<span class="muted">absent&dagger;</span>"#;
    if s.shows_geomean() {
        let _ = write!(
            h,
            r#"<tr class="mean"><td>{}</td>"#,
            esc(&s.geomean_label())
        );
        for g in geo.iter().take(labels.len()) {
            let _ = write!(
                h,
                r#"<td class="n">{}</td><td>n/a</td>"#,
                g.as_ref().map_or(absent.to_string(), |v| esc(&num(*v)))
            );
        }
        h.push_str(&diff_cells(&|d| s.geomean_diff_cell(d)));
        h.push_str("</tr>");
    }
    // The arithmetic mean is of power: a row of n/a says nothing when no run has power.
    let any_power = s.power_mean.iter().any(Option::is_some);
    if any_power {
        h.push_str(r#"<tr class="mean"><td>Arithmetic mean</td>"#);
    }
    for i in (0..labels.len()).filter(|_| any_power) {
        let p = match (&pmean[i], s.power_basis[i]) {
            (Ok(w), b @ Some(_)) => format!("{} W{}", esc(&watts(*w)), basis_tag(b)),
            _ => absent.to_string(),
        };
        let _ = write!(h, r#"<td>n/a</td><td>{p}</td>"#);
    }
    if any_power {
        h.push_str(&diff_cells(&|d| DiffColumn::cell(d.power_mean)));
        h.push_str("</tr>");
    }
    h.push_str("</table>");
    if s.rows.is_empty() {
        h.truncate(table_start);
    }
    if s.any_flags() {
        let _ = write!(
            h,
            r#"<p class="muted">{}</p>"#,
            esc(derive::SUMMARY_FLAGS_NOTE)
        );
    }
    for n in &s.notes {
        let _ = write!(h, r#"<p class="muted">{}</p>"#, esc(n));
    }
    h.push_str(&absent_notes(
        labels,
        s.rows.iter().flat_map(|r| r.power.iter().enumerate()),
        &marks,
    ));
    for (row, who, why) in derive::absent_figures(labels, &s.rows) {
        let _ = write!(
            h,
            r#"<div class="note">&sect; {} absent {}: {}</div>"#,
            esc(&row),
            esc(&who),
            esc(&why)
        );
    }
    if let Some(n) = &s.geomean_note {
        let _ = write!(h, r#"<p class="muted">{}</p>"#, esc(n));
    }
    if let Some(n) = s.power_mean_said() {
        let _ = write!(h, r#"<p class="muted">{}</p>"#, esc(n));
    }
    for n in s.absent_mean_notes() {
        let _ = write!(h, r#"<div class="note">&dagger; {}</div>"#, esc(&n));
    }
    if let Some(n) = s.left_out_note() {
        let _ = write!(h, r#"<div class="note">{}</div>"#, esc(&n));
    }
    let mine = |sec: &'static str| {
        all.iter()
            .filter(move |c| c.workload == wl && c.section == sec)
    };
    h.push_str(r#"<div class="grid">"#);
    for c in mine("results") {
        h.push_str(&figure(c));
    }
    h.push_str("</div>");
    h.push_str(&crate::views::views_html(runs, wl));
    h.push_str(&crate::hosts_view::pairs_html(runs, wl));
    efficiency_table(h, runs, &run_labels, &marks, sel);
    h.push_str(r#"<div class="grid">"#);
    for c in mine("power") {
        h.push_str(&figure(c));
    }
    h.push_str("</div>");
    let sweeps: Vec<&Chart> = mine("sweep").collect();
    if !sweeps.is_empty() {
        h.push_str("<h3>Sweeps</h3><div class=\"grid\">");
        for c in sweeps {
            h.push_str(&figure(c));
        }
        h.push_str("</div>");
    }
    h.push_str("<h3>Latency</h3><div class=\"grid\">");
    for c in mine("latency") {
        h.push_str(&figure(c));
    }
    h.push_str("</div>");
    thresholds_table(h, runs, &run_labels, sel);
    results_tables(h, runs, &run_labels, &marks);
}

/// The Aerospike study's view ([`crate::charts::thresholds`]): per test, a row per
/// threshold, the test's name once beside them.
fn thresholds_table(h: &mut String, runs: &[RunRecord], labels: &[String], sel: &Selection) {
    let groups = crate::charts::thresholds(runs, sel);
    if groups.is_empty() {
        return;
    }
    let _ = write!(
        h,
        r#"<table><caption>{}</caption><tr><th>Test</th><th>Threshold</th>"#,
        esc(&crate::charts::thresholds_caption(&sel.for_runs(runs)))
    );
    for l in labels {
        let _ = write!(h, "<th>{}</th>", esc(l));
    }
    h.push_str("</tr>");
    for g in &groups {
        for (k, (what, cells)) in g.rows.iter().enumerate() {
            if k == 0 {
                let _ = write!(
                    h,
                    r#"<tr><td rowspan="{}">{}</td>"#,
                    g.rows.len(),
                    esc(&g.test)
                );
            } else {
                h.push_str("<tr>");
            }
            let _ = write!(h, "<td>{}</td>", esc(what));
            for c in cells {
                let _ = write!(h, r#"<td class="n">{}</td>"#, esc(c));
            }
            h.push_str("</tr>");
        }
    }
    h.push_str("</table>");
}

fn efficiency_table(
    h: &mut String,
    runs: &[RunRecord],
    labels: &[String],
    marks: &AbsentMarks,
    sel: &Selection,
) {
    let all = derive::efficiency_rows_with(runs, sel);
    // Escaped once for the tables' captions.
    let points = esc(&sel.for_runs(runs).best_point_words());
    // One table per unit (a memory run's GB/s and ns, a crypto run's MB/s and signs/s): a
    // column's unit is its header's; a latency's table has no per-watt columns.
    for (unit, throughput) in derive::units_of(&all) {
        let rows: Vec<_> = all
            .iter()
            .filter(|r| r.3.unit == unit && r.3.throughput == throughput)
            .collect();
        if throughput {
            efficiency_unit_table(h, &rows, &unit, labels, marks, &points);
        } else {
            latency_unit_table(h, &rows, &unit, labels, marks, &points);
        }
    }
    for (who, why) in derive::cpu_used_absent(labels, &all) {
        let _ = write!(
            h,
            r#"<div class="note">&dagger; %CPU used absent {}: {}</div>"#,
            esc(&who),
            esc(&why)
        );
    }
}

/// The tag a figure of power (or derived from it) carries: none when measured on the
/// whole server.
fn basis_tag(b: Option<PowerBasis>) -> &'static str {
    match b {
        None | Some(PowerBasis::Measured) => "",
        Some(PowerBasis::Modelled) => r#" <span class="modelled">modelled</span>"#,
        Some(PowerBasis::Component) => r#" <span class="component">component</span>"#,
    }
}

/// A figure derived from power, with its power's tag, or "absent" with the mark of why:
/// the power's own (`*`, or `*2` among several: [`AbsentMarks`]) when there is no power,
/// else `‡` (said under the table).
fn per_w_cell(
    v: &Result<f64, String>,
    scale: f64,
    e: &derive::Efficiency,
    marks: &AbsentMarks,
) -> String {
    match (v, &e.power) {
        (Ok(v), _) => format!("{}{}", esc(&num(v * scale)), basis_tag(e.basis())),
        (Err(_), Err(why)) => format!(r#"<span class="muted">absent{}</span>"#, marks.mark(why)),
        (Err(_), Ok(_)) => r#"<span class="muted">absent&Dagger;</span>"#.to_string(),
    }
}

/// A %CPU per unit figure, or "absent" with the mark of why: the %CPU used's own (`†`)
/// when there is none, else `‡`.
fn cpu_per_cell(v: &Result<f64, String>, scale: f64, e: &derive::Efficiency) -> String {
    match (v, &e.cpu_used) {
        (Ok(v), _) => esc(&num(v * scale)),
        (Err(_), Err(_)) => r#"<span class="muted">absent&dagger;</span>"#.to_string(),
        (Err(_), Ok(_)) => r#"<span class="muted">absent&Dagger;</span>"#.to_string(),
    }
}

fn efficiency_unit_table(
    h: &mut String,
    rows: &[&(String, usize, String, derive::Efficiency)],
    unit: &str,
    labels: &[String],
    marks: &AbsentMarks,
    points: &str,
) {
    // One scale for the three per-unit columns, from the throughput they divide by.
    let perfs: Vec<f64> = rows.iter().map(|r| r.3.perf).collect();
    let (sw, pw) = throughput_scale(&perfs);
    let heads = [
        "Perf/W".to_string(),
        format!("W per {pw}{unit}"),
        format!("W above idle per {pw}{unit}"),
        format!("%CPU per {pw}{unit}"),
    ];
    let _ = write!(
        h,
        r#"<table><caption>Efficiency at {points}: perf/W, and watts and %CPU per unit of throughput</caption><tr><th>Test</th><th>Run</th><th>Throughput ({u})</th><th>Power</th><th>Idle</th><th>{}</th><th>{}</th><th>{}</th><th>%CPU used</th><th>{}</th></tr>"#,
        esc(&heads[0]),
        esc(&heads[1]),
        esc(&heads[2]),
        esc(&heads[3]),
        u = esc(unit)
    );
    for (row, i, point, e) in rows.iter().copied() {
        let _ = write!(
            h,
            r#"<tr><td>{}</td><td>{}<br><span class="muted">{}</span></td><td class="n">{}</td><td>{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td></tr>"#,
            esc(row),
            esc(&labels[*i]),
            esc(point),
            esc(&num(e.perf)),
            power_cell(&e.power, marks),
            match &e.idle_w {
                Ok(w) => format!(
                    "{} W{}{}",
                    esc(&watts(*w)),
                    basis_tag(e.basis()),
                    if e.idle_warnings.is_empty() {
                        ""
                    } else {
                        r#" <span class="flag warning">&#9888;</span>"#
                    }
                ),
                Err(_) => per_w_cell(&e.idle_w, 1.0, e, marks),
            },
            per_w_cell(&e.perf_per_w, 1.0, e, marks),
            per_w_cell(&e.w_per_perf, sw, e, marks),
            per_w_cell(&e.dw_per_perf, sw, e, marks),
            cpu_cell(&e.cpu_used),
            cpu_per_cell(&e.cpu_pct_per_perf, sw, e)
        );
    }
    let _ = write!(
        h,
        r#"</table><p class="muted">Throughput and perf/W in {u} and {u} per W; a figure derived from modelled (or component-only) power is marked as that power is. {}</p>"#,
        esc(derive::CPU_USED_MEANING),
        u = esc(unit)
    );
    for n in derive::efficiency_absences(rows, Some("Idle"), &heads, labels) {
        let _ = write!(h, r#"<div class="note">&Dagger; {}</div>"#, esc(&n));
    }
    for w in derive::idle_warnings(rows.iter().map(|r| &r.3)) {
        let _ = write!(h, r#"<div class="note">&#9888; Idle: {}</div>"#, esc(w));
    }
    for n in derive::loadgen_power_notes(rows.iter().map(|r| &r.3)) {
        let _ = write!(h, r#"<div class="note">&#9888; Power: {}</div>"#, esc(&n));
    }
}

/// A latency headline's table: the latency with the power and CPU it ran at, and no
/// per-watt column (a latency per watt is no efficiency).
fn latency_unit_table(
    h: &mut String,
    rows: &[&(String, usize, String, derive::Efficiency)],
    unit: &str,
    labels: &[String],
    marks: &AbsentMarks,
    points: &str,
) {
    let _ = write!(
        h,
        r#"<table><caption>Latency at {points}, with the power and CPU it ran at</caption><tr><th>Test</th><th>Run</th><th>Latency ({})</th><th>Power</th><th>%CPU used</th></tr>"#,
        esc(unit)
    );
    for (row, i, point, e) in rows.iter().copied() {
        let _ = write!(
            h,
            r#"<tr><td>{}</td><td>{}<br><span class="muted">{}</span></td><td class="n">{}</td><td>{}</td><td class="n">{}</td></tr>"#,
            esc(row),
            esc(&labels[*i]),
            esc(point),
            esc(&num(e.perf)),
            power_cell(&e.power, marks),
            cpu_cell(&e.cpu_used),
        );
    }
    let _ = write!(
        h,
        r#"</table><p class="muted">No perf/W, W or %CPU per unit here: {}.</p>"#,
        esc(derive::NOT_A_THROUGHPUT)
    );
}

/// A %CPU used figure with whose CPU it is, or "absent" (the reason listed once under
/// the table).
fn cpu_cell(c: &Result<derive::CpuFigure, String>) -> String {
    match c {
        Ok(c) => format!(
            r#"{}%<br><span class="muted">{}</span>"#,
            fixed(c.pct, 1),
            esc(&c.basis.label())
        ),
        Err(_) => r#"<span class="muted">absent&dagger;</span>"#.to_string(),
    }
}

fn results_tables(h: &mut String, runs: &[RunRecord], labels: &[String], marks: &AbsentMarks) {
    // Each point's power, as the summary takes it at the best one: the seed's power
    // against instances (Figure A3) reads off this column. Why it is absent, once below.
    let mut powers: Vec<(usize, Result<PowerFigure, String>)> = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let pts = points(i, run);
        if pts.is_empty() {
            continue;
        }
        let _ = write!(
            h,
            r#"<table><caption>All results: {}</caption><tr><th>Test</th><th>Parameters</th><th>n</th><th>Headline (mean &plusmn; sd)</th><th>CV</th><th>Power</th><th>p50</th><th>p99</th><th>p99.9</th><th>max</th><th>&gt; 1 ms</th><th>Latency kind</th><th>Warnings</th></tr>"#,
            esc(&labels[i])
        );
        let mut flagged: Vec<(String, Vec<Flag>)> = Vec::new();
        for p in pts {
            let s = p.headline();
            let head = s
                .as_ref()
                .map_or_else(|| esc(&p.no_headline_cell()), |s| esc(&p.headline_cell(s)));
            let cv = s
                .as_ref()
                .and_then(|s| s.cv_pct())
                .map_or("-".to_string(), |c| format!("{}%", fixed(c, 1)));
            let lead = format!(
                r#"<tr><td>{}</td><td>{}</td><td class="n">{}</td><td class="n">{head}</td><td class="n">{cv}</td>"#,
                esc(&p.test),
                esc(&p.param_label(&[])),
                esc(&p.reps_cell()),
            );
            if let Some(phase) = p.capacity_phase() {
                // A curve of steps: its latency is per offered rate, in its own view.
                let _ = write!(
                    h,
                    r#"{lead}<td colspan="7" class="muted">{}</td><td>{}</td></tr>"#,
                    esc(&crate::views::per_step(&p.workload, phase)),
                    flag_chips(&p.flags())
                );
                flagged.push((format!("{} {}", p.test, p.param_label(&[])), p.flags()));
                continue;
            }
            let f = p.power();
            let pw = power_cell(&f, marks);
            powers.push((i, f));
            let lat = p.latency();
            let q = |x: f64| {
                lat.as_ref().map_or("-".to_string(), |(_, _, hh)| {
                    latency_ns(hh.value_at_quantile(x) as f64)
                })
            };
            // The Aerospike study's threshold view: share of operations slower than 1 ms.
            let over = lat.as_ref().map_or("-".to_string(), |(_, _, hh)| {
                format!("{}%", crate::fmt::share(pct_over(hh, 1_000_000), 2))
            });
            let _ = write!(
                h,
                r#"{lead}<td class="n">{pw}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{over}</td><td>{}</td><td>{}</td></tr>"#,
                q(0.5),
                q(0.99),
                q(0.999),
                lat.as_ref()
                    .map_or("-".to_string(), |(_, _, hh)| latency_ns(hh.max() as f64)),
                esc(&lat.as_ref().map_or("-".to_string(), |(k, n, _)| format!(
                    "{k} ({})",
                    n.join("+")
                ))),
                flag_chips(&p.flags())
            );
            flagged.push((format!("{} {}", p.test, p.param_label(&[])), p.flags()));
        }
        h.push_str("</table>");
        // Each warning's sentence once, below the table its codes are in.
        let said = derive::warnings_below(&flagged);
        if !said.is_empty() {
            h.push_str(r#"<ul class="warnings">"#);
            for (f, rows) in said {
                let _ = write!(
                    h,
                    "<li>&#9888; {}</li>",
                    esc(&derive::warning_below(f, &rows))
                );
            }
            h.push_str("</ul>");
        }
    }
    h.push_str(&absent_notes(
        labels,
        powers.iter().map(|(i, f)| (*i, f)),
        marks,
    ));
}

fn disclosure_table(h: &mut String, runs: &[RunRecord], labels: &[String]) {
    h.push_str(r#"<h2 id="disclosure">Systems (disclosure)</h2>"#);
    let d = crate::hosts_view::disclosure(runs);
    if d.cols.is_empty() {
        h.push_str(r#"<div class="note">No host disclosure was stored with these runs.</div>"#);
        return;
    }
    if !d.differ.is_empty() {
        h.push_str(
            r#"<div class="scroll"><table class="disclosure"><tr><th class="fact">Fact</th>"#,
        );
        for (i, hd) in &d.cols {
            let _ = write!(
                h,
                "<th>{}<br><span class=\"muted\">{} ({})</span></th>",
                esc(&labels[*i]),
                // Named as the Hosts table names it (this machine by its hostname).
                esc(&model::host_display_name(&runs[*i].hosts, &hd.host)),
                esc(&hd.role)
            );
        }
        h.push_str("</tr>");
        for (k, vals) in &d.differ {
            let _ = write!(h, r#"<tr><td class="fact"><code>{}</code></td>"#, esc(k));
            for v in vals {
                let _ = write!(h, "<td>{}</td>", esc(v));
            }
            h.push_str("</tr>");
        }
        h.push_str("</table></div>");
    }
    if !d.same.is_empty() {
        let _ = write!(
            h,
            "<details><summary>same on every {} ({} facts)</summary><ul>",
            d.columns_are(),
            d.same.len()
        );
        for (k, v) in &d.same {
            let _ = write!(h, "<li><code>{}</code>: {}</li>", esc(k), esc(v));
        }
        h.push_str("</ul></details>");
    }
    // Idle power before load: measured, or (a host whose power only --power-model gives)
    // the model's declared idle, over no time, which says so instead of "0 s".
    let idle: Vec<(usize, &model::IdlePower)> = runs
        .iter()
        .enumerate()
        .flat_map(|(i, r)| r.idle_power.iter().map(move |p| (i, p)))
        .collect();
    if !idle.is_empty() {
        h.push_str("<table><caption>Idle power before load</caption><tr><th>Run</th><th>Host</th><th>Duration</th><th>Source</th><th>Mean</th><th>Max</th></tr>");
        for (i, ip) in idle {
            for p in &ip.power {
                let duration = if p.modelled && ip.duration_s == 0.0 {
                    "declared (--power-model)".to_string()
                } else {
                    format!("{:.0} s", ip.duration_s)
                };
                let _ = write!(
                    h,
                    r#"<tr><td>{}</td><td>{}</td><td class="n">{}</td><td>{}{}</td><td class="n">{} W</td><td class="n">{} W</td></tr>"#,
                    esc(&labels[i]),
                    esc(&model::host_display_name(&runs[i].hosts, &ip.host)),
                    esc(&duration),
                    esc(&model::power_source_named(
                        &runs[i], &p.source, &p.zone, p.modelled
                    )),
                    if p.modelled {
                        r#" <span class="modelled">modelled</span>"#
                    } else if !p.whole_system {
                        r#" <span class="component">component</span>"#
                    } else {
                        ""
                    },
                    esc(&watts(p.mean_watts)),
                    esc(&watts(p.max_watts))
                );
            }
            for f in &ip.flags {
                let _ = write!(
                    h,
                    r#"<tr><td colspan="6"><span class="flag warning">&#9888; {}</span> {}</td></tr>"#,
                    esc(&f.code),
                    esc(&f.message)
                );
            }
        }
        h.push_str("</table>");
    }
}

/// The TCO tables (the seed's Table 2 layout, with its Difference columns).
pub fn tco_html(h: &mut String, t: &tco::TcoResult) {
    let _ = write!(h, r#"<h2 id="tco">{}</h2>"#, esc(&t.title));
    let (_group, head, body) = tco::cells(t);
    let n = t.platforms.len();
    let nd = if n == 2 { 1 } else { n - 1 };
    let _ = write!(
        h,
        r#"<table><tr><th colspan="2" rowspan="2">TCO ({})</th><th colspan="{}">Per server</th><th colspan="{}">Rack: maximum servers within {} W</th></tr><tr>"#,
        esc(&t.years_label()),
        n + nd,
        n + nd,
        esc(&num(t.usable_w()))
    );
    for c in head.iter().skip(2) {
        let _ = write!(h, "<th>{}</th>", esc(c));
    }
    h.push_str("</tr>");
    for (ri, r) in body.iter().enumerate() {
        let cls = match t.rows.get(ri).map(|r| r.label.as_str()) {
            Some("Total") | Some("Performance") => r#" class="total""#,
            _ => "",
        };
        let _ = write!(h, "<tr{cls}>");
        for (i, c) in r.iter().enumerate() {
            if i < 2 {
                let _ = write!(h, "<td>{}</td>", esc(c));
            } else {
                let _ = write!(h, r#"<td class="n">{}</td>"#, esc(c));
            }
        }
        h.push_str("</tr>");
    }
    h.push_str("</table>");
    // The seed's Figure 1: each platform's rack relative to the baseline's.
    let pick = [
        "Performance",
        "Total",
        "Power (W)",
        "Perf per $",
        "Perf per W",
    ];
    let rows: Vec<&tco::Row> = pick
        .iter()
        .filter_map(|l| t.rows.iter().find(|r| r.label == *l))
        .collect();
    let cats: Vec<String> = rows
        .iter()
        .map(|r| match r.label.as_str() {
            "Total" => format!("TCO ({})", t.years_label()),
            "Power (W)" => "Power".to_string(),
            other => other.to_string(),
        })
        .collect();
    let series: Vec<crate::svg::BarSeries> = t
        .platforms
        .iter()
        .enumerate()
        .map(|(i, p)| crate::svg::BarSeries {
            name: format!("{} x {}", p.servers_per_rack, p.name),
            values: rows.iter().map(|r| r.rack_ratio[i]).collect(),
            warn: vec![p.power_modelled; rows.len()],
        })
        .collect();
    let title = format!(
        "Full rack ({} W for servers) relative to {}",
        num(t.usable_w()),
        t.platforms[t.baseline].name
    );
    let svg = crate::svg::bar_chart(&title, "x baseline", &cats, &series);
    let _ = write!(
        h,
        r#"<figure>{svg}<figcaption>{}</figcaption></figure><ul>"#,
        esc(&title)
    );
    for f in tco::footnotes(t) {
        let cls = if f.contains("MODELLED") {
            r#" class="modelled""#
        } else {
            ""
        };
        let _ = write!(h, "<li{cls}>{}</li>", esc(&f));
    }
    h.push_str("</ul>");
}
