//! A host reached over ssh: `rackbench agent` there, spoken to in frames.
//!
//! One reader thread routes replies to their callers; a heartbeat every second keeps the
//! agent's watchdog fed and tells us when the host stops answering. A host that goes
//! silent for [`SILENCE`] (down, link cut, agent stopped) or whose agent ends is marked
//! lost: every call waiting on it fails at once with the host named, and its agent is
//! killed over a fresh connection where the host can still be reached.

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};
use engine::host::{
    unix_s, CommandRun, CommandsFor, DriverJob, DriverReport, Host, ServiceHandle, TelemetryInfo,
    TelemetrySettings,
};
use engine::workload::{Params, Progress};
use model::{HostDisclosure, IdlePower, TelemetrySample};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::proto::{
    read_frame, skip_to_magic, write_frame, Envelope, Hello, Request, TakeChunk, PROTOCOL_VERSION,
};
use crate::ssh::{check_destination, Ssh};

/// A host silent this long is lost (heartbeats go every second).
pub const SILENCE: Duration = Duration::from_secs(5);
const HEARTBEAT: Duration = Duration::from_secs(1);
/// How long a request other than a drive may take (starting a PostgreSQL cluster and
/// loading it is the slowest).
const CALL_DEADLINE: Duration = Duration::from_secs(600);
/// Round trips used to estimate the clock offset (the fastest one is kept).
const CLOCK_PROBES: usize = 8;

type Reply = Result<Value, String>;

/// Where the checkpoints of a drive under way go (see [`Envelope::checkpoint`]).
type Route = Arc<dyn Fn(Value) + Send + Sync>;

struct Shared {
    name: String,
    pending: Mutex<BTreeMap<u64, mpsc::Sender<Reply>>>,
    /// The drives under way whose checkpoints someone wants, by request id.
    routes: Mutex<BTreeMap<u64, Route>>,
    /// Why and when the host was lost.
    lost: Mutex<Option<(String, Instant)>>,
    /// Milliseconds since `t0` when the last frame arrived.
    last_frame_ms: AtomicU64,
    t0: Instant,
    stderr_tail: Mutex<VecDeque<String>>,
}

impl Shared {
    fn lose(&self, why: String) {
        let mut l = self.lost.lock().unwrap_or_else(|e| e.into_inner());
        if l.is_none() {
            *l = Some((why.clone(), Instant::now()));
        }
        drop(l);
        let waiting: Vec<_> =
            std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()))
                .into_values()
                .collect();
        for w in waiting {
            let _ = w.send(Err(why.clone()));
        }
    }

    fn lost(&self) -> Option<String> {
        let l = self.lost.lock().unwrap_or_else(|e| e.into_inner());
        l.as_ref().map(|(why, _)| why.clone())
    }

    fn lost_at(&self) -> Option<Instant> {
        let l = self.lost.lock().unwrap_or_else(|e| e.into_inner());
        l.as_ref().map(|(_, at)| *at)
    }

    fn tail(&self) -> String {
        let t = self.stderr_tail.lock().unwrap_or_else(|e| e.into_inner());
        t.iter().cloned().collect::<Vec<_>>().join(" | ")
    }
}

pub struct RemoteHost {
    shared: Arc<Shared>,
    ssh: Arc<Ssh>,
    hello: Hello,
    /// The agent's clock minus ours, seconds (f64 bits): measured as the host connects
    /// and again before each test ([`Host::sync_clock`]).
    offset_s: AtomicU64,
    /// The round trip of the probe that measured `offset_s` (f64 bits).
    offset_rtt_s: AtomicU64,
    rtt_s: f64,
    writer: Arc<Mutex<ChildStdin>>,
    /// The ssh that runs the agent (known to [`kill_agents`] too).
    child: Arc<Mutex<Child>>,
    next: AtomicU64,
    /// Where the agent's binary is there: a lost agent is killed only if its PID still
    /// runs that binary (see [`kill_if_ours`]).
    agent_path: String,
}

