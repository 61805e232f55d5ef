//! The process-wide interrupt flag. A termination request (Ctrl-C, SIGTERM, SIGHUP, or a
//! controller's stop over the agent protocol) sets it; every loop polls it and ends its
//! current step early, keeping what it measured.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static STOP: AtomicBool = AtomicBool::new(false);

/// When the first stop was requested.
static STOPPED_AT: Mutex<Option<Instant>> = Mutex::new(None);

/// Set by an abort (a second Ctrl-C): servers and every host's agent killed at once.
static ABORT: AtomicBool = AtomicBool::new(false);

/// The signal that asked first (0: none, or a stop that came without one).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Ask every running loop to stop as soon as it can.
pub fn request_stop() {
    STOPPED_AT
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(Instant::now);
    STOP.store(true, Ordering::SeqCst);
}

/// How long before a stop something that failed may still be its doing: a stop that
/// signals every process at once (systemd's stop of a unit: rackbench and its ssh
/// clients) ends them in no set order.
pub const STOP_RACE: Duration = Duration::from_secs(2);

/// Whether a failure at `at` (None: when is not known) is likely the stop's doing: a
/// stop was requested before it, or at most [`STOP_RACE`] after it. A host lost a
/// minute before a Ctrl-C was lost, not stopped.
pub fn caused(at: Option<Instant>) -> bool {
    caused_by(*STOPPED_AT.lock().unwrap_or_else(|e| e.into_inner()), at)
}

/// [`caused`] by a stop requested at `stopped`.
fn caused_by(stopped: Option<Instant>, at: Option<Instant>) -> bool {
    match (stopped, at) {
        (None, _) => false,
        (Some(_), None) => true,
        (Some(s), Some(a)) => a + STOP_RACE >= s,
    }
}

/// [`request_stop`] because signal `signo` arrived; the first signal is remembered (for
/// the exit status, 128 + its number, and for the words of the `interrupted` flag).
pub fn request_stop_by_signal(signo: i32) {
    let _ = SIGNAL.compare_exchange(0, signo, Ordering::SeqCst, Ordering::SeqCst);
    request_stop();
}

/// Abort: stop, and say that what fails from now on (servers killed, hosts' agents
/// ended) is the abort's doing, not a failure of a host or a server.
pub fn request_abort() {
    ABORT.store(true, Ordering::SeqCst);
    request_stop();
}

/// True once the run was aborted ([`request_abort`]).
pub fn aborted() -> bool {
    ABORT.load(Ordering::SeqCst)
}

/// True once a stop was requested.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// The signal of the first stop request, if one came by signal.
pub fn stop_signal() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// What stopped the run, in a reader's words ("Ctrl-C (SIGINT)", "SIGTERM", ...).
pub fn stop_cause() -> String {
    match stop_signal() {
        Some(libc::SIGINT) => "Ctrl-C (SIGINT)".into(),
        Some(libc::SIGTERM) => "SIGTERM".into(),
        Some(libc::SIGHUP) => "SIGHUP (the terminal closed)".into(),
        Some(s) => format!("signal {s}"),
        None => "a stop request".into(),
    }
}

/// Clear the flag (tests only: a process normally stops for good).
pub fn reset() {
    STOP.store(false, Ordering::SeqCst);
    ABORT.store(false, Ordering::SeqCst);
    SIGNAL.store(0, Ordering::SeqCst);
    *STOPPED_AT.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A failure as the stop came (before it by under [`STOP_RACE`], or after) is its
    /// doing; one well before it, or with no stop, is not.
    #[test]
    fn a_failure_is_the_stops_doing_only_near_or_after_it() {
        let t = Instant::now() + Duration::from_secs(100);
        let s = |secs: f64| {
            let d = Duration::from_secs_f64(secs.abs());
            Some(if secs < 0.0 { t - d } else { t + d })
        };
        assert!(!caused_by(None, s(0.0)));
        assert!(caused_by(s(0.0), None));
        assert!(caused_by(s(0.0), s(0.5)));
        assert!(caused_by(s(0.0), s(-1.5)));
        assert!(!caused_by(s(0.0), s(-25.0)));
    }
}
