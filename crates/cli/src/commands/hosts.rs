//! `rackbench agent` (what runs on every other host of a run, started over ssh) and
//! `rackbench hosts check` (can each host take part, and with what).

use std::path::PathBuf;
use std::time::Duration;

use engine::host::Host;
use serde::Serialize;

use crate::{registry, Global};

#[derive(clap::Args, Debug)]
pub struct AgentArgs {
    /// The name the controller knows this host by (put in every sample).
    #[arg(long, value_name = "NAME", default_value = "local")]
    pub name: String,
    /// Stop everything and exit after this many seconds without a word from the controller.
    #[arg(long = "idle-timeout", value_name = "SECS", default_value_t = 5.0)]
    pub idle_timeout: f64,
}

/// Serve the controller on stdin/stdout (started by `rackbench run` over ssh).
pub fn agent(a: AgentArgs) -> anyhow::Result<i32> {
    if !(0.5..=3600.0).contains(&a.idle_timeout) {
        anyhow::bail!("--idle-timeout must be between 0.5 and 3600 seconds");
    }
    hosts::agent::serve(
        &a.name,
        registry::find,
        hosts::agent::programs_here(&registry::all()),
        Duration::from_secs_f64(a.idle_timeout),
    )
}

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(clap::Subcommand, Debug)]
pub enum Cmd {
    /// For each host: reachable or why not, architecture, kernel, rackbench there, clock
    /// offset, CPUs, power sources, which servers it can launch.
    Check(CheckArgs),
}

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// Hosts (ssh destinations; `local` is this machine).
    #[arg(value_name = "HOST", required = true)]
    pub hosts: Vec<String>,
    /// An ssh config file to use instead of ~/.ssh/config (ssh -F).
    #[arg(long = "ssh-config", value_name = "FILE")]
    pub ssh_config: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
struct HostCheck {
    host: String,
    reachable: bool,
    error: Option<String>,
    arch: Option<String>,
    kernel: Option<String>,
    hostname: Option<String>,
    rackbench: Option<String>,
    clock_offset_ms: Option<f64>,
    rtt_ms: Option<f64>,
    cpus: Option<usize>,
    address: Option<String>,
    power: Vec<String>,
    power_missing: Option<String>,
    servers: Vec<(String, Option<String>)>,
    /// The other names given that reach this same machine ([`hosts::same_machine`]): a
    /// run refuses them side by side.
    same_machine_as: Vec<String>,
    /// What tells this machine from another, as its agent said.
    #[serde(skip)]
    hello: Option<hosts::proto::Hello>,
}

pub fn run(a: Args, g: &Global) -> anyhow::Result<i32> {
    let Cmd::Check(c) = a.cmd;
    // Bad input, said once (each host's check would meet it on its own).
    if let Some(cfg) = &c.ssh_config {
        hosts::ssh::check_config(cfg)?;
    }
    // A name ssh could take for an option is bad input, said before any host is tried
    // (it read `UNREACHABLE` beside the hosts that were); a name given twice is one host.
    let mut names: Vec<&String> = Vec::new();
    for h in &c.hosts {
        if h != hosts::LOCAL {
            hosts::ssh::check_destination(h)?;
        }
        if !names.contains(&h) {
            names.push(h);
        }
    }
    let verbose = !g.quiet;
    let mut checks: Vec<HostCheck> = std::thread::scope(|s| {
        let hs: Vec<_> = names
            .iter()
            .map(|h| {
                let cfg = c.ssh_config.clone();
                s.spawn(move || check_one(h, cfg, verbose))
            })
            .collect();
        hs.into_iter()
            .zip(&names)
            .map(|(t, h)| {
                t.join()
                    .unwrap_or_else(|_| failed(h, "the check panicked".into()))
            })
            .collect()
    });
    // Two names of one machine (`rbh1` and its address): each says the other, as a run
    // would refuse them (acceptance K, 7).
    let ids: Vec<hosts::Identity> = checks.iter().filter_map(identity).collect();
    let pairs: Vec<(String, String)> = hosts::aliases(&ids)
        .into_iter()
        .map(|(a, b, _)| (a.to_string(), b.to_string()))
        .collect();
    for (a, b) in pairs {
        for (this, other) in [(&a, &b), (&b, &a)] {
            if let Some(c) = checks.iter_mut().find(|c| &c.host == this) {
                c.same_machine_as.push(other.clone());
            }
        }
    }
    if g.json {
        engine::outln!("{}", serde_json::to_string_pretty(&checks)?);
    } else {
        for h in &checks {
            let name = crate::commands::runs::clean(&h.host);
            if !h.reachable {
                engine::outln!(
                    "{name}: UNREACHABLE: {}",
                    crate::commands::runs::clean(h.error.as_deref().unwrap_or(""))
                );
                continue;
            }
            let opt =
                |v: &Option<String>| crate::commands::runs::clean(v.as_deref().unwrap_or("?"));
            if h.same_machine_as.is_empty() {
                engine::outln!("{name}: ok");
            } else {
                engine::outln!(
                    "{name}: ok, but the same machine as {}: a run takes one name per \
                     machine (give it one way wherever it is meant)",
                    crate::commands::runs::clean(&h.same_machine_as.join(", "))
                );
            }
            engine::outln!(
                "  hostname {}  arch {}  kernel {}  cpus {}",
                opt(&h.hostname),
                opt(&h.arch),
                opt(&h.kernel),
                h.cpus.unwrap_or(0)
            );
            engine::outln!(
                "  rackbench {}  address {}",
                opt(&h.rackbench),
                opt(&h.address)
            );
            match (h.clock_offset_ms, h.rtt_ms) {
                (Some(o), Some(r)) => {
                    engine::outln!("  clock offset {o:+.3} ms (round trip {r:.3} ms)")
                }
                _ => engine::outln!("  clock offset 0 (this machine)"),
            }
            if h.power.is_empty() {
                engine::outln!("  power: none ({})", opt(&h.power_missing));
            } else {
                engine::outln!(
                    "  power: {}",
                    crate::commands::runs::clean(&h.power.join(", "))
                );
            }
            let servers: Vec<String> = h
                .servers
                .iter()
                .map(|(n, p)| {
                    format!(
                        "{n} {}",
                        p.as_deref().map_or("missing".into(), |p| format!("({p})"))
                    )
                })
                .collect();
            engine::outln!(
                "  servers: {}",
                crate::commands::runs::clean(&servers.join(", "))
            );
        }
    }
    Ok(
        if checks
            .iter()
            .all(|c| c.reachable && c.same_machine_as.is_empty())
        {
            0
        } else {
            1
        },
    )
}

