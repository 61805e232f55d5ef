//! Disclosure on this machine's real /proc and /sys, and on a fixture tree that has
//! what this VM lacks (cpufreq, turbo, two sockets, NUMA, a PCI NIC, RAPL).

use rackbench_telemetry as telemetry;

use std::fs;
use std::path::Path;

use telemetry::disclosure::{collect, diff};

fn write(p: &Path, s: &str) {
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, s).unwrap();
}

fn val<'a>(d: &'a model::HostDisclosure, k: &str) -> &'a str {
    d.facts
        .get(k)
        .unwrap_or_else(|| panic!("no key {k}"))
        .value
        .as_deref()
        .unwrap_or_else(|| panic!("{k} unknown: {:?}", d.facts[k].missing))
}

#[test]
fn live_host() {
    let d = collect("local", "sut", Path::new("/proc"), Path::new("/sys"));
    assert_eq!(d.host, "local");
    assert!(!val(&d, "cpu.model").is_empty());
    let ncpu = std::thread::available_parallelism().unwrap().get();
    assert_eq!(val(&d, "cpu.threads").parse::<usize>().unwrap(), ncpu);
    assert!(val(&d, "mem.total_bytes").parse::<u64>().unwrap() > 0);
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert_eq!(val(&d, "os.kernel"), kernel.trim());
    assert!(d.facts.contains_key("os.name"));
    assert!(d.facts.contains_key("power.sources"));
    assert!(d.facts.keys().any(|k| k.starts_with("mitigation.")));
    // Every fact is either known or says why not.
    for (k, f) in &d.facts {
        assert!(
            f.value.is_some() || f.missing.as_deref().is_some_and(|m| !m.is_empty()),
            "{k}: {f:?}"
        );
    }
    // No MAC address anywhere (privacy).
    let json = serde_json::to_string(&d).unwrap();
    if let Ok(rd) = fs::read_dir("/sys/class/net") {
        for e in rd.flatten() {
            if let Ok(mac) = fs::read_to_string(e.path().join("address")) {
                let mac = mac.trim();
                if mac != "00:00:00:00:00:00" && !mac.is_empty() {
                    assert!(!json.contains(mac), "MAC {mac} leaked");
                }
            }
        }
    }
    // Same host twice: nothing differs.
    let again = collect("local", "sut", Path::new("/proc"), Path::new("/sys"));
    assert_eq!(diff(&d, &again), vec![]);
}

