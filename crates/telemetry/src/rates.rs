//! Interval arithmetic: two snapshots of cumulative kernel counters become the rates
//! and percentages of a [`model::TelemetrySample`].
//!
//! CPU percentages follow mpstat exactly (sysstat `rd_stats.c:get_per_cpu_interval`,
//! `mpstat.c`, `common.c:ll_sp_value`) so our figures match the reference tool: the
//! interval is the per-CPU sum of user..softirq deltas (guest excluded, it is inside
//! user), `%usr` excludes guest time, a field that went backwards contributes 0, and the
//! iowait/idle reset workaround for CPUs coming back online is kept. Disk `%util`
//! is iostat's: milliseconds with I/O in flight over wall milliseconds.

use std::collections::BTreeMap;

use model::{CpuUtil, DiskRate, NicRate, ProcCpu};

use crate::parse::{CpuTimes, DiskCounters, NetDevCounters, PidStat, ProcStat};

/// sysstat's guard: a previous value this close to the top of the range means the
/// counter overflowed rather than the CPU going offline and back.
const NEAR_U64_MAX: u64 = u64::MAX - 0x7ffff;

/// One CPU's ticks in each state between two `/proc/stat` snapshots, with mpstat's
/// corrections, and the interval they make up (`total`).
#[derive(Debug, Clone, Copy, Default)]
struct Ticks {
    usr: u64,
    nice: u64,
    sys: u64,
    iowait: u64,
    irq: u64,
    soft: u64,
    steal: u64,
    idle: u64,
    total: u64,
}

impl Ticks {
    fn between(prev: &CpuTimes, cur: &CpuTimes) -> Ticks {
        let mut p = *prev;
        let c = cur;
        let c_usr = c.user.wrapping_sub(c.guest);
        let p_usr = p.user.wrapping_sub(p.guest);
        let c_nice = c.nice.wrapping_sub(c.guest_nice);
        let p_nice = p.nice.wrapping_sub(p.guest_nice);

        // Guest time can read slightly higher than the user time that contains it;
        // sysstat widens the interval by the shortfall instead of producing a negative
        // %usr.
        let mut ishift: u64 = 0;
        if c_usr < p_usr {
            ishift = ishift.wrapping_add(p_usr - c_usr);
        }
        if c_nice < p_nice {
            ishift = ishift.wrapping_add(p_nice - c_nice);
        }
        // iowait can go backwards (accounted as iowait, then as idle): if idle did not
        // also go backwards it is a reporting glitch, otherwise the CPU came back online
        // and idle/iowait restarted from zero.
        if c.iowait < p.iowait && p.iowait < NEAR_U64_MAX {
            if c.idle > p.idle || p.idle >= NEAR_U64_MAX {
                p.iowait = c.iowait;
            } else {
                p.iowait = 0;
            }
        }
        if c.idle < p.idle && p.idle < NEAR_U64_MAX {
            p.idle = 0;
        }
        let total = |t: &CpuTimes| {
            t.user
                .wrapping_add(t.nice)
                .wrapping_add(t.system)
                .wrapping_add(t.iowait)
                .wrapping_add(t.idle)
                .wrapping_add(t.steal)
                .wrapping_add(t.irq)
                .wrapping_add(t.softirq)
        };
        // ll_sp_value: a counter that went backwards gives 0, never a negative percent.
        let d = |a: u64, b: u64| b.saturating_sub(a);
        Ticks {
            usr: d(p_usr, c_usr),
            nice: d(p_nice, c_nice),
            sys: d(p.system, c.system),
            iowait: d(p.iowait, c.iowait),
            irq: d(p.irq, c.irq),
            soft: d(p.softirq, c.softirq),
            steal: d(p.steal, c.steal),
            idle: d(p.idle, c.idle),
            total: total(c).wrapping_sub(total(&p)).wrapping_add(ishift),
        }
    }

