//! The http controller: the `Workload` the runner drives. It starts the
//! [`crate::service`] on the system under test (nginx, or the checked `--target`), gives
//! each load generator its share of a test (connections, requests, offered rate) as a
//! [`crate::driver`] job behind one start barrier, merges the generators' outcomes
//! exactly (histograms bucket by bucket) and turns the merge into the stored result,
//! checked against nginx's own request counter where it has one.
//!
//! With one host as both system under test and load generator this is the single-host
//! run of before: the same figures, the same checks, in-process.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use anyhow::{bail, Context};
use engine::capacity::{self, RateStep};
use engine::capacity_tests::{self, CapacityConfig};
use engine::host::{split_count, DriverJob, Host, ServiceHandle};
use engine::load::{LoadOutcome, LoadSpec};
use engine::validity::CLIENT_BOUND_FRACTION;
use engine::workload::{Ctx, Params, StepOutput, Workload};
use model::{Fact, Flag, Metric};
use serde_json::json;

use crate::driver::{self, LOAD};
use crate::{parse_url, HttpConfig, Plan, CAPACITY, TESTS};

/// Added to the seed once per generator index, so that generators do not draw the same
/// paths and Poisson gaps (generator 0 keeps the seed: a single-host run is unchanged).
/// Odd and unrelated to the per-worker step the load loop adds, so the streams do not
/// overlap.
const SEED_STEP: u64 = 0xD6E8_FEB8_6659_FD93;

/// The http workload for one sweep point, as the controller holds it.
pub struct Http {
    pub cfg: HttpConfig,
    /// The capacity tests' parameters.
    pub cap: CapacityConfig,
    /// The sweep point's parameters as given: the service and the drivers read them
    /// again where they run (each generator's copy narrowed to its share).
    params: Params,
    running: Option<Running>,
    facts: BTreeMap<String, Fact>,
    /// Capacity found by a `ramp` or `search` test, for a later `levels` test.
    capacity_found: Option<f64>,
    /// Whether the test under way sleeps between open-loop sends (`--wait`).
    sleep_when_idle: bool,
}

/// The service started on the system under test.
struct Running {
    sut: Arc<dyn Host>,
    handle: ServiceHandle,
}

/// One load generator's share of a test.
#[derive(Debug, Clone, PartialEq)]
pub struct Share {
    pub connections: usize,
    /// Its part of `--requests`, when the test stops after a count.
    pub requests: Option<u64>,
    /// Its part of the offered rate, in proportion to its connections, so that every
    /// connection offers the same rate wherever it runs.
    pub rate: Option<f64>,
    pub seed: u64,
    /// The index of its first connection among all: paths are rotated from there, as
    /// one generator with every connection would rotate them.
    pub first_connection: usize,
}

/// Spread a test's connections, requests and rate across `generators`. Every generator
/// gets at least one connection (and, when the test stops after a count, one request).
pub fn shares(cfg: &HttpConfig, generators: usize) -> anyhow::Result<Vec<Share>> {
    let n = generators.max(1);
    if cfg.connections < n {
        bail!(
            "{} connection(s) cannot be spread over {n} load generators: give at least one per generator (-c {n})",
            cfg.connections
        );
    }
    let requests = match cfg.requests {
        Some(r) => {
            let r = usize::try_from(r).context("--requests is too large")?;
            if r < n {
                bail!(
                    "{r} request(s) cannot be spread over {n} load generators: give at least one per generator (-n {n})"
                );
            }
            Some(split_count(r, n))
        }
        None => None,
    };
    let mut first_connection = 0;
    let mut out = Vec::with_capacity(n);
    for (i, c) in split_count(cfg.connections, n).into_iter().enumerate() {
        out.push(Share {
            connections: c,
            requests: requests.as_ref().map(|r| r[i] as u64),
            // A lone generator offers the rate as given, not one rounded through the
            // proportion.
            rate: cfg.rate.map(|rate| {
                if c == cfg.connections {
                    rate
                } else {
                    rate * c as f64 / cfg.connections as f64
                }
            }),
            seed: cfg.seed.wrapping_add(SEED_STEP.wrapping_mul(i as u64)),
            first_connection,
        });
        first_connection += c;
    }
    Ok(out)
}

