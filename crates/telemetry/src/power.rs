//! Power sources: every way this host can tell how many watts it draws, each detected,
//! named, and reported with its provenance (METHODS.md section 7).
//!
//! * `rapl`: Linux powercap `intel-rapl:*` zones (packages, their core/uncore/dram
//!   subzones, psys; AMD Zen exposes the same tree). `energy_uj` deltas over wall time,
//!   with wraparound at `max_energy_range_uj`. Since CVE-2020-8694 `energy_uj` is
//!   root-only; that case gets its own note saying what to do.
//! * `ipmi-dcmi`: `ipmitool dcmi power reading`, the BMC's whole-server figure
//!   (instantaneous, integer watts), read once per sample.
//! * `hwmon`: `power*_input`/`power*_average` (µW, instantaneous) and `energy*_input`
//!   (µJ, cumulative) of any hwmon device; the ACPI power meter is whole-system.
//! * `meter`: a user command printing watts (a wall meter, a PDU query), once per sample.
//! * `model`: a declared `idle_w`..`max_w` line over the measured all-CPU busy %, marked
//!   `modelled` so it is never mistaken for a measurement.
//!
//! RAPL and hwmon energy counters need two readings: [`PowerSources::open`] takes the
//! baseline, so the first sample already carries their mean watts since then.

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The headline power rule is the model's, so that the sampler, the report and the TCO
/// calculator pick the same source; re-exported under the name the sampler used.
pub use model::power::{headline as headline_power, HeadlinePower};

use model::PowerReading;

use crate::parse::{parse_dcmi_power_reading, parse_meter_watts, DcmiReading};
use crate::rates::energy_delta;

/// A declared power model: watts grow linearly from `idle_w` at 0 % busy to `max_w` at
/// 100 % busy (all-CPU busy % as mpstat computes it).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PowerModel {
    pub idle_w: f64,
    pub max_w: f64,
}

impl PowerModel {
    /// Watts at `busy_pct` (clamped to 0..=100).
    pub fn watts(&self, busy_pct: f64) -> f64 {
        let b = busy_pct.clamp(0.0, 100.0) / 100.0;
        self.idle_w + (self.max_w - self.idle_w) * b
    }
}

/// Where to look for power, as plain data.
#[derive(Debug, Clone, PartialEq)]
pub struct PowerConfig {
    /// `/sys/class/powercap` on a live host.
    pub powercap_root: PathBuf,
    /// `/sys/class/hwmon` on a live host.
    pub hwmon_root: PathBuf,
    /// Command prefix for ipmitool (`ipmitool`, `sudo ipmitool -I lanplus -H bmc -U u -E`);
    /// ` dcmi power reading` is appended. None: do not try IPMI.
    pub ipmitool: Option<String>,
    /// Shell command printing the current watts (one number alone on its output: anything
    /// else is refused). None: no meter.
    pub meter_command: Option<String>,
    /// Declared model used when asked (reported as `modelled`).
    pub model: Option<PowerModel>,
}

impl PowerConfig {
    /// This host: `/sys/class/powercap`, `/sys/class/hwmon`, ipmitool if a local BMC
    /// device exists, no meter, no model.
    pub fn local() -> Self {
        Self::under_sys(Path::new("/sys"))
    }

    /// Same as [`PowerConfig::local`] with sysfs at `sys_root` (fixture trees).
    pub fn under_sys(sys_root: &Path) -> Self {
        PowerConfig {
            powercap_root: sys_root.join("class/powercap"),
            hwmon_root: sys_root.join("class/hwmon"),
            ipmitool: Some("ipmitool".to_string()),
            meter_command: None,
            model: None,
        }
    }
}

impl Default for PowerConfig {
    fn default() -> Self {
        Self::local()
    }
}

