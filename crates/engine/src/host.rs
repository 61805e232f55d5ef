//! The hosts a workload acts through.
//!
//! A workload never launches a process, binds an address or reads `/proc` for itself:
//! it asks a [`Host`]. The system under test starts the workload's [`Service`] (redis
//! instances, the net receiver) and yields endpoints; each load-generator host runs the
//! workload's driver against those endpoints and returns a serialisable report. The
//! local host does this in-process (today's launch and reaper code); a remote host is a
//! `rackbench agent` reached over ssh (crate `hosts`). Both look the same from here, so
//! a run with no hosts given is the same code as a run over a rack.
//!
//! What crosses a host boundary is plain data: parameters and endpoints in, JSON out.
//!
//! Some workloads measure the system under test itself (crypto, mem): there is no
//! server, and the load is the measurement. Their service only tells what it found on
//! the host ([`Findings`]), and each test is one driver job sent to the system under
//! test ([`run_on_sut`]); [`SutService`] is the controller's hold on that service.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use model::{Fact, Flag, HostDisclosure, IdlePower, TelemetrySample};
use serde::{Deserialize, Serialize};

use crate::workload::{Ctx, Params, Progress, StepOutput};

/// Registers a launched process (`role`, pid) with the host's sampler.
pub type WatchFn = Arc<dyn Fn(&str, u32) + Send + Sync>;

/// What a workload's service is asked to do on the host it runs on.
pub struct ServiceCtx {
    /// The address other hosts reach this one at (`127.0.0.1` when everything is local):
    /// services bind it so that load generators elsewhere can connect.
    pub bind_ip: String,
    /// Register a launched process with this host's sampler (`server:0`, `receiver`).
    pub watch: WatchFn,
    pub verbose: bool,
}

impl ServiceCtx {
    /// A context for tests and tools: loopback, nothing watched.
    pub fn loopback() -> ServiceCtx {
        ServiceCtx {
            bind_ip: "127.0.0.1".into(),
            watch: Arc::new(|_, _| {}),
            verbose: false,
        }
    }

    /// [`ServiceCtx::bind_ip`] as an address, or an error naming the `server` to bind.
    pub fn bind_addr(&self, server: &str) -> anyhow::Result<std::net::IpAddr> {
        anyhow::Context::with_context(self.bind_ip.parse(), || {
            format!(
                "the address to bind {server} to, `{}`, is not an IP address",
                self.bind_ip
            )
        })
    }

    pub fn note(&self, msg: &str) {
        if self.verbose {
            crate::errln!("rackbench: {}", model::printable(msg));
        }
    }
}

/// What runs on the system under test for one sweep point: servers the workload
/// launched (or endpoints it was given), alive until `stop`.
pub trait Service: Send {
    /// Where load generators connect (`10.0.0.1:6379`).
    fn endpoints(&self) -> Vec<String>;
    /// What the disclosure should say about the servers (`software.redis-server`...).
    fn facts(&self) -> BTreeMap<String, Fact>;
    /// A workload-specific question about the servers (kv: `counters`, the servers'
    /// own command counts). Unknown questions are errors.
    fn query(&mut self, what: &str) -> anyhow::Result<serde_json::Value> {
        anyhow::bail!("this service answers no `{what}` query")
    }
    /// None while every server runs; why not once one has died.
    fn exited(&mut self) -> Option<String> {
        None
    }
    /// Stop everything it launched. Idempotent.
    fn stop(&mut self);
}

/// Starts a workload's service for one sweep point.
pub type ServiceFn = fn(&Params, &ServiceCtx) -> anyhow::Result<Box<dyn Service>>;

/// One load generator's share of a test.
#[derive(Clone, Serialize, Deserialize)]
pub struct DriverJob {
    pub workload: String,
    pub test: String,
    /// The sweep point's parameters, already narrowed to this generator's share
    /// (its clients, its part of the offered rate).
    pub params: Params,
    pub endpoints: Vec<String>,
    /// This generator's index among `generators`.
    pub index: usize,
    pub generators: usize,
}

/// With every password hidden (a `--dsn`'s, the job's own `password`): a job is sent
/// to a host, never shown.
impl std::fmt::Debug for DriverJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        model::secrets::Redacted(self).fmt(f)
    }
}

impl DriverJob {
    /// Where this generator stands among the test's generators, as a fraction in [0, 1)
    /// ([`crate::load::LoadSpec::phase`]).
    pub fn phase(&self) -> f64 {
        self.index as f64 / self.generators.max(1) as f64
    }
}