/// Every connected agent's ssh, for [`kill_agents`].
static AGENTS: Mutex<Vec<Weak<Mutex<Child>>>> = Mutex::new(Vec::new());

/// The second Ctrl-C: end every agent's ssh at once, without a word to the agents (a
/// call in flight may hold the link). An agent whose input ends stops its load and kills
/// everything it launched ([`crate::agent`]), so remote servers go as the local ones do,
/// not when rackbench exits. An ssh already reaped is left alone (std does not signal a
/// child it has waited for), and one whose lock is held (a shutdown waiting for it) is
/// ending already.
pub fn kill_agents() {
    let agents = AGENTS.lock().unwrap_or_else(|e| e.into_inner());
    for a in agents.iter().filter_map(Weak::upgrade) {
        if let Ok(mut c) = a.try_lock() {
            let _ = c.kill();
        }
    }
}

impl RemoteHost {
    /// Reach `dest`, put this binary there if its copy is missing, start the agent,
    /// check it is the same code, and estimate its clock offset.
    pub fn connect(ssh: Arc<Ssh>, dest: &str, verbose: bool) -> anyhow::Result<RemoteHost> {
        check_destination(dest)?;
        let sha = crate::agent::own_binary_sha256()?;
        let probe = ssh.probe(dest, &sha)?;
        if probe.arch != crate::agent::own_arch() {
            bail!(
                "{dest} is {} and this rackbench is built for {}: build rackbench for {} and run it from there, \
                 or choose hosts of one architecture",
                probe.arch,
                crate::agent::own_arch(),
                probe.arch
            );
        }
        if !probe.present {
            if verbose {
                engine::errln!("rackbench: copying rackbench to {dest}:{}", probe.path);
            }
            ssh.deploy(dest, &probe.path, &sha)?;
        }
        let mut child = ssh.start_agent(dest, &probe.path, dest)?;
        let stdin = child.stdin.take().context("agent stdin")?;
        let stdout = child.stdout.take().context("agent stdout")?;
        let stderr = child.stderr.take().context("agent stderr")?;
        let shared = Arc::new(Shared {
            name: dest.to_string(),
            pending: Mutex::new(BTreeMap::new()),
            routes: Mutex::new(BTreeMap::new()),
            lost: Mutex::new(None),
            last_frame_ms: AtomicU64::new(0),
            t0: Instant::now(),
            stderr_tail: Mutex::new(VecDeque::new()),
        });
        {
            let shared = shared.clone();
            std::thread::spawn(move || {
                // Byte lines, not UTF-8 ones: one bad byte must not stop the reading (the
                // agent would then block on a full pipe). Shown safe for the terminal.
                let mut r = BufReader::new(stderr);
                let mut raw = Vec::new();
                // Before the agent's mark, stderr is the remote login's (a banner, an rc
                // file's output): kept for an error, not relayed as the agent's.
                let mut agents = false;
                loop {
                    raw.clear();
                    match r.read_until(b'\n', &mut raw) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                    raw.truncate(4096);
                    let line = model::printable(String::from_utf8_lossy(&raw).trim_end());
                    // At a line's end: a login's last words without a newline come first.
                    if !agents && line.ends_with(crate::agent::STDERR_MARK) {
                        agents = true;
                        continue;
                    }
                    if verbose && agents && !line.trim().is_empty() {
                        engine::errln!("[{}] {line}", model::printable(&shared.name));
                    }
                    let mut t = shared.stderr_tail.lock().unwrap_or_else(|e| e.into_inner());
                    t.push_back(line);
                    if t.len() > 20 {
                        t.pop_front();
                    }
                }
            });
        }
        // The hello comes first; wait for it on the reader thread, with a deadline.
        let (hello_tx, hello_rx) = mpsc::channel::<anyhow::Result<Value>>();
        {
            let shared = shared.clone();
            std::thread::spawn(move || {
                let mut r = BufReader::new(stdout);
                let hello = skip_to_magic(&mut r, 64 << 10).and_then(|_| {
                    read_frame::<_, Value>(&mut r)?.context("the agent ended before its hello")
                });
                let ok = hello.is_ok();
                let _ = hello_tx.send(hello);
                if !ok {
                    return;
                }
                loop {
                    match read_frame::<_, Envelope>(&mut r) {
                        Ok(Some(env)) => {
                            shared
                                .last_frame_ms
                                .store(shared.t0.elapsed().as_millis() as u64, Ordering::Relaxed);
                            if let Some(so_far) = env.checkpoint {
                                let route = shared
                                    .routes
                                    .lock()
                                    .unwrap_or_else(|e| e.into_inner())
                                    .get(&env.id)
                                    .cloned();
                                if let Some(route) = route {
                                    route(so_far);
                                }
                                continue;
                            }
                            let waiter = shared
                                .pending
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .remove(&env.id);
                            if let Some(w) = waiter {
                                let _ = w.send(match env.err {
                                    Some(e) => Err(e),
                                    None => Ok(env.ok.unwrap_or(Value::Null)),
                                });
                            }
                        }
                        Ok(None) | Err(_) => {
                            std::thread::sleep(Duration::from_millis(100));
                            let tail = shared.tail();
                            shared.lose(format!(
                                "the agent on {} ended{}",
                                shared.name,
                                if tail.is_empty() {
                                    String::new()
                                } else {
                                    format!(": {tail}")
                                }
                            ));
                            return;
                        }
                    }
                }
            });
        }
        // Waited for in short slices, so a Ctrl-C does not wait out the 30 s.
        let deadline = Instant::now() + Duration::from_secs(30);
        let hello = loop {
            match hello_rx.recv_timeout(Duration::from_millis(100)) {
                Err(mpsc::RecvTimeoutError::Timeout)
                    if Instant::now() < deadline && !engine::stop::stop_requested() => {}
                other => break other,
            }
        };
        let hello = match hello {
            Ok(Ok(h)) => h,
            Ok(Err(e)) => {
                crate::ssh::kill_group(&mut child);
                std::thread::sleep(Duration::from_millis(100));
                let tail = shared.tail();
                return Err(e.context(format!(
                    "{dest}: starting the agent{}",
                    if tail.is_empty() {
                        String::new()
                    } else {
                        format!(" ({tail})")
                    }
                )));
            }
            Err(_) => {
                crate::ssh::kill_group(&mut child);
                if engine::stop::stop_requested() {
                    bail!(
                        "{dest}: stopped while its agent started: {}",
                        engine::stop::stop_cause()
                    );
                }
                bail!(
                    "{dest}: the agent did not introduce itself within 30 s (a host too busy \
                     to start it, or a binary that hangs there): see whether `ssh {dest} {} \
                     --version` answers",
                    crate::ssh::shell_quote(&probe.path)
                );
            }
        };
        let hello = match accept_hello(hello, &sha, &probe.path) {
            Ok(h) => h,
            Err(e) => {
                crate::ssh::kill_group(&mut child);
                return Err(e.context(format!("{dest}: its agent")));
            }
        };
        // The path the kernel gives the running agent: the probe's goes through
        // `~/.cache` as written, a link on some hosts, and would never match.
        let agent_path = hello.exe.clone().unwrap_or_else(|| probe.path.clone());
        let mut host = RemoteHost {
            shared,
            ssh,
            hello,
            offset_s: AtomicU64::new(0f64.to_bits()),
            offset_rtt_s: AtomicU64::new(0f64.to_bits()),
            rtt_s: 0.0,
            writer: Arc::new(Mutex::new(stdin)),
            child: Arc::new(Mutex::new(child)),
            next: AtomicU64::new(1),
            agent_path,
        };
        {
            let mut agents = AGENTS.lock().unwrap_or_else(|e| e.into_inner());
            agents.retain(|a| a.strong_count() > 0);
            agents.push(Arc::downgrade(&host.child));
        }
        // Watched before its first question: an agent that said hello and then fell
        // silent (stopped, its host stalled) is lost within SILENCE, not waited for as
        // long as a question may take.
        host.start_heartbeat();
        let (offset, rtt) = host.estimate_offset()?;
        host.set_offset(offset, rtt);
        host.rtt_s = rtt;
        Ok(host)
    }

