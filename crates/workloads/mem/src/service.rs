//! The mem service: nothing is launched. When a sweep point starts, the system under
//! test resolves it against its own caches, memory and CPUs ([`MemBench`]): a bad size
//! for this machine stops the run in `prepare`, the resolved point is what every test
//! of the point runs (the [`PLAN`] query), and the caches go into the disclosure.

use std::collections::BTreeMap;

use anyhow::Context;
use engine::host::{Findings, Service, ServiceCtx};
use engine::workload::Params;

use crate::MemBench;

/// The query answered with the resolved sweep point (a driver job's parameters).
pub const PLAN: &str = "plan";

/// Resolve the sweep point on this host (`Registration::service`).
pub fn start_service(p: &Params, _ctx: &ServiceCtx) -> anyhow::Result<Box<dyn Service>> {
    let bench = MemBench::from_params(p)?;
    let plan = serde_json::to_value(&bench).context("mem: serialising the resolved sweep point")?;
    Ok(Box::new(Findings {
        facts: bench.facts(),
        answers: BTreeMap::from([(PLAN.to_string(), plan)]),
    }))
}
