//! The PostgreSQL server under test: a throwaway cluster rackbench creates itself
//! (`initdb` on a temp dir, a free port, settings from the plan, pinned, killed with us,
//! removed afterwards), a kept cluster directory (`oltp build --dir`, reused by many runs),
//! or a server given by a connection string (never stored or printed with its password).
//! A launched server takes this host's clients on its socket and, when load generators
//! elsewhere drive it, listens on the address they reach this host at, admitting them
//! with the run's password ([`Reach`]); the connection strings handed to them never hold
//! a password ([`dsn_without_password`]).
//!
//! PostgreSQL refuses to run as root, so when rackbench is root the cluster is owned by and
//! runs as the `postgres` system user (or `nobody` when that user does not exist).

use secrecy::SecretString;
use std::fs::File;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::str::FromStr;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use engine::command::{self, Kind};
use engine::launch::{free_port, pin_command, ChildGuard, ServiceUser};

/// The superuser name every launched cluster is initialised with (trust on its socket,
/// the run's password from the load generators' networks; see [`Reach`]).
pub const SUPERUSER: &str = "postgres";

const INSTALL_HINT: &str = "Install PostgreSQL (Debian/Ubuntu: `apt-get install postgresql`), \
     or give a running server with --dsn 'host=... user=... dbname=...'";

/// Directories (separated by `:`, as PATH) holding PostgreSQL's server programs
/// (`initdb`, `postgres`), such as `/usr/lib/postgresql/16/bin`: when set, they are
/// looked for there only, not on PATH nor in /usr/lib/postgresql (another version, or a
/// test that none is found).
pub const PG_BINDIR_ENV: &str = "RACKBENCH_PG_BINDIR";

/// Find a PostgreSQL server binary: in [`PG_BINDIR_ENV`]'s directories when it is set,
/// else on PATH first, then the newest `/usr/lib/postgresql/*/bin` (Debian keeps initdb
/// and postgres off PATH).
pub fn find_pg_binary(name: &str) -> anyhow::Result<PathBuf> {
    find_pg_binary_in(name, std::env::var_os(PG_BINDIR_ENV).as_deref())
}

/// [`find_pg_binary`] with [`PG_BINDIR_ENV`]'s value given (None: not set).
pub fn find_pg_binary_in(name: &str, bindir: Option<&std::ffi::OsStr>) -> anyhow::Result<PathBuf> {
    if let Some(dirs) = bindir {
        return engine::launch::find_binary_in_dirs(
            name,
            PG_BINDIR_ENV,
            dirs,
            "PATH and /usr/lib/postgresql/*/bin",
            INSTALL_HINT,
            "directory holding initdb and postgres",
        );
    }
    if let Ok(p) = engine::launch::find_binary(name, "postgresql") {
        return Ok(p);
    }
    let mut candidates: Vec<(u32, PathBuf)> = Vec::new();
    if let Ok(rd) = std::fs::read_dir("/usr/lib/postgresql") {
        for e in rd.flatten() {
            let version = e
                .file_name()
                .to_string_lossy()
                .split('.')
                .next()
                .and_then(|v| v.parse::<u32>().ok())
                .unwrap_or(0);
            let p = e.path().join("bin").join(name);
            if engine::launch::is_executable(&p) {
                candidates.push((version, p));
            }
        }
    }
    candidates.sort();
    match candidates.pop() {
        Some((_, p)) => Ok(p),
        None => {
            bail!("`{name}` was not found on PATH nor in /usr/lib/postgresql/*/bin. {INSTALL_HINT}")
        }
    }
}

/// How initdb and mariadb-install-db are run: as a launched server is (a group of their
/// own, the parent-death signal, known to the reaper, the sweep and a second Ctrl-C),
/// so that rackbench killed while they run leaves nothing writing into a dead run's
/// directory (a `mariadbd --bootstrap` wrote on for seconds). A first Ctrl-C lets them
/// finish, as before: they take seconds.
pub(crate) const INSTALL: Kind = Kind::Lasting { until_stop: false };

/// How long initdb or mariadb-install-db may take. Both take seconds: only a hung one
/// reaches this, and is killed with its group.
pub(crate) const INSTALL_TIMEOUT: Duration = Duration::from_secs(600);

/// Server settings from the plan (applied with `-c` at start).
#[derive(Debug, Clone)]
pub struct Settings {
    pub shared_buffers: String,
    pub fsync: bool,
    pub synchronous_commit: String,
    pub max_connections: u32,
    /// Extra `name=value` settings (`--pg-setting`).
    pub extra: Vec<(String, String)>,
    pub cpus: Vec<usize>,
}