    pub fn hello(&self) -> &Hello {
        &self.hello
    }

    /// The fastest round trip's estimate: agent clock minus the midpoint of ours.
    fn estimate_offset(&self) -> anyhow::Result<(f64, f64)> {
        let mut best: Option<(f64, f64)> = None;
        for _ in 0..CLOCK_PROBES {
            let t0 = unix_s(SystemTime::now());
            let agent: f64 = self.call(Request::Ping)?;
            let t1 = unix_s(SystemTime::now());
            let rtt = t1 - t0;
            let offset = agent - (t0 + t1) / 2.0;
            if best.is_none_or(|(_, r)| rtt < r) {
                best = Some((offset, rtt));
            }
        }
        best.context("no clock probe")
    }

    fn set_offset(&self, offset_s: f64, rtt_s: f64) {
        self.offset_s.store(offset_s.to_bits(), Ordering::Relaxed);
        self.offset_rtt_s.store(rtt_s.to_bits(), Ordering::Relaxed);
    }

    pub fn rtt_s(&self) -> f64 {
        self.rtt_s
    }

    fn start_heartbeat(&self) {
        let shared = Arc::downgrade(&self.shared);
        // The heartbeat writes under the same lock as every call: frames never interleave.
        let writer = self.writer.clone();
        let pid = self.hello.pid;
        let ssh = self.ssh.clone();
        let kill = kill_if_ours(pid, &self.agent_path);
        std::thread::spawn(move || {
            let mut n: u64 = u64::MAX / 2;
            loop {
                std::thread::sleep(HEARTBEAT);
                let Some(shared) = shared.upgrade() else {
                    return;
                };
                if shared.lost().is_some() {
                    return;
                }
                n += 1;
                // A ping whose answer nobody waits for: any frame back counts as life.
                let sent = {
                    let mut w = writer.lock().unwrap_or_else(|e| e.into_inner());
                    write_frame(&mut *w, &Envelope::request(n, Request::Ping))
                };
                if sent.is_err() {
                    shared.lose(format!("the link to {} broke", shared.name));
                    return;
                }
                // The reader may store a later instant between the two reads.
                let silent = (shared.t0.elapsed().as_millis() as u64)
                    .saturating_sub(shared.last_frame_ms.load(Ordering::Relaxed));
                if silent > SILENCE.as_millis() as u64 {
                    shared.lose(format!(
                        "{} stopped answering: nothing for {:.0} s (host down, link cut or agent stopped)",
                        shared.name,
                        silent as f64 / 1000.0
                    ));
                    // Kill the agent over a fresh connection if the host can still be
                    // reached (a stopped agent); its reaper then takes its servers.
                    let _ = ssh.run_dying_with_caller(&shared.name, &kill, Duration::from_secs(8));
                    return;
                }
            }
        });
    }

