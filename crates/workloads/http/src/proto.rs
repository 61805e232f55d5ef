//! HTTP/1.1 as an `engine::load::Protocol`: requests are prebuilt byte strings (one per
//! path) copied into the send buffer; responses are parsed incrementally (status line,
//! headers, then a Content-Length or chunked body) with `Ok(None)` while incomplete, the
//! way mini-redis frames RESP. 2xx and 3xx replies are `Outcome::Ok`; anything else is
//! `Outcome::Error("http_<status>")`, so the load loop counts every status separately.
//!
//! The parser keeps the head it already parsed for the response at the front of the
//! buffer, so a large body arriving in many reads is not re-parsed each time; and each
//! connection remembers its last whole head, so the next response with a byte-identical
//! head (a static file's, within the same second) is compared, not parsed ([`LastHead`]).

use std::sync::Arc;

use engine::load::{Outcome, Protocol};
use rand::rngs::SmallRng;
use rand::Rng;

/// Largest response head accepted (status line + headers).
pub const MAX_HEAD: usize = 64 * 1024;
/// Longest chunk-size line accepted.
const MAX_CHUNK_LINE: usize = 1024;
/// Largest response body accepted (the largest `--file-size`). Responses are buffered
/// whole, so a declared length above it (or a chunked body growing past it) is an error
/// at once rather than memory spent waiting for it.
pub const MAX_BODY: usize = 1 << 30;

/// How the path of each request is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathOrder {
    /// In turn, each connection starting at a different path.
    Rotate,
    /// Uniformly at random (seeded).
    Random,
}

/// What every request looks like, built once.
#[derive(Debug, Clone)]
pub struct RequestSet {
    /// One complete request per path.
    pub requests: Vec<Vec<u8>>,
    pub order: PathOrder,
    /// HEAD requests get no body back whatever Content-Length says.
    pub head: bool,
}

/// Inputs of [`RequestSet::build`].
#[derive(Debug, Clone)]
pub struct RequestTemplate<'a> {
    pub method: &'a str,
    pub host: &'a str,
    pub paths: &'a [String],
    /// `Name: value` lines.
    pub headers: &'a [String],
    pub body: &'a [u8],
}

impl RequestSet {
    /// Build the requests. Errors name what is wrong with the user's input.
    pub fn build(t: &RequestTemplate, order: PathOrder) -> anyhow::Result<RequestSet> {
        let method = t.method.trim();
        if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase() || b == b'-') {
            anyhow::bail!("method `{method}` is not an HTTP method (GET, POST, HEAD...)");
        }
        if t.paths.is_empty() {
            anyhow::bail!("no paths to request (--path /index.html)");
        }
        let mut extra = String::new();
        let mut has_host = false;
        let mut has_len = false;
        for h in t.headers {
            let (name, value) = h
                .split_once(':')
                .ok_or_else(|| anyhow::anyhow!("header `{h}` is not `Name: value`"))?;
            let name = name.trim();
            if name.is_empty()
                || name.bytes().any(|b| b <= b' ' || b == b':' || b >= 0x7f)
                || value.contains(['\r', '\n'])
            {
                anyhow::bail!("header `{h}` is not a valid `Name: value` line");
            }
            has_host |= name.eq_ignore_ascii_case("host");
            has_len |= name.eq_ignore_ascii_case("content-length");
            extra.push_str(&format!("{name}: {}\r\n", value.trim()));
        }
        let mut requests = Vec::with_capacity(t.paths.len());
        for p in t.paths {
            if !p.starts_with('/') || p.bytes().any(|b| b <= b' ' || b >= 0x7f) {
                anyhow::bail!(
                    "path `{p}` must start with `/` and contain no spaces or control characters"
                );
            }
            let mut r = format!("{method} {p} HTTP/1.1\r\n");
            if !has_host {
                r.push_str(&format!("Host: {}\r\n", t.host));
            }
            r.push_str(&extra);
            if !t.body.is_empty() && !has_len {
                r.push_str(&format!("Content-Length: {}\r\n", t.body.len()));
            }
            r.push_str("\r\n");
            let mut bytes = r.into_bytes();
            bytes.extend_from_slice(t.body);
            requests.push(bytes);
        }
        Ok(RequestSet {
            requests,
            order,
            head: method == "HEAD",
        })
    }
}

