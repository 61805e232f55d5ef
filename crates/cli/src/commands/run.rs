//! `rackbench run WORKLOAD [flags]` / `rackbench run --plan FILE`: arguments and plan
//! file -> a validated [`runner::Plan`] (every point is built before anything starts, so
//! bad input stores nothing) -> [`runner::run`] -> the results table. The run itself
//! (hosts, services, drivers, telemetry, store) lives in the `runner` crate.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context};
use clap::{Args as ClapArgs, FromArgMatches};
use engine::workload::{Params, Progress, Registration};
use model::{ResultRecord, RunRecord};
use report::derive::Point;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::{registry, Global};

#[derive(clap::Args, Debug)]
#[command(disable_help_flag = true)]
pub struct Args {
    /// The workload (kv, http, oltp, net, crypto, mem) and its flags, or --plan FILE.
    /// `rackbench run kv --help` lists kv's flags.
    #[arg(
        value_name = "WORKLOAD [FLAGS]",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub args: Vec<String>,
}

impl Args {
    /// The workload name (the first word, unless it is a flag, or the word after a
    /// leading `--plan FILE`) and the rest.
    fn split(&self) -> (Option<String>, Vec<String>) {
        let a = &self.args;
        let at = match a.first() {
            Some(f) if f == "--plan" => 2,
            Some(f) if f.starts_with("--plan=") => 1,
            _ => 0,
        };
        match a.get(at) {
            Some(w) if !w.starts_with('-') => {
                let mut rest = a.clone();
                rest.remove(at);
                (Some(w.clone()), rest)
            }
            _ => (None, a.clone()),
        }
    }
}

/// Options of every run, whatever the workload (also `[run]` in a plan file).
#[derive(clap::Args, Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunOpts {
    /// A TOML plan file: `[run]` (these options and `workload = "NAME"`) and `[NAME]`
    /// (the workload's parameters), e.g. `workload = "kv"` and `[kv]`.
    #[arg(long, value_name = "FILE")]
    #[serde(skip)]
    pub plan: Option<PathBuf>,
    /// Workload, or several run in turn as a suite (in a plan file's [run] table:
    /// `workload = "kv"` or `workload = ["mem", "crypto", "http", "oltp"]`).
    #[arg(skip)]
    pub workload: Option<Workloads>,
    /// Run every test of every sweep point this many times (mean ± sd reported, as in the report).
    #[arg(long, value_name = "N")]
    pub repeat: Option<u32>,
    /// Repeat until the headline's coefficient of variation is below this percent
    /// (at least --repeat runs, at most --max-repeat), as the Phoronix Test Suite does.
    #[arg(long = "until-cv", value_name = "PCT")]
    pub until_cv: Option<f64>,
    /// Upper bound of repetitions with --until-cv [default: 10].
    #[arg(long = "max-repeat", value_name = "N")]
    pub max_repeat: Option<u32>,
    /// Start a run estimated to take longer than 12 hours (or of more than 100000 tests):
    /// refused without this, as a likely slip of a sweep range.
    #[arg(long = "allow-long")]
    #[serde(default)]
    pub allow_long: bool,
    /// A label for this run, e.g. the platform's name (reports and comparisons use it).
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// Telemetry sampling interval in seconds [default: 1].
    #[arg(long = "telemetry-interval", value_name = "SECS")]
    pub telemetry_interval: Option<f64>,
    /// Do not sample telemetry (CPU, power: the power flags are refused beside it).
    #[arg(long = "no-telemetry")]
    #[serde(default)]
    pub no_telemetry: bool,
    /// Measure idle power this many seconds before load, when a power source exists [default: 5].
    #[arg(long = "idle-power", value_name = "SECS")]
    pub idle_power: Option<f64>,
    /// A command that prints the whole server's power in watts (a PDU or wall meter), run once per sample.
    #[arg(long = "power-meter", value_name = "CMD")]
    pub power_meter: Option<String>,
    /// Declared power model when nothing measures power: IDLE_W:MAX_W (figures are marked modelled).
    #[arg(long = "power-model", value_name = "IDLE_W:MAX_W")]
    pub power_model: Option<String>,
    /// Where the results store is (same as the global --db).
    #[arg(long = "db", value_name = "PATH")]
    #[serde(skip)]
    pub db: Option<PathBuf>,
    /// Print the run's full record as JSON on stdout.
    #[arg(long)]
    #[serde(skip)]
    pub json: bool,
    /// No progress on stderr.
    #[arg(long, short = 'q')]
    #[serde(skip)]
    pub quiet: bool,
}

/// Where the run's parts go (also `[hosts]` in a plan file). Hosts are ssh destinations
/// (your ~/.ssh/config applies); `local` is this machine.
#[derive(clap::Args, Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HostsOpts {
    /// The system under test: servers are launched (pinned) there [default: local].
    #[arg(long = "sut", value_name = "HOST")]
    pub sut: Option<String>,
    /// Load-generator hosts; clients are spread across them [default: local].
    #[arg(long = "loadgen", value_name = "HOSTS", value_delimiter = ',')]
    #[serde(alias = "loadgens", deserialize_with = "names")]
    pub loadgen: Vec<String>,
    /// net: measure every ordered sender>receiver pair of these hosts (the iperf3 study's matrix).
    #[arg(long = "hosts", value_name = "HOSTS", value_delimiter = ',')]
    #[serde(alias = "matrix", deserialize_with = "names")]
    pub hosts: Vec<String>,
    /// net: these SENDER>RECEIVER pairs, quoted for the shell (e.g. 'rbh1>rbh2,rbh2>rbh1'),
    /// or SENDER:RECEIVER (rbh1:rbh2); beside --hosts, added to its matrix (each pair
    /// measured once).
    #[arg(long = "pairs", value_name = "PAIRS", value_delimiter = ',')]
    #[serde(deserialize_with = "names")]
    pub pairs: Vec<String>,
    /// An ssh config file to use instead of ~/.ssh/config (ssh -F).
    #[arg(long = "ssh-config", value_name = "FILE")]
    pub ssh_config: Option<PathBuf>,
}

/// A plan's list of hosts (or pairs) as a list, or as the flag takes it: one string,
/// comma-separated (`loadgen = "rbh2,rbh3"` was refused as "expected a sequence").
fn names<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let list = match Value::deserialize(d)? {
        // An empty item is kept, for `HostsOpts::plan` to refuse as the flag's is.
        Value::String(s) if s.trim().is_empty() => Some(Vec::new()),
        Value::String(s) => Some(s.split(',').map(|n| n.trim().to_string()).collect()),
        Value::Array(v) => v
            .into_iter()
            .map(|n| n.as_str().map(str::to_string))
            .collect(),
        _ => None,
    };
    list.ok_or_else(|| {
        serde::de::Error::custom(
            "give host names as a list, [\"rbh2\", \"rbh3\"], or as one string, \"rbh2,rbh3\"",
        )
    })
}

impl HostsOpts {
    fn or(self, plan: HostsOpts) -> HostsOpts {
        HostsOpts {
            sut: self.sut.or(plan.sut),
            loadgen: if self.loadgen.is_empty() {
                plan.loadgen
            } else {
                self.loadgen
            },
            hosts: if self.hosts.is_empty() {
                plan.hosts
            } else {
                self.hosts
            },
            pairs: if self.pairs.is_empty() {
                plan.pairs
            } else {
                self.pairs
            },
            ssh_config: self.ssh_config.or(plan.ssh_config),
        }
    }

    fn plan(&self) -> anyhow::Result<runner::HostsPlan> {
        // `--loadgen 'rbh2, rbh3'` was refused for the space a list's reader writes;
        // `--loadgen rbh1,,rbh2` ran on two hosts without a word, where `-c 1,,2` is
        // refused as the typo it likely is (a host left out).
        let names = |flag: &str, v: &[String]| -> anyhow::Result<Vec<String>> {
            let v: Vec<String> = v.iter().map(|n| n.trim().to_string()).collect();
            if v.iter().any(String::is_empty) {
                let given: Vec<&str> = v
                    .iter()
                    .map(String::as_str)
                    .filter(|n| !n.is_empty())
                    .collect();
                bail!(
                    "{flag} `{}` has an empty item: give the host names separated by single \
                     commas, e.g. `{}`",
                    v.join(","),
                    if given.is_empty() {
                        "rbh1,rbh2".to_string()
                    } else {
                        given.join(",")
                    }
                );
            }
            Ok(v)
        };
        Ok(runner::HostsPlan {
            sut: self.sut.as_ref().map(|s| s.trim().to_string()),
            loadgens: names("--loadgen", &self.loadgen)?,
            matrix: names("--hosts", &self.hosts)?,
            pairs: names("--pairs", &self.pairs)?
                .iter()
                .map(|p| runner::roles::parse_pair(p))
                .collect::<anyhow::Result<_>>()?,
            ssh_config: self.ssh_config.clone(),
        })
    }
}