/// Runs one driver job on the host it is given to; the result is the workload's own
/// serialisable report (kv: the load outcome with exact histograms).
pub type DriverFn = fn(&DriverJob, &Progress) -> anyhow::Result<serde_json::Value>;

/// A driver's report with its measurement window on the controller's clock.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DriverReport {
    pub host: String,
    pub report: serde_json::Value,
    /// When the driver started and ended, controller clock (host clock minus its
    /// offset), Unix seconds.
    pub started_unix_s: f64,
    pub ended_unix_s: f64,
    /// How far after the common start time the driver actually began, seconds.
    pub start_skew_s: f64,
}

/// A started service, as the controller holds it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServiceHandle {
    pub id: u64,
    pub endpoints: Vec<String>,
    pub facts: BTreeMap<String, Fact>,
}

/// A service a controller started on its system under test, as it holds it.
pub struct Running {
    pub sut: Arc<dyn Host>,
    pub handle: ServiceHandle,
}

impl Running {
    /// Start `workload`'s service for `params` on `sut`.
    pub fn start(sut: Arc<dyn Host>, workload: &str, params: &Params) -> anyhow::Result<Running> {
        let handle = sut.start_service(workload, params)?;
        Ok(Running { sut, handle })
    }

    pub fn query(&self, what: &str) -> anyhow::Result<serde_json::Value> {
        self.sut.service_query(self.handle.id, what)
    }

    /// Whether its servers (`what`: "its servers", "PostgreSQL") are gone: None while the
    /// host says they run; `server_died`, with why, where it says they exited; and
    /// `server_unknown` where it cannot be asked (its link broke: the runner names the
    /// lost host), for a server whose fate nobody knows did not die as far as anyone saw.
    /// The flag's message is the test's error.
    pub fn exited(&self, what: &str) -> Option<Flag> {
        match self.sut.service_exited(self.handle.id) {
            Ok(why) => why.map(|why| Flag::invalid("server_died", why)),
            Err(e) => Some(Flag::invalid(
                "server_unknown",
                format!(
                    "cannot ask {} about {what} (not known to have died): {e:#}; see whether \
                     the host answers (`rackbench hosts check`) and run the test again",
                    self.sut.name()
                ),
            )),
        }
    }

    pub fn stop(self) {
        self.sut.stop_service(self.handle.id);
    }
}

/// Telemetry settings sent to every host.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TelemetrySettings {
    pub interval_s: f64,
    /// A command printing the whole server's power (this host's own meter).
    pub power_meter: Option<String>,
    /// IDLE_W:MAX_W when nothing measures.
    pub power_model: Option<(f64, f64)>,
}

/// What a host's sampler found when it started.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TelemetryInfo {
    /// Power sources found (`rapl:package-0`, `model`...).
    pub power_sources: Vec<String>,
    /// Why power is absent, when it is.
    pub power_missing: Option<String>,
    pub notes: Vec<String>,
    /// When the host's samples' clock began (their `t_s` counts from it), Unix seconds:
    /// on the controller's clock once a remote host has taken its offset off (None: an
    /// agent that does not say).
    #[serde(default)]
    pub started_unix_s: Option<f64>,
}

/// A machine the run uses: the local one, or one reached over ssh.
pub trait Host: Send + Sync {
    /// The name the user gave (`local`, an ssh destination).
    fn name(&self) -> &str;
    /// The address other hosts reach services on this one at.
    fn address(&self) -> String;
    /// Every address of the host's interfaces (empty: not known), for checking that a
    /// `--target` is on the system under test.
    fn addresses(&self) -> Vec<std::net::IpAddr> {
        Vec::new()
    }
    /// This host's clock minus the controller's, seconds (0 for the local host).
    fn clock_offset_s(&self) -> f64 {
        0.0
    }
    /// The round trip of the probe that measured the offset last, seconds: the offset is
    /// known to within half of it (0 for the local host).
    fn clock_rtt_s(&self) -> f64 {
        0.0
    }
    /// How far ahead a common start must be set for a job to reach this host in time
    /// (none for this machine: the job is already here).
    fn start_lead(&self) -> Duration {
        START_LEAD
    }
    /// Still answering? Some(reason) once the host or its link is gone.
    fn lost(&self) -> Option<String> {
        None
    }
    /// When [`Host::lost`] became Some, where known.
    fn lost_at(&self) -> Option<std::time::Instant> {
        None
    }
    /// True for another machine (reached over ssh): its 127.0.0.1 is its own, not the
    /// controller's.
    fn remote(&self) -> bool {
        false
    }
    /// The CPUs this host has online (what a CPU list given for it is checked against,
    /// as [`crate::launch::check_cpus`] checks it there), as it said when it was
    /// reached. None: not known, and not checked before the run.
    fn cpus_online(&self) -> Option<crate::launch::OnlineCpus> {
        None
    }
    /// The boot id of the kernel this host runs on (`/proc/sys/kernel/random/boot_id`):
    /// hosts with the same one are namespaces or containers of one machine, sharing its CPUs.
    /// None: not known.
    fn boot_id(&self) -> Option<String> {
        None
    }

