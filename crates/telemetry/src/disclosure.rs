//! System disclosure: what a host is (CPU, memory, NICs, OS, mitigations, power
//! sources), collected from /proc and /sys with every run, as dotted keys that two runs
//! can diff key by key to say whether they are comparable.
//!
//! Nothing here fails: a fact that cannot be read becomes `Fact::unknown(why)`. No MAC
//! address, serial number or UUID is collected (privacy: disclosures are published).
//! The roots are parameters so the same code runs on a captured fixture tree.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use engine::command::probe;
use model::{Fact, HostDisclosure};

use crate::parse::{
    parse_bracketed_choice, parse_cache_size, parse_cpuinfo, parse_dmidecode_memory,
    parse_khz_as_mhz, parse_meminfo, parse_os_release, CpuInfoBlock,
};
use crate::power::{detect_power, PowerConfig};

/// Where [`collect_with`] reads from, as plain data.
#[derive(Debug, Clone, PartialEq)]
pub struct DisclosureSources {
    pub proc_root: PathBuf,
    pub sys_root: PathBuf,
    /// For `os-release` (`/etc`).
    pub etc_root: PathBuf,
    /// `dmidecode` command for DIMMs; None: not collected (fixture trees).
    pub dmidecode: Option<String>,
    /// Command for `systemd-detect-virt --container`; None: not collected.
    pub detect_container: Option<String>,
    pub power: PowerConfig,
}

impl DisclosureSources {
    /// Sources for `proc_root`/`sys_root`. On the live host (`/proc`) this also runs
    /// dmidecode, systemd-detect-virt and ipmitool; on a fixture tree (`<dir>/proc`) it
    /// reads `<dir>/etc/os-release` and runs nothing.
    pub fn for_roots(proc_root: &Path, sys_root: &Path) -> Self {
        let live = proc_root == Path::new("/proc");
        let etc_root = if live {
            PathBuf::from("/etc")
        } else {
            proc_root
                .parent()
                .map(|p| p.join("etc"))
                .unwrap_or_else(|| PathBuf::from("/etc"))
        };
        let mut power = PowerConfig::under_sys(sys_root);
        if !live {
            power.ipmitool = None;
        }
        DisclosureSources {
            proc_root: proc_root.to_path_buf(),
            sys_root: sys_root.to_path_buf(),
            etc_root,
            dmidecode: live.then(|| DMIDECODE_MEMORY.to_string()),
            detect_container: live.then(|| "systemd-detect-virt --container".to_string()),
            power,
        }
    }
}

/// Collect this host's disclosure from `proc_root` and `sys_root` (see
/// [`DisclosureSources::for_roots`] for what else is read).
pub fn collect(host: &str, role: &str, proc_root: &Path, sys_root: &Path) -> HostDisclosure {
    collect_with(
        host,
        role,
        &DisclosureSources::for_roots(proc_root, sys_root),
    )
}

/// How long dmidecode / systemd-detect-virt may take.
const TOOL_TIMEOUT: Duration = Duration::from_secs(5);

/// The command that lists the memory devices (SMBIOS type 17).
pub const DMIDECODE_MEMORY: &str = "dmidecode -t 17";

/// The populated DIMMs `cmd` (a dmidecode invocation) lists. Shared by the disclosure
/// and the `mem` workload's bandwidth bound, so both read the same devices.
pub fn read_dimms(cmd: &str) -> Result<Vec<crate::parse::Dimm>, String> {
    probe(cmd, TOOL_TIMEOUT).map(|out| parse_dmidecode_memory(&out))
}

struct Facts(BTreeMap<String, Fact>);

impl Facts {
    fn set(&mut self, key: impl Into<String>, f: Fact) {
        self.0.insert(key.into(), f);
    }
    fn known(&mut self, key: impl Into<String>, v: impl Into<String>) {
        self.set(key, Fact::known(v));
    }
    fn unknown(&mut self, key: impl Into<String>, why: impl Into<String>) {
        self.set(key, Fact::unknown(why));
    }
    /// A fact from a file: its trimmed content, or unknown with the read error.
    fn file(&mut self, key: &str, path: &Path) {
        let f = match read_trim(path) {
            Ok(v) if !v.is_empty() => Fact::known(v),
            Ok(_) => Fact::unknown(format!("{} is empty", path.display())),
            Err(e) => Fact::unknown(e),
        };
        self.set(key, f);
    }
}

