//! The TCO table as text (terminal) and Markdown, laid out like the Redis study's
//! Table 2: per-server columns with their Difference, then per-rack columns with theirs.
//! The HTML form lives in the report crate and uses the same [`cells`].

use crate::compute::{Binding, PlatformResult, Row, TcoResult, MODELLED_MARK};

/// `12345.6` -> `12,346`; small figures keep 3 significant digits.
pub fn fmt_number(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".to_string();
    }
    let a = v.abs();
    if a >= 1000.0 {
        let r = v.round() as i128;
        let digits = r.unsigned_abs().to_string();
        let mut out = String::new();
        for (i, ch) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(ch);
        }
        if r < 0 {
            format!("-{out}")
        } else {
            out
        }
    } else if a >= 100.0 {
        // Half up, as the figures past 1,000 above (`{:.0}` rounds a tie to even).
        format!("{}", v.round())
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else if a == 0.0 {
        "0".to_string()
    } else {
        // Below 1: three significant digits, however small (0.000333 Gbit/s per $
        // printed as 0.000 beside a 1.2x difference).
        let decimals = (2 - a.log10().floor() as i32).max(3) as usize;
        let s = format!("{v:.decimals$}");
        // Rounded up to the next power of ten (0.00099996 -> 0.001000): one decimal less.
        match s.trim_start_matches('-').parse::<f64>() {
            Ok(r) if decimals > 3 && r >= 10f64.powi(3 - decimals as i32) => {
                let d = decimals - 1;
                format!("{v:.d$}")
            }
            _ => s,
        }
    }
}

/// Money rounded to whole units with thousands separators (`$98,856`).
pub fn fmt_money(currency: &str, v: f64) -> String {
    if !v.is_finite() {
        return "n/a".to_string();
    }
    let r = v.round();
    let s = if r.abs() >= 1000.0 {
        fmt_number(r)
    } else {
        format!("{}", r as i64)
    };
    if let Some(rest) = s.strip_prefix('-') {
        format!("-{currency}{rest}")
    } else {
        format!("{currency}{s}")
    }
}

/// A ratio as the seed prints it: one decimal and `x`; below 0.1, where one decimal
/// would make 0.058 and 0.14 both `0.1x`, two significant digits (`0.058x`).
pub fn fmt_ratio(r: Option<f64>) -> String {
    match r {
        Some(v) if v.is_finite() && v.abs() < 0.095 && v != 0.0 => {
            let decimals = (1 - v.abs().log10().floor() as i32).max(1) as usize;
            format!("{v:.decimals$}x")
        }
        // Nothing against something (a part one platform does not have) is 0x, not 0.0x.
        Some(0.0) => "0x".to_string(),
        Some(v) if v.is_finite() => format!("{v:.1}x"),
        _ => "n/a".to_string(),
    }
}

/// A ratio's change in percent, as the report's summary states a difference beside its
/// ratio (`0.83x` is `-17%`): whole percent, signed; a change that rounds to nothing is
/// `+0%`, not `-0%`.
pub fn fmt_pct_change(r: f64) -> String {
    let exact = (r - 1.0) * 100.0;
    // A change under half a percent keeps a decimal, so that its sign is its own: -0.38%
    // rounded whole read "+0%" (acceptance L, 5). No change is +0%, never -0%.
    if exact.abs() < 0.5 && exact.abs() >= 0.05 {
        return format!("{exact:+.1}%");
    }
    let p = exact.round();
    let p = if p == 0.0 { 0.0 } else { p };
    format!("{p:+.0}%")
}

/// A Difference cell: the ratio and, beside it, the same difference in percent
/// (`0.9x (-12%)`). An absent ratio stays absent and says why: the baseline's figure is
/// 0 (a part the baseline does not have), or a figure is not a number.
pub fn fmt_difference(r: Option<f64>, baseline: f64) -> String {
    match r {
        // Two decimals beside the percent, so that the two agree (`0.88x (-12%)`; the
        // seed's one decimal gave `1.0x (+4%)` and `1.0x (-4%)` in one column).
        Some(v) if v.is_finite() && v.abs() >= 0.095 && v.abs() < 10.0 => {
            format!("{v:.2}x ({})", fmt_pct_change(v))
        }
        Some(v) if v.is_finite() => format!("{} ({})", fmt_ratio(Some(v)), fmt_pct_change(v)),
        _ if baseline == 0.0 => "n/a (baseline is 0)".to_string(),
        _ => "n/a (not a number)".to_string(),
    }
}

