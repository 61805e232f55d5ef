//! The crypto driver: one job is one whole test, run on the host it is sent to (the
//! system under test: the load is the measurement). The sweep point is read again from
//! the job's parameters there, keys are made there, worker threads are pinned to that
//! host's CPUs, and the test's [`StepOutput`] comes back as JSON.

use std::time::Duration;

use anyhow::Context;
use engine::host::{DriverJob, StepCheckpoints};
use engine::workload::Progress;
use engine::StepOutput;
use model::{Flag, Metric, MissingMetric};

use crate::bench::{self, Checkpointing, Op, OpResult};
use crate::{parse_config, Config};

/// Run one test on this host (`Registration::driver`).
pub fn drive(job: &DriverJob, progress: &Progress) -> anyhow::Result<serde_json::Value> {
    let cfg = parse_config(&job.params)?;
    let cpus = engine::launch::cpus_from_values(&cfg.cpus, "crypto: `cpus`")?;
    engine::host::step_report(run(&cfg, &cpus, &job.test, progress)?)
}

/// Run one test in this process: sign then verify for a key, or every buffer size for
/// a bulk operation, `cfg.threads` threads for `cfg.duration` each. Where checkpoints
/// are wanted ([`StepCheckpoints`]), the timer of the run under way hands one when due:
/// the result this would return had the test ended there, flagged `partial`.
pub fn run(
    cfg: &Config,
    cpus: &[usize],
    test: &str,
    progress: &Progress,
) -> anyhow::Result<StepOutput> {
    let op = Op::parse(test)?;
    let threads = cfg.threads;
    let dur = Duration::from_secs_f64(cfg.duration);
    let mut base = StepOutput {
        loadgen_threads: None,
        ..Default::default()
    };
    let cpus_here = engine::launch::online_cpus();
    let pinned = engine::cpu_use::distinct(cpus);
    if !pinned.is_empty() && threads > pinned.len() {
        // Pinned one each round-robin: past the CPUs given, threads share one, and a
        // "peak at threads=2" on one CPU is noise (acceptance pass, s27).
        base.flags.push(Flag::warning(
            "threads_oversubscribed",
            format!(
                "{threads} threads pinned to {} CPU{} ({}): threads share a CPU, and the \
                 rates are of time-shared CPUs, not of more cores (give --cpus as many CPUs \
                 as threads)",
                pinned.len(),
                if pinned.len() == 1 { "" } else { "s" },
                engine::cpu_use::list(&pinned)
            ),
        ));
    } else if threads > cpus_here {
        // Unpinned as pinned: past the CPUs, threads take turns (4 threads on 2 CPUs
        // went unflagged, its "peak" time-shared).
        base.flags.push(Flag::warning(
            "threads_oversubscribed",
            format!(
                "{threads} threads on {cpus_here} logical CPUs: threads share a CPU, and the \
                 rates are of time-shared CPUs, not of more cores"
            ),
        ));
    }
    let checkpoints = StepCheckpoints::of(progress);
    // A checkpoint says how far into the test's timed runs it was taken.
    let planned_s = crate::timed_s(op, cfg);
    let checkpoint = |mut so_far: StepOutput| {
        if let Some(c) = &checkpoints {
            so_far.flags.push(engine::spread::checkpoint_flag(
                test,
                so_far.duration_s,
                Some(planned_s),
            ));
            c.hand(so_far);
        }
    };
    Ok(match op {
        Op::Rsa(_) | Op::EcdsaP256 => {
            let bits = if let Op::Rsa(b) = op { b } else { 256 };
            let keys = bench::make_key(op).with_context(|| format!("generating the {test} key"))?;
            let at_sign = |r: OpResult| checkpoint(pkey_step(base.clone(), cfg, bits, &r, None));
            let sign = bench::run_pkey(
                &keys,
                true,
                threads,
                dur,
                cpus,
                progress,
                so_far(&checkpoints, &at_sign).as_ref(),
            )?;
            // Stopped during the signs: the verifies are not run (a timed loop that sees
            // the stop at once would time one operation, or none, and store it).
            let verify = if sign.interrupted || progress.stopping() {
                None
            } else {
                let at_verify =
                    |r: OpResult| checkpoint(pkey_step(base.clone(), cfg, bits, &sign, Some(&r)));
                Some(bench::run_pkey(
                    &keys,
                    false,
                    threads,
                    dur,
                    cpus,
                    progress,
                    so_far(&checkpoints, &at_verify).as_ref(),
                )?)
            };
            pkey_step(base, cfg, bits, &sign, verify.as_ref())
        }
        _ => {
            let mut done: Vec<(usize, OpResult)> = Vec::new();
            for &size in &cfg.buffer_sizes {
                let at = |r: OpResult| {
                    let mut runs = done.clone();
                    runs.push((size, r));
                    checkpoint(bulk_step(base.clone(), test, threads, &runs));
                };
                let r = bench::run_bulk(
                    op,
                    size,
                    threads,
                    dur,
                    cpus,
                    progress,
                    so_far(&checkpoints, &at).as_ref(),
                )?;
                let stopped = r.interrupted;
                done.push((size, r));
                if stopped {
                    break;
                }
            }
            bulk_step(base, test, threads, &done)
        }
    })
}

