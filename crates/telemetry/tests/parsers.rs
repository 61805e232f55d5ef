//! The pure parsers on text captured from a real host (fixtures/host1: a 2-vCPU KVM
//! guest, kernel 6.18, two /proc snapshots ~1.2 s apart) and on ipmitool's output
//! format, plus an every-prefix robustness pass (no parser may panic on truncated input).

use rackbench_telemetry as telemetry;
use telemetry::parse::*;
use telemetry::rates::{cpu_util, disk_rates, nic_rates};

const STAT_A: &str = include_str!("fixtures/host1/proc_stat");
const STAT_B: &str = include_str!("fixtures/host1/proc_stat.2");
const NET_A: &str = include_str!("fixtures/host1/proc_net_dev");
const NET_B: &str = include_str!("fixtures/host1/proc_net_dev.2");
const DISK_A: &str = include_str!("fixtures/host1/proc_diskstats");
const DISK_B: &str = include_str!("fixtures/host1/proc_diskstats.2");
const CPUINFO: &str = include_str!("fixtures/host1/proc_cpuinfo");
const MEMINFO: &str = include_str!("fixtures/host1/proc_meminfo");
const SELF_STAT: &str = include_str!("fixtures/host1/proc_self_stat");
const DCMI: &str = include_str!("fixtures/ipmitool_dcmi_power_reading.txt");
const DCMI_COLON: &str = include_str!("fixtures/ipmitool_dcmi_power_reading_colon_after.txt");
const DCMI_OFF: &str = include_str!("fixtures/ipmitool_dcmi_power_reading_deactivated.txt");

#[test]
fn proc_stat_real() {
    let a = parse_proc_stat(STAT_A);
    let b = parse_proc_stat(STAT_B);
    assert_eq!(a.cpus.len(), 2);
    assert_eq!(a.cpus[0].0, 0);
    assert_eq!(a.cpus[1].0, 1);
    let all = a.all.unwrap();
    // The all-CPU line is the sum of the per-CPU lines, give or take the ticks that
    // land while the kernel formats the file.
    let near = |x: u64, y: u64| x.abs_diff(y) <= 5;
    assert!(near(all.user, a.cpus[0].1.user + a.cpus[1].1.user));
    assert!(near(all.idle, a.cpus[0].1.idle + a.cpus[1].1.idle));
    assert!(a.ctxt.unwrap() > 0 && a.intr.unwrap() > 0);
    assert!(b.ctxt.unwrap() >= a.ctxt.unwrap());

    let u = cpu_util(-1, &a.all.unwrap(), &b.all.unwrap());
    let sum = u.usr_pct
        + u.nice_pct
        + u.sys_pct
        + u.iowait_pct
        + u.irq_pct
        + u.soft_pct
        + u.steal_pct
        + u.idle_pct;
    assert!((sum - 100.0).abs() < 1e-6, "{u:?}");
    for (n, t) in &b.cpus {
        let p = &a.cpus.iter().find(|(m, _)| m == n).unwrap().1;
        let u = cpu_util(*n as i32, p, t);
        assert!(u.idle_pct >= 0.0 && u.idle_pct <= 100.0);
    }
}

#[test]
fn net_dev_real() {
    let a = parse_net_dev(NET_A);
    let names: Vec<&str> = a.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["lo", "ifb0", "ifb1", "eth0"]);
    let eth0 = a.iter().find(|n| n.name == "eth0").unwrap();
    assert!(eth0.rx_bytes > 0 && eth0.rx_packets > 0);
    let b = parse_net_dev(NET_B);
    let r = nic_rates(&a, &b, 1.2);
    assert_eq!(r.len(), 4);
    assert!(r.iter().all(|n| n.rx_bytes_per_s >= 0.0));
}

#[test]
fn diskstats_real() {
    let a = parse_diskstats(DISK_A);
    let vda = a.iter().find(|d| d.name == "vda").unwrap();
    assert_eq!((vda.major, vda.minor), (254, 0));
    assert!(vda.reads > 0 && vda.read_sectors > 0 && vda.io_ms > 0);
    assert!(a.iter().any(|d| d.name == "loop0"));
    let b = parse_diskstats(DISK_B);
    let r = disk_rates(&a, &b, 1.2);
    assert!(r.iter().all(|d| d.util_pct >= 0.0 && d.util_pct <= 100.0));
}

