//! The http driver: what one load generator runs against the service's endpoint.
//!
//! A job carries the sweep point's parameters already narrowed to this generator's
//! share (its `connections`, `requests`, `rate`, `seed`, and its `paths` rotated to
//! where its first connection stands among all) and the test `load`. A capacity step is
//! a `load` job with the step's `rate` and `duration`, no `requests`, and `wait`
//! (`sleep` or `spin`, resolved by the controller) in the parameters, so the driver
//! knows no capacity procedure. The endpoint is a URL, resolved here (a name may
//! resolve differently on each host); `client_cpus` is checked here too: the CPUs are
//! this host's. The report is the load outcome in its wire form, with the histograms
//! whole so that the controller merges them exactly.

use std::sync::Arc;

use anyhow::{bail, Context};
use engine::host::DriverJob;
use engine::load::run_stream;
use engine::wire::WireOutcome;
use engine::workload::Progress;

use crate::proto::{HttpProtocol, CLASS_NAMES};
use crate::{parse_target, parse_url, Plan};

/// The one test a driver runs (a capacity step is one too).
pub const LOAD: &str = "load";

/// Run one job (the registry's `driver`).
pub fn drive(job: &DriverJob, progress: &Progress) -> anyhow::Result<serde_json::Value> {
    if job.test != LOAD {
        bail!(
            "the http driver runs `{LOAD}` jobs, not `{}` (capacity tests are driven as load steps)",
            job.test
        );
    }
    let plan = Plan::from_params(&job.params)?;
    engine::launch::check_cpus(&plan.client_cpus, "--client-cpus")?;
    let Some(url) = job.endpoints.first() else {
        bail!("no http endpoint to drive");
    };
    let target = parse_target(url).with_context(|| format!("endpoint {url}"))?;
    let set = Arc::new(plan.cfg.request_set(&parse_url(url)?)?);
    let mut spec = plan.cfg.spec(plan.client_cpus.clone());
    spec.sleep_when_idle = plan.cap.sleep_when_idle(&job.test);
    spec.phase = job.phase();
    let out = run_stream(
        &spec,
        &[target.addr],
        &CLASS_NAMES,
        move |i| HttpProtocol::new(set.clone(), i),
        progress,
    )?;
    Ok(serde_json::to_value(WireOutcome::from(&out))?)
}

pub use engine::spread::decode;