/// How the body of the response at the front of the buffer ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    None,
    Length(usize),
    /// Chunked: offset of the next chunk-size line (from the start of the buffer).
    Chunked(usize),
}

/// A parsed response head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    status: u16,
    /// The response says `Connection: close`.
    close: bool,
    /// Offset just past the blank line ending the head (from the start of the buffer).
    end: usize,
    body: Body,
}

/// One connection's protocol state.
pub struct HttpProtocol {
    set: Arc<RequestSet>,
    next: usize,
    head: Option<Head>,
    /// The server announced it closes this connection.
    closing: bool,
    last: LastHead,
}

/// Heads longer than this are not remembered (each connection keeps at most this much).
const LAST_HEAD_MAX: usize = 4096;

/// The last complete response head parsed on a connection, with its bytes.
///
/// A server answers the same request with the same head (a static file's head changes only
/// with its `Date`, once a second), and a head byte-identical to one already parsed parses
/// to the same result: the first blank line of the buffer is then the same one, and the
/// parse reads nothing past it. Comparing the bytes (one `memcmp`) costs a tenth of parsing
/// them again (hot path: nginx's 240-byte head took 180 ns to parse, 12 ns to compare, of
/// about 5 us of client CPU per request). Anything else (another path's head, a new `Date`,
/// another status) differs in its bytes and is parsed in full.
#[derive(Default)]
pub struct LastHead {
    bytes: Vec<u8>,
    head_request: bool,
    head: Option<Head>,
}

impl LastHead {
    /// [`parse_head`], or the last head if `buf` starts with its bytes.
    fn parse(&mut self, buf: &[u8], head_request: bool) -> Result<Option<Head>, String> {
        if let Some(h) = self.head {
            if self.head_request == head_request && buf.starts_with(&self.bytes) {
                return Ok(Some(h));
            }
        }
        let parsed = parse_head(buf, head_request)?;
        if let Some(h) = parsed.filter(|h| h.end <= LAST_HEAD_MAX) {
            self.bytes.clear();
            self.bytes.extend_from_slice(&buf[..h.end]);
            self.head_request = head_request;
            self.head = Some(h);
        }
        Ok(parsed)
    }
}

impl HttpProtocol {
    /// Connection `conn` starts at path `conn % paths` so rotating connections spread out.
    pub fn new(set: Arc<RequestSet>, conn: usize) -> Self {
        let next = conn % set.requests.len().max(1);
        HttpProtocol {
            set,
            next,
            head: None,
            closing: false,
            last: LastHead::default(),
        }
    }
}

/// The only operation class: one request.
pub const CLASS_NAMES: [&str; 1] = ["request"];

impl Protocol for HttpProtocol {
    fn encode(&mut self, rng: &mut SmallRng, out: &mut Vec<u8>) -> usize {
        let n = self.set.requests.len();
        let i = match self.set.order {
            PathOrder::Rotate => {
                let i = self.next;
                self.next = (self.next + 1) % n;
                i
            }
            PathOrder::Random => rng.gen_range(0..n),
        };
        out.extend_from_slice(&self.set.requests[i]);
        0
    }

    fn parse(&mut self, buf: &[u8]) -> Result<Option<(usize, Outcome)>, String> {
        parse_response_with(
            buf,
            self.set.head,
            &mut self.head,
            &mut self.closing,
            Some(&mut self.last),
        )
    }

    fn reset(&mut self) {
        self.head = None;
        self.closing = false;
    }

    fn closing(&self) -> bool {
        self.closing
    }
}