/// What [`detect_power`] found: the sources that gave a reading, and why others did not.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PowerDetection {
    /// `rapl:package-0`, `rapl:dram-0`, `ipmi-dcmi:system`, `hwmon:power_meter/power1`,
    /// `meter:system`, `model:system`.
    pub sources: Vec<String>,
    /// Those of `sources` that measure the whole system (IPMI DCMI, an ACPI power meter,
    /// a meter command), not a component (RAPL, another hwmon sensor) nor the model.
    #[serde(default)]
    pub whole_system: Vec<String>,
    /// Why a kind of source is absent or unreadable, with what to do about it.
    pub notes: Vec<String>,
}

impl PowerDetection {
    /// One line for a summary's `power_missing` when nothing measures power.
    pub fn missing_reason(&self) -> String {
        if self.notes.is_empty() {
            "no power source found".to_string()
        } else {
            format!("no power source found: {}", self.notes.join("; "))
        }
    }
}

/// Probe every configured source once and say what works.
pub fn detect_power(cfg: &PowerConfig) -> PowerDetection {
    let (_, det) = PowerSources::open(cfg);
    det
}

/// Why reading a powercap or hwmon file failed, in words a user can act on.
pub fn describe_read_error(path: &Path, e: &io::Error) -> String {
    if e.kind() == io::ErrorKind::PermissionDenied {
        format!(
            "{} exists but is not readable: RAPL energy counters are root-only since \
             CVE-2020-8694 (kernel 5.10 and backports); run rackbench as root, or \
             `sudo chmod 0444 {}` (re-opens the PLATYPUS side channel)",
            path.display(),
            path.display()
        )
    } else {
        format!("{} could not be read: {e}", path.display())
    }
}

#[derive(Debug)]
struct RaplZone {
    energy_path: PathBuf,
    label: String,
    max_range_uj: Option<u64>,
    last: Option<(u64, Instant)>,
}

#[derive(Debug)]
enum HwmonKind {
    /// Instantaneous, microwatts.
    PowerUw,
    /// Cumulative, microjoules.
    EnergyUj { last: Option<(u64, Instant)> },
}

#[derive(Debug)]
struct HwmonSensor {
    path: PathBuf,
    zone: String,
    whole_system: bool,
    kind: HwmonKind,
}

/// The live power sources of one host, holding the previous energy readings.
#[derive(Debug)]
pub struct PowerSources {
    rapl: Vec<RaplZone>,
    hwmon: Vec<HwmonSensor>,
    /// ipmitool's and the meter's commands, each run on a thread of its own.
    ipmitool: Option<CommandReader>,
    meter: Option<CommandReader>,
    /// How long a tick waits for a command's answer (see [`PowerSources::set_meter_budget`]).
    meter_budget: Duration,
    /// When the current window began (see [`PowerSources::begin_window`]).
    window_start: Instant,
    model: Option<PowerModel>,
    /// Runtime failures (a meter that stopped answering), distinct, oldest first.
    errors: Vec<String>,
    /// The failures of the last [`PowerSources::read`], one per source that gave nothing.
    last_failed: Vec<String>,
}

/// How long ipmitool or a meter command may take before the reading is dropped.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(5);

/// The most one RAPL zone is taken to draw, to tell whether its counter can have wrapped
/// more than once between two reads (it counts modulo `max_energy_range_uj`, so a second
/// wrap is invisible and the interval reads low by a whole range). The largest server
/// packages are rated 500 W (EPYC 9005, Xeon 6900P): twice that is no package's or
/// DRAM's draw, and still lets AMD's and Intel DRAM's 65.5 kJ range span 65 s between
/// reads (Intel packages' 262 kJ, 262 s).
pub const RAPL_ZONE_MAX_W: f64 = 1000.0;

/// At most this many distinct runtime errors are kept (a failing meter repeats itself).
const MAX_ERRORS: usize = 16;

