//! `rackbench agent`: a [`LocalHost`] served over the ssh session's stdin and stdout.
//!
//! It answers requests concurrently (a driver runs for seconds while heartbeats keep
//! coming), and it never outlives its controller: at end-of-file on stdin (rackbench
//! killed, ssh gone) or after `idle_timeout` without any frame (a link cut that TCP has
//! not noticed yet, a controller stopped with SIGSTOP), it stops its load, stops
//! everything it launched and exits. What it launched also dies with it if it is killed
//! outright (the launch reaper).

use std::collections::{BTreeMap, VecDeque};
use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use engine::host::Host;
use serde_json::{json, Value};
use sha2::Digest;

use crate::local::{Catalog, LocalHost};
use crate::proto::{
    frame_body, next_chunk, read_frame, write_body, write_frame, Envelope, Hello, Request, MAGIC,
    PROTOCOL_VERSION, TAKE_CHUNK_BYTES,
};

/// sha256 of this process's binary, hex: the agent's identity.
pub fn own_binary_sha256() -> anyhow::Result<String> {
    // This process's image, even if its file was replaced since it started.
    let exe = std::path::PathBuf::from("/proc/self/exe");
    let mut f = File::open(&exe).with_context(|| format!("cannot read {}", exe.display()))?;
    let mut h = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex::encode(h.finalize()))
}

/// This binary's architecture as `uname -m` says it.
pub fn own_arch() -> &'static str {
    std::env::consts::ARCH
}

/// The programs the workloads' services launch, each with where this host has it, as
/// each workload's launcher finds it ([`engine::workload::ProgramsFn`]: its environment
/// override such as `RACKBENCH_PG_BINDIR`, PATH, the distribution's directories).
pub fn programs_here(workloads: &[engine::Registration]) -> BTreeMap<String, Option<String>> {
    workloads
        .iter()
        .flat_map(|w| (w.programs)())
        .map(|(name, path)| (name.to_string(), path.map(|p| p.display().to_string())))
        .collect()
}

/// SSH_CONNECTION is "client_ip client_port server_ip server_port".
fn ssh_connection() -> (Option<String>, Option<String>) {
    let v = std::env::var("SSH_CONNECTION").unwrap_or_default();
    let parts: Vec<&str> = v.split_whitespace().collect();
    if parts.len() == 4 {
        (Some(parts[2].to_string()), Some(parts[0].to_string()))
    } else {
        (None, None)
    }
}

/// This host's introduction, `servers` being [`programs_here`]'s.
pub fn hello(servers: BTreeMap<String, Option<String>>) -> anyhow::Result<Hello> {
    let (address, peer_address) = ssh_connection();
    Ok(Hello {
        protocol: PROTOCOL_VERSION,
        version: env!("CARGO_PKG_VERSION").to_string(),
        binary_sha256: own_binary_sha256()?,
        arch: own_arch().to_string(),
        kernel: crate::read_trim("/proc/sys/kernel/osrelease"),
        hostname: crate::hostname(),
        pid: std::process::id(),
        cpus: engine::launch::system_cpus(),
        online: Some(engine::launch::cpus_online_here()),
        address,
        peer_address,
        addresses: crate::local_addresses(),
        boot_id: model::process::boot_id(),
        servers,
        exe: std::fs::read_link("/proc/self/exe")
            .ok()
            .and_then(|p| p.into_os_string().into_string().ok()),
    })
}

fn now_unix_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The samples of the telemetry take under way, sent a chunk at a time.
type Outbox = Mutex<VecDeque<model::TelemetrySample>>;

/// The agent's output, where every frame goes.
type Output = Arc<Mutex<File>>;

