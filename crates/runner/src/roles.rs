//! Which host plays which part: the system under test (services), the load generators
//! (drivers), and for `net` the sender/receiver pairs of the iperf3 study's matrix.
//! No hosts given: everything on this machine, as a single-host run always was.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::bail;
use engine::host::{Host, Roles};
use engine::workload::Params;
use hosts::{HostSet, LOCAL};
use serde_json::{json, Value};

/// The hosts as the user gave them (flags or a plan's `[hosts]` table).
#[derive(Debug, Clone, Default)]
pub struct HostsPlan {
    /// System under test (default: this machine).
    pub sut: Option<String>,
    /// Load generators (default: this machine).
    pub loadgens: Vec<String>,
    /// net: every ordered pair of these hosts.
    pub matrix: Vec<String>,
    /// net: these sender>receiver pairs.
    pub pairs: Vec<(String, String)>,
    /// An ssh config file instead of ~/.ssh/config.
    pub ssh_config: Option<std::path::PathBuf>,
}

/// The roles of one sweep point, by host name.
#[derive(Debug, Clone)]
pub struct PointRoles {
    pub sut: String,
    pub loadgens: Vec<String>,
    /// Set for a net pair (sender, receiver).
    pub pair: Option<(String, String)>,
    /// Whether any host other than this machine takes part in the run.
    pub remote: bool,
}

impl PointRoles {
    pub fn resolve(&self, set: &HostSet) -> anyhow::Result<Roles> {
        let sut = set.get(&self.sut)?;
        let loadgens: Vec<Arc<dyn Host>> = self
            .loadgens
            .iter()
            .map(|n| set.get(n))
            .collect::<anyhow::Result<_>>()?;
        Ok(Roles { sut, loadgens })
    }

    /// Whether a service on this machine is reached from another host at this point: it
    /// is the system under test with a load generator elsewhere, or a net pair's
    /// receiver with its sender elsewhere.
    pub fn served_here_to_others(&self) -> bool {
        match &self.pair {
            Some((sender, receiver)) => receiver == hosts::LOCAL && sender != hosts::LOCAL,
            None => self.sut == hosts::LOCAL && self.loadgens.iter().any(|l| l != hosts::LOCAL),
        }
    }

    /// `rbh1>rbh2` for a net pair.
    pub fn pair_label(&self) -> Option<String> {
        self.pair.as_ref().map(|(s, r)| format!("{s}>{r}"))
    }

    /// Parameters stored with every result of the point: where it ran, when anything
    /// ran off this machine (a single-host run's parameters stay as they always were).
    pub fn params(&self) -> BTreeMap<String, Value> {
        let mut m = BTreeMap::new();
        if let Some((s, r)) = &self.pair {
            m.insert("sender_host".into(), json!(s));
            m.insert("receiver_host".into(), json!(r));
        } else if self.remote {
            m.insert("sut_host".into(), json!(self.sut));
            // crypto and mem have none: not `loadgen_hosts=` (an empty host's name).
            if !self.loadgens.is_empty() {
                m.insert("loadgen_hosts".into(), json!(self.loadgens.join(",")));
            }
        }
        m
    }
}

/// Parse `S>R` (or `S:R`) pairs.
pub fn parse_pair(s: &str) -> anyhow::Result<(String, String)> {
    // A pair without `>` is most often one the shell cut at it (`--pairs rbh1>rbh2`
    // unquoted: `rbh1`, and a file `rbh2` written): said, with the forms that survive.
    let form = "must be SENDER>RECEIVER, quoted for the shell (--pairs 'rbh1>rbh2,rbh2>rbh1'), \
                or SENDER:RECEIVER (--pairs rbh1:rbh2); unquoted, the shell takes `>` for a \
                redirect and may have written a file named after the receiver";
    let (a, b) = s
        .split_once('>')
        .or_else(|| s.split_once(':').filter(|_| !s.contains('@')))
        .ok_or_else(|| anyhow::anyhow!("pair `{s}` {form}"))?;
    let (a, b) = (a.trim(), b.trim());
    if a.is_empty() || b.is_empty() {
        bail!("pair `{s}` {form}");
    }
    Ok((a.to_string(), b.to_string()))
}

impl HostsPlan {
    /// No host but this machine.
    pub fn is_local(&self) -> bool {
        self.names().iter().all(|n| n == LOCAL)
    }

    /// Every host named, in first-mention order.
    pub fn names(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut add = |n: &String| {
            if !out.contains(n) {
                out.push(n.clone());
            }
        };
        if let Some(s) = &self.sut {
            add(s);
        }
        self.loadgens.iter().for_each(&mut add);
        self.matrix.iter().for_each(&mut add);
        for (s, r) in &self.pairs {
            add(s);
            add(r);
        }
        out
    }

