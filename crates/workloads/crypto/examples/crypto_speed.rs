//! Run one crypto test through the workload's Rust API and print its metrics as JSON, for
//! `bench/platform_vs_reference.sh` until `rackbench run crypto` is wired.
//! Usage: crypto_speed TEST THREADS DURATION_S   (e.g. crypto_speed rsa2048 1 3)

use engine::Workload;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let test = args.first().map_or("rsa2048", String::as_str);
    let threads: u64 = args.get(1).map_or(Ok(1), |s| s.parse())?;
    let duration: f64 = args.get(2).map_or(Ok(3.0), |s| s.parse())?;
    let params = serde_json::json!({"tests": [test], "threads": threads, "duration": duration});
    let map = params.as_object().cloned().unwrap_or_default();
    let mut w = rackbench_crypto::CryptoWorkload::from_params(&map)?;
    let out = w.run_test(test, &engine::Ctx::quiet())?;
    let metrics: Vec<_> = out.metrics.iter().filter(|m| m.labels.is_empty()).collect();
    println!(
        "{}",
        serde_json::to_string(
            &serde_json::json!({"test": test, "threads": threads, "metrics": metrics})
        )?
    );
    Ok(())
}
