//! The `kv` workload: Redis protocol SET/GET (and a SET:GET ratio mix) with
//! redis-benchmark's knobs and short flags, against N redis-server instances rackbench
//! launches and pins itself, or against given endpoints. The engine owns the load loop;
//! this crate owns the protocol (`resp`) and what the results mean.
//!
//! Three parts, each running where it belongs, and the controller that joins them:
//! - the plan (this file): flags, [`KvConfig`], validation, read alike by all the others;
//! - the [`service`] on the system under test: the redis-server instances and their
//!   counters (`server` launches and administers them);
//! - the [`driver`] on each load generator: its share of the clients against the
//!   service's endpoints, returning the exact load outcome;
//! - and the [`controller`] ([`Kv`], the `Workload`), which starts the service, spreads
//!   each test across the generators and merges what they measured.

pub mod auth;
pub mod controller;
pub mod driver;
pub mod resp;
pub mod server;
pub mod service;

use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;
use engine::capacity_tests::{self, CapacityConfig, CapacityDefaults};
use engine::load::{ClientIo, LoadShape, LoadSpec, StopAfter};
use engine::workload::{Params, Registration};
use serde::{Deserialize, Serialize};

use resp::{Mix, GET, PING, SET};

pub use controller::Kv;

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
    /// Requests in flight on each connection, one sent as each reply comes (memtier's --pipeline; redis-benchmark's -P writes N and waits for all N) [default: 1]
    #[arg(short = 'P', long = "pipeline", id = "pipeline", value_name = "N")]
    pub pipeline: Option<String>,
    /// Tests to run, in order: set, get, mix (SET:GET --ratio), ping; ramp, search, levels (capacity tests, whose steps drive the mix) [default: set,get]
    #[arg(short = 't', long = "tests", id = "tests", value_name = "LIST")]
    pub tests: Option<String>,
    /// SET:GET ratio of the `mix` test (memtier --ratio) [default: 1:10]
    #[arg(long, id = "ratio", value_name = "S:G")]
    pub ratio: Option<String>,
    /// Keep-alive: 1 = reuse connections, 0 = reconnect after every -P requests (redis-benchmark -k) [default: 1]
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
    /// The client's system calls in a closed loop: auto (io_uring where the kernel has
    /// it, else epoll), epoll, or io_uring [default: auto]
    #[arg(
        long = "client-io",
        id = "client_io",
        value_name = "auto|epoll|io_uring"
    )]
    pub client_io: Option<String>,
    /// Use existing servers instead of launching (repeatable): host:port
    #[arg(long = "target", id = "targets", value_name = "HOST:PORT", action = clap::ArgAction::Append)]
    pub targets: Option<Vec<String>>,
    /// A --target that needs a password: a file holding it alone, readable by its owner
    /// only (chmod 600), read on each host that connects (never on a command line)
    #[arg(long = "auth-file", id = "auth_file", value_name = "FILE")]
    pub auth_file: Option<String>,
    /// The ACL user to AUTH as with --auth-file's password (redis-cli --user) [default: the default user]
    #[arg(long = "user", id = "user", value_name = "NAME")]
    pub user: Option<String>,
    /// redis-server binary to launch [default: redis-server from PATH]
    #[arg(long = "redis-server", id = "redis_server", value_name = "PATH")]
    pub redis_server: Option<String>,
    /// Check every GET reply against the value SET wrote [default: true]
    #[arg(long, id = "verify", value_name = "BOOL")]
    pub verify: Option<String>,
    /// Latency thresholds for the "% of requests over" buckets (the Aerospike study's
    /// table) [default: 100us,1ms,8ms]
    #[arg(
        long = "latency-thresholds",
        id = "latency_thresholds",
        value_name = "LIST"
    )]
    pub latency_thresholds: Option<String>,
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
    pub client_io: ClientIo,
    pub targets: Vec<String>,
    /// A file holding the password of `targets` (read on each host that connects).
    pub auth_file: Option<String>,
    /// The ACL user of `auth_file`'s password.
    pub user: Option<String>,
    pub redis_server: String,
    pub verify: bool,
    /// `100us`, `1ms`...: the share of requests slower than each is stored.
    pub latency_thresholds: Vec<String>,
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
            client_io: ClientIo::Auto,
            targets: Vec::new(),
            auth_file: None,
            user: None,
            redis_server: "redis-server".into(),
            verify: true,
            latency_thresholds: vec!["100us".into(), "1ms".into(), "8ms".into()],
        }
    }
}

/// One sweep point's knobs, validated: the controller, the service and every driver
/// read the same parameters through this, so they cannot disagree on a default.
#[derive(Debug, Clone)]
pub struct Plan {
    pub cfg: KvConfig,
    /// The capacity tests' knobs (split off before `KvConfig` reads the rest).
    pub cap: CapacityConfig,
    /// Parsed only: whether these CPUs exist is checked on the system under test.
    pub server_cpus: Vec<usize>,
    /// Parsed only: whether these CPUs exist is checked on each load generator.
    pub client_cpus: Vec<usize>,
}

