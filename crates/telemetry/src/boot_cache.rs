//! What a command prints that cannot change until the host boots again, kept for the rest
//! of the boot: whether this is a container (`systemd-detect-virt --container`). Every run
//! discloses it, and asking costs about 6 ms of CPU (the tool loads systemd's shared
//! library): a fifth of what a short run spends before it measures. Asked once per boot,
//! a run after the first spends none of it. (dmidecode's DIMM table is as lasting, but
//! its output holds serial numbers, which nothing here keeps; it costs 1 ms.)
//!
//! The answers live in a directory only this user can write, on a file system emptied at
//! boot (`/run/rackbench` for root, `$XDG_RUNTIME_DIR/rackbench` otherwise), each under the
//! boot's id (`/proc/sys/kernel/random/boot_id`) and this process's mount and PID
//! namespaces, so an answer of another boot is never read, nor the host's in a container
//! (which shares the boot's id, and may share `/run` or the runtime directory with it).
//! A directory that others could write, that is not this user's, or that is a symbolic
//! link, is not used: the command runs every time then, as it does where there is no such
//! directory. What a failure says is kept when it is the command's own answer (an exit
//! status of 1 to 125, as `systemd-detect-virt` exits 1 for "none"); a command that timed
//! out, could not be found (127) or run (126), or died of a signal, is asked again (the
//! status comes from [`engine::command::probe_status`], not from its message). An answer
//! is written aside and renamed into place; what a run killed in between left is removed
//! by the next write.

use std::io::Write as _;
use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use engine::command::{probe_status, Failed};

/// `probe_status(cmd)`, asked once per boot (see the module doc).
pub fn probe_per_boot(cmd: &str, timeout: Duration) -> Result<String, Failed> {
    match (cache_dir(), this_boot()) {
        (Some(dir), Some(boot)) => probe_cached(cmd, timeout, &dir, &boot),
        _ => probe_status(cmd, timeout),
    }
}

/// This boot as this process sees it: the boot's id and the mount and PID namespaces the
/// process is in. None where any of them cannot be read.
fn this_boot() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let ns = |n: &str| std::fs::read_link(format!("/proc/self/ns/{n}")).ok();
    let (mnt, pid) = (ns("mnt")?, ns("pid")?);
    Some(format!("{} {} {}", id.trim(), mnt.display(), pid.display()))
}

/// Where this user's answers are kept, if there is such a place.
fn cache_dir() -> Option<PathBuf> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return Some(PathBuf::from("/run/rackbench"));
    }
    let runtime = std::env::var_os("XDG_RUNTIME_DIR")?;
    Some(Path::new(&runtime).join("rackbench"))
}

/// `probe_status(cmd)` through the answers kept in `dir` for the boot `boot`.
fn probe_cached(cmd: &str, timeout: Duration, dir: &Path, boot: &str) -> Result<String, Failed> {
    if !private_dir(dir) {
        return probe_status(cmd, timeout);
    }
    let file = dir.join(file_name(cmd));
    if let Some(kept) = read_answer(&file, boot) {
        return kept;
    }
    let answer = probe_status(cmd, timeout);
    let lasting = match &answer {
        Ok(_) => true,
        Err(f) => f.exit_code.is_some_and(|c| (1..=125).contains(&c)),
    };
    if lasting {
        // Not kept is only slower: the command runs again next time.
        let _ = write_answer(dir, &file, boot, &answer);
    }
    answer
}

/// Is `dir` there (made if not), this user's, and writable by no one else?
fn private_dir(dir: &Path) -> bool {
    let _ = std::fs::DirBuilder::new().mode(0o700).create(dir);
    engine::scratch::trusted(dir)
}

/// The file of `cmd`'s answer: its letters and digits, the rest as `_`, and a hash of the
/// whole, so that two commands never share a file.
fn file_name(cmd: &str) -> String {
    use std::hash::{Hash as _, Hasher as _};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    cmd.hash(&mut h);
    let readable: String = cmd
        .chars()
        .take(40)
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("{readable}-{:016x}", h.finish())
}

