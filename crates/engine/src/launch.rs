//! Servers rackbench launches itself: find the binary (or say how to install it), pick a
//! free port, pin to CPUs, wait until ready, and make sure every process is gone when the
//! run ends, fails, or is interrupted (guards kill on drop; a process-wide list lets the
//! Ctrl-C path kill what is still running). The commands rackbench runs to their end (a
//! variant's setup, ethtool: [`crate::command`]) run under the same guard.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};

/// PIDs of every child still running, for the Ctrl-C path.
static LIVE: Mutex<Vec<u32>> = Mutex::new(Vec::new());

type LaunchReply = std::sync::mpsc::Sender<(Command, std::io::Result<Child>)>;

/// The thread that forks every launched server (its parent-death signal is tied to it).
static LAUNCHER: std::sync::OnceLock<Mutex<std::sync::mpsc::Sender<(Command, LaunchReply)>>> =
    std::sync::OnceLock::new();

/// rackbench's end of the reaper's socket (see [`init_reaper`]); -1 when there is none.
static REAPER: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);
static REAPER_ONCE: std::sync::Once = std::sync::Once::new();

/// Most process groups the reaper keeps at once (launched servers alive together).
const REAPER_GROUPS: usize = 1024;

/// Start the reaper, once per process: a process that holds one end of a socket pair only
/// rackbench writes to, and learns from it the process group of every server launched
/// (a positive number, sent by the server itself between fork and exec) or stopped
/// (negative). When the socket reaches end-of-file, rackbench has exited however it
/// ended (kill -9 included: the kernel closes its descriptors), and the reaper SIGKILLs
/// every group still registered. The parent-death signal alone kills only the process
/// rackbench forked, and some servers fork workers that outlive their master (nginx).
///
/// Call it early (the CLI does, before any work): the reaper is a fork without exec, and
/// it shares rackbench's memory copy-on-write, so the smaller rackbench is then the less
/// it costs. Launching a server calls it too. The child runs only async-signal-safe calls
/// (close, read, kill, signal, setpgid, _exit) on a stack array. Best effort: without a
/// reaper (the fork failed), servers still get the parent-death signal.
pub fn init_reaper() {
    REAPER_ONCE.call_once(|| {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: socketpair fills `fds`. Close-on-exec keeps rackbench's end out of
        // launched servers, which would otherwise hold the socket open after rackbench is
        // gone; a datagram-like socket keeps each 4-byte message whole.
        let ok = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        } == 0;
        if !ok {
            return;
        }
        let [mine, theirs] = fds;
        // SAFETY: the child below only calls async-signal-safe functions and never returns.
        match unsafe { libc::fork() } {
            -1 => unsafe {
                libc::close(mine);
                libc::close(theirs);
            },
            0 => unsafe { reaper_main(mine, theirs) },
            _ => {
                // SAFETY: closing our copy of the reaper's end.
                unsafe { libc::close(theirs) };
                REAPER.store(mine, std::sync::atomic::Ordering::Relaxed);
            }
        }
    });
}

/// The reaper's body, in the forked child (see [`init_reaper`]).
///
/// # Safety
/// Only in a child just forked by `init_reaper`, with the pair's two ends.
unsafe fn reaper_main(rackbench_end: libc::c_int, rd: libc::c_int) -> ! {
    // Out of the terminal's process group (Ctrl-C is for rackbench to handle), with the
    // default signal actions rather than rackbench's handlers.
    libc::setpgid(0, 0);
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
        libc::signal(sig, libc::SIG_DFL);
    }
    // Keep only our end: no copy of rackbench's end (or end-of-file never comes), and
    // none of its sockets, files or output pipes (or a reader of them would wait for us).
    libc::close(rackbench_end);
    let max = match libc::sysconf(libc::_SC_OPEN_MAX) {
        n if n > 0 => n.min(1 << 20) as libc::c_int,
        _ => 1024,
    };
    let below = if rd > 0 {
        libc::syscall(libc::SYS_close_range, 0u32, (rd - 1) as u32, 0u32)
    } else {
        0
    };
    let above = libc::syscall(libc::SYS_close_range, (rd + 1) as u32, u32::MAX, 0u32);
    if below != 0 || above != 0 {
        // No close_range (kernels before 5.9, some seccomp profiles): one by one.
        for fd in 0..max {
            if fd != rd {
                libc::close(fd);
            }
        }
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
}

