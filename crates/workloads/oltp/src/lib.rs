//! The `oltp` workload: TPC-C on PostgreSQL and on MariaDB/MySQL, natively (METHODS.md
//! section 1). One model over both engines: the transactions' inputs, the data generator,
//! the consistency conditions and the figures are written once; what differs per engine
//! (connect, DDL, bulk load, the server-side transactions, counters) is behind the
//! traits of [`backend`] ([`pg`], [`mariadb`]).
//!
//! Pipeline: a server ([`server`]: throwaway cluster, kept cluster dir, or `--dsn`) ->
//! a build ([`populate`]: the nine tables loaded with COPY in parallel, indexes after) ->
//! virtual users ([`txn`]: the five transactions as one-round-trip server functions,
//! driven by the engine's session executor) -> results (NOPM from the district counters
//! as HammerDB does, TPM from this database's commit+rollback counters, per-transaction
//! latency histograms, the spec's run-validity ratios) -> a consistency check
//! ([`check`]: clause 3.3.2) that marks the result invalid when it fails.
//!
//! Several databases run at once (`--databases N`, each with its own virtual users;
//! metrics labelled `db=N` and aggregated), and `vus` is a sweepable flag, so a
//! concurrency sweep (`--vus 1,2,5,10,20`) is the runner's ordinary sweep.
//!
//! Across hosts, each part runs where it belongs, and the controller joins them:
//! - the plan (this file): flags, [`Config`], validation, read alike by all the others;
//! - the [`service`] on the system under test: the PostgreSQL server (launched there,
//!   listening where the load generators reach it, or `--dsn`'s), the build loaded next
//!   to it, the consistency check;
//! - the [`driver`] on each load generator: its share of the virtual users against the
//!   service's databases, returning the exact load outcome and its validity counters;
//! - the [`controller`] ([`Oltp`], the `Workload`): starts the service, spreads each test
//!   across the generators and merges what they measured into one result.
//!
//! A password (`--dsn`'s, PGPASSWORD or the [`pgpass`] file's, or the one made for a
//! launched server's run) never appears in endpoints, facts, stored
//! parameters or a command line: it reaches the service and the drivers inside their
//! parameters only (which travel in the agent protocol's frames).

pub mod backend;
pub mod check;
pub mod controller;
pub mod driver;
pub mod mariadb;
pub mod mariadb_server;
mod monitor;
pub mod pg;
pub mod pgpass;
pub mod populate;
pub mod random;
mod results;
pub mod schema;
pub mod server;
pub mod service;
pub mod space;
pub mod target;
pub mod txn;

use secrecy::{ExposeSecret, SecretString};
use std::path::Path;

use anyhow::{bail, Context};
use engine::capacity_tests::{self, CapacityConfig, CapacityDefaults};
use engine::workload::Params;
use engine::Ctx;
use model::Flag;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use crate::controller::Oltp;
pub use crate::target::Target;
use crate::txn::Mix;