/// A two-socket, SMT-on, cpufreq host with a PCI NIC and RAPL, as a fixture tree.
fn fixture(root: &Path) {
    let p = root.join("proc");
    let s = root.join("sys");
    let mut cpuinfo = String::new();
    for cpu in 0..4 {
        cpuinfo.push_str(&format!(
            "processor\t: {cpu}\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n\
             model name\t: Intel(R) Xeon(R) Platinum 8480+\nstepping\t: 8\nmicrocode\t: 0x2b000461\n\
             cpu MHz\t\t: 2000.000\nphysical id\t: {}\ncore id\t\t: 0\n\
             flags\t\t: fpu vme de pse tsc msr ht avx512f\n\n",
            cpu / 2
        ));
        let c = s.join(format!("devices/system/cpu/cpu{cpu}"));
        write(
            &c.join("topology/physical_package_id"),
            &format!("{}\n", cpu / 2),
        );
        write(&c.join("topology/core_id"), "0\n");
        write(&c.join("cpufreq/scaling_governor"), "performance\n");
        write(&c.join("cpufreq/scaling_driver"), "intel_pstate\n");
        write(&c.join("cpufreq/cpuinfo_max_freq"), "3800000\n");
        write(&c.join("cpufreq/scaling_cur_freq"), "3000000\n");
        write(&c.join("cpufreq/cpuinfo_min_freq"), "800000\n");
    }
    write(&p.join("cpuinfo"), &cpuinfo);
    write(&p.join("stat"), "cpu  1 2 3 4\n");
    write(
        &p.join("meminfo"),
        "MemTotal:       527958516 kB\nMemFree:        500000000 kB\n",
    );
    write(&p.join("sys/kernel/osrelease"), "6.1.0-18-amd64\n");
    write(&p.join("sys/kernel/hostname"), "sut-a\n");
    write(
        &root.join("etc/os-release"),
        "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n",
    );
    let cpu = s.join("devices/system/cpu");
    write(&cpu.join("smt/control"), "on\n");
    write(&cpu.join("smt/active"), "1\n");
    write(&cpu.join("intel_pstate/no_turbo"), "0\n");
    for (i, level, kind, size) in [
        (0, 1, "Data", "48K"),
        (1, 1, "Instruction", "32K"),
        (2, 2, "Unified", "2048K"),
        (3, 3, "Unified", "107520K"),
    ] {
        let d = cpu.join(format!("cpu0/cache/index{i}"));
        write(&d.join("level"), &format!("{level}\n"));
        write(&d.join("type"), &format!("{kind}\n"));
        write(&d.join("size"), &format!("{size}\n"));
    }
    write(
        &cpu.join("vulnerabilities/spectre_v2"),
        "Mitigation: Enhanced / Automatic IBRS\n",
    );
    write(&cpu.join("vulnerabilities/meltdown"), "Not affected\n");
    write(&s.join("devices/system/node/node0/cpulist"), "0-1\n");
    write(&s.join("devices/system/node/node1/cpulist"), "2-3\n");
    write(
        &s.join("kernel/mm/transparent_hugepage/enabled"),
        "[always] madvise never\n",
    );
    // A PCI NIC: device dir with modalias and a driver link; its MAC must not appear.
    let dev = s.join("devices/pci0000:00/0000:00:03.0");
    write(
        &dev.join("modalias"),
        "pci:v00008086d00001592sv00008086sd00000002bc02sc00i00\n",
    );
    let drv = s.join("bus/pci/drivers/ice");
    fs::create_dir_all(&drv).unwrap();
    std::os::unix::fs::symlink(&drv, dev.join("driver")).unwrap();
    let net = s.join("class/net/ens1f0");
    write(&net.join("speed"), "100000\n");
    write(&net.join("mtu"), "9000\n");
    write(&net.join("operstate"), "up\n");
    write(&net.join("address"), "b4:96:91:aa:bb:cc\n");
    std::os::unix::fs::symlink(&dev, net.join("device")).unwrap();
    write(&s.join("class/net/lo/mtu"), "65536\n");
    write(&s.join("class/net/docker0/mtu"), "1500\n");
    // A bridge's port: its traffic is the bridge's too, or only forwarded.
    write(&s.join("class/net/vethab/mtu"), "1500\n");
    std::os::unix::fs::symlink("../docker0", s.join("class/net/vethab/master")).unwrap();
    std::os::unix::fs::symlink("../vethab", s.join("class/net/docker0/lower_vethab")).unwrap();
    // An Open vSwitch bridge: its ports' master is the datapath `ovs-system` (a VM's
    // veth, a VXLAN tunnel), its internal port `br-int` has none and counts the host's
    // own traffic through it.
    write(&s.join("class/net/ovs-system/mtu"), "1500\n");
    write(&s.join("class/net/br-int/mtu"), "1500\n");
    for port in ["vethovs", "vxlan_sys_4789"] {
        write(&s.join(format!("class/net/{port}/mtu")), "1500\n");
        std::os::unix::fs::symlink("../ovs-system", s.join(format!("class/net/{port}/master")))
            .unwrap();
    }
    // A VLAN over the PCI NIC: its traffic is the NIC's too.
    write(&s.join("class/net/ens1f0.100/mtu"), "9000\n");
    std::os::unix::fs::symlink("../ens1f0", s.join("class/net/ens1f0.100/lower_ens1f0")).unwrap();
    // A VLAN over a bridge's port: the bridge never sees its traffic, so it counts.
    write(&s.join("class/net/vethab.5/mtu"), "1500\n");
    std::os::unix::fs::symlink("../vethab", s.join("class/net/vethab.5/lower_vethab")).unwrap();
    // Two disks, and the software block devices left out.
    let nvme = s.join("block/nvme0n1");
    write(&nvme.join("size"), "1562824368\n");
    write(&nvme.join("queue/rotational"), "0\n");
    write(&nvme.join("queue/scheduler"), "[none] mq-deadline\n");
    write(&nvme.join("device/model"), "SAMSUNG MZQL2800HCJR-00A07  \n");
    write(&s.join("block/sda/size"), "7814037168\n");
    write(&s.join("block/sda/queue/rotational"), "1\n");
    write(
        &s.join("block/sda/queue/scheduler"),
        "none [mq-deadline] bfq\n",
    );
    write(&s.join("block/loop0/size"), "8\n");
    write(&s.join("block/zram0/size"), "8\n");
    // RAPL.
    let z = s.join("class/powercap/intel-rapl:0");
    write(&z.join("name"), "package-0\n");
    write(&z.join("energy_uj"), "123456\n");
    write(&z.join("max_energy_range_uj"), "262143328850\n");
}

