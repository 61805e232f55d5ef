//! `report`, `compare`, `tco`: being written.
use crate::Global;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run ids (or unique prefixes); default: the latest run.
    pub runs: Vec<String>,
}
#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    pub runs: Vec<String>,
}
#[derive(clap::Args, Debug)]
pub struct TcoArgs {
    pub plan: std::path::PathBuf,
}

pub fn report(_a: Args, _g: &Global) -> anyhow::Result<i32> {
    anyhow::bail!("`rackbench report` is not available yet")
}
pub fn compare(_a: CompareArgs, _g: &Global) -> anyhow::Result<i32> {
    anyhow::bail!("`rackbench compare` is not available yet")
}
pub fn tco(_a: TcoArgs, _g: &Global) -> anyhow::Result<i32> {
    anyhow::bail!("`rackbench tco` is not available yet")
}
