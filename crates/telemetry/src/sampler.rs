//! The sampler: a thread that snapshots this host's counters every interval and turns
//! each pair of snapshots into a [`TelemetrySample`], plus the per-step summary.
//!
//! The runner drives it from outside: `set_warmup` and `take` close the current interval
//! on the spot, so no sample straddles warm-up and measurement or two steps, and a step's
//! samples are exactly those taken between two `take`s. Every method takes `&self`
//! (state behind one mutex), so the sampler can be shared with the workload's watch hooks.
//! Reading /proc and /sys takes well under a millisecond; ipmitool and meter commands
//! can take longer and are bounded by [`crate::power::COMMAND_TIMEOUT`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;
use model::{
    CpuUtil, DiskRate, IdlePower, NicRate, PartPresent, PowerGaps, PowerSummary, ProcCpu,
    TelemetrySample, TelemetrySummary,
};

use crate::parse::{
    cpuinfo_mhz, parse_cpuinfo, parse_diskstats, parse_khz_as_mhz, parse_net_dev, parse_pid_stat,
    parse_proc_stat, DiskCounters, NetDevCounters, PidStat, ProcStat,
};
use crate::power::{PowerConfig, PowerDetection, PowerSources};
use crate::rates::{
    counter64_delta, cpu_utils, disk_rates, nic_rates, proc_cpu, process_tree, tree_cpu,
    tree_ticks, TreeReading,
};

/// What to sample and how often, as plain data.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplerConfig {
    /// Host name put in every sample (`local`, or the ssh name).
    pub host: String,
    pub interval: Duration,
    pub proc_root: PathBuf,
    pub sys_root: PathBuf,
    pub power: PowerConfig,
}

impl SamplerConfig {
    /// This host: `local`, 1 s, /proc, /sys, [`PowerConfig::local`].
    pub fn local() -> Self {
        SamplerConfig {
            host: "local".to_string(),
            interval: Duration::from_secs(1),
            proc_root: PathBuf::from("/proc"),
            sys_root: PathBuf::from("/sys"),
            power: PowerConfig::local(),
        }
    }
}

impl Default for SamplerConfig {
    fn default() -> Self {
        Self::local()
    }
}

/// Intervals shorter than this are not closed: /proc/stat counts in 10 ms ticks
/// (USER_HZ 100), so a shorter interval's percentages would be noise. The few
/// milliseconds go into the next interval.
pub const MIN_INTERVAL: Duration = Duration::from_millis(20);

/// At most this many distinct notes are kept (a vanished device repeats itself).
const MAX_NOTES: usize = 32;

struct Snapshot {
    at: Instant,
    stat: ProcStat,
    net: Vec<NetDevCounters>,
    disks: Vec<DiskCounters>,
}

