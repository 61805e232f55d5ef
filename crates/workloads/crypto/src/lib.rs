//! The `crypto` workload: being written.

/// Registry entry for `crypto`.
pub fn registration() -> engine::Registration {
    engine::Registration {
        name: "crypto",
        about: "(being written)",
        list_keys: &[],
        flags: |c| c,
        build: |_| anyhow::bail!("the crypto workload is not available yet"),
    }
}
