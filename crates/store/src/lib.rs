//! The results store: an embedded SQLite file with versioned migrations. Runs are begun
//! before the first measurement and each result is inserted the moment it completes, so a
//! crash or Ctrl-C keeps everything already measured. Reads give back model types only.
//!
//! Durability: WAL journal with `synchronous = FULL`, so a result is on disk when
//! [`Store::insert_result`] returns (one fsync per result; results arrive seconds apart).
//! A busy timeout lets `rackbench runs` read while a run is writing.
//!
//! Exactness: [`Store::load_run`] gives back the [`RunRecord`] that was stored, field for
//! field (timestamps keep their nanoseconds, list order is kept, floats are stored as
//! 8-byte REALs or as shortest round-trip JSON text).

pub mod export;
#[doc(hidden)]
pub mod fixtures;
mod schema;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use anyhow::{bail, Context};
use chrono::{DateTime, SecondsFormat, Utc};
use model::process::ProcessId;
use model::{
    Fact, Flag, HistogramRecord, HostDisclosure, IdlePower, LatencySummary, Metric, MissingMetric,
    ResultRecord, RunRecord, Severity, Status, TelemetrySample, TelemetrySummary,
};
use rusqlite::{params, Connection, OptionalExtension};

pub use schema::SCHEMA_VERSION;

/// How long a writer waits for another process holding the write lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// One line of `rackbench runs`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RunSummary {
    pub id: String,
    pub label: Option<String>,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub status: Status,
    pub workloads: Vec<String>,
    pub results: usize,
    /// How many of the results carry an invalid flag (a failed consistency check, zero
    /// operations): the run's status says only how the run ended, not whether its figures
    /// stand.
    pub invalid: usize,
    pub host: String,
    pub command: String,
}

/// The name that takes the newest run wherever a run is named (`show latest`): no run id
/// or label can be it.
pub const LATEST: &str = "latest";

/// An open results store. `Sync`: one store can be shared by the threads of a run.
pub struct Store {
    conn: Mutex<Connection>,
    path: PathBuf,
    /// The file's device and inode when opened: a run begins only in the file its path
    /// still names (see [`Store::remove_if_unused`]).
    file: Option<(u64, u64)>,
    /// Opened read-only ([`Store::open_read_only`]): the runs left `running` by a process
    /// that is gone, with why, shown as interrupted without writing that down.
    abandoned: Option<BTreeMap<String, String>>,
    /// The directories opening it made for it, deepest first: removed with an unused
    /// store, so that bad input leaves no empty directory either.
    made_dirs: Vec<PathBuf>,
}

