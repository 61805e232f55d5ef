//! Fuzz targets for plan values, which come from plan files and flags: lists, ranges
//! and sweeps (`1..16:x2`, `0..100:+25`, `1,4..6`) and their cartesian product.
//! See crates/fuzzkit for the knobs (`RACKBENCH_FUZZ_CASES`, `RACKBENCH_FUZZ_SEED`).

use fuzzkit::{mutate, pick, random_tokens, Bytes, Fuzz, Rng, SmallRng};
use rackbench_engine::plan::{expand, normalize, parse_value, MAX_SWEEP_POINTS, MAX_SWEEP_VALUES};
use serde_json::{Map, Value};

#[global_allocator]
static ALLOC: fuzzkit::TrackingAlloc = fuzzkit::TrackingAlloc;

const VALID: &[&str] = &[
    "100",
    "1,100",
    "1..4",
    "1..16:x2",
    "0..100:+25",
    "1,4..6",
    "true",
    "p99<1ms",
    "2.5",
];
const WORDS: &[&str] = &[
    "..",
    ":",
    "x",
    "*",
    "+",
    ",",
    "-",
    "9223372036854775807",
    "0",
    "x2",
];

fn value_text(rng: &mut SmallRng) -> Bytes {
    if rng.gen_bool(0.3) {
        Bytes(random_tokens(rng, WORDS, 10))
    } else {
        let base = *pick(rng, VALID);
        Bytes(mutate(rng, base.as_bytes(), WORDS))
    }
}

#[test]
fn fuzz_plan_parse_value() {
    // A value is refused or parsed to at most MAX_SWEEP_VALUES items, built without
    // overflow and without memory out of proportion to the text.
    Fuzz::new("plan_parse_value")
        .cases(10_000)
        .max_alloc(4 << 20)
        .run(value_text, |b| {
            if let Ok(Value::Array(a)) = parse_value(&String::from_utf8_lossy(&b.0)) {
                assert!(a.len() <= MAX_SWEEP_VALUES, "{} values", a.len());
            }
        });
}

#[test]
fn fuzz_plan_expand() {
    // Several swept keys at once: the product is refused before it is built when it is
    // over MAX_SWEEP_POINTS, else every point holds every key.
    Fuzz::new("plan_expand")
        .cases(2000)
        .max_alloc(96 << 20)
        .run(
            |rng| {
                (0..rng.gen_range(0..6))
                    .map(|i| (format!("k{i}"), value_text(rng)))
                    .collect::<Vec<_>>()
            },
            |keys| {
                let mut params = Map::new();
                for (k, v) in keys {
                    let text = Value::String(String::from_utf8_lossy(&v.0).into_owned());
                    params.insert(k.clone(), normalize(text, &[]));
                }
                if let Ok(points) = expand(&params, &["k0"]) {
                    assert!(!points.is_empty() && points.len() <= MAX_SWEEP_POINTS);
                    assert!(points.iter().all(|p| p.len() == params.len()));
                }
            },
        );
}

#[test]
fn fuzz_online_cpu_list() {
    // The kernel's online list (/sys/devices/system/cpu/online, or what an agent's host
    // holds there): refused or parsed to an ascending list of CPUs below MAX_CPUS that
    // writes back to the same text, without memory out of proportion to the text.
    use rackbench_engine::launch::{cpu_list_text, parse_online_cpus, MAX_CPUS};
    const LISTS: &[&str] = &["0-3\n", "0-1,3\n", "0\n", "0-3,5,7-8\n", "2,4", "0-8191"];
    const PARTS: &[&str] = &["0", "1", "3", "8191", "8192", "-", ",", "\n", " ", "+"];
    Fuzz::new("online_cpu_list")
        .cases(10_000)
        .max_alloc(1 << 20)
        .run(
            |rng| {
                if rng.gen_bool(0.3) {
                    Bytes(random_tokens(rng, PARTS, 12))
                } else {
                    let base = *pick(rng, LISTS);
                    Bytes(mutate(rng, base.as_bytes(), PARTS))
                }
            },
            |b| {
                let text = String::from_utf8_lossy(&b.0);
                if let Ok(cpus) = parse_online_cpus(&text) {
                    assert!(!cpus.is_empty());
                    assert!(cpus.windows(2).all(|w| w[0] < w[1]), "{cpus:?}");
                    assert!(cpus.iter().all(|&c| c < MAX_CPUS));
                    assert_eq!(
                        parse_online_cpus(&cpu_list_text(&cpus)).unwrap(),
                        cpus,
                        "{text:?}"
                    );
                }
            },
        );
}
