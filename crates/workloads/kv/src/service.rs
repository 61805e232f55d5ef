//! The kv service: what runs on the system under test for one sweep point.
//!
//! Either N redis-server instances launched here (persistence off, each pinned to its
//! server CPU, listening on the address the load generators reach this host at), or
//! `--target` endpoints that are only checked with PING. Either way it yields the
//! endpoints the drivers connect to, the facts the disclosure reports, and answers the
//! controller's `counters` query (the servers' own `INFO commandstats`, summed), which
//! is how the generators' claims are checked against the servers wherever they run.

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use anyhow::{bail, Context};
use engine::host::{Service, ServiceCtx};
use engine::workload::Params;
use model::Fact;

use crate::auth::Auth;
use crate::{server, KvConfig, Plan};

/// Launched instances get this long to exit after SIGTERM before the group is killed.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// The service a host starts for `kv` (the registry's `service`).
pub fn start_service(p: &Params, ctx: &ServiceCtx) -> anyhow::Result<Box<dyn Service>> {
    let plan = Plan::from_params(p)?;
    Ok(Box::new(KvService::start(
        &plan.cfg,
        &plan.server_cpus,
        ctx,
    )?))
}

/// The servers of one sweep point, alive until [`Service::stop`].
pub struct KvService {
    /// What load generators are told to connect to (`10.0.0.1:6379`, or a target as given).
    endpoints: Vec<String>,
    /// The same servers as this host reaches them, for the admin queries.
    admin: Vec<SocketAddr>,
    instances: Vec<server::Instance>,
    dir: Option<engine::scratch::ScratchDir>,
    facts: BTreeMap<String, Fact>,
    /// `--auth-file`'s password, read on this host, for the admin connections.
    auth: Option<Auth>,
}

impl KvService {
    pub fn start(
        cfg: &KvConfig,
        server_cpus: &[usize],
        ctx: &ServiceCtx,
    ) -> anyhow::Result<KvService> {
        let mut svc = KvService {
            endpoints: Vec::new(),
            admin: Vec::new(),
            instances: Vec::new(),
            dir: None,
            facts: BTreeMap::new(),
            auth: Auth::of(cfg)?,
        };
        if cfg.targets.is_empty() {
            // Checked here, not in the plan: the CPUs are this host's.
            engine::launch::check_cpus(server_cpus, "server_cpus")?;
            svc.launch(cfg, server_cpus, ctx)?;
        } else {
            svc.check_targets(&cfg.targets)?;
        }
        svc.describe_first_server()?;
        Ok(svc)
    }

    fn check_targets(&mut self, targets: &[String]) -> anyhow::Result<()> {
        // Each server's run_id (INFO server): one server reached by two addresses (its
        // loopback and its LAN address) is one server, which no address tells.
        let mut run_ids: Vec<(String, &str)> = Vec::new();
        for t in targets {
            let addr = t
                .to_socket_addrs()
                .with_context(|| format!("--target `{t}` is not host:port"))?
                .next()
                .with_context(|| format!("--target `{t}` resolves to no address"))?;
            if self.admin.contains(&addr) {
                bail!(
                    "--target {t} is {addr}, as a --target before it is: give each server \
                     once"
                );
            }
            let mut a = server::Admin::connect(addr, self.auth.as_ref())?;
            if let Err(e) = a.ping() {
                // A server that needs a password answers, but refuses: not "is it Redis?".
                if format!("{e:#}").contains("NOAUTH") {
                    bail!(
                        // No bare word after `requirepass`: the secret masker, which
                        // every error passes, would hide it as redis's password.
                        "{addr} needs a password (it answered PING with NOAUTH: a \
                         requirepass, or an ACL user with one): put it alone in a file only \
                         you can read (chmod 600), on every host that connects, and give \
                         --auth-file FILE (and --user NAME for an ACL user); the password \
                         never goes on a command line"
                    );
                }
                return Err(e)
                    .with_context(|| format!("{addr} did not answer PING: is it a Redis server?"));
            }
            if let Some(id) = a.info("server").ok().and_then(|i| i.get("run_id").cloned()) {
                if let Some((_, before)) = run_ids.iter().find(|(r, _)| *r == id) {
                    bail!(
                        "--target {t} is the server --target {before} is (the same run_id): \
                         give each server once"
                    );
                }
                run_ids.push((id, t));
            }
            self.admin.push(addr);
            // Passed on as given: each load generator resolves the name itself, as a
            // name may resolve differently there.
            self.endpoints.push(t.clone());
        }
        self.facts.insert(
            "server.mode".into(),
            Fact::known("given endpoints (--target)"),
        );
        if self.auth.is_some() {
            self.facts.insert(
                "client.auth".into(),
                Fact::known(
                    "AUTH in front of each connection's first request (--auth-file), as \
                     redis-benchmark -a",
                ),
            );
        }
        Ok(())
    }

