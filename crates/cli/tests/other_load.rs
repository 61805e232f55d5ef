//! Another process's CPU during a test is said (`other_load`), also for a workload whose
//! driver is itself the work measured (crypto, mem): there is no server on its host
//! whose CPU could be taken for another's.

mod common;

use common::run_json;

/// A busy loop in a shell of its own, killed when dropped.
struct Spinner(std::process::Child);

impl Drop for Spinner {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A crypto test's rates, and whether it was warned of other processes' CPU.
fn crypto(db: &std::path::Path) -> serde_json::Value {
    let (code, run, err) = run_json(
        db,
        &[
            "crypto",
            "--tests",
            "rsa2048",
            "--threads",
            "1",
            "--duration",
            "1",
            "--telemetry-interval",
            "0.25",
        ],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    run
}

#[test]
fn a_crypto_test_beside_a_busy_process_is_warned_of_it() {
    let dir = tempfile::tempdir().unwrap();
    // Alone: its own driver's CPU is its work, not another's load.
    let quiet = crypto(&dir.path().join("q.sqlite"));
    let flags = &quiet["results"][0]["flags"];
    assert!(
        !flags
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["code"] == "other_load"),
        "the driver's own CPU taken for another's: {flags}"
    );
    // Watched as the work, not as a load generator: crypto has none (a CSV filtered on
    // `role=loadgen` took the RSA worker's CPU for a generator's).
    let roles: Vec<&str> = quiet["results"][0]["telemetry_summary"][0]["procs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["role"].as_str())
        .collect();
    assert_eq!(
        roles,
        ["work"],
        "{}",
        quiet["results"][0]["telemetry_summary"]
    );
    let _spin = Spinner(
        std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap(),
    );
    let run = crypto(&dir.path().join("o.sqlite"));
    let flags = &run["results"][0]["flags"];
    let other = flags
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "other_load")
        .unwrap_or_else(|| panic!("a busy shell beside the test is not said: {flags}"));
    assert!(
        other["message"]
            .as_str()
            .unwrap()
            .contains("other processes took"),
        "{other}"
    );
}