fn file_id(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

impl Store {
    /// Open (creating and migrating as needed). Errors say which path and why, and what to do.
    pub fn open(path: &Path) -> anyhow::Result<Store> {
        Self::open_at_version(path, SCHEMA_VERSION)
    }

    /// Open a store that must already exist: for the commands that only read one
    /// (`runs`, `show`, `export`, `report`, ...), where a mistyped `--db` would otherwise
    /// leave a new empty store behind and say it holds no runs.
    pub fn open_existing(path: &Path) -> anyhow::Result<Store> {
        if !path.exists() {
            bail!(
                "no results store at {}: start one with `rackbench run ...`, or give the path \
                 of an existing one with --db PATH (or RACKBENCH_DB)",
                path.display()
            );
        }
        Self::open(path)
    }

    /// Open a store that must already exist for reading only (`runs`, `show`, `export`,
    /// `report`, `compare`, `tco`): nothing is written, not even a migration of an older
    /// schema (reads use only what every schema since [`schema::OLDEST_READABLE`] has;
    /// the next command that writes migrates it), and it opens where the file or its
    /// directory is read-only. A run left `running` by a process that is gone reads as
    /// interrupted, with why, as a command that writes would record it.
    pub fn open_read_only(path: &Path) -> anyhow::Result<Store> {
        if !path.exists() {
            bail!(
                "no results store at {}: start one with `rackbench run ...`, or give the path \
                 of an existing one with --db PATH (or RACKBENCH_DB)",
                path.display()
            );
        }
        let conn = read_only_connection(path).map_err(|e| explain_damage(e, path))?;
        let version = schema::check_readable(&conn, path).map_err(|e| explain_damage(e, path))?;
        let abandoned = abandoned_runs(&conn, version)?
            .into_iter()
            .collect::<BTreeMap<_, _>>();
        Ok(Store {
            conn: Mutex::new(conn),
            path: path.to_path_buf(),
            file: file_id(path),
            abandoned: Some(abandoned),
            made_dirs: Vec::new(),
        })
    }

    /// The directories made for this store when it was opened (a `--db` in directories
    /// that did not exist), deepest first: said where the run says where it is stored.
    pub fn made_dirs(&self) -> &[PathBuf] {
        &self.made_dirs
    }

    /// Open and migrate only up to `version` (tests of the migrations use it).
    #[doc(hidden)]
    pub fn open_at_version(path: &Path, version: u32) -> anyhow::Result<Store> {
        let made_dirs = match path.parent().filter(|p| !p.as_os_str().is_empty()) {
            Some(parent) => model::dirs::make(parent).with_context(|| {
                format!(
                    "cannot create the directory {} for the results store {}; {WRITABLE}",
                    parent.display(),
                    path.display()
                )
            })?,
            None => Vec::new(),
        };
        Self::open_in(path, version, made_dirs.clone())
            .inspect_err(|_| model::dirs::remove_made(&made_dirs))
    }

    fn open_in(path: &Path, version: u32, made_dirs: Vec<PathBuf>) -> anyhow::Result<Store> {
        let mut conn = Connection::open(path).with_context(|| {
            format!(
                "cannot open the results store {}; {WRITABLE}",
                path.display()
            )
        })?;
        // SQLite opens a file it may not write read-only without a word, and the first
        // write (a migration's, a run's) then failed as "attempt to write a readonly
        // database", naming nothing.
        if conn.is_readonly(rusqlite::DatabaseName::Main)? {
            bail!(
                "the results store {} cannot be written here (its permissions, or a \
                 read-only file system); {WRITABLE}",
                path.display()
            );
        }
        // The file opened, before anything waits on its lock (a command removing it
        // unused holds that lock while it unlinks: see `begin_run`).
        let file = file_id(path);
        configure_retrying(&conn)
            .map_err(anyhow::Error::from)
            .map_err(|e| {
                if is_damaged(&e) {
                    return e;
                }
                e.context(format!(
                    "cannot use the results store {} (is it writable, and an SQLite file?); {WRITABLE}",
                    path.display()
                ))
            })
            .and_then(|()| schema::migrate_to(&mut conn, path, version))
            .map_err(|e| explain_damage(e, path))?;
        let store = Store {
            conn: Mutex::new(conn),
            path: path.to_path_buf(),
            file,
            abandoned: None,
            made_dirs,
        };
        if version >= 3 {
            // Best effort: a store another writer holds busy still opens.
            let _ = store.close_abandoned_runs();
        }
        Ok(store)
    }

    /// Runs left `running` by a process that no longer exists (killed with SIGKILL, out of
    /// memory, the machine rebooted) become `interrupted`, with a reason; what they
    /// stored before that is kept. A run whose process is alive is left alone. Returns
    /// the runs closed.
    pub fn close_abandoned_runs(&self) -> anyhow::Result<Vec<String>> {
        let mut conn = self.lock();
        let version = schema::user_version(&conn)? as u32;
        let mut closed = Vec::new();
        for (run_id, why) in abandoned_runs(&conn, version)? {
            // The run, its provisional results and its owner together: a run closed
            // without them kept a result `running` that nothing would close again.
            let tx = write_tx(&mut conn)?;
            tx.execute(
                "UPDATE runs SET status = 'interrupted', error = ?2, finished_at = ?3
                 WHERE id = ?1 AND status = 'running'",
                params![run_id, why, ts(&Utc::now())],
            )?;
            // A test's provisional result (what it had measured when the process ended).
            close_provisional(&tx, &run_id, Some(&why))?;
            tx.execute("DELETE FROM run_owner WHERE run_id = ?1", [&run_id])?;
            tx.commit()?;
            closed.push(run_id);
        }
        // Runs an earlier rackbench closed without their provisional results (by hand,
        // or as abandoned) left those `running` for ever: closed as the run's end closes
        // them now (looked for first, so that an open takes no write lock for nothing).
        let left: Vec<String> = conn
            .prepare(
                "SELECT DISTINCT run_id FROM results WHERE status = 'running'
                 AND run_id IN (SELECT id FROM runs WHERE status != 'running')",
            )?
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        if !left.is_empty() {
            let tx = write_tx(&mut conn)?;
            for run_id in &left {
                close_provisional(&tx, run_id, None)?;
            }
            tx.commit()?;
        }
        Ok(closed)
    }

    /// Remove this store's files (the database, its write-ahead log and shared memory)
    /// if nothing was ever stored in it: for a command that made the store and then
    /// refused to run, so bad input leaves no file behind. Decided under SQLite's
    /// exclusive lock; a command that opened the file meanwhile refuses to begin a run
    /// in it ([`Store::begin_run`]). Best effort: returns whether it removed it.
    pub fn remove_if_unused(self) -> bool {
        let path = self.path.clone();
        let mut conn = self.conn.into_inner().unwrap_or_else(|e| e.into_inner());
        let Ok(tx) = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Exclusive)
        else {
            return false;
        };
        let empty = ["runs", "run_owner"].iter().all(|t| {
            tx.query_row(&format!("SELECT COUNT(*) FROM {t}"), [], |r| {
                r.get::<_, i64>(0)
            })
            .is_ok_and(|n| n == 0)
        });
        if !empty {
            return false;
        }
        for side in ["", "-wal", "-shm", "-journal"] {
            let _ = std::fs::remove_file(side_file(&path, side));
        }
        drop(tx);
        drop(conn);
        model::dirs::remove_made(&self.made_dirs);
        true
    }

    /// Close a run left `running` that no command here can judge (its owner ran in a
    /// container since gone, or on another machine sharing the store): interrupted, by
    /// hand, with what it stored kept. Refused for a run whose process is alive here,
    /// and for a run that is not running.
    pub fn close_by_hand(&self, run_id: &str) -> anyhow::Result<()> {
        let mut conn = self.lock();
        let tx = write_tx(&mut conn)?;
        let status: Option<String> = tx
            .query_row("SELECT status FROM runs WHERE id = ?1", [run_id], |r| {
                r.get(0)
            })
            .optional()?;
        match status.as_deref() {
            None => bail!("{}", not_found(run_id, &self.path)),
            Some("running") => {}
            Some(other) => bail!("run {run_id} is not running (it is {other}): nothing to close"),
        }
        let owner: Option<(u32, u64, String, String)> = tx
            .query_row(
                "SELECT pid, starttime, boot_id, place FROM run_owner WHERE run_id = ?1",
                [run_id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()?;
        let here = model::process::place();
        let whose = match &owner {
            Some((pid, starttime, boot_id, place)) => {
                let mine = place.is_empty() || *place == here;
                let alive = ProcessId {
                    pid: *pid,
                    starttime: *starttime,
                    boot_id: boot_id.trim().to_string(),
                }
                .is_alive();
                if mine && alive {
                    bail!(
                        "run {run_id} is in progress (rackbench pid {pid} on this machine): \
                         stop it with Ctrl-C there, or end that process"
                    );
                }
                format!(
                    "rackbench pid {pid} on {}",
                    if place.is_empty() { "?" } else { place }
                )
            }
            None => "a rackbench process this store has no record of".to_string(),
        };
        let why = format!(
            "closed by hand (`rackbench runs --close`): its process ({whose}) could not be \
             seen from here; the results it stored are kept"
        );
        tx.execute(
            "UPDATE runs SET status = 'interrupted', error = ?2, finished_at = ?3 WHERE id = ?1",
            params![run_id, why, ts(&Utc::now())],
        )?;
        close_provisional(&tx, run_id, Some(&why))?;
        tx.execute("DELETE FROM run_owner WHERE run_id = ?1", [run_id])?;
        tx.commit()?;
        Ok(())
    }

    /// The file this store lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the open file.
    pub fn schema_version(&self) -> anyhow::Result<u32> {
        Ok(schema::user_version(&self.lock())? as u32)
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave SQLite inconsistent (transactions
        // roll back on drop), so a poisoned lock is still usable.
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Record a run as started (status Running), with its plan and disclosure. Any
    /// results and idle power already in `run` are stored too.
    pub fn begin_run(&self, run: &RunRecord) -> anyhow::Result<()> {
        // Another command that made this store and failed before storing anything
        // removes it ([`Store::remove_if_unused`]); a run begun in the removed file
        // would be lost when this one ends.
        if file_id(&self.path) != self.file {
            bail!(
                "the results store {} was removed or replaced since this command opened it \
                 (another rackbench that made it failed?); run again",
                self.path.display()
            );
        }
        // The run and its owner in one transaction: a kill between the two would leave
        // a `running` run no later command could tell was abandoned.
        self.insert_whole(
            run,
            Status::Running,
            &run.error,
            ProcessId::current(),
            false,
        )
    }

    /// Replace the run's host disclosures (after prepare adds server versions).
    pub fn update_hosts(&self, run_id: &str, hosts: &[HostDisclosure]) -> anyhow::Result<()> {
        let mut conn = self.lock();
        let tx = write_tx(&mut conn)?;
        require_run(&tx, run_id, &self.path)?;
        tx.execute("DELETE FROM hosts WHERE run_id = ?1", [run_id])?;
        insert_hosts(&tx, run_id, hosts)?;
        tx.commit()?;
        Ok(())
    }

    pub fn insert_idle_power(&self, run_id: &str, idle: &IdlePower) -> anyhow::Result<()> {
        let mut conn = self.lock();
        let tx = write_tx(&mut conn)?;
        require_run(&tx, run_id, &self.path)?;
        let ord: i64 = tx.query_row(
            "SELECT COALESCE(MAX(ord) + 1, 0) FROM idle_power WHERE run_id = ?1",
            [run_id],
            |r| r.get(0),
        )?;
        insert_idle(&tx, run_id, ord, idle)?;
        tx.commit()?;
        Ok(())
    }

    /// Insert one result (metrics, histograms, telemetry, flags) in one transaction.
    /// It is committed (on disk) when this returns.
    pub fn insert_result(&self, run_id: &str, r: &ResultRecord) -> anyhow::Result<()> {
        self.put_result(run_id, None, r).map(|_| ())
    }

    /// Store `r` as the run's result at `ord`, in place of the one there (a test's
    /// provisional result, stored while it ran so that a crash keeps what it had
    /// measured), or as the run's next result when `ord` is None. Returns its place.
    pub fn put_result(
        &self,
        run_id: &str,
        ord: Option<i64>,
        r: &ResultRecord,
    ) -> anyhow::Result<i64> {
        let mut conn = self.lock();
        let tx = write_tx(&mut conn)?;
        require_run(&tx, run_id, &self.path)?;
        let ord: i64 = match ord {
            Some(o) => {
                // Its metrics, histograms, samples and flags go with it (cascade).
                tx.execute(
                    "DELETE FROM results WHERE run_id = ?1 AND ord = ?2",
                    params![run_id, o],
                )?;
                o
            }
            None => tx.query_row(
                "SELECT COALESCE(MAX(ord) + 1, 0) FROM results WHERE run_id = ?1",
                [run_id],
                |r| r.get(0),
            )?,
        };
        insert_result(&tx, run_id, ord, r, 0).with_context(|| storing(r, run_id))?;
        tx.commit()?;
        Ok(ord)
    }

    /// [`Store::put_result`] for a provisional result whose telemetry grows as its test
    /// runs: the samples of the one at `ord` stay, and `r.telemetry`, the samples since,
    /// go after them. A long test's checkpoints then write each sample once, not all of
    /// them every time (an hour's samples of a 64-CPU host are tens of MB). Returns its
    /// place.
    pub fn put_result_adding_samples(
        &self,
        run_id: &str,
        ord: Option<i64>,
        r: &ResultRecord,
    ) -> anyhow::Result<i64> {
        let Some(ord) = ord else {
            return self.put_result(run_id, None, r);
        };
        let mut conn = self.lock();
        let tx = write_tx(&mut conn)?;
        require_run(&tx, run_id, &self.path)?;
        let old: i64 = tx.query_row(
            "SELECT id FROM results WHERE run_id = ?1 AND ord = ?2",
            params![run_id, ord],
            |row| row.get(0),
        )?;
        let kept: i64 = tx.query_row(
            "SELECT COUNT(*) FROM telemetry WHERE result_id = ?1",
            [old],
            |row| row.get(0),
        )?;
        // The old one leaves its place for the new one, hands it its samples, and goes
        // (its metrics, histograms and flags with it).
        tx.execute("UPDATE results SET ord = -1 - ord WHERE id = ?1", [old])?;
        let new = insert_result(&tx, run_id, ord, r, kept as usize)
            .with_context(|| storing(r, run_id))?;
        tx.execute(
            "UPDATE telemetry SET result_id = ?1 WHERE result_id = ?2",
            params![new, old],
        )?;
        tx.execute("DELETE FROM results WHERE id = ?1", [old])?;
        tx.commit()?;
        Ok(ord)
    }

    /// Mark the run finished now with its final status.
    pub fn finish_run(
        &self,
        run_id: &str,
        status: Status,
        error: Option<&str>,
    ) -> anyhow::Result<()> {
        self.finish_run_at(run_id, status, error, Utc::now())
    }

    /// [`Store::finish_run`] with the caller's timestamp (to match an in-memory record).
    pub fn finish_run_at(
        &self,
        run_id: &str,
        status: Status,
        error: Option<&str>,
        finished_at: DateTime<Utc>,
    ) -> anyhow::Result<()> {
        let mut conn = self.lock();
        // One transaction: a run closed without its provisional results closed with it
        // left them `running` under a finished run, where nothing closes them again.
        let tx = write_tx(&mut conn)?;
        let n = tx.execute(
            "UPDATE runs SET status = ?2, error = ?3, finished_at = ?4 WHERE id = ?1",
            params![run_id, status_str(status), error, ts(&finished_at)],
        )?;
        if n == 0 {
            bail!("{}", not_found(run_id, &self.path));
        }
        // A test's provisional result its final one did not replace (that write failed):
        // what it had measured, closed with the run.
        close_provisional(&tx, run_id, error)?;
        tx.execute("DELETE FROM run_owner WHERE run_id = ?1", [run_id])?;
        tx.commit()?;
        Ok(())
    }

    /// Add validity flags to every stored result of `steps` (flags found after they were
    /// inserted, e.g. by a consistency check at the end of a sweep point), in one
    /// transaction: a point's repetitions are flagged all or none (a step at a time, a
    /// kill or a full store between them left some invalid and the rest looking valid).
    pub fn add_flags(
        &self,
        run_id: &str,
        steps: &[u32],
        flags: &[model::Flag],
    ) -> anyhow::Result<()> {
        let mut conn = self.lock();
        let tx = write_tx(&mut conn)?;
        let mut ids: Vec<i64> = Vec::new();
        for &step in steps {
            let mut stmt = tx.prepare("SELECT id FROM results WHERE run_id = ?1 AND step = ?2")?;
            let rows = stmt.query_map(params![run_id, step as i64], |r| r.get(0))?;
            let before = ids.len();
            for id in rows {
                ids.push(id?);
            }
            if ids.len() == before {
                bail!("run {run_id} has no result at step {step}");
            }
        }
        for rid in ids {
            let next: i64 = tx.query_row(
                "SELECT COALESCE(MAX(ord) + 1, 0) FROM flags WHERE result_id = ?1",
                params![rid],
                |r| r.get(0),
            )?;
            for (i, f) in flags.iter().enumerate() {
                tx.execute(
                    "INSERT INTO flags (result_id, ord, code, severity, message) VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![rid, next + i as i64, f.code, severity_str(f.severity), f.message],
                )?;
            }
        }
        tx.commit()?;
        Ok(())
    }
    /// Remove a run entirely (a run whose setup failed before any measurement).
    pub fn delete_run(&self, run_id: &str) -> anyhow::Result<()> {
        let conn = self.lock();
        let n = conn.execute("DELETE FROM runs WHERE id = ?1", [run_id])?;
        if n == 0 {
            bail!("{}", not_found(run_id, &self.path));
        }
        Ok(())
    }

    /// Whether a run with exactly this id is stored.
    pub fn has_run(&self, run_id: &str) -> anyhow::Result<bool> {
        let conn = self.lock();
        Ok(run_exists(&conn, run_id)?)
    }

    /// Newest first.
    pub fn list_runs(&self) -> anyhow::Result<Vec<RunSummary>> {
        let mut conn = self.lock();
        // One read transaction: a consistent snapshot while a run may be writing.
        let tx = conn.transaction()?;
        let mut runs = Vec::new();
        {
            let mut stmt = tx.prepare(&format!(
                "SELECT id, label, created_at, status, command, \
                 COALESCE(json_extract(plan, '$.workload'), \
                     (SELECT group_concat(json_extract(value, '$.workload')) \
                      FROM json_each(plan, '$.suite'))) \
                 FROM runs ORDER BY {NEWEST_FIRST}"
            ))?;
            let mut rows = stmt.query([])?;
            while let Some(row) = rows.next()? {
                let created: String = row.get(2)?;
                let status: String = row.get(3)?;
                let id: String = row.get(0)?;
                let status = match self.abandoned_why(&id) {
                    Some(_) => Status::Interrupted,
                    None => parse_status(&status)?,
                };
                runs.push(RunSummary {
                    id,
                    label: row.get(1)?,
                    created_at: parse_ts(&created)?,
                    status,
                    // The plan's (a suite's parts'), until results say which ran: a run
                    // killed before its first result was listed with no workload.
                    workloads: row
                        .get::<_, Option<String>>(5)
                        .ok()
                        .flatten()
                        .map(|w| w.split(',').map(str::to_string).collect())
                        .unwrap_or_default(),
                    results: 0,
                    invalid: 0,
                    host: String::new(),
                    command: row.get(4)?,
                });
            }
        }
        let mut workloads = tx.prepare(
            "SELECT workload FROM results WHERE run_id = ?1 GROUP BY workload ORDER BY MIN(ord)",
        )?;
        let mut count = tx.prepare("SELECT COUNT(*) FROM results WHERE run_id = ?1")?;
        let mut invalid = tx.prepare(
            "SELECT COUNT(DISTINCT f.result_id) FROM flags f JOIN results r ON r.id = f.result_id \
             WHERE r.run_id = ?1 AND f.severity = 'invalid'",
        )?;
        for s in &mut runs {
            let ran: Vec<String> = workloads
                .query_map([&s.id], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            if !ran.is_empty() {
                s.workloads = ran;
            }
            s.results = count.query_row([&s.id], |r| r.get(0))?;
            s.invalid = invalid.query_row([&s.id], |r| r.get(0))?;
            s.host = listing_host(&load_hosts(&tx, &s.id)?);
        }
        Ok(runs)
    }

    /// Where `q` named run `id` by a label that other runs carry too: a note saying which
    /// was taken and how to name another (acceptance P, 4: a label given to repeated runs
    /// took the newest alone, unsaid, and a comparison of it had n = 1). None otherwise.
    pub fn label_note(&self, q: &str, id: &str) -> anyhow::Result<Option<String>> {
        let q = q.trim();
        if q == id || q == LATEST {
            return Ok(None);
        }
        let conn = self.lock();
        let n: i64 = conn.query_row("SELECT COUNT(*) FROM runs WHERE label = ?1", [q], |r| {
            r.get(0)
        })?;
        Ok((n > 1).then(|| {
            format!(
                "`{}` labels {n} runs; this takes the newest, {id}: name another by its id \
                 (`rackbench runs` lists them), or give them as one side of `compare` \
                 (`--a ID1,ID2`) to take them together",
                model::printable(q)
            )
        }))
    }

    /// A full id from an id, a unique prefix, [`LATEST`], or a label (the newest run with
    /// that label): [`name_among`]'s rule, over the runs in the order they were stored.
    pub fn resolve(&self, id_or_prefix: &str) -> anyhow::Result<String> {
        let conn = self.lock();
        let rows: Vec<(String, Option<String>, String)> = conn
            .prepare("SELECT id, label, created_at FROM runs ORDER BY rowid")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let runs = rows
            .iter()
            .map(|(id, label, at)| Ok((id.as_str(), label.as_deref(), parse_ts(at)?)))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let path = self.path.display();
        match name_among(&runs, id_or_prefix) {
            Named::Run(id) => Ok(id.to_string()),
            Named::NoRuns => bail!(
                "the results store {path} holds no runs yet; start one with `rackbench run \
                 ...`, or point --db at another store"
            ),
            Named::NotGiven => bail!(
                "no run given; give an id, an id prefix, a label or `latest` (list runs with \
                 `rackbench runs`)"
            ),
            Named::NoMatch(q) => bail!(
                "no run matches `{q}` (as an id, id prefix, label or `latest`) in {path}; \
                 list runs with `rackbench runs`"
            ),
            Named::Many(q, ids) => bail!(
                "`{q}` matches {} runs ({}); give more of the id, or list runs with \
                 `rackbench runs`",
                ids.len(),
                shown_ids(&ids)
            ),
        }
    }

    /// The whole run, exactly as stored (`id` must be a full id: see [`Store::resolve`]).
    pub fn load_run(&self, id: &str) -> anyhow::Result<RunRecord> {
        let mut conn = self.lock();
        let tx = conn.transaction()?;
        let mut run = load_run(&tx, id, &self.path)
            .with_context(|| format!("loading run {id} from {}", self.path.display()))?;
        tx.commit()?;
        if let Some(why) = self.abandoned_why(id) {
            run.status = Status::Interrupted;
            run.error = Some(why.to_string());
            interrupt_provisional(&mut run.results, why);
        }
        Ok(run)
    }

    /// Why run `id` reads as interrupted in a store opened read-only: its process is gone.
    fn abandoned_why(&self, id: &str) -> Option<&str> {
        self.abandoned.as_ref()?.get(id).map(String::as_str)
    }

    /// Import a run exported elsewhere (error if the id already exists). One transaction:
    /// the run is imported whole or not at all.
    ///
    /// A run exported while it was still running has no process here that could finish
    /// it, and none that `close_abandoned_runs` could find gone: it is imported as
    /// interrupted, with what it had stored then.
    pub fn import_run(&self, run: &RunRecord) -> anyhow::Result<()> {
        export::check_importable(run)?;
        let (status, error) = imported_status(run);
        self.insert_whole(run, status, &error, None, false)
    }

    /// Import `run` over the stored copy of it when that copy holds less: a run that
    /// ended failed or interrupted whose results are the first of `run`'s (the file a run
    /// whose result the store refused leaves beside it, or a later export of a run first
    /// exported while running). One write. Ok(false), nothing changed, when the stored
    /// copy is not such a run.
    pub fn import_more_of(&self, run: &RunRecord) -> anyhow::Result<bool> {
        export::check_importable(run)?;
        if !holds_less(&self.lock(), run, &self.path)? {
            return Ok(false);
        }
        let (status, error) = imported_status(run);
        self.insert_whole(run, status, &error, None, true)?;
        Ok(true)
    }

    /// Import the runs of one export, all of them or none (one transaction): a run not
    /// stored yet is imported as [`Store::import_run`] does, one stored with less of it
    /// is replaced as [`Store::import_more_of`] does, any other already stored is
    /// skipped. An error in any run leaves the store as it was.
    pub fn import_all(&self, runs: &[RunRecord]) -> anyhow::Result<Imported> {
        for run in runs {
            export::check_importable(run)?;
        }
        let mut done = Imported::default();
        let mut conn = self.lock();
        let tx = write_tx(&mut conn)?;
        for run in runs {
            if run_exists(&tx, &run.id)? {
                if holds_less(&tx, run, &self.path)? {
                    let (status, error) = imported_status(run);
                    insert_whole_in(&tx, &self.path, run, status, &error, None, true)?;
                    done.imported.push(run.id.clone());
                } else {
                    // The same id with other figures (an export edited, or another
                    // store's run under a colliding id) is kept out as a copy would be,
                    // and said: "already there" hid that the two differ (acceptance L, 8).
                    // Set against the file's run as an import stores it: a result it
                    // has running is stored interrupted, so a second import of one
                    // export of a running run is the same run.
                    let stored = load_run(&tx, &run.id, &self.path)?;
                    if serde_json::to_value(&stored.results)?
                        != serde_json::to_value(imported_results(run))?
                        || stored.hosts != run.hosts
                    {
                        done.differing.push(run.id.clone());
                    }
                    done.skipped.push(run.id.clone());
                }
                continue;
            }
            let (status, error) = imported_status(run);
            insert_whole_in(&tx, &self.path, run, status, &error, None, false)?;
            done.imported.push(run.id.clone());
        }
        tx.commit()?;
        Ok(done)
    }

    fn insert_whole(
        &self,
        run: &RunRecord,
        status: Status,
        error: &Option<String>,
        owner: Option<ProcessId>,
        replace_less: bool,
    ) -> anyhow::Result<()> {
        let mut conn = self.lock();
        let tx = write_tx(&mut conn)?;
        insert_whole_in(&tx, &self.path, run, status, error, owner, replace_less)?;
        tx.commit()?;
        Ok(())
    }
}

/// What [`Store::import_all`] did: the ids imported (or replaced by a copy holding more)
/// and those already stored, skipped, each in the export's order.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Imported {
    pub imported: Vec<String>,
    pub skipped: Vec<String>,
    /// Of the skipped, those whose stored run holds other results or hosts than the
    /// export's: the stored one kept, the export's not imported.
    pub differing: Vec<String>,
}

/// A test's provisional result (`running`: stored while it ran) in a run that ended
/// without it: interrupted, for `why`, as [`Store::close_abandoned_runs`] writes it.
fn interrupt_provisional(results: &mut [ResultRecord], why: &str) {
    for r in results.iter_mut().filter(|r| r.status == Status::Running) {
        r.status = Status::Interrupted;
        r.error = Some(why.to_string());
    }
}

/// The status and error an imported run is stored with: its own, except that a run
/// exported while it was still running has no process here that could finish it (and
/// none `close_abandoned_runs` could find gone): it is interrupted, with what it had
/// stored then.
fn imported_status(run: &RunRecord) -> (Status, Option<String>) {
    if run.status == Status::Running {
        return (
            Status::Interrupted,
            Some("exported while it was still running: the results it had stored then".into()),
        );
    }
    (run.status, run.error.clone())
}

/// `run`'s results as [`Store::import_run`] stores them.
fn imported_results(run: &RunRecord) -> Vec<ResultRecord> {
    provisional_closed(run, &imported_status(run).1)
}

/// `run`'s results as stored: a test's provisional one (no process here will replace
/// it) closed as interrupted, for `error` or, with none, the run having ended before it,
/// and without the knobs a test does not read, as [`load_run`] gives them back (an
/// import's copy is set against the stored one as read).
fn provisional_closed(run: &RunRecord, error: &Option<String>) -> Vec<ResultRecord> {
    let mut results = run.results.clone();
    interrupt_provisional(&mut results, error.as_deref().unwrap_or(ENDED_BEFORE));
    for r in &mut results {
        r.drop_unread();
    }
    results
}

/// Why a test's provisional result was closed, where its run's end gives no reason.
const ENDED_BEFORE: &str = "the run ended before this test stored its result";

/// Close run `run_id`'s provisional results (a test's, stored while it ran, that its
/// final one never replaced) as interrupted, for `why` (with none, [`ENDED_BEFORE`]):
/// with the run, in the transaction that closes it, or nothing would close them again.
fn close_provisional(
    tx: &rusqlite::Transaction<'_>,
    run_id: &str,
    why: Option<&str>,
) -> rusqlite::Result<usize> {
    tx.execute(
        "UPDATE results SET status = 'interrupted', error = ?2
         WHERE run_id = ?1 AND status = 'running'",
        params![run_id, why.unwrap_or(ENDED_BEFORE)],
    )
}

/// Store `run` whole in `tx`, with this status and error (and its owner, for a run
/// begun here). Refused when the id is stored, unless `replace_less` and the stored copy
/// holds less of it ([`holds_less`]), which it then replaces.
fn insert_whole_in(
    tx: &rusqlite::Transaction<'_>,
    path: &Path,
    run: &RunRecord,
    status: Status,
    error: &Option<String>,
    owner: Option<ProcessId>,
    replace_less: bool,
) -> anyhow::Result<()> {
    if run.format_version > model::RECORD_FORMAT_VERSION {
        bail!(
            "run {} has record format {}, newer than this rackbench understands ({}); upgrade rackbench",
            run.id,
            run.format_version,
            model::RECORD_FORMAT_VERSION
        );
    }
    if run_exists(tx, &run.id)? {
        if !replace_less || !holds_less(tx, run, path)? {
            bail!(
                "run {} is already in the results store {}; list runs with `rackbench runs`",
                run.id,
                path.display()
            );
        }
        // Cascades to everything of the run; the new copy goes in the same write.
        tx.execute("DELETE FROM runs WHERE id = ?1", [&run.id])?;
    }
    tx.execute(
        "INSERT INTO runs (id, format_version, label, created_at, finished_at, status, error,
                           rackbench_version, command, plan)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            run.id,
            run.format_version,
            run.label,
            ts(&run.created_at),
            run.finished_at.as_ref().map(ts),
            status_str(status),
            error,
            run.rackbench_version,
            run.command,
            serde_json::to_string(&run.plan)?,
        ],
    )?;
    insert_hosts(tx, &run.id, &run.hosts)?;
    for (i, idle) in run.idle_power.iter().enumerate() {
        insert_idle(tx, &run.id, i as i64, idle)?;
    }
    let results = provisional_closed(run, error);
    for (i, r) in results.iter().enumerate() {
        insert_result(tx, &run.id, i as i64, r, 0).with_context(|| storing(r, &run.id))?;
    }
    if let Some(me) = owner {
        tx.execute(
            "INSERT OR REPLACE INTO run_owner (run_id, pid, starttime, boot_id, place)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                run.id,
                me.pid,
                me.starttime,
                me.boot_id,
                model::process::place()
            ],
        )?;
    }
    Ok(())
}

/// What to do about a store that cannot be made or written.
const WRITABLE: &str = "choose a writable file with --db PATH or RACKBENCH_DB=PATH";

/// What a name given for a run ([`name_among`]) names.
#[derive(Debug, PartialEq)]
pub enum Named<'a> {
    Run(&'a str),
    /// [`LATEST`] of no runs.
    NoRuns,
    /// An empty name.
    NotGiven,
    /// The name (trimmed) matches no run.
    NoMatch(&'a str),
    /// The name (trimmed) is the prefix of these ids, newest first.
    Many(&'a str, Vec<&'a str>),
}

/// A run as [`name_among`] knows it: its id, label and start.
pub type RunName<'a> = (&'a str, Option<&'a str>, DateTime<Utc>);

/// The run a user names, among runs (id, label, start) in the order they were stored: an
/// id, [`LATEST`] (the newest; of two started at once, the later stored), a label (its
/// newest run: an exact label beats a prefix), or a unique id prefix. The one rule of a
/// store's runs and of a file's (`report --from FILE`).
pub fn name_among<'a>(runs: &[RunName<'a>], name: &'a str) -> Named<'a> {
    let q = name.trim();
    if q.is_empty() {
        return Named::NotGiven;
    }
    // Newest first: by start, then the later stored ([`NEWEST_FIRST`]).
    let mut newest_first: Vec<&RunName> = runs.iter().rev().collect();
    newest_first.sort_by_key(|r| std::cmp::Reverse(r.2));
    let first =
        |keep: &dyn Fn(&RunName) -> bool| newest_first.iter().find(|r| keep(r)).map(|r| r.0);
    if q == LATEST {
        return first(&|_| true).map_or(Named::NoRuns, Named::Run);
    }
    if let Some(id) = first(&|r| r.0 == q).or_else(|| first(&|r| r.1 == Some(q))) {
        return Named::Run(id);
    }
    let ids: Vec<&str> = newest_first
        .iter()
        .filter(|r| r.0.starts_with(q))
        .map(|r| r.0)
        .collect();
    match ids[..] {
        [id] => Named::Run(id),
        [] => Named::NoMatch(q),
        _ => Named::Many(q, ids),
    }
}

/// Ids for a message: the first five, `...` after more.
pub fn shown_ids(ids: &[&str]) -> String {
    let more = if ids.len() > 5 { ", ..." } else { "" };
    format!("{}{more}", ids[..ids.len().min(5)].join(", "))
}

/// The order of "newest": by creation time, then by insertion (the larger rowid: SQLite
/// gives a new row one more than the largest there), so two runs created in the same
/// instant (imported, or a clock stepped back) resolve `latest` the same way every time.
const NEWEST_FIRST: &str = "created_at DESC, rowid DESC";

/// Runs left `running` by a process that no longer exists (killed with SIGKILL, out of
/// memory, the machine rebooted), with why; a run whose process is alive, or whose owner
/// runs elsewhere (another machine or container: its process cannot be looked up from
/// here), is not one. Reads only, on a schema of any `version`.
fn abandoned_runs(conn: &Connection, version: u32) -> anyhow::Result<Vec<(String, String)>> {
    // v3 added the owners, v4 where they run.
    if version < 3 {
        return Ok(Vec::new());
    }
    let Some(me) = ProcessId::current() else {
        return Ok(Vec::new());
    };
    let here = model::process::place();
    let place = if version >= 4 { "o.place" } else { "''" };
    let owners: Vec<(String, u32, u64, String, String)> = {
        let mut stmt = conn.prepare(&format!(
            "SELECT o.run_id, o.pid, o.starttime, o.boot_id, {place} FROM run_owner o
             JOIN runs r ON r.id = o.run_id WHERE r.status = 'running'"
        ))?;
        let rows = stmt.query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?;
        rows.collect::<Result<_, _>>()?
    };
    let mut gone = Vec::new();
    for (run_id, pid, starttime, boot_id, place) in owners {
        // A run written from another machine or container: its process cannot be
        // looked up from here, alive or not. Left for a command there to judge.
        if !place.is_empty() && place != here {
            continue;
        }
        let why = if boot_id.trim() != me.boot_id {
            format!("the machine restarted while rackbench (pid {pid}) was running this run")
        } else if ProcessId::of(pid).is_some_and(|p| p.starttime == starttime) {
            continue;
        } else {
            format!(
                "the rackbench process (pid {pid}) ended without finishing this run \
                 (killed, or out of memory?); the results it stored are kept"
            )
        };
        gone.push((run_id, why));
    }
    Ok(gone)
}

/// A connection that never writes the store at `path`, and reads it where SQLite cannot
/// write beside it (a read-only file system or directory). A store in WAL mode needs
/// its `-shm` file to be read, which SQLite creates when it is missing: where it cannot,
/// and no `-wal` file holds changes the database file lacks (a store whose last writer
/// closed it), the file is opened as immutable, which needs neither. Where a `-wal` file
/// holds changes and its `-shm` cannot be made, the error says what to do.
fn read_only_connection(path: &Path) -> anyhow::Result<Connection> {
    use rusqlite::OpenFlags;
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let probe = |conn: &Connection| -> rusqlite::Result<()> {
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // Reading the schema reads the write-ahead log's index (the -shm file) too.
        conn.query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| {
            r.get::<_, i64>(0)
        })?;
        Ok(())
    };
    let first = Connection::open_with_flags(path, flags).and_then(|c| probe(&c).map(|()| c));
    let err = match first {
        Ok(conn) => return Ok(conn),
        Err(e) => e,
    };
    let cannot_write_beside = matches!(
        &err,
        rusqlite::Error::SqliteFailure(f, _) if matches!(
            f.code,
            rusqlite::ErrorCode::CannotOpen | rusqlite::ErrorCode::ReadOnly
        )
    );
    let p = path.display();
    if !cannot_write_beside {
        return Err(anyhow::Error::from(err).context(format!(
            "cannot read the results store {p} (is it an SQLite file?); give another with \
             --db PATH (or RACKBENCH_DB)"
        )));
    }
    let wal = side_file(path, "-wal");
    let wal_holds_changes = std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0);
    if wal_holds_changes {
        return Err(anyhow::Error::from(err).context(format!(
            "cannot read the results store {p} where it is: SQLite must create {}-shm beside \
             it to read the changes still in {}, and cannot (a read-only file system or \
             directory); copy {p} together with {} into a writable directory and give the \
             copy with --db COPY, or open it once where it is writable (any `rackbench runs` \
             there folds those changes into {p})",
            p,
            wal.display(),
            wal.display()
        )));
    }
    let conn = Connection::open_with_flags(immutable_uri(path), flags | OpenFlags::SQLITE_OPEN_URI)
        .and_then(|c| probe(&c).map(|()| c))
        .map_err(anyhow::Error::from)
        .with_context(|| {
            format!(
                "cannot read the results store {p} on a read-only file system or directory; copy \
             it into a writable directory and give the copy with --db COPY"
            )
        })?;
    Ok(conn)
}

