//! The `kv` workload: Redis protocol SET/GET (and a SET:GET ratio mix) with
//! redis-benchmark's knobs and short flags, against N redis-server instances rackbench
//! launches and pins itself, or against given endpoints. The engine owns the load loop;
//! this crate owns the protocol (`resp`), the servers (`server`) and what the results mean.

pub mod resp;
pub mod server;

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;
use engine::capacity;
use engine::capacity_tests::{self, CapacityConfig, CapacityDefaults};
use engine::load::{run_stream, LoadShape, LoadSpec, StopAfter};
use engine::workload::{Ctx, Params, Registration, StepOutput, Workload};
use model::{Fact, Flag, Metric};
use serde::{Deserialize, Serialize};

use resp::{Mix, Resp, CLASS_NAMES, GET, PING, SET};

/// The flags of `rackbench run kv`. Flag ids are the parameter keys of plans; numeric
/// knobs take lists and ranges (`-P 1,100`, `--instances 1..4`) which become sweeps.
#[derive(Args, Debug, Serialize)]
pub struct Flags {
    /// Parallel connections in total (redis-benchmark -c) [default: 50]
    #[arg(short = 'c', long = "clients", id = "clients", value_name = "N")]
    pub clients: Option<String>,
    /// Total requests per test (redis-benchmark -n) [default: 100000]
    #[arg(short = 'n', long = "requests", id = "requests", value_name = "N")]
    pub requests: Option<String>,
    /// Run each test for this many seconds instead of -n
    #[arg(long, id = "duration", value_name = "SECS")]
    pub duration: Option<String>,
    /// Keyspace: random keys in 0..N-1 (redis-benchmark -r) [default: 10000]
    #[arg(short = 'r', long = "keyspace", id = "keyspace", value_name = "N")]
    pub keyspace: Option<String>,
    /// Value size in bytes (redis-benchmark -d) [default: 3]
    #[arg(
        short = 'd',
        long = "data-size",
        id = "data_size",
        value_name = "BYTES"
    )]
    pub data_size: Option<String>,
    /// Pipeline depth (redis-benchmark -P) [default: 1]
    #[arg(short = 'P', long = "pipeline", id = "pipeline", value_name = "N")]
    pub pipeline: Option<String>,
    /// Tests to run, in order: set, get, mix (SET:GET --ratio), ping [default: set,get]
    #[arg(short = 't', long = "tests", id = "tests", value_name = "LIST")]
    pub tests: Option<String>,
    /// SET:GET ratio of the `mix` test (memtier --ratio) [default: 1:10]
    #[arg(long, id = "ratio", value_name = "S:G")]
    pub ratio: Option<String>,
    /// Keep-alive: 1 = reuse connections, 0 = reconnect for every request (redis-benchmark -k) [default: 1]
    #[arg(short = 'k', long = "keepalive", id = "keepalive", value_name = "0|1")]
    pub keepalive: Option<String>,
    /// Warm-up before measuring each test, seconds [default: 0]
    #[arg(long, id = "warmup", value_name = "SECS")]
    pub warmup: Option<String>,
    /// Load-generator threads [default: 1]
    #[arg(long, id = "threads", value_name = "N")]
    pub threads: Option<String>,
    /// Random seed (keys, mix) [default: 1]
    #[arg(long, id = "seed", value_name = "N")]
    pub seed: Option<String>,
    /// Open loop: offer this many requests/s in total (latency from intended send times)
    #[arg(long, id = "rate", value_name = "PER_SEC")]
    pub rate: Option<String>,
    /// Open-loop arrivals: constant or poisson [default: constant]
    #[arg(long, id = "arrival", value_name = "KIND")]
    pub arrival: Option<String>,
    /// redis-server instances to launch, one pinned per CPU [default: 1]
    #[arg(long, id = "instances", value_name = "N")]
    pub instances: Option<String>,
    /// CPUs for the instances, e.g. 0-3 (instance i on the i-th) [default: 0,1,2,...]
    #[arg(long = "server-cpus", id = "server_cpus", value_name = "CPULIST")]
    pub server_cpus: Option<String>,
    /// CPUs for the load-generator threads, e.g. 1 [default: not pinned]
    #[arg(long = "client-cpus", id = "client_cpus", value_name = "CPULIST")]
    pub client_cpus: Option<String>,
    /// Use existing servers instead of launching (repeatable): host:port
    #[arg(long = "target", id = "targets", value_name = "HOST:PORT", action = clap::ArgAction::Append)]
    pub targets: Option<Vec<String>>,
    /// redis-server binary to launch [default: redis-server from PATH]
    #[arg(long = "redis-server", id = "redis_server", value_name = "PATH")]
    pub redis_server: Option<String>,
    /// Check every GET reply against the value SET wrote [default: true]
    #[arg(long, id = "verify", value_name = "BOOL")]
    pub verify: Option<String>,
    #[command(flatten)]
    pub capacity: capacity_tests::CapacityArgs,
}

