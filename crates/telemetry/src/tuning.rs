//! The settings that decide results, beside what the hardware is: sysctls, the kernel
//! command line's tuning parameters, the tuned profile, C-states, THP defrag, irqbalance,
//! and per NIC its ethtool settings (firmware, channels, rings, coalescing, offloads) and
//! the CPUs its queues' interrupts go to. A setting changed by hand shows in the
//! disclosure, so two runs that differ in it are not called comparable.
//!
//! Nothing here fails: what cannot be read is `Fact::unknown(why)`. The kernel command
//! line is filtered to tuning parameters (no `root=UUID=...`, no paths).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use engine::command::probe;
use model::Fact;

/// Sysctls that move network, memory and scheduler results. Whole directories are listed
/// as `dir/`; each file in them is one fact.
const SYSCTLS: &[&str] = &[
    "net/core/",
    "net/ipv4/tcp_rmem",
    "net/ipv4/tcp_wmem",
    "net/ipv4/tcp_mem",
    "net/ipv4/udp_mem",
    "net/ipv4/tcp_congestion_control",
    "net/ipv4/tcp_timestamps",
    "net/ipv4/tcp_sack",
    "net/ipv4/tcp_window_scaling",
    "net/ipv4/tcp_low_latency",
    "net/ipv4/tcp_autocorking",
    "net/ipv4/tcp_slow_start_after_idle",
    "net/ipv4/tcp_fin_timeout",
    "net/ipv4/tcp_tw_reuse",
    "net/ipv4/tcp_max_syn_backlog",
    "net/ipv4/ip_local_port_range",
    "vm/swappiness",
    "vm/dirty_ratio",
    "vm/dirty_background_ratio",
    "vm/overcommit_memory",
    "vm/zone_reclaim_mode",
    "vm/nr_hugepages",
    "vm/max_map_count",
    "kernel/numa_balancing",
    "kernel/sched_",
];

/// The `net/core/` sysctls the kernel keeps for its initial network namespace only
/// (net/core/sysctl_net_core.c's `net_core_table`; the per-namespace ones, somaxconn,
/// optmem_max, the rmem/wmem limits, txrehash, tstamp_allow_data, rps_default_mask and
/// xfrm_*, are in `netns_core_table`). In any other namespace (a container, the
/// many-hosts tests' sshd in a netns) /proc/sys/net/core has none of them: each is then
/// recorded as not present, with why, so that beside a host that has them the
/// disclosure does not read a bare `-`. The values that apply there are the host's own.
const NET_CORE_INIT_NS_ONLY: &[&str] = &[
    "bpf_jit_enable",
    "bpf_jit_harden",
    "bpf_jit_kallsyms",
    "bpf_jit_limit",
    "busy_poll",
    "busy_read",
    "default_qdisc",
    "dev_weight",
    "dev_weight_rx_bias",
    "dev_weight_tx_bias",
    "flow_limit_cpu_bitmap",
    "flow_limit_table_len",
    "gro_normal_batch",
    "high_order_alloc_disable",
    "max_skb_frags",
    "message_burst",
    "message_cost",
    "netdev_budget",
    "netdev_budget_usecs",
    "netdev_max_backlog",
    "netdev_rss_key",
    "netdev_tstamp_prequeue",
    "rps_sock_flow_entries",
    "warnings",
];

/// A key of [`NET_CORE_INIT_NS_ONLY`] every kernel has had (since 2.6): absent while
/// /proc/sys/net/core is there, it says this is not the initial network namespace.
const NET_CORE_ALWAYS: &str = "netdev_max_backlog";

