//! What differs between database engines, and nothing else: one TPC-C model (the
//! transactions' inputs in [`crate::txn`], the data generator in [`crate::populate`],
//! the consistency conditions in [`crate::check`], NOPM/TPM in [`crate::results`]) runs
//! on every engine through these traits.
//!
//! Adding an engine (a third, after PostgreSQL in [`crate::pg`] and MariaDB/MySQL in
//! [`crate::mariadb`]) means: a [`Dialect`] (its DDL and server-side transactions), a
//! [`Backend`] (connection settings of one database: connect, say where without the
//! password), a [`Conn`] (the admin connection: DDL, bulk load, build metadata,
//! counters, snapshot for the check) and a [`Txns`] (one virtual user's five
//! transactions, each one round trip), then a variant of [`EngineKind`] and a line in
//! [`backend_for_endpoint`]. Launching a server of that engine is optional (`--dsn`).

use serde::{Deserialize, Serialize};

/// The engines oltp drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    #[default]
    Postgresql,
    Mariadb,
}

impl EngineKind {
    /// `--engine`'s value (`mysql` is MariaDB's client protocol, the same engine here).
    pub fn parse(s: &str) -> anyhow::Result<EngineKind> {
        match s.trim().to_ascii_lowercase().as_str() {
            "postgresql" | "postgres" | "pg" => Ok(EngineKind::Postgresql),
            "mariadb" | "mysql" => Ok(EngineKind::Mariadb),
            other => anyhow::bail!("unknown --engine `{other}`: choose postgresql or mariadb"),
        }
    }

    /// The engine a `--dsn` names by its scheme (`mysql://`, `mariadb://`), if it does.
    pub fn from_dsn(dsn: &str) -> Option<EngineKind> {
        let lower = dsn.trim_start().to_ascii_lowercase();
        if lower.starts_with("mysql://") || lower.starts_with("mariadb://") {
            Some(EngineKind::Mariadb)
        } else if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
            Some(EngineKind::Postgresql)
        } else {
            None
        }
    }

    /// Its name in messages and the disclosure.
    pub fn label(self) -> &'static str {
        match self {
            EngineKind::Postgresql => "PostgreSQL",
            EngineKind::Mariadb => "MariaDB",
        }
    }

    /// Does the engine count transactions for the whole server rather than per
    /// database? MariaDB's Com_commit is server-wide: its TPM is then read once, never
    /// summed over the databases of a run.
    pub fn xacts_server_wide(self) -> bool {
        match self {
            EngineKind::Postgresql => false,
            EngineKind::Mariadb => true,
        }
    }

    /// The SQL this engine speaks.
    pub fn dialect(self) -> &'static Dialect {
        match self {
            EngineKind::Postgresql => &crate::pg::DIALECT,
            EngineKind::Mariadb => &crate::mariadb::DIALECT,
        }
    }
}

/// An engine's SQL for a build: plain data, so a reader sees the whole schema at once.
pub struct Dialect {
    /// The nine tables and the build metadata table, one statement each.
    pub tables: &'static [&'static str],
    /// Run after the load, in parallel, one batch per table.
    pub indexes: &'static [&'static str],
    /// The five transactions as server-side code, one statement each.
    pub procedures: &'static [&'static str],
    /// Run by each loading connection first (bulk-load shortcuts).
    pub load_session: &'static str,
    /// Run by each indexing connection first.
    pub index_session: &'static str,
    /// Run once after indexing (planner statistics).
    pub analyze: &'static str,
    /// Every table of a build, for dropping one from a database that is the user's.
    pub drop_tables: &'static str,
    /// The tables of the connected database, comma-separated ('' for none): what a
    /// build would replace, said before anything is dropped.
    pub user_tables: &'static str,
}

/// Why a transaction did not commit: a rollback the spec asks for, a database error
/// (deadlock, lock timeout: a data point), or a lost connection (ends the user).
#[derive(Debug)]
pub enum TxnError {
    Rollback,
    Db(String),
    Lost(String),
}

