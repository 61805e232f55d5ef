//! The transport: the system OpenSSH client, so the user's own `~/.ssh/config`, agent,
//! `ProxyJump` and `known_hosts` apply. Every connection is non-interactive
//! (BatchMode), multiplexed over one master per host (ControlMaster, in a private
//! directory), checks host keys strictly (an unknown or changed key is an error that says
//! what to run, never accepted), forwards no agent, X11 or port, and opens no listening
//! port. Nothing secret is ever put on a command line: requests travel in frames.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

pub struct Ssh {
    /// The config every ssh of ours reads (`-F`): our fixed settings first, then the
    /// user's config included. ssh takes the first value it finds, and it passes `-F`
    /// on to the ssh it starts for a `ProxyJump` hop (our `-o` options it does not), so
    /// host-key checking and BatchMode hold for the jump host too.
    config: PathBuf,
    /// The user's `--ssh-config`, named in the commands an error tells them to run.
    user_config: Option<PathBuf>,
    control_dir: engine::scratch::ScratchDir,
}

/// What to do when there is no ssh client to run.
const NO_SSH: &str =
    "cannot run `ssh`: install the OpenSSH client (apt-get install openssh-client)";

/// Our settings, ahead of the user's config, for every host and every hop.
fn generated_config(user: &[PathBuf]) -> String {
    let mut c = String::from(
        "# Written by rackbench for one run: these settings come first and so win.\n\
         Host *\n  StrictHostKeyChecking yes\n  BatchMode yes\n  ForwardAgent no\n  ForwardX11 no\n  \
         ClearAllForwardings yes\n  PermitLocalCommand no\n",
    );
    for u in user {
        c.push_str(&format!("Include \"{}\"\n", u.display()));
    }
    c
}

/// What a host said when probed: its architecture and where our binary lives there.
#[derive(Debug, Clone)]
pub struct Probe {
    pub arch: String,
    pub path: String,
    pub present: bool,
}

/// A destination ssh accepts and that cannot be taken for an option or break a command.
pub fn check_destination(dest: &str) -> anyhow::Result<()> {
    if dest.is_empty()
        || dest.starts_with('-')
        || !dest
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-@:/[]%".contains(c))
    {
        bail!(
            "`{dest}` is not a host name rackbench accepts: use an ssh destination like \
             `server1`, `user@10.0.0.5` or a `Host` alias of your ~/.ssh/config"
        );
    }
    Ok(())
}

/// An `--ssh-config` that is not a file: refused, saying what to do.
pub fn check_config(path: &Path) -> anyhow::Result<()> {
    if !path.is_file() {
        bail!(
            "--ssh-config {}: {}; give an ssh config file (as `ssh -F`), or leave \
             the option out to use ~/.ssh/config",
            path.display(),
            if path.is_dir() {
                "a directory, not a file"
            } else {
                "no such file"
            }
        );
    }
    Ok(())
}

/// The first 32 hex digits of the binary's sha256 name its cached copy.
pub fn cache_name(sha256: &str) -> String {
    format!("rackbench-{}", &sha256[..sha256.len().min(32)])
}

impl Ssh {
    /// `config`: an ssh config file to use instead of ~/.ssh/config (`ssh -F`).
    pub fn new(config: Option<PathBuf>) -> anyhow::Result<Ssh> {
        if let Some(c) = &config {
            check_config(c)?;
        }
        // A run killed outright leaves it; the next command's scratch sweep removes it.
        let control_dir = engine::scratch::tempdir("rackbench-ssh-")
            .context("creating a private directory for ssh's control sockets")?;
        // --ssh-config replaces ~/.ssh/config and the system's, as `ssh -F` does;
        // otherwise both apply, in ssh's own order.
        let user_config = config.map(|c| c.canonicalize().unwrap_or(c));
        let user: Vec<PathBuf> = match &user_config {
            Some(c) => vec![c.clone()],
            None => {
                let mut v = Vec::new();
                if let Some(home) = std::env::var_os("HOME") {
                    let u = PathBuf::from(home).join(".ssh/config");
                    if u.is_file() {
                        v.push(u);
                    }
                }
                let sys = PathBuf::from("/etc/ssh/ssh_config");
                if sys.is_file() {
                    v.push(sys);
                }
                v
            }
        };
        // The longest socket path ssh makes there: the directory, `/`, 12 digits, and
        // the 17 characters it appends while setting a master up.
        let longest = control_dir.path().as_os_str().len() + 1 + 12 + 17;
        if longest > 107 {
            bail!(
                "the temporary directory {} is too deep for ssh's control sockets (a Unix \
                 socket's path has at most 107 bytes); set TMPDIR to a shorter directory, \
                 e.g. TMPDIR=/tmp",
                control_dir.path().display()
            );
        }
        let generated = control_dir.path().join("config");
        std::fs::write(&generated, generated_config(&user))
            .context("writing the ssh settings of this run")?;
        Ok(Ssh {
            config: generated,
            user_config,
            control_dir,
        })
    }

    /// Close the multiplexed connections to `dests` and remove the control directory
    /// (a process that exits runs no destructor: this is the run's last word to ssh).
    pub fn close(&self, dests: &[String]) {
        for d in dests {
            let c = self.command(d);
            // `-O exit` goes before the destination: rebuild the command's tail.
            let args: Vec<std::ffi::OsString> = c.get_args().map(|a| a.to_os_string()).collect();
            let mut exit = Command::new("ssh");
            let cut = args.iter().position(|a| a == "--").unwrap_or(args.len());
            exit.args(&args[..cut]).args(["-O", "exit", "--", d]);
            exit.stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            if let Ok(child) = exit.spawn() {
                let _ = wait_with_timeout(child, Duration::from_secs(3));
            }
        }
        let _ = std::fs::remove_dir_all(self.control_dir.path());
    }

    /// The control socket for `dest`: 12 hex digits of its sha256 in the run's control
    /// directory. Not ssh's `%C` (40 digits): a Unix socket's path has at most 107
    /// bytes, ssh adds 17 to it while it sets the master up, and the directory is already
    /// deep in the temp dir (a TMPDIR of a dozen more bytes put `%C` past the limit).
    fn control_path(&self, dest: &str) -> PathBuf {
        use sha2::Digest;
        let hash = sha2::Sha256::digest(dest.as_bytes());
        self.control_dir.path().join(hex::encode(&hash[..6]))
    }