/// Tell the reaper about a process group: `pgid` to kill if rackbench dies, `-pgid` when
/// that group is gone (so that a reused id is never killed). Never blocks, never raises
/// SIGPIPE; a message that cannot be sent is dropped. Async-signal-safe (used between
/// fork and exec).
fn tell_reaper(pgid: i32) {
    let fd = REAPER.load(std::sync::atomic::Ordering::Relaxed);
    if fd >= 0 {
        let msg = pgid.to_ne_bytes();
        // SAFETY: a send of 4 bytes from a live buffer.
        unsafe {
            libc::send(
                fd,
                msg.as_ptr().cast(),
                msg.len(),
                libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
            )
        };
    }
}

/// Spawn `cmd` on the launcher thread, a thread that never ends, so that a child's
/// parent-death signal fires when rackbench dies and not when the (test or worker)
/// thread that asked for it finishes. `cmd` is handed back unchanged.
fn spawn_from_launcher(cmd: &mut Command) -> std::io::Result<Child> {
    let tx = LAUNCHER.get_or_init(|| {
        init_reaper();
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

/// Find `name`, an executable file, in the directories of the environment variable `var`
/// (its value `dirs`, `:`-separated), which replace every other search. The error says
/// what the variable replaced (`searched`), how to install the program (`install`) and
/// what the directories must hold (`holds`).
pub fn find_binary_in_dirs(
    name: &str,
    var: &str,
    dirs: &std::ffi::OsStr,
    searched: &str,
    install: &str,
    holds: &str,
) -> anyhow::Result<PathBuf> {
    if let Some(p) = std::env::split_paths(dirs)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
    {
        return Ok(p);
    }
    bail!(
        "`{name}` was not found in {var}={} (which replaces the search of {searched}). \
         {install}, or set {var} to the {holds}",
        Path::new(dirs).display()
    )
}

/// Find `name` on PATH. The error names the Debian package that provides it.
pub fn find_binary(name: &str, debian_package: &str) -> anyhow::Result<PathBuf> {
    if name.contains('/') {
        let p = PathBuf::from(name);
        if is_executable(&p) {
            return Ok(p);
        }
        bail!(
            "`{name}` is not an executable file: give the path of an installed one, or \
             leave the option out to use the one on PATH (Debian/Ubuntu: `apt-get install \
             {debian_package}`)"
        );
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

/// A file whose mode lets someone execute it.
pub fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// A free TCP port on 127.0.0.1 (bound then released; a race with another process is
/// possible and shows up as a launch failure that names the port).
pub fn free_port() -> anyhow::Result<u16> {
    free_port_on("127.0.0.1")
}

/// A free TCP port on the address `ip` (the address other hosts reach this one at).
pub fn free_port_on(ip: &str) -> anyhow::Result<u16> {
    let l = TcpListener::bind((ip, 0))
        .with_context(|| format!("binding {ip}:0 to find a free port"))?;
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

/// Where Linux lists the CPUs online (`0-3,5,7-8`). A CPU taken offline in the middle
/// leaves a hole there that sysconf's count cannot show: with CPU 2 offline on a 4-CPU
/// host the count is 3, and CPU 3, online, looked absent while CPU 2 looked present.
pub const CPUS_ONLINE_PATH: &str = "/sys/devices/system/cpu/online";

/// The CPUs a host has online, as a CPU list given for it is checked against (here, by
/// [`check_cpus`], and by the runner before a run, from what each host said when it was
/// reached).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OnlineCpus {
    /// Ascending.
    pub cpus: Vec<usize>,
    /// Why the kernel's list ([`CPUS_ONLINE_PATH`]) was not read, when it was not:
    /// `cpus` is then 0 to n-1 from sysconf's count of n, and may hold an offline CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted: Option<String>,
}

impl OnlineCpus {
    /// The CPUs the kernel listed online.
    pub fn listed(cpus: Vec<usize>) -> OnlineCpus {
        OnlineCpus {
            cpus,
            counted: None,
        }
    }

    /// `n` CPUs counted online, taken to be 0 to n-1, because the list could not be
    /// read (`why`).
    pub fn counted(n: usize, why: &str) -> OnlineCpus {
        OnlineCpus {
            cpus: (0..n).collect(),
            counted: Some(why.to_string()),
        }
    }

    pub fn contains(&self, cpu: usize) -> bool {
        self.cpus.binary_search(&cpu).is_ok()
    }

    /// The CPUs of `cpus` that are not online, in the order given.
    pub fn missing(&self, cpus: &[usize]) -> Vec<usize> {
        cpus.iter()
            .copied()
            .filter(|&c| !self.contains(c))
            .collect()
    }

    /// The CPUs of `cpus` that are offline inside the online ones (below the highest
    /// online CPU): CPUs that exist, and could be brought online.
    pub fn holes(&self, cpus: &[usize]) -> Vec<usize> {
        let top = self.cpus.last().copied().unwrap_or(0);
        self.missing(cpus)
            .into_iter()
            .filter(|&c| c < top)
            .collect()
    }

    /// The online CPUs as Linux writes them (`0-1,3`).
    pub fn text(&self) -> String {
        cpu_list_text(&self.cpus)
    }

    /// What a reader should know about how the list was found: None when the kernel
    /// listed it, else a note saying it was counted and why.
    pub fn note(&self) -> Option<String> {
        self.counted.as_ref().map(|why| {
            format!(
                "{CPUS_ONLINE_PATH} was not read ({why}): its CPUs were counted instead \
                 ({}), taken to be {}, though one among them may be offline",
                self.cpus.len(),
                match self.cpus.len() {
                    0 => "none".to_string(),
                    _ => self.text(),
                }
            )
        })
    }
}

/// The kernel's list of online CPUs ([`CPUS_ONLINE_PATH`]: `0-3,5,7-8` and a newline),
/// ascending. Stricter than [`parse_cpu_list`], which reads what a user types: the
/// kernel writes digits, `-` and `,` only, every range ascending and after the last, and
/// at least one CPU (not necessarily CPU 0: it can be taken offline where the platform
/// allows); anything else is not that file, and is an error rather than a guess.
pub fn parse_online_cpus(text: &str) -> anyhow::Result<Vec<usize>> {
    let list = text.strip_suffix('\n').unwrap_or(text);
    let bad = |why: String| {
        anyhow::anyhow!(
            "`{}` is not a list of online CPUs: {why}",
            list.escape_debug()
        )
    };
    if list.is_empty() {
        return Err(bad("it is empty".into()));
    }
    let cpu = |n: &str| -> anyhow::Result<usize> {
        if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad(format!("`{}` is not a CPU number", n.escape_debug())));
        }
        match n.parse::<usize>() {
            Ok(c) if c < MAX_CPUS => Ok(c),
            _ => Err(bad(format!("CPU {n} is past any machine's"))),
        }
    };
    let mut out: Vec<usize> = Vec::new();
    for part in list.split(',') {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (cpu(a)?, cpu(b)?),
            None => (cpu(part)?, cpu(part)?),
        };
        if b < a {
            return Err(bad(format!("the range {part} runs backwards")));
        }
        if out.last().is_some_and(|&last| a <= last) {
            return Err(bad(format!("{part} is not after the CPUs before it")));
        }
        out.extend(a..=b);
    }
    Ok(out)
}

/// The CPUs online here: the kernel's list at `path` ([`CPUS_ONLINE_PATH`]), or, when it
/// cannot be read or parsed, sysconf's count with the reason ([`OnlineCpus::counted`]).
pub fn cpus_online_from(path: &Path) -> OnlineCpus {
    let read = std::fs::read_to_string(path)
        .with_context(|| format!("reading {}", path.display()))
        .and_then(|t| parse_online_cpus(&t));
    match read {
        Ok(cpus) => OnlineCpus::listed(cpus),
        Err(e) => OnlineCpus::counted(system_cpus(), &format!("{e:#}")),
    }
}

/// The CPUs online on this host ([`cpus_online_from`] the kernel's list).
pub fn cpus_online_here() -> OnlineCpus {
    cpus_online_from(Path::new(CPUS_ONLINE_PATH))
}

/// Check that every CPU in `cpus` is online on this host.
pub fn check_cpus(cpus: &[usize], what: &str) -> anyhow::Result<()> {
    check_cpus_against(cpus, what, &cpus_online_here())
}

/// [`check_cpus`] against the CPUs `online`.
pub fn check_cpus_against(cpus: &[usize], what: &str, online: &OnlineCpus) -> anyhow::Result<()> {
    let missing = online.missing(cpus);
    if let Some(bad) = missing.first() {
        let holes = online.holes(cpus);
        bail!(
            "{what}: CPU {bad} is not available: {} here (this host has CPUs {} online){}",
            // Above the highest online CPU the list cannot tell an absent CPU from one
            // offline (SMT siblings numbered last, with nosmt).
            if holes.contains(bad) {
                "it is offline"
            } else {
                "it is not online (absent, or offline)"
            },
            online.text(),
            online.note().map(|n| format!("; {n}")).unwrap_or_default()
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
    if let Some((c, once)) = model::cpu_listed_twice(&out) {
        bail!(
            "{what}: CPU {c} is listed twice in `{}`: give each CPU once (e.g. {once})",
            values
                .iter()
                .map(|v| v.as_str().map_or(v.to_string(), str::to_string))
                .collect::<Vec<_>>()
                .join(","),
        );
    }
    Ok(out)
}

/// The calling thread pinned to some CPUs for as long as this lives, then given back the
/// CPUs it had. Threads it starts meanwhile inherit the pinning: a driver's helpers (its
/// control connection's reader, its deadline loop) then stay off the CPUs of the server it
/// loads, as a reference client run under `taskset` does.
pub struct PinnedForNow {
    old: Option<libc::cpu_set_t>,
}

impl PinnedForNow {
    /// Pin to `cpus` (none: leave the thread as it is). Best effort: a pinning the system
    /// refuses leaves the thread where it was (the workers' own pinning reports it).
    pub fn new(cpus: &[usize]) -> PinnedForNow {
        if cpus.is_empty() {
            return PinnedForNow { old: None };
        }
        // SAFETY: cpu_set_t is plain data, filled by the kernel for our own thread.
        let old = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            (libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0)
                .then_some(set)
        };
        if old.is_none() || pin_current_thread(cpus).is_err() {
            return PinnedForNow { old: None };
        }
        PinnedForNow { old }
    }
}

impl Drop for PinnedForNow {
    fn drop(&mut self) {
        if let Some(set) = self.old.take() {
            // SAFETY: a mask the kernel gave this thread before.
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
        }
    }
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
                "cannot pin to CPUs {}: {} (is the CPU online and allowed by the cgroup?)",
                cpu_list_text(cpus),
                std::io::Error::last_os_error()
            );
        }
    }
    Ok(())
}

