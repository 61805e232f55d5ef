//! Telemetry on every host of a run: one sampler per host (in its agent, or in this
//! process for the local one), started together, taken together at each step's end, so
//! a step's samples hold every host's CPUs, NICs, processes and power, each tagged with
//! its host.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use engine::host::{Host, TelemetrySettings};
use engine::workload::{NoWatch, Watch};
use hosts::LocalHost;
use model::{Flag, IdlePower, Metric, MissingMetric, TelemetrySample, TelemetrySummary};

pub struct Telemetry {
    hosts: Vec<Arc<dyn Host>>,
    on: bool,
    notes: Vec<String>,
    /// Each host's power sources (where something measures, idle power is measured), and
    /// the sampling interval: why a test that had a source has no power figure.
    power_sources: Vec<(String, Vec<String>)>,
    /// Each host's own reason for having no power source (its detection's notes), for
    /// its summaries: every host's summary used to carry every host's notes.
    power_missing: Vec<(String, String)>,
    /// The hosts whose power the declared model gives (`--power-model`, applied), with
    /// the watts it declares at idle: their idle power, modelled as the rest of their
    /// power is.
    model_idle_w: Vec<(String, f64)>,
    interval_s: f64,
    /// What the hosts' disclosures tell the flags.
    disclosed: Disclosed,
    /// Where each host's samples' clock began, on the controller's clock, as of the
    /// current test's start (see [`Host::sync_clock`]), with the offset then of the hosts
    /// that answered at that start.
    clocks: Mutex<SampleClocks>,
    /// The hosts whose clock moved against the controller's during the last test by more
    /// than [`CLOCK_MOVED_S`] (or their round trip), and by how much.
    moved: Mutex<Vec<(String, f64)>>,
    /// Each host's mark where the current test began, and its samples since that
    /// [`Telemetry::so_far`] brought back (each is brought once).
    test_marks: Mutex<Vec<(String, u64, Vec<TelemetrySample>)>>,
    /// The warm-up mark under way: its number, bumped by each [`Telemetry::mark_warmup`]
    /// and at each test's start, so that an earlier test's timer, still asleep when the
    /// next test marks its own warm-up, ends nothing.
    warmup: Arc<(Mutex<u64>, Condvar)>,
}

/// A test's samples from every host, and the hosts whose samples did not come back.
#[derive(Debug, Clone, Default)]
pub struct StepSamples {
    pub samples: Vec<TelemetrySample>,
    /// (host, why): a take that failed (a host lost, an agent that did not answer), or
    /// that brought nothing back from a host that was sampling.
    pub missing: Vec<(String, String)>,
}

/// What telemetry adds to one test's result.
#[derive(Debug, Clone, Default)]
pub struct StepFigures {
    pub summary: Vec<TelemetrySummary>,
    pub flags: Vec<Flag>,
    pub missing: Vec<MissingMetric>,
}