/// `path` with `suffix` added to its name (`results.sqlite-wal`).
fn side_file(path: &Path, suffix: &str) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(suffix);
    PathBuf::from(p)
}

/// The `file:` URI of `path` opened immutable (SQLite then takes no lock and reads no
/// write-ahead log: for a file nothing can write). Characters a URI gives a meaning to
/// (`?`, `#`, `%`) and any not plain ASCII are percent-encoded, as SQLite decodes them.
fn immutable_uri(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut uri = String::from("file:");
    for &b in abs.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push_str("?immutable=1");
    uri
}

/// Whether the stored run of `run`'s id ended failed or interrupted holding less of it:
/// its results are `run`'s first ones (each the same step, test and repetition at its
/// place, and no further on), and `run` has more of them, or a test's final result where
/// the stored copy has the provisional one its test stored at a checkpoint (flagged
/// [`model::PARTIAL`], closed as interrupted: the store refused the final one, or the run was
/// exported while that test ran). Any other result must be the same on both sides, so
/// that an edited export or another store's run under a colliding id is not taken for
/// more of this one: its figures and flags too, and its hosts ([`figures`]; a copy with
/// one figure changed and one result more replaced the measured figure).
fn holds_less(conn: &Connection, run: &RunRecord, path: &Path) -> anyhow::Result<bool> {
    let status: Option<String> = conn
        .query_row("SELECT status FROM runs WHERE id = ?1", [&run.id], |r| {
            r.get(0)
        })
        .optional()?;
    if !matches!(status.as_deref(), Some("failed" | "interrupted")) {
        return Ok(false);
    }
    let mut stmt = conn.prepare(
        "SELECT step, test, repetition, status,
                EXISTS (SELECT 1 FROM flags f WHERE f.result_id = r.id AND f.code = ?2)
         FROM results r WHERE run_id = ?1 ORDER BY ord",
    )?;
    let stored_rows: Vec<(u32, String, u32, String, bool)> = stmt
        .query_map(params![run.id, model::PARTIAL], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?
        .collect::<Result<_, _>>()?;
    if stored_rows.len() > run.results.len() {
        return Ok(false);
    }
    let mut more = stored_rows.len() < run.results.len();
    for ((step, test, rep, status, at_checkpoint), r) in stored_rows.iter().zip(&run.results) {
        if (*step, test.as_str(), *rep) != (r.step, r.test.as_str(), r.repetition) {
            return Ok(false);
        }
        if *at_checkpoint && !r.is_provisional() {
            more = true;
        } else if parse_status(status)? != imported_status_of(r.status) {
            return Ok(false);
        }
    }
    if !more {
        return Ok(false);
    }
    // The file replaces the stored run whole, so it must keep what the store holds:
    // each result it does not replace with the stored figures and flags (it may have
    // more flags: a later export of a run exported while it ran), and every stored host
    // (it may have more, disclosed as the run went on). An edited figure, or a flag
    // taken off a result the store holds invalid, is another run.
    let stored = load_run(conn, &run.id, path)?;
    for ((s, (_, _, _, _, at_checkpoint)), r) in stored
        .results
        .iter()
        .zip(&stored_rows)
        .zip(imported_results(run))
    {
        let replaced = *at_checkpoint && !r.is_provisional();
        if !replaced
            && (figures(s)? != figures(&r)? || !s.flags.iter().all(|f| r.flags.contains(f)))
        {
            return Ok(false);
        }
    }
    // What says which run it is and on what it ran is the stored copy's: a file with its
    // label, command, plan or a host's hardware or system edited is another run (an
    // edited CPU model replaced the stored one). Other facts may grow as the run goes
    // on (`server.cpus` said per sweep point once a second point ran).
    let same_run = (
        &stored.label,
        stored.created_at,
        &stored.command,
        &stored.plan,
    ) == (&run.label, run.created_at, &run.command, &run.plan);
    let fixed = |k: &str| ["cpu.", "mem.", "os."].iter().any(|p| k.starts_with(p));
    let kept = |h: &model::HostDisclosure| {
        run.hosts.iter().any(|f| {
            f.host == h.host
                && f.role == h.role
                && h.facts
                    .iter()
                    .filter(|(k, _)| fixed(k))
                    .all(|(k, v)| f.facts.get(k) == Some(v))
        })
    };
    Ok(same_run && stored.hosts.iter().all(kept))
}

/// What a result measured, as [`holds_less`] holds it against another copy: an edited
/// figure is another result.
fn figures(r: &ResultRecord) -> anyhow::Result<serde_json::Value> {
    Ok(serde_json::json!({
        "params": r.params,
        "settings": r.settings,
        "headline": r.headline,
        "duration_s": r.duration_s,
        "metrics": r.metrics,
        "missing": r.missing,
        "histograms": r.histograms,
        "telemetry_summary": r.telemetry_summary,
    }))
}

/// A result's status as imported: one still running has no process here to finish it.
fn imported_status_of(s: Status) -> Status {
    if s == Status::Running {
        Status::Interrupted
    } else {
        s
    }
}

/// Whether `e` is SQLite finding a store's file damaged (SQLITE_CORRUPT, "database disk
/// image is malformed"): a page that does not read as what it should, which a later
/// query meets long after the file opened.
pub fn is_damaged(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        matches!(
            c.downcast_ref::<rusqlite::Error>(),
            Some(rusqlite::Error::SqliteFailure(f, _)) if f.code == rusqlite::ErrorCode::DatabaseCorrupt
        )
    })
}

