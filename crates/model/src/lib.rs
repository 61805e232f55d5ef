//! Result types only: what a run produced, with its full context.
//!
//! Everything rackbench measures ends up in a [`RunRecord`]: the effective plan, the
//! disclosure of every host, one [`ResultRecord`] per measured step (with metrics,
//! latency histograms, telemetry samples and validity flags). The store, the exporters,
//! the report and the TCO calculator depend on this crate alone, so any report can be
//! rebuilt from stored data. No I/O lives here.
//!
//! Units travel with every number: in [`Metric::unit`], or in a field's name (`_ns`,
//! `_pct`, `_w`, `_per_s`).

pub mod dirs;
pub mod hist;
pub mod power;
pub mod process;
pub mod secrets;
pub mod telemetry;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use hist::{HistogramRecord, LatencySummary};
pub use secrets::{redact_json, redact_secrets};
pub use telemetry::{
    CpuUtil, DiskRate, NicRate, PartPresent, PowerGaps, PowerReading, PowerSummary, ProcCpu,
    TelemetrySample, TelemetrySummary,
};

/// Whether more of a headline is better: the one rule for every part that picks a best
/// figure (the report's best point, compare's verdicts, the console's best line, the TCO's
/// `perf_from = "max"`). A latency (a headline in `ns`, or named one: mem's
/// `ram_latency_ns`) is better lower; throughput, rates and perf/W are better higher.
pub fn higher_is_better(headline: &str, unit: &str) -> bool {
    !(unit == "ns" || headline.contains("latency"))
}

/// A character a terminal must not be given as it is: a control character (an escape
/// sequence, a newline that would break a table), or a bidirectional override or isolate
/// (U+202E shows the text after it reversed: Trojan Source).
pub fn unsafe_to_show(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Text from a store, a host or a user, made safe for a terminal or a log line: control
/// characters (escape sequences, newlines that would break a table) are shown escaped.
pub fn printable(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            if unsafe_to_show(c) {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

/// `s` as one word of a POSIX shell command line to copy: as it is where that is safe,
/// else single-quoted.
pub fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.,:/=@+".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// [`printable`] for a message of several lines (an error with clap's usage below it):
/// newlines stay, every other control character is shown escaped.
pub fn printable_lines(s: &str) -> String {
    s.split('\n').map(printable).collect::<Vec<_>>().join("\n")
}

/// Version of the JSON shape of [`RunRecord`]; bump on any incompatible change.
pub const RECORD_FORMAT_VERSION: u32 = 1;

/// One measured number with its unit and what it describes.
///
/// `name` is a stable machine name (`ops_per_s`, `latency_p99_ns`, `signs_per_s`);
/// `labels` carry the dimensions (`op=get`, `instance=2`, `bits=2048`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    pub name: String,
    pub value: f64,
    pub unit: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

impl Metric {
    pub fn new(name: impl Into<String>, value: f64, unit: impl Into<String>) -> Self {
        Metric {
            name: name.into(),
            value,
            unit: unit.into(),
            labels: BTreeMap::new(),
        }
    }

    pub fn label(mut self, key: impl Into<String>, value: impl ToString) -> Self {
        self.labels.insert(key.into(), value.to_string());
        self
    }

    /// Whether this metric counts things ([`is_count_unit`]): shown as a whole number.
    pub fn is_count(&self) -> bool {
        is_count_unit(&self.unit)
    }
}

/// The units of counts (a number of things, not a measure of them). The contract of a
/// metric in one of them: wherever it is shown it prints as a whole number, a mean of
/// counts over repetitions rounded to the nearest one, never `91.0` beside a `91`. Rates
/// (`transactions/min`), times and watts are measures, and print by their size.
const COUNT_UNITS: &[&str] = &[
    "B",
    "bytes",
    "calls",
    "connections",
    "count",
    "errors",
    "new orders",
    // A capacity step's replies and errors where the workload counts operations (kv).
    "ops",
    "packets",
    "replies",
    "req",
    "requests",
    "responses",
    "segments",
    "threads",
    "transactions",
    "virtual users per database",
    "warehouses",
];

/// The telemetry role of the load generator's own process (rackbench, or its agent);
/// every other watched process is the system under test's (`server:0`, `postgres`,
/// `receiver`).
pub const LOADGEN_PROCESS: &str = "loadgen";

/// The telemetry role of rackbench's own process where its threads are the work measured
/// (crypto, mem: no server, no load generator). It was [`LOADGEN_PROCESS`] before, and a
/// CSV filtered on `role=loadgen` took an RSA worker's CPU for a generator's.
pub const WORK_PROCESS: &str = "work";

/// Whether a watched process is rackbench's own (a load generator's, or the work's),
/// not the system under test's: a run stored before [`WORK_PROCESS`] has `loadgen` for both.
pub fn is_rackbench_process(role: &str) -> bool {
    role == LOADGEN_PROCESS || role == WORK_PROCESS
}

/// FNV-1a, 64 bits: a hash stable across builds and platforms (std's is not), for a
/// report's seal and a test's key stream. No defence against forgery.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Whether a unit counts things ([`COUNT_UNITS`]).
pub fn is_count_unit(unit: &str) -> bool {
    COUNT_UNITS.contains(&unit)
}

/// A metric that could not be measured, with the reason. Never reported as 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MissingMetric {
    pub name: String,
    pub reason: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Shown beside the figure; the figure stands but deserves a second look.
    Warning,
    /// The figure must not be used as a result (e.g. consistency check failed).
    Invalid,
}

/// The code of the warning on a test's provisional result: what it had measured at a
/// checkpoint while it ran (a capacity test's steps so far), which its final result
/// replaces; kept only where the process ended before the test did.
pub const PARTIAL: &str = "partial";

/// A validity finding attached to a result ("client_bound", "errors", "zero_throughput").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flag {
    pub code: String,
    pub severity: Severity,
    pub message: String,
}

impl Flag {
    pub fn warning(code: impl Into<String>, message: impl Into<String>) -> Self {
        Flag {
            code: code.into(),
            severity: Severity::Warning,
            message: message.into(),
        }
    }
    pub fn invalid(code: impl Into<String>, message: impl Into<String>) -> Self {
        Flag {
            code: code.into(),
            severity: Severity::Invalid,
            message: message.into(),
        }
    }

    /// The host a flag is of, where its message says so the way every per-host flag
    /// begins (`host rbh2: other processes took ...`); None for a flag of the result.
    pub fn host(&self) -> Option<&str> {
        let rest = self.message.strip_prefix("host ")?;
        let (host, _) = rest.split_once(": ")?;
        (!host.is_empty() && !host.contains(char::is_whitespace)).then_some(host)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Ran to the end.
    Ok,
    /// Stopped by the user (Ctrl-C); what was measured is kept.
    Interrupted,
    /// Failed (server died, setup error); what was measured is kept.
    Failed,
    /// A run still being written (only seen in the store while a run is in progress).
    Running,
}

impl Status {
    /// How a run or result that did not run to its end is said ("interrupted",
    /// "failed", "still running"); None when it did.
    pub fn unfinished_as(self) -> Option<&'static str> {
        match self {
            Status::Ok => None,
            Status::Interrupted => Some("interrupted"),
            Status::Failed => Some("failed"),
            Status::Running => Some("still running"),
        }
    }

    /// The word for it in tables (`ok`, `interrupted`, `failed`, `running`).
    pub fn word(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Interrupted => "interrupted",
            Status::Failed => "failed",
            Status::Running => "running",
        }
    }

    /// A run's status as `runs`, `show` and the report's Runs table give it: how it
    /// ended, then how many of its `results` are invalid (`ok, 1 of 1 invalid`). A run
    /// that ran to its end is `ok` even when every result failed a check; `ok` alone
    /// would read as figures that stand.
    pub fn with_invalid(self, invalid: usize, results: usize) -> String {
        match invalid {
            0 => self.word().to_string(),
            n => format!("{}, {n} of {results} invalid", self.word()),
        }
    }
}

