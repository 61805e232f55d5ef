//! Load latency by pointer chasing, and the core clock measured with dependent adds.
//!
//! The chain is a random cyclic permutation (Sattolo's algorithm) of the cache lines of the
//! working set, so every load depends on the previous one and neither the stride nor the
//! page prefetchers can guess the next line (METHODS.md 6: lmbench's fixed stride is open
//! to stride prefetchers; McCalpin's advice is random order over many pages). Pages are
//! advised as transparent huge pages to keep TLB misses out of the cache plateaus where
//! the kernel allows. Each size reports the minimum of several samples, as lmbench does.

use std::time::Instant;

use anyhow::bail;
use rand::{Rng, SeedableRng};

pub const LINE: usize = 64;

/// A transparent huge page where the kernel does not say: x86-64's and arm64's with 4K
/// pages.
const HUGE: usize = 2 << 20;

/// The kernel's transparent huge page size (512 MiB on arm64 with 64K pages).
pub fn huge_page_bytes() -> usize {
    std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .filter(|&n| n.is_power_of_two())
        .unwrap_or(HUGE)
}

/// An anonymous mapping, unmapped on drop: `len` bytes from `ptr`, which starts on a
/// huge page's boundary (the mapping, `map` for `map_len`, is a huge page longer).
pub struct Region {
    ptr: *mut u8,
    len: usize,
    map: *mut libc::c_void,
    map_len: usize,
}

// SAFETY: the mapping is owned memory; we hand out raw pointers only within one thread.
unsafe impl Send for Region {}

impl Region {
    pub fn new(len: usize) -> anyhow::Result<Region> {
        // A huge page more than asked, started at the first boundary in it: before
        // Linux 6.7 (6.12 for lengths not a multiple of 2 MiB) a mapping is not placed
        // on one, and its stretch up to the first (1 MiB on average) stayed in 4 KiB
        // pages: every working set that size or smaller chased over small pages, its
        // TLB misses in the L2 plateau (audit, 2).
        // Rounded up to whole huge pages too: a last part page stayed small, and a
        // 3 MiB buffer read 67% in huge pages.
        let huge = huge_page_bytes();
        let map_len = len.next_multiple_of(huge) + huge;
        // SAFETY: anonymous private mapping; checked for MAP_FAILED.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            bail!(
                "mem: cannot map {len} bytes: {} (lower --max-size)",
                std::io::Error::last_os_error()
            );
        }
        // SAFETY: advice on our own mapping; failure (THP off) only costs TLB misses.
        unsafe {
            libc::madvise(map, map_len, libc::MADV_HUGEPAGE);
        }
        let skip = (map as usize).next_multiple_of(huge) - map as usize;
        Ok(Region {
            // SAFETY: skip < huge, so ptr..ptr+len lies inside the mapping.
            ptr: unsafe { (map as *mut u8).add(skip) },
            len,
            map,
            map_len,
        })
    }

    /// How many of its bytes the kernel backs with huge pages now (AnonHugePages of its
    /// mapping in /proc/self/smaps), after they were touched; None where that cannot be
    /// read.
    pub fn huge_bytes(&self) -> Option<u64> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        anon_huge_bytes(&smaps, self.map as usize)
    }
}

/// The AnonHugePages of the mapping that starts at `start` in an smaps listing, bytes.
fn anon_huge_bytes(smaps: &str, start: usize) -> Option<u64> {
    let mut in_ours = false;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((from, _)) = first.split_once('-').filter(|_| !first.ends_with(':')) {
            in_ours = usize::from_str_radix(from, 16).is_ok_and(|a| a == start);
        } else if in_ours {
            if let Some(kb) = line.strip_prefix("AnonHugePages:") {
                return kb
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .ok()
                    .map(|k| k << 10);
            }
        }
    }
    None
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what we mapped.
        unsafe {
            libc::munmap(self.map, self.map_len);
        }
    }
}

/// Link the first `size` bytes of `r` into one random cycle of cache lines; returns the
/// start of the chain.
pub fn build_chain(r: &mut Region, size: usize, seed: u64) -> anyhow::Result<*const usize> {
    let n = size / LINE;
    if n < 2 || size > r.len {
        bail!("mem: working set {size} B must be at least 128 B and fit the buffer");
    }
    let base = r.ptr as usize;
    let slot = |i: usize| (base + i * LINE) as *mut usize;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    // SAFETY: every slot(i) for i < n lies inside the mapping and is 8-byte aligned.
    unsafe {
        for i in 0..n {
            *slot(i) = i;
        }
        // Sattolo: a uniformly random permutation with a single cycle through all lines.
        for i in (1..n).rev() {
            let j = rng.gen_range(0..i);
            let (a, b) = (*slot(i), *slot(j));
            *slot(i) = b;
            *slot(j) = a;
        }
        for i in 0..n {
            *slot(i) = slot(*slot(i)) as usize;
        }
    }
    Ok(slot(0) as *const usize)
}