/// `e`, when it is the store at `path` found damaged ([`is_damaged`]), saying which file
/// and what to do next; otherwise `e` as it is.
/// Explained once: the store explains what it meets opening a file, the binary what any
/// command met later.
pub fn explain_damage(e: anyhow::Error, path: &Path) -> anyhow::Error {
    if !is_damaged(&e) || e.downcast_ref::<Damaged>().is_some() {
        return e;
    }
    let p = path.display();
    e.context(Damaged(format!(
        "the results store {p} is damaged: restore it from a backup; or recover what it still \
         holds with `sqlite3 {p} .recover | sqlite3 {p}.recovered` and use --db {p}.recovered; \
         or start a new store with --db NEW_PATH"
    )))
}

/// The context [`explain_damage`] adds.
#[derive(Debug)]
struct Damaged(String);

impl std::fmt::Display for Damaged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Default location of the results store.
pub fn default_path() -> std::path::PathBuf {
    if let Some(p) = std::env::var_os("RACKBENCH_DB") {
        return p.into();
    }
    let base = std::env::var_os("XDG_DATA_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".local/share")))
        .unwrap_or_else(|| std::path::PathBuf::from("."));
    base.join("rackbench").join("results.sqlite")
}

/// The `--db` option a command line to copy needs for the store at `path` (with a space
/// before it): none for the default store, where the suggested command finds it alone.
pub fn db_option(path: &Path) -> String {
    if path == default_path() {
        String::new()
    } else {
        format!(" --db {}", model::shell_word(&path.to_string_lossy()))
    }
}

/// The host a run's figures are of: the system under test (its hostname when the
/// disclosure calls it `local`), else a net pair's receiver (the end a pair measures the
/// platform at), else the first host that is not only the controller, else the first.
pub fn summary_host(hosts: &[HostDisclosure]) -> String {
    let h = with_role(hosts, "sut")
        .next()
        .or_else(|| with_role(hosts, "receiver").next())
        .or_else(|| hosts.iter().find(|h| h.role != "controller"))
        .or_else(|| hosts.first());
    h.map_or_else(String::new, |h| model::host_display_name(hosts, &h.host))
}

/// The host a run is known by in listings: [`summary_host`], or for net pairs between
/// hosts and no system under test, the pair as it is written on the command line
/// (`rbh2>rbh1`), not the controller that only drove it (acceptance N, 8), and for a
/// matrix of pairs (`--hosts A,B,C`) its hosts (`A,B,C`), not the first receiver alone.
pub fn listing_host(hosts: &[HostDisclosure]) -> String {
    let name = |h: &HostDisclosure| model::host_display_name(hosts, &h.host);
    let senders: Vec<&HostDisclosure> = with_role(hosts, "sender").collect();
    let receivers: Vec<&HostDisclosure> = with_role(hosts, "receiver").collect();
    if with_role(hosts, "sut").next().is_some() {
        return summary_host(hosts);
    }
    match (senders.as_slice(), receivers.as_slice()) {
        ([s], [r]) if s.host != r.host => format!("{}>{}", name(s), name(r)),
        ([], []) => summary_host(hosts),
        _ => hosts
            .iter()
            .filter(|h| {
                model::role_includes(&h.role, "sender") || model::role_includes(&h.role, "receiver")
            })
            .map(name)
            .collect::<Vec<_>>()
            .join(","),
    }
}

/// The hosts whose role over the run (`sut+loadgen`, `receiver+sender`) includes `role`.
fn with_role<'a>(
    hosts: &'a [HostDisclosure],
    role: &'a str,
) -> impl Iterator<Item = &'a HostDisclosure> + 'a {
    hosts
        .iter()
        .filter(move |h| model::role_includes(&h.role, role))
}