    fn net_pairs(&self) -> Vec<(String, String)> {
        let mut pairs: Vec<(String, String)> = Vec::new();
        for s in &self.matrix {
            for r in &self.matrix {
                if s != r {
                    pairs.push((s.clone(), r.clone()));
                }
            }
        }
        for p in &self.pairs {
            if !pairs.contains(p) {
                pairs.push(p.clone());
            }
        }
        pairs
    }

    pub fn validate(&self, workload: &str) -> anyhow::Result<()> {
        let pairs = !self.matrix.is_empty() || !self.pairs.is_empty();
        if pairs && workload != "net" {
            bail!("--hosts and --pairs make sender/receiver pairs for `net`; for {workload}, give --sut HOST and --loadgen HOSTS");
        }
        if pairs && (self.sut.is_some() || !self.loadgens.is_empty()) {
            bail!("net: give either pairs (--hosts or --pairs) or --sut/--loadgen, not both");
        }
        let same = self.sut.as_deref().unwrap_or(LOCAL)
            == self.loadgens.first().map_or(LOCAL, String::as_str);
        if workload == "net" && !pairs && same && !self.is_local() {
            bail!(
                "net: --sut and --loadgen name the same host: a sender and a receiver on one \
                 host need no --sut or --loadgen (leave both out), or give two hosts"
            );
        }
        // One sender per pair: several generators are several pairs, said before any host
        // is reached (it was said after the ssh setup, without the pairs to give).
        if workload == "net" && self.loadgens.len() > 1 {
            let receiver = self.sut.as_deref().unwrap_or(LOCAL);
            let pairs: Vec<String> = self
                .loadgens
                .iter()
                .map(|s| format!("{s}>{receiver}"))
                .collect();
            bail!(
                "net runs one sender per pair: for a sender on each of {} give --pairs '{}'",
                self.loadgens.join(", "),
                pairs.join(",")
            );
        }
        // A host named twice: in --hosts, its pairs would run twice with the same
        // parameters and repetition numbers (or, `a,a`, none at all, and net on this
        // machine's loopback, unsaid); in --loadgen, two jobs would share one host's
        // progress. Refused, naming it, rather than quietly dropped.
        for (flag, list) in [("--hosts", &self.matrix), ("--loadgen", &self.loadgens)] {
            if let Some(h) = engine::plan::first_repeat(list) {
                bail!(
                    "{flag} names {} more than once: give each host once",
                    model::printable(h)
                );
            }
        }
        if self.matrix.len() == 1 {
            bail!("--hosts needs at least two hosts to make pairs (e.g. --hosts rbh1,rbh2,rbh3)");
        }
        for (i, (s, r)) in self.pairs.iter().enumerate() {
            if s == r {
                bail!("pair {s}>{r}: sender and receiver are the same host; drop --pairs to run on one host");
            }
            if self.pairs[..i].contains(&(s.clone(), r.clone())) {
                bail!("--pairs names {s}>{r} more than once: give each pair once");
            }
        }
        for n in self.names() {
            if n != LOCAL {
                hosts::ssh::check_destination(&n)?;
            }
        }
        Ok(())
    }

    /// Every sweep point with its roles: net pairs multiply the points (pair outermost,
    /// so each pair's sweep runs together), net's `--sut R --loadgen S` being the pair
    /// `S>R` (its sender's figures were filed under the receiver, its run had no pairs
    /// table); otherwise one set of roles for all. A
    /// workload with no server to load (`has_server` false: crypto, mem) runs on the
    /// system under test and has no load generator: this machine, taken for one, was a
    /// host of `--sut rbh1`'s tests, its other load and steal flagged on rbh1's results.
    pub fn expand(
        &self,
        points: &[Params],
        workload: &str,
        has_server: bool,
    ) -> anyhow::Result<Vec<(Params, PointRoles)>> {
        let remote = !self.is_local();
        let mut pairs = self.net_pairs();
        // Off this machine, net's one sender and receiver are a pair, whichever of the
        // two flags was left out (this machine then): `--sut rbh1` alone stored the
        // sender's figures under rbh1 as the two flags did.
        if workload == "net" && pairs.is_empty() && remote {
            let receiver = self.sut.clone().unwrap_or_else(|| LOCAL.into());
            let sender = self
                .loadgens
                .first()
                .cloned()
                .unwrap_or_else(|| LOCAL.into());
            pairs.push((sender, receiver));
        }
        if pairs.is_empty() {
            let roles = PointRoles {
                sut: self.sut.clone().unwrap_or_else(|| LOCAL.into()),
                // With kv in the same run, `--loadgen` is kv's, not crypto's.
                loadgens: match (self.loadgens.is_empty(), has_server) {
                    (_, false) => Vec::new(),
                    (true, true) => vec![LOCAL.into()],
                    (false, true) => self.loadgens.clone(),
                },
                pair: None,
                remote,
            };
            return Ok(points.iter().map(|p| (p.clone(), roles.clone())).collect());
        }
        let mut out = Vec::new();
        for (s, r) in pairs {
            for p in points {
                out.push((
                    p.clone(),
                    PointRoles {
                        sut: r.clone(),
                        loadgens: vec![s.clone()],
                        pair: Some((s.clone(), r.clone())),
                        remote,
                    },
                ));
            }
        }
        Ok(out)
    }

