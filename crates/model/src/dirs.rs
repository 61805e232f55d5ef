//! Directories a command makes for its output, and takes back when it writes nothing
//! there (bad input leaves no empty directory behind).

use std::path::{Path, PathBuf};

/// Make `dir` and its missing parents; returns those it made, deepest first.
pub fn make(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let missing: Vec<PathBuf> = dir
        .ancestors()
        .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
        .map(Path::to_path_buf)
        .collect();
    std::fs::create_dir_all(dir)?;
    Ok(missing)
}

/// Remove the directories [`make`] made, deepest first, while they are empty (one that
/// something else wrote into meanwhile stays, with its parents).
pub fn remove_made(dirs: &[PathBuf]) {
    for d in dirs {
        if std::fs::remove_dir(d).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn what_was_made_is_taken_back_while_empty() {
        let t = std::env::temp_dir().join(format!("rb-dirs-{}", std::process::id()));
        std::fs::create_dir_all(&t).unwrap();
        let made = super::make(&t.join("a/b/c")).unwrap();
        assert_eq!(made, [t.join("a/b/c"), t.join("a/b"), t.join("a")]);
        assert!(super::make(&t.join("a/b")).unwrap().is_empty());
        std::fs::write(t.join("a/kept"), "x").unwrap();
        super::remove_made(&made);
        assert!(!t.join("a/b").exists() && t.join("a/kept").exists());
        std::fs::remove_dir_all(&t).unwrap();
    }
}
