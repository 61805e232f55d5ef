//! Telemetry on every host of a run: one sampler per host (in its agent, or in this
//! process for the local one), started together, taken together at each step's end, so
//! a step's samples hold every host's CPUs, NICs, processes and power, each tagged with
//! its host.

use std::sync::Arc;
use std::time::Duration;

use engine::host::{Host, TelemetrySettings};
use engine::workload::{NoWatch, Watch};
use hosts::LocalHost;
use model::{IdlePower, Metric, TelemetrySample, TelemetrySummary};

pub struct Telemetry {
    hosts: Vec<Arc<dyn Host>>,
    on: bool,
    notes: Vec<String>,
    /// Hosts whose power something measures (idle power is measured there).
    measured_power: Vec<String>,
    /// Each host's power sources, and the sampling interval: why a test that had a
    /// source has no power figure.
    power_sources: Vec<(String, Vec<String>)>,
    interval_s: f64,
}

impl Telemetry {
    /// Start sampling on every host (`on` false: `--no-telemetry`).
    /// `settings` go to every host; `--power-meter` and `--power-model` describe one
    /// machine, and go only to the hosts in `measured` (the systems under test): a PDU
    /// command run on a load generator would report the server's watts as its own.
    pub fn start(
        hosts: &[Arc<dyn Host>],
        settings: &TelemetrySettings,
        measured: &[String],
        on: bool,
    ) -> anyhow::Result<Telemetry> {
        let mut t = Telemetry {
            hosts: hosts.to_vec(),
            on,
            notes: Vec::new(),
            measured_power: Vec::new(),
            power_sources: Vec::new(),
            interval_s: settings.interval_s,
        };
        if !on {
            t.notes.push("telemetry off (--no-telemetry)".into());
            return Ok(t);
        }
        let many = hosts.len() > 1;
        for h in hosts {
            let mine = if measured.iter().any(|m| m == h.name()) {
                settings.clone()
            } else {
                TelemetrySettings {
                    interval_s: settings.interval_s,
                    ..TelemetrySettings::default()
                }
            };
            let info = h.telemetry_start(&mine)?;
            for n in info.notes {
                t.notes.push(if many {
                    format!("{}: {n}", h.name())
                } else {
                    n
                });
            }
            if info.power_sources.iter().any(|s| !s.starts_with("model")) {
                t.measured_power.push(h.name().to_string());
            }
            t.power_sources
                .push((h.name().to_string(), info.power_sources.clone()));
        }
        Ok(t)
    }

    /// Idle power before any load on every host where something measures it.
    pub fn measure_idle(&self, secs: f64, verbose: bool) -> Vec<IdlePower> {
        if !self.on || secs <= 0.0 || self.measured_power.is_empty() {
            return Vec::new();
        }
        if verbose {
            engine::errln!(
                "rackbench: measuring idle power for {secs:.0} s on {}",
                self.measured_power.join(", ")
            );
        }
        let hosts: Vec<&Arc<dyn Host>> = self
            .hosts
            .iter()
            .filter(|h| self.measured_power.iter().any(|m| m == h.name()))
            .collect();
        std::thread::scope(|s| {
            let hs: Vec<_> = hosts
                .iter()
                .map(|h| s.spawn(move || (h.name().to_string(), h.measure_idle(secs))))
                .collect();
            hs.into_iter()
                .filter_map(|t| t.join().ok())
                .filter_map(|(name, r)| match r {
                    Ok(Some(i)) => Some(i),
                    Ok(None) => None,
                    Err(e) => {
                        if verbose {
                            engine::errln!("rackbench: idle power on {name}: {e:#}");
                        }
                        None
                    }
                })
                .collect()
        })
    }

    /// The engine's view of telemetry for one sweep point: warm-up marks go to every
    /// host, per-step windows come from the system under test, processes launched by a
    /// workload that is not split yet are watched on this host.
    pub fn watch(&self, sut: Arc<dyn Host>, local: Arc<LocalHost>) -> Arc<dyn Watch> {
        if !self.on {
            return Arc::new(NoWatch);
        }
        Arc::new(HostsWatch {
            hosts: self.hosts.clone(),
            sut,
            local,
        })
    }