/// Who may connect to a launched server over the network: the addresses it listens on,
/// the client addresses it admits, and the password they log in with. A throwaway
/// benchmark server, yet its superuser runs programs on this host: on the socket, only
/// who enters the socket's directory is one; from another host, only who gives the run's
/// password (made by the controller for this run alone, sent in the jobs, never stored).
#[derive(Debug, Clone)]
pub struct Reach {
    /// The addresses it listens on (`listen_addresses`, mariadbd's `--bind-address`).
    pub listen: String,
    /// Address fields admitted with the password (`samenet`, `10.0.0.2/32`). Empty: the
    /// cluster's own `pg_hba.conf` as initdb wrote it (its socket alone is reached).
    pub admit: Vec<String>,
    /// The run's password, when other hosts are admitted.
    pub password: Option<SecretString>,
}

/// Why a launched server admitting other hosts was not started.
const NO_PASSWORD: &str = "a launched server that admits other hosts needs the run's \
     password, and none was given";

impl Reach {
    /// The password the admitted hosts log in with: none when none is admitted, an
    /// error when some are and the run gave none.
    pub fn admitted_password(&self) -> anyhow::Result<Option<&str>> {
        if self.admit.is_empty() {
            return Ok(None);
        }
        crate::exposed(&self.password)
            .map(Some)
            .context(NO_PASSWORD)
    }

    /// Loopback only: the single-host server of before.
    pub fn loopback() -> Reach {
        Reach {
            listen: "127.0.0.1".into(),
            admit: Vec::new(),
            password: None,
        }
    }

    /// Listening on `bind_ip` too (the address load generators reach this host at),
    /// admitting with `password` the hosts of its subnets (`samenet`) and the `clients`
    /// addresses (the load generators', which may be routed from another subnet).
    /// Loopback `bind_ip`: [`Reach::loopback`] (the password kept for MariaDB's root on
    /// its socket, which the drivers log in with). A server refuses to start admitting
    /// hosts without a password ([`Reach::admitted_password`]).
    pub fn at(bind_ip: &str, clients: &[String], password: Option<&str>) -> anyhow::Result<Reach> {
        let ip: std::net::IpAddr = bind_ip.parse().with_context(|| {
            format!("the address to bind PostgreSQL to, `{bind_ip}`, is not an IP address")
        })?;
        let password = password.filter(|p| !p.is_empty());
        // Made by the controller in hex: it goes into SQL unquoted by any escaping rule.
        if password.is_some_and(|p| !p.bytes().all(|b| b.is_ascii_alphanumeric())) {
            bail!("the run's password for a launched server must be letters and digits");
        }
        let password = password.map(SecretString::from);
        if ip.is_loopback() {
            return Ok(Reach {
                password,
                ..Reach::loopback()
            });
        }
        let mut admit = vec!["samenet".to_string()];
        for c in clients {
            // Only addresses: a name or anything else never reaches pg_hba.conf.
            match c.parse::<std::net::IpAddr>() {
                Ok(a) if !a.is_loopback() => {
                    let cidr = format!("{a}/{}", if a.is_ipv4() { 32 } else { 128 });
                    if !admit.contains(&cidr) {
                        admit.push(cidr);
                    }
                }
                _ => {}
            }
        }
        Ok(Reach {
            listen: format!("127.0.0.1,{ip}"),
            admit,
            password,
        })
    }
}

impl Settings {
    fn args(&self, listen: &str) -> Vec<String> {
        let mut v: Vec<(String, String)> = vec![
            ("listen_addresses".into(), listen.to_string()),
            ("shared_buffers".into(), self.shared_buffers.clone()),
            ("fsync".into(), if self.fsync { "on" } else { "off" }.into()),
            ("synchronous_commit".into(), self.synchronous_commit.clone()),
            ("max_connections".into(), self.max_connections.to_string()),
            // A throwaway benchmark cluster: no log files to rotate, no collector process.
            ("logging_collector".into(), "off".into()),
        ];
        v.extend(self.extra.iter().cloned());
        v.into_iter()
            .flat_map(|(k, val)| ["-c".to_string(), format!("{k}={val}")])
            .collect()
    }
}

/// The OS user a cluster runs as: ourselves, or `postgres`/`nobody` when we are root.
fn run_as() -> Option<ServiceUser> {
    ServiceUser::when_root(&["postgres", "nobody"])
}

