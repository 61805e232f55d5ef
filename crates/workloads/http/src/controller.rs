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
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context};
use engine::capacity::{self, RateStep};
use engine::capacity_tests::{self, CapacityConfig};
use engine::cpu_use::CpuUse;
use engine::host::{DriverJob, Running};
use engine::load::{LoadShape, LoadSpec};
use engine::workload::{CpuList, CpuRole, Ctx, Params, StepOutput, Workload};
use model::{Fact, Flag, Metric};
use serde_json::json;

use crate::driver::LOAD;
use crate::{parse_url, HttpConfig, Plan, CAPACITY, TESTS};

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
    capacity_found: capacity_tests::Found,
    /// Whether the test under way sleeps between open-loop sends (`--wait`).
    sleep_when_idle: bool,
    /// How nginx's workers and the load generator sit on the CPUs (said on every result).
    cpu_use: CpuUse,
}

/// A test driven on every generator, merged, with the load as a whole (for the checks
/// `step_output` makes).
struct Driven {
    spread: engine::spread::Driven,
    spec: LoadSpec,
}

impl Driven {
    /// `spread`, a run of a `load` job at the sweep point `plan`, with its load as a whole.
    fn of(spread: engine::spread::Driven, plan: &Plan) -> Driven {
        let mut spec = plan.cfg.spec(Vec::new());
        spec.connections = spread.connections();
        spec.threads = spread.threads();
        spec.sleep_when_idle = plan.cap.sleep_when_idle(LOAD);
        Driven { spread, spec }
    }
}

/// A `load` test's checkpoints, merged over its generators ([`engine::spread::drive`]).
type Checkpoint<'a> = &'a (dyn Fn(engine::spread::Driven) + Sync);

