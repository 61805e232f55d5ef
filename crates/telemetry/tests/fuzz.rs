//! Fuzz targets for what telemetry reads from the kernel and from tools: /proc and /sys
//! text (real captures from fixtures/host1, mutated), the rates computed between two
//! snapshots, a whole disclosure tree and powercap counters, ipmitool and meter output.
//! See crates/fuzzkit for the knobs (`RACKBENCH_FUZZ_CASES`, `RACKBENCH_FUZZ_SEED`).

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use fuzzkit::{mutate, pick, random_bytes, Bytes, Fuzz, Rng, SmallRng};
use rackbench_telemetry as telemetry;
use telemetry::disclosure::{collect_with, nic_model, pci_name, DisclosureSources};
use telemetry::parse::*;
use telemetry::power::PowerSources;
use telemetry::rates::{cpu_util, disk_rates, nic_rates, proc_cpu};

#[global_allocator]
static ALLOC: fuzzkit::TrackingAlloc = fuzzkit::TrackingAlloc;

const STAT: &str = include_str!("fixtures/host1/proc_stat");
const STAT_2: &str = include_str!("fixtures/host1/proc_stat.2");
const NET: &str = include_str!("fixtures/host1/proc_net_dev");
const NET_2: &str = include_str!("fixtures/host1/proc_net_dev.2");
const DISK: &str = include_str!("fixtures/host1/proc_diskstats");
const DISK_2: &str = include_str!("fixtures/host1/proc_diskstats.2");
const CPUINFO: &str = include_str!("fixtures/host1/proc_cpuinfo");
const MEMINFO: &str = include_str!("fixtures/host1/proc_meminfo");
const SELF_STAT: &str = include_str!("fixtures/host1/proc_self_stat");
const DCMI: &str = include_str!("fixtures/ipmitool_dcmi_power_reading.txt");
const DCMI_COLON: &str = include_str!("fixtures/ipmitool_dcmi_power_reading_colon_after.txt");
const DMIDECODE: &str = "Handle 0x0040, DMI type 17, 92 bytes\nMemory Device\n\tSize: 32 GB\n\tLocator: DIMM_A1\n\tType: DDR5\n\tSpeed: 4800 MT/s\n\tConfigured Memory Speed: 4400 MT/s\n\nHandle 0x0041, DMI type 17, 92 bytes\nMemory Device\n\tSize: No Module Installed\n";
const SMALL: &[&str] = &[
    "48K\n",
    "3800000\n",
    "[always] madvise never\n",
    "231.5 W\n",
    "PRETTY_NAME=\"Debian GNU/Linux 12\"\nID=debian\n",
];

const SAMPLES: &[&str] = &[
    STAT, NET, DISK, CPUINFO, MEMINFO, SELF_STAT, DCMI, DCMI_COLON, DMIDECODE, SMALL[0], SMALL[1],
    SMALL[2], SMALL[3], SMALL[4],
];

const WORDS: &[&str] = &[
    "cpu", "cpu0", "ctxt", "intr", "kB", "eth0:", "(", ")", "Watts", "K", "M",
];

/// A mutated real sample (or random bytes), as the lossy text a file read gives.
fn text(rng: &mut SmallRng, base: &str) -> String {
    let b = if rng.gen_range(0..8) == 0 {
        random_bytes(rng, 128)
    } else {
        mutate(rng, base.as_bytes(), WORDS)
    };
    String::from_utf8_lossy(&b).into_owned()
}

/// Every parser on one input: none may panic, and the numbers they return are numbers.
fn parse_everything(t: &str) {
    let _ = parse_proc_stat(t);
    let _ = parse_net_dev(t);
    let _ = parse_diskstats(t);
    let _ = parse_pid_stat(t);
    let blocks = parse_cpuinfo(t);
    for mhz in cpuinfo_mhz(&blocks).values() {
        assert!(mhz.is_finite() && *mhz > 0.0);
    }
    let _ = parse_meminfo(t);
    if let Some(m) = parse_khz_as_mhz(t) {
        assert!(m.is_finite() && m >= 0.0);
    }
    let _ = parse_cache_size(t);
    if let Ok(r) = parse_dcmi_power_reading(t) {
        assert!(r.instantaneous_w.is_finite() && r.instantaneous_w >= 0.0);
    }
    if let Ok(w) = parse_meter_watts(t) {
        assert!(w.is_finite() && (0.0..=telemetry::parse::METER_MAX_W).contains(&w));
    }
    let dimms = parse_dmidecode_memory(t);
    if let Some(gb) = dram_peak_gb_per_s(&dimms) {
        assert!(gb.is_finite() && gb > 0.0);
    }
    let _ = parse_os_release(t);
    let _ = parse_bracketed_choice(t);
}

