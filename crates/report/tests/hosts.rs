//! Views of runs spanning several hosts, on a 3-host net matrix (6 pairs, tcp) built the
//! way the runner stores it: each end's figures must come from its own host's telemetry
//! (every host has different CPU figures, so taking the wrong host's fails), power only
//! on one host, repetitions summarised by their median; plus a kv run with two generators.

mod common;

use std::collections::BTreeMap;

use common::{kv_run, Spec};
use model::{
    CpuUtil, Fact, HostDisclosure, IdlePower, Metric, NicRate, PowerSummary, ResultRecord,
    RunRecord, Status, TelemetrySummary,
};
use rackbench_report::{self as report, hosts_view};
use serde_json::json;

const NO_POWER: &str = "no power source found: no RAPL, IPMI, hwmon (test host)";

/// Host `h`'s CPU line: every host and CPU has its own figures (see `busy`).
fn cpu(h: usize, c: i32) -> CpuUtil {
    let usr = h as f64 + 1.0;
    let sys = 10.0 * (h as f64 + 1.0) + c as f64;
    let soft = if c < 0 { 3.0 } else { c as f64 * 5.0 };
    CpuUtil {
        cpu: c,
        usr_pct: usr,
        nice_pct: 0.0,
        sys_pct: sys,
        iowait_pct: 1.0,
        irq_pct: 0.5,
        soft_pct: soft,
        steal_pct: 0.0,
        idle_pct: 100.0 - usr - sys - 0.5 - soft - 1.0,
    }
}

/// What `cpu(h, c)` is busy: 100 - idle - iowait.
fn busy(h: usize, c: i32) -> f64 {
    let u = cpu(h, c);
    u.usr_pct + u.sys_pct + u.irq_pct + u.soft_pct
}

/// A pair table's %CPU used of an end on host `h` pinned to CPU `pinned`: that CPU and
/// the other of CPU2 and CPU4 where it was busy 5% or more (the seed's CPU2 + CPU4).
fn end_used(h: usize, pinned: i32) -> f64 {
    let other = if pinned == 2 { 4 } else { 2 };
    busy(h, pinned) + Some(busy(h, other)).filter(|b| *b >= 5.0).unwrap_or(0.0)
}

fn summary(name: &str, h: usize) -> TelemetrySummary {
    let (power, power_missing) = if h == 0 {
        (
            vec![PowerSummary {
                source: "ipmi-dcmi".into(),
                zone: "system".into(),
                mean_watts: 200.0,
                max_watts: 210.0,
                whole_system: true,
                modelled: false,
            }],
            None,
        )
    } else {
        (vec![], Some(NO_POWER.to_string()))
    };
    TelemetrySummary {
        host: name.into(),
        samples: 10,
        covered_s: Some(10.0),
        whole_samples: true,
        measured_t_s: Vec::new(),
        cpus: vec![cpu(h, -1), cpu(h, 2), cpu(h, 4)],
        ctxt_per_s: Some(1000.0),
        intr_per_s: Some(1000.0),
        nics: vec![
            NicRate {
                name: "lo".into(),
                rx_bytes_per_s: 9e9,
                tx_bytes_per_s: 9e9,
                rx_packets_per_s: 0.0,
                tx_packets_per_s: 0.0,
                rx_drops_per_s: 0.0,
                tx_drops_per_s: 0.0,
            },
            NicRate {
                name: "eth0".into(),
                rx_bytes_per_s: (h as f64 + 1.0) * 1e9 / 8.0,
                tx_bytes_per_s: (h as f64 + 1.0) * 2e9 / 8.0,
                rx_packets_per_s: 0.0,
                tx_packets_per_s: 0.0,
                rx_drops_per_s: 0.0,
                tx_drops_per_s: 0.0,
            },
        ],
        disks: vec![],
        mean_freq_mhz: None,
        procs: vec![],
        power,
        power_missing,
        power_gaps: None,
        part_present: Vec::new(),
    }
}

/// Received Gbit/s of each pair (the sender reports 0.5 more).
const PAIRS: [((usize, usize), f64); 6] = [
    ((0, 1), 12.0),
    ((0, 2), 11.5),
    ((1, 0), 12.25),
    ((1, 2), 13.0),
    ((2, 0), 14.0),
    ((2, 1), 15.5),
];

fn result(
    names: &[&str],
    test: &str,
    (s, d): (usize, usize),
    gbit: f64,
    rep: u32,
    template: &ResultRecord,
) -> ResultRecord {
    let mut metrics = vec![
        Metric::new("throughput_gbit_per_s", gbit, "Gbit/s"),
        Metric::new("throughput_gbit_per_s", gbit + 0.5, "Gbit/s").label("end", "sender"),
    ];
    if test.starts_with("udp") {
        metrics.push(Metric::new("packets_per_s", 350_000.0, "packets/s"));
        metrics.push(Metric::new("packets_per_s", 360_000.0, "packets/s").label("end", "sender"));
        metrics.push(Metric::new("loss_pct", 2.5, "%"));
    }
    ResultRecord {
        workload: "net".into(),
        test: test.into(),
        step: 0,
        repetition: rep,
        params: BTreeMap::from([
            ("sender_host".to_string(), json!(names[s])),
            ("receiver_host".to_string(), json!(names[d])),
            ("sender_cpus".to_string(), json!([2])),
            ("receiver_cpus".to_string(), json!([4])),
            ("streams".to_string(), json!(1)),
        ]),
        settings: Default::default(),
        headline: "throughput_gbit_per_s".into(),
        metrics,
        missing: vec![],
        histograms: vec![],
        telemetry: vec![],
        // The hosts of the run in another order than the pair's, so that position says
        // nothing about which end a summary belongs to.
        telemetry_summary: (0..names.len())
            .rev()
            .map(|h| summary(names[h], h))
            .collect(),
        flags: vec![],
        status: Status::Ok,
        error: None,
        ..template.clone()
    }
}

fn disclosure(name: &str, i: usize) -> HostDisclosure {
    let mut facts = BTreeMap::from([(
        "host.address".to_string(),
        Fact::known(format!("10.0.0.{}", i + 1)),
    )]);
    if i > 0 {
        facts.insert(
            "host.clock_offset_s".into(),
            Fact::known(format!("{:.6}", 0.0015 * i as f64)),
        );
        facts.insert(
            "rackbench.agent".into(),
            Fact::known(format!(
                "0.1.0 (binary sha256 0123456789abcdef), pid {}",
                100 + i
            )),
        );
    }
    HostDisclosure {
        host: name.into(),
        role: "sender+receiver".into(),
        facts,
    }
}

