//! MariaDB (and MySQL: same protocol and SQL here) behind the [`crate::backend`] traits,
//! through the blocking `mysql` crate. The five transactions are stored procedures named
//! as HammerDB names them on MySQL (`neword`, `payment`, `delivery`, `ostat`, `slev`),
//! each one prepared `CALL` (one round trip) with its own START TRANSACTION/COMMIT inside,
//! as HammerDB's are. The inputs are drawn by the client ([`crate::txn`], the same for
//! every engine) rather than inside the procedures as HammerDB does, so New-Order's order
//! lines travel as comma-separated lists.
//!
//! TPM comes from the server's `Com_commit + Com_rollback` (HammerDB's MySQL counter),
//! which MariaDB keeps for the whole server, not per database: with several databases
//! it counts them all at once (see [`EngineKind::xacts_server_wide`]).

use std::sync::Arc;

use anyhow::{bail, Context};
use mysql::prelude::Queryable;

use crate::backend::{
    Backend, Conn, Counts, Dialect, EngineKind, NewOrder, OrderStatus, Payment, TxnError, Txns,
};

pub static DIALECT: Dialect = Dialect {
    tables: TABLES,
    indexes: INDEXES,
    procedures: PROCEDURES,
    // Rows arrive in primary-key order per unit and are generated unique.
    load_session: "SET unique_checks = 0, foreign_key_checks = 0",
    // Nothing to set (a no-op that MySQL and MariaDB both take).
    index_session: "DO 0",
    analyze: "ANALYZE TABLE warehouse, district, customer, history, new_order, orders, \
              order_line, item, stock",
    drop_tables: "DROP TABLE IF EXISTS warehouse, district, customer, history, new_order, \
                  orders, order_line, item, stock, rackbench_tpcc",
    user_tables:
        "SELECT COALESCE(GROUP_CONCAT(table_name ORDER BY table_name SEPARATOR ', '), '') \
                  FROM information_schema.tables WHERE table_schema = DATABASE()",
};

/// The TPC-C tables as in [`crate::schema::TABLES`], with InnoDB's primary keys given
/// at creation (InnoDB clusters rows by it: adding it later would rebuild each table) and
/// `datetime` for PostgreSQL's `timestamp` (MariaDB's `timestamp` has a 2038 range and
/// time-zone conversion).
const TABLES: &[&str] = &[
    "CREATE TABLE warehouse (
  w_id int NOT NULL, w_name varchar(10), w_street_1 varchar(20), w_street_2 varchar(20),
  w_city varchar(20), w_state char(2), w_zip char(9), w_tax decimal(4,4), w_ytd decimal(12,2),
  PRIMARY KEY (w_id)) ENGINE=InnoDB",
    "CREATE TABLE district (
  d_id int NOT NULL, d_w_id int NOT NULL, d_name varchar(10), d_street_1 varchar(20),
  d_street_2 varchar(20), d_city varchar(20), d_state char(2), d_zip char(9),
  d_tax decimal(4,4), d_ytd decimal(12,2), d_next_o_id int,
  PRIMARY KEY (d_w_id, d_id)) ENGINE=InnoDB",
    "CREATE TABLE customer (
  c_id int NOT NULL, c_d_id int NOT NULL, c_w_id int NOT NULL, c_first varchar(16),
  c_middle char(2), c_last varchar(16), c_street_1 varchar(20), c_street_2 varchar(20),
  c_city varchar(20), c_state char(2), c_zip char(9), c_phone char(16), c_since datetime,
  c_credit char(2), c_credit_lim decimal(12,2), c_discount decimal(4,4),
  c_balance decimal(12,2), c_ytd_payment decimal(12,2), c_payment_cnt int,
  c_delivery_cnt int, c_data varchar(500),
  PRIMARY KEY (c_w_id, c_d_id, c_id)) ENGINE=InnoDB",
    "CREATE TABLE history (
  h_c_id int, h_c_d_id int, h_c_w_id int, h_d_id int, h_w_id int, h_date datetime,
  h_amount decimal(6,2), h_data varchar(24)) ENGINE=InnoDB",
    "CREATE TABLE new_order (no_o_id int NOT NULL, no_d_id int NOT NULL, no_w_id int NOT NULL,
  PRIMARY KEY (no_w_id, no_d_id, no_o_id)) ENGINE=InnoDB",
    "CREATE TABLE orders (
  o_id int NOT NULL, o_d_id int NOT NULL, o_w_id int NOT NULL, o_c_id int,
  o_entry_d datetime, o_carrier_id int, o_ol_cnt int, o_all_local int,
  PRIMARY KEY (o_w_id, o_d_id, o_id)) ENGINE=InnoDB",
    "CREATE TABLE order_line (
  ol_o_id int NOT NULL, ol_d_id int NOT NULL, ol_w_id int NOT NULL, ol_number int NOT NULL,
  ol_i_id int, ol_supply_w_id int, ol_delivery_d datetime, ol_quantity int,
  ol_amount decimal(6,2), ol_dist_info char(24),
  PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number)) ENGINE=InnoDB",
    "CREATE TABLE item (
  i_id int NOT NULL, i_im_id int, i_name varchar(24), i_price decimal(5,2), i_data varchar(50),
  PRIMARY KEY (i_id)) ENGINE=InnoDB",
    "CREATE TABLE stock (
  s_i_id int NOT NULL, s_w_id int NOT NULL, s_quantity int,
  s_dist_01 char(24), s_dist_02 char(24), s_dist_03 char(24), s_dist_04 char(24),
  s_dist_05 char(24), s_dist_06 char(24), s_dist_07 char(24), s_dist_08 char(24),
  s_dist_09 char(24), s_dist_10 char(24), s_ytd int, s_order_cnt int, s_remote_cnt int,
  s_data varchar(50), PRIMARY KEY (s_w_id, s_i_id)) ENGINE=InnoDB",
    "CREATE TABLE rackbench_tpcc (k varchar(64) NOT NULL PRIMARY KEY, v text NOT NULL)",
];

