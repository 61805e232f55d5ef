//! The Redis protocol (RESP2) as a load-generator plug-in: requests encoded straight
//! into the connection's write buffer, replies parsed incrementally (an incomplete
//! reply is `Ok(None)`, a normal result). Values are derived from their key so every GET
//! reply is verified against what a SET wrote.

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

/// A key's last 12 decimal digits as they are written, zero-padded (redis-benchmark's
/// `__rand_int__`): the first 4 and the last 8 ASCII bytes as little-endian words, made
/// with a few multiplications in registers (SWAR) and stored whole. Hot path: every
/// request formats a key; digits written byte by byte and read back as words stalled
/// store forwarding, which was two thirds of the encoder's time.
///
/// Packed to 12 bytes (aligned to 4): a request awaiting its reply ([`Awaited`]) is 16
/// bytes with its class, not 24.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C, packed(4))]
pub struct Digits {
    hi: u32,
    lo: u64,
}

/// The most keys a keyspace can have: a key's number is 12 digits ([`Digits`]).
pub const MAX_KEYSPACE: u64 = 1_000_000_000_000;

impl Digits {
    #[inline]
    pub fn of(k: u64) -> Digits {
        if k < 100_000_000 {
            // Every key of a keyspace up to 10^8: its first four digits are zeros, no
            // division or SWAR needed for them.
            return Digits {
                hi: u32::from_le_bytes(*b"0000"),
                lo: eight_digits(k as u32),
            };
        }
        let k = if k < MAX_KEYSPACE {
            k
        } else {
            k % MAX_KEYSPACE
        };
        Digits {
            hi: four_digits((k / 100_000_000) as u32),
            lo: eight_digits((k % 100_000_000) as u32),
        }
    }

    #[inline]
    pub fn bytes(self) -> [u8; 12] {
        let mut d = [0u8; 12];
        d.copy_from_slice(&self.word().to_le_bytes()[..12]);
        d
    }

    /// The 12 digits as one little-endian number, the first digit in the lowest byte: the
    /// short rest of a value is written and checked from it in registers. Built as a byte
    /// array on the stack instead, its 8-byte loads spanned the array's 4- and 8-byte
    /// stores, which the CPU cannot forward: a stall of a dozen cycles a request (28% of
    /// `issue`'s samples at -P 100, and the most of `matches`').
    #[inline]
    fn word(self) -> u128 {
        u128::from(self.hi) | (u128::from(self.lo) << 32)
    }

    /// Write the 12 digits at `out[at..at + 12]`: two stores.
    #[inline]
    fn put(self, out: &mut [u8], at: usize) {
        out[at..at + 4].copy_from_slice(&self.hi.to_le_bytes());
        out[at + 4..at + 12].copy_from_slice(&self.lo.to_le_bytes());
    }

    /// Write the digits repeated over `value` (a key's stored value): whole repetitions
    /// as two stores each, the rest copied from the digits' first bytes.
    #[inline]
    fn fill(self, value: &mut [u8]) {
        let mut chunks = value.chunks_exact_mut(12);
        for c in &mut chunks {
            self.put(c, 0);
        }
        put_short(chunks.into_remainder(), self.word());
    }

    /// `value` is the digits repeated: whole repetitions compared as words, the rest
    /// against the digits' first bytes ([`eq_short`]).
    #[inline]
    fn matches(self, value: &[u8]) -> bool {
        let mut chunks = value.chunks_exact(12);
        for c in &mut chunks {
            let hi = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            let lo = u64::from_le_bytes([c[4], c[5], c[6], c[7], c[8], c[9], c[10], c[11]]);
            if hi != self.hi || lo != self.lo {
                return false;
            }
        }
        eq_short(chunks.remainder(), self.word())
    }
}

