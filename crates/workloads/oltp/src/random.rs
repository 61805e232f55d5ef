//! TPC-C random inputs (clause 2.1.6 and 4.3.2): NURand with run-time constants that obey
//! the C-delta rule, customer last names from syllables, a-strings, zips and the 10% of
//! "ORIGINAL" data. Pure functions of an RNG, so they are tested over many draws.

use rand::Rng;

/// NURand's A for C_LAST in [0..999].
pub const A_C_LAST: u32 = 255;
/// NURand's A for C_ID in [1..3000].
pub const A_C_ID: u32 = 1023;
/// NURand's A for OL_I_ID in [1..100000].
pub const A_OL_I_ID: u32 = 8191;

/// Items in the ITEM table; `ITEMS + 1` is the unused id a rolled-back New-Order asks for.
pub const ITEMS: u32 = 100_000;
/// Customers per district, districts per warehouse, initial orders per district.
pub const CUSTOMERS_PER_DISTRICT: u32 = 3_000;
pub const DISTRICTS: u32 = 10;
pub const ORDERS_PER_DISTRICT: u32 = 3_000;
/// Orders with o_id >= this are undelivered at load (the last 900 of each district).
pub const FIRST_NEW_ORDER: u32 = 2_101;

/// `NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x` (2.1.6).
pub fn nurand<R: Rng + ?Sized>(rng: &mut R, a: u32, x: u32, y: u32, c: u32) -> u32 {
    let r1 = rng.gen_range(0..=a);
    let r2 = rng.gen_range(x..=y);
    (((r1 | r2) + c) % (y - x + 1)) + x
}

/// 2.1.6.1: C-Delta = |C-Run - C-Load| must be in [65..119], excluding 96 and 112.
pub fn valid_c_delta(c_load: u32, c_run: u32) -> bool {
    let d = c_load.abs_diff(c_run);
    (65..=119).contains(&d) && d != 96 && d != 112
}

/// The run-time NURand constants, the same for every virtual user of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Constants {
    /// C for C_LAST at run time (obeys the C-delta rule against the load's constant).
    pub c_last: u32,
    pub c_id: u32,
    pub ol_i_id: u32,
}

impl Constants {
    /// Draw run constants given the C_LAST constant used at load time (stored with the
    /// build). C_ID and OL_I_ID constants are drawn in [0..A] (not swapped, as go-tpc does).
    pub fn for_run<R: Rng + ?Sized>(rng: &mut R, c_load: u32) -> Constants {
        let valid: Vec<u32> = (0..=A_C_LAST)
            .filter(|&c| valid_c_delta(c_load, c))
            .collect();
        // For any c_load in [0..255] at least one valid value exists (deltas 65..119 fit
        // on one side of the range), so `valid` is never empty; fall back defensively.
        let c_last = if valid.is_empty() {
            (c_load + 65) % (A_C_LAST + 1)
        } else {
            valid[rng.gen_range(0..valid.len())]
        };
        Constants {
            c_last,
            c_id: rng.gen_range(0..=A_C_ID),
            ol_i_id: rng.gen_range(0..=A_OL_I_ID),
        }
    }
}

const SYLLABLES: [&str; 10] = [
    "BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING",
];

/// C_LAST for a number in [0..999]: one syllable per digit (371 -> PRICALLYOUGHT).
pub fn last_name(n: u32) -> String {
    let n = n % 1000;
    let mut s = String::with_capacity(15);
    s.push_str(SYLLABLES[(n / 100) as usize]);
    s.push_str(SYLLABLES[((n / 10) % 10) as usize]);
    s.push_str(SYLLABLES[(n % 10) as usize]);
    s
}

const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// Append a random a-string of length [min..max] (4.3.2.2; alphanumerics only, so the text
/// needs no escaping in COPY).
pub fn push_astring<R: Rng + ?Sized>(rng: &mut R, out: &mut Vec<u8>, min: usize, max: usize) {
    let len = rng.gen_range(min..=max);
    for _ in 0..len {
        out.push(ALNUM[rng.gen_range(0..ALNUM.len())]);
    }
}

/// Append a random n-string (digits) of exactly `len`.
pub fn push_nstring<R: Rng + ?Sized>(rng: &mut R, out: &mut Vec<u8>, len: usize) {
    for _ in 0..len {
        out.push(b'0' + rng.gen_range(0..10u8));
    }
}

/// Append an a-string of [min..max] that contains "ORIGINAL" at a random place in 10% of
/// the cases (I_DATA, S_DATA: 4.3.3.1).
pub fn push_data<R: Rng + ?Sized>(rng: &mut R, out: &mut Vec<u8>, min: usize, max: usize) {
    let start = out.len();
    push_astring(rng, out, min, max);
    if rng.gen_range(0..10) == 0 {
        let len = out.len() - start;
        let pos = start + rng.gen_range(0..=len - 8);
        out[pos..pos + 8].copy_from_slice(b"ORIGINAL");
    }
}

