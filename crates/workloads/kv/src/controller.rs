//! The kv controller: the `Workload` the runner drives. It starts the [`crate::service`]
//! on the system under test, gives each load generator its share of a test (clients,
//! requests, offered rate) as a [`crate::driver`] job behind one start barrier, merges
//! the generators' outcomes exactly (histograms bucket by bucket) and turns the merge
//! into the stored result, checked against the servers' own counters.
//!
//! With one host as both system under test and load generator this is the single-host
//! run of before: the same figures, the same checks, in-process.

use std::collections::BTreeMap;
use std::time::SystemTime;

use anyhow::{bail, Context};
use engine::capacity;
use engine::capacity_tests::{self, CapacityConfig};
use engine::host::{DriverJob, Running};
use engine::load::{LoadShape, LoadSpec};
use engine::workload::{Ctx, Params, StepOutput, Workload};
use model::{Fact, Flag, Metric};
use serde_json::json;

use crate::{KvConfig, Plan, CAPACITY};

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
    /// Several servers on one CPU, or more generator threads than their CPUs.
    oversubscribed: Option<String>,
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

/// Several launched servers pinned to one CPU (`--instances 3` on 2 CPUs), or more
/// generator threads than the CPUs they are pinned to: they take turns on a CPU, and the
/// figure measures the sharing as much as the servers.
pub fn oversubscribed(server: &[usize], client: &[usize], threads: usize) -> Option<String> {
    let mut distinct = server.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    let mut why = Vec::new();
    if distinct.len() < server.len() {
        why.push(format!(
            "{} redis-server instances on {} CPU{} ({}): instances share a CPU",
            server.len(),
            distinct.len(),
            if distinct.len() == 1 { "" } else { "s" },
            list(server)
        ));
    }
    if !client.is_empty() && threads > client.len() {
        why.push(format!(
            "{threads} load-generator threads on {} CPU{} ({}): threads share a CPU",
            client.len(),
            if client.len() == 1 { "" } else { "s" },
            list(client)
        ));
    }
    (!why.is_empty()).then(|| {
        format!(
            "{} (use at most one per CPU, or give more CPUs)",
            why.join("; ")
        )
    })
}

