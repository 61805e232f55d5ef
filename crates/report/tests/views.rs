//! The workload-specific views (crypto, mem, net, capacity) on runs built here with the
//! metric names and labels the workloads store: each view appears with its numbers when
//! its data is there, and is absent when it is not.

mod common;

use std::collections::BTreeMap;

use common::{kv_run, Spec};
use model::{Metric, MissingMetric, ResultRecord, RunRecord};
use rackbench_report as report;

/// A run of `wl` with these (test, params, metrics) results, on the fixture's hosts.
fn run(id: &str, wl: &str, results: Vec<(&str, serde_json::Value, Vec<Metric>)>) -> RunRecord {
    let mut r = kv_run(&Spec {
        id: Box::leak(id.to_string().into_boxed_str()),
        reps: 1,
        instances: &[1],
        ..Spec::default()
    });
    let template = r.results[0].clone();
    r.label = Some(id.to_string());
    r.results = results
        .into_iter()
        .enumerate()
        .map(|(i, (test, params, metrics))| {
            let params: BTreeMap<String, serde_json::Value> =
                serde_json::from_value(params).unwrap();
            ResultRecord {
                workload: wl.into(),
                test: test.into(),
                step: i as u32,
                params,
                headline: metrics[0].name.clone(),
                metrics,
                histograms: vec![],
                telemetry: vec![],
                telemetry_summary: vec![],
                ..template.clone()
            }
        })
        .collect();
    r
}

fn crypto_run() -> RunRecord {
    let mut res = Vec::new();
    for (bits, t, s, v) in [
        (1024, 1, 8227.0, 135777.0),
        (1024, 2, 9781.0, 161012.0),
        (2048, 1, 2061.0, 49974.0),
        (2048, 2, 2607.0, 56706.0),
    ] {
        res.push((
            match bits {
                1024 => "rsa1024",
                _ => "rsa2048",
            },
            serde_json::json!({ "threads": t }),
            vec![
                Metric::new("signs_per_s", s, "ops/s"),
                Metric::new("verifies_per_s", v, "ops/s"),
                Metric::new("signs_per_s", s, "ops/s")
                    .label("bits", bits)
                    .label("threads", t),
            ],
        ));
    }
    run("crypto-a", "crypto", res)
}

fn mem_run() -> RunRecord {
    let mut lat = Vec::new();
    for e in 12..=26 {
        let size = 1u64 << e;
        let ns = if e <= 15 {
            1.7
        } else if e <= 20 {
            5.5
        } else if e <= 23 {
            36.0
        } else {
            95.0
        };
        lat.push(Metric::new("latency_ns", ns, "ns").label("size_bytes", size));
    }
    let mut m = vec![Metric::new("l1_latency_ns", 1.74, "ns")];
    m.extend(lat);
    m.extend([
        Metric::new("l1_latency_cycles", 5.3, "cycles").label("freq_source", "cpuinfo"),
        Metric::new("l1_plateau_from_bytes", 4096.0, "B"),
        Metric::new("l1_plateau_to_bytes", 32768.0, "B"),
        Metric::new("l1_cache_bytes", 49152.0, "B"),
        Metric::new("l2_latency_ns", 5.5, "ns"),
        Metric::new("l2_plateau_from_bytes", 65536.0, "B"),
        Metric::new("l2_plateau_to_bytes", 1048576.0, "B"),
        Metric::new("l2_cache_bytes", 2097152.0, "B"),
    ]);
    let bw = vec![
        Metric::new("bandwidth_gb_per_s", 20.9, "GB/s")
            .label("kind", "copy")
            .label("threads", 1),
        Metric::new("bandwidth_gb_per_s", 25.87, "GB/s")
            .label("kind", "copy")
            .label("threads", 2),
        Metric::new("bandwidth_gb_per_s", 1.76, "GB/s")
            .label("kind", "triad")
            .label("threads", 1),
    ];
    let mut r = run(
        "mem-a",
        "mem",
        vec![
            ("latency", serde_json::json!({}), m),
            ("bandwidth", serde_json::json!({}), bw),
        ],
    );
    r.results[0].missing.push(MissingMetric {
        name: "ram_latency_ns".into(),
        reason: "no plateau beyond the last cache: raise --max-size".into(),
    });
    r
}

fn net_run() -> RunRecord {
    let t = |g: f64, extra: Vec<Metric>| {
        let mut m = vec![
            Metric::new("throughput_gbit_per_s", g, "Gbit/s"),
            Metric::new("throughput_gbit_per_s", g * 1.01, "Gbit/s").label("end", "sender"),
            Metric::new("sender_cpu_pct", 61.5, "%"),
            Metric::new("receiver_cpu_pct", 72.3, "%"),
            Metric::new("cpu_pct_per_gbit", 61.5 / g, "%/(Gbit/s)").label("end", "sender"),
        ];
        m.extend(extra);
        m
    };
    run(
        "net-a",
        "net",
        vec![
            ("tcp", serde_json::json!({}), t(15.57, vec![])),
            (
                "udp1472",
                serde_json::json!({}),
                t(
                    1.72,
                    vec![
                        Metric::new("packets_per_s", 146000.0, "packets/s"),
                        Metric::new("loss_pct", 0.125, "%"),
                        Metric::new("jitter_ms", 0.042, "ms"),
                    ],
                ),
            ),
        ],
    )
}

fn step(phase: &str, key: &str, i: &str, demanded: f64, reply: f64, p99_ns: f64) -> Vec<Metric> {
    let l = |m: Metric| m.label("phase", phase).label(key, i);
    vec![
        l(Metric::new("demanded_rate_per_s", demanded, "req/s")),
        l(Metric::new("reply_rate_per_s", reply, "req/s")),
        l(Metric::new("latency_p99_ns", p99_ns, "ns").label("kind", "service")),
    ]
}

fn capacity_run(with_power: bool) -> RunRecord {
    let mut ramp = Vec::new();
    for (i, (d, r, p)) in [
        (2000.0, 1987.0, 7.0e6),
        (4000.0, 4002.0, 5.3e6),
        (6000.0, 5100.0, 40.0e6),
    ]
    .iter()
    .enumerate()
    {
        ramp.extend(step("ramp", "step", &i.to_string(), *d, *r, *p));
        if with_power {
            ramp.push(
                Metric::new("cpu_busy_pct", d / 100.0, "%")
                    .label("phase", "ramp")
                    .label("step", i),
            );
        }
    }
    ramp.push(Metric::new("saturation_rate_per_s", 6000.0, "req/s"));
    // Its probe at 64,000 missed, as the engine stores it: the answer is measured, no
    // lower bound.
    let mut search = vec![
        Metric::new("max_rate_meeting_slo_per_s", 44000.0, "req/s"),
        Metric::new("lowest_failing_rate_per_s", 64000.0, "req/s"),
    ];
    for (i, (d, lat)) in [(32000.0, 18.9e6), (64000.0, 31.4e6), (44000.0, 13.5e6)]
        .iter()
        .enumerate()
    {
        search.extend(step("search", "step", &i.to_string(), *d, *d, *lat));
        search.push(
            Metric::new("latency_at_objective_ns", *lat, "ns")
                .label("phase", "search")
                .label("step", i)
                .label("slo", "p99<20ms"),
        );
    }
    search.push(Metric::new("objective_percentile", 99.0, "%"));
    search.push(Metric::new("objective_bound_ns", 20e6, "ns"));
    let mut levels = Vec::new();
    for (lv, rate, w) in [("100%", 44000.0, 150.0), ("50%", 22000.0, 110.0)] {
        levels.push(
            Metric::new("target_rate_per_s", rate, "req/s")
                .label("phase", "levels")
                .label("level", lv),
        );
        levels.extend(step("levels", "level", lv, rate, rate * 0.99, 9e6));
        // A level the generator could not keep shows it (the table had no Late %).
        let late = if lv == "100%" { 25.7 } else { 0.0 };
        levels.push(
            Metric::new("late_pct", late, "%")
                .label("phase", "levels")
                .label("level", lv),
        );
        if with_power {
            levels.push(
                Metric::new("cpu_busy_pct", w / 2.0, "%")
                    .label("phase", "levels")
                    .label("level", lv),
            );
            // The server processes' CPU, summed, beside the host's (the generator's
            // process is left out).
            for (role, pct) in [("server:0", w / 5.0), ("server:1", 10.0), ("loadgen", 99.0)] {
                levels.push(
                    Metric::new("process_cpu_pct", pct, "%")
                        .label("phase", "levels")
                        .label("level", lv)
                        .label("role", role),
                );
            }
            levels.push(
                Metric::new("power_w", w, "W")
                    .label("phase", "levels")
                    .label("level", lv),
            );
            levels.push(
                Metric::new("reply_rate_per_w", rate * 0.99 / w, "req/s/W")
                    .label("phase", "levels")
                    .label("level", lv),
            );
        }
    }
    run(
        "kv-cap",
        "kv",
        vec![
            ("ramp", serde_json::json!({}), ramp),
            ("search", serde_json::json!({}), search),
            ("levels", serde_json::json!({}), levels),
        ],
    )
}

/// Acceptance M, 3: a ramp whose headline is the reply rate of a saturated step says its
/// capacity (the last step it sustained) beside it, and what its headline is.
#[test]
fn a_ramp_says_its_capacity_beside_its_headline() {
    let mut r = capacity_run(false);
    let ramp = r.results.iter_mut().find(|x| x.test == "ramp").unwrap();
    ramp.metrics.extend([
        Metric::new("last_sustained_rate_per_s", 4000.0, "req/s"),
        Metric::new("max_reply_rate_per_s", 5100.0, "req/s"),
    ]);
    ramp.headline = "max_reply_rate_per_s".into();
    let h = report::html(std::slice::from_ref(&r), None);
    assert!(
        h.contains(
            "Saturation at a demanded rate of 6,000 req/s. The last step it sustained \
             demanded 4,000 req/s: its capacity, which load levels take as 100%. Its \
             headline, 5,100 req/s, is the highest rate of replies that were not errors of \
             any step, those past saturation included."
        ),
        "{h}"
    );
}

#[test]
fn crypto_rsa_table_and_chart() {
    let r = crypto_run();
    let h = report::html(std::slice::from_ref(&r), None);
    assert!(h.contains("RSA operations per second by key size"));
    assert!(h.contains("RSA signs/s vs threads, per key size"));
    for n in ["8,227", "9,781", "161,012", "56,706", "2 thr: verifies/s"] {
        assert!(h.contains(n), "missing {n}");
    }
    assert!(h.contains("RSA-1024") && h.contains("RSA-2048"));
    let m = report::markdown(std::slice::from_ref(&r), None);
    assert!(m.contains("| 1024 | 8,227 | 135,777 | 9,781 | 161,012 | 2 threads |"));
    // A warned point is marked on the chart (it was plain: every chart against a swept
    // parameter marks them).
    let chart = |r: &RunRecord| -> String {
        report::views::views(std::slice::from_ref(r), "crypto")
            .into_iter()
            .flat_map(|v| v.figures)
            .find(|f| f.0.contains("RSA signs/s vs threads"))
            .expect("the RSA chart")
            .1
    };
    let mut clean = r.clone();
    for res in &mut clean.results {
        res.flags.clear();
    }
    assert!(!chart(&clean).contains('⚠'));
    let mut warned = clean.clone();
    warned.results[0]
        .flags
        .push(model::Flag::warning("other_load", "busy"));
    let svg = chart(&warned);
    assert!(svg.contains('⚠') && svg.contains("other_load"), "{svg}");
    // A point whose repetitions vary is marked as the other charts mark it (the RSA
    // chart took its results' own flags only, never the point's `high_variation`).
    let mut unsteady = clean.clone();
    let mut again = unsteady.results[0].clone();
    again.repetition += 1;
    for m in &mut again.metrics {
        m.value *= 1.5;
    }
    unsteady.results.push(again);
    let svg = chart(&unsteady);
    assert!(svg.contains("high_variation"), "{svg}");
    // Absent elsewhere.
    let h = report::html(&[mem_run()], None);
    assert!(!h.contains("RSA operations per second"));
}

