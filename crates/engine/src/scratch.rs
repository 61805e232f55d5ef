//! Scratch space: every temporary directory a rackbench process makes (redis-server's and
//! nginx's working directories, throwaway PostgreSQL clusters of 300-400 MB, ssh control
//! sockets) lives under one root of its own, `$TMPDIR/rackbench.PID.START/`, which also
//! says whose it is (`owner`: pid, start time, boot id and [`process::place`]) and which
//! process groups it launched (`groups`: one `PGID START` line each).
//!
//! A process that ends normally removes its root ([`remove_own`]). One killed outright
//! (kill -9, out of memory, the machine rebooted) cannot, and its reaper may have died
//! with it (`pkill -9 rackbench` reaches both): so every command begins with [`sweep`],
//! which finds roots whose owner is gone, kills what is left of the process groups they
//! record, and removes them. Nothing depends on a process surviving to clean up after
//! itself. Only roots owned by this user and writable by no one else are trusted: a file
//! another user could write never decides what is killed. A root of another place (a
//! container sharing /tmp, `unshare --pid`) is left to a rackbench there: its pids name
//! other processes here, so its owner would look dead while it runs.
//!
//! Once [`remove_own`] has run, the root is not made again: a thread still at work while
//! the process exits (a probe recording its group) would leave a root no one removes,
//! and, written while a sweep removed it, a root without its `owner` (found in CI).
//! A root that has lost its `owner` all the same is judged by its name
//! (`rackbench.PID.START`): removed once that process is gone and the root has not
//! changed for [`UNOWNED_GRACE`], killing nothing.

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::Context as _;
use model::process::{self, ProcessId};

const PREFIX: &str = "rackbench.";

/// How long a root without its `owner` is left alone before its name alone decides. The
/// owner is written right after the root is made, so a root changed this recently may be
/// one being made, perhaps in another pid namespace, where the name's pid means another
/// process than here: a name cannot tell places apart, its age can. Accepted: a root of
/// another place that lost its owner (a sweep of an older rackbench) and sits unchanged
/// this long is removed.
const UNOWNED_GRACE: Duration = Duration::from_secs(60);

/// This process's root (made on first use), and what of this process lives in it.
static ROOT: Mutex<Scratch> = Mutex::new(Scratch::new());

struct Scratch {
    root: Option<PathBuf>,
    /// [`ScratchDir`]s alive.
    dirs: usize,
    /// Process groups launched and not yet stopped.
    groups: Vec<u32>,
    /// [`remove_own`] has run: the process is ending, no root is made again.
    closed: bool,
}

impl Scratch {
    const fn new() -> Scratch {
        Scratch {
            root: None,
            dirs: 0,
            groups: Vec::new(),
            closed: false,
        }
    }

    /// Remove the root (what is still inside goes too) and make none again.
    fn close(&mut self) {
        self.closed = true;
        if let Some(root) = self.root.take() {
            let _ = std::fs::remove_dir_all(root);
        }
    }

    /// Remove the root once nothing of this process lives in it (a library user, a
    /// test binary, leaves nothing behind; the next use makes a new one).
    fn release_if_unused(&mut self) {
        if self.dirs == 0 && self.groups.is_empty() {
            if let Some(root) = self.root.take() {
                let _ = std::fs::remove_dir_all(root);
            }
        }
    }
}

fn scratch() -> std::sync::MutexGuard<'static, Scratch> {
    ROOT.lock().unwrap_or_else(|e| e.into_inner())
}

/// A private temporary directory (mode 0700) under this process's root: removed when
/// dropped (the root too once it is unused); a killed process's is removed by the next
/// command's [`sweep`].
pub struct ScratchDir {
    dir: Option<tempfile::TempDir>,
}

impl ScratchDir {
    pub fn path(&self) -> &Path {
        self.dir.as_ref().map_or(Path::new(""), |d| d.path())
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let mut s = scratch();
        drop(self.dir.take());
        s.dirs = s.dirs.saturating_sub(1);
        s.release_if_unused();
    }
}

/// A new [`ScratchDir`] named `prefix` and random letters.
pub fn tempdir(prefix: &str) -> anyhow::Result<ScratchDir> {
    let mut s = scratch();
    let root = root_in(&mut s, &std::env::temp_dir())
        .context("creating rackbench's scratch directory in the temp dir")?;
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(&root)
        .with_context(|| format!("creating a temporary directory in {}", root.display()))?;
    s.dirs += 1;
    Ok(ScratchDir { dir: Some(dir) })
}

