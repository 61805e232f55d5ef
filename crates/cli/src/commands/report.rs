//! `report`, `compare`, `tco`: glue between the results store (or an exported JSON file)
//! and the pure `report` and `tco` crates. Files are written atomically (a temporary file
//! in the same directory, then a rename) so a crash never leaves half a report.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use model::RunRecord;

use super::output;
use crate::Global;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Html,
    Md,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run ids (or unique prefixes, labels, `latest`); default: the latest run.
    pub runs: Vec<String>,
    /// Every stored run (or every run of the --from file), oldest first.
    #[arg(long, conflicts_with = "runs")]
    pub all: bool,
    /// Output file. Default: report.html (report.md with --format md).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// html: one self-contained file with inline charts; md: Markdown tables. Default:
    /// from the -o file's extension (.md: md), else html.
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Also write every chart as an SVG file into this directory.
    #[arg(long, value_name = "DIR")]
    pub svg_dir: Option<PathBuf>,
    /// Add the rack TCO tables of this plan (see `rackbench tco --help`).
    #[arg(long, value_name = "PLAN.toml")]
    pub tco: Option<PathBuf>,
    /// Read runs from an exported JSON file (`rackbench export`) instead of the store.
    #[arg(long, value_name = "FILE")]
    pub from: Option<PathBuf>,
    #[command(flatten)]
    pub table: TableArgs,
}

/// How the summary tables are laid out (the seeds' choices). A run measured under
/// several `[[variant]]`s is one column per variant.
#[derive(clap::Args, Debug)]
pub struct TableArgs {
    /// Only these tests in the summary and its geometric mean: test names (`set`) or
    /// rows as the table names them (`get pipeline=16`), comma-separated
    #[arg(long, value_name = "TEST,TEST", value_delimiter = ',')]
    pub tests: Vec<String>,
    /// Every row at this sweep point (`instances=2`) instead of each column at its best
    #[arg(long, value_name = "KEY=VALUE,...")]
    pub at: Option<String>,
    /// The column the Difference columns divide by (a run's label or id, or
    /// RUN@VARIANT) [default: the first]
    #[arg(long, value_name = "COLUMN")]
    pub baseline: Option<String>,
    /// A column extrapolated from a measured one: RUN=x2:boards (N boards or sockets of
    /// the one measured: performance and power times N), RUN=3GHz or RUN=2.4GHz:3GHz
    /// (another CPU clock: performance only). Repeatable
    #[arg(long, value_name = "RUN=HOW")]
    pub extrapolate: Vec<String>,
    /// How performance follows the clock in clock extrapolations: 1 is linear, 0.7 is 7%
    /// more for 10% more clock (measure it from two clocks of one CPU)
    #[arg(long, value_name = "E", default_value_t = 1.0)]
    pub clock_elasticity: f64,
}

impl Default for TableArgs {
    fn default() -> Self {
        TableArgs {
            tests: vec![],
            at: None,
            baseline: None,
            extrapolate: vec![],
            clock_elasticity: 1.0,
        }
    }
}

impl TableArgs {
    /// The selection these flags ask for, checked against the runs (names that match
    /// nothing are an error that lists what there is).
    pub fn selection(&self, runs: &[RunRecord]) -> anyhow::Result<report::Selection> {
        if !(self.clock_elasticity.is_finite() && self.clock_elasticity > 0.0) {
            anyhow::bail!(
                "--clock-elasticity {}: give a positive number (1 = linear in the clock)",
                self.clock_elasticity
            );
        }
        let sel = report::Selection {
            tests: self
                .tests
                .iter()
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
                .collect(),
            at: match &self.at {
                Some(a) => report::selection::parse_at(a).map_err(anyhow::Error::msg)?,
                None => vec![],
            },
            baseline: self.baseline.clone(),
            extrapolate: self
                .extrapolate
                .iter()
                .map(|e| report::selection::parse_extrapolation(e, self.clock_elasticity))
                .collect::<Result<_, _>>()
                .map_err(anyhow::Error::msg)?,
            from_plan: false,
        };
        // An elasticity with no clock to apply it to would be silently dropped.
        let clocked = sel
            .extrapolate
            .iter()
            .any(|e| matches!(e.how, report::selection::Extrapolate::Clock { .. }));
        if self.clock_elasticity != 1.0 && !clocked {
            anyhow::bail!(
                "--clock-elasticity {} applies to clock extrapolations, and none is asked \
                 for: add --extrapolate RUN=3GHz (or RUN=2.4GHz:3GHz), or drop it",
                self.clock_elasticity
            );
        }
        sel.check(runs).map_err(anyhow::Error::msg)?;
        Ok(sel)
    }
}

