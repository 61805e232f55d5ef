//! Turning a `LoadOutcome` into what gets stored: metrics with units, the exact
//! histograms, and the validity checks every request/response result gets (errors,
//! zero throughput, offered vs achieved rate, a saturated load generator, latency that
//! breaks Little's law). Shared by every workload that runs the load loop.

use std::borrow::Cow;

use hdrhistogram::Histogram;
use model::hist::new_latency_histogram;
use model::{Flag, HistogramRecord, Metric, MissingMetric};

use crate::load::{LoadOutcome, LoadShape, LoadSpec};
use crate::workload::StepOutput;

/// Fraction of its threads' CPU time above which the load generator counts as saturated.
pub const CLIENT_BOUND_FRACTION: f64 = 0.90;

/// Why `loadgen_busy_pct` is missing when a generator measured no time (the whole run's
/// and each generator's, `spread::add_figures`).
pub(crate) const NO_MEASURED_TIME: &str = "no measured time: no reply came after warm-up";

/// Share of an open loop's requests sent late (more than 1 ms after their intended time)
/// above which the generator is said to be behind its schedule.
pub const LATE_FRACTION: f64 = 0.01;

/// The share of a test's requests that may fail (error replies, requests lost) before
/// its result is invalid (below it, the errors are a warning): the capacity tests'
/// default error limit, 1%, as httperf's and autobench's.
pub const ERROR_FRACTION: f64 = 0.01;

fn latency_metrics(prefix: &str, h: &Histogram<u64>, labels: &[(&str, &str)]) -> Vec<Metric> {
    let mut out = Vec::new();
    if h.is_empty() {
        return out;
    }
    let vals = [
        ("mean", h.mean()),
        ("min", h.min() as f64),
        ("p50", h.value_at_quantile(0.50) as f64),
        ("p90", h.value_at_quantile(0.90) as f64),
        ("p99", h.value_at_quantile(0.99) as f64),
        ("p999", h.value_at_quantile(0.999) as f64),
        ("max", h.max() as f64),
        ("stdev", h.stdev()),
    ];
    for (name, v) in vals {
        let mut m = Metric::new(format!("{prefix}_{name}_ns"), v, "ns");
        for (k, l) in labels {
            m = m.label(*k, *l);
        }
        out.push(m);
    }
    out
}

/// How a workload's flags keep connections or open new ones, for the words of
/// [`connect_not_timed`]: each workload names the knob as its user gives it.
pub struct ReconnectKnob {
    /// The knob as set to keep every connection for the whole test
    /// (`--requests-per-connection 0`, `-k 1`).
    pub kept_alive: &'static str,
    /// The knob as set to open a new connection every N requests, before the N
    /// (`--requests-per-connection`, `-k 0 -P`).
    pub every_n: &'static str,
    /// What to give to have each connect timed (`--requests-per-connection N opens one
    /// every N requests`).
    pub to_time: &'static str,
}

/// Why a test timed no connect (httperf's connection time, `connect_time_*`), when it
/// timed none: kept alive, its connections were opened before it, a handful that are no
/// distribution; with a new connection every N requests, none was opened after the
/// warm-up. None when a connect was timed ([`step_output`] stores them).
pub fn connect_not_timed(
    spec: &LoadSpec,
    out: &LoadOutcome,
    knob: &ReconnectKnob,
) -> Option<MissingMetric> {
    if out.connect.as_ref().is_some_and(|h| !h.is_empty()) {
        return None;
    }
    let reason = match spec.requests_per_connection {
        None => format!(
            "connections were kept alive for the whole test ({}): its {} were opened \
             before it and none during it; {}",
            knob.kept_alive, spec.connections, knob.to_time
        ),
        Some(n) => format!(
            "no connection was opened after the warm-up ({} {n})",
            knob.every_n
        ),
    };
    Some(MissingMetric {
        name: "connect_time_mean_ns".into(),
        reason,
    })
}

/// The errors' kinds, most first, for the `errors` flag (`; by kind: http_404 8753, no
/// reply (connection reset) 2`): a share of failures is no finding without what failed,
/// and the server's log is gone with the server rackbench launched. The first few; each
/// kind's count is stored too (http's `responses` by status). `kinds`: the classes'
/// errors, gathered as their metrics are written.
fn error_kinds(mut kinds: std::collections::BTreeMap<String, u64>, out: &LoadOutcome) -> String {
    for (why, n) in &out.lost_requests {
        *kinds.entry(format!("no reply ({why})")).or_default() += n;
    }
    let mut kinds: Vec<(String, u64)> = kinds.into_iter().filter(|(_, n)| *n > 0).collect();
    kinds.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    const SHOWN: usize = 4;
    let mut said: Vec<String> = kinds
        .iter()
        .take(SHOWN)
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    if kinds.len() > SHOWN {
        said.push(format!("{} more kinds", kinds.len() - SHOWN));
    }
    if said.is_empty() {
        String::new()
    } else {
        format!("; by kind: {}", said.join(", "))
    }
}

/// Whether connections were reopened for at least 1% of the requests: a client asked to
/// (`requests_per_connection`), or a server closing them. One reconnect in a million
/// requests, a server's hiccup, is no such case.
fn closing(out: &LoadOutcome) -> bool {
    out.reconnects > 0 && out.reconnects.saturating_mul(100) >= out.total_count()
}

