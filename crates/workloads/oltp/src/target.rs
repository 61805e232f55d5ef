//! Where the TPC-C databases live: a server rackbench launched (PostgreSQL: throwaway or
//! a kept cluster directory; MariaDB: throwaway) or one given by `--dsn`; building each
//! database (reusing a matching build, copying the first build for the others where the
//! engine can, PostgreSQL's CREATE DATABASE ... TEMPLATE) and checking them. Everything
//! past the launch goes through the engine's [`Backend`].

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use crate::backend::{Backend, Conn, EngineKind};
use crate::mariadb::MyDb;
use crate::mariadb_server::Mariadbd;
use crate::populate::{self, BuildMeta};
use crate::server::{self, Reach, Server};
use crate::{check, schema, space, Config};

/// A server rackbench launched, of either engine.
pub enum Launched {
    Pg(Server),
    Maria(Mariadbd),
}

impl Launched {
    pub fn pid(&self) -> u32 {
        match self {
            Launched::Pg(s) => s.pid(),
            Launched::Maria(s) => s.pid(),
        }
    }

    pub fn exited(&mut self) -> Option<String> {
        match self {
            Launched::Pg(s) => s.exited(),
            Launched::Maria(s) => s.exited(),
        }
    }

    pub fn stop(&mut self) {
        match self {
            Launched::Pg(s) => s.stop(),
            Launched::Maria(s) => s.stop(),
        }
    }
}

/// Where the databases live: a server we launched (or none: `--dsn`), and how to connect.
pub struct Target {
    pub server: Option<Launched>,
    pub engine: EngineKind,
    base: Box<dyn Backend>,
    /// A database to connect to for CREATE/DROP DATABASE.
    maintenance_db: String,
    /// Database names, index 0 = database 1.
    pub dbs: Vec<String>,
    /// Shown instead of the connection string (never the password).
    pub describe: String,
    /// The kept cluster directory (`--cluster-dir`, `oltp build --dir`) the server runs.
    kept_dir: Option<PathBuf>,
}

impl Target {
    /// Launch or reach the server `cfg` names, here and for here alone (loopback; the
    /// password from the DSN, else PGPASSWORD, else the password file). `create_dir`: a
    /// missing `--cluster-dir` is initialised (build) rather than an error (check).
    pub fn open(cfg: &Config, create_dir: bool) -> anyhow::Result<Target> {
        let password = match &cfg.dsn {
            Some(dsn) if cfg.engine_kind()? == EngineKind::Mariadb => mysql_env_password(),
            Some(dsn) => default_password(&server::parse_dsn(dsn)?),
            None => None,
        };
        Target::open_at(cfg, create_dir, &Reach::loopback(), password.as_deref())
    }

