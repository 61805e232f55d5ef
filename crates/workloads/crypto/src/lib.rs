//! The `crypto` workload: public-key and bulk-cipher throughput through OpenSSL, the library
//! `openssl speed` measures, so that our figures can be put beside its figures.
//!
//! RSA follows `apps/speed.c` (METHODS.md 5): a key per size, a 36-byte random buffer, one
//! thread loops `EVP_PKEY_sign` (PKCS#1 v1.5 padding, no digest: a private-key encryption
//! of the 36 bytes, as speed.c does) until a stop flag set after `duration`, then the same
//! for `EVP_PKEY_verify`. Rates are counted on the wall clock like `openssl speed -multi`;
//! the per-CPU-second rate (what plain `openssl speed` prints, from user CPU time) is kept
//! beside it. Each thread has its own key handle (parsed from DER, not shared) so that no
//! reference count or lock is contended between threads. ECDSA P-256 signs a 20-byte
//! buffer as speed.c does; AES-256-GCM seals one record per buffer (new nonce, encrypt, tag:
//! the `openssl speed -aead` method); SHA-256 hashes one buffer per operation.

mod bench;

use std::collections::BTreeMap;

use anyhow::{bail, Context};
use clap::Args;
use engine::{Ctx, StepOutput, Workload};
use model::{Fact, Flag, Metric};
use serde::Deserialize;

pub use bench::{make_key, run_bulk, run_pkey, Op, OpResult};

/// RSA key sizes we time (the sizes of `openssl speed rsa` below 7680).
pub const RSA_BITS: [u32; 5] = [512, 1024, 2048, 3072, 4096];
/// Default buffer sizes for AES-256-GCM and SHA-256 (a subset of openssl speed's sizes).
pub const DEFAULT_BUFFERS: [usize; 4] = [16, 1024, 8192, 16384];

/// `rackbench run crypto` flags. Ids are the parameter keys.
#[derive(Args, Debug)]
pub struct Flags {
    /// Tests: rsa (one per --bits), rsa512..rsa4096, ecdsap256, aes256gcm, sha256.
    #[arg(long = "tests", id = "tests", value_name = "LIST")]
    pub tests: Option<String>,
    /// RSA key sizes for the `rsa` test (512,1024,2048,3072,4096).
    #[arg(long = "bits", id = "bits", value_name = "LIST")]
    pub bits: Option<String>,
    /// Worker threads, each with its own key (sweep: 1,2,4 or 1..8:x2).
    #[arg(long = "threads", id = "threads", value_name = "N")]
    pub threads: Option<String>,
    /// Seconds per timed operation (sign and verify are each timed this long).
    #[arg(long = "duration", id = "duration", value_name = "S")]
    pub duration: Option<String>,
    /// Buffer sizes in bytes for aes256gcm and sha256.
    #[arg(long = "buffer-sizes", id = "buffer_sizes", value_name = "LIST")]
    pub buffer_sizes: Option<String>,
    /// CPUs to pin worker threads to, one each round-robin (`0-3`); default unpinned.
    #[arg(long = "cpus", id = "cpus", value_name = "LIST")]
    pub cpus: Option<String>,
}

/// Plain config of one sweep point.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default = "default_tests")]
    pub tests: Vec<String>,
    #[serde(default = "default_bits")]
    pub bits: Vec<u32>,
    #[serde(default = "one")]
    pub threads: usize,
    #[serde(default = "three")]
    pub duration: f64,
    #[serde(default = "default_buffers")]
    pub buffer_sizes: Vec<usize>,
    #[serde(default)]
    pub cpus: Vec<serde_json::Value>,
}