    /// What each host does over the whole run (`sut`, `loadgen`, `receiver+sender`...):
    /// the side taking load first, whichever it did first (a matrix read
    /// `sender+receiver` beside `receiver+sender`).
    pub fn roles_by_host(&self, expanded: &[(Params, PointRoles)]) -> BTreeMap<String, String> {
        let mut m: BTreeMap<String, Vec<&'static str>> = BTreeMap::new();
        for (_, r) in expanded {
            let (sut_role, gen_role) = if r.pair.is_some() {
                ("receiver", "sender")
            } else {
                ("sut", "loadgen")
            };
            let e = m.entry(r.sut.clone()).or_default();
            if !e.contains(&sut_role) {
                e.push(sut_role);
            }
            for g in &r.loadgens {
                let e = m.entry(g.clone()).or_default();
                if !e.contains(&gen_role) {
                    e.push(gen_role);
                }
            }
        }
        m.into_iter()
            .map(|(k, mut v)| {
                v.sort_by_key(|r| matches!(*r, "loadgen" | "sender"));
                (k, v.join("+"))
            })
            .collect()
    }

    pub fn to_json(&self) -> Value {
        json!({
            "sut": self.sut,
            "loadgens": self.loadgens,
            "matrix": self.matrix,
            "pairs": self.pairs.iter().map(|(s, r)| format!("{s}>{r}")).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_here_is_reached_from_elsewhere_only_with_a_remote_peer() {
        let roles = |sut: &str, loadgens: &[&str], pair: Option<(&str, &str)>| PointRoles {
            sut: sut.into(),
            loadgens: loadgens.iter().map(|s| s.to_string()).collect(),
            pair: pair.map(|(a, b)| (a.into(), b.into())),
            remote: true,
        };
        assert!(roles("local", &["rbh1"], None).served_here_to_others());
        assert!(!roles("local", &["local"], None).served_here_to_others());
        assert!(!roles("rbh1", &["local"], None).served_here_to_others());
        assert!(roles("local", &[], Some(("rbh1", "local"))).served_here_to_others());
        assert!(!roles("rbh1", &[], Some(("local", "rbh1"))).served_here_to_others());
    }

    #[test]
    fn a_matrix_of_three_hosts_is_six_ordered_pairs_times_the_points() {
        let h = HostsPlan {
            matrix: vec!["a".into(), "b".into(), "c".into()],
            ..Default::default()
        };
        h.validate("net").unwrap();
        let points = vec![Params::new(), Params::new()];
        let e = h.expand(&points, "net", true).unwrap();
        assert_eq!(e.len(), 12);
        let pairs: Vec<String> = e
            .iter()
            .step_by(2)
            .filter_map(|(_, r)| r.pair_label())
            .collect();
        assert_eq!(pairs, ["a>b", "a>c", "b>a", "b>c", "c>a", "c>b"]);
        assert_eq!(e[0].1.sut, "b");
        assert_eq!(e[0].1.loadgens, vec!["a"]);
        let roles = h.roles_by_host(&e);
        assert_eq!(roles["a"], "receiver+sender");
        assert_eq!(roles["b"], "receiver+sender");
    }

    #[test]
    fn no_hosts_is_everything_here_and_adds_no_parameter() {
        let h = HostsPlan::default();
        assert!(h.is_local());
        let e = h.expand(&[Params::new()], "kv", true).unwrap();
        assert_eq!(e[0].1.sut, LOCAL);
        assert_eq!(e[0].1.loadgens, vec![LOCAL]);
        assert!(e[0].1.params().is_empty());
        assert_eq!(h.roles_by_host(&e)[LOCAL], "sut+loadgen");
    }

    /// crypto and mem run on the system under test: no load generator, not this machine.
    #[test]
    fn a_workload_with_no_server_has_no_load_generator() {
        let e = HostsPlan::default()
            .expand(&[Params::new()], "mem", false)
            .unwrap();
        assert!(e[0].1.loadgens.is_empty());
        assert_eq!(HostsPlan::default().roles_by_host(&e)[LOCAL], "sut");
        let h = HostsPlan {
            sut: Some("rbh1".into()),
            ..Default::default()
        };
        let e = h.expand(&[Params::new()], "mem", false).unwrap();
        let roles = h.roles_by_host(&e);
        assert_eq!(roles.keys().collect::<Vec<_>>(), ["rbh1"]);
        // A suite's generators are kv's alone.
        let h = HostsPlan {
            sut: Some("rbh1".into()),
            loadgens: vec!["rbh2".into()],
            ..Default::default()
        };
        assert!(h.expand(&[Params::new()], "crypto", false).unwrap()[0]
            .1
            .loadgens
            .is_empty());
        assert_eq!(
            h.expand(&[Params::new()], "kv", true).unwrap()[0]
                .1
                .loadgens,
            ["rbh2"]
        );
    }

    /// net's `--sut rbh1 --loadgen rbh2` is the pair rbh2>rbh1, stored as one (its
    /// sender's figures were filed under rbh1 in the CSV, and its run had no pairs table);
    /// several generators are refused before any host is reached, with the pairs to give.
    #[test]
    fn nets_sut_and_one_loadgen_are_a_pair_and_several_are_refused() {
        let h = HostsPlan {
            sut: Some("rbh1".into()),
            loadgens: vec!["rbh2".into()],
            ..Default::default()
        };
        h.validate("net").unwrap();
        let e = h.expand(&[Params::new()], "net", true).unwrap();
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].1.pair_label().as_deref(), Some("rbh2>rbh1"));
        assert_eq!(e[0].1.params()["sender_host"], "rbh2");
        assert_eq!(h.roles_by_host(&e)["rbh1"], "receiver");
        // kv in the same run keeps its roles.
        let kv = h.expand(&[Params::new()], "kv", true).unwrap();
        assert!(kv[0].1.pair.is_none());
        // Either flag alone: the other end is this machine.
        for (sut, loadgens, pair) in [
            (Some("rbh1"), vec![], "local>rbh1"),
            (None, vec!["rbh2".to_string()], "rbh2>local"),
        ] {
            let one = HostsPlan {
                sut: sut.map(str::to_string),
                loadgens,
                ..Default::default()
            };
            one.validate("net").unwrap();
            let e = one.expand(&[Params::new()], "net", true).unwrap();
            assert_eq!(e[0].1.pair_label().as_deref(), Some(pair));
        }
        // One host at both ends is refused (`--pairs a>a` is).
        let both = HostsPlan {
            sut: Some("rbh1".into()),
            loadgens: vec!["rbh1".into()],
            ..Default::default()
        };
        assert!(both
            .validate("net")
            .unwrap_err()
            .to_string()
            .contains("the same host"));
        both.validate("kv").unwrap();
        let h = HostsPlan {
            loadgens: vec!["rbh2".into(), "rbh3".into()],
            ..h
        };
        let e = h.validate("net").unwrap_err().to_string();
        assert!(
            e.ends_with("for a sender on each of rbh2, rbh3 give --pairs 'rbh2>rbh1,rbh3>rbh1'"),
            "{e}"
        );
        h.validate("kv").unwrap();
    }

    #[test]
    fn pairs_are_for_net_and_need_two_hosts() {
        let h = HostsPlan {
            matrix: vec!["a".into(), "b".into()],
            ..Default::default()
        };
        assert!(h.validate("kv").is_err());
        let h = HostsPlan {
            pairs: vec![("a".into(), "a".into())],
            ..Default::default()
        };
        assert!(h.validate("net").is_err());
        assert_eq!(parse_pair("h1>h2").unwrap(), ("h1".into(), "h2".into()));
        assert!(parse_pair("h1").is_err());
        let h = HostsPlan {
            sut: Some("-oProxyCommand=evil".into()),
            ..Default::default()
        };
        assert!(h.validate("kv").is_err());
    }

    /// A host named twice is refused, naming it: `--hosts a,b,a` measured a's pairs
    /// twice under one repetition number, `--hosts a,a` passed and ran net on loopback,
    /// `--loadgen local,local` gave two jobs one progress.
    #[test]
    fn a_host_named_twice_is_refused_naming_it() {
        for (matrix, loadgens) in [
            (vec!["a", "b", "a"], vec![]),
            (vec!["a", "a"], vec![]),
            (vec![], vec!["local", "local"]),
        ] {
            let h = HostsPlan {
                matrix: matrix.iter().map(|s| s.to_string()).collect(),
                loadgens: loadgens.iter().map(|s| s.to_string()).collect(),
                ..Default::default()
            };
            let workload = if matrix.is_empty() { "kv" } else { "net" };
            let e = h.validate(workload).unwrap_err().to_string();
            let (flag, host) = if matrix.is_empty() {
                ("--loadgen", "local")
            } else {
                ("--hosts", "a")
            };
            assert!(
                e.contains(flag) && e.contains(&format!("names {host} more")),
                "{e}"
            );
        }
        let h = HostsPlan {
            sut: Some("a".into()),
            loadgens: vec!["a".into(), "b".into()],
            ..Default::default()
        };
        h.validate("kv").unwrap();
    }
}
