//! The kv controller: the `Workload` the runner drives. It starts the [`crate::service`]
//! on the system under test, gives each load generator its share of a test (clients,
//! requests, offered rate) as a [`crate::driver`] job behind one start barrier, merges
//! the generators' outcomes exactly (histograms bucket by bucket) and turns the merge
//! into the stored result, checked against the servers' own counters.
//!
//! With one host as both system under test and load generator this is the single-host
//! run of before: the same figures, the same checks, in-process.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context};
use engine::capacity;
use engine::capacity_tests::{self, CapacityConfig};
use engine::cpu_use::CpuUse;
use engine::host::{DriverJob, Running};
use engine::load::{LoadShape, LoadSpec};
use engine::workload::{CpuList, CpuRole, Ctx, Params, StepOutput, Workload};
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
    capacity_found: capacity_tests::Found,
    /// Whether the capacity test under way sleeps between sends (`--wait`).
    sleep_when_idle: bool,
    /// How the servers and the load generator sit on the CPUs (said on every result).
    cpu_use: CpuUse,
}

/// A test driven on every generator, merged, with the load as a whole (for the checks
/// `step_output` makes).
struct Driven {
    spread: engine::spread::Driven,
    spec: LoadSpec,
}

impl Driven {
    /// `spread`, a run of `test` at the sweep point `plan`, with its load as a whole.
    fn of(spread: engine::spread::Driven, plan: &Plan, test: &str) -> Driven {
        let mut spec = plan.cfg.spec(Vec::new());
        spec.connections = spread.connections();
        spec.threads = spread.threads();
        spec.sleep_when_idle = plan.cap.sleep_when_idle(test);
        Driven { spread, spec }
    }
}

/// A plain load test's checkpoints, merged over its generators ([`engine::spread::drive`]).
type Checkpoint<'a> = &'a (dyn Fn(engine::spread::Driven) + Sync);

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

/// The key stream of `test` from the run's `seed`: each test draws keys of its own, as
/// redis-benchmark's do (its random stream runs on across tests). With one stream for
/// every test, a GET after a SET asked for exactly the keys the SET wrote, in the same
/// order: 100% hits whatever `-r` and `-n` (redis-benchmark's server counted 9.4% at
/// `-r 1000000 -n 100000`), and the low hit ratio check could never fire after `set`.
/// Still reproducible: the same seed and test draw the same keys, in every repetition
/// and every capacity step (which all drive `mix`), where redis-benchmark's stream would
/// run on.
fn test_seed(seed: u64, test: &str) -> u64 {
    seed ^ model::fnv1a64(test.as_bytes())
}

impl Kv {
    pub fn from_params(p: &Params) -> anyhow::Result<Kv> {
        let plan = Plan::from_params(p)?;
        // Connection i of the whole load goes to server i mod n (each generator's share
        // starts where the one before it ended): with fewer connections than servers, the
        // last ones sit idle while the result says it ran on all of them. The whole load's
        // count, here: a generator's share is rightly below it.
        let (clients, servers) = (plan.cfg.clients, plan.cfg.servers());
        if clients < servers {
            bail!(
                "-c {clients} connects to {clients} of the {servers} servers, and the other {} \
                 would sit idle though the result counts them; give -c {servers} or more (a \
                 multiple of {servers} loads them evenly)",
                servers - clients
            );
        }
        Ok(Kv {
            cfg: plan.cfg,
            cap: plan.cap,
            params: p.clone(),
            running: None,
            facts: BTreeMap::new(),
            capacity_found: capacity_tests::Found::default(),
            sleep_when_idle: false,
            cpu_use: CpuUse::default(),
        })
    }

    /// The CPU each launched server was pinned to, in order (the `server.cpus` fact):
    /// None for a given server (`--target`), or one not pinned.
    fn launched_server_cpus(&self) -> Option<Vec<usize>> {
        let v = self.facts.get("server.cpus")?.value.as_deref()?;
        v.split(',').map(|c| c.trim().parse().ok()).collect()
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
        self.read_server_counters().ok()
    }