    fn each(&self, f: impl Fn(&Arc<dyn Host>) + Sync) {
        if !self.on {
            return;
        }
        if self.hosts.len() == 1 {
            return f(&self.hosts[0]);
        }
        std::thread::scope(|s| {
            for h in &self.hosts {
                let f = &f;
                s.spawn(move || f(h));
            }
        });
    }

    /// A test starts: drop what was sampled between tests (server launch, setup).
    pub fn begin_step(&self) {
        self.each(|h| {
            let _ = h.telemetry_take();
            h.set_warmup(false);
        });
    }

    /// Mark the first `secs` of the test that starts now as warm-up on every host.
    pub fn mark_warmup(&self, secs: f64) {
        if !self.on || secs <= 0.0 {
            return;
        }
        self.each(|h| h.set_warmup(true));
        let hosts = self.hosts.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs_f64(secs));
            for h in &hosts {
                h.set_warmup(false);
            }
        });
    }

    /// A test ended: every host's samples (the last, partial interval closed now).
    pub fn end_step(&self) -> Vec<TelemetrySample> {
        if !self.on {
            return Vec::new();
        }
        let per_host: Vec<Vec<TelemetrySample>> = std::thread::scope(|s| {
            let hs: Vec<_> = self
                .hosts
                .iter()
                .map(|h| s.spawn(move || h.telemetry_take()))
                .collect();
            hs.into_iter()
                .map(|t| t.join().unwrap_or_default())
                .collect()
        });
        per_host.into_iter().flatten().collect()
    }

    /// A sweep point's servers are gone: stop watching them everywhere.
    pub fn unwatch_servers(&self) {
        self.each(|h| h.unwatch_servers());
    }

    /// Per-host means of a test's samples. A host with a power source and no power
    /// figure either had only sources read at the sampler's ticks (energy counters and
    /// the power model give a figure at every close) and one sample, the interval the
    /// test's end closed; or had ticks, and its sources failed. The reason says which,
    /// where the detection notes would say nothing was found.
    pub fn summarize(&self, samples: &[TelemetrySample]) -> Vec<TelemetrySummary> {
        let mut out = telemetry::sampler::summarize_with_notes(samples, &self.notes);
        for s in &mut out {
            let sources = self
                .power_sources
                .iter()
                .find(|(h, _)| *h == s.host)
                .map(|(_, v)| v.as_slice())
                .unwrap_or_default();
            if s.power_missing.is_none() || sources.is_empty() {
                continue;
            }
            // One sample: the interval the test's end closed, with no tick before it.
            s.power_missing = Some(if s.samples > 1 {
                format!(
                    "this host's power sources ({}) gave no reading during the test \
                     (the run's telemetry notes say why)",
                    sources.join(", ")
                )
            } else {
                format!(
                    "no power reading inside the test: this host's power ({}) is read as \
                     the watts of the moment, once per sampling interval ({} s), and no \
                     interval ended while the load ran; run the test for longer than the \
                     interval, or sample more often (--telemetry-interval)",
                    sources.join(", "),
                    self.interval_s
                )
            });
        }
        out
    }

    pub fn stop(&self) {
        self.each(|h| h.set_warmup(false));
    }
}

struct HostsWatch {
    hosts: Vec<Arc<dyn Host>>,
    sut: Arc<dyn Host>,
    local: Arc<LocalHost>,
}

impl Watch for HostsWatch {
    fn set_warmup(&self, on: bool) {
        for h in &self.hosts {
            h.set_warmup(on);
        }
    }
    fn watch_process(&self, role: &str, pid: u32) {
        self.local.watch_process(role, pid);
    }
    fn mark(&self) -> Option<u64> {
        self.sut.telemetry_mark()
    }
    fn since_mark(&self, mark: u64, window: Option<(f64, f64)>) -> Vec<Metric> {
        let mut samples = self.sut.telemetry_since(mark);
        if let Some((from_s, to_s)) = window {
            // The mark closed an interval: the first sample since begins at it.
            samples = telemetry::within(&samples, from_s, to_s);
        }
        window_metrics(&telemetry::sampler::summarize(&samples))
    }
}

/// One step's telemetry as metrics: CPU busy over all CPUs, each watched process's CPU,
/// and the headline power by the one rule (`model::power::headline`), labelled with
/// where it came from.
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