/// Kernel command-line parameters that tune (isolation, idle, frequency, mitigations,
/// huge pages, IOMMU); anything else (root=, initrd paths, console) is left out.
const CMDLINE_KEYS: &[&str] = &[
    "isolcpus",
    "nohz_full",
    "nohz",
    "rcu_nocbs",
    "irqaffinity",
    "mitigations",
    "nosmt",
    "pti",
    "spectre_v2",
    "tsx",
    "intel_pstate",
    "amd_pstate",
    "cpufreq.default_governor",
    "processor.max_cstate",
    "intel_idle.max_cstate",
    "idle",
    "transparent_hugepage",
    "default_hugepagesz",
    "hugepagesz",
    "hugepages",
    "iommu",
    "intel_iommu",
    "amd_iommu",
    "numa_balancing",
    "skew_tick",
    "threadirqs",
    "preempt",
    "nmi_watchdog",
    "nowatchdog",
    "audit",
];

/// How long one ethtool call may take.
const ETHTOOL_TIMEOUT: Duration = Duration::from_secs(3);

/// Where [`collect`] reads, as plain data (fixture trees in tests).
pub struct Sources<'a> {
    pub proc_root: &'a Path,
    pub sys_root: &'a Path,
    pub etc_root: &'a Path,
    /// `ethtool` (for coalescing and offloads), on the live host only: NICs are queried
    /// only then (firmware, channels and rings in-process, see [`crate::nic_ioctl`]).
    pub ethtool: Option<&'a str>,
}

/// Every tuning fact, keyed as the disclosure keys them.
pub fn collect(src: &Sources) -> BTreeMap<String, Fact> {
    let mut f = BTreeMap::new();
    sysctls(&mut f, src.proc_root);
    cmdline(&mut f, src.proc_root);
    f.insert(
        IRQ_TIME_ACCOUNTING.into(),
        irq_time_accounting(src.proc_root, &src.etc_root.with_file_name("boot")),
    );
    tuned(&mut f, src.etc_root);
    cstates(&mut f, src.sys_root);
    let thp = src.sys_root.join("kernel/mm/transparent_hugepage/defrag");
    f.insert(
        "mem.thp_defrag".into(),
        match std::fs::read_to_string(&thp) {
            Ok(s) => crate::parse::parse_bracketed_choice(&s)
                .map_or_else(|| Fact::unknown(format!("unexpected {s:?}")), Fact::known),
            Err(e) => Fact::unknown(format!("{}: {e}", thp.display())),
        },
    );
    f.insert("irq.irqbalance".into(), irqbalance(src.proc_root));
    nic_settings(&mut f, src);
    f
}

fn sysctls(f: &mut BTreeMap<String, Fact>, proc_root: &Path) {
    let root = proc_root.join("sys");
    net_core_absent(f, &root.join("net/core"));
    for entry in SYSCTLS {
        let (dir, prefix) = match entry.rsplit_once('/') {
            Some((d, p)) => (root.join(d), p),
            None => continue,
        };
        // `net/core/` lists the directory; `kernel/sched_` every file starting so; else one file.
        let files: Vec<PathBuf> = if prefix.is_empty() || prefix.ends_with('_') {
            let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
                .map(|rd| rd.flatten().map(|e| e.path()).collect())
                .unwrap_or_default();
            v.retain(|p| {
                p.is_file()
                    && p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
            });
            v.sort();
            v
        } else {
            vec![dir.join(prefix)]
        };
        for file in files {
            let Ok(rel) = file.strip_prefix(&root) else {
                continue;
            };
            let key = format!("sysctl.{}", rel.to_string_lossy().replace('/', "."));
            // Write-only or absent files are not settings of this kernel: left out.
            if let Ok(v) = std::fs::read_to_string(&file) {
                let v = v.split_whitespace().collect::<Vec<_>>().join(" ");
                f.insert(key, Fact::known(v));
            }
        }
    }
}

