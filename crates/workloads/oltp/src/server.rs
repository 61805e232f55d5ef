//! The PostgreSQL server under test: a throwaway cluster rackbench creates itself
//! (`initdb` on a temp dir, a free port, settings from the plan, pinned, killed with us,
//! removed afterwards), a kept cluster directory (`oltp build --dir`, reused by many runs),
//! or a server given by a connection string (never stored or printed with its password).
//!
//! PostgreSQL refuses to run as root, so when rackbench is root the cluster is owned by and
//! runs as the `postgres` system user (or `nobody` when that user does not exist).

use std::ffi::CString;
use std::fs::File;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::str::FromStr;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use engine::launch::{free_port, pin_command, ChildGuard};

/// The superuser name every launched cluster is initialised with (trust auth, loopback only).
pub const SUPERUSER: &str = "postgres";

const INSTALL_HINT: &str = "Install PostgreSQL (Debian/Ubuntu: `apt-get install postgresql`), \
     or give a running server with --dsn 'host=... user=... dbname=...'";

/// Find a PostgreSQL server binary: on PATH first, then the newest `/usr/lib/postgresql/*/bin`
/// (Debian keeps initdb and postgres off PATH).
pub fn find_pg_binary(name: &str) -> anyhow::Result<PathBuf> {
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
            if p.is_file() {
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

impl Settings {
    fn args(&self) -> Vec<String> {
        let mut v: Vec<(String, String)> = vec![
            ("listen_addresses".into(), "127.0.0.1".into()),
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
#[derive(Debug, Clone, Copy)]
struct RunAs {
    uid: u32,
    gid: u32,
}

fn run_as() -> Option<RunAs> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    for name in ["postgres", "nobody"] {
        let Ok(c) = CString::new(name) else { continue };
        // SAFETY: getpwnam returns a pointer to static storage or null; we copy out at once.
        let pw = unsafe { libc::getpwnam(c.as_ptr()) };
        if !pw.is_null() {
            // SAFETY: pw is non-null and points to a valid passwd record.
            let (uid, gid) = unsafe { ((*pw).pw_uid, (*pw).pw_gid) };
            return Some(RunAs { uid, gid });
        }
    }
    None
}

fn chown(path: &Path, who: Option<RunAs>) -> anyhow::Result<()> {
    if let Some(r) = who {
        std::os::unix::fs::chown(path, Some(r.uid), Some(r.gid))
            .with_context(|| format!("chown {} to uid {}", path.display(), r.uid))?;
    }
    Ok(())
}

fn as_user(cmd: &mut Command, who: Option<RunAs>) {
    if let Some(r) = who {
        cmd.uid(r.uid).gid(r.gid);
        // initdb/postgres look at HOME only for psqlrc-like files; keep them out of /root.
        cmd.env("HOME", "/tmp");
    }
}

/// Create a new cluster in `data` (which must not exist or be empty).
pub fn init_cluster(data: &Path) -> anyhow::Result<()> {
    let initdb = find_pg_binary("initdb")?;
    let who = run_as();
    std::fs::create_dir_all(data).with_context(|| format!("creating {}", data.display()))?;
    std::fs::set_permissions(data, std::fs::Permissions::from_mode(0o700))?;
    chown(data, who)?;
    // The user must be able to reach the directory through its parents.
    if who.is_some() {
        if let Some(parent) = data.parent() {
            let mode = std::fs::metadata(parent)?.permissions().mode();
            if mode & 0o005 != 0o005 {
                std::fs::set_permissions(parent, std::fs::Permissions::from_mode(mode | 0o755))?;
            }
        }
    }
    let mut cmd = Command::new(&initdb);
    cmd.arg("-D")
        .arg(data)
        .args(["-U", SUPERUSER, "--auth=trust", "-E", "UTF8", "--locale=C"])
        // Durability of the initial files does not matter for a benchmark cluster.
        .arg("--no-sync")
        .stdin(Stdio::null())
        .env("LC_ALL", "C");
    as_user(&mut cmd, who);
    let out = cmd
        .output()
        .with_context(|| format!("running {}", initdb.display()))?;
    if !out.status.success() {
        bail!(
            "initdb failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// A running PostgreSQL we started.
pub struct Server {
    guard: Option<ChildGuard>,
    /// Kept alive (and so not removed) until the server is stopped.
    temp: Option<tempfile::TempDir>,
    pub data: PathBuf,
    pub socket_dir: PathBuf,
    pub port: u16,
    pub version: String,
    log: PathBuf,
}

impl Server {
    /// A new throwaway cluster in a temp dir, removed when the server is stopped.
    pub fn throwaway(settings: &Settings) -> anyhow::Result<Server> {
        let temp = tempfile::Builder::new()
            .prefix("rackbench-oltp-")
            .tempdir()
            .context("creating a temp dir for the PostgreSQL cluster")?;
        let data = temp.path().join("data");
        init_cluster(&data)?;
        let mut s = Server::start(&data, settings)?;
        s.temp = Some(temp);
        Ok(s)
    }

    /// Start PostgreSQL on an existing cluster directory (kept afterwards).
    pub fn start(data: &Path, settings: &Settings) -> anyhow::Result<Server> {
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
        let version = std::fs::read_to_string(data.join("PG_VERSION"))
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
        // The socket lives next to the data dir, in a directory the server user owns.
        let socket_dir = data.with_file_name(format!(
            "{}-sock",
            data.file_name()
                .map_or("pg".into(), |f| f.to_string_lossy())
        ));
        std::fs::create_dir_all(&socket_dir)?;
        chown(&socket_dir, who)?;
        let log = data.with_file_name(format!(
            "{}.log",
            data.file_name()
                .map_or("pg".into(), |f| f.to_string_lossy())
        ));
        let logf = File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let port = free_port()?;
        let mut cmd = Command::new(&postgres);
        cmd.arg("-D")
            .arg(data)
            .arg("-p")
            .arg(port.to_string())
            .arg("-k")
            .arg(&socket_dir)
            .args(settings.args())
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
        Ok(s)
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
            let pid = g.pid();
            if g.exited().is_none() && pid != 0 {
                // SAFETY: kill(2) on our own unreaped child.
                unsafe {
                    libc::kill(pid as i32, libc::SIGINT);
                }
                let deadline = Instant::now() + Duration::from_secs(20);
                while g.exited().is_none() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            g.stop(Duration::from_secs(2));
        }
        if let Some(t) = self.temp.take() {
            let sock = self.socket_dir.clone();
            let _ = t.close();
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

/// Parse a user's connection string (key=value or URL form). Errors never echo the
/// password.
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
    cfg.connect(postgres::NoTls).with_context(|| {
        format!(
            "connecting to PostgreSQL (database {:?}, hosts {:?}, port {:?})",
            cfg.get_dbname().unwrap_or("?"),
            cfg.get_hosts(),
            cfg.get_ports()
        )
    })
}
