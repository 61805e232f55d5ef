//! The `net` workload: TCP stream and UDP throughput between a sender and a receiver
//! (`rackbench net serve`, a separate process reachable by address), each end pinned to
//! the CPUs given (unpinned without), as the iperf3 study in seeds/002 measures
//! (METHODS.md 4).
//!
//! The receiver is the system under test's side and the sender the load generator's, so
//! the workload is split along that line: [`service`] starts the receiver on the system
//! under test's host (`rackbench net serve` on a free port of the address other hosts
//! reach it at, or a given `--target`), [`driver`] runs one test from the load
//! generator's host against it and returns the test's output with the sender's facts,
//! and [`NetWorkload`] is the controller between them: one receiver per sweep point,
//! one sender per test. With one host in both roles (or no roles at all) everything runs
//! here as before the split. Each test reports Gbit/s on both clocks, packets/s, UDP loss
//! and jitter, per interval and overall, and the CPU time of both ends' worker threads,
//! so %CPU per Gbit/s needs no outside tool.
//!
//! - [`proto`]: the control messages and the UDP header, loss and jitter accounting.
//! - [`server`]: the receiver.
//! - [`sender`]: the sending end.

pub mod driver;
pub mod mark;
pub mod proto;
pub mod sender;
pub mod server;
pub mod service;
pub mod tcpinfo;

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::{bail, Context};
use clap::Args;
use engine::host::{DriverJob, Host, Service, ServiceCtx, ServiceHandle};
use engine::workload::{CpuList, CpuRole, Params, SoFar};
use engine::{Ctx, StepOutput, Workload};
use model::{Fact, Flag, Metric, MissingMetric};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use driver::{drive, SenderReport};
pub use proto::Proto;
pub use sender::{SendSpec, TestReport};
pub use server::{serve, ServeOptions};
pub use service::{start_service, NetService};

/// iperf3's default TCP buffer (`-l`).
pub const DEFAULT_TCP_LEN: usize = 128 * 1024;
/// The socket buffer sizes `--window` accepts (the kernel's own floor is about 4.5 KiB,
/// and SO_RCVBUF takes an int that it doubles).
pub const WINDOW_MIN: usize = 4096;
pub const WINDOW_MAX: usize = 512 << 20;
/// UDP payloads measured by default: a full 1500-byte MTU frame and a small packet.
pub const DEFAULT_UDP_PAYLOADS: [usize; 2] = [1472, 60];

/// `rackbench run net` flags. Ids are the parameter keys.
#[derive(Args, Debug)]
pub struct Flags {
    /// Tests: tcp, udp (one per --udp-payload), or udpN (e.g. udp1472).
    #[arg(short = 't', long = "tests", id = "tests", value_name = "LIST")]
    pub tests: Option<String>,
    /// UDP payload sizes in bytes for the `udp` test (default 1472,60; max 65507).
    #[arg(long = "udp-payload", id = "udp_payload", value_name = "LIST")]
    pub udp_payload: Option<String>,
    /// Parallel streams (sweep: 1,2,4).
    #[arg(long = "streams", id = "streams", value_name = "N")]
    pub streams: Option<String>,
    /// Seconds per test (default 10, as iperf3).
    #[arg(long = "duration", id = "duration", value_name = "S")]
    pub duration: Option<String>,
    /// Seconds sent first and left out of every figure, iperf3 -O (default 0): TCP's slow
    /// start, a congestion control's probing. Both ends count from their own end of it;
    /// its intervals are kept, labelled warmup.
    #[arg(long = "warmup", id = "warmup", value_name = "S")]
    pub warmup: Option<String>,
    /// Seconds per reported interval (default 1).
    #[arg(long = "interval", id = "interval", value_name = "S")]
    pub interval: Option<String>,
    /// Target rate per stream in bits/s, TCP and UDP, iperf3 -b style (0 = unlimited,
    /// 500M, 2G): a stream sends only while its average since its start is below it.
    #[arg(long = "rate", id = "rate", value_name = "BITS")]
    pub rate: Option<String>,
    /// TCP write size in bytes (default 131072, iperf3's -l).
    #[arg(long = "tcp-len", id = "tcp_len", value_name = "BYTES")]
    pub tcp_len: Option<String>,
    /// TCP congestion control for the data streams, iperf3 -C style (cubic, bbr, reno;
    /// sweep: cubic,bbr), set on both ends before the streams connect. Default: each
    /// host's net.ipv4.tcp_congestion_control.
    #[arg(long = "congestion", id = "congestion", value_name = "ALGO")]
    pub congestion: Option<String>,
    /// Socket buffer size in bytes for the data sockets on both ends, iperf3 -w: SO_SNDBUF
    /// and SO_RCVBUF, set before the streams connect (which turns the kernel's buffer
    /// autotuning off for them; the kernel doubles it, capped by net.core.wmem_max and
    /// rmem_max). Default: autotuning, as iperf3.
    #[arg(long = "window", id = "window", value_name = "BYTES")]
    pub window: Option<String>,
    /// UDP datagrams per system call (default 1: one send(2) each, as iperf3). Above 1,
    /// sendmmsg(2) hands the kernel that many at once, which iperf3 cannot (e.g. 32).
    #[arg(long = "udp-batch", id = "udp_batch", value_name = "N")]
    pub udp_batch: Option<String>,
    /// UDP datagrams per send(2) as one UDP GSO buffer (UDP_SEGMENT: the kernel cuts it
    /// into datagrams), which iperf3 cannot: 2 to 64, at most 65,507 bytes a send (44 of
    /// 1472 B). Default 0: off.
    #[arg(long = "udp-gso", id = "udp_gso", value_name = "N")]
    pub udp_gso: Option<String>,
    /// TCP: send each buffer with sendfile(2) from a temporary file holding it (iperf3 -Z),
    /// so the sender's CPU does not copy it from user memory; UDP sends as before (as
    /// iperf3). Default false: write(2), as iperf3 without -Z (sweep: false,true).
    #[arg(long, id = "zerocopy", value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub zerocopy: Option<String>,
    /// Receiver control address host:port (`rackbench net serve` running there). Default:
    /// launch one on the system under test.
    #[arg(long = "target", id = "target", value_name = "HOST:PORT")]
    pub target: Option<String>,
    /// CPUs for the sender threads (`1`, `2-3`).
    #[arg(long = "sender-cpus", id = "sender_cpus", value_name = "LIST")]
    pub sender_cpus: Option<String>,
    /// CPUs for the receiver's data threads (`0`).
    #[arg(long = "receiver-cpus", id = "receiver_cpus", value_name = "LIST")]
    pub receiver_cpus: Option<String>,
    /// The rackbench binary to launch as the receiver (default: this binary; on a remote
    /// system under test, the path must exist there).
    #[arg(long = "receiver-bin", id = "receiver_bin", value_name = "PATH")]
    pub receiver_bin: Option<String>,
}

/// Plain config of one sweep point.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default = "default_tests")]
    pub tests: Vec<String>,
    #[serde(default = "default_payloads")]
    pub udp_payload: Vec<usize>,
    #[serde(default = "one")]
    pub streams: usize,
    #[serde(default = "ten")]
    pub duration: f64,
    #[serde(default)]
    pub warmup: f64,
    #[serde(default = "one_f")]
    pub interval: f64,
    #[serde(default)]
    pub rate: Option<Value>,
    #[serde(default = "tcp_len")]
    pub tcp_len: usize,
    #[serde(default)]
    pub congestion: Option<String>,
    #[serde(default)]
    pub window: Option<usize>,
    #[serde(default = "one")]
    pub udp_batch: usize,
    #[serde(default)]
    pub udp_gso: usize,
    #[serde(default)]
    pub zerocopy: bool,
    #[serde(default)]
    pub target: Option<String>,
    #[serde(default)]
    pub sender_cpus: Vec<Value>,
    #[serde(default)]
    pub receiver_cpus: Vec<Value>,
    #[serde(default)]
    pub receiver_bin: Option<String>,
}

