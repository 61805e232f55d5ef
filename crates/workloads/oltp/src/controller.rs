//! The oltp controller: the `Workload` the runner drives. It starts the
//! [`crate::service`] on the system under test (the server, the build), gives each load
//! generator its share of the virtual users (and of an offered rate) as a
//! [`crate::driver`] job behind one start barrier, merges what they measured exactly
//! (histograms bucket by bucket, validity counters summed) and turns the merge into the
//! result of before: NOPM and TPM from the server's counters, read by the first
//! generator, per-transaction latency, the spec's ratios. The consistency check runs
//! on the system under test.
//!
//! With one host as both system under test and load generator this is the single-host
//! run of before: the same figures, the same checks, in-process.
//!
//! The password (`--dsn`'s, or for a `--dsn` without one PGPASSWORD or the password
//! file's, as libpq would use; for a launched server, one made for the run) goes into
//! the service's and the drivers' parameters only; nothing this controller returns
//! carries it (the runner stores the sweep point's parameters redacted).

use secrecy::SecretString;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{bail, Context};
use engine::capacity::RateStep;
use engine::capacity_tests::{self, CapacityConfig};
use engine::cpu_use::CpuUse;
use engine::host::{split_count, DriverJob, Host, Running};
use engine::load::LoadOutcome;
use engine::spread::{self as generators, Figures, GeneratorRun};
use engine::workload::{CpuList, CpuRole, Params};
use engine::{Ctx, StepOutput, Workload};
use model::{Fact, Flag};
use serde_json::{json, Value};

use crate::backend::{backend_for_endpoint, Backend, EngineKind};
use crate::check::CheckResult;
use crate::monitor::DbWindow;
use crate::populate::BuildMeta;
use crate::txn::{Counters, Mix};
use crate::{
    check_flags, driver, job_keys, results, server, target, Config, Plan, CAPACITY, TESTS,
};

/// The per-generator figures of an oltp result.
const FIGURES: Figures = Figures {
    rate: ("txn_per_s", "transactions/s"),
    count: ("transactions", "transactions"),
};

/// Why an oltp capacity step has no network I/O: the database client's sessions do not
/// count what their driver sends and receives.
const BYTES_NOT_COUNTED: &str =
    "not counted: the database client does not count the bytes its driver sends and receives";

/// The oltp workload for one sweep point, as the controller holds it.
pub struct Oltp {
    cfg: Config,
    mix: Mix,
    /// The capacity tests' parameters.
    cap: CapacityConfig,
    /// The sweep point's parameters as given (the DSN with its password, if it has
    /// one): the service and the drivers read them again where they run.
    params: Params,
    /// The password for the service and the drivers: the user's for `--dsn`, the run's
    /// for a launched server (from prepare on).
    password: Option<SecretString>,
    running: Option<Running>,
    facts: BTreeMap<String, Fact>,
    /// Each database's build constant C_LOAD, from the service.
    c_load: Vec<u32>,
    /// Capacity found by a `ramp` or `search` test, for a `levels` test after it.
    capacity_found: capacity_tests::Found,
    /// Whether the load generator competes with a launched server for its CPUs.
    cpu_use: CpuUse,
}

/// A test driven on every generator, merged.
struct Driven {
    /// What the generators measured, merged, and their own figures.
    spread: generators::Driven,
    /// Validity counters per database, summed over the generators.
    counters: Vec<Arc<Counters>>,
    /// The server's counter readings (from the first generator; None if it failed).
    windows: Option<Vec<DbWindow>>,
}

/// A `tpcc` test's checkpoints, merged over its generators
/// ([`generators::with_checkpoints_reading`]).
type Checkpoint<'a> = &'a (dyn Fn(generators::Driven) + Sync);

