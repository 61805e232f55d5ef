//! Glue between the runner and the telemetry crate: the sampler as the engine's `Watch`,
//! power configuration from run options, the local disclosure.

use std::sync::Arc;

use engine::workload::{NoWatch, Watch};
use model::{HostDisclosure, IdlePower, TelemetrySample, TelemetrySummary};

use crate::commands::run::RunOpts;

/// Power settings from the run options (a meter command, a declared model).
#[derive(Debug, Clone, Default)]
pub struct PowerSettings {
    pub meter: Option<String>,
    pub model: Option<(f64, f64)>,
}

pub fn power_config(opts: &RunOpts) -> anyhow::Result<PowerSettings> {
    let model = match &opts.power_model {
        None => None,
        Some(s) => {
            let (a, b) = s
                .split_once(':')
                .ok_or_else(|| anyhow::anyhow!("--power-model is IDLE_W:MAX_W, e.g. 120:350"))?;
            let idle: f64 = a.trim().parse().map_err(|_| anyhow::anyhow!("--power-model: bad idle watts `{a}`"))?;
            let max: f64 = b.trim().parse().map_err(|_| anyhow::anyhow!("--power-model: bad max watts `{b}`"))?;
            if !(0.0..=100_000.0).contains(&idle) || max < idle {
                anyhow::bail!("--power-model: need 0 <= IDLE_W <= MAX_W");
            }
            Some((idle, max))
        }
    };
    Ok(PowerSettings {
        meter: opts.power_meter.clone(),
        model,
    })
}

pub fn local_disclosure(_power: &PowerSettings) -> HostDisclosure {
    HostDisclosure {
        host: "local".into(),
        role: "sut+loadgen".into(),
        facts: Default::default(),
    }
}

pub struct Telemetry {}

impl Telemetry {
    pub fn start(_opts: &RunOpts, _power: PowerSettings) -> anyhow::Result<Telemetry> {
        Ok(Telemetry {})
    }
    pub fn measure_idle(&self, _opts: &RunOpts, _verbose: bool) -> anyhow::Result<Option<IdlePower>> {
        Ok(None)
    }
    pub fn watch(&self) -> Arc<dyn Watch> {
        Arc::new(NoWatch)
    }
    pub fn begin_step(&self) {}
    pub fn end_step(&self) -> Vec<TelemetrySample> {
        Vec::new()
    }
    pub fn stop(&self) {}
}

pub fn summarize(_samples: &[TelemetrySample]) -> Vec<TelemetrySummary> {
    Vec::new()
}
