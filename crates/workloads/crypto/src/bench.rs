//! The timed loops: N threads, each with its own OpenSSL handles, run one operation until
//! a shared stop flag is set after the duration (speed.c's SIGALRM), each counting its own
//! operations and its own CPU time (getrusage RUSAGE_THREAD). Handles are built before the
//! start barrier so that key parsing and context setup are not timed. The timing ends
//! early when the test's [`Progress`] says to stop (Ctrl-C, or the test cancelled on the
//! host it runs on). While a run goes on, the thread that times it also takes the test's
//! checkpoints ([`Checkpointing`]) from the counts the workers leave for the progress
//! display.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{bail, Context};
use engine::host::StepCheckpoints;
use engine::workload::Progress;
use openssl::cipher::Cipher;
use openssl::cipher_ctx::CipherCtx;
use openssl::ec::{EcGroup, EcKey};
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::pkey_ctx::PkeyCtx;
use openssl::rsa::{Padding, Rsa};

/// One test's operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Rsa(u32),
    EcdsaP256,
    Aes256Gcm,
    Sha256,
}

impl Op {
    /// Parse a test name (`rsa2048`, `ecdsap256`, `aes256gcm`, `sha256`).
    pub fn parse(test: &str) -> anyhow::Result<Op> {
        let t = test.trim().to_ascii_lowercase();
        if let Some(b) = t.strip_prefix("rsa") {
            let bits: u32 = b.parse().with_context(|| {
                format!("crypto: unknown test `{test}` (RSA tests are rsa512, rsa1024, rsa2048, rsa3072, rsa4096)")
            })?;
            if !crate::RSA_BITS.contains(&bits) {
                bail!(
                    "crypto: RSA key size {bits} is not supported: choose from 512, 1024, 2048, 3072, 4096 \
                     (e.g. --tests rsa2048)"
                );
            }
            return Ok(Op::Rsa(bits));
        }
        match t.as_str() {
            "ecdsap256" => Ok(Op::EcdsaP256),
            "aes256gcm" => Ok(Op::Aes256Gcm),
            "sha256" => Ok(Op::Sha256),
            _ => bail!(
                "crypto: unknown test `{test}`: choose from rsa, rsa512..rsa4096, ecdsap256, aes256gcm, sha256"
            ),
        }
    }
}

/// What one timed operation measured, summed over threads.
#[derive(Debug, Clone, Default)]
pub struct OpResult {
    pub threads: usize,
    /// Operations completed, all threads: those that succeeded (a failed one is no
    /// work done, and fails fast: an AES-GCM refusing its IV in 200 ns read as 82 GB/s).
    pub ops: u64,
    /// Sum over threads of ops_i / wall_i (speed.c -multi sums per-process rates), of
    /// the operations that succeeded.
    pub rate_per_s: f64,
    /// Longest thread wall time, seconds.
    pub wall_s: f64,
    /// CPU time (user + system) of the worker threads, seconds.
    pub cpu_s: f64,
    /// Operations that failed or did not verify (should be 0).
    pub wrong: u64,
    pub interrupted: bool,
    /// The timed part, on this host's clock: from the first thread's start to the last
    /// one's end (None: nothing ran).
    pub span: Option<(SystemTime, SystemTime)>,
    /// Counted at a checkpoint while the run went on ([`Checkpointing`]): its operations
    /// to then over the time since its start, and no CPU time (each thread reads its own
    /// at the run's end; `cpu_s` is 0).
    pub so_far: bool,
}

impl OpResult {
    pub fn ops_per_s(&self) -> f64 {
        self.rate_per_s
    }
}

/// DER of a fresh private key for the operation (each thread parses its own copy).
pub fn make_key(op: Op) -> anyhow::Result<Vec<u8>> {
    let pkey = match op {
        Op::Rsa(bits) => PKey::from_rsa(Rsa::generate(bits)?)?,
        Op::EcdsaP256 => {
            let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1)?;
            PKey::from_ec_key(EcKey::generate(&group)?)?
        }
        _ => bail!("no key for {op:?}"),
    };
    Ok(pkey.private_key_to_der()?)
}

fn thread_cpu_s() -> f64 {
    // SAFETY: getrusage writes into the zeroed struct we own.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_THREAD, &mut ru) != 0 {
            return 0.0;
        }
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        tv(ru.ru_utime) + tv(ru.ru_stime)
    }
}