/// What a `tpcc` test's checkpoint cannot have, as it is read or counted only at the end
/// of the test: the server's NOPM and TPM (its counters come back with the first load
/// generator's report), and the spec's ratios each generator counts and reports. Its
/// NOPM and TPM are the clients' own counts over the window instead
/// ([`results::headline_of_reporting_generators`]), so a killed run keeps a headline.
const READ_AT_END: [(&str, &str); 2] = [
    (
        "nopm_server",
        "the server's district counters (HammerDB's NOPM; this checkpoint's nopm is the \
         clients' count over the window, nopm_client) come back with the first load \
         generator's report",
    ),
    (
        "tpm_server",
        "the server's commit counters (this checkpoint's tpm is the clients' count over \
         the window, tpm_client) come back with the first load generator's report",
    ),
];

/// Why the spec's ratios are missing from a checkpoint.
const RATIOS_AT_END: &str = "each load generator's counts of the spec's draws come in its report";

/// What the generator on `host` measured (`o`) with `users` sessions (its virtual users
/// of every database), its window from `started_unix_s` to `ended_unix_s` on the
/// controller's clock: at the test's end and at a checkpoint alike. Its count is of the
/// transactions sent (a keying time cut short by the end sent none).
fn generator_run(
    host: &dyn Host,
    users: usize,
    o: &LoadOutcome,
    window: (f64, f64),
    start_skew_s: f64,
) -> GeneratorRun {
    let sent: u64 = o.classes.iter().map(|c| c.count - c.misses).sum();
    GeneratorRun {
        rate: if o.duration_s > 0.0 {
            sent as f64 / o.duration_s
        } else {
            0.0
        },
        count: sent,
        ..GeneratorRun::of(host, users, users, o, window, start_skew_s)
    }
}

/// A password for a launched server's superuser from the other hosts, made for one
/// sweep point: 128 bits from the OS, in hex (nothing to quote anywhere it goes).
fn run_password() -> SecretString {
    use rand::RngCore;
    let mut bytes = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    SecretString::from(hex::encode(bytes))
}

impl Oltp {
    /// From a configuration alone (tools and tests): the capacity tests' defaults.
    pub fn new(cfg: Config) -> anyhow::Result<Oltp> {
        cfg.validate()?;
        let mut params = Params::new();
        if let Value::Object(m) = serde_json::to_value(&cfg)? {
            params.extend(m.into_iter().filter(|(_, v)| !v.is_null()));
        }
        Oltp::with(cfg, CapacityConfig::default(), params)
    }

    /// From a sweep point's parameters (the registry's `build`).
    pub fn from_params(p: &Params) -> anyhow::Result<Oltp> {
        let plan = Plan::from_params(p)?;
        Oltp::with(plan.cfg, plan.cap, p.clone())
    }