    fn disclosure(&self, role: &str) -> anyhow::Result<HostDisclosure>;

    /// What `workload`'s sweep point `params` would refuse on this host before launching
    /// anything ([`crate::Workload::check_launch_here`], asked here: a remote host's
    /// programs are its own). Ok where nothing is known to check.
    fn check_launch(&self, _workload: &str, _params: &Params) -> anyhow::Result<()> {
        Ok(())
    }

    fn start_service(&self, workload: &str, params: &Params) -> anyhow::Result<ServiceHandle>;
    fn service_query(&self, id: u64, what: &str) -> anyhow::Result<serde_json::Value>;
    fn service_exited(&self, id: u64) -> anyhow::Result<Option<String>>;
    fn stop_service(&self, id: u64);

    /// Run a driver job, starting at `start_at` (controller clock), and block until it
    /// ends. `progress` is updated live where the host can (the local one).
    fn drive(
        &self,
        job: &DriverJob,
        start_at: SystemTime,
        progress: &Progress,
    ) -> anyhow::Result<DriverReport>;

    /// Ask every driver running on this host to end now, keeping what it measured.
    /// (This machine's drivers are ended through their `Progress`.)
    fn interrupt(&self);

    fn telemetry_start(&self, settings: &TelemetrySettings) -> anyhow::Result<TelemetryInfo>;
    /// Measure this host's clock against the controller's again (its offset, which
    /// [`Host::clock_offset_s`] then gives), and say when its samples' clock began, on
    /// the controller's clock as the two stand now (None: no telemetry here). Clocks
    /// drift apart and get stepped; the runner asks before each test, so the test's
    /// samples and the timings its drivers bring back are placed by where the clocks
    /// stood as it began, and again after it, to see whether they moved meanwhile.
    fn sync_clock(&self) -> Option<SystemTime> {
        None
    }
    /// Every sample since the last take (the current interval closed now). An error when
    /// they could not be brought back (a host lost, an agent that failed to answer): the
    /// caller then says this host's figures are missing, and why, instead of leaving them
    /// out unsaid.
    fn telemetry_take(&self) -> anyhow::Result<Vec<TelemetrySample>>;
    fn telemetry_mark(&self) -> Option<u64>;
    fn telemetry_since(&self, mark: u64) -> Vec<TelemetrySample>;
    fn set_warmup(&self, on: bool);
    /// Stop watching launched processes (a sweep point's servers are gone); the
    /// host's own load generator stays watched.
    fn unwatch_servers(&self);
    /// Idle power over `secs`, when something on this host measures power.
    fn measure_idle(&self, secs: f64) -> anyhow::Result<Option<IdlePower>>;
    /// Run shell commands here in order (a variant's setup or teardown), stopping after
    /// the first that fails; each one's outcome comes back. A setup's commands end at a
    /// stop request (see [`CommandsFor`]).
    fn run_commands(
        &self,
        commands: &[String],
        purpose: CommandsFor,
    ) -> anyhow::Result<Vec<CommandRun>>;

    /// Stop everything this host runs for the run (services, sampler, agent).
    fn shutdown(&self);
}

/// One shell command a host ran for the run (a variant's setup or teardown).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CommandRun {
    pub command: String,
    pub ok: bool,
    /// Its output (stdout, or why it failed), trimmed and bounded.
    pub output: String,
}

/// What a host's commands are for, which decides whether a stop request ends them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandsFor {
    /// A variant's setup: a stop request (Ctrl-C) ends the command under way and the
    /// rest are not started; the run is ending, and the teardown follows.
    Setup,
    /// A variant's teardown: runs on after a stop request (it puts the host back); only
    /// its timeout, an abort (a second Ctrl-C) or the end of rackbench ends it early.
    Teardown,
}