/// A test's checkpoints as one of its timed runs takes them: when one is due at a poll
/// of the run's timer, `take` is given what the run counted so far ([`OpResult::so_far`]).
pub struct Checkpointing<'a> {
    pub checkpoints: &'a StepCheckpoints,
    pub take: &'a dyn Fn(OpResult),
}

struct ThreadOut {
    ops: u64,
    span: (SystemTime, SystemTime),
    wall_s: f64,
    cpu_s: f64,
    wrong: u64,
}

/// Run `threads` copies of `body` for `dur`. `setup(i)` builds a thread's state before the
/// start barrier; `body(state)` does one operation and returns false if it failed.
fn run_threads<S, F, B>(
    threads: usize,
    dur: Duration,
    cpus: &[usize],
    progress: &Progress,
    so_far: Option<&Checkpointing>,
    setup: F,
    body: B,
) -> anyhow::Result<OpResult>
where
    F: Fn(usize) -> anyhow::Result<S> + Sync,
    B: Fn(&mut S) -> bool + Sync,
{
    let stop = AtomicBool::new(false);
    let barrier = Barrier::new(threads + 1);
    let counts: Vec<AtomicU64> = (0..threads).map(|_| AtomicU64::new(0)).collect();
    // Each thread's failed operations, left at each failure (rare: never in a sound
    // run), so that a checkpoint counts only those that succeeded.
    let failed: Vec<AtomicU64> = (0..threads).map(|_| AtomicU64::new(0)).collect();
    progress.done.store(0, Ordering::Relaxed);
    let mut interrupted = false;
    let results: Vec<anyhow::Result<ThreadOut>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let (stop, barrier, counts, failed, setup, body) =
                    (&stop, &barrier, &counts, &failed, &setup, &body);
                let cpu = if cpus.is_empty() {
                    None
                } else {
                    Some(cpus[i % cpus.len()])
                };
                s.spawn(move || -> anyhow::Result<ThreadOut> {
                    let prepared = (|| {
                        if let Some(c) = cpu {
                            engine::launch::pin_current_thread(&[c])?;
                        }
                        setup(i)
                    })();
                    // Always reach the barrier, even after a setup error, so nobody hangs.
                    barrier.wait();
                    let mut state = prepared?;
                    let cpu0 = thread_cpu_s();
                    let (wall0, t0) = (SystemTime::now(), Instant::now());
                    let (mut ops, mut wrong) = (0u64, 0u64);
                    // The count is published every `every` operations: 16 keeps the clock
                    // and the store off a fast operation's path, but an rsa15360 key
                    // (2 s an operation) left a checkpoint at 0 for up to half a minute, so
                    // operations over 1 ms each publish every one.
                    let (mut every, mut since, mut published) = (1u64, 0u64, t0);
                    while !stop.load(Ordering::Relaxed) {
                        if body(&mut state) {
                            ops += 1;
                        } else {
                            wrong += 1;
                            failed[i].store(wrong, Ordering::Relaxed);
                        }
                        since += 1;
                        if since >= every {
                            // Release: a checkpoint that reads this count (Acquire) sees
                            // the failures stored before it.
                            counts[i].store(ops + wrong, Ordering::Release);
                            let now = Instant::now();
                            let slow = now - published > Duration::from_millis(since);
                            every = if slow { 1 } else { 16 };
                            (since, published) = (0, now);
                        }
                    }
                    let took = t0.elapsed();
                    Ok(ThreadOut {
                        ops,
                        span: (wall0, wall0 + took),
                        wall_s: took.as_secs_f64(),
                        cpu_s: thread_cpu_s() - cpu0,
                        wrong,
                    })
                })
            })
            .collect();
        barrier.wait();
        let (wall0, t0) = (SystemTime::now(), Instant::now());
        let deadline = t0 + dur;
        loop {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            if progress.stopping() {
                interrupted = true;
                break;
            }
            let tried: u64 = counts.iter().map(|c| c.load(Ordering::Acquire)).sum();
            progress.done.store(tried, Ordering::Relaxed);
            if let Some(c) = so_far.filter(|c| c.checkpoints.due()) {
                let wrong: u64 = failed.iter().map(|c| c.load(Ordering::Relaxed)).sum();
                // The counts lag each thread's by up to 15 fast operations (none of
                // slow ones), and a failure is left at once: the operations that
                // succeeded are at least these.
                let ops = tried.saturating_sub(wrong);
                let took = t0.elapsed();
                (c.take)(OpResult {
                    threads,
                    ops,
                    rate_per_s: ops as f64 / took.as_secs_f64().max(1e-9),
                    wall_s: took.as_secs_f64(),
                    wrong,
                    span: Some((wall0, wall0 + took)),
                    so_far: true,
                    ..Default::default()
                });
            }
            // Now again: handing a checkpoint takes time, and the sleep from before it
            // overshot the deadline by that much.
            let now = Instant::now();
            std::thread::sleep(
                deadline
                    .saturating_duration_since(now)
                    .min(Duration::from_millis(50)),
            );
        }
        stop.store(true, Ordering::Relaxed);
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("worker thread panicked")))
            })
            .collect()
    });
    let mut r = OpResult {
        threads,
        interrupted,
        ..Default::default()
    };
    for t in results {
        let t = t?;
        r.ops += t.ops;
        r.rate_per_s += t.ops as f64 / t.wall_s.max(1e-9);
        r.wall_s = r.wall_s.max(t.wall_s);
        r.span = Some(engine::workload::widen(r.span, t.span));
        r.cpu_s += t.cpu_s;
        r.wrong += t.wrong;
    }
    progress.done.store(r.ops + r.wrong, Ordering::Relaxed);
    Ok(r)
}

