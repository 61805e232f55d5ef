//! Fuzzing that runs as a plain `cargo test` on stable Rust (CI has no nightly, so no
//! libFuzzer): each `fuzz_*` test draws a bounded number of inputs from a seeded RNG,
//! random bytes and structure-aware mutations of valid inputs, and checks properties
//! every parser of outside input must keep: it never panics, it never allocates
//! memory out of proportion to its input, and bad input is an error.
//!
//! Knobs (environment variables), for longer runs than CI's:
//! - `RACKBENCH_FUZZ_CASES=N`: run N cases in every target (and lift the time cap);
//! - `RACKBENCH_FUZZ_SEED=S`: another seed (the default is fixed, so CI is repeatable);
//! - `RACKBENCH_FUZZ_SECS=S`: each target's time cap (default 8 s; a cut run says so).
//!
//! A failing case prints the target, seed, case number and the input, which becomes a
//! regression test beside the fix.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::fmt;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub use rand::rngs::SmallRng;
pub use rand::Rng;
use rand::SeedableRng;

/// The default seed: fixed, so a CI failure reproduces on any machine.
const DEFAULT_SEED: u64 = 0x005e_ed0f_acbe_7c13;
/// Default time cap per target, so the whole suite stays bounded on a slow machine.
const DEFAULT_SECS: u64 = 8;
/// Default bound on the memory one case may hold at once beyond what it started with.
const DEFAULT_MAX_ALLOC: usize = 64 << 20;

/// Numbers and words that break parsers: signs, the edges of integer types, float
/// specials, lengths no one should preallocate.
pub const INTERESTING_NUMBERS: &[&str] = &[
    "-1",
    "0",
    "-0",
    "+1",
    "1",
    "255",
    "65536",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "4611686018427387904",
    "99999999999999999999999999",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "1e308",
    "1e400",
    "-1e-320",
    "0x10",
    "1.5",
    "-2.5",
];

/// Bytes that end, open or separate things in most text formats.
pub const SEPARATORS: &[&str] = &[
    "\r\n", "\n", "\r", "\0", " ", "\t", ":", ";", ",", "=", "[", "]", "{", "}", "\"", "'", "..",
    "/", "\\", "-", "#",
];

// ---------------------------------------------------------------------------------------
// Memory: a global allocator that counts, per thread, what a case holds at its peak.

thread_local! {
    /// Bytes this thread holds (allocations it made minus what it freed; may drift when
    /// memory is freed on another thread, which is why only differences are used).
    static LIVE: Cell<usize> = const { Cell::new(0) };
    /// Highest `LIVE` since the last reset.
    static PEAK: Cell<usize> = const { Cell::new(0) };
}
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// The system allocator, counting what each thread holds. A test binary installs it
/// with `#[global_allocator] static A: fuzzkit::TrackingAlloc = fuzzkit::TrackingAlloc;`
/// and every `fuzz_*` target then also fails a case that holds more than its bound.
pub struct TrackingAlloc;

fn note_alloc(size: usize) {
    let _ = LIVE.try_with(|l| {
        let now = l.get().saturating_add(size);
        l.set(now);
        let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
    });
}

fn note_free(size: usize) {
    let _ = LIVE.try_with(|l| l.set(l.get().saturating_sub(size)));
}

// SAFETY: every call is forwarded unchanged to `System`; the counting touches only
// const-initialised thread-locals without destructors, and never allocates.
unsafe impl GlobalAlloc for TrackingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        INSTALLED.store(true, Ordering::Relaxed);
        let p = System.alloc(layout);
        if !p.is_null() {
            note_alloc(layout.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            note_alloc(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        note_free(layout.size());
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            note_free(layout.size());
            note_alloc(new_size);
        }
        p
    }
}

/// Run `f` and return the most memory it held at once on this thread (0 when the test
/// binary did not install [`TrackingAlloc`]).
pub fn peak_alloc<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let start = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(start));
    let r = f();
    let peak = PEAK.with(Cell::get);
    (r, peak.saturating_sub(start))
}

// ---------------------------------------------------------------------------------------
// Inputs.