    /// `ssh [options] DEST` with our options; append the remote command.
    pub fn command(&self, dest: &str) -> Command {
        let mut c = Command::new("ssh");
        c.arg("-F").arg(&self.config);
        // Its own process group: a Ctrl-C at the terminal reaches rackbench, which
        // ends the test on every host and keeps what was measured, not ssh, which
        // would drop the sessions with the measurements in them.
        std::os::unix::process::CommandExt::process_group(&mut c, 0);
        let control = self.control_path(dest);
        for o in [
            "BatchMode=yes".to_string(),
            "StrictHostKeyChecking=yes".to_string(),
            "ForwardAgent=no".to_string(),
            "ForwardX11=no".to_string(),
            "ClearAllForwardings=yes".to_string(),
            "ControlMaster=auto".to_string(),
            format!("ControlPath={}", control.display()),
            // The master lingers briefly after the last session, then goes: nothing of
            // ours stays on the controller for long after the run.
            "ControlPersist=5".to_string(),
            "ServerAliveInterval=2".to_string(),
            "ServerAliveCountMax=3".to_string(),
            "ConnectTimeout=5".to_string(),
            "LogLevel=ERROR".to_string(),
        ] {
            c.arg("-o").arg(o);
        }
        c.arg("-T").arg("--").arg(dest);
        c
    }

    /// Run a short remote command; its stdout, or an error that says why ssh failed.
    pub fn run(
        &self,
        dest: &str,
        remote: &str,
        input: Option<&Path>,
        timeout: Duration,
    ) -> anyhow::Result<String> {
        Ok(self
            .run_said(dest, remote, input, timeout)?
            .checked(dest, self.user_config.as_deref())?
            .stdout)
    }