impl Plan {
    pub fn from_params(p: &Params) -> anyhow::Result<Plan> {
        engine::plan::refuse_two_stops(p)?;
        let (p, cap) = capacity_tests::split_params("kv", p)?;
        let cfg: KvConfig =
            engine::plan::config_from_params_beside("kv", &p, &capacity_tests::KEYS)?;
        cfg.validate()?;
        cap.validate(&cfg.tests, &CAPACITY)?;
        let arrival = (cfg.arrival != KvConfig::default().arrival).then_some(&*cfg.arrival);
        capacity_tests::refuse_open_loop_flags(
            &cfg.tests,
            cfg.rate.is_some(),
            &[("--arrival", arrival), ("--wait", cap.wait.as_deref())],
            "each connection sends when its reply is in",
        )?;
        // CPU lists arrive as numbers (`0,1` parsed as a list) or strings (`0-3`).
        let server_cpus = engine::launch::cpus_from_values(&cfg.server_cpus, "server_cpus")?;
        let client_cpus = engine::launch::cpus_from_values(&cfg.client_cpus, "client_cpus")?;
        Ok(Plan {
            cfg,
            cap,
            server_cpus,
            client_cpus,
        })
    }
}

impl KvConfig {
    /// How many servers the load goes to: the --targets given, else the instances
    /// launched.
    pub fn servers(&self) -> usize {
        if self.targets.is_empty() {
            self.instances
        } else {
            self.targets.len()
        }
    }

    /// The thresholds in nanoseconds, sorted, without duplicates.
    pub fn thresholds_ns(&self) -> Vec<u64> {
        engine::histlog::thresholds_ns(&self.latency_thresholds)
    }

    fn validate(&self) -> anyhow::Result<()> {
        if self.clients == 0 {
            bail!("clients (-c) must be at least 1");
        }
        if let Some(d) = self.duration {
            engine::workload::check_duration("kv", d, 86_400.0)?;
        }
        if !(self.warmup >= 0.0 && self.warmup <= 3_600.0) {
            bail!(
                "warmup must be 0 to 3600 seconds, not {} (e.g. --warmup 2)",
                self.warmup
            );
        }
        if self.pipeline == 0 {
            bail!("pipeline (-P) must be at least 1");
        }
        engine::histlog::check_thresholds(&self.latency_thresholds)?;
        if self.data_size == 0 || self.data_size > 512 * 1024 * 1024 {
            bail!("data_size (-d) must be 1 byte .. 512 MiB");
        }
        if self.threads == 0 {
            bail!("threads must be at least 1");
        }
        // It became one key without a word (redis-benchmark's -r 0 is no keyspace at all).
        if self.keyspace == 0 {
            bail!("keyspace (-r) must be at least 1 key (e.g. -r 10000)");
        }
        // A key's number is 12 digits, as redis-benchmark's `key:__rand_int__`: past
        // 10^12 keys would wrap onto the first ones, a smaller keyspace than the one
        // stored, and a GET's hit ratio above its own.
        if self.keyspace > resp::MAX_KEYSPACE {
            bail!(
                "keyspace (-r) can be at most {} keys (a key's number is 12 digits, as \
                 redis-benchmark's); give -r 1000000000000 or less",
                resp::MAX_KEYSPACE
            );
        }
        if self.instances == 0 && self.targets.is_empty() {
            bail!("instances must be at least 1 (or give --target)");
        }
        // One server given twice is one server: counted as two, the run stored
        // `instances 2` and blamed its doubled commandstats on "something else".
        if let Some(t) = engine::plan::first_repeat(&self.targets) {
            bail!("--target {t} is given twice: give each server once");
        }
        if !self.targets.is_empty() {
            let launched = KvConfig::default();
            let given: Vec<&str> = [
                (self.instances != launched.instances, "--instances"),
                (!self.server_cpus.is_empty(), "--server-cpus"),
                (self.redis_server != launched.redis_server, "--redis-server"),
            ]
            .into_iter()
            .filter_map(|(given, flag)| given.then_some(flag))
            .collect();
            engine::plan::refuse_launch_settings(&given, "--target", "redis-server instances")?;
        }
        if self.auth_file.is_some() && self.targets.is_empty() {
            bail!(
                "--auth-file is for a --target whose server needs a password, and the \
                 redis-servers rackbench launches need none (give --target HOST:PORT, or leave out \
                 --auth-file)"
            );
        }
        if self.user.is_some() && self.auth_file.is_none() {
            bail!("--user needs --auth-file FILE, the file holding that user's password");
        }
        if self.keepalive > 1 {
            bail!(
                // Not "-P requests": errors pass through the secret masker, which hides
                // the word after `-P` (ipmitool's password) and printed "-P ***".
                "keepalive (-k) is 1 (keep connections) or 0 (reconnect after every pipeline's worth of requests, --pipeline)"
            );
        }
        if self.requests == 0 && self.duration.is_none() {
            bail!("requests (-n) must be at least 1 (or give --duration)");
        }
        if let Some(r) = self.rate {
            if r <= 0.0 || !r.is_finite() {
                bail!(
                    "rate (--rate) must be a positive number of requests per second, not {r} \
                     (each value of a sweep: start a range above 0, e.g. --rate 10000..100000:+10000)"
                );
            }
            engine::load::check_rate(r, "--rate")?;
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
        // Flags the tests given never read: the run would stand as measured with them.
        let runs = |any: &[&str]| self.tests.iter().any(|t| any.contains(&t.as_str()));
        let capacity = runs(&capacity_tests::TESTS);
        if self.ratio != KvConfig::default().ratio && !runs(&["mix"]) && !capacity {
            bail!(
                "--ratio {} is the SET:GET mix of the `mix` test (and of the capacity tests' \
                 steps), and -t {} runs none of them: add mix to -t, or leave --ratio out",
                self.ratio,
                self.tests.join(",")
            );
        }
        Ok(())
    }

    /// The operations of a load test (`set`, `get`, `mix`, `ping`).
    pub fn mix(&self, test: &str) -> anyhow::Result<Mix> {
        Ok(match test {
            "set" => Mix::Only(SET),
            "get" => Mix::Only(GET),
            "ping" => Mix::Only(PING),
            "mix" => Mix::Ratio {
                set_fraction: parse_ratio(&self.ratio)?,
            },
            other => bail!("unknown kv load test `{other}` (set, get, mix, ping)"),
        })
    }

    pub fn spec(&self, client_cpus: Vec<usize>) -> LoadSpec {
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
            // redis-benchmark -k 0 frees a client once its pending replies are read and
            // makes a new one (clientDone): -P N requests per connection, then reconnect.
            requests_per_connection: (self.keepalive == 0).then_some(self.pipeline as u64),
            client_cpus,
            seed: self.seed,
            interval: Duration::from_secs(1),
            sleep_when_idle: false,
            client_io: self.client_io,
            // The first generator's (a driver sets its own).
            phase: 0.0,
            no_reply_timeout: engine::load::NO_REPLY_TIMEOUT,
        }
    }
}