/// Each [`NET_CORE_INIT_NS_ONLY`] key absent from `dir` (`/proc/sys/net/core`), as not
/// present and why: this network namespace is not the initial one (the key that every
/// kernel has is missing too), this kernel has no such key, or the host has no
/// /proc/sys/net/core at all. A key that is there is read by [`sysctls`] as any other.
fn net_core_absent(f: &mut BTreeMap<String, Fact>, dir: &Path) {
    let why = if !dir.is_dir() {
        format!("not present on this host (no {})", dir.display())
    } else if !dir.join(NET_CORE_ALWAYS).exists() {
        "not present in this network namespace: the kernel keeps it for the \
         initial namespace only, whose value applies here"
            .to_string()
    } else {
        "not present in this kernel".to_string()
    };
    for key in NET_CORE_INIT_NS_ONLY {
        if !dir.join(key).exists() {
            f.insert(format!("sysctl.net.core.{key}"), Fact::unknown(why.clone()));
        }
    }
}

/// The tuning parameters of /proc/cmdline (`none` when it has none).
pub fn tuning_params(cmdline: &str) -> String {
    let kept: Vec<&str> = cmdline
        .split_whitespace()
        .filter(|p| {
            let key = p.split_once('=').map_or(*p, |(k, _)| k);
            CMDLINE_KEYS.contains(&key)
        })
        .collect();
    if kept.is_empty() {
        "none".into()
    } else {
        kept.join(" ")
    }
}

fn cmdline(f: &mut BTreeMap<String, Fact>, proc_root: &Path) {
    let p = proc_root.join("cmdline");
    f.insert(
        "kernel.cmdline_tuning".into(),
        match std::fs::read_to_string(&p) {
            Ok(s) => Fact::known(tuning_params(&s)),
            Err(e) => Fact::unknown(format!("{}: {e}", p.display())),
        },
    );
}

/// The fact saying whether the kernel accounts interrupt time apart from tasks.
pub const IRQ_TIME_ACCOUNTING: &str = "kernel.irq_time_accounting";

/// How [`IRQ_TIME_ACCOUNTING`]'s value starts when the kernel charges each tick spent in
/// an interrupt or softirq to the task it interrupted (no `CONFIG_IRQ_TIME_ACCOUNTING`,
/// or `tsc=noirqtime`): a process's CPU time (pidstat's %CPU) then holds the network path
/// it carried, which /proc/stat counts under %irq and %soft, not %sys.
pub const IRQ_IN_TASK_TIME: &str = "off";

/// Whether interrupt time is accounted apart (`on`) or charged to the interrupted task
/// (`off`), from the kernel's build configuration (`/proc/config.gz`, else
/// `/boot/config-RELEASE`) and its command line (`tsc=noirqtime` turns it off).
fn irq_time_accounting(proc_root: &Path, boot_root: &Path) -> Fact {
    let cmdline = std::fs::read_to_string(proc_root.join("cmdline")).unwrap_or_default();
    let release = std::fs::read_to_string(proc_root.join("sys/kernel/osrelease"))
        .unwrap_or_default()
        .trim()
        .to_string();
    let gz = proc_root.join("config.gz");
    let config = std::fs::File::open(&gz)
        .ok()
        .and_then(|f| {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(f), &mut text)
                .ok()
                .map(|_| (text, gz.display().to_string()))
        })
        .or_else(|| {
            let p = boot_root.join(format!("config-{release}"));
            Some((std::fs::read_to_string(&p).ok()?, p.display().to_string()))
        });
    let Some((config, from)) = config else {
        return Fact::unknown(format!(
            "the kernel's build configuration is not readable (no {} or {}/config-{release})",
            gz.display(),
            boot_root.display()
        ));
    };
    let on = config
        .lines()
        .any(|l| l.trim() == "CONFIG_IRQ_TIME_ACCOUNTING=y");
    if !on {
        Fact::known(format!(
            "{IRQ_IN_TASK_TIME}: interrupt and softirq ticks are charged to the task they \
             interrupt (no CONFIG_IRQ_TIME_ACCOUNTING in {from})"
        ))
    } else if cmdline.split_whitespace().any(|w| w == "tsc=noirqtime") {
        Fact::known(format!(
            "{IRQ_IN_TASK_TIME}: interrupt and softirq ticks are charged to the task they \
             interrupt (tsc=noirqtime on the kernel's command line)"
        ))
    } else {
        Fact::known(format!("on (CONFIG_IRQ_TIME_ACCOUNTING in {from})"))
    }
}

