//! Servers rackbench launches itself: find the binary (or say how to install it), pick a
//! free port, pin to CPUs, wait until ready, and make sure every process is gone when the
//! run ends, fails, or is interrupted (guards kill on drop; a process-wide list lets the
//! Ctrl-C path kill what is still running).

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

/// PIDs of every child still running, for the Ctrl-C path.
static LIVE: Mutex<Vec<u32>> = Mutex::new(Vec::new());

type LaunchReply = std::sync::mpsc::Sender<(Command, std::io::Result<Child>)>;

/// The thread that forks every launched server (its parent-death signal is tied to it).
static LAUNCHER: std::sync::OnceLock<Mutex<std::sync::mpsc::Sender<(Command, LaunchReply)>>> =
    std::sync::OnceLock::new();

/// The write end of the reaper's pipe (see [`start_reaper`]); -1 when there is none.
static REAPER: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

/// Most process groups the reaper keeps at once (launched servers alive together).
const REAPER_GROUPS: usize = 1024;

/// Fork the reaper: a process that holds the read end of a pipe only rackbench writes to,
/// and learns from it the process group of every server launched (a positive number) or
/// stopped (negative). When the pipe reaches end-of-file, rackbench has exited however it
/// ended (kill -9 included: the kernel closes its descriptors), and the reaper SIGKILLs
/// every group still registered. The parent-death signal alone kills only the process
/// rackbench forked, and some servers fork workers that outlive their master (nginx).
///
/// The child runs only async-signal-safe calls (read, kill, setpgid, _exit) on a stack
/// array, as a child forked from a threaded process must. Best effort: without a reaper
/// (fork failed) servers still get the parent-death signal.
fn start_reaper() {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 fills `fds`; close-on-exec keeps the write end out of launched servers,
    // which would otherwise hold the pipe open after rackbench is gone.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return;
    }
    let [rd, wr] = fds;
    // SAFETY: the child below only calls async-signal-safe functions and never returns.
    match unsafe { libc::fork() } {
        -1 => unsafe {
            libc::close(rd);
            libc::close(wr);
        },
        0 => unsafe {
            // Out of the terminal's process group: Ctrl-C is for rackbench to handle.
            libc::setpgid(0, 0);
            // Keep only the pipe (as fd 0): no copy of rackbench's sockets, files or
            // output pipes, and no write end of our own pipe.
            let rd = if libc::dup2(rd, 0) == 0 { 0 } else { rd };
            if rd == 0 {
                libc::syscall(libc::SYS_close_range, 1u32, u32::MAX, 0u32);
            } else {
                libc::close(wr);
            }
            let mut groups = [0 as libc::pid_t; REAPER_GROUPS];
            let mut n = 0;
            let mut msg = [0u8; 4];
            loop {
                let r = libc::read(rd, msg.as_mut_ptr().cast(), msg.len());
                if r == msg.len() as isize {
                    let g = i32::from_ne_bytes(msg);
                    if g > 0 && n < REAPER_GROUPS {
                        groups[n] = g;
                        n += 1;
                    } else if g < 0 {
                        if let Some(i) = groups[..n].iter().position(|&x| x == -g) {
                            groups[i] = groups[n - 1];
                            n -= 1;
                        }
                    }
                } else if r == 0 {
                    for &g in &groups[..n] {
                        libc::kill(-g, libc::SIGKILL);
                    }
                    libc::_exit(0);
                } else if r < 0 && *libc::__errno_location() != libc::EINTR {
                    libc::_exit(1);
                }
            }
        },
        _ => {
            // SAFETY: closing our copy of the read end; the reaper has its own.
            unsafe { libc::close(rd) };
            REAPER.store(wr, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// Tell the reaper about a process group: `pgid` to kill if rackbench dies, `-pgid` when
/// that group is stopped (so that a reused id is never killed).
fn tell_reaper(pgid: i32) {
    let fd = REAPER.load(std::sync::atomic::Ordering::Relaxed);
    if fd >= 0 {
        let msg = pgid.to_ne_bytes();
        // SAFETY: a 4-byte write to a pipe is atomic (below PIPE_BUF).
        unsafe { libc::write(fd, msg.as_ptr().cast(), msg.len()) };
    }
}

/// Spawn `cmd` on the launcher thread, a thread that never ends, so that a child's
/// parent-death signal fires when rackbench dies and not when the (test or worker)
/// thread that asked for it finishes. `cmd` is handed back unchanged.
fn spawn_from_launcher(cmd: &mut Command) -> std::io::Result<Child> {
    let tx = LAUNCHER.get_or_init(|| {
        start_reaper();
        let (tx, rx) = std::sync::mpsc::channel::<(Command, LaunchReply)>();
        std::thread::Builder::new()
            .name("rackbench-launcher".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let child = cmd.spawn();
                    let _ = reply.send((cmd, child));
                }
            })
            .expect("cannot start the launcher thread");
        Mutex::new(tx)
    });
    let (reply_tx, reply_rx) = std::sync::mpsc::channel();
    let taken = std::mem::replace(cmd, Command::new(""));
    let sent = tx
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send((taken, reply_tx));
    if let Err(std::sync::mpsc::SendError((back, _))) = sent {
        *cmd = back;
        return Err(std::io::Error::other("the launcher thread is gone"));
    }
    let (back, child) = reply_rx
        .recv()
        .map_err(|_| std::io::Error::other("the launcher thread is gone"))?;
    *cmd = back;
    child
}

/// Find `name` on PATH. The error names the Debian package that provides it.
pub fn find_binary(name: &str, debian_package: &str) -> anyhow::Result<PathBuf> {
    if name.contains('/') {
        let p = PathBuf::from(name);
        if is_executable(&p) {
            return Ok(p);
        }
        bail!("`{name}` is not an executable file");
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(name);
            if is_executable(&p) {
                return Ok(p);
            }
        }
    }
    bail!(
        "`{name}` was not found on PATH. Install it (Debian/Ubuntu: `apt-get install {debian_package}`), \
         or point rackbench at existing servers with --target"
    )
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// A free TCP port on 127.0.0.1 (bound then released; a race with another process is
/// possible and shows up as a launch failure that names the port).
pub fn free_port() -> anyhow::Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0").context("binding 127.0.0.1:0 to find a free port")?;
    Ok(l.local_addr()?.port())
}

