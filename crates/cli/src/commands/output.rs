//! Files rackbench writes for the user (reports, SVG charts, exports): written whole or not
//! at all, and never over a file rackbench did not write, nor over a report someone edited.
//!
//! `-o results.sqlite`, `-o ~/.bashrc`, notes that quote a rackbench report, or a
//! colleague's hand-edited report must survive a mistyped command. So a file is replaced
//! only when it is, from its first byte, what rackbench writes:
//! - a report or chart (HTML, Markdown, SVG) starts exactly as rackbench starts one (the
//!   HTML report's head up to its title, the Markdown's first line `<!-- generator:
//!   rackbench -->`, the SVG's XML declaration then that line), and ends with the seal
//!   rackbench put there when it wrote the file: a comment with a digest of everything
//!   before it. A file whose content no longer matches its seal was edited and is kept;
//!   a mark anywhere but at the very start (a snippet pasted into notes) counts for nothing.
//! - an export starts with its own header (CSV: the header line; JSON: `{"format_version"`).
//!   Exports are data rebuilt from the store at will, with no room for a seal: an edited
//!   export is not told apart.
//!
//! The results store is refused by name (and by inode), any SQLite database by its header.

use std::io::{Read as _, Write as _};
use std::path::Path;

use anyhow::{bail, Context as _};

/// How many bytes of an existing file are read to find the mark.
const HEAD: usize = 4096;

/// Write `bytes` to `path` atomically (a temporary file beside it, synced, then renamed
/// over `path`), after [`check_replaceable`]. `store` is the results store in use. The
/// directory must exist ([`check_replaceable`]): a mistyped one is an error, not a new
/// directory.
pub fn write_atomic(path: &Path, bytes: &[u8], store: &Path) -> anyhow::Result<()> {
    write_all_atomic(&[(path, bytes)], store)
}

/// [`write_atomic`] of several files: each is written whole to its temporary file
/// before any is renamed into place, so a file that cannot be written (its directory
/// not writable, the disk full) leaves none of them. A report's charts were renamed one
/// by one, and a report that then could not be written left them in place. (A rename
/// failing after another succeeded, which a rename within one directory does not, would
/// leave the earlier ones.)
pub fn write_all_atomic(files: &[(&Path, &[u8])], store: &Path) -> anyhow::Result<()> {
    crate::signals::install_for_writes();
    let mut temps = Vec::with_capacity(files.len());
    let written = (|| {
        let mut staged = Vec::with_capacity(files.len());
        for (path, bytes) in files {
            let f = stage(path, bytes, store)?;
            temps.push(f.to_path_buf());
            staged.push((*path, f));
        }
        // Dropped unrenamed on an error: the temporary files go with them.
        for (path, f) in staged {
            f.persist(path).map_err(|e| cannot_write(path, e.error))?;
        }
        Ok(())
    })();
    // Those staged, and any a failed stage left (its file gone with it).
    let on_disk = |t: &std::path::PathBuf| !temps.contains(t) && t.exists();
    lock_staged().retain(on_disk);
    written
}

/// Temporary files staged and not yet renamed into place, for a termination signal to
/// remove ([`crate::signals::install_for_writes`]): the process then ends without
/// running their drops.
static STAGED: std::sync::Mutex<Vec<std::path::PathBuf>> = std::sync::Mutex::new(Vec::new());

fn lock_staged() -> std::sync::MutexGuard<'static, Vec<std::path::PathBuf>> {
    STAGED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Remove the temporary files staged and not yet in place (a signal's handler's).
pub fn remove_staged() {
    for t in lock_staged().drain(..) {
        let _ = std::fs::remove_file(t);
    }
}

