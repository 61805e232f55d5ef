//! Latency histograms as stored: the exact HdrHistogram (V2 compressed, base64, the
//! format HdrHistogram interval logs use) plus a summary for quick reading.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Significant digits used for every latency histogram (0.1% value resolution).
pub const SIGFIG: u8 = 3;
/// Highest latency tracked: one hour in nanoseconds. Larger values are clamped and counted.
pub const MAX_LATENCY_NS: u64 = 3_600_000_000_000;

/// A new empty latency histogram in nanoseconds (1 ns .. 1 h, 3 significant digits).
pub fn new_latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_NS, SIGFIG).expect("static bounds are valid")
}

/// Percentiles and moments of a latency distribution, in nanoseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub count: u64,
    pub min_ns: u64,
    pub mean_ns: f64,
    /// Standard deviation: the "jitter" of the Aerospike study.
    pub stdev_ns: f64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

impl LatencySummary {
    pub fn of(h: &Histogram<u64>) -> Self {
        LatencySummary {
            count: h.len(),
            min_ns: h.min(),
            mean_ns: h.mean(),
            stdev_ns: h.stdev(),
            p50_ns: h.value_at_quantile(0.50),
            p90_ns: h.value_at_quantile(0.90),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            max_ns: h.max(),
        }
    }
}

/// One stored latency histogram.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistogramRecord {
    /// What was timed: an operation class (`set`, `get`, `new_order`) or `all`.
    pub name: String,
    /// `corrected` (from intended send time, coordinated-omission correct: open loop),
    /// `service` (from actual send time: closed loop, or open loop's uncorrected view).
    pub kind: String,
    pub unit: String,
    pub summary: LatencySummary,
    /// base64 of the HdrHistogram V2 DEFLATE-compressed encoding.
    pub encoded: String,
}

impl HistogramRecord {
    pub fn from_histogram(name: &str, kind: &str, h: &Histogram<u64>) -> Self {
        let mut buf = Vec::new();
        V2DeflateSerializer::new()
            .serialize(h, &mut buf)
            .expect("serializing to a Vec cannot fail");
        HistogramRecord {
            name: name.to_string(),
            kind: kind.to_string(),
            unit: "ns".to_string(),
            summary: LatencySummary::of(h),
            encoded: base64::engine::general_purpose::STANDARD.encode(&buf),
        }
    }

    /// Decode the exact histogram (for merging across runs/hosts or percentile spectra).
    pub fn histogram(&self) -> Result<Histogram<u64>, String> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&self.encoded)
            .map_err(|e| format!("histogram {}: bad base64: {e}", self.name))?;
        Deserializer::new()
            .deserialize(&mut &bytes[..])
            .map_err(|e| format!("histogram {}: bad encoding: {e:?}", self.name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_exactly() {
        let mut h = new_latency_histogram();
        for v in [1_000u64, 2_000, 250_000, 1_000_000, 9_999_999] {
            h.record(v).unwrap();
        }
        let rec = HistogramRecord::from_histogram("get", "service", &h);
        let back = rec.histogram().unwrap();
        assert_eq!(back.len(), 5);
        assert_eq!(back.value_at_quantile(0.5), h.value_at_quantile(0.5));
        assert_eq!(rec.summary.count, 5);
        assert_eq!(rec.summary.max_ns, h.max());
    }
}
