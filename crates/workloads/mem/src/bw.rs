//! STREAM-like memory bandwidth: read (sum), write (fill), copy (c = a, STREAM's loop) and triad
//! (a = b + s*c) over f64 arrays split evenly across threads, each thread pinned to its own
//! CPU. Bytes are counted as STREAM counts them (8 B per element read or written, no
//! write-allocate traffic); each kernel's best of several timed passes is kept, after one
//! untimed pass. Every array is written first, by the thread that uses it, with STREAM's
//! initial values (a = 1, b = 2, c = 0): that places its pages (first touch), and an
//! array never written would be read from the kernel's one shared zero page, from the
//! caches, not from memory (triad read `b` so, and beat the plain read kernel by 10-40%).
//! The results are checked at the end, as STREAM's `checkSTREAMresults` does.

use std::sync::Barrier;
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    Read,
    Write,
    Copy,
    Triad,
}

pub const KERNELS: [Kernel; 4] = [Kernel::Read, Kernel::Write, Kernel::Copy, Kernel::Triad];

impl Kernel {
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Read => "read",
            Kernel::Write => "write",
            Kernel::Copy => "copy",
            Kernel::Triad => "triad",
        }
    }
    /// STREAM's byte count per element: 8 B per word read or written, no write-allocate
    /// read (STREAM: Copy and Scale 2 words, Add and Triad 3; read and write, 1).
    pub fn bytes_per_elem(self) -> usize {
        match self {
            Kernel::Read | Kernel::Write => 8,
            Kernel::Copy => 16,
            Kernel::Triad => 24,
        }
    }
}

/// STREAM's Copy, `c[i] = a[i]`, with the plain stores the other kernels use. Not
/// `copy_from_slice` (glibc's memcpy): above its non-temporal threshold memcpy streams its
/// stores past the caches and skips the write-allocate read, and gave 20.5 GB/s on a VM
/// where this loop (and STREAM's, and a C loop) gave 10.5-11.3 and the write kernel 7.0:
/// a "copy" 1.9x STREAM's Copy column and 3x this tool's own write. The name is the one
/// users compare with STREAM, so the kernel is STREAM's. Left alone, LLVM turns this loop
/// into a call to memcpy; the empty `asm!` after each cache line (without `nomem`, so the
/// compiler must assume it touches memory) keeps it a loop of loads and stores, still
/// vectorised within the line.
#[inline(never)]
fn copy_loop(c: &mut [f64], a: &[f64]) {
    let mut cs = c.chunks_exact_mut(8);
    let mut as_ = a.chunks_exact(8);
    for (x, y) in (&mut cs).zip(&mut as_) {
        for (p, q) in x.iter_mut().zip(y) {
            *p = *q;
        }
        // SAFETY: an empty instruction sequence; it touches no register or memory.
        unsafe { std::arch::asm!("", options(nostack, preserves_flags)) };
    }
    for (p, q) in cs.into_remainder().iter_mut().zip(as_.remainder()) {
        *p = *q;
    }
}

fn run_kernel(k: Kernel, a: &mut [f64], b: &mut [f64], c: &mut [f64]) {
    match k {
        Kernel::Read => {
            // Sixteen accumulators, so the adds do not serialise: with four, the build's
            // two-wide vector adds formed two dependent chains, 4 adds of 3-4 cycles each
            // per 128 B (about 8-11 B a cycle, 24-40 GB/s at 3-3.7 GHz), and a core that
            // reads memory faster than that would have measured its adder. On the 2-vCPU
            // VM this was written on, memory-bound at 14 GB/s, both read alike.
            let mut s = [0.0f64; 16];
            let chunks = a.chunks_exact(16);
            // The tail too: every element's bytes are counted.
            let tail: f64 = chunks.remainder().iter().sum();
            for ch in chunks {
                for (acc, x) in s.iter_mut().zip(ch) {
                    *acc += *x;
                }
            }
            std::hint::black_box((s, tail));
        }
        Kernel::Write => {
            for x in a.iter_mut() {
                *x = 1.5;
            }
        }
        Kernel::Copy => copy_loop(c, a),
        Kernel::Triad => {
            let s = 3.0;
            for ((x, y), z) in a.iter_mut().zip(b.iter()).zip(c.iter()) {
                *x = *y + s * *z;
            }
        }
    }
    std::hint::black_box((a.as_ptr(), c.as_ptr()));
}