/// `bytes`, sealed, in a new synced temporary file beside `path`, ready to be renamed.
fn stage(path: &Path, bytes: &[u8], store: &Path) -> anyhow::Result<tempfile::TempPath> {
    check_replaceable(path, store)?;
    let bytes = seal(bytes);
    let dir = dir_of(path);
    let Some(name) = path.file_name() else {
        bail!("{} is not a file name; give -o FILE", path.display());
    };
    // A new file of a random name, created exclusively (never through a link another
    // user planted in a shared directory), renamed over `path` once synced.
    let written = (|| -> std::io::Result<tempfile::TempPath> {
        let mut f = tempfile::Builder::new()
            .prefix(&format!(".{}.tmp-", name.to_string_lossy()))
            // As a plain create would (the umask applies), not tempfile's 0600: a
            // report is meant to be read.
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
            .tempfile_in(dir)?;
        // Known to a signal's handler before its slow part (the sync).
        lock_staged().push(f.path().to_path_buf());
        f.write_all(&bytes)?;
        f.as_file().sync_all()?;
        // Closed until its rename: a report of many charts holds no descriptor each.
        Ok(f.into_temp_path())
    })();
    // A failed write removes its temporary file (dropped with it).
    written.map_err(|e| cannot_write(path, e))
}

/// The system's error, without the temporary file's name tempfile adds to it (the user
/// gave `path`), and what to check.
fn cannot_write(path: &Path, e: std::io::Error) -> anyhow::Error {
    let text = e.to_string();
    anyhow::anyhow!(
        "{}",
        text.split_once(" at path \"")
            .map_or(text.as_str(), |(m, _)| m)
    )
    .context(format!(
        "cannot write {} (does its directory exist and is it writable?)",
        path.display()
    ))
}

/// Ok when `path` does not exist (in a directory that does) or is a file rackbench
/// wrote; an error saying what to do for the results store (or its journal), a directory,
/// a directory missing, or any other file. Checked before anything is written: `report
/// --svg-dir D -o nope/r.html` wrote its charts, then failed on the report.
pub fn check_replaceable(path: &Path, store: &Path) -> anyhow::Result<()> {
    let dir = dir_of(path);
    if !dir.is_dir() {
        let (shown, d) = (path.display(), dir.display());
        if dir.exists() {
            bail!("cannot write {shown}: {d} is not a directory; give -o a file in a directory");
        }
        bail!(
            "cannot write {shown}: there is no directory {d}; create it, or give -o a file in \
             one that exists"
        );
    }
    check_replaceable_as(path, store, "-o another file")
}

/// The directory `path` is in (`.` for a bare name).
pub fn dir_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// [`check_replaceable`] of a file the user named through `other`'s flag: its errors
/// say `give {other}` (a chart of `--svg-dir`: `--svg-dir another directory`, not -o).
pub fn check_replaceable_as(path: &Path, store: &Path, other: &str) -> anyhow::Result<()> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("cannot check {}", path.display())),
    };
    let shown = path.display();
    if meta.is_dir() {
        bail!("{shown} is a directory; give {other}");
    }
    // A pipe blocks the read below for ever, and a device or socket is no file to
    // replace: the output is written whole, a finished file renamed into place.
    if !meta.is_file() {
        bail!(
            "{shown} is not a regular file (a pipe, socket or device): rackbench writes its \
             output to a file whole, renamed into place; give {other}, and copy it from there"
        );
    }
    if is_store_file(path, store) {
        bail!(
            "{shown} is the results store ({}); rackbench never writes over it: give {other}",
            store.display()
        );
    }
    let mut head = Vec::with_capacity(HEAD);
    std::fs::File::open(path)
        .and_then(|f| f.take(HEAD as u64).read_to_end(&mut head))
        .with_context(|| format!("cannot read {shown} to check it before replacing it"))?;
    if head.starts_with(b"SQLite format 3\0") {
        bail!("{shown} is an SQLite database (a results store?); rackbench never writes over it: give {other}");
    }
    match ownership(&head) {
        Owner::Export => Ok(()),
        Owner::Report => {
            let mut whole = Vec::new();
            std::fs::File::open(path)
                .and_then(|mut f| f.read_to_end(&mut whole))
                .with_context(|| format!("cannot read {shown} to check it before replacing it"))?;
            if sealed(&whole) {
                Ok(())
            } else {
                bail!(
                    "{shown} was written by rackbench but edited since (or by a rackbench that did not \
                     seal its reports yet); rackbench does not overwrite it: give {other}, or \
                     remove it first if the edits are not needed"
                )
            }
        }
        Owner::Other => bail!(
            "{shown} exists and was not written by rackbench; rackbench does not overwrite it: \
             give {other}, or remove it first if it is not needed"
        ),
    }
}

