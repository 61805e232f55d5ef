//! Command lines run to their end on this host: a variant's setup and teardown, the
//! probes that read the host (ethtool, dmidecode, ipmitool, a power meter), and the
//! programs that make a launched database's files (initdb, mariadb-install-db).
//!
//! Each runs in a process group of its own that the launch machinery ([`crate::launch`])
//! knows of, so that none outlives rackbench however it ends: its timeout; a stop request,
//! for a setup; a second Ctrl-C or the agent's exit ([`launch::kill_all_children`]);
//! rackbench killed outright (the reaper, and for setup and teardown the parent-death
//! signal too, as for a launched server); rackbench and its reaper killed together (the
//! next command's [`crate::scratch::sweep`]). When a command exits, what it left running
//! in its group (a job it put in the background) is killed with it: nothing it started
//! stays unknown to rackbench.
//!
//! The wait is one `poll` loop over the command's two output pipes and a pidfd that
//! becomes readable when it exits: no thread per command, and no latency added to a
//! probe that ends in a millisecond.

use std::fs::File;
use std::io::Read as _;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::launch::{self, ChildGuard};

/// How a command is run: what starting it may cost, and what ends it besides its timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A probe of a second or so (ethtool, dmidecode), possibly run while a test
    /// measures (ipmitool and a power meter, every sample): started without copying
    /// rackbench's memory (see [`ChildGuard`]'s `start_probe`), known to the reaper and to
    /// [`launch::kill_all_children`] from its start, and recorded for the sweep only once
    /// it has run for [`RECORD_AFTER`]. A stop request does not end it.
    Probe,
    /// A command of the host's own, up to minutes (a variant's setup or teardown):
    /// started as a launched server is ([`ChildGuard::spawn`]: the parent-death signal,
    /// the reaper, recorded for the sweep). `until_stop`: a stop request ([`crate::stop`])
    /// ends it at once (a setup; a teardown runs on, to put the host back).
    Lasting { until_stop: bool },
}

/// A probe still running after this is recorded for the sweep. Probes nearly all end
/// sooner and never touch the disk for it (a record is a file written and removed); one
/// that hangs (an ipmitool waiting on its BMC) is recorded.
pub const RECORD_AFTER: Duration = Duration::from_millis(200);

/// How often a wait that a stop request ends looks at the flag (the runner's own loops
/// look every 50 ms too).
const STOP_POLL: Duration = Duration::from_millis(50);

/// Output kept of each of stdout and stderr: a command printing without end (`yes`)
/// cannot fill rackbench's memory before its timeout. Callers keep far less.
const OUTPUT_MAX: usize = 4 << 20;

/// [`run`] a probe.
pub fn probe(cmd: &str, timeout: Duration) -> Result<String, String> {
    run(cmd, timeout, Kind::Probe)
}

/// A command that did not succeed: what [`run`] says of it, and its exit status when it
/// exited with one (not when it timed out, was stopped, could not start or died of a
/// signal).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failed {
    pub message: String,
    pub exit_code: Option<i32>,
}

impl From<String> for Failed {
    fn from(message: String) -> Self {
        Failed {
            message,
            exit_code: None,
        }
    }
}

/// [`probe`], telling an exit status apart from the other failures.
pub fn probe_status(cmd: &str, timeout: Duration) -> Result<String, Failed> {
    run_status(cmd, timeout, Kind::Probe)
}

/// Run `cmd` (through `sh -c` when it needs a shell), killed with its process group after
/// `timeout`. Its stdout on exit status 0; otherwise an error with the first line of its
/// stderr, or saying it timed out or was stopped.
pub fn run(cmd: &str, timeout: Duration, kind: Kind) -> Result<String, String> {
    run_status(cmd, timeout, kind).map_err(|f| f.message)
}

/// A command run to its end with everything it printed: for a setup or teardown, whose
/// failure is shown and disclosed whole (its stdout too, where a script says what went
/// wrong), not only the first line of its stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ran {
    /// None: it exited with status 0. Otherwise how it ended, without the command
    /// (`exit status: 1`, `did not answer within 120s`).
    pub failure: Option<String>,
    pub stdout: String,
    pub stderr: String,
}

/// How a command run to its end went: it could not start (why), or it ended (how, its
/// exit status when it has one, and both outputs). [`run_captured`] and [`run_status`]
/// each say it their way.
enum Outcome {
    NotStarted(std::io::Error),
    Done(Done),
}

