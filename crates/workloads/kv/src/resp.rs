//! The Redis protocol (RESP2) as a load-generator plug-in: requests encoded straight
//! into the connection's write buffer, replies parsed incrementally (an incomplete
//! reply is `Ok(None)`, a normal result). Values are derived from their key so every GET
//! reply is verified against what a SET wrote.

use std::collections::VecDeque;

use engine::load::{Outcome, Protocol};
use rand::distributions::{Distribution, Uniform};
use rand::rngs::SmallRng;
use rand::Rng;

/// Operation classes, in the order of `CLASS_NAMES`.
pub const SET: usize = 0;
pub const GET: usize = 1;
pub const PING: usize = 2;
pub const CLASS_NAMES: [&str; 3] = ["set", "get", "ping"];

/// What one connection sends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mix {
    Only(usize),
    /// SET with this probability, else GET (memtier's --ratio set:get).
    Ratio {
        set_fraction: f64,
    },
}

/// Key `key:%012d`, as redis-benchmark's `key:__rand_int__`.
pub const KEY_LEN: usize = 16;

/// "00" to "99": two digits per division (hot path: every request formats a key).
const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// `k`'s last 12 decimal digits, zero-padded, as redis-benchmark's `__rand_int__`.
#[inline]
fn digits12(k: u64) -> [u8; 12] {
    let mut d = [b'0'; 12];
    let mut v = k;
    // The leading zeros are there already: a keyspace of 10,000 takes two steps, not six.
    for i in (0..6).rev() {
        if v == 0 {
            break;
        }
        let p = (v % 100) as usize * 2;
        v /= 100;
        d[i * 2] = PAIRS[p];
        d[i * 2 + 1] = PAIRS[p + 1];
    }
    d
}

#[inline]
pub fn write_key(out: &mut Vec<u8>, k: u64) {
    let mut key = *b"key:000000000000";
    key[4..].copy_from_slice(&digits12(k));
    out.extend_from_slice(&key);
}

/// The value stored under key `k`: the key's 12 digits repeated to `size` bytes.
#[inline]
pub fn expected_value_matches(k: u64, value: &[u8]) -> bool {
    value_matches(&digits12(k), value)
}

/// `value` is `digits` repeated.
#[inline]
fn value_matches(digits: &[u8; 12], value: &[u8]) -> bool {
    value.chunks(12).all(|c| c == &digits[..c.len()])
}

#[inline]
fn write_value(out: &mut Vec<u8>, k: u64, size: usize) {
    let digits = digits12(k);
    let mut left = size;
    while left >= 12 {
        out.extend_from_slice(&digits);
        left -= 12;
    }
    out.extend_from_slice(&digits[..left]);
}

fn write_usize(out: &mut Vec<u8>, mut n: usize) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// One connection's RESP client state.
pub struct Resp {
    mix: Mix,
    keyspace: u64,
    /// Keys `0..keyspace`, the rejection zone computed once (gen_range computes it, a
    /// 64-bit division, on every call).
    keys: Uniform<u64>,
    value_size: usize,
    verify: bool,
    /// (class, key digits) of each request in flight, oldest first: the digits, not the
    /// key, so that checking a GET's value does not format the key again.
    inflight: VecDeque<(u8, [u8; 12])>,
    /// `$<size>\r\n` for SET values, precomputed.
    value_header: Vec<u8>,
    /// A whole SET request for key 0, copied once per SET and its key's digits and value
    /// written over (one copy instead of a capacity check and copy per part).
    set_template: Vec<u8>,
}

/// Where a SET request's key digits start: after `*3\r\n$3\r\nSET\r\n$16\r\nkey:`.
const SET_KEY_AT: usize = 22;

impl Resp {
    pub fn new(mix: Mix, keyspace: u64, value_size: usize, verify: bool) -> Resp {
        let mut value_header = Vec::new();
        value_header.push(b'$');
        write_usize(&mut value_header, value_size);
        value_header.extend_from_slice(b"\r\n");
        let mut set_template = b"*3\r\n$3\r\nSET\r\n$16\r\n".to_vec();
        write_key(&mut set_template, 0);
        set_template.extend_from_slice(b"\r\n");
        set_template.extend_from_slice(&value_header);
        write_value(&mut set_template, 0, value_size);
        set_template.extend_from_slice(b"\r\n");
        Resp {
            mix,
            keyspace: keyspace.max(1),
            keys: Uniform::new(0, keyspace.max(1)),
            value_size,
            verify,
            inflight: VecDeque::new(),
            value_header,
            set_template,
        }
    }
}

