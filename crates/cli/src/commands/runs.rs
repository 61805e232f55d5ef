//! `runs`, `show`, `export`, `import`: being written.
use crate::Global;

#[derive(clap::Args, Debug)]
pub struct ListArgs {}
#[derive(clap::Args, Debug)]
pub struct ShowArgs {
    pub run: String,
}
#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    pub runs: Vec<String>,
}
#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    pub file: std::path::PathBuf,
}

pub fn list(_a: ListArgs, _g: &Global) -> anyhow::Result<i32> {
    anyhow::bail!("not available yet")
}
pub fn show(_a: ShowArgs, _g: &Global) -> anyhow::Result<i32> {
    anyhow::bail!("not available yet")
}
pub fn export(_a: ExportArgs, _g: &Global) -> anyhow::Result<i32> {
    anyhow::bail!("not available yet")
}
pub fn import(_a: ImportArgs, _g: &Global) -> anyhow::Result<i32> {
    anyhow::bail!("not available yet")
}

/// The results table printed after a run (placeholder until the store lands).
pub fn results_table(run: &model::RunRecord) -> String {
    let mut out = String::new();
    for r in &run.results {
        out.push_str(&format!(
            "{} {} {} {:?}\n",
            r.step,
            r.test,
            r.headline,
            r.headline_value()
        ));
    }
    out
}