fn fmt_cell(t: &TcoResult, row: &Row, v: f64) -> String {
    match row.kind.as_str() {
        "money" => fmt_money(&t.currency, v),
        "count" => format!("{}", v.round() as i64),
        "watts" => format!("{} W", fmt_number(v)),
        _ => fmt_number(v),
    }
}

/// Whether platform `i`'s cell of `row` derives from modelled power: a figure of its
/// power (watts, energy, infrastructure, total, perf/$, perf/W), or, per rack, any figure
/// when power limits the servers per rack (their count then comes from the watts).
fn modelled(t: &TcoResult, row: &Row, i: usize, rack: bool) -> bool {
    let p = &t.platforms[i];
    p.power_modelled && (row.from_power || (rack && p.binding != Binding::Space))
}

/// A cell with the modelled mark when it derives from modelled power.
fn mark(cell: String, modelled: bool) -> String {
    if modelled {
        format!("{cell} {MODELLED_MARK}")
    } else {
        cell
    }
}

/// A perf/$ cell of platforms `of` (one, or a Difference's two) where a total cost is 0:
/// there is no performance per dollar of nothing, and the cell says so rather than "n/a
/// (not a number)".
fn no_cost(t: &TcoResult, row: &Row, of: &[usize]) -> Option<String> {
    if row.kind != "perf_per_money" {
        return None;
    }
    let free: Vec<&str> = of
        .iter()
        .map(|i| &t.platforms[*i])
        .filter(|p| p.total_per_server == 0.0)
        .map(|p| p.name.as_str())
        .collect();
    match free.as_slice() {
        [] => None,
        // The platform's own reason, as its JSON gives it.
        [_] if of.len() == 1 => t.platforms[of[0]]
            .missing
            .get("perf_per_dollar")
            .map(|why| format!("n/a ({why})")),
        names => Some(format!(
            "n/a (total cost of {} is {}0)",
            names.join(" and "),
            t.currency
        )),
    }
}

