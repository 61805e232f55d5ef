//! A load outcome as it crosses a host boundary, and the exact merge of several
//! generators' outcomes into one.
//!
//! Histograms travel whole (HdrHistogram V2, as stored), so the merge adds counts
//! bucket by bucket: the merged percentiles are those of the union of every
//! generator's samples, never an average of percentiles.

use std::collections::BTreeMap;

use model::hist::CONNECT_KIND;
use model::HistogramRecord;
use serde::{Deserialize, Serialize};

use crate::load::{ClassStats, LoadOutcome};

#[derive(Debug, Clone, Serialize, Deserialize)]
struct WireClass {
    name: String,
    count: u64,
    ok: u64,
    hits: u64,
    misses: u64,
    mismatches: u64,
    rollbacks: u64,
    errors: BTreeMap<String, u64>,
    service: HistogramRecord,
    corrected: Option<HistogramRecord>,
}

/// [`LoadOutcome`] as plain data.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireOutcome {
    classes: Vec<WireClass>,
    duration_s: f64,
    interval_rates: Vec<f64>,
    offered_rate: Option<f64>,
    late_sends: u64,
    #[serde(default)]
    generator_late_sends: u64,
    #[serde(default)]
    unsent_requests: u64,
    connection_errors: BTreeMap<String, u64>,
    #[serde(default)]
    lost_requests: BTreeMap<String, u64>,
    reconnects: u64,
    /// The connect times, whole ([`model::hist::CONNECT_KIND`]); absent from a generator
    /// of an older version, and when none was timed.
    #[serde(default)]
    connect: Option<HistogramRecord>,
    bytes_tx: u64,
    bytes_rx: u64,
    loadgen_cpu_user_s: f64,
    loadgen_cpu_sys_s: f64,
    stopped_early: Option<String>,
    #[serde(default)]
    client_io_fallback: Option<String>,
}

impl From<&LoadOutcome> for WireOutcome {
    fn from(o: &LoadOutcome) -> Self {
        WireOutcome {
            classes: o
                .classes
                .iter()
                .map(|c| WireClass {
                    name: c.name.clone(),
                    count: c.count,
                    ok: c.ok,
                    hits: c.hits,
                    misses: c.misses,
                    mismatches: c.mismatches,
                    rollbacks: c.rollbacks,
                    errors: c.errors.clone(),
                    service: HistogramRecord::from_histogram(&c.name, "service", &c.service),
                    corrected: c
                        .corrected
                        .as_ref()
                        .map(|h| HistogramRecord::from_histogram(&c.name, "corrected", h)),
                })
                .collect(),
            duration_s: o.duration_s,
            interval_rates: o.interval_rates.clone(),
            offered_rate: o.offered_rate,
            late_sends: o.late_sends,
            generator_late_sends: o.generator_late_sends,
            unsent_requests: o.unsent_requests,
            connection_errors: o.connection_errors.clone(),
            lost_requests: o.lost_requests.clone(),
            reconnects: o.reconnects,
            connect: o
                .connect
                .as_ref()
                .map(|h| HistogramRecord::from_histogram(CONNECT_KIND, CONNECT_KIND, h)),
            bytes_tx: o.bytes_tx,
            bytes_rx: o.bytes_rx,
            loadgen_cpu_user_s: o.loadgen_cpu_user_s,
            loadgen_cpu_sys_s: o.loadgen_cpu_sys_s,
            stopped_early: o.stopped_early.clone(),
            client_io_fallback: o.client_io_fallback.clone(),
        }
    }
}

impl TryFrom<WireOutcome> for LoadOutcome {
    type Error = anyhow::Error;
    fn try_from(w: WireOutcome) -> anyhow::Result<LoadOutcome> {
        let mut classes = Vec::with_capacity(w.classes.len());
        for c in w.classes {
            let service = c.service.histogram().map_err(anyhow::Error::msg)?;
            let corrected = match &c.corrected {
                Some(h) => Some(h.histogram().map_err(anyhow::Error::msg)?),
                None => None,
            };
            classes.push(ClassStats {
                name: c.name,
                count: c.count,
                ok: c.ok,
                hits: c.hits,
                misses: c.misses,
                mismatches: c.mismatches,
                rollbacks: c.rollbacks,
                errors: c.errors,
                service,
                corrected,
            });
        }
        Ok(LoadOutcome {
            classes,
            duration_s: w.duration_s,
            interval_rates: w.interval_rates,
            offered_rate: w.offered_rate,
            late_sends: w.late_sends,
            generator_late_sends: w.generator_late_sends,
            unsent_requests: w.unsent_requests,
            connection_errors: w.connection_errors,
            lost_requests: w.lost_requests,
            reconnects: w.reconnects,
            connect: match &w.connect {
                Some(h) => Some(h.histogram().map_err(anyhow::Error::msg)?),
                None => None,
            },
            bytes_tx: w.bytes_tx,
            bytes_rx: w.bytes_rx,
            loadgen_cpu_user_s: w.loadgen_cpu_user_s,
            loadgen_cpu_sys_s: w.loadgen_cpu_sys_s,
            stopped_early: w.stopped_early,
            client_io_fallback: w.client_io_fallback,
        })
    }
}