/// One sweep point's configuration (plain data, echoed into results).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct KvConfig {
    pub clients: usize,
    pub requests: u64,
    pub duration: Option<f64>,
    pub keyspace: u64,
    pub data_size: usize,
    pub pipeline: usize,
    pub tests: Vec<String>,
    pub ratio: String,
    pub keepalive: u8,
    pub warmup: f64,
    pub threads: usize,
    pub seed: u64,
    pub rate: Option<f64>,
    pub arrival: String,
    pub instances: usize,
    pub server_cpus: Vec<serde_json::Value>,
    pub client_cpus: Vec<serde_json::Value>,
    pub targets: Vec<String>,
    pub redis_server: String,
    pub verify: bool,
}

impl Default for KvConfig {
    fn default() -> Self {
        KvConfig {
            clients: 50,
            requests: 100_000,
            duration: None,
            keyspace: 10_000,
            data_size: 3,
            pipeline: 1,
            tests: vec!["set".into(), "get".into()],
            ratio: "1:10".into(),
            keepalive: 1,
            warmup: 0.0,
            threads: 1,
            seed: 1,
            rate: None,
            arrival: "constant".into(),
            instances: 1,
            server_cpus: Vec::new(),
            client_cpus: Vec::new(),
            targets: Vec::new(),
            redis_server: "redis-server".into(),
            verify: true,
        }
    }
}

/// CPU lists arrive as numbers (`0,1` parsed as a list) or strings (`0-3`).
fn cpu_list(values: &[serde_json::Value], what: &str) -> anyhow::Result<Vec<usize>> {
    let out = engine::launch::cpus_from_values(values, what)?;
    engine::launch::check_cpus(&out, what)?;
    Ok(out)
}

impl KvConfig {
    fn validate(&self) -> anyhow::Result<()> {
        if self.clients == 0 {
            bail!("clients (-c) must be at least 1");
        }
        if self.pipeline == 0 {
            bail!("pipeline (-P) must be at least 1");
        }
        if self.data_size == 0 || self.data_size > 512 * 1024 * 1024 {
            bail!("data_size (-d) must be 1 byte .. 512 MiB");
        }
        if self.threads == 0 {
            bail!("threads must be at least 1");
        }
        if self.instances == 0 && self.targets.is_empty() {
            bail!("instances must be at least 1 (or give --target)");
        }
        if self.keepalive > 1 {
            bail!("keepalive (-k) is 1 (keep connections) or 0 (reconnect per request)");
        }
        if self.requests == 0 && self.duration.is_none() {
            bail!("requests (-n) must be at least 1 (or give --duration)");
        }
        if let Some(r) = self.rate {
            if r <= 0.0 || !r.is_finite() {
                bail!("rate must be a positive number of requests per second");
            }
        }
        if !["constant", "poisson"].contains(&self.arrival.as_str()) {
            bail!(
                "arrival must be `constant` or `poisson`, not `{}`",
                self.arrival
            );
        }
        for t in &self.tests {
            if !["set", "get", "mix", "ping", "ramp", "search", "levels"].contains(&t.as_str()) {
                bail!(
                    "unknown kv test `{t}`: choose from set, get, mix, ping, ramp, search, levels (-t set,get)"
                );
            }
        }
        if self.tests.is_empty() {
            bail!("no tests given (-t set,get)");
        }
        parse_ratio(&self.ratio)?;
        Ok(())
    }

