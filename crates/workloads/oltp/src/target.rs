//! Where the TPC-C databases live: a server rackbench launched (throwaway or a kept
//! cluster directory) or one given by `--dsn`; building each database (reusing a matching
//! build, copying the first build for the others with CREATE DATABASE ... TEMPLATE) and
//! checking them.

use std::path::PathBuf;

use anyhow::{bail, Context};

use crate::populate::{self, BuildMeta};
use crate::server::{self, Reach, Server};
use crate::{check, schema, Config};

/// Where the databases live: a server we launched (or none: `--dsn`), and how to connect.
pub struct Target {
    pub server: Option<Server>,
    base: postgres::Config,
    /// A database to connect to for CREATE/DROP DATABASE.
    maintenance_db: String,
    /// Database names, index 0 = database 1.
    pub dbs: Vec<String>,
    /// Shown instead of the connection string (never the password).
    pub describe: String,
}

impl Target {
    /// Launch or reach the server `cfg` names, here and for here alone (loopback; the
    /// password from the DSN, else PGPASSWORD, else the password file). `create_dir`: a
    /// missing `--cluster-dir` is initialised (build) rather than an error (check).
    pub fn open(cfg: &Config, create_dir: bool) -> anyhow::Result<Target> {
        let password = match &cfg.dsn {
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
        let settings = cfg.settings()?;
        let (server, base, maintenance_db, first, describe) = if let Some(dsn) = &cfg.dsn {
            let mut base = server::parse_dsn(dsn)?;
            if let (None, Some(p)) = (base.get_password(), password) {
                base.password(p);
            }
            let first = base.get_dbname().unwrap_or("tpcc").to_string();
            let describe = model::redact_secrets(dsn);
            (None, base, first.clone(), first, describe)
        } else {
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
                Some(s),
                base,
                "postgres".to_string(),
                "tpcc".to_string(),
                describe,
            )
        };
        let dbs = (1..=cfg.databases)
            .map(|n| {
                if n == 1 {
                    first.clone()
                } else {
                    format!("{first}_{n}")
                }
            })
            .collect();
        Ok(Target {
            server,
            base,
            maintenance_db,
            dbs,
            describe,
        })
    }

    pub fn config(&self, db: &str) -> postgres::Config {
        server::with_db(&self.base, db)
    }

    /// One connection string per database for load generators, never with a password.
    /// A launched server's name its socket first and then `bind_ip`: a generator on
    /// this host connects over the socket as a single-host run always did, one
    /// elsewhere finds no such socket and connects over the network.
    pub fn endpoints(&self, bind_ip: &str) -> Vec<String> {
        self.dbs
            .iter()
            .map(|db| match &self.server {
                Some(s) => {
                    let mut c = postgres::Config::new();
                    c.host_path(&s.socket_dir)
                        .host(bind_ip)
                        .port(s.port)
                        .user(server::SUPERUSER)
                        .dbname(db);
                    server::dsn_without_password(&c)
                }
                None => server::dsn_without_password(&self.config(db)),
            })
            .collect()
    }

    fn database_exists(&self, admin: &mut postgres::Client, db: &str) -> anyhow::Result<bool> {
        Ok(admin
            .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&db])?
            .is_some())
    }

    /// Make every database hold a build of `warehouses` (reusing a matching one unless
    /// `force`). Returns one line per database saying what was done.
    pub fn ensure_built(
        &mut self,
        warehouses: u32,
        threads: usize,
        seed: u64,
        force: bool,
        note: &dyn Fn(&str),
    ) -> anyhow::Result<Vec<(String, BuildMeta, Option<populate::BuildInfo>)>> {
        // The admin connection sits in the `postgres` database when it can: a database
        // used as a TEMPLATE must have no other sessions.
        let mut admin = match server::connect(&self.config("postgres")) {
            Ok(c) => c,
            Err(_) => server::connect(&self.config(&self.maintenance_db)).with_context(|| {
                if self.server.is_none() {
                    "the database named in --dsn must exist (CREATE DATABASE it first)"
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
            let exists = self.database_exists(&mut admin, &db)?;
            let users_db = dsn_db.as_deref() == Some(db.as_str());
            if users_db && !exists {
                bail!("database {db} named in --dsn does not exist: CREATE DATABASE it first");
            }
            if exists {
                let mut c = server::connect(&self.config(&db))?;
                let meta = populate::read_meta(&mut c)?;
                if let Some(m) = meta {
                    if !force
                        && m.warehouses == warehouses
                        && m.schema_version == schema::SCHEMA_VERSION
                    {
                        note(&format!(
                            "oltp: reusing the build in database {db} ({warehouses} warehouses)"
                        ));
                        out.push((db.clone(), m, None));
                        template.get_or_insert(db.clone());
                        continue;
                    }
                }
                if users_db {
                    c.batch_execute(
                        "DROP TABLE IF EXISTS warehouse, district, customer, history, new_order, \
                         orders, order_line, item, stock, rackbench_tpcc CASCADE",
                    )?;
                } else {
                    drop(c);
                    admin.batch_execute(&format!("DROP DATABASE \"{db}\""))?;
                }
            }
            if !users_db {
                // A copy of an existing build is far faster than a new load.
                if let Some(t) = template.as_ref().filter(|_| !force) {
                    note(&format!("oltp: copying database {t} to {db}"));
                    match admin.batch_execute(&format!("CREATE DATABASE \"{db}\" TEMPLATE \"{t}\""))
                    {
                        Ok(()) => {
                            let mut c = server::connect(&self.config(&db))?;
                            let m = populate::read_meta(&mut c)?
                                .context("the template database lost its build metadata")?;
                            out.push((db.clone(), m, None));
                            continue;
                        }
                        Err(e) => note(&format!(
                            "oltp: cannot copy {t} ({e}); loading {db} instead"
                        )),
                    }
                }
                admin.batch_execute(&format!("CREATE DATABASE \"{db}\""))?;
            }
            note(&format!(
                "oltp: building database {db}: {warehouses} warehouses"
            ));
            let info = populate::build(&self.config(&db), warehouses, threads, seed)?;
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

    /// Run the consistency check on every database.
    pub fn check(&self, initial: bool) -> anyhow::Result<Vec<(String, Vec<check::CheckResult>)>> {
        let mut out = Vec::new();
        for db in &self.dbs {
            let mut c = server::connect(&self.config(db))?;
            if populate::read_meta(&mut c)?.is_none() {
                bail!("database {db} holds no TPC-C build; run `rackbench oltp build` first");
            }
            out.push((db.clone(), check::run(&mut c, initial)?));
        }
        Ok(out)
    }

    pub fn stop(&mut self) {
        if let Some(s) = self.server.as_mut() {
            s.stop();
        }
    }
}

/// The password libpq would use for `dsn`, a connection string that names none:
/// PGPASSWORD, else the password file's line for its host, port, database and user
/// (the postgres crate reads neither). Looked up once, for the DSN's own database, and
/// used for every database of the run.
pub fn default_password(dsn: &postgres::Config) -> Option<String> {
    env_password()
        .or_else(|| crate::pgpass::password_for(dsn, &|w| eprintln!("rackbench: warning: {w}")))
}

/// PGPASSWORD, libpq's password for a connection string that names none.
pub fn env_password() -> Option<String> {
    std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty())
}
