//! The kv controller: the `Workload` the runner drives. It starts the [`crate::service`]
//! on the system under test, gives each load generator its share of a test (clients,
//! requests, offered rate) as a [`crate::driver`] job behind one start barrier, merges
//! the generators' outcomes exactly (histograms bucket by bucket) and turns the merge
//! into the stored result, checked against the servers' own counters.
//!
//! With one host as both system under test and load generator this is the single-host
//! run of before: the same figures, the same checks, in-process.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use anyhow::{bail, Context};
use engine::capacity;
use engine::capacity_tests::{self, CapacityConfig};
use engine::host::{split_count, DriverJob, Host, ServiceHandle};
use engine::load::{LoadOutcome, LoadSpec};
use engine::validity::CLIENT_BOUND_FRACTION;
use engine::workload::{Ctx, Params, StepOutput, Workload};
use model::{Fact, Flag, Metric};
use serde_json::json;

use crate::{driver, KvConfig, Plan, CAPACITY};

/// Added to the seed once per generator index, so that generators do not send the same
/// key sequence (generator 0 keeps the seed: a single-host run is unchanged). Odd and
/// unrelated to the per-worker step the load loop adds, so the streams do not overlap.
const SEED_STEP: u64 = 0xD6E8_FEB8_6659_FD93;

/// The kv workload for one sweep point, as the controller holds it.
pub struct Kv {
    pub cfg: KvConfig,
    /// The capacity tests' parameters.
    pub cap: CapacityConfig,
    /// The sweep point's parameters as given: the service and the drivers read them
    /// again where they run (each generator's copy narrowed to its share).
    params: Params,
    running: Option<Running>,
    facts: BTreeMap<String, Fact>,
    /// Capacity found by a `ramp` or `search` test, for a `levels` test after it.
    capacity_found: Option<f64>,
    /// Whether the capacity test under way sleeps between sends (`--wait`).
    sleep_when_idle: bool,
    /// Why the load generator competes with the servers for CPUs, when it does.
    cpu_clash: Option<String>,
}

/// Does a load generator on the servers' host share their CPUs? `server`: the CPUs the
/// instances are pinned to; `client`: the generator's (empty: not pinned); `host`: every
/// CPU of the host when known. A generator that competes with the server it measures
/// takes its CPU away: the figure is then neither the server's nor the client's.
pub fn cpu_clash(server: &[usize], client: &[usize], host: Option<&[usize]>) -> Option<String> {
    if server.is_empty() {
        return None;
    }
    if client.is_empty() {
        let host = host?;
        return host.iter().all(|c| server.contains(c)).then(|| {
            format!(
                "the load generator is not pinned and the servers are on every CPU of their host ({}): \
                 they compete for CPUs (give --client-cpus and --server-cpus apart, or a load generator host)",
                list(server)
            )
        });
    }
    let shared: Vec<usize> = client
        .iter()
        .copied()
        .filter(|c| server.contains(c))
        .collect();
    (!shared.is_empty()).then(|| {
        format!(
            "the load generator (CPUs {}) shares CPU {} with the servers (CPUs {}): they compete for it",
            list(client),
            list(&shared),
            list(server)
        )
    })
}

