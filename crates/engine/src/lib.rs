//! The engine: what every workload shares.
//!
//! - [`workload`]: the `Workload` trait (prepare / tests / run_test / verify / cleanup)
//!   that each workload crate implements, and what a test returns.
//! - [`load`]: THE load loop. One loop for every request/response protocol, with the load
//!   shape (closed loop, open loop at a constant or Poisson rate) and the stop condition
//!   (N requests or a duration) as parameters. Byte protocols (Redis, HTTP) plug in through
//!   [`load::Protocol`] and run on non-blocking sockets; protocols that come as blocking
//!   client libraries (PostgreSQL) plug in through [`load::Session`], one thread each, with
//!   the same scheduling, stop and recording code.
//! - [`plan`]: plan values, lists and ranges as sweeps, the cartesian product.
//! - [`launch`]: servers rackbench starts itself (free ports, CPU pinning, readiness,
//!   teardown on drop, on error and on Ctrl-C).
//! - [`command`]: command lines run to their end (a variant's setup and teardown, the
//!   probes that read a host), each under the launch machinery like a server.
//! - [`host`]: the `Host` a workload acts through (system under test, load generators),
//!   the `Service`/driver split, the start barrier.
//! - [`stop`]: the process-wide interrupt flag set by Ctrl-C.
//! - [`capacity`], [`capacity_tests`]: rate ramps, latency-objective searches and load
//!   levels, and the shared flags and driver that offer them as tests of any workload.
//! - [`cpu_use`]: a load generator sharing the servers' CPUs, servers or threads taking
//!   turns on a CPU, judged the same for every workload that launches servers.
//! - [`validity`]: checks every result gets (client-bound, errors, zero throughput...).

pub mod capacity;
pub mod capacity_tests;
pub mod command;
pub mod cpu_use;
pub mod histlog;
pub mod host;
pub mod launch;
pub mod limits;
pub mod load;
pub mod plan;
mod sched;
pub mod scratch;
mod sessions;
pub mod spread;
pub mod stop;
mod stream;
#[doc(hidden)]
pub mod testing;
pub mod validity;
pub mod wire;
pub mod workload;

pub use load::{LoadOutcome, LoadShape, LoadSpec, Outcome, StopAfter};
pub use workload::{no_programs, Ctx, Registration, StepOutput, Workload};

/// `eprintln!` that never panics: a closed or broken stderr (`2>&-`, `2>&1 | head` after
/// head quit) loses the line, never the run or its exit status. rackbench prints to
/// stderr with this, never with `eprintln!`; while a progress bar is drawn there, the
/// line goes above it ([`set_stderr_lines`]).
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {{
        $crate::write_stderr_line(::std::format_args!($($arg)*));
    }};
}

/// What writes an [`errln!`] line while a progress bar is drawn on stderr: a line written
/// straight to stderr then was glued to the bar's line (`... ETA 0s rackbench: crypto
/// sha256: threads=1`) and left a torn line in the terminal's scroll-back.
type StderrLines = std::sync::Arc<dyn Fn(&mut dyn FnMut()) + Send + Sync>;

static STDERR_LINES: std::sync::RwLock<Option<StderrLines>> = std::sync::RwLock::new(None);

/// Have [`errln!`] lines written inside `around` (a progress bar's `suspend`: clear the
/// bar, write, draw it again); None writes them straight to stderr again.
pub fn set_stderr_lines(around: Option<StderrLines>) {
    let mut g = STDERR_LINES
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    *g = around;
}

#[doc(hidden)]
pub fn write_stderr_line(args: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    let mut write = || {
        let _ = std::io::stderr().write_fmt(format_args!("{args}\n"));
    };
    let around = STDERR_LINES.read().map_or(None, |g| g.clone());
    match around {
        Some(around) => around(&mut write),
        None => write(),
    }
}

/// `println!` that never panics: a closed stdout (`| head`) ends the output quietly.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::writeln!(::std::io::stdout(), $($arg)*);
    }};
}

/// `print!` that never panics (see [`outln!`]).
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::write!(::std::io::stdout(), $($arg)*);
    }};
}