/// One measured step: one point of a sweep, one test, one repetition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultRecord {
    /// Workload name from the registry (`kv`, `oltp`, `net`...).
    pub workload: String,
    /// Test within the workload (`set`, `get`, `rsa2048`, `tcp`...).
    pub test: String,
    /// Index of the step in the run (0-based, in execution order).
    pub step: u32,
    /// Repetition number (0-based) of this sweep point and test.
    pub repetition: u32,
    /// The parameters of this step as given (the sweep point: flags typed, plan-file
    /// keys, the hosts), plain data. They name the point (`kv get pipeline=16`).
    pub params: BTreeMap<String, serde_json::Value>,
    /// Every setting the workload ran this step with, defaults included (its resolved
    /// config), secrets left out: what a reader or a comparison takes for a knob
    /// `params` does not give ([`ResultRecord::setting`]). Empty in records stored
    /// before settings were kept: there, an untyped knob is not known.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub settings: BTreeMap<String, serde_json::Value>,
    /// Name of the headline metric in `metrics` (e.g. `ops_per_s`); each workload declares it.
    pub headline: String,
    pub started_at: chrono::DateTime<chrono::Utc>,
    /// Measured duration (warm-up excluded), seconds.
    pub duration_s: f64,
    pub metrics: Vec<Metric>,
    #[serde(default)]
    pub missing: Vec<MissingMetric>,
    #[serde(default)]
    pub histograms: Vec<HistogramRecord>,
    /// Samples taken while this step ran (warm-up samples marked).
    #[serde(default)]
    pub telemetry: Vec<TelemetrySample>,
    /// Summary of the non-warm-up telemetry samples, one per host.
    #[serde(default)]
    pub telemetry_summary: Vec<TelemetrySummary>,
    #[serde(default)]
    pub flags: Vec<Flag>,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A net test's rate of each of its streams (`--streams N`, N > 1), labelled `stream`
/// (`0`..N-1) and, at the sender, `end=sender`: what iperf3 prints above its [SUM]. A
/// name of its own, not `throughput_gbit_per_s{stream=..}`, so that a lookup of the
/// test's rate by a subset of its labels (`end=sender`) never finds a stream's. The
/// receiver numbers its streams in the order it accepted them, the sender in the order
/// it opened them: a stream's number is its end's own, and the two ends' figures of one
/// number need not be one connection's. Results stored before these were kept have none.
pub const STREAM_THROUGHPUT: &str = "stream_throughput_gbit_per_s";

/// The slowest and fastest of a result's streams at one end (None: the receiver; Some:
/// that `end`) among its `metrics`, and how many streams: None when it stored no
/// per-stream rates (one stream, or stored before they were kept).
pub fn stream_spread(metrics: &[Metric], end: Option<&str>) -> Option<(f64, f64, usize)> {
    let rates: Vec<f64> = metrics
        .iter()
        .filter(|m| {
            m.name == STREAM_THROUGHPUT
                && m.labels.contains_key("stream")
                && m.labels.get("end").map(String::as_str) == end
                && m.value.is_finite()
        })
        .map(|m| m.value)
        .collect();
    let min = rates.iter().copied().reduce(f64::min)?;
    let max = rates.iter().copied().reduce(f64::max)?;
    Some((min, max, rates.len()))
}

/// How the load generators of a many-host test started together (the latest one's skew
/// from the first, the spread of their starts, the time all of them measured): theirs,
/// not the server's.
pub const START_FIGURES: [&str; 3] = ["start_skew_max_s", "start_spread_s", "window_overlap_s"];

/// Whether a result's metric `name` (without a `host` label) is the load generators'
/// together rather than the system under test's: their merged CPU (`loadgen_*`), how they
/// started ([`START_FIGURES`]), and the bytes their clients sent and received (the
/// server's the other way round: they read as its own, backwards and 26x under what it
/// sent).
pub fn of_the_generators(name: &str) -> bool {
    name.starts_with("loadgen_")
        || START_FIGURES.contains(&name)
        || [
            "bytes_tx",
            "bytes_rx",
            "rx_bytes_per_s",
            "net_io_bytes_per_s",
        ]
        .contains(&name)
}

/// Hosts as a result's parameters hold them: `"rbh2,rbh3"`, as the runner writes them,
/// or a JSON array (an import, an edited export); empty names left out.
pub fn host_list(v: &serde_json::Value) -> Vec<&str> {
    let names: Vec<&str> = match v {
        serde_json::Value::String(s) => s.split(',').collect(),
        serde_json::Value::Array(a) => a.iter().filter_map(|h| h.as_str()).collect(),
        _ => Vec::new(),
    };
    names
        .into_iter()
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .collect()
}

/// The load generators whose figures a result's merged ones ([`of_the_generators`]) are:
/// of its `loadgen_hosts`, those that reported their own (a `loadgen_cpu_s` labelled with
/// the host, not one kept from a lost generator's checkpoint, `until_checkpoint_s`); all
/// of them where none is labelled (a generator alone labels none). After a generator was
/// lost the merge is the survivors' alone, and names them alone (it read `rbh2+rbh3`).
/// None for a result without generators.
pub fn merged_generators(r: &ResultRecord) -> Option<Vec<&str>> {
    let all = host_list(r.params.get("loadgen_hosts")?);
    if all.is_empty() {
        return None;
    }
    let reported = |h: &str| {
        r.metrics.iter().any(|m| {
            m.name == "loadgen_cpu_s"
                && m.labels.get("host").map(String::as_str) == Some(h)
                && !m.labels.contains_key("until_checkpoint_s")
        })
    };
    let survivors: Vec<&str> = all.iter().copied().filter(|h| reported(h)).collect();
    Some(if survivors.is_empty() { all } else { survivors })
}

/// The capacity tests' names and knobs (the engine's flags and plan keys are these).
pub mod capacity_keys {
    /// The names of the capacity tests.
    pub const TESTS: [&str; 3] = ["ramp", "search", "levels"];

    /// The capacity tests' keys a load test never reads: all of [`KEYS`] but `wait`,
    /// which an open loop (`--rate`) reads as a capacity test's steps do.
    pub const ONLY_CAPACITY: [&str; 15] = [
        "ramp_low",
        "ramp_high",
        "ramp_step",
        "step_duration",
        "saturation_fraction",
        "max_error_pct",
        "steps_after_saturation",
        "slo",
        "search_start",
        "search_min",
        "search_max",
        "search_steps",
        "capacity",
        "levels",
        "idle_duration",
    ];

    /// Parameter keys the capacity tests own (flag ids and plan keys).
    pub const KEYS: [&str; 16] = {
        let mut keys = [""; 16];
        let mut i = 0;
        while i < ONLY_CAPACITY.len() {
            keys[i] = ONLY_CAPACITY[i];
            i += 1;
        }
        keys[15] = "wait";
        keys
    };

    /// A step's metric (the runner's telemetry adds it) of how far, in percent of one
    /// CPU, the host's CPUs were counted busy below what the step's own processes ran.
    pub const TICKS_MISSED: &str = "cpu_ticks_missed_pct";