fn default_tests() -> Vec<String> {
    ["rsa", "ecdsap256", "aes256gcm", "sha256"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}
fn default_bits() -> Vec<u32> {
    RSA_BITS.to_vec()
}
fn one() -> usize {
    1
}
fn three() -> f64 {
    3.0
}
fn default_buffers() -> Vec<usize> {
    DEFAULT_BUFFERS.to_vec()
}

/// Registry entry for `crypto`.
pub fn registration() -> engine::Registration {
    engine::Registration {
        name: "crypto",
        about:
            "RSA sign/verify per second (openssl speed's method), ECDSA P-256, AES-256-GCM, SHA-256",
        list_keys: &["tests", "bits", "buffer_sizes", "cpus"],
        flags: |c| Flags::augment_args(c),
        build: |m| Ok(Box::new(CryptoWorkload::from_params(m)?)),
        service: None,
        driver: None,
    }
}

/// Parse a sweep point into a config; errors name the key.
pub fn parse_config(m: &serde_json::Map<String, serde_json::Value>) -> anyhow::Result<Config> {
    let cfg: Config = serde_json::from_value(serde_json::Value::Object(m.clone()))
        .map_err(|e| anyhow::anyhow!("crypto: bad parameter: {e}"))?;
    validate(&cfg)?;
    Ok(cfg)
}

fn validate(cfg: &Config) -> anyhow::Result<()> {
    let max_threads = 2 * engine::launch::online_cpus();
    if cfg.threads == 0 || cfg.threads > 4096 {
        bail!(
            "crypto: `threads` = {} is out of range: use 1 to {max_threads} (2x the logical CPUs), e.g. --threads 1..{max_threads}:x2",
            cfg.threads
        );
    }
    if !(cfg.duration > 0.0 && cfg.duration <= 3600.0) {
        bail!("crypto: `duration` must be between 0 and 3600 seconds (e.g. --duration 3)");
    }
    for &b in &cfg.bits {
        check_bits(b)?;
    }
    if cfg.buffer_sizes.is_empty() || cfg.buffer_sizes.iter().any(|&b| b == 0 || b > 64 << 20) {
        bail!("crypto: `buffer_sizes` must be 1 B to 64 MiB each (e.g. --buffer-sizes 16,1024,8192,16384)");
    }
    for t in expand_tests(cfg)? {
        Op::parse(&t)?;
    }
    Ok(())
}

fn check_bits(b: u32) -> anyhow::Result<()> {
    if !RSA_BITS.contains(&b) {
        bail!(
            "crypto: RSA key size {b} is not supported: choose from 512, 1024, 2048, 3072, 4096 \
             (e.g. --bits 2048 or --tests rsa2048)"
        );
    }
    Ok(())
}

/// `rsa` expands to one test per key size; other names stay.
pub fn expand_tests(cfg: &Config) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for t in &cfg.tests {
        let t = t.trim().to_ascii_lowercase();
        if t == "rsa" {
            out.extend(cfg.bits.iter().map(|b| format!("rsa{b}")));
        } else if t.is_empty() {
            continue;
        } else {
            out.push(t);
        }
    }
    if out.is_empty() {
        bail!("crypto: no tests selected (e.g. --tests rsa2048,ecdsap256)");
    }
    Ok(out)
}

pub struct CryptoWorkload {
    cfg: Config,
    tests: Vec<String>,
    cpus: Vec<usize>,
}

impl CryptoWorkload {
    pub fn from_params(m: &serde_json::Map<String, serde_json::Value>) -> anyhow::Result<Self> {
        let cfg = parse_config(m)?;
        let tests = expand_tests(&cfg)?;
        let cpus = engine::launch::cpus_from_values(&cfg.cpus, "crypto: `cpus`")?;
        Ok(CryptoWorkload { cfg, tests, cpus })
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }
}

