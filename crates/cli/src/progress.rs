//! Progress on stderr while a run goes: the current test, live throughput, percent done
//! and ETA (a bar on a terminal; one line per finished test otherwise).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use engine::workload::Progress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use model::ResultRecord;

pub struct Display {
    verbose: bool,
    bar: ProgressBar,
    progress: Arc<Progress>,
    /// [`Progress::began`] of the test whose `done:` line was printed last: until the
    /// next test begins, the bar says it is done, not its last rate and ETA (M8).
    /// Held by the drawing thread from its check to its last update, and by `step_done`
    /// while it marks a test done: a look begun before the mark cannot then write the
    /// finished test's rate over it.
    finished: Arc<std::sync::Mutex<u64>>,
    stop: Arc<AtomicBool>,
    handle: std::sync::Mutex<Option<JoinHandle<()>>>,
}

impl Display {
    pub fn start(progress: Arc<Progress>, verbose: bool) -> Display {
        let bar = if verbose {
            ProgressBar::with_draw_target(Some(100), ProgressDrawTarget::stderr_with_hz(5))
        } else {
            ProgressBar::hidden()
        };
        bar.set_style(
            ProgressStyle::with_template("{prefix:.bold} [{bar:30}] {percent:>3}% {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        if !bar.is_hidden() {
            let bar = bar.clone();
            engine::set_stderr_lines(Some(Arc::new(move |write: &mut dyn FnMut()| {
                bar.suspend(&mut *write)
            })));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let finished = Arc::new(std::sync::Mutex::new(u64::MAX));
        let handle = verbose.then(|| {
            let (bar, stop, finished) = (bar.clone(), stop.clone(), finished.clone());
            let progress = progress.clone();
            std::thread::spawn(move || {
                // The last look: when, the count then, and which test it was.
                let mut last = (Instant::now(), 0u64, None::<u64>);
                let mut started = Instant::now();
                while !stop.load(Ordering::Relaxed) {
                    // Woken at once by `finish`: no pause at exit.
                    std::thread::park_timeout(Duration::from_millis(250));
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let test = progress.began.load(Ordering::Relaxed);
                    let done = progress.done.load(Ordering::Relaxed);
                    let now = Instant::now();
                    let finished = finished.lock().unwrap_or_else(PoisonError::into_inner);
                    if *finished == test {
                        last = (now, done, Some(test));
                        continue;
                    }
                    // A new test has no rate until its second look: counted from its
                    // first, not over no time (a count already made over 1 ms read as
                    // millions per second). Told apart by `began`, not by its label,
                    // which the test before may have had too. A count that went back (a
                    // test's next timed loop: crypto's next buffer size) has no rate either,
                    // not 0.
                    let new_test = last.2 != Some(test);
                    if new_test {
                        started = now;
                        let label = progress.label.lock().map(|l| l.clone()).unwrap_or_default();
                        // A label holds parameter values (http paths, ...): no terminal escapes.
                        bar.set_prefix(model::printable(&label));
                    }
                    let rate = if new_test || done < last.1 {
                        None
                    } else {
                        Some(
                            done.saturating_sub(last.1) as f64
                                / now.duration_since(last.0).as_secs_f64().max(1e-3),
                        )
                    };
                    last = (now, done, Some(test));
                    let total = progress.total.load(Ordering::Relaxed);
                    let dur_ms = progress.duration_ms.load(Ordering::Relaxed);
                    let elapsed = now.duration_since(started).as_secs_f64();
                    let frac = if total > 0 {
                        done as f64 / total as f64
                    } else if dur_ms > 0 {
                        elapsed * 1000.0 / dur_ms as f64
                    } else {
                        0.0
                    };
                    let frac = frac.clamp(0.0, 1.0);
                    bar.set_position((frac * 100.0) as u64);
                    let eta = if frac > 0.01 {
                        elapsed / frac - elapsed
                    } else {
                        f64::NAN
                    };
                    let warm = if progress.warmup.load(Ordering::Relaxed) {
                        " warm-up"
                    } else {
                        ""
                    };
                    bar.set_message(format!(
                        "{}/s{warm}  ETA {}",
                        rate.map_or_else(|| "-".to_string(), human),
                        if eta.is_finite() {
                            format!("{eta:.0}s")
                        } else {
                            "?".into()
                        }
                    ));
                }
            })
        });
        Display {
            verbose,
            bar,
            progress,
            finished,
            stop,
            handle: std::sync::Mutex::new(handle),
        }
    }

    /// One line per finished test, above the bar.
    pub fn step_done(&self, r: &ResultRecord) {
        if !self.verbose {
            return;
        }
        let head = r
            .metric(&r.headline, &[])
            .map(|m| format!("{} {}", human(m.value), crate::commands::runs::unit_of(m)))
            .unwrap_or_else(|| "no result".into());
        // A flag raised on several hosts once, with its count, as the table says it.
        let flags = model::counted(r.flags.iter().map(|f| f.code.as_str()));
        let line = format!(
            "  done: {} {} #{}: {head}{}",
            r.workload,
            r.test,
            r.step,
            if flags.is_empty() {
                String::new()
            } else {
                format!("  [{}]", flags.join(", "))
            }
        );
        let line = model::printable(&line);
        {
            let mut finished = self.finished.lock().unwrap_or_else(PoisonError::into_inner);
            *finished = self.progress.began.load(Ordering::Relaxed);
            // The bar under the line says so until the next test begins (the drawing
            // thread leaves it alone till then), not the finished test's last rate and ETA.
            self.bar.set_position(100);
            self.bar.set_message(BETWEEN_TESTS);
        }
        // Above the bar: the stderr hook this display set writes it inside the bar's suspend.
        engine::errln!("{line}");
    }

    /// Stop drawing (the drawing thread is woken and joined first, so nothing is drawn
    /// after the bar is cleared and the results are printed).
    pub fn finish(&self) {
        self.stop.store(true, Ordering::Relaxed);
        let h = self.handle.lock().ok().and_then(|mut h| h.take());
        if let Some(h) = h {
            h.thread().unpark();
            let _ = h.join();
        }
        engine::set_stderr_lines(None);
        self.bar.finish_and_clear();
    }
}

/// What the bar says between a test's `done:` line and the next test's start (a server's
/// launch, a build).
const BETWEEN_TESTS: &str = "done; setting up the next test";

impl Drop for Display {
    fn drop(&mut self) {
        self.finish();
    }
}

/// 1234567 -> "1.23M".
pub fn human(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.2}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else if a >= 1.0 || v == 0.0 {
        format!("{v:.1}")
    } else {
        // Below 1 (a 60-byte UDP stream's 0.048 Gbit/s): three significant digits, not 0.0.
        format!("{v:.*}", (2 - a.log10().floor() as i32).max(1) as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::human;

    /// A figure below 1 keeps its digits (a 60-byte UDP stream's live Gbit/s read 0.0).
    #[test]
    fn small_figures_keep_three_significant_digits() {
        assert_eq!(human(0.0482), "0.0482");
        assert_eq!(human(0.5), "0.500");
        assert_eq!(human(0.0), "0.0");
        assert_eq!(human(12.34), "12.3");
        assert_eq!(human(1_234_567.0), "1.23M");
    }
}