fn list(cpus: &[usize]) -> String {
    cpus.iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// A test driven on every generator, merged, with the load as a whole (for the checks
/// `step_output` makes).
struct Driven {
    spread: engine::spread::Driven,
    spec: LoadSpec,
}

/// The load of a kv test as a whole, to be spread over the generators.
pub fn load(cfg: &KvConfig) -> engine::spread::Load {
    engine::spread::Load {
        connections: cfg.clients,
        requests: cfg.duration.is_none().then_some(cfg.requests),
        rate: cfg.rate,
        seed: cfg.seed,
        threads: cfg.threads,
        connections_flag: "-c",
        requests_flag: "-n",
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
            oversubscribed: None,
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
        let v = r.query("counters").ok()?;
        serde_json::from_value(v).ok()
    }

    /// Why a server is gone, if one is.
    fn server_exited(&self) -> Option<String> {
        self.running.as_ref()?.exited("its servers")
    }

    /// Run `test` on every load generator, each with its share of `params`, and merge.
    fn drive(&self, test: &str, params: &Params, ctx: &Ctx) -> anyhow::Result<Driven> {
        let running = self.running()?;
        let roles = ctx.roles()?;
        let loadgens = &roles.loadgens;
        let endpoints = &running.handle.endpoints;
        if endpoints.is_empty() {
            bail!("the kv service on {} gave no endpoints", running.sut.name());
        }
        let plan = Plan::from_params(params)?;
        let shares = engine::spread::shares(&load(&plan.cfg), loadgens.len())?;
        let n = shares.len();
        let spread = engine::spread::drive(
            roles,
            &shares,
            plan.cfg.threads,
            &ctx.progress,
            |index, s| {
                let mut p = params.clone();
                p.insert("clients".into(), json!(s.connections));
                if let Some(r) = s.requests {
                    p.insert("requests".into(), json!(r));
                }
                if let Some(rate) = s.rate {
                    p.insert("rate".into(), json!(rate));
                }
                p.insert("seed".into(), json!(s.seed));
                let mut eps = endpoints.clone();
                eps.rotate_left(s.first_connection % endpoints.len());
                DriverJob {
                    workload: "kv".into(),
                    test: test.into(),
                    params: p,
                    endpoints: eps,
                    index,
                    generators: n,
                }
            },
        )?;
        let mut spec = plan.cfg.spec(Vec::new());
        spec.connections = spread.connections();
        spec.threads = spread.threads();
        Ok(Driven { spread, spec })
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
        let server: Vec<usize> = self
            .facts
            .get("server.cpus")
            .and_then(|f| f.value.as_deref())
            .map(|v| v.split(',').filter_map(|c| c.trim().parse().ok()).collect())
            .unwrap_or_default();
        let client = engine::launch::cpus_from_values(&self.cfg.client_cpus, "client_cpus")?;
        self.oversubscribed = oversubscribed(&server, &client, self.cfg.threads);
        // Only a generator on the servers' own host can take their CPUs.
        if roles.loadgens.iter().any(|g| g.name() == sut.name()) {
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
        let out = &d.spread.merged;
        let mut step = engine::validity::step_output(&d.spec, out, "ops_per_s", "ops/s");
        d.spread.add_figures(
            &mut step,
            engine::spread::Figures {
                rate: ("ops_per_s", "ops/s"),
                count: ("requests", "requests"),
            },
            d.spec.shape == LoadShape::Closed,
        );
        // Latency views: the share over each threshold, weighted mean, jitter.
        let rs = capacity::RateStep::from_outcome(out.offered_rate.unwrap_or(0.0), out);
        if let Some(h) = &rs.latency {
            step.metrics.extend(engine::histlog::view_metrics(
                h,
                &self.cfg.thresholds_ns(),
                &[("kind", rs.latency_kind.clone())],
            ));
        }
        if let Some(why) = &self.cpu_clash {
            step.flags.push(Flag::warning("shares_cpus", why.clone()));
        }
        if let Some(why) = &self.oversubscribed {
            step.flags
                .push(Flag::warning("cpus_oversubscribed", why.clone()));
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
                && d.spread.failed.is_empty()
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
            r.stop();
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
        let mut s = capacity::RateStep::from_outcome(rate, &d.spread.merged);
        s.started_at = Some(started);
        if let Some(why) = d.spread.failure() {
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
    use super::*;

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

    #[test]
    fn more_servers_or_threads_than_cpus_are_oversubscribed() {
        let why = oversubscribed(&[0, 1, 0], &[], 1).expect("flagged");
        assert!(
            why.contains("3 redis-server instances on 2 CPUs (0,1,0)"),
            "{why}"
        );
        let why = oversubscribed(&[0], &[1], 4).expect("flagged");
        assert!(
            why.contains("4 load-generator threads on 1 CPU (1)"),
            "{why}"
        );
        assert_eq!(oversubscribed(&[0, 1], &[], 8), None, "unpinned threads");
        assert_eq!(oversubscribed(&[0, 1], &[0, 1], 2), None);
    }

    fn cfg(clients: usize, requests: u64, rate: Option<f64>) -> KvConfig {
        KvConfig {
            clients,
            requests,
            rate,
            ..KvConfig::default()
        }
    }

    #[test]
    fn kv_spreads_clients_requests_and_rate() {
        let s = engine::spread::shares(&load(&cfg(7, 1001, Some(700.0))), 3).unwrap();
        assert_eq!(
            s.iter().map(|s| s.connections).collect::<Vec<_>>(),
            vec![3, 2, 2]
        );
        assert_eq!(s.iter().map(|s| s.requests.unwrap()).sum::<u64>(), 1001);
        let rates: Vec<f64> = s.iter().map(|s| s.rate.unwrap()).collect();
        assert_eq!(rates, vec![300.0, 200.0, 200.0]);
        // Generator 0 keeps the seed (a single-host run is unchanged).
        assert_eq!(s[0].seed, 1);
        let e = engine::spread::shares(&load(&cfg(1, 100, None)), 2).unwrap_err();
        assert!(e.to_string().contains("-c 2"), "{e}");
        // By duration, the request count does not matter.
        let mut c = cfg(4, 1, None);
        c.duration = Some(1.0);
        assert!(engine::spread::shares(&load(&c), 2).is_ok());
    }
}