impl Workload for CryptoWorkload {
    fn name(&self) -> &'static str {
        "crypto"
    }

    fn tests(&self) -> Vec<String> {
        self.tests.clone()
    }

    fn prepare(&mut self, _ctx: &Ctx) -> anyhow::Result<()> {
        Ok(())
    }

    fn run_test(&mut self, test: &str, ctx: &Ctx) -> anyhow::Result<StepOutput> {
        let op = Op::parse(test)?;
        let threads = self.cfg.threads;
        let dur = std::time::Duration::from_secs_f64(self.cfg.duration);
        let mut out = StepOutput {
            loadgen_threads: None,
            ..Default::default()
        };
        let mut measured = 0.0;
        match op {
            Op::Rsa(_) | Op::EcdsaP256 => {
                let bits = if let Op::Rsa(b) = op { b } else { 256 };
                ctx.note(&format!(
                    "crypto {test}: threads={threads}, {:?} per op",
                    dur
                ));
                let keys =
                    bench::make_key(op).with_context(|| format!("generating the {test} key"))?;
                let sign = bench::run_pkey(&keys, true, threads, dur, &self.cpus, ctx)?;
                let verify = bench::run_pkey(&keys, false, threads, dur, &self.cpus, ctx)?;
                let labels = |m: Metric| m.label("bits", bits).label("threads", threads);
                out.metrics
                    .push(Metric::new("signs_per_s", sign.ops_per_s(), "ops/s"));
                out.metrics
                    .push(Metric::new("verifies_per_s", verify.ops_per_s(), "ops/s"));
                out.metrics.push(labels(Metric::new(
                    "signs_per_s",
                    sign.ops_per_s(),
                    "ops/s",
                )));
                out.metrics.push(labels(Metric::new(
                    "verifies_per_s",
                    verify.ops_per_s(),
                    "ops/s",
                )));
                push_cpu_metrics(&mut out, "sign", "signs", &sign);
                push_cpu_metrics(&mut out, "verify", "verifies", &verify);
                if sign.wrong > 0 || verify.wrong > 0 {
                    out.flags.push(Flag::invalid(
                        "crypto_failed",
                        format!(
                            "{} sign and {} verify operations failed or did not verify",
                            sign.wrong, verify.wrong
                        ),
                    ));
                }
                measured += sign.wall_s + verify.wall_s;
                if sign.interrupted || verify.interrupted {
                    out.error = Some("interrupted".into());
                }
                out.headline = "signs_per_s".into();
            }
            _ => {
                ctx.note(&format!(
                    "crypto {test}: threads={threads}, {:?} per buffer size",
                    dur
                ));
                let mut last = None;
                for &size in &self.cfg.buffer_sizes {
                    let r = bench::run_bulk(op, size, threads, dur, &self.cpus, ctx)?;
                    let mbps = r.ops_per_s() * size as f64 / 1e6;
                    out.metrics.push(
                        Metric::new("throughput_mb_per_s", mbps, "MB/s")
                            .label("buffer_bytes", size)
                            .label("threads", threads),
                    );
                    out.metrics.push(
                        Metric::new("ops_per_s", r.ops_per_s(), "ops/s")
                            .label("buffer_bytes", size)
                            .label("threads", threads),
                    );
                    measured += r.wall_s;
                    if r.interrupted {
                        out.error = Some("interrupted".into());
                        break;
                    }
                    last = Some((size, mbps));
                }
                // The headline is the largest buffer, the figure people quote for bulk speed.
                if let Some((size, mbps)) = last {
                    out.metrics
                        .push(Metric::new("throughput_mb_per_s", mbps, "MB/s"));
                    out.metrics
                        .push(Metric::new("headline_buffer_bytes", size as f64, "B"));
                }
                out.headline = "throughput_mb_per_s".into();
            }
        }
        out.duration_s = measured;
        Ok(out)
    }

    fn cleanup(&mut self) {}

    fn disclosure(&self) -> BTreeMap<String, Fact> {
        let mut m = BTreeMap::new();
        m.insert(
            "software.openssl".into(),
            Fact::known(openssl::version::version()),
        );
        m.insert(
            "crypto.method".into(),
            Fact::known(
                "EVP_PKEY_sign/verify over 36 random bytes (RSA PKCS#1 v1.5, no digest) as openssl speed; \
                 wall-clock rates summed over threads",
            ),
        );
        m
    }
}