/// The 3-host tcp matrix; pair 0 -> 1 repeated (12, 10, 30 Gbit/s and a failed 99).
fn net_matrix(names: &[&str]) -> RunRecord {
    let mut run = kv_run(&Spec {
        reps: 1,
        instances: &[1],
        ..Spec::default()
    });
    let template = run.results[0].clone();
    run.results.clear();
    for (pair, gbit) in PAIRS {
        run.results
            .push(result(names, "tcp", pair, gbit, 0, &template));
    }
    for (rep, g) in [(1, 10.0), (2, 30.0)] {
        run.results
            .push(result(names, "tcp", (0, 1), g, rep, &template));
    }
    let mut failed = result(names, "tcp", (0, 1), 99.0, 3, &template);
    failed.status = Status::Failed;
    run.results.push(failed);
    run.results
        .push(result(names, "udp60", (0, 1), 0.169, 0, &template));
    for (i, r) in run.results.iter_mut().enumerate() {
        r.step = i as u32;
    }
    run.hosts = names
        .iter()
        .enumerate()
        .map(|(i, n)| disclosure(n, i))
        .collect();
    run.idle_power = vec![IdlePower {
        host: names[0].into(),
        duration_s: 10.0,
        power: vec![PowerSummary {
            source: "ipmi-dcmi".into(),
            zone: "system".into(),
            mean_watts: 150.0,
            max_watts: 155.0,
            whole_system: true,
            modelled: false,
        }],
        cpus: Vec::new(),
        flags: Vec::new(),
    }];
    run
}

const NAMES: [&str; 3] = ["alpha", "beta", "gamma"];

fn tcp_table(run: &RunRecord) -> hosts_view::HostTable {
    let tables = hosts_view::pair_tables(std::slice::from_ref(run));
    assert_eq!(tables.len(), 2, "one table per test: tcp, udp60");
    tables
        .into_iter()
        .find(|t| t.caption.starts_with("tcp"))
        .expect("tcp table")
}

/// Column of the pair (s, d)'s sender (receiver = +1), after the row-label column.
fn col(s: usize, d: usize) -> usize {
    1 + 2 * PAIRS.iter().position(|p| p.0 == (s, d)).unwrap()
}

#[test]
fn pair_table_takes_each_end_from_its_own_host() {
    let run = net_matrix(&NAMES);
    let t = tcp_table(&run);
    // One sender and one receiver column per pair.
    assert_eq!(t.head.len(), 1 + 12);
    for ((s, d), gbit) in PAIRS {
        let c = col(s, d);
        assert_eq!(t.head[c], format!("{} (sender)", NAMES[s]));
        assert_eq!(t.head[c + 1], format!("{} (receiver)", NAMES[d]));
        // Repetitions: the median of the valid ones (12, 10, 30 -> 12), not the mean.
        let got =
            |row: &str, i: usize| t.row(row).unwrap_or_else(|| panic!("row {row}"))[i].clone();
        assert_eq!(got("Throughput (Gbit/s)", c + 1), report::fmt::num(gbit));
        assert_eq!(got("Throughput (Gbit/s)", c), report::fmt::num(gbit + 0.5));
        let n = if (s, d) == (0, 1) { "3" } else { "1" };
        assert_eq!(got("Repetitions (n)", c), n);
        // The sender's CPU2 from the sender host, the receiver's CPU4 from the receiver.
        assert_eq!(got("CPU2 %sys", c), format!("{:.2}", cpu(s, 2).sys_pct));
        assert_eq!(got("CPU2 %usr", c), format!("{:.2}", cpu(s, 2).usr_pct));
        assert_eq!(got("CPU2 %soft", c), format!("{:.2}", cpu(s, 2).soft_pct));
        assert_eq!(got("CPU2 %idle", c), format!("{:.2}", cpu(s, 2).idle_pct));
        assert_eq!(got("CPU4 %sys", c + 1), format!("{:.2}", cpu(d, 4).sys_pct));
        assert_eq!(got("CPU4 %irq", c + 1), format!("{:.2}", cpu(d, 4).irq_pct));
        // Not pinned there, but busy: each column gives its own host's line (the seed's
        // CPU4, which took the softirq work without being pinned).
        assert_eq!(got("CPU4 %sys", c), format!("{:.2}", cpu(s, 4).sys_pct));
        assert_eq!(got("CPU2 %sys", c + 1), format!("{:.2}", cpu(d, 2).sys_pct));
        assert_eq!(got("Pinned CPUs", c), "2");
        assert_eq!(got("Pinned CPUs", c + 1), "4");
        // The all-CPU line is an unpinned end's only.
        assert!(t.row("all CPUs %sys").is_none());
        // %CPU used: the end's CPU rows added, its pinned CPU and the one busy beside
        // it; then the pinned CPU alone. CPU/tput over the first, each end over its own
        // throughput.
        assert_eq!(got("%CPU used", c), format!("{:.2}", end_used(s, 2)));
        assert_eq!(got("%CPU used", c + 1), format!("{:.2}", end_used(d, 4)));
        assert_eq!(
            got("%CPU used, pinned CPUs only", c),
            format!("{:.2}", busy(s, 2))
        );
        assert_eq!(
            got("%CPU used, pinned CPUs only", c + 1),
            format!("{:.2}", busy(d, 4))
        );
        assert_eq!(
            got("CPU/tput (%CPU used per Gbit/s)", c),
            format!("{:.3}", end_used(s, 2) / (gbit + 0.5))
        );
        assert_eq!(
            got("CPU/tput (%CPU used per Gbit/s)", c + 1),
            format!("{:.3}", end_used(d, 4) / gbit)
        );
        // Power only on alpha (200 W, 150 W idle); n/a elsewhere, never 0.
        for (i, h) in [(c, s), (c + 1, d)] {
            if h == 0 {
                assert_eq!(got("Power (W)", i), "200");
                assert_eq!(got("Idle power (W)", i), "150");
                let tput = if i == c { gbit + 0.5 } else { gbit };
                assert_eq!(
                    got("W/tput (W above idle per Gbit/s)", i),
                    format!("{:.3}", 50.0 / tput)
                );
                assert_eq!(got("W per Gbit/s", i), format!("{:.3}", 200.0 / tput));
            } else {
                for row in [
                    "Power (W)",
                    "Idle power (W)",
                    "W/tput (W above idle per Gbit/s)",
                    "W per Gbit/s",
                ] {
                    assert_eq!(got(row, i), "n/a", "{row} of {}", NAMES[h]);
                }
            }
        }
    }
    // The reason said once, for both hosts without power.
    let with_reason: Vec<&String> = t.notes.iter().filter(|n| n.contains(NO_POWER)).collect();
    assert_eq!(with_reason.len(), 1, "{:?}", t.notes);
    assert!(with_reason[0].contains("beta, gamma"), "{}", with_reason[0]);
    assert!(t
        .notes
        .iter()
        .any(|n| n.contains("1 of 4 repetitions left out")));
    let h = hosts_view::pairs_html(std::slice::from_ref(&run), "net");
    assert_eq!(
        h.matches(NO_POWER).count(),
        2,
        "once per table: tcp and udp60"
    );
}