/// Flags of `rackbench run oltp`. Ids are the plan keys; sweepable knobs are strings the
/// runner parses (`--vus 1,2,5,10,20`, `--databases 1..8`).
#[derive(clap::Args, Debug, Default)]
pub struct Flags {
    /// Database engine: postgresql or mariadb (mysql is taken as mariadb) [default: the
    /// --dsn's scheme (mysql://, mariadb://), else postgresql]
    #[arg(long, value_name = "ENGINE")]
    pub engine: Option<String>,
    /// TPC-C warehouses per database [default: 1]
    #[arg(long, value_name = "N")]
    pub warehouses: Option<String>,
    /// Virtual users per database, each with a home warehouse (sweepable: 1,2,5,10,20) [default: 4]
    #[arg(long, value_name = "N")]
    pub vus: Option<String>,
    /// Databases driven at once, each its own TPC-C schema and users (sweepable: 1..8) [default: 1]
    #[arg(long, value_name = "N")]
    pub databases: Option<String>,
    /// Measured duration in seconds, after the ramp-up [default: 60]
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<String>,
    /// Ramp-up in seconds before measuring (HammerDB's rampup) [default: 10]
    #[arg(long, value_name = "SECONDS")]
    pub rampup: Option<String>,
    /// Mix in percent: New-Order,Payment,Order-Status,Delivery,Stock-Level, or a named
    /// mix: tpcc (TPC-C's card deck, 10,10,1,1,1 of 23), read-mostly (4,4,44,4,44); each
    /// user deals it from a shuffled deck [default: tpcc]
    #[arg(long, value_name = "NO,P,OS,D,SL|NAME")]
    pub mix: Option<String>,
    /// Latency thresholds for the "% of transactions over" buckets (the Aerospike study's
    /// table), over all transaction types [default: 1ms,10ms,100ms]
    #[arg(
        long = "latency-thresholds",
        id = "latency_thresholds",
        value_name = "LIST"
    )]
    pub latency_thresholds: Option<String>,
    /// Use the spec's keying and think times (5.2.5.7); off by default, as in HammerDB
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub keying_think: Option<String>,
    /// Open loop: offer this many transactions per second in total (coordinated-omission
    /// corrected latency); closed loop when absent
    #[arg(long, value_name = "TXN_PER_S")]
    pub rate: Option<String>,
    /// Open-loop arrivals: constant or poisson [default: constant]
    #[arg(long, value_name = "KIND")]
    pub arrival: Option<String>,
    /// Use this server instead of launching one: a libpq connection string (keyword/value
    /// or URI), or mysql://user@host:port/db (mariadb://, ?socket=PATH) for MariaDB. Its
    /// password is never stored or printed; with none, PGPASSWORD or the password file
    /// (PGPASSFILE, ~/.pgpass) is used, as libpq would, or MYSQL_PWD for MariaDB
    #[arg(long, value_name = "CONNSTRING")]
    pub dsn: Option<String>,
    /// Use (or create and keep) the PostgreSQL cluster in this directory, so one build
    /// serves many runs (see `rackbench oltp build`)
    #[arg(long, value_name = "DIR")]
    pub cluster_dir: Option<String>,
    /// Rebuild the schema even when a build with these warehouses exists
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub rebuild: Option<String>,
    /// Run the consistency check (clause 3.3.2) after the run, and before it on a build
    /// it reuses [default: true]
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub check: Option<String>,
    /// Launched PostgreSQL: shared_buffers (refused with --engine mariadb or --dsn) [default: 256MB]
    #[arg(long, value_name = "SIZE")]
    pub shared_buffers: Option<String>,
    /// Launched PostgreSQL: fsync on/off (refused with --engine mariadb or --dsn) [default: on]
    #[arg(long, value_name = "BOOL")]
    pub fsync: Option<String>,
    /// Launched PostgreSQL: synchronous_commit (refused with --engine mariadb or --dsn) [default: on]
    #[arg(long, value_name = "VALUE")]
    pub synchronous_commit: Option<String>,
    /// Launched PostgreSQL: extra settings, name=value (repeatable). A comma followed by
    /// name= begins another setting (work_mem=64MB,jit=off is two, search_path=a,b one);
    /// a value holding an = (user=%u,db=%d) runs to the end: give it alone or last
    #[arg(long, value_name = "NAME=VALUE")]
    pub pg_setting: Option<Vec<String>>,
    /// Launched MariaDB: innodb_buffer_pool_size [default: 256M]
    #[arg(long, value_name = "SIZE")]
    pub innodb_buffer_pool_size: Option<String>,
    /// Launched MariaDB: innodb_flush_log_at_trx_commit, 1 (durable), 2 or 0 [default: 1]
    #[arg(long, value_name = "0|1|2")]
    pub innodb_flush_log_at_trx_commit: Option<String>,
    /// Launched MariaDB: extra mariadbd options, name=value (repeatable). A comma followed
    /// by name= begins another option (sql_mode=A,B is one); a value holding an =
    /// (optimizer_switch=mrr=on,mrr_cost_based=off) runs to the end: give it alone or last
    #[arg(long, value_name = "NAME=VALUE")]
    pub mariadb_setting: Option<Vec<String>>,
    /// Pin the launched server to these CPUs (0-3,8)
    #[arg(long, value_name = "CPUS")]
    pub server_cpus: Option<String>,
    /// Pin the virtual users to these CPUs
    #[arg(long, value_name = "CPUS")]
    pub client_cpus: Option<String>,
    /// Connections loading in parallel during a build [default: online CPUs]
    #[arg(long, value_name = "N")]
    pub load_threads: Option<String>,
    /// Random seed (inputs, build data) [default: 1]
    #[arg(long, value_name = "N")]
    pub seed: Option<String>,
    /// Tests, in order: tpcc, and the capacity tests ramp, search (highest rate meeting
    /// --slo) and levels, which offer transactions open loop [default: tpcc]
    #[arg(short = 't', long, value_name = "LIST")]
    pub tests: Option<String>,
    #[command(flatten)]
    pub capacity: capacity_tests::CapacityArgs,
}

/// The capacity tests' scale for oltp: a ramp to 2000 txn/s in steps of 100, 5 s each;
/// the search's objective p90<500ms (no TPC-C mix meets p99<1ms: New-Order alone takes
/// milliseconds). TPC-C's own constraint, 90% within 5 s, is a latency as long as a
/// default step: a search against it would tell little.
pub const CAPACITY: CapacityDefaults = CapacityDefaults {
    typical_rate_per_s: 2000.0,
    step_duration_s: 5.0,
    rate_unit: "txn/s",
    slo: "p90<500ms",
    wait_modes: false,
    more_load: "--vus",
};

const TESTS: [&str; 4] = ["tpcc", "ramp", "search", "levels"];

/// Keys whose values are lists by nature (not sweeps).
pub const LIST_KEYS: &[&str] = &[
    "tests",
    "mix",
    "pg_setting",
    "mariadb_setting",
    "server_cpus",
    "client_cpus",
    "levels",
    "latency_thresholds",
];

/// Keys whose text is taken whole ([`engine::Registration::text_keys`]): never a sweep,
/// never a number or a boolean. A plan's `pg_setting = "search_path=a,b"` was split at
/// its comma into two broken settings before oltp saw it; oltp splits a server setting's
/// string itself ([`split_settings`]), where it knows a comma inside a value.
const TEXT_KEYS: &[&str] = &["dsn", "cluster_dir", "pg_setting", "mariadb_setting"];

/// Knobs whose values are strings that may be swept (`--synchronous-commit on,off`,
/// `--engine postgres,mariadb`), so they cannot be text keys: the runner reads each
/// value as a flag's text, `off` as false and `1073741824` as a number, and a point's
/// value is turned back into the server's word here (false is `off`).
const SWEPT_STRING_KEYS: &[&str] = &[
    "engine",
    "innodb_buffer_pool_size",
    "arrival",
    "shared_buffers",
    "synchronous_commit",
];

