//! The local host: services launched and pinned here (engine's launch and reaper code),
//! drivers run in this process, telemetry from this host's /proc and /sys. The agent is
//! a `LocalHost` behind frames, so a remote host does exactly what this one does.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use anyhow::Context;
use engine::host::{
    unix_s, CommandRun, CommandsFor, DriverJob, DriverReport, Host, Service, ServiceCtx,
    ServiceHandle, TelemetryInfo, TelemetrySettings,
};
use engine::workload::{Params, Progress, Registration};
use model::{HostDisclosure, IdlePower, TelemetrySample};
use telemetry::power::{PowerConfig, PowerModel};
use telemetry::sampler::{Sampler, SamplerConfig};

/// Finds a workload's registration by name (the CLI's registry).
pub type Catalog = fn(&str) -> Option<Registration>;

pub struct LocalHost {
    name: String,
    address: Mutex<String>,
    catalog: Catalog,
    verbose: bool,
    next_id: AtomicU64,
    services: Mutex<BTreeMap<u64, Box<dyn Service>>>,
    sampler: Mutex<Option<Arc<Sampler>>>,
    /// The progress of every drive under way, so that `interrupt` can end them.
    driving: Mutex<Vec<Arc<Progress>>>,
    /// The process whose CPU is this host's load generator (this one), watched from the
    /// first drive of a sweep point on: a host that drives nothing (the controller of a
    /// run on remote hosts, a system under test) has no `loadgen` figures at all, rather
    /// than the idle CPU of its agent under that role.
    loadgen_pid: u32,
}

impl LocalHost {
    pub fn new(name: &str, catalog: Catalog, verbose: bool) -> LocalHost {
        LocalHost {
            name: name.to_string(),
            address: Mutex::new("127.0.0.1".to_string()),
            catalog,
            verbose,
            next_id: AtomicU64::new(1),
            services: Mutex::new(BTreeMap::new()),
            sampler: Mutex::new(None),
            driving: Mutex::new(Vec::new()),
            loadgen_pid: std::process::id(),
        }
    }

    /// Services bind this address (the one other hosts reach this host at).
    pub fn set_address(&self, ip: &str) {
        *lock(&self.address) = ip.to_string();
    }

    /// Watch a process launched here by a workload that is not split into service and
    /// driver yet (it launches its servers itself).
    pub fn watch_process(&self, role: &str, pid: u32) {
        if let Some(s) = self.sampler() {
            s.watch_process(role, pid);
        }
    }

    /// Run a drive whose progress `interrupt` can reach (the agent's drives), its
    /// checkpoints, if any are wanted, going to `checkpoints`.
    pub fn drive_interruptible(
        &self,
        job: &DriverJob,
        start_at: SystemTime,
        checkpoints: Option<engine::workload::CheckpointSink>,
    ) -> anyhow::Result<DriverReport> {
        let progress = Arc::new(Progress::default());
        progress.set_checkpoints(checkpoints);
        lock(&self.driving).push(progress.clone());
        let r = self.drive(job, start_at, &progress);
        lock(&self.driving).retain(|p| !Arc::ptr_eq(p, &progress));
        r
    }

    fn registration(&self, workload: &str) -> anyhow::Result<Registration> {
        (self.catalog)(workload)
            .with_context(|| format!("this rackbench has no workload `{workload}`"))
    }

    /// Watch this process, once, as the host's load generator, or as the work itself
    /// where the workload has no server (crypto, mem): a second drive of the same sweep
    /// point keeps the CPU counted since the first (watching again would start it over).
    fn watch_driver(&self, reg: &Registration) {
        if let Some(s) = self.sampler() {
            if !s.watches(self.loadgen_pid) {
                let role = if reg.has_server {
                    model::LOADGEN_PROCESS
                } else {
                    model::WORK_PROCESS
                };
                s.watch_process_alone(role, self.loadgen_pid);
            }
        }
    }

    fn sampler(&self) -> Option<Arc<Sampler>> {
        lock(&self.sampler).clone()
    }