/// The secondary indexes (the primary keys came with the tables).
const INDEXES: &[&str] = &[
    "CREATE INDEX customer_name ON customer (c_w_id, c_d_id, c_last, c_first)",
    "CREATE INDEX orders_customer ON orders (o_w_id, o_d_id, o_c_id, o_id)",
];

/// The five transactions (clauses 2.4-2.8), the same steps as the PL/pgSQL functions in
/// [`crate::schema::FUNCTIONS`]. Each runs in its own transaction, rolled back on any
/// error (then re-raised to the client). A `SELECT ... INTO` that finds no row leaves
/// its variables as they were (the CONTINUE handler for NOT FOUND).
const PROCEDURES: &[&str] = &[
    "DROP PROCEDURE IF EXISTS neword",
    "CREATE PROCEDURE neword(p_w int, p_d int, p_c int, p_cnt int,
    p_items text, p_supply text, p_qty text)
BEGIN
  DECLARE v_w_tax, v_d_tax, v_discount decimal(4,4);
  DECLARE v_o_id, v_item, v_sw, v_q, v_sq int;
  DECLARE v_all_local int DEFAULT 1;
  DECLARE i int DEFAULT 1;
  DECLARE v_price decimal(5,2);
  DECLARE v_name varchar(24);
  DECLARE v_idata, v_sdata varchar(50);
  DECLARE v_dist char(24);
  DECLARE v_last varchar(16);
  DECLARE v_credit char(2);
  DECLARE v_amount decimal(6,2);
  DECLARE v_total decimal(12,2) DEFAULT 0;
  DECLARE CONTINUE HANDLER FOR NOT FOUND BEGIN END;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  START TRANSACTION;
  SELECT w_tax INTO v_w_tax FROM warehouse WHERE w_id = p_w;
  SELECT d_tax, d_next_o_id INTO v_d_tax, v_o_id FROM district
    WHERE d_w_id = p_w AND d_id = p_d FOR UPDATE;
  UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = p_w AND d_id = p_d;
  SELECT c_discount, c_last, c_credit INTO v_discount, v_last, v_credit FROM customer
    WHERE c_w_id = p_w AND c_d_id = p_d AND c_id = p_c;
  WHILE i <= p_cnt DO
    IF CAST(SUBSTRING_INDEX(SUBSTRING_INDEX(p_supply, ',', i), ',', -1) AS SIGNED) <> p_w THEN
      SET v_all_local = 0;
    END IF;
    SET i = i + 1;
  END WHILE;
  INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
    VALUES (v_o_id, p_d, p_w, p_c, NOW(), NULL, p_cnt, v_all_local);
  INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (v_o_id, p_d, p_w);
  SET i = 1;
  WHILE i <= p_cnt DO
    SET v_item = CAST(SUBSTRING_INDEX(SUBSTRING_INDEX(p_items, ',', i), ',', -1) AS SIGNED);
    SET v_sw = CAST(SUBSTRING_INDEX(SUBSTRING_INDEX(p_supply, ',', i), ',', -1) AS SIGNED);
    SET v_q = CAST(SUBSTRING_INDEX(SUBSTRING_INDEX(p_qty, ',', i), ',', -1) AS SIGNED);
    SET v_price = NULL;
    SELECT i_price, i_name, i_data INTO v_price, v_name, v_idata FROM item WHERE i_id = v_item;
    IF v_price IS NULL THEN
      SIGNAL SQLSTATE 'RB001' SET MESSAGE_TEXT = 'tpcc: item not found (New-Order rollback)';
    END IF;
    SELECT s_quantity, s_data, CASE p_d WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02
        WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04 WHEN 5 THEN s_dist_05
        WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08
        WHEN 9 THEN s_dist_09 ELSE s_dist_10 END
      INTO v_sq, v_sdata, v_dist FROM stock WHERE s_w_id = v_sw AND s_i_id = v_item FOR UPDATE;
    UPDATE stock SET s_quantity = IF(v_sq >= v_q + 10, v_sq - v_q, v_sq - v_q + 91),
        s_ytd = s_ytd + v_q, s_order_cnt = s_order_cnt + 1,
        s_remote_cnt = s_remote_cnt + IF(v_sw <> p_w, 1, 0)
      WHERE s_w_id = v_sw AND s_i_id = v_item;
    SET v_amount = v_q * v_price;
    SET v_total = v_total + v_amount;
    INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id,
        ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
      VALUES (v_o_id, p_d, p_w, i, v_item, v_sw, NULL, v_q, v_amount, v_dist);
    SET i = i + 1;
  END WHILE;
  COMMIT;