#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// Two runs: A (the baseline) then B. `RUN@VARIANT` takes one variant of a run
    /// measured under `[[variant]]`s (`compare RUN@gro-on RUN@gro-off`).
    pub runs: Vec<String>,
    /// Group A: comma-separated runs; each run's repetitions are averaged and each run
    /// counts as one replication (acceptance L, 4).
    #[arg(long = "a", value_name = "RUN,RUN", value_delimiter = ',')]
    pub group_a: Vec<String>,
    /// Group B: comma-separated runs; each run's repetitions are averaged and each run
    /// counts as one replication (acceptance L, 4).
    #[arg(long = "b", value_name = "RUN,RUN", value_delimiter = ',')]
    pub group_b: Vec<String>,
    /// Read runs from an exported JSON file instead of the store.
    #[arg(long, value_name = "FILE")]
    pub from: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
pub struct TcoArgs {
    /// TCO plan (TOML): rack, energy price, PUE, years, and [[platform]] tables with a bill
    /// of materials (bom = [...], or bom = 0 for no capex on purpose), power (power_w or
    /// run) and performance (perf, perf_tests or run).
    /// Example: crates/tco/examples/seed_redis_tco.toml.
    pub plan: PathBuf,
    /// Read runs named by `run = "..."` from an exported JSON file instead of the store.
    #[arg(long, value_name = "FILE")]
    pub from: Option<PathBuf>,
}

/// Where runs come from: the store, or an exported JSON file.
enum Source {
    Store(store::Store),
    File(Vec<RunRecord>),
}

impl Source {
    fn open(from: Option<&Path>, g: &Global) -> anyhow::Result<Source> {
        match from {
            Some(p) => Ok(Source::File(read_runs_file(p)?)),
            None => {
                let db = g.db_path();
                // Reading never makes a store (a mistyped --db would leave an empty one).
                if !db.exists() {
                    anyhow::bail!(
                        "no results store at {}: run `rackbench run ...` first, pass --db PATH, or --from FILE.json",
                        db.display()
                    );
                }
                // Read-only: reading neither writes nor migrates the store.
                let s = store::Store::open_read_only(&db).with_context(|| {
                    format!(
                        "cannot open the results store {} (run `rackbench run ...` first, pass --db PATH, or --from FILE.json)",
                        db.display()
                    )
                })?;
                Ok(Source::Store(s))
            }
        }
    }

    /// Every run's id, oldest first.
    fn all_ids(&self) -> anyhow::Result<Vec<String>> {
        Ok(match self {
            Source::Store(s) => s.list_runs()?.into_iter().rev().map(|r| r.id).collect(),
            Source::File(runs) => {
                let mut v: Vec<&RunRecord> = runs.iter().collect();
                v.sort_by_key(|r| r.created_at);
                v.into_iter().map(|r| r.id.clone()).collect()
            }
        })
    }

    fn load(&self, id: &str) -> anyhow::Result<RunRecord> {
        match self {
            Source::Store(s) => {
                // Their errors say what matched nothing and how to list the runs, or which
                // run failed to load from where: a context here said each twice.
                let full = crate::commands::runs::resolve_noting(s, id)?;
                s.load_run(&full)
            }
            Source::File(runs) => find_in(runs, id),
        }
    }
}

