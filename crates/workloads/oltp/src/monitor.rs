//! The server-side counters behind NOPM and TPM (HammerDB's method): sum(d_next_o_id)
//! over the districts and the engine's transaction count (PostgreSQL: this database's
//! xact_commit + xact_rollback; MariaDB: the server's Com_commit + Com_rollback), read when the
//! ramp-up ends (sum(d_next_o_id), live, at that instant; the transaction count once every
//! user of every generator has its ramp-up counted: see [`StatsMark`]), and then every
//! second, so a server that dies mid-run still leaves its last good reading. It runs on
//! the first load generator, next to the virtual users (as in a single-host run); its
//! readings cross to the controller as [`WireWindow`]s.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::backend::{Backend, Conn};
use crate::txn::StatsMark;

/// How long the first reading waits for the last user (of any generator) to flush its
/// statistics once one has (a user in a long transaction, a generator that started
/// late): under the second before PostgreSQL flushes the first one's again. A user later
/// than that is counted in [`DbWindow::uncounted_at_first`].
const FLUSH_WAIT: Duration = Duration::from_millis(500);

/// One reading of a database's counters.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DbSample {
    pub(crate) at: Instant,
    pub(crate) next_o_id_sum: i64,
    pub(crate) xacts: i64,
    /// The instant the transaction count is complete up to: `at` for a reading while
    /// the users run (late by their unflushed statistics), where the measured run
    /// starts for the first reading (every user flushed there), the run's end for the
    /// last (every user gone).
    pub(crate) xacts_at: Instant,
}

pub(crate) fn sample(c: &mut dyn Conn) -> anyhow::Result<DbSample> {
    let r = c.counts()?;
    let at = Instant::now();
    Ok(DbSample {
        at,
        next_o_id_sum: r.next_o_id_sum,
        xacts: r.xacts,
        xacts_at: at,
    })
}

/// What the counter monitor saw for one database.
#[derive(Debug, Default, Clone)]
pub(crate) struct DbWindow {
    pub(crate) first: Option<DbSample>,
    pub(crate) last: Option<DbSample>,
    /// Transactions of rackbench's own in the window: the monitor's (since and including
    /// `first`) and the users' marks of their work counted ([`crate::backend::Txns::mark_counted`]).
    pub(crate) own_xacts: i64,
    /// Users (of any generator) whose ramp-up was not yet counted at the first reading:
    /// the end of their ramp-up is counted in the window.
    pub(crate) uncounted_at_first: i64,
    pub(crate) error: Option<String>,
}

/// A reading as it crosses a host boundary: taken `ago_ns` before the report was made
/// (instants mean nothing on another host; differences between readings stay exact).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct WireSample {
    ago_ns: u64,
    next_o_id_sum: i64,
    xacts: i64,
    /// `xacts_at`, if not `at` (absent from a report of an older generator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    xacts_ago_ns: Option<u64>,
}

/// [`DbWindow`] as plain data.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct WireWindow {
    first: Option<WireSample>,
    last: Option<WireSample>,
    own_xacts: i64,
    #[serde(default, skip_serializing_if = "is_zero")]
    uncounted_at_first: i64,
    error: Option<String>,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

impl DbWindow {
    /// The window as plain data, its readings timed back from `now`.
    pub(crate) fn to_wire(&self, now: Instant) -> WireWindow {
        let ago = |t: Instant| {
            u64::try_from(now.saturating_duration_since(t).as_nanos()).unwrap_or(u64::MAX)
        };
        let s = |d: &DbSample| WireSample {
            ago_ns: ago(d.at),
            next_o_id_sum: d.next_o_id_sum,
            xacts: d.xacts,
            xacts_ago_ns: (d.xacts_at != d.at).then(|| ago(d.xacts_at)),
        };
        WireWindow {
            first: self.first.as_ref().map(s),
            last: self.last.as_ref().map(s),
            own_xacts: self.own_xacts,
            uncounted_at_first: self.uncounted_at_first,
            error: self.error.clone(),
        }
    }

    /// A window received, its readings placed back before `now` on this host's clock.
    pub(crate) fn from_wire(w: WireWindow, now: Instant) -> DbWindow {
        let back = |ns: u64| now.checked_sub(Duration::from_nanos(ns)).unwrap_or(now);
        let s = |d: WireSample| DbSample {
            at: back(d.ago_ns),
            next_o_id_sum: d.next_o_id_sum,
            xacts: d.xacts,
            xacts_at: back(d.xacts_ago_ns.unwrap_or(d.ago_ns)),
        };
        DbWindow {
            first: w.first.map(s),
            last: w.last.map(s),
            own_xacts: w.own_xacts,
            uncounted_at_first: w.uncounted_at_first,
            error: w.error,
        }
    }
}