/// The system under test of a pair's result is its receiver, whatever order the hosts'
/// summaries are stored in: its %CPU used is the receiver host's, never the sender's.
#[test]
fn a_pairs_system_under_test_is_its_receiver() {
    let run = net_matrix(&NAMES);
    for r in run.results.iter().filter(|r| r.status == Status::Ok) {
        let recv = r.params["receiver_host"].as_str().unwrap();
        let h = NAMES.iter().position(|n| *n == recv).unwrap();
        let ts = report::derive::sut_summary(&run, r).unwrap();
        assert_eq!(ts.host, recv);
        let cpu = report::derive::sut_cpu(&run, r).unwrap();
        assert!(
            (cpu.pct - (busy(h, 2) + busy(h, 4))).abs() < 1e-9,
            "{} for receiver {recv}",
            cpu.pct
        );
    }
}

/// Test hosts in namespaces of one machine share its kernel, whose counters hold the
/// sender's work too: a pair's system under test is then its receiver's own process,
/// not the whole host (a walk-through read 145% beside the receiver's 47%). A matrix's
/// hosts send in other pairs; only this pair's ends count.
#[test]
fn a_receiver_on_its_senders_kernel_counts_its_own_process() {
    let mut run = net_matrix(&NAMES);
    for h in run.hosts.iter_mut() {
        let others: Vec<&str> = NAMES.iter().copied().filter(|n| *n != h.host).collect();
        h.facts.insert(
            model::KERNEL_SHARED_WITH.into(),
            Fact::known(others.join(", ")),
        );
    }
    for r in run.results.iter_mut() {
        for t in r.telemetry_summary.iter_mut() {
            t.procs = vec![
                model::ProcCpu {
                    role: "receiver".into(),
                    pid: 7,
                    usr_pct: 10.0,
                    sys_pct: 37.5,
                    with_descendants: true,
                },
                model::ProcCpu {
                    role: model::LOADGEN_PROCESS.into(),
                    pid: 8,
                    usr_pct: 1.0,
                    sys_pct: 2.0,
                    with_descendants: false,
                },
            ];
        }
    }
    let ok = run.results.iter().filter(|r| r.status == Status::Ok);
    for r in ok {
        let cpu = report::derive::sut_cpu(&run, r).unwrap();
        assert_eq!(cpu.pct, 47.5, "{cpu:?}");
        assert_eq!(
            cpu.basis,
            report::derive::CpuBasis::ServerProcesses(vec!["receiver".into()])
        );
    }
    // On kernels of their own, each receiver's whole host (the iperf3 study's figure).
    for h in run.hosts.iter_mut() {
        h.facts.remove(model::KERNEL_SHARED_WITH);
    }
    let r = run.results.iter().find(|r| r.status == Status::Ok).unwrap();
    let cpu = report::derive::sut_cpu(&run, r).unwrap();
    assert_eq!(cpu.basis, report::derive::CpuBasis::Host);
}

/// Acceptance N, 1: a receiver host whose tick-counted busy reads below what the test's
/// own ends on it ran (their threads' run time) has no %CPU used, and says why; a sender
/// on another host is no part of it, and a host figure above its ends' stands.
#[test]
fn a_host_counted_below_its_own_ends_has_no_cpu_figure() {
    let mut run = net_matrix(&NAMES);
    let i = run
        .results
        .iter()
        .position(|r| r.status == Status::Ok)
        .unwrap();
    let counted = report::derive::sut_cpu(&run, &run.results[i]).unwrap().pct;
    let with = |run: &mut model::RunRecord, rx: f64, tx: f64| {
        let r = &mut run.results[i];
        r.metrics
            .retain(|m| m.name != "receiver_cpu_pct" && m.name != "sender_cpu_pct");
        r.metrics.push(Metric::new("receiver_cpu_pct", rx, "%"));
        r.metrics.push(Metric::new("sender_cpu_pct", tx, "%"));
    };
    // Its receiver ran more than the host was counted busy: no figure, and why.
    with(&mut run, counted * 1.5 + 1.0, 0.0);
    let e = report::derive::sut_cpu(&run, &run.results[i]).unwrap_err();
    assert!(
        e.contains("this kernel samples CPU time at its ticks") && e.contains("the receiver"),
        "{e}"
    );
    // Its sender, on another host, ran a lot: not this host's work.
    with(&mut run, counted * 0.5, counted * 10.0 + 10.0);
    let got = report::derive::sut_cpu(&run, &run.results[i]).unwrap();
    assert!((got.pct - counted).abs() < 1e-9);
}

#[test]
fn udp_rows_and_small_throughput_in_mbit() {
    let run = net_matrix(&NAMES);
    let t = hosts_view::pair_tables(std::slice::from_ref(&run))
        .into_iter()
        .find(|t| t.caption.starts_with("udp60"))
        .unwrap();
    assert_eq!(t.row("Throughput (Mbit/s)").unwrap()[1..3], ["669", "169"]);
    assert_eq!(t.row("Packets/s").unwrap()[1..3], ["360,000", "350,000"]);
    assert_eq!(t.row("Loss %").unwrap()[2], "2.500");
    assert_eq!(
        t.row("CPU/tput (%CPU used per Mbit/s)").unwrap()[2],
        format!("{:.3}", end_used(1, 4) / 169.0)
    );
}

#[test]
fn sender_by_receiver_matrix() {
    let run = net_matrix(&NAMES);
    let m = hosts_view::matrices(std::slice::from_ref(&run));
    let tcp = m.iter().find(|t| t.caption.starts_with("tcp")).unwrap();
    assert_eq!(tcp.head, ["sender \\ receiver", "alpha", "beta", "gamma"]);
    let cell = |s: &str, d: &str| {
        let c = tcp.head.iter().position(|h| h == d).unwrap();
        tcp.row(s).unwrap()[c].clone()
    };
    for ((s, d), gbit) in PAIRS {
        assert_eq!(cell(NAMES[s], NAMES[d]), report::fmt::num(gbit));
    }
    for n in NAMES {
        assert_eq!(cell(n, n), "—");
    }
    // udp60 measured one pair only: the others are "not measured", not 0.
    let udp = m.iter().find(|t| t.caption.starts_with("udp60")).unwrap();
    assert_eq!(udp.rows, [["alpha", "169"]]);
}