/// Record a process group this process launched (its leader's pid), so that a [`sweep`]
/// after this process died can kill what is left of it.
pub fn record_group(pgid: u32) {
    let Some(stat) = process::stat_of(pgid) else {
        return;
    };
    let mut s = scratch();
    let Ok(root) = root_in(&mut s, &std::env::temp_dir()) else {
        return;
    };
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(root.join("groups"))
    {
        let _ = writeln!(f, "{pgid} {}", stat.starttime);
    }
    s.groups.push(pgid);
}

/// A recorded group was stopped (killed and reaped): it no longer keeps the root.
pub fn forget_group(pgid: u32) {
    let mut s = scratch();
    s.groups.retain(|g| *g != pgid);
    s.release_if_unused();
}

/// Remove this process's root (at a normal exit; what is still inside goes too), for
/// good: a later [`tempdir`] fails and a later [`record_group`] records nothing.
pub fn remove_own() {
    scratch().close();
}

/// This process's root in `tmp`, made on first use (not once closed).
fn root_in(s: &mut Scratch, tmp: &Path) -> std::io::Result<PathBuf> {
    if let Some(r) = s.root.as_ref() {
        return Ok(r.clone());
    }
    if s.closed {
        return Err(std::io::Error::other(
            "rackbench is exiting: its scratch directory is gone",
        ));
    }
    let me = ProcessId::current().ok_or_else(|| std::io::Error::other("no /proc/self/stat"))?;
    let root = tmp.join(format!("{PREFIX}{}.{}", me.pid, me.starttime));
    // 0711: others may pass through (a PostgreSQL cluster run as `postgres` lives below)
    // but not list; each directory inside is 0700 with a random name.
    match std::fs::DirBuilder::new().mode(0o711).create(&root) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && trusted(&root) => {}
        Err(e) => return Err(e),
    }
    std::fs::write(
        root.join("owner"),
        format!(
            "{} {} {} {}\n",
            me.pid,
            me.starttime,
            me.boot_id,
            process::place()
        ),
    )?;
    s.root = Some(root.clone());
    Ok(root)
}

/// What a [`sweep`] did after one dead process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cleaned {
    pub owner_pid: u32,
    pub processes_killed: usize,
    pub bytes_removed: u64,
}

impl std::fmt::Display for Cleaned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cleaned up after rackbench pid {} that did not exit cleanly: removed {} of temporary files",
            self.owner_pid,
            human_bytes(self.bytes_removed)
        )?;
        match self.processes_killed {
            0 => {}
            1 => write!(f, ", stopped 1 leftover server process")?,
            n => write!(f, ", stopped {n} leftover server processes")?,
        }
        Ok(())
    }
}

fn human_bytes(b: u64) -> String {
    match b {
        0..=9_999 => format!("{b} B"),
        10_000..=9_999_999 => format!("{:.0} kB", b as f64 / 1e3),
        _ => format!("{:.0} MB", b as f64 / 1e6),
    }
}

/// Clean up after every rackbench process of this user that died without doing so.
pub fn sweep() -> Vec<Cleaned> {
    sweep_in(&std::env::temp_dir())
}

/// [`sweep`] in `tmp` (tests use their own).
pub fn sweep_in(tmp: &Path) -> Vec<Cleaned> {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return Vec::new();
    };
    let here = process::place();
    let mut cleaned = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().starts_with(PREFIX) {
            continue;
        }
        let root = e.path();
        if !trusted(&root) {
            continue;
        }
        let (owner_pid, processes_killed) = match read_owner(&root) {
            // Another pid namespace or machine of this boot: whether its owner lives
            // cannot be told from here, and its groups' ids name other processes. Left
            // for a rackbench there to judge. Of another boot nothing runs, wherever it
            // was (a hostname changed since, a container gone): removed below, as before.
            Some((owner, Some(place)))
                if place != here
                    && Some(owner.boot_id.as_str()) == process::boot_id().as_deref() =>
            {
                continue
            }
            Some((owner, _)) if owner.is_alive() => continue,
            Some((owner, _)) => {
                let this_boot = Some(owner.boot_id.as_str()) == process::boot_id().as_deref();
                // Another boot: nothing of it runs.
                (owner.pid, if this_boot { kill_groups(&root) } else { 0 })
            }
            // No owner (or not a whole one): the name says whose it was. Alive, or making
            // it (the owner comes just after the directory, see [`UNOWNED_GRACE`]): left
            // alone. Gone: removed, killing nothing, since without the owner's boot and
            // place its groups' ids mean nothing (its reaper killed them as it died).
            None => match named_owner(&name.to_string_lossy()) {
                Some((pid, start))
                    if ProcessId::of(pid).is_none_or(|p| p.starttime != start)
                        && unchanged_for(&root, UNOWNED_GRACE) =>
                {
                    (pid, 0)
                }
                _ => continue,
            },
        };
        let bytes_removed = disk_usage(&root);
        if remove_settled(&root) {
            cleaned.push(Cleaned {
                owner_pid,
                processes_killed,
                bytes_removed,
            });
        }
    }
    cleaned
}