/// A command that ran: how it ended, its exit status when it has one, its outputs.
struct Done {
    ended: Ended,
    status: Option<std::process::ExitStatus>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// Start `command` (a probe or a lasting command, see [`Kind`]; `name` in what is said of
/// it) and wait for its end, its deadline or (a setup) a stop; its group ended either way.
fn execute(name: &str, command: &mut Command, timeout: Duration, kind: Kind) -> Outcome {
    let started = match kind {
        Kind::Probe => ChildGuard::start_probe(name, command),
        Kind::Lasting { .. } => ChildGuard::start(name, command),
    };
    let mut guard = match started {
        Ok(g) => g,
        Err(e) => return Outcome::NotStarted(e),
    };
    let (ended, [stdout, stderr]) = wait(&mut guard, Instant::now() + timeout, kind);
    let status = guard.end(Duration::ZERO);
    Outcome::Done(Done {
        ended,
        status,
        stdout,
        stderr,
    })
}

/// What to do about a program that is not there.
const NOT_FOUND: &str = "command not found: install it, or fix the path";

/// A setup's stop already asked for: the command is not started.
fn stop_before_start(kind: Kind) -> bool {
    kind == (Kind::Lasting { until_stop: true }) && crate::stop::stop_requested()
}

/// Run `cmd` as [`run`] does, keeping both of its outputs whatever the outcome.
pub fn run_captured(cmd: &str, timeout: Duration, kind: Kind) -> Ran {
    run_captured_command(cmd, &mut shell_command(cmd), timeout, kind)
}

/// [`run_captured`] for a command the caller made (a program run as another user or with
/// its own environment: a throwaway database's initdb), `name` standing for it. Its
/// stdin is null and its outputs piped, whatever `command` said of them.
pub fn run_captured_command(
    name: &str,
    command: &mut Command,
    timeout: Duration,
    kind: Kind,
) -> Ran {
    let ran = |failure: String| Ran {
        failure: Some(failure),
        stdout: String::new(),
        stderr: String::new(),
    };
    if stop_before_start(kind) {
        return ran(format!("ended by {}", crate::stop::stop_cause()));
    }
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let d = match execute(name, command, timeout, kind) {
        Outcome::NotStarted(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return ran(NOT_FOUND.into())
        }
        Outcome::NotStarted(e) => return ran(format!("could not start: {e}")),
        Outcome::Done(d) => d,
    };
    let failure = match (d.ended, d.status) {
        (Ended::TimedOut, _) => Some(format!("did not answer within {timeout:?}")),
        (Ended::Stopped, _) => Some(format!("ended by {}", crate::stop::stop_cause())),
        (Ended::Exited, Some(s)) if s.success() => None,
        (Ended::Exited, Some(s)) if s.code() == Some(127) => Some(format!("{s} ({NOT_FOUND})")),
        (Ended::Exited, Some(s)) => Some(s.to_string()),
        (Ended::Exited, None) => Some("how it ended cannot be learnt".into()),
    };
    Ran {
        failure,
        stdout: String::from_utf8_lossy(&d.stdout).into(),
        stderr: String::from_utf8_lossy(&d.stderr).into(),
    }
}

/// `cmd` started directly when it is plain words, else through `sh -c`; its output piped.
fn shell_command(cmd: &str) -> Command {
    // A command of plain words is started directly: a shell for each of the disclosure's
    // ethtool and dmidecode calls doubled what every run spends before it measures.
    let mut command = match plain_words(cmd) {
        Some(w) if !w.is_empty() => {
            let mut c = Command::new(&w[0]);
            c.args(&w[1..]);
            c
        }
        _ => {
            let mut c = Command::new("sh");
            c.arg("-c").arg(cmd);
            c
        }
    };
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// [`run`], its failure with the exit status apart.
pub fn run_status(cmd: &str, timeout: Duration, kind: Kind) -> Result<String, Failed> {
    if stop_before_start(kind) {
        return Err(stopped(cmd).into());
    }
    let d = match execute(cmd, &mut shell_command(cmd), timeout, kind) {
        Outcome::NotStarted(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("`{cmd}` failed ({NOT_FOUND})").into())
        }
        Outcome::NotStarted(e) => return Err(format!("could not start `{cmd}`: {e}").into()),
        Outcome::Done(d) => d,
    };
    match (d.ended, d.status) {
        (Ended::TimedOut, _) => Err(format!("`{cmd}` did not answer within {timeout:?}").into()),
        (Ended::Stopped, _) => Err(stopped(cmd).into()),
        (Ended::Exited, Some(s)) if s.success() => Ok(String::from_utf8_lossy(&d.stdout).into()),
        (Ended::Exited, Some(s)) => {
            let err = String::from_utf8_lossy(&d.stderr);
            let first = err.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            let hint = if s.code() == Some(127) {
                format!(" ({NOT_FOUND})")
            } else {
                String::new()
            };
            Err(Failed {
                message: format!("`{cmd}` failed ({s}){hint}: {first}"),
                exit_code: s.code(),
            })
        }
        (Ended::Exited, None) => Err(format!("`{cmd}`: how it ended cannot be learnt").into()),
    }
}

fn stopped(cmd: &str) -> String {
    format!("`{cmd}` was ended by {}", crate::stop::stop_cause())
}

/// Why [`wait`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    Exited,
    TimedOut,
    Stopped,
}