/// What tells the checked host's machine from another, where its agent said.
fn identity(c: &HostCheck) -> Option<hosts::Identity<'_>> {
    let h = c.hello.as_ref()?;
    Some(hosts::Identity {
        name: &c.host,
        boot_id: h.boot_id.as_deref(),
        hostname: &h.hostname,
        addresses: &h.addresses,
    })
}

fn failed(host: &str, error: String) -> HostCheck {
    HostCheck {
        host: host.to_string(),
        reachable: false,
        error: Some(error),
        arch: None,
        kernel: None,
        hostname: None,
        rackbench: None,
        clock_offset_ms: None,
        rtt_ms: None,
        cpus: None,
        address: None,
        power: Vec::new(),
        power_missing: None,
        servers: Vec::new(),
        same_machine_as: Vec::new(),
        hello: None,
    }
}

fn check_one(name: &str, ssh_config: Option<PathBuf>, verbose: bool) -> HostCheck {
    let set =
        match hosts::HostSet::connect(&[name.to_string()], ssh_config, registry::find, verbose) {
            Ok(s) => s,
            Err(e) => return failed(name, format!("{e:#}")),
        };
    let h = match set.get(name) {
        Ok(h) => h,
        Err(e) => return failed(name, format!("{e:#}")),
    };
    let info = h.telemetry_start(&engine::host::TelemetrySettings {
        interval_s: 1.0,
        ..Default::default()
    });
    let (power, power_missing) = match info {
        Ok(i) => (i.power_sources, i.power_missing),
        Err(e) => (Vec::new(), Some(format!("{e:#}"))),
    };
    let mut out = failed(name, String::new());
    out.reachable = true;
    out.error = None;
    out.power = power;
    out.power_missing = power_missing;
    out.address = Some(h.address());
    match set.remotes().iter().find(|r| r.name() == name) {
        Some(r) => {
            let hello = r.hello();
            out.arch = Some(hello.arch.clone());
            out.kernel = Some(hello.kernel.clone());
            out.hostname = Some(hello.hostname.clone());
            out.rackbench = Some(format!(
                "{} (sha256 {})",
                hello.version,
                &hello.binary_sha256[..16]
            ));
            out.cpus = Some(hello.cpus);
            out.clock_offset_ms = Some(r.clock_offset_s() * 1000.0);
            out.rtt_ms = Some(r.rtt_s() * 1000.0);
            out.servers = hello.servers.clone().into_iter().collect();
            out.hello = Some(hello.clone());
        }
        None => {
            if let Ok(hello) = hosts::agent::hello(hosts::agent::programs_here(&registry::all())) {
                out.arch = Some(hello.arch.clone());
                out.kernel = Some(hello.kernel.clone());
                out.hostname = Some(hello.hostname.clone());
                out.rackbench = Some(format!(
                    "{} (sha256 {})",
                    hello.version,
                    &hello.binary_sha256[..16]
                ));
                out.cpus = Some(hello.cpus);
                out.servers = hello.servers.clone().into_iter().collect();
                out.hello = Some(hello);
            }
        }
    }
    set.shutdown();
    out
}