fn read_trim(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Numbered subdirectories `<prefix><n>` of `dir`, sorted by n.
fn numbered(dir: &Path, prefix: &str) -> Vec<(u32, PathBuf)> {
    let mut out: Vec<(u32, PathBuf)> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().to_string();
                    let n = name.strip_prefix(prefix)?.parse::<u32>().ok()?;
                    Some((n, e.path()))
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Collect with explicit sources.
pub fn collect_with(host: &str, role: &str, src: &DisclosureSources) -> HostDisclosure {
    let mut f = Facts(BTreeMap::new());
    let cpu_dir = src.sys_root.join("devices/system/cpu");

    // --- CPU identity (cpuinfo) ---
    let cpuinfo_path = src.proc_root.join("cpuinfo");
    let blocks = match std::fs::read_to_string(&cpuinfo_path) {
        Ok(s) => parse_cpuinfo(&s),
        Err(e) => {
            let why = format!("{}: {e}", cpuinfo_path.display());
            for k in ["cpu.model", "cpu.vendor", "virt"] {
                f.unknown(k, why.clone());
            }
            Vec::new()
        }
    };
    if !blocks.is_empty() {
        cpu_identity(&mut f, &blocks);
    }

    // --- topology ---
    topology(&mut f, &cpu_dir, &blocks);

    // --- frequency policy ---
    frequency(&mut f, &cpu_dir, &src.sys_root);

    // --- caches (cpu0) ---
    caches(&mut f, &cpu_dir);

    // --- memory ---
    let meminfo = src.proc_root.join("meminfo");
    match std::fs::read_to_string(&meminfo) {
        Ok(s) => match parse_meminfo(&s).get("MemTotal") {
            Some(b) => f.known("mem.total_bytes", b.to_string()),
            None => f.unknown("mem.total_bytes", "no MemTotal in /proc/meminfo"),
        },
        Err(e) => f.unknown("mem.total_bytes", format!("{}: {e}", meminfo.display())),
    }
    match &src.dmidecode {
        None => f.unknown("mem.dimms", "not collected (not the live host)"),
        Some(cmd) => match read_dimms(cmd) {
            Ok(dimms) => {
                if dimms.is_empty() {
                    f.unknown("mem.dimms", "dmidecode lists no populated memory device");
                } else {
                    f.known("mem.dimms", summarize_dimms(&dimms));
                }
            }
            Err(e) if e.contains("command not found") => f.unknown(
                "mem.dimms",
                "dmidecode not installed (apt-get install dmidecode)",
            ),
            Err(e) => f.unknown("mem.dimms", format!("dmidecode: {e}")),
        },
    }
    let thp = src.sys_root.join("kernel/mm/transparent_hugepage/enabled");
    match read_trim(&thp) {
        Ok(s) => match parse_bracketed_choice(&s) {
            Some(c) => f.known("mem.thp", c),
            None => f.unknown("mem.thp", format!("unexpected content {s:?}")),
        },
        Err(e) => f.unknown("mem.thp", e),
    }
    let nodes = numbered(&src.sys_root.join("devices/system/node"), "node");
    if nodes.is_empty() {
        f.unknown(
            "numa.nodes",
            "no node* in /sys/devices/system/node (kernel without NUMA)",
        );
    } else {
        f.known("numa.nodes", nodes.len().to_string());
    }

    // --- NICs ---
    nics(&mut f, &src.sys_root);

    // --- storage ---
    storage(&mut f, &src.sys_root);

    // --- what the telemetry samples of the clock (a VM's cpuinfo is its nominal one) ---
    f.set(
        "telemetry.cpu_freq",
        crate::sampler::cpu_freq_fact(&src.proc_root, &src.sys_root),
    );

    // --- the settings that decide results (sysctls, cmdline, tuned, C-states, NICs) ---
    let live = src.dmidecode.is_some();
    for (k, v) in crate::tuning::collect(&crate::tuning::Sources {
        proc_root: &src.proc_root,
        sys_root: &src.sys_root,
        etc_root: &src.etc_root,
        ethtool: live.then_some("ethtool"),
    }) {
        f.set(k, v);
    }

    // --- OS ---
    f.file("os.kernel", &src.proc_root.join("sys/kernel/osrelease"));
    f.file("os.hostname", &src.proc_root.join("sys/kernel/hostname"));
    let osr = [
        src.etc_root.join("os-release"),
        src.etc_root.join("../usr/lib/os-release"),
    ];
    match osr.iter().find_map(|p| std::fs::read_to_string(p).ok()) {
        Some(s) => match parse_os_release(&s).get("PRETTY_NAME") {
            Some(n) => f.known("os.name", n.clone()),
            None => f.unknown("os.name", "no PRETTY_NAME in os-release"),
        },
        None => f.unknown(
            "os.name",
            format!("no {}/os-release", src.etc_root.display()),
        ),
    }

    // --- mitigations ---
    let vuln = cpu_dir.join("vulnerabilities");
    match std::fs::read_dir(&vuln) {
        Ok(rd) => {
            let mut names: Vec<String> = rd
                .flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .collect();
            names.sort();
            for n in names {
                f.file(&format!("mitigation.{n}"), &vuln.join(&n));
            }
        }
        Err(e) => f.unknown("mitigation", format!("{}: {e}", vuln.display())),
    }

    // --- platform (DMI; no serials or UUIDs) ---
    let dmi = src.sys_root.join("class/dmi/id");
    for (key, file) in [
        ("system.vendor", "sys_vendor"),
        ("system.product", "product_name"),
        ("system.board", "board_name"),
        ("system.bios_version", "bios_version"),
    ] {
        f.file(key, &dmi.join(file));
    }

    // --- virtualisation ---
    virt(&mut f, &blocks, &src.sys_root);
    match &src.detect_container {
        None => f.unknown("virt.container", "not collected (not the live host)"),
        // Started directly, not through a shell (`|| true` was a second process on every
        // run): it prints `none` and exits 1 when there is no container.
        // Asked once per boot: the answer cannot change before the next.
        Some(cmd) => match crate::boot_cache::probe_per_boot(cmd, TOOL_TIMEOUT) {
            Ok(out) if !out.trim().is_empty() => f.known("virt.container", out.trim()),
            Ok(_) => f.unknown("virt.container", format!("`{cmd}` printed nothing")),
            Err(e) if e.exit_code == Some(1) => f.known("virt.container", "none"),
            Err(e) => f.unknown("virt.container", e.message),
        },
    }

    // --- power sources ---
    let det = detect_power(&src.power);
    if det.sources.is_empty() {
        f.unknown("power.sources", det.missing_reason());
    } else {
        f.known("power.sources", det.sources.join(", "));
    }

    HostDisclosure {
        host: host.to_string(),
        role: role.to_string(),
        facts: f.0,
    }
}

fn cpu_identity(f: &mut Facts, blocks: &[CpuInfoBlock]) {
    let first = blocks.iter().find(|b| b.get("processor").is_some());
    let any = |k: &str| blocks.iter().find_map(|b| b.get(k));
    match any("model name")
        .or_else(|| any("Model"))
        .or_else(|| any("Hardware"))
    {
        Some(m) => f.known("cpu.model", m),
        None => match any("CPU part") {
            // Arm cores have no model name: the implementer/part pair identifies them.
            Some(p) => f.known(
                "cpu.model",
                format!(
                    "Arm part {p} (implementer {})",
                    any("CPU implementer").unwrap_or("?")
                ),
            ),
            None => f.unknown("cpu.model", "no `model name` in /proc/cpuinfo"),
        },
    }
    match any("vendor_id") {
        Some(v) => f.known("cpu.vendor", v),
        None => match any("CPU implementer") {
            Some(i) => f.known("cpu.vendor", arm_implementer(i)),
            None => f.unknown("cpu.vendor", "no vendor_id in /proc/cpuinfo"),
        },
    }
    for (key, field) in [
        ("cpu.family", "cpu family"),
        ("cpu.model_number", "model"),
        ("cpu.stepping", "stepping"),
        ("cpu.microcode", "microcode"),
    ] {
        if let Some(v) = first.and_then(|b| b.get(field)) {
            f.known(key, v);
        }
    }
}

fn arm_implementer(code: &str) -> String {
    let name = match code.to_ascii_lowercase().as_str() {
        "0x41" => "ARM",
        "0x42" => "Broadcom",
        "0x43" => "Cavium",
        "0x48" => "HiSilicon",
        "0x4e" => "NVIDIA",
        "0x50" => "APM",
        "0x51" => "Qualcomm",
        "0x61" => "Apple",
        "0xc0" => "Ampere",
        _ => return format!("Arm implementer {code}"),
    };
    name.to_string()
}

fn topology(f: &mut Facts, cpu_dir: &Path, blocks: &[CpuInfoBlock]) {
    // sysfs topology first (every architecture), /proc/cpuinfo physical id/core id else.
    let mut pkgs = BTreeSet::new();
    let mut cores = BTreeSet::new();
    let mut threads = 0usize;
    for (_, dir) in numbered(cpu_dir, "cpu") {
        let t = dir.join("topology");
        let (Ok(p), Ok(c)) = (
            read_trim(&t.join("physical_package_id")),
            read_trim(&t.join("core_id")),
        ) else {
            continue;
        };
        threads += 1;
        pkgs.insert(p.clone());
        // A core is the kernel's set of its threads where it says so: core_id is the
        // platform's number, repeated on each die of a multi-die package on some.
        let core = read_trim(&t.join("thread_siblings_list")).unwrap_or_else(|_| {
            let die = read_trim(&t.join("die_id")).unwrap_or_default();
            format!("{die}/{c}")
        });
        cores.insert((p, core));
    }
    if threads == 0 {
        for b in blocks.iter().filter(|b| b.get("processor").is_some()) {
            threads += 1;
            if let (Some(p), Some(c)) = (b.get("physical id"), b.get("core id")) {
                pkgs.insert(p.to_string());
                cores.insert((p.to_string(), c.to_string()));
            }
        }
    }
    let why = "no CPU topology in /sys/devices/system/cpu or /proc/cpuinfo";
    if threads == 0 {
        for k in ["cpu.threads", "cpu.cores", "cpu.sockets"] {
            f.unknown(k, why);
        }
    } else {
        f.known("cpu.threads", threads.to_string());
        if cores.is_empty() {
            f.unknown("cpu.cores", why);
            f.unknown("cpu.sockets", why);
        } else {
            f.known("cpu.cores", cores.len().to_string());
            f.known("cpu.sockets", pkgs.len().to_string());
        }
    }
    let control = read_trim(&cpu_dir.join("smt/control"));
    let active = read_trim(&cpu_dir.join("smt/active")).ok();
    match control.as_deref() {
        // `notimplemented`: a kernel without SMT hotplug, which says nothing of the
        // threads (arm64 before it had it): from what is active, or the topology.
        Ok(c) if c != "notimplemented" => {
            let v = match (c, active.as_deref()) {
                ("on", Some("0")) => "on (no sibling threads online)".to_string(),
                // SMT-N on POWER: the most threads per core enabled; 1 is SMT off.
                ("1", _) => "off (1 thread per core)".to_string(),
                (n, _) if n.parse::<u32>().is_ok() => format!("on ({n} threads per core)"),
                _ => c.to_string(),
            };
            f.known("cpu.smt", v);
        }
        other => {
            if !cores.is_empty() && threads > 0 {
                let v = if threads > cores.len() { "on" } else { "off" };
                f.known(
                    "cpu.smt",
                    format!("{v} ({threads} threads on {} cores)", cores.len()),
                );
            } else {
                match (active.as_deref(), other) {
                    (Some("1"), _) => f.known("cpu.smt", "on (smt/active)"),
                    (Some("0"), _) => f.known("cpu.smt", "off (smt/active)"),
                    (_, Ok(_)) => f.unknown(
                        "cpu.smt",
                        "smt/control says notimplemented (a kernel without SMT hotplug) and \
                         no CPU topology was read",
                    ),
                    (_, Err(e)) => f.unknown("cpu.smt", e.clone()),
                }
            }
        }
    }
}

fn frequency(f: &mut Facts, cpu_dir: &Path, sys_root: &Path) {
    let cpus = numbered(cpu_dir, "cpu");
    let mut governors = BTreeSet::new();
    let mut driver = None;
    for (_, d) in &cpus {
        if let Ok(g) = read_trim(&d.join("cpufreq/scaling_governor")) {
            governors.insert(g);
        }
        if driver.is_none() {
            driver = read_trim(&d.join("cpufreq/scaling_driver")).ok();
        }
    }
    let no_cpufreq = "no cpufreq in /sys/devices/system/cpu/cpu*/cpufreq \
                      (a VM, or frequency is not under OS control)";
    match governors.len() {
        0 => f.unknown("cpu.governor", no_cpufreq),
        1 => f.known(
            "cpu.governor",
            governors.iter().next().cloned().unwrap_or_default(),
        ),
        _ => f.known(
            "cpu.governor",
            format!(
                "mixed: {}",
                governors.into_iter().collect::<Vec<_>>().join(", ")
            ),
        ),
    }
    match driver {
        Some(d) => f.known("cpu.scaling_driver", d),
        None => f.unknown("cpu.scaling_driver", no_cpufreq),
    }
    // intel_pstate: no_turbo=1 means turbo off; acpi-cpufreq/amd-pstate: boost=1 on.
    let no_turbo = sys_root.join("devices/system/cpu/intel_pstate/no_turbo");
    let boost = cpu_dir.join("cpufreq/boost");
    if let Ok(v) = read_trim(&no_turbo) {
        f.known(
            "cpu.turbo",
            if v == "0" {
                "on (intel_pstate)"
            } else {
                "off (intel_pstate no_turbo=1)"
            },
        );
    } else if let Ok(v) = read_trim(&boost) {
        f.known(
            "cpu.turbo",
            if v == "1" {
                "on (boost)"
            } else {
                "off (boost=0)"
            },
        );
    } else {
        f.unknown(
            "cpu.turbo",
            "neither intel_pstate/no_turbo nor cpufreq/boost is present",
        );
    }
    let cpu0 = cpu_dir.join("cpu0/cpufreq");
    for (key, file) in [
        ("cpu.freq_max_mhz", "cpuinfo_max_freq"),
        ("cpu.freq_min_mhz", "cpuinfo_min_freq"),
    ] {
        let p = cpu0.join(file);
        match read_trim(&p) {
            Ok(s) => match parse_khz_as_mhz(&s) {
                Some(m) => f.known(key, format!("{m}")),
                None => f.unknown(key, format!("{} is not a number: {s:?}", p.display())),
            },
            Err(_) => f.unknown(key, no_cpufreq),
        }
    }
}

fn caches(f: &mut Facts, cpu_dir: &Path) {
    let dir = cpu_dir.join("cpu0/cache");
    let idx = numbered(&dir, "index");
    let mut seen = BTreeSet::new();
    for (_, d) in &idx {
        let (Ok(level), Ok(kind), Ok(size)) = (
            read_trim(&d.join("level")),
            read_trim(&d.join("type")),
            read_trim(&d.join("size")),
        ) else {
            continue;
        };
        let key = match (level.as_str(), kind.as_str()) {
            ("1", "Data") => "cpu.cache.l1d".to_string(),
            ("1", "Instruction") => "cpu.cache.l1i".to_string(),
            (l, _) => format!("cpu.cache.l{l}"),
        };
        if let Some(b) = parse_cache_size(&size) {
            seen.insert(key.clone());
            f.known(key, b.to_string());
        }
    }
    for k in ["cpu.cache.l1d", "cpu.cache.l2", "cpu.cache.l3"] {
        if !seen.contains(k) {
            f.unknown(k, format!("not listed in {}", dir.display()));
        }
    }
}

/// `12 x 32 GB DDR5 4800 MT/s` (grouped when DIMMs differ).
fn summarize_dimms(dimms: &[crate::parse::Dimm]) -> String {
    let mut groups: Vec<(String, usize)> = Vec::new();
    for d in dimms {
        let mut desc = d.size.clone();
        if let Some(k) = &d.kind {
            desc.push(' ');
            desc.push_str(k);
        }
        if let Some(s) = d.speed.as_ref().filter(|s| !s.starts_with("Unknown")) {
            desc.push(' ');
            desc.push_str(s);
        }
        match groups.iter_mut().find(|(g, _)| *g == desc) {
            Some((_, n)) => *n += 1,
            None => groups.push((desc, 1)),
        }
    }
    groups
        .into_iter()
        .map(|(d, n)| format!("{n} x {d}"))
        .collect::<Vec<_>>()
        .join(" + ")
}

/// A NIC's model from its modalias: PCI vendor:device (named through pci.ids when
/// present), or the virtio device type. Never the MAC address.
pub fn nic_model(modalias: &str, pci_ids: Option<&str>) -> Option<String> {
    if let Some(rest) = modalias.strip_prefix("pci:") {
        // pci:v00008086d00001572sv...
        let after_v = rest.strip_prefix('v')?;
        let v = after_v.get(4..8)?.to_ascii_lowercase();
        let d = after_v
            .get(8..)?
            .strip_prefix('d')?
            .get(4..8)?
            .to_ascii_lowercase();
        let name = pci_ids.and_then(|t| pci_name(t, &v, &d));
        return Some(match name {
            Some(n) => format!("{n} [{v}:{d}]"),
            None => format!("PCI {v}:{d}"),
        });
    }
    if let Some(rest) = modalias.strip_prefix("virtio:d") {
        let dev = rest
            .get(..8)
            .and_then(|d| u32::from_str_radix(d, 16).ok())?;
        let kind = match dev {
            1 => "net",
            2 => "block",
            _ => "device",
        };
        return Some(format!("virtio {kind} (device id {dev})"));
    }
    None
}

/// `vendor device` names from a pci.ids text.
pub fn pci_name(pci_ids: &str, vendor: &str, device: &str) -> Option<String> {
    let mut vname: Option<&str> = None;
    for line in pci_ids.lines() {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        if !line.starts_with('\t') {
            if vname.is_some() {
                return None; // past our vendor's block
            }
            if let Some(rest) = line.strip_prefix(vendor) {
                vname = Some(rest.trim());
            }
        } else if let Some(v) = vname {
            if let Some(rest) = line.strip_prefix('\t').and_then(|l| l.strip_prefix(device)) {
                if !rest.starts_with(' ') {
                    continue;
                }
                return Some(format!("{v} {}", rest.trim()));
            }
        }
    }
    None
}

/// Block devices backed by hardware (or a hypervisor's disk), as the seeds list their
/// drives ("two 800GB PCIe SSDs"): size, rotational or not, I/O scheduler, model. Loop,
/// RAM, zram and device-mapper devices are software and left out.
fn storage(f: &mut Facts, sys_root: &Path) {
    let block = sys_root.join("block");
    let Ok(rd) = std::fs::read_dir(&block) else {
        f.unknown("storage", format!("cannot list {}", block.display()));
        return;
    };
    let mut names: Vec<String> = rd
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| {
            !["loop", "ram", "zram", "dm-", "md", "nbd"]
                .iter()
                .any(|p| n.starts_with(p))
        })
        .collect();
    names.sort();
    if names.is_empty() {
        f.unknown("storage", format!("no disk in {}", block.display()));
        return;
    }
    f.known("storage.devices", names.join(" "));
    for n in names {
        let dir = block.join(&n);
        let key = |s: &str| format!("storage.{n}.{s}");
        // `size` counts 512-byte sectors whatever the device's own block size.
        match read_trim(&dir.join("size")).map(|s| s.parse::<u64>()) {
            Ok(Ok(sectors)) => f.known(key("size_bytes"), (sectors * 512).to_string()),
            _ => f.unknown(key("size_bytes"), "no size in sysfs"),
        }
        match read_trim(&dir.join("queue/rotational")).as_deref() {
            Ok("0") => f.known(
                key("rotational"),
                "no (solid state, or as the hypervisor says)",
            ),
            Ok("1") => f.known(
                key("rotational"),
                "yes (or a virtual disk that does not say)",
            ),
            _ => f.unknown(key("rotational"), "queue/rotational not readable"),
        }
        match read_trim(&dir.join("queue/scheduler")) {
            Ok(s) => match parse_bracketed_choice(&s) {
                Some(c) => f.known(key("scheduler"), c),
                None => f.known(key("scheduler"), s),
            },
            Err(e) => f.unknown(key("scheduler"), e),
        }
        match read_trim(&dir.join("device/model")) {
            Ok(m) if !m.is_empty() => f.known(key("model"), m),
            _ => f.unknown(key("model"), "the device reports no model (a virtual disk)"),
        }
    }
}

fn nics(f: &mut Facts, sys_root: &Path) {
    let net = sys_root.join("class/net");
    let Ok(rd) = std::fs::read_dir(&net) else {
        f.unknown("nic", format!("cannot list {}", net.display()));
        return;
    };
    let mut names: Vec<String> = rd
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    let pci_ids = ["/usr/share/misc/pci.ids", "/usr/share/hwdata/pci.ids"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok());
    // The bridge or bond an interface is a port of, or Open vSwitch's datapath
    // (`ovs-system`) for each port of an OVS bridge (a NIC, a VM's tap or veth, a
    // `vxlan_sys_*` tunnel): the host's own traffic through OVS is counted on the
    // bridge's internal port (`br-ex`), which has no master, as a Linux bridge's is on
    // the bridge; counting the ports too counted it twice.
    let master_of = |nic: &str| {
        std::fs::read_link(net.join(nic).join("master"))
            .ok()
            .and_then(|p| Some(p.file_name()?.to_string_lossy().into_owned()))
    };
    let mut virtual_ifaces = Vec::new();
    let mut enslaved = Vec::new();
    let mut physical = 0;
    for n in names {
        let dir = net.join(&n);
        // A bridge's port or a bond's member: its traffic is counted on its master too
        // (or was only forwarded through this host), so a host's NIC total leaves it out
        // ([`model::NIC_ENSLAVED`]).
        if let Some(master) = master_of(&n) {
            enslaved.push(format!("{n} in {master}"));
        } else {
            // A VLAN, macvlan or ipvlan over another interface (`lower_eth0`): what it
            // carries is counted on that interface too, so it is left out the other way
            // round. Not over a port (a bridge's or bond's lowers are its ports), whose
            // VLAN traffic its master never sees: there the VLAN alone counts it.
            let lowers: Vec<String> = std::fs::read_dir(&dir)
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.strip_prefix("lower_").map(str::to_string)
                })
                .collect();
            if !lowers.is_empty() && lowers.iter().all(|l| master_of(l).is_none()) {
                enslaved.push(format!("{n} over {}", lowers.join("+")));
            }
        }
        // Interfaces without a backing device (lo, bridges, veth, ifb) are software.
        if !dir.join("device").exists() {
            if n != "lo" {
                virtual_ifaces.push(n);
            }
            continue;
        }
        physical += 1;
        let key = |s: &str| format!("nic.{n}.{s}");
        match std::fs::read_link(dir.join("device/driver")) {
            Ok(p) => match p.file_name() {
                Some(d) => f.known(key("driver"), d.to_string_lossy()),
                None => f.unknown(key("driver"), "driver link has no name"),
            },
            Err(e) => f.unknown(key("driver"), format!("no driver bound: {e}")),
        }
        match read_trim(&dir.join("speed")) {
            Ok(s) => match s.parse::<i64>() {
                Ok(v) if v > 0 => f.known(key("speed_mbps"), v.to_string()),
                _ => f.unknown(
                    key("speed_mbps"),
                    "link speed not reported (virtual NIC or link down)",
                ),
            },
            Err(_) => f.unknown(
                key("speed_mbps"),
                "link speed not reported (virtual NIC or link down)",
            ),
        }
        match read_trim(&dir.join("device/modalias"))
            .ok()
            .and_then(|m| nic_model(&m, pci_ids.as_deref()))
        {
            Some(m) => f.known(key("model"), m),
            None => f.unknown(key("model"), "no PCI or virtio modalias"),
        }
        f.file(&key("mtu"), &dir.join("mtu"));
        f.file(&key("operstate"), &dir.join("operstate"));
    }
    if physical == 0 {
        f.unknown(
            "nic",
            "no interface with a backing device in /sys/class/net",
        );
    }
    if !virtual_ifaces.is_empty() {
        f.known("nic.virtual", virtual_ifaces.join(", "));
    }
    if !enslaved.is_empty() {
        f.known(model::NIC_ENSLAVED, enslaved.join(", "));
    }
}