/// The effective configuration of one sweep point (plain data, echoed into results).
/// Its Debug hides a `--dsn`'s password.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// None: from the DSN's scheme, else PostgreSQL (see [`Config::engine_kind`]).
    pub engine: Option<String>,
    pub warehouses: u32,
    pub vus: u32,
    pub databases: u32,
    pub duration: f64,
    pub rampup: f64,
    pub mix: Vec<f64>,
    pub keying_think: bool,
    pub rate: Option<f64>,
    pub arrival: String,
    pub dsn: Option<String>,
    pub cluster_dir: Option<String>,
    pub rebuild: bool,
    pub check: bool,
    pub shared_buffers: String,
    pub fsync: bool,
    pub synchronous_commit: String,
    pub pg_setting: Vec<String>,
    pub innodb_buffer_pool_size: String,
    pub innodb_flush_log_at_trx_commit: u8,
    pub mariadb_setting: Vec<String>,
    pub server_cpus: String,
    pub client_cpus: String,
    pub load_threads: Option<u32>,
    pub seed: u64,
    pub tests: Vec<String>,
    pub latency_thresholds: Vec<String>,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        model::secrets::Redacted(self).fmt(f)
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            engine: None,
            warehouses: 1,
            vus: 4,
            databases: 1,
            duration: 60.0,
            rampup: 10.0,
            mix: txn::TPCC_DECK.to_vec(),
            keying_think: false,
            rate: None,
            arrival: "constant".into(),
            dsn: None,
            cluster_dir: None,
            rebuild: false,
            check: true,
            shared_buffers: "256MB".into(),
            fsync: true,
            synchronous_commit: "on".into(),
            pg_setting: Vec::new(),
            innodb_buffer_pool_size: "256M".into(),
            innodb_flush_log_at_trx_commit: 1,
            mariadb_setting: Vec::new(),
            server_cpus: String::new(),
            client_cpus: String::new(),
            load_threads: None,
            seed: 1,
            tests: vec!["tpcc".into()],
            latency_thresholds: vec!["1ms".into(), "10ms".into(), "100ms".into()],
        }
    }
}

fn scalar_to_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(true) => "on".into(),
        Value::Bool(false) => "off".into(),
        other => other.to_string(),
    }
}

/// The `name=value` settings in one `--pg-setting` or `--mariadb-setting` text (a flag's,
/// a plan's string or an item of its list). A comma begins another setting only where a
/// name and `=` follow it, so `work_mem=64MB,jit=off` is two settings and
/// `search_path=bench,public` one. A value that holds an `=` itself (MariaDB's
/// `optimizer_switch=index_merge=off,mrr=on`, a `log_line_prefix` with `user=%u,db=%d`)
/// runs to the end of the text: its commas cannot be told from separators, and such a
/// setting given alone or last is taken whole.
fn split_settings(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, _) in text.match_indices(',') {
        let setting = &text[start..i];
        if setting
            .split_once('=')
            .is_some_and(|(_, v)| v.contains('='))
        {
            break;
        }
        if begins_with_name(&text[i + 1..]) {
            out.push(setting.trim().to_string());
            start = i + 1;
        }
    }
    out.push(text[start..].trim().to_string());
    out
}

