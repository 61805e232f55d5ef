//! The `crypto` workload: public-key and bulk-cipher throughput through OpenSSL, the library
//! `openssl speed` measures, so that our figures can be put beside its figures.
//!
//! RSA follows `apps/speed.c` (METHODS.md 5): a key per size, a 36-byte random buffer, one
//! thread loops `EVP_PKEY_sign` (PKCS#1 v1.5 padding, no digest: a private-key encryption
//! of the 36 bytes, as speed.c does) until a stop flag set after `duration`, then the same
//! for `EVP_PKEY_verify`. Rates are counted on the wall clock like `openssl speed -multi`;
//! the per-CPU-second rate (what plain `openssl speed` prints, from user CPU time; ours
//! divides by the threads' user and system time, so it can only read a little lower) is
//! kept beside it. Each thread has its own key handle (parsed from DER, not shared) so that no
//! reference count or lock is contended between threads. ECDSA P-256 signs a 20-byte
//! buffer as speed.c does; AES-256-GCM seals one record per buffer (new nonce, encrypt, tag:
//! the `openssl speed -aead` method); SHA-256 hashes one buffer per operation.
//!
//! The machine measured is the system under test and there is no server: [`service`]
//! only reports the OpenSSL there, and [`driver`] runs each whole test on the host it is
//! sent to. The controller ([`CryptoWorkload`]) sends every test, as one job, to the
//! system under test's host (in this process when the context has no hosts).

mod bench;
pub mod driver;
pub mod service;

use std::collections::BTreeMap;

use anyhow::bail;
use clap::Args;
use engine::host::SutService;
use engine::workload::{CpuList, CpuRole, Params};
use engine::{Ctx, StepOutput, Workload};
use model::Fact;
use serde::{Deserialize, Serialize};

pub use bench::{make_key, run_bulk, run_pkey, Op, OpResult};

/// RSA key sizes we time (the sizes of `openssl speed rsa` below 7680).
pub const RSA_BITS: [u32; 5] = [512, 1024, 2048, 3072, 4096];
/// Default buffer sizes for AES-256-GCM and SHA-256 (a subset of openssl speed's sizes).
pub const DEFAULT_BUFFERS: [usize; 4] = [16, 1024, 8192, 16384];

/// `rackbench run crypto` flags. Ids are the parameter keys.
#[derive(Args, Debug)]
pub struct Flags {
    /// Tests: rsa (one per --bits), rsa512..rsa4096, ecdsap256, aes256gcm, sha256.
    #[arg(short = 't', long = "tests", id = "tests", value_name = "LIST")]
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
#[derive(Debug, Clone, Serialize, Deserialize)]
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
        text_keys: &[],
        flags: |c| Flags::augment_args(c),
        build: |m| Ok(Box::new(CryptoWorkload::from_params(m)?)),
        service: Some(service::start_service),
        has_server: false,
        driver: Some(driver::drive),
        programs: engine::no_programs,
        lengthen: "--duration",
    }
}

/// Parse a sweep point into a config; errors name the key.
pub fn parse_config(m: &serde_json::Map<String, serde_json::Value>) -> anyhow::Result<Config> {
    let cfg: Config = engine::plan::config_from_params("crypto", m)?;
    validate(&cfg)?;
    Ok(cfg)
}

/// The most worker threads a test takes.
pub const MAX_THREADS: usize = 4096;