fn list(cpus: &[usize]) -> String {
    cpus.iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// The service started on the system under test.
struct Running {
    sut: Arc<dyn Host>,
    handle: ServiceHandle,
}

/// One load generator's share of a test.
#[derive(Debug, Clone, PartialEq)]
pub struct Share {
    pub clients: usize,
    pub requests: u64,
    /// Its part of the offered rate, in proportion to its clients, so that every
    /// connection offers the same rate wherever it runs.
    pub rate: Option<f64>,
    pub seed: u64,
    /// The index of its first client among all: connections are spread over the
    /// endpoints from there, as one generator with every client would spread them.
    pub first_client: usize,
}

/// Spread a test's clients, requests and rate across `generators`. Every generator
/// gets at least one client (and, when the test stops after a count, one request).
pub fn shares(cfg: &KvConfig, generators: usize) -> anyhow::Result<Vec<Share>> {
    let n = generators.max(1);
    if cfg.clients < n {
        bail!(
            "{} client(s) cannot be spread over {n} load generators: give at least one per generator (-c {n})",
            cfg.clients
        );
    }
    let requests = usize::try_from(cfg.requests).context("requests (-n) is too large")?;
    if cfg.duration.is_none() && requests < n {
        bail!(
            "{requests} request(s) cannot be spread over {n} load generators: give at least one per generator (-n {n})"
        );
    }
    let clients = split_count(cfg.clients, n);
    let requests = split_count(requests, n);
    let mut first_client = 0;
    let mut out = Vec::with_capacity(n);
    for (i, (c, r)) in clients.into_iter().zip(requests).enumerate() {
        out.push(Share {
            clients: c,
            requests: r as u64,
            // A lone generator offers the rate as given, not one rounded through the
            // proportion.
            rate: cfg.rate.map(|rate| {
                if c == cfg.clients {
                    rate
                } else {
                    rate * c as f64 / cfg.clients as f64
                }
            }),
            seed: cfg.seed.wrapping_add(SEED_STEP.wrapping_mul(i as u64)),
            first_client,
        });
        first_client += c;
    }
    Ok(out)
}

/// What one generator measured, for the per-host figures.
#[derive(Debug, Clone)]
struct HostRun {
    host: String,
    clients: usize,
    /// Threads its load loop ran (never more than its connections).
    threads: usize,
    ops_per_s: f64,
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

impl Kv {
    pub fn from_params(p: &Params) -> anyhow::Result<Kv> {
        let plan = Plan::from_params(p)?;
        Ok(Kv {
            cfg: plan.cfg,
            cap: plan.cap,
            params: p.clone(),
            running: None,
            facts: BTreeMap::new(),
            capacity_found: None,
            sleep_when_idle: false,
            cpu_clash: None,
        })
    }

    /// The endpoints being driven (after prepare), as the load generators are told them.
    pub fn endpoints(&self) -> &[String] {
        self.running
            .as_ref()
            .map_or(&[], |r| r.handle.endpoints.as_slice())
    }

    fn running(&self) -> anyhow::Result<&Running> {
        self.running
            .as_ref()
            .context("kv: no service running (prepare first)")
    }

    /// The servers' own command counts (None when they cannot be asked: the check that
    /// uses them is skipped, as with a managed server that refuses INFO).
    fn server_counters(&self) -> Option<BTreeMap<String, u64>> {
        let r = self.running.as_ref()?;
        let v = r.sut.service_query(r.handle.id, "counters").ok()?;
        serde_json::from_value(v).ok()
    }

    /// Why a server is gone, if one is.
    fn server_exited(&self) -> Option<String> {
        let r = self.running.as_ref()?;
        match r.sut.service_exited(r.handle.id) {
            Ok(why) => why,
            Err(e) => Some(format!(
                "cannot ask {} whether its servers run: {e:#}",
                r.sut.name()
            )),
        }
    }

    /// Run `test` on every load generator, each with its share of `params`, and merge.
    fn drive(&self, test: &str, params: &Params, ctx: &Ctx) -> anyhow::Result<Driven> {
        let running = self.running()?;
        let loadgens = &ctx.roles()?.loadgens;
        if loadgens.is_empty() {
            bail!("kv needs at least one load-generator host");
        }
        let endpoints = &running.handle.endpoints;
        if endpoints.is_empty() {
            bail!("the kv service on {} gave no endpoints", running.sut.name());
        }
        let plan = Plan::from_params(params)?;
        let shares = shares(&plan.cfg, loadgens.len())?;
        let n = shares.len();
        let jobs: Vec<(Arc<dyn Host>, DriverJob)> = loadgens
            .iter()
            .zip(&shares)
            .enumerate()
            .map(|(index, (host, s))| {
                let mut p = params.clone();
                p.insert("clients".into(), json!(s.clients));
                p.insert("requests".into(), json!(s.requests));
                if let Some(rate) = s.rate {
                    p.insert("rate".into(), json!(rate));
                }
                p.insert("seed".into(), json!(s.seed));
                let mut eps = endpoints.clone();
                eps.rotate_left(s.first_client % endpoints.len());
                let job = DriverJob {
                    workload: "kv".into(),
                    test: test.into(),
                    params: p,
                    endpoints: eps,
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
                        clients: share.clients,
                        threads: plan.cfg.threads.clamp(1, share.clients),
                        ops_per_s: o.throughput(),
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
        spec.connections = hosts.iter().map(|h| h.clients).sum();
        spec.threads = hosts.iter().map(|h| h.threads).sum();
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
                    Metric::new("ops_per_s", h.ops_per_s, "ops/s").label("host", &h.host),
                    Metric::new("requests", h.requests as f64, "requests").label("host", &h.host),
                    Metric::new("loadgen_cpu_s", h.cpu_s, "s").label("host", &h.host),
                    Metric::new("loadgen_busy_pct", busy_pct, "%").label("host", &h.host),
                ]);
                // The whole's busy figure averages the generators: one saturated among
                // idle ones would hide in it.
                // (An open loop spins by design: it is judged by its schedule instead.)
                if d.spec.shape == engine::load::LoadShape::Closed
                    && busy_pct >= CLIENT_BOUND_FRACTION * 100.0
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
}

impl Workload for Kv {
    fn name(&self) -> &'static str {
        "kv"
    }

    fn tests(&self) -> Vec<String> {
        self.cfg.tests.clone()
    }

    fn prepare(&mut self, ctx: &Ctx) -> anyhow::Result<()> {
        let roles = ctx.roles()?;
        let sut = roles.sut.clone();
        let handle = sut.start_service("kv", &self.params)?;
        self.facts = handle.facts.clone();
        // Only a generator on the servers' own host can take their CPUs.
        if roles.loadgens.iter().any(|g| g.name() == sut.name()) {
            let server: Vec<usize> = self
                .facts
                .get("server.cpus")
                .and_then(|f| f.value.as_deref())
                .map(|v| v.split(',').filter_map(|c| c.trim().parse().ok()).collect())
                .unwrap_or_default();
            let client = engine::launch::cpus_from_values(&self.cfg.client_cpus, "client_cpus")?;
            // This machine's CPUs are known here; another host's are not.
            let here = (sut.name() == "local").then(engine::launch::allowed_cpus);
            self.cpu_clash = cpu_clash(&server, &client, here.as_deref());
        }
        self.running = Some(Running { sut, handle });
        Ok(())
    }

    fn run_test(&mut self, test: &str, ctx: &Ctx) -> anyhow::Result<StepOutput> {
        if capacity_tests::TESTS.contains(&test) {
            return self.run_capacity(test, ctx);
        }
        // Refused here, before any generator is bothered with it.
        self.cfg.mix(test)?;
        let before = self.server_counters();
        let d = self.drive(test, &self.params, ctx)?;
        let out = &d.merged;
        let mut step = engine::validity::step_output(&d.spec, out, "ops_per_s", "ops/s");
        Self::add_generator_figures(&d, &mut step);
        if let Some(why) = &self.cpu_clash {
            step.flags.push(Flag::warning("shares_cpus", why.clone()));
        }

        // Server-side counters against what the generators claim (memtier's self-test).
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
            // A failed generator's requests reached the servers but not the merge.
            if d.spec.warmup.is_zero()
                && lost == 0
                && d.failed.is_empty()
                && server_calls != claimed
            {
                step.flags.push(Flag::warning(
                    "server_counter_mismatch",
                    format!("the servers counted {server_calls} calls, the generators {claimed}"),
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
        if let Some(why) = self.server_exited() {
            step.error = Some(why.clone());
            step.flags.push(Flag::invalid("server_died", why));
        }
        Ok(step)
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

impl Kv {
    /// One open-loop step of the capacity tests at `rate` requests/s in total on the
    /// `mix` operations (--ratio), `--step-duration` seconds, spread over the generators.
    pub fn measure_rate(&mut self, rate: f64, ctx: &Ctx) -> anyhow::Result<capacity::RateStep> {
        let started = SystemTime::now();
        let secs = self.cap.step_duration_s(&CAPACITY);
        // A step is a `mix` job whose rate, length and way of waiting are the step's.
        let mut params = self.params.clone();
        params.insert("rate".into(), json!(rate));
        params.insert("duration".into(), json!(secs));
        let wait = if self.sleep_when_idle {
            "sleep"
        } else {
            "spin"
        };
        params.insert("wait".into(), json!(wait));
        ctx.note(&format!("kv: {rate:.0} ops/s for {secs}s"));
        let d = self.drive("mix", &params, ctx)?;
        let mut s = capacity::RateStep::from_outcome(rate, &d.merged);
        s.started_at = Some(started);
        if let Some(why) = d.failure() {
            s.error = Some(why);
        }
        if let Some(why) = self.server_exited() {
            s.error = Some(why);
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

#[cfg(test)]
mod tests {

    #[test]
    fn a_generator_on_the_servers_cpus_is_named() {
        // --client-cpus 0 --server-cpus 0 (issue 13 item 5).
        let why = cpu_clash(&[0], &[0], Some(&[0, 1])).expect("flagged");
        assert!(why.contains("shares CPU 0"), "{why}");
        // Apart: nothing to say.
        assert_eq!(cpu_clash(&[0], &[1], Some(&[0, 1])), None);
        // Unpinned, with a server on every CPU of the host.
        let why = cpu_clash(&[0, 1], &[], Some(&[0, 1])).expect("flagged");
        assert!(why.contains("not pinned"), "{why}");
        // Unpinned with a CPU left free, or a host whose CPUs are unknown: not judged.
        assert_eq!(cpu_clash(&[0], &[], Some(&[0, 1])), None);
        assert_eq!(cpu_clash(&[0, 1], &[], None), None);
    }

    use super::*;

    fn cfg(clients: usize, requests: u64, rate: Option<f64>) -> KvConfig {
        KvConfig {
            clients,
            requests,
            rate,
            ..KvConfig::default()
        }
    }

    #[test]
    fn shares_add_up_to_the_whole() {
        let s = shares(&cfg(7, 1001, Some(700.0)), 3).unwrap();
        assert_eq!(
            s.iter().map(|s| s.clients).collect::<Vec<_>>(),
            vec![3, 2, 2]
        );
        assert_eq!(s.iter().map(|s| s.requests).sum::<u64>(), 1001);
        let rates: Vec<f64> = s.iter().map(|s| s.rate.unwrap()).collect();
        assert_eq!(rates, vec![300.0, 200.0, 200.0]);
        assert_eq!(
            s.iter().map(|s| s.first_client).collect::<Vec<_>>(),
            vec![0, 3, 5]
        );
        // Generator 0 keeps the seed (a single-host run is unchanged); the others differ.
        assert_eq!(s[0].seed, 1);
        assert!(s[1].seed != s[0].seed && s[2].seed != s[1].seed);
        assert_eq!(shares(&cfg(50, 100_000, None), 1).unwrap()[0].clients, 50);
    }

    #[test]
    fn too_few_clients_or_requests_for_the_generators_is_refused() {
        let e = shares(&cfg(1, 100, None), 2).unwrap_err();
        assert!(e.to_string().contains("-c 2"), "{e}");
        let e = shares(&cfg(4, 1, None), 2).unwrap_err();
        assert!(e.to_string().contains("-n 2"), "{e}");
        // By duration, the request count does not matter.
        let mut c = cfg(4, 1, None);
        c.duration = Some(1.0);
        assert!(shares(&c, 2).is_ok());
    }

    #[test]
    fn overlap_is_the_intersection_of_the_windows() {
        assert_eq!(window_overlap_s(&[(10.0, 13.0), (10.5, 14.0)]), 2.5);
        assert_eq!(window_overlap_s(&[(10.0, 11.0), (12.0, 14.0)]), 0.0);
        assert_eq!(window_overlap_s(&[]), 0.0);
    }
}