/// Hosts named with numbers read in their numbers' order, in the matrix's rows and
/// columns and the pair table's columns, whatever order the pairs ran in (`rbh10` came
/// before `rbh2`, as it was measured first).
#[test]
fn matrix_and_pairs_in_natural_order_of_the_hosts() {
    let names = ["rbh10", "rbh2", "rbh1"];
    let run = net_matrix(&names);
    let m = hosts_view::matrices(std::slice::from_ref(&run));
    let tcp = m.iter().find(|t| t.caption.starts_with("tcp")).unwrap();
    assert_eq!(tcp.head, ["sender \\ receiver", "rbh1", "rbh2", "rbh10"]);
    let rows: Vec<&str> = tcp.rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(rows, ["rbh1", "rbh2", "rbh10"]);
    // rbh1 -> rbh2 is PAIRS' (2, 1): 15.5 Gbit/s.
    assert_eq!(tcp.row("rbh1").unwrap()[2], report::fmt::num(15.5));
    let t = tcp_table(&run);
    let senders: Vec<&str> = t
        .head
        .iter()
        .filter_map(|h| h.strip_suffix(" (sender)"))
        .collect();
    assert_eq!(senders, ["rbh1", "rbh1", "rbh2", "rbh2", "rbh10", "rbh10"]);
    let receivers: Vec<&str> = t
        .head
        .iter()
        .filter_map(|h| h.strip_suffix(" (receiver)"))
        .collect();
    assert_eq!(
        receivers,
        ["rbh2", "rbh10", "rbh1", "rbh10", "rbh1", "rbh2"]
    );
}

#[test]
fn natural_order_counts_numbers() {
    use rackbench_report::derive::natural_cmp;
    let mut v = ["rbh10", "rbh2", "rbh1", "a", "rbh02", "1472B", "60B", "rbh"];
    v.sort_by(|a, b| natural_cmp(a, b));
    assert_eq!(
        v,
        ["60B", "1472B", "a", "rbh", "rbh1", "rbh02", "rbh2", "rbh10"]
    );
}

#[test]
fn per_host_figures_and_hosts_of_the_run() {
    let mut run = net_matrix(&NAMES);
    // beta bridges others' traffic through a port of its own: the port's bytes are no
    // traffic of beta's (a controller bridging test hosts read theirs as its own).
    for r in &mut run.results {
        for t in r.telemetry_summary.iter_mut().filter(|t| t.host == "beta") {
            let mut port = t.nics[1].clone();
            port.name = "rbv1".into();
            port.rx_bytes_per_s = 7e9;
            t.nics.push(port);
        }
    }
    let beta_disclosure = run.hosts.iter_mut().find(|h| h.host == "beta").unwrap();
    beta_disclosure
        .facts
        .insert(model::NIC_ENSLAVED.into(), Fact::known("rbv1 in rbbr0"));
    let tables = hosts_view::host_tables(std::slice::from_ref(&run));
    // One per sweep point: six tcp pairs and the udp60 one.
    assert_eq!(tables.len(), 7);
    let t = tables
        .iter()
        .find(|t| t.caption.contains("sender_host=beta receiver_host=gamma"))
        .unwrap();
    let beta = t.row("beta").unwrap();
    assert_eq!(beta[1], "sender");
    assert_eq!(beta[2], format!("{:.2}", busy(1, -1)));
    // eth0 only (lo and the bridge's port left out): beta receives 2 Gbit/s and sends 4.
    assert_eq!(beta[3..5], ["2.00 Gbit/s", "4.00 Gbit/s"]);
    assert_eq!(beta[5], "n/a");
    assert_eq!(t.row("gamma").unwrap()[1], "receiver");
    // Sampled during the point but not one of its ends.
    assert_eq!(t.row("alpha").unwrap()[1], "idle");
    assert_eq!(t.row("alpha").unwrap()[5], "200");
    let hosts = hosts_view::hosts_tables(std::slice::from_ref(&run));
    assert_eq!(hosts.len(), 1);
    assert_eq!(
        hosts[0].row("beta").unwrap(),
        [
            "beta",
            "sender+receiver",
            "10.0.0.2",
            "1.500",
            "0.1.0 (binary sha256 0123456789abcdef), pid 101"
        ]
    );
    assert_eq!(hosts[0].row("alpha").unwrap()[3], "-");
}

/// A host's power over repetitions read from different sources (its BMC silent in two
/// of three, RAPL taken instead) is the first source's alone: the median of 200 W of the
/// whole server and 140 W of the CPU package read 140, said to be the whole server's.
#[test]
fn a_hosts_power_is_of_one_source_over_its_repetitions() {
    let mut run = net_matrix(&NAMES);
    for r in run
        .results
        .iter_mut()
        .filter(|r| r.test == "tcp" && r.repetition > 0 && r.params["sender_host"] == "alpha")
    {
        let t = r
            .telemetry_summary
            .iter_mut()
            .find(|t| t.host == "alpha")
            .unwrap();
        t.power = vec![PowerSummary {
            source: "rapl".into(),
            zone: "package-0".into(),
            mean_watts: 140.0,
            max_watts: 150.0,
            whole_system: false,
            modelled: false,
        }];
    }
    let tables = hosts_view::host_tables(std::slice::from_ref(&run));
    let t = tables
        .iter()
        .find(|t| {
            t.caption.starts_with("net tcp")
                && t.caption.contains("sender_host=alpha receiver_host=beta")
        })
        .unwrap();
    assert_eq!(t.row("alpha").unwrap()[5], "200", "{:?}", t.row("alpha"));
}

/// Hosts on one kernel (the test hosts' namespaces) read the same CPU figures, the
/// kernel's: every table of their CPU says so, naming them; hosts on kernels of their
/// own have no such note.
#[test]
fn hosts_on_one_kernel_are_said_to_share_its_cpu_figures() {
    let mut run = net_matrix(&NAMES);
    let note = |notes: &[String]| notes.iter().find(|n| n.starts_with("One kernel:")).cloned();
    assert_eq!(note(&tcp_table(&run).notes), None);
    assert!(hosts_view::host_tables(std::slice::from_ref(&run))
        .iter()
        .all(|t| note(&t.notes).is_none()));
    for (i, d) in run.hosts.iter_mut().enumerate().take(2) {
        let other = NAMES[1 - i];
        d.facts
            .insert(model::KERNEL_SHARED_WITH.into(), Fact::known(other));
    }
    let said = note(&tcp_table(&run).notes).expect("the pair table's note");
    assert!(
        said.starts_with(&format!("One kernel: {}, {} (", NAMES[0], NAMES[1])),
        "{said}"
    );
    assert!(!said.contains(NAMES[2]), "{said}");
    let tables = hosts_view::host_tables(std::slice::from_ref(&run));
    assert!(!tables.is_empty());
    for t in tables {
        assert!(note(&t.notes).is_some(), "{}: {:?}", t.caption, t.notes);
    }
    let cpu = report::cpu_table::cpu_tables(std::slice::from_ref(&run));
    let of = |h: &str| {
        cpu.iter()
            .filter(|t| t.table.caption.contains(&format!(" on {h} by test")))
            .map(|t| note(&t.table.notes).is_some())
            .collect::<Vec<_>>()
    };
    assert!(!of(NAMES[0]).is_empty() && of(NAMES[0]).iter().all(|n| *n));
    assert!(!of(NAMES[2]).is_empty() && of(NAMES[2]).iter().all(|n| !*n));
}