/// A kept answer: `boot`'s id, `ok` or `err` and the exit status, then what the command
/// printed or what its failure said.
fn read_answer(file: &Path, boot: &str) -> Option<Result<String, Failed>> {
    let text = std::fs::read_to_string(file).ok()?;
    let (id, rest) = text.split_once('\n')?;
    if id != boot {
        return None;
    }
    let (kind, body) = rest.split_once('\n')?;
    if kind == "ok" {
        return Some(Ok(body.to_string()));
    }
    let code = kind.strip_prefix("err ")?.parse().ok()?;
    Some(Err(Failed {
        message: body.to_string(),
        exit_code: Some(code),
    }))
}

/// Keep `answer`, whole or not at all (written aside, then renamed over the old one).
fn write_answer(
    dir: &Path,
    file: &Path,
    boot: &str,
    answer: &Result<String, Failed>,
) -> std::io::Result<()> {
    let (kind, body) = match answer {
        Ok(out) => ("ok".to_string(), out),
        Err(f) => match f.exit_code {
            Some(code) => (format!("err {code}"), &f.message),
            None => return Ok(()),
        },
    };
    remove_stale_temps(dir);
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    write!(tmp, "{boot}\n{kind}\n{body}")?;
    tmp.persist(file).map_err(|e| e.error)?;
    Ok(())
}

/// A temporary file is older than this only when the run writing it was killed between
/// making it and renaming it.
const STALE_TEMP: Duration = Duration::from_secs(60);

