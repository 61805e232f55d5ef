//! The results store: an embedded SQLite file with versioned migrations. Runs are begun
//! before the first measurement and each result is inserted the moment it completes, so a
//! crash or Ctrl-C keeps everything already measured. Reads give back model types only.

use std::path::Path;

use model::{HostDisclosure, IdlePower, ResultRecord, RunRecord, Status};

/// One line of `rackbench runs`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RunSummary {
    pub id: String,
    pub label: Option<String>,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub status: Status,
    pub workloads: Vec<String>,
    pub results: usize,
    pub host: String,
    pub command: String,
}

/// An open results store.
pub struct Store {
    _private: (),
}

impl Store {
    /// Open (creating and migrating as needed). Errors say which path and why, and what to do.
    pub fn open(_path: &Path) -> anyhow::Result<Store> {
        anyhow::bail!("store: being written")
    }
    /// Record a run as started (status Running), with its plan and disclosure.
    pub fn begin_run(&self, _run: &RunRecord) -> anyhow::Result<()> {
        anyhow::bail!("store: being written")
    }
    /// Replace the run's host disclosures (after prepare adds server versions).
    pub fn update_hosts(&self, _run_id: &str, _hosts: &[HostDisclosure]) -> anyhow::Result<()> {
        anyhow::bail!("store: being written")
    }
    pub fn insert_idle_power(&self, _run_id: &str, _idle: &IdlePower) -> anyhow::Result<()> {
        anyhow::bail!("store: being written")
    }
    /// Insert one result (metrics, histograms, telemetry, flags) in one transaction.
    pub fn insert_result(&self, _run_id: &str, _r: &ResultRecord) -> anyhow::Result<()> {
        anyhow::bail!("store: being written")
    }
    pub fn finish_run(
        &self,
        _run_id: &str,
        _status: Status,
        _error: Option<&str>,
    ) -> anyhow::Result<()> {
        anyhow::bail!("store: being written")
    }
    /// Add validity flags to a stored result (flags found after it was inserted, e.g. by
    /// a consistency check at the end of a sweep point).
    pub fn add_flags(
        &self,
        _run_id: &str,
        _step: u32,
        _flags: &[model::Flag],
    ) -> anyhow::Result<()> {
        anyhow::bail!("store: being written")
    }
    /// Remove a run entirely (a run whose setup failed before any measurement).
    pub fn delete_run(&self, _run_id: &str) -> anyhow::Result<()> {
        anyhow::bail!("store: being written")
    }
    /// Newest first.
    pub fn list_runs(&self) -> anyhow::Result<Vec<RunSummary>> {
        anyhow::bail!("store: being written")
    }
    /// A full id from an id, a unique prefix, `latest`, or a label.
    pub fn resolve(&self, _id_or_prefix: &str) -> anyhow::Result<String> {
        anyhow::bail!("store: being written")
    }
    pub fn load_run(&self, _id: &str) -> anyhow::Result<RunRecord> {
        anyhow::bail!("store: being written")
    }
    /// Import a run exported elsewhere (error if the id already exists).
    pub fn import_run(&self, _run: &RunRecord) -> anyhow::Result<()> {
        anyhow::bail!("store: being written")
    }
}

/// Default location of the results store.
pub fn default_path() -> std::path::PathBuf {
    if let Some(p) = std::env::var_os("RACKBENCH_DB") {
        return p.into();
    }
    let base = std::env::var_os("XDG_DATA_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".local/share")))
        .unwrap_or_else(|| std::path::PathBuf::from("."));
    base.join("rackbench").join("results.sqlite")
}
