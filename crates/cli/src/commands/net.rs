//! `net`: helpers of the network workload. `net serve` is the receiving end of
//! `rackbench run net`: a separate process reachable by address, so that the same code
//! measures loopback and host-to-host. It serves one test at a time until Ctrl-C/SIGTERM.

use std::net::TcpListener;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::Context;

use crate::Global;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub cmd: NetCmd,
}

#[derive(clap::Subcommand, Debug)]
pub enum NetCmd {
    /// Receive TCP/UDP test streams from `rackbench run net --target HOST:PORT`.
    Serve(ServeArgs),
}

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Control address to listen on (data sockets use ephemeral ports of the same IP).
    #[arg(long, default_value = "127.0.0.1:5201", value_name = "HOST:PORT")]
    pub bind: String,
    /// CPUs for the receiving threads (`0`, `2-3`); the sender may ask for others per test.
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Serve a single test, then exit.
    #[arg(long)]
    pub once: bool,
}

pub fn run(a: Args, g: &Global) -> anyhow::Result<i32> {
    match a.cmd {
        NetCmd::Serve(s) => serve(s, g),
    }
}

fn serve(a: ServeArgs, g: &Global) -> anyhow::Result<i32> {
    let cpus = match &a.cpus {
        Some(s) => engine::launch::parse_cpu_list(s).context("--cpus")?,
        None => Vec::new(),
    };
    // Pin the whole process first so that every thread inherits it; a CPU we may not
    // use is an error now rather than a silently unpinned measurement later.
    engine::launch::pin_current_thread(&cpus)?;
    let listener = TcpListener::bind(&a.bind).with_context(|| {
        format!(
            "cannot listen on {}: is another receiver running there? pick another port with --bind 127.0.0.1:PORT",
            a.bind
        )
    })?;
    let addr = listener.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    {
        // SIGINT, SIGTERM (ChildGuard stops us with SIGTERM) and SIGHUP end the loop cleanly.
        crate::signals::flag_on_termination(&stop);
    }
    if g.json {
        engine::outln!("{}", serde_json::json!({"listening": addr.to_string()}));
    } else {
        engine::outln!("rackbench net serve: listening on {addr}");
    }
    let opts = wl_net::ServeOptions {
        cpus,
        once: a.once,
        verbose: !g.quiet,
    };
    wl_net::serve(listener, &opts, &stop)?;
    Ok(0)
}
