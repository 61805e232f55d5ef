//! The hosts a run acts through.
//!
//! - [`local`]: this machine: services launched and pinned here, drivers in-process,
//!   telemetry from this host's /proc and /sys.
//! - [`remote`]: a machine reached with the system OpenSSH client ([`ssh`]), running
//!   `rackbench agent` (the same binary, copied into a per-user cache by content hash)
//!   that serves a local host there over framed stdio ([`proto`], [`agent`]).
//! - [`HostSet`]: every host of a run, connected once, by name.

pub mod agent;
pub mod local;
pub mod proto;
pub mod remote;
pub mod ssh;

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use engine::host::Host;

pub use local::{Catalog, LocalHost};
pub use remote::RemoteHost;

/// Roles made of hosts that are all this machine under other names (`sut` and each
/// of `loadgens`; a load generator named like the system under test is the same host):
/// how tests and tools give a workload several "hosts" without any ssh.
pub fn local_roles(catalog: Catalog, sut: &str, loadgens: &[&str]) -> engine::host::Roles {
    let host = |n: &str| Arc::new(LocalHost::new(n, catalog, false)) as Arc<dyn Host>;
    let sut = host(sut);
    let loadgens = loadgens
        .iter()
        .map(|n| {
            if *n == sut.name() {
                sut.clone()
            } else {
                host(n)
            }
        })
        .collect();
    engine::host::Roles { sut, loadgens }
}

/// Whether `ip` is an address of this machine: a loopback address, or one of its
/// interfaces' (getifaddrs). Not "can a socket bind it": with `ip_nonlocal_bind` set
/// (keepalived and load-balancer hosts) every address binds.
pub fn is_local_address(ip: &str) -> bool {
    let Ok(ip) = ip.parse::<std::net::IpAddr>() else {
        return false;
    };
    ip.is_loopback() || local_addresses().contains(&ip)
}

/// This machine's interfaces' addresses (getifaddrs); none when they cannot be read.
pub fn local_addresses() -> Vec<std::net::IpAddr> {
    let Ok(addrs) = nix::ifaddrs::getifaddrs() else {
        return Vec::new();
    };
    addrs
        .filter_map(|a| a.address)
        .filter_map(|a| {
            a.as_sockaddr_in()
                .map(|v4| std::net::IpAddr::V4(v4.ip()))
                .or_else(|| a.as_sockaddr_in6().map(|v6| std::net::IpAddr::V6(v6.ip())))
        })
        .collect()
}

/// A file's text, trimmed: empty where it cannot be read.
pub(crate) fn read_trim(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// This host's name, as its agent's hello gives it.
pub(crate) fn hostname() -> String {
    read_trim("/proc/sys/kernel/hostname")
}

/// What tells one machine (one network stack of one kernel) from another: its boot id,
/// its hostname and its interfaces' addresses.
pub struct Identity<'a> {
    pub name: &'a str,
    pub boot_id: Option<&'a str>,
    pub hostname: &'a str,
    pub addresses: &'a [std::net::IpAddr],
}

/// An address of this host's own that another host is reached at: loopback, link-local
/// and unspecified addresses are every host's, and say nothing of which one it is.
fn names_a_host(ip: &std::net::IpAddr) -> bool {
    match ip {
        std::net::IpAddr::V4(v4) => {
            !(v4.is_loopback() || v4.is_link_local() || v4.is_unspecified())
        }
        std::net::IpAddr::V6(v6) => {
            !(v6.is_loopback() || v6.is_unspecified() || (v6.segments()[0] & 0xffc0) == 0xfe80)
        }
    }
}

/// Whether `a` and `b`, two names given for hosts, are one machine, and the address they
/// share: the same network stack (an interface address in common) on the same kernel (the
/// same boot id; with either unknown, the same hostname). Test hosts in network
/// namespaces share a kernel but not their addresses, and are told apart; two machines on
/// separate networks may share a private address, but not a boot id.
pub fn same_machine(a: &Identity, b: &Identity) -> Option<std::net::IpAddr> {
    let kernel = match (a.boot_id, b.boot_id) {
        (Some(x), Some(y)) => x == y,
        _ => a.hostname == b.hostname,
    };
    if !kernel {
        return None;
    }
    a.addresses
        .iter()
        .filter(|ip| names_a_host(ip))
        .find(|ip| b.addresses.contains(ip))
        .copied()
}

/// Every two of `ids` that are one machine ([`same_machine`]), in the order given, with
/// the address they share: what a run refuses, and `hosts check` says.
pub fn aliases<'a>(ids: &[Identity<'a>]) -> Vec<(&'a str, &'a str, std::net::IpAddr)> {
    let mut out = Vec::new();
    for (i, a) in ids.iter().enumerate() {
        for b in &ids[i + 1..] {
            if let Some(ip) = same_machine(a, b) {
                out.push((a.name, b.name, ip));
            }
        }
    }
    out
}

