//! `runs`, `show`, `export`, `import`: the results store from the command line, and the
//! text tables every command prints for runs and results.
//!
//! All table formatting lives here ([`results_table`], [`render_table`]) so `rackbench run`
//! ends with the same table `rackbench show` prints. Files are written atomically
//! ([`output::write_atomic`]): an export interrupted half-way leaves the old file, never half a file.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use model::{ResultRecord, RunRecord, Severity, Status};
use store::Store;

use super::output;
use crate::Global;

#[derive(clap::Args, Debug)]
pub struct ListArgs {
    /// Show at most this many runs (newest first).
    #[arg(long, short = 'n', value_name = "N")]
    pub limit: Option<usize>,
    /// Close a run left `running` whose process cannot be seen from here (it ran in a
    /// container since gone, or on another machine sharing the store): it becomes
    /// interrupted, with what it stored kept. Refused for a run alive on this machine.
    #[arg(long, value_name = "RUN")]
    pub close: Option<String>,
}

#[derive(clap::Args, Debug)]
pub struct ShowArgs {
    /// Run id, unique id prefix, label (newest run with it) or `latest`.
    #[arg(default_value = "latest")]
    pub run: String,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// `{"format_version":1,"runs":[...]}`, every field (schema/run.schema.json).
    Json,
    /// Long form: one row per metric, histogram summary and telemetry figure.
    Csv,
}

#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    /// Runs to export (id, id prefix, label or `latest`). Default: the latest run.
    #[arg(conflicts_with = "all")]
    pub runs: Vec<String>,
    /// Export every stored run.
    #[arg(long)]
    pub all: bool,
    /// Output format. Default: from the -o file's extension (.json or .csv, a backup's
    /// .json.bak too; none, or a dated name's digits, json; another is refused unless
    /// --format is given).
    #[arg(long, short = 'f', value_enum)]
    pub format: Option<ExportFormat>,
    /// Write to this file (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// JSON exports (`rackbench export --format json`), `-` for stdin. Each file is
    /// imported whole or not at all; the others are imported whatever became of it.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

pub fn list(a: ListArgs, g: &Global) -> anyhow::Result<i32> {
    if a.limit == Some(0) {
        bail!("-n 0 lists no runs; give -n 1 or more, or leave it out for all of them");
    }
    // Listing only reads; closing a run writes (and migrates an older store).
    let store = match &a.close {
        Some(_) => Store::open_existing(&g.db_path())?,
        None => Store::open_read_only(&g.db_path())?,
    };
    if let Some(run) = &a.close {
        let id = store.resolve(run)?;
        store.close_by_hand(&id)?;
        if !g.quiet {
            engine::errln!("closed run {id}: interrupted, with what it stored kept");
        }
    }
    let mut runs = store.list_runs()?;
    if let Some(n) = a.limit {
        runs.truncate(n);
    }
    if g.json {
        print_stdout(&(serde_json::to_string_pretty(&runs)? + "\n"))?;
        return Ok(0);
    }
    if runs.is_empty() {
        if !g.quiet {
            engine::errln!(
                "no runs in {}; start one with `rackbench run kv ...`, or pick another store with --db PATH",
                store.path().display()
            );
        }
        return Ok(0);
    }
    let headers = [
        "ID",
        "CREATED (UTC)",
        "LABEL",
        "STATUS",
        "WORKLOADS",
        "RESULTS",
        "HOST",
    ];
    let rows: Vec<Vec<Cell>> = runs
        .iter()
        .map(|r| {
            vec![
                Cell::left(&r.id),
                Cell::left(r.created_at.format("%Y-%m-%d %H:%M:%S").to_string()),
                Cell::left(r.label.as_deref().unwrap_or("-")),
                Cell::left(list_status(r)),
                Cell::left(r.workloads.join(",")),
                Cell::right(r.results.to_string()),
                Cell::left(if r.host.is_empty() {
                    "-"
                } else {
                    r.host.as_str()
                }),
            ]
        })
        .collect();
    print_stdout(&render_table(&headers, &rows))?;
    Ok(0)
}

/// The run `q` names ([`Store::resolve`]), saying on stderr which run a label several
/// runs carry was taken to mean ([`Store::label_note`]).
pub fn resolve_noting(store: &Store, q: &str) -> anyhow::Result<String> {
    let id = store.resolve(q)?;
    if let Some(note) = store.label_note(q, &id)? {
        engine::errln!("rackbench: note: {note}");
    }
    Ok(id)
}

pub fn show(a: ShowArgs, g: &Global) -> anyhow::Result<i32> {
    let store = Store::open_read_only(&g.db_path())?;
    let id = resolve_noting(&store, &a.run)?;
    let run = store.load_run(&id)?;
    if g.json {
        print_stdout(&(serde_json::to_string_pretty(&run)? + "\n"))?;
        return Ok(0);
    }
    let mut out = run_header(&run);
    out.push('\n');
    out.push_str(&results_table(&run));
    // Per point over its repetitions, as `run` ends with it (the report's mean ± sd,
    // `high_variation` where they vary widely), and each test's best point.
    out.push_str(&model::printable_lines(
        &crate::commands::run::repetition_summary(&run),
    ));
    out.push_str(&efficiency_table(&run));
    out.push_str(&views_text(&run));
    print_stdout(&out)?;
    Ok(0)
}

/// The report's views `show` prints ([`report::views::console_views`]: each capacity
/// test's steps, the TPC-C consistency check's outcome) as console tables: the report's
/// figures and words, taken from the same views, never worked out a second time. Every
/// string is shown safe for the terminal.
pub fn views_text(run: &RunRecord) -> String {
    let mut out = String::new();
    // Per sweep point of a many-host run, each host's role, CPU, NIC and power, each
    // generator's own figure, and how far apart they started: the report's table.
    for t in report::hosts_view::host_tables(std::slice::from_ref(run)) {
        out.push_str(&format!("\n{}\n", clean(&t.caption)));
        out.push_str(&console_table(&t.head, &t.rows, t.text_cols));
        for n in &t.notes {
            out.push_str(&format!("{}\n", clean(n)));
        }
    }
    for v in report::views::console_views(run) {
        out.push_str(&format!("\n{}\n", clean(&v.title)));
        for t in &v.tables {
            out.push_str(&format!("{}:\n", clean(&t.caption)));
            // The first column names the row (a step, a level); the rest are figures.
            out.push_str(&console_table(&t.head, &t.rows, 1));
        }
        for n in &v.notes {
            out.push_str(&format!("{}\n", clean(n)));
        }
    }
    out
}

/// A table of the report's plain cells on the console, made safe for the terminal: the
/// first `text_cols` columns left-aligned (names), the rest right-aligned (figures).
fn console_table(head: &[String], rows: &[Vec<String>], text_cols: usize) -> String {
    let head: Vec<String> = head.iter().map(|h| clean(h)).collect();
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    let rows: Vec<Vec<Cell>> = rows
        .iter()
        .map(|r| {
            r.iter()
                .enumerate()
                .map(|(i, c)| {
                    if i < text_cols {
                        Cell::left(c.as_str())
                    } else {
                        Cell::right(c.as_str())
                    }
                })
                .collect()
        })
        .collect();
    render_table(&head, &rows)
}

/// Per result, what the system under test spent: its CPU in percent of one CPU and whose
/// ([`report::derive::sut_cpu`], the report's "%CPU used"), its power by the report's one
/// rule, and throughput per watt. A figure that could not
/// be measured is `-`, and why is said once below the table. A capacity test has no
/// perf/W here: a levels test's headline is its perf/W already (SPECpower's overall
/// ops/s/W: dividing it by watts again gave ops/s/W/W), and a ramp's or a search's power
/// spans steps of different loads.
pub fn efficiency_table(run: &RunRecord) -> String {
    let mut rows = Vec::new();
    let mut reasons: Vec<String> = Vec::new();
    // A capacity test whose power was measured has its PERF/W left out: said once; so is
    // a latency's (mem's ns): a latency per watt is no efficiency.
    let mut capacity_unrated = false;
    let mut latency_unrated = false;
    // Tests of phases one after another: their CPU and power are of every phase, their
    // headline of one (the report and compare give them no perf/W either).
    let mut phased: Vec<String> = Vec::new();
    let mut any = false;
    let mut cpu_reasons: Vec<String> = Vec::new();
    for r in &run.results {
        let ts = report::derive::sut_summary(run, r);
        // The report's one rule: the SUT host's CPUs, or its server processes where the
        // load generator ran beside them (the host's busy % would be the generator's too).
        let cpu = match report::derive::sut_cpu(run, r) {
            Ok(c) => Some(c),
            Err(why) => {
                let why = format!("%CPU used not known: {why}");
                if ts.is_some() && !cpu_reasons.contains(&why) {
                    cpu_reasons.push(why);
                }
                None
            }
        };
        let power = match ts.map(|t| (t, model::power::headline(&t.power))) {
            Some((_, Some(h))) => Some(h),
            Some((t, None)) => {
                let why = t.power_missing.clone().unwrap_or_else(|| {
                    "no whole-server source or RAPL package/DRAM zone was read".into()
                });
                if !reasons.contains(&why) {
                    reasons.push(why);
                }
                None
            }
            None => None,
        };
        let perf = r.headline_value().filter(|_| !r.is_invalid());
        let unit = r.metric(&r.headline, &[]).map(unit_of).unwrap_or_default();
        let capacity = r.capacity_phase().is_some();
        capacity_unrated |= capacity && power.is_some();
        let latency = !model::higher_is_better(&r.headline, &unit);
        latency_unrated |= latency && power.is_some();
        let phases = model::phases_of(&[r]).filter(|_| power.is_some());
        if let Some(why) = &phases {
            let why = format!("PERF/W of {}: none; {why}", r.test);
            if !phased.contains(&why) {
                phased.push(why);
            }
        }
        let per_w = match (perf, &power) {
            (Some(p), Some(h))
                if h.mean_watts > 0.0 && !capacity && !latency && phases.is_none() =>
            {
                Some(p / h.mean_watts)
            }
            _ => None,
        };
        // Perf/W carries its power's marking: a model's watts give a modelled perf/W.
        let kind = |h: &model::power::HeadlinePower| {
            if h.modelled {
                " (modelled)"
            } else if h.whole_system {
                ""
            } else {
                " (CPU+DRAM only)"
            }
        };
        any |= cpu.is_some() || power.is_some();
        let dash = || "-".to_string();
        rows.push(vec![
            Cell::right(r.step.to_string()),
            Cell::left(r.test.clone()),
            Cell::right(cpu.as_ref().map_or_else(dash, |c| format!("{:.1}", c.pct))),
            Cell::left(cpu.as_ref().map_or_else(dash, |c| c.basis.label())),
            Cell::right(
                power
                    .as_ref()
                    .map_or_else(dash, |h| report::fmt::watts(h.mean_watts)),
            ),
            Cell::left(
                power
                    .as_ref()
                    .map_or_else(dash, |h| format!("{}{}", h.named(run), kind(h))),
            ),
            Cell::right(match (per_w, &power) {
                (Some(v), Some(h)) => format!("{} {unit}/W{}", fmt_num(v), kind(h)),
                _ => dash(),
            }),
        ]);
    }
    if !any {
        // Neither was measured: both reasons, CPU's first (a `--dsn` server's host is not
        // watched, which is why neither is known).
        let both: Vec<String> = cpu_reasons
            .into_iter()
            .chain(
                reasons
                    .into_iter()
                    .map(|r| format!("power not measured: {r}")),
            )
            .collect();
        return if both.is_empty() {
            String::new()
        } else {
            format!(
                "\npower and CPU: not measured ({})\n",
                clean(&both.join("; "))
            )
        };
    }
    let mut out = String::from("\nsystem under test: CPU, power, efficiency\n");
    out.push_str(&render_table(
        &[
            "STEP",
            "TEST",
            "%CPU USED",
            "OF",
            "POWER W",
            "SOURCE",
            "PERF/W",
        ],
        &rows,
    ));
    out.push_str(&format!("{}\n", report::derive::CPU_USED_MEANING));
    for why in cpu_reasons {
        out.push_str(&format!("{}\n", clean(&why)));
    }
    for why in reasons {
        out.push_str(&format!("power not measured: {}\n", clean(&why)));
    }
    if capacity_unrated {
        out.push_str(&format!("{CAPACITY_PER_W}\n"));
    }
    if latency_unrated {
        out.push_str(&format!(
            "PERF/W of a latency: none; {}\n",
            report::derive::NOT_A_THROUGHPUT
        ));
    }
    for why in phased {
        out.push_str(&format!("{}\n", clean(&why)));
    }
    out
}

