//! The open-file limit: a load generator holds one descriptor per connection, a server one
//! per client. The soft limit (often 1024) is raised to the hard limit, as any process may
//! do; what the hard limit does not allow is refused before the test starts, with how to
//! raise it, rather than failing mid-test with "too many open files".

/// Descriptors a process needs beyond its connections (store, pipes, telemetry, logs).
pub const SPARE: u64 = 64;

/// Raise the soft open-file limit to the hard one; returns (soft, hard) afterwards.
pub fn raise_open_files() -> (u64, u64) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit write and read the struct we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return (0, 0);
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim.rlim_cur = lim.rlim_max;
            }
        }
    }
    (lim.rlim_cur, lim.rlim_max)
}

/// Ok when `connections` (plus [`SPARE`]) fit under the open-file limit, after raising it
/// as far as allowed; otherwise an error that says what to do.
pub fn ensure_open_files(connections: u64) -> anyhow::Result<()> {
    let (soft, hard) = raise_open_files();
    let needed = connections + SPARE;
    if soft == 0 || needed <= soft {
        return Ok(());
    }
    anyhow::bail!(
        "{connections} connections need about {needed} open files, but this process may open {soft} \
         (hard limit {hard}); use fewer connections, or raise the hard limit (as root: `ulimit -Hn {needed}` \
         in the shell that starts rackbench, LimitNOFILE= for a systemd service, or nofile in \
         /etc/security/limits.conf)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_is_raised_and_the_impossible_refused_with_how() {
        let (soft, hard) = raise_open_files();
        assert_eq!(soft, hard);
        assert!(ensure_open_files(10).is_ok());
        if hard < u64::MAX / 2 {
            let e = ensure_open_files(hard).unwrap_err().to_string();
            assert!(
                e.contains("raise the hard limit") && e.contains(&hard.to_string()),
                "{e}"
            );
        }
    }
}
