//! libpq's password file (`~/.pgpass`, or the file `PGPASSFILE` names), which the
//! postgres crate does not read: with it (or `PGPASSWORD`) a `--dsn` needs no password,
//! so none has to be typed on a command line.
//!
//! As libpq ("The Password File"): lines `hostname:port:database:username:password`,
//! each of the first four fields a literal or `*` (anything), `\:` and `\\` escapes, `#`
//! comments; the first matching line wins; a file that is not a regular file or that
//! the group or others may access is ignored, with a warning.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use postgres::config::Host;

/// The connection a password is looked up for, as libpq matches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    pub host: String,
    pub port: u16,
    pub dbname: String,
    pub user: String,
}

/// Socket directories libpq is commonly built with as its default: a connection through
/// one of them matches the file's `localhost` (libpq compares with its own build's).
const DEFAULT_SOCKET_DIRS: [&str; 3] = ["/var/run/postgresql", "/run/postgresql", "/tmp"];

/// The password file libpq would read: `PGPASSFILE`, else `~/.pgpass`.
pub fn file() -> Option<PathBuf> {
    match std::env::var_os("PGPASSFILE") {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => std::env::var_os("HOME").map(|h| Path::new(&h).join(".pgpass")),
    }
}

/// The password for `cfg` from the password file, trying its hosts in order as libpq
/// does when it connects to each in turn. A warning (the file's permissions) goes to
/// `warn`.
pub fn password_for(cfg: &postgres::Config, warn: &dyn Fn(&str)) -> Option<String> {
    let path = file()?;
    let text = read(&path, warn)?;
    keys(cfg).iter().find_map(|k| lookup(&text, k))
}

/// The keys libpq looks up for `cfg`: one per host (`localhost` for none or for a
/// default socket directory), with its port (5432 when none), the database (the user
/// name when none) and the user (the login name when none, as the postgres crate
/// connects).
pub fn keys(cfg: &postgres::Config) -> Vec<Key> {
    let user = cfg
        .get_user()
        .map(str::to_string)
        .or_else(|| whoami::username().ok())
        .unwrap_or_default();
    let dbname = cfg.get_dbname().unwrap_or(&user).to_string();
    let mut hosts: Vec<String> = cfg.get_hosts().iter().map(host_name).collect();
    if hosts.is_empty() {
        hosts = cfg.get_hostaddrs().iter().map(|a| a.to_string()).collect();
    }
    if hosts.is_empty() {
        hosts.push("localhost".into());
    }
    let ports = cfg.get_ports();
    hosts
        .into_iter()
        .enumerate()
        .map(|(i, host)| Key {
            host,
            port: match ports.len() {
                0 => 5432,
                1 => ports[0],
                _ => ports.get(i).copied().unwrap_or(5432),
            },
            dbname: dbname.clone(),
            user: user.clone(),
        })
        .collect()
}

fn host_name(h: &Host) -> String {
    match h {
        Host::Tcp(name) => name.clone(),
        Host::Unix(dir) => {
            let d = dir.to_string_lossy();
            if DEFAULT_SOCKET_DIRS.contains(&d.trim_end_matches('/')) {
                "localhost".into()
            } else {
                d.into_owned()
            }
        }
    }
}

/// The file's text, if libpq would read it: a regular file nobody but its owner may
/// access. A missing file is silently nothing.
pub fn read(path: &Path, warn: &dyn Fn(&str)) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() {
        warn(&format!(
            "password file \"{}\" is not a plain file",
            path.display()
        ));
        return None;
    }
    if meta.permissions().mode() & 0o077 != 0 {
        warn(&format!(
            "password file \"{}\" has group or world access; permissions should be u=rw \
             (0600) or less",
            path.display()
        ));
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// The password of the first line of `text` matching `key`.
pub fn lookup(text: &str, key: &Key) -> Option<String> {
    let port = key.port.to_string();
    text.lines()
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .find_map(|line| {
            let rest = field_matches(line, &key.host)?;
            let rest = field_matches(rest, &port)?;
            let rest = field_matches(rest, &key.dbname)?;
            let rest = field_matches(rest, &key.user)?;
            Some(unescape_password(rest))
        })
}

/// If the field at the start of `line` matches `want` (`*` matches anything; `\`
/// escapes the next character), the rest of the line after its `:`.
fn field_matches<'a>(line: &'a str, want: &str) -> Option<&'a str> {
    if let Some(rest) = line.strip_prefix("*:") {
        return Some(rest);
    }
    let mut field = String::new();
    let mut chars = line.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => field.push(chars.next()?.1),
            ':' => return (field == want).then(|| &line[i + 1..]),
            c => field.push(c),
        }
    }
    None
}

