//! redis-server instances rackbench launches itself (persistence off, free ports on the
//! address load generators reach this host at, each pinned to its own CPU), and a small blocking admin client (PING, INFO, CONFIG GET)
//! used for readiness, disclosure and the server-side counter check.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context};
use engine::launch::{find_binary, free_port_on, pin_command, wait_for_port, ChildGuard};

use crate::auth::Auth;
use crate::resp::{encode_command, parse_reply, Reply};

pub struct Instance {
    pub addr: SocketAddr,
    pub cpu: Option<usize>,
    pub guard: ChildGuard,
}

/// Launch `n` redis-server instances listening on `ip`, instance i pinned to
/// `cpus[i % len]`.
pub fn launch(
    binary: &str,
    n: usize,
    cpus: &[usize],
    dir: &std::path::Path,
    ip: IpAddr,
) -> anyhow::Result<Vec<Instance>> {
    let bin = find_binary(binary, "redis-server")?;
    let bind = ip.to_string();
    // Users (ACLs) came with Redis 6: before it the directive stops the server at once.
    // On loopback a Redis 5 runs open, as every launched one did before.
    let limit_users = !ip.is_loopback()
        || binary_version(binary)
            .as_deref()
            .is_none_or(|v| redis_major(v).is_none_or(|m| m >= 6));
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let port = free_port_on(&bind)?;
        let addr = SocketAddr::new(ip, port);
        let log: PathBuf = dir.join(format!("redis-{i}.log"));
        // What it prints before its log is open (a bad option, a config it refuses:
        // "FATAL CONFIG FILE ERROR" goes to stderr only) is kept beside its log.
        let console: PathBuf = dir.join(format!("redis-{i}.out"));
        let out_file = std::fs::File::create(&console)
            .with_context(|| format!("cannot create {}", console.display()))?;
        let mut cmd = Command::new(&bin);
        cmd.args(["--port", &port.to_string()])
            .args(["--bind", &bind])
            .args(["--save", ""])
            .args(["--appendonly", "no"])
            .args(["--daemonize", "no"])
            // Bound to one address that load generators on other hosts must reach:
            // protected mode would refuse them (it only admits loopback without a
            // password). The server listens on that address alone.
            .args([
                "--protected-mode",
                if ip.is_loopback() { "yes" } else { "no" },
            ]);
        // Reachable for the run (from the network, or on loopback by every user of this
        // host), so the default user may run the benchmark's commands and nothing else:
        // no CONFIG SET, SAVE, EVAL, MODULE or SHUTDOWN, the ways into the host an open
        // redis offers (a server launched by root, on loopback, took `CONFIG SET dir`
        // and `SAVE` from any local user). No password is needed for that, so none has
        // to travel or be kept. (No `&*`: channels came with 6.2, and no pub/sub
        // command is allowed anyway.)
        if limit_users {
            cmd.args(["--user", "default", "on", "nopass", "~*", "-@all"])
                .args(["+get", "+set", "+ping", "+info", "+config|get"]);
        }
        cmd.args(["--dir", &dir.to_string_lossy()])
            .args(["--logfile", &log.to_string_lossy()])
            .stdin(Stdio::null())
            .stdout(out_file.try_clone()?)
            .stderr(out_file);
        let cpu = (!cpus.is_empty()).then(|| cpus[i % cpus.len()]);
        if let Some(c) = cpu {
            pin_command(&mut cmd, &[c]);
        }
        let mut guard = ChildGuard::spawn(&format!("redis-server #{i} (port {port})"), &mut cmd)?;
        if let Err(e) = wait_for_port(addr, &mut guard, Duration::from_secs(10)) {
            let said: Vec<String> = [(&console, "it printed"), (&log, "its log says")]
                .into_iter()
                .filter_map(|(path, what)| Some(format!("{what}: {}", last_lines(path)?)))
                .collect();
            if said.is_empty() {
                bail!(
                    "{e:#}; it printed nothing and wrote nothing to its log ({}): it hung or \
                     stopped before it started (run `redis-server --version` on that host to \
                     see whether it runs)",
                    log.display()
                );
            }
            bail!("{e:#}; {}", said.join("; "));
        }
        let mut admin = Admin::connect(addr, None)?;
        admin
            .ping()
            .with_context(|| format!("redis-server #{i} did not answer PING"))?;
        out.push(Instance { addr, cpu, guard });
    }
    Ok(out)
}