    fn spec(&self, client_cpus: Vec<usize>) -> LoadSpec {
        LoadSpec {
            shape: match (self.rate, self.arrival.as_str()) {
                (None, _) => LoadShape::Closed,
                (Some(rate), "poisson") => LoadShape::Poisson { rate },
                (Some(rate), _) => LoadShape::Constant { rate },
            },
            stop: match self.duration {
                Some(d) => StopAfter::Duration(Duration::from_secs_f64(d)),
                None => StopAfter::Requests(self.requests),
            },
            warmup: Duration::from_secs_f64(self.warmup.max(0.0)),
            connections: self.clients,
            threads: self.threads,
            pipeline: self.pipeline,
            requests_per_connection: (self.keepalive == 0).then_some(1),
            client_cpus,
            seed: self.seed,
            interval: Duration::from_secs(1),
            sleep_when_idle: false,
        }
    }
}

/// The capacity tests' scale for kv: a ramp to 200k ops/s in 10k steps of 2 s.
pub const CAPACITY: CapacityDefaults = CapacityDefaults {
    typical_rate_per_s: 200_000.0,
    step_duration_s: 2.0,
    rate_unit: "ops/s",
};

fn parse_ratio(s: &str) -> anyhow::Result<f64> {
    let (a, b) = s
        .split_once(':')
        .with_context(|| format!("ratio `{s}` must be SET:GET, e.g. 1:10"))?;
    let a: f64 = a
        .trim()
        .parse()
        .with_context(|| format!("ratio `{s}`: bad SET part"))?;
    let b: f64 = b
        .trim()
        .parse()
        .with_context(|| format!("ratio `{s}`: bad GET part"))?;
    if a < 0.0 || b < 0.0 || a + b == 0.0 {
        bail!("ratio `{s}` needs non-negative parts, not both zero");
    }
    Ok(a / (a + b))
}

/// Registry entry for `kv`.
pub fn registration() -> Registration {
    Registration {
        name: "kv",
        about: "Redis-protocol SET/GET (redis-benchmark's knobs) against launched or given servers",
        list_keys: &["tests", "server_cpus", "client_cpus", "targets", "levels"],
        flags: |c| capacity_tests::document_defaults(<Flags as Args>::augment_args(c), &CAPACITY),
        build: |p| Ok(Box::new(Kv::from_params(p)?)),
        service: None,
        driver: None,
    }
}

/// The kv workload for one sweep point.
pub struct Kv {
    pub cfg: KvConfig,
    server_cpus: Vec<usize>,
    client_cpus: Vec<usize>,
    endpoints: Vec<SocketAddr>,
    instances: Vec<server::Instance>,
    dir: Option<tempfile::TempDir>,
    facts: BTreeMap<String, Fact>,
    /// Capacity found by a `ramp` or `search` test, for a `levels` test after it.
    capacity_found: Option<f64>,
    /// Whether the capacity test under way sleeps between sends (`--wait`).
    sleep_when_idle: bool,
    /// The capacity tests' parameters.
    pub cap: CapacityConfig,
}

impl Kv {
    pub fn from_params(p: &Params) -> anyhow::Result<Kv> {
        let (p, cap) = capacity_tests::split_params("kv", p)?;
        let cfg: KvConfig = engine::plan::config_from_params("kv", &p)?;
        cfg.validate()?;
        cap.validate(&cfg.tests, &CAPACITY)?;
        let server_cpus = cpu_list(&cfg.server_cpus, "server_cpus")?;
        let client_cpus = cpu_list(&cfg.client_cpus, "client_cpus")?;
        Ok(Kv {
            cfg,
            server_cpus,
            client_cpus,
            endpoints: Vec::new(),
            instances: Vec::new(),
            dir: None,
            facts: BTreeMap::new(),
            capacity_found: None,
            sleep_when_idle: false,
            cap,
        })
    }

    /// The endpoints being driven (after prepare).
    pub fn endpoints(&self) -> &[SocketAddr] {
        &self.endpoints
    }

    fn server_counters(&self) -> Option<BTreeMap<String, u64>> {
        let mut total: BTreeMap<String, u64> = BTreeMap::new();
        for ep in &self.endpoints {
            let mut a = server::Admin::connect(*ep).ok()?;
            let info = a.info("commandstats").ok()?;
            for (k, v) in server::command_calls(&info) {
                *total.entry(k).or_insert(0) += v;
            }
        }
        Some(total)
    }
}