/// A directory (not a symlink) owned by this user that no one else may write to.
pub fn trusted(root: &Path) -> bool {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    std::fs::symlink_metadata(root)
        .is_ok_and(|m| m.is_dir() && m.uid() == me && m.mode() & 0o022 == 0)
}

/// Remove `root`, again after a moment if something was written into it meanwhile (a
/// dying process's last thread finishing a write): true once it is gone.
fn remove_settled(root: &Path) -> bool {
    for attempt in 0..3 {
        if attempt > 0 {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        if std::fs::remove_dir_all(root).is_ok() || !root.exists() {
            return true;
        }
    }
    false
}

/// The pid and start time a root's name gives (`rackbench.PID.START`).
fn named_owner(name: &str) -> Option<(u32, u64)> {
    let (pid, start) = name.strip_prefix(PREFIX)?.split_once('.')?;
    Some((pid.parse().ok()?, start.parse().ok()?))
}

/// Whether `root` has not changed (no entry made or removed in it) for `age`. A time
/// in the future (the clock set back) is recent.
fn unchanged_for(root: &Path, age: Duration) -> bool {
    std::fs::symlink_metadata(root)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t.elapsed().is_ok_and(|e| e >= age))
}

/// A root's owner (`PID START BOOT PLACE`), and its place when the file gives one: an
/// owner written before places were has none, and is taken to be of this place, as it
/// was then. None unless the line is whole (ends in its newline): one still being
/// written would read as a process of this place.
fn read_owner(root: &Path) -> Option<(ProcessId, Option<String>)> {
    let text = std::fs::read_to_string(root.join("owner")).ok()?;
    // The place (a hostname) is the rest of the line, spaces and all.
    let mut f = text.strip_suffix('\n')?.splitn(4, ' ');
    let owner = ProcessId {
        pid: f.next()?.parse().ok()?,
        starttime: f.next()?.parse().ok()?,
        boot_id: f.next().filter(|b| !b.is_empty())?.to_string(),
    };
    let place = f.next().filter(|p| !p.is_empty()).map(str::to_string);
    Some((owner, place))
}

/// SIGKILL what is left of every group `root` records; the number of processes killed.
///
/// A group is ours when its leader still runs with the start time recorded, or when its
/// leader is gone and the group lives on (the kernel does not give a pid out again while
/// a process group of that id exists, so no newer group can have it). Members are
/// matched by their own start time too: none may be older than the leader was.
fn kill_groups(root: &Path) -> usize {
    let Ok(text) = std::fs::read_to_string(root.join("groups")) else {
        return 0;
    };
    let mut killed = 0;
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let (Some(Ok(pgid)), Some(Ok(start))) = (
            f.next().map(str::parse::<u32>),
            f.next().map(str::parse::<u64>),
        ) else {
            continue;
        };
        if pgid <= 1 {
            continue;
        }
        if let Some(leader) = process::stat_of(pgid) {
            if leader.starttime != start {
                continue; // the pid now belongs to someone else
            }
        }
        let members: Vec<u32> = members_of(pgid)
            .into_iter()
            .filter(|(_, s)| s.starttime >= start && s.state != 'Z')
            .map(|(pid, _)| pid)
            .collect();
        for pid in &members {
            // SAFETY: kill(2) on a process of a group this user's dead rackbench launched.
            if unsafe { libc::kill(*pid as i32, libc::SIGKILL) } == 0 {
                killed += 1;
            }
        }
    }
    killed
}

/// Processes whose process group is `pgid`.
fn members_of(pgid: u32) -> Vec<(u32, process::Stat)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| Some((pid, process::stat_of(pid)?)))
        .filter(|(_, s)| s.pgrp == pgid)
        .collect()
}

