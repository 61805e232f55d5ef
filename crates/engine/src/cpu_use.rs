//! How a sweep point's servers and load generator sit on the CPUs, judged once when the
//! servers start and said on every result: a generator competing with the servers it
//! measures (`shares_cpus`), or servers or generator threads taking turns on a CPU
//! (`cpus_oversubscribed`). One judgement for every workload that launches servers (kv,
//! http, oltp), so the same placement reads the same everywhere.

use std::sync::Arc;

use model::Flag;

use crate::host::Roles;
use crate::workload::StepOutput;

/// Does a load generator on the servers' host share their CPUs? `server`: the CPUs the
/// servers are pinned to (one entry per instance or worker, or the set they share);
/// `client`: the generator's (empty: not pinned); `host`: every CPU of the host when
/// known. A generator that competes with the server it measures takes its CPU away: the
/// figure is then neither the server's nor the client's.
pub fn cpu_clash(server: &[usize], client: &[usize], host: Option<&[usize]>) -> Option<String> {
    if server.is_empty() {
        return None;
    }
    if client.is_empty() {
        let host = host?;
        return host.iter().all(|c| server.contains(c)).then(|| {
            format!(
                "the load generator is not pinned and the servers are on every CPU of their host ({}): \
                 they compete for CPUs (give --client-cpus and --server-cpus apart, or a load generator host)",
                list(&distinct(server))
            )
        });
    }
    let shared: Vec<usize> = distinct(client)
        .into_iter()
        .filter(|c| server.contains(c))
        .collect();
    (!shared.is_empty()).then(|| {
        format!(
            "the load generator (CPUs {}) shares CPU {} with the servers (CPUs {}): they compete for it",
            list(client),
            list(&shared),
            list(&distinct(server))
        )
    })
}

/// Several servers pinned to one CPU (`--instances 3` on 2 CPUs; `servers` names them,
/// e.g. "redis-server instances"), or more generator threads than the CPUs they are
/// pinned to: they take turns on a CPU, and the figure measures the sharing as much as
/// the servers.
pub fn oversubscribed(
    server: &[usize],
    servers: &str,
    client: &[usize],
    threads: usize,
) -> Option<String> {
    let cpus = distinct(server);
    let mut why = Vec::new();
    if cpus.len() < server.len() {
        why.push(format!(
            "{} {servers} on {} CPU{} ({}): they share a CPU",
            server.len(),
            cpus.len(),
            if cpus.len() == 1 { "" } else { "s" },
            list(server)
        ));
    }
    if !client.is_empty() && threads > client.len() {
        why.push(format!(
            "{threads} load-generator threads on {} CPU{} ({}): threads share a CPU",
            client.len(),
            if client.len() == 1 { "" } else { "s" },
            list(client)
        ));
    }
    (!why.is_empty()).then(|| {
        format!(
            "{} (use at most one per CPU, or give more CPUs)",
            why.join("; ")
        )
    })
}

/// The judgement of one sweep point, said on each of its results.
#[derive(Debug, Clone, Default)]
pub struct CpuUse {
    /// Why the load generator competes with the servers for CPUs, when it does.
    pub clash: Option<String>,
    /// Several servers on one CPU, or more generator threads than their CPUs.
    pub oversubscribed: Option<String>,
}

impl CpuUse {
    /// Judge the clash for these roles: only a generator on the servers' own kernel (their
    /// host, or a namespace or container of its machine: the same boot id) can take
    /// their CPUs, and only this machine's CPUs are known here (another host's are not,
    /// so an unpinned generator there is not judged).
    pub fn judge(roles: &Roles, server: &[usize], client: &[usize]) -> CpuUse {
        let sut = roles.sut.name();
        let beside =
            |g: &Arc<dyn crate::host::Host>| roles.on_server_kernel(g.as_ref()) == Some(true);
        let clash = if roles.loadgens.iter().any(beside) {
            let here = (sut == "local").then(crate::launch::allowed_cpus);
            cpu_clash(server, client, here.as_deref())
        } else {
            None
        };
        CpuUse {
            clash,
            oversubscribed: None,
        }
    }

    /// With the oversubscription judged too (see [`oversubscribed`]).
    pub fn with_oversubscription(
        mut self,
        server: &[usize],
        servers: &str,
        client: &[usize],
        threads: usize,
    ) -> CpuUse {
        self.oversubscribed = oversubscribed(server, servers, client, threads);
        self
    }

    /// Say it on a result: `shares_cpus`, `cpus_oversubscribed` (warnings).
    pub fn flag(&self, step: &mut StepOutput) {
        if let Some(why) = &self.clash {
            step.flags.push(Flag::warning("shares_cpus", why.clone()));
        }
        if let Some(why) = &self.oversubscribed {
            step.flags
                .push(Flag::warning("cpus_oversubscribed", why.clone()));
        }
    }
}

/// The CPUs of a list, each once, in order.
pub fn distinct(cpus: &[usize]) -> Vec<usize> {
    let mut d = cpus.to_vec();
    d.sort_unstable();
    d.dedup();
    d
}

/// A CPU list as its messages say it: `0,2,3`.
pub fn list(cpus: &[usize]) -> String {
    cpus.iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generator_on_the_servers_cpus_is_named() {
        // --client-cpus 0 --server-cpus 0 (issue 13 item 5).
        let why = cpu_clash(&[0], &[0], Some(&[0, 1])).expect("flagged");
        assert!(why.contains("shares CPU 0"), "{why}");
        // Apart: nothing to say.
        assert_eq!(cpu_clash(&[0], &[1], Some(&[0, 1])), None);
        // Unpinned, with a server on every CPU of the host.
        let why = cpu_clash(&[0, 1], &[], Some(&[0, 1])).expect("flagged");
        assert!(why.contains("not pinned"), "{why}");
        // Unpinned with a CPU left free, or a host whose CPUs are unknown: not judged.
        assert_eq!(cpu_clash(&[0], &[], Some(&[0, 1])), None);
        assert_eq!(cpu_clash(&[0, 1], &[], None), None);
        // Workers round-robin over the CPUs (nginx: 4 workers on 0,1): each CPU once.
        let why = cpu_clash(&[0, 1, 0, 1], &[1], Some(&[0, 1, 2])).expect("flagged");
        assert!(
            why.contains("shares CPU 1 with the servers (CPUs 0,1)"),
            "{why}"
        );
    }

    #[test]
    fn more_servers_or_threads_than_cpus_are_oversubscribed() {
        let why = oversubscribed(&[0, 1, 0], "redis-server instances", &[], 1).expect("flagged");
        assert!(
            why.contains("3 redis-server instances on 2 CPUs (0,1,0)"),
            "{why}"
        );
        let why = oversubscribed(&[0], "nginx workers", &[1], 4).expect("flagged");
        assert!(
            why.contains("4 load-generator threads on 1 CPU (1)"),
            "{why}"
        );
        assert_eq!(oversubscribed(&[0, 1], "nginx workers", &[2, 3], 2), None);
        assert_eq!(oversubscribed(&[], "nginx workers", &[], 8), None);
    }
}