fn chown(path: &Path, who: Option<&ServiceUser>) -> anyhow::Result<()> {
    who.map_or(Ok(()), |u| u.own(path))
}

fn as_user(cmd: &mut Command, who: Option<&ServiceUser>) {
    if let Some(u) = who {
        // initdb/postgres look at HOME only for psqlrc-like files; keep them out of /root.
        u.apply(cmd);
    }
}

/// Create a new cluster in `data` (which must not exist or be empty).
pub fn init_cluster(data: &Path) -> anyhow::Result<()> {
    let initdb = find_pg_binary("initdb")?;
    let who = run_as();
    let who = who.as_ref();
    std::fs::create_dir_all(data).with_context(|| format!("creating {}", data.display()))?;
    std::fs::set_permissions(data, std::fs::Permissions::from_mode(0o700))?;
    chown(data, who)?;
    // The user must be able to reach the directory through its parents: passing
    // through is enough (the x bits). Opened to reading and listing too (0755), `--dir
    // /root/tpcc` left /root listable by every user.
    if who.is_some() {
        if let Some(parent) = data.parent() {
            let mode = std::fs::metadata(parent)?.permissions().mode();
            if mode & 0o011 != 0o011 {
                std::fs::set_permissions(parent, std::fs::Permissions::from_mode(mode | 0o011))?;
            }
        }
    }
    let mut cmd = Command::new(&initdb);
    cmd.arg("-D")
        .arg(data)
        .args(["-U", SUPERUSER, "--auth=trust", "-E", "UTF8", "--locale=C"])
        // Durability of the initial files does not matter for a benchmark cluster.
        .arg("--no-sync")
        .env("LC_ALL", "C");
    as_user(&mut cmd, who);
    let ran = command::run_captured_command("initdb", &mut cmd, INSTALL_TIMEOUT, INSTALL);
    if let Some(failure) = ran.failure {
        bail!("initdb failed ({failure}): {}", ran.stderr.trim());
    }
    Ok(())
}

/// A running PostgreSQL we started.
pub struct Server {
    guard: Option<ChildGuard>,
    /// Kept alive (and so not removed) until the server is stopped.
    temp: Option<engine::scratch::ScratchDir>,
    pub data: PathBuf,
    pub socket_dir: PathBuf,
    pub port: u16,
    pub version: String,
    log: PathBuf,
}

impl Server {
    /// A new throwaway cluster in a temp dir, removed when the server is stopped.
    pub fn throwaway(settings: &Settings) -> anyhow::Result<Server> {
        Server::throwaway_at(settings, &Reach::loopback())
    }

    /// [`Server::throwaway`], reachable as `reach` says.
    pub fn throwaway_at(settings: &Settings, reach: &Reach) -> anyhow::Result<Server> {
        let temp = engine::scratch::tempdir("rackbench-oltp-")
            .context("creating a temp dir for the PostgreSQL cluster")?;
        let data = temp.path().join("data");
        init_cluster(&data)?;
        let mut s = Server::start_at(&data, settings, reach)?;
        s.temp = Some(temp);
        Ok(s)
    }

    /// Start PostgreSQL on an existing cluster directory (kept afterwards).
    pub fn start(data: &Path, settings: &Settings) -> anyhow::Result<Server> {
        Server::start_at(data, settings, &Reach::loopback())
    }

