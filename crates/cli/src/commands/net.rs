//! `net`: being written.
use crate::Global;

#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_a: Args, _g: &Global) -> anyhow::Result<i32> {
    anyhow::bail!("`rackbench net` is not available yet")
}