fn push_cpu_metrics(out: &mut StepOutput, what: &str, plural: &str, r: &OpResult) {
    if r.cpu_s > 0.0 {
        // What plain `openssl speed` prints: operations per second of CPU time.
        out.metrics.push(Metric::new(
            format!("{plural}_per_cpu_s"),
            r.ops as f64 / r.cpu_s,
            "ops/cpu-s",
        ));
        out.metrics.push(Metric::new(
            format!("{what}_cpu_pct"),
            100.0 * r.cpu_s / r.wall_s.max(1e-9),
            "%",
        ));
    } else {
        out.missing.push(model::MissingMetric {
            name: format!("{plural}_per_cpu_s"),
            reason: "getrusage(RUSAGE_THREAD) reported no CPU time".into(),
        });
    }
    out.metrics.push(Metric::new(
        format!("{what}_time_us"),
        1e6 * r.wall_s * r.threads as f64 / (r.ops.max(1) as f64),
        "us",
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(v: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn unsupported_key_size_is_a_clear_error() {
        let e = CryptoWorkload::from_params(&params(json!({"bits": [1536]})))
            .err()
            .unwrap();
        assert!(e.to_string().contains("1536 is not supported"), "{e}");
        let e = CryptoWorkload::from_params(&params(json!({"tests": ["rsa1536"]})))
            .err()
            .unwrap();
        assert!(e.to_string().contains("1536 is not supported"), "{e}");
    }

    #[test]
    fn unknown_key_is_named() {
        let e = CryptoWorkload::from_params(&params(json!({"thread": 2})))
            .err()
            .unwrap();
        assert!(format!("{e:#}").contains("thread"), "{e:#}");
    }

    #[test]
    fn rsa_expands_by_bits() {
        let w = CryptoWorkload::from_params(&params(
            json!({"tests": ["rsa", "sha256"], "bits": [512, 2048]}),
        ))
        .unwrap();
        assert_eq!(w.tests(), vec!["rsa512", "rsa2048", "sha256"]);
    }

    #[test]
    fn rsa512_two_threads_measures_both() {
        let mut w = CryptoWorkload::from_params(&params(
            json!({"tests": ["rsa512"], "threads": 2, "duration": 0.2}),
        ))
        .unwrap();
        let out = w.run_test("rsa512", &Ctx::quiet()).unwrap();
        let s = out
            .metrics
            .iter()
            .find(|m| m.name == "signs_per_s" && m.labels.is_empty())
            .unwrap();
        let v = out
            .metrics
            .iter()
            .find(|m| m.name == "verifies_per_s" && m.labels.is_empty())
            .unwrap();
        assert!(s.value > 100.0, "signs/s {}", s.value);
        // Verify with e=65537 is much cheaper than sign.
        assert!(v.value > s.value, "verify {} <= sign {}", v.value, s.value);
        assert!(out.flags.is_empty(), "{:?}", out.flags);
        assert_eq!(out.headline, "signs_per_s");
    }

    #[test]
    fn bulk_and_ecdsa_run() {
        let mut w = CryptoWorkload::from_params(&params(json!({
            "tests": ["ecdsap256", "aes256gcm", "sha256"], "duration": 0.1, "buffer_sizes": [16, 1024]
        })))
        .unwrap();
        for t in w.tests() {
            let out = w.run_test(&t, &Ctx::quiet()).unwrap();
            let h = out
                .metrics
                .iter()
                .find(|m| m.name == out.headline && m.labels.is_empty())
                .unwrap();
            assert!(h.value > 0.0, "{t}: {h:?}");
            assert!(out.flags.is_empty(), "{t}: {:?}", out.flags);
        }
    }
}