/// What one generator measured, for the per-host figures.
#[derive(Debug, Clone)]
struct HostRun {
    host: String,
    connections: usize,
    /// Threads its load loop ran (never more than its connections).
    threads: usize,
    requests_per_s: f64,
    requests: u64,
    duration_s: f64,
    cpu_s: f64,
    started_unix_s: f64,
    ended_unix_s: f64,
    start_skew_s: f64,
}

/// A test driven on every generator, merged.
struct Driven {
    merged: LoadOutcome,
    /// The load as a whole (every generator's connections and threads that reported),
    /// for the checks `step_output` makes.
    spec: LoadSpec,
    hosts: Vec<HostRun>,
    /// Generators whose driver failed while others measured: `name: why`.
    failed: Vec<String>,
    generators: usize,
}

impl Driven {
    fn failure(&self) -> Option<String> {
        (!self.failed.is_empty())
            .then(|| format!("load generator {} failed", self.failed.join("; ")))
    }
}

/// The time every generator was measuring at once, seconds (0 if some never overlapped).
fn window_overlap_s(windows: &[(f64, f64)]) -> f64 {
    let start = windows
        .iter()
        .map(|w| w.0)
        .fold(f64::NEG_INFINITY, f64::max);
    let end = windows.iter().map(|w| w.1).fold(f64::INFINITY, f64::min);
    if windows.is_empty() {
        0.0
    } else {
        (end - start).max(0.0)
    }
}

impl Http {
    pub fn from_params(p: &Params) -> anyhow::Result<Http> {
        let plan = Plan::from_params(p)?;
        Ok(Http {
            cfg: plan.cfg,
            cap: plan.cap,
            params: p.clone(),
            running: None,
            facts: BTreeMap::new(),
            capacity_found: None,
            sleep_when_idle: false,
        })
    }

    /// The endpoint being driven (after prepare), as the load generators are told it:
    /// one URL (`http://127.0.0.1:34567/index.html`, or the `--target` as given).
    pub fn endpoints(&self) -> &[String] {
        self.running
            .as_ref()
            .map_or(&[], |r| r.handle.endpoints.as_slice())
    }

    fn running(&self) -> anyhow::Result<&Running> {
        self.running
            .as_ref()
            .context("http: no service running (prepare first)")
    }

    /// nginx's own count of requests so far (None when it cannot be asked: no
    /// `stub_status`, or a `--target`; the check that uses it is skipped).
    fn requests_served(&self) -> Option<u64> {
        let r = self.running.as_ref()?;
        let v = r.sut.service_query(r.handle.id, "counters").ok()?;
        v.get("requests")?.as_u64()
    }

    /// Why the server is gone, if it is.
    fn server_exited(&self) -> Option<String> {
        let r = self.running.as_ref()?;
        match r.sut.service_exited(r.handle.id) {
            Ok(why) => why,
            Err(e) => Some(format!(
                "cannot ask {} whether nginx runs: {e:#}",
                r.sut.name()
            )),
        }
    }