    /// [`Target::open`] with a launched server reachable as `reach` says, and
    /// `password` for a `--dsn` that names none.
    pub fn open_at(
        cfg: &Config,
        create_dir: bool,
        reach: &Reach,
        password: Option<&str>,
    ) -> anyhow::Result<Target> {
        let engine = cfg.engine_kind()?;
        if engine == EngineKind::Mariadb {
            return Target::open_mariadb(cfg, reach, password);
        }
        let settings = cfg.settings()?;
        let kept_dir = cfg
            .cluster_dir
            .as_ref()
            .filter(|_| cfg.dsn.is_none())
            .map(PathBuf::from);
        let (server, base, maintenance_db, first, describe) = if let Some(dsn) = &cfg.dsn {
            let mut base = server::parse_dsn(dsn)?;
            if let (None, Some(p)) = (base.get_password(), password) {
                base.password(p);
            }
            let first = base.get_dbname().unwrap_or("tpcc").to_string();
            let describe = model::redact_secrets(dsn);
            (None, base, first.clone(), first, describe)
        } else {
            // A build's size is known before anything is made: refused here when the
            // cluster's file system has no room for it (a --dsn server's is not known).
            if create_dir {
                match &cfg.cluster_dir {
                    Some(d) => {
                        space::ensure_room(Path::new(d), true, cfg.warehouses, cfg.databases)?
                    }
                    None => space::ensure_room(
                        &std::env::temp_dir(),
                        false,
                        cfg.warehouses,
                        cfg.databases,
                    )?,
                }
            }
            let s = match &cfg.cluster_dir {
                Some(dir) => {
                    let dir = PathBuf::from(dir);
                    if !dir.join("PG_VERSION").is_file() {
                        if !create_dir {
                            bail!(
                                "{} holds no PostgreSQL cluster; create one with \
                                 `rackbench oltp build --dir {} --warehouses N`",
                                dir.display(),
                                dir.display()
                            );
                        }
                        if dir.exists() && dir.read_dir()?.next().is_some() {
                            bail!(
                                "{} exists and is not empty nor a PostgreSQL cluster",
                                dir.display()
                            );
                        }
                        server::init_cluster(&dir)?;
                    }
                    Server::start_at(&dir, &settings, reach)?
                }
                None => Server::throwaway_at(&settings, reach)?,
            };
            let base = s.config("postgres");
            let describe = format!(
                "PostgreSQL {} launched on {} (port {})",
                s.version,
                s.data.display(),
                s.port
            );
            (
                Some(Launched::Pg(s)),
                base,
                "postgres".to_string(),
                "tpcc".to_string(),
                describe,
            )
        };
        Ok(Target {
            server,
            engine,
            base: Box::new(base),
            maintenance_db,
            dbs: db_names(&first, cfg.databases),
            describe,
            kept_dir,
        })
    }

    /// MariaDB: a throwaway `mariadbd` (reachable as `reach` says), or the server
    /// `--dsn` names.
    fn open_mariadb(cfg: &Config, reach: &Reach, password: Option<&str>) -> anyhow::Result<Target> {
        if let Some(dsn) = &cfg.dsn {
            let base = MyDb::from_dsn(dsn, password)?;
            let first = match base.db_name().as_str() {
                "?" | "" => "tpcc".to_string(),
                d => d.to_string(),
            };
            return Ok(Target {
                server: None,
                engine: EngineKind::Mariadb,
                base: base.with_db(&first),
                maintenance_db: first.clone(),
                dbs: db_names(&first, cfg.databases),
                describe: model::redact_secrets(dsn),
                kept_dir: None,
            });
        }
        let s = Mariadbd::throwaway_at(&cfg.mariadb_settings()?, reach)?;
        let describe = format!(
            "MariaDB {} launched on {} (port {})",
            s.version,
            s.socket.display(),
            s.port
        );
        Ok(Target {
            base: Box::new(s.backend("tpcc")),
            server: Some(Launched::Maria(s)),
            engine: EngineKind::Mariadb,
            maintenance_db: "mysql".into(),
            dbs: db_names("tpcc", cfg.databases),
            describe,
            kept_dir: None,
        })
    }

    /// Connection settings of database `db` (any engine).
    pub fn backend(&self, db: &str) -> Box<dyn Backend> {
        self.base.with_db(db)
    }

    /// A connection to database `db`.
    pub fn connect(&self, db: &str) -> anyhow::Result<Box<dyn Conn>> {
        self.backend(db).connect()
    }