/// Column headers and body cells of the table (text, unescaped), shared by every format.
/// Returns (group header, column header, rows).
pub fn cells(t: &TcoResult) -> (Vec<String>, Vec<String>, Vec<Vec<String>>) {
    let n = t.platforms.len();
    let others: Vec<usize> = (0..n).filter(|i| *i != t.baseline).collect();
    // Which way the ratio runs is said in its header: `Difference (A / B)`.
    let diff_names: Vec<String> = if n == 2 {
        others
            .iter()
            .map(|i| {
                format!(
                    "Difference ({} / {})",
                    t.platforms[*i].name, t.platforms[t.baseline].name
                )
            })
            .collect()
    } else {
        others
            .iter()
            .map(|i| {
                format!(
                    "{} / {}",
                    t.platforms[*i].name, t.platforms[t.baseline].name
                )
            })
            .collect()
    };
    let mut group = vec![format!("TCO ({})", t.years_label()), String::new()];
    let mut head = vec![String::new(), String::new()];
    for (i, p) in t.platforms.iter().enumerate() {
        group.push(if i == 0 {
            "Per server".to_string()
        } else {
            String::new()
        });
        let boards = if p.boards_per_server != 1.0 {
            format!(" (x{} boards)", p.boards_per_server)
        } else {
            String::new()
        };
        head.push(format!("{}{boards}{}", p.name, flag_mark(p)));
    }
    for d in &diff_names {
        group.push(String::new());
        head.push(d.clone());
    }
    for (i, p) in t.platforms.iter().enumerate() {
        group.push(if i == 0 {
            format!("Rack: max servers within {} W", fmt_number(t.usable_w()))
        } else {
            String::new()
        });
        head.push(format!(
            "{} x {}{}",
            p.servers_per_rack,
            p.name,
            flag_mark(p)
        ));
    }
    for d in &diff_names {
        group.push(String::new());
        head.push(d.clone());
    }
    let mut body = Vec::new();
    let mut last_section = String::new();
    for row in &t.rows {
        let mut cells = Vec::new();
        cells.push(if row.section != last_section {
            row.section.clone()
        } else {
            String::new()
        });
        last_section = row.section.clone();
        // The performance rows say their unit: `Perf per $ (ops/s per $ of 3yr TCO)`.
        let unit = if t.perf_unit.is_empty() {
            "performance"
        } else {
            t.perf_unit.as_str()
        };
        let label = match row.kind.as_str() {
            "perf" if !t.perf_unit.is_empty() => format!("{} ({})", row.label, t.perf_unit),
            "perf_per_money" => format!(
                "Perf per {c} ({unit} per {c} of {} TCO)",
                t.years_label(),
                c = t.currency
            ),
            "perf_per_w" => format!("{} ({unit} per W)", row.label),
            _ => row.label.clone(),
        };
        cells.push(label);
        // A difference derives from modelled power when either of its sides does.
        let diff_modelled =
            |i: usize, rack: bool| modelled(t, row, i, rack) || modelled(t, row, t.baseline, rack);
        for (i, v) in row.per_server.iter().enumerate() {
            let cell = no_cost(t, row, &[i]).unwrap_or_else(|| fmt_cell(t, row, *v));
            cells.push(mark(cell, modelled(t, row, i, false)));
        }
        for i in &others {
            let cell = no_cost(t, row, &[*i, t.baseline]).unwrap_or_else(|| {
                fmt_difference(row.server_ratio[*i], row.per_server[t.baseline])
            });
            cells.push(mark(cell, diff_modelled(*i, false)));
        }
        for (i, v) in row.per_rack.iter().enumerate() {
            let cell = no_cost(t, row, &[i]).unwrap_or_else(|| fmt_cell(t, row, *v));
            cells.push(mark(cell, modelled(t, row, i, true)));
        }
        for i in &others {
            let cell = no_cost(t, row, &[*i, t.baseline])
                .unwrap_or_else(|| fmt_difference(row.rack_ratio[*i], row.per_rack[t.baseline]));
            cells.push(mark(cell, diff_modelled(*i, true)));
        }
        body.push(cells);
    }
    (group, head, body)
}

/// After a platform's name where its figures come from flagged results (the footnote
/// names the warnings).
fn flag_mark(p: &PlatformResult) -> &'static str {
    if p.warnings.is_empty() {
        ""
    } else {
        " ⚠"
    }
}

/// Lines under the table: what binds, where figures came from, the assumptions.
pub fn footnotes(t: &TcoResult) -> Vec<String> {
    let mut out = Vec::new();
    for p in &t.platforms {
        out.push(format!(
            "{}: {} servers per rack, {} {} (power allows {}, space allows {} at {}U); {} W per server; power {}; performance {}",
            p.name,
            p.servers_per_rack,
            p.binding.as_str(),
            if p.binding == Binding::Both {
                "bind"
            } else {
                "binds"
            },
            p.power_limited_servers,
            p.space_limited_servers,
            p.height_u,
            fmt_number(p.server_power_w),
            p.power_source,
            p.perf_source
        ));
        if let Some(note) = &p.note {
            out.push(format!("{}: {note}", p.name));
        }
        if !p.warnings.is_empty() {
            out.push(format!(
                "⚠ {}: the results its figures were taken from carry warnings: {} (`rackbench show {}` says why)",
                p.name,
                p.warnings.join(", "),
                p.runs.join(" ")
            ));
        }
    }
    let infra = match t.infra_cost_per_w {
        Some(r) => format!(
            ", infrastructure {}{r} per provisioned {} W",
            t.currency,
            match t.infra_basis {
                crate::plan::InfraBasis::It => "IT",
                crate::plan::InfraBasis::Facility => "facility (x PUE)",
            }
        ),
        None => String::new(),
    };
    out.push(format!(
        "Rack {} W, {} W reserved, {} W for servers, {} U; energy {}{}/kWh x PUE {} over {} year{}{infra}; each server drawing its power (its runs' under their load, or the plan's power_w) around the clock, no idle hours, and provisioned for that power",
        fmt_number(t.rack_power_budget_w),
        fmt_number(t.rack_reserved_w),
        fmt_number(t.usable_w()),
        t.rack_units,
        t.currency,
        t.energy_price_per_kwh,
        t.pue,
        t.years,
        if t.years == 1.0 { "" } else { "s" }
    ));
    out.extend(t.notes.iter().cloned());
    out
}