fn virt(f: &mut Facts, blocks: &[CpuInfoBlock], sys_root: &Path) {
    if blocks.is_empty() {
        return; // already unknown with the cpuinfo error
    }
    let flagged = blocks
        .iter()
        .filter_map(|b| b.get("flags"))
        .any(|fl| fl.split_ascii_whitespace().any(|x| x == "hypervisor"));
    let hv_type = read_trim(&sys_root.join("hypervisor/type")).ok();
    let vendor = read_trim(&sys_root.join("class/dmi/id/sys_vendor")).ok();
    let product = read_trim(&sys_root.join("class/dmi/id/product_name")).ok();
    let has_x86_flags = blocks.iter().any(|b| b.get("flags").is_some());
    if flagged || hv_type.is_some() {
        let mut detail: Vec<String> = Vec::new();
        if flagged {
            detail.push("cpuinfo hypervisor flag".into());
        }
        if let Some(t) = hv_type {
            detail.push(format!("hypervisor {t}"));
        }
        if let Some(v) = vendor {
            detail.push(
                format!("{v} {}", product.unwrap_or_default())
                    .trim()
                    .to_string(),
            );
        }
        f.known("virt", format!("vm ({})", detail.join("; ")));
    } else if has_x86_flags {
        f.known("virt", "none (no hypervisor flag)");
    } else {
        f.unknown(
            "virt",
            "no cpuinfo flags on this architecture and no /sys/hypervisor/type",
        );
    }
}

