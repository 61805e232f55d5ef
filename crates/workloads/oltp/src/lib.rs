//! The `oltp` workload: being written.

/// Registry entry for `oltp`.
pub fn registration() -> engine::Registration {
    engine::Registration {
        name: "oltp",
        about: "(being written)",
        list_keys: &[],
        flags: |c| c,
        build: |_| anyhow::bail!("the oltp workload is not available yet"),
    }
}