/// The password field: to the end of the line or an unescaped `:`, escapes removed.
fn unescape_password(field: &str) -> String {
    let mut out = String::new();
    let mut chars = field.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(n) => out.push(n),
                None => out.push('\\'),
            },
            ':' => break,
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn key(host: &str, port: u16, dbname: &str, user: &str) -> Key {
        Key {
            host: host.into(),
            port,
            dbname: dbname.into(),
            user: user.into(),
        }
    }

    #[test]
    fn first_matching_line_wins_with_wildcards() {
        let text = "# host:port:db:user:password\n\
                    db1:5432:tpcc:bench:first\n\
                    *:5432:tpcc:bench:second\n\
                    *:*:*:*:anyone\n";
        assert_eq!(
            lookup(text, &key("db1", 5432, "tpcc", "bench")).as_deref(),
            Some("first")
        );
        assert_eq!(
            lookup(text, &key("db2", 5432, "tpcc", "bench")).as_deref(),
            Some("second")
        );
        assert_eq!(
            lookup(text, &key("db1", 5433, "tpcc", "bench")).as_deref(),
            Some("anyone")
        );
        assert_eq!(
            lookup("db1:5432:tpcc:bench:x\n", &key("db1", 5432, "tpcc", "bob")),
            None
        );
    }

    #[test]
    fn escapes_in_fields_and_password() {
        // A host with a colon (an IPv6 address) and a password with `:` and `\`.
        let text = "fe80\\:\\:1:5432:tpcc:bench:p\\:a\\\\ss\n";
        assert_eq!(
            lookup(text, &key("fe80::1", 5432, "tpcc", "bench")).as_deref(),
            Some("p:a\\ss")
        );
        // The password ends at an unescaped colon; CRLF line ends are taken off.
        assert_eq!(
            lookup("h:1:d:u:pw:extra\r\n", &key("h", 1, "d", "u")).as_deref(),
            Some("pw")
        );
        // `*` matches only as a whole field; `x*` is literal.
        assert_eq!(lookup("h*:1:d:u:pw\n", &key("hx", 1, "d", "u")), None);
        assert_eq!(
            lookup("\\*:1:d:u:pw\n", &key("*", 1, "d", "u")).as_deref(),
            Some("pw")
        );
    }

    #[test]
    fn keys_follow_libpq_defaults() {
        let c = postgres::Config::from_str("host=/var/run/postgresql user=bench").unwrap();
        assert_eq!(keys(&c), vec![key("localhost", 5432, "bench", "bench")]);
        let c = postgres::Config::from_str("host=/srv/sock,db2 port=5433,5434 user=u dbname=d")
            .unwrap();
        assert_eq!(
            keys(&c),
            vec![key("/srv/sock", 5433, "d", "u"), key("db2", 5434, "d", "u")]
        );
        let c = postgres::Config::from_str("postgresql://u@h1,h2:6000/d").unwrap();
        assert_eq!(
            keys(&c),
            vec![key("h1", 5432, "d", "u"), key("h2", 6000, "d", "u")]
        );
    }

    #[test]
    fn a_file_others_may_read_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pgpass");
        std::fs::write(&path, "*:*:*:*:pw\n").unwrap();
        let warned = std::cell::RefCell::new(Vec::new());
        let warn = |w: &str| warned.borrow_mut().push(w.to_string());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read(&path, &warn).as_deref(), Some("*:*:*:*:pw\n"));
        assert!(warned.borrow().is_empty());
        for mode in [0o640, 0o604, 0o660] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            assert_eq!(read(&path, &warn), None, "mode {mode:o}");
        }
        assert!(warned.borrow()[0].contains("group or world access"));
        assert_eq!(read(&dir.path().join("none"), &warn), None);
        assert_eq!(read(dir.path(), &warn), None, "a directory");
    }
}