    /// One connection string per database for load generators, never with a password.
    /// A launched server of a single-host run (on loopback) is reached over its socket,
    /// as a single-host run always was; one on a network address (the system under test
    /// of a many-host run) over TCP to that address only: generators whose host shares
    /// its file system (network namespaces, containers over one /tmp) took the socket,
    /// and a run read as TPC-C over the network with its NICs idle.
    pub fn endpoints(&self, bind_ip: &str) -> Vec<String> {
        self.dbs
            .iter()
            .map(|db| match &self.server {
                Some(Launched::Pg(s)) => {
                    let mut c = postgres::Config::new();
                    if is_loopback(bind_ip) {
                        c.host_path(&s.socket_dir);
                    } else {
                        c.host(bind_ip);
                    }
                    c.port(s.port).user(server::SUPERUSER).dbname(db);
                    server::dsn_without_password(&c)
                }
                // Off loopback, TCP to the address (a generator elsewhere has no socket).
                Some(Launched::Maria(s)) if !is_loopback(bind_ip) => {
                    MyDb::launched_tcp(bind_ip, s.port, db).endpoint()
                }
                _ => self.backend(db).endpoint(),
            })
            .collect()
    }

    /// Make every database hold a build of `warehouses` (reusing a matching one unless
    /// `force`). Returns one line per database saying what was done. With
    /// `check_reused` (a run), a build reused is checked first (see
    /// [`Target::check_reused`]).
    pub fn ensure_built(
        &mut self,
        warehouses: u32,
        threads: usize,
        seed: u64,
        force: bool,
        check_reused: bool,
        note: &dyn Fn(&str),
    ) -> anyhow::Result<Vec<(String, BuildMeta, Option<populate::BuildInfo>)>> {
        // The admin connection sits in the `postgres` database when it can: a database
        // used as a TEMPLATE must have no other sessions.
        // Its error says the true cause (a refused password, a refused connection, a
        // missing database): the second attempt's, which names the user's own database.
        let admin_db = match self.engine {
            EngineKind::Postgresql => "postgres",
            EngineKind::Mariadb => "mysql",
        };
        let mut admin = match self.connect(admin_db) {
            Ok(c) => c,
            Err(_) => self.connect(&self.maintenance_db).with_context(|| {
                if self.server.is_none() {
                    "connecting to the server --dsn names"
                } else {
                    "connecting to the launched server"
                }
            })?,
        };
        // The database a --dsn names is the user's: we never drop or create it.
        let dsn_db = self.server.is_none().then(|| self.maintenance_db.clone());
        let mut out = Vec::new();
        let mut template: Option<String> = None;
        for db in self.dbs.clone() {
            let exists = admin.database_exists(&db)?;
            let users_db = dsn_db.as_deref() == Some(db.as_str());
            if users_db && !exists {
                bail!("database {db} named in --dsn does not exist: CREATE DATABASE it first");
            }
            if exists {
                let mut c = self.connect(&db)?;
                let meta = populate::read_meta(&mut *c)?;
                if let Some(m) = &meta {
                    if !force
                        && m.warehouses == warehouses
                        && m.schema_version == schema::SCHEMA_VERSION
                    {
                        note(&format!(
                            "oltp: reusing the build in database {db} ({warehouses} warehouses)"
                        ));
                        if check_reused {
                            self.check_reused(&db, &mut *c, warehouses, note)?;
                        }
                        out.push((db.clone(), m.clone(), None));
                        template.get_or_insert(db.clone());
                        continue;
                    }
                }
                if !force {
                    let tables = c.query_text(self.engine.dialect().user_tables)?;
                    refuse_to_replace(&db, meta.as_ref(), &tables, warehouses)?;
                }
                if users_db {
                    c.batch(self.engine.dialect().drop_tables)?;
                } else {
                    drop(c);
                    admin.drop_database(&db)?;
                }
            }
            if !users_db {
                // A copy of an existing build is far faster than a new load.
                if let Some(t) = template.as_ref().filter(|_| !force) {
                    match admin.copy_database(&db, t) {
                        Ok(true) => {
                            note(&format!("oltp: copied database {t} to {db}"));
                            let mut c = self.connect(&db)?;
                            let m = populate::read_meta(&mut *c)?
                                .context("the template database lost its build metadata")?;
                            out.push((db.clone(), m, None));
                            continue;
                        }
                        Ok(false) => {}
                        Err(e) => note(&format!(
                            "oltp: cannot copy {t} ({e:#}); loading {db} instead"
                        )),
                    }
                }
                admin.create_database(&db)?;
            }
            note(&format!(
                "oltp: building database {db}: {warehouses} warehouses"
            ));
            let info = populate::build(&*self.backend(&db), warehouses, threads, seed)?;
            let m = BuildMeta {
                warehouses,
                c_load: info.c_load,
                schema_version: schema::SCHEMA_VERSION.into(),
            };
            note(&format!(
                "oltp: database {db} loaded in {:.1} s, indexed in {:.1} s",
                info.load_s, info.index_s
            ));
            out.push((db.clone(), m, Some(info)));
            template = Some(db.clone());
        }
        Ok(out)
    }

