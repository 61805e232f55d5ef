//! Passwords kept out of everything rackbench prints or stores.
//!
//! A PostgreSQL connection string has two legal spellings (libpq, "Connection
//! Strings"): `keyword = value` pairs, where spaces around `=` are optional and a value
//! may be single-quoted with `\'` and `\\` escapes, and a `postgresql://` (or
//! `postgres://`) URI whose parts are percent-encoded, with the password in the
//! userinfo (`user:pass@`) or as a query parameter (`?password=...`). A string scan for
//! `password=` misses most of them, so a connection string is parsed as libpq parses it
//! and rebuilt with each password value replaced by [`MASK`], everything else kept as
//! written. Text that is not a connection string (a command line, an error message) is
//! scanned for the same shapes, erring on the side of hiding: a masked word too many is
//! harmless, a password in a results file is not.

use std::borrow::Cow;

use percent_encoding::percent_decode_str;
use serde_json::Value;

/// What a password is replaced by.
pub const MASK: &str = "***";

/// Is a keyword (`password`, `sslpassword`, `PGPASSWORD`, `requirepass`, `MYSQL_PWD`,
/// `REDISCLI_AUTH`, an SNMP `community`, httpie's `auth`, curl's `oauth2-bearer`, ...)
/// one whose value is a secret? Case-insensitive, wider than libpq's own keywords
/// (which are lowercase): hiding a value too many costs little. `passfile` names a
/// file, not a password. A bare `key` is not one: it names a kv workload's keys, curl's
/// `--key` and libpq's `sslkey` are paths to a key file, `--key-size` a number; only
/// in a URL's query is it an API key ([`is_query_secret`]).
pub fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    let k = k.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    if k == "passfile" {
        return false;
    }
    [
        "password",
        "passwd",
        "passphrase",
        "secret",
        "token",
        "apikey",
        "api_key",
        "api-key",
        "accesskey",
        "access_key",
        "access-key",
        "bearer",
        "pwd",
        "community",
        "credential",
    ]
    .iter()
    .any(|w| k.contains(w))
        || k.ends_with("pass")
        // Not every `...auth`: redis's `NOAUTH` and `AUTH` start error texts, so `auth`
        // alone only with a lowercase letter (httpie's `--auth`, a JSON `"auth"`).
        || (k == "auth" && key.bytes().any(|c| c.is_ascii_lowercase()))
        || k.ends_with("_auth")
        || k.ends_with("-auth")
        || k == "masterauth"
        || k == "authorization"
        || k == "cookie"
}

/// Replace every password in `s` by [`MASK`]: in a whole connection string (either
/// form) by parsing it as libpq does, otherwise by scanning the text for URIs with a
/// userinfo password or query password and for `password = value` shapes. Used on
/// everything stored or printed.
pub fn redact_secrets(s: &str) -> String {
    if is_connection_uri(s) {
        return redact_uri(s);
    }
    if let Some(pairs) = parse_keyword_value(s) {
        return rebuild_keyword_value(s, &pairs);
    }
    redact_text(s)
}

/// [`redact_secrets`] on every string of a JSON value (a plan, a sweep point's
/// parameters), and the whole value of any key that names a secret. Walking the value
/// rather than its serialisation lets each string be parsed as written (JSON escapes
/// would hide a quoted password from the parser).
pub fn redact_json(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(redact_secrets(s)),
        Value::Array(a) => Value::Array(a.iter().map(redact_json).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let v = if is_secret_key(k) && !v.is_null() {
                        Value::String(MASK.into())
                    } else {
                        redact_json(v)
                    };
                    (redact_secrets(k), v)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A Debug of any serialisable value with its secrets hidden ([`redact_json`] of its
/// JSON): for what carries a job's parameters (a `--dsn`, a run's password) and
/// derives no Debug of its own that would show them.
pub struct Redacted<'a, T: serde::Serialize>(pub &'a T);

impl<T: serde::Serialize> std::fmt::Debug for Redacted<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match serde_json::to_value(self.0) {
            Ok(v) => write!(f, "{}", redact_json(&v)),
            Err(_) => f.write_str("(not serialisable)"),
        }
    }
}

/// Does `s` start with a scheme taken as a connection URI: libpq's, or the MySQL and
/// MariaDB clients' (`mysql://user:pass@host:port/db?socket=...`, the same userinfo
/// and query shapes)? Case-insensitive: libpq's is not, but a mistyped scheme still
/// carries a password.
fn is_connection_uri(s: &str) -> bool {
    let lower = s.trim_start().to_ascii_lowercase();
    ["postgresql://", "postgres://", "mysql://", "mariadb://"]
        .iter()
        .any(|scheme| lower.starts_with(scheme))
}

/// One `keyword = value` of a connection string: the keyword as written, the value as
/// libpq reads it (quotes and escapes removed) and where the value is written in the
/// string (with its quotes).
#[derive(Debug)]
struct Pair {
    key: String,
    value: String,
    span: std::ops::Range<usize>,
}