#[test]
fn fuzz_proc_and_tool_parsers() {
    Fuzz::new("proc_and_tool_parsers")
        .cases(3000)
        .max_alloc(4 << 20)
        .run(
            |rng| {
                let base = *pick(rng, SAMPLES);
                text(rng, base)
            },
            |t| parse_everything(t),
        );
}

/// A percentage or rate that is a number and not negative.
fn sane(v: f64, what: &str) {
    assert!(v.is_finite() && v >= 0.0, "{what} = {v}");
}

#[test]
fn fuzz_rates_between_snapshots() {
    // One real snapshot and one mutated one, in either order: counters that jump, go
    // backwards or vanish must still give finite, non-negative rates.
    Fuzz::new("rates_between_snapshots").cases(1500).run(
        |rng| {
            let i = rng.gen_range(0..3);
            let (a, b) = [(STAT, STAT_2), (NET, NET_2), (DISK, DISK_2)][i];
            let b = text(rng, b);
            let dt = *pick(rng, &[1.2, 0.0, 1e-9, 3600.0]);
            if rng.gen_bool(0.5) {
                (a.to_string(), b, dt)
            } else {
                (b, a.to_string(), dt)
            }
        },
        |(a, b, dt)| {
            let (sa, sb) = (parse_proc_stat(a), parse_proc_stat(b));
            if let (Some(x), Some(y)) = (sa.all, sb.all) {
                let u = cpu_util(-1, &x, &y);
                for v in [u.usr_pct, u.nice_pct, u.sys_pct, u.iowait_pct, u.idle_pct] {
                    sane(v, "cpu %");
                }
            }
            for r in nic_rates(&parse_net_dev(a), &parse_net_dev(b), *dt) {
                sane(r.rx_bytes_per_s, "rx B/s");
                sane(r.tx_packets_per_s, "tx pkt/s");
            }
            for r in disk_rates(&parse_diskstats(a), &parse_diskstats(b), *dt) {
                sane(r.read_bytes_per_s, "read B/s");
                assert!(r.util_pct <= 100.0, "util {}", r.util_pct);
            }
            if let (Some(p), Some(q)) = (parse_pid_stat(a), parse_pid_stat(b)) {
                sane(proc_cpu("x", &p, &q, *dt, 100.0).usr_pct, "proc %");
            }
        },
    );
}

#[test]
fn fuzz_nic_model_and_pci_ids() {
    const PCI_IDS: &str = "# comment\n8086  Intel Corporation\n\t1592  Ethernet Controller E810-C for QSFP\n\t1572  Ethernet Controller X710\n1af4  Red Hat, Inc.\n\t1000  Virtio network device\n";
    const ALIASES: &[&str] = &[
        "pci:v00008086d00001592sv00008086sd00000002bc02sc00i00",
        "virtio:d00000001v00001AF4",
    ];
    Fuzz::new("nic_model").cases(3000).run(
        |rng| {
            let alias = *pick(rng, ALIASES);
            (text(rng, alias), text(rng, PCI_IDS))
        },
        |(alias, ids)| {
            let _ = nic_model(alias, Some(ids));
            let _ = pci_name(ids, "8086", "1592");
        },
    );
}