/// Parse one response from the front of `buf`. `cached` carries the head across calls
/// while the body is incomplete; it is cleared when a response completes.
pub fn parse_response(
    buf: &[u8],
    head_request: bool,
    cached: &mut Option<Head>,
) -> Result<Option<(usize, Outcome)>, String> {
    parse_response_with(buf, head_request, cached, &mut false, None)
}

/// [`parse_response`] that also sets `closing` when the response says
/// `Connection: close`, and takes a head byte-identical to `last`'s as parsed.
pub fn parse_response_with(
    buf: &[u8],
    head_request: bool,
    cached: &mut Option<Head>,
    closing: &mut bool,
    mut last: Option<&mut LastHead>,
) -> Result<Option<(usize, Outcome)>, String> {
    let mut start = 0usize;
    loop {
        let head = match *cached {
            Some(h) => h,
            None => match parse_head_with(&buf[start..], head_request, last.as_deref_mut())? {
                None => return Ok(None),
                Some(mut h) => {
                    h.end += start;
                    if let Body::Chunked(p) = &mut h.body {
                        *p += start;
                    }
                    h
                }
            },
        };
        let end = match head.body {
            Body::None => Some(head.end),
            Body::Length(n) => {
                let end = head
                    .end
                    .checked_add(n)
                    .ok_or_else(|| "Content-Length too large".to_string())?;
                (buf.len() >= end).then_some(end)
            }
            Body::Chunked(pos) => match scan_chunks(buf, head.end, pos)? {
                Chunks::Done(end) => Some(end),
                Chunks::Partial(pos) => {
                    *cached = Some(Head {
                        body: Body::Chunked(pos),
                        ..head
                    });
                    return Ok(None);
                }
            },
        };
        let Some(end) = end else {
            *cached = Some(head);
            return Ok(None);
        };
        *cached = None;
        // 1xx interim responses (100 Continue) precede the real one: skip them.
        if (100..200).contains(&head.status) && head.status != 101 {
            start = end;
            continue;
        }
        *closing |= head.close;
        let outcome = if (200..400).contains(&head.status) {
            Outcome::Ok
        } else {
            Outcome::Error(format!("http_{}", head.status))
        };
        return Ok(Some((end, outcome)));
    }
}

fn parse_head_with(
    buf: &[u8],
    head_request: bool,
    last: Option<&mut LastHead>,
) -> Result<Option<Head>, String> {
    match last {
        Some(l) => l.parse(buf, head_request),
        None => parse_head(buf, head_request),
    }
}

/// The searchers, built once: building one per response cost as much as the search.
static CRLF: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\r\n"));
static HEAD_END: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\r\n\r\n"));

fn find_crlf(buf: &[u8], from: usize) -> Option<usize> {
    CRLF.find(buf.get(from..)?).map(|p| p + from)
}

fn find_head_end(buf: &[u8]) -> Option<usize> {
    HEAD_END.find(buf).map(|p| p + 4)
}