/// `workload = "kv"` or `workload = ["mem", "crypto"]` in a plan's `[run]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Workloads {
    One(String),
    Many(Vec<String>),
}

impl Workloads {
    fn names(&self) -> Vec<String> {
        match self {
            Workloads::One(s) => split_names(s),
            Workloads::Many(v) => v.clone(),
        }
    }
}

/// `kv,http` as given on the command line.
fn split_names(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(String::from)
        .collect()
}

/// A plan file: `[run]`, `[hosts]`, plus one table of parameters per workload, in the
/// file's order (a plan with several tables and no `workload` runs them all, in turn).
#[derive(Debug, Deserialize)]
struct PlanFile {
    #[serde(default)]
    run: Option<RunOpts>,
    #[serde(default)]
    hosts: Option<HostsOpts>,
    /// `[[variant]]`: settings under study, each with setup and teardown commands.
    #[serde(default)]
    variant: Vec<runner::Variant>,
    #[serde(flatten)]
    workloads: toml::Table,
}

/// A plan file's text, parsed and checked: every table is `[run]`, `[hosts]` or a
/// workload's, every `[[variant]]` is valid. (Fuzzed: `fuzz_plan_file`.)
fn load_plan(text: &str, path: &std::path::Path) -> anyhow::Result<PlanFile> {
    let plan: PlanFile = toml::from_str(text).with_context(|| {
        format!(
            "plan file {} is not valid (see README: Plan files)",
            path.display()
        )
    })?;
    // TOML has `nan` and `inf`, and JSON neither: a workload's `rate = inf` became null,
    // a setting not given, and its test ran closed loop.
    if let Ok(doc) = text.parse::<toml::Table>() {
        if let Some((key, v)) = non_finite(&doc, "") {
            bail!(
                "plan file {}: `{key} = {v}` is no number a setting can take; give a finite \
                 number, or leave the key out for its default",
                path.display()
            );
        }
    }
    runner::Variant::validate(&plan.variant)
        .with_context(|| format!("plan file {}", path.display()))?;
    for key in plan.workloads.keys() {
        if registry::find(key).is_none() {
            bail!(
                "plan file {}: unknown table [{key}]; tables are [run], [hosts] and the workloads: {}",
                path.display(),
                registry::names().join(", ")
            );
        }
    }
    Ok(plan)
}

/// A label that can name its run afterwards: `show`, `report` and `compare` take a run by
/// its label, trimmed, and `latest` is the newest run, so ` epyc `, an empty label or
/// `latest` were stored and could never be asked for.
fn check_label(label: &str, what: &str) -> anyhow::Result<()> {
    let shown = model::printable(label);
    if label.trim().is_empty() {
        bail!("{what} is empty; give the run a name (e.g. --label epyc-9654), or leave it out");
    }
    if label.trim() != label {
        bail!(
            "{what} `{shown}` starts or ends with a space, which a run is not looked up by; \
             give `{}`",
            model::printable(label.trim())
        );
    }
    if label == store::LATEST {
        bail!(
            "{what} `{0}` would not name this run: `{0}` is always the newest run; give \
             another label",
            store::LATEST
        );
    }
    Ok(())
}

/// The first float in a plan that is no number (`nan`, `inf`), by its dotted key.
fn non_finite(table: &toml::Table, prefix: &str) -> Option<(String, f64)> {
    fn walk(v: &toml::Value, key: String) -> Option<(String, f64)> {
        match v {
            toml::Value::Float(f) if !f.is_finite() => Some((key, *f)),
            toml::Value::Table(t) => non_finite(t, &key),
            toml::Value::Array(a) => a
                .iter()
                .enumerate()
                .find_map(|(i, v)| walk(v, format!("{key}[{i}]"))),
            _ => None,
        }
    }
    table.iter().find_map(|(k, v)| {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        walk(v, key)
    })
}

/// Everything the runner needs, resolved from flags and the plan file.
pub struct Resolved {
    pub parts: Vec<Part>,
    pub variants: Vec<runner::Variant>,
    pub opts: RunOpts,
    pub hosts: runner::HostsPlan,
    pub command: String,
}

/// One workload of the run and its parameters.
pub struct Part {
    pub registration: Registration,
    pub params: Params,
    pub points: Vec<Params>,
}

fn workload_command(reg: &Registration) -> clap::Command {
    let cmd = clap::Command::new(format!("rackbench run {}", reg.name))
        .about(reg.about)
        .no_binary_name(true)
        // `--duration -1` reaches the workload's check ("out of range: use 0.1 to"), not clap's
        // "unexpected argument '-1'".
        .allow_negative_numbers(true)
        .after_help(
            "Numeric knobs take lists and ranges, run as a cartesian sweep: -P 1,100 --instances 1..4 \
             --clients 1..64:x2",
        );
    let cmd = HostsOpts::augment_args(RunOpts::augment_args(cmd));
    (reg.flags)(cmd).about(reg.about)
}

/// Parameters from the workload's matched flags (ids are the parameter keys), each read
/// by [`engine::plan::parse_setting`] (`text_keys`: the workload's free-text keys).
fn params_from_matches(
    cmd: &clap::Command,
    m: &clap::ArgMatches,
    text_keys: &[&str],
) -> anyhow::Result<Params> {
    let run_ids: Vec<String> =
        HostsOpts::augment_args(RunOpts::augment_args(clap::Command::new("x")))
            .get_arguments()
            .map(|a| a.get_id().to_string())
            .collect();
    let mut out = Map::new();
    for arg in cmd.get_arguments() {
        let id = arg.get_id().as_str();
        if run_ids.iter().any(|r| r == id) || id == "help" {
            continue;
        }
        if m.value_source(id) != Some(clap::parser::ValueSource::CommandLine) {
            continue;
        }
        let raw: Vec<String> = m
            .get_raw(id)
            .map(|vals| vals.map(|v| v.to_string_lossy().to_string()).collect())
            .unwrap_or_default();
        let repeatable = matches!(arg.get_action(), clap::ArgAction::Append);
        let value = if repeatable {
            Value::Array(raw.into_iter().map(Value::String).collect())
        } else if matches!(arg.get_action(), clap::ArgAction::SetTrue) {
            Value::Bool(true)
        } else {
            match raw.first() {
                Some(s) => engine::plan::parse_setting(id, s, text_keys)
                    .with_context(|| format!("--{}", arg.get_long().unwrap_or(id)))?,
                None => continue,
            }
        };
        out.insert(id.to_string(), value);
    }
    Ok(out)
}