/// The load of an http test as a whole, to be spread over the generators.
pub fn load(cfg: &HttpConfig) -> engine::spread::Load {
    engine::spread::Load {
        connections: cfg.connections,
        requests: cfg.requests,
        rate: cfg.rate,
        seed: cfg.seed,
        threads: cfg.threads,
        connections_flag: "-c",
        requests_flag: "-n",
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
            capacity_found: capacity_tests::Found::default(),
            sleep_when_idle: false,
            cpu_use: CpuUse::default(),
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
        self.read_requests_served().ok()
    }

    /// nginx's count of requests (stub_status), or why it could not be read (nginx gone).
    fn read_requests_served(&self) -> Result<u64, String> {
        let r = self.running.as_ref().ok_or("no nginx runs")?;
        let v = r.query("counters").map_err(|e| format!("{e:#}"))?;
        v.get("requests")
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| format!("its answer held no request count: {v}"))
    }

    /// Why the server is gone (or cannot be asked), if it is: the flag, its message the error.
    fn server_exited(&self) -> Option<Flag> {
        self.running.as_ref()?.exited("nginx")
    }

    /// Run the load test on every load generator, each with its share of `params`, and
    /// merge; its checkpoints, if wanted, go to `checkpoint`.
    fn drive(
        &self,
        params: &Params,
        ctx: &Ctx,
        checkpoint: Option<Checkpoint>,
    ) -> anyhow::Result<Driven> {
        let running = self.running()?;
        let roles = ctx.roles()?;
        if running.handle.endpoints.is_empty() {
            bail!(
                "the http service on {} gave no endpoint",
                running.sut.name()
            );
        }
        let plan = Plan::from_params(params)?;
        let shares = engine::spread::shares(&load(&plan.cfg), roles.loadgens.len())?;
        let n = shares.len();
        let paths = plan.cfg.paths.items();
        let spread = engine::spread::drive(
            roles,
            &shares,
            plan.cfg.threads,
            &ctx.progress,
            &[running],
            checkpoint,
            |index, s| {
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
                DriverJob {
                    workload: "http".into(),
                    test: LOAD.into(),
                    params: p,
                    endpoints: running.handle.endpoints.clone(),
                    index,
                    generators: n,
                }
            },
        )?;
        Ok(Driven::of(spread, &plan))
    }

    /// A `load` test's result from what its generators measured (`d`), but for nginx's
    /// own count and the interval log: at its end, or at a checkpoint while it ran. One
    /// conversion for both, so that a provisional result reads as the final one does;
    /// a checkpoint's says what it is and what it cannot have yet.
    fn load_step(&self, d: &Driven) -> StepOutput {
        let (spec, out) = (&d.spec, &d.spread.merged);
        let mut step = engine::validity::step_output(spec, out, "requests_per_s", "req/s");
        step.measured = d.spread.measured_window(spec.warmup).into_iter().collect();
        step.missing
            .extend(engine::validity::connect_not_timed(spec, out, &RECONNECT));
        d.spread.add_figures(
            &mut step,
            engine::spread::Figures {
                rate: ("requests_per_s", "req/s"),
                count: ("requests", "requests"),
            },
            spec.shape == LoadShape::Closed,
        );
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
        }
        d.spread.mark_checkpoint(
            &mut step,
            LOAD,
            &spec.stop,
            &[("server_requests", "nginx's own count of requests is read")],
        );
        step
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
        let wait = engine::load::wait_mode(self.sleep_when_idle);
        params.insert("wait".into(), json!(wait));
        ctx.note(&format!("http: {rate_per_s:.0} req/s for {secs}s"));
        let d = self.drive(&params, ctx, None)?;
        let out = &d.spread.merged;
        let mut s = RateStep::from_outcome(rate_per_s, out);
        s.started_at = Some(started);
        s.sending_s = Some(secs);
        s.window = d.spread.measured_window(d.spec.warmup);
        let n = out.total_count();
        if n > 0 {
            let cpu = out.loadgen_cpu_user_s + out.loadgen_cpu_sys_s;
            s.extra.push(Metric::new(
                "loadgen_cpu_us_per_op",
                cpu * 1e6 / n as f64,
                "us/op",
            ));
        }
        if let Some(why) = d.spread.failure() {
            s.error = Some(why);
        }
        if let Some(flag) = self.server_exited() {
            s.error = Some(flag.message);
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
        let warmup = Duration::from_secs_f64(self.cfg.warmup.max(0.0));
        // Checkpoints while it runs, stored as its provisional result where the runner
        // keeps one: rackbench killed mid-test keeps what was measured up to the last.
        let plan = Plan::from_params(&self.params)?;
        let this = &*self;
        let save = ctx.partial.is_some().then_some(|spread| {
            let mut step = this.load_step(&Driven::of(spread, &plan));
            this.cpu_use.flag(&mut step);
            ctx.save_partial(&step);
        });
        let (d, at_warmup_end) = engine::spread::read_at_warmup_end(
            ctx.roles()?.start_lead(),
            warmup,
            || this.requests_served(),
            || this.drive(&this.params, ctx, save.as_ref().map(|f| f as Checkpoint)),
        );
        let d = d?;
        let after = self.read_requests_served();
        let (spec, out) = (&d.spec, &d.spread.merged);
        let mut step = self.load_step(&d);
        // nginx's own count against the generators' (memtier's self-test), over the
        // measured window: from the end of the warm-up when there is one (nginx counts
        // the warm-up's requests too, which the generators' figures leave out). The
        // later status request counts itself; a failed generator's requests reached
        // nginx but not the merge.
        let claimed = out.total_count();
        let (start, allowance) = engine::spread::server_count_window(
            spec,
            warmup,
            before,
            at_warmup_end,
            step.measured.first(),
            out,
        );
        match (start, after) {
            (Some(b), Ok(a)) => {
                let served = a.saturating_sub(b).saturating_sub(1);
                step.metrics.push(engine::spread::server_count_metric(
                    Metric::new("server_requests", served as f64, "requests"),
                    warmup,
                ));
                if let Some((after, note)) = engine::spread::count_mismatch(
                    allowance,
                    served,
                    out,
                    &d.spread.failed,
                    warmup,
                    "nginx was",
                ) {
                    step.flags.push(Flag::warning(
                        "server_counter_mismatch",
                        format!(
                            "nginx counted {served} requests{after}, the generators {claimed} \
                             replies: check that nothing else sends to this nginx{note}"
                        ),
                    ));
                }
            }
            (_, after) => step.missing.push(engine::spread::server_count_missing(
                "server_requests",
                "nginx's count",
                warmup,
                out,
                after.err(),
            )),
        }
        // The interval log of the test's latency, when asked for.
        if self.cfg.hlog.is_some() {
            let mut rs = RateStep::from_outcome(out.offered_rate.unwrap_or(0.0), out);
            if rs.latency.is_some() {
                rs.started_at = Some(started);
                rs.window = d.spread.measured_window(spec.warmup);
                let log = capacity::write_steps_log(
                    Vec::new(),
                    "rackbench http load",
                    [&rs].into_iter(),
                )?;
                step.flags.extend(self.write_hlog(&log));
            }
        }
        // A launched server that died is a failed test, with what was measured kept.
        if let Some(flag) = self.server_exited() {
            step.error = Some(flag.message.clone());
            step.flags.push(flag);
        }
        Ok(step)
    }

    fn run_capacity(&mut self, test: &str, ctx: &Ctx) -> anyhow::Result<StepOutput> {
        let cap = self.cap.clone();
        let hlog = self.cfg.hlog.clone();
        let mut found = std::mem::take(&mut self.capacity_found);
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

/// http's reconnect knob (httperf's --num-calls), for why a `load` test timed no connect.
const RECONNECT: engine::validity::ReconnectKnob = engine::validity::ReconnectKnob {
    kept_alive: "--requests-per-connection 0",
    every_n: "--requests-per-connection",
    to_time: "--requests-per-connection N opens one every N requests and times each connect",
};

impl Workload for Http {
    /// The resolved config and the capacity tests' knobs given (their defaults follow
    /// from the config).
    fn settings(&self) -> Params {
        let mut s = engine::workload::settings_of(&[
            serde_json::to_value(&self.cfg),
            serde_json::to_value(&self.cap),
        ]);
        // Against a --target, the knobs of the nginx rackbench launches set nothing (the
        // flags are refused beside it): not stored as settings the run ran with
        // (acceptance pass J, 8).
        if self.cfg.target.is_some() {
            for k in ["file_size", "server_workers", "server_cpus", "nginx"] {
                s.remove(k);
            }
        }
        // A load stopped by -n runs for no set time: the default duration is not a
        // setting it ran at.
        if self.cfg.requests.is_some() {
            s.remove("duration");
        }
        s
    }

    fn name(&self) -> &'static str {
        "http"
    }

    fn tests(&self) -> Vec<String> {
        self.cfg.tests()
    }

    fn check_launch_here(&self) -> anyhow::Result<()> {
        if self.cfg.target.is_none() {
            engine::launch::find_binary(&self.cfg.nginx, "nginx-light").context("--nginx")?;
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
        // Capacity steps run for a duration: -n counts for the `load` test only.
        if !self.cfg.tests().iter().any(|t| t == "load") {
            load.requests = None;
        }
        engine::spread::most_connections(&load, generators)
    }

    fn prepare(&mut self, ctx: &Ctx) -> anyhow::Result<()> {
        let roles = ctx.roles()?;
        let sut = roles.sut.clone();
        let plan = Plan::from_params(&self.params)?;
        // A launched nginx's worker i runs on the i-th of --server-cpus, round robin; a
        // --target's CPUs are not ours to know.
        let server: Vec<usize> = if self.cfg.target.is_none() && !plan.server_cpus.is_empty() {
            (0..self.cfg.server_workers)
                .map(|i| plan.server_cpus[i % plan.server_cpus.len()])
                .collect()
        } else {
            Vec::new()
        };
        self.cpu_use = CpuUse::judge(roles, &server, &plan.client_cpus).with_oversubscription(
            &server,
            "nginx workers",
            &plan.client_cpus,
            self.cfg.threads,
        );
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
        let mut step = match test {
            "load" => self.run_load(ctx),
            "ramp" | "search" | "levels" => self.run_capacity(test, ctx),
            other => bail!(
                "unknown http test `{other}`: choose from {}",
                TESTS.join(", ")
            ),
        }?;
        self.cpu_use.flag(&mut step);
        // A server that died during a capacity test's steps is named as a load test's
        // is (the load test names it itself).
        if test != "load" {
            if let Some(flag) = self.server_exited() {
                step.error.get_or_insert_with(|| flag.message.clone());
                step.flags.push(flag);
            }
        }
        Ok(step)
    }

    fn cleanup(&mut self) {
        if let Some(r) = self.running.take() {
            r.stop();
        }
    }

    fn warmup_s(&self, _test: &str) -> Option<f64> {
        Some(self.cfg.warmup)
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

    /// A load stopped by -n stores no duration among its settings (it stored the default
    /// 10 s, which it did not run for); without -n it stores its duration.
    #[test]
    fn a_counted_load_stores_no_duration() {
        let settings = |p: serde_json::Value| {
            Http::from_params(p.as_object().unwrap())
                .unwrap()
                .settings()
        };
        let counted = settings(serde_json::json!({"requests": 500}));
        assert_eq!(counted.get("requests"), Some(&serde_json::json!(500)));
        assert_eq!(counted.get("duration"), None);
        let timed = settings(serde_json::json!({"duration": 2}));
        assert_eq!(timed.get("duration"), Some(&serde_json::json!(2)));
    }

    fn cfg(connections: usize, requests: Option<u64>, rate: Option<f64>) -> HttpConfig {
        HttpConfig {
            connections,
            requests,
            rate,
            ..HttpConfig::default()
        }
    }

    #[test]
    fn http_spreads_connections_requests_and_rate() {
        let s = engine::spread::shares(&load(&cfg(7, Some(1001), Some(700.0))), 3).unwrap();
        assert_eq!(
            s.iter().map(|s| s.connections).collect::<Vec<_>>(),
            vec![3, 2, 2]
        );
        assert_eq!(s.iter().map(|s| s.requests.unwrap()).sum::<u64>(), 1001);
        assert_eq!(s[0].rate, Some(300.0));
        // By duration, there is no count to spread.
        assert!(engine::spread::shares(&load(&cfg(4, None, None)), 2).is_ok());
        let e = engine::spread::shares(&load(&cfg(1, None, None)), 2).unwrap_err();
        assert!(e.to_string().contains("-c 2"), "{e}");
    }
}
