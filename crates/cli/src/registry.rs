//! The one list of workloads. A workload is one folder in `crates/workloads/` plus one
//! line here.

use engine::Registration;

pub fn all() -> Vec<Registration> {
    vec![
        wl_kv::registration(),
        wl_http::registration(),
        wl_oltp::registration(),
        wl_net::registration(),
        wl_crypto::registration(),
        wl_mem::registration(),
    ]
}

pub fn find(name: &str) -> Option<Registration> {
    all().into_iter().find(|r| r.name == name)
}

pub fn names() -> Vec<&'static str> {
    all().iter().map(|r| r.name).collect()
}