/// Time sign (or verify) with the key in `der` (RSA or EC).
pub fn run_pkey(
    der: &[u8],
    sign: bool,
    threads: usize,
    dur: Duration,
    cpus: &[usize],
    progress: &Progress,
    so_far: Option<&Checkpointing>,
) -> anyhow::Result<OpResult> {
    struct St {
        // Kept alive for the ctx.
        _key: PKey<Private>,
        pctx: PkeyCtx<Private>,
        buf: Vec<u8>,
        sig: Vec<u8>,
        sig_len: usize,
    }
    let setup = |_i: usize| -> anyhow::Result<St> {
        let key = PKey::private_key_from_der(der)?;
        let is_rsa = key.rsa().is_ok();
        // speed.c: 36 bytes for RSA, 20 for ECDSA, from RAND_bytes.
        let mut buf = vec![0u8; if is_rsa { 36 } else { 20 }];
        openssl::rand::rand_bytes(&mut buf)?;
        let mut pctx = PkeyCtx::new(&key)?;
        pctx.sign_init()?;
        if is_rsa {
            pctx.set_rsa_padding(Padding::PKCS1)?;
        }
        let mut sig = vec![0u8; key.size()];
        let sig_len = pctx.sign(&buf, Some(&mut sig))?;
        if !sign {
            pctx.verify_init()?;
            if is_rsa {
                pctx.set_rsa_padding(Padding::PKCS1)?;
            }
            if !pctx.verify(&buf, &sig[..sig_len])? {
                bail!("a fresh signature did not verify");
            }
        }
        Ok(St {
            _key: key,
            pctx,
            buf,
            sig,
            sig_len,
        })
    };
    if sign {
        run_threads(threads, dur, cpus, progress, so_far, setup, |st| {
            let St { pctx, buf, sig, .. } = st;
            pctx.sign(buf, Some(sig)).is_ok()
        })
    } else {
        run_threads(threads, dur, cpus, progress, so_far, setup, |st| {
            matches!(st.pctx.verify(&st.buf, &st.sig[..st.sig_len]), Ok(true))
        })
    }
}