    /// A step's metric of the CPU other programs took (% of one CPU) while the step's own
    /// processes were all but idle (a levels test's active idle), where it is enough to
    /// flag: the step's power carries their work.
    pub const OTHERS_AT_REST: &str = "cpu_others_at_rest_pct";

    /// A load test's stops, which a capacity test's steps set for themselves: none of
    /// them is a setting a capacity test ran at.
    pub const LOAD_STOPS: [&str; 3] = ["duration", "requests", "rate"];

    /// The knobs `test` does not read of these: a capacity test's in a load test, a
    /// load's stops in a capacity test. Out of its settings (a report said `--ramp-high`
    /// of a `set` beside a ramp), and out of what tells two platforms' figures apart; not
    /// out of its parameters, which tell its sweep points apart (`-t set,search --slo
    /// a,b` runs `set` at each).
    pub fn unread(test: &str) -> &'static [&'static str] {
        if TESTS.contains(&test) {
            &LOAD_STOPS
        } else {
            &ONLY_CAPACITY
        }
    }
}

/// The knobs of a sweep point that `workload`'s `test` does not read (crypto's buffer
/// sizes in an RSA or ECDSA test, its `bits` list in every test: each RSA test names its
/// own key size): no part of the test's point, so that runs that differ in them alone
/// meet there (a run of rsa2048 alone and one of rsa2048 and sha256 were two rsa2048
/// points, `buffer_sizes` apart, and a side's mean dropped a run). Lists, never swept:
/// a swept knob stays in the parameters of every test (see [`capacity_keys::unread`]).
pub fn unread_by(workload: &str, test: &str) -> &'static [&'static str] {
    match workload {
        "crypto" if test.starts_with("rsa") || test == "ecdsap256" => &["bits", "buffer_sizes"],
        "crypto" => &["bits"],
        _ => &[],
    }
}

impl ResultRecord {
    /// Takes the knobs its test does not read ([`unread_by`]) out of its parameters and
    /// settings, and the capacity knobs it does not read ([`capacity_keys::unread`]) out
    /// of its settings: when it is stored, and when a record stored before the rule is
    /// read, so that old and new runs meet at one point.
    pub fn drop_unread(&mut self) {
        for k in unread_by(&self.workload, &self.test) {
            self.params.remove(*k);
            self.settings.remove(*k);
        }
        for k in capacity_keys::unread(&self.test) {
            self.settings.remove(*k);
        }
    }

    /// The first metric with this name and no labels, or with labels matching all given pairs.
    pub fn metric(&self, name: &str, labels: &[(&str, &str)]) -> Option<&Metric> {
        self.metrics.iter().find(|m| {
            m.name == name
                && labels
                    .iter()
                    .all(|(k, v)| m.labels.get(*k).map(String::as_str) == Some(*v))
                && (!labels.is_empty() || m.labels.is_empty())
        })
    }

    /// The value this step ran `key` with: as given (`params`), else its effective
    /// setting (a default); None when neither says (a knob the workload does not have,
    /// or a record stored before settings were kept).
    pub fn setting(&self, key: &str) -> Option<&serde_json::Value> {
        self.params.get(key).or_else(|| self.settings.get(key))
    }

    /// The headline figure (unlabelled metric named by `headline`).
    pub fn headline_value(&self) -> Option<f64> {
        self.metric(&self.headline, &[]).map(|m| m.value)
    }

    /// Why this result's headline is only a lower bound of what it names, None when it
    /// is a measurement. A `search` none of whose probes missed its objective (every
    /// one met it up to `--search-max`, or the search stopped first) stores the highest
    /// rate it tried: the server meets the objective at least up to there, how far
    /// beyond unknown. A `ramp` that never saturated (the server kept up to
    /// `--ramp-high`, or the ramp stopped first) stores its highest reply rate: the
    /// server's peak is at least that. The rule a `levels` test applies before it takes
    /// such a rate as its 100% (`capacity_a_bound`): no lowest failing rate, no
    /// saturation, was found. Why, in the engine's words: the search's `search_limit`
    /// warning, the ramp's missing saturation. A report, `show` and `compare` ask this
    /// one function, so that 2,000 ops/s "meeting p99<50ms" is never read, or set
    /// against another run's, as the rate where it stops meeting it.
    pub fn headline_lower_bound(&self) -> Option<String> {
        self.headline_value()?;
        let (limit, why) = match (self.capacity_phase()?, self.headline.as_str()) {
            ("search", "max_rate_meeting_slo_per_s") => (
                "lowest_failing_rate_per_s",
                self.flags
                    .iter()
                    .find(|f| f.code == "search_limit")
                    .map(|f| f.message.clone()),
            ),
            ("ramp", "max_reply_rate_per_s") => (
                "saturation_rate_per_s",
                self.missing
                    .iter()
                    .find(|m| m.name == "saturation_rate_per_s")
                    .map(|m| format!("the ramp never saturated: {}", m.reason)),
            ),
            _ => return None,
        };
        self.metric(limit, &[]).is_none().then(|| {
            why.unwrap_or_else(|| match self.test.as_str() {
                "ramp" => "the ramp never saturated: raise --ramp-high".into(),
                _ => "no probe of the search missed its objective: raise --search-max".into(),
            })
        })
    }

    pub fn is_invalid(&self) -> bool {
        self.flags.iter().any(|f| f.severity == Severity::Invalid)
    }

    /// Whether this is a test's provisional result (flagged [`PARTIAL`]), not its final.
    pub fn is_provisional(&self) -> bool {
        self.flags.iter().any(|f| f.code == PARTIAL)
    }

    /// Why this result counts in no figure, in words: `interrupted (partial)` (stopped,
    /// its figures those measured until a checkpoint or the stop), `failed`, `invalid
    /// (code)`; None when it counts (ended ok, nothing invalid).
    pub fn uncounted_as(&self) -> Option<String> {
        if let Some(state) = self.status.unfinished_as() {
            let partial = self.status != Status::Running && self.is_provisional();
            return Some(format!(
                "{state}{}",
                if partial { " (partial)" } else { "" }
            ));
        }
        self.is_invalid().then(|| {
            let codes: Vec<&str> = self
                .flags
                .iter()
                .filter(|f| f.severity == Severity::Invalid)
                .map(|f| f.code.as_str())
                .collect();
            format!("invalid ({})", codes.join(", "))
        })
    }

    /// The capacity procedure this result is (`ramp`, `search` or `levels`), or None for
    /// an ordinary test. The marker is the one the engine stores: every step's metrics
    /// are labelled `phase=<test>` (and its histograms are `<test>_step<i>`, one per
    /// step, with no `all`).
    ///
    /// Such a result is a curve of steps at different offered rates. Its headline is one
    /// point of that curve (the peak reply rate, the highest rate meeting the objective,
    /// SPECpower's overall ops/s/W), while the whole test's latency, power and CPU mix
    /// every step: no generic figure may be taken from it (a "ramp p99" merging twenty
    /// offered rates, a peak rate over the mean power of the whole ramp, a TCO's server).
    pub fn capacity_phase(&self) -> Option<&str> {
        let test = self.test.as_str();
        let marked = self
            .metrics
            .iter()
            .any(|m| m.labels.get("phase").is_some_and(|p| p == test));
        (CAPACITY_TESTS.contains(&test) && marked).then_some(test)
    }
}