impl Workload for Kv {
    fn name(&self) -> &'static str {
        "kv"
    }

    fn tests(&self) -> Vec<String> {
        self.cfg.tests.clone()
    }

    fn prepare(&mut self, ctx: &Ctx) -> anyhow::Result<()> {
        if !self.cfg.targets.is_empty() {
            for t in &self.cfg.targets {
                let addr = t
                    .to_socket_addrs()
                    .with_context(|| format!("--target `{t}` is not host:port"))?
                    .next()
                    .with_context(|| format!("--target `{t}` resolves to no address"))?;
                let mut a = server::Admin::connect(addr)?;
                a.ping().with_context(|| {
                    format!("{addr} did not answer PING: is it a Redis server?")
                })?;
                self.endpoints.push(addr);
            }
            self.facts.insert(
                "server.mode".into(),
                Fact::known("given endpoints (--target)"),
            );
        } else {
            let dir = tempfile::Builder::new()
                .prefix("rackbench-kv-")
                .tempdir()
                .context("creating a temporary directory for redis-server")?;
            let cpus = if self.server_cpus.is_empty() {
                engine::launch::allowed_cpus()
            } else {
                self.server_cpus.clone()
            };
            ctx.note(&format!(
                "launching {} redis-server instance(s) pinned to CPUs {:?}",
                self.cfg.instances,
                (0..self.cfg.instances)
                    .map(|i| cpus[i % cpus.len()])
                    .collect::<Vec<_>>()
            ));
            self.instances = server::launch(
                &self.cfg.redis_server,
                self.cfg.instances,
                &cpus,
                dir.path(),
            )?;
            self.dir = Some(dir);
            for (i, inst) in self.instances.iter().enumerate() {
                self.endpoints.push(inst.addr);
                ctx.watch
                    .watch_process(&format!("server:{i}"), inst.guard.pid());
            }
            self.facts
                .insert("server.mode".into(), Fact::known("launched by rackbench"));
            self.facts.insert(
                "server.instances".into(),
                Fact::known(self.cfg.instances.to_string()),
            );
            self.facts.insert(
                "server.cpus".into(),
                Fact::known(
                    self.instances
                        .iter()
                        .map(|i| i.cpu.map_or("-".into(), |c| c.to_string()))
                        .collect::<Vec<_>>()
                        .join(","),
                ),
            );
            if let Some(v) = server::binary_version(&self.cfg.redis_server) {
                self.facts
                    .insert("software.redis-server.binary".into(), Fact::known(v));
            }
        }
        // What the first server says about itself.
        if let Some(ep) = self.endpoints.first() {
            let mut a = server::Admin::connect(*ep)?;
            let info = a.info("server").unwrap_or_default();
            let version = info.get("redis_version").map_or_else(
                || Fact::unknown("INFO server gave no redis_version"),
                Fact::known,
            );
            self.facts.insert("software.redis-server".into(), version);
            for key in [
                "save",
                "appendonly",
                "io-threads",
                "maxmemory",
                "maxmemory-policy",
                "hz",
            ] {
                let fact = a
                    .config_get(key)
                    .map_or_else(|| Fact::unknown("CONFIG GET refused"), Fact::known);
                self.facts.insert(format!("server.config.{key}"), fact);
            }
        }
        Ok(())
    }

    fn run_test(&mut self, test: &str, ctx: &Ctx) -> anyhow::Result<StepOutput> {
        match test {
            "ramp" | "search" | "levels" => return self.run_capacity(test, ctx),
            _ => {}
        }
        let mix = match test {
            "set" => Mix::Only(SET),
            "get" => Mix::Only(GET),
            "ping" => Mix::Only(PING),
            "mix" => Mix::Ratio {
                set_fraction: parse_ratio(&self.cfg.ratio)?,
            },
            other => bail!("unknown kv test `{other}`"),
        };
        let mut spec = self.cfg.spec(self.client_cpus.clone());
        spec.sleep_when_idle = self.cap.sleep_when_idle(test);
        let before = self.server_counters();
        let (keyspace, size, verify) = (self.cfg.keyspace, self.cfg.data_size, self.cfg.verify);
        let out = run_stream(
            &spec,
            &self.endpoints,
            &CLASS_NAMES,
            |_| Resp::new(mix, keyspace, size, verify),
            &ctx.progress,
        )?;
        let mut step = engine::validity::step_output(&spec, &out, "ops_per_s", "ops/s");

        // Server-side counters against what the generator claims (memtier's self-test).
        if let (Some(b), Some(a)) = (before, self.server_counters()) {
            let delta = |cmd: &str| {
                a.get(cmd)
                    .copied()
                    .unwrap_or(0)
                    .saturating_sub(b.get(cmd).copied().unwrap_or(0))
            };
            let server_calls = delta("set") + delta("get") + delta("ping");
            step.metrics
                .push(Metric::new("server_calls", server_calls as f64, "calls"));
            let claimed = out.total_count();
            let lost: u64 = out.connection_errors.values().sum();
            if spec.warmup.is_zero() && lost == 0 && server_calls != claimed {
                step.flags.push(Flag::warning(
                    "server_counter_mismatch",
                    format!("the servers counted {server_calls} calls, the generator {claimed}"),
                ));
            }
        }
        if test == "get" {
            if let Some(m) = step.metrics.iter().find(|m| m.name == "hit_ratio_pct") {
                if m.value < 90.0 {
                    step.flags.push(Flag::warning(
                        "low_hit_ratio",
                        format!(
                            "only {:.1}% of GETs found their key: run `set` first (-t set,get) or raise -n",
                            m.value
                        ),
                    ));
                }
            }
        }
        // A launched server that died is a failed test, with what was measured kept.
        for inst in &mut self.instances {
            if let Some(why) = inst.guard.exited() {
                step.error = Some(why.clone());
                step.flags.push(Flag::invalid("server_died", why));
            }
        }
        Ok(step)
    }

    fn cleanup(&mut self) {
        for mut inst in self.instances.drain(..) {
            inst.guard.stop(Duration::from_secs(2));
        }
        self.endpoints.clear();
        self.dir = None;
    }

    fn disclosure(&self) -> BTreeMap<String, Fact> {
        self.facts.clone()
    }
}