/// A transaction that writes: IMMEDIATE, so it takes the write lock at BEGIN, where the
/// busy timeout waits for another process's writer. A DEFERRED one that reads first and
/// then writes gets SQLITE_BUSY at once when another process wrote in between (SQLite
/// cannot wait there without deadlocking), which is how two runs started together on one
/// store used to fail with "database is locked".
fn write_tx(conn: &mut Connection) -> rusqlite::Result<rusqlite::Transaction<'_>> {
    conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
}

/// `configure`, tried again while another process holds the lock it needs. Switching a
/// fresh file to WAL takes an exclusive lock, and SQLite answers SQLITE_BUSY at once there,
/// without calling the busy handler, while another connection is switching or recovering
/// it (so several runs started together on a new store failed one time in a few hundred).
/// Waits up to the same `BUSY_TIMEOUT` the busy handler would.
fn configure_retrying(conn: &Connection) -> rusqlite::Result<()> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    let mut pause = Duration::from_millis(1);
    loop {
        match configure(conn) {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(
                    e.code,
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                ) && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // WAL: readers (`rackbench runs`) do not block the writer. Some filesystems refuse
    // WAL and SQLite stays in its rollback journal, which is still correct.
    let _mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    Ok(())
}

// ---- text forms of the columns ----

/// RFC 3339, UTC, always nine fractional digits: exact, and sorts as text.
fn ts(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Nanos, true)
}