    fn add(&mut self, o: &Ticks) {
        self.usr += o.usr;
        self.nice += o.nice;
        self.sys += o.sys;
        self.iowait += o.iowait;
        self.irq += o.irq;
        self.soft += o.soft;
        self.steal += o.steal;
        self.idle += o.idle;
        self.total = self.total.wrapping_add(o.total);
    }

    fn util(&self, cpu: i32) -> CpuUtil {
        if self.total == 0 {
            // No tick at all in the interval: mpstat shows such a (tickless) CPU as idle.
            return CpuUtil::idle(cpu);
        }
        let pct = |v: u64| v as f64 / self.total as f64 * 100.0;
        CpuUtil {
            cpu,
            usr_pct: pct(self.usr),
            nice_pct: pct(self.nice),
            sys_pct: pct(self.sys),
            iowait_pct: pct(self.iowait),
            irq_pct: pct(self.irq),
            soft_pct: pct(self.soft),
            steal_pct: pct(self.steal),
            idle_pct: pct(self.idle),
        }
    }
}

/// One CPU's utilisation between two `/proc/stat` snapshots, mpstat's arithmetic.
pub fn cpu_util(cpu: i32, prev: &CpuTimes, cur: &CpuTimes) -> CpuUtil {
    Ticks::between(prev, cur).util(cpu)
}

/// All CPUs together (`cpu` -1) then each CPU online in both snapshots, from one pass
/// over them. "All" is mpstat's: the sum of each CPU online in both, each corrected on
/// its own. The kernel's `cpu` line sums every possible CPU, and a CPU taken offline and
/// back restarts its idle count there: its drop zeroed the whole line's idle base, so
/// the interval counted all idle time since boot and two busy CPUs read 2% busy. The
/// `cpu` line only where there are no `cpuN` lines in common.
pub fn cpu_utils(prev: &ProcStat, cur: &ProcStat) -> Vec<CpuUtil> {
    let mut sum = Ticks::default();
    let mut each = Vec::with_capacity(cur.cpus.len() + 1);
    for (n, c) in &cur.cpus {
        if let Some((_, p)) = prev.cpus.iter().find(|(m, _)| m == n) {
            let t = Ticks::between(p, c);
            sum.add(&t);
            each.push(t.util(*n as i32));
        }
    }
    let all = match (&prev.all, &cur.all) {
        _ if !each.is_empty() => Some(sum.util(-1)),
        (Some(p), Some(c)) => Some(cpu_util(-1, p, c)),
        _ => None,
    };
    all.into_iter().chain(each).collect()
}

/// Increase of a cumulative counter between two readings.
///
/// A counter that went backwards either wrapped or was reset (an interface re-created,
/// a driver reloaded). Below 2^32 we assume a 32-bit counter wrapped (32-bit kernels'
/// `unsigned long` network counters, diskstats' `unsigned int` tick fields); above it a
/// 64-bit counter cannot plausibly wrap between two samples, so it was reset and the
/// new value is the increase since the reset.
pub fn counter_delta(prev: u64, cur: u64) -> u64 {
    if cur >= prev {
        cur - prev
    } else if prev <= u64::from(u32::MAX) {
        (u64::from(u32::MAX) - prev) + cur + 1
    } else {
        cur
    }
}

/// Increase of a counter the kernel keeps in 64 bits (`/proc/stat`'s ctxt and intr;
/// `/proc/net/dev` and diskstats' counts on a 64-bit kernel): going backwards is a reset,
/// never a wrap, and the new value is the increase since it. (Read as a 32-bit wrap, a
/// drop counter reset from 1,200 to 3 was 4.29e9 drops in one second.)
pub fn counter64_delta(prev: u64, cur: u64) -> u64 {
    if cur >= prev {
        cur - prev
    } else {
        cur
    }
}