/// Read the child's stdout and stderr until it exits, `deadline` passes or (a setup) a
/// stop is requested. On exit its group is killed and what its output pipes still hold
/// is read. The child is left unreaped, for the guard to end.
fn wait(guard: &mut ChildGuard, deadline: Instant, kind: Kind) -> (Ended, [Vec<u8>; 2]) {
    let pid = guard.pid();
    let mut bufs = [Vec::new(), Vec::new()];
    let Some(child) = guard.child_mut() else {
        return (Ended::Exited, bufs);
    };
    let mut pipes: [Option<File>; 2] = [
        child.stdout.take().map(|p| File::from(OwnedFd::from(p))),
        child.stderr.take().map(|p| File::from(OwnedFd::from(p))),
    ];
    let exit_fd = pidfd(pid);
    let until_stop = kind == Kind::Lasting { until_stop: true };
    let mut record_at = (kind == Kind::Probe).then(|| Instant::now() + RECORD_AFTER);
    loop {
        if until_stop && crate::stop::stop_requested() {
            return (Ended::Stopped, bufs);
        }
        let now = Instant::now();
        if now >= deadline {
            return (Ended::TimedOut, bufs);
        }
        if record_at.is_some_and(|t| now >= t) {
            crate::scratch::record_group(pid);
            record_at = None;
        }
        let mut wake = deadline;
        if until_stop {
            wake = wake.min(now + STOP_POLL);
        }
        if let Some(t) = record_at {
            wake = wake.min(t);
        }
        if exit_fd.is_none() {
            // No pidfd (kernels before 5.3): the exit is looked for; soon after the
            // pipes close, as a command's exit closes them.
            let open = pipes.iter().any(Option::is_some);
            wake = wake.min(now + Duration::from_millis(if open { 10 } else { 1 }));
        }
        let ms = wake
            .saturating_duration_since(now)
            .as_micros()
            .div_ceil(1000);
        let ready = poll(&pipes, exit_fd.as_ref(), ms.min(i32::MAX as u128) as i32);
        read_ready(&mut pipes, &mut bufs, ready);
        let exited = match exit_fd {
            Some(_) => ready[2],
            // An error (no such child) is an end too: nothing is left to wait for.
            None => !matches!(launch::peek_exit(pid), Ok(None)),
        };
        if exited {
            // SAFETY: kill(2) on the group our exited but unreaped child leads (its id
            // stays taken until the guard reaps it).
            unsafe { libc::kill(-(pid as i32), libc::SIGKILL) };
            // What the command wrote before it exited is in the pipes by now.
            while pipes.iter().any(Option::is_some) && Instant::now() < deadline {
                let ready = poll(&pipes, None, 0);
                if !ready[0] && !ready[1] {
                    break;
                }
                read_ready(&mut pipes, &mut bufs, ready);
            }
            return (Ended::Exited, bufs);
        }
    }
}