/// How long one setup or teardown command may take.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);

/// Run `commands` with `sh -c` on this machine, in order, stopping after the first that
/// fails (what a host's [`Host::run_commands`] does). Each runs as a launched server
/// does ([`crate::command::Kind::Lasting`]): nothing of it outlives rackbench.
pub fn run_commands_here(commands: &[String], purpose: CommandsFor) -> Vec<CommandRun> {
    let kind = crate::command::Kind::Lasting {
        until_stop: purpose == CommandsFor::Setup,
    };
    let mut out = Vec::new();
    for c in commands {
        let ran = crate::command::run_captured(c, COMMAND_TIMEOUT, kind);
        let ok = ran.failure.is_none();
        out.push(CommandRun {
            command: c.clone(),
            ok,
            output: command_output(&ran),
        });
        if !ok {
            break;
        }
    }
    out
}

/// What a command run says of itself, trimmed, bounded and made printable, on one
/// line: its stdout when it succeeded; when it failed, how it ended and all it
/// printed, stdout then stderr (`exit status: 1; printed: hello-b`). A failure used to
/// say the command again and only the first line of its stderr: a script that wrote
/// why to stdout showed nothing.
pub fn command_output(ran: &crate::command::Ran) -> String {
    /// Kept of a command's output: a disclosure value, and a line of an error.
    const MAX: usize = 4096;
    let one_line = |s: &str| {
        s.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(model::printable)
            .collect::<Vec<_>>()
            .join(" | ")
    };
    let printed: Vec<String> = match &ran.failure {
        None => vec![one_line(&ran.stdout)],
        Some(_) => vec![one_line(&ran.stdout), one_line(&ran.stderr)],
    };
    let printed = printed
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(" | ");
    let mut text = match &ran.failure {
        None => printed,
        Some(why) if printed.is_empty() => format!("{why}; printed nothing"),
        Some(why) => format!("{why}; printed: {printed}"),
    };
    if text.len() > MAX {
        let mut cut = MAX;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str(" ...");
    }
    text
}

/// The hosts of one sweep point, by role.
#[derive(Clone)]
pub struct Roles {
    /// The system under test: services run here (for net: the receiver).
    pub sut: Arc<dyn Host>,
    /// Load generators (for net: the sender); clients are spread across them.
    pub loadgens: Vec<Arc<dyn Host>>,
}

impl Roles {
    /// Everything on one host: system under test and the one load generator.
    pub fn single(host: Arc<dyn Host>) -> Roles {
        Roles {
            sut: host.clone(),
            loadgens: vec![host],
        }
    }

    /// Whether `h` runs on the system under test's kernel, sharing its CPUs: the same
    /// host, or one with its boot id (a network namespace or container of its machine).
    /// None: not known (a boot id missing on either side).
    pub fn on_server_kernel(&self, h: &dyn Host) -> Option<bool> {
        same_kernel(
            (h.name(), h.boot_id()),
            (self.sut.name(), self.sut.boot_id()),
        )
    }

    /// Every distinct host in these roles, the system under test first.
    pub fn all(&self) -> Vec<Arc<dyn Host>> {
        let mut out = vec![self.sut.clone()];
        for h in &self.loadgens {
            if !out.iter().any(|o| o.name() == h.name()) {
                out.push(h.clone());
            }
        }
        out
    }

    /// How far ahead a common start of these load generators is set ([`drive_all`]'s
    /// lead): how long a test spends reaching its generators before it loads anything.
    pub fn start_lead(&self) -> Duration {
        self.loadgens
            .iter()
            .map(|h| h.start_lead())
            .max()
            .unwrap_or_default()
    }
}

/// Whether two hosts, each a name and its boot id, run on one kernel ([`Roles::on_server_kernel`]).
fn same_kernel(a: (&str, Option<String>), b: (&str, Option<String>)) -> Option<bool> {
    if a.0 == b.0 {
        return Some(true);
    }
    Some(a.1? == b.1?)
}

/// The service of a workload that measures the system under test itself (crypto, mem):
/// nothing launched, no endpoints. It holds what the workload found on its host: facts
/// for the disclosure, and answers to queries (mem: `plan`, the sweep point resolved
/// against this machine's caches and memory).
#[derive(Debug, Clone, Default)]
pub struct Findings {
    pub facts: BTreeMap<String, Fact>,
    pub answers: BTreeMap<String, serde_json::Value>,
}

impl Service for Findings {
    fn endpoints(&self) -> Vec<String> {
        Vec::new()
    }