    /// A build about to be reused by a run holds, before the run, the consistency
    /// conditions the check after it judges (TPC-C verifies them before and after the
    /// test, 3.3.3): else the run is refused before anything runs, as the check after it
    /// would flag the result for damage that predates it (acceptance audit: `w_ytd` and
    /// `d_next_o_id` altered by hand in a kept cluster, and a run then flagged
    /// `consistency` three times). Checked before any other database is copied from it.
    ///
    /// The same conditions as after the run ([`check::run`]), at the same cost: scans of
    /// every table, order lines the largest (0.3 s for one warehouse on a 2-CPU test machine's
    /// PostgreSQL, growing with the warehouses: minutes for hundreds). `--check false`
    /// skips both.
    fn check_reused(
        &self,
        db: &str,
        c: &mut dyn Conn,
        warehouses: u32,
        note: &dyn Fn(&str),
    ) -> anyhow::Result<()> {
        let started = std::time::Instant::now();
        let failed: Vec<check::CheckResult> = check::run(c, false)?
            .into_iter()
            .filter(|r| !r.passed())
            .collect();
        if failed.is_empty() {
            note(&format!(
                "oltp: the build in database {db} holds the consistency conditions (checked \
                 in {:.1} s)",
                started.elapsed().as_secs_f64()
            ));
            return Ok(());
        }
        let conditions: Vec<String> = failed.iter().map(check::CheckResult::failure).collect();
        // The commands to type, where the build lives (a --dsn is not repeated: its
        // password would be).
        let (build, check) = match &self.kept_dir {
            Some(dir) => (
                format!(
                    " (or `rackbench oltp build --dir {} --warehouses {warehouses} --rebuild`)",
                    dir.display()
                ),
                format!("`rackbench oltp check --dir {}`", dir.display()),
            ),
            None => (
                String::new(),
                "`rackbench oltp check` with the same --dsn".to_string(),
            ),
        };
        bail!(
            "database {db}: the build this run would reuse is inconsistent before the run \
             (TPC-C clause 3.3.2): {}; nothing was run, as the check after it would blame \
             the run for it. Give --rebuild to drop it and build {warehouses} warehouses \
             again{build}, or see which rows with {check}",
            conditions.join("; ")
        )
    }

    /// Run the consistency check on every database.
    pub fn check(&self, initial: bool) -> anyhow::Result<Vec<(String, Vec<check::CheckResult>)>> {
        self.kept_dir_has_every_database()?;
        let mut out = Vec::new();
        for db in &self.dbs {
            let mut c = self.connect(db)?;
            if populate::read_meta(&mut *c)?.is_none() {
                bail!("database {db} holds no TPC-C build; run `rackbench oltp build` first");
            }
            out.push((db.clone(), check::run(&mut *c, initial)?));
        }
        Ok(out)
    }