    /// [`Ssh::run`] for a best-effort command (killing a lost agent, whose own watchdog
    /// ends it anyway): its ssh dies with the thread that waits for it, so one still
    /// connecting to a host that is down does not outlive rackbench by its connect
    /// timeout (acceptance pass G, 9).
    pub fn run_dying_with_caller(
        &self,
        dest: &str,
        remote: &str,
        timeout: Duration,
    ) -> anyhow::Result<String> {
        let mut cmd = self.command(dest);
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: prctl and getppid are async-signal-safe.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // rackbench gone between the fork and the prctl: no signal will come.
                if libc::getppid() != parent {
                    return Err(std::io::Error::other("rackbench ended before ssh started"));
                }
                Ok(())
            });
        }
        Ok(self
            .said(cmd, dest, remote, None, timeout)?
            .checked(dest, self.user_config.as_deref())?
            .stdout)
    }

    /// Run a remote command and keep what it printed and how it ended, failed or not;
    /// an error only when ssh could not be run or did not finish in time.
    fn run_said(
        &self,
        dest: &str,
        remote: &str,
        input: Option<&Path>,
        timeout: Duration,
    ) -> anyhow::Result<Said> {
        self.said(self.command(dest), dest, remote, input, timeout)
    }

    /// [`Ssh::run_said`] with the ssh command `cmd` made for `dest`.
    fn said(
        &self,
        cmd: Command,
        dest: &str,
        remote: &str,
        input: Option<&Path>,
        timeout: Duration,
    ) -> anyhow::Result<Said> {
        self.said_until(cmd, dest, remote, input, timeout, wait_with_timeout)
    }

    /// [`Ssh::said`], waiting for the command with `wait`.
    fn said_until(
        &self,
        mut cmd: Command,
        dest: &str,
        remote: &str,
        input: Option<&Path>,
        timeout: Duration,
        wait: fn(Child, Duration) -> anyhow::Result<std::process::Output>,
    ) -> anyhow::Result<Said> {
        cmd.arg(in_sh(remote))
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().context(NO_SSH)?;
        if let Some(path) = input {
            let mut stdin = child.stdin.take().context("ssh stdin")?;
            let path = path.to_path_buf();
            std::thread::spawn(move || {
                if let Ok(mut f) = std::fs::File::open(&path) {
                    let _ = std::io::copy(&mut f, &mut stdin);
                }
                let _ = stdin.flush();
            });
        }
        let out = wait(child, timeout).with_context(|| format!("{dest}: ssh did not finish"))?;
        Ok(Said {
            stdout: String::from_utf8_lossy(&out.stdout).to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).to_string(),
            code: out.status.code(),
        })
    }

    /// Where our binary (by content hash) is on `dest`, and its architecture.
    pub fn probe(&self, dest: &str, sha256: &str) -> anyhow::Result<Probe> {
        let name = cache_name(sha256);
        let script = probe_script(&name);
        let said = self.said_until(
            self.command(dest),
            dest,
            &script,
            None,
            Duration::from_secs(20),
            wait_stoppable,
        )?;
        read_probe(dest, &said.checked(dest, self.user_config.as_deref())?)
    }

    /// Copy this binary to `path` on `dest` (private to the user, atomically renamed),
    /// keeping the three newest copies in the cache (each build is a new copy).
    pub fn deploy(&self, dest: &str, path: &str, sha256: &str) -> anyhow::Result<()> {
        // This process's own image, whatever happened to the file since it started
        // (the hash was taken from it too).
        let exe = PathBuf::from("/proc/self/exe");
        let size = std::fs::metadata(&exe)
            .context("cannot read the size of rackbench's own binary (/proc/self/exe)")?
            .len();
        let script = deploy_script(path, sha256, size);
        let out = copy_retrying_once(dest, self.user_config.as_deref(), || {
            self.said_until(
                self.command(dest),
                dest,
                &script,
                Some(&exe),
                Duration::from_secs(300),
                wait_stoppable,
            )
        })?;
        if !out.contains("RBCOPIED") {
            bail!(
                "{dest}: copying rackbench to {path} failed: {}",
                model::printable(out.trim())
            );
        }
        Ok(())
    }

    /// Start `PATH agent --name NAME` on `dest`, its stdio piped to us: checked once
    /// more just before, as the probe checked it ([`PRIVATE_SH`]), since the copy or
    /// the directories above it could have changed hands since.
    pub fn start_agent(&self, dest: &str, path: &str, name: &str) -> anyhow::Result<Child> {
        let mut cmd = self.command(dest);
        cmd.arg(in_sh(&start_script(path, name)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd.spawn().context(NO_SSH)
    }
}

/// Run `copy` (the deploy) and return what it printed. A copy that failed its check (a
/// stream cut short, or a check that could not run) is copied once more before it is an
/// error: the script kept nothing of it. Any other failure is returned at once.
fn copy_retrying_once(
    dest: &str,
    user_config: Option<&Path>,
    mut copy: impl FnMut() -> anyhow::Result<Said>,
) -> anyhow::Result<String> {
    for attempt in 1.. {
        let said = copy()?;
        if said.ok() || !said.stderr.lines().any(|l| l.trim() == BAD_COPY) {
            return Ok(said.checked(dest, user_config)?.stdout);
        }
        if attempt == 2 {
            bail!(
                "{dest}: the copy of rackbench failed its size or sha256 check twice (or the \
                 check could not run){}; nothing was kept there. Check the disk and the link \
                 to it, then run again",
                said.stderr_tail()
            )
        }
        engine::errln!(
            "rackbench: {dest}: the copy of rackbench failed its size or sha256 check; copying it again"
        );
    }
    unreachable!("the loop returns by its second attempt")
}

/// The agent's start: the cached binary run only while it and the directories above it
/// are private ([`PRIVATE_SH`]), else a line on stderr that the error shows.
fn start_script(path: &str, name: &str) -> String {
    let q = shell_quote(path);
    let file = shell_quote(path.rsplit_once('/').map_or(path, |(_, f)| f));
    format!(
        "{PRIVATE_SH} if ! private {q}; then echo \"rackbench: {UNSAFE_START}\" {q} >&2; exit 3; fi; \
         exec \"$r\"/{file} agent --name {}",
        shell_quote(name)
    )
}

/// What the start script says when the cached copy is no longer private.
const UNSAFE_START: &str = "another user may now write to the cached copy or a directory \
     above it, so it is not run:";

/// The probe's answer, or an error that says what the host printed instead.
/// The probe: this host's architecture, and whether our binary is in its cache.
fn probe_script(name: &str) -> String {
    // A binary another user could have put or changed there is never run: the cache
    // directory and the file must be this user's and writable by no one else, and so
    // must every directory above them but root's (`unsafe` otherwise). An absent cache
    // is made private by the deploy; the directories above it that exist are checked
    // now, before a copy of up to minutes into them.
    format!(
        "c=\"${{XDG_CACHE_HOME:-$HOME/.cache}}/rackbench\"; f=\"$c/{name}\"; {PRIVATE_SH} \
         e=\"$c\"; while [ ! -e \"$e\" ]; do e=\"$(dirname \"$e\")\"; done; \
         if [ -e \"$c\" ] && ! private \"$c\"; then p=unsafe; \
         elif [ ! -e \"$c\" ] && ! above \"$e\"; then p=unsafe; \
         elif [ -x \"$f\" ] && ! private \"$f\"; then p=unsafe; \
         elif [ -x \"$f\" ]; then p=present; else p=absent; fi; \
         printf 'RBPROBE %s %s %s\\n' \"$(uname -m)\" \"$p\" \"$f\""
    )
}

/// `private PATH` in sh: PATH is this user's and writable by no one else, and each
/// directory above it (as the kernel finds it, links resolved) is this user's or root's
/// and writable by no one else, or sticky (/tmp: no one renames another's entries):
/// `above DIR`, from DIR itself up. Where another user could swap a directory on the
/// way, a checked binary could be replaced before it runs. Absolute paths only.
/// `private` leaves the directory it checked in `r`: what runs is `$r/NAME`, not a path
/// through a link whose own directory went unchecked.
const PRIVATE_SH: &str = "\
    loose() { [ ! -O \"$1\" ] || [ -n \"$(find \"$1\" -maxdepth 0 -perm /022 2>/dev/null)\" ]; }; \
    private() { loose \"$1\" && return 1; above \"$(dirname \"$1\")\"; }; \
    above() { r=\"$(cd \"$1\" 2>/dev/null && pwd -P)\" || return 1; d=\"$r\"; \
      while :; do case \"$d\" in /*) ;; *) return 1;; esac; \
        [ -O \"$d\" ] || [ -n \"$(find \"$d\" -maxdepth 0 -user 0 2>/dev/null)\" ] || return 1; \
        [ -z \"$(find \"$d\" -maxdepth 0 -perm /022 ! -perm -1000 2>/dev/null)\" ] || return 1; \
        [ \"$d\" = / ] && return 0; d=\"$(dirname \"$d\")\"; done; };";

fn read_probe(dest: &str, said: &Said) -> anyhow::Result<Probe> {
    let out = &said.stdout;
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix("RBPROBE "))
        .with_context(|| {
            format!(
                "{dest}: the probe printed nothing rackbench understands: {}{}",
                if out.trim().is_empty() {
                    "nothing at all".to_string()
                } else {
                    format!("`{}`", model::printable(out.trim()))
                },
                said.stderr_tail()
            )
        })?;
    let mut it = line.splitn(3, ' ');
    let (arch, present, path) = (
        it.next().unwrap_or_default(),
        it.next().unwrap_or_default(),
        it.next().unwrap_or_default(),
    );
    // A command that died before printing (a preloaded library failing, no memory,
    // no processes left) leaves the architecture empty: say so, not "x86_64 vs ''".
    if arch.is_empty()
        || !arch
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        bail!(
            "{dest}: cannot tell its architecture: `uname -m` printed {}{}; check that \
             commands run there over ssh (`uname -m`), then run again",
            if arch.is_empty() {
                "nothing".to_string()
            } else {
                format!("`{}`", model::printable(arch))
            },
            said.stderr_tail()
        );
    }
    if present == "unsafe" {
        let dir = path.rsplit_once('/').map_or(path, |(d, _)| d);
        bail!(
            "{dest}: the rackbench cache {}, or a directory above it, is not yours alone \
             (another user owns it or may write to it), so a binary there is not run: \
             `chmod 700 {}` there (or remove it); every directory above it must be owned \
             by you or root and writable by no one else unless sticky; then run again",
            model::printable(dir),
            model::printable(dir)
        );
    }
    Ok(Probe {
        arch: arch.to_string(),
        path: path.to_string(),
        present: present == "present",
    })
}