    fn call<T: DeserializeOwned>(&self, req: Request) -> anyhow::Result<T> {
        self.call_routed(req, None)
    }

    /// [`Self::call`], with the checkpoints the agent sends under the request's id, while
    /// it runs, going to `route`.
    fn call_routed<T: DeserializeOwned>(
        &self,
        req: Request,
        route: Option<Route>,
    ) -> anyhow::Result<T> {
        let deadline = match req {
            Request::Drive { .. } | Request::MeasureIdle { .. } | Request::RunCommands { .. } => {
                None
            }
            _ => Some(CALL_DEADLINE),
        };
        if let Some(why) = self.shared.lost() {
            bail!("{why}");
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel();
        self.shared
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, tx);
        // Lost between the check above and the insert: `lose` emptied the map before
        // this waiter was in it.
        if let Some(why) = self.shared.lost() {
            self.shared
                .pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id);
            bail!("{why}");
        }
        let routed = route.is_some();
        if let Some(r) = route {
            let mut routes = self.shared.routes.lock().unwrap_or_else(|e| e.into_inner());
            routes.insert(id, r);
        }
        {
            let mut w = self.writer.lock().unwrap_or_else(|e| e.into_inner());
            if let Err(e) = write_frame(&mut *w, &Envelope::request(id, req)) {
                self.shared
                    .lose(format!("the link to {} broke: {e:#}", self.shared.name));
            }
        }
        // Everything but a drive and an idle-power measurement answers at once; a host
        // that answers pings but not this request is stuck, and is named as such.
        let reply = match deadline {
            None => rx.recv().map_err(|_| ()),
            Some(d) => rx.recv_timeout(d).map_err(|_| ()),
        }
        .unwrap_or_else(|_| {
            Err(format!(
                "{}: no answer from the agent ({})",
                self.shared.name,
                self.shared
                    .lost()
                    .unwrap_or_else(|| "it did not reply in time".into())
            ))
        });
        if routed {
            let mut routes = self.shared.routes.lock().unwrap_or_else(|e| e.into_inner());
            routes.remove(&id);
        }
        match reply {
            Ok(v) => serde_json::from_value(v)
                .with_context(|| format!("{}: the agent's reply does not parse", self.shared.name)),
            Err(e) => Err(anyhow::anyhow!("{e}")),
        }
    }
}