impl PowerSources {
    /// Discover the sources `cfg` describes; each that reads once is kept. Energy
    /// counters get their baseline now.
    pub fn open(cfg: &PowerConfig) -> (PowerSources, PowerDetection) {
        let mut det = PowerDetection::default();
        let now = Instant::now();
        let rapl = open_rapl(&cfg.powercap_root, now, &mut det);
        let hwmon = open_hwmon(&cfg.hwmon_root, now, &mut det);

        let ipmitool = match &cfg.ipmitool {
            None => {
                det.notes
                    .push("ipmi-dcmi: not tried (no ipmitool command configured)".into());
                None
            }
            Some(cmd) if cmd == "ipmitool" && !local_bmc_present() => {
                det.notes.push(
                    "ipmi-dcmi: no local BMC device (/dev/ipmi0); load it with \
                     `modprobe ipmi_devintf ipmi_si`, or give a remote ipmitool command"
                        .into(),
                );
                None
            }
            Some(cmd) => match ipmi_reading(cmd) {
                Ok(r) => {
                    if r.activated == Some(false) {
                        det.notes.push(format!(
                            "ipmi-dcmi: the BMC reads {} W but says `Power reading state \
                             is: deactivated`; taken as live, as some BMCs (OpenBMC's) \
                             never set that state",
                            r.instantaneous_w
                        ));
                    }
                    det.sources.push("ipmi-dcmi:system".into());
                    det.whole_system.push("ipmi-dcmi:system".into());
                    Some(CommandReader::start(cmd, read_ipmi))
                }
                Err(e) => {
                    det.notes.push(format!("ipmi-dcmi: {e}"));
                    None
                }
            },
        };

        let meter = match &cfg.meter_command {
            None => {
                det.notes
                    .push("meter: none configured (give a command that prints watts)".into());
                None
            }
            Some(cmd) => match read_meter(cmd) {
                Ok(_) => {
                    det.sources.push("meter:system".into());
                    det.whole_system.push("meter:system".into());
                    Some(CommandReader::start(cmd, read_meter))
                }
                Err(e) => {
                    det.notes.push(format!("meter: {e}"));
                    None
                }
            },
        };

        let model = match cfg.model {
            Some(m) if m.idle_w.is_finite() && m.max_w.is_finite() && m.idle_w >= 0.0 => {
                det.sources.push("model:system".into());
                Some(m)
            }
            Some(m) => {
                det.notes
                    .push(format!("model: ignored, not a valid power model: {m:?}"));
                None
            }
            None => None,
        };

        (
            PowerSources {
                rapl,
                hwmon,
                ipmitool,
                meter,
                meter_budget: COMMAND_TIMEOUT,
                window_start: now,
                model,
                errors: Vec::new(),
                last_failed: Vec::new(),
            },
            det,
        )
    }

    /// True when no source is left.
    pub fn is_empty(&self) -> bool {
        self.rapl.is_empty()
            && self.hwmon.is_empty()
            && self.ipmitool.is_none()
            && self.meter.is_none()
            && self.model.is_none()
    }

    /// Runtime failures seen so far (distinct messages).
    pub fn errors(&self) -> &[String] {
        &self.errors
    }

    /// The failures of the last [`PowerSources::read`]: one message per source that was
    /// due and gave no reading (a gap in its series).
    pub fn last_failed(&self) -> &[String] {
        &self.last_failed
    }

    /// How long a reading waits for the meter's or ipmitool's command: the sampler gives
    /// a quarter of its interval, so one that hangs (a BMC that does not answer) costs
    /// each tick that much at most once, and nothing while it stays hung (default:
    /// [`COMMAND_TIMEOUT`]).
    pub fn set_meter_budget(&mut self, budget: Duration) {
        self.meter_budget = budget.min(COMMAND_TIMEOUT);
    }

    /// A window of samples begins at `at` (a test's start or end, a warm-up's, a mark):
    /// an answer from the meter or ipmitool to a question asked before it is of the time
    /// before, and is dropped as a gap instead of counting as the window's first reading.
    pub fn begin_window(&mut self, at: Instant) {
        self.window_start = at;
    }

    fn note_error(&mut self, e: String) {
        if self.errors.len() < MAX_ERRORS && !self.errors.contains(&e) {
            self.errors.push(e);
        }
    }