/// Whether `text` begins with a setting's name and `=`: a letter or `_`, then letters,
/// digits, `_`, `.` (PostgreSQL's `auto_explain.log_min_duration`) or `-` (MariaDB's
/// `innodb-log-file-size`), spaces allowed around them as in `name = value`.
fn begins_with_name(text: &str) -> bool {
    let Some((name, _)) = text.split_once('=') else {
        return false;
    };
    let name = name.trim();
    name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// `pg_setting` or `mariadb_setting` as a list of settings, each text given split by
/// [`split_settings`]; anything but text is left for the config's own error.
fn settings_value(v: &Value) -> Value {
    let texts = match v {
        Value::Array(a) => a.as_slice(),
        v => std::slice::from_ref(v),
    };
    Value::Array(
        texts
            .iter()
            .flat_map(|t| match t {
                Value::String(s) => split_settings(s).into_iter().map(Value::String).collect(),
                t => vec![t.clone()],
            })
            .collect(),
    )
}

/// `--mix` as five numbers: a named mix's weights, or the percentages given (as one
/// string, or a list the runner split at the commas).
fn mix_value(v: &Value) -> anyhow::Result<Value> {
    let named = match v {
        Value::String(s) => Some(s.as_str()),
        Value::Array(a) if a.len() == 1 => a[0].as_str(),
        _ => None,
    };
    if let Some(name) = named.filter(|s| s.chars().any(|c| c.is_ascii_alphabetic())) {
        return match txn::named_mix(name) {
            Some(w) => Ok(serde_json::json!(w)),
            None => bail!(
                "--mix {name:?}: not a named mix (tpcc, read-mostly) nor five percentages \
                 such as 45,43,4,4,4"
            ),
        };
    }
    match v {
        Value::String(s) => engine::plan::parse_value(s),
        Value::Array(a) => a
            .iter()
            .map(|x| match x {
                Value::String(s) => engine::plan::parse_value(s),
                x => Ok(x.clone()),
            })
            .collect::<anyhow::Result<Vec<_>>>()
            .map(Value::Array),
        v => Ok(v.clone()),
    }
}

/// The longest a test or its ramp-up may run: a week (a TPC-C soak may run past a day).
const MAX_SECONDS: f64 = 604_800.0;

impl Config {
    /// The latency thresholds in nanoseconds, sorted, without duplicates.
    pub fn thresholds_ns(&self) -> Vec<u64> {
        engine::histlog::thresholds_ns(&self.latency_thresholds)
    }

    /// From a sweep point's map (values as the runner parsed them, or raw strings).
    /// Unknown keys and bad values are errors that name the key.
    pub fn from_map(map: &Map<String, Value>) -> anyhow::Result<Config> {
        let mut m = Map::new();
        for (k, v) in map {
            let v = match (k.as_str(), v) {
                ("pg_setting" | "mariadb_setting", v) => settings_value(v),
                (k, Value::String(s)) if TEXT_KEYS.contains(&k) => Value::String(s.clone()),
                (k, v) if SWEPT_STRING_KEYS.contains(&k) => Value::String(scalar_to_string(v)),
                ("server_cpus" | "client_cpus", Value::Array(a)) => {
                    Value::String(a.iter().map(scalar_to_string).collect::<Vec<_>>().join(","))
                }
                ("server_cpus" | "client_cpus", v) => Value::String(scalar_to_string(v)),
                ("mix", v) => mix_value(v)?,
                ("tests" | "latency_thresholds", Value::String(s)) => Value::Array(
                    s.split(',')
                        .map(|p| Value::String(p.trim().into()))
                        .collect(),
                ),
                ("fsync", Value::String(s)) if s == "on" || s == "off" => Value::Bool(s == "on"),
                (_, Value::String(s)) => engine::plan::parse_value(s)?,
                (_, v) => v.clone(),
            };
            m.insert(k.clone(), v);
        }
        let cfg: Config =
            engine::plan::config_from_params_beside("oltp", &m, &capacity_tests::KEYS)?;
        cfg.validate()?;
        Ok(cfg)
    }

    pub fn validate(&self) -> anyhow::Result<()> {
        if self.warehouses == 0 {
            bail!("--warehouses must be at least 1");
        }
        if self.vus == 0 {
            bail!("--vus must be at least 1");
        }
        if self.load_threads == Some(0) {
            bail!("--load-threads must be at least 1 (leave it out for one per online CPU)");
        }
        if self.databases == 0 || self.databases > 64 {
            bail!("--databases must be between 1 and 64");
        }
        // Up to a week: a TPC-C soak may run past a day.
        engine::workload::check_duration("oltp", self.duration, MAX_SECONDS)?;
        // 1e20 panicked after the server was launched; 1e9 ramped up for 31 years.
        if !(0.0..=MAX_SECONDS).contains(&self.rampup) {
            bail!("--rampup must be between 0 and {MAX_SECONDS} seconds (a week)");
        }
        if let Some(r) = self.rate {
            if r.is_nan() || r <= 0.0 {
                bail!("--rate must be a positive number of transactions per second");
            }
            engine::load::check_rate(r, "--rate")?;
        }
        if self.arrival != "constant" && self.arrival != "poisson" {
            bail!("--arrival must be `constant` or `poisson`");
        }
        if self.dsn.is_some() && self.cluster_dir.is_some() {
            bail!("give either --dsn or --cluster-dir, not both");
        }
        if self.tests.is_empty() {
            bail!("no tests given (--tests tpcc)");
        }
        for t in &self.tests {
            if !TESTS.contains(&t.as_str()) {
                bail!("unknown oltp test `{t}`: choose from {}", TESTS.join(", "));
            }
            if t != "tpcc" && self.keying_think {
                bail!("the `{t}` test offers transactions at set rates: leave out --keying-think (its waits would cap the rate)");
            }
        }
        let settings = (self.pg_setting.iter().map(|s| ("--pg-setting", s))).chain(
            self.mariadb_setting
                .iter()
                .map(|s| ("--mariadb-setting", s)),
        );
        for (flag, s) in settings {
            let Some((_, value)) = s.split_once('=') else {
                bail!("{flag} wants name=value, got `{s}`");
            };
            // A doubled or trailing comma (`work_mem=4MB,,jit=off`, `jit=off,`) stays in
            // the value it follows, as a comma inside a value must: the server would fail
            // to start on it with a message far from here.
            if value.contains(',') && value.split(',').any(|p| p.trim().is_empty()) {
                bail!("{flag} `{s}` has an empty item (a doubled or trailing comma): remove the extra comma");
            }
        }
        if self.innodb_flush_log_at_trx_commit > 2 {
            bail!("--innodb-flush-log-at-trx-commit must be 0, 1 or 2");
        }
        if self.engine_kind()? == backend::EngineKind::Mariadb {
            if self.cluster_dir.is_some() {
                bail!("--cluster-dir keeps a PostgreSQL cluster; with --engine mariadb give a kept server with --dsn mysql://user@host:port/tpcc");
            }
            if !self.pg_setting.is_empty() {
                bail!("--pg-setting is for PostgreSQL; with --engine mariadb use --mariadb-setting name=value");
            }
        } else if !self.mariadb_setting.is_empty() {
            bail!("--mariadb-setting is for MariaDB (--engine mariadb); PostgreSQL takes --pg-setting");
        }
        Mix::new(&self.mix)?;
        let arrival = (self.arrival != "constant").then_some(&*self.arrival);
        engine::capacity_tests::refuse_open_loop_flags(
            &self.tests,
            self.rate.is_some(),
            &[("--arrival", arrival)],
            "each virtual user starts when its last transaction is done",
        )?;
        engine::histlog::check_thresholds(&self.latency_thresholds)?;
        engine::launch::parse_cpu_list(&self.server_cpus)?;
        engine::launch::parse_cpu_list(&self.client_cpus)?;
        Ok(())
    }

    pub(crate) fn settings(&self) -> anyhow::Result<server::Settings> {
        Ok(server::Settings {
            shared_buffers: self.shared_buffers.clone(),
            fsync: self.fsync,
            synchronous_commit: self.synchronous_commit.clone(),
            // Every user and database, plus the monitor, the loaders and some slack.
            max_connections: (self.vus * self.databases + 2 * self.databases + 20).max(100),
            extra: self
                .pg_setting
                .iter()
                .filter_map(|s| s.split_once('='))
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .collect(),
            cpus: engine::launch::parse_cpu_list(&self.server_cpus)?,
        })
    }

    /// The engine: `--engine`, else the DSN's scheme, else PostgreSQL. An `--engine`
    /// that disagrees with the DSN's scheme is an error.
    pub fn engine_kind(&self) -> anyhow::Result<backend::EngineKind> {
        let from_dsn = self.dsn.as_deref().and_then(backend::EngineKind::from_dsn);
        match (&self.engine, from_dsn) {
            (Some(e), d) => {
                let k = backend::EngineKind::parse(e)?;
                if let Some(d) = d.filter(|d| *d != k) {
                    bail!(
                        "--engine {e} but --dsn is a {} URL: leave out --engine, or give a {} DSN",
                        d.label(),
                        k.label()
                    );
                }
                if k == backend::EngineKind::Mariadb && self.dsn.is_some() && d.is_none() {
                    bail!("with --engine mariadb, --dsn is a URL: mysql://user@host:port/tpcc");
                }
                Ok(k)
            }
            (None, Some(d)) => Ok(d),
            (None, None) => Ok(backend::EngineKind::Postgresql),
        }
    }

    /// A launched MariaDB's settings.
    pub(crate) fn mariadb_settings(&self) -> anyhow::Result<mariadb_server::Settings> {
        Ok(mariadb_server::Settings {
            buffer_pool: self.innodb_buffer_pool_size.clone(),
            flush_log_at_trx_commit: self.innodb_flush_log_at_trx_commit,
            max_connections: (self.vus * self.databases + 2 * self.databases + 20).max(151),
            extra: self
                .mariadb_setting
                .iter()
                .filter_map(|s| s.split_once('='))
                .map(|(k, v)| (k.trim().replace('_', "-"), v.trim().to_string()))
                .collect(),
            cpus: engine::launch::parse_cpu_list(&self.server_cpus)?,
        })
    }

    /// The effective config as stored (the DSN's password redacted).
    /// The settings a result stores: the knobs of a server rackbench launches only when
    /// it launches one, and only its engine's. A `--dsn` server's own settings are what
    /// it ran with, read from it (its disclosure), not rackbench's defaults: a run on a
    /// server with fsync off was stored as "fsync true" beside a launched one
    /// (acceptance pass J, 1).
    pub fn echo(&self) -> Value {
        let mut c = self.clone();
        c.dsn = c.dsn.map(|d| model::redact_secrets(&d));
        let mut v = serde_json::to_value(c).unwrap_or(Value::Null);
        const PG: [&str; 4] = [
            "shared_buffers",
            "fsync",
            "synchronous_commit",
            "pg_setting",
        ];
        const MARIADB: [&str; 3] = [
            "innodb_buffer_pool_size",
            "innodb_flush_log_at_trx_commit",
            "mariadb_setting",
        ];
        let kind = self.engine_kind().ok();
        let not_ours: Vec<&str> = match (&self.dsn, kind) {
            (Some(_), _) => PG
                .iter()
                .chain(&MARIADB)
                .chain(&["server_cpus", "cluster_dir"])
                .copied()
                .collect(),
            (None, Some(backend::EngineKind::Mariadb)) => PG.to_vec(),
            (None, _) => MARIADB.to_vec(),
        };
        if let Value::Object(m) = &mut v {
            for k in not_ours {
                m.remove(k);
            }
        }
        v
    }
}

/// Registry entry for `oltp`.
pub fn registration() -> engine::Registration {
    engine::Registration {
        name: "oltp",
        about: "TPC-C on PostgreSQL or MariaDB: NOPM/TPM, per-transaction latency, consistency check, databases x users",
        list_keys: LIST_KEYS,
        text_keys: TEXT_KEYS,
        flags: |c| {
            capacity_tests::document_defaults(<Flags as clap::Args>::augment_args(c), &CAPACITY)
        },
        build: |m| Ok(Box::new(Oltp::from_params(m)?)),
        service: Some(service::start_service),
        has_server: true,
        driver: Some(driver::drive),
        programs: || {
            let pg = |p| server::find_pg_binary(p).ok();
            let maria = |p| mariadb_server::find_binary(p).ok();
            vec![
                ("initdb", pg("initdb")),
                ("postgres", pg("postgres")),
                ("mariadb-install-db", maria("mariadb-install-db")),
                ("mariadbd", maria("mariadbd")),
            ]
        },
        lengthen: "--duration",
    }
}

/// Keys the controller adds to the parameters of a service or a driver job, never a
/// user's: refused in a plan, taken out before the rest is read as a [`Config`].
pub(crate) mod job_keys {
    /// The password for a `--dsn` that names none (PGPASSWORD or MYSQL_PWD on the
    /// controller), or the run's for a launched server.
    pub const PASSWORD: &str = "password";
    /// A driver's first virtual user's index among every user of a database.
    pub const FIRST_VU: &str = "first_vu";
    /// Each database's build constant C_LOAD (the drivers draw the run's C from it).
    pub const C_LOAD: &str = "c_load";
    /// Addresses the launched server admits besides its subnet (the load generators').
    pub const ADMIT: &str = "admit";
    pub const ALL: [&str; 4] = [PASSWORD, FIRST_VU, C_LOAD, ADMIT];
}

/// A password held as a secret, where it is handed to what logs in with it.
pub(crate) fn exposed(p: &Option<SecretString>) -> Option<&str> {
    p.as_ref().map(|p| p.expose_secret())
}

/// One sweep point's knobs, validated: the controller, the service and every driver
/// read their parameters through this, so they cannot disagree on a default.
#[derive(Debug, Clone)]
pub struct Plan {
    pub cfg: Config,
    /// The capacity tests' knobs (split off before `Config` reads the rest).
    pub cap: CapacityConfig,
    /// What the controller added for a service or a driver (see `job_keys`).
    pub password: Option<SecretString>,
    pub first_vu: u32,
    pub c_load: Vec<u32>,
    pub admit: Vec<String>,
}

impl Plan {
    /// The password to log in with, where the service and the drivers hand it on.
    pub fn password(&self) -> Option<&str> {
        exposed(&self.password)
    }

    /// A sweep point's parameters as a user gave them (no job keys).
    pub fn from_params(p: &Params) -> anyhow::Result<Plan> {
        for k in job_keys::ALL {
            if p.contains_key(k) {
                bail!("oltp: unknown parameter `{k}` (see `rackbench run oltp --help`)");
            }
        }
        let plan = Plan::from_job_params(p)?;
        refuse_settings_that_do_not_apply(p, &plan.cfg)?;
        Ok(plan)
    }

    /// The parameters of a service or driver job: a user's, plus the job keys.
    pub fn from_job_params(p: &Params) -> anyhow::Result<Plan> {
        let (mut rest, cap) = capacity_tests::split_params("oltp", p)?;
        let password = match rest.remove(job_keys::PASSWORD) {
            Some(Value::String(s)) => Some(SecretString::from(s)),
            Some(_) => bail!("oltp: the job's password is not a string"),
            None => None,
        };
        let first_vu = match rest.remove(job_keys::FIRST_VU) {
            Some(v) => serde_json::from_value(v).context("oltp: the job's first_vu")?,
            None => 0,
        };
        let c_load = match rest.remove(job_keys::C_LOAD) {
            Some(v) => serde_json::from_value(v).context("oltp: the job's c_load")?,
            None => Vec::new(),
        };
        let admit = match rest.remove(job_keys::ADMIT) {
            Some(v) => serde_json::from_value(v).context("oltp: the job's admit")?,
            None => Vec::new(),
        };
        let cfg = Config::from_map(&rest)?;
        cap.validate(&cfg.tests, &CAPACITY)?;
        Ok(Plan {
            cfg,
            cap,
            password,
            first_vu,
            c_load,
            admit,
        })
    }
}

/// The settings of a server rackbench launches, per engine: (plan key, flag).
const PG_SERVER_KEYS: [(&str, &str); 4] = [
    ("shared_buffers", "--shared-buffers"),
    ("fsync", "--fsync"),
    ("synchronous_commit", "--synchronous-commit"),
    ("pg_setting", "--pg-setting"),
];
const MARIADB_SERVER_KEYS: [(&str, &str); 3] = [
    ("innodb_buffer_pool_size", "--innodb-buffer-pool-size"),
    (
        "innodb_flush_log_at_trx_commit",
        "--innodb-flush-log-at-trx-commit",
    ),
    ("mariadb_setting", "--mariadb-setting"),
];

/// A launched server's setting the user gave (not a default) where it would be silently
/// ignored: one engine's on the other engine, or any with `--dsn` (a server rackbench
/// does not launch, which runs with its own settings), `--server-cpus` among them. An
/// error naming where it applies.
fn refuse_settings_that_do_not_apply(p: &Params, cfg: &Config) -> anyhow::Result<()> {
    let engine = cfg.engine_kind()?;
    let given = |keys: &[(&'static str, &'static str)]| -> Option<&'static str> {
        keys.iter()
            .find(|(k, _)| p.contains_key(*k))
            .map(|(_, flag)| *flag)
    };
    let (own, other) = match engine {
        backend::EngineKind::Postgresql => (&PG_SERVER_KEYS[..], &MARIADB_SERVER_KEYS[..]),
        backend::EngineKind::Mariadb => (&MARIADB_SERVER_KEYS[..], &PG_SERVER_KEYS[..]),
    };
    if let Some(flag) = given(other) {
        return Err(match engine {
            backend::EngineKind::Postgresql => anyhow::anyhow!(
                "{flag} sets up a launched MariaDB server (--engine mariadb), and this run is \
                 on PostgreSQL: leave it out, or give --engine mariadb (PostgreSQL's are \
                 --shared-buffers, --fsync, --synchronous-commit and --pg-setting)"
            ),
            backend::EngineKind::Mariadb => anyhow::anyhow!(
                "{flag} sets up a launched PostgreSQL server, and this run is on MariaDB \
                 (--engine mariadb): leave it out (MariaDB's are --innodb-buffer-pool-size, \
                 --innodb-flush-log-at-trx-commit and --mariadb-setting)"
            ),
        });
    }
    if cfg.dsn.is_some() {
        // No server is launched to pin: refused as kv and http refuse it with --target.
        if !engine::launch::parse_cpu_list(&cfg.server_cpus)?.is_empty() {
            engine::plan::refuse_launch_settings(
                &["--server-cpus"],
                "--dsn",
                &format!("{} server", engine.label()),
            )?;
        }
        if let Some(flag) = given(own) {
            bail!(
                "{flag} sets up a {} server rackbench launches, and --dsn names a server it \
                 does not launch (which runs with its own settings): leave {flag} out and set \
                 it on that server, or leave out --dsn to have rackbench launch one",
                engine.label()
            );
        }
    }
    Ok(())
}