/// The last lines of a launched server's output file, joined (its last line last);
/// None when it has nothing to say.
fn last_lines(path: &std::path::Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .rev()
        .take(5)
        .collect();
    lines.reverse();
    (!lines.is_empty()).then(|| model::printable(&lines.join(" | ")).to_string())
}

/// A blocking RESP client for administration (not on the measured path).
pub struct Admin {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Admin {
    /// Connect, and authenticate first when the server needs it (`--auth-file`).
    pub fn connect(addr: SocketAddr, auth: Option<&Auth>) -> anyhow::Result<Admin> {
        let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
            .with_context(|| format!("cannot connect to {addr}: is redis-server running there?"))?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        let mut admin = Admin {
            stream,
            buf: Vec::new(),
        };
        if let Some(auth) = auth {
            // The error names the command and the server's reply, never the arguments.
            if let Err(e) = admin.call(&auth.args()) {
                let why = format!("{e:#}");
                let what = if why.contains("without any password configured") {
                    "needs no password: leave out --auth-file"
                } else if why.contains("WRONGPASS") || why.contains("invalid password") {
                    "refused the password of --auth-file (check it, and --user for an ACL user)"
                } else {
                    "did not take AUTH"
                };
                bail!("{addr} {what}: {why}");
            }
        }
        Ok(admin)
    }