/// Append a zip code: 4 random digits then "11111" (4.3.2.7).
pub fn push_zip<R: Rng + ?Sized>(rng: &mut R, out: &mut Vec<u8>) {
    push_nstring(rng, out, 4);
    out.extend_from_slice(b"11111");
}

/// A random fixed-point amount in [lo..hi] cents, written as `123.45`.
pub fn push_money<R: Rng + ?Sized>(rng: &mut R, out: &mut Vec<u8>, lo_cents: u32, hi_cents: u32) {
    let c = rng.gen_range(lo_cents..=hi_cents);
    push_fixed(out, c as u64, 2);
}

/// Write `v / 10^decimals` exactly (no float rounding).
pub fn push_fixed(out: &mut Vec<u8>, v: u64, decimals: u32) {
    use std::io::Write;
    let p = 10u64.pow(decimals);
    let _ = write!(out, "{}.{:0w$}", v / p, v % p, w = decimals as usize);
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    #[test]
    fn last_names_from_syllables() {
        assert_eq!(last_name(371), "PRICALLYOUGHT");
        assert_eq!(last_name(0), "BARBARBAR");
        assert_eq!(last_name(999), "EINGEINGEING");
    }

    #[test]
    fn c_delta_rule() {
        assert!(valid_c_delta(100, 165));
        assert!(!valid_c_delta(100, 196)); // delta 96 excluded
        assert!(!valid_c_delta(100, 212)); // delta 112 excluded
        assert!(!valid_c_delta(100, 100));
        let mut rng = SmallRng::seed_from_u64(7);
        for c_load in 0..=255 {
            for _ in 0..20 {
                let k = Constants::for_run(&mut rng, c_load);
                assert!(
                    valid_c_delta(c_load, k.c_last),
                    "load {c_load} run {}",
                    k.c_last
                );
                assert!(k.c_last <= A_C_LAST && k.c_id <= A_C_ID && k.ol_i_id <= A_OL_I_ID);
            }
        }
    }

    #[test]
    fn nurand_stays_in_range_and_is_non_uniform() {
        let mut rng = SmallRng::seed_from_u64(1);
        let mut counts = vec![0u32; 3001];
        let n = 300_000;
        for _ in 0..n {
            let v = nurand(&mut rng, A_C_ID, 1, 3000, 259);
            assert!((1..=3000).contains(&v));
            counts[v as usize] += 1;
        }
        let max = *counts.iter().max().unwrap() as f64;
        let mean = n as f64 / 3000.0;
        // NURand concentrates: the most frequent id is drawn far more often than average.
        assert!(max > 3.0 * mean, "max {max} mean {mean}");
        // and every part of the range is reachable
        assert!(counts[1..].iter().filter(|&&c| c > 0).count() > 2900);
        for _ in 0..100_000 {
            let v = nurand(&mut rng, A_OL_I_ID, 1, ITEMS, 7911);
            assert!((1..=ITEMS).contains(&v));
            let l = nurand(&mut rng, A_C_LAST, 0, 999, 223);
            assert!(l <= 999);
        }
    }

    #[test]
    fn nurand_matches_the_formula_exactly() {
        // With A = 0 the OR term is random(x, y) alone: NURand is then (r + C) mod n + x,
        // a rotation of the uniform range, so every value keeps its uniform share.
        let mut rng = SmallRng::seed_from_u64(3);
        let mut counts = [0u32; 10];
        for _ in 0..100_000 {
            let v = nurand(&mut rng, 0, 1, 10, 7);
            counts[(v - 1) as usize] += 1;
        }
        assert!(
            counts.iter().all(|&c| (9_000..11_000).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn data_strings() {
        let mut rng = SmallRng::seed_from_u64(2);
        let mut original = 0;
        for _ in 0..10_000 {
            let mut b = Vec::new();
            push_data(&mut rng, &mut b, 26, 50);
            assert!((26..=50).contains(&b.len()));
            if b.windows(8).any(|w| w == b"ORIGINAL") {
                original += 1;
            }
        }
        assert!((800..1200).contains(&original), "{original}");
        let mut z = Vec::new();
        push_zip(&mut rng, &mut z);
        assert_eq!(z.len(), 9);
        assert!(z.ends_with(b"11111"));
        let mut m = Vec::new();
        push_fixed(&mut m, 30_000_000, 2);
        assert_eq!(m, b"300000.00");
        m.clear();
        push_fixed(&mut m, 5, 4);
        assert_eq!(m, b"0.0005");
    }
}
