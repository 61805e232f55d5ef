//! A throwaway MariaDB server rackbench launches itself: `mariadb-install-db` into a
//! scratch dir, `mariadbd` on a unix socket there and on 127.0.0.1 at a free port (and on
//! the address load generators on other hosts reach it at, see [`Reach`]), pinned to the
//! server CPUs, under a [`ChildGuard`] (stopped with us), removed afterwards.
//!
//! root logs in over the socket only, in a directory only the server's user enters, with
//! the run's password when the run gives one (`rackbench run` always does), else none.
//! `--auth-root-authentication-method=normal` also made a passwordless root@127.0.0.1
//! and root@::1: any local user was root, who reads and writes files as the server's
//! user; those are dropped before the server takes a connection. Off loopback, root is
//! admitted with the run's password ([`Reach`]) from the system under test's own address
//! and each load generator's, by IP (`--skip-name-resolve`), and from nowhere else.
//! mariadbd refuses to run as root, so when rackbench is root it runs as the
//! `mysql` system user (which the Debian package creates), else `nobody`. The binary
//! log is off (`--skip-log-bin`) as in a default install, and every persistence
//! setting is read back from the server for the disclosure ([`Mariadbd::persistence`]).

use secrecy::SecretString;
use std::fs::File;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use engine::launch::{free_port, pin_command, ChildGuard, ServiceUser};

use crate::backend::Backend;
use crate::mariadb::MyDb;
use crate::server::{Reach, INSTALL, INSTALL_TIMEOUT};

const INSTALL_HINT: &str = "Install MariaDB (Debian/Ubuntu: `apt-get install mariadb-server`), \
     or give a running server with --dsn 'mysql://user@host:3306/tpcc'";

/// The settings a launched server starts with (from the plan).
#[derive(Debug, Clone)]
pub struct Settings {
    pub buffer_pool: String,
    /// 1: flush the redo log at each commit (durable, the default); 0 or 2: not.
    pub flush_log_at_trx_commit: u8,
    pub max_connections: u32,
    /// Extra `name=value` options (`--mariadb-setting`).
    pub extra: Vec<(String, String)>,
    pub cpus: Vec<usize>,
}

/// Directories (separated by `:`, as PATH) holding the MariaDB server's programs
/// (`mariadbd`, `mariadb-install-db`): when set, they are looked for there only, not on
/// PATH nor in /usr/sbin (another build of MariaDB, or a test that none is found).
pub const BINDIR_ENV: &str = "RACKBENCH_MARIADB_BINDIR";

/// Where a binary is: in [`BINDIR_ENV`]'s directories when it is set, else on PATH, or
/// in /usr/sbin (Debian keeps mariadbd there).
pub fn find_binary(name: &str) -> anyhow::Result<PathBuf> {
    find_binary_in(name, std::env::var_os(BINDIR_ENV).as_deref())
}

/// [`find_binary`] with [`BINDIR_ENV`]'s value given (None: not set).
pub fn find_binary_in(name: &str, bindir: Option<&std::ffi::OsStr>) -> anyhow::Result<PathBuf> {
    if let Some(dirs) = bindir {
        return engine::launch::find_binary_in_dirs(
            name,
            BINDIR_ENV,
            dirs,
            "PATH and /usr/sbin",
            INSTALL_HINT,
            "directories holding mariadbd and mariadb-install-db",
        );
    }
    if let Ok(p) = engine::launch::find_binary(name, "mariadb-server") {
        return Ok(p);
    }
    for dir in ["/usr/sbin", "/usr/bin", "/usr/local/mysql/bin"] {
        let p = Path::new(dir).join(name);
        if engine::launch::is_executable(&p) {
            return Ok(p);
        }
    }
    bail!("`{name}` was not found on PATH nor in /usr/sbin. {INSTALL_HINT}")
}

/// Is a MariaDB server installed here (tests skip without one)?
pub fn available() -> bool {
    find_binary("mariadbd").is_ok() && find_binary("mariadb-install-db").is_ok()
}

/// The OS user the server runs as when we are root: `mysql`, else `nobody`.
fn run_as() -> Option<ServiceUser> {
    ServiceUser::when_root(&["mysql", "nobody"])
}

/// A directory only the server's user (and root) enters: the socket in `run` takes
/// MariaDB's root, with no password when the run gave none.
fn make_dir_for(dir: &Path, who: Option<&ServiceUser>) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    who.map_or(Ok(()), |u| u.own(dir))
}

/// A running mariadbd we started, in its scratch dir.
pub struct Mariadbd {
    guard: Option<ChildGuard>,
    temp: Option<engine::scratch::ScratchDir>,
    pub socket: PathBuf,
    pub port: u16,
    pub version: String,
    log: PathBuf,
    /// root's password, when the run gave one (see [`Reach`]).
    password: Option<SecretString>,
}