fn default_tests() -> Vec<String> {
    vec!["tcp".into(), "udp".into()]
}
fn default_payloads() -> Vec<usize> {
    DEFAULT_UDP_PAYLOADS.to_vec()
}
fn one() -> usize {
    1
}
fn ten() -> f64 {
    10.0
}
fn one_f() -> f64 {
    1.0
}
fn tcp_len() -> usize {
    DEFAULT_TCP_LEN
}

/// Registry entry for `net`.
pub fn registration() -> engine::Registration {
    engine::Registration {
        name: "net",
        about: "TCP stream and UDP throughput, loss and jitter against `rackbench net serve`, each end pinned where CPUs are given",
        list_keys: &["tests", "udp_payload", "sender_cpus", "receiver_cpus"],
        text_keys: &["target", "receiver_bin"],
        flags: |c| Flags::augment_args(c),
        build: |m| Ok(Box::new(NetWorkload::from_params(m)?)),
        service: Some(service::start_service),
        has_server: true,
        driver: Some(drive),
        programs: engine::no_programs,
        lengthen: "--duration",
    }
}

fn cpu_list(key: &str, vals: &[Value]) -> anyhow::Result<Vec<usize>> {
    engine::launch::cpus_from_values(vals, &format!("net: `{key}`"))
}

/// A test name as (protocol, payload).
pub fn parse_test(name: &str, tcp_len: usize) -> anyhow::Result<(Proto, usize)> {
    let t = name.trim().to_ascii_lowercase();
    if t == "tcp" {
        return Ok((Proto::Tcp, tcp_len));
    }
    if let Some(p) = t.strip_prefix("udp") {
        let payload: usize = p.parse().with_context(|| {
            format!("net: unknown test `{name}`: use tcp, udp or udpN (e.g. udp1472)")
        })?;
        check_udp_payload(payload)?;
        return Ok((Proto::Udp, payload));
    }
    bail!("net: unknown test `{name}`: use tcp, udp or udpN (e.g. udp1472)")
}

fn check_udp_payload(p: usize) -> anyhow::Result<()> {
    if p > proto::MAX_UDP_PAYLOAD {
        bail!(
            "net: UDP payload {p} B is larger than a UDP datagram can carry ({} B over IPv4); \
             use e.g. --udp-payload 1472,60",
            proto::MAX_UDP_PAYLOAD
        );
    }
    if p < proto::UDP_HEADER_BYTES {
        bail!(
            "net: UDP payload {p} B is too small: at least {} B (sequence number and send time)",
            proto::UDP_HEADER_BYTES
        );
    }
    Ok(())
}

/// The validated knobs of one sweep point. The controller, the service and the driver
/// each build it from the same parameters, on whichever host they run, so a bad value is
/// refused with the same message everywhere.
#[derive(Debug, Clone)]
pub struct Plan {
    pub cfg: Config,
    /// The tests in order, `udp` expanded per payload (`tcp`, `udp1472`, `udp60`).
    pub tests: Vec<String>,
    /// Target rate per stream, bits/s (0 = unlimited), TCP and UDP.
    pub rate_bps: f64,
    pub sender_cpus: Vec<usize>,
    pub receiver_cpus: Vec<usize>,
}

impl Plan {
    pub fn from_params(m: &Params) -> anyhow::Result<Plan> {
        let cfg: Config = engine::plan::config_from_params("net", m)?;
        if cfg.streams == 0 || cfg.streams > 256 {
            bail!(
                "net: `streams` = {} is out of range: use 1 to 256",
                cfg.streams
            );
        }
        engine::workload::check_duration("net", cfg.duration, 86_400.0)?;
        if !(cfg.warmup >= 0.0 && cfg.warmup + cfg.duration <= 86_400.0) {
            bail!("net: `warmup` must be 0 s or more, and with `duration` at most a day (e.g. --warmup 2)");
        }
        if !cfg.interval.is_finite() || cfg.interval < 0.05 {
            bail!("net: `interval` must be at least 0.05 s (e.g. --interval 1)");
        }
        // `--interval 5 --duration 1` reported no interval of its own and stored interval=5
        // as a setting the test had. Given only: the default's 1 s beside a shorter test
        // reports the test as one interval.
        if m.get("interval").is_some_and(|v| !v.is_null()) && cfg.interval > cfg.duration {
            bail!(
                "net: `interval` = {} s is longer than `duration` = {} s: give an --interval of \
                 at most {} (or a longer --duration)",
                cfg.interval,
                cfg.duration,
                cfg.duration
            );
        }
        if cfg.tcp_len == 0 || cfg.tcp_len > 64 << 20 {
            bail!("net: `tcp_len` must be 1 B to 64 MiB (default 131072)");
        }
        if let Some(cc) = &cfg.congestion {
            // The kernel's TCP_CA_NAME_MAX is 16 bytes with the NUL.
            if cc.is_empty()
                || cc.len() > 15
                || !cc.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            {
                bail!("net: `congestion` must name a TCP congestion control like cubic, bbr or reno, not `{cc}`");
            }
        }
        if cfg
            .window
            .is_some_and(|w| !(WINDOW_MIN..=WINDOW_MAX).contains(&w))
        {
            bail!(
                "net: `window` must be {WINDOW_MIN} B to {WINDOW_MAX} B (e.g. --window 4194304), \
                 or left out for the kernel's autotuning"
            );
        }
        // --receiver-cpus stays: the sender asks a given receiver to pin its data
        // threads as it asks a launched one.
        if cfg.target.is_some() && cfg.receiver_bin.is_some() {
            engine::plan::refuse_launch_settings(&["--receiver-bin"], "--target", "receiver")?;
        }
        if cfg.udp_batch == 0 || cfg.udp_batch > 1024 {
            bail!("net: `udp_batch` must be 1 (one datagram per send, as iperf3) to 1024 (e.g. --udp-batch 32)");
        }
        if cfg.udp_gso == 1 || cfg.udp_gso > sender::UDP_GSO_MAX_SEGMENTS {
            bail!(
                "net: `udp_gso` must be 0 (off) or 2 to {} datagrams per send (e.g. --udp-gso 32)",
                sender::UDP_GSO_MAX_SEGMENTS
            );
        }
        if cfg.udp_gso > 1 && cfg.udp_batch > 1 {
            bail!(
                "net: give `udp_batch` (sendmmsg) or `udp_gso` (one GSO buffer per send), not both"
            );
        }
        let rate_bps = match &cfg.rate {
            None => 0.0,
            Some(Value::Number(n)) => n.as_f64().unwrap_or(-1.0),
            Some(Value::String(s)) => proto::parse_rate(s).context("net: `rate`")?,
            Some(other) => bail!("net: `rate` must be bits/s like 0, 500M or 2G, not {other}"),
        };
        if !rate_bps.is_finite() || rate_bps < 0.0 {
            bail!("net: `rate` must be 0 (unlimited) or positive");
        }
        // Stored as given: `--udp-payload 1472,1472` ran udp1472 once and stored both.
        engine::plan::refuse_repeats("--udp-payload", &cfg.udp_payload)?;
        let mut tests: Vec<String> = Vec::new();
        for t in &cfg.tests {
            let t = t.trim().to_ascii_lowercase();
            let named = if t == "udp" {
                let mut v = Vec::new();
                for &p in &cfg.udp_payload {
                    check_udp_payload(p)?;
                    v.push(format!("udp{p}"));
                }
                v
            } else if t.is_empty() {
                Vec::new()
            } else {
                // Named as `udp` names them (udp01472 is udp1472), so a test asked for
                // twice is seen to be one.
                match parse_test(&t, cfg.tcp_len)? {
                    (Proto::Tcp, _) => vec![t],
                    (Proto::Udp, p) => vec![format!("udp{p}")],
                }
            };
            // Each test once, where first asked for (`--tests udp,udp1472`): the same test
            // twice would be stored twice under one name and repetition.
            for t in named {
                if !tests.contains(&t) {
                    tests.push(t);
                }
            }
        }
        if tests.is_empty() {
            bail!("net: no tests selected (e.g. --tests tcp,udp)");
        }
        if cfg.zerocopy && !tests.iter().any(|t| t == "tcp") {
            bail!(
                "net: `zerocopy` (sendfile, iperf3 -Z) applies to the tcp test, and the tests \
                 asked are {}; add tcp to --tests, or leave --zerocopy out",
                tests.join(",")
            );
        }
        // The mirror case: the UDP send modes without a udp test would be ignored unsaid.
        let udp_mode = if cfg.udp_gso > 1 {
            Some(("udp_gso", "--udp-gso"))
        } else if cfg.udp_batch > 1 {
            Some(("udp_batch", "--udp-batch"))
        } else {
            None
        };
        if let Some((key, flag)) = udp_mode.filter(|_| !tests.iter().any(|t| t != "tcp")) {
            bail!(
                "net: `{key}` applies to the udp tests, and the tests asked are {}; add udp \
                 to --tests, or leave {flag} out",
                tests.join(",")
            );
        }
        // The payloads expand a bare `udp` only (`udp1472` names its own).
        if cfg.udp_payload != default_payloads()
            && !cfg
                .tests
                .iter()
                .any(|t| t.trim().eq_ignore_ascii_case("udp"))
        {
            bail!(
                "net: `udp_payload` gives the payloads of the `udp` test, and the tests asked \
                 are {}; add udp to --tests, or leave --udp-payload out",
                tests.join(",")
            );
        }
        let sender_cpus = cpu_list("sender_cpus", &cfg.sender_cpus)?;
        let receiver_cpus = cpu_list("receiver_cpus", &cfg.receiver_cpus)?;
        Ok(Plan {
            cfg,
            tests,
            rate_bps,
            sender_cpus,
            receiver_cpus,
        })
    }