END",
    "DROP PROCEDURE IF EXISTS payment",
    "CREATE PROCEDURE payment(p_w int, p_d int, p_c_w int, p_c_d int, p_c_id int,
    p_c_last varchar(16), p_amount decimal(6,2))
BEGIN
  DECLARE v_w_name, v_d_name varchar(10);
  DECLARE v_c, v_n int;
  DECLARE v_credit char(2);
  DECLARE CONTINUE HANDLER FOR NOT FOUND BEGIN END;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  START TRANSACTION;
  UPDATE warehouse SET w_ytd = w_ytd + p_amount WHERE w_id = p_w;
  SELECT w_name INTO v_w_name FROM warehouse WHERE w_id = p_w;
  UPDATE district SET d_ytd = d_ytd + p_amount WHERE d_w_id = p_w AND d_id = p_d;
  SELECT d_name INTO v_d_name FROM district WHERE d_w_id = p_w AND d_id = p_d;
  IF p_c_id = 0 THEN
    -- By last name: all matches sorted by c_first, the one at ceil(n/2) (2.5.2.2).
    SELECT count(*) INTO v_n FROM customer
      WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_last = p_c_last;
    IF v_n = 0 THEN
      SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'tpcc: no customer with that last name';
    END IF;
    SET v_n = (v_n + 1) DIV 2 - 1;
    SELECT c_id INTO v_c FROM customer
      WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_last = p_c_last
      ORDER BY c_first LIMIT v_n, 1;
  ELSE
    SET v_c = p_c_id;
  END IF;
  SELECT c_credit INTO v_credit FROM customer
    WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c FOR UPDATE;
  UPDATE customer SET c_balance = c_balance - p_amount,
      c_ytd_payment = c_ytd_payment + p_amount, c_payment_cnt = c_payment_cnt + 1
    WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c;
  IF v_credit = 'BC' THEN
    UPDATE customer SET c_data = LEFT(CONCAT(v_c, ' ', p_c_d, ' ', p_c_w, ' ', p_d, ' ', p_w,
        ' ', p_amount, ' | ', c_data), 500)
      WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c;
  END IF;
  INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
    VALUES (v_c, p_c_d, p_c_w, p_d, p_w, NOW(), p_amount, CONCAT(v_w_name, '    ', v_d_name));
  COMMIT;
