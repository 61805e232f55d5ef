//! The kv driver: what one load generator runs against the service's endpoints.
//!
//! A job carries the sweep point's parameters already narrowed to this generator's
//! share (its `clients`, `requests`, `rate` and `seed`) and a test: `set`, `get`,
//! `mix` or `ping`. A capacity step is a `mix` job with its `rate` and `duration` (the
//! step's) and `wait` (`sleep` or `spin`, resolved by the controller) in the
//! parameters, so the driver knows no capacity procedure. `client_cpus` is read here:
//! the CPUs are this host's. The report is the load outcome in its wire form, with the
//! histograms whole so that the controller merges them exactly.

use std::net::{SocketAddr, ToSocketAddrs};

use anyhow::{bail, Context};
use engine::host::DriverJob;
use engine::load::run_stream;
use engine::wire::WireOutcome;
use engine::workload::Progress;

use crate::resp::{Resp, CLASS_NAMES};
use crate::Plan;

/// Run one job (the registry's `driver`).
pub fn drive(job: &DriverJob, progress: &Progress) -> anyhow::Result<serde_json::Value> {
    let plan = Plan::from_params(&job.params)?;
    engine::launch::check_cpus(&plan.client_cpus, "client_cpus")?;
    let cfg = &plan.cfg;
    let mix = cfg.mix(&job.test)?;
    let endpoints = resolve(&job.endpoints)?;
    let mut spec = cfg.spec(plan.client_cpus.clone());
    spec.sleep_when_idle = plan.cap.sleep_when_idle(&job.test);
    spec.phase = job.phase();
    let (keyspace, size, verify) = (cfg.keyspace, cfg.data_size, cfg.verify);
    // Read on this host: the password never travels with the job.
    let auth: Option<std::sync::Arc<[u8]>> =
        crate::auth::Auth::of(cfg)?.map(|a| a.command().into());
    let out = run_stream(
        &spec,
        &endpoints,
        &CLASS_NAMES,
        |_| Resp::new(mix, keyspace, size, verify).with_auth(auth.clone()),
        progress,
    )?;
    Ok(serde_json::to_value(WireOutcome::from(&out))?)
}

pub use engine::spread::decode;

/// `host:port` endpoints to addresses, as this host resolves them.
fn resolve(endpoints: &[String]) -> anyhow::Result<Vec<SocketAddr>> {
    if endpoints.is_empty() {
        bail!("no kv endpoints to drive");
    }
    endpoints
        .iter()
        .map(|e| {
            e.to_socket_addrs()
                .with_context(|| format!("endpoint `{e}` is not host:port"))?
                .next()
                .with_context(|| format!("endpoint `{e}` resolves to no address"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_resolve_or_say_which_is_wrong() {
        let ok = resolve(&["127.0.0.1:6379".into(), "[::1]:7000".into()]).unwrap();
        assert_eq!(ok[0].port(), 6379);
        assert_eq!(ok[1].port(), 7000);
        let e = resolve(&["127.0.0.1".into()]).unwrap_err();
        assert!(format!("{e:#}").contains("`127.0.0.1`"), "{e:#}");
        assert!(resolve(&[]).is_err());
    }
}