    /// Read every source at `now`. Energy counters give the mean watts since their
    /// previous reading; instantaneous sources give their current value, and are read
    /// only with `instants` (a sampler's own tick, not an interval a test's end closed
    /// after its load stopped). `busy_pct` is the all-CPU busy % of the interval, for
    /// the power model.
    pub fn read(
        &mut self,
        now: Instant,
        busy_pct: Option<f64>,
        instants: bool,
    ) -> Vec<PowerReading> {
        let mut out = Vec::new();
        let mut errors = Vec::new();
        for z in &mut self.rapl {
            match read_u64(&z.energy_path) {
                Ok(e) => {
                    if let Some((prev, t)) = z.last {
                        let dt = now.saturating_duration_since(t).as_secs_f64();
                        let holds_s = z.max_range_uj.map(|m| m as f64 / 1e6 / RAPL_ZONE_MAX_W);
                        match energy_delta(prev, e, z.max_range_uj) {
                            // Two wraps read as one, or none: low by a whole range each.
                            _ if holds_s.is_some_and(|h| dt > h) => errors.push(format!(
                                "rapl {}: {dt:.0} s between two reads of its counter is more \
                                 than its range ({} µJ) holds at {RAPL_ZONE_MAX_W} W ({:.0} \
                                 s), so it may have wrapped more than once and the energy is \
                                 unknown; interval dropped (use a --telemetry-interval under \
                                 that)",
                                z.label,
                                z.max_range_uj.unwrap_or_default(),
                                holds_s.unwrap_or_default()
                            )),
                            Some(d) if dt > 0.0 => out.push(PowerReading {
                                source: "rapl".into(),
                                zone: z.label.clone(),
                                watts: d as f64 / 1e6 / dt,
                                whole_system: false,
                                modelled: false,
                                instantaneous: false,
                                late_s: None,
                            }),
                            Some(_) => {}
                            None => errors.push(format!(
                                "rapl {}: counter went from {prev} to {e} µJ with range {:?}; \
                                 interval dropped",
                                z.label, z.max_range_uj
                            )),
                        }
                    }
                    z.last = Some((e, now));
                }
                Err(err) => errors.push(describe_read_error(&z.energy_path, &err)),
            }
        }
        for s in &mut self.hwmon {
            match &mut s.kind {
                HwmonKind::PowerUw if !instants => {}
                HwmonKind::PowerUw => match read_u64(&s.path) {
                    // A whole system drawing nothing is a meter reporting nothing (a
                    // `--power-meter` printing 0 is refused likewise): a failed reading,
                    // never a measured 0 W.
                    Ok(0) if s.whole_system => errors.push(format!(
                        "hwmon {}: read 0 W for the whole system, which a running system \
                         cannot draw (the sensor reports nothing); reading dropped",
                        s.zone
                    )),
                    Ok(uw) => out.push(PowerReading {
                        source: "hwmon".into(),
                        zone: s.zone.clone(),
                        watts: uw as f64 / 1e6,
                        whole_system: s.whole_system,
                        modelled: false,
                        instantaneous: true,
                        late_s: None,
                    }),
                    Err(e) => errors.push(describe_read_error(&s.path, &e)),
                },
                HwmonKind::EnergyUj { last } => match read_u64(&s.path) {
                    Ok(e) => {
                        if let Some((prev, t)) = *last {
                            let dt = now.saturating_duration_since(t).as_secs_f64();
                            // hwmon documents no range: a backwards step is a reset, and
                            // its interval is said dropped as RAPL's is (it went unsaid).
                            if e < prev {
                                errors.push(format!(
                                    "hwmon {}: counter went back from {prev} to {e} µJ (a \
                                     reset); interval dropped",
                                    s.zone
                                ));
                            } else if dt > 0.0 {
                                out.push(PowerReading {
                                    source: "hwmon".into(),
                                    zone: s.zone.clone(),
                                    watts: (e - prev) as f64 / 1e6 / dt,
                                    whole_system: s.whole_system,
                                    modelled: false,
                                    instantaneous: false,
                                    late_s: None,
                                });
                            }
                        }
                        *last = Some((e, now));
                    }
                    Err(err) => errors.push(describe_read_error(&s.path, &err)),
                },
            }
        }
        let (budget, window) = (self.meter_budget, self.window_start);
        let commands = [
            ("ipmi-dcmi", &mut self.ipmitool),
            ("meter", &mut self.meter),
        ];
        for (source, reader) in commands {
            let Some(r) = reader.as_mut().filter(|_| instants) else {
                continue;
            };
            match r.read(budget) {
                // Asked before the window began (a test's or a level's start, a warm-up's
                // end): a figure of the time before it, which the window's first tick
                // took as its own (a test at 300 W after 150 W of setup read 262.5 W).
                Ok((_, Some(asked))) if asked < window => errors.push(format!(
                    "{source}: `{}` answers late (this answer came {} ms after it was \
                     asked, a tick waits {} ms), and it was asked before this window began \
                     (a test's start or end, a warm-up's, a level's): it is not this \
                     window's, and this tick has no reading; make it answer faster or raise \
                     --telemetry-interval",
                    model::redact_secrets(&r.cmd),
                    now.saturating_duration_since(asked).as_millis(),
                    budget.as_millis()
                )),
                Ok((w, asked)) => out.push(PowerReading {
                    source: source.into(),
                    zone: "system".into(),
                    watts: w,
                    whole_system: true,
                    modelled: false,
                    instantaneous: true,
                    late_s: asked.map(|a| now.saturating_duration_since(a).as_secs_f64()),
                }),
                Err(e) => errors.push(format!("{source}: {e}")),
            }
        }
        if let (Some(m), Some(b)) = (self.model, busy_pct) {
            out.push(PowerReading {
                source: "model".into(),
                zone: "system".into(),
                watts: m.watts(b),
                whole_system: true,
                modelled: true,
                instantaneous: false,
                late_s: None,
            });
        }
        self.last_failed.clone_from(&errors);
        for e in errors {
            self.note_error(e);
        }
        out
    }
}