    /// Send a command, return the raw reply bytes (bulk payload for bulk replies).
    pub fn call(&mut self, args: &[&str]) -> anyhow::Result<Vec<u8>> {
        self.stream.write_all(&encode_command(args))?;
        self.buf.clear();
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if let Some((used, reply)) = parse_reply(&self.buf).map_err(anyhow::Error::msg)? {
                return match reply {
                    // The server's message as it wrote it (its kind is the first word),
                    // without the `-` and line end of the protocol: quoted raw, a
                    // `\r` reached the terminal, and "WRONGPASS: -WRONGPASS" read to
                    // the secret masker as a password's name and value (acceptance L, 4).
                    Reply::Error(_) => bail!(
                        "{} replied: {}",
                        args[0],
                        String::from_utf8_lossy(&self.buf[1..used]).trim_end_matches(['\r', '\n'])
                    ),
                    Reply::Bulk(at, n) => Ok(self.buf[at..at + n].to_vec()),
                    _ => Ok(self.buf[..used].to_vec()),
                };
            }
            let n = self.stream.read(&mut chunk)?;
            if n == 0 {
                bail!("server closed the connection");
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    pub fn ping(&mut self) -> anyhow::Result<()> {
        self.call(&["PING"]).map(|_| ())
    }

    /// `INFO section` as key -> value.
    pub fn info(&mut self, section: &str) -> anyhow::Result<BTreeMap<String, String>> {
        let raw = self.call(&["INFO", section])?;
        Ok(parse_info(&String::from_utf8_lossy(&raw)))
    }

    /// `CONFIG GET name` (None when the server refuses, e.g. a managed service).
    pub fn config_get(&mut self, name: &str) -> Option<String> {
        let raw = self.call(&["CONFIG", "GET", name]).ok()?;
        // *2\r\n$<n>\r\nname\r\n$<m>\r\nvalue\r\n
        let text = String::from_utf8_lossy(&raw).to_string();
        let parts: Vec<&str> = text.split("\r\n").collect();
        parts.get(4).map(|s| s.to_string())
    }
}

/// Parse `INFO` text (`# Section` headers, `key:value` lines).
pub fn parse_info(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// Commands the server received, per command, from `INFO commandstats`
/// (`cmdstat_set:calls=100,usec=...,rejected_calls=0,failed_calls=0`): `calls` (those
/// that ran, failed ones included) and, from Redis 7, `rejected_calls` (refused before
/// running: OOM under noeviction, NOPERM, a wrong arity). Without the rejected, a run
/// whose every SET met OOM read "the servers counted 0 calls, the generators 50000:
/// check that nothing else uses these servers", the wrong cause.
pub fn command_calls(info: &BTreeMap<String, String>) -> BTreeMap<String, u64> {
    info.iter()
        .filter_map(|(k, v)| {
            let cmd = k.strip_prefix("cmdstat_")?;
            let field = |name: &str| -> Option<u64> {
                v.split(',')
                    .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))?
                    .parse()
                    .ok()
            };
            let calls = field("calls")? + field("rejected_calls").unwrap_or(0);
            Some((cmd.to_string(), calls))
        })
        .collect()
}

/// The major version in a `redis-server --version` line (`Redis server v=7.0.15 ...`).
fn redis_major(line: &str) -> Option<u32> {
    let v = line.split_whitespace().find_map(|w| w.strip_prefix("v="))?;
    v.split('.').next()?.parse().ok()
}

/// The version line of a redis-server binary (`redis-server --version`).
pub fn binary_version(binary: &str) -> Option<String> {
    let bin = find_binary(binary, "redis-server").ok()?;
    let out = Command::new(bin).arg("--version").output().ok()?;
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_major_versions() {
        assert_eq!(
            redis_major("Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64"),
            Some(7)
        );
        assert_eq!(redis_major("Redis server v=5.0.7 sha=00000000:0"), Some(5));
        assert_eq!(redis_major("nonsense"), None);
    }

    /// A launched server on loopback runs the benchmark's commands and refuses the ways
    /// into the host (it took `CONFIG SET` from any local user).
    #[test]
    fn a_launched_server_on_loopback_refuses_all_but_the_benchmarks_commands() {
        if find_binary("redis-server", "redis-server").is_err() {
            eprintln!("skipped: redis-server is not installed");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        let servers = launch("redis-server", 1, &[], dir.path(), ip).unwrap();
        let mut admin = Admin::connect(servers[0].addr, None).unwrap();
        admin.call(&["SET", "k", "v"]).unwrap();
        assert_eq!(admin.call(&["GET", "k"]).unwrap(), b"v");
        admin.call(&["INFO", "stats"]).unwrap();
        admin.call(&["CONFIG", "GET", "maxmemory"]).unwrap();
        for refused in [
            &["CONFIG", "SET", "dir", "/tmp"][..],
            &["SAVE"],
            &["FLUSHALL"],
            &["SHUTDOWN", "NOSAVE"],
        ] {
            let e = format!("{:#}", admin.call(refused).unwrap_err());
            assert!(e.contains("NOPERM"), "{refused:?}: {e}");
        }
    }

    /// What redis-server prints before its log is open is in the error (review I, 8: a
    /// config it refused was lost, stderr going nowhere). A stand-in that prints as
    /// redis-server 7 does for a bad option and exits.
    #[test]
    fn a_server_that_stops_before_its_log_says_what_it_printed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("redis-server");
        std::fs::write(
            &bin,
            "#!/bin/sh\necho '*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***' >&2\n\
             echo \"Reading the configuration file, at line 2\" >&2\n\
             echo \">>> 'bind \\\"nowhere\\\"'\" >&2\nexit 1\n",
        )
        .unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        let e = launch(
            &bin.to_string_lossy(),
            1,
            &[],
            dir.path(),
            IpAddr::from([127, 0, 0, 1]),
        )
        .err()
        .expect("a server that exits cannot be launched");
        let e = format!("{e:#}");
        assert!(
            e.contains("it printed: *** FATAL CONFIG FILE ERROR (Redis 7.0.15) *** | Reading the configuration file, at line 2"),
            "{e}"
        );
        assert!(!e.contains("its log says"), "{e}");
    }

    #[test]
    fn parses_commandstats() {
        // Captured from redis-server 7.0.15.
        let text = "# Commandstats\r\ncmdstat_set:calls=100000,usec=45678,usec_per_call=0.46,rejected_calls=0,failed_calls=0\r\ncmdstat_get:calls=7,usec=3,usec_per_call=0.43,rejected_calls=0,failed_calls=0\r\n";
        let calls = command_calls(&parse_info(text));
        assert_eq!(calls.get("set"), Some(&100_000));
        assert_eq!(calls.get("get"), Some(&7));
        // Refused under OOM: received, not run (Redis 7 counts them apart); and a
        // Redis 6 line without the field.
        let text = "cmdstat_set:calls=0,usec=0,usec_per_call=0.00,rejected_calls=50000,failed_calls=0\r\ncmdstat_get:calls=12,usec=3,usec_per_call=0.25\r\n";
        let calls = command_calls(&parse_info(text));
        assert_eq!(calls.get("set"), Some(&50_000));
        assert_eq!(calls.get("get"), Some(&12));
    }
}
