//! The initial population (clause 4.3.3.1) for W warehouses, generated once for every
//! engine as tab-separated rows (PostgreSQL's COPY text format, which MariaDB's LOAD DATA
//! reads as is) and bulk-loaded from several connections in parallel, indexes and the
//! transactions' server-side code created after the load (see [`crate::backend::Dialect`]).
//!
//! Work is cut into units (the ITEM table; then per warehouse: warehouse+district, stock,
//! customer+history, orders+new_order+order_line), each generated from its own seeded RNG
//! so a build is reproducible whatever the thread count.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use anyhow::{anyhow, Context};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use crate::backend::{Backend, Conn};
use crate::random::*;
use crate::schema;

/// Flush COPY data to the server in chunks of about this size.
const CHUNK_BYTES: usize = 1 << 20;

#[derive(Debug, Clone, Copy)]
enum Unit {
    Item,
    WarehouseDistrict(u32),
    Stock(u32),
    CustomerHistory(u32),
    Orders(u32),
}

/// What a build did.
#[derive(Debug, Clone)]
pub struct BuildInfo {
    pub warehouses: u32,
    pub c_load: u32,
    pub load_s: f64,
    pub index_s: f64,
}

/// Create the schema in the (empty) database `db` names and load W warehouses.
pub fn build(
    db: &dyn Backend,
    warehouses: u32,
    threads: usize,
    seed: u64,
) -> anyhow::Result<BuildInfo> {
    if warehouses == 0 {
        anyhow::bail!("--warehouses must be at least 1");
    }
    let dialect = db.engine().dialect();
    let mut client = db.connect()?;
    for sql in dialect.tables {
        client.batch(sql).context(
            "creating the TPC-C tables (is the database empty? use a new database or --rebuild)",
        )?;
    }
    let mut rng = SmallRng::seed_from_u64(seed);
    let c_load = rng.gen_range(0..=A_C_LAST);
    let ts = client.now_text()?;

    let mut units = vec![Unit::Item];
    for w in 1..=warehouses {
        units.push(Unit::Stock(w));
        units.push(Unit::Orders(w));
        units.push(Unit::CustomerHistory(w));
        units.push(Unit::WarehouseDistrict(w));
    }
    let threads = threads.clamp(1, units.len());
    let t0 = std::time::Instant::now();
    in_parallel(db, threads, &units, dialect.load_session, |c, u| {
        load_unit(c, *u, seed, c_load, &ts).with_context(|| format!("loading {u:?}"))
    })?;
    let load_s = t0.elapsed().as_secs_f64();

    let t1 = std::time::Instant::now();
    in_parallel(
        db,
        threads,
        dialect.indexes,
        dialect.index_session,
        |c, sql| c.batch(sql).with_context(|| format!("running `{sql}`")),
    )?;
    for sql in dialect.procedures {
        client
            .batch(sql)
            .context("creating the transactions' server-side code")?;
    }
    client.batch(dialect.analyze)?;
    let index_s = t1.elapsed().as_secs_f64();
    let meta = [
        ("schema_version", schema::SCHEMA_VERSION.to_string()),
        ("warehouses", warehouses.to_string()),
        ("c_load", c_load.to_string()),
        ("seed", seed.to_string()),
        ("built_at", ts.clone()),
    ];
    for (k, v) in meta {
        client.set_meta(k, &v)?;
    }
    Ok(BuildInfo {
        warehouses,
        c_load,
        load_s,
        index_s,
    })
}

/// What an existing build says about itself (None: no build there).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BuildMeta {
    pub warehouses: u32,
    pub c_load: u32,
    pub schema_version: String,
}

pub fn read_meta(client: &mut dyn Conn) -> anyhow::Result<Option<BuildMeta>> {
    let Some(rows) = client.meta()? else {
        return Ok(None);
    };
    let get = |k: &str| -> Option<String> { rows.iter().find(|r| r.0 == k).map(|r| r.1.clone()) };
    let (Some(w), Some(c), Some(v)) = (get("warehouses"), get("c_load"), get("schema_version"))
    else {
        return Ok(None);
    };
    Ok(Some(BuildMeta {
        warehouses: w
            .parse()
            .map_err(|_| anyhow!("bad warehouses in rackbench_tpcc"))?,
        c_load: c
            .parse()
            .map_err(|_| anyhow!("bad c_load in rackbench_tpcc"))?,
        schema_version: v,
    }))
}

fn unit_rng(seed: u64, u: Unit) -> SmallRng {
    let k = match u {
        Unit::Item => 1,
        Unit::WarehouseDistrict(w) => 2 + 8 * w as u64,
        Unit::Stock(w) => 3 + 8 * w as u64,
        Unit::CustomerHistory(w) => 4 + 8 * w as u64,
        Unit::Orders(w) => 5 + 8 * w as u64,
    };
    SmallRng::seed_from_u64(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ k)
}

