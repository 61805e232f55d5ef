//! The `http` workload: a native HTTP/1.1 load generator (the engine's shared load loop
//! with [`proto::HttpProtocol`]) against nginx that rackbench launches (default: a static
//! file of a chosen size, workers pinned) or any `--target http://HOST:PORT/PATH`.
//!
//! Tests, in the order given by `--tests`:
//! - `load`: one run, closed loop (wrk-style) or open loop with `--rate` (wrk2-style,
//!   coordinated-omission correct); headline `requests_per_s`.
//! - `ramp`: autobench's rate ramp (`--ramp-low/--ramp-high/--ramp-step`, each step
//!   `--step-duration` s, open loop); headline `max_reply_rate_per_s`, with the saturation
//!   point and the per-step curve (see `engine::capacity`).
//! - `search`: the highest offered rate meeting `--slo p99<1ms`; headline
//!   `max_rate_meeting_slo_per_s`.
//! - `levels`: SPECpower-style 100%..10% of `--capacity` (or of what an earlier `ramp` or
//!   `search` in the same run found) plus active idle; headline `overall_reply_rate_per_w`
//!   (missing, with the reason, where no power is measured).
//!
//! The capacity tests are `engine::capacity_tests` (flags, defaults, driver) around
//! [`Http::measure_rate`], one open-loop step per call; the driver adds what telemetry saw
//! in each step (CPU busy, server CPU, power).

pub mod nginx;
pub mod proto;

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;
use engine::capacity::{self, RateStep};
use engine::capacity_tests::{self, CapacityConfig, CapacityDefaults};
use engine::load::{run_stream, LoadOutcome, LoadShape, LoadSpec, StopAfter};
use engine::workload::{Ctx, Params, Registration, StepOutput, Workload};
use model::{Fact, Flag, Metric};
use serde::{Deserialize, Serialize};

use proto::{HttpProtocol, PathOrder, RequestSet, RequestTemplate, CLASS_NAMES};