fn read_u64(path: &Path) -> io::Result<u64> {
    let s = std::fs::read_to_string(path)?;
    s.trim().parse().map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("not a number: {:?}", s.trim()),
        )
    })
}

/// `intel-rapl:<pkg>[:<sub>]` directories under `root`, flat (`/sys/class/powercap`) or
/// nested (`.../intel-rapl/intel-rapl:0/intel-rapl:0:0`), each once, sorted.
fn find_rapl_dirs(root: &Path) -> Vec<(String, PathBuf)> {
    fn walk(dir: &Path, depth: u32, out: &mut Vec<(String, PathBuf)>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            // `intel-rapl-mmio:*` duplicates the package zone through another interface.
            let is_zone = name.starts_with("intel-rapl:");
            if is_zone && !out.iter().any(|(n, _)| *n == name) {
                out.push((name.clone(), e.path()));
            }
            if depth < 3 && (is_zone || name == "intel-rapl") {
                walk(&e.path(), depth + 1, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(root, 0, &mut out);
    out.sort();
    out
}

fn rapl_label(id: &str, name: Option<&str>) -> String {
    // id: intel-rapl:<pkg>[:<sub>]
    let parts: Vec<&str> = id.split(':').collect();
    let pkg = parts.get(1).copied().unwrap_or("?");
    match name {
        Some(n) if n.starts_with("package") || n == "psys" => n.to_string(),
        Some(n) if !n.is_empty() => format!("{n}-{pkg}"),
        _ => id.to_string(),
    }
}

fn open_rapl(root: &Path, now: Instant, det: &mut PowerDetection) -> Vec<RaplZone> {
    let dirs = find_rapl_dirs(root);
    if dirs.is_empty() {
        det.notes.push(format!(
            "rapl: no {}/intel-rapl:* zones (not an Intel/AMD CPU with the powercap \
             driver, a kernel without intel_rapl, or a VM)",
            root.display()
        ));
        return Vec::new();
    }
    let mut zones = Vec::new();
    for (id, dir) in dirs {
        let name = std::fs::read_to_string(dir.join("name"))
            .ok()
            .map(|s| s.trim().to_string());
        let label = rapl_label(&id, name.as_deref());
        let energy_path = dir.join("energy_uj");
        match read_u64(&energy_path) {
            Ok(e) => {
                let max_range_uj = read_u64(&dir.join("max_energy_range_uj")).ok();
                det.sources.push(format!("rapl:{label}"));
                zones.push(RaplZone {
                    energy_path,
                    label,
                    max_range_uj,
                    last: Some((e, now)),
                });
            }
            Err(e) => det.notes.push(format!(
                "rapl {label}: {}",
                describe_read_error(&energy_path, &e)
            )),
        }
    }
    zones
}

fn open_hwmon(root: &Path, now: Instant, det: &mut PowerDetection) -> Vec<HwmonSensor> {
    let mut sensors = Vec::new();
    let mut devs: Vec<PathBuf> = match std::fs::read_dir(root) {
        Ok(rd) => rd.flatten().map(|e| e.path()).collect(),
        Err(_) => Vec::new(),
    };
    devs.sort();
    for dev in devs {
        let dev_name = std::fs::read_to_string(dev.join("name"))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| {
                dev.file_name()
                    .map(|n| n.to_string_lossy().to_string())
                    .unwrap_or_default()
            });
        let Ok(rd) = std::fs::read_dir(&dev) else {
            continue;
        };
        let mut files: Vec<String> = rd
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string())
            .collect();
        files.sort();
        for f in &files {
            let (chan, is_energy) = if let Some(c) =
                f.strip_suffix("_input").filter(|c| c.starts_with("power"))
            {
                (c.to_string(), false)
            } else if let Some(c) = f
                .strip_suffix("_average")
                .filter(|c| c.starts_with("power"))
            {
                // The ACPI power meter exposes power1_average rather than _input.
                if files.contains(&format!("{c}_input")) {
                    continue;
                }
                (c.to_string(), false)
            } else if let Some(c) = f.strip_suffix("_input").filter(|c| c.starts_with("energy")) {
                (c.to_string(), true)
            } else {
                continue;
            };
            let label = std::fs::read_to_string(dev.join(format!("{chan}_label")))
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| chan.clone());
            let zone = format!("{dev_name}/{label}");
            let path = dev.join(f);
            // The ACPI power meter (`acpi_power_meter`, hwmon name `power_meter`) measures
            // the whole system by definition; any other hwmon sensor is a component.
            let whole_system = dev_name == "power_meter";
            match read_u64(&path) {
                // A whole-system meter reading 0 W reports nothing: no source (beside it a
                // --power-model was refused, and each of its readings then dropped).
                Ok(0) if whole_system && !is_energy => det.notes.push(format!(
                    "hwmon {zone}: reads 0 W for the whole system, which a running system \
                     cannot draw (the sensor reports nothing); not used"
                )),
                Ok(v) => {
                    det.sources.push(format!("hwmon:{zone}"));
                    if whole_system {
                        det.whole_system.push(format!("hwmon:{zone}"));
                    }
                    let kind = if is_energy {
                        HwmonKind::EnergyUj {
                            last: Some((v, now)),
                        }
                    } else {
                        HwmonKind::PowerUw
                    };
                    sensors.push(HwmonSensor {
                        path,
                        zone,
                        whole_system,
                        kind,
                    });
                }
                Err(e) => det
                    .notes
                    .push(format!("hwmon {zone}: {}", describe_read_error(&path, &e))),
            }
        }
    }
    // Two devices of one driver (two GPUs' `amdgpu/PPT`, two PSUs' `pin`) gave one zone,
    // and the summary, which keys by zone, averaged them as one sensor: such zones are
    // told apart by their device (`amdgpu@0000:03:00.0/PPT`: the address its `device`
    // link names, the same after a reboot, where the `hwmonN` number can change and two
    // runs' zones then would not match; `hwmonN` where there is no such link). The others
    // keep their name.
    let zones: Vec<String> = sensors.iter().map(|s| s.zone.clone()).collect();
    for s in &mut sensors {
        if zones.iter().filter(|z| **z == s.zone).count() < 2 {
            continue;
        }
        let dir = s.path.parent();
        let device = dir.and_then(|d| std::fs::read_link(d.join("device")).ok());
        let dev = device
            .as_deref()
            .and_then(Path::file_name)
            .or_else(|| dir.and_then(Path::file_name))
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let (name, label) = s.zone.split_once('/').unwrap_or((&s.zone, ""));
        let zone = format!("{name}@{dev}/{label}");
        for list in [&mut det.sources, &mut det.whole_system] {
            if let Some(e) = list.iter_mut().find(|e| **e == format!("hwmon:{}", s.zone)) {
                *e = format!("hwmon:{zone}");
            }
        }
        s.zone = zone;
    }
    if sensors.is_empty() && !det.notes.iter().any(|n| n.starts_with("hwmon")) {
        det.notes.push(format!(
            "hwmon: no power*_input or energy*_input under {}",
            root.display()
        ));
    }
    sensors
}

