//! PostgreSQL's TPC-C schema (clause 1.3; MariaDB's is in [`crate::mariadb`]): the nine
//! tables, the indexes created after the load, and the five transactions as server-side
//! PL/pgSQL functions, so that each transaction is
//! one round trip (Bind/Execute/Sync of a prepared `SELECT fn(...)`), as HammerDB's
//! stored-procedure mode does. Fewer round trips is where a cheap driver comes from.

/// Bumped when the schema or functions change; a build with another version is rebuilt.
pub const SCHEMA_VERSION: &str = "1";

pub const TABLES: &str = r#"
CREATE TABLE warehouse (
  w_id int NOT NULL, w_name varchar(10), w_street_1 varchar(20), w_street_2 varchar(20),
  w_city varchar(20), w_state char(2), w_zip char(9), w_tax numeric(4,4), w_ytd numeric(12,2));
CREATE TABLE district (
  d_id int NOT NULL, d_w_id int NOT NULL, d_name varchar(10), d_street_1 varchar(20),
  d_street_2 varchar(20), d_city varchar(20), d_state char(2), d_zip char(9),
  d_tax numeric(4,4), d_ytd numeric(12,2), d_next_o_id int);
CREATE TABLE customer (
  c_id int NOT NULL, c_d_id int NOT NULL, c_w_id int NOT NULL, c_first varchar(16),
  c_middle char(2), c_last varchar(16), c_street_1 varchar(20), c_street_2 varchar(20),
  c_city varchar(20), c_state char(2), c_zip char(9), c_phone char(16), c_since timestamp,
  c_credit char(2), c_credit_lim numeric(12,2), c_discount numeric(4,4),
  c_balance numeric(12,2), c_ytd_payment numeric(12,2), c_payment_cnt int,
  c_delivery_cnt int, c_data varchar(500));
CREATE TABLE history (
  h_c_id int, h_c_d_id int, h_c_w_id int, h_d_id int, h_w_id int, h_date timestamp,
  h_amount numeric(6,2), h_data varchar(24));
CREATE TABLE new_order (no_o_id int NOT NULL, no_d_id int NOT NULL, no_w_id int NOT NULL);
CREATE TABLE orders (
  o_id int NOT NULL, o_d_id int NOT NULL, o_w_id int NOT NULL, o_c_id int,
  o_entry_d timestamp, o_carrier_id int, o_ol_cnt int, o_all_local int);
CREATE TABLE order_line (
  ol_o_id int NOT NULL, ol_d_id int NOT NULL, ol_w_id int NOT NULL, ol_number int NOT NULL,
  ol_i_id int, ol_supply_w_id int, ol_delivery_d timestamp, ol_quantity int,
  ol_amount numeric(6,2), ol_dist_info char(24));
CREATE TABLE item (
  i_id int NOT NULL, i_im_id int, i_name varchar(24), i_price numeric(5,2), i_data varchar(50));
CREATE TABLE stock (
  s_i_id int NOT NULL, s_w_id int NOT NULL, s_quantity int,
  s_dist_01 char(24), s_dist_02 char(24), s_dist_03 char(24), s_dist_04 char(24),
  s_dist_05 char(24), s_dist_06 char(24), s_dist_07 char(24), s_dist_08 char(24),
  s_dist_09 char(24), s_dist_10 char(24), s_ytd int, s_order_cnt int, s_remote_cnt int,
  s_data varchar(50));
CREATE TABLE rackbench_tpcc (key text PRIMARY KEY, value text NOT NULL);
"#;

/// Created after the load, one statement per table (they run in parallel).
pub const INDEXES: &[&str] = &[
    "ALTER TABLE warehouse ADD PRIMARY KEY (w_id)",
    "ALTER TABLE district ADD PRIMARY KEY (d_w_id, d_id)",
    "ALTER TABLE customer ADD PRIMARY KEY (c_w_id, c_d_id, c_id); \
     CREATE INDEX customer_name ON customer (c_w_id, c_d_id, c_last, c_first)",
    "ALTER TABLE new_order ADD PRIMARY KEY (no_w_id, no_d_id, no_o_id)",
    "ALTER TABLE orders ADD PRIMARY KEY (o_w_id, o_d_id, o_id); \
     CREATE INDEX orders_customer ON orders (o_w_id, o_d_id, o_c_id, o_id)",
    "ALTER TABLE order_line ADD PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number)",
    "ALTER TABLE item ADD PRIMARY KEY (i_id)",
    "ALTER TABLE stock ADD PRIMARY KEY (s_w_id, s_i_id)",
];

/// SQLSTATE raised by New-Order for its unused item (the spec's 1% rollback); the
/// client counts it as a rollback, not an error. Class "RB" is unassigned in PostgreSQL.
pub const ROLLBACK_SQLSTATE: &str = "RB001";