struct Watched {
    role: String,
    pid: u32,
    /// Count the process's descendants too (every server); the load generator, whose
    /// children are the servers it launched, counts alone.
    with_descendants: bool,
    /// The process alone (`members` holds just it) or its tree, when last read.
    last: (TreeReading, Instant),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum FreqSource {
    Cpufreq,
    Cpuinfo,
    None,
}

struct State {
    cfg: SamplerConfig,
    start: Instant,
    prev: Snapshot,
    power: PowerSources,
    detection: PowerDetection,
    freq: FreqSource,
    ticks_per_s: f64,
    watched: Vec<Watched>,
    warmup: bool,
    samples: Vec<TelemetrySample>,
    /// Samples handed out by `take` so far (so a mark stays valid across takes).
    taken: usize,
    notes: Vec<String>,
    /// When the sampling thread next closes an interval (pushed back by every attempt,
    /// successful or not, and by `take`, but never past two intervals after the last
    /// tick: see [`State::sample_now`]).
    due: Instant,
    /// When the sampling thread last closed an interval.
    last_tick: Instant,
    stop: bool,
}

type Shared = Arc<(Mutex<State>, Condvar)>;

/// A running telemetry sampler for one host. Send + Sync; stop it with [`Sampler::stop`]
/// (dropping it also stops the thread, discarding unsampled time).
pub struct Sampler {
    shared: Shared,
    thread: Option<JoinHandle<()>>,
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    // A panic while sampling leaves plain data behind; keep going with it.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn read(root: &Path, rel: &str) -> std::io::Result<String> {
    std::fs::read_to_string(root.join(rel))
}

fn snapshot(cfg: &SamplerConfig) -> anyhow::Result<Snapshot> {
    let at = Instant::now();
    let stat_path = cfg.proc_root.join("stat");
    let stat = std::fs::read_to_string(&stat_path)
        .with_context(|| format!("cannot read {}", stat_path.display()))?;
    let stat = parse_proc_stat(&stat);
    if stat.all.is_none() {
        anyhow::bail!("{} has no `cpu` line", stat_path.display());
    }
    // NICs and disks are optional (containers without them): empty when unreadable.
    let net = read(&cfg.proc_root, "net/dev")
        .map(|s| parse_net_dev(&s))
        .unwrap_or_default();
    let disks = read(&cfg.proc_root, "diskstats")
        .map(|s| parse_diskstats(&s))
        .unwrap_or_default();
    Ok(Snapshot {
        at,
        stat,
        net,
        disks,
    })
}

/// Whole disks, as iostat shows them: a device with a `/sys/block/<name>` entry
/// (partitions have none), minus loop and RAM disks. Without a readable /sys/block
/// (a fixture tree), a name-based guess leaves out partitions.
pub fn is_whole_disk(sys_root: &Path, name: &str) -> bool {
    if name.starts_with("loop") || name.starts_with("ram") || name.starts_with("zram") {
        return false;
    }
    let block = sys_root.join("block");
    if block.is_dir() {
        return block.join(name.replace('/', "!")).exists();
    }
    let ends_digit = name.chars().last().is_some_and(|c| c.is_ascii_digit());
    let classic = ["sd", "hd", "vd", "xvd"]
        .iter()
        .any(|p| name.starts_with(p));
    let p_part = (name.starts_with("nvme") || name.starts_with("mmcblk"))
        && name
            .rsplit_once('p')
            .is_some_and(|(_, n)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
    let partition = (classic && ends_digit) || p_part;
    !partition
}

fn ticks_per_s() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

fn read_pid(proc_root: &Path, pid: u32) -> Option<PidStat> {
    let s = std::fs::read_to_string(proc_root.join(pid.to_string()).join("stat")).ok()?;
    parse_pid_stat(&s)
}

/// Every process of the host, by PID (those that exit while the directory is read are
/// left out). A few hundred small reads: a millisecond or two, once per interval, and
/// only while a process is watched with its descendants.
fn read_all_pids(proc_root: &Path) -> BTreeMap<u32, PidStat> {
    let Ok(dir) = std::fs::read_dir(proc_root) else {
        return BTreeMap::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| Some((pid, read_pid(proc_root, pid)?)))
        .collect()
}

/// What to read of watched process `pid` now: its tree out of `all`, or itself alone.
fn reading(
    proc_root: &Path,
    all: &BTreeMap<u32, PidStat>,
    pid: u32,
    with_descendants: bool,
    fence: &[u32],
) -> Option<TreeReading> {
    if with_descendants {
        Some(process_tree(all, pid, fence)).filter(|t| t.members.contains_key(&pid))
    } else {
        let s = read_pid(proc_root, pid)?;
        Some(TreeReading {
            members: BTreeMap::from([(pid, s)]),
            fenced: BTreeMap::new(),
        })
    }
}

impl State {
    fn note(&mut self, n: String) {
        if self.notes.len() < MAX_NOTES && !self.notes.contains(&n) {
            self.notes.push(n);
        }
    }

    fn cpu_numbers(&self) -> Vec<u32> {
        self.prev.stat.cpus.iter().map(|(n, _)| *n).collect()
    }

    /// Each online CPU's clock, in /proc/stat's order. A CPU whose clock cannot be read
    /// is left out with a note (the mean is over the others); before, any gap in the CPU
    /// numbers (a CPU offline, SMT off on POWER) or one unreadable CPU dropped them all
    /// without a word, while the disclosure said the clock was sampled.
    fn read_freq(&mut self) -> Vec<f64> {
        let cpus = self.cpu_numbers();
        let read: Vec<(u32, Option<f64>)> = match self.freq {
            FreqSource::Cpufreq => cpus
                .iter()
                .map(|n| {
                    let rel = format!("devices/system/cpu/cpu{n}/cpufreq/scaling_cur_freq");
                    let mhz = read(&self.cfg.sys_root, &rel)
                        .ok()
                        .and_then(|s| parse_khz_as_mhz(&s));
                    (*n, mhz)
                })
                .collect(),
            FreqSource::Cpuinfo => {
                let m = read(&self.cfg.proc_root, "cpuinfo")
                    .map(|s| cpuinfo_mhz(&parse_cpuinfo(&s)))
                    .unwrap_or_default();
                cpus.iter().map(|n| (*n, m.get(n).copied())).collect()
            }
            FreqSource::None => return Vec::new(),
        };
        let missing: Vec<String> = read
            .iter()
            .filter(|(_, m)| m.is_none())
            .map(|(n, _)| n.to_string())
            .collect();
        if !missing.is_empty() {
            self.note(format!(
                "CPU clock not readable for CPU {} ({}): the mean clock is over the other CPUs",
                missing.join(","),
                match self.freq {
                    FreqSource::Cpufreq => "no cpufreq scaling_cur_freq",
                    _ => "no cpu MHz in /proc/cpuinfo",
                }
            ));
        }
        read.into_iter().filter_map(|(_, m)| m).collect()
    }

    /// Close the current interval now, as a window of samples begins (a test's start or
    /// end, a warm-up's, a level's mark): an answer from a slow meter to a question asked
    /// before it is of the time before ([`PowerSources::begin_window`]). Not a checkpoint's
    /// close ([`Sampler::since`]), in the middle of a window: every 5 s of a test, it
    /// dropped the next tick's late reading as "asked before this window began".
    fn begin_window(&mut self) {
        self.sample_now(false);
        self.power.begin_window(Instant::now());
    }

    /// Close the current interval now: at the sampler's own `tick`, or because the caller
    /// asked (a test's start or end, a warm-up's, a mark), where instantaneous power is
    /// not read (see [`model::PowerReading::instantaneous`]). False when it is too short
    /// to be measured or /proc/stat could not be read (a note says why).
    fn sample_now(&mut self, tick: bool) -> bool {
        let now = Instant::now();
        if now.saturating_duration_since(self.prev.at) < MIN_INTERVAL {
            return false;
        }
        // A close moves the next tick a whole interval on (no sliver of an interval
        // just after a test's start or end), but not past two intervals after the last
        // tick: a caller closing more often than the interval (a test's checkpoint every
        // 5 s, against `--telemetry-interval 10s`) put it off for ever, and the
        // instantaneous sources, read at ticks only, were never read in the test.
        if tick {
            self.last_tick = now;
        }
        self.due = (now + self.cfg.interval).min(self.last_tick + 2 * self.cfg.interval);
        let cur = match snapshot(&self.cfg) {
            Ok(s) => s,
            Err(e) => {
                // The previous snapshot stays the baseline: the next good one spans
                // the whole time since, so no rate is computed over a wrong interval.
                self.note(format!("{e:#}"));
                return false;
            }
        };
        let dt = cur.at.saturating_duration_since(self.prev.at).as_secs_f64();
        let cpus = cpu_utils(&self.prev.stat, &cur.stat);
        // A line /proc/stat lacks (a container's, a kernel's own) is not counted, and
        // read as 0 it was a host with no context switches.
        let rate = |p: Option<u64>, c: Option<u64>| match (p, c) {
            (Some(p), Some(c)) if dt > 0.0 => Some(counter64_delta(p, c) as f64 / dt),
            _ => None,
        };
        let ctxt_per_s = rate(self.prev.stat.ctxt, cur.stat.ctxt);
        let intr_per_s = rate(self.prev.stat.intr, cur.stat.intr);
        for (line, v) in [("ctxt", ctxt_per_s), ("intr", intr_per_s)] {
            if v.is_none() {
                self.note(format!(
                    "{} has no `{line}` line: {line}_per_s is missing, not 0",
                    self.cfg.proc_root.join("stat").display()
                ));
            }
        }
        let nics = nic_rates(&self.prev.net, &cur.net, dt);
        let sys_root = self.cfg.sys_root.clone();
        let disks: Vec<DiskRate> = disk_rates(&self.prev.disks, &cur.disks, dt)
            .into_iter()
            .filter(|d| is_whole_disk(&sys_root, &d.name))
            .filter(|d| {
                // iostat leaves out devices that never did any I/O.
                cur.disks
                    .iter()
                    .find(|c| c.name == d.name)
                    .is_some_and(|c| c.reads + c.writes + c.discards > 0)
            })
            .collect();

        let mut procs = Vec::with_capacity(self.watched.len());
        let mut gone = Vec::new();
        let fence: Vec<u32> = self.watched.iter().map(|w| w.pid).collect();
        let all = if self.watched.iter().any(|w| w.with_descendants) {
            read_all_pids(&self.cfg.proc_root)
        } else {
            BTreeMap::new()
        };
        for (i, w) in self.watched.iter_mut().enumerate() {
            let root = &self.cfg.proc_root;
            match reading(root, &all, w.pid, w.with_descendants, &fence) {
                Some(cur) => {
                    let at = Instant::now();
                    let since = at.saturating_duration_since(w.last.1);
                    // Watched just now: a tick of CPU (10 ms) over a millisecond read as
                    // 1000%. Its baseline stays; its next sample spans the time since.
                    if since < MIN_INTERVAL {
                        continue;
                    }
                    let pdt = since.as_secs_f64();
                    let (prev, now) = (&w.last.0.members[&w.pid], &cur.members[&w.pid]);
                    let p = if w.with_descendants {
                        let ticks = tree_ticks(&w.last.0, &cur, &all);
                        tree_cpu(&w.role, w.pid, ticks, pdt, self.ticks_per_s, true)
                    } else {
                        proc_cpu(&w.role, prev, now, pdt, self.ticks_per_s)
                    };
                    procs.push(over_sample(p, pdt, dt));
                    w.last = (cur, at);
                }
                None => gone.push(i),
            }
        }
        for i in gone.into_iter().rev() {
            let w = self.watched.remove(i);
            self.note(format!(
                "process {} ({}) exited; no longer watched",
                w.pid, w.role
            ));
        }

        self.prev = cur;
        let freq_mhz = self.read_freq();
        let busy = cpus.iter().find(|c| c.cpu == -1).map(|c| c.busy_pct());
        // Stamped as the counters are read: the reads above (every watched process's
        // tree, the frequencies) take a varying time after `now`, and an energy counter's
        // watts are its change over the time between its own two reads.
        let power = self.power.read(Instant::now(), busy, tick);
        let power_failed = self.power.last_failed().to_vec();
        for e in self.power.errors().to_vec() {
            self.note(e);
        }
        let sample = TelemetrySample {
            host: self.cfg.host.clone(),
            t_s: now.saturating_duration_since(self.start).as_secs_f64(),
            interval_s: dt,
            warmup: self.warmup,
            cpus,
            ctxt_per_s,
            intr_per_s,
            nics,
            disks,
            freq_mhz,
            procs,
            power,
            power_failed,
        };
        self.samples.push(sample);
        true
    }
}

/// Where the CPUs' clock is read, or why it is not: cpufreq's `scaling_cur_freq`, else
/// `/proc/cpuinfo`'s `cpu MHz` where the CPU counts its cycles (x86's APERF/MPERF, the
/// `aperfmperf` flag). Without them a VM's cpuinfo gives its nominal clock, the same on
/// every read (2100 MHz where mem measured 2678): a constant is not a measured mean.
fn detect_freq_source(cfg: &SamplerConfig, cpus: &[u32]) -> (FreqSource, Option<String>) {
    let Some(first) = cpus.first() else {
        return (FreqSource::None, None);
    };
    let rel = format!("devices/system/cpu/cpu{first}/cpufreq/scaling_cur_freq");
    if read(&cfg.sys_root, &rel)
        .ok()
        .and_then(|s| parse_khz_as_mhz(&s))
        .is_some()
    {
        return (FreqSource::Cpufreq, None);
    }
    let Ok(text) = read(&cfg.proc_root, "cpuinfo") else {
        return (FreqSource::None, None);
    };
    let blocks = parse_cpuinfo(&text);
    if cpuinfo_mhz(&blocks).is_empty() {
        return (FreqSource::None, None);
    }
    let counts_cycles = blocks.iter().any(|b| {
        b.get("flags")
            .is_some_and(|f| f.split_whitespace().any(|w| w == "aperfmperf"))
    });
    if counts_cycles {
        (FreqSource::Cpuinfo, None)
    } else {
        (
            FreqSource::None,
            Some(
                "CPU frequency not sampled: no cpufreq, and without APERF/MPERF (no \
                 `aperfmperf` in /proc/cpuinfo's flags, as in most VMs) its `cpu MHz` is the \
                 nominal clock, not a measurement"
                    .into(),
            ),
        )
    }
}

/// How the telemetry reads the CPUs' clock on the host of `proc_root` and `sys_root`,
/// for its disclosure (`telemetry.cpu_freq`): a sample's `mean_freq_mhz` is absent where
/// this says why.
pub fn cpu_freq_fact(proc_root: &Path, sys_root: &Path) -> model::Fact {
    let cfg = SamplerConfig {
        proc_root: proc_root.to_path_buf(),
        sys_root: sys_root.to_path_buf(),
        ..SamplerConfig::local()
    };
    match detect_freq_source(&cfg, &[0]) {
        (FreqSource::Cpufreq, _) => model::Fact::known("cpufreq scaling_cur_freq, each sample"),
        (FreqSource::Cpuinfo, _) => {
            model::Fact::known("/proc/cpuinfo cpu MHz (APERF/MPERF), each sample")
        }
        (FreqSource::None, Some(why)) => model::Fact::unknown(why),
        (FreqSource::None, None) => {
            model::Fact::unknown("CPU frequency not sampled: no cpufreq and no cpu MHz")
        }
    }
}

impl Sampler {
    /// Take the first snapshot, detect power sources, and start sampling every
    /// `cfg.interval` on a thread of its own.
    pub fn start(cfg: SamplerConfig) -> anyhow::Result<Sampler> {
        if cfg.interval < MIN_INTERVAL {
            anyhow::bail!(
                "telemetry interval {:?} is shorter than {:?}: /proc/stat counts in 10 ms \
                 ticks; use an interval of 100 ms or more",
                cfg.interval,
                MIN_INTERVAL
            );
        }
        let prev = snapshot(&cfg).context("telemetry: first snapshot")?;
        let (mut power, detection) = PowerSources::open(&cfg.power);
        // A meter that hangs delays one tick by this much, then none while it stays
        // hung (its later ticks do not wait); 100 ms at least, for a command's start on
        // a loaded host.
        power.set_meter_budget((cfg.interval / 4).max(Duration::from_millis(100)));
        let cpus: Vec<u32> = prev.stat.cpus.iter().map(|(n, _)| *n).collect();
        let (freq, freq_note) = detect_freq_source(&cfg, &cpus);
        let interval = cfg.interval;
        let state = State {
            start: prev.at,
            cfg,
            prev,
            power,
            detection,
            freq,
            ticks_per_s: ticks_per_s(),
            watched: Vec::new(),
            warmup: false,
            samples: Vec::new(),
            taken: 0,
            notes: freq_note.into_iter().collect(),
            due: Instant::now() + interval,
            last_tick: Instant::now(),
            stop: false,
        };
        let shared: Shared = Arc::new((Mutex::new(state), Condvar::new()));
        let for_thread = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("rackbench-telemetry".into())
            .spawn(move || run(for_thread))
            .context("telemetry: cannot start the sampling thread")?;
        Ok(Sampler {
            shared,
            thread: Some(thread),
        })
    }

    /// Watch a server process's CPU time under `role` (`server:0`, `postgres`), its
    /// descendants' with it (PostgreSQL's backends, a Redis save's fork, nginx's workers
    /// unless they are watched themselves), as `pidstat -T ALL` counts it. Its first
    /// sample covers the time since this call.
    pub fn watch_process(&self, role: &str, pid: u32) {
        self.watch(role, pid, true);
    }

    /// Watch one process's own CPU time under `role`, without its descendants: the load
    /// generator, whose children are the servers it launched and the commands it runs.
    pub fn watch_process_alone(&self, role: &str, pid: u32) {
        self.watch(role, pid, false);
    }

    fn watch(&self, role: &str, pid: u32, with_descendants: bool) {
        let mut st = lock(&self.shared.0);
        let all = if with_descendants {
            read_all_pids(&st.cfg.proc_root)
        } else {
            BTreeMap::new()
        };
        let mut fence: Vec<u32> = st.watched.iter().map(|w| w.pid).collect();
        fence.push(pid);
        let Some(first) = reading(&st.cfg.proc_root, &all, pid, with_descendants, &fence) else {
            st.note(format!(
                "cannot watch process {pid} ({role}): no such process"
            ));
            return;
        };
        st.watched.retain(|w| w.pid != pid);
        st.watched.push(Watched {
            role: role.to_string(),
            pid,
            with_descendants,
            last: (first, Instant::now()),
        });
    }

    /// Whether process `pid` is watched (under any role).
    pub fn watches(&self, pid: u32) -> bool {
        lock(&self.shared.0).watched.iter().any(|w| w.pid == pid)
    }

    /// Stop watching every process.
    pub fn unwatch_all(&self) {
        lock(&self.shared.0).watched.clear();
    }

    /// Enter or leave warm-up. The current interval is closed first, so samples never
    /// mix warm-up and measured time.
    pub fn set_warmup(&self, on: bool) {
        let mut st = lock(&self.shared.0);
        if st.warmup != on {
            st.begin_window();
            st.warmup = on;
            self.shared.1.notify_all();
        }
    }

    /// Close the current interval now and return every sample since the last `take`.
    pub fn take(&self) -> Vec<TelemetrySample> {
        let mut st = lock(&self.shared.0);
        st.begin_window();
        self.shared.1.notify_all();
        st.taken += st.samples.len();
        std::mem::take(&mut st.samples)
    }

    /// Close the current interval now and return a mark: the samples after it (see
    /// [`Sampler::since`]) cover only what follows.
    pub fn mark(&self) -> usize {
        let mut st = lock(&self.shared.0);
        st.begin_window();
        self.shared.1.notify_all();
        st.taken + st.samples.len()
    }

    /// Close the current interval now and return copies of the samples since `mark`
    /// (they stay in place for [`Sampler::take`]; those already taken are gone).
    pub fn since(&self, mark: usize) -> Vec<TelemetrySample> {
        let mut st = lock(&self.shared.0);
        st.sample_now(false);
        self.shared.1.notify_all();
        let from = mark.saturating_sub(st.taken).min(st.samples.len());
        st.samples[from..].to_vec()
    }

    /// When the samples' clock began (their `t_s` is seconds since, on the monotonic
    /// clock), on this host's wall clock as it reads now: a wall clock stepped since the
    /// start moves it, the samples do not move.
    pub fn started_at(&self) -> SystemTime {
        let elapsed = lock(&self.shared.0).start.elapsed();
        let now = SystemTime::now();
        now.checked_sub(elapsed).unwrap_or(now)
    }

    /// What the power detection found at start.
    pub fn power_detection(&self) -> PowerDetection {
        lock(&self.shared.0).detection.clone()
    }

    /// Things that went wrong while sampling (unreadable files, exited processes,
    /// failing power commands), distinct, oldest first.
    pub fn notes(&self) -> Vec<String> {
        lock(&self.shared.0).notes.clone()
    }

    /// Stop the thread, close the last interval, and return the samples not yet taken.
    /// The close reads every power source, instantaneous ones too: what the sampler
    /// measured still holds as it stops (idle, in [`measure_idle`]).
    pub fn stop(mut self) -> Vec<TelemetrySample> {
        self.halt();
        let mut st = lock(&self.shared.0);
        st.sample_now(true);
        std::mem::take(&mut st.samples)
    }

    fn halt(&mut self) {
        lock(&self.shared.0).stop = true;
        self.shared.1.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.halt();
    }
}

fn run(shared: Shared) {
    let (m, cv) = &*shared;
    let mut st = lock(m);
    loop {
        if st.stop {
            return;
        }
        let due = st.due;
        let now = Instant::now();
        if now >= due {
            // Pushes `due` one interval on, even when /proc/stat could not be read, so a
            // failing read is retried once per interval, not in a hot loop.
            st.sample_now(true);
            if st.due <= now {
                st.due = now + st.cfg.interval;
            }
            continue;
        }
        st = cv
            .wait_timeout(st, due - now)
            .map(|(g, _)| g)
            .unwrap_or_else(|e| e.into_inner().0);
    }
}

/// A weighted running mean: exactly the reading when every reading is the same (a sum
/// of x*w over the sum of w read 100.00000000000001 W for a meter that printed 100, and
/// W above idle needed a tolerance for it).
struct Acc<const N: usize> {
    mean: [f64; N],
    weight: f64,
}

impl<const N: usize> Default for Acc<N> {
    fn default() -> Self {
        Acc {
            mean: [0.0; N],
            weight: 0.0,
        }
    }
}

impl<const N: usize> Acc<N> {
    fn add(&mut self, v: [f64; N], w: f64) {
        if w <= 0.0 {
            return;
        }
        self.weight += w;
        let share = w / self.weight;
        for (m, x) in self.mean.iter_mut().zip(v) {
            *m += share * (x - *m);
        }
    }
    fn mean(&self) -> [f64; N] {
        self.mean
    }
}

/// The part of one host's consecutive samples (as [`Sampler::since`] returns them) from
/// `from_s` to `to_s` seconds after the first one began: [`within_spans`] of one span.
pub fn within(samples: &[TelemetrySample], from_s: f64, to_s: f64) -> Vec<TelemetrySample> {
    within_spans(samples, &[(from_s, to_s)]).samples
}

/// How far a sample may reach outside a span and still count as wholly inside it: the
/// shortest interval the sampler measures, or 2% of the sample's own.
fn edge_slack(interval_s: f64) -> f64 {
    MIN_INTERVAL.as_secs_f64().max(0.02 * interval_s)
}

/// What [`within_spans`] and [`cut_spans`] keep.
#[derive(Debug, Clone, PartialEq)]
pub struct Cut {
    pub samples: Vec<TelemetrySample>,
    /// Every span was taken by the samples wholly inside it, and only such samples were
    /// kept.
    pub whole: bool,
}

/// The samples of one host (consecutive, as [`Sampler::since`] returns them) that lie
/// wholly inside `spans` (seconds after the first sample began; overlapping spans count
/// once), to [`edge_slack`] and at least half inside, kept as they are. A sample that
/// straddles a span's edge is left out: its means mix the load with what was around it
/// (a UDP test's first second holds its streams' setup, its last the receiver's wait),
/// and no weighting can take that apart: the load at 80% busy over 3 s, its 0.3 s of
/// setup at 10%, and 1 s ticks would read 71% by each sample's part inside. So the
/// summary covers less than the spans, up to an interval at each edge, and is the
/// load's alone.
/// A span whose whole samples cover less than half of it (none, in a span shorter than
/// about two intervals; or only the few milliseconds closed at a test's end, when the
/// one-second sample before reaches past its start by more than the slack) gives its
/// parts instead: each sample inside it in part keeps its figures and weighs as much as
/// its part inside, exact to within an interval at each end. So a 25 ms closing sample
/// never stands alone for a 1 s test that a 1 s sample mostly covers. An instantaneous
/// power reading stands for the moment it was taken (its sample's end, or `late_s`
/// before: a meter that answers late), so a sample or a part keeps it only when that
/// moment is inside; one taken before the span began is of the time before, and is a
/// gap in the span's power (a late meter's answer to the previous tick's question was
/// the first whole sample's reading, from the setup before the test).
pub fn within_spans(samples: &[TelemetrySample], spans: &[(f64, f64)]) -> Cut {
    let merged = merge_spans(spans);
    cut_spans(samples, &merged, &choose_whole(&[(samples, &merged)]))
}

/// `spans` in order, those that overlap or touch made one, empty ones left out.
pub fn merge_spans(spans: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut sorted: Vec<(f64, f64)> = spans.iter().copied().filter(|(a, b)| b > a).collect();
    sorted.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut merged: Vec<(f64, f64)> = Vec::with_capacity(sorted.len());
    for (a, b) in sorted {
        match merged.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    merged
}

/// Where one host's sample clock starts: its first sample's beginning. Spans and sample
/// ends are placed as seconds after it.
pub fn origin(samples: &[TelemetrySample]) -> f64 {
    // Each sample ends at t_s and covers the interval_s before it.
    samples.first().map_or(0.0, |f| f.t_s - f.interval_s)
}

/// How far after `origin` sample `s` ends, and how much of `span` it covers.
fn end_and_inside(origin: f64, s: &TelemetrySample, (a, b): (f64, f64)) -> (f64, f64) {
    let end = s.t_s - origin;
    (end, end.min(b) - (end - s.interval_s).max(a))
}

/// The samples of `samples` wholly inside `span` (to [`edge_slack`], and at least half
/// inside).
fn whole_in(samples: &[TelemetrySample], span: (f64, f64)) -> Vec<&TelemetrySample> {
    let origin = origin(samples);
    samples
        .iter()
        .filter(|s| {
            let (_, inside) = end_and_inside(origin, s, span);
            inside >= s.interval_s / 2.0 && s.interval_s - inside <= edge_slack(s.interval_s)
        })
        .collect()
}

/// The time of `span` that the samples wholly inside it cover, from the first one's
/// start to the last one's end, clipped to the span, as seconds from the span's start;
/// None where they cover less than half of it.
fn whole_window(samples: &[TelemetrySample], span: (f64, f64)) -> Option<(f64, f64)> {
    let whole = whole_in(samples, span);
    let covered: f64 = whole.iter().map(|s| s.interval_s).sum();
    if whole.is_empty() || covered < (span.1 - span.0) / 2.0 {
        return None;
    }
    let origin = origin(samples);
    let (mut from, mut to) = (f64::MAX, f64::MIN);
    for s in whole {
        let (end, _) = end_and_inside(origin, s, span);
        from = from.min(end - s.interval_s);
        to = to.max(end);
    }
    Some((from.max(span.0) - span.0, to.min(span.1) - span.0))
}

/// One host's samples and the merged spans ([`merge_spans`]) on its sample clock.
pub type HostSpans<'a> = (&'a [TelemetrySample], &'a [(f64, f64)]);

/// For each span (the same spans on every host's clock, in the same order), whether
/// `hosts` take their samples wholly inside it ([`cut_spans`]) or each sample's part:
/// whole where each one's whole samples cover half of the span or more and, for several
/// hosts, the time they all cover together does too, so that each one's figures cover
/// the same part of the test (each host's windows from its own sampling phase, they
/// could cover different halves of a short one). A host whose samples miss a span (a
/// clock stepped) has no say in it.
pub fn choose_whole(hosts: &[HostSpans]) -> Vec<bool> {
    let Some((_, first)) = hosts.first() else {
        return Vec::new();
    };
    (0..first.len())
        .map(|i| {
            let reaching = hosts.iter().filter(|(samples, spans)| {
                let origin = origin(samples);
                samples
                    .iter()
                    .any(|s| end_and_inside(origin, s, spans[i]).1 > 0.0)
            });
            let windows: Option<Vec<(f64, f64)>> = reaching
                .map(|(samples, spans)| whole_window(samples, spans[i]))
                .collect();
            let len = first[i].1 - first[i].0;
            windows.is_some_and(|w| {
                let from = w.iter().map(|x| x.0).fold(f64::MIN, f64::max);
                let to = w.iter().map(|x| x.1).fold(f64::MAX, f64::min);
                match w.len() {
                    0 => false,
                    // Its whole samples cover half of the span (clipped to the span, its
                    // window could be up to two slacks shorter).
                    1 => true,
                    _ => to - from >= len / 2.0,
                }
            })
        })
        .collect()
}

/// [`within_spans`] with the choice made for each of `merged` (from [`merge_spans`]):
/// where `whole[i]`, the samples wholly inside span i as they are; elsewhere each
/// sample's part inside it. The runner makes the choice for every host of a test alike
/// ([`choose_whole`]).
pub fn cut_spans(samples: &[TelemetrySample], merged: &[(f64, f64)], whole: &[bool]) -> Cut {
    let mut cut = Cut {
        samples: Vec::new(),
        whole: true,
    };
    debug_assert_eq!(merged.len(), whole.len(), "one choice per span");
    if samples.is_empty() {
        return cut;
    }
    let origin = origin(samples);
    // When an instantaneous reading was taken, on the spans' clock.
    let taken =
        |s: &TelemetrySample, p: &model::PowerReading| s.t_s - origin - p.late_s.unwrap_or(0.0);
    // Drops the instantaneous readings of `s` taken before `from`, each a gap.
    let before = |s: &mut TelemetrySample, from: f64, end: f64| {
        let early: Vec<model::PowerReading> = s
            .power
            .iter()
            .filter(|p| p.instantaneous && taken(s, p) < from)
            .cloned()
            .collect();
        for p in early {
            s.power.retain(|q| *q != p);
            s.power_failed.push(format!(
                "{}: its reading was asked for {:.2} s before the measured time began (it \
                 answers late): not this time's",
                p.source,
                from - (end - p.late_s.unwrap_or(0.0))
            ));
        }
    };
    for (&span, &take_whole) in merged.iter().zip(whole) {
        if take_whole {
            for s in whole_in(samples, span) {
                let mut s = s.clone();
                let (end, slack) = (s.t_s - origin, edge_slack(s.interval_s));
                before(&mut s, span.0 - slack, end);
                cut.samples.push(s);
            }
            continue;
        }
        cut.whole = false;
        for s in samples {
            let (_, inside) = end_and_inside(origin, s, span);
            if inside > 0.0 {
                let mut part = TelemetrySample {
                    interval_s: inside,
                    ..s.clone()
                };
                if s.t_s - origin > span.1 {
                    part.power
                        .retain(|p| !p.instantaneous || taken(s, p) <= span.1);
                    // A failure is of the tick's moment too: outside, not a gap here.
                    part.power_failed.clear();
                }
                before(&mut part, span.0, s.t_s - origin);
                cut.samples.push(part);
            }
        }
    }
    cut
}

/// Per-host means over the non-warm-up samples, weighted by interval length. A CPU, NIC,
/// disk or power zone present in only some samples is averaged over those, as mpstat's
/// average line of a CPU is; a process's CPU is over the whole window, since it used none
/// while it was not there. CPUs and processes not there throughout are in the summary's
/// `part_present`, so a sum over CPUs can weigh each by its time. Hosts with no measured
/// sample are left out.
pub fn summarize(samples: &[TelemetrySample]) -> Vec<TelemetrySummary> {
    summarize_with_notes(samples, &[])
}

/// [`summarize`], with the power detection notes used as the reason when no sample of a
/// host carries a power reading.
pub fn summarize_with_notes(
    samples: &[TelemetrySample],
    power_notes: &[String],
) -> Vec<TelemetrySummary> {
    hosts_in(samples)
        .into_iter()
        .filter_map(|h| summarize_host(h, samples, power_notes))
        .collect()
}

/// The hosts that samples are of, in the order they first appear.
pub fn hosts_in(samples: &[TelemetrySample]) -> Vec<&str> {
    let mut hosts: Vec<&str> = Vec::new();
    for s in samples {
        if !hosts.contains(&s.host.as_str()) {
            hosts.push(&s.host);
        }
    }
    hosts
}

/// Running mean and max of one power source/zone.
#[derive(Default)]
struct PowerAcc {
    source: String,
    zone: String,
    whole_system: bool,
    modelled: bool,
    max_watts: f64,
    acc: Acc<1>,
}

fn ordered_insert<'a, T: Default>(v: &'a mut Vec<(String, T)>, key: &str) -> &'a mut T {
    let i = match v.iter().position(|(k, _)| k == key) {
        Some(i) => i,
        None => {
            v.push((key.to_string(), T::default()));
            v.len() - 1
        }
    };
    &mut v[i].1
}

fn summarize_host(
    host: &str,
    samples: &[TelemetrySample],
    power_notes: &[String],
) -> Option<TelemetrySummary> {
    let measured: Vec<&TelemetrySample> = samples
        .iter()
        .filter(|s| s.host == host && !s.warmup && s.interval_s > 0.0)
        .collect();
    if measured.is_empty() {
        return None;
    }
    let mut cpus: BTreeMap<i32, Acc<8>> = BTreeMap::new();
    let (mut ctxt, mut intr): (Acc<1>, Acc<1>) = Default::default();
    let mut nics: Vec<(String, Acc<6>)> = Vec::new();
    let mut disks: Vec<(String, Acc<5>)> = Vec::new();
    let mut freq: Acc<1> = Acc::default();
    let mut procs: Vec<(String, (u32, String, bool, Acc<2>))> = Vec::new();
    let mut power: Vec<(String, PowerAcc)> = Vec::new();
    let (mut failed, mut failed_s, mut last_error) = (0u32, 0.0, None);
    for (i, s) in measured.iter().enumerate() {
        let w = s.interval_s;
        if let Some(e) = s.power_failed.last() {
            // Pieces of one sample (cut apart by a test's timed parts) count once.
            if i == 0 || measured[i - 1].t_s != s.t_s {
                failed += 1;
            }
            failed_s += w;
            last_error = Some(e.clone());
        }
        for c in &s.cpus {
            cpus.entry(c.cpu).or_default().add(
                [
                    c.usr_pct,
                    c.nice_pct,
                    c.sys_pct,
                    c.iowait_pct,
                    c.irq_pct,
                    c.soft_pct,
                    c.steal_pct,
                    c.idle_pct,
                ],
                w,
            );
        }
        if let Some(v) = s.ctxt_per_s {
            ctxt.add([v], w);
        }
        if let Some(v) = s.intr_per_s {
            intr.add([v], w);
        }
        for n in &s.nics {
            ordered_insert(&mut nics, &n.name).add(
                [
                    n.rx_bytes_per_s,
                    n.tx_bytes_per_s,
                    n.rx_packets_per_s,
                    n.tx_packets_per_s,
                    n.rx_drops_per_s,
                    n.tx_drops_per_s,
                ],
                w,
            );
        }
        for d in &s.disks {
            ordered_insert(&mut disks, &d.name).add(
                [
                    d.reads_per_s,
                    d.writes_per_s,
                    d.read_bytes_per_s,
                    d.write_bytes_per_s,
                    d.util_pct,
                ],
                w,
            );
        }
        if !s.freq_mhz.is_empty() {
            let m = s.freq_mhz.iter().sum::<f64>() / s.freq_mhz.len() as f64;
            freq.add([m], w);
        }
        for p in &s.procs {
            let key = format!("{}\u{0}{}", p.role, p.pid);
            let e = ordered_insert(&mut procs, &key);
            e.0 = p.pid;
            e.1.clone_from(&p.role);
            e.2 = p.with_descendants;
            e.3.add([p.usr_pct, p.sys_pct], w);
        }
        for r in &s.power {
            let key = format!("{}\u{0}{}", r.source, r.zone);
            let e = ordered_insert(&mut power, &key);
            if e.acc.weight == 0.0 {
                e.source.clone_from(&r.source);
                e.zone.clone_from(&r.zone);
                e.whole_system = r.whole_system;
                e.modelled = r.modelled;
                e.max_watts = r.watts;
            }
            e.max_watts = e.max_watts.max(r.watts);
            e.acc.add([r.watts], w);
        }
    }
    // Over the samples that counted them; none: missing, not 0.
    let ctxt_per_s = (ctxt.weight > 0.0).then(|| ctxt.mean()[0]);
    let intr_per_s = (intr.weight > 0.0).then(|| intr.mean()[0]);
    let power: Vec<PowerSummary> = power
        .into_iter()
        .map(|(_, p)| PowerSummary {
            mean_watts: p.acc.mean()[0],
            source: p.source,
            zone: p.zone,
            max_watts: p.max_watts,
            whole_system: p.whole_system,
            modelled: p.modelled,
        })
        .collect();
    let power_missing = power.is_empty().then(|| {
        if power_notes.is_empty() {
            "no power readings: no RAPL, IPMI DCMI, hwmon, meter or power model \
             (see `rackbench disclosure`, key power.sources)"
                .to_string()
        } else {
            format!("no power source found: {}", power_notes.join("; "))
        }
    });
    // Pieces of one sample (cut apart by a test's timed parts) count once.
    let samples = (1 + measured.windows(2).filter(|w| w[0].t_s != w[1].t_s).count()) as u32;
    let covered_s: f64 = measured.iter().map(|s| s.interval_s).sum();
    // Seconds short of the window by more than rounding: not there throughout.
    let partly = |present_s: f64| present_s < covered_s * (1.0 - 1e-9);
    let part_present: Vec<PartPresent> = cpus
        .iter()
        .filter(|(_, a)| partly(a.weight))
        .map(|(&cpu, a)| PartPresent {
            cpu: Some(cpu),
            role: None,
            pid: None,
            present_s: a.weight,
        })
        .chain(
            procs
                .iter()
                .filter(|(_, (_, _, _, a))| partly(a.weight))
                .map(|(_, (pid, role, _, a))| PartPresent {
                    cpu: None,
                    role: Some(role.clone()),
                    pid: Some(*pid),
                    present_s: a.weight,
                }),
        )
        .collect();
    // Of the samples a power reading was due in: on a host with an instantaneous source
    // (IPMI, a meter), its ticks (one read or failed), not the closes a test's start or
    // end made between them (review H, 16); on a host of energy counters alone (RAPL),
    // which read at every close, every one read or failed. Counting only the
    // instantaneous there, one failed interval of 60 s said its power covered 0.0 s.
    let instantaneous = measured
        .iter()
        .any(|s| s.power.iter().any(|p| p.instantaneous));
    let due: Vec<&TelemetrySample> = measured
        .iter()
        .filter(|s| {
            !s.power_failed.is_empty()
                || if instantaneous {
                    s.power.iter().any(|p| p.instantaneous)
                } else {
                    !s.power.is_empty()
                }
        })
        .copied()
        .collect();
    let due_samples = due.len() - due.windows(2).filter(|w| w[0].t_s == w[1].t_s).count();
    let due_s: f64 = due.iter().map(|s| s.interval_s).sum();
    let power_gaps = last_error.map(|last_error| PowerGaps {
        failed_samples: failed,
        samples: due_samples as u32,
        covered_s: (due_s - failed_s).max(0.0),
        last_error,
    });
    Some(TelemetrySummary {
        host: host.to_string(),
        samples,
        covered_s: Some(covered_s),
        whole_samples: false,
        measured_t_s: Vec::new(),
        cpus: cpus
            .into_iter()
            .map(|(cpu, a)| {
                let m = a.mean();
                CpuUtil {
                    cpu,
                    usr_pct: m[0],
                    nice_pct: m[1],
                    sys_pct: m[2],
                    iowait_pct: m[3],
                    irq_pct: m[4],
                    soft_pct: m[5],
                    steal_pct: m[6],
                    idle_pct: m[7],
                }
            })
            .collect(),
        ctxt_per_s,
        intr_per_s,
        nics: nics
            .into_iter()
            .map(|(name, a)| {
                let m = a.mean();
                NicRate {
                    name,
                    rx_bytes_per_s: m[0],
                    tx_bytes_per_s: m[1],
                    rx_packets_per_s: m[2],
                    tx_packets_per_s: m[3],
                    rx_drops_per_s: m[4],
                    tx_drops_per_s: m[5],
                }
            })
            .collect(),
        disks: disks
            .into_iter()
            .map(|(name, a)| {
                let m = a.mean();
                DiskRate {
                    name,
                    reads_per_s: m[0],
                    writes_per_s: m[1],
                    read_bytes_per_s: m[2],
                    write_bytes_per_s: m[3],
                    util_pct: m[4],
                }
            })
            .collect(),
        mean_freq_mhz: (freq.weight > 0.0).then(|| freq.mean()[0]),
        procs: procs
            .into_iter()
            .map(|(_, (pid, role, with_descendants, a))| {
                let m = a.mean();
                // CPU-seconds over the window's seconds: a process there for half of it
                // at one full core used half a core over the window, and the test's
                // processes summed read what they took.
                let share = a.weight / covered_s;
                ProcCpu {
                    role,
                    pid,
                    usr_pct: m[0] * share,
                    sys_pct: m[1] * share,
                    with_descendants,
                }
            })
            .collect(),
        power,
        power_missing,
        power_gaps,
        part_present,
    })
}

/// A process's reading, % over `pdt` (the time since its own last reading), as % over
/// the sample's `dt`: a process watched partway through the sample (a server restarted
/// at 10.5 s in a 10-11 s sample) ran only for its `pdt`, and the summary weighs each
/// sample's figure by `dt`; unscaled, its 100% over 0.5 s would count as a whole
/// CPU-second. Scaled both ways, not only down: a process's readings tile its time, so
/// its CPU-seconds add up exactly, where scaling only a `pdt` a little short of `dt` (its
/// reading a few ms off the sample's) read every process slightly low. A `pdt` longer
/// than `dt` (a baseline kept from a sample it was too new for) carries that time's CPU.
fn over_sample(mut p: ProcCpu, pdt: f64, dt: f64) -> ProcCpu {
    if dt > 0.0 {
        let f = pdt / dt;
        p.usr_pct *= f;
        p.sys_pct *= f;
    }
    p
}

/// Measure power with no load for `duration` (the caller makes sure nothing runs), as
/// the mean of each source, on a sampler of its own (see [`Sampler::measure_idle`]).
/// Fails with the detection notes when no source measures power, so the caller can
/// record why idle power is missing.
pub fn measure_idle(cfg: &SamplerConfig, duration: Duration) -> anyhow::Result<IdlePower> {
    let sampler = Sampler::start(cfg.clone())?;
    let idle = sampler.measure_idle(duration);
    drop(sampler);
    idle
}

impl Sampler {
    /// Measure power with no load for `duration` (the caller makes sure nothing runs)
    /// from this running sampler's own ticks, as the mean of each source that measures
    /// (a declared model's readings are left out: they are no measurement of idle). Each
    /// meter or ipmitool reading is the sampler's own, once per tick: a second sampler
    /// for idle ran every command twice per tick. Fails with the detection notes when no
    /// source measures power, so the caller can record why idle power is missing.
    ///
    /// A stop request (Ctrl-C; on an agent, the controller's) ends it early: up to an
    /// hour of waiting would otherwise hold the run, and the hosts, after the user asked
    /// it to end. What was measured until then is kept, and its `duration_s` is the time
    /// it covered, not the time asked for.
    pub fn measure_idle(&self, duration: Duration) -> anyhow::Result<IdlePower> {
        let detection = self.power_detection();
        if !detection.sources.iter().any(|s| !s.starts_with("model")) {
            anyhow::bail!("idle power not measured: {}", detection.missing_reason());
        }
        let host = lock(&self.shared.0).cfg.host.clone();
        let mark = self.mark();
        let until = Instant::now() + duration;
        while !engine::stop::stop_requested() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
        let mut samples = self.since(mark);
        for s in &mut samples {
            s.power.retain(|p| !p.modelled);
        }
        let duration_s: f64 = samples
            .iter()
            .filter(|s| !s.warmup)
            .map(|s| s.interval_s)
            .sum();
        let summary = summarize_with_notes(&samples, &detection.notes)
            .into_iter()
            .next();
        let (power, cpus) = summary
            .as_ref()
            .map(|s| (s.power.clone(), s.cpus.clone()))
            .unwrap_or_default();
        let gaps = summary.and_then(|s| s.power_gaps);
        if power.is_empty() {
            anyhow::bail!(
                "idle power not measured: no reading in {duration_s:.1} s ({})",
                gaps.map(|g| g.last_error)
                    .unwrap_or_else(|| detection.missing_reason())
            );
        }
        // An idle figure from part of its window says so (review H, 3): W above idle
        // rests on it.
        let flags = gaps
            .map(|g| {
                model::Flag::warning(
                    "power_gaps",
                    model::redact_secrets(&format!(
                        "host {host}: {} of {} samples of its idle power have no reading from \
                         a source that failed (last error: {}): the idle watts are of {:.1} s \
                         of the {duration_s:.1} s measured",
                        g.failed_samples, g.samples, g.last_error, g.covered_s
                    )),
                )
            })
            .into_iter()
            .collect();
        Ok(IdlePower {
            host,
            duration_s,
            power,
            cpus,
            flags,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server restarted at 10.5 s in a 10-11 s sample, its new pid's first reading
    /// 100% over its 0.5 s, is half a CPU-second of that sample, not a whole one; a
    /// reading over the whole sample is as read, and one over a little more (its
    /// baseline kept from a sample it was too new for) carries that CPU time too.
    #[test]
    fn a_process_read_over_part_of_a_sample_counts_for_that_part() {
        let p = |usr: f64| ProcCpu {
            role: "server:0".into(),
            pid: 7,
            usr_pct: usr,
            sys_pct: usr / 2.0,
            with_descendants: false,
        };
        let half = over_sample(p(100.0), 0.5, 1.0);
        assert_eq!((half.usr_pct, half.sys_pct), (50.0, 25.0));
        assert_eq!(over_sample(p(100.0), 1.0, 1.0), p(100.0));
        let more = over_sample(p(40.0), 1.25, 1.0);
        assert_eq!((more.usr_pct, more.sys_pct), (50.0, 25.0));
    }

    /// Without cpufreq, `cpu MHz` is a measurement only where the CPU counts its cycles
    /// (`aperfmperf`); a VM's constant nominal clock was stored as every test's mean
    /// frequency (acceptance pass F, 12).
    #[test]
    fn cpuinfo_mhz_is_sampled_only_where_the_cpu_counts_its_cycles() {
        let d = tempfile::tempdir().unwrap();
        let cfg = SamplerConfig {
            proc_root: d.path().join("proc"),
            sys_root: d.path().join("sys"),
            ..SamplerConfig::local()
        };
        std::fs::create_dir_all(&cfg.proc_root).unwrap();
        let cpuinfo = |flags: &str| {
            let block = |n: u32| {
                format!("processor\t: {n}\ncpu MHz\t\t: 2100.000\nflags\t\t: fpu {flags} sse\n\n")
            };
            std::fs::write(cfg.proc_root.join("cpuinfo"), block(0) + &block(1)).unwrap();
        };
        cpuinfo("constant_tsc tsc_known_freq");
        let (source, note) = detect_freq_source(&cfg, &[0, 1]);
        assert_eq!(source, FreqSource::None);
        assert!(note
            .unwrap()
            .contains("is the nominal clock, not a measurement"));
        // Said where the user reads it: the host's disclosure.
        let fact = cpu_freq_fact(&cfg.proc_root, &cfg.sys_root);
        assert!(fact.value.is_none());
        assert!(fact
            .missing
            .unwrap()
            .contains("is the nominal clock, not a measurement"));
        cpuinfo("constant_tsc aperfmperf");
        assert_eq!(
            detect_freq_source(&cfg, &[0, 1]),
            (FreqSource::Cpuinfo, None)
        );
        let fact = cpu_freq_fact(&cfg.proc_root, &cfg.sys_root);
        assert_eq!(
            fact.value.as_deref(),
            Some("/proc/cpuinfo cpu MHz (APERF/MPERF), each sample")
        );
        // cpufreq first, whatever cpuinfo says.
        let cur = cfg.sys_root.join("devices/system/cpu/cpu0/cpufreq");
        std::fs::create_dir_all(&cur).unwrap();
        std::fs::write(cur.join("scaling_cur_freq"), "2400000\n").unwrap();
        cpuinfo("constant_tsc");
        assert_eq!(
            detect_freq_source(&cfg, &[0, 1]),
            (FreqSource::Cpufreq, None)
        );
    }
}