    fn with_service<T>(
        &self,
        id: u64,
        f: impl FnOnce(&mut Box<dyn Service>) -> T,
    ) -> anyhow::Result<T> {
        let mut s = lock(&self.services);
        let svc = s
            .get_mut(&id)
            .with_context(|| format!("no service #{id} on {}", self.name))?;
        Ok(f(svc))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The sampler settings of this host from what the controller sent.
pub fn sampler_config(host: &str, s: &TelemetrySettings) -> SamplerConfig {
    let mut cfg = SamplerConfig::local();
    cfg.host = host.to_string();
    if s.interval_s > 0.0 {
        cfg.interval = Duration::from_secs_f64(s.interval_s);
    }
    let mut power = PowerConfig::local();
    power.meter_command = s.power_meter.clone();
    power.model = s
        .power_model
        .map(|(idle_w, max_w)| PowerModel { idle_w, max_w });
    cfg.power = power;
    cfg
}

impl Host for LocalHost {
    fn name(&self) -> &str {
        &self.name
    }

    fn address(&self) -> String {
        lock(&self.address).clone()
    }

    fn addresses(&self) -> Vec<std::net::IpAddr> {
        crate::local_addresses()
    }

    fn boot_id(&self) -> Option<String> {
        model::process::boot_id()
    }

    fn start_lead(&self) -> Duration {
        Duration::ZERO
    }

    fn cpus_online(&self) -> Option<engine::launch::OnlineCpus> {
        Some(engine::launch::cpus_online_here())
    }

    fn disclosure(&self, role: &str) -> anyhow::Result<HostDisclosure> {
        let (proc_root, sys_root) = (PathBuf::from("/proc"), PathBuf::from("/sys"));
        Ok(telemetry::disclosure::collect(
            &self.name, role, &proc_root, &sys_root,
        ))
    }

    fn check_launch(&self, workload: &str, params: &Params) -> anyhow::Result<()> {
        self.registration(workload)?
            .build_point(params)?
            .check_launch_here()
    }

    fn start_service(&self, workload: &str, params: &Params) -> anyhow::Result<ServiceHandle> {
        let reg = self.registration(workload)?;
        let start = reg
            .service
            .with_context(|| format!("workload `{workload}` has no service to start"))?;
        let sampler = self.sampler();
        let ctx = ServiceCtx {
            bind_ip: self.address(),
            watch: Arc::new(move |role: &str, pid: u32| {
                if let Some(s) = &sampler {
                    s.watch_process(role, pid);
                }
            }),
            verbose: self.verbose,
        };
        let svc = start(params, &ctx)?;
        let handle = ServiceHandle {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            endpoints: svc.endpoints(),
            facts: svc.facts(),
        };
        lock(&self.services).insert(handle.id, svc);
        Ok(handle)
    }

    fn service_query(&self, id: u64, what: &str) -> anyhow::Result<serde_json::Value> {
        self.with_service(id, |s| s.query(what))?
    }

    fn service_exited(&self, id: u64) -> anyhow::Result<Option<String>> {
        self.with_service(id, |s| s.exited())
    }

    fn stop_service(&self, id: u64) {
        let svc = lock(&self.services).remove(&id);
        if let Some(mut s) = svc {
            s.stop();
        }
    }

    fn drive(
        &self,
        job: &DriverJob,
        start_at: SystemTime,
        progress: &Progress,
    ) -> anyhow::Result<DriverReport> {
        let reg = self.registration(&job.workload)?;
        let driver = reg
            .driver
            .with_context(|| format!("workload `{}` has no driver", job.workload))?;
        // The load loop connects first and then waits for the common start itself
        // (Progress::wait_for_start); a driver that never asks starts at once.
        if let Ok(mut g) = progress.start_at.lock() {
            *g = Some(start_at);
        }
        if let Ok(mut g) = progress.started.lock() {
            *g = None;
        }
        // Its checkpoints are handed as this generator's.
        progress.generator.store(job.index, Ordering::Relaxed);
        self.watch_driver(&reg);
        let called = SystemTime::now();
        let report = driver(job, progress);
        let ended = SystemTime::now();
        let began = progress.started.lock().ok().and_then(|mut g| g.take());
        if let Ok(mut g) = progress.start_at.lock() {
            *g = None;
        }
        let (started, late) =
            began.unwrap_or_else(|| (called, called.duration_since(start_at).unwrap_or_default()));
        Ok(DriverReport {
            host: self.name.clone(),
            report: report?,
            started_unix_s: unix_s(started),
            ended_unix_s: unix_s(ended),
            start_skew_s: late.as_secs_f64(),
        })
    }

    fn interrupt(&self) {
        for p in lock(&self.driving).iter() {
            p.cancel.store(true, Ordering::Relaxed);
        }
    }

    fn telemetry_start(&self, settings: &TelemetrySettings) -> anyhow::Result<TelemetryInfo> {
        let cfg = sampler_config(&self.name, settings);
        let sampler =
            Sampler::start(cfg).with_context(|| format!("starting telemetry on {}", self.name))?;
        let det = sampler.power_detection();
        if settings.power_meter.is_some() && !det.sources.iter().any(|s| s == "meter:system") {
            // Asked for, the meter is the server's power: a run without it would measure
            // and store figures the user did not ask for, and say so only in a note.
            let why = det
                .notes
                .iter()
                .find_map(|n| n.strip_prefix("meter: "))
                .unwrap_or("it gave no reading");
            anyhow::bail!(
                "--power-meter on {}: {why}. Nothing was started. The command must print \
                 the server's watts as one number (e.g. `231.5`); run it by hand to see \
                 what it prints, fix it, or leave --power-meter out",
                self.name
            );
        }
        // The model stands in where nothing measures the whole system: beside a sensor
        // that does, it filled the tests too short for the sensor's reading, and one run
        // mixed measured and modelled watts (review s16, 2).
        if settings.power_model.is_some() {
            if let Some(whole) = det.whole_system.first() {
                anyhow::bail!(
                    "--power-model on {}: {whole} measures this host's whole power, so there \
                     is nothing to model; leave --power-model out. Nothing was started",
                    self.name
                );
            }
        }
        let info = TelemetryInfo {
            power_missing: det.sources.is_empty().then(|| det.missing_reason()),
            power_sources: det.sources.clone(),
            notes: det.notes.clone(),
            started_unix_s: Some(unix_s(sampler.started_at())),
        };
        *lock(&self.sampler) = Some(Arc::new(sampler));
        Ok(info)
    }

    fn telemetry_take(&self) -> anyhow::Result<Vec<TelemetrySample>> {
        Ok(self.sampler().map(|s| s.take()).unwrap_or_default())
    }

    fn sync_clock(&self) -> Option<SystemTime> {
        self.sampler().map(|s| s.started_at())
    }

    fn telemetry_mark(&self) -> Option<u64> {
        self.sampler().map(|s| s.mark() as u64)
    }

    fn telemetry_since(&self, mark: u64) -> Vec<TelemetrySample> {
        self.sampler()
            .map(|s| s.since(mark as usize))
            .unwrap_or_default()
    }

    fn set_warmup(&self, on: bool) {
        if let Some(s) = self.sampler() {
            s.set_warmup(on);
        }
    }

    fn unwatch_servers(&self) {
        if let Some(s) = self.sampler() {
            s.unwatch_all();
        }
    }

    fn run_commands(
        &self,
        commands: &[String],
        purpose: CommandsFor,
    ) -> anyhow::Result<Vec<CommandRun>> {
        Ok(engine::host::run_commands_here(commands, purpose))
    }

    fn measure_idle(&self, secs: f64) -> anyhow::Result<Option<IdlePower>> {
        let Some(sampler) = self.sampler() else {
            return Ok(None);
        };
        let measured = sampler
            .power_detection()
            .sources
            .into_iter()
            .any(|s| !s.starts_with("model"));
        if secs <= 0.0 || !measured {
            return Ok(None);
        }
        // From the host's running sampler: a second one would run each meter and
        // ipmitool command twice per tick.
        sampler
            .measure_idle(Duration::from_secs_f64(secs))
            .map(Some)
    }

    fn shutdown(&self) {
        let ids: Vec<u64> = lock(&self.services).keys().copied().collect();
        for id in ids {
            self.stop_service(id);
        }
        if let Some(s) = lock(&self.sampler).take() {
            s.set_warmup(false);
        }
    }
}

impl Drop for LocalHost {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog(name: &str) -> Option<Registration> {
        (name == "spin").then_some(Registration {
            name: "spin",
            about: "burns a little CPU",
            list_keys: &[],
            text_keys: &[],
            flags: |c| c,
            build: |_| anyhow::bail!("not built in these tests"),
            service: None,
            has_server: false,
            driver: Some(|_, _| {
                let until = std::time::Instant::now() + Duration::from_millis(30);
                let mut n = 0u64;
                while std::time::Instant::now() < until {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
                Ok(serde_json::Value::Null)
            }),
            programs: engine::no_programs,
            lengthen: "--duration",
        })
    }

    /// Samples with rackbench's own process in them: as the work, where the workload has
    /// no server (this test's `spin`, as crypto and mem), never as a load generator.
    fn loadgen_samples(host: &LocalHost) -> usize {
        let samples = host.telemetry_take().unwrap();
        assert!(samples
            .iter()
            .flat_map(|s| &s.procs)
            .all(|p| p.role != model::LOADGEN_PROCESS));
        samples
            .iter()
            .filter(|s| s.procs.iter().any(|p| p.role == model::WORK_PROCESS))
            .count()
    }

    /// A controller that runs no generator, or a system under test, used to report its
    /// own idle process as `role=loadgen` at 0 %.
    #[test]
    fn only_a_host_that_drives_has_loadgen_process_figures() {
        let host = LocalHost::new("h", catalog, false);
        let settings = TelemetrySettings {
            interval_s: 0.1,
            ..TelemetrySettings::default()
        };
        host.telemetry_start(&settings).unwrap();
        std::thread::sleep(Duration::from_millis(150));
        assert_eq!(loadgen_samples(&host), 0, "no drive, no loadgen figures");

        let job = DriverJob {
            workload: "spin".into(),
            test: "spin".into(),
            params: Params::new(),
            endpoints: Vec::new(),
            index: 0,
            generators: 1,
        };
        host.drive(&job, SystemTime::now(), &Progress::default())
            .unwrap();
        assert!(loadgen_samples(&host) > 0, "a drive is watched");

        host.unwatch_servers();
        std::thread::sleep(Duration::from_millis(150));
        assert_eq!(loadgen_samples(&host), 0, "the sweep point is over");
    }

    /// Acceptance pass F, 5: idle power was measured by a second sampler beside the
    /// host's running one, so the meter command ran twice per tick (pairs 2-4 ms
    /// apart). Each call of the meter is now one of the host's sampler's readings: one
    /// to check it at the start, then one per tick.
    #[test]
    fn idle_power_runs_the_meter_once_per_tick() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("calls");
        let meter = dir.path().join("meter.sh");
        std::fs::write(
            &meter,
            format!("#!/bin/sh\necho x >> '{}'\necho 120\n", log.display()),
        )
        .unwrap();
        std::fs::set_permissions(&meter, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let host = LocalHost::new("h", catalog, false);
        let settings = TelemetrySettings {
            interval_s: 0.2,
            power_meter: Some(meter.display().to_string()),
            power_model: None,
        };
        host.telemetry_start(&settings).unwrap();
        let idle = host.measure_idle(1.0).unwrap().unwrap();
        let m = idle.power.iter().find(|p| p.source == "meter").unwrap();
        // A weighted mean of equal readings: equal to a rounding.
        assert!((m.mean_watts - 120.0).abs() < 1e-9, "{}", m.mean_watts);
        // What the host's sampler read is in its samples; a tick may come between
        // the take and the count of calls, and is in the second take.
        let read = |samples: &[TelemetrySample]| {
            samples
                .iter()
                .filter(|s| {
                    s.power.iter().any(|p| p.source == "meter") || !s.power_failed.is_empty()
                })
                .count()
        };
        let before = read(&host.telemetry_take().unwrap());
        let calls = std::fs::read_to_string(&log).unwrap().lines().count();
        let after = read(&host.telemetry_take().unwrap());
        host.shutdown();
        assert!(before >= 3, "{before} ticks read the meter");
        // One call for the check, one asked as the sampler started, one per tick.
        assert!(
            (2 + before..=2 + before + after).contains(&calls),
            "{calls} calls for one check, the first question and {before} (+{after}) ticks"
        );
    }
}