/// What the deploy script prints on stderr, alone on a line, when the copy failed its
/// check.
const BAD_COPY: &str = "RBBADCOPY";

/// What a remote command printed, and how it ended.
struct Said {
    stdout: String,
    stderr: String,
    /// Its exit status (None: ended by a signal).
    code: Option<i32>,
}

impl Said {
    /// It exited with status 0.
    fn ok(&self) -> bool {
        self.code == Some(0)
    }

    /// Itself when the command succeeded, else an error that says why it failed
    /// (`user_config`: the `--ssh-config` the commands it suggests must name).
    fn checked(self, dest: &str, user_config: Option<&Path>) -> anyhow::Result<Said> {
        if self.ok() {
            Ok(self)
        } else {
            Err(classify(dest, &self.stderr, self.code, user_config))
        }
    }

    /// The last lines it printed on stderr (our own markers left out), as
    /// ` (it said: ...)`, or nothing.
    fn stderr_tail(&self) -> String {
        let lines: Vec<&str> = self
            .stderr
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && *l != BAD_COPY)
            .collect();
        if lines.is_empty() {
            return String::new();
        }
        let tail = lines[lines.len().saturating_sub(3)..].join(" | ");
        format!(" (it said: {})", model::printable(&tail))
    }
}

/// The remote script that receives the binary on stdin and publishes it at `path`.
/// The copy is checked before it is published, so that a copy cut short (a link dropped,
/// ssh killed at the deploy timeout, a read that failed on our side: each ends `cat`
/// cleanly at end of input) never gets the name of a good one: always by its size, and by
/// its sha256 where the host has `sha256sum`. `ln` publishes it without replacing one
/// another host put there first (a home directory shared by several hosts), so a running
/// binary is never replaced. The prune keeps the three newest copies and never touches
/// this one, nor a copy being received; a half copy an earlier deploy left (ssh killed
/// outright: its trap never ran) goes once it is an hour old, far past any deploy's
/// timeout.
fn deploy_script(path: &str, sha256: &str, size: u64) -> String {
    let q = shell_quote(path);
    let sha = shell_quote(sha256);
    format!(
        "umask 077; d=\"$(dirname {q})\"; mkdir -p \"$d\" && t={q}.tmp.$$ && trap 'rm -f \"$t\"' EXIT && cat > \"$t\" \
         && {{ [ $(wc -c < \"$t\") -eq {size} ] || {{ echo {BAD_COPY} >&2; exit 1; }}; }} \
         && {{ ! command -v sha256sum >/dev/null || echo {sha}\"  $t\" | sha256sum -c --status || {{ echo {BAD_COPY} >&2; exit 1; }}; }} \
         && chmod 700 \"$t\" && {{ ln \"$t\" {q} 2>/dev/null || test -x {q}; }} && echo RBCOPIED; \
         ls -t \"$d\"/rackbench-* 2>/dev/null | grep -v -e '[.]tmp[.]' -e \"^\"{q}\"$\" | tail -n +3 \
         | while read -r old; do rm -f \"$old\"; done; \
         find \"$d\" -maxdepth 1 -name 'rackbench-*.tmp.*' -mmin +60 -exec rm -f {{}} + 2>/dev/null; true"
    )
}

/// A remote command as its login shell is to run it: sshd hands the command to the
/// account's shell, which may be fish or tcsh, where our scripts' `${X:-y}`, `$(...)`
/// and functions are syntax errors. `/bin/sh` runs it instead. The script (one line:
/// csh takes no newline inside quotes) is single-quoted with each quote and backslash
/// outside the quotes, backslash-escaped: fish reads `\'` and `\\` inside single
/// quotes as escapes, and sh does not, so only that form reads the same to sh, bash,
/// zsh, fish and tcsh.
fn in_sh(script: &str) -> String {
    debug_assert!(!script.contains('\n'), "a remote script is one line");
    let mut q = String::with_capacity(script.len() + 16);
    q.push('\'');
    for c in script.chars() {
        match c {
            '\'' => q.push_str("'\\''"),
            '\\' => q.push_str("'\\\\'"),
            c => q.push(c),
        }
    }
    q.push('\'');
    format!("exec /bin/sh -c {q}")
}

/// Single-quote for a POSIX shell.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

fn wait_with_timeout(child: Child, timeout: Duration) -> anyhow::Result<std::process::Output> {
    wait_for(child, timeout, false)
}

/// [`wait_with_timeout`] that also ends the command (killed, an error saying why) when
/// the run is asked to stop: connecting and copying the binary to a slow host give way
/// to Ctrl-C at once rather than after their timeouts (up to 300 s for a copy).
fn wait_stoppable(child: Child, timeout: Duration) -> anyhow::Result<std::process::Output> {
    wait_for(child, timeout, true)
}