fn local_bmc_present() -> bool {
    ["/dev/ipmi0", "/dev/ipmi/0", "/dev/ipmidev/0"]
        .iter()
        .any(|p| Path::new(p).exists())
}

fn read_ipmi(prefix: &str) -> Result<f64, String> {
    ipmi_reading(prefix).map(|r| r.instantaneous_w)
}

/// One DCMI power reading, refused where it cannot be the server's power: 0 W is what a
/// BMC without a power sensor (or with the feature off) answers, whatever its state
/// says, and no running server draws it. The state is not the test: OpenBMC's ipmid
/// answered `deactivated` beside live watts for years (it never set the bit), so a
/// reading above 0 is kept whatever the state, and detection says so in a note.
fn ipmi_reading(prefix: &str) -> Result<DcmiReading, String> {
    let out = engine::command::probe(&format!("{prefix} dcmi power reading"), COMMAND_TIMEOUT)?;
    let r = parse_dcmi_power_reading(&out)?;
    if r.instantaneous_w <= 0.0 {
        return Err(format!(
            "the BMC reads 0 W{}: it measures no power (no sensor, or DCMI power \
             management off in the BMC's settings)",
            match r.activated {
                Some(false) => " with `Power reading state is: deactivated`",
                Some(true) => " with `Power reading state is: activated`",
                None => "",
            }
        ));
    }
    Ok(r)
}

