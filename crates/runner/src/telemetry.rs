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
    /// Each host's power sources (where something measures, idle power is measured), and
    /// the sampling interval: why a test that had a source has no power figure.
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
            t.power_sources
                .push((h.name().to_string(), info.power_sources.clone()));
        }
        Ok(t)
    }

    /// Hosts whose power something measures (not only the power model).
    fn measured_power(&self) -> Vec<&str> {
        self.power_sources
            .iter()
            .filter(|(_, sources)| sources.iter().any(|s| !s.starts_with("model")))
            .map(|(h, _)| h.as_str())
            .collect()
    }

    /// Idle power before any load on every host where something measures it.
    pub fn measure_idle(&self, secs: f64, verbose: bool) -> Vec<IdlePower> {
        let measured = self.measured_power();
        if !self.on || secs <= 0.0 || measured.is_empty() {
            return Vec::new();
        }
        if verbose {
            engine::errln!(
                "rackbench: measuring idle power for {secs:.0} s on {}",
                measured.join(", ")
            );
        }
        let hosts: Vec<&Arc<dyn Host>> = self
            .hosts
            .iter()
            .filter(|h| measured.contains(&h.name()))
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

/// The part of a test's samples its figures cover, where the measured load's start is
/// marked (the end of warm-up, after the generators' common start): each host's samples
/// from that mark to `duration_s` later, by [`telemetry::within`]. The tail after the
/// load (the generators' teardown, their results coming back, a receiver's last report)
/// is left out as the lead and the warm-up are, instead of diluting the test's CPU and
/// power with idle time. Warm-up samples pass unchanged (summaries leave them out).
pub fn measured_part(samples: &[TelemetrySample], duration_s: f64) -> Vec<TelemetrySample> {
    if duration_s.is_nan() || duration_s <= 0.0 {
        return samples.to_vec();
    }
    let mut hosts: Vec<&str> = Vec::new();
    for s in samples {
        if !hosts.contains(&s.host.as_str()) {
            hosts.push(&s.host);
        }
    }
    let mut out = Vec::with_capacity(samples.len());
    for h in hosts {
        let (warm, measured): (Vec<TelemetrySample>, Vec<TelemetrySample>) = samples
            .iter()
            .filter(|s| s.host == h)
            .cloned()
            .partition(|s| s.warmup);
        out.extend(warm);
        out.extend(telemetry::within(&measured, 0.0, duration_s));
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A 2-CPU host's sample ending at `t_s` after `interval_s`, `busy` % busy on all.
    fn sample(host: &str, t_s: f64, interval_s: f64, warmup: bool, busy: f64) -> TelemetrySample {
        TelemetrySample {
            host: host.into(),
            t_s,
            interval_s,
            warmup,
            cpus: vec![model::CpuUtil {
                usr_pct: busy,
                idle_pct: 100.0 - busy,
                ..model::CpuUtil::idle(-1)
            }],
            ctxt_per_s: 0.0,
            intr_per_s: 0.0,
            nics: vec![],
            disks: vec![],
            freq_mhz: vec![],
            procs: vec![],
            power: vec![],
        }
    }

    fn busy(summaries: &[TelemetrySummary], host: &str) -> f64 {
        summaries
            .iter()
            .find(|s| s.host == host)
            .and_then(|s| s.cpus.iter().find(|c| c.cpu == -1))
            .map(model::CpuUtil::busy_pct)
            .unwrap()
    }

    /// Two hosts, each with a warm-up, 2 s of load at 80% and a 0.4 s tail at 5% (the
    /// teardown) that its test's end closed; each host's clock its own. Cut to the 2 s
    /// measured, each is at 80%; uncut, the tail dilutes it to 71%.
    #[test]
    fn the_tail_after_the_measured_load_is_left_out() {
        let samples = vec![
            sample("a", 0.8, 0.8, true, 30.0),
            sample("a", 1.8, 1.0, false, 80.0),
            sample("a", 2.8, 1.0, false, 80.0),
            sample("a", 3.2, 0.4, false, 5.0),
            sample("b", 10.5, 0.5, true, 30.0),
            sample("b", 11.5, 1.0, false, 80.0),
            sample("b", 12.5, 1.0, false, 80.0),
            sample("b", 12.9, 0.4, false, 5.0),
        ];
        let all = telemetry::sampler::summarize(&samples);
        assert!((busy(&all, "a") - (160.0 + 2.0) / 2.4).abs() < 1e-9);
        let cut = measured_part(&samples, 2.0);
        assert_eq!(cut.len(), 6);
        assert!(cut.iter().filter(|s| s.warmup).count() == 2);
        let s = telemetry::sampler::summarize(&cut);
        assert!((busy(&s, "a") - 80.0).abs() < 1e-9);
        assert!((busy(&s, "b") - 80.0).abs() < 1e-9);
        // Nothing measured (or a bad figure): the samples as they are.
        assert_eq!(measured_part(&samples, 0.0), samples);
        assert_eq!(measured_part(&samples, f64::NAN), samples);
    }
}