fn wait_for(
    mut child: Child,
    timeout: Duration,
    stoppable: bool,
) -> anyhow::Result<std::process::Output> {
    let deadline = Instant::now() + timeout;
    // Drain the pipes on threads so a chatty child cannot block on a full pipe.
    let mut so = child.stdout.take();
    let mut se = child.stderr.take();
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        if let Some(s) = so.as_mut() {
            let _ = std::io::Read::read_to_end(s, &mut v);
        }
        v
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        if let Some(s) = se.as_mut() {
            let _ = std::io::Read::read_to_end(s, &mut v);
        }
        v
    });
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(std::process::Output {
                status,
                stdout: t_out.join().unwrap_or_default(),
                stderr: t_err.join().unwrap_or_default(),
            });
        }
        if Instant::now() > deadline {
            kill_group(&mut child);
            bail!("timed out after {} s", timeout.as_secs());
        }
        if stoppable && engine::stop::stop_requested() {
            kill_group(&mut child);
            bail!("stopped: {}", engine::stop::stop_cause());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Turn ssh's complaint into an error that says what to do. The commands it suggests
/// name `user_config` (`--ssh-config`) when there is one, and the known_hosts file ssh
/// itself named, so that they act on the files this run read.
pub fn classify(
    dest: &str,
    stderr: &str,
    code: Option<i32>,
    user_config: Option<&Path>,
) -> anyhow::Error {
    let s = stderr.trim();
    let said = s
        .lines()
        .rfind(|l| !l.trim().is_empty())
        .unwrap_or("")
        .to_string();
    // ssh's lines but the one matched (`Permission denied (publickey).`, `terminating, 1
    // bad configuration options`): the cause it gave before it (`no such identity:
    // /keys/lab: No such file or directory`, `FILE: line 89: Bad configuration option:
    // bogusoption`) was dropped, and the advice read as if the key or host were at fault.
    let before = |last: &str| -> String {
        let lines: Vec<String> = s
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.contains(last))
            .take(3)
            .map(model::printable)
            .collect();
        match lines.as_slice() {
            [] => String::new(),
            l => format!(" (ssh said: {})", l.join("; ")),
        }
    };
    let ssh = match user_config {
        Some(f) => format!("ssh -F {}", shell_quote(&f.to_string_lossy())),
        None => "ssh".to_string(),
    };
    if s.contains("REMOTE HOST IDENTIFICATION HAS CHANGED") {
        // ssh's own "remove with: ssh-keygen -f FILE -R HOST" names the file and the
        // name the key is kept under; else "Offending ED25519 key in FILE:LINE".
        let remove = match s
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with("ssh-keygen -f "))
        {
            Some(own) => model::printable(own),
            None => match offending_known_hosts(s) {
                Some(file) => format!("ssh-keygen -f {} -R {dest}", shell_quote(file)),
                None => format!("ssh-keygen -R {dest}"),
            },
        };
        return anyhow::anyhow!(
            "{dest}: its ssh host key has CHANGED since it was recorded in known_hosts: refusing it. \
             If the change is expected (a reinstalled host), remove the old key with `{remove}` \
             and check the new one with `{ssh} {dest}` once; if it is not expected, do not \
             connect: someone may be between this machine and the host"
        );
    }
    if s.contains("Host key verification failed")
        || s.contains("No ED25519 host key is known")
        || s.contains("host key is known for")
    {
        return anyhow::anyhow!(
            "{dest}: its ssh host key is not in known_hosts, and rackbench never accepts keys itself. \
             Run `{ssh} {dest}` once and check the fingerprint, or add it with \
             `ssh-keyscan {dest} >> ~/.ssh/known_hosts` after checking it{}",
            if user_config.is_some() {
                " (or to the UserKnownHostsFile your --ssh-config names)"
            } else {
                ""
            }
        );
    }
    if s.contains("Permission denied") {
        return anyhow::anyhow!(
            "{dest}: ssh could not log in without a prompt (BatchMode){}. Set up key login \
             (`ssh-copy-id {dest}`) or load your key in ssh-agent, then check with `{ssh} {dest} true`",
            before("Permission denied")
        );
    }
    // ssh refusing its configuration ("terminating, 1 bad configuration options", "Bad
    // configuration option", "no argument after keyword"): the file is wrong, not the
    // host (acceptance K, F8).
    if s.contains("bad configuration option")
        || s.contains("Bad configuration option")
        || s.contains("no argument after keyword")
    {
        let said = match before("terminating,") {
            b if b.is_empty() => format!(" ({said})"),
            b => b,
        };
        return anyhow::anyhow!(
            "ssh refused its configuration{said}: mend {}, then `rackbench hosts check {dest}{}`",
            match user_config {
                Some(f) => format!("the file given with --ssh-config, {}", f.display()),
                None => "your ~/.ssh/config".to_string(),
            },
            match user_config {
                Some(f) => format!(" --ssh-config {}", shell_quote(&f.to_string_lossy())),
                None => String::new(),
            }
        );
    }
    if s.contains("Could not resolve hostname") {
        return anyhow::anyhow!(
            "{dest}: unknown host name ({said}); check the name or {}",
            match user_config {
                Some(f) => format!("the Host entries of {}", f.display()),
                // The alias may be in another file (test hosts', a lab's): say how to
                // give it.
                None => "your ~/.ssh/config, or give the file whose Host entry names it \
                         with --ssh-config FILE"
                    .to_string(),
            }
        );
    }
    if s.contains("Connection refused")
        || s.contains("timed out")
        || s.contains("No route to host")
        || s.contains("Network is unreachable")
        || s.contains("Connection closed")
        || code == Some(255)
    {
        return anyhow::anyhow!(
            "{dest} is unreachable over ssh: {said}. Check that the host is up and its sshd \
             listens where {} says (`{ssh} {dest} true` shows ssh's own error), then \
             `rackbench hosts check {dest}{}`",
            match user_config {
                Some(f) => f.display().to_string(),
                None => "your ~/.ssh/config".to_string(),
            },
            match user_config {
                Some(f) => format!(" --ssh-config {}", shell_quote(&f.to_string_lossy())),
                None => String::new(),
            }
        );
    }
    anyhow::anyhow!(
        "{dest}: the remote command failed (exit {}): {said}",
        code.map_or("by signal".to_string(), |c| c.to_string())
    )
}

/// The known_hosts file ssh named as holding the key that no longer matches.
fn offending_known_hosts(stderr: &str) -> Option<&str> {
    stderr.lines().find_map(|l| {
        let rest = l.trim().strip_prefix("Offending ")?;
        let (_, file) = rest.split_once(" key in ")?;
        let (file, line) = file.rsplit_once(':')?;
        line.trim().parse::<u32>().ok()?;
        Some(file)
    })
}

