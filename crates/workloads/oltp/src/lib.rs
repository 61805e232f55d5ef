//! The `oltp` workload: TPC-C on PostgreSQL, natively (METHODS.md section 1).
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

pub mod check;
mod monitor;
pub mod populate;
pub mod random;
mod results;
pub mod schema;
pub mod server;
pub mod target;
pub mod txn;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use engine::capacity::RateStep;
use engine::capacity_tests::{self, CapacityConfig, CapacityDefaults};
use engine::load::{LoadShape, LoadSpec, StopAfter};
use engine::{Ctx, StepOutput, Workload};
use model::Fact;
use model::Flag;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::monitor::{monitor, sample, DbSample};
use crate::populate::BuildMeta;
use crate::server::Server;
pub use crate::target::Target;
use crate::txn::{Counters, Mix, Vu, VuParams, CLASSES};

/// `application_name` of the virtual users' connections (to find them in pg_stat_activity).
const VU_APP_NAME: &str = "rackbench-vu";

/// Flags of `rackbench run oltp`. Ids are the plan keys; sweepable knobs are strings the
/// runner parses (`--vus 1,2,5,10,20`, `--databases 1..8`).
#[derive(clap::Args, Debug, Default)]
pub struct Flags {
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
    /// Mix in percent: New-Order,Payment,Order-Status,Delivery,Stock-Level [default: 45,43,4,4,4]
    #[arg(long, value_name = "NO,P,OS,D,SL")]
    pub mix: Option<String>,
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
    /// Use this server instead of launching one (password never stored or printed)
    #[arg(long, value_name = "CONNSTRING")]
    pub dsn: Option<String>,
    /// Use (or create and keep) the PostgreSQL cluster in this directory, so one build
    /// serves many runs (see `rackbench oltp build`)
    #[arg(long, value_name = "DIR")]
    pub cluster_dir: Option<String>,
    /// Rebuild the schema even when a build with these warehouses exists
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub rebuild: Option<String>,
    /// Run the consistency check (clause 3.3.2) after the run [default: true]
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub check: Option<String>,
    /// Launched server: shared_buffers [default: 256MB]
    #[arg(long, value_name = "SIZE")]
    pub shared_buffers: Option<String>,
    /// Launched server: fsync on/off [default: on]
    #[arg(long, value_name = "BOOL")]
    pub fsync: Option<String>,
    /// Launched server: synchronous_commit [default: on]
    #[arg(long, value_name = "VALUE")]
    pub synchronous_commit: Option<String>,
    /// Launched server: extra settings, name=value (repeatable)
    #[arg(long, value_name = "NAME=VALUE")]
    pub pg_setting: Option<Vec<String>>,
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

/// The capacity tests' scale for oltp: a ramp to 2000 txn/s in steps of 100, 5 s each.
pub const CAPACITY: CapacityDefaults = CapacityDefaults {
    typical_rate_per_s: 2000.0,
    step_duration_s: 5.0,
    rate_unit: "txn/s",
};

const TESTS: [&str; 4] = ["tpcc", "ramp", "search", "levels"];

/// Keys whose values are lists by nature (not sweeps).
pub const LIST_KEYS: &[&str] = &[
    "tests",
    "mix",
    "pg_setting",
    "server_cpus",
    "client_cpus",
    "levels",
];

/// Keys whose values are strings even when they look like numbers or booleans.
const STRING_KEYS: &[&str] = &[
    "arrival",
    "dsn",
    "cluster_dir",
    "shared_buffers",
    "synchronous_commit",
];

/// The effective configuration of one sweep point (plain data, echoed into results).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
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
    pub server_cpus: String,
    pub client_cpus: String,
    pub load_threads: Option<u32>,
    pub seed: u64,
    pub tests: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            warehouses: 1,
            vus: 4,
            databases: 1,
            duration: 60.0,
            rampup: 10.0,
            mix: vec![45.0, 43.0, 4.0, 4.0, 4.0],
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
            server_cpus: String::new(),
            client_cpus: String::new(),
            load_threads: None,
            seed: 1,
            tests: vec!["tpcc".into()],
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

impl Config {
    /// From a sweep point's map (values as the runner parsed them, or raw strings).
    /// Unknown keys and bad values are errors that name the key.
    pub fn from_map(map: &Map<String, Value>) -> anyhow::Result<Config> {
        let mut m = Map::new();
        for (k, v) in map {
            let v = match (k.as_str(), v) {
                (k, v) if STRING_KEYS.contains(&k) => Value::String(scalar_to_string(v)),
                ("server_cpus" | "client_cpus", Value::Array(a)) => {
                    Value::String(a.iter().map(scalar_to_string).collect::<Vec<_>>().join(","))
                }
                ("server_cpus" | "client_cpus", v) => Value::String(scalar_to_string(v)),
                ("mix", Value::String(s)) => engine::plan::parse_value(s)?,
                ("mix", Value::Array(a)) => Value::Array(
                    a.iter()
                        .map(|x| match x {
                            Value::String(s) => engine::plan::parse_value(s),
                            x => Ok(x.clone()),
                        })
                        .collect::<anyhow::Result<_>>()?,
                ),
                ("pg_setting" | "tests", Value::String(s)) => Value::Array(
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
        let cfg: Config = serde_json::from_value(Value::Object(m))
            .map_err(|e| anyhow::anyhow!("oltp: {e} (see `rackbench run oltp --help`)"))?;
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
        if self.databases == 0 || self.databases > 64 {
            bail!("--databases must be between 1 and 64");
        }
        if self.duration.is_nan() || self.duration <= 0.0 {
            bail!("--duration must be a positive number of seconds");
        }
        if self.rampup.is_nan() || self.rampup < 0.0 {
            bail!("--rampup must be zero or more seconds");
        }
        if let Some(r) = self.rate {
            if r.is_nan() || r <= 0.0 {
                bail!("--rate must be a positive number of transactions per second");
            }
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
        for s in &self.pg_setting {
            if !s.contains('=') {
                bail!("--pg-setting wants name=value, got `{s}`");
            }
        }
        Mix::new(&self.mix)?;
        engine::launch::parse_cpu_list(&self.server_cpus)?;
        engine::launch::parse_cpu_list(&self.client_cpus)?;
        Ok(())
    }

    fn settings(&self) -> anyhow::Result<server::Settings> {
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

    /// The effective config as stored (the DSN's password redacted).
    pub fn echo(&self) -> Value {
        let mut c = self.clone();
        c.dsn = c.dsn.map(|d| model::redact_secrets(&d));
        serde_json::to_value(c).unwrap_or(Value::Null)
    }
}

/// Registry entry for `oltp`.
pub fn registration() -> engine::Registration {
    engine::Registration {
        name: "oltp",
        about: "TPC-C on PostgreSQL: NOPM/TPM, per-transaction latency, consistency check, databases x users",
        list_keys: LIST_KEYS,
        flags: |c| {
            capacity_tests::document_defaults(<Flags as clap::Args>::augment_args(c), &CAPACITY)
        },
        build: |m| {
            let (rest, cap) = capacity_tests::split_params("oltp", m)?;
            let cfg = Config::from_map(&rest)?;
            cap.validate(&cfg.tests, &CAPACITY)?;
            let mut o = Oltp::new(cfg)?;
            o.cap = cap;
            Ok(Box::new(o))
        },
        service: None,
        driver: None,
    }
}

/// The workload object for one sweep point.
pub struct Oltp {
    cfg: Config,
    mix: Mix,
    target: Option<Target>,
    metas: Vec<BuildMeta>,
    version: Option<String>,
    /// The capacity tests' parameters.
    cap: CapacityConfig,
    /// Capacity found by a `ramp` or `search` test, for a `levels` test after it.
    capacity_found: Option<f64>,
}

impl Oltp {
    pub fn new(cfg: Config) -> anyhow::Result<Oltp> {
        cfg.validate()?;
        let mix = Mix::new(&cfg.mix)?;
        Ok(Oltp {
            cfg,
            mix,
            target: None,
            metas: Vec::new(),
            version: None,
            cap: CapacityConfig::default(),
            capacity_found: None,
        })
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The launched postmaster's pid (tests kill it to check failure handling).
    pub fn server_pid(&self) -> Option<u32> {
        self.target
            .as_ref()
            .and_then(|t| t.server.as_ref())
            .map(Server::pid)
            .filter(|&p| p != 0)
    }

    /// Connection settings of database `n` (1-based), for tests and tools.
    pub fn db_config(&self, n: usize) -> Option<postgres::Config> {
        let t = self.target.as_ref()?;
        t.dbs.get(n.checked_sub(1)?).map(|d| t.config(d))
    }

    fn class_names(&self) -> Vec<String> {
        let n = self.cfg.databases as usize;
        let mut v = Vec::with_capacity(5 * n);
        for d in 1..=n {
            for c in CLASSES {
                v.push(if n == 1 {
                    c.to_string()
                } else {
                    format!("{c}@db{d}")
                });
            }
        }
        v
    }

    /// Connect every virtual user of every database (the keying/think deadline is set by
    /// the caller).
    #[allow(clippy::type_complexity)]
    fn connect_vus(
        &self,
        target: &Target,
    ) -> anyhow::Result<(
        Vec<Vu>,
        Vec<Arc<Counters>>,
        Option<Arc<Mutex<Vec<hdrhistogram::Histogram<u64>>>>>,
    )> {
        let cfg = &self.cfg;
        let ndb = target.dbs.len();
        let w = cfg.warehouses;
        let mut rng = SmallRng::seed_from_u64(cfg.seed ^ 0x7470_6363);
        let db_latency = cfg.keying_think.then(|| {
            Arc::new(Mutex::new(
                (0..5 * ndb)
                    .map(|_| model::hist::new_latency_histogram())
                    .collect::<Vec<_>>(),
            ))
        });
        let counters: Vec<Arc<Counters>> =
            (0..ndb).map(|_| Arc::new(Counters::default())).collect();
        let mut sessions = Vec::with_capacity(ndb * cfg.vus as usize);
        for (i, db) in target.dbs.iter().enumerate() {
            let consts = random::Constants::for_run(&mut rng, self.metas[i].c_load);
            let mut vcfg = target.config(db);
            vcfg.application_name(VU_APP_NAME);
            for v in 0..cfg.vus {
                let p = VuParams {
                    home_w: v % w + 1,
                    stock_district: (v / w) % random::DISTRICTS + 1,
                    warehouses: w,
                    consts,
                    mix: self.mix.clone(),
                    class_offset: 5 * i,
                    counters: counters[i].clone(),
                    waits: cfg.keying_think,
                    deadline: None,
                    db_latency: db_latency.clone(),
                };
                sessions.push(Vu::connect(&vcfg, p).with_context(|| {
                    format!("connecting virtual user {} of database {db}", v + 1)
                })?);
            }
        }
        Ok((sessions, counters, db_latency))
    }

    /// One open-loop step of the capacity tests: `rate` transactions/s in total across
    /// every user (the configured mix), `--step-duration` seconds, no ramp-up.
    pub fn measure_rate(&mut self, rate: f64, ctx: &Ctx) -> anyhow::Result<RateStep> {
        let target = self
            .target
            .as_ref()
            .context("oltp: prepare was not called")?;
        let secs = self.cap.step_duration_s(&CAPACITY);
        let started = std::time::SystemTime::now();
        let (mut sessions, _counters, _) = self.connect_vus(target)?;
        let deadline = Instant::now() + Duration::from_secs_f64(secs) + Duration::from_millis(200);
        for s in &mut sessions {
            s.set_deadline(deadline);
        }
        let spec = LoadSpec {
            shape: if self.cfg.arrival == "poisson" {
                LoadShape::Poisson { rate }
            } else {
                LoadShape::Constant { rate }
            },
            stop: StopAfter::Duration(Duration::from_secs_f64(secs)),
            warmup: Duration::ZERO,
            connections: sessions.len(),
            threads: sessions.len(),
            pipeline: 1,
            requests_per_connection: None,
            client_cpus: engine::launch::parse_cpu_list(&self.cfg.client_cpus)?,
            seed: self.cfg.seed,
            interval: Duration::from_secs(1),
            sleep_when_idle: false,
        };
        ctx.note(&format!("oltp: {rate:.0} txn/s for {secs}s"));
        let names = self.class_names();
        let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let out = engine::load::run_sessions(&spec, &name_refs, sessions, &ctx.progress)?;
        let mut step = RateStep::from_outcome(rate, &out);
        step.started_at = Some(started);
        if let Some(why) = self
            .target
            .as_mut()
            .and_then(|t| t.server.as_mut())
            .and_then(Server::exited)
        {
            step.error = Some(why);
        }
        Ok(step)
    }

    fn run_tpcc(&mut self, ctx: &Ctx) -> anyhow::Result<StepOutput> {
        let target = self
            .target
            .as_ref()
            .context("oltp: prepare was not called")?;
        let cfg = &self.cfg;
        let (mut sessions, counters, db_latency) = self.connect_vus(target)?;
        // Keying and think times end just after the run (the load loop starts right after
        // this), so the last waits do not hold it open.
        let deadline = Instant::now()
            + Duration::from_secs_f64(cfg.rampup + cfg.duration)
            + Duration::from_millis(200);
        for s in &mut sessions {
            s.set_deadline(deadline);
        }
        let shape = match (cfg.rate, cfg.arrival.as_str()) {
            (None, _) => LoadShape::Closed,
            (Some(rate), "poisson") => LoadShape::Poisson { rate },
            (Some(rate), _) => LoadShape::Constant { rate },
        };
        let spec = LoadSpec {
            shape,
            stop: StopAfter::Duration(Duration::from_secs_f64(cfg.duration)),
            warmup: Duration::from_secs_f64(cfg.rampup),
            connections: sessions.len(),
            threads: sessions.len(),
            pipeline: 1,
            requests_per_connection: None,
            client_cpus: engine::launch::parse_cpu_list(&cfg.client_cpus)?,
            seed: cfg.seed,
            interval: Duration::from_secs(1),
            sleep_when_idle: false,
        };
        let names = self.class_names();
        let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let cfgs: Vec<postgres::Config> = target.dbs.iter().map(|d| target.config(d)).collect();
        let stop = Arc::new(AtomicBool::new(false));
        let mon = {
            let (stop, watch, rampup) = (stop.clone(), ctx.watch.clone(), spec.warmup);
            let cfgs = cfgs.clone();
            std::thread::spawn(move || monitor(cfgs, rampup, stop, watch))
        };
        let result = engine::load::run_sessions(&spec, &name_refs, sessions, &ctx.progress);
        let t_end = Instant::now();
        stop.store(true, Ordering::Relaxed);
        let mut wins = mon.join().unwrap_or_default();
        let outcome = result?;

        // Final reading after the users disconnected: their backends flush their
        // statistics on exit, so the commit counters are complete.
        for (i, c) in cfgs.iter().enumerate() {
            let Some(win) = wins.get_mut(i) else { continue };
            if win.first.is_none() {
                continue;
            }
            let final_sample = (|| -> anyhow::Result<DbSample> {
                let mut client = server::connect(c)?;
                for _ in 0..100 {
                    let n: i64 = client
                        .query_one(
                            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 \
                             AND datname = current_database()",
                            &[&VU_APP_NAME],
                        )?
                        .get(0);
                    if n == 0 {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                let mut s = sample(&mut client)?;
                s.at = t_end;
                Ok(s)
            })();
            match final_sample {
                Ok(s) => win.last = Some(s),
                Err(e) => {
                    win.error.get_or_insert(format!("{e:#}"));
                }
            }
        }
        let db_lat = db_latency
            .and_then(|a| Arc::try_unwrap(a).ok())
            .and_then(|m| m.into_inner().ok());
        Ok(results::step_output(
            &self.cfg, &self.mix, &outcome, &wins, &counters, db_lat,
        ))
    }
}

impl Workload for Oltp {
    fn name(&self) -> &'static str {
        "oltp"
    }

    fn tests(&self) -> Vec<String> {
        self.cfg.tests.clone()
    }

    fn prepare(&mut self, ctx: &Ctx) -> anyhow::Result<()> {
        let cfg = self.cfg.clone();
        let mut target = Target::open(&cfg, true)?;
        ctx.note(&format!("oltp: {}", target.describe));
        if let Some(pid) = target.server.as_ref().map(Server::pid) {
            ctx.watch.watch_process("postgres", pid);
        }
        let threads = cfg
            .load_threads
            .map_or_else(engine::launch::online_cpus, |t| t.max(1) as usize);
        let built = target.ensure_built(cfg.warehouses, threads, cfg.seed, cfg.rebuild, ctx)?;
        self.metas = built.into_iter().map(|(_, m, _)| m).collect();
        let mut c = server::connect(&target.config(&target.dbs[0]))?;
        self.version = c
            .query_one("SHOW server_version", &[])
            .ok()
            .map(|r| r.get::<_, String>(0));
        self.target = Some(target);
        Ok(())
    }

    fn run_test(&mut self, test: &str, ctx: &Ctx) -> anyhow::Result<StepOutput> {
        match test {
            "tpcc" => self.run_tpcc(ctx),
            "ramp" | "search" | "levels" => {
                let cap = self.cap.clone();
                let mut found = self.capacity_found;
                let vus = (self.cfg.vus as usize) * self.cfg.databases as usize;
                let out = capacity_tests::run(
                    "oltp",
                    test,
                    &cap,
                    &CAPACITY,
                    ctx,
                    &mut found,
                    None,
                    vus,
                    |rate| self.measure_rate(rate, ctx),
                );
                self.capacity_found = found;
                out
            }
            other => bail!(
                "unknown oltp test `{other}`: choose from {}",
                TESTS.join(", ")
            ),
        }
    }

    fn verify(&mut self, ctx: &Ctx) -> anyhow::Result<Vec<Flag>> {
        if !self.cfg.check {
            return Ok(Vec::new());
        }
        let Some(t) = self.target.as_ref() else {
            return Ok(Vec::new());
        };
        ctx.note("oltp: consistency check (clause 3.3.2)");
        Ok(check_flags(t.check(false)))
    }

    fn cleanup(&mut self) {
        if let Some(mut t) = self.target.take() {
            t.stop();
        }
    }

    fn disclosure(&self) -> BTreeMap<String, Fact> {
        let mut m = BTreeMap::new();
        let known = |v: &str| Fact::known(v);
        m.insert(
            "software.postgresql".into(),
            self.version
                .as_deref()
                .map_or_else(|| Fact::unknown("not connected"), known),
        );
        let launched = self.target.as_ref().is_some_and(|t| t.server.is_some());
        if launched {
            m.insert(
                "server.config.shared_buffers".into(),
                known(&self.cfg.shared_buffers),
            );
            m.insert(
                "server.config.fsync".into(),
                known(if self.cfg.fsync { "on" } else { "off" }),
            );
            m.insert(
                "server.config.synchronous_commit".into(),
                known(&self.cfg.synchronous_commit),
            );
            for s in &self.cfg.pg_setting {
                if let Some((k, v)) = s.split_once('=') {
                    m.insert(format!("server.config.{}", k.trim()), known(v.trim()));
                }
            }
        } else {
            m.insert(
                "server.config".into(),
                Fact::unknown("server given by --dsn, not launched"),
            );
        }
        m.insert(
            "oltp.warehouses".into(),
            known(&self.cfg.warehouses.to_string()),
        );
        m.insert(
            "oltp.databases".into(),
            known(&self.cfg.databases.to_string()),
        );
        m
    }
}

impl Drop for Oltp {
    fn drop(&mut self) {
        self.cleanup();
    }
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
                        format!(
                            "database {db}: TPC-C consistency condition {} ({}) fails for {} rows",
                            c.id, c.name, c.violations
                        ),
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
        .map_or_else(engine::launch::online_cpus, |n| n.max(1) as usize);
    let built = t.ensure_built(cfg.warehouses, threads, cfg.seed, force, ctx)?;
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

/// Is a PostgreSQL server installed here (for tests that skip without one)?
pub fn postgres_available() -> bool {
    server::find_pg_binary("initdb").is_ok() && server::find_pg_binary("postgres").is_ok()
}

/// The data directory of a kept cluster (`oltp build --dir`), as a path.
pub fn cluster_dir(cfg: &Config) -> Option<&Path> {
    cfg.cluster_dir.as_deref().map(Path::new)
}
