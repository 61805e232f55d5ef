//! The `kv` workload: being written.

/// Registry entry for `kv`.
pub fn registration() -> engine::Registration {
    engine::Registration {
        name: "kv",
        about: "(being written)",
        list_keys: &[],
        flags: |c| c,
        build: |_| anyhow::bail!("the kv workload is not available yet"),
    }
}