/// One thread's timed run of one kernel: from just after the start barrier released it
/// to just after its last store.
pub type Window = (Instant, Instant);

/// Seconds one pass took: from the earliest thread's start to the slowest thread's end.
///
/// Every thread times itself, because a coordinator that reads the clock between two
/// barriers measures nothing when it is descheduled while the workers run (2 workers
/// plus the coordinator on 2 CPUs gave 742 and 11,876 GB/s). The earliest start and
/// the latest end bound all threads' work, so the bytes of every thread are inside the
/// window even when a thread starts late or is preempted. None: no thread ran.
pub fn pass_seconds(windows: &[Window]) -> Option<f64> {
    let start = windows.iter().map(|w| w.0).min()?;
    let end = windows.iter().map(|w| w.1).max()?;
    Some(end.saturating_duration_since(start).as_secs_f64())
}

/// GB/s (10^9 B/s) per kernel with `threads` threads over arrays of `elems` f64 each:
/// the bytes of all threads over the best (shortest) of `passes` timed passes.
pub fn bandwidth(
    elems: usize,
    threads: usize,
    passes: usize,
    cpus: &[usize],
) -> anyhow::Result<Vec<(Kernel, f64)>> {
    let threads = threads.max(1);
    let mut a = vec![0.0f64; elems];
    let mut b = vec![0.0f64; elems];
    let mut c = vec![0.0f64; elems];
    let chunk = elems.div_ceil(threads).max(4);
    // Workers only: the main thread takes no part in the timing (see `pass_seconds`).
    let parties = a.chunks(chunk).len();
    let barrier = Barrier::new(parties);
    let passes = passes.max(1);
    // Per worker, per timed pass, per kernel: its window.
    // A worker the kernel would not pin runs anyway (the others wait for it at every
    // barrier), and the measurement is refused after: its bandwidth is of CPUs nobody chose.
    let unpinned = std::sync::Mutex::new(Vec::<String>::new());
    let per_thread: Vec<Vec<[Window; 4]>> = std::thread::scope(|s| {
        let parts = a
            .chunks_mut(chunk)
            .zip(b.chunks_mut(chunk))
            .zip(c.chunks_mut(chunk))
            .enumerate();
        let mut handles = Vec::new();
        for (i, ((pa, pb), pc)) in parts {
            let (barrier, unpinned) = (&barrier, &unpinned);
            let cpu = (!cpus.is_empty()).then(|| cpus[i % cpus.len()]);
            handles.push(s.spawn(move || {
                if let Some(c) = cpu {
                    if let Err(e) = engine::launch::pin_current_thread(&[c]) {
                        let mut u = unpinned.lock().unwrap_or_else(|p| p.into_inner());
                        u.push(format!("thread {i} on CPU {c}: {e:#}"));
                    }
                }
                // STREAM's initial values, written by this thread (see the module doc).
                pa.fill(INIT.0);
                pb.fill(INIT.1);
                pc.fill(INIT.2);
                let mut mine = Vec::with_capacity(passes);
                // Untimed first pass, then the timed passes.
                for pass in 0..=passes {
                    let now = Instant::now();
                    let mut row = [(now, now); 4];
                    for (ki, k) in KERNELS.iter().enumerate() {
                        // All threads start a kernel together and none starts the next
                        // before the slowest has finished this one.
                        barrier.wait();
                        let t0 = Instant::now();
                        run_kernel(*k, pa, pb, pc);
                        row[ki] = (t0, Instant::now());
                    }
                    barrier.wait();
                    if pass > 0 {
                        mine.push(row);
                    }
                }
                mine
            }));
        }
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    let unpinned = unpinned.into_inner().unwrap_or_else(|p| p.into_inner());
    if !unpinned.is_empty() {
        anyhow::bail!(
            "could not pin the bandwidth threads where asked: {}",
            unpinned.join("; ")
        );
    }
    validate(&a, &b, &c)?;
    let bytes_of = |k: Kernel| (k.bytes_per_elem() * elems) as f64;
    Ok(KERNELS
        .iter()
        .enumerate()
        .map(|(ki, k)| {
            let best = (0..passes)
                .filter_map(|p| {
                    let w: Vec<Window> = per_thread
                        .iter()
                        .filter_map(|t| t.get(p).map(|row| row[ki]))
                        .collect();
                    pass_seconds(&w)
                })
                .fold(f64::INFINITY, f64::min);
            (*k, bytes_of(*k) / best / 1e9)
        })
        .collect())
}

/// STREAM's initial values of a, b and c.
const INIT: (f64, f64, f64) = (1.0, 2.0, 0.0);

/// The arrays as the kernels leave them, each pass alike: write sets a = 1.5, copy sets
/// c = a, triad sets a = b + 3c (b keeps its initial value). Exact in binary floating
/// point. An error names the first element that differs: a kernel that did not do the
/// work its bytes are counted for (STREAM's "Failed Validation").
fn validate(a: &[f64], b: &[f64], c: &[f64]) -> anyhow::Result<()> {
    let want = (INIT.1 + 3.0 * 1.5, INIT.1, 1.5);
    for (name, v, w) in [("a", a, want.0), ("b", b, want.1), ("c", c, want.2)] {
        if let Some(i) = v.iter().position(|x| *x != w) {
            anyhow::bail!(
                "the bandwidth kernels' results do not validate: {name}[{i}] is {}, not {w}",
                v[i]
            );
        }
    }
    Ok(())
}

/// How far past a bound a figure may go before it is impossible rather than noise: the
/// 1-thread figure is itself a best-of-passes sample, and a pass on a busy machine can
/// be a few percent slow.
pub const BOUND_TOLERANCE: f64 = 1.10;

/// The most a figure may be, and what that limit rests on.
#[derive(Debug, Clone, PartialEq)]
pub struct Bound {
    pub gb_per_s: f64,
    pub basis: String,
}

/// The highest figure `threads` threads on `cpus` CPUs can reach with one kernel: the
/// thread count (the CPUs, if fewer: threads that share a CPU bring no streams of their
/// own) times the 1-thread figure of the same kernel in the same run (threads add their
/// own load/store streams, never more), and the DRAM peak when the arrays are too big
/// for the caches (`dram_peak`: Some only then). The tighter one applies, with
/// [`BOUND_TOLERANCE`]. None: nothing to check against (1 thread with no DRAM peak).
pub fn bound(
    threads: usize,
    cpus: usize,
    one_thread: Option<f64>,
    dram_peak: Option<f64>,
) -> Option<Bound> {
    let n = threads.min(cpus.max(1));
    let scaling = one_thread.filter(|_| threads > 1).map(|g| Bound {
        gb_per_s: g * n as f64 * BOUND_TOLERANCE,
        basis: if n < threads {
            format!("{n} CPU(s) x the 1-thread {g:.1} GB/s")
        } else {
            format!("{threads} x the 1-thread {g:.1} GB/s")
        },
    });
    let dram = dram_peak.map(|g| Bound {
        gb_per_s: g * BOUND_TOLERANCE,
        basis: format!("the DIMMs' peak {g:.1} GB/s"),
    });
    match (scaling, dram) {
        (Some(a), Some(b)) => Some(if a.gb_per_s <= b.gb_per_s { a } else { b }),
        (a, b) => a.or(b),
    }
}

/// One measured figure: kernel, threads, GB/s.
pub type Figure = (Kernel, usize, f64);

/// The figures above their [`bound`], with the bound each broke. The 1-thread reference
/// of a kernel is its best 1-thread figure among `figures` and `reference` (extra
/// 1-thread runs, not reported; they are checked against the DIMMs too). Both bounds
/// hold only for arrays streamed from DRAM (`from_dram`): arrays that fit in the caches
/// may scale past n x one thread, since n threads bring n private caches. Threads
/// beyond the `cpus` they run on share them: they bring no streams of their own.
pub fn impossible(
    figures: &[Figure],
    reference: &[Figure],
    from_dram: bool,
    dram_peak: Option<f64>,
    cpus: usize,
) -> Vec<(Figure, Bound)> {
    if !from_dram {
        return Vec::new();
    }
    figures
        .iter()
        .chain(reference.iter().filter(|_| dram_peak.is_some()))
        .filter_map(|&(k, t, g)| {
            let one = figures
                .iter()
                .chain(reference)
                .filter(|&&(k1, t1, g1)| k1 == k && t1 == 1 && g1.is_finite())
                .map(|f| f.2)
                .reduce(f64::max);
            let b = bound(t, cpus, one, dram_peak)?;
            // NaN fails too: a figure that is not a number is not a possible one.
            let possible = g.partial_cmp(&b.gb_per_s).is_some_and(|o| o.is_le());
            (!possible).then_some(((k, t, g), b))
        })
        .collect()
}

/// The kernels whose 1-thread figure reported (among `figures`) and best extra 1-thread
/// run (`reference`) are further apart than [`BOUND_TOLERANCE`], either way, with both:
/// the counts above were checked against the higher, and read against the one reported
/// they may scale past n x one thread (triad 10.2 GB/s at 1 thread, 24.3 at 2, with a
/// 12 GB/s reference no one saw); a reference far below the one shown (9.06 against
/// 14.06) says as much of how steady the figures are.
pub fn one_thread_apart(figures: &[Figure], reference: &[Figure]) -> Vec<(Kernel, f64, f64)> {
    KERNELS
        .iter()
        .filter_map(|&k| {
            let one = |fs: &[Figure]| {
                fs.iter()
                    .filter(|f| f.0 == k && f.1 == 1 && f.2.is_finite())
                    .map(|f| f.2)
                    .reduce(f64::max)
            };
            let (shown, other) = (one(figures)?, one(reference)?);
            (other.max(shown) > other.min(shown) * BOUND_TOLERANCE).then_some((k, shown, other))
        })
        .collect()
}

/// The headline: triad at the most threads whose figure is possible. An impossible
/// figure is never the headline, even when it is the only one at that count.
pub fn headline_triad(figures: &[Figure], bad: &[(Figure, Bound)]) -> Option<Figure> {
    figures
        .iter()
        .filter(|f| f.0 == Kernel::Triad && !bad.iter().any(|(b, _)| b == *f))
        .max_by_key(|f| f.1)
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_apart_from_the_one_thread_figure_shown_is_found() {
        let shown = [(Kernel::Triad, 1, 10.17), (Kernel::Triad, 2, 24.34)];
        let reference = [(Kernel::Triad, 1, 12.4), (Kernel::Read, 1, 9.0)];
        assert_eq!(
            one_thread_apart(&shown, &reference),
            [(Kernel::Triad, 10.17, 12.4)]
        );
        // Within the tolerance, or no 1-thread figure shown: nothing to say.
        assert!(one_thread_apart(&shown, &[(Kernel::Triad, 1, 11.0)]).is_empty());
        assert!(one_thread_apart(&shown[1..], &reference).is_empty());
        // A reference far below the one shown is apart too (a helper's 9.06 beside 14.06
        // was not said).
        assert_eq!(
            one_thread_apart(&[(Kernel::Triad, 1, 14.06)], &[(Kernel::Triad, 1, 9.06)]),
            [(Kernel::Triad, 14.06, 9.06)]
        );
    }
    use std::time::Duration;

    fn at(base: Instant, from_ms: u64, to_ms: u64) -> Window {
        (
            base + Duration::from_millis(from_ms),
            base + Duration::from_millis(to_ms),
        )
    }

    #[test]
    fn pass_spans_the_earliest_start_to_the_slowest_end() {
        let t = Instant::now();
        // One thread late to start, another preempted and finishing last: the pass is
        // 0..30 ms, not either thread's own 10 or 20 ms.
        let w = [at(t, 0, 10), at(t, 10, 30)];
        let s = pass_seconds(&w).unwrap();
        assert!((s - 0.030).abs() < 1e-9, "{s}");
        assert_eq!(pass_seconds(&[]), None);
    }

    #[test]
    fn bound_is_threads_times_one_thread_or_the_dimms() {
        let b = bound(2, 64, Some(18.6), None).unwrap();
        assert!((b.gb_per_s - 2.0 * 18.6 * BOUND_TOLERANCE).abs() < 1e-9);
        assert!(b.basis.contains("1-thread"), "{}", b.basis);
        // The DIMMs' peak is tighter than 64 x one thread.
        let b = bound(64, 64, Some(10.0), Some(300.0)).unwrap();
        assert!(b.basis.contains("DIMMs"), "{}", b.basis);
        assert_eq!(bound(1, 64, Some(18.6), None), None);
        assert_eq!(bound(4, 64, None, None), None);
        // 4 threads on one CPU are one CPU's streams: checked, not left unchecked.
        let b = bound(4, 1, Some(10.0), None).unwrap();
        assert!((b.gb_per_s - 10.0 * BOUND_TOLERANCE).abs() < 1e-9, "{b:?}");
    }

    #[test]
    fn impossible_figures_are_named_and_possible_ones_pass() {
        // The figures of issue 13: 18.6 GB/s on 1 thread, 742 on 2.
        let figs = [
            (Kernel::Read, 1, 18.6),
            (Kernel::Read, 2, 742.0),
            (Kernel::Write, 1, 10.0),
            (Kernel::Write, 2, 21.0),
            (Kernel::Copy, 2, 5000.0),
        ];
        assert_eq!(impossible(&figs, &[], false, None, 64), []);
        let bad = impossible(&figs, &[], true, None, 64);
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert_eq!(bad[0].0, (Kernel::Read, 2, 742.0));
        // Copy has no 1-thread figure: only the DIMMs can judge it.
        let bad = impossible(&figs, &[], true, Some(100.0), 64);
        assert!(bad.iter().any(|(f, _)| f.0 == Kernel::Copy), "{bad:?}");
        // A slow 1-thread run (another process busy) is not the reference when a
        // second 1-thread run did better: 2 x 10 GB/s was possible after all.
        let slow = [(Kernel::Write, 1, 5.0), (Kernel::Write, 2, 19.0)];
        assert_eq!(impossible(&slow, &[], true, None, 64).len(), 1);
        assert_eq!(
            impossible(&slow, &[(Kernel::Write, 1, 10.0)], true, None, 64),
            []
        );
        // The impossible 2-thread triad is never the headline; the 1-thread one is.
        let figs = [(Kernel::Triad, 1, 15.0), (Kernel::Triad, 2, 400.0)];
        let bad = impossible(&figs, &[], true, None, 64);
        assert_eq!(headline_triad(&figs, &bad), Some((Kernel::Triad, 1, 15.0)));
        assert_eq!(headline_triad(&figs, &[]), Some((Kernel::Triad, 2, 400.0)));
        // NaN is not a figure that passes.
        assert_eq!(
            impossible(&[(Kernel::Read, 1, f64::NAN)], &[], true, Some(1.0), 64).len(),
            1
        );
        // 16 threads on 4 CPUs bring 4 CPUs' streams: 5x one thread is not possible.
        let figs = [(Kernel::Triad, 1, 10.0), (Kernel::Triad, 16, 50.0)];
        let bad = impossible(&figs, &[], true, None, 4);
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert!(bad[0].1.basis.starts_with("4 CPU(s) x"), "{bad:?}");
        assert_eq!(impossible(&figs, &[], true, None, 16), []);
    }

    #[test]
    fn two_threads_on_a_real_machine_stay_below_twice_one_thread() {
        // Before each thread timed itself this gave 4-600x the 1-thread figure on 2 CPUs.
        // The bound holds for arrays streamed from DRAM only: the workload's default ones,
        // 4x every last-level cache together within memory's limits (16 MiB arrays sat in a
        // 260 MiB L3 and two threads made 2.3x one: more cores, a faster uncore). Twice
        // was not enough on a VM whose 2 vCPUs see one 32 MiB L3: once in CI, 64 MiB
        // write arrays gave 25.8 GB/s on 1 thread and 60.1 on 2 (2.33x; 1.3-1.5x in
        // other runs), most likely with the host running the vCPUs on two core
        // complexes, each half of the arrays in an L3 of its own that the guest does
        // not see.
        let _alone = crate::REAL_RUN.lock();
        let elems = crate::MemBench::from_params(&serde_json::Map::new())
            .unwrap()
            .bw_elems;
        let cpus: Vec<usize> = (0..engine::launch::online_cpus()).collect();
        // The 1-thread reference is the best of six runs around the 2-thread ones: a
        // burst of load from another process (this machine is shared) can only make it
        // lower, and must not turn into a failure.
        let mut one = [0.0f64; 4];
        let mut two = Vec::new();
        // Arrays past a big cache take longer to stream: fewer repetitions per figure.
        let reps = if elems > 4 << 20 { 2 } else { 5 };
        for _ in 0..3 {
            for (i, (_, g)) in bandwidth(elems, 1, reps, &cpus)
                .unwrap()
                .into_iter()
                .enumerate()
            {
                one[i] = one[i].max(g);
            }
            two.push(bandwidth(elems, 2, reps, &cpus).unwrap());
            for (i, (_, g)) in bandwidth(elems, 1, reps, &cpus)
                .unwrap()
                .into_iter()
                .enumerate()
            {
                one[i] = one[i].max(g);
            }
        }
        for run in &two {
            for ((k, g2), g1) in run.iter().zip(one) {
                assert!(
                    *g2 <= 2.0 * g1 * BOUND_TOLERANCE,
                    "{k:?}: 1 thread {g1:.1} GB/s, 2 threads {g2:.1} GB/s"
                );
            }
        }
    }

    /// Acceptance A, finding 3: copy was glibc's memcpy, whose non-temporal stores skip
    /// the write-allocate read: 20.5 GB/s against 7.0 for write on a VM (2.95x), where
    /// with plain stores copy's 16 counted bytes move 24 and write's 8 move 16 (about
    /// 1.33x, DRAM-bound). Arrays past every cache, the best of three runs each.
    #[test]
    fn copy_uses_plain_stores_like_write() {
        let _alone = crate::REAL_RUN.lock();
        let b = crate::MemBench::from_params(&serde_json::Map::new()).unwrap();
        if !b.arrays_exceed_caches() {
            eprintln!("skipped: the default arrays do not exceed this machine's caches");
            return;
        }
        let cpus = engine::launch::allowed_cpus();
        let (mut write, mut copy) = (0.0f64, 0.0f64);
        for _ in 0..3 {
            for (k, g) in bandwidth(b.bw_elems, 1, 2, &cpus[..1]).unwrap() {
                match k {
                    Kernel::Write => write = write.max(g),
                    Kernel::Copy => copy = copy.max(g),
                    _ => {}
                }
            }
        }
        eprintln!("1 thread: copy {copy:.1} GB/s, write {write:.1} GB/s");
        assert!(
            copy <= 2.0 * write,
            "copy {copy:.1} GB/s, write {write:.1} GB/s: copy skips the write-allocate read"
        );
    }

    #[test]
    fn bytes_are_counted_as_stream_counts_them() {
        let words = |k: Kernel| k.bytes_per_elem() / 8;
        assert_eq!(
            KERNELS.map(|k| (k.name(), words(k))),
            [("read", 1), ("write", 1), ("copy", 2), ("triad", 3)]
        );
    }

    #[test]
    fn small_arrays_give_positive_bandwidth_for_every_kernel() {
        // Alone, like every test that runs the kernels: its threads beside another test's
        // 1-thread reference made that reference low (CI: 2 threads at 2.36x it).
        let _alone = crate::REAL_RUN.lock();
        for threads in [1, 2, 3] {
            // Unwrapped: the arrays validate (each written first, b included).
            let r = bandwidth(1 << 16, threads, 2, &[]).unwrap();
            assert_eq!(r.len(), 4);
            for (k, gbs) in r {
                assert!(
                    gbs.is_finite() && gbs > 0.1,
                    "{threads} threads {k:?}: {gbs}"
                );
            }
        }
    }

    /// A thread the kernel would not pin (here a CPU past any this machine has, as a CPU
    /// outside the cpuset is refused) fails the measurement, naming it; it used to run
    /// wherever the scheduler put it, and its bandwidth was reported as if pinned.
    #[test]
    fn a_thread_that_cannot_be_pinned_fails_the_measurement() {
        let _alone = crate::REAL_RUN.lock();
        let here = engine::launch::allowed_cpus()[0];
        let e = bandwidth(1 << 12, 2, 1, &[here, 4095]).unwrap_err();
        let e = format!("{e:#}");
        assert!(
            e.contains("could not pin the bandwidth threads") && e.contains("thread 1 on CPU 4095"),
            "{e}"
        );
        assert!(!e.contains("thread 0"), "{e}");
        bandwidth(1 << 12, 2, 1, &[here]).unwrap();
    }

    /// The arrays must hold what the kernels computed: a `b` never written (left on the
    /// zero page, read from cache for triad's bytes) or a kernel skipped is an error.
    #[test]
    fn results_that_do_not_validate_are_an_error() {
        let n = 64;
        let (a, b, c) = (vec![6.5; n], vec![2.0; n], vec![1.5; n]);
        validate(&a, &b, &c).unwrap();
        let zero_b = vec![0.0; n];
        let e = validate(&vec![4.5; n], &zero_b, &c)
            .unwrap_err()
            .to_string();
        assert!(e.contains("a[0] is 4.5, not 6.5"), "{e}");
        let mut skipped = c.clone();
        skipped[n - 1] = 0.0;
        let e = validate(&a, &b, &skipped).unwrap_err().to_string();
        assert!(e.contains(&format!("c[{}]", n - 1)), "{e}");
    }
}