/// Increase of a counter the kernel keeps as `unsigned long`: 64 bits on a 64-bit kernel
/// (which a 64-bit build runs on), 32 on a 32-bit one.
fn ulong_delta(prev: u64, cur: u64) -> u64 {
    if cfg!(target_pointer_width = "64") {
        counter64_delta(prev, cur)
    } else {
        counter_delta(prev, cur)
    }
}

/// Per second of a network or disk count (`unsigned long` in the kernel).
fn per_s(prev: u64, cur: u64, dt_s: f64) -> f64 {
    if dt_s <= 0.0 {
        return 0.0;
    }
    ulong_delta(prev, cur) as f64 / dt_s
}

/// NIC rates for every interface present in both snapshots (in `cur`'s order).
pub fn nic_rates(prev: &[NetDevCounters], cur: &[NetDevCounters], dt_s: f64) -> Vec<NicRate> {
    cur.iter()
        .filter_map(|c| {
            let p = prev.iter().find(|p| p.name == c.name)?;
            Some(NicRate {
                name: c.name.clone(),
                rx_bytes_per_s: per_s(p.rx_bytes, c.rx_bytes, dt_s),
                tx_bytes_per_s: per_s(p.tx_bytes, c.tx_bytes, dt_s),
                rx_packets_per_s: per_s(p.rx_packets, c.rx_packets, dt_s),
                tx_packets_per_s: per_s(p.tx_packets, c.tx_packets, dt_s),
                rx_drops_per_s: per_s(p.rx_drop, c.rx_drop, dt_s),
                tx_drops_per_s: per_s(p.tx_drop, c.tx_drop, dt_s),
            })
        })
        .collect()
}

/// Bytes per diskstats sector: always 512, whatever the device's logical block size
/// (kernel `block/genhd.c` prints sectors in 512-byte units).
pub const DISKSTATS_SECTOR_BYTES: f64 = 512.0;

/// Disk rates for every device present in both snapshots (the caller filters which
/// devices are whole disks). `%util` is iostat's, capped at 100 as iostat does.
pub fn disk_rates(prev: &[DiskCounters], cur: &[DiskCounters], dt_s: f64) -> Vec<DiskRate> {
    cur.iter()
        .filter_map(|c| {
            let p = prev.iter().find(|p| p.name == c.name)?;
            let util = if dt_s > 0.0 {
                (counter_delta(p.io_ms, c.io_ms) as f64 / (dt_s * 1000.0) * 100.0).min(100.0)
            } else {
                0.0
            };
            Some(DiskRate {
                name: c.name.clone(),
                reads_per_s: per_s(p.reads, c.reads, dt_s),
                writes_per_s: per_s(p.writes, c.writes, dt_s),
                read_bytes_per_s: per_s(p.read_sectors, c.read_sectors, dt_s)
                    * DISKSTATS_SECTOR_BYTES,
                write_bytes_per_s: per_s(p.write_sectors, c.write_sectors, dt_s)
                    * DISKSTATS_SECTOR_BYTES,
                util_pct: util,
            })
        })
        .collect()
}

/// A process's CPU over an interval, in percent of one CPU (100 = one full core): its
/// own threads only.
pub fn proc_cpu(role: &str, prev: &PidStat, cur: &PidStat, dt_s: f64, ticks_per_s: f64) -> ProcCpu {
    let d = |a: u64, b: u64| b.saturating_sub(a);
    tree_cpu(
        role,
        cur.pid,
        (d(prev.utime, cur.utime), d(prev.stime, cur.stime)),
        dt_s,
        ticks_per_s,
        false,
    )
}

