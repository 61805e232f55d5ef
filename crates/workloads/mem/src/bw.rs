//! STREAM-like memory bandwidth: read (sum), write (fill), copy (c = a) and triad
//! (a = b + s*c) over f64 arrays split evenly across threads, each thread pinned to its own
//! CPU. Bytes are counted as STREAM counts them (8 B per element read or written, no
//! write-allocate traffic); each kernel's best of several timed passes is kept, after one
//! untimed pass that also places the pages (first touch by the thread that uses them).

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
    /// STREAM's byte count per element.
    pub fn bytes_per_elem(self) -> usize {
        match self {
            Kernel::Read | Kernel::Write => 8,
            Kernel::Copy => 16,
            Kernel::Triad => 24,
        }
    }
}

fn run_kernel(k: Kernel, a: &mut [f64], b: &mut [f64], c: &mut [f64]) {
    match k {
        Kernel::Read => {
            // Four accumulators so the adds do not serialise on one register.
            let mut s = [0.0f64; 4];
            for ch in a.chunks_exact(4) {
                s[0] += ch[0];
                s[1] += ch[1];
                s[2] += ch[2];
                s[3] += ch[3];
            }
            std::hint::black_box(s);
        }
        Kernel::Write => {
            for x in a.iter_mut() {
                *x = 1.5;
            }
        }
        Kernel::Copy => c.copy_from_slice(a),
        Kernel::Triad => {
            let s = 3.0;
            for ((x, y), z) in a.iter_mut().zip(b.iter()).zip(c.iter()) {
                *x = *y + s * *z;
            }
        }
    }
    std::hint::black_box((a.as_ptr(), c.as_ptr()));
}

/// GB/s (10^9 B/s) per kernel with `threads` threads over arrays of `elems` f64 each.
pub fn bandwidth(
    elems: usize,
    threads: usize,
    passes: usize,
    cpus: &[usize],
) -> Vec<(Kernel, f64)> {
    let threads = threads.max(1);
    let mut a = vec![0.0f64; elems];
    let mut b = vec![0.0f64; elems];
    let mut c = vec![0.0f64; elems];
    let chunk = elems.div_ceil(threads).max(4);
    let barrier = Barrier::new(threads + 1);
    let passes = passes.max(1);
    let mut best = [f64::INFINITY; 4];
    std::thread::scope(|s| {
        let parts = a
            .chunks_mut(chunk)
            .zip(b.chunks_mut(chunk))
            .zip(c.chunks_mut(chunk))
            .enumerate();
        let mut started = 0;
        for (i, ((pa, pb), pc)) in parts {
            started += 1;
            let barrier = &barrier;
            let cpu = (!cpus.is_empty()).then(|| cpus[i % cpus.len()]);
            s.spawn(move || {
                if let Some(c) = cpu {
                    let _ = engine::launch::pin_current_thread(&[c]);
                }
                // Untimed first pass (places pages), then the timed passes.
                for _pass in 0..=passes {
                    for k in KERNELS {
                        barrier.wait();
                        run_kernel(k, pa, pb, pc);
                        barrier.wait();
                    }
                }
            });
        }
        // Fewer chunks than threads (tiny arrays): idle parties keep the barrier count.
        for _ in started..threads {
            let barrier = &barrier;
            s.spawn(move || {
                for _ in 0..=passes {
                    for _ in KERNELS {
                        barrier.wait();
                        barrier.wait();
                    }
                }
            });
        }
        for pass in 0..=passes {
            for (ki, _) in KERNELS.iter().enumerate() {
                barrier.wait();
                let t = Instant::now();
                barrier.wait();
                let dt = t.elapsed().as_secs_f64();
                if pass > 0 {
                    best[ki] = best[ki].min(dt);
                }
            }
        }
    });
    KERNELS
        .iter()
        .zip(best)
        .map(|(k, t)| (*k, (k.bytes_per_elem() * elems) as f64 / t / 1e9))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_arrays_give_positive_bandwidth_for_every_kernel() {
        for threads in [1, 2, 3] {
            let r = bandwidth(1 << 16, threads, 2, &[]);
            assert_eq!(r.len(), 4);
            for (k, gbs) in r {
                assert!(
                    gbs.is_finite() && gbs > 0.1,
                    "{threads} threads {k:?}: {gbs}"
                );
            }
        }
    }
}