/// The flags of `rackbench run http`. Flag ids are the parameter keys of plans; numeric
/// knobs take lists and ranges (`--connections 10,50,100`) which become sweeps.
#[derive(Args, Debug, Serialize)]
pub struct Flags {
    /// Tests to run, in order: load, ramp, search, levels [default: load]
    #[arg(long, id = "tests", value_name = "LIST")]
    pub tests: Option<String>,
    /// Use this server instead of launching nginx: http://HOST[:PORT][/PATH]
    #[arg(long, id = "target", value_name = "URL")]
    pub target: Option<String>,
    /// Connections in total (wrk -c) [default: 50]
    #[arg(short = 'c', long, id = "connections", value_name = "N")]
    pub connections: Option<String>,
    /// Load-generator threads (wrk -t) [default: 1]
    #[arg(short = 't', long, id = "threads", value_name = "N")]
    pub threads: Option<String>,
    /// Seconds of the `load` test (wrk -d) [default: 10]
    #[arg(short = 'd', long, id = "duration", value_name = "SECS")]
    pub duration: Option<String>,
    /// Stop the `load` test after this many requests instead of --duration
    #[arg(short = 'n', long, id = "requests", value_name = "N")]
    pub requests: Option<String>,
    /// Seconds of warm-up before each measurement [default: 1]
    #[arg(long, id = "warmup", value_name = "SECS")]
    pub warmup: Option<String>,
    /// Open loop for `load`: offer this many requests/s in total (wrk2 -R)
    #[arg(short = 'R', long, id = "rate", value_name = "PER_SEC")]
    pub rate: Option<String>,
    /// Open-loop arrivals: constant or poisson (httperf --period=e) [default: constant]
    #[arg(long, id = "arrival", value_name = "KIND")]
    pub arrival: Option<String>,
    /// Requests per connection before reconnecting (httperf --num-calls); 0 = keep-alive for the whole test, 1 = a new connection per request [default: 0]
    #[arg(
        long = "requests-per-connection",
        id = "requests_per_connection",
        value_name = "N"
    )]
    pub requests_per_connection: Option<String>,
    /// HTTP method [default: GET]
    #[arg(long, id = "method", value_name = "METHOD")]
    pub method: Option<String>,
    /// Path to request (repeatable; several are used in turn or at random) [default: /index.html, or the --target URL's path]
    #[arg(long = "path", id = "paths", value_name = "PATH", action = clap::ArgAction::Append)]
    pub paths: Option<Vec<String>>,
    /// How paths are chosen: rotate or random [default: rotate]
    #[arg(long = "path-order", id = "path_order", value_name = "ORDER")]
    pub path_order: Option<String>,
    /// Extra request header `Name: value` (repeatable)
    #[arg(short = 'H', long = "header", id = "headers", value_name = "HEADER", action = clap::ArgAction::Append)]
    pub headers: Option<Vec<String>>,
    /// Request body (sent with Content-Length)
    #[arg(long, id = "body", value_name = "TEXT")]
    pub body: Option<String>,
    /// Request body of this many bytes (instead of --body)
    #[arg(long = "body-size", id = "body_size", value_name = "BYTES")]
    pub body_size: Option<String>,
    /// Size of the static file the launched nginx serves [default: 1024]
    #[arg(long = "file-size", id = "file_size", value_name = "BYTES")]
    pub file_size: Option<String>,
    /// nginx worker processes [default: 1]
    #[arg(long = "server-workers", id = "server_workers", value_name = "N")]
    pub server_workers: Option<String>,
    /// CPUs for nginx's workers, e.g. 0 or 0-3 (worker i on the i-th) [default: not pinned]
    #[arg(long = "server-cpus", id = "server_cpus", value_name = "CPULIST")]
    pub server_cpus: Option<String>,
    /// CPUs for the load-generator threads, e.g. 1 [default: not pinned]
    #[arg(long = "client-cpus", id = "client_cpus", value_name = "CPULIST")]
    pub client_cpus: Option<String>,
    /// nginx binary to launch [default: nginx from PATH]
    #[arg(long, id = "nginx", value_name = "PATH")]
    pub nginx: Option<String>,
    /// Random seed (path choice, Poisson gaps) [default: 1]
    #[arg(long, id = "seed", value_name = "N")]
    pub seed: Option<String>,
    /// Latency thresholds for "% of requests over" buckets [default: 1ms,8ms,64ms]
    #[arg(
        long = "latency-thresholds",
        id = "latency_thresholds",
        value_name = "LIST"
    )]
    pub latency_thresholds: Option<String>,
    /// Write the latency histograms as an HdrHistogram interval log to this file (one interval per step)
    #[arg(long, id = "hlog", value_name = "FILE")]
    pub hlog: Option<String>,
    #[command(flatten)]
    pub capacity: capacity_tests::CapacityArgs,
}

/// A value given as a number or a string (`10`, `"10"`, `"p99<1ms"`, `true`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Scalar {
    Num(f64),
    Bool(bool),
    Text(String),
}

impl Scalar {
    fn text(&self) -> String {
        match self {
            Scalar::Num(n) if n.fract() == 0.0 && n.abs() < 1e15 => format!("{}", *n as i64),
            Scalar::Num(n) => n.to_string(),
            Scalar::Bool(b) => b.to_string(),
            Scalar::Text(s) => s.clone(),
        }
    }
}

/// A list given as one value or several (`"/a"`, `["/a", "/b"]`, `0`, `"0-3"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum List {
    One(Scalar),
    Many(Vec<Scalar>),
}

impl Default for List {
    fn default() -> Self {
        List::Many(Vec::new())
    }
}

impl List {
    fn items(&self) -> Vec<String> {
        match self {
            List::One(s) => vec![s.text()],
            List::Many(v) => v.iter().map(Scalar::text).collect(),
        }
    }
    fn of(v: &[&str]) -> List {
        List::Many(v.iter().map(|s| Scalar::Text(s.to_string())).collect())
    }
}

