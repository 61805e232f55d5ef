//! Fuzz targets for what http reads from the network: HTTP/1.1 responses from nginx or
//! any `--target`, and nginx's stub_status page. See crates/fuzzkit for the knobs
//! (`RACKBENCH_FUZZ_CASES`, `RACKBENCH_FUZZ_SEED`).

use engine::load::Outcome;
use fuzzkit::{mutate, pick, random_bytes, random_tokens, Bytes, Fuzz, Rng, SmallRng};
use rackbench_http::nginx::parse_stub_status;
use rackbench_http::proto::{parse_response, parse_response_with, LastHead};

#[global_allocator]
static ALLOC: fuzzkit::TrackingAlloc = fuzzkit::TrackingAlloc;

/// Responses as servers send them.
const VALID: &[&[u8]] = &[
    b"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nContent-Type: text/html\r\nContent-Length: 12\r\nConnection: keep-alive\r\n\r\nhello world\n",
    b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found",
    b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Trailer: yes\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 3\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    b"HTTP/1.1 204 No Content\r\n\r\n",
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 301 Moved Permanently\r\nLocation: /x\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.0 304 Not Modified\r\nContent-Length: 100\r\n\r\n",
];

const WORDS: &[&str] = &[
    "HTTP/1.1 ",
    "200 OK",
    "\r\n\r\n",
    "Content-Length: ",
    "content-length:18446744073709551615",
    "Transfer-Encoding: chunked",
    "Connection: close",
    "0\r\n\r\n",
    "ffffffffffffffff",
    "FFFFFFFFFFFFFFC0",
    "7fffffffffffffff",
    "fffffffffffffffe\r\n",
    ";ext",
];

fn stream(rng: &mut SmallRng) -> Bytes {
    match rng.gen_range(0..5) {
        0 => Bytes(random_bytes(rng, 96)),
        1 => Bytes(
            [
                b"HTTP/1.1 200 OK\r\n".as_slice(),
                &random_tokens(rng, WORDS, 12),
            ]
            .concat(),
        ),
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

/// Every response `stream` yields when it arrives in reads of `step` bytes, and whether
/// it ended in an error. Checks each consumed length lies inside what has arrived.
fn parse_in_steps(stream: &[u8], step: usize, head: bool) -> (Vec<Outcome>, bool) {
    parse_in_steps_with(stream, step, head, None)
}

/// [`parse_in_steps`], taking heads like the last one as parsed when `last` is given.
fn parse_in_steps_with(
    stream: &[u8],
    step: usize,
    head: bool,
    mut last: Option<&mut LastHead>,
) -> (Vec<Outcome>, bool) {
    let mut cached = None;
    let mut out = Vec::new();
    let (mut at, mut end) = (0, 0);
    while end < stream.len() {
        end = (end + step).min(stream.len());
        loop {
            if at == end {
                break;
            }
            let part = &stream[at..end];
            let parsed = match last.as_deref_mut() {
                Some(l) => parse_response_with(part, head, &mut cached, &mut false, Some(l)),
                None => parse_response(part, head, &mut cached),
            };
            match parsed {
                Ok(Some((used, o))) => {
                    assert!(used > 0 && at + used <= end, "used {used} at {at} of {end}");
                    at += used;
                    out.push(o);
                }
                Ok(None) => break,
                Err(_) => return (out, true),
            }
        }
    }
    (out, false)
}

#[test]
fn fuzz_http_parse_response() {
    // Properties: no panic, no overrun, and the same responses whatever the read size
    // (the head cached across reads must not change what is parsed).
    Fuzz::new("http_parse_response")
        .cases(6000)
        .max_alloc(1 << 20)
        .run(
            |rng| (stream(rng), rng.gen_range(1..24usize), rng.gen_bool(0.1)),
            |(b, step, head)| {
                let whole = parse_in_steps(&b.0, b.0.len().max(1), *head);
                let stepped = parse_in_steps(&b.0, *step, *head);
                assert_eq!(whole, stepped, "read size {step} changed the parse");
                // Remembering the last head changes nothing either, whether it was this
                // stream's or another's, read whole or in steps.
                let mut last = LastHead::default();
                let _ = parse_in_steps_with(VALID[0], VALID[0].len(), false, Some(&mut last));
                for s in [b.0.len().max(1), *step, b.0.len().max(1)] {
                    let remembered = parse_in_steps_with(&b.0, s, *head, Some(&mut last));
                    assert_eq!(whole, remembered, "the last head changed the parse");
                }
            },
        );
}

#[test]
fn fuzz_http_valid_prefixes_are_incomplete() {
    Fuzz::new("http_valid_prefixes").cases(100).run(
        |rng| Bytes(pick(rng, VALID).to_vec()),
        |b| {
            for cut in 0..b.0.len() {
                let r = parse_response(&b.0[..cut], false, &mut None);
                assert!(matches!(r, Ok(None)), "prefix of {cut} bytes: {r:?}");
            }
        },
    );
}

#[test]
fn fuzz_nginx_stub_status() {
    const STUB: &[u8] = b"Active connections: 2 \nserver accepts handled requests\n 16 16 31 \nReading: 0 Writing: 1 Waiting: 1 \n";
    Fuzz::new("nginx_stub_status").cases(3000).run(
        |rng| Bytes(mutate(rng, STUB, &["accepts handled requests", "\n"])),
        |b| {
            let _ = parse_stub_status(&String::from_utf8_lossy(&b.0));
        },
    );
}