    /// Run a `load` job with `params` on every load generator, each with its share,
    /// and merge.
    fn drive(&self, params: &Params, ctx: &Ctx) -> anyhow::Result<Driven> {
        let running = self.running()?;
        let loadgens = &ctx.roles()?.loadgens;
        if loadgens.is_empty() {
            bail!("http needs at least one load-generator host");
        }
        if running.handle.endpoints.is_empty() {
            bail!(
                "the http service on {} gave no endpoint",
                running.sut.name()
            );
        }
        let plan = Plan::from_params(params)?;
        let shares = shares(&plan.cfg, loadgens.len())?;
        let n = shares.len();
        let paths = plan.cfg.paths.items();
        let jobs: Vec<(Arc<dyn Host>, DriverJob)> = loadgens
            .iter()
            .zip(&shares)
            .enumerate()
            .map(|(index, (host, s))| {
                let mut p = params.clone();
                p.insert("connections".into(), json!(s.connections));
                if let Some(r) = s.requests {
                    p.insert("requests".into(), json!(r));
                }
                if let Some(rate) = s.rate {
                    p.insert("rate".into(), json!(rate));
                }
                p.insert("seed".into(), json!(s.seed));
                if paths.len() > 1 {
                    let mut rotated = paths.clone();
                    rotated.rotate_left(s.first_connection % paths.len());
                    p.insert("paths".into(), json!(rotated));
                }
                let job = DriverJob {
                    workload: "http".into(),
                    test: LOAD.into(),
                    params: p,
                    endpoints: running.handle.endpoints.clone(),
                    index,
                    generators: n,
                };
                (host.clone(), job)
            })
            .collect();
        let reports = engine::host::drive_all(jobs, &ctx.progress);

        let mut outcomes = Vec::new();
        let mut hosts = Vec::new();
        let mut errors: Vec<(String, anyhow::Error)> = Vec::new();
        for ((host, share), report) in loadgens.iter().zip(&shares).zip(reports) {
            let name = host.name().to_string();
            match report.and_then(|r| Ok((driver::decode(&r.report)?, r))) {
                Ok((o, r)) => {
                    hosts.push(HostRun {
                        host: name,
                        connections: share.connections,
                        threads: plan.cfg.threads.clamp(1, share.connections),
                        requests_per_s: o.throughput(),
                        requests: o.total_count(),
                        duration_s: o.duration_s,
                        cpu_s: o.loadgen_cpu_user_s + o.loadgen_cpu_sys_s,
                        started_unix_s: r.started_unix_s,
                        ended_unix_s: r.ended_unix_s,
                        start_skew_s: r.start_skew_s,
                    });
                    outcomes.push(o);
                }
                Err(e) => errors.push((name, e)),
            }
        }
        let Some(merged) = engine::wire::merge(outcomes) else {
            // Nothing measured anywhere: a setup error, as a single generator's always was.
            if n == 1 {
                if let Some((_, e)) = errors.pop() {
                    return Err(e);
                }
            }
            bail!(
                "every load generator failed: {}",
                errors
                    .iter()
                    .map(|(h, e)| format!("{h}: {e:#}"))
                    .collect::<Vec<_>>()
                    .join("; ")
            );
        };
        let mut spec = plan.cfg.spec(Vec::new());
        spec.connections = hosts.iter().map(|h| h.connections).sum();
        spec.threads = hosts.iter().map(|h| h.threads).sum();
        spec.sleep_when_idle = plan.cap.sleep_when_idle(LOAD);
        Ok(Driven {
            merged,
            spec,
            hosts,
            failed: errors.iter().map(|(h, e)| format!("{h}: {e:#}")).collect(),
            generators: n,
        })
    }

