//! The report as Markdown: the same tables as the HTML report (summary, efficiency,
//! results, comparison, disclosure, TCO). Chart files are linked only when the caller
//! says the directory [`crate::svg_charts`] wrote them to ([`markdown_with_charts`]);
//! otherwise the report says how to get them rather than link files that do not exist.
//! Cell text is made table-safe with `md_cell`.

use std::fmt::Write as _;

use model::{Flag, RunRecord};

use crate::charts::{only_workload, workloads};
use crate::compare::compare;
use crate::derive::{
    self, points, run_labels, throughput_scale, AbsentMarks, DiffColumn, PowerBasis, PowerFigure,
};
use crate::fmt::md as c;
use crate::fmt::{latency_ns, num, watts};
use crate::selection::Selection;

/// Flags as their codes only, each once ([`derive::distinct_codes`]): the summary's
/// cells (the Results table has the messages).
fn flag_codes(f: &[Flag]) -> String {
    derive::distinct_codes(f)
        .iter()
        .map(|f| format!(" ⚠ {}", f.code))
        .collect()
}

fn power(p: &Result<PowerFigure, String>, marks: &AbsentMarks) -> String {
    match p {
        Ok(p) => format!(
            "{} W ({}{})",
            watts(p.watts),
            p.source,
            match p.basis {
                PowerBasis::Measured => "",
                PowerBasis::Modelled => ", MODELLED",
                PowerBasis::Component => ", component only",
            }
        ),
        // The reason is said once under the table (`absent_notes`), not in every cell;
        // the mark says which note is the cell's.
        Err(why) => format!("absent{}", marks.mark(why)),
    }
}

/// "\\* Power absent on every run: reason" (or "for RUN, RUN"), once per reason, with
/// the reason's mark (`\\*2`).
fn absent_notes<'a>(
    labels: &[String],
    items: impl Iterator<Item = (usize, &'a Result<PowerFigure, String>)>,
    marks: &AbsentMarks,
) -> String {
    derive::absent_reasons(labels, items)
        .iter()
        .map(|(who, why)| {
            format!(
                "\n{} Power absent {}: {}\n",
                c(&marks.mark(why)),
                c(who),
                c(why)
            )
        })
        .collect()
}

/// The marking a figure of power, or derived from it, carries: none when measured on the
/// whole server (as [`power`] marks the power itself).
fn basis_tag(b: Option<PowerBasis>) -> String {
    b.and_then(PowerBasis::tag)
        .map_or(String::new(), |t| format!(" ({t})"))
}

/// A figure derived from power with its power's marking, or "absent" with the mark of
/// why: the power's own (`*`, or `*2` among several: [`AbsentMarks`]) when there is no
/// power, else `‡` (said under the table).
fn per_w_cell(
    v: &Result<f64, String>,
    scale: f64,
    e: &derive::Efficiency,
    marks: &AbsentMarks,
) -> String {
    match (v, &e.power) {
        (Ok(v), _) => format!("{}{}", num(v * scale), basis_tag(e.basis())),
        (Err(_), Err(why)) => format!("absent{}", marks.mark(why)),
        (Err(_), Ok(_)) => "absent‡".to_string(),
    }
}

/// A %CPU per unit figure, or "absent" with the mark of why: the %CPU used's own (`†`)
/// when there is none, else `‡`.
fn cpu_per_cell(v: &Result<f64, String>, scale: f64, e: &derive::Efficiency) -> String {
    match (v, &e.cpu_used) {
        (Ok(v), _) => num(v * scale),
        (Err(_), Err(_)) => "absent†".to_string(),
        (Err(_), Ok(_)) => "absent‡".to_string(),
    }
}

type EffRow = (String, usize, String, derive::Efficiency);

/// The %CPU used cell of both efficiency tables; why it is absent is said once under them.
fn cpu_cell(c: &Result<derive::CpuFigure, String>) -> String {
    match c {
        Ok(c) => format!("{}% ({})", crate::fmt::fixed(c.pct, 1), c.basis.label()),
        Err(_) => "absent†".into(),
    }
}

