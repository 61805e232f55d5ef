//! AUTH for `--target` servers that need a password (`requirepass`, or an ACL user with
//! one). The password is read from a file (`--auth-file`) on each host that connects:
//! the system under test for the admin checks and counters, every load generator for
//! its connections. So it is never on a command line, in a plan, in the store or on the
//! wire between rackbench's hosts; only the file's path is.
//!
//! Like redis-benchmark, a load generator's connection sends AUTH in front of its first
//! request (and again after every reconnect), without waiting for the reply first: the
//! reply is taken off the front of the first request's (see [`crate::resp::Resp`]), so
//! `-k 0` pays no extra round trip per connection.

use std::fmt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use anyhow::{bail, Context};

use crate::resp::encode_command;

/// `AUTH [user] password`, ready to send.
#[derive(Clone)]
pub struct Auth {
    /// The whole RESP command.
    command: Vec<u8>,
    /// The same as arguments, for the blocking admin client.
    args: Vec<String>,
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Auth(***)")
    }
}

impl Auth {
    /// The AUTH of a config: `None` without `--auth-file`.
    pub fn of(cfg: &crate::KvConfig) -> anyhow::Result<Option<Auth>> {
        cfg.auth_file
            .as_deref()
            .map(|path| Auth::load(Path::new(path), cfg.user.as_deref()))
            .transpose()
    }

    /// Read the password from `path`: one line (a final newline is not part of it),
    /// readable by its owner alone, as ssh asks of a private key.
    pub fn load(path: &Path, user: Option<&str>) -> anyhow::Result<Auth> {
        let shown = path.display();
        let meta = std::fs::metadata(path)
            .with_context(|| format!("--auth-file {shown}: cannot read it on this host"))?;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            bail!(
                "--auth-file {shown} can be read by others (mode {mode:o}): it holds a \
                 password, so make it the owner's alone (chmod 600 {shown})"
            );
        }
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("--auth-file {shown}: cannot read it as text"))?;
        let password = text
            .strip_suffix("\r\n")
            .or_else(|| text.strip_suffix('\n'))
            .unwrap_or(&text);
        if password.is_empty() {
            bail!("--auth-file {shown} is empty: it holds the password, alone on one line");
        }
        if password.contains(['\n', '\r']) {
            bail!(
                "--auth-file {shown} has more than one line: it holds the password alone \
                 (give an ACL user's name with --user)"
            );
        }
        let mut args = vec!["AUTH".to_string()];
        args.extend(user.map(str::to_string));
        args.push(password.to_string());
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        Ok(Auth {
            command: encode_command(&refs),
            args,
        })
    }

    pub fn command(&self) -> &[u8] {
        &self.command
    }

    pub fn args(&self) -> Vec<&str> {
        self.args.iter().map(String::as_str).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn file(dir: &Path, name: &str, text: &str, mode: u32) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }

    #[test]
    fn the_password_is_one_line_of_a_file_only_its_owner_reads() {
        let dir = tempfile::tempdir().unwrap();
        let ok = file(dir.path(), "ok", "s3cr3t pass\n", 0o600);
        let a = Auth::load(&ok, None).unwrap();
        assert_eq!(a.command(), b"*2\r\n$4\r\nAUTH\r\n$11\r\ns3cr3t pass\r\n");
        let a = Auth::load(&ok, Some("bench")).unwrap();
        assert_eq!(a.args(), ["AUTH", "bench", "s3cr3t pass"]);
        assert_eq!(format!("{a:?}"), "Auth(***)");

        let open = file(dir.path(), "open", "s3cr3t\n", 0o644);
        let e = format!("{:#}", Auth::load(&open, None).unwrap_err());
        assert!(e.contains("(mode 644)") && e.contains("chmod 600"), "{e}");
        for (name, text) in [("empty", "\n"), ("two", "a\nb\n")] {
            let p = file(dir.path(), name, text, 0o400);
            let e = format!("{:#}", Auth::load(&p, None).unwrap_err());
            assert!(e.contains("the password"), "{e}");
        }
        let e = format!(
            "{:#}",
            Auth::load(&dir.path().join("missing"), None).unwrap_err()
        );
        assert!(e.contains("cannot read it on this host"), "{e}");
    }
}