/// The five transactions (clauses 2.4-2.8) as functions.
pub const FUNCTIONS: &str = r#"
CREATE OR REPLACE FUNCTION tpcc_new_order(p_w int, p_d int, p_c int,
    p_items int[], p_supply int[], p_qty int[]) RETURNS numeric
LANGUAGE plpgsql AS $$
DECLARE
  v_w_tax numeric; v_d_tax numeric; v_o_id int; v_discount numeric; v_last text;
  v_credit text; v_cnt int := array_length(p_items, 1); v_all_local int := 1;
  v_total numeric := 0; v_price numeric; v_name text; v_idata text; v_sdata text;
  v_dist text; v_amount numeric; v_bg text; i int;
BEGIN
  SELECT w_tax INTO v_w_tax FROM warehouse WHERE w_id = p_w;
  UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = p_w AND d_id = p_d
    RETURNING d_tax, d_next_o_id - 1 INTO v_d_tax, v_o_id;
  SELECT c_discount, c_last, c_credit INTO v_discount, v_last, v_credit
    FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_id = p_c;
  FOR i IN 1..v_cnt LOOP
    IF p_supply[i] <> p_w THEN v_all_local := 0; END IF;
  END LOOP;
  INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
    VALUES (v_o_id, p_d, p_w, p_c, now(), NULL, v_cnt, v_all_local);
  INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (v_o_id, p_d, p_w);
  FOR i IN 1..v_cnt LOOP
    SELECT i_price, i_name, i_data INTO v_price, v_name, v_idata FROM item WHERE i_id = p_items[i];
    IF NOT FOUND THEN
      RAISE EXCEPTION 'tpcc: item % not found (New-Order rollback)', p_items[i]
        USING ERRCODE = 'RB001';
    END IF;
    UPDATE stock SET
        s_quantity = CASE WHEN s_quantity >= p_qty[i] + 10 THEN s_quantity - p_qty[i]
                          ELSE s_quantity - p_qty[i] + 91 END,
        s_ytd = s_ytd + p_qty[i], s_order_cnt = s_order_cnt + 1,
        s_remote_cnt = s_remote_cnt + CASE WHEN p_supply[i] <> p_w THEN 1 ELSE 0 END
      WHERE s_w_id = p_supply[i] AND s_i_id = p_items[i]
      RETURNING s_data, CASE p_d WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02
          WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04 WHEN 5 THEN s_dist_05
          WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08
          WHEN 9 THEN s_dist_09 ELSE s_dist_10 END
      INTO v_sdata, v_dist;
    v_bg := CASE WHEN strpos(v_idata, 'ORIGINAL') > 0 AND strpos(v_sdata, 'ORIGINAL') > 0
                 THEN 'B' ELSE 'G' END;
    v_amount := p_qty[i] * v_price;
    v_total := v_total + v_amount;
    INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id,
        ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
      VALUES (v_o_id, p_d, p_w, i, p_items[i], p_supply[i], NULL, p_qty[i], v_amount, v_dist);
  END LOOP;
  RETURN v_total * (1 - v_discount) * (1 + v_w_tax + v_d_tax);
END $$;

-- Customer by last name: all matches sorted by c_first, the one at ceil(n/2) (2.5.2.2).
CREATE OR REPLACE FUNCTION tpcc_customer_by_name(p_w int, p_d int, p_last text) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE n int; v_c int;
BEGIN
  SELECT count(*) INTO n FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_last = p_last;
  IF n = 0 THEN
    RAISE EXCEPTION 'tpcc: no customer named % in warehouse % district %', p_last, p_w, p_d;
  END IF;
  SELECT c_id INTO v_c FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_last = p_last
    ORDER BY c_first OFFSET (n + 1) / 2 - 1 LIMIT 1;
  RETURN v_c;
END $$;

CREATE OR REPLACE FUNCTION tpcc_payment(p_w int, p_d int, p_c_w int, p_c_d int,
    p_c_id int, p_c_last text, p_amount numeric) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE v_w_name text; v_d_name text; v_c int; v_credit text; v_street text; v_city text;
