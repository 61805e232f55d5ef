//! The mem driver: one job is one whole test (`latency` or `bandwidth`), run on the host
//! it is sent to, the system under test; its parameters are the sweep point as that
//! host's service resolved it ([`MemBench`]). The test's [`engine::StepOutput`] comes
//! back as JSON.

use engine::host::DriverJob;
use engine::workload::Progress;

use crate::MemBench;

/// Run one test on this host (`Registration::driver`).
pub fn drive(job: &DriverJob, progress: &Progress) -> anyhow::Result<serde_json::Value> {
    let bench = MemBench::from_job(&job.params)?;
    engine::host::step_report(bench.run(&job.test, progress)?)
}
