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

#[test]
fn a_crypto_test_beside_a_busy_process_is_warned_of_it() {
    let _spin = Spinner(
        std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap(),
    );
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("o.sqlite");
    let (code, run, err) = run_json(
        &db,
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