/// The command that kills a lost agent, PID `pid` running the binary at `path`: only
/// if that PID still runs it. The agent's own watchdog may have ended it already, and a
/// PID used again since by another process (rackbench as root there) is left alone.
fn kill_if_ours(pid: u32, path: &str) -> String {
    let q = crate::ssh::shell_quote(path);
    format!(
        "case \"$(readlink /proc/{pid}/exe 2>/dev/null)\" in {q}|{q}' (deleted)') \
         kill -KILL {pid} 2>/dev/null;; esac; true"
    )
}

impl Host for RemoteHost {
    fn name(&self) -> &str {
        &self.shared.name
    }

    fn address(&self) -> String {
        self.hello
            .address
            .clone()
            .unwrap_or_else(|| self.shared.name.clone())
    }

    fn addresses(&self) -> Vec<std::net::IpAddr> {
        self.hello.addresses.clone()
    }

    fn cpus_online(&self) -> Option<engine::launch::OnlineCpus> {
        Some(self.hello.online_cpus())
    }

    fn clock_offset_s(&self) -> f64 {
        f64::from_bits(self.offset_s.load(Ordering::Relaxed))
    }

    fn clock_rtt_s(&self) -> f64 {
        f64::from_bits(self.offset_rtt_s.load(Ordering::Relaxed))
    }

    fn start_lead(&self) -> Duration {
        // Time for the job to arrive and every connection to open before the common
        // start, however far away the host is.
        engine::host::START_LEAD
            .max(Duration::from_secs_f64(4.0 * self.rtt_s) + Duration::from_millis(100))
    }

    fn lost(&self) -> Option<String> {
        self.shared.lost()
    }

    fn lost_at(&self) -> Option<Instant> {
        self.shared.lost_at()
    }

    fn remote(&self) -> bool {
        true
    }

    fn boot_id(&self) -> Option<String> {
        self.hello.boot_id.clone()
    }

    fn disclosure(&self, role: &str) -> anyhow::Result<HostDisclosure> {
        self.call(Request::Disclosure { role: role.into() })
    }

    fn check_launch(&self, workload: &str, params: &Params) -> anyhow::Result<()> {
        self.call::<Value>(Request::CheckLaunch {
            workload: workload.into(),
            params: params.clone(),
        })
        .map(drop)
    }

    fn start_service(&self, workload: &str, params: &Params) -> anyhow::Result<ServiceHandle> {
        self.call(Request::StartService {
            workload: workload.into(),
            params: params.clone(),
        })
    }