END",
    "DROP PROCEDURE IF EXISTS ostat",
    "CREATE PROCEDURE ostat(p_w int, p_d int, p_c_id int, p_c_last varchar(16))
BEGIN
  DECLARE v_c, v_n, v_o_id, v_carrier, v_lines int;
  DECLARE v_balance decimal(12,2);
  DECLARE v_first varchar(16);
  DECLARE v_entry datetime;
  DECLARE CONTINUE HANDLER FOR NOT FOUND BEGIN END;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  START TRANSACTION;
  IF p_c_id = 0 THEN
    SELECT count(*) INTO v_n FROM customer
      WHERE c_w_id = p_w AND c_d_id = p_d AND c_last = p_c_last;
    IF v_n = 0 THEN
      SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'tpcc: no customer with that last name';
    END IF;
    SET v_n = (v_n + 1) DIV 2 - 1;
    SELECT c_id INTO v_c FROM customer
      WHERE c_w_id = p_w AND c_d_id = p_d AND c_last = p_c_last
      ORDER BY c_first LIMIT v_n, 1;
  ELSE
    SET v_c = p_c_id;
  END IF;
  SELECT c_balance, c_first INTO v_balance, v_first FROM customer
    WHERE c_w_id = p_w AND c_d_id = p_d AND c_id = v_c;
  SELECT o_id, o_entry_d, o_carrier_id INTO v_o_id, v_entry, v_carrier FROM orders
    WHERE o_w_id = p_w AND o_d_id = p_d AND o_c_id = v_c ORDER BY o_id DESC LIMIT 1;
  SELECT count(*) INTO v_lines FROM (SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount,
      ol_delivery_d FROM order_line WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id = v_o_id) l;
  COMMIT;
END",
    "DROP PROCEDURE IF EXISTS delivery",
    // All ten districts in one database transaction (2.7.4 allows 1..10). SKIP LOCKED:
    // two deliveries of one warehouse never wait for each other's oldest order.
    // Returns (one row) the number of districts delivered (10 - skipped).
    "CREATE PROCEDURE delivery(p_w int, p_carrier int)
BEGIN
  DECLARE d int DEFAULT 1;
  DECLARE n int DEFAULT 0;
  DECLARE v_o_id, v_c int;
  DECLARE v_sum decimal(12,2);
  DECLARE CONTINUE HANDLER FOR NOT FOUND BEGIN END;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  START TRANSACTION;
  WHILE d <= 10 DO
    SET v_o_id = NULL;
    SELECT no_o_id INTO v_o_id FROM new_order WHERE no_w_id = p_w AND no_d_id = d
      ORDER BY no_o_id LIMIT 1 FOR UPDATE SKIP LOCKED;
    IF v_o_id IS NOT NULL THEN
      DELETE FROM new_order WHERE no_w_id = p_w AND no_d_id = d AND no_o_id = v_o_id;
      SELECT o_c_id INTO v_c FROM orders WHERE o_w_id = p_w AND o_d_id = d AND o_id = v_o_id;
      UPDATE orders SET o_carrier_id = p_carrier
        WHERE o_w_id = p_w AND o_d_id = d AND o_id = v_o_id;
      UPDATE order_line SET ol_delivery_d = NOW()
        WHERE ol_w_id = p_w AND ol_d_id = d AND ol_o_id = v_o_id;
      SELECT COALESCE(SUM(ol_amount), 0) INTO v_sum FROM order_line
        WHERE ol_w_id = p_w AND ol_d_id = d AND ol_o_id = v_o_id;
      UPDATE customer SET c_balance = c_balance + v_sum, c_delivery_cnt = c_delivery_cnt + 1
        WHERE c_w_id = p_w AND c_d_id = d AND c_id = v_c;
      SET n = n + 1;
    END IF;
    SET d = d + 1;
  END WHILE;
  COMMIT;
  SELECT n;