/// Bytes in files under `dir` (what removing it frees, roughly; what cannot be read
/// counts as nothing).
pub fn disk_usage(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => disk_usage(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
            _ => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt as _;

    /// A `sleep 60` leading a process group of its own, and its start time.
    fn sleeping_group() -> (std::process::Child, u64) {
        let child = std::process::Command::new("sleep")
            .arg("60")
            .process_group(0)
            .spawn()
            .unwrap();
        let start = process::stat_of(child.id()).unwrap().starttime;
        (child, start)
    }

    /// A root as a killed process leaves it: an owner that no longer runs, a big file, and
    /// a process group still running (a `sleep` in its own group, standing for nginx's
    /// workers after their master and the reaper died).
    #[test]
    fn a_dead_processs_root_and_leftover_group_are_cleaned_and_a_live_ones_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let dead = tmp.path().join(format!("{PREFIX}1.1"));
        std::fs::DirBuilder::new()
            .mode(0o711)
            .create(&dead)
            .unwrap();
        let boot = process::boot_id().unwrap();
        // pid 1 with a start time it never had: a process that is gone. Its owner is one
        // of before places were written: of this place.
        std::fs::write(dead.join("owner"), format!("1 999999999 {boot}\n")).unwrap();
        std::fs::create_dir(dead.join("rackbench-oltp-x")).unwrap();
        std::fs::write(dead.join("rackbench-oltp-x/base"), vec![0u8; 3_000_000]).unwrap();
        let (mut orphan, start) = sleeping_group();
        std::fs::write(dead.join("groups"), format!("{} {start}\n", orphan.id())).unwrap();
        // A live owner's root (ours) is left alone.
        let me = ProcessId::current().unwrap();
        let live = tmp
            .path()
            .join(format!("{PREFIX}{}.{}", me.pid, me.starttime));
        std::fs::DirBuilder::new()
            .mode(0o711)
            .create(&live)
            .unwrap();
        std::fs::write(
            live.join("owner"),
            format!("{} {} {}\n", me.pid, me.starttime, me.boot_id),
        )
        .unwrap();
        // A root anyone may write to is not trusted, whatever it says.
        let open = tmp.path().join(format!("{PREFIX}2.2"));
        std::fs::DirBuilder::new()
            .mode(0o777)
            .create(&open)
            .unwrap();
        std::fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o777))
            .unwrap();
        std::fs::write(open.join("owner"), format!("2 2 {boot}\n")).unwrap();

        let cleaned = sweep_in(tmp.path());
        assert_eq!(cleaned.len(), 1, "{cleaned:?}");
        assert_eq!(cleaned[0].processes_killed, 1);
        assert!(cleaned[0].bytes_removed >= 3_000_000);
        assert!(!dead.exists());
        assert!(live.exists() && open.exists());
        let status = orphan.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(libc::SIGKILL)
        );
    }

    /// What was found in CI: a root holding only `groups`, its owner removed by a sweep
    /// while the process's last thread wrote it. Its name says whose it was.
    #[test]
    fn a_root_without_its_owner_is_judged_by_its_name_and_nothing_is_killed() {
        let tmp = tempfile::tempdir().unwrap();
        let private_dir = |name: String| {
            let d = tmp.path().join(name);
            std::fs::DirBuilder::new().mode(0o711).create(&d).unwrap();
            d
        };
        let (mut bystander, start) = sleeping_group();
        // pid 1 with a start time it never had: gone, and unchanged for longer than a
        // root is being made. Its groups are not trusted.
        let gone = private_dir(format!("{PREFIX}1.999999999"));
        std::fs::write(gone.join("groups"), format!("{} {start}\n", bystander.id())).unwrap();
        std::fs::File::open(&gone)
            .unwrap()
            .set_modified(std::time::SystemTime::now() - 2 * UNOWNED_GRACE)
            .unwrap();
        // Its pid not ours, but just made: maybe a root being made in another pid
        // namespace, where the pid is another process's. Kept.
        let just_made = private_dir(format!("{PREFIX}1.999999998"));
        // Ours, as it is being made (the owner not yet written): alive, kept.
        let me = ProcessId::current().unwrap();
        let making = private_dir(format!("{PREFIX}{}.{}", me.pid, me.starttime));
        // A name that says nothing: kept.
        let unnamed = private_dir(format!("{PREFIX}x"));

        let cleaned = sweep_in(tmp.path());
        assert_eq!(cleaned.len(), 1, "{cleaned:?}");
        assert_eq!((cleaned[0].owner_pid, cleaned[0].processes_killed), (1, 0));
        assert!(!gone.exists());
        assert!(making.exists() && unnamed.exists() && just_made.exists());
        assert!(
            bystander.try_wait().unwrap().is_none(),
            "a process was killed"
        );
        bystander.kill().unwrap();
        bystander.wait().unwrap();
    }

    /// A rackbench in another pid namespace (a container sharing /tmp, `unshare --pid`)
    /// looks dead from here, its pids being other processes': its root (a live server's
    /// data) is neither removed nor are the groups it records killed. One of this place
    /// whose owner is gone is cleaned as ever.
    #[test]
    fn a_root_of_another_place_is_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let boot = process::boot_id().unwrap();
        let private_dir = |name: &str| {
            let d = tmp.path().join(name);
            std::fs::DirBuilder::new().mode(0o711).create(&d).unwrap();
            d
        };
        let (mut bystander, start) = sleeping_group();
        // pid 1 with a start time it never had here: the other namespace's init.
        let elsewhere = private_dir(&format!("{PREFIX}1.999999999"));
        std::fs::write(
            elsewhere.join("owner"),
            format!("1 999999999 {boot} container-7/pid:[4026532999]\n"),
        )
        .unwrap();
        std::fs::write(
            elsewhere.join("groups"),
            format!("{} {start}\n", bystander.id()),
        )
        .unwrap();
        std::fs::create_dir(elsewhere.join("rackbench-kv-x")).unwrap();
        let here = private_dir(&format!("{PREFIX}1.999999998"));
        std::fs::write(
            here.join("owner"),
            format!("1 999999998 {boot} {}\n", process::place()),
        )
        .unwrap();
        // Of another boot, wherever it was (a hostname changed since): nothing of it
        // runs, and it is removed as it was before places were kept.
        let before = private_dir(&format!("{PREFIX}1.999999997"));
        std::fs::write(
            before.join("owner"),
            "1 999999997 another-boot old-name/pid:[4026531836]\n",
        )
        .unwrap();

        let cleaned = sweep_in(tmp.path());
        assert_eq!(cleaned.len(), 2, "{cleaned:?}");
        assert!(!here.exists() && !before.exists());
        assert!(elsewhere.join("rackbench-kv-x").is_dir());
        assert!(
            bystander.try_wait().unwrap().is_none(),
            "a group of another place was killed"
        );
        bystander.kill().unwrap();
        bystander.wait().unwrap();
    }

    /// After the exit's cleanup no root is made again: a thread still at work as the
    /// process ends (a probe recording its group) would leave one no one removes.
    #[test]
    fn a_closed_scratch_makes_no_root_again() {
        let tmp = tempfile::tempdir().unwrap();
        let mut s = Scratch::new();
        let root = root_in(&mut s, tmp.path()).unwrap();
        let (owner, place) = read_owner(&root).unwrap();
        assert_eq!(owner, ProcessId::current().unwrap());
        assert_eq!(place, Some(process::place()));
        s.close();
        assert!(!root.exists());
        assert!(root_in(&mut s, tmp.path()).is_err());
        assert!(!root.exists(), "made again after the close");
    }

    #[test]
    fn the_root_goes_when_nothing_of_the_process_lives_in_it() {
        let a = tempdir("rackbench-test-").unwrap();
        let root = a.path().parent().unwrap().to_path_buf();
        let b = tempdir("rackbench-test-").unwrap();
        assert_eq!(b.path().parent().unwrap(), root);
        drop(a);
        assert!(root.exists(), "b still lives there");
        drop(b);
        // Other tests of this binary may hold a directory there at the same moment.
        if scratch().dirs == 0 && scratch().groups.is_empty() {
            assert!(!root.exists(), "the root outlived its last directory");
        }
    }

    #[test]
    fn a_recorded_pid_now_someone_elses_is_not_killed() {
        let tmp = tempfile::tempdir().unwrap();
        let dead = tmp.path().join(format!("{PREFIX}1.1"));
        std::fs::DirBuilder::new()
            .mode(0o711)
            .create(&dead)
            .unwrap();
        let boot = process::boot_id().unwrap();
        std::fs::write(dead.join("owner"), format!("1 999999999 {boot}\n")).unwrap();
        let (mut other, start) = sleeping_group();
        // The group recorded with another start time: the pid was reused.
        std::fs::write(
            dead.join("groups"),
            format!("{} {}\n", other.id(), start + 7),
        )
        .unwrap();
        let cleaned = sweep_in(tmp.path());
        assert_eq!(cleaned[0].processes_killed, 0);
        assert!(
            other.try_wait().unwrap().is_none(),
            "an unrelated process was killed"
        );
        other.kill().unwrap();
        other.wait().unwrap();
    }
}