    fn launch(
        &mut self,
        cfg: &KvConfig,
        server_cpus: &[usize],
        ctx: &ServiceCtx,
    ) -> anyhow::Result<()> {
        let ip = ctx.bind_addr("redis-server")?;
        let dir = engine::scratch::tempdir("rackbench-kv-")
            .context("creating a temporary directory for redis-server")?;
        let cpus = if server_cpus.is_empty() {
            engine::launch::allowed_cpus()
        } else {
            server_cpus.to_vec()
        };
        if cpus.is_empty() {
            bail!("no CPU to pin redis-server to (give --server-cpus)");
        }
        ctx.note(&format!(
            "launching {} redis-server instance(s) on {ip} pinned to CPUs {:?}",
            cfg.instances,
            (0..cfg.instances)
                .map(|i| cpus[i % cpus.len()])
                .collect::<Vec<_>>()
        ));
        // Held before launching, so the directory goes whatever fails below.
        let dir = self.dir.insert(dir);
        self.instances = server::launch(&cfg.redis_server, cfg.instances, &cpus, dir.path(), ip)?;
        for (i, inst) in self.instances.iter().enumerate() {
            self.endpoints.push(inst.addr.to_string());
            self.admin.push(inst.addr);
            (ctx.watch)(&format!("server:{i}"), inst.guard.pid());
        }
        self.facts
            .insert("server.mode".into(), Fact::known("launched by rackbench"));
        if !ip.is_loopback() {
            self.facts.insert(
                "server.acl".into(),
                Fact::known(format!(
                    "listening on {ip}: protected mode off, the default user limited to GET SET PING INFO CONFIG GET"
                )),
            );
        }
        self.facts.insert(
            "server.instances".into(),
            Fact::known(cfg.instances.to_string()),
        );
        self.facts.insert(
            "server.cpus".into(),
            Fact::known(
                self.instances
                    .iter()
                    .map(|i| i.cpu.map_or("-".into(), |c| c.to_string()))
                    .collect::<Vec<_>>()
                    .join(","),
            ),
        );
        if let Some(v) = server::binary_version(&cfg.redis_server) {
            self.facts
                .insert("software.redis-server.binary".into(), Fact::known(v));
        }
        Ok(())
    }

    /// What the first server says about itself (version, the settings that move results).
    fn describe_first_server(&mut self) -> anyhow::Result<()> {
        let Some(ep) = self.admin.first() else {
            return Ok(());
        };
        let mut a = server::Admin::connect(*ep, self.auth.as_ref())?;
        let info = a.info("server").unwrap_or_default();
        let version = info.get("redis_version").map_or_else(
            || Fact::unknown("INFO server gave no redis_version"),
            Fact::known,
        );
        self.facts.insert("software.redis-server".into(), version);
        for key in [
            "save",
            "appendonly",
            "io-threads",
            "maxmemory",
            "maxmemory-policy",
            "hz",
        ] {
            let fact = a
                .config_get(key)
                .map_or_else(|| Fact::unknown("CONFIG GET refused"), Fact::known);
            self.facts.insert(format!("server.config.{key}"), fact);
        }
        Ok(())
    }

    /// Calls per command summed over every server (`INFO commandstats`).
    fn counters(&self) -> anyhow::Result<BTreeMap<String, u64>> {
        let mut total: BTreeMap<String, u64> = BTreeMap::new();
        for ep in &self.admin {
            let mut a = server::Admin::connect(*ep, self.auth.as_ref())?;
            let info = a
                .info("commandstats")
                .with_context(|| format!("INFO commandstats on {ep}"))?;
            for (k, v) in server::command_calls(&info) {
                *total.entry(k).or_insert(0) += v;
            }
        }
        Ok(total)
    }
}

impl Service for KvService {
    fn endpoints(&self) -> Vec<String> {
        self.endpoints.clone()
    }

    fn facts(&self) -> BTreeMap<String, Fact> {
        self.facts.clone()
    }

    fn query(&mut self, what: &str) -> anyhow::Result<serde_json::Value> {
        match what {
            "counters" => Ok(serde_json::to_value(self.counters()?)?),
            other => bail!("the kv service answers `counters`, not `{other}`"),
        }
    }

    fn exited(&mut self) -> Option<String> {
        // The first dead instance is enough to fail the test; ChildGuard::exited only
        // peeks, so it keeps saying so on later calls.
        self.instances.iter_mut().find_map(|i| i.guard.exited())
    }

    fn stop(&mut self) {
        for mut inst in self.instances.drain(..) {
            inst.guard.stop(STOP_GRACE);
        }
        self.endpoints.clear();
        self.admin.clear();
        self.dir = None;
    }
}

impl Drop for KvService {
    fn drop(&mut self) {
        self.stop();
    }
}