/// A point with no valid repetition (a run stopped in its first, a test that failed)
/// has its hosts' figures up to where it stopped, in a table said to be partial (`show`
/// and the report had none: a failure could not be read host by host); one whose results
/// have no telemetry has no table (`show` printed its headings over no row).
#[test]
fn a_point_with_no_valid_repetition_has_a_partial_per_host_table() {
    let mut run = net_matrix(&NAMES);
    let all = hosts_view::host_tables(std::slice::from_ref(&run));
    for r in run.results.iter_mut().filter(|r| r.test == "udp60") {
        r.status = Status::Interrupted;
    }
    let tables = hosts_view::host_tables(std::slice::from_ref(&run));
    assert_eq!(tables.len(), all.len());
    let partial: Vec<_> = tables
        .iter()
        .filter(|t| t.caption.ends_with("(partial: the test did not complete)"))
        .collect();
    assert!(!partial.is_empty());
    for t in &partial {
        assert!(t.caption.contains("udp60"), "{}", t.caption);
        let before = all
            .iter()
            .find(|a| t.caption.starts_with(&a.caption))
            .unwrap();
        // The same figures: the partial results are these repetitions.
        assert_eq!(t.rows, before.rows);
        assert!(
            t.notes.iter().any(|n| n.contains("did not complete")),
            "{:?}",
            t.notes
        );
    }
    // Repetitions that ran to their end but are invalid did complete: their table says
    // it is of invalid ones, not that the test stopped.
    for r in run.results.iter_mut().filter(|r| r.test == "udp60") {
        r.status = Status::Ok;
        r.flags.push(model::Flag::invalid(
            "client_bound",
            "the sender was the limit",
        ));
    }
    let tables = hosts_view::host_tables(std::slice::from_ref(&run));
    let invalid: Vec<_> = tables
        .iter()
        .filter(|t| t.caption.contains("udp60"))
        .collect();
    assert!(!invalid.is_empty());
    for t in invalid {
        assert!(
            t.caption.ends_with("(of invalid repetitions)"),
            "{}",
            t.caption
        );
        assert!(
            !t.notes.iter().any(|n| n.contains("did not complete")),
            "{:?}",
            t.notes
        );
    }
    for r in run.results.iter_mut().filter(|r| r.test == "udp60") {
        r.telemetry_summary.clear();
    }
    let tables = hosts_view::host_tables(std::slice::from_ref(&run));
    assert!(tables.len() < all.len());
    assert!(tables.iter().all(|t| !t.rows.is_empty()));
}

/// A long reason is said in full under the first table that has it; the next tables
/// keep its hosts and subject and point up to it (a host's 400 characters on why it has
/// no power source followed every sweep point's table).
#[test]
fn a_long_reason_is_said_once_in_full() {
    let mut run = net_matrix(&NAMES);
    let long = format!("{NO_POWER}; {}", "and much more on why, ".repeat(8));
    for t in run
        .results
        .iter_mut()
        .flat_map(|r| &mut r.telemetry_summary)
    {
        if t.power_missing.is_some() {
            t.power_missing = Some(long.clone());
        }
    }
    let tables = hosts_view::host_tables(std::slice::from_ref(&run));
    assert!(tables.len() > 2);
    let full = |t: &hosts_view::HostTable| t.notes.iter().filter(|n| n.contains(&long)).count();
    assert_eq!(full(&tables[0]), 1, "{:?}", tables[0].notes);
    for t in &tables[1..] {
        assert_eq!(full(t), 0, "{:?}", t.notes);
        // The table's own legend and counts are said in full under each.
        assert!(
            t.notes
                .iter()
                .any(|n| n.starts_with("CPU, NIC and power: median of")),
            "{:?}",
            t.notes
        );
        let up = format!("power: as under \"{}\" above.", tables[0].caption);
        assert!(
            t.notes
                .iter()
                .any(|n| n.starts_with("n/a on ") && n.ends_with(&up)),
            "{:?}",
            t.notes
        );
    }
}

#[test]
fn kv_generators_each_in_their_own_row() {
    let mut run = net_matrix(&NAMES);
    let mut r = run.results[0].clone();
    r.workload = "kv".into();
    r.test = "get".into();
    r.headline = "ops_per_s".into();
    r.params = BTreeMap::from([
        ("sut_host".to_string(), json!("alpha")),
        ("loadgen_hosts".to_string(), json!("beta,gamma")),
    ]);
    r.metrics = vec![
        Metric::new("ops_per_s", 3000.0, "ops/s"),
        Metric::new("ops_per_s", 1000.0, "ops/s").label("host", "beta"),
        Metric::new("ops_per_s", 2000.0, "ops/s").label("host", "gamma"),
        Metric::new("start_skew_max_s", 0.0025, "s"),
        Metric::new("window_overlap_s", 9.5, "s"),
    ];
    // A host that only watched: a few kbit/s, in its own unit.
    let gamma = r.telemetry_summary.iter_mut().find(|t| t.host == "gamma");
    for eth0 in gamma.unwrap().nics.iter_mut().filter(|n| n.name == "eth0") {
        eth0.rx_bytes_per_s = 1030.0;
    }
    run.results = vec![r];
    let t = &hosts_view::host_tables(std::slice::from_ref(&run))[0];
    assert_eq!(t.head.last().unwrap(), "ops_per_s per generator (ops/s)");
    assert_eq!(
        t.row("alpha").unwrap()[3..5],
        ["1.00 Gbit/s", "2.00 Gbit/s"]
    );
    assert_eq!(
        t.row("gamma").unwrap()[3..5],
        ["8.24 kbit/s", "6.00 Gbit/s"]
    );
    assert_eq!(t.row("alpha").unwrap()[1], "sut");
    assert_eq!(t.row("alpha").unwrap()[6], "-");
    assert_eq!(t.row("beta").unwrap()[1], "loadgen");
    assert_eq!(t.row("beta").unwrap()[6], "1,000");
    assert_eq!(t.row("gamma").unwrap()[6], "2,000");
    assert!(t
        .notes
        .iter()
        .any(|n| n.contains("start skew 2.5 ms") && n.contains("overlap 9.500 s")));
    // Below what the clocks tell, it says so rather than digits of noise.
    run.results[0].metrics[3].value = 0.00004;
    let t = &hosts_view::host_tables(std::slice::from_ref(&run))[0];
    assert!(
        t.notes
            .iter()
            .any(|n| n.contains("start skew under 0.1 ms")),
        "{:?}",
        t.notes
    );
}

