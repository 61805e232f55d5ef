//! A variant's setup and teardown commands, run by a host, leave nothing running: not
//! when rackbench (or the agent) running them is SIGKILLed, not when an agent's
//! controller goes away, and a setup's command ends when the controller's Ctrl-C reaches
//! the agent, which still answers.
//!
//! Each command is a real `sleep` whose argument is a number no other process has, found
//! again through /proc. The process to kill, or the agent, is this test binary run again
//! with `HOLD` set.

use std::io::{BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use engine::host::{CommandRun, CommandsFor, Host};
use engine::testing::{kill_left, marker, running, wait_until};
use rackbench_hosts::proto::{read_frame, skip_to_magic, write_frame, Envelope, Hello, Request};
use rackbench_hosts::{agent, LocalHost};

/// Wait up to 3 s for the marker's processes to go; kill what is left (a failure leaves
/// no four-day sleep behind) and check nothing was.
fn assert_gone_soon(marker: &str, why: &str) {
    let t0 = Instant::now();
    while !running(marker).is_empty() && t0.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let left = kill_left(marker);
    assert!(
        left.is_empty(),
        "{why}: sleep {marker} still runs as {left:?}"
    );
}

/// In the process run again by a test: what `HOLD` says (run a setup command and wait
/// for it, or be an agent on stdin and stdout). False in the test itself.
fn hold_if_asked() -> bool {
    match std::env::var("HOLD").as_deref() {
        Ok("setup") => {
            let cmd = std::env::var("HOLD_COMMAND").unwrap();
            let host = LocalHost::new("local", |_| None, false);
            let _ = host.run_commands(&[cmd], CommandsFor::Setup);
            true
        }
        Ok("agent") => {
            agent::serve(
                "test-agent",
                |_| None,
                Default::default(),
                Duration::from_secs(60),
            )
            .unwrap();
            true
        }
        _ => false,
    }
}

/// This test binary run again as `hold`, for test `test`.
fn holder(test: &str, hold: &str) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(["--exact", test, "--test-threads=1"])
        .env("HOLD", hold)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    c
}

/// rackbench killed outright (kill -9) during a variant's setup: the setup command, and
/// what it started, go with it.
#[test]
fn a_setup_command_dies_with_a_killed_rackbench() {
    if hold_if_asked() {
        return;
    }
    let m = marker();
    let mut child = holder("a_setup_command_dies_with_a_killed_rackbench", "setup")
        .env("HOLD_COMMAND", format!("sleep {m} & sleep {m}; wait"))
        .spawn()
        .unwrap();
    wait_until("the setup command starts", Duration::from_secs(10), || {
        running(&m).len() == 2
    });
    child.kill().unwrap();
    child.wait().unwrap();
    assert_gone_soon(&m, "rackbench was SIGKILLed");
}

/// An agent: its stdin to send requests, its replies after the hello.
struct Agent {
    child: Child,
    to: Option<std::process::ChildStdin>,
    from: BufReader<std::process::ChildStdout>,
}

impl Agent {
    fn start(test: &str) -> Agent {
        // Its stderr (where the agent puts its stdout) carries only the test harness's
        // lines about the test it runs as.
        let mut child = holder(test, "agent")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let to = child.stdin.take();
        let mut from = BufReader::new(child.stdout.take().unwrap());
        skip_to_magic(&mut from, 1 << 20).unwrap();
        let _: Hello = read_frame(&mut from).unwrap().unwrap();
        Agent { child, to, from }
    }

    fn send(&mut self, id: u64, r: Request) {
        let to = self.to.as_mut().unwrap();
        write_frame(to, &Envelope::request(id, r)).unwrap();
        to.flush().unwrap();
    }

    /// The next reply with this id (others skipped).
    fn reply(&mut self, id: u64) -> Envelope {
        loop {
            let e: Envelope = read_frame(&mut self.from)
                .unwrap()
                .expect("the agent ended");
            if e.id == id && e.request.is_none() {
                return e;
            }
        }
    }

    /// Close its stdin (the controller gone) and wait for it to exit.
    fn end(mut self) {
        drop(self.to.take());
        let t0 = Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            if t0.elapsed() > Duration::from_secs(10) {
                let _ = self.child.kill();
                panic!("the agent did not exit when its controller went");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// The controller goes (ssh gone, rackbench killed) while the agent runs a teardown
/// command (which a stop does not end): the agent's way out kills it.
#[test]
fn an_agent_whose_controller_goes_leaves_no_command_running() {
    if hold_if_asked() {
        return;
    }
    let m = marker();
    let mut a = Agent::start("an_agent_whose_controller_goes_leaves_no_command_running");
    a.send(
        1,
        Request::RunCommands {
            commands: vec![format!("sleep {m}")],
            purpose: CommandsFor::Teardown,
        },
    );
    wait_until(
        "the teardown command starts",
        Duration::from_secs(10),
        || running(&m).len() == 1,
    );
    a.end();
    assert_gone_soon(&m, "the agent's controller went");
}

/// The controller's Ctrl-C reaches the agent (an interrupt) during a setup command: the
/// command ends at once and the agent answers with the setup's outcome.
#[test]
fn an_interrupted_agent_ends_its_setup_command_and_answers() {
    if hold_if_asked() {
        return;
    }
    let m = marker();
    let mut a = Agent::start("an_interrupted_agent_ends_its_setup_command_and_answers");
    a.send(
        1,
        Request::RunCommands {
            commands: vec![format!("sleep {m}"), format!("sleep {m}")],
            purpose: CommandsFor::Setup,
        },
    );
    wait_until("the setup command starts", Duration::from_secs(10), || {
        running(&m).len() == 1
    });
    let t0 = Instant::now();
    a.send(2, Request::Interrupt);
    let reply = a.reply(1);
    let took = t0.elapsed();
    let runs: Vec<CommandRun> = serde_json::from_value(reply.ok.expect("an answer")).unwrap();
    assert_gone_soon(&m, "the setup was interrupted");
    assert!(took < Duration::from_secs(1), "{took:?}");
    // The first ended by the stop, the second never started.
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert!(!runs[0].ok);
    assert!(
        runs[0].output.contains("ended by a stop request"),
        "{runs:?}"
    );
    a.end();
}