/// Build the stored output of one load-loop test. `headline` names the throughput metric
/// (`ops_per_s`, `requests_per_s`, `tpm`...), `unit` its unit.
pub fn step_output(spec: &LoadSpec, out: &LoadOutcome, headline: &str, unit: &str) -> StepOutput {
    let open = spec.shape != LoadShape::Closed;
    let mut metrics = Vec::new();
    let mut missing = Vec::new();
    let mut histograms = Vec::new();
    let mut flags = Vec::new();
    let total = out.total_count();
    let tput = out.throughput();

    // Stopped before its measurement began (Ctrl-C in the warm-up): nothing was
    // measured, so its throughput is missing, not 0 with "no request completed" (what
    // completed in the warm-up is not the test's).
    let warmup_stop = out.warmup_stop(spec.warmup);
    match warmup_stop {
        Some(why) => missing.push(MissingMetric {
            name: headline.into(),
            reason: format!(
                "the test stopped before its measurement began, in its warm-up ({why}): \
                 nothing was measured"
            ),
        }),
        None => metrics.push(Metric::new(headline, tput, unit)),
    }
    metrics.push(Metric::new("requests", total as f64, "requests"));
    metrics.push(Metric::new("measured_duration_s", out.duration_s, "s"));

    // All classes merged, then each class. One class is its own merge (a latency
    // histogram is 270 KB to zero and add; a run makes several per test).
    let classes_used: Vec<_> = out.classes.iter().filter(|c| c.count > 0).collect();
    let merged = |pick: fn(&crate::load::ClassStats) -> Option<&Histogram<u64>>| match classes_used
        .as_slice()
    {
        [one] => pick(one).map_or_else(|| Cow::Owned(new_latency_histogram()), Cow::Borrowed),
        many => {
            let mut all = new_latency_histogram();
            for h in many.iter().filter_map(|c| pick(c)) {
                let _ = all.add(h);
            }
            Cow::Owned(all)
        }
    };
    let all_service = merged(|c| Some(&c.service));
    // The headline latency is the honest one: from the intended send time in open loop.
    let all_corrected = open.then(|| merged(|c| c.corrected.as_ref()));
    let (main, main_kind) = match &all_corrected {
        Some(h) => (h.as_ref(), "corrected"),
        None => (all_service.as_ref(), "service"),
    };
    metrics.extend(latency_metrics("latency", main, &[]));
    if open {
        metrics.extend(latency_metrics("service_latency", &all_service, &[]));
    }
    if classes_used.len() > 1 {
        histograms.push(HistogramRecord::from_histogram("all", main_kind, main));
        if open {
            histograms.push(HistogramRecord::from_histogram(
                "all",
                "service",
                &all_service,
            ));
        }
    }
    let mut errors_total = 0u64;
    let mut error_kinds_seen = std::collections::BTreeMap::<String, u64>::new();
    for c in &classes_used {
        let op = c.name.as_str();
        let per_class = if open {
            c.corrected.as_ref().unwrap_or(&c.service)
        } else {
            &c.service
        };
        metrics.push(
            Metric::new(headline, c.count as f64 / out.duration_s.max(1e-9), unit).label("op", op),
        );
        metrics.push(Metric::new("requests", c.count as f64, "requests").label("op", op));
        if classes_used.len() > 1 {
            metrics.extend(latency_metrics("latency", per_class, &[("op", op)]));
        }
        histograms.push(HistogramRecord::from_histogram(op, main_kind, per_class));
        if open {
            histograms.push(HistogramRecord::from_histogram(op, "service", &c.service));
        }
        if c.hits + c.misses > 0 {
            let ratio = 100.0 * c.hits as f64 / (c.hits + c.misses) as f64;
            metrics.push(Metric::new("hit_ratio_pct", ratio, "%").label("op", op));
        }
        if c.mismatches > 0 {
            metrics.push(Metric::new("mismatches", c.mismatches as f64, "replies").label("op", op));
            flags.push(Flag::invalid(
                "value_mismatch",
                // The workload adds what to do (kv: its flags).
                format!(
                    "{} {op} replies did not hold the value this tool writes for their key",
                    c.mismatches
                ),
            ));
        }
        if c.rollbacks > 0 {
            metrics
                .push(Metric::new("rollbacks", c.rollbacks as f64, "transactions").label("op", op));
        }
        for (kind, n) in &c.errors {
            metrics.push(
                Metric::new("errors", *n as f64, "replies")
                    .label("op", op)
                    .label("kind", kind),
            );
            *error_kinds_seen.entry(kind.clone()).or_default() += n;
        }
        errors_total += c.error_count();
    }
    // A request lost with its connection is one error (httperf's count); the failure
    // that lost it is not another, and has its own metric.
    let lost = out.lost_count();
    let conn_failures = out.connection_error_count();
    metrics.push(Metric::new(
        "errors_total",
        (errors_total + lost) as f64,
        "errors",
    ));
    for (kind, n) in &out.lost_requests {
        metrics.push(Metric::new("lost_requests", *n as f64, "requests").label("kind", kind));
    }
    for (kind, n) in &out.connection_errors {
        metrics.push(Metric::new("connection_errors", *n as f64, "errors").label("kind", kind));
    }
    if out.reconnects > 0 {
        metrics.push(Metric::new(
            "reconnects",
            out.reconnects as f64,
            "connections",
        ));
    }
    // Keep-alive asked for (no new connection every N requests), and connections opened
    // again often (a server closing them, or errors): the figures hold a connect per few
    // requests, which the settings stored (`requests_per_connection` unset) do not say.
    // (One in a thousand, nginx's default keepalive_requests, is no such case.)
    if total > 0 && spec.requests_per_connection.is_none() && closing(out) {
        flags.push(Flag::warning(
            "server_closed_connections",
            format!(
                "connections were opened again {} times in {} requests though keep-alive was \
                 asked for (the server closing them, or the client reconnecting after \
                 errors): the figures include a connect every {:.0} requests, timed apart as \
                 connect_time",
                out.reconnects,
                total,
                total as f64 / out.reconnects as f64
            ),
        ));
    }
    // The connects made during the test (a new connection per N requests, or after the
    // server closed one), timed as httperf's connection time: beside the requests'
    // latency, never in it.
    if let Some(h) = out.connect.as_ref().filter(|h| !h.is_empty()) {
        metrics.push(Metric::new("connects_timed", h.len() as f64, "connections"));
        metrics.extend(latency_metrics("connect_time", h, &[]));
        histograms.push(HistogramRecord::from_histogram(
            model::hist::CONNECT_KIND,
            model::hist::CONNECT_KIND,
            h,
        ));
    }
    metrics.push(Metric::new("bytes_tx", out.bytes_tx as f64, "bytes"));
    metrics.push(Metric::new("bytes_rx", out.bytes_rx as f64, "bytes"));
    if !out.interval_rates.is_empty() {
        let n = out.interval_rates.len() as f64;
        let mean = out.interval_rates.iter().sum::<f64>() / n;
        let min = out
            .interval_rates
            .iter()
            .cloned()
            .fold(f64::INFINITY, f64::min);
        let max = out.interval_rates.iter().cloned().fold(0.0, f64::max);
        metrics.push(Metric::new("interval_rate_min_per_s", min, unit));
        metrics.push(Metric::new("interval_rate_mean_per_s", mean, unit));
        metrics.push(Metric::new("interval_rate_max_per_s", max, unit));
        // What the spread is over: 1 s (wrk's per-second view), or a fifth of a shorter test.
        metrics.push(Metric::new(
            "interval_length_s",
            spec.interval.as_secs_f64(),
            "s",
        ));
    } else {
        missing.push(MissingMetric {
            name: "interval_rate_min_per_s".into(),
            reason: format!(
                "the test was shorter than one interval ({} s)",
                spec.interval.as_secs_f64()
            ),
        });
    }

    // Load-generator cost.
    let cpu_s = out.loadgen_cpu_user_s + out.loadgen_cpu_sys_s;
    metrics.push(Metric::new("loadgen_cpu_s", cpu_s, "s"));
    metrics.push(Metric::new("loadgen_cpu_sys_s", out.loadgen_cpu_sys_s, "s"));
    if total > 0 {
        metrics.push(Metric::new(
            "loadgen_cpu_us_per_op",
            cpu_s * 1e6 / total as f64,
            "us/op",
        ));
    }
    let threads = spec.threads.clamp(1, spec.connections.max(1));
    let busy = if out.duration_s > 0.0 {
        let busy = cpu_s / (out.duration_s * threads as f64);
        metrics.push(Metric::new("loadgen_busy_pct", busy * 100.0, "%"));
        busy
    } else {
        missing.push(MissingMetric {
            name: "loadgen_busy_pct".into(),
            reason: match warmup_stop {
                Some(_) => crate::spread::STOPPED_IN_WARMUP.into(),
                None => NO_MEASURED_TIME.into(),
            },
        });
        0.0
    };

    // Validity.
    if total == 0 && warmup_stop.is_none() {
        flags.push(Flag::invalid("zero_throughput", "no request completed"));
    }
    // Open loop: requests sent late, and those never sent (due while every connection
    // waited), of all that fell due.
    let behind = out.late_sends + out.unsent_requests;
    let late_fraction = if total + out.unsent_requests > 0 {
        behind as f64 / (total + out.unsent_requests) as f64
    } else {
        0.0
    };
    if out.offered_rate.is_some() {
        // An open loop is judged by its schedule, not its CPU: it spins between sends
        // by design (a whole core at any rate), so its CPU says nothing about whether
        // it kept up. Sends later than 1 ms past their intended time say it did not.
        if late_fraction > LATE_FRACTION {
            let unsent = match out.unsent_requests {
                0 => String::new(),
                n => format!(
                    " ({n} of them were never sent: they have no latency, so the percentiles \
                     leave out what would have been the slowest requests and read low)"
                ),
            };
            flags.push(Flag::warning(
                "behind_schedule",
                format!(
                    "{:.1}% of requests were sent more than 1 ms after their intended time or not at all{unsent}: \
                     the generator (or the connections, all busy with a slow server) could not keep the \
                     offered rate; add --threads or -c, or lower --rate",
                    late_fraction * 100.0
                ),
            ));
        }
    } else if busy >= CLIENT_BOUND_FRACTION {
        flags.push(Flag::warning(
            "client_bound",
            format!(
                "the load generator used {:.0}% of its {threads} thread(s): the figure may be the client's limit, \
                 not the server's (add --threads, or run the client on more cores)",
                busy * 100.0
            ),
        ));
    }
    let all_errors = errors_total + lost;
    if all_errors > 0 || conn_failures > 0 {
        // Of the requests made: those answered and those lost.
        let mut why = format!(
            "{all_errors} errors ({:.3}% of requests{})",
            100.0 * all_errors as f64 / (total + lost).max(1) as f64,
            error_kinds(error_kinds_seen, out)
        );
        if conn_failures > 0 {
            // Events, not connections: a connection that broke and then failed to
            // reconnect is two (20 connections to a killed server read as 40).
            why.push_str(&format!(
                "; {conn_failures} connection failure(s) over {} connection(s): a break and \
                 each failed reconnect count once each",
                spec.connections
            ));
        }
        // Beyond 1% of the requests, the rate counts failures, not work a server did: a
        // mistyped path benchmarked 404 pages, every one of them, as a valid 62,410 req/s
        // (acceptance pass J, 4). A few errors under load are a finding, said.
        let share = all_errors as f64 / (total + lost).max(1) as f64;
        if share > ERROR_FRACTION {
            why.push_str(
                ": more than 1% of the requests failed, so the rate counts failures (a wrong \
                 path, a refused command, a server shedding load), not work the server did; \
                 their kinds say which",
            );
            flags.push(Flag::invalid("errors", why));
        } else {
            flags.push(Flag::warning("errors", why));
        }
    }
    if let Some(offered) = out.offered_rate {
        metrics.push(Metric::new("offered_rate_per_s", offered, "ops/s"));
        metrics.push(Metric::new("achieved_rate_per_s", tput, "ops/s"));
        metrics.push(Metric::new("late_sends", out.late_sends as f64, "requests"));
        metrics.push(Metric::new(
            "unsent_requests",
            out.unsent_requests as f64,
            "requests",
        ));
        if tput < 0.95 * offered {
            // Nothing due at all is no schedule kept (zero_throughput says so).
            let why = if total > 0 && late_fraction <= LATE_FRACTION {
                // Counted to the last reply, a test short beside its latency reads low
                // though the server kept up (1000/s for 1 s at 100 ms read 909/s).
                format!(
                    "every request went out on time, and the rate is over the {:.3} s to the \
                     last reply: the replies that came after the schedule ended, or a server \
                     answering ever later (its latency growing); a longer --duration tells \
                     them apart",
                    out.duration_s
                )
            } else {
                "the server (or client) is saturated".to_string()
            };
            flags.push(Flag::warning(
                "rate_not_achieved",
                format!("achieved {tput:.0}/s of the {offered:.0}/s offered: {why}"),
            ));
        }
    } else if total > 0 && !main.is_empty() {
        // Little's law: in closed loop, mean latency ~= requests in flight / throughput.
        // A connection never has more in flight than its pipeline, nor than the requests
        // it may send before it is reopened.
        let per_conn = match spec.requests_per_connection {
            Some(k) => spec.pipeline.min(usize::try_from(k).unwrap_or(usize::MAX)),
            None => spec.pipeline,
        };
        let in_flight = (spec.connections * per_conn.max(1)) as f64;
        let expected_ns = in_flight / tput * 1e9;
        let mean = main.mean();
        metrics.push(Metric::new("littles_law_latency_ns", expected_ns, "ns"));
        let off = (mean - expected_ns) / expected_ns;
        let what = if spec.requests_per_connection.is_some() {
            "connections x requests in flight per connection"
        } else {
            "connections x pipeline"
        };
        // Reconnecting, a connection has nothing in flight while it closes and connects
        // again (latency counts from the send, after the connect): the mean may fall
        // well below the law's figure, but never above it. So too where the server
        // closed connections (`Connection: close`, an HTTP/1.0 server): its figures are
        // right, and were flagged inconsistent.
        let inconsistent = if spec.requests_per_connection.is_some() || closing(out) {
            off > 0.25
        } else {
            off.abs() > 0.25
        };
        if inconsistent {
            flags.push(Flag::warning(
                "latency_inconsistent",
                format!(
                    "mean latency {:.3} ms differs from {what} / throughput = {:.3} ms by more than 25%",
                    mean / 1e6,
                    expected_ns / 1e6
                ),
            ));
        }
    }
    if let Some(why) = &out.client_io_fallback {
        // Not a fault of the figure: the generator's own cost is the epoll path's.
        flags.push(Flag::warning(
            "client_io_epoll",
            format!(
                "the load generator ran on epoll, not io_uring: {why}; its CPU per request is \
                 about 5% above io_uring's (client_io=epoll says so without this note)"
            ),
        ));
    }
    if let Some(why) = &out.stopped_early {
        flags.push(Flag::warning(
            "stopped_early",
            format!("the test stopped early: {why}"),
        ));
    }
    StepOutput {
        headline: headline.to_string(),
        duration_s: out.duration_s,
        metrics,
        missing,
        histograms,
        flags,
        error: out.stopped_early.clone().filter(|w| w != "interrupted"),
        loadgen_threads: Some(threads),
        // The workload knows its window (its generators' starts and warm-up).
        measured: Vec::new(),
        settings: wait_setting(spec),
    }
}