    /// True when a tcp test runs (the congestion control matters only then).
    pub fn runs_tcp(&self) -> bool {
        self.tests.iter().any(|t| t == "tcp")
    }

    /// One test against the receiver at `target`.
    pub fn send_spec(&self, target: &str, proto_: Proto, payload: usize) -> SendSpec {
        SendSpec {
            target: target.to_string(),
            proto: proto_,
            payload,
            duration_s: self.cfg.duration,
            warmup_s: self.cfg.warmup,
            streams: self.cfg.streams,
            interval_s: self.cfg.interval,
            rate_bps: self.rate_bps,
            sender_cpus: self.sender_cpus.clone(),
            receiver_cpus: self.receiver_cpus.clone(),
            congestion: self.cfg.congestion.clone(),
            window: self.cfg.window,
            udp_batch: self.cfg.udp_batch,
            udp_gso: self.cfg.udp_gso,
            zerocopy: self.cfg.zerocopy && proto_ == Proto::Tcp,
        }
    }
}

/// Where this sweep point's receiver runs.
enum Receiver {
    /// Started through the system under test's host (the runner gave roles).
    OnHost {
        host: Arc<dyn Host>,
        handle: ServiceHandle,
    },
    /// Started by this process: a context without hosts (the Rust API, tests, a runner
    /// that gives no roles) keeps working as before the split, on loopback.
    Here(Box<dyn Service>),
}

impl Receiver {
    fn endpoints(&self) -> Vec<String> {
        match self {
            Receiver::OnHost { handle, .. } => handle.endpoints.clone(),
            Receiver::Here(s) => s.endpoints(),
        }
    }

    fn facts(&self) -> BTreeMap<String, Fact> {
        match self {
            Receiver::OnHost { handle, .. } => handle.facts.clone(),
            Receiver::Here(s) => s.facts(),
        }
    }

    /// Some(flag) once the receiver has died, or when its host cannot say.
    fn exited_flag(&mut self) -> Option<Flag> {
        match self {
            Receiver::OnHost { host, handle } => match host.service_exited(handle.id) {
                Ok(why) => why.map(|w| Flag::warning("receiver_exited", w)),
                Err(e) => Some(Flag::warning(
                    "receiver_unknown",
                    format!(
                        "cannot ask {} whether the receiver still runs: {e:#}",
                        host.name()
                    ),
                )),
            },
            Receiver::Here(s) => s.exited().map(|w| Flag::warning("receiver_exited", w)),
        }
    }

    fn stop(&mut self) {
        match self {
            Receiver::OnHost { host, handle } => host.stop_service(handle.id),
            Receiver::Here(s) => s.stop(),
        }
    }
}

/// The controller: starts the receiver on the system under test, sends each test to the
/// one load generator as a driver job, and keeps each end's facts for its own host's
/// disclosure.
pub struct NetWorkload {
    /// The sweep point's parameters, as sent to the service and the driver.
    params: Params,
    plan: Plan,
    receiver: Option<Receiver>,
    /// The host the sender last ran on, and its facts from that report.
    sender: Option<(String, BTreeMap<String, Fact>)>,
}

/// What the sender is called in the disclosure when no host runs it (no roles).
const IN_PROCESS: &str = "this process";

impl NetWorkload {
    /// How `--rate` paces the streams, for `net.method` (empty without it).
    fn pacing(&self) -> String {
        if self.plan.rate_bps <= 0.0 {
            return String::new();
        }
        format!(
            "; paced (--rate {} bit/s per stream, iperf3 -b): a stream, TCP or UDP, sends only \
             while its average rate since its start is below that, checked before each send, \
             and while ahead sleeps to the next tick of its 1 ms pacing timer (iperf3's default); \
             the UDP receiver of a paced stream waits on the socket whenever its queue is empty, \
             as iperf3's does, instead of napping",
            self.plan.rate_bps
        )
    }

    /// How `--warmup` was left out, for `net.method` (empty without it).
    fn warmup(&self) -> String {
        if self.plan.cfg.warmup <= 0.0 {
            return String::new();
        }
        format!(
            "; the first {} s of each test are a warm-up left out of every figure (iperf3 -O): \
             each end's control thread marks its end on its own clock, each worker thread notes \
             its CPU (a sending thread its counters too) when it next looks, and counts from \
             there, the receiver's counts from its control thread's mark; UDP's received and \
             lost datagrams are those the sender sent after its mark (each carries it in its \
             sequence number), so that sent less received is the loss, and the receiver's \
             UDP rate is of them over their own span (from the receiver's read before the \
             one that brought the first of them); the receiver's CPU is from its own mark \
             to the sender's end, and missing, with why, if it had not marked by then; \
             TCP retransmits, RTT and window from the warm-up's last interval report; pacing \
             (--rate) runs from each stream's start, warm-up included",
            self.plan.cfg.warmup
        )
    }

    pub fn from_params(m: &Params) -> anyhow::Result<Self> {
        Ok(NetWorkload {
            plan: Plan::from_params(m)?,
            params: m.clone(),
            receiver: None,
            sender: None,
        })
    }

    /// The receiver address tests run against: the started service's, else `--target`.
    pub fn target(&self) -> Option<String> {
        self.receiver
            .as_ref()
            .and_then(|r| r.endpoints().into_iter().next())
            .or_else(|| self.plan.cfg.target.clone())
    }

    fn job(&self, test: &str, endpoints: Vec<String>) -> DriverJob {
        DriverJob {
            workload: "net".into(),
            test: test.into(),
            // One sender per pair: it gets the whole sweep point, nothing to share out.
            params: self.params.clone(),
            endpoints,
            index: 0,
            generators: 1,
        }
    }

    /// Run one job on the sender's host (in this process without roles) and read its
    /// report; the sender's facts are kept for the disclosure.
    fn send(&mut self, job: DriverJob, ctx: &Ctx) -> anyhow::Result<driver::SenderReport> {
        let (host, value, offset_s) = match sender_host(ctx)? {
            Some(h) => {
                let name = h.name().to_string();
                let offset_s = h.clock_offset_s();
                // The receiver's host is watched while the sender sends.
                let watch: Vec<_> = ctx.roles.iter().map(|r| r.sut.clone()).collect();
                let rep = engine::host::drive_all(vec![(h, job)], &watch, &[], &ctx.progress)
                    .pop()
                    .context("net: the sender's host returned no report")?
                    .with_context(|| format!("net: the sender on {name}"))?;
                (rep.host, rep.report, offset_s)
            }
            None => (
                IN_PROCESS.to_string(),
                driver::drive(&job, &ctx.progress)?,
                0.0,
            ),
        };
        let mut rep: driver::SenderReport = serde_json::from_value(value).with_context(|| {
            format!(
                "net: cannot read the sender's report from {host} (is the same rackbench \
                 version on every host?)"
            )
        })?;
        if let Some(step) = &mut rep.step {
            step.on_controller_clock(offset_s);
        }
        // Each report adds to what the earlier tests on the same host said (a udp test
        // has no congestion control to read back, so the tcp test's stays).
        let facts = match self.sender.take() {
            Some((before, mut facts)) if before == host => {
                facts.extend(rep.facts.clone());
                facts
            }
            _ => rep.facts.clone(),
        };
        self.sender = Some((host, facts));
        Ok(rep)
    }
}