/// `a` (under 12 bytes) is `digits`' first `a.len()` bytes ([`Digits::word`]): compared as
/// two overlapping words (its first and last 8, or 4, bytes), not a `memcmp` call. Hot
/// path: the rest of a GET's value after its whole repetitions of the key's digits (all 10
/// bytes of one of `-d 10`).
#[inline]
fn eq_short(a: &[u8], digits: u128) -> bool {
    let n = a.len();
    debug_assert!(n < 12);
    let word8 = |at: usize| u64::from_le_bytes(a[at..at + 8].try_into().unwrap());
    let word4 = |at: usize| u32::from_le_bytes(a[at..at + 4].try_into().unwrap());
    // The digits' bytes from `at` on, in the low bytes.
    let from = |at: usize| digits >> (8 * at);
    if n >= 8 {
        word8(0) == digits as u64 && word8(n - 8) == from(n - 8) as u64
    } else if n >= 4 {
        word4(0) == digits as u32 && word4(n - 4) == from(n - 4) as u32
    } else {
        a.iter().enumerate().all(|(i, b)| *b == from(i) as u8)
    }
}

/// Write `digits`' first `dst.len()` (under 12) bytes into `dst`: as two overlapping
/// words, not a `memmove` call (which a variable-length `copy_from_slice` becomes, 3% of
/// the client's CPU at -P 100). Hot path: the rest of a SET's value.
#[inline]
fn put_short(dst: &mut [u8], digits: u128) {
    let n = dst.len();
    debug_assert!(n < 12);
    let from = |at: usize| digits >> (8 * at);
    if n >= 8 {
        dst[..8].copy_from_slice(&(digits as u64).to_le_bytes());
        dst[n - 8..].copy_from_slice(&(from(n - 8) as u64).to_le_bytes());
    } else if n >= 4 {
        dst[..4].copy_from_slice(&(digits as u32).to_le_bytes());
        dst[n - 4..].copy_from_slice(&(from(n - 4) as u32).to_le_bytes());
    } else {
        for (i, d) in dst.iter_mut().enumerate() {
            *d = from(i) as u8;
        }
    }
}

/// `n` < 10,000 as 4 ASCII digits, the first in the lowest byte.
#[inline]
fn four_digits(n: u32) -> u32 {
    // [n / 100, n % 100] in 16-bit lanes, then each lane split in tens and ones.
    let v = (n / 100) | ((n % 100) << 16);
    let q = ((v * 103) >> 10) & 0x000F_000F; // v / 10 per lane, exact below 179
    (q | ((v - q * 10) << 8)) + 0x3030_3030
}

/// `n` < 100,000,000 as 8 ASCII digits, the first in the lowest byte.
#[inline]
fn eight_digits(n: u32) -> u64 {
    // [n / 10^4, n % 10^4] in 32-bit lanes, then [/100, %100] in 16-bit lanes, then tens
    // and ones in bytes; each step's multiply stays within its lane.
    let v = u64::from(n / 10_000) | (u64::from(n % 10_000) << 32);
    let q = ((v * 10_486) >> 20) & 0x0000_007F_0000_007F; // v / 100 per lane, exact below 43,699
    let v = q | ((v - q * 100) << 16);
    let q = ((v * 103) >> 10) & 0x000F_000F_000F_000F;
    (q | ((v - q * 10) << 8)) + 0x3030_3030_3030_3030
}

#[inline]
pub fn write_key(out: &mut Vec<u8>, k: u64) {
    let mut key = *b"key:000000000000";
    Digits::of(k).put(&mut key, 4);
    out.extend_from_slice(&key);
}

/// The value stored under key `k`: the key's 12 digits repeated to `size` bytes.
#[inline]
pub fn expected_value_matches(k: u64, value: &[u8]) -> bool {
    Digits::of(k).matches(value)
}