/// The capacity tests' scale for kv: a ramp to 200k ops/s in 10k steps of 2 s.
pub const CAPACITY: CapacityDefaults = CapacityDefaults {
    typical_rate_per_s: 200_000.0,
    step_duration_s: 2.0,
    rate_unit: "ops/s",
    slo: "p99<1ms",
    wait_modes: true,
    more_load: "--threads or -c",
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
    // NaN and infinity parse as numbers: `nan:1` made the SET share NaN, a mix of GETs
    // alone stored as a mix.
    if !(a >= 0.0 && b >= 0.0 && a.is_finite() && b.is_finite()) || a + b == 0.0 {
        bail!("ratio `{s}` needs finite, non-negative parts, not both zero (e.g. 1:10)");
    }
    Ok(a / (a + b))
}

/// Registry entry for `kv`.
pub fn registration() -> Registration {
    Registration {
        name: "kv",
        about: "Redis-protocol SET/GET (redis-benchmark's knobs) against launched or given servers",
        list_keys: &[
            "tests",
            "server_cpus",
            "client_cpus",
            "targets",
            "levels",
            "latency_thresholds",
        ],
        text_keys: &["auth_file", "user", "redis_server"],
        flags: |c| capacity_tests::document_defaults(<Flags as Args>::augment_args(c), &CAPACITY),
        build: |p| Ok(Box::new(Kv::from_params(p)?)),
        service: Some(service::start_service),
        has_server: true,
        driver: Some(driver::drive),
        programs: || {
            vec![(
                "redis-server",
                engine::launch::find_binary("redis-server", "redis-server").ok(),
            )]
        },
        lengthen: "--duration, or a larger -n",
    }
}

#[cfg(test)]
mod ratio_tests {
    /// `--ratio nan:1` and `1:inf` parsed as numbers and ran GETs alone, stored as a mix
    /// (acceptance pass D, 5).
    #[test]
    fn a_ratio_needs_finite_parts() {
        assert_eq!(super::parse_ratio("1:3").unwrap(), 0.25);
        for bad in ["nan:1", "1:inf", "-1:2", "0:0", "1"] {
            assert!(super::parse_ratio(bad).is_err(), "{bad}");
        }
    }
}