fn parse_ts(s: &str) -> anyhow::Result<DateTime<Utc>> {
    Ok(DateTime::parse_from_rfc3339(s)
        .with_context(|| format!("bad timestamp `{s}` in the store"))?
        .with_timezone(&Utc))
}

fn status_str(s: Status) -> &'static str {
    match s {
        Status::Ok => "ok",
        Status::Interrupted => "interrupted",
        Status::Failed => "failed",
        Status::Running => "running",
    }
}

fn parse_status(s: &str) -> anyhow::Result<Status> {
    Ok(match s {
        "ok" => Status::Ok,
        "interrupted" => Status::Interrupted,
        "failed" => Status::Failed,
        "running" => Status::Running,
        other => bail!("unknown status `{other}` in the store"),
    })
}

fn severity_str(s: Severity) -> &'static str {
    match s {
        Severity::Warning => "warning",
        Severity::Invalid => "invalid",
    }
}

fn parse_severity(s: &str) -> anyhow::Result<Severity> {
    Ok(match s {
        "warning" => Severity::Warning,
        "invalid" => Severity::Invalid,
        other => bail!("unknown flag severity `{other}` in the store"),
    })
}

fn not_found(run_id: &str, path: &Path) -> String {
    format!(
        "no run {run_id} in the results store {}; list runs with `rackbench runs`",
        path.display()
    )
}