fn tuned(f: &mut BTreeMap<String, Fact>, etc_root: &Path) {
    let p = etc_root.join("tuned/active_profile");
    f.insert(
        "os.tuned_profile".into(),
        match std::fs::read_to_string(&p) {
            Ok(s) if !s.trim().is_empty() => Fact::known(s.trim()),
            Ok(_) => Fact::known("none (tuned has no active profile)"),
            Err(_) => Fact::unknown("tuned is not installed (no /etc/tuned/active_profile)"),
        },
    );
}

/// CPU 0's idle states as `POLL C1 C1E C6(disabled)`, and the cpuidle driver.
fn cstates(f: &mut BTreeMap<String, Fact>, sys_root: &Path) {
    let cpu = sys_root.join("devices/system/cpu");
    let driver = cpu.join("cpuidle/current_driver");
    f.insert(
        "cpu.idle_driver".into(),
        match std::fs::read_to_string(&driver) {
            Ok(s) => Fact::known(s.trim()),
            Err(_) => Fact::unknown("no cpuidle driver (a VM, or idle=poll)"),
        },
    );
    let mut states: Vec<(u32, PathBuf)> = std::fs::read_dir(cpu.join("cpu0/cpuidle"))
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    let n = e
                        .file_name()
                        .to_string_lossy()
                        .strip_prefix("state")?
                        .parse()
                        .ok()?;
                    Some((n, e.path()))
                })
                .collect()
        })
        .unwrap_or_default();
    states.sort();
    let names: Vec<String> = states
        .iter()
        .filter_map(|(_, d)| {
            let name = std::fs::read_to_string(d.join("name")).ok()?;
            let off = std::fs::read_to_string(d.join("disable")).is_ok_and(|s| s.trim() == "1");
            Some(format!(
                "{}{}",
                name.trim(),
                if off { "(disabled)" } else { "" }
            ))
        })
        .collect();
    f.insert(
        "cpu.cstates".into(),
        if names.is_empty() {
            Fact::unknown("no cpu0/cpuidle states")
        } else {
            Fact::known(names.join(" "))
        },
    );
}

/// Whether an irqbalance daemon runs (it moves interrupts while a run measures).
fn irqbalance(proc_root: &Path) -> Fact {
    let Ok(rd) = std::fs::read_dir(proc_root) else {
        return Fact::unknown(format!("cannot list {}", proc_root.display()));
    };
    let running = rd.flatten().any(|e| {
        e.file_name().to_string_lossy().parse::<u32>().is_ok()
            && std::fs::read_to_string(e.path().join("comm"))
                .is_ok_and(|c| c.trim() == "irqbalance")
    });
    Fact::known(if running { "running" } else { "not running" })
}