pub fn resolve(a: &Args, g: &Global) -> anyhow::Result<Resolved> {
    // A plan file may come before or after the workload name.
    let (cli_names, rest) = a.split();
    let plan_path = rest
        .iter()
        .position(|s| s == "--plan")
        .and_then(|i| rest.get(i + 1))
        .map(PathBuf::from)
        .or_else(|| {
            rest.iter()
                .find_map(|s| s.strip_prefix("--plan="))
                .map(PathBuf::from)
        });
    let mut plan_opts = RunOpts::default();
    let mut plan_hosts = HostsOpts::default();
    let mut tables = toml::Table::new();
    let mut variants = Vec::new();
    let mut names = cli_names.as_deref().map(split_names).unwrap_or_default();
    if let Some(path) = &plan_path {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read plan file {}", path.display()))?;
        let plan = load_plan(&text, path)?;
        plan_opts = plan.run.unwrap_or_default();
        plan_hosts = plan.hosts.unwrap_or_default();
        tables = plan.workloads;
        variants = plan.variant;
        if names.is_empty() {
            names = match &plan_opts.workload {
                Some(w) => w.names(),
                // Every workload table, in the file's order.
                None => tables.keys().cloned().collect(),
            };
        }
        if names.is_empty() {
            bail!(
                "plan file {}: say which workload: [run] workload = \"kv\" (or a list), or a [kv] table",
                path.display()
            );
        }
        // A workload chosen with no table runs with its defaults; said when the plan
        // has tables for others, which then do not run (`workload = "crypto"` beside a
        // [kv] table ran every RSA size at 3 s each, without a word of the [kv]).
        let unchosen: Vec<String> = tables
            .keys()
            .filter(|t| !names.contains(t))
            .map(|t| format!("[{t}]"))
            .collect();
        if !unchosen.is_empty() {
            let (them, verb) = match unchosen.len() {
                1 => ("it", "does"),
                _ => ("them", "do"),
            };
            for n in names.iter().filter(|n| !tables.contains_key(*n)) {
                engine::errln!(
                    "rackbench: note: plan file {}: no [{n}] table: {n} runs with its defaults, \
                     and the plan's {} {verb} not run (choose {them} with [run] workload or \
                     `rackbench run NAME,... --plan FILE`)",
                    path.display(),
                    unchosen.join(", ")
                );
            }
        }
    }
    if names.is_empty() {
        if rest.iter().any(|s| s == "--help" || s == "-h") {
            engine::outln!(
                "Usage: rackbench run WORKLOAD[,WORKLOAD...] [FLAGS]   or   rackbench run --plan FILE\n\nWorkloads:"
            );
            for r in registry::all() {
                engine::outln!("  {:<8} {}", r.name, r.about);
            }
            engine::outln!("\n`rackbench run WORKLOAD --help` lists a workload's flags.");
            std::process::exit(0);
        }
        // `run --label x crypto`: the name is there, after an option and its value (a
        // word right after an option may be its value: `run --label kv`).
        let known = registry::names();
        let at = (0..rest.len()).find(|&i| {
            let n = split_names(&rest[i]);
            let a_value = i > 0 && rest[i - 1].starts_with('-') && !rest[i - 1].contains('=');
            !a_value && !n.is_empty() && n.iter().all(|n| known.contains(&n.as_str()))
        });
        if let Some(at) = at {
            let flags: Vec<String> = rest
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != at)
                .map(|(_, w)| model::shell_word(w))
                .collect();
            bail!(
                "the workload's name comes first, right after `run`: `rackbench run {} {}`",
                rest[at],
                flags.join(" ")
            );
        }
        bail!(
            "which workload? `rackbench run kv --help` lists kv's flags; workloads: {}",
            known.join(", ")
        );
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut regs = Vec::new();
    for name in &names {
        let reg = registry::find(name).with_context(|| {
            // A plan file named where a workload goes (acceptance M, 9).
            if name.ends_with(".toml") || std::path::Path::new(name).is_file() {
                format!(
                    "`{}` is no workload; to run a plan file, give it with --plan: \
                     rackbench run --plan {}",
                    model::printable(name),
                    model::printable(name)
                )
            } else {
                format!(
                    "unknown workload `{name}`; choose from: {}",
                    registry::names().join(", ")
                )
            }
        })?;
        if !seen.insert(name.clone()) {
            bail!("workload `{name}` is named twice: a suite runs each workload once (its sweep covers the variants)");
        }
        regs.push(reg);
    }
    // One workload takes its own flags; a suite only the run's (each workload's
    // parameters are its plan table's).
    let cmd = match regs.as_slice() {
        [one] => workload_command(one),
        _ => HostsOpts::augment_args(RunOpts::augment_args(
            clap::Command::new(format!("rackbench run {}", names.join(",")))
                .no_binary_name(true)
                .disable_help_flag(true),
        )),
    };
    let m = cmd.clone().try_get_matches_from(&rest).map_err(|e| {
        if matches!(e.kind(), clap::error::ErrorKind::DisplayHelp) {
            let _ = e.print();
            std::process::exit(0);
        }
        let text = e.render().to_string();
        let text = text.trim_end().trim_start_matches("error: ");
        if regs.len() > 1 {
            anyhow::anyhow!(
                "{text}\n(several workloads take only the run's options on the command line: put each workload's parameters in its table of a plan file, [kv] ..., and run it with --plan FILE)"
            )
        } else {
            anyhow::anyhow!("{text}")
        }
    })?;
    let mut opts = RunOpts::from_arg_matches(&m)?;
    let flags = HostsOpts::from_arg_matches(&m)?;
    // The keys of the plan's [hosts] that no flag overrides: the errors below name the
    // flags, which those keys are without their `--`; said, naming the keys the plan gave
    // (a flag typed beside a plan's other key is the user's own).
    let from_plan: Vec<&str> = [
        ("sut", flags.sut.is_none() && plan_hosts.sut.is_some()),
        (
            "loadgen",
            flags.loadgen.is_empty() && !plan_hosts.loadgen.is_empty(),
        ),
        (
            "hosts",
            flags.hosts.is_empty() && !plan_hosts.hosts.is_empty(),
        ),
        (
            "pairs",
            flags.pairs.is_empty() && !plan_hosts.pairs.is_empty(),
        ),
    ]
    .into_iter()
    .filter_map(|(key, given)| given.then_some(key))
    .collect();
    let in_plan = |e: anyhow::Error| {
        if from_plan.is_empty() {
            e
        } else {
            e.context(format!(
                "the plan's [hosts] table gave {} (its keys are the flags' names without `--`)",
                from_plan.join(", ")
            ))
        }
    };
    let host_opts = flags.or(plan_hosts);
    let hosts = host_opts.plan().map_err(in_plan)?;
    for name in &names {
        hosts.validate(name).map_err(in_plan)?;
    }
    // crypto and mem measure the system under test itself: a load generator would be
    // an idle host listed as one (acceptance pass G, 10).
    if !hosts.loadgens.is_empty() && regs.iter().all(|r| !r.has_server) {
        return Err(in_plan(anyhow::anyhow!(
            "{} runs its work on the system under test itself and drives no server: leave \
             --loadgen out (--sut HOST runs it on HOST)",
            names.join(" and ")
        )));
    }
    // Flags override the plan's [run] table.
    opts.workload = Some(Workloads::Many(names.clone()));
    opts.repeat = opts.repeat.or(plan_opts.repeat);
    // The message names where the label came from: the flag, or the plan's [run].
    let label_from = if opts.label.is_some() {
        "--label"
    } else {
        "the plan's [run] label"
    };
    opts.label = opts.label.or(plan_opts.label);
    if let Some(l) = &opts.label {
        check_label(l, label_from)?;
    }
    opts.until_cv = opts.until_cv.or(plan_opts.until_cv);
    opts.max_repeat = opts.max_repeat.or(plan_opts.max_repeat);
    opts.allow_long |= plan_opts.allow_long;
    if opts.until_cv.is_some() && !variants.is_empty() {
        bail!("--until-cv cannot be used with variants (each variant runs --repeat times, interleaved); give --repeat N");
    }
    if opts.until_cv.is_some_and(|c| !(c > 0.0 && c < 100.0)) {
        bail!("--until-cv is a percentage between 0 and 100, e.g. 3");
    }
    opts.telemetry_interval = opts.telemetry_interval.or(plan_opts.telemetry_interval);
    opts.no_telemetry |= plan_opts.no_telemetry;
    opts.idle_power = opts.idle_power.or(plan_opts.idle_power);
    opts.power_meter = opts.power_meter.or(plan_opts.power_meter);
    opts.power_model = opts.power_model.or(plan_opts.power_model);
    // The model stands in where nothing measures. Beside a meter it filled the tests the
    // meter had no reading in: one run mixed measured and modelled watts (acceptance
    // pass F, 3).
    if opts.power_meter.is_some() && opts.power_model.is_some() {
        bail!(
            "--power-model stands in for power where nothing measures it, and --power-meter \
             measures it: give one of them"
        );
    }
    if opts
        .power_meter
        .as_deref()
        .is_some_and(|m| m.trim().is_empty())
    {
        bail!("--power-meter is empty: give a command that prints the watts, e.g. --power-meter 'my-pdu-watts'");
    }
    opts.db = opts.db.or(g.db.clone());
    opts.json |= g.json;
    opts.quiet |= g.quiet;
    if opts
        .idle_power
        .is_some_and(|i| !(0.0..=3600.0).contains(&i))
    {
        bail!("--idle-power is 0 (off) to 3600 seconds");
    }
    if opts.repeat == Some(0) {
        bail!("--repeat must be at least 1");
    }
    for (flag, n) in [("--repeat", opts.repeat), ("--max-repeat", opts.max_repeat)] {
        if n.is_some_and(|n| n > MAX_REPEAT) {
            bail!(
                "{flag} {} is more repetitions than a run can mean: use at most {MAX_REPEAT} \
                 (5 to 30 give a mean and spread; --until-cv PCT stops once the spread is small)",
                n.unwrap_or_default()
            );
        }
    }
    // A cap with nothing to cap: the run would repeat --repeat times, the cap unread.
    if opts.max_repeat.is_some() && opts.until_cv.is_none() {
        bail!(
            "--max-repeat caps the repetitions --until-cv PCT adds: give --until-cv too, or --repeat N for a fixed count"
        );
    }
    // A cap below the repetitions every point makes before --until-cv judges (--repeat,
    // and 3 at least, the fewest a spread is judged over) was raised to them, unsaid.
    if let (Some(max), Some(_)) = (opts.max_repeat, opts.until_cv) {
        let first = opts.repeat.unwrap_or(1).max(3);
        if max < first {
            bail!(
                "--max-repeat {max} is below the {first} repetitions every point makes before \
                 --until-cv judges its spread (--repeat, and 3 at least): give --max-repeat \
                 {first} or more"
            );
        }
    }
    if opts
        .telemetry_interval
        .is_some_and(|i| !(0.05..=3600.0).contains(&i))
    {
        bail!("--telemetry-interval must be between 0.05 and 3600 seconds");
    }
    power_model(&opts.power_model)?;
    // Power is read by the telemetry: with it off, a meter, a model or an idle window
    // was dropped in silence, and the run stored without power.
    if opts.no_telemetry {
        let given = [
            ("--power-meter", opts.power_meter.is_some()),
            ("--power-model", opts.power_model.is_some()),
            (
                "--idle-power (or the plan's idle_power)",
                opts.idle_power.is_some_and(|s| s > 0.0),
            ),
        ];
        if let Some((flag, _)) = given.iter().find(|(_, given)| *given) {
            bail!(
                "{flag} is read by the telemetry, and --no-telemetry turns it off: leave one \
                 of them out"
            );
        }
        if opts.telemetry_interval.is_some() {
            bail!(
                "--telemetry-interval sets how often the telemetry samples, and \
                 --no-telemetry turns it off: leave one of them out"
            );
        }
    }
    let mut parts = Vec::with_capacity(regs.len());
    for reg in regs {
        let mut params = match tables.get(reg.name) {
            None => Map::new(),
            Some(t) => match engine::plan::normalize(serde_json::to_value(t)?, reg.text_keys) {
                Value::Object(m) => m,
                _ => bail!("plan file: [{}] must be a table", reg.name),
            },
        };
        if parts.is_empty() && names.len() == 1 {
            for (k, v) in params_from_matches(&cmd, &m, reg.text_keys)? {
                params.insert(k, v);
            }
        }
        let points = engine::plan::expand(&params, reg.list_keys)
            .with_context(|| format!("workload {}", reg.name))?;
        parts.push(Part {
            registration: reg,
            params,
            points,
        });
    }
    if !opts.allow_long {
        check_size(&parts, &opts, &hosts, variants.len())?;
    }
    let command = redacted_command_line(std::env::args());
    Ok(Resolved {
        parts,
        variants,
        opts,
        hosts,
        command,
    })
}

