//! One module per subcommand: glue between arguments and the library crates.

pub mod disclosure;
pub mod hosts;
pub mod net;
pub mod oltp;
pub mod output;
pub mod report;
pub mod run;
pub mod runs;

use crate::{Cli, Command};

pub fn dispatch(cli: Cli) -> anyhow::Result<i32> {
    let g = cli.global;
    match cli.command {
        Command::Run(a) => run::run(a, &g),
        Command::Runs(a) => runs::list(a, &g),
        Command::Show(a) => runs::show(a, &g),
        Command::Export(a) => runs::export(a, &g),
        Command::Import(a) => runs::import(a, &g),
        Command::Report(a) => report::report(a, &g),
        Command::Compare(a) => report::compare(a, &g),
        Command::Tco(a) => report::tco(a, &g),
        Command::Disclosure(a) => disclosure::run(a, &g),
        Command::Net(a) => net::run(a, &g),
        Command::Oltp(a) => oltp::run(a, &g),
        Command::Hosts(a) => hosts::run(a, &g),
        Command::Agent(a) => hosts::agent(a),
    }
}