    /// Per-generator figures and the measurement window, when there is more than one
    /// generator; a generator that failed fails the result (what the others measured
    /// is kept).
    fn add_generator_figures(d: &Driven, step: &mut StepOutput) {
        if d.generators > 1 {
            for h in &d.hosts {
                let busy_pct = if h.duration_s > 0.0 {
                    100.0 * h.cpu_s / (h.duration_s * h.threads as f64)
                } else {
                    0.0
                };
                step.metrics.extend([
                    Metric::new("requests_per_s", h.requests_per_s, "req/s").label("host", &h.host),
                    Metric::new("requests", h.requests as f64, "requests").label("host", &h.host),
                    Metric::new("loadgen_cpu_s", h.cpu_s, "s").label("host", &h.host),
                    Metric::new("loadgen_busy_pct", busy_pct, "%").label("host", &h.host),
                ]);
                // The whole's busy figure averages the generators: one saturated among
                // idle ones would hide in it.
                if busy_pct >= CLIENT_BOUND_FRACTION * 100.0
                    && !step.flags.iter().any(|f| f.code == "client_bound")
                {
                    step.flags.push(Flag::warning(
                        "client_bound",
                        format!(
                            "load generator {} used {busy_pct:.0}% of its {} thread(s): the figure may be its limit, not the server's (add --threads, or more generators)",
                            h.host, h.threads
                        ),
                    ));
                }
            }
            if !d.hosts.is_empty() {
                let skew = d.hosts.iter().map(|h| h.start_skew_s).fold(0.0, f64::max);
                let windows: Vec<(f64, f64)> = d
                    .hosts
                    .iter()
                    .map(|h| (h.started_unix_s, h.ended_unix_s))
                    .collect();
                // How far apart the generators really began, on the controller's clock
                // (each host's start corrected by its clock offset), beside how late
                // the latest woke against the common start on its own clock.
                let first = windows.iter().map(|w| w.0).fold(f64::INFINITY, f64::min);
                let last = windows
                    .iter()
                    .map(|w| w.0)
                    .fold(f64::NEG_INFINITY, f64::max);
                let overlap = window_overlap_s(&windows);
                let union = windows
                    .iter()
                    .map(|w| w.1)
                    .fold(f64::NEG_INFINITY, f64::max)
                    - first;
                step.metrics.extend([
                    Metric::new("start_skew_max_s", skew, "s"),
                    Metric::new("start_spread_s", (last - first).max(0.0), "s"),
                    Metric::new("window_overlap_s", overlap, "s"),
                ]);
                // The measurement window is the generators' common time; when it is
                // much shorter than their union, their figures are not of one moment.
                if union > 0.0 && overlap < 0.9 * union {
                    step.flags.push(Flag::warning(
                        "windows_apart",
                        format!(
                            "the generators measured together for only {overlap:.2} s of {union:.2} s: \
                             their throughputs are not of one moment"
                        ),
                    ));
                }
            }
        }
        if let Some(why) = d.failure() {
            step.error = Some(why.clone());
            step.flags.push(Flag::invalid("host_failed", why));
        }
    }

