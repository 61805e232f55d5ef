//! Glue between the runner and the telemetry crate: the sampler as the engine's `Watch`,
//! power configuration from run options, the local disclosure, idle power.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use engine::workload::{NoWatch, Watch};
use model::{HostDisclosure, IdlePower, Metric, TelemetrySample, TelemetrySummary};
use telemetry::power::{PowerConfig, PowerModel};
use telemetry::sampler::{Sampler, SamplerConfig};

use crate::commands::run::RunOpts;

/// Default idle-power measurement before load, seconds (when a power source exists).
const DEFAULT_IDLE_S: f64 = 5.0;

pub fn power_config(opts: &RunOpts) -> anyhow::Result<PowerConfig> {
    let mut cfg = PowerConfig::local();
    cfg.meter_command = opts.power_meter.clone();
    if let Some(s) = &opts.power_model {
        let (a, b) = s
            .split_once(':')
            .ok_or_else(|| anyhow::anyhow!("--power-model is IDLE_W:MAX_W, e.g. 120:350"))?;
        let idle_w: f64 = a
            .trim()
            .parse()
            .map_err(|_| anyhow::anyhow!("--power-model: bad idle watts `{a}`"))?;
        let max_w: f64 = b
            .trim()
            .parse()
            .map_err(|_| anyhow::anyhow!("--power-model: bad max watts `{b}`"))?;
        if !(0.0..=100_000.0).contains(&idle_w) || max_w < idle_w {
            anyhow::bail!("--power-model: need 0 <= IDLE_W <= MAX_W");
        }
        cfg.model = Some(PowerModel { idle_w, max_w });
    }
    Ok(cfg)
}

pub fn local_disclosure(_power: &PowerConfig) -> HostDisclosure {
    telemetry::disclosure::collect(
        "local",
        "sut+loadgen",
        Path::new("/proc"),
        Path::new("/sys"),
    )
}

/// The runner's telemetry: a sampler on this host, or nothing with --no-telemetry.
pub struct Telemetry {
    sampler: Option<Arc<Sampler>>,
    cfg: SamplerConfig,
    notes: Vec<String>,
}

struct SamplerWatch(Arc<Sampler>);

impl Watch for SamplerWatch {
    fn set_warmup(&self, on: bool) {
        self.0.set_warmup(on);
    }
    fn watch_process(&self, role: &str, pid: u32) {
        self.0.watch_process(role, pid);
    }
    fn mark(&self) -> Option<u64> {
        Some(self.0.mark() as u64)
    }
    fn since_mark(&self, mark: u64) -> Vec<Metric> {
        window_metrics(&telemetry::sampler::summarize(&self.0.since(mark as usize)))
    }
}

/// One step's telemetry as metrics: CPU busy over all CPUs, each watched process's CPU,
/// and the headline power (whole-system where measured, else RAPL package + DRAM, else
/// the declared model), labelled with where it came from.
pub fn window_metrics(summaries: &[TelemetrySummary]) -> Vec<Metric> {
    let mut out = Vec::new();
    for s in summaries.iter().filter(|s| s.samples > 0) {
        if let Some(all) = s.cpus.iter().find(|c| c.cpu == -1) {
            out.push(Metric::new("cpu_busy_pct", all.busy_pct(), "%"));
        }
        for p in &s.procs {
            out.push(
                Metric::new("process_cpu_pct", p.usr_pct + p.sys_pct, "%").label("role", &p.role),
            );
        }
        if let Some(h) = telemetry::power::headline_power(&s.power) {
            out.push(
                Metric::new("power_w", h.mean_watts, "W")
                    .label("source", &h.provenance)
                    .label(
                        "scope",
                        if h.whole_system {
                            "whole_system"
                        } else {
                            "cpu_and_dram"
                        },
                    ),
            );
        }
    }
    out
}

impl Telemetry {
    pub fn start(opts: &RunOpts, power: PowerConfig) -> anyhow::Result<Telemetry> {
        let mut cfg = SamplerConfig::local();
        cfg.power = power;
        if let Some(i) = opts.telemetry_interval {
            cfg.interval = Duration::from_secs_f64(i);
        }
        if opts.no_telemetry {
            return Ok(Telemetry {
                sampler: None,
                cfg,
                notes: vec!["telemetry off (--no-telemetry)".into()],
            });
        }
        let sampler = Sampler::start(cfg.clone())?;
        // The load generator is this process.
        sampler.watch_process("loadgen", std::process::id());
        let notes = sampler.power_detection().notes;
        Ok(Telemetry {
            sampler: Some(Arc::new(sampler)),
            cfg,
            notes,
        })
    }

    /// Idle power before any load, when something measures power (a declared model
    /// alone is not a measurement of idle).
    pub fn measure_idle(&self, opts: &RunOpts, verbose: bool) -> anyhow::Result<Option<IdlePower>> {
        let Some(sampler) = &self.sampler else {
            return Ok(None);
        };
        let secs = opts.idle_power.unwrap_or(DEFAULT_IDLE_S);
        let measured: Vec<String> = sampler
            .power_detection()
            .sources
            .into_iter()
            .filter(|s| !s.starts_with("model"))
            .collect();
        if secs <= 0.0 || measured.is_empty() {
            return Ok(None);
        }
        if verbose {
            eprintln!(
                "rackbench: measuring idle power for {secs:.0} s ({})",
                measured.join(", ")
            );
        }
        let mut cfg = self.cfg.clone();
        cfg.power.model = None;
        match telemetry::sampler::measure_idle(&cfg, Duration::from_secs_f64(secs)) {
            Ok(idle) => Ok(Some(idle)),
            Err(e) => {
                if verbose {
                    eprintln!("rackbench: {e:#}");
                }
                Ok(None)
            }
        }
    }

    pub fn watch(&self) -> Arc<dyn Watch> {
        match &self.sampler {
            Some(s) => Arc::new(SamplerWatch(s.clone())),
            None => Arc::new(NoWatch),
        }
    }

    /// A test starts: drop the samples taken between tests (server launch, setup).
    pub fn begin_step(&self) {
        if let Some(s) = &self.sampler {
            let _ = s.take();
            s.set_warmup(false);
        }
    }

    /// Mark the first `secs` of the test that starts now as warm-up: those samples are
    /// kept but left out of summaries.
    pub fn mark_warmup(&self, secs: f64) {
        if let (Some(s), true) = (&self.sampler, secs > 0.0) {
            s.set_warmup(true);
            let s = Arc::downgrade(s);
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_secs_f64(secs));
                if let Some(s) = s.upgrade() {
                    s.set_warmup(false);
                }
            });
        }
    }

    /// A test ended: its samples (the last, partial interval closed now).
    pub fn end_step(&self) -> Vec<TelemetrySample> {
        self.sampler.as_ref().map(|s| s.take()).unwrap_or_default()
    }

    /// The launched servers of a sweep point are gone: stop watching them.
    pub fn unwatch_servers(&self) {
        if let Some(s) = &self.sampler {
            s.unwatch_all();
            s.watch_process("loadgen", std::process::id());
        }
    }

    pub fn summarize(&self, samples: &[TelemetrySample]) -> Vec<TelemetrySummary> {
        telemetry::sampler::summarize_with_notes(samples, &self.notes)
    }

    pub fn stop(&self) {
        if let Some(s) = &self.sampler {
            s.set_warmup(false);
        }
    }
}