#[inline]
fn write_value(out: &mut Vec<u8>, k: u64, size: usize) {
    let at = out.len();
    out.resize(at + size, 0);
    Digits::of(k).fill(&mut out[at..]);
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

/// A request awaiting its reply: its class and its key's digits (which a GET's value must
/// repeat). Hot path: every reply reads one, and a connection's 100 of a `-P 100` batch
/// are read again only after the kernel's work for 50 connections has run through the
/// cache; at 24 bytes (the class beside unpacked digits) that read was half of `parse`'s
/// samples at -P 100.
#[derive(Debug, Clone, Copy, Default)]
struct Awaited {
    digits: Digits,
    class: u8,
}

const _: () = assert!(std::mem::size_of::<Awaited>() == 16);

impl Awaited {
    #[inline]
    fn new(class: usize, digits: Digits) -> Awaited {
        Awaited {
            digits,
            class: class as u8,
        }
    }
}

/// A first-in first-out queue of small `Copy` entries in a power-of-two ring that doubles
/// when full. Hand-written for the hot path: `VecDeque::push_back` is not inlined (its
/// growth path comes with it) and took a tenth of the client's CPU at -P 100; here a push
/// is a mask, a store and an increment, the growth kept out of line.
#[derive(Debug)]
struct Fifo<T> {
    buf: Vec<T>,
    head: usize,
    len: usize,
}

impl<T: Copy + Default> Default for Fifo<T> {
    fn default() -> Self {
        Fifo {
            buf: vec![T::default(); 16],
            head: 0,
            len: 0,
        }
    }
}

impl<T: Copy + Default> Fifo<T> {
    #[inline]
    fn push(&mut self, v: T) {
        if self.len == self.buf.len() {
            self.grow();
        }
        let mask = self.buf.len() - 1;
        self.buf[(self.head + self.len) & mask] = v;
        self.len += 1;
    }

    #[inline]
    fn front(&self) -> Option<&T> {
        (self.len > 0).then(|| &self.buf[self.head])
    }

    #[inline]
    fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let v = self.buf[self.head];
        self.head = (self.head + 1) & (self.buf.len() - 1);
        self.len -= 1;
        Some(v)
    }

    fn clear(&mut self) {
        self.head = 0;
        self.len = 0;
    }

    #[cfg(test)]
    fn iter(&self) -> impl Iterator<Item = &T> {
        let mask = self.buf.len() - 1;
        (0..self.len).map(move |i| &self.buf[(self.head + i) & mask])
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let cap = self.buf.len();
        let mut next = vec![T::default(); cap * 2];
        for (i, slot) in next.iter_mut().take(self.len).enumerate() {
            *slot = self.buf[(self.head + i) & (cap - 1)];
        }
        self.buf = next;
        self.head = 0;
    }
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
    inflight: Fifo<Awaited>,
    /// `$<size>\r\n` for SET values, precomputed.
    value_header: Vec<u8>,
    /// The value header as the low bytes of a word, and the mask of those bytes, when it
    /// fits in 8 (a value under 10^5 bytes): recognised with one load and compare instead
    /// of a `memcmp` call.
    value_header_word: Option<(u64, u64)>,
    /// A whole SET request for key 0, copied once per SET and its key's digits and value
    /// written over (one copy instead of a capacity check and copy per part).
    set_template: Vec<u8>,
    /// `AUTH [user] password` to send in front of a connection's first request
    /// (`--auth-file`), shared by every connection of a generator.
    auth: Option<std::sync::Arc<[u8]>>,
    /// AUTH goes in front of the next request: the connection is new.
    auth_due: bool,
    /// AUTH was sent: its reply comes before the first request's.
    auth_reply_due: bool,
}