/// Load the rows `fill` writes (one per call, false after the last) into `table`, in
/// chunks of whole rows.
fn copy(
    client: &mut dyn Conn,
    table: &str,
    mut fill: impl FnMut(&mut Vec<u8>) -> bool,
) -> anyhow::Result<()> {
    let mut buf = Vec::with_capacity(CHUNK_BYTES + 4096);
    loop {
        let more = fill(&mut buf);
        if buf.len() >= CHUNK_BYTES || (!more && !buf.is_empty()) {
            not_stopped()?;
            client.load(table, &buf)?;
            buf.clear();
        }
        if !more {
            return Ok(());
        }
    }
}

/// An error once a stop is asked for (Ctrl-C here, or the controller's interrupt on an
/// agent): checked before each unit, index and 1 MiB chunk, so a build of many
/// warehouses (minutes) ends within a chunk's load. What it left has no build metadata,
/// so no later run reuses it.
fn not_stopped() -> anyhow::Result<()> {
    if engine::stop::stop_requested() {
        anyhow::bail!("stopped: the build was interrupted before it ended");
    }
    Ok(())
}

/// Run `work` on every item, `threads` connections at once (each set up with
/// `session_sql`) taking the next item in turn; the first error stops the others before
/// their next item and is returned, as is a stop ([`not_stopped`]).
fn in_parallel<T: Sync>(
    db: &dyn Backend,
    threads: usize,
    items: &[T],
    session_sql: &str,
    work: impl Fn(&mut dyn Conn, &T) -> anyhow::Result<()> + Sync,
) -> anyhow::Result<()> {
    let next = AtomicUsize::new(0);
    let first_error: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..threads.clamp(1, items.len().max(1)) {
            s.spawn(|| {
                let res = (|| -> anyhow::Result<()> {
                    let mut c = db.connect()?;
                    c.batch(session_sql)?;
                    loop {
                        if first_error.lock().map(|e| e.is_some()).unwrap_or(true) {
                            return Ok(());
                        }
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else {
                            return Ok(());
                        };
                        not_stopped()?;
                        work(&mut *c, item)?;
                    }
                })();
                if let Err(e) = res {
                    if let Ok(mut slot) = first_error.lock() {
                        slot.get_or_insert(e);
                    }
                }
            });
        }
    });
    match first_error.into_inner().ok().flatten() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn load_unit(c: &mut dyn Conn, u: Unit, seed: u64, c_load: u32, ts: &str) -> anyhow::Result<()> {
    let mut rng = unit_rng(seed, u);
    let rng = &mut rng;
    match u {
        Unit::Item => {
            let mut i = 0u32;
            copy(c, "item", |b| {
                i += 1;
                let _ = write!(b, "{i}\t{}\t", rng.gen_range(1..=10_000));
                push_astring(rng, b, 14, 24);
                b.push(b'\t');
                push_money(rng, b, 100, 10_000);
                b.push(b'\t');
                push_data(rng, b, 26, 50);
                b.push(b'\n');
                i < ITEMS
            })
        }
        Unit::WarehouseDistrict(w) => {
            copy(c, "warehouse", |b| {
                let _ = write!(b, "{w}\t");
                address(rng, b);
                push_fixed(b, rng.gen_range(0..=2000), 4);
                b.extend_from_slice(b"\t300000.00\n");
                false
            })?;
            let mut d = 0u32;
            copy(c, "district", |b| {
                d += 1;
                let _ = write!(b, "{d}\t{w}\t");
                address(rng, b);
                push_fixed(b, rng.gen_range(0..=2000), 4);
                b.extend_from_slice(b"\t30000.00\t3001\n");
                d < DISTRICTS
            })
        }
        Unit::Stock(w) => {
            let mut i = 0u32;
            copy(c, "stock", |b| {
                i += 1;
                let _ = write!(b, "{i}\t{w}\t{}\t", rng.gen_range(10..=100));
                for _ in 0..10 {
                    push_astring(rng, b, 24, 24);
                    b.push(b'\t');
                }
                b.extend_from_slice(b"0\t0\t0\t");
                push_data(rng, b, 26, 50);
                b.push(b'\n');
                i < ITEMS
            })
        }
        Unit::CustomerHistory(w) => {
            let (mut d, mut cid) = (1u32, 0u32);
            copy(c, "customer", |b| {
                cid += 1;
                if cid > CUSTOMERS_PER_DISTRICT {
                    cid = 1;
                    d += 1;
                }
                let _ = write!(b, "{cid}\t{d}\t{w}\t");
                push_astring(rng, b, 8, 16);
                b.extend_from_slice(b"\tOE\t");
                let last = if cid <= 1000 {
                    cid - 1
                } else {
                    nurand(rng, A_C_LAST, 0, 999, c_load)
                };
                b.extend_from_slice(last_name(last).as_bytes());
                b.push(b'\t');
                // street_1, street_2, city, state, zip (address without the name)
                push_astring(rng, b, 10, 20);
                b.push(b'\t');
                push_astring(rng, b, 10, 20);
                b.push(b'\t');
                push_astring(rng, b, 10, 20);
                b.push(b'\t');
                push_state(rng, b);
                b.push(b'\t');
                push_zip(rng, b);
                b.push(b'\t');
                push_nstring(rng, b, 16);
                let credit = if rng.gen_range(0..10) == 0 {
                    "BC"
                } else {
                    "GC"
                };
                let _ = write!(b, "\t{ts}\t{credit}\t50000.00\t");
                push_fixed(b, rng.gen_range(0..=5000), 4);
                b.extend_from_slice(b"\t-10.00\t10.00\t1\t0\t");
                push_astring(rng, b, 300, 500);
                b.push(b'\n');
                !(d == DISTRICTS && cid == CUSTOMERS_PER_DISTRICT)
            })?;
            let (mut d, mut cid) = (1u32, 0u32);
            copy(c, "history", |b| {
                cid += 1;
                if cid > CUSTOMERS_PER_DISTRICT {
                    cid = 1;
                    d += 1;
                }
                let _ = write!(b, "{cid}\t{d}\t{w}\t{d}\t{w}\t{ts}\t10.00\t");
                push_astring(rng, b, 12, 24);
                b.push(b'\n');
                !(d == DISTRICTS && cid == CUSTOMERS_PER_DISTRICT)
            })
        }
        Unit::Orders(w) => {
            // One pass generates all three tables' rows so O_OL_CNT and the order lines
            // agree; orders and new orders are small, kept in memory until their COPY.
            let mut orders = Vec::with_capacity(3 << 20);
            let mut new_orders = Vec::with_capacity(128 << 10);
            let mut lines: Vec<u8> = Vec::with_capacity(CHUNK_BYTES + 4096);

            for d in 1..=DISTRICTS {
                let mut perm: Vec<u32> = (1..=CUSTOMERS_PER_DISTRICT).collect();
                perm.shuffle(rng);
                for o in 1..=ORDERS_PER_DISTRICT {
                    let cnt = rng.gen_range(5..=15);
                    let delivered = o < FIRST_NEW_ORDER;
                    let _ = write!(orders, "{o}\t{d}\t{w}\t{}\t{ts}\t", perm[(o - 1) as usize]);
                    if delivered {
                        let _ = write!(orders, "{}", rng.gen_range(1..=10));
                    } else {
                        orders.extend_from_slice(b"\\N");
                        let _ = writeln!(new_orders, "{o}\t{d}\t{w}");
                    }
                    let _ = writeln!(orders, "\t{cnt}\t1");
                    for n in 1..=cnt {
                        let _ = write!(
                            lines,
                            "{o}\t{d}\t{w}\t{n}\t{}\t{w}\t",
                            rng.gen_range(1..=ITEMS)
                        );
                        if delivered {
                            let _ = write!(lines, "{ts}\t5\t0.00\t");
                        } else {
                            lines.extend_from_slice(b"\\N\t5\t");
                            push_money(rng, &mut lines, 1, 999_999);
                            lines.push(b'\t');
                        }
                        push_astring(rng, &mut lines, 24, 24);
                        lines.push(b'\n');
                    }
                    if lines.len() >= CHUNK_BYTES {
                        not_stopped()?;
                        c.load("order_line", &lines)?;
                        lines.clear();
                    }
                }
            }
            c.load("order_line", &lines)?;
            c.load("orders", &orders)?;
            c.load("new_order", &new_orders)?;
            Ok(())
        }
    }
}

/// name, street_1, street_2, city, state, zip, each followed by a tab (W and D rows).
fn address(rng: &mut SmallRng, b: &mut Vec<u8>) {
    push_astring(rng, b, 6, 10);
    b.push(b'\t');
    for _ in 0..3 {
        push_astring(rng, b, 10, 20);
        b.push(b'\t');
    }
    push_state(rng, b);
    b.push(b'\t');
    push_zip(rng, b);
    b.push(b'\t');
}

fn push_state(rng: &mut SmallRng, b: &mut Vec<u8>) {
    for _ in 0..2 {
        b.push(b'A' + rng.gen_range(0..26u8));
    }
}