#[test]
fn fixture_tree() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fixture(root);
    let d = collect("sut-a", "sut", &root.join("proc"), &root.join("sys"));
    for (k, v) in [
        ("cpu.model", "Intel(R) Xeon(R) Platinum 8480+"),
        ("cpu.vendor", "GenuineIntel"),
        ("cpu.sockets", "2"),
        ("cpu.cores", "2"),
        ("cpu.threads", "4"),
        ("cpu.smt", "on"),
        ("cpu.governor", "performance"),
        ("cpu.scaling_driver", "intel_pstate"),
        ("cpu.turbo", "on (intel_pstate)"),
        ("cpu.freq_max_mhz", "3800"),
        ("cpu.freq_min_mhz", "800"),
        ("cpu.microcode", "0x2b000461"),
        ("cpu.cache.l1d", "49152"),
        ("cpu.cache.l1i", "32768"),
        ("cpu.cache.l2", "2097152"),
        ("cpu.cache.l3", "110100480"),
        ("mem.total_bytes", "540629520384"),
        ("mem.thp", "always"),
        ("numa.nodes", "2"),
        ("nic.ens1f0.driver", "ice"),
        ("nic.ens1f0.speed_mbps", "100000"),
        ("nic.ens1f0.mtu", "9000"),
        (
            "nic.virtual",
            "br-int, docker0, ens1f0.100, ovs-system, vethab, vethab.5, vethovs, vxlan_sys_4789",
        ),
        (
            "nic.enslaved",
            "ens1f0.100 over ens1f0, vethab in docker0, vethovs in ovs-system, \
             vxlan_sys_4789 in ovs-system",
        ),
        ("os.kernel", "6.1.0-18-amd64"),
        ("os.hostname", "sut-a"),
        ("os.name", "Debian GNU/Linux 12 (bookworm)"),
        (
            "mitigation.spectre_v2",
            "Mitigation: Enhanced / Automatic IBRS",
        ),
        ("mitigation.meltdown", "Not affected"),
        ("virt", "none (no hypervisor flag)"),
        ("power.sources", "rapl:package-0"),
        ("storage.devices", "nvme0n1 sda"),
        (
            "telemetry.cpu_freq",
            "cpufreq scaling_cur_freq, each sample",
        ),
        ("storage.nvme0n1.size_bytes", "800166076416"),
        (
            "storage.nvme0n1.rotational",
            "no (solid state, or as the hypervisor says)",
        ),
        ("storage.nvme0n1.scheduler", "none"),
        ("storage.nvme0n1.model", "SAMSUNG MZQL2800HCJR-00A07"),
        ("storage.sda.size_bytes", "4000787030016"),
        (
            "storage.sda.rotational",
            "yes (or a virtual disk that does not say)",
        ),
        ("storage.sda.scheduler", "mq-deadline"),
    ] {
        assert_eq!(val(&d, k), v, "key {k}");
    }
    assert!(val(&d, "nic.ens1f0.model").contains("8086:1592"));
    assert!(d.facts["mem.dimms"].value.is_none());
    assert!(d.facts["mem.dimms"].missing.is_some());
    let json = serde_json::to_string(&d).unwrap();
    assert!(!json.contains("b4:96:91"), "MAC leaked");

    // The same tree with turbo off and another governor: diff names exactly those.
    write(
        &root.join("sys/devices/system/cpu/intel_pstate/no_turbo"),
        "1\n",
    );
    for c in 0..4 {
        write(
            &root.join(format!(
                "sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor"
            )),
            "powersave\n",
        );
    }
    let e = collect("sut-a", "sut", &root.join("proc"), &root.join("sys"));
    let diffs = diff(&d, &e);
    assert_eq!(
        diffs,
        vec![
            (
                "cpu.governor".to_string(),
                Some("performance".to_string()),
                Some("powersave".to_string())
            ),
            (
                "cpu.turbo".to_string(),
                Some("on (intel_pstate)".to_string()),
                Some("off (intel_pstate no_turbo=1)".to_string())
            ),
        ]
    );
}