/// crypto's rows are unlike measurements (thread counts, key sizes): the summary, which
/// refuses their geometric mean, took the arithmetic mean of their powers (150 W and
/// 196 W made a "173 W" of no configuration; acceptance pass C, 5). No mean of power
/// either now, with the reason under the table; each row keeps its own.
#[test]
fn crypto_rows_have_no_mean_of_power_either() {
    let mut r = crypto_run();
    let ts = kv_run(&Spec::default()).results[0]
        .telemetry_summary
        .clone();
    for res in &mut r.results {
        res.telemetry_summary = ts.clone();
    }
    let s = report::derive::summary(std::slice::from_ref(&r));
    assert!(
        s.rows.iter().all(|row| row.power[0].is_ok()),
        "rows have power"
    );
    assert_eq!(s.power_mean, vec![None]);
    let why = "no mean of power: crypto's tests (key sizes, operations, thread counts) are \
               different measurements, shown one by one, each at a power of its own";
    assert_eq!(s.power_mean_note.as_deref(), Some(why));
    let m = report::markdown(std::slice::from_ref(&r), None);
    assert!(m.contains(why), "{m}");
    assert!(!m.contains("Arithmetic mean"), "{m}");
    // kv's suite of tests keeps its mean of power.
    let kv = kv_run(&Spec::default());
    let s = report::derive::summary(std::slice::from_ref(&kv));
    assert!(s.power_mean[0].is_some() && s.power_mean_note.is_none());
}

/// Each latency result of a run has its own view, named by its repetition (or sweep
/// point): only the first was shown, without a word (acceptance pass J, 2).
#[test]
fn every_mem_latency_result_has_its_own_view() {
    let mut r = mem_run();
    let mut second = r.results[0].clone();
    second.repetition = 1;
    for m in &mut second.metrics {
        if m.name == "l1_latency_ns" {
            m.value = 1.61;
        }
    }
    r.results.push(second);
    let m = report::markdown(std::slice::from_ref(&r), None);
    assert!(m.contains("rep 1: memory latency by level"), "{m}");
    assert!(m.contains("rep 2: memory latency by level"), "{m}");
    assert!(
        m.contains("| L1 | 1.74 |") && m.contains("| L1 | 1.61 |"),
        "{m}"
    );
    // One result: no name of its own.
    let one = report::markdown(&[mem_run()], None);
    assert!(!one.contains("rep 1"), "{one}");
}

