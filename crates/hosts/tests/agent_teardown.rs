//! An agent whose controller goes away stops what it launched at once, even while a
//! service is answering a question that holds the services (a TPC-C consistency check's
//! table scan, for minutes on a big build): the processes are killed first, and the
//! question ends with its server.
//!
//! In a file of its own: ending everything kills every process this test binary launched
//! and asks every load in it to stop.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use engine::host::{Host, Service, ServiceCtx};
use engine::launch::ChildGuard;
use engine::testing::{kill_left, marker, running};
use engine::workload::{Params, Registration};
use model::Fact;
use rackbench_hosts::{agent, LocalHost};

/// A server (`sleep MARKER`) and a question about it that runs until the server is gone,
/// or for a minute, as a scan on a database does.
struct Scanned {
    server: Option<ChildGuard>,
}

impl Service for Scanned {
    fn endpoints(&self) -> Vec<String> {
        Vec::new()
    }
    fn facts(&self) -> BTreeMap<String, Fact> {
        BTreeMap::new()
    }
    fn query(&mut self, _what: &str) -> anyhow::Result<serde_json::Value> {
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(60) {
            if let Some(why) = self.server.as_mut().and_then(|s| s.exited()) {
                anyhow::bail!("the server went: {why}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(serde_json::Value::Null)
    }
    fn stop(&mut self) {
        if let Some(mut s) = self.server.take() {
            s.stop(Duration::from_secs(1));
        }
    }
}

fn start(params: &Params, _ctx: &ServiceCtx) -> anyhow::Result<Box<dyn Service>> {
    let mark = params["marker"].as_str().unwrap_or_default();
    let server = ChildGuard::spawn("sleep", Command::new("sleep").arg(mark))?;
    Ok(Box::new(Scanned {
        server: Some(server),
    }))
}

/// A question of a minute about a server that is not ours.
struct Stubborn;

impl Service for Stubborn {
    fn endpoints(&self) -> Vec<String> {
        Vec::new()
    }
    fn facts(&self) -> BTreeMap<String, Fact> {
        BTreeMap::new()
    }
    fn query(&mut self, _what: &str) -> anyhow::Result<serde_json::Value> {
        std::thread::sleep(Duration::from_secs(60));
        Ok(serde_json::Value::Null)
    }
    fn stop(&mut self) {}
}

fn catalog(name: &str) -> Option<Registration> {
    let service: engine::host::ServiceFn = match name {
        "scanned" => start,
        "stubborn" => |_, _| Ok(Box::new(Stubborn)),
        _ => return None,
    };
    Some(Registration {
        name: "test",
        about: "a server and a long question about it",
        list_keys: &[],
        text_keys: &[],
        flags: |c| c,
        build: |_| anyhow::bail!("not built in this test"),
        service: Some(service),
        has_server: true,
        driver: None,
        programs: engine::no_programs,
        lengthen: "--duration",
    })
}

/// One test at a time: ending everything kills every process this binary launched.
static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn a_question_under_way_does_not_keep_what_was_launched_running() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let mark = marker();
    let host = Arc::new(LocalHost::new("h", catalog, false));
    let mut params = Params::new();
    params.insert("marker".into(), mark.clone().into());
    let svc = host.start_service("scanned", &params).unwrap();
    assert_eq!(running(&mark).len(), 1, "the server runs");
    let asking = {
        let host = host.clone();
        std::thread::spawn(move || host.service_query(svc.id, "check"))
    };
    std::thread::sleep(Duration::from_millis(200));

    let t0 = Instant::now();
    agent::end_everything(&host, Duration::from_secs(30));
    let took = t0.elapsed();
    let left = kill_left(&mark);
    assert!(left.is_empty(), "the server still runs as {left:?}");
    // Before, the services' stop waited for the question: a minute here.
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let answer = asking.join().unwrap();
    assert!(answer.is_err(), "the question ended with its server");
}

/// A question that holds the services whatever happens (a check on a database given
/// with `--dsn`, nothing of ours to kill) delays the end by the limit, no longer.
#[test]
fn a_question_that_does_not_end_delays_the_end_by_the_limit() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let host = Arc::new(LocalHost::new("h", catalog, false));
    let svc = host.start_service("stubborn", &Params::new()).unwrap();
    let _asking = {
        let host = host.clone();
        std::thread::spawn(move || host.service_query(svc.id, "check"))
    };
    std::thread::sleep(Duration::from_millis(200));
    let t0 = Instant::now();
    agent::end_everything(&host, Duration::from_millis(500));
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_millis(500) && took < Duration::from_secs(5),
        "{took:?}"
    );
}