/// Where a timed run hands what it counted so far, when checkpoints are wanted.
fn so_far<'a>(
    checkpoints: &'a Option<StepCheckpoints>,
    take: &'a dyn Fn(OpResult),
) -> Option<Checkpointing<'a>> {
    checkpoints
        .as_ref()
        .map(|checkpoints| Checkpointing { checkpoints, take })
}

/// Why a figure of a run counted at a checkpoint has none yet.
const NONE_COUNTED_YET: &str = "no operation was counted yet (the workers leave their \
    count every 16 operations, or every one where they take over 1 ms): this result is a \
    checkpoint taken while the test ran";

/// A key's test on `out` (its flags so far): its signs and, unless the run was stopped
/// before them (or is at a checkpoint during the signs), its verifies.
fn pkey_step(
    mut out: StepOutput,
    cfg: &Config,
    bits: u32,
    sign: &OpResult,
    verify: Option<&OpResult>,
) -> StepOutput {
    let threads = cfg.threads;
    let at_checkpoint = sign.so_far || verify.is_some_and(|v| v.so_far);
    let labels = |m: Metric| m.label("bits", bits).label("threads", threads);
    for (name, what, plural, r) in [
        ("signs_per_s", "sign", "signs", Some(sign)),
        ("verifies_per_s", "verify", "verifies", verify),
    ] {
        match r.filter(|r| r.ops > 0) {
            Some(r) => {
                out.metrics.push(Metric::new(name, r.ops_per_s(), "ops/s"));
                out.metrics
                    .push(labels(Metric::new(name, r.ops_per_s(), "ops/s")));
                push_cpu_metrics(&mut out, what, plural, r);
            }
            None => out.missing.push(MissingMetric {
                name: name.into(),
                reason: match r {
                    None if at_checkpoint => "the verifies run after the signs: this result \
                                              is a checkpoint taken during the signs"
                        .into(),
                    None => "the run was stopped before the verifies".into(),
                    Some(r) if r.so_far && r.wrong == 0 => NONE_COUNTED_YET.into(),
                    Some(r) if r.interrupted && r.wrong == 0 => {
                        "the run was stopped before an operation completed".into()
                    }
                    Some(r) if r.wrong > 0 => format!(
                        "every {what} operation failed ({} of them): see the \
                         crypto_failed flag",
                        r.wrong
                    ),
                    // Not stopped: the duration ended first (a key this big
                    // takes longer than the test per operation).
                    Some(_) => format!(
                        "no operation completed in the test's {} s: raise --duration",
                        cfg.duration
                    ),
                },
            }),
        }
    }
    let wrong = sign.wrong + verify.map_or(0, |v| v.wrong);
    if wrong > 0 {
        out.flags.push(Flag::invalid(
            "crypto_failed",
            format!(
                "{} sign and {} verify operations failed or did not verify",
                sign.wrong,
                verify.map_or(0, |v| v.wrong)
            ),
        ));
    }
    out.duration_s = sign.wall_s + verify.map_or(0.0, |v| v.wall_s);
    out.measured
        .extend(sign.span.into_iter().chain(verify.and_then(|v| v.span)));
    if !at_checkpoint && (sign.interrupted || verify.is_none_or(|v| v.interrupted)) {
        stopped_early(&mut out);
    }
    out.headline = "signs_per_s".into();
    out
}

