//! Run the mem workload through its Rust API and print the latency curve, the plateaus
//! and the bandwidth as text, until `rackbench run mem` is wired.
//! Usage: mem_curve [MAX_SIZE] [BW_SIZE]   (e.g. mem_curve 1G 256M)

use engine::Workload;

fn main() -> anyhow::Result<()> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let mut p = serde_json::json!({"sample_ms": 10, "samples": 7});
    if let Some(m) = a.first() {
        p["max_size"] = m.clone().into();
    }
    if let Some(b) = a.get(1) {
        p["bw_size"] = b.clone().into();
    }
    let map = p.as_object().cloned().unwrap_or_default();
    let mut w = rackbench_mem::MemWorkload::from_params(&map)?;
    let ctx = engine::Ctx::quiet();
    for t in w.tests() {
        let out = w.run_test(&t, &ctx)?;
        println!("== {t} ({:.1} s)", out.duration_s);
        for m in &out.metrics {
            let labels: Vec<String> = m.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
            println!(
                "{:<28} {:>14.3} {:<8} {}",
                m.name,
                m.value,
                m.unit,
                labels.join(" ")
            );
        }
        for m in &out.missing {
            println!("{:<28} missing: {}", m.name, m.reason);
        }
        for f in &out.flags {
            println!("flag {}: {}", f.code, f.message);
        }
    }
    Ok(())
}