/// [`pin_current_thread`], and then check that the thread may run on every CPU of
/// `cpus`. Given a list some of whose CPUs the process's cpuset excludes (or that are
/// offline), the kernel pins to the rest and says nothing: that is an error here too,
/// naming the CPUs left out and the ones the thread runs on.
pub fn pin_current_thread_exactly(cpus: &[usize]) -> anyhow::Result<()> {
    pin_current_thread(cpus)?;
    if cpus.is_empty() {
        return Ok(());
    }
    let granted = allowed_cpus();
    let left_out: Vec<usize> = cpus
        .iter()
        .copied()
        .filter(|c| !granted.contains(c))
        .collect();
    if !left_out.is_empty() {
        bail!(
            "pinned to CPUs {} only: CPU{} {} left out by the kernel (offline, or outside \
             this process's cpuset)",
            cpu_list_text(&granted),
            if left_out.len() == 1 { "" } else { "s" },
            cpu_list_text(&left_out)
        );
    }
    Ok(())
}

/// The unprivileged OS user a launched server runs as when rackbench is root (PostgreSQL
/// and MariaDB refuse to run as root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceUser {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

impl ServiceUser {
    /// The first of `names` this system knows, when rackbench runs as root; `None` when
    /// it does not (a server then runs as rackbench's own user) or none is known.
    ///
    /// The lookup is the reentrant one (`getpwnam_r`): plain `getpwnam` returns one static
    /// record, and two servers started at once from two threads could each read the
    /// other's user (a PostgreSQL started as `mysql` cannot read its own cluster).
    pub fn when_root(names: &[&str]) -> Option<ServiceUser> {
        if !nix::unistd::geteuid().is_root() {
            return None;
        }
        names.iter().find_map(|name| {
            let u = nix::unistd::User::from_name(name).ok()??;
            Some(ServiceUser {
                name: u.name,
                uid: u.uid.as_raw(),
                gid: u.gid.as_raw(),
            })
        })
    }

