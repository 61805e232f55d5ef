//! store: being written.

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