/// Physical NICs (with a backing device), by name.
fn physical_nics(sys_root: &Path) -> Vec<String> {
    let net = sys_root.join("class/net");
    let mut v: Vec<String> = std::fs::read_dir(&net)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.path().join("device").exists())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn nic_settings(f: &mut BTreeMap<String, Fact>, src: &Sources) {
    let interrupts = std::fs::read_to_string(src.proc_root.join("interrupts")).unwrap_or_default();
    for nic in physical_nics(src.sys_root) {
        let key = |s: &str| format!("nic.{nic}.{s}");
        f.insert(key("irq_affinity"), irq_affinity(&nic, src, &interrupts));
        let Some(ethtool) = src.ethtool else {
            continue;
        };
        // Firmware, channels and rings: ethtool's own requests, made in-process.
        let queried = crate::nic_ioctl::Nic::open(&nic).and_then(|n| Ok((n.firmware()?, n)));
        match queried {
            Ok((fw, n)) => {
                if !fw.is_empty() {
                    f.insert(key("firmware"), Fact::known(fw));
                }
                if let Ok(c) = n.channels() {
                    f.insert(key("channels"), Fact::known(c));
                }
                if let Ok(r) = n.rings() {
                    f.insert(key("rings"), Fact::known(r));
                }
            }
            Err(e) => {
                f.insert(
                    key("ethtool"),
                    Fact::unknown(format!("SIOCETHTOOL on {nic}: {e}")),
                );
                continue;
            }
        }
        // The name came from /sys/class/net: letters, digits, `.-_@:` only; quoted anyway.
        let quoted = format!("'{}'", nic.replace('\'', ""));
        let run = |flag: &str| probe(&format!("{ethtool} {flag} {quoted}"), ETHTOOL_TIMEOUT);
        if let Ok(out) = run("-c") {
            let kv = colon_pairs(&out);
            let shown: Vec<String> = [
                "Adaptive RX",
                "Adaptive TX",
                "rx-usecs",
                "tx-usecs",
                "rx-frames",
                "tx-frames",
            ]
            .iter()
            .filter_map(|k| {
                // `Adaptive RX: off  TX: off` is one line: its value holds TX's too.
                kv.get(*k)
                    .map(|v| format!("{k} {}", v.split_whitespace().collect::<Vec<_>>().join(" ")))
            })
            .collect();
            if !shown.is_empty() {
                f.insert(key("coalesce"), Fact::known(shown.join(", ")));
            }
        }
        if let Ok(out) = run("-k") {
            f.insert(key("offloads_on"), Fact::known(offloads_on(&out)));
        }
    }
}

/// `key: value` lines (ethtool's output), trimmed.
fn colon_pairs(out: &str) -> BTreeMap<String, String> {
    out.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// The offloads `ethtool -k` lists as on, comma separated (`[fixed]` ones included).
pub fn offloads_on(out: &str) -> String {
    let on: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(_, v)| v.trim_start().starts_with("on"))
        .map(|(k, _)| k.trim())
        .collect();
    if on.is_empty() {
        "none".into()
    } else {
        on.join(",")
    }
}

