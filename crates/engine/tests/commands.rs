//! Commands run to their end (engine::command) leave nothing running: not when the
//! process that runs them is SIGKILLed, not when it kills every child on its way out (a
//! second Ctrl-C, the agent's exits), and a setup's command ends at a stop request.
//!
//! Each command is a real `sleep` whose argument is a number no other process has, found
//! again through /proc. A process to be killed is this test binary run again with
//! `HOLD_COMMAND` set: it runs one command and waits for it.

use std::process::Command;
use std::time::{Duration, Instant};

use engine::command::{self, Kind};
use engine::testing::{kill_left, marker, running, wait_until};
use rackbench_engine as engine;

/// Tests of this file that run commands in this process, one at a time: a stop request
/// and `kill_all_children` reach every command of the process.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Kill what a failed test left (so that a failure leaves no four-day sleep behind), then
/// check nothing was left.
fn assert_none_running(marker: &str, why: &str) {
    let left = kill_left(marker);
    assert!(
        left.is_empty(),
        "{why}: sleep {marker} still runs as {left:?}"
    );
}

/// In the process run again by [`killed_while_running`]: run the command it names, as
/// `HOLD_KIND` says, and wait for it.
fn hold_if_asked() -> bool {
    let Ok(cmd) = std::env::var("HOLD_COMMAND") else {
        return false;
    };
    let kind = match std::env::var("HOLD_KIND").as_deref() {
        Ok("probe") => Kind::Probe,
        _ => Kind::Lasting { until_stop: false },
    };
    let _ = command::run(&cmd, Duration::from_secs(600), kind);
    true
}

/// Run `sleep MARKER` (wrapped in a shell with a child of its own when `shell`) as `kind`
/// in a process of its own, SIGKILL that process once the sleep runs, and check the
/// command is gone soon after.
fn killed_while_running(test: &str, kind: &str, shell: bool) {
    let m = marker();
    let cmd = if shell {
        format!("sleep {m} & sleep {m}; wait")
    } else {
        format!("sleep {m}")
    };
    let mut holder = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--test-threads=1"])
        .env("HOLD_COMMAND", &cmd)
        .env("HOLD_KIND", kind)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let want = if shell { 2 } else { 1 };
    wait_until("the command starts", Duration::from_secs(10), || {
        running(&m).len() >= want
    });
    // A probe is registered by its runner microseconds after it shows in /proc (see
    // engine::command::Kind::Probe): the kill comes after that.
    std::thread::sleep(Duration::from_millis(100));
    holder.kill().unwrap();
    holder.wait().unwrap();
    let t0 = Instant::now();
    while !running(&m).is_empty() && t0.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_none_running(&m, &format!("its runner was SIGKILLed ({kind})"));
}

/// A probe (a power meter's command, ipmitool) dies with a rackbench killed outright:
/// its reaper kills the probe's group.
#[test]
fn a_probe_dies_with_a_killed_process() {
    if hold_if_asked() {
        return;
    }
    killed_while_running("a_probe_dies_with_a_killed_process", "probe", false);
}

/// A lasting command (a variant's setup) dies with a rackbench killed outright, and so
/// does what it started in its group.
#[test]
fn a_lasting_command_and_its_children_die_with_a_killed_process() {
    if hold_if_asked() {
        return;
    }
    killed_while_running(
        "a_lasting_command_and_its_children_die_with_a_killed_process",
        "lasting",
        true,
    );
}

/// What the second Ctrl-C and the agent's exits do (kill every child) ends commands
/// under way too, probes and lasting ones, and their waits return.
#[test]
fn killing_every_child_ends_the_commands_under_way() {
    let _serial = serial();
    let m = marker();
    let waits: Vec<_> = [Kind::Probe, Kind::Lasting { until_stop: false }]
        .into_iter()
        .map(|kind| {
            let cmd = format!("sleep {m}");
            std::thread::spawn(move || command::run(&cmd, Duration::from_secs(30), kind))
        })
        .collect();
    wait_until("both commands start", Duration::from_secs(10), || {
        running(&m).len() == 2
    });
    // A command shows in /proc a moment before its spawn returns and registers it (a
    // window of microseconds, accepted): the kill is repeated until both waits return.
    let t0 = Instant::now();
    while !waits.iter().all(|w| w.is_finished()) && t0.elapsed() < Duration::from_secs(2) {
        engine::launch::kill_all_children();
        std::thread::sleep(Duration::from_millis(20));
    }
    for w in waits {
        let e = w.join().unwrap().unwrap_err();
        assert!(e.contains("signal: 9"), "{e}");
    }
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    assert_none_running(&m, "every child was killed");
}

/// A stop request ends a setup's command at once; a teardown's command still runs to its
/// end after it, and a setup's command asked for after it is not started.
#[test]
fn a_stop_request_ends_a_setup_command_and_not_a_teardown() {
    let _serial = serial();
    let m = marker();
    let cmd = format!("sleep {m}");
    let setup = std::thread::spawn(move || {
        command::run(
            &cmd,
            Duration::from_secs(600),
            Kind::Lasting { until_stop: true },
        )
    });
    wait_until("the setup command starts", Duration::from_secs(10), || {
        running(&m).len() == 1
    });
    let t0 = Instant::now();
    engine::stop::request_stop();
    let e = setup.join().unwrap().unwrap_err();
    let took = t0.elapsed();
    let teardown = command::run(
        "sleep 0.2; echo restored",
        Duration::from_secs(10),
        Kind::Lasting { until_stop: false },
    );
    let late = command::run(
        "echo set",
        Duration::from_secs(10),
        Kind::Lasting { until_stop: true },
    );
    engine::stop::reset();
    assert!(e.contains("was ended by a stop request"), "{e}");
    assert!(took < Duration::from_millis(500), "{took:?}");
    assert_none_running(&m, "the stop ended it");
    assert_eq!(teardown.as_deref(), Ok("restored\n"));
    assert!(late.unwrap_err().contains("was ended by"));
}