/// New-Order's inputs (2.4.1), order lines sorted by (supply warehouse, item) so that
/// concurrent New-Orders lock stock rows in one order and cannot deadlock.
#[derive(Debug, Clone)]
pub struct NewOrder {
    pub w: u32,
    pub d: u32,
    pub c: u32,
    /// (supply warehouse, item, quantity) per line; a rollback's last item is unused.
    pub lines: Vec<(u32, u32, u32)>,
}

/// Payment's inputs (2.5.1): customer by id, or by last name when `c_id` is 0.
#[derive(Debug, Clone)]
pub struct Payment {
    pub w: u32,
    pub d: u32,
    pub c_w: u32,
    pub c_d: u32,
    pub c_id: u32,
    pub c_last: String,
    pub amount_cents: u32,
}

/// Order-Status's inputs (2.6.1): customer by id, or by last name when `c_id` is 0.
#[derive(Debug, Clone)]
pub struct OrderStatus {
    pub w: u32,
    pub d: u32,
    pub c_id: u32,
    pub c_last: String,
}

/// One virtual user's connection: the five transactions, each one round trip to the
/// engine's server-side code (a prepared call).
pub trait Txns: Send {
    fn new_order(&mut self, t: &NewOrder) -> Result<(), TxnError>;
    fn payment(&mut self, t: &Payment) -> Result<(), TxnError>;
    fn order_status(&mut self, t: &OrderStatus) -> Result<(), TxnError>;
    /// Returns how many of the ten districts had an order to deliver.
    fn delivery(&mut self, w: u32, carrier: u32) -> Result<u32, TxnError>;
    fn stock_level(&mut self, w: u32, d: u32, threshold: u32) -> Result<(), TxnError>;
    /// Have the server count everything this user did so far in the transaction
    /// counter now, when it counts late (PostgreSQL flushes a backend's statistics at
    /// most once a second). Nothing to do where the counter is live (MariaDB's status
    /// variables are summed over the sessions when read).
    fn flush_stats(&mut self) {}
    /// Say, where every host's monitor can see it, that this user's work up to here is
    /// counted (after [`Txns::flush_stats`] at the measured run's start: PostgreSQL
    /// renames the session, one transaction of its own). Nothing where counters are live.
    fn mark_counted(&mut self) {}
}

/// The server's counters behind NOPM and TPM at one instant.
#[derive(Debug, Clone, Copy)]
pub struct Counts {
    /// sum(d_next_o_id) over the districts: grows by one per committed New-Order.
    pub next_o_id_sum: i64,
    /// Committed + rolled back transactions (this database's, or the server's: see
    /// [`EngineKind::xacts_server_wide`]).
    pub xacts: i64,
}

