//! The blocking-session executor (see `load`).
use crate::load::{LoadOutcome, LoadSpec, Session};
use crate::workload::Progress;

pub(crate) fn run<S: Session + 'static>(
    _spec: &LoadSpec,
    _class_names: &[&str],
    _sessions: Vec<S>,
    _progress: &Progress,
) -> anyhow::Result<LoadOutcome> {
    anyhow::bail!("session executor: being written")
}