impl Kv {
    /// One open-loop step of the capacity tests at `rate` requests/s on the `mix`
    /// operations (--ratio), `--step-duration` seconds.
    pub fn measure_rate(&mut self, rate: f64, ctx: &Ctx) -> anyhow::Result<capacity::RateStep> {
        let started = std::time::SystemTime::now();
        let secs = self.cap.step_duration_s(&CAPACITY);
        let mut cfg = self.cfg.clone();
        cfg.rate = Some(rate);
        cfg.duration = Some(secs);
        let mut spec = cfg.spec(self.client_cpus.clone());
        spec.sleep_when_idle = self.sleep_when_idle;
        let mix = Mix::Ratio {
            set_fraction: parse_ratio(&self.cfg.ratio)?,
        };
        let (keyspace, size, verify) = (cfg.keyspace, cfg.data_size, cfg.verify);
        ctx.note(&format!("kv: {rate:.0} ops/s for {secs}s"));
        let out = run_stream(
            &spec,
            &self.endpoints,
            &CLASS_NAMES,
            |_| Resp::new(mix, keyspace, size, verify),
            &ctx.progress,
        )?;
        let mut s = capacity::RateStep::from_outcome(rate, &out);
        s.started_at = Some(started);
        for inst in &mut self.instances {
            if let Some(why) = inst.guard.exited() {
                s.error = Some(why);
            }
        }
        Ok(s)
    }

    fn run_capacity(&mut self, test: &str, ctx: &Ctx) -> anyhow::Result<StepOutput> {
        self.sleep_when_idle = self.cap.sleep_when_idle(test);
        let cap = self.cap.clone();
        let mut found = self.capacity_found;
        let threads = self.cfg.threads;
        let out = capacity_tests::run(
            "kv",
            test,
            &cap,
            &CAPACITY,
            ctx,
            &mut found,
            None,
            threads,
            |rate| self.measure_rate(rate, ctx),
        );
        self.capacity_found = found;
        out
    }
}

impl Drop for Kv {
    fn drop(&mut self) {
        self.cleanup();
    }
}