/// An admin connection to one database: what a build, the monitor and the check need.
pub trait Conn: Send {
    /// Run one or more statements, no results.
    fn batch(&mut self, sql: &str) -> anyhow::Result<()>;
    /// The single integer a query returns (NULL: 0).
    fn query_i64(&mut self, sql: &str) -> anyhow::Result<i64>;
    /// The single text value a query returns.
    fn query_text(&mut self, sql: &str) -> anyhow::Result<String>;
    /// Load complete tab-separated rows (PostgreSQL COPY text format, which MariaDB's
    /// LOAD DATA reads as is: `\N` for NULL, backslash escapes) into `table`.
    fn load(&mut self, table: &str, rows: &[u8]) -> anyhow::Result<()>;
    /// The server's clock as `YYYY-MM-DD HH:MM:SS` (the build's timestamps).
    fn now_text(&mut self) -> anyhow::Result<String>;
    /// The build metadata (key, value) rows; None when the table does not exist.
    fn meta(&mut self) -> anyhow::Result<Option<Vec<(String, String)>>>;
    fn set_meta(&mut self, key: &str, value: &str) -> anyhow::Result<()>;
    /// Start one read-only snapshot for the consistency check / end it.
    fn begin_snapshot(&mut self) -> anyhow::Result<()>;
    fn end_snapshot(&mut self) -> anyhow::Result<()>;
    /// The counters behind NOPM and TPM.
    fn counts(&mut self) -> anyhow::Result<Counts>;
    /// Does one [`Conn::counts`] reading count as a transaction itself (PostgreSQL's
    /// autocommit SELECT does; MariaDB's Com_commit does not)?
    fn reading_is_a_transaction(&self) -> bool;
    /// Sessions still open under the virtual users' name (their counters are complete
    /// once they are gone); 0 where counters are never late.
    fn vu_sessions(&mut self) -> anyhow::Result<i64>;
    /// The virtual users' sessions (of any generator) that have not yet marked their
    /// work counted ([`Txns::mark_counted`]), and those that have; (0, 0) where counters
    /// are never late.
    fn vus_counted(&mut self) -> anyhow::Result<(i64, i64)>;
    /// Have the server count this connection's transactions so far now (as
    /// [`Txns::flush_stats`]); nothing where counters are live.
    fn flush_stats(&mut self) {}
    fn server_version(&mut self) -> anyhow::Result<String>;
    /// Database administration (from a connection to any database of the server).
    fn database_exists(&mut self, db: &str) -> anyhow::Result<bool>;
    fn create_database(&mut self, db: &str) -> anyhow::Result<()>;
    /// A copy of `template`'s build, when the engine can copy a database (PostgreSQL's
    /// CREATE DATABASE ... TEMPLATE); Ok(false) when it cannot (load instead).
    fn copy_database(&mut self, db: &str, template: &str) -> anyhow::Result<bool>;
    fn drop_database(&mut self, db: &str) -> anyhow::Result<()>;
}

/// Where one database is and how to log in: connection settings, password included
/// (never shown: [`Backend::endpoint`] leaves it out).
pub trait Backend: Send + Sync {
    fn engine(&self) -> EngineKind;
    fn db_name(&self) -> String;
    /// The same server, database `db`.
    fn with_db(&self, db: &str) -> Box<dyn Backend>;
    fn connect(&self) -> anyhow::Result<Box<dyn Conn>>;
    /// A virtual user's connection, its transactions prepared.
    fn connect_vu(&self) -> anyhow::Result<Box<dyn Txns>>;
    /// A connection string a load generator can use, never with the password.
    fn endpoint(&self) -> String;
}

/// The backend of an endpoint the service handed out (or a `--dsn`), with the password
/// the job carries (if any). The scheme says the engine: `mysql://`/`mariadb://` is
/// MariaDB, anything else a libpq connection string.
pub fn backend_for_endpoint(
    endpoint: &str,
    password: Option<&str>,
) -> anyhow::Result<Box<dyn Backend>> {
    match EngineKind::from_dsn(endpoint) {
        Some(EngineKind::Mariadb) => Ok(Box::new(crate::mariadb::MyDb::from_dsn(
            endpoint, password,
        )?)),
        _ => Ok(Box::new(crate::server::endpoint_config(
            endpoint, password,
        )?)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scheme_names_the_engine() {
        assert_eq!(
            EngineKind::from_dsn("mysql://u@h/db"),
            Some(EngineKind::Mariadb)
        );
        assert_eq!(
            EngineKind::from_dsn(" MariaDB://u@h/db"),
            Some(EngineKind::Mariadb)
        );
        assert_eq!(
            EngineKind::from_dsn("postgresql://u@h/db"),
            Some(EngineKind::Postgresql)
        );
        assert_eq!(EngineKind::from_dsn("host=h dbname=db"), None);
        assert_eq!(EngineKind::parse("MySQL").unwrap(), EngineKind::Mariadb);
        assert!(EngineKind::parse("oracle").is_err());
    }
}
