//! Latency views of one merged HdrHistogram, and the HdrHistogram interval log.
//!
//! A latency figure is more than its p99. This module turns a histogram (nanoseconds, as
//! every rackbench latency histogram is) into the views published studies use:
//! - **threshold buckets**: the share of requests slower than each user threshold
//!   ("11% of requests over 360 us", the Aerospike figure in seeds/003), with the exact
//!   mean (the count-weighted mean the study approximates from its buckets) and the
//!   standard deviation it calls jitter;
//! - the **full percentile spectrum**, iterated the way HdrHistogram's
//!   `outputPercentileDistribution` does (5 ticks per half distance to 100%, METHODS.md 2.3),
//!   so rackbench's table lines up row for row with wrk2's and jHiccup's;
//! - the **interval log** in HdrHistogram's standard text format (v1.3: version and
//!   StartTime/BaseTime headers, legend, `[Tag=..,]start,length,max,base64 V2+DEFLATE`), so
//!   HistogramLogProcessor, HdrHistogram plotters and the Rust reader can open it.
//!
//! Pure functions over `hdrhistogram::Histogram<u64>`; the only I/O is the caller's writer.

use std::fmt::Write as _;
use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};
use hdrhistogram::Histogram;
use model::Metric;

/// Ticks per half distance HdrHistogram uses by default (`outputPercentileDistribution`).
pub const DEFAULT_TICKS_PER_HALF_DISTANCE: u32 = 5;

/// Parse a latency such as `360us`, `1ms`, `500ns` into nanoseconds (see
/// [`model::hist::parse_latency_ns`]; a bare number is refused).
pub fn parse_latency_ns(s: &str) -> anyhow::Result<u64> {
    model::hist::parse_latency_ns(s).map_err(anyhow::Error::msg)
}

/// A workload's `latency_thresholds` in nanoseconds, sorted, without duplicates (the
/// ones that do not parse are left out: the workload's validation refuses them first).
pub fn thresholds_ns(list: &[String]) -> Vec<u64> {
    let mut v: Vec<u64> = list
        .iter()
        .filter_map(|t| parse_latency_ns(t).ok())
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// A workload's `--latency-thresholds` checked: each a latency with its unit, and each
/// once (`1ms,1000us` is one threshold twice, which the table would show once).
pub fn check_thresholds(list: &[String]) -> anyhow::Result<()> {
    let mut seen: Vec<(u64, &str)> = Vec::with_capacity(list.len());
    for t in list {
        let ns = parse_latency_ns(t).context("--latency-thresholds")?;
        if let Some((_, first)) = seen.iter().find(|(n, _)| *n == ns) {
            bail!(
                "--latency-thresholds gives {first} and {t}, one threshold twice: give each once"
            );
        }
        seen.push((ns, t));
    }
    Ok(())
}

/// `360us`-style label for a threshold in nanoseconds (stable, used in metric labels).
pub fn format_ns(ns: u64) -> String {
    if ns >= 1_000_000_000 && ns.is_multiple_of(1_000_000_000) {
        format!("{}s", ns / 1_000_000_000)
    } else if ns >= 1_000_000 && ns.is_multiple_of(1_000_000) {
        format!("{}ms", ns / 1_000_000)
    } else if ns >= 1_000 && ns.is_multiple_of(1_000) {
        format!("{}us", ns / 1_000)
    } else {
        format!("{ns}ns")
    }
}

/// One threshold bucket: how many recorded latencies exceed `threshold_ns`.
#[derive(Debug, Clone, PartialEq)]
pub struct OverThreshold {
    pub threshold_ns: u64,
    pub count_over: u64,
    /// 100 x count_over / total (0 when the histogram is empty).
    pub pct_over: f64,
}

/// The share of requests slower than each threshold. Values within the histogram's
/// resolution (0.1% at 3 significant digits) of a threshold count as equal to it, as in
/// HdrHistogram's own `count_between`.
pub fn over_thresholds(h: &Histogram<u64>, thresholds_ns: &[u64]) -> Vec<OverThreshold> {
    let total = h.len();
    thresholds_ns
        .iter()
        .map(|&t| {
            let at_or_below = if t >= h.low() {
                h.count_between(0, t)
            } else {
                0
            };
            let count_over = total.saturating_sub(at_or_below);
            OverThreshold {
                threshold_ns: t,
                count_over,
                pct_over: if total > 0 {
                    100.0 * count_over as f64 / total as f64
                } else {
                    0.0
                },
            }
        })
        .collect()
}

/// One row of the percentile spectrum (HdrHistogram's `outputPercentileDistribution`).
#[derive(Debug, Clone, PartialEq)]
pub struct PercentileRow {
    pub value_ns: u64,
    /// 0..=100
    pub percentile: f64,
    pub total_count: u64,
    /// 1/(1-p): HdrHistogram's last column (infinite at 100%).
    pub inverted: f64,
}

/// The full percentile spectrum with `ticks_per_half_distance` rows in each half of the
/// remaining distance to 100% (HdrHistogram default: 5), ending with the 100% row.
pub fn percentile_spectrum(h: &Histogram<u64>, ticks_per_half_distance: u32) -> Vec<PercentileRow> {
    if h.is_empty() {
        return Vec::new();
    }
    let mut total = 0u64;
    h.iter_quantiles(ticks_per_half_distance.max(1))
        .map(|v| {
            total += v.count_since_last_iteration();
            let q = v.quantile_iterated_to();
            PercentileRow {
                value_ns: v.value_iterated_to(),
                percentile: q * 100.0,
                total_count: total,
                inverted: if q < 1.0 {
                    1.0 / (1.0 - q)
                } else {
                    f64::INFINITY
                },
            }
        })
        .collect()
}

/// The spectrum as the text table HdrHistogram prints (values scaled to `unit_ratio`, e.g.
/// 1e6 for milliseconds), with its footer (mean, stdev, max, total count, buckets).
pub fn format_spectrum(h: &Histogram<u64>, unit_ratio: f64) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:>12} {:>14} {:>10} {:>14}\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    for r in percentile_spectrum(h, DEFAULT_TICKS_PER_HALF_DISTANCE) {
        if r.inverted.is_finite() {
            let _ = writeln!(
                s,
                "{:>12.3} {:>14.12} {:>10} {:>14.2}",
                r.value_ns as f64 / unit_ratio,
                r.percentile / 100.0,
                r.total_count,
                r.inverted
            );
        } else {
            let _ = writeln!(
                s,
                "{:>12.3} {:>14.12} {:>10}",
                r.value_ns as f64 / unit_ratio,
                r.percentile / 100.0,
                r.total_count
            );
        }
    }
    let _ = writeln!(
        s,
        "#[Mean    = {:>12.3}, StdDeviation   = {:>12.3}]",
        h.mean() / unit_ratio,
        h.stdev() / unit_ratio
    );
    let _ = writeln!(
        s,
        "#[Max     = {:>12.3}, Total count    = {:>12}]",
        h.max() as f64 / unit_ratio,
        h.len()
    );
    let _ = writeln!(
        s,
        "#[Buckets = {:>12}, SubBuckets     = {:>12}]",
        h.buckets(),
        h.distinct_values()
    );
    s
}