    fn with(cfg: Config, cap: CapacityConfig, params: Params) -> anyhow::Result<Oltp> {
        let mix = Mix::new(&cfg.mix)?;
        let password = match &cfg.dsn {
            Some(dsn) if cfg.engine_kind()? == EngineKind::Mariadb => {
                // A URL's own password travels inside the DSN; MYSQL_PWD otherwise.
                crate::mariadb::MyDb::from_dsn(dsn, None)?
                    .password()
                    .or_else(target::mysql_env_password)
                    .map(SecretString::from)
            }
            Some(dsn) => {
                let c = server::parse_dsn(dsn)?;
                match c.get_password() {
                    Some(p) => Some(SecretString::from(
                        String::from_utf8(p.to_vec())
                            .map_err(|_| anyhow::anyhow!("the --dsn password is not UTF-8"))?,
                    )),
                    None => target::default_password(&c).map(SecretString::from),
                }
            }
            None => None,
        };
        Ok(Oltp {
            cfg,
            mix,
            cap,
            params,
            password,
            running: None,
            facts: BTreeMap::new(),
            c_load: Vec::new(),
            capacity_found: capacity_tests::Found::default(),
            cpu_use: CpuUse::default(),
        })
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The service's connection strings, one per database (after prepare).
    pub fn endpoints(&self) -> &[String] {
        self.running
            .as_ref()
            .map_or(&[], |r| r.handle.endpoints.as_slice())
    }

    /// The launched postmaster's pid (tests kill it to check failure handling).
    pub fn server_pid(&self) -> Option<u32> {
        let r = self.running.as_ref()?;
        let v = r.query("pid").ok()?;
        serde_json::from_value(v).ok().flatten()
    }

    /// Connection settings of database `n` (1-based), any engine, for tests and tools.
    pub fn db_backend(&self, n: usize) -> Option<Box<dyn Backend>> {
        let e = self.endpoints().get(n.checked_sub(1)?)?;
        backend_for_endpoint(e, self.password()).ok()
    }

    /// PostgreSQL connection settings of database `n` (1-based), for tests and tools.
    pub fn db_config(&self, n: usize) -> Option<postgres::Config> {
        let e = self.endpoints().get(n.checked_sub(1)?)?;
        server::endpoint_config(e, self.password()).ok()
    }

    /// The password the service and the drivers log in with, to put where they read it.
    fn password(&self) -> Option<&str> {
        crate::exposed(&self.password)
    }

    fn running(&self) -> anyhow::Result<&Running> {
        self.running
            .as_ref()
            .context("oltp: prepare was not called")
    }

    /// Why the server is gone, if it is.
    fn server_exited(&self) -> Option<Flag> {
        let engine = self.cfg.engine_kind().unwrap_or_default();
        self.running.as_ref()?.exited(engine.label())
    }

    /// Run `test` (`tpcc` or `step`) on every load generator, each with its share of
    /// the virtual users (and of `rate`), and merge. `duration`: the step's. Its
    /// checkpoints, if wanted, go to `checkpoint`.
    fn drive(
        &self,
        test: &str,
        rate: Option<f64>,
        duration: Option<f64>,
        ctx: &Ctx,
        checkpoint: Option<Checkpoint>,
    ) -> anyhow::Result<Driven> {
        let running = self.running()?;
        let loadgens = &ctx.roles()?.loadgens;
        if loadgens.is_empty() {
            bail!("oltp needs at least one load-generator host");
        }
        let endpoints = &running.handle.endpoints;
        if endpoints.is_empty() {
            bail!(
                "the oltp service on {} gave no endpoints",
                running.sut.name()
            );
        }
        let n = loadgens.len();
        self.connections_per_generator(n)?;
        let vus = self.cfg.vus as usize;
        let ndb = endpoints.len();
        // The drivers connect to the endpoints: the DSN (and its password) stays here.
        let mut base = self.params.clone();
        base.remove("dsn");
        if let Some(p) = self.password() {
            base.insert(job_keys::PASSWORD.into(), json!(p));
        }
        base.insert(job_keys::C_LOAD.into(), json!(self.c_load));
        if let Some(d) = duration {
            base.insert("duration".into(), json!(d));
        }
        let shares = split_count(vus, n);
        let mut first_vu = 0;
        let mut jobs: Vec<(Arc<dyn Host>, DriverJob)> = Vec::with_capacity(n);
        for (index, (host, &share)) in loadgens.iter().zip(&shares).enumerate() {
            let mut p = base.clone();
            p.insert("vus".into(), json!(share));
            p.insert(job_keys::FIRST_VU.into(), json!(first_vu));
            // Its part of the offered rate, in proportion to its users (a lone
            // generator offers the rate as given).
            if let Some(r) = rate {
                let r = if share == vus {
                    r
                } else {
                    r * share as f64 / vus as f64
                };
                p.insert("rate".into(), json!(r));
            }
            first_vu += share;
            let job = DriverJob {
                workload: "oltp".into(),
                test: test.into(),
                params: p,
                endpoints: endpoints.clone(),
                index,
                generators: n,
            };
            jobs.push((host.clone(), job));
        }
        let roles = ctx.roles()?;
        let watch = [roles.sut.clone()];
        let drive = || engine::host::drive_all(jobs, &watch, &[running], &ctx.progress);
        let reports = match checkpoint {
            Some(f) => {
                let run_of = |i: usize, o: &LoadOutcome, window| {
                    generator_run(loadgens[i].as_ref(), shares[i] * ndb, o, window, 0.0)
                };
                // A generator's final report holds its outcome beside its counters.
                let outcome_of = |v: &serde_json::Value| driver::decode(v).map(|d| d.outcome);
                generators::with_checkpoints_reading(
                    roles,
                    n,
                    &ctx.progress,
                    f,
                    &run_of,
                    &outcome_of,
                    drive,
                )
            }
            None => drive(),
        };

        let (decoded, errors) = generators::decode_reports(loadgens, reports, driver::decode);
        let runs: Vec<GeneratorRun> = decoded
            .iter()
            .map(|(index, d, r)| {
                generator_run(
                    loadgens[*index].as_ref(),
                    shares[*index] * ndb,
                    &d.outcome,
                    (r.started_unix_s, r.ended_unix_s),
                    r.start_skew_s,
                )
            })
            .collect();
        let counters: Vec<Arc<Counters>> =
            (0..ndb).map(|_| Arc::new(Counters::default())).collect();
        let mut windows = None;
        let mut outcomes = Vec::with_capacity(decoded.len());
        for (index, d, _) in decoded {
            for (c, v) in counters.iter().zip(&d.counters) {
                c.add_values(v);
            }
            if index == 0 {
                windows = d.windows;
            }
            outcomes.push(d.outcome);
        }
        // Every oltp test runs for a duration, behind one start barrier.
        let Some(mut merged) = engine::wire::merge(outcomes, engine::wire::Span::Together) else {
            return Err(generators::nothing_measured(errors, n));
        };
        ctx.progress.explain_stop(&mut merged.stopped_early);
        Ok(Driven {
            spread: generators::Driven {
                merged,
                runs,
                failed: generators::failures(&errors),
                generators: n,
                checkpoint_s: None,
            },
            counters,
            windows,
        })
    }

    fn run_tpcc(&mut self, ctx: &Ctx) -> anyhow::Result<StepOutput> {
        let lead = ctx.roles()?.start_lead();
        let rampup = Duration::from_secs_f64(self.cfg.rampup);
        // Checkpoints while it runs, stored as its provisional result where the runner
        // keeps one: rackbench killed mid-test keeps what was measured up to the last.
        let save = ctx
            .partial
            .is_some()
            .then_some(|spread: generators::Driven| {
                ctx.save_partial(&self.tpcc_step(&spread, None));
            });
        // The ramp-up is warm-up on every host: from now (the jobs go out) until the
        // common start plus the ramp-up.
        let stop = AtomicBool::new(false);
        let this = &*self;
        let d = std::thread::scope(|s| {
            if !rampup.is_zero() {
                ctx.watch.set_warmup(true);
                s.spawn(|| {
                    let until = Instant::now() + lead + rampup;
                    while !stop.load(Ordering::Relaxed) {
                        let left = until.saturating_duration_since(Instant::now());
                        if left.is_zero() {
                            break;
                        }
                        std::thread::sleep(left.min(Duration::from_millis(20)));
                    }
                    ctx.watch.set_warmup(false);
                });
            }
            let checkpoint = save.as_ref().map(|f| f as Checkpoint);
            let d = this.drive("tpcc", self.cfg.rate, None, ctx, checkpoint);
            stop.store(true, Ordering::Relaxed);
            d
        })?;
        let wins = d.windows.clone().unwrap_or_else(|| {
            let why = format!(
                "the load generator reading the server's counters failed ({})",
                d.spread.failed.first().map_or("no report", String::as_str)
            );
            vec![
                DbWindow {
                    error: Some(why),
                    ..DbWindow::default()
                };
                d.counters.len()
            ]
        });
        Ok(self.tpcc_step(&d.spread, Some((&wins, &d.counters))))
    }

    /// A `tpcc` test's result from what its generators measured (`d`) and, at its end,
    /// the server's counter readings and the generators' validity counters (`at_end`):
    /// at its end, or at a checkpoint while it ran. One conversion for both, so that a
    /// provisional result reads as the final one does; a checkpoint's says what it is
    /// and what it cannot have yet.
    fn tpcc_step(
        &self,
        d: &generators::Driven,
        at_end: Option<(&[DbWindow], &[Arc<Counters>])>,
    ) -> StepOutput {
        let rampup = Duration::from_secs_f64(self.cfg.rampup);
        let mut out = results::step_output(&self.cfg, &self.mix, &d.merged, at_end);
        // Measured after the ramp-up, as the figures are.
        out.measured = d.measured_window(rampup).into_iter().collect();
        d.add_figures(&mut out, FIGURES, self.cfg.rate.is_none());
        // A generator lost mid-test: its work is in the server's counters, in none of the
        // other figures.
        // At a checkpoint the server's counters are not read yet: the clients' counts,
        // as where a generator was lost, and the `partial` warning says so.
        if (!d.failed.is_empty() && !d.runs.is_empty()) || at_end.is_none() {
            results::headline_of_reporting_generators(&mut out);
        }
        if d.generators > 1 {
            // Each reporting generator's own share (its users over every database): the
            // shares split over all of them, zipped with those that reported, gave a
            // lost first generator's share to the second.
            let ndb = self.cfg.databases.max(1) as usize;
            for r in &d.runs {
                out.metrics.push(
                    model::Metric::new(
                        "vus",
                        (r.connections / ndb) as f64,
                        "virtual users per database",
                    )
                    .label("host", &r.host),
                );
            }
        }
        let ratios = results::COUNTED_AT_END.map(|name| (name, RATIOS_AT_END));
        let reads: Vec<(&str, &str)> = READ_AT_END.into_iter().chain(ratios).collect();
        let planned = Duration::from_secs_f64(self.cfg.duration.max(0.0));
        d.mark_checkpoint(
            &mut out,
            "tpcc",
            &engine::load::StopAfter::Duration(planned),
            &reads,
        );
        out
    }

    /// One open-loop step of the capacity tests: `rate` transactions/s in total across
    /// every user of every generator (the configured mix), `--step-duration` seconds,
    /// no ramp-up.
    pub fn measure_rate(&mut self, rate: f64, ctx: &Ctx) -> anyhow::Result<RateStep> {
        let secs = self.cap.step_duration_s(&CAPACITY);
        let started = SystemTime::now();
        ctx.note(&format!("oltp: {rate:.0} txn/s for {secs}s"));
        let d = self
            .drive("step", Some(rate), Some(secs), ctx, None)?
            .spread;
        let mut step = RateStep::from_outcome(rate, &d.merged);
        // The objective is New-Order's latency, the transaction NOPM counts: the mix's
        // merged p99 is set by its slowest 4% (Delivery, Stock-Level), and moves with it.
        let new_order = driver::class_in_every_db("new_order", self.cfg.databases as usize);
        step.latency_of_class(&d.merged, ("txn", "new_order"), &new_order);
        step.bytes_not_counted = Some(BYTES_NOT_COUNTED.into());
        step.started_at = Some(started);
        step.sending_s = Some(secs);
        // A step has no ramp-up: it measures from the common start.
        step.window = generators::measured_window(&d.runs, Duration::ZERO);
        if let Some(why) = generators::failure(&d.failed) {
            step.error = Some(why);
        }
        if let Some(flag) = self.server_exited() {
            step.error = Some(flag.message);
        }
        Ok(step)
    }

    fn run_test_as_asked(&mut self, test: &str, ctx: &Ctx) -> anyhow::Result<StepOutput> {
        match test {
            "tpcc" => self.run_tpcc(ctx),
            "ramp" | "search" | "levels" => {
                let cap = self.cap.clone();
                let mut found = std::mem::take(&mut self.capacity_found);
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
}

impl Workload for Oltp {
    /// The resolved config (the DSN's password redacted, as [`Config::echo`] gives it)
    /// and the capacity tests' knobs given.
    fn settings(&self) -> Params {
        engine::workload::settings_of(&[Ok(self.cfg.echo()), serde_json::to_value(&self.cap)])
    }

    fn name(&self) -> &'static str {
        "oltp"
    }

    fn tests(&self) -> Vec<String> {
        self.cfg.tests.clone()
    }

    fn check_launch_here(&self) -> anyhow::Result<()> {
        if self.cfg.dsn.is_some() {
            return Ok(());
        }
        match self.cfg.engine_kind()? {
            crate::backend::EngineKind::Mariadb => {
                crate::mariadb_server::find_binary("mariadbd")?;
                crate::mariadb_server::find_binary("mariadb-install-db")?;
            }
            crate::backend::EngineKind::Postgresql => {
                crate::server::find_pg_binary("initdb")?;
                crate::server::find_pg_binary("postgres")?;
            }
        }
        Ok(())
    }

    fn cpu_lists(&self) -> anyhow::Result<Vec<CpuList>> {
        // --server-cpus pins the server rackbench launches on the system under test (with
        // --dsn there is none, and it is refused when the plan is built).
        Ok(vec![
            CpuList {
                flag: "--server-cpus",
                role: CpuRole::Sut,
                cpus: engine::launch::parse_cpu_list(&self.cfg.server_cpus)?,
            },
            CpuList {
                flag: "--client-cpus",
                role: CpuRole::Generator,
                cpus: engine::launch::parse_cpu_list(&self.cfg.client_cpus)?,
            },
        ])
    }

    fn connections_per_generator(&self, n: usize) -> anyhow::Result<Option<u64>> {
        let vus = self.cfg.vus as usize;
        if vus < n {
            bail!(
                "{vus} virtual user(s) per database cannot be spread over {n} load generators: \
                 give at least one per generator (--vus {n})"
            );
        }
        // A connection per user and database, and the monitor's per database (the
        // driver's count).
        let most = split_count(vus, n).into_iter().max().unwrap_or(0) as u64;
        Ok(Some((most + 1) * u64::from(self.cfg.databases)))
    }

    fn prepare(&mut self, ctx: &Ctx) -> anyhow::Result<()> {
        let roles = ctx.roles()?;
        let sut = roles.sut.clone();
        let mut params = self.params.clone();
        if self.cfg.dsn.is_none() {
            self.password = Some(run_password());
        }
        if let Some(p) = self.password() {
            params.insert(job_keys::PASSWORD.into(), json!(p));
        }
        // A launched server runs on --server-cpus (all its processes share them); a
        // --dsn's CPUs are not ours to know.
        let server = match &self.cfg.dsn {
            None => engine::launch::parse_cpu_list(&self.cfg.server_cpus)?,
            Some(_) => Vec::new(),
        };
        let client = engine::launch::parse_cpu_list(&self.cfg.client_cpus)?;
        self.cpu_use = CpuUse::judge(roles, &server, &client);
        let admit: Vec<String> = roles.loadgens.iter().map(|h| h.address()).collect();
        params.insert(job_keys::ADMIT.into(), json!(admit));
        let handle = sut.start_service("oltp", &params)?;
        self.facts = handle.facts.clone();
        let id = handle.id;
        self.running = Some(Running {
            sut: sut.clone(),
            handle,
        });
        let metas: Vec<BuildMeta> = serde_json::from_value(sut.service_query(id, "builds")?)
            .context("the oltp service's build metadata")?;
        self.c_load = metas.iter().map(|m| m.c_load).collect();
        Ok(())
    }

    fn run_test(&mut self, test: &str, ctx: &Ctx) -> anyhow::Result<StepOutput> {
        let out = self.run_test_as_asked(test, ctx).map(|mut o| {
            self.cpu_use.flag(&mut o);
            o
        });
        // A PostgreSQL that died is named as the cause (as a dead redis-server or nginx
        // is), not the "connection lost" its clients saw; what was measured is kept.
        match (out, self.server_exited()) {
            (Ok(mut o), Some(flag)) => {
                o.error = Some(flag.message.clone());
                o.flags.push(flag);
                Ok(o)
            }
            (Err(e), Some(flag)) => Err(e.context(flag.message)),
            (out, None) => out,
        }
    }

    fn verify(&mut self, ctx: &Ctx) -> anyhow::Result<Vec<Flag>> {
        if !self.cfg.check {
            return Ok(Vec::new());
        }
        let Some(r) = self.running.as_ref() else {
            return Ok(Vec::new());
        };
        ctx.note("oltp: consistency check (clause 3.3.2)");
        let checked = r.query("check").and_then(|v| {
            serde_json::from_value::<Vec<(String, Vec<CheckResult>)>>(v)
                .context("the oltp service's check results")
        });
        Ok(check_flags(checked))
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

impl Drop for Oltp {
    fn drop(&mut self) {
        self.cleanup();
    }
}