    fn service_query(&self, id: u64, what: &str) -> anyhow::Result<Value> {
        self.call(Request::ServiceQuery {
            id,
            what: what.into(),
        })
    }

    fn service_exited(&self, id: u64) -> anyhow::Result<Option<String>> {
        self.call(Request::ServiceExited { id })
    }

    fn stop_service(&self, id: u64) {
        let _ = self.call::<Value>(Request::StopService { id });
    }

    fn drive(
        &self,
        job: &DriverJob,
        start_at: SystemTime,
        progress: &Progress,
    ) -> anyhow::Result<DriverReport> {
        let offset = self.clock_offset_s();
        let at = unix_s(start_at) + offset;
        // Its checkpoints, when wanted, handed as this job's generator's, in the form of
        // its final report, which the controller reads as it reads that (a load loop's
        // carry durations only: no clock to correct).
        let route = progress.checkpoint_sink().map(|sink| {
            let index = job.index;
            Arc::new(move |so_far: Value| sink.hand_report(index, so_far)) as Route
        });
        let mut r: DriverReport = self.call_routed(
            Request::Drive {
                job: job.clone(),
                start_at_unix_s: at,
                checkpoints: route.is_some(),
            },
            route,
        )?;
        // The agent's clock back to ours.
        r.started_unix_s -= offset;
        r.ended_unix_s -= offset;
        r.host = self.shared.name.clone();
        Ok(r)
    }

    fn interrupt(&self) {
        let _ = self.call::<Value>(Request::Interrupt);
    }

    fn telemetry_start(&self, settings: &TelemetrySettings) -> anyhow::Result<TelemetryInfo> {
        let mut info: TelemetryInfo = self.call(Request::TelemetryStart {
            settings: settings.clone(),
        })?;
        // The agent's clock back to ours.
        let offset = self.clock_offset_s();
        info.started_unix_s = info.started_unix_s.map(|t| t - offset);
        Ok(info)
    }

    fn sync_clock(&self) -> Option<SystemTime> {
        // Both answers or neither: an offset changed while the samples' start was not
        // read again would place the drivers' timings and the samples apart. A host that
        // does not answer keeps the last ones (a host gone is noticed elsewhere).
        let (offset, rtt) = self.estimate_offset().ok()?;
        let began: Option<f64> = self.call(Request::TelemetryClock).ok()?;
        self.set_offset(offset, rtt);
        Duration::try_from_secs_f64(began? - offset)
            .ok()
            .map(|d| UNIX_EPOCH + d)
    }

    fn telemetry_take(&self) -> anyhow::Result<Vec<TelemetrySample>> {
        take_in_chunks(&self.shared.name, |more| {
            self.call(if more {
                Request::TelemetryTakeMore
            } else {
                Request::TelemetryTake
            })
        })
    }

    fn telemetry_mark(&self) -> Option<u64> {
        self.call::<Option<u64>>(Request::TelemetryMark)
            .ok()
            .flatten()
    }

    fn telemetry_since(&self, mark: u64) -> Vec<TelemetrySample> {
        self.call(Request::TelemetrySince { mark })
            .unwrap_or_default()
    }

    fn set_warmup(&self, on: bool) {
        let _ = self.call::<Value>(Request::SetWarmup { on });
    }

    fn unwatch_servers(&self) {
        let _ = self.call::<Value>(Request::UnwatchServers);
    }

    fn measure_idle(&self, secs: f64) -> anyhow::Result<Option<IdlePower>> {
        self.call(Request::MeasureIdle { secs })
    }

    fn run_commands(
        &self,
        commands: &[String],
        purpose: CommandsFor,
    ) -> anyhow::Result<Vec<CommandRun>> {
        self.call(Request::RunCommands {
            commands: commands.to_vec(),
            purpose,
        })
    }