    fn facts(&self) -> BTreeMap<String, Fact> {
        self.facts.clone()
    }

    fn query(&mut self, what: &str) -> anyhow::Result<serde_json::Value> {
        self.answers
            .get(what)
            .cloned()
            .with_context(|| format!("this service answers no `{what}` query"))
    }

    fn stop(&mut self) {}
}

/// A workload's service on the system under test, as its controller holds it: started
/// through the system under test's host, or in this process when the context has no
/// roles (the Rust API, examples). Stopped on [`SutService::stop`] or when dropped.
pub struct SutService {
    at: Option<ServiceAt>,
    facts: BTreeMap<String, Fact>,
}

enum ServiceAt {
    Host { host: Arc<dyn Host>, id: u64 },
    Here(Box<dyn Service>),
}

impl SutService {
    /// Start `workload`'s service for the sweep point `params`: on `ctx.roles()?.sut`,
    /// or with `here` in this process when the context has no roles.
    pub fn start(
        ctx: &Ctx,
        workload: &str,
        params: &Params,
        here: ServiceFn,
    ) -> anyhow::Result<SutService> {
        Ok(match &ctx.roles {
            Some(roles) => {
                let host = roles.sut.clone();
                let handle = host
                    .start_service(workload, params)
                    .with_context(|| format!("{workload}: starting on {}", host.name()))?;
                SutService {
                    facts: handle.facts,
                    at: Some(ServiceAt::Host {
                        host,
                        id: handle.id,
                    }),
                }
            }
            None => {
                let svc = here(params, &ServiceCtx::loopback())?;
                SutService {
                    facts: svc.facts(),
                    at: Some(ServiceAt::Here(svc)),
                }
            }
        })
    }

    /// What the service found on its host, for the disclosure.
    pub fn facts(&self) -> &BTreeMap<String, Fact> {
        &self.facts
    }

    /// Ask the service a workload-specific question (see [`Service::query`]).
    pub fn query(&mut self, what: &str) -> anyhow::Result<serde_json::Value> {
        match &mut self.at {
            Some(ServiceAt::Host { host, id }) => host.service_query(*id, what),
            Some(ServiceAt::Here(s)) => s.query(what),
            None => anyhow::bail!("the service has been stopped"),
        }
    }

    /// Stop the service. Idempotent.
    pub fn stop(&mut self) {
        match self.at.take() {
            Some(ServiceAt::Host { host, id }) => host.stop_service(id),
            Some(ServiceAt::Here(mut s)) => s.stop(),
            None => {}
        }
    }
}