END",
    "DROP PROCEDURE IF EXISTS slev",
    "CREATE PROCEDURE slev(p_w int, p_d int, p_threshold int)
BEGIN
  DECLARE v_next, v_n int;
  DECLARE CONTINUE HANDLER FOR NOT FOUND BEGIN END;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  START TRANSACTION;
  SELECT d_next_o_id INTO v_next FROM district WHERE d_w_id = p_w AND d_id = p_d;
  SELECT count(DISTINCT s_i_id) INTO v_n FROM order_line, stock
    WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id < v_next AND ol_o_id >= v_next - 20
      AND s_w_id = p_w AND s_i_id = ol_i_id AND s_quantity < p_threshold;
  COMMIT;
END",
];

/// The SQLSTATE New-Order signals for its unused item (the spec's 1% rollback), as the
/// PostgreSQL function raises it.
const ROLLBACK_SQLSTATE: &str = "RB001";

/// The prepared calls, in class order.
const CALLS: [&str; 5] = [
    "CALL neword(?, ?, ?, ?, ?, ?, ?)",
    "CALL payment(?, ?, ?, ?, ?, ?, ?)",
    "CALL ostat(?, ?, ?, ?)",
    "CALL delivery(?, ?)",
    "CALL slev(?, ?, ?)",
];

/// Connection settings of one MariaDB database (the password inside, never shown).
#[derive(Clone)]
pub struct MyDb {
    opts: mysql::OptsBuilder,
}

impl MyDb {
    /// From a `mysql://` or `mariadb://` URL (`?socket=PATH` for a unix socket), with
    /// `password` when the URL names none. Errors never echo the password.
    pub fn from_dsn(dsn: &str, password: Option<&str>) -> anyhow::Result<MyDb> {
        let trimmed = dsn.trim();
        let url = match trimmed.get(..10) {
            Some(p) if p.eq_ignore_ascii_case("mariadb://") => {
                format!("mysql://{}", &trimmed[10..])
            }
            _ => trimmed.to_string(),
        };
        let opts = mysql::Opts::from_url(&url).map_err(|e| {
            anyhow::anyhow!(
                "bad --dsn `{}`: {}. Example: --dsn 'mysql://bench@127.0.0.1:3306/tpcc' \
                 (the password in MYSQL_PWD, not on the command line)",
                model::redact_secrets(dsn),
                model::redact_secrets(&e.to_string())
            )
        })?;
        let mut b = mysql::OptsBuilder::from_opts(opts.clone());
        if opts.get_pass().is_none() {
            if let Some(p) = password {
                b = b.pass(Some(p));
            }
        }
        Ok(MyDb { opts: b })
    }

    /// A server we launched: root over its unix socket, with the run's password if it
    /// has one, the TCP port kept for the endpoint.
    pub fn launched(socket: &str, host: &str, port: u16, db: &str, password: Option<&str>) -> MyDb {
        let b = mysql::OptsBuilder::new()
            .ip_or_hostname(Some(host))
            .tcp_port(port)
            .socket(Some(socket))
            .user(Some("root"))
            .pass(password)
            .db_name(Some(db));
        MyDb { opts: b }
    }

    /// The password these settings log in with, if any (for the load generators' jobs).
    pub fn password(&self) -> Option<String> {
        self.opts().get_pass().map(str::to_string)
    }

    /// A server we launched, from a load generator: root over TCP to `host`.
    pub fn launched_tcp(host: &str, port: u16, db: &str) -> MyDb {
        let b = mysql::OptsBuilder::new()
            .ip_or_hostname(Some(host))
            .tcp_port(port)
            .user(Some("root"))
            .db_name(Some(db));
        MyDb { opts: b }
    }

    fn opts(&self) -> mysql::Opts {
        mysql::Opts::from(self.opts.clone())
    }

    fn conn(&self) -> anyhow::Result<mysql::Conn> {
        let o = self.opts();
        let b = self
            .opts
            .clone()
            .tcp_connect_timeout(Some(std::time::Duration::from_secs(10)));
        mysql::Conn::new(b).map_err(|e| {
            let cause = connect_cause(&e, &o);
            anyhow::anyhow!(
                "connecting to MariaDB (database {:?}, host {}, port {}{}): {cause}",
                o.get_db_name().unwrap_or("?"),
                o.get_ip_or_hostname(),
                o.get_tcp_port(),
                o.get_socket()
                    .map_or(String::new(), |s| format!(", socket {s}"))
            )
        })
    }
}

