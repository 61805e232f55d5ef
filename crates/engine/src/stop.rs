//! The process-wide interrupt flag. Ctrl-C sets it; every loop polls it and ends its
//! current step early, keeping what it measured.

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

/// Ask every running loop to stop as soon as it can.
pub fn request_stop() {
    STOP.store(true, Ordering::SeqCst);
}

/// True once a stop was requested.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// Clear the flag (tests only: a process normally stops for good).
pub fn reset() {
    STOP.store(false, Ordering::SeqCst);
}
