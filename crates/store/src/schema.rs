//! The SQLite schema and its migrations.
//!
//! The schema version lives in `PRAGMA user_version` (0 = empty file). Migrations are an
//! ordered list: migration `i` takes the file from version `i` to `i + 1`. The pending ones
//! run in one IMMEDIATE transaction together with the version bump, so two processes opening
//! a fresh store at once cannot both migrate it, and a crash mid-migration leaves the old
//! version intact. Never edit a released migration: append a new one.
//!
//! Lists inside a result (metrics, flags, histograms...) keep their order through an `ord`
//! column, so a stored run loads back exactly as it was recorded. Metrics, histogram
//! summaries, flags and missing metrics are real rows so plain SQL can query them; the
//! telemetry samples and summaries are JSON per row (with the columns one filters on).

use std::path::Path;

use anyhow::{bail, Context};
use rusqlite::{Connection, TransactionBehavior};

/// v1: the tables.
const V1: &str = r#"
CREATE TABLE runs (
    id                TEXT PRIMARY KEY NOT NULL,
    format_version    INTEGER NOT NULL,
    label             TEXT,
    created_at        TEXT NOT NULL,   -- RFC 3339, UTC, nanoseconds: sorts as text
    finished_at       TEXT,
    status            TEXT NOT NULL CHECK (status IN ('ok', 'interrupted', 'failed', 'running')),
    error             TEXT,
    rackbench_version TEXT NOT NULL,
    command           TEXT NOT NULL,
    plan              TEXT NOT NULL    -- JSON
);
CREATE TABLE hosts (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    ord    INTEGER NOT NULL,
    host   TEXT NOT NULL,
    role   TEXT NOT NULL,
    PRIMARY KEY (run_id, ord)
);
CREATE TABLE host_facts (
    run_id   TEXT NOT NULL,
    host_ord INTEGER NOT NULL,
    key      TEXT NOT NULL,
    value    TEXT,
    missing  TEXT,
    PRIMARY KEY (run_id, host_ord, key),
    FOREIGN KEY (run_id, host_ord) REFERENCES hosts(run_id, ord) ON DELETE CASCADE
);
CREATE TABLE idle_power (
    run_id     TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    ord        INTEGER NOT NULL,
    host       TEXT NOT NULL,
    duration_s REAL NOT NULL,
    power      TEXT NOT NULL,          -- JSON array of PowerSummary
    PRIMARY KEY (run_id, ord)
);
CREATE TABLE results (
    id         INTEGER PRIMARY KEY,
    run_id     TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    ord        INTEGER NOT NULL,
    step       INTEGER NOT NULL,
    repetition INTEGER NOT NULL,
    workload   TEXT NOT NULL,
    test       TEXT NOT NULL,
    params     TEXT NOT NULL,          -- JSON object
    headline   TEXT NOT NULL,
    started_at TEXT NOT NULL,
    duration_s REAL NOT NULL,
    status     TEXT NOT NULL CHECK (status IN ('ok', 'interrupted', 'failed', 'running')),
    error      TEXT,
    UNIQUE (run_id, ord)
);
CREATE TABLE metrics (
    result_id INTEGER NOT NULL REFERENCES results(id) ON DELETE CASCADE,
    ord       INTEGER NOT NULL,
    name      TEXT NOT NULL,
    value     REAL,                    -- NULL only for NaN (SQLite stores NaN as NULL)
    unit      TEXT NOT NULL,
    labels    TEXT NOT NULL,           -- JSON object
    PRIMARY KEY (result_id, ord)
);
CREATE TABLE missing_metrics (
    result_id INTEGER NOT NULL REFERENCES results(id) ON DELETE CASCADE,
    ord       INTEGER NOT NULL,
    name      TEXT NOT NULL,
    reason    TEXT NOT NULL,
    PRIMARY KEY (result_id, ord)
);
CREATE TABLE histograms (
    result_id INTEGER NOT NULL REFERENCES results(id) ON DELETE CASCADE,
    ord       INTEGER NOT NULL,
    name      TEXT NOT NULL,
    kind      TEXT NOT NULL,
    unit      TEXT NOT NULL,
    count     INTEGER NOT NULL,
    min_ns    INTEGER NOT NULL,
    mean_ns   REAL NOT NULL,
    stdev_ns  REAL NOT NULL,
    p50_ns    INTEGER NOT NULL,
    p90_ns    INTEGER NOT NULL,
    p99_ns    INTEGER NOT NULL,
    p999_ns   INTEGER NOT NULL,
    max_ns    INTEGER NOT NULL,
    encoded   TEXT NOT NULL,           -- base64 HdrHistogram V2 DEFLATE
    PRIMARY KEY (result_id, ord)
);
CREATE TABLE telemetry (
    result_id  INTEGER NOT NULL REFERENCES results(id) ON DELETE CASCADE,
    ord        INTEGER NOT NULL,
    host       TEXT NOT NULL,
    t_s        REAL NOT NULL,
    interval_s REAL NOT NULL,
    warmup     INTEGER NOT NULL,
    sample     TEXT NOT NULL,          -- JSON TelemetrySample
    PRIMARY KEY (result_id, ord)
);
CREATE TABLE telemetry_summary (
    result_id INTEGER NOT NULL REFERENCES results(id) ON DELETE CASCADE,
    ord       INTEGER NOT NULL,
    host      TEXT NOT NULL,
    samples   INTEGER NOT NULL,
    summary   TEXT NOT NULL,           -- JSON TelemetrySummary
    PRIMARY KEY (result_id, ord)
);
CREATE TABLE flags (
    result_id INTEGER NOT NULL REFERENCES results(id) ON DELETE CASCADE,
    ord       INTEGER NOT NULL,
    code      TEXT NOT NULL,
    severity  TEXT NOT NULL CHECK (severity IN ('warning', 'invalid')),
    message   TEXT NOT NULL,
    PRIMARY KEY (result_id, ord)
);
"#;

