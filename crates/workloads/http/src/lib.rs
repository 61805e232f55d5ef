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
//!
//! Three parts, each running where it belongs, and the controller that joins them:
//! - the plan (this file): flags, [`HttpConfig`], validation, the target URL and the
//!   requests, read alike by all the others;
//! - the [`service`] on the system under test: the launched nginx ([`nginx`]) and its
//!   own request counter, or the checked `--target`; its endpoint is a URL;
//! - the [`driver`] on each load generator: its share of the connections against that
//!   URL, returning the exact load outcome;
//! - and the [`controller`] ([`Http`], the `Workload`), which starts the service, spreads
//!   each test across the generators and merges what they measured.

pub mod controller;
pub mod driver;
pub mod nginx;
pub mod proto;
pub mod service;

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;
use engine::capacity_tests::{self, CapacityConfig, CapacityDefaults};
use engine::load::{ClientIo, LoadShape, LoadSpec, StopAfter};
use engine::workload::{Params, Registration};
use serde::{Deserialize, Serialize};

use proto::{PathOrder, RequestSet, RequestTemplate};

pub use controller::Http;

/// The flags of `rackbench run http`. Flag ids are the parameter keys of plans; numeric
/// knobs take lists and ranges (`--connections 10,50,100`) which become sweeps.
#[derive(Args, Debug, Serialize)]
pub struct Flags {
    /// Tests to run, in order: load, ramp, search, levels [default: load]
    #[arg(short = 't', long, id = "tests", value_name = "LIST")]
    pub tests: Option<String>,
    /// Use this server instead of launching nginx: http://HOST[:PORT][/PATH]
    #[arg(long, id = "target", value_name = "URL")]
    pub target: Option<String>,
    /// Connections in total (wrk -c) [default: 50]
    #[arg(short = 'c', long, id = "connections", value_name = "N")]
    pub connections: Option<String>,
    /// Load-generator threads (wrk -t) [default: 1]
    #[arg(long, id = "threads", value_name = "N")]
    pub threads: Option<String>,
    /// Seconds of the `load` test (wrk -d) [default: 10]
    #[arg(long, id = "duration", value_name = "SECS")]
    pub duration: Option<String>,
    /// wrk's `-d`: refused with the flag to use (`-d` is the value size in kv, as in
    /// redis-benchmark; one meaning per flag in every workload).
    #[arg(short = 'd', id = "wrk_d", value_name = "SECS", hide = true)]
    pub wrk_d: Option<String>,
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
    /// The client's system calls in a closed loop: auto (io_uring where the kernel has
    /// it, else epoll), epoll, or io_uring [default: auto]
    #[arg(
        long = "client-io",
        id = "client_io",
        value_name = "auto|epoll|io_uring"
    )]
    pub client_io: Option<String>,
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
    pub client_io: ClientIo,
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
            client_io: ClientIo::Auto,
            nginx: "nginx".into(),
            seed: 1,
            latency_thresholds: List::of(&["1ms", "8ms", "64ms"]),
            hlog: None,
        }
    }
}

pub const TESTS: [&str; 4] = ["load", "ramp", "search", "levels"];

/// The capacity tests' scale for http: a ramp to 20k req/s in 1k steps of 5 s.
pub const CAPACITY: CapacityDefaults = CapacityDefaults {
    typical_rate_per_s: 20_000.0,
    step_duration_s: 5.0,
    rate_unit: "req/s",
    slo: "p99<1ms",
    wait_modes: true,
    more_load: "--threads or -c",
};