/// Why none of `results` counts, when none does, in words naming them as `noun`s: "its
/// only repetition is interrupted (partial)", "its 3 results are failed (2), interrupted
/// (1)". None when one of them counts, or there are none.
pub fn none_counted_because(results: &[&ResultRecord], noun: &str) -> Option<String> {
    let mut why: Vec<(String, usize)> = Vec::new();
    for r in results {
        let w = r.uncounted_as()?;
        match why.iter_mut().find(|(k, _)| *k == w) {
            Some((_, n)) => *n += 1,
            None => why.push((w, 1)),
        }
    }
    match why.as_slice() {
        [] => None,
        [(w, 1)] => Some(format!("its only {noun} is {w}")),
        [(w, n)] => Some(format!("its {n} {noun}s are all {w}")),
        _ => Some(format!(
            "its {} {noun}s are {}",
            results.len(),
            why.iter()
                .map(|(w, n)| format!("{w} ({n})"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// Why the headline of `valid`, the counted repetitions of one sweep point, is no figure
/// of the point although some of them have one: the others made none (a search that
/// found its objective missed even at the lowest rate allowed), and a mean of those that
/// did leaves them out, as if they had said the same. "2 of its 3 repetitions made no
/// figure (max_rate_meeting_slo: not met even at 500/s)". None when all or none have one.
pub fn headline_of_some_repetitions(valid: &[&ResultRecord]) -> Option<String> {
    let without: Vec<&&ResultRecord> = valid
        .iter()
        .filter(|r| r.headline_value().is_none())
        .collect();
    if without.is_empty() || without.len() == valid.len() {
        return None;
    }
    let mut why: Vec<String> = Vec::new();
    for r in &without {
        let w = match r.missing.iter().find(|m| m.name == r.headline) {
            Some(m) => format!("{}: {}", r.headline, m.reason),
            None => format!("{} not reported", r.headline),
        };
        if !why.contains(&w) {
            why.push(w);
        }
    }
    Some(format!(
        "{} of its {} repetitions made no figure ({}), and a mean of the others would \
         leave them out",
        without.len(),
        valid.len(),
        why.join("; ")
    ))
}

/// The capacity procedures every rate-driven workload offers as tests (the engine's
/// `capacity_tests::TESTS`).
pub const CAPACITY_TESTS: [&str; 3] = ["ramp", "search", "levels"];

/// The end of a `net` pair a figure was measured at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairEnd {
    Sender,
    Receiver,
    /// A figure of the pair (CPU of both ends per Gbit/s, the payload both use).
    Both,
}

/// Figures the `net` workload stores unlabelled that its sender counts (its kernel's
/// TCP_INFO for the TCP counters); every other unlabelled throughput, packet and loss
/// figure is the receiver's ([`RECEIVER_FIGURES`]).
const SENDER_FIGURES: [&str; 9] = [
    "bytes_sent",
    "packets_sent",
    "send_errors",
    "target_gbit_per_s",
    "retransmits",
    "rtt_mean_ns",
    "rtt_min_ns",
    "rtt_max_ns",
    "snd_cwnd_max_bytes",
];
const RECEIVER_FIGURES: [&str; 9] = [
    "throughput_gbit_per_s",
    STREAM_THROUGHPUT,
    "packets_per_s",
    "bytes_received",
    "packets_received",
    "lost_packets",
    "loss_pct",
    "out_of_order_packets",
    "jitter_ms",
];

/// Which end of a `net` pair figure `name` with `labels` is of: the `end` label where it
/// has one (`throughput_gbit_per_s{end=sender}`), else the end its name says
/// (`sender_cpu_pct`), else the end that counts it (`retransmits`: the sender's kernel;
/// `throughput_gbit_per_s`: received). A missing figure's name may carry its labels
/// (`throughput_gbit_per_s{end=sender}`), as the workload names it.
pub fn net_figure_end(name: &str, labels: &BTreeMap<String, String>) -> PairEnd {
    let (base, inline) = inline_labels(name);
    match labels.get("end").or(inline.get("end")).map(String::as_str) {
        Some("sender") => return PairEnd::Sender,
        Some("receiver") => return PairEnd::Receiver,
        Some(_) => return PairEnd::Both,
        None => {}
    }
    if base.starts_with("sender_") || SENDER_FIGURES.contains(&base) {
        PairEnd::Sender
    } else if base.starts_with("receiver_") || RECEIVER_FIGURES.contains(&base) {
        PairEnd::Receiver
    } else {
        PairEnd::Both
    }
}

/// A figure's name and the labels it carries inline, as a missing figure's name carries
/// them (`throughput_gbit_per_s{end=sender}`, `loadgen_busy_pct{host=rbh3}`); a name
/// without braces has none.
pub fn inline_labels(name: &str) -> (&str, BTreeMap<String, String>) {
    let Some((base, rest)) = name.split_once('{') else {
        return (name, BTreeMap::new());
    };
    let labels = rest
        .trim_end_matches('}')
        .split(',')
        .filter_map(|kv| kv.trim().split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    (base, labels)
}

/// One fact of a host's disclosure: its value, or why it could not be read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fact {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Why the value is missing (`not readable: permission denied`, `no such file`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<String>,
}

impl Fact {
    pub fn known(value: impl Into<String>) -> Self {
        Fact {
            value: Some(value.into()),
            missing: None,
        }
    }
    pub fn unknown(reason: impl Into<String>) -> Self {
        Fact {
            value: None,
            missing: Some(reason.into()),
        }
    }
    /// The value, or `unknown (reason)` for display.
    pub fn display(&self) -> String {
        match (&self.value, &self.missing) {
            (Some(v), _) => v.clone(),
            (None, Some(r)) => format!("unknown ({r})"),
            (None, None) => "unknown".to_string(),
        }
    }
}

/// What a host is: hardware, OS and software, collected automatically with every run.
///
/// Keys are dotted and stable (`cpu.model`, `cpu.sockets`, `cpu.smt`, `mem.total_bytes`,
/// `os.kernel`, `mitigation.spectre_v2`, `nic.eth0.driver`, `software.redis-server`,
/// `server.config.save`...), so two disclosures diff key by key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostDisclosure {
    /// Host name as the user knows it (`local` for this machine, else the ssh name).
    pub host: String,
    /// What part it played (`sut`, `loadgen`, `sut+loadgen`).
    pub role: String,
    pub facts: BTreeMap<String, Fact>,
}

/// The name a table or an export gives a host of a run: its stored name, except this
/// machine (`local`), named by its disclosed hostname (`os.hostname`) when known, so that
/// runs made on several machines keep them apart. The one rule of the CSV export and the
/// report's host views.
pub fn host_display_name(hosts: &[HostDisclosure], host: &str) -> String {
    if host != "local" {
        return host.to_string();
    }
    hosts
        .iter()
        .find(|d| d.host == host)
        .and_then(|d| d.facts.get("os.hostname"))
        .and_then(|f| f.value.clone())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| host.to_string())
}

/// A metric's unit as read: `signs_per_s` stored in `ops/s` reads `signs/s`, so a table,
/// an export or a TCO never calls an RSA sign a generic operation; any other unit is kept
/// as stored. The one reading of a stored unit for people.
/// Only the name of a thing counted (one word: `signs`, `verifies`) is taken for the
/// unit; a rate's name (`max_reply_rate_per_s`, `capacity_per_s`) is no unit, so those
/// keep `ops/s` rather than reading `max_reply_rate/s`.
pub fn display_unit(metric: &str, unit: &str) -> String {
    match metric.strip_suffix("_per_s") {
        Some(what) if unit == "ops/s" && names_a_thing_counted(what) => format!("{what}/s"),
        _ => unit.to_string(),
    }
}

/// The unit a metric's name says by its suffix (`connect_time_mean_ns`: ns,
/// `power_mean_w`: W), for a figure stored without a value (a missing one); None where
/// the name does not say it (a rate's unit is of what it counts: `ops/s`, `signs/s`).
pub fn unit_by_name(metric: &str) -> Option<&'static str> {
    const RATES: [(&str, &str); 2] = [("_gbit_per_s", "Gbit/s"), ("_bytes_per_s", "B/s")];
    if let Some((_, unit)) = RATES.iter().find(|(suffix, _)| metric.ends_with(suffix)) {
        return Some(unit);
    }
    // Any other ratio is of what its test counts (`reply_rate_per_w`: ops/s/W,
    // `signs_per_cpu_s`: ops/cpu-s): its last word is no unit of it.
    if metric.contains("_per_") {
        return None;
    }
    const SUFFIXES: [(&str, &str); 8] = [
        ("_ns", "ns"),
        ("_us", "us"),
        ("_ms", "ms"),
        ("_s", "s"),
        ("_pct", "%"),
        ("_w", "W"),
        ("_bytes", "B"),
        ("_mhz", "MHz"),
    ];
    SUFFIXES
        .iter()
        .find(|(suffix, _)| metric.ends_with(suffix))
        .map(|(_, unit)| *unit)
}

#[cfg(test)]
mod unread_tests {
    use serde_json::json;

    /// `--ramp-high` and `--step-duration` given beside `set` are the ramp's: `set`'s
    /// settings leave them out (a report said them of `set`), the ramp's keep them and
    /// leave out `--duration` (set's), and an open loop's `wait` stays with either. The
    /// parameters keep them all: they tell a sweep's points apart (`--slo a,b` runs `set`
    /// at each, and two runs of `set` read as one point of two repetitions 0).
    #[test]
    fn a_test_that_is_not_a_capacity_test_leaves_out_their_knobs() {
        let keys = |test: &str| -> (Vec<String>, Vec<String>) {
            let point: std::collections::BTreeMap<String, serde_json::Value> = [
                ("clients", json!(4)),
                ("duration", json!(1)),
                ("ramp_high", json!(3000)),
                ("slo", json!("p99<1ms")),
                ("step_duration", json!(0.3)),
                ("wait", json!("spin")),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
            let mut r: super::ResultRecord = serde_json::from_value(json!({
                "workload": "kv", "test": test, "step": 0, "repetition": 0,
                "params": point, "settings": point, "headline": "",
                "started_at": "2026-12-08T00:00:00Z", "duration_s": 1.0,
                "metrics": [], "missing": [], "histograms": [], "telemetry": [],
                "telemetry_summary": [], "flags": [], "status": "ok"
            }))
            .unwrap();
            r.drop_unread();
            (
                r.params.into_keys().collect(),
                r.settings.into_keys().collect(),
            )
        };
        let all = [
            "clients",
            "duration",
            "ramp_high",
            "slo",
            "step_duration",
            "wait",
        ];
        let (params, settings) = keys("set");
        assert_eq!(params, all);
        assert_eq!(settings, ["clients", "duration", "wait"]);
        let (params, settings) = keys("ramp");
        assert_eq!(params, all);
        assert_eq!(
            settings,
            ["clients", "ramp_high", "slo", "step_duration", "wait"]
        );
    }
}

#[cfg(test)]
mod unit_by_name_tests {
    /// A missing figure's unit from its name: the suffixes a stored metric's unit goes
    /// with, none for a rate of things counted or a name with no unit.
    #[test]
    fn a_names_suffix_gives_its_unit() {
        for (name, unit) in [
            ("connect_time_mean_ns", Some("ns")),
            ("power_mean_w", Some("W")),
            ("jitter_ms", Some("ms")),
            ("throughput_gbit_per_s", Some("Gbit/s")),
            ("rx_bytes_per_s", Some("B/s")),
            ("loadgen_busy_pct", Some("%")),
            ("interval_rate_min_per_s", None),
            ("overall_reply_rate_per_w", None),
            ("reply_rate_per_w", None),
            ("signs_per_cpu_s", None),
            ("cpu_pct_per_gbit", None),
            ("measured_duration_s", Some("s")),
            ("cache_hit_ratio", None),
        ] {
            assert_eq!(super::unit_by_name(name), unit, "{name}");
        }
    }
}

/// Whether the stem of a `<stem>_per_s` name is a thing counted (a single plural noun)
/// rather than the name of a rate or of the generic operation.
fn names_a_thing_counted(stem: &str) -> bool {
    !stem.is_empty()
        && stem.bytes().all(|b| b.is_ascii_lowercase())
        && !matches!(stem, "ops" | "capacity")
        && !stem.contains("rate")
}

/// A host fact's value for people: a fact naming hosts of the run
/// (`host.kernel_shared_with`) names them as every table does ([`host_display_name`]:
/// this machine by its hostname, not `local`); any other as stored ([`Fact::display`]).
/// The one rule of `show` and the report's disclosure.
pub fn fact_text(hosts: &[HostDisclosure], key: &str, f: &Fact) -> String {
    match f.value.as_deref() {
        Some(names) if key == KERNEL_SHARED_WITH => names
            .split(", ")
            .map(|h| host_display_name(hosts, h))
            .collect::<Vec<_>>()
            .join(", "),
        _ => f.display(),
    }
}

/// `v` with every whole float (`10.0`, a config's `f64` default) as the integer a typed
/// flag parses to (`--sample-ms 10` is `10`): a default and a typed value of one setting
/// read alike wherever they are set side by side.
pub fn whole_numbers(v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Number(n) if n.is_f64() => match n.as_f64() {
            // Exact in an f64 and in an i64.
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Value::from(f as i64),
            _ => v.clone(),
        },
        Value::Array(a) => Value::Array(a.iter().map(whole_numbers).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), whole_numbers(v)))
                .collect(),
        ),
        _ => v.clone(),
    }
}