/// Turn check results into flags: a broken condition makes the result invalid; a check
/// that could not run is a warning (the figures stand unverified).
pub fn check_flags(r: anyhow::Result<Vec<(String, Vec<check::CheckResult>)>>) -> Vec<Flag> {
    match r {
        Ok(dbs) => dbs
            .iter()
            .flat_map(|(db, res)| {
                res.iter().filter(|c| !c.passed()).map(move |c| {
                    Flag::invalid(
                        "consistency",
                        format!("database {db}: TPC-C consistency {}", c.failure()),
                    )
                })
            })
            .collect(),
        Err(e) => vec![Flag::warning(
            "consistency_not_checked",
            format!("the consistency check could not run: {e:#}"),
        )],
    }
}

/// `rackbench oltp build`: create (or reuse) a build that later runs use. Returns one
/// line per database.
pub fn build_command(cfg: &Config, force: bool, ctx: &Ctx) -> anyhow::Result<Vec<String>> {
    if cfg.dsn.is_none() && cfg.cluster_dir.is_none() {
        bail!(
            "say where the build should live: --dir DIR (a cluster rackbench creates and keeps) \
             or --dsn 'host=... dbname=...'; then run with the same --cluster-dir/--dsn"
        );
    }
    let mut t = Target::open(cfg, true)?;
    let threads = cfg
        .load_threads
        .map_or_else(engine::launch::online_cpus, |n| n as usize);
    // A build reused here is checked below, every condition said with the others'.
    let built = t.ensure_built(cfg.warehouses, threads, cfg.seed, force, false, &|m| {
        ctx.note(m)
    })?;
    let fresh = built.iter().any(|(_, _, i)| i.is_some());
    let checks = t.check(fresh)?;
    let mut lines = Vec::new();
    for ((db, m, info), (_, res)) in built.iter().zip(&checks) {
        let failed: Vec<String> = res
            .iter()
            .filter(|c| !c.passed())
            .map(|c| c.id.to_string())
            .collect();
        lines.push(format!(
            "{db}: {} warehouses, {}; consistency {}",
            m.warehouses,
            match info {
                Some(i) => format!("loaded in {:.1} s, indexed in {:.1} s", i.load_s, i.index_s),
                None => "reused".into(),
            },
            if failed.is_empty() {
                "ok".to_string()
            } else {
                format!("FAILED ({})", failed.join(", "))
            }
        ));
    }
    t.stop();
    Ok(lines)
}