/// Remove what killed runs left half-written in `dir` (best effort: a file that cannot be
/// removed is only a few bytes until the next boot).
fn remove_stale_temps(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let temp = e.file_name().to_string_lossy().starts_with(".tmp");
        let age = e
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok()?.elapsed().ok());
        if temp && age.is_some_and(|a| a > STALE_TEMP) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    const T: Duration = Duration::from_secs(5);

    /// A command that notes each time it runs in `log` and prints `out`.
    fn counting(log: &Path, out: &str, status: i32) -> String {
        format!("echo ran >> '{}'; echo {out}; exit {status}", log.display())
    }

    fn runs(log: &Path) -> usize {
        std::fs::read_to_string(log).map_or(0, |s| s.lines().count())
    }

    #[test]
    fn an_answer_is_asked_once_per_boot() {
        let d = tempfile::tempdir().unwrap();
        let (dir, log) = (d.path().join("cache"), d.path().join("log"));
        let cmd = counting(&log, "kvm", 0);
        assert_eq!(probe_cached(&cmd, T, &dir, "boot-a").unwrap(), "kvm\n");
        assert_eq!(probe_cached(&cmd, T, &dir, "boot-a").unwrap(), "kvm\n");
        assert_eq!(runs(&log), 1, "the second call read the kept answer");
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "made private");
        // Another boot asks again, and keeps that boot's answer.
        assert_eq!(probe_cached(&cmd, T, &dir, "boot-b").unwrap(), "kvm\n");
        assert_eq!(runs(&log), 2);
        assert_eq!(probe_cached(&cmd, T, &dir, "boot-b").unwrap(), "kvm\n");
        assert_eq!(runs(&log), 2);
    }

    #[test]
    fn an_exit_status_is_an_answer_and_a_timeout_is_not() {
        let d = tempfile::tempdir().unwrap();
        let (dir, log) = (d.path().join("cache"), d.path().join("log"));
        let none = counting(&log, "none", 1);
        let first = probe_cached(&none, T, &dir, "b").unwrap_err();
        assert_eq!(first.exit_code, Some(1), "{}", first.message);
        assert!(
            first.message.contains("(exit status: 1)"),
            "{}",
            first.message
        );
        assert_eq!(probe_cached(&none, T, &dir, "b").unwrap_err(), first);
        assert_eq!(runs(&log), 1);

        let slow = format!("echo ran >> '{}'; sleep 5", log.display());
        let short = Duration::from_millis(100);
        assert!(probe_cached(&slow, short, &dir, "b").is_err());
        assert!(probe_cached(&slow, short, &dir, "b").is_err());
        assert_eq!(runs(&log), 3, "a timeout is asked again");

        // The shell's "not found" is no answer of the command's.
        let missing = counting(&log, "x", 127);
        assert!(probe_cached(&missing, T, &dir, "b").is_err());
        assert!(probe_cached(&missing, T, &dir, "b").is_err());
        assert_eq!(runs(&log), 5, "a command not found is asked again");

        // Nor is a death by a signal, whatever the shell had printed.
        let killed = format!("echo ran >> '{}'; echo none; kill -9 $$", log.display());
        assert!(probe_cached(&killed, T, &dir, "b").is_err());
        assert!(probe_cached(&killed, T, &dir, "b").is_err());
        assert_eq!(runs(&log), 7, "a command killed is asked again");

        // What a killed run left half-written goes when the next answer is written; what
        // another run is writing now stays.
        let (old, new) = (dir.join(".tmpOLD"), dir.join(".tmpNEW"));
        std::fs::write(&old, "b\nok\nhalf").unwrap();
        std::fs::write(&new, "b\nok\nhalf").unwrap();
        let long_ago = std::time::SystemTime::now() - 2 * STALE_TEMP;
        std::fs::File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(long_ago)
            .unwrap();
        probe_cached(&counting(&log, "other", 0), T, &dir, "b").unwrap();
        assert!(!old.exists() && new.exists());
    }

    #[test]
    fn this_boot_names_the_namespaces_too() {
        let boot = this_boot().unwrap();
        assert_eq!(boot.split(' ').count(), 3, "{boot}");
        assert!(boot.contains("mnt:[") && boot.contains("pid:["), "{boot}");
        assert!(!boot.contains('\n'));
    }

    /// A directory others can write, and a symbolic link to a private one: the command
    /// runs every time, and nothing is kept in either.
    #[test]
    fn a_directory_not_ours_alone_is_not_used() {
        let d = tempfile::tempdir().unwrap();
        let (open, real, link) = (
            d.path().join("open"),
            d.path().join("real"),
            d.path().join("link"),
        );
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&real)
            .unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        for (dir, holds) in [(&open, &open), (&link, &real)] {
            let log = d.path().join("log");
            let _ = std::fs::remove_file(&log);
            let cmd = counting(&log, "x", 0);
            probe_cached(&cmd, T, dir, "b").unwrap();
            probe_cached(&cmd, T, dir, "b").unwrap();
            assert_eq!(runs(&log), 2, "{}", dir.display());
            let kept = std::fs::read_dir(holds).unwrap().count();
            assert_eq!(kept, 0, "nothing kept in {}", holds.display());
        }
    }

    #[test]
    fn a_kept_answer_of_another_shape_is_asked_again() {
        let d = tempfile::tempdir().unwrap();
        let (dir, log) = (d.path().join("cache"), d.path().join("log"));
        let cmd = counting(&log, "y", 0);
        probe_cached(&cmd, T, &dir, "b").unwrap();
        std::fs::write(dir.join(file_name(&cmd)), "b\nmaybe\nz").unwrap();
        assert_eq!(probe_cached(&cmd, T, &dir, "b").unwrap(), "y\n");
        assert_eq!(runs(&log), 2);
        // A failure kept without its exit status (an older shape) is asked again too.
        std::fs::write(dir.join(file_name(&cmd)), "b\nerr\nnone").unwrap();
        assert_eq!(probe_cached(&cmd, T, &dir, "b").unwrap(), "y\n");
        assert_eq!(runs(&log), 3);
        assert_ne!(file_name("dmidecode -t 17"), file_name("dmidecode -t 16"));
    }
}
