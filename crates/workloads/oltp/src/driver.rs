//! The oltp driver: what one load generator runs against the service's databases.
//!
//! A job carries the sweep point's parameters narrowed to this generator's share: its
//! `vus` per database (users `first_vu..first_vu + vus` of every database, so that each
//! keeps the home warehouse and stock district it has in a single-host run), its part
//! of the offered `rate`; the controller adds each database's `c_load` (every generator
//! draws the run's constants C from the sweep point's seed, as the spec wants one C for
//! all terminals, while its users' random streams start from the seed moved by its
//! index) and, when the user gave one, the `password` (the endpoints never carry it).
//! Two tests:
//! - `tpcc`: ramp-up, then the measured run; the first generator also reads the server's
//!   counters (NOPM, TPM) through the run as the single-host run does, and once every
//!   user of every generator has disconnected;
//! - `step`: one open-loop step of the capacity tests (`rate`, `duration`), no ramp-up.
//!
//! The report ([`Report`]) is the load outcome in its wire form (histograms whole, so the
//! controller merges them exactly), the validity counters per database and the counter
//! readings.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use engine::host::DriverJob;
use engine::load::{LoadOutcome, LoadShape, LoadSpec, StopAfter};
use engine::wire::WireOutcome;
use engine::workload::Progress;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

use crate::backend::{backend_for_endpoint, Backend};
use crate::monitor::{monitor, sample, DbSample, DbWindow, WireWindow};
use crate::txn::{CounterValues, Counters, Mix, StatsMark, Vu, VuParams, CLASSES};
use crate::{random, Config, Plan};

/// Added to the seed of the users' random streams once per generator index, so that
/// generators do not draw the same inputs (generator 0 keeps the seed: a single-host
/// run is unchanged). Odd and unrelated to the per-worker step of the load loop.
const SEED_STEP: u64 = 0xD6E8_FEB8_6659_FD93;

/// What a generator reports for one job.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Report {
    pub(crate) outcome: WireOutcome,
    /// Per database.
    pub(crate) counters: Vec<CounterValues>,
    /// The server's counter readings per database (the generator that read them).
    pub(crate) windows: Option<Vec<WireWindow>>,
}

/// A report as the controller uses it.
pub(crate) struct Decoded {
    pub(crate) outcome: LoadOutcome,
    pub(crate) counters: Vec<CounterValues>,
    pub(crate) windows: Option<Vec<DbWindow>>,
}

/// A driver's report back into what the controller merges.
pub(crate) fn decode(report: &serde_json::Value) -> anyhow::Result<Decoded> {
    let r: Report = serde_json::from_value(report.clone())
        .context("the oltp driver's report is not a TPC-C outcome")?;
    let now = Instant::now();
    Ok(Decoded {
        outcome: LoadOutcome::try_from(r.outcome)?,
        counters: r.counters,
        windows: r.windows.map(|ws| {
            ws.into_iter()
                .map(|w| DbWindow::from_wire(w, now))
                .collect()
        }),
    })
}

/// The transaction classes of a run: five per database (`new_order`, or
/// `new_order@db2` with several databases).
pub(crate) fn class_names(databases: usize) -> Vec<String> {
    (1..=databases)
        .flat_map(|d| CLASSES.iter().map(move |c| class_name(c, d, databases)))
        .collect()
}

/// One transaction's class in each database of `databases` (`new_order`, or
/// `new_order@db1`, `new_order@db2`...).
pub(crate) fn class_in_every_db(class: &str, databases: usize) -> Vec<String> {
    (1..=databases.max(1))
        .map(|d| class_name(class, d, databases.max(1)))
        .collect()
}

/// Transaction `class`'s name in database `d` of `databases`.
fn class_name(class: &str, d: usize, databases: usize) -> String {
    if databases == 1 {
        class.to_string()
    } else {
        format!("{class}@db{d}")
    }
}

