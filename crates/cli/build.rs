//! The build's identity, stored with every run and shown by `--version`: the version
//! and the git commit the binary was built from (`0.1.0 (git 1a2b3c4d5e6f)`, `+dirty`
//! when tracked files differed from it), so that two stored runs say whether one build
//! made them. Outside a git checkout: `0.1.0 (not built from a git checkout)`.

use std::path::Path;
use std::process::Command;

fn git(root: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(root)
        // `git status` may rewrite the index to refresh it; the build must not.
        .env("GIT_OPTIONAL_LOCKS", "0")
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let root = Path::new(&manifest).join("../..");
    // This checkout's own repository, not one it was unpacked inside (a source tarball
    // in a packager's tree).
    let ours = git(&root, &["rev-parse", "--show-toplevel"])
        .and_then(|t| Path::new(&t).canonicalize().ok())
        .is_some_and(|t| root.canonicalize().is_ok_and(|r| r == t));
    let commit = git(&root, &["rev-parse", "--short=12", "HEAD"]).filter(|_| ours);
    let build = match commit {
        Some(commit) => {
            // Run again when the commit, the index or a source changes (a directory is
            // scanned whole for a newer file); a linked worktree's refs are in the
            // common directory.
            let dirs = ["--absolute-git-dir", "--git-common-dir"]
                .iter()
                .filter_map(|a| git(&root, &["rev-parse", a]))
                .map(|d| root.join(d));
            for dir in dirs {
                for f in ["HEAD", "index", "refs", "packed-refs"] {
                    let p = dir.join(f);
                    if p.exists() {
                        println!("cargo:rerun-if-changed={}", p.display());
                    }
                }
            }
            for p in ["crates", "Cargo.toml", "Cargo.lock"] {
                println!("cargo:rerun-if-changed={}", root.join(p).display());
            }
            let dirty = git(&root, &["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            format!(
                "{version} (git {commit}{})",
                if dirty { "+dirty" } else { "" }
            )
        }
        None => {
            println!("cargo:rerun-if-changed=build.rs");
            format!("{version} (not built from a git checkout)")
        }
    };
    println!("cargo:rustc-env=RACKBENCH_BUILD={build}");
}