/// Number of CPUs this process may run on.
pub fn online_cpus() -> usize {
    allowed_cpus().len().max(1)
}

/// The CPUs this process may run on (its affinity mask: `taskset`, cgroups), ascending.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: sched_getaffinity fills a plain cpu_set_t; CPU_ISSET reads within it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            return (0..n).collect();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// CPUs the system has online (sysconf), not the ones this process may use now: under
/// `taskset -c 1` the process may still pin its threads and children to CPU 0.
pub fn system_cpus() -> usize {
    // SAFETY: sysconf has no preconditions.
    match unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) } {
        n if n > 0 => n as usize,
        _ => online_cpus(),
    }
}

/// Check that every CPU in `cpus` exists on this host.
pub fn check_cpus(cpus: &[usize], what: &str) -> anyhow::Result<()> {
    let n = system_cpus();
    if let Some(bad) = cpus.iter().find(|&&c| c >= n) {
        bail!(
            "{what}: CPU {bad} is not available: it does not exist here (this host has CPUs 0-{} online)",
            n - 1
        );
    }
    Ok(())
}

/// A CPU list from plan values: numbers (`0,1` arrives as a list of numbers) and Linux
/// CPU-list strings (`0-3,8`), in order. Parsing only; see [`check_cpus`].
pub fn cpus_from_values(values: &[serde_json::Value], what: &str) -> anyhow::Result<Vec<usize>> {
    let mut out = Vec::new();
    for v in values {
        let s = match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out.extend(parse_cpu_list(&s).with_context(|| format!("{what}: `{s}` is not a CPU list"))?);
    }
    Ok(out)
}