/// Time AES-256-GCM records or SHA-256 hashes of `size` bytes.
pub fn run_bulk(
    op: Op,
    size: usize,
    threads: usize,
    dur: Duration,
    cpus: &[usize],
    progress: &Progress,
    so_far: Option<&Checkpointing>,
) -> anyhow::Result<OpResult> {
    match op {
        Op::Aes256Gcm => {
            struct St {
                c: CipherCtx,
                input: Vec<u8>,
                out: Vec<u8>,
                nonce: [u8; 12],
                counter: u64,
                tag: [u8; 16],
            }
            let setup = |_i: usize| -> anyhow::Result<St> {
                let mut key = [0u8; 32];
                let mut nonce = [0u8; 12];
                openssl::rand::rand_bytes(&mut key)?;
                openssl::rand::rand_bytes(&mut nonce)?;
                let mut c = CipherCtx::new()?;
                c.encrypt_init(Some(Cipher::aes_256_gcm()), Some(&key), Some(&nonce))?;
                let mut input = vec![0u8; size];
                openssl::rand::rand_bytes(&mut input)?;
                Ok(St {
                    c,
                    input,
                    out: vec![0u8; size + 16],
                    nonce,
                    counter: 0,
                    tag: [0u8; 16],
                })
            };
            run_threads(threads, dur, cpus, progress, so_far, setup, |st| {
                // A new nonce per record, as TLS does; the key schedule is kept.
                st.counter += 1;
                st.nonce[4..].copy_from_slice(&st.counter.to_be_bytes());
                let ok = st.c.encrypt_init(None, None, Some(&st.nonce)).is_ok()
                    && st.c.cipher_update(&st.input, Some(&mut st.out)).is_ok()
                    && st.c.cipher_final(&mut st.out[size..]).is_ok()
                    && st.c.tag(&mut st.tag).is_ok();
                std::hint::black_box(&st.tag);
                ok
            })
        }
        Op::Sha256 => {
            struct St {
                md: openssl::md::Md,
                ctx: openssl::md_ctx::MdCtx,
                input: Vec<u8>,
                out: [u8; 32],
            }
            // The digest fetched once and a context reused, as `openssl speed -evp
            // sha256` does. OpenSSL 3's one-shot `SHA256()` (openssl::sha::sha256) looks
            // the algorithm up on every call: 3-5x slower than openssl speed at 16 B
            // (acceptance M, 2).
            let setup = |_i: usize| -> anyhow::Result<St> {
                let mut input = vec![0u8; size];
                openssl::rand::rand_bytes(&mut input)?;
                Ok(St {
                    md: openssl::md::Md::fetch(None, "SHA256", None)?,
                    ctx: openssl::md_ctx::MdCtx::new()?,
                    input,
                    out: [0u8; 32],
                })
            };
            run_threads(threads, dur, cpus, progress, so_far, setup, |st| {
                let ok = st.ctx.digest_init(&st.md).is_ok()
                    && st.ctx.digest_update(&st.input).is_ok()
                    && st.ctx.digest_final(&mut st.out).is_ok();
                std::hint::black_box(&st.out);
                ok
            })
        }
        _ => bail!("{op:?} is not a bulk operation"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A failed operation is counted as failed, not as work: its rate is of those that
    /// succeeded (an AES-GCM failing fast on every IV read as tens of GB/s, unflagged).
    #[test]
    fn failed_operations_are_no_throughput() {
        let progress = Progress::default();
        let r = run_threads(
            1,
            Duration::from_millis(50),
            &[],
            &progress,
            None,
            |_| Ok(0u64),
            |n: &mut u64| {
                *n += 1;
                !(*n).is_multiple_of(4)
            },
        )
        .unwrap();
        assert!(r.wrong > 0, "{r:?}");
        // Three in four succeeded: the count and the rate hold those alone.
        let tried = r.ops + r.wrong;
        assert!(
            r.ops * 4 >= tried * 3 - 4 && r.ops * 4 <= tried * 3 + 4,
            "{r:?}"
        );
        let rate = r.ops as f64 / r.wall_s;
        assert!((r.ops_per_s() - rate).abs() <= 1e-6 * rate, "{r:?}");
        assert_eq!(
            progress.done.load(Ordering::Relaxed),
            tried,
            "progress counts every try"
        );
    }

    /// Operations slower than 1 ms (an rsa15360 sign takes seconds) are each counted as
    /// they end, not 16 at a time: a checkpoint read 0 for up to 16 of them.
    #[test]
    fn slow_operations_are_counted_as_they_end() {
        let progress = Progress::default();
        let seen = std::thread::scope(|s| {
            let watch = s.spawn(|| {
                std::thread::sleep(Duration::from_millis(250));
                progress.done.load(Ordering::Relaxed)
            });
            run_threads(
                1,
                Duration::from_millis(400),
                &[],
                &progress,
                None,
                |_| Ok(()),
                |_: &mut ()| {
                    std::thread::sleep(Duration::from_millis(20));
                    true
                },
            )
            .unwrap();
            watch.join().unwrap()
        });
        // About 10 done by then (the timer's last poll at 200 ms or later); 16 at a time
        // read 0.
        assert!(seen >= 4, "{seen}");
    }

    #[test]
    fn parse_names() {
        assert_eq!(Op::parse("RSA2048").unwrap(), Op::Rsa(2048));
        assert_eq!(Op::parse("sha256").unwrap(), Op::Sha256);
        assert!(Op::parse("rsa").is_err());
        assert!(Op::parse("md5")
            .unwrap_err()
            .to_string()
            .contains("choose from"));
    }
}