/// Kill ssh `child` and what it started, and reap it: an ssh of [`command`] leads its
/// own process group, so a ProxyCommand or ProxyJump it started goes with it. The child
/// itself is killed too: one that leads no group of its own (`-O exit` in
/// [`Ssh::close`]) is not reached by the group's kill, and the wait would never end.
pub(crate) fn kill_group(child: &mut Child) {
    // SAFETY: kill(2) on our child's group.
    unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every remote command reads the same whatever the account's login shell: sshd
    /// runs it with that shell's `-c`, and a probe under fish or tcsh was a syntax
    /// error. The probe, a deploy (the binary on stdin) and the agent's start, each as a
    /// login shell would be handed it.
    #[test]
    fn remote_commands_run_under_any_login_shell() {
        let home = tempfile::tempdir().unwrap();
        let bin = b"\x7fELF not really";
        use sha2::Digest;
        let sha = format!("{:x}", sha2::Sha256::digest(bin));
        for shell in ["sh", "bash", "zsh", "tcsh", "fish"] {
            let Some(sh) = ["/usr/bin", "/bin"]
                .iter()
                .map(|d| Path::new(d).join(shell))
                .find(|p| p.exists())
            else {
                assert!(
                    shell == "zsh",
                    "{shell} is not installed: bash scripts/install-deps.sh installs it"
                );
                continue;
            };
            let cache = home.path().join(shell);
            let run = |script: &str, input: &[u8]| {
                let mut c = std::process::Command::new(&sh);
                c.arg("-c")
                    .arg(in_sh(script))
                    .env("HOME", home.path())
                    .env("XDG_CACHE_HOME", &cache);
                run_with_input(c, input)
            };
            let name = cache_name(&sha);
            let (out, err) = run(&probe_script(&name), b"");
            assert!(
                out.starts_with("RBPROBE ") && out.contains(" absent "),
                "{shell}: {out} {err}"
            );
            let path = cache.join("rackbench").join(&name);
            let (out, err) = run(
                &deploy_script(path.to_str().unwrap(), &sha, bin.len() as u64),
                bin,
            );
            assert!(out.contains("RBCOPIED"), "{shell}: {out} {err}");
            assert_eq!(std::fs::read(&path).unwrap(), bin);
            let (out, err) = run(&probe_script(&name), b"");
            assert!(out.contains(" present "), "{shell}: {out} {err}");
            let (out, err) = run(&format!("exec {} it\\'s", shell_quote("/bin/echo")), b"");
            // A quote and a backslash in a command, as shell_quote writes a name.
            assert_eq!(out, "it's\n", "{shell}: {err}");
        }
    }

    /// Run the deploy script here with `sh`, `input` on its stdin, and only the tools in
    /// `tools` on its PATH: (stdout, stderr).
    fn deploy_here(path: &Path, want: &[u8], input: &[u8], tools: &[&str]) -> (String, String) {
        use sha2::Digest;
        let bin = path.parent().unwrap().with_file_name("bin");
        std::fs::create_dir_all(&bin).unwrap();
        for t in tools {
            let found = ["/usr/bin", "/bin"]
                .iter()
                .map(|d| Path::new(d).join(t))
                .find(|p| p.exists())
                .unwrap_or_else(|| panic!("{t} is not installed"));
            let _ = std::os::unix::fs::symlink(found, bin.join(t));
        }
        let sha = format!("{:x}", sha2::Sha256::digest(want));
        let script = deploy_script(path.to_str().unwrap(), &sha, want.len() as u64);
        let mut c = std::process::Command::new("/bin/sh");
        c.arg("-c").arg(script).env_clear().env("PATH", &bin);
        run_with_input(c, input)
    }

    /// Run `c` with `input` on its stdin: (stdout, stderr).
    fn run_with_input(mut c: std::process::Command, input: &[u8]) -> (String, String) {
        let mut child = c
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child.stdin.take().unwrap().write_all(input).unwrap();
        let out = child.wait_with_output().unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (text(&out.stdout), text(&out.stderr))
    }

    #[test]
    fn a_copy_cut_short_is_never_published_even_without_sha256sum() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("cache/rackbench-abc");
        let want: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let base = [
            "dirname", "mkdir", "cat", "wc", "chmod", "ln", "ls", "grep", "tail", "rm",
        ];
        let with_sha: Vec<&str> = base.iter().copied().chain(["sha256sum"]).collect();
        for tools in [&base[..], &with_sha[..]] {
            // Cut short: refused, and nothing left under any name.
            let (out, err) = deploy_here(&target, &want, &want[..60_000], tools);
            assert!(
                !out.contains("RBCOPIED") && err.contains("RBBADCOPY"),
                "{out} {err}"
            );
            assert!(!target.exists());
            let left: Vec<_> = std::fs::read_dir(target.parent().unwrap())
                .unwrap()
                .collect();
            assert!(left.is_empty(), "{left:?}");
        }
        // Whole: published, without sha256sum too.
        let (out, err) = deploy_here(&target, &want, &want, &base);
        assert!(out.contains("RBCOPIED"), "{out} {err}");
        assert_eq!(std::fs::read(&target).unwrap(), want);
    }

    /// A half copy a killed deploy left is pruned once it is an hour old; one younger
    /// (another deploy may be writing it) stays.
    #[test]
    fn the_prune_takes_half_copies_an_hour_old() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        std::fs::create_dir_all(&cache).unwrap();
        let old = cache.join("rackbench-old.tmp.123");
        let young = cache.join("rackbench-young.tmp.456");
        for p in [&old, &young] {
            std::fs::write(p, b"half").unwrap();
        }
        let two_hours_ago = std::time::SystemTime::now() - Duration::from_secs(7200);
        std::fs::File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(two_hours_ago)
            .unwrap();
        let want = b"a whole binary".to_vec();
        let tools = [
            "dirname", "mkdir", "cat", "wc", "chmod", "ln", "ls", "grep", "tail", "rm", "find",
        ];
        let (out, err) = deploy_here(&cache.join("rackbench-new"), &want, &want, &tools);
        assert!(out.contains("RBCOPIED"), "{out} {err}");
        assert!(!old.exists(), "an hour-old half copy stayed");
        assert!(young.exists(), "a copy that may be being written went");
    }

    #[test]
    fn a_probe_without_an_architecture_says_what_the_host_printed() {
        let said = |out: &str, err: &str| Said {
            stdout: out.into(),
            stderr: err.into(),
            code: Some(0),
        };
        let p = read_probe("h1", &said("RBPROBE x86_64 present /r/.cache/rb x", "")).unwrap();
        assert_eq!(
            (p.arch.as_str(), p.present, p.path.as_str()),
            ("x86_64", true, "/r/.cache/rb x")
        );
        // What the flaky test host printed: uname died in a preloaded library.
        let e = read_probe(
            "h1",
            &said(
                "RBPROBE  absent /r/.cache/rb\n",
                "libfaketime: In ft_shm_init(), sem_open failed\nlibfaketime: sem_name was /s\n",
            ),
        )
        .unwrap_err();
        let e = format!("{e:#}");
        assert!(
            e.contains("cannot tell its architecture: `uname -m` printed nothing")
                && e.contains("sem_open failed")
                && e.contains("over ssh"),
            "{e}"
        );
        let e = read_probe(
            "h1",
            &said("RBPROBE x86_64 unsafe /tmp/c/rackbench/rb-1", ""),
        )
        .unwrap_err();
        assert!(
            format!("{e:#}").contains("chmod 700 /tmp/c/rackbench"),
            "{e:#}"
        );
        let e = read_probe("h1", &said("RBPROBE \x1b[31m absent /p", "")).unwrap_err();
        assert!(!format!("{e:#}").contains('\x1b'), "{e:#}");
        let e = read_probe("h1", &said("Welcome!\n", "bash: printf: not found\n")).unwrap_err();
        assert!(format!("{e:#}").contains("printf: not found"), "{e:#}");
    }

    /// The probe and the start run by a real shell: a cache directory or binary another
    /// user may write to, or a directory above them, is `unsafe`, never `present`; and
    /// the start checks again, just before it runs the copy.
    #[test]
    fn a_cache_others_may_write_to_is_never_run_from() {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().unwrap();
        let cache = home.path().join("rackbench");
        let probe = || {
            let out = Command::new("sh")
                .arg("-c")
                .arg(probe_script("rackbench-x"))
                .env("XDG_CACHE_HOME", home.path())
                .output()
                .unwrap();
            let line = String::from_utf8(out.stdout).unwrap();
            line.split(' ').nth(2).unwrap().to_string()
        };
        assert_eq!(probe(), "absent");
        let mode = |p: &std::path::Path, m: u32| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap()
        };
        // Absent, under a directory others may write to: unsafe before any copy there.
        mode(home.path(), 0o777);
        assert_eq!(probe(), "unsafe");
        mode(home.path(), 0o1777);
        assert_eq!(probe(), "absent");
        mode(home.path(), 0o700);
        std::fs::create_dir(&cache).unwrap();
        let bin = cache.join("rackbench-x");
        std::fs::write(&bin, "#!/bin/sh\necho \"ran $1 $2 $3\"\n").unwrap();
        mode(&cache, 0o700);
        mode(&bin, 0o700);
        assert_eq!(probe(), "present");
        mode(&cache, 0o777);
        assert_eq!(probe(), "unsafe");
        mode(&cache, 0o700);
        mode(&bin, 0o722);
        assert_eq!(probe(), "unsafe");
        mode(&bin, 0o700);
        // A directory above it that others may write to: the cache could be swapped.
        mode(home.path(), 0o777);
        assert_eq!(probe(), "unsafe");
        // Sticky (as /tmp): no one else renames our entries.
        mode(home.path(), 0o1777);
        assert_eq!(probe(), "present");
        mode(home.path(), 0o700);
        assert_eq!(probe(), "present");
        let start = || {
            Command::new("sh")
                .arg("-c")
                .arg(start_script(&bin.to_string_lossy(), "h 1"))
                .output()
                .unwrap()
        };
        let out = start();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "ran agent --name h 1\n"
        );
        // Turned unsafe after the probe: not run.
        mode(home.path(), 0o777);
        let out = start();
        assert_eq!(out.status.code(), Some(3));
        assert!(out.stdout.is_empty());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(UNSAFE_START) && err.contains("rackbench-x"),
            "{err}"
        );
        mode(home.path(), 0o700);
        mode(&bin, 0o722);
        assert_eq!(start().status.code(), Some(3));
    }

    #[test]
    fn a_damaged_copy_is_copied_once_more_and_then_is_an_error() {
        let ended = |stdout: &str, stderr: &str, code: i32| {
            Ok(Said {
                stdout: stdout.into(),
                stderr: stderr.into(),
                code: Some(code),
            })
        };
        // What the deploy script prints when its check fails: the marker, after whatever
        // the failing command said.
        let bad = || ended("", "wc: died before main\nRBBADCOPY\n", 1);
        let good = || ended("RBCOPIED\n", "", 0);
        // Damaged once: copied again, and that copy is the answer.
        let mut calls = 0;
        let out = copy_retrying_once("h1", None, || {
            calls += 1;
            if calls == 1 {
                bad()
            } else {
                good()
            }
        })
        .unwrap();
        assert_eq!((out.as_str(), calls), ("RBCOPIED\n", 2));
        // Damaged twice: an error after two copies, not three, with what the host said
        // and not our marker.
        let mut calls = 0;
        let e = copy_retrying_once("h1", None, || {
            calls += 1;
            bad()
        })
        .unwrap_err();
        let e = format!("{e:#}");
        assert_eq!(calls, 2);
        assert!(
            e.contains("check twice")
                && e.contains("wc: died before main")
                && !e.contains(BAD_COPY),
            "{e}"
        );
        // Any other failure (a host gone) is not copied again.
        let mut calls = 0;
        let e = copy_retrying_once("h1", None, || {
            calls += 1;
            ended(
                "",
                "ssh: connect to host h1 port 22: Connection refused\n",
                255,
            )
        })
        .unwrap_err();
        assert_eq!(calls, 1);
        assert!(format!("{e:#}").contains("unreachable"), "{e:#}");
    }

    #[test]
    fn destinations_that_could_be_options_or_commands_are_refused() {
        for bad in [
            "",
            "-oProxyCommand=x",
            "a b",
            "h;rm",
            "h$(x)",
            "h`x`",
            "h'q",
        ] {
            assert!(check_destination(bad).is_err(), "{bad}");
        }
        for good in ["server1", "user@10.0.0.5", "rbh1", "ssh://u@h:22", "[::1]"] {
            check_destination(good).unwrap();
        }
    }

    #[test]
    fn ssh_errors_say_what_to_run() {
        let e = classify("h1", "@@@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @@@\nHost key verification failed.", Some(255), None);
        assert!(format!("{e}").contains("ssh-keygen -R h1"), "{e}");
        let e = classify("h1", "No ED25519 host key is known for h1 and you have requested strict checking.\nHost key verification failed.", Some(255), None);
        assert!(format!("{e}").contains("ssh-keyscan h1"), "{e}");
        let e = classify(
            "h1",
            "root@h1: Permission denied (publickey).",
            Some(255),
            None,
        );
        assert!(format!("{e}").contains("ssh-copy-id"), "{e}");
        let e = classify(
            "h1",
            "ssh: connect to host 10.0.0.1 port 22: Connection refused",
            Some(255),
            None,
        );
        assert!(format!("{e}").contains("unreachable"), "{e}");
        // And what to run next (acceptance O, 7: it only quoted ssh).
        assert!(
            format!("{e}").contains("`ssh h1 true`")
                && format!("{e}").ends_with("`rackbench hosts check h1`"),
            "{e}"
        );
        let f = Path::new("/srv/lab ssh.cfg");
        let e = classify(
            "h1",
            "ssh: connect to host h1 port 22: No route to host",
            Some(255),
            Some(f),
        );
        assert!(
            format!("{e}").ends_with("`rackbench hosts check h1 --ssh-config '/srv/lab ssh.cfg'`"),
            "{e}"
        );
        // A configuration ssh refuses is the file's fault, not the host's (acceptance K,
        // F8: it read "h1 is unreachable over ssh").
        let e = classify(
            "h1",
            "/srv/lab ssh.cfg: line 3: Bad configuration option: frobnicate\n/srv/lab ssh.cfg: terminating, 1 bad configuration options",
            Some(255),
            Some(f),
        );
        let e = format!("{e}");
        assert!(
            e.starts_with("ssh refused its configuration (")
                && e.contains("mend the file given with --ssh-config, /srv/lab ssh.cfg")
                && !e.contains("unreachable"),
            "{e}"
        );
        // Which line of it: ssh's own, kept (the walk-through read only "terminating").
        assert!(
            e.contains(
                "(ssh said: /srv/lab ssh.cfg: line 3: Bad configuration option: frobnicate)"
            ),
            "{e}"
        );
        // A key file that is not there is the cause ssh gave before its refusal.
        let e = classify(
            "h1",
            "no such identity: /keys/lab: No such file or directory\nuser@h1: Permission denied (publickey).",
            Some(255),
            None,
        );
        assert!(
            format!("{e}").contains(
                "(BatchMode) (ssh said: no such identity: /keys/lab: No such file or directory)."
            ),
            "{e}"
        );
    }

    /// With --ssh-config, the advice acts on the files this run read: the known_hosts
    /// file ssh named, and `ssh -F CONFIG` (a user's plain `ssh-keygen -R` edited
    /// ~/.ssh/known_hosts, and `ssh ALIAS` did not resolve without -F).
    #[test]
    fn ssh_errors_name_the_files_this_run_read() {
        let changed = "@@@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @@@\n\
                       Offending ED25519 key in /srv/kh/known_hosts.lab:4\n  remove with:\n  \
                       ssh-keygen -f \"/srv/kh/known_hosts.lab\" -R \"10.1.0.1\"\n\
                       Host key verification failed.";
        let f = Path::new("/srv/lab ssh.cfg");
        let e = format!("{}", classify("lab1", changed, Some(255), Some(f)));
        assert!(
            e.contains("`ssh-keygen -f \"/srv/kh/known_hosts.lab\" -R \"10.1.0.1\"`"),
            "{e}"
        );
        assert!(e.contains("`ssh -F '/srv/lab ssh.cfg' lab1`"), "{e}");
        assert!(
            e.ends_with("someone may be between this machine and the host"),
            "{e}"
        );
        // Without ssh's own line, the offending file is named.
        let e = format!(
            "{}",
            classify(
                "lab1",
                "REMOTE HOST IDENTIFICATION HAS CHANGED\nOffending RSA key in /k/hosts:12",
                Some(255),
                None
            )
        );
        assert!(e.contains("`ssh-keygen -f '/k/hosts' -R lab1`"), "{e}");
        assert!(e.contains("`ssh lab1`"), "{e}");
        let e = format!(
            "{}",
            classify("lab1", "Host key verification failed.", Some(255), Some(f))
        );
        assert!(e.contains("`ssh -F '/srv/lab ssh.cfg' lab1`"), "{e}");
        assert!(e.contains("UserKnownHostsFile"), "{e}");
        let unresolved = |config| {
            let said = "ssh: Could not resolve hostname lab1: Name or service not known";
            format!("{}", classify("lab1", said, Some(255), config))
        };
        let e = unresolved(Some(f));
        assert!(e.contains("Host entries of /srv/lab ssh.cfg"), "{e}");
        // Without --ssh-config: the option that gives another file is named.
        let e = unresolved(None);
        assert!(e.contains("~/.ssh/config, or give the file"), "{e}");
        assert!(e.contains("--ssh-config FILE"), "{e}");
    }

    #[test]
    fn the_command_keeps_host_key_checking_and_forwards_nothing() {
        let s = Ssh::new(None).unwrap();
        let c = s.command("h1");
        let args: Vec<String> = c
            .get_args()
            .map(|a| a.to_string_lossy().to_string())
            .collect();
        for want in [
            "StrictHostKeyChecking=yes",
            "BatchMode=yes",
            "ForwardAgent=no",
            "ClearAllForwardings=yes",
        ] {
            assert!(
                args.iter().any(|a| a == want),
                "{want} missing from {args:?}"
            );
        }
        // The destination comes after `--`: it can never be read as an option.
        let dd = args.iter().position(|a| a == "--").unwrap();
        assert_eq!(args[dd + 1], "h1");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
    }
}