/// Pin the calling thread to the given CPUs (Linux `sched_setaffinity`).
pub fn pin_current_thread(cpus: &[usize]) -> anyhow::Result<()> {
    if cpus.is_empty() {
        return Ok(());
    }
    // SAFETY: cpu_set_t is plain data; CPU_SET writes within it for cpu < CPU_SETSIZE.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            if c >= libc::CPU_SETSIZE as usize {
                bail!("CPU {c} is out of range");
            }
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            bail!(
                "cannot pin to CPUs {cpus:?}: {} (is the CPU online and allowed by the cgroup?)",
                std::io::Error::last_os_error()
            );
        }
    }
    Ok(())
}

/// Make `cmd` start pinned to `cpus` (applied in the child before exec).
pub fn pin_command(cmd: &mut Command, cpus: &[usize]) {
    if cpus.is_empty() {
        return;
    }
    let cpus = cpus.to_vec();
    // SAFETY: the closure only calls async-signal-safe functions (sched_setaffinity).
    unsafe {
        cmd.pre_exec(move || {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for &c in &cpus {
                if c < libc::CPU_SETSIZE as usize {
                    libc::CPU_SET(c, &mut set);
                }
            }
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// A child process that is killed (and reaped) when the guard is dropped.
pub struct ChildGuard {
    name: String,
    child: Option<Child>,
}

impl ChildGuard {
    /// Spawn `cmd` and guard it. The child gets its own process group so that a terminal
    /// Ctrl-C reaches rackbench first, which then tears it down in order.
    ///
    /// The child is also SIGKILLed by the kernel if rackbench dies without tearing it
    /// down (kill -9, out of memory): a server must not outlive the run that launched it.
    /// The kernel sends that signal when the *thread* that forked the child ends, not the
    /// process, so every child is forked by one launcher thread that lives as long as
    /// the process (see [`spawn_from_launcher`]). What the child forks into its group
    /// (nginx's workers) is killed by the reaper (see [`start_reaper`]).
    pub fn spawn(name: &str, cmd: &mut Command) -> anyhow::Result<ChildGuard> {
        cmd.process_group(0);
        let parent = std::process::id();
        // SAFETY: prctl and getppid are async-signal-safe.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // rackbench may have died between fork and prctl.
                if libc::getppid() as u32 != parent {
                    return Err(std::io::Error::other("rackbench exited"));
                }
                Ok(())
            });
        }
        let child = spawn_from_launcher(cmd)
            .with_context(|| format!("starting {name} ({:?})", cmd.get_program()))?;
        if let Ok(mut live) = LIVE.lock() {
            live.push(child.id());
        }
        tell_reaper(child.id() as i32);
        Ok(ChildGuard {
            name: name.to_string(),
            child: Some(child),
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// None while running; Some(description) once it has exited.
    pub fn exited(&mut self) -> Option<String> {
        match self.child.as_mut().map(Child::try_wait) {
            Some(Ok(Some(st))) => Some(format!("{} exited ({st})", self.name)),
            Some(Ok(None)) => None,
            Some(Err(e)) => Some(format!("{}: {e}", self.name)),
            None => Some(format!("{} was stopped", self.name)),
        }
    }

    /// SIGTERM, wait up to `grace`, then SIGKILL to its whole process group (workers
    /// it forked included); always reaps.
    pub fn stop(&mut self, grace: Duration) {
        if let Some(mut child) = self.child.take() {
            let pid = child.id();
            // SAFETY: plain kill(2) on our own child's pid.
            unsafe {
                libc::kill(pid as i32, libc::SIGTERM);
            }
            let deadline = Instant::now() + grace;
            loop {
                match child.try_wait() {
                    Ok(Some(_)) => break,
                    Ok(None) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(10))
                    }
                    _ => {
                        // SAFETY: kill(2) on the group our unreaped child leads.
                        unsafe {
                            libc::kill(-(pid as i32), libc::SIGKILL);
                        }
                        let _ = child.kill();
                        let _ = child.wait();
                        break;
                    }
                }
            }
            if let Ok(mut live) = LIVE.lock() {
                live.retain(|p| *p != pid);
            }
            tell_reaper(-(pid as i32));
        }
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(2));
    }
}

/// Kill every child still running (the Ctrl-C and panic path). Safe to call twice.
pub fn kill_all_children() {
    let pids: Vec<u32> = LIVE.lock().map(|l| l.clone()).unwrap_or_default();
    for pid in pids {
        // SAFETY: kill(2) on pids we spawned and the groups they lead; a reused pid is
        // not possible while unreaped.
        unsafe {
            libc::kill(-(pid as i32), libc::SIGKILL);
            libc::kill(pid as i32, libc::SIGKILL);
        }
    }
}

/// Wait until a TCP connect to `addr` succeeds, the child exits, or `timeout` passes.
pub fn wait_for_port(
    addr: SocketAddr,
    child: &mut ChildGuard,
    timeout: Duration,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        if let Some(why) = child.exited() {
            bail!("{why} before accepting connections on {addr}");
        }
        if Instant::now() >= deadline {
            bail!(
                "{} did not accept connections on {addr} within {timeout:?}",
                child.name()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Parse a CPU list as Linux writes them: `0-3,8,10-11`.
pub fn parse_cpu_list(s: &str) -> anyhow::Result<Vec<usize>> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let a: usize = a.parse().with_context(|| format!("bad CPU list `{s}`"))?;
                let b: usize = b.parse().with_context(|| format!("bad CPU list `{s}`"))?;
                if b < a {
                    bail!("bad CPU list `{s}`: {b} < {a}");
                }
                out.extend(a..=b);
            }
            None => out.push(
                part.parse()
                    .with_context(|| format!("bad CPU list `{s}`"))?,
            ),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-3,8").unwrap(), vec![0, 1, 2, 3, 8]);
        assert_eq!(parse_cpu_list("1").unwrap(), vec![1]);
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("a").is_err());
    }

    #[test]
    fn missing_binary_says_how_to_install() {
        let e = find_binary("surely-not-a-real-binary-xyz", "pkg-xyz").unwrap_err();
        assert!(e.to_string().contains("apt-get install pkg-xyz"));
    }

    #[test]
    fn guard_kills_child_on_drop() {
        let g = ChildGuard::spawn("sleep", Command::new("sleep").arg("30")).unwrap();
        let pid = g.pid();
        drop(g);
        // SAFETY: probing with signal 0.
        let alive = unsafe { libc::kill(pid as i32, 0) } == 0;
        assert!(!alive, "child {pid} still alive after drop");
    }

    #[test]
    fn stop_takes_down_what_the_child_forked() {
        // A "master" that ignores SIGTERM and forks a "worker" into its process group,
        // as nginx's master does; the worker writes its pid where we can read it.
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("worker.pid");
        let script = format!(
            "trap '' TERM; sleep 60 & echo $! > {}; wait",
            pidfile.display()
        );
        let mut g = ChildGuard::spawn("sh", Command::new("sh").args(["-c", &script])).unwrap();
        let start = Instant::now();
        let worker: i32 = loop {
            if let Some(p) = std::fs::read_to_string(&pidfile)
                .ok()
                .and_then(|s| s.trim().parse().ok())
            {
                break p;
            }
            assert!(start.elapsed() < Duration::from_secs(5), "no worker");
            std::thread::sleep(Duration::from_millis(10));
        };
        g.stop(Duration::from_millis(100));
        // The worker is the test process's grandchild: it is gone, or a zombie of init.
        let gone = || {
            std::fs::read_to_string(format!("/proc/{worker}/stat"))
                .map_or(true, |s| s.contains(") Z "))
        };
        let start = Instant::now();
        while !gone() && start.elapsed() < Duration::from_secs(3) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(gone(), "the worker {worker} outlived its stopped master");
    }
}
