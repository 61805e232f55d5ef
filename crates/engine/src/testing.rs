//! For tests of the launch machinery, here and in the crates built on it (hosts, runner):
//! a command run under test is a `sleep MARKER`, found in /proc by its marker, so that a
//! test tells whether what it started is still running, and a failing test leaves none.
//! And for the workloads' tests: a ctx that keeps the checkpoints a test hands.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::{Ctx, StepOutput};

/// `ctx` keeping every provisional result (checkpoint) a test hands ([`Ctx::partial`]).
pub fn keeping(ctx: Ctx) -> (Ctx, Arc<Mutex<Vec<StepOutput>>>) {
    let kept = Arc::new(Mutex::new(Vec::new()));
    let k = kept.clone();
    let partial: crate::workload::Partial =
        Arc::new(move |s: &StepOutput| k.lock().unwrap().push(s.clone()));
    let ctx = Ctx {
        partial: Some(partial),
        ..ctx
    };
    (ctx, kept)
}

/// A `sleep` argument no other process has: its pid in the seconds, a clock in the
/// fraction (about four days: a leftover is unmistakable).
pub fn marker() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .subsec_nanos();
    format!("3{:05}.{nanos:09}", std::process::id() % 100_000)
}

/// Live (not zombie) processes with `marker` as a word of their command line.
pub fn running(marker: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            cmdline.split(|&b| b == 0).any(|w| w == marker.as_bytes())
                && !stat.rsplit(')').next().unwrap_or("").starts_with(" Z")
        })
        .collect()
}

/// Poll `done` every 10 ms; panic naming `what` when it is not true within `limit`.
pub fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !done() {
        assert!(t0.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// SIGKILL every process still running with `marker` (a failing test leaves no four-day
/// sleep behind) and return them: empty when nothing was left.
pub fn kill_left(marker: &str) -> Vec<u32> {
    let left = running(marker);
    for pid in &left {
        // SAFETY: kill(2) on a process started by the test that made `marker`.
        unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
    }
    left
}