    /// The servers' command counters, or why they could not be read (a server gone, one
    /// that refuses INFO).
    fn read_server_counters(&self) -> Result<BTreeMap<String, u64>, String> {
        let r = self.running.as_ref().ok_or("no servers run")?;
        let v = r.query("counters").map_err(|e| format!("{e:#}"))?;
        serde_json::from_value(v).map_err(|e| format!("their answer was not counters: {e}"))
    }

    /// Why a server is gone (or cannot be asked), if one is: the flag, its message the error.
    fn server_exited(&self) -> Option<Flag> {
        self.running.as_ref()?.exited("its servers")
    }

    /// Run `test` on every load generator, each with its share of `params`, and merge;
    /// its checkpoints, if wanted, go to `checkpoint`.
    fn drive(
        &self,
        test: &str,
        params: &Params,
        ctx: &Ctx,
        checkpoint: Option<Checkpoint>,
    ) -> anyhow::Result<Driven> {
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
            &[running],
            checkpoint,
            |index, s| {
                let mut p = params.clone();
                p.insert("clients".into(), json!(s.connections));
                if let Some(r) = s.requests {
                    p.insert("requests".into(), json!(r));
                }
                if let Some(rate) = s.rate {
                    p.insert("rate".into(), json!(rate));
                }
                p.insert("seed".into(), json!(test_seed(s.seed, test)));
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
        Ok(Driven::of(spread, &plan, test))
    }

    /// A load test's result from what its generators measured (`d`), up to the checks
    /// of the servers' own counters: at its end, or at a checkpoint while it ran. One
    /// conversion for both, so that a provisional result reads as the final one does;
    /// a checkpoint's says what it is and what it cannot have yet.
    fn load_step(&self, test: &str, d: &Driven) -> StepOutput {
        let out = &d.spread.merged;
        let mut step = engine::validity::step_output(&d.spec, out, "ops_per_s", "ops/s");
        step.missing.extend(engine::validity::connect_not_timed(
            &d.spec, out, &RECONNECT,
        ));
        step.measured = d
            .spread
            .measured_window(d.spec.warmup)
            .into_iter()
            .collect();
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
        self.cpu_use.flag(&mut step);
        if let Some(f) = uneven_connections(self.cfg.clients, self.cfg.servers()) {
            step.flags.push(f);
        }
        // A mix's GETs as a `get` test's: mostly misses measure the server's cheap path
        // (acceptance M, 4: a mix at 8% hits went unflagged).
        if test == "get" || test == "mix" {
            if let Some(m) = step.metrics.iter().find(|m| m.name == "hit_ratio_pct") {
                if m.value < 90.0 {
                    let tests = &self.cfg.tests;
                    let set_ran = tests
                        .iter()
                        .position(|t| t == "set")
                        .is_some_and(|s| tests.iter().position(|t| t == test) > Some(s));
                    // More SETs write more of the keyspace: a longer test, by the knob
                    // that sizes this one (-n is refused beside --duration).
                    let more = if self.cfg.duration.is_some() {
                        "raise --duration"
                    } else {
                        "raise -n"
                    };
                    let advice = if set_ran {
                        // The SETs before did run: they left keys of the keyspace unwritten.
                        format!(
                            "the SETs before it left part of the keyspace (-r {}, over {} server(s)) unwritten: {more} or lower -r",
                            self.cfg.keyspace, self.cfg.servers()
                        )
                    } else if test == "mix" {
                        format!("until its own SETs have written a key, the mix's GETs of it miss: run `set` first (-t set,mix) or {more}")
                    } else {
                        // A GET writes nothing: more of them find no more keys.
                        "run `set` first (-t set,get)".to_string()
                    };
                    step.flags.push(Flag::warning(
                        "low_hit_ratio",
                        format!("only {:.1}% of GETs found their key: {advice}", m.value),
                    ));
                }
            }
        }
        // Against a server filled by something else (another tool's SETs on a --target)
        // every GET differs from what rackbench writes: said, with the way out.
        for f in step.flags.iter_mut().filter(|f| f.code == "value_mismatch") {
            f.message.push_str(
                ": a server that drops or corrupts data, or keys written by something else \
                 (another tool's SETs on a --target); run `set` first (-t set,get), or leave \
                 the values unchecked with --verify false",
            );
        }
        d.spread.mark_checkpoint(
            &mut step,
            test,
            &d.spec.stop,
            &[("server_calls", "the servers' own command counts are read")],
        );
        step
    }
}

/// Connections that do not divide evenly over the servers (connection i goes to server
/// i mod n): some servers carry one connection more than the others, so the per-server
/// load the result stands for is not one load. Refused below one each
/// ([`KvConfig::servers`]).
fn uneven_connections(clients: usize, servers: usize) -> Option<Flag> {
    if servers <= 1 || clients.is_multiple_of(servers) {
        return None;
    }
    let each = clients / servers;
    Some(Flag::warning(
        "uneven_connections",
        format!(
            "{clients} connections over {servers} servers: {} of them carry {} and the \
             other {} carry {each}, so the servers were not equally loaded; give -c as a \
             multiple of {servers}",
            clients % servers,
            each + 1,
            servers - clients % servers,
        ),
    ))
}

impl Workload for Kv {
    /// The resolved config and the capacity tests' knobs given (their defaults follow
    /// from the config).
    fn settings(&self) -> Params {
        let mut s = engine::workload::settings_of(&[
            serde_json::to_value(&self.cfg),
            serde_json::to_value(&self.cap),
        ]);
        // A test stopped by --duration sends no set number of requests: the default
        // count is not a setting it ran at.
        if self.cfg.duration.is_some() {
            s.remove("requests");
        }
        // Against --targets, the servers' count is the targets': a run of 4 targets
        // stored `instances=1`, and was "NOT like for like" with 4 launched instances
        // for that alone. (The launch knobs stay, as runs before stored them: dropped,
        // a run of one target was not like for like with its own earlier runs.)
        if !self.cfg.targets.is_empty() {
            s.insert(
                "instances".into(),
                serde_json::json!(self.cfg.targets.len()),
            );
        }
        // Without --server-cpus, the CPUs the launched servers were pinned to (one each,
        // in turn over the CPUs rackbench may use): the setting they ran at, as a typed
        // `--server-cpus 0` is; stored empty, it read as "not pinned", and a run at the
        // default was "NOT like for like" with one that typed it (acceptance P, 1).
        if self.cfg.server_cpus.is_empty() {
            if let Some(cpus) = self.launched_server_cpus() {
                s.insert("server_cpus".into(), serde_json::json!(cpus));
            }
        }
        s
    }