/// No CPU number reaches this (the kernel's largest NR_CPUS is 8192): a range past it is
/// a typo, refused before it becomes a list of billions.
pub const MAX_CPUS: usize = 8192;

/// Parse a CPU list as Linux writes them and users type them: `0-3,8,10-11`, in the
/// order given, each CPU once. The one reader of typed CPU lists: the engine's, and
/// compare's, which must call `0-3` and `0,1,2,3` one setting.
pub fn parse_cpu_list(s: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    let cpu = |n: &str| -> Result<usize, String> {
        let c: usize = n.parse().map_err(|_| format!("bad CPU list `{s}`"))?;
        if c >= MAX_CPUS {
            return Err(format!(
                "bad CPU list `{s}`: CPU {c} does not exist on any machine (CPUs are numbered 0 to {})",
                MAX_CPUS - 1
            ));
        }
        Ok(c)
    };
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (cpu(a)?, cpu(b)?);
                if b < a {
                    return Err(format!("bad CPU list `{s}`: {b} < {a}"));
                }
                out.extend(a..=b);
            }
            None => out.push(cpu(part)?),
        }
    }
    if let Some((c, once)) = cpu_listed_twice(&out) {
        return Err(format!(
            "bad CPU list `{s}`: CPU {c} is listed twice: give each CPU once (e.g. {once})"
        ));
    }
    Ok(out)
}

/// The first CPU listed more than once, and the list with each CPU once, ascending. A CPU
/// given twice is a typo or a wrong belief (that it adds a thread or an instance):
/// accepted, it was used once and said nothing.
pub fn cpu_listed_twice(cpus: &[usize]) -> Option<(usize, String)> {
    let mut seen = std::collections::BTreeSet::new();
    let c = cpus.iter().copied().find(|&c| !seen.insert(c))?;
    let mut once = cpus.to_vec();
    once.sort_unstable();
    once.dedup();
    Some((c, cpu_list_text(&once)))
}

