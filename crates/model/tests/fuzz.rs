//! Fuzz target for stored latency histograms, which arrive from outside in imports and
//! from remote hosts: base64 text, a zlib stream and HdrHistogram's V2 encoding inside.
//! See crates/fuzzkit for the knobs (`RACKBENCH_FUZZ_CASES`, `RACKBENCH_FUZZ_SEED`).

use std::io::{Read, Write};

use base64::Engine as _;
use fuzzkit::{mutate, random_bytes, Fuzz, Rng, SmallRng};
use rackbench_model::hist::{new_latency_histogram, HistogramRecord};

#[global_allocator]
static ALLOC: fuzzkit::TrackingAlloc = fuzzkit::TrackingAlloc;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

fn real() -> HistogramRecord {
    let mut h = new_latency_histogram();
    for v in [
        900u64,
        1_000,
        2_000,
        250_000,
        1_000_000,
        9_999_999,
        3_000_000_000_000,
    ] {
        h.record_n(v, v % 7 + 1).unwrap();
    }
    HistogramRecord::from_histogram("get", "service", &h)
}

/// The plain V2 bytes inside a compressed encoding (cookie and length stripped).
fn inflate(compressed: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::ZlibDecoder::new(&compressed[8..])
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// `v2` compressed again, framed as hdrhistogram frames it.
fn deflate(v2: &[u8]) -> Vec<u8> {
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    z.write_all(v2).unwrap();
    let z = z.finish().unwrap();
    let mut out = 0x1c84_9314u32.to_be_bytes().to_vec();
    out.extend_from_slice(&(z.len() as u32).to_be_bytes());
    out.extend_from_slice(&z);
    out
}

/// An encoding mutated at one of its three layers: the base64 text, the compressed
/// bytes, or the V2 encoding inside (header fields and counts), then framed again.
fn encoded(rng: &mut SmallRng, base: &HistogramRecord) -> String {
    let bytes = B64.decode(&base.encoded).unwrap();
    match rng.gen_range(0..5) {
        0 => String::from_utf8_lossy(&mutate(rng, base.encoded.as_bytes(), &["=", "+", "/"]))
            .into_owned(),
        1 => B64.encode(mutate(rng, &bytes, &[])),
        2 => B64.encode(random_bytes(rng, 64)),
        _ => {
            let mut v2 = inflate(&bytes);
            // Header fields are big-endian words: overwrite one with an extreme value.
            if rng.gen_bool(0.5) {
                let at = 4 * rng.gen_range(1..10);
                let word: [u8; 4] = *fuzzkit::pick(
                    rng,
                    &[[0xff; 4], [0; 4], [0x7f, 0xff, 0xff, 0xff], [0, 0, 0, 5]],
                );
                v2[at..at + 4].copy_from_slice(&word);
            } else {
                v2 = mutate(rng, &v2, &[]);
            }
            B64.encode(deflate(&v2))
        }
    }
}

#[test]
fn fuzz_histogram_decode() {
    let base = real();
    assert!(base.histogram().is_ok());
    Fuzz::new("histogram_decode")
        .cases(10_000)
        .max_alloc(8 << 20)
        .run(
            |rng| encoded(rng, &base),
            |enc| {
                let mut r = base.clone();
                r.encoded = enc.clone();
                if let Ok(h) = r.histogram() {
                    let _ = (h.len(), h.max(), h.value_at_quantile(0.99), h.mean());
                }
            },
        );
}
