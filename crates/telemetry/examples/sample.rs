//! Sample this host for N seconds at 1 s and print one line per interval (all-CPU
//! %usr %sys %irq %soft %idle, ctxt/s) in mpstat's layout, then the summary as JSON:
//! `cargo run -p rackbench-telemetry --example sample -- 5`, next to `mpstat 1 5`.

use std::time::Duration;

use rackbench_telemetry::{summarize, Sampler, SamplerConfig};

fn main() -> anyhow::Result<()> {
    let secs: u64 = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(5);
    let s = Sampler::start(SamplerConfig::local())?;
    std::thread::sleep(Duration::from_millis(secs * 1000 + 50));
    let samples = s.stop();
    println!("    t_s   %usr  %nice   %sys %iowait   %irq  %soft %steal  %idle   ctxt/s");
    for x in &samples {
        if let Some(c) = x.cpus.iter().find(|c| c.cpu == -1) {
            println!(
                "{:7.2} {:6.2} {:6.2} {:6.2} {:7.2} {:6.2} {:6.2} {:6.2} {:6.2} {:>8}",
                x.t_s,
                c.usr_pct,
                c.nice_pct,
                c.sys_pct,
                c.iowait_pct,
                c.irq_pct,
                c.soft_pct,
                c.steal_pct,
                c.idle_pct,
                x.ctxt_per_s.map_or("-".into(), |v| format!("{v:.0}"))
            );
        }
    }
    println!("{}", serde_json::to_string_pretty(&summarize(&samples))?);
    Ok(())
}
