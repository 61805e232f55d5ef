//! The process-wide interrupt flag. A termination request (Ctrl-C, SIGTERM, SIGHUP, or a
//! controller's stop over the agent protocol) sets it; every loop polls it and ends its
//! current step early, keeping what it measured.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

/// Set by an abort (a second Ctrl-C): servers and every host's agent killed at once.
static ABORT: AtomicBool = AtomicBool::new(false);

/// The signal that asked first (0: none, or a stop that came without one).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Ask every running loop to stop as soon as it can.
pub fn request_stop() {
    STOP.store(true, Ordering::SeqCst);
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
}
