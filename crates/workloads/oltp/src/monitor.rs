//! The server-side counters behind NOPM and TPM (HammerDB's method): sum(d_next_o_id)
//! over the districts and the engine's transaction count (PostgreSQL: this database's
//! xact_commit + xact_rollback; MariaDB: the server's Com_commit + Com_rollback), read when the
//! ramp-up ends and then every second, so a server that dies mid-run still leaves its last
//! good reading. It runs on the first load generator, next to the virtual users (as in a
//! single-host run); its readings cross to the controller as [`WireWindow`]s.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::backend::{Backend, Conn};

/// One reading of a database's counters.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DbSample {
    pub(crate) at: Instant,
    pub(crate) next_o_id_sum: i64,
    pub(crate) xacts: i64,
}

pub(crate) fn sample(c: &mut dyn Conn) -> anyhow::Result<DbSample> {
    let r = c.counts()?;
    Ok(DbSample {
        at: Instant::now(),
        next_o_id_sum: r.next_o_id_sum,
        xacts: r.xacts,
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

/// A reading as it crosses a host boundary: taken `ago_ns` before the report was made
/// (instants mean nothing on another host; differences between readings stay exact).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct WireSample {
    ago_ns: u64,
    next_o_id_sum: i64,
    xacts: i64,
}

/// [`DbWindow`] as plain data.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct WireWindow {
    first: Option<WireSample>,
    last: Option<WireSample>,
    own_xacts: i64,
    error: Option<String>,
}

impl DbWindow {
    /// The window as plain data, its readings timed back from `now`.
    pub(crate) fn to_wire(&self, now: Instant) -> WireWindow {
        let s = |d: &DbSample| WireSample {
            ago_ns: u64::try_from(now.saturating_duration_since(d.at).as_nanos())
                .unwrap_or(u64::MAX),
            next_o_id_sum: d.next_o_id_sum,
            xacts: d.xacts,
        };
        WireWindow {
            first: self.first.as_ref().map(s),
            last: self.last.as_ref().map(s),
            own_xacts: self.own_xacts,
            error: self.error.clone(),
        }
    }

    /// A window received, its readings placed back before `now` on this host's clock.
    pub(crate) fn from_wire(w: WireWindow, now: Instant) -> DbWindow {
        let s = |d: WireSample| DbSample {
            at: now
                .checked_sub(Duration::from_nanos(d.ago_ns))
                .unwrap_or(now),
            next_o_id_sum: d.next_o_id_sum,
            xacts: d.xacts,
        };
        DbWindow {
            first: w.first.map(s),
            last: w.last.map(s),
            own_xacts: w.own_xacts,
            error: w.error,
        }
    }
}

/// Read each database's counters when the ramp-up ends, then every second (so a server
/// that dies mid-run still leaves the last good reading), until told to stop. (The
/// controller marks the ramp-up as warm-up on every host.)
pub(crate) fn monitor(
    dbs: Vec<Box<dyn Backend>>,
    rampup: Duration,
    stop: Arc<AtomicBool>,
) -> Vec<DbWindow> {
    let mut wins = vec![DbWindow::default(); dbs.len()];
    let mut clients: Vec<Option<Box<dyn Conn>>> = dbs
        .iter()
        .zip(wins.iter_mut())
        .map(|(c, w)| match c.connect() {
            Ok(c) => Some(c),
            Err(e) => {
                w.error = Some(format!("{e:#}"));
                None
            }
        })
        .collect();
    let start = Instant::now();
    while start.elapsed() < rampup && !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(20).min(rampup.saturating_sub(start.elapsed())));
    }
    let mut next = Instant::now();
    loop {
        for (c, w) in clients.iter_mut().zip(wins.iter_mut()) {
            let Some(client) = c.as_mut() else { continue };
            match sample(&mut **client) {
                Ok(s) => {
                    if w.first.is_none() {
                        w.first = Some(s);
                    }
                    w.last = Some(s);
                    w.own_xacts += i64::from(client.reading_is_a_transaction());
                }
                Err(e) => {
                    w.error = Some(format!("{e:#}"));
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
