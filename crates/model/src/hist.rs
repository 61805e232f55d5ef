//! Latency histograms as stored: the exact HdrHistogram (V2 compressed, base64, the
//! format HdrHistogram interval logs use) plus a summary for quick reading.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// A latency's unit: its scale in ns, its name and the most decimals a cell prints it with.
const LATENCY_UNITS: [(f64, &str, usize); 4] = [
    (1.0, "ns", 0),
    (1e3, "us", 1),
    (1e6, "ms", 3),
    (1e9, "s", 2),
];

/// The decimals `v` (in some unit) is written with: no more than the histogram holds. At
/// [`SIGFIG`] 3 a histogram keeps a value to 1 part in 2,048 (its sub-buckets), so four
/// significant digits are real below a mantissa of 2 (`1.235 ms`, `123.5 us`) and three
/// above it (`963 ms`, not `962.593 ms`); never more than the unit's own decimals.
fn latency_decimals(v: f64, most: usize) -> usize {
    let of = |v: f64| {
        if v == 0.0 || !v.is_finite() {
            return most;
        }
        let exp = v.abs().log10().floor();
        let digits = if v.abs() / 10f64.powf(exp) < 2.0 {
            4
        } else {
            3
        };
        let whole = (exp as i64 + 1).max(1);
        ((digits - whole).max(0) as usize).min(most)
    };
    // As rounded: 0.99996 is written 1.000 (four digits of a 1), not 1.00.
    let d = of(v);
    let p = 10f64.powi(d as i32);
    of((v * p).round() / p)
}

/// The unit and decimals `ns` reads in: the largest unit whose value, rounded as it is
/// written, is at least 1 (so 999,960 ns is `1.000 ms`, not `1000 us`: the unit is chosen
/// after rounding).
fn latency_unit(ns: f64) -> (f64, &'static str, usize) {
    let (scale, name, most) = LATENCY_UNITS[0];
    let mut unit = (scale, name, latency_decimals(ns / scale, most));
    for w in LATENCY_UNITS.windows(2) {
        let (scale, _, most) = w[0];
        let d = latency_decimals(ns / scale, most);
        let p = 10f64.powi(d as i32);
        if (ns / scale * p).round() / p >= 1000.0 {
            let (scale, name, most) = w[1];
            unit = (scale, name, latency_decimals(ns / scale, most));
        }
    }
    unit
}

/// Nanoseconds as a readable latency (`850 ns`, `12.5 us`, `1.235 ms`, `43.5 ms`,
/// `2.10 s`): the report's cells and the sentences of flags and verdicts alike.
pub fn latency_ns(ns: f64) -> String {
    let (scale, name, decimals) = latency_unit(ns);
    format!("{:.*} {name}", decimals, ns / scale)
}

/// `ns` as [`latency_ns`] writes it, with as many more decimals (up to the nanosecond) as
/// it takes to differ from `bound_ns` written alike: a verdict's "p90 = 5.004 s misses
/// p90<5s" must not read "p90 = 5.00 s misses p90<5s". Equal values read alike.
pub fn latency_ns_beside(ns: f64, bound_ns: f64) -> String {
    let (scale, name, decimals) = latency_unit(ns);
    let most = (scale.log10().round() as usize).max(decimals);
    let mut d = decimals;
    while d < most
        && ns != bound_ns
        && format!("{:.*}", d, ns / scale) == format!("{:.*}", d, bound_ns / scale)
    {
        d += 1;
    }
    format!("{:.*} {name}", d, ns / scale)
}

/// Significant digits used for every latency histogram (0.1% value resolution).
pub const SIGFIG: u8 = 3;
/// Highest latency tracked: one hour in nanoseconds. Larger values are clamped and counted.
pub const MAX_LATENCY_NS: u64 = 3_600_000_000_000;

/// Parse a latency such as `360us`, `1ms`, `1.5ms`, `500ns`, `2s`, `250µs` into nanoseconds.
/// A bare number is refused: a latency without its unit is a guess.
pub fn parse_latency_ns(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("latency `{s}`: expected a number with a unit, e.g. `1ms`"))?;
    let scale = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" | "μs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "" => {
            return Err(format!(
                "latency `{s}` has no unit: write it as `{num}us` or `{num}ms`"
            ))
        }
        u => {
            return Err(format!(
                "latency `{s}`: unknown unit `{u}` (use ns, us, ms or s)"
            ))
        }
    };
    let ns = v * scale;
    if !ns.is_finite() || ns < 1.0 {
        return Err(format!("latency `{s}` is below 1 ns"));
    }
    Ok(ns.round() as u64)
}

