//! PostgreSQL behind the [`crate::backend`] traits: `postgres::Config` is a
//! [`Backend`], `postgres::Client` a [`Conn`], [`PgVu`] a virtual user's [`Txns`]
//! (prepared `SELECT tpcc_*(...)` calls of the PL/pgSQL functions in [`crate::schema`]).

use std::io::Write;

use anyhow::Context;

use crate::backend::{
    Backend, Conn, Counts, Dialect, EngineKind, NewOrder, OrderStatus, Payment, TxnError, Txns,
};
use crate::schema;
use crate::server;

pub static DIALECT: Dialect = Dialect {
    tables: &[schema::TABLES],
    indexes: schema::INDEXES,
    procedures: &[schema::FUNCTIONS],
    // Bulk load: no need to wait for the WAL flush of each COPY.
    load_session: "SET synchronous_commit = off",
    index_session: "SET maintenance_work_mem = '256MB'",
    analyze: "VACUUM ANALYZE",
    drop_tables: "DROP TABLE IF EXISTS warehouse, district, customer, history, new_order, \
                  orders, order_line, item, stock, rackbench_tpcc CASCADE",
    user_tables: "SELECT COALESCE(string_agg(tablename, ', ' ORDER BY tablename), '') \
                  FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')",
};

/// `application_name` of the virtual users' connections (to find them in pg_stat_activity).
pub const VU_APP_NAME: &str = "rackbench-vu";

/// `application_name` of a virtual user's connection once its work up to the measured
/// run's start is in pg_stat_database ([`Txns::mark_counted`]): the counter monitor, on
/// the first load generator, sees every generator's users there.
pub const VU_COUNTED_APP_NAME: &str = "rackbench-vu-counted";

impl Backend for postgres::Config {
    fn engine(&self) -> EngineKind {
        EngineKind::Postgresql
    }

    fn db_name(&self) -> String {
        self.get_dbname().unwrap_or("?").to_string()
    }

    fn with_db(&self, db: &str) -> Box<dyn Backend> {
        Box::new(server::with_db(self, db))
    }

    fn connect(&self) -> anyhow::Result<Box<dyn Conn>> {
        let mut c = self.clone();
        if c.get_application_name().is_none() {
            c.application_name("rackbench");
        }
        Ok(Box::new(server::connect(&c)?))
    }

    fn connect_vu(&self) -> anyhow::Result<Box<dyn Txns>> {
        let mut c = self.clone();
        c.application_name(VU_APP_NAME);
        Ok(Box::new(PgVu::connect(&c)?))
    }

    fn endpoint(&self) -> String {
        server::dsn_without_password(self)
    }
}

impl Conn for postgres::Client {
    fn batch(&mut self, sql: &str) -> anyhow::Result<()> {
        Ok(self.batch_execute(sql)?)
    }

    fn query_i64(&mut self, sql: &str) -> anyhow::Result<i64> {
        let row = self.query_one(sql, &[])?;
        Ok(row.get::<_, Option<i64>>(0).unwrap_or(0))
    }

    fn query_text(&mut self, sql: &str) -> anyhow::Result<String> {
        Ok(self.query_one(sql, &[])?.get(0))
    }

    fn load(&mut self, table: &str, rows: &[u8]) -> anyhow::Result<()> {
        let mut w = self.copy_in(&format!("COPY {table} FROM STDIN"))?;
        w.write_all(rows)?;
        w.finish()?;
        Ok(())
    }

    fn now_text(&mut self) -> anyhow::Result<String> {
        Ok(self
            .query_one("SELECT to_char(now(), 'YYYY-MM-DD HH24:MI:SS')", &[])?
            .get(0))
    }

    fn meta(&mut self) -> anyhow::Result<Option<Vec<(String, String)>>> {
        let exists: bool = self
            .query_one("SELECT to_regclass('rackbench_tpcc') IS NOT NULL", &[])?
            .get(0);
        if !exists {
            return Ok(None);
        }
        let rows = self.query("SELECT key, value FROM rackbench_tpcc", &[])?;
        Ok(Some(rows.iter().map(|r| (r.get(0), r.get(1))).collect()))
    }