/// A host whose clock moved by more than this against the controller's while a test ran
/// (stepped, or drifting without time sync) gets the test flagged: its samples were
/// placed by where the clocks stood as the test began.
pub const CLOCK_MOVED_S: f64 = 0.05;

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
            power_missing: Vec::new(),
            model_idle_w: Vec::new(),
            interval_s: settings.interval_s,
            disclosed: Disclosed::default(),
            clocks: Mutex::new(SampleClocks::default()),
            moved: Mutex::new(Vec::new()),
            test_marks: Mutex::new(Vec::new()),
            warmup: Arc::default(),
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
            // The model as the host took it (a model it refused is not among its sources).
            if let (Some((idle_w, _)), true) = (
                mine.power_model,
                info.power_sources.iter().any(|s| s.starts_with("model")),
            ) {
                t.model_idle_w.push((h.name().to_string(), idle_w));
            }
            t.power_sources
                .push((h.name().to_string(), info.power_sources.clone()));
            if let Some(why) = info.power_missing {
                t.power_missing.push((h.name().to_string(), why));
            }
            if let Some(at) = info
                .started_unix_s
                .and_then(|s| Duration::try_from_secs_f64(s).ok())
            {
                t.clocks
                    .get_mut()
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
                    .push((h.name().to_string(), UNIX_EPOCH + at, None));
            }
        }
        Ok(t)
    }

    /// Learn from the hosts' disclosures what the flags need ([`Disclosed`]).
    pub fn with_disclosures(mut self, hosts: &[model::HostDisclosure]) -> Telemetry {
        self.disclosed = Disclosed::of(hosts);
        self
    }

    /// Each host's power sources as its sampler found them, with the run's own in words
    /// (`meter:system (`PROGRAM` via --power-meter, whole system)`, `model:system (100:200 W, declared, not
    /// measured)`), into its disclosure's `power.sources`: the disclosure is collected
    /// before `--power-meter` and `--power-model` are applied, and said "meter: none
    /// configured" of a run its meter measured. A host with none keeps the disclosure's
    /// reasons. True when a fact changed.
    pub fn disclose_power_sources(
        &self,
        hosts: &mut [model::HostDisclosure],
        settings: &TelemetrySettings,
    ) -> bool {
        let mut changed = false;
        for (host, sources) in self.power_sources.iter().filter(|(_, s)| !s.is_empty()) {
            let words: Vec<String> = sources
                .iter()
                .map(
                    |s| match (s.as_str(), &settings.power_meter, settings.power_model) {
                        // Its program only: a PDU's query carries its credentials in
                        // shapes no masking knows them all in (review H, 2), and the
                        // run's command says the rest.
                        ("meter:system", Some(cmd), _) => format!(
                            "meter:system (`{}` via --power-meter, whole system)",
                            program_of(cmd)
                        ),
                        ("model:system", _, Some((idle_w, max_w))) => {
                            format!("model:system ({idle_w}:{max_w} W, declared, not measured)")
                        }
                        _ => s.clone(),
                    },
                )
                .collect();
            let fact = model::Fact::known(words.join(", "));
            for d in hosts.iter_mut().filter(|d| &d.host == host) {
                if d.facts.get(crate::POWER_SOURCES_FACT) != Some(&fact) {
                    d.facts
                        .insert(crate::POWER_SOURCES_FACT.into(), fact.clone());
                    changed = true;
                }
            }
        }
        changed
    }

    /// Hosts whose power something measures (not only the power model).
    fn measured_power(&self) -> Vec<&str> {
        self.power_sources
            .iter()
            .filter(|(_, sources)| sources.iter().any(|s| !s.starts_with("model")))
            .map(|(h, _)| h.as_str())
            .collect()
    }

    /// Idle power measured before any load, for `secs`, on every host where something
    /// measures it.
    fn measured_idle(&self, secs: f64, verbose: bool) -> Vec<IdlePower> {
        let measured = self.measured_power();
        if secs <= 0.0 || measured.is_empty() {
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

    /// Idle power before any load on every host where something measures it, and on a
    /// host with a declared model the model's own idle watts beside, marked modelled as
    /// its power under load is (the headline takes the model over RAPL's CPU and memory
    /// only, so W above idle is then modelled too, and shown as such, instead of
    /// absent). Declared, not measured: on a host nothing measures, it takes no time and
    /// comes with `duration_s` 0.
    pub fn measure_idle(&self, secs: f64, verbose: bool) -> Vec<IdlePower> {
        if !self.on {
            return Vec::new();
        }
        let mut out = self.measured_idle(secs, verbose);
        for idle in &mut out {
            idle.flags.extend(idle_not_idle_flag(idle));
            self.disclosed.name_this_machine(&mut idle.flags);
            for f in idle.flags.iter().filter(|_| verbose) {
                engine::errln!(
                    "rackbench: warning: {}",
                    model::printable(&model::redact_secrets(&f.message))
                );
            }
        }
        for (host, idle_w) in &self.model_idle_w {
            if verbose {
                engine::errln!(
                    "rackbench: idle power on {}: {idle_w} W, as --power-model declares it (modelled)",
                    model::printable(host)
                );
            }
            let declared = model::PowerSummary {
                source: "model".into(),
                zone: "system".into(),
                mean_watts: *idle_w,
                max_watts: *idle_w,
                whole_system: true,
                modelled: true,
            };
            match out.iter_mut().find(|i| &i.host == host) {
                Some(i) => i.power.push(declared),
                None => out.push(IdlePower {
                    host: host.clone(),
                    duration_s: 0.0,
                    power: vec![declared],
                    cpus: Vec::new(),
                    flags: Vec::new(),
                }),
            }
        }
        out
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
        if self.on {
            self.each_host(f);
        }
    }

    /// `f` on every host at once, telemetry on or off.
    fn each_host(&self, f: impl Fn(&Arc<dyn Host>) + Sync) {
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

    /// A test starts: drop what was sampled between tests (server launch, setup), and
    /// measure every host's clock again: the test's samples and timings are placed by
    /// where the clocks stand now, not where they stood when the run began.
    /// Without telemetry the offsets are measured again all the same: the drivers' common
    /// start and their timings use them. The test's first `warmup_s` seconds are marked
    /// warm-up ([`Telemetry::mark_warmup`]) from before the drop: what is sampled while the
    /// clocks are measured is the test's, not an unmarked stray before its warm-up
    /// (acceptance K, 12: a 22 ms sample stood there as measured).
    pub fn begin_step(&self, warmup_s: f64) {
        self.cancel_warmup_timer();
        self.clocks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .forget_offsets();
        // The last test's clocks said nothing of this one's (a checkpoint reads them).
        self.moved
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        self.test_marks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        self.each_host(|h| {
            if self.on {
                h.set_warmup(warmup_s > 0.0);
                let _ = h.telemetry_take();
                if let Some(mark) = h.telemetry_mark() {
                    self.test_marks
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push((h.name().to_string(), mark, Vec::new()));
                }
            }
            let Some(at) = h.sync_clock() else {
                return;
            };
            self.clocks
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .set(h.name(), at, h.clock_offset_s());
        });
        self.mark_warmup(warmup_s);
    }

    /// When each host's samples' clock began, on the controller's clock, as the clocks
    /// stood when the current test began.
    pub fn clocks(&self) -> SampleClocks {
        self.clocks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// A warning per host of `hosts` whose clock moved against the controller's by more
    /// than [`CLOCK_MOVED_S`] during the test that just ended.
    pub fn clock_flags(&self, hosts: &[&str]) -> Vec<Flag> {
        let moved = self.moved.lock().unwrap_or_else(PoisonError::into_inner);
        moved
            .iter()
            .filter(|(h, _)| hosts.contains(&h.as_str()))
            .map(|(h, by)| {
                Flag::warning(
                    "clock_moved",
                    format!(
                        "host {h}: its clock moved {:+.0} ms against this one's while the test \
                         ran (stepped, or drifting without time sync): its samples and timings \
                         were placed by where the clocks stood as it began, so its CPU and \
                         power summary may be cut that far off",
                        by * 1000.0
                    ),
                )
            })
            .collect()
    }

    /// Mark the first `secs` of the test that starts now as warm-up on every host.
    fn mark_warmup(&self, secs: f64) {
        if !self.on || secs <= 0.0 {
            return;
        }
        let (gen, wake) = &*self.warmup;
        // Under the lock: an earlier timer cannot end this mark between its number and
        // the hosts' warm-up set.
        let mine = {
            let mut g = gen.lock().unwrap_or_else(PoisonError::into_inner);
            *g += 1;
            wake.notify_all();
            self.each(|h| h.set_warmup(true));
            *g
        };
        let hosts = self.hosts.clone();
        let warmup = self.warmup.clone();
        std::thread::spawn(move || {
            let (gen, wake) = &*warmup;
            let g = gen.lock().unwrap_or_else(PoisonError::into_inner);
            // Woken early when a later mark or test supersedes this one: it then ends.
            let (g, _) = wake
                .wait_timeout_while(g, Duration::from_secs_f64(secs), |g| *g == mine)
                .unwrap_or_else(PoisonError::into_inner);
            if *g == mine {
                for h in &hosts {
                    h.set_warmup(false);
                }
            }
        });
    }

    /// A test starts (or the run ends): a warm-up timer still asleep ends without effect.
    fn cancel_warmup_timer(&self) {
        let (gen, wake) = &*self.warmup;
        *gen.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        wake.notify_all();
    }

    /// Every host's samples of the test under way so far, in the order the test's end
    /// gives them ([`Telemetry::end_step`]), for its provisional result: a process killed
    /// before the test ended keeps them (acceptance pass G, 5). Copies: the hosts keep
    /// theirs for the test's end. A host that does not answer gives none.
    pub fn so_far(&self) -> StepSamples {
        let mut marks = self
            .test_marks
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut out = StepSamples::default();
        for h in &self.hosts {
            if let Some((_, mark, had)) = marks.iter_mut().find(|(n, _, _)| n == h.name()) {
                // Only the samples since the last call cross the link.
                had.extend(h.telemetry_since(*mark + had.len() as u64));
                out.samples.extend(had.iter().cloned());
            }
        }
        out
    }

    /// A test ended: every host's samples (the last, partial interval closed now), and
    /// the hosts whose samples did not come back, with why.
    pub fn end_step(&self) -> StepSamples {
        if !self.on {
            return StepSamples::default();
        }
        // The copies the test's checkpoints held: the take below brings them all, but
        // from a host it cannot reach, they are all there is.
        let held = std::mem::take(
            &mut *self
                .test_marks
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        let began = self.clocks();
        // Per host: its samples or why there are none, and how far its clock moved
        // during the test.
        type HostEnd = (String, Result<Vec<TelemetrySample>, String>, Option<f64>);
        let per_host: Vec<HostEnd> = std::thread::scope(|s| {
            let hs: Vec<_> = self
                .hosts
                .iter()
                .map(|h| {
                    let began = &began;
                    s.spawn(move || {
                        let samples = match h.telemetry_take() {
                            // Every host samples while telemetry is on, and a take closes
                            // the interval under way: nothing at all is news.
                            Ok(v) if v.is_empty() => Err(format!(
                                "no sample of the test came back from it (its sampler \
                                 gave none: stopped, or a test shorter than {} ms)",
                                telemetry::sampler::MIN_INTERVAL.as_millis()
                            )),
                            Ok(v) => Ok(v),
                            Err(e) => Err(model::redact_secrets(&format!("{e:#}"))),
                        };
                        let moved = began
                            .at_start(h.name())
                            .and_then(|(zero, offset)| moved_by(h.as_ref(), zero, offset));
                        (h.name().to_string(), samples, moved)
                    })
                })
                .collect();
            hs.into_iter()
                .zip(&self.hosts)
                .map(|(t, h)| {
                    t.join().unwrap_or_else(|_| {
                        (
                            h.name().to_string(),
                            Err("taking its samples panicked".into()),
                            None,
                        )
                    })
                })
                .collect()
        });
        let mut moved = self.moved.lock().unwrap_or_else(PoisonError::into_inner);
        moved.clear();
        let mut out = StepSamples::default();
        for (host, samples, m) in per_host {
            match samples {
                Ok(v) => out.samples.extend(v),
                Err(why) => {
                    // What its checkpoints brought is kept (a lost host's samples up to
                    // its last checkpoint tell what it was doing), stored but left out
                    // of the summaries: they cover part of the test (acceptance O, 2).
                    let had = held
                        .iter()
                        .find(|(h, _, _)| *h == host)
                        .map(|(_, _, had)| had.as_slice())
                        .unwrap_or_default();
                    let why = match had.last() {
                        Some(last) => {
                            out.samples.extend_from_slice(had);
                            format!(
                                "{why}; its {} sample(s) up to {:.1} s into the run, taken \
                                 at the test's checkpoints, are kept with the result and \
                                 left out of its summaries",
                                had.len(),
                                last.t_s
                            )
                        }
                        None => why,
                    };
                    out.missing.push((host.clone(), why));
                }
            }
            moved.extend(m.map(|by| (host, by)));
        }
        out
    }

    /// What a test's telemetry adds to its result: each host's summary over the time the
    /// test `measured`, and the flags of the hosts in the test's roles (`point_hosts`;
    /// the controller and a net matrix's third host took no part, and their steal or
    /// clock says nothing of this test). A host of the test whose samples did not come
    /// back has its figures named missing, with why, and a warning, never a silent gap
    /// (no summary: one without samples would still carry zeros, read as measured).
    /// `stopped`: the test was stopped early (its warnings then blame no clock).
    /// `lengthen`: how its workload's tests are made longer, for the advice of a test too
    /// short to measure ([`engine::Registration::lengthen`]).
    pub fn figures(
        &self,
        step: &StepSamples,
        measured: &[(SystemTime, SystemTime)],
        point_hosts: &[&str],
        stopped: bool,
        server_host: Option<&str>,
        lengthen: &str,
    ) -> StepFigures {
        let in_point = |h: &str| point_hosts.contains(&h);
        // A host whose samples did not all come back is summarized nowhere: those its
        // checkpoints kept cover part of the test, and would read as the whole.
        let whole: Vec<TelemetrySample> = step
            .samples
            .iter()
            .filter(|s| !step.missing.iter().any(|(h, _)| *h == s.host))
            .cloned()
            .collect();
        let part = measured_part(&whole, &self.clocks(), measured, point_hosts);
        let mut flags: Vec<Flag> = part
            .flags
            .into_iter()
            .filter(|(h, _)| in_point(h))
            .map(|(h, f)| match f.code.as_str() {
                "telemetry_window" if stopped => window_flag(&h, true),
                _ => f,
            })
            .collect();
        flags.extend(self.clock_flags(point_hosts));
        let mut summary = self.summarize(&part.samples);
        for s in &mut summary {
            s.whole_samples = part.whole.contains(&s.host);
            if let Some((_, spans)) = part.spans.iter().find(|(h, _)| *h == s.host) {
                s.measured_t_s = spans.clone();
            }
        }
        let ours: Vec<TelemetrySummary> = summary
            .iter()
            .filter(|s| in_point(&s.host))
            .cloned()
            .collect();
        flags.extend(steal_flags(&ours, &self.disclosed));
        // The hosts whose telemetry did not come back (lost, or a failed take).
        let unwatched: Vec<&str> = step.missing.iter().map(|(h, _)| h.as_str()).collect();
        flags.extend(other_load_flags(
            &ours,
            &summary,
            server_host,
            &unwatched,
            &self.disclosed,
        ));
        flags.extend(coarse_flags(&ours, lengthen));
        flags.extend(power_gap_flags(&ours));
        let our_samples: Vec<TelemetrySample> = part
            .samples
            .iter()
            .filter(|s| in_point(&s.host))
            .cloned()
            .collect();
        flags.extend(meter_late_flags(&our_samples));
        let mut missing = Vec::new();
        for (host, why) in step.missing.iter().filter(|(h, _)| in_point(h)) {
            missing.push(MissingMetric {
                name: format!("telemetry.{host}"),
                reason: format!(
                    "CPU, power and NIC figures of host {}: {why}",
                    self.disclosed.shown(host)
                ),
            });
            flags.push(Flag::warning(
                "telemetry_missing",
                format!(
                    "host {host}: its telemetry for this test did not come back ({why}): \
                     its CPU, power and NIC figures are missing"
                ),
            ));
        }
        self.disclosed.name_this_machine(&mut flags);
        StepFigures {
            summary,
            flags,
            missing,
        }
    }

    /// A sweep point's servers are gone: stop watching them everywhere.
    pub fn unwatch_servers(&self) {
        self.each(|h| h.unwatch_servers());
    }

    /// Per-host means of a test's samples. A host without a power source says why in
    /// its own words (its detection's), not every host's. A host with a power source and
    /// no power figure either had only sources read at the sampler's ticks (energy
    /// counters and the power model give a figure at every close) and one sample, the
    /// interval the test's end closed; or had ticks, and its sources failed. The reason
    /// says which, where the detection would say nothing was found.
    pub fn summarize(&self, samples: &[TelemetrySample]) -> Vec<TelemetrySummary> {
        let mut out = telemetry::sampler::summarize(samples);
        for s in &mut out {
            if s.power_missing.is_none() {
                continue;
            }
            let sources = self
                .power_sources
                .iter()
                .find(|(h, _)| *h == s.host)
                .map(|(_, v)| v.as_slice())
                .unwrap_or_default();
            if sources.is_empty() {
                if let Some((_, why)) = self.power_missing.iter().find(|(h, _)| *h == s.host) {
                    s.power_missing = Some(why.clone());
                }
                continue;
            }
            // One sample: the interval the test's end closed, with no tick before it.
            s.power_missing = Some(if s.samples > 1 {
                format!(
                    "this host's power sources ({}) gave no reading during the test's \
                     measured time: they failed (the run's telemetry notes say why), or, \
                     read as the watts of the moment once per sampling interval ({} s), \
                     none was read inside a measured time shorter than the interval",
                    sources.join(", "),
                    self.interval_s
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
        self.cancel_warmup_timer();
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
        window_metrics(&window_samples(self.sut.telemetry_since(mark), window))
    }
    fn lost(&self) -> Option<String> {
        self.sut.lost()
    }
}

/// The samples since a step's mark that its `window` (seconds after the mark; None: all
/// of them) covers. The mark closed an interval, so the first sample since begins at it.
/// What lies in the window counts, a warm-up mark or not, as in [`measured_part`]: the
/// workload knows when it measured, and a level's warm-up flag left set on a sample of
/// its window dropped that sample from the level's CPU and power.
pub fn window_samples(
    samples: Vec<TelemetrySample>,
    window: Option<(f64, f64)>,
) -> Vec<TelemetrySample> {
    match window {
        Some((from_s, to_s)) => telemetry::within(&samples, from_s, to_s)
            .into_iter()
            .map(|mut s| {
                s.warmup = false;
                s
            })
            .collect(),
        None => samples,
    }
}

/// How far `h`'s clock moved against the controller's since it stood at `zero` (where
/// its samples' clock began, on the controller's) and `offset`: the larger of the two
/// changes (the controller's clock stepped moves the first; the host's own, the second),
/// when it is beyond what the estimate can tell apart (its round trip, at least
/// [`CLOCK_MOVED_S`]). None when the host could not be asked.
fn moved_by(h: &dyn Host, zero: SystemTime, offset: f64) -> Option<f64> {
    let zero_moved = secs_between(zero, h.sync_clock()?);
    let offset_moved = h.clock_offset_s() - offset;
    let by = if offset_moved.abs() > zero_moved.abs() {
        offset_moved
    } else {
        zero_moved
    };
    (by.abs() > CLOCK_MOVED_S.max(h.clock_rtt_s())).then_some(by)
}

/// Seconds from `from` to `to`, negative when `to` is the earlier.
fn secs_between(from: SystemTime, to: SystemTime) -> f64 {
    match to.duration_since(from) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    }
}

/// When each host's samples' clock began (their `t_s` counts from it), on the
/// controller's clock, by host name; and the host's offset as the current test began,
/// when it answered then (None: kept from an earlier test, or from its connection).
#[derive(Debug, Clone, Default)]
pub struct SampleClocks(Vec<(String, SystemTime, Option<f64>)>);

impl SampleClocks {
    fn get(&self, host: &str) -> Option<SystemTime> {
        self.0
            .iter()
            .find(|(h, ..)| h == host)
            .map(|(_, at, _)| *at)
    }

    /// Where `host`'s samples' clock began and its offset, both as measured at the
    /// current test's start (None when it did not answer then).
    fn at_start(&self, host: &str) -> Option<(SystemTime, f64)> {
        let (_, at, offset) = self.0.iter().find(|(h, ..)| h == host)?;
        Some((*at, (*offset)?))
    }

    fn set(&mut self, host: &str, at: SystemTime, offset: f64) {
        match self.0.iter_mut().find(|(h, ..)| h == host) {
            Some(slot) => (slot.1, slot.2) = (at, Some(offset)),
            None => self.0.push((host.to_string(), at, Some(offset))),
        }
    }

    /// A test starts: no offset is this test's until its host answers again.
    fn forget_offsets(&mut self) {
        for slot in &mut self.0 {
            slot.2 = None;
        }
    }
}

/// What [`measured_part`] keeps of a test's samples.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredPart {
    pub samples: Vec<TelemetrySample>,
    /// Hosts whose samples could not be placed in the measured time (kept whole), each
    /// with its warning.
    pub flags: Vec<(String, Flag)>,
    /// Hosts cut to samples wholly inside the measured time (see
    /// `TelemetrySummary::whole_samples`).
    pub whole: Vec<String>,
    /// Each placed host's measured spans on its sample clock (see
    /// `TelemetrySummary::measured_t_s`).
    pub spans: Vec<(String, Vec<[f64; 2]>)>,
}

/// The part of a test's samples its figures cover: each host's samples that lie wholly
/// inside the test's `measured` spans (see `StepOutput::measured`), as
/// [`telemetry::within_spans`] takes them, with `clocks` placing the host's samples on the
/// controller's clock. The setup before the load (keys made, streams opened, the
/// generators' common start and warm-up) and the teardown after it (the UDP receiver's
/// wait for late datagrams, the generators' reports coming back) are left out instead of
/// diluting the test's CPU and power with idle time, and so is a sample that holds some
/// of both (up to an interval at each end). What lies in a span counts, a warm-up mark or
/// not: the workload knows when it measured. No spans, or only empty ones: the samples
/// as they are, the whole test. A host the clocks or the spans miss (a clock stepped
/// during the test would place them apart): that host's samples as they are, and a
/// warning that says so.
///
/// The test's own hosts (`alike`) are cut alike, span by span
/// ([`telemetry::choose_whole`]): their whole samples where every one's cover the same
/// half of the span or more, else each sample's part inside it; another host (the
/// controller, a net matrix's idle third) chooses for itself. Each host chose for itself
/// before: a 2 s net test's receiver read 5.29 Gbit/s from the one whole sample in its
/// second half, beside its sender's 7.14 over the whole test from parts, on one link.
pub fn measured_part(
    samples: &[TelemetrySample],
    clocks: &SampleClocks,
    measured: &[(SystemTime, SystemTime)],
    alike: &[&str],
) -> MeasuredPart {
    let mut out = MeasuredPart {
        samples: Vec::with_capacity(samples.len()),
        flags: Vec::new(),
        whole: Vec::new(),
        spans: Vec::new(),
    };
    // The spans merged once, on the controller's clock (seconds after the first one
    // began), so that every host has the same ones.
    let t0 = measured.iter().map(|(a, _)| *a).min().unwrap_or(UNIX_EPOCH);
    let merged = telemetry::merge_spans(
        &measured
            .iter()
            .map(|(a, b)| (secs_between(t0, *a), secs_between(t0, *b)))
            .collect::<Vec<_>>(),
    );
    if merged.is_empty() {
        // No spans, or only empty ones: the samples as they are.
        out.samples = samples.to_vec();
        return out;
    }
    let mut hosts: Vec<HostSamples> = Vec::new();
    for h in telemetry::sampler::hosts_in(samples) {
        let mine: Vec<TelemetrySample> = samples.iter().filter(|s| s.host == h).cloned().collect();
        let spans = match (clocks.get(h), mine.is_empty()) {
            (Some(zero), false) => {
                // The spans in seconds after the host's first sample began (negative:
                // before it).
                let shift = secs_between(zero, t0) - telemetry::origin(&mine);
                out.spans.push((
                    h.to_string(),
                    measured
                        .iter()
                        .map(|(a, b)| [secs_between(zero, *a), secs_between(zero, *b)])
                        .collect(),
                ));
                Some(merged.iter().map(|(a, b)| (a + shift, b + shift)).collect())
            }
            _ => None,
        };
        hosts.push(HostSamples {
            host: h,
            mine,
            spans,
        });
    }
    // The test's own hosts choose together ([`telemetry::choose_whole`]).
    let together: Vec<telemetry::HostSpans> = hosts
        .iter()
        .filter(|h| alike.contains(&h.host))
        .filter_map(|h| Some((h.mine.as_slice(), h.spans.as_deref()?)))
        .collect();
    let whole = telemetry::choose_whole(&together);
    for HostSamples {
        host: h,
        mine,
        spans,
    } in hosts
    {
        let cut = spans.map(|spans| {
            if alike.contains(&h) {
                telemetry::cut_spans(&mine, &spans, &whole)
            } else {
                telemetry::within_spans(&mine, &spans)
            }
        });
        match cut {
            Some(cut) if !cut.samples.is_empty() => {
                if cut.whole {
                    out.whole.push(h.to_string());
                }
                out.samples.extend(cut.samples.into_iter().map(|mut s| {
                    s.warmup = false;
                    s
                }));
            }
            _ => {
                // Summarised whole: no span says what it covers.
                out.spans.retain(|(placed, _)| placed != h);
                out.flags.push((h.to_string(), window_flag(h, false)));
                out.samples.extend(mine);
            }
        }
    }
    out
}

/// One host's samples of a test, and where the clocks place it, the test's measured
/// spans on its sample clock, merged.
struct HostSamples<'a> {
    host: &'a str,
    mine: Vec<TelemetrySample>,
    spans: Option<Vec<(f64, f64)>>,
}

/// CPU time of a host's tasks outside this test's own processes, in % of one CPU, above
/// which the test is flagged: at least this much, and at least [`OTHER_WARN_SHARE`] of
/// the host's CPUs (a daemon's few % on a large host is not contention).
pub const OTHER_WARN_ONE_CPU_PCT: f64 = 25.0;

/// See [`OTHER_WARN_ONE_CPU_PCT`].
pub const OTHER_WARN_SHARE: f64 = 0.05;

/// What the hosts' disclosures tell the flags: of their kernels, for the flags that judge
/// a host's CPU counters against the test's own processes, and this machine's name.
#[derive(Debug, Clone, Default)]
pub struct Disclosed {
    /// The hosts whose kernel charges interrupt and softirq ticks to the task they
    /// interrupt (their disclosure's `kernel.irq_time_accounting`): there a process's CPU
    /// time holds what /proc/stat counts as %irq and %soft.
    pub irq_in_tasks: Vec<String>,
    /// Each host's other names of the run on its kernel (namespaces or containers of one
    /// machine, [`model::KERNEL_SHARED_WITH`]): its CPU counters hold their work too.
    pub shared_with: Vec<(String, Vec<String>)>,
    /// This machine's hostname, for flags that name it ([`model::host_display_name`]).
    pub local_name: Option<String>,
}

/// Per-host flags of this machine name it by its hostname, as every table does: `host
/// local: other processes ...` read beside a Hosts table's `vm`. The flags are made where
/// the samples are judged, which know hosts by their run names; their messages are named
/// here, once, for a test's flags and the idle power's alike.
fn name_this_machine(flags: &mut [Flag], hostname: &str) {
    for f in flags {
        if let Some(rest) = f.message.strip_prefix("host local") {
            if rest.starts_with([':', ' ']) {
                f.message = format!("host {hostname}{rest}");
            }
        }
    }
}

impl Disclosed {
    pub fn of(hosts: &[model::HostDisclosure]) -> Disclosed {
        let fact =
            |h: &model::HostDisclosure, key: &str| h.facts.get(key).and_then(|f| f.value.clone());
        Disclosed {
            irq_in_tasks: hosts
                .iter()
                .filter(|h| {
                    fact(h, telemetry::tuning::IRQ_TIME_ACCOUNTING)
                        .is_some_and(|v| v.starts_with(telemetry::tuning::IRQ_IN_TASK_TIME))
                })
                .map(|h| h.host.clone())
                .collect(),
            shared_with: hosts
                .iter()
                .map(|h| {
                    let mates = model::kernel_mates(hosts, &h.host);
                    (
                        h.host.clone(),
                        mates.into_iter().map(String::from).collect(),
                    )
                })
                .filter(|(_, mates): &(String, Vec<String>)| !mates.is_empty())
                .collect(),
            local_name: Some(model::host_display_name(hosts, hosts::LOCAL))
                .filter(|n| n != hosts::LOCAL),
        }
    }

    /// Flags of this machine named by its hostname ([`name_this_machine`]).
    fn name_this_machine(&self, flags: &mut [Flag]) {
        if let Some(name) = &self.local_name {
            name_this_machine(flags, name);
        }
    }

    /// How a flag names `host`: this machine by its hostname.
    fn shown<'a>(&'a self, host: &'a str) -> &'a str {
        match &self.local_name {
            Some(name) if host == hosts::LOCAL => name,
            _ => host,
        }
    }

    /// `host`'s other names on its kernel.
    fn mates(&self, host: &str) -> &[String] {
        self.shared_with
            .iter()
            .find(|(h, _)| h == host)
            .map_or(&[], |(_, m)| m.as_slice())
    }

    /// Each kernel of `summaries` once, by its first host's summary, with that host's
    /// other names on it: flags that judge a kernel's CPUs say each kernel once (every
    /// multi-host result on namespaces of one VM read `other_load x3`, `steal x3`).
    fn once_each<'a>(
        &'a self,
        summaries: impl IntoIterator<Item = &'a TelemetrySummary>,
    ) -> Vec<(&'a TelemetrySummary, &'a [String])> {
        let mut judged: Vec<&str> = Vec::new();
        let mut out = Vec::new();
        for s in summaries {
            if judged.contains(&s.host.as_str()) {
                continue;
            }
            let mates = self.mates(&s.host);
            judged.push(&s.host);
            judged.extend(mates.iter().map(String::as_str));
            out.push((s, mates));
        }
        out
    }

    /// `, on the kernel it shares with rbh2, rbh3` after a flag's `host rbh1`; nothing
    /// for a host on a kernel of its own.
    fn shared_words(&self, mates: &[String]) -> String {
        if mates.is_empty() {
            return String::new();
        }
        let mates: Vec<&str> = mates.iter().map(|m| self.shown(m)).collect();
        format!(", on the kernel it shares with {}", mates.join(", "))
    }
}

/// A warning per host on which other processes took CPU time while the test measured:
/// the host's task time (mpstat's %usr + %nice + %sys over all its CPUs) less what
/// this test's watched processes used (each process with its children, pidstat's
/// `%CPU`). Interrupt and softirq time (%irq, %soft) is left out, as a process's CPU
/// time leaves it out where the kernel accounts it apart; on a host in `irq_in_tasks`,
/// whose kernel charges those ticks to the task they interrupt, it is counted in, as it
/// is in the processes' own time (it read 22-27 points low by the test's own %soft on
/// such a kernel: a network test's server and client carry their softirq; softirq served
/// while a CPU idles then counts as other, as nothing tells it apart). A second tool, a
/// build, a backup taking the
/// CPUs makes throughput lower and latency longer than the platform gives, and nothing
/// in the figures else says so (a repetition at 56k ops/s beside one at 143k). Hosts
/// with no watched process cannot tell theirs from the others' and are not judged, nor
/// is `server_host` (where the test's server runs, for a workload that has one) when no
/// server is watched there: a server given with `--target`, not launched, is the test's
/// own work, not another's. Hosts of the run on one kernel (test hosts in network
/// namespaces, containers) are judged once, as that kernel, against the test's processes
/// on all of them (`all`: every host's summary): the generators' on the next namespace
/// are no other load (every multi-host result on such hosts read `other_load x3`). A
/// kernel one of whose hosts is `unwatched` (its telemetry did not come back: a host
/// lost during the test, a take that failed) is not judged: that host's processes (a
/// generator's) ran there with no figure here, and their CPU read as another's (a lost
/// generator's 38% as `other_load` on the server's host).
pub fn other_load_flags(
    summaries: &[TelemetrySummary],
    all: &[TelemetrySummary],
    server_host: Option<&str>,
    unwatched: &[&str],
    kernels: &Disclosed,
) -> Vec<Flag> {
    let mut out = Vec::new();
    let unseen = |h: &str| {
        std::iter::once(h)
            .chain(kernels.mates(h).iter().map(String::as_str))
            .any(|x| unwatched.contains(&x))
    };
    let judged = |s: &&TelemetrySummary| s.samples > 0 && !s.procs.is_empty() && !unseen(&s.host);
    for (s, mates) in kernels.once_each(summaries.iter().filter(judged)) {
        // The test's server on this kernel (this host, or another name of it) that is not
        // watched (given with --target): its CPU is the test's own, not another's, and
        // nothing tells it apart.
        if let Some(server) = server_host.filter(|h| *h == s.host || mates.iter().any(|m| m == h)) {
            let watched = all
                .iter()
                .chain(summaries)
                .find(|o| o.host == server)
                .is_some_and(|o| {
                    o.procs
                        .iter()
                        .any(|p| !model::is_rackbench_process(&p.role))
                });
            if !watched {
                continue;
            }
        }
        let Some(every_cpu) = s.cpus.iter().find(|c| c.cpu == -1) else {
            continue;
        };
        // The CPUs there, each counted for its share of the window: one online for half
        // of it could run tasks for half a CPU, not a whole one.
        let n = s.cpus_online().unwrap_or(1.0);
        let irq_too = kernels.irq_in_tasks.contains(&s.host);
        let task_pct = |c: &model::CpuUtil| {
            c.usr_pct + c.nice_pct + c.sys_pct + if irq_too { c.irq_pct + c.soft_pct } else { 0.0 }
        };
        // The per-CPU lines summed, each weighed by its CPU's share of the window (with
        // every CPU there throughout, the all-CPU line times their count). Without them
        // the host is judged as one CPU, its all-CPU line as read.
        let tasks = s
            .cpus_sum(|_| true, task_pct)
            .unwrap_or_else(|| task_pct(every_cpu) * n);
        // The test's processes on this kernel: this host's, then its kernel mates'.
        let on_kernel: Vec<&TelemetrySummary> = std::iter::once(s)
            .chain(all.iter().filter(|o| mates.contains(&o.host)))
            .collect();
        let own: f64 = on_kernel
            .iter()
            .flat_map(|o| &o.procs)
            .map(|p| p.total_pct())
            .sum();
        let other = tasks - own;
        // The message begins `host rbh1: ` (the export's `@host` reads it there), and
        // says the kernel's other names after.
        let host = kernels.shown(&s.host);
        let shared = kernels.shared_words(mates);
        if ticks_missed(tasks, own) {
            out.push(Flag::warning(
                "cpu_ticks_missed",
                format!(
                    "host {host}: its CPUs{} were counted busy for {tasks:.1}% of one CPU, below \
                     the {own:.1}% this test's own processes ran: this kernel samples CPU \
                     time at its ticks, and work that sleeps between them (a paced or \
                     napping load) goes uncounted; its per-CPU and whole-host CPU figures \
                     read low",
                    if shared.is_empty() {
                        String::new()
                    } else {
                        format!("{shared},")
                    }
                ),
            ));
            continue;
        }
        if !over_other_load(other, n) {
            continue;
        }
        // `loadgen, server:0`; on a shared kernel each with its host (`receiver on rbh1`).
        let roles: Vec<String> = on_kernel
            .iter()
            .flat_map(|o| o.procs.iter().map(move |p| (o, p)))
            .map(|(o, p)| match mates.is_empty() {
                true => p.role.clone(),
                false => format!("{} on {}", p.role, kernels.shown(&o.host)),
            })
            .collect();
        // A CPU there for part of the window makes n fractional: say so (`3.5 CPUs`)
        // rather than round it to a count of CPUs the host did not have throughout.
        let cpus = if (n - n.round()).abs() < 0.05 {
            format!("{n:.0}")
        } else {
            format!("{n:.1}")
        };
        out.push(Flag::warning(
            "other_load",
            format!(
                "host {host}: other processes took {other:.0}% of one CPU while the test \
                 measured{shared} (its {cpus} CPUs ran tasks for {tasks:.0}%{}, this test's own \
                 processes, {}, for {own:.0}%): its throughput and latency carry their \
                 contention; run again on a quiet host, or keep other work off the test's \
                 CPUs",
                if irq_too {
                    " with the interrupt time its kernel charges to them (softirq served in \
                     ksoftirqd, or on a CPU none of the test's processes ran on, counts as \
                     another's)"
                } else {
                    ""
                },
                roles.join(", ")
            ),
        ));
    }
    out
}

/// The program a command runs, without its directory or arguments (`snmpget`).
fn program_of(cmd: &str) -> String {
    let first = cmd.split_whitespace().next().unwrap_or("");
    let name = first.rsplit('/').next().unwrap_or(first);
    model::redact_secrets(name.trim_matches(|c| c == '\'' || c == '"'))
}

/// A warning per host whose power series has gaps while the test measured: a source
/// that was due failed (a meter that exited with an error, printed garbage or did not
/// answer in time). Its power figures are the mean of the readings there are, so they
/// stand for part of the test only; the flag says how much, and the last error.
pub fn power_gap_flags(summaries: &[TelemetrySummary]) -> Vec<Flag> {
    summaries
        .iter()
        .filter_map(|s| {
            let g = s.power_gaps.as_ref()?;
            let of = s
                .covered_s
                .map(|c| format!(" of the {c:.1} s"))
                .unwrap_or_default();
            Some(Flag::warning(
                "power_gaps",
                model::redact_secrets(&format!(
                    "host {}: {} of {} samples have no power reading from a source that \
                     failed (last error: {}): its power figures cover {:.1} s{of} the test \
                     measured; fix the source and run again",
                    s.host, g.failed_samples, g.samples, g.last_error, g.covered_s
                )),
            ))
        })
        .collect()
}

/// A warning per host and source (the meter, ipmitool) whose readings answered late: a
/// command slower than a tick's wait (a quarter of the interval) is read at the next
/// tick, so each reading is of the moment it was asked, up to an interval before its
/// sample's end. Those asked before the test began are dropped as gaps; the others count,
/// and the flag says how late they were, since the power figures lag the load by as much.
pub fn meter_late_flags(samples: &[TelemetrySample]) -> Vec<Flag> {
    let mut late: Vec<(&str, &str, usize, f64)> = Vec::new();
    for s in samples {
        for p in &s.power {
            let Some(l) = p.late_s else { continue };
            match late
                .iter_mut()
                .find(|(h, src, ..)| *h == s.host && *src == p.source)
            {
                Some(e) => (e.2, e.3) = (e.2 + 1, e.3.max(l)),
                None => late.push((&s.host, &p.source, 1, l)),
            }
        }
    }
    late.into_iter()
        .map(|(host, source, n, max_s)| {
            Flag::warning(
                "meter_late",
                format!(
                    "host {host}: {n} {source} readings answered after their tick stopped \
                     waiting, up to {max_s:.2} s after they were asked: each stands for the \
                     moment it was asked, so the power figures lag the load by that much (one \
                     asked before the test began is a gap); make the command answer faster or \
                     raise --telemetry-interval"
                ),
            )
        })
        .collect()
}

/// The test's own processes' CPU (% of one CPU) below which a step's are at rest
/// ([`window_metrics`]): a generator waiting for its next level, a server with nothing
/// to serve.
const AT_REST_OWN_PCT: f64 = 5.0;

/// The metric of a step whose host's CPUs were counted busy for less than its own
/// processes ran ([`window_metrics`]).
pub const TICKS_MISSED: &str = engine::capacity_tests::TICKS_MISSED;

/// Whether a host's CPUs were counted busy (`tasks`, % of one CPU) well below what the
/// test's own processes ran there (`own`): by 5 points of a CPU and a quarter of `own`.
/// A paced UDP test's threads ran 19.6% of a CPU on a host whose CPUs were counted 2.2%
/// busy (acceptance N, 1): the kernel's tick sampling misses work that sleeps between
/// ticks, while a process's own time is its run time.
fn ticks_missed(tasks: f64, own: f64) -> bool {
    own - tasks > 5.0_f64.max(0.25 * own)
}

/// Whether `pct` of one CPU, taken by other programs on a host of `n` CPUs, is enough
/// to flag: [`OTHER_WARN_ONE_CPU_PCT`] or more, and [`OTHER_WARN_SHARE`] of the host.
fn over_other_load(pct: f64, n: f64) -> bool {
    pct.is_finite() && pct >= OTHER_WARN_ONE_CPU_PCT.max(OTHER_WARN_SHARE * n * 100.0)
}

/// The `idle_not_idle` warning of an idle power figure taken while the host's tasks
/// (%usr + %nice + %sys over its CPUs; nothing of the test runs yet) took as much CPU
/// as an `other_load` warning needs: the idle watts are a busy host's, and every W
/// above idle computed from them reads low by what that work drew.
pub fn idle_not_idle_flag(idle: &IdlePower) -> Option<Flag> {
    let all = idle.cpus.iter().find(|c| c.cpu == -1)?;
    let n = idle.cpus.iter().filter(|c| c.cpu >= 0).count().max(1) as f64;
    let tasks = (all.usr_pct + all.nice_pct + all.sys_pct) * n;
    if !over_other_load(tasks, n) {
        return None;
    }
    Some(Flag::warning(
        "idle_not_idle",
        format!(
            "host {}: while its idle power was measured, its tasks ran {tasks:.0}% of one \
             CPU (its {n:.0} CPUs {:.0}% busy): the idle watts are a busy host's, and W \
             above idle reads low by what that work drew; measure again on a quiet host",
            idle.host,
            all.busy_pct()
        ),
    ))
}

/// The warning for a host none of whose samples falls in the time the test measured. In
/// a test that ran to its end the clocks must have gone apart; in one stopped early
/// (Ctrl-C in an OLTP ramp-up) the time measured is short or none, and no clock is to
/// blame.
pub fn window_flag(h: &str, stopped: bool) -> Flag {
    let why = if stopped {
        "the test was stopped before it measured long enough to be sampled"
    } else {
        "a clock stepped during the test would place them apart"
    };
    Flag::warning(
        "telemetry_window",
        format!(
            "host {h}: no sample of it falls in the time the test measured ({why}); its CPU \
             and power summary covers the whole test, setup included"
        ),
    )
}

/// Mean steal (a VM's CPU time the hypervisor gave to someone else) on any one CPU of a
/// host, over a test's measured time, above which the test is flagged.
pub const STEAL_WARN_PCT: f64 = 5.0;

/// A warning per host whose CPUs were stolen from while the test measured: mpstat's
/// %steal, which the busy figures count as busy (as Kepler's active time does), so
/// throughput, latency and CPU per operation then carry a neighbour's contention, not
/// the platform's alone. Names the worst CPU (or the all-CPU line when it is the worst).
/// Hosts on one kernel (`kernels`: namespaces or containers of one machine) have its
/// CPUs, and are judged once, as [`other_load_flags`] judges them (one VM's steal read
/// `steal x3` for its three namespaces).
pub fn steal_flags(summaries: &[TelemetrySummary], kernels: &Disclosed) -> Vec<Flag> {
    let mut out = Vec::new();
    let sampled = || summaries.iter().filter(|s| s.samples > 0);
    for (s, mates) in kernels.once_each(sampled()) {
        // The kernel's worst CPU over its hosts' summaries (each sampled at its own
        // phase, one may read 4.9% and another 5.1%).
        let Some(worst) = sampled()
            .filter(|o| o.host == s.host || mates.contains(&o.host))
            .flat_map(|o| &o.cpus)
            .filter(|c| c.steal_pct.is_finite())
            .max_by(|a, b| a.steal_pct.total_cmp(&b.steal_pct))
        else {
            continue;
        };
        if worst.steal_pct < STEAL_WARN_PCT {
            continue;
        }
        let whose = if worst.cpu < 0 {
            "its CPUs'".to_string()
        } else {
            format!("CPU {}'s", worst.cpu)
        };
        let shared = kernels.shared_words(mates);
        // `host rbh1: ` first, as the export's `@host` reads it (see other_load_flags).
        out.push(Flag::warning(
            "steal",
            format!(
                "host {}: the hypervisor took {:.1}% of {whose} time (%steal) while the test \
                 measured{shared}: its figures include a neighbour's contention, not the \
                 platform's alone; run again on a quieter host, or on dedicated CPUs",
                kernels.shown(&s.host),
                worst.steal_pct
            ),
        ));
    }
    out
}

/// Measured time, on a host, under which its CPU figures are flagged as coarse: /proc/stat
/// and /proc/PID/stat count CPU time in ticks of 10 ms (USER_HZ 100, every mainstream
/// kernel), so over half a second one tick is 2 points of a CPU's %, and over a test of
/// 60 ms (a kv test at pipeline 100 and -n 200000) it is 17 points.
pub const COARSE_CPU_S: f64 = 0.5;

/// A warning per host whose CPU figures (per CPU, and per watched process) come from a
/// measured time too short for the kernel's tick counting to resolve them: each % there
/// is good to no better than one tick's share, which the message gives.
pub fn coarse_flags(summaries: &[TelemetrySummary], lengthen: &str) -> Vec<Flag> {
    summaries
        .iter()
        .filter(|s| s.samples > 0)
        .filter_map(|s| {
            let covered = s.covered_s.filter(|c| *c > 0.0 && *c < COARSE_CPU_S)?;
            let ticks = covered * 100.0;
            // Cut, not rounded, to milliseconds: 0.499 s rounded read "0.50 s", the very
            // threshold it fell short of.
            let shown = (covered * 1000.0).floor() / 1000.0;
            let message = if s.whole_samples {
                format!(
                    "host {}: its CPU figures cover {:.3} s of measured time, {:.0} clock \
                     ticks of 10 ms per CPU: each CPU's % and each process's is good to \
                     about {:.0} points; run the test for a second or more ({lengthen})",
                    s.host,
                    shown,
                    ticks.round(),
                    100.0 / ticks.max(1.0)
                )
            } else {
                // No sample lies wholly inside the test: its figures are the samples'
                // own, each weighed by its part inside, and hold the time around it.
                format!(
                    "host {}: the test measured for {:.3} s, shorter than the samples \
                     its CPU figures come from: they hold the time around it too; run \
                     the test for a second or more ({lengthen}), or sample more often \
                     (--telemetry-interval)",
                    s.host, shown
                )
            };
            Some(Flag::warning("cpu_coarse", message))
        })
        .collect()
}

/// One step's telemetry as metrics: CPU busy over all CPUs, each watched process's CPU,
/// and the headline power by the one rule (`model::power::headline`), labelled with
/// where it came from. Power whose own readings (its source's and zones') cover less
/// than half the step's window (a meter that failed on 9 of a level's 10 ticks) is left
/// out, so the level reads power missing: one reading's watts stood for the level with
/// no word of it. Another source's failures are not its gaps.
///
/// Where the host's CPUs were counted busy for less than the step's own processes ran
/// (the kernel samples CPU time at its ticks, and a paced load that sleeps between them
/// goes uncounted: a level's host read 3.5% busy of 2 CPUs beside its processes' 30% of
/// one), `cpu_ticks_missed_pct` says by how much, in percent of one CPU, for the step's
/// warning ([`TICKS_MISSED`]): the host's busy figure, and power modelled from it, read
/// low there. Interrupt time counts as the tasks' here, so that only a shortfall no
/// kernel's accounting explains is said.
pub fn window_metrics(samples: &[TelemetrySample]) -> Vec<Metric> {
    let mut out = Vec::new();
    let summaries = telemetry::sampler::summarize(samples);
    for s in summaries.iter().filter(|s| s.samples > 0) {
        if let Some(all) = s.cpus.iter().find(|c| c.cpu == -1) {
            out.push(Metric::new("cpu_busy_pct", all.busy_pct(), "%"));
            let task_pct =
                |c: &model::CpuUtil| c.usr_pct + c.nice_pct + c.sys_pct + c.irq_pct + c.soft_pct;
            let tasks = s
                .cpus_sum(|_| true, task_pct)
                .unwrap_or_else(|| task_pct(all) * s.cpus_online().unwrap_or(1.0));
            let own: f64 = s.procs.iter().map(|p| p.total_pct()).sum();
            if ticks_missed(tasks, own) {
                out.push(Metric::new(TICKS_MISSED, own - tasks, "%"));
            }
            // While the test's own processes rest (a levels test's active idle), every
            // task is another's, on any host of one kernel (the generators beside it rest
            // too): 145% of one CPU at active idle went into the overall perf/W unsaid.
            // Interrupt time is left out, as `other_load` leaves it out.
            let n = s.cpus_online().unwrap_or(1.0);
            let others = s
                .cpus_sum(|_| true, |c| c.usr_pct + c.nice_pct + c.sys_pct)
                .unwrap_or((all.usr_pct + all.nice_pct + all.sys_pct) * n)
                - own;
            if own < AT_REST_OWN_PCT && over_other_load(others, n) {
                out.push(Metric::new(
                    engine::capacity_tests::OTHERS_AT_REST,
                    others,
                    "%",
                ));
            }
        }
        for p in &s.procs {
            out.push(
                Metric::new("process_cpu_pct", p.usr_pct + p.sys_pct, "%")
                    .label("role", &p.role)
                    .label("pid", p.pid),
            );
        }
        let host: Vec<&TelemetrySample> = samples
            .iter()
            .filter(|x| x.host == s.host && !x.warmup)
            .collect();
        let window: f64 = host.iter().map(|x| x.interval_s).sum();
        let covered = |h: &model::power::HeadlinePower| -> f64 {
            host.iter()
                .filter(|x| {
                    x.power
                        .iter()
                        .any(|p| p.source == h.source && h.zones.contains(&p.zone))
                })
                .map(|x| x.interval_s)
                .sum()
        };
        let headline = telemetry::power::headline_power(&s.power);
        if let Some(h) = headline.filter(|h| covered(h) >= window / 2.0) {
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

    /// The test's own hosts in these tests (`measured_part`'s `alike`).
    const TEST_HOSTS: [&str; 3] = ["a", "b", "c"];

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
            ctxt_per_s: Some(0.0),
            intr_per_s: Some(0.0),
            nics: vec![],
            disks: vec![],
            freq_mhz: vec![],
            procs: vec![],
            power: vec![],
            power_failed: Vec::new(),
        }
    }

    /// A whole-system meter's 300 W, asked `late_s` before its sample's end.
    fn meter_reading(late_s: Option<f64>) -> model::PowerReading {
        model::PowerReading {
            source: "meter".into(),
            zone: "system".into(),
            watts: 300.0,
            whole_system: true,
            modelled: false,
            instantaneous: true,
            late_s,
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

    fn covered(summaries: &[TelemetrySummary], host: &str) -> f64 {
        summaries
            .iter()
            .find(|s| s.host == host)
            .and_then(|s| s.covered_s)
            .unwrap()
    }

    /// Two hosts whose samplers started at different times (b's 9.9 s before a's; b's
    /// first sample of the test began 0.1 s after a's), each with 0.3 s of setup at 10%
    /// before the load, 2 s of load at 80% and a 0.4 s tail at 5% (the teardown) that
    /// the test's end closed. Cut to the 2 s the workload says it measured, each is at
    /// 80% over 2 s; uncut, b's setup and tail dilute it to 63%.
    #[test]
    fn the_setup_and_the_tail_around_the_load_are_left_out() {
        let samples = vec![
            sample("a", 0.3, 0.3, false, 10.0),
            // A warm-up mark that outlasted the workload's own start: inside the span, it
            // counts.
            sample("a", 1.3, 1.0, true, 80.0),
            sample("a", 2.3, 1.0, false, 80.0),
            sample("a", 2.7, 0.4, false, 5.0),
            sample("b", 10.2, 0.2, false, 10.0),
            sample("b", 11.2, 1.0, false, 80.0),
            sample("b", 12.2, 1.0, false, 80.0),
            sample("b", 12.6, 0.4, false, 5.0),
            sample("c", 5.0, 3.0, false, 50.0),
        ];
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let at = |s: f64| t0 + Duration::from_secs_f64(s);
        let clock = SampleClocks(vec![
            ("a".into(), t0, None),
            ("b".into(), t0 - Duration::from_secs_f64(9.9), None),
        ]);
        let all = telemetry::sampler::summarize(&samples);
        assert!((busy(&all, "b") - (2.0 + 160.0 + 2.0) / 2.6).abs() < 1e-9);
        let cut_to = |spans: &[(SystemTime, SystemTime)]| {
            let part = measured_part(&samples, &clock, spans, &TEST_HOSTS);
            (telemetry::sampler::summarize(&part.samples), part.flags)
        };
        let (cut, flags) = cut_to(&[(at(0.3), at(2.3))]);
        for h in ["a", "b"] {
            assert!(
                (busy(&cut, h) - 80.0).abs() < 1e-9,
                "{h}: {}",
                busy(&cut, h)
            );
            assert!((covered(&cut, h) - 2.0).abs() < 1e-9);
        }
        // A host the clock does not know: whole, and said.
        assert!((covered(&cut, "c") - 3.0).abs() < 1e-9);
        assert_eq!(flags.len(), 1, "{flags:?}");
        assert_eq!(flags[0].0, "c");
        assert!(flags[0].1.message.starts_with("host c:"), "{flags:?}");
        // Two timed parts with a gap (crypto's sign and verify): only they count, the
        // first by its whole sample, the second (holding none whole) by its part of one.
        let (cut, _) = cut_to(&[(at(1.8), at(2.3)), (at(0.3), at(1.3))]);
        assert!(
            (covered(&cut, "a") - 1.5).abs() < 1e-9,
            "{}",
            covered(&cut, "a")
        );
        assert!((busy(&cut, "a") - 80.0).abs() < 1e-9);
        // Spans that overlap count their time once.
        let (cut, _) = cut_to(&[(at(0.3), at(2.3)), (at(1.0), at(2.0))]);
        assert!((covered(&cut, "a") - 2.0).abs() < 1e-9);
        // Edges within a few ms of the samples' (the runner's warm-up mark closing an
        // interval a little before the generators' window opens): the samples count.
        let (cut, _) = cut_to(&[(at(0.31), at(2.29))]);
        assert!((covered(&cut, "a") - 2.0).abs() < 1e-9);
        // No spans (a capacity step that did not know its window): the samples as they are.
        assert_eq!(
            measured_part(&samples, &clock, &[], &TEST_HOSTS).samples,
            samples
        );
        // Only an empty span: the same, and no host flagged.
        let part = measured_part(&samples, &clock, &[(at(1.0), at(1.0))], &TEST_HOSTS);
        assert_eq!(part.samples, samples);
        assert!(part.flags.is_empty(), "{:?}", part.flags);
        // Spans nowhere near the hosts' samples: as they are, and said for each host.
        let part = measured_part(&samples, &clock, &[(at(100.0), at(102.0))], &TEST_HOSTS);
        assert_eq!(part.samples, samples);
        assert_eq!(part.flags.len(), 3, "{:?}", part.flags);
        assert!(part.flags.iter().all(|(_, f)| f.code == "telemetry_window"));
        assert!(part.whole.is_empty());
    }

    /// The two ends of one link, their samplers a tenth of a second apart, over a test
    /// of 1.9 s whose load is 80% in its first second and 40% after: a's one whole sample
    /// is the first second, b's the last. Each cut for itself read 80 and 44; cut alike,
    /// by parts, both cover the test's 1.9 s and read within two points of each other.
    /// Over a test of 5.9 s the whole samples of both cover most of it together, and both
    /// are cut to them.
    #[test]
    fn every_host_of_a_test_is_cut_to_the_same_time() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let at = |s: f64| t0 + Duration::from_secs_f64(s);
        let clock = SampleClocks(vec![("a".into(), t0, None), ("b".into(), t0, None)]);
        // The load's %busy over [from, to): 10 before 0, 80 to 1, 40 to 1.9, 5 after
        // (the long test: 40 to 5.9).
        let load = |end: f64, from: f64, to: f64| {
            let part = |a: f64, b: f64| (to.min(b) - from.max(a)).max(0.0);
            (part(f64::MIN, 0.0) * 10.0
                + part(0.0, 1.0) * 80.0
                + part(1.0, end) * 40.0
                + part(end, f64::MAX) * 5.0)
                / (to - from)
        };
        let ticks = |h: &str, first_end: f64, end: f64| -> Vec<TelemetrySample> {
            (0..8)
                .map(|i| {
                    let to = first_end + i as f64;
                    sample(h, to, 1.0, false, load(end, to - 1.0, to))
                })
                .collect()
        };
        let samples: Vec<TelemetrySample> = [ticks("a", 0.0, 1.9), ticks("b", -0.1, 1.9)].concat();
        let part = measured_part(&samples, &clock, &[(at(0.0), at(1.9))], &TEST_HOSTS);
        assert!(part.whole.is_empty(), "{:?}", part.whole);
        let cut = telemetry::sampler::summarize(&part.samples);
        for h in ["a", "b"] {
            assert!(
                (covered(&cut, h) - 1.9).abs() < 1e-9,
                "{h}: {}",
                covered(&cut, h)
            );
        }
        let (a, b) = (busy(&cut, "a"), busy(&cut, "b"));
        assert!((a - b).abs() < 2.0, "a {a}, b {b}");
        // Each host's own choice, as before: 80 against 44.
        let own = |h: &str| {
            let mine: Vec<TelemetrySample> =
                samples.iter().filter(|s| s.host == h).cloned().collect();
            let origin = mine[0].t_s - mine[0].interval_s;
            let cut = telemetry::within_spans(&mine, &[(-origin, 1.9 - origin)]);
            busy(&telemetry::sampler::summarize(&cut.samples), h)
        };
        assert!((own("a") - 80.0).abs() < 1e-9 && (own("b") - 44.0).abs() < 1e-9);

        let samples: Vec<TelemetrySample> = [ticks("a", 0.0, 5.9), ticks("b", -0.1, 5.9)].concat();
        let part = measured_part(&samples, &clock, &[(at(0.0), at(5.9))], &TEST_HOSTS);
        assert_eq!(part.whole, ["a", "b"]);
        let cut = telemetry::sampler::summarize(&part.samples);
        assert!((covered(&cut, "a") - 5.0).abs() < 1e-9);
        assert!((covered(&cut, "b") - 5.0).abs() < 1e-9);

        // A host of the run outside the test (the controller), sampling every 3 s: its
        // one whole sample covers 0-3 s, which with a's and b's would leave them 2.1 s
        // in common. It chooses for itself, and a and b keep their whole samples.
        let mut more = samples.clone();
        more.extend([0.0, 3.0, 6.0].map(|t| sample("z", t, 3.0, false, load(5.9, t - 3.0, t))));
        // A host of the test whose clock stepped (its samples 1000 s off the test's):
        // summarised whole and flagged, it has no say either.
        more.extend([1001.0, 1002.0].map(|t| sample("y", t, 1.0, false, 50.0)));
        let clock = SampleClocks(
            ["a", "b", "z", "y"]
                .iter()
                .map(|h| (h.to_string(), t0, None))
                .collect(),
        );
        let span = [(at(0.0), at(5.9))];
        let part = measured_part(&more, &clock, &span, &["a", "b", "y"]);
        assert_eq!(part.whole, ["a", "b", "z"]);
        assert_eq!(part.flags.len(), 1, "{:?}", part.flags);
        assert_eq!(part.flags[0].0, "y");
        // Were the 3 s host one of the test's, all three would take parts.
        let part = measured_part(&more, &clock, &span, &["a", "b", "z"]);
        assert!(part.whole.is_empty(), "{:?}", part.whole);
    }

    /// Samples that straddle the spans' edges are left out, not weighted by their part
    /// inside: the load at 80% over 3 s, 0.3 s of setup at 10% before it and 0.3 s of
    /// tail at 5% after it, 1 s ticks. By parts the cut would read 71%.
    #[test]
    fn samples_across_an_edge_do_not_dilute_the_load() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let at = |s: f64| t0 + Duration::from_secs_f64(s);
        let clock = SampleClocks(vec![("a".into(), t0, None)]);
        let samples = vec![
            sample("a", 0.9, 0.9, false, (0.3 * 10.0 + 0.6 * 80.0) / 0.9),
            sample("a", 1.9, 1.0, false, 80.0),
            sample("a", 2.9, 1.0, false, 80.0),
            sample("a", 3.6, 0.7, false, (0.4 * 80.0 + 0.3 * 5.0) / 0.7),
        ];
        let part = measured_part(&samples, &clock, &[(at(0.3), at(3.3))], &TEST_HOSTS);
        assert!(part.flags.is_empty());
        assert_eq!(part.whole, ["a"]);
        let cut = telemetry::sampler::summarize(&part.samples);
        assert!((busy(&cut, "a") - 80.0).abs() < 1e-9, "{}", busy(&cut, "a"));
        assert!((covered(&cut, "a") - 2.0).abs() < 1e-9);
        // A span with no sample wholly inside: each sample weighs its part inside.
        let part = measured_part(&samples, &clock, &[(at(0.6), at(1.4))], &TEST_HOSTS);
        assert!(part.whole.is_empty());
        let cut = telemetry::sampler::summarize(&part.samples);
        assert!((covered(&cut, "a") - 0.8).abs() < 1e-9);
        let by_parts = (0.3 * samples[0].cpus[0].usr_pct + 0.5 * 80.0) / 0.8;
        assert!((busy(&cut, "a") - by_parts).abs() < 1e-9);
        // A long span and a short one: the long one's whole samples, and the short one's
        // parts (its load is not left out because the other held whole samples).
        let part = measured_part(
            &samples,
            &clock,
            &[(at(0.9), at(1.9)), (at(3.0), at(3.5))],
            &TEST_HOSTS,
        );
        assert!(part.whole.is_empty());
        let cut = telemetry::sampler::summarize(&part.samples);
        assert!(
            (covered(&cut, "a") - 1.5).abs() < 1e-9,
            "{}",
            covered(&cut, "a")
        );
    }

    #[test]
    fn steal_on_any_cpu_over_the_limit_is_flagged_per_host() {
        let stolen = |cpu: i32, steal: f64| model::CpuUtil {
            usr_pct: 50.0,
            steal_pct: steal,
            idle_pct: 50.0 - steal,
            ..model::CpuUtil::idle(cpu)
        };
        let mut a = sample("a", 1.0, 1.0, false, 50.0);
        a.cpus = vec![stolen(-1, 3.0), stolen(0, 0.5), stolen(1, 6.0)];
        let mut b = sample("b", 1.0, 1.0, false, 50.0);
        b.cpus = vec![stolen(-1, 4.9), stolen(0, 4.9), stolen(1, 4.9)];
        let none = Disclosed::default();
        let flags = steal_flags(&telemetry::sampler::summarize(&[a.clone(), b]), &none);
        assert_eq!(flags.len(), 1, "{flags:?}");
        assert_eq!(flags[0].code, "steal");
        assert!(
            flags[0].message.contains("host a")
                && flags[0].message.contains("6.0% of CPU 1's time"),
            "{}",
            flags[0].message
        );
        // The all-CPU line, when it is all there is: "its CPUs' time", not "CPUs's"
        // (acceptance pass G, 13).
        let mut c = sample("c", 1.0, 1.0, false, 50.0);
        c.cpus = vec![stolen(-1, 7.0)];
        let flags = steal_flags(&telemetry::sampler::summarize(&[c]), &none);
        assert!(
            flags[0]
                .message
                .contains("took 7.0% of its CPUs' time (%steal)"),
            "{}",
            flags[0].message
        );
        // A host with no samples says nothing.
        assert!(steal_flags(&telemetry::sampler::summarize(&[]), &none).is_empty());
        // Three namespaces of one VM, each sampled at its own phase: a's CPU 1 read 4.9%
        // of steal, n2's 5.1%. The kernel's steal is flagged once, by its worst reading,
        // under the first host's name, its kernel said.
        let ns = |h: &str, steal: f64| {
            let mut s = TelemetrySample {
                host: h.into(),
                ..a.clone()
            };
            s.cpus = vec![stolen(-1, 3.0), stolen(0, 0.5), stolen(1, steal)];
            s
        };
        let one_kernel = Disclosed {
            shared_with: ["a", "n2", "n3"]
                .iter()
                .map(|h| {
                    let mates = ["a", "n2", "n3"].iter().filter(|m| *m != h);
                    (h.to_string(), mates.map(|m| m.to_string()).collect())
                })
                .collect(),
            ..Disclosed::default()
        };
        let three = [ns("a", 4.9), ns("n2", 5.1), ns("n3", 4.0)];
        let flags = steal_flags(&telemetry::sampler::summarize(&three), &one_kernel);
        assert_eq!(flags.len(), 1, "{flags:?}");
        let m = &flags[0].message;
        assert!(
            m.starts_with("host a: the hypervisor took 5.1% of CPU 1's time"),
            "{m}"
        );
        assert!(
            m.contains("while the test measured, on the kernel it shares with n2, n3: its"),
            "{m}"
        );
        // Each on a kernel of its own: n2 alone is over the limit.
        let flags = steal_flags(&telemetry::sampler::summarize(&three), &none);
        assert_eq!(flags.len(), 1, "{flags:?}");
        assert!(flags[0].message.starts_with("host n2: "), "{flags:?}");
    }

    /// The helper's case: a kv test's server and client used 72% of one CPU on a host
    /// whose two CPUs ran tasks for 164%; its figures carry a build's contention.
    #[test]
    fn other_processes_taking_the_cpus_are_flagged_per_host() {
        let cpu = |cpu: i32, usr: f64, sys: f64, soft: f64| model::CpuUtil {
            usr_pct: usr,
            sys_pct: sys,
            soft_pct: soft,
            idle_pct: 100.0 - usr - sys - soft,
            ..model::CpuUtil::idle(cpu)
        };
        let proc = |role: &str, usr: f64, sys: f64| model::ProcCpu {
            role: role.into(),
            pid: 1,
            usr_pct: usr,
            sys_pct: sys,
            with_descendants: role != "loadgen",
        };
        let host =
            |name: &str, cpus: Vec<model::CpuUtil>, procs: Vec<model::ProcCpu>| TelemetrySummary {
                host: name.into(),
                samples: 4,
                covered_s: Some(4.0),
                whole_samples: true,
                measured_t_s: Vec::new(),
                cpus,
                ctxt_per_s: Some(0.0),
                intr_per_s: Some(0.0),
                nics: Vec::new(),
                disks: Vec::new(),
                mean_freq_mhz: None,
                procs,
                power: Vec::new(),
                power_missing: None,
                power_gaps: None,
                part_present: Vec::new(),
            };
        // Two CPUs alike, and the all-CPU line.
        let two_cpus = |usr: f64, sys: f64, soft: f64| -> Vec<model::CpuUtil> {
            (-1..2).map(|c| cpu(c, usr, sys, soft)).collect()
        };
        // Hosts on kernels of their own.
        let judge_other_load = |s: &[TelemetrySummary], server: Option<&str>, irq: &[String]| {
            let kernels = Disclosed {
                irq_in_tasks: irq.to_vec(),
                ..Disclosed::default()
            };
            other_load_flags(s, s, server, &[], &kernels)
        };
        let busy = host(
            "busy",
            two_cpus(60.0, 22.0, 5.0),
            vec![proc("loadgen", 1.0, 33.0), proc("server:0", 8.0, 30.0)],
        );
        // Its own: 40% + 35% of one CPU; its tasks 40% of 2 CPUs, its network path in
        // %soft: nothing else ran.
        let quiet = host(
            "quiet",
            two_cpus(20.0, 20.0, 10.0),
            vec![proc("loadgen", 10.0, 30.0), proc("server:0", 5.0, 30.0)],
        );
        // No watched process: nothing to tell its own from the others'.
        let unwatched = host("unwatched", vec![cpu(-1, 90.0, 9.0, 0.0)], Vec::new());
        let flags = judge_other_load(&[busy.clone(), quiet.clone(), unwatched], None, &[]);
        assert_eq!(flags.len(), 1, "{flags:?}");
        assert_eq!(flags[0].code, "other_load");
        let m = &flags[0].message;
        assert!(
            m.contains("host busy: other processes took 92% of one CPU"),
            "{m}"
        );
        assert!(m.contains("loadgen, server:0, for 72%"), "{m}");
        // On a large host a few daemons' % is no contention: 64 CPUs, 100% of one CPU
        // other is under 5% of the host.
        let mut big = vec![cpu(-1, 10.0, 5.0, 0.0)];
        big.extend((0..64).map(|c| cpu(c, 10.0, 5.0, 0.0)));
        let large = host("large", big, vec![proc("loadgen", 500.0, 360.0)]);
        assert!(judge_other_load(&[large], None, &[]).is_empty());
        // A server given with --target on the host of the test's server: not watched,
        // its CPU is the test's own, not another's. Watched there, the host is judged.
        let mut given = busy.clone();
        given.procs.retain(|p| p.role == "loadgen");
        assert!(judge_other_load(&[given.clone()], Some("busy"), &[]).is_empty());
        assert_eq!(judge_other_load(&[given], None, &[]).len(), 1);
        assert_eq!(judge_other_load(&[busy], Some("busy"), &[]).len(), 1);
        // On a kernel that charges softirq ticks to the task they interrupt, the test's
        // processes' time holds their network path: acceptance pass F, 1 saw server and
        // client at 97% of CPU 0, whose usr+sys was 72.7% and soft 27.1%, beside a
        // spinner at 100% of CPU 1, and "other: 75%" (its soft left out of the tasks
        // only). Counted in on both sides, the spinner reads as itself. (CPU 0 here is
        // rounded to 72.2 and 27.0 so that the per-CPU lines, which the tasks are summed
        // from, agree with the all-CPU line.)
        let spun = host(
            "spun",
            vec![
                cpu(-1, 80.0, 6.0, 13.5),
                cpu(0, 60.0, 12.2, 27.0),
                cpu(1, 99.8, 0.0, 0.0),
            ],
            vec![proc("loadgen", 20.0, 30.0), proc("server:0", 20.0, 27.0)],
        );
        let charged = ["spun".to_string()];
        let f = judge_other_load(std::slice::from_ref(&spun), None, &charged);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].message
                .contains("other processes took 102% of one CPU")
                && f[0]
                    .message
                    .contains("with the interrupt time its kernel charges to them"),
            "{}",
            f[0].message
        );
        let apart = judge_other_load(&[spun], None, &[]);
        assert!(
            apart[0].message.contains("took 75% of one CPU"),
            "{apart:?}"
        );
        // A quiet host stays quiet either way: its soft is its own processes'.
        let mut quiet_charged = quiet;
        quiet_charged.procs = vec![proc("loadgen", 10.0, 35.0), proc("server:0", 5.0, 35.0)];
        assert!(judge_other_load(&[quiet_charged], None, &["quiet".into()]).is_empty());
        // Acceptance N, 1: a paced UDP test's processes ran 19.5% of one CPU on a host whose
        // two CPUs were counted 1.1% busy: the ticks missed its work, said as such (not
        // as "other load" below zero).
        let paced = host(
            "paced",
            two_cpus(0.3, 0.7, 0.1),
            vec![proc("loadgen", 0.0, 11.25), proc("receiver", 1.0, 7.25)],
        );
        let f = judge_other_load(std::slice::from_ref(&paced), None, &["paced".into()]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].code, "cpu_ticks_missed");
        assert!(
            f[0].message.contains(
                "host paced: its CPUs were counted busy for 2.2% of one CPU, below the 19.5%"
            ),
            "{}",
            f[0].message
        );

        // Three test hosts in namespaces of one machine: each one's counters are the
        // kernel's, holding the server's 60% and both generators' 50%. The walk-through
        // saw `other_load x3` on every such result, each host's own processes set against
        // the whole kernel's tasks.
        let on = |name: &str, usr: f64, procs| host(name, two_cpus(usr, 22.0, 0.0), procs);
        let hosts = |usr: f64| {
            vec![
                on(name_of(1), usr, vec![proc("server:0", 20.0, 40.0)]),
                on(name_of(2), usr, vec![proc("loadgen", 20.0, 30.0)]),
                on(name_of(3), usr, vec![proc("loadgen", 20.0, 30.0)]),
            ]
        };
        fn name_of(i: usize) -> &'static str {
            ["", "rbh1", "rbh2", "rbh3"][i]
        }
        let mates = |me: usize| -> Vec<String> {
            (1..=3)
                .filter(|&i| i != me)
                .map(|i| name_of(i).to_string())
                .collect()
        };
        // As the disclosures say it ([`model::KERNEL_SHARED_WITH`]).
        let disclosures: Vec<model::HostDisclosure> = (1..=3)
            .map(|i| model::HostDisclosure {
                host: name_of(i).into(),
                role: "sut".into(),
                facts: [(
                    model::KERNEL_SHARED_WITH.to_string(),
                    model::Fact::known(mates(i).join(", ")),
                )]
                .into(),
            })
            .collect();
        let kernels = Disclosed::of(&disclosures);
        assert_eq!(kernels.mates("rbh2"), ["rbh1", "rbh3"]);
        let quiet = hosts(58.0);
        assert!(
            other_load_flags(&quiet, &quiet, Some("rbh1"), &[], &kernels).is_empty(),
            "{:?}",
            other_load_flags(&quiet, &quiet, Some("rbh1"), &[], &kernels)
        );
        // A spinner beside them on that kernel: said once, of the kernel, with whose
        // processes were counted as the test's.
        let busy = hosts(77.0);
        let f = other_load_flags(&busy, &busy, Some("rbh1"), &[], &kernels);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].message.contains(
                "host rbh1: other processes took 38% of one CPU while the test measured, on \
                 the kernel it shares with rbh2, rbh3 ("
            ) && f[0].message.contains("loadgen on rbh2"),
            "{}",
            f[0].message
        );
        // Its host where the export reads it (`warning:other_load@rbh1`).
        assert_eq!(f[0].host(), Some("rbh1"));
        // A generator's host that is not in the test's point still runs on the kernel.
        let f = other_load_flags(&busy[..1], &busy, Some("rbh1"), &[], &kernels);
        assert!(f[0].message.contains("for 160%"), "{}", f[0].message);
        // A server given with --target on that kernel is not watched: its CPU is the
        // test's own, and no name of the kernel is judged.
        let mut given = busy.clone();
        given[0].procs.clear();
        let f = other_load_flags(&given[1..], &given, Some("rbh1"), &[], &kernels);
        assert!(f.is_empty(), "{f:?}");
        // A generator's host lost during the test: its processes ran on the kernel past
        // its last sample, unwatched, so the kernel is not judged (they read as another's).
        let f = other_load_flags(&busy[..2], &busy[..2], Some("rbh1"), &["rbh3"], &kernels);
        assert!(f.is_empty(), "{f:?}");
        assert!(!other_load_flags(&busy[..2], &busy[..2], Some("rbh1"), &[], &kernels).is_empty());

        // A CPU online for 1 s of the 4 counts for that second, in the tasks and in the
        // CPUs they ran on: CPUs 0 and 1 half busy throughout and CPU 2 fully busy while
        // there ran tasks for 50 + 50 + 25 = 125% of one CPU on 2.25 CPUs (counted whole,
        // 200% on 3).
        let mut part = host(
            "part",
            vec![
                cpu(-1, 66.7, 0.0, 0.0),
                cpu(0, 50.0, 0.0, 0.0),
                cpu(1, 50.0, 0.0, 0.0),
                cpu(2, 100.0, 0.0, 0.0),
            ],
            vec![proc("loadgen", 40.0, 0.0)],
        );
        part.part_present = vec![model::PartPresent {
            cpu: Some(2),
            role: None,
            pid: None,
            present_s: 1.0,
        }];
        let f = judge_other_load(&[part], None, &[]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].message.contains(
                "other processes took 85% of one CPU while the test measured (its 2.2 CPUs \
                 ran tasks for 125%"
            ),
            "{}",
            f[0].message
        );
    }

    #[test]
    fn this_machine_is_named_by_its_hostname_in_flags() {
        let mut flags = vec![
            Flag::warning("other_load", "host local: other processes took 52%"),
            Flag::warning("steal", "host local (one kernel with rbh2): stolen"),
            Flag::warning("steal", "host rbh2: stolen"),
            Flag::warning("x", "host localhost2: its own name"),
        ];
        name_this_machine(&mut flags, "vm");
        let said: Vec<&str> = flags.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(
            said,
            [
                "host vm: other processes took 52%",
                "host vm (one kernel with rbh2): stolen",
                "host rbh2: stolen",
                "host localhost2: its own name"
            ]
        );
    }

    /// The idle power's flags of this machine name it by its hostname too: they said
    /// `host local` beside every other flag's `host vm`.
    #[test]
    fn this_machines_idle_power_flags_name_it_by_its_hostname() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let mut here = Stepped::new(hosts::LOCAL, t0);
        here.power_sources = vec!["meter:system".into()];
        let busy = |cpu| model::CpuUtil {
            usr_pct: 60.0,
            idle_pct: 40.0,
            ..model::CpuUtil::idle(cpu)
        };
        here.idle = Some(IdlePower {
            host: hosts::LOCAL.into(),
            duration_s: 5.0,
            power: Vec::new(),
            cpus: vec![busy(-1), busy(0), busy(1)],
            flags: Vec::new(),
        });
        let hosts: Vec<Arc<dyn Host>> = vec![Arc::new(here)];
        let disclosure = model::HostDisclosure {
            host: hosts::LOCAL.into(),
            role: "sut".into(),
            facts: [("os.hostname".to_string(), model::Fact::known("vm"))].into(),
        };
        let settings = TelemetrySettings {
            interval_s: 1.0,
            ..TelemetrySettings::default()
        };
        let t = Telemetry::start(&hosts, &settings, &[], true)
            .unwrap()
            .with_disclosures(&[disclosure]);
        let idle = t.measure_idle(5.0, false);
        let said: Vec<(&str, &str)> = idle[0]
            .flags
            .iter()
            .map(|f| (f.code.as_str(), f.message.as_str()))
            .collect();
        assert!(
            matches!(said[..], [("idle_not_idle", m)] if m.starts_with("host vm: while its idle")),
            "{said:?}"
        );
    }

    #[test]
    fn cpu_figures_over_too_short_a_time_are_flagged_per_host() {
        let mut sums = telemetry::sampler::summarize(&[
            sample("short", 1.0, 1.0, false, 50.0),
            sample("long", 1.0, 1.0, false, 50.0),
            sample("unknown", 1.0, 1.0, false, 50.0),
        ]);
        for s in &mut sums {
            s.whole_samples = true;
            s.covered_s = match s.host.as_str() {
                "short" => Some(0.06),
                "long" => Some(COARSE_CPU_S),
                _ => None,
            };
        }
        let flags = coarse_flags(&sums, "--duration");
        assert_eq!(flags.len(), 1, "{flags:?}");
        assert_eq!(flags[0].code, "cpu_coarse");
        let m = &flags[0].message;
        assert!(
            m.contains("host short") && m.contains("0.060 s") && m.contains("17 points"),
            "{m}"
        );
        // Just short of the threshold, it says so, not the threshold itself.
        let mut edge = sums[0].clone();
        edge.covered_s = Some(COARSE_CPU_S - 0.0004);
        let m = &coarse_flags(&[edge], "--duration")[0].message;
        assert!(m.contains("cover 0.499 s"), "{m}");
        // Parts of longer samples: their figures hold the time around the test, which
        // is what the warning then says (their ticks are not the test's).
        sums[0].whole_samples = false;
        let flags = coarse_flags(&sums, "--duration");
        assert_eq!(flags.len(), 1, "{flags:?}");
        let m = &flags[0].message;
        assert!(
            m.contains("host short") && m.contains("time around it") && !m.contains("points"),
            "{m}"
        );
        // The advice names the knobs of the workload measured (acceptance, s31: mem was
        // told of --duration and -n, which it refuses).
        let mem = "more --samples, or a larger --sample-ms";
        for whole in [true, false] {
            sums[0].whole_samples = whole;
            let m = &coarse_flags(&sums, mem)[0].message;
            assert!(m.contains(&format!("({mem})")) && !m.contains("-n"), "{m}");
        }
    }

    /// A host whose clock the test can move: its samples' clock began at `began`
    /// (controller clock), as its `sync_clock` reports, and its clock is `offset` ahead.
    /// Its take gives `take` (None: nothing), and `warm` is its warm-up mark.
    struct Stepped {
        name: &'static str,
        began: std::sync::Mutex<SystemTime>,
        offset: std::sync::Mutex<f64>,
        take: Option<Result<Vec<TelemetrySample>, String>>,
        /// What it gives a checkpoint (`telemetry_since`); with any, it has a mark.
        since: Vec<TelemetrySample>,
        warm: std::sync::Mutex<bool>,
        /// Whether it was in warm-up when its clock was measured (at a test's start).
        warm_at_sync: std::sync::Mutex<Option<bool>>,
        power_missing: Option<String>,
        power_sources: Vec<String>,
        idle: Option<IdlePower>,
    }

    impl Stepped {
        fn new(name: &'static str, began: SystemTime) -> Stepped {
            Stepped {
                name,
                began: std::sync::Mutex::new(began),
                offset: std::sync::Mutex::new(0.0),
                take: None,
                since: Vec::new(),
                warm: std::sync::Mutex::new(false),
                warm_at_sync: std::sync::Mutex::new(None),
                power_missing: None,
                power_sources: Vec::new(),
                idle: None,
            }
        }
    }

    impl Host for Stepped {
        fn name(&self) -> &str {
            self.name
        }
        fn address(&self) -> String {
            "stepped".into()
        }
        fn disclosure(&self, _: &str) -> anyhow::Result<model::HostDisclosure> {
            unreachable!()
        }
        fn start_service(
            &self,
            _: &str,
            _: &engine::workload::Params,
        ) -> anyhow::Result<engine::host::ServiceHandle> {
            unreachable!()
        }
        fn service_query(&self, _: u64, _: &str) -> anyhow::Result<serde_json::Value> {
            unreachable!()
        }
        fn service_exited(&self, _: u64) -> anyhow::Result<Option<String>> {
            unreachable!()
        }
        fn stop_service(&self, _: u64) {}
        fn drive(
            &self,
            _: &engine::host::DriverJob,
            _: SystemTime,
            _: &engine::workload::Progress,
        ) -> anyhow::Result<engine::host::DriverReport> {
            unreachable!()
        }
        fn interrupt(&self) {}
        fn telemetry_start(
            &self,
            _: &TelemetrySettings,
        ) -> anyhow::Result<engine::host::TelemetryInfo> {
            Ok(engine::host::TelemetryInfo {
                power_sources: self.power_sources.clone(),
                power_missing: self.power_missing.clone(),
                notes: self.power_missing.iter().cloned().collect(),
                ..engine::host::TelemetryInfo::default()
            })
        }
        fn sync_clock(&self) -> Option<SystemTime> {
            *self.warm_at_sync.lock().unwrap() = Some(*self.warm.lock().unwrap());
            Some(*self.began.lock().unwrap())
        }
        fn clock_offset_s(&self) -> f64 {
            *self.offset.lock().unwrap()
        }
        fn telemetry_take(&self) -> anyhow::Result<Vec<TelemetrySample>> {
            match &self.take {
                None => Ok(Vec::new()),
                Some(Ok(v)) => Ok(v.clone()),
                Some(Err(e)) => Err(anyhow::anyhow!("{e}")),
            }
        }
        fn telemetry_mark(&self) -> Option<u64> {
            (!self.since.is_empty()).then_some(0)
        }
        fn telemetry_since(&self, from: u64) -> Vec<TelemetrySample> {
            self.since.get(from as usize..).unwrap_or_default().to_vec()
        }
        fn set_warmup(&self, on: bool) {
            *self.warm.lock().unwrap() = on;
        }
        fn unwatch_servers(&self) {}
        fn measure_idle(&self, _: f64) -> anyhow::Result<Option<IdlePower>> {
            Ok(self.idle.clone())
        }
        fn run_commands(
            &self,
            _: &[String],
            _: engine::host::CommandsFor,
        ) -> anyhow::Result<Vec<engine::host::CommandRun>> {
            unreachable!()
        }
        fn shutdown(&self) {}
    }

    /// With --power-model nothing measured idle power, so W above idle was always absent.
    /// A host whose power only the model gives has the model's declared idle watts as
    /// its idle power, marked modelled; one with a measured source has it measured, and
    /// the model's idle beside when the model applies there too (a RAPL host: the
    /// headline under load is the model's, so its idle must be there to subtract); a
    /// host the model was not applied to (a load generator), or one that refused it, has
    /// none.
    #[test]
    fn the_power_models_declared_idle_is_the_idle_power_of_a_modelled_host() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let mut sut = Stepped::new("sut", t0);
        sut.power_sources = vec!["model:system".into()];
        let mut loadgen = Stepped::new("loadgen", t0);
        loadgen.power_sources = vec!["model:system".into()];
        let mut metered = Stepped::new("metered", t0);
        metered.power_sources = vec!["meter:system".into(), "model:system".into()];
        let meter = model::PowerSummary {
            source: "meter".into(),
            zone: "system".into(),
            mean_watts: 80.0,
            max_watts: 81.0,
            whole_system: true,
            modelled: false,
        };
        let metered_idle = IdlePower {
            host: "metered".into(),
            duration_s: 5.0,
            power: vec![meter],
            cpus: Vec::new(),
            flags: Vec::new(),
        };
        metered.idle = Some(metered_idle.clone());
        // RAPL (CPU and memory only) and the model: the model is the headline.
        let mut rapl = Stepped::new("rapl", t0);
        rapl.power_sources = vec!["rapl:package-0".into(), "model:system".into()];
        let package = model::PowerSummary {
            source: "rapl".into(),
            zone: "package-0".into(),
            mean_watts: 30.0,
            max_watts: 31.0,
            whole_system: false,
            modelled: false,
        };
        rapl.idle = Some(IdlePower {
            host: "rapl".into(),
            duration_s: 5.0,
            power: vec![package.clone()],
            cpus: Vec::new(),
            flags: Vec::new(),
        });
        // Given a model, and refused it (not among its sources).
        let refused = Stepped::new("refused", t0);
        let hosts: Vec<Arc<dyn Host>> = vec![
            Arc::new(sut),
            Arc::new(loadgen),
            Arc::new(metered),
            Arc::new(rapl),
            Arc::new(refused),
        ];
        let settings = TelemetrySettings {
            interval_s: 1.0,
            power_model: Some((95.5, 200.0)),
            ..TelemetrySettings::default()
        };
        let measured: Vec<String> = ["sut", "metered", "rapl", "refused"]
            .map(String::from)
            .to_vec();
        let t = Telemetry::start(&hosts, &settings, &measured, true).unwrap();
        let idle = t.measure_idle(5.0, false);
        let declared = model::PowerSummary {
            source: "model".into(),
            zone: "system".into(),
            mean_watts: 95.5,
            max_watts: 95.5,
            whole_system: true,
            modelled: true,
        };
        let modelled = IdlePower {
            host: "sut".into(),
            duration_s: 0.0,
            power: vec![declared.clone()],
            cpus: Vec::new(),
            flags: Vec::new(),
        };
        let with_model = |i: &IdlePower| IdlePower {
            power: [i.power.clone(), vec![declared.clone()]].concat(),
            ..i.clone()
        };
        let rapl_idle = IdlePower {
            host: "rapl".into(),
            duration_s: 5.0,
            power: vec![package.clone(), declared.clone()],
            cpus: Vec::new(),
            flags: Vec::new(),
        };
        assert_eq!(
            idle,
            vec![
                with_model(&metered_idle),
                rapl_idle.clone(),
                modelled.clone()
            ]
        );
        // Declared, not measured: --idle-power 0 does not take it away.
        let declared_only = t.measure_idle(0.0, false);
        assert_eq!(declared_only.len(), 3);
        assert!(declared_only.iter().all(|i| i.power == [declared.clone()]));
        // What the report subtracts: the model's idle, of the model's basis, on the
        // model's host and on the RAPL host, whose headline under load is the model's.
        let h = model::power::headline(&modelled.power).unwrap();
        assert!(h.modelled);
        assert_eq!(
            model::power::same_source_watts(&h, &idle[2].power),
            Some(95.5)
        );
        let under_load = model::power::headline(&[package, declared.clone()]).unwrap();
        assert!(under_load.modelled);
        assert_eq!(
            model::power::same_source_watts(&under_load, &rapl_idle.power),
            Some(95.5)
        );
        // Telemetry off: no power, no idle.
        let off = Telemetry::start(&hosts, &settings, &measured, false).unwrap();
        assert!(off.measure_idle(5.0, false).is_empty());
    }

    /// Each test is placed by where the host's clock stood as it began, and a clock that
    /// moved while a test ran flags that test.
    #[test]
    fn each_test_is_placed_by_the_clocks_at_its_start() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let host = Arc::new(Stepped::new("stepped", t0));
        *host.offset.lock().unwrap() = 3.5;
        let hosts: Vec<Arc<dyn Host>> = vec![host.clone()];
        let settings = TelemetrySettings {
            interval_s: 1.0,
            ..TelemetrySettings::default()
        };
        let t = Telemetry::start(&hosts, &settings, &[], true).unwrap();
        t.begin_step(0.0);
        assert_eq!(t.clocks().get("stepped"), Some(t0));
        t.end_step();
        assert!(t.clock_flags(&["stepped"]).is_empty());
        // Stepped 2 s forward between tests: the next test is placed by the new clock,
        // and nothing is flagged.
        let stepped = t0 + Duration::from_secs(2);
        *host.began.lock().unwrap() = stepped;
        t.begin_step(0.0);
        assert_eq!(t.clocks().get("stepped"), Some(stepped));
        t.end_step();
        assert!(t.clock_flags(&["stepped"]).is_empty());
        // A test during which `change` moved the host's clock: its flags.
        let during = |change: &dyn Fn()| {
            t.begin_step(0.0);
            change();
            t.end_step();
            t.clock_flags(&["stepped"])
        };
        // Back 0.3 s while a test ran: that test is flagged, by how far.
        let flags = during(&|| *host.began.lock().unwrap() = stepped - Duration::from_millis(300));
        assert_eq!(flags.len(), 1, "{flags:?}");
        assert_eq!(flags[0].code, "clock_moved");
        assert!(flags[0].message.contains("-300 ms"), "{}", flags[0].message);
        // A drift within the estimate's error is not.
        assert!(during(&|| *host.began.lock().unwrap() += Duration::from_millis(5)).is_empty());
        // The host's own clock stepped 1 s forward while a test ran: its samples (on its
        // monotonic clock) stay where they were, its offset moves, and so would the
        // timings its drivers read on its wall clock.
        let flags = during(&|| *host.offset.lock().unwrap() += 1.0);
        assert_eq!(flags.len(), 1, "{flags:?}");
        assert!(
            flags[0].message.contains("+1000 ms"),
            "{}",
            flags[0].message
        );
        // Telemetry off: the offsets are measured again all the same.
        let off = Telemetry::start(&hosts, &settings, &[], false).unwrap();
        *host.began.lock().unwrap() = t0 + Duration::from_secs(60);
        off.begin_step(0.0);
        assert_eq!(
            off.clocks().get("stepped"),
            Some(t0 + Duration::from_secs(60))
        );
    }

    /// A take that failed, or brought nothing back from a host that was sampling: that
    /// host's figures are named missing with the reason, and the result is flagged (the
    /// host used to be left out of the result, unsaid). Only for the point's hosts.
    #[test]
    fn a_host_whose_samples_did_not_come_back_is_missing_and_flagged() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let mut good = Stepped::new("a", t0);
        good.take = Some(Ok(vec![sample("a", 1.0, 1.0, false, 50.0)]));
        let mut failed = Stepped::new("b", t0);
        failed.take = Some(Err("b: bringing its telemetry back: no answer".into()));
        // Sampling, and nothing came back: not in this point.
        let quiet = Stepped::new("c", t0);
        let hosts: Vec<Arc<dyn Host>> = vec![Arc::new(good), Arc::new(failed), Arc::new(quiet)];
        let settings = TelemetrySettings {
            interval_s: 1.0,
            ..TelemetrySettings::default()
        };
        let t = Telemetry::start(&hosts, &settings, &[], true).unwrap();
        t.begin_step(0.0);
        let step = t.end_step();
        assert_eq!(step.samples.len(), 1);
        let named: Vec<&str> = step.missing.iter().map(|(h, _)| h.as_str()).collect();
        assert_eq!(named, ["b", "c"]);
        assert!(
            step.missing[0].1.contains("no answer"),
            "{:?}",
            step.missing
        );
        assert!(
            step.missing[1].1.contains("no sample"),
            "{:?}",
            step.missing
        );
        let fig = t.figures(&step, &[], &["a", "b"], false, None, "--duration");
        assert_eq!(fig.summary.len(), 1);
        assert_eq!(fig.summary[0].host, "a");
        assert_eq!(fig.missing.len(), 1, "{:?}", fig.missing);
        assert_eq!(fig.missing[0].name, "telemetry.b");
        assert!(fig.missing[0].reason.contains("no answer"));
        let warned: Vec<&Flag> = fig
            .flags
            .iter()
            .filter(|f| f.code == "telemetry_missing")
            .collect();
        assert_eq!(warned.len(), 1, "{:?}", fig.flags);
        assert!(warned[0].message.starts_with("host b:"));
        assert_eq!(warned[0].severity, model::Severity::Warning);
    }

    /// A host lost in the middle of a test keeps the samples its checkpoints brought,
    /// stored with the result, and is summarized nowhere (acceptance O, 2: they were
    /// dropped, and the store lost what it had held of the host).
    #[test]
    fn a_lost_hosts_samples_from_checkpoints_are_kept_and_not_summarized() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let mut good = Stepped::new("a", t0);
        good.take = Some(Ok(vec![sample("a", 1.0, 1.0, false, 50.0)]));
        let mut lost = Stepped::new("b", t0);
        lost.since = vec![
            sample("b", 1.0, 1.0, false, 40.0),
            sample("b", 2.0, 1.0, false, 45.0),
        ];
        lost.take = Some(Err("the link to b broke".into()));
        let hosts: Vec<Arc<dyn Host>> = vec![Arc::new(good), Arc::new(lost)];
        let settings = TelemetrySettings {
            interval_s: 1.0,
            ..TelemetrySettings::default()
        };
        let t = Telemetry::start(&hosts, &settings, &[], true).unwrap();
        t.begin_step(0.0);
        // A checkpoint brings b's samples so far.
        assert_eq!(t.so_far().samples.len(), 2);
        let step = t.end_step();
        let of_b: Vec<f64> = step
            .samples
            .iter()
            .filter(|s| s.host == "b")
            .map(|s| s.t_s)
            .collect();
        assert_eq!(of_b, [1.0, 2.0]);
        assert_eq!(step.missing.len(), 1, "{:?}", step.missing);
        let why = &step.missing[0].1;
        assert!(
            why.contains("the link to b broke")
                && why.contains(
                    "2 sample(s) up to 2.0 s into the run, taken at the test's checkpoints"
                ),
            "{why}"
        );
        let fig = t.figures(&step, &[], &["a", "b"], false, None, "--duration");
        let summarized: Vec<&str> = fig.summary.iter().map(|s| s.host.as_str()).collect();
        assert_eq!(summarized, ["a"]);
        assert_eq!(fig.missing[0].name, "telemetry.b");
        // Without a checkpoint before it was lost, there is nothing to keep.
        let mut bare = Stepped::new("c", t0);
        bare.take = Some(Err("no answer".into()));
        let t = Telemetry::start(&[Arc::new(bare) as Arc<dyn Host>], &settings, &[], true).unwrap();
        t.begin_step(0.0);
        let step = t.end_step();
        assert!(step.samples.is_empty());
        assert_eq!(step.missing[0].1, "no answer");
    }

    /// Four hosts without power: each host's "power missing" held all four hosts'
    /// reasons (about 1.9 KB), repeated per host and per test. Each has its own now.
    #[test]
    fn each_hosts_power_missing_reason_is_its_own() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let hosts: Vec<Arc<dyn Host>> = ["a", "b"]
            .into_iter()
            .map(|name| {
                let mut h = Stepped::new(name, t0);
                h.power_missing = Some(format!("no power source found: no RAPL on {name}"));
                h.take = Some(Ok(vec![sample(name, 1.0, 1.0, false, 50.0)]));
                Arc::new(h) as Arc<dyn Host>
            })
            .collect();
        let settings = TelemetrySettings {
            interval_s: 1.0,
            ..TelemetrySettings::default()
        };
        let t = Telemetry::start(&hosts, &settings, &[], true).unwrap();
        t.begin_step(0.0);
        let step = t.end_step();
        let sums = t.summarize(&step.samples);
        assert_eq!(sums.len(), 2);
        for s in &sums {
            assert_eq!(
                s.power_missing.as_deref(),
                Some(format!("no power source found: no RAPL on {}", s.host).as_str())
            );
        }
    }

    /// Steal, coarse CPU and window flags are of the hosts in the test's roles only: the
    /// controller (or a net matrix's third host) sampled too, and its figures say
    /// nothing of this test.
    #[test]
    fn only_the_points_hosts_flag_a_result() {
        let t = Telemetry::start(&[], &TelemetrySettings::default(), &[], true).unwrap();
        let mut stolen = sample("controller", 0.1, 0.1, false, 50.0);
        stolen.cpus[0].steal_pct = 20.0;
        stolen.cpus[0].idle_pct = 30.0;
        let step = StepSamples {
            samples: vec![stolen, sample("sut", 2.0, 2.0, false, 50.0)],
            missing: vec![("third".into(), "no answer".into())],
        };
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        // Spans the clocks cannot place (no clock known): a window flag per host.
        let spans = [(t0, t0 + Duration::from_secs(1))];
        let fig = t.figures(&step, &spans, &["sut"], false, None, "--duration");
        let codes: Vec<&str> = fig.flags.iter().map(|f| f.code.as_str()).collect();
        assert_eq!(codes, ["telemetry_window"], "{:?}", fig.flags);
        assert!(fig.flags[0].message.starts_with("host sut:"));
        assert!(fig.flags[0].message.contains("a clock stepped"));
        assert!(fig.missing.is_empty());
        // A test stopped early (the acceptance tester's oltp, Ctrl-C in its ramp-up):
        // the same flag, blaming the stop, not a clock.
        let stopped = t.figures(&step, &spans, &["sut"], true, None, "--duration");
        assert_eq!(stopped.flags.len(), 1, "{:?}", stopped.flags);
        let m = &stopped.flags[0].message;
        assert!(m.starts_with("host sut:") && !m.contains("clock"), "{m}");
        assert!(m.contains("the test was stopped before"), "{m}");
        // Both hosts' figures are still summarised.
        assert_eq!(fig.summary.len(), 2);
        // The controller in the roles (a single-host run): its flags count.
        let fig = t.figures(
            &step,
            &spans,
            &["sut", "controller", "third"],
            false,
            None,
            "--duration",
        );
        let mut codes: Vec<&str> = fig.flags.iter().map(|f| f.code.as_str()).collect();
        codes.sort();
        assert_eq!(
            codes,
            [
                "cpu_coarse",
                "steal",
                "telemetry_missing",
                "telemetry_window",
                "telemetry_window"
            ],
            "{:?}",
            fig.flags
        );
    }

    /// A test shorter than the one before's warm-up: the earlier test's timer, still
    /// asleep, no longer ends the next test's warm-up early.
    #[test]
    fn an_earlier_tests_warmup_timer_does_not_end_the_next_ones() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let host = Arc::new(Stepped::new("h", t0));
        let hosts: Vec<Arc<dyn Host>> = vec![host.clone()];
        let settings = TelemetrySettings {
            interval_s: 1.0,
            ..TelemetrySettings::default()
        };
        let t = Telemetry::start(&hosts, &settings, &[], true).unwrap();
        let start = std::time::Instant::now();
        t.begin_step(0.3);
        assert!(*host.warm.lock().unwrap());
        // Warm-up from before the clocks are measured: what is sampled meanwhile is not a
        // stray sample of the test outside its warm-up (acceptance K, 12).
        assert_eq!(*host.warm_at_sync.lock().unwrap(), Some(true));
        std::thread::sleep(Duration::from_millis(50));
        t.end_step();
        // The next test, with a warm-up of 3 s (long beside the first timer's 0.3 s, so
        // that a busy machine's late wake-up cannot pass its end): until about 3.05 s.
        t.begin_step(3.0);
        std::thread::sleep(Duration::from_millis(500).saturating_sub(start.elapsed()));
        assert!(
            *host.warm.lock().unwrap(),
            "the first test's timer ended the second test's warm-up"
        );
        std::thread::sleep(Duration::from_millis(4500).saturating_sub(start.elapsed()));
        assert!(!*host.warm.lock().unwrap(), "the warm-up never ended");
    }

    /// A meter that answers later than a tick waits lagged the load by up to an interval
    /// with no flag: its readings say how late they were, and the test says so.
    #[test]
    fn late_meter_readings_are_flagged_with_how_late() {
        let reading = meter_reading;
        let mut a = sample("sut", 1.0, 1.0, false, 50.0);
        a.power = vec![reading(Some(0.75))];
        let mut b = sample("sut", 2.0, 1.0, false, 50.0);
        b.power = vec![reading(Some(0.5))];
        let flags = meter_late_flags(&[a.clone(), b]);
        assert_eq!(flags.len(), 1, "{flags:?}");
        assert_eq!(flags[0].code, "meter_late");
        assert!(flags[0].message.contains("2 meter readings"), "{flags:?}");
        assert!(flags[0].message.contains("0.75 s"), "{flags:?}");
        a.power = vec![reading(None)];
        assert!(meter_late_flags(&[a]).is_empty());
    }

    /// A level whose meter failed on 9 of its 10 ticks published one reading's watts as
    /// the level's power, with no word of it: under half its window covered, it is
    /// missing; with most of it covered, it stands.
    #[test]
    fn a_levels_power_covering_under_half_its_window_is_left_out() {
        let reading = meter_reading(None);
        let samples: Vec<TelemetrySample> = (1..=10)
            .map(|i| {
                let mut s = sample("sut", i as f64, 1.0, false, 50.0);
                if i == 3 {
                    s.power = vec![reading.clone()];
                } else {
                    s.power_failed = vec!["meter: exited 1".into()];
                }
                s
            })
            .collect();
        let m = window_metrics(&samples);
        assert!(m.iter().any(|m| m.name == "cpu_busy_pct"), "{m:?}");
        assert!(!m.iter().any(|m| m.name == "power_w"), "{m:?}");
        let mostly: Vec<TelemetrySample> = samples
            .into_iter()
            .enumerate()
            .map(|(i, mut s)| {
                if i > 0 {
                    s.power = vec![reading.clone()];
                    s.power_failed.clear();
                }
                s
            })
            .collect();
        let m = window_metrics(&mostly);
        assert!(
            m.iter().any(|m| m.name == "power_w" && m.value == 300.0),
            "{m:?}"
        );
        // Another source failing on every tick is not the meter's gap: a level whose
        // meter read throughout lost its power to an ipmitool that never answered.
        let beside: Vec<TelemetrySample> = mostly
            .into_iter()
            .map(|mut s| {
                s.power = vec![reading.clone()];
                s.power_failed = vec!["ipmi-dcmi: no answer".into()];
                s
            })
            .collect();
        let m = window_metrics(&beside);
        assert!(
            m.iter().any(|m| m.name == "power_w" && m.value == 300.0),
            "{m:?}"
        );
    }

    /// A step's host counted busy for less than its own processes ran (two CPUs at 3.5%,
    /// its server and generator at 30% of one) gives by how much, for the step's warning;
    /// one that counted them gives nothing.
    #[test]
    fn a_windows_ticks_below_its_processes_are_measured() {
        let with = |busy: f64| -> Vec<TelemetrySample> {
            (1..=2)
                .map(|i| {
                    let mut s = sample("sut", i as f64, 1.0, false, busy);
                    s.cpus.extend((0..2).map(|c| model::CpuUtil {
                        usr_pct: busy,
                        idle_pct: 100.0 - busy,
                        ..model::CpuUtil::idle(c)
                    }));
                    s.procs = ["server:0", "loadgen"]
                        .iter()
                        .map(|role| model::ProcCpu {
                            role: role.to_string(),
                            pid: 1 + role.len() as u32,
                            usr_pct: 10.0,
                            sys_pct: 5.0,
                            with_descendants: false,
                        })
                        .collect();
                    s
                })
                .collect()
        };
        let m = window_metrics(&with(3.5));
        let missed = m.iter().find(|m| m.name == TICKS_MISSED).expect("{m:?}");
        assert!((missed.value - 23.0).abs() < 1e-9, "{m:?}");
        let m = window_metrics(&with(15.0));
        assert!(m.iter().all(|m| m.name != TICKS_MISSED), "{m:?}");
        // Busy while its processes are too: no other programs' rest to speak of.
        let at_rest = engine::capacity_tests::OTHERS_AT_REST;
        let m = window_metrics(&with(60.0));
        assert!(m.iter().all(|m| m.name != at_rest), "{m:?}");
        // Its processes at rest (active idle), its CPUs 40% busy: 80% of one CPU others'.
        let mut resting = with(40.0);
        for s in &mut resting {
            for p in &mut s.procs {
                p.usr_pct = 0.25;
                p.sys_pct = 0.0;
            }
        }
        let m = window_metrics(&resting);
        let others = m.iter().find(|m| m.name == at_rest).expect("{m:?}");
        assert!((others.value - 79.5).abs() < 1e-9, "{m:?}");
    }

    /// A level's window counts its samples whatever their warm-up mark, as a test's
    /// measured part does: a sample marked warm-up inside the window was left out of the
    /// level's CPU and power.
    #[test]
    fn a_windows_samples_count_whatever_their_warmup_mark() {
        let samples = vec![
            sample("sut", 1.0, 1.0, true, 10.0),
            sample("sut", 2.0, 1.0, true, 40.0),
            sample("sut", 3.0, 1.0, false, 80.0),
        ];
        let kept = window_samples(samples, Some((1.0, 3.0)));
        assert_eq!(kept.len(), 2, "{kept:?}");
        assert!(kept.iter().all(|s| !s.warmup));
        let m = window_metrics(&kept);
        let busy = m.iter().find(|m| m.name == "cpu_busy_pct").unwrap();
        assert_eq!(busy.value, 60.0);
    }
}