/// A GSO send holds 64 KiB: each UDP test (`test`: its protocol and payload) stores the
/// datagrams per send it used (44 of 1472 B for --udp-gso 45), not the number asked for
/// (`gso`; acceptance pass J, 9).
fn with_gso_used(out: &mut StepOutput, (proto, payload): (Proto, usize), gso: usize) {
    if proto == Proto::Udp && gso > 1 {
        out.settings.insert(
            "udp_gso".into(),
            serde_json::json!(sender::gso_segments(gso, payload)),
        );
    }
}

/// The one host the sender runs on; None: this process (the context has no roles).
fn sender_host(ctx: &Ctx) -> anyhow::Result<Option<Arc<dyn Host>>> {
    let Some(roles) = &ctx.roles else {
        return Ok(None);
    };
    match roles.loadgens.as_slice() {
        [one] => Ok(Some(one.clone())),
        [] => bail!("net: no load generator to run the sender on"),
        _ => bail!("net runs one sender per pair; give pairs with --pairs or --hosts"),
    }
}

/// A service context for a receiver started by this process: loopback, launched
/// processes watched by the runner's sampler.
fn in_process_service_ctx(ctx: &Ctx) -> ServiceCtx {
    let watch = ctx.watch.clone();
    ServiceCtx {
        bind_ip: "127.0.0.1".into(),
        watch: Arc::new(move |role: &str, pid: u32| watch.watch_process(role, pid)),
        verbose: ctx.verbose,
    }
}

impl Workload for NetWorkload {
    fn check_launch_here(&self) -> anyhow::Result<()> {
        if let (None, Some(bin)) = (&self.plan.cfg.target, &self.plan.cfg.receiver_bin) {
            if !engine::launch::is_executable(std::path::Path::new(bin)) {
                bail!(
                    "--receiver-bin `{bin}` is not an executable file: give the path of a \
                     rackbench binary, or leave it out to launch this one"
                );
            }
        }
        Ok(())
    }

    fn settings(&self) -> Params {
        let mut s = engine::workload::settings_of(&[serde_json::to_value(&self.plan.cfg)]);
        // The payloads `udp` expands to, only where a test is `udp`; and no rate is an
        // unlimited one, 0 as `--rate` takes it, not a setting left undisclosed
        // (acceptance pass J, 8).
        if !self
            .plan
            .cfg
            .tests
            .iter()
            .any(|t| t.trim().eq_ignore_ascii_case("udp"))
        {
            s.remove("udp_payload");
        }
        s.entry("rate").or_insert_with(|| serde_json::json!(0));
        s
    }

    fn name(&self) -> &'static str {
        "net"
    }

    fn tests(&self) -> Vec<String> {
        self.plan.tests.clone()
    }

    fn cpu_lists(&self) -> anyhow::Result<Vec<CpuList>> {
        let mut lists = vec![CpuList {
            flag: "--sender-cpus",
            role: CpuRole::Sender,
            cpus: self.plan.sender_cpus.clone(),
        }];
        // A given receiver (--target) is no host of the run: its CPUs are its own to know.
        if self.plan.cfg.target.is_none() {
            lists.push(CpuList {
                flag: "--receiver-cpus",
                role: CpuRole::Receiver,
                cpus: self.plan.receiver_cpus.clone(),
            });
        }
        Ok(lists)
    }

    fn prepare(&mut self, ctx: &Ctx) -> anyhow::Result<()> {
        // A second prepare replaces the receiver rather than leaving the first running.
        self.cleanup();
        // The sender's host is checked first, as the congestion probe was before the
        // split: a congestion control it refuses stops the run before a receiver is
        // launched. Its facts are also needed now: the runner reads the disclosure
        // after prepare, before the first test.
        let given: Vec<String> = self.plan.cfg.target.iter().cloned().collect();
        self.send(self.job(driver::CHECK, given), ctx)?;
        let receiver = match &ctx.roles {
            Some(roles) => {
                let host = roles.sut.clone();
                let handle = host
                    .start_service("net", &self.params)
                    .with_context(|| format!("net: starting the receiver on {}", host.name()))?;
                Receiver::OnHost { host, handle }
            }
            None => Receiver::Here(service::start_service(
                &self.params,
                &in_process_service_ctx(ctx),
            )?),
        };
        if let (Some(roles), Some(addr)) = (&ctx.roles, receiver.endpoints().first()) {
            ctx.note(&format!(
                "net: receiver on {} at {addr}, sender on {}",
                roles.sut.name(),
                self.sender.as_ref().map_or("?", |(h, _)| h.as_str())
            ));
        }
        self.receiver = Some(receiver);
        Ok(())
    }

    fn run_test(&mut self, test: &str, ctx: &Ctx) -> anyhow::Result<StepOutput> {
        let (proto, payload) = parse_test(test, self.plan.cfg.tcp_len)?;
        let endpoints = match (&self.receiver, &self.plan.cfg.target) {
            (Some(r), _) => r.endpoints(),
            // A given receiver needs nothing started: a test may run without prepare.
            (None, Some(t)) => vec![t.clone()],
            (None, None) => bail!("net: no receiver: call prepare first or pass --target"),
        };
        let gso = self.plan.cfg.udp_gso;
        // Checkpoints while it runs, each the sender's report had the test ended there,
        // stored as the test's provisional result where the runner keeps one: rackbench
        // killed mid-test keeps what was measured up to the last.
        let job = self.job(test, endpoints);
        let rep = match ctx.partial.clone() {
            Some(partial) => {
                let offset_s = sender_host(ctx)?.map_or(0.0, |h| h.clock_offset_s());
                let take = move |_, so_far| {
                    let SoFar::Report(v) = so_far else {
                        return;
                    };
                    let step = serde_json::from_value::<driver::SenderReport>(v)
                        .ok()
                        .and_then(|r| r.step);
                    if let Some(mut step) = step {
                        step.on_controller_clock(offset_s);
                        with_gso_used(&mut step, (proto, payload), gso);
                        partial(&step);
                    }
                };
                engine::spread::take_checkpoints(&ctx.progress, take, || self.send(job, ctx))
            }
            None => self.send(job, ctx),
        };
        let mut out = rep?
            .step
            .context("net: the sender's report has no test output")?;
        if let Some(flag) = self.receiver.as_mut().and_then(Receiver::exited_flag) {
            out.flags.push(flag);
        }
        with_gso_used(&mut out, (proto, payload), gso);
        Ok(out)
    }

    fn cleanup(&mut self) {
        if let Some(mut r) = self.receiver.take() {
            r.stop();
        }
    }

    fn disclosure(&self) -> BTreeMap<String, Fact> {
        let mut m = BTreeMap::new();
        m.insert(
            "net.method".into(),
            Fact::known(format!(
                "TCP: {}, receiver poll() then read() \
                 until the buffer is full or drained (iperf3's); several TCP streams at one end share one \
                 thread per CPU it is pinned to (unpinned: per CPU it may use), each thread polling its \
                 streams, as iperf3 3.12 runs all of them in one thread; UDP: {} on a connected socket, \
                 one thread per stream; \
                 CPU = getrusage(RUSAGE_THREAD) of each end's worker threads (sender_cpu_pct, receiver_cpu_pct), \
                 and of each end's whole process over the test as iperf3 counts it, getrusage(RUSAGE_SELF) (process_cpu_pct); \
                 TCP retransmits, RTT and congestion window: the sender's TCP_INFO, read as each interval's report arrives \
                 and at the end (iperf3's Retr, RTT and Cwnd); a congestion control asked for is set on the \
                 sending socket before it connects and on the receiver's listener (iperf3 -C switches after connecting, \
                 so on a host whose default paces, BBR, its streams keep that pacing)",
                {
                    let (call, from, whose) = if self.plan.cfg.zerocopy {
                        (
                            "sendfile()",
                            " from a temporary file holding the buffer",
                            "--zerocopy, iperf3 -Z's loop: a send that finds no room ends the round",
                        )
                    } else {
                        ("write()", "", "iperf3's sender loop")
                    };
                    let per_poll = if self.plan.rate_bps > 0.0 {
                        "one per poll() under --rate (iperf3 -b)"
                    } else {
                        "up to 10 per poll()"
                    };
                    format!(
                        "non-blocking {call} of {} B{from}, {per_poll} ({whose})",
                        self.plan.cfg.tcp_len
                    )
                },
                match (self.plan.cfg.udp_batch, self.plan.cfg.udp_gso) {
                    (_, g) if g > 1 => format!(
                        "send() of up to {g} datagrams as one UDP GSO buffer (UDP_SEGMENT, --udp-gso; \
                         the kernel cuts it into datagrams; at most {} bytes a send, so {}; \
                         jitter between sends, from the first datagram of each)",
                        sender::UDP_GSO_MAX_BYTES,
                        self.plan
                            .tests
                            .iter()
                            .filter_map(|t| match parse_test(t, 0) {
                                Ok((Proto::Udp, p)) => Some(format!(
                                    "{} of {p} B",
                                    sender::gso_segments(g, p)
                                )),
                                _ => None,
                            })
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    (1, _) => "one send() per datagram (as iperf3)".to_string(),
                    (n, _) => format!(
                        "sendmmsg() of {n} datagrams per call (--udp-batch; jitter between \
                         calls, from the first datagram of each)"
                    ),
                }
            ) + &format!(
                "; UDP receiver: recvmmsg() of what has queued, a {} us nap when the queue is empty \
                 (poll() after {} empty looks), arrival times from the kernel (SO_TIMESTAMPNS)",
                server::RX_NAP.as_micros(),
                server::RX_NAPS_BEFORE_WAIT
            ) + &self.pacing()
                + &self.warmup()),
        );
        if let Some(r) = &self.receiver {
            m.extend(r.facts());
        }
        m
    }

    fn loadgen_disclosure(&self) -> BTreeMap<String, BTreeMap<String, Fact>> {
        let Some((host, facts)) = &self.sender else {
            return BTreeMap::new();
        };
        let mut m = facts.clone();
        m.insert(
            "net.sender".into(),
            Fact::known(format!("rackbench's net sender on {host}")),
        );
        BTreeMap::from([(host.clone(), m)])
    }
}