/// The table for a terminal: aligned columns, then the footnotes.
pub fn text(t: &TcoResult) -> String {
    let (group, head, body) = cells(t);
    let ncol = head.len();
    let mut width = vec![0usize; ncol];
    for r in std::iter::once(&head).chain(body.iter()) {
        for (i, c) in r.iter().enumerate() {
            width[i] = width[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    out.push_str(&t.title);
    out.push('\n');
    // Group headers span several columns: print them at the start of their span.
    let mut line = String::new();
    let mut pos = 0usize;
    let mut col_start = Vec::new();
    for w in &width {
        col_start.push(pos);
        pos += w + 2;
    }
    for (i, g) in group.iter().enumerate() {
        if g.is_empty() {
            continue;
        }
        while line.chars().count() < col_start[i] {
            line.push(' ');
        }
        line.push_str(g);
        line.push(' ');
    }
    out.push_str(line.trim_end());
    out.push('\n');
    let fmt_row = |r: &Vec<String>| -> String {
        let mut s = String::new();
        for (i, c) in r.iter().enumerate() {
            let pad = width[i] - c.chars().count();
            if i < 2 {
                s.push_str(c);
                s.push_str(&" ".repeat(pad));
            } else {
                s.push_str(&" ".repeat(pad));
                s.push_str(c);
            }
            s.push_str("  ");
        }
        s.trim_end().to_string()
    };
    out.push_str(&fmt_row(&head));
    out.push('\n');
    out.push_str(&"-".repeat(pos.saturating_sub(2)));
    out.push('\n');
    for r in &body {
        out.push_str(&fmt_row(r));
        out.push('\n');
    }
    out.push('\n');
    for f in footnotes(t) {
        out.push_str("  ");
        out.push_str(&f);
        out.push('\n');
    }
    out
}

/// Markdown-safe cell text: pipes and newlines would break the table.
pub fn md_cell(s: &str) -> String {
    // `&` first: a label `V&amp;x` showed as `V&x` (the report's Markdown cells come here too).
    s.replace('&', "&amp;")
        .replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace(['\n', '\r'], " ")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        // Other control characters (an escape sequence in a label) and bidirectional
        // overrides would reach a terminal that shows the file: shown as `\u{1b}`.
        .chars()
        .flat_map(|c| {
            if model::unsafe_to_show(c) {
                c.escape_unicode().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

/// Text made safe for a Markdown table cell and inert: no HTML (`<` `>` escaped), no
/// table break (`|`, newlines), no link, image or emphasis (their characters
/// backslash-escaped), and no autolink (GitHub makes a live link of a bare
/// `https://...`, `www.` or e-mail address: the `:` of `://`, the `.` of `www.` and the
/// `@` of an address are written as character references, which read the same and link
/// nowhere), and no block at the start of a line (a leading `# `, `- `, `+ `, `==`, `---`
/// or `1. `/`1) ` escaped, leading spaces dropped; `>` is already `&gt;`),
/// whatever a host or a user put in it.
pub fn md(s: &str) -> String {
    // Paragraphs start with run labels: `--label "# Best"` made the CPU section's line
    // an H1, `- x` a list item, four leading spaces a code block.
    let cell: Vec<char> = md_cell(s.trim_start()).chars().collect();
    // A marker opens a block only when a space or the end follows it (or, for a rule or
    // heading, the same mark again): `-5.2 %` and `1.5` stay as they are, and so does a
    // lone `-`, the cell of a missing figure (an empty list item at worst).
    let opens = |k: usize, mark: char| {
        matches!(cell.get(k), None | Some(' ')) || cell.get(k) == Some(&mark)
    };
    // An ordered list item is up to 9 digits then `.` or `)`: the index of that mark.
    let digits = cell.iter().take_while(|c| c.is_ascii_digit()).count();
    let list_mark = ((1..=9).contains(&digits)
        && matches!(cell.get(digits), Some('.' | ')'))
        && matches!(cell.get(digits + 1), None | Some(' ')))
    .then_some(digits);
    let mut out = String::with_capacity(s.len() + 8);
    for (i, &ch) in cell.iter().enumerate() {
        let next = |k: usize| cell.get(i + k).copied();
        let www = i >= 3
            && cell[i - 3..i].iter().all(|c| c.eq_ignore_ascii_case(&'w'))
            && (i == 3 || !cell[i - 4].is_alphanumeric());
        match ch {
            '`' | '*' | '_' | '[' | ']' | '!' | '~' => {
                out.push('\\');
                out.push(ch);
            }
            '#' | '-' | '+' | '=' if i == 0 && opens(1, ch) && !(ch == '-' && cell.len() == 1) => {
                out.push('\\');
                out.push(ch);
            }
            _ if Some(i) == list_mark => {
                out.push('\\');
                out.push(ch);
            }
            ':' if next(1) == Some('/') && next(2) == Some('/') => out.push_str("&#58;"),
            '.' if www => out.push_str("&#46;"),
            '@' if domain_follows(&cell[i + 1..]) => out.push_str("&#64;"),
            c => out.push(c),
        }
    }
    out
}

/// `example.org...` after an `@`: what makes GitHub link an e-mail address (`run@a`, a
/// variant's column, is no address and stays as it is).
fn domain_follows(rest: &[char]) -> bool {
    let label = rest
        .iter()
        .take_while(|c| c.is_alphanumeric() || matches!(c, '-' | '_'))
        .count();
    label > 0
        && rest.get(label) == Some(&'.')
        && rest.get(label + 1).is_some_and(|c| c.is_alphanumeric())
}

/// The table as Markdown (a GitHub-style pipe table and the footnotes as a list).
pub fn markdown(t: &TcoResult) -> String {
    let (group, head, body) = cells(t);
    let mut out = format!("### {}\n\n", md(&t.title));
    // Markdown has no column spans: fold the group header into the column header.
    let mut current = String::new();
    let cols: Vec<String> = head
        .iter()
        .zip(group.iter())
        .map(|(h, g)| {
            if !g.is_empty() {
                current = g.clone();
            }
            if h.is_empty() {
                md(g)
            } else if current.starts_with("Rack") {
                md(&format!("Rack: {h}"))
            } else if current == "Per server" {
                md(&format!("Per server: {h}"))
            } else {
                md(h)
            }
        })
        .collect();
    out.push_str(&format!("| {} |\n", cols.join(" | ")));
    let align: Vec<&str> = (0..cols.len())
        .map(|i| if i < 2 { ":--" } else { "--:" })
        .collect();
    out.push_str(&format!("|{}|\n", align.join("|")));
    for r in &body {
        let cells: Vec<String> = r.iter().map(|c| md(c)).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out.push('\n');
    for f in footnotes(t) {
        out.push_str(&format!("- {}\n", md(&f)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::md;

    /// `--label "# Best"` made the CPU section's paragraph an H1 (and `- x` a list item,
    /// `1. x` a numbered one, four leading spaces a code block): a leading block marker is
    /// escaped; a sign or a decimal point is not one.
    #[test]
    fn a_leading_block_marker_is_text() {
        assert_eq!(md("# Best"), "\\# Best");
        assert_eq!(md("### Best"), "\\### Best");
        assert_eq!(md("- x"), "\\- x");
        assert_eq!(md("+ x"), "\\+ x");
        assert_eq!(md("---"), "\\---");
        assert_eq!(md("=="), "\\==");
        assert_eq!(md("1. x"), "1\\. x");
        assert_eq!(md("12) x"), "12\\) x");
        assert_eq!(md("    code"), "code");
        assert_eq!(md("  # x"), "\\# x");
        assert_eq!(md("> quote"), "&gt; quote");
        // Not blocks: left as they are.
        assert_eq!(md("-5.2 %"), "-5.2 %");
        assert_eq!(md("+16.1"), "+16.1");
        assert_eq!(md("1.5"), "1.5");
        assert_eq!(md("-"), "-");
        assert_eq!(md("#1 run"), "#1 run");
        assert_eq!(md("a # b - c"), "a # b - c");
    }
}