/// A CPU list, parsed only: whether the CPUs exist is checked on the host they are
/// of (the server's on the system under test, the clients' on each load generator).
fn cpu_list(l: &List, what: &str) -> anyhow::Result<Vec<usize>> {
    let values: Vec<serde_json::Value> = l
        .items()
        .into_iter()
        .map(serde_json::Value::String)
        .collect();
    engine::launch::cpus_from_values(&values, &format!("--{what}"))
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

/// A URL taken apart, not resolved: what every host reads alike.
#[derive(Debug, Clone, PartialEq)]
pub struct Url {
    /// `host[:port]` as written (the `Host:` header).
    pub authority: String,
    /// `host:port`, the port 80 when none was written (what is resolved).
    pub host_port: String,
    /// The path and query (`/` when none).
    pub path: String,
}

/// Take `http://host[:port][/path]` apart without resolving it.
pub fn parse_url(url: &str) -> anyhow::Result<Url> {
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
    let host_port = if authority.rsplit_once(':').is_some_and(|(h, p)| {
        !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) && !h.ends_with(':')
    }) || (authority.starts_with('[') && authority.contains("]:"))
    {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    Ok(Url {
        authority: authority.to_string(),
        host_port,
        path: path.to_string(),
    })
}

/// Parse `http://host[:port][/path]` and resolve it (as the host doing this resolves it).
pub fn parse_target(url: &str) -> anyhow::Result<Target> {
    let u = parse_url(url)?;
    let addr = u
        .host_port
        .to_socket_addrs()
        .with_context(|| format!("--target {url}: cannot resolve `{}`", u.authority))?
        .next()
        .with_context(|| format!("--target {url}: `{}` resolves to no address", u.authority))?;
    Ok(Target {
        addr,
        host: u.authority,
        path: u.path,
    })
}

impl HttpConfig {
    pub fn tests(&self) -> Vec<String> {
        self.tests.items()
    }

    fn validate(&self) -> anyhow::Result<()> {
        if self.connections == 0 {
            bail!("--connections must be at least 1");
        }
        if self.threads == 0 {
            bail!("--threads must be at least 1");
        }
        engine::workload::check_duration("http", self.duration, 86_400.0)?;
        if self.requests == Some(0) {
            bail!("--requests must be at least 1 (or leave it out and give --duration)");
        }
        if !(self.warmup >= 0.0 && self.warmup.is_finite()) {
            bail!("--warmup must be 0 or more seconds");
        }
        // What `spec` turns into durations (a capacity step's length arrives as `duration`).
        for (v, what) in [(self.duration, "duration"), (self.warmup, "warmup")] {
            if Duration::try_from_secs_f64(v).is_err() {
                bail!("--{what} {v} is too long");
            }
        }
        if let Some(r) = self.rate {
            positive(r, "rate")?;
            engine::load::check_rate(r, "--rate")?;
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
            if t.parse::<u32>().is_ok() {
                // wrk's `-t 4` is threads; here, as in every workload, -t is the tests.
                bail!("`-t {t}`: -t is the tests (load, ramp, ...) in every workload; for {t} load-generator threads use --threads {t}");
            }
            if !TESTS.contains(&t.as_str()) {
                bail!("unknown http test `{t}`: choose from {}", TESTS.join(", "));
            }
        }
        engine::histlog::check_thresholds(&self.latency_thresholds.items())?;
        if let Some(url) = &self.target {
            parse_url(url)?;
            let launched = HttpConfig::default();
            let given: Vec<&str> = [
                (self.file_size != launched.file_size, "--file-size"),
                (
                    self.server_workers != launched.server_workers,
                    "--server-workers",
                ),
                (!self.server_cpus.items().is_empty(), "--server-cpus"),
                (self.nginx != launched.nginx, "--nginx"),
            ]
            .into_iter()
            .filter_map(|(given, flag)| given.then_some(flag))
            .collect();
            engine::plan::refuse_launch_settings(&given, "--target", "nginx")?;
        }
        // A bad method, header or path refused before nginx is launched: built against
        // the target, or a stand-in for the address nginx will have (only `Host:` uses it).
        // Without the body: checked for every point, it need not be built for each.
        let url = parse_url(self.target.as_deref().unwrap_or("http://127.0.0.1/"))?;
        HttpConfig {
            body: None,
            body_size: None,
            ..self.clone()
        }
        .request_set(&url)?;
        Ok(())
    }

    pub fn thresholds_ns(&self) -> Vec<u64> {
        engine::histlog::thresholds_ns(&self.latency_thresholds.items())
    }

    pub fn body_bytes(&self) -> Vec<u8> {
        match (&self.body, self.body_size) {
            (Some(b), _) => b.text().into_bytes(),
            (None, Some(n)) => vec![b'x'; n],
            (None, None) => Vec::new(),
        }
    }
    fn open_shape(&self, rate: f64) -> LoadShape {
        if self.arrival == "poisson" {
            LoadShape::Poisson { rate }
        } else {
            LoadShape::Constant { rate }
        }
    }

    /// The load of a `load` test (and of a capacity step, which is a `load` with the
    /// step's `rate` and `duration` and no `requests`), clients pinned to `client_cpus`.
    pub fn spec(&self, client_cpus: Vec<usize>) -> LoadSpec {
        let shape = match self.rate {
            Some(r) => self.open_shape(r),
            None => LoadShape::Closed,
        };
        let stop = match self.requests {
            Some(n) => StopAfter::Requests(n),
            None => StopAfter::Duration(Duration::from_secs_f64(self.duration)),
        };
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
            warmup: Duration::from_secs_f64(self.warmup),
            connections: self.connections,
            threads: self.threads,
            pipeline: 1,
            requests_per_connection: (self.requests_per_connection > 0)
                .then_some(self.requests_per_connection),
            client_cpus,
            seed: self.seed,
            interval,
            sleep_when_idle: false,
            client_io: self.client_io,
            // The first generator's (a driver sets its own).
            phase: 0.0,
            no_reply_timeout: engine::load::NO_REPLY_TIMEOUT,
        }
    }

    /// The paths requested: `--path`, or the endpoint URL's own.
    pub fn paths(&self, url: &Url) -> Vec<String> {
        let mut paths = self.paths.items();
        if paths.is_empty() {
            paths.push(url.path.clone());
        }
        paths
    }

    /// Every request, built once, for the endpoint `url` (its authority is the `Host:`).
    pub fn request_set(&self, url: &Url) -> anyhow::Result<RequestSet> {
        RequestSet::build(
            &RequestTemplate {
                method: &self.method,
                host: &url.authority,
                paths: &self.paths(url),
                headers: &self.headers.items(),
                body: &self.body_bytes(),
            },
            if self.path_order == "random" {
                PathOrder::Random
            } else {
                PathOrder::Rotate
            },
        )
    }
}