/// A generator lost mid-test: its figure kept from the test's last checkpoint says in its
/// cell that it is in no total (the column read as adding up to twice the headline), and
/// its samples kept up to then are said kept, not "none stored".
#[test]
fn a_lost_generators_row_says_what_was_kept_of_it() {
    let mut run = net_matrix(&NAMES);
    let mut r = run.results[0].clone();
    r.workload = "kv".into();
    r.test = "get".into();
    r.headline = "ops_per_s".into();
    r.status = Status::Failed;
    r.params = BTreeMap::from([
        ("sut_host".to_string(), json!("alpha")),
        ("loadgen_hosts".to_string(), json!("beta,gamma")),
    ]);
    r.metrics = vec![
        Metric::new("ops_per_s", 1000.0, "ops/s"),
        Metric::new("ops_per_s", 1000.0, "ops/s").label("host", "beta"),
        Metric::new("ops_per_s", 990.0, "ops/s")
            .label("host", "gamma")
            .label("until_checkpoint_s", "5.0"),
    ];
    r.telemetry_summary.retain(|t| t.host != "gamma");
    r.missing.push(model::MissingMetric {
        name: "telemetry.gamma".into(),
        reason: "host gamma lost".into(),
    });
    r.telemetry = vec![model::TelemetrySample {
        host: "gamma".into(),
        t_s: 1.0,
        interval_s: 1.0,
        ..Default::default()
    }];
    run.results = vec![r];
    let t = &hosts_view::host_tables(std::slice::from_ref(&run))[0];
    assert_eq!(t.row("beta").unwrap()[6], "1,000");
    assert_eq!(t.row("gamma").unwrap()[6], "990 (until 5.0 s, in no total)");
    assert!(
        t.notes.iter().any(|n| n.contains("gamma")
            && n.contains("its samples up to where its telemetry stopped coming back")),
        "{:?}",
        t.notes
    );
}

/// Acceptance pass B, 8: each generator's figure was its own median over the
/// repetitions (beta's of {22,391, 25,070, 31,850}, gamma's of {32,493, 25,466,
/// 23,118}), so the column added up to none of the headline figures (mean 53,463). The
/// generators' figures are means now, as the headline is, and add up to it; the
/// controller, sampled during the point, is named `controller` as in the Hosts table,
/// not `idle`.
#[test]
fn generators_add_up_to_the_headline_mean() {
    let mut run = net_matrix(&["alpha", "beta", "gamma", "local"]);
    run.hosts[3].role = "controller".into();
    run.hosts[3]
        .facts
        .insert("os.hostname".into(), Fact::known("vm"));
    let template = run.results[0].clone();
    let reps = [
        (22_391.0, 32_493.0),
        (25_070.0, 25_466.0),
        (31_850.0, 23_118.0),
    ];
    run.results = reps
        .iter()
        .enumerate()
        .map(|(i, (b, g))| {
            let mut r = template.clone();
            r.workload = "kv".into();
            r.test = "get".into();
            r.headline = "ops_per_s".into();
            r.step = i as u32;
            r.repetition = i as u32;
            r.params = BTreeMap::from([
                ("sut_host".to_string(), json!("alpha")),
                ("loadgen_hosts".to_string(), json!("beta,gamma")),
            ]);
            r.metrics = vec![
                Metric::new("ops_per_s", b + g, "ops/s"),
                Metric::new("ops_per_s", *b, "ops/s").label("host", "beta"),
                Metric::new("ops_per_s", *g, "ops/s").label("host", "gamma"),
            ];
            r
        })
        .collect();
    let t = &hosts_view::host_tables(std::slice::from_ref(&run))[0];
    let cell = |h: &str| {
        t.row(h).unwrap()[6]
            .replace(',', "")
            .parse::<f64>()
            .unwrap()
    };
    let mean = reps.iter().map(|(b, g)| b + g).sum::<f64>() / 3.0;
    assert!(
        (cell("beta") + cell("gamma") - mean).abs() <= 1.0,
        "{} + {} against the headline mean {mean}",
        cell("beta"),
        cell("gamma")
    );
    assert_eq!(t.row("beta").unwrap()[6], report::fmt::num(26_437.0));
    assert!(
        t.notes
            .iter()
            .any(|n| n.contains("per generator: mean of 3 valid repetition(s)")),
        "{:?}",
        t.notes
    );
    // The controller by its hostname, as the CSV export names it, in both tables.
    assert_eq!(t.row("vm").unwrap()[1], "controller");
    let hosts = hosts_view::hosts_tables(std::slice::from_ref(&run));
    assert_eq!(hosts[0].row("vm").unwrap()[1], "controller");
    // And by that one name in the same report's other tables and notes, never "local"
    // beside "vm" (acceptance pass G, 13).
    let tv = report::views::telemetry_views(std::slice::from_ref(&run));
    let titles: Vec<&str> = tv.iter().map(|v| v.title.as_str()).collect();
    assert!(
        titles.iter().any(|t| t.ends_with("telemetry on vm")),
        "{titles:?}"
    );
    assert!(!titles.iter().any(|t| t.contains("local")), "{titles:?}");
    for n in t.notes.iter().filter(|n| n.starts_with("n/a on ")) {
        assert!(!n.contains("local"), "{n}");
    }
    let m = report::markdown(std::slice::from_ref(&run), None);
    assert!(!m.contains("on local") && !m.contains("local:"), "{m}");
    let h = report::html(std::slice::from_ref(&run), None);
    assert!(!h.contains(">local") && !h.contains("on local"), "{h}");
}

/// This machine as a net pair's end is named by its hostname in the pair tables and the
/// matrix too, as in every other table: their heads said `local (sender)` beside `vm`.
#[test]
fn pair_tables_name_this_machine_by_its_hostname() {
    let mut run = net_matrix(&["alpha", "beta", "local"]);
    run.hosts[2]
        .facts
        .insert("os.hostname".into(), Fact::known("vm"));
    let tables: Vec<hosts_view::HostTable> = hosts_view::pair_tables(std::slice::from_ref(&run))
        .into_iter()
        .chain(hosts_view::matrices(std::slice::from_ref(&run)))
        .collect();
    let mut named = 0;
    for t in &tables {
        let words: Vec<&String> = t
            .head
            .iter()
            .chain(t.rows.iter().map(|r| &r[0]))
            .chain(t.groups.iter().map(|g| &g.0))
            .collect();
        assert!(words.iter().all(|w| !w.contains("local")), "{words:?}");
        named += words.iter().filter(|w| w.contains("vm")).count();
    }
    // The tcp table's two pairs with it and the matrix's row and column, at least.
    assert!(named >= 4, "{named} in {tables:?}");
}