/// Repetitions of every test no run needs (`--repeat 4294967295` is a slip, not a plan).
const MAX_REPEAT: u32 = 1000;
/// A run estimated longer than this is refused unless --allow-long.
const MAX_RUN_S: f64 = 12.0 * 3600.0;
/// As many tests (every point, test, repetition and variant) as a run may have without
/// --allow-long, whatever their duration.
const MAX_TESTS: u64 = 100_000;

/// Refuse, before anything starts, a run whose size is likely a slip of a sweep range:
/// more than [`MAX_TESTS`] tests, or an estimated duration (points x tests x repetitions x
/// variants x each test's duration, where known) above [`MAX_RUN_S`].
fn check_size(
    parts: &[Part],
    opts: &RunOpts,
    hosts: &runner::HostsPlan,
    variants: usize,
) -> anyhow::Result<()> {
    let repeat = opts.repeat.unwrap_or(1);
    let reps = match opts.until_cv {
        Some(_) => opts.max_repeat.unwrap_or(10).max(repeat),
        None => repeat,
    };
    let times = f64::from(reps) * variants.max(1) as f64;
    let (mut tests, mut secs) = (0.0f64, 0.0f64);
    for part in parts {
        let points = hosts.expand(
            &part.points,
            part.registration.name,
            part.registration.has_server,
        )?;
        for (point, _) in &points {
            let w = part.registration.build_point(point)?;
            let given = ["duration", "warmup"]
                .iter()
                .filter_map(|k| point.get(*k).and_then(Value::as_f64))
                .sum::<f64>();
            for t in w.tests() {
                tests += times;
                secs += times * w.expected_duration_s(&t).unwrap_or(given);
            }
        }
    }
    let how = "narrow the sweep (fewer values per range, fewer tests, a shorter --duration), \
               or add --allow-long if this is the run you mean";
    if tests > MAX_TESTS as f64 {
        bail!("this run has {tests:.0} tests (points x tests x repetitions), more than {MAX_TESTS}: {how}");
    }
    if secs > MAX_RUN_S {
        bail!(
            "this run would take about {} of measurement alone, more than {:.0} hours: {how}",
            human_duration(secs),
            MAX_RUN_S / 3600.0
        );
    }
    Ok(())
}

/// `17.7 hours`, `3.2 days`.
fn human_duration(secs: f64) -> String {
    if secs >= 2.0 * 86_400.0 {
        format!("{:.1} days", secs / 86_400.0)
    } else {
        format!("{:.1} hours", secs / 3600.0)
    }
}