    fn set_meta(&mut self, key: &str, value: &str) -> anyhow::Result<()> {
        self.execute(
            "INSERT INTO rackbench_tpcc (key, value) VALUES ($1, $2) \
             ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            &[&key, &value],
        )?;
        Ok(())
    }

    fn begin_snapshot(&mut self) -> anyhow::Result<()> {
        Ok(self.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")?)
    }

    fn end_snapshot(&mut self) -> anyhow::Result<()> {
        Ok(self.batch_execute("COMMIT")?)
    }

    fn counts(&mut self) -> anyhow::Result<Counts> {
        // The simple query protocol: one transaction a reading, as the monitor counts
        // its own ([`Conn::reading_is_a_transaction`]). A statement prepared for the
        // reading is a second (PostgreSQL commits the Parse's Sync too): the monitor's
        // readings, one a second, read as +1.2 transactions/s of TPM (acceptance M, 1).
        let rows = self.simple_query(
            "SELECT (SELECT sum(d_next_o_id) FROM district)::int8, \
             (SELECT xact_commit + xact_rollback FROM pg_stat_database \
              WHERE datname = current_database())::int8",
        )?;
        let Some(r) = rows.iter().find_map(|m| match m {
            postgres::SimpleQueryMessage::Row(r) => Some(r),
            _ => None,
        }) else {
            anyhow::bail!("the server returned no row for its counters");
        };
        let int = |i: usize| -> anyhow::Result<i64> {
            r.get(i)
                .map_or(Ok(0), |v| v.parse().context("a counter that is no integer"))
        };
        Ok(Counts {
            next_o_id_sum: int(0)?,
            xacts: int(1)?,
        })
    }

    fn reading_is_a_transaction(&self) -> bool {
        true
    }

    fn vu_sessions(&mut self) -> anyhow::Result<i64> {
        Ok(self
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name IN ($1, $2) \
                 AND datname = current_database()",
                &[&VU_APP_NAME, &VU_COUNTED_APP_NAME],
            )?
            .get(0))
    }

    fn flush_stats(&mut self) {
        // PostgreSQL 15+; older servers have no such function: left as they count.
        let _ = self.batch_execute("SELECT pg_stat_force_next_flush()");
    }

    fn vus_counted(&mut self) -> anyhow::Result<(i64, i64)> {
        let r = self.query_one(
            "SELECT count(*) FILTER (WHERE application_name = $1), \
             count(*) FILTER (WHERE application_name = $2) \
             FROM pg_stat_activity WHERE datname = current_database()",
            &[&VU_APP_NAME, &VU_COUNTED_APP_NAME],
        )?;
        Ok((r.get(0), r.get(1)))
    }

    fn server_version(&mut self) -> anyhow::Result<String> {
        Ok(self.query_one("SHOW server_version", &[])?.get(0))
    }

    fn database_exists(&mut self, db: &str) -> anyhow::Result<bool> {
        Ok(self
            .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&db])?
            .is_some())
    }

    fn create_database(&mut self, db: &str) -> anyhow::Result<()> {
        Ok(self.batch_execute(&format!("CREATE DATABASE \"{db}\""))?)
    }

    fn copy_database(&mut self, db: &str, template: &str) -> anyhow::Result<bool> {
        self.batch_execute(&format!("CREATE DATABASE \"{db}\" TEMPLATE \"{template}\""))
            .with_context(|| format!("copying database {template} to {db}"))?;
        Ok(true)
    }

    fn drop_database(&mut self, db: &str) -> anyhow::Result<()> {
        Ok(self.batch_execute(&format!("DROP DATABASE \"{db}\""))?)
    }
}

/// A virtual user's PostgreSQL connection with the five calls prepared.
pub struct PgVu {
    client: postgres::Client,
    st: [postgres::Statement; 5],
}