    fn name(&self) -> &'static str {
        "kv"
    }

    fn tests(&self) -> Vec<String> {
        self.cfg.tests.clone()
    }

    fn warmup_s(&self, _test: &str) -> Option<f64> {
        Some(self.cfg.warmup)
    }

    fn check_launch_here(&self) -> anyhow::Result<()> {
        if self.cfg.targets.is_empty() {
            engine::launch::find_binary(&self.cfg.redis_server, "redis-server")
                .context("--redis-server")?;
        }
        Ok(())
    }

    fn cpu_lists(&self) -> anyhow::Result<Vec<CpuList>> {
        let plan = Plan::from_params(&self.params)?;
        Ok(vec![
            CpuList {
                flag: "--server-cpus",
                role: CpuRole::Sut,
                cpus: plan.server_cpus,
            },
            CpuList {
                flag: "--client-cpus",
                role: CpuRole::Generator,
                cpus: plan.client_cpus,
            },
        ])
    }

    fn connections_per_generator(&self, generators: usize) -> anyhow::Result<Option<u64>> {
        let mut load = load(&self.cfg);
        // Capacity steps run for a duration: -n counts for the load tests only.
        if self
            .cfg
            .tests
            .iter()
            .all(|t| capacity_tests::TESTS.contains(&t.as_str()))
        {
            load.requests = None;
        }
        engine::spread::most_connections(&load, generators)
    }