/// Why a connection failed, in words that say what to do (never the password).
fn connect_cause(e: &mysql::Error, o: &mysql::Opts) -> String {
    let user = o.get_user().unwrap_or("(default)");
    match e {
        mysql::Error::MySqlError(m) => match m.code {
            1045 => format!(
                "the password for user {user} was refused (check --dsn or MYSQL_PWD)"
            ),
            1049 => format!(
                "database {} does not exist: CREATE DATABASE it first, or name another in --dsn",
                o.get_db_name().unwrap_or("?")
            ),
            1040 => "the server has no connection slot left (raise max_connections, or use fewer virtual users)".into(),
            _ => format!("the server said: {}", model::redact_secrets(&m.message)),
        },
        mysql::Error::IoError(io) => io_cause(io.kind(), &io.to_string()),
        mysql::Error::DriverError(mysql::DriverError::CouldNotConnect(Some((_, desc, kind)))) => {
            io_cause(*kind, desc)
        }
        other => format!("the connection failed: {}", model::redact_secrets(&other.to_string())),
    }
}

/// A socket error in words that say what to check.
fn io_cause(kind: std::io::ErrorKind, text: &str) -> String {
    match kind {
        std::io::ErrorKind::ConnectionRefused => {
            "nothing accepts connections there (is MariaDB running, and are the host and port right?)".into()
        }
        std::io::ErrorKind::NotFound => "no MariaDB socket at that path (is MariaDB running?)".into(),
        std::io::ErrorKind::TimedOut => {
            "the connection timed out (is the host reachable from here?)".into()
        }
        _ => format!("the connection failed: {text}"),
    }
}

impl Backend for MyDb {
    fn engine(&self) -> EngineKind {
        EngineKind::Mariadb
    }

    fn db_name(&self) -> String {
        self.opts().get_db_name().unwrap_or("?").to_string()
    }

    fn with_db(&self, db: &str) -> Box<dyn Backend> {
        Box::new(MyDb {
            opts: self.opts.clone().db_name(Some(db)),
        })
    }

    fn connect(&self) -> anyhow::Result<Box<dyn Conn>> {
        Ok(Box::new(MyConn { c: self.conn()? }))
    }

    fn connect_vu(&self) -> anyhow::Result<Box<dyn Txns>> {
        let mut c = self.conn()?;
        let mut st = Vec::with_capacity(5);
        for sql in CALLS {
            st.push(
                c.prep(sql)
                    .with_context(|| format!("preparing `{sql}` (is the build complete?)"))?,
            );
        }
        Ok(Box::new(MyVu { c, st }))
    }

    fn endpoint(&self) -> String {
        let o = self.opts();
        let enc = |s: &str| {
            percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
        };
        let mut url = format!(
            "mysql://{}@{}:{}/{}",
            enc(o.get_user().unwrap_or("root")),
            o.get_ip_or_hostname(),
            o.get_tcp_port(),
            enc(o.get_db_name().unwrap_or(""))
        );
        if let Some(s) = o.get_socket() {
            url.push_str(&format!("?socket={}", enc(s)));
        }
        url
    }
}

/// An admin connection.
struct MyConn {
    c: mysql::Conn,
}

impl Conn for MyConn {
    fn batch(&mut self, sql: &str) -> anyhow::Result<()> {
        Ok(self.c.query_drop(sql)?)
    }

    fn query_i64(&mut self, sql: &str) -> anyhow::Result<i64> {
        let v: Option<Option<i64>> = self.c.query_first(sql)?;
        Ok(v.flatten().unwrap_or(0))
    }

    fn query_text(&mut self, sql: &str) -> anyhow::Result<String> {
        let v: Option<Option<String>> = self.c.query_first(sql)?;
        v.flatten().context("the query gave no value")
    }