/// The name and `kind` of a histogram of TCP connect times, from the connect call to the
/// connection established, one per connection opened during a test (httperf's
/// "Connection time [ms]: connect"). Not a request's latency: every view of request
/// latency leaves it out.
pub const CONNECT_KIND: &str = "connect";

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
    /// Whether this is a request's (an operation's) latency, not the connect times of
    /// [`CONNECT_KIND`].
    pub fn is_request_latency(&self) -> bool {
        self.kind != CONNECT_KIND
    }

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
    /// The encoding comes from outside (an import, a remote host), so its header is
    /// checked before hdrhistogram sizes anything from it: see [`checked_v2`].
    pub fn histogram(&self) -> Result<Histogram<u64>, String> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&self.encoded)
            .map_err(|e| format!("histogram {}: bad base64: {e}", self.name))?;
        let v2 = checked_v2(&bytes).map_err(|e| format!("histogram {}: {e}", self.name))?;
        Deserializer::new()
            .deserialize(&mut &v2[..])
            .map_err(|e| format!("histogram {}: bad encoding: {e:?}", self.name))
    }
}

/// HdrHistogram V2 cookies (plain and DEFLATE-compressed), as hdrhistogram writes them.
const V2_COOKIE: u32 = 0x1c84_9303 | 0x10;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9304 | 0x10;
/// Cookie, payload length, normalizing offset, digits, lowest, highest, ratio.
const V2_HEADER: usize = 40;
/// Largest inflated encoding accepted: a full latency histogram (every one of its ~34k
/// counters at the largest varint) is well under 1 MiB.
const MAX_V2_BYTES: u64 = 1 << 20;

/// The plain V2 encoding of `bytes` (inflated when compressed), once its header is
/// known to be safe to hand to hdrhistogram: the payload length it declares is present
/// (hdrhistogram preallocates it, up to 4 GiB) and the bounds are within a latency
/// histogram's (hdrhistogram allocates a counter array from them, tens of MiB at most).
fn checked_v2(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let cookie = be_u32(bytes, 0).ok_or("encoding too short")?;
    let v2 = match cookie {
        V2_COOKIE => bytes.to_vec(),
        V2_COMPRESSED_COOKIE => inflate(bytes.get(8..).unwrap_or_default())?,
        _ => {
            return Err(format!(
                "not an HdrHistogram V2 encoding (cookie {cookie:#x})"
            ))
        }
    };
    if be_u32(&v2, 0) != Some(V2_COOKIE) || v2.len() < V2_HEADER {
        return Err("bad V2 header".into());
    }
    let payload = be_u32(&v2, 4).unwrap_or(u32::MAX) as usize;
    if payload > v2.len() - V2_HEADER {
        return Err(format!(
            "payload of {payload} bytes declared, {} present",
            v2.len() - V2_HEADER
        ));
    }
    let digits = be_u32(&v2, 12).unwrap_or(u32::MAX);
    let low = be_u64(&v2, 16).unwrap_or(0);
    let high = be_u64(&v2, 24).unwrap_or(u64::MAX);
    if digits > u32::from(SIGFIG) || low < 1 || high > MAX_LATENCY_NS {
        return Err(format!(
            "bounds {low}..{high} with {digits} digits are not a latency histogram's"
        ));
    }
    Ok(v2)
}

/// Inflate a zlib stream, refusing one that inflates past [`MAX_V2_BYTES`].
fn inflate(z: &[u8]) -> Result<Vec<u8>, String> {
    use std::io::Read as _;
    let mut out = Vec::new();
    flate2::read::ZlibDecoder::new(z)
        .take(MAX_V2_BYTES + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("bad compressed encoding: {e}"))?;
    if out.len() as u64 > MAX_V2_BYTES {
        return Err(format!("inflates past {MAX_V2_BYTES} bytes"));
    }
    Ok(out)
}

