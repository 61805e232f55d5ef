//! Files rackbench writes for the user (reports, SVG charts, exports): written whole or not
//! at all, and never over a file rackbench did not write.
//!
//! `-o results.sqlite`, `-o ~/.bashrc` or a colleague's hand-edited report must survive a
//! mistyped command. Every file rackbench writes carries a mark near its start (a generator
//! `<meta>` in HTML, a comment in Markdown and SVG, the export's own header in CSV and JSON);
//! an existing file without one is refused, and the results store is refused by name.

use std::io::{Read as _, Write as _};
use std::path::Path;

use anyhow::{bail, Context as _};

/// How many bytes of an existing file are read to find the mark.
const HEAD: usize = 4096;

/// Write `bytes` to `path` atomically (a temporary file beside it, synced, then renamed
/// over `path`), after [`check_replaceable`]. `store` is the results store in use. The
/// directory must exist: a mistyped one is an error, not a new directory.
pub fn write_atomic(path: &Path, bytes: &[u8], store: &Path) -> anyhow::Result<()> {
    check_replaceable(path, store)?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let Some(name) = path.file_name() else {
        bail!("{} is not a file name; give -o FILE", path.display());
    };
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let written = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| {
            format!(
                "cannot write {} (does its directory exist and is it writable?)",
                path.display()
            )
        });
    }
    Ok(())
}

/// Ok when `path` does not exist or is a file rackbench wrote; an error saying what to do
/// for the results store (or its journal), a directory, or any other file.
pub fn check_replaceable(path: &Path, store: &Path) -> anyhow::Result<()> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("cannot check {}", path.display())),
    };
    let shown = path.display();
    if meta.is_dir() {
        bail!("{shown} is a directory; give -o a file name");
    }
    if is_store_file(path, store) {
        bail!(
            "{shown} is the results store ({}); rackbench never writes over it: give -o another file",
            store.display()
        );
    }
    let mut head = Vec::with_capacity(HEAD);
    std::fs::File::open(path)
        .and_then(|f| f.take(HEAD as u64).read_to_end(&mut head))
        .with_context(|| format!("cannot read {shown} to check it before replacing it"))?;
    if head.starts_with(b"SQLite format 3\0") {
        bail!("{shown} is an SQLite database (a results store?); rackbench never writes over it: give -o another file");
    }
    if !written_by_rackbench(&head) {
        bail!(
            "{shown} exists and was not written by rackbench; rackbench does not overwrite it: \
             give -o another file, or remove it first if it is not needed"
        );
    }
    Ok(())
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

/// Whether the first bytes of a file carry the mark of a file rackbench writes.
fn written_by_rackbench(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    let first_line = trimmed.lines().next().unwrap_or("");
    text.contains(report::COMMENT_MARK)
        || text.contains(report::GENERATOR_META)
        || first_line == store::export::CSV_COLUMNS.join(",")
        || is_json_export(trimmed)
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

    #[test]
    fn atomic_write_replaces_its_own_file_and_leaves_no_temp() {
        let d = tempfile::tempdir().unwrap();
        let store = d.path().join("results.sqlite");
        let p = d.path().join("report.md");
        let one = format!("{COMMENT_MARK}\none");
        write_atomic(&p, one.as_bytes(), &store).unwrap();
        let two = format!("{COMMENT_MARK}\ntwo");
        write_atomic(&p, two.as_bytes(), &store).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), two);
        let names: Vec<_> = std::fs::read_dir(p.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("report.md")]);
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
        let outputs = [
            report::html(&runs, None).into_bytes(),
            report::markdown(&runs, None).into_bytes(),
            store::export::to_json(&runs).into_bytes(),
            csv,
        ];
        for o in outputs {
            assert!(written_by_rackbench(&o[..o.len().min(HEAD)]));
        }
        for (name, svg) in report::svg_charts(&runs) {
            assert!(written_by_rackbench(svg.as_bytes()), "{name}");
        }
        assert!(!written_by_rackbench(b"{\"runs\": []}"));
        assert!(!written_by_rackbench(b"<html><body>hello</body></html>"));
    }
}