/// Metrics for the latency views of one histogram: mean (weighted by count), jitter
/// (standard deviation) and, per threshold, `latency_pct_over` labelled `over=1ms`.
/// `labels` are added to every metric (`kind=corrected`, `step=3`...).
pub fn view_metrics(
    h: &Histogram<u64>,
    thresholds_ns: &[u64],
    labels: &[(&str, String)],
) -> Vec<Metric> {
    let with = |mut m: Metric| {
        for (k, v) in labels {
            m = m.label(*k, v);
        }
        m
    };
    let mut out = Vec::new();
    if h.is_empty() {
        return out;
    }
    out.push(with(Metric::new("latency_mean_ns", h.mean(), "ns")));
    out.push(with(Metric::new("latency_jitter_ns", h.stdev(), "ns")));
    for b in over_thresholds(h, thresholds_ns) {
        out.push(with(
            Metric::new("latency_pct_over", b.pct_over, "%")
                .label("over", format_ns(b.threshold_ns)),
        ));
    }
    out
}

/// Writes an HdrHistogram interval log (format version 1.3) as the Java
/// `HistogramLogWriter` does: comments, version, StartTime, BaseTime, legend, then one
/// line per interval. Interval timestamps are seconds since `start` (BaseTime = StartTime,
/// so readers need no heuristic); `Interval_Max` is in milliseconds for our nanosecond
/// histograms (the Java writer's default max-value unit ratio of 1e6).
pub struct IntervalLogWriter<W: Write> {
    out: W,
    start: SystemTime,
}

/// Max-value unit ratio of the Java writer: nanoseconds in, milliseconds in the max column.
const MAX_VALUE_UNIT_RATIO: f64 = 1e6;