/// Why a capacity test's PERF/W is `-` in [`efficiency_table`].
const CAPACITY_PER_W: &str = "PERF/W of ramp, search and levels: none here (their steps \
    ran at different loads); a levels test's headline is its perf/W (overall ops/s/W), and \
    its table below gives each level's perf/W";

/// The format an `export -o FILE` name asks for: `.csv` CSV; `.json`, no extension, a
/// dated name's digits (`runs-2024.06.01`) or a JSON backup's (`runs.json.bak`) JSON; any
/// other refused, a report's name (`.md`, `.html`, `.htm`, `.svg`) pointing at `report`
/// (a `report.md` overwritten with JSON), another's (`runs.xlsx`) at `--format`: it got
/// JSON under a spreadsheet's name.
fn export_format_of(path: &Path) -> anyhow::Result<ExportFormat> {
    match named_ext(path).as_deref() {
        Some("csv") => Ok(ExportFormat::Csv),
        Some(report @ ("md" | "html" | "htm" | "svg")) => anyhow::bail!(
            "export -o {}: export writes JSON or CSV, not .{report}; a Markdown or HTML \
             report is `rackbench report RUN -o FILE`, or give --format json|csv to write \
             the export under that name",
            path.display()
        ),
        Some("json") | None => Ok(ExportFormat::Json),
        // A dated name's last part (`runs-2024.06.01`) is no file type.
        Some(digits) if digits.bytes().all(|b| b.is_ascii_digit()) => Ok(ExportFormat::Json),
        // `-o runs.xlsx` wrote JSON under a spreadsheet's name, and said it had exported.
        Some(other) => anyhow::bail!(
            "export -o {}: export writes JSON (.json) or CSV (.csv), and .{other} is \
             neither; name the file .json or .csv, or give --format json|csv to write the \
             export under this name",
            path.display()
        ),
    }
}

/// The extension an `export -o` name gives its format by, lower-cased: its own, or a
/// backup's inner one (`runs.json.bak`, `.old`, `.orig`: json; `runs.json.gz` is `gz`).
fn named_ext(path: &Path) -> Option<String> {
    let lower = |p: &Path| {
        p.extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
    };
    let ext = lower(path)?;
    if ["bak", "old", "orig"].contains(&ext.as_str()) {
        if let Some(inner) = path.file_stem().map(Path::new).and_then(lower) {
            return Some(inner);
        }
    }
    Some(ext)
}

/// A `--format` the -o name contradicts (`--format csv -o runs.json`) is refused, as
/// `report` refuses one: it wrote CSV into a `.json` file that `import` then refused.
fn given_format_fits(f: ExportFormat, path: &Path) -> anyhow::Result<ExportFormat> {
    let named = match named_ext(path).as_deref() {
        Some("json") => Some(ExportFormat::Json),
        Some("csv") => Some(ExportFormat::Csv),
        _ => None,
    };
    match named {
        Some(n) if n != f => {
            let word = |f: ExportFormat| match f {
                ExportFormat::Json => "json",
                ExportFormat::Csv => "csv",
            };
            anyhow::bail!(
                "export -o {}: --format {} does not match the file's extension; give -o a .{} \
                 name, or leave --format out",
                path.display(),
                word(f),
                word(f)
            )
        }
        _ => Ok(f),
    }
}

pub fn export(a: ExportArgs, g: &Global) -> anyhow::Result<i32> {
    let store = Store::open_read_only(&g.db_path())?;
    let ids: Vec<String> = if a.all {
        // Oldest first: the order the runs were made.
        store.list_runs()?.into_iter().rev().map(|s| s.id).collect()
    } else if a.runs.is_empty() {
        vec![store.resolve("latest")?]
    } else {
        let mut seen = BTreeSet::new();
        let mut ids = Vec::new();
        for q in &a.runs {
            let id = resolve_noting(&store, q)?;
            if seen.insert(id.clone()) {
                ids.push(id);
            }
        }
        ids
    };
    let runs = ids
        .iter()
        .map(|id| store.load_run(id))
        .collect::<anyhow::Result<Vec<_>>>()?;

    // `-o -` is stdout, as everywhere else.
    let output = a.output.as_ref().filter(|p| p.as_os_str() != "-");
    let format = match (a.format, output) {
        (Some(f), Some(p)) => given_format_fits(f, p)?,
        (Some(f), None) => f,
        (None, None) => ExportFormat::Json,
        (None, Some(p)) => export_format_of(p)?,
    };
    // `--json` asks every command for JSON: a CSV export beside it was written unsaid.
    if g.json && format == ExportFormat::Csv {
        anyhow::bail!(
            "export: --json asks for JSON, but the export is CSV (--format csv, or a .csv \
             -o file): give one of them"
        );
    }
    let bytes = match format {
        ExportFormat::Json => (store::export::to_json(&runs) + "\n").into_bytes(),
        ExportFormat::Csv => {
            let mut buf = Vec::new();
            store::export::to_csv(&runs, &mut buf)?;
            buf
        }
    };
    match output {
        Some(path) => {
            output::write_atomic(path, &bytes, &g.db_path())?;
            if !g.quiet {
                engine::errln!(
                    "exported {} run{} to {}",
                    runs.len(),
                    plural(runs.len()),
                    path.display()
                );
            }
        }
        None => write_stdout(&bytes)?,
    }
    Ok(0)
}

pub fn import(a: ImportArgs, g: &Global) -> anyhow::Result<i32> {
    if a.files.iter().filter(|f| f.as_os_str() == "-").count() > 1 {
        anyhow::bail!("import: `-` (stdin) given twice; it can be read once");
    }
    // Opened at the first file that reads as an export: files that all fail make no store.
    let mut store: Option<Store> = None;
    let mut outcomes = Vec::new();
    for file in &a.files {
        let done = read_export(file).and_then(|runs| {
            let s = match store.take() {
                Some(s) => s,
                None => Store::open(&g.db_path())?,
            };
            let done = s.import_all(&runs);
            store = Some(s);
            done
        });
        outcomes.push((file, done));
    }
    // One file: its outcome is the command's (an error is the error, as before), but
    // for `--json`, whose reader takes the error from the summary as for several files.
    if outcomes.len() == 1 && outcomes[0].1.is_err() && !g.json {
        if let Some((_, Err(e))) = outcomes.pop() {
            return Err(e);
        }
    }
    let failed = outcomes.iter().filter(|(_, o)| o.is_err()).count();
    let name = |f: &Path| {
        if f.as_os_str() == "-" {
            "stdin".to_string()
        } else {
            f.display().to_string()
        }
    };
    if g.json {
        let files: Vec<serde_json::Value> = outcomes
            .iter()
            .map(|(f, o)| match o {
                Ok(d) => serde_json::json!({
                    "file": name(f), "imported": d.imported, "skipped": d.skipped,
                    "differing": d.differing,
                }),
                Err(e) => serde_json::json!({
                    "file": name(f), "error": model::redact_secrets(&format!("{e:#}")),
                }),
            })
            .collect();
        let all = |pick: fn(&store::Imported) -> &Vec<String>| -> Vec<&String> {
            outcomes
                .iter()
                .filter_map(|(_, o)| o.as_ref().ok())
                .flat_map(pick)
                .collect()
        };
        let v = serde_json::json!({
            "imported": all(|d| &d.imported),
            "skipped": all(|d| &d.skipped),
            "differing": all(|d| &d.differing),
            "files": files,
        });
        print_stdout(&(serde_json::to_string_pretty(&v)? + "\n"))?;
    }
    let db = g.db_path();
    let into = store.as_ref().map_or(db.as_path(), Store::path).display();
    if !g.json && !g.quiet {
        let many = outcomes.len() > 1;
        for (file, o) in &outcomes {
            let head = if many {
                format!("{}: ", clean(&name(file)))
            } else {
                String::new()
            };
            match o {
                Ok(d) => {
                    let mut msg = format!(
                        "{head}imported {} run{} into {into}",
                        d.imported.len(),
                        plural(d.imported.len()),
                    );
                    let same: Vec<&str> = d
                        .skipped
                        .iter()
                        .filter(|id| !d.differing.contains(id))
                        .map(String::as_str)
                        .collect();
                    if !same.is_empty() {
                        msg.push_str(&format!(
                            "; {} already there, skipped ({})",
                            same.len(),
                            clean(&same.join(", "))
                        ));
                    }
                    if !d.differing.is_empty() {
                        msg.push_str(&format!(
                            "; NOT imported: {} stored already under the same id with other \
                             results or hosts, the stored one kept ({}): import the file into \
                             another store (--db) to set the two side by side",
                            d.differing.len(),
                            clean(&d.differing.join(", "))
                        ));
                    }
                    engine::errln!("{msg}");
                }
                Err(e) => engine::errln!(
                    "{head}nothing imported: {}",
                    model::printable_lines(&model::redact_secrets(&format!("{e:#}")))
                ),
            }
        }
        if many && failed > 0 {
            let others = if failed < outcomes.len() {
                format!(": the others are in {into}")
            } else {
                String::new()
            };
            engine::errln!(
                "{failed} of {} files not imported (each file is imported whole or not at \
                 all){others}",
                outcomes.len()
            );
        }
    }
    // Bad input, as a single unreadable file is; so is a run not imported for one of
    // the same id stored with other results.
    let differing = outcomes
        .iter()
        .any(|(_, o)| o.as_ref().is_ok_and(|d| !d.differing.is_empty()));
    Ok(if failed > 0 || differing { 2 } else { 0 })
}

