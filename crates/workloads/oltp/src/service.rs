//! The oltp service: what runs on the system under test for one sweep point.
//!
//! Either a server launched here (a MariaDB `mariadbd`, or a PostgreSQL cluster:
//! throwaway, or `--cluster-dir`), pinned to
//! the server CPUs, listening on the address the load generators reach this host at and
//! admitting them with the run's password (see [`Reach`]), or the server `--dsn` names, whose connection is only checked. The
//! TPC-C build is made (or reused) here, next to the database. The service yields one
//! connection string per database without any password (the drivers get it in their
//! job, if there is one), the facts the disclosure reports, and answers the
//! controller's queries: `check` (the consistency conditions, clause 3.3.2), `builds`
//! (each database's build metadata) and `pid` (the launched postmaster's).

use std::collections::BTreeMap;

use anyhow::bail;
use engine::host::{Service, ServiceCtx};
use engine::workload::Params;
use model::Fact;

use crate::backend::EngineKind;
use crate::populate::BuildMeta;
use crate::server::Reach;
use crate::target::Launched;
use crate::{mariadb_server, server, Config, Plan, Target};

/// The service a host starts for `oltp` (the registry's `service`).
pub fn start_service(p: &Params, ctx: &ServiceCtx) -> anyhow::Result<Box<dyn Service>> {
    let plan = Plan::from_job_params(p)?;
    Ok(Box::new(OltpService::start(&plan, ctx)?))
}

/// The server and its databases for one sweep point, alive until [`Service::stop`].
pub struct OltpService {
    target: Target,
    endpoints: Vec<String>,
    facts: BTreeMap<String, Fact>,
    metas: Vec<BuildMeta>,
}

impl OltpService {
    pub fn start(plan: &Plan, ctx: &ServiceCtx) -> anyhow::Result<OltpService> {
        let cfg = &plan.cfg;
        // Checked here: the CPUs are this host's.
        engine::launch::check_cpus(
            &engine::launch::parse_cpu_list(&cfg.server_cpus)?,
            "server_cpus",
        )?;
        // The run's password, for a server launched here; a --dsn's is the user's own.
        let password = plan.password();
        let launched = password.filter(|_| cfg.dsn.is_none());
        let reach = Reach::at(&ctx.bind_ip, &plan.admit, launched)?;
        let mut target = Target::open_at(cfg, true, &reach, password)?;
        ctx.note(&format!("oltp: {}", target.describe));
        if let Some(pid) = target.server.as_ref().map(Launched::pid) {
            let name = match target.engine {
                EngineKind::Postgresql => "postgres",
                EngineKind::Mariadb => "mariadbd",
            };
            (ctx.watch)(name, pid);
        }
        let threads = cfg
            .load_threads
            .map_or_else(engine::launch::online_cpus, |t| t as usize);
        // A reused build is checked before the run as it is after (with --check).
        let built = target.ensure_built(
            cfg.warehouses,
            threads,
            cfg.seed,
            cfg.rebuild,
            cfg.check,
            &|m| ctx.note(m),
        )?;
        let metas = built.into_iter().map(|(_, m, _)| m).collect();
        let mut c = target.connect(&target.dbs[0])?;
        let version = c.server_version().ok();
        let mut facts = facts(cfg, version.as_deref(), target.server.is_some());
        if target.engine == EngineKind::Postgresql {
            // Read back from the server, launched or not: what it really runs with.
            let read = server::persistence(&mut *c, &cfg.pg_setting);
            if !read.is_empty() {
                facts.remove("server.config");
            }
            for (k, v) in read {
                facts.insert(format!("server.config.{k}"), Fact::known(&v));
            }
        }
        if target.engine == EngineKind::Mariadb {
            // Read back from the server, launched or not: what it really runs with.
            for (k, v) in mariadb_server::persistence(&mut *c) {
                facts.insert(format!("server.config.{k}"), Fact::known(&v));
            }
            facts.insert(
                "server.config.transactions".into(),
                Fact::known("stored procedures (neword, payment, ostat, delivery, slev)"),
            );
        }
        drop(c);
        let endpoints = target.endpoints(&ctx.bind_ip);
        Ok(OltpService {
            target,
            endpoints,
            facts,
            metas,
        })
    }
}

/// What the disclosure says about the server and the build.
fn facts(cfg: &Config, version: Option<&str>, launched: bool) -> BTreeMap<String, Fact> {
    let mut m = BTreeMap::new();
    let known = |v: &str| Fact::known(v);
    let engine = cfg.engine_kind().unwrap_or_default();
    let software = match engine {
        EngineKind::Postgresql => "software.postgresql",
        EngineKind::Mariadb => "software.mariadb",
    };
    m.insert(
        software.into(),
        version.map_or_else(|| Fact::unknown("not connected"), known),
    );
    m.insert("oltp.engine".into(), known(engine.label()));
    if launched && engine == EngineKind::Mariadb {
        for s in &cfg.mariadb_setting {
            if let Some((k, v)) = s.split_once('=') {
                m.insert(format!("server.config.{}", k.trim()), known(v.trim()));
            }
        }
    } else if launched {
        m.insert(
            "server.config.shared_buffers".into(),
            known(&cfg.shared_buffers),
        );
        m.insert(
            "server.config.fsync".into(),
            known(if cfg.fsync { "on" } else { "off" }),
        );
        m.insert(
            "server.config.synchronous_commit".into(),
            known(&cfg.synchronous_commit),
        );
        for s in &cfg.pg_setting {
            if let Some((k, v)) = s.split_once('=') {
                m.insert(format!("server.config.{}", k.trim()), known(v.trim()));
            }
        }
    } else {
        m.insert(
            "server.config".into(),
            Fact::unknown("server given by --dsn, not launched"),
        );
    }
    m.insert("oltp.warehouses".into(), known(&cfg.warehouses.to_string()));
    m.insert("oltp.databases".into(), known(&cfg.databases.to_string()));
    m
}

impl Service for OltpService {
    fn endpoints(&self) -> Vec<String> {
        self.endpoints.clone()
    }

    fn facts(&self) -> BTreeMap<String, Fact> {
        self.facts.clone()
    }

    fn query(&mut self, what: &str) -> anyhow::Result<serde_json::Value> {
        match what {
            "check" => Ok(serde_json::to_value(self.target.check(false)?)?),
            "builds" => Ok(serde_json::to_value(&self.metas)?),
            "pid" => Ok(serde_json::to_value(
                self.target
                    .server
                    .as_ref()
                    .map(Launched::pid)
                    .filter(|&p| p != 0),
            )?),
            other => bail!("the oltp service answers `check`, `builds` and `pid`, not `{other}`"),
        }
    }

    fn exited(&mut self) -> Option<String> {
        self.target.server.as_mut().and_then(Launched::exited)
    }

    fn stop(&mut self) {
        self.target.stop();
        self.endpoints.clear();
    }
}

impl Drop for OltpService {
    fn drop(&mut self) {
        self.stop();
    }
}