fn efficiency_unit_table(
    m: &mut String,
    eff: &[&EffRow],
    unit: &str,
    labels: &[String],
    marks: &AbsentMarks,
) {
    // One scale for the three per-unit columns, from the throughput they divide by.
    let perfs: Vec<f64> = eff.iter().map(|r| r.3.perf).collect();
    let (sw, pw) = throughput_scale(&perfs);
    let heads = [
        format!("Perf/W ({unit} per W)"),
        format!("W per {pw}{unit}"),
        format!("W above idle per {pw}{unit}"),
        format!("%CPU per {pw}{unit}"),
    ];
    m.push_str(&header(&[
        "Test",
        "Run",
        &format!("Throughput ({unit})"),
        "Power",
        "Idle",
        &heads[0],
        &heads[1],
        &heads[2],
        "%CPU used",
        &heads[3],
    ]));
    for (rowname, i, point, e) in eff.iter().copied() {
        m.push_str(&row(&[
            rowname.clone(),
            format!("{} ({point})", labels[*i]),
            num(e.perf),
            power(&e.power, marks),
            // The idle power W above idle is taken from, as the HTML has it.
            match &e.idle_w {
                Ok(w) if !e.idle_warnings.is_empty() => {
                    format!("{} W{} ⚠", watts(*w), basis_tag(e.basis()))
                }
                Ok(w) => format!("{} W{}", watts(*w), basis_tag(e.basis())),
                Err(_) => per_w_cell(&e.idle_w, 1.0, e, marks),
            },
            per_w_cell(&e.perf_per_w, 1.0, e, marks),
            per_w_cell(&e.w_per_perf, sw, e, marks),
            per_w_cell(&e.dw_per_perf, sw, e, marks),
            cpu_cell(&e.cpu_used),
            cpu_per_cell(&e.cpu_pct_per_perf, sw, e),
        ]));
    }
    for n in derive::efficiency_absences(eff, Some("Idle"), &heads, labels) {
        let _ = write!(m, "\n‡ {}\n", c(&n));
    }
    for w in derive::idle_warnings(eff.iter().map(|r| &r.3)) {
        let _ = write!(m, "\n⚠ Idle: {}\n", c(w));
    }
    for n in derive::loadgen_power_notes(eff.iter().map(|r| &r.3)) {
        let _ = write!(m, "\n⚠ Power: {}\n", c(&n));
    }
    m.push('\n');
}

/// A latency headline's table: the latency with the power and CPU it ran at, and no
/// per-watt column (a latency per watt is no efficiency).
fn latency_unit_table(
    m: &mut String,
    eff: &[&EffRow],
    unit: &str,
    labels: &[String],
    marks: &AbsentMarks,
) {
    m.push_str(&header(&[
        "Test",
        "Run",
        &format!("Latency ({unit})"),
        "Power",
        "%CPU used",
    ]));
    for (rowname, i, point, e) in eff.iter().copied() {
        m.push_str(&row(&[
            rowname.clone(),
            format!("{} ({point})", labels[*i]),
            num(e.perf),
            power(&e.power, marks),
            cpu_cell(&e.cpu_used),
        ]));
    }
    let _ = write!(
        m,
        "\nNo perf/W, W or %CPU per unit here: {}.\n\n",
        c(derive::NOT_A_THROUGHPUT)
    );
}

fn row(cells: &[String]) -> String {
    format!(
        "| {} |\n",
        cells.iter().map(|s| c(s)).collect::<Vec<_>>().join(" | ")
    )
}

/// A row whose first cell is bold (the summary's means): the text is escaped, the
/// emphasis is ours.
fn bold_row(cells: &[String]) -> String {
    let mut out: Vec<String> = cells.iter().map(|s| c(s)).collect();
    if let Some(first) = out.first_mut() {
        *first = format!("**{first}**");
    }
    format!("| {} |\n", out.join(" | "))
}