#[test]
fn host_names_are_escaped_in_html_and_inert_in_markdown() {
    let names = ["alpha", "<script>x", "[b](javascript:x)"];
    let run = net_matrix(&names);
    let runs = std::slice::from_ref(&run);
    let h = report::html(runs, None);
    assert!(h.contains(r#"<h3 id="pairs">Pairs</h3>"#));
    assert!(h.contains(r#"<h2 id="hosts">Hosts</h2>"#));
    assert!(h.contains("&lt;script&gt;x (sender)"));
    assert!(!h.contains("<script"), "unescaped host name in the HTML");
    let m = report::markdown(runs, None);
    assert!(m.contains("### Pairs") && m.contains("## Hosts"));
    assert!(!m.contains("<script"));
    // These views' own text (the rest of the export escapes with `tco::md_cell` alone).
    let m = hosts_view::pairs_markdown(runs, "net") + &hosts_view::hosts_markdown(runs);
    assert!(m.contains("&lt;script&gt;x"));
    assert!(!m.contains("<script"));
    assert!(!m.contains("[b](javascript"), "a live link in the Markdown");
    assert!(m.contains("\\[b\\](javascript:x)"));
}

#[test]
fn single_host_runs_have_no_hosts_views() {
    let runs = common::two_platforms();
    assert!(!hosts_view::has_hosts(&runs));
    assert_eq!(hosts_view::hosts_html(&runs), "");
    assert_eq!(hosts_view::hosts_markdown(&runs), "");
    assert!(hosts_view::pair_tables(&runs).is_empty());
    assert!(hosts_view::host_tables(&runs).is_empty());
    let h = report::html(&runs, None);
    assert!(!h.contains(r#"id="hosts""#) && !h.contains(r#"id="pairs""#));
    assert!(!report::markdown(&runs, None).contains("## Hosts"));
}

/// Modelled power (`--power-model`) is marked so in the pair table, its idle watts too,
/// as the efficiency tables mark both (acceptance P, 7: the idle read as measured).
#[test]
fn pair_table_marks_modelled_idle_power_as_modelled() {
    let mut run = net_matrix(&NAMES);
    let modelled = |p: &mut PowerSummary| {
        p.source = "model".into();
        p.modelled = true;
    };
    run.idle_power[0].power.iter_mut().for_each(modelled);
    for r in &mut run.results {
        for t in &mut r.telemetry_summary {
            t.power.iter_mut().for_each(modelled);
        }
    }
    let t = tcp_table(&run);
    let row = |name: &str| t.row(name).unwrap_or_else(|| panic!("row {name}"));
    let c = col(0, 1);
    assert_eq!(row("Power (W)")[c], "200 (modelled)");
    assert_eq!(row("Idle power (W)")[c], "150 (modelled)");
}

/// Power under load below the idle power measured before it (a meter's idle read in
/// another state) gives the pair table no negative "W above idle": its W/tput is absent
/// and a note says why, as in the efficiency tables; the power, the idle power and W per
/// Gbit/s, which need no subtraction, are still shown.
#[test]
fn pair_table_gives_no_watts_above_idle_below_idle() {
    let mut run = net_matrix(&NAMES);
    // alpha reads 200 W under load; idle 250 W.
    for p in &mut run.idle_power[0].power {
        p.mean_watts = 250.0;
    }
    let t = tcp_table(&run);
    let why = "W/tput: absent where the power under load read below the idle power measured before it: one of the two readings is wrong.";
    assert!(t.notes.iter().any(|n| n == why), "{:?}", t.notes);
    let mut alpha_cols = 0;
    for ((s, d), gbit) in PAIRS {
        let c = col(s, d);
        let got =
            |row: &str, i: usize| t.row(row).unwrap_or_else(|| panic!("row {row}"))[i].clone();
        for (i, h) in [(c, s), (c + 1, d)] {
            if h != 0 {
                continue;
            }
            alpha_cols += 1;
            assert_eq!(got("W/tput (W above idle per Gbit/s)", i), "n/a");
            assert_eq!(got("Power (W)", i), "200");
            assert_eq!(got("Idle power (W)", i), "250");
            let tput = if i == c { gbit + 0.5 } else { gbit };
            assert_eq!(got("W per Gbit/s", i), format!("{:.3}", 200.0 / tput));
        }
    }
    assert_eq!(
        alpha_cols, 4,
        "alpha sends in two pairs and receives in two"
    );
    // Within a watt of idle (whole watts of a meter's ticks) is 0 W above it, as the
    // efficiency tables read it: no note.
    let mut near = run.clone();
    for p in &mut near.idle_power[0].power {
        p.mean_watts = 200.5;
    }
    let t = tcp_table(&near);
    assert!(t.notes.iter().all(|n| n != why), "{:?}", t.notes);
    let c = col(0, 1);
    assert_eq!(
        t.row("W/tput (W above idle per Gbit/s)").unwrap()[c],
        "0.000"
    );
    // Said in the HTML and the Markdown, escaped.
    let runs = std::slice::from_ref(&run);
    assert!(hosts_view::pairs_html(runs, "net").contains(why));
    assert!(hosts_view::pairs_markdown(runs, "net").contains(why));
    // At or above idle the figure is there and no such note is.
    let t = tcp_table(&net_matrix(&NAMES));
    assert!(!t.notes.iter().any(|n| n == why), "{:?}", t.notes);
}

/// The seed's tcp-tput table (arm receiving from netdev19, iperf3 pinned to CPU2, the
/// NIC's interrupts steered to CPU4): the receiver's CPU4 ran the softirq work
/// (`CPU4 %soft 98.16`) without being pinned to it. The pair table shows it beside the
/// pinned CPU, with each end's %CPU used over its pinned CPUs and over those plus the
/// busy ones, and names the idle CPUs it leaves out; a host with no CPU4 line reads `—`.
#[test]
fn a_receivers_softirq_cpu_is_shown_though_not_pinned() {
    let line = |c: i32, usr: f64, sys: f64, irq: f64, soft: f64| CpuUtil {
        cpu: c,
        usr_pct: usr,
        nice_pct: 0.0,
        sys_pct: sys,
        iowait_pct: 0.0,
        irq_pct: irq,
        soft_pct: soft,
        steal_pct: 0.0,
        idle_pct: 100.0 - usr - sys - irq - soft,
    };
    let mut run = net_matrix(&NAMES);
    run.results.retain(|r| r.test == "tcp");
    for r in &mut run.results {
        r.params.insert("sender_cpus".into(), json!([2]));
        r.params.insert("receiver_cpus".into(), json!([2]));
        for ts in &mut r.telemetry_summary {
            ts.cpus = if ts.host == "beta" {
                // The seed's arm host as receiver: CPU2 copies, CPU4 takes the softirq.
                vec![
                    line(-1, 0.2, 20.0, 0.0, 20.0),
                    line(0, 0.1, 0.2, 0.0, 0.0),
                    line(1, 0.0, 0.3, 0.0, 0.0),
                    line(2, 0.80, 98.02, 0.0, 0.0),
                    line(3, 0.0, 0.1, 0.0, 0.1),
                    line(4, 0.0, 0.02, 0.0, 98.16),
                ]
            } else {
                // Four CPUs, no CPU4: the sender's softirq stays on its own CPU2.
                vec![
                    line(-1, 0.2, 20.0, 0.0, 5.0),
                    line(0, 0.1, 0.2, 0.0, 0.0),
                    line(1, 0.1, 0.2, 0.0, 0.0),
                    line(2, 0.61, 94.72, 0.0, 0.0),
                    line(3, 0.0, 0.4, 0.0, 0.0),
                ]
            };
        }
    }
    let t = tcp_table(&{
        // tcp_table wants the udp60 table too: keep one udp60 result.
        let mut r = run.clone();
        let mut u = r.results[0].clone();
        u.test = "udp60".into();
        r.results.push(u);
        r
    });
    let c = col(0, 1);
    let got = |row: &str, i: usize| t.row(row).unwrap_or_else(|| panic!("row {row}"))[i].clone();
    // alpha -> beta: beta's CPU4 %soft, though beta's end was pinned to CPU2 only.
    assert_eq!(got("Pinned CPUs", c + 1), "2");
    assert_eq!(got("CPU4 %soft", c + 1), "98.16");
    assert_eq!(got("CPU4 %sys", c + 1), "0.02");
    assert_eq!(got("CPU2 %sys", c + 1), "98.02");
    // alpha has no CPU4: not applicable, not 0.
    assert_eq!(got("CPU4 %soft", c), "—");
    assert_eq!(got("CPU2 %sys", c), "94.72");
    // %CPU used: the pinned CPU with the busy CPU4 (the seed's 197.01 is CPU2 + CPU4
    // of this end), then the pinned CPU alone; CPU/tput over the first (the seed's 7.35
    // at its 26.8 Gbit/s; it read half that, over CPU2 alone).
    assert_eq!(got("%CPU used", c + 1), "197.00");
    assert_eq!(got("%CPU used, pinned CPUs only", c + 1), "98.82");
    let tput: f64 = got("Throughput (Gbit/s)", c + 1).parse().unwrap();
    assert_eq!(
        got("CPU/tput (%CPU used per Gbit/s)", c + 1),
        format!("{:.3}", 197.0 / tput)
    );
    // The sender had nothing busy beyond its pinned CPU: the same figure.
    assert_eq!(got("%CPU used, pinned CPUs only", c), got("%CPU used", c));
    // Idle CPUs are left out, and named by host.
    for c in [0, 1, 3] {
        assert!(t.row(&format!("CPU{c} %usr")).is_none(), "CPU{c} shown");
    }
    let left = t
        .notes
        .iter()
        .find(|n| n.starts_with("CPUs left out"))
        .unwrap_or_else(|| panic!("{:?}", t.notes));
    assert!(left.contains("alpha: CPU 0-1,3 (3 of 4)"), "{left}");
    assert!(left.contains("beta: CPU 0-1,3 (3 of 5)"), "{left}");
    assert!(
        t.notes.iter().any(|n| n.starts_with("—: ")),
        "{:?}",
        t.notes
    );
    // Rendered: escaped, in the HTML's Pairs and the Markdown.
    let runs = std::slice::from_ref(&run);
    let h = hosts_view::pairs_html(runs, "net");
    assert!(h.contains("<td>CPU4 %soft</td>"), "{h}");
    assert!(h.contains("%CPU used, pinned CPUs only"));
    assert!(hosts_view::pairs_markdown(runs, "net").contains("| CPU4 %soft |"));
    // No steal anywhere: no %steal row, as the seed's table has none.
    assert!(t.row("CPU2 %steal").is_none());
    // On a VM whose hypervisor took 40% of beta's CPU2 (its %sys 98.02 now 58.02 and
    // 40 of steal, its idle unchanged): the row says so and the sender's reads 0; %CPU
    // used, 100 - %idle - %iowait, counts the steal as busy and reads as before.
    for r in &mut run.results {
        for ts in r
            .telemetry_summary
            .iter_mut()
            .filter(|ts| ts.host == "beta")
        {
            let cpu2 = ts.cpus.iter_mut().find(|l| l.cpu == 2).unwrap();
            cpu2.sys_pct = 58.02;
            cpu2.steal_pct = 40.0;
        }
    }
    let t = tcp_table(&{
        let mut r = run.clone();
        let mut u = r.results[0].clone();
        u.test = "udp60".into();
        r.results.push(u);
        r
    });
    let got = |row: &str, i: usize| t.row(row).unwrap_or_else(|| panic!("row {row}"))[i].clone();
    assert_eq!(got("CPU2 %steal", c + 1), "40.00");
    assert_eq!(got("CPU2 %sys", c + 1), "58.02");
    assert_eq!(got("CPU2 %steal", c), "0.00");
    assert_eq!(got("%CPU used", c + 1), "197.00");
    assert!(t.row("CPU4 %steal").is_none());
}

/// The per-CPU table of a net matrix: one per host, a column per test and pair named
/// `tcp alpha → beta`, the host's role in each (sender, receiver, idle), and each
/// column's figures from that host's own telemetry.
#[test]
fn per_cpu_table_per_host_names_pairs_and_roles() {
    let run = net_matrix(&NAMES);
    let tables = rackbench_report::cpu_table::cpu_tables(std::slice::from_ref(&run));
    assert_eq!(tables.len(), 3, "one per host");
    let beta = tables
        .iter()
        .find(|t| t.table.caption.contains("on beta by test"))
        .expect("beta's table");
    let col = |h: &str| {
        beta.table
            .head
            .iter()
            .position(|x| x == h)
            .unwrap_or_else(|| panic!("{h} in {:?}", beta.table.head))
    };
    let (sends, receives, idle) = (
        col("tcp beta → alpha"),
        col("tcp alpha → beta"),
        col("tcp alpha → gamma"),
    );
    let role = beta.table.row("Role").unwrap();
    assert_eq!(role[sends], "sender");
    assert_eq!(role[receives], "receiver");
    assert_eq!(role[idle], "idle");
    // beta's own CPU4 (host 1), whatever beta did in the test.
    for c in [sends, receives, idle] {
        assert_eq!(
            beta.table.row("CPU4 %soft").unwrap()[c],
            format!("{:.2}", cpu(1, 4).soft_pct)
        );
    }
    // Pair 0 -> 1 has a failed fourth repetition: the mean is of the three valid ones.
    assert_eq!(
        beta.table.row("%CPU used, all 2 CPUs").unwrap()[receives],
        format!("{:.2}", busy(1, 2) + busy(1, 4))
    );
}