    /// [`Server::start`], reachable as `reach` says. The admitted addresses go into a
    /// copy of the cluster's `pg_hba.conf` beside the socket (`hba_file`), so a kept
    /// cluster's files are not changed; its superuser's password is the run's (a
    /// password set on role postgres before is replaced).
    pub fn start_at(data: &Path, settings: &Settings, reach: &Reach) -> anyhow::Result<Server> {
        let admitted = reach.admitted_password()?;
        if !data.join("PG_VERSION").is_file() {
            bail!(
                "{} is not a PostgreSQL cluster directory (no PG_VERSION). Create one with \
                 `rackbench oltp build --dir {} --warehouses N`",
                data.display(),
                data.display()
            );
        }
        let postgres = find_pg_binary("postgres")?;
        let who = run_as();
        let who = who.as_ref();
        let version = std::fs::read_to_string(data.join("PG_VERSION"))
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
        // The socket lives next to the data dir, in a directory the server user owns.
        let socket_dir = data.with_file_name(format!(
            "{}-sock",
            data.file_name()
                .map_or("pg".into(), |f| f.to_string_lossy())
        ));
        // Entered by the server's user (and root) alone: every client on this host takes
        // the socket, and the cluster trusts whoever reaches it. Listening on 127.0.0.1
        // with trust, it took any local user as the superuser, who runs programs as the
        // server's OS user (`COPY ... TO PROGRAM`).
        own_dir(&socket_dir, who)?;
        let log = data.with_file_name(format!(
            "{}.log",
            data.file_name()
                .map_or("pg".into(), |f| f.to_string_lossy())
        ));
        let logf = create_no_follow(&log)?;
        let port = free_port()?;
        // TCP only where other hosts connect (their addresses alone admitted): on this
        // host, the socket above.
        let listen: Vec<&str> = reach
            .listen
            .split(',')
            .filter(|a| *a != "127.0.0.1")
            .collect();
        let mut args = settings.args(&listen.join(","));
        if admitted.is_some() {
            let hba = socket_dir.join("pg_hba.conf");
            write_hba(&data.join("pg_hba.conf"), &hba, &reach.admit)?;
            args.extend(["-c".to_string(), format!("hba_file={}", hba.display())]);
        }
        let mut cmd = Command::new(&postgres);
        cmd.arg("-D")
            .arg(data)
            .arg("-p")
            .arg(port.to_string())
            .arg("-k")
            .arg(&socket_dir)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::from(logf.try_clone()?))
            .stderr(Stdio::from(logf))
            .env("LC_ALL", "C");
        as_user(&mut cmd, who);
        pin_command(&mut cmd, &settings.cpus);
        let guard = ChildGuard::spawn("postgres", &mut cmd)?;
        let mut s = Server {
            guard: Some(guard),
            temp: None,
            data: data.to_path_buf(),
            socket_dir,
            port,
            version,
            log,
        };
        s.wait_ready(Duration::from_secs(60))?;
        if let Some(p) = admitted {
            s.set_superuser_password(p)?;
        }
        Ok(s)
    }

    /// The superuser logs in with `password` from the admitted hosts. Only its SCRAM
    /// verifier reaches the server (no log or statement holds the password); a kept
    /// cluster keeps the last run's verifier, of a password no one keeps.
    fn set_superuser_password(&self, password: &str) -> anyhow::Result<()> {
        let verifier = postgres_protocol::password::scram_sha_256(password.as_bytes());
        let mut c = connect(&self.config("postgres"))?;
        // Base64, `$` and `:` only; quoted as any literal all the same.
        c.batch_execute(&format!(
            "ALTER ROLE {SUPERUSER} PASSWORD '{}'",
            verifier.replace('\'', "''")
        ))
        .context("setting the run's password on the launched PostgreSQL")?;
        Ok(())
    }

    fn wait_ready(&mut self, timeout: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + timeout;
        let cfg = self.config("postgres");
        loop {
            match cfg.connect(postgres::NoTls) {
                Ok(_) => return Ok(()),
                Err(e) => {
                    if let Some(g) = self.guard.as_mut() {
                        if let Some(why) = g.exited() {
                            bail!("{why} while starting: {}", self.log_tail());
                        }
                    }
                    if Instant::now() >= deadline {
                        bail!(
                            "PostgreSQL did not accept connections within {timeout:?}: {e}; {}",
                            self.log_tail()
                        );
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
    }

    /// Last lines of the server log (for error messages).
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().rev().take(5).collect();
        let mut lines: Vec<&str> = lines.into_iter().rev().collect();
        lines.retain(|l| !l.trim().is_empty());
        format!("server log {}: {}", self.log.display(), lines.join(" | "))
    }

    /// Connection settings for database `db` over the unix socket.
    pub fn config(&self, db: &str) -> postgres::Config {
        let mut c = postgres::Config::new();
        c.host_path(&self.socket_dir)
            .port(self.port)
            .user(SUPERUSER)
            .dbname(db)
            .application_name("rackbench");
        c
    }

    /// The postmaster's pid (0 once stopped).
    pub fn pid(&self) -> u32 {
        self.guard.as_ref().map_or(0, ChildGuard::pid)
    }

    /// None while running, else why it is gone.
    pub fn exited(&mut self) -> Option<String> {
        self.guard.as_mut().and_then(ChildGuard::exited)
    }

    /// Fast shutdown (SIGINT: roll back sessions, checkpoint), then the guard's SIGTERM /
    /// SIGKILL if it hangs. Removes a throwaway cluster. Idempotent.
    pub fn stop(&mut self) {
        if let Some(mut g) = self.guard.take() {
            g.stop_after(libc::SIGINT, Duration::from_secs(20));
        }
        if let Some(t) = self.temp.take() {
            let sock = self.socket_dir.clone();
            drop(t);
            let _ = std::fs::remove_dir_all(sock);
        }
    }

    /// Stop and keep the data directory (`oltp build --dir`).
    pub fn is_throwaway(&self) -> bool {
        self.temp.is_some()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `dir`, made if missing, as a directory only the server's user (and root) enters:
/// mode 0700, owned by that user. A kept cluster's `DIR-sock` sits beside it, where
/// another user could have put a directory of theirs, or a symbolic link to one, to be
/// chowned and opened to the server's user: one owned by anyone but root, us or the
/// server's user is refused, and the directory is changed through its own handle
/// (no link followed, nothing swapped between the check and the change).
fn own_dir(dir: &Path, who: Option<&ServiceUser>) -> anyhow::Result<()> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    match std::fs::create_dir(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            return Err(e).with_context(|| format!("creating {}", dir.display()))
        }
        _ => {}
    }
    let not_ours = || {
        anyhow::anyhow!(
            "{} is not a directory of root, this user or the server's (a symbolic link, a \
             file, or another user's): remove it, and check who else can write beside the \
             cluster directory",
            dir.display()
        )
    };
    let handle = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(dir)
        .map_err(|_| not_ours())?;
    let owner = handle.metadata()?.uid();
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if owner != 0 && owner != me && Some(owner) != who.map(|u| u.uid) {
        return Err(not_ours());
    }
    handle.set_permissions(std::fs::Permissions::from_mode(0o700))?;
    if let Some(u) = who {
        std::os::unix::fs::fchown(&handle, Some(u.uid), Some(u.gid))
            .with_context(|| format!("giving {} to {}", dir.display(), u.name))?;
    }
    Ok(())
}

/// `path` created or truncated, never through a symbolic link (a log beside a kept
/// cluster, `DIR.log`, or the admitted hosts' `pg_hba.conf` in its socket directory,
/// which the server's user owns: a link there would have had another file overwritten).
fn create_no_follow(path: &Path) -> anyhow::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o600)
        .open(path)
        .with_context(|| {
            format!(
                "creating {} (a symbolic link is not followed: remove it)",
                path.display()
            )
        })
}