/// A pidfd for child `pid` (readable once it exits), where the kernel has them (5.3+).
fn pidfd(pid: u32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor (close-on-exec)
    // or -1; the pid is our own unreaped child's, so it names no other process.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    // SAFETY: a descriptor just returned to us, owned by nothing else.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Wait up to `timeout_ms` for output on the open pipes or for the exit; which of
/// (stdout, stderr, exit) are ready. Nothing is ready after an interrupted poll.
fn poll(pipes: &[Option<File>; 2], exit: Option<&OwnedFd>, timeout_ms: i32) -> [bool; 3] {
    let mut fds = [libc::pollfd {
        fd: -1,
        events: libc::POLLIN,
        revents: 0,
    }; 3];
    for (slot, p) in fds.iter_mut().zip(pipes) {
        if let Some(p) = p {
            slot.fd = p.as_raw_fd();
        }
    }
    if let Some(e) = exit {
        fds[2].fd = e.as_raw_fd();
    }
    // SAFETY: three valid pollfd entries; poll ignores those whose fd is negative.
    if unsafe { libc::poll(fds.as_mut_ptr(), 3, timeout_ms) } <= 0 {
        return [false; 3];
    }
    fds.map(|f| f.fd >= 0 && f.revents != 0)
}

/// Read once from each pipe `ready` marks; a pipe at its end (or failing) is closed.
fn read_ready(pipes: &mut [Option<File>; 2], bufs: &mut [Vec<u8>; 2], ready: [bool; 3]) {
    let mut chunk = [0u8; 16 * 1024];
    for i in 0..2 {
        let Some(p) = pipes[i].as_mut().filter(|_| ready[i]) else {
            continue;
        };
        match p.read(&mut chunk) {
            Ok(0) => pipes[i] = None,
            Ok(n) => {
                let room = OUTPUT_MAX.saturating_sub(bufs[i].len());
                bufs[i].extend_from_slice(&chunk[..n.min(room)]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => pipes[i] = None,
        }
    }
}

/// The words of `cmd` when it needs no shell: words of letters, digits and `-_./:=,+@%`,
/// or single-quoted; None when it has anything a shell would interpret (operators,
/// redirections, expansions, double quotes, backslashes).
fn plain_words(cmd: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut cur: Option<String> = None;
    let mut chars = cmd.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if let Some(w) = cur.take() {
                    words.push(w);
                }
            }
            '\'' => {
                let w = cur.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        q => w.push(q),
                    }
                }
            }
            c if c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c) => {
                cur.get_or_insert_with(String::new).push(c);
            }
            _ => return None,
        }
    }
    words.extend(cur);
    Some(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_timeout_kills() {
        for kind in [Kind::Probe, Kind::Lasting { until_stop: false }] {
            let t0 = Instant::now();
            let r = run("sleep 5", Duration::from_millis(200), kind);
            assert!(r.unwrap_err().contains("did not answer"));
            assert!(t0.elapsed() < Duration::from_secs(3));
        }
    }

    #[test]
    fn plain_commands_need_no_shell() {
        assert_eq!(
            plain_words("ethtool -k 'eth0'"),
            Some(vec!["ethtool".into(), "-k".into(), "eth0".into()])
        );
        assert_eq!(
            plain_words("ipmitool -I lanplus 'a b'"),
            Some(vec![
                "ipmitool".into(),
                "-I".into(),
                "lanplus".into(),
                "a b".into()
            ])
        );
        for shell in [
            "a || true",
            "echo $HOME",
            "cat < x",
            "a; b",
            "echo \"x\"",
            "'open",
        ] {
            assert_eq!(plain_words(shell), None, "{shell}");
        }
        // Both ways give the same output.
        assert_eq!(
            probe("echo 'a  b'", Duration::from_secs(5)).unwrap(),
            "a  b\n"
        );
        assert_eq!(
            probe("echo a | cat", Duration::from_secs(5)).unwrap(),
            "a\n"
        );
    }

    #[test]
    fn command_not_found_says_so() {
        let r = probe("definitely-not-a-command-xyz", Duration::from_secs(5));
        assert!(r.unwrap_err().contains("command not found"));
        // Through the shell (the double quotes), which exits 127.
        let r = probe("definitely-not-a-command-xyz \"x\"", Duration::from_secs(5));
        assert!(r.unwrap_err().contains("command not found"));
    }

    /// Output larger than a pipe's buffer, on both streams, is read whole while the
    /// command runs; a failure's first stderr line and its status are reported.
    #[test]
    fn output_is_read_whole_and_failures_say_why() {
        let big = probe(
            "head -c 300000 /dev/zero | tr '\\0' x; head -c 300000 /dev/zero >&2",
            Duration::from_secs(10),
        )
        .unwrap();
        assert_eq!(big.len(), 300_000);
        let e = run(
            "echo; echo 'no such knob' >&2; exit 3",
            Duration::from_secs(5),
            Kind::Lasting { until_stop: true },
        )
        .unwrap_err();
        assert_eq!(
            e,
            "`echo; echo 'no such knob' >&2; exit 3` failed (exit status: 3): no such knob"
        );
        let t = Duration::from_secs(5);
        assert_eq!(probe_status("false", t).unwrap_err().exit_code, Some(1));
        assert_eq!(
            probe_status("true; exit 3", t).unwrap_err().exit_code,
            Some(3)
        );
        let killed = probe_status("kill -9 $$", t).unwrap_err();
        assert_eq!(killed.exit_code, None, "{}", killed.message);
        let late = probe_status("sleep 5", Duration::from_millis(50)).unwrap_err();
        assert_eq!(late.exit_code, None, "{}", late.message);
    }

    /// A job a command leaves in the background is killed when the command exits, also
    /// when it holds the command's output open (the wait does not last its lifetime).
    #[test]
    fn what_a_command_leaves_behind_is_killed_when_it_exits() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("bg.pid");
        let t0 = Instant::now();
        let out = run(
            &format!("sleep 60 & echo $! > {}; echo done", pidfile.display()),
            Duration::from_secs(30),
            Kind::Lasting { until_stop: false },
        )
        .unwrap();
        assert_eq!(out, "done\n");
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
        let bg: u32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let gone = || {
            std::fs::read_to_string(format!("/proc/{bg}/stat")).map_or(true, |s| s.contains(") Z "))
        };
        let t0 = Instant::now();
        while !gone() && t0.elapsed() < Duration::from_secs(3) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(gone(), "the background sleep {bg} outlived its command");
    }
}
