//! rackbench: the binary. Parses arguments, dispatches to a subcommand, prints the error
//! chain and sets the exit status (0 ok, 1 a run failed or found invalid results, 2 bad
//! usage or setup, 128+N a run ended early by signal N: README, "Exit status").
//! Everything else lives in the library crates.

mod commands;
mod progress;
mod registry;
mod signals;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// The unit tests' fuzz targets (`fuzz_*`) bound what one case may allocate.
#[cfg(test)]
#[global_allocator]
static ALLOC: fuzzkit::TrackingAlloc = fuzzkit::TrackingAlloc;

#[derive(Parser, Debug)]
#[command(
    name = "rackbench",
    version = env!("RACKBENCH_BUILD"),
    about = "Benchmark server platforms: drive workloads, watch CPU and power, store, report, TCO",
    after_help = "Start with: rackbench run kv --instances 1 -n 100000 -P 1,100 -t set,get"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Options every subcommand understands.
#[derive(clap::Args, Debug, Clone)]
pub struct Global {
    /// Results store (SQLite). Default: $RACKBENCH_DB, else
    /// $XDG_DATA_HOME/rackbench/results.sqlite (~/.local/share/rackbench/results.sqlite).
    #[arg(long, global = true, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Machine-readable JSON on stdout instead of tables.
    #[arg(long, global = true)]
    pub json: bool,
    /// No progress or notes on stderr.
    #[arg(long, short = 'q', global = true)]
    pub quiet: bool,
}

impl Global {
    pub fn db_path(&self) -> PathBuf {
        self.db.clone().unwrap_or_else(store::default_path)
    }
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a workload (or a plan file) and store the results.
    Run(commands::run::Args),
    /// List stored runs.
    Runs(commands::runs::ListArgs),
    /// Show one stored run.
    Show(commands::runs::ShowArgs),
    /// Export stored runs as JSON or long-form CSV.
    Export(commands::runs::ExportArgs),
    /// Import runs exported as JSON (from another host).
    Import(commands::runs::ImportArgs),
    /// Write a report (HTML, Markdown, SVG charts) of stored runs.
    Report(commands::report::Args),
    /// Compare two runs or run groups: differences, confidence, comparability.
    Compare(commands::report::CompareArgs),
    /// Rack-level TCO from a TOML plan (stored runs or given figures).
    Tco(commands::report::TcoArgs),
    /// Print this host's system disclosure.
    Disclosure(commands::disclosure::Args),
    /// Network workload helpers (`net serve`: the receiving end).
    Net(commands::net::Args),
    /// TPC-C helpers (`oltp build`, `oltp check`).
    Oltp(commands::oltp::Args),
    /// Hosts of a many-host run (`hosts check HOST...`).
    Hosts(commands::hosts::Args),
    /// The agent a run starts on every other host over ssh (speaks frames on stdin/stdout).
    #[command(hide = true)]
    Agent(commands::hosts::AgentArgs),
}

/// Standard descriptors the caller closed (`2>&-`) are opened on /dev/null before anything
/// else: otherwise the first file rackbench opens (the results store, a server's log) takes
/// the number, and what is printed for the user is written into that file.
fn reopen_closed_stdio() {
    for fd in 0..=2 {
        // SAFETY: F_GETFD only asks whether the descriptor is open.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
            let mode = if fd == 0 {
                libc::O_RDONLY
            } else {
                libc::O_WRONLY
            };
            // SAFETY: a constant NUL-terminated path; open takes the lowest free number,
            // `fd` itself, as the ones below it are open by now.
            unsafe { libc::open(c"/dev/null".as_ptr(), mode) };
        }
    }
}

/// The options whose value may hold a password: a connection string, a meter command,
/// a target URL.
const SECRET_BEARING: [&str; 3] = ["--dsn", "--power-meter", "--target"];

/// A warning when one of those options holds a password (a `--dsn` URL's, a meter
/// command's `-P`): rackbench keeps it out of everything it prints and stores, but while
/// it runs every user of this host reads it in the process list, as mysql warns of `-p`.
fn secret_on_command_line(
    args: impl IntoIterator<Item = std::ffi::OsString>,
) -> Option<&'static str> {
    let args: Vec<String> = args
        .into_iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut values = args.iter().enumerate().filter_map(|(i, a)| {
        SECRET_BEARING
            .iter()
            .find_map(|flag| match a.strip_prefix(flag) {
                Some("") => args.get(i + 1),
                Some(v) if v.starts_with('=') => Some(a),
                _ => None,
            })
    });
    values.any(|v| model::redact_secrets(v) != *v).then_some(
        "a password on the command line is seen by every user of this host in the \
             process list while rackbench runs: give it in PGPASSWORD or the password file \
             (PostgreSQL), MYSQL_PWD (MariaDB), or the meter's own environment or file",
    )
}

fn main() {
    reopen_closed_stdio();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    if matches!(cli.command, Command::Agent(_)) {
        hosts::agent::mark_stderr();
    }
    if matches!(cli.command, Command::Run(_) | Command::Oltp(_)) {
        // Commands that may launch servers start the reaper now, while rackbench is small
        // (it is a fork sharing our memory copy-on-write).
        engine::launch::init_reaper();
    }
    // Connections and servers' clients need descriptors: the soft limit goes up to the
    // hard one (launched servers inherit it).
    engine::limits::raise_open_files();
    // What a rackbench killed outright left (temporary directories, PostgreSQL clusters,
    // servers' leftover processes) goes now, whatever this command is.
    for cleaned in engine::scratch::sweep() {
        // A note, held back by --quiet as every note is (a script reading stdout and
        // stderr together met it before its JSON).
        if !cli.global.quiet {
            engine::errln!("rackbench: {cleaned}");
        }
    }
    if let Some(warning) = secret_on_command_line(std::env::args_os().skip(1)) {
        engine::errln!("rackbench: {warning}");
    }
    let db = cli.global.db_path();
    let result = commands::dispatch(cli);
    engine::scratch::remove_own();
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            // A damaged page met by any query: which file, and what to do.
            let e = store::explain_damage(e, &db);
            // Errors carry text from hosts and users: printed safe for the terminal.
            engine::errln!(
                "rackbench: error: {}",
                model::printable_lines(&model::redact_secrets(&format!("{e:#}")))
            );
            std::process::exit(2);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::secret_on_command_line;

    fn args(a: &[&str]) -> Vec<std::ffi::OsString> {
        a.iter().map(Into::into).collect()
    }

    #[test]
    fn a_password_on_the_command_line_is_warned_of() {
        for given in [
            &["run", "oltp", "--dsn", "postgres://bench:Zq9@db/tpcc"][..],
            &["run", "oltp", "--dsn", "host=db password=Zq9 dbname=tpcc"],
            &[
                "run",
                "kv",
                "--power-meter",
                "ipmitool -H bmc -U a -P Zq9 dcmi power reading",
            ],
        ] {
            let w = secret_on_command_line(args(given)).expect("a warning");
            assert!(w.contains("process list") && !w.contains("Zq9"), "{w}");
        }
        let w = secret_on_command_line(args(&["run", "oltp", "--dsn=postgres://u:Zq9@db/t"]));
        assert!(w.is_some());
        for quiet in [
            &["run", "oltp", "--dsn", "host=db dbname=tpcc"][..],
            // A setting named like a password is no password.
            &[
                "run",
                "oltp",
                "--pg-setting",
                "password_encryption=scram-sha-256",
            ],
            &["run", "kv", "-P", "100"],
        ] {
            assert_eq!(secret_on_command_line(args(quiet)), None, "{quiet:?}");
        }
    }
}
