//! Fixture runs for the report tests: realistic kv sweeps (set/get x pipeline x
//! instances x repetitions) with real HdrHistograms, per-CPU telemetry summaries, power
//! of each kind and idle power, built the way the runner stores them.
#![allow(dead_code)]

use std::collections::BTreeMap;

use chrono::TimeZone;
use model::{
    CpuUtil, Fact, Flag, HistogramRecord, HostDisclosure, IdlePower, Metric, PowerSummary,
    ResultRecord, RunRecord, Status, TelemetrySummary,
};
use rand::{Rng, SeedableRng};

#[derive(Clone, Copy, PartialEq)]
pub enum Power {
    /// IPMI DCMI whole-server, measured.
    Ipmi(f64),
    /// A declared power model.
    Modelled(f64),
    /// RAPL package + DRAM only.
    Rapl(f64),
    /// No source (a VM).
    None,
}

pub struct Spec {
    pub label: &'static str,
    pub id: &'static str,
    pub cpu_model: &'static str,
    pub kernel: &'static str,
    /// Throughput multiplier of the platform.
    pub scale: f64,
    pub power: Power,
    pub reps: u32,
    pub instances: &'static [u32],
    pub seed: u64,
}

impl Default for Spec {
    fn default() -> Self {
        Spec {
            label: "x86-a",
            id: "20261120T230000-aaaaaa",
            cpu_model: "AMD EPYC 7B13",
            kernel: "6.1.0-27-cloud-amd64",
            scale: 1.0,
            power: Power::Ipmi(180.0),
            reps: 3,
            instances: &[1, 2, 4],
            seed: 1,
        }
    }
}

fn facts(spec: &Spec) -> BTreeMap<String, Fact> {
    let mut f = BTreeMap::new();
    for (k, v) in [
        ("cpu.model", spec.cpu_model),
        ("cpu.sockets", "1"),
        ("cpu.cores", "2"),
        ("cpu.threads", "2"),
        ("cpu.smt", "off"),
        ("cpu.governor", "performance"),
        ("mem.total_bytes", "8589934592"),
        ("os.kernel", spec.kernel),
        ("os.name", "Debian GNU/Linux 12 (bookworm)"),
        ("mitigation.spectre_v2", "Mitigation: Retpolines"),
        ("software.redis-server", "7.0.15"),
        ("nic.lo.driver", "loopback"),
    ] {
        f.insert(k.to_string(), Fact::known(v));
    }
    f.insert(
        "cpu.turbo".into(),
        Fact::unknown("no such file: /sys/devices/system/cpu/intel_pstate/no_turbo"),
    );
    f
}

/// A latency histogram of `n` operations around `mean_ns` with a long tail.
fn latency(rng: &mut rand::rngs::SmallRng, n: usize, mean_ns: f64) -> hdrhistogram::Histogram<u64> {
    let mut h = model::hist::new_latency_histogram();
    for _ in 0..n {
        let u: f64 = rng.gen_range(1e-9..1.0);
        // Mostly near the mean, an exponential tail, and rare stalls.
        let mut v = mean_ns * (0.6 + 0.4 * -u.ln());
        if rng.gen_range(0..1000) == 0 {
            v *= 8.0;
        }
        h.record(v.max(1.0) as u64).unwrap();
    }
    h
}

fn power_summaries(p: Power, load: f64) -> (Vec<PowerSummary>, Option<String>) {
    match p {
        Power::Ipmi(w) => (
            vec![
                PowerSummary { source: "ipmi-dcmi".into(), zone: "system".into(), mean_watts: w * (0.75 + 0.25 * load), max_watts: w * (0.8 + 0.25 * load), whole_system: true, modelled: false },
                PowerSummary { source: "rapl".into(), zone: "package-0".into(), mean_watts: 0.4 * w * load + 20.0, max_watts: 0.45 * w, whole_system: false, modelled: false },
            ],
            None,
        ),
        Power::Modelled(w) => (
            vec![PowerSummary { source: "model".into(), zone: "system".into(), mean_watts: w * (0.6 + 0.4 * load), max_watts: w, whole_system: true, modelled: true }],
            None,
        ),
        Power::Rapl(w) => (
            vec![
                PowerSummary { source: "rapl".into(), zone: "package-0".into(), mean_watts: w * (0.5 + 0.5 * load), max_watts: w, whole_system: false, modelled: false },
                PowerSummary { source: "rapl".into(), zone: "dram-0".into(), mean_watts: 6.0, max_watts: 7.0, whole_system: false, modelled: false },
            ],
            None,
        ),
        Power::None => (vec![], Some("no power source found: no RAPL (/sys/class/powercap absent), no IPMI, no hwmon power sensor".into())),
    }
}