/// The cluster's own `pg_hba.conf` (`from`) after a line per admitted address (SCRAM:
/// the run's password), written to `to` (readable by the server's user). First: the
/// first line that matches decides, and a kept cluster's own `host ... trust` line
/// would have let the generators in without the password. Neither file is read or
/// written through a symbolic link (root copying a linked file into the server's user's
/// directory would hand it over).
fn write_hba(from: &Path, to: &Path, admit: &[String]) -> anyhow::Result<()> {
    use std::io::{Read, Write};
    use std::os::unix::fs::OpenOptionsExt;
    let mut own = String::new();
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(from)
        .and_then(|mut f| f.read_to_string(&mut own))
        .with_context(|| format!("reading {} (not through a link)", from.display()))?;
    let mut text = String::from("# rackbench: the load generators of this run\n");
    for a in admit {
        text.push_str(&format!("host all all {a} scram-sha-256\n"));
    }
    text.push_str(&own);
    let mut f = create_no_follow(to)?;
    f.write_all(text.as_bytes())
        .with_context(|| format!("writing {}", to.display()))?;
    f.set_permissions(std::fs::Permissions::from_mode(0o644))?;
    Ok(())
}

/// Parse a user's connection string (key=value or URL form). Errors never echo the
/// password.
/// The settings a PostgreSQL server runs with that move TPC-C's figures (durability,
/// memory, checkpoints), read from the server as it reports them (`128MB`, `off`), and
/// the ones `extra` names (`--pg-setting` keys): launched or given by `--dsn`, what it
/// really runs with is disclosed, not what rackbench would have set (acceptance pass J,
/// 1: a --dsn server with fsync off was published as fsync on). A name the server does
/// not know is left out.
pub fn persistence(c: &mut dyn crate::backend::Conn, extra: &[String]) -> Vec<(String, String)> {
    let mut names: Vec<String> = [
        "shared_buffers",
        "fsync",
        "synchronous_commit",
        "full_page_writes",
        "wal_level",
        "max_connections",
        "checkpoint_timeout",
        "max_wal_size",
        "work_mem",
        "huge_pages",
    ]
    .map(String::from)
    .to_vec();
    names.extend(
        extra
            .iter()
            .filter_map(|s| Some(s.split_once('=')?.0.trim().to_string())),
    );
    let mut out = Vec::new();
    for name in names {
        // A name from the user's flags is quoted as a literal, never spliced as SQL.
        let literal = name.replace('\'', "''");
        let sql = format!("SELECT current_setting('{literal}', true)");
        if let Ok(v) = c.query_text(&sql) {
            if !v.is_empty() && !out.iter().any(|(k, _)| *k == name) {
                out.push((name, v));
            }
        }
    }
    out
}