/// The command line as stored: each argument's passwords masked on its own (a
/// `--dsn` value parsed as the connection string it is), then shell-quoted. Redacting
/// after quoting would have to see through the shell's quoting of the DSN's quotes.
fn redacted_command_line(args: impl Iterator<Item = String>) -> String {
    args.map(|a| model::shell_word(&model::redact_secrets(&a)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The power model flag as (IDLE_W, MAX_W).
fn power_model(s: &Option<String>) -> anyhow::Result<Option<(f64, f64)>> {
    let Some(s) = s else { return Ok(None) };
    let (a, b) = s
        .split_once(':')
        .ok_or_else(|| anyhow::anyhow!("--power-model is IDLE_W:MAX_W, e.g. 120:350"))?;
    let idle_w: f64 = a
        .trim()
        .parse()
        .map_err(|_| anyhow::anyhow!("--power-model: bad idle watts `{a}`"))?;
    let max_w: f64 = b
        .trim()
        .parse()
        .map_err(|_| anyhow::anyhow!("--power-model: bad max watts `{b}`"))?;
    // `contains` is false for NaN; infinity is caught by the upper bound on both.
    // A model of 0 W gave every perf/W as "-" with no reason.
    if !(0.0..=100_000.0).contains(&idle_w)
        || !(0.0..=100_000.0).contains(&max_w)
        || max_w < idle_w
        || max_w == 0.0
    {
        bail!("--power-model: need 0 <= IDLE_W <= MAX_W <= 100000 watts, MAX_W above 0, e.g. 120:350 (got `{s}`)");
    }
    Ok(Some((idle_w, max_w)))
}

/// Default idle-power measurement before load, seconds (when a power source exists).
const DEFAULT_IDLE_S: f64 = 5.0;

struct ShowSteps<'a>(&'a crate::progress::Display);

impl runner::Observer for ShowSteps<'_> {
    fn step_done(&self, result: &ResultRecord) {
        self.0.step_done(result);
    }
}

pub fn run(a: Args, g: &Global) -> anyhow::Result<i32> {
    let r = resolve(&a, g)?;
    let db = r.opts.db.clone().unwrap_or_else(store::default_path);
    // A damaged page met during the run is explained naming this run's store (`run
    // --db X`), not the global one main would name.
    run_resolved(r, db.clone()).map_err(|e| store::explain_damage(e, &db))
}

fn run_resolved(r: Resolved, db: std::path::PathBuf) -> anyhow::Result<i32> {
    let verbose = !r.opts.quiet;
    let plan = runner::Plan {
        catalog: registry::find,
        opts: runner::RunOptions {
            repeat: r.opts.repeat.unwrap_or(1),
            until_cv: r.opts.until_cv,
            max_repeat: r.opts.max_repeat,
            label: r.opts.label.clone(),
            telemetry_interval_s: r.opts.telemetry_interval.unwrap_or(1.0),
            telemetry: !r.opts.no_telemetry,
            idle_power_s: r.opts.idle_power.unwrap_or(DEFAULT_IDLE_S),
            power_meter: r.opts.power_meter.clone(),
            power_model: power_model(&r.opts.power_model)?,
            verbose,
            variants: r.variants.clone(),
        },
        parts: r
            .parts
            .into_iter()
            .map(|p| runner::Part {
                registration: p.registration,
                params: p.params,
                points: p.points,
            })
            .collect(),
        command: r.command.clone(),
        hosts: r.hosts.clone(),
        build: env!("RACKBENCH_BUILD").to_string(),
    };
    let made_store = !db.exists();
    let store = Arc::new(store::Store::open(&db)?);
    crate::signals::install_for_run();
    let progress = Arc::new(Progress::default());
    let display = crate::progress::Display::start(progress.clone(), verbose);
    let finished = runner::run(&plan, &store, progress, &ShowSteps(&display));
    display.finish();
    let finished = match finished {
        Ok(f) => f,
        Err(e) => {
            // An error of the runner keeps nothing of the run (one after a result was
            // stored comes back as the stored run's failure, below): refused before
            // anything was stored (a check in prepare), a store this command made is not
            // left behind, empty.
            if made_store {
                remove_if_unused(store);
            }
            // Stopped while connecting to the hosts or copying rackbench there: said as
            // an interruption, with its exit status, not as an error of the run.
            if let Some(code) = crate::signals::exit_status() {
                let e = format!("{e:#}");
                if !e.contains("stopped") {
                    engine::errln!("rackbench: error: {}", model::printable_lines(&e));
                }
                engine::errln!("rackbench: interrupted before any result was stored; nothing kept");
                return Ok(code);
            }
            return Err(e);
        }
    };
    let Some(run_id) = finished.run_id else {
        // Stopped before any test gave a result: nothing was kept, nor is a store this
        // command made.
        if made_store {
            remove_if_unused(store);
        }
        engine::errln!("rackbench: interrupted before any result was stored; nothing kept");
        return Ok(crate::signals::exit_status().unwrap_or(1));
    };
    // The run's own failure is said even where the store cannot give the run back (the
    // failure may be that it refused a write, and say where the run went instead).
    let stored = store
        .load_run(&run_id)
        .map_err(|e| match &finished.failure {
            Some(f) => e.context(format!(
                "run {run_id} ended: {}; reading it back",
                model::printable(f)
            )),
            None => e,
        })?;
    if r.opts.json {
        engine::outln!("{}", serde_json::to_string_pretty(&stored)?);
    } else {
        engine::out!("{}", crate::commands::runs::results_table(&stored));
        // Parameters, tests and units come from the plan and the workloads: shown safe.
        engine::out!("{}", model::printable_lines(&repetition_summary(&stored)));
        let (db_shown, at) = (db.display(), store::db_option(&db));
        // A store in directories that did not exist says it made them (a typo in --db
        // made a tree at / without a word, where `-o` refuses a missing directory).
        let made = match store.made_dirs().last() {
            Some(d) => format!(" (a new store: made the directory {})", d.display()),
            None => String::new(),
        };
        engine::outln!(
            "\nstored as run {run_id} in {db_shown}{made}\n  details: rackbench{at} show {run_id}\n  report:  rackbench{at} report {run_id} -o report.html"
        );
    }
    if let Some(f) = &finished.failure {
        engine::errln!("rackbench: run failed: {}", model::printable(f));
    }
    if finished.interrupted {
        engine::errln!(
            "rackbench: interrupted: what was measured is stored ({} result{})",
            stored.results.len(),
            if stored.results.len() == 1 { "" } else { "s" }
        );
    }
    let invalid = stored.results.iter().any(|x| x.is_invalid());
    // Exit statuses (README, "Exit status"): 128 + the signal that ended the run early,
    // 1 a failed or invalid result, 0 all good.
    Ok(match crate::signals::exit_status() {
        Some(code) if finished.interrupted => code,
        _ if finished.failure.is_some() || finished.interrupted || invalid => 1,
        _ => 0,
    })
}

/// Remove a store this command made, if nothing was stored in it (the runner has let go
/// of its handles by now: a test's provisional results held one).
fn remove_if_unused(store: Arc<store::Store>) {
    if let Ok(store) = Arc::try_unwrap(store) {
        store.remove_if_unused();
    }
}

/// The headline over repetitions, per sweep point and test, as the report's "Headline
/// (mean ± sd)" and `compare` give it: the mean and sample standard deviation of the
/// valid repetitions (a failed, interrupted or invalid one is counted in n, not in the
/// figures), with their range and coefficient of variation. It printed the median,
/// unlabelled in its line, beside a report that gave the mean.
pub fn repetition_summary(run: &RunRecord) -> String {
    let mut out = String::new();
    // The parameters every point shares are said once, not on every line.
    let fixed = report::derive::fixed_params(std::slice::from_ref(run));
    let skip: Vec<&str> = fixed.iter().map(|(k, _)| k.as_str()).collect();
    for p in report::derive::points(0, run)
        .iter()
        .filter(|p| p.results.len() > 1)
    {
        if out.is_empty() {
            out.push_str(
                "\nrepetitions (headline of the valid ones, as the report gives it): \
                 mean ± sd  min .. max  cv  (n valid/run)\n",
            );
            if !fixed.is_empty() {
                let all: Vec<String> = fixed.iter().map(|(k, v)| format!("{k}={v}")).collect();
                out.push_str(&format!("  (every point: {})\n", all.join(" ")));
            }
        }
        let values = p.headline_values();
        let n = format!("n={}/{}", values.len(), p.results.len());
        let key = format!("{} {} {}", p.workload, p.test, p.param_label(&skip))
            .trim_end()
            .to_string();
        let Some(s) = p.headline() else {
            let why = p.headline_missing();
            let why = why.as_deref().unwrap_or("no valid repetition");
            out.push_str(&format!("  {key}: {} ({n})\n", model::printable(why)));
            continue;
        };
        let (min, max) = values
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(*v), hi.max(*v))
            });
        let num = report::fmt::num;
        let num_fixed = report::fmt::fixed;
        out.push_str(&format!(
            "  {key}: {}{} {}  {} .. {}  cv {} ({n}){}\n",
            num(s.mean),
            s.sd.map(|d| format!(" ± {}", num(d))).unwrap_or_default(),
            p.headline_unit(),
            num(min),
            num(max),
            s.cv_pct()
                .map_or_else(|| "-".to_string(), |c| format!("{}%", num_fixed(c, 1))),
            // As the report flags it (acceptance P, 3: only the report did).
            p.unsteady()
                .map(|f| format!("  ! {}", f.code))
                .unwrap_or_default(),
        ));
    }
    out.push_str(&peaks(run));
    out
}

/// For each workload's test, its best sweep point (the seed's "best instance count"), as
/// the report chooses it ([`report::derive::best_of`]): the best mean headline over a
/// point's valid repetitions, the lowest where lower is better (mem's `ram_latency_ns`),
/// capacity tests aside. Named by the keys swept in that workload (a suite's workloads
/// have parameters of their own).
pub fn peaks(run: &RunRecord) -> String {
    let points: Vec<Point> = report::derive::points(0, run)
        .into_iter()
        .filter(|p| p.capacity_phase().is_none())
        .collect();
    let mut workloads: Vec<&str> = Vec::new();
    for p in &points {
        if !workloads.contains(&p.workload.as_str()) {
            workloads.push(&p.workload);
        }
    }
    let mut out = String::new();
    for wl in workloads {
        let mine: Vec<Point> = points
            .iter()
            .filter(|p| p.workload == wl)
            .cloned()
            .collect();
        out.push_str(&workload_peaks(&mine));
    }
    if out.is_empty() {
        out
    } else {
        format!("\n{out}")
    }
}