/// A kv sweep run: tests set/get, pipeline 1 and 100, the given instance counts.
pub fn kv_run(spec: &Spec) -> RunRecord {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(spec.seed);
    let t0 = chrono::Utc
        .with_ymd_and_hms(2026, 11, 20, 23, 0, 0)
        .unwrap();
    let mut results = Vec::new();
    let mut step = 0;
    for &inst in spec.instances {
        for pipeline in [1u32, 100] {
            for test in ["set", "get"] {
                for rep in 0..spec.reps {
                    let base = if pipeline == 1 { 95_000.0 } else { 1_900_000.0 }
                        * if test == "get" { 1.02 } else { 1.0 };
                    let ops = base
                        * (inst as f64).powf(0.85)
                        * spec.scale
                        * (1.0 + rng.gen_range(-0.02..0.02));
                    let clients = 50.0 * inst as f64;
                    // Little's law: mean latency = outstanding / throughput.
                    let mean_ns = clients * pipeline as f64 / ops * 1e9;
                    let h = latency(&mut rng, 5_000, mean_ns);
                    let rec = HistogramRecord::from_histogram(test, "service", &h);
                    let load = (inst as f64 / 4.0).min(1.0);
                    let (power, power_missing) = power_summaries(spec.power, load);
                    let busy0 = 60.0 + 35.0 * load;
                    let cpus = vec![
                        CpuUtil {
                            cpu: -1,
                            usr_pct: 20.0,
                            nice_pct: 0.0,
                            sys_pct: 50.0,
                            iowait_pct: 0.0,
                            irq_pct: 0.5,
                            soft_pct: 8.0,
                            steal_pct: 0.5,
                            idle_pct: 21.0,
                        },
                        CpuUtil {
                            cpu: 0,
                            usr_pct: busy0 * 0.3,
                            nice_pct: 0.0,
                            sys_pct: busy0 * 0.55,
                            iowait_pct: 0.0,
                            irq_pct: 0.4,
                            soft_pct: busy0 * 0.12,
                            steal_pct: 0.3,
                            idle_pct: 100.0 - busy0 * 0.97 - 0.7,
                        },
                        CpuUtil {
                            cpu: 1,
                            usr_pct: 18.0,
                            nice_pct: 0.0,
                            sys_pct: 62.0,
                            iowait_pct: 0.2,
                            irq_pct: 0.6,
                            soft_pct: 9.0,
                            steal_pct: 0.7,
                            idle_pct: 9.5,
                        },
                    ];
                    let mut flags = Vec::new();
                    if pipeline == 1 && inst == *spec.instances.last().unwrap() {
                        flags.push(Flag::warning("client_bound", "load generator used 97% of its CPU: the figure may be the client's limit"));
                    }
                    results.push(ResultRecord {
                        workload: "kv".into(),
                        test: test.into(),
                        step,
                        repetition: rep,
                        params: BTreeMap::from([
                            ("instances".to_string(), serde_json::json!(inst)),
                            ("pipeline".to_string(), serde_json::json!(pipeline)),
                        ]),
                        settings: Default::default(),
                        headline: "ops_per_s".into(),
                        started_at: t0 + chrono::Duration::seconds(step as i64 * 3),
                        duration_s: 2.0,
                        metrics: vec![
                            Metric::new("ops_per_s", ops, "ops/s"),
                            Metric::new("latency_mean_ns", h.mean(), "ns"),
                            Metric::new("ops_per_s", ops / inst as f64, "ops/s")
                                .label("instance", 0),
                        ],
                        missing: vec![],
                        histograms: vec![rec],
                        telemetry: vec![],
                        telemetry_summary: vec![TelemetrySummary {
                            host: "local".into(),
                            samples: 4,
                            covered_s: Some(4.0),
                            whole_samples: true,
                            measured_t_s: Vec::new(),
                            cpus,
                            ctxt_per_s: Some(12000.0),
                            intr_per_s: Some(30000.0),
                            nics: vec![],
                            disks: vec![],
                            mean_freq_mhz: Some(2450.0),
                            procs: vec![],
                            power,
                            power_missing,
                            power_gaps: None,
                            part_present: Vec::new(),
                        }],
                        flags,
                        status: Status::Ok,
                        error: None,
                    });
                    step += 1;
                }
            }
        }
    }
    let idle_power = match spec.power {
        Power::Ipmi(w) => vec![IdlePower {
            host: "local".into(),
            duration_s: 10.0,
            power: vec![PowerSummary {
                source: "ipmi-dcmi".into(),
                zone: "system".into(),
                mean_watts: 0.55 * w,
                max_watts: 0.6 * w,
                whole_system: true,
                modelled: false,
            }],
            cpus: Vec::new(),
            flags: Vec::new(),
        }],
        _ => vec![],
    };
    RunRecord {
        format_version: model::RECORD_FORMAT_VERSION,
        id: spec.id.into(),
        label: Some(spec.label.into()),
        created_at: t0,
        finished_at: Some(t0 + chrono::Duration::seconds(step as i64 * 3)),
        rackbench_version: "0.1.0".into(),
        command: format!(
            "rackbench run kv --instances 1,2,4 -P 1,100 -t set,get --repeat {} --label {}",
            spec.reps, spec.label
        ),
        plan: serde_json::json!({"workload": "kv", "clients": 50, "keyspace": 10000, "value_size": 10}),
        hosts: vec![HostDisclosure {
            host: "local".into(),
            role: "sut+loadgen".into(),
            facts: facts(spec),
        }],
        idle_power,
        results,
        status: Status::Ok,
        error: None,
    }
}

/// Add to `run` a copy of each of its pipeline 100 results at `pipeline` (a point more
/// in its sweep, same figures).
pub fn add_pipeline_copy(run: &mut RunRecord, pipeline: u64) {
    let copies: Vec<model::ResultRecord> = run
        .results
        .iter()
        .filter(|r| r.params.get("pipeline") == Some(&serde_json::json!(100)))
        .cloned()
        .map(|mut r| {
            r.params
                .insert("pipeline".into(), serde_json::json!(pipeline));
            r
        })
        .collect();
    run.results.extend(copies);
}

/// Two platforms, as the Redis study: A measured whole-server, B 1.3x faster.
pub fn two_platforms() -> Vec<RunRecord> {
    let a = kv_run(&Spec::default());
    let b = kv_run(&Spec {
        label: "arm-b",
        id: "20261120T231500-bbbbbb",
        cpu_model: "Ampere Altra Q80-30",
        scale: 1.3,
        power: Power::Ipmi(150.0),
        seed: 2,
        ..Spec::default()
    });
    vec![a, b]
}
