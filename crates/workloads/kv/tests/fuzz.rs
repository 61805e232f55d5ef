//! Fuzz targets for what kv reads from the network: RESP replies from a redis server
//! (or anything listening on `--target`). See crates/fuzzkit for the knobs
//! (`RACKBENCH_FUZZ_CASES`, `RACKBENCH_FUZZ_SEED`).

use engine::load::Protocol;
use fuzzkit::{mutate, pick, random_bytes, random_tokens, Bytes, Fuzz, Rng, SmallRng};
use rackbench_kv::resp::{parse_reply, Mix, Reply, Resp};
use rackbench_kv::server::{command_calls, parse_info};
use rand::SeedableRng;

#[global_allocator]
static ALLOC: fuzzkit::TrackingAlloc = fuzzkit::TrackingAlloc;

/// Replies a redis server really sends, one each.
const VALID: &[&[u8]] = &[
    b"+OK\r\n",
    b"+PONG\r\n",
    b"-ERR unknown command\r\n",
    b"-OOM command not allowed\r\n",
    b":1234\r\n",
    b"$5\r\n00000\r\n",
    b"$0\r\n\r\n",
    b"$-1\r\n",
    b"*2\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n",
    b"*0\r\n",
    b"*-1\r\n",
    b"*3\r\n:1\r\n*1\r\n+x\r\n$-1\r\n",
];

const WORDS: &[&str] = &["+", "-", ":", "$", "*", "\r\n", "$-1\r\n", "*1\r\n", "OK"];

/// A reply stream: valid replies back to back, then mutated; or random tokens; or bytes.
fn stream(rng: &mut SmallRng) -> Bytes {
    match rng.gen_range(0..4) {
        0 => Bytes(random_bytes(rng, 64)),
        1 => Bytes(random_tokens(rng, WORDS, 24)),
        _ => {
            let mut base: Vec<u8> = Vec::new();
            for _ in 0..rng.gen_range(1..4) {
                let piece: &[u8] = pick::<&[u8]>(rng, VALID);
                base.extend_from_slice(piece);
            }
            Bytes(mutate(rng, &base, WORDS))
        }
    }
}

/// Parse replies off the front of `buf` until it is used up, incomplete or an error,
/// checking every consumed length and payload range lies inside the buffer.
fn drain(buf: &[u8]) {
    let mut at = 0;
    while at < buf.len() {
        match parse_reply(&buf[at..]) {
            Ok(Some((used, reply))) => {
                assert!(used > 0 && at + used <= buf.len(), "used {used} at {at}");
                if let Reply::Bulk(start, n) = reply {
                    assert!(start + n <= used, "bulk {start}+{n} past {used}");
                }
                at += used;
            }
            Ok(None) | Err(_) => return,
        }
    }
}

#[test]
fn fuzz_resp_parse_reply() {
    Fuzz::new("resp_parse_reply")
        .cases(20_000)
        .max_alloc(1 << 20)
        .run(stream, |b| drain(&b.0));
}

#[test]
fn fuzz_resp_client_stream() {
    // The load generator's view: replies matched to requests in flight, fed in reads of
    // any size as the socket delivers them.
    Fuzz::new("resp_client_stream")
        .cases(10_000)
        .max_alloc(1 << 20)
        .run(
            |rng| (stream(rng), rng.gen_range(1..16usize)),
            |(b, step)| {
                let mix = Mix::Ratio { set_fraction: 0.5 };
                let mut r = Resp::new(mix, 100, 5, true);
                let mut rng = SmallRng::seed_from_u64(1);
                for _ in 0..8 {
                    r.encode(&mut rng, &mut Vec::new());
                }
                let mut end = 0;
                let mut at = 0;
                while end < b.0.len() {
                    end = (end + step).min(b.0.len());
                    loop {
                        match r.parse(&b.0[at..end]) {
                            Ok(Some((used, _))) => {
                                assert!(used > 0 && at + used <= end);
                                at += used;
                            }
                            Ok(None) => break,
                            Err(_) => return,
                        }
                    }
                }
            },
        );
}

#[test]
fn fuzz_resp_valid_prefixes_are_incomplete() {
    // Every proper prefix of a valid reply is "wait for more", never an error or a reply.
    Fuzz::new("resp_valid_prefixes").cases(200).run(
        |rng| Bytes(pick(rng, VALID).to_vec()),
        |b| {
            for cut in 0..b.0.len() {
                assert!(
                    matches!(parse_reply(&b.0[..cut]), Ok(None)),
                    "prefix {:?}",
                    Bytes(b.0[..cut].to_vec())
                );
            }
            let (used, _) = parse_reply(&b.0).unwrap().unwrap();
            assert_eq!(used, b.0.len());
        },
    );
}

#[test]
fn fuzz_redis_info() {
    // `INFO` text from the server: parsed into counters, never trusted to be well formed.
    const INFO: &[u8] = b"# Server\r\nredis_version:7.0.15\r\n\r\n# Commandstats\r\ncmdstat_set:calls=100,usec=250,usec_per_call=2.50\r\ncmdstat_get:calls=18446744073709551615,usec=1\r\n";
    Fuzz::new("redis_info").cases(3000).run(
        |rng| Bytes(mutate(rng, INFO, &["cmdstat_", "calls=", ",", ":"])),
        |b| {
            let info = parse_info(&String::from_utf8_lossy(&b.0));
            let _ = command_calls(&info);
        },
    );
}