/// A CPU list in Linux's short form (`0-3,8`): runs of consecutive CPUs as ranges, in the
/// order given. The one writer of CPU lists, for the engine's messages and the report's
/// tables alike.
pub fn cpu_list_text(cpus: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if j == i {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// Items said once each, in their first order, with a count where repeated (`other_load
/// x2`, `server x3`): a flag raised on two hosts, a role's processes. The one writer of
/// such counts, for the console and the report alike.
pub fn counted<S: Into<String>>(items: impl IntoIterator<Item = S>) -> Vec<String> {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for item in items {
        let item = item.into();
        match counts.iter_mut().find(|(x, _)| *x == item) {
            Some((_, n)) => *n += 1,
            None => counts.push((item, 1)),
        }
    }
    counts
        .into_iter()
        .map(|(x, n)| if n > 1 { format!("{x} x{n}") } else { x })
        .collect()
}

/// Whether `host` of a run is a system under test that also ran the load generator (its
/// role `sut+loadgen`, or a generator on its kernel): its power is the generator's work
/// too. The one rule of the report's efficiency notes and a TCO's power source, with
/// [`sender_beside`] for a net pair's receiver.
pub fn sut_ran_loadgen(hosts: &[HostDisclosure], host: &str) -> bool {
    hosts.iter().any(|h| {
        h.host == host && role_includes(&h.role, "sut") && loadgen_on_kernel_of(hosts, host)
    })
}

/// Whether result `r`'s power read on `host` holds a load generator's work: for a net
/// pair, whether its sender was `host` itself or another name of its kernel (a matrix's
/// every host is `receiver+sender` over the run, but its pairs run one at a time, and a
/// receiver on its own machine sent nothing while it received); else
/// [`sut_ran_loadgen`].
pub fn sender_beside(hosts: &[HostDisclosure], r: &ResultRecord, host: &str) -> bool {
    match r.params.get("sender_host").and_then(|v| v.as_str()) {
        Some(sender) => sender == host || kernel_mates(hosts, host).contains(&sender),
        None => sut_ran_loadgen(hosts, host),
    }
}

/// The disclosure fact naming the run's other hosts on the same kernel as this one
/// (namespaces or containers of one machine: one boot id), whose CPU counters, and
/// power, are that kernel's for all of them.
pub const KERNEL_SHARED_WITH: &str = "host.kernel_shared_with";

/// The disclosure fact naming a host's NICs whose traffic another of its NICs counts: a
/// bridge's port or a bond's member (`rbv1 in rbbr0, eth1 in bond0`), counted on the
/// master as well or only forwarded through the host, an Open vSwitch bridge's port
/// (`eth1 in ovs-system`: the host's own traffic through it is counted on the bridge's
/// internal port, `br-ex`), and a VLAN (macvlan, ipvlan) over another NIC (`eth0.100
/// over eth0`), counted on that NIC. A host's NIC total leaves them out (a controller
/// bridging three test hosts read their 12.5 Gbit/s as its own, twice).
pub const NIC_ENSLAVED: &str = "nic.enslaved";

/// The NICs of `host` that [`NIC_ENSLAVED`] names.
pub fn enslaved_nics<'a>(hosts: &'a [HostDisclosure], host: &str) -> Vec<&'a str> {
    listed_in_fact(hosts, host, NIC_ENSLAVED)
        .into_iter()
        .filter_map(|nic| nic.split(' ').next())
        .collect()
}

/// The items of `host`'s fact `key`, a list written `a, b, c`.
fn listed_in_fact<'a>(hosts: &'a [HostDisclosure], host: &str, key: &str) -> Vec<&'a str> {
    hosts
        .iter()
        .filter(|h| h.host == host)
        .filter_map(|h| h.facts.get(key)?.value.as_deref())
        .flat_map(|v| v.split(", "))
        .collect()
}

/// The run's declared `--power-model` (`100:200`: idle and busy watts), as its plan keeps
/// it: what a modelled power figure is of, named wherever two of them could be taken for
/// one source (`model system` both, at 60:160 and 50:200 W).
pub fn declared_power_model(run: &RunRecord) -> Option<&str> {
    run.plan.get("run")?.get("power_model")?.as_str()
}

/// A power figure's source and zones as shown (`ipmi-dcmi system`, `rapl
/// package-0+dram-0`): a modelled one with its declared model's watts (`model system
/// (60:160 W)`), wherever it is named (a report's power cell, a compare's source, a
/// TCO's), so that two models are two sources everywhere.
pub fn power_source_named(run: &RunRecord, source: &str, zones: &str, modelled: bool) -> String {
    match declared_power_model(run) {
        Some(m) if modelled => format!("{source} {zones} ({m} W)"),
        _ => format!("{source} {zones}"),
    }
}

/// Above this coefficient of variation (%) of a point's repetitions, its mean is no
/// steady figure: `high_variation`, in a report, a `compare` and a TCO alike.
pub const UNSTEADY_CV_PCT: f64 = 10.0;

/// The coefficient of variation (%) of a point's repetitions `values` where it is above
/// [`UNSTEADY_CV_PCT`], None where they are steady or too few to tell.
pub fn unsteady_cv(values: &[f64]) -> Option<f64> {
    cv_pct(values).filter(|cv| *cv > UNSTEADY_CV_PCT)
}

/// The coefficient of variation (%) of `values` (sample sd over the mean's magnitude),
/// None below two values or at a mean of zero: `--until-cv`'s stopping rule and
/// `high_variation`'s alike.
pub fn cv_pct(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean != 0.0).then(|| 100.0 * var.sqrt() / mean.abs())
}

/// Why some repetitions' CPU and power over the whole test are no figures per unit of
/// their headline: the test ran phases one after another at different rates (mem's
/// `--bw-threads 1,all`, crypto's buffer sizes, a key's signs then its verifies), its CPU
/// and power are of all of them, its headline of one (acceptance L, 3: 117.5% over the
/// 1- and 2-thread kernels against the 2-thread 32.2 GB/s; an RSA key's CPU per sign read
/// 436 µs where its signs took 353 µs, the verifies' CPU in it). None for a test of one
/// phase. The report's efficiency, compare's CPU per unit and a TCO's power take it
/// alike.
pub fn phases_of(results: &[&ResultRecord]) -> Option<String> {
    const SEQUENTIAL: &[&str] = &["threads", "buffer_bytes"];
    let ran = |name: &str| results.iter().any(|r| r.metric(name, &[]).is_some());
    if ran("signs_per_s") && ran("verifies_per_s") {
        return Some(
            "the test ran its phases one after another (signs, then verifies), its CPU and \
             power are over both and its headline the signs' (the signs' own CPU is in \
             signs_per_cpu_s)"
                .into(),
        );
    }
    for key in SEQUENTIAL {
        let mut values: Vec<&str> = results
            .iter()
            .flat_map(|r| r.metrics.iter())
            .filter_map(|m| m.labels.get(*key).map(String::as_str))
            .collect();
        values.sort_by(|a, b| match (a.parse::<f64>(), b.parse::<f64>()) {
            (Ok(x), Ok(y)) => x.total_cmp(&y),
            _ => a.cmp(b),
        });
        values.dedup();
        if values.len() > 1 {
            return Some(format!(
                "the test ran its phases one after another ({} {}), its CPU and power \
                 are over all of them and its headline one phase's",
                key.replace('_', " "),
                values.join(", ")
            ));
        }
    }
    None
}

/// Whether a host's role over a run makes load: a load generator, or a net pair's
/// sender (its process is watched as the generator, [`LOADGEN_PROCESS`]).
pub fn drives_load(roles: &str) -> bool {
    role_includes(roles, "loadgen") || role_includes(roles, "sender")
}

