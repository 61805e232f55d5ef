//! A stop request (Ctrl-C) ends an idle-power measurement early, keeping what it measured
//! with the time it really covered. In a test binary of its own: the stop flag is the
//! process's, and would end the other tests' samplers and commands.

use rackbench_telemetry as telemetry;

use std::time::{Duration, Instant};

use telemetry::{measure_idle, SamplerConfig};

#[test]
fn a_stop_ends_the_idle_measurement_and_it_says_its_real_duration() {
    let mut cfg = SamplerConfig::local();
    cfg.host = "here".into();
    cfg.interval = Duration::from_millis(100);
    cfg.power.meter_command = Some("echo 150.5".into());
    let stopper = std::thread::spawn(|| {
        std::thread::sleep(Duration::from_millis(400));
        engine::stop::request_stop();
    });
    let t0 = Instant::now();
    // An hour asked for: it used to sleep all of it, whatever was asked meanwhile.
    let idle = measure_idle(&cfg, Duration::from_secs(3600));
    let took = t0.elapsed();
    stopper.join().unwrap();
    engine::stop::reset();
    assert!(took < Duration::from_secs(3), "returned after {took:?}");
    let idle = idle.unwrap();
    assert!(
        idle.duration_s > 0.2 && idle.duration_s < 3.0,
        "{}",
        idle.duration_s
    );
    let m = idle.power.iter().find(|p| p.source == "meter").unwrap();
    assert!((m.mean_watts - 150.5).abs() < 1e-9);
}