    /// Make `cmd` run as this user, with a `HOME` outside root's.
    pub fn apply(&self, cmd: &mut Command) {
        cmd.uid(self.uid).gid(self.gid).env("HOME", "/tmp");
    }

    /// Give `path` to this user.
    pub fn own(&self, path: &Path) -> anyhow::Result<()> {
        std::os::unix::fs::chown(path, Some(self.uid), Some(self.gid)).with_context(|| {
            format!(
                "chown {} to {} (uid {})",
                path.display(),
                self.name,
                self.uid
            )
        })
    }
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
    /// (nginx's workers) is killed by the reaper (see [`init_reaper`]).
    pub fn spawn(name: &str, cmd: &mut Command) -> anyhow::Result<ChildGuard> {
        ChildGuard::start(name, cmd)
            .with_context(|| format!("starting {name} ({:?})", cmd.get_program()))
    }

    /// [`ChildGuard::spawn`], with the spawn's own error (a command runner tells a program
    /// not found from other failures).
    pub(crate) fn start(name: &str, cmd: &mut Command) -> std::io::Result<ChildGuard> {
        cmd.process_group(0);
        let parent = std::process::id();
        // SAFETY: send (in tell_reaper), getpid, prctl and getppid are async-signal-safe.
        unsafe {
            cmd.pre_exec(move || {
                // The child registers its own group, before it can fork anything into it:
                // no window in which rackbench could die with the group unknown.
                tell_reaper(libc::getpid());
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
        let child = spawn_from_launcher(cmd)?;
        if let Ok(mut live) = LIVE.lock() {
            live.push(child.id());
        }
        crate::scratch::record_group(child.id());
        Ok(ChildGuard {
            name: name.to_string(),
            child: Some(child),
        })
    }

    /// Spawn a probe (ethtool, dmidecode, a power meter's reading: see
    /// [`crate::command::Kind::Probe`]) in a process group of its own and guard it.
    ///
    /// A probe may run while a test measures, in a rackbench holding gigabytes, so it is
    /// spawned the way that copies nothing of rackbench: no hook between fork and exec
    /// (std forks, copying every page table, for any such hook, and uses posix_spawn
    /// without), so no parent-death signal either. It is known to the reaper and to
    /// [`kill_all_children`] from here, right after the spawn, and [`crate::command`]
    /// records it for the sweep if it lasts. Accepted: rackbench killed in the microseconds between
    /// the spawn and the registration leaves the probe to end by itself.
    pub(crate) fn start_probe(name: &str, cmd: &mut Command) -> std::io::Result<ChildGuard> {
        init_reaper();
        cmd.process_group(0);
        let child = cmd.spawn()?;
        tell_reaper(child.id() as i32);
        if let Ok(mut live) = LIVE.lock() {
            live.push(child.id());
        }
        Ok(ChildGuard {
            name: name.to_string(),
            child: Some(child),
        })
    }

    /// The child, to take its output pipes (a command runner).
    pub(crate) fn child_mut(&mut self) -> Option<&mut Child> {
        self.child.as_mut()
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// None while running; Some(description) once it has exited. The child is left
    /// unreaped (a zombie) until [`ChildGuard::stop`]: its pid, and so its process
    /// group's id, cannot be reused while the group may still need killing.
    pub fn exited(&mut self) -> Option<String> {
        let Some(child) = self.child.as_ref() else {
            return Some(format!("{} was stopped", self.name));
        };
        match peek_exit(child.id()) {
            Ok(None) => None,
            Ok(Some(how)) => Some(format!("{} {how}", self.name)),
            Err(e) => Some(format!("{}: {e}", self.name)),
        }
    }

    /// A server's own clean shutdown: `signal` (PostgreSQL's fast-shutdown SIGINT,
    /// mariadbd's SIGTERM), up to `patience` for it to exit, then [`ChildGuard::stop`]
    /// with a 2 s grace for whatever still runs.
    pub fn stop_after(&mut self, signal: libc::c_int, patience: Duration) {
        let pid = self.pid();
        if pid != 0 && self.exited().is_none() {
            // SAFETY: kill(2) on our own (unreaped) child's pid.
            unsafe {
                libc::kill(pid as i32, signal);
            }
            let deadline = Instant::now() + patience;
            while self.exited().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        self.stop(Duration::from_secs(2));
    }

    /// SIGTERM, wait up to `grace` for it to exit, then SIGKILL to its whole process
    /// group (what it forked, nginx's workers, included: also when it exited on its own
    /// and left them), and only then reap it.
    pub fn stop(&mut self, grace: Duration) {
        self.end(grace);
    }

    /// [`ChildGuard::stop`], and how the child ended: its own exit status when it had
    /// exited before the kill, else the kill's; None when it was stopped already or
    /// cannot be reaped.
    pub(crate) fn end(&mut self, grace: Duration) -> Option<std::process::ExitStatus> {
        if let Some(mut child) = self.child.take() {
            let pid = child.id();
            // SAFETY: plain kill(2) on our own (unreaped) child's pid.
            unsafe {
                libc::kill(pid as i32, libc::SIGTERM);
            }
            let deadline = Instant::now() + grace;
            while matches!(peek_exit(pid), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            // SAFETY: kill(2) on the group our still unreaped child leads (a zombie keeps
            // the id taken).
            unsafe {
                libc::kill(-(pid as i32), libc::SIGKILL);
            }
            // Forgotten everywhere before it is reaped: until then its id cannot be
            // reused, so no list ever holds an id that is someone else's.
            if let Ok(mut live) = LIVE.lock() {
                live.retain(|p| *p != pid);
            }
            tell_reaper(-(pid as i32));
            crate::scratch::forget_group(pid);
            let _ = child.kill();
            return child.wait().ok();
        }
        None
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(2));
    }
}

/// Has child `pid` exited? Asked without reaping it (`WNOWAIT`): Ok(Some(how)) once it has.
pub(crate) fn peek_exit(pid: u32) -> std::io::Result<Option<String>> {
    // SAFETY: a zeroed siginfo_t is valid; waitid fills it.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let rc = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: after a successful waitid with WEXITED the child fields are the ones set.
    let (who, status) = unsafe { (info.si_pid(), info.si_status()) };
    if who == 0 {
        return Ok(None);
    }
    Ok(Some(match info.si_code {
        libc::CLD_EXITED => format!("exited (exit status: {status})"),
        libc::CLD_KILLED | libc::CLD_DUMPED => format!("exited (killed by signal {status})"),
        _ => "exited".to_string(),
    }))
}

/// Kill every child still running, launched servers and commands run to their end
/// ([`crate::command`]) alike (the second Ctrl-C, the agent's exits). Safe to call twice.
pub fn kill_all_children() {
    let pids: Vec<u32> = LIVE.lock().map(|l| l.clone()).unwrap_or_default();
    for pid in pids {
        // SAFETY: kill(2) on pids we spawned and the groups they lead; guards never reap
        // before removing a pid from LIVE, so none of these ids can have been reused.
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

/// No CPU number reaches this (the kernel's largest NR_CPUS is 8192): a range past it is
/// a typo, refused before it becomes a list of billions.
pub use model::MAX_CPUS;

/// Parse a CPU list as Linux writes them: `0-3,8,10-11`.
pub fn parse_cpu_list(s: &str) -> anyhow::Result<Vec<usize>> {
    model::parse_cpu_list(s).map_err(anyhow::Error::msg)
}

/// A CPU list in Linux's short form (`0-3,8`), the inverse of [`parse_cpu_list`].
pub use model::cpu_list_text;

#[cfg(test)]
mod tests {
    use super::*;

    /// A CPU list part of which the kernel will not give (an offline CPU here, as a
    /// cpuset's exclusion does) pinned the thread to the rest without a word: pinned
    /// exactly, that is an error naming what was left out.
    #[test]
    fn pinning_exactly_names_the_cpus_the_kernel_left_out() {
        let online = cpus_online_here();
        let Some(past) = (0..libc::CPU_SETSIZE as usize).find(|c| !online.contains(*c)) else {
            eprintln!("skipped: every CPU number a cpu_set_t holds is online here");
            return;
        };
        let mine = allowed_cpus();
        let first = mine[0];
        std::thread::spawn(move || {
            pin_current_thread_exactly(&[first]).unwrap();
            assert_eq!(allowed_cpus(), vec![first]);
            let e = pin_current_thread_exactly(&[first, past]).unwrap_err();
            assert_eq!(
                format!("{e:#}"),
                format!(
                    "pinned to CPUs {first} only: CPU {past} left out by the kernel (offline, \
                     or outside this process's cpuset)"
                )
            );
            // Loosely pinned, the same list passes.
            pin_current_thread(&[first, past]).unwrap();
            let e = pin_current_thread_exactly(&[past]).unwrap_err();
            assert!(
                format!("{e:#}").starts_with(&format!("cannot pin to CPUs {past}: ")),
                "{e:#}"
            );
        })
        .join()
        .unwrap();
    }

    /// The kernel's online list, as /sys/devices/system/cpu/online holds it: holes are
    /// kept (a count cannot show them); what is not that file's format is an error.
    #[test]
    fn the_online_cpu_list_is_parsed_holes_and_all() {
        assert_eq!(parse_online_cpus("0\n").unwrap(), vec![0]);
        assert_eq!(parse_online_cpus("0-3\n").unwrap(), vec![0, 1, 2, 3]);
        assert_eq!(parse_online_cpus("0-1,3\n").unwrap(), vec![0, 1, 3]);
        assert_eq!(
            parse_online_cpus("0-3,5,7-8").unwrap(),
            vec![0, 1, 2, 3, 5, 7, 8]
        );
        assert_eq!(parse_online_cpus("2,4").unwrap(), vec![2, 4]);
        for bad in [
            "",
            "\n",
            "0-",
            "-3",
            "0-3,",
            ",0",
            "0,,2",
            "a",
            "0-3\n\n",
            " 0-3",
            "0 - 3",
            "+1",
            "3-1",
            "0-3,2",
            "0-3,3",
            "1,0",
            "0-8192",
            "99999999999999999999999",
            "0-3\u{0}",
        ] {
            let e = parse_online_cpus(bad).expect_err(bad);
            assert!(
                format!("{e}").contains("is not a list of online CPUs"),
                "{bad:?}: {e}"
            );
        }
        let e = parse_online_cpus("0-3,2").unwrap_err();
        assert_eq!(
            format!("{e}"),
            "`0-3,2` is not a list of online CPUs: 2 is not after the CPUs before it"
        );
    }

    /// The list is read from the file; a file that cannot be read or parsed falls back
    /// to the count, saying why, and a check against it says so too.
    #[test]
    fn the_online_cpus_come_from_the_kernels_list_else_the_count_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("online");
        std::fs::write(&file, "0-1,3\n").unwrap();
        let online = cpus_online_from(&file);
        assert_eq!(online, OnlineCpus::listed(vec![0, 1, 3]));
        assert_eq!(online.note(), None);
        assert_eq!(online.text(), "0-1,3");
        assert!(check_cpus_against(&[0, 3], "--server-cpus", &online).is_ok());
        let e = check_cpus_against(&[3, 2], "--server-cpus", &online).unwrap_err();
        assert_eq!(
            format!("{e}"),
            "--server-cpus: CPU 2 is not available: it is offline here (this host has CPUs \
             0-1,3 online)"
        );
        let e = check_cpus_against(&[9], "--server-cpus", &online).unwrap_err();
        assert!(format!("{e}")
            .contains("CPU 9 is not available: it is not online (absent, or offline) here"));

        let counted = cpus_online_from(&dir.path().join("absent"));
        assert_eq!(counted.cpus, (0..system_cpus()).collect::<Vec<_>>());
        let note = counted.note().expect("a note");
        assert!(
            note.contains("absent") && note.contains("counted instead"),
            "{note}"
        );
        std::fs::write(&file, "garbage\n").unwrap();
        let garbage = cpus_online_from(&file);
        assert!(garbage.note().unwrap().contains("`garbage` is not a list"));
        let e = check_cpus_against(&[MAX_CPUS - 1], "--cpus", &garbage).unwrap_err();
        assert!(format!("{e}").contains("counted instead"), "{e}");

        // This machine's own list parses (where the file is there to read).
        let here = cpus_online_here();
        if std::path::Path::new(CPUS_ONLINE_PATH).exists() {
            assert_eq!(here.note(), None, "{here:?}");
            assert!(!here.cpus.is_empty());
        }
    }

    #[test]
    fn a_cpu_list_is_written_back_in_its_short_form() {
        assert_eq!(cpu_list_text(&[0, 1]), "0-1");
        assert_eq!(cpu_list_text(&[7]), "7");
        assert_eq!(cpu_list_text(&[0, 1, 2, 5, 8, 9]), "0-2,5,8-9");
        assert_eq!(cpu_list_text(&[3, 1]), "3,1");
        assert_eq!(cpu_list_text(&[]), "");
        let back = parse_cpu_list(&cpu_list_text(&[0, 1, 2, 5])).unwrap();
        assert_eq!(back, vec![0, 1, 2, 5]);
    }

    /// A thread pinned for now is on the CPUs asked, so is a thread it starts meanwhile,
    /// and it has its own CPUs back when the pinning ends; no CPUs asked changes nothing.
    #[test]
    fn pinned_for_now_pins_the_thread_and_its_children_then_gives_back() {
        std::thread::spawn(|| {
            let before = allowed_cpus();
            let last = *before.last().unwrap();
            {
                let _p = PinnedForNow::new(&[last]);
                assert_eq!(allowed_cpus(), vec![last]);
                assert_eq!(std::thread::spawn(allowed_cpus).join().unwrap(), vec![last]);
            }
            assert_eq!(allowed_cpus(), before);
            let _none = PinnedForNow::new(&[]);
            assert_eq!(allowed_cpus(), before);
        })
        .join()
        .unwrap();
    }

    /// Servers start from parallel threads (tests, sweeps): each lookup must see its own
    /// user, never the record another thread's lookup left in a shared buffer.
    #[test]
    fn service_users_looked_up_at_once_from_many_threads_are_each_their_own() {
        if !nix::unistd::geteuid().is_root() {
            assert_eq!(ServiceUser::when_root(&["nobody"]), None);
            return;
        }
        let names = ["root", "nobody", "daemon", "bin"];
        let expected: Vec<ServiceUser> = names
            .iter()
            .filter_map(|n| ServiceUser::when_root(&[n]))
            .collect();
        assert!(expected.iter().any(|u| u.name == "root" && u.uid == 0));
        std::thread::scope(|s| {
            for t in 0..4 {
                let expected = &expected;
                s.spawn(move || {
                    for i in 0..2_000 {
                        let want = &expected[(i + t) % expected.len()];
                        let got = ServiceUser::when_root(&["no-such-user-rb", &want.name]);
                        assert_eq!(got.as_ref(), Some(want));
                    }
                });
            }
        });
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-3,8").unwrap(), vec![0, 1, 2, 3, 8]);
        assert_eq!(parse_cpu_list("1").unwrap(), vec![1]);
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("a").is_err());
        // A typo past any machine's CPUs is an error, not a list of billions.
        let e = parse_cpu_list("0-4611686018427387904").unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
        assert_eq!(parse_cpu_list("8191").unwrap(), vec![8191]);
    }

    /// Acceptance A, finding 9: `crypto --cpus 0-1,1` was accepted without a word.
    #[test]
    fn a_cpu_listed_twice_is_refused() {
        let e = parse_cpu_list("0-1,1").unwrap_err().to_string();
        assert!(
            e.contains("CPU 1 is listed twice") && e.contains("(e.g. 0-1)"),
            "{e}"
        );
        // Split into values by the flag parser, as `--cpus 0-1,1` is.
        let v = [serde_json::json!("0-1"), serde_json::json!(1)];
        let e = cpus_from_values(&v, "crypto: `cpus`")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("crypto: `cpus`: CPU 1 is listed twice in `0-1,1`"),
            "{e}"
        );
        assert_eq!(cpus_from_values(&v[..1], "x").unwrap(), vec![0, 1]);
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
    fn exited_reports_without_reaping() {
        let mut g = ChildGuard::spawn("sh", Command::new("sh").args(["-c", "exit 3"])).unwrap();
        let start = Instant::now();
        let how = loop {
            if let Some(h) = g.exited() {
                break h;
            }
            assert!(start.elapsed() < Duration::from_secs(5), "sh did not exit");
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(how, "sh exited (exit status: 3)");
        // Still a zombie, so its pid (and group id) stays taken until stop reaps it.
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", g.pid())).unwrap();
        assert!(stat.contains(") Z "), "{stat}");
        g.stop(Duration::ZERO);
        assert_eq!(g.exited().as_deref(), Some("sh was stopped"));
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
        assert_worker_gone_after_stop(&script, &pidfile);
        // A master that does exit on SIGTERM but leaves its worker behind.
        let _ = std::fs::remove_file(&pidfile);
        let script = format!(
            "(trap '' TERM; exec sleep 60) & echo $! > {}; wait",
            pidfile.display()
        );
        assert_worker_gone_after_stop(&script, &pidfile);
    }

    /// Run `script` under a guard, wait for the worker pid it writes to `pidfile`, stop
    /// the guard, and check the worker is gone.
    fn assert_worker_gone_after_stop(script: &str, pidfile: &Path) {
        let mut g = ChildGuard::spawn("sh", Command::new("sh").args(["-c", script])).unwrap();
        let start = Instant::now();
        let worker: i32 = loop {
            if let Some(p) = std::fs::read_to_string(pidfile)
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