/// Whether a load generator ran on `host`'s kernel: the host itself (`sut+loadgen`,
/// `receiver+sender`), or another host of the run on the same kernel
/// ([`KERNEL_SHARED_WITH`]): a net sender in the next namespace put its CPU in the
/// receiver's "whole SUT host" figure (145% beside the receiver's own 47%).
pub fn loadgen_on_kernel_of(hosts: &[HostDisclosure], host: &str) -> bool {
    let is_loadgen = |name: &str| hosts.iter().any(|h| h.host == name && drives_load(&h.role));
    is_loadgen(host) || kernel_mates(hosts, host).into_iter().any(is_loadgen)
}

/// `host`'s other names of the run on its kernel ([`KERNEL_SHARED_WITH`]).
pub fn kernel_mates<'a>(hosts: &'a [HostDisclosure], host: &str) -> Vec<&'a str> {
    listed_in_fact(hosts, host, KERNEL_SHARED_WITH)
}

/// Whether a host's role over a run (`sut+loadgen`, `receiver+sender`) includes `role`.
pub fn role_includes(roles: &str, role: &str) -> bool {
    roles.split('+').any(|r| r == role)
}

/// Power measured with no load, before the run's load started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdlePower {
    pub host: String,
    pub duration_s: f64,
    pub power: Vec<PowerSummary>,
    /// The host's per-CPU means while idle was measured (index -1: all CPUs), as a
    /// test's summary has them: a busy host reads idle watts that are not idle. Empty:
    /// declared by `--power-model`, or stored before they were kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<CpuUtil>,
    /// Warnings on the figure: `idle_not_idle` when other programs ran while it was
    /// measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<Flag>,
}

/// A whole run: the effective plan, where it ran, and every result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub format_version: u32,
    /// Unique id (sortable: `YYYYmmddTHHMMSS-xxxxxx`).
    pub id: String,
    /// Free-form label given by the user (`--label`), e.g. the platform name.
    #[serde(default)]
    pub label: Option<String>,
    pub created_at: chrono::DateTime<chrono::Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<chrono::DateTime<chrono::Utc>>,
    pub rackbench_version: String,
    /// The command line as typed (secrets redacted).
    pub command: String,
    /// The effective plan, as plain data (secrets redacted).
    pub plan: serde_json::Value,
    pub hosts: Vec<HostDisclosure>,
    #[serde(default)]
    pub idle_power: Vec<IdlePower>,
    pub results: Vec<ResultRecord>,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl RunRecord {
    /// Its status as `runs`, `show` and the report give it ([`Status::with_invalid`]).
    pub fn status_text(&self) -> String {
        let invalid = self.results.iter().filter(|r| r.is_invalid()).count();
        self.status.with_invalid(invalid, self.results.len())
    }
}

#[cfg(test)]
mod tests {
    /// The generators merged: all of them, or the survivors of a loss; a host list as a
    /// string or as an array alike (an array named none, and the figures fell to the
    /// server's host), empty names left out.
    #[test]
    fn merged_generators_are_the_ones_that_reported() {
        use serde_json::json;
        let mut r = crate::ResultRecord {
            workload: "kv".into(),
            test: "get".into(),
            step: 0,
            repetition: 0,
            params: Default::default(),
            settings: Default::default(),
            headline: "ops_per_s".into(),
            started_at: chrono::Utc::now(),
            duration_s: 1.0,
            metrics: vec![],
            missing: vec![],
            histograms: vec![],
            telemetry: vec![],
            telemetry_summary: vec![],
            flags: vec![],
            status: crate::Status::Ok,
            error: None,
        };
        assert_eq!(crate::merged_generators(&r), None);
        for hosts in [json!("rbh2, rbh3,"), json!(["rbh2", "", "rbh3"])] {
            r.params.insert("loadgen_hosts".into(), hosts);
            assert_eq!(crate::merged_generators(&r), Some(vec!["rbh2", "rbh3"]));
        }
        r.metrics = vec![
            crate::Metric::new("loadgen_cpu_s", 4.0, "s").label("host", "rbh2"),
            crate::Metric::new("loadgen_cpu_s", 1.0, "s")
                .label("host", "rbh3")
                .label("until_checkpoint_s", "4.0"),
        ];
        assert_eq!(crate::merged_generators(&r), Some(vec!["rbh2"]));
    }

    /// An escape sequence, a newline and a right-to-left override from a stored label
    /// reach a terminal escaped.
    #[test]
    fn printable_escapes_controls_and_bidi_overrides() {
        assert_eq!(
            super::printable("a\u{1b}[2Jb\nc\u{202e}d\u{2067}e"),
            "a\\u{1b}[2Jb\\nc\\u{202e}d\\u{2067}e"
        );
        assert_eq!(super::printable("plain ünï"), "plain ünï");
    }

    use super::*;

    /// A run that ran to its end with every result invalid reads so, not `ok` alone
    /// (acceptance, s31: `runs` said `ok, 1 of 1 invalid`, show and the report `ok`).
    #[test]
    fn a_runs_status_says_how_many_results_are_invalid() {
        assert_eq!(Status::Ok.with_invalid(0, 3), "ok");
        assert_eq!(Status::Ok.with_invalid(1, 1), "ok, 1 of 1 invalid");
        assert_eq!(
            Status::Interrupted.with_invalid(2, 3),
            "interrupted, 2 of 3 invalid"
        );
    }

    /// `host.kernel_shared_with` names this machine by its hostname, as the tables do;
    /// other facts read as stored.
    #[test]
    fn a_fact_naming_hosts_names_them_as_the_tables_do() {
        let local = HostDisclosure {
            host: "local".into(),
            role: "controller".into(),
            facts: BTreeMap::from([("os.hostname".to_string(), Fact::known("vm"))]),
        };
        let hosts = [local];
        let shared = Fact::known("local, rbh2");
        assert_eq!(fact_text(&hosts, KERNEL_SHARED_WITH, &shared), "vm, rbh2");
        assert_eq!(fact_text(&hosts, "os.kernel", &shared), "local, rbh2");
    }

    /// A result's power on a host taking load holds a generator's work: a server with
    /// its generator, or a net receiver whose sender in that pair ran on its kernel (the
    /// test hosts' namespaces). A matrix's receiver on a machine of its own does not,
    /// though it sends in other pairs; a generator alone does not.
    #[test]
    fn whose_power_holds_the_generators_work() {
        let host = |name: &str, role: &str, mates: &str| HostDisclosure {
            host: name.into(),
            role: role.into(),
            facts: BTreeMap::from([(KERNEL_SHARED_WITH.to_string(), Fact::known(mates))]),
        };
        let pair = |s: &str, r: &str| -> ResultRecord {
            serde_json::from_value(serde_json::json!({
                "workload": "net", "test": "tcp", "step": 0, "repetition": 0,
                "params": {"sender_host": s, "receiver_host": r}, "headline": "x",
                "started_at": "2026-01-01T00:00:00Z", "duration_s": 1.0, "metrics": [],
                "missing": [], "histograms": [], "telemetry": [], "telemetry_summary": [],
                "flags": [], "status": "ok",
            }))
            .unwrap()
        };
        let one_kernel = [
            host("a", "receiver+sender", "b"),
            host("b", "receiver+sender", "a"),
        ];
        assert!(sender_beside(&one_kernel, &pair("b", "a"), "a"));
        let apart = [
            host("a", "receiver+sender", ""),
            host("b", "receiver+sender", ""),
        ];
        assert!(!sender_beside(&apart, &pair("b", "a"), "a"));
        assert!(!sut_ran_loadgen(&apart, "a"));
        let kv = [host("s", "sut+loadgen", ""), host("g", "loadgen", "")];
        let mut r = pair("x", "y");
        r.params.clear();
        assert!(sender_beside(&kv, &r, "s") && !sender_beside(&kv, &r, "g"));
    }