/// Where drive `id`'s checkpoints go: each a frame to the controller, encoded and
/// written on the load loop's checkpoint thread (never on its workers').
fn checkpoint_frames(id: u64, out: &Output) -> engine::workload::CheckpointSink {
    let out = out.clone();
    engine::workload::CheckpointSink::new(move |_, so_far| {
        let frame = so_far
            .into_report()
            .map_err(anyhow::Error::from)
            .and_then(|v| frame_body(&Envelope::checkpoint(id, v)));
        let sent = frame.and_then(|b| {
            let mut o = out.lock().unwrap_or_else(|e| e.into_inner());
            write_body(&mut *o, &b)
        });
        if let Err(e) = sent {
            engine::errln!("rackbench agent: cannot send a checkpoint: {e:#}");
        }
    })
}

fn handle(
    host: &LocalHost,
    outbox: &Outbox,
    id: u64,
    out: &Output,
    req: Request,
) -> anyhow::Result<Value> {
    Ok(match req {
        Request::Ping => json!(now_unix_s()),
        Request::Disclosure { role } => serde_json::to_value(host.disclosure(&role)?)?,
        Request::StartService { workload, params } => {
            serde_json::to_value(host.start_service(&workload, &params)?)?
        }
        Request::CheckLaunch { workload, params } => {
            host.check_launch(&workload, &params)?;
            Value::Null
        }
        Request::ServiceQuery { id, what } => host.service_query(id, &what)?,
        Request::ServiceExited { id } => serde_json::to_value(host.service_exited(id)?)?,
        Request::StopService { id } => {
            host.stop_service(id);
            Value::Null
        }
        Request::Drive {
            job,
            start_at_unix_s,
            checkpoints,
        } => {
            let at = UNIX_EPOCH + Duration::from_secs_f64(start_at_unix_s.max(0.0));
            let sink = checkpoints.then(|| checkpoint_frames(id, out));
            serde_json::to_value(host.drive_interruptible(&job, at, sink)?)?
        }
        Request::Interrupt => {
            // Sticky: a drive that starts after this (its request raced the interrupt)
            // ends at once too. An agent serves one run, which is ending.
            engine::stop::request_stop();
            host.interrupt();
            Value::Null
        }
        Request::TelemetryStart { settings } => {
            serde_json::to_value(host.telemetry_start(&settings)?)?
        }
        Request::TelemetryTake => {
            let mut q = outbox.lock().unwrap_or_else(|e| e.into_inner());
            // What a take the controller gave up on left is dropped, not sent as this
            // step's: its samples are of the earlier one.
            *q = host.telemetry_take()?.into();
            serde_json::to_value(next_chunk(&mut q, TAKE_CHUNK_BYTES)?)?
        }
        Request::TelemetryTakeMore => {
            let mut q = outbox.lock().unwrap_or_else(|e| e.into_inner());
            serde_json::to_value(next_chunk(&mut q, TAKE_CHUNK_BYTES)?)?
        }
        Request::TelemetryClock => {
            serde_json::to_value(host.sync_clock().map(engine::host::unix_s))?
        }
        Request::TelemetryMark => serde_json::to_value(host.telemetry_mark())?,
        Request::TelemetrySince { mark } => serde_json::to_value(host.telemetry_since(mark))?,
        Request::SetWarmup { on } => {
            host.set_warmup(on);
            Value::Null
        }
        Request::UnwatchServers => {
            host.unwatch_servers();
            Value::Null
        }
        Request::MeasureIdle { secs } => serde_json::to_value(host.measure_idle(secs)?)?,
        Request::RunCommands { commands, purpose } => {
            serde_json::to_value(host.run_commands(&commands, purpose)?)?
        }
        Request::Shutdown => {
            host.shutdown();
            Value::Null
        }
    })
}