/// Run one job (the registry's `driver`).
pub fn drive(job: &DriverJob, progress: &Progress) -> anyhow::Result<serde_json::Value> {
    let plan = Plan::from_job_params(&job.params)?;
    let client_cpus = engine::launch::parse_cpu_list(&plan.cfg.client_cpus)?;
    engine::launch::check_cpus(&client_cpus, "client_cpus")?;
    let dbs = job
        .endpoints
        .iter()
        .map(|e| backend_for_endpoint(e, plan.password()))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if dbs.is_empty() || dbs.len() != plan.cfg.databases as usize {
        bail!(
            "the oltp service gave {} database endpoint(s) for {} database(s)",
            dbs.len(),
            plan.cfg.databases
        );
    }
    if plan.c_load.len() != dbs.len() {
        bail!("the oltp job gives no build constant for every database");
    }
    // A connection per user and database, and the monitor's: refused before the first
    // connect with how to raise the limit (--vus 100000 connected for 30 s, then failed
    // on "too many open files"). The controller checked this machine's when the plan was
    // built (`connections_per_generator`); this is the generator host's own limit.
    let connections = u64::from(plan.cfg.vus) * dbs.len() as u64 + dbs.len() as u64;
    engine::limits::ensure_open_files(connections)?;
    let d = Driver {
        plan: &plan,
        mix: Mix::new(&plan.cfg.mix)?,
        dbs,
        client_cpus,
        seed: plan
            .cfg
            .seed
            .wrapping_add(SEED_STEP.wrapping_mul(job.index as u64)),
        phase: job.phase(),
    };
    let report = match job.test.as_str() {
        "tpcc" => d.tpcc(job.index == 0, progress)?,
        "step" => d.step(progress)?,
        other => bail!("the oltp driver runs `tpcc` and `step`, not `{other}`"),
    };
    Ok(serde_json::to_value(report)?)
}

/// One job's users and where they connect.
struct Driver<'a> {
    plan: &'a Plan,
    mix: Mix,
    /// Connection settings per database (password added).
    dbs: Vec<Box<dyn Backend>>,
    client_cpus: Vec<usize>,
    /// This generator's seed of its users' random streams.
    seed: u64,
    /// Its place among the generators ([`LoadSpec::phase`]).
    phase: f64,
}

/// Connected users and their counters per database.
type Users = (Vec<Vu>, Vec<Arc<Counters>>);

