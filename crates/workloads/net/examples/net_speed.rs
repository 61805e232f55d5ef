//! Run one net test through the workload's Rust API against a running `rackbench net serve`
//! and print its unlabelled metrics as JSON, for `bench/platform_vs_reference.sh` until
//! `rackbench run net` is wired.
//! Usage: net_speed TEST TARGET DURATION_S SENDER_CPUS RECEIVER_CPUS [RATE [CONGESTION]]
//! e.g.   net_speed tcp 127.0.0.1:5299 10 1 0

use engine::Workload;

fn main() -> anyhow::Result<()> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let get = |i: usize, d: &str| a.get(i).cloned().unwrap_or_else(|| d.to_string());
    let test = get(0, "tcp");
    let mut p = serde_json::json!({
        "tests": [test.clone()],
        "target": get(1, "127.0.0.1:5201"),
        "duration": get(2, "10").parse::<f64>()?,
        "sender_cpus": [get(3, "1")],
        "receiver_cpus": [get(4, "0")],
    });
    if let Some(r) = a.get(5) {
        p["rate"] = serde_json::Value::from(r.clone());
    }
    if let Some(cc) = a.get(6) {
        p["congestion"] = serde_json::Value::from(cc.clone());
    }
    let map = p.as_object().cloned().unwrap_or_default();
    let mut w = rackbench_net::NetWorkload::from_params(&map)?;
    let ctx = engine::Ctx::quiet();
    w.prepare(&ctx)?;
    let out = w.run_test(&test, &ctx)?;
    w.cleanup();
    let metrics: Vec<_> = out
        .metrics
        .iter()
        .filter(|m| m.labels.is_empty() || m.labels.contains_key("end"))
        .collect();
    println!(
        "{}",
        serde_json::to_string(
            &serde_json::json!({"test": test, "error": out.error, "metrics": metrics})
        )?
    );
    Ok(())
}