impl<W: Write> IntervalLogWriter<W> {
    /// Write the header. `comment` lines (without `#`) go first, e.g. the command line.
    pub fn new(mut out: W, start: SystemTime, comments: &[&str]) -> anyhow::Result<Self> {
        let start_s = start
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO)
            .as_secs_f64();
        let date = chrono::DateTime::<chrono::Utc>::from(start)
            .format("%a %b %d %H:%M:%S UTC %Y")
            .to_string();
        for c in comments {
            for line in c.lines() {
                writeln!(out, "#{line}")?;
            }
        }
        writeln!(out, "#[Histogram log format version 1.3]")?;
        writeln!(
            out,
            "#[StartTime: {start_s:.3} (seconds since epoch), {date}]"
        )?;
        writeln!(out, "#[BaseTime: {start_s:.3} (seconds since epoch)]")?;
        writeln!(
            out,
            "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""
        )?;
        Ok(IntervalLogWriter { out, start })
    }

    /// When the log starts (interval timestamps are relative to it).
    pub fn start(&self) -> SystemTime {
        self.start
    }

    /// One interval: `offset` since the log's start, its `length`, an optional tag (no
    /// commas, spaces or newlines: HdrHistogram's rule).
    pub fn write_interval(
        &mut self,
        tag: Option<&str>,
        offset: Duration,
        length: Duration,
        h: &Histogram<u64>,
    ) -> anyhow::Result<()> {
        if let Some(t) = tag {
            if t.is_empty() || t.contains([',', ' ', '\r', '\n']) {
                bail!(
                    "interval log tag `{t}` must be non-empty without commas, spaces or newlines"
                );
            }
            write!(self.out, "Tag={t},")?;
        }
        // The stored histogram encoding is exactly the log's: base64 of V2 + DEFLATE.
        let encoded = model::HistogramRecord::from_histogram("interval", "log", h).encoded;
        writeln!(
            self.out,
            "{:.3},{:.3},{:.3},{}",
            offset.as_secs_f64(),
            length.as_secs_f64(),
            h.max() as f64 / MAX_VALUE_UNIT_RATIO,
            encoded
        )?;
        Ok(())
    }

    pub fn flush(&mut self) -> anyhow::Result<()> {
        self.out.flush()?;
        Ok(())
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use model::hist::new_latency_histogram;

    fn hist(values: &[(u64, u64)]) -> Histogram<u64> {
        let mut h = new_latency_histogram();
        for &(v, n) in values {
            h.record_n(v, n).unwrap();
        }
        h
    }

    #[test]
    fn parses_latencies_with_units() {
        assert_eq!(parse_latency_ns("1ms").unwrap(), 1_000_000);
        assert_eq!(parse_latency_ns("360us").unwrap(), 360_000);
        assert_eq!(parse_latency_ns("360µs").unwrap(), 360_000);
        assert_eq!(parse_latency_ns("1.5ms").unwrap(), 1_500_000);
        assert_eq!(parse_latency_ns("2s").unwrap(), 2_000_000_000);
        assert_eq!(parse_latency_ns("500ns").unwrap(), 500);
        assert!(parse_latency_ns("5")
            .unwrap_err()
            .to_string()
            .contains("no unit"));
        assert!(parse_latency_ns("5 parsecs").is_err());
        assert!(parse_latency_ns("ms").is_err());
        let list = |s: &str| s.split(',').map(String::from).collect::<Vec<_>>();
        assert_eq!(
            thresholds_ns(&list("64ms,1ms,8ms")),
            vec![1_000_000, 8_000_000, 64_000_000]
        );
        check_thresholds(&list("64ms,1ms,8ms")).unwrap();
        let twice = check_thresholds(&list("1ms,8ms,1000us")).unwrap_err();
        assert!(
            twice.to_string().contains("gives 1ms and 1000us"),
            "{twice}"
        );
        assert_eq!(format_ns(360_000), "360us");
        assert_eq!(format_ns(64_000_000), "64ms");
        assert_eq!(format_ns(1_500), "1500ns");
    }

    #[test]
    fn share_over_thresholds_like_the_aerospike_figure() {
        // 89 requests at 200 us, 11 at 400 us: 11% over 360 us, none over 1 ms.
        let h = hist(&[(200_000, 89), (400_000, 11)]);
        let b = over_thresholds(&h, &[100_000, 360_000, 1_000_000]);
        assert_eq!(b[0].count_over, 100);
        assert_eq!(b[1].count_over, 11);
        assert!((b[1].pct_over - 11.0).abs() < 1e-9);
        assert_eq!(b[2].count_over, 0);
        // Weighted mean and jitter.
        let m = view_metrics(&h, &[360_000], &[("kind", "service".into())]);
        let mean = m.iter().find(|m| m.name == "latency_mean_ns").unwrap();
        assert!((mean.value - 222_000.0).abs() < 500.0, "{}", mean.value);
        let over = m.iter().find(|m| m.name == "latency_pct_over").unwrap();
        assert_eq!(over.labels["over"], "360us");
        assert_eq!(over.labels["kind"], "service");
        assert!(m
            .iter()
            .any(|m| m.name == "latency_jitter_ns" && m.value > 0.0));
        // Empty histogram: nothing to claim.
        assert!(view_metrics(&new_latency_histogram(), &[1], &[]).is_empty());
    }

    #[test]
    fn spectrum_follows_hdrhistogram_ticks() {
        let mut h = new_latency_histogram();
        for v in 1..=10_000u64 {
            h.record(v * 1_000).unwrap();
        }
        let rows = percentile_spectrum(&h, 5);
        // First rows: 0%, 10%, 20% ... in the first half; then 55%, 60% ...
        let ps: Vec<f64> = rows.iter().map(|r| r.percentile).collect();
        assert!(ps[0] < 0.1);
        assert!((ps[1] - 10.0).abs() < 0.1, "{ps:?}");
        assert!(ps.iter().any(|p| (p - 55.0).abs() < 0.1), "{ps:?}");
        assert!(ps.iter().any(|p| (p - 77.5).abs() < 0.1), "{ps:?}");
        let last = rows.last().unwrap();
        assert!((last.percentile - 100.0).abs() < 1e-9);
        assert_eq!(last.total_count, 10_000);
        assert!(last.inverted.is_infinite());
        // Counts are cumulative and values non-decreasing.
        assert!(rows
            .windows(2)
            .all(|w| w[0].total_count <= w[1].total_count));
        assert!(rows.windows(2).all(|w| w[0].value_ns <= w[1].value_ns));
        let text = format_spectrum(&h, 1e6);
        assert!(text.contains("1/(1-Percentile)"));
        assert!(text.contains("Total count    =        10000"));
    }

    #[test]
    fn interval_log_reads_back_with_the_hdrhistogram_reader() {
        let start = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        let mut w = IntervalLogWriter::new(Vec::new(), start, &["rackbench http ramp"]).unwrap();
        let a = hist(&[(100_000, 10), (2_000_000, 1)]);
        let b = hist(&[(300_000, 20)]);
        w.write_interval(
            Some("rate=1000"),
            Duration::from_secs(0),
            Duration::from_secs(1),
            &a,
        )
        .unwrap();
        w.write_interval(
            None,
            Duration::from_secs(1),
            Duration::from_millis(1500),
            &b,
        )
        .unwrap();
        assert!(w
            .write_interval(Some("bad tag"), Duration::ZERO, Duration::ZERO, &b)
            .is_err());
        let log = w.into_inner();
        let text = String::from_utf8(log.clone()).unwrap();
        assert!(text.starts_with("#rackbench http ramp\n#[Histogram log format version 1.3]\n"));
        assert!(text.contains("#[StartTime: 1700000000.123 (seconds since epoch), Tue Nov 14"));
        assert!(text.contains(
            "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n"
        ));
        assert!(text.contains("Tag=rate=1000,0.000,1.000,"));

        let mut starts = 0;
        let mut intervals = Vec::new();
        for e in IntervalLogIterator::new(&log) {
            match e.unwrap() {
                LogEntry::StartTime(t) | LogEntry::BaseTime(t) => {
                    assert_eq!(t, Duration::from_millis(1_700_000_000_123));
                    starts += 1;
                }
                LogEntry::Interval(i) => {
                    // The model's decoder is base64 + HdrHistogram's V2/DEFLATE deserializer.
                    let h = model::HistogramRecord {
                        name: "x".into(),
                        kind: "x".into(),
                        unit: "ns".into(),
                        summary: model::LatencySummary::of(&new_latency_histogram()),
                        encoded: i.encoded_histogram().to_string(),
                    }
                    .histogram()
                    .unwrap();
                    intervals.push((
                        i.tag().map(|t| t.as_str().to_string()),
                        i.start_timestamp(),
                        i.duration(),
                        i.max(),
                        h,
                    ));
                }
            }
        }
        assert_eq!(starts, 2);
        assert_eq!(intervals.len(), 2);
        assert_eq!(intervals[0].0.as_deref(), Some("rate=1000"));
        assert_eq!(intervals[0].4.len(), 11);
        assert_eq!(intervals[0].4.max(), a.max());
        assert!((intervals[0].3 - a.max() as f64 / 1e6).abs() < 1e-3);
        assert_eq!(intervals[1].0, None);
        assert_eq!(intervals[1].1, Duration::from_secs(1));
        assert_eq!(intervals[1].2, Duration::from_millis(1500));
        assert_eq!(
            intervals[1].4.value_at_quantile(0.5),
            b.value_at_quantile(0.5)
        );
    }
}