/// How the generators of one test ended, which says how long the merged test lasted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Span {
    /// After one duration, behind one start barrier: their measured windows are one by
    /// design, and the merged throughput is the sum of theirs.
    Together,
    /// Each after its share of a count, at its own time: the test lasted this many
    /// seconds, the union of their measured windows on the controller's clock
    /// ([`crate::spread::window_union_s`]), and the merged throughput is the requests
    /// over that wall time, as redis-benchmark's (requests / wall time of the whole test).
    Union(f64),
}

/// Merge the outcomes of generators that ran the same test at the same time (behind
/// one start barrier): counts and histograms add exactly, interval rates add interval
/// by interval over the intervals every generator has, CPU time adds. The merged duration is the test's `span`: for a test
/// stopped by a duration, the one at which the merged count gives the sum of the
/// generators' throughputs (each over its own window); for a test stopped by a count,
/// the union of their windows. A lone generator's duration is its own.
pub fn merge(outcomes: Vec<LoadOutcome>, span: Span) -> Option<LoadOutcome> {
    let lone = outcomes.len() == 1;
    let mut it = outcomes.into_iter();
    let first = it.next()?;
    let mut rate_sum = first.throughput();
    let mut acc = first;
    for o in it {
        rate_sum += o.throughput();
        for c in &o.classes {
            match acc.classes.iter_mut().find(|a| a.name == c.name) {
                Some(a) => a.add(c),
                None => acc.classes.push(c.clone()),
            }
        }
        // Each generator's series ends at its last whole interval (its last reply just
        // before a whole second cuts that second): an interval one generator has and
        // another cut holds only part of the load, not the whole's rate.
        acc.interval_rates.truncate(o.interval_rates.len());
        for (a, r) in acc.interval_rates.iter_mut().zip(&o.interval_rates) {
            *a += r;
        }
        acc.offered_rate = match (acc.offered_rate, o.offered_rate) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        acc.late_sends += o.late_sends;
        acc.generator_late_sends += o.generator_late_sends;
        acc.unsent_requests += o.unsent_requests;
        for (k, v) in &o.connection_errors {
            *acc.connection_errors.entry(k.clone()).or_insert(0) += v;
        }
        for (k, v) in &o.lost_requests {
            *acc.lost_requests.entry(k.clone()).or_insert(0) += v;
        }
        acc.reconnects += o.reconnects;
        crate::sched::add_connect(&mut acc.connect, o.connect);
        acc.bytes_tx += o.bytes_tx;
        acc.bytes_rx += o.bytes_rx;
        acc.loadgen_cpu_user_s += o.loadgen_cpu_user_s;
        acc.loadgen_cpu_sys_s += o.loadgen_cpu_sys_s;
        if acc.stopped_early.is_none() {
            acc.stopped_early = o.stopped_early;
        }
        if acc.client_io_fallback.is_none() {
            acc.client_io_fallback = o.client_io_fallback;
        }
    }
    if !lone {
        match span {
            Span::Together => {
                let total = acc.total_count() as f64;
                if rate_sum > 0.0 {
                    acc.duration_s = total / rate_sum;
                }
            }
            Span::Union(s) => acc.duration_s = s,
        }
    }
    Some(acc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::hist::new_latency_histogram;

    fn outcome(samples: &[u64], duration_s: f64) -> LoadOutcome {
        let mut c = ClassStats::new("get", false);
        for &v in samples {
            c.service.record(v).unwrap();
            c.count += 1;
            c.ok += 1;
        }
        LoadOutcome {
            classes: vec![c],
            duration_s,
            interval_rates: vec![samples.len() as f64 / duration_s],
            offered_rate: None,
            late_sends: 0,
            generator_late_sends: 0,
            unsent_requests: 0,
            connection_errors: BTreeMap::new(),
            lost_requests: BTreeMap::new(),
            reconnects: 0,
            connect: None,
            bytes_tx: 0,
            bytes_rx: 0,
            loadgen_cpu_user_s: 0.5,
            loadgen_cpu_sys_s: 0.25,
            stopped_early: None,
            client_io_fallback: None,
        }
    }

    /// The merged histogram's percentiles are those of the union of the samples, and not
    /// the average of each generator's percentiles (a fast generator and a slow one).
    #[test]
    fn merged_percentiles_are_those_of_the_union_not_averages() {
        let fast: Vec<u64> = (1..=9_000).map(|i| 10_000 + i).collect(); // ~10 us
        let slow: Vec<u64> = (1..=1_000).map(|i| 1_000_000 + 100 * i).collect(); // ~1 ms
        let a = outcome(&fast, 1.0);
        let b = outcome(&slow, 1.0);
        // Through the wire form, as the hosts send them.
        let wire = |o: &LoadOutcome| {
            let text = serde_json::to_string(&WireOutcome::from(o)).unwrap();
            LoadOutcome::try_from(serde_json::from_str::<WireOutcome>(&text).unwrap()).unwrap()
        };
        let merged = merge(vec![wire(&a), wire(&b)], Span::Together).unwrap();
        let mut union = new_latency_histogram();
        for v in fast.iter().chain(&slow) {
            union.record(*v).unwrap();
        }
        let m = &merged.classes[0].service;
        assert_eq!(m.len(), 10_000);
        for q in [0.5, 0.9, 0.95, 0.99, 0.999, 1.0] {
            assert_eq!(m.value_at_quantile(q), union.value_at_quantile(q), "q={q}");
        }
        // Averaging the two p99s would say ~0.55 ms; the union's p99 is ~1 ms.
        let avg_p99 = (a.classes[0].service.value_at_quantile(0.99)
            + b.classes[0].service.value_at_quantile(0.99))
            / 2;
        let p99 = m.value_at_quantile(0.99);
        assert!(
            (p99 as f64 - avg_p99 as f64).abs() / (p99 as f64) > 0.3,
            "merged p99 {p99} vs averaged {avg_p99}"
        );
        // Throughput and CPU add.
        assert!((merged.throughput() - 10_000.0).abs() < 1e-6);
        assert!((merged.loadgen_cpu_user_s - 1.0).abs() < 1e-9);
        assert_eq!(merged.interval_rates, vec![10_000.0]);
    }

    /// The connect times travel whole and merge exactly; a generator that timed none
    /// (kept alive, or an older version without the field) adds nothing.
    #[test]
    fn connect_times_cross_the_wire_and_merge_exactly() {
        let wire = |o: &LoadOutcome| {
            let text = serde_json::to_string(&WireOutcome::from(o)).unwrap();
            LoadOutcome::try_from(serde_json::from_str::<WireOutcome>(&text).unwrap()).unwrap()
        };
        let timed = |us: &[u64]| {
            let mut o = outcome(&[10_000], 1.0);
            let mut h = new_latency_histogram();
            for v in us {
                h.record(v * 1000).unwrap();
            }
            o.connect = Some(h);
            o
        };
        let kept = outcome(&[10_000], 1.0);
        let merged = merge(
            vec![wire(&timed(&[30, 40])), wire(&kept), wire(&timed(&[5000]))],
            Span::Together,
        )
        .unwrap();
        let h = merged.connect.unwrap();
        assert_eq!(
            (h.len(), h.min(), h.max()),
            (3, 30_000, h.highest_equivalent(5_000_000))
        );
        // Older generators' reports carry no connect times: none, not an error.
        let mut v = serde_json::to_value(WireOutcome::from(&kept)).unwrap();
        v.as_object_mut().unwrap().remove("connect");
        let old = LoadOutcome::try_from(serde_json::from_value::<WireOutcome>(v).unwrap());
        assert!(old.unwrap().connect.is_none());
    }

    #[test]
    fn a_test_stopped_by_a_count_lasts_the_union_of_the_windows() {
        // Two generators of 5,000 requests, done at 0.5 s and 1 s: the server answered
        // 10,000 in 1 s, not 10,000/s + 5,000/s.
        let a = outcome(&vec![5_000; 5_000], 0.5);
        let b = outcome(&vec![5_000; 5_000], 1.0);
        let m = merge(vec![a.clone(), b], Span::Union(1.0)).unwrap();
        assert_eq!(m.duration_s, 1.0);
        assert!(
            (m.throughput() - 10_000.0).abs() < 1e-6,
            "{}",
            m.throughput()
        );
        // A lone generator's duration is its own, whatever the span.
        let lone = merge(vec![a], Span::Union(7.0)).unwrap();
        assert_eq!(lone.duration_s, 0.5);
    }

    #[test]
    fn interval_rates_merge_over_the_intervals_every_generator_has() {
        // Two generators of a 3 s test at 500/s each: one's last reply came just after
        // 3 s (three whole intervals), the other's just before (two). Padding the short
        // series with a zero read a third second of 500/s: a false minimum, and a
        // stddev of 289 for a steady 1,000/s.
        let mut a = outcome(&vec![5_000; 1_500], 3.001);
        a.interval_rates = vec![500.0, 500.0, 500.0];
        let mut b = outcome(&vec![5_000; 1_500], 2.999);
        b.interval_rates = vec![500.0, 500.0];
        for pair in [vec![a.clone(), b.clone()], vec![b, a]] {
            let m = merge(pair, Span::Together).unwrap();
            assert_eq!(m.interval_rates, vec![1_000.0, 1_000.0]);
        }
    }

    #[test]
    fn throughput_is_the_sum_of_each_generators_rate() {
        // One generator ran 2 s, the other 1 s: 1000/s + 1000/s.
        let a = outcome(&vec![5_000; 2_000], 2.0);
        let b = outcome(&vec![5_000; 1_000], 1.0);
        let m = merge(vec![a, b], Span::Together).unwrap();
        assert!(
            (m.throughput() - 2_000.0).abs() < 1e-6,
            "{}",
            m.throughput()
        );
    }
}