/// Follow the chain `loads` times (rounded up to 16), unrolled so the loop overhead hides
/// under the load latency.
#[inline(never)]
pub fn chase(start: *const usize, loads: u64) -> *const usize {
    let mut p = start;
    let mut left = loads.div_ceil(16);
    while left > 0 {
        // SAFETY: every pointer in the chain points to another slot of the chain.
        unsafe {
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
        }
        left -= 1;
    }
    std::hint::black_box(p)
}

/// CPU time of the calling thread, seconds. A dependent chase never sleeps, so its CPU
/// time is its run time with the time it spent descheduled left out: on a shared or
/// oversubscribed host the wall clock would add other tasks' slices to every load.
pub fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return f64::NAN;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

/// ns per load for a `size`-byte working set: minimum over `samples` samples of about
/// `sample_s` each, timed on the thread's CPU clock (see [`thread_cpu_s`]).
pub fn latency_ns(
    r: &mut Region,
    size: usize,
    sample_s: f64,
    samples: usize,
    seed: u64,
) -> anyhow::Result<f64> {
    let start = build_chain(r, size, seed)?;
    let lines = (size / LINE) as u64;
    // Warm: one trip round the chain (capped: beyond the LLC it is all misses anyway).
    let p = chase(start, lines.min(1 << 20));
    // Calibrate the count to the sample time.
    let t = Instant::now();
    let p = chase(p, 4096);
    let per = (t.elapsed().as_secs_f64() / 4096.0).max(1e-10);
    let loads = ((sample_s / per) as u64).clamp(4096, 1 << 32);
    let mut best = f64::INFINITY;
    let mut p = p;
    for _ in 0..samples.max(1) {
        let t = thread_cpu_s();
        p = chase(p, loads);
        let ns = (thread_cpu_s() - t) * 1e9 / (loads.div_ceil(16) * 16) as f64;
        if ns.is_finite() && ns > 0.0 {
            best = best.min(ns);
        }
    }
    if !best.is_finite() {
        bail!("mem: the thread CPU clock did not advance while chasing");
    }
    std::hint::black_box(p);
    Ok(best)
}

/// How the core clock was measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Freq {
    pub hz: f64,
    /// `dependent_add_loop`, `cpufreq`, `proc_cpuinfo`.
    pub source: &'static str,
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn dep_adds(iters: u64) -> u64 {
    let mut x: u64 = 0;
    let mut i = iters.max(1);
    let one: u64 = std::hint::black_box(1);
    // 100 dependent adds per iteration: 100 cycles at one add per cycle of latency (every
    // x86-64 and Arm64 core since the 1990s); the loop counter runs beside them. The addend
    // is a register, not an immediate: Golden Cove and later fold `add reg, imm` chains at
    // rename, which made an immediate loop read 17 GHz.
    // SAFETY: register-only arithmetic, no memory access.
    unsafe {
        #[cfg(target_arch = "x86_64")]
        std::arch::asm!(
            "2:",
            ".rept 100",
            "add {x}, {one}",
            ".endr",
            "dec {i}",
            "jnz 2b",
            x = inout(reg) x,
            i = inout(reg) i,
            one = in(reg) one,
            options(nomem, nostack),
        );
        #[cfg(target_arch = "aarch64")]
        std::arch::asm!(
            "2:",
            ".rept 100",
            "add {x}, {x}, {one}",
            ".endr",
            "subs {i}, {i}, #1",
            "b.ne 2b",
            x = inout(reg) x,
            i = inout(reg) i,
            one = in(reg) one,
            options(nomem, nostack),
        );
    }
    let _ = i;
    x
}