/// The files of a small host tree: (path under the root, real content).
const TREE: &[(&str, &str)] = &[
    ("proc/cpuinfo", CPUINFO),
    ("proc/stat", STAT),
    ("proc/meminfo", MEMINFO),
    ("proc/sys/kernel/osrelease", "6.1.0-18-amd64\n"),
    ("proc/sys/kernel/hostname", "sut-a\n"),
    (
        "etc/os-release",
        "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n",
    ),
    (
        "sys/devices/system/cpu/cpu0/topology/physical_package_id",
        "0\n",
    ),
    ("sys/devices/system/cpu/cpu0/topology/core_id", "0\n"),
    (
        "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
        "performance\n",
    ),
    (
        "sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq",
        "3800000\n",
    ),
    (
        "sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_min_freq",
        "800000\n",
    ),
    ("sys/devices/system/cpu/cpu0/cache/index0/level", "1\n"),
    ("sys/devices/system/cpu/cpu0/cache/index0/type", "Data\n"),
    ("sys/devices/system/cpu/cpu0/cache/index0/size", "48K\n"),
    ("sys/devices/system/cpu/cpu0/cache/index3/level", "3\n"),
    ("sys/devices/system/cpu/cpu0/cache/index3/type", "Unified\n"),
    ("sys/devices/system/cpu/cpu0/cache/index3/size", "107520K\n"),
    ("sys/devices/system/cpu/smt/control", "on\n"),
    ("sys/devices/system/cpu/smt/active", "1\n"),
    (
        "sys/devices/system/cpu/vulnerabilities/meltdown",
        "Not affected\n",
    ),
    ("sys/devices/system/node/node0/cpulist", "0-1\n"),
    (
        "sys/kernel/mm/transparent_hugepage/enabled",
        "[always] madvise never\n",
    ),
    ("sys/class/net/ens1f0/speed", "100000\n"),
    ("sys/class/net/ens1f0/mtu", "9000\n"),
    ("sys/class/net/ens1f0/operstate", "up\n"),
    (
        "sys/class/net/ens1f0/device/modalias",
        "pci:v00008086d00001592sv00008086sd00000002bc02sc00i00\n",
    ),
    ("sys/class/powercap/intel-rapl:0/name", "package-0\n"),
    ("sys/class/powercap/intel-rapl:0/energy_uj", "123456\n"),
    (
        "sys/class/powercap/intel-rapl:0/max_energy_range_uj",
        "262143328850\n",
    ),
    ("sys/class/hwmon/hwmon0/name", "acpi_power_meter\n"),
    ("sys/class/hwmon/hwmon0/power1_average", "231000000\n"),
];

/// Write the tree under `root` with `changed` files' contents replaced.
fn write_tree(root: &Path, changed: &[(usize, Vec<u8>)]) {
    for (i, (path, content)) in TREE.iter().enumerate() {
        let p = root.join(path);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        let body = changed
            .iter()
            .rev()
            .find(|(j, _)| *j == i)
            .map_or(content.as_bytes(), |(_, b)| b.as_slice());
        fs::write(&p, body).unwrap();
    }
}

#[test]
fn fuzz_disclosure_and_power_tree() {
    // A host tree whose files hold mutated contents: disclosure and the power sources
    // read them all, and every figure they return is a fact or an "unknown", never a panic.
    Fuzz::new("disclosure_and_power_tree").cases(60).run(
        |rng| {
            let n = rng.gen_range(1..6);
            let changed: Vec<(usize, Bytes)> = (0..n)
                .map(|_| {
                    let i = rng.gen_range(0..TREE.len());
                    (i, Bytes(mutate(rng, TREE[i].1.as_bytes(), WORDS)))
                })
                .collect();
            let energy = Bytes(mutate(rng, b"123999\n", WORDS));
            (changed, energy)
        },
        |(changed, energy)| {
            let dir = tempfile::tempdir().unwrap();
            let plain: Vec<(usize, Vec<u8>)> =
                changed.iter().map(|(i, b)| (*i, b.0.clone())).collect();
            write_tree(dir.path(), &plain);
            let (proc_root, sys_root) = (dir.path().join("proc"), dir.path().join("sys"));
            let src = DisclosureSources::for_roots(&proc_root, &sys_root);
            let _ = collect_with("h", "sut", &src);
            let (mut power, _) = PowerSources::open(&src.power);
            let t0 = Instant::now();
            let rapl = sys_root.join("class/powercap/intel-rapl:0/energy_uj");
            fs::write(rapl, &energy.0).unwrap();
            for r in power.read(t0 + Duration::from_secs(1), Some(50.0), true) {
                assert!(r.watts.is_finite(), "{r:?}");
            }
        },
    );
}