#[test]
fn mem_latency_curve_plateaus_and_bandwidth() {
    let r = mem_run();
    let h = report::html(std::slice::from_ref(&r), None);
    assert!(h.contains("memory latency vs working set"));
    // Plateaus as segments with labels, cache sizes as vertical lines with KiB/MiB labels.
    assert_eq!(h.matches(r#"class="plateau""#).count(), 2);
    assert_eq!(h.matches(r#"class="cache""#).count(), 2);
    assert!(h.contains("L1 1.7 ns"));
    assert!(h.contains("L1 48 KiB") && h.contains("L2 2 MiB"));
    assert!(h.contains("4 KiB") && h.contains("64 MiB"));
    // The level table: latency, cycles, plateau range, cache size; RAM's reason.
    assert!(h.contains("<td>L1</td><td class=\"n\">1.74</td><td class=\"n\">5.3</td><td class=\"n\">4 KiB - 32 KiB</td><td class=\"n\">48 KiB</td>"));
    assert!(h.contains("raise --max-size"));
    // Bandwidth bars by kind and threads.
    assert!(h.contains("memory bandwidth by kernel and threads"));
    assert!(h.contains("25.87") && h.contains("2 thread(s)"));
    let m = report::markdown(std::slice::from_ref(&r), None);
    assert!(
        m.contains("| L2 | 5.50 | - | 64 KiB - 1 MiB | 2 MiB |"),
        "{m}"
    );
    assert!(m.contains("| copy | 20.90 | 25.87 |"));
    // Acceptance A, finding 13: the measured curve, point by point, in the Markdown too.
    assert!(
        m.contains("Latency by working-set size")
            && m.contains("| 4 KiB | 1.70 | - |")
            && m.contains("| 64 MiB | 95.00 | - |"),
        "{m}"
    );
    // Without the latency test, no curve.
    let mut r2 = r.clone();
    r2.results.retain(|x| x.test != "latency");
    let h = report::html(&[r2], None);
    assert!(!h.contains("memory latency vs working set"));
    assert!(h.contains("memory bandwidth by kernel and threads"));
}

/// Acceptance pass F, F20: a loopback's UDP jitter of 71.6 ns read "0.0000716" in a
/// "Jitter ms" column; jitter is in us (as the RTT beside it), to 3 significant digits.
#[test]
fn net_jitter_is_in_microseconds() {
    let mut r = net_run();
    for m in r.results[1].metrics.iter_mut() {
        if m.name == "jitter_ms" {
            m.value = 0.0000716;
        }
    }
    let m = report::markdown(std::slice::from_ref(&r), None);
    assert!(m.contains("| Jitter us |"), "{m}");
    assert!(!m.contains("Jitter ms") && !m.contains("0.0000716"), "{m}");
    assert!(m.contains("| 0.0716 |"), "{m}");
    let h = report::html(std::slice::from_ref(&r), None);
    assert!(h.contains("Jitter us") && h.contains(">0.0716<"));
}

/// Acceptance pass F, F20: the crypto table's peak said "at 1 threads".
#[test]
fn crypto_peak_at_one_thread_is_singular() {
    let mut r = crypto_run();
    // Two threads slower than one: the peak is at 1 thread.
    for res in r.results.iter_mut() {
        if res.params["threads"] == 2 {
            for m in res.metrics.iter_mut().filter(|m| m.name == "signs_per_s") {
                m.value = 10.0;
            }
        }
    }
    let m = report::markdown(std::slice::from_ref(&r), None);
    assert!(m.contains(" | 1 thread |"), "{m}");
    assert!(!m.contains("1 threads"), "{m}");
}

#[test]
fn net_throughput_bars_and_cpu_table() {
    let r = net_run();
    let h = report::html(std::slice::from_ref(&r), None);
    assert!(h.contains("network throughput per test"));
    assert!(h.contains("Receiver %CPU per Gbit/s"));
    for n in ["15.57", "61.5", "72.3", "146,000", "0.125"] {
        assert!(h.contains(n), "missing {n}");
    }
    let m = report::markdown(std::slice::from_ref(&r), None);
    // Jitter in us: 0.042 ms is 42.0 us (3 significant digits).
    assert!(m.contains("| 146,000 | 0.125 | 42.0 |"), "{m}");
    assert!(
        m.contains("| tcp | 15.57 Gbit/s | 61.5 | 72.3 | 3.95 | - | - | - | - |"),
        "{m}"
    );
    assert!(!report::html(&[crypto_run()], None).contains("network throughput per test"));
    // Paced (--rate): the rate asked for stands beside what was moved, and only then.
    assert!(!m.contains("Target rate"), "{m}");
    let mut paced = r.clone();
    paced.results[0]
        .metrics
        .push(Metric::new("target_gbit_per_s", 16.0, "Gbit/s"));
    let m = report::markdown(std::slice::from_ref(&paced), None);
    assert!(
        m.contains("| Test and parameters | Target rate | Throughput |"),
        "{m}"
    );
    assert!(
        m.contains("| tcp | 16.00 Gbit/s | 15.57 Gbit/s | 61.5 |"),
        "{m}"
    );
    assert!(m.contains("| udp1472 | - | 1.72 Gbit/s |"), "{m}");
}

/// %CPU per Gbit/s over repetitions is their mean CPU over their mean throughput, as the
/// columns beside it read: 61.5% sending at 15.73 and at 29.72 Gbit/s is 2.71 per
/// Gbit/s (the mean of each one's ratio read 2.99).
#[test]
fn net_cpu_per_gbit_over_repetitions_is_a_ratio_of_means() {
    let mut r = net_run();
    let mut second = r.results[0].clone();
    second.repetition = 1;
    let g = 29.43;
    second.metrics = vec![
        Metric::new("throughput_gbit_per_s", g, "Gbit/s"),
        Metric::new("throughput_gbit_per_s", g * 1.01, "Gbit/s").label("end", "sender"),
        Metric::new("sender_cpu_pct", 61.5, "%"),
        Metric::new("receiver_cpu_pct", 72.3, "%"),
        Metric::new("cpu_pct_per_gbit", 61.5 / (g * 1.01), "%/(Gbit/s)").label("end", "sender"),
    ];
    // The first's as each repetition stores it: over its own sent rate.
    for m in r.results[0].metrics.iter_mut() {
        if m.name == "cpu_pct_per_gbit" {
            m.value = 61.5 / (15.57 * 1.01);
        }
    }
    r.results.insert(1, second);
    let m = report::markdown(std::slice::from_ref(&r), None);
    assert!(
        m.contains("| tcp | 22.50 Gbit/s | 61.5 | 72.3 | 2.71 |"),
        "{m}"
    );
}

/// The server processes' bars of a capacity test's CPU charts in `html`, in order.
fn server_bars(html: &str) -> Vec<f64> {
    html.match_indices("<title>server processes / ")
        .map(|(i, t)| {
            let v = &html[i + t.len()..];
            let v = &v[v.find(": ").unwrap() + 2..];
            v[..v.find('<').unwrap()].replace(',', "").parse().unwrap()
        })
        .collect()
}

/// The CPU chart of a capacity test draws the server processes' CPU beside the host's
/// busy %, in the host's terms (over its CPUs), where the server was watched and the
/// host's CPUs are known; the review found the table had the column and the chart not.
#[test]
fn capacity_cpu_charts_draw_the_server_beside_the_host() {
    let mut r = capacity_run(true);
    // Without the system under test's per-CPU telemetry its CPUs are unknown: not drawn.
    let h = report::html(std::slice::from_ref(&r), None);
    assert!(h.contains("kv load levels: CPU busy (% of the host)"));
    assert!(!h.contains("<title>server processes / "), "{h}");
    assert!(!h.contains("The CPU chart draws both"));
    let ts = kv_run(&Spec::default()).results[0]
        .telemetry_summary
        .clone();
    let cpus = ts[0].cpus.iter().filter(|c| c.cpu >= 0).count();
    assert!(cpus >= 2, "{ts:?}");
    for res in &mut r.results {
        res.telemetry_summary = ts.clone();
    }
    let h = report::html(std::slice::from_ref(&r), None);
    // At 100%: server:0 30 + server:1 10 = 40% of one CPU, the loadgen's 99 left out.
    let want = 40.0 / cpus as f64;
    let bars = server_bars(&h);
    assert_eq!(bars.len(), 2, "one bar per level: {bars:?}");
    assert!(
        bars.iter().any(|v| (v - want).abs() <= want * 0.01),
        "{bars:?} against {want}"
    );
    assert!(h.contains("The CPU chart draws both in the host&#39;s terms"));
    // A CPU online for half the test is half a CPU of the host's busy %: the server's
    // line is over the CPUs as they were (it counted whole).
    let mut half = ts.clone();
    let last = half[0]
        .cpus
        .iter()
        .filter(|c| c.cpu >= 0)
        .map(|c| c.cpu)
        .max();
    half[0].covered_s = Some(10.0);
    half[0].part_present.push(model::PartPresent {
        cpu: last,
        role: None,
        pid: None,
        present_s: 5.0,
    });
    let mut offline = r.clone();
    for res in &mut offline.results {
        res.telemetry_summary = half.clone();
    }
    let h = report::html(std::slice::from_ref(&offline), None);
    let want = 40.0 / (cpus as f64 - 0.5);
    let bars = server_bars(&h);
    assert!(
        bars.iter().any(|v| (v - want).abs() <= want * 0.01),
        "{bars:?} against {want}"
    );
    // The ramp's chart too, once its steps watched the server.
    let ramp = r.results.iter_mut().find(|res| res.test == "ramp").unwrap();
    for i in 0..3 {
        ramp.metrics.push(
            Metric::new("process_cpu_pct", 50.0, "%")
                .label("phase", "ramp")
                .label("step", i)
                .label("role", "server:0"),
        );
    }
    let h = report::html(std::slice::from_ref(&r), None);
    let chart = &h[h.find("kv ramp: CPU busy vs demanded rate").unwrap()..];
    let chart = &chart[..chart.find("</svg>").unwrap()];
    assert!(chart.contains("server processes"), "{chart}");
}

/// A ramp step's row shows the rate its verdict was judged on: its replies over the
/// seconds its requests fell due in, not to its last reply (review I, 5: a sustained row
/// read 89% of its demand); a step stored before that figure was kept shows its reply
/// rate.
#[test]
fn ramp_rows_show_the_rate_their_verdict_was_judged_on() {
    let mut r = capacity_run(false);
    let ramp = r.results.iter_mut().find(|res| res.test == "ramp").unwrap();
    ramp.metrics.push(
        Metric::new("served_rate_per_s", 1999.0, "req/s")
            .label("phase", "ramp")
            .label("step", 0),
    );
    let h = report::html(std::slice::from_ref(&r), None);
    let table = &h[h.find("<caption>Ramp steps").unwrap()..];
    let table = &table[..table.find("</table>").unwrap()];
    assert!(table.contains("<td class=\"n\">1,999</td>"), "{table}");
    assert!(!table.contains("1,987"), "{table}");
    // The step without it keeps its reply rate.
    assert!(table.contains("<td class=\"n\">4,002</td>"), "{table}");
    assert!(h.contains("the rate each verdict was judged on"));
    // No step looked keys up: no hit ratio column.
    assert!(!table.contains("GET hits %"), "{table}");
}

/// A key-value ramp's steps show the share of their GETs that found their key.
#[test]
fn ramp_rows_show_their_get_hit_ratio() {
    let mut r = capacity_run(false);
    let ramp = r.results.iter_mut().find(|res| res.test == "ramp").unwrap();
    ramp.metrics.push(
        Metric::new("hit_ratio_pct", 3.25, "%")
            .label("phase", "ramp")
            .label("step", 1),
    );
    let h = report::html(std::slice::from_ref(&r), None);
    let table = &h[h.find("<caption>Ramp steps").unwrap()..];
    let table = &table[..table.find("</table>").unwrap()];
    assert!(table.contains("<th>GET hits %</th>"), "{table}");
    assert!(
        table.contains("<td class=\"n\">3.2</td>") || table.contains("<td class=\"n\">3.3</td>"),
        "{table}"
    );
}

#[test]
fn capacity_ramp_search_levels() {
    let r = capacity_run(true);
    let h = report::html(std::slice::from_ref(&r), None);
    assert!(h.contains("kv ramp: reply rate vs demanded rate"));
    assert!(h.contains("saturation at 6k/s"));
    assert!(h.contains("kv ramp: latency vs demanded rate"));
    assert!(h.contains("kv ramp: CPU busy vs demanded rate"));
    assert!(h.contains("Saturation at a demanded rate of 6,000 req/s."));
    assert!(h.contains("<td class=\"n\">40.000</td>"), "p99 in ms");
    assert!(h.contains("kv search: latency at the objective per probed rate"));
    assert!(h.contains("bound 20 ms") && h.contains("answer 44k/s"));
    // The objective as the search wrote it.
    assert!(h.contains("Highest rate meeting p99&lt;20ms: 44,000 req/s."));
    // No probe missed: the answer is a lower bound, in the sentence, the chart and
    // the results cell.
    let mut bound = r.clone();
    for x in &mut bound.results {
        x.metrics.retain(|m| m.name != "lowest_failing_rate_per_s");
    }
    let hb = report::html(std::slice::from_ref(&bound), None);
    assert!(
        hb.contains("Highest rate meeting p99&lt;20ms: at least 44,000 req/s, a lower bound ("),
        "{hb}"
    );
    assert!(hb.contains("answer at least 44k/s") && hb.contains("≥ 44,000 req/s"));
    // A result stored without it: from its numbers. A bound of seconds reads in
    // seconds: "p99 < 2k ms" read as a typo (acceptance pass E, 11).
    let mut slow = r.clone();
    for m in slow.results.iter_mut().flat_map(|r| r.metrics.iter_mut()) {
        m.labels.remove("slo");
        if m.name == "objective_bound_ns" {
            m.value = 2e9;
        }
    }
    let hs = report::html(std::slice::from_ref(&slow), None);
    assert!(hs.contains("Highest rate meeting p99 &lt; 2 s: 44,000 req/s."));
    assert!(hs.contains("bound 2 s") && !hs.contains("k ms"));
    // The percentile whole: p99.99 read "p100".
    for m in slow.results.iter_mut().flat_map(|r| r.metrics.iter_mut()) {
        if m.name == "objective_percentile" {
            m.value = 99.99;
        }
    }
    let hs = report::html(std::slice::from_ref(&slow), None);
    assert!(hs.contains("Highest rate meeting p99.99 &lt; 2 s"));
    assert!(!hs.contains("p100"));
    assert!(h.contains("kv load levels: target and reply rate"));
    assert!(h.contains("kv load levels: power (W)"));
    assert!(!h.contains("(MODELLED)"), "measured power said modelled");
    // The model's watts say so in the charts' titles, which their SVG files carry alone,
    // and in the overall figure (acceptance pass E, 7).
    let mut modelled = r.clone();
    for res in modelled.results.iter_mut().filter(|x| x.test == "levels") {
        res.flags
            .push(model::Flag::warning("power_modelled", "declared 100:200 W"));
        res.metrics
            .push(Metric::new("overall_reply_rate_per_w", 250.0, "req/s/W"));
    }
    let hm = report::html(std::slice::from_ref(&modelled), None);
    assert!(hm.contains("kv load levels: power (W) (MODELLED)"));
    assert!(hm.contains("kv load levels: req/s per W (MODELLED)"));
    assert!(hm.contains("req/s per W (MODELLED)."), "the overall figure");
    // Two p99 figures side by side say why they differ when requests went unsent
    // (acceptance pass E, 6), and only then.
    let note = "The latency at the objective is of every request that fell due: the 577 never sent";
    assert!(!h.contains(note));
    let mut behind = r.clone();
    for res in behind.results.iter_mut().filter(|x| x.test == "search") {
        res.metrics.push(
            Metric::new("unsent_requests", 577.0, "req")
                .label("phase", "search")
                .label("step", 1),
        );
    }
    let hb = report::html(std::slice::from_ref(&behind), None);
    assert!(hb.contains(note), "the unsent note");
    // How late a probe's sends were, beside its latency (a probe 21.7% late read as one
    // on time, and only the ramp's table had the column).
    for res in behind.results.iter_mut().filter(|x| x.test == "search") {
        res.metrics.push(
            Metric::new("late_pct", 21.7, "%")
                .label("phase", "search")
                .label("step", 1),
        );
    }
    let mb = report::markdown(std::slice::from_ref(&behind), None);
    assert!(
        mb.contains("| Probe | Demanded req/s | Reply req/s | Late % | Latency at objective ms |")
            && mb.contains("| 1 | 64,000 | 64,000 | 21.7 | 31.400 | - |")
            && mb.contains("Late %: the probe's requests sent more than 1 ms after"),
        "{mb}"
    );
    assert!(h.contains("kv load levels: req/s per W"));
    assert!(h.contains("kv load levels: CPU busy (% of the host)"));
    let m = report::markdown(std::slice::from_ref(&r), None);
    assert!(
        m.contains("| 100% | 44,000 | 43,560 | 9.000 | 25.7 | 75.0 | 40.0 | 150.0 | 290 |"),
        "{m}"
    );
    assert!(m.contains("| Reply req/s | p99 ms | Late % |"), "{m}");
    assert!(
        m.contains("Late %: the level's requests sent more than 1 ms"),
        "{m}"
    );
    // Steps that time one transaction type (oltp's New-Order) say so in the heading: it
    // read `p99 ms`, as if of every transaction.
    let mut of_txn = r.clone();
    for res in &mut of_txn.results {
        for x in &mut res.metrics {
            if x.name.starts_with("latency_p") && x.labels.contains_key("phase") {
                x.labels.insert("txn".into(), "new_order".into());
            }
        }
    }
    let mt = report::markdown(std::slice::from_ref(&of_txn), None);
    assert!(
        mt.contains("| Reply req/s | New-Order p99 ms | Late % |"),
        "{mt}"
    );
    assert!(!mt.contains("| p99 ms |"), "{mt}");
    // A step with no New-Order reply is stored unlabelled (of every transaction): the
    // heading names none then. The last step's, so that a heading read off the first
    // step alone would still name it.
    let mut mixed = of_txn.clone();
    let one = mixed
        .results
        .iter_mut()
        .flat_map(|res| res.metrics.iter_mut())
        .filter(|x| {
            x.name == "latency_p99_ns"
                && x.labels.get("phase").map(String::as_str) == Some("levels")
        })
        .last()
        .unwrap();
    one.labels.remove("txn");
    let mm = report::markdown(std::slice::from_ref(&mixed), None);
    assert!(mm.contains("| Reply req/s | p99 ms | Late % |"), "{mm}");
    assert!(
        m.contains("Server %CPU is the watched server processes' CPU summed"),
        "{m}"
    );
    // A level with error replies says why its Reply ÷ Power is above its per W (the
    // per-W figure counts the replies that were not errors), by the share its own
    // figures give; without any, nothing.
    let errors_note = "req/s per W counts the replies that were not errors";
    assert!(!m.contains(errors_note), "{m}");
    let mut erring = r.clone();
    for res in erring.results.iter_mut().filter(|x| x.test == "levels") {
        for m in res.metrics.iter_mut().filter(|m| {
            m.name == "reply_rate_per_w"
                && m.labels.get("level").map(String::as_str) == Some("100%")
        }) {
            m.value *= 0.995;
        }
    }
    let me = report::markdown(std::slice::from_ref(&erring), None);
    assert!(
        me.contains(&format!(
            "{errors_note}, Reply req/s every reply, so Reply ÷ Power reads above per W by \
             the share that failed (100%: 0.50% of replies were errors)."
        )),
        "{me}"
    );
    // A workload counting operations (kv's ops/s, oltp's txn/s) is labelled with its unit.
    let mut ops = r.clone();
    for res in &mut ops.results {
        for m in &mut res.metrics {
            m.unit = m.unit.replace("req", "ops");
        }
    }
    let h = report::html(&[ops], None);
    assert!(h.contains("Saturation at a demanded rate of 6,000 ops/s."));
    assert!(h.contains("kv load levels: ops/s per W"));
    assert!(!h.contains("req/s per W"));
    // No power: no power chart, "absent" in the table.
    let h = report::html(&[capacity_run(false)], None);
    assert!(!h.contains("kv load levels: power (W)"));
    assert!(!h.contains("kv ramp: CPU busy vs demanded rate"));
    assert!(h.contains("<td class=\"n\">absent</td>"));
    // Not a capacity run: no capacity views.
    let h = report::html(&[net_run()], None);
    assert!(!h.contains("ramp: reply rate") && !h.contains("load levels"));
}

/// Levels judged against the search's objective show whether each met it, and the
/// warning of a level that missed it is said under the table.
#[test]
fn levels_judged_against_the_objective_show_it() {
    let mut r = capacity_run(true);
    let levels = r.results.iter_mut().find(|x| x.test == "levels").unwrap();
    for (lv, meets, at_ns) in [("100%", 0.0, 21e6), ("50%", 1.0, 9e6)] {
        levels.metrics.push(
            Metric::new("meets_objective", meets, "bool")
                .label("phase", "levels")
                .label("level", lv)
                .label("slo", "p99<20ms"),
        );
        levels.metrics.push(
            Metric::new("latency_at_objective_ns", at_ns, "ns")
                .label("phase", "levels")
                .label("level", lv)
                .label("slo", "p99<20ms"),
        );
    }
    levels.flags.push(model::Flag::warning(
        "level_misses_objective",
        "levels that missed p99<20ms: 100% (44000 req/s): p99 = 21 ms misses p99<20ms",
    ));
    let m = report::markdown(std::slice::from_ref(&r), None);
    assert!(
        m.contains("| Latency at objective ms | Meets p99&lt;20ms |"),
        "{m}"
    );
    // The judged percentile (of every request due) beside the recorded p99.
    assert!(
        m.contains(
            "| 100% | 44,000 | 43,560 | 9.000 | 25.7 | 75.0 | 40.0 | 150.0 | 290 | 21.000 | NO |"
        ),
        "{m}"
    );
    assert!(
        m.contains(
            "| 50% | 22,000 | 21,780 | 9.000 | 0.0 | 55.0 | 32.0 | 110.0 | 198 | 9.000 | yes |"
        ),
        "{m}"
    );
    assert!(m.contains("levels that missed p99&lt;20ms: 100%"));
    // Not judged (a capacity given with --capacity, no --slo): no column.
    let m = report::markdown(&[capacity_run(true)], None);
    assert!(!m.contains("| Meets p99"));
}

/// Levels whose 100% was a lower bound of the capacity (`capacity_a_bound`) are of
/// another scale than the other side's: compare sets none of their figures against it
/// (A's 7,995 at "100%" against B's 5,000 read -37.5%).
#[test]
fn compare_sets_no_figure_of_levels_over_a_bound_against_another() {
    let mut a = capacity_with_steps("cap-a", 1.0);
    let b = capacity_with_steps("cap-b", 1.2);
    let levels = a.results.iter_mut().find(|r| r.test == "levels").unwrap();
    levels.flags.push(model::Flag::warning(
        "capacity_a_bound",
        "100% is 5000 req/s, the ramp's, but that is a lower bound",
    ));
    let c = report::compare(&[a], &[b]);
    let rows: Vec<_> = c.rows.iter().filter(|r| r.point == "kv levels").collect();
    assert!(!rows.is_empty());
    for r in rows {
        assert!(r.diff_pct.is_none() && r.p_value.is_none(), "{r:?}");
        assert!(
            r.verdict
                .starts_with("not compared: A's 100% is a lower bound of its capacity"),
            "{r:?}"
        );
    }
    // The ramp's figures are compared as before.
    assert!(c
        .rows
        .iter()
        .any(|r| r.point == "kv ramp" && r.diff_pct.is_some()));
}

/// A level whose host CPU was counted below its own processes' is marked in the levels
/// table, with the power and perf/W that follow it where they are modelled, and the flag
/// said under it (the table read 3.5% busy, 53.5 W, 70.1 ops/s/W, unmarked).
#[test]
fn a_level_whose_ticks_missed_its_processes_is_marked() {
    let mut r = capacity_run(true);
    let levels = r.results.iter_mut().find(|x| x.test == "levels").unwrap();
    levels.metrics.push(
        Metric::new(model::capacity_keys::TICKS_MISSED, 23.0, "%")
            .label("phase", "levels")
            .label("level", "50%"),
    );
    levels.flags.push(model::Flag::warning(
        "step_cpu_ticks_missed",
        "steps whose host's CPUs were counted busy for less than this test's own processes ran: 50% (22000 req/s)",
    ));
    let m = report::markdown(std::slice::from_ref(&r), None);
    assert!(
        m.contains("| 50% | 22,000 | 21,780 | 9.000 | 0.0 | 55.0 ⚠ | 32.0 | 110.0 | 198 |"),
        "{m}"
    );
    assert!(
        m.contains("| 100% | 44,000 | 43,560 | 9.000 | 25.7 | 75.0 | 40.0 |"),
        "{m}"
    );
    assert!(
        m.contains("⚠ steps whose host's CPUs were counted busy"),
        "{m}"
    );
    // Other programs while the level's own processes rested: its busy, power and perf/W
    // marked (they are theirs too), the flag said.
    let levels = r.results.iter_mut().find(|x| x.test == "levels").unwrap();
    levels.metrics.push(
        Metric::new(model::capacity_keys::OTHERS_AT_REST, 145.0, "%")
            .label("phase", "levels")
            .label("level", "100%"),
    );
    levels.flags.push(model::Flag::warning(
        "step_other_load",
        "other programs took the host's CPUs while this test's own processes rested: 44000 req/s (145% of one CPU)",
    ));
    let m = report::markdown(std::slice::from_ref(&r), None);
    assert!(
        m.contains("| 100% | 44,000 | 43,560 | 9.000 | 25.7 | 75.0 ⚠ | 40.0 | 150.0 ⚠ | 290 ⚠ |"),
        "{m}"
    );
    assert!(m.contains("⚠ other programs took the host's CPUs"), "{m}");
    // Modelled power follows the busy figure: marked too.
    levels_modelled(&mut r);
    let m = report::markdown(std::slice::from_ref(&r), None);
    assert!(m.contains("| 55.0 ⚠ | 32.0 | 110.0 ⚠ | 198 ⚠ |"), "{m}");
}

/// Marks the run's levels power as modelled.
fn levels_modelled(r: &mut RunRecord) {
    let levels = r.results.iter_mut().find(|x| x.test == "levels").unwrap();
    levels.flags.push(model::Flag::warning(
        "power_modelled",
        "power at each step is the declared --power-model applied to CPU busy, not a measurement",
    ));
}

/// Each repetition and sweep point of a capacity test has its view, named by what sets
/// it apart: not the first one's alone.
#[test]
fn every_capacity_test_of_a_run_has_its_view() {
    let mut r = capacity_run(true);
    let ramp = r.results[0].clone();
    let mut again = ramp.clone();
    again.repetition = 1;
    again.step += 10;
    let mut other = ramp.clone();
    other
        .params
        .insert("pipeline".into(), serde_json::json!(16));
    other.step += 20;
    r.results[0]
        .params
        .insert("pipeline".into(), serde_json::json!(1));
    again.params.insert("pipeline".into(), serde_json::json!(1));
    r.results.extend([again, other]);
    let h = report::html(std::slice::from_ref(&r), None);
    for who in [
        "pipeline=1, repetition 1: kv ramp: reply rate",
        "pipeline=1, repetition 2: kv ramp: reply rate",
        "pipeline=16: kv ramp: reply rate",
    ] {
        assert!(h.contains(who), "no view {who}");
    }
    // The only search of the run is named as before.
    assert!(h.contains(">kv search: latency at the objective per probed rate"));
}

/// A capacity run as the engine stores one, beside an ordinary `set` test: one latency
/// histogram per step (`ramp_step<i>`, no `all`), each step at its own offered rate, the
/// peak reply rate as the headline, and the SUT's power and CPU over the whole test.
fn capacity_with_steps(id: &str, scale: f64) -> RunRecord {
    let mut r = capacity_run(true);
    let template = kv_run(&Spec {
        reps: 1,
        instances: &[1],
        ..Spec::default()
    })
    .results
    .remove(0);
    r.id = id.into();
    r.label = Some(id.into());
    for res in &mut r.results {
        res.telemetry_summary = template.telemetry_summary.clone();
    }
    let ramp = &mut r.results[0];
    ramp.metrics
        .push(Metric::new("max_reply_rate_per_s", 5100.0 * scale, "req/s"));
    ramp.headline = "max_reply_rate_per_s".into();
    // 1 ms at 2k/s, 2 ms at 4k/s, 40 ms once saturated at 6k/s.
    for (i, ms) in [1u64, 2, 40].iter().enumerate() {
        let mut h = model::hist::new_latency_histogram();
        for _ in 0..1000 {
            h.record(ms * 1_000_000).unwrap();
        }
        ramp.histograms.push(model::HistogramRecord::from_histogram(
            &format!("ramp_step{i}"),
            "corrected",
            &h,
        ));
    }
    let levels = &mut r.results[2];
    levels.metrics.push(Metric::new(
        "overall_reply_rate_per_w",
        250.0 * scale,
        "req/s/W",
    ));
    levels.headline = "overall_reply_rate_per_w".into();
    let mut set = template;
    set.step = 3;
    r.results.push(set);
    r
}

/// A capacity test (ramp, search, levels) is a curve of steps at different offered
/// rates: the generic tables keep its row and headline but show no whole-test latency
/// (a "ramp p99" merging every rate) and no efficiency (the peak rate over the whole
/// ramp's power); it is no best point, in no chart that sets tests side by side, and
/// `compare` judges its headline and its curve point by point (levels, ramp steps).
#[test]
fn capacity_tests_have_no_whole_test_latency_or_efficiency() {
    let a = capacity_with_steps("cap-a", 1.0);
    let pts = report::derive::points(0, &a);
    let ramp = pts.iter().find(|p| p.test == "ramp").unwrap();
    assert_eq!(ramp.capacity_phase(), Some("ramp"));
    assert!(ramp.latency().is_none(), "a merge of every step's latency");
    assert!(
        ramp.efficiency().is_none(),
        "the peak rate over the whole ramp's power"
    );
    let set = pts.iter().find(|p| p.test == "set").unwrap();
    assert_eq!(set.capacity_phase(), None);
    assert!(set.latency().is_some() && set.efficiency().is_some());

    let runs = [a.clone()];
    let eff = report::derive::efficiency_rows(&runs);
    assert_eq!(
        eff.iter().map(|e| e.0.as_str()).collect::<Vec<_>>(),
        ["kv set instances=1 pipeline=1"]
    );
    let s = report::summary(&runs);
    assert_eq!(s.rows.len(), 1, "{:?}", s.rows);
    assert!(s.notes.iter().any(|n| n.contains("ramp, search, levels")));
    let peak = report::derive::peak_params(&runs);
    for (row, _) in report::derive::best_points(&runs, &peak) {
        assert!(!row.contains("ramp") && !row.contains("levels"), "{row}");
    }
    // The per-CPU breakdown is of one test at a time (over all of a capacity test's
    // steps): not a chart of tests side by side.
    let side_by_side = |c: &report::charts::Chart| c.section != "cpu";
    for c in report::charts::charts(&runs)
        .into_iter()
        .filter(side_by_side)
    {
        assert!(
            !c.title.contains("ramp") && !c.title.contains("levels"),
            "{}",
            c.title
        );
        for t in ["ramp", "search", "levels"] {
            assert!(
                !c.svg.as_deref().unwrap_or("").contains(&format!(">{t}<")),
                "{}",
                c.title
            );
        }
    }

    // A run of capacity tests only: no chart of tests side by side, and no note that its
    // latency or telemetry was not recorded (it was, per step).
    let mut only = a.clone();
    only.results.retain(|r| r.test != "set");
    let charts = report::charts::charts(&[only]);
    let titles: Vec<&String> = charts.iter().map(|c| &c.title).collect();
    assert!(!charts.iter().any(side_by_side), "{titles:?}");
    assert!(
        charts
            .iter()
            .all(|c| c.svg.is_some() && c.title.ends_with("(mean over all its steps)")),
        "{titles:?}"
    );

    // The results tables keep the row, with the latency columns pointing to the view.
    let h = report::html(&runs, None);
    assert!(
        h.contains(
            r#"<td colspan="7" class="muted">n/a: per step, see the kv capacity ramp view</td>"#
        ),
        "{h}"
    );
    assert!(h.contains("5,100 req/s"));
    let m = report::markdown(&runs, None);
    let row = m
        .lines()
        .find(|l| l.contains("| ramp |"))
        .unwrap_or_else(|| panic!("{m}"));
    assert!(
        row.contains("| n/a: per step, see the kv capacity ramp view | n/a | n/a |"),
        "{row}"
    );

    // Compare: the capacity headline is judged, and the curve where the runs meet on it
    // (acceptance pass E, 9: the headline alone hid the curves), nothing over every step.
    let b = capacity_with_steps("cap-b", 1.2);
    let c = report::compare(&[a], &[b]);
    let of = |point: &str| -> Vec<&str> {
        c.rows
            .iter()
            .filter(|r| r.point == point)
            .map(|r| r.metric.as_str())
            .collect()
    };
    let mut ramp_rows = vec!["max_reply_rate_per_s".to_string()];
    for d in ["2,000", "4,000", "6,000"] {
        for what in ["reply rate", "p99"] {
            ramp_rows.push(format!("at {d} req/s demanded: {what}"));
        }
    }
    assert_eq!(of("kv ramp"), ramp_rows);
    // Per watt, named by its levels' power basis as power rows are (RAPL here).
    let mut level_rows = vec!["overall_reply_rate_per_w (component only)".to_string()];
    for l in ["100%", "50%"] {
        for what in [
            "reply rate",
            "p99",
            "power_w (component only)",
            "req/s per W (component only)",
        ] {
            level_rows.push(format!("level {l}: {what}"));
        }
    }
    assert_eq!(of("kv levels"), level_rows);
    let at_100 = c
        .rows
        .iter()
        .find(|r| r.metric == "level 100%: reply rate")
        .unwrap();
    assert!(at_100.a.is_some() && at_100.b.is_some(), "{at_100:?}");
    assert_eq!(of("kv search"), ["max_rate_meeting_slo_per_s"]);
    let ramp = c.rows.iter().find(|r| r.point == "kv ramp").unwrap();
    assert!((ramp.diff_pct.unwrap() - 20.0).abs() < 1e-9);
    assert!(of("kv set").contains(&"latency_p99_ns"));
}

/// A side of several levels runs: each level's perf/W is its runs' mean reply rate over
/// their mean power, as a load test's perf/W is, and the overall figure their sums'
/// ratio, SPECpower's, never the mean of each run's ratio (a side of 12,500 req/s at
/// 109.6 W and 9,375 at 180.1 W read 83.1 per W, the mean of 114.1 and 52.1, beside its
/// rows of 10,937 req/s and 145 W). Per watt counts the replies that were not errors
/// (a tenth of the 100% level's here), as the engine stores it.
#[test]
fn compare_sets_a_side_of_levels_runs_per_watt_as_its_means_ratio() {
    // 43,560 req/s at 100%, a tenth of them errors: 39,204 per W's; 21,780 at 50%.
    let at_100 = |id: &str, w: f64| {
        let mut r = capacity_with_steps(id, 1.0);
        let levels = &mut r.results[2];
        for m in &mut levels.metrics {
            if m.labels.get("level").map(String::as_str) == Some("100%") {
                match m.name.as_str() {
                    "power_w" => m.value = w,
                    "reply_rate_per_w" => m.value = 39204.0 / w,
                    _ => {}
                }
            }
        }
        let overall = levels
            .metrics
            .iter_mut()
            .find(|m| m.name == "overall_reply_rate_per_w")
            .unwrap();
        overall.value = (39204.0 + 21780.0) / (w + 110.0);
        r
    };
    let c = report::compare(
        &[at_100("a1", 100.0), at_100("a2", 300.0)],
        &[at_100("b1", 150.0)],
    );
    let a_of = |metric: &str| {
        c.rows
            .iter()
            .find(|r| r.point == "kv levels" && r.metric == metric)
            .unwrap_or_else(|| panic!("{metric}: {:?}", c.rows))
            .a
            .clone()
            .unwrap()
            .mean
    };
    let close = |got: f64, want: f64| assert!((got - want).abs() < 1e-9, "{got} vs {want}");
    close(a_of("level 100%: power_w (component only)"), 200.0);
    // 39,204 req/s over 200 W, not (392.0 + 130.7) / 2 = 261.4.
    close(
        a_of("level 100%: req/s per W (component only)"),
        39204.0 / 200.0,
    );
    // 60,984 req/s over 310 W, not (290.4 + 148.7) / 2 = 219.6.
    close(
        a_of("overall_reply_rate_per_w (component only)"),
        60984.0 / 310.0,
    );
    // A figure its levels do not give (stored by another rule) keeps its runs' mean.
    let mut odd = at_100("a3", 100.0);
    let overall = odd.results[2]
        .metrics
        .iter_mut()
        .find(|m| m.name == "overall_reply_rate_per_w")
        .unwrap();
    overall.value = 400.0;
    let c = report::compare(&[odd, at_100("a4", 300.0)], &[at_100("b1", 150.0)]);
    let overall = c
        .rows
        .iter()
        .find(|r| r.point == "kv levels" && r.metric.starts_with("overall_reply_rate_per_w"))
        .unwrap();
    close(
        overall.a.clone().unwrap().mean,
        (400.0 + 60984.0 / 410.0) / 2.0,
    );
    // Levels of two declared models on one side: no one figure over them (two models
    // were one source, `model system`).
    let modelled = |id: &str, w: f64, model: &str| {
        let mut r = at_100(id, w);
        r.plan = serde_json::json!({ "run": { "power_model": model } });
        for m in r.results[2]
            .metrics
            .iter_mut()
            .filter(|m| m.name == "power_w")
        {
            m.labels.insert("source".into(), "model".into());
            m.labels.insert("scope".into(), "system".into());
        }
        r
    };
    let c = report::compare(
        &[
            modelled("m1", 100.0, "60:160"),
            modelled("m2", 300.0, "50:200"),
        ],
        &[modelled("m3", 150.0, "60:160")],
    );
    let power = c
        .rows
        .iter()
        .find(|r| r.point == "kv levels" && r.metric.starts_with("level 100%: power_w"))
        .unwrap_or_else(|| panic!("{:?}", c.rows));
    assert!(power.a.is_none(), "{power:?}");
    assert!(
        power.verdict.contains("(60:160 W)") && power.verdict.contains("(50:200 W)"),
        "{}",
        power.verdict
    );
}

/// A ramp's steps with these demanded rates (the reply rate 99% of each), a levels test's
/// with these levels, in place of `r`'s.
fn with_curve(mut r: RunRecord, ramp: &[f64], levels: &[&str]) -> RunRecord {
    let res = &mut r.results[0];
    res.metrics
        .retain(|m| m.labels.get("phase").map(String::as_str) != Some("ramp"));
    for (i, d) in ramp.iter().enumerate() {
        res.metrics
            .extend(step("ramp", "step", &i.to_string(), *d, d * 0.99, 2e6));
    }
    let res = &mut r.results[2];
    res.metrics
        .retain(|m| m.labels.get("phase").map(String::as_str) != Some("levels"));
    for lv in levels {
        let rate = 440.0 * lv.trim_end_matches('%').parse::<f64>().unwrap();
        res.metrics
            .extend(step("levels", "level", lv, rate, rate * 0.99, 9e6));
    }
    r
}

/// Review H, 6: a curve's rows in the order of the curve (demanded 500 before 1,000; level
/// 100%, 50%, 10%), not of their text; the steps only one side ran said in one row per
/// side, not a row per figure; the latency named "p99", not by its metric id.
#[test]
fn compare_orders_a_curve_by_its_steps_and_folds_the_steps_one_side_ran() {
    let hostile = "<b>x</b>|*y*";
    let a = with_curve(
        capacity_with_steps("cap-a", 1.0),
        &[500.0, 1000.0, 1500.0, 2000.0],
        &["100%", "50%", "10%"],
    );
    let mut b = with_curve(
        capacity_with_steps("cap-b", 1.1),
        &[500.0, 1000.0, 1500.0, 2500.0, 3000.0],
        &["100%", "50%", "10%", "5%"],
    );
    b.label = Some(hostile.into());
    let c = report::compare(&[a], &[b.clone()]);
    let of = |point: &str| -> Vec<(&str, &str)> {
        c.rows
            .iter()
            .filter(|r| r.point == point)
            .map(|r| (r.metric.as_str(), r.verdict.as_str()))
            .collect()
    };
    let ramp = of("kv ramp");
    let metrics: Vec<&str> = ramp.iter().map(|r| r.0).collect();
    let mut want = vec!["max_reply_rate_per_s".to_string()];
    for d in ["500", "1,000", "1,500"] {
        for what in ["reply rate", "p99"] {
            want.push(format!("at {d} req/s demanded: {what}"));
        }
    }
    want.push("steps of one side".into());
    want.push("steps of one side".into());
    assert_eq!(metrics, want);
    let notes: Vec<&str> = ramp.iter().skip(7).map(|r| r.1).collect();
    assert_eq!(
        notes,
        [
            "only on A, not compared: B ran no step demanding 2,000 req/s",
            "only on B, not compared: A ran no step demanding 2,500 req/s, 3,000 req/s",
        ]
    );
    assert!(!c.rows.iter().any(|r| r.metric.contains("latency_p99_ns")
        && (r.metric.starts_with("at ") || r.metric.starts_with("level "))));
    let levels: Vec<&str> = of("kv levels")
        .iter()
        .map(|r| r.0)
        .filter(|m| m.ends_with("reply rate") || *m == "steps of one side")
        .collect();
    assert_eq!(
        levels,
        [
            "level 100%: reply rate",
            "level 50%: reply rate",
            "level 10%: reply rate",
            "steps of one side"
        ]
    );
    assert!(of("kv levels")
        .iter()
        .any(|r| r.1 == "only on B, not compared: A ran no level 5%"));
    // Escaped where the comparison is published.
    let a = with_curve(
        capacity_with_steps("cap-a", 1.0),
        &[500.0, 2000.0],
        &["100%"],
    );
    let h = report::html(&[a.clone(), b.clone()], None);
    let said = "A ran no step demanding 1,000 req/s, 1,500 req/s, 2,500 req/s, 3,000 req/s";
    assert!(!h.contains("<b>x</b>") && h.contains(said), "{h}");
    let m = report::markdown(&[a, b], None);
    assert!(!m.contains("|*y*") && m.contains(said), "{m}");
}

/// Acceptance pass G, 13: an interrupted ramp said "No saturation point within the ramp"
/// of a ramp cut at 25,000 of 60,000 req/s; it says where it stopped.
#[test]
fn an_interrupted_ramp_says_where_it_stopped() {
    let mut r = capacity_run(false);
    r.results[0].status = model::Status::Interrupted;
    r.results[0]
        .metrics
        .retain(|m| m.name != "saturation_rate_per_s");
    let m = report::markdown(std::slice::from_ref(&r), None);
    assert!(
        m.contains(
            "The ramp was interrupted at step 2 (6,000 req/s demanded): no saturation up to there."
        ),
        "{m}"
    );
    assert!(!m.contains("No saturation point within the ramp"), "{m}");
    r.results[0].status = model::Status::Ok;
    let m = report::markdown(std::slice::from_ref(&r), None);
    assert!(m.contains("No saturation point within the ramp."), "{m}");
}

#[test]
fn comparisons_only_between_runs_of_the_same_tests() {
    let a = crypto_run();
    let mut b = crypto_run();
    b.id = "crypto-b".into();
    b.label = Some("crypto-b".into());
    let h = report::html(&[mem_run(), net_run(), a, b], None);
    // crypto-b is compared with crypto-a; mem and net are compared with nothing.
    assert_eq!(
        h.matches("<h3>crypto-b (B) vs crypto-a (A)</h3>").count(),
        1
    );
    assert!(!h.contains("(B) vs mem-a (A)"));
    assert!(h.contains(
        "Not compared (no earlier run measured the same workload and tests at the same parameters): net-a, crypto-a"
    ));
}

#[test]
fn view_strings_are_escaped() {
    let mut r = mem_run();
    for m in &mut r.results[1].metrics {
        m.labels.insert("kind".into(), "<script>x</script>".into());
    }
    let h = report::html(&[r], None);
    assert!(!h.contains("<script>x"));
    assert!(h.contains("&lt;script&gt;x"));
}

#[test]
fn view_figures_are_standalone_svg_files() {
    let files = report::svg_charts(&[mem_run(), capacity_run(true)]);
    let names: Vec<&str> = files.iter().map(|f| f.0.as_str()).collect();
    assert!(
        names.contains(&"view_memory_latency_vs_working_set.svg"),
        "{names:?}"
    );
    assert!(names.iter().any(|n| n.starts_with("view_kv_ramp")));
    let f = files
        .iter()
        .find(|f| f.0 == "view_memory_latency_vs_working_set.svg")
        .unwrap();
    assert!(f.1.starts_with("<?xml") && f.1.contains(r#"class="plateau""#));
    // No views without their data.
    let files = report::svg_charts(&[net_run()]);
    assert!(!files.iter().any(|f| f.0.starts_with("view_memory")));
}

/// Issue 13: `run net --tests tcp --streams 1,2` (37.9 and 67.7 Gbit/s) was shown as
/// "tcp 52.80 Gbit/s (mean over repetitions)". Sweep points are rows of their own,
/// labelled by what varies; only true repetitions of one point are averaged.
#[test]
fn sweep_points_are_never_averaged_as_repetitions() {
    let tcp = |g: f64| vec![Metric::new("throughput_gbit_per_s", g, "Gbit/s")];
    let p = |streams: u32| serde_json::json!({ "tests": ["tcp"], "streams": streams, "time": 10 });
    let mut r = run(
        "net-sweep",
        "net",
        vec![
            ("tcp", p(1), tcp(37.9)),
            ("tcp", p(1), tcp(38.1)),
            ("tcp", p(2), tcp(67.7)),
        ],
    );
    // The second result is a repetition of the first point (same test, same params).
    r.results[1].repetition = 1;
    let m = report::markdown(std::slice::from_ref(&r), None);
    assert!(m.contains("| tcp streams=1 | 38.00 Gbit/s |"), "{m}");
    assert!(m.contains("| tcp streams=2 | 67.70 Gbit/s |"), "{m}");
    // The parameters that do not vary are not in the view's labels.
    assert!(!m.contains("| tcp streams=1 time=10"), "{m}");
    let h = report::html(std::slice::from_ref(&r), None);
    for text in [&m, &h] {
        assert!(
            !text.contains("52.80") && !text.contains("47.90"),
            "averaged: {text}"
        );
    }
    assert!(h.contains("tcp streams=2"));
}

#[test]
fn mem_bandwidth_of_two_array_sizes_is_two_columns() {
    let bw = |g: f64| {
        vec![Metric::new("bandwidth_gb_per_s", g, "GB/s")
            .label("kind", "triad")
            .label("threads", 1)]
    };
    let mut r = run(
        "mem-sweep",
        "mem",
        vec![
            (
                "bandwidth",
                serde_json::json!({ "bw_size": "1M" }),
                bw(90.0),
            ),
            (
                "bandwidth",
                serde_json::json!({ "bw_size": "1G" }),
                bw(10.0),
            ),
        ],
    );
    // Each point's headline, as the workload stores it.
    for (res, g) in r.results.iter_mut().zip([90.0, 10.0]) {
        res.metrics
            .insert(0, Metric::new("triad_gb_per_s", g, "GB/s"));
        res.headline = "triad_gb_per_s".into();
    }
    let m = report::markdown(std::slice::from_ref(&r), None);
    assert!(m.contains("bw\\_size=1M 1 thr (GB/s)"), "{m}");
    assert!(m.contains("| triad | 10.00 | 90.00 |"), "{m}");
    assert!(!m.contains("50.00"), "averaged: {m}");
    // Nor a geometric mean of the two sizes' bandwidths (30.00) in the summary, which
    // says why there is none (acceptance pass J, 3).
    assert!(!m.contains("30.00"), "a mean of sweep points: {m}");
    let s = report::derive::summary(std::slice::from_ref(&r));
    assert!(
        s.geomean_note
            .as_deref()
            .is_some_and(|n| n.starts_with("no geometric mean: mem's rows are one measurement")),
        "{:?}",
        s.geomean_note
    );
}

#[test]
fn crypto_points_that_differ_beyond_threads_are_separate_rows() {
    let sign = |s: f64| vec![Metric::new("signs_per_s", s, "ops/s")];
    let r = run(
        "crypto-sweep",
        "crypto",
        vec![
            (
                "rsa2048",
                serde_json::json!({ "threads": 1, "engine": "a" }),
                sign(2000.0),
            ),
            (
                "rsa2048",
                serde_json::json!({ "threads": 1, "engine": "b" }),
                sign(3000.0),
            ),
        ],
    );
    let m = report::markdown(std::slice::from_ref(&r), None);
    assert!(m.contains("| 2048 engine=a | 2,000 |"), "{m}");
    assert!(m.contains("| 2048 engine=b | 3,000 |"), "{m}");
    assert!(!m.contains("2,500"), "averaged: {m}");
}

/// Two points meeting in one cell of the RSA chart (one test of 2048-bit keys, one of
/// several sizes, at one thread) mark it with both's warnings: it showed the last one's.
#[test]
fn crypto_points_meeting_in_one_cell_mark_it_with_both_warnings() {
    let mut r = run(
        "crypto-cells",
        "crypto",
        vec![
            (
                "rsa2048",
                serde_json::json!({ "threads": 1 }),
                vec![Metric::new("signs_per_s", 2000.0, "ops/s")],
            ),
            (
                "rsa",
                serde_json::json!({ "threads": 1 }),
                vec![Metric::new("signs_per_s", 2100.0, "ops/s")
                    .label("bits", 2048)
                    .label("threads", 1)],
            ),
        ],
    );
    r.results[0]
        .flags
        .push(model::Flag::warning("other_load", "busy"));
    r.results[1]
        .flags
        .push(model::Flag::warning("shares_cpus", "shared"));
    let svg = report::views::views(std::slice::from_ref(&r), "crypto")
        .into_iter()
        .flat_map(|v| v.figures)
        .find(|f| f.0.contains("RSA signs/s vs threads"))
        .expect("the RSA chart")
        .1;
    assert!(
        svg.contains("other_load") && svg.contains("shares_cpus"),
        "{svg}"
    );
}

#[test]
fn crypto_summary_per_test_in_its_unit_without_a_geomean() {
    let mut r = crypto_run();
    let h = report::html(std::slice::from_ref(&r), None);
    let summary = &h[h.find("Summary of measured data").unwrap()..];
    let summary = &summary[..summary.find("</table>").unwrap()];
    // Signs are signs/s, each key size at each thread count its own row, no mean of them.
    assert!(summary.contains("Performance (signs/s)"), "{summary}");
    assert!(!summary.contains("ops/s"));
    assert!(!summary.contains("Geometric mean"));
    for row in [
        "rsa1024 threads=1",
        "rsa1024 threads=2",
        "rsa2048 threads=2",
    ] {
        assert!(summary.contains(&format!("<td>{row}</td>")), "{row}");
    }
    assert!(h.contains("no geometric mean"));
    let m = report::markdown(std::slice::from_ref(&r), None);
    assert!(!m.contains("**Geometric mean**") && m.contains("signs/s"));
    // A bulk test beside: each row says its own unit.
    let mut aes = r.results[0].clone();
    aes.test = "aes-256-gcm".into();
    aes.headline = "throughput_mb_per_s".into();
    aes.metrics = vec![Metric::new("throughput_mb_per_s", 4200.0, "MB/s")];
    r.results.push(aes);
    let h = report::html(&[r], None);
    assert!(h.contains("<td>aes-256-gcm threads=1 (MB/s)</td>"), "{h}");
    assert!(h.contains("<td>rsa2048 threads=1 (signs/s)</td>"));
}

#[test]
fn small_packet_udp_keeps_its_digits_and_packets() {
    let mut r = net_run();
    let udp = &mut r.results[1];
    udp.test = "udp60".into();
    for m in &mut udp.metrics {
        if m.name == "throughput_gbit_per_s" {
            m.value = 0.0984;
        }
    }
    let m = report::markdown(std::slice::from_ref(&r), None);
    assert!(m.contains("| udp60 | 98.40 Mbit/s |"), "{m}");
    // The column has one unit: TCP's 15.57 Gbit/s beside it in Mbit/s too (K13).
    assert!(m.contains("| tcp | 15,570 Mbit/s |"), "{m}");
    assert!(!m.contains("0.10"));
    assert!(m.contains("146,000"), "packets/s");
    // Alone in a chart, it is drawn in Mbit/s.
    r.results.remove(0);
    let h = report::html(&[r], None);
    assert!(h.contains(">Mbit/s<"), "axis unit");
}

/// A loopback UDP test's jitter of 0.00035 ms (and a loss that small) printed `0.000`
/// in the net table, as if none were measured: a figure that rounds to zero at the
/// column's places keeps its significant digits; the others print as before.
#[test]
fn udp_jitter_and_loss_too_small_for_the_columns_places_are_not_shown_as_zero() {
    let mut r = net_run();
    for m in &mut r.results[1].metrics {
        match m.name.as_str() {
            "jitter_ms" => m.value = 0.00035,
            "loss_pct" => m.value = 0.0002,
            _ => {}
        }
    }
    let m = report::markdown(std::slice::from_ref(&r), None);
    // The jitter column is in us since acceptance pass F (F20): 0.00035 ms is 0.350 us.
    assert!(m.contains("| 0.000200 | 0.350 |"), "{m}");
    assert!(!m.contains("0.000 |"), "{m}");
    let h = report::html(std::slice::from_ref(&r), None);
    assert!(h.contains("0.350<") && h.contains("0.000200"), "{h}");
}

#[test]
fn mem_view_shows_the_measured_clock_beside_cycles() {
    let mut r = mem_run();
    r.results[0]
        .metrics
        .push(Metric::new("core_freq_mhz", 3050.0, "MHz").label("freq_source", "dependent-add"));
    let h = report::html(std::slice::from_ref(&r), None);
    assert!(
        h.contains("<th>Cycles (at 3,050 MHz, dependent-add)</th>"),
        "{h}"
    );
    let m = report::markdown(std::slice::from_ref(&r), None);
    assert!(m.contains("Cycles (at 3,050 MHz, dependent-add)"));
    assert!(m.contains("measured CPU clock, 3,050 MHz"));
    // Without a clock, the reason it is missing is said.
    let mut r = mem_run();
    r.results[0].missing.push(MissingMetric {
        name: "core_freq_mhz".into(),
        reason: "no cpufreq".into(),
    });
    let h = report::html(&[r], None);
    assert!(h.contains("core_freq_mhz: no cpufreq") && h.contains("<th>Cycles</th>"));
}

#[test]
fn no_automatic_comparison_of_the_same_tests_at_other_parameters() {
    let a = crypto_run();
    let mut b = crypto_run();
    b.id = "crypto-b".into();
    b.label = Some("crypto-b".into());
    for r in &mut b.results {
        r.params.insert("threads".into(), serde_json::json!(8));
    }
    let h = report::html(&[a.clone(), b.clone()], None);
    assert!(!h.contains("(B) vs"), "paired runs of different parameters");
    assert!(h.contains("at the same parameters): crypto-b"));
    let m = report::markdown(&[a.clone(), b], None);
    assert!(!m.contains("(B) vs"));
    // Hosts named in the parameters do not make points different.
    let mut c = crypto_run();
    c.id = "crypto-c".into();
    c.label = Some("crypto-c".into());
    for r in &mut c.results {
        r.params
            .insert("sut_host".into(), serde_json::json!("arm-1"));
    }
    let h = report::html(&[a, c], None);
    assert!(h.contains("<h3>crypto-c (B) vs crypto-a (A)</h3>"));
}

/// Runs under one label are told apart by their ids in the comparisons' headings too, as
/// in the Runs table (the headings read "p (B) vs p (A)" twice over three runs).
#[test]
fn comparisons_of_runs_under_one_label_name_them_by_id() {
    let runs: Vec<RunRecord> = ["crypto-1", "crypto-2", "crypto-3"]
        .iter()
        .map(|id| {
            let mut r = crypto_run();
            r.id = id.to_string();
            r.label = Some("p".into());
            r
        })
        .collect();
    let h = report::html(&runs, None);
    assert!(
        h.contains("<h3>p (crypto-2) (B) vs p (crypto-1) (A)</h3>"),
        "{h}"
    );
    let m = report::markdown(&runs, None);
    assert!(m.contains("### p (crypto-3) (B) vs p (crypto-"), "{m}");
    assert!(!m.contains("### p (B) vs p (A)"), "{m}");
}

/// TPC-C as a HammerDB user reads it: NOPM and TPM side by side, per database, each
/// transaction type's latency, and throughput against the virtual users.
#[test]
fn oltp_nopm_tpm_per_database_latency_and_users_chart() {
    let point = |vus: u32, nopm: f64| {
        let mut m = vec![
            Metric::new("nopm", nopm, "new orders/min"),
            Metric::new("tpm", nopm * 2.3, "transactions/min"),
            Metric::new("txn_per_s", nopm * 2.3 / 60.0, "transactions/s"),
        ];
        for db in 1..=2 {
            m.push(Metric::new("nopm", nopm / 2.0, "new orders/min").label("db", db));
            m.push(Metric::new("tpm", nopm * 1.15, "transactions/min").label("db", db));
        }
        m.push(Metric::new("transactions", 4321.0, "transactions").label("txn", "new_order"));
        for (name, v) in [("latency_mean_ns", 1.5e6), ("latency_p99_ns", 7.25e6)] {
            m.push(
                Metric::new(name, v, "ns")
                    .label("txn", "new_order")
                    .label("kind", "service"),
            );
        }
        ("tpcc", serde_json::json!({ "vus": vus, "databases": 2 }), m)
    };
    let r = run(
        "pg",
        "oltp",
        vec![point(1, 40_000.0), point(2, 60_000.0), point(4, 70_000.0)],
    );
    let h = report::html(std::slice::from_ref(&r), None);
    for want in [
        "TPC-C (HammerDB style)",
        "NOPM",
        "TPM",
        "60,000",
        "138,000",
        "Per database",
        "69,000",
        "Latency per transaction type",
        "new_order",
        "4,321",
        "7.25 ms",
        "transactions per second vs virtual users",
    ] {
        assert!(h.contains(want), "missing {want}");
    }
    let m = report::markdown(std::slice::from_ref(&r), None);
    assert!(m.contains("| vus=2 | 60,000 | 138,000 |"), "{m}");
    // A warned point is marked on the users chart, as on every chart against a swept
    // parameter (it was plain here, marked on the generic chart beside it); the run
    // beside another's chart too.
    let mut clean = r.clone();
    for res in &mut clean.results {
        res.flags.clear();
    }
    let mut warned = clean.clone();
    warned.results[1]
        .flags
        .push(model::Flag::warning("other_load", "busy"));
    let chart = |runs: &[RunRecord], title: &str| -> String {
        report::views::views(runs, "oltp")
            .into_iter()
            .flat_map(|v| v.figures)
            .find(|f| f.0.contains(title))
            .unwrap_or_else(|| panic!("no {title} chart"))
            .1
    };
    let users = "transactions per second vs virtual users";
    assert!(!chart(std::slice::from_ref(&clean), users).contains('⚠'));
    let svg = chart(std::slice::from_ref(&warned), users);
    assert!(svg.contains('⚠') && svg.contains("other_load"), "{svg}");
    let mut other = clean.clone();
    other.id = "pg2".into();
    other.label = Some("pg2".into());
    // The runs' chart has its figures in a table too (a Markdown report had its heading
    // and caption with nothing under them).
    let both = [clean.clone(), other.clone()];
    let beside = report::views::views(&both, "oltp")
        .into_iter()
        .find(|v| v.title.contains("run beside run"))
        .expect("the runs' view");
    let t = &beside.tables[0];
    assert_eq!(t.head.len(), 3, "{:?}", t.head);
    assert_eq!(t.head[0], "Virtual users");
    assert!(
        t.rows.len() > 1 && t.rows.iter().all(|r| r[1] == r[2]),
        "{:?}",
        t.rows
    );
    let m = report::markdown(&both, None);
    assert!(
        m.contains("Transactions per second at each virtual-user count"),
        "{m}"
    );
    // A point the chart marks is marked in the table too.
    let marked = report::views::views(&[warned.clone(), other.clone()], "oltp")
        .into_iter()
        .find(|v| v.title.contains("run beside run"))
        .unwrap();
    let cells: Vec<&String> = marked.tables[0].rows.iter().map(|r| &r[1]).collect();
    assert_eq!(
        cells.iter().filter(|c| c.ends_with(" ⚠")).count(),
        1,
        "{cells:?}"
    );
    assert!(marked.tables[0].rows.iter().all(|r| !r[2].contains('⚠')));
    assert!(marked
        .notes
        .iter()
        .any(|n| n.starts_with("⚠: a point whose results")));
    let svg = chart(&[warned, other], "vs concurrent users, all runs");
    assert!(svg.contains('⚠') && svg.contains("other_load"), "{svg}");
    // A small count is whole, not three significant digits (`91.0`).
    let mut small = r.clone();
    for res in &mut small.results {
        for m in &mut res.metrics {
            if m.name == "transactions" {
                m.value = 91.0;
            }
        }
    }
    let m = report::markdown(&[small], None);
    assert!(m.contains("| new\\_order | 91 |"), "{m}");
}

/// Seed 003's latency view: with `--latency-thresholds`, the table puts each run (or
/// variant) side by side in columns, a row per threshold, and the chart shows the share
/// over each of the user's thresholds (not 1-2-5 buckets of its own).
#[test]
fn latency_thresholds_side_by_side_in_the_table_and_the_chart() {
    let mut runs = common::two_platforms();
    for run in runs.iter_mut() {
        for r in run.results.iter_mut() {
            r.params.insert(
                "latency_thresholds".into(),
                serde_json::json!(["40us", "100us", "360us", "1ms"]),
            );
        }
    }
    let h = report::html(&runs, None);
    let start = h
        .find("Share of operations slower than each threshold")
        .expect("the threshold table");
    let table = &h[start..start + h[start..].find("</table>").unwrap()];
    for t in ["&gt; 40 us", "&gt; 100 us", "&gt; 360 us", "&gt; 1 ms"] {
        assert!(table.contains(t), "{t} row missing: {table}");
    }
    let labels = report::derive::run_labels(&runs);
    let header = &table[..table.find("</tr>").unwrap()];
    for l in &labels {
        assert!(header.contains(l.as_str()), "{l} is not a column: {header}");
    }
    let charts = report::charts::charts(&runs);
    let buckets: Vec<_> = charts
        .iter()
        .filter(|c| c.file.contains("_buckets_"))
        .collect();
    assert!(!buckets.is_empty());
    for c in buckets {
        assert!(
            c.title.contains("over each latency threshold"),
            "{}",
            c.title
        );
        let svg = c.svg.as_deref().unwrap();
        assert!(
            svg.contains("&gt; 360 us") || svg.contains("> 360 us"),
            "{}",
            c.title
        );
    }
}

/// Acceptance pass F, F8: the threshold table ignored the thresholds the runs stored when
/// they were the defaults (kv's 100us, 1ms, 8ms in `settings`, not typed in `params`) and
/// drew 1-2-5 steps: the stored ones are the rows, those of every run (one stored before
/// settings were kept gives its shares' `over` labels).
#[test]
fn latency_threshold_rows_are_the_stored_defaults() {
    let mut runs = common::two_platforms();
    for r in runs[0].results.iter_mut() {
        r.params.remove("latency_thresholds");
        r.settings.insert(
            "latency_thresholds".into(),
            serde_json::json!(["100us", "1ms", "8ms"]),
        );
    }
    for r in runs[1].results.iter_mut() {
        r.params.remove("latency_thresholds");
        r.settings.clear();
        r.metrics.push(
            model::Metric::new("latency_pct_over", 0.5, "%")
                .label("kind", "service")
                .label("over", "64ms"),
        );
    }
    let groups = report::charts::thresholds(&runs, &report::Selection::default());
    assert!(!groups.is_empty());
    for g in &groups {
        let rows: Vec<&str> = g
            .rows
            .iter()
            .map(|r| r.0.as_str())
            .filter(|r| r.starts_with('>'))
            .collect();
        assert_eq!(
            rows,
            ["> 100 us", "> 1 ms", "> 8 ms", "> 64 ms"],
            "{}",
            g.test
        );
    }
    let m = report::markdown(&runs, None);
    assert!(m.contains("| &gt; 8 ms |"), "{m}");
    let h = report::html(&runs, None);
    assert!(h.contains("&gt; 8 ms") && h.contains("&gt; 64 ms"));
}

/// The per-transaction p95 column is the true 95th percentile: the stored
/// `latency_p95_ns`, else (a run stored before it existed) the 0.95 quantile of the
/// stored histogram of the same kind, never the p90.
#[test]
fn oltp_p95_is_the_histograms() {
    let mut h = model::hist::new_latency_histogram();
    for v in 1..=100u64 {
        h.record(v * 1_000_000).unwrap();
    }
    let p95 = report::fmt::latency_ns(h.value_at_quantile(0.95) as f64);
    let p90 = report::fmt::latency_ns(h.value_at_quantile(0.90) as f64);
    assert_ne!(p95, p90);
    let result = |with_p95: bool| {
        let mut m = vec![
            Metric::new("nopm", 1000.0, "new orders/min"),
            Metric::new("tpm", 2500.0, "transactions/min"),
            Metric::new("transactions", 100.0, "transactions").label("txn", "new_order"),
        ];
        let mut lat = vec![
            ("latency_p50_ns", 50e6),
            ("latency_p90_ns", h.value_at_quantile(0.90) as f64),
        ];
        if with_p95 {
            lat.push(("latency_p95_ns", h.value_at_quantile(0.95) as f64));
        }
        for (name, v) in lat {
            m.push(
                Metric::new(name, v, "ns")
                    .label("txn", "new_order")
                    .label("kind", "service"),
            );
        }
        ("tpcc", serde_json::json!({}), m)
    };
    let p95_cell = |m: &str| {
        let head = m
            .lines()
            .find(|l| l.contains("| Transaction |"))
            .unwrap_or_else(|| panic!("{m}"));
        assert!(head.contains("| p95 |") && !head.contains("p90"), "{head}");
        let row = m
            .lines()
            .find(|l| l.contains("| new\\_order |"))
            .unwrap_or_else(|| panic!("{m}"));
        let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
        cells[5].to_string()
    };
    for with_p95 in [true, false] {
        let mut r = run("my", "oltp", vec![result(with_p95)]);
        // A corrected histogram first: the service one is the kind the figures are of.
        let mut other = model::hist::new_latency_histogram();
        other.record(7).unwrap();
        r.results[0].histograms = vec![
            model::HistogramRecord::from_histogram("new_order", "corrected", &other),
            model::HistogramRecord::from_histogram("new_order", "service", &h),
        ];
        let m = report::markdown(std::slice::from_ref(&r), None);
        assert_eq!(p95_cell(&m), p95, "with the metric: {with_p95}");
    }
    // Neither the metric nor a histogram: shown as absent, not as the p90.
    let mut r = run("my", "oltp", vec![result(false)]);
    r.results[0].histograms.clear();
    let m = report::markdown(std::slice::from_ref(&r), None);
    assert_eq!(p95_cell(&m), "-");
}

/// A per-database TPM only the client counted (MariaDB's server counts commits
/// server-wide) fills the per-database TPM column, marked client-counted and explained;
/// the server's own per-database count (PostgreSQL) is shown unmarked.
#[test]
fn oltp_a_client_counted_per_database_tpm_is_marked() {
    let result = |server_per_db: bool| {
        let mut m = vec![
            Metric::new("nopm", 1000.0, "new orders/min"),
            Metric::new("tpm", 2500.0, "transactions/min"),
        ];
        for db in 1..=2 {
            m.push(Metric::new("nopm", 500.0, "new orders/min").label("db", db));
            m.push(
                Metric::new(
                    "tpm_client",
                    1200.0 + db as f64,
                    "transactions/min (client-counted)",
                )
                .label("db", db),
            );
            if server_per_db {
                m.push(Metric::new("tpm", 1300.0 + db as f64, "transactions/min").label("db", db));
            }
        }
        ("tpcc", serde_json::json!({ "databases": 2 }), m)
    };
    let m = report::markdown(&[run("my", "oltp", vec![result(false)])], None);
    assert!(
        m.contains("| tpcc | 1 | 500 | 1,201 (client-counted) |"),
        "{m}"
    );
    assert!(
        m.contains("| tpcc | 2 | 500 | 1,202 (client-counted) |"),
        "{m}"
    );
    assert!(
        m.contains("client's count of committed and rolled-back"),
        "{m}"
    );
    let m = report::markdown(&[run("pg", "oltp", vec![result(true)])], None);
    assert!(m.contains("| tpcc | 1 | 500 | 1,301 |"), "{m}");
    assert!(!m.contains("client-counted"), "{m}");
}

/// The oltp view takes a sweep point's valid repetitions only (an interrupted one, or one
/// flagged invalid, is left out and named), and its per-transaction latency is the
/// merge of their histograms, never an average of their percentiles; without a
/// histogram to merge, each repetition's own figures are shown side by side.
#[test]
fn oltp_uses_valid_repetitions_and_merges_their_histograms() {
    let hist = |values: &[(u64, u64)]| {
        let mut h = model::hist::new_latency_histogram();
        for (ms, n) in values {
            h.record_n(ms * 1_000_000, *n).unwrap();
        }
        h
    };
    // Repetition 0: mostly 1 ms with a 10 ms tail; repetition 1: 2 ms throughout. Merged,
    // the p50 is 2 ms and the p99 10 ms; their averages would be 1.5 ms and 6 ms.
    let reps = [
        (40_000.0, hist(&[(1, 900), (10, 100)])),
        (44_000.0, hist(&[(2, 1000)])),
        (1_000.0, hist(&[(500, 1000)])),
        (99_000.0, hist(&[(50, 1000)])),
    ];
    let results = reps
        .iter()
        .map(|(nopm, h)| {
            let mut m = vec![
                Metric::new("nopm", *nopm, "new orders/min"),
                Metric::new("tpm", nopm * 2.0, "transactions/min"),
                Metric::new("transactions", 1000.0, "transactions").label("txn", "new_order"),
            ];
            for (name, v) in [
                ("latency_mean_ns", h.mean()),
                ("latency_p50_ns", h.value_at_quantile(0.5) as f64),
                ("latency_p95_ns", h.value_at_quantile(0.95) as f64),
                ("latency_p99_ns", h.value_at_quantile(0.99) as f64),
            ] {
                m.push(
                    Metric::new(name, v, "ns")
                        .label("txn", "new_order")
                        .label("kind", "service"),
                );
            }
            ("tpcc", serde_json::json!({}), m)
        })
        .collect();
    let mut r = run("my", "oltp", results);
    for (i, res) in r.results.iter_mut().enumerate() {
        res.repetition = i as u32;
        res.histograms = vec![model::HistogramRecord::from_histogram(
            "new_order",
            "service",
            &reps[i].1,
        )];
    }
    r.results[2].status = model::Status::Interrupted;
    r.results[3].flags.push(model::Flag::invalid(
        "consistency",
        "the consistency check failed",
    ));
    let row = |m: &str, first: &str| -> Vec<String> {
        let line = m
            .lines()
            .find(|l| l.starts_with(&format!("| {first} |")))
            .unwrap_or_else(|| panic!("no row {first}: {m}"));
        line.trim_matches('|')
            .split(" | ")
            .map(|c| c.trim().to_string())
            .collect()
    };
    let m = report::markdown(std::slice::from_ref(&r), None);
    // NOPM and TPM: the mean of the two valid repetitions, n = 2.
    assert_eq!(row(&m, "tpcc")[1..3], ["42,000", "84,000"], "{m}");
    assert_eq!(row(&m, "tpcc")[5], "2", "{m}");
    let mut merged = reps[0].1.clone();
    merged.add(&reps[1].1).unwrap();
    let ns = |v: f64| report::fmt::latency_ns(v);
    let lat = row(&m, "tpcc | new\\_order");
    assert_eq!(
        lat[3..],
        [
            ns(merged.mean()),
            ns(merged.value_at_quantile(0.5) as f64),
            ns(merged.value_at_quantile(0.95) as f64),
            ns(merged.value_at_quantile(0.99) as f64),
        ],
        "{m}"
    );
    assert!(lat[6].starts_with("10."), "p99 of the merge: {lat:?}");
    assert!(
        m.contains("step 2 (interrupted)") && m.contains("step 3 (flagged invalid)"),
        "{m}"
    );

    // No histogram to merge: each valid repetition's own figures, never their mean.
    for res in &mut r.results {
        res.histograms.clear();
    }
    let m = report::markdown(std::slice::from_ref(&r), None);
    let lat = row(&m, "tpcc | new\\_order");
    let p99 = |h: &hdrhistogram::Histogram<u64>| ns(h.value_at_quantile(0.99) as f64);
    assert_eq!(
        lat[6],
        format!("{} / {}", p99(&reps[0].1), p99(&reps[1].1)),
        "{m}"
    );
    assert!(m.contains("Latency shown per repetition"), "{m}");
}

/// The TPC-C consistency check's outcome is said in so many words: failed (where, and
/// that those results are invalid), could not run, not asked for, or passed; a passing
/// check leaves no flag, so without this nothing said it ran.
#[test]
fn oltp_consistency_check_outcome_is_said() {
    let tpcc = |nopm: f64| {
        (
            "tpcc",
            serde_json::json!({}),
            vec![Metric::new("nopm", nopm, "new orders/min")],
        )
    };
    let mut r = run("my", "oltp", vec![tpcc(1000.0), tpcc(1100.0)]);
    for res in &mut r.results {
        res.flags.clear();
        res.status = model::Status::Ok;
    }
    let notes = |r: &RunRecord| -> Vec<String> {
        let v = report::views::console_views(r);
        let c = v
            .iter()
            .find(|v| v.title.contains("consistency check"))
            .expect("a consistency view");
        c.notes.clone()
    };
    assert_eq!(
        notes(&r),
        ["Passed: no condition failed after any sweep point."]
    );
    let md = report::markdown(std::slice::from_ref(&r), None);
    assert!(
        md.contains("TPC-C consistency check (clause 3.3.2)"),
        "{md}"
    );
    assert!(md.contains("Passed: no condition failed"), "{md}");

    let mut failed = r.clone();
    failed.results[1].flags.push(model::Flag::invalid(
        "consistency",
        "database 1: TPC-C consistency condition 2 (d_next_o_id) fails for 3 rows",
    ));
    assert_eq!(
        notes(&failed),
        [
            "FAILED at step 1: database 1: TPC-C consistency condition 2 (d_next_o_id) fails \
             for 3 rows; those results are invalid.",
            "Passed at step 0: no condition failed.",
        ]
    );
    let mut unchecked = r.clone();
    unchecked.results[1].status = model::Status::Failed;
    unchecked.results[0].flags.push(model::Flag::warning(
        "consistency_not_checked",
        "the consistency check could not run: connection refused",
    ));
    assert_eq!(
        notes(&unchecked),
        [
            "Not checked at step 0: the consistency check could not run: connection refused; \
             those figures stand unverified.",
            "Not checked at step 1: the test did not complete, or the run ended before its \
             sweep point's check.",
        ]
    );
    // Stopped after its repetitions but before the point's check: never checked, not
    // passed (a passing check leaves no flag either).
    let mut stopped = r.clone();
    stopped.status = model::Status::Interrupted;
    assert_eq!(
        notes(&stopped),
        [
            "Not checked at steps 0,1: the test did not complete, or the run ended before its \
          sweep point's check."
        ]
    );
    let mut off = r.clone();
    off.plan = serde_json::json!({"workload": "oltp", "params": {"check": "false"}});
    assert_eq!(
        notes(&off),
        ["Not run: the run was made with --check false."]
    );
    // Other workloads have no such view; a capacity test's steps are a console view.
    assert!(report::views::console_views(&net_run()).is_empty());
    let titles: Vec<String> = report::views::console_views(&capacity_run(true))
        .into_iter()
        .map(|v| v.title)
        .collect();
    assert_eq!(
        titles,
        [
            "kv capacity ramp",
            "kv latency-objective search",
            "kv load levels"
        ]
    );
}

/// `--requests-per-connection 1`: httperf's connection time (min, mean, median, p99, max,
/// stddev, with the count) has its view, beside the requests' latency and never in it;
/// a run kept alive has no such view.
#[test]
fn connect_times_have_their_view_and_stay_out_of_request_latency() {
    let hist = |values_us: &[u64]| {
        let mut h = model::hist::new_latency_histogram();
        for v in values_us {
            h.record(v * 1000).unwrap();
        }
        h
    };
    let mut r = run(
        "h",
        "http",
        vec![
            (
                "load",
                serde_json::json!({"requests_per_connection": 1}),
                vec![Metric::new("requests_per_s", 9000.0, "req/s")],
            ),
            (
                "load",
                serde_json::json!({"requests_per_connection": 0}),
                vec![Metric::new("requests_per_s", 40000.0, "req/s")],
            ),
        ],
    );
    let request = hist(&[100, 100, 100, 100]);
    let kind = model::hist::CONNECT_KIND;
    for res in &mut r.results {
        res.histograms = vec![model::HistogramRecord::from_histogram(
            "get", "service", &request,
        )];
    }
    r.results[0].histograms.insert(
        0,
        model::HistogramRecord::from_histogram(kind, kind, &hist(&[30, 40, 5000])),
    );
    let h = report::html(std::slice::from_ref(&r), None);
    assert!(h.contains("http connect time"), "{h}");
    let m = report::markdown(std::slice::from_ref(&r), None);
    assert!(
        m.contains("| load requests\\_per\\_connection=1 | 3 | 30.0 us | 1.690 ms | 40.0 us |"),
        "{m}"
    );
    assert!(m.contains("1 other point(s) opened no connection"), "{m}");
    // The requests' latency is the requests' alone, whichever histogram comes first.
    let p = report::derive::points(0, &r);
    let (kind_of, names, lat) = p[0].latency().unwrap();
    assert_eq!(
        (kind_of.as_str(), names),
        ("service", vec!["get".to_string()])
    );
    assert_eq!(lat.len(), 4);
    assert_eq!(p[0].connect_time().map(|h| h.len()), Some(3));
    assert_eq!(p[1].connect_time(), None);
    // Kept alive everywhere: no connect-time view.
    r.results.remove(0);
    let h = report::html(&[r], None);
    assert!(!h.contains("connect time"), "{h}");
}

/// A summary row whose headline the workload could not measure (mem's RAM latency on a
/// host whose caches the sweep did not exceed) says why under the table, not a bare `-`.
#[test]
fn a_missing_headline_says_why_in_the_summary() {
    let mut r = run(
        "mem-x",
        "mem",
        vec![(
            "latency",
            serde_json::json!({}),
            vec![Metric::new("latency_ns", 1.2, "ns").label("level", "L1")],
        )],
    );
    r.results[0].headline = "ram_latency_ns".into();
    r.results[0].missing.push(MissingMetric {
        name: "ram_latency_ns".into(),
        reason: "no plateau beyond the last cache: raise --max-size".into(),
    });
    let why = "ram_latency_ns: no plateau beyond the last cache: raise --max-size";
    let m = report::markdown(std::slice::from_ref(&r), None);
    assert!(m.contains("absent§"), "{m}");
    // Markdown escapes the underscores.
    assert!(
        m.contains(&format!("absent for mem-x: {}", why.replace('_', "\\_"))),
        "{m}"
    );
    let h = report::html(&[r], None);
    assert!(h.contains("absent&sect;"), "{h}");
    assert!(h.contains(&format!("absent for mem-x: {why}")), "{h}");
}

/// A ramp step far behind its schedule is marked by its late share, beside its stored
/// verdict, and a ramp without power per step has no column of dashes but says why
/// (acceptance pass K, 7).
#[test]
fn ramp_rows_show_their_late_share_and_verdict() {
    let mut r = capacity_run(false);
    let ramp = r.results.iter_mut().find(|res| res.test == "ramp").unwrap();
    for m in ramp.metrics.iter_mut().filter(|m| {
        m.name == "demanded_rate_per_s" && m.labels.get("step").map(String::as_str) == Some("2")
    }) {
        m.labels.insert("verdict".into(), "saturated".into());
    }
    ramp.metrics.push(
        Metric::new("late_pct", 100.0 * 1396.0 / 2005.0, "%")
            .label("phase", "ramp")
            .label("step", 2),
    );
    let h = report::html(std::slice::from_ref(&r), None);
    let table = &h[h.find("<caption>Ramp steps").unwrap()..];
    let table = &table[..table.find("</table>").unwrap()];
    assert!(table.contains("<th>Late %</th>") && table.contains("<th>Verdict</th>"));
    // (1391 + 5) / (2000 + 5)
    assert!(table.contains("<td class=\"n\">69.6</td>"), "{table}");
    assert!(table.contains("saturated"), "{table}");
    assert!(!table.contains("Power W"), "{table}");
    assert!(h.contains("No power per step: "), "{h}");
    let ramp = r.results.iter_mut().find(|res| res.test == "ramp").unwrap();
    ramp.metrics.push(
        Metric::new("power_w", 212.0, "W")
            .label("phase", "ramp")
            .label("step", 0),
    );
    let h = report::html(&[r], None);
    assert!(h.contains("<th>Power W</th>") && !h.contains("No power per step"));
}

/// net's TCP and UDP tests are different measurements: no geometric mean across them
/// (acceptance pass K, 9).
#[test]
fn no_geometric_mean_across_nets_tests() {
    let m = report::markdown(&[net_run()], None);
    assert!(m.contains("no geometric mean: net's tests"), "{m}");
    assert!(!m.contains("**Geometric mean**"), "{m}");
}

/// `--streams N`: the net table gives each test's slowest and fastest stream beside its
/// total (iperf3 prints each stream above its [SUM]; only the total was kept), in the
/// total's unit; a test of several streams stored before they were kept reads "not
/// stored", with why; a run of one stream has no such column.
#[test]
fn net_streams_slowest_and_fastest_beside_the_total() {
    let stream =
        |i: usize, g: f64| Metric::new(model::STREAM_THROUGHPUT, g, "Gbit/s").label("stream", i);
    let mut r = net_run();
    assert!(!report::markdown(std::slice::from_ref(&r), None).contains("Streams, slowest"));
    r.results[0]
        .settings
        .insert("streams".into(), serde_json::json!(4));
    r.results[0].metrics.extend([
        stream(0, 3.71),
        stream(1, 4.02),
        stream(2, 3.9),
        stream(3, 3.94),
        // The sender's are its own, not the received spread.
        Metric::new(model::STREAM_THROUGHPUT, 9.0, "Gbit/s")
            .label("stream", 0)
            .label("end", "sender"),
    ]);
    r.results[1]
        .settings
        .insert("streams".into(), serde_json::json!(2));
    let m = report::markdown(std::slice::from_ref(&r), None);
    assert!(
        m.contains("| Throughput | Streams, slowest – fastest (received) |"),
        "{m}"
    );
    assert!(
        m.contains("| tcp | 15.57 Gbit/s | 3.71 Gbit/s – 4.02 Gbit/s | 61.5 |"),
        "{m}"
    );
    assert!(m.contains("| udp1472 | 1.72 Gbit/s | not stored |"), "{m}");
    assert!(
        m.contains("not stored: a test of several streams stored by a rackbench before"),
        "{m}"
    );
    let h = report::html(std::slice::from_ref(&r), None);
    assert!(h.contains(">3.71 Gbit/s – 4.02 Gbit/s<"));
}

/// Two mem runs labelled `Arm 1` and `arm-1` titled their latency figures alike in file
/// names: the second file was written over the first and listed twice.
#[test]
fn view_figures_of_labels_that_slug_alike_get_files_of_their_own() {
    let mut a = mem_run();
    a.label = Some("Arm 1".into());
    let mut b = mem_run();
    b.id = format!("{}-b", b.id);
    b.label = Some("arm-1".into());
    let names: Vec<String> = report::svg_charts(&[a, b])
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let views: Vec<&String> = names.iter().filter(|n| n.starts_with("view_")).collect();
    assert!(views.len() >= 2, "{names:?}");
    assert!(names
        .iter()
        .any(|n| n == "view_arm_1_memory_latency_vs_working_set_2.svg"));
    let unique: std::collections::HashSet<&String> = names.iter().collect();
    assert_eq!(unique.len(), names.len(), "{names:?}");
}