    fn load(&mut self, table: &str, rows: &[u8]) -> anyhow::Result<()> {
        // The client hands these bytes over when the server asks for the "file".
        let data: Arc<[u8]> = Arc::from(rows);
        self.c
            .set_local_infile_handler(Some(mysql::LocalInfileHandler::new(move |_, w| {
                std::io::Write::write_all(w, &data)
            })));
        let r = self.c.query_drop(format!(
            "LOAD DATA LOCAL INFILE 'rackbench' INTO TABLE {table}"
        ));
        self.c.set_local_infile_handler(None);
        r.with_context(|| {
            format!("LOAD DATA LOCAL into {table} (is local_infile enabled on the server?)")
        })
    }

    fn now_text(&mut self) -> anyhow::Result<String> {
        let v: Option<String> = self
            .c
            .query_first("SELECT DATE_FORMAT(NOW(), '%Y-%m-%d %H:%i:%s')")?;
        v.context("the server gave no time")
    }

    fn meta(&mut self) -> anyhow::Result<Option<Vec<(String, String)>>> {
        let n: Option<i64> = self.c.query_first(
            "SELECT count(*) FROM information_schema.tables \
             WHERE table_schema = DATABASE() AND table_name = 'rackbench_tpcc'",
        )?;
        if n.unwrap_or(0) == 0 {
            return Ok(None);
        }
        Ok(Some(self.c.query("SELECT k, v FROM rackbench_tpcc")?))
    }

    fn set_meta(&mut self, key: &str, value: &str) -> anyhow::Result<()> {
        Ok(self.c.exec_drop(
            "REPLACE INTO rackbench_tpcc (k, v) VALUES (?, ?)",
            (key, value),
        )?)
    }

    fn begin_snapshot(&mut self) -> anyhow::Result<()> {
        self.c
            .query_drop("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")?;
        Ok(self
            .c
            .query_drop("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")?)
    }

    fn end_snapshot(&mut self) -> anyhow::Result<()> {
        Ok(self.c.query_drop("COMMIT")?)
    }

    fn counts(&mut self) -> anyhow::Result<Counts> {
        let next: Option<Option<i64>> = self
            .c
            .query_first("SELECT CAST(SUM(d_next_o_id) AS SIGNED) FROM district")?;
        // SHOW rather than information_schema.global_status: MySQL 8 has no such table.
        let status: Vec<(String, String)> = self
            .c
            .query("SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_commit', 'Com_rollback')")?;
        if status.len() != 2 {
            bail!("the server shows no Com_commit/Com_rollback counters");
        }
        let xacts = status
            .iter()
            .map(|(_, v)| v.parse::<i64>().context("a Com_commit/Com_rollback value"))
            .sum::<anyhow::Result<i64>>()?;
        Ok(Counts {
            next_o_id_sum: next.flatten().unwrap_or(0),
            xacts,
        })
    }

    fn reading_is_a_transaction(&self) -> bool {
        false
    }

    fn vu_sessions(&mut self) -> anyhow::Result<i64> {
        // Com_commit counts as each COMMIT runs: never late.
        Ok(0)
    }

    fn vus_counted(&mut self) -> anyhow::Result<(i64, i64)> {
        Ok((0, 0))
    }

    fn server_version(&mut self) -> anyhow::Result<String> {
        let v: Option<String> = self.c.query_first("SELECT VERSION()")?;
        v.context("the server gave no version")
    }

    fn database_exists(&mut self, db: &str) -> anyhow::Result<bool> {
        let n: Option<i64> = self.c.exec_first(
            "SELECT count(*) FROM information_schema.schemata WHERE schema_name = ?",
            (db,),
        )?;
        Ok(n.unwrap_or(0) > 0)
    }

    fn create_database(&mut self, db: &str) -> anyhow::Result<()> {
        Ok(self
            .c
            .query_drop(format!("CREATE DATABASE {}", ident(db)?))?)
    }

    fn copy_database(&mut self, _db: &str, _template: &str) -> anyhow::Result<bool> {
        // MariaDB has no database copy; each database is loaded.
        Ok(false)
    }

    fn drop_database(&mut self, db: &str) -> anyhow::Result<()> {
        Ok(self.c.query_drop(format!("DROP DATABASE {}", ident(db)?))?)
    }
}