/// Position of the `\r` of the first line end. RESP header lines never hold a bare
/// `\n`, so the first `\n` ends the line.
#[inline]
fn find_crlf(buf: &[u8]) -> Result<Option<usize>, String> {
    match buf.iter().position(|&b| b == b'\n') {
        Some(nl) if nl > 0 && buf[nl - 1] == b'\r' => Ok(Some(nl - 1)),
        Some(_) => Err("line not terminated by CRLF".into()),
        None => Ok(None),
    }
}

/// A RESP length: `-1`, or up to 18 decimal digits. By hand: every bulk reply has one,
/// and going through `str::parse` cost more than the rest of the reply's parsing.
#[inline]
fn parse_int(s: &[u8]) -> Result<i64, String> {
    let bad = || format!("bad length {:?}", String::from_utf8_lossy(s));
    let (neg, digits) = match s {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, s),
    };
    if digits.is_empty() || digits.len() > 18 {
        return Err(bad());
    }
    let mut n: i64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return Err(bad());
        }
        n = n * 10 + i64::from(b - b'0');
    }
    Ok(if neg { -n } else { n })
}

/// The kind of one reply (a bulk string with its payload's offset and length).
#[derive(Debug)]
pub enum Reply {
    Simple,
    Error(String),
    Integer,
    Nil,
    Bulk(usize, usize),
    Array,
}

/// Largest bulk string accepted: redis's own `proto-max-bulk-len` default. A longer
/// declared length is a broken or hostile server, and waiting for it would buffer
/// without bound.
pub const MAX_BULK: usize = 512 << 20;

/// Deepest array nesting accepted. The benchmark's replies are flat and admin replies
/// nest at most a level or two; the limit keeps the recursion off the stack's end.
pub const MAX_DEPTH: usize = 16;

/// Parse one RESP2 reply at the front of `buf`: Ok(None) if incomplete, else the bytes
/// used and the reply's kind (with the bulk payload's range).
pub fn parse_reply(buf: &[u8]) -> Result<Option<(usize, Reply)>, String> {
    parse_nested(buf, 0)
}

fn parse_nested(buf: &[u8], depth: usize) -> Result<Option<(usize, Reply)>, String> {
    if buf.is_empty() {
        return Ok(None);
    }
    let Some(end) = find_crlf(buf)? else {
        return Ok(None);
    };
    if end == 0 {
        return Err("empty reply line (no type byte)".into());
    }
    let line = &buf[1..end];
    let used = end + 2;
    match buf[0] {
        b'+' => Ok(Some((used, Reply::Simple))),
        b'-' => {
            let msg = String::from_utf8_lossy(line);
            // Keep the error kind (first word), not the whole message, as the key.
            let kind = msg.split_whitespace().next().unwrap_or("ERR").to_string();
            Ok(Some((used, Reply::Error(kind))))
        }
        b':' => Ok(Some((used, Reply::Integer))),
        b'$' => {
            let n = parse_int(line)?;
            if n < 0 {
                return Ok(Some((used, Reply::Nil)));
            }
            let n = usize::try_from(n)
                .ok()
                .filter(|&n| n <= MAX_BULK)
                .ok_or_else(|| format!("bulk string of {n} bytes is over {MAX_BULK}"))?;
            if buf.len() < used + n + 2 {
                return Ok(None);
            }
            if &buf[used + n..used + n + 2] != b"\r\n" {
                return Err("bulk string not terminated by CRLF".into());
            }
            Ok(Some((used + n + 2, Reply::Bulk(used, n))))
        }
        b'*' => {
            // Arrays only come from admin commands; skip their elements.
            if depth >= MAX_DEPTH {
                return Err(format!("arrays nested deeper than {MAX_DEPTH}"));
            }
            let n = parse_int(line)?;
            let mut at = used;
            for _ in 0..n.max(0) {
                match parse_nested(&buf[at..], depth + 1)? {
                    Some((u, _)) => at += u,
                    None => return Ok(None),
                }
            }
            Ok(Some((at, Reply::Array)))
        }
        other => Err(format!("unexpected reply type byte {other:#04x}")),
    }
}