#[test]
fn diskstats_old_kernel_format() {
    // 4.x: 11 fields, no discard/flush columns.
    let s = "   8       0 sda 1000 10 80000 500 2000 20 160000 900 0 1200 1400\n";
    let d = parse_diskstats(s);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].writes, 2000);
    assert_eq!(d[0].io_ms, 1200);
    assert_eq!(d[0].discards, 0);
}

#[test]
fn cpuinfo_real() {
    let b = parse_cpuinfo(CPUINFO);
    let procs: Vec<_> = b.iter().filter(|b| b.get("processor").is_some()).collect();
    assert_eq!(procs.len(), 2);
    assert_eq!(
        procs[0].get("model name"),
        Some("Intel(R) Xeon(R) Processor")
    );
    assert_eq!(procs[0].get("vendor_id"), Some("GenuineIntel"));
    assert!(procs[0].get("flags").unwrap().contains("hypervisor"));
    let mhz = cpuinfo_mhz(&b);
    assert_eq!(mhz.get(&0), Some(&2300.0));
    assert_eq!(mhz.len(), 2);
}

#[test]
fn cpuinfo_arm_style() {
    let s = "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n\n\
             processor\t: 1\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n\n";
    let b = parse_cpuinfo(s);
    assert_eq!(b.len(), 2);
    assert_eq!(b[1].get("CPU part"), Some("0xd0c"));
    assert!(cpuinfo_mhz(&b).is_empty());
}

#[test]
fn meminfo_real() {
    let m = parse_meminfo(MEMINFO);
    assert_eq!(m["MemTotal"], 24684096 * 1024);
    assert!(m["MemFree"] <= m["MemTotal"]);
}

#[test]
fn pid_stat_real() {
    let p = parse_pid_stat(SELF_STAT).unwrap();
    assert_eq!(p.comm, "cat");
    assert_eq!(p.state, 'R');
}

#[test]
fn scaling_cur_freq() {
    assert_eq!(parse_khz_as_mhz("2300000\n"), Some(2300.0));
    assert_eq!(parse_khz_as_mhz("3499998"), Some(3499.998));
    assert_eq!(parse_khz_as_mhz("<unknown>"), None);
}

#[test]
fn ipmitool_dcmi_format() {
    let r = parse_dcmi_power_reading(DCMI).unwrap();
    assert_eq!(r.instantaneous_w, 312.0);
    assert_eq!(r.min_w, Some(88.0));
    assert_eq!(r.max_w, Some(498.0));
    assert_eq!(r.average_w, Some(301.0));
    assert_eq!(r.activated, Some(true));

    let r = parse_dcmi_power_reading(DCMI_COLON).unwrap();
    assert_eq!(r.instantaneous_w, 214.0);
    assert_eq!(r.average_w, Some(184.0));
    assert_eq!(r.activated, Some(true));

    let r = parse_dcmi_power_reading(DCMI_OFF).unwrap();
    assert_eq!(r.activated, Some(false));

    let e = parse_dcmi_power_reading(
        "Could not open device at /dev/ipmi0 or /dev/ipmi/0 or /dev/ipmidev/0\n",
    )
    .unwrap_err();
    assert!(e.contains("Could not open device"), "{e}");
}

#[test]
fn dmidecode_memory() {
    let s = "# dmidecode 3.4\nGetting SMBIOS data from sysfs.\nSMBIOS 3.3.0 present.\n\n\
Handle 0x1100, DMI type 17, 92 bytes\nMemory Device\n\tTotal Width: 72 bits\n\tSize: 32 GB\n\
\tLocator: DIMM_A1\n\tType: DDR5\n\tSpeed: 4800 MT/s\n\tConfigured Memory Speed: 4400 MT/s\n\n\
Handle 0x1101, DMI type 17, 92 bytes\nMemory Device\n\tSize: No Module Installed\n\tLocator: DIMM_A2\n\
\tType: Unknown\n\n\
Handle 0x1102, DMI type 17, 92 bytes\nMemory Device\n\tSize: 32 GB\n\tLocator: DIMM_B1\n\tType: DDR5\n\
\tSpeed: 4800 MT/s\n\tConfigured Memory Speed: 4400 MT/s\n";
    let d = parse_dmidecode_memory(s);
    assert_eq!(d.len(), 2);
    assert_eq!(d[0].size, "32 GB");
    assert_eq!(d[0].kind.as_deref(), Some("DDR5"));
    assert_eq!(d[0].speed.as_deref(), Some("4400 MT/s"));
    assert_eq!(d[1].locator.as_deref(), Some("DIMM_B1"));
    // Two DIMMs at 4400 MT/s x 8 B: 70.4 GB/s at most.
    let peak = dram_peak_gb_per_s(&d).unwrap();
    assert!((peak - 70.4).abs() < 1e-9, "{peak}");
}