/// `smt/control` of a kernel without SMT hotplug says `notimplemented`, which was
/// stored as the SMT state: the topology says it (4 threads on 2 cores here), and a
/// POWER kernel's SMT-4 reads as on.
#[test]
fn smt_is_read_from_the_topology_when_control_is_notimplemented() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fixture(root);
    let control = root.join("sys/devices/system/cpu/smt/control");
    let smt = |root: &Path| {
        collect("sut-a", "sut", &root.join("proc"), &root.join("sys")).facts["cpu.smt"].display()
    };
    write(&control, "notimplemented\n");
    assert_eq!(smt(root), "on (4 threads on 2 cores)");
    write(&control, "4\n");
    assert_eq!(smt(root), "on (4 threads per core)");
    write(&control, "1\n");
    assert_eq!(smt(root), "off (1 thread per core)");
}

/// A package of two dies numbers its cores from 0 on each die on some platforms: the
/// cores are counted by the kernel's sets of sibling threads, or by die and core_id,
/// not by core_id alone, which counted half of them.
#[test]
fn cores_of_a_multi_die_package_are_counted_once_each() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let cpus = root.join("sys/devices/system/cpu");
    for cpu in 0..4 {
        let t = cpus.join(format!("cpu{cpu}/topology"));
        write(&t.join("physical_package_id"), "0\n");
        write(&t.join("die_id"), &format!("{}\n", cpu / 2));
        write(&t.join("core_id"), &format!("{}\n", cpu % 2));
    }
    let cores = |root: &Path| {
        let d = collect("sut-a", "sut", &root.join("proc"), &root.join("sys"));
        (
            val(&d, "cpu.cores").to_string(),
            val(&d, "cpu.sockets").to_string(),
        )
    };
    assert_eq!(cores(root), ("4".into(), "1".into()));
    // The sibling sets rule where the kernel has them: two threads on each of 2 cores.
    for cpu in 0..4 {
        let t = cpus.join(format!("cpu{cpu}/topology"));
        let siblings = if cpu % 2 == 0 { "0,2" } else { "1,3" };
        write(&t.join("thread_siblings_list"), &format!("{siblings}\n"));
    }
    assert_eq!(cores(root), ("2".into(), "1".into()));
}

#[test]
fn empty_tree_is_all_unknown_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let d = collect(
        "x",
        "sut",
        &dir.path().join("proc"),
        &dir.path().join("sys"),
    );
    for k in [
        "cpu.model",
        "cpu.threads",
        "mem.total_bytes",
        "os.kernel",
        "os.name",
        "power.sources",
        "numa.nodes",
        "cpu.governor",
    ] {
        let f = &d.facts[k];
        assert!(f.value.is_none() && f.missing.is_some(), "{k}: {f:?}");
    }
}

#[test]
fn diff_treats_absent_and_unknown_alike() {
    use model::Fact;
    let mk = |pairs: &[(&str, Fact)]| model::HostDisclosure {
        host: "h".into(),
        role: "sut".into(),
        facts: pairs
            .iter()
            .map(|(k, f)| (k.to_string(), f.clone()))
            .collect(),
    };
    let a = mk(&[
        ("a", Fact::known("1")),
        ("b", Fact::unknown("x")),
        ("c", Fact::known("3")),
    ]);
    let b = mk(&[("a", Fact::known("1")), ("c", Fact::unknown("gone"))]);
    assert_eq!(
        diff(&a, &b),
        vec![("c".to_string(), Some("3".to_string()), None)]
    );
}