impl Protocol for Resp {
    #[inline]
    fn encode(&mut self, rng: &mut SmallRng, out: &mut Vec<u8>) -> usize {
        let class = match self.mix {
            Mix::Only(c) => c,
            Mix::Ratio { set_fraction } => {
                if rng.gen::<f64>() < set_fraction {
                    SET
                } else {
                    GET
                }
            }
        };
        let key = if self.keyspace > 1 {
            self.keys.sample(rng)
        } else {
            0
        };
        let digits = digits12(key);
        match class {
            SET => {
                let at = out.len();
                out.extend_from_slice(&self.set_template);
                out[at + SET_KEY_AT..at + SET_KEY_AT + 12].copy_from_slice(&digits);
                let v = at + SET_KEY_AT + 14 + self.value_header.len();
                for chunk in out[v..v + self.value_size].chunks_mut(12) {
                    chunk.copy_from_slice(&digits[..chunk.len()]);
                }
            }
            GET => {
                // One copy of the whole request (each extend checks capacity).
                let mut req = *b"*2\r\n$3\r\nGET\r\n$16\r\nkey:000000000000\r\n";
                req[22..34].copy_from_slice(&digits);
                out.extend_from_slice(&req);
            }
            _ => out.extend_from_slice(b"*1\r\n$4\r\nPING\r\n"),
        }
        self.inflight.push_back((class as u8, digits));
        class
    }

    #[inline]
    fn parse(&mut self, buf: &[u8]) -> Result<Option<(usize, Outcome)>, String> {
        // The reply the oldest request expects, whole at the front (nearly every reply
        // of a benchmark): recognised by comparing bytes, without scanning for the line
        // end or reading the length's digits. Anything else takes the general parser.
        if let Some(&(class, digits)) = self.inflight.front() {
            let h = self.value_header.len();
            let end = h + self.value_size;
            let fast = match class as usize {
                GET if buf.len() >= end + 2
                    && buf.starts_with(&self.value_header)
                    && buf[end] == b'\r'
                    && buf[end + 1] == b'\n' =>
                {
                    let good = !self.verify || value_matches(&digits, &buf[h..end]);
                    Some((
                        end + 2,
                        if good {
                            Outcome::Hit
                        } else {
                            Outcome::Mismatch
                        },
                    ))
                }
                GET if buf.starts_with(b"$-1\r\n") => Some((5, Outcome::Miss)),
                SET if buf.starts_with(b"+OK\r\n") => Some((5, Outcome::Ok)),
                _ => None,
            };
            if fast.is_some() {
                self.inflight.pop_front();
                return Ok(fast);
            }
        }
        let Some((used, reply)) = parse_reply(buf)? else {
            return Ok(None);
        };
        let (class, digits) = self.inflight.pop_front().ok_or("reply without a request")?;
        let outcome = match (class as usize, reply) {
            (_, Reply::Error(kind)) => Outcome::Error(kind),
            (GET, Reply::Nil) => Outcome::Miss,
            (GET, Reply::Bulk(at, n)) => {
                if !self.verify
                    || (n == self.value_size && value_matches(&digits, &buf[at..at + n]))
                {
                    Outcome::Hit
                } else {
                    Outcome::Mismatch
                }
            }
            (SET, Reply::Simple) | (PING, Reply::Simple) => Outcome::Ok,
            (_, _) => Outcome::Error("unexpected_reply".into()),
        };
        Ok(Some((used, outcome)))
    }