fn validate(cfg: &Config) -> anyhow::Result<()> {
    // The bound is the one the check holds: the threads run on the system under test,
    // which may be another host with more CPUs than this one, so this one's count is no
    // limit (the message said "use 1 to 4" and `--threads 9` ran). More threads than
    // the CPUs where they run are flagged there (`threads_oversubscribed`).
    if cfg.threads == 0 || cfg.threads > MAX_THREADS {
        let here = engine::launch::online_cpus();
        bail!(
            "crypto: `threads` = {} is out of range: use 1 to {MAX_THREADS} (threads past the \
             logical CPUs take turns on them: {here} on this machine, e.g. --threads \
             1..{here}:x2)",
            cfg.threads
        );
    }
    engine::workload::check_duration("crypto", cfg.duration, 3600.0)?;
    for &b in &cfg.bits {
        check_bits(b)?;
    }
    engine::plan::refuse_repeats("--bits", &cfg.bits)?;
    engine::plan::refuse_repeats("--buffer-sizes", &cfg.buffer_sizes)?;
    if cfg.buffer_sizes.is_empty() || cfg.buffer_sizes.iter().any(|&b| b == 0 || b > 64 << 20) {
        bail!("crypto: `buffer_sizes` must be 1 B to 64 MiB each (e.g. --buffer-sizes 16,1024,8192,16384)");
    }
    let tests = expand_tests(cfg)?;
    for t in &tests {
        Op::parse(t)?;
    }
    // Settings no test asked reads: the run would stand as measured with them.
    if cfg.buffer_sizes != default_buffers()
        && !tests.iter().any(|t| t == "aes256gcm" || t == "sha256")
    {
        bail!(
            "crypto: `buffer_sizes` are the buffers of aes256gcm and sha256, and the tests asked \
             are {}; add one of them to --tests, or leave --buffer-sizes out",
            tests.join(",")
        );
    }
    if cfg.bits != default_bits()
        && !cfg
            .tests
            .iter()
            .any(|t| t.trim().eq_ignore_ascii_case("rsa"))
    {
        bail!(
            "crypto: `bits` gives the key sizes of the `rsa` test, and the tests asked are {}; \
             add rsa to --tests (or name the size, rsa2048), or leave --bits out",
            tests.join(",")
        );
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

/// How long a test of `op` is timed in all: sign then verify for a key, one timed run
/// per buffer size for a bulk operation, each `cfg.duration`.
pub fn timed_s(op: Op, cfg: &Config) -> f64 {
    let runs = match op {
        Op::Rsa(_) | Op::EcdsaP256 => 2,
        _ => cfg.buffer_sizes.len(),
    };
    runs as f64 * cfg.duration
}

/// The controller: each test is sent whole to the system under test.
pub struct CryptoWorkload {
    cfg: Config,
    tests: Vec<String>,
    /// The sweep point's parameters as given: the driver reads them again where it runs.
    params: Params,
    /// The service started on the system under test in `prepare` (its facts).
    sut: Option<SutService>,
}

impl CryptoWorkload {
    pub fn from_params(m: &serde_json::Map<String, serde_json::Value>) -> anyhow::Result<Self> {
        let cfg = parse_config(m)?;
        let tests = expand_tests(&cfg)?;
        // Checked here so that a bad list stops the run before anything starts; the
        // driver reads it again on the host it runs on.
        engine::launch::cpus_from_values(&cfg.cpus, "crypto: `cpus`")?;
        Ok(CryptoWorkload {
            cfg,
            tests,
            params: m.clone(),
            sut: None,
        })
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }
}

impl Workload for CryptoWorkload {
    /// Less the knobs no asked test reads ([`model::unread_by`]): `bits` is `rsa`'s
    /// list (each RSA test names its own), the buffer sizes are AES-256-GCM's and
    /// SHA-256's (review H, 12: the report's settings said `bits 512, ..., 4096` of a run
    /// of rsa2048 alone).
    fn settings(&self) -> engine::workload::Params {
        let mut s = engine::workload::settings_of(&[serde_json::to_value(&self.cfg)]);
        for k in ["bits", "buffer_sizes"] {
            if self
                .tests
                .iter()
                .all(|t| model::unread_by("crypto", t).contains(&k))
            {
                s.remove(k);
            }
        }
        s
    }

    fn name(&self) -> &'static str {
        "crypto"
    }

    fn tests(&self) -> Vec<String> {
        self.tests.clone()
    }

    fn cpu_lists(&self) -> anyhow::Result<Vec<CpuList>> {
        // Each test runs on the system under test, pinned there.
        Ok(vec![CpuList {
            flag: "--cpus",
            role: CpuRole::Sut,
            cpus: engine::launch::cpus_from_values(&self.cfg.cpus, "crypto: `cpus`")?,
        }])
    }

    fn prepare(&mut self, ctx: &Ctx) -> anyhow::Result<()> {
        self.cleanup();
        self.sut = Some(SutService::start(
            ctx,
            "crypto",
            &self.params,
            service::start_service,
        )?);
        Ok(())
    }

    fn expected_duration_s(&self, test: &str) -> Option<f64> {
        Some(timed_s(Op::parse(test).ok()?, &self.cfg))
    }

    fn run_test(&mut self, test: &str, ctx: &Ctx) -> anyhow::Result<StepOutput> {
        let op = Op::parse(test)?;
        let per = match op {
            Op::Rsa(_) | Op::EcdsaP256 => "per op",
            _ => "per buffer size",
        };
        ctx.note(&format!(
            "crypto {test}: threads={}, {:?} {per}",
            self.cfg.threads,
            std::time::Duration::from_secs_f64(self.cfg.duration)
        ));
        engine::host::run_on_sut(ctx, "crypto", test, &self.params, driver::drive)
    }

    fn cleanup(&mut self) {
        if let Some(mut s) = self.sut.take() {
            s.stop();
        }
    }

    fn disclosure(&self) -> BTreeMap<String, Fact> {
        match &self.sut {
            Some(s) => s.facts().clone(),
            // Not prepared: the tests would run here.
            None => service::facts(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    use super::*;
    use engine::host::Roles;
    use serde_json::json;

    /// `model::unread_by` names crypto's tests by hand (the store applies it to old records
    /// and knows no workload): it must agree with the tests this workload runs, every key
    /// test reading neither `bits` nor the buffer sizes, every bulk test its buffer sizes.
    #[test]
    fn the_knobs_model_says_a_test_does_not_read_are_the_ones_it_does_not() {
        let cfg = parse_config(&params(json!({}))).unwrap();
        let tests = expand_tests(&cfg).unwrap();
        assert!(tests.len() > 4, "{tests:?}");
        for t in &tests {
            let unread = model::unread_by("crypto", t);
            match Op::parse(t).unwrap() {
                Op::Rsa(_) | Op::EcdsaP256 => {
                    assert_eq!(unread, ["bits", "buffer_sizes"], "{t}")
                }
                _ => assert_eq!(unread, ["bits"], "{t}"),
            }
        }
    }

    /// A context whose one local host is both system under test and load generator (the
    /// single-host run).
    fn on_local() -> Ctx {
        let host = hosts::LocalHost::new("local", |n| (n == "crypto").then(registration), false);
        Ctx {
            roles: Some(Roles::single(Arc::new(host))),
            ..Ctx::quiet()
        }
    }

    fn params(v: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
        v.as_object().unwrap().clone()
    }

    /// `-t rsa512,rsa512` and `rsa` with `--bits 512,512` ran rsa512 twice, summarised
    /// as two repetitions: a test is named once, a list's value given once.
    #[test]
    fn a_test_or_a_size_given_twice_is_refused() {
        let error = |v| match CryptoWorkload::from_params(&params(v)) {
            Ok(w) => engine::workload::refuse_repeated_tests(&w.tests())
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default(),
            Err(e) => e.to_string(),
        };
        let e = error(json!({"tests": ["rsa512", "rsa512"]}));
        assert!(e.starts_with("the test rsa512 is asked for twice"), "{e}");
        let e = error(json!({"tests": ["rsa", "rsa512"], "bits": [512]}));
        assert!(e.starts_with("the test rsa512 is asked for twice"), "{e}");
        let e = error(json!({"tests": ["rsa"], "bits": [512, 512]}));
        assert!(e.starts_with("--bits lists 512 twice"), "{e}");
        let e = error(json!({"tests": ["sha256"], "buffer_sizes": [16, 16]}));
        assert!(e.starts_with("--buffer-sizes lists 16 twice"), "{e}");
        assert_eq!(error(json!({"tests": ["rsa"], "bits": [512, 1024]})), "");
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

    /// Acceptance A, finding 7: `--duration 1e-9` was accepted (a verify rate from one
    /// operation, stored ok) and `--duration 0` was refused as not "between 0 and 3600".
    #[test]
    fn a_duration_below_the_shortest_test_is_refused_with_the_real_range() {
        for d in [0.0, 1e-9, 0.05, -1.0, 3601.0] {
            let e = CryptoWorkload::from_params(&params(json!({"duration": d})))
                .err()
                .unwrap_or_else(|| panic!("{d} s accepted"))
                .to_string();
            assert!(e.contains("use 0.1 to 3600 seconds"), "{d}: {e}");
        }
        CryptoWorkload::from_params(&params(json!({"duration": 0.1}))).unwrap();
    }

    /// Acceptance A, finding 9: the message said "use 1 to 4" while 9 was accepted; the
    /// range said is the one checked, and a count past the CPUs is flagged.
    #[test]
    fn the_thread_range_said_is_the_one_checked() {
        for t in [0, MAX_THREADS + 1] {
            let e = CryptoWorkload::from_params(&params(json!({"threads": t})))
                .err()
                .unwrap()
                .to_string();
            assert!(e.contains(&format!("use 1 to {MAX_THREADS}")), "{e}");
        }
        // One past the CPUs: 4 threads on 2 were not flagged when the bar was 2x.
        let over = engine::launch::online_cpus() + 1;
        let cfg = parse_config(&params(json!({
            "tests": ["sha256"], "threads": over, "duration": 0.1, "buffer_sizes": [16]
        })))
        .unwrap();
        let out = driver::run(&cfg, &[], "sha256", &engine::workload::Progress::default()).unwrap();
        assert!(
            out.flags.iter().any(|f| f.code == "threads_oversubscribed"),
            "{:?}",
            out.flags
        );
        // Two threads pinned to one CPU share it: flagged, naming it; one each is not.
        let two = parse_config(&params(json!({
            "tests": ["sha256"], "threads": 2, "duration": 0.1, "buffer_sizes": [16]
        })))
        .unwrap();
        let run = |cpus: &[usize]| {
            driver::run(&two, cpus, "sha256", &engine::workload::Progress::default())
                .unwrap()
                .flags
        };
        let f = run(&[0]);
        assert!(
            f.iter().any(|f| f.code == "threads_oversubscribed"
                && f.message.contains("2 threads pinned to 1 CPU (0)")),
            "{f:?}"
        );
        if engine::launch::online_cpus() >= 2 {
            let f = run(&[0, 1]);
            assert!(
                f.iter().all(|f| f.code != "threads_oversubscribed"),
                "{f:?}"
            );
        }
    }

    #[test]
    fn unknown_key_is_named() {
        let e = CryptoWorkload::from_params(&params(json!({"thread": 2})))
            .err()
            .unwrap();
        assert!(format!("{e:#}").contains("thread"), "{e:#}");
    }

    #[test]
    fn settings_leave_out_the_knobs_no_asked_test_reads() {
        let w = |v| CryptoWorkload::from_params(&params(v)).unwrap().settings();
        let s = w(json!({"tests": ["rsa2048"]}));
        assert!(
            !s.contains_key("bits") && !s.contains_key("buffer_sizes"),
            "{s:?}"
        );
        // `bits` says which tests ran (rsa2048), as their names do: no setting of any.
        let s = w(json!({"tests": ["rsa", "sha256"], "bits": [2048]}));
        assert!(!s.contains_key("bits"), "{s:?}");
        assert!(s.contains_key("buffer_sizes"), "{s:?}");
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
        let ctx = on_local();
        w.prepare(&ctx).unwrap();
        let out = w.run_test("rsa512", &ctx).unwrap();
        w.cleanup();
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
        let ctx = on_local();
        w.prepare(&ctx).unwrap();
        let facts = w.disclosure();
        assert!(
            facts["software.openssl"]
                .value
                .as_deref()
                .is_some_and(|v| v.contains("SSL")),
            "{facts:?}"
        );
        for t in w.tests() {
            let out = w.run_test(&t, &ctx).unwrap();
            let h = out
                .metrics
                .iter()
                .find(|m| m.name == out.headline && m.labels.is_empty())
                .unwrap();
            assert!(h.value > 0.0, "{t}: {h:?}");
            assert!(out.flags.is_empty(), "{t}: {:?}", out.flags);
        }
    }

    #[test]
    fn a_cancelled_test_ends_early_and_says_so() {
        let mut w = CryptoWorkload::from_params(&params(
            json!({"tests": ["sha256"], "duration": 30, "buffer_sizes": [16]}),
        ))
        .unwrap();
        let ctx = on_local();
        ctx.progress.cancel.store(true, Ordering::Relaxed);
        let t0 = std::time::Instant::now();
        let out = w.run_test("sha256", &ctx).unwrap();
        assert!(t0.elapsed().as_secs() < 10, "{:?}", t0.elapsed());
        assert_eq!(out.error, None, "a stop is not a failure");
        assert!(
            out.flags.iter().any(|f| f.code == "stopped_early"),
            "{:?}",
            out.flags
        );
    }

    #[test]
    fn without_hosts_the_test_runs_in_this_process() {
        let mut w = CryptoWorkload::from_params(&params(
            json!({"tests": ["sha256"], "duration": 0.1, "buffer_sizes": [16]}),
        ))
        .unwrap();
        let out = w.run_test("sha256", &Ctx::quiet()).unwrap();
        assert!(out.metrics.iter().any(|m| m.name == "throughput_mb_per_s"));
        assert!(w.disclosure().contains_key("software.openssl"));
    }

    /// A test under way hands checkpoints (rackbench killed mid-test keeps what it
    /// measured): rsa512 signs 3 s then verifies 3 s, and its checkpoint at 5 s has the
    /// finished signs as the test's end has them, the verifies counted so far over their
    /// time so far, no CPU time of the verifies (read at their end), and the `partial`
    /// flag; it is not taken for a stopped test.
    #[test]
    fn a_test_under_way_hands_what_it_counted_so_far() {
        let mut w =
            CryptoWorkload::from_params(&params(json!({"tests": ["rsa512"], "duration": 3})))
                .unwrap();
        let (ctx, kept) = engine::testing::keeping(on_local());
        w.prepare(&ctx).unwrap();
        let end = w.run_test("rsa512", &ctx).unwrap();
        w.cleanup();
        let kept = kept.lock().unwrap();
        let c = kept.first().expect("a checkpoint while the test ran");
        let get = |o: &StepOutput, name: &str| {
            o.metrics
                .iter()
                .find(|m| m.name == name && m.labels.is_empty())
                .map(|m| m.value)
        };
        let flag = c.flags.iter().find(|f| f.code == model::PARTIAL).unwrap();
        assert!(
            flag.message
                .starts_with("the rsa512 test did not finish (rackbench was killed"),
            "{}",
            flag.message
        );
        assert!(flag.message.contains(" s of 6.0 s"), "{}", flag.message);
        assert!(c.flags.iter().all(|f| f.code != "stopped_early"));
        // Taken during the verifies: the signs are those of the test's end.
        assert!((4.0..6.0).contains(&c.duration_s), "{}", c.duration_s);
        assert_eq!(get(c, "signs_per_s"), get(&end, "signs_per_s"));
        assert!(get(c, "signs_per_cpu_s").is_some());
        assert!(get(c, "verifies_per_s").is_some_and(|v| v > 0.0));
        let cpu = c
            .missing
            .iter()
            .find(|m| m.name == "verifies_per_cpu_s")
            .expect("the verifies' CPU time is read at their end");
        assert!(cpu.reason.contains("checkpoint"), "{}", cpu.reason);
        assert_eq!(c.measured.len(), 2);
        // The end's result is no checkpoint.
        assert!(end.flags.iter().all(|f| f.code != model::PARTIAL));
        assert!(get(&end, "verifies_per_cpu_s").is_some());
    }

    /// A bulk test's checkpoint: the buffer sizes done, and the one under way counted so
    /// far (sha256 at 16 B for 3 s, then 1 KiB: the checkpoint at 5 s is in the second).
    #[test]
    fn a_bulk_test_under_way_hands_the_sizes_so_far() {
        let mut w = CryptoWorkload::from_params(&params(json!({
            "tests": ["sha256"], "duration": 3, "buffer_sizes": [16, 1024]
        })))
        .unwrap();
        let (ctx, kept) = engine::testing::keeping(on_local());
        w.prepare(&ctx).unwrap();
        let end = w.run_test("sha256", &ctx).unwrap();
        w.cleanup();
        let kept = kept.lock().unwrap();
        let c = kept.first().expect("a checkpoint while the test ran");
        let at = |o: &StepOutput, size: &str| {
            o.metrics
                .iter()
                .find(|m| {
                    m.name == "throughput_mb_per_s"
                        && m.labels.get("buffer_bytes").map(String::as_str) == Some(size)
                })
                .map(|m| m.value)
        };
        assert!(c.flags.iter().any(|f| f.code == model::PARTIAL));
        assert_eq!(at(c, "16"), at(&end, "16"));
        assert!(at(c, "1024").is_some_and(|v| v > 0.0), "{:?}", c.metrics);
        assert!(c.flags.iter().all(|f| f.code != "stopped_early"));
    }
}
