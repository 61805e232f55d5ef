//! Test data: a run with every field of every type populated, with awkward values (commas,
//! quotes, newlines, unicode, nanosecond timestamps, floats that do not print short).
//! Shared by the store's tests, the CLI's end-to-end tests and the schema test, so all
//! of them exercise the same complete record. Not part of the stable API.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, TimeZone, Utc};
use model::{
    CpuUtil, DiskRate, Fact, Flag, HistogramRecord, HostDisclosure, IdlePower, Metric,
    MissingMetric, NicRate, PowerReading, PowerSummary, ProcCpu, ResultRecord, RunRecord, Status,
    TelemetrySample, TelemetrySummary,
};

/// A fixed instant with a nanosecond part, plus `secs` seconds.
pub fn t0(secs: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 20, 21, 7, 3)
        .single()
        .expect("valid date")
        + Duration::nanoseconds(123_456_789)
        + Duration::seconds(secs)
}

fn cpu(n: i32, busy: f64) -> CpuUtil {
    CpuUtil {
        cpu: n,
        usr_pct: busy * 0.6,
        nice_pct: 0.0,
        sys_pct: busy * 0.3,
        iowait_pct: 0.1,
        irq_pct: busy * 0.04,
        soft_pct: busy * 0.06,
        steal_pct: 0.0,
        idle_pct: 100.0 - busy - 0.1,
    }
}

fn nic() -> NicRate {
    NicRate {
        name: "eth0".into(),
        rx_bytes_per_s: 1.25e9 / 3.0,
        tx_bytes_per_s: 987_654.321,
        rx_packets_per_s: 81_234.5,
        tx_packets_per_s: 80_001.0,
        rx_drops_per_s: 0.5,
        tx_drops_per_s: 0.0,
    }
}

fn disk() -> DiskRate {
    DiskRate {
        name: "nvme0n1".into(),
        reads_per_s: 12.0,
        writes_per_s: 340.25,
        read_bytes_per_s: 49_152.0,
        write_bytes_per_s: 1_392_640.0,
        util_pct: 3.3,
    }
}

fn proc_cpu(role: &str, pid: u32) -> ProcCpu {
    ProcCpu {
        role: role.into(),
        pid,
        usr_pct: 71.4,
        sys_pct: 28.6,
        with_descendants: false,
    }
}

fn power_reading() -> Vec<PowerReading> {
    vec![
        PowerReading {
            source: "rapl".into(),
            zone: "package-0".into(),
            watts: 87.125,
            whole_system: false,
            modelled: false,
            instantaneous: false,
            late_s: None,
        },
        PowerReading {
            source: "ipmi-dcmi".into(),
            zone: "system".into(),
            watts: 212.0,
            whole_system: true,
            modelled: false,
            instantaneous: true,
            late_s: None,
        },
    ]
}

fn power_summary(scale: f64) -> Vec<PowerSummary> {
    vec![
        PowerSummary {
            source: "rapl".into(),
            zone: "package-0".into(),
            mean_watts: 85.0 * scale + 0.1,
            max_watts: 95.5 * scale,
            whole_system: false,
            modelled: false,
        },
        PowerSummary {
            source: "ipmi-dcmi".into(),
            zone: "system".into(),
            mean_watts: 210.0 * scale + 1.0 / 3.0,
            max_watts: 230.0 * scale,
            whole_system: true,
            modelled: false,
        },
    ]
}

fn sample(host: &str, t_s: f64, warmup: bool) -> TelemetrySample {
    TelemetrySample {
        host: host.into(),
        t_s,
        interval_s: 1.000_213,
        warmup,
        cpus: vec![cpu(-1, 61.7), cpu(0, 99.9), cpu(1, 23.5)],
        ctxt_per_s: Some(123_456.7),
        intr_per_s: Some(54_321.0),
        nics: vec![nic()],
        disks: vec![disk()],
        freq_mhz: vec![2_999.998, 3_100.0],
        procs: vec![proc_cpu("loadgen", 4242), proc_cpu("server:0", 4243)],
        power: power_reading(),
        power_failed: Vec::new(),
    }
}

fn summary(host: &str, with_power: bool) -> TelemetrySummary {
    TelemetrySummary {
        host: host.into(),
        samples: 3,
        covered_s: Some(3.0),
        whole_samples: true,
        measured_t_s: Vec::new(),
        cpus: vec![cpu(-1, 60.1), cpu(0, 98.0), cpu(1, 22.2)],
        ctxt_per_s: Some(120_000.5),
        intr_per_s: Some(50_000.25),
        nics: vec![nic()],
        disks: vec![disk()],
        mean_freq_mhz: Some(3_050.5),
        procs: vec![proc_cpu("loadgen", 4242)],
        power: if with_power {
            power_summary(1.0)
        } else {
            Vec::new()
        },
        power_missing: if with_power {
            None
        } else {
            Some("no power source found: no RAPL, IPMI, hwmon".into())
        },
        power_gaps: None,
        part_present: Vec::new(),
    }
}

fn histogram(name: &str, kind: &str, base_ns: u64) -> HistogramRecord {
    let mut h = model::hist::new_latency_histogram();
    for i in 0..200u64 {
        h.record(base_ns + i * i * 97).expect("in range");
    }
    h.record(base_ns * 40).expect("in range");
    HistogramRecord::from_histogram(name, kind, &h)
}

