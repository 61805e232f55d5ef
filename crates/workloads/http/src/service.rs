//! The http service: what runs on the system under test for one sweep point.
//!
//! Either an nginx launched here ([`crate::nginx`]: workers pinned to the server CPUs,
//! listening on a free port of the address the load generators reach this host at), or
//! a `--target` URL that is only checked by connecting to it. Either way it yields one
//! endpoint, a URL (`http://10.0.0.1:34567/index.html`, or the target as given), the
//! facts the disclosure reports, and, for a launched nginx with `stub_status`, answers
//! the controller's `counters` query (`{"requests": N}`, nginx's own count), which is
//! how the generators' claims are checked against the server wherever they run.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{bail, Context};
use engine::host::{Service, ServiceCtx};
use engine::workload::Params;
use model::Fact;

use crate::{nginx, parse_target, HttpConfig, Plan};

/// A launched nginx gets this long to exit after SIGTERM before the group is killed.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// The service a host starts for `http` (the registry's `service`).
pub fn start_service(p: &Params, ctx: &ServiceCtx) -> anyhow::Result<Box<dyn Service>> {
    let plan = Plan::from_params(p)?;
    Ok(Box::new(HttpService::start(
        &plan.cfg,
        &plan.server_cpus,
        ctx,
    )?))
}

/// The server of one sweep point, alive until [`Service::stop`].
pub struct HttpService {
    /// What load generators are told to request: one URL.
    endpoints: Vec<String>,
    server: Option<nginx::Nginx>,
    facts: BTreeMap<String, Fact>,
}

impl HttpService {
    pub fn start(
        cfg: &HttpConfig,
        server_cpus: &[usize],
        ctx: &ServiceCtx,
    ) -> anyhow::Result<HttpService> {
        let mut svc = HttpService {
            endpoints: Vec::new(),
            server: None,
            facts: BTreeMap::new(),
        };
        match &cfg.target {
            Some(url) => svc.check_target(url)?,
            None => {
                // Checked here, not in the plan: the CPUs are this host's.
                engine::launch::check_cpus(server_cpus, "--server-cpus")?;
                svc.launch(cfg, server_cpus, ctx)?;
            }
        }
        Ok(svc)
    }

    fn check_target(&mut self, url: &str) -> anyhow::Result<()> {
        let t = parse_target(url)?;
        std::net::TcpStream::connect_timeout(&t.addr, Duration::from_secs(3))
            .with_context(|| format!("--target {url}: cannot connect to {}", t.addr))?;
        // Passed on as given: each load generator resolves the name itself, as a name
        // may resolve differently there.
        self.endpoints.push(url.to_string());
        self.facts.insert(
            "server.mode".into(),
            Fact::known("given endpoint (--target)"),
        );
        self.facts
            .insert("server.url".into(), Fact::known(url.to_string()));
        Ok(())
    }

    fn launch(
        &mut self,
        cfg: &HttpConfig,
        server_cpus: &[usize],
        ctx: &ServiceCtx,
    ) -> anyhow::Result<()> {
        let ip = ctx.bind_addr("nginx")?;
        let binary = engine::launch::find_binary(&cfg.nginx, "nginx-light")?;
        ctx.note(&format!(
            "launching nginx ({} worker(s){}) on {ip} serving a {}-byte file",
            cfg.server_workers,
            if server_cpus.is_empty() {
                String::new()
            } else {
                format!(" on CPUs {server_cpus:?}")
            },
            cfg.file_size
        ));
        let n = nginx::launch(&nginx::NginxSpec {
            binary: binary.clone(),
            workers: cfg.server_workers,
            cpus: server_cpus.to_vec(),
            file_size: cfg.file_size,
            bind_ip: ip,
        })?;
        (ctx.watch)("server:0", n.guard.pid());
        for (i, w) in n.workers.iter().enumerate() {
            (ctx.watch)(&format!("server:worker{i}"), *w);
        }
        self.facts
            .insert("server.mode".into(), Fact::known("launched by rackbench"));
        self.facts.insert(
            "software.nginx".into(),
            n.version.clone().map_or_else(
                || Fact::unknown("`nginx -v` printed no version"),
                Fact::known,
            ),
        );
        self.facts.insert(
            "software.nginx.binary".into(),
            Fact::known(binary.display().to_string()),
        );
        self.facts.insert(
            "server.config.worker_processes".into(),
            Fact::known(cfg.server_workers.to_string()),
        );
        self.facts.insert(
            "server.config.worker_cpu_affinity".into(),
            Fact::known(nginx::affinity_masks(cfg.server_workers, server_cpus).join(" ")),
        );
        self.facts.insert(
            "server.static_file_bytes".into(),
            Fact::known(cfg.file_size.to_string()),
        );
        // `SocketAddr` writes an IPv6 address in brackets, as a URL wants it.
        self.endpoints
            .push(format!("http://{}/{}", n.addr, nginx::STATIC_FILE));
        self.server = Some(n);
        Ok(())
    }
}

impl Service for HttpService {
    fn endpoints(&self) -> Vec<String> {
        self.endpoints.clone()
    }

    fn facts(&self) -> BTreeMap<String, Fact> {
        self.facts.clone()
    }

    fn query(&mut self, what: &str) -> anyhow::Result<serde_json::Value> {
        match what {
            "counters" => {
                let Some(n) = &self.server else {
                    bail!("a given --target has no counters rackbench can read");
                };
                let requests = n.requests_served().context(
                    "nginx gave no request count (no stub_status in this build, or it did not answer)",
                )?;
                Ok(serde_json::json!({ "requests": requests }))
            }
            other => bail!("the http service answers `counters`, not `{other}`"),
        }
    }

    fn exited(&mut self) -> Option<String> {
        // ChildGuard::exited only peeks, so it keeps saying so on later calls.
        self.server.as_mut().and_then(|s| s.guard.exited())
    }

    fn stop(&mut self) {
        if let Some(mut s) = self.server.take() {
            s.guard.stop(STOP_GRACE);
        }
        self.endpoints.clear();
    }
}

impl Drop for HttpService {
    fn drop(&mut self) {
        self.stop();
    }
}