/// The mean of the streams' jitter (iperf3's sum line), over those that have one: a
/// stream whose receiver took no difference of transit times (fewer than two datagrams,
/// or all of them from one `--udp-gso`/`--udp-batch` send) has no jitter, and is left
/// out, not averaged in as 0. None when no stream has one.
fn mean_jitter<'a>(streams: impl Iterator<Item = &'a proto::StreamStats>) -> Option<f64> {
    let (n, sum) = streams
        .filter(|s| s.jitter_samples > 0)
        .fold((0usize, 0.0), |(n, sum), s| (n + 1, sum + s.jitter_ms));
    (n > 0).then(|| sum / n as f64)
}

/// A sysctl's value (`net.ipv4.tcp_wmem`), its whitespace collapsed to single spaces.
pub(crate) fn sysctl(key: &str) -> Result<String, String> {
    std::fs::read_to_string(format!("/proc/sys/{}", key.replace('.', "/")))
        .map(|v| v.split_whitespace().collect::<Vec<_>>().join(" "))
        .map_err(|e| format!("cannot read {key}: {e}"))
}

/// Why the receiver's figures of a test are missing when it reported a span of none.
const RECEIVER_STILL_WARM: &str = "the receiver was still in its warm-up when the sender \
     finished (the two ends' marks fell further apart than the test): it measured none of it";

