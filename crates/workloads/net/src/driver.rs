//! The sending end of `net` as the driver a load generator runs against the receiver's
//! endpoint: one job is one test (or the [`CHECK`] the controller sends in `prepare`).
//!
//! Everything about the sender is found on the sender's host, because that is where it
//! holds: whether the congestion control asked for may be used there, which one the
//! kernel picks by default, the send-buffer sysctls. They come back with the test's
//! [`StepOutput`] in a [`SenderReport`], plain JSON, so the controller can disclose them
//! whichever host sent.

use std::collections::BTreeMap;

use anyhow::Context;
use engine::host::DriverJob;
use engine::workload::Progress;
use engine::StepOutput;
use model::{Fact, MissingMetric};
use serde::{Deserialize, Serialize};

use crate::{parse_test, sender, step_output, sysctl, Plan, Proto};

/// The job name of the check the controller runs on the sender's host in `prepare`: the
/// congestion probe and the sender's facts, nothing sent. Not a test name (those are
/// `tcp` and `udpN`), so the two cannot be confused.
pub const CHECK: &str = "check";

/// The disclosure key of the TCP congestion control the sender used.
pub const TCP_CONGESTION: &str = "net.tcp_congestion";

/// The send side's sysctls: TCP autotuning's send buffer and the socket send-buffer
/// limits a UDP sender writes into.
pub const SENDER_SYSCTLS: [&str; 3] = [
    "net.ipv4.tcp_wmem",
    "net.core.wmem_default",
    "net.core.wmem_max",
];

/// What the driver returns (as JSON): the test's output and the sender host's facts.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SenderReport {
    /// None for the [`CHECK`] job.
    pub step: Option<StepOutput>,
    /// `net.tcp_congestion` (with a tcp test) and `net.sender.<sysctl>`.
    pub facts: BTreeMap<String, Fact>,
}

/// Run one job on this host (`Registration::driver`).
pub fn drive(job: &DriverJob, progress: &Progress) -> anyhow::Result<serde_json::Value> {
    let plan = Plan::from_params(&job.params)?;
    let report = if job.test == CHECK {
        if plan.runs_tcp() {
            probe_congestion(&plan)?;
        }
        if plan.cfg.zerocopy {
            // Refused here, before any test, rather than as a test sets its streams up.
            sender::zerocopy_source(plan.cfg.tcp_len)?;
        }
        if let Some(t) = &plan.cfg.target {
            // A receiver given with --target is reached from here, the sender, before
            // any test, as kv and http check theirs: one that is not there is bad input
            // (nothing stored), not a failed test. The receiver takes a connection that
            // leaves without a test as a readiness probe.
            drop(sender::connect_control(t)?);
        }
        SenderReport {
            step: None,
            facts: sender_facts(&plan, Ran::Check),
        }
    } else {
        let (step, on_stream) = send(&plan, job, progress)?;
        SenderReport {
            step: Some(step),
            facts: sender_facts(&plan, Ran::Test(on_stream.as_deref())),
        }
    };
    serde_json::to_value(&report).context("net: serialising the sender's report")
}

/// Run one test; with its output, the congestion control the kernel reported on the TCP
/// data streams (None for UDP).
fn send(
    plan: &Plan,
    job: &DriverJob,
    progress: &Progress,
) -> anyhow::Result<(StepOutput, Option<String>)> {
    let (proto_, payload) = parse_test(&job.test, plan.cfg.tcp_len)?;
    if proto_ == Proto::Tcp {
        // Refused before anything is sent, rather than from the first data stream.
        probe_congestion(plan)?;
    }
    let target = job
        .endpoints
        .first()
        .context("net: the sender was given no receiver address")?;
    let spec = plan.send_spec(target, proto_, payload);
    progress.reset(
        &format!("net {} streams={}", job.test, spec.streams),
        0,
        ((spec.warmup_s + spec.duration_s) * 1000.0) as u64,
    );
    // Checkpoints, when someone wants them: the sender's watching thread hands each, and
    // a thread of their own turns it into the report this driver would return had the
    // test ended there (the controller reads it as it reads that), off the sender's way.
    let sink = progress.checkpoint_sink();
    let generator = progress
        .generator
        .load(std::sync::atomic::Ordering::Relaxed);
    let rep = std::thread::scope(|s| {
        let tx = sink.map(|sink| {
            let (tx, rx) = std::sync::mpsc::channel::<sender::TestReport>();
            let spec = &spec;
            s.spawn(move || {
                for so_far in rx {
                    if let Ok(v) = serde_json::to_value(SenderReport {
                        step: Some(sender_step(spec, &so_far)),
                        facts: BTreeMap::new(),
                    }) {
                        sink.hand_report(generator, v);
                    }
                }
            });
            tx
        });
        let hand = tx.as_ref().map(|tx| {
            move |so_far: sender::TestReport| {
                let _ = tx.send(so_far);
            }
        });
        let checkpoint = hand
            .as_ref()
            .map(|f| f as &(dyn Fn(sender::TestReport) + Sync));
        let rep = sender::run(&spec, &progress.done, &|| progress.stopping(), checkpoint);
        // The checkpoint thread ends once its channel closes.
        drop(tx);
        rep
    })?;
    Ok((sender_step(&spec, &rep), rep.congestion))
}

