//! The end of a test's warm-up (`--warmup`, iperf3 -O), as each worker thread sees it.
//!
//! Each end's control thread raises one flag when its warm-up ends (at once when there is
//! none), as iperf3's omit timer resets its counters. A worker looks at the flag once per
//! pass of its loop (a relaxed load: nothing on the hot path) and, the first time it is
//! up, notes where it stood: its counters, its thread's CPU and the time. What the worker
//! reports is then from that mark to its end, and what it counted before is kept apart.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Instant, SystemTime};

use crate::proto::CpuUsage;
use crate::server::thread_cpu;

/// Where one worker stood at the mark.
#[derive(Debug, Clone)]
pub struct Mark<T> {
    /// Its counters (what the warm-up counted).
    pub counted: T,
    pub cpu: CpuUsage,
    pub at: Instant,
    pub wall: SystemTime,
}

impl<T> Mark<T> {
    fn now(counted: T) -> Mark<T> {
        Mark {
            counted,
            cpu: thread_cpu(),
            at: Instant::now(),
            wall: SystemTime::now(),
        }
    }

    /// The thread's CPU from the mark to now.
    pub fn cpu_since(&self) -> CpuUsage {
        thread_cpu().since(&self.cpu)
    }
}

/// One worker's watch on its end's flag.
pub struct Marker<'a, T> {
    flag: &'a AtomicBool,
    mark: Option<Mark<T>>,
    /// Where the counts at the mark are also left, for the end's control thread to read
    /// while the worker runs on (a sender's checkpoints).
    publish: Option<&'a dyn Fn(&T)>,
}

impl<'a, T: Clone> Marker<'a, T> {
    pub fn new(flag: &'a AtomicBool) -> Self {
        Marker {
            flag,
            mark: None,
            publish: None,
        }
    }

    /// A marker that also hands its counts at the mark to `publish`, once, as it marks
    /// (to leave them where the end's control thread reads them): nothing more on the
    /// worker's hot path.
    pub fn publishing(flag: &'a AtomicBool, publish: &'a dyn Fn(&T)) -> Self {
        Marker {
            publish: Some(publish),
            ..Marker::new(flag)
        }
    }

    /// Once per pass: the first time the flag is up, note `counted()` with the CPU and time.
    #[inline]
    pub fn check(&mut self, counted: impl FnOnce() -> T) {
        if self.mark.is_none() && self.flag.load(Ordering::Relaxed) {
            self.mark_now(counted());
        }
    }

    #[cold]
    fn mark_now(&mut self, counted: T) {
        if let Some(publish) = self.publish {
            publish(&counted);
        }
        self.mark = Some(Mark::now(counted));
    }

    /// Whether the worker has passed its mark.
    #[inline]
    pub fn marked(&self) -> bool {
        self.mark.is_some()
    }

    /// The mark, taken now from `counted()` if the worker ended before it (the test
    /// stopped during its warm-up: everything it counted was warm-up).
    pub fn finish(self, counted: impl FnOnce() -> T) -> Mark<T> {
        self.mark.unwrap_or_else(|| Mark::now(counted()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_marks_the_first_time_it_sees_the_flag_and_never_again() {
        let flag = AtomicBool::new(false);
        let mut m = Marker::new(&flag);
        m.check(|| 1);
        assert!(m.mark.is_none(), "no mark before the flag");
        flag.store(true, Ordering::Relaxed);
        m.check(|| 2);
        m.check(|| 3);
        assert_eq!(m.finish(|| 4).counted, 2);
        // Never raised: the end is the mark, everything was warm-up.
        let down = AtomicBool::new(false);
        assert_eq!(Marker::new(&down).finish(|| 5).counted, 5);
    }
}