    fn shutdown(&self) {
        if self.shared.lost().is_none() {
            let _ = self.call::<Value>(Request::Shutdown);
        }
        let mut c = self.child.lock().unwrap_or_else(|e| e.into_inner());
        // Closing stdin is the agent's signal too; then give it a moment.
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = c.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// A telemetry take in chunks ([`TakeChunk`]): `ask(false)` begins it, `ask(true)` asks
/// for the next chunk, until none remains. Every sample is `host`'s.
fn take_in_chunks(
    host: &str,
    mut ask: impl FnMut(bool) -> anyhow::Result<TakeChunk>,
) -> anyhow::Result<Vec<TelemetrySample>> {
    let what = || format!("{host}: bringing its telemetry back");
    let mut chunk = ask(false).with_context(what)?;
    // More than a sampler takes in the longest test (oltp: a week and a week of ramp-up)
    // at its fastest (--telemetry-interval 0.05): no agent's take (each chunk is then
    // bounded by the announcement before it).
    const MOST: usize = 15 * 86_400 * 20;
    if chunk.remaining > MOST {
        bail!(
            "{}: {} samples announced, more than 15 days of samples at 20 a second",
            what(),
            chunk.remaining
        );
    }
    let mut all = std::mem::take(&mut chunk.samples);
    while chunk.remaining > 0 {
        let announced = chunk.remaining;
        chunk = ask(true).with_context(what)?;
        if chunk.samples.is_empty() {
            // Another take began on the agent meanwhile: what is left is not this one's.
            bail!(
                "{}: {} samples announced and none sent",
                what(),
                chunk.remaining
            );
        }
        // Each chunk is of what was announced: an agent that kept announcing more would
        // hold the controller's memory without end (each frame alone is bounded).
        if chunk.samples.len().saturating_add(chunk.remaining) > announced {
            bail!(
                "{}: {announced} samples announced, then {} sent with {} more announced",
                what(),
                chunk.samples.len(),
                chunk.remaining
            );
        }
        all.append(&mut chunk.samples);
    }
    for s in &mut all {
        s.host = host.to_string();
    }
    Ok(all)
}

impl Drop for RemoteHost {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// An agent's hello, taken when it is this very build: who sent it is read first, so
/// that an agent of another protocol, whose hello may have another shape, is named as
/// such rather than as a frame that does not parse. `cache` is where the copy is kept
/// on that host.
fn accept_hello(hello: Value, sha: &str, cache: &str) -> anyhow::Result<Hello> {
    let field = |k: &str| hello.get(k).cloned().unwrap_or(Value::Null);
    let (protocol, version, theirs) = (field("protocol"), field("version"), field("binary_sha256"));
    if protocol.as_u64() != Some(u64::from(PROTOCOL_VERSION)) || theirs.as_str() != Some(sha) {
        let text = |v: &Value| match v {
            Value::String(s) => model::printable(s),
            Value::Null => "unknown".to_string(),
            other => model::printable(&other.to_string()),
        };
        let theirs = text(&theirs);
        bail!(
            "is another rackbench (protocol {} version {}, binary {}) than this one \
             (protocol {PROTOCOL_VERSION} version {}, binary {}): refused. Remove the cached \
             copy there ({}) and run again",
            text(&protocol),
            text(&version),
            theirs.get(..12).unwrap_or(&theirs),
            env!("CARGO_PKG_VERSION"),
            sha.get(..12).unwrap_or(sha),
            model::printable(cache)
        );
    }
    serde_json::from_value(hello).context("its hello does not parse, though it is this build")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// An agent of another protocol, whose hello has another shape, is named as such
    /// (with where its copy is kept), not as a frame that does not parse.
    #[test]
    fn another_protocols_hello_is_named_as_another_rackbench() {
        let sha = "ab".repeat(32);
        let cache = "/srv/u/.cache/rackbench/rackbench-ab";
        let e = accept_hello(
            serde_json::json!({"protocol": 99, "version": "9.9"}),
            &sha,
            cache,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("protocol 99 version 9.9"), "{e}");
        assert!(e.contains(&format!("protocol {PROTOCOL_VERSION} ")), "{e}");
        assert!(e.contains(cache), "{e}");
        // This build's hello is taken whole.
        let mine = serde_json::to_value(crate::agent::hello(Default::default()).unwrap()).unwrap();
        let own = mine["binary_sha256"].as_str().unwrap().to_string();
        assert_eq!(accept_hello(mine, &own, cache).unwrap().binary_sha256, own);
    }

    /// A lost agent's PID is killed only while it runs the agent's binary.
    #[test]
    fn a_lost_agent_is_killed_only_if_its_pid_runs_our_binary() {
        let mut other = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = other.id();
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
        let sh = |cmd: String| {
            std::process::Command::new("sh")
                .arg("-c")
                .arg(cmd)
                .status()
                .unwrap()
        };
        // Another binary under that PID (the agent gone, the PID used again): left alone.
        assert!(sh(kill_if_ours(pid, "/home/u/.cache/rackbench/rackbench-0123")).success());
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            other.try_wait().unwrap().is_none(),
            "a process not ours was killed"
        );
        // The agent's own binary: killed.
        assert!(sh(kill_if_ours(pid, &exe.to_string_lossy())).success());
        let status = other.wait().unwrap();
        assert!(!status.success(), "{status:?}");
    }

    fn sample(t_s: f64) -> TelemetrySample {
        TelemetrySample {
            host: "as the agent named it".into(),
            t_s,
            interval_s: 1.0,
            cpus: vec![model::CpuUtil::idle(-1)],
            ..TelemetrySample::default()
        }
    }

    /// The controller's side of a take: chunks asked for until none remains, every
    /// sample named after the host; a chunk that fails fails the take, naming the host
    /// (the runner then says its figures are missing), instead of an empty take.
    #[test]
    fn a_take_asks_for_chunks_until_none_remains() {
        let mut agent: VecDeque<TelemetrySample> = (0..25).map(|i| sample(i as f64)).collect();
        let mut asked = Vec::new();
        let all = take_in_chunks("rbh2", |more| {
            asked.push(more);
            crate::proto::next_chunk(&mut agent, 700)
        })
        .unwrap();
        assert_eq!(all.len(), 25);
        assert!(all.iter().all(|s| s.host == "rbh2"));
        assert!(all.windows(2).all(|w| w[0].t_s < w[1].t_s));
        assert!(asked.len() > 2, "{asked:?}");
        assert!(!asked[0] && asked[1..].iter().all(|m| *m));

        let mut n = 0;
        let e = take_in_chunks("rbh2", |_| {
            n += 1;
            if n == 1 {
                Ok(TakeChunk {
                    samples: vec![sample(0.0)],
                    remaining: 3,
                })
            } else {
                anyhow::bail!("rbh2: no answer from the agent (it did not reply in time)")
            }
        })
        .unwrap_err();
        let e = format!("{e:#}");
        assert!(e.contains("rbh2: bringing its telemetry back"), "{e}");
        assert!(e.contains("did not reply"), "{e}");
        // An agent that announces samples and sends none ends the take, not loops.
        let e = take_in_chunks("rbh2", |_| {
            Ok(TakeChunk {
                samples: vec![],
                remaining: 3,
            })
        });
        assert!(e.is_err());
        // Nor one that sends a sample and announces as many more each time.
        let mut rounds = 0;
        let e = take_in_chunks("rbh2", |_| {
            rounds += 1;
            Ok(TakeChunk {
                samples: vec![sample(0.0)],
                remaining: 1,
            })
        })
        .unwrap_err();
        assert_eq!(rounds, 2);
        assert!(
            format!("{e:#}").contains("1 samples announced, then 1 sent with 1 more announced"),
            "{e:#}"
        );
        // Nor one that announces more than any take holds, and sends one at a time.
        let e = take_in_chunks("rbh2", |_| {
            Ok(TakeChunk {
                samples: vec![sample(0.0)],
                remaining: usize::MAX,
            })
        })
        .unwrap_err();
        assert!(
            format!("{e:#}").contains("more than 15 days of samples"),
            "{e:#}"
        );
    }
}
