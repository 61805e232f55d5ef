//! Fuzz target for the agent protocol as the controller reads it: a remote host is
//! outside input, so its banner noise, frame headers and JSON messages are mutated.
//! See crates/fuzzkit for the knobs (`RACKBENCH_FUZZ_CASES`, `RACKBENCH_FUZZ_SEED`).

use fuzzkit::{mutate, random_bytes, Bytes, Fuzz, Rng};
use rackbench_hosts::proto::{
    read_frame, skip_to_magic, write_frame, Envelope, Hello, Request, MAGIC,
};

#[global_allocator]
static ALLOC: fuzzkit::TrackingAlloc = fuzzkit::TrackingAlloc;

/// What an agent writes: a login banner, the magic, its hello, then replies.
fn valid_stream() -> Vec<u8> {
    let mut out = b"Last login: today\n".to_vec();
    out.extend_from_slice(MAGIC);
    let hello: Hello = serde_json::from_value(serde_json::json!({
        "protocol": 1, "version": "0.1.0", "binary_sha256": "ab", "arch": "x86_64",
        "kernel": "6.1", "hostname": "h", "pid": 42, "cpus": 2, "address": "10.0.0.2",
        "peer_address": null, "servers": {"redis": "/usr/bin/redis-server", "nginx": null}
    }))
    .unwrap();
    write_frame(&mut out, &hello).unwrap();
    write_frame(
        &mut out,
        &Envelope::reply(1, Ok(serde_json::json!({"t": 1.5}))),
    )
    .unwrap();
    write_frame(
        &mut out,
        &Envelope::reply(2, Err(anyhow::anyhow!("no such service"))),
    )
    .unwrap();
    write_frame(
        &mut out,
        &Envelope::request(3, Request::MeasureIdle { secs: 2.0 }),
    )
    .unwrap();
    out
}

const WORDS: &[&str] = &[
    "\u{0}RACKBENCH-AGENT\u{0}",
    "\u{10}\u{0}\u{0}\u{0}",
    "\u{ff}\u{ff}\u{ff}\u{ff}",
    "{",
    "}",
    "\"ok\":",
    "\"op\":",
];

#[test]
fn fuzz_agent_frames() {
    let base = valid_stream();
    let mut whole: &[u8] = &base;
    skip_to_magic(&mut whole, 4096).unwrap();
    assert!(read_frame::<_, Hello>(&mut whole).unwrap().is_some());
    for _ in 0..3 {
        assert!(read_frame::<_, Envelope>(&mut whole).unwrap().is_some());
    }
    Fuzz::new("agent_frames")
        .cases(4000)
        .max_alloc(4 << 20)
        .run(
            |rng| {
                if rng.gen_range(0..6) == 0 {
                    Bytes(random_bytes(rng, 96))
                } else {
                    Bytes(mutate(rng, &base, WORDS))
                }
            },
            |b| {
                let mut r: &[u8] = &b.0;
                if skip_to_magic(&mut r, 4096).is_err() {
                    return;
                }
                if !matches!(read_frame::<_, Hello>(&mut r), Ok(Some(_))) {
                    return;
                }
                while let Ok(Some(_)) = read_frame::<_, Envelope>(&mut r) {}
            },
        );
}