/// v2: indexes for the lookups `runs`/`resolve` make, and a long-form view for SQL users
/// (`SELECT * FROM metrics_long WHERE metric = 'ops_per_s'`).
const V2: &str = r#"
CREATE INDEX runs_created ON runs(created_at);
CREATE INDEX runs_label ON runs(label, created_at);
CREATE INDEX results_run ON results(run_id, ord);
CREATE INDEX metrics_name ON metrics(name);
CREATE VIEW metrics_long AS
    SELECT r.id AS run_id, r.label, res.workload, res.test, res.step, res.repetition,
           res.params, m.name AS metric, m.value, m.unit, m.labels
    FROM runs r
    JOIN results res ON res.run_id = r.id
    JOIN metrics m ON m.result_id = res.id;
"#;

/// v3: which process is writing a run still `running` (pid, its start time in clock
/// ticks since boot, the kernel's boot id), so that a run whose process was killed can be
/// told from one in progress.
const V3: &str = r#"
CREATE TABLE run_owner (
    run_id    TEXT PRIMARY KEY NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    pid       INTEGER NOT NULL,
    starttime INTEGER NOT NULL,
    boot_id   TEXT NOT NULL
);
"#;

/// v4: where the owner runs (its hostname and pid namespace, [`model::process::place`]):
/// a store shared with a container or another machine holds runs whose process this one
/// cannot see, and must not take them for abandoned. Empty for rows written before.
const V4: &str = r#"
ALTER TABLE run_owner ADD COLUMN place TEXT NOT NULL DEFAULT '';
"#;

/// v5: each result's effective settings, defaults included (JSON object,
/// [`model::ResultRecord::settings`]). NULL for results stored before they were kept.
const V5: &str = r#"
ALTER TABLE results ADD COLUMN settings TEXT;
"#;

/// The first version whose results have the `settings` column: an older store opened
/// read-only is read without it.
pub(crate) const SETTINGS_SINCE: u32 = 5;