/// A run from a file's list, named as a store's run is ([`store::name_among`]).
fn find_in(runs: &[RunRecord], id: &str) -> anyhow::Result<RunRecord> {
    let rows: Vec<_> = runs
        .iter()
        .map(|r| (r.id.as_str(), r.label.as_deref(), r.created_at))
        .collect();
    let found = match store::name_among(&rows, id) {
        store::Named::Run(found) => found,
        store::Named::NoRuns => anyhow::bail!("the file holds no runs"),
        store::Named::NotGiven => {
            anyhow::bail!("no run given; give an id, an id prefix, a label or `latest`")
        }
        store::Named::NoMatch(q) => anyhow::bail!(
            "no run `{q}` in the file; it holds: {}",
            runs.iter()
                .map(|r| r.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        store::Named::Many(q, ids) => anyhow::bail!(
            "`{q}` matches {} runs ({}); give more of the id",
            ids.len(),
            store::shown_ids(&ids)
        ),
    };
    runs.iter()
        .find(|r| r.id == found)
        .cloned()
        .ok_or_else(|| anyhow::anyhow!("no run `{found}` in the file"))
}

/// Runs exported as JSON: one run, an array of runs, or `{"runs": [...]}`.
fn read_runs_file(p: &Path) -> anyhow::Result<Vec<RunRecord>> {
    let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
    // The import's checks (format version, ids, histograms), not a second reading of
    // the file that would take what an import refuses.
    store::export::from_json(&text).with_context(|| format!("{}", p.display()))
}

/// Print to stdout; a closed pipe (`| head`) ends the output quietly instead of panicking.
fn emit(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

/// `svg_dir` as the Markdown file at `out` sees it: relative to its directory when it
/// lies below it, else as given (absolute, or relative to where rackbench ran).
fn chart_dir_from(out: &Path, svg_dir: &Path) -> String {
    let base = out.parent().unwrap_or(Path::new(""));
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    match abs(svg_dir).strip_prefix(abs(base)) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.to_string_lossy().into_owned(),
        _ => svg_dir.to_string_lossy().into_owned(),
    }
}

/// Evaluate a TCO plan, taking power/performance from the runs its platforms name.
fn evaluate_plan(
    plan_path: &Path,
    from: Option<&Path>,
    g: &Global,
) -> anyhow::Result<tco::TcoResult> {
    let text = std::fs::read_to_string(plan_path)
        .with_context(|| format!("reading TCO plan {}", plan_path.display()))?;
    let plan =
        tco::Plan::from_toml(&text).with_context(|| format!("in {}", plan_path.display()))?;
    let needs_runs = plan.platforms.iter().any(|p| {
        p.run.is_some() && (p.power_w.is_none() || (p.perf.is_none() && p.perf_tests.is_empty()))
    });
    if let (Some(f), false) = (from, needs_runs) {
        engine::errln!(
            "rackbench: note: --from {}: not read; every platform gives its power_w and \
             perf, so none takes anything from a run",
            model::printable(&f.display().to_string())
        );
    }
    let mut from_runs = BTreeMap::new();
    // Each platform's run, where its figures come from one.
    let mut runs: Vec<(&tco::Platform, RunRecord)> = Vec::new();
    if needs_runs {
        let src = Source::open(from, g)?;
        for p in &plan.platforms {
            let Some(id) = &p.run else { continue };
            let run = load_run_or_variant(&src, id)
                .with_context(|| format!("platform `{}`: run = \"{id}\"", p.name))?;
            // Variants are the settings under study, each its own platform: a run of
            // several blended them (the geometric mean over both, the mean of both
            // powers), a server that no one ran.
            let variants = report::compare::variants_of(&run);
            if variants.len() > 1 {
                anyhow::bail!(
                    "platform `{}`: run = \"{id}\" was measured under variants ({}), each \
                     its own setting: name one, e.g. run = \"{}@{}\"",
                    p.name,
                    variants.join(", "),
                    run.id,
                    variants[0]
                );
            }
            let perf_given = p.perf.is_some() || !p.perf_tests.is_empty();
            // Performance and power from the same points: the report's summary selection.
            let fr = if p.perf_from == tco::PerfFrom::Geomean && !perf_given {
                report::selection::tco_from_run(&run, p).map_err(anyhow::Error::msg)?
            } else {
                tco::from_run(&run, p)
            };
            from_runs.insert(p.name.clone(), fr);
            runs.push((p, run));
        }
    }
    let mut result =
        tco::evaluate(&plan, &from_runs).with_context(|| format!("in {}", plan_path.display()))?;
    let measured: Vec<(&tco::Platform, &RunRecord, &tco::FromRun)> = runs
        .iter()
        .map(|(p, run)| (*p, run, &from_runs[&p.name]))
        .collect();
    result
        .notes
        .extend(report::selection::tco_settings_note(&measured));
    Ok(result)
}

/// The report's format: `--format`, else the -o file's extension (`.md` Markdown, `.html`
/// or none HTML). A `--format` the extension contradicts (`-o x.md --format html`) is
/// refused: `-o x.md` alone wrote HTML into a `.md` file. So is another file type's
/// extension with no `--format`: `-o x.pdf` wrote HTML into a file every reader takes for
/// a PDF. A name whose last dot starts no file type (`report-2024.06.01`) is HTML.
fn report_format(given: Option<Format>, out: Option<&Path>) -> anyhow::Result<Format> {
    let ext = out
        .and_then(|p| p.extension())
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    let by_name = match ext.as_deref() {
        Some("md" | "markdown") => Some(Format::Md),
        Some("html" | "htm") => Some(Format::Html),
        _ => None,
    };
    let shown = || out.map(|p| p.display().to_string()).unwrap_or_default();
    match (given, by_name) {
        (None, None) if ext.as_deref().is_some_and(is_file_type) => anyhow::bail!(
            "report -o {}: rackbench writes HTML (.html) or Markdown (.md) reports, not .{}; \
             give -o a .html or .md name, or --format html (or md) to write one into this file \
             anyway",
            shown(),
            model::printable(ext.as_deref().unwrap_or_default())
        ),
        (Some(f), Some(n)) if f != n => anyhow::bail!(
            "report -o {}: --format {} does not match the file's extension; give -o a .{} \
             name, or leave --format out",
            shown(),
            if f == Format::Md { "md" } else { "html" },
            if f == Format::Md { "md" } else { "html" }
        ),
        (Some(f), _) => Ok(f),
        (None, n) => Ok(n.unwrap_or(Format::Html)),
    }
}

/// Whether a name's extension is a file type's (`pdf`, `txt`, `mp4`): a letter first, and
/// letters and digits only; `01` of a dated name is none.
fn is_file_type(ext: &str) -> bool {
    ext.starts_with(|c: char| c.is_ascii_alphabetic())
        && ext.chars().all(|c| c.is_ascii_alphanumeric())
}

pub fn report(a: Args, g: &Global) -> anyhow::Result<i32> {
    let src = Source::open(a.from.as_deref(), g)?;
    let ids = if a.all {
        src.all_ids()?
    } else if a.runs.is_empty() {
        vec!["latest".to_string()]
    } else {
        a.runs.clone()
    };
    if ids.is_empty() {
        anyhow::bail!("no runs to report: run `rackbench run ...` first");
    }
    let mut runs: Vec<RunRecord> = ids
        .iter()
        .map(|id| src.load(id))
        .collect::<anyhow::Result<Vec<_>>>()?;
    // A run named twice (`report A A`, `latest` beside its own id) is one column, as
    // `export` keeps it once: two identical columns read as two runs that agree.
    let mut seen = std::collections::BTreeSet::new();
    runs.retain(|r| seen.insert(r.id.clone()));
    let runs: Vec<RunRecord> = runs
        .into_iter()
        .flat_map(report::compare::variant_columns)
        .collect();
    let sel = a.table.selection(&runs)?;
    // An extrapolation that cannot be made (a run that discloses no clock) leaves its
    // column out with a note in the document: said here too, where it is typed
    // (acceptance L, 7).
    for n in report::derive::extrapolation_problems(&runs, &sel) {
        engine::errln!("rackbench: note: {}", model::printable(&n));
    }
    let tco_result = match &a.tco {
        Some(p) => Some(evaluate_plan(p, a.from.as_deref(), g)?),
        None => None,
    };
    let format = report_format(a.format, a.output.as_deref())?;
    let default_name = match format {
        Format::Html => "report.html",
        Format::Md => "report.md",
    };
    let out = a
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(default_name));
    let body = match format {
        Format::Html => report::html_with(&runs, tco_result.as_ref(), &sel),
        // Chart links only to files this command writes, as the report's reader finds them.
        Format::Md => {
            let link_dir = a.svg_dir.as_deref().map(|d| chart_dir_from(&out, d));
            report::markdown_with(&runs, tco_result.as_ref(), link_dir.as_deref(), &sel)
        }
    };
    let db = g.db_path();
    // Every file this command writes is checked before the first is written: a chart
    // that may not be replaced leaves no report linking to charts that are not there.
    let charts = match &a.svg_dir {
        Some(dir) => {
            if dir.exists() && !dir.is_dir() {
                anyhow::bail!(
                    "--svg-dir {} exists and is not a directory: give a directory (it is created if missing)",
                    dir.display()
                );
            }
            let charts: Vec<(PathBuf, String)> = report::svg_charts_with(&runs, &sel)
                .into_iter()
                .map(|(name, svg)| (dir.join(name), svg))
                .collect();
            for (p, _) in &charts {
                output::check_replaceable_as(p, &db, "--svg-dir another directory")?;
            }
            charts
        }
        None => Vec::new(),
    };
    // Its directory may be one --svg-dir makes (`-o site/r.md --svg-dir site/charts`).
    let made = a
        .svg_dir
        .as_deref()
        .is_some_and(|d| d.starts_with(output::dir_of(&out)));
    if made {
        output::check_replaceable_as(&out, &db, "-o another file")?;
    } else {
        output::check_replaceable(&out, &db)?;
    }
    let made_dirs = match &a.svg_dir {
        Some(dir) => model::dirs::make(dir)
            .with_context(|| format!("creating the --svg-dir directory {}", dir.display()))?,
        None => Vec::new(),
    };
    // The charts and the report together, or none of them.
    let mut files: Vec<(&std::path::Path, &[u8])> = charts
        .iter()
        .map(|(p, svg)| (p.as_path(), svg.as_bytes()))
        .collect();
    files.push((out.as_path(), body.as_bytes()));
    // Nothing written: nor a directory made for it.
    output::write_all_atomic(&files, &db).inspect_err(|_| model::dirs::remove_made(&made_dirs))?;
    let svgs: Vec<PathBuf> = charts.into_iter().map(|(p, _)| p).collect();
    if g.json {
        let v = serde_json::json!({
            "report": out,
            "format": match format { Format::Html => "html", Format::Md => "md" },
            "runs": runs.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            "svg": svgs,
        });
        emit(&format!("{}\n", serde_json::to_string_pretty(&v)?))?;
    } else {
        emit(&format!("{}\n", out.display()))?;
        if !g.quiet {
            if let Some(dir) = &a.svg_dir {
                engine::errln!(
                    "rackbench: {} chart(s) written to {}",
                    svgs.len(),
                    dir.display()
                );
            }
        }
    }
    Ok(0)
}

pub fn compare(a: CompareArgs, g: &Global) -> anyhow::Result<i32> {
    let (ga, gb) = match (a.group_a.is_empty(), a.group_b.is_empty(), a.runs.len()) {
        (true, true, 2) => (vec![a.runs[0].clone()], vec![a.runs[1].clone()]),
        (false, false, 0) => (a.group_a.clone(), a.group_b.clone()),
        _ => anyhow::bail!(
            "give two runs (`rackbench compare OLD NEW`) or two groups (`rackbench compare --a RUN,RUN --b RUN,RUN`)"
        ),
    };
    let src = Source::open(a.from.as_deref(), g)?;
    // Each side's runs, and what its arguments named (`ID` or `ID@VARIANT`).
    let load = |ids: &[String]| -> anyhow::Result<(Vec<RunRecord>, Vec<String>)> {
        let mut out = Vec::new();
        let mut named = Vec::new();
        for id in ids {
            let (name, runs) = load_side(&src, id)?;
            // One run is one replication: named twice (a typo, an id and its label, a
            // script's list), it made n=4 of one run, sd 0, and a "significant" verdict.
            if named.contains(&name) {
                anyhow::bail!(
                    "`{}` names run {} again on the same side: one run is one replication, so name each run once (`rackbench runs` lists them)",
                    model::printable(id),
                    model::printable(&name)
                );
            }
            out.extend(runs);
            named.push(name);
        }
        Ok((out, named))
    };
    let ((ra, na), (rb, nb)) = (load(&ga)?, load(&gb)?);
    if !g.quiet {
        if let Some(note) = same_runs_note(&na, &nb) {
            engine::errln!("rackbench: note: {}", model::printable(&note));
        }
    }
    let c = report::compare(&ra, &rb);
    // Runs with no point in common are bad input, as a missing run is: exit 2, with
    // nothing on stdout (a `--json > cmp.json` kept a plausible comparison of nothing).
    if let Some(why) = &c.nothing_in_common {
        anyhow::bail!("nothing to compare: {why}");
    }
    if g.json {
        emit(&format!("{}\n", serde_json::to_string_pretty(&c)?))?;
    } else {
        emit(&model::printable_lines(&report::compare_text(&c)))?;
    }
    Ok(0)
}

/// What a `RUN` or `RUN@VARIANT` argument names.
enum Side {
    Run(RunRecord),
    /// A run measured under variants, and the one asked for (which it has).
    Variant(RunRecord, String),
}

/// Resolve `RUN` or `RUN@VARIANT`, loading each run once. A run whose label itself holds
/// an `@` is that run, not one of its variants; a variant the run lacks is an error that
/// names the ones it has.
fn resolve_side(src: &Source, id: &str) -> anyhow::Result<Side> {
    let Some((run_id, variant)) = id.rsplit_once('@') else {
        return Ok(Side::Run(src.load(id)?));
    };
    if let Ok(r) = src.load(id) {
        return Ok(Side::Run(r));
    }
    let run = src.load(run_id)?;
    let have = report::compare::variants_of(&run);
    if have.iter().any(|v| v == variant) {
        return Ok(Side::Variant(run, variant.to_string()));
    }
    if have.is_empty() {
        anyhow::bail!(
            "run {} was not measured under variants; compare whole runs",
            run.id
        )
    }
    // Declared in the plan but without a result: its setup failed, or the run stopped
    // before its turn (its disclosure says which).
    let declared = run.plan["variants"]
        .as_array()
        .is_some_and(|vs| vs.iter().any(|v| v["name"].as_str() == Some(variant)));
    let why = if declared {
        format!(
            "variant `{}` of run {} has no result: it was declared, but its setup failed or the run stopped before it (`rackbench show {}` says which)",
            model::printable(variant),
            run.id,
            run.id
        )
    } else {
        format!(
            "run {} has no variant `{}`",
            run.id,
            model::printable(variant)
        )
    };
    // An example with two different sides: two of this run's variants where it has two,
    // else its one variant beside another run.
    let example = match have.get(1) {
        Some(second) => format!("rackbench compare {run_id}@{} {run_id}@{second}", have[0]),
        None => format!("rackbench compare {run_id}@{} OTHER_RUN", have[0]),
    };
    anyhow::bail!("{why}; it has: {} (e.g. {example})", have.join(", "))
}

/// A run, or with `RUN@VARIANT` the results of one of its variants as a run of their own.
fn load_run_or_variant(src: &Source, id: &str) -> anyhow::Result<RunRecord> {
    match resolve_side(src, id)? {
        Side::Run(r) => Ok(r),
        Side::Variant(run, v) => report::compare::variant_run(&run, &v)
            .ok_or_else(|| anyhow::anyhow!("run {} has no variant `{v}`", run.id)),
    }
}

/// `RUN` (the whole run) or `RUN@VARIANT` (that variant's repetitions, each a
/// replication of its own: variants run interleaved, each repetition with its servers),
/// with what the argument named: the run's id, `ID@VARIANT` for a variant.
fn load_side(src: &Source, id: &str) -> anyhow::Result<(String, Vec<RunRecord>)> {
    match resolve_side(src, id)? {
        Side::Run(r) => Ok((r.id.clone(), vec![r])),
        Side::Variant(run, v) => {
            let runs = report::compare::variant_runs(&run, &v)
                .ok_or_else(|| anyhow::anyhow!("run {} has no variant `{v}`", run.id))?;
            Ok((format!("{}@{v}", run.id), runs))
        }
    }
}

/// What to say when the two sides of a comparison name the same runs (`compare RUN RUN`,
/// or `latest` and the id it resolves to): every figure is then compared with itself.
/// Not an error: the comparison is still what was asked.
fn same_runs_note(a: &[String], b: &[String]) -> Option<String> {
    let (mut sa, mut sb) = (a.to_vec(), b.to_vec());
    sa.sort();
    sb.sort();
    if sa == sb {
        let what = match sa.as_slice() {
            [one] => format!("both sides are one run ({one})"),
            many => format!("both sides are the same runs ({})", many.join(", ")),
        };
        return Some(format!(
            "{what}: each figure is compared with itself, so there is no difference to find; \
             give two different runs (list them with `rackbench runs`)"
        ));
    }
    let both: Vec<&str> = a
        .iter()
        .filter(|x| b.contains(x))
        .map(String::as_str)
        .collect();
    (!both.is_empty()).then(|| {
        format!(
            "{} on both sides: its figures count in A and in B",
            match both.as_slice() {
                [one] => format!("run {one} is"),
                many => format!("runs {} are", many.join(", ")),
            }
        )
    })
}

pub fn tco(a: TcoArgs, g: &Global) -> anyhow::Result<i32> {
    let t = evaluate_plan(&a.plan, a.from.as_deref(), g)?;
    if g.json {
        emit(&format!("{}\n", serde_json::to_string_pretty(&t)?))?;
    } else {
        emit(&model::printable_lines(&tco::text(&t)))?;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `-o x.md` writes Markdown (it wrote HTML into the `.md` file); a `--format` the
    /// name contradicts is refused; other names are HTML unless told.
    #[test]
    fn the_format_follows_the_output_name() {
        let f = |given, out: &str| report_format(given, Some(Path::new(out)));
        assert_eq!(f(None, "x.md").unwrap(), Format::Md);
        assert_eq!(f(None, "x.HTML").unwrap(), Format::Html);
        assert_eq!(f(None, "report").unwrap(), Format::Html);
        assert_eq!(f(None, "report-2024.06.01").unwrap(), Format::Html);
        let e = f(None, "x.pdf").unwrap_err().to_string();
        assert!(e.contains("not .pdf") && e.contains("--format html"), "{e}");
        assert_eq!(f(Some(Format::Md), "x.txt").unwrap(), Format::Md);
        assert_eq!(f(Some(Format::Html), "x.txt").unwrap(), Format::Html);
        let e = f(Some(Format::Html), "x.md").unwrap_err().to_string();
        assert!(e.contains("does not match the file's extension"), "{e}");
        assert_eq!(report_format(None, None).unwrap(), Format::Html);
    }

    #[test]
    fn a_runs_file_gets_the_imports_checks() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("runs.json");
        std::fs::write(&p, r#"{"format_version": 2, "runs": []}"#).unwrap();
        let err = format!("{:#}", read_runs_file(&p).unwrap_err());
        assert!(err.contains("upgrade rackbench"), "{err}");
        let run = store::fixtures::rich_run("r1", None, store::fixtures::t0(0), 1);
        std::fs::write(&p, store::export::to_json(std::slice::from_ref(&run))).unwrap();
        assert_eq!(read_runs_file(&p).unwrap(), vec![run]);
    }

    /// A label that is also a run's id prefix names the labelled run from a file, as
    /// from the store (the file took the prefix's and called the two ambiguous), and
    /// the newest of a label's runs.
    #[test]
    fn a_file_resolves_runs_as_the_store_does() {
        let mut older = stored_run("20261121T000000-aaaaaa", "2026", 1.0);
        older.created_at -= chrono::Duration::seconds(60);
        let newer = stored_run("20261122T000000-bbbbbb", "2026", 2.0);
        let other = stored_run("20261123T000000-cccccc", "x", 3.0);
        let runs = vec![older, newer, other];
        let id = |q: &str| find_in(&runs, q).map(|r| r.id);
        assert_eq!(id("2026").unwrap(), "20261122T000000-bbbbbb");
        assert_eq!(id(" x ").unwrap(), "20261123T000000-cccccc");
        assert_eq!(id("20261121").unwrap(), "20261121T000000-aaaaaa");
        assert_eq!(id("latest").unwrap(), "20261123T000000-cccccc");
        assert!(id("").unwrap_err().to_string().contains("no run given"));
        let dir = tempfile::tempdir().unwrap();
        let s = store::Store::open(&dir.path().join("r.sqlite")).unwrap();
        for r in &runs {
            s.import_run(r).unwrap();
        }
        for q in ["2026", " x ", "20261121", "latest"] {
            assert_eq!(s.resolve(q).unwrap(), id(q).unwrap(), "{q}");
        }
    }

    /// A small stored run: one kv result with a real histogram, IPMI power, per-CPU telemetry.
    fn stored_run(id: &str, label: &str, ops: f64) -> RunRecord {
        let t0 = chrono::Utc::now();
        let mut h = model::hist::new_latency_histogram();
        for v in 1..=2000u64 {
            h.record(200_000 + v * 100).unwrap();
        }
        let cpu = model::CpuUtil {
            cpu: 0,
            usr_pct: 30.0,
            nice_pct: 0.0,
            sys_pct: 50.0,
            iowait_pct: 0.0,
            irq_pct: 0.0,
            soft_pct: 10.0,
            steal_pct: 0.0,
            idle_pct: 10.0,
        };
        let result = model::ResultRecord {
            workload: "kv".into(),
            test: "set".into(),
            step: 0,
            repetition: 0,
            params: BTreeMap::from([("pipeline".to_string(), serde_json::json!(1))]),
            settings: Default::default(),
            headline: "ops_per_s".into(),
            started_at: t0,
            duration_s: 1.0,
            metrics: vec![model::Metric::new("ops_per_s", ops, "ops/s")],
            missing: vec![],
            histograms: vec![model::HistogramRecord::from_histogram("set", "service", &h)],
            telemetry: vec![],
            telemetry_summary: vec![model::TelemetrySummary {
                host: "local".into(),
                samples: 2,
                covered_s: Some(2.0),
                whole_samples: true,
                measured_t_s: Vec::new(),
                cpus: vec![cpu],
                ctxt_per_s: Some(0.0),
                intr_per_s: Some(0.0),
                nics: vec![],
                disks: vec![],
                mean_freq_mhz: None,
                procs: vec![],
                power: vec![model::PowerSummary {
                    source: "ipmi-dcmi".into(),
                    zone: "system".into(),
                    mean_watts: 200.0,
                    max_watts: 210.0,
                    whole_system: true,
                    modelled: false,
                }],
                power_missing: None,
                power_gaps: None,
                part_present: Vec::new(),
            }],
            flags: vec![],
            status: model::Status::Ok,
            error: None,
        };
        RunRecord {
            format_version: model::RECORD_FORMAT_VERSION,
            id: id.into(),
            label: Some(label.into()),
            created_at: t0,
            finished_at: Some(t0),
            rackbench_version: "test".into(),
            command: "rackbench run kv".into(),
            plan: serde_json::json!({}),
            hosts: vec![model::HostDisclosure {
                host: "local".into(),
                role: "sut+loadgen".into(),
                facts: BTreeMap::from([("cpu.model".to_string(), model::Fact::known("Test CPU"))]),
            }],
            idle_power: vec![],
            results: vec![result],
            status: model::Status::Ok,
            error: None,
        }
    }

    #[test]
    fn report_compare_and_tco_from_the_store() {
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("results.sqlite");
        let s = store::Store::open(&db).unwrap();
        s.import_run(&stored_run("20261121T000000-aaaaaa", "plat-a", 100_000.0))
            .unwrap();
        s.import_run(&stored_run("20261121T000100-bbbbbb", "plat-b", 150_000.0))
            .unwrap();
        drop(s);
        let g = Global {
            db: Some(db.clone()),
            json: false,
            quiet: true,
        };
        let out = d.path().join("report.html");
        let svg_dir = d.path().join("svg");
        let code = report(
            Args {
                all: false,
                runs: vec!["plat-a".into(), "plat-b".into()],
                output: Some(out.clone()),
                format: Some(Format::Html),
                svg_dir: Some(svg_dir.clone()),
                tco: None,
                from: None,
                table: TableArgs::default(),
            },
            &g,
        )
        .unwrap();
        assert_eq!(code, 0);
        let html = std::fs::read_to_string(&out).unwrap();
        assert!(html.contains("<svg") && html.contains("plat-b"));
        assert!(std::fs::read_dir(&svg_dir).unwrap().count() >= 3);
        // Default: the latest run.
        let md = d.path().join("latest.md");
        report(
            Args {
                all: false,
                runs: vec![],
                output: Some(md.clone()),
                format: None,
                svg_dir: None,
                tco: None,
                from: None,
                table: TableArgs::default(),
            },
            &g,
        )
        .unwrap();
        assert!(std::fs::read_to_string(&md).unwrap().contains("plat-b"));
        // A TCO plan taking power and performance from the stored runs.
        let plan = d.path().join("plan.toml");
        std::fs::write(
            &plan,
            "years = 3\nenergy_price_per_kwh = 0.1\n[rack]\npower_budget_w = 10000\nrack_units = 40\n\
             [[platform]]\nname = \"a\"\nrun = \"plat-a\"\nbom = [{ name = \"Server\", unit_cost = 5000 }]\n\
             [[platform]]\nname = \"b\"\nrun = \"plat-b\"\nbom = [{ name = \"Server\", unit_cost = 6000 }]\n",
        )
        .unwrap();
        let t = evaluate_plan(&plan, None, &g).unwrap();
        assert_eq!(t.platforms[0].server_power_w, 200.0);
        assert!((t.platforms[1].perf_per_server - 150_000.0).abs() < 1e-6);
        assert_eq!(t.platforms[0].servers_per_rack, 40);
        assert_eq!(tco(TcoArgs { plan, from: None }, &g).unwrap(), 0);
        assert_eq!(
            compare(
                CompareArgs {
                    runs: vec!["plat-a".into(), "plat-b".into()],
                    group_a: vec![],
                    group_b: vec![],
                    from: None,
                },
                &g,
            )
            .unwrap(),
            0
        );
        // One run is not a comparison: the error says what to type.
        let err = compare(
            CompareArgs {
                runs: vec!["plat-a".into()],
                group_a: vec![],
                group_b: vec![],
                from: None,
            },
            &g,
        )
        .unwrap_err();
        assert!(err.to_string().contains("rackbench compare OLD NEW"));
    }
}