/// Keep the protocol's stdout to ourselves: frames go to a private copy of descriptor 1,
/// and descriptor 1 itself becomes stderr, so a stray print (ours or a child's) can
/// never corrupt a frame.
fn private_stdout() -> anyhow::Result<File> {
    // SAFETY: dup/dup2 on the standard descriptors; the new one is owned by the File.
    unsafe {
        let fd = libc::fcntl(1, libc::F_DUPFD_CLOEXEC, 3);
        if fd < 0 {
            return Err(std::io::Error::last_os_error()).context("dup(stdout)");
        }
        if libc::dup2(2, 1) < 0 {
            return Err(std::io::Error::last_os_error()).context("dup2(stderr, stdout)");
        }
        Ok(File::from_raw_fd(fd))
    }
}

/// The agent's first line on stderr ([`mark_stderr`]).
pub(crate) const STDERR_MARK: &str = "rackbench agent: stderr follows";

/// Said first by a process started as an agent, before anything else it may say (the
/// cleanup of what a killed one left): the controller relays what follows, and takes what
/// came before for the remote login's (a banner, a shell's rc file).
pub fn mark_stderr() {
    let mut e = std::io::stderr().lock();
    let _ = writeln!(e, "{STDERR_MARK}").and_then(|()| e.flush());
}

/// Serve the controller until it goes, the workloads' services found in `catalog` and
/// their programs said in the introduction (`servers`, [`programs_here`]). Returns the
/// exit code.
pub fn serve(
    name: &str,
    catalog: Catalog,
    servers: BTreeMap<String, Option<String>>,
    idle_timeout: Duration,
) -> anyhow::Result<i32> {
    engine::launch::init_reaper();
    let hello = hello(servers)?;
    let host = Arc::new(LocalHost::new(name, catalog, true));
    let outbox: Arc<Outbox> = Arc::default();
    // The address the controller reached us at, as sshd saw it: ours unless something
    // in between rewrote it, which a bind would then fail on, server after server.
    match &hello.address {
        Some(a) if crate::is_local_address(a) => host.set_address(a),
        Some(a) => engine::errln!(
            "rackbench agent {name}: warning: reached at {}, not an address of this host \
             (NAT?): services here bind 127.0.0.1, which other hosts cannot reach",
            model::printable(a)
        ),
        None => {}
    }
    let out = Arc::new(Mutex::new(private_stdout()?));
    {
        let mut o = out.lock().unwrap_or_else(|e| e.into_inner());
        o.write_all(MAGIC)?;
        write_frame(&mut *o, &hello)?;
    }
    // Milliseconds since `t0` at the last frame received.
    let t0 = Instant::now();
    let last_seen = Arc::new(AtomicU64::new(0));
    {
        let (host, last_seen) = (host.clone(), last_seen.clone());
        std::thread::Builder::new()
            .name("agent-watchdog".into())
            .spawn(move || loop {
                std::thread::sleep(Duration::from_millis(200));
                let silent = (t0.elapsed().as_millis() as u64)
                    .saturating_sub(last_seen.load(Ordering::Relaxed));
                if silent > idle_timeout.as_millis() as u64 {
                    engine::errln!(
                        "rackbench agent {}: no word from the controller for {:.1} s: stopping the load and everything launched here",
                        host.name(),
                        silent as f64 / 1000.0
                    );
                    end_everything(&host, SERVICE_STOP_LIMIT);
                    // Its scratch (a cluster being built, a server's directory) with it,
                    // as a normal end removes it: the next command here would sweep it
                    // only when one comes.
                    engine::scratch::remove_own();
                    std::process::exit(3);
                }
            })?;
    }
    let mut input = BufReader::new(std::io::stdin().lock());
    loop {
        let env: Envelope = match read_frame(&mut input) {
            Ok(Some(e)) => e,
            Ok(None) => break,
            Err(e) => {
                engine::errln!("rackbench agent {name}: {e:#}");
                break;
            }
        };
        last_seen.store(t0.elapsed().as_millis() as u64, Ordering::Relaxed);
        let Some(req) = env.request else { continue };
        if matches!(req, Request::Shutdown) {
            host.shutdown();
            let mut o = out.lock().unwrap_or_else(|e| e.into_inner());
            let _ = write_frame(&mut *o, &Envelope::reply(env.id, Ok(Value::Null)));
            return Ok(0);
        }
        let (host, out, outbox) = (host.clone(), out.clone(), outbox.clone());
        let quick = matches!(req, Request::Ping);
        let work = move || {
            let reply = Envelope::reply(
                env.id,
                answered(|| handle(&host, &outbox, env.id, &out, req)),
            );
            // Encoded before the output is locked: the lock is held only while bytes
            // go out, and a heartbeat's answer never waits for an encoding. A reply too
            // large for a frame is answered with that error, not left unanswered (the
            // controller would wait for it until its deadline).
            let body = frame_body(&reply).or_else(|e| {
                frame_body(&Envelope::reply(
                    env.id,
                    Err(e.context("the agent's reply is too large to send")),
                ))
            });
            let sent = body.and_then(|b| {
                let mut o = out.lock().unwrap_or_else(|e| e.into_inner());
                write_body(&mut *o, &b)
            });
            if let Err(e) = sent {
                engine::errln!("rackbench agent: cannot answer the controller: {e:#}");
            }
        };
        if quick {
            work();
        } else {
            std::thread::spawn(work);
        }
    }
    // The controller is gone (end of file): stop the load and everything launched.
    end_everything(&host, SERVICE_STOP_LIMIT);
    Ok(0)
}