pub fn parse_dsn(dsn: &str) -> anyhow::Result<postgres::Config> {
    postgres::Config::from_str(dsn).map_err(|e| {
        anyhow::anyhow!(
            "bad --dsn `{}`: {e}. Example: --dsn 'host=127.0.0.1 port=5432 user=bench dbname=tpcc'",
            model::redact_secrets(dsn)
        )
    })
}

/// A copy of `base` pointing at another database.
pub fn with_db(base: &postgres::Config, db: &str) -> postgres::Config {
    let mut c = base.clone();
    c.dbname(db);
    c
}

/// Connect, with the error saying where (password redacted: postgres::Config's Debug hides it).
pub fn connect(cfg: &postgres::Config) -> anyhow::Result<postgres::Client> {
    cfg.connect(postgres::NoTls).map_err(|e| {
        let cause = connect_cause(&e, cfg);
        // As a user writes them (`hosts [Tcp("127.0.0.1")], port [1]` was the Debug form).
        let hosts: Vec<String> = cfg
            .get_hosts()
            .iter()
            .map(|h| match h {
                postgres::config::Host::Tcp(name) => name.clone(),
                postgres::config::Host::Unix(dir) => dir.display().to_string(),
            })
            .collect();
        let ports: Vec<String> = cfg.get_ports().iter().map(u16::to_string).collect();
        let or_default = |v: Vec<String>, default: &str| match v.is_empty() {
            true => default.to_string(),
            false => v.join(","),
        };
        anyhow::Error::new(e).context(format!(
            "connecting to PostgreSQL (database {}, host {}, port {}): {cause}",
            cfg.get_dbname().unwrap_or("?"),
            or_default(hosts, "default"),
            or_default(ports, "5432")
        ))
    })
}

/// An error and its sources, as one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut next = e.source();
    while let Some(s) = next {
        text.push_str(": ");
        text.push_str(&s.to_string());
        next = s.source();
    }
    text
}

/// Why a connection failed, in words that say what to do: a wrong password is not a
/// missing database, and a refused connection is neither.
pub fn connect_cause(e: &postgres::Error, cfg: &postgres::Config) -> String {
    use postgres::error::SqlState;
    let user = cfg.get_user().unwrap_or("(default)");
    let db = cfg.get_dbname().unwrap_or("(default)");
    if let Some(d) = e.as_db_error() {
        let code = d.code();
        return if *code == SqlState::INVALID_PASSWORD {
            format!("the password for user {user} was refused (check --dsn, PGPASSWORD or the password file)")
        } else if *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION {
            format!("PostgreSQL does not admit user {user} from here (its pg_hba.conf, or no such role)")
        } else if *code == SqlState::INVALID_CATALOG_NAME {
            format!(
                "database {db} does not exist: CREATE DATABASE it first, or name another in --dsn"
            )
        } else if *code == SqlState::TOO_MANY_CONNECTIONS {
            "the server has no connection slot left (raise max_connections, or use fewer virtual users)".into()
        } else {
            format!("the server said: {}", d.message())
        };
    }
    let io = std::error::Error::source(e)
        .and_then(|s| s.downcast_ref::<std::io::Error>())
        .map(std::io::Error::kind);
    match io {
        Some(std::io::ErrorKind::ConnectionRefused) => {
            "nothing accepts connections there (is PostgreSQL running, and are the host and port right?)".into()
        }
        Some(std::io::ErrorKind::NotFound) => {
            "no PostgreSQL socket at that path (is PostgreSQL running, and the host directory right?)".into()
        }
        Some(std::io::ErrorKind::TimedOut) => {
            "the connection timed out (is the host reachable from here?)".into()
        }
        _ if error_chain(e).contains("password missing") => format!(
            "the server asks user {user} for a password and none was given (put it in PGPASSWORD or the password file, not on the command line)"
        ),
        _ => "the connection failed".into(),
    }
}