    #[test]
    fn counted_says_each_item_once_with_its_count() {
        assert_eq!(
            counted(["other_load", "steal", "other_load"]),
            ["other_load x2", "steal"]
        );
        assert!(counted(Vec::<String>::new()).is_empty());
    }

    /// A stream's rate is the end its label says, the receiver's without one; the
    /// spread is of one end's streams only, and none where none was stored.
    #[test]
    fn stream_rates_by_end() {
        let m = |i: usize, g: f64| Metric::new(STREAM_THROUGHPUT, g, "Gbit/s").label("stream", i);
        let metrics = vec![
            Metric::new("throughput_gbit_per_s", 9.0, "Gbit/s"),
            m(0, 4.5),
            m(1, 4.25),
            m(0, 5.0).label("end", "sender"),
            m(1, 4.0).label("end", "sender"),
            m(2, 6.0).label("end", "sender"),
        ];
        assert_eq!(stream_spread(&metrics, None), Some((4.25, 4.5, 2)));
        assert_eq!(stream_spread(&metrics, Some("sender")), Some((4.0, 6.0, 3)));
        assert_eq!(stream_spread(&metrics[..1], None), None);
        assert_eq!(
            net_figure_end(STREAM_THROUGHPUT, &metrics[1].labels),
            PairEnd::Receiver
        );
        assert_eq!(
            net_figure_end(STREAM_THROUGHPUT, &metrics[3].labels),
            PairEnd::Sender
        );
    }

    /// A knob's value is the one given, else the effective setting (a default), else not
    /// known.
    #[test]
    fn a_setting_is_as_given_else_as_it_ran() {
        let mut r: ResultRecord = serde_json::from_value(serde_json::json!({
            "workload": "kv", "test": "get", "step": 0, "repetition": 0,
            "params": {"pipeline": 16}, "headline": "ops_per_s",
            "started_at": "2026-01-01T00:00:00Z", "duration_s": 1.0,
            "metrics": [], "status": "ok"
        }))
        .expect("a record without settings loads");
        assert!(r.settings.is_empty());
        assert_eq!(r.setting("pipeline"), Some(&serde_json::json!(16)));
        assert_eq!(r.setting("clients"), None);
        r.settings.insert("clients".into(), serde_json::json!(50));
        r.settings.insert("pipeline".into(), serde_json::json!(1));
        assert_eq!(r.setting("clients"), Some(&serde_json::json!(50)));
        assert_eq!(r.setting("pipeline"), Some(&serde_json::json!(16)));
    }

    #[test]
    fn metric_lookup_by_labels() {
        let r = ResultRecord {
            workload: "kv".into(),
            test: "set".into(),
            step: 0,
            repetition: 0,
            params: BTreeMap::new(),
            settings: BTreeMap::new(),
            headline: "ops_per_s".into(),
            started_at: chrono::Utc::now(),
            duration_s: 1.0,
            metrics: vec![
                Metric::new("ops_per_s", 5.0, "ops/s").label("instance", 0),
                Metric::new("ops_per_s", 10.0, "ops/s"),
            ],
            missing: vec![],
            histograms: vec![],
            telemetry: vec![],
            telemetry_summary: vec![],
            flags: vec![],
            status: Status::Ok,
            error: None,
        };
        assert_eq!(r.headline_value(), Some(10.0));
        // A record of before settings were kept writes none, and reads back as it was.
        let json = serde_json::to_value(&r).unwrap();
        assert!(json.get("settings").is_none(), "{json}");
        assert_eq!(serde_json::from_value::<ResultRecord>(json).unwrap(), r);
        assert_eq!(
            r.metric("ops_per_s", &[("instance", "0")]).map(|m| m.value),
            Some(5.0)
        );
    }

    /// A search whose every probe met p99<50ms up to --search-max stored 2,000 ops/s as
    /// its headline, which the report, `show` and `compare` read as the rate meeting it,
    /// not a bound. One that found a failing rate is a measurement.
    #[test]
    fn a_search_that_never_missed_is_a_lower_bound() {
        let search = |metrics: Vec<Metric>, flags: Vec<Flag>| -> ResultRecord {
            let mut r: ResultRecord = serde_json::from_value(serde_json::json!({
                "workload": "kv", "test": "search", "step": 0, "repetition": 0,
                "params": {}, "headline": "max_rate_meeting_slo_per_s",
                "started_at": "2026-01-01T00:00:00Z", "duration_s": 1.0,
                "metrics": [], "status": "ok"
            }))
            .unwrap();
            r.metrics = vec![
                Metric::new("demanded_rate_per_s", 1000.0, "req/s")
                    .label("phase", "search")
                    .label("step", 0),
                Metric::new("max_rate_meeting_slo_per_s", 2000.0, "req/s"),
            ];
            r.metrics.extend(metrics);
            r.flags = flags;
            r
        };
        let note =
            "the objective was met at the highest rate allowed (2000/s): raise the maximum rate";
        let bound = search(vec![], vec![Flag::warning("search_limit", note)]);
        assert_eq!(bound.headline_lower_bound().as_deref(), Some(note));
        assert!(search(vec![], vec![])
            .headline_lower_bound()
            .is_some_and(|w| w.contains("--search-max")));
        // A probe missed at 3,000: 2,000 is where the objective stops being met.
        let found = search(
            vec![Metric::new("lowest_failing_rate_per_s", 3000.0, "req/s")],
            vec![],
        );
        assert_eq!(found.headline_lower_bound(), None);
        // Another test's headline is never one.
        let mut ramp = bound.clone();
        ramp.test = "ramp".into();
        assert_eq!(ramp.headline_lower_bound(), None);
    }

    /// A ramp whose server kept up to --ramp-high stored its highest reply rate as its
    /// headline, and compare set 20,000 ops/s of a ramp that never saturated against
    /// 30,000 of one that did as "1.5x". Its peak is at least that; a ramp that
    /// saturated measured it.
    #[test]
    fn a_ramp_that_never_saturated_is_a_lower_bound() {
        let mut ramp: ResultRecord = serde_json::from_value(serde_json::json!({
            "workload": "kv", "test": "ramp", "step": 0, "repetition": 0,
            "params": {}, "headline": "max_reply_rate_per_s",
            "started_at": "2026-01-01T00:00:00Z", "duration_s": 1.0,
            "metrics": [], "status": "ok",
            "missing": [{"name": "saturation_rate_per_s",
                "reason": "the server kept up to the highest demanded rate (20000/s): raise --ramp-high"}]
        }))
        .unwrap();
        ramp.metrics = vec![
            Metric::new("demanded_rate_per_s", 20000.0, "req/s")
                .label("phase", "ramp")
                .label("step", 0),
            Metric::new("max_reply_rate_per_s", 19990.0, "req/s"),
        ];
        let why = ramp.headline_lower_bound().expect("a bound");
        assert!(
            why.contains("never saturated") && why.contains("--ramp-high"),
            "{why}"
        );
        let mut saturated = ramp.clone();
        saturated.missing.clear();
        saturated
            .metrics
            .push(Metric::new("saturation_rate_per_s", 25000.0, "req/s"));
        assert_eq!(saturated.headline_lower_bound(), None);
    }
}