/// A bulk test on `out` (its flags so far): the buffer sizes run, in the order run (the
/// last may be at a checkpoint, or stopped).
fn bulk_step(
    mut out: StepOutput,
    test: &str,
    threads: usize,
    runs: &[(usize, OpResult)],
) -> StepOutput {
    let mut last: Option<(usize, f64)> = None;
    for (i, (size, r)) in runs.iter().enumerate() {
        let size = *size;
        out.duration_s += r.wall_s;
        out.measured.extend(r.span);
        // A failed operation is no throughput, and nothing else would say it
        // failed (its rate counts only those that succeeded).
        if r.wrong > 0 {
            out.flags.push(Flag::invalid(
                "crypto_failed",
                format!(
                    "{} of {} {test} operations on {size} B buffers failed",
                    r.wrong,
                    r.ops + r.wrong
                ),
            ));
        }
        // What a stop left measured is kept (flagged); a size no operation
        // completed in has no figure (a loop that saw the stop at once).
        if r.ops > 0 {
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
            // The largest size measured, whatever the order of the list
            // (`16384,16` gave a headline of 16 B).
            if last.is_none_or(|(s, _)| size > s) {
                last = Some((size, mbps));
            }
        }
        if r.interrupted {
            stopped_early(&mut out);
            if last.is_none() {
                out.missing.push(MissingMetric {
                    name: "throughput_mb_per_s".into(),
                    reason: format!(
                        "the run was stopped before an operation at {size} B completed{}",
                        if i == 0 {
                            ""
                        } else {
                            ", and none had succeeded at a size before it"
                        }
                    ),
                });
            }
        }
    }
    let said = out.missing.iter().any(|m| m.name == "throughput_mb_per_s");
    if last.is_none() && !said {
        let none_yet = runs
            .last()
            .is_some_and(|(_, r)| r.so_far && runs.iter().all(|(_, r)| r.wrong == 0));
        out.missing.push(MissingMetric {
            name: "throughput_mb_per_s".into(),
            reason: if none_yet {
                NONE_COUNTED_YET.into()
            } else {
                "no operation succeeded at any buffer size: see the crypto_failed flag".into()
            },
        });
    }
    // The headline is the largest buffer, the figure people quote for bulk speed.
    if let Some((size, mbps)) = last {
        out.metrics
            .push(Metric::new("throughput_mb_per_s", mbps, "MB/s"));
        out.metrics
            .push(Metric::new("headline_buffer_bytes", size as f64, "B"));
    }
    out.headline = "throughput_mb_per_s".into();
    out
}