/// Turn one test's report into metrics (pure: tested without sockets).
pub fn step_output(spec: &SendSpec, rep: &TestReport) -> StepOutput {
    let mut out = StepOutput {
        headline: "throughput_gbit_per_s".into(),
        loadgen_threads: Some(sender::send_threads(spec)),
        ..Default::default()
    };
    let sent_bytes: u64 = rep.sent.iter().map(|s| s.bytes).sum();
    let sent_packets: u64 = rep.sent.iter().map(|s| s.packets).sum();
    let recv_bytes: u64 = rep.received.iter().map(|s| s.bytes).sum();
    let recv_packets: u64 = rep.received.iter().map(|s| s.packets).sum();
    let gbit = |bytes: u64, s: f64| {
        if s > 0.0 {
            bytes as f64 * 8.0 / s / 1e9
        } else {
            0.0
        }
    };
    let recv_gbit = gbit(recv_bytes, rep.receive_duration_s);
    let send_s = rep.send_duration_s();
    let send_gbit = gbit(sent_bytes, send_s);
    out.duration_s = send_s;
    if rep.in_warmup {
        // Stopped (or failed) before its warm-up ended: nothing is the test's.
        out.missing.push(MissingMetric {
            name: "throughput_gbit_per_s".into(),
            reason: format!(
                "the test ended during its {} s warm-up (--warmup): nothing after it was measured",
                spec.warmup_s
            ),
        });
        push_outcome(&mut out, spec, rep);
        return out;
    }
    // The load is the sending: the receiver's wait for late datagrams after it, and the
    // streams' setup before it, are not.
    out.measured = rep.send_span.into_iter().collect();
    // A receiver still in its warm-up when the sender finished counted none of a TCP test
    // (a UDP test's datagrams carry the sender's mark, so their counts stand).
    let receiver_warm = rep.receiver_cpu.is_some() && rep.receiver_cpu_span_s == Some(0.0);
    // Nothing sent after the warm-up (every stream failed at its first send, or the test
    // stopped at once): the receiver's span still runs to the sender's `done`, and a rate
    // over it would read as a path measured at 0. No rate was measured; the test is
    // invalid, with why.
    let nothing_sent = (sent_bytes == 0).then(|| {
        let what = match spec.proto {
            Proto::Tcp => "the sender sent nothing",
            Proto::Udp => "the sender sent no datagram",
        };
        match &rep.error {
            Some(e) => format!("{what} ({e})"),
            None => what.to_string(),
        }
    });
    if let Some(why) = &nothing_sent {
        out.missing.push(MissingMetric {
            name: "throughput_gbit_per_s".into(),
            reason: why.clone(),
        });
    } else if rep.receive_duration_s > 0.0 {
        out.metrics
            .push(Metric::new("throughput_gbit_per_s", recv_gbit, "Gbit/s"));
    } else {
        out.missing.push(MissingMetric {
            name: "throughput_gbit_per_s".into(),
            reason: if receiver_warm {
                RECEIVER_STILL_WARM.into()
            } else {
                "the receiver reported nothing".into()
            },
        });
    }
    if sent_bytes > 0 && send_s > 0.0 {
        out.metrics
            .push(Metric::new("throughput_gbit_per_s", send_gbit, "Gbit/s").label("end", "sender"));
    } else {
        out.missing.push(MissingMetric {
            name: "throughput_gbit_per_s{end=sender}".into(),
            reason: nothing_sent
                .clone()
                .unwrap_or_else(|| "the sender sent nothing".into()),
        });
    }
    push_stream_rates(&mut out, rep, nothing_sent.is_some());
    out.metrics
        .push(Metric::new("bytes_sent", sent_bytes as f64, "B"));
    if receiver_warm && spec.proto == Proto::Tcp {
        out.missing.push(MissingMetric {
            name: "bytes_received".into(),
            reason: RECEIVER_STILL_WARM.into(),
        });
    } else {
        out.metrics
            .push(Metric::new("bytes_received", recv_bytes as f64, "B"));
    }
    push_target_rate(&mut out, spec, rep);
    if spec.proto == Proto::Udp {
        if let Some(why) = &nothing_sent {
            for name in ["packets_per_s", "packets_per_s{end=sender}"] {
                out.missing.push(MissingMetric {
                    name: name.into(),
                    reason: why.clone(),
                });
            }
        } else {
            if rep.receive_duration_s > 0.0 {
                out.metrics.push(Metric::new(
                    "packets_per_s",
                    recv_packets as f64 / rep.receive_duration_s,
                    "packets/s",
                ));
            }
            if send_s > 0.0 {
                out.metrics.push(
                    Metric::new("packets_per_s", sent_packets as f64 / send_s, "packets/s")
                        .label("end", "sender"),
                );
            }
        }
        out.metrics
            .push(Metric::new("packets_sent", sent_packets as f64, "packets"));
        out.metrics.push(Metric::new(
            "packets_received",
            recv_packets as f64,
            "packets",
        ));
        // Over the whole test a stream's loss is sent less received, never below 0 (only
        // an interval's can be).
        let lost: u64 = rep
            .received
            .iter()
            .map(|s| u64::try_from(s.lost).unwrap_or(0))
            .sum();
        // At a checkpoint, what was sent after the receiver's last interval is on its
        // way: the loss is the gaps the receiver saw in what it was sent up to then (its
        // intervals' loss, as iperf3's), of the datagrams that reached it or went missing.
        let expected = match rep.checkpoint_s {
            Some(_) => recv_packets + lost,
            None => sent_packets,
        };
        match &rep.loss_unknown {
            None => {
                out.metrics
                    .push(Metric::new("lost_packets", lost as f64, "packets"));
                match proto::loss_pct(expected, expected.saturating_sub(lost)) {
                    Some(p) => {
                        out.metrics.push(Metric::new("loss_pct", p, "%"));
                        if p > UDP_LOSS_WARN_PCT {
                            out.flags.push(udp_loss_flag(p, lost, expected, send_gbit));
                        }
                    }
                    None => out.missing.push(MissingMetric {
                        name: "loss_pct".into(),
                        reason: "no datagram was sent".into(),
                    }),
                }
            }
            Some(why) => {
                for name in ["lost_packets", "loss_pct"] {
                    out.missing.push(MissingMetric {
                        name: name.into(),
                        reason: why.clone(),
                    });
                }
            }
        }
        let ooo: u64 = rep.received.iter().map(|s| s.out_of_order).sum();
        out.metrics
            .push(Metric::new("out_of_order_packets", ooo as f64, "packets"));
        if let Some(j) = mean_jitter(rep.received.iter()) {
            out.metrics.push(Metric::new("jitter_ms", j, "ms"));
        } else {
            out.missing.push(MissingMetric {
                name: "jitter_ms".into(),
                reason: "no stream received two datagrams sent at different times".into(),
            });
        }
        out.metrics
            .push(Metric::new("payload_bytes", spec.payload as f64, "B"));
        if rep.send_errors > 0 {
            out.metrics
                .push(Metric::new("send_errors", rep.send_errors as f64, "calls"));
        }
    }
    // CPU: percent of one CPU, over each end's own clock (iperf3's cpu_utilization_percent).
    let mut total_pct = 0.0;
    let mut have_both = true;
    if rep.checkpoint_s.is_some() {
        have_both = false;
        out.missing.push(engine::spread::read_at_end(
            "sender_cpu_pct",
            "each sending thread's CPU time (getrusage RUSAGE_THREAD) is read by the thread",
        ));
        out.missing.push(engine::spread::read_at_end(
            "cpu_pct_per_gbit",
            "each end's threads' CPU time is read",
        ));
    } else if send_s > 0.0 {
        total_pct += push_end_cpu(&mut out, "sender", &rep.sender_cpu, send_s, send_gbit);
    }
    let receiver_cpu_s = rep.receiver_cpu_span_s.unwrap_or(rep.receive_duration_s);
    match (&rep.receiver_cpu, receiver_cpu_s > 0.0) {
        (Some(c), true) => {
            total_pct += push_end_cpu(&mut out, "receiver", c, receiver_cpu_s, recv_gbit);
        }
        (c, _) => {
            have_both = false;
            out.missing.push(MissingMetric {
                name: "receiver_cpu_pct".into(),
                reason: match c {
                    Some(_) if receiver_warm => RECEIVER_STILL_WARM.into(),
                    Some(_) => "the receiver reported a span of none".into(),
                    None if rep.checkpoint_s.is_some() => RECEIVER_CPU_AT_END.into(),
                    None => "the receiver sent no final report".into(),
                },
            });
        }
    }
    if have_both && recv_gbit > 0.0 {
        out.metrics.push(Metric::new(
            "cpu_pct_per_gbit",
            total_pct / recv_gbit,
            "%/(Gbit/s)",
        ));
    }
    push_process_cpu(&mut out, rep, recv_gbit);
    push_tcp_counters(&mut out, rep);
    // Per interval, as the receiver counted them. Labelled by start time from the end of
    // the warm-up, to the tenth of a second, or the hundredth when the interval asked for
    // is under 0.1 s (it is at least 0.05 s), so a setting always gives the same form; the
    // warm-up's (before 0) are labelled `warmup` too, as iperf3 marks them `omitted`.
    // The start is the one the receiver's schedule gave the interval (each `interval_s`
    // from the end of the warm-up, the warm-up's from its start), not the one measured:
    // a tick 50 ms late moved an interval's start onto the next one's label.
    let decimals = if spec.interval_s < 0.1 { 2 } else { 1 };
    let (mut warm_k, mut test_k) = (0, 0);
    for iv in &rep.intervals {
        let (k, from_s) = if iv.warmup {
            (&mut warm_k, -spec.warmup_s)
        } else {
            (&mut test_k, 0.0)
        };
        let at = interval_label(from_s, *k, spec.interval_s, decimals);
        *k += 1;
        let len = iv.end_s - iv.start_s;
        if len <= 0.0 {
            continue;
        }
        let labelled = |m: Metric| {
            let m = m.label("interval_start_s", &at);
            if iv.warmup {
                m.label("warmup", "true")
            } else {
                m
            }
        };
        if let Some(r) = iv.retransmits {
            out.metrics
                .push(labelled(Metric::new("retransmits", r as f64, "segments")));
        }
        let bytes: u64 = iv.received.iter().map(|s| s.bytes).sum();
        out.metrics.push(labelled(Metric::new(
            "throughput_gbit_per_s",
            bytes as f64 * 8.0 / len / 1e9,
            "Gbit/s",
        )));
        if spec.proto == Proto::Udp {
            let pk: u64 = iv.received.iter().map(|s| s.packets).sum();
            out.metrics.push(labelled(Metric::new(
                "packets_per_s",
                pk as f64 / len,
                "packets/s",
            )));
            let (lost, ooo) = interval_loss(&iv.received);
            let expected = pk + lost;
            if expected > 0 {
                out.metrics.push(labelled(Metric::new(
                    "loss_pct",
                    100.0 * lost as f64 / expected as f64,
                    "%",
                )));
            }
            out.metrics.push(labelled(Metric::new(
                "out_of_order_packets",
                ooo as f64,
                "packets",
            )));
            // A stream's jitter at an interval's end is its running estimate, counted
            // for the streams whose receiver took a difference of transit times in it.
            if let Some(j) = mean_jitter(iv.received.iter()) {
                out.metrics
                    .push(labelled(Metric::new("jitter_ms", j, "ms")));
            }
        }
    }
    if let Some(why) = nothing_sent {
        out.flags.push(Flag::invalid("zero_throughput", why));
    }
    push_outcome(&mut out, spec, rep);
    if let Some(at) = rep.checkpoint_s {
        let test = match spec.proto {
            Proto::Tcp => "tcp".to_string(),
            Proto::Udp => format!("udp{}", spec.payload),
        };
        out.flags.push(engine::spread::checkpoint_flag(
            &test,
            at,
            Some(spec.duration_s),
        ));
    }
    out
}