    fn prepare(&mut self, ctx: &Ctx) -> anyhow::Result<()> {
        let roles = ctx.roles()?;
        let sut = roles.sut.clone();
        let handle = sut.start_service("kv", &self.params).map_err(|e| {
            // Given servers are checked from the system under test: from another
            // machine, the error names it (its 127.0.0.1 is its own).
            let targets = &self.cfg.targets;
            let loopback = targets.iter().find(|t| engine::host::names_loopback(t));
            match loopback.or(targets.first()) {
                Some(t) if sut.remote() => e.context(engine::host::reached_from(
                    sut.name(),
                    "the system under test",
                    Some(t),
                )),
                _ => e,
            }
        })?;
        self.facts = handle.facts.clone();
        let server: Vec<usize> = self.launched_server_cpus().unwrap_or_default();
        let client = engine::launch::cpus_from_values(&self.cfg.client_cpus, "client_cpus")?;
        self.cpu_use = CpuUse::judge(roles, &server, &client).with_oversubscription(
            &server,
            "redis-server instances",
            &client,
            self.cfg.threads,
        );
        self.running = Some(Running { sut, handle });
        Ok(())
    }

    fn run_test(&mut self, test: &str, ctx: &Ctx) -> anyhow::Result<StepOutput> {
        if capacity_tests::TESTS.contains(&test) {
            let mut step = self.run_capacity(test, ctx)?;
            self.cpu_use.flag(&mut step);
            step.flags
                .extend(low_hit_ratio_steps(&step.metrics, &self.cfg));
            // A server that died during the steps (the procedure stopped at its step)
            // is named as a load test's is.
            if let Some(flag) = self.server_exited() {
                step.error.get_or_insert_with(|| flag.message.clone());
                step.flags.push(flag);
            }
            return Ok(step);
        }
        // Refused here, before any generator is bothered with it.
        self.cfg.mix(test)?;
        let before = self.server_counters();
        let warmup = Duration::from_secs_f64(self.cfg.warmup.max(0.0));
        // Checkpoints while it runs, stored as its provisional result where the runner
        // keeps one: rackbench killed mid-test keeps what was measured up to the last.
        let plan = Plan::from_params(&self.params)?;
        let save = ctx.partial.is_some().then_some(|spread| {
            ctx.save_partial(&self.load_step(test, &Driven::of(spread, &plan, test)));
        });
        let (d, at_warmup_end) = engine::spread::read_at_warmup_end(
            ctx.roles()?.start_lead(),
            warmup,
            || self.server_counters(),
            || {
                self.drive(
                    test,
                    &self.params,
                    ctx,
                    save.as_ref().map(|f| f as Checkpoint),
                )
            },
        );
        let d = d?;
        let out = &d.spread.merged;
        let mut step = self.load_step(test, &d);

        // Server-side counters against what the generators claim (memtier's self-test),
        // over the measured window: from the end of the warm-up when there is one (the
        // servers count the warm-up's calls too, which the generators' figures leave out).
        let claimed = out.total_count();
        let (start, allowance) = engine::spread::server_count_window(
            &d.spec,
            warmup,
            before,
            at_warmup_end,
            step.measured.first(),
            out,
        );
        match (start, self.read_server_counters()) {
            (Some(b), Ok(a)) => {
                let delta = |cmd: &str| {
                    a.get(cmd)
                        .copied()
                        .unwrap_or(0)
                        .saturating_sub(b.get(cmd).copied().unwrap_or(0))
                };
                let server_calls = delta("set") + delta("get") + delta("ping");
                step.metrics.push(engine::spread::server_count_metric(
                    Metric::new("server_calls", server_calls as f64, "calls"),
                    warmup,
                ));
                if let Some((after, note)) = engine::spread::count_mismatch(
                    allowance,
                    server_calls,
                    out,
                    &d.spread.failed,
                    warmup,
                    "the servers were",
                ) {
                    step.flags.push(Flag::warning(
                        "server_counter_mismatch",
                        format!(
                            "the servers counted {server_calls} calls{after}, the generators \
                             {claimed}: check that nothing else uses these servers{note}"
                        ),
                    ));
                }
            }
            (_, after) => step.missing.push(engine::spread::server_count_missing(
                "server_calls",
                "the servers' counters",
                warmup,
                out,
                after.err(),
            )),
        }
        // A launched server that died is a failed test, with what was measured kept.
        if let Some(flag) = self.server_exited() {
            step.error = Some(flag.message.clone());
            step.flags.push(flag);
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

/// kv's reconnect knob (redis-benchmark's -k), for why a test timed no connect.
const RECONNECT: engine::validity::ReconnectKnob = engine::validity::ReconnectKnob {
    kept_alive: "-k 1",
    every_n: "-k 0 -P",
    to_time: "-k 0 opens a new connection after every -P requests and times each connect",
};

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
        // -n is the load tests' count: a step stops at its duration.
        params.remove("requests");
        let wait = engine::load::wait_mode(self.sleep_when_idle);
        params.insert("wait".into(), json!(wait));
        ctx.note(&format!("kv: {rate:.0} ops/s for {secs}s"));
        let d = self.drive("mix", &params, ctx, None)?;
        let mut s = capacity::RateStep::from_outcome(rate, &d.spread.merged);
        s.started_at = Some(started);
        s.sending_s = Some(secs);
        s.window = d.spread.measured_window(d.spec.warmup);
        if let Some(why) = d.spread.failure() {
            s.error = Some(why);
        }
        if let Some(flag) = self.server_exited() {
            s.error = Some(flag.message);
        }
        Ok(s)
    }

    fn run_capacity(&mut self, test: &str, ctx: &Ctx) -> anyhow::Result<StepOutput> {
        self.sleep_when_idle = self.cap.sleep_when_idle(test);
        let cap = self.cap.clone();
        let mut found = std::mem::take(&mut self.capacity_found);
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

/// The warning for a capacity test whose steps' GETs mostly missed (under 90% found
/// their key): those steps measured the server's cheap path, as a `get` test on an
/// empty keyspace does. None when every step's hit ratio is 90% or more.
fn low_hit_ratio_steps(metrics: &[model::Metric], cfg: &KvConfig) -> Option<Flag> {
    let ratios: Vec<f64> = metrics
        .iter()
        .filter(|m| m.name == "hit_ratio_pct" && m.labels.contains_key("phase"))
        .map(|m| m.value)
        .collect();
    let low: Vec<f64> = ratios.iter().copied().filter(|r| *r < 90.0).collect();
    let lowest = low.iter().copied().reduce(f64::min)?;
    Some(Flag::warning(
        "low_hit_ratio",
        format!(
            "{} of {} steps had under 90% of their GETs find their key (lowest {lowest:.1}%): \
             those steps measured misses, the server's cheap path; fill the keyspace first \
             (-t set,{} with -n several times -r {})",
            low.len(),
            ratios.len(),
            cfg.tests.last().map_or("ramp", String::as_str),
            cfg.keyspace
        ),
    ))
}

impl Drop for Kv {
    fn drop(&mut self) {
        self.cleanup();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test stopped by --duration stores no request count among its settings (it
    /// stored the default 100000, which it never sent); stopped by -n, it stores its count.
    #[test]
    fn a_timed_test_stores_no_request_count() {
        let settings =
            |p: serde_json::Value| Kv::from_params(p.as_object().unwrap()).unwrap().settings();
        let timed = settings(serde_json::json!({"duration": 1}));
        assert_eq!(timed.get("duration"), Some(&serde_json::json!(1)));
        assert_eq!(timed.get("requests"), None);
        let counted = settings(serde_json::json!({"requests": 500}));
        assert_eq!(counted.get("requests"), Some(&serde_json::json!(500)));
    }

    /// Against --targets, the servers' count is the targets' (a run of 4 targets stored
    /// `instances=1`). Fewer connections than servers in the whole load is refused, not
    /// in a generator's share, and connections that do not divide over the servers are
    /// flagged.
    #[test]
    fn targets_are_the_servers_and_each_gets_connections() {
        let kv = |p: serde_json::Value| Kv::from_params(p.as_object().unwrap());
        let s = kv(serde_json::json!({"targets": ["127.0.0.1:1", "127.0.0.1:2"], "clients": 4}))
            .unwrap()
            .settings();
        assert_eq!(s.get("instances"), Some(&serde_json::json!(2)));

        let e = kv(serde_json::json!({"instances": 8, "clients": 4}))
            .err()
            .expect("refused")
            .to_string();
        assert!(
            e.contains("-c 4 connects to 4 of the 8 servers, and the other 4 would sit idle")
                && e.contains("give -c 8 or more"),
            "{e}"
        );
        let e = kv(serde_json::json!({"targets": ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"], "clients": 2}))
            .err()
            .expect("refused")
            .to_string();
        assert!(e.contains("of the 3 servers"), "{e}");
        // One server twice is one server (stored `instances 2`, its calls doubled).
        let e = kv(serde_json::json!({"targets": ["127.0.0.1:1", "127.0.0.1:1"], "clients": 2}))
            .err()
            .expect("refused")
            .to_string();
        assert!(e.contains("--target 127.0.0.1:1 is given twice"), "{e}");
        assert!(kv(serde_json::json!({"instances": 8, "clients": 8})).is_ok());
        // A generator's share of the load is below the servers' count, rightly: its
        // driver reads its plan without this check.
        let share = serde_json::json!({"instances": 4, "clients": 2});
        assert!(Plan::from_params(share.as_object().unwrap()).is_ok());

        assert!(uneven_connections(64, 32).is_none());
        assert!(uneven_connections(7, 1).is_none());
        let f = uneven_connections(50, 32).expect("flagged");
        assert_eq!(f.code, "uneven_connections");
        assert!(
            f.message
                .contains("18 of them carry 2 and the other 14 carry 1"),
            "{f:?}"
        );
    }

    /// A capacity test whose steps' GETs mostly missed is flagged, with the way to fill
    /// the keyspace; one whose steps found their keys is not.
    #[test]
    fn capacity_steps_whose_gets_missed_are_flagged() {
        let step = |i: usize, r: f64| {
            model::Metric::new("hit_ratio_pct", r, "%")
                .label("phase", "ramp")
                .label("step", i)
        };
        let c = KvConfig {
            tests: vec!["ramp".into()],
            ..KvConfig::default()
        };
        let f = low_hit_ratio_steps(&[step(0, 4.0), step(1, 35.5), step(2, 97.0)], &c).unwrap();
        assert_eq!(f.code, "low_hit_ratio");
        assert!(
            f.message.starts_with("2 of 3 steps had under 90%"),
            "{}",
            f.message
        );
        assert!(f.message.contains("(lowest 4.0%)"), "{}", f.message);
        assert!(f.message.contains("-t set,ramp"), "{}", f.message);
        assert!(low_hit_ratio_steps(&[step(0, 99.0), step(1, 90.0)], &c).is_none());
        // A load test's own hit ratio (no phase) is its own flag's.
        let plain = model::Metric::new("hit_ratio_pct", 1.0, "%").label("op", "get");
        assert!(low_hit_ratio_steps(&[plain], &c).is_none());
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