/// `s` without ASCII spaces and tabs at either end (header values' optional whitespace).
fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// Parse a response head at the start of `buf`; `Ok(None)` when incomplete. Works on
/// bytes (memchr finds the line ends): every response of an http test goes through it,
/// and splitting the head as text cost more than the rest of the request.
fn parse_head(buf: &[u8], head_request: bool) -> Result<Option<Head>, String> {
    let Some(end) = find_head_end(buf) else {
        if buf.len() > MAX_HEAD {
            return Err(format!("response head longer than {MAX_HEAD} bytes"));
        }
        // A response that does not even start like one is not going to get better.
        let n = buf.len().min(5);
        if buf[..n] != b"HTTP/"[..n] {
            return Err(format!("not an HTTP response: {:?}", show(buf)));
        }
        return Ok(None);
    };
    // The same limit when the head arrived whole, so the read size never decides.
    if end > MAX_HEAD {
        return Err(format!("response head longer than {MAX_HEAD} bytes"));
    }
    let head = &buf[..end - 4];
    let mut lines = CRLF
        .find_iter(head)
        .chain(std::iter::once(head.len()))
        .scan(0usize, |from, to| {
            let line = &head[*from..to];
            *from = to + 2;
            Some(line)
        });
    let status_line = lines.next().unwrap_or(b"");
    let rest = status_line
        .strip_prefix(b"HTTP/1.")
        .ok_or_else(|| format!("not an HTTP/1.x status line: {:?}", show(status_line)))?;
    // RFC 9112 4: three digits, then a space (the reason may be empty, or left out by
    // a lax server): `HTTP/1.1 2000 X` read as 200, a success.
    let status: u16 = match rest {
        [_, b' ', a, b, c, after @ ..]
            if [a, b, c].iter().all(|d| d.is_ascii_digit())
                && after.first().is_none_or(|&x| x == b' ') =>
        {
            u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0')
        }
        _ => 0,
    };
    if !(100..600).contains(&status) {
        return Err(format!("bad status line: {:?}", show(status_line)));
    }
    let mut length: Option<usize> = None;
    let mut chunked = false;
    // RFC 9112 9.3: an HTTP/1.0 reply closes its connection unless it says keep-alive;
    // the tokens of every Connection header count.
    let http10 = rest.first() == Some(&b'0');
    let (mut close, mut keep_alive) = (false, false);
    for line in lines {
        let Some(colon) = memchr::memchr(b':', line) else {
            return Err(format!("bad header line: {:?}", show(line)));
        };
        let (name, value) = (&line[..colon], trim_ows(&line[colon + 1..]));
        if name.eq_ignore_ascii_case(b"content-length") {
            let n: usize = std::str::from_utf8(value)
                .ok()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("bad Content-Length: {:?}", show(value)))?;
            if length.is_some_and(|l| l != n) {
                return Err("conflicting Content-Length headers".into());
            }
            if n > MAX_BODY {
                return Err(format!("Content-Length {n} is over {MAX_BODY} bytes"));
            }
            length = Some(n);
        } else if name.eq_ignore_ascii_case(b"connection") {
            for t in value.split(|&b| b == b',').map(trim_ows) {
                close |= t.eq_ignore_ascii_case(b"close");
                keep_alive |= t.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            chunked = value
                .rsplit(|&b| b == b',')
                .next()
                .is_some_and(|last| trim_ows(last).eq_ignore_ascii_case(b"chunked"));
        }
    }
    close |= http10 && !keep_alive;
    let no_body = head_request || (100..200).contains(&status) || status == 204 || status == 304;
    let body = if no_body {
        Body::None
    } else if chunked {
        // RFC 9112 6.3: chunked wins over Content-Length.
        Body::Chunked(end)
    } else if let Some(n) = length {
        Body::Length(n)
    } else {
        return Err(format!(
            "status {status} reply has neither Content-Length nor chunked encoding \
             (bodies delimited by closing the connection are not supported)"
        ));
    };
    Ok(Some(Head {
        status,
        close,
        end,
        body,
    }))
}

enum Chunks {
    /// The whole body (and trailers) ends at this offset.
    Done(usize),
    /// Incomplete; resume at this chunk-size line.
    Partial(usize),
}

/// Scan a chunked body from the chunk-size line at `pos`. Every limit (line length,
/// trailer size, body size) holds however the body was split into reads, so a stream
/// parses the same in one read or in many.
fn scan_chunks(buf: &[u8], body_start: usize, mut pos: usize) -> Result<Chunks, String> {
    loop {
        let Some(eol) = find_crlf(buf, pos) else {
            if buf.len() - pos.min(buf.len()) > MAX_CHUNK_LINE {
                return Err("chunk-size line too long".into());
            }
            return Ok(Chunks::Partial(pos));
        };
        if eol - pos > MAX_CHUNK_LINE {
            return Err("chunk-size line too long".into());
        }
        let line = std::str::from_utf8(&buf[pos..eol])
            .map_err(|_| "chunk-size line is not text".to_string())?;
        let hex = line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(hex, 16)
            .map_err(|_| format!("bad chunk size: {:?}", show(line.as_bytes())))?;
        if size == 0 {
            return scan_trailers(buf, pos, eol + 2);
        }
        let data_end = (eol + 2).saturating_add(size);
        if data_end - body_start > MAX_BODY {
            return Err(format!("chunked body over {MAX_BODY} bytes"));
        }
        if buf.len() < data_end + 2 {
            return Ok(Chunks::Partial(pos));
        }
        if &buf[data_end..data_end + 2] != b"\r\n" {
            return Err("chunk data not followed by CRLF".into());
        }
        pos = data_end + 2;
    }
}