/// Bytes shown as a byte-string literal, so a failing input can be pasted into a test.
#[derive(Clone, PartialEq, Eq)]
pub struct Bytes(pub Vec<u8>);

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "b\"{}\"", self.0.escape_ascii())
    }
}

/// Up to `max` random bytes, biased towards short inputs (where most edge cases are).
pub fn random_bytes(rng: &mut SmallRng, max: usize) -> Vec<u8> {
    let len = if rng.gen_bool(0.5) {
        rng.gen_range(0..=max.min(16))
    } else {
        rng.gen_range(0..=max)
    };
    (0..len).map(|_| rng.gen()).collect()
}

/// A sequence of up to `max` tokens drawn from `tokens`: random input that still
/// speaks the format's words.
pub fn random_tokens(rng: &mut SmallRng, tokens: &[&str], max: usize) -> Vec<u8> {
    let n = rng.gen_range(0..=max);
    let mut out = Vec::new();
    for _ in 0..n {
        out.extend_from_slice(pick(rng, tokens).as_bytes());
    }
    out
}

/// One element of a non-empty slice.
pub fn pick<'a, T>(rng: &mut SmallRng, from: &'a [T]) -> &'a T {
    &from[rng.gen_range(0..from.len())]
}

/// `base` with one to four mutations: bytes flipped, inserted, deleted or duplicated,
/// the input cut short, a number swapped for an [`INTERESTING_NUMBERS`] one, a
/// format word from `dict` inserted, or a piece repeated many times (deep nesting,
/// long lines).
pub fn mutate(rng: &mut SmallRng, base: &[u8], dict: &[&str]) -> Vec<u8> {
    let mut b = base.to_vec();
    for _ in 0..rng.gen_range(1..=4) {
        mutate_once(rng, &mut b, dict);
    }
    b
}

fn mutate_once(rng: &mut SmallRng, b: &mut Vec<u8>, dict: &[&str]) {
    let at = rng.gen_range(0..=b.len());
    match rng.gen_range(0..10) {
        0 if at < b.len() => b[at] = rng.gen(),
        1 => insert(b, at, pick(rng, SEPARATORS).as_bytes()),
        2 if !dict.is_empty() => insert(b, at, pick(rng, dict).as_bytes()),
        3 => {
            let end = (at + rng.gen_range(1..=16)).min(b.len());
            b.drain(at..end);
        }
        4 => b.truncate(at),
        5 => {
            let end = (at + rng.gen_range(1..=64)).min(b.len());
            let piece = b[at..end].to_vec();
            let to = rng.gen_range(0..=b.len());
            insert(b, to, &piece);
        }
        6 => replace_number(rng, b, at),
        7 => {
            // A piece repeated: nesting and long lines. Bounded so inputs stay small.
            let end = (at + rng.gen_range(1..=8)).min(b.len());
            let piece = b[at..end].to_vec();
            let times = rng.gen_range(2..=2000 / piece.len().max(1));
            insert(b, end, &piece.repeat(times));
        }
        8 => {
            let n = rng.gen_range(1..=8);
            let junk: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
            insert(b, at, &junk);
        }
        _ => replace_number(rng, b, at),
    }
}

fn insert(b: &mut Vec<u8>, at: usize, piece: &[u8]) {
    let at = at.min(b.len());
    b.splice(at..at, piece.iter().copied());
}

/// Replace the first run of digits at or after `at` (or insert at `at` if there is
/// none) with an interesting number.
fn replace_number(rng: &mut SmallRng, b: &mut Vec<u8>, at: usize) {
    let n = pick(rng, INTERESTING_NUMBERS).as_bytes();
    match b[at.min(b.len())..].iter().position(u8::is_ascii_digit) {
        Some(off) => {
            let start = at + off;
            let end = b[start..]
                .iter()
                .position(|c| !c.is_ascii_digit())
                .map_or(b.len(), |e| start + e);
            b.splice(start..end, n.iter().copied());
        }
        None => insert(b, at, n),
    }
}

// ---------------------------------------------------------------------------------------
// The runner.

/// One fuzz target: a name, a case count and a memory bound.
pub struct Fuzz {
    name: &'static str,
    cases: u64,
    max_alloc: usize,
}

fn env_u64(key: &str) -> Option<u64> {
    std::env::var(key).ok().and_then(|v| v.trim().parse().ok())
}

