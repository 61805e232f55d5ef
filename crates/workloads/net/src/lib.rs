//! The `net` workload: being written.

/// Registry entry for `net`.
pub fn registration() -> engine::Registration {
    engine::Registration {
        name: "net",
        about: "(being written)",
        list_keys: &[],
        flags: |c| c,
        build: |_| anyhow::bail!("the net workload is not available yet"),
    }
}