/// Each stream's rate at each end, with more than one stream (iperf3's lines above its
/// [SUM]): the sender's over that stream's own sending time, the receiver's over its
/// measured span (iperf3's receiver divides each stream by the test's too). Where the
/// test's own rate at an end is missing (nothing sent, a receiver with no span) its
/// streams have none either: that figure's reason says why.
fn push_stream_rates(out: &mut StepOutput, rep: &TestReport, nothing_sent: bool) {
    if rep.sent.len() < 2 || nothing_sent {
        return;
    }
    for (i, (s, secs)) in rep.sent.iter().zip(&rep.stream_send_s).enumerate() {
        if *secs > 0.0 {
            out.metrics.push(
                Metric::new(
                    model::STREAM_THROUGHPUT,
                    s.bytes as f64 * 8.0 / secs / 1e9,
                    "Gbit/s",
                )
                .label("stream", i)
                .label("end", "sender"),
            );
        }
    }
    // As the test's received rate: over the receiver's span, where it has one.
    if rep.receive_duration_s > 0.0 {
        for (i, s) in rep.received.iter().enumerate() {
            out.metrics.push(
                Metric::new(
                    model::STREAM_THROUGHPUT,
                    s.bytes as f64 * 8.0 / rep.receive_duration_s / 1e9,
                    "Gbit/s",
                )
                .label("stream", i),
            );
        }
    }
}

/// Why a checkpoint has none of the receiver's CPU.
const RECEIVER_CPU_AT_END: &str = "the receiver reports its CPU time in its final report at \
    the end of the test: this result is a checkpoint taken while it ran";

/// An interval's lost and out-of-order datagrams as shown: each stream's loss never below
/// 0. A stream's count over an interval is below 0 when datagrams counted lost in an
/// earlier one arrived late in it; iperf3 prints that negative loss, which reads as
/// nonsense. Those late datagrams are out-of-order arrivals (the receiver counts each
/// one so, as iperf3's "OUT OF ORDER"), and the interval they arrive in lost none of
/// its own: the loss shown is 0 and they count in the interval's out-of-order figure.
/// The earlier interval keeps them lost, so the intervals' loss may add up to more than
/// the test's, which stays exact (sent less received, [`step_output`]).
fn interval_loss(streams: &[proto::StreamStats]) -> (u64, u64) {
    streams.iter().fold((0, 0), |(lost, ooo), s| {
        (
            lost + u64::try_from(s.lost).unwrap_or(0),
            ooo + s.out_of_order,
        )
    })
}

/// Whole-test UDP loss above which a test is flagged `udp_loss`, percent of the datagrams
/// sent. iperf3 users read more than a few percent as a rate above what the path takes;
/// 1% leaves room for a loopback test's stray drop while catching a rate the receiver
/// cannot take (14-32% at `--rate 1G` on a slow receiver).
pub const UDP_LOSS_WARN_PCT: f64 = 1.0;

/// The warning on a UDP test that lost more than [`UDP_LOSS_WARN_PCT`] of what it sent:
/// its throughput is what the receiver took, not the rate offered.
fn udp_loss_flag(loss_pct: f64, lost: u64, sent: u64, sent_gbit: f64) -> Flag {
    Flag::warning(
        "udp_loss",
        format!(
            "{loss_pct:.1}% of the datagrams sent were lost ({lost} of {sent}, above the \
             {UDP_LOSS_WARN_PCT}% taken as a path that keeps up): the rate offered, {sent_gbit:.3} \
             Gbit/s sent, is above what the receiver or the path takes, so the Gbit/s figure \
             is the receiver's, not the rate offered; lower --rate to find the rate it takes \
             without loss"
        ),
    )
}

/// The label of the interval the receiver scheduled `k` intervals of `interval_s` after
/// `from_s` (seconds from the end of the warm-up), to `decimals` places. Counted in whole
/// nanoseconds, so that intervals (at least one place long) never share a label, whichever
/// way a float would round a start halfway between two: a start from 0 on rounds halves
/// up; one before 0 (the warm-up's) rounds down, so that its label stays below 0, apart
/// from the test's.
fn interval_label(from_s: f64, k: usize, interval_s: f64, decimals: usize) -> String {
    let ns = |s: f64| (s * 1e9).round() as i64;
    let start = ns(from_s) + k as i64 * ns(interval_s);
    let place = 10i64.pow(9 - decimals as u32);
    let places = if start < 0 {
        start.div_euclid(place)
    } else {
        (start + place / 2) / place
    };
    format!(
        "{:.*}",
        decimals,
        places as f64 / 10f64.powi(decimals as i32)
    )
}

/// How the test ended: its error, a stop, a congestion control the kernel did not use, and
/// TCP bytes that did not all arrive.
fn push_outcome(out: &mut StepOutput, spec: &SendSpec, rep: &TestReport) {
    if let Some(e) = &rep.error {
        out.error = Some(e.clone());
        out.flags.push(Flag::warning("net_incomplete", e.clone()));
    }
    // A stop is not a failure: the runner stores the test as interrupted, with what was
    // measured until then.
    if rep.interrupted {
        out.flags.push(Flag::warning(
            "stopped_early",
            "the test stopped early: interrupted",
        ));
    }
    // The sender's own pinning failing ends its stream (an error above); the receiver's
    // threads run on where the kernel put them, and the figures are for that.
    if let Some(why) = &rep.receiver_pin_error {
        out.flags.push(Flag::warning(
            "receiver_not_pinned",
            match spec.receiver_cpus.as_slice() {
                [] => format!(
                    "the receiver's {why}; its figures are for threads the kernel placed: \
                     give its own --cpus CPUs its host has online and its cpuset allows"
                ),
                cpus => format!(
                    "--receiver-cpus {}: the receiver's {why}; its figures are for threads \
                     the kernel placed: give CPUs the receiver's host has online and its \
                     cpuset allows, or leave --receiver-cpus out",
                    engine::launch::cpu_list_text(cpus)
                ),
            },
        ));
    }
    if let (Proto::Tcp, Some(asked), Some(ran)) = (spec.proto, &spec.congestion, &rep.congestion) {
        if asked != ran {
            out.flags.push(Flag::invalid(
                "congestion_mismatch",
                format!(
                    "--congestion {asked} was asked for, but the kernel ran the stream on {ran}"
                ),
            ));
        }
    }
    // Over the whole stream, warm-up included: each end marks its own end of it.
    let complete = rep.error.is_none() && !rep.interrupted;
    let whole_sent: u64 = rep
        .sent
        .iter()
        .chain(&rep.warmup_sent)
        .map(|s| s.bytes)
        .sum();
    let whole_received: u64 = (rep.received.iter().chain(&rep.warmup_received))
        .map(|s| s.bytes)
        .sum();
    if spec.proto == Proto::Tcp && complete && whole_sent != whole_received {
        out.flags.push(Flag::invalid(
            "bytes_mismatch",
            format!("sent {whole_sent} B but the receiver counted {whole_received} B over TCP"),
        ));
    }
}

/// The receiver in-process on a thread, for tests and embedding: returns its address, the
/// stop flag and the thread.
pub fn spawn_receiver(
    opts: ServeOptions,
) -> anyhow::Result<(
    std::net::SocketAddr,
    std::sync::Arc<std::sync::atomic::AtomicBool>,
    std::thread::JoinHandle<anyhow::Result<()>>,
)> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = l.local_addr()?;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s2 = std::sync::Arc::clone(&stop);
    let h = std::thread::spawn(move || serve(l, &opts, &s2));
    Ok((addr, stop, h))
}

/// A paced stream sending below this share of its target rate is flagged.
const TARGET_RATE_KEPT: f64 = 0.95;

/// A paced stream sending more than this multiple of its target rate is flagged: a rate
/// below one write over the test (`--rate 1`: one 128 KiB write in 2 s, 0.5 Mbit/s
/// against the 1 bit/s asked, unflagged).
const TARGET_RATE_PASSED: f64 = 1.25;