/// A connection string with everything `cfg` says about where to connect and as whom
/// (hosts, ports, user, database, options, timeout) and never its password: what the
/// service hands the load generators, who add the password they were given, if any.
pub fn dsn_without_password(cfg: &postgres::Config) -> String {
    let hosts: Vec<String> = cfg
        .get_hosts()
        .iter()
        .map(|h| match h {
            postgres::config::Host::Tcp(s) => s.clone(),
            postgres::config::Host::Unix(p) => p.display().to_string(),
        })
        .collect();
    let ports: Vec<String> = cfg.get_ports().iter().map(u16::to_string).collect();
    let mut parts: Vec<(&str, String)> = Vec::new();
    if !hosts.is_empty() {
        parts.push(("host", hosts.join(",")));
    }
    if !ports.is_empty() {
        parts.push(("port", ports.join(",")));
    }
    if let Some(u) = cfg.get_user() {
        parts.push(("user", u.to_string()));
    }
    if let Some(d) = cfg.get_dbname() {
        parts.push(("dbname", d.to_string()));
    }
    if let Some(o) = cfg.get_options() {
        parts.push(("options", o.to_string()));
    }
    if let Some(t) = cfg.get_connect_timeout() {
        parts.push(("connect_timeout", t.as_secs().max(1).to_string()));
    }
    parts
        .into_iter()
        .map(|(k, v)| format!("{k}={}", quote_value(&v)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A key=value connection-string value, quoted when it must be.
fn quote_value(v: &str) -> String {
    if !v.is_empty() && !v.contains(|c: char| c.is_whitespace() || c == '\'' || c == '\\') {
        return v.to_string();
    }
    format!("'{}'", v.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// An endpoint the service handed out, with the password the job carries (if any).
pub fn endpoint_config(endpoint: &str, password: Option<&str>) -> anyhow::Result<postgres::Config> {
    let mut c = postgres::Config::from_str(endpoint).map_err(|e| {
        anyhow::anyhow!(
            "the oltp endpoint `{}` is not a connection string: {e}",
            model::redact_secrets(endpoint)
        )
    })?;
    if let Some(p) = password {
        if c.get_password().is_none() {
            c.password(p);
        }
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_says_where_and_never_the_password() {
        let c = parse_dsn("host=db1,/tmp/sock port=5433 user=bob password=s3cret dbname=tpcc_2")
            .unwrap();
        let e = dsn_without_password(&c);
        assert!(!e.contains("s3cret"), "{e}");
        let back = endpoint_config(&e, Some("pw")).unwrap();
        assert_eq!(back.get_dbname(), Some("tpcc_2"));
        assert_eq!(back.get_user(), Some("bob"));
        assert_eq!(back.get_hosts(), c.get_hosts());
        assert_eq!(back.get_password(), Some(&b"pw"[..]));
        let q = parse_dsn("host='/tmp/a b' user=x dbname=y").unwrap();
        let back = endpoint_config(&dsn_without_password(&q), None).unwrap();
        assert_eq!(back.get_hosts(), q.get_hosts());
        assert_eq!(back.get_password(), None);
    }

    /// Every legal spelling of a password the postgres crate accepts is hidden by
    /// `redact_secrets`, and what is left still says where and as whom.
    #[test]
    fn every_spelling_the_postgres_crate_reads_is_redacted() {
        let forms = [
            "host=db user=bob password=Zq9pw dbname=tpcc",
            "host=db user=bob password = Zq9pw dbname=tpcc",
            "host=db user=bob password\t=\tZq9pw dbname=tpcc",
            r"host=db user=bob password='Zq9 p\'w\\x' dbname=tpcc",
            r"host=db user=bob password=Zq9\ pw dbname=tpcc",
            "password='Zq9pw' host=db user=bob dbname=tpcc",
            "postgresql://bob:Zq9pw@db/tpcc",
            "postgres://bob:Zq9%20p%40w%3A@db:5432/tpcc",
            "postgresql://bob@db/tpcc?password=Zq9pw&sslmode=disable",
            "postgresql://bob@db/tpcc?pass%77ord=Zq9pw",
            "postgresql://bob:Zq9pw@db:5432,db2:5433/tpcc?connect_timeout=5",
            "postgresql://%62ob@db/tpcc?password=Zq9%20pw",
        ];
        for dsn in forms {
            let c = postgres::Config::from_str(dsn).unwrap_or_else(|e| panic!("{dsn}: {e}"));
            let pw = String::from_utf8(c.get_password().expect(dsn).to_vec()).unwrap();
            assert!(pw.starts_with("Zq9"), "{dsn}: {pw}");
            let r = model::redact_secrets(dsn);
            assert!(!r.contains("Zq9"), "{dsn} -> {r}");
            let back = postgres::Config::from_str(&r).unwrap_or_else(|e| panic!("{r}: {e}"));
            assert_eq!(back.get_hosts(), c.get_hosts(), "{r}");
            assert_eq!(back.get_ports(), c.get_ports(), "{r}");
            assert_eq!(back.get_user(), c.get_user(), "{r}");
            assert_eq!(back.get_dbname(), c.get_dbname(), "{r}");
            assert_eq!(back.get_password(), Some(&b"***"[..]), "{r}");
            // The error a bad DSN gives does not echo it either.
            let bad = format!("{dsn} port=notaport");
            if let Err(e) = parse_dsn(&bad) {
                assert!(!format!("{e:#}").contains("Zq9"), "{e:#}");
            }
        }
    }

    /// initdb runs under the command runner now: what it says when it fails still
    /// reaches the error.
    #[test]
    fn an_initdb_failure_says_why() {
        if find_pg_binary("initdb").is_err() {
            eprintln!("skipping: PostgreSQL is not installed");
            return;
        }
        let t = engine::scratch::tempdir("rackbench-test-").unwrap();
        let data = t.path().join("data");
        std::fs::create_dir(&data).unwrap();
        std::fs::write(data.join("stray"), "x").unwrap();
        let e = format!("{:#}", init_cluster(&data).unwrap_err());
        assert!(e.starts_with("initdb failed (exit status: 1)"), "{e}");
        assert!(e.contains("not empty"), "{e}");
    }

    #[test]
    fn the_socket_dir_and_log_beside_a_kept_cluster_follow_no_link() {
        let t = tempfile::tempdir().unwrap();
        let elsewhere = t.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("file"), "keep").unwrap();
        let sock = t.path().join("tpcc-sock");
        std::os::unix::fs::symlink(&elsewhere, &sock).unwrap();
        let e = own_dir(&sock, None).unwrap_err();
        assert!(format!("{e:#}").contains("not a directory"), "{e:#}");
        let log = t.path().join("tpcc.log");
        std::os::unix::fs::symlink(elsewhere.join("file"), &log).unwrap();
        assert!(create_no_follow(&log).is_err());
        assert_eq!(
            std::fs::read_to_string(elsewhere.join("file")).unwrap(),
            "keep"
        );
        // Made, or found as a directory of its own: both fine.
        let fresh = t.path().join("fresh-sock");
        own_dir(&fresh, None).unwrap();
        own_dir(&fresh, None).unwrap();
        let mode = std::fs::metadata(&fresh).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
        // Another user's directory is not taken over (as root, who could chown it).
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            let theirs = t.path().join("theirs-sock");
            std::fs::create_dir(&theirs).unwrap();
            std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
            assert!(own_dir(&theirs, None).is_err());
            let mode = std::fs::metadata(&theirs).unwrap().permissions().mode();
            assert_ne!(mode & 0o777, 0o700, "{mode:o}");
        }
        create_no_follow(&t.path().join("fresh.log")).unwrap();
    }

    #[test]
    fn reach_admits_the_subnet_and_the_generators_off_loopback_only() {
        let r = Reach::at("127.0.0.1", &["10.0.0.2".into()], Some("pw")).unwrap();
        assert_eq!((r.listen, r.admit), ("127.0.0.1".into(), vec![]));
        let r = Reach::at(
            "10.0.0.1",
            &["10.0.0.2".into(), "gen-b".into(), "10.0.0.2".into()],
            Some("Zq9run"),
        )
        .unwrap();
        assert_eq!(r.listen, "127.0.0.1,10.0.0.1");
        assert_eq!(r.admit, vec!["samenet".to_string(), "10.0.0.2/32".into()]);
        assert_eq!(r.admitted_password().unwrap(), Some("Zq9run"));
        assert!(!format!("{r:?}").contains("Zq9"), "{r:?}");
        assert!(Reach::at("10.0.0.1", &[], Some(""))
            .unwrap()
            .password
            .is_none());
        assert!(Reach::at("not-an-ip", &[], None).is_err());
    }
}
