//! kv against real redis-server instances launched on free loopback ports.

use rackbench_kv::Kv;

use engine::workload::{Ctx, Workload};
use serde_json::json;

fn have_redis() -> bool {
    if engine::launch::find_binary("redis-server", "redis-server").is_err() {
        eprintln!("skipped: redis-server is not installed (apt-get install redis-server)");
        return false;
    }
    true
}

fn kv(params: serde_json::Value) -> Kv {
    Kv::from_params(params.as_object().unwrap()).unwrap()
}

fn metric(step: &engine::StepOutput, name: &str) -> f64 {
    step.metrics
        .iter()
        .find(|m| m.name == name && m.labels.is_empty())
        .unwrap_or_else(|| panic!("no metric {name}"))
        .value
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

#[test]
fn set_then_get_counts_match_the_servers_own_counters() {
    if !have_redis() {
        return;
    }
    let mut w = kv(
        json!({"clients": 10, "requests": 20000, "keyspace": 100, "data_size": 10,
                         "pipeline": 4, "instances": 2, "tests": ["set", "get"]}),
    );
    let ctx = Ctx::quiet();
    w.prepare(&ctx).unwrap();
    assert_eq!(w.endpoints().len(), 2);
    let set = w.run_test("set", &ctx).unwrap();
    assert_eq!(metric(&set, "requests"), 20000.0);
    assert_eq!(
        metric(&set, "server_calls"),
        20000.0,
        "INFO commandstats disagrees"
    );
    assert!(set
        .flags
        .iter()
        .all(|f| f.code != "server_counter_mismatch"));
    assert!(metric(&set, "ops_per_s") > 0.0);
    let get = w.run_test("get", &ctx).unwrap();
    assert_eq!(metric(&get, "server_calls"), 20000.0);
    // 20000 random SETs over 100 keys on 2 instances: every key was written on both
    // instances (the quota is shared, so an instance may get fewer SETs than the other,
    // but far more than 100), so every GET must hit and match.
    let hit = get
        .metrics
        .iter()
        .find(|m| m.name == "hit_ratio_pct")
        .unwrap()
        .value;
    assert!(hit > 99.0, "hit ratio {hit}");
    assert!(get.flags.iter().all(|f| f.code != "value_mismatch"));
    assert!(!get.histograms.is_empty());
    assert_eq!(get.histograms[0].summary.count, 20000);
    w.cleanup();
}

#[test]
fn duration_mode_and_mix_and_open_loop() {
    if !have_redis() {
        return;
    }
    let mut w = kv(
        json!({"clients": 4, "duration": 0.5, "keyspace": 100, "tests": ["mix"],
                         "ratio": "1:1", "rate": 2000}),
    );
    let ctx = Ctx::quiet();
    w.prepare(&ctx).unwrap();
    let out = w.run_test("mix", &ctx).unwrap();
    let n = metric(&out, "requests");
    assert!(n > 500.0 && n <= 1100.0, "{n} requests at 2000/s for 0.5 s");
    assert!(out.metrics.iter().any(|m| m.name == "offered_rate_per_s"));
    let ops: Vec<_> = out
        .histograms
        .iter()
        .map(|h| (h.name.as_str(), h.kind.as_str()))
        .collect();
    assert!(
        ops.contains(&("set", "corrected")) && ops.contains(&("get", "service")),
        "{ops:?}"
    );
    w.cleanup();
}

#[test]
fn cleanup_leaves_no_server_behind_and_a_dead_server_fails_the_test() {
    if !have_redis() {
        return;
    }
    let mut w = kv(json!({"clients": 2, "requests": 2000000, "instances": 1, "tests": ["set"]}));
    let ctx = Ctx::quiet();
    w.prepare(&ctx).unwrap();
    let pid = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .find(|p| {
            std::fs::read_to_string(format!("/proc/{p}/cmdline"))
                .map(|c| {
                    c.contains("redis-server") && c.contains(&w.endpoints()[0].port().to_string())
                })
                .unwrap_or(false)
        })
        .expect("launched redis-server is running");
    // Kill the server mid-test: the test ends early, keeps its measurements, and fails.
    let killer = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        unsafe { libc_kill(pid as i32, 9) };
    });
    let out = w.run_test("set", &ctx).unwrap();
    killer.join().unwrap();
    assert!(out.error.is_some(), "a dead server must fail the test");
    assert!(
        metric(&out, "requests") > 0.0,
        "what was measured before is kept"
    );
    w.cleanup();
    assert!(!alive(pid));
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

#[test]
fn bad_parameters_are_clear_errors() {
    let e = Kv::from_params(json!({"clients": 0}).as_object().unwrap())
        .err()
        .unwrap();
    assert!(e.to_string().contains("clients"), "{e}");
    let e = Kv::from_params(json!({"bogus": 1}).as_object().unwrap())
        .err()
        .unwrap();
    assert!(e.to_string().contains("bogus"), "{e}");
    let e = Kv::from_params(json!({"tests": ["sett"]}).as_object().unwrap())
        .err()
        .unwrap();
    assert!(e.to_string().contains("sett"), "{e}");
}

#[test]
fn unreachable_target_is_a_clear_error() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    let mut w = kv(json!({"targets": [format!("127.0.0.1:{port}")]}));
    let e = w.prepare(&Ctx::quiet()).unwrap_err();
    assert!(format!("{e:#}").contains("cannot connect"), "{e:#}");
}

#[test]
fn search_and_levels_find_and_use_a_capacity() {
    if !have_redis() {
        return;
    }
    let mut w = kv(
        json!({"clients": 8, "tests": ["search", "levels"], "slo": "p99<50ms",
                         "step_duration": 0.3, "ramp_low": 2000, "levels": [100, 50]}),
    );
    let ctx = Ctx::quiet();
    w.prepare(&ctx).unwrap();
    let s = w.run_test("search", &ctx).unwrap();
    let best = metric(&s, "max_rate_meeting_slo_per_s");
    assert!(
        best >= 2000.0,
        "a loopback redis meets p99<50ms at 2000/s at least: {best}"
    );
    assert_eq!(s.headline, "max_rate_meeting_slo_per_s");
    let l = w.run_test("levels", &ctx).unwrap();
    assert_eq!(
        metric(&l, "capacity_per_s"),
        best,
        "levels run at the capacity search found"
    );
    // No power source here: perf/W is missing with a reason, never 0.
    assert!(
        l.missing
            .iter()
            .any(|m| m.name == "overall_reply_rate_per_w")
            || metric(&l, "overall_reply_rate_per_w") > 0.0
    );
    w.cleanup();
}

#[test]
fn ramp_reports_reply_rate_per_step() {
    if !have_redis() {
        return;
    }
    let mut w = kv(
        json!({"clients": 8, "tests": ["ramp"], "step_duration": 0.3,
                         "ramp_low": 1000, "ramp_high": 3000, "ramp_step": 1000}),
    );
    let ctx = Ctx::quiet();
    w.prepare(&ctx).unwrap();
    let r = w.run_test("ramp", &ctx).unwrap();
    let steps: Vec<f64> = r
        .metrics
        .iter()
        .filter(|m| m.name == "demanded_rate_per_s")
        .map(|m| m.value)
        .collect();
    assert_eq!(steps, vec![1000.0, 2000.0, 3000.0]);
    assert!(metric(&r, "max_reply_rate_per_s") > 500.0);
    w.cleanup();
}