impl Drop for SutService {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Run one whole test of a workload that measures the system under test itself: one
/// driver job (`params` as given, no endpoints) sent to `ctx.roles()?.sut`, not to the
/// load generators, and its [`StepOutput`] (as [`step_report`] wrote it) read back.
/// Without roles the job runs here through `here`, as before hosts.
///
/// Where the runner keeps a provisional result ([`Ctx::partial`]), the checkpoints the
/// driver hands while the test runs ([`StepCheckpoints`]) are stored as it, so that
/// rackbench killed mid-test keeps what was measured up to the last one.
pub fn run_on_sut(
    ctx: &Ctx,
    workload: &str,
    test: &str,
    params: &Params,
    here: DriverFn,
) -> anyhow::Result<StepOutput> {
    let Some(partial) = ctx.partial.clone() else {
        return drive_on_sut(ctx, workload, test, params, here);
    };
    let offset_s = ctx.roles.as_ref().map_or(0.0, |r| r.sut.clock_offset_s());
    // A driver's checkpoint is the report it would return had the test ended there; its
    // final report (handed as it comes back) is the test's result, not a checkpoint.
    let take = move |_: usize, so_far: crate::workload::SoFar| {
        let crate::workload::SoFar::Report(v) = so_far else {
            return;
        };
        if let Ok(mut step) = serde_json::from_value::<StepOutput>(v) {
            step.on_controller_clock(offset_s);
            partial(&step);
        }
    };
    crate::spread::take_checkpoints(&ctx.progress, take, || {
        drive_on_sut(ctx, workload, test, params, here)
    })
}

/// [`run_on_sut`]'s one job, driven.
fn drive_on_sut(
    ctx: &Ctx,
    workload: &str,
    test: &str,
    params: &Params,
    here: DriverFn,
) -> anyhow::Result<StepOutput> {
    let job = DriverJob {
        workload: workload.into(),
        test: test.into(),
        params: params.clone(),
        endpoints: Vec::new(),
        index: 0,
        generators: 1,
    };
    let (host, report, offset_s) = match &ctx.roles {
        Some(roles) => {
            let sut = roles.sut.clone();
            let name = sut.name().to_string();
            let offset_s = sut.clock_offset_s();
            let rep = drive_all(vec![(sut, job)], &[], &[], &ctx.progress)
                .pop()
                .with_context(|| format!("{workload} {test}: {name} returned no report"))?
                .with_context(|| format!("{workload} {test} on {name}"))?;
            (rep.host, rep.report, offset_s)
        }
        None => ("this process".to_string(), here(&job, &ctx.progress)?, 0.0),
    };
    let mut out: StepOutput = serde_json::from_value(report).with_context(|| {
        format!(
            "{workload} {test}: cannot read the result from {host} (is the same rackbench \
             version on every host?)"
        )
    })?;
    out.on_controller_clock(offset_s);
    Ok(out)
}

/// A test's [`StepOutput`] as a driver returns it. JSON has no NaN or infinity (they
/// would come back as null and lose the whole result), so a non-finite figure becomes
/// the missing metric the runner makes of it anyway, with the runner's reason.
pub fn step_report(mut out: StepOutput) -> anyhow::Result<serde_json::Value> {
    let (ok, bad): (Vec<_>, Vec<_>) = std::mem::take(&mut out.metrics)
        .into_iter()
        .partition(|m| m.value.is_finite());
    out.metrics = ok;
    for m in bad {
        out.missing.push(model::MissingMetric {
            name: m.name,
            reason: format!("the computation gave {} (nothing to divide by?)", m.value),
        });
    }
    if !out.duration_s.is_finite() {
        out.duration_s = 0.0;
    }
    serde_json::to_value(&out).context("serialising the test's result")
}

/// Where a test run whole on one host ([`run_on_sut`]) hands its checkpoints: what it
/// measured so far, as the [`StepOutput`] it would return had it ended there, once every
/// [`crate::load::CHECKPOINT_EVERY`] from its start. The driver asks [`Self::due`] where it
/// already looks up from its measurement (between sizes, at its timer's polls), never in
/// its timed loops. None from [`Self::of`]: no one wants them.
pub struct StepCheckpoints {
    sink: crate::workload::CheckpointSink,
    next: std::cell::Cell<std::time::Instant>,
}

impl StepCheckpoints {
    /// The checkpoints of the test `progress` follows, if someone wants them.
    pub fn of(progress: &Progress) -> Option<StepCheckpoints> {
        Some(StepCheckpoints {
            sink: progress.checkpoint_sink()?,
            next: std::cell::Cell::new(std::time::Instant::now() + crate::load::CHECKPOINT_EVERY),
        })
    }

    /// Whether a checkpoint is due now; if so, the next is due a period from now.
    pub fn due(&self) -> bool {
        let now = std::time::Instant::now();
        if now < self.next.get() {
            return false;
        }
        self.next.set(now + crate::load::CHECKPOINT_EVERY);
        true
    }