    /// A kept cluster asked for more databases than it was built with: the next command
    /// is a build of them, which the connection's own error (CREATE DATABASE, or name
    /// another in --dsn) does not say.
    fn kept_dir_has_every_database(&self) -> anyhow::Result<()> {
        let Some(dir) = &self.kept_dir else {
            return Ok(());
        };
        let mut admin = self.connect("postgres")?;
        let Some(missing) = self
            .dbs
            .iter()
            .position(|db| !admin.database_exists(db).unwrap_or(true))
        else {
            return Ok(());
        };
        // The warehouses of the build that is there, for the command to type.
        let warehouses = (missing > 0)
            .then(|| self.connect(&self.dbs[0]).ok())
            .flatten()
            .and_then(|mut c| populate::read_meta(&mut *c).ok().flatten())
            .map_or("N".to_string(), |m| m.warehouses.to_string());
        let dir = dir.display();
        let mut msg = format!(
            "database {} does not exist in the cluster in {dir}: build it with \
             `rackbench oltp build --dir {dir} --warehouses {warehouses} --databases {}`",
            self.dbs[missing],
            self.dbs.len()
        );
        if missing > 0 {
            msg.push_str(&format!(
                ", or check the {missing} there with --databases {missing}"
            ));
        }
        bail!(msg)
    }

    pub fn stop(&mut self) {
        if let Some(s) = self.server.as_mut() {
            s.stop();
        }
    }
}

fn is_loopback(ip: &str) -> bool {
    ip.parse::<std::net::IpAddr>()
        .map(|a| a.is_loopback())
        .unwrap_or(false)
}

/// Database names: the first, then `first_2`, `first_3`...
fn db_names(first: &str, databases: u32) -> Vec<String> {
    (1..=databases)
        .map(|n| {
            if n == 1 {
                first.to_string()
            } else {
                format!("{first}_{n}")
            }
        })
        .collect()
}

/// MYSQL_PWD, the MySQL and MariaDB clients' password for a URL that names none (the
/// password is never read from the command line).
pub fn mysql_env_password() -> Option<String> {
    std::env::var("MYSQL_PWD").ok().filter(|p| !p.is_empty())
}

/// The password libpq would use for `dsn`, a connection string that names none:
/// PGPASSWORD, else the password file's line for its host, port, database and user
/// (the postgres crate reads neither). Looked up once, for the DSN's own database, and
/// used for every database of the run.
pub fn default_password(dsn: &postgres::Config) -> Option<String> {
    env_password().or_else(|| {
        crate::pgpass::password_for(dsn, &|w| engine::errln!("rackbench: warning: {w}"))
    })
}

/// PGPASSWORD, libpq's password for a connection string that names none.
pub fn env_password() -> Option<String> {
    std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty())
}

/// Why an existing database `db` is not replaced without `--rebuild`: a build of
/// another size or schema took hours to load and is dropped only when asked (a
/// forgotten `--warehouses` silently dropped one), and a database holding tables that
/// are no build of rackbench's is someone's data (a user's `customer` table was
/// dropped). Ok when it holds nothing: an empty database is built into.
fn refuse_to_replace(
    db: &str,
    meta: Option<&BuildMeta>,
    tables: &str,
    warehouses: u32,
) -> anyhow::Result<()> {
    match meta {
        Some(m) if m.schema_version != schema::SCHEMA_VERSION => bail!(
            "database {db} holds a build of an older schema ({}, this rackbench builds {}): \
             give --rebuild to drop it and build {warehouses} warehouses",
            m.schema_version,
            schema::SCHEMA_VERSION
        ),
        Some(m) => bail!(
            "database {db} holds a build of {} warehouses, not {warehouses}: give \
             --warehouses {} to use it, or --rebuild to drop it and build {warehouses}",
            m.warehouses,
            m.warehouses
        ),
        None if !tables.trim().is_empty() => bail!(
            "database {db} holds tables that are no rackbench build ({}): rackbench builds \
             only into an empty database or over a build of its own; give it a database of \
             its own (CREATE DATABASE), or --rebuild to drop its TPC-C tables (a build that \
             stopped before its end leaves them)",
            tables.trim()
        ),
        None => Ok(()),
    }
}