/// The same file as the store, its write-ahead log or its shared memory (compared by device
/// and inode, so another spelling of the path or a hard link is caught too).
fn is_store_file(path: &Path, store: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(m) = std::fs::metadata(path) else {
        return false;
    };
    ["", "-wal", "-shm", "-journal"].iter().any(|suffix| {
        let mut s = store.as_os_str().to_owned();
        s.push(suffix);
        std::fs::metadata(Path::new(&s)).is_ok_and(|o| o.dev() == m.dev() && o.ino() == m.ino())
    })
}

/// Who a file is, by its first bytes.
#[derive(Debug, PartialEq, Eq)]
enum Owner {
    /// Starts as a rackbench report or chart does: replaceable if its seal holds.
    Report,
    /// Starts with an export's header.
    Export,
    /// Anything else.
    Other,
}

/// What the first bytes of a file say it is: only its very start counts.
fn ownership(head: &[u8]) -> Owner {
    let report_starts = [
        report::HTML_START.to_string(),
        format!("{}\n", report::COMMENT_MARK),
        report::SVG_START.to_string(),
    ];
    if report_starts.iter().any(|s| head.starts_with(s.as_bytes())) {
        return Owner::Report;
    }
    let text = String::from_utf8_lossy(head);
    let first_line = text.split('\n').next().unwrap_or("");
    let header = first_line.trim_end_matches('\r');
    // An export of an earlier version (fewer columns, the same first ones) is one too.
    let columns = &store::export::CSV_COLUMNS;
    let past = store::export::CSV_PAST_WIDTHS.map(|n| columns[..n].join(","));
    if header == columns.join(",") || past.contains(&header.to_string()) || is_json_export(&text) {
        Owner::Export
    } else {
        Owner::Other
    }
}

/// The seal's text around the digest: the last line of every report and chart written.
const SEAL_OPEN: &str = "<!-- rackbench seal: fnv1a64 ";
const SEAL_CLOSE: &str = " -->\n";

/// FNV-1a, 64 bits: tells an edit from the file as written (not a defence against forgery:
/// the point is to never destroy someone's work by accident).
fn digest(bytes: &[u8]) -> String {
    format!("{:016x}", model::fnv1a64(bytes))
}

/// A report or chart with its seal appended (on a line of its own); anything else as is.
fn seal(bytes: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    if ownership(&bytes[..bytes.len().min(HEAD)]) != Owner::Report {
        return out;
    }
    if !out.ends_with(b"\n") {
        out.push(b'\n');
    }
    let line = format!("{SEAL_OPEN}{}{SEAL_CLOSE}", digest(&out));
    out.extend_from_slice(line.as_bytes());
    out
}

/// Whether a whole file ends with a seal that matches everything before it.
fn sealed(whole: &[u8]) -> bool {
    let Some(body) = whole.strip_suffix(b"\n") else {
        return false;
    };
    let start = body.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let (content, last) = whole.split_at(start);
    let Ok(last) = std::str::from_utf8(last) else {
        return false;
    };
    last.strip_prefix(SEAL_OPEN)
        .and_then(|r| r.strip_suffix(SEAL_CLOSE))
        .is_some_and(|d| d == digest(content))
}

/// `{"format_version": N, "runs": ...` as `export --format json` writes it.
fn is_json_export(text: &str) -> bool {
    let Some(rest) = text.strip_prefix('{') else {
        return false;
    };
    rest.trim_start().starts_with("\"format_version\"")
}

#[cfg(test)]
mod tests {
    use super::*;
    use report::COMMENT_MARK;