impl Driver<'_> {
    fn cfg(&self) -> &Config {
        &self.plan.cfg
    }

    /// Connect this generator's users of every database (the keying/think deadline is
    /// set by the caller), flushing their statistics for `mark` if given.
    fn connect_vus(&self, mark: Option<&Arc<StatsMark>>) -> anyhow::Result<Users> {
        let cfg = self.cfg();
        let ndb = self.dbs.len();
        let w = cfg.warehouses;
        // The run's constants come from the sweep point's seed, the same on every
        // generator (the job's `seed` only moves its users' random streams).
        let mut rng = SmallRng::seed_from_u64(cfg.seed ^ 0x7470_6363);
        let counters: Vec<Arc<Counters>> =
            (0..ndb).map(|_| Arc::new(Counters::default())).collect();
        let mut sessions = Vec::with_capacity(ndb * cfg.vus as usize);
        for (i, db) in self.dbs.iter().enumerate() {
            let consts = random::Constants::for_run(&mut rng, self.plan.c_load[i]);
            for v in self.plan.first_vu..self.plan.first_vu + cfg.vus {
                let p = VuParams {
                    home_w: v % w + 1,
                    stock_district: (v / w) % random::DISTRICTS + 1,
                    warehouses: w,
                    consts,
                    mix: self.mix.clone(),
                    class_offset: 5 * i,
                    counters: counters[i].clone(),
                    waits: cfg.keying_think.then_some(1.0),
                    deadline: None,
                    stats_mark: mark.cloned(),
                };
                sessions.push(Vu::connect(&**db, p).with_context(|| {
                    format!(
                        "connecting virtual user {} of database {}",
                        v + 1,
                        db.db_name()
                    )
                })?);
            }
        }
        Ok((sessions, counters))
    }

    fn spec(&self, shape: LoadShape, secs: f64, warmup: f64, sessions: usize) -> LoadSpec {
        LoadSpec {
            shape,
            stop: StopAfter::Duration(Duration::from_secs_f64(secs)),
            warmup: Duration::from_secs_f64(warmup),
            connections: sessions,
            threads: sessions,
            pipeline: 1,
            requests_per_connection: None,
            client_cpus: self.client_cpus.clone(),
            seed: self.seed,
            interval: Duration::from_secs(1),
            sleep_when_idle: false,
            client_io: Default::default(),
            phase: self.phase,
            no_reply_timeout: engine::load::NO_REPLY_TIMEOUT,
        }
    }

    fn run(
        &self,
        spec: &LoadSpec,
        sessions: Vec<Vu>,
        progress: &Progress,
    ) -> anyhow::Result<LoadOutcome> {
        let names = class_names(self.dbs.len());
        let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
        engine::load::run_sessions(spec, &name_refs, sessions, progress)
    }

    /// One open-loop step of the capacity tests: this generator's part of the step's
    /// rate across its users (the configured mix), `duration` seconds, no ramp-up.
    fn step(&self, progress: &Progress) -> anyhow::Result<Report> {
        let cfg = self.cfg();
        let rate = cfg.rate.context("a capacity step needs its rate")?;
        // Waits end with the step (`Session::run_ends_at`).
        let (sessions, counters) = self.connect_vus(None)?;
        let shape = if cfg.arrival == "poisson" {
            LoadShape::Poisson { rate }
        } else {
            LoadShape::Constant { rate }
        };
        let spec = self.spec(shape, cfg.duration, 0.0, sessions.len());
        let out = self.run(&spec, sessions, progress)?;
        Ok(Report {
            outcome: WireOutcome::from(&out),
            counters: counters.iter().map(|c| c.values()).collect(),
            windows: None,
        })
    }

    /// The measured TPC-C run; `read_counters`: read the server's counters too.
    fn tpcc(&self, read_counters: bool, progress: &Progress) -> anyhow::Result<Report> {
        let cfg = self.cfg();
        // Keying and think times end with the run (the load loop tells each user when,
        // `Session::run_ends_at`), so the last waits do not hold it open.
        // Every generator's users flush their statistics where the measured run starts
        // and say so; the generator that reads the counters reads then (see `StatsMark`).
        let mark = Arc::new(StatsMark::new(self.dbs.len() * cfg.vus as usize));
        let (sessions, counters) = self.connect_vus(Some(&mark))?;
        let shape = match (cfg.rate, cfg.arrival.as_str()) {
            (None, _) => LoadShape::Closed,
            (Some(rate), "poisson") => LoadShape::Poisson { rate },
            (Some(rate), _) => LoadShape::Constant { rate },
        };
        let spec = self.spec(shape, cfg.duration, cfg.rampup, sessions.len());
        let stop = Arc::new(AtomicBool::new(false));
        let mon = read_counters.then(|| {
            let stop = stop.clone();
            let dbs: Vec<Box<dyn Backend>> =
                self.dbs.iter().map(|d| d.with_db(&d.db_name())).collect();
            std::thread::spawn(move || monitor(dbs, &mark, stop))
        });
        let result = self.run(&spec, sessions, progress);
        let t_end = Instant::now();
        stop.store(true, Ordering::Relaxed);
        let mut wins = mon.map(|m| m.join().unwrap_or_default());
        let outcome = result?;
        if let Some(wins) = wins.as_mut() {
            self.final_readings(wins, t_end);
        }
        let now = Instant::now();
        Ok(Report {
            outcome: WireOutcome::from(&outcome),
            counters: counters.iter().map(|c| c.values()).collect(),
            windows: wins.map(|ws| ws.iter().map(|w| w.to_wire(now)).collect()),
        })
    }

    /// Final reading after the users disconnected (every generator's: the count is of
    /// the database's sessions): their backends flush their statistics on exit, so the
    /// commit counters are complete, as they are at the first reading (`StatsMark`).
    fn final_readings(&self, wins: &mut [DbWindow], t_end: Instant) {
        for (i, db) in self.dbs.iter().enumerate() {
            let Some(win) = wins.get_mut(i) else { continue };
            if win.first.is_none() {
                continue;
            }
            let final_sample = (|| -> anyhow::Result<DbSample> {
                let mut client = db.connect()?;
                for _ in 0..100 {
                    if client.vu_sessions()? == 0 {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                let mut s = sample(&mut *client)?;
                s.at = t_end;
                s.xacts_at = t_end;
                Ok(s)
            })();
            match final_sample {
                Ok(s) => win.last = Some(s),
                Err(e) => {
                    win.error.get_or_insert(format!("{e:#}"));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_names_per_database() {
        assert_eq!(class_names(1)[0], "new_order");
        let two = class_names(2);
        assert_eq!(two.len(), 10);
        assert_eq!(two[5], "new_order@db2");
        assert_eq!(class_in_every_db("new_order", 1), ["new_order"]);
        assert_eq!(
            class_in_every_db("new_order", 2),
            [two[0].as_str(), two[5].as_str()]
        );
    }
}