    /// Hand `so_far`, already marked as a checkpoint (its [`model::PARTIAL`] flag, what it
    /// cannot have yet missing with why), as this host's report.
    pub fn hand(&self, so_far: StepOutput) {
        // A checkpoint that cannot be written is only one less kept: the test goes on.
        if let Ok(v) = step_report(so_far) {
            // A test run whole on the system under test is one job, index 0 (see
            // drive_on_sut); the sinks that take its checkpoints (run_on_sut's, an
            // agent's) ignore the index anyway.
            self.sink.hand_report(0, v);
        }
    }
}

/// The common start: far enough ahead that every host has the job before it is due.
pub const START_LEAD: Duration = Duration::from_millis(300);

/// How often [`drive_all`] asks whether a watched service's servers still run: a
/// round trip to the agent where the system under test is another machine. A death is
/// seen within it, so at most this much of the figure is the surviving servers' alone.
const SERVICES_EVERY: Duration = Duration::from_millis(500);

/// Run one job per host behind one start barrier: every job is sent, every host
/// waits for the same instant (its clock corrected by its offset), then drives.
/// Results come back in the order of `jobs`; a host that failed gives its error.
///
/// While the jobs run, the hosts in `watch` (the system under test, typically) and the
/// jobs' own hosts are watched: one that is lost, or a job that fails, ends every other
/// job's load at once (what they measured is kept) instead of letting it run out. So
/// are the launched servers of `services`: one that dies ends the test there, with
/// why. With one server its connections fail and the load ends by itself; with two,
/// the other's carried on to the planned end, and the figure blended N and N-1
/// servers (a kill -9 at 3 s of 6 stored 100,039 ops/s over 6 s, intervals from 47,647
/// to 156,281).
pub fn drive_all(
    jobs: Vec<(Arc<dyn Host>, DriverJob)>,
    watch: &[Arc<dyn Host>],
    services: &[&Running],
    progress: &Arc<Progress>,
) -> Vec<anyhow::Result<DriverReport>> {
    let lead = jobs
        .iter()
        .map(|(h, _)| h.start_lead())
        .max()
        .unwrap_or_default();
    let start_at = SystemTime::now() + lead;
    // A cancel already set (before the test reached its hosts) stands: the runner
    // clears it when a test begins (Progress::reset).
    let jobs = &jobs;
    // Dropped when every driver is back: wakes the watcher at once (a sleep of its own
    // would hold every test's end, and the process's exit, by up to its period).
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    // Ends every job's load: local ones share `progress`, remote ones are told.
    let end_all = |why: &dyn Fn() -> String| {
        progress.end_early(why);
        for (h, _) in jobs.iter() {
            h.interrupt();
        }
    };
    std::thread::scope(|s| {
        s.spawn(move || {
            let watched: Vec<&Arc<dyn Host>> =
                watch.iter().chain(jobs.iter().map(|(h, _)| h)).collect();
            let mut ask_services_at = std::time::Instant::now() + SERVICES_EVERY;
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                done_rx.recv_timeout(Duration::from_millis(100))
            {
                if let Some((name, why)) = watched
                    .iter()
                    .find_map(|h| h.lost().map(|why| (h.name().to_string(), why)))
                {
                    end_all(&|| format!("ended when {name} was lost: {why}"));
                    return;
                }
                if std::time::Instant::now() < ask_services_at {
                    continue;
                }
                ask_services_at = std::time::Instant::now() + SERVICES_EVERY;
                // A host that cannot be asked is not taken for a dead server: a lost one
                // is caught above, and the test's own check after it names the rest
                // (`server_unknown`).
                if let Some(why) = services
                    .iter()
                    .find_map(|r| r.sut.service_exited(r.handle.id).ok().flatten())
                {
                    end_all(&|| format!("ended when a server died: {why}"));
                    return;
                }
            }
        });
        let handles: Vec<_> = jobs
            .iter()
            .map(|(h, job)| {
                let progress = progress.clone();
                let end_all = &end_all;
                s.spawn(move || {
                    let r = h.drive(job, start_at, &progress);
                    // Done while others may run on: its outcome stands for it in the
                    // test's later checkpoints, which wait for it no more.
                    if let (Ok(r), Some(sink)) = (&r, progress.checkpoint_sink()) {
                        sink.hand_final(job.index, r.report.clone());
                    }
                    if r.is_err() && jobs.len() > 1 {
                        end_all(&|| {
                            format!("ended when the load generator on {} failed", h.name())
                        });
                    }
                    r
                })
            })
            .collect();
        let out = handles
            .into_iter()
            .map(|t| {
                t.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a driver thread panicked")))
            })
            .collect();
        drop(done_tx);
        out
    })
}

/// What the error of a remote `host` that failed to reach `endpoint` (`host:port` or a
/// URL) says first: the host, by its `role`, and, for a loopback endpoint, that its
/// loopback is its own, not the machine the user typed the address on.
pub fn reached_from(host: &str, role: &str, endpoint: Option<&str>) -> String {
    let loopback = endpoint.filter(|e| names_loopback(e)).map(|e| {
        format!(
            " (where {} is {host} itself, not this machine: give an address {host} reaches \
             the server at)",
            authority_host(e)
        )
    });
    format!("on {role} {host}{}", loopback.unwrap_or_default())
}

/// `127.0.0.1` of `127.0.0.1:6379` or `http://127.0.0.1:8080/x`.
fn authority_host(endpoint: &str) -> &str {
    let rest = endpoint.split_once("://").map_or(endpoint, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or(rest);
    match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    }
}

/// Whether `endpoint` names this machine's loopback (`127.0.0.1`, `[::1]`, `localhost`).
pub fn names_loopback(endpoint: &str) -> bool {
    let h = authority_host(endpoint);
    h.eq_ignore_ascii_case("localhost")
        || h.parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Split `total` into `parts` shares that differ by at most one (the first ones get
/// the remainder), as clients are spread across generators.
pub fn split_count(total: usize, parts: usize) -> Vec<usize> {
    let parts = parts.max(1);
    (0..parts)
        .map(|i| total / parts + usize::from(i < total % parts))
        .collect()
}

/// Seconds since the Unix epoch of a `SystemTime` (0 before 1970).
pub fn unix_s(t: SystemTime) -> f64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Sleep until `at` (no-op if it has passed); returns how late the wake-up was.
pub fn sleep_until(at: SystemTime) -> Duration {
    if let Ok(d) = at.duration_since(SystemTime::now()) {
        // Sleep most of the way, then spin the last stretch: a sleep's wake-up is
        // 50-100 us late on a VM, and the start skew across hosts should be well under
        // a millisecond.
        let spin = Duration::from_micros(200);
        if d > spin {
            std::thread::sleep(d - spin);
        }
        while SystemTime::now() < at {
            std::hint::spin_loop();
        }
    }
    SystemTime::now().duration_since(at).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One kernel: one host, or one boot id under two names (network namespaces of one
    /// machine); two known boot ids are two kernels; a missing one is not known.
    #[test]
    fn one_kernel_is_one_host_or_one_boot_id() {
        let id = |s: &str| Some(s.to_string());
        assert_eq!(same_kernel(("a", None), ("a", id("x"))), Some(true));
        assert_eq!(same_kernel(("a", id("x")), ("b", id("x"))), Some(true));
        assert_eq!(same_kernel(("a", id("x")), ("b", id("y"))), Some(false));
        assert_eq!(same_kernel(("a", None), ("b", id("y"))), None);
        assert_eq!(same_kernel(("a", id("x")), ("b", None)), None);
    }

    /// A job's Debug shows its shape, not a password (a `--dsn`'s, the job's own).
    #[test]
    fn a_jobs_debug_hides_its_passwords() {
        let mut params = Params::new();
        params.insert("password".into(), serde_json::json!("Zq9run"));
        params.insert("dsn".into(), serde_json::json!("host=h password=s3cret"));
        params.insert("vus".into(), serde_json::json!(4));
        let job = DriverJob {
            workload: "oltp".into(),
            test: "tpcc".into(),
            params,
            endpoints: vec!["postgresql://u:pw9@h/db".into()],
            index: 0,
            generators: 1,
        };
        let shown = format!("{job:?}");
        for secret in ["Zq9run", "s3cret", "pw9"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert!(shown.contains("vus") && shown.contains("tpcc"), "{shown}");
    }

    #[test]
    fn shares_differ_by_at_most_one_and_sum_to_the_total() {
        assert_eq!(split_count(50, 2), vec![25, 25]);
        assert_eq!(split_count(7, 3), vec![3, 2, 2]);
        assert_eq!(split_count(1, 3), vec![1, 0, 0]);
        for (t, p) in [(0, 1), (5, 5), (101, 4)] {
            let s = split_count(t, p);
            assert_eq!(s.iter().sum::<usize>(), t);
            assert!(s.iter().max().unwrap() - s.iter().min().unwrap() <= 1);
        }
    }

    /// A remote host that cannot reach a --target is named, and a loopback target is
    /// said to be its own loopback (the user typed it on another machine).
    #[test]
    fn a_remote_hosts_failure_to_reach_an_endpoint_names_it() {
        for ep in [
            "127.0.0.1:17555",
            "http://127.0.0.1:8080/x",
            "[::1]:6379",
            "localhost:1",
        ] {
            assert!(names_loopback(ep), "{ep}");
            let said = reached_from("rbh2", "load generator", Some(ep));
            assert!(
                said.starts_with("on load generator rbh2 (where ")
                    && said.contains(" is rbh2 itself"),
                "{said}"
            );
        }
        assert!(reached_from("rbh2", "load generator", Some("127.0.0.1:1"))
            .contains("where 127.0.0.1 is"));
        for ep in ["10.0.0.1:6379", "http://example.com/", "[2001:db8::1]:80"] {
            assert!(!names_loopback(ep), "{ep}");
            assert_eq!(
                reached_from("rbh1", "the system under test", Some(ep)),
                "on the system under test rbh1"
            );
        }
    }

    #[test]
    fn sleep_until_the_past_returns_at_once() {
        let late = sleep_until(SystemTime::now() - Duration::from_secs(1));
        assert!(late >= Duration::from_millis(900));
    }
}