BEGIN
  UPDATE warehouse SET w_ytd = w_ytd + p_amount WHERE w_id = p_w
    RETURNING w_name, w_street_1, w_city INTO v_w_name, v_street, v_city;
  UPDATE district SET d_ytd = d_ytd + p_amount WHERE d_w_id = p_w AND d_id = p_d
    RETURNING d_name, d_street_1, d_city INTO v_d_name, v_street, v_city;
  IF p_c_id = 0 THEN
    v_c := tpcc_customer_by_name(p_c_w, p_c_d, p_c_last);
  ELSE
    v_c := p_c_id;
  END IF;
  UPDATE customer SET c_balance = c_balance - p_amount,
      c_ytd_payment = c_ytd_payment + p_amount, c_payment_cnt = c_payment_cnt + 1
    WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c
    RETURNING c_credit INTO v_credit;
  IF v_credit = 'BC' THEN
    UPDATE customer SET c_data = substr(format('%s %s %s %s %s %s | ', v_c, p_c_d, p_c_w,
        p_d, p_w, p_amount) || c_data, 1, 500)
      WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c;
  END IF;
  INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
    VALUES (v_c, p_c_d, p_c_w, p_d, p_w, now(), p_amount, v_w_name || '    ' || v_d_name);
  RETURN v_c;
END $$;

CREATE OR REPLACE FUNCTION tpcc_order_status(p_w int, p_d int, p_c_id int, p_c_last text)
RETURNS int LANGUAGE plpgsql AS $$
DECLARE v_c int; v_balance numeric; v_first text; v_o_id int; v_entry timestamp;
  v_carrier int; n int := 0; r record;
BEGIN
  IF p_c_id = 0 THEN
    v_c := tpcc_customer_by_name(p_w, p_d, p_c_last);
  ELSE
    v_c := p_c_id;
  END IF;
  SELECT c_balance, c_first INTO v_balance, v_first
    FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_id = v_c;
  SELECT o_id, o_entry_d, o_carrier_id INTO v_o_id, v_entry, v_carrier FROM orders
    WHERE o_w_id = p_w AND o_d_id = p_d AND o_c_id = v_c ORDER BY o_id DESC LIMIT 1;
  FOR r IN SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d
      FROM order_line WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id = v_o_id LOOP
    n := n + 1;
  END LOOP;
  RETURN n;
END $$;

-- Delivery, all ten districts in one database transaction (2.7.4 allows 1..10). SKIP
-- LOCKED: two deliveries of one warehouse never wait for each other's oldest order.
-- Returns the number of districts delivered (10 - skipped).
CREATE OR REPLACE FUNCTION tpcc_delivery(p_w int, p_carrier int) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE d int; v_o_id int; v_c int; v_sum numeric; n int := 0;
BEGIN
  FOR d IN 1..10 LOOP
    DELETE FROM new_order WHERE no_w_id = p_w AND no_d_id = d AND no_o_id =
      (SELECT no_o_id FROM new_order WHERE no_w_id = p_w AND no_d_id = d
        ORDER BY no_o_id LIMIT 1 FOR UPDATE SKIP LOCKED)
      RETURNING no_o_id INTO v_o_id;
    CONTINUE WHEN NOT FOUND;
    UPDATE orders SET o_carrier_id = p_carrier
      WHERE o_w_id = p_w AND o_d_id = d AND o_id = v_o_id RETURNING o_c_id INTO v_c;
    WITH u AS (UPDATE order_line SET ol_delivery_d = now()
        WHERE ol_w_id = p_w AND ol_d_id = d AND ol_o_id = v_o_id RETURNING ol_amount)
      SELECT sum(ol_amount) INTO v_sum FROM u;
    UPDATE customer SET c_balance = c_balance + coalesce(v_sum, 0),
        c_delivery_cnt = c_delivery_cnt + 1
      WHERE c_w_id = p_w AND c_d_id = d AND c_id = v_c;
    n := n + 1;
  END LOOP;
  RETURN n;
END $$;

CREATE OR REPLACE FUNCTION tpcc_stock_level(p_w int, p_d int, p_threshold int) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE v_next int; n int;
BEGIN
  SELECT d_next_o_id INTO v_next FROM district WHERE d_w_id = p_w AND d_id = p_d;
  SELECT count(DISTINCT s_i_id) INTO n FROM order_line, stock
    WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id < v_next AND ol_o_id >= v_next - 20
      AND s_w_id = p_w AND s_i_id = ol_i_id AND s_quantity < p_threshold;
  RETURN n;
END $$;
"#;

/// The prepared statements the virtual users run (one round trip each).
pub const NEW_ORDER_SQL: &str = "SELECT tpcc_new_order($1, $2, $3, $4, $5, $6)::float8";
/// The amount travels in cents as an int4 (no numeric type on the client side).
pub const PAYMENT_SQL: &str = "SELECT tpcc_payment($1, $2, $3, $4, $5, $6, $7::int4 / 100.0)";
pub const ORDER_STATUS_SQL: &str = "SELECT tpcc_order_status($1, $2, $3, $4)";
pub const DELIVERY_SQL: &str = "SELECT tpcc_delivery($1, $2)";
pub const STOCK_LEVEL_SQL: &str = "SELECT tpcc_stock_level($1, $2, $3)";
