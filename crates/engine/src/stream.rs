//! The non-blocking byte-protocol executor (see `load`).
use std::net::SocketAddr;

use crate::load::{LoadOutcome, LoadSpec, Protocol};
use crate::workload::Progress;

pub(crate) fn run<P, F>(
    _spec: &LoadSpec,
    _endpoints: &[SocketAddr],
    _class_names: &[&str],
    _new_protocol: F,
    _progress: &Progress,
) -> anyhow::Result<LoadOutcome>
where
    P: Protocol + 'static,
    F: Fn(usize) -> P + Sync,
{
    anyhow::bail!("stream executor: being written")
}