/// With `--rate`: the rate asked of all streams together (`target_gbit_per_s`), and a
/// warning when a stream sent less than [`TARGET_RATE_KEPT`] of its rate over its own
/// sending time in a whole test (the offered load was not the one asked for: the sender's
/// CPU or the path held it). Each stream is paced on its own clock, as iperf3's, so each
/// is judged on it: a stream that started late has not fallen short.
fn push_target_rate(out: &mut StepOutput, spec: &SendSpec, rep: &TestReport) {
    if spec.rate_bps <= 0.0 {
        return;
    }
    let target = spec.rate_bps * spec.streams as f64 / 1e9;
    out.metrics
        .push(Metric::new("target_gbit_per_s", target, "Gbit/s"));
    if rep.error.is_some() || rep.interrupted {
        return;
    }
    // Each stream's rate over its own sending time: (stream, bit/s).
    let rates: Vec<(usize, f64)> = rep
        .sent
        .iter()
        .zip(&rep.stream_send_s)
        .enumerate()
        .filter(|(_, (_, &secs))| secs > 0.0)
        .map(|(i, (sent, &secs))| (i, sent.bytes as f64 * 8.0 / secs))
        .collect();
    let slowest = rates.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1));
    let fastest = rates.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1));
    if let Some((i, bps)) = fastest.filter(|&(_, bps)| bps > spec.rate_bps * TARGET_RATE_PASSED) {
        out.flags.push(Flag::warning(
            "above_target_rate",
            format!(
                "stream {i} sent {bps:.0} bit/s where {:.0} bit/s was asked of each (--rate): \
                 a paced stream sends whole writes, and the rate is below one write over the \
                 test; raise --rate, lengthen --duration, or make the writes smaller \
                 (--tcp-len, --udp-payload)",
                spec.rate_bps
            ),
        ));
    }
    if let Some((i, bps)) = slowest.filter(|&(_, bps)| bps < spec.rate_bps * TARGET_RATE_KEPT) {
        out.flags.push(Flag::warning(
            "below_target_rate",
            format!(
                "stream {i} sent {:.3} Gbit/s of the {:.3} asked of each (--rate, {} stream(s)): \
                 the sender's CPU or the path could not keep the rate, so the figures are for the \
                 load it could offer; lower --rate, or spread the load: more --streams at a lower \
                 --rate each, on more --sender-cpus",
                bps / 1e9,
                spec.rate_bps / 1e9,
                spec.streams
            ),
        ));
    }
}

/// TCP: what the sender's kernel counted over the test: iperf3's Retr, its mean, minimum
/// and maximum RTT, and its largest Cwnd.
fn push_tcp_counters(out: &mut StepOutput, rep: &TestReport) {
    const NAMES: [&str; 5] = [
        "retransmits",
        "rtt_mean_ns",
        "rtt_min_ns",
        "rtt_max_ns",
        "snd_cwnd_max_bytes",
    ];
    let missing = |out: &mut StepOutput, name: &str, reason: &str| {
        out.missing.push(MissingMetric {
            name: name.into(),
            reason: reason.into(),
        })
    };
    match &rep.tcp {
        None => {}
        Some(Err(why)) => {
            for name in NAMES {
                missing(out, name, why);
            }
        }
        Some(Ok(t)) => {
            out.metrics
                .push(Metric::new("retransmits", t.retransmits as f64, "segments"));
            out.metrics
                .push(Metric::new("rtt_mean_ns", t.rtt_mean_us * 1e3, "ns"));
            match t.rtt_min_us {
                Some(us) => out
                    .metrics
                    .push(Metric::new("rtt_min_ns", f64::from(us) * 1e3, "ns")),
                None => missing(
                    out,
                    "rtt_min_ns",
                    "no RTT was read during the test (TCP_INFO is read at each interval and at the end)",
                ),
            }
            out.metrics.push(Metric::new(
                "rtt_max_ns",
                f64::from(t.rtt_max_us) * 1e3,
                "ns",
            ));
            out.metrics.push(Metric::new(
                "snd_cwnd_max_bytes",
                t.snd_cwnd_max_bytes as f64,
                "B",
            ));
        }
    }
}

/// Each end's whole process, as iperf3 reports its CPU (`getrusage(RUSAGE_SELF)` over the
/// test: every thread, control and telemetry included): `process_cpu_pct{end}` and, with
/// both ends, `process_cpu_pct_per_gbit`. Two ends in one process (no roles) are one
/// figure, `end=both`.
fn push_process_cpu(out: &mut StepOutput, rep: &TestReport, recv_gbit: f64) {
    let pct = |p: &proto::ProcessCpu| 100.0 * (p.cpu.user_s + p.cpu.system_s) / p.span_s;
    let s = &rep.sender_process;
    if s.span_s <= 0.0 {
        return;
    }
    match &rep.receiver_process {
        Some(r) if r.process == s.process => {
            out.metrics
                .push(Metric::new("process_cpu_pct", pct(s), "%").label("end", "both"));
        }
        Some(r) if r.span_s > 0.0 => {
            let (ps, pr) = (pct(s), pct(r));
            out.metrics
                .push(Metric::new("process_cpu_pct", ps, "%").label("end", "sender"));
            out.metrics
                .push(Metric::new("process_cpu_pct", pr, "%").label("end", "receiver"));
            if recv_gbit > 0.0 {
                out.metrics.push(Metric::new(
                    "process_cpu_pct_per_gbit",
                    (ps + pr) / recv_gbit,
                    "%/(Gbit/s)",
                ));
            }
        }
        r => {
            out.metrics
                .push(Metric::new("process_cpu_pct", pct(s), "%").label("end", "sender"));
            out.missing.push(MissingMetric {
                name: "process_cpu_pct".into(),
                reason: match r {
                    Some(_) => format!("the receiver's process CPU: {RECEIVER_STILL_WARM}"),
                    None if rep.checkpoint_s.is_some() => {
                        format!("the receiver's process CPU: {RECEIVER_CPU_AT_END}")
                    }
                    None => "the receiver's process CPU: it sent no final report with it".into(),
                },
            });
        }
    }
}

/// One end's CPU as a percent of one CPU over that end's own clock (iperf3's
/// cpu_utilization_percent): `<end>_cpu_pct`, its user and system parts, and the CPU per
/// Gbit/s that end moved. Returns the percent.
///
/// The total is the scheduler's exact run time; the user/system split is the kernel's
/// tick sampling scaled to it. A thread that always runs between two ticks (a paced
/// stream waking on its 1 ms timer, sending, and sleeping again) is never sampled, and
/// the kernel then calls all of its time user time: 4.5% user and 0% system for a
/// stream that did nothing but write(2). An end that moved data with no system time at
/// all is such a case: its split is missing, with why, and its total stands.
fn push_end_cpu(out: &mut StepOutput, end: &str, c: &proto::CpuUsage, secs: f64, gbit: f64) -> f64 {
    let pct = 100.0 * (c.user_s + c.system_s) / secs;
    out.metrics
        .push(Metric::new(format!("{end}_cpu_pct"), pct, "%"));
    if split_unsampled(c, gbit) {
        for part in ["user", "sys"] {
            out.missing.push(MissingMetric {
                name: format!("{end}_cpu_{part}_pct"),
                reason: format!(
                    "the kernel's tick sampling saw none of the {end}'s system time (its \
                     threads ran between ticks), and called all of it user time; the total, \
                     {end}_cpu_pct, is exact"
                ),
            });
        }
    } else {
        out.metrics.push(Metric::new(
            format!("{end}_cpu_user_pct"),
            100.0 * c.user_s / secs,
            "%",
        ));
        out.metrics.push(Metric::new(
            format!("{end}_cpu_sys_pct"),
            100.0 * c.system_s / secs,
            "%",
        ));
    }
    if gbit > 0.0 {
        out.metrics
            .push(Metric::new("cpu_pct_per_gbit", pct / gbit, "%/(Gbit/s)").label("end", end));
    }
    pct
}

/// Data moved through system calls with no system time sampled: the user/system split
/// is the kernel's default for a task no tick saw (see [`push_end_cpu`]).
fn split_unsampled(c: &proto::CpuUsage, gbit: f64) -> bool {
    gbit > 0.0 && c.user_s > 0.0 && c.system_s == 0.0
}

#[cfg(test)]
mod tests;