/// The runs of one JSON export, `-` being stdin.
fn read_export(file: &Path) -> anyhow::Result<Vec<RunRecord>> {
    let text = if file.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("reading the export from stdin")?;
        s
    } else {
        std::fs::read_to_string(file).with_context(|| {
            format!(
                "cannot read {}; give the path of a `rackbench export --format json` file",
                file.display()
            )
        })?
    };
    store::export::from_json(&text)
        .with_context(|| format!("{} is not a rackbench JSON export", file.display()))
}

// ---- output ----

fn write_stdout(bytes: &[u8]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        // `rackbench export | head` closing the pipe is not an error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("writing to stdout"),
    }
}

fn print_stdout(s: &str) -> anyhow::Result<()> {
    write_stdout(s.as_bytes())
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The STATUS cell of `rackbench runs` ([`Status::with_invalid`]).
fn list_status(r: &store::RunSummary) -> String {
    r.status.with_invalid(r.invalid, r.results)
}

// ---- tables ----

/// One table cell: text and alignment (numbers right, words left).
pub struct Cell {
    pub text: String,
    pub right: bool,
}

impl Cell {
    /// Text from a store, a host or a user is shown with its control characters escaped:
    /// an escape sequence or a newline in a label must neither reach the terminal nor
    /// break the table.
    pub fn left(s: impl Into<String>) -> Cell {
        Cell {
            text: model::printable(&s.into()),
            right: false,
        }
    }
    pub fn right(s: impl Into<String>) -> Cell {
        Cell {
            text: model::printable(&s.into()),
            right: true,
        }
    }
}

/// Aligned columns, two spaces apart, no trailing spaces. Headers align like their column.
pub fn render_table(headers: &[&str], rows: &[Vec<Cell>]) -> String {
    let n = headers.len();
    let mut width: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    let mut right = vec![false; n];
    for row in rows {
        for (i, c) in row.iter().enumerate().take(n) {
            width[i] = width[i].max(c.text.chars().count());
            right[i] |= c.right;
        }
    }
    let mut out = String::new();
    let mut line = |cells: Vec<&str>| {
        let mut l = String::new();
        for (i, text) in cells.iter().enumerate() {
            if i > 0 {
                l.push_str("  ");
            }
            let pad = width[i].saturating_sub(text.chars().count());
            if right[i] {
                l.push_str(&" ".repeat(pad));
                l.push_str(text);
            } else {
                l.push_str(text);
                l.push_str(&" ".repeat(pad));
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(headers.to_vec());
    for row in rows {
        line(row.iter().take(n).map(|c| c.text.as_str()).collect());
    }
    out
}

/// A measured figure for a table: about four significant digits, no exponent. A figure
/// prints by its size alone: a mean of exactly 200 W reads `200.0` as 199.7 W does (it
/// read `200` beside `200.0` in one column). Counts are no figures: [`fmt_metric`] prints
/// a metric in a count unit as a whole number.
pub fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    let a = v.abs();
    if a >= 1000.0 {
        // Half up, as the report's tables round (`{:.0}` rounds a tie to even: a mean of
        // 118,036.5 read 118036 here and 118,037 there).
        format!("{}", v.round())
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else if a == 0.0 {
        "0".to_string()
    } else {
        // Three significant digits below 1 (0.0123), at most nine decimals.
        let decimals = (2 - a.log10().floor() as i32).clamp(3, 9) as usize;
        format!("{v:.decimals$}")
    }
}

/// A metric's value for a table: a count (`transactions`, `errors`, see
/// [`model::is_count_unit`]) as a whole number, any other figure by [`fmt_num`].
pub fn fmt_metric(m: &model::Metric) -> String {
    if m.is_count() {
        report::fmt::count(m.value)
    } else {
        fmt_num(m.value)
    }
}

/// A net test's figures shown beside its rate where a result has them (metric, header,
/// the factor to the header's unit): iperf3's packets, loss, jitter and retransmits, and
/// each end's CPU. Jitter in µs, as the report and `compare` give it (acceptance P, 6: in
/// ms it read 0.000263 here and 0.263 µs there).
const NET_COLUMNS: [(&str, &str, f64); 6] = [
    ("packets_per_s", "PACKETS/S", 1.0),
    ("loss_pct", "LOSS %", 1.0),
    ("jitter_ms", "JITTER US", 1e3),
    ("retransmits", "RETRANS", 1.0),
    ("sender_cpu_pct", "SEND %CPU", 1.0),
    ("receiver_cpu_pct", "RECV %CPU", 1.0),
];

/// Why a net test of several streams shows no stream's rate, where its total is there:
/// it was stored before they were kept (a missing total says its own reason).
fn streams_unstored(r: &ResultRecord) -> Option<String> {
    let streams = r.setting("streams").and_then(serde_json::Value::as_u64)?;
    (r.workload == "net"
        && streams > 1
        && r.metric("throughput_gbit_per_s", &[]).is_some()
        && model::stream_spread(&r.metrics, None).is_none())
    .then(|| {
        "each stream's rate: not stored (a result of a rackbench before they were kept; its total stands)"
            .to_string()
    })
}

/// Nanoseconds in ms to three places, as the tables' MS columns print them; a figure
/// under 0.0005 ms keeps its significant digits rather than reading `0.000`.
fn ms(ns: f64) -> String {
    report::fmt::fixed(ns / 1e6, 3)
}

/// Parameters shown first when they vary (the knobs the seeds sweep).
const PARAM_ORDER: [&str; 8] = [
    "instances",
    "clients",
    "connections",
    "pipeline",
    "threads",
    "rate",
    // A pair's sender before its receiver, as `--pairs a>b` reads.
    "sender_host",
    "receiver_host",
];

/// The keys whose values differ between results of the run, knobs first.
fn varying_params(results: &[ResultRecord]) -> Vec<String> {
    let mut values: BTreeMap<&str, Vec<Option<&serde_json::Value>>> = BTreeMap::new();
    for r in results {
        for k in r.params.keys() {
            values.entry(k.as_str()).or_default();
        }
    }
    for (k, vs) in values.iter_mut() {
        vs.extend(results.iter().map(|r| r.params.get(*k)));
    }
    let mut keys: Vec<String> = values
        .into_iter()
        .filter(|(_, vs)| vs.iter().any(|v| *v != vs[0]))
        .map(|(k, _)| k.to_string())
        .collect();
    keys.sort_by_key(|k| {
        (
            PARAM_ORDER
                .iter()
                .position(|p| p == k)
                .unwrap_or(PARAM_ORDER.len()),
            k.clone(),
        )
    });
    keys
}

fn param_text(v: Option<&serde_json::Value>) -> String {
    match v {
        None => "-".to_string(),
        // A list as its items (`sha256`), not JSON (`["sha256"]`), as the report shows it.
        Some(list @ serde_json::Value::Array(_)) => report::derive::setting_str(list),
        // A swept value whole (0.9995 and 0.9999 are two points, not two of "1").
        Some(v) => report::derive::param_str(v),
    }
}

/// p50, p99, p99.9 in ns: from the unlabelled `latency_p50_ns`... metrics, else from the
/// histogram summary (`all` first, coordinated-omission-corrected before service time).
/// None for a capacity test, as in the report: its histograms are one per offered rate,
/// and none is the headline's latency (the last step's, an interrupted or saturated
/// one, stood beside a ramp's figure from another step); its step table has each.
fn percentiles_ns(r: &ResultRecord) -> [Option<f64>; 3] {
    if r.capacity_phase().is_some() {
        return [None; 3];
    }
    // A histogram that recorded nothing has no percentiles (not 0 ms).
    let hist = r
        .histograms
        .iter()
        .filter(|h| h.summary.count > 0 && h.is_request_latency())
        .max_by_key(|h| (h.name == "all", h.kind == "corrected"));
    let from_metric = |name: &str| r.metric(name, &[]).map(|m| m.value);
    [
        from_metric("latency_p50_ns").or(hist.map(|h| h.summary.p50_ns as f64)),
        from_metric("latency_p99_ns").or(hist.map(|h| h.summary.p99_ns as f64)),
        from_metric("latency_p999_ns").or(hist.map(|h| h.summary.p999_ns as f64)),
    ]
}

/// Each transaction type's latency, one row per result and type: count, the average
/// beside p50/p95/p99 in ms, from the stored histogram (merged exactly, never averaged
/// percentiles). Types are those a workload labels its metrics with (`txn=`); the
/// coordinated-omission corrected histogram is preferred where there is one. Empty when
/// no result stores any.
fn per_type_latency_table(results: &[ResultRecord]) -> String {
    let mut rows = Vec::new();
    for r in results {
        let mut types: Vec<&str> = r
            .metrics
            .iter()
            .filter_map(|m| m.labels.get("txn").map(String::as_str))
            .collect();
        types.dedup();
        for t in types {
            let Some(h) = r
                .histograms
                .iter()
                .filter(|h| h.name == t)
                .max_by_key(|h| h.kind == "corrected")
            else {
                continue;
            };
            let p95 = h
                .histogram()
                .ok()
                .filter(|x| !x.is_empty())
                .map(|x| x.value_at_quantile(0.95) as f64);
            let s = &h.summary;
            // No transaction of the type completed: a count of 0 and no latencies.
            let of = |ns: f64| if s.count > 0 { ms(ns) } else { "-".into() };
            rows.push(vec![
                Cell::right(r.step.to_string()),
                Cell::left(t.to_string()),
                Cell::left(h.kind.clone()),
                Cell::right(s.count.to_string()),
                Cell::right(of(s.mean_ns)),
                Cell::right(of(s.p50_ns as f64)),
                Cell::right(p95.map(ms).unwrap_or_else(|| "-".into())),
                Cell::right(of(s.p99_ns as f64)),
            ]);
        }
    }
    if rows.is_empty() {
        return String::new();
    }
    let headers = [
        "STEP", "TYPE", "LATENCY", "COUNT", "AVG MS", "P50 MS", "P95 MS", "P99 MS",
    ];
    format!("\nlatency per type:\n{}", render_table(&headers, &rows))
}

/// The connect times of the results that opened connections during the test (a new
/// connection every N requests, or after the server closed one), as httperf gives its
/// "Connection time [ms]: min avg max median stddev": one row per result, with the
/// connects counted. Empty when no result timed one (kept alive: the notes say why).
fn connect_time_table(results: &[ResultRecord]) -> String {
    let rows: Vec<Vec<Cell>> = results
        .iter()
        .flat_map(|r| {
            r.histograms
                .iter()
                .filter(|h| !h.is_request_latency() && h.summary.count > 0)
                .map(move |h| {
                    let s = &h.summary;
                    vec![
                        Cell::right(r.step.to_string()),
                        Cell::left(r.test.clone()),
                        Cell::right(s.count.to_string()),
                        Cell::right(ms(s.min_ns as f64)),
                        Cell::right(ms(s.mean_ns)),
                        Cell::right(ms(s.p50_ns as f64)),
                        Cell::right(ms(s.p99_ns as f64)),
                        Cell::right(ms(s.max_ns as f64)),
                        Cell::right(ms(s.stdev_ns)),
                    ]
                })
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let headers = [
        "STEP", "TEST", "CONNECTS", "MIN MS", "AVG MS", "P50 MS", "P99 MS", "MAX MS", "STDEV MS",
    ];
    format!(
        "\nconnect time (connect call to established, per connection opened during the test):\n{}",
        render_table(&headers, &rows)
    )
}

/// TPC-C with `--databases N`: each database's NOPM and TPM, one row per result and
/// database. TPM is the server's count for that database where the engine keeps one
/// (PostgreSQL), else the client's count of committed and rolled-back transactions
/// (`tpm_client`, MariaDB, whose server counts commits server-wide), marked `(client)`
/// with a note saying so. Empty when no result has per-database figures.
fn per_database_table(results: &[ResultRecord]) -> String {
    let mut rows = Vec::new();
    let mut client_counted = false;
    for r in results {
        let by_db = |name: &str, db: &str| r.metric(name, &[("db", db)]).map(|m| m.value);
        for db in 1..=64u32 {
            let d = db.to_string();
            let (nopm, tpm, client) =
                (by_db("nopm", &d), by_db("tpm", &d), by_db("tpm_client", &d));
            if nopm.is_none() && tpm.is_none() && client.is_none() {
                break;
            }
            let tpm = match (tpm, client) {
                (Some(t), _) => fmt_num(t),
                (None, Some(c)) => {
                    client_counted = true;
                    format!("{} (client)", fmt_num(c))
                }
                (None, None) => "-".into(),
            };
            rows.push(vec![
                Cell::right(r.step.to_string()),
                Cell::right(d),
                Cell::right(nopm.map(fmt_num).unwrap_or_else(|| "-".into())),
                Cell::right(tpm),
            ]);
        }
    }
    if rows.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "\nper database:\n{}",
        render_table(&["STEP", "DB", "NOPM", "TPM"], &rows)
    );
    if client_counted {
        out.push_str(
            "(client): counted by the client (committed + rolled-back transactions per minute \
             of the measured window), as the server counts commits for all databases together; \
             the TPM above is the server's\n",
        );
    }
    out
}

/// Errors: the unlabelled `errors` metric, else the sum of the labelled ones. None for a
/// capacity test, as its latency ([`percentiles_ns`]): its steps' errors, those past
/// saturation among them, are no error count of its headline.
fn errors_of(r: &ResultRecord) -> Option<f64> {
    if r.capacity_phase().is_some() {
        return None;
    }
    r.metric("errors", &[]).map(|m| m.value).or_else(|| {
        let labelled: Vec<f64> = r
            .metrics
            .iter()
            .filter(|m| m.name == "errors")
            .map(|m| m.value)
            .collect();
        (!labelled.is_empty()).then(|| labelled.iter().sum())
    })
}

/// The FLAGS cell: `! code` a warning, `!! code` an invalid figure. The status is the
/// RESULT cell's ([`result_text`]): said here too, it read `!! failed failed`.
/// A code raised on several hosts is said once with its count (`! other_load x3`), the
/// notes below saying each host's.
fn flag_codes(r: &ResultRecord) -> String {
    model::counted(r.flags.iter().map(|f| match f.severity {
        Severity::Warning => format!("! {}", clean(&f.code)),
        Severity::Invalid => format!("!! {}", clean(&f.code)),
    }))
    .join(" ")
}

/// The RESULT cell. A result that did not end ok leads with its status, its figure (a
/// surviving generator's share, what ran before the stop) marked partial: the report
/// leaves it out, and it is not the test's figure. Without a headline figure: which
/// figure is missing (the notes say why), never a bare `: missing`. A figure that is
/// only a lower bound (a search whose every probe met its objective) reads `≥ 2000
/// ops/s`: its warning below says why, but `2000 ops/s ! search_limit` read as the rate.
fn result_text(r: &ResultRecord) -> String {
    let at_least = if r.headline_lower_bound().is_some() {
        "≥ "
    } else {
        ""
    };
    let figure = r
        .metric(&r.headline, &[])
        .map(|m| format!("{at_least}{} {}", fmt_metric(m), unit_of(m)));
    match (r.status, figure) {
        (Status::Ok, Some(f)) => f,
        (Status::Ok, None) if r.headline.is_empty() => "no headline figure".to_string(),
        (Status::Ok, None) => format!("{} not measured", clean(&r.headline)),
        (s, Some(f)) => format!("{} (partial: {f})", s.word()),
        (s, None) => s.word().to_string(),
    }
}

/// Why a result's headline figure is missing, when it is and the result says nothing
/// else of it (no missing figure of that name, no error).
fn unexplained_headline(r: &ResultRecord) -> Option<String> {
    let silent = r.metric(&r.headline, &[]).is_none()
        && r.error.is_none()
        && !r.missing.iter().any(|m| m.name == r.headline);
    silent.then(|| {
        if r.headline.is_empty() {
            "no headline figure: the result names none and stores no reason".to_string()
        } else {
            format!(
                "not measured: {}: the result stores no figure and no reason for it",
                clean(&r.headline)
            )
        }
    })
}

/// The results of a run as an aligned text table, one row per result: step, test, the
/// parameters that vary, the headline figure with its unit (a result that failed or was
/// interrupted: its status, the figure marked partial), ops/s (when the headline is
/// something else), NOPM and TPM side by side (TPC-C results, whichever leads), p50/p99/
/// p99.9 in ms, errors and flags (`! code` a warning, `!! code` an invalid figure). A
/// second table gives each transaction type's latency (average beside p50/p95/p99) where
/// its histogram is stored. Notes below give each flag's message, errors and missing
/// figures: a suspect number is never shown without its reason.
pub fn results_table(run: &RunRecord) -> String {
    let results = &run.results;
    if results.is_empty() {
        return "no results stored for this run\n".to_string();
    }
    let many_workloads = results.iter().any(|r| r.workload != results[0].workload);
    let params = varying_params(results);
    let show_rep = results.iter().any(|r| r.repetition > 0);
    let show_ops = results
        .iter()
        .any(|r| r.headline != "ops_per_s" && r.metric("ops_per_s", &[]).is_some());
    let pct: Vec<[Option<f64>; 3]> = results.iter().map(percentiles_ns).collect();
    let show_pct = [0, 1, 2].map(|i| pct.iter().any(|p| p[i].is_some()));
    let errors: Vec<Option<f64>> = results.iter().map(errors_of).collect();
    let show_errors = errors.iter().any(Option::is_some);
    // TPC-C's two figures side by side, whichever the mix made the headline.
    let show_tpcc = ["nopm", "tpm"].map(|n| results.iter().any(|r| r.metric(n, &[]).is_some()));
    // A net test's figures iperf3 prints beside its rate: a loss under 1% was invisible
    // behind "0.299 Gbit/s" (acceptance N, 2).
    let net: Vec<(&str, &str, f64)> = NET_COLUMNS
        .into_iter()
        .filter(|(n, _, _)| results.iter().any(|r| r.metric(n, &[]).is_some()))
        .collect();
    // `--streams N`: the slowest and fastest stream, received (iperf3's lines above its
    // [SUM]), where a result kept them.
    let show_streams = results
        .iter()
        .any(|r| model::stream_spread(&r.metrics, None).is_some());

    let mut headers: Vec<String> = vec!["STEP".into(), "TEST".into()];
    if show_rep {
        headers.push("REP".into());
    }
    // Parameter keys come from stored (possibly imported) runs: shown safe.
    headers.extend(params.iter().map(|p| model::printable(&p.to_uppercase())));
    headers.push("RESULT".into());
    if show_ops {
        headers.push("OPS/S".into());
    }
    for (i, h) in ["NOPM", "TPM"].into_iter().enumerate() {
        if show_tpcc[i] {
            headers.push(h.into());
        }
    }
    if show_streams {
        headers.push("STREAM MIN-MAX GBIT/S".into());
    }
    headers.extend(net.iter().map(|(_, h, _)| h.to_string()));
    for (i, h) in ["P50 MS", "P99 MS", "P99.9 MS"].into_iter().enumerate() {
        if show_pct[i] {
            headers.push(h.into());
        }
    }
    if show_errors {
        headers.push("ERRORS".into());
    }
    headers.push("FLAGS".into());

    let mut rows = Vec::with_capacity(results.len());
    for (i, r) in results.iter().enumerate() {
        let mut row = vec![
            Cell::right(r.step.to_string()),
            Cell::left(if many_workloads {
                format!("{}/{}", r.workload, r.test)
            } else {
                r.test.clone()
            }),
        ];
        if show_rep {
            row.push(Cell::right(r.repetition.to_string()));
        }
        for k in &params {
            row.push(Cell::right(param_text(r.params.get(k))));
        }
        row.push(Cell::right(result_text(r)));
        if show_ops {
            row.push(Cell::right(
                r.metric("ops_per_s", &[])
                    .map(fmt_metric)
                    .unwrap_or_else(|| "-".into()),
            ));
        }
        for (j, name) in ["nopm", "tpm"].into_iter().enumerate() {
            if show_tpcc[j] {
                row.push(Cell::right(
                    r.metric(name, &[])
                        .map(fmt_metric)
                        .unwrap_or_else(|| "-".into()),
                ));
            }
        }
        if show_streams {
            row.push(Cell::right(
                model::stream_spread(&r.metrics, None).map_or("-".into(), |(lo, hi, _)| {
                    format!("{}-{}", fmt_num(lo), fmt_num(hi))
                }),
            ));
        }
        for (name, _, scale) in &net {
            row.push(Cell::right(
                r.metric(name, &[])
                    .map(|m| match *scale {
                        1.0 => fmt_metric(m),
                        k => fmt_num(m.value * k),
                    })
                    .unwrap_or_else(|| "-".into()),
            ));
        }
        for (j, shown) in show_pct.iter().enumerate() {
            if *shown {
                row.push(Cell::right(pct[i][j].map(ms).unwrap_or_else(|| "-".into())));
            }
        }
        if show_errors {
            row.push(Cell::right(
                errors[i]
                    .map(report::fmt::count)
                    .unwrap_or_else(|| "-".into()),
            ));
        }
        row.push(Cell::left(flag_codes(r)));
        rows.push(row);
    }
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    let mut out = render_table(&headers, &rows);
    out.push_str(&per_database_table(results));
    out.push_str(&per_type_latency_table(results));
    out.push_str(&connect_time_table(results));

    // Notes: what each flag means, errors, and missing figures, each said once with the
    // steps it applies to (in order of first appearance).
    let mut notes: Vec<(String, Vec<u32>)> = Vec::new();
    let mut note = |text: String, step: u32| match notes.iter_mut().find(|(t, _)| *t == text) {
        Some((_, steps)) => steps.push(step),
        None => notes.push((text, vec![step])),
    };
    // A flag said in its own words at many steps (other_load's figures differ at every
    // step: a plan of 24 steps printed 50 near-identical lines): its first few whole, the
    // rest by their steps.
    const WHOLE_PER_CODE: usize = 3;
    let mut said: BTreeMap<(&str, &str), BTreeSet<&str>> = BTreeMap::new();
    for r in results {
        for f in &r.flags {
            let mark = if f.severity == Severity::Invalid {
                "!!"
            } else {
                "!"
            };
            let texts = said.entry((mark, f.code.as_str())).or_default();
            let text = if texts.len() < WHOLE_PER_CODE || texts.contains(f.message.as_str()) {
                texts.insert(&f.message);
                clean(&f.message)
            } else {
                "as above, each step with figures of its own (`show --json` and the report \
                 give them)"
                    .to_string()
            };
            note(format!("{mark} {}: {text}", clean(&f.code)), r.step);
        }
        if let Some(e) = &r.error {
            note(
                format!("{}: {}", r.status.word(), clean(&one_line(e))),
                r.step,
            );
        }
        if let Some(why) = unexplained_headline(r) {
            note(why, r.step);
        }
        if let Some(why) = streams_unstored(r) {
            note(why, r.step);
        }
        if let Some(phase) = r.capacity_phase() {
            note(
                format!(
                    "{phase}: latency and errors are per step (its steps table, in `show` \
                     and the report), not of the headline"
                ),
                r.step,
            );
        }
        // Per-interval rates of a test shorter than one interval are not a finding
        // (`show` and the report still list them as missing, with the reason).
        for m in r
            .missing
            .iter()
            .filter(|m| !m.name.starts_with("interval_rate_"))
        {
            note(
                format!("not measured: {}: {}", clean(&m.name), clean(&m.reason)),
                r.step,
            );
        }
    }
    if !notes.is_empty() {
        out.push('\n');
        // What the marks mean, once, where a flag is noted.
        if results.iter().any(|r| !r.flags.is_empty()) {
            out.push_str(
                "(! a warning: the figure stands, read with it; !! invalid: the result is \
                 left out of summaries and comparisons)\n",
            );
        }
        for (text, steps) in notes {
            let which = if steps.len() == results.len() && results.len() > 1 {
                "all steps".to_string()
            } else {
                let list: Vec<String> = steps.iter().map(u32::to_string).collect();
                format!("step{} {}", plural(steps.len()), list.join(","))
            };
            out.push_str(&format!("{which}: {text}\n"));
        }
    }
    out
}

/// A metric's unit as the report shows it: `signs_per_s` in `ops/s` reads `signs/s`.
pub fn unit_of(m: &model::Metric) -> String {
    report::derive::display_unit(&m.name, &m.unit)
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Disclosure facts summarised by `show` (plus every `software.*`): what the host is, then
/// the settings a reader checks first when two hosts' figures differ (the seeds' system
/// tables: frequency governor, turbo, SMT, huge pages, NUMA, the kernel's tuning
/// arguments, virtualisation). `rackbench disclosure` and the report have every fact.
const SHOWN_FACTS: [&str; 19] = [
    // Where a host is and how its clock and kernel stand to the others' (many hosts).
    "host.address",
    "host.clock_offset_s",
    "host.rtt_s",
    model::KERNEL_SHARED_WITH,
    "cpu.model",
    "cpu.sockets",
    "cpu.cores",
    "cpu.threads",
    "cpu.smt",
    "cpu.governor",
    "cpu.turbo",
    "mem.total_bytes",
    "mem.thp",
    "numa.nodes",
    "os.name",
    "os.kernel",
    "kernel.cmdline_tuning",
    "os.hostname",
    "virt",
];

/// The header `show` prints above the results: identity, timing, command, hosts with
/// their main facts, idle power.
pub fn run_header(run: &RunRecord) -> String {
    let mut kv: Vec<(String, String)> = Vec::new();
    kv.push(("run".into(), run.id.clone()));
    if let Some(l) = &run.label {
        kv.push(("label".into(), l.clone()));
    }
    kv.push(("status".into(), run.status_text()));
    if let Some(e) = &run.error {
        kv.push(("error".into(), one_line(e)));
    }
    // The tests a run that did not finish never started, as the report names them.
    let name = run.label.as_deref().unwrap_or(&run.id);
    if let Some(n) = report::derive::not_run_note(run, name) {
        kv.push(("not run".into(), one_line(&n)));
    }
    let created = run.created_at.format("%Y-%m-%d %H:%M:%S UTC").to_string();
    kv.push(("created".into(), created));
    if let Some(f) = run.finished_at {
        let secs = (f - run.created_at).num_milliseconds() as f64 / 1000.0;
        kv.push((
            "finished".into(),
            format!("{} ({secs:.1} s)", f.format("%Y-%m-%d %H:%M:%S UTC")),
        ));
    }
    kv.push(("command".into(), run.command.clone()));
    kv.push(("rackbench".into(), run.rackbench_version.clone()));
    // Hosts by the names the report and the tables below give them: `local` (the machine
    // rackbench ran on) by its hostname.
    let name = |h: &str| model::host_display_name(&run.hosts, h);
    // The facts left out here (NICs, mitigations, storage, power sources...): said, so
    // that the list does not read as the whole disclosure.
    let mut more = 0;
    for h in &run.hosts {
        kv.push((format!("host {}", name(&h.host)), h.role.clone()));
        let facts: Vec<_> = SHOWN_FACTS
            .iter()
            .filter_map(|k| h.facts.get_key_value(*k))
            .chain(h.facts.iter().filter(|(k, _)| k.starts_with("software.")))
            .collect();
        more += h.facts.len() - facts.len();
        for (k, f) in facts {
            kv.push((format!("  {k}"), model::fact_text(&run.hosts, k, f)));
        }
    }
    if more > 0 {
        kv.push((
            "disclosure".into(),
            format!(
                "{more} more fact{} (NICs, mitigations, storage, power sources...): \
                 `show --json` and the report list every one",
                plural(more),
            ),
        ));
    }
    for idle in &run.idle_power {
        let parts: Vec<String> = idle
            .power
            .iter()
            .map(|p| {
                format!(
                    "{} W {}/{}{}",
                    report::fmt::watts(p.mean_watts),
                    p.source,
                    p.zone,
                    if p.modelled {
                        " (modelled: declared with --power-model, not measured)"
                    } else if p.whole_system {
                        " (whole system)"
                    } else {
                        ""
                    }
                )
            })
            .collect();
        let text = if parts.is_empty() {
            "no power source".to_string()
        } else {
            parts.join(", ")
        };
        // A declared idle (only modelled power) was measured over no time at all.
        let declared = !idle.power.is_empty() && idle.power.iter().all(|p| p.modelled);
        let text = if declared {
            text
        } else {
            format!("{text} over {} s", report::fmt::fixed(idle.duration_s, 1))
        };
        // Its warnings (idle_not_idle: the host was busy while idle was read), as the
        // report marks them; `show` printed the watts plain.
        let text = std::iter::once(text)
            .chain(
                idle.flags
                    .iter()
                    .map(|f| format!("! {}: {}", f.code, one_line(&f.message))),
            )
            .collect::<Vec<_>>()
            .join("; ");
        kv.push((format!("idle power {}", idle.host), text));
    }
    let width = kv.iter().map(|(k, _)| k.chars().count()).max().unwrap_or(0);
    let mut out = String::new();
    for (k, v) in kv {
        let (k, v) = (model::printable(&k), model::printable(&v));
        let pad = width.saturating_sub(k.chars().count());
        out.push_str(&format!("{k}{}  {v}\n", " ".repeat(pad)));
    }
    out
}

/// Text from a store, a host or a user, made safe for the terminal.
pub fn clean(s: &str) -> String {
    model::printable(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--format csv -o runs.json` wrote CSV where `import` reads JSON: refused, as
    /// `report` refuses a contradicted name; a name of no export type is left to --format.
    #[test]
    fn a_given_format_the_name_contradicts_is_refused() {
        let p = |n: &str| Path::new(n).to_path_buf();
        let e = given_format_fits(ExportFormat::Csv, &p("runs.json")).unwrap_err();
        assert!(e.to_string().contains("give -o a .csv name"), "{e}");
        assert!(given_format_fits(ExportFormat::Json, &p("runs.csv")).is_err());
        assert_eq!(
            given_format_fits(ExportFormat::Csv, &p("runs.CSV")).unwrap(),
            ExportFormat::Csv
        );
        assert_eq!(
            given_format_fits(ExportFormat::Json, &p("runs-2024.06.01")).unwrap(),
            ExportFormat::Json
        );
    }

    #[test]
    fn table_aligns_and_trims() {
        let t = render_table(
            &["A", "NUM"],
            &[
                vec![Cell::left("xyz"), Cell::right("1")],
                vec![Cell::left("é"), Cell::right("1234")],
            ],
        );
        assert_eq!(t, "A     NUM\nxyz     1\né    1234\n");
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(fmt_num(123456.7), "123457");
        // A tie rounds half up, as the report's tables do (118036 here, 118,037 there).
        assert_eq!(fmt_num(118036.5), "118037");
        assert_eq!(report::fmt::num(118036.5), "118,037");
        assert_eq!(report::fmt::num(100.5), "101");
        assert_eq!(fmt_num(123.456), "123.5");
        assert_eq!(fmt_num(12.346), "12.35");
        assert_eq!(fmt_num(0.012345), "0.0123");
        assert_eq!(fmt_num(0.5), "0.500");
        assert_eq!(fmt_num(0.0), "0");
        // A figure that happens to be whole prints as its neighbours do (it read `200`
        // beside `200.0`); counts are printed whole by fmt_metric.
        assert_eq!(fmt_num(200.0), "200.0");
        assert_eq!(fmt_num(199.96), "200.0");
        assert_eq!(fmt_num(3.0), "3.00");
        assert_eq!(fmt_num(1_600_000.0), "1600000");
        let count = model::Metric::new("transactions", 91.0, "transactions");
        assert_eq!(fmt_metric(&count), "91");
        let rate = model::Metric::new("tpm", 91.0, "transactions/min");
        assert_eq!(fmt_metric(&rate), "91.00");
        // The MS columns: three places, but a sub-microsecond figure is not `0.000`.
        assert_eq!(ms(1_234_567.0), "1.235");
        assert_eq!(ms(350.0), "0.000350");
    }

    /// Acceptance pass B, 11: a run that ran to its end with its only result invalid
    /// (a failed TPC-C consistency check) was listed `ok`.
    #[test]
    fn the_runs_list_says_how_many_results_are_invalid() {
        let mut r = store::RunSummary {
            id: "r1".into(),
            label: None,
            created_at: store::fixtures::t0(0),
            status: Status::Ok,
            workloads: vec!["oltp".into()],
            results: 1,
            invalid: 1,
            host: "vm".into(),
            command: String::new(),
        };
        assert_eq!(list_status(&r), "ok, 1 of 1 invalid");
        r.invalid = 0;
        assert_eq!(list_status(&r), "ok");
        (r.status, r.results, r.invalid) = (Status::Interrupted, 3, 2);
        assert_eq!(list_status(&r), "interrupted, 2 of 3 invalid");
    }

    #[test]
    fn results_table_snapshot() {
        let run = store::fixtures::rich_run("r1", Some("arm"), store::fixtures::t0(0), 3);
        let want = "\
STEP  TEST  REP  PIPELINE                           RESULT  P50 MS  P99 MS  P99.9 MS  ERRORS  FLAGS
   0  set     0         1   failed (partial: 100000 ops/s)   0.180   1.235     4.568       3  ! client_bound !! errors
   1  get     1        16  failed (partial: 1600000 ops/s)   0.180   1.235     4.568       3  ! client_bound !! errors
   2  set     0        32  failed (partial: 3200000 ops/s)   0.180   1.235     4.568       3  ! client_bound !! errors

(! a warning: the figure stands, read with it; !! invalid: the result is left out of summaries and comparisons)
all steps: ! client_bound: load generator at 97% CPU: figures may be client-bound
all steps: !! errors: 3 error replies, \"ERR\" x3
all steps: failed: server:1 exited with status 1 last log line: Oops
all steps: not measured: cache_hit_ratio: server INFO not readable: NOAUTH
";
        assert_eq!(results_table(&run), want);
    }

    /// Acceptance N, 2: a net test's table gives iperf3's figures beside its rate (a loss
    /// under 1% was invisible behind "0.299 Gbit/s"); a kv table has none of them.
    #[test]
    fn a_net_tests_table_gives_its_packets_loss_jitter_and_each_ends_cpu() {
        let mut run = store::fixtures::rich_run("r1", None, store::fixtures::t0(0), 1);
        assert!(!results_table(&run).contains("LOSS %"));
        let r = &mut run.results[0];
        r.workload = "net".into();
        r.test = "udp1472".into();
        r.headline = "throughput_gbit_per_s".into();
        r.status = Status::Ok;
        r.histograms.clear();
        r.metrics = vec![
            model::Metric::new("throughput_gbit_per_s", 0.299, "Gbit/s"),
            model::Metric::new("packets_per_s", 25_400.0, "packets/s"),
            model::Metric::new("loss_pct", 0.421, "%"),
            model::Metric::new("jitter_ms", 0.000849, "ms"),
            model::Metric::new("sender_cpu_pct", 30.36, "%"),
            model::Metric::new("receiver_cpu_pct", 6.81, "%"),
        ];
        run.results.truncate(1);
        let t = results_table(&run);
        let mut lines = t.lines();
        let head: Vec<&str> = lines
            .next()
            .unwrap()
            .split("  ")
            .filter(|c| !c.is_empty())
            .collect();
        for h in ["PACKETS/S", "LOSS %", "JITTER US", "SEND %CPU", "RECV %CPU"] {
            assert!(head.iter().any(|c| c.trim() == h), "{h} in {t}");
        }
        assert!(!head.iter().any(|c| c.trim() == "RETRANS"), "{t}");
        let row = lines.next().unwrap();
        // Jitter in µs, as the report gives it: 0.000849 ms.
        for v in ["25400", "0.421", "0.849", "30.36", "6.81"] {
            assert!(row.contains(v), "{v} in {row}");
        }
    }

    /// `--streams N`: the table gives the slowest and fastest stream (received) beside
    /// the total, as iperf3 prints each stream above its [SUM]; a test of several
    /// streams stored before they were kept says so, and a one-stream run has no column.
    #[test]
    fn a_net_tests_table_gives_its_slowest_and_fastest_stream() {
        let mut run = store::fixtures::rich_run("r1", None, store::fixtures::t0(0), 2);
        for (r, streams) in run.results.iter_mut().zip([4u64, 2]) {
            r.workload = "net".into();
            r.test = "tcp".into();
            r.headline = "throughput_gbit_per_s".into();
            r.status = Status::Ok;
            r.error = None;
            r.flags.clear();
            r.missing.clear();
            r.histograms.clear();
            r.params
                .insert("streams".into(), serde_json::json!(streams));
            r.metrics = vec![model::Metric::new("throughput_gbit_per_s", 19.12, "Gbit/s")];
        }
        assert!(!results_table(&run).contains("STREAM MIN-MAX"));
        run.results[0]
            .metrics
            .extend([4.69, 4.92, 4.7, 4.81].iter().enumerate().map(|(i, g)| {
                model::Metric::new(model::STREAM_THROUGHPUT, *g, "Gbit/s").label("stream", i)
            }));
        let t = results_table(&run);
        assert!(
            t.lines().next().unwrap().contains("STREAM MIN-MAX GBIT/S"),
            "{t}"
        );
        assert!(t.lines().nth(1).unwrap().contains("4.69-4.92"), "{t}");
        assert!(
            t.contains(
                "each stream's rate: not stored (a result of a rackbench before they were kept"
            ),
            "{t}"
        );
    }

    #[test]
    fn results_table_uses_histograms_and_shows_gaps() {
        let mut run = store::fixtures::rich_run("r1", None, store::fixtures::t0(0), 2);
        for r in &mut run.results {
            r.metrics
                .retain(|m| !m.name.starts_with("latency_") && m.name != "errors");
            r.flags.clear();
            r.missing.clear();
            r.status = Status::Ok;
            r.error = None;
        }
        run.results[1].metrics.retain(|m| m.name != "ops_per_s");
        run.results[1].missing.push(model::MissingMetric {
            name: "ops_per_s".into(),
            reason: "server died".into(),
        });
        let t = results_table(&run);
        let h = &run.results[0].histograms[1]; // `corrected` beats `service`
        assert_eq!(h.kind, "corrected");
        let p99 = format!("{:.3}", h.summary.p99_ns as f64 / 1e6);
        let lines: Vec<&str> = t.lines().collect();
        assert!(
            lines[0].ends_with("P99.9 MS  FLAGS") && !lines[0].contains("ERRORS"),
            "{t}"
        );
        assert!(lines[1].contains(&p99), "{t}");
        assert!(lines[2].contains("ops_per_s not measured"), "{t}");
        assert!(
            t.contains("step 1: not measured: ops_per_s: server died"),
            "{t}"
        );
    }

    /// `--requests-per-connection 1`: the connect times are shown in their own table,
    /// httperf's min avg median max stddev with the count, and are never taken for the
    /// requests' latency (a result whose percentiles come from its histograms).
    #[test]
    fn connect_times_have_their_own_table_and_are_no_requests_latency() {
        let mut run = store::fixtures::rich_run("r1", None, store::fixtures::t0(0), 1);
        let r = &mut run.results[0];
        r.metrics.retain(|m| !m.name.starts_with("latency_"));
        let mut h = model::hist::new_latency_histogram();
        for us in [40, 50, 60, 70, 9_000] {
            h.record(us * 1000).unwrap();
        }
        let kind = model::hist::CONNECT_KIND;
        // Last, as the engine stores it, and first: neither is a request's latency.
        r.histograms
            .push(model::HistogramRecord::from_histogram(kind, kind, &h));
        let p99 = percentiles_ns(r)[1];
        r.histograms.rotate_right(1);
        assert_eq!(percentiles_ns(r)[1], p99);
        assert!(p99.is_some_and(|v| v < 9e6), "{p99:?}");
        let t = results_table(&run);
        assert!(
            t.contains("connect time (connect call to established, per connection opened during the test):"),
            "{t}"
        );
        let row = t
            .lines()
            .find(|l| l.split_whitespace().nth(2) == Some("5"))
            .unwrap_or_else(|| panic!("{t}"));
        let s = model::hist::LatencySummary::of(&h);
        let want = [
            s.min_ns as f64,
            s.mean_ns,
            s.p50_ns as f64,
            s.p99_ns as f64,
            s.max_ns as f64,
            s.stdev_ns,
        ]
        .map(ms);
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[..3], ["0", "set", "5"], "{row}");
        assert_eq!(cells[3..], want, "{row}");
        assert_eq!(cells[3], "0.040", "{row}");
        // Kept alive, nothing timed: no table.
        run.results[0].histograms.retain(|h| h.is_request_latency());
        assert!(!results_table(&run).contains("connect time"));
    }

    /// Two generators, one lost mid-test: the survivor's figure (half the load) showed
    /// in RESULT as the test's, `!! failed failed` and `! interrupted interrupted` in
    /// FLAGS, and a failure with no headline read `: missing`.
    #[test]
    fn a_failed_result_leads_with_its_status_and_flags_once() {
        let mut run = store::fixtures::rich_run("r1", None, store::fixtures::t0(0), 3);
        for r in &mut run.results {
            r.metrics.retain(|m| m.name == "ops_per_s");
            r.missing.clear();
            r.histograms.clear();
        }
        let lost = "the link to rbh2 broke";
        let r = &mut run.results[0];
        r.status = Status::Failed;
        r.metrics = vec![model::Metric::new("ops_per_s", 58632.0, "ops/s")];
        r.flags = vec![
            model::Flag::invalid("host_failed", format!("load generator rbh2: {lost}")),
            model::Flag::invalid("failed", "failed"),
        ];
        r.error = Some(format!("load generator rbh2: {lost}"));
        let r = &mut run.results[1];
        r.status = Status::Interrupted;
        r.flags = vec![model::Flag::warning("interrupted", "stopped by SIGINT")];
        r.error = None;
        let r = &mut run.results[2];
        r.status = Status::Failed;
        r.headline = String::new();
        r.metrics.clear();
        r.flags = vec![model::Flag::invalid("failed", "the server did not start")];
        r.error = Some("the server did not start".into());
        let t = results_table(&run);
        let words = |l: &str| l.split_whitespace().collect::<Vec<_>>().join(" ");
        let lines: Vec<String> = t.lines().map(words).collect();
        assert!(
            lines[1].ends_with("failed (partial: 58632 ops/s) !! host_failed !! failed"),
            "{t}"
        );
        assert!(lines[2].contains("interrupted (partial: "), "{t}");
        assert!(lines[2].ends_with("! interrupted"), "{t}");
        assert!(lines[3].ends_with("set 0 32 failed !! failed"), "{t}");
        assert!(!t.contains(": missing"), "{t}");
        assert!(
            t.contains("step 0: failed: load generator rbh2: the link to rbh2 broke\n"),
            "{t}"
        );
        // Ok, without its figure and without a reason: said, not left blank.
        let r = &mut run.results[2];
        r.status = Status::Ok;
        r.flags.clear();
        r.error = None;
        r.headline = "ops_per_s".into();
        let t = results_table(&run);
        assert!(t.contains("ops_per_s not measured"), "{t}");
        assert!(
            t.contains("step 2: not measured: ops_per_s: the result stores no figure"),
            "{t}"
        );
    }

    /// A crypto result's headline in its own unit: RSA signs per second read `signs/s`,
    /// not a generic `ops/s`, in the table, the efficiency table and nowhere else either.
    #[test]
    fn a_crypto_result_reads_in_signs_per_second() {
        let mut run = store::fixtures::rich_run("r1", None, store::fixtures::t0(0), 1);
        let r = &mut run.results[0];
        r.workload = "crypto".into();
        r.test = "rsa2048".into();
        r.headline = "signs_per_s".into();
        r.metrics = vec![model::Metric::new("signs_per_s", 1234.0, "ops/s")];
        let t = results_table(&run);
        assert!(t.contains("1234 signs/s"), "{t}");
        assert!(!t.contains("ops/s"), "{t}");
    }

    /// The efficiency table reads busy as stored (iowait is idle time, not busy), summed
    /// over the SUT's CPUs as the report's %CPU used is, and a levels test's headline,
    /// already ops/s/W, is not divided by watts again.
    #[test]
    fn efficiency_reads_busy_without_iowait_and_no_per_watt_of_capacity_tests() {
        let mut run = store::fixtures::rich_run("r1", None, store::fixtures::t0(0), 2);
        // A SUT that ran no load generator: its CPUs' busy, not its server processes'.
        run.hosts[0].role = "sut".into();
        for r in &mut run.results {
            r.flags.clear();
            r.status = Status::Ok;
            r.error = None;
            let cpus = &mut r.telemetry_summary[0].cpus;
            assert_eq!(cpus[0].cpu, -1);
            let mut one = cpus[0];
            (one.idle_pct, one.iowait_pct) = (70.0, 10.0);
            cpus.truncate(1);
            for n in 0..2 {
                cpus.push(model::CpuUtil { cpu: n, ..one });
            }
        }
        let levels = &mut run.results[1];
        levels.test = "levels".into();
        levels.headline = "overall_ops_per_watt".into();
        levels.metrics =
            vec![model::Metric::new("overall_ops_per_watt", 109.5, "ops/s/W")
                .label("phase", "levels")];
        let t = efficiency_table(&run);
        let rows: Vec<&str> = t.lines().filter(|l| l.contains(" 40.0 ")).collect();
        assert_eq!(
            rows.len(),
            2,
            "busy = 100 - idle - iowait, summed over 2 CPUs, in every row: {t}"
        );
        assert!(!rows[0].ends_with(" -"), "a load test has perf/W: {t}");
        assert!(rows[1].ends_with(" -"), "no perf/W of a levels test: {t}");
        assert!(!t.contains("/W/W"), "{t}");
        assert!(t.contains("PERF/W of ramp, search and levels"), "{t}");
    }

    /// One power figure prints one way everywhere in `show`: the efficiency table, the
    /// idle power and a capacity view's power column all read `200.0` for a mean of
    /// exactly 200 W as for 199.96 W (the efficiency table read `200` and `200.0`, the
    /// ramp view `200.0`). Counts print whole: a headline count and the ERRORS column
    /// read `91`, never `91.0`.
    /// Two valid results whose only power is a declared model's, of the whole system.
    fn modelled_run() -> RunRecord {
        let mut run = store::fixtures::rich_run("r1", None, store::fixtures::t0(0), 2);
        for r in &mut run.results {
            r.flags.clear();
            r.status = Status::Ok;
            r.error = None;
            for p in &mut r.telemetry_summary[0].power {
                p.modelled = true;
                p.whole_system = true;
                p.source = "model".into();
                p.zone = "system".into();
            }
            r.telemetry_summary[0].power.truncate(1);
        }
        run
    }

    #[test]
    fn one_power_figure_prints_alike_and_counts_print_whole() {
        let mut run = modelled_run();
        for (r, w) in run.results.iter_mut().zip([200.0, 199.96]) {
            r.telemetry_summary[0].power[0].mean_watts = w;
        }
        let t = efficiency_table(&run);
        let cells: Vec<&str> = t
            .lines()
            .filter(|l| l.contains("(modelled)"))
            // POWER W is the cell before SOURCE's `model` (OF's label has several words).
            .map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                w.iter()
                    .position(|x| *x == "model")
                    .and_then(|i| i.checked_sub(1))
                    .map_or("", |i| w[i])
            })
            .collect();
        assert_eq!(cells, ["200.0", "200.0"], "{t}");
        for idle in &mut run.idle_power {
            for p in &mut idle.power {
                p.mean_watts = 200.0;
            }
        }
        assert!(!run.idle_power.is_empty());
        let h = run_header(&run);
        assert!(h.contains("200.0 W "), "{h}");
        // An idle figure's warning is on its line (it was printed plain).
        let mut busy_idle = run.clone();
        busy_idle.idle_power[0].flags = vec![model::Flag::warning(
            "idle_not_idle",
            "the host's tasks took 45% of one CPU while idle was read",
        )];
        let idle_line = run_header(&busy_idle)
            .lines()
            .find(|l| l.starts_with("idle power"))
            .unwrap()
            .to_string();
        assert!(
            idle_line.ends_with(
                "; ! idle_not_idle: the host's tasks took 45% of one CPU while idle was read"
            ),
            "{idle_line}"
        );
        // The facts it leaves out are counted, and where to read them said (`show`'s
        // list read as the whole disclosure).
        let shown = h.lines().filter(|l| l.starts_with("  ")).count();
        let all: usize = run.hosts.iter().map(|h| h.facts.len()).sum();
        assert!(all > shown, "the fixture has facts show leaves out");
        assert!(
            h.contains(&format!(
                "{} more fact{}",
                all - shown,
                if all - shown == 1 { "" } else { "s" }
            )) && h.contains("`show --json` and the report list every one"),
            "{h}"
        );
        // A declared idle (--power-model) says so, over no measured time.
        let mut declared = run.clone();
        for idle in &mut declared.idle_power {
            idle.duration_s = 0.0;
            for p in &mut idle.power {
                p.modelled = true;
            }
        }
        let h = run_header(&declared);
        assert!(
            h.contains("(modelled: declared with --power-model, not measured)")
                && !h.contains("over 0"),
            "{h}"
        );

        let ramp = &mut run.results[0];
        ramp.test = "ramp".into();
        ramp.headline = "saturation_rate_per_s".into();
        ramp.metrics = vec![model::Metric::new("saturation_rate_per_s", 4000.0, "req/s")];
        let l = |m: model::Metric| m.label("phase", "ramp").label("step", 0);
        ramp.metrics.extend([
            l(model::Metric::new("demanded_rate_per_s", 2000.0, "req/s")),
            l(model::Metric::new("reply_rate_per_s", 1990.0, "req/s")),
            l(model::Metric::new("power_w", 200.0, "W")),
        ]);
        let v = views_text(&run);
        let step = v
            .lines()
            .find(|l| l.starts_with("0 "))
            .unwrap_or_else(|| panic!("{v}"));
        // Power W, then the step's verdict (none stored here).
        assert!(step.ends_with(" 200.0        -"), "{v}");

        let tx = &mut run.results[1];
        tx.headline = "transactions".into();
        tx.metrics = vec![
            model::Metric::new("transactions", 91.0, "transactions"),
            model::Metric::new("errors", 91.0, "transactions").label("txn", "payment"),
        ];
        let t = results_table(&run);
        assert!(t.contains(" 91 transactions "), "{t}");
        assert!(!t.contains("91.0"), "{t}");
    }

    /// A capacity test has no one latency beside its headline: `show`'s P50/P99 columns
    /// took the last step's histogram (an interrupted step's, beside a ramp figure from
    /// the step before); now they say `-`, as the report does, and other tests keep theirs.
    #[test]
    fn a_capacity_test_shows_no_latency_of_some_step_beside_its_headline() {
        let mut run = store::fixtures::rich_run("r1", None, store::fixtures::t0(0), 1);
        let plain = percentiles_ns(&run.results[0]);
        assert!(plain[0].is_some() && plain[1].is_some(), "{plain:?}");
        let ramp = &mut run.results[0];
        ramp.test = "ramp".into();
        ramp.headline = "max_reply_rate_per_s".into();
        ramp.metrics = vec![model::Metric::new(
            "max_reply_rate_per_s",
            10_000.0,
            "ops/s",
        )];
        let mut h = model::hist::new_latency_histogram();
        for (i, ns) in [100_000u64, 10_000_000].iter().enumerate() {
            ramp.metrics.push(
                model::Metric::new("reply_rate_per_s", 1000.0, "ops/s")
                    .label("phase", "ramp")
                    .label("step", i),
            );
            h.reset();
            h.record_n(*ns, 100).unwrap();
            ramp.histograms.push(model::HistogramRecord::from_histogram(
                &format!("ramp_step{i}"),
                "corrected",
                &h,
            ));
        }
        assert_eq!(percentiles_ns(ramp), [None; 3]);
        ramp.metrics.push(
            model::Metric::new("errors", 7.0, "req")
                .label("phase", "ramp")
                .label("step", 1),
        );
        assert_eq!(errors_of(ramp), None);
        let t = results_table(&run);
        assert!(
            t.contains("ramp: latency and errors are per step (its steps table, in `show` and the report), not of the headline"),
            "{t}"
        );
    }

    /// A search whose every probe met its objective up to --search-max printed its
    /// maximum as `2000 ops/s ! search_limit`, read as the rate meeting it: a bound.
    #[test]
    fn a_searchs_lower_bound_reads_at_least() {
        let mut run = store::fixtures::rich_run("r1", None, store::fixtures::t0(0), 1);
        let r = &mut run.results[0];
        r.test = "search".into();
        r.headline = "max_rate_meeting_slo_per_s".into();
        r.status = Status::Ok;
        r.metrics = vec![
            model::Metric::new("demanded_rate_per_s", 2000.0, "req/s")
                .label("phase", "search")
                .label("step", 0),
            model::Metric::new("max_rate_meeting_slo_per_s", 2000.0, "req/s"),
        ];
        assert!(result_text(r).starts_with("≥ 2"), "{}", result_text(r));
        r.metrics.push(model::Metric::new(
            "lowest_failing_rate_per_s",
            2500.0,
            "req/s",
        ));
        assert!(result_text(r).starts_with('2'), "{}", result_text(r));
    }

    /// The export's format from -o's name: JSON, CSV, or a refusal naming both (a
    /// spreadsheet's name got JSON); no extension is JSON, as the default.
    #[test]
    fn an_export_name_of_neither_json_nor_csv_is_refused() {
        let of = |p: &str| export_format_of(Path::new(p));
        assert_eq!(of("runs.json").unwrap(), ExportFormat::Json);
        assert_eq!(of("runs.CSV").unwrap(), ExportFormat::Csv);
        assert_eq!(of("runs").unwrap(), ExportFormat::Json);
        assert_eq!(of("runs-2024.06.01").unwrap(), ExportFormat::Json);
        assert_eq!(of("runs.json.bak").unwrap(), ExportFormat::Json);
        assert_eq!(of("runs.JSON.old").unwrap(), ExportFormat::Json);
        assert_eq!(of("runs.csv.bak").unwrap(), ExportFormat::Csv);
        // Compressed or another's type behind `.json` is not JSON as written.
        assert!(of("runs.json.gz").is_err());
        assert!(of("runs.json.xlsx").is_err());
        assert!(given_format_fits(ExportFormat::Csv, Path::new("runs.json.bak")).is_err());
        let err = of("runs.xlsx").unwrap_err().to_string();
        assert!(
            err.contains(".xlsx is neither") && err.contains("--format"),
            "{err}"
        );
        assert!(of("runs.html")
            .unwrap_err()
            .to_string()
            .contains("rackbench report"));
    }

    /// A capacity test's steps and a TPC-C run's consistency check, as the report has
    /// them (its views), printed by `show` below its own tables; units read from a
    /// stored run reach the terminal escaped.
    #[test]
    fn show_prints_capacity_steps_and_the_consistency_check() {
        let mut run = store::fixtures::rich_run("r1", None, store::fixtures::t0(0), 2);
        let ramp = &mut run.results[0];
        ramp.test = "ramp".into();
        ramp.headline = "saturation_rate_per_s".into();
        ramp.metrics = vec![model::Metric::new("saturation_rate_per_s", 4000.0, "req/s")];
        for (i, (d, r)) in [(2000.0, 1990.0), (4000.0, 3000.0)].iter().enumerate() {
            let l = |m: model::Metric| m.label("phase", "ramp").label("step", i);
            ramp.metrics.extend([
                l(model::Metric::new(
                    "demanded_rate_per_s",
                    *d,
                    "req/s\u{1b}[31m",
                )),
                l(model::Metric::new("reply_rate_per_s", *r, "req/s")),
                l(model::Metric::new("latency_p99_ns", 2.5e6, "ns")),
            ]);
        }
        ramp.status = Status::Ok;
        ramp.flags.clear();
        let t = views_text(&run);
        let words = |l: &str| l.split_whitespace().collect::<Vec<_>>().join(" ");
        let lines: Vec<String> = t.lines().map(words).collect();
        assert!(lines.iter().any(|l| l == "kv capacity ramp"), "{t}");
        assert!(lines.iter().any(|l| l == "Ramp steps:"), "{t}");
        assert!(
            // No Late % stored, no power per step (no column), no verdict stored.
            lines.iter().any(|l| l == "1 4,000 3,000 - 2.500 - - - - -"),
            "{t}"
        );
        assert!(t.contains("Saturation at a demanded rate of 4,000"), "{t}");
        assert!(!t.chars().any(|c| c.is_control() && c != '\n'), "{t:?}");
        // TPC-C: the check's outcome, said even when it passed (no flag says so).
        for r in &mut run.results {
            r.workload = "oltp".into();
        }
        run.results[1].test = "tpcc".into();
        run.results[1].flags = vec![model::Flag::invalid(
            "consistency",
            "database 1: TPC-C consistency condition 1 (w_ytd) fails for 2 rows",
        )];
        let t = views_text(&run);
        assert!(t.contains("TPC-C consistency check (clause 3.3.2)"), "{t}");
        assert!(
            t.contains("FAILED at step 1: database 1: TPC-C consistency condition 1"),
            "{t}"
        );
        assert!(t.contains("Passed at step 0"), "{t}");
    }

    /// A latency headline (mem's ns) has no PERF/W (it read `1.02 ns/W`), and a perf/W
    /// from modelled power is marked modelled as the power is.
    #[test]
    fn efficiency_has_no_per_watt_of_a_latency_and_marks_modelled_per_watt() {
        let mut run = modelled_run();
        let lat = &mut run.results[1];
        lat.workload = "mem".into();
        lat.test = "latency".into();
        lat.headline = "ram_latency_ns".into();
        lat.metrics = vec![model::Metric::new("ram_latency_ns", 153.0, "ns")];
        let t = efficiency_table(&run);
        assert!(!t.contains("ns/W"), "{t}");
        let rows: Vec<&str> = t.lines().filter(|l| l.contains("(modelled)")).collect();
        assert_eq!(rows.len(), 2, "{t}");
        assert!(rows[0].ends_with("/W (modelled)"), "{t}");
        assert!(rows[1].ends_with(" -"), "{t}");
        assert!(
            t.contains("PERF/W of a latency: none; a latency is not a throughput"),
            "{t}"
        );
        // The source names the model its watts are of, as the report and compare do.
        run.plan = serde_json::json!({ "run": { "power_model": "60:160" } });
        let t = efficiency_table(&run);
        assert!(t.contains("model system (60:160 W) (modelled)"), "{t}");
    }

    /// A flag in words of its own at every step is said whole at its first three, and by
    /// its steps after (a plan of 24 steps printed 50 near-identical other_load lines).
    #[test]
    fn a_flag_worded_anew_at_every_step_is_said_whole_three_times() {
        let mut run = store::fixtures::rich_run("r1", None, store::fixtures::t0(0), 5);
        for (i, r) in run.results.iter_mut().enumerate() {
            r.flags = vec![model::Flag::warning(
                "other_load",
                format!("host vm: other processes took {}% of one CPU", 40 + i),
            )];
        }
        let t = results_table(&run);
        let whole = t
            .lines()
            .filter(|l| l.contains("other processes took"))
            .count();
        assert_eq!(whole, 3, "{t}");
        assert!(
            t.contains("steps 3,4: ! other_load: as above, each step with figures of its own"),
            "{t}"
        );
    }

    /// A test of phases one after another (an RSA key's signs, then its verifies) has no
    /// PERF/W: its power is of both, its headline the signs' (`show` printed 107.5
    /// signs/s/W where the report and compare give none).
    #[test]
    fn efficiency_has_no_per_watt_of_phases_one_after_another() {
        let mut run = modelled_run();
        let rsa = &mut run.results[1];
        rsa.workload = "crypto".into();
        rsa.test = "rsa2048".into();
        rsa.headline = "signs_per_s".into();
        rsa.metrics = vec![
            model::Metric::new("signs_per_s", 2500.0, "signs/s"),
            model::Metric::new("verifies_per_s", 90000.0, "verifies/s"),
        ];
        let t = efficiency_table(&run);
        assert!(!t.contains("signs/s/W"), "{t}");
        let row = t.lines().find(|l| l.contains("rsa2048")).unwrap();
        assert!(row.ends_with(" -"), "{t}");
        assert!(
            t.contains("PERF/W of rsa2048: none; the test ran its phases one after another"),
            "{t}"
        );
        // The other result keeps its perf/W.
        assert_eq!(
            t.lines().filter(|l| l.ends_with("/W (modelled)")).count(),
            1,
            "{t}"
        );
    }

    /// Flag messages, errors and missing figures of an imported run (a hostile export)
    /// reach the terminal with their escape sequences shown, never raw.
    #[test]
    fn notes_carry_no_raw_escape_sequences() {
        let evil = "x\u{1b}]0;pwned\u{7}\u{1b}[31mred";
        let mut run = store::fixtures::rich_run("r1", None, store::fixtures::t0(0), 1);
        let r = &mut run.results[0];
        r.flags = vec![model::Flag::warning(evil, evil)];
        r.error = Some(evil.into());
        r.missing = vec![model::MissingMetric {
            name: evil.into(),
            reason: evil.into(),
        }];
        let t = results_table(&run);
        assert!(!t.chars().any(|c| c.is_control() && c != '\n'), "{t:?}");
        assert_eq!(t.matches("x\\u{1b}]0;pwned").count(), 6, "{t}");
    }

    /// A TPC-C result: NOPM and TPM side by side whichever leads, and each transaction
    /// type's average latency beside its p50/p95/p99, from the stored histogram.
    #[test]
    fn tpcc_results_show_nopm_tpm_and_latency_per_transaction_type() {
        let mut run = store::fixtures::rich_run("r1", None, store::fixtures::t0(0), 2);
        let mut h = model::hist::new_latency_histogram();
        for v in 1..=100u64 {
            h.record(v * 1_000_000).unwrap();
        }
        for (i, r) in run.results.iter_mut().enumerate() {
            r.headline = if i == 0 { "nopm" } else { "tpm" }.into();
            r.metrics.clear();
            r.flags.clear();
            r.missing.clear();
            r.status = Status::Ok;
            r.error = None;
            r.metrics
                .push(model::Metric::new("tpm", 3000.0, "transactions/min"));
            if i == 0 {
                r.metrics
                    .push(model::Metric::new("nopm", 1300.0, "new orders/min"));
            }
            r.metrics.push(
                model::Metric::new("transactions", 100.0, "transactions").label("txn", "new_order"),
            );
            r.histograms = vec![model::HistogramRecord::from_histogram(
                "new_order",
                "service",
                &h,
            )];
        }
        let t = results_table(&run);
        let lines: Vec<&str> = t.lines().collect();
        let words = |l: &str| l.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(words(lines[0]).contains("RESULT NOPM TPM P50 MS"), "{t}");
        assert!(
            words(lines[1]).contains("1300 new orders/min 1300 3000"),
            "{t}"
        );
        assert!(
            words(lines[2]).contains("3000 transactions/min - 3000"),
            "{t}"
        );
        assert!(t.contains("latency per type:"), "{t}");
        let row = lines
            .iter()
            .find(|l| l.contains("new_order"))
            .expect("a new_order row");
        // 1..100 ms: average 50.5, p50 50, p95 95, p99 99 (within the histogram's precision).
        let want = "new_order service 100 50.499 50.004 95.027 99.025";
        assert!(words(row).contains(want), "{want} missing: {t}");
    }

    /// `--databases 2`: a row per database with its NOPM and TPM, the server's where it
    /// counts per database (PostgreSQL), else the client's, marked and explained.
    #[test]
    fn per_database_rows_say_whose_tpm_they_show() {
        let mut run = store::fixtures::rich_run("r1", None, store::fixtures::t0(0), 1);
        let r = &mut run.results[0];
        r.headline = "nopm".into();
        r.metrics = vec![
            model::Metric::new("nopm", 2000.0, "new orders/min"),
            model::Metric::new("tpm", 5000.0, "transactions/min"),
        ];
        for db in 1..=2 {
            r.metrics.push(
                model::Metric::new("nopm", 1000.0 + db as f64, "new orders/min").label("db", db),
            );
            r.metrics.push(
                model::Metric::new(
                    "tpm_client",
                    2400.0 + db as f64,
                    "transactions/min (client-counted)",
                )
                .label("db", db),
            );
        }
        let words = |t: &str| {
            t.lines()
                .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
                .collect::<Vec<_>>()
        };
        let t = results_table(&run);
        let lines = words(&t);
        assert!(lines.iter().any(|l| l == "STEP DB NOPM TPM"), "{t}");
        assert!(lines.iter().any(|l| l == "0 1 1001 2401 (client)"), "{t}");
        assert!(lines.iter().any(|l| l == "0 2 1002 2402 (client)"), "{t}");
        assert!(t.contains("(client): counted by the client"), "{t}");
        // The server's own per-database count is shown as it is.
        for db in 1..=2 {
            run.results[0].metrics.push(
                model::Metric::new("tpm", 2500.0 + db as f64, "transactions/min").label("db", db),
            );
        }
        let t = results_table(&run);
        let lines = words(&t);
        assert!(lines.iter().any(|l| l == "0 1 1001 2501"), "{t}");
        assert!(!t.contains("(client)"), "{t}");
        // One database: no such table.
        run.results[0].metrics.retain(|m| m.labels.is_empty());
        assert!(!results_table(&run).contains("per database"));
    }
}
