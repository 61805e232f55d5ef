//! The `mem` workload: being written.

/// Registry entry for `mem`.
pub fn registration() -> engine::Registration {
    engine::Registration {
        name: "mem",
        about: "(being written)",
        list_keys: &[],
        flags: |c| c,
        build: |_| anyhow::bail!("the mem workload is not available yet"),
    }
}
