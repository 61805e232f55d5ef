//! `rackbench disclosure`: print this host's system disclosure (the facts stored with
//! every run) as an aligned two-column table, or as JSON with `--json`.
use std::path::PathBuf;

use crate::Global;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// procfs to read (a captured tree's `proc` directory for offline inspection).
    #[arg(long, value_name = "DIR", default_value = "/proc")]
    pub proc_root: PathBuf,
    /// sysfs to read.
    #[arg(long, value_name = "DIR", default_value = "/sys")]
    pub sys_root: PathBuf,
    /// Host name to record (`local` for this machine).
    #[arg(long, default_value = "local")]
    pub host: String,
    /// Role to record (`sut`, `loadgen`, `sut+loadgen`).
    #[arg(long, default_value = "sut")]
    pub role: String,
}

pub fn run(a: Args, g: &Global) -> anyhow::Result<i32> {
    if !a.proc_root.join("stat").is_file() && !a.proc_root.join("cpuinfo").is_file() {
        anyhow::bail!(
            "{} does not look like a procfs (no stat or cpuinfo); \
             try `rackbench disclosure --proc-root /proc`",
            a.proc_root.display()
        );
    }
    let d = telemetry::disclosure::collect(&a.host, &a.role, &a.proc_root, &a.sys_root);
    if g.json {
        engine::outln!("{}", serde_json::to_string_pretty(&d)?);
    } else {
        engine::out!("{}", render_table(&d));
    }
    Ok(0)
}

/// Two columns, keys padded to the longest key; unknown facts show their reason.
fn render_table(d: &model::HostDisclosure) -> String {
    let width = d
        .facts
        .keys()
        .map(|k| k.len())
        .max()
        .unwrap_or(0)
        .max("host".len());
    let mut out = String::new();
    // Facts are what the host's firmware and tools say: shown safe for the terminal.
    let safe = model::printable;
    out.push_str(&format!("{:width$}  {}\n", "host", safe(&d.host)));
    out.push_str(&format!("{:width$}  {}\n", "role", safe(&d.role)));
    for (k, f) in &d.facts {
        out.push_str(&format!("{:width$}  {}\n", safe(k), safe(&f.display())));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::{Fact, HostDisclosure};

    #[test]
    fn table_is_aligned() {
        let mut facts = std::collections::BTreeMap::new();
        facts.insert("cpu.model".to_string(), Fact::known("Xeon"));
        facts.insert(
            "mem.dimms".to_string(),
            Fact::unknown("dmidecode not installed"),
        );
        let d = HostDisclosure {
            host: "local".into(),
            role: "sut".into(),
            facts,
        };
        assert_eq!(
            render_table(&d),
            "host       local\n\
             role       sut\n\
             cpu.model  Xeon\n\
             mem.dimms  unknown (dmidecode not installed)\n"
        );
    }
}