impl PgVu {
    pub fn connect(cfg: &postgres::Config) -> anyhow::Result<PgVu> {
        let mut client = server::connect(cfg)?;
        let st = [
            client.prepare(schema::NEW_ORDER_SQL)?,
            client.prepare(schema::PAYMENT_SQL)?,
            client.prepare(schema::ORDER_STATUS_SQL)?,
            client.prepare(schema::DELIVERY_SQL)?,
            client.prepare(schema::STOCK_LEVEL_SQL)?,
        ];
        // PostgreSQL counts each Parse/Sync above as a committed transaction, and a backend
        // flushes its counters at most once a second (later still when idle): flush now,
        // so setup does not leak into the measured TPM.
        let mut vu = PgVu { client, st };
        vu.flush_stats();
        Ok(vu)
    }

    /// A database error is data (deadlock, serialization failure, the 1% rollback); a
    /// broken connection ends this user.
    fn classify(&self, e: postgres::Error) -> TxnError {
        if let Some(db) = e.as_db_error() {
            let code = db.code().code();
            if code == schema::ROLLBACK_SQLSTATE {
                return TxnError::Rollback;
            }
            if !self.client.is_closed() && !code.starts_with("57") && !code.starts_with("08") {
                let msg: String = db.message().chars().take(60).collect();
                return TxnError::Db(format!("{code} {msg}"));
            }
        }
        TxnError::Lost(format!("connection lost: {e}"))
    }

    fn call(
        &mut self,
        i: usize,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<postgres::Row, TxnError> {
        let st = self.st[i].clone();
        self.client
            .query_one(&st, params)
            .map_err(|e| self.classify(e))
    }
}

fn int(v: u32) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}

impl Txns for PgVu {
    fn new_order(&mut self, t: &NewOrder) -> Result<(), TxnError> {
        let supply: Vec<i32> = t.lines.iter().map(|l| int(l.0)).collect();
        let items: Vec<i32> = t.lines.iter().map(|l| int(l.1)).collect();
        let qty: Vec<i32> = t.lines.iter().map(|l| int(l.2)).collect();
        let (w, d, c) = (int(t.w), int(t.d), int(t.c));
        self.call(0, &[&w, &d, &c, &items, &supply, &qty])?;
        Ok(())
    }

    fn payment(&mut self, t: &Payment) -> Result<(), TxnError> {
        let (w, d, c_w, c_d, c_id) = (int(t.w), int(t.d), int(t.c_w), int(t.c_d), int(t.c_id));
        let amount = int(t.amount_cents);
        self.call(1, &[&w, &d, &c_w, &c_d, &c_id, &t.c_last, &amount])?;
        Ok(())
    }

    fn order_status(&mut self, t: &OrderStatus) -> Result<(), TxnError> {
        let (w, d, c_id) = (int(t.w), int(t.d), int(t.c_id));
        self.call(2, &[&w, &d, &c_id, &t.c_last])?;
        Ok(())
    }

    fn delivery(&mut self, w: u32, carrier: u32) -> Result<u32, TxnError> {
        let row = self.call(3, &[&int(w), &int(carrier)])?;
        Ok(row.get::<_, i32>(0).max(0) as u32)
    }

    fn stock_level(&mut self, w: u32, d: u32, threshold: u32) -> Result<(), TxnError> {
        self.call(4, &[&int(w), &int(d), &int(threshold)])?;
        Ok(())
    }

    /// The flag is this backend's: it flushes its statistics (this call's commit
    /// included) before it answers, so on return they are in pg_stat_database
    /// (PostgreSQL 15+; older servers have no such function: left as they count).
    fn flush_stats(&mut self) {
        let _ = self
            .client
            .batch_execute("SELECT pg_stat_force_next_flush()");
    }

    /// After the flush returned, so a monitor that sees the new name reads a counter
    /// with this user's work in it; the rename is a transaction of its own, in the
    /// measured window, which the monitor takes off.
    fn mark_counted(&mut self) {
        let _ = self
            .client
            .batch_execute(&format!("SET application_name = '{VU_COUNTED_APP_NAME}'"));
    }
}
