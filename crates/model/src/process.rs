//! A process identified across pid reuse: its pid, its start time and the boot it runs in.
//! The store uses it to close runs whose process died; scratch space to clean up after
//! them.

/// A live process, as `/proc/PID/stat` and the kernel's boot id describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessId {
    pub pid: u32,
    /// Field 22 of /proc/PID/stat: start time in clock ticks after boot.
    pub starttime: u64,
    pub boot_id: String,
}

/// The fields of /proc/PID/stat a caller needs: state, process group, start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub state: char,
    pub pgrp: u32,
    pub starttime: u64,
}

/// Parse /proc/PID/stat. The command name (field 2) may hold spaces and parentheses:
/// fields after the last `)` start at field 3.
pub fn parse_stat(text: &str) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(Stat {
        state: fields.first()?.chars().next()?,
        pgrp: fields.get(5 - 3)?.parse().ok()?,
        starttime: fields.get(22 - 3)?.parse().ok()?,
    })
}

/// /proc/PID/stat of a process, None when there is no such process.
pub fn stat_of(pid: u32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// This boot of the kernel, if it can be read.
pub fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(id.trim().to_string()).filter(|s| !s.is_empty())
}

/// Where this process runs, as far as seeing other processes goes: the hostname and the
/// pid namespace (`altra-01/pid:[4026531836]`). Two processes of one place can look each
/// other up in /proc; of two places (a container, another machine sharing a store over
/// NFS) they cannot.
pub fn place() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let ns = std::fs::read_link("/proc/self/ns/pid")
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("{}/{ns}", host.trim())
}

impl ProcessId {
    pub fn current() -> Option<ProcessId> {
        Self::of(std::process::id())
    }

    /// The process `pid` if it exists and has not exited (a zombie writes nothing more).
    pub fn of(pid: u32) -> Option<ProcessId> {
        let stat = stat_of(pid)?;
        if stat.state == 'Z' {
            return None;
        }
        Some(ProcessId {
            pid,
            starttime: stat.starttime,
            boot_id: boot_id()?,
        })
    }

    /// Whether this very process (not another one given its pid since) still runs.
    pub fn is_alive(&self) -> bool {
        boot_id().as_deref() == Some(self.boot_id.as_str())
            && Self::of(self.pid).is_some_and(|p| p.starttime == self.starttime)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_with_parentheses_in_the_name() {
        let s = "42 (a) b (c)) S 1 40 40 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 10";
        assert_eq!(
            parse_stat(s),
            Some(Stat {
                state: 'S',
                pgrp: 40,
                starttime: 98765
            })
        );
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn this_process_is_alive_and_a_made_up_one_is_not() {
        let me = ProcessId::current().unwrap();
        assert!(me.is_alive());
        let other = ProcessId {
            starttime: me.starttime + 1,
            ..me.clone()
        };
        assert!(!other.is_alive());
    }
}
