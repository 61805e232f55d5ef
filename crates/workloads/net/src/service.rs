//! The receiving end of `net` as the service on the system under test.
//!
//! In the iperf3 study (seeds/002) the system under test is the receiver (`srv(rcv)`) and
//! the load generator the sender (`clt(snd)`), so the receiver is what a host starts for a
//! sweep point: `rackbench net serve` (our own binary, or `--receiver-bin`) launched on
//! the address other hosts reach this one at, on a free port, pinned to the receiver CPUs
//! and watched by this host's sampler; or, with `--target`, a receiver started outside
//! rackbench, which is only passed on. Its one endpoint is the receiver's control address.
//! The facts are the receiver side's: where it listens and the receive-buffer sysctls of
//! the host it runs on (the sender's own are in the driver's report).

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::Context;
use engine::host::{Service, ServiceCtx};
use engine::launch::ChildGuard;
use engine::workload::Params;
use model::Fact;

use crate::{sysctl, Plan};

/// The receive side's sysctls: TCP autotuning's receive window (`tcp_rmem`) and the
/// socket receive buffer limits UDP datagrams queue in (loss at high packet rates).
pub const RECEIVER_SYSCTLS: [&str; 3] = [
    "net.ipv4.tcp_rmem",
    "net.core.rmem_default",
    "net.core.rmem_max",
];

/// How long a launched receiver may take to listen (a cold start on a loaded VM).
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// How long `stop` waits after SIGTERM: the receiver ends its test threads on it.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// The receiver of one sweep point.
pub struct NetService {
    /// The control address senders connect to.
    addr: String,
    /// None when the receiver was given with `--target` (not ours to watch or stop).
    child: Option<ChildGuard>,
    facts: BTreeMap<String, Fact>,
}

/// Start the receiver for one sweep point (`Registration::service`).
pub fn start_service(p: &Params, ctx: &ServiceCtx) -> anyhow::Result<Box<dyn Service>> {
    let plan = Plan::from_params(p)?;
    if let Some(t) = &plan.cfg.target {
        // Reached from each sender before any test (the driver's check job), not from
        // here: the system under test may not be on the senders' network.
        return Ok(Box::new(given(t)));
    }
    Ok(Box::new(launch(&plan, ctx)?))
}

/// A receiver started outside rackbench: nothing is launched, and its host's sysctls are
/// not this host's, so they are not read here.
fn given(target: &str) -> NetService {
    let mut facts = BTreeMap::new();
    facts.insert(
        "net.receiver".into(),
        Fact::known(format!("rackbench net serve at {target} (--target)")),
    );
    for key in RECEIVER_SYSCTLS {
        facts.insert(
            receiver_key(key),
            Fact::unknown("the receiver was given with --target: its host's sysctls were not read"),
        );
    }
    NetService {
        addr: target.to_string(),
        child: None,
        facts,
    }
}

fn launch(plan: &Plan, ctx: &ServiceCtx) -> anyhow::Result<NetService> {
    let bin = receiver_binary(plan)?;
    let ip: IpAddr = ctx.bind_ip.parse().with_context(|| {
        format!(
            "net: `{}` is not an IP address to start the receiver on",
            ctx.bind_ip
        )
    })?;
    let port = engine::launch::free_port_on(&ctx.bind_ip)?;
    // SocketAddr brackets an IPv6 address, so the endpoint parses as host:port anywhere.
    let sa = SocketAddr::new(ip, port);
    let addr = sa.to_string();
    let mut cmd = Command::new(&bin);
    cmd.args(["net", "serve", "-q", "--bind", &addr]);
    if !plan.receiver_cpus.is_empty() {
        let list: Vec<String> = plan.receiver_cpus.iter().map(|c| c.to_string()).collect();
        cmd.args(["--cpus", &list.join(",")]);
    }
    cmd.stdout(Stdio::null());
    engine::launch::pin_command(&mut cmd, &plan.receiver_cpus);
    let mut child = ChildGuard::spawn("rackbench net serve", &mut cmd).with_context(|| {
        format!(
            "net: launching the receiver `{}`; pass --target HOST:PORT to use one already running",
            bin.display()
        )
    })?;
    engine::launch::wait_for_port(sa, &mut child, START_TIMEOUT).with_context(|| {
        format!(
            "net: the receiver `{} net serve` did not start; is it a rackbench binary? (--receiver-bin)",
            bin.display()
        )
    })?;
    (ctx.watch)("receiver", child.pid());
    ctx.note(&format!(
        "net: receiver launched on {addr} (pid {})",
        child.pid()
    ));
    let mut facts = BTreeMap::new();
    facts.insert(
        "net.receiver".into(),
        Fact::known(format!(
            "rackbench net serve launched by rackbench on {addr}"
        )),
    );
    for key in RECEIVER_SYSCTLS {
        facts.insert(
            receiver_key(key),
            sysctl(key).map(Fact::known).unwrap_or_else(Fact::unknown),
        );
    }
    Ok(NetService {
        addr,
        child: Some(child),
        facts,
    })
}

/// The disclosure key of a receiver-side sysctl (`net.receiver.net.ipv4.tcp_rmem`): the
/// sender's host discloses its own under `net.sender.`, and the two may differ.
pub fn receiver_key(sysctl: &str) -> String {
    format!("net.receiver.{sysctl}")
}

/// The binary to launch: `--receiver-bin`, else this one. On a remote host "this one" is
/// the agent's rackbench, so the path given with `--receiver-bin` must exist there.
fn receiver_binary(plan: &Plan) -> anyhow::Result<PathBuf> {
    if let Some(b) = &plan.cfg.receiver_bin {
        return Ok(PathBuf::from(b));
    }
    // A binary replaced while it runs (a new copy into a cache shared by several hosts)
    // is still this process's image: /proc/self/exe executes it.
    let exe = std::env::current_exe();
    if exe
        .as_ref()
        .is_ok_and(|p| p.to_string_lossy().ends_with(" (deleted)"))
    {
        return Ok(PathBuf::from("/proc/self/exe"));
    }
    exe.context(
        "net: cannot find our own binary to launch the receiver; pass --receiver-bin PATH or --target HOST:PORT",
    )
}

impl Service for NetService {
    fn endpoints(&self) -> Vec<String> {
        vec![self.addr.clone()]
    }

    fn facts(&self) -> BTreeMap<String, Fact> {
        self.facts.clone()
    }

    fn exited(&mut self) -> Option<String> {
        self.child.as_mut().and_then(ChildGuard::exited)
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.stop(STOP_GRACE);
        }
    }
}