    /// A staged file is known to a signal's handler from its creation, before its sync
    /// (a Ctrl-C during a report's syncs left `.NAME.tmp-*` files); a written file is no
    /// longer known.
    #[test]
    fn a_staged_file_is_known_to_a_signal_until_written() {
        let d = tempfile::tempdir().unwrap();
        let store = d.path().join("results.sqlite");
        let p = d.path().join("chart.svg");
        let staged = stage(&p, b"<svg/>", &store).unwrap();
        let temp = staged.to_path_buf();
        assert!(lock_staged().contains(&temp));
        // (remove_staged itself is not called: it would take the files other tests of
        // this binary have staged meanwhile.)
        drop(staged);
        lock_staged().retain(|t| *t != temp);

        write_atomic(&p, format!("{COMMENT_MARK}\nx").as_bytes(), &store).unwrap();
        assert!(!lock_staged().iter().any(|t| t.starts_with(d.path())));
    }

    #[test]
    fn atomic_write_replaces_its_own_file_and_leaves_no_temp() {
        let d = tempfile::tempdir().unwrap();
        let store = d.path().join("results.sqlite");
        let p = d.path().join("report.md");
        let one = format!("{COMMENT_MARK}\none");
        write_atomic(&p, one.as_bytes(), &store).unwrap();
        let two = format!("{COMMENT_MARK}\ntwo");
        write_atomic(&p, two.as_bytes(), &store).unwrap();
        let written = std::fs::read(&p).unwrap();
        assert!(written.starts_with(two.as_bytes()) && sealed(&written));
        let names: Vec<_> = std::fs::read_dir(p.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("report.md")]);
        // Its mode is a plain create's (0666 less the umask), not tempfile's 0600.
        use std::os::unix::fs::PermissionsExt;
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let umask = status
            .lines()
            .find_map(|l| l.strip_prefix("Umask:"))
            .map(|m| u32::from_str_radix(m.trim(), 8).unwrap())
            .unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o666 & !umask, "{mode:o}");
    }

    #[test]
    fn the_store_and_foreign_files_are_never_overwritten() {
        let d = tempfile::tempdir().unwrap();
        let store_path = d.path().join("results.sqlite");
        drop(store::Store::open(&store_path).unwrap());
        let before = std::fs::read(&store_path).unwrap();
        // The store by its own name, by another spelling, and by a hard link.
        let other_spelling = d.path().join(".").join("results.sqlite");
        let link = d.path().join("link.html");
        std::fs::hard_link(&store_path, &link).unwrap();
        for p in [&store_path, &other_spelling, &link] {
            let e = write_atomic(p, b"<html>", &store_path).unwrap_err();
            assert!(format!("{e:#}").contains("results store"), "{e:#}");
        }
        assert_eq!(std::fs::read(&store_path).unwrap(), before);
        // Another SQLite file, a user's file, a directory.
        let other_db = d.path().join("other.sqlite");
        drop(store::Store::open(&other_db).unwrap());
        let mine = d.path().join("notes.md");
        std::fs::write(&mine, "# my notes\n").unwrap();
        for (p, says) in [
            (&other_db, "SQLite database"),
            (&mine, "not written by rackbench"),
            (&d.path().to_path_buf(), "is a directory"),
        ] {
            let e = write_atomic(p, b"x", &store_path).unwrap_err();
            assert!(format!("{e:#}").contains(says), "{e:#}");
        }
        assert_eq!(std::fs::read_to_string(&mine).unwrap(), "# my notes\n");
    }

    /// A pipe, a device or a missing directory is refused before anything is read or
    /// written: a FIFO blocked the check's read for ever, `/dev/null` was called a
    /// foreign file to remove, and a missing directory was found only after the charts
    /// were written (audit, 4 and 7).
    #[test]
    fn pipes_devices_and_missing_directories_are_refused_first() {
        let d = tempfile::tempdir().unwrap();
        let store = d.path().join("results.sqlite");
        let fifo = d.path().join("f.fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a path we own, as a C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        for p in [fifo.as_path(), Path::new("/dev/null")] {
            let e = check_replaceable(p, &store).unwrap_err();
            assert!(format!("{e:#}").contains("not a regular file"), "{e:#}");
        }
        let e = check_replaceable(&d.path().join("nope/r.html"), &store).unwrap_err();
        assert!(format!("{e:#}").contains("there is no directory"), "{e:#}");
        let file = d.path().join("file");
        std::fs::write(&file, "x").unwrap();
        let e = check_replaceable(&file.join("r.html"), &store).unwrap_err();
        assert!(format!("{e:#}").contains("is not a directory"), "{e:#}");
        check_replaceable(&d.path().join("r.html"), &store).unwrap();
    }

    #[test]
    fn every_output_rackbench_writes_carries_its_mark() {
        let runs = vec![store::fixtures::rich_run(
            "r1",
            Some("a"),
            store::fixtures::t0(0),
            2,
        )];
        let mut csv = Vec::new();
        store::export::to_csv(&runs, &mut csv).unwrap();
        // The fixture's figures are all flagged out, so it has no chart: one as
        // `svg_charts` writes them stands in.
        let mut reports = vec![
            report::html(&runs, None).into_bytes(),
            report::markdown(&runs, None).into_bytes(),
            format!(
                "{}<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>\n",
                report::SVG_START
            )
            .into_bytes(),
        ];
        reports.extend(
            report::svg_charts(&runs)
                .into_iter()
                .map(|(_, s)| s.into_bytes()),
        );
        for o in &reports {
            assert_eq!(ownership(&o[..o.len().min(HEAD)]), Owner::Report);
            assert!(!sealed(o), "sealed only when written");
            assert!(sealed(&seal(o)));
        }
        for o in [store::export::to_json(&runs).into_bytes(), csv] {
            assert_eq!(ownership(&o[..o.len().min(HEAD)]), Owner::Export);
            assert_eq!(seal(&o), o, "exports are written as they are");
        }
        assert_eq!(ownership(b"{\"runs\": []}"), Owner::Other);
        assert_eq!(ownership(b"<html><body>hello</body></html>"), Owner::Other);
    }

    /// Notes that quote a rackbench report (its mark, its head) are not a report, and a
    /// report edited by hand is no longer rackbench's to replace.
    #[test]
    fn notes_quoting_a_report_and_edited_reports_survive() {
        let d = tempfile::tempdir().unwrap();
        let store = d.path().join("results.sqlite");
        let runs = vec![store::fixtures::rich_run(
            "r1",
            Some("a"),
            store::fixtures::t0(0),
            2,
        )];
        let md = report::markdown(&runs, None);
        let html = report::html(&runs, None);
        // A snippet pasted into notes, the mark within the first bytes but not first.
        let notes = d.path().join("mynotes.md");
        let mine = format!("# my notes\n\nFrom last week's run:\n\n{md}");
        std::fs::write(&notes, &mine).unwrap();
        let e = write_atomic(&notes, md.as_bytes(), &store).unwrap_err();
        assert!(
            format!("{e:#}").contains("not written by rackbench"),
            "{e:#}"
        );
        assert_eq!(std::fs::read_to_string(&notes).unwrap(), mine);
        // A BOM or a blank line first: not how rackbench starts a file.
        let shifted = d.path().join("shifted.md");
        std::fs::write(&shifted, format!("\n{md}")).unwrap();
        assert!(write_atomic(&shifted, md.as_bytes(), &store).is_err());
        // Written by rackbench: replaced again, and again.
        for (name, body) in [("r.md", &md), ("r.html", &html)] {
            let p = d.path().join(name);
            write_atomic(&p, body.as_bytes(), &store).unwrap();
            write_atomic(&p, body.as_bytes(), &store).unwrap();
            let written = std::fs::read_to_string(&p).unwrap();
            assert!(written.starts_with(body.as_str()), "{name}");
            // Edited by hand (a line added, or a figure changed): kept.
            for edited in [
                format!("{written}extra line\n"),
                written.replacen("rackbench report", "rackbench  report", 1),
            ] {
                std::fs::write(&p, &edited).unwrap();
                let e = write_atomic(&p, body.as_bytes(), &store).unwrap_err();
                assert!(format!("{e:#}").contains("edited since"), "{name}: {e:#}");
                assert_eq!(std::fs::read_to_string(&p).unwrap(), edited);
            }
        }
    }
}