/// One sweep point's knobs, validated: the controller, the service and every driver
/// read the same parameters through this, so they cannot disagree on a default.
#[derive(Debug, Clone)]
pub struct Plan {
    pub cfg: HttpConfig,
    /// The capacity tests' knobs (split off before `HttpConfig` reads the rest).
    pub cap: CapacityConfig,
    /// Parsed only: whether these CPUs exist is checked on the system under test.
    pub server_cpus: Vec<usize>,
    /// Parsed only: whether these CPUs exist is checked on each load generator.
    pub client_cpus: Vec<usize>,
}

impl Plan {
    pub fn from_params(p: &Params) -> anyhow::Result<Plan> {
        if let Some(v) = p.get("wrk_d") {
            let v = match v {
                serde_json::Value::String(s) => model::printable(s),
                other => other.to_string(),
            };
            bail!("`-d {v}`: -d is the value size (kv, as redis-benchmark's -d) in every workload; for the test's duration use --duration {v}");
        }
        engine::plan::refuse_two_stops(p)?;
        let (p, cap) = capacity_tests::split_params("http", p)?;
        let cfg: HttpConfig =
            engine::plan::config_from_params_beside("http", &p, &capacity_tests::KEYS)?;
        cfg.validate()?;
        cap.validate(&cfg.tests(), &CAPACITY)?;
        let arrival = (cfg.arrival != "constant").then_some(&*cfg.arrival);
        capacity_tests::refuse_open_loop_flags(
            &cfg.tests(),
            cfg.rate.is_some(),
            &[("--arrival", arrival), ("--wait", cap.wait.as_deref())],
            "each connection sends when its reply is in, as wrk does; wrk2 -R is --rate",
        )?;
        let server_cpus = cpu_list(&cfg.server_cpus, "server-cpus")?;
        let client_cpus = cpu_list(&cfg.client_cpus, "client-cpus")?;
        Ok(Plan {
            cfg,
            cap,
            server_cpus,
            client_cpus,
        })
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
        text_keys: &["target", "paths", "headers", "body", "nginx", "hlog"],
        flags: |c| capacity_tests::document_defaults(<Flags as Args>::augment_args(c), &CAPACITY),
        build: |p| Ok(Box::new(Http::from_params(p)?)),
        service: Some(service::start_service),
        has_server: true,
        driver: Some(driver::drive),
        programs: || vec![("nginx", engine::launch::find_binary("nginx", "nginx-light").ok())],
        lengthen: "--duration, or a larger -n",
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
        let h = Plan::from_params(&params(json!({
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
        let h = Plan::from_params(&params(json!({"tests": "load"}))).unwrap();
        assert_eq!(h.cfg.tests(), vec!["load"]);
    }

    #[test]
    fn bad_config_says_what_to_type() {
        let err = |v: serde_json::Value| match Plan::from_params(&params(v)) {
            Ok(_) => panic!("accepted"),
            Err(e) => format!("{e:#}"),
        };
        assert!(err(json!({"conections": 5})).contains("unknown field"));
        assert!(err(json!({"connections": 0})).contains("--connections"));
        assert!(err(json!({"duration": 1e300})).contains("use 0.1 to 86400 seconds"));
        assert!(err(json!({"warmup": 1e300})).contains("too long"));
        // Acceptance A, findings 7 and 9: a 0.05 s test and an objective no test reads.
        assert!(err(json!({"duration": 0.05})).contains("use 0.1 to 86400 seconds"));
        assert!(err(json!({"tests": ["load"], "slo": "p99<1ms"}))
            .contains("--slo applies to the search and levels tests"));
        assert!(err(json!({"tests": ["bogus"]})).contains("choose from load, ramp, search, levels"));
        assert!(err(json!({"tests": ["levels"]})).contains("--capacity"));
        assert!(err(json!({"tests": ["search"], "slo": "p99>1ms"})).contains("--slo"));
        assert!(err(json!({"tests": ["ramp"], "ramp_low": 0})).contains("--ramp-low"));
        assert!(err(json!({"arrival": "burst"})).contains("--arrival"));
        assert!(err(json!({"server_cpus": "x"})).contains("--server-cpus"));
        assert!(err(json!({"target": "https://h/"})).contains("https is not supported"));
        assert!(err(json!({"latency_thresholds": "5"})).contains("no unit"));
        assert!(err(json!({"body": "x", "body_size": 3})).contains("not both"));
    }

    #[test]
    fn a_load_spec_is_the_one_of_before() {
        let p = Plan::from_params(&params(
            json!({"connections": 8, "duration": 2, "rate": 100}),
        ))
        .unwrap();
        let s = p.cfg.spec(vec![1]);
        assert_eq!(s.shape, LoadShape::Constant { rate: 100.0 });
        assert_eq!(s.stop, StopAfter::Duration(Duration::from_secs(2)));
        assert_eq!(s.interval, Duration::from_millis(400));
        assert_eq!((s.connections, s.client_cpus), (8, vec![1]));
        let p = Plan::from_params(&params(json!({"requests": 10}))).unwrap();
        let s = p.cfg.spec(Vec::new());
        assert_eq!(
            (s.shape, s.stop, s.interval),
            (
                LoadShape::Closed,
                StopAfter::Requests(10),
                Duration::from_secs(1)
            )
        );
        // The requests name the endpoint's authority and, without --path, its path.
        let u = parse_url("http://[::1]:81/x?y").unwrap();
        assert_eq!(p.cfg.paths(&u), vec!["/x?y"]);
        let set = p.cfg.request_set(&u).unwrap();
        let req = String::from_utf8_lossy(&set.requests[0]).to_string();
        assert!(
            req.starts_with("GET /x?y HTTP/1.1\r\n") && req.contains("Host: [::1]:81\r\n"),
            "{req}"
        );
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
        // Every flag id is a config key (of http or of the shared capacity tests), but
        // wrk's -d, which is refused with the flag to use.
        let cfg = serde_json::to_value(HttpConfig::default()).unwrap();
        for id in ids.into_iter().filter(|id| id != "wrk_d") {
            assert!(
                cfg.get(&id).is_some() || capacity_tests::KEYS.contains(&id.as_str()),
                "flag {id} is not a config key"
            );
        }
    }
}