#[test]
fn dram_peak_needs_every_dimm_rate() {
    let dimm = |speed: Option<&str>| Dimm {
        size: "16 GB".into(),
        speed: speed.map(str::to_string),
        ..Default::default()
    };
    // dmidecode < 3.3 wrote the transfer rate as MHz.
    let old = dram_peak_gb_per_s(&[dimm(Some("2666 MHz"))]).unwrap();
    assert!((old - 21.328).abs() < 1e-9, "{old}");
    // One DIMM of unknown rate: no bound rather than a bound that is too low.
    assert_eq!(
        dram_peak_gb_per_s(&[dimm(Some("3200 MT/s")), dimm(Some("Unknown"))]),
        None
    );
    assert_eq!(dram_peak_gb_per_s(&[dimm(None)]), None);
    assert_eq!(dram_peak_gb_per_s(&[]), None);
}

#[test]
fn os_release() {
    let m = parse_os_release("PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n# c\n");
    assert_eq!(m["PRETTY_NAME"], "Debian GNU/Linux 12 (bookworm)");
    assert_eq!(m["ID"], "debian");
}

/// Every prefix of every fixture, at every char boundary: parsers never panic.
#[test]
fn truncated_inputs_never_panic() {
    for text in [
        STAT_A, NET_A, DISK_A, CPUINFO, MEMINFO, SELF_STAT, DCMI, DCMI_COLON,
    ] {
        // Every third boundary keeps the debug-build run short.
        for (i, _) in text.char_indices().step_by(3) {
            let t = &text[..i];
            let _ = parse_proc_stat(t);
            let _ = parse_net_dev(t);
            let _ = parse_diskstats(t);
            let _ = parse_pid_stat(t);
            let _ = parse_cpuinfo(t);
            let _ = parse_meminfo(t);
            let _ = parse_dcmi_power_reading(t);
            let _ = parse_meter_watts(t);
            let _ = parse_dmidecode_memory(t);
            let _ = parse_khz_as_mhz(t);
            let _ = parse_cache_size(t);
            let _ = parse_bracketed_choice(t);
        }
    }
}

/// A small deterministic fuzz: random byte edits of the real fixtures (kept valid
/// UTF-8) through every parser. None may panic.
#[test]
fn mutated_inputs_never_panic() {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let alphabet = b" \t\n:()-0123456789abcxyzWK[]|=\"";
    for text in [STAT_A, NET_A, DISK_A, CPUINFO, MEMINFO, SELF_STAT, DCMI] {
        for _ in 0..120 {
            let mut b = text.as_bytes().to_vec();
            for _ in 0..(next() % 8 + 1) {
                let i = (next() as usize) % b.len();
                match next() % 3 {
                    0 => b[i] = alphabet[(next() as usize) % alphabet.len()],
                    1 => {
                        b.remove(i);
                    }
                    _ => b.insert(i, alphabet[(next() as usize) % alphabet.len()]),
                }
            }
            let t = String::from_utf8_lossy(&b);
            let _ = parse_proc_stat(&t);
            let _ = parse_net_dev(&t);
            let _ = parse_diskstats(&t);
            let _ = parse_pid_stat(&t);
            let _ = cpuinfo_mhz(&parse_cpuinfo(&t));
            let _ = parse_meminfo(&t);
            let _ = parse_dcmi_power_reading(&t);
            let _ = parse_meter_watts(&t);
            let _ = parse_dmidecode_memory(&t);
            let _ = parse_os_release(&t);
            let _ = parse_cache_size(&t);
            let _ = parse_bracketed_choice(&t);
        }
    }
}