/// Read each database's counters when the ramp-up ends, then every second (so a server
/// that dies mid-run still leaves the last good reading), until told to stop. (The
/// controller marks the ramp-up as warm-up on every host.)
///
/// The first reading matches the clients' measured window, which starts where the
/// ramp-up ends (`mark.start()`, this generator's; the others start with it, within
/// milliseconds): sum(d_next_o_id) is live, read at that instant; the transaction
/// count is read once every user of every generator has flushed its statistics there
/// and said so where this monitor sees it (PostgreSQL: the users' `application_name`),
/// so no generator's ramp-up is counted in the window, and dated at the start.
pub(crate) fn monitor(
    dbs: Vec<Box<dyn Backend>>,
    mark: &StatsMark,
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
    let pause = || std::thread::sleep(Duration::from_millis(2));
    let stopped = || stop.load(Ordering::Relaxed);
    let start = loop {
        if stopped() {
            return wins;
        }
        match mark.start() {
            Some(s) if Instant::now() >= s => break s,
            _ => pause(),
        }
    };
    let fail = |c: &mut Option<Box<dyn Conn>>, w: &mut DbWindow, e: anyhow::Error| {
        w.error = Some(format!("{e:#}"));
        *c = None;
    };
    // NOPM's start: the district counters where the measured run starts.
    let mut at_start: Vec<Option<DbSample>> = vec![None; clients.len()];
    for ((c, w), s) in clients
        .iter_mut()
        .zip(wins.iter_mut())
        .zip(at_start.iter_mut())
    {
        let Some(client) = c.as_mut() else { continue };
        match sample(&mut **client) {
            Ok(r) => *s = Some(r),
            Err(e) => fail(c, w, e),
        }
    }
    // TPM's: once every user's ramp-up is counted (this generator's said so here, every
    // generator's where the server shows it), for at most FLUSH_WAIT after the first.
    while !mark.any_flushed() {
        if stopped() {
            return wins;
        }
        pause();
    }
    let first_flush = Instant::now();
    let mut waiting: Vec<bool> = clients.iter().map(Option::is_some).collect();
    // Per database: the users not yet counted and those counted, at the last look.
    let mut marks = vec![(0, 0); clients.len()];
    while first_flush.elapsed() < FLUSH_WAIT && (!mark.all_flushed() || waiting.contains(&true)) {
        for (((c, w), wait), m) in clients
            .iter_mut()
            .zip(wins.iter_mut())
            .zip(waiting.iter_mut())
            .zip(marks.iter_mut())
        {
            let Some(client) = c.as_mut().filter(|_| *wait) else {
                continue;
            };
            match client.vus_counted() {
                Ok(counts) => {
                    *m = counts;
                    *wait = counts.0 > 0;
                }
                Err(e) => {
                    fail(c, w, e);
                    *wait = false;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    // The monitor's own transactions so far (the reading at the start, the looks
    // above) are counted before the first reading, not in the window after it.
    for c in clients.iter_mut().flatten() {
        c.flush_stats();
    }
    let mut next = Instant::now();
    loop {
        for (((c, w), s0), &(uncounted, counted)) in clients
            .iter_mut()
            .zip(wins.iter_mut())
            .zip(&at_start)
            .zip(&marks)
        {
            let Some(client) = c.as_mut() else { continue };
            let first = w.first.is_none();
            match sample(&mut **client) {
                Ok(mut s) => {
                    if first {
                        if let Some(s0) = s0 {
                            s.at = s0.at;
                            s.next_o_id_sum = s0.next_o_id_sum;
                        }
                        s.xacts_at = start;
                        w.first = Some(s);
                        // Each user's mark is one transaction, after its flush.
                        w.own_xacts += counted;
                        w.uncounted_at_first = uncounted;
                    }
                    w.last = Some(s);
                    w.own_xacts += i64::from(client.reading_is_a_transaction());
                }
                Err(e) => fail(c, w, e),
            }
        }
        next += Duration::from_secs(1);
        while Instant::now() < next {
            if stopped() {
                return wins;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