/// v6: the host's CPU while idle power was measured (JSON array of CpuUtil) and the
/// warnings on the figure (JSON array of Flag), [`model::IdlePower`]. NULL for idle
/// figures stored before they were kept.
const V6: &str = r#"
ALTER TABLE idle_power ADD COLUMN cpus TEXT;
ALTER TABLE idle_power ADD COLUMN flags TEXT;
"#;

/// The first version whose idle power has the `cpus` and `flags` columns: an older store
/// opened read-only is read without them.
pub(crate) const IDLE_CPU_SINCE: u32 = 6;

/// The migrations, in order. The store's version is the number applied.
pub(crate) const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5, V6];

/// The schema version this build writes.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

pub(crate) fn user_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.pragma_query_value(None, "user_version", |r| r.get(0))
}

/// Bring the file to `target` (≤ [`SCHEMA_VERSION`]). Refuses a file from a newer
/// rackbench, and an SQLite file that is not a rackbench store.
pub(crate) fn migrate_to(conn: &mut Connection, path: &Path, target: u32) -> anyhow::Result<()> {
    let target = target.min(SCHEMA_VERSION) as i64;
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .with_context(|| {
            format!(
                "results store {}: cannot lock it to check its schema",
                path.display()
            )
        })?;
    let current = user_version(&tx)?;
    if current > SCHEMA_VERSION as i64 {
        bail!(
            "results store {} has schema version {current}, newer than this rackbench \
             understands ({SCHEMA_VERSION}); upgrade rackbench, or use another store with \
             --db PATH (or RACKBENCH_DB=PATH)",
            path.display()
        );
    }
    if current == 0 {
        let tables: i64 = tx.query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'",
            [],
            |r| r.get(0),
        )?;
        if tables > 0 {
            bail!(
                "{} is an SQLite file but not a rackbench results store; point --db \
                 (or RACKBENCH_DB) at another file",
                path.display()
            );
        }
    }
    for (i, sql) in MIGRATIONS
        .iter()
        .enumerate()
        .take(target as usize)
        .skip(current as usize)
    {
        tx.execute_batch(sql).with_context(|| {
            format!("results store {}: migration to v{}", path.display(), i + 1)
        })?;
        tx.pragma_update(None, "user_version", (i + 1) as i64)?;
    }
    tx.commit()?;
    Ok(())
}

/// The oldest schema a read-only open reads as it is ([`crate::Store::open_read_only`]):
/// the reads query only what v1 made (the owners of v3 and v4 and the results' settings
/// of v5 are read where present).
/// Raise it when a migration changes a table or column the reads use; a store older than
/// it is then refused by the read commands with the command that migrates it.
pub(crate) const OLDEST_READABLE: u32 = 1;

/// The schema version of a store opened read-only, when this build can read it: refuses
/// a store from a newer rackbench, a file that is not a rackbench store, and one older
/// than [`OLDEST_READABLE`] (saying which command migrates it). Writes nothing.
pub(crate) fn check_readable(conn: &Connection, path: &Path) -> anyhow::Result<u32> {
    let current = user_version(conn)?;
    let p = path.display();
    if current > SCHEMA_VERSION as i64 {
        bail!(
            "results store {p} has schema version {current}, newer than this rackbench \
             understands ({SCHEMA_VERSION}); upgrade rackbench, or use another store with \
             --db PATH (or RACKBENCH_DB=PATH)"
        );
    }
    if current == 0 {
        let tables: i64 = conn.query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'",
            [],
            |r| r.get(0),
        )?;
        if tables > 0 {
            bail!(
                "{p} is an SQLite file but not a rackbench results store; point --db \
                 (or RACKBENCH_DB) at another file"
            );
        }
        bail!(
            "{p} holds no results store yet (an empty file); start one with \
             `rackbench --db {p} run ...`, or give another with --db PATH"
        );
    }
    if current < OLDEST_READABLE as i64 {
        bail!(
            "results store {p} has schema version {current}, older than this rackbench \
             reads ({OLDEST_READABLE}); a command that writes to it migrates it to \
             {SCHEMA_VERSION} (`rackbench --db {p} import FILE`, or a `rackbench --db {p} \
             run ...`), after which every command reads it"
        );
    }
    Ok(current as u32)
}