/// The meter command's reading; its errors (stored and printed) with the command's
/// secrets hidden (`ipmitool -P pw`, `curl -u user:pw`).
pub fn read_meter(cmd: &str) -> Result<f64, String> {
    let out =
        engine::command::probe(cmd, COMMAND_TIMEOUT).map_err(|e| model::redact_secrets(&e))?;
    // The command alone is redacted (the word after `--password=` would take the
    // closing quote with it); what it printed is redacted too.
    parse_meter_watts(&out).map_err(|why| {
        format!(
            "`{}` {}",
            model::redact_secrets(cmd),
            model::redact_secrets(&why)
        )
    })
}

/// A power command (the meter's, ipmitool's) run on a thread of its own, so that one
/// that hangs (a PDU or a BMC that does not answer) holds up its own readings only, never
/// the sampler's CPU, NIC and disk snapshots or a test's start and end, which wait on
/// the sampler's lock.
#[derive(Debug)]
struct CommandReader {
    cmd: String,
    ask: std::sync::mpsc::Sender<u64>,
    answers: std::sync::mpsc::Receiver<(u64, Result<f64, String>)>,
    /// The request whose answer has not come back, and when it was asked.
    pending: Option<(u64, Instant)>,
    next: u64,
}

impl CommandReader {
    /// `read(cmd)` gives one reading: [`read_meter`], [`read_ipmi`].
    fn start(cmd: &str, read: fn(&str) -> Result<f64, String>) -> CommandReader {
        let (ask, asked) = std::sync::mpsc::channel::<u64>();
        let (tell, answers) = std::sync::mpsc::channel();
        let c = cmd.to_string();
        // Ends when the sources drop (the sender goes), after the command under way:
        // that one is bounded by COMMAND_TIMEOUT and killed with its process group.
        // Without a thread, `ask` has no receiver: each tick says so.
        let _ = std::thread::Builder::new()
            .name("rackbench-power".into())
            .spawn(move || {
                while let Ok(id) = asked.recv() {
                    if tell.send((id, read(&c))).is_err() {
                        return;
                    }
                }
            });
        // The first question goes now, as the first interval begins: a command slower
        // than a tick's wait then has its answer by the first tick, and an idle window
        // that starts with the sampler is not short of its first reading (review I, 7).
        let pending = ask.send(0).is_ok().then(|| (0, Instant::now()));
        CommandReader {
            cmd: cmd.to_string(),
            ask,
            answers,
            pending,
            next: 1,
        }
    }