fn header(cells: &[&str]) -> String {
    let mut s = row(&cells.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    s.push_str(&format!("|{}|\n", vec!["---"; cells.len()].join("|")));
    s
}

/// What the Markdown says in place of chart links when it was not told where they are.
pub const NO_CHARTS: &str = "charts: rerun with --svg-dir DIR";

/// The report as Markdown, without chart links (it cannot know where, or whether, the
/// chart files were written): see [`markdown_with_charts`].
pub fn markdown(runs: &[RunRecord], tco_result: Option<&tco::TcoResult>) -> String {
    markdown_with_charts(runs, tco_result, None)
}

/// A chart file's link target under `dir`, with the characters that would end a
/// Markdown link (space, parentheses, angle brackets) percent-encoded.
fn chart_link(dir: &str, file: &str) -> String {
    let path = format!("{}/{file}", dir.trim_end_matches('/'));
    let mut out = String::with_capacity(path.len());
    for ch in path.chars() {
        match ch {
            ' ' => out.push_str("%20"),
            '(' => out.push_str("%28"),
            ')' => out.push_str("%29"),
            '<' => out.push_str("%3C"),
            '>' => out.push_str("%3E"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// The report as Markdown, linking each chart as `svg_dir/FILE` when `svg_dir` is the
/// directory the files of [`crate::svg_charts`] were written to (as the Markdown sees
/// it, e.g. relative to the report); with `None`, no chart is linked and the report
/// says how to get them.
pub fn markdown_with_charts(
    runs: &[RunRecord],
    tco_result: Option<&tco::TcoResult>,
    svg_dir: Option<&str>,
) -> String {
    markdown_with(runs, tco_result, svg_dir, &Selection::default())
}

/// [`markdown_with_charts`] with the summaries laid out as `sel` chooses.
pub fn markdown_with(
    runs: &[RunRecord],
    tco_result: Option<&tco::TcoResult>,
    svg_dir: Option<&str>,
    sel: &Selection,
) -> String {
    let labels = run_labels(runs);
    let mut m = format!(
        "{}\n# {}\n\n",
        crate::COMMENT_MARK,
        c(&derive::report_title(&labels))
    );
    m.push_str("## Runs\n\n");
    m.push_str(&header(&[
        "Run", "Label", "Started", "Status", "Results", "Command",
    ]));
    for (r, l) in runs.iter().zip(&labels) {
        m.push_str(&row(&[
            r.id.clone(),
            l.clone(),
            r.created_at.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
            r.status_text(),
            r.results.len().to_string(),
            // Plain escaped text: a code span would show the escapes' backslashes.
            r.command.clone(),
        ]));
    }
    for (r, l) in runs.iter().zip(&labels) {
        if let Some(n) = derive::not_run_note(r, l) {
            let _ = write!(m, "\n{}\n", c(&n));
        }
    }
    if runs.len() > 1 {
        m.push_str("\n## Comparison\n");
        let (pairs, alone) = crate::views::comparable_pairs(runs);
        if !alone.is_empty() {
            let _ = write!(
                m,
                "\nNot compared (no earlier run measured the same workload and tests at the same parameters): {}\n",
                c(&alone
                    .iter()
                    .map(|i| labels[*i].as_str())
                    .collect::<Vec<_>>()
                    .join(", "))
            );
        }
        for (a, b) in pairs {
            let cmp = compare(
                &crate::compare::replications(&runs[a]),
                &crate::compare::replications(&runs[b]),
            );
            // The report's names of the two columns: two runs under one label are told
            // apart there by their ids (a side's own names would not be).
            let _ = write!(
                m,
                "\n### {} (B) vs {} (A)\n\n",
                c(&labels[b]),
                c(&labels[a])
            );
            for u in cmp.unfinished_notes() {
                let _ = write!(m, "**Did not finish:** {}\n\n", c(&u));
            }
            let _ = write!(
                m,
                "**Comparability:** {}\n\n",
                c(&cmp.comparability.verdict)
            );
            if !cmp.comparability.differences.is_empty() {
                m.push_str(&header(&["Setting", "Kind", "A", "B"]));
                for d in &cmp.comparability.differences {
                    m.push_str(&row(&[
                        d.key.clone(),
                        d.category.clone(),
                        d.a.clone(),
                        d.b.clone(),
                    ]));
                }
                m.push('\n');
            }
            m.push_str(&header(&[
                "Point",
                "Metric",
                "A mean (n)",
                "B mean (n)",
                "Difference",
                "95% CI",
                "Verdict",
            ]));
            for r in &cmp.rows {
                m.push_str(&row(&[
                    r.point.clone(),
                    r.metric_text(),
                    r.a_text(),
                    r.b_text(),
                    r.diff_text(),
                    r.ci_text(),
                    r.verdict.clone(),
                ]));
            }
            for n in cmp.table_notes() {
                let _ = writeln!(m, "\n{}", c(&n));
            }
            if !cmp.warnings.is_empty() {
                let _ = writeln!(m, "\n{}\n", crate::compare::WARNINGS_NOTE);
                for w in &cmp.warnings {
                    let _ = writeln!(m, "- {}: {}", c(&w.point), c(&w.text()));
                }
            }
        }
    }
    let all_charts = crate::charts::charts_with(runs, sel);
    for wl in workloads(runs) {
        let wr = only_workload(runs, &wl);
        let wl_labels = run_labels(&wr);
        let s = derive::summary_with(&wr, sel);
        let marks = AbsentMarks::of_section(&wr, &s);
        let _ = write!(m, "\n## Workload: {}\n\n", c(&wl));
        if !s.selection.is_empty() {
            let _ = write!(m, "Summary: {}.\n\n", c(&s.selection));
        }
        // Said once here, as the HTML does, and left out of every point's name below.
        if let Some(fixed) = derive::fixed_line(&wr) {
            let _ = write!(m, "Fixed parameters: {}.\n\n", c(&fixed));
        }
        if let Some(at) = derive::placement_line(&wr) {
            let _ = write!(m, "Where each run ran: {}.\n\n", c(&at));
        }
        if let Some(set) = derive::column_line(&wr, &derive::peak_params(&wr)) {
            let _ = write!(m, "{} {}.\n\n", c(derive::COLUMN_SETTINGS), c(&set));
        }
        let mut head = vec!["Test".to_string()];
        for l in &s.runs {
            // `performance (MB/s)`, `latency (ns)`: the word lowercased, never the unit.
            let heading = s.perf_heading();
            let mut first = heading.chars();
            let heading = first.next().map_or_else(String::new, |f| {
                f.to_lowercase().chain(first).collect::<String>()
            });
            head.push(format!("{l}: {heading}"));
            head.push(format!("{l}: power"));
        }
        for d in &s.differences {
            head.push(format!("Difference: {}", d.label));
        }
        // A workload of capacity tests only has no row: no table (a header over nothing),
        // the note below says why.
        if !s.rows.is_empty() {
            m.push_str(&row(&head));
            m.push_str(&format!("|{}|\n", vec!["---"; head.len()].join("|")));
        }
        for (ri, r) in s.rows.iter().enumerate() {
            let mut cells = vec![s.row_name(r, "")];
            for i in 0..s.runs.len() {
                cells.push(format!(
                    "{}{}{}",
                    match (r.perf[i], &r.perf_missing[i]) {
                        (Some(v), _) => num(v),
                        // Why is said once under the table.
                        (None, Some(_)) => "absent§".into(),
                        (None, None) => "-".into(),
                    },
                    if r.chosen[i].is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", r.chosen[i])
                    },
                    flag_codes(&r.flags[i])
                ));
                cells.push(if r.perf[i].is_some() {
                    power(&r.power[i], &marks)
                } else {
                    "-".into()
                });
            }
            cells.extend(s.differences.iter().map(|d| s.diff_cell(d, ri)));
            m.push_str(&row(&cells));
        }
        let mut g = vec![c(&s.geomean_label())];
        let mut a = vec!["Arithmetic mean".to_string()];
        let (geo, pmean) = (s.geomean_or_why(), s.power_mean_or_why());
        for i in 0..s.runs.len() {
            // A missing mean is marked; why is said once under the table.
            g.push(geo[i].as_ref().map_or("absent†".into(), |v| num(*v)));
            g.push("n/a".into());
            a.push("n/a".into());
            a.push(match (&pmean[i], s.power_basis[i]) {
                (Ok(w), Some(PowerBasis::Measured)) => format!("{} W", watts(*w)),
                (Ok(w), Some(b)) => format!("{} W ({})", watts(*w), b.label()),
                _ => "absent†".into(),
            });
        }
        g.extend(s.differences.iter().map(|d| s.geomean_diff_cell(d)));
        a.extend(s.differences.iter().map(|d| DiffColumn::cell(d.power_mean)));
        if s.shows_geomean() && !s.rows.is_empty() {
            m.push_str(&bold_row(&g));
        }
        // The arithmetic mean is of power: left out when no run has power.
        if s.power_mean.iter().any(Option::is_some) && !s.rows.is_empty() {
            m.push_str(&bold_row(&a));
        }
        if let Some(n) = &s.geomean_note {
            let _ = write!(m, "\n{}\n", c(n));
        }
        if let Some(n) = s.power_mean_said() {
            let _ = write!(m, "\n{}\n", c(n));
        }
        for n in s.absent_mean_notes() {
            let _ = write!(m, "\n† {}\n", c(&n));
        }
        if let Some(n) = s.left_out_note() {
            let _ = write!(m, "\n{}\n", c(&n));
        }
        if s.any_flags() {
            let _ = write!(m, "\n{}\n", c(derive::SUMMARY_FLAGS_NOTE));
        }
        for n in &s.notes {
            let _ = write!(m, "\n{}\n", c(n));
        }
        m.push_str(&absent_notes(
            &s.runs,
            s.rows.iter().flat_map(|r| r.power.iter().enumerate()),
            &marks,
        ));
        for (row, who, why) in derive::absent_figures(&s.runs, &s.rows) {
            let _ = write!(m, "\n§ {} absent {}: {}\n", c(&row), c(&who), c(&why));
        }
        m.push_str(&crate::views::views_markdown(&wr, &wl));
        m.push_str(&crate::hosts_view::pairs_markdown(&wr, &wl));
        let all_eff = derive::efficiency_rows_with(&wr, sel);
        // A workload that ran only capacity tests has no best point (their figures are per step).
        if !all_eff.is_empty() {
            let _ = write!(
                m,
                "\n### Efficiency ({})\n\n",
                c(&sel.for_runs(&wr).best_point_words())
            );
            // One table per unit (a memory run's GB/s and ns, a crypto run's MB/s and
            // signs/s): a column's unit is its header's; a latency's table has no
            // per-watt columns.
            for (unit, throughput) in derive::units_of(&all_eff) {
                let eff: Vec<_> = all_eff
                    .iter()
                    .filter(|r| r.3.unit == unit && r.3.throughput == throughput)
                    .collect();
                if throughput {
                    efficiency_unit_table(&mut m, &eff, &unit, &wl_labels, &marks);
                } else {
                    latency_unit_table(&mut m, &eff, &unit, &wl_labels, &marks);
                }
            }
            let _ = writeln!(m, "{}", c(derive::CPU_USED_MEANING));
            for (who, why) in derive::cpu_used_absent(&wl_labels, &all_eff) {
                let _ = write!(m, "\n† %CPU used absent {}: {}\n", c(&who), c(&why));
            }
        }
        let groups = crate::charts::thresholds(&wr, sel);
        if !groups.is_empty() {
            let _ = write!(
                m,
                "\n### Latency thresholds\n\n{}\n\n",
                c(&crate::charts::thresholds_caption(&sel.for_runs(&wr)))
            );
            let mut head = vec!["Test".to_string(), "Threshold".to_string()];
            head.extend(wl_labels.iter().cloned());
            m.push_str(&row(&head));
            m.push_str(&format!("|{}|\n", vec!["---"; head.len()].join("|")));
            for g in &groups {
                for (k, (what, cells)) in g.rows.iter().enumerate() {
                    // The test's name once, on its first row, as the HTML's spanning cell.
                    let mut r = vec![if k == 0 {
                        g.test.clone()
                    } else {
                        String::new()
                    }];
                    r.push(what.clone());
                    r.extend(cells.iter().cloned());
                    m.push_str(&row(&r));
                }
            }
        }
        power_sweeps_markdown(&mut m, &wr, &wl);
        m.push_str("\n### Results\n\n");
        m.push_str(&header(&[
            "Run",
            "Test",
            "Parameters",
            "n",
            "Headline (mean ± sd)",
            "Power",
            "p50",
            "p99",
            "p99.9",
            "Warnings",
        ]));
        // Each point's power, as the summary takes it at the best one: the seed's power
        // against instances (Figure A3) reads off this column.
        let mut powers: Vec<(usize, Result<PowerFigure, String>)> = Vec::new();
        let mut flagged: Vec<(String, Vec<Flag>)> = Vec::new();
        for (i, run) in wr.iter().enumerate() {
            for p in points(i, run) {
                let s = p.headline();
                let pw = match p.capacity_phase() {
                    Some(phase) => crate::views::per_step(&p.workload, phase),
                    None => {
                        let f = p.power();
                        let cell = power(&f, &marks);
                        powers.push((i, f));
                        cell
                    }
                };
                let lat = p.latency();
                let q = |x: f64| {
                    lat.as_ref().map_or("-".to_string(), |(_, _, h)| {
                        latency_ns(h.value_at_quantile(x) as f64)
                    })
                };
                // A capacity test's latency is per offered rate, in its own view.
                let [p50, p99, p999] = match p.capacity_phase() {
                    Some(phase) => [
                        crate::views::per_step(&p.workload, phase),
                        "n/a".into(),
                        "n/a".into(),
                    ],
                    None => [q(0.5), q(0.99), q(0.999)],
                };
                m.push_str(&row(&[
                    wl_labels[i].clone(),
                    p.test.clone(),
                    p.param_label(&[]),
                    p.reps_cell(),
                    s.as_ref()
                        .map_or_else(|| p.no_headline_cell(), |s| p.headline_cell(s)),
                    pw,
                    p50,
                    p99,
                    p999,
                    flag_codes(&p.flags()),
                ]));
                flagged.push((
                    format!("{} {} {}", wl_labels[i], p.test, p.param_label(&[])),
                    p.flags(),
                ));
            }
        }
        for (f, rows) in derive::warnings_below(&flagged) {
            let _ = writeln!(m, "\n⚠ {}", c(&derive::warning_below(f, &rows)));
        }
        m.push_str(&absent_notes(
            &wl_labels,
            powers.iter().map(|(i, f)| (*i, f)),
            &marks,
        ));
        let Some(dir) = svg_dir else { continue };
        m.push_str("\n### Charts\n\n");
        for ch in all_charts.iter().filter(|ch| ch.workload == wl) {
            match (&ch.svg, &ch.note) {
                (Some(_), None) => {
                    let _ = writeln!(m, "- ![{}]({})", c(&ch.title), chart_link(dir, &ch.file));
                }
                // The HTML's caption: what the chart leaves out, and why.
                (Some(_), Some(n)) => {
                    let _ = writeln!(
                        m,
                        "- ![{}]({})\n  {}",
                        c(&ch.title),
                        chart_link(dir, &ch.file),
                        c(n)
                    );
                }
                (None, Some(n)) => {
                    let _ = writeln!(m, "- {}: {}", c(&ch.title), c(n));
                }
                _ => {}
            }
        }
    }
    if svg_dir.is_none() && !runs.is_empty() {
        let _ = write!(m, "\n{}\n", c(NO_CHARTS));
    }
    m.push_str(&crate::hosts_view::hosts_markdown(runs));
    cpu_markdown(&mut m, runs, sel);
    let tel = crate::views::telemetry_views(runs);
    if !tel.is_empty() {
        m.push_str("\n## Host telemetry\n");
        for v in &tel {
            m.push_str(&crate::views::view_markdown(v));
        }
    }
    m.push_str("\n## Systems\n\n");
    let d = crate::hosts_view::disclosure(runs);
    if !d.differ.is_empty() {
        let mut head = vec!["Fact".to_string()];
        head.extend(
            d.cols
                .iter()
                // Named as the HTML's head and the Hosts table name it: this machine
                // read `local` here and by its hostname everywhere else.
                .map(|(i, h)| {
                    format!(
                        "{} {} ({})",
                        labels[*i],
                        model::host_display_name(&runs[*i].hosts, &h.host),
                        h.role
                    )
                }),
        );
        m.push_str(&row(&head));
        m.push_str(&format!("|{}|\n", vec!["---"; head.len()].join("|")));
        for (k, vals) in &d.differ {
            let mut cells = vec![k.clone()];
            cells.extend(vals.iter().cloned());
            m.push_str(&row(&cells));
        }
    }
    if !d.same.is_empty() {
        let _ = writeln!(
            m,
            "\nSame on every {} ({} facts):\n",
            d.columns_are(),
            d.same.len()
        );
        for (k, v) in &d.same {
            let _ = writeln!(m, "- {}: {}", c(k), c(v));
        }
    }
    if let Some(t) = tco_result {
        // Its own section, not a part of the systems' disclosure above.
        m.push_str("\n## TCO\n\n");
        m.push_str(&tco::markdown(t));
    }
    // The HTML's footer: what the report was built from.
    let _ = write!(
        m,
        "\n---\n\n{}\n",
        c(&crate::sources_text(runs, tco_result))
    );
    m
}

/// The power sweeps the HTML draws ([`crate::charts::power_sweeps`]), as tables: a row
/// per line, a column per value of the swept parameter, each cell the point's mean W and
/// its W above idle; a point without a power reading is `absent` (why said below), one
/// not run `-`. Only the sweeps the HTML draws (two points or more with power).
fn power_sweeps_markdown(m: &mut String, runs: &[RunRecord], wl: &str) {
    for sweep in crate::charts::power_sweeps(runs, wl) {
        if sweep.with_power() < 2 {
            continue;
        }
        let _ = write!(
            m,
            "\n### Power against {}\n\n{}\n\n",
            c(&sweep.param),
            c(&sweep.title())
        );
        let mut xs: Vec<f64> = sweep
            .lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.0))
            .collect();
        xs.sort_by(|a, b| a.total_cmp(b));
        xs.dedup();
        let mut head = vec!["Series".to_string()];
        head.extend(xs.iter().map(|x| format!("{}={x}", sweep.param)));
        m.push_str(&row(&head));
        m.push_str(&format!("|{}|\n", vec!["---"; head.len()].join("|")));
        for l in &sweep.lines {
            let mut cells = vec![l.name.clone()];
            for x in &xs {
                cells.push(match l.points.iter().find(|p| p.0 == *x) {
                    None => "-".into(),
                    Some((_, Err(_))) => "absent".into(),
                    // Both to 0.1 W, as every power figure: by significant digits, 199.8 W
                    // read `200 W (99.8 W above idle)`.
                    Some((_, Ok((w, Ok(a))))) => {
                        format!("{} W ({} W above idle)", watts(*w), watts(*a))
                    }
                    Some((_, Ok((w, Err(_))))) => format!("{} W", watts(*w)),
                });
            }
            m.push_str(&row(&cells));
        }
        for n in sweep.notes() {
            let _ = write!(m, "\n{}\n", c(&n));
        }
        // Throughput per watt at the same points, where the chart is drawn.
        let (Some(title), true) = (sweep.perf_per_w_title(), sweep.with_perf_per_w() >= 2) else {
            continue;
        };
        let _ = write!(
            m,
            "\n### Perf/W against {}\n\n{}\n\n",
            c(&sweep.param),
            c(&title)
        );
        m.push_str(&row(&head));
        m.push_str(&format!("|{}|\n", vec!["---"; head.len()].join("|")));
        for l in &sweep.lines {
            let mut cells = vec![l.name.clone()];
            for x in &xs {
                cells.push(match l.perf_per_w.iter().find(|p| p.0 == *x) {
                    Some((_, v)) => num(*v),
                    None if l.points.iter().any(|p| p.0 == *x) => "absent".into(),
                    None => "-".into(),
                });
            }
            m.push_str(&row(&cells));
        }
    }
}

/// The per-CPU breakdowns the HTML draws ([`crate::charts::cpu_breakdowns`]), as tables.
fn cpu_markdown(m: &mut String, runs: &[RunRecord], sel: &Selection) {
    let b = crate::charts::cpu_breakdowns(runs, sel);
    if runs.is_empty() {
        return;
    }
    m.push_str("\n## CPU utilisation\n\n");
    let _ = writeln!(m, "{}", c(crate::charts::CPU_SECTION_NOTE));
    if b.shown.is_empty() && b.no_telemetry.is_empty() {
        let _ = write!(m, "\n{}\n", c(crate::charts::no_cpu_telemetry(runs)));
    }
    for x in &b.shown {
        let _ = write!(m, "\n{}\n\n", c(&x.title()));
        m.push_str(&header(&[
            "CPU", "%usr", "%nice", "%sys", "%irq", "%soft", "%iowait", "%steal", "%idle",
        ]));
        for u in &x.cpus {
            let p = |v: f64| crate::fmt::fixed(v, 1);
            m.push_str(&row(&[
                u.cpu.to_string(),
                p(u.usr_pct),
                p(u.nice_pct),
                p(u.sys_pct),
                p(u.irq_pct),
                p(u.soft_pct),
                p(u.iowait_pct),
                p(u.steal_pct),
                p(u.idle_pct),
            ]));
        }
    }
    for (label, _, why) in &b.no_telemetry {
        let _ = write!(m, "\n{}: {}\n", c(label), c(why));
    }
    m.push_str(&crate::cpu_table::cpu_tables_markdown(runs));
}