/// The address this machine's services bind, from the addresses the other hosts saw it
/// connect from ((host, address), from SSH_CONNECTION): the first that is this
/// machine's. Behind a jump host (ProxyJump) or NAT a host sees the jump host's or the
/// NAT's address, which no service here can bind, and a service bound elsewhere would
/// not be where the others look: that is an error saying so (None: no host said).
pub fn service_address(seen: &[(String, String)]) -> Result<Option<String>, String> {
    if seen.is_empty() {
        return Ok(None);
    }
    if let Some((_, ip)) = seen.iter().find(|(_, ip)| is_local_address(ip)) {
        return Ok(Some(ip.clone()));
    }
    Err(format!(
        "the other hosts saw this machine connect from {}, not an address of this machine \
         (a jump host or NAT between them?): services run here bind 127.0.0.1, which they \
         cannot reach; run the system under test (or a net receiver) on another host",
        seen.iter()
            .map(|(h, ip)| format!("{ip} ({h})"))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// The name of this machine among the hosts.
pub const LOCAL: &str = "local";

/// Every host of a run, connected, by name (in the order first named).
pub struct HostSet {
    hosts: Vec<Arc<dyn Host>>,
    remotes: Vec<Arc<RemoteHost>>,
    local: Arc<LocalHost>,
    ssh: Option<Arc<ssh::Ssh>>,
    /// Every host an ssh connection was tried to: the masters to close, those of hosts
    /// whose connect failed or was abandoned (Ctrl-C) too (acceptance O, 6: theirs
    /// lingered for ControlPersist's 5 s after rackbench had exited).
    tried: Vec<String>,
    local_unreachable: Option<String>,
}

impl HostSet {
    /// Connect to every named host (`local` is this machine). An unreachable host is an
    /// error naming it, after the ones already reached are shut down again.
    pub fn connect(
        names: &[String],
        ssh_config: Option<PathBuf>,
        catalog: Catalog,
        verbose: bool,
    ) -> anyhow::Result<HostSet> {
        let local = Arc::new(LocalHost::new(LOCAL, catalog, verbose));
        let mut set = HostSet {
            hosts: vec![local.clone() as Arc<dyn Host>],
            remotes: Vec::new(),
            local,
            ssh: None,
            tried: Vec::new(),
            local_unreachable: None,
        };
        let mut wanted: Vec<&String> = Vec::new();
        for n in names {
            if n != LOCAL && !wanted.contains(&n) {
                wanted.push(n);
            }
        }
        if wanted.is_empty() {
            return Ok(set);
        }
        let ssh = Arc::new(ssh::Ssh::new(ssh_config)?);
        set.ssh = Some(ssh.clone());
        set.tried = wanted.iter().map(|n| n.to_string()).collect();
        // Connect in parallel: a slow login does not add up across a rack.
        let results: Vec<anyhow::Result<RemoteHost>> = std::thread::scope(|s| {
            let hs: Vec<_> = wanted
                .iter()
                .map(|n| {
                    let ssh = ssh.clone();
                    s.spawn(move || RemoteHost::connect(ssh, n, verbose))
                })
                .collect();
            hs.into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(anyhow::anyhow!("connect panicked")))
                })
                .collect()
        });
        let mut errors = Vec::new();
        for r in results {
            match r {
                Ok(h) => {
                    let h = Arc::new(h);
                    set.remotes.push(h.clone());
                    set.hosts.push(h);
                }
                // The errors name their host already.
                Err(e) => errors.push(format!("{e:#}")),
            }
        }
        if !errors.is_empty() {
            set.shutdown();
            if errors.len() == 1 {
                anyhow::bail!("{}", errors[0]);
            }
            anyhow::bail!(
                "cannot use {} hosts:\n  {}",
                errors.len(),
                errors.join("\n  ")
            );
        }
        // One machine under two names (`rbh1` and its address 10.77.0.1) would be two
        // hosts: a system under test whose generator runs beside it, counted as its own
        // load (acceptance O, 3). Refused, as a name given twice is.
        if let Err(e) = set.refuse_aliases() {
            set.shutdown();
            return Err(e);
        }
        // Services on this machine must be reachable from the others: bind the address
        // they reached us from, when it is one of ours.
        let seen: Vec<(String, String)> = set
            .remotes
            .iter()
            .filter_map(|r| Some((r.name().to_string(), r.hello().peer_address.clone()?)))
            .collect();
        match service_address(&seen) {
            Ok(Some(ip)) => set.local.set_address(&ip),
            Ok(None) => {}
            // An error only where a point serves from here to another host (see
            // `local_unreachable`): a controller that only drives others needs no address.
            Err(why) => set.local_unreachable = Some(why),
        }
        Ok(set)
    }

    /// An error when two of the hosts are one machine ([`same_machine`]), naming both and
    /// what to give instead.
    fn refuse_aliases(&self) -> anyhow::Result<()> {
        let (addresses, name) = (local_addresses(), hostname());
        let local_boot = self.local.boot_id();
        let mut ids = vec![Identity {
            name: LOCAL,
            boot_id: local_boot.as_deref(),
            hostname: &name,
            addresses: &addresses,
        }];
        for r in &self.remotes {
            let hello = r.hello();
            ids.push(Identity {
                name: r.name(),
                boot_id: hello.boot_id.as_deref(),
                hostname: &hello.hostname,
                addresses: &hello.addresses,
            });
        }
        if let Some((a, b, ip)) = aliases(&ids).into_iter().next() {
            let (a, b) = (model::printable(a), model::printable(b));
            if a == LOCAL {
                anyhow::bail!(
                    "{b} is this machine (it has this machine's address {ip}): name it \
                     `local` wherever it is meant, so that its work and its telemetry are \
                     counted once"
                );
            }
            anyhow::bail!(
                "{a} and {b} are one machine (both have the address {ip}): name it one \
                 way wherever it is meant, so that its work and its telemetry are counted \
                 once (a system under test named as a load generator too runs it beside \
                 its servers)"
            );
        }
        Ok(())
    }

    pub fn get(&self, name: &str) -> anyhow::Result<Arc<dyn Host>> {
        self.hosts
            .iter()
            .find(|h| h.name() == name)
            .cloned()
            .with_context(|| format!("no host `{name}` in this run"))
    }

    /// Why the other hosts cannot reach a service on this machine (they saw it connect
    /// from an address not its own: a jump host or NAT between), if so.
    pub fn local_unreachable(&self) -> Option<&str> {
        self.local_unreachable.as_deref()
    }

    /// This machine.
    pub fn local(&self) -> Arc<LocalHost> {
        self.local.clone()
    }

    pub fn all(&self) -> &[Arc<dyn Host>] {
        &self.hosts
    }

    pub fn remotes(&self) -> &[Arc<RemoteHost>] {
        &self.remotes
    }

    /// Each host's name with its kernel's boot id, this machine first (its own, read
    /// here), then the remotes (as each one's agent said): hosts with one boot id are
    /// one kernel, namespaces or containers of one machine.
    pub fn boot_ids(&self) -> Vec<(String, Option<String>)> {
        self.hosts
            .iter()
            .map(|h| (h.name().to_string(), h.boot_id()))
            .collect()
    }

    /// The first host that was lost, and why.
    pub fn lost(&self) -> Option<String> {
        self.hosts.iter().find_map(|h| h.lost())
    }

    /// Stop everything on every host, then close the ssh connections.
    pub fn shutdown(&self) {
        std::thread::scope(|s| {
            for h in &self.hosts {
                s.spawn(move || h.shutdown());
            }
        });
        if let Some(ssh) = &self.ssh {
            ssh.close(&self.tried);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One machine is one network stack on one kernel: test hosts in namespaces share a
    /// kernel and not their addresses; a host and its address share both; two machines
    /// with one private address on separate networks share no boot id.
    #[test]
    fn one_machine_is_one_stack_on_one_kernel() {
        let ip = |s: &str| -> std::net::IpAddr { s.parse().unwrap() };
        let (lo, lo6, ll) = (ip("127.0.0.1"), ip("::1"), ip("fe80::1"));
        let rbh1 = [lo, lo6, ll, ip("10.77.0.1")];
        let rbh2 = [lo, lo6, ll, ip("10.77.0.2")];
        let id = |name, boot, hostname, addresses| Identity {
            name,
            boot_id: boot,
            hostname,
            addresses,
        };
        let a = id("rbh1", Some("b1"), "rbh1", &rbh1[..]);
        // Namespaces of one kernel: loopback and link-local say nothing.
        assert_eq!(
            same_machine(&a, &id("rbh2", Some("b1"), "rbh2", &rbh2[..])),
            None
        );
        // Its own address as another name.
        assert_eq!(
            same_machine(&a, &id("10.77.0.1", Some("b1"), "rbh1", &rbh1[..])),
            Some(ip("10.77.0.1"))
        );
        // The same private address on another machine (its own kernel).
        assert_eq!(
            same_machine(&a, &id("far", Some("b2"), "far", &rbh1[..])),
            None
        );
        // An agent without a boot id: the hostname decides.
        assert!(same_machine(&a, &id("x", None, "rbh1", &rbh1[..])).is_some());
        assert!(same_machine(&a, &id("x", None, "other", &rbh1[..])).is_none());
    }

    /// Behind a jump host or NAT the address a host saw us connect from is not ours:
    /// it was bound as the services' address all the same (the first remote's), and
    /// the services failed to start or listened where nobody looked.
    #[test]
    fn the_services_address_is_one_of_this_machines() {
        let seen = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter()
                .map(|(h, ip)| (h.to_string(), ip.to_string()))
                .collect()
        };
        assert!(is_local_address("127.0.0.1"));
        // TEST-NET-1: nobody's address.
        assert!(!is_local_address("192.0.2.1"));
        assert!(!is_local_address("rbh1"));
        assert_eq!(
            service_address(&seen(&[("jumped", "192.0.2.1"), ("direct", "127.0.0.1")])),
            Ok(Some("127.0.0.1".to_string()))
        );
        let e = service_address(&seen(&[("jumped", "192.0.2.1")])).unwrap_err();
        assert!(
            e.contains("192.0.2.1 (jumped)") && e.contains("jump host"),
            "{e}"
        );
        assert_eq!(service_address(&[]), Ok(None));
    }
}