/// One sweep point's configuration (plain data, echoed into results).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpConfig {
    pub tests: List,
    pub target: Option<String>,
    pub connections: usize,
    pub threads: usize,
    pub duration: f64,
    pub requests: Option<u64>,
    pub warmup: f64,
    pub rate: Option<f64>,
    pub arrival: String,
    pub requests_per_connection: u64,
    pub method: String,
    pub paths: List,
    pub path_order: String,
    pub headers: List,
    pub body: Option<Scalar>,
    pub body_size: Option<usize>,
    pub file_size: usize,
    pub server_workers: usize,
    pub server_cpus: List,
    pub client_cpus: List,
    pub nginx: String,
    pub seed: u64,
    pub latency_thresholds: List,
    pub hlog: Option<String>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            tests: List::of(&["load"]),
            target: None,
            connections: 50,
            threads: 1,
            duration: 10.0,
            requests: None,
            warmup: 1.0,
            rate: None,
            arrival: "constant".into(),
            requests_per_connection: 0,
            method: "GET".into(),
            paths: List::default(),
            path_order: "rotate".into(),
            headers: List::default(),
            body: None,
            body_size: None,
            file_size: 1024,
            server_workers: 1,
            server_cpus: List::default(),
            client_cpus: List::default(),
            nginx: "nginx".into(),
            seed: 1,
            latency_thresholds: List::of(&["1ms", "8ms", "64ms"]),
            hlog: None,
        }
    }
}

const TESTS: [&str; 4] = ["load", "ramp", "search", "levels"];

/// The capacity tests' scale for http: a ramp to 20k req/s in 1k steps of 5 s.
pub const CAPACITY: CapacityDefaults = CapacityDefaults {
    typical_rate_per_s: 20_000.0,
    step_duration_s: 5.0,
    rate_unit: "req/s",
};

fn cpu_list(l: &List, what: &str) -> anyhow::Result<Vec<usize>> {
    let values: Vec<serde_json::Value> = l
        .items()
        .into_iter()
        .map(serde_json::Value::String)
        .collect();
    let what = format!("--{what}");
    let out = engine::launch::cpus_from_values(&values, &what)?;
    engine::launch::check_cpus(&out, &what)?;
    Ok(out)
}

fn positive(v: f64, what: &str) -> anyhow::Result<()> {
    if !(v > 0.0 && v.is_finite()) {
        bail!("--{what} must be a positive number, not {v}");
    }
    Ok(())
}

/// Where requests go.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub addr: SocketAddr,
    /// `Host:` header value (`host[:port]` as written).
    pub host: String,
    /// The URL's path and query (`/` when none).
    pub path: String,
}