impl Mariadbd {
    /// Install a data dir in a scratch dir and start the server on it, on loopback.
    pub fn throwaway(settings: &Settings) -> anyhow::Result<Mariadbd> {
        Mariadbd::throwaway_at(settings, &Reach::loopback())
    }

    /// [`Mariadbd::throwaway`], listening where `reach` says and admitting root with its
    /// password from the addresses it lists (the load generators') and from its own
    /// listen address.
    pub fn throwaway_at(settings: &Settings, reach: &Reach) -> anyhow::Result<Mariadbd> {
        reach.admitted_password()?;
        let install = find_binary("mariadb-install-db")?;
        let mariadbd = find_binary("mariadbd")?;
        let temp = engine::scratch::tempdir("rackbench-mariadb-")
            .context("creating a temp dir for the MariaDB server")?;
        let who = run_as();
        // The server's user must reach its directories through the temp dir: passing
        // through, not listing it.
        std::fs::set_permissions(temp.path(), std::fs::Permissions::from_mode(0o711))?;
        let data = temp.path().join("data");
        let run = temp.path().join("run");
        // A temporary directory of its own: a mariadbd starting removes every `#sql*`
        // file in its tmpdir as left over, and in a shared $TMPDIR those can be another
        // server's live temporary tables (two servers installing at once failed so).
        let tmp = temp.path().join("tmp");
        for dir in [&data, &run, &tmp] {
            make_dir_for(dir, who.as_ref())?;
        }
        let log = temp.path().join("mariadbd.log");
        let mut cmd = Command::new(&install);
        cmd.arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--tmpdir={}", tmp.display()))
            .args([
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
                "--skip-name-resolve",
            ]);
        if let Some(u) = &who {
            cmd.arg(format!("--user={}", u.name));
        }
        // Its shells and `mariadbd --bootstrap` run in its group, ended with it (see INSTALL).
        let ran = engine::command::run_captured_command(
            "mariadb-install-db",
            &mut cmd,
            INSTALL_TIMEOUT,
            INSTALL,
        );
        if let Some(failure) = ran.failure {
            bail!(
                "mariadb-install-db failed ({failure}): {}",
                tail(&ran.stderr)
            );
        }
        // install-db's passwordless root@127.0.0.1 and root@::1 go before the server
        // takes its first connection (dropped after, a local user could have come in
        // first). Nothing secret in it.
        let init = temp.path().join("init.sql");
        std::fs::write(
            &init,
            "DROP USER IF EXISTS 'root'@'127.0.0.1', 'root'@'::1';\n",
        )
        .with_context(|| format!("writing {}", init.display()))?;
        std::fs::set_permissions(&init, std::fs::Permissions::from_mode(0o644))?;
        let port = free_port()?;
        let socket = run.join("mysqld.sock");
        let logf = File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let mut cmd = Command::new(&mariadbd);
        cmd.arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--tmpdir={}", tmp.display()))
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--pid-file={}", run.join("mariadbd.pid").display()))
            .arg(format!("--port={port}"))
            .arg(format!("--bind-address={}", reach.listen))
            .arg(format!("--init-file={}", init.display()))
            .args(settings.args())
            .stdin(Stdio::null())
            .stdout(Stdio::from(logf.try_clone()?))
            .stderr(Stdio::from(logf));
        if let Some(u) = &who {
            cmd.arg(format!("--user={}", u.name));
            u.apply(&mut cmd);
        }
        pin_command(&mut cmd, &settings.cpus);
        let guard = ChildGuard::spawn("mariadbd", &mut cmd)?;
        let mut s = Mariadbd {
            guard: Some(guard),
            temp: Some(temp),
            socket,
            port,
            version: String::new(),
            log,
            password: None,
        };
        s.wait_ready(Duration::from_secs(60))?;
        let mut c = s.backend("mysql").connect()?;
        s.version = c.server_version().unwrap_or_default();
        // Any other (root@<host name>, inert under --skip-name-resolve), each quoted by
        // the server itself.
        let others = c
            .query_text(
                "SELECT COALESCE(GROUP_CONCAT(CONCAT('''root''@', QUOTE(Host))), '') \
                 FROM mysql.user WHERE User = 'root' AND Host <> 'localhost'",
            )
            .context("listing root's accounts on the launched MariaDB")?;
        if !others.is_empty() {
            c.batch(&format!("DROP USER {others}"))
                .context("dropping root's passwordless accounts but the socket's")?;
        }
        // Over the socket, with the general log off: the statement is seen by no one.
        // root on the socket takes the run's password too: the drivers on this host
        // log in with it (a password given to an account with none is refused). Letters
        // and digits ([`Reach::at`]); quotes doubled all the same.
        let password = crate::exposed(&reach.password).unwrap_or_default();
        let password = password.replace('\'', "''");
        if reach.password.is_some() {
            c.batch(&format!(
                "ALTER USER 'root'@'localhost' IDENTIFIED BY '{password}'"
            ))
            .context("setting root's password on the launched MariaDB")?;
            s.password.clone_from(&reach.password);
        }
        for host in admitted_hosts(reach) {
            c.batch(&format!(
                "CREATE USER 'root'@'{host}' IDENTIFIED BY '{password}'"
            ))
            .and_then(|()| {
                c.batch(&format!(
                    "GRANT ALL PRIVILEGES ON *.* TO 'root'@'{host}' WITH GRANT OPTION"
                ))
            })
            .with_context(|| format!("admitting root from {host}"))?;
        }
        Ok(s)
    }