// ---- writes ----

fn run_exists(conn: &Connection, run_id: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM runs WHERE id = ?1)",
        [run_id],
        |r| r.get(0),
    )
}

fn require_run(conn: &Connection, run_id: &str, path: &Path) -> anyhow::Result<()> {
    if !run_exists(conn, run_id)? {
        bail!("{}", not_found(run_id, path));
    }
    Ok(())
}

fn insert_hosts(conn: &Connection, run_id: &str, hosts: &[HostDisclosure]) -> anyhow::Result<()> {
    let mut host_stmt =
        conn.prepare_cached("INSERT INTO hosts (run_id, ord, host, role) VALUES (?1, ?2, ?3, ?4)")?;
    let mut fact_stmt = conn.prepare_cached(
        "INSERT INTO host_facts (run_id, host_ord, key, value, missing) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for (i, h) in hosts.iter().enumerate() {
        host_stmt.execute(params![run_id, i as i64, h.host, h.role])?;
        for (k, f) in &h.facts {
            fact_stmt.execute(params![run_id, i as i64, k, f.value, f.missing])?;
        }
    }
    Ok(())
}

fn insert_idle(conn: &Connection, run_id: &str, ord: i64, idle: &IdlePower) -> anyhow::Result<()> {
    // A store kept at an older schema (the migration tests' `open_at_version`) has no
    // cpus and flags columns: what it holds is written without them.
    if schema::user_version(conn)? >= i64::from(schema::IDLE_CPU_SINCE) {
        conn.execute(
            "INSERT INTO idle_power (run_id, ord, host, duration_s, power, cpus, flags)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                run_id,
                ord,
                idle.host,
                idle.duration_s,
                serde_json::to_string(&idle.power)?,
                serde_json::to_string(&idle.cpus)?,
                serde_json::to_string(&idle.flags)?
            ],
        )?;
    } else {
        conn.execute(
            "INSERT INTO idle_power (run_id, ord, host, duration_s, power) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                run_id,
                ord,
                idle.host,
                idle.duration_s,
                serde_json::to_string(&idle.power)?
            ],
        )?;
    }
    Ok(())
}

/// What an error storing `r` in run `run_id` says it was doing.
fn storing(r: &ResultRecord, run_id: &str) -> String {
    format!(
        "storing result step {} ({}) of run {run_id}",
        r.step, r.test
    )
}

/// Insert one result at `ord`, its telemetry samples numbered from `samples_from` (the
/// ones before are another's to hand over: [`Store::put_result_adding_samples`]), and
/// return its id.
fn insert_result(
    conn: &Connection,
    run_id: &str,
    ord: i64,
    r: &ResultRecord,
    samples_from: usize,
) -> anyhow::Result<i64> {
    // NULL, as for a result stored before settings were kept, when none are known.
    let settings = (!r.settings.is_empty())
        .then(|| serde_json::to_string(&r.settings))
        .transpose()?;
    let params_json = serde_json::to_string(&r.params)?;
    let started = ts(&r.started_at);
    let row = params![
        run_id,
        ord,
        r.step,
        r.repetition,
        r.workload,
        r.test,
        params_json,
        r.headline,
        started,
        r.duration_s,
        status_str(r.status),
        r.error,
        settings,
    ];
    // A store kept at an older schema (the migration tests' `open_at_version`) has no
    // settings column: what it holds is written without them.
    if schema::user_version(conn)? >= i64::from(schema::SETTINGS_SINCE) {
        conn.execute(
            "INSERT INTO results (run_id, ord, step, repetition, workload, test, params,
                                  headline, started_at, duration_s, status, error, settings)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            row,
        )?;
    } else {
        conn.execute(
            "INSERT INTO results (run_id, ord, step, repetition, workload, test, params,
                                  headline, started_at, duration_s, status, error)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            &row[..12],
        )?;
    }
    let rid = conn.last_insert_rowid();

    let mut stmt = conn.prepare_cached(
        "INSERT INTO metrics (result_id, ord, name, value, unit, labels) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for (i, m) in r.metrics.iter().enumerate() {
        stmt.execute(params![
            rid,
            i as i64,
            m.name,
            m.value,
            m.unit,
            serde_json::to_string(&m.labels)?
        ])?;
    }
    let mut stmt = conn.prepare_cached(
        "INSERT INTO missing_metrics (result_id, ord, name, reason) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for (i, m) in r.missing.iter().enumerate() {
        stmt.execute(params![rid, i as i64, m.name, m.reason])?;
    }
    let mut stmt = conn.prepare_cached(
        "INSERT INTO histograms (result_id, ord, name, kind, unit, count, min_ns, mean_ns,
                                 stdev_ns, p50_ns, p90_ns, p99_ns, p999_ns, max_ns, encoded)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
    )?;
    for (i, h) in r.histograms.iter().enumerate() {
        let s = &h.summary;
        stmt.execute(params![
            rid, i as i64, h.name, h.kind, h.unit, s.count, s.min_ns, s.mean_ns, s.stdev_ns,
            s.p50_ns, s.p90_ns, s.p99_ns, s.p999_ns, s.max_ns, h.encoded
        ])?;
    }
    let mut stmt = conn.prepare_cached(
        "INSERT INTO telemetry (result_id, ord, host, t_s, interval_s, warmup, sample)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for (i, t) in r.telemetry.iter().enumerate() {
        stmt.execute(params![
            rid,
            (samples_from + i) as i64,
            t.host,
            t.t_s,
            t.interval_s,
            t.warmup,
            serde_json::to_string(t)?
        ])?;
    }
    let mut stmt = conn.prepare_cached(
        "INSERT INTO telemetry_summary (result_id, ord, host, samples, summary)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for (i, t) in r.telemetry_summary.iter().enumerate() {
        stmt.execute(params![
            rid,
            i as i64,
            t.host,
            t.samples,
            serde_json::to_string(t)?
        ])?;
    }
    let mut stmt = conn.prepare_cached(
        "INSERT INTO flags (result_id, ord, code, severity, message) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for (i, f) in r.flags.iter().enumerate() {
        stmt.execute(params![
            rid,
            i as i64,
            f.code,
            severity_str(f.severity),
            f.message
        ])?;
    }
    Ok(rid)
}