/// One result with every field populated. `step` varies the figures.
pub fn rich_result(
    step: u32,
    test: &str,
    pipeline: u32,
    started_at: DateTime<Utc>,
) -> ResultRecord {
    let mut params = BTreeMap::new();
    params.insert("instances".to_string(), serde_json::json!(2));
    params.insert("pipeline".to_string(), serde_json::json!(pipeline));
    params.insert("clients".to_string(), serde_json::json!(50));
    params.insert("value_size".to_string(), serde_json::json!(1024.5));
    params.insert("keep_alive".to_string(), serde_json::json!(true));
    params.insert(
        "note".to_string(),
        serde_json::json!("a \"quoted\", comma; semi"),
    );
    params.insert(
        "endpoints".to_string(),
        serde_json::json!(["127.0.0.1:6379", "[::1]:6380"]),
    );
    let ops = 100_000.0 * f64::from(pipeline) + 0.1 + f64::from(step) / 7.0;
    ResultRecord {
        workload: "kv".into(),
        test: test.into(),
        step,
        repetition: step % 2,
        params,
        settings: Default::default(),
        headline: "ops_per_s".into(),
        started_at,
        duration_s: 10.000_000_1 + f64::from(step),
        metrics: vec![
            Metric::new("ops_per_s", ops, "ops/s"),
            Metric::new("ops_per_s", ops / 2.0, "ops/s").label("instance", 0),
            Metric::new("ops_per_s", ops / 2.0, "ops/s").label("instance", 1),
            Metric::new("latency_p50_ns", 180_223.0, "ns"),
            Metric::new("latency_p99_ns", 1_234_567.0, "ns"),
            Metric::new("latency_p999_ns", 4_567_890.0, "ns"),
            Metric::new("errors", 3.0, "count"),
            Metric::new("weird", 0.1 + 0.2, "x, \"y\"\nz").label("k,1", "v\"2\n"),
            Metric::new("tiny", 5e-324, "1"),
            Metric::new("huge", 1.797_693_134_862_315_7e308, "1"),
        ],
        missing: vec![MissingMetric {
            name: "cache_hit_ratio".into(),
            reason: "server INFO not readable: NOAUTH".into(),
        }],
        histograms: vec![
            histogram(test, "service", 150_000 + u64::from(step) * 1_000),
            histogram(test, "corrected", 170_000),
        ],
        telemetry: vec![
            sample("local", 1.0, true),
            sample("local", 2.0, false),
            sample("loadgen-1 ünïcode", 2.0, false),
        ],
        telemetry_summary: vec![summary("local", true), summary("loadgen-1 ünïcode", false)],
        flags: vec![
            Flag::warning(
                "client_bound",
                "load generator at 97% CPU: figures may be client-bound",
            ),
            Flag::invalid("errors", "3 error replies, \"ERR\" x3"),
        ],
        status: Status::Failed,
        error: Some("server:1 exited with status 1\nlast log line: Oops".into()),
    }
}

/// A run with every field populated and `n_results` results (pipeline 1, 16, 32...).
pub fn rich_run(
    id: &str,
    label: Option<&str>,
    created_at: DateTime<Utc>,
    n_results: u32,
) -> RunRecord {
    let mut facts = BTreeMap::new();
    facts.insert(
        "cpu.model".to_string(),
        Fact::known("Ampere(R) Altra(R) Q80-30"),
    );
    facts.insert("cpu.threads".to_string(), Fact::known("80"));
    facts.insert("cpu.sockets".to_string(), Fact::known("1"));
    facts.insert("cpu.governor".to_string(), Fact::known("performance"));
    facts.insert("os.kernel".to_string(), Fact::known("6.1.0-18-arm64"));
    facts.insert("os.hostname".to_string(), Fact::known("altra-01"));
    facts.insert("software.redis-server".to_string(), Fact::known("7.0.15"));
    facts.insert(
        "mitigation.spectre_v2".to_string(),
        Fact::unknown("not readable: permission denied"),
    );
    let mut lg_facts = BTreeMap::new();
    lg_facts.insert(
        "cpu.model".to_string(),
        Fact::known("AMD EPYC 7763 64-Core Processor"),
    );
    lg_facts.insert(
        "weird".to_string(),
        Fact {
            value: None,
            missing: None,
        },
    );
    RunRecord {
        format_version: model::RECORD_FORMAT_VERSION,
        id: id.into(),
        label: label.map(str::to_string),
        created_at,
        finished_at: Some(created_at + Duration::nanoseconds(61_000_000_007)),
        rackbench_version: "0.1.0".into(),
        command: "rackbench run kv --instances 2 -P 1,16 -t set --db 'x y.sqlite'".into(),
        plan: serde_json::json!({
            "workload": "kv",
            "sweep": {"pipeline": [1, 16], "instances": 2},
            "duration_s": 10.5,
            "dsn": "postgres://bob:***@db/tpcc",
            "nested": [{"a": null, "b": [true, false]}]
        }),
        hosts: vec![
            HostDisclosure {
                host: "local".into(),
                role: "sut+loadgen".into(),
                facts,
            },
            HostDisclosure {
                host: "loadgen-1 ünïcode".into(),
                role: "loadgen".into(),
                facts: lg_facts,
            },
        ],
        idle_power: vec![IdlePower {
            host: "local".into(),
            duration_s: 5.0,
            power: power_summary(0.5),
            cpus: vec![cpu(-1, 30.5), cpu(0, 60.0), cpu(1, 1.0)],
            flags: vec![Flag::warning(
                "idle_not_idle",
                "host local: busy while idle",
            )],
        }],
        results: (0..n_results)
            .map(|i| {
                let pipeline = if i == 0 { 1 } else { 16 * i };
                rich_result(
                    i,
                    if i % 2 == 0 { "set" } else { "get" },
                    pipeline,
                    created_at + Duration::seconds(2 + 11 * i64::from(i)),
                )
            })
            .collect(),
        status: Status::Interrupted,
        error: Some("interrupted by Ctrl-C after step 2".into()),
    }
}
