//! The `http` workload: being written.

/// Registry entry for `http`.
pub fn registration() -> engine::Registration {
    engine::Registration {
        name: "http",
        about: "(being written)",
        list_keys: &[],
        flags: |c| c,
        build: |_| anyhow::bail!("the http workload is not available yet"),
    }
}