/// `handle`'s answer, or an error when it panicked. A request left unanswered is waited
/// for by the controller without a deadline (a test's drive lasts as long as it lasts),
/// and the agent keeps answering heartbeats, so a handler that died with its request
/// hung the whole run.
fn answered(handle: impl FnOnce() -> anyhow::Result<Value>) -> anyhow::Result<Value> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(handle)).unwrap_or_else(|p| {
        let why = p
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| p.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("no message");
        Err(anyhow::anyhow!(
            "the agent's handler of this request panicked: {why}"
        ))
    })
}

/// How long the services' own stop may take once their processes are killed (their
/// directories removed, a guard's wait for its child).
const SERVICE_STOP_LIMIT: Duration = Duration::from_secs(5);

/// The controller is gone: stop the load, kill everything launched here, then stop the
/// services, waiting at most `limit` for that. The processes go first: a question a
/// service is answering (a TPC-C consistency check's table scan, for minutes on a big
/// build) holds the services until it ends, and it ends once its server is gone; one
/// that still holds them after `limit` (a check on a database given with `--dsn`,
/// nothing of ours) is left to end with this process.
pub fn end_everything(host: &Arc<LocalHost>, limit: Duration) {
    engine::stop::request_stop();
    host.interrupt();
    engine::launch::kill_all_children();
    let (done_tx, done) = std::sync::mpsc::channel();
    let h = host.clone();
    let spawned = std::thread::Builder::new()
        .name("agent-teardown".into())
        .spawn(move || {
            h.shutdown();
            let _ = done_tx.send(());
        });
    if spawned.is_err() {
        // No thread to wait on: stopped here, however long it takes.
        host.shutdown();
    } else if done.recv_timeout(limit).is_err() {
        engine::errln!(
            "rackbench agent {}: a service is still busy after {:.0} s (a question it is \
             answering): leaving it; everything launched here was killed",
            host.name(),
            limit.as_secs_f64()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A handler that panics is answered with an error that says so, never left
    /// unanswered.
    #[test]
    fn a_panicking_handler_is_answered_with_an_error() {
        let e = answered(|| panic!("boom")).unwrap_err();
        assert!(e.to_string().ends_with("panicked: boom"), "{e}");
        let e = answered(|| panic!("{} left", 7)).unwrap_err();
        assert!(e.to_string().ends_with("panicked: 7 left"), "{e}");
        assert_eq!(answered(|| Ok(json!(1))).unwrap(), json!(1));
    }
}