    /// Run one capacity step at `rate_per_s` requests/s in total (open loop,
    /// `--step-duration` seconds after `--warmup`), spread over the generators; rate 0
    /// is active idle (`--idle-duration` seconds with no load), which the capacity tests
    /// handle themselves. The runner wraps this to add CPU and power to
    /// `RateStep::extra`.
    pub fn measure_rate(&mut self, rate_per_s: f64, ctx: &Ctx) -> anyhow::Result<RateStep> {
        let started = SystemTime::now();
        let secs = self.cap.step_duration_s(&CAPACITY);
        // A step is a `load` job whose rate, length and way of waiting are the step's.
        let mut params = self.params.clone();
        params.insert("rate".into(), json!(rate_per_s));
        params.insert("duration".into(), json!(secs));
        params.remove("requests");
        let wait = if self.sleep_when_idle {
            "sleep"
        } else {
            "spin"
        };
        params.insert("wait".into(), json!(wait));
        ctx.note(&format!("http: {rate_per_s:.0} req/s for {secs}s"));
        let d = self.drive(&params, ctx)?;
        let out = &d.merged;
        let mut s = RateStep::from_outcome(rate_per_s, out);
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
        if let Some(why) = d.failure() {
            s.error = Some(why);
        }
        if let Some(why) = self.server_exited() {
            s.error = Some(why);
        }
        Ok(s)
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
        let started = SystemTime::now();
        let before = self.requests_served();
        let d = self.drive(&self.params, ctx)?;
        let after = self.requests_served();
        let (spec, out) = (&d.spec, &d.merged);
        let mut step = engine::validity::step_output(spec, out, "requests_per_s", "req/s");
        Self::add_generator_figures(&d, &mut step);
        // nginx's own count against the generators' (memtier's self-test). The second
        // status request counts itself; requests in flight when a timed test ends, and
        // those of the warm-up, are served but not counted by the generators; a failed
        // generator's requests reached nginx but not the merge.
        if let (Some(b), Some(a)) = (before, after) {
            let served = a.saturating_sub(b).saturating_sub(1);
            step.metrics
                .push(Metric::new("server_requests", served as f64, "requests"));
            let claimed = out.total_count();
            let lost: u64 = out.connection_errors.values().sum();
            let slack = (spec.connections * spec.pipeline) as u64;
            if spec.warmup.is_zero()
                && lost == 0
                && d.failed.is_empty()
                && (served < claimed || served > claimed + slack)
            {
                step.flags.push(Flag::warning(
                    "server_counter_mismatch",
                    format!("nginx counted {served} requests, the generators {claimed} replies"),
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
        let rs = RateStep::from_outcome(out.offered_rate.unwrap_or(0.0), out);
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
        // A launched server that died is a failed test, with what was measured kept.
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
        let sut = ctx.roles()?.sut.clone();
        let handle = sut.start_service("http", &self.params)?;
        self.facts = handle.facts.clone();
        let url = handle.endpoints.first().cloned();
        // Held before anything below can fail, so that cleanup stops the service.
        self.running = Some(Running { sut, handle });
        let Some(url) = url else {
            bail!("the http service gave no endpoint");
        };
        // The requests are built on each generator; built here too, so that a bad
        // method, header or path is an error before any load.
        let url = parse_url(&url)?;
        self.cfg.request_set(&url)?;
        self.facts.insert(
            "loadgen.http.paths".into(),
            Fact::known(self.cfg.paths(&url).join(" ")),
        );
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
        if let Some(r) = self.running.take() {
            r.sut.stop_service(r.handle.id);
        }
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

    fn cfg(connections: usize, requests: Option<u64>, rate: Option<f64>) -> HttpConfig {
        HttpConfig {
            connections,
            requests,
            rate,
            ..HttpConfig::default()
        }
    }

    #[test]
    fn shares_add_up_to_the_whole() {
        let s = shares(&cfg(7, Some(1001), Some(700.0)), 3).unwrap();
        assert_eq!(
            s.iter().map(|s| s.connections).collect::<Vec<_>>(),
            vec![3, 2, 2]
        );
        assert_eq!(s.iter().map(|s| s.requests.unwrap()).sum::<u64>(), 1001);
        let rates: Vec<f64> = s.iter().map(|s| s.rate.unwrap()).collect();
        assert_eq!(rates, vec![300.0, 200.0, 200.0]);
        assert_eq!(
            s.iter().map(|s| s.first_connection).collect::<Vec<_>>(),
            vec![0, 3, 5]
        );
        // Generator 0 keeps the seed (a single-host run is unchanged); the others differ.
        assert_eq!(s[0].seed, 1);
        assert!(s[1].seed != s[0].seed && s[2].seed != s[1].seed);
        let one = shares(&cfg(50, None, Some(1234.5)), 1).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(
            (one[0].connections, one[0].requests, one[0].rate),
            (50, None, Some(1234.5))
        );
    }

    #[test]
    fn too_few_connections_or_requests_for_the_generators_is_refused() {
        let e = shares(&cfg(1, None, None), 2).unwrap_err();
        assert!(e.to_string().contains("-c 2"), "{e}");
        let e = shares(&cfg(4, Some(1), None), 2).unwrap_err();
        assert!(e.to_string().contains("-n 2"), "{e}");
        // By duration, there is no count to spread.
        assert!(shares(&cfg(4, None, None), 2).is_ok());
    }

    #[test]
    fn overlap_is_the_intersection_of_the_windows() {
        assert_eq!(window_overlap_s(&[(10.0, 13.0), (10.5, 14.0)]), 2.5);
        assert_eq!(window_overlap_s(&[(10.0, 11.0), (12.0, 14.0)]), 0.0);
        assert_eq!(window_overlap_s(&[]), 0.0);
    }
}
