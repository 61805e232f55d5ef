//! How many threads carry a test's TCP streams. A binary of its own: it counts this
//! process's threads by name, which other tests running beside it would add to.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rackbench_net::proto::Proto;
use rackbench_net::{sender, spawn_receiver, step_output, SendSpec, ServeOptions};

/// The names of this process's threads that start with `prefix`.
fn threads_named(prefix: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        if let Ok(comm) = std::fs::read_to_string(task.path().join("comm")) {
            let comm = comm.trim();
            if comm.starts_with(prefix) {
                names.insert(comm.to_string());
            }
        }
    }
    names
}

/// The most sending and receiving threads seen at once while `spec` ran, and its report.
fn run_watching(spec: &SendSpec) -> ((usize, usize), sender::TestReport) {
    let done = AtomicBool::new(false);
    std::thread::scope(|sc| {
        let watch = sc.spawn(|| {
            let (mut tx, mut rx) = (0, 0);
            while !done.load(Ordering::Relaxed) {
                tx = tx.max(threads_named("net-tx-").len());
                rx = rx.max(threads_named("net-rx-").len());
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            (tx, rx)
        });
        let rep = sender::run(spec, &AtomicU64::new(0), &|| false, None);
        done.store(true, Ordering::Relaxed);
        (watch.join().unwrap(), rep.unwrap())
    })
}

/// Four TCP streams with each end pinned to one CPU run in one thread at each end (as
/// iperf3 3.12 runs them), not four taking turns on the CPU; each stream still carries
/// its own bytes, all of which arrive. Given two CPUs, the sender takes two threads.
#[test]
fn tcp_streams_share_one_thread_per_cpu_at_each_end() {
    let mine = engine::launch::allowed_cpus();
    let (first, last) = (mine[0], mine[mine.len() - 1]);
    let (addr, stop, h) = spawn_receiver(ServeOptions::default()).unwrap();
    let spec = SendSpec {
        target: addr.to_string(),
        proto: Proto::Tcp,
        payload: 128 * 1024,
        duration_s: 1.0,
        warmup_s: 0.0,
        streams: 4,
        interval_s: 0.2,
        rate_bps: 0.0,
        sender_cpus: vec![last],
        receiver_cpus: vec![first],
        congestion: None,
        window: None,
        udp_batch: 1,
        udp_gso: 0,
        zerocopy: false,
    };
    let ((tx, rx), rep) = run_watching(&spec);
    assert_eq!(rep.error, None);
    assert_eq!((tx, rx), (1, 1), "sending and receiving threads at once");
    assert_eq!(step_output(&spec, &rep).loadgen_threads, Some(1));
    assert_eq!(rep.sent.len(), 4);
    for (i, s) in rep.sent.iter().enumerate() {
        assert!(s.bytes > 0, "stream {i} sent nothing: {:?}", rep.sent);
    }
    let sent: u64 = rep.sent.iter().map(|s| s.bytes).sum();
    let received: u64 = rep.received.iter().map(|s| s.bytes).sum();
    assert_eq!(sent, received);
    assert!(
        rep.received.iter().all(|s| s.bytes > 0),
        "{:?}",
        rep.received
    );

    if mine.len() >= 2 {
        let spec = SendSpec {
            sender_cpus: vec![first, last],
            streams: 3,
            ..spec
        };
        let ((tx, rx), rep) = run_watching(&spec);
        assert_eq!(rep.error, None);
        assert_eq!((tx, rx), (2, 1), "three streams over two sender CPUs");
        assert_eq!(step_output(&spec, &rep).loadgen_threads, Some(2));
        assert!(rep.sent.iter().all(|s| s.bytes > 0), "{:?}", rep.sent);
    }
    stop.store(true, Ordering::Relaxed);
    let _ = h.join().unwrap();
}
