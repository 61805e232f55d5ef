//! The http workload without the CLI or the store: parameters as `key=value` arguments
//! (the same keys as `rackbench run http` flags, e.g. `target=http://127.0.0.1:8080/
//! connections=50 duration=10 client_cpus=1`), one JSON line of metrics per test on stdout.
//! For quick comparisons with wrk while the full binary builds; the CLI is the real way.

use engine::workload::{Ctx, Workload};

fn main() -> anyhow::Result<()> {
    let mut params = serde_json::Map::new();
    for a in std::env::args().skip(1) {
        let (k, v) = a
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("arguments are key=value, not `{a}`"))?;
        params.insert(k.to_string(), engine::plan::parse_value(v)?);
    }
    let mut w = rackbench_http::Http::from_params(&params)?;
    let ctx = Ctx::quiet();
    w.prepare(&ctx)?;
    for t in w.tests() {
        let out = w.run_test(&t, &ctx)?;
        let metrics: serde_json::Map<String, serde_json::Value> = out
            .metrics
            .iter()
            .filter(|m| m.labels.is_empty())
            .map(|m| (m.name.clone(), serde_json::json!(m.value)))
            .collect();
        println!(
            "{}",
            serde_json::json!({ "test": t, "metrics": metrics, "flags": out.flags.iter().map(|f| &f.code).collect::<Vec<_>>() })
        );
    }
    w.cleanup();
    Ok(())
}