/// Core clock: the fastest of several short dependent-add runs on the thread's CPU clock
/// (the same clock the chase uses, so cycles = ns x this), else cpufreq, else /proc/cpuinfo.
pub fn measure_frequency() -> Option<Freq> {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    {
        let iters = 50_000u64; // 5M cycles: ~2 ms at 2.5 GHz
        let mut best = 0.0f64;
        for _ in 0..40 {
            let t = thread_cpu_s();
            let x = dep_adds(iters);
            let s = thread_cpu_s() - t;
            std::hint::black_box(x);
            if s > 0.0 {
                best = best.max(100.0 * iters as f64 / s);
            }
        }
        // Outside 0.1-7 GHz the loop was optimised away or starved: trust the OS instead.
        if best > 1e8 && best < 7e9 {
            return Some(Freq {
                hz: best,
                source: "dependent_add_loop",
            });
        }
    }
    // The CPU this thread runs on (the chase's, pinned), not cpu0: another CPU's clock
    // can differ by its load or its boost.
    // SAFETY: sched_getcpu takes no arguments and only reads the calling thread's CPU.
    let cpu = u32::try_from(unsafe { libc::sched_getcpu() }).unwrap_or(0);
    if let Ok(s) = std::fs::read_to_string(format!(
        "/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq"
    )) {
        if let Ok(khz) = s.trim().parse::<f64>() {
            return Some(Freq {
                hz: khz * 1e3,
                source: "cpufreq",
            });
        }
    }
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let mhz = cpuinfo_mhz(&info, cpu)?;
    Some(Freq {
        hz: mhz * 1e6,
        source: "proc_cpuinfo",
    })
}

/// `cpu MHz` of processor `cpu` in /proc/cpuinfo's text (each processor's block begins
/// with its `processor : N` line).
fn cpuinfo_mhz(info: &str, cpu: u32) -> Option<f64> {
    fn field(l: &str) -> Option<&str> {
        l.split(':').nth(1).map(str::trim)
    }
    let mut this = false;
    for l in info.lines() {
        if l.starts_with("processor") {
            this = field(l).and_then(|n| n.parse::<u32>().ok()) == Some(cpu);
        } else if this && l.starts_with("cpu MHz") {
            return field(l)?.parse().ok();
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The clock of the CPU asked for, not the first one listed.
    #[test]
    fn cpuinfo_gives_the_mhz_of_the_cpu_asked_for() {
        let info = "processor\t: 0\nmodel name\t: X\ncpu MHz\t\t: 1200.000\n\n\
                    processor\t: 1\nmodel name\t: X\ncpu MHz\t\t: 3400.500\n";
        assert_eq!(cpuinfo_mhz(info, 1), Some(3400.5));
        assert_eq!(cpuinfo_mhz(info, 0), Some(1200.0));
        assert_eq!(cpuinfo_mhz(info, 2), None);
    }

    #[test]
    fn chain_is_one_cycle_through_every_line() {
        let size = 64 * 1000;
        let mut r = Region::new(size).unwrap();
        let start = build_chain(&mut r, size, 7).unwrap();
        let mut seen = std::collections::HashSet::new();
        let mut p = start;
        for _ in 0..1000 {
            assert!(seen.insert(p as usize), "revisited a line early");
            p = unsafe { *p as *const usize };
        }
        assert_eq!(p, start, "the chain must close after every line");
    }

    /// The buffer starts on a huge page's boundary whatever the mapping's place, and
    /// its huge pages are read from smaps.
    #[test]
    fn the_buffer_starts_on_a_huge_page_boundary() {
        for len in [4096, 3 << 20, (5 << 20) + 4096] {
            let r = Region::new(len).unwrap();
            assert_eq!(r.ptr as usize % huge_page_bytes(), 0, "{len}");
            assert!(r.ptr as usize + r.len <= r.map as usize + r.map_len);
        }
        let smaps = "7f0000000000-7f0000600000 rw-p 00000000 00:00 0 \n\
                     Size:               6144 kB\n\
                     AnonHugePages:      4096 kB\n\
                     7f0000600000-7f0000601000 r--p 00000000 00:00 0 \n\
                     AnonHugePages:         0 kB\n";
        assert_eq!(anon_huge_bytes(smaps, 0x7f00_0000_0000), Some(4 << 20));
        assert_eq!(anon_huge_bytes(smaps, 0x7f00_0060_0000), Some(0));
        assert_eq!(anon_huge_bytes(smaps, 0x1000), None);
    }

    #[test]
    fn latency_is_positive_and_small_in_l1() {
        let mut r = Region::new(16 << 10).unwrap();
        let ns = latency_ns(&mut r, 16 << 10, 0.002, 3, 1).unwrap();
        assert!(ns > 0.05 && ns < 50.0, "{ns} ns");
    }

    #[test]
    fn frequency_is_plausible() {
        let f = measure_frequency().unwrap();
        assert!(f.hz > 2e8 && f.hz < 7e9, "{f:?}");
    }
}