impl Fuzz {
    /// A target with 2000 cases and a 64 MiB bound on what one case may hold.
    pub fn new(name: &'static str) -> Fuzz {
        Fuzz {
            name,
            cases: 2000,
            max_alloc: DEFAULT_MAX_ALLOC,
        }
    }

    /// Cases run by default (`RACKBENCH_FUZZ_CASES` overrides).
    pub fn cases(mut self, n: u64) -> Fuzz {
        self.cases = n;
        self
    }

    /// The most memory one case may hold at once, in bytes.
    pub fn max_alloc(mut self, bytes: usize) -> Fuzz {
        self.max_alloc = bytes;
        self
    }

    /// Draw each case's input with `gen` from its own seeded RNG and check it with
    /// `prop`, which panics (asserts) when a property fails. A failure (or a case
    /// holding more memory than the bound) reports the input to reproduce it.
    pub fn run<T: fmt::Debug>(
        self,
        mut gen: impl FnMut(&mut SmallRng) -> T,
        mut prop: impl FnMut(&T),
    ) {
        let seed = env_u64("RACKBENCH_FUZZ_SEED").unwrap_or(DEFAULT_SEED);
        let forced = env_u64("RACKBENCH_FUZZ_CASES");
        let cases = forced.unwrap_or(self.cases);
        let cap = match (env_u64("RACKBENCH_FUZZ_SECS"), forced) {
            (Some(s), _) => Some(Duration::from_secs(s)),
            (None, Some(_)) => None,
            (None, None) => Some(Duration::from_secs(DEFAULT_SECS)),
        };
        let name_hash = self.name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
        let started = Instant::now();
        let mut ran = 0;
        for case in 0..cases {
            if cap.is_some_and(|c| started.elapsed() > c) {
                break;
            }
            let mut rng = SmallRng::seed_from_u64(
                seed ^ name_hash ^ case.wrapping_mul(0x9e37_79b9_7f4a_7c15),
            );
            let input = gen(&mut rng);
            let outcome = catch_unwind(AssertUnwindSafe(|| peak_alloc(|| prop(&input)).1));
            let report = |why: &str| {
                let mut shown = format!("{input:?}");
                if shown.len() > 4000 {
                    let mut cut = 4000;
                    while !shown.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    shown.truncate(cut);
                    shown.push_str("...(cut)");
                }
                eprintln!(
                    "fuzz target {} failed ({why}) at case {case} (RACKBENCH_FUZZ_SEED={seed})\ninput: {shown}",
                    self.name
                );
            };
            match outcome {
                Err(panic) => {
                    report("panicked");
                    resume_unwind(panic);
                }
                Ok(peak) if INSTALLED.load(Ordering::Relaxed) && peak > self.max_alloc => {
                    report("memory");
                    panic!(
                        "fuzz target {}: one case held {peak} bytes at once, over its bound of {}",
                        self.name, self.max_alloc
                    );
                }
                Ok(_) => {}
            }
            ran += 1;
        }
        if ran < cases {
            eprintln!(
                "fuzz target {}: time cap reached after {ran} of {cases} cases",
                self.name
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_stay_small_and_vary() {
        let mut rng = SmallRng::seed_from_u64(1);
        let base = b"*2\r\n$3\r\nfoo\r\n:12\r\n";
        let mut distinct = std::collections::BTreeSet::new();
        for _ in 0..500 {
            let m = mutate(&mut rng, base, &["$", "*"]);
            assert!(m.len() < base.len() + 4 * 2100, "{}", m.len());
            distinct.insert(m);
        }
        assert!(distinct.len() > 300);
    }

    #[test]
    fn bytes_debug_is_a_literal() {
        assert_eq!(
            format!("{:?}", Bytes(b"a\r\n\x00".to_vec())),
            "b\"a\\r\\n\\x00\""
        );
    }

    #[test]
    fn a_failing_case_is_reported_and_fails() {
        let r = catch_unwind(|| {
            Fuzz::new("always_fails")
                .cases(3)
                .run(|rng| rng.gen::<u8>(), |_| panic!("boom"))
        });
        assert!(r.is_err());
    }
}