    /// Root over the unix socket, database `db`.
    pub fn backend(&self, db: &str) -> MyDb {
        MyDb::launched(
            &self.socket.to_string_lossy(),
            "127.0.0.1",
            self.port,
            db,
            crate::exposed(&self.password),
        )
    }

    fn wait_ready(&mut self, timeout: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + timeout;
        let db = self.backend("mysql");
        loop {
            if self.socket.exists() {
                match db.connect() {
                    Ok(_) => return Ok(()),
                    Err(e) if Instant::now() >= deadline => {
                        bail!(
                            "MariaDB did not accept connections within {timeout:?}: {e:#}; {}",
                            self.log_tail()
                        )
                    }
                    Err(_) => {}
                }
            }
            if let Some(why) = self.guard.as_mut().and_then(ChildGuard::exited) {
                bail!("mariadbd {why} while starting: {}", self.log_tail());
            }
            if Instant::now() >= deadline {
                bail!(
                    "MariaDB did not start within {timeout:?}: {}",
                    self.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Last lines of the server log (for error messages).
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        format!("server log {}: {}", self.log.display(), tail(&text))
    }

    pub fn pid(&self) -> u32 {
        self.guard.as_ref().map_or(0, ChildGuard::pid)
    }

    pub fn exited(&mut self) -> Option<String> {
        self.guard.as_mut().and_then(ChildGuard::exited)
    }

    /// SIGTERM (a clean shutdown), then the guard's SIGKILL if it hangs; the scratch dir
    /// goes with it. Idempotent.
    pub fn stop(&mut self) {
        if let Some(mut g) = self.guard.take() {
            g.stop_after(libc::SIGTERM, Duration::from_secs(30));
        }
        self.temp = None;
    }
}

impl Drop for Mariadbd {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The client addresses root is admitted from besides loopback: the listen addresses
/// other than 127.0.0.1 (generators on the system under test connect from there) and
/// each admitted `a.b.c.d/32` (a load generator). Only IP addresses reach the SQL.
fn admitted_hosts(reach: &Reach) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let listed = reach
        .listen
        .split(',')
        .chain(reach.admit.iter().map(String::as_str));
    for a in listed {
        let ip = a.split('/').next().unwrap_or("").trim();
        match ip.parse::<std::net::IpAddr>() {
            Ok(addr) if !addr.is_loopback() && !out.contains(&addr.to_string()) => {
                out.push(addr.to_string())
            }
            _ => {}
        }
    }
    out
}

impl Settings {
    fn args(&self) -> Vec<String> {
        let mut v: Vec<(String, String)> = vec![
            ("skip-name-resolve".into(), String::new()),
            ("skip-log-bin".into(), String::new()),
            ("local-infile".into(), "1".into()),
            ("innodb-buffer-pool-size".into(), self.buffer_pool.clone()),
            (
                "innodb-flush-log-at-trx-commit".into(),
                self.flush_log_at_trx_commit.to_string(),
            ),
            ("max-connections".into(), self.max_connections.to_string()),
        ];
        v.extend(self.extra.iter().cloned());
        v.into_iter()
            .map(|(k, val)| {
                if val.is_empty() {
                    format!("--{k}")
                } else {
                    format!("--{k}={val}")
                }
            })
            .collect()
    }
}

/// The persistence settings a server runs with, as facts (`server.config.NAME`), read
/// from the server itself (a launched one's and a `--dsn` one's alike).
pub fn persistence(c: &mut dyn crate::backend::Conn) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for name in [
        "innodb_buffer_pool_size",
        "innodb_flush_log_at_trx_commit",
        "sync_binlog",
        "log_bin",
        // The isolation level: MariaDB's name, and MySQL 8's (only those that exist are kept).
        "tx_isolation",
        "transaction_isolation",
        "innodb_doublewrite",
        "innodb_flush_method",
    ] {
        let sql = format!("SELECT CAST(@@global.{name} AS CHAR)");
        if let Ok(v) = text(c, &sql) {
            out.push((name.to_string(), v));
        }
    }
    out
}

fn text(c: &mut dyn crate::backend::Conn, sql: &str) -> anyhow::Result<String> {
    c.query_text(sql)
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .take(5)
        .collect();
    lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
}
