//! The crypto service: nothing is launched (the system under test is measured by the
//! driver itself), but the OpenSSL the driver links and the method are facts of the host
//! the tests run on, so they are read there when the sweep point starts.

use std::collections::BTreeMap;

use engine::host::{Findings, Service, ServiceCtx};
use engine::workload::Params;
use model::Fact;

/// Start the (empty) service for one sweep point (`Registration::service`): the
/// parameters are checked on this host too, so a bad one stops the run in `prepare`.
pub fn start_service(p: &Params, _ctx: &ServiceCtx) -> anyhow::Result<Box<dyn Service>> {
    crate::parse_config(p)?;
    Ok(Box::new(Findings {
        facts: facts(),
        ..Default::default()
    }))
}

/// The facts of this host's crypto: OpenSSL's version and how we time it.
pub fn facts() -> BTreeMap<String, Fact> {
    let mut m = BTreeMap::new();
    m.insert(
        "software.openssl".into(),
        Fact::known(openssl::version::version()),
    );
    m.insert(
        "crypto.method".into(),
        Fact::known(
            "EVP_PKEY_sign/verify over 36 random bytes (RSA PKCS#1 v1.5, no digest) as openssl speed; \
             wall-clock rates summed over threads",
        ),
    );
    m
}