/// A database name quoted as an identifier (names come from the plan: keep it strict).
fn ident(db: &str) -> anyhow::Result<String> {
    if db.is_empty() || db.contains('`') || db.contains('\0') {
        bail!("`{db}` cannot be a MariaDB database name");
    }
    Ok(format!("`{db}`"))
}

/// A virtual user's connection with the five calls prepared.
struct MyVu {
    c: mysql::Conn,
    st: Vec<mysql::Statement>,
}

fn list(v: impl Iterator<Item = u32>) -> String {
    v.map(|x| x.to_string()).collect::<Vec<_>>().join(",")
}

impl MyVu {
    /// A database error is data (deadlock, lock wait timeout, the 1% rollback); a
    /// broken connection ends this user.
    fn classify(e: mysql::Error) -> TxnError {
        match e {
            mysql::Error::MySqlError(m) if m.state == ROLLBACK_SQLSTATE => TxnError::Rollback,
            mysql::Error::MySqlError(m) if m.code != 1927 && m.code != 1053 => {
                let msg: String = m.message.chars().take(60).collect();
                TxnError::Db(format!("{} {msg}", m.code))
            }
            other => TxnError::Lost(format!("connection lost: {other}")),
        }
    }

    fn call(&mut self, i: usize, params: mysql::Params) -> Result<(), TxnError> {
        let st = self.st[i].clone();
        self.c.exec_drop(&st, params).map_err(Self::classify)
    }
}

impl Txns for MyVu {
    fn new_order(&mut self, t: &NewOrder) -> Result<(), TxnError> {
        let p = (
            t.w,
            t.d,
            t.c,
            t.lines.len() as u32,
            list(t.lines.iter().map(|l| l.1)),
            list(t.lines.iter().map(|l| l.0)),
            list(t.lines.iter().map(|l| l.2)),
        );
        self.call(0, p.into())
    }

    fn payment(&mut self, t: &Payment) -> Result<(), TxnError> {
        let amount = format!("{}.{:02}", t.amount_cents / 100, t.amount_cents % 100);
        let p = (t.w, t.d, t.c_w, t.c_d, t.c_id, t.c_last.as_str(), amount);
        self.call(1, p.into())
    }

    fn order_status(&mut self, t: &OrderStatus) -> Result<(), TxnError> {
        self.call(2, (t.w, t.d, t.c_id, t.c_last.as_str()).into())
    }

    fn delivery(&mut self, w: u32, carrier: u32) -> Result<u32, TxnError> {
        let st = self.st[3].clone();
        let n: Option<i64> = self
            .c
            .exec_first(&st, (w, carrier))
            .map_err(Self::classify)?;
        Ok(n.unwrap_or(0).clamp(0, 10) as u32)
    }

    fn stock_level(&mut self, w: u32, d: u32, threshold: u32) -> Result<(), TxnError> {
        self.call(4, (w, d, threshold).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_never_carries_the_password() {
        let db = MyDb::from_dsn("mariadb://bench:Zq9pw@127.0.0.1:3307/tpcc", None).unwrap();
        let e = db.endpoint();
        assert!(!e.contains("Zq9"), "{e}");
        assert!(e.starts_with("mysql://bench@127.0.0.1:3307/tpcc"), "{e}");
        let back = MyDb::from_dsn(&e, Some("pw")).unwrap();
        assert_eq!(back.opts().get_pass(), Some("pw"));
        assert_eq!(back.db_name(), "tpcc");
        let two = back.with_db("tpcc_2");
        assert_eq!(two.db_name(), "tpcc_2");
        let s = MyDb::launched("/tmp/x y/sock", "127.0.0.1", 3306, "tpcc", Some("Zq9")).endpoint();
        let again = MyDb::from_dsn(&s, None).unwrap();
        assert_eq!(again.opts().get_socket(), Some("/tmp/x y/sock"));
    }

    #[test]
    fn a_bad_dsn_is_an_error_without_the_password() {
        let e = MyDb::from_dsn("mysql://bench:Zq9pw@host:notaport/tpcc", None)
            .err()
            .expect("a bad port");
        let text = format!("{e:#}");
        assert!(!text.contains("Zq9"), "{text}");
        assert!(text.contains("bad --dsn"), "{text}");
    }
}
