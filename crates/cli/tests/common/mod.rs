//! Helpers the binary's end-to-end tests share: the binary itself, whether a server
//! program is installed, and `run ... --json` against a results store in a temp dir.

#![allow(dead_code)] // each test file uses its own subset

use std::path::Path;
use std::process::Command;

/// The rackbench binary under test, with no results store inherited from the environment.
pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rackbench"));
    c.env_remove("RACKBENCH_DB");
    c
}

/// Is `binary` on PATH? Says which package to install when it is not (the test skips).
pub fn have(binary: &str, package: &str) -> bool {
    let ok = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(binary).is_file()))
        .unwrap_or(false);
    if !ok {
        eprintln!("skipped: {binary} is not installed (apt-get install {package})");
    }
    ok
}

/// `rackbench --db DB run ARGS... --json -q EXTRA...`: exit code, the run's JSON (Null
/// when none was printed), stderr.
pub fn run_json(db: &Path, args: &[&str], extra: &[&str]) -> (i32, serde_json::Value, String) {
    let out = bin()
        .args(["--db", db.to_str().unwrap(), "run"])
        .args(args)
        .args(["--json", "-q"])
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out.status.code().unwrap_or(-1), v, stderr)
}

/// `rackbench ARGS...`: exit code, stdout, stderr.
pub fn run(args: &[&str]) -> (i32, String, String) {
    let out = bin().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// Live processes whose parent is `ppid` and whose command line mentions `name`, with
/// their command lines.
pub fn children_named(ppid: u32, name: &str) -> Vec<(u32, String)> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|p| {
            let cmd = std::fs::read_to_string(format!("/proc/{p}/cmdline")).ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
            let parent: u32 = stat
                .rsplit(')')
                .next()?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            (cmd.contains(name) && parent == ppid && !stat.contains(") Z ")).then_some((p, cmd))
        })
        .collect()
}
