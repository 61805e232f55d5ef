//! Writes the test fixture runs (two platforms, kv sweeps with histograms, telemetry and
//! power) as exported JSON, to try `rackbench report --from FILE` without a store:
//!
//!   cargo run -p rackbench-report --example fixture_runs -- /tmp/runs.json
//!   rackbench report --from /tmp/runs.json x86-a arm-b -o /tmp/report.html

#[path = "../tests/common/mod.rs"]
mod common;

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: fixture_runs OUT.json");
        std::process::exit(2);
    };
    let runs = common::two_platforms();
    let text = serde_json::to_string(&runs).expect("runs serialize");
    if let Err(e) = std::fs::write(&path, text) {
        eprintln!("writing {path}: {e}");
        std::process::exit(1);
    }
    println!("{path}");
}