/// A command as RESP: an array of bulk strings.
pub fn encode_command(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// A GET of key 0.
const GET_REQUEST: &[u8; 36] = b"*2\r\n$3\r\nGET\r\n$16\r\nkey:000000000000\r\n";

/// Where a GET's or a SET's key digits start: after `*2\r\n$3\r\nGET\r\n$16\r\nkey:`
/// (`*3` and `SET` for a SET).
const KEY_DIGITS_AT: usize = 22;

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
            inflight: Fifo::default(),
            value_header_word: (value_header.len() <= 8).then(|| {
                let mut w = [0u8; 8];
                w[..value_header.len()].copy_from_slice(&value_header);
                let mask = u64::MAX >> (8 * (8 - value_header.len()));
                (u64::from_le_bytes(w), mask)
            }),
            value_header,
            set_template,
            auth: None,
            auth_due: false,
            auth_reply_due: false,
        }
    }

    /// Authenticate every connection (opened or reopened) with this `AUTH` command.
    pub fn with_auth(mut self, auth: Option<std::sync::Arc<[u8]>>) -> Resp {
        self.auth_due = auth.is_some();
        self.auth = auth;
        self
    }

    /// The reply to AUTH, then the first request's: both taken off together, as the
    /// engine expects one outcome per reply (the first request's latency includes the
    /// AUTH before it, as redis-benchmark's does). A refused AUTH drops the connection.
    #[cold]
    fn parse_after_auth(&mut self, buf: &[u8]) -> Result<Option<(usize, Outcome)>, String> {
        let Some((used, reply)) = parse_reply(buf)? else {
            return Ok(None);
        };
        if !matches!(reply, Reply::Simple) {
            let line = buf[..used].trim_ascii_end();
            return Err(format!(
                "the server refused AUTH: {} (check the password in --auth-file, and --user)",
                String::from_utf8_lossy(line)
            ));
        }
        self.auth_reply_due = false;
        let next = self.parse(&buf[used..]);
        if let Ok(None) = next {
            // Not whole yet: the AUTH reply stays at the front for the next call.
            self.auth_reply_due = true;
        }
        Ok(next?.map(|(n, o)| (used + n, o)))
    }

    /// `buf` starts with the value header.
    #[inline]
    fn value_header_at_front(&self, buf: &[u8]) -> bool {
        match self.value_header_word {
            Some((word, mask)) if buf.len() >= 8 => {
                let w = u64::from_le_bytes([
                    buf[0], buf[1], buf[2], buf[3], buf[4], buf[5], buf[6], buf[7],
                ]);
                w & mask == word
            }
            _ => buf.starts_with(&self.value_header),
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
        let digits = Digits::of(key);
        if self.auth_due {
            self.auth_due = false;
            self.auth_reply_due = true;
            out.extend_from_slice(self.auth.as_deref().unwrap_or_default());
        }
        let at = out.len();
        match class {
            SET => {
                out.extend_from_slice(&self.set_template);
                digits.put(out, at + KEY_DIGITS_AT);
                let v = at + KEY_DIGITS_AT + 14 + self.value_header.len();
                digits.fill(&mut out[v..v + self.value_size]);
            }
            GET => {
                // The request copied whole, then the key's digits stored over it.
                out.extend_from_slice(GET_REQUEST);
                digits.put(out, at + KEY_DIGITS_AT);
            }
            _ => out.extend_from_slice(b"*1\r\n$4\r\nPING\r\n"),
        }
        self.inflight.push(Awaited::new(class, digits));
        class
    }

    #[inline]
    fn parse(&mut self, buf: &[u8]) -> Result<Option<(usize, Outcome)>, String> {
        if self.auth_reply_due {
            return self.parse_after_auth(buf);
        }
        // The reply the oldest request expects, whole at the front (nearly every reply
        // of a benchmark): recognised by comparing bytes, without scanning for the line
        // end or reading the length's digits. Anything else takes the general parser.
        if let Some(&Awaited { class, digits }) = self.inflight.front() {
            let h = self.value_header.len();
            let end = h + self.value_size;
            let fast = match class as usize {
                GET if buf.len() >= end + 2
                    && self.value_header_at_front(buf)
                    && buf[end] == b'\r'
                    && buf[end + 1] == b'\n' =>
                {
                    let good = !self.verify || digits.matches(&buf[h..end]);
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
                self.inflight.pop();
                return Ok(fast);
            }
        }
        let Some((used, reply)) = parse_reply(buf)? else {
            return Ok(None);
        };
        let Awaited { class, digits } = self.inflight.pop().ok_or("reply without a request")?;
        let outcome = match (class as usize, reply) {
            (_, Reply::Error(kind)) => Outcome::Error(kind),
            (GET, Reply::Nil) => Outcome::Miss,
            (GET, Reply::Bulk(at, n)) => {
                if !self.verify || (n == self.value_size && digits.matches(&buf[at..at + n])) {
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
        self.auth_due = self.auth.is_some();
        self.auth_reply_due = false;
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
            for a in r.inflight.iter() {
                let digits = String::from_utf8_lossy(&a.digits.bytes()).into_owned();
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

    /// With `--auth-file`, AUTH goes in front of a connection's first request, its
    /// reply is taken off with the first request's (whole or not yet), a refusal drops
    /// the connection, and a reopened connection authenticates again.
    #[test]
    fn auth_goes_in_front_of_a_connections_first_request() {
        let auth = encode_command(&["AUTH", "pw"]);
        let mut r = Resp::new(Mix::Only(SET), 1, 3, true).with_auth(Some(auth.clone().into()));
        let mut rng = SmallRng::seed_from_u64(1);
        let mut out = Vec::new();
        r.encode(&mut rng, &mut out);
        assert!(out.starts_with(&auth), "{}", String::from_utf8_lossy(&out));
        assert!(out[auth.len()..].starts_with(b"*3\r\n$3\r\nSET"));
        let first = out.len();
        r.encode(&mut rng, &mut out);
        assert_eq!(
            out.len() - first,
            first - auth.len(),
            "AUTH once per connection"
        );
        // AUTH's +OK, then the SET's +OK: one outcome for both; not before both are in.
        assert_eq!(r.parse(b"+OK\r\n+O").unwrap(), None);
        assert_eq!(r.parse(b"+OK\r\n+OK\r\n").unwrap(), Some((10, Outcome::Ok)));
        assert_eq!(r.parse(b"+OK\r\n").unwrap(), Some((5, Outcome::Ok)));
        r.reset();
        out.clear();
        r.encode(&mut rng, &mut out);
        assert!(
            out.starts_with(&auth),
            "a reopened connection authenticates"
        );
        let e = r
            .parse(b"-WRONGPASS invalid username-password pair\r\n")
            .unwrap_err();
        assert!(e.contains("refused AUTH: -WRONGPASS"), "{e}");
        // Without a password, nothing is sent in front.
        let mut plain = Resp::new(Mix::Only(SET), 1, 3, true);
        out.clear();
        plain.encode(&mut rng, &mut out);
        assert!(out.starts_with(b"*3\r\n$3\r\nSET"));
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
            let key: u64 = std::str::from_utf8(&r.inflight.front().unwrap().digits.bytes())
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

    /// The word-wise digits are the decimal formatting's, for every key below 200,000,
    /// across each lane's boundaries, and for random 64-bit keys; a value matches its
    /// key's repetition at every size (and is what `fill` writes) and fails on any one
    /// byte changed.
    #[test]
    fn digits_in_words_are_the_decimal_formatting() {
        let mut rng = SmallRng::seed_from_u64(12);
        let edges = (0..13).flat_map(|e| {
            let p = 10u64.pow(e);
            [p - 1, p, p + 1]
        });
        let keys = (0..200_000u64)
            .chain(edges)
            .chain((0..200_000).map(|_| rng.gen::<u64>()))
            .chain((0..1000).map(|i| i * 999_999_999 + 17));
        for k in keys {
            let want = format!("{:012}", k % 1_000_000_000_000);
            assert_eq!(&Digits::of(k).bytes(), want.as_bytes(), "{k}");
        }
        for size in 0..40 {
            let d = Digits::of(123_456_789_012);
            let value: Vec<u8> = b"123456789012".iter().cycle().take(size).copied().collect();
            let mut filled = vec![0u8; size];
            d.fill(&mut filled);
            assert_eq!(filled, value, "size {size}");
            assert!(d.matches(&value), "size {size}");
            for i in 0..size {
                let mut bad = value.clone();
                bad[i] ^= 1;
                assert!(!d.matches(&bad), "size {size}, byte {i}");
            }
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

#[cfg(test)]
mod fifo_tests {
    use super::Fifo;
    use std::collections::VecDeque;

    /// Pushes and pops interleaved across many growths come out as a VecDeque's do.
    #[test]
    fn the_ring_is_first_in_first_out_across_growth() {
        let mut f: Fifo<u64> = Fifo::default();
        let mut d = VecDeque::new();
        let mut x = 0u64;
        for round in 0..200u64 {
            for _ in 0..(round % 37) {
                x += 1;
                f.push(x);
                d.push_back(x);
            }
            for _ in 0..(round % 23) {
                assert_eq!(f.pop(), d.pop_front());
            }
            assert_eq!(f.front(), d.front());
            assert!(f.iter().eq(d.iter()));
        }
        f.clear();
        assert_eq!(f.pop(), None);
    }
}
