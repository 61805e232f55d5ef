//! Telemetry samples: what every host's CPUs, NICs, disks, processes and power sources
//! did during one sampling interval, already turned into rates and percentages.

use serde::{Deserialize, Serialize};

/// One CPU's utilisation over an interval, mpstat's arithmetic (percent of the interval).
/// `cpu` is the CPU number, or -1 for the all-CPU line.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CpuUtil {
    pub cpu: i32,
    pub usr_pct: f64,
    pub nice_pct: f64,
    pub sys_pct: f64,
    pub iowait_pct: f64,
    pub irq_pct: f64,
    pub soft_pct: f64,
    pub steal_pct: f64,
    pub idle_pct: f64,
}

impl CpuUtil {
    /// A CPU wholly idle over its interval (also what mpstat shows for a CPU that counted
    /// no tick at all).
    pub fn idle(cpu: i32) -> CpuUtil {
        CpuUtil {
            cpu,
            usr_pct: 0.0,
            nice_pct: 0.0,
            sys_pct: 0.0,
            iowait_pct: 0.0,
            irq_pct: 0.0,
            soft_pct: 0.0,
            steal_pct: 0.0,
            idle_pct: 100.0,
        }
    }

    /// Busy percent: 100 - idle - iowait (mpstat's "%CPU" complement of idle; on a VM,
    /// steal counts as busy: the hypervisor gave that time to another guest).
    pub fn busy_pct(&self) -> f64 {
        (100.0 - self.idle_pct - self.iowait_pct).max(0.0)
    }
}

/// One NIC's traffic over an interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NicRate {
    pub name: String,
    pub rx_bytes_per_s: f64,
    pub tx_bytes_per_s: f64,
    pub rx_packets_per_s: f64,
    pub tx_packets_per_s: f64,
    #[serde(default)]
    pub rx_drops_per_s: f64,
    #[serde(default)]
    pub tx_drops_per_s: f64,
}

/// One block device's I/O over an interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiskRate {
    pub name: String,
    pub reads_per_s: f64,
    pub writes_per_s: f64,
    pub read_bytes_per_s: f64,
    pub write_bytes_per_s: f64,
    /// iostat's %util: time with at least one I/O in flight.
    pub util_pct: f64,
}

/// CPU used by one process (the load generator, a server instance) over an interval,
/// in percent of one CPU (100 = one full core), from /proc/PID/stat utime/stime.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcCpu {
    /// `loadgen`, `server:0`, `server:1`, `postgres`...
    pub role: String,
    pub pid: u32,
    pub usr_pct: f64,
    pub sys_pct: f64,
    /// The figure counts the process's descendants too (a server's forked workers and
    /// backends, those that exited within the interval included), less any watched under
    /// a role of their own. False for the process alone (the load generator), and in
    /// records from before descendants were counted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub with_descendants: bool,
}

impl ProcCpu {
    pub fn total_pct(&self) -> f64 {
        self.usr_pct + self.sys_pct
    }
}

/// One power reading of one sample: a mean over its interval, or (`instantaneous`) the
/// value at the moment the interval closed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PowerReading {
    /// `rapl`, `ipmi-dcmi`, `hwmon`, `meter`, `model`.
    pub source: String,
    /// What it covers: `package-0`, `dram-0`, `system`, `psu1`...
    pub zone: String,
    pub watts: f64,
    /// true when the figure is whole-server (IPMI, wall meter), false for a component.
    pub whole_system: bool,
    /// true when computed from a user-declared power model rather than measured.
    pub modelled: bool,
    /// true when the figure is what the source showed as it was read (IPMI DCMI, a meter
    /// command, an hwmon power input), so it stands for the instant the sample closed;
    /// false when it is the mean over the sample's interval (energy counters, the power
    /// model). Such a reading counts for a window only when it was taken inside it, and
    /// is not taken at all when a test's end closes an interval: by then the load has
    /// stopped.
    #[serde(default)]
    pub instantaneous: bool,
    /// Seconds before its sample's end that an instantaneous reading was asked for, when
    /// its command answered after the tick that asked had stopped waiting (a meter or a
    /// BMC slower than a quarter of the interval): the figure is of that moment, not of
    /// the sample's end. None: read as its sample closed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_s: Option<f64>,
}

/// Everything one host reported for one sampling interval. `Default`: an empty sample
/// (no host, time 0), for tests to fill what they need.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TelemetrySample {
    pub host: String,
    /// End of the interval, seconds since the run started.
    pub t_s: f64,
    pub interval_s: f64,
    /// Taken during warm-up (left out of summaries).
    pub warmup: bool,
    pub cpus: Vec<CpuUtil>,
    /// Context switches and interrupts per second; None (null) when /proc/stat has no
    /// `ctxt` or `intr` line at either end of the interval (the sampler's notes say so):
    /// not counted is not zero.
    #[serde(default)]
    pub ctxt_per_s: Option<f64>,
    #[serde(default)]
    pub intr_per_s: Option<f64>,
    #[serde(default)]
    pub nics: Vec<NicRate>,
    #[serde(default)]
    pub disks: Vec<DiskRate>,
    /// Current frequency in MHz of each online CPU whose clock could be read, in
    /// /proc/stat's order (a CPU that could not be read is in the sampler's notes).
    #[serde(default)]
    pub freq_mhz: Vec<f64>,
    #[serde(default)]
    pub procs: Vec<ProcCpu>,
    #[serde(default)]
    pub power: Vec<PowerReading>,
    /// Power sources that were due and gave no reading here (a meter that failed,
    /// printed garbage or did not answer in time), one message each: a gap in their
    /// series.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub power_failed: Vec<String>,
}