/// Parse `http://host[:port][/path]` and resolve it.
pub fn parse_target(url: &str) -> anyhow::Result<Target> {
    let rest = if let Some(r) = url.strip_prefix("http://") {
        r
    } else if url.starts_with("https://") {
        bail!("--target {url}: https is not supported (TLS would measure the TLS library); use an http:// endpoint");
    } else {
        bail!("--target {url}: expected http://HOST[:PORT][/PATH]");
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.is_empty() || authority.contains('@') {
        bail!("--target {url}: expected http://HOST[:PORT][/PATH] (no user info)");
    }
    let with_port = if authority.rsplit_once(':').is_some_and(|(h, p)| {
        !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) && !h.ends_with(':')
    }) || (authority.starts_with('[') && authority.contains("]:"))
    {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    let addr = with_port
        .to_socket_addrs()
        .with_context(|| format!("--target {url}: cannot resolve `{authority}`"))?
        .next()
        .with_context(|| format!("--target {url}: `{authority}` resolves to no address"))?;
    Ok(Target {
        addr,
        host: authority.to_string(),
        path: path.to_string(),
    })
}

impl HttpConfig {
    fn tests(&self) -> Vec<String> {
        self.tests.items()
    }

    fn validate(&self) -> anyhow::Result<()> {
        if self.connections == 0 {
            bail!("--connections must be at least 1");
        }
        if self.threads == 0 {
            bail!("--threads must be at least 1");
        }
        positive(self.duration, "duration")?;
        if self.requests == Some(0) {
            bail!("--requests must be at least 1 (or leave it out and give --duration)");
        }
        if !(self.warmup >= 0.0 && self.warmup.is_finite()) {
            bail!("--warmup must be 0 or more seconds");
        }
        if let Some(r) = self.rate {
            positive(r, "rate")?;
        }
        if !["constant", "poisson"].contains(&self.arrival.as_str()) {
            bail!(
                "--arrival must be `constant` or `poisson`, not `{}`",
                self.arrival
            );
        }
        if !["rotate", "random"].contains(&self.path_order.as_str()) {
            bail!(
                "--path-order must be `rotate` or `random`, not `{}`",
                self.path_order
            );
        }
        if self.file_size > 1 << 30 {
            bail!("--file-size above 1 GiB is not supported");
        }
        if self.server_workers == 0 || self.server_workers > 1024 {
            bail!("--server-workers must be 1..1024");
        }
        if self.body.is_some() && self.body_size.is_some() {
            bail!("give --body or --body-size, not both");
        }
        let tests = self.tests();
        if tests.is_empty() {
            bail!("no tests given (--tests load,ramp,search,levels)");
        }
        for t in &tests {
            if !TESTS.contains(&t.as_str()) {
                bail!("unknown http test `{t}`: choose from {}", TESTS.join(", "));
            }
        }
        for t in self.latency_thresholds.items() {
            engine::histlog::parse_latency_ns(&t).context("--latency-thresholds")?;
        }
        Ok(())
    }

    fn thresholds_ns(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .latency_thresholds
            .items()
            .iter()
            .filter_map(|t| engine::histlog::parse_latency_ns(t).ok())
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    fn body_bytes(&self) -> Vec<u8> {
        match (&self.body, self.body_size) {
            (Some(b), _) => b.text().into_bytes(),
            (None, Some(n)) => vec![b'x'; n],
            (None, None) => Vec::new(),
        }
    }
}

/// Registry entry for `http`.
pub fn registration() -> Registration {
    Registration {
        name: "http",
        about: "HTTP/1.1 load (wrk/wrk2-style), autobench rate ramps, latency-objective search and load levels against nginx or --target",
        list_keys: &[
            "tests",
            "paths",
            "headers",
            "server_cpus",
            "client_cpus",
            "latency_thresholds",
            "levels",
        ],
        flags: |c| capacity_tests::document_defaults(<Flags as Args>::augment_args(c), &CAPACITY),
        build: |p| Ok(Box::new(Http::from_params(p)?)),
        service: None,
        driver: None,
    }
}

/// The http workload for one sweep point.
pub struct Http {
    pub cfg: HttpConfig,
    server_cpus: Vec<usize>,
    client_cpus: Vec<usize>,
    target: Option<Target>,
    server: Option<nginx::Nginx>,
    requests: Option<Arc<RequestSet>>,
    /// Capacity found by a `ramp` or `search` test, for a later `levels` test.
    capacity_found: Option<f64>,
    /// Whether the test under way sleeps between open-loop sends (`--wait`).
    sleep_when_idle: bool,
    /// The capacity tests' parameters.
    pub cap: CapacityConfig,
    facts: BTreeMap<String, Fact>,
}

impl Http {
    pub fn from_params(p: &Params) -> anyhow::Result<Http> {
        let (p, cap) = capacity_tests::split_params("http", p)?;
        let cfg: HttpConfig = engine::plan::config_from_params("http", &p)?;
        cfg.validate()?;
        cap.validate(&cfg.tests(), &CAPACITY)?;
        let server_cpus = cpu_list(&cfg.server_cpus, "server-cpus")?;
        let client_cpus = cpu_list(&cfg.client_cpus, "client-cpus")?;
        Ok(Http {
            cfg,
            server_cpus,
            client_cpus,
            target: None,
            server: None,
            requests: None,
            capacity_found: None,
            sleep_when_idle: false,
            cap,
            facts: BTreeMap::new(),
        })
    }

    /// The endpoint being driven (after prepare).
    pub fn endpoint(&self) -> Option<SocketAddr> {
        self.target.as_ref().map(|t| t.addr)
    }

    /// The launched nginx (None with --target).
    pub fn server(&self) -> Option<&nginx::Nginx> {
        self.server.as_ref()
    }

    fn spec(&self, shape: LoadShape, stop: StopAfter) -> LoadSpec {
        // Reply-rate samples: 1 s for a run (wrk's per-second view); a capacity step gets
        // at least 5 samples (httperf samples every 5 s of runs >= 150 s; our steps are
        // shorter, and min/max/stddev need several samples to mean anything).
        let interval = match stop {
            StopAfter::Duration(d) if d < Duration::from_secs(5) => {
                (d / 5).max(Duration::from_millis(100))
            }
            _ => Duration::from_secs(1),
        };
        LoadSpec {
            shape,
            stop,
            warmup: Duration::from_secs_f64(self.cfg.warmup),
            connections: self.cfg.connections,
            threads: self.cfg.threads,
            pipeline: 1,
            requests_per_connection: (self.cfg.requests_per_connection > 0)
                .then_some(self.cfg.requests_per_connection),
            client_cpus: self.client_cpus.clone(),
            seed: self.cfg.seed,
            interval,
            sleep_when_idle: self.sleep_when_idle,
        }
    }

    fn open_shape(&self, rate: f64) -> LoadShape {
        if self.cfg.arrival == "poisson" {
            LoadShape::Poisson { rate }
        } else {
            LoadShape::Constant { rate }
        }
    }

    fn drive(&self, spec: &LoadSpec, ctx: &Ctx) -> anyhow::Result<LoadOutcome> {
        let (Some(t), Some(set)) = (&self.target, &self.requests) else {
            bail!("http: run_test before prepare");
        };
        let set = set.clone();
        run_stream(
            spec,
            &[t.addr],
            &CLASS_NAMES,
            move |i| HttpProtocol::new(set.clone(), i),
            &ctx.progress,
        )
    }

    /// Run one capacity step at `rate_per_s` requests/s (open loop, `--step-duration`
    /// seconds after `--warmup`); rate 0 is active idle (`--idle-duration` seconds with no
    /// load). The runner wraps this to add CPU and power to `RateStep::extra`.
    pub fn measure_rate(&mut self, rate_per_s: f64, ctx: &Ctx) -> anyhow::Result<RateStep> {
        let started = std::time::SystemTime::now();
        let secs = self.cap.step_duration_s(&CAPACITY);
        let spec = self.spec(
            self.open_shape(rate_per_s),
            StopAfter::Duration(Duration::from_secs_f64(secs)),
        );
        ctx.note(&format!("http: {rate_per_s:.0} req/s for {secs}s"));
        let out = self.drive(&spec, ctx)?;
        let mut s = RateStep::from_outcome(rate_per_s, &out);
        s.started_at = Some(started);
        let n = out.total_count();
        if n > 0 {
            let cpu = out.loadgen_cpu_user_s + out.loadgen_cpu_sys_s;
            s.extra.push(Metric::new(
                "loadgen_cpu_us_per_op",
                cpu * 1e6 / n as f64,
                "us/op",
            ));
        }
        if let Some(why) = self.server_exited() {
            s.error = Some(why);
        }
        Ok(s)
    }

    fn server_exited(&mut self) -> Option<String> {
        self.server.as_mut().and_then(|s| s.guard.exited())
    }

    fn write_hlog(&self, text: &[u8]) -> Option<Flag> {
        let path = self.cfg.hlog.as_ref()?;
        match std::fs::write(path, text) {
            Ok(()) => None,
            Err(e) => Some(Flag::warning(
                "hlog_not_written",
                format!("could not write the interval log {path}: {e}"),
            )),
        }
    }

    fn run_load(&mut self, ctx: &Ctx) -> anyhow::Result<StepOutput> {
        let shape = match self.cfg.rate {
            Some(r) => self.open_shape(r),
            None => LoadShape::Closed,
        };
        let stop = match self.cfg.requests {
            Some(n) => StopAfter::Requests(n),
            None => StopAfter::Duration(Duration::from_secs_f64(self.cfg.duration)),
        };
        let spec = self.spec(shape, stop);
        let started = std::time::SystemTime::now();
        let before = self.server.as_ref().and_then(nginx::Nginx::requests_served);
        let out = self.drive(&spec, ctx)?;
        let after = self.server.as_ref().and_then(nginx::Nginx::requests_served);
        let mut step = engine::validity::step_output(&spec, &out, "requests_per_s", "req/s");
        // nginx's own count against the generator's (memtier's self-test). The second
        // status request counts itself; requests in flight when a timed test ends, and
        // those of the warm-up, are served but not counted by the generator.
        if let (Some(b), Some(a)) = (before, after) {
            let served = a.saturating_sub(b).saturating_sub(1);
            step.metrics
                .push(Metric::new("server_requests", served as f64, "requests"));
            let claimed = out.total_count();
            let lost: u64 = out.connection_errors.values().sum();
            let slack = (spec.connections * spec.pipeline) as u64;
            if spec.warmup.is_zero() && lost == 0 && (served < claimed || served > claimed + slack)
            {
                step.flags.push(Flag::warning(
                    "server_counter_mismatch",
                    format!("nginx counted {served} requests, the generator {claimed} replies"),
                ));
            }
        }
        // Per-status counts: 2xx/3xx are `ok`, the others come back as `http_<code>`.
        let ok: u64 = out.classes.iter().map(|c| c.ok).sum();
        step.metrics
            .push(Metric::new("responses", ok as f64, "responses").label("status", "2xx_3xx"));
        for c in &out.classes {
            for (kind, n) in &c.errors {
                if let Some(code) = kind.strip_prefix("http_") {
                    step.metrics.push(
                        Metric::new("responses", *n as f64, "responses").label("status", code),
                    );
                }
            }
        }
        if out.duration_s > 0.0 {
            step.metrics.push(Metric::new(
                "rx_bytes_per_s",
                out.bytes_rx as f64 / out.duration_s,
                "B/s",
            ));
        }
        // Latency views: share over thresholds, weighted mean, jitter.
        let rs = RateStep::from_outcome(out.offered_rate.unwrap_or(0.0), &out);
        if let Some(h) = &rs.latency {
            step.metrics.extend(engine::histlog::view_metrics(
                h,
                &self.cfg.thresholds_ns(),
                &[("kind", rs.latency_kind.clone())],
            ));
            if self.cfg.hlog.is_some() {
                let mut rs = rs.clone();
                rs.started_at = Some(started);
                let log = capacity::write_steps_log(
                    Vec::new(),
                    "rackbench http load",
                    [&rs].into_iter(),
                )?;
                step.flags.extend(self.write_hlog(&log));
            }
        }
        if let Some(why) = self.server_exited() {
            step.error = Some(why.clone());
            step.flags.push(Flag::invalid("server_died", why));
        }
        Ok(step)
    }

    fn run_capacity(&mut self, test: &str, ctx: &Ctx) -> anyhow::Result<StepOutput> {
        let cap = self.cap.clone();
        let hlog = self.cfg.hlog.clone();
        let mut found = self.capacity_found;
        let threads = self.cfg.threads;
        let out = capacity_tests::run(
            "http",
            test,
            &cap,
            &CAPACITY,
            ctx,
            &mut found,
            hlog.as_deref(),
            threads,
            |rate| self.measure_rate(rate, ctx),
        );
        self.capacity_found = found;
        out
    }
}

impl Workload for Http {
    fn name(&self) -> &'static str {
        "http"
    }

    fn tests(&self) -> Vec<String> {
        self.cfg.tests()
    }

    fn prepare(&mut self, ctx: &Ctx) -> anyhow::Result<()> {
        let target = match &self.cfg.target {
            Some(url) => {
                let t = parse_target(url)?;
                std::net::TcpStream::connect_timeout(&t.addr, Duration::from_secs(3))
                    .with_context(|| format!("--target {url}: cannot connect to {}", t.addr))?;
                self.facts.insert(
                    "server.mode".into(),
                    Fact::known("given endpoint (--target)"),
                );
                self.facts
                    .insert("server.url".into(), Fact::known(url.clone()));
                t
            }
            None => {
                let binary = engine::launch::find_binary(&self.cfg.nginx, "nginx-light")?;
                ctx.note(&format!(
                    "launching nginx ({} worker(s){}) serving a {}-byte file",
                    self.cfg.server_workers,
                    if self.server_cpus.is_empty() {
                        String::new()
                    } else {
                        format!(" on CPUs {:?}", self.server_cpus)
                    },
                    self.cfg.file_size
                ));
                let n = nginx::launch(&nginx::NginxSpec {
                    binary: binary.clone(),
                    workers: self.cfg.server_workers,
                    cpus: self.server_cpus.clone(),
                    file_size: self.cfg.file_size,
                })?;
                ctx.watch.watch_process("server:0", n.guard.pid());
                for (i, w) in n.workers.iter().enumerate() {
                    ctx.watch.watch_process(&format!("server:worker{i}"), *w);
                }
                self.facts
                    .insert("server.mode".into(), Fact::known("launched by rackbench"));
                self.facts.insert(
                    "software.nginx".into(),
                    n.version.clone().map_or_else(
                        || Fact::unknown("`nginx -v` printed no version"),
                        Fact::known,
                    ),
                );
                self.facts.insert(
                    "software.nginx.binary".into(),
                    Fact::known(binary.display().to_string()),
                );
                self.facts.insert(
                    "server.config.worker_processes".into(),
                    Fact::known(self.cfg.server_workers.to_string()),
                );
                self.facts.insert(
                    "server.config.worker_cpu_affinity".into(),
                    Fact::known(
                        nginx::affinity_masks(self.cfg.server_workers, &self.server_cpus).join(" "),
                    ),
                );
                self.facts.insert(
                    "server.static_file_bytes".into(),
                    Fact::known(self.cfg.file_size.to_string()),
                );
                let t = Target {
                    addr: n.addr,
                    host: n.addr.to_string(),
                    path: format!("/{}", nginx::STATIC_FILE),
                };
                self.server = Some(n);
                t
            }
        };
        let mut paths = self.cfg.paths.items();
        if paths.is_empty() {
            paths.push(target.path.clone());
        }
        let set = RequestSet::build(
            &RequestTemplate {
                method: &self.cfg.method,
                host: &target.host,
                paths: &paths,
                headers: &self.cfg.headers.items(),
                body: &self.cfg.body_bytes(),
            },
            if self.cfg.path_order == "random" {
                PathOrder::Random
            } else {
                PathOrder::Rotate
            },
        )?;
        self.facts
            .insert("loadgen.http.paths".into(), Fact::known(paths.join(" ")));
        self.requests = Some(Arc::new(set));
        self.target = Some(target);
        Ok(())
    }

    fn run_test(&mut self, test: &str, ctx: &Ctx) -> anyhow::Result<StepOutput> {
        self.sleep_when_idle = self.cap.sleep_when_idle(test);
        match test {
            "load" => self.run_load(ctx),
            "ramp" | "search" | "levels" => self.run_capacity(test, ctx),
            other => bail!(
                "unknown http test `{other}`: choose from {}",
                TESTS.join(", ")
            ),
        }
    }

    fn cleanup(&mut self) {
        if let Some(mut s) = self.server.take() {
            s.guard.stop(Duration::from_secs(2));
        }
        self.target = None;
        self.requests = None;
    }

    fn disclosure(&self) -> BTreeMap<String, Fact> {
        self.facts.clone()
    }
}

impl Drop for Http {
    fn drop(&mut self) {
        self.cleanup();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(v: serde_json::Value) -> Params {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn config_from_flag_values() {
        // What the CLI produces: numbers from `parse_value`, lists, strings.
        let h = Http::from_params(&params(json!({
            "connections": 50, "duration": 2, "rate": 1000.5, "paths": ["/a", "/b"],
            "headers": ["Accept: */*"], "server_cpus": 0, "client_cpus": "0",
            "tests": ["ramp", "levels"], "slo": "p99.9<=500us", "body": true,
            "latency_thresholds": ["1ms", "8ms"], "levels": [100, 50]
        })))
        .unwrap();
        assert_eq!(h.cfg.tests(), vec!["ramp", "levels"]);
        assert_eq!(h.server_cpus, vec![0]);
        assert_eq!(h.cfg.paths.items(), vec!["/a", "/b"]);
        assert_eq!(h.cfg.body_bytes(), b"true");
        assert_eq!(h.cap.levels_pct().unwrap(), vec![100.0, 50.0]);
        assert_eq!(h.cfg.thresholds_ns(), vec![1_000_000, 8_000_000]);
        let h = Http::from_params(&params(json!({"tests": "load"}))).unwrap();
        assert_eq!(h.cfg.tests(), vec!["load"]);
    }

    #[test]
    fn bad_config_says_what_to_type() {
        let err = |v: serde_json::Value| match Http::from_params(&params(v)) {
            Ok(_) => panic!("accepted"),
            Err(e) => format!("{e:#}"),
        };
        assert!(err(json!({"conections": 5})).contains("unknown field"));
        assert!(err(json!({"connections": 0})).contains("--connections"));
        assert!(err(json!({"tests": ["bogus"]})).contains("choose from load, ramp, search, levels"));
        assert!(err(json!({"tests": ["levels"]})).contains("--capacity"));
        assert!(err(json!({"tests": ["search"], "slo": "p99>1ms"})).contains("--slo"));
        assert!(err(json!({"tests": ["ramp"], "ramp_low": 0})).contains("--ramp-low"));
        assert!(err(json!({"arrival": "burst"})).contains("--arrival"));
        assert!(err(json!({"server_cpus": 4096})).contains("does not exist"));
        assert!(err(json!({"latency_thresholds": "5"})).contains("no unit"));
        assert!(err(json!({"body": "x", "body_size": 3})).contains("not both"));
    }

    #[test]
    fn targets_parse() {
        let t = parse_target("http://127.0.0.1:8080/x?y=1").unwrap();
        assert_eq!(t.addr, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(
            (t.host.as_str(), t.path.as_str()),
            ("127.0.0.1:8080", "/x?y=1")
        );
        let t = parse_target("http://127.0.0.1").unwrap();
        assert_eq!(t.addr.port(), 80);
        assert_eq!(t.path, "/");
        let t = parse_target("http://[::1]:81/").unwrap();
        assert_eq!(t.addr, "[::1]:81".parse().unwrap());
        assert!(parse_target("https://x/")
            .unwrap_err()
            .to_string()
            .contains("https is not supported"));
        assert!(parse_target("127.0.0.1:80")
            .unwrap_err()
            .to_string()
            .contains("http://HOST"));
        assert!(parse_target("http://u:p@h/").is_err());
    }

    #[test]
    fn flags_register_without_clashing_with_run_options() {
        let cmd = (registration().flags)(clap::Command::new("x"));
        let ids: Vec<String> = cmd
            .get_arguments()
            .map(|a| a.get_id().to_string())
            .collect();
        for reserved in ["interval", "json", "quiet", "label", "repeat", "plan", "db"] {
            assert!(!ids.contains(&reserved.to_string()), "{reserved}");
        }
        // Every flag id is a config key (of http or of the shared capacity tests).
        let cfg = serde_json::to_value(HttpConfig::default()).unwrap();
        for id in ids {
            assert!(
                cfg.get(&id).is_some() || capacity_tests::KEYS.contains(&id.as_str()),
                "flag {id} is not a config key"
            );
        }
    }
}