/// CPU ticks (user, system) over an interval, in percent of one CPU, as the figure of
/// process `pid` (with its descendants when `with_descendants`).
pub fn tree_cpu(
    role: &str,
    pid: u32,
    (usr_ticks, sys_ticks): (u64, u64),
    dt_s: f64,
    ticks_per_s: f64,
    with_descendants: bool,
) -> ProcCpu {
    let pct = |t: u64| {
        if dt_s <= 0.0 || ticks_per_s <= 0.0 {
            0.0
        } else {
            t as f64 / ticks_per_s / dt_s * 100.0
        }
    };
    ProcCpu {
        role: role.to_string(),
        pid,
        usr_pct: pct(usr_ticks),
        sys_pct: pct(sys_ticks),
        with_descendants,
    }
}

/// A watched process and its descendants at one moment: the /proc/PID/stat of each, and
/// of the children left out because they are watched under roles of their own (nginx's
/// workers beside their master), whose time lands in their parent's `cutime` once they
/// exit and must then be taken off.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TreeReading {
    pub members: BTreeMap<u32, PidStat>,
    pub fenced: BTreeMap<u32, PidStat>,
}

/// The process tree rooted at `root` in `all` (every process on the host, by PID),
/// without the subtrees of the processes in `fence` (other than `root`). Empty when
/// `root` is not in `all`.
pub fn process_tree(all: &BTreeMap<u32, PidStat>, root: u32, fence: &[u32]) -> TreeReading {
    let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (pid, s) in all {
        children.entry(s.ppid).or_default().push(*pid);
    }
    let mut out = TreeReading::default();
    let mut todo = vec![root];
    while let Some(pid) = todo.pop() {
        let Some(s) = all.get(&pid) else { continue };
        if pid != root && fence.contains(&pid) {
            out.fenced.insert(pid, s.clone());
            continue;
        }
        // A PID met twice (a reading torn by a PID reused mid-scan) is walked once.
        if out.members.insert(pid, s.clone()).is_some() {
            continue;
        }
        todo.extend(children.get(&pid).into_iter().flatten().copied());
    }
    out
}

/// The CPU ticks (user, system) a process tree used between two readings, `all` being
/// every process at the second, as `pidstat -T ALL` counts a process with its children.
///
/// Each member counts what it used itself and what the children it waited for had used
/// (`cutime`/`cstime`): a PostgreSQL backend that served a connection and exited within
/// the interval is never seen, its time reaches its parent's `cutime` when reaped. A
/// process seen last time that is gone now has reached its parent's `cutime` whole, so
/// what it had used by then, already counted, is taken off. A process that appeared
/// since counts whole (it was forked within the interval). Exact but for a process
/// reaped by one outside the tree (an orphan reparented to init), whose last moments are
/// lost and whose earlier time is taken off: each figure is clamped at 0.
pub fn tree_ticks(
    prev: &TreeReading,
    cur: &TreeReading,
    all: &BTreeMap<u32, PidStat>,
) -> (u64, u64) {
    // A PID with another start time is another process.
    let same = |a: &PidStat, b: &PidStat| a.starttime == b.starttime;
    let total = |p: &PidStat| {
        (
            i128::from(p.utime) + i128::from(p.cutime),
            i128::from(p.stime) + i128::from(p.cstime),
        )
    };
    let (mut usr, mut sys) = (0i128, 0i128);
    for (pid, c) in &cur.members {
        let before = prev
            .members
            .get(pid)
            .or_else(|| prev.fenced.get(pid))
            .filter(|p| same(p, c))
            .map_or((0, 0), total);
        let now = total(c);
        usr += now.0 - before.0;
        sys += now.1 - before.1;
    }
    for (pid, p) in prev.members.iter().chain(&prev.fenced) {
        if !all.get(pid).is_some_and(|c| same(p, c)) {
            let t = total(p);
            usr -= t.0;
            sys -= t.1;
        }
    }
    let clamp = |v: i128| u64::try_from(v.max(0)).unwrap_or(u64::MAX);
    (clamp(usr), clamp(sys))
}