    fn reset(&mut self) {
        self.inflight.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// The SET written over its template is byte for byte the request spelled out, for
    /// values shorter than, equal to and longer than the 12 key digits they repeat.
    #[test]
    fn a_set_from_its_template_is_the_request_spelled_out() {
        for size in [0usize, 1, 5, 12, 13, 100] {
            let mut r = Resp::new(Mix::Only(SET), 1_000_000, size, true);
            let mut rng = SmallRng::seed_from_u64(size as u64);
            let mut out = b"previous".to_vec();
            for _ in 0..3 {
                r.encode(&mut rng, &mut out);
            }
            let mut at = 8;
            for (_, key) in &r.inflight {
                let digits = String::from_utf8_lossy(key);
                let value: String = digits.chars().cycle().take(size).collect();
                let want =
                    format!("*3\r\n$3\r\nSET\r\n$16\r\nkey:{digits}\r\n${size}\r\n{value}\r\n");
                assert_eq!(
                    String::from_utf8_lossy(&out[at..at + want.len()]),
                    want,
                    "size {size}"
                );
                at += want.len();
            }
            assert_eq!(at, out.len());
        }
    }

    #[test]
    fn encodes_set_like_redis_benchmark() {
        let mut r = Resp::new(Mix::Only(SET), 10_000, 10, true);
        let mut rng = SmallRng::seed_from_u64(1);
        let mut out = Vec::new();
        r.encode(&mut rng, &mut out);
        let s = String::from_utf8(out).unwrap();
        assert!(
            s.starts_with("*3\r\n$3\r\nSET\r\n$16\r\nkey:0000000"),
            "{s}"
        );
        assert!(s.contains("\r\n$10\r\n"));
        assert!(s.ends_with("\r\n"));
    }

    #[test]
    fn parses_incrementally_and_verifies_values() {
        let mut r = Resp::new(Mix::Only(GET), 1, 5, true);
        let mut rng = SmallRng::seed_from_u64(1);
        let mut out = Vec::new();
        r.encode(&mut rng, &mut out);
        r.encode(&mut rng, &mut out);
        r.encode(&mut rng, &mut out);
        // key 0 -> digits "000000000000": value "00000"
        let wire = b"$5\r\n00000\r\n$-1\r\n$5\r\n00x00\r\n";
        assert!(
            r.parse(&wire[..6]).unwrap().is_none(),
            "incomplete is not an error"
        );
        let (u1, o1) = r.parse(wire).unwrap().unwrap();
        assert_eq!(o1, Outcome::Hit);
        let (u2, o2) = r.parse(&wire[u1..]).unwrap().unwrap();
        assert_eq!(o2, Outcome::Miss);
        let (_, o3) = r.parse(&wire[u1 + u2..]).unwrap().unwrap();
        assert_eq!(o3, Outcome::Mismatch);
    }

    /// The byte-comparing path for the expected reply and the general parser agree on
    /// every reply near it: whole, cut short, wrongly ended, the wrong length, nil.
    #[test]
    fn the_expected_reply_and_its_near_misses_parse_as_the_general_parser_does() {
        let get = |wire: &[u8]| {
            let mut r = Resp::new(Mix::Only(GET), 1, 10, true);
            r.encode(&mut SmallRng::seed_from_u64(1), &mut Vec::new());
            r.parse(wire)
        };
        // Key 0: the value is "0000000000".
        assert_eq!(get(b"$10\r\n0000000000\r\n+"), Ok(Some((17, Outcome::Hit))));
        assert_eq!(
            get(b"$10\r\n0000x00000\r\n"),
            Ok(Some((17, Outcome::Mismatch)))
        );
        assert_eq!(get(b"$10\r\n00000"), Ok(None));
        assert_eq!(get(b"$10\r\n0000000000\r"), Ok(None));
        assert!(get(b"$10\r\n0000000000xx").is_err());
        assert_eq!(get(b"$5\r\n00000\r\n"), Ok(Some((11, Outcome::Mismatch))));
        assert_eq!(get(b"$100\r\n"), Ok(None));
        assert_eq!(get(b"$-1\r\n"), Ok(Some((5, Outcome::Miss))));
        let set = |wire: &[u8]| {
            let mut r = Resp::new(Mix::Only(SET), 1, 10, true);
            r.encode(&mut SmallRng::seed_from_u64(1), &mut Vec::new());
            r.parse(wire)
        };
        assert_eq!(set(b"+OK\r\n$"), Ok(Some((5, Outcome::Ok))));
        assert_eq!(set(b"+OK\r"), Ok(None));
        assert_eq!(set(b"+QUEUED\r\n"), Ok(Some((9, Outcome::Ok))));
        assert_eq!(
            set(b"-ERR no\r\n"),
            Ok(Some((9, Outcome::Error("ERR".into()))))
        );
    }

    #[test]
    fn errors_are_data_by_kind() {
        let mut r = Resp::new(Mix::Only(SET), 1, 3, true);
        let mut rng = SmallRng::seed_from_u64(1);
        r.encode(&mut rng, &mut Vec::new());
        let (_, o) = r
            .parse(b"-OOM command not allowed when used memory > 'maxmemory'\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(o, Outcome::Error("OOM".into()));
    }

    #[test]
    fn garbage_is_a_protocol_error() {
        let mut r = Resp::new(Mix::Only(SET), 1, 3, true);
        r.encode(&mut SmallRng::seed_from_u64(1), &mut Vec::new());
        assert!(r.parse(b"?what\r\n").is_err());
    }

    #[test]
    fn keys_values_and_lengths_by_hand_agree_with_the_slow_way() {
        for k in [
            0u64,
            7,
            42,
            999,
            10_000,
            123_456_789_012,
            999_999_999_999,
            u64::MAX,
        ] {
            let slow = format!("{:012}", k % 1_000_000_000_000);
            let mut out = Vec::new();
            write_key(&mut out, k);
            assert_eq!(out, format!("key:{slow}").as_bytes(), "{k}");
            let mut v = Vec::new();
            write_value(&mut v, k, 30);
            assert_eq!(v, &slow.repeat(3).as_bytes()[..30]);
            assert!(expected_value_matches(k, &v));
            let mut r = Resp::new(Mix::Only(GET), u64::MAX, 3, true);
            let mut get = Vec::new();
            r.encode(&mut SmallRng::seed_from_u64(k), &mut get);
            let key: u64 = std::str::from_utf8(&r.inflight[0].1)
                .unwrap()
                .parse()
                .unwrap();
            assert_eq!(
                get,
                format!(
                    "*2\r\n$3\r\nGET\r\n$16\r\nkey:{:012}\r\n",
                    key % 1_000_000_000_000
                )
                .as_bytes()
            );
        }
        for (text, n) in [
            ("0", 0),
            ("-1", -1),
            ("512", 512),
            ("123456789012345678", 123456789012345678),
        ] {
            assert_eq!(parse_int(text.as_bytes()), Ok(n), "{text}");
        }
        for bad in ["", "-", "1x", "+1", "1234567890123456789", " 1"] {
            assert!(parse_int(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn fuzz_regression_empty_line_is_an_error() {
        // Found by fuzz_resp_parse_reply: a bare CRLF sliced the type byte out of bounds.
        assert!(parse_reply(b"\r\n").is_err());
    }

    #[test]
    fn fuzz_regression_deep_arrays_are_an_error() {
        // Each `*1` recursed once: a server sending megabytes of them overflowed the stack.
        let deep = b"*1\r\n".repeat(200_000);
        assert!(parse_reply(&deep).unwrap_err().contains("nested deeper"));
        let ok = [b"*1\r\n".repeat(MAX_DEPTH), b":1\r\n".to_vec()].concat();
        assert!(parse_reply(&ok).unwrap().is_some());
    }

    #[test]
    fn fuzz_regression_huge_bulk_length_is_an_error() {
        // Waiting for 2^62 bytes would buffer whatever the server sends, forever.
        assert!(parse_reply(b"$4611686018427387904\r\n").is_err());
        assert!(parse_reply(b"$9223372036854775807\r\nab").is_err());
        assert!(parse_reply(b"$536870912\r\n").unwrap().is_none());
    }

    #[test]
    fn value_is_derived_from_key() {
        let mut v = Vec::new();
        write_value(&mut v, 1234, 30);
        assert_eq!(&v[..12], b"000000001234");
        assert!(expected_value_matches(1234, &v));
        assert!(!expected_value_matches(1235, &v));
    }

    #[test]
    fn ratio_mix_respects_fraction() {
        let mut r = Resp::new(Mix::Ratio { set_fraction: 0.1 }, 100, 3, true);
        let mut rng = SmallRng::seed_from_u64(7);
        let mut sets = 0;
        for _ in 0..10_000 {
            if r.encode(&mut rng, &mut Vec::new()) == SET {
                sets += 1;
            }
        }
        assert!((800..1200).contains(&sets), "{sets}");
    }
}
