//! Termination requests: one request, however delivered, ends the run early and keeps what
//! was measured.
//!
//! A supervisor often delivers one request as several signals: `timeout` and `systemd`
//! send SIGTERM to the process and then to its whole process group, a terminal sends SIGINT
//! to the foreground group, `kill -TERM -PGID` reaches rackbench once per group it is in.
//! So repeated SIGTERM or SIGHUP never escalate, and neither does a SIGINT that follows
//! the first request within [`ABORT_AFTER`]. Only a second Ctrl-C, pressed later on
//! purpose, aborts: launched servers are killed, the run is closed as interrupted with the
//! results already stored, and rackbench exits.
//!
//! Exit status after a termination request: 128 + the first signal's number (130 for
//! SIGINT, 143 for SIGTERM, 129 for SIGHUP), as shells and supervisors expect.

use std::time::{Duration, Instant};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

/// A SIGINT at least this long after the first request is a second, deliberate Ctrl-C.
pub const ABORT_AFTER: Duration = Duration::from_millis(1000);

/// How long an abort waits for the run to close itself before exiting anyway.
const ABORT_GRACE: Duration = Duration::from_secs(5);

/// What one arriving signal means, given what came before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// The first request: finish the current test early, keep everything.
    Stop,
    /// Part of a request already under way (a group signal, a supervisor's repeat).
    AlreadyStopping,
    /// A second Ctrl-C: kill the servers and exit.
    Abort,
}

/// The signals seen so far, and the decision for the next one.
#[derive(Debug, Default)]
pub struct Requests {
    first: Option<Instant>,
}

impl Requests {
    pub fn on(&mut self, signo: i32, now: Instant) -> Action {
        match self.first {
            None => {
                self.first = Some(now);
                Action::Stop
            }
            Some(first) if signo == SIGINT && now.duration_since(first) >= ABORT_AFTER => {
                Action::Abort
            }
            Some(_) => Action::AlreadyStopping,
        }
    }
}

/// The exit status of a run that a termination request ended: 128 + the signal.
pub fn exit_status() -> Option<i32> {
    engine::stop::stop_signal().map(|s| 128 + s)
}

/// Handle SIGINT, SIGTERM and SIGHUP for a command that writes files for the user (a
/// report, its charts, an export), from its first staged file on: remove the temporary
/// files staged and not yet in place ([`crate::commands::output::remove_staged`]), then
/// exit as the signal would have. Left to the signal's default, the process ended
/// without them, and a Ctrl-C while a report's charts were synced left `.NAME.tmp-*`
/// files that nothing removes. Once per process; not beside a run's own handling.
pub fn install_for_writes() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
            return;
        };
        std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                if let Some(signo) = signals.forever().next() {
                    crate::commands::output::remove_staged();
                    std::process::exit(128 + signo);
                }
            })
            .ok();
    });
}

/// Handle SIGINT, SIGTERM and SIGHUP for a run (on a thread of their own).
pub fn install_for_run() {
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        engine::errln!("rackbench: warning: cannot handle termination signals; Ctrl-C will lose the test under way");
        return;
    };
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let mut requests = Requests::default();
            for signo in signals.forever() {
                match requests.on(signo, Instant::now()) {
                    Action::Stop => {
                        engine::stop::request_stop_by_signal(signo);
                        engine::errln!(
                            "\n{}",
                            stopping_message(&engine::stop::stop_cause(), signo)
                        );
                    }
                    Action::AlreadyStopping => {}
                    Action::Abort => abort(),
                }
            }
        })
        .ok();
}

/// A second Ctrl-C: servers killed at once, here and on every remote host (its agent's
/// ssh ended: the agent kills what it launched), so their clients fail fast and the run
/// closes as interrupted with what was stored; exit after a grace period whatever happens.
fn abort() {
    engine::stop::request_abort();
    engine::launch::kill_all_children();
    hosts::remote::kill_agents();
    engine::errln!("\nrackbench: interrupted twice: servers killed; closing the run");
    std::thread::spawn(|| {
        std::thread::sleep(ABORT_GRACE);
        engine::errln!("rackbench: the run did not close in time; exiting (the next command marks it interrupted)");
        std::process::exit(exit_status().unwrap_or(130));
    });
}

/// What the first request prints: the run stops at whatever stage it is (a test ends
/// early, a setup or build is abandoned), keeping what was measured. Only a terminal's
/// Ctrl-C is told how to abort: a supervisor's SIGTERM has no one to read it.
fn stopping_message(cause: &str, signo: i32) -> String {
    format!(
        "rackbench: {cause} received: stopping; a test under way ends now and what was \
         measured is kept{}",
        if signo == SIGINT {
            " (Ctrl-C again to abort)"
        } else {
            ""
        }
    )
}

/// For commands that only need a flag (`net serve`): any of the three signals sets it.
pub fn flag_on_termination(flag: &std::sync::Arc<std::sync::atomic::AtomicBool>) {
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        let _ = signal_hook::flag::register(sig, std::sync::Arc::clone(flag));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_request_delivered_as_many_signals_is_one_stop() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        // `timeout`: SIGTERM to the process, then to the whole group.
        let mut r = Requests::default();
        assert_eq!(r.on(SIGTERM, ms(0)), Action::Stop);
        assert_eq!(r.on(SIGTERM, ms(2)), Action::AlreadyStopping);
        // A supervisor repeating SIGTERM much later still does not abort.
        assert_eq!(r.on(SIGTERM, ms(5000)), Action::AlreadyStopping);
        assert_eq!(r.on(SIGHUP, ms(6000)), Action::AlreadyStopping);
        // `timeout -s INT`: SIGINT twice within milliseconds.
        let mut r = Requests::default();
        assert_eq!(r.on(SIGINT, ms(0)), Action::Stop);
        assert_eq!(r.on(SIGINT, ms(3)), Action::AlreadyStopping);
        // A person pressing Ctrl-C again later aborts, also after a SIGTERM.
        assert_eq!(r.on(SIGINT, ms(1500)), Action::Abort);
        let mut r = Requests::default();
        assert_eq!(r.on(SIGTERM, ms(0)), Action::Stop);
        assert_eq!(r.on(SIGINT, ms(2000)), Action::Abort);
    }

    #[test]
    fn only_a_terminals_ctrl_c_is_told_how_to_abort() {
        let m = stopping_message("Ctrl-C (SIGINT)", SIGINT);
        assert!(m.ends_with("(Ctrl-C again to abort)"), "{m}");
        // Not "finishing the current test": it may come during a setup or a build.
        assert!(!m.contains("current test"), "{m}");
        let m = stopping_message("SIGTERM", SIGTERM);
        assert!(
            m.contains("SIGTERM received") && !m.contains("Ctrl-C"),
            "{m}"
        );
    }
}
