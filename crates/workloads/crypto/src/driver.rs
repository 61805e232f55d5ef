//! The crypto driver: one job is one whole test, run on the host it is sent to (the
//! system under test: the load is the measurement). The sweep point is read again from
//! the job's parameters there, keys are made there, worker threads are pinned to that
//! host's CPUs, and the test's [`StepOutput`] comes back as JSON.

use std::time::Duration;

use anyhow::Context;
use engine::host::DriverJob;
use engine::workload::Progress;
use engine::StepOutput;
use model::{Flag, Metric, MissingMetric};

use crate::bench::{self, Op, OpResult};
use crate::{parse_config, Config};

/// Run one test on this host (`Registration::driver`).
pub fn drive(job: &DriverJob, progress: &Progress) -> anyhow::Result<serde_json::Value> {
    let cfg = parse_config(&job.params)?;
    let cpus = engine::launch::cpus_from_values(&cfg.cpus, "crypto: `cpus`")?;
    engine::host::step_report(run(&cfg, &cpus, &job.test, progress)?)
}

/// Run one test in this process: sign then verify for a key, or every buffer size for
/// a bulk operation, `cfg.threads` threads for `cfg.duration` each.
pub fn run(
    cfg: &Config,
    cpus: &[usize],
    test: &str,
    progress: &Progress,
) -> anyhow::Result<StepOutput> {
    let op = Op::parse(test)?;
    let threads = cfg.threads;
    let dur = Duration::from_secs_f64(cfg.duration);
    let mut out = StepOutput {
        loadgen_threads: None,
        ..Default::default()
    };
    let mut measured = 0.0;
    match op {
        Op::Rsa(_) | Op::EcdsaP256 => {
            let bits = if let Op::Rsa(b) = op { b } else { 256 };
            let keys = bench::make_key(op).with_context(|| format!("generating the {test} key"))?;
            let sign = bench::run_pkey(&keys, true, threads, dur, cpus, progress)?;
            let verify = bench::run_pkey(&keys, false, threads, dur, cpus, progress)?;
            let labels = |m: Metric| m.label("bits", bits).label("threads", threads);
            out.metrics
                .push(Metric::new("signs_per_s", sign.ops_per_s(), "ops/s"));
            out.metrics
                .push(Metric::new("verifies_per_s", verify.ops_per_s(), "ops/s"));
            out.metrics.push(labels(Metric::new(
                "signs_per_s",
                sign.ops_per_s(),
                "ops/s",
            )));
            out.metrics.push(labels(Metric::new(
                "verifies_per_s",
                verify.ops_per_s(),
                "ops/s",
            )));
            push_cpu_metrics(&mut out, "sign", "signs", &sign);
            push_cpu_metrics(&mut out, "verify", "verifies", &verify);
            if sign.wrong > 0 || verify.wrong > 0 {
                out.flags.push(Flag::invalid(
                    "crypto_failed",
                    format!(
                        "{} sign and {} verify operations failed or did not verify",
                        sign.wrong, verify.wrong
                    ),
                ));
            }
            measured += sign.wall_s + verify.wall_s;
            out.measured
                .extend(sign.span.into_iter().chain(verify.span));
            if sign.interrupted || verify.interrupted {
                stopped_early(&mut out);
            }
            out.headline = "signs_per_s".into();
        }
        _ => {
            let mut last = None;
            for &size in &cfg.buffer_sizes {
                let r = bench::run_bulk(op, size, threads, dur, cpus, progress)?;
                let mbps = r.ops_per_s() * size as f64 / 1e6;
                out.metrics.push(
                    Metric::new("throughput_mb_per_s", mbps, "MB/s")
                        .label("buffer_bytes", size)
                        .label("threads", threads),
                );
                out.metrics.push(
                    Metric::new("ops_per_s", r.ops_per_s(), "ops/s")
                        .label("buffer_bytes", size)
                        .label("threads", threads),
                );
                measured += r.wall_s;
                out.measured.extend(r.span);
                if r.interrupted {
                    stopped_early(&mut out);
                    break;
                }
                last = Some((size, mbps));
            }
            // The headline is the largest buffer, the figure people quote for bulk speed.
            if let Some((size, mbps)) = last {
                out.metrics
                    .push(Metric::new("throughput_mb_per_s", mbps, "MB/s"));
                out.metrics
                    .push(Metric::new("headline_buffer_bytes", size as f64, "B"));
            }
            out.headline = "throughput_mb_per_s".into();
        }
    }
    out.duration_s = measured;
    Ok(out)
}

fn push_cpu_metrics(out: &mut StepOutput, what: &str, plural: &str, r: &OpResult) {
    if r.cpu_s > 0.0 {
        // What plain `openssl speed` prints: operations per second of CPU time.
        out.metrics.push(Metric::new(
            format!("{plural}_per_cpu_s"),
            r.ops as f64 / r.cpu_s,
            "ops/cpu-s",
        ));
        out.metrics.push(Metric::new(
            format!("{what}_cpu_pct"),
            100.0 * r.cpu_s / r.wall_s.max(1e-9),
            "%",
        ));
    } else {
        out.missing.push(MissingMetric {
            name: format!("{plural}_per_cpu_s"),
            reason: "getrusage(RUSAGE_THREAD) reported no CPU time".into(),
        });
    }
    out.metrics.push(Metric::new(
        format!("{what}_time_us"),
        1e6 * r.wall_s * r.threads as f64 / (r.ops.max(1) as f64),
        "us",
    ));
}

/// A test cut short by a stop (Ctrl-C, SIGTERM, the run's cancel) is not a failure: no
/// error (the runner stores it as interrupted, what was measured kept), a warning saying so.
fn stopped_early(out: &mut StepOutput) {
    out.flags.push(Flag::warning(
        "stopped_early",
        "the test stopped early: interrupted",
    ));
}