/// The trailer section after the last chunk (its size line at `last`): header lines up
/// to an empty line, at most [`MAX_HEAD`] bytes of them.
fn scan_trailers(buf: &[u8], last: usize, mut p: usize) -> Result<Chunks, String> {
    let start = p;
    loop {
        let Some(e) = find_crlf(buf, p) else {
            if buf.len().saturating_sub(start) > MAX_HEAD {
                return Err(format!("trailer section longer than {MAX_HEAD} bytes"));
            }
            return Ok(Chunks::Partial(last));
        };
        if e - start > MAX_HEAD {
            return Err(format!("trailer section longer than {MAX_HEAD} bytes"));
        }
        if e == p {
            return Ok(Chunks::Done(e + 2));
        }
        p = e + 2;
    }
}

/// The first bytes of something unexpected, for an error message.
fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(&b[..b.len().min(60)]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn set(paths: &[&str], order: PathOrder) -> Arc<RequestSet> {
        let paths: Vec<String> = paths.iter().map(|s| s.to_string()).collect();
        Arc::new(
            RequestSet::build(
                &RequestTemplate {
                    method: "GET",
                    host: "127.0.0.1:8080",
                    paths: &paths,
                    headers: &["Accept: */*".to_string()],
                    body: b"",
                },
                order,
            )
            .unwrap(),
        )
    }

    /// Feed `stream` to a fresh protocol in pieces of `step` bytes, as reads would.
    fn parse_all(stream: &[u8], step: usize, head: bool) -> Vec<Outcome> {
        let mut cached = None;
        let mut buf = Vec::new();
        let mut out = Vec::new();
        let mut fed = 0;
        while fed < stream.len() {
            let n = step.min(stream.len() - fed);
            buf.extend_from_slice(&stream[fed..fed + n]);
            fed += n;
            while let Some((used, o)) = parse_response(&buf, head, &mut cached).unwrap() {
                buf.drain(..used);
                out.push(o);
            }
        }
        assert!(
            buf.is_empty(),
            "left over: {:?}",
            String::from_utf8_lossy(&buf)
        );
        out
    }

    #[test]
    fn encodes_requests_with_host_headers_and_rotation() {
        let s = set(&["/a", "/b", "/c"], PathOrder::Rotate);
        let mut p = HttpProtocol::new(s.clone(), 1);
        let mut rng = SmallRng::seed_from_u64(1);
        let mut out = Vec::new();
        for _ in 0..4 {
            assert_eq!(p.encode(&mut rng, &mut out), 0);
        }
        let text = String::from_utf8(out).unwrap();
        let firsts: Vec<&str> = text
            .split("\r\n\r\n")
            .filter(|r| !r.is_empty())
            .map(|r| r.lines().next().unwrap())
            .collect();
        assert_eq!(
            firsts,
            [
                "GET /b HTTP/1.1",
                "GET /c HTTP/1.1",
                "GET /a HTTP/1.1",
                "GET /b HTTP/1.1"
            ]
        );
        assert!(text.starts_with("GET /b HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept: */*\r\n\r\n"));

        // Random order covers every path.
        let s = set(&["/a", "/b", "/c"], PathOrder::Random);
        let mut p = HttpProtocol::new(s, 0);
        let mut out = Vec::new();
        for _ in 0..60 {
            p.encode(&mut rng, &mut out);
        }
        let text = String::from_utf8(out).unwrap();
        for path in ["/a ", "/b ", "/c "] {
            assert!(text.contains(path));
        }
    }

    #[test]
    fn body_gets_content_length_and_bad_input_is_refused() {
        let paths = vec!["/post".to_string()];
        let t = RequestTemplate {
            method: "POST",
            host: "h",
            paths: &paths,
            headers: &["Content-Type: application/json".into()],
            body: b"{\"k\":1}",
        };
        let r = RequestSet::build(&t, PathOrder::Rotate).unwrap();
        let text = String::from_utf8(r.requests[0].clone()).unwrap();
        assert_eq!(
            text,
            "POST /post HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"k\":1}"
        );
        let bad = |m: &str, p: &str, h: &str| {
            let paths = vec![p.to_string()];
            let headers = vec![h.to_string()];
            RequestSet::build(
                &RequestTemplate {
                    method: m,
                    host: "h",
                    paths: &paths,
                    headers: &headers,
                    body: b"",
                },
                PathOrder::Rotate,
            )
            .unwrap_err()
            .to_string()
        };
        assert!(bad("get", "/", "A: b").contains("not an HTTP method"));
        assert!(bad("GET", "x", "A: b").contains("must start with `/`"));
        assert!(bad("GET", "/a b", "A: b").contains("must start with `/`"));
        assert!(bad("GET", "/", "no colon").contains("Name: value"));
        assert!(bad("GET", "/", "A: b\r\nX: y").contains("not a valid"));
        // A user-given Host header replaces ours.
        let paths = vec!["/".to_string()];
        let r = RequestSet::build(
            &RequestTemplate {
                method: "HEAD",
                host: "h",
                paths: &paths,
                headers: &["Host: example.org".into()],
                body: b"",
            },
            PathOrder::Rotate,
        )
        .unwrap();
        assert_eq!(
            r.requests[0],
            b"HEAD / HTTP/1.1\r\nHost: example.org\r\n\r\n"
        );
        assert!(r.head);
    }

    // A real nginx 1.22 reply (captured on loopback), then a 404, then a chunked reply
    // with an extension and a trailer, then a 204 and a 503.
    const NGINX_200: &[u8] = b"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Fri, 20 Nov 2026 23:50:01 GMT\r\nContent-Type: text/html\r\nContent-Length: 12\r\nLast-Modified: Fri, 20 Nov 2026 23:49:58 GMT\r\nConnection: keep-alive\r\nETag: \"6560f0e6-c\"\r\nAccept-Ranges: bytes\r\n\r\nhello world\n";
    const NGINX_404: &[u8] = b"HTTP/1.1 404 Not Found\r\nServer: nginx/1.22.1\r\nDate: Fri, 20 Nov 2026 23:50:01 GMT\r\nContent-Type: text/html\r\nContent-Length: 153\r\nConnection: keep-alive\r\n\r\n<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n<center><h1>404 Not Found</h1></center>\r\n<hr><center>nginx/1.22.1</center>\r\n</body>\r\n</html>\r\n";
    const CHUNKED: &[u8] = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Trailer: yes\r\n\r\n";
    const NO_CONTENT: &[u8] = b"HTTP/1.1 204 No Content\r\n\r\n";
    const UNAVAILABLE: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n";
    const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 301 Moved Permanently\r\nLocation: /x\r\nContent-Length: 0\r\n\r\n";

    #[test]
    fn parses_a_stream_in_any_read_size() {
        let stream = [
            NGINX_200,
            NGINX_404,
            CHUNKED,
            NO_CONTENT,
            UNAVAILABLE,
            CONTINUE,
        ]
        .concat();
        let want = vec![
            Outcome::Ok,
            Outcome::Error("http_404".into()),
            Outcome::Ok,
            Outcome::Ok,
            Outcome::Error("http_503".into()),
            Outcome::Ok,
        ];
        for step in [1, 2, 3, 7, 13, 64, 4096] {
            assert_eq!(parse_all(&stream, step, false), want, "read size {step}");
        }
    }

    #[test]
    fn a_head_like_the_last_is_taken_as_parsed_and_any_other_is_parsed() {
        let mut last = LastHead::default();
        let mut parse = |b: &[u8], head: bool| {
            parse_response_with(b, head, &mut None, &mut false, Some(&mut last)).unwrap()
        };
        assert_eq!(
            parse(NGINX_200, false),
            Some((NGINX_200.len(), Outcome::Ok))
        );
        // The same head again, then with a new Date, then one byte of the status changed.
        assert_eq!(
            parse(NGINX_200, false),
            Some((NGINX_200.len(), Outcome::Ok))
        );
        let later = String::from_utf8(NGINX_200.to_vec())
            .unwrap()
            .replace("23:50:01", "23:50:02")
            .replace("Content-Length: 12", "Content-Length: 5");
        let later = later.as_bytes();
        assert_eq!(parse(later, false), Some((later.len() - 7, Outcome::Ok)));
        let gone = String::from_utf8(later.to_vec())
            .unwrap()
            .replace("200 OK", "410 OK");
        assert_eq!(
            parse(gone.as_bytes(), false),
            Some((later.len() - 7, Outcome::Error("http_410".into())))
        );
        // A HEAD request's reply has no body, whatever the head it shares says.
        assert_eq!(
            parse(gone.as_bytes(), true),
            Some((later.len() - 12, Outcome::Error("http_410".into())))
        );
        // Only a whole head is remembered: its prefix is still incomplete.
        assert_eq!(parse(&gone.as_bytes()[..40], true), None);
        // A head over LAST_HEAD_MAX is parsed, not kept: the last short one stays.
        let long = format!(
            "HTTP/1.1 200 OK\r\nX: {}\r\nContent-Length: 0\r\n\r\n",
            "a".repeat(LAST_HEAD_MAX)
        );
        assert_eq!(
            parse(long.as_bytes(), false),
            Some((long.len(), Outcome::Ok))
        );
        assert_eq!(last.bytes.len(), later.len() - "hello world\n".len());
    }

    #[test]
    fn incomplete_is_none_and_consumed_is_exact() {
        let mut cached = None;
        let half = &NGINX_200[..NGINX_200.len() - 3];
        assert_eq!(parse_response(half, false, &mut cached).unwrap(), None);
        assert!(cached.is_some(), "head kept while the body arrives");
        let two = [NGINX_200, NGINX_200].concat();
        let (used, o) = parse_response(&two, false, &mut cached).unwrap().unwrap();
        assert_eq!((used, o), (NGINX_200.len(), Outcome::Ok));
        assert!(cached.is_none());
        // HEAD: Content-Length describes the GET body, none follows.
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n";
        assert_eq!(
            parse_response(head, true, &mut None).unwrap(),
            Some((head.len(), Outcome::Ok))
        );
    }

    #[test]
    fn mutated_streams_never_panic_or_overrun() {
        // A small deterministic fuzz: flip, insert and cut bytes of real replies.
        let base = [NGINX_200, CHUNKED, NGINX_404, CONTINUE].concat();
        let mut rng = SmallRng::seed_from_u64(7);
        for _ in 0..3000 {
            let mut b = base.clone();
            for _ in 0..rng.gen_range(1..4) {
                let i = rng.gen_range(0..b.len());
                match rng.gen_range(0..3) {
                    0 => b[i] = rng.gen(),
                    1 => b.insert(i, b"\r\n0:;x"[rng.gen_range(0..6)]),
                    _ => b.truncate(i.max(1)),
                }
            }
            let mut cached = None;
            let mut pos = 0;
            while pos < b.len() {
                match parse_response(&b[pos..], rng.gen_bool(0.1), &mut cached) {
                    Ok(Some((used, _))) => {
                        assert!(used > 0 && pos + used <= b.len());
                        pos += used;
                    }
                    Ok(None) | Err(_) => break,
                }
            }
        }
    }

    /// An HTTP/1.0 reply closes its connection unless it says keep-alive (RFC 9112
    /// 9.3), and every Connection header counts: taken for kept alive, the next request
    /// went on a connection the server closed, lost (audit, 3).
    #[test]
    fn an_http_1_0_reply_closes_unless_kept_alive() {
        let close = |head: &str| {
            let b = format!("{head}Content-Length: 2\r\n\r\nhi");
            parse_head(b.as_bytes(), false).unwrap().unwrap().close
        };
        assert!(close("HTTP/1.0 200 OK\r\n"));
        assert!(!close("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n"));
        assert!(!close("HTTP/1.1 200 OK\r\n"));
        assert!(close(
            "HTTP/1.1 200 OK\r\nConnection: close\r\nConnection: upgrade\r\n"
        ));
        assert!(close("HTTP/1.1 200 OK\r\nConnection: upgrade, close\r\n"));
    }

    #[test]
    fn fuzz_regression_long_chunk_line_is_an_error_in_any_read_size() {
        // Found by fuzz_http_parse_response: a chunk-size line padded with CRs past the
        // limit was refused when it arrived in pieces but accepted when it came whole.
        let stream = [
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3".as_slice(),
            &[b'\r'; MAX_CHUNK_LINE + 10],
            b"\nabc\r\n0\r\n\r\n",
        ]
        .concat();
        let err = parse_response(&stream, false, &mut None).unwrap_err();
        assert!(err.contains("too long"), "{err}");
    }

    #[test]
    fn fuzz_regression_huge_declared_bodies_are_errors() {
        // Waiting for 2^62 bytes buffers whatever the server sends; and a chunk size near
        // usize::MAX overflowed `data_end + 2`.
        let err = |b: &[u8]| parse_response(b, false, &mut None).unwrap_err();
        assert!(
            err(b"HTTP/1.1 200 OK\r\nContent-Length: 4611686018427387904\r\n\r\n").contains("over")
        );
        let chunk = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffc0\r\nab";
        assert!(err(chunk).contains("over"));
        let max = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n";
        assert!(err(max).contains("over"));
        // A body of exactly the limit is only incomplete.
        let at_limit = format!("HTTP/1.1 200 OK\r\nContent-Length: {MAX_BODY}\r\n\r\n");
        assert_eq!(
            parse_response(at_limit.as_bytes(), false, &mut None).unwrap(),
            None
        );
    }

    #[test]
    fn fuzz_regression_endless_trailers_are_an_error() {
        let stream = [
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: ".as_slice(),
            &vec![b'a'; MAX_HEAD + 1],
        ]
        .concat();
        assert!(parse_response(&stream, false, &mut None)
            .unwrap_err()
            .contains("trailer"));
    }

    #[test]
    fn garbage_is_an_error_not_a_hang() {
        let err = |b: &[u8]| parse_response(b, false, &mut None).unwrap_err();
        assert!(err(b"+OK\r\n").contains("not an HTTP response"));
        assert!(err(b"HTTP/1.1 2x0 OK\r\n\r\n").contains("bad status line"));
        // Four digits are no status 200.
        assert!(err(b"HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n").contains("bad status line"));
        // A status with no reason, its space left out, is one.
        assert!(parse_response(b"HTTP/1.1 204\r\n\r\n", false, &mut None).is_ok());
        assert!(err(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n").contains("Content-Length"));
        assert!(err(b"HTTP/1.1 200 OK\r\nServer: x\r\n\r\nbody").contains("neither Content-Length"));
        assert!(
            err(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
                .contains("chunk size")
        );
        assert!(
            err(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY").contains("CRLF")
        );
        let big = [
            b"HTTP/1.1 200 OK\r\nX: ".as_slice(),
            &vec![b'a'; MAX_HEAD + 1],
        ]
        .concat();
        assert!(err(&big).contains("longer than"));
        // A prefix of a valid response is just incomplete.
        assert_eq!(parse_response(b"HTT", false, &mut None).unwrap(), None);
    }
}