/// Keys whose values differ between two disclosures: `(key, a's value, b's value)`,
/// sorted by key. A value is None when the key is absent or its fact unknown; two
/// unknowns are not a difference.
pub fn diff(
    a: &HostDisclosure,
    b: &HostDisclosure,
) -> Vec<(String, Option<String>, Option<String>)> {
    let keys: BTreeSet<&String> = a.facts.keys().chain(b.facts.keys()).collect();
    keys.into_iter()
        .filter_map(|k| {
            let va = a.facts.get(k).and_then(|f| f.value.clone());
            let vb = b.facts.get(k).and_then(|f| f.value.clone());
            (va != vb).then(|| (k.clone(), va, vb))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nic_models() {
        assert_eq!(
            nic_model("virtio:d00000001v00001AF4", None).as_deref(),
            Some("virtio net (device id 1)")
        );
        let ids = "# comment\n8086  Intel Corporation\n\t1572  Ethernet Controller X710 for 10GbE SFP+\n\t15721  x\n8087  Other\n";
        assert_eq!(
            nic_model(
                "pci:v00008086d00001572sv00008086sd00000001bc02sc00i00",
                Some(ids)
            )
            .as_deref(),
            Some("Intel Corporation Ethernet Controller X710 for 10GbE SFP+ [8086:1572]")
        );
        assert_eq!(
            nic_model("pci:v000015B3d00001017sv0sd0bc02sc00i00", None).as_deref(),
            Some("PCI 15b3:1017")
        );
        assert_eq!(nic_model("usb:v0BDAp8153", None), None);
        assert_eq!(nic_model("pci:v0", None), None);
    }

    #[test]
    fn dimm_groups() {
        let d = |s: &str| crate::parse::Dimm {
            size: s.into(),
            kind: Some("DDR5".into()),
            speed: Some("4800 MT/s".into()),
            locator: None,
        };
        assert_eq!(
            summarize_dimms(&[d("32 GB"), d("32 GB"), d("16 GB")]),
            "2 x 32 GB DDR5 4800 MT/s + 1 x 16 GB DDR5 4800 MT/s"
        );
    }
}
