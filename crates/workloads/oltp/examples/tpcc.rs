//! Run the `oltp` workload once, without the runner or the results store, and print its
//! step output as JSON: a tool for the bench script and for debugging a build.
//!
//! `cargo run --release -p rackbench-oltp --example tpcc -- warehouses=1 vus=4 duration=10`
//! (keys are the `rackbench run oltp` plan keys).

use engine::{Ctx, Workload};
use serde_json::{json, Map, Value};

fn main() -> anyhow::Result<()> {
    let mut m = Map::new();
    for a in std::env::args().skip(1) {
        let Some((k, v)) = a.split_once('=') else {
            anyhow::bail!("arguments are key=value plan keys, got `{a}`");
        };
        m.insert(k.to_string(), Value::String(v.to_string()));
    }
    let cfg = rackbench_oltp::Config::from_map(&m)?;
    let mut w = rackbench_oltp::Oltp::new(cfg.clone())?;
    let ctx = Ctx {
        verbose: true,
        ..Ctx::quiet()
    };
    let res = (|| {
        w.prepare(&ctx)?;
        let out = w.run_test("tpcc", &ctx)?;
        let flags = w.verify(&ctx)?;
        anyhow::Ok((out, flags))
    })();
    w.cleanup();
    let (out, vflags) = res?;
    let doc = json!({
        "config": cfg.echo(),
        "headline": out.headline,
        "duration_s": out.duration_s,
        "metrics": out.metrics,
        "missing": out.missing,
        "flags": out.flags.iter().chain(vflags.iter()).collect::<Vec<_>>(),
        "histograms": out.histograms.iter().map(|h| json!({"name": h.name, "kind": h.kind, "summary": h.summary})).collect::<Vec<_>>(),
        "error": out.error,
    });
    println!("{}", serde_json::to_string_pretty(&doc)?);
    Ok(())
}