/// The CPUs each of the NIC's interrupts may run on: `eth0-TxRx-0:0 eth0-TxRx-1:1`.
/// A virtio NIC's interrupts are named after its virtio device (`virtio0-input.0`).
fn irq_affinity(nic: &str, src: &Sources, interrupts: &str) -> Fact {
    let mut names = vec![nic.to_string()];
    if let Ok(dev) = std::fs::read_link(src.sys_root.join("class/net").join(nic).join("device")) {
        if let Some(d) = dev.file_name() {
            names.push(d.to_string_lossy().into_owned());
        }
    }
    let mut out = Vec::new();
    for line in interrupts.lines() {
        let Some((irq, rest)) = line.trim_start().split_once(':') else {
            continue;
        };
        let Ok(irq) = irq.parse::<u32>() else {
            continue;
        };
        let Some(name) = rest.split_whitespace().last() else {
            continue;
        };
        // The name, then a separator: `eth1` is not `eth10-TxRx-0`, `virtio1` not
        // `virtio10-input.0`.
        let of = |n: &String| {
            name.strip_prefix(n.as_str()).is_some_and(|r| {
                r.is_empty() || r.starts_with(|c: char| !c.is_ascii_alphanumeric())
            })
        };
        if !names.iter().any(of) {
            continue;
        }
        let aff = src.proc_root.join(format!("irq/{irq}/smp_affinity_list"));
        let cpus =
            std::fs::read_to_string(aff).map_or_else(|_| "?".to_string(), |s| s.trim().to_string());
        out.push(format!("{name}:{cpus}"));
    }
    if out.is_empty() {
        Fact::unknown(format!("no interrupt of {nic} in /proc/interrupts"))
    } else {
        Fact::known(out.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The "Current hardware settings" part of `ethtool -l` / `-g`: `RX 256 TX 256`, as
    /// [`crate::nic_ioctl`] formats what it reads in-process.
    fn current_section(out: &str, keys: &[&str]) -> String {
        let current = out
            .split_once("Current hardware settings:")
            .map_or(out, |(_, c)| c);
        let kv = colon_pairs(current);
        let v: Vec<String> = keys
            .iter()
            .filter_map(|k| kv.get(*k).map(|v| format!("{k} {v}")))
            .collect();
        if v.is_empty() {
            "not reported".into()
        } else {
            v.join(" ")
        }
    }

    #[test]
    fn the_command_line_keeps_tuning_and_drops_the_rest() {
        let c = "BOOT_IMAGE=/vmlinuz root=UUID=abcd ro quiet isolcpus=2-3 nohz_full=2-3 mitigations=off console=ttyS0\n";
        assert_eq!(
            tuning_params(c),
            "isolcpus=2-3 nohz_full=2-3 mitigations=off"
        );
        assert_eq!(tuning_params("ro quiet"), "none");
    }

    #[test]
    fn ethtool_outputs_become_short_facts() {
        let l = "Channel parameters for eth0:\nPre-set maximums:\nRX:\t\tn/a\nTX:\t\tn/a\nCombined:\t8\n\
                 Current hardware settings:\nRX:\t\tn/a\nTX:\t\tn/a\nCombined:\t4\n";
        assert_eq!(current_section(l, &["Combined"]), "Combined 4");
        let k = "Features for eth0:\nrx-checksumming: on\ntx-checksumming: on\n\
                 tcp-segmentation-offload: off\ngeneric-receive-offload: on\nlarge-receive-offload: off [fixed]\n";
        assert_eq!(
            offloads_on(k),
            "rx-checksumming,tx-checksumming,generic-receive-offload"
        );
    }

    /// Every NIC of this host: what the in-process requests give is what `ethtool`
    /// prints for the same settings (the test is silent where ethtool is not installed).
    #[test]
    fn in_process_nic_settings_are_what_ethtool_prints() {
        let ethtool = |flag: &str, nic: &str| {
            std::process::Command::new("ethtool")
                .args([flag, nic])
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        };
        for nic in physical_nics(Path::new("/sys")) {
            let Some(info) = ethtool("-i", &nic) else {
                continue;
            };
            let n = crate::nic_ioctl::Nic::open(&nic).unwrap();
            let fw = colon_pairs(&info).get("firmware-version").cloned();
            assert_eq!(n.firmware().unwrap(), fw.unwrap_or_default(), "{nic}");
            match ethtool("-l", &nic) {
                Some(out) => assert_eq!(
                    n.channels().unwrap(),
                    current_section(&out, &["RX", "TX", "Combined"]),
                    "{nic}"
                ),
                None => assert!(n.channels().is_err(), "{nic}"),
            }
            match ethtool("-g", &nic) {
                Some(out) => assert_eq!(
                    n.rings().unwrap(),
                    current_section(&out, &["RX", "TX"]),
                    "{nic}"
                ),
                None => assert!(n.rings().is_err(), "{nic}"),
            }
        }
    }

    /// Whether the kernel charges interrupt ticks to tasks decides how the other-load
    /// check reads a process's CPU time (acceptance pass F, 1): from /proc/config.gz,
    /// else /boot/config-RELEASE, and `tsc=noirqtime` on the command line.
    #[test]
    fn irq_time_accounting_is_read_from_the_kernels_configuration() {
        use std::io::Write;
        let d = tempfile::tempdir().unwrap();
        let (proc_root, boot) = (d.path().join("proc"), d.path().join("boot"));
        std::fs::create_dir_all(proc_root.join("sys/kernel")).unwrap();
        std::fs::create_dir_all(&boot).unwrap();
        std::fs::write(proc_root.join("sys/kernel/osrelease"), "6.1.0-test\n").unwrap();
        std::fs::write(proc_root.join("cmdline"), "root=/dev/vda\n").unwrap();
        let fact = || irq_time_accounting(&proc_root, &boot);
        assert!(fact().value.is_none(), "no configuration: unknown");
        assert!(fact().missing.unwrap().contains("config-6.1.0-test"));
        std::fs::write(
            boot.join("config-6.1.0-test"),
            "CONFIG_TICK_CPU_ACCOUNTING=y\nCONFIG_IRQ_TIME_ACCOUNTING=y\n",
        )
        .unwrap();
        assert!(fact()
            .value
            .unwrap()
            .starts_with("on (CONFIG_IRQ_TIME_ACCOUNTING in"));
        std::fs::write(proc_root.join("cmdline"), "root=/dev/vda tsc=noirqtime\n").unwrap();
        let off = fact().value.unwrap();
        assert!(
            off.starts_with(IRQ_IN_TASK_TIME) && off.contains("tsc=noirqtime"),
            "{off}"
        );
        // /proc/config.gz, this kernel's own, comes before /boot.
        std::fs::write(proc_root.join("cmdline"), "root=/dev/vda\n").unwrap();
        let mut gz = flate2::write::GzEncoder::new(
            std::fs::File::create(proc_root.join("config.gz")).unwrap(),
            flate2::Compression::fast(),
        );
        gz.write_all(b"# CONFIG_IRQ_TIME_ACCOUNTING is not set\n")
            .unwrap();
        gz.finish().unwrap();
        let off = fact().value.unwrap();
        assert!(
            off.starts_with("off: interrupt and softirq ticks are charged"),
            "{off}"
        );
        assert!(off.contains("config.gz"), "{off}");
    }

    #[test]
    fn a_fixture_tree_gives_sysctls_cstates_and_irq_affinity() {
        let d = tempfile::tempdir().unwrap();
        let w = |p: &str, s: &str| {
            let p = d.path().join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, s).unwrap();
        };
        w("proc/sys/net/core/somaxconn", "4096\n");
        w("proc/sys/net/ipv4/tcp_rmem", "4096\t131072\t6291456\n");
        w("proc/sys/kernel/sched_autogroup_enabled", "1\n");
        w("proc/sys/kernel/numa_balancing", "0\n");
        w("proc/cmdline", "root=/dev/sda1 isolcpus=1\n");
        // eth00's interrupt is not eth0's (a bare prefix took eth10's for eth1's).
        w("proc/interrupts", "           CPU0       CPU1\n 24:  1  2  PCI-MSI  eth0-TxRx-0\n 25:  3  4  PCI-MSI  eth0-TxRx-1\n 26:  5  6  PCI-MSI  eth00-TxRx-0\n");
        w("proc/irq/24/smp_affinity_list", "0\n");
        w("proc/irq/25/smp_affinity_list", "1\n");
        w("proc/irq/26/smp_affinity_list", "1\n");
        w("sys/devices/system/cpu/cpu0/cpuidle/state0/name", "POLL\n");
        w("sys/devices/system/cpu/cpu0/cpuidle/state1/name", "C1\n");
        w("sys/devices/system/cpu/cpu0/cpuidle/state2/name", "C6\n");
        w("sys/devices/system/cpu/cpu0/cpuidle/state2/disable", "1\n");
        w("sys/devices/pci0000:00/0000:00:03.0/vendor", "0x8086\n");
        std::fs::create_dir_all(d.path().join("sys/class/net/eth0")).unwrap();
        std::os::unix::fs::symlink(
            d.path().join("sys/devices/pci0000:00/0000:00:03.0"),
            d.path().join("sys/class/net/eth0/device"),
        )
        .unwrap();
        w("etc/tuned/active_profile", "network-latency\n");
        let (p, s, e) = (
            d.path().join("proc"),
            d.path().join("sys"),
            d.path().join("etc"),
        );
        let f = collect(&Sources {
            proc_root: &p,
            sys_root: &s,
            etc_root: &e,
            ethtool: None,
        });
        let v = |k: &str| {
            f.get(k)
                .and_then(|x| x.value.clone())
                .unwrap_or_else(|| format!("missing {k}: {f:?}"))
        };
        assert_eq!(v("sysctl.net.core.somaxconn"), "4096");
        assert_eq!(v("sysctl.net.ipv4.tcp_rmem"), "4096 131072 6291456");
        assert_eq!(v("sysctl.kernel.sched_autogroup_enabled"), "1");
        assert_eq!(v("sysctl.kernel.numa_balancing"), "0");
        assert_eq!(v("kernel.cmdline_tuning"), "isolcpus=1");
        assert_eq!(v("os.tuned_profile"), "network-latency");
        assert_eq!(v("cpu.cstates"), "POLL C1 C6(disabled)");
        assert_eq!(v("nic.eth0.irq_affinity"), "eth0-TxRx-0:0 eth0-TxRx-1:1");
        assert_eq!(v("irq.irqbalance"), "not running");
        // net/core without netdev_max_backlog: a network namespace's (somaxconn only).
        let why = f["sysctl.net.core.busy_poll"].display();
        assert!(
            why.starts_with("unknown (not present in this network namespace"),
            "{why}"
        );
    }

    /// A net.core key missing says why, by what /proc/sys/net/core holds: a network
    /// namespace's (none of the initial namespace's keys), an older kernel's (it has
    /// netdev_max_backlog but not this key), or none at all; a key that is there is read.
    #[test]
    fn a_missing_net_core_key_says_why() {
        let d = tempfile::tempdir().unwrap();
        let core = d.path().join("sys/net/core");
        let reason = |f: &BTreeMap<String, Fact>, k: &str| {
            f.get(&format!("sysctl.net.core.{k}"))
                .and_then(|x| x.missing.clone())
                .unwrap_or_else(|| format!("no reason for {k}: {f:?}"))
        };
        let mut f = BTreeMap::new();
        sysctls(&mut f, d.path());
        assert!(
            reason(&f, "busy_poll").starts_with("not present on this host (no "),
            "{f:?}"
        );

        std::fs::create_dir_all(&core).unwrap();
        std::fs::write(core.join("somaxconn"), "4096\n").unwrap();
        let mut f = BTreeMap::new();
        sysctls(&mut f, d.path());
        assert!(
            reason(&f, "netdev_max_backlog").starts_with("not present in this network namespace"),
            "{f:?}"
        );
        assert_eq!(f["sysctl.net.core.somaxconn"].display(), "4096");

        std::fs::write(core.join("netdev_max_backlog"), "1000\n").unwrap();
        let mut f = BTreeMap::new();
        sysctls(&mut f, d.path());
        assert_eq!(f["sysctl.net.core.netdev_max_backlog"].display(), "1000");
        assert_eq!(reason(&f, "busy_poll"), "not present in this kernel");
    }

    /// The real thing: a thread moved into a new network namespace (`unshare -n`, as the
    /// many-hosts tests' sshd runs) reads the initial namespace's net.core keys as not
    /// present there, with that reason. Skipped without the privilege to unshare.
    #[test]
    fn in_a_network_namespace_net_core_keys_say_they_are_not_present() {
        let facts = std::thread::spawn(|| {
            // SAFETY: unshare on this thread alone, which reads and ends.
            if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                return None;
            }
            let mut f = BTreeMap::new();
            sysctls(&mut f, Path::new("/proc"));
            Some(f)
        })
        .join()
        .unwrap();
        let Some(f) = facts else {
            eprintln!("skipped: unshare(CLONE_NEWNET) needs CAP_SYS_ADMIN");
            return;
        };
        let why = f["sysctl.net.core.netdev_max_backlog"].display();
        assert!(
            why.starts_with("unknown (not present in this network namespace"),
            "{why}"
        );
        assert!(f["sysctl.net.core.somaxconn"].value.is_some(), "{f:?}");
    }
}