// ---- reads ----

fn load_hosts(conn: &Connection, run_id: &str) -> anyhow::Result<Vec<HostDisclosure>> {
    let mut stmt =
        conn.prepare_cached("SELECT ord, host, role FROM hosts WHERE run_id = ?1 ORDER BY ord")?;
    let rows: Vec<(i64, String, String)> = stmt
        .query_map([run_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut facts_stmt = conn.prepare_cached(
        "SELECT key, value, missing FROM host_facts WHERE run_id = ?1 AND host_ord = ?2",
    )?;
    let mut hosts = Vec::with_capacity(rows.len());
    for (ord, host, role) in rows {
        let facts: BTreeMap<String, Fact> = facts_stmt
            .query_map(params![run_id, ord], |r| {
                Ok((
                    r.get(0)?,
                    Fact {
                        value: r.get(1)?,
                        missing: r.get(2)?,
                    },
                ))
            })?
            .collect::<rusqlite::Result<_>>()?;
        hosts.push(HostDisclosure { host, role, facts });
    }
    Ok(hosts)
}

fn load_run(conn: &Connection, id: &str, path: &Path) -> anyhow::Result<RunRecord> {
    type Header = (
        u32,
        Option<String>,
        String,
        Option<String>,
        String,
        Option<String>,
        String,
        String,
        String,
    );
    let header: Option<Header> = conn
        .query_row(
            "SELECT format_version, label, created_at, finished_at, status, error,
                    rackbench_version, command, plan
             FROM runs WHERE id = ?1",
            [id],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    r.get(7)?,
                    r.get(8)?,
                ))
            },
        )
        .optional()?;
    let Some((format_version, label, created, finished, status, error, version, command, plan)) =
        header
    else {
        bail!("{}", not_found(id, path));
    };

    let mut idle_power = Vec::new();
    {
        // A store opened read-only may be older than the cpus and flags columns (v6).
        let cols = if schema::user_version(conn)? >= i64::from(schema::IDLE_CPU_SINCE) {
            "cpus, flags"
        } else {
            "NULL, NULL"
        };
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT host, duration_s, power, {cols} FROM idle_power WHERE run_id = ?1 ORDER BY ord"
        ))?;
        let mut rows = stmt.query([id])?;
        while let Some(row) = rows.next()? {
            let power: String = row.get(2)?;
            let cpus: Option<String> = row.get(3)?;
            let flags: Option<String> = row.get(4)?;
            idle_power.push(IdlePower {
                host: row.get(0)?,
                duration_s: row.get(1)?,
                power: serde_json::from_str(&power).context("idle power JSON")?,
                cpus: cpus
                    .map(|c| serde_json::from_str(&c))
                    .transpose()
                    .context("idle power CPU JSON")?
                    .unwrap_or_default(),
                flags: flags
                    .map(|f| serde_json::from_str(&f))
                    .transpose()
                    .context("idle power flags JSON")?
                    .unwrap_or_default(),
            });
        }
    }

    let mut results = Vec::new();
    {
        // A store opened read-only may be older than the settings column (v5).
        let settings_col = if schema::user_version(conn)? >= i64::from(schema::SETTINGS_SINCE) {
            "settings"
        } else {
            "NULL"
        };
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT id, step, repetition, workload, test, params, headline, started_at,
                    duration_s, status, error, {settings_col}
             FROM results WHERE run_id = ?1 ORDER BY ord"
        ))?;
        let mut rows = stmt.query([id])?;
        while let Some(row) = rows.next()? {
            let rid: i64 = row.get(0)?;
            let params_json: String = row.get(5)?;
            let started: String = row.get(7)?;
            let status: String = row.get(9)?;
            let settings_json: Option<String> = row.get(11)?;
            results.push(ResultRecord {
                workload: row.get(3)?,
                test: row.get(4)?,
                step: row.get(1)?,
                repetition: row.get(2)?,
                params: serde_json::from_str(&params_json).context("result params JSON")?,
                settings: settings_json
                    .map(|j| serde_json::from_str(&j).context("result settings JSON"))
                    .transpose()?
                    .unwrap_or_default(),
                headline: row.get(6)?,
                started_at: parse_ts(&started)?,
                duration_s: row.get(8)?,
                metrics: Vec::new(),
                missing: Vec::new(),
                histograms: Vec::new(),
                telemetry: Vec::new(),
                telemetry_summary: Vec::new(),
                flags: Vec::new(),
                status: parse_status(&status)?,
                error: row.get(10)?,
            });
            let r = results.last_mut().expect("just pushed");
            load_result_children(conn, rid, r)?;
            // Records stored before the rule meet new ones at their test's point.
            r.drop_unread();
        }
    }

    Ok(RunRecord {
        format_version,
        id: id.to_string(),
        label,
        created_at: parse_ts(&created)?,
        finished_at: finished.as_deref().map(parse_ts).transpose()?,
        rackbench_version: version,
        command,
        plan: serde_json::from_str(&plan).context("run plan JSON")?,
        hosts: load_hosts(conn, id)?,
        idle_power,
        results,
        status: parse_status(&status)?,
        error,
    })
}

fn load_result_children(conn: &Connection, rid: i64, r: &mut ResultRecord) -> anyhow::Result<()> {
    let mut stmt = conn.prepare_cached(
        "SELECT name, value, unit, labels FROM metrics WHERE result_id = ?1 ORDER BY ord",
    )?;
    let mut rows = stmt.query([rid])?;
    while let Some(row) = rows.next()? {
        let labels: String = row.get(3)?;
        let value: Option<f64> = row.get(1)?;
        r.metrics.push(Metric {
            name: row.get(0)?,
            value: value.unwrap_or(f64::NAN),
            unit: row.get(2)?,
            labels: serde_json::from_str(&labels).context("metric labels JSON")?,
        });
    }

    let mut stmt = conn.prepare_cached(
        "SELECT name, reason FROM missing_metrics WHERE result_id = ?1 ORDER BY ord",
    )?;
    r.missing = stmt
        .query_map([rid], |row| {
            Ok(MissingMetric {
                name: row.get(0)?,
                reason: row.get(1)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;

    let mut stmt = conn.prepare_cached(
        "SELECT name, kind, unit, count, min_ns, mean_ns, stdev_ns, p50_ns, p90_ns, p99_ns,
                p999_ns, max_ns, encoded
         FROM histograms WHERE result_id = ?1 ORDER BY ord",
    )?;
    r.histograms = stmt
        .query_map([rid], |row| {
            Ok(HistogramRecord {
                name: row.get(0)?,
                kind: row.get(1)?,
                unit: row.get(2)?,
                summary: LatencySummary {
                    count: row.get(3)?,
                    min_ns: row.get(4)?,
                    mean_ns: row.get(5)?,
                    stdev_ns: row.get(6)?,
                    p50_ns: row.get(7)?,
                    p90_ns: row.get(8)?,
                    p99_ns: row.get(9)?,
                    p999_ns: row.get(10)?,
                    max_ns: row.get(11)?,
                },
                encoded: row.get(12)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;

    let mut stmt =
        conn.prepare_cached("SELECT sample FROM telemetry WHERE result_id = ?1 ORDER BY ord")?;
    let mut rows = stmt.query([rid])?;
    while let Some(row) = rows.next()? {
        let s: String = row.get(0)?;
        let sample: TelemetrySample = serde_json::from_str(&s).context("telemetry sample JSON")?;
        r.telemetry.push(sample);
    }

    let mut stmt = conn.prepare_cached(
        "SELECT summary FROM telemetry_summary WHERE result_id = ?1 ORDER BY ord",
    )?;
    let mut rows = stmt.query([rid])?;
    while let Some(row) = rows.next()? {
        let s: String = row.get(0)?;
        let summary: TelemetrySummary =
            serde_json::from_str(&s).context("telemetry summary JSON")?;
        r.telemetry_summary.push(summary);
    }

    let mut stmt = conn.prepare_cached(
        "SELECT code, severity, message FROM flags WHERE result_id = ?1 ORDER BY ord",
    )?;
    let mut rows = stmt.query([rid])?;
    while let Some(row) = rows.next()? {
        let sev: String = row.get(1)?;
        r.flags.push(Flag {
            code: row.get(0)?,
            severity: parse_severity(&sev)?,
            message: row.get(2)?,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