    /// A reading for the interval that closes now: the answer to this tick's question if
    /// it comes within `budget`, else the answer to an earlier one that came back since
    /// the last tick (read while this interval ran: a meter slower than the budget, a PDU
    /// over SNMP at 0.3 s, reads every tick; ipmitool over the network at 1.2 s against a
    /// 1 s interval, every other tick). A command still running from an earlier tick is
    /// not started again: this tick has no reading, and says why. An answer that came
    /// late comes with when its question was asked: it is a reading of that moment,
    /// up to an interval before this tick, not of this one.
    fn read(&mut self, budget: Duration) -> Result<(f64, Option<Instant>), String> {
        let mut late = None;
        if let Some((id, asked)) = self.pending {
            // Not waited for: a tick that waited on a command still running would hold
            // the sampler's lock for its whole wait, tick after tick, and a test's start
            // or end could not get it.
            match self.answer(id, Instant::now()) {
                Some(r) => late = Some(r.map(|w| (w, Some(asked)))),
                // One message however long it runs: the sampler's notes keep each
                // distinct one.
                None => {
                    return Err(format!(
                        "`{}` is still running from an earlier tick (it is given {} s), so \
                         this tick has no reading",
                        model::redact_secrets(&self.cmd),
                        COMMAND_TIMEOUT.as_secs()
                    ))
                }
            }
        }
        let id = self.next;
        self.next += 1;
        if self.ask.send(id).is_err() {
            return Err("the thread reading it could not be started".into());
        }
        self.pending = Some((id, Instant::now()));
        match self.answer(id, Instant::now() + budget) {
            Some(r) => r.map(|w| (w, None)),
            None => late.unwrap_or_else(|| {
                Err(format!(
                    "`{}` did not answer within {} ms (a tick waits a quarter of the telemetry \
                     interval, 100 ms at least, and takes an answer that comes by the next \
                     tick): the reading is skipped; make it answer faster or raise \
                     --telemetry-interval",
                    model::redact_secrets(&self.cmd),
                    budget.as_millis()
                ))
            }),
        }
    }

    /// The answer to question `id`, waiting for it until `until` (an answer to an older
    /// one, come back late, is dropped); it is no longer pending once it came.
    fn answer(&mut self, id: u64, until: Instant) -> Option<Result<f64, String>> {
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.answers.recv_timeout(left) {
                Ok((got, r)) if got == id => {
                    self.pending = None;
                    return Some(r);
                }
                Ok(_) => continue,
                Err(_) => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(rapl_label("intel-rapl:0", Some("package-0")), "package-0");
        assert_eq!(rapl_label("intel-rapl:1:0", Some("dram")), "dram-1");
        assert_eq!(rapl_label("intel-rapl:1", Some("psys")), "psys");
        assert_eq!(rapl_label("intel-rapl:0:0", None), "intel-rapl:0:0");
    }

    #[test]
    fn model_interpolates_and_clamps() {
        let m = PowerModel {
            idle_w: 100.0,
            max_w: 300.0,
        };
        assert_eq!(m.watts(0.0), 100.0);
        assert_eq!(m.watts(50.0), 200.0);
        assert_eq!(m.watts(150.0), 300.0);
    }

    #[test]
    fn permission_denied_names_the_cve() {
        let e = io::Error::from(io::ErrorKind::PermissionDenied);
        let msg = describe_read_error(Path::new("/x/energy_uj"), &e);
        assert!(msg.contains("CVE-2020-8694"), "{msg}");
        assert!(msg.contains("run rackbench as root"), "{msg}");
    }
}