/// Parse `s` as a keyword/value connection string the way libpq's `conninfo_parse`
/// does: a keyword runs to whitespace or `=`, whitespace around `=` is skipped, a value
/// is either single-quoted (to the next unescaped `'`) or runs to whitespace, and `\`
/// escapes the next character in both. None when `s` is not one (no `=` after a
/// keyword, an unterminated quote).
fn parse_keyword_value(s: &str) -> Option<Vec<Pair>> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut pairs = Vec::new();
    loop {
        i = skip_ws(b, i);
        if i == b.len() {
            return Some(pairs);
        }
        let key_start = i;
        while i < b.len() && !b[i].is_ascii_whitespace() && b[i] != b'=' {
            i += 1;
        }
        let key = &s[key_start..i];
        i = skip_ws(b, i);
        if key.is_empty() || b.get(i) != Some(&b'=') {
            return None;
        }
        i = skip_ws(b, i + 1);
        let value_start = i;
        let (value, end) = read_value(b, i)?;
        pairs.push(Pair {
            key: key.to_string(),
            value,
            span: value_start..end,
        });
        i = end;
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// A libpq value starting at `i`: its text and where it ends. None for an unterminated
/// quote (libpq refuses the string).
fn read_value(b: &[u8], mut i: usize) -> Option<(String, usize)> {
    let mut out = Vec::new();
    if b.get(i) == Some(&b'\'') {
        i += 1;
        loop {
            match b.get(i)? {
                b'\\' => {
                    out.push(*b.get(i + 1)?);
                    i += 2;
                }
                b'\'' => return Some((String::from_utf8_lossy(&out).into_owned(), i + 1)),
                c => {
                    out.push(*c);
                    i += 1;
                }
            }
        }
    }
    while i < b.len() && !b[i].is_ascii_whitespace() {
        if b[i] == b'\\' && i + 1 < b.len() {
            i += 1;
        }
        out.push(b[i]);
        i += 1;
    }
    Some((String::from_utf8_lossy(&out).into_owned(), i))
}

/// `s` with each secret value masked, and each other value that holds a secret of its
/// own (a `dbname` that is itself a connection string, `--dsn=URI` on a command line)
/// redacted and quoted again; every other byte as written.
fn rebuild_keyword_value(s: &str, pairs: &[Pair]) -> String {
    let mut out = String::with_capacity(s.len());
    let mut at = 0;
    for p in pairs {
        let replacement = if is_secret_key(&p.key) {
            MASK.to_string()
        } else {
            let inner = redact_secrets(&p.value);
            if inner == p.value {
                continue;
            }
            quote_value(&inner)
        };
        out.push_str(&s[at..p.span.start]);
        out.push_str(&replacement);
        at = p.span.end;
    }
    out.push_str(&s[at..]);
    out
}

/// A keyword/value value, quoted as libpq needs it to read it back.
fn quote_value(v: &str) -> String {
    if !v.is_empty() && !v.contains(|c: char| c.is_whitespace() || c == '\'' || c == '\\') {
        return v.to_string();
    }
    format!("'{}'", v.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// A URI (`scheme://[userinfo@]hosts[/path][?query]`, any scheme) with the userinfo's
/// password and every secret query parameter masked. The userinfo ends at the *last*
/// `@`: libpq stops at the first `@` before `/`, tokio-postgres at the first `@`
/// anywhere, and a password with an unencoded `@`, `/` or `?` is hidden whole by taking
/// the widest reading.
fn redact_uri(uri: &str) -> String {
    let Some(scheme_end) = uri.find("://").map(|p| p + 3) else {
        return redact_text(uri);
    };
    let rest = &uri[scheme_end..];
    let mut out = uri[..scheme_end].to_string();
    let after_userinfo = match rest.rfind('@') {
        Some(at) => {
            let userinfo = &rest[..at];
            match userinfo.split_once(':') {
                Some((user, _password)) => {
                    out.push_str(user);
                    out.push(':');
                    out.push_str(MASK);
                }
                None => out.push_str(userinfo),
            }
            out.push('@');
            &rest[at + 1..]
        }
        None => rest,
    };
    match after_userinfo.split_once('?') {
        Some((hosts_and_path, query)) => {
            out.push_str(hosts_and_path);
            out.push('?');
            out.push_str(&redact_query(query));
        }
        None => out.push_str(after_userinfo),
    }
    out
}

/// `name=value&...` with the value of each secret name (percent-decoded first, as libpq
/// decodes it: `pass%77ord` is `password`) masked, and a value holding a secret of its
/// own masked whole.
fn redact_query(query: &str) -> String {
    query
        .split('&')
        .map(|param| match param.split_once('=') {
            Some((k, v)) => {
                let value = decode(v);
                if is_query_secret(&decode(k)) || redact_secrets(&value) != value {
                    format!("{k}={MASK}")
                } else {
                    param.to_string()
                }
            }
            None => param.to_string(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// Is a URL query's parameter a secret: one [`is_secret_key`] names, or `key`, which
/// in a query is an API key by convention (`?key=K`, Google's and many PDUs' APIs).
fn is_query_secret(name: &str) -> bool {
    is_secret_key(name) || name.eq_ignore_ascii_case("key")
}

fn decode(s: &str) -> Cow<'_, str> {
    percent_decode_str(s).decode_utf8_lossy()
}

/// Free text (a command line, a message): every URI with a scheme redacted as
/// [`redact_uri`] does (to the next whitespace), and every `KEY = value` or `KEY: value`
/// whose KEY names a secret with its value masked (a value quoted with `'` or `"` to its
/// closing quote, escapes honoured, else to the next whitespace); also redis's
/// `requirepass value`.
fn redact_text(s: &str) -> String {
    let b = s.as_bytes();
    // Options that take a secret in one tool are other things elsewhere (`-c 4`
    // clients, `ssh -a`, `mkdir -p`), so they are hidden only in that tool's command.
    let spans = tool_spans(s);
    let tools_at = |i: usize| -> Vec<&ToolSecret> {
        spans
            .iter()
            .filter(|(from, to, _)| (*from..*to).contains(&i))
            .map(|(_, _, t)| *t)
            .collect()
    };
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        let word_start = i == 0 || !is_word(b[i - 1]);
        if word_start && b[i].is_ascii_alphabetic() {
            if let Some(end) = uri_at(b, i) {
                out.push_str(&redact_uri(&s[i..end]));
                i = end;
                continue;
            }
        }
        // A value glued to its option (`-cpublic`, `-Apass`, mysql's `-pS3cret`,
        // `-p'S3 cr3t!'`, curl's `-sSuadmin:pw`): to the next whitespace, or past its
        // closing quote.
        let glued =
            (word_start && i >= 1 && b[i - 1] == b'-' && (i < 2 || b[i - 2].is_ascii_whitespace()))
                .then(|| glued_value_at(b, i, &tools_at(i)))
                .flatten();
        if let Some(value_start) = glued {
            out.push_str(&s[i..value_start]);
            out.push_str(MASK);
            i = text_value_end(b, value_start);
            continue;
        }
        if word_start && is_word(b[i]) {
            let mut end = i;
            while end < b.len() && is_word(b[end]) {
                end += 1;
            }
            let word = &s[i..end];
            // `X-Api-Key: K`, `--api-key K`, `--access-key K`: the word is cut at the
            // hyphen. `key=K` in a URL's query is an API key (a URL with a scheme was
            // redacted whole above; this is one without, `pdu/api?key=K`).
            let after = |p: &str| {
                i >= p.len()
                    && s.get(i - p.len()..i)
                        .is_some_and(|q| q.eq_ignore_ascii_case(p))
            };
            let key = if word.eq_ignore_ascii_case("key")
                && (after("api-") || after("access-") || after("?") || after("&"))
            {
                "apikey"
            } else {
                word
            };
            let found = secret_value_at(b, key, end)
                .or_else(|| option_value_at(b, i, key, end, &tools_at(i)));
            match found {
                Some((value_start, value_end)) => {
                    out.push_str(&s[i..value_start]);
                    out.push_str(MASK);
                    i = value_end;
                }
                None => {
                    out.push_str(word);
                    i = end;
                }
            }
            continue;
        }
        let ch = s[i..].chars().next().unwrap_or(' ');
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// A tool's one-letter options that take a secret, glued to it (`-pS3cret`) or as the
/// next word, hidden only in the tool's own command ([`tool_spans`]).
struct ToolSecret {
    /// Its commands, by how their names begin (`snmp` is `snmpget`, `snmpwalk`...).
    tools: &'static [&'static str],
    options: &'static [u8],
    glued: bool,
    next_word: bool,
    /// Its one-letter options that take no value, which its parser (getopt's, curl's,
    /// argparse's, MySQL's my_getopt) lets come before a secret option in one word:
    /// `-sSu admin:pw` is `-s -S -u admin:pw`, `-sSuadmin:pw` too. Only these: in
    /// `-Oqc` (snmp) the `c` is `-O`'s value, not the community option, so a letter
    /// not known to take no value ends the search. Empty where the parser compares
    /// whole words (redis-cli's `-a`).
    flags: &'static [u8],
}

const TOOL_SECRETS: &[ToolSecret] = &[
    // net-snmp: `-c` community, `-A`/`-X` v3 passphrases. Its getopt takes no value
    // only for `-d` (and `-h`, `-H`, `-V`, which exit): `-dc public`.
    ToolSecret {
        tools: &["snmp"],
        options: b"cAX",
        glued: true,
        next_word: true,
        flags: b"dhHV",
    },
    // The MySQL and MariaDB clients: `-pPASS` (`-p PASS` prompts, PASS the database).
    // Its my_getopt clusters; the flags take no value wherever the family (mysql,
    // mysqldump, mysqladmin, mysqlcheck...) defines them: `-BNsp'pw'`.
    ToolSecret {
        tools: &["mysql", "mariadb"],
        options: b"p",
        glued: true,
        next_word: false,
        flags: b"BNfsv",
    },
    // redis-cli compares each argument whole (`-a` alone, no `-aPASS`, no clusters).
    ToolSecret {
        tools: &["redis-cli"],
        options: b"a",
        glued: false,
        next_word: true,
        flags: b"",
    },
    ToolSecret {
        tools: &["sshpass"],
        options: b"p",
        glued: true,
        next_word: true,
        flags: b"hVv",
    },
    // ipmitool: `-P` password (`-Ppw` too), `-k` and `-y` keys; its getopt's options
    // that take no value (`-vvP pw`, `-EP pw`).
    ToolSecret {
        tools: &["ipmitool"],
        options: b"Pky",
        glued: true,
        next_word: true,
        flags: b"46hVvcgsEKYaZ",
    },
    // curl: `-u` and `-U` (the proxy's) `user:password`, glued `-uadmin:pw` hidden
    // whole (the next word, `-u admin:pw`, keeps its user). Its flags are its
    // one-letter options that take no value (`-fsSLu admin:pw`).
    ToolSecret {
        tools: &["curl"],
        options: b"uU",
        glued: true,
        next_word: false,
        flags: b"012346aBfgGiIjJklLMnNOpqRsSvVZ",
    },
    // httpie (`http`, `https`): `-a user:pw`, or a token after `-A bearer`, hidden
    // whole; argparse reads `-aadmin:pw` and `-va admin:pw` as curl does.
    ToolSecret {
        tools: &["http"],
        options: b"a",
        glued: true,
        next_word: true,
        flags: b"bcdfFhIjmqSvx",
    },
];

/// For a word of one-letter options starting at `i` (after its one `-`), where the
/// value of a tool's secret option glued to it begins: `-pS3cret`, or after the
/// tool's flags, `-sSuadmin:pw`. None if the word has none.
fn glued_value_at(b: &[u8], i: usize, tools: &[&ToolSecret]) -> Option<usize> {
    tools.iter().filter(|t| t.glued).find_map(|t| {
        let option = i + b[i..].iter().take_while(|c| t.flags.contains(c)).count();
        (b.get(option).is_some_and(|c| t.options.contains(c))
            && b.get(option + 1).is_some_and(|c| !c.is_ascii_whitespace()))
        .then_some(option + 1)
    })
}

/// Each command of `s` run by a tool of [`TOOL_SECRETS`] (its word, after any
/// directory, begins with the tool's name): the span of its arguments, from after that
/// word to the end of the command (`;`, `|`, `&`, a newline), and the tool. A path that
/// ends in a tool's name (`mkdir -p /var/lib/mysql`) opens a span after it only. A
/// command given as an option's value in the same argument (`--power-meter=snmpget -c
/// C pdu`, one argument of rackbench's command line) is its tool's from after the `=`.
fn tool_spans(s: &str) -> Vec<(usize, usize, &'static ToolSecret)> {
    let b = s.as_bytes();
    let ends_command = |c: u8| matches!(c, b';' | b'|' | b'&' | b'\n');
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_whitespace() || b"'\"(".contains(&b[i]) || ends_command(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && !b[i].is_ascii_whitespace() && !ends_command(b[i]) {
            i += 1;
        }
        let word = &s[start..i];
        let word = match word.split_once('=') {
            Some((option, command)) if option.starts_with('-') => {
                command.trim_start_matches(['\'', '"'])
            }
            _ => word,
        };
        let name = word.rsplit('/').next().unwrap_or(word);
        if let Some(t) = TOOL_SECRETS
            .iter()
            .find(|t| t.tools.iter().any(|n| name.starts_with(n)))
        {
            let end = (i..b.len())
                .find(|&k| ends_command(b[k]))
                .unwrap_or(b.len());
            out.push((i, end, t));
        }
    }
    out
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// If a URI (`scheme://...`) starts at `i`, where it ends: the next whitespace, or a
/// quote that closes what it sits in (`curl 'http://h/?pwd=x'`).
fn uri_at(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i;
    while j < b.len() && (b[j].is_ascii_alphanumeric() || b"+.-".contains(&b[j])) {
        j += 1;
    }
    if !b[j..].starts_with(b"://") {
        return None;
    }
    let closes = |k: usize| {
        matches!(b[k], b'\'' | b'"') && b.get(k + 1).is_none_or(|c| c.is_ascii_whitespace())
    };
    Some(
        (j..b.len())
            .find(|&k| b[k].is_ascii_whitespace() || closes(k))
            .unwrap_or(b.len()),
    )
}

/// For a word `key` ending at `end` that names a secret and is followed by `=` or `:`
/// (after an optional closing quote, as in JSON, and spaces), the span of its value;
/// None if there is none to hide.
fn secret_value_at(b: &[u8], key: &str, end: usize) -> Option<(usize, usize)> {
    if !is_secret_key(key) {
        return None;
    }
    let mut j = end;
    if matches!(b.get(j), Some(b'"' | b'\'')) {
        j += 1;
    }
    let spaces = |mut j: usize| {
        while matches!(b.get(j), Some(b' ' | b'\t')) {
            j += 1;
        }
        j
    };
    let after_key = spaces(j);
    let value_start = match b.get(after_key) {
        Some(b'=' | b':') => spaces(after_key + 1),
        // redis: `requirepass value`
        Some(_) if key.eq_ignore_ascii_case("requirepass") && after_key > j => after_key,
        _ => return None,
    };
    // An HTTP header's credentials are a scheme and its token (`Bearer tok`): to the
    // quote that closes the header, or the end of the line.
    let value_end =
        if key.eq_ignore_ascii_case("authorization") || key.eq_ignore_ascii_case("cookie") {
            (value_start..b.len())
                .find(|&k| matches!(b[k], b'\'' | b'"' | b'\n'))
                .unwrap_or(b.len())
        } else {
            text_value_end(b, value_start)
        };
    (value_end > value_start).then_some((value_start, value_end))
}

/// A command line's option that takes a secret as its next word (a power meter's or a
/// variant's command: `ipmitool -P pw`, `--password pw`, `curl -u user:pw`): for the
/// option word `key` starting at `i` (after its dashes) and ending at `end`, the span
/// to hide: the whole next word, or for a `user:password` one what follows the colon.
/// `-P` is ipmitool's and sshpass's password; elsewhere (redis-benchmark's pipeline)
/// hiding it costs a number.
fn option_value_at(
    b: &[u8],
    i: usize,
    key: &str,
    end: usize,
    tools: &[&ToolSecret],
) -> Option<(usize, usize)> {
    let dashes = b[..i].iter().rev().take_while(|&&c| c == b'-').count();
    let opens = i == dashes || b[i - dashes - 1].is_ascii_whitespace();
    // The last part of a hyphenated option (`--auth-token T`, `--api-key K`): a secret
    // by its own name, or a `user:password` (`--proxy-user`, `--db-user`).
    let token_start = b[..i]
        .iter()
        .rposition(|c| c.is_ascii_whitespace())
        .map_or(0, |p| p + 1);
    let hyphenated = !opens
        && dashes == 1
        && b[token_start] == b'-'
        && b[token_start..i].iter().all(|&c| is_word(c) || c == b'-')
        && (is_secret_key(key) || key == "user");
    if !hyphenated && (!(1..=2).contains(&dashes) || !opens) {
        return None;
    }
    // A tool's flags and then its secret option in one word (curl's `-sSu admin:pw`):
    // that option.
    let key = match key.as_bytes() {
        [flags @ .., option] if dashes == 1 && opens && !flags.is_empty() => {
            let cluster = |t: &&ToolSecret| {
                t.options.contains(option) && flags.iter().all(|c| t.flags.contains(c))
            };
            if tools.iter().any(cluster) {
                &key[key.len() - 1..]
            } else {
                key
            }
        }
        _ => key,
    };
    // `--user admin:pw`, or `--user=admin:pw` (curl's and most long options' other
    // spelling, which went unmasked).
    let mut value_start = match b.get(end) {
        Some(b' ' | b'\t') => end,
        // `--proxy-user=proxy:pw`: a hyphenated option's last part is seen with one dash.
        Some(b'=') if dashes == 2 || hyphenated => end + 1,
        _ => return None,
    };
    while matches!(b.get(value_start), Some(b' ' | b'\t')) {
        value_start += 1;
    }
    // A password may begin with `-` (`-P -x9`): after an option that takes one, a word
    // with one dash is hidden (hiding a word too many costs little); `--next` is the
    // next option, and so is any `-` after another option.
    let takes_any = matches!((dashes, key), (1, "P") | (2, "password"))
        && b.get(value_start + 1) != Some(&b'-');
    if b.get(value_start).is_none_or(|&c| c == b'-' && !takes_any) {
        return None;
    }
    let value_end = text_value_end(b, value_start);
    let whole = (value_start, value_end);
    let after_colon = || {
        let colon = b[value_start..value_end].iter().position(|&c| c == b':')?;
        (value_start + colon + 1 < value_end).then_some((value_start + colon + 1, value_end))
    };
    match (dashes, key) {
        (1, "P") => Some(whole),
        (1, k)
            if k.len() == 1
                && tools
                    .iter()
                    .any(|t| t.next_word && t.options.contains(&k.as_bytes()[0])) =>
        {
            Some(whole)
        }
        // `user:password` (curl's `-u`, and `-U` its proxy's): the user is kept, and a
        // user alone is no secret (curl asks for the password).
        (1, "u" | "U") | (_, "user") => after_colon(),
        // httpie's `--auth user:password` likewise, but `--auth T` alone is a token
        // (after `--auth-type bearer`).
        (2, "auth") => after_colon().or(Some(whole)),
        // Not an error code in capitals (redis's `-WRONGPASS invalid ...`).
        _ if is_secret_key(key) && key.bytes().any(|c| c.is_ascii_lowercase()) => Some(whole),
        _ => None,
    }
}

/// Where a value starting at `i` ends: a `'`- or `"`-quoted one after its closing
/// quote (backslash escapes honoured; the end of the text if unterminated), else at the
/// next whitespace or a quote closing what it sits in.
fn text_value_end(b: &[u8], mut i: usize) -> usize {
    match b.get(i) {
        Some(&q @ (b'\'' | b'"')) => {
            i += 1;
            while i < b.len() {
                match b[i] {
                    b'\\' => i += 2,
                    c if c == q => return i + 1,
                    _ => i += 1,
                }
            }
            b.len()
        }
        _ => {
            // To the next whitespace, or to a quote that closes what the value sits in
            // (`-H 'X-Api-Key: K'`): one followed by whitespace or the end.
            let closes = |i: usize| {
                matches!(b[i], b'\'' | b'"') && b.get(i + 1).is_none_or(|c| c.is_ascii_whitespace())
            };
            while i < b.len() && !b[i].is_ascii_whitespace() && !closes(i) {
                i += 1;
            }
            i
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `dsn` redacted is `want`, and no fragment of `secret` survives.
    fn hides(dsn: &str, secret: &str, want: &str) {
        let got = redact_secrets(dsn);
        assert_eq!(got, want, "redacting {dsn:?}");
        assert!(!got.contains(secret), "{secret:?} left in {got:?}");
    }

    #[test]
    fn keyword_value_plain_and_spaced() {
        hides(
            "host=x user=bob password=s3cret dbname=y",
            "s3cret",
            "host=x user=bob password=*** dbname=y",
        );
        hides(
            "host=x password = s3cret dbname=y",
            "s3cret",
            "host=x password = *** dbname=y",
        );
        hides(
            "host=x password\t=\ts3cret",
            "s3cret",
            "host=x password\t=\t***",
        );
        hides("  password=s3cret  ", "s3cret", "  password=***  ");
    }

    #[test]
    fn keyword_value_quoted_with_escapes() {
        hides(
            r"host=x password='a b\'c\\d' dbname=y",
            "a b",
            "host=x password=*** dbname=y",
        );
        hides(
            r"password = 'has spaces' user=u",
            "spaces",
            "password = *** user=u",
        );
        hides("password='' user=u", "''", "password=*** user=u");
        // Unquoted with backslash escapes: libpq reads `a\ b` as `a b`.
        hides(r"password=a\ b user=u", r"a\ b", r"password=*** user=u");
        // A password that looks like a keyword/value pair of its own.
        hides(
            "password='user=x dbname=y' host=h",
            "user=x",
            "password=*** host=h",
        );
        // libpq skips whitespace after `=`: the next word is the value.
        hides("password= s3cret", "s3cret", "password= ***");
    }

    #[test]
    fn keyword_case_and_other_secret_keywords() {
        hides("PASSWORD=s3cret host=h", "s3cret", "PASSWORD=*** host=h");
        hides("Password = s3cret", "s3cret", "Password = ***");
        hides(
            "host=h sslpassword=keypw sslkey=/k",
            "keypw",
            "host=h sslpassword=*** sslkey=/k",
        );
        assert_eq!(
            redact_secrets("host=h passfile=/home/u/.pgpass"),
            "host=h passfile=/home/u/.pgpass"
        );
    }

    #[test]
    fn keyword_value_without_password_is_untouched() {
        for s in [
            "host=/tmp port=5432 user=bob dbname=tpcc",
            "host='/tmp/a b' application_name='it\\'s'",
            "work_mem=64MB",
            "",
            "no secrets here",
            "/var/run/postgresql",
        ] {
            assert_eq!(redact_secrets(s), s);
        }
    }

    #[test]
    fn a_connection_string_inside_a_value() {
        // libpq expands a dbname that is itself a connection string.
        hides(
            "dbname='postgresql://u:pw1@h/db' host=h",
            "pw1",
            "dbname=postgresql://u:***@h/db host=h",
        );
        hides(
            "dbname='user=u password=pw1' host=h",
            "pw1",
            "dbname='user=u password=***' host=h",
        );
        hides(
            "--dsn=postgresql://u:pw1@h/db",
            "pw1",
            "--dsn=postgresql://u:***@h/db",
        );
    }

    #[test]
    fn uri_userinfo() {
        hides(
            "postgres://bob:s3cret@db:5432/tpcc",
            "s3cret",
            "postgres://bob:***@db:5432/tpcc",
        );
        hides(
            "postgresql://bob:s3cret@db/tpcc",
            "s3cret",
            "postgresql://bob:***@db/tpcc",
        );
        hides(
            "postgresql://bob:p%40ss%3Aw%2Fd@db/tpcc",
            "p%40",
            "postgresql://bob:***@db/tpcc",
        );
        hides("postgresql://:s3cret@db", "s3cret", "postgresql://:***@db");
        hides(
            "POSTGRESQL://bob:s3cret@db",
            "s3cret",
            "POSTGRESQL://bob:***@db",
        );
        assert_eq!(
            redact_secrets("postgres://bob@db/tpcc"),
            "postgres://bob@db/tpcc"
        );
        assert_eq!(
            redact_secrets("postgresql:///tpcc?host=/tmp"),
            "postgresql:///tpcc?host=/tmp"
        );
    }

    #[test]
    fn uri_password_with_unencoded_at_colon_slash() {
        hides(
            "postgresql://bob:p@ss:w@db/tpcc",
            "ss:w",
            "postgresql://bob:***@db/tpcc",
        );
        hides(
            "postgresql://bob:pa/ss@db/tpcc",
            "pa/ss",
            "postgresql://bob:***@db/tpcc",
        );
        hides(
            "postgresql://bob:pa?ss@db/tpcc",
            "pa?ss",
            "postgresql://bob:***@db/tpcc",
        );
    }

    #[test]
    fn uri_query_password() {
        hides(
            "postgresql://bob@db/tpcc?password=s3cret&sslmode=require",
            "s3cret",
            "postgresql://bob@db/tpcc?password=***&sslmode=require",
        );
        hides(
            "postgresql:///tpcc?sslmode=disable&password=s3cret",
            "s3cret",
            "postgresql:///tpcc?sslmode=disable&password=***",
        );
        // libpq percent-decodes the keyword too.
        hides(
            "postgresql://db/tpcc?pass%77ord=s3cret",
            "s3cret",
            "postgresql://db/tpcc?pass%77ord=***",
        );
        hides(
            "postgresql://bob:a@db/x?password=b",
            "=b",
            "postgresql://bob:***@db/x?password=***",
        );
        hides(
            "postgresql://db/x?dbname=user%3Du%20password%3Dpw1",
            "pw1",
            "postgresql://db/x?dbname=***",
        );
    }

    /// `--dsn mysql://` and `mariadb://` (oltp --engine mariadb): the password in the
    /// userinfo or the query is hidden, the rest kept.
    #[test]
    fn mysql_and_mariadb_uris() {
        hides(
            "mysql://bench:Zq9pw@127.0.0.1:3306/tpcc",
            "Zq9pw",
            "mysql://bench:***@127.0.0.1:3306/tpcc",
        );
        hides(
            "MariaDB://bench:Zq9%40p%3Aw@db/tpcc?socket=/run/mysqld/mysqld.sock",
            "Zq9",
            "MariaDB://bench:***@db/tpcc?socket=/run/mysqld/mysqld.sock",
        );
        hides(
            "mysql://bench@db/tpcc?password=Zq9pw&prefer_socket=false",
            "Zq9pw",
            "mysql://bench@db/tpcc?password=***&prefer_socket=false",
        );
        let text = redact_secrets("cannot reach mysql://u:Zq9pw@h/db: refused");
        assert!(!text.contains("Zq9pw"), "{text}");
    }

    #[test]
    fn uri_with_several_hosts() {
        hides(
            "postgresql://bob:s3cret@host1:5432,host2:5433,[::1]:5434/tpcc?target_session_attrs=any",
            "s3cret",
            "postgresql://bob:***@host1:5432,host2:5433,[::1]:5434/tpcc?target_session_attrs=any",
        );
        assert_eq!(
            redact_secrets("postgresql://host1:5432,host2/db"),
            "postgresql://host1:5432,host2/db"
        );
    }

    #[test]
    fn text_around_connection_strings() {
        hides(
            "rackbench run oltp --dsn 'host=h password = \"a b\"' -q",
            "a b",
            "rackbench run oltp --dsn 'host=h password = ***' -q",
        );
        hides(
            "PGPASSWORD=s3cret rackbench run oltp",
            "s3cret",
            "PGPASSWORD=*** rackbench run oltp",
        );
        hides(
            "bad --dsn `postgres://u:s3cret@h/db`: invalid",
            "s3cret",
            "bad --dsn `postgres://u:***@h/db`: invalid",
        );
        hides(
            "see redis://:s3cret@10.0.0.1:6379/0 and http://u:pw2@x/",
            "s3cret",
            "see redis://:***@10.0.0.1:6379/0 and http://u:***@x/",
        );
        hides(
            r#"{"password": "s3 cret", "x": 1}"#,
            "s3 cret",
            r#"{"password": ***, "x": 1}"#,
        );
        hides(
            "config set requirepass s3cret",
            "s3cret",
            "config set requirepass ***",
        );
        hides(
            "--pg-password='it\\'s s3cret' next",
            "s3cret",
            "--pg-password=*** next",
        );
        // A command's options that take a secret as their next word.
        hides(
            "ipmitool -I lanplus -H bmc -U admin -P s3cret dcmi power reading",
            "s3cret",
            "ipmitool -I lanplus -H bmc -U admin -P *** dcmi power reading",
        );
        hides(
            "curl -s -u admin:s3cret http://pdu/power",
            "s3cret",
            "curl -s -u admin:*** http://pdu/power",
        );
        hides(
            "meter --user=admin --password 's3 cret' --port 1",
            "s3 cret",
            "meter --user=admin --password *** --port 1",
        );
        hides("pdu --user admin:s3cret", "s3cret", "pdu --user admin:***");
        // A PDU's meter (review H, 2): SNMP's community and v3 passphrases, a URL's
        // token, an HTTP header's credentials.
        hides(
            "snmpget -v2c -c comm3 pdu 1.3.6",
            "comm3",
            "snmpget -v2c -c *** pdu 1.3.6",
        );
        let v3 = redact_secrets("snmpget -v3 -u admin -A authsec1 -X privsec2 pdu x");
        assert_eq!(v3, "snmpget -v3 -u admin -A *** -X *** pdu x");
        hides(
            "curl 'http://pdu/api?token=tok4&outlet=1'",
            "tok4",
            "curl 'http://pdu/api?token=***&outlet=1'",
        );
        hides(
            "curl -H 'Authorization: Bearer tok5' http://pdu/w",
            "tok5",
            "curl -H 'Authorization: ***' http://pdu/w",
        );
        hides("pdu --apikey k6 --x 1", "k6", "pdu --apikey *** --x 1");
        // Review I, 4: shapes the masking did not know.
        hides("snmpget -v2c -cs3cA pdu", "s3cA", "snmpget -v2c -c*** pdu");
        // The security audit's: an option's `=` spelling, a glued ipmitool or curl
        // secret, a password that begins with `-`, ipmitool's keys.
        hides(
            "curl --user=admin:s3cB http://pdu/w",
            "s3cB",
            "curl --user=admin:*** http://pdu/w",
        );
        hides(
            "curl -uadmin:s3cC http://pdu/w",
            "s3cC",
            "curl -u*** http://pdu/w",
        );
        hides(
            "ipmitool -H bmc -Ps3cD dcmi power reading",
            "s3cD",
            "ipmitool -H bmc -P*** dcmi power reading",
        );
        hides(
            "ipmitool -H bmc -P -s3cE dcmi power reading",
            "-s3cE",
            "ipmitool -H bmc -P *** dcmi power reading",
        );
        hides(
            "ipmitool -I lanplus -k k3yF -y k3yG -P x dcmi",
            "k3yF",
            "ipmitool -I lanplus -k *** -y *** -P *** dcmi",
        );
        hides("meter --password -s3cH", "-s3cH", "meter --password ***");
    }

    /// The database and cache clients' own shapes, and the variables they read.
    #[test]
    fn client_tools_passwords() {
        for (text, secret, want) in [
            (
                "mysql -uroot -phunter2 -e 'SET GLOBAL x=1'",
                "hunter2",
                "mysql -uroot -p*** -e 'SET GLOBAL x=1'",
            ),
            ("mariadb -phunter2 -e x", "hunter2", "mariadb -p*** -e x"),
            (
                "redis-cli -a hunter2 config set save ''",
                "hunter2",
                "redis-cli -a *** config set save ''",
            ),
            (
                "MYSQL_PWD=hunter2 mysql -e x",
                "hunter2",
                "MYSQL_PWD=*** mysql -e x",
            ),
            (
                "REDISCLI_AUTH=hunter2 redis-cli ping",
                "hunter2",
                "REDISCLI_AUTH=*** redis-cli ping",
            ),
            ("sshpass -p pw9 ssh h", "pw9", "sshpass -p *** ssh h"),
            (
                "curl 'http://pdu/cgi?user=admin&pwd=hunter2'",
                "hunter2",
                "curl 'http://pdu/cgi?user=admin&pwd=***'",
            ),
            // Glued values with characters beyond a word's, and quoted.
            (
                "mysql -uroot -pP@ss!w0rd -e x",
                "P@ss",
                "mysql -uroot -p*** -e x",
            ),
            ("mysql -pmy-pass -e x", "pass", "mysql -p*** -e x"),
            ("mysql -p'S3 cr3t!' -e x", "S3", "mysql -p*** -e x"),
            (
                "/usr/bin/mysqladmin -p\"S3cr3t\" status",
                "S3cr3t",
                "/usr/bin/mysqladmin -p*** status",
            ),
        ] {
            hides(text, secret, want);
        }
        // The same letters elsewhere are no secret: not that tool's command.
        assert_eq!(redact_secrets("ssh -a host ls -a"), "ssh -a host ls -a");
        assert_eq!(redact_secrets("tar -p -x f"), "tar -p -x f");
        assert_eq!(
            redact_secrets("mkdir -pv /var/lib/mysql && chown mysql /var/lib/mysql"),
            "mkdir -pv /var/lib/mysql && chown mysql /var/lib/mysql"
        );
        assert_eq!(
            redact_secrets("ssh -p2222 db systemctl restart mysqld"),
            "ssh -p2222 db systemctl restart mysqld"
        );
        assert_eq!(
            redact_secrets("mysql -e x; tar -pxf a.tar"),
            "mysql -e x; tar -pxf a.tar"
        );
        // redis's error codes are no keys.
        for t in [
            "it answered PING with NOAUTH: a requirepass, or a user",
            "the server refused AUTH: -WRONGPASS invalid",
        ] {
            assert_eq!(redact_secrets(t), t);
        }
        hides(
            "pdu --api-key s3cB --x 1",
            "s3cB",
            "pdu --api-key *** --x 1",
        );
        hides(
            "pdu --auth-token s3cC --x 1",
            "s3cC",
            "pdu --auth-token *** --x 1",
        );
        hides(
            "curl -H 'X-Api-Key: s3cD' http://pdu/",
            "s3cD",
            "curl -H 'X-Api-Key: ***' http://pdu/",
        );
        hides("-H 'Cookie: sid=s3cE; x=1'", "s3cE", "-H 'Cookie: ***'");
        assert_eq!(redact_secrets("kv -c4 -t set"), "kv -c4 -t set");
        assert_eq!(redact_secrets("a --key-size 4"), "a --key-size 4");
        assert_eq!(redact_secrets("X-Api-Key-Id 7"), "X-Api-Key-Id 7");
        // `-c` elsewhere is not SNMP's.
        assert_eq!(redact_secrets("kv -c 4 -t set"), "kv -c 4 -t set");
        // Words that only look alike are kept.
        for s in [
            "curl -u admin http://pdu/",
            "tool --password --next",
            "a-P x",
            "password authentication failed for user \"bob\"",
            "--user default on nopass ~* &*",
            "the passes",
        ] {
            assert_eq!(redact_secrets(s), s);
        }
    }

    /// The audit's: a tool's secret option after its flags in one word, which its
    /// parser reads letter by letter; only for the tools that do, and only after
    /// letters that take no value.
    #[test]
    fn a_secret_option_after_a_cluster_of_flags_is_hidden() {
        for (text, secret, want) in [
            (
                "curl -sSu admin:S3cA http://pdu/w",
                "S3cA",
                "curl -sSu admin:*** http://pdu/w",
            ),
            (
                "curl -fsu admin:S3cB http://pdu/",
                "S3cB",
                "curl -fsu admin:*** http://pdu/",
            ),
            (
                "curl -sSuadmin:S3cC http://pdu/w",
                "S3cC",
                "curl -sSu*** http://pdu/w",
            ),
            (
                "curl -sSU proxy:S3cD -x http://p:3128 http://pdu/",
                "S3cD",
                "curl -sSU proxy:*** -x http://p:3128 http://pdu/",
            ),
            (
                "snmpget -v2c -dc S3cE pdu 1.3.6",
                "S3cE",
                "snmpget -v2c -dc *** pdu 1.3.6",
            ),
            (
                "snmpget -v2c -dcS3cF pdu 1.3.6",
                "S3cF",
                "snmpget -v2c -dc*** pdu 1.3.6",
            ),
            (
                "ipmitool -H bmc -vvP S3cG dcmi",
                "S3cG",
                "ipmitool -H bmc -vvP *** dcmi",
            ),
            (
                "ipmitool -H bmc -EPS3cH dcmi",
                "S3cH",
                "ipmitool -H bmc -EP*** dcmi",
            ),
            ("mysql -BNpS3cI -e x", "S3cI", "mysql -BNp*** -e x"),
            ("sshpass -vp S3cJ ssh h", "S3cJ", "sshpass -vp *** ssh h"),
            ("http -va admin:S3cK pdu/w", "S3cK", "http -va *** pdu/w"),
            ("http -vaadmin:S3cL pdu/w", "S3cL", "http -va*** pdu/w"),
        ] {
            hides(text, secret, want);
        }
        // A letter that takes a value of its own ends the cluster: snmp's `-Cc`
        // (`-C c`) and `-Oqv`, curl's `-H` header and `-o` file; redis-cli reads no
        // clusters; a tool not known, no guess.
        for s in [
            "snmpwalk -Cc -Oqv -v2c pdu 1.3.6",
            "curl -Hu:1 -sSo /tmp/u http://pdu/",
            "redis-cli -xa pdu",
            "kv -sSu admin:1",
            "curl -sS http://pdu/",
        ] {
            assert_eq!(redact_secrets(s), s);
        }
    }

    /// The audit's: `bearer`, `auth`, `access_key` and a query's `key` name secrets;
    /// a key file's path, a key's size and redis's `AUTH` do not.
    #[test]
    fn bearer_auth_and_a_querys_key_are_secrets() {
        for (text, secret, want) in [
            (
                "curl --oauth2-bearer S3cA http://pdu/",
                "S3cA",
                "curl --oauth2-bearer *** http://pdu/",
            ),
            (
                "curl --oauth2-bearer=S3cB http://pdu/",
                "S3cB",
                "curl --oauth2-bearer=*** http://pdu/",
            ),
            (
                "http --auth admin:S3cC pdu/w",
                "S3cC",
                "http --auth admin:*** pdu/w",
            ),
            (
                "http -A bearer --auth S3cD pdu/w",
                "S3cD",
                "http -A bearer --auth *** pdu/w",
            ),
            (
                "http -A bearer -a S3cE pdu/w",
                "S3cE",
                "http -A bearer -a *** pdu/w",
            ),
            (
                "curl 'https://pdu/api?key=S3cF&outlet=1'",
                "S3cF",
                "curl 'https://pdu/api?key=***&outlet=1'",
            ),
            (
                "curl https://pdu/api?access_key=S3cG",
                "S3cG",
                "curl https://pdu/api?access_key=***",
            ),
            (
                "curl https://pdu/?api-key=S3cH",
                "S3cH",
                "curl https://pdu/?api-key=***",
            ),
            (
                "curl pdu/api?x=1&key=S3cI",
                "S3cI",
                "curl pdu/api?x=1&key=***",
            ),
            (
                "pdu --access-key S3cJ --x 1",
                "S3cJ",
                "pdu --access-key *** --x 1",
            ),
            (
                "curl --proxy-user proxy:S3cK http://pdu/",
                "S3cK",
                "curl --proxy-user proxy:*** http://pdu/",
            ),
            (
                "curl --proxy-user=proxy:S3cL http://pdu/",
                "S3cL",
                "curl --proxy-user=proxy:*** http://pdu/",
            ),
            (
                "pdu --db-user=u:S3cM --access-key=S3cN",
                "S3c",
                "pdu --db-user=u:*** --access-key=***",
            ),
        ] {
            hides(text, secret, want);
        }
        assert_eq!(
            redact_json(&json!({"auth": "admin:pw", "oauth2_bearer": "t", "key": "user:1"})),
            json!({"auth": "***", "oauth2_bearer": "***", "key": "user:1"})
        );
        for s in [
            "curl --key /etc/pdu/client.key --key-type PEM https://pdu/",
            "meter --key-file /etc/pdu/k --api-key-file /etc/pdu/a",
            "https://pdu/api?keyspace=4&monkey=1",
            "http -A bearer pdu/w",
            "http --auth-type=bearer pdu/w",
            "the server refused AUTH: -WRONGPASS invalid",
            "key=user:1 hits=4",
        ] {
            assert_eq!(redact_secrets(s), s);
        }
    }

    /// The audit's: rackbench's `--power-meter=CMD` as one argument, its command line
    /// masked argument by argument, is CMD's tool's.
    #[test]
    fn a_command_after_an_options_equals_sign_is_its_tools() {
        for (text, secret, want) in [
            (
                "--power-meter=snmpget -v2c -c S3cA pdu 1.3.6 ; echo 150",
                "S3cA",
                "--power-meter=snmpget -v2c -c *** pdu 1.3.6 ; echo 150",
            ),
            (
                "--power-meter=curl -uadmin:S3cB http://pdu/w",
                "S3cB",
                "--power-meter=curl -u*** http://pdu/w",
            ),
            (
                "--power-meter=redis-cli -a S3cC info",
                "S3cC",
                "--power-meter=redis-cli -a *** info",
            ),
            (
                "meter failed: \"--power-meter=ipmitool -k S3cD dcmi\"",
                "S3cD",
                "meter failed: \"--power-meter=ipmitool -k *** dcmi\"",
            ),
            (
                "bad --power-meter='snmpget -c S3cE pdu 1.3': timed out",
                "S3cE",
                "bad --power-meter='snmpget -c *** pdu 1.3': timed out",
            ),
        ] {
            hides(text, secret, want);
        }
        // An option's value that is no tool opens no span.
        for s in ["--clients=4 -c 8", "--setup=tar -pxf a.tar"] {
            assert_eq!(redact_secrets(s), s);
        }
    }

    #[test]
    fn json_is_walked_string_by_string() {
        let plan = json!({
            "dsn": "host=h password='it\\'s \"x\"' dbname=d",
            "list": ["postgresql://u:pw1@h/d", 3],
            "password": "pw2",
            "nested": {"PGPASSWORD": 42, "n": null, "secret_key": ["a"]},
        });
        let r = redact_json(&plan);
        assert_eq!(
            r,
            json!({
                "dsn": "host=h password=*** dbname=d",
                "list": ["postgresql://u:***@h/d", 3],
                "password": "***",
                "nested": {"PGPASSWORD": "***", "n": null, "secret_key": "***"},
            })
        );
    }
}
