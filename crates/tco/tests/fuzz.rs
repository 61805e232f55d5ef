//! Fuzz target for TCO plans (`rackbench tco PLAN.toml`): the example plan mutated as
//! text, evaluated and rendered. See crates/fuzzkit for the knobs
//! (`RACKBENCH_FUZZ_CASES`, `RACKBENCH_FUZZ_SEED`).

use std::collections::BTreeMap;

use fuzzkit::{mutate, random_tokens, Bytes, Fuzz, Rng};
use rackbench_tco as tco;

#[global_allocator]
static ALLOC: fuzzkit::TrackingAlloc = fuzzkit::TrackingAlloc;

const EXAMPLE: &str = include_str!("../examples/seed_redis_tco.toml");

const WORDS: &[&str] = &[
    "nan",
    "inf",
    "-inf",
    "1e308",
    "-0.0",
    "0",
    "4294967295",
    "[[platform]]",
    "[rack]",
    "height_u = ",
    "rack_units = ",
    "boards_per_server = ",
    "power_w = ",
    "perf = ",
    "=",
    "\"",
    "[",
    "]",
    "{",
    "}",
];

#[test]
fn fuzz_tco_plan() {
    // A plan is refused with an error or evaluated and rendered; every figure it
    // computes is a number (a checked plan never divides its way to NaN or infinity).
    Fuzz::new("tco_plan").cases(3000).max_alloc(16 << 20).run(
        |rng| {
            if rng.gen_range(0..6) == 0 {
                Bytes(random_tokens(rng, WORDS, 20))
            } else {
                Bytes(mutate(rng, EXAMPLE.as_bytes(), WORDS))
            }
        },
        |b| {
            let Ok(plan) = tco::Plan::from_toml(&String::from_utf8_lossy(&b.0)) else {
                return;
            };
            let Ok(t) = tco::evaluate(&plan, &BTreeMap::new()) else {
                return;
            };
            for p in &t.platforms {
                assert!(p.servers_per_rack < u32::MAX, "{p:?}");
            }
            let _ = (tco::text(&t), tco::markdown(&t), tco::footnotes(&t));
            serde_json::to_string(&t).unwrap();
        },
    );
}