/// The gaps in a step's power series on one host: samples where a source was due and
/// gave no reading. The power means are of the readings there are, so they cover
/// `covered_s` of the step's measured time, not all of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PowerGaps {
    /// Samples (ticks) with a failed reading, of `samples`.
    pub failed_samples: u32,
    pub samples: u32,
    /// Seconds of the measured time whose samples had no failure.
    pub covered_s: f64,
    /// The last failure's message (secrets redacted).
    pub last_error: String,
}

/// Mean of a power source over a period.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PowerSummary {
    pub source: String,
    pub zone: String,
    pub mean_watts: f64,
    pub max_watts: f64,
    pub whole_system: bool,
    pub modelled: bool,
}

/// Means over the non-warm-up samples of one step, per host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TelemetrySummary {
    pub host: String,
    pub samples: u32,
    /// Seconds of samples the means cover: the test's measured time where its workload
    /// says when that was, else its whole time (None: stored before this was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub covered_s: Option<f64>,
    /// The means are over samples wholly inside the measured time, none straddling its
    /// edges. False: the whole test (no measured time known), a measured time too short
    /// to hold a whole sample (each sample then weighs by its part inside), or a summary
    /// stored before whole samples were kept (edge samples weighed by their part inside).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub whole_samples: bool,
    /// The spans of time the test measured (its measured time; crypto's sign and
    /// verify, one per timed part), on this host's sample clock: the `t_s` of its
    /// samples, each of which covers `(t_s - interval_s, t_s]`. So the raw samples a
    /// summary was taken from can be found again. Empty: not known (the whole test was
    /// summarised), or stored before they were kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub measured_t_s: Vec<[f64; 2]>,
    /// Per-CPU means; index -1 is the all-CPU line.
    pub cpus: Vec<CpuUtil>,
    /// Means over the samples that counted them; None (null) when none did (see
    /// [`TelemetrySample::ctxt_per_s`]).
    #[serde(default)]
    pub ctxt_per_s: Option<f64>,
    #[serde(default)]
    pub intr_per_s: Option<f64>,
    pub nics: Vec<NicRate>,
    pub disks: Vec<DiskRate>,
    pub mean_freq_mhz: Option<f64>,
    pub procs: Vec<ProcCpu>,
    pub power: Vec<PowerSummary>,
    /// Why power is absent, when it is (`no power source found: no RAPL, IPMI, hwmon`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_missing: Option<String>,
    /// Samples whose power source failed, when any did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_gaps: Option<PowerGaps>,
    /// CPUs and processes that were not in every sample the means cover (a CPU taken
    /// offline or brought online, a process that started or exited during the test),
    /// each with the seconds of `covered_s` it was in. Empty: all were there throughout.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub part_present: Vec<PartPresent>,
}

/// A CPU or a process in only some of a summary's samples. A CPU's line in
/// [`TelemetrySummary::cpus`] is its mean over the time it was there, as mpstat's average
/// line is, so a sum over CPUs weighs it by that time's share of the window
/// ([`TelemetrySummary::cpus_sum`]). A process's figure in [`TelemetrySummary::procs`] is
/// over the whole window already: it used no CPU while it was not there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartPresent {
    /// The CPU's number; None for a process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<i32>,
    /// The process's role and pid; None for a CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    pub present_s: f64,
}

impl TelemetrySummary {
    /// The share of the window (`covered_s`) that `cpu` was online in its samples: 1
    /// unless [`TelemetrySummary::part_present`] says otherwise.
    pub fn cpu_share(&self, cpu: i32) -> f64 {
        let present = self
            .part_present
            .iter()
            .find(|p| p.cpu == Some(cpu))
            .map(|p| p.present_s);
        match (present, self.covered_s) {
            (Some(p), Some(w)) if w > 0.0 => (p / w).min(1.0),
            _ => 1.0,
        }
    }

    /// `f` summed over the per-CPU lines that `of` keeps, each weighed by the share of
    /// the window its CPU was online: CPU-seconds over window seconds, so a CPU at 100%
    /// busy for half the window adds 50% of one CPU, not 100%. None with no such line.
    pub fn cpus_sum(&self, of: impl Fn(i32) -> bool, f: impl Fn(&CpuUtil) -> f64) -> Option<f64> {
        let lines: Vec<&CpuUtil> = self
            .cpus
            .iter()
            .filter(|c| c.cpu >= 0 && of(c.cpu))
            .collect();
        (!lines.is_empty()).then(|| lines.iter().map(|c| f(c) * self.cpu_share(c.cpu)).sum())
    }

    /// The CPUs online over the window, each counted for its share of it: two CPUs, one
    /// of them online for half the window, make 1.5. None with no per-CPU line.
    pub fn cpus_online(&self) -> Option<f64> {
        self.cpus_sum(|_| true, |_| 1.0)
    }
}
