//! The server-side counters behind NOPM and TPM (HammerDB's method): sum(d_next_o_id)
//! over the districts and this database's xact_commit + xact_rollback, read when the
//! ramp-up ends and then every second, so a server that dies mid-run still leaves its last
//! good reading.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::server;

/// One reading of a database's counters.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DbSample {
    pub(crate) at: Instant,
    pub(crate) next_o_id_sum: i64,
    pub(crate) xacts: i64,
}

const SAMPLE_SQL: &str = "SELECT (SELECT sum(d_next_o_id) FROM district)::int8, \
    (SELECT xact_commit + xact_rollback FROM pg_stat_database \
     WHERE datname = current_database())::int8";

pub(crate) fn sample(c: &mut postgres::Client) -> Result<DbSample, postgres::Error> {
    let r = c.query_one(SAMPLE_SQL, &[])?;
    Ok(DbSample {
        at: Instant::now(),
        next_o_id_sum: r.get::<_, Option<i64>>(0).unwrap_or(0),
        xacts: r.get::<_, Option<i64>>(1).unwrap_or(0),
    })
}

/// What the counter monitor saw for one database.
#[derive(Debug, Default, Clone)]
pub(crate) struct DbWindow {
    pub(crate) first: Option<DbSample>,
    pub(crate) last: Option<DbSample>,
    /// Monitor transactions on this database since (and including) `first`.
    pub(crate) own_xacts: i64,
    pub(crate) error: Option<String>,
}

/// Read each database's counters when the ramp-up ends, then every second (so a server
/// that dies mid-run still leaves the last good reading), until told to stop.
pub(crate) fn monitor(
    cfgs: Vec<postgres::Config>,
    rampup: Duration,
    stop: Arc<AtomicBool>,
    watch: Arc<dyn engine::workload::Watch>,
) -> Vec<DbWindow> {
    let mut wins = vec![DbWindow::default(); cfgs.len()];
    let mut clients: Vec<Option<postgres::Client>> = cfgs
        .iter()
        .zip(wins.iter_mut())
        .map(|(c, w)| match server::connect(c) {
            Ok(c) => Some(c),
            Err(e) => {
                w.error = Some(format!("{e:#}"));
                None
            }
        })
        .collect();
    let start = Instant::now();
    watch.set_warmup(!rampup.is_zero());
    while start.elapsed() < rampup && !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(20).min(rampup.saturating_sub(start.elapsed())));
    }
    watch.set_warmup(false);
    let mut next = Instant::now();
    loop {
        for (c, w) in clients.iter_mut().zip(wins.iter_mut()) {
            let Some(client) = c.as_mut() else { continue };
            match sample(client) {
                Ok(s) => {
                    if w.first.is_none() {
                        w.first = Some(s);
                    }
                    w.last = Some(s);
                    w.own_xacts += 1;
                }
                Err(e) => {
                    w.error = Some(e.to_string());
                    *c = None;
                }
            }
        }
        next += Duration::from_secs(1);
        while Instant::now() < next {
            if stop.load(Ordering::Relaxed) {
                return wins;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