/// An open loop's way of waiting between sends, as `--wait auto` resolved it for this
/// test (its wake-up is in every latency when it sleeps); nothing for a closed loop.
fn wait_setting(spec: &LoadSpec) -> crate::workload::Params {
    let mut s = crate::workload::Params::new();
    if spec.shape != LoadShape::Closed {
        let wait = crate::load::wait_mode(spec.sleep_when_idle);
        s.insert("wait".into(), serde_json::Value::String(wait.into()));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::{ClassStats, StopAfter};
    use model::Severity;
    use std::collections::BTreeMap;
    use std::time::Duration;

    fn open_loop(late_sends: u64, cpu_s: f64) -> (LoadSpec, LoadOutcome) {
        let spec = LoadSpec {
            shape: LoadShape::Constant { rate: 10_000.0 },
            stop: StopAfter::Duration(Duration::from_secs(1)),
            connections: 4,
            ..LoadSpec::default()
        };
        let mut c = ClassStats::new("get", true);
        for _ in 0..10_000 {
            c.service.record(50_000).unwrap();
            c.corrected.as_mut().unwrap().record(60_000).unwrap();
        }
        c.count = 10_000;
        c.ok = 10_000;
        let out = LoadOutcome {
            classes: vec![c],
            duration_s: 1.0,
            interval_rates: vec![10_000.0],
            offered_rate: Some(10_000.0),
            late_sends,
            generator_late_sends: 0,
            unsent_requests: 0,
            connection_errors: BTreeMap::new(),
            lost_requests: BTreeMap::new(),
            reconnects: 0,
            connect: None,
            bytes_tx: 0,
            bytes_rx: 0,
            loadgen_cpu_user_s: cpu_s,
            loadgen_cpu_sys_s: 0.0,
            stopped_early: None,
            client_io_fallback: None,
        };
        (spec, out)
    }

    /// A closed loop of 4 connections that made 10,000 requests in 1 s, each taking
    /// `latency_ns`.
    fn closed_loop(latency_ns: u64, pipeline: usize, per_conn: Option<u64>) -> StepOutput {
        closed_loop_reconnecting(latency_ns, pipeline, per_conn, 0)
    }

    fn closed_loop_reconnecting(
        latency_ns: u64,
        pipeline: usize,
        per_conn: Option<u64>,
        reconnects: u64,
    ) -> StepOutput {
        let spec = LoadSpec {
            connections: 4,
            pipeline,
            requests_per_connection: per_conn,
            ..LoadSpec::default()
        };
        let (_, mut out) = open_loop(0, 0.2);
        out.offered_rate = None;
        out.reconnects = reconnects;
        let c = &mut out.classes[0];
        c.corrected = None;
        c.service.reset();
        c.service.record_n(latency_ns, 10_000).unwrap();
        step_output(&spec, &out, "ops_per_s", "ops/s")
    }

    /// The errors flag says what failed, most first (acceptance, s31: 8,753 errors of
    /// a mistyped path said to look at the replies' codes, shown nowhere, and at the log
    /// of an nginx gone with its directory).
    #[test]
    fn the_errors_flag_names_the_kinds_that_failed() {
        let (spec, mut out) = open_loop(0, 0.2);
        out.offered_rate = None;
        out.classes[0].errors =
            BTreeMap::from([("http_404".to_string(), 8_000), ("http_500".to_string(), 3)]);
        out.lost_requests = BTreeMap::from([("connection reset".to_string(), 2)]);
        let s = step_output(&spec, &out, "requests_per_s", "req/s");
        let f = s.flags.iter().find(|f| f.code == "errors").unwrap();
        assert!(
            f.message
                .contains("; by kind: http_404 8000, http_500 3, no reply (connection reset) 2)"),
            "{}",
            f.message
        );
    }

    /// A test stopped in its warm-up measured nothing: its throughput is missing with
    /// why, not 0 req/s with "no request completed" (acceptance, s31: Ctrl-C 1 s into a
    /// 2 s warm-up stored `interrupted (partial: 0 req/s)`). One that ran and completed
    /// nothing is still 0, flagged.
    #[test]
    fn a_test_stopped_in_its_warm_up_has_no_throughput_not_zero() {
        let (mut spec, mut out) = open_loop(0, 0.0);
        spec.warmup = Duration::from_secs(2);
        out.classes.clear();
        out.duration_s = 0.0;
        out.interval_rates.clear();
        out.stopped_early = Some("interrupted".into());
        let s = step_output(&spec, &out, "requests_per_s", "req/s");
        assert!(s.metrics.iter().all(|m| m.name != "requests_per_s"));
        let why = s
            .missing
            .iter()
            .find(|m| m.name == "requests_per_s")
            .unwrap();
        assert!(why.reason.contains("in its warm-up"), "{}", why.reason);
        assert!(s.flags.iter().all(|f| f.code != "zero_throughput"));
        // Nor "no reply came after warm-up" for its busy share: the warm-up never ended.
        let busy = s.missing.iter().find(|m| m.name == "loadgen_busy_pct");
        assert_eq!(
            busy.map(|m| m.reason.as_str()),
            Some(crate::spread::STOPPED_IN_WARMUP)
        );

        // Ran and completed nothing; or stopped with no warm-up to have stopped in (every
        // session failed at once): 0, flagged, never said to be a warm-up's stop.
        for (warmup, stopped) in [(2, None), (0, Some("could not pin session 0"))] {
            spec.warmup = Duration::from_secs(warmup);
            out.stopped_early = stopped.map(String::from);
            let s = step_output(&spec, &out, "requests_per_s", "req/s");
            let m = s
                .metrics
                .iter()
                .find(|m| m.name == "requests_per_s")
                .unwrap();
            assert_eq!(m.value, 0.0);
            assert!(s.flags.iter().any(|f| f.code == "zero_throughput"));
        }
    }

    /// The rates of the intervals are in the headline's unit: an http test's are req/s
    /// (acceptance L, 4: they were ops/s whatever the workload).
    #[test]
    fn interval_rates_are_in_the_headlines_unit() {
        let (spec, mut out) = open_loop(0, 0.2);
        out.interval_rates = vec![9_000.0, 11_000.0];
        let s = step_output(&spec, &out, "requests_per_s", "req/s");
        let units: Vec<(&str, f64, &str)> = s
            .metrics
            .iter()
            .filter(|m| m.name.starts_with("interval_rate_"))
            .map(|m| (m.name.as_str(), m.value, m.unit.as_str()))
            .collect();
        assert_eq!(
            units,
            [
                ("interval_rate_min_per_s", 9_000.0, "req/s"),
                ("interval_rate_mean_per_s", 10_000.0, "req/s"),
                ("interval_rate_max_per_s", 11_000.0, "req/s"),
            ]
        );
        // Acceptance M, 6: the length they are rates over is kept with them.
        let length = s.metrics.iter().find(|m| m.name == "interval_length_s");
        assert_eq!(
            length.map(|m| (m.value, m.unit.as_str())),
            Some((spec.interval.as_secs_f64(), "s"))
        );
    }

    /// Errors beyond 1% of the requests make a result invalid (its rate counts failures:
    /// a mistyped path benchmarked 404s as a valid rate, acceptance pass J, 4); up to
    /// 1%, a warning.
    #[test]
    fn errors_beyond_one_percent_make_a_result_invalid() {
        for (errors, severity) in [(100, Severity::Warning), (101, Severity::Invalid)] {
            let (spec, mut out) = open_loop(0, 0.2);
            out.classes[0].errors.insert("404".into(), errors);
            out.classes[0].ok -= errors;
            let step = step_output(&spec, &out, "ops_per_s", "ops/s");
            let f = step.flags.iter().find(|f| f.code == "errors").unwrap();
            assert_eq!(f.severity, severity, "{errors}: {}", f.message);
            assert_eq!(
                f.message.contains("so the rate counts failures"),
                severity == Severity::Invalid,
                "{}",
                f.message
            );
        }
    }

    /// Connection failures are events, said over the connections: 4 connections to a
    /// killed server, each broken and then refused on reconnecting, are 8 failures.
    #[test]
    fn connection_failures_are_said_over_the_connections() {
        let (spec, mut out) = open_loop(0, 0.2);
        out.connection_errors
            .insert("read: connection reset by peer".into(), 4);
        out.connection_errors
            .insert("reconnect to 127.0.0.1:1: connection refused".into(), 4);
        let step = step_output(&spec, &out, "ops_per_s", "ops/s");
        let f = step.flags.iter().find(|f| f.code == "errors").unwrap();
        assert!(
            f.message.ends_with(
                "; 8 connection failure(s) over 4 connection(s): a break and each failed \
                 reconnect count once each"
            ),
            "{}",
            f.message
        );
    }

    fn littles_law_ns(s: &StepOutput) -> f64 {
        s.metrics
            .iter()
            .find(|m| m.name == "littles_law_latency_ns")
            .map(|m| m.value)
            .unwrap()
    }

    /// No connect timed: why, in the workload's own flags (kv's `-k`, http's
    /// `--requests-per-connection`), kept alive or reconnecting; a connect timed: nothing.
    #[test]
    fn why_no_connect_was_timed_names_the_workloads_knob() {
        let kv = ReconnectKnob {
            kept_alive: "-k 1",
            every_n: "-k 0 -P",
            to_time: "-k 0 opens one after every -P requests",
        };
        let (mut spec, mut out) = open_loop(0, 0.2);
        let why = connect_not_timed(&spec, &out, &kv).unwrap();
        assert_eq!(why.name, "connect_time_mean_ns");
        assert_eq!(
            why.reason,
            "connections were kept alive for the whole test (-k 1): its 4 were opened \
             before it and none during it; -k 0 opens one after every -P requests"
        );
        spec.requests_per_connection = Some(16);
        // An empty histogram timed nothing either (step_output stores no figure of it).
        out.connect = Some(new_latency_histogram());
        let why = connect_not_timed(&spec, &out, &kv).unwrap();
        assert_eq!(
            why.reason,
            "no connection was opened after the warm-up (-k 0 -P 16)"
        );
        out.connect.as_mut().unwrap().record(30_000).unwrap();
        assert!(connect_not_timed(&spec, &out, &kv).is_none());
    }

    /// redis-benchmark -k 0 -P 16: 16 requests in flight per connection, then a new
    /// connection. The time spent reconnecting has nothing in flight, so the mean may be
    /// below Little's law's figure; above it, it cannot be, and is flagged (the check was
    /// skipped whenever connections were reopened).
    /// Connects timed during the test are stored beside the requests' latency, as
    /// httperf's connection time: their own figures and histogram, the requests'
    /// latency unchanged; none timed, nothing said here (the workload says why).
    #[test]
    fn connect_times_are_stored_beside_the_request_latency() {
        let (spec, mut out) = open_loop(0, 0.2);
        let plain = step_output(&spec, &out, "ops_per_s", "ops/s");
        assert!(plain.metrics.iter().all(|m| !m.name.starts_with("connect")));
        let mut h = new_latency_histogram();
        for us in [30, 40, 50] {
            h.record(us * 1000).unwrap();
        }
        let p50 = h.value_at_quantile(0.5) as f64;
        out.connect = Some(h);
        let timed = step_output(&spec, &out, "ops_per_s", "ops/s");
        let value = |o: &StepOutput, name: &str| {
            o.metrics
                .iter()
                .find(|m| m.name == name && m.labels.is_empty())
                .map(|m| m.value)
        };
        assert_eq!(value(&timed, "connects_timed"), Some(3.0));
        assert_eq!(value(&timed, "connect_time_min_ns"), Some(30_000.0));
        assert_eq!(value(&timed, "connect_time_p50_ns"), Some(p50));
        assert!((40_000.0..40_100.0).contains(&p50), "{p50}");
        for name in ["latency_p50_ns", "latency_p99_ns", "latency_max_ns"] {
            assert_eq!(value(&timed, name), value(&plain, name), "{name}");
        }
        let connect: Vec<_> = timed
            .histograms
            .iter()
            .filter(|h| !h.is_request_latency())
            .collect();
        assert_eq!(connect.len(), 1);
        assert_eq!(
            (connect[0].name.as_str(), connect[0].summary.count),
            (model::hist::CONNECT_KIND, 3)
        );
        assert_eq!(timed.histograms.len(), plain.histograms.len() + 1);
    }

    #[test]
    fn littles_law_holds_as_an_upper_bound_when_reconnecting() {
        // 4 connections x 16 in flight / 10,000/s = 6.4 ms.
        let s = closed_loop(2_000_000, 16, Some(16));
        assert_eq!(littles_law_ns(&s), 6_400_000.0);
        assert!(!s.flags.iter().any(|f| f.code == "latency_inconsistent"));
        let s = closed_loop(10_000_000, 16, Some(16));
        let f = flagged(&s, "latency_inconsistent");
        assert!(f.message.contains("6.400 ms"), "{}", f.message);
        // Fewer requests per connection than the pipeline: only those are in flight.
        let s = closed_loop(390_000, 16, Some(1));
        assert_eq!(littles_law_ns(&s), 400_000.0);
        assert!(!s.flags.iter().any(|f| f.code == "latency_inconsistent"));
        // Keep-alive: both ways, as before.
        let s = closed_loop(2_000_000, 16, None);
        flagged(&s, "latency_inconsistent");
        let s = closed_loop(6_400_000, 16, None);
        assert!(!s.flags.iter().any(|f| f.code == "latency_inconsistent"));
        // Keep-alive asked, the server closing connections (`Connection: close`): an
        // upper bound as for the reconnects asked for.
        let s = closed_loop_reconnecting(2_000_000, 16, None, 500);
        assert!(!s.flags.iter().any(|f| f.code == "latency_inconsistent"));
        flagged(
            &closed_loop_reconnecting(10_000_000, 16, None, 500),
            "latency_inconsistent",
        );
        // One reconnect in 10,000 requests: kept alive, both ways.
        let s = closed_loop_reconnecting(2_000_000, 16, None, 1);
        flagged(&s, "latency_inconsistent");
        assert!(!s
            .flags
            .iter()
            .any(|f| f.code == "server_closed_connections"));
    }

    /// Keep-alive asked for and the server closing connections is said: the settings
    /// stored say keep-alive, and the figures hold a connect every few requests. Not
    /// where the client asked to reconnect.
    #[test]
    fn a_server_closing_kept_alive_connections_is_flagged() {
        let s = closed_loop_reconnecting(2_000_000, 16, None, 500);
        let f = flagged(&s, "server_closed_connections");
        assert!(
            f.message.contains("500 times in 10000 requests")
                && f.message.contains("a connect every 20 requests"),
            "{}",
            f.message
        );
        let s = closed_loop_reconnecting(2_000_000, 16, Some(16), 500);
        assert!(!s
            .flags
            .iter()
            .any(|f| f.code == "server_closed_connections"));
    }

    /// A spinning open loop uses its whole core at any rate: that is not client-bound
    /// (issue 13: "used 99% of its 1 thread" at 10,000/s against one redis-server).
    #[test]
    fn an_open_loop_on_schedule_is_not_client_bound_however_busy() {
        let (spec, out) = open_loop(0, 0.99);
        let s = step_output(&spec, &out, "ops_per_s", "ops/s");
        assert!(
            !s.flags
                .iter()
                .any(|f| f.code == "client_bound" || f.code == "behind_schedule"),
            "{:?}",
            s.flags
        );
    }

    /// An open loop short beside its latency, every request sent on time, reads below its
    /// rate counted to its last reply: said so, not "the server is saturated" (1000/s for
    /// 1 s at 100 ms read 909/s and was called saturated). Sends late still say it.
    #[test]
    fn a_rate_short_of_its_offer_says_whether_the_schedule_was_kept() {
        for (late, says) in [
            (
                0,
                "every request went out on time, and the rate is over the 1.100 s",
            ),
            (500, "the server (or client) is saturated"),
        ] {
            let (spec, mut out) = open_loop(late, 0.2);
            out.duration_s = 1.1;
            let s = step_output(&spec, &out, "ops_per_s", "ops/s");
            let f = flagged(&s, "rate_not_achieved");
            assert!(
                f.message
                    .starts_with("achieved 9091/s of the 10000/s offered: ")
                    && f.message.contains(says),
                "{}",
                f.message
            );
        }
    }

    #[test]
    fn an_open_loop_behind_its_schedule_is_flagged() {
        let (spec, out) = open_loop(500, 0.2);
        let s = step_output(&spec, &out, "ops_per_s", "ops/s");
        let f = flagged(&s, "behind_schedule");
        assert!(f.message.contains("5.0%"), "{}", f.message);
        assert!(!f.message.contains("never sent"), "{}", f.message);
    }

    /// The flag `code` of `s`, which must be there.
    fn flagged<'a>(s: &'a StepOutput, code: &str) -> &'a Flag {
        s.flags
            .iter()
            .find(|f| f.code == code)
            .unwrap_or_else(|| panic!("no {code} flag: {:?}", s.flags))
    }

    /// `out` as a remote generator sends it, read back.
    fn through_the_wire(out: &LoadOutcome) -> LoadOutcome {
        let wire = serde_json::to_value(crate::wire::WireOutcome::from(out)).unwrap();
        LoadOutcome::try_from(serde_json::from_value::<crate::wire::WireOutcome>(wire).unwrap())
            .unwrap()
    }

    /// Requests that fell due and were never sent count as behind the schedule, and the
    /// flag says the percentiles leave them out; the count survives the wire form.
    #[test]
    fn an_open_loop_that_never_sent_some_requests_says_so() {
        let (spec, mut out) = open_loop(0, 0.2);
        out.unsent_requests = 1_000;
        let back = through_the_wire(&out);
        let s = step_output(&spec, &back, "ops_per_s", "ops/s");
        let m = s.metrics.iter().find(|m| m.name == "unsent_requests");
        assert_eq!(m.map(|m| m.value), Some(1_000.0));
        let f = flagged(&s, "behind_schedule");
        // 1,000 of the 11,000 that fell due.
        assert!(f.message.contains("9.1%"), "{}", f.message);
        assert!(
            f.message.contains("1000 of them were never sent"),
            "{}",
            f.message
        );
    }

    /// A generator from before the unsent count (or the count of its own late sends)
    /// decodes, with none counted; a generator's own late sends survive the wire.
    #[test]
    fn an_outcome_without_the_unsent_count_decodes() {
        let (_, mut out) = open_loop(300, 0.2);
        out.generator_late_sends = 200;
        assert_eq!(through_the_wire(&out).generator_late_sends, 200);
        let mut v = serde_json::to_value(crate::wire::WireOutcome::from(&out)).unwrap();
        for field in ["unsent_requests", "generator_late_sends"] {
            assert!(
                v.as_object_mut().unwrap().remove(field).is_some(),
                "{field}"
            );
        }
        let back =
            LoadOutcome::try_from(serde_json::from_value::<crate::wire::WireOutcome>(v).unwrap())
                .unwrap();
        assert_eq!(back.unsent_requests, 0);
        assert_eq!(back.generator_late_sends, 0);
        assert_eq!(back.late_sends, out.late_sends);
    }

    /// A generator that wanted io_uring and ran on epoll says so, with why; one that had
    /// what it wanted says nothing. The wire form (remote generators) keeps the why.
    #[test]
    fn an_epoll_fallback_is_said_with_its_reason() {
        let (spec, mut out) = open_loop(0, 0.2);
        let s = step_output(&spec, &out, "ops_per_s", "ops/s");
        assert!(!s.flags.iter().any(|f| f.code == "client_io_epoll"));
        out.client_io_fallback = Some("io_uring unavailable (Operation not permitted)".into());
        let back = through_the_wire(&out);
        let s = step_output(&spec, &back, "ops_per_s", "ops/s");
        let f = flagged(&s, "client_io_epoll");
        assert!(
            f.message.contains("Operation not permitted"),
            "{}",
            f.message
        );
    }
}