fn be_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn be_u64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Moved from the engine's histlog (5de5f3f), with the unit chosen after rounding.
    #[test]
    fn a_measured_latency_reads_in_its_unit() {
        assert_eq!(latency_ns(1_203_000_000.0), "1.20 s");
        assert_eq!(latency_ns(2_103_000_000.0), "2.10 s");
        assert_eq!(latency_ns(900.0), "900 ns");
        // Each unit's top, rounded, is the next unit's 1 (review H, 8): never "1000 us".
        assert_eq!(latency_ns(999.7), "1.0 us");
        assert_eq!(latency_ns(999.4), "999 ns");
        assert_eq!(latency_ns(999_960.0), "1.000 ms");
        assert_eq!(latency_ns(999_400.0), "999 us");
        assert_eq!(latency_ns(999_600.0), "1.000 ms");
        assert_eq!(latency_ns(999_999_400.0), "1.00 s");
        assert_eq!(latency_ns(1_000.0), "1.0 us");
        assert_eq!(latency_ns(0.0), "0 ns");
    }

    /// No more digits than a histogram at 3 significant figures holds (acceptance N, 3:
    /// "p99 962.593 ms" claimed six): four below a mantissa of 2, three above it.
    #[test]
    fn a_latency_has_the_digits_its_histogram_holds() {
        assert_eq!(latency_ns(962_593_000.0), "963 ms");
        assert_eq!(latency_ns(43_483_135.0), "43.5 ms");
        assert_eq!(latency_ns(1_234_567.0), "1.235 ms");
        assert_eq!(latency_ns(12_345_678.0), "12.35 ms");
        assert_eq!(latency_ns(123_456_789.0), "123.5 ms");
        assert_eq!(latency_ns(512_049.0), "512 us");
        assert_eq!(latency_ns(12_500.0), "12.5 us");
        assert_eq!(latency_ns(1_234.0), "1.2 us");
        // What the histogram gives back for a value is within a digit of its print.
        let mut h = new_latency_histogram();
        for v in [962_593_000u64, 43_483_135, 1_234_567, 512_049] {
            h.record(v).unwrap();
            let back = h.highest_equivalent(v) as f64;
            let shown = latency_ns(v as f64);
            let (num, unit) = shown.split_once(' ').unwrap();
            let scale = match unit {
                "ms" => 1e6,
                "us" => 1e3,
                _ => unreachable!(),
            };
            let step = 10f64.powi(-(num.split('.').nth(1).map_or(0, str::len) as i32)) * scale;
            assert!(
                back - (v as f64) < step,
                "{shown}: the histogram holds {back}"
            );
        }
    }

    /// A verdict's value never reads as its bound (review H, 8): "p90 = 5.00 s misses p90<5s".
    #[test]
    fn a_latency_beside_its_bound_differs_from_it_in_print() {
        assert_eq!(latency_ns_beside(5_004_000_000.0, 5e9), "5.004 s");
        assert_eq!(latency_ns_beside(5_000_000_001.0, 5e9), "5.000000001 s");
        assert_eq!(latency_ns_beside(1_000_400.0, 1e6), "1.0004 ms");
        assert_eq!(latency_ns_beside(500_400_000.0, 5e8), "500.4 ms");
        assert_eq!(latency_ns_beside(999_960.0, 1e6), "0.99996 ms");
        assert_eq!(latency_ns_beside(1_001.0, 1e3), "1.001 us");
        // Apart already, or equal (an inclusive bound's miss is not possible; `<` at the
        // bound is), it reads as the cell does.
        assert_eq!(latency_ns_beside(25_940_000.0, 1e6), "25.9 ms");
        assert_eq!(latency_ns_beside(1e6, 1e6), "1.000 ms");
        for (v, b) in [(5_004_000_000.0, 5e9), (1_000_400.0, 1e6), (999_960.0, 1e6)] {
            let bound = latency_ns_beside(b, b);
            assert_ne!(latency_ns_beside(v, b), bound, "{v} beside {b}");
        }
    }

    /// A compressed encoding of `v2` (a plain V2 encoding), as hdrhistogram frames it.
    fn deflate(v2: &[u8]) -> String {
        use std::io::Write as _;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(v2).unwrap();
        let z = z.finish().unwrap();
        let mut out = V2_COMPRESSED_COOKIE.to_be_bytes().to_vec();
        out.extend_from_slice(&(z.len() as u32).to_be_bytes());
        out.extend_from_slice(&z);
        base64::engine::general_purpose::STANDARD.encode(out)
    }

    fn v2_header(payload: u32, digits: u32, low: u64, high: u64) -> Vec<u8> {
        let mut h = V2_COOKIE.to_be_bytes().to_vec();
        h.extend_from_slice(&payload.to_be_bytes());
        h.extend_from_slice(&0u32.to_be_bytes());
        h.extend_from_slice(&digits.to_be_bytes());
        h.extend_from_slice(&low.to_be_bytes());
        h.extend_from_slice(&high.to_be_bytes());
        h.extend_from_slice(&1.0f64.to_be_bytes());
        h
    }

    fn record(encoded: String) -> HistogramRecord {
        let mut r = HistogramRecord::from_histogram("get", "service", &new_latency_histogram());
        r.encoded = encoded;
        r
    }

    #[test]
    fn fuzz_regression_declared_payload_is_not_preallocated() {
        // hdrhistogram resized its buffer to the declared payload (up to 4 GiB) before
        // reading a byte of it.
        let enc = deflate(&v2_header(u32::MAX, 3, 1, MAX_LATENCY_NS));
        let err = record(enc).histogram().unwrap_err();
        assert!(err.contains("declared"), "{err}");
    }

    #[test]
    fn fuzz_regression_huge_bounds_are_refused() {
        // Bounds of 1..u64::MAX at 5 digits made hdrhistogram allocate ~50 MiB of counters.
        let enc = deflate(&v2_header(0, 5, 1, u64::MAX));
        assert!(record(enc).histogram().unwrap_err().contains("bounds"));
        let plain = base64::engine::general_purpose::STANDARD.encode(v2_header(0, 3, 1, 1000));
        assert_eq!(record(plain).histogram().unwrap().len(), 0);
    }

    #[test]
    fn fuzz_regression_bad_base64_and_short_input_are_errors() {
        assert!(record("!!!".into())
            .histogram()
            .unwrap_err()
            .contains("base64"));
        assert!(record(String::new()).histogram().is_err());
        assert!(record("AAAA".into()).histogram().is_err());
    }

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