/// `rackbench oltp check`: the consistency conditions of every database.
pub fn check_command(
    cfg: &Config,
    initial: bool,
) -> anyhow::Result<Vec<(String, Vec<check::CheckResult>)>> {
    if cfg.dsn.is_none() && cfg.cluster_dir.is_none() {
        bail!("say which build to check: --dir DIR (from `rackbench oltp build --dir`) or --dsn");
    }
    let mut t = Target::open(cfg, false)?;
    let r = t.check(initial);
    t.stop();
    r
}

/// Is a MariaDB server installed here (for tests that skip without one)?
pub fn mariadb_available() -> bool {
    mariadb_server::available()
}

/// Is a PostgreSQL server installed here (for tests that skip without one)?
pub fn postgres_available() -> bool {
    server::find_pg_binary("initdb").is_ok() && server::find_pg_binary("postgres").is_ok()
}

/// The data directory of a kept cluster (`oltp build --dir`), as a path.
pub fn cluster_dir(cfg: &Config) -> Option<&Path> {
    cfg.cluster_dir.as_deref().map(Path::new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plan(v: Value) -> anyhow::Result<Plan> {
        Plan::from_params(v.as_object().expect("an object"))
    }

    /// With --dsn rackbench launches no server, yet --server-cpus was checked against the
    /// system under test's CPUs (and then pinned nothing): refused now, as kv and http
    /// refuse it with --target, saying it applies only to a server rackbench launches.
    #[test]
    fn server_cpus_with_a_dsn_is_refused_as_with_a_target() {
        let e = plan(json!({"dsn": "host=db.example dbname=tpcc", "server_cpus": "0-1"}))
            .expect_err("refused");
        assert_eq!(
            format!("{e:#}"),
            "--server-cpus sets up the PostgreSQL server rackbench launches, and --dsn names a \
             server it does not launch (which runs as it was set up): leave --server-cpus out \
             (and set that server up yourself), or leave out --dsn to have rackbench launch \
             the PostgreSQL server"
        );
        let e = plan(json!({"dsn": "mysql://u@db.example:3306/tpcc", "server_cpus": [0]}))
            .expect_err("refused");
        assert!(
            format!("{e:#}").starts_with("--server-cpus sets up the MariaDB server"),
            "{e:#}"
        );
        // What a --dsn run still uses, and --server-cpus where rackbench launches.
        plan(json!({"dsn": "host=db.example dbname=tpcc", "client_cpus": "0"})).unwrap();
        plan(json!({"server_cpus": "0"})).unwrap();
        plan(json!({"cluster_dir": "/nonexistent/kept", "server_cpus": "0"})).unwrap();
    }

    /// oltp's duration had only to be above 0, where the other timed workloads need
    /// 0.1 s: `--duration 1e-9` would store a TPM from no transaction. It is the shared
    /// check now, with its message.
    #[test]
    fn a_duration_too_short_for_a_rate_is_refused_as_elsewhere() {
        for d in [0.0, 1e-9, 0.05, 1e9] {
            let e = plan(json!({ "duration": d })).expect_err("refused");
            assert!(
                format!("{e:#}").starts_with("oltp: `duration` = "),
                "{d}: {e:#}"
            );
        }
        plan(json!({"duration": 0.1})).unwrap();
    }

    /// `--rampup 1e20` panicked once the server was up; `1e9` would ramp up for 31 years.
    #[test]
    fn a_rampup_past_a_week_is_refused() {
        for r in [-1.0, 604_801.0, 1e20] {
            let e = plan(json!({ "rampup": r })).expect_err("refused");
            assert!(
                format!("{e:#}").contains("--rampup must be between 0 and 604800"),
                "{e:#}"
            );
        }
        plan(json!({ "rampup": 0.0 })).unwrap();
    }

    /// `--load-threads 0` built with one connection and stored 0.
    #[test]
    fn no_load_threads_is_refused() {
        let e = plan(json!({ "load_threads": 0 })).expect_err("refused");
        assert!(
            format!("{e:#}").contains("--load-threads must be at least 1"),
            "{e:#}"
        );
        plan(json!({ "load_threads": 1 })).unwrap();
    }

    /// An empty item in a settings text stayed in the value before it (`work_mem=4MB,`,
    /// `off,`) and reached the server, which failed to start on it; it was refused as
    /// `wants name=value` when every comma split.
    #[test]
    fn an_empty_item_in_a_settings_text_is_refused() {
        for text in [
            "work_mem=4MB,,jit=off",
            "jit=off,",
            "search_path=a,,b",
            "search_path=a, ,b",
            "search_path=,a",
        ] {
            let e = plan(json!({ "pg_setting": text })).expect_err(text);
            assert!(
                format!("{e:#}").contains(&format!(
                    "--pg-setting `{}` has an empty item",
                    text.split(",jit").next().unwrap()
                )),
                "{text}: {e:#}"
            );
        }
        plan(json!({ "pg_setting": "search_path=a,b" })).unwrap();
    }

    /// The settings a `--pg-setting` or `--mariadb-setting` text holds. A plan's
    /// `pg_setting = "search_path=a,b"` was split at every comma, and `b` refused as no
    /// `name=value`; a comma begins another setting only where a name and `=` follow it.
    #[test]
    fn a_server_settings_text_is_split_only_where_a_name_follows_a_comma() {
        let pg = |v: Value| {
            let m = json!({ "pg_setting": v });
            Config::from_map(m.as_object().unwrap()).map(|c| c.pg_setting)
        };
        let cases = [
            (json!("search_path=a,b"), vec!["search_path=a,b"]),
            (
                json!("work_mem=4MB,jit=off"),
                vec!["work_mem=4MB", "jit=off"],
            ),
            (
                json!("work_mem=4MB, jit = off"),
                vec!["work_mem=4MB", "jit = off"],
            ),
            (
                json!("search_path=a,b,auto_explain.log_min_duration=0"),
                vec!["search_path=a,b", "auto_explain.log_min_duration=0"],
            ),
            // A value with an `=` of its own runs to the end of the text.
            (
                json!("jit=off,log_line_prefix=%m user=%u,db=%d"),
                vec!["jit=off", "log_line_prefix=%m user=%u,db=%d"],
            ),
            // A list's items (a plan's array, a repeated flag) are read alike.
            (
                json!(["search_path=a,b", "work_mem=4MB,jit=off"]),
                vec!["search_path=a,b", "work_mem=4MB", "jit=off"],
            ),
        ];
        for (given, want) in cases {
            assert_eq!(pg(given.clone()).unwrap(), want, "{given}");
        }
        let m = json!({ "pg_setting": "search_path=a,b" });
        let cfg = Config::from_map(m.as_object().unwrap()).unwrap();
        assert_eq!(
            cfg.settings().unwrap().extra,
            [("search_path".to_string(), "a,b".to_string())]
        );
        assert!(pg(json!(",b=1")).is_err());

        let m = json!({
            "engine": "mariadb",
            "mariadb_setting": "sql_mode=STRICT_ALL_TABLES,NO_ZERO_DATE,innodb-log-file-size=1G,\
                                optimizer_switch=mrr=on,mrr_cost_based=off",
        });
        let cfg = Config::from_map(m.as_object().unwrap()).unwrap();
        assert_eq!(
            cfg.mariadb_setting,
            [
                "sql_mode=STRICT_ALL_TABLES,NO_ZERO_DATE",
                "innodb-log-file-size=1G",
                "optimizer_switch=mrr=on,mrr_cost_based=off",
            ]
        );
    }

    /// A plan file's settings as the runner reads them (`normalize`, then `expand` into
    /// points): a server setting's string reaches oltp whole, and a server knob's sweep
    /// stays a sweep of strings, as from the flags.
    #[test]
    fn a_plans_server_settings_keep_their_commas_and_their_sweeps() {
        let reg = registration();
        let points = |plan: Value| {
            let Value::Object(params) = engine::plan::normalize(plan, reg.text_keys) else {
                panic!("not a table");
            };
            engine::plan::expand(&params, reg.list_keys)
                .unwrap()
                .iter()
                .map(|p| Plan::from_params(p).map(|p| p.cfg))
                .collect::<anyhow::Result<Vec<_>>>()
        };
        let cfgs = points(json!({
            "pg_setting": "search_path=bench,public,work_mem=64MB",
            "synchronous_commit": "on,off",
            "shared_buffers": "128MB",
        }))
        .unwrap();
        assert_eq!(cfgs.len(), 2);
        for (cfg, commit) in cfgs.iter().zip(["on", "off"]) {
            assert_eq!(
                cfg.pg_setting,
                ["search_path=bench,public", "work_mem=64MB"]
            );
            assert_eq!(cfg.synchronous_commit, commit);
            assert_eq!(cfg.shared_buffers, "128MB");
        }
        let dsn = "postgresql://bench@db1,db2/tpcc";
        let cfgs = points(json!({ "dsn": dsn })).unwrap();
        assert_eq!(cfgs.len(), 1);
        assert_eq!(cfgs[0].dsn.as_deref(), Some(dsn));
        let cfgs = points(
            json!({ "engine": "postgres,mariadb", "arrival": "constant,poisson", "rate": 100 }),
        )
        .unwrap();
        let swept: Vec<_> = cfgs
            .iter()
            .map(|c| (c.engine.as_deref().unwrap(), c.arrival.as_str()))
            .collect();
        assert_eq!(
            swept,
            [
                ("postgres", "constant"),
                ("mariadb", "constant"),
                ("postgres", "poisson"),
                ("mariadb", "poisson"),
            ]
        );
    }

    /// A job's plan holds the run's password for the service and the drivers to log in
    /// with, and its Debug does not show it.
    #[test]
    fn a_job_plans_debug_hides_the_password() {
        let p = json!({ job_keys::PASSWORD: "Zq9run", "vus": 2 });
        let job = Plan::from_job_params(p.as_object().unwrap()).unwrap();
        assert_eq!(job.password(), Some("Zq9run"));
        assert!(!format!("{job:?}").contains("Zq9"), "{job:?}");
        // Nor a --dsn's.
        let dsn = json!({"dsn": "host=db.example password=s3cret dbname=tpcc"});
        let user = plan(dsn).unwrap();
        assert!(!format!("{user:?}").contains("s3cret"), "{user:?}");
        // The user's own parameters cannot carry it.
        assert!(plan(p).is_err());
    }
}