/// A test's output as the sender reports it: at its end or at a checkpoint alike.
fn sender_step(spec: &sender::SendSpec, rep: &sender::TestReport) -> StepOutput {
    let mut out = step_output(spec, rep);
    keep_finite(&mut out);
    out
}

/// Whether this host lets a TCP socket use the congestion control asked for. The probe
/// is a fresh TCP socket, never bound or connected.
fn probe_congestion(plan: &Plan) -> anyhow::Result<()> {
    let Some(cc) = &plan.cfg.congestion else {
        return Ok(());
    };
    let probe = probe_socket().context("net: opening a socket to check --congestion")?;
    sender::set_congestion(&probe, cc)
}

/// A fresh TCP socket to try a setting on, never bound or connected.
fn probe_socket() -> std::io::Result<socket2::Socket> {
    socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
}

/// What a driver job ran, as the sender's facts need it.
pub enum Ran<'a> {
    /// The check before the tests: no stream yet.
    Check,
    /// A test, with the congestion control the kernel reported on its TCP data streams
    /// (None for UDP, which has none to read back).
    Test(Option<&'a str>),
}

/// The sender host's facts. The congestion control is disclosed only when tcp tests run:
/// after a tcp test, the one the kernel reported on the data streams; at the check, the
/// one a stream would get. A udp test leaves it out, so that the workload keeps the tcp
/// test's (each report adds to the earlier ones).
pub fn sender_facts(plan: &Plan, ran: Ran) -> BTreeMap<String, Fact> {
    let mut m = BTreeMap::new();
    if plan.runs_tcp() {
        let read_back = "read back from the data stream";
        let fact = match (ran, &plan.cfg.congestion) {
            (Ran::Test(None), _) => None,
            (Ran::Test(Some(k)), Some(_)) => {
                Some(Fact::known(format!("{k} (--congestion; {read_back})")))
            }
            (Ran::Test(Some(k)), None) => Some(Fact::known(format!(
                "{k} (the sender's system default; {read_back})"
            ))),
            (Ran::Check, Some(cc)) => Some(Fact::known(format!("{cc} (--congestion)"))),
            (Ran::Check, None) => Some(match sysctl("net.ipv4.tcp_congestion_control") {
                Ok(d) => Fact::known(format!("{d} (the sender's system default)")),
                Err(e) => Fact::unknown(e),
            }),
        };
        if let Some(f) = fact {
            m.insert(TCP_CONGESTION.into(), f);
        }
    }
    if let Some(w) = plan.cfg.window {
        m.insert("net.window".into(), window_fact(w));
    }
    for key in SENDER_SYSCTLS {
        m.insert(
            sender_key(key),
            sysctl(key).map(Fact::known).unwrap_or_else(Fact::unknown),
        );
    }
    m
}

/// `--window` as this host's kernel takes it: set on a probe socket and read back.
fn window_fact(bytes: usize) -> Fact {
    let held = probe_socket().map_err(anyhow::Error::from).and_then(|s| {
        sender::set_buffers(&s, bytes)?;
        Ok((s.send_buffer_size()?, s.recv_buffer_size()?))
    });
    match held {
        Ok((snd, rcv)) => {
            let capped = if snd < 2 * bytes || rcv < 2 * bytes {
                ", capped by net.core.wmem_max or rmem_max"
            } else {
                ""
            };
            Fact::known(format!(
                "{bytes} B (--window): SO_SNDBUF and SO_RCVBUF on both ends' data sockets, \
                 autotuning off; the sender's kernel holds {snd} B to send and {rcv} B to \
                 receive (twice the size asked for{capped})"
            ))
        }
        Err(e) => Fact::unknown(format!("{e:#}")),
    }
}

/// The disclosure key of a sender-side sysctl (`net.sender.net.ipv4.tcp_wmem`).
pub fn sender_key(sysctl: &str) -> String {
    format!("net.sender.{sysctl}")
}

/// JSON has no NaN or infinity (serde_json writes null, which then fails to read back as
/// a number), so a non-finite figure would lose the whole report on its way to the
/// controller: it becomes a missing metric instead.
pub(crate) fn keep_finite(out: &mut StepOutput) {
    let (ok, bad): (Vec<_>, Vec<_>) = std::mem::take(&mut out.metrics)
        .into_iter()
        .partition(|m| m.value.is_finite());
    out.metrics = ok;
    for m in bad {
        out.missing.push(MissingMetric {
            name: m.name,
            reason: format!("not a finite number ({})", m.value),
        });
    }
    if !out.duration_s.is_finite() {
        out.duration_s = 0.0;
    }
}