fn push_cpu_metrics(out: &mut StepOutput, what: &str, plural: &str, r: &OpResult) {
    if r.so_far {
        // Each thread reads its own CPU time (RUSAGE_THREAD), at the end of its run.
        for name in [format!("{plural}_per_cpu_s"), format!("{what}_cpu_pct")] {
            out.missing.push(engine::spread::read_at_end(
                &name,
                "each worker thread reads its CPU time (getrusage RUSAGE_THREAD)",
            ));
        }
    } else if r.cpu_s > 0.0 {
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
    // `openssl speed -multi N`'s sign and verify columns: one over the rate of all its
    // processes together. Per thread, it read N times that at N threads, as if each
    // operation had got slower.
    if r.rate_per_s > 0.0 {
        out.metrics.push(Metric::new(
            format!("{what}_time_us"),
            1e6 / r.rate_per_s,
            "us",
        ));
    } else {
        out.missing.push(MissingMetric {
            name: format!("{what}_time_us"),
            reason: "no operation completed".into(),
        });
    }
}

/// A test cut short by a stop (Ctrl-C, SIGTERM, the run's cancel) is not a failure: no
/// error (the runner stores it as interrupted, what was measured kept), a warning saying so.
fn stopped_early(out: &mut StepOutput) {
    out.flags.push(Flag::warning(
        "stopped_early",
        "the test stopped early: interrupted",
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    /// The time an operation takes is `openssl speed -multi`'s: one over the rate of all
    /// threads together (2 threads at 1,000 signs/s each: 500 µs, not each thread's
    /// 1,000 µs).
    #[test]
    fn sign_time_is_one_over_the_rate_of_all_threads() {
        let r = crate::bench::OpResult {
            threads: 2,
            ops: 20_000,
            rate_per_s: 2_000.0,
            wall_s: 10.0,
            cpu_s: 20.0,
            wrong: 0,
            interrupted: false,
            span: None,
            so_far: false,
        };
        let mut out = StepOutput::default();
        push_cpu_metrics(&mut out, "sign", "signs", &r);
        let t = out
            .metrics
            .iter()
            .find(|m| m.name == "sign_time_us")
            .unwrap();
        assert_eq!(t.value, 500.0);
        let mut none = StepOutput::default();
        push_cpu_metrics(
            &mut none,
            "sign",
            "signs",
            &crate::bench::OpResult {
                ops: 0,
                rate_per_s: 0.0,
                ..r
            },
        );
        assert!(none.metrics.iter().all(|m| m.name != "sign_time_us"));
        assert!(none.missing.iter().any(|m| m.name == "sign_time_us"));
    }

    /// A test cancelled before it ran stores no figure of 0: the verifies are not run
    /// (missing, with the reason), a rate no operation completed for is missing, and
    /// what an operation or two completed before the threads saw the stop is kept,
    /// flagged `stopped_early` (the result is stored as interrupted).
    #[test]
    fn a_cancelled_test_stores_no_rate() {
        let cfg = parse_config(&serde_json::Map::new()).unwrap();
        let progress = Progress::default();
        progress.cancel.store(true, Ordering::Relaxed);
        let out = run(&cfg, &[], "rsa512", &progress).unwrap();
        assert!(
            !out.metrics.iter().any(|m| m.name == "verifies_per_s"),
            "{:?}",
            out.metrics
        );
        assert!(out.missing.iter().any(|m| m.name == "verifies_per_s"));
        assert!(out.metrics.iter().all(|m| m.value != 0.0 || m.unit == "B"));
        assert!(out.flags.iter().any(|f| f.code == "stopped_early"));
        // A bulk test: what was measured before the stop is kept (an operation or a few
        // may complete before the threads see it); with none, the headline is missing.
        let out = run(&cfg, &[], "aes256gcm", &progress).unwrap();
        let headline = out
            .metrics
            .iter()
            .any(|m| m.name == "throughput_mb_per_s" && m.labels.is_empty());
        let missing = out.missing.iter().any(|m| m.name == "throughput_mb_per_s");
        assert!(headline != missing, "{:?} {:?}", out.metrics, out.missing);
        assert!(out.metrics.iter().all(|m| m.value > 0.0));
        assert!(out.flags.iter().any(|f| f.code == "stopped_early"));
    }

    /// Acceptance A, finding 5: `--buffer-sizes 16384,16` gave a headline of 16 B (the
    /// last listed); the headline is the largest buffer, as openssl speed's is.
    #[test]
    fn the_headline_is_the_largest_buffer_in_any_order() {
        let m =
            serde_json::json!({"tests": ["sha256"], "duration": 0.1, "buffer_sizes": [16384, 16]});
        let cfg = parse_config(m.as_object().unwrap()).unwrap();
        let out = run(&cfg, &[], "sha256", &Progress::default()).unwrap();
        let get = |name: &str| {
            out.metrics
                .iter()
                .find(|m| m.name == name && m.labels.is_empty())
                .map(|m| m.value)
        };
        assert_eq!(
            get("headline_buffer_bytes"),
            Some(16384.0),
            "{:?}",
            out.metrics
        );
        let at_16k = out
            .metrics
            .iter()
            .find(|m| {
                m.name == "throughput_mb_per_s"
                    && m.labels.get("buffer_bytes").map(String::as_str) == Some("16384")
            })
            .map(|m| m.value);
        assert_eq!(get("throughput_mb_per_s"), at_16k);
    }
}