fn workload_peaks(points: &[Point]) -> String {
    let swept = report::derive::varying_params(points);
    // Variants are the settings under study, not a knob to take the best of: each has
    // its own peaks (it read "peak get: ... at clients=40 variant=vb").
    if swept.iter().any(|k| k == "variant") {
        let mut variants: Vec<String> = points
            .iter()
            .filter_map(|p| p.params.get("variant").map(report::derive::param_str))
            .collect();
        variants.sort();
        variants.dedup();
        let mut out = String::new();
        for v in variants {
            let mine: Vec<Point> = points
                .iter()
                .filter(|p| {
                    p.params.get("variant").map(report::derive::param_str) == Some(v.clone())
                })
                .map(|p| {
                    let mut p = p.clone();
                    p.params.remove("variant");
                    p
                })
                .collect();
            for line in workload_peaks(&mine).lines() {
                // `peak get: ...` as `peak get @vb: ...`.
                out.push_str(&line.replacen(": ", &format!(" @{v}: "), 1));
                out.push('\n');
            }
        }
        return out;
    }
    if swept.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    let mut tests: Vec<&str> = points.iter().map(|p| p.test.as_str()).collect();
    tests.sort();
    tests.dedup();
    for test in tests {
        let Some(best) = report::derive::best_of(points.iter().filter(|p| p.test == test)) else {
            continue;
        };
        let Some(head) = best.headline() else {
            continue;
        };
        let at: Vec<String> = swept
            .iter()
            .filter_map(|k| {
                let v = best.params.get(k)?;
                Some(format!("{k}={}", report::derive::param_str(v)))
            })
            .collect();
        let of = if head.n > 1 {
            format!(" (mean of {} repetitions)", head.n)
        } else {
            String::new()
        };
        out.push_str(&format!(
            "{} {test}: {} {}{of} at {}{}\n",
            if best.higher_is_better() {
                "peak"
            } else {
                "lowest"
            },
            report::fmt::num(head.mean),
            best.headline_unit(),
            at.join(" "),
            // As the repetitions' line above and the report's summary flag it: the verdict
            // read plain over a mean of 273k-417k.
            best.unsteady()
                .map(|f| format!("  ! {}", f.code))
                .unwrap_or_default(),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    #[test]
    fn a_power_model_must_be_finite_watts() {
        let model = |s: &str| power_model(&Some(s.to_string()));
        assert_eq!(model("120:350").unwrap(), Some((120.0, 350.0)));
        for bad in [
            "100:nan", "nan:100", "100:inf", "-1:100", "200:100", "100", "0:0",
        ] {
            let err = model(bad).unwrap_err().to_string();
            assert!(err.contains("--power-model"), "{bad}: {err}");
        }
    }

    /// One repetition's result with its headline alone.
    fn rep(
        wl: &str,
        (test, headline, unit): (&str, &str, &str),
        (key, at): (&str, u32),
        repetition: u32,
        value: f64,
        status: model::Status,
    ) -> ResultRecord {
        let mut r = store::fixtures::rich_result(0, test, 1, store::fixtures::t0(0));
        r.workload = wl.into();
        r.params = [(key.to_string(), serde_json::json!(at))].into();
        r.repetition = repetition;
        r.headline = headline.into();
        r.metrics = vec![model::Metric::new(headline, value, unit)];
        r.flags.clear();
        r.status = status;
        r.error = None;
        r
    }

    /// The end-of-run best line is the report's best point: the best mean over valid
    /// repetitions, the lowest for a latency. It said "peak 140000 at instances=1" from
    /// one lucky repetition (100k, 140k, 101k: mean 113.7k) while the report took
    /// instances=2 at 125k, counted an interrupted repetition, and called mem's highest
    /// latency its peak.
    #[test]
    fn the_best_line_is_the_reports_best_point() {
        use model::Status::{Interrupted, Ok};
        let set = ("set", "ops_per_s", "ops/s");
        let lat = ("latency", "ram_latency_ns", "ns");
        let mut run = store::fixtures::rich_run("r", None, store::fixtures::t0(0), 0);
        run.results = vec![
            rep("kv", set, ("instances", 1), 0, 100_000.0, Ok),
            rep("kv", set, ("instances", 1), 1, 140_000.0, Ok),
            rep("kv", set, ("instances", 1), 2, 101_000.0, Ok),
            rep("kv", set, ("instances", 2), 0, 125_000.0, Ok),
            rep("kv", set, ("instances", 2), 1, 126_000.0, Ok),
            rep("kv", set, ("instances", 2), 2, 124_000.0, Ok),
            // Cut short: its figure is not a measurement of the point.
            rep("kv", set, ("instances", 4), 0, 300_000.0, Interrupted),
            rep("mem", lat, ("cpu", 0), 0, 90.0, Ok),
            rep("mem", lat, ("cpu", 1), 0, 80.0, Ok),
        ];
        let out = peaks(&run);
        assert_eq!(
            out,
            "\npeak set: 125,000 ops/s (mean of 3 repetitions) at instances=2\n\
             lowest latency: 80.0 ns at cpu=1\n",
        );
        // The report chose the same point.
        let kv: Vec<RunRecord> = vec![RunRecord {
            results: run.results[..7].to_vec(),
            ..run.clone()
        }];
        let s = report::derive::summary(&kv);
        assert_eq!(s.rows[0].chosen, ["instances=2"]);
        assert_eq!(s.rows[0].perf, [Some(125_000.0)]);
        // A peak whose repetitions vary is flagged, as its repetitions' line is (it read
        // plain over a mean of 273k-417k).
        run.results = vec![
            rep("kv", set, ("instances", 1), 0, 90_000.0, Ok),
            rep("kv", set, ("instances", 2), 0, 100_000.0, Ok),
            rep("kv", set, ("instances", 2), 1, 150_000.0, Ok),
            rep("kv", set, ("instances", 2), 2, 125_000.0, Ok),
        ];
        assert_eq!(
            peaks(&run),
            "\npeak set: 125,000 ops/s (mean of 3 repetitions) at instances=2  ! high_variation\n",
        );
    }

    /// Variants are the settings under study: each has its peaks, and `variant` is no
    /// knob of them (acceptance pass C, 10: "peak get: ... at clients=40 variant=vb").
    #[test]
    fn each_variant_has_its_own_best_line() {
        use model::Status::Ok;
        let get = ("get", "ops_per_s", "ops/s");
        let mut run = store::fixtures::rich_run("r", None, store::fixtures::t0(0), 0);
        run.results = [
            ("va", 5, 100.0),
            ("va", 40, 180.0),
            ("vb", 5, 110.0),
            ("vb", 40, 200.0),
        ]
        .into_iter()
        .map(|(v, c, value)| {
            let mut r = rep("kv", get, ("clients", c), 0, value, Ok);
            r.params.insert("variant".into(), serde_json::json!(v));
            r
        })
        .collect();
        assert_eq!(
            peaks(&run),
            "\npeak get @va: 180 ops/s at clients=40\npeak get @vb: 200 ops/s at clients=40\n"
        );
    }

    /// `--repeat 3` printed the median (59,524.6) where the report's "Headline (mean ±
    /// sd)" gave the mean: the console now gives the report's figure, labelled, over the
    /// same valid repetitions.
    #[test]
    fn the_repetition_summary_is_the_reports_mean_and_sd() {
        use model::Status::{Failed, Ok};
        let get = ("get", "ops_per_s", "ops/s");
        let mut run = store::fixtures::rich_run("r", None, store::fixtures::t0(0), 0);
        run.results = vec![
            rep("kv", get, ("clients", 8), 0, 56_000.0, Ok),
            rep("kv", get, ("clients", 8), 1, 59_524.6, Ok),
            rep("kv", get, ("clients", 8), 2, 60_420.0, Ok),
            // Failed: in n, not in the figures.
            rep("kv", get, ("clients", 8), 3, 30_000.0, Failed),
        ];
        let out = repetition_summary(&run);
        let sample = report::derive::points(0, &run)[0].headline().unwrap();
        let want = format!(
            "  kv get: {} ± {} ops/s  56,000 .. 60,420  cv {:.1}% (n=3/4)\n",
            report::fmt::num(sample.mean),
            report::fmt::num(sample.sd.unwrap()),
            sample.cv_pct().unwrap()
        );
        assert!(out.contains("mean ± sd"), "{out}");
        assert!(out.contains(&want), "{out}\nwant: {want}");
        assert!(!out.contains("59,525"), "not the median: {out}");
        // What every point shares is said once, not on each line.
        assert!(out.contains("  (every point: clients=8)\n"), "{out}");
        assert!(!out.contains("high_variation"), "cv 4%: {out}");
        // Repetitions that vary widely are flagged here as in the report (acceptance P, 3).
        run.results = vec![
            rep("kv", get, ("clients", 8), 0, 50_000.0, Ok),
            rep("kv", get, ("clients", 8), 1, 80_000.0, Ok),
        ];
        let out = repetition_summary(&run);
        assert!(out.contains("(n=2/2)  ! high_variation\n"), "{out}");
    }

    /// Every workload's flags sit beside the run options without a clash (clap checks
    /// names, ids and short flags in debug builds).
    #[test]
    fn every_workload_command_is_well_formed() {
        for reg in registry::all() {
            workload_command(&reg).debug_assert();
        }
    }

    #[test]
    fn the_stored_command_line_masks_each_arguments_password() {
        let args = [
            "rackbench",
            "run",
            "oltp",
            "--dsn",
            r"host=h password = 'a b\'c' dbname=d",
            "--dsn=postgresql://u:p%40ss@h/d?sslmode=disable",
            "PGPASSWORD=s3cret",
            "--vus",
            "2",
        ];
        let line = redacted_command_line(args.iter().map(|s| s.to_string()));
        assert_eq!(
            line,
            "rackbench run oltp --dsn 'host=h password = *** dbname=d' \
             '--dsn=postgresql://u:***@h/d?sslmode=disable' 'PGPASSWORD=***' --vus 2"
        );
    }

    /// The workload is the first word, or the word after a leading `--plan FILE` (the
    /// help's own order was refused: "unexpected argument 'kv'").
    #[test]
    fn the_workload_may_follow_a_plan() {
        let split = |args: &[&str]| {
            Args {
                args: args.iter().map(|s| s.to_string()).collect(),
            }
            .split()
        };
        let words = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        for (args, rest) in [
            (
                &["kv", "--plan", "p.toml", "-c", "5"][..],
                &["--plan", "p.toml", "-c", "5"][..],
            ),
            (
                &["--plan", "p.toml", "kv", "-c", "5"],
                &["--plan", "p.toml", "-c", "5"],
            ),
            (&["--plan=p.toml", "kv"], &["--plan=p.toml"]),
        ] {
            assert_eq!(split(args), (Some("kv".into()), words(rest)), "{args:?}");
        }
        assert_eq!(split(&["--plan", "p.toml"]).0, None);
        assert_eq!(split(&["--plan", "p.toml", "-c", "5"]).0, None);
    }

    fn resolved(args: &[&str]) -> anyhow::Result<Resolved> {
        let a = Args {
            args: args.iter().map(|s| s.to_string()).collect(),
        };
        let g = Global {
            db: None,
            json: false,
            quiet: true,
        };
        resolve(&a, &g)
    }

    /// A sweep range slipped (100 thread counts x 100 buffer sizes: about 18 hours of
    /// crypto) or an absurd --repeat is refused before anything starts, saying what to do;
    /// --allow-long lets the long one through, never the absurd repeat.
    #[test]
    fn a_run_too_long_to_mean_is_refused_unless_allowed() {
        let long = ["crypto", "--threads", "1..100", "--buffer-sizes", "1..100"];
        let e = resolved(&long).err().expect("refused");
        let e = format!("{e:#}");
        assert!(
            e.contains("17.7 hours") && e.contains("--allow-long"),
            "{e}"
        );
        let mut allowed = long.to_vec();
        allowed.push("--allow-long");
        assert!(resolved(&allowed).is_ok());
        // Many short tests: the count is the bound.
        let e = resolved(&[
            "crypto",
            "-t",
            "sha256",
            "--duration",
            "0.1",
            "--threads",
            "1..1000",
            "--repeat",
            "200",
        ])
        .err()
        .expect("refused");
        assert!(format!("{e:#}").contains("200000 tests"), "{e:#}");
        for repeat in [["--repeat", "4294967295"], ["--max-repeat", "1001"]] {
            let mut args = vec!["crypto", "--allow-long"];
            args.extend(repeat);
            let e = format!("{:#}", resolved(&args).err().expect("refused"));
            assert!(e.contains("at most 1000"), "{e}");
        }
        // What a person means passes untouched.
        assert!(resolved(&["crypto", "--threads", "1..8:x2", "--repeat", "5"]).is_ok());
        assert!(resolved(&[
            "kv",
            "--duration",
            "60",
            "--repeat",
            "5",
            "--clients",
            "1..64:x2"
        ])
        .is_ok());
    }

    /// A free-text setting is one value whole, from a flag or a plan: a multi-host DSN
    /// (the README's own) was a sweep of two broken DSNs, a plan's password with a comma
    /// was printed in part, a URL's query split, and `--user on` was refused as a boolean.
    #[test]
    fn a_text_setting_with_a_comma_is_one_value() {
        let dir = tempfile::tempdir().unwrap();
        let auth = dir.path().join("pass,word");
        std::fs::write(&auth, "pw\n").unwrap();
        let auth = auth.to_str().unwrap();
        let dsn = "postgresql://bench@127.0.0.1:1,127.0.0.1:2/tpcc?connect_timeout=2";
        let url = "http://127.0.0.1:1/search?q=a,b";
        let kv = |user| {
            [
                "kv",
                "--target",
                "127.0.0.1:1",
                "--auth-file",
                auth,
                "--user",
                user,
            ]
        };
        for (args, key, value) in [
            (&["oltp", "--dsn", dsn, "--duration", "1"][..], "dsn", dsn),
            (&["http", "--target", url, "--duration", "1"], "target", url),
            (&kv("on"), "user", "on"),
            (&kv("123"), "user", "123"),
            (&kv("u"), "auth_file", auth),
        ] {
            let r = resolved(args).unwrap_or_else(|e| panic!("{args:?}: {e:#}"));
            assert_eq!(r.parts[0].points.len(), 1, "{args:?}");
            assert_eq!(r.parts[0].points[0][key], json!(value), "{args:?}");
        }
        let path = dir.path().join("plan.toml");
        let secret = "postgresql://u:topsec,ret42@127.0.0.1:1/tpcc";
        std::fs::write(&path, format!("[oltp]\ndsn = \"{secret}\"\nduration = 1\n")).unwrap();
        let r = resolved(&["--plan", path.to_str().unwrap()]).expect("resolved");
        assert_eq!(r.parts[0].points.len(), 1);
        assert_eq!(r.parts[0].points[0]["dsn"], json!(secret));
    }

    /// A plan file as a person writes one: every table, lists, ranges, variants.
    const PLAN: &str = r#"
[run]
workload = ["kv", "crypto", "mem", "http", "net", "oltp"]
repeat = 3
label = "arm-1"
telemetry_interval = 0.5
idle_power = 0
power_model = "120:350"

[hosts]
sut = "local"
loadgen = ["local"]
pairs = ["a>b", "b>a"]

[[variant]]
name = "thp-on"
setup = ["echo always > /sys/kernel/mm/transparent_hugepage/enabled"]
teardown = ["echo never > /sys/kernel/mm/transparent_hugepage/enabled"]
on = "sut"

[[variant]]
name = "thp.off"
on = "all"

[kv]
tests = ["set", "get"]
instances = "1..4:x2"
pipeline = [1, 16]
clients = 8
requests = 20000
server_cpus = "0-1"

[crypto]
tests = ["rsa", "sha256"]
bits = [2048]
threads = "1,2"
duration = 0.5
buffer_sizes = [16, 1024]

[mem]
tests = ["latency"]
sizes = "4K,64K"

[http]
connections = "2..8:x2"
duration = 1
rate = 1000.5
paths = ["/a", "/b"]
headers = ["Accept: */*"]

[net]
proto = "udp"
streams = 2
duration = 1

[oltp]
warehouses = 2
vus = "1,4"
duration = 10
mix = "tpcc"
"#;

    const WORDS: &[&str] = &[
        "[run]",
        "[hosts]",
        "[[variant]]",
        "[kv]",
        "[http]",
        "[crypto]",
        "[mem]",
        "[net]",
        "[oltp]",
        "[run.x]",
        "name = ",
        "setup = ",
        "teardown = ",
        "on = ",
        "workload = ",
        "repeat = ",
        "until_cv = ",
        "max_repeat = ",
        "allow_long = true",
        "sut = ",
        "loadgen = ",
        "pairs = ",
        "hosts = ",
        "ssh_config = ",
        "tests = ",
        "threads = ",
        "duration = ",
        "\"1..4\"",
        "\"1..1000000:x2\"",
        "\"0-1000000\"",
        "[]",
        "{}",
        "[[]]",
        "\"\"",
        "true",
        "1e308",
        "-1",
        "nan",
        "inf",
        "'a>b'",
        "\"x>\"",
        "\"\\u0000\"",
    ];

    /// The plan-file loader on mutated plans: an error or a plan whose workloads'
    /// points and hosts can be resolved, never a panic or an allocation out of
    /// proportion (issue 13 item 17).
    /// A plan's hosts as a list, or as one comma-separated string as the flags take them
    /// (acceptance K, 11); anything else says what to give.
    #[test]
    fn plan_hosts_are_a_list_or_one_comma_separated_string() {
        let hosts = |line: &str| {
            load_plan(&format!("[hosts]\n{line}\n"), Path::new("p.toml"))
                .map(|p| p.hosts.unwrap_or_default())
        };
        let h = hosts("loadgen = \"rbh2, rbh3\"").unwrap();
        assert_eq!(h.loadgen, ["rbh2", "rbh3"]);
        let h = hosts("loadgen = [\"rbh2\", \"rbh3\"]").unwrap();
        assert_eq!(h.loadgen, ["rbh2", "rbh3"]);
        assert_eq!(hosts("hosts = \"a,b\"").unwrap().hosts, ["a", "b"]);
        assert_eq!(hosts("pairs = \"a>b,b>a\"").unwrap().pairs, ["a>b", "b>a"]);
        for bad in ["loadgen = 5", "loadgen = [1, 2]"] {
            let e = format!("{:#}", hosts(bad).unwrap_err());
            assert!(e.contains("as one string, \"rbh2,rbh3\""), "{bad}: {e}");
        }
    }

    /// `--loadgen rbh1,,rbh2` ran on rbh1 and rbh2 without a word, where `-c 1,,2` is
    /// refused as a typo: a host list's empty item is refused as well, from a flag or a plan.
    #[test]
    fn a_host_list_with_an_empty_item_is_refused() {
        let flags = |v: &[&str]| HostsOpts {
            loadgen: v.iter().map(|s| s.to_string()).collect(),
            ..HostsOpts::default()
        };
        let e = flags(&["rbh1", "", "rbh2"]).plan().unwrap_err().to_string();
        assert_eq!(
            e,
            "--loadgen `rbh1,,rbh2` has an empty item: give the host names separated by \
             single commas, e.g. `rbh1,rbh2`"
        );
        assert!(flags(&["rbh1", " rbh2"]).plan().is_ok());
        let plan = load_plan("[hosts]\nhosts = \"a,,b\"\n", Path::new("p.toml")).unwrap();
        let e = plan.hosts.unwrap().plan().unwrap_err().to_string();
        assert!(e.starts_with("--hosts `a,,b` has an empty item"), "{e}");
    }

    /// `nan` and `inf` are TOML floats JSON has no form of: `[kv] rate = inf` became a
    /// rate not given, and its test ran closed loop. Refused by key, in sweeps and
    /// tables too.
    #[test]
    fn a_plan_number_that_is_no_number_is_refused_by_key() {
        for (line, key) in [
            ("[kv]\nrate = inf", "`kv.rate = inf`"),
            ("[kv]\nrate = [1000, nan]", "`kv.rate[1] = NaN`"),
            ("[run]\nidle_power = -inf", "`run.idle_power = -inf`"),
        ] {
            let e = format!("{:#}", load_plan(line, Path::new("p.toml")).unwrap_err());
            assert!(
                e.contains(key) && e.contains("give a finite number"),
                "{line}: {e}"
            );
        }
        assert!(load_plan("[kv]\nrate = 1000.5", Path::new("p.toml")).is_ok());
    }

    /// The flags' lists as a shell user writes them: `--loadgen 'rbh2, rbh3'` was refused
    /// for the space; a trailing comma names no host.
    #[test]
    fn host_flags_read_past_spaces_after_commas() {
        let opts = HostsOpts {
            sut: Some(" rbh1".into()),
            loadgen: vec!["rbh2".into(), " rbh3".into()],
            hosts: vec![" a".into(), "b ".into()],
            pairs: vec!["a>b".into(), " b>a".into()],
            ssh_config: None,
        };
        let plan = opts.plan().unwrap();
        assert_eq!(plan.sut.as_deref(), Some("rbh1"));
        assert_eq!(plan.loadgens, ["rbh2", "rbh3"]);
        assert_eq!(plan.matrix, ["a", "b"]);
        assert_eq!(plan.pairs.len(), 2);
    }

    #[test]
    fn fuzz_plan_file() {
        use fuzzkit::{mutate, random_tokens, Bytes, Fuzz, Rng};
        assert!(load_plan(PLAN, Path::new("plan.toml")).is_ok());
        Fuzz::new("plan_file").cases(1500).max_alloc(64 << 20).run(
            |rng| {
                if rng.gen_range(0..6) == 0 {
                    Bytes(random_tokens(rng, WORDS, 30))
                } else {
                    Bytes(mutate(rng, PLAN.as_bytes(), WORDS))
                }
            },
            |b| check_plan(&String::from_utf8_lossy(&b.0)),
        );
    }

    /// Found by `fuzz_plan_file`: a CPU range past any machine's (`0-4611686018427387904`)
    /// was expanded into a list of 2^62 CPUs (capacity overflow, or all memory): now an
    /// error naming the list.
    #[test]
    fn fuzz_regression_plan_file_huge_cpu_range() {
        let plan = "[kv]\nserver_cpus = \"0-4611686018427387904\"\n\n[http]\nclient_cpus = \"1-99999999999\"\n";
        check_plan(plan);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plan.toml");
        std::fs::write(&path, plan).unwrap();
        for workload in ["kv", "http"] {
            let e = resolved(&[workload, "--plan", path.to_str().unwrap()])
                .err()
                .expect("refused");
            assert!(format!("{e:#}").contains("does not exist"), "{e:#}");
        }
    }

    /// What `rackbench run --plan` does with a plan before anything starts, short of
    /// running it: load, hosts, each workload's points, the first points built.
    fn check_plan(text: &str) {
        let Ok(plan) = load_plan(text, Path::new("fuzz.toml")) else {
            return;
        };
        if let Some(h) = &plan.hosts {
            if let Ok(hosts) = h.plan() {
                for name in plan.workloads.keys() {
                    let _ = hosts.validate(name);
                }
            }
        }
        if let Some(w) = plan.run.as_ref().and_then(|r| r.workload.as_ref()) {
            let _ = w.names();
        }
        for (name, table) in &plan.workloads {
            let reg = registry::find(name).expect("load_plan checked the tables");
            let Ok(v) = serde_json::to_value(table) else {
                continue;
            };
            let Value::Object(params) = engine::plan::normalize(v, reg.text_keys) else {
                continue;
            };
            let Ok(points) = engine::plan::expand(&params, reg.list_keys) else {
                continue;
            };
            for p in points.iter().take(3) {
                if let Ok(w) = reg.build_point(p) {
                    for t in w.tests() {
                        let _ = w.expected_duration_s(&t);
                    }
                }
            }
        }
    }

    #[test]
    fn cv_of_a_constant_is_zero_and_needs_two_values() {
        use model::cv_pct;
        assert_eq!(cv_pct(&[5.0]), None);
        assert_eq!(cv_pct(&[5.0, 5.0, 5.0]), Some(0.0));
        let cv = cv_pct(&[9.0, 10.0, 11.0]).unwrap();
        assert!((cv - 10.0).abs() < 1e-9, "{cv}");
    }
}