/// Energy counter increase with wraparound at `max_range` (powercap `max_energy_range_uj`):
/// after the maximum the counter restarts from 0 (Kepler `energy_zone.go`; the +1 µJ
/// off-by-one is negligible). `None` when the reading is impossible (a value above the
/// range, or a backwards step with no known range) and the interval must be dropped.
pub fn energy_delta(prev: u64, cur: u64, max_range: Option<u64>) -> Option<u64> {
    if cur >= prev {
        return Some(cur - prev);
    }
    let max = max_range?;
    if prev > max {
        return None;
    }
    Some((max - prev) + cur)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The all-CPU row of [`cpu_utils`].
    fn all_cpu_util(prev: &ProcStat, cur: &ProcStat) -> Option<CpuUtil> {
        cpu_utils(prev, cur).into_iter().find(|u| u.cpu == -1)
    }

    fn t(v: [u64; 10]) -> CpuTimes {
        CpuTimes {
            user: v[0],
            nice: v[1],
            system: v[2],
            idle: v[3],
            iowait: v[4],
            irq: v[5],
            softirq: v[6],
            steal: v[7],
            guest: v[8],
            guest_nice: v[9],
        }
    }

    /// Two CPUs busy all along, CPU 1 taken offline and back between the snapshots (its
    /// idle restarts at 0): all CPUs are 100% busy, as mpstat's "all" says. From the
    /// kernel's `cpu` line, whose idle dropped, the interval took all idle time since
    /// boot: 2.2% busy.
    #[test]
    fn all_cpus_follow_mpstat_across_a_cpu_back_online() {
        let stat = |all: [u64; 10], c0: [u64; 10], c1: [u64; 10]| ProcStat {
            all: Some(t(all)),
            cpus: vec![(0, t(c0)), (1, t(c1))],
            ctxt: None,
            intr: None,
        };
        let a = stat(
            [200, 0, 0, 20000, 0, 0, 0, 0, 0, 0],
            [100, 0, 0, 9000, 0, 0, 0, 0, 0, 0],
            [100, 0, 0, 11000, 0, 0, 0, 0, 0, 0],
        );
        let b = stat(
            [400, 0, 0, 9000, 0, 0, 0, 0, 0, 0],
            [200, 0, 0, 9000, 0, 0, 0, 0, 0, 0],
            [200, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        );
        let u = all_cpu_util(&a, &b).unwrap();
        assert_eq!(u.cpu, -1);
        assert!((u.usr_pct - 100.0).abs() < 1e-9, "{u:?}");
        assert_eq!(u.idle_pct, 0.0);
        // All first, then each CPU as on its own.
        let rows = cpu_utils(&a, &b);
        let cpus: Vec<i32> = rows.iter().map(|r| r.cpu).collect();
        assert_eq!(cpus, [-1, 0, 1]);
        assert_eq!(
            format!("{:?}", rows[2]),
            format!("{:?}", cpu_util(1, &a.cpus[1].1, &b.cpus[1].1))
        );
        // A CPU in one snapshot only is left out; with no `cpuN` in common, the line.
        let mut c = b.clone();
        c.cpus.clear();
        let mut d = a.clone();
        d.cpus.clear();
        d.all = Some(t([100, 0, 0, 900, 0, 0, 0, 0, 0, 0]));
        c.all = Some(t([150, 0, 0, 950, 0, 0, 0, 0, 0, 0]));
        assert!((all_cpu_util(&d, &c).unwrap().usr_pct - 50.0).abs() < 1e-9);
        // Steady CPUs: the sum of the lines is the `cpu` line's figure.
        let e = stat(
            [300, 0, 0, 20100, 0, 0, 0, 0, 0, 0],
            [150, 0, 0, 9050, 0, 0, 0, 0, 0, 0],
            [150, 0, 0, 11050, 0, 0, 0, 0, 0, 0],
        );
        let line = cpu_util(-1, a.all.as_ref().unwrap(), e.all.as_ref().unwrap());
        let sum = all_cpu_util(&a, &e).unwrap();
        assert!((line.usr_pct - sum.usr_pct).abs() < 1e-9 && (sum.usr_pct - 50.0).abs() < 1e-9);
    }

    #[test]
    fn mpstat_basic_split() {
        let a = t([100, 0, 50, 1000, 10, 0, 5, 0, 0, 0]);
        let b = t([160, 0, 70, 1100, 10, 5, 15, 0, 0, 0]);
        let u = cpu_util(0, &a, &b);
        // deltot = 60 + 20 + 100 + 5 + 10 = 195
        assert!((u.usr_pct - 60.0 / 195.0 * 100.0).abs() < 1e-9);
        assert!((u.sys_pct - 20.0 / 195.0 * 100.0).abs() < 1e-9);
        assert!((u.irq_pct - 5.0 / 195.0 * 100.0).abs() < 1e-9);
        assert!((u.soft_pct - 10.0 / 195.0 * 100.0).abs() < 1e-9);
        assert!((u.idle_pct - 100.0 / 195.0 * 100.0).abs() < 1e-9);
        let sum = u.usr_pct + u.sys_pct + u.irq_pct + u.soft_pct + u.idle_pct;
        assert!((sum - 100.0).abs() < 1e-9);
    }

    #[test]
    fn guest_excluded_from_usr_and_total() {
        // 40 ticks of user of which 30 were guest: %usr counts 10, total counts 40 once.
        let a = t([0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        let b = t([40, 0, 0, 60, 0, 0, 0, 0, 30, 0]);
        let u = cpu_util(1, &a, &b);
        assert!((u.usr_pct - 10.0).abs() < 1e-9, "{u:?}");
        assert!((u.idle_pct - 60.0).abs() < 1e-9);
    }

    #[test]
    fn guest_above_user_widens_interval_not_negative() {
        let a = t([100, 0, 0, 100, 0, 0, 0, 0, 50, 0]);
        // user-guest went from 50 to 48: ishift = 2
        let b = t([150, 0, 0, 150, 0, 0, 0, 0, 102, 0]);
        let u = cpu_util(0, &a, &b);
        assert_eq!(u.usr_pct, 0.0);
        // deltot = 50 (user) + 50 (idle) + 2 (shift) = 102
        assert!((u.idle_pct - 50.0 / 102.0 * 100.0).abs() < 1e-9);
    }

    #[test]
    fn negative_deltas_give_zero() {
        let a = t([100, 0, 100, 100, 0, 0, 9, 0, 0, 0]);
        let b = t([200, 0, 100, 200, 0, 0, 3, 0, 0, 0]);
        let u = cpu_util(0, &a, &b);
        assert_eq!(u.soft_pct, 0.0);
        assert!(u.usr_pct > 0.0 && u.idle_pct > 0.0);
    }

    #[test]
    fn cpu_back_online_idle_restarts_from_zero() {
        let a = t([500, 0, 100, 9000, 50, 0, 0, 0, 0, 0]);
        // idle and iowait restarted at 0 after hotplug; user/system continued.
        let b = t([600, 0, 100, 100, 0, 0, 0, 0, 0, 0]);
        let u = cpu_util(0, &a, &b);
        // prev idle/iowait treated as 0: deltot = 100 user + 100 idle
        assert!((u.usr_pct - 50.0).abs() < 1e-9, "{u:?}");
        assert!((u.idle_pct - 50.0).abs() < 1e-9);
    }

    #[test]
    fn iowait_glitch_corrected_to_current() {
        // iowait went back 5 while idle advanced: the iowait reading is corrected, not
        // treated as hotplug.
        let a = t([0, 0, 0, 100, 20, 0, 0, 0, 0, 0]);
        let b = t([50, 0, 0, 150, 15, 0, 0, 0, 0, 0]);
        let u = cpu_util(0, &a, &b);
        assert_eq!(u.iowait_pct, 0.0);
        assert!((u.usr_pct - 50.0).abs() < 1e-9);
    }

    #[test]
    fn tickless_cpu_is_idle() {
        let a = t([1, 2, 3, 4, 5, 6, 7, 8, 0, 0]);
        let u = cpu_util(3, &a, &a);
        assert_eq!(u.idle_pct, 100.0);
        assert_eq!(u.busy_pct(), 0.0);
    }

    #[test]
    fn counters_wrap_and_reset() {
        assert_eq!(counter_delta(10, 15), 5);
        // 32-bit wrap: 2^32-6 -> 4 is 10 ticks
        assert_eq!(counter_delta(u64::from(u32::MAX) - 5, 4), 10);
        // 64-bit counter reset (interface re-created): increase since reset
        assert_eq!(counter_delta(1 << 40, 1000), 1000);
        // A 64-bit counter reset from below 2^32 is a reset too, not a wrap.
        assert_eq!(counter64_delta(1_200, 3), 3);
        assert_eq!(counter64_delta(3, 1_200), 1_197);
    }

    /// A NIC's drop counter reset (interface re-created, driver reloaded) from 1,200 to 3
    /// in a one-second sample is 3 drops, not the 4.29e9 of a 32-bit wrap.
    #[test]
    fn a_reset_nic_counter_is_no_wrap() {
        let dev = |rx_drop: u64| NetDevCounters {
            name: "eth0".into(),
            rx_drop,
            ..NetDevCounters::default()
        };
        let r = nic_rates(&[dev(1_200)], &[dev(3)], 1.0);
        assert_eq!(r[0].rx_drops_per_s, 3.0);
    }

    #[test]
    fn energy_wraps_at_range() {
        assert_eq!(energy_delta(100, 250, Some(1000)), Some(150));
        assert_eq!(energy_delta(900, 50, Some(1000)), Some(150));
        assert_eq!(energy_delta(900, 50, None), None);
        assert_eq!(energy_delta(2000, 50, Some(1000)), None);
    }

    #[test]
    fn disk_util_capped_and_bytes_in_512_sectors() {
        let mk = |r, rs, io| DiskCounters {
            name: "sda".into(),
            reads: r,
            read_sectors: rs,
            io_ms: io,
            ..Default::default()
        };
        let d = disk_rates(&[mk(0, 0, 0)], &[mk(100, 2048, 1500)], 1.0);
        assert_eq!(d[0].reads_per_s, 100.0);
        assert_eq!(d[0].read_bytes_per_s, 2048.0 * 512.0);
        assert_eq!(d[0].util_pct, 100.0);
        let d = disk_rates(&[mk(0, 0, 0)], &[mk(1, 8, 250)], 1.0);
        assert!((d[0].util_pct - 25.0).abs() < 1e-9);
    }

    #[test]
    fn proc_cpu_percent_of_one_core() {
        let a = PidStat {
            pid: 7,
            utime: 100,
            stime: 10,
            ..Default::default()
        };
        let b = PidStat {
            pid: 7,
            utime: 250,
            stime: 60,
            ..Default::default()
        };
        // 150 ticks of 100 Hz in 1 s = 1.5 s of CPU = 150 % of one core
        let p = proc_cpu("server:0", &a, &b, 1.0, 100.0);
        assert!((p.usr_pct - 150.0).abs() < 1e-9);
        assert!((p.sys_pct - 50.0).abs() < 1e-9);
        assert!((p.total_pct() - 200.0).abs() < 1e-9);
    }

    fn ps(pid: u32, ppid: u32, utime: u64, stime: u64, cutime: u64, cstime: u64) -> PidStat {
        PidStat {
            pid,
            ppid,
            utime,
            stime,
            cutime,
            cstime,
            starttime: u64::from(pid),
            ..Default::default()
        }
    }

    fn table(v: &[PidStat]) -> BTreeMap<u32, PidStat> {
        v.iter().map(|p| (p.pid, p.clone())).collect()
    }

    #[test]
    fn postmaster_tree_counts_its_backends_live_new_and_exited() {
        // The postmaster (100) barely runs; backend 101 works throughout, 102 is forked
        // during the interval, 103 served a connection and was reaped (its 40 + 10 ticks
        // reach the postmaster's cutime/cstime), 104 was never seen (forked and reaped
        // within the interval: 7 + 3). Process 1 and 200 are not in the tree.
        let before = table(&[
            ps(1, 0, 500, 500, 0, 0),
            ps(100, 1, 5, 5, 0, 0),
            ps(101, 100, 1000, 200, 0, 0),
            ps(103, 100, 30, 8, 0, 0),
            ps(200, 1, 0, 0, 0, 0),
        ]);
        let after = table(&[
            ps(1, 0, 900, 900, 0, 0),
            ps(100, 1, 6, 5, 40 + 7, 10 + 3),
            ps(101, 100, 1080, 220, 0, 0),
            ps(102, 100, 15, 5, 0, 0),
            ps(200, 1, 999, 999, 0, 0),
        ]);
        let prev = process_tree(&before, 100, &[]);
        assert_eq!(
            prev.members.keys().copied().collect::<Vec<_>>(),
            [100, 101, 103]
        );
        let cur = process_tree(&after, 100, &[]);
        let (usr, sys) = tree_ticks(&prev, &cur, &after);
        // usr: 1 (postmaster) + 80 (101) + 15 (102) + (40 - 30) (103's rest) + 7 (104)
        assert_eq!(usr, 1 + 80 + 15 + 10 + 7);
        // sys: 0 + 20 + 5 + (10 - 8) + 3
        assert_eq!(sys, 20 + 5 + 2 + 3);
        // The old reading, the postmaster's own ticks, said 1 and 0.
        let own = proc_cpu("postgres", &before[&100], &after[&100], 1.0, 100.0);
        assert_eq!((own.usr_pct, own.sys_pct), (1.0, 0.0));
        let tree = tree_cpu("postgres", 100, (usr, sys), 1.0, 100.0, true);
        assert!((tree.usr_pct - 113.0).abs() < 1e-9, "{tree:?}");
    }

    #[test]
    fn watched_children_are_fenced_off_even_when_reaped() {
        // nginx: master 100, workers 101 and 102 watched under roles of their own; 102
        // exits and is reaped, its 500 + 100 ticks reaching the master's cutime.
        let before = table(&[
            ps(100, 1, 10, 10, 0, 0),
            ps(101, 100, 300, 100, 0, 0),
            ps(102, 100, 450, 90, 0, 0),
        ]);
        let after = table(&[ps(100, 1, 12, 10, 500, 100), ps(101, 100, 900, 300, 0, 0)]);
        let fence = [100, 101, 102];
        let prev = process_tree(&before, 100, &fence);
        assert_eq!(prev.members.len(), 1);
        assert_eq!(prev.fenced.len(), 2);
        let cur = process_tree(&after, 100, &fence);
        // The master's 2 ticks, and the 50 + 10 the worker used after the last reading.
        assert_eq!(tree_ticks(&prev, &cur, &after), (2 + 50, 10));
    }

    #[test]
    fn a_reused_pid_is_another_process() {
        let before = table(&[ps(100, 1, 10, 10, 0, 0), ps(101, 100, 300, 100, 0, 0)]);
        let mut new = ps(101, 100, 4, 1, 0, 0);
        new.starttime = 9999;
        // 101 exited (reaped: 300 + 100 more in the parent's c-times) and a new 101 began.
        let after = table(&[ps(100, 1, 10, 10, 300, 100), new]);
        let prev = process_tree(&before, 100, &[]);
        let cur = process_tree(&after, 100, &[]);
        assert_eq!(tree_ticks(&prev, &cur, &after), (4, 1));
    }
}
